--- oar.layers.rearrange: layers over the ops that rearrange elements:
-- Fluid 1.8's unstack, expand_as, diag and eye, and Paddle 2.x's flip, roll,
-- tril, triu, trace and kron (Fluid 1.8 has their ops but no fluid.layers
-- function).
-- Merged into `oar.layers`.
-- @module oar.layers.rearrange
local LayerHelper = require("oar.layer_helper")
local framework = require("oar.framework")

local check, args = LayerHelper.check, LayerHelper.args
local raise = framework.raise

local M = {}

local int_list = check.ints   -- a list of integers (or one integer, made a list of one)

-- an axis of a rank-`rank` input (negative: from the end), checked
local function axis_of(layer, key, v, rank)
  v = check.int(layer, key, v)
  if v < -rank or v >= rank then
    raise(string.format("%s: '%s' = %d is out of range [%d, %d) for an input of %d dims", layer, key, v, -rank,
                        rank, rank))
  end
  return v < 0 and v + rank or v
end

local function one_op(layer, a, op_type, x, attrs)
  local helper = LayerHelper(layer, a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = op_type, inputs = { X = { x } }, outputs = { Out = { out } }, attrs = attrs }
  return out
end

--- Splits x along `axis` into its slices (Fluid's unstack): `num` Variables
-- of x's shape without that dim. Also `unstack(x, axis)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x
-- @tparam[opt=0] int a.axis the dim split (negative: from the end)
-- @tparam[opt] int a.num the number of slices: x's size along axis (the default)
-- @param[opt] axis with a positional x
-- @treturn {Variable,...} the slices, in order
-- @usage local rows = layers.unstack{x = m, axis = 0}   -- [3, 4] -> three [4]
function M.unstack(a, axis)
  a = args("unstack", a, "x", { axis = axis }, "axis num x")
  local x = check.variable("unstack", "x", a.x)
  local ax = axis_of("unstack", "axis", a.axis == nil and 0 or a.axis, #x.shape)
  local num = a.num == nil and x.shape[ax + 1] or check.int("unstack", "num", a.num)
  if num < 0 then raise("unstack: 'num' is not given and x's dim " .. ax .. " is unknown") end
  if x.shape[ax + 1] >= 0 and num ~= x.shape[ax + 1] then
    raise(string.format("unstack: 'num' = %d differs from x's dim %d (%d)", num, ax, x.shape[ax + 1]))
  end
  if num == 0 then return {} end
  local helper = LayerHelper("unstack", a)
  local outs = {}
  for i = 1, num do outs[i] = helper:create_variable_for_type_inference(x.dtype) end
  helper:append_op{ type = "unstack", inputs = { X = { x } }, outputs = { Y = outs }, attrs = { axis = ax, num = num } }
  return outs
end

--- Repeats x to the shape of target_tensor (Fluid's expand_as): each of
-- target_tensor's dims is a multiple of x's (of one rank). Also
-- `expand_as(x, target_tensor)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x
-- @tparam Variable a.target_tensor its shape is Out's (its data are not read)
-- @tparam[opt] string a.name
-- @param[opt] target_tensor with a positional x
-- @treturn Variable target_tensor's shape, x's dtype
-- @usage local y = layers.expand_as{x = row, target_tensor = batch}   -- [1, 8] as [32, 8]
function M.expand_as(a, target_tensor)
  a = args("expand_as", a, "x", { target_tensor = target_tensor }, "name target_tensor x")
  local x = check.variable("expand_as", "x", a.x)
  local t = check.variable("expand_as", "target_tensor", a.target_tensor)
  if #t.shape ~= #x.shape then
    raise(string.format("expand_as: x has %d dims and target_tensor %d; they must have one rank", #x.shape, #t.shape))
  end
  local helper = LayerHelper("expand_as", a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = "expand_as", inputs = { X = { x }, target_tensor = { t } }, outputs = { Out = { out } } }
  return out
end

--- Reverses x along each dim in `axis` (Paddle 2.x's paddle.flip; the op's
-- attribute is Fluid 1.8's `dims`). Also `flip(x, axis)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x
-- @tparam {int,...}|int a.axis the dims reversed (negative: from the end)
-- @tparam[opt] string a.name
-- @param[opt] axis with a positional x
-- @treturn Variable x's shape and dtype
-- @usage local r = layers.flip(x, {0, 1})
function M.flip(a, axis)
  a = args("flip", a, "x", { axis = axis }, "axis name x")
  local x = check.variable("flip", "x", a.x)
  local dims = int_list("flip", "axis", a.axis)
  for i = 1, #dims do dims[i] = axis_of("flip", "axis[" .. i .. "]", dims[i], #x.shape) end
  return one_op("flip", a, "flip", x, { dims = dims })
end

--- Rolls x along dims: elements shifted past the end come back at the
-- start (Paddle 2.x's paddle.roll; the op's attribute is Fluid 1.8's
-- `dims`). Without axis, x is rolled as one flat list. Also
-- `roll(x, shifts, axis)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x
-- @tparam {int,...}|int a.shifts one shift per dim in axis (one without axis)
-- @tparam[opt] {int,...}|int a.axis the dims rolled
-- @tparam[opt] string a.name
-- @param[opt] shifts with a positional x
-- @param[opt] axis with a positional x
-- @treturn Variable x's shape and dtype
-- @usage local r = layers.roll{x = x, shifts = {1, -2}, axis = {0, 1}}
function M.roll(a, shifts, axis)
  a = args("roll", a, "x", { shifts = shifts, axis = axis }, "axis name shifts x")
  local x = check.variable("roll", "x", a.x)
  local sh = int_list("roll", "shifts", a.shifts)
  local dims = a.axis == nil and {} or int_list("roll", "axis", a.axis)
  if #dims == 0 and #sh ~= 1 then raise("roll: 'shifts' must have one value when 'axis' is not given") end
  if #dims > 0 and #dims ~= #sh then
    raise(string.format("roll: 'shifts' has %d values and 'axis' %d; they must match", #sh, #dims))
  end
  for i = 1, #dims do dims[i] = axis_of("roll", "axis[" .. i .. "]", dims[i], #x.shape) end
  return one_op("roll", a, "roll", x, { shifts = sh, dims = dims })
end

local function tri(layer, lower, a, diagonal)
  a = args(layer, a, "x", { diagonal = diagonal }, "diagonal name x")
  local x = check.variable(layer, "x", a.x)
  if #x.shape < 2 then raise(string.format("%s: x has %d dims; it must have at least 2", layer, #x.shape)) end
  return one_op(layer, a, "tril_triu", x, { diagonal = check.int(layer, "diagonal", a.diagonal, 0), lower = lower })
end

--- The lower triangle of x's last two dims, the rest zero (Paddle 2.x's
-- paddle.tril, the tril_triu op). Also `tril(x, diagonal)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x at least 2-D
-- @tparam[opt=0] int a.diagonal the last diagonal kept (> 0: above the main one)
-- @tparam[opt] string a.name
-- @param[opt] diagonal with a positional x
-- @treturn Variable x's shape and dtype
-- @usage local l = layers.tril(m)
function M.tril(a, diagonal) return tri("tril", true, a, diagonal) end

--- The upper triangle of x's last two dims, the rest zero (Paddle 2.x's
-- paddle.triu, the tril_triu op). Also `triu(x, diagonal)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x at least 2-D
-- @tparam[opt=0] int a.diagonal the first diagonal kept (> 0: above the main one)
-- @tparam[opt] string a.name
-- @param[opt] diagonal with a positional x
-- @treturn Variable x's shape and dtype
-- @usage local u = layers.triu{x = m, diagonal = 1}
function M.triu(a, diagonal) return tri("triu", false, a, diagonal) end

--- The sum of x's diagonal at `offset` in the planes of dims axis1 and
-- axis2 (Paddle 2.x's paddle.trace, the trace op). Also `trace(x)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x at least 2-D
-- @tparam[opt=0] int a.offset the diagonal (> 0: above the main one)
-- @tparam[opt=0] int a.axis1 the planes' first dim
-- @tparam[opt=1] int a.axis2 the planes' second dim
-- @tparam[opt] string a.name
-- @treturn Variable x's dims without axis1 and axis2 ([1] when none is left)
-- @usage local t = layers.trace{x = m, offset = 1}
function M.trace(a)
  a = args("trace", a, "x", nil, "axis1 axis2 name offset x")
  local x = check.variable("trace", "x", a.x)
  local r = #x.shape
  if r < 2 then raise(string.format("trace: x has %d dims; it must have at least 2", r)) end
  local a1 = axis_of("trace", "axis1", a.axis1 == nil and 0 or a.axis1, r)
  local a2 = axis_of("trace", "axis2", a.axis2 == nil and 1 or a.axis2, r)
  if a1 == a2 then raise("trace: 'axis1' and 'axis2' name the same dim " .. a1) end
  local helper = LayerHelper("trace", a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = "trace", inputs = { Input = { x } }, outputs = { Out = { out } },
                    attrs = { offset = check.int("trace", "offset", a.offset, 0), axis1 = a1, axis2 = a2 } }
  return out
end

--- The Kronecker product of x and y (Paddle 2.x's paddle.kron): their dims
-- padded with leading 1s to one rank. Also `kron(x, y)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x
-- @tparam Variable a.y x's dtype
-- @tparam[opt] string a.name
-- @param[opt] y with a positional x
-- @treturn Variable dims x.shape[i] * y.shape[i]
-- @usage local k = layers.kron(a, b)
function M.kron(a, y)
  a = args("kron", a, "x", { y = y }, "name x y")
  local x = check.variable("kron", "x", a.x)
  local yv = check.variable("kron", "y", a.y)
  if x.dtype ~= yv.dtype then
    raise(string.format("kron: x is %s and y %s; they must have one dtype", tostring(x.dtype), tostring(yv.dtype)))
  end
  local helper = LayerHelper("kron", a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = "kron", inputs = { X = { x }, Y = { yv } }, outputs = { Out = { out } } }
  return out
end

--- The square matrix with `diagonal` on its main diagonal, zero elsewhere
-- (Fluid's diag). Also `diag(diagonal)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.diagonal 1-D, n values
-- @treturn Variable [n, n] of diagonal's dtype
-- @usage local d = layers.diag(v)
function M.diag(a)
  a = args("diag", a, "diagonal", nil, "diagonal")
  local d = check.variable("diag", "diagonal", a.diagonal)
  if #d.shape ~= 1 then raise(string.format("diag: 'diagonal' has %d dims; it must be 1-D", #d.shape)) end
  local helper = LayerHelper("diag", a)
  local out = helper:create_variable_for_type_inference(d.dtype)
  helper:append_op{ type = "diag", inputs = { Diagonal = { d } }, outputs = { Out = { out } } }
  return out
end

--- The identity matrix [num_rows, num_columns], repeated over `batch_shape`
-- leading dims when given (Fluid's eye). Also `eye(num_rows)`.
-- @tparam table a keyword arguments:
-- @tparam int a.num_rows
-- @tparam[opt] int a.num_columns (default num_rows)
-- @tparam[opt] {int,...} a.batch_shape leading dims the matrix is repeated over
-- @tparam[opt="float32"] string a.dtype float32, float64, int32 or int64
-- @tparam[opt] string a.name
-- @treturn Variable [batch_shape..., num_rows, num_columns]
-- @usage local i3 = layers.eye{num_rows = 3, batch_shape = {2}}   -- [2, 3, 3]
function M.eye(a)
  a = args("eye", a, "num_rows", nil, "batch_shape dtype name num_columns num_rows")
  local rows = check.int("eye", "num_rows", a.num_rows)
  if rows < 0 then check.fail("eye", "num_rows", "a non-negative integer", rows) end
  local cols = a.num_columns == nil and rows or check.int("eye", "num_columns", a.num_columns)
  if cols < 0 then check.fail("eye", "num_columns", "a non-negative integer", cols) end
  local dtype = check.dtype("eye", "dtype", a.dtype, "float32")
  if dtype ~= "float32" and dtype ~= "float64" and dtype ~= "int32" and dtype ~= "int64" then
    check.fail("eye", "dtype", "float32, float64, int32 or int64", dtype)
  end
  local code = require("oar.dtypes").enum(dtype)
  local helper = LayerHelper("eye", a)
  local out = helper:create_variable_for_type_inference(dtype)
  helper:append_op{ type = "eye", outputs = { Out = { out } },
                    attrs = { num_rows = rows, num_columns = cols, dtype = code } }
  if a.batch_shape == nil then return out end
  local bs = int_list("eye", "batch_shape", a.batch_shape)
  local L = require("oar.layers")
  local shape, times = {}, {}
  for i, b in ipairs(bs) do
    if b < 1 then check.fail("eye", "batch_shape[" .. i .. "]", "a positive integer", b) end
    shape[i], times[i] = 1, b
  end
  shape[#bs + 1], shape[#bs + 2], times[#bs + 1], times[#bs + 2] = rows, cols, 1, 1
  return L.expand(L.reshape(out, shape), times)
end

return M
