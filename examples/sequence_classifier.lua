#!/usr/bin/env luajit
-- sequence_classifier.lua: a recurrent classifier over variable-length token
-- sequences, the shape of Fluid's understand_sentiment book chapter.
--
-- Data (generated): sequences of 1..30 tokens from a vocabulary of 20. Two
-- tokens are marked (A = 1, B = 2) and each appears at a position with
-- probability 0.15; the label says which of them occurs more often (1: A,
-- 0: B); ties are not generated. Deciding it needs a running count over the
-- whole sequence, which a bag of single tokens cannot shortcut for long
-- sequences where the counts differ by one.
--
-- Net: embedding -> fc (4H, or 3H for a GRU) -> dynamic_lstm / dynamic_gru
-- -> sequence_last_step (or sequence_pool max) -> fc softmax, trained with
-- Adam on cross entropy. Minibatches are LoD tensors: the token ids of all
-- sequences of a batch stacked in one [total, 1] int64 tensor whose LoD gives
-- the sequence boundaries.
--
--   luajit examples/sequence_classifier.lua [--epochs N] [--train N] [--test N]
--       [--hidden N] [--emb N] [--batch-size N] [--lr X] [--cell lstm|gru]
--       [--pool last|max] [--max-len N] [--seed N]
--
-- Also usable as a library: dofile("examples/sequence_classifier.lua").train{...}
-- returns the per-epoch test accuracies.

-- A source checkout runs without installing (lua/ and build/ next to examples/).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)[^/]*$") or "./") .. "checkout.lua")

local ffi = require("ffi")
local oar = require("oar")
local layers = oar.layers

local M = {}

M.VOCAB = 20
M.TOKEN_A, M.TOKEN_B = 1, 2

M.DEFAULTS = {
  epochs = 8, train = 6000, test = 2000, hidden = 32, emb = 16, batch_size = 32, lr = 0.005,
  cell = "lstm", pool = "last", min_len = 1, max_len = 30, mark_prob = 0.15, seed = 1, verbose = true,
}

-- a small deterministic generator (xorshift64*), so the data is the same
-- on every machine
local function rng(seed)
  local s = ffi.new("uint64_t[1]", 0x9E3779B97F4A7C15ULL + seed * 0x2545F4914F6CDD1DULL)
  return function()
    local x = s[0]
    x = bit.bxor(x, bit.rshift(x, 12))
    x = bit.bxor(x, bit.lshift(x, 25))
    x = bit.bxor(x, bit.rshift(x, 27))
    s[0] = x
    return tonumber(bit.rshift(x * 0x2545F4914F6CDD1DULL, 11)) / 9007199254740992  -- [0, 1)
  end
end

