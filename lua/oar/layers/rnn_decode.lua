--- oar.layers.rnn_decode: Fluid 1.8's decoders (layers/rnn.py): the
-- `Decoder` interface, `BeamSearchDecoder`, `BasicDecoder` with its
-- helpers (`DecodeHelper`, `TrainingHelper`, `GreedyEmbeddingHelper`,
-- `SampleEmbeddingHelper`), `dynamic_decode`, which runs a decoder in a
-- While loop, and `gather_tree`. Merged into `oar.layers` through
-- oar.layers.rnn_api.
--
-- A decoder is a table with `initialize(self, inits)` -> inputs, states,
-- finished; `step(self, time, inputs, states, kwargs)` -> outputs,
-- next_states, next_inputs, finished; optionally `finalize(self, outputs,
-- final_states, sequence_lengths)` and `tracks_own_finished`. Named
-- tuples of Fluid (StateWrapper, OutputWrapper) are Lua tables with those
-- field names.
--
--   local dec = layers.BeamSearchDecoder{cell = cell, start_token = 0, end_token = 1,
--     beam_size = 4, embedding_fn = embed, output_fn = project}
--   local ids, states = layers.dynamic_decode{decoder = dec, inits = h0, max_step_num = 20}
-- @module oar.layers.rnn_decode
local framework = require("oar.framework")
local LayerHelper = require("oar.layer_helper")
local unique_name = require("oar.unique_name")
local struct = require("oar.layers.rnn_struct")
local layers = require("oar.layers")

local check, args = LayerHelper.check, LayerHelper.args
local is_variable, raise = framework.is_variable, framework.raise

local M = {}

