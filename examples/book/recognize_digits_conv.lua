#!/usr/bin/env luajit
-- recognize_digits_conv.lua: the convolutional net of Fluid 1.8's book test
-- recognize_digits (conv_net: two simple_img_conv_pool blocks with a
-- batch_norm between them, an fc softmax, cross entropy, Adam), trained on
-- Fashion-MNIST from the directory oar.dataset.fashion_mnist reads.
--
--   luajit examples/book/recognize_digits_conv.lua [--steps N] [--batch-size N] [--lr X] [--seed N]
--
-- As a library: dofile("examples/book/recognize_digits_conv.lua").train{steps = 20}
-- returns the loss and accuracy of every step.

-- common.lua also finds lua/ next to examples/ in a source checkout.
local book = dofile((debug.getinfo(1, "S").source:match("^@(.*/)[^/]*$") or "./") .. "common.lua")

local oar = require("oar")
local layers, nets = oar.layers, oar.nets
local fashion_mnist = require("oar.dataset.fashion_mnist")

local M = {}

M.DEFAULTS = { steps = 100, batch_size = 64, lr = 0.001, seed = 1, data_dir = "" }

-- fc softmax over `hidden`, its cross entropy against `label`, the accuracy
local function loss_net(hidden, label)
  local prediction = layers.fc{ input = hidden, size = 10, act = "softmax" }
  local loss = layers.cross_entropy{ input = prediction, label = label }
  local avg_loss = layers.mean(loss)
  local acc = layers.accuracy{ input = prediction, label = label }
  return prediction, avg_loss, acc
end

--- Fluid's conv_net: conv 5x5 (20) + pool, batch_norm, conv 5x5 (50) + pool.
function M.conv_net(img, label)
  local conv_pool_1 = nets.simple_img_conv_pool{ input = img, filter_size = 5, num_filters = 20, pool_size = 2,
                                                 pool_stride = 2, act = "relu" }
  conv_pool_1 = layers.batch_norm(conv_pool_1)
  local conv_pool_2 = nets.simple_img_conv_pool{ input = conv_pool_1, filter_size = 5, num_filters = 50,
                                                 pool_size = 2, pool_stride = 2, act = "relu" }
  return loss_net(conv_pool_2, label)
end

function M.build(opts)
  return book.programs(opts, function(r)
    local img = layers.data{ name = "img", shape = { 1, 28, 28 }, dtype = "float32" }
    local label = layers.data{ name = "label", shape = { 1 }, dtype = "int64" }
    r.prediction, r.avg_cost, r.acc = M.conv_net(img, label)
    oar.optimizer.Adam{ learning_rate = opts.lr }:minimize(r.avg_cost)
  end)
end

-- Fashion-MNIST batches of the training set, reshuffled when it runs out
local function batches(o)
  local data_dir = o.data_dir ~= "" and o.data_dir or nil
  local data = fashion_mnist.load("train", { data_dir = data_dir, max_items = o.steps * o.batch_size })
  local iter = fashion_mnist.batches(data, o.batch_size, { seed = o.seed, image_shape = { 1, 28, 28 }, drop_last = true })
  return function()
    local x, y = iter()
    if not x then
      iter = fashion_mnist.batches(data, o.batch_size, { seed = o.seed + 1, image_shape = { 1, 28, 28 }, drop_last = true })
      x, y = iter()
    end
    return { img = x, label = y }
  end
end

M.train = book.trainer(M, batches)

book.main(M, "recognize_digits_conv")

return M
