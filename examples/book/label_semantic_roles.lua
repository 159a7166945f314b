#!/usr/bin/env luajit
-- label_semantic_roles.lua: Fluid 1.8's book test label_semantic_roles in
-- Lua: db_lstm over eight features (the word, the five words around the
-- predicate, the predicate, the mark of the predicate's window), each
-- embedded and put through an fc, summed; stacked dynamic_lstm layers of
-- alternating direction, each fed the previous layer's input and output;
-- a linear_chain_crf cost (its transition parameter "crfw"); SGD;
-- crf_decoding with the same "crfw"; chunk_eval with the IOB scheme.
--
-- CoNLL-05 is not on this machine: the sentences are synthetic and shaped
-- like the conll05 reader's samples (examples/book/synthetic_srl.lua): one
-- predicate per sentence, the five context words and the mark repeated over
-- the sentence, IOB tags of A0 (the noun phrase before the predicate), A1
-- (the one after) and V (the predicate).
--
--   luajit examples/book/label_semantic_roles.lua [--steps N] [--batch-size N]
--       [--word-dim N] [--hidden-dim N] [--depth N] [--lr X] [--seed N]
--
-- As a library: dofile("examples/book/label_semantic_roles.lua").train{steps = 100}
-- returns the cost and the chunk F1 of every step.

local book = dofile((debug.getinfo(1, "S").source:match("^@(.*/)[^/]*$") or "./") .. "common.lua")
local srl = dofile((debug.getinfo(1, "S").source:match("^@(.*/)[^/]*$") or "./") .. "synthetic_srl.lua")

local oar = require("oar")
local layers = oar.layers

local M = {}

-- Fluid's book uses word_dim 32, mark_dim 5, hidden_dim 512, depth 8, SGD
-- at 0.01 and mix_hidden_lr 1e-3 (the CRF transition's learning-rate
-- scale) for CoNLL-05 with a pre-trained embedding; the synthetic task
-- trains smaller, faster and with the transition at the full rate (at 1e-3
-- its random start stays and the F1 stalls near 0.3)
M.DEFAULTS = { steps = 600, batch_size = 8, word_dim = 16, mark_dim = 5, hidden_dim = 64, depth = 4, lr = 0.1,
               mix_hidden_lr = 1.0,
               seed = 1 }

local FEATURES = { "word", "ctx_n2", "ctx_n1", "ctx_0", "ctx_p1", "ctx_p2", "verb", "mark" }

--- Fluid's db_lstm: the emission scores of each word, [N, label_dict_len].
-- The word embedding "emb" is shared by the six word features and, as in
-- Fluid (where it is pre-trained), not trained.
function M.db_lstm(f, o)
  local predicate_embedding = layers.embedding{ input = f.verb, size = { srl.pred_dict_len, o.word_dim },
                                                dtype = "float32", param_attr = "vemb" }
  local mark_embedding = layers.embedding{ input = f.mark, size = { srl.mark_dict_len, o.mark_dim },
                                           dtype = "float32" }
  local emb_layers = {}
  for _, name in ipairs({ "word", "ctx_n2", "ctx_n1", "ctx_0", "ctx_p1", "ctx_p2" }) do
    emb_layers[#emb_layers + 1] = layers.embedding{ input = f[name], size = { srl.word_dict_len, o.word_dim },
      param_attr = oar.ParamAttr{ name = "emb", trainable = false } }
  end
  emb_layers[#emb_layers + 1] = predicate_embedding
  emb_layers[#emb_layers + 1] = mark_embedding
  local hidden_0_layers = {}
  for i, emb in ipairs(emb_layers) do
    hidden_0_layers[i] = layers.fc{ input = emb, size = o.hidden_dim, act = "tanh" }
  end
  local hidden_0 = layers.sums(hidden_0_layers)
  local lstm_0 = layers.dynamic_lstm{ input = hidden_0, size = o.hidden_dim, candidate_activation = "relu",
                                      gate_activation = "sigmoid", cell_activation = "sigmoid" }
  -- stack L-LSTM and R-LSTM with direct edges
  local input_tmp = { hidden_0, lstm_0 }
  for i = 1, o.depth - 1 do
    local mix_hidden = layers.sums{
      layers.fc{ input = input_tmp[1], size = o.hidden_dim, act = "tanh" },
      layers.fc{ input = input_tmp[2], size = o.hidden_dim, act = "tanh" } }
    local lstm = layers.dynamic_lstm{ input = mix_hidden, size = o.hidden_dim, candidate_activation = "relu",
                                      gate_activation = "sigmoid", cell_activation = "sigmoid",
                                      is_reverse = i % 2 == 1 }
    input_tmp = { mix_hidden, lstm }
  end
  return layers.sums{
    layers.fc{ input = input_tmp[1], size = srl.label_dict_len, act = "tanh" },
    layers.fc{ input = input_tmp[2], size = srl.label_dict_len, act = "tanh" } }
end

function M.build(o)
  return book.programs(o, function(r)
    local f = {}
    for _, name in ipairs(FEATURES) do
      f[name] = layers.data{ name = name, shape = { 1 }, dtype = "int64", lod_level = 1 }
    end
    local feature_out = M.db_lstm(f, o)
    local target = layers.data{ name = "target", shape = { 1 }, dtype = "int64", lod_level = 1 }
    -- Fluid scales the transition's learning rate by mix_hidden_lr
    local crf_cost = layers.linear_chain_crf{ input = feature_out, label = target,
      param_attr = oar.ParamAttr{ name = "crfw", learning_rate = o.mix_hidden_lr } }
    r.avg_cost = layers.mean(crf_cost)
    oar.optimizer.SGD{ learning_rate = o.lr }:minimize(r.avg_cost)
    local crf_decode = layers.crf_decoding{ input = feature_out, param_attr = oar.ParamAttr{ name = "crfw" } }
    local _, _, f1 = layers.chunk_eval{ input = crf_decode, label = target, chunk_scheme = "IOB",
                                        num_chunk_types = math.ceil((srl.label_dict_len - 1) / 2) }
    r.acc = f1   -- train_loop reports it as the step's second figure
  end)
end

M.train = book.trainer(M, function(o) return srl.batches(o.seed, o.batch_size) end)

book.main(M, "label_semantic_roles")

return M
