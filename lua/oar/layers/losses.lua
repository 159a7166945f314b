--- oar.layers.losses: Fluid 1.8's smaller losses (smooth_l1, huber_loss,
-- log_loss, kldiv_loss, margin_rank_loss, rank_loss, label_smooth, bpr_loss,
-- mse_loss, dice_loss) and layers for the loss ops Fluid 1.8 has no layer
-- for (hinge_loss, modified_huber_loss, bce_loss, nll_loss, cross_entropy2).
-- @module oar.layers.losses
local LayerHelper = require("oar.layer_helper")
local framework = require("oar.framework")

local check, args = LayerHelper.check, LayerHelper.args

local M = {}

-- `a` as keywords, or positional (k1, k2[, k3]) values
local function kw(layer, a, keys, rest, known)
  if framework.is_variable(a) then
    local t = { [keys[1]] = a }
    for i = 2, #keys do t[keys[i]] = rest[i - 1] end
    a = t
  end
  return args(layer, a, nil, nil, known)
end

-- appends `op` with `inputs` (slot -> Variable or nil), one output per name
-- in `outs` (the first returned), attrs; outputs take `dtype`
local function loss_op(layer, a, op, inputs, outs, attrs, dtype)
  local helper = LayerHelper(layer, a)
  local ins, outputs, made = {}, {}, {}
  for slot, v in pairs(inputs) do ins[slot] = { v } end
  for i, slot in ipairs(outs) do
    made[i] = helper:create_variable_for_type_inference(dtype)
    outputs[slot] = { made[i] }
  end
  helper:append_op{ type = op, inputs = ins, outputs = outputs, attrs = attrs }
  return made[1], made
end

--- Smooth L1 loss per row: the sum over each row of
-- `outside_weight * (0.5 (sigma d)^2 if |d| < 1/sigma^2 else |d| - 0.5/sigma^2)`,
-- d = `inside_weight * (x - y)`. Also `smooth_l1(x, y)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x the prediction, rank >= 2
-- @tparam Variable a.y the target, x's shape
-- @tparam[opt] Variable a.inside_weight x's shape (with outside_weight)
-- @tparam[opt] Variable a.outside_weight x's shape (with inside_weight)
-- @tparam[opt=1.0] number a.sigma
-- @tparam[opt] string a.name
-- @tparam[opt] Variable y with a positional x
-- @treturn Variable [N, 1]
-- @usage local loss = layers.mean(layers.smooth_l1{x = pred, y = target})
function M.smooth_l1(a, y)
  local who = "smooth_l1"
  a = kw(who, a, { "x", "y" }, { y }, "x y inside_weight outside_weight sigma name")
  local x = check.variable(who, "x", a.x)
  return loss_op(who, a, "smooth_l1_loss",
    { X = x, Y = check.variable(who, "y", a.y),
      InsideWeight = check.opt_variable(who, "inside_weight", a.inside_weight),
      OutsideWeight = check.opt_variable(who, "outside_weight", a.outside_weight) },
    { "Out", "Diff" }, { sigma = check.number(who, "sigma", a.sigma, 1.0) }, x.dtype)
end

--- Huber loss, elementwise: `0.5 r^2` where `|r| <= delta`, else
-- `delta (|r| - 0.5 delta)`, r = label - input. Also `huber_loss(input, label, delta)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input the prediction
-- @tparam Variable a.label the target, input's shape
-- @tparam number a.delta
-- @tparam[opt] string a.name
-- @tparam[opt] Variable label with a positional input
-- @tparam[opt] number delta with a positional input
-- @treturn Variable input's shape
-- @usage local loss = layers.mean(layers.huber_loss{input = pred, label = y, delta = 1.0})
function M.huber_loss(a, label, delta)
  local who = "huber_loss"
  a = kw(who, a, { "input", "label", "delta" }, { label, delta }, "input label delta name")
  local x = check.variable(who, "input", a.input)
  return loss_op(who, a, "huber_loss", { X = x, Y = check.variable(who, "label", a.label) },
    { "Out", "Residual" }, { delta = check.number(who, "delta", a.delta) }, x.dtype)
end

