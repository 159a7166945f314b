#!/usr/bin/env luajit
-- fit_a_line.lua: Fluid's "fit a line" book chapter on synthetic data.
--
-- Linear regression with 13 features: y = x . w_true + b_true + noise, the
-- noise Gaussian with standard deviation --noise. A one-unit fc layer is
-- trained with SGD on the mean squared error and the training and test
-- losses are printed after every pass. The best possible loss is the noise
-- variance, so the test loss should end close to noise^2.
--
--   luajit examples/fit_a_line.lua [--passes N] [--noise X] [--lr X] [--batch-size N]
--
-- Also usable as a library: dofile("examples/fit_a_line.lua").train{...}
-- returns the per-pass losses.

-- A source checkout runs without installing (lua/ and build/ next to examples/).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)[^/]*$") or "./") .. "checkout.lua")

local oar = require("oar")
local layers = oar.layers

local M = {}

M.FEATURES = 13

-- A small deterministic generator (Park-Miller), so the data is the same on
-- every machine and independent of oar's own random ops.
local function generator(seed)
  local state = seed % 2147483646 + 1
  local function uniform()
    state = (state * 16807) % 2147483647
    return state / 2147483647
  end
  local function normal()
    local u1, u2 = uniform(), uniform()
    return math.sqrt(-2 * math.log(u1)) * math.cos(2 * math.pi * u2)
  end
  return uniform, normal
end

-- n samples: x uniform in [-1, 1]^13, y = x . w + b + noise * N(0, 1)
function M.make_data(n, noise, seed)
  local uniform, normal = generator(seed or 7)
  local w, b = {}, 0.5
  for j = 1, M.FEATURES do w[j] = (j % 2 == 0 and 1 or -1) * j / M.FEATURES end
  local xs, ys = {}, {}
  for i = 1, n do
    local x, y = {}, b
    for j = 1, M.FEATURES do
      x[j] = 2 * uniform() - 1
      y = y + x[j] * w[j]
    end
    xs[i] = x
    ys[i] = { y + noise * normal() }
  end
  return xs, ys
end

local function batches(xs, ys, size)
  local out = {}
  for start = 1, #xs, size do
    local bx, by = {}, {}
    for i = start, math.min(start + size - 1, #xs) do
      bx[#bx + 1] = xs[i]
      by[#by + 1] = ys[i]
    end
    out[#out + 1] = { bx, by }
  end
  return out
end

-- train{passes=20, noise=0.1, lr=0.1, batch_size=32, train_size=512,
-- test_size=256, verbose=false} -> {train losses per pass}, {test losses per pass}
function M.train(opts)
  opts = opts or {}
  local passes = opts.passes or 20
  local noise = opts.noise or 0.1
  local lr = opts.lr or 0.1
  local batch_size = opts.batch_size or 32

  local main, startup = oar.Program(), oar.Program()
  main.random_seed, startup.random_seed = 1, 1
  local loss
  oar.program_guard(main, startup, function()
    local x = layers.data{ name = "x", shape = { M.FEATURES } }
    local y = layers.data{ name = "y", shape = { 1 } }
    local pred = layers.fc{ input = x, size = 1 }
    loss = layers.mean(layers.square_error_cost{ input = pred, label = y })
  end)
  local test_program = main:clone{ for_test = true }
  oar.program_guard(main, startup, function()
    oar.optimizer.SGD{ learning_rate = lr }:minimize(loss)
  end)

  local train_x, train_y = M.make_data(opts.train_size or 512, noise, 7)
  local test_x, test_y = M.make_data(opts.test_size or 256, noise, 11)
  local train_batches = batches(train_x, train_y, batch_size)

  local exe = oar.Executor(oar.CPUPlace())
  local scope = oar.Scope()
  exe:run(startup, { scope = scope })
  local train_losses, test_losses = {}, {}
  for pass = 1, passes do
    local sum, n = 0, 0
    for _, b in ipairs(train_batches) do
      local out = exe:run(main, { feed = { x = b[1], y = b[2] }, fetch_list = { loss }, scope = scope })
      sum = sum + out[1]:get(1) * #b[1]
      n = n + #b[1]
    end
    train_losses[pass] = sum / n
    local out = exe:run(test_program, { feed = { x = test_x, y = test_y }, fetch_list = { loss.name }, scope = scope })
    test_losses[pass] = out[1]:get(1)
    if opts.verbose then
      print(string.format("pass %2d  train loss %.5f  test loss %.5f", pass, train_losses[pass], test_losses[pass]))
    end
  end
  return train_losses, test_losses
end

local function main_cli(argv)
  local opts = { verbose = true }
  local i = 1
  while i <= #argv do
    local a, v = argv[i], argv[i + 1]
    if a == "--passes" then opts.passes = tonumber(v)
    elseif a == "--noise" then opts.noise = tonumber(v)
    elseif a == "--lr" then opts.lr = tonumber(v)
    elseif a == "--batch-size" then opts.batch_size = tonumber(v)
    else
      io.stderr:write("usage: luajit examples/fit_a_line.lua [--passes N] [--noise X] [--lr X] [--batch-size N]\n")
      os.exit(2)
    end
    i = i + 2
  end
  local noise = opts.noise or 0.1
  local _, test = M.train(opts)
  print(string.format("final test loss %.5f (noise variance %.5f)", test[#test], noise * noise))
end

if arg and arg[0] and arg[0]:match("fit_a_line%.lua$") then main_cli(arg) end

return M
