--- oar.layers.vision_more: more of Fluid 1.8's image layers:
-- adaptive_pool2d and adaptive_pool3d (with max_pool{2,3}d_with_index's
-- Mask when require_index is set). Merged into oar.layers.
--
--   local p, mask = layers.adaptive_pool2d{input = img, pool_size = 3, require_index = true}
--
-- @module oar.layers.vision_more
local LayerHelper = require("oar.layer_helper")
local framework = require("oar.framework")

local check, args = LayerHelper.check, LayerHelper.args
local raise = framework.raise

local M = {}

local float_input = check.float_variable

local function adaptive_pool(L, a, nd)
  a = args(L, a, "input", nil, "input name pool_size pool_type require_index")
  local input = float_input(L, "input", a.input, nd + 2)
  local pool_type = check.string(L, "pool_type", a.pool_type, "max", { "max", "avg" })
  local require_index = check.boolean(L, "require_index", a.require_index, false)
  if require_index and pool_type ~= "max" then
    raise(L .. ": require_index is only for pool_type \"max\", got \"" .. pool_type .. "\"")
  end
  if a.pool_size == nil then check.fail(L, "pool_size", "an integer or a list of " .. nd, nil) end
  local pool_size = check.int_list(L, "pool_size", a.pool_size, nd)
  for i = 1, nd do
    if pool_size[i] <= 0 then check.fail(L, "pool_size", "positive", a.pool_size) end
  end
  local helper = LayerHelper(L, a)
  local out = helper:create_variable_for_type_inference(input.dtype)
  local outputs = { Out = { out } }
  local mask
  if require_index then
    mask = helper:create_variable_for_type_inference("int32")
    outputs.Mask = { mask }
  end
  local op_type = require_index and ("max_pool" .. nd .. "d_with_index") or ("pool" .. nd .. "d")
  helper:append_op{ type = op_type, inputs = { X = { input } }, outputs = outputs,
                    attrs = { pooling_type = pool_type, ksize = pool_size, adaptive = true } }
  if require_index then return out, mask end
  return out
end

