--- oar.layers.rearrange2: more layers that create or rearrange elements:
-- Fluid 1.8's range, linspace, size, scatter, scatter_nd_add,
-- strided_slice, crop_tensor, pixel_shuffle, shuffle_channel and
-- space_to_depth, and Paddle 2.x's arange, cross, diag_embed, meshgrid and
-- index_sample (Fluid 1.8 has their ops but no fluid.layers function).
-- Merged into `oar.layers`.
-- @module oar.layers.rearrange2
local LayerHelper = require("oar.layer_helper")
local framework = require("oar.framework")
local dtypes = require("oar.dtypes")

local check, args = LayerHelper.check, LayerHelper.args
local raise, is_variable = framework.raise, framework.is_variable

local M = {}

-- a one-value Variable of dtype: v itself (cast when its dtype differs) or a
-- fill_constant of the number v
local function scalar_var(layer, key, v, dtype)
  local L = require("oar.layers")
  if is_variable(v) then
    if v.dtype ~= dtype then return L.cast(v, dtype) end
    return v
  end
  if type(v) ~= "number" then check.fail(layer, key, "a number or a Variable", v) end
  return L.fill_constant{ shape = { 1 }, dtype = dtype, value = v }
end

local function one_out(layer, a, op_type, inputs, attrs, dtype)
  local helper = LayerHelper(layer, a)
  local out = helper:create_variable_for_type_inference(dtype)
  helper:append_op{ type = op_type, inputs = inputs, outputs = { Out = { out } }, attrs = attrs }
  return out
end

local function range_op(layer, a, start, stop, step, dtype)
  local s = scalar_var(layer, "start", start, dtype)
  local e = scalar_var(layer, "end", stop, dtype)
  local st = scalar_var(layer, "step", step, dtype)
  return one_out(layer, a, "range", { Start = { s }, End = { e }, Step = { st } }, nil, dtype)
end

