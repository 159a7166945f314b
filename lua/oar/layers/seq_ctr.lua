--- oar.layers.seq_ctr: Fluid 1.8's remaining sequence, CTR and SelectedRows
-- layers (add_position_encoding, row_conv, npair_loss and the layers of
-- issue 22 that follow them). Merged into oar.layers.
--
--   local pe = layers.add_position_encoding{input = emb, alpha = 1, beta = 1}
--   local la = layers.row_conv{input = h, future_context_size = 2}
--
-- @module oar.layers.seq_ctr
local LayerHelper = require("oar.layer_helper")

local framework = require("oar.framework")

local check, args = LayerHelper.check, LayerHelper.args
local raise = framework.raise

local M = {}

--- Adds sinusoidal position encodings: `out = alpha * input + beta * PE`,
-- PE[j, k] = sin(j / 10000^(k / (half - 1))) and PE[j, half + k] the cosine,
-- for the j-th row of a sequence and half = D / 2.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input [batch, max_len, D] or a LoD tensor [N, D] (one level); D even
-- @tparam number a.alpha the factor of the input
-- @tparam number a.beta the factor of the encoding
-- @tparam[opt] string a.name
-- @treturn Variable input's shape, dtype and LoD
-- @usage local pe = layers.add_position_encoding{input = emb, alpha = 1.0, beta = 1.0}
function M.add_position_encoding(a)
  a = args("add_position_encoding", a, nil, nil, "alpha beta input name")
  local input = check.variable("add_position_encoding", "input", a.input)
  local helper = LayerHelper("add_position_encoding", a)
  local out = helper:create_variable_for_type_inference(input.dtype)
  helper:append_op{ type = "add_position_encoding", inputs = { X = { input } }, outputs = { Out = { out } },
    attrs = { alpha = check.number("add_position_encoding", "alpha", a.alpha),
              beta = check.number("add_position_encoding", "beta", a.beta) } }
  return out
end