--- Log loss of probabilities: `-label log(input + eps) - (1 - label) log(1 - input + eps)`.
-- Also `log_loss(input, label)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input probabilities [N, 1]
-- @tparam Variable a.label targets [N, 1]
-- @tparam[opt=1e-4] number a.epsilon
-- @tparam[opt] string a.name
-- @tparam[opt] Variable label with a positional input
-- @treturn Variable [N, 1]
-- @usage local loss = layers.log_loss{input = layers.sigmoid(logit), label = y}
function M.log_loss(a, label)
  local who = "log_loss"
  a = kw(who, a, { "input", "label" }, { label }, "input label epsilon name")
  local x = check.variable(who, "input", a.input)
  return loss_op(who, a, "log_loss", { Predicted = x, Labels = check.variable(who, "label", a.label) },
    { "Loss" }, { epsilon = check.number(who, "epsilon", a.epsilon, 1e-4) }, x.dtype)
end

--- Kullback-Leibler divergence `target (log target - x)` (x holds
-- log-probabilities), reduced. Also `kldiv_loss(x, target)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x log-probabilities
-- @tparam Variable a.target probabilities, x's shape
-- @tparam[opt="mean"] string a.reduction "none", "batchmean", "mean" or "sum"
-- @tparam[opt] string a.name
-- @tparam[opt] Variable target with a positional x
-- @treturn Variable x's shape for "none", else [1]
-- @usage local loss = layers.kldiv_loss{x = logp, target = q, reduction = "batchmean"}
function M.kldiv_loss(a, target)
  local who = "kldiv_loss"
  a = kw(who, a, { "x", "target" }, { target }, "x target reduction name")
  local x = check.variable(who, "x", a.x)
  return loss_op(who, a, "kldiv_loss", { X = x, Target = check.variable(who, "target", a.target) },
    { "Loss" }, { reduction = check.string(who, "reduction", a.reduction, "mean",
                                            { "none", "batchmean", "mean", "sum" }) }, x.dtype)
end

--- Margin ranking loss `max(0, -label (left - right) + margin)`.
-- Also `margin_rank_loss(label, left, right)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.label 1 or -1, [N, 1]
-- @tparam Variable a.left [N, 1]
-- @tparam Variable a.right [N, 1]
-- @tparam[opt=0.1] number a.margin
-- @tparam[opt] string a.name
-- @tparam[opt] Variable left with a positional label
-- @tparam[opt] Variable right with a positional label
-- @treturn Variable [N, 1]
-- @usage local loss = layers.margin_rank_loss{label = l, left = s1, right = s2, margin = 0.1}
function M.margin_rank_loss(a, left, right)
  local who = "margin_rank_loss"
  a = kw(who, a, { "label", "left", "right" }, { left, right }, "label left right margin name")
  local l = check.variable(who, "left", a.left)
  return loss_op(who, a, "margin_rank_loss",
    { Label = check.variable(who, "label", a.label), X1 = l, X2 = check.variable(who, "right", a.right) },
    { "Out", "Activated" }, { margin = check.number(who, "margin", a.margin, 0.1) }, l.dtype)
end

--- RankNet's pairwise loss `log(1 + e^(left - right)) - label (left - right)`.
-- Also `rank_loss(label, left, right)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.label [N, 1]
-- @tparam Variable a.left [N, 1]
-- @tparam Variable a.right [N, 1]
-- @tparam[opt] string a.name
-- @tparam[opt] Variable left with a positional label
-- @tparam[opt] Variable right with a positional label
-- @treturn Variable [N, 1]
-- @usage local loss = layers.rank_loss{label = l, left = s1, right = s2}
function M.rank_loss(a, left, right)
  local who = "rank_loss"
  a = kw(who, a, { "label", "left", "right" }, { left, right }, "label left right name")
  local l = check.variable(who, "left", a.left)
  return loss_op(who, a, "rank_loss",
    { Label = check.variable(who, "label", a.label), Left = l, Right = check.variable(who, "right", a.right) },
    { "Out" }, nil, l.dtype)
end

