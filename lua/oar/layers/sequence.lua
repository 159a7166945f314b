--- oar.layers.sequence: layers over LoD sequences (Fluid's sequence_* layers,
-- dynamic_lstm, dynamic_gru, lstm_unit, gru_unit). Merged into oar.layers.
--
--   local h, c = layers.dynamic_lstm{input = layers.fc{input = emb, size = 4 * H}, size = 4 * H}
--   local pooled = layers.sequence_pool{input = h, pool_type = "max"}
--   local last = layers.sequence_last_step(h)
--
-- Parameters take Fluid's default initializers: Xavier for weights and
-- filters, zeros for biases (param_attr / bias_attr override them).
-- @module oar.layers.sequence
local LayerHelper = require("oar.layer_helper")
local framework = require("oar.framework")

local check, args = LayerHelper.check, LayerHelper.args
local raise, is_variable = framework.raise, framework.is_variable

local M = {}

-- the feature width (shape[2]) of a [N, width] input, which must be known
local function width_of(layer, key, v)
  local shape = v.shape
  if #shape ~= 2 or shape[2] == nil or shape[2] <= 0 then
    raise(string.format("%s: '%s' ('%s') must be [N, width] with a known width, got shape %s",
      layer, key, v.name, framework.shape_text(shape)))
  end
  return shape[2]
end

-- ---- pooling ------------------------------------------------------------------------------

local POOL_TYPES = { average = "AVERAGE", sum = "SUM", sqrt = "SQRT", max = "MAX", last = "LAST", first = "FIRST" }

--- Pools each sequence of the last LoD level into one row.
-- Also positional: `sequence_pool(input, pool_type)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input a LoD tensor [T, D]
-- @tparam string a.pool_type one of "average", "sum", "sqrt" (sum / sqrt(length)),
-- "max", "last", "first" (case does not matter)
-- @tparam[opt=false] bool a.is_test
-- @tparam[opt=0.0] number a.pad_value the row given to an empty sequence
-- @tparam[opt] string a.name
-- @tparam[opt] string pool_type with a positional input
-- @treturn Variable [number of sequences, D]
-- @raise on an unknown pool_type
-- @usage local pooled = layers.sequence_pool{input = h, pool_type = "max"}
function M.sequence_pool(a, pool_type)
  a = args("sequence_pool", a, "input", { pool_type = pool_type }, "input is_test name pad_value pool_type")
  local input = check.variable("sequence_pool", "input", a.input)
  local pt = check.string("sequence_pool", "pool_type", a.pool_type)
  local code = POOL_TYPES[pt:lower()]
  if not code then
    check.fail("sequence_pool", "pool_type", "one of average, sum, sqrt, max, last, first", pt)
  end
  local helper = LayerHelper("sequence_pool", a)
  local out = helper:create_variable_for_type_inference(input.dtype)
  local max_index = helper:create_variable_for_type_inference("int32", true)
  helper:append_op{ type = "sequence_pool", inputs = { X = { input } },
    outputs = { Out = { out }, MaxIndex = { max_index } },
    attrs = { pooltype = code, is_test = check.boolean("sequence_pool", "is_test", a.is_test, false),
              pad_value = check.number("sequence_pool", "pad_value", a.pad_value, 0.0) } }
  return out
end

--- The first row of each sequence: `sequence_pool` with pool_type "first".
-- @tparam Variable|table a the LoD input, or `{input=, name=}`
-- @treturn Variable [number of sequences, D]
-- @usage local first = layers.sequence_first_step(h)
function M.sequence_first_step(a)
  a = args("sequence_first_step", a, "input", nil, "input name")
  return M.sequence_pool{ input = check.variable("sequence_first_step", "input", a.input), pool_type = "first",
                          name = a.name }
end

--- The last row of each sequence: `sequence_pool` with pool_type "last".
-- @tparam Variable|table a the LoD input, or `{input=, name=}`
-- @treturn Variable [number of sequences, D]
-- @usage local last = layers.sequence_last_step(h)
function M.sequence_last_step(a)
  a = args("sequence_last_step", a, "input", nil, "input name")
  return M.sequence_pool{ input = check.variable("sequence_last_step", "input", a.input), pool_type = "last",
                          name = a.name }
end

--- Softmax within each sequence of a [T, 1] (or [T]) LoD input.
-- @tparam Variable|table a the input, or keyword arguments:
-- @tparam Variable a.input the LoD input (`x` is accepted too)
-- @tparam[opt=false] bool a.use_cudnn
-- @tparam[opt] string a.name
-- @treturn Variable the same shape and LoD as the input
-- @usage local weights = layers.sequence_softmax(layers.fc{input = h, size = 1})
function M.sequence_softmax(a)
  a = args("sequence_softmax", a, "input", nil, "input name use_cudnn x")
  local input = check.variable("sequence_softmax", "input", a.input or a.x)
  local helper = LayerHelper("sequence_softmax", a)
  return helper:unary("sequence_softmax", input,
    { use_cudnn = check.boolean("sequence_softmax", "use_cudnn", a.use_cudnn, false) })
end

--- Repeats the rows (or sequences) of `x` as many times as the sequences
-- of `y`'s LoD level `ref_level` are long. Also positional:
-- `sequence_expand(x, y, ref_level)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x the tensor to expand
-- @tparam Variable a.y the LoD tensor giving the counts
-- @tparam[opt=-1] int a.ref_level the level of y's LoD to follow (-1: the last)
-- @tparam[opt] string a.name
-- @tparam[opt] Variable y with a positional x
-- @tparam[opt] int ref_level with a positional x
-- @treturn Variable x expanded, with y's LoD at that level
-- @usage local ctx = layers.sequence_expand{x = encoder_last, y = target_words}
function M.sequence_expand(a, y, ref_level)
  if is_variable(a) then a = { x = a, y = y, ref_level = ref_level } end
  a = args("sequence_expand", a, nil, nil, "name ref_level x y")
  local x = check.variable("sequence_expand", "x", a.x)
  local yv = check.variable("sequence_expand", "y", a.y)
  local helper = LayerHelper("sequence_expand", a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = "sequence_expand", inputs = { X = { x }, Y = { yv } }, outputs = { Out = { out } },
                    attrs = { ref_level = check.int("sequence_expand", "ref_level", a.ref_level, -1) } }
  return out
