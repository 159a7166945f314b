#!/usr/bin/env luajit
-- train_data_parallel.lua: the Fashion-MNIST MLP and LeNet of
-- recognize_digits.lua, trained data-parallel with oar.fleet.
--
--   mpirun -np 2 luajit examples/train_data_parallel.lua [options]
--   (as root: mpirun --allow-run-as-root ...; across machines: docs/distributed.md)
--     --model mlp|conv|both   which net (default both)
--     --epochs N              passes over the training set (default 1)
--     --batch-size N          samples per step and worker (default 64)
--     --lr X                  Adam's learning rate (default 0.001)
--     --max-batches N         stop each epoch after N steps (quick runs)
--     --timeout S             bound on every collective (default 300)
--
-- Every worker shuffles the 60000 training images with the same seed and
-- keeps its shard (oar.reader.shard: samples r, r+N, ...); all workers take
-- the same number of steps. Prints each worker's samples/s, the job's
-- (the sum of the workers' samples over the slowest worker's time), and the
-- test accuracy over the whole test set (each worker scores its shard; the
-- counts are summed with fleet.all_reduce).
-- A source checkout runs without installing (lua/ and build/ next to examples/).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)[^/]*$") or "./") .. "checkout.lua")

local ffi = require("ffi")
local oar = require("oar")
local layers = oar.layers
local fleet = oar.fleet
local fashion_mnist = require("oar.dataset.fashion_mnist")

local function usage(msg)
  io.stderr:write((msg and ("train_data_parallel: " .. msg .. "\n") or "") ..
    "usage: mpirun -np N luajit examples/train_data_parallel.lua [--model mlp|conv|both] [--epochs N]\n" ..
    "         [--batch-size N] [--lr X] [--max-batches N] [--timeout S]\n")
  os.exit(msg and 2 or 0)
end

local opts = { model = "both", epochs = 1, batch_size = 64, lr = 0.001, timeout = 300 }
do
  local i = 1
  while i <= #arg do
    local a = arg[i]
    if a == "-h" or a == "--help" then usage() end
    local key = a:match("^%-%-([%w%-]+)$")
    if not key then usage("unexpected argument '" .. a .. "'") end
    key = key:gsub("%-", "_")
    local val = arg[i + 1]
    if val == nil then usage("--" .. key .. " needs a value") end
    if key == "model" then
      if val ~= "mlp" and val ~= "conv" and val ~= "both" then usage("--model must be mlp, conv or both") end
      opts.model = val
    elseif key == "epochs" or key == "batch_size" or key == "lr" or key == "max_batches" or key == "timeout" then
      local n = tonumber(val)
      if not n or n <= 0 then usage("--" .. key .. " expects a positive number, got '" .. val .. "'") end
      opts[key] = n
    else
      usage("unknown option --" .. key)
    end
    i = i + 2
  end
