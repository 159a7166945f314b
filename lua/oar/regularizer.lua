-- oar.regularizer: weight decay added to a parameter's gradient before the
-- optimizer op (Fluid's regularizer.py): L2 adds coeff * param, L1 adds
-- coeff * sign(param).
local framework = require("oar.framework")
local unique_name = require("oar.unique_name")

local raise = require("oar.framework").raise
local M = {}

local Regularizer = {}
Regularizer.__index = Regularizer

local function make(kind, coeff, who)
  if type(coeff) == "table" then coeff = coeff.regularization_coeff or coeff.coeff or coeff[1] end
  if coeff == nil then coeff = 0.0 end
  if type(coeff) ~= "number" then
    raise(who .. ": 'regularization_coeff' must be a number, got " .. type(coeff))
  end
  return setmetatable({ kind = kind, coeff = coeff, _is_regularizer = true }, Regularizer)
end

function M.L2Decay(coeff) return make("l2", coeff, "L2Decay") end
function M.L1Decay(coeff) return make("l1", coeff, "L1Decay") end
M.L2DecayRegularizer = M.L2Decay
M.L1DecayRegularizer = M.L1Decay

function M.is_regularizer(x) return getmetatable(x) == Regularizer end

function Regularizer:__tostring()
  return string.format("%sDecay(%g)", self.kind == "l2" and "L2" or "L1", self.coeff)
end

-- Appends ops computing the decay term of `param` to `block`; returns it.
function Regularizer:decay_term(param, block)
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

-- For each {param, grad}: grad + decay(param) with the param's own
-- regularizer, else `regularization`. Returns the new pairs.
function M.append_regularization_ops(params_grads, regularization)
  local out = {}
  for i, pg in ipairs(params_grads) do
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

return M
