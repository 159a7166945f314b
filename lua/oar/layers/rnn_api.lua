--- oar.layers.rnn_api: Fluid 1.8's padded-batch RNN API (layers/rnn.py):
-- the cells `RNNCell`, `LSTMCell` and `GRUCell` (the math and parameters
-- of Fluid's BasicLSTMUnit and BasicGRUUnit), `rnn` and `birnn` over
-- padded [N, T, ...] batches with a sequence-length mask, and, from
-- oar.layers.rnn_decode, the decoders (`Decoder`, `BeamSearchDecoder`,
-- `BasicDecoder`, the helpers) and `dynamic_decode`, and from
-- oar.layers.rnn_lstm the cuDNN-style `lstm`. Merged into `oar.layers`.
--
-- A cell is an `RNNCell` (or any table with `call(self, inputs, states,
-- kwargs)` and `state_shape`), or a plain function `(inputs, states,
-- kwargs) -> outputs, new_states`. States and outputs are Variables or
-- tables of them (oar.layers.rnn_struct). Python's keyword arguments to
-- `cell.call` are one Lua table, `kwargs`.
--
--   local cell = layers.GRUCell{hidden_size = 32}
--   local outs, final = layers.rnn{cell = cell, inputs = emb, sequence_length = lens}
-- @module oar.layers.rnn_api
local framework = require("oar.framework")
local LayerHelper = require("oar.layer_helper")
local struct = require("oar.layers.rnn_struct")
local layers = require("oar.layers")

local check, args = LayerHelper.check, LayerHelper.args
local is_variable, raise = framework.is_variable, framework.raise

local M = {}

-- ---- cells ----------------------------------------------------------------------------------

local RNNCell = {}
RNNCell.__index = RNNCell

local function is_shape(s)
  if type(s) ~= "table" or is_variable(s) then return false end
  for i = 1, #s do if type(s[i]) ~= "number" then return false end end
  for k in pairs(s) do if type(k) ~= "number" then return false end end
  return true
end

-- shape structure -> list of leaves (each a list of ints), and a rebuild function
local function map_shapes(shape, fn)
  if is_shape(shape) then return fn(shape) end
  if type(shape) ~= "table" then
    raise("RNNCell: state_shape is a list of ints or a table of them, got " .. framework.describe(shape))
  end
  local t = {}
  for k, v in pairs(shape) do t[k] = map_shapes(v, fn) end
  return t
end

--- The base of the cells (Fluid's RNNCell): `layers.RNNCell{call =
-- function(self, inputs, states, kwargs) ... end, state_shape = ...}` makes
-- a cell from its step function; the table's other fields stay on the cell.
-- `call` returns `outputs, new_states` (new_states with the structure of
-- states).
-- @tparam table t the cell's fields: `call` (required), `state_shape` (a
-- list of ints without the batch dim, or a table of them), `state_dtype`
-- @treturn RNNCell
-- @raise when `call` is not a function
-- @usage
-- local cell = layers.RNNCell{state_shape = {8}, call = function(self, x, h)
--   local n = layers.fc{input = {x, h}, size = 8, act = "tanh"}
--   return n, n
-- end}
function M.RNNCell(t)
  if type(t) ~= "table" then check.fail("RNNCell", "argument", "a table with call= and state_shape=", t) end
  if type(t.call) ~= "function" then check.fail("RNNCell", "call", "a function(self, inputs, states, kwargs)", t.call) end
  return setmetatable(t, RNNCell)
end

--- Initial states of the cell's `state_shape`, filled with `init_value`,
-- their batch dim taken from `batch_ref` (Fluid's get_initial_states).
-- @tparam table a keyword arguments:
-- @tparam Variable|table a.batch_ref a Variable (or structure: its first leaf) whose dim
-- `batch_dim_idx` is the batch size
-- @param[opt] a.shape the states' shapes without the batch dim (default: the cell's state_shape)
-- @tparam[opt] string a.dtype default: the cell's state_dtype, else "float32"
-- @tparam[opt=0] number a.init_value
-- @tparam[opt=0] int a.batch_dim_idx
-- @return a Variable [N, ...] or a structure of them
-- @raise without a shape
-- @usage local h0 = cell:get_initial_states{batch_ref = x}
function RNNCell:get_initial_states(a)
  a = args("RNNCell:get_initial_states", a, "batch_ref", nil, "batch_dim_idx batch_ref dtype init_value shape")
  local ref = struct.flatten(a.batch_ref)[1]
  check.variable("RNNCell:get_initial_states", "batch_ref", ref)
  local shape = a.shape or self.state_shape
  if shape == nil then raise("RNNCell:get_initial_states: the cell has no state_shape; give 'shape'") end
  local dtype = a.dtype or self.state_dtype or "float32"
  if type(dtype) ~= "string" then check.fail("RNNCell:get_initial_states", "dtype", "a dtype name", dtype) end
  local value = check.number("RNNCell:get_initial_states", "init_value", a.init_value, 0)
  local idx = check.int("RNNCell:get_initial_states", "batch_dim_idx", a.batch_dim_idx, 0)
  return map_shapes(shape, function(s)
    local full = { -1 }
    for _, d in ipairs(s) do full[#full + 1] = d end
    local v = layers.fill_constant_batch_size_like{ input = ref, shape = full, dtype = dtype, value = value,
                                                    input_dim_idx = idx }
    return v
  end)
end

-- a cell as a table with call/get_initial_states
local function as_cell(who, key, c)
  if type(c) == "function" then
    return M.RNNCell{ call = function(_, inputs, states, kwargs) return c(inputs, states, kwargs) end }
  end
  if type(c) ~= "table" or type(c.call) ~= "function" then
    check.fail(who, key, "an RNNCell, a table with call(self, inputs, states), or a function", c)
  end
  return c
end

local function initial_states(who, cell, ref, batch_dim_idx)
  local get = cell.get_initial_states or RNNCell.get_initial_states
  local base = cell.get_initial_states == nil or cell.get_initial_states == RNNCell.get_initial_states
  if cell.state_shape == nil and base then
    raise(who .. ": give 'initial_states', or a cell with state_shape")
  end
  return get(cell, { batch_ref = ref, batch_dim_idx = batch_dim_idx })
end

-- an activation: a function, or the name of a layers function
local function activation(who, key, f, default)
  if f == nil then f = default end
  if type(f) == "string" then
    local fn = rawget(layers, f)
    if type(fn) ~= "function" then check.fail(who, key, "a function or a layer name (\"tanh\")", f) end
    return fn
  end
  if type(f) ~= "function" then check.fail(who, key, "a function or a layer name (\"tanh\")", f) end
  return f
end

local function cell_input(who, inputs)
  local x = inputs
  if not is_variable(x) then
    local flat = struct.flatten(x)
    if #flat ~= 1 then raise(who .. ": the cell takes one input Variable [N, D]") end
    x = flat[1]
  end
  if #x.shape ~= 2 or x.shape[2] <= 0 then
    raise(string.format("%s: the input '%s' must be [N, D] with D known, got %s", who, x.name,
      framework.shape_text(x.shape)))
  end
  return x
end

-- a cell's parameters, made at its first call (the input size is known
-- then); a call in another program declares the same parameters there, by
-- name, so that programs built from one cell share its weights in a scope.
-- specs: {field, shape(D), is_bias}; the first is a weight, always made.
local function cell_params(self, who, x, specs)
  local D = x.shape[2]
  if self.input_size and D ~= self.input_size then
    raise(string.format("%s: the input '%s' has %d features, the cell was built for %d", who, x.name, D,
      self.input_size))
  end
  local prog = framework.default_main_program()
  local first = self[specs[1][1]]
  if first and first.block.program.handle == prog.handle then return end
  local helper = LayerHelper(self.name, { name = self.name, param_attr = self.param_attr, bias_attr = self.bias_attr })
  self.input_size = D
  for _, sp in ipairs(specs) do
    local field, is_bias = sp[1], sp[3]
    local attr = is_bias and helper:bias_attr() or helper:param_attr()
    if first then   -- another program: the same name, the user's other attributes
      local old = self[field]
      if not old then
        attr = false
      else
        local copy = {}
        for k, v in pairs(attr) do copy[k] = v end
        attr = setmetatable(copy, getmetatable(attr))
        attr.name = old.name
      end
    end
    self[field] = helper:create_parameter(attr, sp[2](D), self.dtype, is_bias)
  end
end

-- LSTMCell and GRUCell from their checked keyword arguments a: mt the
-- class, state_shape(H) the states' shapes, extra(self, a) the class's own
-- options (checked after the activations, as the constructors always did)
local function new_cell(L, mt, a, state_shape, extra)
  local h = check.positive_int(L, "hidden_size", a.hidden_size)
  local self = setmetatable({
    hidden_size = h, param_attr = a.param_attr, bias_attr = a.bias_attr,
    gate_activation = activation(L, "gate_activation", a.gate_activation, layers.sigmoid),
    activation = activation(L, "activation", a.activation, layers.tanh),
    state_shape = state_shape(h),
  }, mt)
  if extra then extra(self, a) end
  self.dtype = check.dtype(L, "dtype", a.dtype, "float32")
  self.name = check.string(L, "name", a.name, L)
  self.state_dtype = self.dtype
  return self
end

local LSTMCell = setmetatable({}, { __index = RNNCell })
LSTMCell.__index = LSTMCell

--- An LSTM cell (Fluid's LSTMCell over BasicLSTMUnit): with [x, h] the
-- concatenation of the input and the previous hidden state,
-- `i, j, f, o = split([x, h] W + b, 4)`, `c' = c * gate(f + forget_bias) +
-- gate(i) * act(j)`, `h' = act(c') * gate(o)`. W is [D + H, 4H], b [4H],
-- made at the first call. `call(inputs, {h, c})` returns `h', {h', c'}`.
-- @tparam table a keyword arguments:
-- @tparam int a.hidden_size H
-- @tparam[opt] ParamAttr a.param_attr W's attributes
-- @tparam[opt] ParamAttr|bool a.bias_attr b's attributes (false: no bias)
-- @tparam[opt=layers.sigmoid] function|string a.gate_activation
-- @tparam[opt=layers.tanh] function|string a.activation
-- @tparam[opt=1.0] number a.forget_bias
-- @tparam[opt="float32"] string a.dtype
-- @tparam[opt="LSTMCell"] string a.name the parameters' name prefix
-- @treturn LSTMCell with state_shape {{H}, {H}}
-- @usage local cell = layers.LSTMCell{hidden_size = 32}
function M.LSTMCell(a)
  return new_cell("LSTMCell", LSTMCell,
    args("LSTMCell", a, nil, nil, "activation bias_attr dtype forget_bias gate_activation hidden_size name param_attr"),
    function(h) return { { h }, { h } } end,
    function(self, b) self.forget_bias = check.number("LSTMCell", "forget_bias", b.forget_bias, 1.0) end)
