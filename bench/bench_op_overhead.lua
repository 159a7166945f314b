-- bench_op_overhead.lua: the executor's cost per op. A chain of N
-- one-element elementwise_add ops (y_i = y_{i-1} + c) in one program, run
-- forward only, and forward + backward (mean of the last value, SGD on c's
-- gradient is not needed: append_backward alone). Prints per-op figures:
--   RESULT oar op_overhead fwd_us_per_op=<x> fwdbwd_us_per_fwd_op=<y> (N=...)
--   luajit bench/bench_op_overhead.lua [N] [reps]
-- A source checkout runs without installing (lua/ and build/ next to bench/).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)[^/]*$") or "./") .. "../examples/checkout.lua")
local ffi = require("ffi")
local oar = require("oar")
local layers = oar.layers

local N, reps = tonumber(arg[1]) or 10000, tonumber(arg[2]) or 20

local function chain(with_backward)
  local main, startup = oar.Program(), oar.Program()
  local out
  oar.program_guard(main, startup, function()
    local x = layers.data{name = "x", shape = {1}, append_batch_size = false}
    x.stop_gradient = false
    local c = layers.fill_constant{shape = {1}, dtype = "float32", value = 1e-4}
    local y = x
    for _ = 1, N do y = layers.elementwise_add{x = y, y = c} end
    out = layers.mean(y)
    if with_backward then oar.gradients({out}, {x}) end
  end)
  return main, startup, out
end

ffi.cdef[[typedef struct { long tv_sec; long tv_nsec; } bench_ts2; int clock_gettime(int, bench_ts2 *);]]
local function now()
  local t = ffi.new("bench_ts2")
  ffi.C.clock_gettime(1, t)
  return tonumber(t.tv_sec) + tonumber(t.tv_nsec) * 1e-9
end

local exe = oar.Executor(oar.CPUPlace())
local x = oar.Tensor({1}, "float32")
local function time_program(with_backward)
  local main, startup, out = chain(with_backward)
  exe:run(startup)
  for _ = 1, 3 do exe:run(main, {feed = {x = x}, fetch_list = {out}}) end
  local best = math.huge
  for _ = 1, 3 do
    local t0 = now()
    for _ = 1, reps do exe:run(main, {feed = {x = x}, fetch_list = {out}}) end
    best = math.min(best, (now() - t0) / reps)
  end
  return best * 1e6 / N
end
local fwd = time_program(false)
local fwdbwd = time_program(true)
print(string.format("RESULT oar op_overhead fwd_us_per_op=%.3f fwdbwd_us_per_fwd_op=%.3f (N=%d)", fwd, fwdbwd, N))
