#!/usr/bin/env luajit
-- recognize_digits.lua: Fluid's "recognize digits" book chapter on
-- Fashion-MNIST, with oar.
--
-- Trains a multilayer perceptron (784-512-256-10) and/or a LeNet-style
-- convolutional net, prints the training loss, the test accuracy and the
-- training speed after every epoch, and saves each trained model for
-- inference (oar.io.save_inference_model).
--
--   luajit examples/recognize_digits.lua [options]
--     --model mlp|conv|both   which net (default: both, mlp first)
--     --epochs N              passes over the 60000 training images (default 2)
--     --batch-size N          samples per step (default 64)
--     --lr X                  Adam's learning rate (default 0.001)
--     --seed N                parameter initialization and shuffling (default 1)
--     --save-dir DIR          where to save (default ./model_<name>; "" to skip)
--     --data-dir DIR          Fashion-MNIST's directory (default $OAR_DATA_DIR or
--                             /usr/share/datasets/fashion-mnist)
--     --max-batches N         stop each epoch after N batches (quick runs)
--
-- Data: pixels scaled to [-1, 1], the training set reshuffled every epoch.
-- PyTorch's accuracies with this exact setup are in docs/reference_accuracy.md.

-- A source checkout runs without installing: find lua/ next to examples/.
do
  local here = debug.getinfo(1, "S").source:match("^@(.*)examples/[^/]*$")
  if here then
    local root = here == "" and "./" or here
    package.path = root .. "lua/?.lua;" .. root .. "lua/?/init.lua;" .. package.path
  end
end

local ffi = require("ffi")
local oar = require("oar")
local layers = oar.layers
local fashion_mnist = require("oar.dataset.fashion_mnist")

---------------------------------------------------------------------------
-- Options
---------------------------------------------------------------------------

local function usage(msg)
  io.stderr:write((msg and ("recognize_digits: " .. msg .. "\n") or "") ..
    "usage: luajit examples/recognize_digits.lua [--model mlp|conv|both] [--epochs N]\n" ..
    "         [--batch-size N] [--lr X] [--seed N] [--save-dir DIR] [--data-dir DIR]\n" ..
    "         [--max-batches N]\n")
  os.exit(msg and 2 or 0)
end

local function parse_args(argv)
  local o = { model = "both", epochs = 2, batch_size = 64, lr = 0.001, seed = 1 }
  local numeric = { epochs = "int", batch_size = "int", lr = "num", seed = "int", max_batches = "int" }
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
      if not n or (numeric[key] == "int" and (n % 1 ~= 0 or n < 0)) or n <= 0 and key ~= "seed" then
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
  mlp = { build = multilayer_perceptron, image_shape = { 784 } },
  conv = { build = convolutional_net, image_shape = { 1, 28, 28 } },
}

-- Main and startup programs for one net, plus the test program (the forward
-- part, cloned before the optimizer adds its ops).
local function build(name, opts)
  local net = NETS[name]
  local main, startup = oar.Program(), oar.Program()
  main.random_seed, startup.random_seed = opts.seed, opts.seed
  local r = { main = main, startup = startup, image_shape = net.image_shape }
  oar.program_guard(main, startup, function()
    r.img = layers.data{ name = "img", shape = net.image_shape, dtype = "float32" }
    r.label = layers.data{ name = "label", shape = { 1 }, dtype = "int64" }
    r.prediction = net.build(r.img)
    local loss = layers.cross_entropy{ input = r.prediction, label = r.label }
    r.avg_loss = layers.mean(loss)
    r.acc = layers.accuracy{ input = r.prediction, label = r.label }
    r.test = main:clone{ for_test = true }
    oar.optimizer.Adam{ learning_rate = opts.lr }:minimize(r.avg_loss)
  end)
  return r
end

---------------------------------------------------------------------------
-- Progress on stderr
---------------------------------------------------------------------------

pcall(ffi.cdef, "int isatty(int fd);")
local stderr_is_tty = false
do
  local ok, r = pcall(function() return ffi.C.isatty(2) end)
  stderr_is_tty = ok and r == 1
end

-- Wall-clock seconds (os.clock counts CPU time of all threads).
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } oar_example_timespec;
int clock_gettime(int clk_id, oar_example_timespec *tp);
]]
local ts = ffi.new("oar_example_timespec")
local function wall()
  ffi.C.clock_gettime(1, ts)  -- CLOCK_MONOTONIC
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

local Progress = {}
Progress.__index = Progress

local function progress(label, total)
  return setmetatable({ label = label, total = total, shown = -1, t0 = wall() }, Progress)
end

