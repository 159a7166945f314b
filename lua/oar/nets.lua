--- oar.nets: Fluid 1.8's fluid.nets, common blocks of layers:
-- simple_img_conv_pool, img_conv_group, sequence_conv_pool, glu and
-- scaled_dot_product_attention. Each takes a table of Fluid's keyword
-- arguments (unknown keys are refused, naming the closest valid one) and
-- appends ordinary `oar.layers` to the current program.
--
--     local nets = require("oar").nets
--     local h = nets.simple_img_conv_pool{input = img, num_filters = 20, filter_size = 5,
--                                         pool_size = 2, pool_stride = 2, act = "relu"}
-- @module oar.nets
local layers = require("oar.layers")
local LayerHelper = require("oar.layer_helper")
local framework = require("oar.framework")

local argcheck = require("oar.argcheck")

local check = LayerHelper.check
local raise = framework.raise

-- the keyword table (or the input given positionally), its keys checked
-- under the block's own name ("nets.glu: unknown argument ...")
local function args(name, a, primary, extra, known)
  a = LayerHelper.args(name, a, primary, extra)
  return argcheck.keys("nets." .. name, a, known)
end

local M = {}

--- A conv2d followed by a pool2d (the LeNet block of recognize_digits).
-- @tparam table a keyword arguments:
-- @tparam Variable a.input [N, C, H, W]
-- @tparam int a.num_filters
-- @tparam int|{int,int} a.filter_size
-- @tparam int|{int,int} a.pool_size
-- @tparam int|{int,int} a.pool_stride
-- @tparam[opt=0] int|{int,int} a.pool_padding
-- @tparam[opt="max"] string a.pool_type "max" or "avg"
-- @tparam[opt=false] bool a.global_pooling
-- @tparam[opt=1] int|{int,int} a.conv_stride
-- @tparam[opt=0] int|{int,int} a.conv_padding
-- @tparam[opt=1] int|{int,int} a.conv_dilation
-- @tparam[opt=1] int a.conv_groups
-- @tparam[opt] ParamAttr|string|bool a.param_attr the filter's attributes
-- @tparam[opt] ParamAttr|string|bool a.bias_attr the conv bias's attributes; false: none
-- @tparam[opt] string|table a.act the conv's activation
-- @tparam[opt=true] bool a.use_cudnn
-- @treturn Variable the pooled output
-- @usage
-- local c1 = nets.simple_img_conv_pool{input = img, num_filters = 20, filter_size = 5,
--   pool_size = 2, pool_stride = 2, act = "relu"}
function M.simple_img_conv_pool(a)
  a = args("simple_img_conv_pool", a, "input", nil,
    "act bias_attr conv_dilation conv_groups conv_padding conv_stride filter_size global_pooling input "
    .. "num_filters param_attr pool_padding pool_size pool_stride pool_type use_cudnn")
  local who = "simple_img_conv_pool"
  check.positive_int(who, "num_filters", a.num_filters)
  if a.filter_size == nil then check.fail(who, "filter_size", "an integer or a list of 2", nil) end
  if a.pool_size == nil then check.fail(who, "pool_size", "an integer or a list of 2", nil) end
  if a.pool_stride == nil then check.fail(who, "pool_stride", "an integer or a list of 2", nil) end
  local conv = layers.conv2d{ input = check.variable(who, "input", a.input), num_filters = a.num_filters,
    filter_size = a.filter_size, stride = a.conv_stride, padding = a.conv_padding, dilation = a.conv_dilation,
    groups = a.conv_groups, param_attr = a.param_attr, bias_attr = a.bias_attr, act = a.act,
    use_cudnn = a.use_cudnn }
  return layers.pool2d{ input = conv, pool_size = a.pool_size, pool_type = a.pool_type or "max",
    pool_stride = a.pool_stride, pool_padding = a.pool_padding or 0, global_pooling = a.global_pooling }
end

