#!/usr/bin/env luajit
-- recognize_digits.lua: Fluid's "recognize digits" book chapter on
-- Fashion-MNIST, with oar.
--
-- Trains a multilayer perceptron (784-512-256-10) and/or a LeNet-style
-- convolutional net. 5000 training images are held out for validation
-- (oar.dataset.split); a progress bar with ETA runs on stderr
-- (oar.progress); after every epoch it prints the training loss, the
-- validation and test loss and accuracy and the training speed, logs them
-- (oar.metrics) and saves a checkpoint (oar.io.save_persistables); at the
-- end it draws the curves (oar.plot) and saves the model for inference
-- (oar.io.save_inference_model).
--
--   luajit examples/recognize_digits.lua [options]
--     --model mlp|conv|both   which net (default: both, mlp first)
--     --epochs N              passes over the training images (default 2)
--     --batch-size N          samples per step (default 64)
--     --lr X                  Adam's learning rate (default 0.001)
--     --seed N                parameter initialization and shuffling (default 1)
--     --validation N          training images held out for validation (default
--                             5000; 0 trains on all 60000, as docs/reference_accuracy.md)
--     --save-dir DIR          where to save (default ./model_<name>; "" to skip)
--     --data-dir DIR          Fashion-MNIST's directory (default $OAR_DATA_DIR or
--                             /usr/share/datasets/fashion-mnist)
--     --max-batches N         stop each epoch after N batches (quick runs)
--
-- Written in the save directory: the inference model (__model__ and the
-- parameters), metrics.csv (every 50 steps: loss and accuracy; every epoch:
-- validation and test figures), loss.svg and accuracy.svg (the curves), and
-- checkpoints/epoch_<n>/ (everything needed to resume training).
-- Data: pixels scaled to [-1, 1], the training set reshuffled every epoch.

-- A source checkout runs without installing (lua/ and build/ next to examples/).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)[^/]*$") or "./") .. "checkout.lua")

local oar = require("oar")
local layers = oar.layers
local fashion_mnist = require("oar.dataset.fashion_mnist")

local LOG_EVERY = 50   -- steps between two rows of the metrics log

---------------------------------------------------------------------------
-- Options
---------------------------------------------------------------------------

local function usage(msg)
  io.stderr:write((msg and ("recognize_digits: " .. msg .. "\n") or "") ..
    "usage: luajit examples/recognize_digits.lua [--model mlp|conv|both] [--epochs N]\n" ..
    "         [--batch-size N] [--lr X] [--seed N] [--validation N] [--save-dir DIR]\n" ..
    "         [--data-dir DIR] [--max-batches N]\n")
  os.exit(msg and 2 or 0)
end

local function parse_args(argv)
  local o = { model = "both", epochs = 2, batch_size = 64, lr = 0.001, seed = 1, validation = 5000 }
  local numeric = { epochs = "int", batch_size = "int", lr = "num", seed = "int", max_batches = "int",
                    validation = "int" }
  local may_be_zero = { seed = true, validation = true }
  local i = 1
  while i <= #argv do
    local a = argv[i]
    if a == "-h" or a == "--help" then usage() end
    local key, val = a:match("^%-%-([%w%-]+)=(.*)$")
    if not key then
      key = a:match("^%-%-([%w%-]+)$")
      if not key then usage("unexpected argument '" .. a .. "'") end
      i = i + 1
      val = argv[i]
      if val == nil then usage("--" .. key .. " needs a value") end
    end
    key = key:gsub("%-", "_")
    if numeric[key] then
      local n = tonumber(val)
      if not n or (numeric[key] == "int" and (n % 1 ~= 0 or n < 0)) or n <= 0 and not may_be_zero[key] then
        usage("--" .. key:gsub("_", "-") .. " expects a positive number, got '" .. val .. "'")
      end
      o[key] = n
    elseif key == "model" or key == "save_dir" or key == "data_dir" then
      o[key] = val
    else
      usage("unknown option --" .. key:gsub("_", "-"))
    end
    i = i + 1
  end
  if o.model ~= "mlp" and o.model ~= "conv" and o.model ~= "both" then
    usage("--model must be mlp, conv or both, got '" .. o.model .. "'")
  end
  return o
end

---------------------------------------------------------------------------
-- The nets
---------------------------------------------------------------------------