--- Backtracks a beam search (Fluid's layers.gather_tree, the gather_tree
-- op): the whole sequence ending in each final beam. Also positional:
-- `gather_tree(ids, parents)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.ids int32/int64 [max_time, batch, beam]: each step's selected ids
-- @tparam Variable a.parents ids' shape and dtype: the beam each id extends
-- @tparam[opt] string a.name
-- @param[opt] parents with a positional ids
-- @treturn Variable ids' shape and dtype
-- @raise when ids is not rank 3 int32/int64 or parents differs
-- @usage local seqs = layers.gather_tree(predicted_ids, parent_ids)
function M.gather_tree(a, parents)
  a = args("gather_tree", a, "ids", { parents = parents }, "ids name parents")
  local ids = check.variable("gather_tree", "ids", a.ids)
  local par = check.variable("gather_tree", "parents", a.parents)
  for _, p in ipairs({ { "ids", ids }, { "parents", par } }) do
    if p[2].dtype ~= "int64" and p[2].dtype ~= "int32" then check.fail("gather_tree", p[1], "int32 or int64", p[2].dtype) end
  end
  local helper = LayerHelper("gather_tree", a)
  local out = helper:create_variable_for_type_inference(ids.dtype, true)
  helper:append_op{ type = "gather_tree", inputs = { Ids = { ids }, Parents = { par } }, outputs = { Out = { out } } }
  return out
end

-- ---- Decoder ---------------------------------------------------------------------------------

local Decoder = {}
Decoder.__index = Decoder

--- The base of decoders (Fluid's Decoder): `layers.Decoder{initialize =
-- fn, step = fn, finalize = fn, tracks_own_finished = bool}` makes one
-- from its functions (each called with the decoder as `self`).
-- @tparam table t the decoder's fields: `initialize` and `step` (required), `finalize`,
-- `tracks_own_finished`
-- @treturn Decoder
-- @raise when initialize or step is missing
-- @usage local dec = layers.Decoder{initialize = function(self, inits) ... end,
--   step = function(self, time, inputs, states) ... end}
function M.Decoder(t)
  if type(t) ~= "table" then check.fail("Decoder", "argument", "a table with initialize= and step=", t) end
  for _, k in ipairs({ "initialize", "step" }) do
    if type(t[k]) ~= "function" then check.fail("Decoder", k, "a function", t[k]) end
  end
  return setmetatable(t, Decoder)
end

-- ---- BeamSearchDecoder -----------------------------------------------------------------------

local BSD = {}
BSD.__index = BSD
BSD.tracks_own_finished = true

local KINF = 1e9

local function rest_dims(who, x, from)
  local s = {}
  for i = from, #x.shape do
    if x.shape[i] < 0 then
      raise(string.format("%s: '%s' has shape %s; its dims after the batch dim must be known", who, x.name,
        framework.shape_text(x.shape)))
    end
    s[#s + 1] = x.shape[i]
  end
  return s
end

--- A beam-search decoder (Fluid's BeamSearchDecoder): at each step the
-- cell's output (through `output_fn`) gives log-probabilities of the next
-- token for each of the beam_size beams of each batch entry; the
-- beam_size best (beam, token) pairs by accumulated log-probability go
-- on. A finished beam can only add end_token, at no cost. Cell inputs and
-- states are [batch * beam, ...]; tensors of [batch, ...] a cell uses must
-- be tiled with `BeamSearchDecoder.tile_beam_merge_with_batch`.
-- @tparam table a keyword arguments:
-- @param a.cell the cell (an RNNCell or a table with call)
-- @tparam int a.start_token the first input id
-- @tparam int a.end_token the id that ends a sequence
-- @tparam int a.beam_size
-- @tparam[opt] function a.embedding_fn ids [batch, beam] -> the cell's inputs
-- @tparam[opt] function a.output_fn the cell's outputs -> logits [batch, beam, vocab]
-- @treturn BeamSearchDecoder for dynamic_decode (its outputs: the ids
-- [batch, time, beam] after gather_tree)
-- @usage local dec = layers.BeamSearchDecoder{cell = cell, start_token = 0, end_token = 1,
--   beam_size = 4, embedding_fn = function(ids) return oar.embedding{input = ids, size = {V, E}} end,
--   output_fn = function(h) return layers.fc{input = h, size = V, num_flatten_dims = 2} end}
-- @function BeamSearchDecoder
local function new_beam_search_decoder(a)
  a = args("BeamSearchDecoder", a, nil, nil, "beam_size cell embedding_fn end_token output_fn start_token")
  if type(a.cell) ~= "table" or type(a.cell.call) ~= "function" then
    check.fail("BeamSearchDecoder", "cell", "an RNNCell (a table with call)", a.cell)
  end
  for _, k in ipairs({ "embedding_fn", "output_fn" }) do
    if a[k] ~= nil and type(a[k]) ~= "function" then check.fail("BeamSearchDecoder", k, "a function", a[k]) end
  end
  return setmetatable({
    cell = a.cell, embedding_fn = a.embedding_fn, output_fn = a.output_fn,
    start_token = check.int("BeamSearchDecoder", "start_token", a.start_token),
    end_token = check.int("BeamSearchDecoder", "end_token", a.end_token),
    beam_size = check.positive_int("BeamSearchDecoder", "beam_size", a.beam_size),
  }, BSD)
end

--- [batch, ...] -> [batch * beam_size, ...], each entry repeated beam_size
-- times in a row (a static function: `BeamSearchDecoder.tile_beam_merge_with_batch(x, k)`).
-- @tparam Variable x [batch, ...] (the other dims known)
-- @tparam int beam_size
-- @treturn Variable [batch * beam_size, ...]
-- @usage local enc = layers.BeamSearchDecoder.tile_beam_merge_with_batch(enc_out, 4)
function BSD.tile_beam_merge_with_batch(x, beam_size)
  check.variable("BeamSearchDecoder.tile_beam_merge_with_batch", "x", x)
  beam_size = check.positive_int("BeamSearchDecoder.tile_beam_merge_with_batch", "beam_size", beam_size)
  local rest = rest_dims("BeamSearchDecoder.tile_beam_merge_with_batch", x, 2)
  local times = { 1, beam_size }
  for i = 1, #rest do times[i + 2] = 1 end
  local t = layers.expand(layers.unsqueeze(x, { 1 }), times)
  local shape = { -1 }
  for _, d in ipairs(rest) do shape[#shape + 1] = d end
  return layers.reshape(t, shape)
end

--- [batch * beam, ...] -> [batch, beam, ...].
-- @tparam Variable x
-- @treturn Variable
-- @usage local y = dec:_split_batch_beams(x)
function BSD:_split_batch_beams(x)
  local shape = { -1, self.beam_size }
  for _, d in ipairs(rest_dims("BeamSearchDecoder", x, 2)) do shape[#shape + 1] = d end
  return layers.reshape(x, shape)
end

--- [batch, beam, ...] -> [batch * beam, ...].
-- @tparam Variable x
-- @treturn Variable
-- @usage local y = dec:_merge_batch_beams(x)
function BSD:_merge_batch_beams(x)
  local shape = { -1 }
  for _, d in ipairs(rest_dims("BeamSearchDecoder", x, 3)) do shape[#shape + 1] = d end
  return layers.reshape(x, shape)
end

--- [batch, ...] -> [batch, beam, ...], each entry repeated.
-- @tparam Variable x
-- @treturn Variable
-- @usage local y = dec:_expand_to_beam_size(x)
function BSD:_expand_to_beam_size(x)
  local times = { 1, self.beam_size }
  for i = 2, #x.shape do times[i + 1] = 1 end
  return layers.expand(layers.unsqueeze(x, { 1 }), times)
end

--- Finished beams put all their probability on end_token (log 0 there,
-- -1e9 elsewhere); the others keep theirs.
-- @tparam Variable probs [batch, beam, vocab] log-probabilities
-- @tparam Variable finished bool [batch, beam]
-- @treturn Variable probs' shape
-- @usage local masked = dec:_mask_probs(logp, finished)
function BSD:_mask_probs(probs, finished)
  local f = layers.cast(finished, probs.dtype)
  local tiled = layers.expand(layers.unsqueeze(f, { 2 }), { 1, 1, self.vocab_size })
  local kept = layers.elementwise_mul{ x = probs, y = layers.scale{ x = f, scale = 1.0, bias = -1.0 }, axis = 0 }
  return layers.elementwise_sub{ x = layers.elementwise_mul{ x = tiled, y = self.noend_mask }, y = kept }
end

--- x[b, indices[b, k], ...] for every b, k (Fluid's _gather, through gather_nd).
-- @tparam Variable x [batch, beam', ...]
-- @tparam Variable indices int64 [batch, beam]
-- @treturn Variable [batch, beam, ...]
-- @usage local s = dec:_gather(states, beam_indices)
function BSD:_gather(x, indices)
  local coords = layers.stack({ self.batch_pos, indices }, 2)
  coords.stop_gradient = true
  if x.dtype == "bool" then   -- gather_nd has no bool kernel: through int32
    return layers.cast(layers.gather_nd(layers.cast(x, "int32"), coords), "bool")
  end
  return layers.gather_nd(x, coords)
end

--- Called once by dynamic_decode: tiles the cell states to the beams and
-- starts every beam at start_token, only beam 0 alive (log-probabilities 0,
-- -1e9, ...).
-- @param initial_cell_states the cell's states, [batch, ...] each
-- @return initial inputs (start tokens, through embedding_fn)
-- @treturn table the state {cell_states=, log_probs=, finished=, lengths=}
-- @treturn Variable finished, bool [batch, beam]
-- @usage local inputs, states, finished = dec:initialize(h0)
function BSD:initialize(initial_cell_states)
  if initial_cell_states == nil then
    raise("BeamSearchDecoder:initialize: give the cell's initial states (dynamic_decode's 'inits')")
  end
  local state = struct.flatten(initial_cell_states)[1]
  if state == nil then raise("BeamSearchDecoder:initialize: no initial cell states") end
  local dtype = (state.dtype == "float64") and "float64" or "float32"
  self.dtype = dtype
  local cell_states = struct.map(function(x) return self:_expand_to_beam_size(x) end, initial_cell_states)
  local K = self.beam_size
  local init_ids = layers.fill_constant_batch_size_like{ input = state, shape = { -1, K }, dtype = "int64",
                                                         value = self.start_token }
  local row = { 0 }
  for i = 2, K do row[i] = -KINF end
  local zeros = layers.fill_constant_batch_size_like{ input = state, shape = { -1, K }, dtype = dtype, value = 0 }
  local first = layers.assign(row)
  if dtype == "float64" then first = layers.cast(first, "float64") end
  local log_probs = layers.elementwise_add{ x = zeros, y = first }
  local finished = layers.fill_constant_batch_size_like{ input = state, shape = { -1, K }, dtype = "bool", value = 0 }
  local lengths = layers.fill_constant_batch_size_like{ input = state, shape = { -1, K }, dtype = "int64", value = 0 }
  local inputs = self.embedding_fn and self.embedding_fn(init_ids) or init_ids
  return inputs, { cell_states = cell_states, log_probs = log_probs, finished = finished, lengths = lengths }, finished
end

--- One beam-search step over the logits: scores, selected tokens and
-- beams, and the next state.
-- @tparam Variable time int64 [1]
-- @tparam Variable logits [batch, beam, vocab]
-- @param next_cell_states the cell's new states, [batch, beam, ...] each
-- @tparam table beam_state the state before the step
-- @treturn table {scores=, predicted_ids=, parent_ids=}, each [batch, beam]
-- @treturn table the next state
-- @usage local out, st = dec:_beam_search_step(t, logits, cell_states, state)
function BSD:_beam_search_step(time, logits, next_cell_states, beam_state)
  if #logits.shape ~= 3 or logits.shape[3] <= 0 then
    raise(string.format("BeamSearchDecoder: the logits '%s' must be [batch, beam, vocab] with vocab known, got %s",
      logits.name, framework.shape_text(logits.shape)))
  end
  local V, K = logits.shape[3], self.beam_size
  if self.end_token < 0 or self.end_token >= V then
    raise(string.format("BeamSearchDecoder: end_token %d is outside the vocabulary [0, %d)", self.end_token, V))
  end
  self.vocab_size = V
  local noend = {}
  for i = 1, V do noend[i] = -KINF end
  noend[self.end_token + 1] = 0
  self.noend_mask = layers.assign(noend)
  if logits.dtype == "float64" then self.noend_mask = layers.cast(self.noend_mask, "float64") end
  local step_lp = layers.log(layers.softmax(logits))
  step_lp = self:_mask_probs(step_lp, beam_state.finished)
  local log_probs = layers.elementwise_add{ x = step_lp, y = beam_state.log_probs, axis = 0 }
  local flat = layers.reshape(log_probs, { -1, K * V })
  local topk_scores, topk_indices = layers.topk(flat, K)
  local vt = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = V }
  local beam_indices = layers.elementwise_floordiv(topk_indices, vt)
  local token_indices = layers.elementwise_mod(topk_indices, vt)
  -- the batch position of every (b, k): b
  local batch_size = layers.slice{ input = layers.shape(topk_indices), axes = { 0 }, starts = { 0 }, ends = { 1 } }
  local pos = layers.range(0, layers.cast(batch_size, "int64"), 1, "int64")
  self.batch_pos = layers.expand(layers.unsqueeze(pos, { 1 }), { 1, K })
  local next_log_probs = self:_gather(flat, topk_indices)
  local cell_states = struct.map(function(x) return self:_gather(x, beam_indices) end, next_cell_states)
  local finished = self:_gather(beam_state.finished, beam_indices)
  local lengths = self:_gather(beam_state.lengths, beam_indices)
  lengths = layers.elementwise_add{ x = lengths, y = layers.cast(layers.logical_not(finished), "int64") }
  local et = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = self.end_token }
  finished = layers.logical_or(finished, layers.equal(token_indices, et))
  return { scores = topk_scores, predicted_ids = token_indices, parent_ids = beam_indices },
         { cell_states = cell_states, log_probs = next_log_probs, finished = finished, lengths = lengths }
end

--- One decoding step: the cell over the beams' inputs, then the beam
-- search step.
-- @tparam Variable time int64 [1]
-- @param inputs [batch, beam, ...] (embedding_fn's result, or the ids)
-- @tparam table states the state of initialize or the previous step
-- @tparam[opt] table kwargs passed to the cell's call
-- @treturn table outputs {scores=, predicted_ids=, parent_ids=}
-- @treturn table the next state
-- @return the next inputs
-- @treturn Variable finished, bool [batch, beam]
-- @usage local out, st, nxt, fin = dec:step(t, inputs, states)
function BSD:step(time, inputs, states, kwargs)
  local merged_in = struct.map(function(x) return self:_merge_batch_beams(x) end, inputs)
  local merged_states = struct.map(function(x) return self:_merge_batch_beams(x) end, states.cell_states)
  local cell_out, next_cell = self.cell:call(merged_in, merged_states, kwargs)
  cell_out = struct.map(function(x) return self:_split_batch_beams(x) end, cell_out)
  next_cell = struct.map(function(x) return self:_split_batch_beams(x) end, next_cell)
  if self.output_fn then cell_out = self.output_fn(cell_out) end
  if not is_variable(cell_out) then raise("BeamSearchDecoder: the cell (and output_fn) must give one logits Variable") end
  local out, st = self:_beam_search_step(time, cell_out, next_cell, states)
  local ids = out.predicted_ids
  ids.stop_gradient = true
  local next_inputs = self.embedding_fn and self.embedding_fn(ids) or ids
  return out, st, next_inputs, st.finished
end

--- After the loop: the whole sequences, backtracked with gather_tree.
-- @tparam table outputs the stacked step outputs, each [time, batch, beam]
-- @tparam table final_states
-- @tparam Variable sequence_lengths
-- @treturn Variable predicted ids [time, batch, beam]
-- @treturn table final_states
-- @usage local ids, st = dec:finalize(outs, st, lens)
function BSD:finalize(outputs, final_states, sequence_lengths)
  return M.gather_tree(outputs.predicted_ids, outputs.parent_ids), final_states
end

setmetatable(BSD, { __index = Decoder, __call = function(_, a) return new_beam_search_decoder(a) end })
M.BeamSearchDecoder = BSD

-- ---- dynamic_decode --------------------------------------------------------------------------

-- the loop's accumulator for one output: [0, batch, ...] made before the
-- loop (in `parent`), grown by one step per iteration
local function accumulator(parent, x, batch_ref)
  local shape = { 0, -1 }
  for _, d in ipairs(rest_dims("dynamic_decode: the step output", x, 2)) do shape[#shape + 1] = d end
  local acc = parent:create_var{ name = unique_name.generate("dynamic_decode.outputs"), dtype = x.dtype }
  parent:append_op{ type = "fill_constant_batch_size_like", inputs = { Input = { batch_ref } },
                    outputs = { Out = { acc } },
                    attrs = { shape = shape, dtype = x.dtype, value = 0, input_dim_idx = 0, output_dim_idx = 1 } }
  acc.stop_gradient = x.stop_gradient
  return acc
end

-- state where step_mask (bool) holds, new_state elsewhere (impute_finished)
local function keep_finished(state, new_state, step_mask)
  local dt = state.dtype
  local s, n = state, new_state
  if dt == "bool" then s, n = layers.cast(state, "float32"), layers.cast(new_state, "float32") end
  local m = layers.cast(step_mask, s.dtype)
  m.stop_gradient = true
  local out = layers.elementwise_sub{ x = layers.elementwise_mul{ x = s, y = m, axis = 0 },
                                      y = layers.elementwise_mul{ x = n, y = layers.scale{ x = m, bias = -1.0 }, axis = 0 } }
  if dt == "bool" then out = layers.cast(out, "bool") end
  return out
end

local function swap_batch_time(x)
  local perm = { 1, 0 }
  for i = 3, #x.shape do perm[i] = i - 1 end
  return layers.transpose(x, perm)
end

--- Runs a decoder step by step in a While loop until every entry is
-- finished or max_step_num is passed (Fluid's dynamic_decode): the loop
-- runs while some entry is unfinished and, with max_step_num, at most
-- max_step_num + 1 steps, as Fluid's. Also positional:
-- `dynamic_decode(decoder, inits, max_step_num, output_time_major, impute_finished, is_test, return_length)`.
-- @tparam table a keyword arguments:
-- @param a.decoder a Decoder (BeamSearchDecoder, BasicDecoder, or a table with initialize and step)
-- @param[opt] a.inits passed to decoder:initialize
-- @tparam[opt] int a.max_step_num
-- @tparam[opt=false] bool a.output_time_major outputs [time, batch, ...] (else [batch, time, ...])
-- @tparam[opt=false] bool a.impute_finished finished entries keep their states (decoders that do
-- not track their own finished state)
-- @tparam[opt=false] bool a.is_test no arrays of every step's inputs and states (no backward)
-- @tparam[opt=false] bool a.return_length also return the decoded lengths
-- @tparam[opt] table a.kwargs passed to every decoder:step
-- @return final_outputs: every step's outputs stacked (through the decoder's finalize)
-- @return final_states: the states after the last step
-- @treturn[opt] Variable sequence_lengths, int64 of finished's shape (with return_length)
-- @raise on a bad decoder or argument
-- @usage local ids, states = layers.dynamic_decode{decoder = dec, inits = enc_state, max_step_num = 20}
function M.dynamic_decode(a, ...)
  if type(a) ~= "table" or a.decoder == nil then
    local inits, max_step_num, otm, impute, is_test, return_length = ...
    a = { decoder = a, inits = inits, max_step_num = max_step_num, output_time_major = otm,
          impute_finished = impute, is_test = is_test, return_length = return_length }
  end
  a = args("dynamic_decode", a, nil, nil,
           "decoder impute_finished inits is_test kwargs max_step_num output_time_major return_length")
  local dec = a.decoder
  if type(dec) ~= "table" or type(dec.initialize) ~= "function" or type(dec.step) ~= "function" then
    check.fail("dynamic_decode", "decoder", "a Decoder (a table with initialize and step)", dec)
  end
  local max_steps = a.max_step_num ~= nil and check.int("dynamic_decode", "max_step_num", a.max_step_num) or nil
  local otm = check.boolean("dynamic_decode", "output_time_major", a.output_time_major, false)
  local impute = check.boolean("dynamic_decode", "impute_finished", a.impute_finished, false)
  local is_test = check.boolean("dynamic_decode", "is_test", a.is_test, false)
  local return_length = check.boolean("dynamic_decode", "return_length", a.return_length, false)

  local init_inputs, init_states, init_finished = dec:initialize(a.inits)
  if not is_variable(init_finished) or init_finished.dtype ~= "bool" then
    raise("dynamic_decode: decoder:initialize must return inputs, states and a bool finished Variable")
  end
  local global_finished = layers.assign(init_finished)
  global_finished.stop_gradient = true
  local step_idx = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 0 }
  local cond = layers.logical_not(layers.reduce_all(global_finished))
  local max_t = max_steps and layers.fill_constant{ shape = { 1 }, dtype = "int64", value = max_steps }
  local seq_lens = layers.cast(layers.zeros_like(init_finished), "int64")
  seq_lens.stop_gradient = true
  local parent = framework.default_main_program():current_block()

  local g_inputs, g_states, in_arrays, st_arrays
  if is_test then
    g_inputs = struct.map(layers.assign, init_inputs)
    g_states = struct.map(layers.assign, init_states)
  else
    in_arrays = struct.map(function(x) return layers.array_write{ x = x, i = step_idx } end, init_inputs)
    st_arrays = struct.map(function(x) return layers.array_write{ x = x, i = step_idx } end, init_states)
  end
  local tracks = dec.tracks_own_finished == true
  local accs, out_struct
  local loop = layers.While{ cond = cond, is_test = is_test }
  loop:block(function()
    local inputs, states = g_inputs, g_states
    if not is_test then
      inputs = struct.map(function(arr) return layers.array_read{ array = arr, i = step_idx } end, in_arrays)
      states = struct.map(function(arr) return layers.array_read{ array = arr, i = step_idx } end, st_arrays)
    end
    local outputs, next_states, next_inputs, next_finished = dec:step(step_idx, inputs, states, a.kwargs)
    if not is_variable(next_finished) then raise("dynamic_decode: decoder:step must return outputs, states, inputs, finished") end
    local next_lens
    if not tracks then
      next_finished = layers.logical_or(next_finished, global_finished)
      next_lens = layers.elementwise_add{ x = seq_lens, y = layers.cast(layers.logical_not(global_finished), "int64") }
      if impute then
        next_states = struct.map(function(s, n) return keep_finished(s, n, global_finished) end, states, next_states)
      end
    else
      next_lens = (type(next_states) == "table" and is_variable(next_states.lengths)) and next_states.lengths or seq_lens
    end
    out_struct = outputs
    accs = struct.map(function(x)
      local acc = accumulator(parent, x, init_finished)
      layers.assign(layers.concat({ acc, layers.unsqueeze(x, { 0 }) }, 0), acc)
      return acc
    end, outputs)
    layers.increment{ x = step_idx, value = 1, in_place = true }
    layers.assign(next_finished, global_finished)
    layers.assign(next_lens, seq_lens)
    if is_test then
      struct.map(function(n, g) return layers.assign(n, g) end, next_inputs, g_inputs)
      struct.map(function(n, g) return layers.assign(n, g) end, next_states, g_states)
    else
      struct.map(function(n, arr) return layers.array_write{ x = n, i = step_idx, array = arr } end, next_inputs, in_arrays)
      struct.map(function(n, arr) return layers.array_write{ x = n, i = step_idx, array = arr } end, next_states, st_arrays)
    end
    local going = layers.logical_not(layers.reduce_all(global_finished))
    if max_t then
      layers.logical_and{ x = going, y = layers.less_equal{ x = step_idx, y = max_t }, out = cond }
    else
      layers.assign(going, cond)
    end
  end)
  -- the step count is known at run time only
  for _, acc in ipairs(struct.flatten(accs)) do
    local shape = acc.shape
    shape[1], shape[2] = -1, -1
    acc.shape = shape
  end
  local final_outputs = struct.pack_as(out_struct, struct.flatten(accs))
  local final_states = g_states
  if not is_test then
    final_states = struct.map(function(arr) return layers.array_read{ array = arr, i = step_idx } end, st_arrays)
  end
  if type(dec.finalize) == "function" then
    final_outputs, final_states = dec:finalize(final_outputs, final_states, seq_lens)
  end
  if not otm then final_outputs = struct.map(swap_batch_time, final_outputs) end
  if return_length then return final_outputs, final_states, seq_lens end
  return final_outputs, final_states
end

-- ---- BasicDecoder and its helpers -------------------------------------------------------------

local DecodeHelper = {}
DecodeHelper.__index = DecodeHelper

--- The base of BasicDecoder's helpers (Fluid's DecodeHelper):
-- `layers.DecodeHelper{initialize = fn, sample = fn, next_inputs = fn}`,
-- each called with the helper as `self`: `initialize()` -> inputs,
-- finished; `sample(time, outputs, states)` -> ids; `next_inputs(time,
-- outputs, states, sample_ids)` -> finished, next_inputs, next_states.
-- @tparam table t the three functions
-- @treturn DecodeHelper
-- @raise when one is missing
-- @usage local h = layers.DecodeHelper{initialize = ..., sample = ..., next_inputs = ...}
function M.DecodeHelper(t)
  if type(t) ~= "table" then check.fail("DecodeHelper", "argument", "a table of functions", t) end
  for _, k in ipairs({ "initialize", "sample", "next_inputs" }) do
    if type(t[k]) ~= "function" then check.fail("DecodeHelper", k, "a function", t[k]) end
  end
  return setmetatable(t, DecodeHelper)
end

local function argmax_ids(outputs)
  return layers.argmax{ x = outputs, axis = -1 }
end

local TrainingHelper = setmetatable({}, { __index = DecodeHelper })
TrainingHelper.__index = TrainingHelper

--- Teacher forcing (Fluid's TrainingHelper): step t's input is step t of
-- `inputs`; an entry is finished once t reaches its length; samples are the
-- argmax of the outputs.
-- @tparam table a keyword arguments:
-- @tparam Variable a.inputs [batch, time, ...] ([time, batch, ...] when time_major)
-- @tparam Variable a.sequence_length int32/int64 [batch]
-- @tparam[opt=false] bool a.time_major
-- @param[opt] sequence_length with a positional inputs
-- @param[opt] time_major with a positional inputs
-- @treturn TrainingHelper
-- @usage local helper = layers.TrainingHelper{inputs = trg_emb, sequence_length = trg_len}
function M.TrainingHelper(a, sequence_length, time_major)
  if is_variable(a) then a = { inputs = a, sequence_length = sequence_length, time_major = time_major } end
  a = args("TrainingHelper", a, nil, nil, "inputs sequence_length time_major")
  local inputs = check.variable("TrainingHelper", "inputs", a.inputs)
  local len = check.variable("TrainingHelper", "sequence_length", a.sequence_length)
  local tm = check.boolean("TrainingHelper", "time_major", a.time_major, false)
  -- one more step of zeros at the end, so the last next_inputs has something to read
  local pads = {}
  for i = 1, #inputs.shape do pads[2 * i - 1], pads[2 * i] = 0, 0 end
  pads[tm and 2 or 4] = 1
  return setmetatable({ inputs = inputs, sequence_length = len, time_major = tm,
                        padded = layers.pad{ x = inputs, paddings = pads } }, TrainingHelper)
end

local function time_slice(x, axis, at)
  local s = layers.slice{ input = x, axes = { axis }, starts = { at }, ends = { at + 1 } }
  return layers.squeeze{ input = s, axes = { axis } }
end

--- The first step's inputs; entries of length 0 start finished.
-- @return inputs [batch, ...]
-- @treturn Variable finished, bool [batch]
-- @usage local x0, fin = helper:initialize()
function TrainingHelper:initialize()
  local zero = layers.fill_constant{ shape = { 1 }, dtype = self.sequence_length.dtype, value = 0 }
  local finished = layers.equal(self.sequence_length, zero)
  return time_slice(self.inputs, self.time_major and 0 or 1, 0), finished
end

--- The argmax of the outputs.
-- @tparam Variable time
-- @tparam Variable outputs [batch, vocab]
-- @param states
-- @treturn Variable int64 [batch]
-- @usage local ids = helper:sample(t, logits, states)
function TrainingHelper:sample(time, outputs, states)
  return argmax_ids(outputs)
end

--- Step t + 1 of the inputs; finished where the length is <= t + 1.
-- @tparam Variable time int64 [1]
-- @tparam Variable outputs
-- @param states
-- @tparam Variable sample_ids
-- @treturn Variable finished, bool [batch]
-- @return next inputs
-- @return states
-- @usage local fin, x, st = helper:next_inputs(t, logits, states, ids)
function TrainingHelper:next_inputs(time, outputs, states, sample_ids)
  local next_time = layers.increment{ x = time, value = 1, in_place = false }
  local nt = next_time.dtype == self.sequence_length.dtype and next_time or layers.cast(next_time, self.sequence_length.dtype)
  local finished = layers.less_equal(self.sequence_length, nt)
  local axis = self.time_major and 0 or 1
  local at = layers.cast(next_time, "int32")
  local s = layers.slice{ input = self.padded, axes = { axis }, starts = { at },
                          ends = { layers.increment{ x = at, value = 1, in_place = false } } }
  local x = layers.squeeze{ input = s, axes = { axis } }
  return finished, x, states
end

local GreedyEmbeddingHelper = setmetatable({}, { __index = DecodeHelper })
GreedyEmbeddingHelper.__index = GreedyEmbeddingHelper

local function embedding_helper(who, a, extra)
  a = args(who, a, nil, nil, "embedding_fn end_token start_tokens" .. (extra or ""))
  if type(a.embedding_fn) ~= "function" then check.fail(who, "embedding_fn", "a function", a.embedding_fn) end
  local st = check.variable(who, "start_tokens", a.start_tokens)
  if st.dtype ~= "int64" and st.dtype ~= "int32" then check.fail(who, "start_tokens", "int32 or int64", st.dtype) end
  return a, { embedding_fn = a.embedding_fn, start_tokens = st, end_token = check.int(who, "end_token", a.end_token) }
end

--- Greedy decoding (Fluid's GreedyEmbeddingHelper): the argmax token is the
-- next input, through embedding_fn; an entry finishes when it emits end_token.
-- @tparam table a keyword arguments:
-- @tparam function a.embedding_fn ids [batch] -> the cell's inputs
-- @tparam Variable a.start_tokens int64 [batch]: the first ids
-- @tparam int a.end_token
-- @param[opt] start_tokens with a positional embedding_fn
-- @param[opt] end_token with a positional embedding_fn
-- @treturn GreedyEmbeddingHelper
-- @usage local helper = layers.GreedyEmbeddingHelper{embedding_fn = emb, start_tokens = starts, end_token = 1}
function M.GreedyEmbeddingHelper(a, start_tokens, end_token)
  if type(a) == "function" then a = { embedding_fn = a, start_tokens = start_tokens, end_token = end_token } end
  local _, self = embedding_helper("GreedyEmbeddingHelper", a)
  return setmetatable(self, GreedyEmbeddingHelper)
end

--- The start tokens' embeddings, nothing finished.
-- @return inputs
-- @treturn Variable finished, bool [batch]
-- @usage local x0, fin = helper:initialize()
function GreedyEmbeddingHelper:initialize()
  local finished = layers.fill_constant_batch_size_like{ input = self.start_tokens, shape = { -1 }, dtype = "bool",
                                                         value = 0 }
  return self.embedding_fn(self.start_tokens), finished
end

--- The argmax of the outputs.
-- @tparam Variable time
-- @tparam Variable outputs [batch, vocab]
-- @param states
-- @treturn Variable int64 [batch]
-- @usage local ids = helper:sample(t, logits, states)
function GreedyEmbeddingHelper:sample(time, outputs, states)
  return argmax_ids(outputs)
end

--- The samples' embeddings; finished where a sample is end_token.
-- @tparam Variable time
-- @tparam Variable outputs
-- @param states
-- @tparam Variable sample_ids int64 [batch]
-- @treturn Variable finished, bool [batch]
-- @return next inputs
-- @return states
-- @usage local fin, x, st = helper:next_inputs(t, logits, states, ids)
function GreedyEmbeddingHelper:next_inputs(time, outputs, states, sample_ids)
  local et = layers.fill_constant{ shape = { 1 }, dtype = sample_ids.dtype, value = self.end_token }
  return layers.equal(sample_ids, et), self.embedding_fn(sample_ids), states
end

local SampleEmbeddingHelper = setmetatable({}, { __index = GreedyEmbeddingHelper })
SampleEmbeddingHelper.__index = SampleEmbeddingHelper

--- Sampling decoding (Fluid's SampleEmbeddingHelper): the next token is
-- drawn from softmax(outputs / softmax_temperature).
-- @tparam table a keyword arguments:
-- @tparam function a.embedding_fn
-- @tparam Variable a.start_tokens int64 [batch]
-- @tparam int a.end_token
-- @tparam[opt] number a.softmax_temperature
-- @tparam[opt] int a.seed 0 or nil: a different draw every run
-- @param[opt] start_tokens with a positional embedding_fn
-- @param[opt] end_token with a positional embedding_fn
-- @param[opt] softmax_temperature with a positional embedding_fn
-- @param[opt] seed with a positional embedding_fn
-- @treturn SampleEmbeddingHelper
-- @usage local helper = layers.SampleEmbeddingHelper{embedding_fn = emb, start_tokens = starts, end_token = 1, seed = 7}
function M.SampleEmbeddingHelper(a, start_tokens, end_token, softmax_temperature, seed)
  if type(a) == "function" then
    a = { embedding_fn = a, start_tokens = start_tokens, end_token = end_token,
          softmax_temperature = softmax_temperature, seed = seed }
  end
  local a2, self = embedding_helper("SampleEmbeddingHelper", a, " seed softmax_temperature")
  if a2.softmax_temperature ~= nil then
    self.softmax_temperature = check.number("SampleEmbeddingHelper", "softmax_temperature", a2.softmax_temperature)
    if self.softmax_temperature <= 0 then check.fail("SampleEmbeddingHelper", "softmax_temperature", "> 0", a2.softmax_temperature) end
  end
  self.seed = check.int("SampleEmbeddingHelper", "seed", a2.seed, 0)
  return setmetatable(self, SampleEmbeddingHelper)
end

--- A draw from softmax(outputs / temperature): the first id whose
-- cumulative probability passes a uniform draw (the sampling_id op's rule;
-- the sampling_id op itself when the build has it). With a seed, every step
-- and run draws the same uniform values, as Fluid's sampling_id does.
-- @tparam Variable time
-- @tparam Variable outputs [batch, vocab]
-- @param states
-- @treturn Variable int64 [batch]
-- @usage local ids = helper:sample(t, logits, states)
function SampleEmbeddingHelper:sample(time, outputs, states)
  local logits = outputs
  if self.softmax_temperature then logits = layers.scale{ x = outputs, scale = 1.0 / self.softmax_temperature } end
  local probs = layers.softmax(logits)
  local sampling_id = rawget(layers, "sampling_id")   -- Fluid's layer, when oar has it
  if sampling_id then
    local ids = sampling_id{ x = probs, seed = self.seed, dtype = "int64" }
    return layers.reshape(ids, { -1 })
  end
  -- without sampling_id: u uniform in [0, 1) per row from 24 fair bits (dropout of ones)
  local V = probs.shape[#probs.shape]
  local ones = layers.fill_constant_batch_size_like{ input = probs, shape = { -1, 24 }, dtype = probs.dtype, value = 1 }
  local bits = layers.dropout{ x = ones, dropout_prob = 0.5, seed = self.seed ~= 0 and self.seed or nil }
  local w = {}
  for i = 1, 24 do w[i] = { 2 ^ -i } end
  local wv = layers.assign(w)
  if probs.dtype ~= wv.dtype then wv = layers.cast(wv, probs.dtype) end
  local u = layers.reshape(layers.matmul(bits, wv), { -1 })
  local below = layers.less_than{ x = layers.cumsum{ x = probs, axis = -1 }, y = layers.unsqueeze(u, { 1 }) }
  local ids = layers.reduce_sum(layers.cast(below, "int64"), -1)
  return layers.elementwise_min{ x = ids, y = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = V - 1 } }
end

local BasicDecoder = setmetatable({}, { __index = Decoder })
BasicDecoder.__index = BasicDecoder

--- A decoder from a cell and a helper (Fluid's BasicDecoder): each step
-- runs the cell, then output_fn, lets the helper sample ids and give the
-- next inputs. Its outputs are {cell_outputs=, sample_ids=}.
-- @tparam table a keyword arguments:
-- @param a.cell the cell
-- @param a.helper a DecodeHelper (TrainingHelper, GreedyEmbeddingHelper, ...)
-- @tparam[opt] function a.output_fn the cell's outputs -> logits
-- @param[opt] helper with a positional cell
-- @param[opt] output_fn with a positional cell
-- @treturn BasicDecoder
-- @usage local dec = layers.BasicDecoder{cell = cell, helper = helper, output_fn = project}
function M.BasicDecoder(a, helper, output_fn)
  if type(a) == "table" and a.cell == nil and a.helper == nil and type(a.call) == "function" then
    a = { cell = a, helper = helper, output_fn = output_fn }
  end
  a = args("BasicDecoder", a, nil, nil, "cell helper output_fn")
  if type(a.cell) ~= "table" or type(a.cell.call) ~= "function" then
    check.fail("BasicDecoder", "cell", "an RNNCell (a table with call)", a.cell)
  end
  local h = a.helper
  if type(h) ~= "table" or type(h.initialize) ~= "function" or type(h.sample) ~= "function"
     or type(h.next_inputs) ~= "function" then
    check.fail("BasicDecoder", "helper", "a DecodeHelper", h)
  end
  if a.output_fn ~= nil and type(a.output_fn) ~= "function" then check.fail("BasicDecoder", "output_fn", "a function", a.output_fn) end
  return setmetatable({ cell = a.cell, helper = h, output_fn = a.output_fn }, BasicDecoder)
end

--- The helper's first inputs and finished, with the given cell states.
-- @param initial_cell_states
-- @return inputs
-- @return states
-- @treturn Variable finished
-- @usage local x, st, fin = dec:initialize(h0)
function BasicDecoder:initialize(initial_cell_states)
  local inputs, finished = self.helper:initialize()
  return inputs, initial_cell_states, finished
end

--- One step: the cell, output_fn, the helper's sample and next inputs.
-- @tparam Variable time int64 [1]
-- @param inputs
-- @param states
-- @tparam[opt] table kwargs passed to the cell
-- @treturn table {cell_outputs=, sample_ids=}
-- @return next states
-- @return next inputs
-- @treturn Variable finished
-- @usage local out, st, x, fin = dec:step(t, x, st)
function BasicDecoder:step(time, inputs, states, kwargs)
  local cell_out, cell_states = self.cell:call(inputs, states, kwargs)
  if self.output_fn then cell_out = self.output_fn(cell_out) end
  local ids = self.helper:sample(time, cell_out, cell_states)
  ids.stop_gradient = true
  local finished, next_inputs, next_states = self.helper:next_inputs(time, cell_out, cell_states, ids)
  return { cell_outputs = cell_out, sample_ids = ids }, next_states, next_inputs, finished
end

return M