-- a value per conv: a list of n, or one value repeated
local function per_conv(who, key, v, n)
  if type(v) == "table" and getmetatable(v) == nil and v[1] ~= nil then
    if #v ~= n then
      raise(string.format("%s: '%s' has %d values for %d convolutions", who, key, #v, n))
    end
    return v
  end
  local out = {}
  for i = 1, n do out[i] = v end
  return out
end

--- Several 3x3 (by default) convolutions, each optionally followed by batch
-- normalization and dropout, then one pool2d (the VGG block of
-- image_classification). With batch normalization a conv has no activation
-- of its own: `conv_act` goes to the batch_norm.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input [N, C, H, W]
-- @tparam {int,...} a.conv_num_filter the filters of each convolution
-- @tparam int|{int,int} a.pool_size
-- @tparam[opt=1] int|{int,...} a.conv_padding one for all, or one per conv
-- @tparam[opt=3] int|{int,...} a.conv_filter_size one for all, or one per conv
-- @tparam[opt] string a.conv_act
-- @tparam[opt] ParamAttr|{ParamAttr,...} a.param_attr one for all, or one per conv
-- @tparam[opt=false] bool|{bool,...} a.conv_with_batchnorm one for all, or one per conv
-- @tparam[opt=0] number|{number,...} a.conv_batchnorm_drop_rate dropout after each batch_norm (0: none)
-- @tparam[opt=1] int|{int,int} a.pool_stride
-- @tparam[opt="max"] string a.pool_type
-- @tparam[opt=true] bool a.use_cudnn
-- @treturn Variable the pooled output
-- @usage
-- local h = nets.img_conv_group{input = img, conv_num_filter = {64, 64}, pool_size = 2, pool_stride = 2,
--   conv_act = "relu", conv_with_batchnorm = true, conv_batchnorm_drop_rate = {0.3, 0}}
function M.img_conv_group(a)
  a = args("img_conv_group", a, "input", nil,
    "conv_act conv_batchnorm_drop_rate conv_filter_size conv_num_filter conv_padding conv_with_batchnorm input "
    .. "param_attr pool_size pool_stride pool_type use_cudnn")
  local who = "img_conv_group"
  local tmp = check.variable(who, "input", a.input)
  local filters = a.conv_num_filter
  if type(filters) ~= "table" or #filters == 0 then
    check.fail(who, "conv_num_filter", "a list of filter counts", filters)
  end
  local n = #filters
  local padding = per_conv(who, "conv_padding", a.conv_padding == nil and 1 or a.conv_padding, n)
  local fsize = per_conv(who, "conv_filter_size", a.conv_filter_size == nil and 3 or a.conv_filter_size, n)
  local pattr = per_conv(who, "param_attr", a.param_attr, n)
  local with_bn = per_conv(who, "conv_with_batchnorm", a.conv_with_batchnorm == nil and false or a.conv_with_batchnorm, n)
  local drop = per_conv(who, "conv_batchnorm_drop_rate", a.conv_batchnorm_drop_rate or 0.0, n)
  if a.pool_size == nil then check.fail(who, "pool_size", "an integer or a list of 2", nil) end
  for i = 1, n do
    local bn = check.boolean(who, "conv_with_batchnorm[" .. i .. "]", with_bn[i])
    tmp = layers.conv2d{ input = tmp, num_filters = filters[i], filter_size = fsize[i], padding = padding[i],
      param_attr = pattr[i], act = (not bn) and a.conv_act or nil, use_cudnn = a.use_cudnn }
    if bn then
      tmp = layers.batch_norm{ input = tmp, act = a.conv_act }
      local p = check.number(who, "conv_batchnorm_drop_rate[" .. i .. "]", drop[i])
      if math.abs(p) > 1e-5 then tmp = layers.dropout{ x = tmp, dropout_prob = p } end
    end
  end
  return layers.pool2d{ input = tmp, pool_size = a.pool_size, pool_type = a.pool_type or "max",
    pool_stride = a.pool_stride == nil and 1 or a.pool_stride }
end

--- A sequence_conv followed by a sequence_pool (the text convolution of
-- understand_sentiment).
-- @tparam table a keyword arguments:
-- @tparam Variable a.input a LoD tensor [T, D]
-- @tparam int a.num_filters
-- @tparam int a.filter_size rows in the context window
-- @tparam[opt] ParamAttr|string|bool a.param_attr
-- @tparam[opt="sigmoid"] string a.act
-- @tparam[opt="max"] string a.pool_type as sequence_pool's
-- @tparam[opt] ParamAttr|string|bool a.bias_attr
-- @treturn Variable [number of sequences, num_filters]
-- @usage local conv3 = nets.sequence_conv_pool{input = emb, num_filters = 128, filter_size = 3, act = "tanh"}
function M.sequence_conv_pool(a)
  a = args("sequence_conv_pool", a, "input", nil, "act bias_attr filter_size input num_filters param_attr pool_type")
  local who = "sequence_conv_pool"
  check.positive_int(who, "num_filters", a.num_filters)
  if a.filter_size == nil then check.fail(who, "filter_size", "a positive integer", nil) end
  local conv = layers.sequence_conv{ input = check.variable(who, "input", a.input), num_filters = a.num_filters,
    filter_size = a.filter_size, param_attr = a.param_attr, bias_attr = a.bias_attr,
    act = a.act == nil and "sigmoid" or a.act }
  return layers.sequence_pool{ input = conv, pool_type = a.pool_type or "max" }
end

--- The gated linear unit: the input split in two halves a, b along `dim`,
-- then a * sigmoid(b). Also `glu(input, dim)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input its `dim` of even size
-- @tparam[opt=-1] int a.dim
-- @tparam[opt] int dim with a positional input
-- @treturn Variable the input with `dim` halved
-- @usage local g = nets.glu{input = h, dim = 1}
function M.glu(a, dim)
  a = args("glu", a, "input", { dim = dim }, "dim input")
  local x = check.variable("glu", "input", a.input)
  local d = check.int("glu", "dim", a.dim, -1)
  local rank = #x.shape
  local axis = d < 0 and d + rank or d
  if axis < 0 or axis >= rank then
    raise(string.format("glu: 'dim' = %d is out of range for an input of %d dims", d, rank))
  end
  if x.shape[axis + 1] > 0 and x.shape[axis + 1] % 2 ~= 0 then
    raise(string.format("glu: dim %d of 'input' has odd size %d; it must split in two halves", d, x.shape[axis + 1]))
  end
  local halves = layers.split{ input = x, num_or_sections = 2, dim = d }
  return layers.elementwise_mul(halves[1], layers.sigmoid(halves[2]))
end

-- [N, L, H] -> [N, heads, L, H / heads]
local function split_heads(x, heads)
  if heads == 1 then return x end
  local s = x.shape
  return layers.transpose(layers.reshape(x, { 0, 0, heads, s[3] / heads }), { 0, 2, 1, 3 })
end

-- [N, heads, L, d] -> [N, L, heads * d]
local function combine_heads(x)
  if #x.shape == 3 then return x end
  local s = x.shape
  return layers.reshape(layers.transpose(x, { 0, 2, 1, 3 }), { 0, 0, s[2] * s[4] })
end

--- Scaled dot-product attention (Vaswani et al.): softmax(Q K^T / sqrt(d)) V,
-- with d the keys' width per head. With num_heads > 1, queries, keys and
-- values are first projected by an fc each (with a bias, as in Fluid),
-- split into heads along the last dim, attended per head and joined.
-- @tparam table a keyword arguments:
-- @tparam Variable a.queries [N, Lq, Dk]
-- @tparam Variable a.keys [N, Lk, Dk]
-- @tparam Variable a.values [N, Lk, Dv]
-- @tparam[opt=1] int a.num_heads dividing Dk and Dv
-- @tparam[opt=0] number a.dropout_rate dropout on the attention weights (always on, as in Fluid)
-- @treturn Variable [N, Lq, Dv]
-- @usage local ctx = nets.scaled_dot_product_attention{queries = q, keys = k, values = v, num_heads = 2}
function M.scaled_dot_product_attention(a)
  a = args("scaled_dot_product_attention", a, nil, nil, "dropout_rate keys num_heads queries values")
  local who = "scaled_dot_product_attention"
  local q = check.variable(who, "queries", a.queries)
  local k = check.variable(who, "keys", a.keys)
  local v = check.variable(who, "values", a.values)
  for key, x in pairs({ queries = q, keys = k, values = v }) do
    if #x.shape ~= 3 then
      raise(string.format("%s: '%s' must be 3-D [batch, length, width], got shape %s", who, key,
        framework.shape_text(x.shape)))
    end
  end
  if q.shape[3] ~= k.shape[3] then
    raise(string.format("%s: 'queries' and 'keys' must have one width, got %d and %d", who, q.shape[3], k.shape[3]))
  end
  if k.shape[2] ~= v.shape[2] then
    raise(string.format("%s: 'keys' and 'values' must have one length, got %d and %d", who, k.shape[2], v.shape[2]))
  end
  local heads = a.num_heads == nil and 1 or check.positive_int(who, "num_heads", a.num_heads)
  if k.shape[3] % heads ~= 0 or v.shape[3] % heads ~= 0 then
    raise(string.format("%s: 'num_heads' = %d must divide the widths of keys (%d) and values (%d)", who, heads,
      k.shape[3], v.shape[3]))
  end
  local rate = check.number(who, "dropout_rate", a.dropout_rate, 0.0)
  if heads > 1 then
    q = layers.fc{ input = q, size = q.shape[3], num_flatten_dims = 2 }
    k = layers.fc{ input = k, size = k.shape[3], num_flatten_dims = 2 }
    v = layers.fc{ input = v, size = v.shape[3], num_flatten_dims = 2 }
  end
  q, k, v = split_heads(q, heads), split_heads(k, heads), split_heads(v, heads)
  local d = a.keys.shape[3] / heads
  local scores = layers.matmul{ x = layers.scale(q, d ^ -0.5), y = k, transpose_y = true }
  local weights = layers.softmax{ input = scores, axis = -1 }
  if rate ~= 0 then weights = layers.dropout{ x = weights, dropout_prob = rate, is_test = false } end
  return combine_heads(layers.matmul(weights, v))
end

argcheck.strict_module(M, "oar.nets")

return M
