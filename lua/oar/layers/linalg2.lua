--- oar.layers.linalg2: more linear algebra and norms (issue 22): Fluid
-- 1.8's cos_sim, l2_normalize (op norm) and bilinear_tensor_product; dist
-- and allclose (Paddle 2.x names and arguments, table form);
-- frobenius_norm (no layer in Fluid: the op's name, reduce-style arguments).
-- @module oar.layers.linalg2
local LayerHelper = require("oar.layer_helper")

local check, args = LayerHelper.check, LayerHelper.args

local M = {}

--- cos_sim{X=, Y=}: the cosine similarity of each row of X with the same
-- row of Y, or with Y's one row (Fluid 1.8's layers.cos_sim; op cos_sim).
-- @tparam table a keyword arguments: X [N, D], Y [N, D] or [1, D]
-- @treturn Variable Out [N, 1]
-- @usage local sim = layers.cos_sim{X = query, Y = doc}
function M.cos_sim(a)
  a = args("cos_sim", a, nil, nil, "X Y name")
  local x = check.variable("cos_sim", "X", a.X)
  local y = check.variable("cos_sim", "Y", a.Y)
  local helper = LayerHelper("cos_sim", a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  local xnorm = helper:create_variable_for_type_inference(x.dtype)
  local ynorm = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = "cos_sim", inputs = { X = { x }, Y = { y } },
                    outputs = { Out = { out }, XNorm = { xnorm }, YNorm = { ynorm } } }
  return out
end

