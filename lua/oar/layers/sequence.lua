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

--- sequence_pool{input=, pool_type=, is_test=false, pad_value=0.0, name=} or
-- sequence_pool(input, pool_type): one row per sequence of the last LoD level
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

--- sequence_first_step(input) / sequence_last_step(input)
function M.sequence_first_step(a)
  a = args("sequence_first_step", a, "input", nil, "input name")
  return M.sequence_pool{ input = check.variable("sequence_first_step", "input", a.input), pool_type = "first",
                          name = a.name }
end

function M.sequence_last_step(a)
  a = args("sequence_last_step", a, "input", nil, "input name")
  return M.sequence_pool{ input = check.variable("sequence_last_step", "input", a.input), pool_type = "last",
                          name = a.name }
end

--- sequence_softmax(input) or {input=, use_cudnn=false, name=}: softmax within
-- each sequence of a [N, 1] (or [N]) input
function M.sequence_softmax(a)
  a = args("sequence_softmax", a, "input", nil, "input name use_cudnn x")
  local input = check.variable("sequence_softmax", "input", a.input or a.x)
  local helper = LayerHelper("sequence_softmax", a)
  return helper:unary("sequence_softmax", input,
    { use_cudnn = check.boolean("sequence_softmax", "use_cudnn", a.use_cudnn, false) })
end

--- sequence_expand{x=, y=, ref_level=-1, name=} or sequence_expand(x, y, ref_level)
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

--- sequence_conv{input=, num_filters=, filter_size=3, filter_stride=1,
-- padding=true, padding_start=-(filter_size // 2), param_attr=, bias_attr=, act=, name=}
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

--- dynamic_lstm{input=, size=, h_0=, c_0=, param_attr=, bias_attr=,
-- use_peepholes=true, is_reverse=false, gate_activation="sigmoid",
-- cell_activation="tanh", candidate_activation="tanh", dtype="float32", name=}
-- -> hidden, cell. `input` [T, size] is x already projected (an fc of size
-- `size`); size = 4 * the hidden size, as in Fluid.
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

--- dynamic_gru{input=, size=, param_attr=, bias_attr=, is_reverse=false,
-- gate_activation="sigmoid", candidate_activation="tanh", h_0=,
-- origin_mode=false, name=} -> hidden. `input` is [T, 3 * size] (projected);
-- size is the hidden size, as in Fluid.
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

--- lstm_unit{x_t=, hidden_t_prev=, cell_t_prev=, forget_bias=0, param_attr=,
-- bias_attr=, name=} -> hidden, cell: one LSTM step, its gates an fc of
-- [x_t, hidden_t_prev] (Fluid's lstm_unit layer)
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

--- gru_unit{input=, hidden=, size=, param_attr=, bias_attr=, activation="tanh",
-- gate_activation="sigmoid", origin_mode=false, name=} -> hidden,
-- reset_hidden_prev, gate. `input` is [N, size] (projected), size = 3 * hidden.
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
