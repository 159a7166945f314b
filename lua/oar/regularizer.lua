--- oar.regularizer: weight decay added to a parameter's gradient before the
-- optimizer op (Fluid's regularizer.py): L2 adds coeff * param, L1 adds
-- coeff * sign(param).
-- @module oar.regularizer
local framework = require("oar.framework")
local unique_name = require("oar.unique_name")
local argcheck = require("oar.argcheck")

local raise = require("oar.framework").raise
local M = {}

local Regularizer = {}
Regularizer.__index = Regularizer

local function make(kind, coeff, who)
  if type(coeff) == "table" then
    argcheck.keys("oar.regularizer." .. who, coeff, "regularization_coeff coeff", { positional = 1 })
    coeff = coeff.regularization_coeff or coeff.coeff or coeff[1]
  end
  if coeff == nil then coeff = 0.0 end
  if type(coeff) ~= "number" then
    raise(who .. ": 'regularization_coeff' must be a number, got " .. type(coeff))
  end
  return setmetatable({ kind = kind, coeff = coeff, _is_regularizer = true }, Regularizer)
end

--- L2 weight decay: adds coeff * param to the gradient. Also
-- `L2Decay{regularization_coeff=}` (or `{coeff=}`); `L2DecayRegularizer`
-- is the same function.
-- @tparam[opt=0.0] number|table coeff the coefficient, or options
-- @treturn Regularizer
-- @raise when the coefficient is not a number
-- @usage oar.optimizer.SGD{learning_rate = 0.1, regularization = oar.regularizer.L2Decay(1e-4)}:minimize(loss)
function M.L2Decay(coeff) return make("l2", coeff, "L2Decay") end

--- L1 weight decay: adds coeff * sign(param) to the gradient. Also
-- `L1Decay{regularization_coeff=}`; `L1DecayRegularizer` is the same function.
-- @tparam[opt=0.0] number|table coeff the coefficient, or options
-- @treturn Regularizer
-- @usage local attr = oar.ParamAttr{regularizer = oar.regularizer.L1Decay(1e-5)}
function M.L1Decay(coeff) return make("l1", coeff, "L1Decay") end
M.L2DecayRegularizer = M.L2Decay
M.L1DecayRegularizer = M.L1Decay

--- Whether `x` is a regularizer (made by L1Decay or L2Decay).
-- @param x any value
-- @treturn bool
-- @usage assert(oar.regularizer.is_regularizer(oar.regularizer.L2Decay(1e-4)))
function M.is_regularizer(x) return getmetatable(x) == Regularizer end

function Regularizer:__tostring()
  return string.format("%sDecay(%g)", self.kind == "l2" and "L2" or "L1", self.coeff)
end

--- Appends ops computing the decay term of `param` to `block`.
-- @tparam Variable param
-- @tparam Block block
-- @treturn Variable the decay term, param's shape
-- @raise when param is not a Variable or block not a Block
-- @usage local d = oar.regularizer.L2Decay(1e-4):decay_term(w, loss.block)
function Regularizer:decay_term(param, block)
  if not framework.is_variable(param) then
    framework.raise("Regularizer:decay_term: 'param' must be a Variable, got " .. framework.describe(param))
  end
  if not framework.is_block(block) then
    framework.raise("Regularizer:decay_term: 'block' must be a Block, got " .. framework.describe(block))
  end
  local decay = block:create_var{ dtype = param.dtype, shape = param.shape, lod_level = param.lod_level }
  if self.kind == "l2" then
    block:append_op{ type = "scale", inputs = { X = { param } }, outputs = { Out = { decay } },
                     attrs = { scale = self.coeff } }
  else
    local sign = block:create_var{ dtype = param.dtype, shape = param.shape }
    block:append_op{ type = "sign", inputs = { X = { param } }, outputs = { Out = { sign } } }
    block:append_op{ type = "scale", inputs = { X = { sign } }, outputs = { Out = { decay } },
                     attrs = { scale = self.coeff } }
  end
  return decay
end

--- Adds weight decay to gradients: for each `{param, grad}`, grad +
-- decay(param) with the parameter's own regularizer (from its ParamAttr),
-- else `regularization`. Optimizers call it for you.
-- @tparam {{Variable,Variable},...} params_grads `{param, grad}` pairs
-- @tparam[opt] Regularizer regularization the default regularizer
-- @treturn {{Variable,Variable},...} the new pairs (unchanged where no regularizer applies)
-- @raise when params_grads is not a list of Variable pairs or regularization not a Regularizer
-- @usage local pg = oar.regularizer.append_regularization_ops(oar.append_backward(loss), oar.regularizer.L2Decay(1e-4))
function M.append_regularization_ops(params_grads, regularization)
  if type(params_grads) ~= "table" or framework.is_variable(params_grads) then
    framework.raise("append_regularization_ops: 'params_grads' must be a list of {param, grad} pairs, got " ..
      framework.describe(params_grads))
  end
  if regularization ~= nil and not M.is_regularizer(regularization) then
    framework.raise("append_regularization_ops: 'regularization' must be L1Decay or L2Decay, got " ..
      framework.describe(regularization))
  end
  local out = {}
  for i, pg in ipairs(params_grads) do
    if type(pg) ~= "table" or not framework.is_variable(pg[1])
        or (pg[2] ~= nil and not framework.is_variable(pg[2])) then
      framework.raise(string.format("append_regularization_ops: item %d of 'params_grads' must be {param, grad} " ..
        "(Variables), got %s", i, framework.describe(pg)))
    end
    local param, grad = pg[1], pg[2]
    local reg = rawget(param, "regularizer") or regularization
    if grad == nil or reg == nil then
      out[i] = pg
    else
      if not M.is_regularizer(reg) then
        framework.raise("regularization: expected L1Decay or L2Decay for '" .. param.name .. "', got " ..
          framework.describe(reg))
      end
      local block = grad.block
      local new_grad
      block.program:_optimized_guard({ param, grad }, function()
        local decay = reg:decay_term(param, block)
        new_grad = block:create_var{ name = unique_name.generate(grad.name .. "@REGULARIZED"), dtype = grad.dtype,
                                     shape = grad.shape, lod_level = grad.lod_level }
        block:append_op{ type = "sum", inputs = { X = { grad, decay } }, outputs = { Out = { new_grad } } }
      end)
      out[i] = { param, new_grad }
    end
  end
  return out
end

require("oar.framework")._guard_methods(Regularizer, M.is_regularizer, "Regularizer", {})

return M
