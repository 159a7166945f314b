--- oar.layers.vision: Fluid 1.8's image layers beyond conv2d and pool2d
-- (lrn, maxout, affine_channel, pool3d). Merged into oar.layers.
--
--   local h = layers.lrn{input = conv, n = 5}
--   local m = layers.maxout{x = conv, groups = 2}
--
-- @module oar.layers.vision
local LayerHelper = require("oar.layer_helper")
local framework = require("oar.framework")

local check, args = LayerHelper.check, LayerHelper.args
local raise = framework.raise

local M = {}

local float_input = check.float_variable

--- Local response normalization across channels:
-- `Out = x / (k + alpha * sum of x^2 over n neighbouring channels)^beta`.
-- Also positional: `lrn(input)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input [N, C, H, W] ([N, H, W, C] with data_format "NHWC"), float32 or float64
-- @tparam[opt=5] int a.n channels per sum, a positive odd number
-- @tparam[opt=1.0] number a.k the bias
-- @tparam[opt=1e-4] number a.alpha the scale
-- @tparam[opt=0.75] number a.beta the exponent
-- @tparam[opt="NCHW"] string a.data_format "NCHW" or "NHWC"
-- @tparam[opt] string a.name
-- @treturn Variable the input's shape
-- @usage local h = layers.lrn{input = conv, n = 5, k = 1.0}
function M.lrn(a)
  a = args("lrn", a, "input", nil, "alpha beta data_format input k n name")
  local input = float_input("lrn", "input", a.input, 4)
  local n = check.positive_int("lrn", "n", a.n == nil and 5 or a.n)
  if n % 2 ~= 1 then check.fail("lrn", "n", "a positive odd number", n) end
  local helper = LayerHelper("lrn", a)
  local out = helper:create_variable_for_type_inference(input.dtype)
  local mid = helper:create_variable_for_type_inference(input.dtype, true)
  helper:append_op{ type = "lrn", inputs = { X = { input } }, outputs = { Out = { out }, MidOut = { mid } },
    attrs = { n = n, k = check.number("lrn", "k", a.k, 1.0),
              alpha = check.number("lrn", "alpha", a.alpha, 1e-4),
              beta = check.number("lrn", "beta", a.beta, 0.75),
              data_format = check.string("lrn", "data_format", a.data_format, "NCHW", { "NCHW", "NHWC" }) } }
  return out
end

--- Maxout over channels: output channel c is the max of input channels
-- `c * groups .. c * groups + groups - 1`. Also positional: `maxout(x, groups)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x a 4-D image, float32 or float64
-- @tparam int a.groups channels per max, > 1, dividing the channel count
-- @tparam[opt=1] int a.axis the channel dim: 1 (NCHW), -1 or 3 (NHWC)
-- @tparam[opt] string a.name
-- @tparam[opt] int groups with a positional x
-- @treturn Variable x's shape with C / groups channels
-- @usage local m = layers.maxout{x = conv, groups = 2}
function M.maxout(a, groups)
  a = args("maxout", a, "x", { groups = groups }, "axis groups name x")
  local x = float_input("maxout", "x", a.x, 4)
  local g = check.positive_int("maxout", "groups", a.groups)
  local axis = check.int("maxout", "axis", a.axis, 1)
  if axis ~= 1 and axis ~= -1 and axis ~= 3 then check.fail("maxout", "axis", "1, -1 or 3", axis) end
  local c = x.shape[axis == 1 and 2 or 4]
  if c > 0 and c % g ~= 0 then
    raise(string.format("maxout: the %d channels of 'x' are not divisible by groups = %d", c, g))
  end
  local helper = LayerHelper("maxout", a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = "maxout", inputs = { X = { x } }, outputs = { Out = { out } },
    attrs = { groups = g, axis = axis } }
  return out
end

