--- oar.layers.tensor_window: Fluid 1.8's temporal_shift, unfold and
-- tensor_array_to_tensor, and fluid.contrib.layers' partial_concat and
-- partial_sum (issue 22). Merged into `oar.layers`.
-- @module oar.layers.tensor_window
local LayerHelper = require("oar.layer_helper")

local check, args = LayerHelper.check, LayerHelper.args

local M = {}

local function one_out(layer, a, op_type, inputs, attrs, dtype, slot)
  local helper = LayerHelper(layer, a)
  local out = helper:create_variable_for_type_inference(dtype)
  helper:append_op{ type = op_type, inputs = inputs, outputs = { [slot or "Out"] = { out } }, attrs = attrs }
  return out
end

--- temporal_shift{x=, seg_num=, shift_ratio=0.25, name=}: x [N*T, C, H, W]
-- with a share of channels shifted one frame back and one forward (Fluid
-- 1.8's layers.temporal_shift; op temporal_shift).
-- @tparam table a keyword arguments: x, seg_num (T), shift_ratio
-- @treturn Variable x's shape
-- @usage local y = layers.temporal_shift{x = frames, seg_num = 8}
function M.temporal_shift(a)
  a = args("temporal_shift", a, nil, nil, "name seg_num shift_ratio x")
  local x = check.variable("temporal_shift", "x", a.x)
  return one_out("temporal_shift", a, "temporal_shift", { X = { x } },
    { seg_num = check.positive_int("temporal_shift", "seg_num", a.seg_num),
      shift_ratio = check.number("temporal_shift", "shift_ratio", a.shift_ratio, 0.25) }, x.dtype)
end

--- unfold{x=, kernel_sizes=, strides=1, paddings=0, dilations=1, name=}:
-- im2col, the sliding blocks of x [N, C, H, W] as columns [N, C*kh*kw, L]
-- (Fluid 1.8's layers.unfold; op unfold). kernel_sizes, strides and
-- dilations: an int or [h, w]; paddings: an int, [h, w] or [up, left, down,
-- right].
-- @tparam table a keyword arguments
-- @treturn Variable [N, C*kh*kw, L]
-- @usage local cols = layers.unfold{x = img, kernel_sizes = 3, paddings = 1}
function M.unfold(a)
  a = args("unfold", a, nil, nil, "dilations kernel_sizes name paddings strides x")
  local x = check.variable("unfold", "x", a.x)
  local p = a.paddings or 0
  if type(p) == "table" and #p == 2 then p = { p[1], p[2], p[1], p[2] } end
  return one_out("unfold", a, "unfold", { X = { x } },
    { kernel_sizes = check.int_list("unfold", "kernel_sizes", a.kernel_sizes, 2),
      strides = check.int_list("unfold", "strides", a.strides, 2, 1),
      paddings = check.int_list("unfold", "paddings", p, 4),
      dilations = check.int_list("unfold", "dilations", a.dilations, 2, 1) }, x.dtype, "Y")
end

local function partial(layer, a)
  a = args(layer, a, "input", nil, "input length name start_index")
  local xs = check.variables(layer, "input", a.input)
  return one_out(layer, a, layer, { X = xs },
    { start_index = check.int(layer, "start_index", a.start_index, 0), length = check.int(layer, "length", a.length, -1) },
    xs[1].dtype)
end

--- partial_concat{input=, start_index=0, length=-1, name=}: the columns
-- [start_index, start_index + length) of each 2-D input, concatenated
-- (fluid.contrib.layers.partial_concat; op partial_concat).
-- @tparam table a keyword arguments: input (a list of [N, D] Variables), start_index, length (-1: to the end)
-- @treturn Variable [N, #input * length]
-- @usage local c = layers.partial_concat{input = {a, b}, start_index = 0, length = 4}
function M.partial_concat(a) return partial("partial_concat", a) end

--- partial_sum{input=, start_index=0, length=-1, name=}: the sum of the
-- columns [start_index, start_index + length) of each 2-D input
-- (fluid.contrib.layers.partial_sum; op partial_sum).
-- @tparam table a keyword arguments: input (a list of [N, D] Variables), start_index, length (-1: to the end)
-- @treturn Variable [N, length]
-- @usage local s = layers.partial_sum{input = {a, b}, length = 4}
function M.partial_sum(a) return partial("partial_sum", a) end

--- tensor_array_to_tensor{input=, axis=1, use_stack=false, name=} (or
-- tensor_array_to_tensor(input, axis)): the items of a tensor array joined
-- along axis, concatenated (or stacked along a new axis with use_stack)
-- (Fluid 1.8's layers.tensor_array_to_tensor; op tensor_array_to_tensor).
-- @tparam Variable|table a the array, or keyword arguments: input, axis, use_stack
-- @tparam[opt] int axis (positional form)
-- @return out (Variable), out_index (int32 Variable: each item's size along axis)
-- @usage local out, sizes = layers.tensor_array_to_tensor{input = arr, axis = 0}
function M.tensor_array_to_tensor(a, axis)
  a = args("tensor_array_to_tensor", a, "input", { axis = axis }, "axis input name use_stack")
  local arr = check.variable("tensor_array_to_tensor", "input", a.input)
  local helper = LayerHelper("tensor_array_to_tensor", a)
  local out = helper:create_variable_for_type_inference(arr.dtype)
  local idx = helper:create_variable_for_type_inference("int32")
  helper:append_op{ type = "tensor_array_to_tensor", inputs = { X = { arr } },
                    outputs = { Out = { out }, OutIndex = { idx } },
                    attrs = { axis = check.int("tensor_array_to_tensor", "axis", a.axis, 1),
                              use_stack = check.boolean("tensor_array_to_tensor", "use_stack", a.use_stack, false) } }
  return out, idx
end

return M
