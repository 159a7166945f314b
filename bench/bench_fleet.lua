-- bench_fleet.lua: samples/s of the Fashion-MNIST MLP (784-512-256-10, Adam)
-- on synthetic data, alone or as one worker of an mpirun job (oar.fleet).
--   luajit bench/bench_fleet.lua [batch] [steps] [fleet]
-- Threads come from OMP_NUM_THREADS / OPENBLAS_NUM_THREADS (bench/run_fleet.sh).
-- Prints one line per worker; with "fleet", worker 0 also prints the job's total.
package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
package.cpath = "./build/?.so;" .. package.cpath
local ffi = require("ffi")
local oar = require("oar")
local layers = oar.layers
local B, steps, use_fleet = tonumber(arg[1] or 64), tonumber(arg[2] or 200), arg[3] == "fleet"
if use_fleet then oar.fleet.init() end

ffi.cdef "typedef struct { long s; long ns; } bf_ts; int clock_gettime(int, bf_ts *);"
local ts = ffi.new("bf_ts")
local function wall() ffi.C.clock_gettime(1, ts) return tonumber(ts.s) + tonumber(ts.ns) * 1e-9 end

local main, startup = oar.Program(), oar.Program()
local loss
oar.program_guard(main, startup, function()
  local img = layers.data{ name = "img", shape = { 784 }, dtype = "float32" }
  local label = layers.data{ name = "label", shape = { 1 }, dtype = "int64" }
  local h1 = layers.fc{ input = img, size = 512, act = "relu" }
  local h2 = layers.fc{ input = h1, size = 256, act = "relu" }
  local p = layers.fc{ input = h2, size = 10, act = "softmax" }
  loss = layers.mean(layers.cross_entropy{ input = p, label = label })
  local opt = oar.optimizer.Adam{ learning_rate = 1e-3 }
  if use_fleet then opt = oar.fleet.distributed_optimizer(opt) end
  opt:minimize(loss)
end)
local exe, scope = oar.Executor(), oar.Scope()
exe:run(startup, { scope = scope })
local xs, ys = ffi.new("float[?]", B * 784), ffi.new("int64_t[?]", B)
for i = 0, B * 784 - 1 do xs[i] = math.sin(i * 0.013) end
for i = 0, B - 1 do ys[i] = i % 10 end
local x = oar.Tensor.from_buffer(xs, { B, 784 }, "float32")
local y = oar.Tensor.from_buffer(ys, { B, 1 }, "int64")
for _ = 1, 10 do exe:run(main, { feed = { img = x, label = y }, fetch_list = { loss }, scope = scope }) end
if use_fleet then oar.fleet.barrier() end
if os.getenv("PROFILE") then oar.profiler.start() end
local t0 = wall()
for _ = 1, steps do exe:run(main, { feed = { img = x, label = y }, fetch_list = { loss }, scope = scope }) end
local dt = wall() - t0
if os.getenv("PROFILE") and (not use_fleet or oar.fleet.worker_index() == 0 or os.getenv("PROFILE") == "all") then
  oar.profiler.stop()
  print(oar.profiler.report())
end
local rank = use_fleet and oar.fleet.worker_index() or 0
print(string.format("worker %d: batch %d, %d steps, %.3f s, %.0f samples/s", rank, B, steps, dt, B * steps / dt))
if use_fleet then
  local n = oar.fleet.worker_num()
  local slowest = oar.fleet.all_reduce(dt, "max")
  if rank == 0 then
    print(string.format("job: %d workers, %.0f samples/s", n, n * B * steps / slowest))
  end
end