--- A per-channel affine map: `Out = x * scale[c] + bias[c]`, then `act`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x [N, C, ...] ([N, ..., C] with data_layout "NHWC"), float32 or float64
-- @tparam Variable a.scale [C], x's dtype
-- @tparam Variable a.bias [C], x's dtype
-- @tparam[opt="NCHW"] string a.data_layout "NCHW" or "NHWC"
-- @tparam[opt] string|table a.act activation
-- @tparam[opt] string a.name
-- @treturn Variable x's shape
-- @usage local y = layers.affine_channel{x = conv, scale = s, bias = b}
function M.affine_channel(a)
  a = args("affine_channel", a, "x", nil, "act bias data_layout name scale x")
  local x = float_input("affine_channel", "x", a.x, nil, 2)
  local scale = check.variable("affine_channel", "scale", a.scale)
  local bias = check.variable("affine_channel", "bias", a.bias)
  local helper = LayerHelper("affine_channel", a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = "affine_channel", inputs = { X = { x }, Scale = { scale }, Bias = { bias } },
    outputs = { Out = { out } },
    attrs = { data_layout = check.string("affine_channel", "data_layout", a.data_layout, "NCHW", { "NCHW", "NHWC" }) } }
  return helper:append_activation(out)
end

--- 3-D max or average pooling over an NCDHW (or NDHWC) volume.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input [N, C, D, H, W] ([N, D, H, W, C] with data_format "NDHWC")
-- @tparam int|{int,int,int} a.pool_size window (ignored with global_pooling)
-- @tparam[opt="max"] string a.pool_type "max" or "avg"
-- @tparam[opt=1] int|{int,int,int} a.pool_stride
-- @tparam[opt=0] int|table|string a.pool_padding an int, 3 values {d, h, w}, 6 values
-- {front, back, top, bottom, left, right}, or "SAME" / "VALID"
-- @tparam[opt=false] bool a.global_pooling pool each whole channel
-- @tparam[opt=true] bool a.use_cudnn accepted, as Fluid's
-- @tparam[opt=false] bool a.ceil_mode round the output size up
-- @tparam[opt=true] bool a.exclusive average over the real (unpadded) cells only
-- @tparam[opt="NCDHW"] string a.data_format "NCDHW" or "NDHWC"
-- @tparam[opt] string a.name
-- @treturn Variable
-- @usage local p = layers.pool3d{input = v, pool_size = 2, pool_stride = 2, pool_type = "avg"}
function M.pool3d(a)
  a = args("pool3d", a, "input", nil, "ceil_mode data_format exclusive global_pooling input name pool_padding " ..
    "pool_size pool_stride pool_type use_cudnn")
  local input = float_input("pool3d", "input", a.input, 5)
  local pool_type = check.string("pool3d", "pool_type", a.pool_type, "max", { "max", "avg" })
  local global_pooling = check.boolean("pool3d", "global_pooling", a.global_pooling, false)
  local pool_size = check.int_list("pool3d", "pool_size", a.pool_size, 3, -1)
  if not global_pooling and (pool_size[1] <= 0 or pool_size[2] <= 0 or pool_size[3] <= 0) then
    check.fail("pool3d", "pool_size", "positive (or global_pooling=true)", a.pool_size)
  end
  local algo, paddings = "EXPLICIT", nil
  if type(a.pool_padding) == "string" then
    algo = check.string("pool3d", "pool_padding", a.pool_padding:upper(), nil, { "SAME", "VALID" })
    paddings = { 0, 0, 0 }
  elseif type(a.pool_padding) == "table" and #a.pool_padding == 6 then
    paddings = check.int_list("pool3d", "pool_padding", a.pool_padding, 6)
  else
    paddings = check.int_list("pool3d", "pool_padding", a.pool_padding, 3, 0)
  end
  local helper = LayerHelper("pool3d", a)
  local out = helper:create_variable_for_type_inference(input.dtype)
  helper:append_op{ type = "pool3d", inputs = { X = { input } }, outputs = { Out = { out } },
    attrs = { pooling_type = pool_type, ksize = pool_size, global_pooling = global_pooling,
              strides = check.int_list("pool3d", "pool_stride", a.pool_stride, 3, 1), paddings = paddings,
              padding_algorithm = algo,
              use_cudnn = check.boolean("pool3d", "use_cudnn", a.use_cudnn, true),
              ceil_mode = check.boolean("pool3d", "ceil_mode", a.ceil_mode, false),
              exclusive = check.boolean("pool3d", "exclusive", a.exclusive, true),
              data_format = check.string("pool3d", "data_format", a.data_format, "NCDHW", { "NCDHW", "NDHWC" }) } }
  return out
end

return M
