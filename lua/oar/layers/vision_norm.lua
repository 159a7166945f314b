--- oar.layers.vision_norm: Fluid 1.8's spectral_norm and data_norm layers.
-- Merged into oar.layers.
--
--   local w = layers.create_parameter{shape = {8, 16}, dtype = "float32"}
--   local wn = layers.spectral_norm{weight = w, dim = 0, power_iters = 2}
--
-- @module oar.layers.vision_norm
local LayerHelper = require("oar.layer_helper")
local initializer = require("oar.initializer")
local framework = require("oar.framework")

local check, args = LayerHelper.check, LayerHelper.args
local raise = framework.raise

local M = {}

local function float_var(L, key, v)
  local x = check.variable(L, key, v)
  if x.dtype ~= "float32" and x.dtype ~= "float64" then check.fail(L, key, "a float32 or float64 Variable", x) end
  return x
end

--- Spectral normalization of a weight (Fluid 1.8's spectral_norm): the
-- weight divided by its largest singular value, estimated by power
-- iteration from two non-trainable vectors U [h] and V [w] drawn from
-- Normal(0, 1) (the op does not update them).
-- @tparam table a keyword arguments:
-- @tparam Variable a.weight rank 2 to 5, float32 or float64
-- @tparam[opt=0] int a.dim the dim moved first before the weight is read as a matrix [h, w]
-- (0 for fc weights, 1 for conv filters)
-- @tparam[opt=1] int a.power_iters power iterations
-- @tparam[opt=1e-12] number a.eps added to the norms
-- @tparam[opt] string a.name
-- @treturn Variable the weight's shape
-- @usage local wn = layers.spectral_norm{weight = w, dim = 1, power_iters = 2}
function M.spectral_norm(a)
  local L = "spectral_norm"
  a = args(L, a, "weight", nil, "dim eps name power_iters weight")
  local weight = float_var(L, "weight", a.weight)
  local shape = weight.shape
  if #shape < 2 or #shape > 5 then
    raise(string.format("%s: 'weight' must have rank 2 to 5, got shape %s", L, framework.shape_text(shape)))
  end
  local dim = check.int(L, "dim", a.dim, 0)
  if dim < 0 or dim >= #shape then check.fail(L, "dim", "a dim of weight (0 to " .. (#shape - 1) .. ")", a.dim) end
  local h, w = shape[dim + 1], 1
  for i, d in ipairs(shape) do
    if d <= 0 then raise(L .. ": 'weight' must have a known shape, got " .. framework.shape_text(shape)) end
    if i ~= dim + 1 then w = w * d end
  end
  local iters = check.int(L, "power_iters", a.power_iters, 1)
  if iters < 0 then check.fail(L, "power_iters", "an integer >= 0", a.power_iters) end
  local helper = LayerHelper(L, a)
  local normal = initializer.Normal{ loc = 0.0, scale = 1.0 }
  local u = helper:create_parameter({ trainable = false }, { h }, weight.dtype, false, normal)
  u.stop_gradient = true
  local v = helper:create_parameter({ trainable = false }, { w }, weight.dtype, false, normal)
  v.stop_gradient = true
  local out = helper:create_variable_for_type_inference(weight.dtype)
  helper:append_op{ type = L, inputs = { Weight = { weight }, U = { u }, V = { v } }, outputs = { Out = { out } },
                    attrs = { dim = dim, power_iters = iters, eps = check.number(L, "eps", a.eps, 1e-12) } }
  return out
end

--- Normalizes [N, C] data with accumulated summaries (Fluid 1.8's
-- data_norm): three trainable [C] parameters BatchSize (starts at 1e4),
-- BatchSum (0) and BatchSquareSum (1e4); Y = (x - BatchSum / BatchSize) *
-- sqrt(BatchSize / BatchSquareSum). Their "gradients" are the batch's
-- statistics (Fluid's rule).
-- @tparam table a keyword arguments:
-- @tparam Variable a.input [N, C], float32 or float64
-- @tparam[opt] string|table a.act activation
-- @tparam[opt=1e-5] number a.epsilon
-- @tparam[opt] table a.param_attr {batch_size=, batch_sum=, batch_square=}: the summaries' start values
-- @tparam[opt="NCHW"] string a.data_layout "NCHW" or "NHWC" (the same for 2-D input)
-- @tparam[opt=false] bool a.in_place accepted, as Fluid's (oar writes a new variable)
-- @tparam[opt] string a.name prefix of the parameters' names (name.batch_size, ...)
-- @tparam[opt] string a.moving_mean_name accepted, not used (as Fluid's)
-- @tparam[opt] string a.moving_variance_name accepted, not used (as Fluid's)
-- @tparam[opt=true] bool a.do_model_average_for_mean_and_var accepted, not used (as Fluid's)
-- @tparam[opt=-1] int a.slot_dim when > 0, the columns are slots of slot_dim values, the first a show
-- count; a slot that does not show gives 0
-- @tparam[opt=false] bool a.sync_stats
-- @tparam[opt=0.9999999] number a.summary_decay_rate
-- @treturn Variable [N, C]
-- @usage local h = layers.data_norm{input = x}
function M.data_norm(a)
  local L = "data_norm"
  a = args(L, a, "input", nil, "act data_layout do_model_average_for_mean_and_var epsilon in_place input " ..
    "moving_mean_name moving_variance_name name param_attr slot_dim summary_decay_rate sync_stats")
  local input = float_var(L, "input", a.input)
  if #input.shape ~= 2 then
    raise(string.format("%s: 'input' must be 2-D [N, C], got shape %s", L, framework.shape_text(input.shape)))
  end
  check.string(L, "data_layout", a.data_layout, "NCHW", { "NCHW", "NHWC" })
  local channels = input.shape[2]
  if channels <= 0 then raise(L .. ": the input's channel count must be known") end
  local defaults = { batch_size = 1e4, batch_sum = 0.0, batch_square = 1e4 }
  if a.param_attr ~= nil then
    if type(a.param_attr) ~= "table" then check.fail(L, "param_attr", "a table {batch_size=, batch_sum=, batch_square=}", a.param_attr) end
    for k, v in pairs(a.param_attr) do
      if defaults[k] == nil then check.fail(L, "param_attr", "a table {batch_size=, batch_sum=, batch_square=}", a.param_attr) end
      defaults[k] = check.number(L, "param_attr." .. k, v)
    end
  end
  local helper = LayerHelper(L, a)
  local dtype = input.dtype
  local function param(suffix, value)
    return helper:create_parameter({ name = a.name and (a.name .. "." .. suffix) or nil, trainable = true,
                                     initializer = initializer.Constant{ value = value } }, { channels }, dtype, false)
  end
  local size = param("batch_size", defaults.batch_size)
  local sum = param("batch_sum", defaults.batch_sum)
  local sq = param("batch_square_sum", defaults.batch_square)
  local means = helper:create_variable_for_type_inference(dtype)
  means.stop_gradient = true
  local scales = helper:create_variable_for_type_inference(dtype)
  scales.stop_gradient = true
  local out = helper:create_variable_for_type_inference(dtype)
  helper:append_op{ type = L, inputs = { X = { input }, BatchSize = { size }, BatchSum = { sum }, BatchSquareSum = { sq } },
                    outputs = { Y = { out }, Means = { means }, Scales = { scales } },
                    attrs = { epsilon = check.number(L, "epsilon", a.epsilon, 1e-5),
                              slot_dim = check.int(L, "slot_dim", a.slot_dim, -1),
                              sync_stats = check.boolean(L, "sync_stats", a.sync_stats, false),
                              summary_decay_rate = check.number(L, "summary_decay_rate", a.summary_decay_rate, 0.9999999) } }
  return helper:append_activation(out)
end

return M