end

--- One LSTM step.
-- @tparam Variable inputs [N, D]
-- @tparam {Variable,Variable} states {h [N, H], c [N, H]}
-- @treturn Variable h' [N, H]
-- @treturn {Variable,Variable} {h', c'}
-- @usage local out, new_states = cell:call(x_t, {h, c})
function LSTMCell:call(inputs, states)
  local x = cell_input("LSTMCell", inputs)
  if type(states) ~= "table" or is_variable(states) or not is_variable(states[1]) or not is_variable(states[2]) then
    check.fail("LSTMCell:call", "states", "{h, c}", states)
  end
  local pre_h, pre_c = states[1], states[2]
  local H = self.hidden_size
  cell_params(self, "LSTMCell", x, {
    { "weight", function(D) return { D + H, 4 * H } end, false },
    { "bias", function() return { 4 * H } end, true } })
  local gates = layers.matmul{ x = layers.concat({ x, pre_h }, 1), y = self.weight }
  if self.bias then gates = layers.elementwise_add{ x = gates, y = self.bias } end
  local parts = layers.split{ input = gates, num_or_sections = 4, dim = -1 }
  local i, j, f, o = parts[1], parts[2], parts[3], parts[4]
  local fb = layers.scale{ x = f, scale = 1.0, bias = self.forget_bias }
  local new_c = layers.elementwise_add{
    x = layers.elementwise_mul{ x = pre_c, y = self.gate_activation(fb) },
    y = layers.elementwise_mul{ x = self.gate_activation(i), y = self.activation(j) } }
  local new_h = layers.elementwise_mul{ x = self.activation(new_c), y = self.gate_activation(o) }
  return new_h, { new_h, new_c }
