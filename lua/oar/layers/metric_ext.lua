--- oar.layers.metric_ext: Fluid 1.8's metric layers auc and mean_iou.
-- Merged into oar.layers.
--
--   local auc, batch_auc, states = layers.auc{input = prob, label = label}
--   local miou, wrong, correct = layers.mean_iou{input = pred, label = label, num_classes = 21}
--
-- @module oar.layers.metric_ext
local LayerHelper = require("oar.layer_helper")
local initializer = require("oar.initializer")

local check, args = LayerHelper.check, LayerHelper.args

local M = {}

--- Area under the ROC curve, as Fluid 1.8's layers.auc: two auc ops on the
-- same predictions, one over every batch so far (stats [1, num_thresholds
-- + 1]) and one over the last slide_steps batches. The four stat buffers
-- are persistable int64 variables, zeroed by the startup program and
-- updated in place by each run.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input float32/float64 [N, 2] (column 1 the positive probability) or [N, 1]
-- @tparam Variable a.label int64 [N, 1], nonzero for positives
-- @tparam[opt="ROC"] string a.curve "ROC" or "PR" (both compute the ROC area, as Fluid's kernel)
-- @tparam[opt=4095] int a.num_thresholds the buckets less one
-- @tparam[opt=1] int a.topk unused, as in Fluid
-- @tparam[opt=1] int a.slide_steps batches in the window of batch_auc_out (0: every batch)
-- @tparam[opt] string a.name
-- @treturn Variable auc_out, float64 [1]: over every batch so far
-- @treturn Variable batch_auc_out, float64 [1]: over the last slide_steps batches
-- @treturn table {batch_stat_pos, batch_stat_neg, stat_pos, stat_neg}
-- @usage local auc, batch_auc, states = layers.auc{input = prob, label = label, num_thresholds = 200}
function M.auc(a)
  a = args("auc", a, nil, nil, "curve input label name num_thresholds slide_steps topk")
  local input = check.variable("auc", "input", a.input)
  local label = check.variable("auc", "label", a.label)
  local curve = a.curve == nil and "ROC" or check.string("auc", "curve", a.curve)
  if curve ~= "ROC" and curve ~= "PR" then check.fail("auc", "curve", '"ROC" or "PR"', curve) end
  local nt = a.num_thresholds == nil and 2 ^ 12 - 1 or check.positive_int("auc", "num_thresholds", a.num_thresholds)
  local steps = a.slide_steps == nil and 1 or check.int("auc", "slide_steps", a.slide_steps)
  if steps < 0 then check.fail("auc", "slide_steps", "an integer >= 0", steps) end
  if a.topk ~= nil then check.int("auc", "topk", a.topk) end
  local helper = LayerHelper("auc", a)
  local auc_out = helper:create_variable_for_type_inference("float64", true)
  local batch_auc_out = helper:create_variable_for_type_inference("float64", true)
  -- the batch stats: slide_steps rows, their sum, then the batch counter
  local batch_len = (1 + steps) * (nt + 1) + 1
  local function stat(shape)
    local v = helper:create_global_variable{ dtype = "int64", shape = shape }
    v.stop_gradient = true
    helper:set_variable_initializer(v, initializer.Constant{ value = 0 })
    return v
  end
  local batch_pos, batch_neg = stat({ batch_len }), stat({ batch_len })
  local pos, neg = stat({ 1, nt + 1 }), stat({ 1, nt + 1 })
  local function op(out, sp, sn, s)
    helper:append_op{ type = "auc",
      inputs = { Predict = { input }, Label = { label }, StatPos = { sp }, StatNeg = { sn } },
      outputs = { AUC = { out }, StatPosOut = { sp }, StatNegOut = { sn } },
      attrs = { curve = curve, num_thresholds = nt, slide_steps = s } }
  end
  op(batch_auc_out, batch_pos, batch_neg, steps)
  op(auc_out, pos, neg, 0)
  return auc_out, batch_auc_out, { batch_pos, batch_neg, pos, neg }
end

--- Mean intersection-over-union of a segmentation: per class, correct /
-- (correct + wrong) averaged over the classes that occur.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input int32/int64, the predicted class of each pixel, any shape
-- @tparam Variable a.label input's shape and dtype, the true classes
-- @tparam int a.num_classes the number of classes
-- @tparam[opt] string a.name
-- @treturn Variable mean_iou, float32 [1]
-- @treturn Variable out_wrong, int32 [num_classes]
-- @treturn Variable out_correct, int32 [num_classes]
-- @usage local miou, wrong, correct = layers.mean_iou{input = pred, label = label, num_classes = 21}
function M.mean_iou(a)
  a = args("mean_iou", a, nil, nil, "input label name num_classes")
  local input = check.variable("mean_iou", "input", a.input)
  local label = check.variable("mean_iou", "label", a.label)
  local k = check.positive_int("mean_iou", "num_classes", a.num_classes)
  local helper = LayerHelper("mean_iou", a)
  local miou = helper:create_variable_for_type_inference("float32", true)
  local wrong = helper:create_variable_for_type_inference("int32", true)
  local correct = helper:create_variable_for_type_inference("int32", true)
  helper:append_op{ type = "mean_iou", inputs = { Predictions = { input }, Labels = { label } },
    outputs = { OutMeanIou = { miou }, OutWrong = { wrong }, OutCorrect = { correct } },
    attrs = { num_classes = k } }
  return miou, wrong, correct
end

return M
