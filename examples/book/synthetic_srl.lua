-- examples/book/synthetic_srl.lua: CoNLL-05-shaped samples for
-- label_semantic_roles when conll05 is not on the machine. A sentence is a
-- row of phrases: noun phrases (an optional determiner, then one or two
-- nouns) and filler words, with one predicate (a verb) somewhere after the
-- first phrase. The noun phrase right before the predicate is its A0, the
-- one right after (if any) its A1, the predicate itself V; the rest is O.
-- As the conll05 reader does, every word of a sentence carries the
-- predicate, the five words around it (ctx_n2 .. ctx_p2, "<eos>"-padded by
-- the sentence's ends) and a mark: 1 inside that five-word window, else 0.
-- Loaded with dofile; returns the dictionary sizes and batches(seed, n) ->
-- function() feed (the eight features and the target, LoD tensors).
local book = dofile((debug.getinfo(1, "S").source:match("^@(.*/)[^/]*$") or "./") .. "common.lua")

local oar = require("oar")

local M = {}

-- words: 0 <eos>, 1..5 determiners, 6..45 nouns, 46..95 filler words, 96..115 verbs
local EOS, DET, NOUN, FILL, VERB = 0, { 1, 5 }, { 6, 40 }, { 46, 50 }, { 96, 20 }
M.word_dict_len = 116
M.pred_dict_len = 20          -- the verbs, numbered from 0
M.mark_dict_len = 2
-- IOB tags: B-A0 0, I-A0 1, B-A1 2, I-A1 3, B-V 4, I-V 5, O 6
M.label_dict_len = 7
local B_A0, B_A1, B_V, O = 0, 2, 4, 6

local function noun_phrase(rng)
  local p = {}
  if rng.uniform() < 0.5 then p[#p + 1] = DET[1] + rng.int(DET[2]) end
  for _ = 1, 1 + rng.int(2) do p[#p + 1] = NOUN[1] + rng.int(NOUN[2]) end
  return p
end

-- one sentence: words, tags, and the predicate's position (1-based)
local function sentence(rng)
  local phrases = {}
  for _ = 1, 3 + rng.int(3) do
    if rng.uniform() < 0.6 then phrases[#phrases + 1] = { kind = "np", words = noun_phrase(rng) }
    else phrases[#phrases + 1] = { kind = "fill", words = { FILL[1] + rng.int(FILL[2]) } } end
  end
  local at = 2 + rng.int(#phrases - 1)   -- the verb comes before phrase `at`
  table.insert(phrases, at, { kind = "verb", words = { VERB[1] + rng.int(VERB[2]) } })
  local words, tags, pred = {}, {}, nil
  for i, ph in ipairs(phrases) do
    local role
    if ph.kind == "verb" then role = B_V
    elseif ph.kind == "np" and i == at - 1 then role = B_A0
    elseif ph.kind == "np" and i == at + 1 then role = B_A1 end
    for k, w in ipairs(ph.words) do
      words[#words + 1] = w
      tags[#tags + 1] = role and (k == 1 and role or role + 1) or O
      if ph.kind == "verb" then pred = #words end
    end
  end
  return words, tags, pred
end

local function lod_tensor(rows, lod)
  local t = oar.Tensor{ shape = { #rows, 1 }, dtype = "int64" }
  local p = t:data()
  for i, v in ipairs(rows) do p[i - 1] = v end
  t:set_lod{ lod }
  return t
end

function M.batches(seed, n)
  local rng = book.rng(seed)
  return function()
    local cols = { word = {}, ctx_n2 = {}, ctx_n1 = {}, ctx_0 = {}, ctx_p1 = {}, ctx_p2 = {}, verb = {}, mark = {},
                   target = {} }
    local lod = { 0 }
    for _ = 1, n do
      local words, tags, pred = sentence(rng)
      local function at(i) return words[i] or EOS end
      for i, w in ipairs(words) do
        cols.word[#cols.word + 1] = w
        cols.ctx_n2[#cols.ctx_n2 + 1] = at(pred - 2)
        cols.ctx_n1[#cols.ctx_n1 + 1] = at(pred - 1)
        cols.ctx_0[#cols.ctx_0 + 1] = at(pred)
        cols.ctx_p1[#cols.ctx_p1 + 1] = at(pred + 1)
        cols.ctx_p2[#cols.ctx_p2 + 1] = at(pred + 2)
        cols.verb[#cols.verb + 1] = words[pred] - VERB[1]
        cols.mark[#cols.mark + 1] = math.abs(i - pred) <= 2 and 1 or 0
        cols.target[#cols.target + 1] = tags[i]
      end
      lod[#lod + 1] = lod[#lod] + #words
    end
    local feed = {}
    for k, v in pairs(cols) do feed[k] = lod_tensor(v, lod) end
    return feed
  end
end

return M
