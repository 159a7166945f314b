--- oar.layers.tensor_shape: shape and selection layers of issue 22: Fluid
-- 1.8's unbind, crop, reverse, pad_constant_like, multiplex, unique
-- and unique_with_counts; Paddle 2.x's nonzero (op where_index: Fluid's
-- one-argument where, which layers.where leaves to Paddle's where(c, x, y))
-- and equal_all (op equal_reduce). layers.pad2d (oar.layers.manip) builds
-- pad3d; the pad2d op runs in loaded programs. Merged into `oar.layers`.
-- @module oar.layers.tensor_shape
local LayerHelper = require("oar.layer_helper")
local framework = require("oar.framework")

local check, args = LayerHelper.check, LayerHelper.args
local raise, is_variable = framework.raise, framework.is_variable

local M = {}

local function one_out(layer, a, op_type, inputs, attrs, dtype)
  local helper = LayerHelper(layer, a)
  local out = helper:create_variable_for_type_inference(dtype)
  helper:append_op{ type = op_type, inputs = inputs, outputs = { Out = { out } }, attrs = attrs }
  return out
end

--- unbind{input=, axis=0} (or unbind(input, axis)): the slices of input
-- along axis, each without that dimension (Fluid 1.8's layers.unbind; op
-- unbind).
-- @tparam Variable|table a input, or keyword arguments: input, axis
-- @tparam[opt] int axis (positional form)
-- @treturn {Variable,...} input.shape[axis] Variables
-- @usage local rows = layers.unbind(m, 0)
function M.unbind(a, axis)
  a = args("unbind", a, "input", { axis = axis }, "axis input name")
  local x = check.variable("unbind", "input", a.input)
  local ax = check.int("unbind", "axis", a.axis, 0)
  local r = #x.shape
  if ax < -r or ax >= r then raise(("layers.unbind: axis (%d) is out of range for input of rank %d"):format(ax, r)) end
  if ax < 0 then ax = ax + r end
  local n = x.shape[ax + 1]
  if n < 0 then raise("layers.unbind: input's dim " .. ax .. " is unknown; unbind needs it to count its outputs") end
  local helper = LayerHelper("unbind", a)
  local outs = {}
  for i = 1, n do outs[i] = helper:create_variable_for_type_inference(x.dtype) end
  helper:append_op{ type = "unbind", inputs = { X = { x } }, outputs = { Out = outs }, attrs = { axis = ax } }
  return outs
end