--- Adaptive 2-D pooling (Fluid 1.8's adaptive_pool2d): the output is
-- pool_size; output cell i pools input rows [floor(i H / out), ceil((i + 1) H / out)).
-- @tparam table a keyword arguments:
-- @tparam Variable a.input [N, C, H, W], float32 or float64
-- @tparam int|{int,int} a.pool_size the output's {height, width}
-- @tparam[opt="max"] string a.pool_type "max" or "avg"
-- @tparam[opt=false] bool a.require_index also return the int32 Mask of each
-- maximum's flat index h W + w (max only; max_pool2d_with_index)
-- @tparam[opt] string a.name
-- @treturn Variable [N, C, pool_size...]
-- @treturn[opt] Variable the Mask, with require_index
-- @usage local p = layers.adaptive_pool2d{input = img, pool_size = {3, 3}, pool_type = "avg"}
function M.adaptive_pool2d(a) return adaptive_pool("adaptive_pool2d", a, 2) end

--- Adaptive 3-D pooling (Fluid 1.8's adaptive_pool3d), as adaptive_pool2d
-- over [N, C, D, H, W].
-- @tparam table a keyword arguments:
-- @tparam Variable a.input [N, C, D, H, W], float32 or float64
-- @tparam int|{int,int,int} a.pool_size the output's {depth, height, width}
-- @tparam[opt="max"] string a.pool_type "max" or "avg"
-- @tparam[opt=false] bool a.require_index also return the int32 Mask, the flat
-- index (d H + h) W + w of each maximum (max only; max_pool3d_with_index)
-- @tparam[opt] string a.name
-- @treturn Variable [N, C, pool_size...]
-- @treturn[opt] Variable the Mask, with require_index
-- @usage local p, m = layers.adaptive_pool3d{input = v, pool_size = 2, require_index = true}
function M.adaptive_pool3d(a) return adaptive_pool("adaptive_pool3d", a, 3) end

--- The sampling grid of 2-D affine maps (Fluid 1.8's affine_grid):
-- Output[n, h, w] = theta[n] (x_w, y_h, 1), x_w from -1 to 1 over the width.
-- Also positional: `affine_grid(theta, out_shape)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.theta [N, 2, 3], float32 or float64
-- @tparam {int,int,int,int}|Variable a.out_shape {N, C, H, W} of the image to sample
-- (or an int32 [4] Variable)
-- @tparam[opt] string a.name
-- @param[opt] out_shape the key `out_shape`, given positionally
-- @treturn Variable the grid, [N, H, W, 2]
-- @usage local grid = layers.affine_grid{theta = theta, out_shape = {8, 3, 32, 32}}
function M.affine_grid(a, out_shape)
  local L = "affine_grid"
  a = args(L, a, "theta", { out_shape = out_shape }, "name out_shape theta")
  local theta = float_input(L, "theta", a.theta, 3)
  local inputs, attrs = { Theta = { theta } }, {}
  if framework.is_variable(a.out_shape) then
    if a.out_shape.dtype ~= "int32" then check.fail(L, "out_shape", "a list of 4 ints or an int32 Variable", a.out_shape) end
    inputs.OutputShape = { a.out_shape }
  else
    if a.out_shape == nil then check.fail(L, "out_shape", "a list of 4 ints or an int32 Variable", nil) end
    attrs.output_shape = check.int_list(L, "out_shape", a.out_shape, 4)
  end
  local helper = LayerHelper(L, a)
  local out = helper:create_variable_for_type_inference(theta.dtype)
  helper:append_op{ type = L, inputs = inputs, outputs = { Output = { out } }, attrs = attrs }
  return out
end

--- Samples an image at a grid's points, bilinearly, zeros outside (Fluid
-- 1.8's grid_sampler). Also positional: `grid_sampler(x, grid)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x [N, C, H, W], float32 or float64
-- @tparam Variable a.grid [N, OH, OW, 2]: (x, y) in [-1, 1] over the width and height
-- @tparam[opt] string a.name
-- @param[opt] grid the key `grid`, given positionally
-- @treturn Variable [N, C, OH, OW]
-- @usage local out = layers.grid_sampler{x = img, grid = layers.affine_grid{theta = theta, out_shape = {8, 3, 32, 32}}}
function M.grid_sampler(a, grid)
  local L = "grid_sampler"
  a = args(L, a, "x", { grid = grid }, "grid name x")
  local x = float_input(L, "x", a.x, 4)
  local g = float_input(L, "grid", a.grid, 4)
  local helper = LayerHelper(L, a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = L, inputs = { X = { x }, Grid = { g } }, outputs = { Output = { out } } }
  return out
end

local resize_nd = require("oar.layers.resize_nd")

--- Resizes NCDHW volumes by trilinear interpolation (Fluid 1.8's
-- resize_trilinear). Also positional: `resize_trilinear(input, out_shape, scale)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input [N, C, D, H, W] ([N, D, H, W, C] with NDHWC), float32 or float64
-- @tparam[opt] {int,int,int}|Variable a.out_shape the output's {D, H, W} (or an int32 [3] Variable)
-- @tparam[opt] number|Variable a.scale output = input * scale (when out_shape is not given)
-- @tparam[opt] Variable a.actual_shape an int32 [3] Variable that overrides out_shape
-- @tparam[opt=true] bool a.align_corners align the corner cells of input and output
-- @tparam[opt=1] int a.align_mode without align_corners: 0 samples at half-cell centres, 1 at in * ratio
-- @tparam[opt="NCDHW"] string a.data_format "NCDHW" or "NDHWC"
-- @tparam[opt] string a.name
-- @param[opt] out_shape the key `out_shape`, given positionally
-- @param[opt] scale the key `scale`, given positionally
-- @treturn Variable [N, C, out_d, out_h, out_w]
-- @usage local big = layers.resize_trilinear{input = v, out_shape = {8, 16, 16}}
function M.resize_trilinear(a, out_shape, scale)
  local L = "resize_trilinear"
  a = args(L, a, "input", { out_shape = out_shape, scale = scale },
    "actual_shape align_corners align_mode data_format input name out_shape scale")
  a.data_format = check.string(L, "data_format", a.data_format, "NCDHW", { "NCDHW", "NDHWC" })
  return resize_nd(L, a, "trilinear", 3)
end

--- Turns each image into a sequence of its window positions (Fluid 1.8's
-- im2sequence): one row of C * kh * kw values per position, one sequence
-- per image.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input [N, C, H, W], float32 or float64
-- @tparam[opt=1] int|{int,int} a.filter_size the window {height, width}
-- @tparam[opt=1] int|{int,int} a.stride
-- @tparam[opt=0] int|{int,int}|{int,int,int,int} a.padding an int, {h, w}, or {up, left, down, right}
-- @tparam[opt] Variable a.input_image_size [N, 2]: each image's real {height, width}; with
-- more than one image, image i's grid comes from ceil(size / out_stride) (Fluid's inference path;
-- the gradient does not support it)
-- @tparam[opt=1] int|{int,int} a.out_stride used with input_image_size only
-- @tparam[opt] string a.name
-- @treturn Variable a LoD tensor [N * oh * ow, C * kh * kw]
-- @usage local seq = layers.im2sequence{input = img, filter_size = {3, 3}, stride = {1, 1}}
function M.im2sequence(a)
  local L = "im2sequence"
  a = args(L, a, "input", nil, "filter_size input input_image_size name out_stride padding stride")
  local input = float_input(L, "input", a.input, 4)
  local padding = a.padding
  if type(padding) == "table" and #padding == 4 then
    padding = check.int_list(L, "padding", padding, 4)
  else
    local p = check.int_list(L, "padding", padding, 2, 0)
    padding = { p[1], p[2], p[1], p[2] }
  end
  local inputs = { X = { input } }
  local attrs = { kernels = check.int_list(L, "filter_size", a.filter_size, 2, 1),
                  strides = check.int_list(L, "stride", a.stride, 2, 1), paddings = padding }
  if a.input_image_size ~= nil then
    inputs.Y = { check.variable(L, "input_image_size", a.input_image_size) }
    attrs.out_stride = check.int_list(L, "out_stride", a.out_stride, 2, 1)
  end
  local helper = LayerHelper(L, a)
  local out = helper:create_variable_for_type_inference(input.dtype)
  helper:append_op{ type = L, inputs = inputs, outputs = { Out = { out } }, attrs = attrs }
  return out
end

return M
