--- oar.clip: gradient clipping applied by the optimizers before the update
-- (Fluid's clip.py): by value (`clip` op), by each gradient's norm
-- (`clip_by_norm` op) or by the global norm of all gradients together.
-- @module oar.clip
local framework = require("oar.framework")
local unique_name = require("oar.unique_name")
local argcheck = require("oar.argcheck")

local raise = framework.raise

local M = {}

local Clip = {}
Clip.__index = Clip

local function number_field(spec, key, who, required)
  local v = spec[key]
  if v == nil and not required then return nil end
  if type(v) ~= "number" then
    raise(string.format("%s: '%s' must be a number, got %s", who, key, framework.describe(v)))
  end
  return v
end

local function spec_of(spec, who, key, known)
  if type(spec) == "number" then return { [key] = spec } end
  if type(spec) ~= "table" then raise(who .. ": expected a table of options, got " .. framework.describe(spec)) end
  return argcheck.keys("oar.clip." .. who, spec, known)
end

--- Clips every gradient element into [min, max] (the `clip` op). Also
-- `GradientClipByValue(max)`; `oar.clip.ByValue` is the same function.
-- @tparam table|number spec options, or max:
-- @tparam number spec.max
-- @tparam[opt=-max] number spec.min
-- @treturn GradientClip give it to an optimizer's grad_clip, or to ParamAttr's gradient_clip
-- @raise when max is missing or min > max
-- @usage oar.optimizer.SGD{learning_rate = 0.1, grad_clip = oar.clip.GradientClipByValue{max = 1.0}}:minimize(loss)
function M.GradientClipByValue(spec)
  spec = spec_of(spec, "GradientClipByValue", "max", "max min")
  local max = number_field(spec, "max", "GradientClipByValue", true)
  local min = number_field(spec, "min", "GradientClipByValue") or -max
  if min > max then raise("GradientClipByValue: 'min' must not exceed 'max'") end
  return setmetatable({ kind = "value", min = min, max = max }, Clip)
end

--- Rescales each gradient to an L2 norm of at most clip_norm (the
-- `clip_by_norm` op). Also `GradientClipByNorm(clip_norm)`; `oar.clip.ByNorm`.
-- @tparam table|number spec options, or clip_norm:
-- @tparam number spec.clip_norm positive
-- @treturn GradientClip
-- @raise when clip_norm is missing or not positive
-- @usage local clip = oar.clip.GradientClipByNorm{clip_norm = 5.0}
function M.GradientClipByNorm(spec)
  spec = spec_of(spec, "GradientClipByNorm", "clip_norm", "clip_norm")
  local c = number_field(spec, "clip_norm", "GradientClipByNorm", true)
  if c <= 0 then raise("GradientClipByNorm: 'clip_norm' must be positive") end
  return setmetatable({ kind = "norm", clip_norm = c }, Clip)
end

--- Scales all gradients together by clip_norm / max(global_norm, clip_norm),
-- global_norm the L2 norm of all gradients as one vector. Also
-- `GradientClipByGlobalNorm(clip_norm)`; `oar.clip.ByGlobalNorm`.
-- @tparam table|number spec options, or clip_norm:
-- @tparam number spec.clip_norm positive
-- @treturn GradientClip
-- @raise when clip_norm is missing or not positive
-- @usage oar.optimizer.Adam{learning_rate = 1e-3, grad_clip = oar.clip.GradientClipByGlobalNorm{clip_norm = 1.0}}:minimize(loss)
function M.GradientClipByGlobalNorm(spec)
  spec = spec_of(spec, "GradientClipByGlobalNorm", "clip_norm", "clip_norm")
  local c = number_field(spec, "clip_norm", "GradientClipByGlobalNorm", true)
  if c <= 0 then raise("GradientClipByGlobalNorm: 'clip_norm' must be positive") end
  return setmetatable({ kind = "global_norm", clip_norm = c }, Clip)
end
M.ByValue, M.ByNorm, M.ByGlobalNorm = M.GradientClipByValue, M.GradientClipByNorm, M.GradientClipByGlobalNorm

--- Whether `x` is a gradient clip (made by this module).
-- @param x any value
-- @treturn bool
-- @usage assert(oar.clip.is_clip(oar.clip.ByNorm(1)))
function M.is_clip(x) return getmetatable(x) == Clip end

local function new_like(block, v, suffix)
  return block:create_var{ name = unique_name.generate(v.name .. suffix), dtype = v.dtype, shape = v.shape }
end

local function op(block, op_type, inputs, out, attrs)
  block:append_op{ type = op_type, inputs = inputs, outputs = { Out = { out } }, attrs = attrs }
  return out
end

local function scalar(block, dtype)
  return block:create_var{ dtype = dtype or "float32", shape = { 1 } }
end

--- Appends the clipping ops (optimize ops of the gradients' program) and
-- returns new `{param, grad}` pairs with the clipped gradients; pairs with
-- no gradient are kept as they are. Optimizers call it for you.
-- @tparam {{Variable,Variable},...} params_grads `{param, grad}` pairs (from append_backward)
-- @treturn {{Variable,Variable},...} the pairs with clipped gradients
-- @raise when params_grads is not a list of Variable pairs
-- @usage local clipped = oar.clip.ByValue(1.0):apply(oar.append_backward(loss))
function Clip:apply(params_grads)
  if type(params_grads) ~= "table" or framework.is_variable(params_grads) then
    raise("GradientClip:apply: 'params_grads' must be a list of {param, grad} pairs, got " ..
      framework.describe(params_grads))
  end
  for i, pg in ipairs(params_grads) do
    if type(pg) ~= "table" or not framework.is_variable(pg[1]) or (pg[2] ~= nil and not framework.is_variable(pg[2])) then
      raise(string.format("GradientClip:apply: item %d of 'params_grads' must be {param, grad} (Variables), got %s",
        i, framework.describe(pg)))
    end
  end
  local out = {}
  local live = {}
  for i, pg in ipairs(params_grads) do
    if pg[2] ~= nil then live[#live + 1] = i end
    out[i] = pg
  end
  if #live == 0 then return out end
  local block = params_grads[live[1]][2].block
  local prog = block.program
  if self.kind == "value" or self.kind == "norm" then
    for _, i in ipairs(live) do
      local p, g = params_grads[i][1], params_grads[i][2]
      prog:_optimized_guard({ p, g }, function()
        local ng = new_like(block, g, "@CLIP")
        if self.kind == "value" then
          op(block, "clip", { X = { g } }, ng, { min = self.min, max = self.max })
        else
          op(block, "clip_by_norm", { X = { g } }, ng, { max_norm = self.clip_norm })
        end
        out[i] = { p, ng }
      end)
    end
    return out
  end
  -- global norm: sqrt(sum_i sum(g_i^2)), then g_i * clip / max(norm, clip)
  prog:_optimized_guard(nil, function()
    local sums = {}
    for k, i in ipairs(live) do
      local g = params_grads[i][2]
      local sq = op(block, "square", { X = { g } }, new_like(block, g, "@SQUARE"), nil)
      sums[k] = op(block, "reduce_sum", { X = { sq } }, scalar(block, g.dtype),
        { dim = { 0 }, keep_dim = false, reduce_all = true })
    end
    local total = sums[1]
    if #sums > 1 then total = op(block, "sum", { X = sums }, scalar(block), nil) end
    local norm = op(block, "sqrt", { X = { total } }, scalar(block), nil)
    local clip = op(block, "fill_constant", {}, scalar(block),
      { shape = { 1 }, dtype = "float32", value = self.clip_norm })
    local denom = op(block, "elementwise_max", { X = { norm }, Y = { clip } }, scalar(block), { axis = -1 })
    local factor = op(block, "elementwise_div", { X = { clip }, Y = { denom } }, scalar(block), { axis = -1 })
    for _, i in ipairs(live) do
      local p, g = params_grads[i][1], params_grads[i][2]
      local ng = op(block, "elementwise_mul", { X = { g }, Y = { factor } }, new_like(block, g, "@CLIP"),
        { axis = -1 })
      out[i] = { p, ng }
    end
  end)
  return out
end

function Clip:__tostring()
  if self.kind == "value" then return string.format("GradientClipByValue(%g, %g)", self.min, self.max) end
  return string.format("GradientClipBy%s(%g)", self.kind == "norm" and "Norm" or "GlobalNorm", self.clip_norm)
end

require("oar.framework")._guard_methods(Clip, M.is_clip, "GradientClip", {})

return M
