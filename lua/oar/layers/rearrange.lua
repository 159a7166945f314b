--- oar.layers.rearrange: layers over the ops that rearrange elements:
-- Fluid 1.8's unstack and expand_as, and Paddle 2.x's flip, roll, tril and
-- triu (Fluid 1.8 has their ops but no fluid.layers function).
-- Merged into `oar.layers`.
-- @module oar.layers.rearrange
local LayerHelper = require("oar.layer_helper")
local framework = require("oar.framework")

local check, args = LayerHelper.check, LayerHelper.args
local raise, is_variable = framework.raise, framework.is_variable

local M = {}

-- a list of integers (one integer is a list of one); `empty_ok` allows {}
local function int_list(layer, key, v, empty_ok)
  if type(v) == "number" then v = { v } end
  if type(v) ~= "table" or is_variable(v) or (#v == 0 and not empty_ok) then
    check.fail(layer, key, "an integer or a list of integers", v)
  end
  for i = 1, #v do
    if type(v[i]) ~= "number" or v[i] % 1 ~= 0 then check.fail(layer, key .. "[" .. i .. "]", "an integer", v[i]) end
  end
  return v
end

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

return M