end

ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } dp_timespec;
int clock_gettime(int clk_id, dp_timespec *tp);
]]
local ts = ffi.new("dp_timespec")
local function wall()
  ffi.C.clock_gettime(1, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

fleet.init{ timeout = opts.timeout }
local rank, nworkers = fleet.worker_index(), fleet.worker_num()
local function say(fmt, ...)
  if fleet.is_first_worker() then print(string.format(fmt, ...)) io.stdout:flush() end
end

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

local NETS = { mlp = { build = mlp, shape = { 784 } }, conv = { build = lenet, shape = { 1, 28, 28 } } }

-- the rows of `data` at `idx` (1-based list) as a [n, shape...] float32 Tensor
-- and [n, 1] int64 labels, written into the same two tensors every step of
-- a size: a step leaves no garbage behind, so the collector does not pause
-- one worker while the other waits for it in the all-reduce
local batch_tensors = {}
local function gather(data, idx, shape)
  local n = #idx
  local key = n .. ":" .. table.concat(shape, "x")
  local xy = batch_tensors[key]
  if not xy then
    local dims = { n }
    for _, d in ipairs(shape) do dims[#dims + 1] = d end
    xy = { oar.Tensor{ shape = dims, dtype = "float32" }, oar.Tensor{ shape = { n, 1 }, dtype = "int64" } }
    batch_tensors[key] = xy
  end
  local xs, ys = xy[1]:data(), xy[2]:data()
  for i = 1, n do
    local s = idx[i]
    ffi.copy(xs + (i - 1) * 784, data.images + (s - 1) * 784, 784 * 4)
    ys[i - 1] = data.labels[s - 1]
  end
  return xy[1], xy[2]
end

-- a permutation of 1..n from a seed (the same on every worker)
local function permutation(n, seed)
  local rng = oar.reader.rng(seed)
  local p = {}
  for i = 1, n do p[i] = i end
  for i = n, 2, -1 do
    local j = 1 + tonumber(rng:next_u64() % i)
    p[i], p[j] = p[j], p[i]
  end
  return p
end

-- this worker's part of a list, through oar.reader.shard
local function my_shard(list)
  local base = function()
    local i = 0
    return function() i = i + 1 return list[i] end
  end
  local out = {}
  for s in oar.reader.shard(base, rank, nworkers)() do out[#out + 1] = s end
  return out
end

local function run_model(name, train_data, test_data)
  local net = NETS[name]
  local main, startup = oar.Program(), oar.Program()
  local img, label, prediction, avg_loss, acc, test_prog
  oar.program_guard(main, startup, function()
    img = layers.data{ name = "img", shape = net.shape, dtype = "float32" }
    label = layers.data{ name = "label", shape = { 1 }, dtype = "int64" }
    prediction = net.build(img)
    avg_loss = layers.mean(layers.cross_entropy{ input = prediction, label = label })
    acc = layers.accuracy{ input = prediction, label = label }
    test_prog = main:clone{ for_test = true }
    fleet.distributed_optimizer(oar.optimizer.Adam{ learning_rate = opts.lr }):minimize(avg_loss)
  end)
  local exe, scope = oar.Executor(oar.CPUPlace()), oar.Scope()
  exe:run(startup, { scope = scope })
  say("== %s on %d worker%s, batch %d per worker (%d per step), Adam lr %g", name, nworkers,
      nworkers == 1 and "" or "s", opts.batch_size, opts.batch_size * nworkers, opts.lr)
  local B = opts.batch_size
  -- every worker takes the same number of steps: the smallest shard's
  local steps = math.floor(math.floor(train_data.count / nworkers) / B)
  if opts.max_batches then steps = math.min(steps, opts.max_batches) end
  for epoch = 1, opts.epochs do
    local mine = my_shard(permutation(train_data.count, 1000 + epoch))
    local t0, loss_sum = wall(), 0
    for s = 1, steps do
      local idx = {}
      for i = 1, B do idx[i] = mine[(s - 1) * B + i] end
      local x, y = gather(train_data, idx, net.shape)
      local out = exe:run(main, { feed = { img = x, label = y }, fetch_list = { avg_loss }, scope = scope })
      loss_sum = loss_sum + out[1]:data()[0]
    end
    local dt = wall() - t0
    local samples = steps * B
    print(string.format("%s epoch %d worker %d: %d samples in %.2f s, %.0f samples/s, mean loss %.4f", name, epoch,
      rank, samples, dt, samples / dt, loss_sum / math.max(steps, 1)))
    io.stdout:flush()
    local tot = fleet.all_reduce({ samples }, "sum")[1]
    local slowest = fleet.all_reduce(dt, "max")
    -- test accuracy over the whole test set: each worker scores its shard
    local test_idx = {}
    for i = 1, test_data.count do test_idx[i] = i end
    test_idx = my_shard(test_idx)
    local correct, n = 0, 0
    for from = 1, #test_idx, 500 do
      local idx = {}
      for i = from, math.min(from + 499, #test_idx) do idx[#idx + 1] = test_idx[i] end
      local x, y = gather(test_data, idx, net.shape)
      local out = exe:run(test_prog, { feed = { img = x, label = y }, fetch_list = { acc }, scope = scope })
      correct = correct + out[1]:data()[0] * #idx
      n = n + #idx
    end
    local c = fleet.all_reduce({ correct, n }, "sum")
    say("%s epoch %d: job %.0f samples/s (%d workers, slowest %.2f s), test accuracy %.4f (%d images)", name, epoch,
      tot / slowest, nworkers, slowest, c[1] / c[2], c[2])
  end
end

local ok, err = pcall(fashion_mnist.load, "train")
if not ok then
  io.stderr:write("train_data_parallel: " .. tostring(err) .. "\n")
  os.exit(1)
end
local train_data, test_data = fashion_mnist.load("train"), fashion_mnist.load("test")
for _, name in ipairs(opts.model == "both" and { "mlp", "conv" } or { opts.model }) do
  run_model(name, train_data, test_data)
end
