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

-- common.lua also finds lua/ next to examples/ in a source checkout.
local book = dofile((debug.getinfo(1, "S").source:match("^@(.*/)[^/]*$") or "./") .. "common.lua")

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
  return book.image_classifier(opts, M.CLASSES, function(images) return M.resnet_cifar10(images, opts.depth) end)
end

M.train = book.trainer(M, book.image_batches)

book.main(M, "image_classification_resnet")

return M