--- Lookahead (row) convolution of DeepSpeech2: `out[t] = sum over w <=
-- future_context_size of input[t + w] * filter[w]` (elementwise, inside each
-- sequence), with a learned filter [future_context_size + 1, D].
-- @tparam table a keyword arguments:
-- @tparam Variable a.input a LoD tensor [N, D], or [batch, T, D]
-- @tparam int a.future_context_size the rows ahead each output sees
-- @tparam[opt] ParamAttr|string a.param_attr the filter's attributes
-- @tparam[opt] string a.act an activation applied to the result
-- @treturn Variable input's shape and LoD
-- @usage local out = layers.row_conv{input = h, future_context_size = 2, act = "relu"}
function M.row_conv(a)
  a = args("row_conv", a, nil, nil, "act future_context_size input name param_attr")
  local input = check.variable("row_conv", "input", a.input)
  local fc = check.int("row_conv", "future_context_size", a.future_context_size)
  if fc < 0 then check.fail("row_conv", "future_context_size", "an int >= 0", fc) end
  local shape = input.shape
  local d = shape[#shape]
  if not d or d < 1 then check.fail("row_conv", "input", "a known last dim", input.name) end
  local helper = LayerHelper("row_conv", a)
  local filter = helper:create_parameter(helper:param_attr(), { fc + 1, d }, input.dtype, false)
  local out = helper:create_variable_for_type_inference(input.dtype)
  helper:append_op{ type = "row_conv", inputs = { X = { input }, Filter = { filter } }, outputs = { Out = { out } } }
  return helper:append_activation(out)
end

--- The N-pair loss (Sohn, NIPS 2016), composed of ops as Fluid's loss.py
-- does: `0.25 * l2_reg * (mean |anchor_i|^2 + mean |positive_i|^2)` plus
-- the mean soft-label cross entropy of the rows of `anchor positive^T`
-- against the row-normalized matrix `labels_i == labels_j`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.anchor [batch, dim]
-- @tparam Variable a.positive [batch, dim]
-- @tparam Variable a.labels [batch] (or [batch, 1]); a known batch size
-- @tparam[opt=0.002] number a.l2_reg the factor of the L2 term
-- @treturn Variable the loss, [1]
-- @usage local loss = layers.npair_loss{anchor = a, positive = p, labels = y}
function M.npair_loss(a)
  a = args("npair_loss", a, nil, nil, "anchor l2_reg labels positive")
  local layers = require("oar.layers")
  local anchor = check.variable("npair_loss", "anchor", a.anchor)
  local positive = check.variable("npair_loss", "positive", a.positive)
  local labels = check.variable("npair_loss", "labels", a.labels)
  local l2_reg = check.number("npair_loss", "l2_reg", a.l2_reg, 0.002)
  local batch = labels.shape[1]
  if not batch or batch < 1 then
    check.fail("npair_loss", "labels", "a known batch size (its first dim)", labels.name)
  end
  local lab = layers.reshape{ x = labels, shape = { batch, 1 } }
  lab = layers.expand{ x = lab, expand_times = { 1, batch } }
  lab = layers.equal(lab, layers.transpose{ x = lab, perm = { 1, 0 } })
  lab = layers.cast{ x = lab, dtype = anchor.dtype }
  lab = layers.elementwise_div(lab, layers.reduce_sum{ input = lab, dim = 1, keep_dim = true })
  local l2 = layers.elementwise_add(
    layers.reduce_mean{ input = layers.reduce_sum{ input = layers.square(anchor), dim = 1 } },
    layers.reduce_mean{ input = layers.reduce_sum{ input = layers.square(positive), dim = 1 } })
  l2 = layers.scale{ x = l2, scale = 0.25 * l2_reg }
  local sim = layers.matmul{ x = anchor, y = positive, transpose_x = false, transpose_y = true }
  local ce = layers.softmax_with_cross_entropy{ logits = sim, label = lab, soft_label = true }
  local ce_sum = layers.reduce_sum{ input = layers.elementwise_mul(lab, ce), dim = 0 }
  return layers.elementwise_add(l2, layers.reduce_mean{ input = ce_sum })
end

-- a SelectedRows variable, or an error naming the layer
local function selected_rows(layer, v)
  check.variable(layer, "x", v)
  if v.type ~= "selected_rows" then
    raise(string.format("%s: 'x' ('%s') must be a SelectedRows variable, got a %s", layer, v.name, tostring(v.type)))
  end
  return v
end

--- Merges the rows of a SelectedRows that share an index (summing their
-- values); the result's rows are the distinct indices, ascending.
-- @tparam table|Variable a `{x =, name =}` or the SelectedRows itself
-- @treturn Variable a SelectedRows of x's height
-- @raise when x is not a SelectedRows
-- @usage local merged = layers.merge_selected_rows(grad)
function M.merge_selected_rows(a)
  a = args("merge_selected_rows", a, "x", nil, "name x")
  local x = selected_rows("merge_selected_rows", a.x)
  local helper = LayerHelper("merge_selected_rows", a)
  local out = helper:create_variable_for_type_inference(x.dtype)   -- typed SELECTED_ROWS by the op
  helper:append_op{ type = "merge_selected_rows", inputs = { X = { x } }, outputs = { Out = { out } } }
  return out
end

--- The value tensor of a SelectedRows, [its row count, ...], as a LoD tensor.
-- @tparam table|Variable a `{x =, name =}` or the SelectedRows itself
-- @treturn Variable a LoD tensor
-- @raise when x is not a SelectedRows
-- @usage local dense_rows = layers.get_tensor_from_selected_rows(grad)
function M.get_tensor_from_selected_rows(a)
  a = args("get_tensor_from_selected_rows", a, "x", nil, "name x")
  local x = selected_rows("get_tensor_from_selected_rows", a.x)
  local helper = LayerHelper("get_tensor_from_selected_rows", a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = "get_tensor_from_selected_rows", inputs = { X = { x } }, outputs = { Out = { out } } }
  return out
end

--- The continuous value model of CTR embeddings: each row of `input`
-- starts with show and click; with use_cvm they become log(show + 1) and
-- log(click + 1) - log(show + 1), without it they are dropped.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input [N, D] (D >= 2), a LoD tensor or not
-- @tparam Variable a.cvm [batch, 2]: show and click (what the gradient feeds back)
-- @tparam[opt=true] bool a.use_cvm keep the two columns (transformed)
-- @treturn Variable [N, D] with use_cvm, else [N, D - 2]
-- @usage local y = layers.continuous_value_model{input = emb, cvm = show_click}
function M.continuous_value_model(a)
  a = args("continuous_value_model", a, nil, nil, "cvm input use_cvm")
  local input = check.variable("continuous_value_model", "input", a.input)
  local cvm = check.variable("continuous_value_model", "cvm", a.cvm)
  local helper = LayerHelper("cvm", a)
  local out = helper:create_variable_for_type_inference(input.dtype)
  helper:append_op{ type = "cvm", inputs = { X = { input }, CVM = { cvm } }, outputs = { Y = { out } },
    attrs = { use_cvm = check.boolean("continuous_value_model", "use_cvm", a.use_cvm, true) } }
  return out
end

--- Keeps the instances of `ins` that carry one of the tags in `filter_tag`
-- (Fluid's filter_by_instag): instance i is sequence i of ins (is_lod) or
-- row i, and its tags are sequence i of ins_tag.
-- @tparam table a keyword arguments:
-- @tparam Variable a.ins [N, D], a LoD tensor when is_lod
-- @tparam Variable a.ins_tag int64 [T, 1] with one LoD level: each instance's tags
-- @tparam Variable a.filter_tag int64 [F]: the tags kept
-- @tparam bool a.is_lod whether ins has a LoD
-- @tparam[opt=0] int a.out_val_if_empty the value of the one row returned when nothing is kept
-- @treturn Variable Out, the kept rows (one sequence per instance)
-- @treturn Variable LossWeight, float32 [kept, 1]: ones (a zero when nothing is kept)
-- @usage local out, w = layers.filter_by_instag{ins = emb, ins_tag = tags, filter_tag = keep, is_lod = true}
function M.filter_by_instag(a)
  a = args("filter_by_instag", a, nil, nil, "filter_tag ins ins_tag is_lod out_val_if_empty")
  local ins = check.variable("filter_by_instag", "ins", a.ins)
  local tag = check.variable("filter_by_instag", "ins_tag", a.ins_tag)
  local filt = check.variable("filter_by_instag", "filter_tag", a.filter_tag)
  local helper = LayerHelper("filter_by_instag", a)
  local out = helper:create_variable_for_type_inference(ins.dtype)
  local lw = helper:create_variable_for_type_inference("float32")
  local map = helper:create_variable_for_type_inference("int64")
  helper:append_op{ type = "filter_by_instag", inputs = { Ins = { ins }, Ins_tag = { tag }, Filter_tag = { filt } },
    outputs = { Out = { out }, LossWeight = { lw }, IndexMap = { map } },
    attrs = { is_lod = check.boolean("filter_by_instag", "is_lod", a.is_lod),
              out_val_if_empty = check.int("filter_by_instag", "out_val_if_empty", a.out_val_if_empty, 0) } }
  lw.stop_gradient = true
  return out, lw
end

local ACTS = { "sigmoid", "tanh", "relu", "identity" }

-- an optional initial state: a Variable of shape [N, width]
local function init_state(key, v, width)
  if v == nil then return nil end
  check.variable("dynamic_lstmp", key, v)
  local shape = v.shape
  if #shape ~= 2 or (shape[2] > 0 and shape[2] ~= width) then
    raise(string.format("dynamic_lstmp: '%s' ('%s') must be [N, %d] (one row per sequence), got shape %s",
      key, v.name, width, framework.shape_text(shape)))
  end
  return v
end

--- An LSTM with a recurrent projection layer over each sequence of a LoD
-- batch (Fluid's dynamic_lstmp): the recurrence reads the projection
-- `r_t = act_proj(h_t proj_weight)` (width proj_size) instead of h_t.
-- `input` is x already projected (an fc of width `size`); `size` is 4 times
-- the hidden size, as in Fluid. The weight is [proj_size, 4 * hidden], the
-- projection weight [hidden, proj_size] (both take param_attr), the bias
-- [1, 4 * hidden], or [1, 7 * hidden] with peepholes.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input a LoD tensor [T, size]
-- @tparam int a.size 4 * hidden size (a multiple of 4, equal to input's width)
-- @tparam int a.proj_size the projection's width P
-- @tparam[opt] ParamAttr|string a.param_attr the weights' attributes
-- @tparam[opt] ParamAttr|string|false a.bias_attr the bias's attributes; `false`: no bias (and no peepholes)
-- @tparam[opt=true] bool a.use_peepholes
-- @tparam[opt=false] bool a.is_reverse run each sequence from its end
-- @tparam[opt="sigmoid"] string a.gate_activation
-- @tparam[opt="tanh"] string a.cell_activation
-- @tparam[opt="tanh"] string a.candidate_activation
-- @tparam[opt="tanh"] string a.proj_activation
-- @tparam[opt="float32"] string a.dtype
-- @tparam[opt] string a.name
-- @tparam[opt] Variable a.h_0 initial projection [number of sequences, proj_size]
-- @tparam[opt] Variable a.c_0 initial cell [number of sequences, hidden]
-- @tparam[opt] number a.cell_clip clip the cell to [-cell_clip, cell_clip] (nil: no clip)
-- @tparam[opt] number a.proj_clip clip the projection to [-proj_clip, proj_clip] (nil: no clip)
-- @treturn Variable projection, [T, proj_size] with the input's LoD
-- @treturn Variable cell, [T, hidden]
-- @raise when size is not a multiple of 4 or differs from input's width
-- @usage
-- local proj = layers.fc{input = emb, size = 4 * 512}
-- local r, c = layers.dynamic_lstmp{input = proj, size = 4 * 512, proj_size = 256}
function M.dynamic_lstmp(a)
  a = args("dynamic_lstmp", a, nil, nil, "bias_attr c_0 candidate_activation cell_activation cell_clip dtype " ..
    "gate_activation h_0 input is_reverse name param_attr proj_activation proj_clip proj_size size use_peepholes")
  local input = check.variable("dynamic_lstmp", "input", a.input)
  local size = check.positive_int("dynamic_lstmp", "size", a.size)
  if size % 4 ~= 0 then check.fail("dynamic_lstmp", "size", "a multiple of 4 (4 * hidden size)", size) end
  local proj_size = check.positive_int("dynamic_lstmp", "proj_size", a.proj_size)
  local shape = input.shape
  if #shape ~= 2 or shape[2] ~= size then
    raise(string.format("dynamic_lstmp: 'input' ('%s') has shape %s but size is %d; project it with fc{size = %d} first",
      input.name, framework.shape_text(shape), size, size))
  end
  local hidden = size / 4
  local peep = check.boolean("dynamic_lstmp", "use_peepholes", a.use_peepholes, true)
  local dtype = check.dtype("dynamic_lstmp", "dtype", a.dtype, "float32")
  local helper = LayerHelper("lstmp", a)
  local weight = helper:create_parameter(helper:param_attr(), { proj_size, 4 * hidden }, dtype, false)
  local proj_weight = helper:create_parameter(helper:param_attr(), { hidden, proj_size }, dtype, false)
  local inputs = { Input = { input }, Weight = { weight }, ProjWeight = { proj_weight } }
  local battr = helper:bias_attr()
  if battr ~= false then
    inputs.Bias = { helper:create_parameter(battr, { 1, (peep and 7 or 4) * hidden }, dtype, true) }
  end
  local h0 = init_state("h_0", a.h_0, proj_size)
  local c0 = init_state("c_0", a.c_0, hidden)
  if h0 then inputs.H0 = { h0 } end
  if c0 then inputs.C0 = { c0 } end
  local proj = helper:create_variable_for_type_inference(dtype)
  local cell = helper:create_variable_for_type_inference(dtype)
  local outs = { Projection = { proj }, Cell = { cell } }
  for _, slot in ipairs({ "BatchGate", "BatchCellPreAct", "BatchHidden" }) do
    outs[slot] = { helper:create_variable_for_type_inference(dtype) }
  end
  local attrs = {
    use_peepholes = peep and battr ~= false,
    is_reverse = check.boolean("dynamic_lstmp", "is_reverse", a.is_reverse, false),
    gate_activation = check.string("dynamic_lstmp", "gate_activation", a.gate_activation, "sigmoid", ACTS),
    cell_activation = check.string("dynamic_lstmp", "cell_activation", a.cell_activation, "tanh", ACTS),
    candidate_activation = check.string("dynamic_lstmp", "candidate_activation", a.candidate_activation, "tanh", ACTS),
    proj_activation = check.string("dynamic_lstmp", "proj_activation", a.proj_activation, "tanh", ACTS),
    cell_clip = a.cell_clip == nil and 0 or check.number("dynamic_lstmp", "cell_clip", a.cell_clip),
    proj_clip = a.proj_clip == nil and 0 or check.number("dynamic_lstmp", "proj_clip", a.proj_clip),
  }
  helper:append_op{ type = "lstmp", inputs = inputs, outputs = outs, attrs = attrs }
  return proj, cell
end

return M
