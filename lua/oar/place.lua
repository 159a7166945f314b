--- Places: where an executor runs (Fluid's CPUPlace and CUDAPlace).
--
-- `oar.CPUPlace`, `oar.CUDAPlace` and `oar.is_compiled_with_cuda` come from
-- this module.
-- @module oar.place
-- @usage
-- local place = oar.is_compiled_with_cuda() and oar.place.cuda_device_count() > 0
--   and oar.CUDAPlace(0) or oar.CPUPlace()
-- local exe = oar.Executor(place)
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

--- Methods of a Place (`tostring(place)` gives `CPUPlace` or `CUDAPlace(n)`;
-- places compare with `==`).
-- @type Place

--- Whether this is the CPU.
-- @treturn boolean
-- @usage assert(oar.CPUPlace():is_cpu_place())
function Place:is_cpu_place() return self.kind == C.OAR_PLACE_CPU end
--- Whether this is a CUDA device.
-- @treturn boolean
-- @usage assert(oar.CUDAPlace(0):is_gpu_place())
function Place:is_gpu_place() return self.kind == C.OAR_PLACE_CUDA end

--- Functions.
-- @section functions

--- The CPU (`oar.CPUPlace()`).
-- @treturn Place
-- @usage local exe = oar.Executor(oar.CPUPlace())
function M.CPUPlace()
  return setmetatable({ kind = C.OAR_PLACE_CPU, device = 0 }, Place)
end

--- A CUDA device (`oar.CUDAPlace(n)`). Making the place checks nothing;
-- an Executor on it checks that the build has CUDA and the device exists.
-- @tparam[opt=0] int device the device number
-- @treturn Place
-- @usage local exe = oar.Executor(oar.CUDAPlace(0))
function M.CUDAPlace(device)
  device = device or 0
  if type(device) ~= "number" or device < 0 or device % 1 ~= 0 then
    raise("CUDAPlace: 'device' must be a non-negative integer, got " .. tostring(device))
  end
  return setmetatable({ kind = C.OAR_PLACE_CUDA, device = device }, Place)
end

--- Whether `x` is a Place.
-- @param x any value
-- @treturn boolean
-- @usage assert(oar.place.is_place(oar.CPUPlace()))
function M.is_place(x) return getmetatable(x) == Place end

--- Whether liboar was built with CUDA kernels (`nvcc` was found at build time).
-- @treturn boolean
-- @usage print(oar.is_compiled_with_cuda())
function M.is_compiled_with_cuda()
  return C.oar_is_compiled_with_cuda() == true
end

--- The number of usable CUDA devices: 0 without CUDA in the build, a
-- driver or a GPU. An Executor on `CUDAPlace(n)` needs `n < cuda_device_count()`.
-- @treturn int
-- @usage print(oar.place.cuda_device_count())
function M.cuda_device_count()
  return tonumber(C.oar_cuda_device_count())
end

require("oar.framework")._guard_methods(Place, M.is_place, "Place", {})

return M
