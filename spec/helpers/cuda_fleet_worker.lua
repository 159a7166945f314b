-- A worker of spec/cuda_collective_spec.lua, started by mpirun from the
-- repository root: runs c_allreduce_sum/_max/_min/_prod, c_broadcast (root
-- 1) and c_allgather on the CUDA place (NCCL) for every dtype they take,
-- on inputs that depend on the worker, and writes what came back:
--   luajit spec/helpers/cuda_fleet_worker.lua OUT   -> OUT.<worker>
-- lines "<dtype> <op> v1 v2 ..." (%.17g). Worker r's input element i
-- (0-based) is (i - 2) * (r + 1) + r: small integers, exact in every dtype.
package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
package.cpath = "./build/?.so;" .. package.cpath
local oar = require("oar")
local fleet = oar.fleet

local out = assert(arg[1], "usage: cuda_fleet_worker.lua OUT")
fleet.init{ timeout = 30 }
local rank, n = fleet.worker_index(), fleet.worker_num()
local N = 6
local OPS = { "c_allreduce_sum", "c_allreduce_max", "c_allreduce_min", "c_allreduce_prod", "c_broadcast",
              "c_allgather" }

local f = assert(io.open(out .. "." .. rank, "w"))
local exe = oar.Executor(oar.CUDAPlace(0))
for _, dtype in ipairs({ "float32", "float64", "float16", "int32", "int64" }) do
  local main = oar.Program()
  local block = main:global_block()
  local x = block:create_var{ name = "x", shape = { N }, dtype = dtype }
  local fetch = {}
  for k, op in ipairs(OPS) do
    local y = block:create_var{ name = "y" .. k, shape = { op == "c_allgather" and N * n or N }, dtype = dtype }
    local attrs = { ring_id = 0, use_calc_stream = true }
    if op == "c_broadcast" then attrs.root = n - 1 end
    if op == "c_allgather" then attrs.nranks = n end
    block:append_op{ type = op, inputs = { X = { x } }, outputs = { Out = { y } }, attrs = attrs }
    fetch[k] = y
  end
  local vals = {}
  for i = 0, N - 1 do vals[i + 1] = (i - 2) * (rank + 1) + rank end
  local xt = oar.tensor.new(vals, dtype)
  oar.set_flags{ count_kernels = true }
  local res = exe:run(main, { feed = { x = xt }, fetch_list = fetch })
  oar.set_flags{ count_kernels = false }
  for k, op in ipairs(OPS) do
    local t = res[k]:totable()
    local s = {}
    for i, v in ipairs(t) do s[i] = string.format("%.17g", v) end
    f:write(dtype, " ", op, " ", table.concat(s, " "), "\n")
  end
end
-- which place ran the collectives (the kernel counters)
local C = require("oar.lib").C
for _, op in ipairs(OPS) do
  f:write("calls ", op, " ", tonumber(C.oar_kernel_calls(op, C.OAR_PLACE_CUDA)), " ",
    tonumber(C.oar_kernel_calls(op, C.OAR_PLACE_CPU)), "\n")
end
f:close()