-- done: batches finished; info: text after the bar.
function Progress:update(done, info)
  if stderr_is_tty then
    local width = 30
    local fill = math.floor(width * done / self.total)
    if fill == self.shown and done < self.total then return end
    self.shown = fill
    io.stderr:write(string.format("\r%s [%s%s] %d/%d %s\27[K", self.label,
      string.rep("=", fill), string.rep(" ", width - fill), done, self.total, info))
  else
    -- plain lines, one per 10%
    local tenth = math.floor(10 * done / self.total)
    if tenth == self.shown or tenth == 0 then return end
    self.shown = tenth
    io.stderr:write(string.format("%s %3d%% %d/%d %s\n", self.label, 10 * tenth, done, self.total, info))
  end
  io.stderr:flush()
end

function Progress:finish()
  if stderr_is_tty then io.stderr:write("\r\27[K") io.stderr:flush() end
end

---------------------------------------------------------------------------
-- Training and testing
---------------------------------------------------------------------------

local function scalar(t) return t:data()[0] end

local function evaluate(exe, r, opts, scope)
  local correct, loss_sum, n = 0, 0, 0
  for x, y, b in fashion_mnist.batches("test", 500, { shuffle = false, image_shape = r.image_shape,
                                                     data_dir = opts.data_dir }) do
    local out = exe:run(r.test, { feed = { img = x, label = y }, fetch_list = { r.acc, r.avg_loss },
                                  scope = scope })
    correct = correct + scalar(out[1]) * b
    loss_sum = loss_sum + scalar(out[2]) * b
    n = n + b
  end
  return correct / n, loss_sum / n
end

local function train(name, opts)
  print(string.format("== %s: %s, batch %d, Adam lr %g, %d epoch%s", name,
    name == "mlp" and "784-512-256-10 perceptron" or "LeNet conv net",
    opts.batch_size, opts.lr, opts.epochs, opts.epochs == 1 and "" or "s"))
  local r = build(name, opts)
  local exe = oar.Executor(oar.CPUPlace())
  local scope = oar.Scope()
  exe:run(r.startup, { scope = scope })
  local n_train = fashion_mnist.load("train", opts.data_dir).count
  local per_epoch = math.ceil(n_train / opts.batch_size)
  if opts.max_batches then per_epoch = math.min(per_epoch, opts.max_batches) end
  local acc, test_loss
  for epoch = 1, opts.epochs do
    local bar = progress(string.format("%s epoch %d/%d", name, epoch, opts.epochs), per_epoch)
    local loss_sum, seen, k = 0, 0, 0
    local t0 = wall()
    for x, y, b in fashion_mnist.batches("train", opts.batch_size, {
        shuffle = true, seed = opts.seed * 1000 + epoch, image_shape = r.image_shape,
        data_dir = opts.data_dir }) do
      local out = exe:run(r.main, { feed = { img = x, label = y }, fetch_list = { r.avg_loss },
                                    scope = scope })
      local l = scalar(out[1])
      if l ~= l then error(string.format("%s: the loss became NaN at epoch %d, batch %d", name, epoch, k + 1)) end
      loss_sum = loss_sum + l * b
      seen = seen + b
      k = k + 1
      bar:update(k, string.format("loss %.4f %.0f samples/s", loss_sum / seen, seen / (wall() - t0)))
      if k >= per_epoch then break end
    end
    local dt = wall() - t0
    bar:finish()
    acc, test_loss = evaluate(exe, r, opts, scope)
    print(string.format("%s epoch %d: train loss %.4f, test loss %.4f, test accuracy %.4f, %.0f samples/s",
      name, epoch, loss_sum / seen, test_loss, acc, seen / dt))
    io.stdout:flush()
  end
  local dir = opts.save_dir
  if dir == nil then dir = "./model_" .. name
  elseif opts.model == "both" and dir ~= "" then dir = dir .. "/" .. name end
  if dir ~= "" then
    local io_mod = oar.io
    if io_mod and io_mod.save_inference_model then
      oar.scope_guard(scope, function()
        io_mod.save_inference_model(dir, { "img" }, { r.prediction }, exe, r.main)
      end)
      print(string.format("%s: inference model saved in %s", name, dir))
    else
      print(string.format("%s: saving is unavailable (this oar has no oar.io)", name))
    end
  end
  return acc
end

io.stdout:setvbuf("line")
local opts = parse_args(arg or {})
local ok, err = pcall(fashion_mnist.load, "train", opts.data_dir)
if not ok then
  io.stderr:write("recognize_digits: " .. tostring(err) .. "\n")
  os.exit(1)
end
local models = opts.model == "both" and { "mlp", "conv" } or { opts.model }
for _, name in ipairs(models) do train(name, opts) end
