--- oar.layers.math: arithmetic on Variables (Fluid's math_op_patch): a + b,
-- a - b, a * b, a / b, a ^ b, -a, with numbers on either side. A number
-- with a Variable becomes a `scale` op where it can; otherwise a constant
-- shaped like the Variable and an elementwise op.
-- @module oar.layers.math
local framework = require("oar.framework")
local unique_name = require("oar.unique_name")

local is_variable, raise = framework.is_variable, framework.raise

local M = {}

local function block_of(v) return v.block.program:current_block() end

local function tmp_like(v, dtype)
  return block_of(v):create_var{ name = unique_name.generate("tmp"), dtype = dtype or v.dtype or "float32" }
end

local function scale(x, s, b)
  local out = tmp_like(x)
  block_of(x):append_op{ type = "scale", inputs = { X = { x } }, outputs = { Out = { out } },
                         attrs = { scale = s, bias = b or 0.0, bias_after_scale = true } }
  return out
end

-- a constant with x's shape and dtype (batch dims follow x at run time)
local function constant_like(x, value)
  local shape = x.shape
  local batch_idx
  local fixed = {}
  for i, d in ipairs(shape) do
    if d < 0 and not batch_idx then batch_idx = i - 1 end
    fixed[i] = d < 0 and 1 or d
  end
  local out = tmp_like(x)
  if batch_idx then
    block_of(x):append_op{ type = "fill_constant_batch_size_like", inputs = { Input = { x } },
      outputs = { Out = { out } },
      attrs = { shape = fixed, dtype = x.dtype or "float32", value = value,
                input_dim_idx = batch_idx, output_dim_idx = batch_idx } }
  else
    block_of(x):append_op{ type = "fill_constant", outputs = { Out = { out } },
      attrs = { shape = #fixed > 0 and fixed or { 1 }, dtype = x.dtype or "float32", value = value } }
  end
  out.stop_gradient = true
  return out
end

local function cast(x, dtype)
  local out = tmp_like(x, dtype)
  block_of(x):append_op{ type = "cast", inputs = { X = { x } }, outputs = { Out = { out } },
                         attrs = { in_dtype = x.dtype, out_dtype = dtype } }
  return out
end

local function elementwise(kind, x, y)
  if y.dtype and x.dtype and y.dtype ~= x.dtype then y = cast(y, x.dtype) end
  local out = tmp_like(x)
  block_of(x):append_op{ type = "elementwise_" .. kind, inputs = { X = { x }, Y = { y } },
                         outputs = { Out = { out } }, attrs = { axis = -1 } }
  return out
end

local function operand_error(op, a, b)
  raise(string.format("Variable %s: expected Variables or numbers, got %s and %s", op,
    framework.describe(a), framework.describe(b)))
end

local function binary(op, kind, on_scalar_right, on_scalar_left)
  return function(a, b)
    local va, vb = is_variable(a), is_variable(b)
    if va and vb then return elementwise(kind, a, b) end
    if va and type(b) == "number" then return on_scalar_right(a, b) end
    if vb and type(a) == "number" then return on_scalar_left(a, b) end
    operand_error(op, a, b)
  end
end

--- `a + b` for Variables and numbers (also the `+` operator on Variables).
-- A number becomes a `scale` op; two Variables an `elementwise_add`.
-- @function add
-- @tparam Variable|number a
-- @tparam Variable|number b
-- @treturn Variable
-- @raise when neither operand is a Variable or one is not a number
-- @usage local y = x + 1   -- the same as require("oar.layers.math").add(x, 1)
M.add = binary("+", "add",
  function(v, n) return scale(v, 1.0, n) end,
  function(n, v) return scale(v, 1.0, n) end)

--- `a - b` (the `-` operator on Variables).
-- @function sub
-- @tparam Variable|number a
-- @tparam Variable|number b
-- @treturn Variable
-- @usage local d = 1 - x
M.sub = binary("-", "sub",
  function(v, n) return scale(v, 1.0, -n) end,
  function(n, v) return scale(v, -1.0, n) end)

--- `a * b`, elementwise (the `*` operator on Variables).
-- @function mul
-- @tparam Variable|number a
-- @tparam Variable|number b
-- @treturn Variable
-- @usage local y = 2 * x
M.mul = binary("*", "mul",
  function(v, n) return scale(v, n, 0.0) end,
  function(n, v) return scale(v, n, 0.0) end)

--- `a / b`, elementwise (the `/` operator on Variables).
-- @function div
-- @tparam Variable|number a
-- @tparam Variable|number b
-- @treturn Variable
-- @raise on division by the number 0
-- @usage local half = x / 2
M.div = binary("/", "div",
  function(v, n)
    if n == 0 then raise("Variable /: division by the number 0") end
    return scale(v, 1.0 / n, 0.0)
  end,
  function(n, v) return elementwise("div", constant_like(v, n), v) end)

--- `a ^ b`, elementwise (the `^` operator on Variables).
-- @function pow
-- @tparam Variable|number a
-- @tparam Variable|number b
-- @treturn Variable
-- @usage local sq = x ^ 2
M.pow = binary("^", "pow",
  function(v, n)
    local out = tmp_like(v)
    block_of(v):append_op{ type = "pow", inputs = { X = { v } }, outputs = { Out = { out } },
                           attrs = { factor = n } }
    return out
  end,
  function(n, v) return elementwise("pow", constant_like(v, n), v) end)

--- `-a` (the unary minus on Variables).
-- @tparam Variable a
-- @treturn Variable
-- @usage local m = -x
function M.neg(a) return scale(a, -1.0, 0.0) end

--- Installs the operators (`+ - * / ^` and unary minus) and `Variable:astype`
-- on Variable and Parameter; done when the module loads.
-- @usage require("oar.layers.math").patch()
function M.patch()
  for _, mt in ipairs({ framework.VariableMT, framework.ParameterMT }) do
    mt.__add, mt.__sub, mt.__mul, mt.__div, mt.__pow = M.add, M.sub, M.mul, M.div, M.pow
    mt.__unm = function(a) return M.neg(a) end
  end
  --- `v:astype(dtype)`: v cast to `dtype` (a `cast` op), like Fluid's.
  -- @function Variable:astype
  -- @tparam string dtype
  -- @treturn Variable
  -- @usage local f = label:astype("float32")
  framework.Variable.astype = function(self, dtype)
    if not is_variable(self) then raise("Variable:astype: call it with ':' on a Variable, got " .. framework.describe(self)) end
    local require_dtypes = require("oar.dtypes")
    return cast(self, require_dtypes.check(dtype, "Variable:astype"))
  end
end
M.patch()

return M
