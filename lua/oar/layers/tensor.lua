--- oar.layers.tensor: data, constants, shape manipulation, casts, comparisons
-- and logic (Fluid's layers/tensor.py and the comparison layers).
-- @module oar.layers.tensor
local LayerHelper = require("oar.layer_helper")
local argcheck = require("oar.argcheck")
local framework = require("oar.framework")
local initializer = require("oar.initializer")
local unique_name = require("oar.unique_name")
local dtypes = require("oar.dtypes")
local lib = require("oar.lib")

local check, args = LayerHelper.check, LayerHelper.args
local raise, is_variable = framework.raise, framework.is_variable

local M = {}

--- A variable fed at run time, declared in the global block.
-- @tparam table a keyword arguments:
-- @tparam string a.name the feed name
-- @tparam {int,...} a.shape the shape of one example; -1 stands for the batch size
-- @tparam[opt="float32"] string a.dtype "float32", "int64", ...
-- @tparam[opt=0] int a.lod_level 1 for sequences (the fed Tensor then needs t:set_lod{{0, 2, 5}})
-- @tparam[opt=true] bool a.append_batch_size put a -1 batch dim in front (unless shape has a -1)
-- @tparam[opt=true] bool a.stop_gradient no gradient flows into it
-- @treturn Variable the data variable
-- @usage local x = layers.data{name = "x", shape = {13}}              -- [-1, 13]
-- local words = layers.data{name = "w", shape = {1}, dtype = "int64", lod_level = 1}
function M.data(a)
  a = args("data", a, nil, nil, "append_batch_size dtype lod_level name shape stop_gradient type")
  if type(a.name) ~= "string" or a.name == "" then check.fail("data", "name", "a non-empty string", a.name) end
  local shape = a.shape
  if type(shape) ~= "table" then check.fail("data", "shape", "a list of integers", shape) end
  local append_batch = a.append_batch_size
  if append_batch == nil then append_batch = true end
  local dims = {}
  for i, d in ipairs(shape) do
    if type(d) ~= "number" or d % 1 ~= 0 or d < -1 or d == 0 then
      check.fail("data", "shape[" .. i .. "]", "a positive integer or -1", d)
    end
    if d == -1 then append_batch = false end
    dims[i] = d
  end
  if append_batch then table.insert(dims, 1, -1) end
  local helper = LayerHelper("data", a)
  return helper.main_program:global_block():create_var{
    name = a.name, shape = dims, dtype = check.dtype("data", "dtype", a.dtype, "float32"),
    lod_level = check.int("data", "lod_level", a.lod_level, 0), type = a.type,
    stop_gradient = a.stop_gradient ~= false, need_check_feed = true,
  }
end

--- Declares an empty variable for an op to write (Fluid's `create_tensor`).
-- Also `create_tensor("float32")`.
-- @tparam table a keyword arguments:
-- @tparam string a.dtype
-- @tparam[opt] string a.name default: a unique "create_tensor_N"
-- @tparam[opt=false] bool a.persistable
-- @treturn Variable
-- @usage local out = layers.create_tensor{dtype = "float32"}
function M.create_tensor(a)
  a = args("create_tensor", a, "dtype", nil, "dtype name persistable")
  local helper = LayerHelper("create_tensor", a)
  return helper:create_variable{ name = a.name or helper.name, dtype = check.dtype("create_tensor", "dtype", a.dtype),
                                 persistable = a.persistable or false }
end

--- Declares a parameter (in the main program) with its initializer (in the
-- startup program), outside any layer.
-- @tparam table a keyword arguments:
-- @tparam {int,...} a.shape positive dims
-- @tparam[opt="float32"] string a.dtype
-- @tparam[opt] string a.name
-- @tparam[opt] ParamAttr|table a.attr its attributes (default: `{name = a.name}`)
-- @tparam[opt=false] bool a.is_bias default initializer Constant(0) for a bias, Xavier otherwise
-- @tparam[opt] Initializer a.default_initializer
-- @treturn Parameter
-- @usage local w = layers.create_parameter{shape = {4, 4}, dtype = "float32", name = "w"}
function M.create_parameter(a)
  a = args("create_parameter", a, nil, nil, "attr default_initializer dtype is_bias name shape")
  if type(a.shape) ~= "table" then check.fail("create_parameter", "shape", "a list of positive integers", a.shape) end
  local helper = LayerHelper("create_parameter", a)
  local attr = a.attr
  if attr == nil then attr = { name = a.name } end
  return helper:create_parameter(attr, a.shape, check.dtype("create_parameter", "dtype", a.dtype, "float32"),
    a.is_bias or false, a.default_initializer)
end

--- A variable of the main program's global block filled with `value` by the
-- startup program (stop_gradient).
-- @tparam table a keyword arguments:
-- @tparam {int,...} a.shape
-- @tparam number a.value
-- @tparam string a.dtype
-- @tparam[opt=false] bool a.persistable
-- @tparam[opt=false] bool a.force_cpu
-- @tparam[opt] string a.name default: a unique "global_var_N"
-- @treturn Variable
-- @usage local step = layers.create_global_var{shape = {1}, value = 0, dtype = "int64", persistable = true}
function M.create_global_var(a)
  a = args("create_global_var", a, nil, nil, "dtype force_cpu name persistable shape value")
  if type(a.shape) ~= "table" then check.fail("create_global_var", "shape", "a list of integers", a.shape) end
  local value = check.number("create_global_var", "value", a.value)
  local helper = LayerHelper("global_var", a)
  local var = helper:create_global_variable{
    name = a.name or unique_name.generate("global_var"), shape = a.shape,
    dtype = check.dtype("create_global_var", "dtype", a.dtype), persistable = a.persistable or false,
    stop_gradient = true,
  }
  helper:set_variable_initializer(var, initializer.Constant{ value = value, force_cpu = a.force_cpu })
  return var
end

--- A tensor of `shape` filled with `value` (stop_gradient).
-- @tparam table a keyword arguments:
-- @tparam {int,...} a.shape
-- @tparam string a.dtype
-- @tparam number|bool a.value
-- @tparam[opt] Variable a.out write into this variable instead of a new one
-- @tparam[opt=false] bool a.force_cpu
-- @tparam[opt] string a.name
-- @treturn Variable
-- @usage local i = layers.fill_constant{shape = {1}, dtype = "int64", value = 0}
function M.fill_constant(a)
  a = args("fill_constant", a, nil, nil, "dtype force_cpu name out shape value")
  if type(a.shape) ~= "table" then check.fail("fill_constant", "shape", "a list of integers", a.shape) end
  local dtype = check.dtype("fill_constant", "dtype", a.dtype)
  local value = a.value
  if type(value) == "boolean" then value = value and 1 or 0 end
  value = check.number("fill_constant", "value", value)
  local helper = LayerHelper("fill_constant", a)
  local out = a.out
  if out == nil then out = helper:create_variable_for_type_inference(dtype, true)
  else check.variable("fill_constant", "out", out) end
  helper:append_op{ type = "fill_constant", outputs = { Out = { out } },
    attrs = { shape = a.shape, dtype = dtype, value = value, force_cpu = a.force_cpu or false } }
  out.stop_gradient = true
  return out
end

--- A tensor filled with `value` whose dim `output_dim_idx` is the input's
-- dim `input_dim_idx` (the batch size) and the other dims are `shape`'s.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input
-- @tparam {int,...} a.shape
-- @tparam string a.dtype
-- @tparam number a.value
-- @tparam[opt=0] int a.input_dim_idx
-- @tparam[opt=0] int a.output_dim_idx
-- @tparam[opt] string a.name
-- @treturn Variable
-- @usage local h0 = layers.fill_constant_batch_size_like{input = x, shape = {-1, 32}, dtype = "float32", value = 0}
function M.fill_constant_batch_size_like(a)
  a = args("fill_constant_batch_size_like", a, nil, nil,
    "dtype input input_dim_idx name output_dim_idx shape value")
  local who = "fill_constant_batch_size_like"
  local input = check.variable(who, "input", a.input)
  if type(a.shape) ~= "table" then check.fail(who, "shape", "a list of integers", a.shape) end
  local dtype = check.dtype(who, "dtype", a.dtype)
  local helper = LayerHelper(who, a)
  local out = helper:create_variable_for_type_inference(dtype, true)
  helper:append_op{ type = "fill_constant_batch_size_like", inputs = { Input = { input } },
    outputs = { Out = { out } },
    attrs = { shape = a.shape, dtype = dtype, value = check.number(who, "value", a.value),
              input_dim_idx = check.int(who, "input_dim_idx", a.input_dim_idx, 0),
              output_dim_idx = check.int(who, "output_dim_idx", a.output_dim_idx, 0) } }
  out.stop_gradient = true
  return out
end

--- A tensor of zeros: `zeros(shape, dtype)` or `zeros{shape=, dtype=, force_cpu=false}`.
-- @tparam {int,...}|table a the shape, or keyword arguments
-- @tparam[opt] string dtype with a positional shape
-- @treturn Variable
-- @usage local z = layers.zeros({2, 3}, "float32")
function M.zeros(a, dtype)
  if type(a) == "table" and a.shape == nil then a = { shape = a, dtype = dtype } end
  a = args("zeros", a, nil, nil, "dtype force_cpu shape")
  return M.fill_constant{ shape = a.shape, dtype = a.dtype, value = 0.0, force_cpu = a.force_cpu }
end

--- A tensor of ones: `ones(shape, dtype)` or `ones{shape=, dtype=, force_cpu=false}`.
-- @tparam {int,...}|table a the shape, or keyword arguments
-- @tparam[opt] string dtype with a positional shape
-- @treturn Variable
-- @usage local o = layers.ones({2, 3}, "float32")
function M.ones(a, dtype)
  if type(a) == "table" and a.shape == nil then a = { shape = a, dtype = dtype } end
  a = args("ones", a, nil, nil, "dtype force_cpu shape")
  return M.fill_constant{ shape = a.shape, dtype = a.dtype, value = 1.0, force_cpu = a.force_cpu }
end

--- Zeros shaped like x (stop_gradient). Also `zeros_like{x=, name=}`.
-- @tparam Variable|table a
-- @treturn Variable
-- @usage local z = layers.zeros_like(x)
function M.zeros_like(a)
  a = args("zeros_like", a, "x", nil, "name x")
  local x = check.variable("zeros_like", "x", a.x)
  local out = LayerHelper("zeros_like", a):unary("fill_zeros_like", x, nil)
  out.stop_gradient = true
  return out
end

--- Ones shaped like x (stop_gradient). Also `ones_like{x=, name=}`.
-- @tparam Variable|table a
-- @treturn Variable
-- @usage local o = layers.ones_like(x)
function M.ones_like(a)
  a = args("ones_like", a, "x", nil, "name x")
  local x = check.variable("ones_like", "x", a.x)
  local helper = LayerHelper("ones_like", a)
  local zeros = helper:unary("fill_zeros_like", x, nil)
  local out = helper:unary("scale", zeros, { scale = 1.0, bias = 1.0 })
  out.stop_gradient = true
  return out
end

--- Copies a Variable, or writes a Lua number, table of numbers or Tensor
-- as a constant (float32, int32 or int64). Also `assign{input=, output=}`.
-- @tparam Variable|Tensor|table|number input
-- @tparam[opt] Variable output write here (default: a new variable)
-- @treturn Variable output
-- @usage
-- local c = layers.assign({{1, 2}, {3, 4}})   -- a float32 [2, 2] constant
-- layers.assign(new_value, state)             -- state = new_value
function M.assign(input, output)
  if type(input) == "table" and not is_variable(input) and input.input ~= nil then
    argcheck.keys("layers.assign", input, "input output")
    input, output = input.input, input.output
  end
  check.opt_variable("assign", "output", output)
  local helper = LayerHelper("assign", {})
  if is_variable(input) then
    output = output or helper:create_variable_for_type_inference(input.dtype)
    helper:append_op{ type = "assign", inputs = { X = { input } }, outputs = { Out = { output } } }
    return output
  end
  local tensor = require("oar.tensor")
  local t = input
  if type(t) == "number" then t = { t } end
  if type(t) == "table" and not tensor.is_tensor(t) then t = tensor(t, output and output.dtype or "float32") end
  if not tensor.is_tensor(t) then check.fail("assign", "input", "a Variable, a Tensor or a table of numbers", input) end
  local dtype = t:dtype()
  local attrs = { shape = t:shape(), dtype = dtype }
  local values = {}
  local p = t:data()
  for i = 0, t:numel() - 1 do values[i + 1] = tonumber(p[i]) end
  if dtype == "float32" then attrs.fp32_values = values
  elseif dtype == "int32" then attrs.int32_values = values
  elseif dtype == "int64" then attrs.int64_values = values
  else raise("assign: constant tensors must be float32, int32 or int64, got " .. dtype) end
  output = output or helper:create_variable_for_type_inference(dtype)
  helper:append_op{ type = "assign_value", outputs = { Out = { output } }, attrs = attrs }
  return output
end

--- Converts x to `dtype`. Also `cast(x, dtype)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x
-- @tparam string a.dtype
-- @tparam[opt] string a.name
-- @tparam[opt] string dtype with a positional x
-- @treturn Variable
-- @usage local f = layers.cast(label, "float32")
function M.cast(a, dtype)
  a = args("cast", a, "x", { dtype = dtype }, "dtype name x")
  local x = check.variable("cast", "x", a.x)
  local to = check.dtype("cast", "dtype", a.dtype)
  local helper = LayerHelper("cast", a)
  local out = helper:create_variable_for_type_inference(to)
  helper:append_op{ type = "cast", inputs = { X = { x } }, outputs = { Out = { out } },
                    attrs = { in_dtype = x.dtype or "float32", out_dtype = to } }
  return out
end

--- Concatenates variables along `axis`. Also `concat({a, b}, axis)`.
-- @tparam table a keyword arguments:
-- @tparam {Variable,...} a.input
-- @tparam[opt=0] int a.axis
-- @tparam[opt] string a.name
-- @tparam[opt] int axis with a positional list
-- @treturn Variable
-- @usage local ab = layers.concat({a, b}, 1)
function M.concat(a, axis)
  if type(a) == "table" and not is_variable(a) and a.input == nil and is_variable(a[1]) then
    a = { input = a, axis = axis }
  end
  a = args("concat", a, nil, nil, "axis input name")
  local inputs = check.variables("concat", "input", a.input)
  local helper = LayerHelper("concat", a)
  local out = helper:create_variable_for_type_inference(helper:input_dtype(inputs))
  helper:append_op{ type = "concat", inputs = { X = inputs }, outputs = { Out = { out } },
                    attrs = { axis = check.int("concat", "axis", a.axis, 0) } }
  return out
end

--- The elementwise sum of variables of one shape. Also `sums({a, b, c})`.
-- @tparam table a keyword arguments:
-- @tparam {Variable,...} a.input
-- @tparam[opt] Variable a.out write here
-- @tparam[opt] string a.name
-- @treturn Variable
-- @usage local total = layers.sums({a, b, c})
function M.sums(a)
  if type(a) == "table" and not is_variable(a) and a.input == nil and is_variable(a[1]) then a = { input = a } end
  a = args("sums", a, "input", nil, "input name out")
  local inputs = check.variables("sums", "input", a.input)
  local helper = LayerHelper("sum", a)
  local out = a.out or helper:create_variable_for_type_inference(helper:input_dtype(inputs))
  helper:append_op{ type = "sum", inputs = { X = inputs }, outputs = { Out = { out } } }
  return out
end

--- Splits a variable along `dim` into equal parts or sections of given sizes.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input
-- @tparam int|{int,...} a.num_or_sections a number of equal parts, or the sizes
-- @tparam[opt=-1] int a.dim
-- @tparam[opt] string a.name
-- @treturn {Variable,...}
-- @usage local parts = layers.split{input = x, num_or_sections = {2, 3}, dim = 1}
function M.split(a)
  a = args("split", a, "input", nil, "dim input name num_or_sections")
  local x = check.variable("split", "input", a.input)
  local dim = check.int("split", "dim", a.dim, -1)
  local shape = x.shape
  if dim < 0 then dim = dim + #shape end
  if dim < 0 or dim >= #shape then raise("split: 'dim' is outside the input's " .. #shape .. " dims") end
  local ns = a.num_or_sections
  local num, sections, n = 0, {}, 0
  if type(ns) == "number" then
    num = check.positive_int("split", "num_or_sections", ns)
    n = num
    if shape[dim + 1] > 0 and shape[dim + 1] % num ~= 0 then
      raise(string.format("split: dim %d of size %d does not divide into %d parts", dim, shape[dim + 1], num))
    end
  elseif type(ns) == "table" and #ns > 0 then
    for i, s in ipairs(ns) do sections[i] = check.int("split", "num_or_sections", s) end
    n = #ns
  else
    check.fail("split", "num_or_sections", "a positive integer or a list of section sizes", ns)
  end
  local helper = LayerHelper("split", a)
  local outs = {}
  for i = 1, n do outs[i] = helper:create_variable_for_type_inference(x.dtype) end
  helper:append_op{ type = "split", inputs = { X = { x } }, outputs = { Out = outs },
                    attrs = { num = num, sections = sections, axis = dim } }
  return outs
end

local function has_op(t) return lib.C.oar_op_is_registered(t) end

--- A view of x with another shape: one dim may be -1 (inferred), 0 keeps the
-- input's dim. Also `reshape(x, shape)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x
-- @tparam {int,...} a.shape
-- @tparam[opt] string|table a.act activation
-- @tparam[opt] string a.name
-- @tparam[opt] {int,...} shape with a positional x
-- @treturn Variable
-- @usage local flat = layers.reshape(img, {-1, 784})
function M.reshape(a, shape)
  a = args("reshape", a, "x", { shape = shape }, "act name shape x")
  local x = check.variable("reshape", "x", a.x)
  if type(a.shape) ~= "table" or #a.shape == 0 then check.fail("reshape", "shape", "a list of integers", a.shape) end
  local negs = 0
  for i, d in ipairs(a.shape) do
    check.int("reshape", "shape[" .. i .. "]", d)
    if d == -1 then negs = negs + 1 elseif d < 0 then check.fail("reshape", "shape[" .. i .. "]", ">= -1", d) end
  end
  if negs > 1 then raise("reshape: only one dimension of 'shape' may be -1") end
  local helper = LayerHelper("reshape", a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  local outputs = { Out = { out } }
  local op_type = "reshape"
  if not has_op("reshape") and has_op("reshape2") then
    op_type = "reshape2"
    outputs.XShape = { helper:create_variable_for_type_inference(x.dtype, true) }
  end
  helper:append_op{ type = op_type, inputs = { X = { x } }, outputs = outputs, attrs = { shape = a.shape } }
  return helper:append_activation(out)
end

--- Permutes the dims of x: output dim i is input dim perm[i] (0-based).
-- Also `transpose(x, perm)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x
-- @tparam {int,...} a.perm a permutation of 0..rank-1
-- @tparam[opt] string a.name
-- @tparam[opt] {int,...} perm with a positional x
-- @treturn Variable
-- @usage local nhwc = layers.transpose(x, {0, 2, 3, 1})
function M.transpose(a, perm)
  a = args("transpose", a, "x", { perm = perm }, "name perm x")
  local x = check.variable("transpose", "x", a.x)
  local p = a.perm
  if type(p) ~= "table" or #p ~= #x.shape then
    check.fail("transpose", "perm", "a permutation of the " .. #x.shape .. " input dims", p)
  end
  local seen = {}
  for i, d in ipairs(p) do
    check.int("transpose", "perm[" .. i .. "]", d)
    if d < 0 or d >= #p or seen[d] then check.fail("transpose", "perm", "a permutation of 0.." .. (#p - 1), p) end
    seen[d] = true
  end
  local helper = LayerHelper("transpose", a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  local outputs = { Out = { out } }
  local op_type = "transpose"
  if not has_op("transpose") and has_op("transpose2") then
    op_type = "transpose2"
    outputs.XShape = { helper:create_variable_for_type_inference(x.dtype, true) }
  end
  helper:append_op{ type = op_type, inputs = { X = { x } }, outputs = outputs, attrs = { axis = p } }
  return out
end

-- argmax{x=, axis=0} / argmin -> int64 indices
local function arg_layer(op_type, layer)
  return function(a, axis)
    a = args(layer, a, "x", { axis = axis }, "axis name x")
    local x = check.variable(layer, "x", a.x)
    local helper = LayerHelper(op_type, a)
    local out = helper:create_variable_for_type_inference("int64", true)
    helper:append_op{ type = op_type, inputs = { X = { x } }, outputs = { Out = { out } },
                      attrs = { axis = check.int(layer, "axis", a.axis, 0) } }
    return out
  end
end

--- The int64 indices of the maxima along `axis`. Also `argmax(x, axis)`.
-- @function argmax
-- @tparam Variable|table a x, or `{x=, axis=0, name=}`
-- @tparam[opt=0] int axis with a positional x
-- @treturn Variable int64
-- @usage local pred = layers.argmax(probs, 1)
M.argmax = arg_layer("arg_max", "argmax")
--- The int64 indices of the minima along `axis`. Also `argmin(x, axis)`.
-- @function argmin
-- @tparam Variable|table a x, or `{x=, axis=0, name=}`
-- @tparam[opt=0] int axis with a positional x
-- @treturn Variable int64
-- @usage local nearest = layers.argmin(dist, 1)
M.argmin = arg_layer("arg_min", "argmin")

--- x + value, by default written back into x (a loop counter). Also `increment(x, value)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x a one-element tensor
-- @tparam[opt=1] number a.value
-- @tparam[opt=true] bool a.in_place write into x
-- @tparam[opt] string a.name
-- @tparam[opt] number value with a positional x
-- @treturn Variable
-- @usage layers.increment(i)   -- i = i + 1, inside a While body
function M.increment(a, value)
  a = args("increment", a, "x", { value = value }, "in_place name value x")
  local x = check.variable("increment", "x", a.x)
  local helper = LayerHelper("increment", a)
  local out = x
  if a.in_place == false then out = helper:create_variable_for_type_inference(x.dtype) end
  helper:append_op{ type = "increment", inputs = { X = { x } }, outputs = { Out = { out } },
                    attrs = { step = check.number("increment", "value", a.value, 1.0) } }
  return out
end

-- ---- comparisons and logic ----------------------------------------------------------
-- less_than{x=, y=, cond=, force_cpu=}: bool output, written into cond if given
local function compare_layer(op_type)
  return function(a, y, cond)
    if is_variable(a) then a = { x = a, y = y, cond = cond } end
    a = args(op_type, a, nil, nil, "axis cond force_cpu name x y")
    local x = check.variable(op_type, "x", a.x)
    local yv = check.variable(op_type, "y", a.y)
    check.opt_variable(op_type, "cond", a.cond)
    local helper = LayerHelper(op_type, a)
    local out = a.cond or helper:create_variable_for_type_inference("bool", true)
    local attrs = { axis = check.int(op_type, "axis", a.axis, -1) }
    if a.force_cpu ~= nil then attrs.force_cpu = check.boolean(op_type, "force_cpu", a.force_cpu) end
    helper:append_op{ type = op_type, inputs = { X = { x }, Y = { yv } }, outputs = { Out = { out } },
                      attrs = attrs }
    out.stop_gradient = true
    return out
  end
end

--- Comparisons and logic. Each comparison is `NAME(x, y[, cond])` or
-- `NAME{x=, y=, cond=, axis=-1, force_cpu=, name=}`: a bool tensor
-- (stop_gradient), written into `cond` when given; y broadcasts from `axis`.
-- @section compare

--- x < y.
-- @function less_than
-- @tparam Variable|table a x, or the keyword arguments
-- @tparam[opt] Variable y
-- @tparam[opt] Variable cond write here
-- @treturn Variable bool
-- @usage local go_on = layers.less_than(i, n)

--- x <= y; arguments as `less_than`.
-- @function less_equal
-- @tparam Variable|table a
-- @tparam[opt] Variable y
-- @tparam[opt] Variable cond
-- @treturn Variable bool
-- @usage local ok = layers.less_equal(x, limit)

--- x > y; arguments as `less_than`.
-- @function greater_than
-- @tparam Variable|table a
-- @tparam[opt] Variable y
-- @tparam[opt] Variable cond
-- @treturn Variable bool
-- @usage local pos = layers.greater_than(x, zero)

--- x >= y; arguments as `less_than`.
-- @function greater_equal
-- @tparam Variable|table a
-- @tparam[opt] Variable y
-- @tparam[opt] Variable cond
-- @treturn Variable bool
-- @usage local ok = layers.greater_equal(x, y)

--- x == y; arguments as `less_than`.
-- @function equal
-- @tparam Variable|table a
-- @tparam[opt] Variable y
-- @tparam[opt] Variable cond
-- @treturn Variable bool
-- @usage local hit = layers.equal(pred, label)

--- x ~= y; arguments as `less_than`.
-- @function not_equal
-- @tparam Variable|table a
-- @tparam[opt] Variable y
-- @tparam[opt] Variable cond
-- @treturn Variable bool
-- @usage local miss = layers.not_equal(pred, label)
for _, name in ipairs({ "less_than", "less_equal", "greater_than", "greater_equal", "equal", "not_equal" }) do
  M[name] = compare_layer(name)
end

local function logical_layer(op_type, binary)
  return function(a, y, out)
    if is_variable(a) then
      -- positional: (x, y, out) for the binary ops, (x, out) for logical_not
      if binary then a = { x = a, y = y, out = out } else a = { x = a, out = y } end
    end
    a = args(op_type, a, nil, nil, "name out x y")
    local x = check.variable(op_type, "x", a.x)
    local inputs = { X = { x } }
    if binary then inputs.Y = { check.variable(op_type, "y", a.y) } end
    check.opt_variable(op_type, "out", a.out)
    local helper = LayerHelper(op_type, a)
    local o = a.out or helper:create_variable_for_type_inference("bool", true)
    helper:append_op{ type = op_type, inputs = inputs, outputs = { Out = { o } } }
    o.stop_gradient = true
    return o
  end
end

--- x and y of bool tensors. Also `logical_and{x=, y=, out=, name=}`.
-- @function logical_and
-- @tparam Variable|table a x, or the keyword arguments
-- @tparam[opt] Variable y
-- @tparam[opt] Variable out write here
-- @treturn Variable bool
-- @usage local both = layers.logical_and(a, b)
M.logical_and = logical_layer("logical_and", true)
--- x or y of bool tensors; arguments as `logical_and`.
-- @function logical_or
-- @tparam Variable|table a
-- @tparam[opt] Variable y
-- @tparam[opt] Variable out
-- @treturn Variable bool
-- @usage local either = layers.logical_or(a, b)
M.logical_or = logical_layer("logical_or", true)
--- x xor y of bool tensors; arguments as `logical_and`.
-- @function logical_xor
-- @tparam Variable|table a
-- @tparam[opt] Variable y
-- @tparam[opt] Variable out
-- @treturn Variable bool
-- @usage local one = layers.logical_xor(a, b)
M.logical_xor = logical_layer("logical_xor", true)
--- not x of a bool tensor. Also `logical_not(x, out)` or `{x=, out=, name=}`.
-- @function logical_not
-- @tparam Variable|table a
-- @tparam[opt] Variable out
-- @treturn Variable bool
-- @usage local stop = layers.logical_not(go_on)
M.logical_not = logical_layer("logical_not", false)

-- ---- misc -----------------------------------------------------------------------

--- Other layers.
-- @section misc

--- The runtime shape of a variable, as an int32 tensor. Also `shape{input=, name=}`.
-- @tparam Variable|table a
-- @treturn Variable int32 [rank]
-- @usage local s = layers.shape(x)
function M.shape(a)
  a = args("shape", a, "input", nil, "input name")
  local x = check.variable("shape", "input", a.input)
  local helper = LayerHelper("shape", a)
  local out = helper:create_variable_for_type_inference("int32", true)
  helper:append_op{ type = "shape", inputs = { Input = { x } }, outputs = { Out = { out } } }
  return out
end

--- Whether `x` names a dtype ("float32", an enum value, ...).
-- @param x anything
-- @treturn bool
-- @usage print(layers.is_dtype("float32"), layers.is_dtype("floot"))   -- true false
function M.is_dtype(x) return dtypes.name(x) ~= nil end

return M
