--- oar.layers.nn: neural network layers (Fluid's layers/nn.py): fc, embedding,
-- conv2d, pool2d, normalization, dropout, activations, reductions, matmul,
-- elementwise arithmetic.
-- @module oar.layers.nn
local LayerHelper = require("oar.layer_helper")
local initializer = require("oar.initializer")
local framework = require("oar.framework")
local argcheck = require("oar.argcheck")

local check, args = LayerHelper.check, LayerHelper.args
local op_decl = require("oar.op_decl")
local raise = framework.raise

local M = {}

local function prod(list, from, to)
  local p = 1
  for i = from or 1, to or #list do
    if list[i] < 0 then return -1 end
    p = p * list[i]
  end
  return p
end

-- ---- fully connected ------------------------------------------------------------

--- A fully connected layer: act(input . W + b).
-- Inputs of more than 2 dims are flattened: the first `num_flatten_dims`
-- dims are rows, the rest columns. A list of inputs gets one weight each,
-- the products summed.
-- @tparam table a keyword arguments:
-- @tparam Variable|{Variable,...} a.input the input(s) (also positional: fc(x) is an error, size is required)
-- @tparam int a.size number of output units
-- @tparam[opt=1] int a.num_flatten_dims dims that form the rows
-- @tparam[opt] ParamAttr|string|{ParamAttr,...} a.param_attr the weight's attributes (a list for a list of inputs)
-- @tparam[opt] ParamAttr|string|false a.bias_attr the bias's attributes; `false`: no bias
-- @tparam[opt] string|table a.act activation applied last ("relu", "softmax", {type="leaky_relu", alpha=0.1})
-- @tparam[opt] string a.name prefix of the parameter names
-- @treturn Variable the output, [rows, size]
-- @usage local h = layers.fc{input = x, size = 64, act = "relu"}
function M.fc(a)
  a = args("fc", a, "input", nil, "act bias_attr input name num_flatten_dims param_attr size")
  local inputs = check.variables("fc", "input", a.input)
  local size = check.positive_int("fc", "size", a.size)
  local nfd = check.int("fc", "num_flatten_dims", a.num_flatten_dims, 1)
  local helper = LayerHelper("fc", a)
  local dtype = helper:input_dtype(inputs)
  local attrs = helper:multiple_param_attr(#inputs)
  local products = {}
  for i, x in ipairs(inputs) do
    local shape = x.shape
    if nfd < 1 or nfd >= #shape then
      raise(string.format("fc: 'num_flatten_dims' = %d must be in [1, %d) for input '%s' of shape %s",
        nfd, #shape, x.name, framework.shape_text(shape)))
    end
    local in_dim = prod(shape, nfd + 1)
    if in_dim <= 0 then
      raise(string.format("fc: input '%s' of shape %s has unknown dims after num_flatten_dims=%d",
        x.name, framework.shape_text(shape), nfd))
    end
    local w = helper:create_parameter(attrs[i], { in_dim, size }, dtype, false)
    local tmp = helper:create_variable_for_type_inference(dtype)
    helper:append_op{ type = "mul", inputs = { X = { x }, Y = { w } }, outputs = { Out = { tmp } },
                      attrs = { x_num_col_dims = nfd, y_num_col_dims = 1 } }
    products[i] = tmp
  end
  local pre_bias = products[1]
  if #products > 1 then
    pre_bias = helper:create_variable_for_type_inference(dtype)
    helper:append_op{ type = "sum", inputs = { X = products }, outputs = { Out = { pre_bias } } }
  end
  local pre_act = helper:append_bias_op(pre_bias, nfd)
  return helper:append_activation(pre_act)
end

--- Looks up rows of an embedding table: `out[i] = W[ids[i]]`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input int64 ids, shape [N, 1] (or a LoD sequence of ids)
-- @tparam {int,int} a.size `{vocab_size, dim}`
-- @tparam[opt=false] bool a.is_sparse sparse gradient (SelectedRows)
-- @tparam[opt=false] bool a.is_distributed
-- @tparam[opt] int a.padding_idx rows with this id read zeros and get no gradient (negative: from the end)
-- @tparam[opt] ParamAttr|string a.param_attr the table's attributes
-- @tparam[opt="float32"] string a.dtype
-- @tparam[opt] string a.name
-- @treturn Variable [N, dim]
-- @usage
-- local ids = layers.data{name = "ids", shape = {1}, dtype = "int64"}
-- local emb = layers.embedding{input = ids, size = {10000, 32}}
function M.embedding(a)
  a = args("embedding", a, "input", nil,
    "dtype input is_distributed is_sparse name padding_idx param_attr size")
  return require("oar.layers.embedding_op")(a, false)
end

-- ---- convolution and pooling -----------------------------------------------------------

--- A 2-D convolution over NCHW (or NHWC) input, plus bias and activation. The filter
-- is initialized from Normal(0, sqrt(2 / fan_in)) unless param_attr says otherwise.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input [N, C, H, W] ([N, H, W, C] with data_format "NHWC")
-- @tparam int a.num_filters output channels
-- @tparam int|{int,int} a.filter_size
-- @tparam[opt=1] int|{int,int} a.stride
-- @tparam[opt=0] int|{int,int} a.padding
-- @tparam[opt=1] int|{int,int} a.dilation
-- @tparam[opt=1] int a.groups C and num_filters split into groups
-- @tparam[opt] ParamAttr|string a.param_attr the filter's attributes
-- @tparam[opt] ParamAttr|string|false a.bias_attr false: no bias
-- @tparam[opt] string|table a.act activation
-- @tparam[opt=true] bool a.use_cudnn
-- @tparam[opt="NCHW"] string a.data_format "NCHW" or "NHWC" (channels last, as the
-- input and output are laid out; the filter stays [num_filters, C/groups, kh, kw])
-- @tparam[opt] string a.name
-- @treturn Variable [N, num_filters, H', W'] (NHWC: [N, H', W', num_filters])
-- @usage
-- local img = layers.data{name = "img", shape = {1, 28, 28}}
-- local c = layers.conv2d{input = img, num_filters = 20, filter_size = 5, act = "relu"}
function M.conv2d(a)
  a = args("conv2d", a, "input", nil,
    "act bias_attr data_format dilation filter_size groups input name num_filters padding param_attr stride use_cudnn")
  local input = check.variable("conv2d", "input", a.input)
  local num_filters = check.positive_int("conv2d", "num_filters", a.num_filters)
  if a.filter_size == nil then check.fail("conv2d", "filter_size", "an integer or a list of 2", nil) end
  local filter_size = check.int_list("conv2d", "filter_size", a.filter_size, 2)
  local stride = check.int_list("conv2d", "stride", a.stride, 2, 1)
  local padding = check.int_list("conv2d", "padding", a.padding, 2, 0)
  local dilation = check.int_list("conv2d", "dilation", a.dilation, 2, 1)
  local groups = a.groups == nil and 1 or check.positive_int("conv2d", "groups", a.groups)
  local data_format = check.string("conv2d", "data_format", a.data_format, "NCHW", { "NCHW", "NHWC" })
  local nhwc = data_format == "NHWC"
  local shape = input.shape
  if #shape ~= 4 then
    raise(string.format("conv2d: 'input' must be 4-D %s, got shape %s", data_format, framework.shape_text(shape)))
  end
  local channels = shape[nhwc and 4 or 2]
  if channels <= 0 or channels % groups ~= 0 then
    raise(string.format("conv2d: input channels %d must be positive and divisible by groups %d", channels, groups))
  end
  local helper = LayerHelper("conv2d", a)
  local dtype = input.dtype
  local filter_shape = { num_filters, channels / groups, filter_size[1], filter_size[2] }
  local fan = filter_size[1] * filter_size[2] * channels
  local w = helper:create_parameter(helper:param_attr(), filter_shape, dtype, false,
    initializer.Normal{ loc = 0.0, scale = math.sqrt(2.0 / fan) })
  local op_type = "conv2d"
  if groups == channels and num_filters % channels == 0 and a.use_cudnn == false then
    op_type = "depthwise_conv2d"
  end
  local pre_bias = helper:create_variable_for_type_inference(dtype)
  helper:append_op{ type = op_type, inputs = { Input = { input }, Filter = { w } }, outputs = { Output = { pre_bias } },
    attrs = { strides = stride, paddings = padding, dilations = dilation, groups = groups,
              use_cudnn = a.use_cudnn ~= false, data_format = data_format } }
  -- the bias runs along the channel axis: 1 in NCHW, 3 in NHWC
  local pre_act = nhwc and helper:append_bias_op(pre_bias, 3, 4) or helper:append_bias_op(pre_bias, 1, 2)
  return helper:append_activation(pre_act)
end

--- 2-D max or average pooling over NCHW (or NHWC) input.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input [N, C, H, W] ([N, H, W, C] with data_format "NHWC")
-- @tparam int|{int,int} a.pool_size window (ignored with global_pooling)
-- @tparam[opt="max"] string a.pool_type "max" or "avg"
-- @tparam[opt=1] int|{int,int} a.pool_stride
-- @tparam[opt=0] int|{int,int} a.pool_padding
-- @tparam[opt=false] bool a.global_pooling pool each whole channel
-- @tparam[opt=false] bool a.ceil_mode round the output size up
-- @tparam[opt=true] bool a.exclusive average over the real (unpadded) cells only
-- @tparam[opt="NCHW"] string a.data_format "NCHW" or "NHWC"
-- @tparam[opt] string a.name
-- @treturn Variable
-- @usage local p = layers.pool2d{input = c, pool_size = 2, pool_stride = 2, pool_type = "max"}
function M.pool2d(a)
  a = args("pool2d", a, "input", nil,
    "ceil_mode data_format exclusive global_pooling input name pool_padding pool_size pool_stride pool_type")
  local input = check.variable("pool2d", "input", a.input)
  local pool_type = check.string("pool2d", "pool_type", a.pool_type, "max", { "max", "avg" })
  local global_pooling = check.boolean("pool2d", "global_pooling", a.global_pooling, false)
  local pool_size = check.int_list("pool2d", "pool_size", a.pool_size, 2, -1)
  if not global_pooling and (pool_size[1] <= 0 or pool_size[2] <= 0) then
    check.fail("pool2d", "pool_size", "positive (or global_pooling=true)", a.pool_size)
  end
  local helper = LayerHelper("pool2d", a)
  local out = helper:create_variable_for_type_inference(input.dtype)
  helper:append_op{ type = "pool2d", inputs = { X = { input } }, outputs = { Out = { out } },
    attrs = { pooling_type = pool_type, ksize = pool_size, global_pooling = global_pooling,
              strides = check.int_list("pool2d", "pool_stride", a.pool_stride, 2, 1),
              paddings = check.int_list("pool2d", "pool_padding", a.pool_padding, 2, 0),
              ceil_mode = check.boolean("pool2d", "ceil_mode", a.ceil_mode, false),
              exclusive = check.boolean("pool2d", "exclusive", a.exclusive, true),
              data_format = check.string("pool2d", "data_format", a.data_format, "NCHW", { "NCHW", "NHWC" }) } }
  return out
end

-- ---- normalization and dropout -------------------------------------------------

--- Batch normalization with learned scale and bias and running statistics
-- (persistable, not trainable) for evaluation.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input at least 2-D
-- @tparam[opt] string|table a.act activation
-- @tparam[opt=false] bool a.is_test use the running statistics (`clone{for_test=true}` sets it)
-- @tparam[opt=0.9] number a.momentum of the running statistics
-- @tparam[opt=1e-5] number a.epsilon
-- @tparam[opt] ParamAttr|string a.param_attr the scale's attributes (initialized to 1)
-- @tparam[opt] ParamAttr|string a.bias_attr the bias's attributes (initialized to 0)
-- @tparam[opt="NCHW"] string a.data_layout "NCHW" or "NHWC"
-- @tparam[opt] string a.moving_mean_name
-- @tparam[opt] string a.moving_variance_name
-- @tparam[opt=false] bool a.use_global_stats normalize with the running statistics also in training
-- @tparam[opt] string a.name
-- @treturn Variable shaped like the input
-- @usage local h = layers.batch_norm{input = c, act = "relu"}
function M.batch_norm(a)
  a = args("batch_norm", a, "input", nil,
    "act bias_attr data_layout epsilon input is_test momentum moving_mean_name moving_variance_name name param_attr use_global_stats")
  local input = check.variable("batch_norm", "input", a.input)
  local layout = check.string("batch_norm", "data_layout", a.data_layout, "NCHW", { "NCHW", "NHWC" })
  local shape = input.shape
  if #shape < 2 then raise("batch_norm: 'input' needs at least 2 dims, got " .. framework.shape_text(shape)) end
  local channels = layout == "NCHW" and shape[2] or shape[#shape]
  if channels <= 0 then raise("batch_norm: the channel dimension of 'input' is unknown") end
  local helper = LayerHelper("batch_norm", a)
  local dtype = input.dtype
  local scale = helper:create_parameter(helper:param_attr(), { channels }, dtype, false,
    initializer.Constant{ value = 1.0 })
  local bias = helper:create_parameter(helper:bias_attr(), { channels }, dtype, true)
  local mean = helper:create_parameter({ name = a.moving_mean_name, trainable = false }, { channels }, dtype,
    false, initializer.Constant{ value = 0.0 })
  mean.stop_gradient = true
  local variance = helper:create_parameter({ name = a.moving_variance_name, trainable = false }, { channels },
    dtype, false, initializer.Constant{ value = 1.0 })
  variance.stop_gradient = true
  local saved_mean = helper:create_variable_for_type_inference(dtype, true)
  local saved_var = helper:create_variable_for_type_inference(dtype, true)
  local out = helper:create_variable_for_type_inference(dtype)
  helper:append_op{ type = "batch_norm",
    inputs = { X = { input }, Scale = { scale }, Bias = { bias }, Mean = { mean }, Variance = { variance } },
    outputs = { Y = { out }, MeanOut = { mean }, VarianceOut = { variance }, SavedMean = { saved_mean },
                SavedVariance = { saved_var } },
    attrs = { momentum = check.number("batch_norm", "momentum", a.momentum, 0.9),
              epsilon = check.number("batch_norm", "epsilon", a.epsilon, 1e-5),
              is_test = check.boolean("batch_norm", "is_test", a.is_test, false),
              data_layout = layout,
              use_global_stats = check.boolean("batch_norm", "use_global_stats", a.use_global_stats, false) } }
  return helper:append_activation(out)
end

--- Layer normalization over the dims from `begin_norm_axis` on.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input
-- @tparam[opt=true] bool a.scale learn a scale (initialized to 1)
-- @tparam[opt=true] bool a.shift learn a bias (initialized to 0)
-- @tparam[opt=1] int a.begin_norm_axis in [1, rank)
-- @tparam[opt=1e-5] number a.epsilon
-- @tparam[opt] ParamAttr|string a.param_attr the scale's attributes
-- @tparam[opt] ParamAttr|string a.bias_attr the bias's attributes
-- @tparam[opt] string|table a.act activation
-- @tparam[opt] string a.name
-- @treturn Variable shaped like the input
-- @usage local h = layers.layer_norm{input = x, begin_norm_axis = 1}
function M.layer_norm(a)
  a = args("layer_norm", a, "input", nil,
    "act begin_norm_axis bias_attr epsilon input name param_attr scale shift")
  local input = check.variable("layer_norm", "input", a.input)
  local axis = check.int("layer_norm", "begin_norm_axis", a.begin_norm_axis, 1)
  local shape = input.shape
  if axis < 1 or axis >= #shape then
    raise(string.format("layer_norm: 'begin_norm_axis' = %d must be in [1, %d)", axis, #shape))
  end
  local n = prod(shape, axis + 1)
  if n <= 0 then raise("layer_norm: the normalized dims of 'input' are unknown") end
  local helper = LayerHelper("layer_norm", a)
  local dtype = input.dtype
  local inputs = { X = { input } }
  if a.scale ~= false then
    inputs.Scale = { helper:create_parameter(helper:param_attr(), { n }, dtype, false,
      initializer.Constant{ value = 1.0 }) }
  end
  if a.shift ~= false then
    inputs.Bias = { helper:create_parameter(helper:bias_attr(), { n }, dtype, true) }
  end
  local mean = helper:create_variable_for_type_inference(dtype, true)
  local var = helper:create_variable_for_type_inference(dtype, true)
  local out = helper:create_variable_for_type_inference(dtype)
  helper:append_op{ type = "layer_norm", inputs = inputs,
    outputs = { Y = { out }, Mean = { mean }, Variance = { var } },
    attrs = { epsilon = check.number("layer_norm", "epsilon", a.epsilon, 1e-5), begin_norm_axis = axis } }
  return helper:append_activation(out)
end

--- Dropout: zeroes each element with probability `dropout_prob` in training.
-- Also `dropout(x, prob)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x
-- @tparam number a.dropout_prob in [0, 1]
-- @tparam[opt=false] bool a.is_test pass through (`clone{for_test=true}` sets it)
-- @tparam[opt] int a.seed fixed seed (default: the program's random_seed when set)
-- @tparam[opt="downgrade_in_infer"] string a.dropout_implementation or "upscale_in_train"
-- (scale kept elements by 1/(1-p) in training instead of scaling by (1-p) in evaluation)
-- @tparam[opt] string a.name
-- @tparam[opt] number prob dropout_prob, with a positional `x`
-- @treturn Variable shaped like x
-- @usage local h = layers.dropout(h, 0.5)   -- or layers.dropout{x = h, dropout_prob = 0.5}
function M.dropout(a, prob)
  a = args("dropout", a, "x", { dropout_prob = prob },
    "dropout_implementation dropout_prob is_test name seed x")
  local x = check.variable("dropout", "x", a.x)
  local p = check.number("dropout", "dropout_prob", a.dropout_prob)
  if p < 0 or p > 1 then check.fail("dropout", "dropout_prob", "in [0, 1]", p) end
  local helper = LayerHelper("dropout", a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  local mask = helper:create_variable_for_type_inference("uint8", true)
  local seed = a.seed
  if (seed == nil or seed == 0) and helper.main_program.random_seed ~= 0 then
    seed = helper.main_program.random_seed   -- reproducible like Fluid
  end
  helper:append_op{ type = "dropout", inputs = { X = { x } }, outputs = { Out = { out }, Mask = { mask } },
    attrs = { dropout_prob = p, is_test = check.boolean("dropout", "is_test", a.is_test, false),
              fix_seed = seed ~= nil, seed = seed and check.int("dropout", "seed", seed) or 0,
              dropout_implementation = check.string("dropout", "dropout_implementation",
                a.dropout_implementation, "downgrade_in_infer", { "downgrade_in_infer", "upscale_in_train" }) } }
  return out
end

-- ---- activations: layers.relu(x) or layers.relu{x=, name=} ------------------------------
-- name -> {attr = default} for the activation's own attributes
local activations = {
  relu = {}, sigmoid = {}, tanh = {}, exp = {}, log = {}, sqrt = {}, rsqrt = {}, abs = {},
  square = {}, ceil = {}, floor = {}, round = {}, cos = {}, sin = {}, reciprocal = {},
  softplus = { beta = 1.0, threshold = 20.0 }, softsign = {}, logsigmoid = {}, tanh_shrink = {}, sign = {},
  gelu = { approximate = false }, leaky_relu = { alpha = 0.02 }, elu = { alpha = 1.0 }, relu6 = { threshold = 6.0 },
  pow = { factor = 1.0 }, hard_sigmoid = { slope = 0.2, offset = 0.5 }, swish = { beta = 1.0 },
  brelu = { t_min = 0.0, t_max = 24.0 }, stanh = { scale_a = 0.67, scale_b = 1.7159 },
  soft_relu = { threshold = 40.0 }, thresholded_relu = { threshold = 1.0, value = 0.0 },
  hard_shrink = { threshold = 0.5 }, softshrink = { lambda = 0.5 },
  -- Fluid 1.8's ops.py and nn.py
  acos = {}, asin = {}, atan = {}, erf = {},
  selu = { scale = 1.0507009873554804934193349852946, alpha = 1.6732632423543772848170429916717 },
  hard_swish = { threshold = 6.0, scale = 6.0, offset = 3.0 }, mish = { threshold = 20.0 },
  -- Paddle 2.x's names for the rest of oar's unary ops
  tan = {}, sinh = {}, cosh = {}, log1p = {}, expm1 = {}, log2 = {}, log10 = {}, silu = {},
  celu = { alpha = 1.0 }, logit = { eps = 1e-6 }, asinh = {}, acosh = {}, atanh = {},
}
-- the attribute a positional number stands for: leaky_relu(x, 0.1), pow(x, 2)
local first_attr = {
  leaky_relu = "alpha", elu = "alpha", relu6 = "threshold", pow = "factor", hard_sigmoid = "slope",
  swish = "beta", brelu = "t_min", stanh = "scale_a", soft_relu = "threshold", thresholded_relu = "threshold",
  hard_shrink = "threshold", softshrink = "lambda", selu = "scale", hard_swish = "threshold",
  mish = "threshold", celu = "alpha", logit = "eps",
}

--- Activations. Each is `layers.NAME(x)`, `layers.NAME{x=, name=, attrs...}`,
-- or `layers.NAME(x, {attrs...})`; those with an attribute also take its
-- value positionally: `layers.leaky_relu(x, 0.1)`. Each returns a Variable
-- shaped like x.
-- @section activations

--- max(x, 0).
-- @function relu
-- @tparam Variable|table x the input, or `{x=, name=}`
-- @treturn Variable
-- @usage local h = layers.relu(x)

--- 1 / (1 + exp(-x)).
-- @function sigmoid
-- @tparam Variable|table x the input, or `{x=, name=}`
-- @treturn Variable
-- @usage local p = layers.sigmoid(logits)

--- tanh(x).
-- @function tanh
-- @tparam Variable|table x the input, or `{x=, name=}`
-- @treturn Variable
-- @usage local h = layers.tanh(x)

--- exp(x).
-- @function exp
-- @tparam Variable|table x the input, or `{x=, name=}`
-- @treturn Variable
-- @usage local e = layers.exp(x)

--- Natural logarithm.
-- @function log
-- @tparam Variable|table x the input, or `{x=, name=}`
-- @treturn Variable
-- @usage local l = layers.log(p)

--- Square root.
-- @function sqrt
-- @tparam Variable|table x the input, or `{x=, name=}`
-- @treturn Variable
-- @usage local s = layers.sqrt(x)

--- 1 / sqrt(x).
-- @function rsqrt
-- @tparam Variable|table x the input, or `{x=, name=}`
-- @treturn Variable
-- @usage local r = layers.rsqrt(x)

--- |x|.
-- @function abs
-- @tparam Variable|table x the input, or `{x=, name=}`
-- @treturn Variable
-- @usage local a = layers.abs(x)

--- x * x.
-- @function square
-- @tparam Variable|table x the input, or `{x=, name=}`
-- @treturn Variable
-- @usage local s = layers.square(x)

--- Rounds up (no gradient).
-- @function ceil
-- @tparam Variable|table x the input, or `{x=, name=}`
-- @treturn Variable
-- @usage local c = layers.ceil(x)

--- Rounds down (no gradient).
-- @function floor
-- @tparam Variable|table x the input, or `{x=, name=}`
-- @treturn Variable
-- @usage local f = layers.floor(x)

--- Rounds to the nearest integer (no gradient).
-- @function round
-- @tparam Variable|table x the input, or `{x=, name=}`
-- @treturn Variable
-- @usage local r = layers.round(x)

--- cos(x).
-- @function cos
-- @tparam Variable|table x the input, or `{x=, name=}`
-- @treturn Variable
-- @usage local c = layers.cos(x)

--- sin(x).
-- @function sin
-- @tparam Variable|table x the input, or `{x=, name=}`
-- @treturn Variable
-- @usage local s = layers.sin(x)

--- 1 / x.
-- @function reciprocal
-- @tparam Variable|table x the input, or `{x=, name=}`
-- @treturn Variable
-- @usage local r = layers.reciprocal(x)

--- log(1 + exp(x)).
-- @function softplus
-- @tparam Variable|table x the input, or `{x=, beta=1, threshold=20, name=}`
-- (Paddle 2.x: log(1 + exp(beta x)) / beta, x itself where beta x > threshold)
-- @treturn Variable
-- @usage local s = layers.softplus(x)

--- x / (1 + |x|).
-- @function softsign
-- @tparam Variable|table x the input, or `{x=, name=}`
-- @treturn Variable
-- @usage local s = layers.softsign(x)

--- log(sigmoid(x)).
-- @function logsigmoid
-- @tparam Variable|table x the input, or `{x=, name=}`
-- @treturn Variable
-- @usage local l = layers.logsigmoid(x)

--- x - tanh(x).
-- @function tanh_shrink
-- @tparam Variable|table x the input, or `{x=, name=}`
-- @treturn Variable
-- @usage local t = layers.tanh_shrink(x)

--- -1, 0 or 1 (no gradient).
-- @function sign
-- @tparam Variable|table x the input, or `{x=, name=}`
-- @treturn Variable
-- @usage local s = layers.sign(x)

--- Gaussian error linear unit, x * Phi(x).
-- @function gelu
-- @tparam Variable|table x the input, or `{x=, approximate=false, name=}`
-- (approximate: the tanh approximation)
-- @treturn Variable
-- @usage local h = layers.gelu(x)

--- x for x > 0, alpha * x otherwise.
-- @function leaky_relu
-- @tparam Variable|table x the input, or `{x=, alpha=, name=}`
-- @tparam[opt=0.02] number alpha
-- @treturn Variable
-- @usage local h = layers.leaky_relu(x, 0.1)

--- x for x > 0, alpha * (exp(x) - 1) otherwise.
-- @function elu
-- @tparam Variable|table x the input, or `{x=, alpha=, name=}`
-- @tparam[opt=1.0] number alpha
-- @treturn Variable
-- @usage local h = layers.elu(x)

--- min(max(x, 0), threshold).
-- @function relu6
-- @tparam Variable|table x the input, or `{x=, threshold=, name=}`
-- @tparam[opt=6.0] number threshold
-- @treturn Variable
-- @usage local h = layers.relu6(x)

--- x ^ factor.
-- @function pow
-- @tparam Variable|table x the input, or `{x=, factor=, name=}`
-- @tparam[opt=1.0] number factor
-- @treturn Variable
-- @usage local y = layers.pow(x, 2)

--- max(0, min(1, slope * x + offset)).
-- @function hard_sigmoid
-- @tparam Variable|table x the input, or `{x=, slope=0.2, offset=0.5, name=}`
-- @treturn Variable
-- @usage local y = layers.hard_sigmoid{x = x, slope = 0.2}

--- x * sigmoid(beta * x).
-- @function swish
-- @tparam Variable|table x the input, or `{x=, beta=, name=}`
-- @tparam[opt=1.0] number beta
-- @treturn Variable
-- @usage local y = layers.swish(x)

--- min(max(x, t_min), t_max).
-- @function brelu
-- @tparam Variable|table x the input, or `{x=, t_min=0, t_max=24, name=}`
-- @treturn Variable
-- @usage local y = layers.brelu{x = x, t_min = 1, t_max = 4}

--- scale_b * tanh(scale_a * x).
-- @function stanh
-- @tparam Variable|table x the input, or `{x=, scale_a=0.67, scale_b=1.7159, name=}`
-- @treturn Variable
-- @usage local y = layers.stanh(x)

--- log(1 + exp(min(max(x, -threshold), threshold))).
-- @function soft_relu
-- @tparam Variable|table x the input, or `{x=, threshold=, name=}`
-- @tparam[opt=40.0] number threshold
-- @treturn Variable
-- @usage local y = layers.soft_relu(x)

--- x for x > threshold, 0 otherwise.
-- @function thresholded_relu
-- @tparam Variable|table x the input, or `{x=, threshold=, value=, name=}`
-- @tparam[opt=1.0] number threshold
-- @tparam[opt=0.0] number value what x becomes at or below threshold (Paddle 2.x)
-- @treturn Variable
-- @usage local y = layers.thresholded_relu(x, 0.5)

--- x where |x| > threshold, 0 otherwise.
-- @function hard_shrink
-- @tparam Variable|table x the input, or `{x=, threshold=, name=}`
-- @tparam[opt=0.5] number threshold
-- @treturn Variable
-- @usage local y = layers.hard_shrink(x)

--- x - lambda for x > lambda, x + lambda for x < -lambda, 0 otherwise.
-- @function softshrink
-- @tparam Variable|table x the input, or `{x=, lambda=, name=}`
-- @tparam[opt=0.5] number lambda
-- @treturn Variable
-- @usage local y = layers.softshrink(x)

--- The inverse hyperbolic sine, asinh(x) = log(x + sqrt(x^2 + 1)).
-- @function asinh
-- @tparam Variable|table x the input, or `{x=, name=}`
-- @treturn Variable
-- @usage local a = layers.asinh(x)

--- The inverse hyperbolic cosine, for x >= 1.
-- @function acosh
-- @tparam Variable|table x the input, or `{x=, name=}`
-- @treturn Variable
-- @usage local a = layers.acosh(x)

--- The inverse hyperbolic tangent, for |x| < 1.
-- @function atanh
-- @tparam Variable|table x the input, or `{x=, name=}`
-- @treturn Variable
-- @usage local a = layers.atanh(x)

--- arccos(x), for x in [-1, 1].
-- @function acos
-- @tparam Variable|table x the input, or `{x=, name=}`
-- @treturn Variable
-- @usage local a = layers.acos(x)

--- arcsin(x), for x in [-1, 1].
-- @function asin
-- @tparam Variable|table x the input, or `{x=, name=}`
-- @treturn Variable
-- @usage local a = layers.asin(x)

--- arctan(x).
-- @function atan
-- @tparam Variable|table x the input, or `{x=, name=}`
-- @treturn Variable
-- @usage local a = layers.atan(x)

--- The error function, 2/sqrt(pi) * integral from 0 to x of exp(-t^2).
-- @function erf
-- @tparam Variable|table x the input, or `{x=, name=}`
-- @treturn Variable
-- @usage local e = layers.erf(x)

--- Scaled exponential linear unit: scale * x for x > 0, scale * alpha * (exp(x) - 1) otherwise.
-- @function selu
-- @tparam Variable|table x the input, or `{x=, scale=, alpha=, name=}`
-- @tparam[opt=1.0507009873554805] number scale (also positionally)
-- @treturn Variable
-- @usage local h = layers.selu(x)

--- x * min(max(x + offset, 0), threshold) / scale.
-- @function hard_swish
-- @tparam Variable|table x the input, or `{x=, threshold=6, scale=6, offset=3, name=}`
-- @treturn Variable
-- @usage local h = layers.hard_swish(x)

--- x * tanh(softplus(x)); softplus(x) is x itself where x > threshold.
-- @function mish
-- @tparam Variable|table x the input, or `{x=, threshold=, name=}`
-- @tparam[opt=20] number threshold
-- @treturn Variable
-- @usage local h = layers.mish(x)

--- tan(x) (Paddle 2.x's paddle.tan).
-- @function tan
-- @tparam Variable|table x the input, or `{x=, name=}`
-- @treturn Variable
-- @usage local t = layers.tan(x)

--- sinh(x) (Paddle 2.x's paddle.sinh).
-- @function sinh
-- @tparam Variable|table x the input, or `{x=, name=}`
-- @treturn Variable
-- @usage local s = layers.sinh(x)

--- cosh(x) (Paddle 2.x's paddle.cosh).
-- @function cosh
-- @tparam Variable|table x the input, or `{x=, name=}`
-- @treturn Variable
-- @usage local c = layers.cosh(x)

--- log(1 + x), accurate for small x (Paddle 2.x's paddle.log1p).
-- @function log1p
-- @tparam Variable|table x the input, or `{x=, name=}`
-- @treturn Variable
-- @usage local l = layers.log1p(x)

--- exp(x) - 1, accurate for small x (Paddle 2.x's paddle.expm1).
-- @function expm1
-- @tparam Variable|table x the input, or `{x=, name=}`
-- @treturn Variable
-- @usage local e = layers.expm1(x)

--- Base-2 logarithm (Paddle 2.x's paddle.log2).
-- @function log2
-- @tparam Variable|table x the input, or `{x=, name=}`
-- @treturn Variable
-- @usage local l = layers.log2(x)

--- Base-10 logarithm (Paddle 2.x's paddle.log10).
-- @function log10
-- @tparam Variable|table x the input, or `{x=, name=}`
-- @treturn Variable
-- @usage local l = layers.log10(x)

--- x * sigmoid(x) (Paddle 2.x's silu).
-- @function silu
-- @tparam Variable|table x the input, or `{x=, name=}`
-- @treturn Variable
-- @usage local h = layers.silu(x)

--- max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) (Paddle 2.x's celu).
-- @function celu
-- @tparam Variable|table x the input, or `{x=, alpha=, name=}`
-- @tparam[opt=1.0] number alpha
-- @treturn Variable
-- @usage local h = layers.celu(x, 0.5)

--- log(x / (1 - x)), x first clipped to [eps, 1 - eps] (Paddle 2.x's logit).
-- @function logit
-- @tparam Variable|table x the input, or `{x=, eps=, name=}`
-- @tparam[opt=1e-6] number eps
-- @treturn Variable
-- @usage local z = layers.logit(p)

--- Softmax and reductions.
-- @section softmax
-- Each activation maps one to one onto its op: its keyword arguments, their
-- defaults and ranges are the op's declared attributes (oar.op_decl), so the
-- layer checks what the declaration says; `activations` above names the ops
-- that have a layer (and its values document the defaults: a spec holds
-- them to the declarations).
for op_type in pairs(activations) do
  local declared = op_decl.attrs(op_type)
  local known = { "x", "name" }
  for _, d in ipairs(declared) do known[#known + 1] = d.name end
  M[op_type] = function(a, extra)
    if framework.is_variable(a) and type(extra) == "table" then
      argcheck.keys("layers." .. op_type, extra, known)
      local t = {}
      for k, v in pairs(extra) do t[k] = v end
      t.x = a
      a = t
    elseif framework.is_variable(a) and type(extra) == "number" then
      -- leaky_relu(x, 0.1), pow(x, 2): the first attribute positionally
      local key = first_attr[op_type]
      if not key then
        raise(string.format("%s: has no attribute to give positionally, got the number %s", op_type, tostring(extra)))
      end
      a = { x = a, [key] = extra }
    else
      a = args(op_type, a, "x", nil, known)
    end
    local x = check.variable(op_type, "x", a.x)
    local attrs = {}
    for _, d in ipairs(declared) do
      local k = d.name
      if d.kind == "bool" then
        attrs[k] = check.boolean(op_type, k, a[k], d.default)
      elseif d.kind == "int" or d.kind == "long" then
        attrs[k] = check.int(op_type, k, a[k], not d.required and d.default or nil)
      else
        attrs[k] = check.number(op_type, k, a[k], not d.required and d.default or nil)
      end
      if d.min and (attrs[k] < d.min or attrs[k] > d.max) then
        raise(string.format("%s: '%s' must be in [%g, %g], got %g", op_type, k, d.min, d.max, attrs[k]))
      end
    end
    local helper = LayerHelper(op_type, a)
    return helper:unary(op_type, x, attrs)
  end
end

-- a layer of op_type with input X and attr axis: softmax, log_softmax
local function softmax_layer(op_type)
  return function(a)
    a = args(op_type, a, "input", nil, "axis input name x")
    local x = check.variable(op_type, "input", a.input or a.x)
    local helper = LayerHelper(op_type, a)
    return helper:unary(op_type, x, { axis = check.int(op_type, "axis", a.axis, -1) })
  end
end

--- Softmax along `axis`: exp(x) / sum(exp(x)). Also `softmax(x)`.
-- @function softmax
-- @tparam Variable|table a the input, or keyword arguments:
-- @tparam Variable a.input (also `x=`)
-- @tparam[opt=-1] int a.axis
-- @tparam[opt] string a.name
-- @treturn Variable
-- @usage local p = layers.softmax(logits)
M.softmax = softmax_layer("softmax")
--- log(softmax(x)) along `axis`, computed stably. Also `log_softmax(x)`.
-- @function log_softmax
-- @tparam Variable|table a the input, or `{input=, axis=-1, name=}`
-- @treturn Variable
-- @usage local lp = layers.log_softmax{input = logits, axis = -1}
M.log_softmax = softmax_layer("log_softmax")

-- ---- reductions ------------------------------------------------------------------

--- The mean of all elements, shape [1]. Also `mean(x)`.
-- @tparam Variable|table a the input, or `{x=, name=}` (also `input=`)
-- @treturn Variable [1]
-- @usage local avg_loss = layers.mean(loss)
function M.mean(a)
  a = args("mean", a, "x", nil, "input name x")
  local x = check.variable("mean", "x", a.x or a.input)
  local helper = LayerHelper("mean", a)
  return helper:unary("mean", x, nil)
end

local function reduce_layer(op_type)
  return function(a, dim, keep_dim)
    a = args(op_type, a, "input", { dim = dim, keep_dim = keep_dim }, "dim input keep_dim name x")
    local x = check.variable(op_type, "input", a.input or a.x)
    local d = a.dim
    local reduce_all = d == nil
    if type(d) == "number" then d = { d } end
    if d ~= nil then
      if type(d) ~= "table" then check.fail(op_type, "dim", "an integer or a list of integers", d) end
      for _, v in ipairs(d) do check.int(op_type, "dim", v) end
    end
    local helper = LayerHelper(op_type, a)
    return helper:unary(op_type, x, { dim = d or { 0 }, keep_dim = check.boolean(op_type, "keep_dim",
      a.keep_dim, false), reduce_all = reduce_all })
  end
end

--- Sum over `dim` (all dims when nil). Also `reduce_sum(x, dim, keep_dim)`.
-- @function reduce_sum
-- @tparam Variable|table a the input, or keyword arguments:
-- @tparam Variable a.input (also `x=`)
-- @tparam[opt] int|{int,...} a.dim dims to reduce (negative: from the end); nil: all
-- @tparam[opt=false] bool a.keep_dim keep reduced dims as size 1
-- @tparam[opt] string a.name
-- @treturn Variable
-- @usage local s = layers.reduce_sum(x, 1)   -- sum over dim 1

--- Mean over `dim` (all when nil); arguments as `reduce_sum`.
-- @function reduce_mean
-- @tparam Variable|table a the input, or `{input=, dim=, keep_dim=false, name=}`
-- @treturn Variable
-- @usage local m = layers.reduce_mean{input = x, dim = {1}, keep_dim = true}

--- Maximum over `dim` (all when nil); arguments as `reduce_sum`.
-- @function reduce_max
-- @tparam Variable|table a the input, or `{input=, dim=, keep_dim=false, name=}`
-- @treturn Variable
-- @usage local m = layers.reduce_max(x, -1)

--- Minimum over `dim` (all when nil); arguments as `reduce_sum`.
-- @function reduce_min
-- @tparam Variable|table a the input, or `{input=, dim=, keep_dim=false, name=}`
-- @treturn Variable
-- @usage local m = layers.reduce_min(x)

--- Product over `dim` (all when nil); arguments as `reduce_sum`.
-- @function reduce_prod
-- @tparam Variable|table a the input, or `{input=, dim=, keep_dim=false, name=}`
-- @treturn Variable
-- @usage local p = layers.reduce_prod(x, 1)

--- Logical and over `dim` of a bool tensor (all when nil); arguments as `reduce_sum`.
-- @function reduce_all
-- @tparam Variable|table a the input, or `{input=, dim=, keep_dim=false, name=}`
-- @treturn Variable bool
-- @usage local all_ok = layers.reduce_all(layers.less_than(x, y))

--- Logical or over `dim` of a bool tensor (all when nil); arguments as `reduce_sum`.
-- @function reduce_any
-- @tparam Variable|table a the input, or `{input=, dim=, keep_dim=false, name=}`
-- @treturn Variable bool
-- @usage local any_bad = layers.reduce_any(layers.greater_than(x, limit))

--- Products and elementwise arithmetic.
-- @section products
for _, name in ipairs({ "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
                        "reduce_all", "reduce_any" }) do
  M[name] = reduce_layer(name)
end

-- ---- products ---------------------------------------------------------------------

--- Matrix product of the last two dims (batched over the leading ones),
-- `alpha * op(x) . op(y)`. Also `matmul(x, y)`.
-- @tparam Variable|table a `x`, or keyword arguments:
-- @tparam Variable a.x
-- @tparam Variable a.y
-- @tparam[opt=false] bool a.transpose_x
-- @tparam[opt=false] bool a.transpose_y
-- @tparam[opt=1.0] number a.alpha
-- @tparam[opt] string a.name
-- @tparam[opt] Variable y with a positional x
-- @treturn Variable
-- @usage local scores = layers.matmul{x = q, y = k, transpose_y = true, alpha = 0.125}
function M.matmul(a, y)
  if framework.is_variable(a) then a = { x = a, y = y } end
  a = args("matmul", a, nil, nil, "alpha name transpose_x transpose_y x y")
  local x = check.variable("matmul", "x", a.x)
  y = check.variable("matmul", "y", a.y)
  local helper = LayerHelper("matmul", a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = "matmul", inputs = { X = { x }, Y = { y } }, outputs = { Out = { out } },
    attrs = { transpose_X = check.boolean("matmul", "transpose_x", a.transpose_x, false),
              transpose_Y = check.boolean("matmul", "transpose_y", a.transpose_y, false),
              alpha = check.number("matmul", "alpha", a.alpha, 1.0) } }
  return out
end

--- Matrix product of x and y flattened to 2-D (Fluid's `mul`: the first
-- `x_num_col_dims` dims of x are rows). Also `mul(x, y)`.
-- @tparam Variable|table a `x`, or keyword arguments:
-- @tparam Variable a.x
-- @tparam Variable a.y
-- @tparam[opt=1] int a.x_num_col_dims
-- @tparam[opt=1] int a.y_num_col_dims
-- @tparam[opt] string|table a.act activation
-- @tparam[opt] string a.name
-- @tparam[opt] Variable y with a positional x
-- @treturn Variable
-- @usage local z = layers.mul(x, w)
function M.mul(a, y)
  if framework.is_variable(a) then a = { x = a, y = y } end
  a = args("mul", a, nil, nil, "act name x x_num_col_dims y y_num_col_dims")
  local x = check.variable("mul", "x", a.x)
  y = check.variable("mul", "y", a.y)
  local helper = LayerHelper("mul", a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = "mul", inputs = { X = { x }, Y = { y } }, outputs = { Out = { out } },
    attrs = { x_num_col_dims = check.int("mul", "x_num_col_dims", a.x_num_col_dims, 1),
              y_num_col_dims = check.int("mul", "y_num_col_dims", a.y_num_col_dims, 1) } }
  return helper:append_activation(out)
end

-- ---- elementwise arithmetic: elementwise_add{x=, y=, axis=-1, act=} ----------------------

--- x + y with broadcasting: y's dims match x's starting at `axis` (-1: the
-- trailing dims). Also `elementwise_add(x, y)`.
-- @function elementwise_add
-- @tparam Variable|table a `x`, or keyword arguments:
-- @tparam Variable a.x
-- @tparam Variable a.y
-- @tparam[opt=-1] int a.axis
-- @tparam[opt] string|table a.act activation
-- @tparam[opt] string a.name
-- @tparam[opt] Variable y with a positional x
-- @treturn Variable shaped like x
-- @usage local z = layers.elementwise_add{x = h, y = b, axis = 1}

--- x - y; arguments as `elementwise_add`.
-- @function elementwise_sub
-- @tparam Variable|table a `x`, or `{x=, y=, axis=-1, act=, name=}`
-- @tparam[opt] Variable y
-- @treturn Variable
-- @usage local d = layers.elementwise_sub(x, y)

--- x * y; arguments as `elementwise_add`.
-- @function elementwise_mul
-- @tparam Variable|table a `x`, or `{x=, y=, axis=-1, act=, name=}`
-- @tparam[opt] Variable y
-- @treturn Variable
-- @usage local p = layers.elementwise_mul(x, mask)

--- x / y; arguments as `elementwise_add`.
-- @function elementwise_div
-- @tparam Variable|table a `x`, or `{x=, y=, axis=-1, act=, name=}`
-- @tparam[opt] Variable y
-- @treturn Variable
-- @usage local q = layers.elementwise_div(x, y)

--- max(x, y); arguments as `elementwise_add`.
-- @function elementwise_max
-- @tparam Variable|table a `x`, or `{x=, y=, axis=-1, act=, name=}`
-- @tparam[opt] Variable y
-- @treturn Variable
-- @usage local m = layers.elementwise_max(x, y)

--- min(x, y); arguments as `elementwise_add`.
-- @function elementwise_min
-- @tparam Variable|table a `x`, or `{x=, y=, axis=-1, act=, name=}`
-- @tparam[opt] Variable y
-- @treturn Variable
-- @usage local m = layers.elementwise_min(x, y)

--- x ^ y; arguments as `elementwise_add`.
-- @function elementwise_pow
-- @tparam Variable|table a `x`, or `{x=, y=, axis=-1, act=, name=}`
-- @tparam[opt] Variable y
-- @treturn Variable
-- @usage local p = layers.elementwise_pow(x, y)

--- x mod y (integers; no gradient); arguments as `elementwise_add`.
-- @function elementwise_mod
-- @tparam Variable|table a `x`, or `{x=, y=, axis=-1, act=, name=}`
-- @tparam[opt] Variable y
-- @treturn Variable
-- @usage local r = layers.elementwise_mod(i, n)

--- floor(x / y) (integers; no gradient); arguments as `elementwise_add`.
-- @function elementwise_floordiv
-- @tparam Variable|table a `x`, or `{x=, y=, axis=-1, act=, name=}`
-- @tparam[opt] Variable y
-- @treturn Variable
-- @usage local q = layers.elementwise_floordiv(i, n)
for _, kind in ipairs({ "add", "sub", "mul", "div", "max", "min", "pow", "mod", "floordiv" }) do
  local op_type = "elementwise_" .. kind
  M[op_type] = function(a, y)
    if framework.is_variable(a) then a = { x = a, y = y } end
    a = args(op_type, a, nil, nil, "act axis name x y")
    local x = check.variable(op_type, "x", a.x)
    local yv = check.variable(op_type, "y", a.y)
    local helper = LayerHelper(op_type, a)
    local out = helper:create_variable_for_type_inference(x.dtype)
    helper:append_op{ type = op_type, inputs = { X = { x }, Y = { yv } }, outputs = { Out = { out } },
                      attrs = { axis = check.int(op_type, "axis", a.axis, -1) } }
    return helper:append_activation(out)
  end
end

--- `scale * x + bias` (or `scale * (x + bias)`). Also `scale(x, scale, bias)`.
-- @tparam Variable|table a `x`, or keyword arguments:
-- @tparam Variable a.x
-- @tparam[opt=1.0] number a.scale
-- @tparam[opt=0.0] number a.bias
-- @tparam[opt=true] bool a.bias_after_scale
-- @tparam[opt] string|table a.act activation
-- @tparam[opt] string a.name
-- @tparam[opt] number s scale, with a positional x
-- @tparam[opt] number b bias, with a positional x
-- @treturn Variable
-- @usage local y = layers.scale(x, 2.0, 1.0)   -- 2x + 1
function M.scale(a, s, b)
  a = args("scale", a, "x", { scale = s, bias = b }, "act bias bias_after_scale name scale x")
  local x = check.variable("scale", "x", a.x)
  local helper = LayerHelper("scale", a)
  local out = helper:unary("scale", x, { scale = check.number("scale", "scale", a.scale, 1.0),
    bias = check.number("scale", "bias", a.bias, 0.0),
    bias_after_scale = check.boolean("scale", "bias_after_scale", a.bias_after_scale, true) })
  return helper:append_activation(out)
end

--- Clamps every element to [min, max].
-- @tparam table a keyword arguments:
-- @tparam Variable a.x
-- @tparam number a.min
-- @tparam number a.max not below min
-- @tparam[opt] string a.name
-- @treturn Variable
-- @usage local y = layers.clip{x = x, min = -1, max = 1}
function M.clip(a)
  a = args("clip", a, "x", nil, "max min name x")
  local x = check.variable("clip", "x", a.x)
  local lo, hi = check.number("clip", "min", a.min), check.number("clip", "max", a.max)
  if lo > hi then raise("clip: 'min' must not exceed 'max'") end
  return LayerHelper("clip", a):unary("clip", x, { min = lo, max = hi })
end

--- Scales x down so that its L2 norm is at most `max_norm`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x
-- @tparam number a.max_norm
-- @tparam[opt] string a.name
-- @treturn Variable
-- @usage local g = layers.clip_by_norm{x = grad, max_norm = 5.0}
function M.clip_by_norm(a)
  a = args("clip_by_norm", a, "x", nil, "max_norm name x")
  local x = check.variable("clip_by_norm", "x", a.x)
  return LayerHelper("clip_by_norm", a):unary("clip_by_norm", x,
    { max_norm = check.number("clip_by_norm", "max_norm", a.max_norm) })
end

--- The `k` largest values along the last dim and their indices (also
-- `top_k`, and `topk(x, k)`).
-- @tparam table a keyword arguments:
-- @tparam Variable a.input
-- @tparam int a.k
-- @tparam[opt] string a.name
-- @tparam[opt] int k with a positional input
-- @treturn Variable values
-- @treturn Variable indices, int64
-- @usage local values, indices = layers.topk(probs, 5)
function M.topk(a, k)
  a = args("topk", a, "input", { k = k }, "input k name")
  local x = check.variable("topk", "input", a.input)
  local kk = check.positive_int("topk", "k", a.k)
  local helper = LayerHelper("top_k", a)
  local values = helper:create_variable_for_type_inference(x.dtype)
  local indices = helper:create_variable_for_type_inference("int64", true)
  helper:append_op{ type = "top_k", inputs = { X = { x } }, outputs = { Out = { values }, Indices = { indices } },
                    attrs = { k = kk } }
  return values, indices
end
M.top_k = M.topk

--- One-hot float32 rows from int ids: [N, 1] -> [N, depth]. Also `one_hot(ids, depth)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input int64 ids [N, 1]
-- @tparam int a.depth
-- @tparam[opt] string a.name
-- @tparam[opt] int depth with a positional input
-- @treturn Variable float32 [N, depth]
-- @usage local oh = layers.one_hot(label, 10)
function M.one_hot(a, depth)
  a = args("one_hot", a, "input", { depth = depth }, "depth input name")
  local x = check.variable("one_hot", "input", a.input)
  local helper = LayerHelper("one_hot", a)
  local out = helper:create_variable_for_type_inference("float32")
  helper:append_op{ type = "one_hot", inputs = { X = { x } }, outputs = { Out = { out } },
                    attrs = { depth = check.positive_int("one_hot", "depth", a.depth) } }
  return out
end

return M