end

--- A 1-D convolution along the time axis of each sequence (context
-- projection times a filter), plus bias and activation. Rows outside a
-- sequence read zeros.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input a LoD tensor [T, D] with a known D
-- @tparam int a.num_filters output width
-- @tparam[opt=3] int a.filter_size rows in the context window
-- @tparam[opt=1] int a.filter_stride only 1 is supported
-- @tparam[opt=-floor(filter_size/2)] int a.padding_start the window's first row, relative to the current one
-- @tparam[opt] ParamAttr|string a.param_attr the filter's attributes, [filter_size * D, num_filters]
-- @tparam[opt] ParamAttr|string|false a.bias_attr the bias's attributes; `false`: no bias
-- @tparam[opt] string|table a.act activation applied last
-- @tparam[opt] string a.name
-- @treturn Variable [T, num_filters], the input's LoD
-- @raise when filter_stride is not 1 or D is unknown
-- @usage local conv = layers.sequence_conv{input = emb, num_filters = 64, filter_size = 3, act = "tanh"}
function M.sequence_conv(a)
  a = args("sequence_conv", a, "input", nil,
    "act bias_attr filter_size filter_stride input name num_filters padding_start param_attr")
  local input = check.variable("sequence_conv", "input", a.input)
  local num_filters = check.positive_int("sequence_conv", "num_filters", a.num_filters)
  local filter_size = a.filter_size == nil and 3 or check.positive_int("sequence_conv", "filter_size", a.filter_size)
  local stride = check.int("sequence_conv", "filter_stride", a.filter_stride, 1)
  if stride ~= 1 then check.fail("sequence_conv", "filter_stride", "1 (the only stride supported)", stride) end
  local start = check.int("sequence_conv", "padding_start", a.padding_start, -math.floor(filter_size / 2))
  local d = width_of("sequence_conv", "input", input)
  local helper = LayerHelper("sequence_conv", a)
  local dtype = input.dtype
  local filter = helper:create_parameter(helper:param_attr(), { filter_size * d, num_filters }, dtype, false)
  local pre_bias = helper:create_variable_for_type_inference(dtype)
  helper:append_op{ type = "sequence_conv", inputs = { X = { input }, Filter = { filter } },
    outputs = { Out = { pre_bias } },
    attrs = { contextStride = stride, contextStart = start, contextLength = filter_size } }
  local pre_act = helper:append_bias_op(pre_bias)
  return helper:append_activation(pre_act)
end

-- ---- recurrent layers ------------------------------------------------------------------------

local ACTS = { "sigmoid", "tanh", "relu", "identity" }

