--- oar.layers.extra: Fluid 1.8 layers over the ops added for Paddle model
-- coverage: conv2d_transpose, image_resize / resize_bilinear /
-- resize_nearest, prelu, instance_norm, group_norm, pad, gather_nd,
-- cumsum, argsort, and Paddle 2.x's index_select.
-- @module oar.layers.extra
local LayerHelper = require("oar.layer_helper")
local initializer = require("oar.initializer")
local framework = require("oar.framework")

local check, args = LayerHelper.check, LayerHelper.args
local raise = framework.raise

local M = {}

local function four_d(layer, x)
  if #x.shape ~= 4 then
    raise(string.format("%s: 'input' must be 4-D NCHW, got shape %s", layer, framework.shape_text(x.shape)))
  end
end

--- conv2d_transpose{input=, num_filters=, output_size=, filter_size=,
-- padding=0, stride=1, dilation=1, groups=1, param_attr=, bias_attr=,
-- use_cudnn=true, act=, name=}; NCHW. filter_size may be left out when
-- output_size is given (Fluid derives it).
-- @tparam table a keyword arguments
-- @treturn Variable the output [N, num_filters, OH, OW]
-- @usage local up = layers.conv2d_transpose{input = x, num_filters = 8, filter_size = 2, stride = 2}
function M.conv2d_transpose(a)
  a = args("conv2d_transpose", a, "input", nil,
    "act bias_attr dilation filter_size groups input name num_filters output_size padding param_attr stride use_cudnn")
  local L = "conv2d_transpose"
  local input = check.variable(L, "input", a.input)
  four_d(L, input)
  local num_filters = check.positive_int(L, "num_filters", a.num_filters)
  local stride = check.int_list(L, "stride", a.stride, 2, 1)
  local padding = check.int_list(L, "padding", a.padding, 2, 0)
  local dilation = check.int_list(L, "dilation", a.dilation, 2, 1)
  local groups = a.groups == nil and 1 or check.positive_int(L, "groups", a.groups)
  local channels = input.shape[2]
  if channels <= 0 or channels % groups ~= 0 or num_filters % groups ~= 0 then
    raise(string.format("%s: input channels %d and num_filters %d must be divisible by groups %d", L, channels,
      num_filters, groups))
  end
  local output_size = a.output_size ~= nil and check.int_list(L, "output_size", a.output_size, 2) or nil
  local filter_size
  if a.filter_size ~= nil then
    filter_size = check.int_list(L, "filter_size", a.filter_size, 2)
  elseif output_size then
    -- Fluid: the filter that maps the input exactly onto output_size
    filter_size = {}
    for i = 1, 2 do
      local in_ = input.shape[i + 2]
      if in_ <= 0 then raise(L .. ": filter_size is needed when the input's spatial dims are unknown") end
      filter_size[i] = math.floor((output_size[i] - (in_ - 1) * stride[i] + 2 * padding[i] - 1) / dilation[i]) + 1
      if filter_size[i] < 1 then raise(L .. ": output_size is too small for this input and stride") end
    end
  else
    check.fail(L, "filter_size", "an integer or a list of 2 (or give output_size)", nil)
  end
  local helper = LayerHelper(L, a)
  local dtype = input.dtype
  local w = helper:create_parameter(helper:param_attr(),
    { channels, num_filters / groups, filter_size[1], filter_size[2] }, dtype, false)
  local op_type = "conv2d_transpose"
  if groups == channels and num_filters == channels and a.use_cudnn == false then
    op_type = "depthwise_conv2d_transpose"
  end
  local attrs = { strides = stride, paddings = padding, dilations = dilation, groups = groups,
                  use_cudnn = a.use_cudnn ~= false }
  if output_size then attrs.output_size = output_size end
  local pre_bias = helper:create_variable_for_type_inference(dtype)
  helper:append_op{ type = op_type, inputs = { Input = { input }, Filter = { w } },
                    outputs = { Output = { pre_bias } }, attrs = attrs }
  local pre_act = helper:append_bias_op(pre_bias, 1, 2)
  return helper:append_activation(pre_act)
end

-- image_resize's common body for the v1 ops bilinear_interp / nearest_interp
local function resize(L, a, method)
  local input = check.variable(L, "input", a.input)
  four_d(L, input)
  local attrs = { interp_method = method,
                  align_corners = check.boolean(L, "align_corners", a.align_corners, true) }
  if method == "bilinear" then
    attrs.align_mode = check.int(L, "align_mode", a.align_mode, 1)
    if attrs.align_mode ~= 0 and attrs.align_mode ~= 1 then check.fail(L, "align_mode", "0 or 1", a.align_mode) end
  end
  return require("oar.layers.resize_nd").append_interp(L, a, input, attrs, 2)