--- Label smoothing `(1 - epsilon) label + epsilon prior` (a uniform prior
-- when prior_dist is nil). Also `label_smooth(label)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.label one-hot labels [..., C]
-- @tparam[opt] Variable a.prior_dist [1, C]
-- @tparam[opt=0.1] number a.epsilon in [0, 1]
-- @tparam[opt="float32"] string a.dtype
-- @tparam[opt] string a.name
-- @treturn Variable label's shape
-- @usage local soft = layers.label_smooth{label = layers.one_hot(y, 10), epsilon = 0.1}
function M.label_smooth(a)
  local who = "label_smooth"
  a = args(who, a, "label", nil, "label prior_dist epsilon dtype name")
  local x = check.variable(who, "label", a.label)
  local eps = check.number(who, "epsilon", a.epsilon, 0.1)
  if eps < 0 or eps > 1 then check.fail(who, "epsilon", "a number in [0, 1]", eps) end
  return loss_op(who, a, "label_smooth",
    { X = x, PriorDist = check.opt_variable(who, "prior_dist", a.prior_dist) },
    { "Out" }, { epsilon = eps }, check.dtype(who, "dtype", a.dtype, "float32"))
end

-- a loss of (input, label) with no attributes: `op` reads them as slots
-- `xslot` and `yslot` and writes `outs` (the first is returned first)
local function pair_loss(who, a, label, xslot, yslot, outs)
  a = kw(who, a, { "input", "label" }, { label }, "input label name")
  local x = check.variable(who, "input", a.input)
  return loss_op(who, a, who, { [xslot] = x, [yslot] = check.variable(who, "label", a.label) }, outs, nil, x.dtype)
end

--- Bayesian personalized ranking loss per row: the mean over the negative
-- classes of `-log sigmoid(input[label] - input[j])`. Also `bpr_loss(input, label)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input scores [N, C]
-- @tparam Variable a.label int64 [N, 1], the positive class
-- @tparam[opt] string a.name
-- @tparam[opt] Variable label with a positional input
-- @treturn Variable [N, 1]
-- @usage local loss = layers.mean(layers.bpr_loss{input = scores, label = pos})
function M.bpr_loss(a, label) return pair_loss("bpr_loss", a, label, "X", "Label", { "Y" }) end

--- Hinge loss `max(0, 1 - input (2 label - 1))` of labels 0/1 (op
-- hinge_loss; no Fluid 1.8 layer). Also `hinge_loss(input, label)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input scores [N, 1]
-- @tparam Variable a.label 0 or 1, [N, 1]
-- @tparam[opt] string a.name
-- @tparam[opt] Variable label with a positional input
-- @treturn Variable [N, 1]
-- @usage local loss = layers.mean(layers.hinge_loss{input = s, label = y})
function M.hinge_loss(a, label) return pair_loss("hinge_loss", a, label, "Logits", "Labels", { "Loss" }) end

--- Modified Huber loss of labels 0/1 (op modified_huber_loss; no Fluid 1.8
-- layer): v = input (2 label - 1); `-4 v` for v < -1, `(1 - v)^2` for v < 1,
-- else 0. Also `modified_huber_loss(input, label)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input scores [N, 1]
-- @tparam Variable a.label 0 or 1, [N, 1]
-- @tparam[opt] string a.name
-- @tparam[opt] Variable label with a positional input
-- @treturn Variable [N, 1]
-- @usage local loss = layers.mean(layers.modified_huber_loss{input = s, label = y})
function M.modified_huber_loss(a, label)
  return pair_loss("modified_huber_loss", a, label, "X", "Y", { "Out", "IntermediateVal" })
end

--- Binary cross entropy of probabilities, elementwise (op bce_loss; Paddle
-- 2.x reaches it through binary_cross_entropy). Also `bce_loss(input, label)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input probabilities in [0, 1]
-- @tparam Variable a.label targets, input's shape
-- @tparam[opt] string a.name
-- @tparam[opt] Variable label with a positional input
-- @treturn Variable input's shape
-- @usage local loss = layers.mean(layers.bce_loss{input = layers.sigmoid(z), label = y})
function M.bce_loss(a, label) return pair_loss("bce_loss", a, label, "X", "Label", { "Out" }) end

--- Negative log likelihood of log-probabilities against class ids (Paddle
-- 2.x's nll_loss). Also `nll_loss(input, label)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input log-probabilities [N, C] or [N, C, H, W]
-- @tparam Variable a.label int64 [N] or [N, H, W]
-- @tparam[opt] Variable a.weight a weight per class [C]
-- @tparam[opt=-100] int a.ignore_index
-- @tparam[opt="mean"] string a.reduction "none", "mean" or "sum"
-- @tparam[opt] string a.name
-- @tparam[opt] Variable label with a positional input
-- @treturn Variable label's shape for "none", else [1]
-- @usage local loss = layers.nll_loss{input = layers.log(prob), label = y}
function M.nll_loss(a, label)
  local who = "nll_loss"
  a = kw(who, a, { "input", "label" }, { label }, "input label weight ignore_index reduction name")
  local x = check.variable(who, "input", a.input)
  return loss_op(who, a, "nll_loss",
    { X = x, Label = check.variable(who, "label", a.label), Weight = check.opt_variable(who, "weight", a.weight) },
    { "Out", "Total_weight" },
    { ignore_index = check.int(who, "ignore_index", a.ignore_index, -100),
      reduction = check.string(who, "reduction", a.reduction, "mean", { "none", "mean", "sum" }) }, x.dtype)
