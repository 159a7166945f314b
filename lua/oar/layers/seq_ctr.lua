--- oar.layers.seq_ctr: Fluid 1.8's remaining sequence, CTR and SelectedRows
-- layers (add_position_encoding, row_conv, npair_loss and the layers of
-- issue 22 that follow them). Merged into oar.layers.
--
--   local pe = layers.add_position_encoding{input = emb, alpha = 1, beta = 1}
--   local la = layers.row_conv{input = h, future_context_size = 2}
--
-- @module oar.layers.seq_ctr
local LayerHelper = require("oar.layer_helper")

local check, args = LayerHelper.check, LayerHelper.args

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

return M