end

local GRUCell = setmetatable({}, { __index = RNNCell })
GRUCell.__index = GRUCell

--- A GRU cell (Fluid's GRUCell over BasicGRUUnit): `r, u = split(gate([x,
-- h] Wg + bg), 2)`, `c = act([x, r * h] Wc + bc)`, `h' = u * h + (1 - u) *
-- c`. Wg is [D + H, 2H], bg [2H], Wc [D + H, H], bc [H], made at the first
-- call. `call(inputs, h)` returns `h', h'`.
-- @tparam table a keyword arguments:
-- @tparam int a.hidden_size H
-- @tparam[opt] ParamAttr a.param_attr the weights' attributes
-- @tparam[opt] ParamAttr|bool a.bias_attr the biases' attributes (false: none)
-- @tparam[opt=layers.sigmoid] function|string a.gate_activation
-- @tparam[opt=layers.tanh] function|string a.activation
-- @tparam[opt="float32"] string a.dtype
-- @tparam[opt="GRUCell"] string a.name the parameters' name prefix
-- @treturn GRUCell with state_shape {H}
-- @usage local cell = layers.GRUCell{hidden_size = 32}
function M.GRUCell(a)
  return new_cell("GRUCell", GRUCell,
    args("GRUCell", a, nil, nil, "activation bias_attr dtype gate_activation hidden_size name param_attr"),
    function(h) return { h } end)
end

--- One GRU step.
-- @tparam Variable inputs [N, D]
-- @tparam Variable states h [N, H] (or {h})
-- @treturn Variable h' [N, H]
-- @treturn Variable h'
-- @usage local out, h1 = cell:call(x_t, h0)
function GRUCell:call(inputs, states)
  local x = cell_input("GRUCell", inputs)
  local pre_h = states
  if type(states) == "table" and not is_variable(states) and #states == 1 then pre_h = states[1] end
  check.variable("GRUCell:call", "states", pre_h)
  local H = self.hidden_size
  cell_params(self, "GRUCell", x, {
    { "gate_weight", function(D) return { D + H, 2 * H } end, false },
    { "candidate_weight", function(D) return { D + H, H } end, false },
    { "gate_bias", function() return { 2 * H } end, true },
    { "candidate_bias", function() return { H } end, true } })
  local g = layers.matmul{ x = layers.concat({ x, pre_h }, 1), y = self.gate_weight }
  if self.gate_bias then g = layers.elementwise_add{ x = g, y = self.gate_bias } end
  local parts = layers.split{ input = self.gate_activation(g), num_or_sections = 2, dim = 1 }
  local r, u = parts[1], parts[2]
  local rh = layers.elementwise_mul{ x = r, y = pre_h }
  local c = layers.matmul{ x = layers.concat({ x, rh }, 1), y = self.candidate_weight }
  if self.candidate_bias then c = layers.elementwise_add{ x = c, y = self.candidate_bias } end
  c = self.activation(c)
  local one_minus_u = layers.scale{ x = u, scale = -1.0, bias = 1.0 }
  local new_h = layers.elementwise_add{ x = layers.elementwise_mul{ x = u, y = pre_h },
                                        y = layers.elementwise_mul{ x = one_minus_u, y = c } }
  return new_h, new_h
end

-- ---- rnn and birnn --------------------------------------------------------------------------

local function swap_batch_time(x)
  local perm = { 1, 0 }
  for i = 3, #x.shape do perm[i] = i - 1 end
  return layers.transpose(x, perm)
end

-- state where step_mask is 0, new_state where it is 1 (mask [N], state [N, ...])
local function maybe_copy(state, new_state, step_mask)
  local keep = layers.scale{ x = step_mask, scale = -1.0, bias = 1.0 }
  return layers.elementwise_add{ x = layers.elementwise_mul{ x = new_state, y = step_mask, axis = 0 },
                                 y = layers.elementwise_mul{ x = state, y = keep, axis = 0 } }
end

local FLOATS = { float32 = true, float64 = true }

--- Runs a cell over every step of a padded batch (Fluid's layers.rnn, a
-- StaticRNN). With `sequence_length`, a sequence's states stop changing
-- after its last step and its outputs past it are zeros. Also positional:
-- `rnn(cell, inputs, initial_states, sequence_length, time_major, is_reverse)`.
-- @tparam table a keyword arguments:
-- @param a.cell an RNNCell, a table with call(self, inputs, states, kwargs), or a function
-- @param a.inputs a Variable [N, T, ...] ([T, N, ...] when time_major), float32/float64,
-- or a structure of them
-- @param[opt] a.initial_states the cell's initial states (default:
-- `cell:get_initial_states{batch_ref = inputs}`)
-- @tparam[opt] Variable a.sequence_length int32/int64 [N]: each sequence's length
-- @tparam[opt=false] bool a.time_major
-- @tparam[opt=false] bool a.is_reverse run from the last step to the first
-- @tparam[opt] table a.kwargs passed to every `cell:call` as its third argument
-- @return outputs: each of the cell's outputs stacked into [N, T, ...] ([T, N, ...] when time_major)
-- @return final_states: the states after each sequence's last step
-- @raise on a bad argument, or when the cell's new states differ in structure from its states
-- @usage local outs, h = layers.rnn{cell = layers.GRUCell{hidden_size = 16}, inputs = emb,
--   sequence_length = lens}
function M.rnn(a, ...)
  if type(a) ~= "table" or (a.cell == nil and a.inputs == nil) then
    local inputs, init, seq_len, time_major, is_reverse = ...
    a = { cell = a, inputs = inputs, initial_states = init, sequence_length = seq_len, time_major = time_major,
          is_reverse = is_reverse }
  end
  a = args("rnn", a, nil, nil, "cell initial_states inputs is_reverse kwargs sequence_length time_major")
  local cell = as_cell("layers.rnn", "cell", a.cell)
  if a.inputs == nil then check.fail("rnn", "inputs", "a Variable [N, T, ...] or a structure of them", nil) end
  local flat_in = struct.flatten(a.inputs)
  for i, x in ipairs(flat_in) do
    if not FLOATS[x.dtype] then
      check.fail("rnn", "inputs[" .. i .. "]", "float32 or float64", x.dtype)
    end
    if #x.shape < 2 then check.fail("rnn", "inputs[" .. i .. "]", "rank >= 2 ([N, T, ...])", x.shape) end
  end
  local time_major = check.boolean("rnn", "time_major", a.time_major, false)
  local is_reverse = check.boolean("rnn", "is_reverse", a.is_reverse, false)
  local seq_len = check.opt_variable("rnn", "sequence_length", a.sequence_length)
  if seq_len and seq_len.dtype ~= "int64" and seq_len.dtype ~= "int32" then
    check.fail("rnn", "sequence_length", "int32 or int64", seq_len.dtype)
  end
  local states0 = a.initial_states
  if states0 == nil then states0 = initial_states("layers.rnn", cell, flat_in[1], time_major and 1 or 0) end
  local flat_states0 = struct.flatten(states0)
  if #flat_states0 == 0 then raise("layers.rnn: the cell has no states") end

  local inputs = a.inputs
  if not time_major then inputs = struct.map(swap_batch_time, inputs) end
  local T = struct.flatten(inputs)[1].shape[1]
  local mask
  if seq_len then
    local maxlen = T
    if maxlen == nil or maxlen < 0 then
      maxlen = layers.slice{ input = layers.shape(struct.flatten(inputs)[1]), axes = { 0 }, starts = { 0 }, ends = { 1 } }
    end
    mask = layers.sequence_mask{ x = seq_len, maxlen = maxlen, dtype = flat_states0[1].dtype }
    mask = layers.transpose(mask, { 1, 0 })   -- [T, N]
  end
  if is_reverse then
    inputs = struct.map(function(x) return layers.flip(x, { 0 }) end, inputs)
    if mask then mask = layers.flip(mask, { 0 }) end
  end

  local srnn = layers.StaticRNN()
  local out_struct, state_struct, n_out
  srnn:step(function()
    local step_in = struct.map(function(x) return srnn:step_input(x) end, inputs)
    local states = struct.map(function(s) return srnn:memory{ init = s } end, states0)
    local outputs, new_states = cell:call(step_in, states, a.kwargs)
    if outputs == nil or new_states == nil then
      raise("layers.rnn: the cell's call must return outputs, new_states")
    end
    struct.assert_same("layers.rnn: the cell's new states against its states", states, new_states)
    local step_mask = mask and srnn:step_input(mask)
    if step_mask then
      new_states = struct.map(function(s, n) return maybe_copy(s, n, step_mask) end, states, new_states)
      outputs = struct.map(function(o)
        if not FLOATS[o.dtype] then return o end
        local m = o.dtype == step_mask.dtype and step_mask or layers.cast(step_mask, o.dtype)
        -- + 0 turns the -0 of a negative output times 0 into 0
        return layers.scale{ x = layers.elementwise_mul{ x = o, y = m, axis = 0 }, scale = 1.0, bias = 0.0 }
      end, outputs)
    end
    local flat_new = struct.flatten(new_states)
    for i, s in ipairs(struct.flatten(states)) do srnn:update_memory(s, flat_new[i]) end
    local flat_out = struct.flatten(outputs)
    n_out = #flat_out
    for _, o in ipairs(flat_out) do srnn:step_output(o) end
    for _, s in ipairs(struct.flatten(new_states)) do srnn:step_output(s) end
    out_struct, state_struct = outputs, new_states
  end)
  local all = { srnn() }
  local outs, finals = {}, {}
  for i = 1, n_out do outs[i] = all[i] end
  for i = n_out + 1, #all do
    local s = all[i]
    local last = layers.slice{ input = s, axes = { 0 }, starts = { -1 }, ends = { 2147483647 } }
    finals[#finals + 1] = layers.squeeze{ input = last, axes = { 0 } }
  end
  local final_outputs = struct.pack_as(out_struct, outs)
  local final_states = struct.pack_as(state_struct, finals)
  if is_reverse then final_outputs = struct.map(function(x) return layers.flip(x, { 0 }) end, final_outputs) end
  if not time_major then final_outputs = struct.map(swap_batch_time, final_outputs) end
  return final_outputs, final_states
end

--- A bidirectional RNN (Fluid's layers.birnn): `cell_fw` over the steps in
-- order, `cell_bw` from each sequence's last step back, their outputs
-- concatenated on the last axis. Also positional:
-- `birnn(cell_fw, cell_bw, inputs, initial_states, sequence_length, time_major)`.
-- @tparam table a keyword arguments:
-- @param a.cell_fw the forward cell
-- @param a.cell_bw the backward cell
-- @param a.inputs a Variable [N, T, D] ([T, N, D] when time_major)
-- @tparam[opt] table a.initial_states {states_fw, states_bw}
-- @tparam[opt] Variable a.sequence_length int32/int64 [N]
-- @tparam[opt=false] bool a.time_major
-- @tparam[opt] table a.kwargs passed to both cells' call
-- @return outputs [N, T, H_fw + H_bw]
-- @treturn table final_states {states_fw, states_bw}
-- @usage local outs, states = layers.birnn{cell_fw = layers.GRUCell{hidden_size = 8},
--   cell_bw = layers.GRUCell{hidden_size = 8}, inputs = emb, sequence_length = lens}
function M.birnn(a, ...)
  if type(a) ~= "table" or (a.cell_fw == nil and a.inputs == nil) then
    local cell_bw, inputs, init, seq_len, time_major = ...
    a = { cell_fw = a, cell_bw = cell_bw, inputs = inputs, initial_states = init, sequence_length = seq_len,
          time_major = time_major }
  end
  a = args("birnn", a, nil, nil, "cell_bw cell_fw initial_states inputs kwargs sequence_length time_major")
  local fw = as_cell("layers.birnn", "cell_fw", a.cell_fw)
  local bw = as_cell("layers.birnn", "cell_bw", a.cell_bw)
  local time_major = check.boolean("birnn", "time_major", a.time_major, false)
  local s_fw, s_bw
  if a.initial_states ~= nil then
    if type(a.initial_states) ~= "table" or is_variable(a.initial_states) or a.initial_states[2] == nil then
      check.fail("birnn", "initial_states", "{states_fw, states_bw}", a.initial_states)
    end
    s_fw, s_bw = a.initial_states[1], a.initial_states[2]
  end
  local out_fw, st_fw = M.rnn{ cell = fw, inputs = a.inputs, initial_states = s_fw,
                               sequence_length = a.sequence_length, time_major = time_major, kwargs = a.kwargs }
  local out_bw, st_bw = M.rnn{ cell = bw, inputs = a.inputs, initial_states = s_bw,
                               sequence_length = a.sequence_length, time_major = time_major, is_reverse = true,
                               kwargs = a.kwargs }
  local outputs = struct.map(function(x, y) return layers.concat({ x, y }, -1) end, out_fw, out_bw)
  return outputs, { st_fw, st_bw }
end

for _, part in ipairs({ "oar.layers.rnn_decode", "oar.layers.rnn_lstm" }) do
  for k, v in pairs(require(part)) do
    assert(M[k] == nil, "rnn_api: two modules define " .. k)
    M[k] = v
  end
end

return M
