#!/usr/bin/env luajit
-- image_classification_resnet.lua: Fluid 1.8's book test
-- image_classification with its ResNet for CIFAR-10 (resnet_cifar10:
-- conv_bn_layer / basicblock / layer_warp, a bias_attr=true conv in every
-- block, average pooling, fc softmax, cross entropy, Adam). CIFAR-10 is not
-- on this machine: the data are synthetic [3, 32, 32] images of 10 classes
-- (examples/book/synthetic_images.lua).
--
--   luajit examples/book/image_classification_resnet.lua [--steps N] [--depth N] [--batch-size N]
--       [--lr X] [--seed N]
--
-- As a library: dofile("examples/book/image_classification_resnet.lua").train{steps = 10, depth = 8}
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
local layers = oar.layers

local M = {}

M.CLASSES = 10
M.DEFAULTS = { steps = 50, depth = 32, batch_size = 32, lr = 0.001, seed = 1 }

--- Fluid's resnet_cifar10: depth = 6n + 2 convolutions in three stages of
-- n basic blocks (16, 32, 64 channels), then 8x8 average pooling.
function M.resnet_cifar10(input, depth)
  local function conv_bn_layer(x, ch_out, filter_size, stride, padding, act, bias_attr)
    local tmp = layers.conv2d{ input = x, filter_size = filter_size, num_filters = ch_out, stride = stride,
                               padding = padding, bias_attr = bias_attr == nil and false or bias_attr }
    if act == nil then act = "relu" elseif act == false then act = nil end
    return layers.batch_norm{ input = tmp, act = act }
  end
  local function shortcut(x, ch_in, ch_out, stride)
    if ch_in ~= ch_out then return conv_bn_layer(x, ch_out, 1, stride, 0, false) end
    return x
  end
  local function basicblock(x, ch_in, ch_out, stride)
    local tmp = conv_bn_layer(x, ch_out, 3, stride, 1)
    tmp = conv_bn_layer(tmp, ch_out, 3, 1, 1, false, true)
    local short = shortcut(x, ch_in, ch_out, stride)
    return layers.elementwise_add{ x = tmp, y = short, act = "relu" }
  end
  local function layer_warp(block_func, x, ch_in, ch_out, count, stride)
    local tmp = block_func(x, ch_in, ch_out, stride)
    for _ = 2, count do tmp = block_func(tmp, ch_out, ch_out, 1) end
    return tmp
  end
  assert((depth - 2) % 6 == 0, "resnet_cifar10: depth must be 6n + 2")
  local n = (depth - 2) / 6
  local conv1 = conv_bn_layer(input, 16, 3, 1, 1)
  local res1 = layer_warp(basicblock, conv1, 16, 16, n, 1)
  local res2 = layer_warp(basicblock, res1, 16, 32, n, 2)
  local res3 = layer_warp(basicblock, res2, 32, 64, n, 2)
  return layers.pool2d{ input = res3, pool_size = 8, pool_type = "avg", pool_stride = 1 }
end

function M.build(opts)
  local r = { main = oar.Program(), startup = oar.Program() }
  r.main.random_seed, r.startup.random_seed = opts.seed, opts.seed
  oar.program_guard(r.main, r.startup, function()
    local images = layers.data{ name = "pixel", shape = { 3, 32, 32 }, dtype = "float32" }
    local label = layers.data{ name = "label", shape = { 1 }, dtype = "int64" }
    local net = M.resnet_cifar10(images, opts.depth)
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

if arg and arg[0] and arg[0]:match("image_classification_resnet%.lua$") then
  M.train(book.parse_args("image_classification_resnet", arg, M.DEFAULTS))
end

return M