--- crop{x=, shape=, offsets=, name=} (or crop(x, shape, offsets)): the
-- window of x at offsets (default zeros) with shape (a list, or a Variable
-- whose dims give it) (Fluid 1.8's layers.crop; op crop).
-- @tparam Variable|table a x, or keyword arguments: x, shape, offsets (a list or a 1-D int32 Variable)
-- @param[opt] shape (positional form)
-- @param[opt] offsets (positional form)
-- @treturn Variable
-- @usage local c = layers.crop{x = img, shape = {1, 3, 8, 8}, offsets = {0, 0, 2, 2}}
function M.crop(a, shape, offsets)
  a = args("crop", a, "x", { shape = shape, offsets = offsets }, "name offsets shape x")
  local x = check.variable("crop", "x", a.x)
  local inputs, attrs = { X = { x } }, {}
  if is_variable(a.shape) then inputs.Y = { a.shape }
  else attrs.shape = check.int_list("crop", "shape", a.shape, #x.shape) end
  if is_variable(a.offsets) then inputs.Offsets = { a.offsets }
  elseif a.offsets ~= nil then attrs.offsets = check.int_list("crop", "offsets", a.offsets, #x.shape) end
  return one_out("crop", a, "crop", inputs, attrs, x.dtype)
end

--- reverse{x=, axis=} (or reverse(x, axis)): x reversed along axis (an int
-- or a list) (Fluid 1.8's layers.reverse; op reverse).
-- @tparam Variable|table a x, or keyword arguments: x, axis
-- @param[opt] axis (positional form)
-- @treturn Variable x's shape
-- @usage local r = layers.reverse(x, {0, 1})
function M.reverse(a, axis)
  a = args("reverse", a, "x", { axis = axis }, "axis name x")
  local x = check.variable("reverse", "x", a.x)
  local ax = a.axis
  if type(ax) == "number" then ax = { ax } end
  return one_out("reverse", a, "reverse", { X = { x } }, { axis = check.ints("reverse", "axis", ax) }, x.dtype)
end

--- pad_constant_like{x=, y=, pad_value=0, name=}: y padded at the end of
-- each dim with pad_value to x's shape (Fluid 1.8's layers.pad_constant_like;
-- op pad_constant_like).
-- @tparam table a keyword arguments: x (gives the shape), y, pad_value
-- @treturn Variable x's shape, y's dtype
-- @usage local p = layers.pad_constant_like{x = big, y = small, pad_value = 0}
function M.pad_constant_like(a)
  a = args("pad_constant_like", a, nil, nil, "name pad_value x y")
  local x = check.variable("pad_constant_like", "x", a.x)
  local y = check.variable("pad_constant_like", "y", a.y)
  return one_out("pad_constant_like", a, "pad_constant_like", { X = { x }, Y = { y } },
    { pad_value = check.number("pad_constant_like", "pad_value", a.pad_value, 0.0) }, y.dtype)
end

--- multiplex{inputs=, index=, name=}: row i of the result is row i of
-- inputs[index[i]] (Fluid 1.8's layers.multiplex; op multiplex).
-- @tparam table a keyword arguments: inputs (a list of Variables of one shape), index (int32 [N, 1])
-- @treturn Variable inputs[1]'s shape
-- @usage local out = layers.multiplex{inputs = {a, b}, index = which}
function M.multiplex(a)
  a = args("multiplex", a, nil, nil, "index inputs name")
  local xs = check.variables("multiplex", "inputs", a.inputs)
  local ids = check.variable("multiplex", "index", a.index)
  return one_out("multiplex", a, "multiplex", { Ids = { ids }, X = xs }, nil, xs[1].dtype)
end

local function unique_layer(layer, a, counts)
  local x = check.variable(layer, "x", a.x)
  local dt = check.dtype(layer, "dtype", a.dtype, "int32")
  if dt ~= "int32" and dt ~= "int64" then check.fail(layer, "dtype", "\"int32\" or \"int64\"", a.dtype) end
  local helper = LayerHelper(layer, a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  local index = helper:create_variable_for_type_inference(dt)
  local outs = { Out = { out }, Index = { index } }
  local count
  if counts then
    count = helper:create_variable_for_type_inference(dt)
    outs.Count = { count }
  end
  helper:append_op{ type = layer, inputs = { X = { x } }, outputs = outs, attrs = { dtype = dt } }
  return out, index, count
end

--- unique{x=, dtype="int32"} (or unique(x, dtype)): the distinct values of
-- 1-D x in order of first appearance, and each element's position among them
-- (Fluid 1.8's layers.unique; op unique).
-- @tparam Variable|table a x, or keyword arguments: x, dtype (int32 or int64, the index's)
-- @tparam[opt] string dtype (positional form)
-- @return out (Variable), index (Variable)
-- @usage local vals, idx = layers.unique(ids)
function M.unique(a, dtype)
  a = args("unique", a, "x", { dtype = dtype }, "dtype name x")
  local out, index = unique_layer("unique", a, false)
  return out, index
end

--- unique_with_counts{x=, dtype="int32"} (or unique_with_counts(x, dtype)):
-- unique plus how often each distinct value occurs (Fluid 1.8's
-- layers.unique_with_counts; op unique_with_counts).
-- @tparam Variable|table a x, or keyword arguments: x, dtype
-- @tparam[opt] string dtype (positional form)
-- @return out, index, count (Variables)
-- @usage local vals, idx, counts = layers.unique_with_counts(ids)
function M.unique_with_counts(a, dtype)
  a = args("unique_with_counts", a, "x", { dtype = dtype }, "dtype name x")
  return unique_layer("unique_with_counts", a, true)
end

--- nonzero{x=} (or nonzero(x)): the coordinates of x's nonzero (true)
-- elements, int64 [count, rank] (Paddle 2.x's paddle.nonzero without
-- as_tuple; Fluid 1.8's one-argument layers.where; op where_index).
-- @tparam Variable|table a x, or keyword arguments: x
-- @treturn Variable int64 [count, rank]
-- @usage local coords = layers.nonzero(mask)
function M.nonzero(a)
  a = args("nonzero", a, "x", nil, "name x")
  local x = check.variable("nonzero", "x", a.x)
  return one_out("nonzero", a, "where_index", { Condition = { x } }, nil, "int64")
end

--- equal_all{x=, y=} (or equal_all(x, y)): a bool [1], true when x and y
-- have one shape and equal elements (Paddle 2.x's paddle.equal_all; op
-- equal_reduce).
-- @tparam Variable|table a x, or keyword arguments: x, y
-- @tparam[opt] Variable y (positional form)
-- @treturn Variable bool [1]
-- @usage local same = layers.equal_all(a, b)
function M.equal_all(a, y)
  a = args("equal_all", a, "x", { y = y }, "name x y")
  local x = check.variable("equal_all", "x", a.x)
  local yv = check.variable("equal_all", "y", a.y)
  return one_out("equal_all", a, "equal_reduce", { X = { x }, Y = { yv } }, nil, "bool")
end

return M
