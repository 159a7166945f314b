--- oar.param_attr: how a layer creates its parameters (Fluid's ParamAttr):
-- name, initializer, learning_rate (scales the optimizer's lr for this
-- parameter), regularizer, trainable, gradient_clip.
-- @module oar.param_attr
local raise = require("oar.framework").raise
local argcheck = require("oar.argcheck")
local M = {}

local ParamAttr = {}
ParamAttr.__index = ParamAttr
M.ParamAttr = ParamAttr

local function is_param_attr(x) return getmetatable(x) == ParamAttr end

--- Whether `x` is a ParamAttr.
-- @function is_param_attr
-- @param x any value
-- @treturn bool
-- @usage assert(oar.param_attr.is_param_attr(oar.ParamAttr{name = "w"}))
M.is_param_attr = is_param_attr

local known = { name = true, initializer = true, learning_rate = true, regularizer = true,
                trainable = true, gradient_clip = true, do_model_average = true }

--- How a layer creates one parameter (Fluid's ParamAttr); also `oar.ParamAttr{...}`.
-- @tparam[opt] table spec keyword arguments:
-- @tparam[opt] string spec.name the parameter's name (a shared name shares the parameter)
-- @tparam[opt] Initializer spec.initializer default: the layer's (Xavier for weights, zeros for biases)
-- @tparam[opt=1.0] number spec.learning_rate scales the optimizer's learning rate for this parameter
-- @tparam[opt] Regularizer spec.regularizer L1Decay or L2Decay
-- @tparam[opt=true] bool spec.trainable
-- @param[opt] spec.gradient_clip
-- @param[opt] spec.do_model_average
-- @tparam[opt="ParamAttr"] string who how errors name the table (to_attr passes
-- the layer and its argument: "fc: 'bias_attr'")
-- @treturn ParamAttr
-- @usage layers.fc{input = x, size = 10, param_attr = oar.ParamAttr{name = "w", initializer = oar.initializer.Normal{scale = 0.01}}}
function M.new(spec, who)
  spec = spec or {}
  who = who or "ParamAttr"
  if type(spec) ~= "table" then
    raise(who .. ": expected a table {name=, initializer=, ...}, got " .. type(spec))
  end
  argcheck.keys(who == "ParamAttr" and "oar.ParamAttr" or who, spec, known)
  if spec.name ~= nil and type(spec.name) ~= "string" then
    raise(who .. ": 'name' must be a string, got " .. type(spec.name))
  end
  local lr = spec.learning_rate
  if lr == nil then lr = 1.0 end
  if type(lr) ~= "number" then
    raise(who .. ": 'learning_rate' must be a number, got " .. type(lr))
  end
  local trainable = spec.trainable
  if trainable == nil then trainable = true end
  return setmetatable({
    name = spec.name, initializer = spec.initializer, learning_rate = lr,
    regularizer = spec.regularizer, trainable = trainable, gradient_clip = spec.gradient_clip,
    do_model_average = spec.do_model_average,
  }, ParamAttr)
end
setmetatable(M, { __call = function(_, spec) return M.new(spec) end })

--- Turns what a layer was given as param_attr/bias_attr into a ParamAttr
-- (or false for "none"), as Fluid's ParamAttr._to_attr: nil or true ->
-- the default attribute, "name" -> {name=}, an initializer ->
-- {initializer=}, a regularizer -> {regularizer=}, a table ->
-- ParamAttr(table), false -> false.
-- @param arg nil, true, false, a name, an Initializer, a Regularizer, a table or a ParamAttr
-- @tparam[opt] string layer the layer, for errors ("fc")
-- @tparam[opt="param_attr"] string key the argument it came from ("bias_attr"), for errors
-- @treturn ParamAttr|false
-- @raise on any other value, naming the layer and the argument
-- @usage local attr = oar.param_attr.to_attr("fc_w")   -- ParamAttr{name = "fc_w"}
-- local b = oar.param_attr.to_attr(true, "fc", "bias_attr")   -- the default bias attribute
function M.to_attr(arg, layer, key)
  key = key or "param_attr"
  local who = layer and string.format("%s: '%s'", layer, key) or key
  if arg == nil or arg == true then return M.new() end
  if arg == false then return false end
  if is_param_attr(arg) then return arg end
  if type(arg) == "string" then return M.new({ name = arg }, who) end
  if type(arg) == "table" then
    if arg._is_initializer then return M.new({ initializer = arg }, who) end
    if arg._is_regularizer then return M.new({ regularizer = arg }, who) end
    return M.new(arg, who)
  end
  raise(string.format("%s must be a ParamAttr, a table, a name, an initializer, a regularizer, true or false, got %s",
    layer and who or ("'" .. key .. "'"), require("oar.framework").describe(arg)))
end

-- A copy whose missing initializer is `default_initializer`.
function ParamAttr:_with_default_initializer(default_initializer)
  if self.initializer ~= nil then return self end
  local copy = setmetatable({}, ParamAttr)
  for k, v in pairs(self) do copy[k] = v end
  copy.initializer = default_initializer
  return copy
end

function ParamAttr:__tostring()
  return string.format("ParamAttr(name=%s, learning_rate=%s, trainable=%s)", tostring(self.name),
    tostring(self.learning_rate), tostring(self.trainable))
end

require("oar.framework")._guard_methods(ParamAttr, is_param_attr, "ParamAttr", {})

return M
