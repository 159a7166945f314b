--- oar.layers.nn_last: the last layers of Fluid 1.8's nn.py: lod_append,
-- image_resize_short, scatter_nd and rank (composed from existing ops as
-- Fluid composes them), resize_linear (op linear_interp), similarity_focus
-- and fsp_matrix (op fsp). Merged into `oar.layers`.
--
--   local y = layers.image_resize_short{input = img, out_short_len = 32}
--
-- @module oar.layers.nn_last
local LayerHelper = require("oar.layer_helper")
local framework = require("oar.framework")

local check, args = LayerHelper.check, LayerHelper.args
local raise, is_variable = framework.raise, framework.is_variable

local M = {}

--- Appends one LoD level below x's levels (Fluid 1.8's lod_append: lod_reset
-- with append). Also positional: `lod_append(x, level)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x the tensor
-- @tparam {int,...}|Variable a.level the new level's offsets, like `{0, 2, 3}`
-- (non-decreasing from 0), or a Variable whose LoD (or int values) gives them
-- @tparam[opt] string a.name
-- @param[opt] level the key `level`, given positionally
-- @treturn Variable x's data with the new level appended to its LoD
-- @raise when level is neither a list nor a Variable
-- @usage local y = layers.lod_append{x = x, level = {0, 1, 3}}
function M.lod_append(a, level)
  a = args("lod_append", a, "x", { level = level }, "level name x")
  if a.x == nil then raise("lod_append: 'x' is required") end
  check.variable("lod_append", "x", a.x)
  local lv = a.level
  if is_variable(lv) then
    return require("oar.layers").lod_reset{ x = a.x, y = lv, append = true, name = a.name }
  end
  if type(lv) ~= "table" then check.fail("lod_append", "level", "a list of offsets or a Variable", lv) end
  return require("oar.layers").lod_reset{ x = a.x, target_lod = lv, append = true, name = a.name }
end

--- Resizes NCHW images so that the short side is out_short_len, keeping the
-- aspect ratio (Fluid 1.8's image_resize_short): the long side becomes
-- floor(long * out_short_len / short + 0.5). Also positional:
-- `image_resize_short(input, out_short_len, resample)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input [N, C, H, W] with H and W known
-- @tparam int a.out_short_len the short side's new length
-- @tparam[opt="BILINEAR"] string a.resample "BILINEAR", "NEAREST" or "BICUBIC"
-- @param[opt] out_short_len the key `out_short_len`, given positionally
-- @param[opt] resample the key `resample`, given positionally
-- @treturn Variable the resized images
-- @raise when the input is not 4-D or its H or W is unknown
-- @usage local y = layers.image_resize_short{input = img, out_short_len = 16}
function M.image_resize_short(a, out_short_len, resample)
  local L = "image_resize_short"
  a = args(L, a, "input", { out_short_len = out_short_len, resample = resample }, "input out_short_len resample")
  local input = check.variable(L, "input", a.input)
  local s = input.shape
  if #s ~= 4 then
    raise(string.format("%s: 'input' must be 4-D [N, C, H, W], got shape %s", L, framework.shape_text(s)))
  end
  if s[3] <= 0 or s[4] <= 0 then
    raise(string.format("%s: the height and width of 'input' must be known, got shape %s", L, framework.shape_text(s)))
  end
  local n = check.int(L, "out_short_len", a.out_short_len)
  if n <= 0 then check.fail(L, "out_short_len", "a positive integer", a.out_short_len) end
  local hw = { s[3], s[4] }
  local short = hw[1] <= hw[2] and 1 or 2   -- Python's index(min): the first on a tie
  local long = 3 - short
  local out = {}
  out[short] = n
  out[long] = math.floor(hw[long] * (n / hw[short]) + 0.5)
  return require("oar.layers").image_resize{ input = input, out_shape = out,
                                             resample = a.resample or "BILINEAR" }
end

