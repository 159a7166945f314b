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

--- create_tensor{dtype=, name=, persistable=false}
function M.create_tensor(a)
  a = args("create_tensor", a, "dtype", nil, "dtype name persistable")
  local helper = LayerHelper("create_tensor", a)
  return helper:create_variable{ name = a.name or helper.name, dtype = check.dtype("create_tensor", "dtype", a.dtype),
                                 persistable = a.persistable or false }
end

--- create_parameter{shape=, dtype=, name=, attr=, is_bias=false, default_initializer=}
function M.create_parameter(a)
  a = args("create_parameter", a, nil, nil, "attr default_initializer dtype is_bias name shape")
  if type(a.shape) ~= "table" then check.fail("create_parameter", "shape", "a list of positive integers", a.shape) end
  local helper = LayerHelper("create_parameter", a)
  local attr = a.attr
  if attr == nil then attr = { name = a.name } end
  return helper:create_parameter(attr, a.shape, check.dtype("create_parameter", "dtype", a.dtype, "float32"),
    a.is_bias or false, a.default_initializer)
end

--- create_global_var{shape=, value=, dtype=, persistable=false, force_cpu=false, name=}:
-- a global var filled with `value` by the startup program
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

--- fill_constant{shape=, dtype=, value=, out=, force_cpu=false}
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

--- fill_constant_batch_size_like{input=, shape=, dtype=, value=, input_dim_idx=0, output_dim_idx=0}
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

function M.zeros(a, dtype)
  if type(a) == "table" and a.shape == nil then a = { shape = a, dtype = dtype } end
  a = args("zeros", a, nil, nil, "dtype force_cpu shape")
  return M.fill_constant{ shape = a.shape, dtype = a.dtype, value = 0.0, force_cpu = a.force_cpu }
end

function M.ones(a, dtype)
  if type(a) == "table" and a.shape == nil then a = { shape = a, dtype = dtype } end
  a = args("ones", a, nil, nil, "dtype force_cpu shape")
  return M.fill_constant{ shape = a.shape, dtype = a.dtype, value = 1.0, force_cpu = a.force_cpu }
end

--- zeros_like(x): fill_zeros_like
function M.zeros_like(a)
  a = args("zeros_like", a, "x", nil, "name x")
  local x = check.variable("zeros_like", "x", a.x)
  local out = LayerHelper("zeros_like", a):unary("fill_zeros_like", x, nil)
  out.stop_gradient = true
  return out
end

function M.ones_like(a)
  a = args("ones_like", a, "x", nil, "name x")
  local x = check.variable("ones_like", "x", a.x)
  local helper = LayerHelper("ones_like", a)
  local zeros = helper:unary("fill_zeros_like", x, nil)
  local out = helper:unary("scale", zeros, { scale = 1.0, bias = 1.0 })
  out.stop_gradient = true
  return out
end

--- assign(input, output): copies a Variable, or writes a Lua table / Tensor
-- of numbers as a constant (assign_value).
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

--- cast{x=, dtype=}
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

--- concat{input={...}, axis=0}
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

--- sums{input={...}, out=}
function M.sums(a)
  if type(a) == "table" and not is_variable(a) and a.input == nil and is_variable(a[1]) then a = { input = a } end
  a = args("sums", a, "input", nil, "input name out")
  local inputs = check.variables("sums", "input", a.input)
  local helper = LayerHelper("sum", a)
  local out = a.out or helper:create_variable_for_type_inference(helper:input_dtype(inputs))
  helper:append_op{ type = "sum", inputs = { X = inputs }, outputs = { Out = { out } } }
  return out
end

--- split{input=, num_or_sections=, dim=-1} -> list of Variables
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

--- reshape{x=, shape=, act=}: "reshape" when registered, else "reshape2"
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

--- transpose{x=, perm=}
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
M.argmax = arg_layer("arg_max", "argmax")
M.argmin = arg_layer("arg_min", "argmin")

--- increment{x=, value=1, in_place=true}
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
for _, name in ipairs({ "less_than", "less_equal", "greater_than", "greater_equal", "equal", "not_equal" }) do
  M[name] = compare_layer(name)
end

local function logical_layer(op_type, binary)
  return function(a, y, out)
    if is_variable(a) then a = { x = a, y = y, out = binary and out or y } end
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
M.logical_and = logical_layer("logical_and", true)
M.logical_or = logical_layer("logical_or", true)
M.logical_xor = logical_layer("logical_xor", true)
M.logical_not = logical_layer("logical_not", false)

-- ---- misc -----------------------------------------------------------------------
--- shape(x): the runtime shape as an int32 tensor
function M.shape(a)
  a = args("shape", a, "input", nil, "input name")
  local x = check.variable("shape", "input", a.input)
  local helper = LayerHelper("shape", a)
  local out = helper:create_variable_for_type_inference("int32", true)
  helper:append_op{ type = "shape", inputs = { Input = { x } }, outputs = { Out = { out } } }
  return out
end

function M.is_dtype(x) return dtypes.name(x) ~= nil end

return M
