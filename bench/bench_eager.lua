-- bench_eager.lua: eager mode's costs.
--   1. per-op overhead: a chain of N one-element adds (y = y + c), forward
--      only, and forward + backward (c requires grad; y:backward());
--      microseconds per op, the minimum over reps (on a loaded machine the
--      minimum is the figure that means something);
--   2. an MLP (784 -> 256 -> 10, batch 64, Adam, cross entropy) trained
--      eagerly: samples per second, the best of reps timed windows;
--   3. the same MLP as a static program on oar's executor.
--   4. the RSS (from /proc/self/statm) before and after the eager training
--      steps, so that growth shows.
-- Prints lines like
--   RESULT oar eager add_fwd_us_per_op=<x> add_fwdbwd_us_per_op=<y> (N=..)
--   RESULT oar eager mlp_train samples_per_s=<s> static samples_per_s=<t>
--   luajit bench/bench_eager.lua [N] [reps] [mlp_steps]   (mlp_steps 0: the add chain only)
-- A source checkout runs without installing (lua/ and build/ next to bench/).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)[^/]*$") or "./") .. "../examples/checkout.lua")
local ffi = require("ffi")
local oar = require("oar")
local nn, F, layers = oar.nn, oar.nn.functional, oar.layers

local N, reps, steps = tonumber(arg[1]) or 20000, tonumber(arg[2]) or 7, tonumber(arg[3]) or 40

ffi.cdef[[typedef struct { long tv_sec; long tv_nsec; } bench_eager_ts; int clock_gettime(int, bench_eager_ts *);]]
local ts = ffi.new("bench_eager_ts")
local function now()
  ffi.C.clock_gettime(1, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

local function rss_mb()
  local f = io.open("/proc/self/statm")
  if not f then return 0 end
  local _, res = f:read("*l"):match("(%d+)%s+(%d+)")
  f:close()
  return tonumber(res) * 4096 / 2 ^ 20
end

-- the least seconds f takes over reps runs
local function best(f)
  local b = math.huge
  for _ = 1, reps do
    collectgarbage()
    local t0 = now()
    f()
    b = math.min(b, now() - t0)
  end
  return b
end

-- 1. the add chain
local c = oar.Tensor({ 1e-4 })
local x0 = oar.Tensor({ 1 })
local fwd = best(function()
  local y = x0
  for _ = 1, N do y = y + c end
end)
local cg = oar.Tensor({ 1e-4 }):requires_grad()
local fb = best(function()
  local y = x0
  for _ = 1, N do y = y + cg end
  y:backward()
  cg.grad = nil
end)
print(string.format("RESULT oar eager add_fwd_us_per_op=%.3f add_fwdbwd_us_per_op=%.3f (N=%d, min of %d)",
  fwd / N * 1e6, fb / N * 1e6, N, reps))

if steps == 0 then return end   -- the add chain alone

-- 2. the eager MLP
local B = 64
oar.seed(1)
local model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
local opt = oar.optimizer.Adam{ learning_rate = 1e-3, parameters = model:parameters() }
local xb, lb = oar.randn(B, 784), oar.randint(0, 10, { B, 1 })
local function eager_steps(n)
  for _ = 1, n do
    F.cross_entropy(model(xb), lb):backward()
    opt:step()
    opt:zero_grad()
  end
end
eager_steps(3)
local rss0 = rss_mb()
local te = best(function() eager_steps(steps) end)
local rss1 = rss_mb()

-- 3. the static MLP
local main, startup = oar.Program(), oar.Program()
oar.program_guard(main, startup, function()
  local xv = layers.data{ name = "x", shape = { 784 } }
  local lv = layers.data{ name = "label", shape = { 1 }, dtype = "int64" }
  local h = layers.fc{ input = xv, size = 256, act = "relu" }
  local o = layers.fc{ input = h, size = 10 }
  oar.optimizer.Adam{ learning_rate = 1e-3 }:minimize(layers.mean(layers.softmax_with_cross_entropy{ logits = o, label = lv }))
end)
local exe, scope = oar.Executor(oar.CPUPlace()), oar.Scope()
exe:run(startup, { scope = scope })
local function static_steps(n)
  for _ = 1, n do exe:run(main, { feed = { x = xb, label = lb }, scope = scope }) end
end
static_steps(3)
local tstat = best(function() static_steps(steps) end)
print(string.format("RESULT oar eager mlp_train samples_per_s=%.0f static samples_per_s=%.0f (batch %d, %d steps, best of %d)",
  B * steps / te, B * steps / tstat, B, steps, reps))
print(string.format("RESULT oar eager mlp_train rss_mb before=%.1f after=%.1f (%d steps)", rss0, rss1, steps * reps))