-- 784-512-256-10 with relu; softmax on the output.
local function multilayer_perceptron(img)
  local h1 = layers.fc{ input = img, size = 512, act = "relu" }
  local h2 = layers.fc{ input = h1, size = 256, act = "relu" }
  return layers.fc{ input = h2, size = 10, act = "softmax" }
end

-- LeNet: two 5x5 convolutions (20 and 50 filters) each followed by relu and
-- 2x2 max pooling, a 500-unit hidden layer, softmax on the output.
local function convolutional_net(img)
  local c1 = layers.conv2d{ input = img, num_filters = 20, filter_size = 5, act = "relu" }
  local p1 = layers.pool2d{ input = c1, pool_size = 2, pool_stride = 2, pool_type = "max" }
  local c2 = layers.conv2d{ input = p1, num_filters = 50, filter_size = 5, act = "relu" }
  local p2 = layers.pool2d{ input = c2, pool_size = 2, pool_stride = 2, pool_type = "max" }
  local h = layers.fc{ input = p2, size = 500, act = "relu" }
  return layers.fc{ input = h, size = 10, act = "softmax" }
end

local NETS = {
  mlp = { build = multilayer_perceptron, image_shape = { 784 }, what = "784-512-256-10 perceptron" },
  conv = { build = convolutional_net, image_shape = { 1, 28, 28 }, what = "LeNet conv net" },
}

-- Main and startup programs for one net, plus the test program (the forward
-- part, cloned before the optimizer adds its ops).
local function build(name, opts)
  local net = NETS[name]
  local main, startup = oar.Program(), oar.Program()
  main.random_seed, startup.random_seed = opts.seed, opts.seed
  local r = { main = main, startup = startup, image_shape = net.image_shape }
  -- fresh layer names per net (fc_0, ... in each), for the summary and the saved files
  oar.unique_name.guard(nil, function() oar.program_guard(main, startup, function()
    r.img = layers.data{ name = "img", shape = net.image_shape, dtype = "float32" }
    r.label = layers.data{ name = "label", shape = { 1 }, dtype = "int64" }
    r.prediction = net.build(r.img)
    r.avg_loss = layers.mean(layers.cross_entropy{ input = r.prediction, label = r.label })
    r.acc = layers.accuracy{ input = r.prediction, label = r.label }
    r.test = main:clone{ for_test = true }
    oar.optimizer.Adam{ learning_rate = opts.lr }:minimize(r.avg_loss)
  end) end)
  return r
end

---------------------------------------------------------------------------
-- Training and testing
---------------------------------------------------------------------------

local function scalar(t) return t:data()[0] end

-- Mean accuracy and loss of the test program over a data set.
local function evaluate(exe, r, data, scope)
  local correct, loss_sum, n = 0, 0, 0
  for x, y, b in fashion_mnist.batches(data, 500, { shuffle = false, image_shape = r.image_shape }) do
    local out = exe:run(r.test, { feed = { img = x, label = y }, fetch_list = { r.acc, r.avg_loss }, scope = scope })
    correct, loss_sum, n = correct + scalar(out[1]) * b, loss_sum + scalar(out[2]) * b, n + b
  end
  return correct / n, loss_sum / n
end

