--- oar.layers.manip: Fluid 1.8's layers over oar's shape, selection and
-- random ops: gather, slice, stack, squeeze, unsqueeze, flatten, expand,
-- sum, where, pad2d, load, uniform_random and gaussian_random, and Paddle 2.x's
-- tile, broadcast_to, full_like and p_norm for the ops Fluid 1.8 has no
-- layer for.
-- Merged into `oar.layers`.
-- @module oar.layers.manip
local LayerHelper = require("oar.layer_helper")
local framework = require("oar.framework")

local check, args = LayerHelper.check, LayerHelper.args
local raise, is_variable = framework.raise, framework.is_variable

local M = {}

local int_list = check.ints   -- a list of integers (or one integer, made a list of one)

-- an axis of a rank-`rank` value (negative: from the end); checked when the rank is known
local function axis_in(layer, key, v, rank, extra)
  v = check.int(layer, key, v)
  local hi = rank + (extra or 0)
  if rank > 0 and (v < -hi or v >= hi) then
    raise(string.format("%s: '%s' = %d is out of range [%d, %d) for an input of %d dims", layer, key, v, -hi, hi, rank))
  end
  return v
end

-- ---- selection ---------------------------------------------------------------------

--- The rows of `input` at `index` along dim 0: `out[i] = input[index[i]]`.
-- Also `gather(input, index)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input
-- @tparam Variable a.index int32 or int64 indices, [n] (or [n, 1])
-- @tparam[opt=true] bool a.overwrite how the gradient treats repeated indices
-- (true: the last one's gradient; false: their sum, which is the true gradient)
-- @tparam[opt] string a.name
-- @tparam[opt] Variable index with a positional input
-- @treturn Variable [n, input.shape[2:]...]
-- @usage local rows = layers.gather{input = table2d, index = ids}
function M.gather(a, index)
  if is_variable(a) then a = { input = a, index = index } end
  a = args("gather", a, nil, nil, "index input name overwrite")
  local x = check.variable("gather", "input", a.input)
  local idx = check.variable("gather", "index", a.index)
  if idx.dtype ~= "int32" and idx.dtype ~= "int64" then
    raise("gather: 'index' must be int32 or int64, got " .. tostring(idx.dtype))
  end
  local helper = LayerHelper("gather", a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = "gather", inputs = { X = { x }, Index = { idx } }, outputs = { Out = { out } },
                    attrs = { overwrite = check.boolean("gather", "overwrite", a.overwrite, true) } }
  return out
end

-- starts/ends of slice: a list of integers and Variables, or one int32 Variable
local function slice_bounds(key, v, n, inputs, attrs, flags, helper)
  local L = "slice"
  if is_variable(v) then
    inputs[key == "starts" and "StartsTensor" or "EndsTensor"] = { v }
    for i = 1, n do flags[i] = -1 end
    return
  end
  if type(v) == "number" then v = { v } end
  if type(v) ~= "table" or #v ~= n then
    check.fail(L, key, string.format("a list of %d integers (one per axis) or an int32 Variable", n), v)
  end
  local has_var = false
  for i = 1, n do
    if is_variable(v[i]) then has_var = true
    elseif type(v[i]) ~= "number" or v[i] % 1 ~= 0 then check.fail(L, key .. "[" .. i .. "]", "an integer or a Variable", v[i]) end
  end
  if not has_var then
    attrs[key] = v
    return
  end
  local list = {}
  for i = 1, n do
    if is_variable(v[i]) then
      list[i] = v[i]
      flags[i] = -1
    else
      local c = helper:create_variable_for_type_inference("int32", true)
      helper:append_op{ type = "fill_constant", outputs = { Out = { c } },
                        attrs = { shape = { 1 }, dtype = "int32", value = v[i] } }
      list[i] = c
    end
  end
  inputs[key == "starts" and "StartsTensorList" or "EndsTensorList"] = list
end

--- The part of `input` from `starts` to `ends` (exclusive) along `axes`,
-- the other dims whole. Negative starts/ends count from the end of their
-- dim; ends beyond it are clipped. Also `slice(input, axes, starts, ends)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input
-- @tparam {int,...} a.axes the dims to cut (0-based)
-- @tparam {int,...}|Variable a.starts one per axis (integers or int32 [1] Variables), or an int32 Variable
-- @tparam {int,...}|Variable a.ends as starts
-- @tparam[opt] string a.name
-- @param[opt] axes with a positional input
-- @param[opt] starts with a positional input
-- @param[opt] ends with a positional input
-- @treturn Variable
-- @usage local mid = layers.slice{input = x, axes = {1}, starts = {1}, ends = {3}}
function M.slice(a, axes, starts, ends)
  a = args("slice", a, "input", { axes = axes, starts = starts, ends = ends }, "axes ends input name starts")
  local x = check.variable("slice", "input", a.input)
  local ax = int_list("slice", "axes", a.axes)
  for i, v in ipairs(ax) do axis_in("slice", "axes[" .. i .. "]", v, #x.shape) end
  local helper = LayerHelper("slice", a)
  local inputs, attrs, flags = { Input = { x } }, { axes = ax }, {}
  for i = 1, #ax do flags[i] = 1 end
  if a.starts == nil then check.fail("slice", "starts", "a list of integers", nil) end
  if a.ends == nil then check.fail("slice", "ends", "a list of integers", nil) end
  slice_bounds("starts", a.starts, #ax, inputs, attrs, flags, helper)
  slice_bounds("ends", a.ends, #ax, inputs, attrs, flags, helper)
  attrs.infer_flags = flags
  local out = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = "slice", inputs = inputs, outputs = { Out = { out } }, attrs = attrs }
  return out
end

--- Where `condition` holds, x; elsewhere y (Paddle's paddle.where(condition,
-- x, y); all three of one shape). Fluid 1.8's one-argument
-- `where(condition)`, the coordinates of the true elements, needs the
-- where_index op: layers.nonzero(condition).
-- Also `where(condition, x, y)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.condition bool
-- @tparam Variable a.x
-- @tparam Variable a.y of x's dtype
-- @tparam[opt] string a.name
-- @param[opt] x with a positional condition
-- @param[opt] y with a positional condition
-- @treturn Variable shaped like x
-- @usage local relu_like = layers.where(layers.greater_than(x, zero), x, zero)
function M.where(a, x, y)
  if is_variable(a) then a = { condition = a, x = x, y = y } end
  a = args("where", a, nil, nil, "condition name x y")
  local c = check.variable("where", "condition", a.condition)
  if c.dtype ~= "bool" then raise("where: 'condition' must be a bool Variable, got " .. tostring(c.dtype)) end
  if a.x == nil and a.y == nil then
    raise("where: give 'x' and 'y' (paddle.where(condition, x, y)); Fluid's where(condition), the coordinates "
      .. "of the true elements, is layers.nonzero(condition) (op where_index)")
  end
  local xv = check.variable("where", "x", a.x)
  local yv = check.variable("where", "y", a.y)
  if xv.dtype ~= yv.dtype then
    raise(string.format("where: 'x' (%s) and 'y' (%s) must have one dtype", tostring(xv.dtype), tostring(yv.dtype)))
  end
  local helper = LayerHelper("where", a)
  local out = helper:create_variable_for_type_inference(xv.dtype)
  helper:append_op{ type = "where", inputs = { Condition = { c }, X = { xv }, Y = { yv } }, outputs = { Out = { out } } }
  return out
end

--- The elementwise sum of one or more Variables of one shape (Fluid's
-- layers.sum; also `sums`). Also `sum(x)` and `sum{x1, x2, ...}`.
-- @tparam table a keyword arguments:
-- @tparam Variable|{Variable,...} a.x
-- @tparam[opt] string a.name
-- @treturn Variable
-- @usage local total = layers.sum{x = {a, b, c}}
function M.sum(a)
  if type(a) == "table" and not is_variable(a) and a.x == nil and is_variable(a[1]) then a = { x = a } end
  a = args("sum", a, "x", nil, "name x")
  local inputs = check.variables("sum", "x", a.x)
  local helper = LayerHelper("sum", a)
  local out = helper:create_variable_for_type_inference(helper:input_dtype(inputs))
  helper:append_op{ type = "sum", inputs = { X = inputs }, outputs = { Out = { out } } }
  return out
end

-- ---- shapes ----------------------------------------------------------------------------

--- Stacks Variables of one shape along a new dim `axis`. Also `stack(xs, axis)`.
-- @tparam table a keyword arguments:
-- @tparam Variable|{Variable,...} a.x
-- @tparam[opt=0] int a.axis where the new dim goes, in [-(rank+1), rank+1)
-- @tparam[opt] string a.name
-- @tparam[opt] int axis with a positional list
-- @treturn Variable of rank + 1, the new dim of length #x
-- @usage local pair = layers.stack({a, b}, 1)
function M.stack(a, axis)
  if type(a) == "table" and not is_variable(a) and a.x == nil and is_variable(a[1]) then
    a = { x = a, axis = axis }
  end
  a = args("stack", a, "x", { axis = axis }, "axis name x")
  local xs = check.variables("stack", "x", a.x)
  local rank = #xs[1].shape
  for i = 2, #xs do
    if #xs[i].shape ~= rank then
      raise(string.format("stack: 'x[%d]' has %d dims, 'x[1]' %d; all must have one shape", i, #xs[i].shape, rank))
    end
  end
  local ax = axis_in("stack", "axis", a.axis == nil and 0 or a.axis, rank, 1)
  local helper = LayerHelper("stack", a)
  local out = helper:create_variable_for_type_inference(helper:input_dtype(xs))
  helper:append_op{ type = "stack", inputs = { X = xs }, outputs = { Y = { out } }, attrs = { axis = ax } }
  return out
end

-- appends a *2 shape op (squeeze2, unsqueeze2, flatten2), whose gradient reads XShape
local function shape2(helper, op_type, x, attrs)
  local out = helper:create_variable_for_type_inference(x.dtype)
  local xshape = helper:create_variable_for_type_inference(x.dtype, true)
  helper:append_op{ type = op_type, inputs = { X = { x } }, outputs = { Out = { out }, XShape = { xshape } },
                    attrs = attrs }
  return out
end

--- Removes the dims of size 1 listed in `axes` (all size-1 dims when axes
-- is empty). Also `squeeze(input, axes)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input
-- @tparam {int,...}|int a.axes
-- @tparam[opt] string a.name
-- @param[opt] axes with a positional input
-- @treturn Variable
-- @usage local v = layers.squeeze{input = x, axes = {1}}   -- [N, 1, D] -> [N, D]
function M.squeeze(a, axes)
  a = args("squeeze", a, "input", { axes = axes }, "axes input name")
  local x = check.variable("squeeze", "input", a.input)
  if a.axes == nil then check.fail("squeeze", "axes", "a list of integers", nil) end
  local ax = int_list("squeeze", "axes", a.axes, true)
  local shape = x.shape
  for i, v in ipairs(ax) do
    axis_in("squeeze", "axes[" .. i .. "]", v, #shape)
    local d = shape[(v < 0 and v + #shape or v) + 1]
    if d and d > 1 then
      raise(string.format("squeeze: 'axes[%d]' = %d names a dim of size %d; only dims of size 1 can go", i, v, d))
    end
  end
  return shape2(LayerHelper("squeeze", a), "squeeze2", x, { axes = ax })
end

--- Inserts dims of size 1 at `axes` (positions in the output). Also
-- `unsqueeze(input, axes)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input
-- @tparam {int,...}|int a.axes
-- @tparam[opt] string a.name
-- @param[opt] axes with a positional input
-- @treturn Variable
-- @usage local col = layers.unsqueeze{input = v, axes = {1}}   -- [N] -> [N, 1]
function M.unsqueeze(a, axes)
  a = args("unsqueeze", a, "input", { axes = axes }, "axes input name")
  local x = check.variable("unsqueeze", "input", a.input)
  if a.axes == nil then check.fail("unsqueeze", "axes", "a list of integers", nil) end
  local ax = int_list("unsqueeze", "axes", a.axes)
  return shape2(LayerHelper("unsqueeze", a), "unsqueeze2", x, { axes = ax })
end

--- Flattens x into a matrix: the dims before `axis` form the rows, the
-- rest the columns. Also `flatten(x, axis)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x
-- @tparam[opt=1] int a.axis in [0, rank]; 0 gives [1, numel]
-- @tparam[opt] string a.name
-- @tparam[opt] int axis with a positional x
-- @treturn Variable 2-D
-- @usage local m = layers.flatten{x = feat, axis = 1}   -- [N, C, H, W] -> [N, C*H*W]
function M.flatten(a, axis)
  a = args("flatten", a, "x", { axis = axis }, "axis name x")
  local x = check.variable("flatten", "x", a.x)
  local ax = check.int("flatten", "axis", a.axis, 1)
  if ax < 0 or ax > #x.shape then
    raise(string.format("flatten: 'axis' = %d must be in [0, %d] for an input of %d dims", ax, #x.shape, #x.shape))
  end
  return shape2(LayerHelper("flatten", a), "flatten2", x, { axis = ax })
end

-- a repeat count list (or an int32 Variable holding it) for expand / tile / broadcast_to
local function times_arg(layer, key, v, inputs, slot, attrs, attr, min)
  if is_variable(v) then
    inputs[slot] = { v }
    return
  end
  local t = int_list(layer, key, v)
  for i, n in ipairs(t) do
    if n < min then check.fail(layer, key .. "[" .. i .. "]", min == 1 and "positive" or "-1 or positive", n) end
  end
  attrs[attr] = t
end

--- Repeats x `expand_times[i]` times along dim i (Fluid 1.8's expand; one
-- count per dim). Also `expand(x, expand_times)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x
-- @tparam {int,...}|Variable a.expand_times positive counts, one per dim (or an int32 Variable)
-- @tparam[opt] string a.name
-- @param[opt] expand_times with a positional x
-- @treturn Variable
-- @usage local tiled = layers.expand{x = row, expand_times = {4, 1}}   -- [1, D] -> [4, D]
function M.expand(a, expand_times)
  a = args("expand", a, "x", { expand_times = expand_times }, "expand_times name x")
  local x = check.variable("expand", "x", a.x)
  local inputs, attrs = { X = { x } }, {}
  times_arg("expand", "expand_times", a.expand_times, inputs, "ExpandTimes", attrs, "expand_times", 1)
  if attrs.expand_times and #attrs.expand_times ~= #x.shape then
    raise(string.format("expand: 'expand_times' has %d values, x has %d dims", #attrs.expand_times, #x.shape))
  end
  local helper = LayerHelper("expand", a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = "expand", inputs = inputs, outputs = { Out = { out } }, attrs = attrs }
  return out
end

--- Repeats x `repeat_times[i]` times along dim i; a shorter x gets leading
-- dims of size 1 (Paddle 2.x's paddle.tile). Also `tile(x, repeat_times)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x
-- @tparam {int,...}|Variable a.repeat_times positive counts (or an int32 Variable)
-- @tparam[opt] string a.name
-- @param[opt] repeat_times with a positional x
-- @treturn Variable
-- @usage local t = layers.tile(x, {2, 3})
function M.tile(a, repeat_times)
  a = args("tile", a, "x", { repeat_times = repeat_times }, "name repeat_times x")
  local x = check.variable("tile", "x", a.x)
  local inputs, attrs = { X = { x } }, {}
  times_arg("tile", "repeat_times", a.repeat_times, inputs, "RepeatTimes", attrs, "repeat_times", 1)
  local helper = LayerHelper("tile", a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = "tile", inputs = inputs, outputs = { Out = { out } }, attrs = attrs }
  return out
end

--- Broadcasts x to `shape`: dims of size 1 are repeated, missing leading
-- dims added; -1 keeps x's dim (Paddle 2.x's paddle.broadcast_to, the
-- expand_v2 op). Also `broadcast_to(x, shape)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x
-- @tparam {int,...}|Variable a.shape the target shape (or an int32 Variable)
-- @tparam[opt] string a.name
-- @param[opt] shape with a positional x
-- @treturn Variable
-- @usage local b = layers.broadcast_to{x = bias, shape = {8, 16}}   -- [1, 16] -> [8, 16]
function M.broadcast_to(a, shape)
  a = args("broadcast_to", a, "x", { shape = shape }, "name shape x")
  local x = check.variable("broadcast_to", "x", a.x)
  local inputs, attrs = { X = { x } }, {}
  times_arg("broadcast_to", "shape", a.shape, inputs, "Shape", attrs, "shape", -1)
  local helper = LayerHelper("broadcast_to", a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = "expand_v2", inputs = inputs, outputs = { Out = { out } }, attrs = attrs }
  return out
end

--- Pads the two spatial dims of 4-D images (Fluid's pad2d): constant,
-- reflect or edge (repeat the border) padding.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input [N, C, H, W] (or [N, H, W, C] with data_format "NHWC")
-- @tparam[opt={0,0,0,0}] {int,int,int,int} a.paddings {top, bottom, left, right}
-- @tparam[opt="constant"] string a.mode "constant", "reflect" or "edge"
-- @tparam[opt=0] number a.pad_value the value of constant padding
-- @tparam[opt="NCHW"] string a.data_format "NCHW" or "NHWC"
-- @tparam[opt] string a.name
-- @treturn Variable
-- @usage local p = layers.pad2d{input = img, paddings = {1, 1, 2, 2}, mode = "reflect"}
function M.pad2d(a)
  a = args("pad2d", a, "input", nil, "data_format input mode name pad_value paddings")
  local L = "pad2d"
  local x = check.variable(L, "input", a.input)
  if #x.shape ~= 4 then raise("pad2d: 'input' must be 4-D, got shape " .. framework.shape_text(x.shape)) end
  local p = a.paddings == nil and { 0, 0, 0, 0 } or a.paddings
  if type(p) ~= "table" or #p ~= 4 then check.fail(L, "paddings", "a list of 4 integers {top, bottom, left, right}", p) end
  for i = 1, 4 do
    if type(p[i]) ~= "number" or p[i] % 1 ~= 0 or p[i] < 0 then check.fail(L, "paddings[" .. i .. "]", "a non-negative integer", p[i]) end
  end
  local mode = check.string(L, "mode", a.mode, "constant", { "constant", "reflect", "edge" })
  local fmt = check.string(L, "data_format", a.data_format, "NCHW", { "NCHW", "NHWC" })
  local value = check.number(L, "pad_value", a.pad_value, 0.0)
  local helper = LayerHelper(L, a)
  local tensor_layers = require("oar.layers.tensor")
  -- NHWC goes through NCHW: oar's pad3d pads NCDHW only
  if fmt == "NHWC" then x = tensor_layers.transpose(x, { 0, 3, 1, 2 }) end
  -- as a 5-D pad3d with a depth of 1: NCHW -> NC1HW
  local x5 = shape2(helper, "unsqueeze2", x, { axes = { 2 } })
  local padded = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = "pad3d", inputs = { X = { x5 } }, outputs = { Out = { padded } },
    attrs = { paddings = { p[3], p[4], p[1], p[2], 0, 0 }, mode = mode == "edge" and "replicate" or mode,
              value = value, data_format = "NCDHW" } }
  local out = shape2(helper, "squeeze2", padded, { axes = { 2 } })
  if fmt == "NHWC" then out = tensor_layers.transpose(out, { 0, 2, 3, 1 }) end
  return out
end

-- ---- norms -----------------------------------------------------------------------------

--- The p-norm of x along `axis`: (sum |x|^p)^(1/p); porder inf / -inf give
-- the largest / smallest |x|, 0 the count of non-zeros (Paddle 2.x's
-- p_norm op, which paddle.norm uses). Also `p_norm(x, porder)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x
-- @tparam[opt=2] number a.porder p
-- @tparam[opt=-1] int a.axis
-- @tparam[opt=false] bool a.keepdim keep the reduced dim as size 1
-- @tparam[opt=false] bool a.asvector the norm of all of x as one vector
-- @tparam[opt=1e-12] number a.epsilon guards the gradient where the norm is 0
-- @tparam[opt] string a.name
-- @tparam[opt] number porder with a positional x
-- @treturn Variable
-- @usage local n = layers.p_norm{x = v, porder = 2, axis = 1}
function M.p_norm(a, porder)
  a = args("p_norm", a, "x", { porder = porder }, "asvector axis epsilon keepdim name porder x")
  local x = check.variable("p_norm", "x", a.x)
  local asvector = check.boolean("p_norm", "asvector", a.asvector, false)
  local axis = asvector and check.int("p_norm", "axis", a.axis, -1) or axis_in("p_norm", "axis", a.axis == nil and -1 or a.axis, #x.shape)
  local helper = LayerHelper("p_norm", a)
  return helper:unary("p_norm", x, { porder = check.number("p_norm", "porder", a.porder, 2.0), axis = axis,
    epsilon = check.number("p_norm", "epsilon", a.epsilon, 1e-12),
    keepdim = check.boolean("p_norm", "keepdim", a.keepdim, false), asvector = asvector })
end

--- A tensor shaped like x filled with `fill_value` (Paddle 2.x's
-- paddle.full_like, the fill_any_like op). Also `full_like(x, fill_value)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x
-- @tparam number a.fill_value
-- @tparam[opt] string a.dtype default: x's
-- @tparam[opt] string a.name
-- @tparam[opt] number fill_value with a positional x
-- @treturn Variable (stop_gradient)
-- @usage local halves = layers.full_like(x, 0.5)
function M.full_like(a, fill_value)
  a = args("full_like", a, "x", { fill_value = fill_value }, "dtype fill_value name x")
  local x = check.variable("full_like", "x", a.x)
  local value = check.number("full_like", "fill_value", a.fill_value)
  local dtype = check.dtype("full_like", "dtype", a.dtype, x.dtype)
  local helper = LayerHelper("full_like", a)
  local out = helper:create_variable_for_type_inference(dtype, true)
  helper:append_op{ type = "fill_any_like", inputs = { X = { x } }, outputs = { Out = { out } },
                    attrs = { value = value, dtype = dtype } }
  return out
end

--- Reads a tensor saved by a `save` op (oar.io's per-variable files) into
-- `out` when the program runs (Fluid's layers.load). Also `load(out, file_path)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.out the variable to fill
-- @tparam string a.file_path
-- @tparam[opt=false] bool a.load_as_fp16 convert to float16 while loading
-- @param[opt] file_path with a positional out
-- @treturn Variable out
-- @usage layers.load{out = w, file_path = "model/w"}
function M.load(a, file_path)
  if is_variable(a) then a = { out = a, file_path = file_path } end
  a = args("load", a, nil, nil, "file_path load_as_fp16 out")
  local out = check.variable("load", "out", a.out)
  if type(a.file_path) ~= "string" or a.file_path == "" then check.fail("load", "file_path", "a file name", a.file_path) end
  local helper = LayerHelper("load", {})
  helper:append_op{ type = "load", outputs = { Out = { out } },
    attrs = { file_path = a.file_path,
              load_as_fp16 = check.boolean("load", "load_as_fp16", a.load_as_fp16, false) } }
  return out
end

-- ---- random tensors --------------------------------------------------------------------

local function random_layer(L, a, op_type, attrs)
  local shape = a.shape
  if type(shape) ~= "table" or is_variable(shape) or #shape == 0 then
    check.fail(L, "shape", "a list of integers", shape)
  end
  for i, d in ipairs(shape) do
    if type(d) ~= "number" or d % 1 ~= 0 or d < 1 then
      check.fail(L, "shape[" .. i .. "]", "a positive integer", d)
    end
  end
  local dtype = check.dtype(L, "dtype", a.dtype, "float32")
  if dtype ~= "float32" and dtype ~= "float64" then
    check.fail(L, "dtype", "\"float32\" or \"float64\"", a.dtype)
  end
  local helper = LayerHelper(L, a)
  local seed = check.int(L, "seed", a.seed, 0)
  if seed == 0 and helper.main_program.random_seed ~= 0 then seed = helper.main_program.random_seed end
  attrs.shape, attrs.dtype, attrs.seed = shape, dtype, seed
  local out = helper:create_variable_for_type_inference(dtype, true)
  helper:append_op{ type = op_type, outputs = { Out = { out } }, attrs = attrs }
  return out
end

--- A tensor of values drawn uniformly from [min, max): new values at every
-- run, or the same ones at every run with a fixed seed (as in Fluid).
-- @tparam table a keyword arguments:
-- @tparam {int,...} a.shape positive dims
-- @tparam[opt="float32"] string a.dtype "float32" or "float64"
-- @tparam[opt=-1.0] number a.min
-- @tparam[opt=1.0] number a.max
-- @tparam[opt=0] int a.seed 0: the program's random_seed when set, else fresh values at every run
-- @tparam[opt] string a.name
-- @treturn Variable
-- @usage local noise = layers.uniform_random{shape = {4, 8}, min = -0.1, max = 0.1}
function M.uniform_random(a)
  a = args("uniform_random", a, nil, nil, "dtype max min name seed shape")
  local lo = check.number("uniform_random", "min", a.min, -1.0)
  local hi = check.number("uniform_random", "max", a.max, 1.0)
  if lo > hi then raise(string.format("uniform_random: 'min' (%g) must not exceed 'max' (%g)", lo, hi)) end
  return random_layer("uniform_random", a, "uniform_random", { min = lo, max = hi })
end

--- A tensor of values drawn from Normal(mean, std): new values at every
-- run, or the same ones at every run with a fixed seed (as in Fluid).
-- @tparam table a keyword arguments:
-- @tparam {int,...} a.shape positive dims
-- @tparam[opt=0.0] number a.mean
-- @tparam[opt=1.0] number a.std
-- @tparam[opt=0] int a.seed 0: the program's random_seed when set, else fresh values at every run
-- @tparam[opt="float32"] string a.dtype "float32" or "float64"
-- @tparam[opt] string a.name
-- @treturn Variable
-- @usage local z = layers.gaussian_random{shape = {16, 32}, std = 0.02}
function M.gaussian_random(a)
  a = args("gaussian_random", a, nil, nil, "dtype mean name seed shape std")
  local std = check.number("gaussian_random", "std", a.std, 1.0)
  if std < 0 then check.fail("gaussian_random", "std", "not negative", std) end
  return random_layer("gaussian_random", a, "gaussian_random",
    { mean = check.number("gaussian_random", "mean", a.mean, 0.0), std = std })
end

return M
