#!/usr/bin/env luajit
-- ctc_synthetic.lua: a small CTC recognizer in the style of the book
-- programs: frames of noisy "sound" (each token of a label sequence is
-- heard for two or three frames, with silence between tokens) go through
-- two fcs to per-frame scores over the classes and the blank; warpctc is
-- the loss (Adam), ctc_greedy_decoder reads the best path and edit_distance
-- against the label gives the error rate, which falls toward 0 as it trains.
--
--   luajit examples/book/ctc_synthetic.lua [--steps N] [--batch-size N]
--       [--num-classes N] [--hidden N] [--lr X] [--noise X] [--seed N]
--
-- As a library: dofile("examples/book/ctc_synthetic.lua").train{steps = 100}
-- returns the loss and the error rate (edit distance over the label's
-- length, averaged over the batch) of every step.

local book = dofile((debug.getinfo(1, "S").source:match("^@(.*/)[^/]*$") or "./") .. "common.lua")

local oar = require("oar")
local layers = oar.layers

local M = {}

M.DEFAULTS = { steps = 300, batch_size = 16, num_classes = 6, hidden = 32, lr = 0.01, noise = 0.3, seed = 1 }

local function feat_dim(o) return o.num_classes + 1 end   -- one channel per class, channel 0 silence

function M.build(o)
  return book.programs(o, function(r)
    local frames = layers.data{ name = "frames", shape = { feat_dim(o) }, dtype = "float32", lod_level = 1 }
    local label = layers.data{ name = "label", shape = { 1 }, dtype = "int32", lod_level = 1 }
    local hidden = layers.fc{ input = frames, size = o.hidden, act = "relu" }
    local scores = layers.fc{ input = hidden, size = o.num_classes + 1 }   -- class 0 is the blank
    local loss = layers.warpctc{ input = scores, label = label, blank = 0 }
    r.avg_cost = layers.mean(loss)
    oar.optimizer.Adam{ learning_rate = o.lr }:minimize(r.avg_cost)
    local decoded = layers.ctc_greedy_decoder{ input = layers.softmax(scores), blank = 0 }
    local dist = layers.edit_distance{ input = decoded, label = layers.cast(label, "int64"), normalized = true }
    r.acc = layers.mean(dist)   -- the error rate, train_loop's second figure
  end)
end

-- batches of label sequences (2 to 5 tokens from 1..num_classes) and their frames
function M.batches(o)
  local rng = book.rng(o.seed)
  local d = feat_dim(o)
  return function()
    local frames, labels, flod, llod = {}, {}, { 0 }, { 0 }
    local function frame(class)
      local f = {}
      for c = 0, d - 1 do f[c + 1] = (c == class and 1 or 0) + o.noise * rng.normal() end
      frames[#frames + 1] = f
    end
    for _ = 1, o.batch_size do
      local prev
      for _ = 1, rng.int(2) do frame(0) end
      for _ = 1, 2 + rng.int(4) do
        local tok = 1 + rng.int(o.num_classes)
        -- silence between tokens; always some between two equal ones
        local gap = rng.int(2)
        if tok == prev and gap == 0 then gap = 1 end
        if prev then for _ = 1, gap do frame(0) end end
        for _ = 1, 2 + rng.int(2) do frame(tok) end
        labels[#labels + 1] = { tok }
        prev = tok
      end
      for _ = 1, rng.int(2) do frame(0) end
      flod[#flod + 1], llod[#llod + 1] = #frames, #labels
    end
    local x, y = oar.Tensor(frames, "float32"), oar.Tensor(labels, "int32")
    x:set_lod{ flod }
    y:set_lod{ llod }
    return { frames = x, label = y }
  end
end

M.train = book.trainer(M, M.batches)

book.main(M, "ctc_synthetic")

return M
