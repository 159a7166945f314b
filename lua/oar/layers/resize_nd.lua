--- oar.layers.resize_nd: the body that image_resize (resample "TRILINEAR",
-- "BICUBIC" or "LINEAR"), resize_trilinear and resize_linear share, and the
-- size arguments and the op of every image_resize (append_interp); not
-- merged into oar.layers.
-- @module oar.layers.resize_nd
local LayerHelper = require("oar.layer_helper")
local framework = require("oar.framework")

local check = LayerHelper.check
local raise = framework.raise

local float_input = check.float_variable

--- Appends `<attrs.interp_method>_interp` over input for layer L with the
-- size arguments of a (out_shape with nd sizes or a Variable, scale,
-- actual_shape) added to attrs; shared with the v1 ops of oar.layers.extra.
-- @tparam string L the layer's name, for errors
-- @tparam table a the layer's keyword arguments
-- @tparam Variable input the checked input
-- @tparam table attrs the op's other attributes
-- @tparam int nd the spatial dims (1, 2 or 3)
-- @treturn Variable the resized input
local function append_interp(L, a, input, attrs, nd)
  local method = attrs.interp_method
  local inputs = { X = { input } }
  local out_shape = a.out_shape
  if out_shape == nil and a.scale == nil then raise(L .. ": one of 'out_shape' and 'scale' must be set") end
  if framework.is_variable(out_shape) then
    inputs.OutSize = { out_shape }
  elseif out_shape ~= nil then
    local sz = check.int_list(L, "out_shape", out_shape, nd)
    for i = 1, nd do
      if sz[i] <= 0 then check.fail(L, "out_shape", "positive sizes", out_shape) end
    end
    if nd == 3 then attrs.out_d = sz[1] end
    if nd >= 2 then attrs.out_h = sz[nd - 1] end
    attrs.out_w = sz[nd]
  end
  if a.actual_shape ~= nil then inputs.OutSize = { check.variable(L, "actual_shape", a.actual_shape) } end
  if a.scale ~= nil and out_shape == nil then
    if framework.is_variable(a.scale) then
      inputs.Scale = { a.scale }
    else
      local sc = check.number(L, "scale", a.scale)
      if sc <= 0 then check.fail(L, "scale", "positive", a.scale) end
      attrs.scale = sc
    end
  end
  local helper = LayerHelper(L, a)
  local out = helper:create_variable_for_type_inference(input.dtype)
  helper:append_op{ type = method .. "_interp", inputs = inputs, outputs = { Out = { out } }, attrs = attrs }
  return out
end

--- Appends trilinear_interp (nd 3), bicubic_interp (nd 2) or linear_interp
-- (nd 1) for layer L.
-- @tparam string L the layer's name, for errors
-- @tparam table a the layer's keyword arguments (input, out_shape, scale,
-- actual_shape, align_corners, align_mode, data_format (checked by the caller), name)
-- @tparam string method "trilinear", "bicubic" or "linear"
-- @tparam int nd the spatial dims (3, 2 or 1)
-- @treturn Variable the resized input
local function resize_nd(L, a, method, nd)
  local input = float_input(L, "input", a.input, nd + 2)
  -- Fluid writes NHWC for channels last at either rank
  local last = a.data_format == "NHWC" or a.data_format == "NDHWC" or a.data_format == "NWC"
  local attrs = { interp_method = method, data_layout = last and "NHWC" or "NCHW",
                  align_corners = check.boolean(L, "align_corners", a.align_corners, true) }
  if method == "trilinear" or method == "linear" then
    attrs.align_mode = check.int(L, "align_mode", a.align_mode, 1)
    if attrs.align_mode ~= 0 and attrs.align_mode ~= 1 then check.fail(L, "align_mode", "0 or 1", a.align_mode) end
  end
  return append_interp(L, a, input, attrs, nd)
end

return setmetatable({ append_interp = append_interp }, { __call = function(_, ...) return resize_nd(...) end })
