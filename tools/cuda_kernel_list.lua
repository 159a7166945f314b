-- tools/cuda_kernel_list.lua — docs/cuda_kernels.md: which forward ops have
-- a CUDA kernel (and for which dtypes, and whether their grad op has one),
-- and which run their CPU kernel from a CUDA place (with copies in and out),
-- as the registry holds them once the CUDA backend is loaded.
--
--   luajit tools/cuda_kernel_list.lua docs/cuda_kernels.md
--
-- Run from the repository root after `make` with nvcc (it loads
-- build/liboar.so and build/liboar_cuda.so; no GPU is needed).
package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
package.cpath = "./build/?.so;" .. package.cpath
local ffi = require("ffi")
local oar = require("oar")
local lib = require("oar.lib")
local C = lib.load_op_api()

local out_path = arg[1] or "docs/cuda_kernels.md"
assert(oar.is_compiled_with_cuda(), "the CUDA backend does not load: build it with nvcc first")

local DTYPES = { { "float16", C.OAR_FP16 }, { "float32", C.OAR_FP32 }, { "float64", C.OAR_FP64 },
                 { "int32", C.OAR_INT32 }, { "int64", C.OAR_INT64 }, { "bool", C.OAR_BOOL } }

local function dtypes_of(op, place)
  local have = {}
  for _, d in ipairs(DTYPES) do
    if C.oar_kernel_registered(op, place, d[2]) then have[#have + 1] = d[1] end
  end
  return have
end

local types, known = {}, {}
for i = 0, C.oar_op_num_registered() - 1 do
  local t = ffi.string(C.oar_op_registered_at(i))
  types[#types + 1] = t
  known[t] = true
end
table.sort(types)

local with, without = {}, {}
for _, t in ipairs(types) do
  if not t:match("_grad$") and not t:match("_grad_grad$") then
    local cuda = dtypes_of(t, C.OAR_PLACE_CUDA)
    if #cuda > 0 then
      local g = t .. "_grad"
      local grad = not known[g] and "no grad op" or (#dtypes_of(g, C.OAR_PLACE_CUDA) > 0 and "yes" or "CPU")
      with[#with + 1] = ("| `%s` | %s | %s |"):format(t, table.concat(cuda, ", "), grad)
    elseif #dtypes_of(t, C.OAR_PLACE_CPU) > 0 then
      without[#without + 1] = "`" .. t .. "`"
    end
  end
end

local f = assert(io.open(out_path, "w"))
f:write([[
# Ops with CUDA kernels

Written by `tools/cuda_kernel_list.lua` from the kernel registry with the
CUDA backend loaded (rerun it after adding a CUDA kernel). On a CUDA place
an op runs its CUDA kernel when it has one for the dtype of its inputs;
otherwise it runs its CPU kernel, with its inputs copied to the host and
its outputs copied back (correct, slower). Grad ops are listed with their
forward op (grad "yes": the grad op's kernel runs on the device too, "CPU": it
falls back). Control-flow and I/O ops without kernels of their own are not
listed.

]])
f:write(("%d forward ops have CUDA kernels:\n\n"):format(#with))
f:write("| op | dtypes | grad |\n|---|---|---|\n")
for _, l in ipairs(with) do f:write(l, "\n") end
f:write(("\n%d forward ops with CPU kernels have none (they run on the CPU from a CUDA place):\n\n"):format(#without))
f:write(table.concat(without, ", "), ".\n")
f:close()
print(("%s: %d ops with CUDA kernels, %d without"):format(out_path, #with, #without))