--- Scatters updates into a zero tensor of the given shape (Fluid 1.8's
-- scatter_nd: scatter_nd_add onto zeros); repeated indices add up. Also
-- positional: `scatter_nd(index, updates, shape)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.index int32 or int64 [..., k], each row a prefix index into shape
-- @tparam Variable a.updates index.shape[:-1] .. shape[k:], the values
-- @tparam {int,...} a.shape the output's shape
-- @tparam[opt] string a.name
-- @param[opt] updates the key `updates`, given positionally
-- @param[opt] shape the key `shape`, given positionally
-- @treturn Variable shape, updates' dtype
-- @usage local y = layers.scatter_nd{index = idx, updates = upd, shape = {3, 5}}
function M.scatter_nd(a, updates, shape)
  local L = "scatter_nd"
  a = args(L, a, "index", { updates = updates, shape = shape }, "index name shape updates")
  local index = check.variable(L, "index", a.index)
  local upd = check.variable(L, "updates", a.updates)
  if a.shape == nil then check.fail(L, "shape", "a list of integers", nil) end
  local sh = check.ints(L, "shape", a.shape)
  local layers = require("oar.layers")
  local zeros = layers.zeros(sh, upd.dtype)
  return layers.scatter_nd_add{ ref = zeros, index = index, updates = upd, name = a.name }
end

--- The rank (number of dims) of a Variable as an int32 constant (Fluid 1.8's
-- rank: an assign of len(input.shape)). Fluid's constant is 0-D; oar's is [1].
-- @tparam Variable|table a the Variable, or `{input = v}`
-- @treturn Variable int32 [1]
-- @usage local r = layers.rank(x)   -- 3 for a [2, 3, 4] x
function M.rank(a)
  a = args("rank", a, "input", nil, "input")
  local input = check.variable("rank", "input", a.input)
  local t = require("oar.tensor")({ #input.shape }, "int32")
  return require("oar.layers").assign(t)
end

--- Resizes the W of 3-D rows by linear interpolation (Fluid 1.8's
-- resize_linear, op linear_interp). Also positional:
-- `resize_linear(input, out_shape, scale)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input [N, C, W] ([N, W, C] with NWC), float32 or float64
-- @tparam[opt] {int}|Variable a.out_shape the output's {W} (or an int32 [1] Variable)
-- @tparam[opt] number|Variable a.scale output = input * scale (when out_shape is not given)
-- @tparam[opt] Variable a.actual_shape an int32 [1] Variable that overrides out_shape
-- @tparam[opt=true] bool a.align_corners align the end points of input and output
-- @tparam[opt=1] int a.align_mode without align_corners: 0 samples at half-cell centres, 1 at in * ratio
-- @tparam[opt="NCW"] string a.data_format "NCW" or "NWC"
-- @tparam[opt] string a.name
-- @param[opt] out_shape the key `out_shape`, given positionally
-- @param[opt] scale the key `scale`, given positionally
-- @treturn Variable [N, C, out_w]
-- @usage local y = layers.resize_linear{input = x, out_shape = {16}}
function M.resize_linear(a, out_shape, scale)
  local L = "resize_linear"
  a = args(L, a, "input", { out_shape = out_shape, scale = scale },
    "actual_shape align_corners align_mode data_format input name out_shape scale")
  a.data_format = check.string(L, "data_format", a.data_format, "NCW", { "NCW", "NWC" })
  return require("oar.layers.resize_nd")(L, a, "linear", 1)
end

-- the layer's input, float32 or float64 of the given rank
local function float_input(layer, key, v, rank)
  local x = check.variable(layer, key, v)
  if x.dtype ~= "float32" and x.dtype ~= "float64" then
    check.fail(layer, key, "a float32 or float64 Variable", x)
  end
  if rank and #x.shape ~= rank then
    raise(string.format("%s: '%s' must be %d-D, got shape %s", layer, key, rank, framework.shape_text(x.shape)))
  end
  return x
end

--- A 0/1 mask of the most similar cells (Fluid 1.8's similarity_focus, no
-- gradient): for each index i of indexes, the slice input[n, i] along axis
-- is walked from its largest value down, taking a cell when its row and
-- column have none yet (min(rows, cols) cells); a taken cell is 1 across the
-- whole axis. The masks of the indexes are OR-ed. Also positional:
-- `similarity_focus(input, axis, indexes)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input [N, A, B, C], float32 or float64
-- @tparam int a.axis 1, 2 or 3: the dim the indexes select along
-- @tparam {int,...} a.indexes the slices to focus on
-- @tparam[opt] string a.name
-- @param[opt] axis the key `axis`, given positionally
-- @param[opt] indexes the key `indexes`, given positionally
-- @treturn Variable input's shape and dtype
-- @usage local m = layers.similarity_focus{input = x, axis = 1, indexes = {0}}
function M.similarity_focus(a, axis, indexes)
  local L = "similarity_focus"
  a = args(L, a, "input", { axis = axis, indexes = indexes }, "axis indexes input name")
  local input = float_input(L, "input", a.input, 4)
  if type(a.axis) ~= "number" or (a.axis ~= 1 and a.axis ~= 2 and a.axis ~= 3) then
    check.fail(L, "axis", "1, 2 or 3", a.axis)
  end
  if type(a.indexes) ~= "table" or is_variable(a.indexes) or #a.indexes == 0 then
    check.fail(L, "indexes", "a non-empty list of integers", a.indexes)
  end
  local idx = check.ints(L, "indexes", a.indexes)
  local n = input.shape[a.axis + 1]
  for i, v in ipairs(idx) do
    if v < 0 or (n > 0 and v >= n) then
      raise(string.format("%s: 'indexes'[%d] = %d must be in [0, %d) (dim %d of 'input')", L, i, v, n, a.axis))
    end
  end
  local helper = LayerHelper(L, a)
  local out = helper:create_variable_for_type_inference(input.dtype)
  helper:append_op{ type = L, inputs = { X = { input } }, outputs = { Out = { out } },
                    attrs = { axis = a.axis, indexes = idx } }
  return out
end

--- The FSP matrix of two feature maps (Fluid 1.8's fsp_matrix, op fsp):
-- out[n, i, j] = mean over h, w of x[n, i, h, w] y[n, j, h, w]. Also
-- positional: `fsp_matrix(x, y)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x [N, C1, H, W], float32 or float64
-- @tparam Variable a.y [N, C2, H, W], x's dtype
-- @tparam[opt] string a.name
-- @param[opt] y the key `y`, given positionally
-- @treturn Variable [N, C1, C2]
-- @usage local m = layers.fsp_matrix(feat_a, feat_b)
function M.fsp_matrix(a, y)
  local L = "fsp_matrix"
  a = args(L, a, "x", { y = y }, "name x y")
  local x = float_input(L, "x", a.x, 4)
  local yv = float_input(L, "y", a.y, 4)
  if yv.dtype ~= x.dtype then check.fail(L, "y", "a " .. x.dtype .. " Variable (x's dtype)", yv) end
  local helper = LayerHelper(L, a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = "fsp", inputs = { X = { x }, Y = { yv } }, outputs = { Out = { out } } }
  return out
end

return M
