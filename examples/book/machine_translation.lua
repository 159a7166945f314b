#!/usr/bin/env luajit
-- machine_translation.lua: Fluid 1.8's book chapter machine_translation
-- (an RNN encoder-decoder with attention) on the padded-batch RNN API: the
-- source through fluid.embedding (oar.embedding) and a forward and a
-- backward GRUCell (layers.rnn with the source lengths), the decoder an
-- RNNCell whose step attends over the encoder outputs and runs a GRUCell,
-- trained with teacher forcing (layers.rnn over the target), and decoded
-- with layers.BeamSearchDecoder and layers.dynamic_decode (beam_size,
-- max_length, until end_id). The cell's extra arguments (encoder output,
-- its projection, the padding mask) reach it as Python's **kwargs do, in
-- one `kwargs` table. One departure from the book: the attention score
-- applies tanh to the mixed state (Bahdanau's form), so it depends on the
-- decoder state.
--
-- WMT-14 is not on this machine: the data are synthetic, WMT-shaped
-- (padded [N, T] id batches with lengths, bos 0 and eos 1): the target is
-- the source reversed.
--
--   luajit examples/book/machine_translation.lua [--steps N] [--batch-size N] [--dict-size N]
--       [--src-len N] [--word-dim N] [--hidden-dim N] [--beam-size N] [--max-length N] [--lr X] [--seed N]
--
-- As a library: local m = dofile("examples/book/machine_translation.lua")
--   local losses, scope = m.train{steps = 60}
--   local ids, scores, speed = m.decode(o, scope, (m.batch(rng, 8, o)), 20)   -- 20 timed runs

-- common.lua also finds lua/ next to examples/ in a source checkout.
local book = dofile((debug.getinfo(1, "S").source:match("^@(.*/)[^/]*$") or "./") .. "common.lua")

local oar = require("oar")
local layers = oar.layers

local M = {}

M.DEFAULTS = { steps = 300, batch_size = 16, dict_size = 12, src_len = 5, word_dim = 16, hidden_dim = 32,
               beam_size = 4, max_length = 8, lr = 0.01, seed = 1 }
M.BOS, M.EOS = 0, 1

-- ---- data ----------------------------------------------------------------------------------------

--- A batch of n sentence pairs: sources of 2 .. src_len words (ids >= 2),
-- targets the sources reversed. Returns the feed (src, src_sequence_length,
-- trg = bos + target, trg_sequence_length, label = target + eos; padded
-- with eos) and the sources as Lua lists.
function M.batch(rng, n, o)
  local S, T = o.src_len, o.src_len + 1
  local src, slen, trg, tlen, label, words = {}, {}, {}, {}, {}, {}
  for i = 1, n do
    local len = 2 + rng.int(S - 1)
    local s = {}
    for t = 1, len do s[t] = 2 + rng.int(o.dict_size - 2) end
    words[i] = s
    src[i], trg[i], label[i] = {}, {}, {}
    for t = 1, S do src[i][t] = s[t] or M.EOS end
    trg[i][1] = M.BOS
    for t = 1, len do
      trg[i][t + 1] = s[len + 1 - t]
      label[i][t] = { s[len + 1 - t] }
    end
    label[i][len + 1] = { M.EOS }
    for t = len + 2, T do trg[i][t], label[i][t] = M.EOS, { M.EOS } end
    slen[i], tlen[i] = len, len + 1
  end
  return { src = oar.Tensor(src, "int64"), src_sequence_length = oar.Tensor(slen, "int64"),
           trg = oar.Tensor(trg, "int64"), trg_sequence_length = oar.Tensor(tlen, "int64"),
           label = oar.Tensor(label, "int64") }, words
end

-- ---- the model ------------------------------------------------------------------------------------

--- The book's encoder: a forward and a backward GRU over the source
-- embedding; the outputs concatenated per step, the final states too.
function M.encoder(src_embedding, src_sequence_length, hidden_dim)
  local fwd_cell = layers.GRUCell{ hidden_size = hidden_dim, name = "enc_fw" }
  local fwd_output, fwd_state = layers.rnn{ cell = fwd_cell, inputs = src_embedding,
                                            sequence_length = src_sequence_length }
  local bwd_cell = layers.GRUCell{ hidden_size = hidden_dim, name = "enc_bw" }
  local bwd_output, bwd_state = layers.rnn{ cell = bwd_cell, inputs = src_embedding,
                                            sequence_length = src_sequence_length, is_reverse = true }
  local encoder_output = layers.concat({ fwd_output, bwd_output }, 2)
  local encoder_state = layers.concat({ fwd_state, bwd_state }, 1)
  return encoder_output, encoder_state, { fwd = fwd_cell, bwd = bwd_cell }
end

--- The book's DecoderCell: attention over the encoder outputs, then a GRU
-- step on [word, context].
function M.DecoderCell(hidden_size, src_len)
  return layers.RNNCell{
    hidden_size = hidden_size,
    gru_cell = layers.GRUCell{ hidden_size = hidden_size, name = "dec_gru" },
    state_shape = { hidden_size },
    attention = function(self, hidden, encoder_output, encoder_output_proj, encoder_padding_mask)
      local state_proj = layers.unsqueeze(layers.fc{ input = hidden, size = self.hidden_size, bias_attr = false,
                                                     param_attr = "attn_state_w" }, { 1 })
      local mixed = layers.tanh(layers.elementwise_add{ x = encoder_output_proj,
                                                        y = layers.expand(state_proj, { 1, src_len, 1 }) })
      local scores = layers.squeeze(layers.fc{ input = mixed, size = 1, num_flatten_dims = 2, bias_attr = false,
                                               param_attr = "attn_score_w" }, { 2 })
      if encoder_padding_mask then scores = layers.elementwise_add{ x = scores, y = encoder_padding_mask } end
      scores = layers.softmax(scores)
      return layers.reduce_sum(layers.elementwise_mul{ x = encoder_output, y = scores, axis = 0 }, 1)
    end,
    call = function(self, step_input, hidden, kw)
      local context = self:attention(hidden, kw.encoder_output, kw.encoder_output_proj, kw.encoder_padding_mask)
      return self.gru_cell:call(layers.concat({ step_input, context }, 1), hidden)
    end,
  }
end

local function trg_embeder(o)
  return function(x)
    return oar.embedding{ input = x, size = { o.dict_size, o.word_dim }, param_attr = "trg_emb_table" }
  end
end
local function output_layer(o)
  return function(x)
    return layers.fc{ input = x, size = o.dict_size, num_flatten_dims = #x.shape - 1, param_attr = "output_w",
                      bias_attr = "output_b" }
  end
end

--- The book's model_func: training logits [N, T, V] (is_train) or the beam
-- search's ids [N, steps, beam] and final states. `inputs` holds the data
-- layers. Returns also the parts the plain-Lua check reads.
function M.model(inputs, is_train, o)
  local src_embedding = oar.embedding{ input = inputs.src, size = { o.dict_size, o.word_dim },
                                       param_attr = "src_emb_table" }
  local enc_out, enc_state, enc_cells = M.encoder(src_embedding, inputs.src_sequence_length, o.hidden_dim)
  local enc_proj = layers.fc{ input = enc_out, size = o.hidden_dim, num_flatten_dims = 2, bias_attr = false,
                              param_attr = "enc_proj_w" }
  local src_mask = layers.sequence_mask{ x = inputs.src_sequence_length, maxlen = o.src_len, dtype = "float32" }
  local padding_mask = layers.scale{ x = src_mask, scale = 1e9, bias = -1e9 }   -- (mask - 1) * 1e9
  local cell = M.DecoderCell(o.hidden_dim, o.src_len)
  local init = layers.fc{ input = enc_state, size = o.hidden_dim, act = "tanh", param_attr = "dec_init_w",
                          bias_attr = "dec_init_b" }
  local parts = { enc = enc_cells, dec = cell.gru_cell }
  if is_train then
    local out = layers.rnn{ cell = cell, inputs = trg_embeder(o)(inputs.trg), initial_states = init,
                            kwargs = { encoder_output = enc_out, encoder_output_proj = enc_proj,
                                       encoder_padding_mask = padding_mask } }
    return output_layer(o)(out), parts
  end
  local tile = layers.BeamSearchDecoder.tile_beam_merge_with_batch
  local kw = { encoder_output = tile(enc_out, o.beam_size), encoder_output_proj = tile(enc_proj, o.beam_size),
               encoder_padding_mask = tile(padding_mask, o.beam_size) }
  local dec = layers.BeamSearchDecoder{ cell = cell, start_token = M.BOS, end_token = M.EOS, beam_size = o.beam_size,
                                        embedding_fn = trg_embeder(o), output_fn = output_layer(o) }
  local ids, states = layers.dynamic_decode{ decoder = dec, inits = init, max_step_num = o.max_length,
                                             is_test = true, kwargs = kw }
  return ids, parts, states
end

--- The book's loss_func: cross entropy over the target steps, masked by
-- the target lengths.
function M.loss(logits, label, trg_sequence_length, o)
  local probs = layers.softmax(logits)
  local loss = layers.squeeze(layers.cross_entropy{ input = probs, label = label }, { 2 })
  local mask = layers.sequence_mask{ x = trg_sequence_length, maxlen = o.src_len + 1, dtype = "float32" }
  return layers.reduce_sum(layers.elementwise_mul{ x = loss, y = mask }) / layers.reduce_sum(mask)
end

local function data_layers(o, with_target)
  local d = { src = layers.data{ name = "src", shape = { o.src_len }, dtype = "int64" },
              src_sequence_length = layers.data{ name = "src_sequence_length", shape = { -1 }, dtype = "int64",
                                                 append_batch_size = false } }
  if with_target then
    d.trg = layers.data{ name = "trg", shape = { o.src_len + 1 }, dtype = "int64" }
    d.trg_sequence_length = layers.data{ name = "trg_sequence_length", shape = { -1 }, dtype = "int64",
                                         append_batch_size = false }
    d.label = layers.data{ name = "label", shape = { o.src_len + 1, 1 }, dtype = "int64" }
  end
  return d
end

--- The training program (Adam, gradients clipped by global norm 5 as the book's).
function M.build(o)
  return book.programs(o, function(r)
    oar.unique_name.guard(function()
      local d = data_layers(o, true)
      local logits = M.model(d, true, o)
      r.avg_cost = M.loss(logits, d.label, d.trg_sequence_length, o)
      oar.optimizer.Adam{ learning_rate = o.lr, grad_clip = oar.clip.GradientClipByGlobalNorm{ clip_norm = 5.0 } }
        :minimize(r.avg_cost)
    end)
  end)
end

--- The decoding program: the same parameter names as the training one.
function M.build_infer(o)
  local r = { main = oar.Program(), startup = oar.Program() }
  oar.program_guard(r.main, r.startup, function()
    oar.unique_name.guard(function()
      local d = data_layers(o, false)
      r.ids, r.parts, r.states = M.model(d, false, o)
    end)
  end)
  return r
end

local function options(opts)
  local o = {}
  for k, v in pairs(M.DEFAULTS) do o[k] = v end
  for k, v in pairs(opts or {}) do o[k] = v end
  return o
end

--- Trains; returns the loss of every step, the scope holding the
-- parameters, and the options used.
function M.train(opts)
  local o = options(opts)
  local r = M.build(o)
  local exe, scope = oar.Executor(oar.CPUPlace()), oar.Scope()
  exe:run(r.startup, { scope = scope })
  local rng = book.rng(o.seed)
  local losses, t0 = {}, os.clock()
  for step = 1, o.steps do
    local feed = M.batch(rng, o.batch_size, o)
    local l = exe:run(r.main, { feed = feed, fetch_list = { r.avg_cost }, scope = scope })[1]:data()[0]
    if l ~= l then error(string.format("the loss became NaN at step %d", step)) end
    losses[step] = l
    if o.verbose and (step % 20 == 0 or step == o.steps) then
      print(string.format("step %4d  loss %.4f  (%.1f s)", step, l, os.clock() - t0))
    end
  end
  return losses, scope, o
end

--- Beam-search decodes a feed with the trained parameters in `scope`.
-- Returns ids [N, steps, beam] (each beam's sequence, best beam first), the
-- final log-probabilities [N, beam], the speed (a first run prepares the
-- program; the next `reps` runs are timed on the wall clock): tokens of the
-- best hypotheses up to eos per second, and tokens of all beams (steps *
-- N * beam) per second; and the decoding program.
function M.decode(o, scope, feed, reps)
  local r = M.build_infer(o)
  local exe = oar.Executor(oar.CPUPlace())
  local run_feed = { src = feed.src, src_sequence_length = feed.src_sequence_length }
  local function run()
    return exe:run(r.main, { feed = run_feed, fetch_list = { r.ids, r.states.log_probs }, scope = scope })
  end
  local got = run()
  reps = reps or 0
  local t0 = oar.progress.clock()
  for _ = 1, reps do run() end
  local dt = oar.progress.clock() - t0
  local ids = got[1]:totable()
  local tokens = 0
  for _, seq in ipairs(ids) do
    for t = 1, #seq do
      tokens = tokens + 1
      if seq[t][1] == M.EOS then break end
    end
  end
  local speed = { best_tokens = tokens, beam_tokens = #ids * #ids[1] * o.beam_size, seconds = dt / math.max(reps, 1) }
  if reps > 0 then
    speed.tokens_per_s = tokens * reps / dt
    speed.beam_tokens_per_s = speed.beam_tokens * reps / dt
  end
  return ids, got[2]:totable(), speed, r
end

if arg and arg[0] and arg[0]:match("machine_translation%.lua$") then
  local o = book.parse_args("machine_translation", arg, M.DEFAULTS)
  local losses, scope = M.train(o)
  print(string.format("loss: first step %.4f, last step %.4f", losses[1], losses[#losses]))
  local feed, words = M.batch(book.rng(o.seed + 1000), 8, o)
  local ids, scores = M.decode(o, scope, feed)
  for i = 1, #words do
    local best = {}
    for t = 1, #ids[i] do
      if ids[i][t][1] == M.EOS then break end
      best[#best + 1] = ids[i][t][1]
    end
    print(string.format("%-20s -> %-20s  score %.3f", table.concat(words[i], " "), table.concat(best, " "),
      scores[i][1]))
  end
  for _, n in ipairs({ 8, 64 }) do
    local _, _, speed = M.decode(o, scope, (M.batch(book.rng(o.seed + 2000), n, o)), 20)
    print(string.format("beam search decoding, batch %d, beam %d: %.0f tokens/s of the best hypotheses, "
      .. "%.0f beam tokens/s (%.2f ms a batch)", n, o.beam_size, speed.tokens_per_s, speed.beam_tokens_per_s,
      speed.seconds * 1000))
  end
end

return M