--- dist{x=, y=, p=2, name=}: the p-norm of x - y, x and y broadcast
-- against each other (Paddle 2.x's paddle.dist; op dist). p = 0 counts the
-- nonzero differences, p = math.huge / -math.huge takes the largest /
-- smallest |x - y|.
-- @tparam table a keyword arguments: x, y broadcastable with x, p
-- @treturn Variable Out [1]
-- @usage local d = layers.dist{x = a, y = b, p = 1}
function M.dist(a)
  a = args("dist", a, nil, nil, "x y p name")
  local x = check.variable("dist", "x", a.x)
  local y = check.variable("dist", "y", a.y)
  local helper = LayerHelper("dist", a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = "dist", inputs = { X = { x }, Y = { y } }, outputs = { Out = { out } },
                    attrs = { p = check.number("dist", "p", a.p, 2.0) } }
  return out
end

--- l2_normalize{x=, axis=, epsilon=1e-12, name=}: x / sqrt(sum(x^2) +
-- epsilon) along axis (Fluid 1.8's layers.l2_normalize; op norm). A 1-D x
-- is normalized along axis 0, as Fluid does.
-- @tparam table a keyword arguments: x, axis (negative counts from the end), epsilon
-- @treturn Variable Out, x's shape
-- @usage local u = layers.l2_normalize{x = emb, axis = 1}
function M.l2_normalize(a)
  a = args("l2_normalize", a, nil, nil, "x axis epsilon name")
  local x = check.variable("l2_normalize", "x", a.x)
  local axis = check.int("l2_normalize", "axis", a.axis)
  if x.shape and #x.shape == 1 then axis = 0 end
  local helper = LayerHelper("l2_normalize", a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  local norm = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = "norm", inputs = { X = { x } }, outputs = { Out = { out }, Norm = { norm } },
                    attrs = { axis = axis, epsilon = check.number("l2_normalize", "epsilon", a.epsilon, 1e-12) } }
  return out
end

--- frobenius_norm{input=, dim=, keep_dim=false, name=} (or
-- frobenius_norm(input, dim, keep_dim)): sqrt of the sum of squares over
-- dim, every axis when dim is nil (op frobenius_norm; no Fluid 1.8 layer:
-- the op's name, reduce_sum's arguments).
-- @tparam Variable|table a the input, or keyword arguments: input, dim (an
-- integer or a list), keep_dim
-- @tparam[opt] int|table dim the reduced axes (positional form)
-- @tparam[opt] bool keep_dim keep the reduced axes as 1 (positional form)
-- @treturn Variable Out
-- @usage local n = layers.frobenius_norm{input = w, dim = { 0, 1 }}
function M.frobenius_norm(a, dim, keep_dim)
  a = args("frobenius_norm", a, "input", { dim = dim, keep_dim = keep_dim }, "dim input keep_dim name")
  local x = check.variable("frobenius_norm", "input", a.input)
  local d = a.dim
  if type(d) == "number" then d = { d } end
  if d ~= nil then
    if type(d) ~= "table" then check.fail("frobenius_norm", "dim", "an integer or a list of integers", d) end
    for _, v in ipairs(d) do check.int("frobenius_norm", "dim", v) end
  end
  local helper = LayerHelper("frobenius_norm", a)
  return helper:unary("frobenius_norm", x, { dim = d or { 0 }, reduce_all = d == nil,
    keep_dim = check.boolean("frobenius_norm", "keep_dim", a.keep_dim, false) })
end

--- allclose{x=, y=, rtol=1e-5, atol=1e-8, equal_nan=false, name=}: one
-- flag, true when |x - y| <= atol + rtol |y| everywhere (Paddle 2.x's
-- paddle.allclose; op allclose with Fluid 1.8's float attributes).
-- @tparam table a keyword arguments: x, y of x's shape, rtol, atol, equal_nan
-- @treturn Variable Out [1] bool
-- @usage local same = layers.allclose{x = a, y = b, atol = 1e-6}
function M.allclose(a)
  a = args("allclose", a, nil, nil, "x y rtol atol equal_nan name")
  local x = check.variable("allclose", "x", a.x)
  local y = check.variable("allclose", "y", a.y)
  local helper = LayerHelper("allclose", a)
  local out = helper:create_variable_for_type_inference("bool", true)
  helper:append_op{ type = "allclose", inputs = { Input = { x }, Other = { y } }, outputs = { Out = { out } },
                    attrs = { rtol = check.number("allclose", "rtol", a.rtol, 1e-5),
                              atol = check.number("allclose", "atol", a.atol, 1e-8),
                              equal_nan = check.boolean("allclose", "equal_nan", a.equal_nan, false) } }
  return out
end

--- bilinear_tensor_product{x=, y=, size=, act=, name=, param_attr=,
-- bias_attr=}: Out[b, k] = x[b] W[k] y[b]^T + bias[k], with a learned
-- W [size, M, N] and bias [1, size] (Fluid 1.8's
-- layers.bilinear_tensor_product; op bilinear_tensor_product).
-- @tparam table a keyword arguments: x [B, M], y [B, N], size K, act,
-- param_attr, bias_attr (`false`: no bias)
-- @treturn Variable Out [B, size]
-- @usage local h = layers.bilinear_tensor_product{x = u, y = v, size = 8, act = "tanh"}
function M.bilinear_tensor_product(a)
  a = args("bilinear_tensor_product", a, nil, nil, "x y size act name param_attr bias_attr")
  local layer = "bilinear_tensor_product"
  local x = check.variable(layer, "x", a.x)
  local y = check.variable(layer, "y", a.y)
  local size = check.positive_int(layer, "size", a.size)
  local helper = LayerHelper(layer, a)
  local dtype = helper:input_dtype({ x })
  local w = helper:create_parameter(helper:param_attr(), { size, x.shape[2], y.shape[2] }, dtype, false)
  local inputs = { X = { x }, Y = { y }, Weight = { w } }
  local battr = helper:bias_attr()
  if battr then
    inputs.Bias = { helper:create_parameter(battr, { 1, size }, dtype, true) }
  end
  local out = helper:create_variable_for_type_inference(dtype)
  helper:append_op{ type = layer, inputs = inputs, outputs = { Out = { out } } }
  return helper:append_activation(out)
end

return M
