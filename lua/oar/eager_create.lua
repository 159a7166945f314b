--- oar.eager's creation functions (docs/eager.md, "The contract"):
-- zeros, ones, full, eye, rand, randn, randint, arange, linspace, seed and
-- tensor; eager.lua installs them. Each runs a registered op
-- (fill_constant, uniform_random, gaussian_random, floor, cast), except
-- eye, arange and linspace, which write their values from Lua into a new
-- tensor (oar registers no op for them).
-- @module oar.eager_create
local tensor = require("oar.tensor")
local dtypes = require("oar.dtypes")

local is_tensor = tensor.is_tensor

local M = {}
-- eager.lua's: its op runner, dtype check and error function (install)
local run, check_dtype, fail

local function run1(opname, x, attrs)
  return run(opname, { { "X", x } }, { { "Out", 1 } }, attrs)[1]
end

-- a shape as numbers or one table, then an optional dtype string
local function shape_args(who, ...)
  local n = select("#", ...)
  local shape, rest = {}, 1
  local first = (...)
  if type(first) == "table" and not is_tensor(first) then
    for i = 1, #first do shape[i] = first[i] end
    rest = 2
  else
    while rest <= n and type(select(rest, ...)) == "number" do
      shape[#shape + 1] = select(rest, ...)
      rest = rest + 1
    end
  end
  for i, d in ipairs(shape) do
    if type(d) ~= "number" or d < 0 or d % 1 ~= 0 then
      fail(string.format("%s: size %d of the shape is %s, expected a non-negative integer", who, i, tostring(d)))
    end
  end
  local dtype = select(rest, ...)
  if dtype ~= nil and type(dtype) ~= "string" then
    fail(string.format("%s: expected a dtype string after the shape, got %s", who, type(dtype)))
  end
  return shape, dtype or "float32", rest
end


local function fill_constant(shape, value, dtype)
  local attrs = { shape = shape, dtype = check_dtype(dtype, "oar.full") }
  -- str_value carries the exact value (the float attr is float32)
  if value ~= 0 then attrs.str_value = string.format("%.17g", value) end
  return run("fill_constant", {}, { { "Out", 1 } }, attrs)[1]
end

--- Zeros of a shape given as numbers or one table, then an optional dtype (default "float32").
-- @usage local z = oar.zeros(3, 4)   -- also oar.zeros({3, 4}, "int64")
function M.zeros(...)
  local shape, dtype = shape_args("oar.zeros", ...)
  return fill_constant(shape, 0, dtype)
end

--- Ones (the shape as for `zeros`).
-- @usage local o = oar.ones{3, 4}
function M.ones(...)
  local shape, dtype = shape_args("oar.ones", ...)
  return fill_constant(shape, 1, dtype)
end

--- A tensor of one value: shape table, value, optional dtype.
-- @usage local s = oar.full({2, 2}, 7)
function M.full(shape, value, dtype)
  if type(shape) ~= "table" then fail("oar.full: expected a shape table first, like oar.full({2, 2}, 7)") end
  if type(value) ~= "number" then fail("oar.full: expected a number value, got " .. type(value)) end
  local s = shape_args("oar.full", shape)
  return fill_constant(s, value, dtype or "float32")
end

-- writes values into a fresh tensor's data (creation only: no math here)
local function from_values(shape, dtype, f)
  local t = M.zeros(shape, dtype)
  local p = t:data()
  if p ~= nil then
    local bool = dtype == "bool"
    for i = 0, t:numel() - 1 do
      local v = f(i)
      p[i] = bool and (v ~= 0) or v
    end
  end
  return t
end

--- The identity matrix, n x n or n x m.
-- @usage local i = oar.eye(3)
function M.eye(n, m, dtype)
  if type(m) == "string" then m, dtype = nil, m end
  m = m or n
  if type(n) ~= "number" or type(m) ~= "number" then fail("oar.eye: expected the number of rows (and columns)") end
  return from_values({ n, m }, dtype or "float32", function(i)
    return (i % m == math.floor(i / m)) and 1 or 0
  end)
end

--- Uniform values in [0, 1) from the global generator (`oar.seed(n)` makes them repeatable).
-- @usage local r = oar.rand(3, 4)
function M.rand(...)
  local shape, dtype = shape_args("oar.rand", ...)
  return run("uniform_random", {}, { { "Out", 1 } },
    { shape = shape, min = 0, max = 1, seed = 0, dtype = check_dtype(dtype, "oar.rand") })[1]
end

--- Standard normal values from the global generator.
-- @usage local r = oar.randn(3, 4, "float64")
function M.randn(...)
  local shape, dtype = shape_args("oar.randn", ...)
  return run("gaussian_random", {}, { { "Out", 1 } },
    { shape = shape, mean = 0, std = 1, seed = 0, dtype = check_dtype(dtype, "oar.randn") })[1]
end

--- Integers lo <= v < hi (int64 unless a dtype is given after the shape).
-- @usage local dice = oar.randint(1, 7, {10})
function M.randint(lo, hi, ...)
  if type(lo) ~= "number" or type(hi) ~= "number" or lo % 1 ~= 0 or hi % 1 ~= 0 or hi <= lo then
    fail("oar.randint: expected integers lo < hi, got " .. tostring(lo) .. ", " .. tostring(hi))
  end
  local shape, dtype = shape_args("oar.randint", ...)
  if select("#", ...) < 2 then dtype = "int64" end
  -- uniform float64 in [lo, hi), floored: every integer equally likely
  local u = run("uniform_random", {}, { { "Out", 1 } },
    { shape = shape, min = lo, max = hi, seed = 0, dtype = dtypes.enum("float64") })[1]
  local f = run1("floor", u)
  return run1("cast", f, { in_dtype = dtypes.enum("float64"), out_dtype = check_dtype(dtype, "oar.randint") })
end

--- a, a + step, ... while below b (above b for a negative step); `arange(n)` is 0 .. n-1.
-- @usage local r = oar.arange(1, 5)   -- 1, 2, 3, 4
function M.arange(a, b, step, dtype)
  if type(b) ~= "number" then a, b, step, dtype = 0, a, nil, b end
  if type(step) == "string" then step, dtype = nil, step end
  step = step or 1
  if type(a) ~= "number" or type(b) ~= "number" or type(step) ~= "number" then
    fail("oar.arange: expected numbers: oar.arange(a, b, step) or oar.arange(n)")
  end
  if step == 0 then fail("oar.arange: step is 0") end
  local n = math.max(0, math.ceil((b - a) / step))
  return from_values({ n }, dtype or "float32", function(i) return a + i * step end)
end

--- n values from a to b, both included.
-- @usage local l = oar.linspace(0, 1, 5)
function M.linspace(a, b, n, dtype)
  if type(n) ~= "number" or n < 1 or n % 1 ~= 0 then fail("oar.linspace: n must be a positive integer") end
  if type(a) ~= "number" or type(b) ~= "number" then fail("oar.linspace: expected numbers a and b") end
  local step = n > 1 and (b - a) / (n - 1) or 0
  return from_values({ n }, dtype or "float32", function(i)
    if i == n - 1 and n > 1 then return b end
    return a + i * step
  end)
end

-- `seed` is oar.flags.seed: `oar.seed(n)` makes rand, randn and randint repeatable
M.seed = require("oar.flags").seed

--- A tensor from a Lua table or a number (like `oar.Tensor`).
-- @usage local t = oar.eager.tensor({1, 2, 3})
function M.tensor(values, dtype)
  if type(values) == "number" then values = { values } end
  return tensor(values, dtype)
end

--- Puts the creation functions into oar.eager (eager.lua calls it).
-- @tparam table eager the oar.eager module
-- @tparam table internals run and check_dtype
-- @local
function M.install(eager, internals)
  run, check_dtype, fail = internals.run, internals.check_dtype, eager._fail
  eager._install_functions(M)
end

return M