local function train(name, opts, sets)
  print(string.format("== %s: %s, batch %d, Adam lr %g, %d epoch%s, %d training / %d validation images", name,
    NETS[name].what, opts.batch_size, opts.lr, opts.epochs, opts.epochs == 1 and "" or "s",
    sets.train.count, sets.validation and sets.validation.count or 0))
  local r = build(name, opts)
  print(oar.summary(r.main))
  local exe, scope = oar.Executor(oar.CPUPlace()), oar.Scope()
  exe:run(r.startup, { scope = scope })
  local dir = opts.save_dir
  if dir == nil then dir = "./model_" .. name
  elseif opts.model == "both" and dir ~= "" then dir = dir .. "/" .. name end
  local log
  if dir ~= "" then
    os.execute("mkdir -p '" .. dir:gsub("'", "'\\''") .. "'")
    log = oar.metrics.logger{ file = dir .. "/metrics.csv", columns = { "epoch", "step", "loss", "acc",
      "val_loss", "val_acc", "test_loss", "test_acc", "samples_per_s" } }
  end
  local per_epoch = math.ceil(sets.train.count / opts.batch_size)
  if opts.max_batches then per_epoch = math.min(per_epoch, opts.max_batches) end
  local step = 0
  local function log_eval(epoch, row)
    if sets.validation then row.val_acc, row.val_loss = evaluate(exe, r, sets.validation, scope) end
    row.test_acc, row.test_loss = evaluate(exe, r, sets.test, scope)
    row.epoch, row.step = epoch, step
    if log then log:log(row) end
    return row
  end
  log_eval(0, {})   -- the untrained net: where the curves start
  for epoch = 1, opts.epochs do
    local bar = oar.progress{ total = per_epoch, title = string.format("%s epoch %d/%d", name, epoch, opts.epochs),
                              unit = "batch" }
    local loss_sum, acc_sum, seen, k = 0, 0, 0, 0
    local window = { loss = 0, acc = 0, n = 0 }
    for x, y, b in fashion_mnist.batches(sets.train, opts.batch_size, {
        seed = opts.seed * 1000 + epoch, image_shape = r.image_shape }) do
      local out = exe:run(r.main, { feed = { img = x, label = y }, fetch_list = { r.avg_loss, r.acc }, scope = scope })
      local l, a = scalar(out[1]), scalar(out[2])
      if l ~= l then error(string.format("%s: the loss became NaN at epoch %d, batch %d", name, epoch, k + 1)) end
      loss_sum, acc_sum, seen, k, step = loss_sum + l * b, acc_sum + a * b, seen + b, k + 1, step + 1
      window.loss, window.acc, window.n = window.loss + l * b, window.acc + a * b, window.n + b
      if log and step % LOG_EVERY == 0 then
        log:log{ epoch = epoch, step = step, loss = window.loss / window.n, acc = window.acc / window.n }
        window = { loss = 0, acc = 0, n = 0 }
      end
      bar:update(k, { loss = loss_sum / seen, acc = acc_sum / seen })
      if k >= per_epoch then break end
    end
    local dt = bar:finish()
    local row = log_eval(epoch, { samples_per_s = seen / dt })
    print(string.format("%s epoch %d: train loss %.4f, %stest loss %.4f, test accuracy %.4f, %.0f samples/s",
      name, epoch, loss_sum / seen, row.val_acc and string.format("validation loss %.4f, validation accuracy %.4f, ",
      row.val_loss, row.val_acc) or "", row.test_loss, row.test_acc, seen / dt))
    if dir ~= "" then
      oar.io.save_persistables(exe, string.format("%s/checkpoints/epoch_%d", dir, epoch), r.main, { scope = scope })
    end
  end
  if dir ~= "" then
    log:close()
    for _, what in ipairs({ { "loss", "loss", "cross entropy" }, { "acc", "accuracy", "accuracy" } }) do
      local m = what[1]
      local y = sets.validation and { m, "val_" .. m, "test_" .. m } or { m, "test_" .. m }
      oar.plot.curves{ file = dir .. "/" .. what[2] .. ".svg", from = dir .. "/metrics.csv", x = "step",
                       y = y, title = name .. ": " .. what[2], ylabel = what[3],
                       labels = { [m] = "training", ["val_" .. m] = "validation", ["test_" .. m] = "test" },
                       xlabel = "step (batches of " .. opts.batch_size .. ")" }
    end
    oar.scope_guard(scope, function()
      oar.io.save_inference_model(dir, { "img" }, { r.prediction }, exe, r.main)
    end)
    print(string.format("%s: inference model saved in %s (curves: loss.svg, accuracy.svg; log: metrics.csv)",
      name, dir))
  end
end

io.stdout:setvbuf("line")
local opts = parse_args(arg or {})
local ok, err = pcall(function()
  local sets = { train = fashion_mnist.load("train", opts.data_dir), test = fashion_mnist.load("test", opts.data_dir) }
  if opts.validation > 0 then
    sets.train, sets.validation = oar.dataset.split(sets.train, { validation = opts.validation, seed = opts.seed })
  end
  return sets
end)
if not ok then
  io.stderr:write("recognize_digits: " .. tostring(err) .. "\n")
  os.exit(1)
end
for _, name in ipairs(opts.model == "both" and { "mlp", "conv" } or { opts.model }) do train(name, opts, err) end
