--- oar.layer_helper: what every layer does (Fluid's LayerHelper): name itself,
-- check its arguments, create parameters (declared in the main program,
-- initialized in the startup program), temporaries, bias and activation.
-- @module oar.layer_helper
local framework = require("oar.framework")
local unique_name = require("oar.unique_name")
local param_attr = require("oar.param_attr")
local initializer = require("oar.initializer")
local dtypes = require("oar.dtypes")
local argcheck = require("oar.argcheck")

local raise, describe, is_variable = framework.raise, framework.describe, framework.is_variable

local LayerHelper = {}
LayerHelper.__index = LayerHelper

-- ---- argument checks (errors name the layer and the argument) ---------------
local check = {}
LayerHelper.check = check

local function fail(layer, key, expect, got)
  raise(string.format("%s: '%s' must be %s, got %s", layer, key, expect,
    got == nil and "nil" or describe(got)))
end
check.fail = fail

function check.variable(layer, key, v)
  if not is_variable(v) then fail(layer, key, "a Variable", v) end
  return v
end

function check.opt_variable(layer, key, v)
  if v ~= nil then check.variable(layer, key, v) end
  return v
end

--- a Variable or a non-empty list of Variables -> list
function check.variables(layer, key, v)
  if is_variable(v) then return { v } end
  if type(v) ~= "table" or #v == 0 then fail(layer, key, "a Variable or a list of Variables", v) end
  for i, x in ipairs(v) do
    if not is_variable(x) then fail(layer, key .. "[" .. i .. "]", "a Variable", x) end
  end
  return v
end

function check.positive_int(layer, key, v)
  if type(v) ~= "number" or v % 1 ~= 0 or v <= 0 then fail(layer, key, "a positive integer", v) end
  return v
end

function check.int(layer, key, v, default)
  if v == nil then v = default end
  if type(v) ~= "number" or v % 1 ~= 0 then fail(layer, key, "an integer", v) end
  return v
end

function check.number(layer, key, v, default)
  if v == nil then v = default end
  if type(v) ~= "number" then fail(layer, key, "a number", v) end
  return v
end

function check.boolean(layer, key, v, default)
  if v == nil then v = default end
  if type(v) ~= "boolean" then fail(layer, key, "a boolean", v) end
  return v
end

function check.string(layer, key, v, default, choices)
  if v == nil then v = default end
  if type(v) ~= "string" then fail(layer, key, "a string", v) end
  if choices then
    for _, c in ipairs(choices) do if c == v then return v end end
    fail(layer, key, "one of " .. table.concat(choices, ", "), v)
  end
  return v
end

--- an int or a list of `n` ints -> list of n ints
function check.int_list(layer, key, v, n, default)
  if v == nil then v = default end
  if type(v) == "number" then
    if v % 1 ~= 0 then fail(layer, key, "an integer or a list of " .. n .. " integers", v) end
    local out = {}
    for i = 1, n do out[i] = v end
    return out
  end
  if type(v) ~= "table" or #v ~= n then fail(layer, key, "an integer or a list of " .. n .. " integers", v) end
  for i = 1, n do
    if type(v[i]) ~= "number" or v[i] % 1 ~= 0 then fail(layer, key, "a list of integers", v) end
  end
  return v
end

--- a list of integers of any length (one integer is a list of one);
-- `empty_ok` allows {}
function check.ints(layer, key, v, empty_ok)
  if type(v) == "number" then v = { v } end
  if type(v) ~= "table" or is_variable(v) or (#v == 0 and not empty_ok) then
    fail(layer, key, "an integer or a list of integers", v)
  end
  for i = 1, #v do
    if type(v[i]) ~= "number" or v[i] % 1 ~= 0 then fail(layer, key .. "[" .. i .. "]", "an integer", v[i]) end
  end
  return v
end

function check.dtype(layer, key, v, default)
  if v == nil then v = default end
  local name = dtypes.name(v)
  if not name then fail(layer, key, "a dtype name like \"float32\"", v) end
  return name
end

-- a float32 or float64 Variable of the given rank (nil: at least min_rank)
function check.float_variable(layer, key, v, rank, min_rank)
  local x = check.variable(layer, key, v)
  if x.dtype ~= "float32" and x.dtype ~= "float64" then
    fail(layer, key, "a float32 or float64 Variable", x)
  end
  local nd = #x.shape
  if (rank and nd ~= rank) or (min_rank and nd < min_rank) then
    raise(string.format("%s: '%s' must be %s, got shape %s", layer, key,
      rank and (rank .. "-D") or ("at least " .. min_rank .. "-D"), framework.shape_text(x.shape)))
  end
  return x
end

--- A layer's keyword arguments, checked.
--- The arguments are a table, or the primary argument given positionally
-- (`layers.relu(x)`) with optional extras. When `known` is given, a key
-- that is not in it is an error naming the layer and the closest valid key
-- (`layers.fc: unknown argument 'activation' (did you mean 'act'?)`).
-- @tparam string layer the layer's name ("fc"); errors say "layers.fc"
-- @param a the user's table, or the primary value
-- @tparam[opt] string primary the key a positional value stands for ("input")
-- @tparam[opt] table extra keys to add when `a` is positional ({dim=dim})
-- @tparam[opt] string|table known the valid keys ("input size act name")
-- @treturn table the keyword table
-- @usage a = LayerHelper.args("relu", a, "x", nil, "x name")
function LayerHelper.args(layer, a, primary, extra, known)
  if is_variable(a) or (primary and type(a) ~= "table") then
    local t = {}
    if extra then for k, v in pairs(extra) do t[k] = v end end
    t[primary] = a
    return t
  end
  if type(a) ~= "table" then
    raise(string.format("%s: expected a table of arguments, got %s", layer, describe(a)))
  end
  if known then argcheck.keys("layers." .. layer, a, known) end
  return a
end

--- Checks the keys of a keyword table against `known` (see oar.argcheck).
-- @tparam string who the function as users write it ("layers.fc", "StaticRNN:memory")
-- @tparam ?table a the keyword table
-- @tparam string|table known the valid keys
-- @treturn ?table a
-- @raise on an unknown key, naming the closest valid one
-- @usage LayerHelper.known("mylayer", a, "input size name")
function LayerHelper.known(who, a, known)
  return argcheck.keys(who, a, known)
end

-- ---- the helper ---------------------------------------------------------------

--- A helper for one layer call (also `LayerHelper(layer_type, kwargs)`): it
-- names the layer (`kwargs.name` or a unique "type_N") and works on the
-- default main and startup programs.
-- @tparam string layer_type e.g. "fc"
-- @tparam[opt] table kwargs the layer's keyword arguments (name, param_attr, bias_attr, act)
-- @treturn LayerHelper with fields layer_type, kwargs, name, main_program, startup_program
-- @usage
-- local helper = oar.LayerHelper("my_scale", {name = "s"})
-- local y = helper:unary("scale", x, {scale = 2.0})
function LayerHelper.new(layer_type, kwargs)
  kwargs = kwargs or {}
  local self = setmetatable({ layer_type = layer_type, kwargs = kwargs }, LayerHelper)
  self.name = kwargs.name or unique_name.generate(layer_type)
  if type(self.name) ~= "string" then fail(layer_type, "name", "a string", kwargs.name) end
  self.main_program = framework.default_main_program()
  self.startup_program = framework.default_startup_program()
  return self
end
setmetatable(LayerHelper, { __call = function(_, ...) return LayerHelper.new(...) end })

--- The block layers append to now (the main program's current block).
-- @treturn Block
-- @usage local b = helper:block()
function LayerHelper:block() return self.main_program:current_block() end

--- Appends an op to the current block (see `Block:append_op`).
-- @tparam table spec `{type=, inputs=, outputs=, attrs=}`
-- @treturn Operator
-- @usage helper:append_op{type = "relu", inputs = {X = {x}}, outputs = {Out = {out}}}
function LayerHelper:append_op(spec) return self:block():append_op(spec) end

--- The layer's weight ParamAttr from `kwargs.param_attr` (nil or true: the
-- default), or false when it is false.
-- @treturn ParamAttr|false
-- @raise naming the layer and 'param_attr' when the value is not an attribute
-- @usage local w = helper:create_parameter(helper:param_attr(), {4, 8}, "float32", false)
function LayerHelper:param_attr() return param_attr.to_attr(self.kwargs.param_attr, self.layer_type, "param_attr") end
--- The layer's bias ParamAttr from `kwargs.bias_attr` (nil or true: the
-- default), or false (no bias).
-- @treturn ParamAttr|false
-- @raise naming the layer and 'bias_attr' when the value is not an attribute
-- @usage local b = helper:create_parameter(helper:bias_attr(), {8}, "float32", true)
function LayerHelper:bias_attr() return param_attr.to_attr(self.kwargs.bias_attr, self.layer_type, "bias_attr") end

--- `n` ParamAttrs for `n` inputs: a list in `kwargs.param_attr` is taken as
-- given; a single one is shared (but a fixed name cannot name `n` weights).
-- @tparam int n
-- @treturn {ParamAttr,...}
-- @raise when the list's length is not `n`, or a named attr would be shared
-- @usage local attrs = helper:multiple_param_attr(#inputs)
function LayerHelper:multiple_param_attr(n)
  local a = self.kwargs.param_attr
  if type(a) == "table" and not param_attr.is_param_attr(a) and a[1] ~= nil then
    if #a ~= n then
      raise(string.format("%s: %d param_attr given for %d inputs", self.layer_type, #a, n))
    end
    local out = {}
    for i = 1, n do out[i] = param_attr.to_attr(a[i], self.layer_type, "param_attr[" .. i .. "]") end
    return out
  end
  local one = param_attr.to_attr(a, self.layer_type, "param_attr")
  local out = {}
  for i = 1, n do out[i] = one end
  if n > 1 and one and one.name then
    raise(string.format("%s: param_attr name '%s' cannot name %d weights; give a list of param_attr",
      self.layer_type, one.name, n))
  end
  return out
end

--- The dtype all `inputs` share ("float32" when none is known).
-- @tparam {Variable,...} inputs
-- @treturn string
-- @raise when the inputs mix dtypes
-- @usage local dtype = helper:input_dtype({x, y})
function LayerHelper:input_dtype(inputs)
  local dtype
  for _, v in ipairs(inputs) do
    local d = v.dtype
    if dtype == nil then dtype = d
    elseif d ~= nil and d ~= dtype then
      raise(string.format("%s: inputs mix dtypes %s and %s", self.layer_type, dtype, d))
    end
  end
  return dtype or "float32"
end

--- Declares a parameter in the main program and its initializer in the
-- startup program. A name used before reuses that parameter (shapes must agree).
-- @tparam ParamAttr|table|string|false attr false: no parameter (returns nil)
-- @tparam {int,...} shape positive dims
-- @tparam[opt="float32"] string dtype
-- @tparam[opt=false] bool is_bias default initializer Constant(0) for a bias, Xavier otherwise
-- @tparam[opt] Initializer default_initializer used when `attr` names none
-- @treturn Parameter|nil
-- @raise on a non-positive dim or a shape clash with an existing parameter
-- @usage local w = helper:create_parameter(helper:param_attr(), {13, 1}, "float32", false)
function LayerHelper:create_parameter(attr, shape, dtype, is_bias, default_initializer)
  if attr == false then return nil end
  attr = param_attr.to_attr(attr, self.layer_type, is_bias and "bias_attr" or "param_attr")
  for i, d in ipairs(shape) do
    if type(d) ~= "number" or d <= 0 then
      raise(string.format("%s: parameter shape %s has a non-positive dimension %s at %d (is an input shape unknown?)",
        self.layer_type, framework.shape_text(shape), tostring(d), i))
    end
  end
  local init = attr.initializer or default_initializer
  if init == nil then
    if is_bias then init = initializer.Constant{ value = 0.0 } else init = initializer.Xavier() end
  end
  local name = attr.name or unique_name.generate(self.name .. (is_bias and ".b" or ".w"))
  local main_gb = self.main_program:global_block()
  local existing = main_gb:_find_var_local(name)
  if existing and framework.is_parameter(existing) then
    local have = existing.shape
    local same = #have == #shape
    for i = 1, #shape do same = same and have[i] == shape[i] end
    if not same then
      raise(string.format("%s: parameter '%s' exists with shape %s, this layer needs %s", self.layer_type, name,
        framework.shape_text(have), framework.shape_text(shape)))
    end
    return existing
  end
  local fields = {
    name = name, shape = shape, dtype = dtype or "float32", trainable = attr.trainable,
    regularizer = attr.regularizer, learning_rate = attr.learning_rate, gradient_clip = attr.gradient_clip,
    do_model_average = attr.do_model_average,
  }
  -- the startup program declares the parameter too and runs its initializer
  local startup_gb = self.startup_program:global_block()
  if self.startup_program == self.main_program then
    fields.initializer = init
    return main_gb:create_parameter(fields)
  end
  if not startup_gb:_find_var_local(name) then
    fields.initializer = init
    startup_gb:create_parameter(fields)
    fields.initializer = nil
  end
  local p = main_gb:create_parameter(fields)
  rawset(p, "initializer", init)
  return p
end

--- A temporary for an op's output in the current block; shape inference
-- fills in its shape (also `create_tmp_variable`).
-- @tparam[opt="float32"] string dtype
-- @tparam[opt=false] bool stop_gradient
-- @treturn Variable
-- @usage local out = helper:create_variable_for_type_inference(x.dtype)
function LayerHelper:create_variable_for_type_inference(dtype, stop_gradient)
  return self:block():create_var{
    name = unique_name.generate(self.name .. ".tmp"), dtype = dtype or "float32",
    stop_gradient = stop_gradient or false,
  }
end
LayerHelper.create_tmp_variable = LayerHelper.create_variable_for_type_inference

--- Declares a variable in the current block (see `Block:create_var`).
-- @tparam table spec `{name=, shape=, dtype=, ...}`
-- @treturn Variable
-- @usage local v = helper:create_variable{name = "v", shape = {1}}
function LayerHelper:create_variable(spec)
  return self:block():create_var(spec)
end

--- Declares a persistable variable (unless `persistable=false`) in the main
-- program's global block; the name defaults to "<layer>.global_N".
-- @tparam table spec as `Block:create_var`
-- @treturn Variable
-- @usage local counter = helper:create_global_variable{shape = {1}, dtype = "int64"}
function LayerHelper:create_global_variable(spec)
  spec.persistable = spec.persistable ~= false
  if spec.name == nil then spec.name = unique_name.generate(self.name .. ".global") end
  return self.main_program:global_block():create_var(spec)
end

--- Declares `var` in the startup program too (once), initialized there by `init`.
-- @tparam Variable var
-- @tparam Initializer init
-- @usage helper:set_variable_initializer(counter, oar.initializer.Constant{value = 0})
function LayerHelper:set_variable_initializer(var, init)
  local gb = self.startup_program:global_block()
  if gb:_find_var_local(var.name) then return end
  local sv = gb:create_var{ name = var.name, shape = var.shape, dtype = var.dtype, type = var.type,
                            lod_level = var.lod_level, persistable = true }
  init(sv, gb)
end

--- `input + bias`, the bias shaped like the input's dims (dim_start, dim_end]
-- (no op when the layer's bias_attr is false).
-- @tparam Variable input
-- @tparam[opt=1] int dim_start dims before it are not biased
-- @tparam[opt=#input.shape] int dim_end
-- @treturn Variable
-- @usage local pre_act = helper:append_bias_op(pre_bias, 1)
function LayerHelper:append_bias_op(input, dim_start, dim_end)
  dim_start = dim_start or 1
  local battr = self:bias_attr()
  if battr == false then return input end
  local shape = input.shape
  dim_end = dim_end or #shape
  local size = {}
  for i = dim_start + 1, dim_end do size[#size + 1] = shape[i] end
  local b = self:create_parameter(battr, size, input.dtype, true)
  local out = self:create_variable_for_type_inference(input.dtype)
  self:append_op{ type = "elementwise_add", inputs = { X = { input }, Y = { b } }, outputs = { Out = { out } },
                  attrs = { axis = dim_start } }
  return out
end

--- Appends the activation op `act` (default: `kwargs.act`) on `input`.
-- @tparam Variable input
-- @tparam[opt] string|table act a name ("relu") or `{type="leaky_relu", alpha=0.1}`; nil: none
-- @treturn Variable the activation's output, or `input` when there is none
-- @usage return helper:append_activation(pre_act)
function LayerHelper:append_activation(input, act)
  if act == nil then act = self.kwargs.act end
  if act == nil then return input end
  local attrs = {}
  local act_type = act
  if type(act) == "table" then
    act_type = act.type
    for k, v in pairs(act) do if k ~= "type" then attrs[k] = v end end
  end
  if type(act_type) ~= "string" then fail(self.layer_type, "act", "an activation name", act) end
  local out = self:create_variable_for_type_inference(input.dtype)
  self:append_op{ type = act_type, inputs = { X = { input } }, outputs = { Out = { out } }, attrs = attrs }
  return out
end

--- Appends one op `X -> Out` with `attrs`.
-- @tparam string op_type
-- @tparam Variable x
-- @tparam[opt] table attrs
-- @tparam[opt=x.dtype] string out_dtype
-- @treturn Variable Out
-- @usage local y = helper:unary("scale", x, {scale = 2.0})
function LayerHelper:unary(op_type, x, attrs, out_dtype)
  local out = self:create_variable_for_type_inference(out_dtype or x.dtype)
  self:append_op{ type = op_type, inputs = { X = { x } }, outputs = { Out = { out } }, attrs = attrs }
  return out
end

framework._guard_methods(LayerHelper, function(x) return getmetatable(x) == LayerHelper end, "LayerHelper",
  { new = true, args = true, known = true })

return LayerHelper