end

--- Hard-label cross entropy through Fluid 1.8's cross_entropy2 op (what
-- fluid.layers.cross_entropy appends for hard labels). Also `cross_entropy2(input, label)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input probabilities [..., C]
-- @tparam Variable a.label int64 [..., 1]
-- @tparam[opt=-100] int a.ignore_index
-- @tparam[opt] string a.name
-- @tparam[opt] Variable label with a positional input
-- @treturn Variable [..., 1]
-- @usage local loss = layers.mean(layers.cross_entropy2{input = prob, label = y})
function M.cross_entropy2(a, label)
  local who = "cross_entropy2"
  a = kw(who, a, { "input", "label" }, { label }, "input label ignore_index name")
  local x = check.variable(who, "input", a.input)
  return loss_op(who, a, "cross_entropy2", { X = x, Label = check.variable(who, "label", a.label) },
    { "Y", "XShape", "MatchX" }, { ignore_index = check.int(who, "ignore_index", a.ignore_index, -100) }, x.dtype)
end

--- Mean squared error: `reduce_mean(square_error_cost(input, label))`, as
-- Fluid builds it. Also `mse_loss(input, label)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input the prediction
-- @tparam Variable a.label the target, input's shape
-- @tparam[opt] string a.name
-- @tparam[opt] Variable label with a positional input
-- @treturn Variable [1]
-- @usage local loss = layers.mse_loss{input = pred, label = y}
function M.mse_loss(a, label)
  local who = "mse_loss"
  a = kw(who, a, { "input", "label" }, { label }, "input label name")
  local L = require("oar.layers")
  local cost = L.square_error_cost{ input = check.variable(who, "input", a.input),
                                    label = check.variable(who, "label", a.label) }
  return L.reduce_mean{ input = cost, name = a.name }
end

--- Dice loss `1 - 2 |input . onehot(label)| / (|input| + |onehot(label)| + epsilon)`
-- per sample, averaged, as Fluid builds it from one_hot and reductions.
-- Also `dice_loss(input, label)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input probabilities [N, ..., C]
-- @tparam Variable a.label int64 class ids [N, ..., 1]
-- @tparam[opt=1e-5] number a.epsilon
-- @tparam[opt] string a.name
-- @tparam[opt] Variable label with a positional input
-- @treturn Variable [1]
-- @usage local loss = layers.dice_loss{input = layers.softmax(logits), label = y}
function M.dice_loss(a, label)
  local who = "dice_loss"
  a = kw(who, a, { "input", "label" }, { label }, "input label epsilon name")
  local L = require("oar.layers")
  local x = check.variable(who, "input", a.input)
  local lbl = check.variable(who, "label", a.label)
  local eps = check.number(who, "epsilon", a.epsilon, 1e-5)
  local shape = x.shape
  if not shape or #shape < 2 or not shape[#shape] or shape[#shape] <= 0 then
    check.fail(who, "input", "a Variable of rank >= 2 with a known last dimension", x)
  end
  local onehot = L.one_hot{ input = lbl, depth = shape[#shape] }
  if x.dtype ~= onehot.dtype then onehot = L.cast(onehot, x.dtype) end
  local dims = {}
  for i = 1, #shape - 1 do dims[i] = i end
  local inse = L.reduce_sum{ input = L.elementwise_mul{ x = x, y = onehot }, dim = dims }
  local denom = L.elementwise_add{ x = L.reduce_sum{ input = x, dim = dims },
                                   y = L.reduce_sum{ input = onehot, dim = dims } }
  -- 1 - 2 inse / (denom + eps)
  local score = L.scale{ x = L.elementwise_div{ x = inse, y = L.scale{ x = denom, bias = eps } }, scale = -2, bias = 1 }
  return L.reduce_mean{ input = score, name = a.name }
end

return M
