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

-- common.lua also finds lua/ next to examples/ in a source checkout.
local book = dofile((debug.getinfo(1, "S").source:match("^@(.*/)[^/]*$") or "./") .. "common.lua")

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
  return book.image_classifier(opts, M.CLASSES, function(images) return M.vgg16_bn_drop(images, opts.width) end)
end

M.train = book.trainer(M, book.image_batches)

book.main(M, "image_classification_vgg")

return M
