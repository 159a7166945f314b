#!/usr/bin/env luajit
-- understand_sentiment_dynrnn.lua: the dynamic-RNN net of Fluid 1.8's book
-- test understand_sentiment (dyn_rnn_lstm: an embedding, an fc, an LSTM
-- written step by step in a DynamicRNN, its gates fcs with bias_attr=true,
-- the last step, an fc softmax, cross entropy, Adagrad). IMDB is not on
-- this machine: the reviews are synthetic (examples/book/synthetic_reviews.lua).
--
--   luajit examples/book/understand_sentiment_dynrnn.lua [--steps N] [--batch-size N]
--       [--dict-dim N] [--lstm-size N] [--lr X] [--seed N]
--
-- As a library: dofile("examples/book/understand_sentiment_dynrnn.lua").train{steps = 20}
-- returns the loss and accuracy of every step.

-- common.lua also finds lua/ next to examples/ in a source checkout.
local book = dofile((debug.getinfo(1, "S").source:match("^@(.*/)[^/]*$") or "./") .. "common.lua")

local oar = require("oar")
local layers = oar.layers

local M = {}

M.DEFAULTS = { steps = 100, batch_size = 32, dict_dim = 5147, lstm_size = 128, lr = 0.002, seed = 1 }

--- Fluid's dyn_rnn_lstm.
function M.dyn_rnn_lstm(data, label, input_dim, class_dim, emb_dim, lstm_size)
  class_dim, emb_dim, lstm_size = class_dim or 2, emb_dim or 32, lstm_size or 128
  local emb = layers.embedding{ input = data, size = { input_dim, emb_dim }, is_sparse = true }
  local sentence = layers.fc{ input = emb, size = lstm_size, act = "tanh" }
  local rnn = layers.DynamicRNN()
  rnn:block(function()
    local word = rnn:step_input(sentence)
    local prev_hidden = rnn:memory{ value = 0.0, shape = { lstm_size } }
    local prev_cell = rnn:memory{ value = 0.0, shape = { lstm_size } }
    local function gate_common(ipt, hidden, size)
      local gate0 = layers.fc{ input = ipt, size = size, bias_attr = true }
      local gate1 = layers.fc{ input = hidden, size = size, bias_attr = false }
      return gate0 + gate1
    end
    local forget_gate = layers.sigmoid{ x = gate_common(word, prev_hidden, lstm_size) }
    local input_gate = layers.sigmoid{ x = gate_common(word, prev_hidden, lstm_size) }
    local output_gate = layers.sigmoid{ x = gate_common(word, prev_hidden, lstm_size) }
    local cell_gate = layers.sigmoid{ x = gate_common(word, prev_hidden, lstm_size) }
    local cell = forget_gate * prev_cell + input_gate * cell_gate
    local hidden = output_gate * layers.tanh{ x = cell }
    rnn:update_memory(prev_cell, cell)
    rnn:update_memory(prev_hidden, hidden)
    rnn:output(hidden)
  end)
  local last = layers.sequence_last_step(rnn())
  local prediction = layers.fc{ input = last, size = class_dim, act = "softmax" }
  local cost = layers.cross_entropy{ input = prediction, label = label }
  local avg_cost = layers.mean(cost)
  local accuracy = layers.accuracy{ input = prediction, label = label }
  return avg_cost, accuracy, prediction
end

function M.build(opts)
  return book.sentiment_classifier(opts, function(data, label, dict_dim)
    return M.dyn_rnn_lstm(data, label, dict_dim, 2, 32, opts.lstm_size)
  end)
end

M.train = book.trainer(M, book.review_batches)

book.main(M, "understand_sentiment_dynrnn")

return M
