#!/usr/bin/env luajit
-- image_classification_vgg.lua: Fluid 1.8's book test image_classification
-- with its VGG net (vgg16_bn_drop: five nets.img_conv_group blocks with
-- batch normalization and dropout, then dropout, fc 4096, batch_norm,
-- dropout, fc 4096, and an fc softmax; cross entropy, Adam). CIFAR-10 is
-- not on this machine: the data are synthetic [3, 32, 32] images of 10
-- classes (examples/book/synthetic_images.lua).
--
-- --width N divides every channel count and the fc widths by N (1: Fluid's
-- net, 64 to 512 channels and 4096-wide fcs; the spec trains width 16).
--
--   luajit examples/book/image_classification_vgg.lua [--steps N] [--width N] [--batch-size N]
--       [--lr X] [--seed N]
--
-- As a library: dofile("examples/book/image_classification_vgg.lua").train{steps = 10, width = 16}
-- returns the loss and accuracy of every step.

local here = debug.getinfo(1, "S").source:match("^@(.*)examples/book/[^/]*$")
if here then
  local root = here == "" and "./" or here
  package.path = root .. "lua/?.lua;" .. root .. "lua/?/init.lua;" .. package.path
end
local dir = debug.getinfo(1, "S").source:match("^@(.*/)[^/]*$") or "./"
local book = dofile(dir .. "common.lua")
local synthetic = dofile(dir .. "synthetic_images.lua")

local oar = require("oar")
local layers, nets = oar.layers, oar.nets

local M = {}

M.CLASSES = 10
M.DEFAULTS = { steps = 50, width = 1, batch_size = 32, lr = 0.001, seed = 1 }

--- Fluid's vgg16_bn_drop, its channel counts and fc widths divided by `width`.
function M.vgg16_bn_drop(input, width)
  width = width or 1
  local function conv_block(x, num_filter, groups, dropouts)
    local filters = {}
    for i = 1, groups do filters[i] = num_filter / width end
    return nets.img_conv_group{ input = x, pool_size = 2, pool_stride = 2, conv_num_filter = filters,
      conv_filter_size = 3, conv_act = "relu", conv_with_batchnorm = true, conv_batchnorm_drop_rate = dropouts,
      pool_type = "max" }
  end
  local conv1 = conv_block(input, 64, 2, { 0.3, 0 })
  local conv2 = conv_block(conv1, 128, 2, { 0.4, 0 })
  local conv3 = conv_block(conv2, 256, 3, { 0.4, 0.4, 0 })
  local conv4 = conv_block(conv3, 512, 3, { 0.4, 0.4, 0 })
  local conv5 = conv_block(conv4, 512, 3, { 0.4, 0.4, 0 })
  local drop = layers.dropout{ x = conv5, dropout_prob = 0.5 }
  local fc1 = layers.fc{ input = drop, size = 4096 / width }
  local bn = layers.batch_norm{ input = fc1, act = "relu" }
  local drop2 = layers.dropout{ x = bn, dropout_prob = 0.5 }
  return layers.fc{ input = drop2, size = 4096 / width }
end

function M.build(opts)
  local r = { main = oar.Program(), startup = oar.Program() }
  r.main.random_seed, r.startup.random_seed = opts.seed, opts.seed
  oar.program_guard(r.main, r.startup, function()
    local images = layers.data{ name = "pixel", shape = { 3, 32, 32 }, dtype = "float32" }
    local label = layers.data{ name = "label", shape = { 1 }, dtype = "int64" }
    local net = M.vgg16_bn_drop(images, opts.width)
    r.predict = layers.fc{ input = net, size = M.CLASSES, act = "softmax" }
    local cost = layers.cross_entropy{ input = r.predict, label = label }
    r.avg_cost = layers.mean(cost)
    r.acc = layers.accuracy{ input = r.predict, label = label }
    oar.optimizer.Adam{ learning_rate = opts.lr }:minimize(r.avg_cost)
  end)
  return r
end

function M.train(opts)
  local o = {}
  for k, v in pairs(M.DEFAULTS) do o[k] = v end
  for k, v in pairs(opts or {}) do o[k] = v end
  local r = M.build(o)
  local next_batch = synthetic(o.seed, o.batch_size)
  return book.train_loop(r, function()
    local x, y = next_batch()
    return { pixel = x, label = y }
  end, o)
end

if arg and arg[0] and arg[0]:match("image_classification_vgg%.lua$") then
  M.train(book.parse_args("image_classification_vgg", arg, M.DEFAULTS))
end

return M