-- an optional initial state: a Variable of shape [N, hidden]
local function init_state(layer, key, v, hidden)
  if v == nil then return nil end
  check.variable(layer, key, v)
  local shape = v.shape
  if #shape ~= 2 or (shape[2] > 0 and shape[2] ~= hidden) then
    raise(string.format("%s: '%s' ('%s') must be [N, %d] (one row per sequence), got shape %s",
      layer, key, v.name, hidden, framework.shape_text(shape)))
  end
  return v
end

--- An LSTM over each sequence of a LoD batch (Fluid's dynamic_lstm).
-- `input` is x already projected (an fc of width `size`); `size` is 4 times
-- the hidden size, as in Fluid. The weight is [hidden, 4 * hidden]; the bias
-- [1, 4 * hidden], or [1, 7 * hidden] with peepholes.
-- Activations are one of "sigmoid", "tanh", "relu", "identity".
-- @tparam table a keyword arguments:
-- @tparam Variable a.input a LoD tensor [T, size]
-- @tparam int a.size 4 * hidden size (a multiple of 4, equal to input's width)
-- @tparam[opt] Variable a.h_0 initial hidden state [number of sequences, hidden]
-- @tparam[opt] Variable a.c_0 initial cell state [number of sequences, hidden]
-- @tparam[opt] ParamAttr|string a.param_attr the hidden-to-gates weight's attributes
-- @tparam[opt] ParamAttr|string|false a.bias_attr the bias's attributes; `false`: no bias (and no peepholes)
-- @tparam[opt=true] bool a.use_peepholes
-- @tparam[opt=false] bool a.is_reverse run each sequence from its end
-- @tparam[opt="sigmoid"] string a.gate_activation
-- @tparam[opt="tanh"] string a.cell_activation
-- @tparam[opt="tanh"] string a.candidate_activation
-- @tparam[opt=input's dtype] string a.dtype
-- @tparam[opt] string a.name
-- @treturn Variable hidden, [T, hidden] with the input's LoD
-- @treturn Variable cell, [T, hidden]
-- @raise when size is not a multiple of 4 or differs from input's width
-- @usage
-- local proj = layers.fc{input = emb, size = 4 * 128}
-- local h, c = layers.dynamic_lstm{input = proj, size = 4 * 128}
function M.dynamic_lstm(a)
  a = args("dynamic_lstm", a, "input", nil,
    "bias_attr c_0 candidate_activation cell_activation dtype gate_activation h_0 input is_reverse name param_attr size use_peepholes")
  local input = check.variable("dynamic_lstm", "input", a.input)
  local size = check.positive_int("dynamic_lstm", "size", a.size)
  if size % 4 ~= 0 then check.fail("dynamic_lstm", "size", "a multiple of 4 (4 * hidden size)", size) end
  local w = width_of("dynamic_lstm", "input", input)
  if w ~= size then
    raise(string.format("dynamic_lstm: 'input' ('%s') has width %d but size is %d; project it with fc{size = %d} first",
      input.name, w, size, size))
  end
  local hidden = size / 4
  local peep = check.boolean("dynamic_lstm", "use_peepholes", a.use_peepholes, true)
  local dtype = check.dtype("dynamic_lstm", "dtype", a.dtype, input.dtype or "float32")
  local helper = LayerHelper("lstm", a)
  local weight = helper:create_parameter(helper:param_attr(), { hidden, 4 * hidden }, dtype, false)
  local inputs = { Input = { input }, Weight = { weight } }
  local battr = helper:bias_attr()
  if battr ~= false then
    inputs.Bias = { helper:create_parameter(battr, { 1, (peep and 7 or 4) * hidden }, dtype, true) }
  end
  local h0 = init_state("dynamic_lstm", "h_0", a.h_0, hidden)
  local c0 = init_state("dynamic_lstm", "c_0", a.c_0, hidden)
  if h0 then inputs.H0 = { h0 } end
  if c0 then inputs.C0 = { c0 } end
  local h = helper:create_variable_for_type_inference(dtype)
  local c = helper:create_variable_for_type_inference(dtype)
  local batch_gate = helper:create_variable_for_type_inference(dtype)
  local batch_cell = helper:create_variable_for_type_inference(dtype)
  helper:append_op{ type = "lstm", inputs = inputs,
    outputs = { Hidden = { h }, Cell = { c }, BatchGate = { batch_gate }, BatchCellPreAct = { batch_cell } },
    attrs = { use_peepholes = peep and battr ~= false,
              is_reverse = check.boolean("dynamic_lstm", "is_reverse", a.is_reverse, false),
              gate_activation = check.string("dynamic_lstm", "gate_activation", a.gate_activation, "sigmoid", ACTS),
              cell_activation = check.string("dynamic_lstm", "cell_activation", a.cell_activation, "tanh", ACTS),
              candidate_activation = check.string("dynamic_lstm", "candidate_activation", a.candidate_activation,
                "tanh", ACTS) } }
  return h, c
end

--- A GRU over each sequence of a LoD batch (Fluid's dynamic_gru).
-- `input` is x already projected, [T, 3 * size]; `size` is the hidden size,
-- as in Fluid. Activations are one of "sigmoid", "tanh", "relu", "identity".
-- @tparam table a keyword arguments:
-- @tparam Variable a.input a LoD tensor [T, 3 * size]
-- @tparam int a.size the hidden size
-- @tparam[opt] Variable a.h_0 initial hidden state [number of sequences, size]
-- @tparam[opt] ParamAttr|string a.param_attr the weight's attributes, [size, 3 * size]
-- @tparam[opt] ParamAttr|string|false a.bias_attr the bias's attributes; `false`: no bias
-- @tparam[opt=false] bool a.is_reverse
-- @tparam[opt="sigmoid"] string a.gate_activation
-- @tparam[opt="tanh"] string a.candidate_activation
-- @tparam[opt=false] bool a.origin_mode the update rule of the original GRU paper
-- @tparam[opt] string a.name
-- @treturn Variable hidden, [T, size] with the input's LoD
-- @raise when input's width is not 3 * size
-- @usage
-- local proj = layers.fc{input = emb, size = 3 * 64}
-- local h = layers.dynamic_gru{input = proj, size = 64}
function M.dynamic_gru(a)
  a = args("dynamic_gru", a, "input", nil,
    "bias_attr candidate_activation gate_activation h_0 input is_reverse name origin_mode param_attr size")
  local input = check.variable("dynamic_gru", "input", a.input)
  local size = check.positive_int("dynamic_gru", "size", a.size)
  local w = width_of("dynamic_gru", "input", input)
  if w ~= 3 * size then
    raise(string.format("dynamic_gru: 'input' ('%s') has width %d but needs 3 * size = %d; project it with fc{size = %d} first",
      input.name, w, 3 * size, 3 * size))
  end
  local dtype = input.dtype or "float32"
  local helper = LayerHelper("gru", a)
  local weight = helper:create_parameter(helper:param_attr(), { size, 3 * size }, dtype, false)
  local inputs = { Input = { input }, Weight = { weight } }
  local battr = helper:bias_attr()
  if battr ~= false then inputs.Bias = { helper:create_parameter(battr, { 1, 3 * size }, dtype, true) } end
  local h0 = init_state("dynamic_gru", "h_0", a.h_0, size)
  if h0 then inputs.H0 = { h0 } end
  local hidden = helper:create_variable_for_type_inference(dtype)
  local outs = { Hidden = { hidden } }
  for _, slot in ipairs({ "BatchGate", "BatchResetHiddenPrev", "BatchHidden" }) do
    outs[slot] = { helper:create_variable_for_type_inference(dtype) }
  end
  helper:append_op{ type = "gru", inputs = inputs, outputs = outs,
    attrs = { is_reverse = check.boolean("dynamic_gru", "is_reverse", a.is_reverse, false),
              gate_activation = check.string("dynamic_gru", "gate_activation", a.gate_activation, "sigmoid", ACTS),
              activation = check.string("dynamic_gru", "candidate_activation", a.candidate_activation, "tanh", ACTS),
              origin_mode = check.boolean("dynamic_gru", "origin_mode", a.origin_mode, false) } }
  return hidden
end

--- One LSTM step (Fluid's lstm_unit layer): the gates are an fc of
-- `[x_t, hidden_t_prev]` of width 4 * D, D the cell's width.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x_t the step's input [N, M]
-- @tparam Variable a.hidden_t_prev the previous hidden state [N, D]
-- @tparam Variable a.cell_t_prev the previous cell state [N, D]
-- @tparam[opt=0.0] number a.forget_bias added to the forget gate
-- @tparam[opt] ParamAttr|string a.param_attr the gates fc's weight attributes
-- @tparam[opt] ParamAttr|string|false a.bias_attr the gates fc's bias attributes
-- @tparam[opt] string a.name
-- @treturn Variable hidden [N, D]
-- @treturn Variable cell [N, D]
-- @raise when the hidden and cell widths differ
-- @usage
-- local h, c = layers.lstm_unit{x_t = x, hidden_t_prev = h_prev, cell_t_prev = c_prev}
function M.lstm_unit(a)
  a = args("lstm_unit", a, nil, nil, "bias_attr cell_t_prev forget_bias hidden_t_prev name param_attr x_t")
  local x = check.variable("lstm_unit", "x_t", a.x_t)
  local hp = check.variable("lstm_unit", "hidden_t_prev", a.hidden_t_prev)
  local cp = check.variable("lstm_unit", "cell_t_prev", a.cell_t_prev)
  local d = width_of("lstm_unit", "cell_t_prev", cp)
  local hw = width_of("lstm_unit", "hidden_t_prev", hp)
  if hw ~= d then
    raise(string.format("lstm_unit: 'hidden_t_prev' has width %d but 'cell_t_prev' %d", hw, d))
  end
  local layers = require("oar.layers")
  local helper = LayerHelper("lstm_unit", a)
  local concat = layers.concat{ input = { x, hp }, axis = 1 }
  local gates = layers.fc{ input = concat, size = 4 * d, param_attr = a.param_attr, bias_attr = a.bias_attr,
                           name = helper.name .. ".fc" }
  local dtype = x.dtype
  local c = helper:create_variable_for_type_inference(dtype)
  local h = helper:create_variable_for_type_inference(dtype)
  helper:append_op{ type = "lstm_unit", inputs = { X = { gates }, C_prev = { cp } }, outputs = { C = { c }, H = { h } },
    attrs = { forget_bias = check.number("lstm_unit", "forget_bias", a.forget_bias, 0.0) } }
  return h, c
end

local ACT_CODES = { identity = 0, sigmoid = 1, tanh = 2, relu = 3 }

--- One GRU step (Fluid's gru_unit). `input` is x already projected,
-- [N, size]; `size` is 3 times the hidden size, as in Fluid.
-- Activations are one of "sigmoid", "tanh", "relu", "identity".
-- @tparam table a keyword arguments:
-- @tparam Variable a.input [N, size]
-- @tparam Variable a.hidden the previous hidden state [N, size / 3]
-- @tparam int a.size 3 * hidden size
-- @tparam[opt] ParamAttr|string a.param_attr the weight's attributes, [hidden, 3 * hidden]
-- @tparam[opt] ParamAttr|string|false a.bias_attr the bias's attributes; `false`: no bias
-- @tparam[opt="tanh"] string a.activation
-- @tparam[opt="sigmoid"] string a.gate_activation
-- @tparam[opt=false] bool a.origin_mode
-- @tparam[opt] string a.name
-- @treturn Variable hidden [N, hidden]
-- @treturn Variable reset_hidden_prev [N, hidden]
-- @treturn Variable gate [N, 3 * hidden]
-- @raise when size is not a multiple of 3
-- @usage
-- local h = layers.gru_unit{input = layers.fc{input = x, size = 3 * 32}, hidden = h_prev, size = 3 * 32}
function M.gru_unit(a)
  a = args("gru_unit", a, nil, nil,
    "activation bias_attr gate_activation hidden input name origin_mode param_attr size")
  local input = check.variable("gru_unit", "input", a.input)
  local hidden_prev = check.variable("gru_unit", "hidden", a.hidden)
  local size = check.positive_int("gru_unit", "size", a.size)
  if size % 3 ~= 0 then check.fail("gru_unit", "size", "a multiple of 3 (3 * hidden size)", size) end
  local d = size / 3
  local act = check.string("gru_unit", "activation", a.activation, "tanh", ACTS)
  local gate = check.string("gru_unit", "gate_activation", a.gate_activation, "sigmoid", ACTS)
  local dtype = input.dtype or "float32"
  local helper = LayerHelper("gru_unit", a)
  local weight = helper:create_parameter(helper:param_attr(), { d, 3 * d }, dtype, false)
  local inputs = { Input = { input }, HiddenPrev = { hidden_prev }, Weight = { weight } }
  local battr = helper:bias_attr()
  if battr ~= false then inputs.Bias = { helper:create_parameter(battr, { 1, 3 * d }, dtype, true) } end
  local g = helper:create_variable_for_type_inference(dtype)
  local rhp = helper:create_variable_for_type_inference(dtype)
  local h = helper:create_variable_for_type_inference(dtype)
  helper:append_op{ type = "gru_unit", inputs = inputs,
    outputs = { Gate = { g }, ResetHiddenPrev = { rhp }, Hidden = { h } },
    attrs = { activation = ACT_CODES[act], gate_activation = ACT_CODES[gate],
              origin_mode = check.boolean("gru_unit", "origin_mode", a.origin_mode, false) } }
  return h, rhp, g
end

return M