--- The values start, start + step, ... short of end (Fluid's range). Also
-- `range(start, end, step, dtype)`.
-- @tparam table a keyword arguments:
-- @tparam number|Variable a.start the first value
-- @tparam number|Variable a.end the bound, not reached
-- @tparam number|Variable a.step nonzero, with end - start's sign
-- @tparam string a.dtype float32, float64, int32 or int64
-- @param[opt] stop with a positional start
-- @param[opt] step with a positional start
-- @param[opt] dtype with a positional start
-- @treturn Variable 1-D of dtype (its length known at run time)
-- @usage local r = layers.range(0, 10, 2, "int64")   -- 0 2 4 6 8
function M.range(a, stop, step, dtype)
  if type(a) ~= "table" or is_variable(a) then a = { start = a, ["end"] = stop, step = step, dtype = dtype } end
  a = args("range", a, nil, nil, "dtype end start step")
  local dt = check.dtype("range", "dtype", a.dtype)
  return range_op("range", a, a.start, a["end"], a.step, dt)
end

--- Paddle 2.x's paddle.arange (the range op): [start, end) by step; with
-- end not given, [0, start). Also `arange(start, end, step, dtype)`.
-- @tparam table a keyword arguments:
-- @tparam[opt=0] number|Variable a.start
-- @tparam[opt] number|Variable a.end
-- @tparam[opt=1] number|Variable a.step
-- @tparam[opt="int64"] string a.dtype
-- @tparam[opt] string a.name
-- @param[opt] stop with a positional start
-- @param[opt] step with a positional start
-- @param[opt] dtype with a positional start
-- @treturn Variable 1-D of dtype
-- @usage local r = layers.arange(5)   -- 0 1 2 3 4
function M.arange(a, stop, step, dtype)
  if type(a) ~= "table" or is_variable(a) then a = { start = a, ["end"] = stop, step = step, dtype = dtype } end
  a = args("arange", a, nil, nil, "dtype end name start step")
  local start, e = a.start, a["end"]
  if e == nil then start, e = 0, start end
  if e == nil then raise("arange: 'end' (or 'start' alone) is required") end
  local dt = check.dtype("arange", "dtype", a.dtype, "int64")
  return range_op("arange", a, start == nil and 0 or start, e, a.step == nil and 1 or a.step, dt)
end

--- num values evenly spaced from start to stop, both included (Fluid's
-- linspace). Also `linspace(start, stop, num, dtype)`.
-- @tparam table a keyword arguments:
-- @tparam number|Variable a.start
-- @tparam number|Variable a.stop
-- @tparam int|Variable a.num positive (a Variable: int32 [1])
-- @tparam[opt="float32"] string a.dtype float32, float64, int32 or int64
-- @param[opt] stop with a positional start
-- @param[opt] num with a positional start
-- @param[opt] dtype with a positional start
-- @treturn Variable [num] of dtype
-- @usage local v = layers.linspace(0, 1, 5)   -- 0 .25 .5 .75 1
function M.linspace(a, stop, num, dtype)
  if type(a) ~= "table" or is_variable(a) then a = { start = a, stop = stop, num = num, dtype = dtype } end
  a = args("linspace", a, nil, nil, "dtype num start stop")
  local dt = check.dtype("linspace", "dtype", a.dtype, "float32")
  if type(a.num) == "number" and (a.num % 1 ~= 0 or a.num < 1) then
    check.fail("linspace", "num", "a positive integer", a.num)
  end
  local s = scalar_var("linspace", "start", a.start, dt)
  local e = scalar_var("linspace", "stop", a.stop, dt)
  local n = scalar_var("linspace", "num", a.num, "int32")
  return one_out("linspace", a, "linspace", { Start = { s }, Stop = { e }, Num = { n } },
                 { dtype = dtypes.enum(dt) }, dt)
end

--- The number of elements of input, an int64 [1] (Fluid's size). Also `size(input)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input
-- @treturn Variable int64 [1]
-- @usage local n = layers.size(x)
function M.size(a)
  a = args("size", a, "input", nil, "input")
  local x = check.variable("size", "input", a.input)
  return one_out("size", a, "size", { Input = { x } }, nil, "int64")
end

--- The cross product of x and y along `axis` (Paddle 2.x's paddle.cross;
-- the op's attribute is `dim`). Also `cross(x, y)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x
-- @tparam Variable a.y x's shape
-- @tparam[opt] int a.axis a dim of size 3 (default: the first of size 3)
-- @tparam[opt] string a.name
-- @param[opt] y with a positional x
-- @treturn Variable x's shape
-- @usage local c = layers.cross{x = a, y = b, axis = 1}
function M.cross(a, y)
  a = args("cross", a, "x", { y = y }, "axis name x y")
  local x = check.variable("cross", "x", a.x)
  local yv = check.variable("cross", "y", a.y)
  local dim = a.axis == nil and 9 or check.int("cross", "axis", a.axis)
  return one_out("cross", a, "cross", { X = { x }, Y = { yv } }, { dim = dim }, x.dtype)
end

--- A tensor with input's last dim on the diagonal (at offset) of the
-- planes of dims dim1 and dim2 (Paddle 2.x's F.diag_embed). Also `diag_embed(input)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input at least 1-D
-- @tparam[opt=0] int a.offset > 0 above the main diagonal, < 0 below
-- @tparam[opt=-2] int a.dim1
-- @tparam[opt=-1] int a.dim2
-- @treturn Variable one dim more than input
-- @usage local m = layers.diag_embed(v)   -- [n] -> [n, n]
function M.diag_embed(a)
  a = args("diag_embed", a, "input", nil, "dim1 dim2 input offset")
  local x = check.variable("diag_embed", "input", a.input)
  local attrs = { offset = check.int("diag_embed", "offset", a.offset, 0),
                  dim1 = check.int("diag_embed", "dim1", a.dim1, -2), dim2 = check.int("diag_embed", "dim2", a.dim2, -1) }
  local r = #x.shape + 1
  local d1 = attrs.dim1 < 0 and attrs.dim1 + r or attrs.dim1
  local d2 = attrs.dim2 < 0 and attrs.dim2 + r or attrs.dim2
  if d1 < 0 or d1 >= r or d2 < 0 or d2 >= r or d1 == d2 then
    raise(string.format("diag_embed: 'dim1' = %d and 'dim2' = %d must be distinct dims of the %d-D result",
                        attrs.dim1, attrs.dim2, r))
  end
  return one_out("diag_embed", a, "diag_embed", { Input = { x } }, attrs, x.dtype)
end

--- The grids of k 1-D Variables (Paddle 2.x's paddle.meshgrid): k
-- Variables [n1, ..., nk], the i-th varying along dim i. Also
-- `meshgrid({x1, x2})` or `meshgrid(x1, x2, ...)`.
-- @tparam table a keyword arguments:
-- @tparam {Variable,...} a.input 1-D Variables of one dtype
-- @tparam[opt] string a.name
-- @param ... more Variables, with a positional first one
-- @treturn {Variable,...} one grid per input
-- @usage local gx, gy = table.unpack(layers.meshgrid(x, y))
function M.meshgrid(a, ...)
  if is_variable(a) then a = { input = { a, ... } }
  elseif type(a) == "table" and is_variable(a[1]) then a = { input = a } end
  a = args("meshgrid", a, nil, nil, "input name")
  local xs = check.variables("meshgrid", "input", a.input)
  for i, x in ipairs(xs) do
    if #x.shape ~= 1 then raise(string.format("meshgrid: 'input[%d]' has %d dims; it must be 1-D", i, #x.shape)) end
    if x.dtype ~= xs[1].dtype then raise("meshgrid: the inputs must have one dtype") end
  end
  local helper = LayerHelper("meshgrid", a)
  local outs = {}
  for i = 1, #xs do outs[i] = helper:create_variable_for_type_inference(xs[1].dtype) end
  helper:append_op{ type = "meshgrid", inputs = { X = xs }, outputs = { Out = outs } }
  return outs
end

--- Per row of x, the elements index names (Paddle 2.x's
-- paddle.index_sample): out[b, k] = x[b, index[b, k]]. Also `index_sample(x, index)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x [batch, n]
-- @tparam Variable a.index [batch, k], int32 or int64
-- @param[opt] index with a positional x
-- @treturn Variable index's shape, x's dtype
-- @usage local top = layers.index_sample(scores, ids)
function M.index_sample(a, index)
  a = args("index_sample", a, "x", { index = index }, "index x")
  local x = check.variable("index_sample", "x", a.x)
  local ix = check.variable("index_sample", "index", a.index)
  if #x.shape ~= 2 or #ix.shape ~= 2 then raise("index_sample: 'x' and 'index' must be 2-D") end
  return one_out("index_sample", a, "index_sample", { X = { x }, Index = { ix } }, nil, x.dtype)
end

--- input with rows index[i] replaced by (overwrite) or the sum of
-- updates[i] (Fluid's scatter). Also `scatter(input, index, updates)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input
-- @tparam Variable a.index 1-D int32 or int64 row numbers
-- @tparam Variable a.updates [len(index), input.shape[2:]...]
-- @tparam[opt=true] bool a.overwrite false: the named rows are zeroed, then updates added
-- @tparam[opt] string a.name
-- @param[opt] index with a positional input
-- @param[opt] updates with a positional input
-- @treturn Variable input's shape
-- @usage local y = layers.scatter{input = x, index = ids, updates = u, overwrite = false}
function M.scatter(a, index, updates)
  a = args("scatter", a, "input", { index = index, updates = updates }, "index input name overwrite updates")
  local x = check.variable("scatter", "input", a.input)
  local ix = check.variable("scatter", "index", a.index)
  local u = check.variable("scatter", "updates", a.updates)
  return one_out("scatter", a, "scatter", { X = { x }, Ids = { ix }, Updates = { u } },
                 { overwrite = check.boolean("scatter", "overwrite", a.overwrite, true) }, x.dtype)
end

--- ref with updates added at the index tuples of index (Fluid's
-- scatter_nd_add). Also `scatter_nd_add(ref, index, updates)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.ref
-- @tparam Variable a.index [..., k], int32 or int64
-- @tparam Variable a.updates index.shape[:-1] + ref.shape[k:]
-- @tparam[opt] string a.name
-- @param[opt] index with a positional ref
-- @param[opt] updates with a positional ref
-- @treturn Variable ref's shape
-- @usage local y = layers.scatter_nd_add(x, idx, upd)
function M.scatter_nd_add(a, index, updates)
  a = args("scatter_nd_add", a, "ref", { index = index, updates = updates }, "index name ref updates")
  local x = check.variable("scatter_nd_add", "ref", a.ref)
  local ix = check.variable("scatter_nd_add", "index", a.index)
  local u = check.variable("scatter_nd_add", "updates", a.updates)
  return one_out("scatter_nd_add", a, "scatter_nd_add", { X = { x }, Index = { ix }, Updates = { u } }, nil, x.dtype)
end

-- an int list argument: a list of ints (the attr), a list holding Variables
-- (a TensorList input, numbers made fill_constants) or a 1-D Variable (a
-- Tensor input); returns attr values, tensor, list
local function ints_or_vars(layer, key, v, n)
  if is_variable(v) then return nil, v, nil end
  if type(v) ~= "table" or #v ~= n then check.fail(layer, key, "a list of " .. n .. " integers or a Variable", v) end
  local any = false
  for i = 1, n do
    if is_variable(v[i]) then any = true
    elseif type(v[i]) ~= "number" or v[i] % 1 ~= 0 then check.fail(layer, key .. "[" .. i .. "]", "an integer or a Variable", v[i]) end
  end
  if not any then return v, nil, nil end
  local L, list, attr = require("oar.layers"), {}, {}
  for i = 1, n do
    list[i] = is_variable(v[i]) and v[i] or L.fill_constant{ shape = { 1 }, dtype = "int32", value = v[i] }
    attr[i] = is_variable(v[i]) and -1 or v[i]
  end
  return attr, nil, list
end

--- input[starts:ends:strides] along each of axes, Python's slice rules
-- (Fluid's strided_slice). Also `strided_slice(input, axes, starts, ends, strides)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input
-- @tparam {int,...} a.axes
-- @tparam {int,...}|Variable a.starts ints, Variables among them, or one int Variable
-- @tparam {int,...}|Variable a.ends
-- @tparam {int,...}|Variable a.strides nonzero
-- @param[opt] axes with a positional input
-- @param[opt] starts with a positional input
-- @param[opt] ends with a positional input
-- @param[opt] strides with a positional input
-- @treturn Variable the slice
-- @usage local y = layers.strided_slice{input = x, axes = {1}, starts = {-1}, ends = {-1000}, strides = {-1}}
function M.strided_slice(a, axes, starts, ends, strides)
  a = args("strided_slice", a, "input", { axes = axes, starts = starts, ends = ends, strides = strides },
           "axes ends input starts strides")
  local x = check.variable("strided_slice", "input", a.input)
  if type(a.axes) ~= "table" or #a.axes == 0 then check.fail("strided_slice", "axes", "a list of integers", a.axes) end
  local n = #a.axes
  local axs = check.int_list("strided_slice", "axes", a.axes, n)
  for i, d in ipairs(axs) do
    if d < -#x.shape or d >= #x.shape then
      raise(string.format("strided_slice: 'axes[%d]' = %d is out of range for an input of %d dims", i, d, #x.shape))
    end
  end
  local inputs, attrs, flags = { Input = { x } }, { axes = axs }, {}
  for i = 1, n do flags[i] = 1 end
  for _, kv in ipairs({ { "starts", "Starts" }, { "ends", "Ends" }, { "strides", "Strides" } }) do
    local key, slot = kv[1], kv[2]
    local at, t, list = ints_or_vars("strided_slice", key, a[key], n)
    if key == "strides" and at then
      for i, s in ipairs(at) do if s == 0 then check.fail("strided_slice", "strides[" .. i .. "]", "nonzero", s) end end
    end
    if t then inputs[slot .. "Tensor"] = { t } end
    if list then inputs[slot .. "TensorList"] = list end
    if t or list then for i = 1, n do flags[i] = -1 end end
    if at then attrs[key] = at else attrs[key] = {} end
  end
  attrs.infer_flags = flags
  return one_out("strided_slice", a, "strided_slice", inputs, attrs, x.dtype)
end

--- The block of x of `shape` at `offsets` (Fluid's crop_tensor). Also
-- `crop_tensor(x, shape, offsets)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x 1-D to 6-D
-- @tparam[opt] {int,...}|Variable a.shape x's rank values (-1: to the end of the dim); default x's shape
-- @tparam[opt] {int,...}|Variable a.offsets x's rank values; default zeros
-- @tparam[opt] string a.name
-- @param[opt] shape with a positional x
-- @param[opt] offsets with a positional x
-- @treturn Variable the crop
-- @usage local c = layers.crop_tensor{x = img, shape = {-1, 3, 32, 32}, offsets = {0, 0, 4, 4}}
function M.crop_tensor(a, shape, offsets)
  a = args("crop_tensor", a, "x", { shape = shape, offsets = offsets }, "name offsets shape x")
  local x = check.variable("crop_tensor", "x", a.x)
  local r = #x.shape
  if r < 1 or r > 6 then raise("crop_tensor: 'x' has " .. r .. " dims; it must have 1 to 6") end
  local inputs, attrs = { X = { x } }, {}
  local sh = a.shape == nil and x.shape or a.shape
  local at, t, list = ints_or_vars("crop_tensor", "shape", sh, r)
  if t then inputs.Shape = { t } end
  if list then inputs.ShapeTensor = list end
  attrs.shape = at or {}
  local off = a.offsets
  if off == nil then off = {}; for i = 1, r do off[i] = 0 end end
  at, t, list = ints_or_vars("crop_tensor", "offsets", off, r)
  if t then inputs.Offsets = { t } end
  if list then inputs.OffsetsTensor = list end
  attrs.offsets = (t or list) and {} or at
  return one_out("crop_tensor", a, "crop_tensor", inputs, attrs, x.dtype)
end

--- Moves channels into space: [N, C, H, W] to [N, C/r^2, H*r, W*r]
-- (Fluid's pixel_shuffle). Also `pixel_shuffle(x, upscale_factor)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x [N, C, H, W], C a multiple of r^2
-- @tparam int a.upscale_factor r
-- @param[opt] upscale_factor with a positional x
-- @treturn Variable [N, C/r^2, H*r, W*r]
-- @usage local y = layers.pixel_shuffle(x, 3)
function M.pixel_shuffle(a, upscale_factor)
  a = args("pixel_shuffle", a, "x", { upscale_factor = upscale_factor }, "upscale_factor x")
  local x = check.variable("pixel_shuffle", "x", a.x)
  local r = check.positive_int("pixel_shuffle", "upscale_factor", a.upscale_factor)
  if #x.shape ~= 4 then raise("pixel_shuffle: 'x' must be 4-D [N, C, H, W]") end
  if x.shape[2] > 0 and x.shape[2] % (r * r) ~= 0 then
    raise(string.format("pixel_shuffle: x's %d channels are not a multiple of upscale_factor^2 = %d", x.shape[2], r * r))
  end
  return one_out("pixel_shuffle", a, "pixel_shuffle", { X = { x } }, { upscale_factor = r }, x.dtype)
end

--- Interleaves x's channels in `group` groups (Fluid's shuffle_channel,
-- ShuffleNet's shuffle). Also `shuffle_channel(x, group)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x [N, C, H, W], C a multiple of group
-- @tparam int a.group
-- @tparam[opt] string a.name
-- @param[opt] group with a positional x
-- @treturn Variable x's shape
-- @usage local y = layers.shuffle_channel{x = x, group = 4}
function M.shuffle_channel(a, group)
  a = args("shuffle_channel", a, "x", { group = group }, "group name x")
  local x = check.variable("shuffle_channel", "x", a.x)
  local g = check.positive_int("shuffle_channel", "group", a.group)
  if #x.shape < 2 then raise("shuffle_channel: 'x' must be [N, C, ...]") end
  return one_out("shuffle_channel", a, "shuffle_channel", { X = { x } }, { group = g }, x.dtype)
end

--- Moves blocksize x blocksize blocks into channels: [B, C, H, W] to
-- [B, C*b^2, H/b, W/b] (Fluid's space_to_depth). Also `space_to_depth(x, blocksize)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x [B, C, H, W]: C a multiple of b^2, H and W of b
-- @tparam int a.blocksize b, at least 2
-- @tparam[opt] string a.name
-- @param[opt] blocksize with a positional x
-- @treturn Variable [B, C*b^2, H/b, W/b]
-- @usage local y = layers.space_to_depth(x, 2)
function M.space_to_depth(a, blocksize)
  a = args("space_to_depth", a, "x", { blocksize = blocksize }, "blocksize name x")
  local x = check.variable("space_to_depth", "x", a.x)
  local b = check.positive_int("space_to_depth", "blocksize", a.blocksize)
  if b < 2 then check.fail("space_to_depth", "blocksize", "an integer >= 2", b) end
  if #x.shape ~= 4 then raise("space_to_depth: 'x' must be 4-D [B, C, H, W]") end
  return one_out("space_to_depth", a, "space_to_depth", { X = { x } }, { blocksize = b }, x.dtype)
end

return M
