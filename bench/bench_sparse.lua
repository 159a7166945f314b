-- bench_sparse.lua: step time of an embedding model's data-parallel step with
-- sparse gradients gathered (c_allgather of the rows) or densified (dense
-- allreduce of the whole table), the choice behind fleet's sparse_grad.
--   mpirun -np 2 luajit bench/bench_sparse.lua [vocab] [dim] [ids_per_step] [steps]
package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
package.cpath = "./build/?.so;" .. package.cpath
local ffi = require("ffi")
local oar = require("oar")
local layers = oar.layers
local fleet = oar.fleet
local V, D, M, steps = tonumber(arg[1] or 10000), tonumber(arg[2] or 64), tonumber(arg[3] or 640), tonumber(arg[4] or 50)
fleet.init()
ffi.cdef "typedef struct { long s; long ns; } bs_ts; int clock_gettime(int, bs_ts *);"
local ts = ffi.new("bs_ts")
local function wall() ffi.C.clock_gettime(1, ts) return tonumber(ts.s) + tonumber(ts.ns) * 1e-9 end

for _, mode in ipairs({ "allgather", "dense" }) do
  local main, startup = oar.Program(), oar.Program()
  local loss
  oar.program_guard(main, startup, function()
    local ids = layers.data{ name = "ids", shape = { 1 }, dtype = "int64" }
    local e = layers.embedding{ input = ids, size = { V, D }, is_sparse = true }
    loss = layers.mean(layers.fc{ input = e, size = 1 })
    fleet.distributed_optimizer(oar.optimizer.SGD{ learning_rate = 0.1 }, { sparse_grad = mode }):minimize(loss)
  end)
  local exe, scope = oar.Executor(), oar.Scope()
  exe:run(startup, { scope = scope })
  local idv = ffi.new("int64_t[?]", M)
  for i = 0, M - 1 do idv[i] = (i * 7919 + fleet.worker_index() * 104729) % V end
  local ids = oar.Tensor.from_buffer(idv, { M, 1 }, "int64")
  for _ = 1, 5 do exe:run(main, { feed = { ids = ids }, fetch_list = { loss }, scope = scope }) end
  fleet.barrier()
  local t0 = wall()
  for _ = 1, steps do exe:run(main, { feed = { ids = ids }, fetch_list = { loss }, scope = scope }) end
  local dt = fleet.all_reduce(wall() - t0, "max")
  if fleet.is_first_worker() then
    print(string.format("%-9s vocab %d dim %d ids/step/worker %d: %.3f ms/step", mode, V, D, M, 1e3 * dt / steps))
  end
end
