--- oar.layers.sampling: losses for large output vocabularies (Fluid 1.8's
-- nce, hsigmoid and sampled_softmax_with_cross_entropy), and two more of
-- Fluid 1.8's losses.py: center_loss and teacher_student_sigmoid_loss.
-- Merged into oar.layers.
--
--   local cost = layers.nce{input = h, label = next_word, num_total_classes = vocab,
--                           num_neg_samples = 5, sampler = "log_uniform"}
--   local cost = layers.hsigmoid{input = h, label = next_word, num_classes = vocab}
--   local loss = layers.sampled_softmax_with_cross_entropy{logits = logits, label = label, num_samples = 20}
-- @module oar.layers.sampling
local LayerHelper = require("oar.layer_helper")
local framework = require("oar.framework")

local check, args = LayerHelper.check, LayerHelper.args
local raise = framework.raise

local M = {}

-- the second dim of a 2-D variable, which must be known
local function width(layer, key, v)
  local s = v.shape
  if #s ~= 2 or s[2] == nil or s[2] <= 0 then
    raise(string.format("layers.%s: '%s' ('%s') must be 2-D with a known second dim, got shape %s", layer, key,
      v.name, framework.shape_text(s)))
  end
  return s[2]
end

local SAMPLERS = { uniform = 0, log_uniform = 1, custom_dist = 2 }