end

local RESIZE_KEYS = "actual_shape align_corners align_mode data_format input name out_shape scale"

--- Resizes NCHW images by bilinear interpolation (Fluid's resize_bilinear).
-- Keys: `input`, `out_shape` ({h, w} or a Variable), `scale`, `actual_shape`,
-- `align_corners` (default true), `align_mode` (default 1), `name`; or
-- positionally (input, out_shape, scale).
-- @tparam table a keyword arguments
-- @param[opt] out_shape the key `out_shape`, given positionally
-- @param[opt] scale the key `scale`, given positionally
-- @treturn Variable [N, C, out_h, out_w]
-- @usage local big = layers.resize_bilinear{input = img, out_shape = {56, 56}}
function M.resize_bilinear(a, out_shape, scale)
  a = args("resize_bilinear", a, "input", { out_shape = out_shape, scale = scale }, RESIZE_KEYS)
  check.string("resize_bilinear", "data_format", a.data_format, "NCHW", { "NCHW" })
  return resize("resize_bilinear", a, "bilinear")
end

--- Resizes NCHW images to the nearest source pixel (Fluid's resize_nearest).
-- Keys: `input`, `out_shape`, `scale`, `actual_shape`, `align_corners`
-- (default true), `name`; or positionally (input, out_shape, scale).
-- @tparam table a keyword arguments
-- @param[opt] out_shape the key `out_shape`, given positionally
-- @param[opt] scale the key `scale`, given positionally
-- @treturn Variable [N, C, out_h, out_w]
-- @usage local up = layers.resize_nearest{input = img, scale = 2}
function M.resize_nearest(a, out_shape, scale)
  a = args("resize_nearest", a, "input", { out_shape = out_shape, scale = scale },
    "actual_shape align_corners data_format input name out_shape scale")
  check.string("resize_nearest", "data_format", a.data_format, "NCHW", { "NCHW" })
  return resize("resize_nearest", a, "nearest")
end

--- Resizes NCHW images, bilinear, nearest or bicubic, NCDHW volumes,
-- trilinear, or NCW rows, linear (Fluid's image_resize).
-- Keys as `resize_bilinear`, plus `resample`: "BILINEAR" (default), "NEAREST",
-- "BICUBIC" (bicubic_interp), "TRILINEAR" (5-D input, trilinear_interp) or
-- "LINEAR" (3-D input, NCW or NWC, linear_interp).
-- @tparam table a keyword arguments
-- @param[opt] out_shape the key `out_shape`, given positionally
-- @param[opt] scale the key `scale`, given positionally
-- @treturn Variable [N, C, out_h, out_w]
-- @usage local y = layers.image_resize{input = img, out_shape = {14, 14}, resample = "NEAREST"}
function M.image_resize(a, out_shape, scale)
  a = args("image_resize", a, "input", { out_shape = out_shape, scale = scale }, RESIZE_KEYS .. " resample")
  local r = check.string("image_resize", "resample", a.resample, "BILINEAR",
    { "BILINEAR", "NEAREST", "BICUBIC", "TRILINEAR", "LINEAR" })
  if r == "LINEAR" then
    a.data_format = check.string("image_resize", "data_format", a.data_format, "NCW", { "NCW", "NWC" })
    return require("oar.layers.resize_nd")("image_resize", a, "linear", 1)
  end
  if r == "TRILINEAR" or r == "BICUBIC" then
    local tri = r == "TRILINEAR"
    a.data_format = check.string("image_resize", "data_format", a.data_format, tri and "NCDHW" or "NCHW",
      tri and { "NCDHW", "NDHWC" } or { "NCHW", "NHWC" })
    return require("oar.layers.resize_nd")("image_resize", a, tri and "trilinear" or "bicubic",
      tri and 3 or 2)
  end
  check.string("image_resize", "data_format", a.data_format, "NCHW", { "NCHW" })
  return resize("image_resize", a, r == "BILINEAR" and "bilinear" or "nearest")
end

--- Parametric ReLU: x where x > 0, else alpha x.
-- Keys: `x`, `mode` ("all": one alpha, "channel": one per channel,
-- "element": one per element), `param_attr` (alpha starts at 0.25), `name`;
-- or positionally (x, mode).
-- @tparam table a keyword arguments
-- @param[opt] mode the key `mode`, given positionally
-- @treturn Variable like x
-- @usage local y = layers.prelu{x = h, mode = "channel"}
function M.prelu(a, mode)
  a = args("prelu", a, "x", { mode = mode }, "mode name param_attr x")
  local x = check.variable("prelu", "x", a.x)
  local m = check.string("prelu", "mode", a.mode, nil, { "all", "channel", "element" })
  local shape = x.shape
  local ashape = { 1 }
  if m == "channel" then
    if #shape < 2 or shape[2] <= 0 then raise("prelu: mode \"channel\" needs the input's channel dim (dim 2)") end
    ashape = { 1, shape[2], 1, 1 }
  elseif m == "element" then
    ashape = { 1 }
    for i = 2, #shape do
      if shape[i] <= 0 then raise("prelu: mode \"element\" needs every dim of the input but the first") end
      ashape[i] = shape[i]
    end
  end
  local helper = LayerHelper("prelu", a)
  local alpha = helper:create_parameter(helper:param_attr(), ashape, x.dtype, false,
    initializer.Constant{ value = 0.25 })
  local out = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = "prelu", inputs = { X = { x }, Alpha = { alpha } }, outputs = { Out = { out } },
                    attrs = { mode = m } }
  return out
end

-- Scale [C] (1) and Bias [C] (0) parameters of a channel normalization
local function norm_params(helper, L, input)
  local c = input.shape[2]
  if #input.shape < 2 or c <= 0 then raise(L .. ": the channel dim (dim 2) of 'input' must be known") end
  local inputs = { X = { input } }
  local s = helper:create_parameter(helper:param_attr(), { c }, input.dtype, false, initializer.Constant{ value = 1.0 })
  local b = helper:create_parameter(helper:bias_attr(), { c }, input.dtype, true)
  if s then inputs.Scale = { s } end
  if b then inputs.Bias = { b } end
  return inputs, c
end

--- Instance normalization: each (sample, channel) plane normalized over its
-- spatial dims, then scaled and shifted per channel.
-- Keys: `input` (NCHW), `epsilon` (default 1e-5), `param_attr` (Scale, 1),
-- `bias_attr` (Bias, 0; false for none), `name`.
-- @tparam table a keyword arguments
-- @treturn Variable like input
-- @usage local y = layers.instance_norm{input = feat}
function M.instance_norm(a)
  a = args("instance_norm", a, "input", nil, "bias_attr epsilon input name param_attr")
  local input = check.variable("instance_norm", "input", a.input)
  local helper = LayerHelper("instance_norm", a)
  local inputs = norm_params(helper, "instance_norm", input)
  local dtype = input.dtype
  local out = helper:create_variable_for_type_inference(dtype)
  helper:append_op{ type = "instance_norm", inputs = inputs,
    outputs = { Y = { out }, SavedMean = { helper:create_variable_for_type_inference(dtype, true) },
                SavedVariance = { helper:create_variable_for_type_inference(dtype, true) } },
    attrs = { epsilon = check.number("instance_norm", "epsilon", a.epsilon, 1e-5) } }
  return out
end

--- Group normalization over `groups` groups of channels.
-- Keys: `input` (NCHW), `groups`, `epsilon` (default 1e-5), `param_attr`,
-- `bias_attr`, `act`, `data_layout` ("NCHW"), `name`; or (input, groups).
-- @tparam table a keyword arguments
-- @param[opt] groups the key `groups`, given positionally
-- @treturn Variable like input
-- @usage local y = layers.group_norm{input = feat, groups = 4}
function M.group_norm(a, groups)
  a = args("group_norm", a, "input", { groups = groups }, "act bias_attr data_layout epsilon groups input name param_attr")
  local input = check.variable("group_norm", "input", a.input)
  local g = check.positive_int("group_norm", "groups", a.groups)
  check.string("group_norm", "data_layout", a.data_layout, "NCHW", { "NCHW" })
  local helper = LayerHelper("group_norm", a)
  local inputs, c = norm_params(helper, "group_norm", input)
  if c % g ~= 0 then raise(string.format("group_norm: %d channels are not divisible by groups = %d", c, g)) end
  local dtype = input.dtype
  local out = helper:create_variable_for_type_inference(dtype)
  helper:append_op{ type = "group_norm", inputs = inputs,
    outputs = { Y = { out }, Mean = { helper:create_variable_for_type_inference(dtype, true) },
                Variance = { helper:create_variable_for_type_inference(dtype, true) } },
    attrs = { groups = g, epsilon = check.number("group_norm", "epsilon", a.epsilon, 1e-5) } }
  return helper:append_activation(out)
end

--- Pads every dim with a constant (Fluid's pad).
-- Keys: `x`, `paddings` ({before_0, after_0, before_1, after_1, ...}, two per
-- dim), `pad_value` (default 0), `name`; or (x, paddings, pad_value).
-- @tparam table a keyword arguments
-- @param[opt] paddings the key `paddings`, given positionally
-- @param[opt] pad_value the key `pad_value`, given positionally
-- @treturn Variable x padded
-- @usage local y = layers.pad{x = m, paddings = {0, 0, 1, 1}, pad_value = -1}
function M.pad(a, paddings, pad_value)
  a = args("pad", a, "x", { paddings = paddings, pad_value = pad_value }, "name pad_value paddings x")
  local x = check.variable("pad", "x", a.x)
  local p = a.paddings
  if type(p) ~= "table" or #p ~= 2 * #x.shape then
    check.fail("pad", "paddings", string.format("a list of %d integers (2 per dim)", 2 * #x.shape), p)
  end
  for i = 1, #p do
    if type(p[i]) ~= "number" or p[i] % 1 ~= 0 or p[i] < 0 then check.fail("pad", "paddings", "non-negative integers", p) end
  end
  local helper = LayerHelper("pad", a)
  return helper:unary("pad", x, { paddings = p, pad_value = check.number("pad", "pad_value", a.pad_value, 0.0) })
end

--- The slices of `input` at the coordinates in the last dim of `index`.
-- Keys: `input`, `index` (int32/int64 [..., k]), `name`; or (input, index).
-- @tparam table a keyword arguments
-- @param[opt] index the key `index`, given positionally
-- @treturn Variable index.shape[:-1] ++ input.shape[k:]
-- @usage local picked = layers.gather_nd{input = table2d, index = coords}
function M.gather_nd(a, index)
  if framework.is_variable(a) then a = { input = a, index = index } end
  a = args("gather_nd", a, nil, nil, "index input name")
  local x = check.variable("gather_nd", "input", a.input)
  local idx = check.variable("gather_nd", "index", a.index)
  local helper = LayerHelper("gather_nd", a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = "gather_nd", inputs = { X = { x }, Index = { idx } }, outputs = { Out = { out } } }
  return out
end

--- The entries of `x` at `index` along dim `dim` (Paddle 2.x's index_select).
-- Keys: `x`, `index` (int32/int64 [n]), `dim` (default 0), `name`; or (x, index, dim).
-- @tparam table a keyword arguments
-- @param[opt] index the key `index`, given positionally
-- @param[opt] dim the key `dim`, given positionally
-- @treturn Variable x with dim `dim` of length n
-- @usage local rows = layers.index_select{x = m, index = ids, dim = 0}
function M.index_select(a, index, dim)
  if framework.is_variable(a) then a = { x = a, index = index, dim = dim } end
  a = args("index_select", a, nil, nil, "dim index name x")
  local x = check.variable("index_select", "x", a.x)
  local idx = check.variable("index_select", "index", a.index)
  local helper = LayerHelper("index_select", a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = "index_select", inputs = { X = { x }, Index = { idx } }, outputs = { Out = { out } },
                    attrs = { dim = check.int("index_select", "dim", a.dim, 0) } }
  return out
end

--- Cumulative sum along `axis`.
-- Keys: `x`, `axis` (default -1), `exclusive` (default false: include the
-- element itself), `reverse` (default false), `name`; or (x, axis).
-- @tparam table a keyword arguments
-- @param[opt] axis the key `axis`, given positionally
-- @treturn Variable like x
-- @usage local c = layers.cumsum{x = v, axis = 0}
function M.cumsum(a, axis)
  a = args("cumsum", a, "x", { axis = axis }, "axis exclusive name reverse x")
  local x = check.variable("cumsum", "x", a.x)
  local helper = LayerHelper("cumsum", a)
  return helper:unary("cumsum", x, { axis = check.int("cumsum", "axis", a.axis, -1),
    exclusive = check.boolean("cumsum", "exclusive", a.exclusive, false),
    reverse = check.boolean("cumsum", "reverse", a.reverse, false) })
end

--- Sorts along `axis` (stably) and returns the values and their indices.
-- Keys: `input`, `axis` (default -1), `descending` (default false), `name`;
-- or (input, axis).
-- @tparam table a keyword arguments
-- @param[opt] axis the key `axis`, given positionally
-- @treturn Variable the sorted values
-- @treturn Variable their int64 indices in input
-- @usage local sorted, idx = layers.argsort{input = scores, descending = true}
function M.argsort(a, axis)
  a = args("argsort", a, "input", { axis = axis }, "axis descending input name")
  local x = check.variable("argsort", "input", a.input)
  local helper = LayerHelper("argsort", a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  local ids = helper:create_variable_for_type_inference("int64", true)
  helper:append_op{ type = "argsort", inputs = { X = { x } }, outputs = { Out = { out }, Indices = { ids } },
                    attrs = { axis = check.int("argsort", "axis", a.axis, -1),
                              descending = check.boolean("argsort", "descending", a.descending, false) } }
  return out, ids
end

return M
