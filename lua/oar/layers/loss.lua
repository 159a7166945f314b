--- oar.layers.loss: losses and metrics (Fluid's cross_entropy, square_error_cost,
-- softmax_with_cross_entropy, sigmoid_cross_entropy_with_logits, accuracy).
-- @module oar.layers.loss
local LayerHelper = require("oar.layer_helper")
local framework = require("oar.framework")
local nn = require("oar.layers.nn")
local lib = require("oar.lib")

local check, args = LayerHelper.check, LayerHelper.args

local M = {}

local function pair(layer, a, k1, k2, label, known)
  if framework.is_variable(a) then a = { [k1] = a, [k2] = label } end
  return args(layer, a, nil, nil, known)
end

--- Cross entropy of probabilities (e.g. a softmax's output) against labels,
-- per row. Also `cross_entropy(input, label)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input probabilities [N, D]
-- @tparam Variable a.label int64 class ids [N, 1], or [N, D] probabilities with soft_label
-- @tparam[opt=false] bool a.soft_label
-- @tparam[opt=-100] int a.ignore_index rows with this label give 0
-- @tparam[opt] string a.name
-- @tparam[opt] Variable label with a positional input
-- @treturn Variable [N, 1]
-- @usage
-- local prob = layers.fc{input = h, size = 10, act = "softmax"}
-- local loss = layers.mean(layers.cross_entropy{input = prob, label = label})
function M.cross_entropy(a, label)
  a = pair("cross_entropy", a, "input", "label", label, "input label soft_label ignore_index name")
  local x = check.variable("cross_entropy", "input", a.input)
  local lbl = check.variable("cross_entropy", "label", a.label)
  local helper = LayerHelper("cross_entropy", a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = "cross_entropy", inputs = { X = { x }, Label = { lbl } }, outputs = { Y = { out } },
    attrs = { soft_label = check.boolean("cross_entropy", "soft_label", a.soft_label, false),
              ignore_index = check.int("cross_entropy", "ignore_index", a.ignore_index, -100) } }
  return out
end

--- Softmax then cross entropy, fused and numerically stable. Also
-- `softmax_with_cross_entropy(logits, label)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.logits [N, D]
-- @tparam Variable a.label int64 [N, 1], or [N, D] with soft_label
-- @tparam[opt=false] bool a.soft_label
-- @tparam[opt=-100] int a.ignore_index
-- @tparam[opt=true] bool a.numeric_stable_mode
-- @tparam[opt=false] bool a.return_softmax return the softmax too
-- @tparam[opt=-1] int a.axis
-- @tparam[opt] string a.name
-- @tparam[opt] Variable label with positional logits
-- @treturn Variable loss [N, 1]
-- @treturn[opt] Variable softmax, with return_softmax
-- @usage local loss = layers.mean(layers.softmax_with_cross_entropy{logits = logits, label = label})
function M.softmax_with_cross_entropy(a, label)
  local who = "softmax_with_cross_entropy"
  a = pair(who, a, "logits", "label", label,
    "logits label soft_label ignore_index numeric_stable_mode return_softmax axis name")
  local logits = check.variable(who, "logits", a.logits)
  local lbl = check.variable(who, "label", a.label)
  local helper = LayerHelper(who, a)
  local softmax = helper:create_variable_for_type_inference(logits.dtype)
  local loss = helper:create_variable_for_type_inference(logits.dtype)
  local attrs = { soft_label = check.boolean(who, "soft_label", a.soft_label, false),
                  ignore_index = check.int(who, "ignore_index", a.ignore_index, -100),
                  numeric_stable_mode = check.boolean(who, "numeric_stable_mode", a.numeric_stable_mode, true) }
  if a.axis ~= nil then attrs.axis = check.int(who, "axis", a.axis) end
  helper:append_op{ type = who, inputs = { Logits = { logits }, Label = { lbl } },
                    outputs = { Softmax = { softmax }, Loss = { loss } }, attrs = attrs }
  if a.return_softmax then return loss, softmax end
  return loss
end

--- (input - label)^2, elementwise. Also `square_error_cost(input, label)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input
-- @tparam Variable a.label
-- @tparam[opt] string a.name
-- @tparam[opt] Variable label with a positional input
-- @treturn Variable shaped like input
-- @usage local loss = layers.mean(layers.square_error_cost{input = pred, label = y})
function M.square_error_cost(a, label)
  a = pair("square_error_cost", a, "input", "label", label, "input label name")
  local x = check.variable("square_error_cost", "input", a.input)
  local lbl = check.variable("square_error_cost", "label", a.label)
  local helper = LayerHelper("square_error_cost", a)
  if not lib.C.oar_op_is_registered("square") and lib.C.oar_op_is_registered("square_error_cost") then
    local out = helper:create_variable_for_type_inference(x.dtype)
    helper:append_op{ type = "square_error_cost", inputs = { X = { x }, Y = { lbl } }, outputs = { Out = { out } } }
    return out
  end
  local minus = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = "elementwise_sub", inputs = { X = { x }, Y = { lbl } }, outputs = { Out = { minus } } }
  local out = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = "square", inputs = { X = { minus } }, outputs = { Out = { out } } }
  return out
end

--- Elementwise binary cross entropy of sigmoid(x) against labels in [0, 1].
-- Also `sigmoid_cross_entropy_with_logits(x, label)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x logits
-- @tparam Variable a.label shaped like x
-- @tparam[opt=-100] int a.ignore_index elements with this label give 0
-- @tparam[opt=false] bool a.normalize divide by the number of elements not ignored
-- @tparam[opt] string a.name
-- @tparam[opt] Variable label with a positional x
-- @treturn Variable shaped like x
-- @usage local loss = layers.mean(layers.sigmoid_cross_entropy_with_logits{x = logits, label = y})
function M.sigmoid_cross_entropy_with_logits(a, label)
  local who = "sigmoid_cross_entropy_with_logits"
  a = pair(who, a, "x", "label", label, "x label ignore_index normalize name")
  local x = check.variable(who, "x", a.x)
  local lbl = check.variable(who, "label", a.label)
  local helper = LayerHelper(who, a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = who, inputs = { X = { x }, Label = { lbl } }, outputs = { Out = { out } },
    attrs = { ignore_index = check.int(who, "ignore_index", a.ignore_index, -100),
              normalize = check.boolean(who, "normalize", a.normalize, false) } }
  return out
end

--- Top-k accuracy of a batch (a top_k op then an accuracy op, like Fluid).
-- Also `accuracy(input, label, k)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input scores or probabilities [N, D]
-- @tparam Variable a.label int64 [N, 1]
-- @tparam[opt=1] int a.k
-- @tparam[opt] Variable a.correct write the number correct (int32) here
-- @tparam[opt] Variable a.total write the number of rows (int32) here
-- @tparam[opt] string a.name
-- @tparam[opt] Variable label with a positional input
-- @tparam[opt=1] int k with a positional input
-- @treturn Variable float32 [1], the fraction correct
-- @usage local acc = layers.accuracy{input = prob, label = label, k = 1}
function M.accuracy(a, label, k)
  if framework.is_variable(a) then a = { input = a, label = label, k = k } end
  a = args("accuracy", a, nil, nil, "correct input k label name total")
  local x = check.variable("accuracy", "input", a.input)
  local lbl = check.variable("accuracy", "label", a.label)
  local kk = a.k == nil and 1 or check.positive_int("accuracy", "k", a.k)
  local helper = LayerHelper("accuracy", a)
  local values, indices = nn.topk{ input = x, k = kk }
  local acc = helper:create_variable_for_type_inference("float32", true)
  local correct = a.correct or helper:create_variable_for_type_inference("int32", true)
  local total = a.total or helper:create_variable_for_type_inference("int32", true)
  helper:append_op{ type = "accuracy", inputs = { Out = { values }, Indices = { indices }, Label = { lbl } },
                    outputs = { Accuracy = { acc }, Correct = { correct }, Total = { total } } }
  return acc
end

return M
