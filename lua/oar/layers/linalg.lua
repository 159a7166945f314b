--- oar.layers.linalg: linear algebra and norms (issue 22): bmm, dot,
-- addmm (Paddle 2.x names and arguments, table form); squared_l2_norm,
-- l1_norm, squared_l2_distance, minus (no Fluid layer: named after their
-- ops); Fluid 1.8's isfinite, has_inf, has_nan.
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

-- a one-input op X -> Out of X's dtype
local function unary(layer, a)
  a = args(layer, a, "x", nil, "x name")
  local x = check.variable(layer, "x", a.x)
  local helper = LayerHelper(layer, a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = layer, inputs = { X = { x } }, outputs = { Out = { out } } }
  return out
end

--- squared_l2_norm{x=, name=} (or squared_l2_norm(x)): the sum of the
-- squares of every element of x (op squared_l2_norm; no Fluid 1.8 layer).
-- @tparam table a keyword arguments: x, any shape
-- @treturn Variable Out [1]
-- @usage local s = layers.squared_l2_norm(w)
function M.squared_l2_norm(a) return unary("squared_l2_norm", a) end

--- l1_norm{x=, name=} (or l1_norm(x)): the sum of the absolute values of
-- every element of x (op l1_norm; no Fluid 1.8 layer).
-- @tparam table a keyword arguments: x, any shape
-- @treturn Variable Out [1]
-- @usage local s = layers.l1_norm(w)
function M.l1_norm(a) return unary("l1_norm", a) end

--- squared_l2_distance{x=, y=, name=}: the squared distance of each row of
-- x to the same row of y (or to y's one row) (op squared_l2_distance; no
-- Fluid 1.8 layer).
-- @tparam table a keyword arguments: x [N, ...], y [N, ...] or [1, ...]
-- @treturn Variable Out [N, 1]
-- @treturn Variable sub_result, x - y as [N, D]
-- @usage local d = layers.squared_l2_distance{x = a, y = b}
function M.squared_l2_distance(a)
  a = args("squared_l2_distance", a, nil, nil, "x y name")
  local x = check.variable("squared_l2_distance", "x", a.x)
  local y = check.variable("squared_l2_distance", "y", a.y)
  local helper = LayerHelper("squared_l2_distance", a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  local sub = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = "squared_l2_distance", inputs = { X = { x }, Y = { y } },
                    outputs = { Out = { out }, sub_result = { sub } } }
  return out, sub
end

--- minus{x=, y=, name=}: x - y elementwise, x and y of one shape (op
-- minus; no Fluid 1.8 layer).
-- @tparam table a keyword arguments: x, y of x's shape
-- @treturn Variable Out, x's shape
-- @usage local d = layers.minus{x = a, y = b}
function M.minus(a)
  a = args("minus", a, nil, nil, "x y name")
  return binary("minus", "minus", a)
end

-- a whole-tensor flag: X -> Out [1] bool
local function flag(layer, op, a)
  a = args(layer, a, "x", nil, "x name")
  local x = check.variable(layer, "x", a.x)
  local helper = LayerHelper(layer, a)
  local out = helper:create_variable_for_type_inference("bool", true)
  helper:append_op{ type = op, inputs = { X = { x } }, outputs = { Out = { out } } }
  return out
end

--- isfinite{x=} (or isfinite(x)): one flag, true when every element of x is
-- finite (Fluid 1.8's layers.isfinite; op isfinite).
-- @tparam table a keyword arguments: x, any shape
-- @treturn Variable Out [1] bool
-- @usage local ok = layers.isfinite(loss)
function M.isfinite(a) return flag("isfinite", "isfinite", a) end

--- has_inf{x=} (or has_inf(x)): one flag, true when some element of x is
-- +inf or -inf (Fluid 1.8's layers.has_inf; op isinf).
-- @tparam table a keyword arguments: x, any shape
-- @treturn Variable Out [1] bool
-- @usage local bad = layers.has_inf(grad)
function M.has_inf(a) return flag("has_inf", "isinf", a) end

--- has_nan{x=} (or has_nan(x)): one flag, true when some element of x is
-- nan (Fluid 1.8's layers.has_nan; op isnan).
-- @tparam table a keyword arguments: x, any shape
-- @treturn Variable Out [1] bool
-- @usage local bad = layers.has_nan(grad)
function M.has_nan(a) return flag("has_nan", "isnan", a) end

return M
