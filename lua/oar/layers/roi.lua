--- oar.layers.roi: Fluid 1.8's pooling over regions of interest: roi_pool,
-- roi_align, psroi_pool, prroi_pool and deformable_roi_pooling. The ROIs are a LoD tensor [R, 4] of (x1, y1,
-- x2, y2) whose LoD says which image each ROI belongs to. Merged into
-- `oar.layers`.
--
--   local rois = layers.data{name = "rois", shape = {4}, dtype = "float32", lod_level = 1}
--   local feats = layers.roi_align{input = fmap, rois = rois, pooled_height = 7, pooled_width = 7}
--
-- @module oar.layers.roi
local LayerHelper = require("oar.layer_helper")
local framework = require("oar.framework")

local check, args = LayerHelper.check, LayerHelper.args
local raise = framework.raise

local M = {}

-- input: float 4-D; rois: 2-D [R, 4] of input's dtype
local function roi_args(L, a)
  local x = check.variable(L, "input", a.input)
  if x.dtype ~= "float32" and x.dtype ~= "float64" then check.fail(L, "input", "a float32 or float64 Variable", x) end
  if #x.shape ~= 4 then
    raise(string.format("%s: 'input' must be 4-D [N, C, H, W], got shape %s", L, framework.shape_text(x.shape)))
  end
  local r = check.variable(L, "rois", a.rois)
  if r.dtype ~= x.dtype then check.fail(L, "rois", "a " .. x.dtype .. " Variable (input's dtype)", r) end
  if #r.shape ~= 2 or (r.shape[2] ~= 4 and r.shape[2] ~= -1) then
    raise(string.format("%s: 'rois' must be 2-D [R, 4], got shape %s", L, framework.shape_text(r.shape)))
  end
  return x, r
end

local function pos_int(L, key, v, default)
  local n = check.int(L, key, v, default)
  if n <= 0 then check.fail(L, key, "a positive integer", v) end
  return n
end

local function pos_scale(L, v, default)
  local s = check.number(L, "spatial_scale", v, default)
  if s <= 0 then check.fail(L, "spatial_scale", "a positive number", v) end
  return s
end

