--- oar.layers.conv3d: Fluid 1.8's 3-D convolution layers, conv3d and
-- conv3d_transpose (NCDHW or NDHWC), and deformable_conv. Merged into
-- oar.layers.
--
--   local v = layers.data{name = "v", shape = {3, 8, 8, 8}}
--   local c = layers.conv3d{input = v, num_filters = 4, filter_size = 3, padding = 1, act = "relu"}
--
-- @module oar.layers.conv3d
local LayerHelper = require("oar.layer_helper")
local initializer = require("oar.initializer")
local framework = require("oar.framework")

local check, args = LayerHelper.check, LayerHelper.args
local raise = framework.raise

local M = {}

-- the input: a float32/float64 5-D Variable; its channel count
local function volume(L, v, data_format)
  local x = check.variable(L, "input", v)
  if x.dtype ~= "float32" and x.dtype ~= "float64" then check.fail(L, "input", "a float32 or float64 Variable", x) end
  if #x.shape ~= 5 then
    raise(string.format("%s: 'input' must be 5-D %s, got shape %s", L, data_format, framework.shape_text(x.shape)))
  end
  return x, x.shape[data_format == "NDHWC" and 5 or 2]
end

-- Fluid's padding argument: an int, {d, h, w}, {front, back, top, bottom,
-- left, right}, five {before, after} pairs in the data format's order (the
-- batch and channel pairs 0), or "SAME" / "VALID"; returns paddings and
-- padding_algorithm
local function paddings(L, p, data_format)
  if p == nil then return { 0, 0, 0 }, "EXPLICIT" end
  if type(p) == "string" then
    return { 0, 0, 0 }, check.string(L, "padding", p:upper(), nil, { "SAME", "VALID" })
  end
  if type(p) == "table" and #p == 5 and type(p[1]) == "table" then
    local sp = data_format == "NDHWC" and { 2, 3, 4 } or { 3, 4, 5 }
    local nsp = data_format == "NDHWC" and { 1, 5 } or { 1, 2 }
    for _, i in ipairs(nsp) do
      if p[i][1] ~= 0 or p[i][2] ~= 0 then check.fail(L, "padding", "0 for the batch and channel dims", p) end
    end
    local out = {}
    for _, i in ipairs(sp) do
      local pair = check.int_list(L, "padding", p[i], 2)
      out[#out + 1], out[#out + 2] = pair[1], pair[2]
    end
    return out, "EXPLICIT"
  end
  if type(p) == "table" and #p == 6 then return check.int_list(L, "padding", p, 6), "EXPLICIT" end
  return check.int_list(L, "padding", p, 3, 0), "EXPLICIT"
end

-- the bias along the channel axis, then the activation
local function finish(helper, pre_bias, data_format)
  local pre_act = data_format == "NDHWC" and helper:append_bias_op(pre_bias, 4, 5) or
    helper:append_bias_op(pre_bias, 1, 2)
  return helper:append_activation(pre_act)
end

--- A 3-D convolution over NCDHW (or NDHWC) input, plus bias and activation
-- (Fluid 1.8's conv3d). The filter is initialized from
-- Normal(0, sqrt(2 / (C * kd * kh * kw))) unless param_attr says otherwise.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input [N, C, D, H, W] ([N, D, H, W, C] with data_format "NDHWC")
-- @tparam int a.num_filters output channels
-- @tparam int|{int,int,int} a.filter_size
-- @tparam[opt=1] int|{int,int,int} a.stride
-- @tparam[opt=0] int|table|string a.padding an int, {d, h, w}, {front, back, top, bottom, left, right},
-- five {before, after} pairs, or "SAME" / "VALID"
-- @tparam[opt=1] int|{int,int,int} a.dilation
-- @tparam[opt=1] int a.groups C and num_filters split into groups
-- @tparam[opt] ParamAttr|string a.param_attr the filter's attributes
-- @tparam[opt] ParamAttr|string|false a.bias_attr false: no bias
-- @tparam[opt=true] bool a.use_cudnn accepted, as Fluid's
-- @tparam[opt] string|table a.act activation
-- @tparam[opt] string a.name
-- @tparam[opt="NCDHW"] string a.data_format "NCDHW" or "NDHWC"
-- @treturn Variable [N, num_filters, D', H', W'] (NDHWC: [N, D', H', W', num_filters])
-- @usage local c = layers.conv3d{input = v, num_filters = 4, filter_size = 3, padding = 1}
function M.conv3d(a)
  local L = "conv3d"
  a = args(L, a, "input", nil,
    "act bias_attr data_format dilation filter_size groups input name num_filters padding param_attr stride use_cudnn")
  local data_format = check.string(L, "data_format", a.data_format, "NCDHW", { "NCDHW", "NDHWC" })
  local input, channels = volume(L, a.input, data_format)
  local num_filters = check.positive_int(L, "num_filters", a.num_filters)
  if a.filter_size == nil then check.fail(L, "filter_size", "an integer or a list of 3", nil) end
  local filter_size = check.int_list(L, "filter_size", a.filter_size, 3)
  local groups = a.groups == nil and 1 or check.positive_int(L, "groups", a.groups)
  if channels <= 0 or channels % groups ~= 0 then
    raise(string.format("%s: input channels %d must be known and divisible by groups %d", L, channels, groups))
  end
  local pads, algo = paddings(L, a.padding, data_format)
  local helper = LayerHelper(L, a)
  local fan = filter_size[1] * filter_size[2] * filter_size[3] * channels
  local w = helper:create_parameter(helper:param_attr(),
    { num_filters, channels / groups, filter_size[1], filter_size[2], filter_size[3] }, input.dtype, false,
    initializer.Normal{ loc = 0.0, scale = math.sqrt(2.0 / fan) })
  local pre_bias = helper:create_variable_for_type_inference(input.dtype)
  helper:append_op{ type = "conv3d", inputs = { Input = { input }, Filter = { w } }, outputs = { Output = { pre_bias } },
    attrs = { strides = check.int_list(L, "stride", a.stride, 3, 1), paddings = pads, padding_algorithm = algo,
              dilations = check.int_list(L, "dilation", a.dilation, 3, 1), groups = groups,
              use_cudnn = check.boolean(L, "use_cudnn", a.use_cudnn, true), data_format = data_format } }
  return finish(helper, pre_bias, data_format)
end

--- A 3-D transposed convolution over NCDHW (or NDHWC) input, plus bias and
-- activation (Fluid 1.8's conv3d_transpose). filter_size may be left out
-- when output_size is given: the filter that maps the input onto it.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input [N, C, D, H, W] ([N, D, H, W, C] with data_format "NDHWC")
-- @tparam int a.num_filters output channels
-- @tparam[opt] int|{int,int,int} a.output_size the output's {D, H, W}
-- @tparam[opt] int|{int,int,int} a.filter_size
-- @tparam[opt=0] int|table|string a.padding as conv3d's
-- @tparam[opt=1] int|{int,int,int} a.stride
-- @tparam[opt=1] int|{int,int,int} a.dilation
-- @tparam[opt=1] int a.groups
-- @tparam[opt] ParamAttr|string a.param_attr the filter's attributes
-- @tparam[opt] ParamAttr|string|false a.bias_attr false: no bias
-- @tparam[opt=true] bool a.use_cudnn accepted, as Fluid's
-- @tparam[opt] string|table a.act activation
-- @tparam[opt] string a.name
-- @tparam[opt="NCDHW"] string a.data_format "NCDHW" or "NDHWC"
-- @treturn Variable [N, num_filters, D', H', W'] (NDHWC: [N, D', H', W', num_filters])
-- @usage local up = layers.conv3d_transpose{input = v, num_filters = 2, filter_size = 2, stride = 2}
function M.conv3d_transpose(a)
  local L = "conv3d_transpose"
  a = args(L, a, "input", nil, "act bias_attr data_format dilation filter_size groups input name num_filters " ..
    "output_size padding param_attr stride use_cudnn")
  local data_format = check.string(L, "data_format", a.data_format, "NCDHW", { "NCDHW", "NDHWC" })
  local input, channels = volume(L, a.input, data_format)
  local num_filters = check.positive_int(L, "num_filters", a.num_filters)
  local groups = a.groups == nil and 1 or check.positive_int(L, "groups", a.groups)
  if channels <= 0 or channels % groups ~= 0 or num_filters % groups ~= 0 then
    raise(string.format("%s: input channels %d and num_filters %d must be divisible by groups %d", L, channels,
      num_filters, groups))
  end
  local stride = check.int_list(L, "stride", a.stride, 3, 1)
  local dilation = check.int_list(L, "dilation", a.dilation, 3, 1)
  local pads, algo = paddings(L, a.padding, data_format)
  local output_size = a.output_size ~= nil and check.int_list(L, "output_size", a.output_size, 3) or nil
  local filter_size
  if a.filter_size ~= nil then
    filter_size = check.int_list(L, "filter_size", a.filter_size, 3)
  elseif output_size then
    filter_size = {}
    for i = 1, 3 do
      local in_ = input.shape[(data_format == "NDHWC" and 1 or 2) + i]
      if in_ <= 0 then raise(L .. ": filter_size is needed when the input's spatial dims are unknown") end
      local pad = #pads == 6 and pads[2 * i - 1] + pads[2 * i] or 2 * pads[i]
      filter_size[i] = math.floor((output_size[i] - (in_ - 1) * stride[i] + pad - 1) / dilation[i]) + 1
      if filter_size[i] < 1 then raise(L .. ": output_size is too small for this input and stride") end
    end
  else
    check.fail(L, "filter_size", "an integer or a list of 3 (or give output_size)", nil)
  end
  local helper = LayerHelper(L, a)
  local w = helper:create_parameter(helper:param_attr(),
    { channels, num_filters / groups, filter_size[1], filter_size[2], filter_size[3] }, input.dtype, false)
  local attrs = { strides = stride, paddings = pads, padding_algorithm = algo, dilations = dilation, groups = groups,
                  use_cudnn = check.boolean(L, "use_cudnn", a.use_cudnn, true), data_format = data_format }
  if output_size then attrs.output_size = output_size end
  local pre_bias = helper:create_variable_for_type_inference(input.dtype)
  helper:append_op{ type = L, inputs = { Input = { input }, Filter = { w } }, outputs = { Output = { pre_bias } },
                    attrs = attrs }
  return finish(helper, pre_bias, data_format)
end

--- Deformable convolution (Fluid 1.8's deformable_conv): each filter tap
-- samples the input bilinearly at its regular place shifted by `offset`,
-- weighted by `mask` when modulated (v2, the deformable_conv op; else
-- deformable_conv_v1), plus bias. The filter starts from
-- Normal(0, sqrt(2 / (C * kh * kw))) unless param_attr says otherwise.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input [N, C, H, W], float32 or float64
-- @tparam Variable a.offset [N, 2 * deformable_groups * kh * kw, H', W']
-- @tparam[opt] Variable a.mask [N, deformable_groups * kh * kw, H', W'] (required when modulated)
-- @tparam int a.num_filters output channels
-- @tparam int|{int,int} a.filter_size
-- @tparam[opt=1] int|{int,int} a.stride
-- @tparam[opt=0] int|{int,int} a.padding
-- @tparam[opt=1] int|{int,int} a.dilation
-- @tparam[opt=1] int a.groups
-- @tparam[opt=1] int a.deformable_groups
-- @tparam[opt=64] int a.im2col_step
-- @tparam[opt] ParamAttr|string a.param_attr the filter's attributes
-- @tparam[opt] ParamAttr|string|false a.bias_attr false: no bias
-- @tparam[opt=true] bool a.modulated v2 with mask, or v1 without
-- @tparam[opt] string a.name
-- @treturn Variable [N, num_filters, H', W']
-- @usage local y = layers.deformable_conv{input = x, offset = off, mask = m, num_filters = 8, filter_size = 3, padding = 1}
function M.deformable_conv(a)
  local L = "deformable_conv"
  a = args(L, a, "input", nil, "bias_attr deformable_groups dilation filter_size groups im2col_step input mask " ..
    "modulated name num_filters offset padding param_attr stride")
  local input = check.variable(L, "input", a.input)
  if input.dtype ~= "float32" and input.dtype ~= "float64" then check.fail(L, "input", "a float32 or float64 Variable", input) end
  if #input.shape ~= 4 then
    raise(string.format("%s: 'input' must be 4-D NCHW, got shape %s", L, framework.shape_text(input.shape)))
  end
  local offset = check.variable(L, "offset", a.offset)
  local modulated = check.boolean(L, "modulated", a.modulated, true)
  local mask = modulated and check.variable(L, "mask", a.mask) or nil
  local num_filters = check.positive_int(L, "num_filters", a.num_filters)
  if a.filter_size == nil then check.fail(L, "filter_size", "an integer or a list of 2", nil) end
  local filter_size = check.int_list(L, "filter_size", a.filter_size, 2)
  local groups = a.groups == nil and 1 or check.positive_int(L, "groups", a.groups)
  local channels = input.shape[2]
  if channels <= 0 or channels % groups ~= 0 then
    raise(string.format("%s: input channels %d must be known and divisible by groups %d", L, channels, groups))
  end
  local helper = LayerHelper(L, a)
  local fan = filter_size[1] * filter_size[2] * channels
  local w = helper:create_parameter(helper:param_attr(), { num_filters, channels / groups, filter_size[1], filter_size[2] },
    input.dtype, false, initializer.Normal{ loc = 0.0, scale = math.sqrt(2.0 / fan) })
  local inputs = { Input = { input }, Offset = { offset }, Filter = { w } }
  if modulated then inputs.Mask = { mask } end
  local pre_bias = helper:create_variable_for_type_inference(input.dtype)
  helper:append_op{ type = modulated and "deformable_conv" or "deformable_conv_v1", inputs = inputs,
    outputs = { Output = { pre_bias } },
    attrs = { strides = check.int_list(L, "stride", a.stride, 2, 1), paddings = check.int_list(L, "padding", a.padding, 2, 0),
              dilations = check.int_list(L, "dilation", a.dilation, 2, 1), groups = groups,
              deformable_groups = a.deformable_groups == nil and 1 or check.positive_int(L, "deformable_groups", a.deformable_groups),
              im2col_step = a.im2col_step == nil and 64 or check.positive_int(L, "im2col_step", a.im2col_step) } }
  return helper:append_bias_op(pre_bias, 1, 2)
end

return M
