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

local here = debug.getinfo(1, "S").source:match("^@(.*)examples/book/[^/]*$")
if here then
  local root = here == "" and "./" or here
  package.path = root .. "lua/?.lua;" .. root .. "lua/?/init.lua;" .. package.path
end
local dir = debug.getinfo(1, "S").source:match("^@(.*/)[^/]*$") or "./"
local book = dofile(dir .. "common.lua")
local synthetic = dofile(dir .. "synthetic_reviews.lua")

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
  local r = { main = oar.Program(), startup = oar.Program() }
  r.main.random_seed, r.startup.random_seed = opts.seed, opts.seed
  oar.program_guard(r.main, r.startup, function()
    local data = layers.data{ name = "words", shape = { 1 }, dtype = "int64", lod_level = 1 }
    local label = layers.data{ name = "label", shape = { 1 }, dtype = "int64" }
    r.avg_cost, r.acc, r.prediction = M.convolution_net(data, label, opts.dict_dim)
    oar.optimizer.Adagrad{ learning_rate = opts.lr }:minimize(r.avg_cost)
  end)
  return r
end

function M.train(opts)
  local o = {}
  for k, v in pairs(M.DEFAULTS) do o[k] = v end
  for k, v in pairs(opts or {}) do o[k] = v end
  local r = M.build(o)
  local next_batch = synthetic(o.seed, o.batch_size, o.dict_dim)
  return book.train_loop(r, function()
    local words, labels = next_batch()
    return { words = words, label = labels }
  end, o)
end

if arg and arg[0] and arg[0]:match("understand_sentiment_conv%.lua$") then
  M.train(book.parse_args("understand_sentiment_conv", arg, M.DEFAULTS))
end

return M