--- Max pooling over regions of interest (Fluid 1.8's roi_pool): each ROI,
-- scaled and rounded, is cut into pooled_height x pooled_width bins, each
-- the maximum of its cells (0 when empty). Also positional:
-- `roi_pool(input, rois, pooled_height, pooled_width, spatial_scale)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input [N, C, H, W], float32 or float64
-- @tparam Variable a.rois [R, 4] (x1, y1, x2, y2), LoD level 1 (the ROIs of each image)
-- @tparam[opt=1] int a.pooled_height
-- @tparam[opt=1] int a.pooled_width
-- @tparam[opt=1.0] number a.spatial_scale multiplies the ROI coordinates
-- @param[opt] rois the key `rois`, given positionally
-- @param[opt] pooled_height the key `pooled_height`, given positionally
-- @param[opt] pooled_width the key `pooled_width`, given positionally
-- @param[opt] spatial_scale the key `spatial_scale`, given positionally
-- @treturn Variable [R, C, pooled_height, pooled_width]
-- @usage local p = layers.roi_pool{input = fmap, rois = rois, pooled_height = 7, pooled_width = 7, spatial_scale = 0.0625}
function M.roi_pool(a, rois, pooled_height, pooled_width, spatial_scale)
  local L = "roi_pool"
  a = args(L, a, "input", { rois = rois, pooled_height = pooled_height, pooled_width = pooled_width,
                            spatial_scale = spatial_scale }, "input pooled_height pooled_width rois spatial_scale")
  local x, r = roi_args(L, a)
  local attrs = { pooled_height = pos_int(L, "pooled_height", a.pooled_height, 1),
                  pooled_width = pos_int(L, "pooled_width", a.pooled_width, 1),
                  spatial_scale = pos_scale(L, a.spatial_scale, 1.0) }
  local helper = LayerHelper(L, a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  local argmax = helper:create_variable_for_type_inference("int64")
  helper:append_op{ type = L, inputs = { X = { x }, ROIs = { r } }, outputs = { Out = { out }, Argmax = { argmax } },
                    attrs = attrs }
  return out
end

--- Region of interest align (Fluid 1.8's roi_align): each ROI, scaled
-- without rounding, is cut into bins, each the mean of X bilinearly sampled
-- at sampling_ratio x sampling_ratio points (ceil(bin size) when <= 0).
-- Also positional: `roi_align(input, rois, pooled_height, pooled_width,
-- spatial_scale, sampling_ratio)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input [N, C, H, W], float32 or float64
-- @tparam Variable a.rois [R, 4] (x1, y1, x2, y2), LoD level 1 (the ROIs of each image)
-- @tparam[opt=1] int a.pooled_height
-- @tparam[opt=1] int a.pooled_width
-- @tparam[opt=1.0] number a.spatial_scale multiplies the ROI coordinates
-- @tparam[opt=-1] int a.sampling_ratio sampling points per bin side (<= 0: adaptive)
-- @tparam[opt] string a.name
-- @param[opt] rois the key `rois`, given positionally
-- @param[opt] pooled_height the key `pooled_height`, given positionally
-- @param[opt] pooled_width the key `pooled_width`, given positionally
-- @param[opt] spatial_scale the key `spatial_scale`, given positionally
-- @param[opt] sampling_ratio the key `sampling_ratio`, given positionally
-- @treturn Variable [R, C, pooled_height, pooled_width]
-- @usage local p = layers.roi_align{input = fmap, rois = rois, pooled_height = 7, pooled_width = 7, sampling_ratio = 2}
function M.roi_align(a, rois, pooled_height, pooled_width, spatial_scale, sampling_ratio)
  local L = "roi_align"
  a = args(L, a, "input", { rois = rois, pooled_height = pooled_height, pooled_width = pooled_width,
                            spatial_scale = spatial_scale, sampling_ratio = sampling_ratio },
    "input name pooled_height pooled_width rois sampling_ratio spatial_scale")
  local x, r = roi_args(L, a)
  local attrs = { pooled_height = pos_int(L, "pooled_height", a.pooled_height, 1),
                  pooled_width = pos_int(L, "pooled_width", a.pooled_width, 1),
                  spatial_scale = check.number(L, "spatial_scale", a.spatial_scale, 1.0),
                  sampling_ratio = check.int(L, "sampling_ratio", a.sampling_ratio, -1) }
  local helper = LayerHelper(L, a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = L, inputs = { X = { x }, ROIs = { r } }, outputs = { Out = { out } }, attrs = attrs }
  return out
end

--- Position-sensitive ROI average pooling (Fluid 1.8's psroi_pool, R-FCN):
-- bin (ph, pw) of output channel c averages input channel
-- (c pooled_height + ph) pooled_width + pw over the bin. Also positional:
-- `psroi_pool(input, rois, output_channels, spatial_scale, pooled_height, pooled_width)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input [N, output_channels * pooled_height * pooled_width, H, W], float32 or float64
-- @tparam Variable a.rois [R, 4] (x1, y1, x2, y2), LoD level 1 (the ROIs of each image)
-- @tparam int a.output_channels
-- @tparam number a.spatial_scale multiplies the ROI coordinates
-- @tparam int a.pooled_height
-- @tparam int a.pooled_width
-- @tparam[opt] string a.name
-- @param[opt] rois the key `rois`, given positionally
-- @param[opt] output_channels the key `output_channels`, given positionally
-- @param[opt] spatial_scale the key `spatial_scale`, given positionally
-- @param[opt] pooled_height the key `pooled_height`, given positionally
-- @param[opt] pooled_width the key `pooled_width`, given positionally
-- @treturn Variable [R, output_channels, pooled_height, pooled_width]
-- @raise when input's channels are not output_channels * pooled_height * pooled_width
-- @usage local p = layers.psroi_pool{input = x, rois = rois, output_channels = 10, spatial_scale = 1, pooled_height = 7, pooled_width = 7}
function M.psroi_pool(a, rois, output_channels, spatial_scale, pooled_height, pooled_width)
  local L = "psroi_pool"
  a = args(L, a, "input", { rois = rois, output_channels = output_channels, spatial_scale = spatial_scale,
                            pooled_height = pooled_height, pooled_width = pooled_width },
    "input name output_channels pooled_height pooled_width rois spatial_scale")
  local x, r = roi_args(L, a)
  local oc = pos_int(L, "output_channels", a.output_channels)
  local ph, pw = pos_int(L, "pooled_height", a.pooled_height), pos_int(L, "pooled_width", a.pooled_width)
  local s = pos_scale(L, a.spatial_scale)
  if x.shape[2] > 0 and x.shape[2] ~= oc * ph * pw then
    raise(string.format("%s: 'input' has %d channels, expected output_channels * pooled_height * pooled_width = %d",
      L, x.shape[2], oc * ph * pw))
  end
  local helper = LayerHelper(L, a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = L, inputs = { X = { x }, ROIs = { r } }, outputs = { Out = { out } },
                    attrs = { output_channels = oc, spatial_scale = s, pooled_height = ph, pooled_width = pw } }
  return out
end

--- Precise ROI pooling (Fluid 1.8's prroi_pool): each bin is the exact
-- integral of the input's bilinear interpolation over the bin, divided by its
-- area; differentiable in the input and the ROIs. Also positional:
-- `prroi_pool(input, rois, spatial_scale, pooled_height, pooled_width)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input [N, C, H, W], float32 or float64
-- @tparam Variable a.rois [R, 4] (x1, y1, x2, y2), LoD level 1 (the ROIs of each image)
-- @tparam[opt=1.0] number a.spatial_scale multiplies the ROI coordinates
-- @tparam[opt=1] int a.pooled_height
-- @tparam[opt=1] int a.pooled_width
-- @tparam[opt] Variable a.batch_roi_nums int64 [N]: the ROI count of each image (replaces the LoD)
-- @tparam[opt] string a.name
-- @param[opt] rois the key `rois`, given positionally
-- @param[opt] spatial_scale the key `spatial_scale`, given positionally
-- @param[opt] pooled_height the key `pooled_height`, given positionally
-- @param[opt] pooled_width the key `pooled_width`, given positionally
-- @treturn Variable [R, C, pooled_height, pooled_width]
-- @usage local p = layers.prroi_pool{input = fmap, rois = rois, pooled_height = 7, pooled_width = 7}
function M.prroi_pool(a, rois, spatial_scale, pooled_height, pooled_width)
  local L = "prroi_pool"
  a = args(L, a, "input", { rois = rois, spatial_scale = spatial_scale, pooled_height = pooled_height,
                            pooled_width = pooled_width },
    "batch_roi_nums input name pooled_height pooled_width rois spatial_scale")
  local x, r = roi_args(L, a)
  local attrs = { spatial_scale = pos_scale(L, a.spatial_scale, 1.0),
                  pooled_height = pos_int(L, "pooled_height", a.pooled_height, 1),
                  pooled_width = pos_int(L, "pooled_width", a.pooled_width, 1) }
  local inputs = { X = { x }, ROIs = { r } }
  if a.batch_roi_nums ~= nil then
    local b = check.variable(L, "batch_roi_nums", a.batch_roi_nums)
    if b.dtype ~= "int64" then check.fail(L, "batch_roi_nums", "an int64 Variable", b) end
    inputs.BatchRoINums = { b }
  end
  local helper = LayerHelper(L, a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = L, inputs = inputs, outputs = { Out = { out } }, attrs = attrs }
  return out
end

--- Deformable ROI pooling (Fluid 1.8's deformable_roi_pooling, op
-- deformable_psroi_pooling): each bin of each ROI is shifted by trans_std *
-- trans (times the ROI's size) and averages sample_per_part^2 bilinear
-- samples; position-sensitive when position_sensitive is set (output
-- channels input_channels / (pooled_height pooled_width)).
-- @tparam table a keyword arguments:
-- @tparam Variable a.input [N, C, H, W], float32 or float64
-- @tparam Variable a.rois [R, 4] (x1, y1, x2, y2), LoD level 1 (the ROIs of each image)
-- @tparam Variable a.trans [R, 2 * num_classes, part_height, part_width], the offsets
-- @tparam[opt=false] bool a.no_trans ignore trans
-- @tparam[opt=1.0] number a.spatial_scale multiplies the ROI coordinates
-- @tparam[opt={1,1}] {int,int} a.group_size the position-sensitive groups
-- @tparam[opt=1] int a.pooled_height
-- @tparam[opt=1] int a.pooled_width
-- @tparam[opt] {int,int} a.part_size trans's spatial size (default {pooled_height, pooled_width})
-- @tparam[opt=1] int a.sample_per_part sampling points per bin side
-- @tparam[opt=0.1] number a.trans_std multiplies trans
-- @tparam[opt=false] bool a.position_sensitive
-- @tparam[opt] string a.name
-- @treturn Variable [R, output channels, pooled_height, pooled_width]
-- @usage local p = layers.deformable_roi_pooling{input = x, rois = rois, trans = t, pooled_height = 7, pooled_width = 7}
function M.deformable_roi_pooling(a)
  local L = "deformable_roi_pooling"
  a = args(L, a, nil, nil, "group_size input name no_trans part_size pooled_height pooled_width position_sensitive "
    .. "rois sample_per_part spatial_scale trans trans_std")
  local x, r = roi_args(L, a)
  local t = check.variable(L, "trans", a.trans)
  if t.dtype ~= x.dtype then check.fail(L, "trans", "a " .. x.dtype .. " Variable (input's dtype)", t) end
  local ph = pos_int(L, "pooled_height", a.pooled_height, 1)
  local pw = pos_int(L, "pooled_width", a.pooled_width, 1)
  local ps = check.int_list(L, "part_size", a.part_size, 2, { ph, pw })
  local gs = check.int_list(L, "group_size", a.group_size, 2, { 1, 1 })
  for i = 1, 2 do
    if ps[i] <= 0 then check.fail(L, "part_size", "positive integers", a.part_size) end
    if gs[i] <= 0 then check.fail(L, "group_size", "positive integers", a.group_size) end
  end
  local c = x.shape[2]
  if c <= 0 then raise(L .. ": the channels of 'input' must be known") end
  local od = c
  if check.boolean(L, "position_sensitive", a.position_sensitive, false) then
    if c % (ph * pw) ~= 0 then
      raise(string.format("%s: position_sensitive needs the input's channels (%d) to be a multiple of "
        .. "pooled_height * pooled_width (%d)", L, c, ph * pw))
    end
    od = math.floor(c / (ph * pw))
  end
  local helper = LayerHelper(L, a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  local count = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = "deformable_psroi_pooling", inputs = { Input = { x }, ROIs = { r }, Trans = { t } },
    outputs = { Output = { out }, TopCount = { count } },
    attrs = { no_trans = check.boolean(L, "no_trans", a.no_trans, false),
              spatial_scale = pos_scale(L, a.spatial_scale, 1.0), output_dim = od, group_size = gs,
              pooled_height = ph, pooled_width = pw, part_size = ps,
              sample_per_part = pos_int(L, "sample_per_part", a.sample_per_part, 1),
              trans_std = check.number(L, "trans_std", a.trans_std, 0.1) } }
  return out
end

return M