-- Walker's alias tables for the distribution p (a list summing to 1), as
-- Fluid's nce layer builds them: each class keeps probability n p[i] of its
-- own slot; the rest of a slot goes to an alias whose slot was too full.
-- Classes that neither overflow nor underflow keep their slot (alias -1).
local function alias_tables(p)
  local n = #p
  local keep, alias, over, under = {}, {}, {}, {}
  for i = 1, n do
    keep[i], alias[i] = 1.0, -1
    local q = p[i] * n
    if q > 1 then over[#over + 1] = { i, q }
    elseif q < 1 then under[#under + 1] = { i, q }
    else keep[i] = q end
  end
  while #over > 0 and #under > 0 do
    local big, small = table.remove(over, 1), table.remove(under, 1)
    keep[small[1]], alias[small[1]] = small[2], big[1] - 1
    local left = big[2] + small[2] - 1
    if left > 1 then over[#over + 1] = { big[1], left }
    elseif left < 1 then under[#under + 1] = { big[1], left }
    else keep[big[1]], alias[big[1]] = left, -1 end
  end
  -- rounding leaves at most one slot on either list: it keeps itself
  if #over > 0 then keep[over[1][1]], alias[over[1][1]] = 1.0, -1 end
  if #under > 0 then keep[under[1][1]], alias[under[1][1]] = 1.0, -1 end
  return keep, alias
end
M._alias_tables = alias_tables

--- Noise-contrastive estimation loss (an nce op, as Fluid builds it): for
-- each row, its true classes against `num_neg_samples` classes drawn from
-- the sampler, scored by a logistic regression on the row. Creates the
-- weight [num_total_classes, D] and the bias [num_total_classes, 1].
-- @tparam table a keyword arguments:
-- @tparam Variable a.input [N, D]
-- @tparam Variable a.label int64 [N, T]: each row's T true classes
-- @tparam int a.num_total_classes the number of classes
-- @tparam[opt] Variable a.sample_weight [N, 1]: each row's weight in the cost
-- @tparam[opt] ParamAttr|string a.param_attr the weight's attributes
-- @tparam[opt] ParamAttr|string|false a.bias_attr the bias's attributes; false: no bias
-- @tparam[opt=10] int a.num_neg_samples negatives drawn per row
-- @tparam[opt] string a.name
-- @tparam[opt="uniform"] string a.sampler "uniform", "log_uniform" (Zipfian over the class ids) or "custom_dist"
-- @tparam[opt] {number,...} a.custom_dist with sampler "custom_dist": each class's probability (num_total_classes numbers summing to 1)
-- @tparam[opt=0] int a.seed the sampler's seed; 0: the global generator (the same nonzero seed draws the same classes every run)
-- @tparam[opt=false] bool a.is_sparse the weight's gradient as SELECTED_ROWS over the sampled classes
-- @treturn Variable [N, 1]: each row's cost divided by num_neg_samples + 1, as Fluid's
-- @raise on an unknown sampler, or custom_dist missing or of the wrong length
-- @usage local cost = layers.mean(layers.nce{input = h, label = y, num_total_classes = 1000, num_neg_samples = 5})
function M.nce(a)
  a = args("nce", a, nil, nil, "bias_attr custom_dist input is_sparse label name num_neg_samples "
    .. "num_total_classes param_attr sample_weight sampler seed")
  local input = check.variable("nce", "input", a.input)
  local label = check.variable("nce", "label", a.label)
  local sample_weight = check.opt_variable("nce", "sample_weight", a.sample_weight)
  local classes = check.positive_int("nce", "num_total_classes", a.num_total_classes)
  local neg = check.int("nce", "num_neg_samples", a.num_neg_samples, 10)
  if neg < 1 then check.fail("nce", "num_neg_samples", "a positive integer", a.num_neg_samples) end
  local sampler_name = check.string("nce", "sampler", a.sampler, "uniform", { "uniform", "log_uniform", "custom_dist" })
  local d = width("nce", "input", input)
  width("nce", "label", label)
  local helper = LayerHelper("nce", a)
  local dtype = input.dtype
  local w = helper:create_parameter(helper:param_attr(), { classes, d }, dtype, false)
  local inputs = { Input = { input }, Label = { label }, Weight = { w } }
  local b = helper:create_parameter(helper:bias_attr(), { classes, 1 }, dtype, true)
  if b then inputs.Bias = { b } end
  if sample_weight then inputs.SampleWeight = { sample_weight } end
  if sampler_name == "custom_dist" then
    local p = a.custom_dist
    if type(p) ~= "table" or #p ~= classes then
      check.fail("nce", "custom_dist", ("a list of %d probabilities (sampler custom_dist)"):format(classes), p)
    end
    for i = 1, classes do
      if type(p[i]) ~= "number" or p[i] < 0 or p[i] > 1 then
        check.fail("nce", "custom_dist", "probabilities in [0, 1]", p[i])
      end
    end
    local keep, alias = alias_tables(p)
    local tensor, assign = require("oar.tensor"), require("oar.layers.tensor").assign
    local function const(values, dt)
      local v = assign(tensor(values, dt))
      v.stop_gradient = true
      return { v }
    end
    inputs.CustomDistProbs = const(p, "float32")
    inputs.CustomDistAlias = const(alias, "int32")
    inputs.CustomDistAliasProbs = const(keep, "float32")
  end
  local cost = helper:create_variable_for_type_inference(dtype)
  local logits = helper:create_variable_for_type_inference(dtype)
  local samples = helper:create_variable_for_type_inference("int64")
  helper:append_op{ type = "nce", inputs = inputs,
    outputs = { Cost = { cost }, SampleLogits = { logits }, SampleLabels = { samples } },
    attrs = { num_total_classes = classes, num_neg_samples = neg, sampler = SAMPLERS[sampler_name],
              seed = check.int("nce", "seed", a.seed, 0),
              is_sparse = check.boolean("nce", "is_sparse", a.is_sparse, false) } }
  return require("oar.layers.nn").scale{ x = cost, scale = 1 / (neg + 1) }
end

--- Hierarchical sigmoid loss (a hierarchical_sigmoid op, as Fluid's
-- hsigmoid builds it): each class is a leaf of a binary tree and a row's
-- cost sums the binary cross-entropies of the branches on its label's path.
-- The default tree is complete over num_classes leaves (weight
-- [num_classes - 1, D]); a custom tree (is_custom) gives each row's path in
-- path_table and its branch bits in path_code (weight [num_classes, D]).
-- @tparam table a keyword arguments:
-- @tparam Variable a.input [N, D]
-- @tparam Variable a.label int64 [N, 1]
-- @tparam int a.num_classes the leaves (the default tree), or the inner nodes of a custom tree
-- @tparam[opt] ParamAttr|string a.param_attr the weight's attributes
-- @tparam[opt] ParamAttr|string|false a.bias_attr the bias's attributes; false: no bias
-- @tparam[opt] string a.name
-- @tparam[opt] Variable a.path_table int64 [N, L]: each row's inner nodes, root first, -1 after the path (custom tree)
-- @tparam[opt] Variable a.path_code int64 [N, L]: the branch taken at each (custom tree)
-- @tparam[opt=false] bool a.is_custom use path_table and path_code
-- @tparam[opt=false] bool a.is_sparse the weight's gradient as SELECTED_ROWS over the visited nodes (custom trees only, as Fluid)
-- @treturn Variable [N, 1]: each row's cost
-- @raise when num_classes < 2 on the default tree, or the paths are missing or given without is_custom
-- @usage local cost = layers.mean(layers.hsigmoid{input = h, label = y, num_classes = 1000})
function M.hsigmoid(a)
  a = args("hsigmoid", a, nil, nil,
    "bias_attr input is_custom is_sparse label name num_classes param_attr path_code path_table")
  local input = check.variable("hsigmoid", "input", a.input)
  local label = check.variable("hsigmoid", "label", a.label)
  local table_ = check.opt_variable("hsigmoid", "path_table", a.path_table)
  local code = check.opt_variable("hsigmoid", "path_code", a.path_code)
  local custom = check.boolean("hsigmoid", "is_custom", a.is_custom, false)
  local sparse = check.boolean("hsigmoid", "is_sparse", a.is_sparse, false)
  local k = check.positive_int("hsigmoid", "num_classes", a.num_classes)
  if not custom then
    if k < 2 then raise("layers.hsigmoid: num_classes must be at least 2 with the default tree") end
    if table_ or code then raise("layers.hsigmoid: path_table and path_code need is_custom = true") end
    sparse = false   -- as Fluid: sparse updates only with a custom tree
  elseif not table_ or not code then
    raise("layers.hsigmoid: a custom tree (is_custom) needs path_table and path_code")
  end
  local d = width("hsigmoid", "input", input)
  local helper = LayerHelper("hsigmoid", a)
  local dtype = input.dtype
  local rows = custom and k or k - 1
  local w = helper:create_parameter(helper:param_attr(), { rows, d }, dtype, false)
  local inputs = { X = { input }, W = { w }, Label = { label } }
  if custom then inputs.PathTable, inputs.PathCode = { table_ }, { code } end
  local b = helper:create_parameter(helper:bias_attr(), { rows, 1 }, dtype, true)
  if b then inputs.Bias = { b } end
  local out = helper:create_variable_for_type_inference(dtype)
  local pre = helper:create_variable_for_type_inference(dtype)
  helper:append_op{ type = "hierarchical_sigmoid", inputs = inputs, outputs = { Out = { out }, PreOut = { pre } },
    attrs = { num_classes = k, is_sparse = sparse } }
  return out
end

--- Sampled softmax with cross entropy (a sample_logits op, then
-- softmax_with_cross_entropy, as Fluid builds it): the softmax over each
-- row's true classes and num_samples classes drawn from the log-uniform
-- distribution, with the logits corrected by the log of their sampling
-- probability.
-- @tparam table a keyword arguments:
-- @tparam Variable a.logits [N, K]
-- @tparam Variable a.label int64 [N, num_true]
-- @tparam int a.num_samples the classes drawn (shared by the rows)
-- @tparam[opt=1] int a.num_true the true classes per row
-- @tparam[opt=true] bool a.remove_accidental_hits mask drawn classes that are true classes of the row
-- @tparam[opt=false] bool a.use_customized_samples take the samples from customized_samples
-- @tparam[opt] Variable a.customized_samples int64 [N, num_true + num_samples], true classes first
-- @tparam[opt] Variable a.customized_probabilities [N, num_true + num_samples], logits' dtype
-- @tparam[opt=0] int a.seed the sampler's seed; 0: the global generator
-- @treturn Variable [N, 1]: each row's loss, divided by num_true as Fluid's
-- @raise when customized samples are asked for but not given
-- @usage local loss = layers.mean(layers.sampled_softmax_with_cross_entropy{logits = z, label = y, num_samples = 10})
function M.sampled_softmax_with_cross_entropy(a)
  local who = "sampled_softmax_with_cross_entropy"
  a = args(who, a, nil, nil, "customized_probabilities customized_samples label logits num_samples num_true "
    .. "remove_accidental_hits seed use_customized_samples")
  local logits = check.variable(who, "logits", a.logits)
  local label = check.variable(who, "label", a.label)
  local s = check.positive_int(who, "num_samples", a.num_samples)
  local nt = check.int(who, "num_true", a.num_true, 1)
  if nt < 1 then check.fail(who, "num_true", "a positive integer", a.num_true) end
  local custom = check.boolean(who, "use_customized_samples", a.use_customized_samples, false)
  local inputs = { Logits = { logits }, Labels = { label } }
  if custom then
    inputs.CustomizedSamples = { check.variable(who, "customized_samples", a.customized_samples) }
    inputs.CustomizedProbabilities = { check.variable(who, "customized_probabilities", a.customized_probabilities) }
  end
  local helper = LayerHelper(who, a)
  local dtype = logits.dtype
  local function tmp(dt) return helper:create_variable_for_type_inference(dt, true) end
  local samples, probs, sampled_label = tmp("int64"), tmp(dtype), tmp("int64")
  local sampled_logits = helper:create_variable_for_type_inference(dtype)
  helper:append_op{ type = "sample_logits", inputs = inputs,
    outputs = { Samples = { samples }, Probabilities = { probs }, SampledLogits = { sampled_logits },
                SampledLabels = { sampled_label }, LogitsDim = { tmp(dtype) }, LabelsDim = { tmp("int64") } },
    attrs = { use_customized_samples = custom, uniq = true, num_samples = s, seed = check.int(who, "seed", a.seed, 0),
              remove_accidental_hits = check.boolean(who, "remove_accidental_hits", a.remove_accidental_hits, true) } }
  local L = require("oar.layers")
  if nt == 1 then
    -- one true class: the hard label is Fluid's one-hot soft label
    return L.softmax_with_cross_entropy{ logits = sampled_logits, label = sampled_label }
  end
  -- several: a soft label with 1 on each true column, the loss over num_true
  local onehot = L.one_hot{ input = L.reshape(sampled_label, { -1, 1 }), depth = nt + s }
  local soft = L.reduce_sum(L.reshape(onehot, { -1, nt, nt + s }), 1)
  if dtype ~= "float32" then soft = L.cast(soft, dtype) end
  local loss = L.softmax_with_cross_entropy{ logits = sampled_logits, label = soft, soft_label = true }
  return L.scale{ x = loss, scale = 1 / nt }
end

--- Center loss (a center_loss op, as Fluid builds it): half the squared
-- distance of each row to its class's center. The centers are a parameter
-- [num_classes, D] the op moves itself (update_center) toward their rows,
-- at rate alpha; they take no gradient.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input [N, D]
-- @tparam Variable a.label int64 (or int32) [N, 1]
-- @tparam int a.num_classes the number of classes
-- @tparam number|Variable a.alpha the centers' update rate (a float32 [1] Variable, or a number)
-- @tparam[opt] ParamAttr|string a.param_attr the centers' attributes
-- @tparam[opt=true] bool a.update_center move the centers at each run
-- @treturn Variable [N, 1]: each row's loss
-- @usage local loss = layers.mean(layers.center_loss{input = feat, label = y, num_classes = 10, alpha = 0.1})
function M.center_loss(a)
  a = args("center_loss", a, nil, nil, "alpha input label num_classes param_attr update_center")
  local input = check.variable("center_loss", "input", a.input)
  local label = check.variable("center_loss", "label", a.label)
  local k = check.positive_int("center_loss", "num_classes", a.num_classes)
  local d = width("center_loss", "input", input)
  local helper = LayerHelper("center_loss", a)
  local dtype = input.dtype
  local centers = helper:create_parameter(helper:param_attr(), { k, d }, dtype, false)
  centers.stop_gradient = true
  local alpha = a.alpha
  if not framework.is_variable(alpha) then
    local v = check.number("center_loss", "alpha", alpha)
    alpha = helper:create_global_variable{ shape = { 1 }, dtype = dtype, persistable = true, stop_gradient = true }
    helper:set_variable_initializer(alpha, require("oar.initializer").Constant{ value = v })
  end
  local diff = helper:create_variable_for_type_inference(dtype)
  local loss = helper:create_variable_for_type_inference(dtype)
  helper:append_op{ type = "center_loss",
    inputs = { X = { input }, Label = { label }, Centers = { centers }, CenterUpdateRate = { alpha } },
    outputs = { SampleCenterDiff = { diff }, Loss = { loss }, CentersOut = { centers } },
    attrs = { cluster_num = k,
              need_update = check.boolean("center_loss", "update_center", a.update_center, true) } }
  return loss
end

--- Teacher-student sigmoid loss (a teacher_student_sigmoid_loss op): a
-- logistic loss against a click and, when given, against a teacher's score
-- q, both coded in label: -2 (no click, no q), -1 (click, no q), q (no
-- click) or 1 + q (click), q in [0, 1).
-- @tparam table a keyword arguments:
-- @tparam Variable a.input [N, 1]: the logits
-- @tparam Variable a.label [N, 1], input's dtype
-- @tparam[opt=15.0] number a.soft_max_up_bound no gradient at or above it
-- @tparam[opt=-15.0] number a.soft_max_lower_bound no gradient at or below it
-- @treturn Variable [N, 1]
-- @usage local cost = layers.mean(layers.teacher_student_sigmoid_loss{input = z, label = y})
function M.teacher_student_sigmoid_loss(a)
  local who = "teacher_student_sigmoid_loss"
  a = args(who, a, nil, nil, "input label soft_max_lower_bound soft_max_up_bound")
  local input = check.variable(who, "input", a.input)
  local label = check.variable(who, "label", a.label)
  local helper = LayerHelper(who, a)
  local out = helper:create_variable_for_type_inference(input.dtype)
  helper:append_op{ type = who, inputs = { X = { input }, Label = { label } }, outputs = { Y = { out } },
    attrs = { soft_max_up_bound = check.number(who, "soft_max_up_bound", a.soft_max_up_bound, 15.0),
              soft_max_lower_bound = check.number(who, "soft_max_lower_bound", a.soft_max_lower_bound, -15.0) } }
  return out
end

return M
