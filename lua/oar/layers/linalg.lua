--- oar.layers.linalg: linear algebra and norms (issue 22): bmm, dot,
-- addmm (Paddle 2.x names and arguments, table form).
-- @module oar.layers.linalg
local LayerHelper = require("oar.layer_helper")

local check, args = LayerHelper.check, LayerHelper.args

local M = {}

-- a two-input op X, Y -> Out of X's dtype
local function binary(layer, op, a, attrs)
  local x = check.variable(layer, "x", a.x)
  local y = check.variable(layer, "y", a.y)
  local helper = LayerHelper(layer, a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = op, inputs = { X = { x }, Y = { y } }, outputs = { Out = { out } }, attrs = attrs or {} }
  return out
end

--- bmm{x=, y=, name=}: batched matrix product, Out[b] = x[b] y[b]
-- (Paddle 2.x name; op bmm).
-- @tparam table a keyword arguments: x [B, M, K], y [B, K, N]
-- @treturn Variable Out [B, M, N]
-- @usage local z = layers.bmm{x = a, y = b}
function M.bmm(a)
  a = args("bmm", a, nil, nil, "x y name")
  return binary("bmm", "bmm", a)
end

--- dot{x=, y=, name=}: the inner product along the last axis (Paddle 2.x
-- name; op dot).
-- @tparam table a keyword arguments: x and y of one shape, [N] or [B, N]
-- @treturn Variable Out, x's shape with 1 on the last axis
-- @usage local s = layers.dot{x = a, y = b}
function M.dot(a)
  a = args("dot", a, nil, nil, "x y name")
  return binary("dot", "dot", a)
end

--- addmm{input=, x=, y=, beta=1.0, alpha=1.0, name=}: Out = beta input +
-- alpha x y (Paddle 2.x name; op addmm).
-- @tparam table a keyword arguments: input [M, N] (or 1 on an axis),
-- x [M, K], y [K, N]
-- @treturn Variable Out [M, N]
-- @usage local z = layers.addmm{input = bias, x = a, y = b, alpha = 2}
function M.addmm(a)
  a = args("addmm", a, nil, nil, "input x y beta alpha name")
  local input = check.variable("addmm", "input", a.input)
  local x = check.variable("addmm", "x", a.x)
  local y = check.variable("addmm", "y", a.y)
  local helper = LayerHelper("addmm", a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = "addmm", inputs = { Input = { input }, X = { x }, Y = { y } }, outputs = { Out = { out } },
                    attrs = { Alpha = check.number("addmm", "alpha", a.alpha, 1.0),
                              Beta = check.number("addmm", "beta", a.beta, 1.0) } }
  return out
end

return M
