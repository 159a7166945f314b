#!/usr/bin/env luajit
-- suite_oar.lua: oar's side of bench/run_all.sh. One workload per call, at the
-- thread count OMP_NUM_THREADS gives; prints
--   RESULT <workload> <value> <unit>
-- unit "samples/s" (higher is better), "s" or "us" (lower is better).
--
--   luajit bench/suite_oar.lua <workload> [--steps N] [--warmup N]
--
-- Workloads (bench/suite_torch.py and bench/suite_paddle.py run the same):
--   mlp_adam, mlp_sgdm   MLP 784-512-256-10 (relu, relu, softmax + cross entropy),
--                        batch 128, Adam lr 1e-3 / Momentum lr 0.01 mu 0.9
--   lenet_adam           LeNet (conv 5x5x20, pool, conv 5x5x50, pool, fc 500, fc 10), batch 64, Adam
--   lstm, gru            fc projection, dynamic_lstm (no peepholes) / dynamic_gru, hidden 128, over
--                        32 sequences of mixed lengths (9..32 steps, bench_seq_lengths), last step,
--                        fc to 2 classes, softmax cross entropy, Adam
--   mlp_epoch, lenet_epoch  one epoch of examples/recognize_digits.lua's models over the 60000
--                        Fashion-MNIST training images, batch 64, Adam, batches made by the
--                        dataset reader as a user's loop does (wall seconds)
--   fit_a_line_epoch     the fit_a_line book model (fc 13 -> 1, square error, SGD lr 0.001) over
--                        8192 synthetic rows, batch 20 (wall seconds)
--   (--steps N ends an epoch after N batches: for quick checks only)
--   infer_b1, infer_b128 the MLP's inference (softmax output) through the C predictor
--                        (oar_predictor_*), microseconds per batch
-- Initialization: oar's defaults (Fluid's: Xavier fc weights, Normal conv filters,
-- zero biases); the peers copy them.
-- A source checkout runs without installing (lua/ and build/ next to bench/).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)[^/]*$") or "./") .. "../examples/checkout.lua")

