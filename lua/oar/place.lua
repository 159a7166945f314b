-- oar.place: where an executor runs (Fluid's CPUPlace / CUDAPlace).
local lib = require("oar.lib")
local C = lib.C

local raise = require("oar.framework").raise
local M = {}

local Place = {}
Place.__index = Place

function Place:__tostring()
  if self.kind == C.OAR_PLACE_CPU then return "CPUPlace" end
  return "CUDAPlace(" .. self.device .. ")"
end

function Place.__eq(a, b) return a.kind == b.kind and a.device == b.device end

function Place:is_cpu_place() return self.kind == C.OAR_PLACE_CPU end
function Place:is_gpu_place() return self.kind == C.OAR_PLACE_CUDA end

function M.CPUPlace()
  return setmetatable({ kind = C.OAR_PLACE_CPU, device = 0 }, Place)
end

function M.CUDAPlace(device)
  device = device or 0
  if type(device) ~= "number" or device < 0 or device % 1 ~= 0 then
    raise("CUDAPlace: 'device' must be a non-negative integer, got " .. tostring(device))
  end
  return setmetatable({ kind = C.OAR_PLACE_CUDA, device = device }, Place)
end

function M.is_place(x) return getmetatable(x) == Place end

function M.is_compiled_with_cuda()
  return C.oar_is_compiled_with_cuda() == true
end

-- Usable CUDA devices: 0 without CUDA in the build, a driver or a GPU. An
-- Executor on CUDAPlace(n) needs n < cuda_device_count() and says why not.
function M.cuda_device_count()
  return tonumber(C.oar_cuda_device_count())
end

require("oar.framework")._guard_methods(Place, M.is_place, "Place", {})

return M