-- n samples {tokens = {...}, label = 0|1}
function M.make_data(n, opts, seed)
  opts = opts or M.DEFAULTS
  local rand = rng(seed)
  local data = {}
  local lo, hi, p = opts.min_len or 1, opts.max_len or 30, opts.mark_prob or 0.15
  while #data < n do
    local len = lo + math.floor(rand() * (hi - lo + 1))
    local toks, ca, cb = {}, 0, 0
    for i = 1, len do
      local u = rand()
      local t
      if u < p then t, ca = M.TOKEN_A, ca + 1
      elseif u < 2 * p then t, cb = M.TOKEN_B, cb + 1
      else
        t = 3 + math.floor(rand() * (M.VOCAB - 3))   -- another token (0 is never used)
      end
      toks[i] = t
    end
    if ca ~= cb then data[#data + 1] = { tokens = toks, label = ca > cb and 1 or 0 } end
  end
  return data
end

-- the feed of samples[first..last]: words [total, 1] int64 with the LoD of
-- the sequences, label [B, 1] int64
function M.make_batch(samples, first, last)
  local total = 0
  for i = first, last do total = total + #samples[i].tokens end
  local words = oar.Tensor{ shape = { total, 1 }, dtype = "int64" }
  local label = oar.Tensor{ shape = { last - first + 1, 1 }, dtype = "int64" }
  local wp, lp = words:data(), label:data()
  local offs, r = { 0 }, 0
  for i = first, last do
    local s = samples[i]
    for _, t in ipairs(s.tokens) do wp[r] = t; r = r + 1 end
    offs[#offs + 1] = r
    lp[i - first] = s.label
  end
  words:set_lod({ offs })
  return { words = words, label = label }
end

-- main, startup and test programs with their variables
function M.build(opts)
  local main, startup = oar.Program(), oar.Program()
  main.random_seed, startup.random_seed = opts.seed, opts.seed
  local r = { main = main, startup = startup }
  oar.program_guard(main, startup, function()
    local words = layers.data{ name = "words", shape = { 1 }, dtype = "int64", lod_level = 1 }
    local label = layers.data{ name = "label", shape = { 1 }, dtype = "int64" }
    local emb = layers.embedding{ input = words, size = { M.VOCAB, opts.emb } }
    local hidden
    if opts.cell == "gru" then
      local proj = layers.fc{ input = emb, size = 3 * opts.hidden }
      hidden = layers.dynamic_gru{ input = proj, size = opts.hidden }
    else
      local proj = layers.fc{ input = emb, size = 4 * opts.hidden }
      hidden = layers.dynamic_lstm{ input = proj, size = 4 * opts.hidden }
    end
    local pooled = opts.pool == "max" and layers.sequence_pool{ input = hidden, pool_type = "max" }
                   or layers.sequence_last_step(hidden)
    r.prediction = layers.fc{ input = pooled, size = 2, act = "softmax" }
    r.avg_loss = layers.mean(layers.cross_entropy{ input = r.prediction, label = label })
    r.acc = layers.accuracy{ input = r.prediction, label = label }
    r.test = main:clone{ for_test = true }
    oar.optimizer.Adam{ learning_rate = opts.lr }:minimize(r.avg_loss)
  end)
  return r
end

local function scalar(t) return tonumber(t:data()[0]) end

local function shuffle(list, rand)
  for i = #list, 2, -1 do
    local j = 1 + math.floor(rand() * i)
    list[i], list[j] = list[j], list[i]
  end
end

function M.evaluate(exe, r, samples, scope)
  local correct, loss_sum = 0, 0
  local bs = 250
  for first = 1, #samples, bs do
    local last = math.min(first + bs - 1, #samples)
    local out = exe:run(r.test, { feed = M.make_batch(samples, first, last), fetch_list = { r.acc, r.avg_loss },
                                  scope = scope })
    local b = last - first + 1
    correct = correct + scalar(out[1]) * b
    loss_sum = loss_sum + scalar(out[2]) * b
  end
  return correct / #samples, loss_sum / #samples
end

-- trains with opts (M.DEFAULTS fill the gaps); returns the per-epoch test
-- accuracies, the final one, and the trained model {r=, exe=, scope=} for
-- M.evaluate
function M.train(o)
  local opts = {}
  for k, v in pairs(M.DEFAULTS) do opts[k] = v end
  for k, v in pairs(o or {}) do opts[k] = v end
  local train_set = M.make_data(opts.train, opts, opts.seed * 7919 + 1)
  local test_set = M.make_data(opts.test, opts, opts.seed * 7919 + 2)
  local r = M.build(opts)
  local exe = oar.Executor(oar.CPUPlace())
  local scope = oar.Scope()
  exe:run(r.startup, { scope = scope })
  if opts.verbose then
    print(string.format("sequence classifier: %s, hidden %d, %s pooling; %d train / %d test sequences of length %d..%d",
      opts.cell, opts.hidden, opts.pool, #train_set, #test_set, opts.min_len, opts.max_len))
  end
  local rand = rng(opts.seed * 31 + 5)
  local accs = {}
  for epoch = 1, opts.epochs do
    shuffle(train_set, rand)
    local loss_sum, acc_sum, seen = 0, 0, 0
    local t0 = os.clock()
    for first = 1, #train_set, opts.batch_size do
      local last = math.min(first + opts.batch_size - 1, #train_set)
      local out = exe:run(r.main, { feed = M.make_batch(train_set, first, last),
                                    fetch_list = { r.avg_loss, r.acc }, scope = scope })
      local b = last - first + 1
      local l = scalar(out[1])
      if l ~= l then error(string.format("the loss became NaN at epoch %d", epoch)) end
      loss_sum = loss_sum + l * b
      acc_sum = acc_sum + scalar(out[2]) * b
      seen = seen + b
    end
    local dt = os.clock() - t0
    local acc, test_loss = M.evaluate(exe, r, test_set, scope)
    accs[epoch] = acc
    if opts.verbose then
      print(string.format("epoch %2d: train loss %.4f, train accuracy %.4f, test loss %.4f, test accuracy %.4f (%.1f s)",
        epoch, loss_sum / seen, acc_sum / seen, test_loss, acc, dt))
      io.stdout:flush()
    end
  end
  return accs, accs[#accs], { r = r, exe = exe, scope = scope }
end

local function main_cli(argv)
  local opts = {}
  local numeric = { epochs = true, train = true, test = true, hidden = true, emb = true, batch_size = true,
                    lr = true, max_len = true, min_len = true, seed = true }
  local i = 1
  local function usage(msg)
    io.stderr:write((msg and ("sequence_classifier: " .. msg .. "\n") or "") ..
      "usage: luajit examples/sequence_classifier.lua [--epochs N] [--train N] [--test N] [--hidden N]\n" ..
      "         [--emb N] [--batch-size N] [--lr X] [--cell lstm|gru] [--pool last|max] [--min-len N]\n" ..
      "         [--max-len N] [--seed N]\n")
    os.exit(msg and 2 or 0)
  end
  while i <= #argv do
    local a = argv[i]
    if a == "-h" or a == "--help" then usage() end
    local key = a:match("^%-%-([%w%-]+)$")
    if not key then usage("unexpected argument '" .. a .. "'") end
    key = key:gsub("%-", "_")
    local v = argv[i + 1]
    if v == nil then usage("--" .. key:gsub("_", "-") .. " needs a value") end
    if numeric[key] then
      local n = tonumber(v)
      if not n or n <= 0 then usage("--" .. key:gsub("_", "-") .. " expects a positive number, got '" .. v .. "'") end
      opts[key] = n
    elseif key == "cell" then
      if v ~= "lstm" and v ~= "gru" then usage("--cell must be lstm or gru") end
      opts.cell = v
    elseif key == "pool" then
      if v ~= "last" and v ~= "max" then usage("--pool must be last or max") end
      opts.pool = v
    else
      usage("unknown option " .. a)
    end
    i = i + 2
  end
  local _, final = M.train(opts)
  print(string.format("final test accuracy %.4f", final))
end

if arg and arg[0] and arg[0]:match("sequence_classifier%.lua$") then main_cli(arg) end

return M
