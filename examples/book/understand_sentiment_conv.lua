#!/usr/bin/env luajit
-- understand_sentiment_conv.lua: the convolutional net of Fluid 1.8's book
-- test understand_sentiment (convolution_net: an embedding, two
-- nets.sequence_conv_pool of window 3 and 4, an fc softmax over both,
-- cross entropy, Adagrad). IMDB is not on this machine: the reviews are
-- synthetic (examples/book/synthetic_reviews.lua).
--
--   luajit examples/book/understand_sentiment_conv.lua [--steps N] [--batch-size N] [--dict-dim N]
--       [--lr X] [--seed N]
--
-- As a library: dofile("examples/book/understand_sentiment_conv.lua").train{steps = 20}
-- returns the loss and accuracy of every step.

-- common.lua also finds lua/ next to examples/ in a source checkout.
local book = dofile((debug.getinfo(1, "S").source:match("^@(.*/)[^/]*$") or "./") .. "common.lua")

local oar = require("oar")
local layers, nets = oar.layers, oar.nets

local M = {}

M.DEFAULTS = { steps = 100, batch_size = 32, dict_dim = 5147, lr = 0.002, seed = 1 }

--- Fluid's convolution_net.
function M.convolution_net(data, label, input_dim, class_dim, emb_dim, hid_dim)
  class_dim, emb_dim, hid_dim = class_dim or 2, emb_dim or 32, hid_dim or 32
  local emb = layers.embedding{ input = data, size = { input_dim, emb_dim }, is_sparse = true }
  local conv_3 = nets.sequence_conv_pool{ input = emb, num_filters = hid_dim, filter_size = 3, act = "tanh",
                                          pool_type = "sqrt" }
  local conv_4 = nets.sequence_conv_pool{ input = emb, num_filters = hid_dim, filter_size = 4, act = "tanh",
                                          pool_type = "sqrt" }
  local prediction = layers.fc{ input = { conv_3, conv_4 }, size = class_dim, act = "softmax" }
  local cost = layers.cross_entropy{ input = prediction, label = label }
  local avg_cost = layers.mean(cost)
  local accuracy = layers.accuracy{ input = prediction, label = label }
  return avg_cost, accuracy, prediction
end

function M.build(opts)
  return book.sentiment_classifier(opts, M.convolution_net)
end

M.train = book.trainer(M, book.review_batches)

book.main(M, "understand_sentiment_conv")

return M
