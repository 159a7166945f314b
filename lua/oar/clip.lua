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

--- Clips the error (the gradient) of one variable into [min, max] as the
-- backward pass produces it (Fluid's ErrorClipByValue): set it as the
-- variable's `error_clip` (`v.error_clip = oar.clip.ErrorClipByValue{max = 1}`)
-- before `append_backward`/`minimize`/`gradients`, and a `clip` op rewrites
-- `v`'s gradient in place right after the op that finishes it, so every
-- gradient computed from it sees the clipped value.
-- @tparam table|number spec options, or max:
-- @tparam number spec.max
-- @tparam[opt=-max] number spec.min
-- @treturn ErrorClip
-- @raise when max is missing or min > max
-- @usage h.error_clip = oar.clip.ErrorClipByValue{max = 0.5}
function M.ErrorClipByValue(spec)
  spec = spec_of(spec, "ErrorClipByValue", "max", "max min")
  local max = number_field(spec, "max", "ErrorClipByValue", true)
  local min = number_field(spec, "min", "ErrorClipByValue") or -max
  if min > max then raise("ErrorClipByValue: 'min' must not exceed 'max'") end
  return setmetatable({ kind = "error_value", min = min, max = max }, Clip)
end

--- Whether `x` is an error clip (ErrorClipByValue).
-- @param x any value
-- @treturn bool
-- @usage assert(oar.clip.is_error_clip(oar.clip.ErrorClipByValue(1)))
function M.is_error_clip(x) return getmetatable(x) == Clip and x.kind == "error_value" end

-- Appends, after the backward ops from op index `first` on of `block`, a
-- clip of the gradient of every variable whose error_clip is set, right
-- after the last op that writes it. `grad_of(name)` gives the gradient
-- name the pass wrote for a forward variable (nil when none).
function M._apply_error_clips(block, first, grad_of)
  local clips = {}
  for _, v in ipairs(block:vars()) do
    local c = rawget(v, "error_clip")
    if c ~= nil then
      if not M.is_error_clip(c) then
        raise(string.format("error_clip of '%s' must be an ErrorClipByValue, got %s", v.name, framework.describe(c)))
      end
      local g = grad_of(v.name)
      if g then clips[#clips + 1] = { g = g, c = c } end
    end
  end
  for _, e in ipairs(clips) do
    local ops = block:ops()
    local at
    for i = #ops, first + 1, -1 do
      for _, n in ipairs(ops[i]:output_arg_names()) do if n == e.g then at = i end end
      if at then break end
    end
    if at then
      block:_insert_op(at, { type = "clip", inputs = { X = { e.g } }, outputs = { Out = { e.g } },
        attrs = { min = e.c.min, max = e.c.max, op_role = framework.OpRole.Backward } }, "ErrorClipByValue")
    end
  end
end

--- Sets the gradient clip of parameters (Fluid's set_gradient_clip): an
-- optimizer without its own `grad_clip` clips each parameter's gradient with
-- the clip set here (global-norm clips across the parameters sharing one).
-- @tparam GradientClip clip a GradientClipBy* object
-- @tparam[opt] {Parameter|string,...} param_list the parameters (default: all of `program`)
-- @tparam[opt] Program program default: the default main program
-- @raise when clip is not a gradient clip or a name is not a parameter
-- @usage oar.clip.set_gradient_clip(oar.clip.GradientClipByNorm{clip_norm = 1.0})
function M.set_gradient_clip(clip, param_list, program)
  if not M.is_clip(clip) or clip.kind == "error_value" then
    raise("set_gradient_clip: 'clip' must be a GradientClipBy* object, got " .. framework.describe(clip))
  end
  program = program or framework.default_main_program()
  if not framework.is_program(program) then
    raise("set_gradient_clip: 'program' must be a Program, got " .. framework.describe(program))
  end
  local gb = program:global_block()
  local params = param_list or gb:all_parameters()
  if type(params) ~= "table" then
    raise("set_gradient_clip: 'param_list' must be a list of parameters, got " .. framework.describe(params))
  end
  for i, p in ipairs(params) do
    if type(p) == "string" then p = gb:var(p) end
    if not framework.is_parameter(p) then
      raise(string.format("set_gradient_clip: param_list[%d] is not a parameter: %s", i, framework.describe(p)))
    end
    rawset(p, "gradient_clip", clip)
  end
end

--- The clipping of `params_grads` by each parameter's own gradient clip
-- (its ParamAttr's `gradient_clip`, or set_gradient_clip); pairs without
-- one pass unchanged. Optimizers without `grad_clip` call it.
-- @tparam {{Variable,Variable},...} params_grads
-- @treturn {{Variable,Variable},...}
-- @usage local pg = oar.clip.append_gradient_clip_ops(oar.append_backward(loss))
function M.append_gradient_clip_ops(params_grads)
  if type(params_grads) ~= "table" then
    error("oar.clip.append_gradient_clip_ops: params_grads must be a list of {param, grad} pairs, got "
      .. type(params_grads), 2)
  end
  local groups, order = {}, {}
  for i, pg in ipairs(params_grads) do
    local c = type(pg) == "table" and framework.is_variable(pg[1]) and rawget(pg[1], "gradient_clip")
    if c and pg[2] ~= nil then
      if not groups[c] then groups[c] = {}; order[#order + 1] = c end
      table.insert(groups[c], i)
    end
  end
  if #order == 0 then return params_grads end
  local out = {}
  for i, pg in ipairs(params_grads) do out[i] = pg end
  for _, c in ipairs(order) do
    local sub = {}
    for k, i in ipairs(groups[c]) do sub[k] = params_grads[i] end
    local clipped = c:apply(sub)
    for k, i in ipairs(groups[c]) do out[i] = clipped[k] end
  end
  return out
end

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
  if self.kind == "error_value" then raise("ErrorClipByValue: set it as a variable's error_clip, not as a grad_clip") end
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
  if self.kind == "error_value" then return string.format("ErrorClipByValue(%g, %g)", self.min, self.max) end
  if self.kind == "value" then return string.format("GradientClipByValue(%g, %g)", self.min, self.max) end
  return string.format("GradientClipBy%s(%g)", self.kind == "norm" and "Norm" or "GlobalNorm", self.clip_norm)
end

require("oar.framework")._guard_methods(Clip, M.is_clip, "GradientClip", {})

return M
