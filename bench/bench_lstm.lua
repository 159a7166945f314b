-- bench_lstm.lua: oar side of the LSTM training benchmark (bench/run_lstm.sh).
-- One step: fc projection (D -> 4H) of every time step, dynamic_lstm over
-- B sequences of T steps (one LoD batch), last step, fc to 2 classes,
-- softmax cross entropy, backward, Adam. Prints "RESULT oar lstm <samples/s>".
--   luajit bench/bench_lstm.lua [T] [H] [B] [steps]
-- A source checkout runs without installing (lua/ and build/ next to bench/).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)[^/]*$") or "./") .. "../examples/checkout.lua")
local ffi = require("ffi")
local oar = require("oar")
local layers = oar.layers

local T, H, B, steps = tonumber(arg[1]) or 32, tonumber(arg[2]) or 128, tonumber(arg[3]) or 32, tonumber(arg[4]) or 100
local D = H

local main, startup = oar.Program(), oar.Program()
local loss
oar.program_guard(main, startup, function()
  local x = layers.data{name = "x", shape = {D}, lod_level = 1}
  local y = layers.data{name = "y", shape = {1}, dtype = "int64"}
  local proj = layers.fc{input = x, size = 4 * H}
  local h = layers.dynamic_lstm{input = proj, size = 4 * H}
  local last = layers.sequence_last_step(h)
  local logits = layers.fc{input = last, size = 2}
  loss = layers.mean(layers.softmax_with_cross_entropy{logits = logits, label = y})
  oar.optimizer.Adam{learning_rate = 0.001}:minimize(loss)
end)
local exe = oar.Executor(oar.CPUPlace())
exe:run(startup)

local xt = oar.Tensor{shape = {T * B, D}, dtype = "float32"}
local p = xt:data()
for i = 0, T * B * D - 1 do p[i] = math.sin(i * 0.37) end
local lod = {}
for b = 0, B do lod[#lod + 1] = b * T end
xt:set_lod({lod})
local yt = oar.Tensor{shape = {B, 1}, dtype = "int64"}
local yp = yt:data()
for b = 0, B - 1 do yp[b] = b % 2 end

ffi.cdef[[typedef struct { long tv_sec; long tv_nsec; } bench_ts; int clock_gettime(int, bench_ts *);]]
local function now()
  local t = ffi.new("bench_ts")
  ffi.C.clock_gettime(1, t)
  return tonumber(t.tv_sec) + tonumber(t.tv_nsec) * 1e-9
end
for _ = 1, 5 do exe:run(main, {feed = {x = xt, y = yt}, fetch_list = {loss}}) end
local t0 = now()
for _ = 1, steps do exe:run(main, {feed = {x = xt, y = yt}, fetch_list = {loss}}) end
local sps = steps * B / (now() - t0)
if os.getenv("OAR_BENCH_PROFILE") then oar.profiler.start() for _ = 1, 30 do exe:run(main, {feed = {x = xt, y = yt}, fetch_list = {loss}}) end print(oar.profiler.report()) end
print(string.format("RESULT oar lstm %.1f  (T=%d H=%d B=%d)", sps, T, H, B))