local ffi = require("ffi")
local oar = require("oar")
local layers = oar.layers

ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } oar_suite_timespec;
int clock_gettime(int clk_id, oar_suite_timespec *tp);
]]
local ts = ffi.new("oar_suite_timespec")
local function wall()
  ffi.C.clock_gettime(1, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

local workload = arg[1]
local opts = { steps = nil, warmup = nil }
do
  local i = 2
  while arg[i] do
    local k = arg[i]:match("^%-%-(%w+)$")
    local v = tonumber(arg[i + 1] or "")
    if not k or opts[k] ~= nil or not v then
      io.stderr:write("usage: luajit bench/suite_oar.lua <workload> [--steps N] [--warmup N]\n")
      os.exit(2)
    end
    opts[k] = v
    i = i + 2
  end
end

local function result(value, unit)
  print(string.format("RESULT %s %.6g %s", workload, value, unit))
end

-- ---- models -------------------------------------------------------------
local function mlp(img)
  local h1 = layers.fc{ input = img, size = 512, act = "relu" }
  local h2 = layers.fc{ input = h1, size = 256, act = "relu" }
  return layers.fc{ input = h2, size = 10, act = "softmax" }
end

local function lenet(img)
  local c1 = layers.conv2d{ input = img, num_filters = 20, filter_size = 5, act = "relu" }
  local p1 = layers.pool2d{ input = c1, pool_size = 2, pool_stride = 2, pool_type = "max" }
  local c2 = layers.conv2d{ input = p1, num_filters = 50, filter_size = 5, act = "relu" }
  local p2 = layers.pool2d{ input = c2, pool_size = 2, pool_stride = 2, pool_type = "max" }
  local h = layers.fc{ input = p2, size = 500, act = "relu" }
  return layers.fc{ input = h, size = 10, act = "softmax" }
end

local function classifier(net, shape, optimizer, global_scope)
  local main, startup = oar.Program(), oar.Program()
  main.random_seed, startup.random_seed = 1, 1
  local loss, pred
  oar.program_guard(main, startup, function()
    local img = layers.data{ name = "img", shape = shape, dtype = "float32" }
    local label = layers.data{ name = "label", shape = { 1 }, dtype = "int64" }
    pred = net(img)
    loss = layers.mean(layers.cross_entropy{ input = pred, label = label })
    optimizer():minimize(loss)
  end)
  local exe = oar.Executor(oar.CPUPlace())
  local scope = not global_scope and oar.Scope() or nil
  exe:run(startup, { scope = scope })
  return { main = main, exe = exe, scope = scope, loss = loss, pred = pred }
end

local adam = function() return oar.optimizer.Adam{ learning_rate = 0.001 } end
local sgdm = function() return oar.optimizer.Momentum{ learning_rate = 0.01, momentum = 0.9 } end

local function mnist_ring(bs, shape, n)
  local ring = {}
  for x, y in oar.dataset.fashion_mnist.batches("train", bs, { shuffle = false, drop_last = true,
                                                              image_shape = shape }) do
    ring[#ring + 1] = { img = x, label = y }
    if #ring == n then break end
  end
  return ring
end

local function throughput(m, ring, bs, steps, warmup)
  local function step(i)
    return m.exe:run(m.main, { feed = ring[i % #ring + 1], fetch_list = { m.loss }, scope = m.scope })
  end
  for i = 1, warmup do step(i) end
  local t0 = wall()
  local out
  for i = 1, steps do out = step(warmup + i) end
  local dt = wall() - t0
  local l = out[1]:data()[0]
  if l ~= l then error(workload .. ": the loss is NaN") end
  return steps * bs / dt
end

-- the sequence lengths of the recurrent workloads: 32 sequences, 9..32 steps
local function seq_lengths()
  local lens = {}
  for i = 0, 31 do lens[#lens + 1] = 32 - (i * 7) % 24 end
  return lens
end

local function recurrent(kind)
  local H, lens = 128, seq_lengths()
  local rows = 0
  for _, l in ipairs(lens) do rows = rows + l end
  local main, startup = oar.Program(), oar.Program()
  main.random_seed, startup.random_seed = 1, 1
  local loss
  oar.program_guard(main, startup, function()
    local x = layers.data{ name = "x", shape = { H }, lod_level = 1 }
    local y = layers.data{ name = "y", shape = { 1 }, dtype = "int64" }
    local h
    if kind == "lstm" then
      h = layers.dynamic_lstm{ input = layers.fc{ input = x, size = 4 * H }, size = 4 * H, use_peepholes = false }
    else
      h = layers.dynamic_gru{ input = layers.fc{ input = x, size = 3 * H }, size = H }
    end
    local logits = layers.fc{ input = layers.sequence_last_step(h), size = 2 }
    loss = layers.mean(layers.softmax_with_cross_entropy{ logits = logits, label = y })
    adam():minimize(loss)
  end)
  local exe = oar.Executor(oar.CPUPlace())
  exe:run(startup)
  local xt = oar.Tensor{ shape = { rows, H }, dtype = "float32" }
  local p = xt:data()
  for i = 0, rows * H - 1 do p[i] = math.sin(i * 0.37) end
  local lod, off = { 0 }, 0
  for _, l in ipairs(lens) do off = off + l; lod[#lod + 1] = off end
  xt:set_lod({ lod })
  local yt = oar.Tensor{ shape = { #lens, 1 }, dtype = "int64" }
  for i = 0, #lens - 1 do yt:data()[i] = i % 2 end
  local feed = { x = xt, y = yt }
  local function step() return exe:run(main, { feed = feed, fetch_list = { loss } }) end
  local warm, steps = opts.warmup or 5, opts.steps or 60
  for _ = 1, warm do step() end
  local t0 = wall()
  local out
  for _ = 1, steps do out = step() end
  local dt = wall() - t0
  local l = out[1]:data()[0]
  if l ~= l then error(workload .. ": the loss is NaN") end
  return steps * #lens / dt
end

local function epoch(net, shape)
  local m = classifier(net, shape, adam)
  -- the data set is read before timing, as PyTorch's side does
  local data = oar.dataset.fashion_mnist.load("train")
  local t0 = wall()
  local n, out = 0, nil
  for x, y in oar.dataset.fashion_mnist.batches(data, 64, { shuffle = false, drop_last = false,
                                                           image_shape = shape }) do
    out = m.exe:run(m.main, { feed = { img = x, label = y }, fetch_list = { m.loss }, scope = m.scope })
    n = n + 1
    if opts.steps and n >= opts.steps then break end   -- a partial epoch (quick checks)
  end
  local dt = wall() - t0
  if out[1]:data()[0] ~= out[1]:data()[0] then error(workload .. ": the loss is NaN") end
  return dt
end

local function fit_a_line_epoch()
  local rows, bs, F = 8192, 20, 13
  local main, startup = oar.Program(), oar.Program()
  main.random_seed, startup.random_seed = 1, 1
  local loss
  oar.program_guard(main, startup, function()
    local x = layers.data{ name = "x", shape = { F }, dtype = "float32" }
    local y = layers.data{ name = "y", shape = { 1 }, dtype = "float32" }
    local pred = layers.fc{ input = x, size = 1 }
    loss = layers.mean(layers.square_error_cost{ input = pred, label = y })
    oar.optimizer.SGD{ learning_rate = 0.001 }:minimize(loss)
  end)
  local exe = oar.Executor(oar.CPUPlace())
  exe:run(startup)
  -- Park-Miller data, as bench/suite_torch.py makes it
  local state = 1
  local function u() state = (state * 16807) % 2147483647; return state / 2147483647 end
  local X, Y = {}, {}
  for r = 1, rows do
    local s = 0
    for j = 1, F do local v = u() * 2 - 1; X[(r - 1) * F + j] = v; s = s + v * j / F end
    Y[r] = s + 0.5
  end
  local t0 = wall()
  local out
  for b = 0, (opts.steps and math.min(opts.steps, rows / bs) or rows / bs) - 1 do
    local xt = oar.Tensor{ shape = { bs, F }, dtype = "float32" }
    local yt = oar.Tensor{ shape = { bs, 1 }, dtype = "float32" }
    local xp, yp = xt:data(), yt:data()
    for i = 0, bs * F - 1 do xp[i] = X[b * bs * F + i + 1] end
    for i = 0, bs - 1 do yp[i] = Y[b * bs + i + 1] end
    out = exe:run(main, { feed = { x = xt, y = yt }, fetch_list = { loss } })
  end
  local dt = wall() - t0
  if out[1]:data()[0] ~= out[1]:data()[0] then error(workload .. ": the loss is NaN") end
  return dt
end

local function inference(bs)
  local m = classifier(mlp, { 784 }, adam, true)
  local dir = os.tmpname()
  os.remove(dir)
  local infer = m.main:clone{ for_test = true }
  oar.io.save_inference_model(dir, { "img" }, { m.pred }, m.exe, infer)
  local C = require("oar.lib").C
  local pp = ffi.new("oar_predictor_t*[1]")
  assert(C.oar_predictor_load(dir, pp) == 0, "oar_predictor_load failed")
  local pred = pp[0]
  local x = ffi.new("float[?]", bs * 784)
  for i = 0, bs * 784 - 1 do x[i] = math.sin(i * 0.01) end
  local dims = ffi.new("int64_t[2]", bs, 784)
  local out, odims, ond = ffi.new("const float*[1]"), ffi.new("const int64_t*[1]"), ffi.new("int[1]")
  local function run()
    assert(C.oar_predictor_set_input(pred, "img", x, dims, 2) == 0)
    assert(C.oar_predictor_run(pred) == 0)
    assert(C.oar_predictor_get_output(pred, 0, out, odims, ond) == 0)
  end
  local warm, steps = opts.warmup or 200, opts.steps or (bs == 1 and 20000 or 2000)
  for _ = 1, warm do run() end
  -- best of 5 slices: the closest to the uncontended speed on a shared machine
  local best = math.huge
  local per = math.max(1, math.floor(steps / 5))
  for _ = 1, 5 do
    local t0 = wall()
    for _ = 1, per do run() end
    best = math.min(best, (wall() - t0) / per)
  end
  C.oar_predictor_free(pred)
  os.execute("rm -rf '" .. dir .. "'")
  return best * 1e6
end

-- ---- dispatch -----------------------------------------------------------
if workload == "mlp_adam" or workload == "mlp_sgdm" then
  local m = classifier(mlp, { 784 }, workload == "mlp_adam" and adam or sgdm)
  result(throughput(m, mnist_ring(128, { 784 }, 64), 128, opts.steps or 300, opts.warmup or 30), "samples/s")
elseif workload == "lenet_adam" then
  local m = classifier(lenet, { 1, 28, 28 }, adam)
  result(throughput(m, mnist_ring(64, { 1, 28, 28 }, 64), 64, opts.steps or 100, opts.warmup or 10), "samples/s")
elseif workload == "lstm" or workload == "gru" then
  result((recurrent(workload)), "samples/s")
elseif workload == "mlp_epoch" then
  result(epoch(mlp, { 784 }), "s")
elseif workload == "lenet_epoch" then
  result(epoch(lenet, { 1, 28, 28 }), "s")
elseif workload == "fit_a_line_epoch" then
  result(fit_a_line_epoch(), "s")
elseif workload == "infer_b1" then
  result(inference(1), "us")
elseif workload == "infer_b128" then
  result(inference(128), "us")
else
  io.stderr:write("suite_oar: unknown workload '" .. tostring(workload) .. "'\n")
  os.exit(2)
end
