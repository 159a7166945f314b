--- Element types: names, Fluid's `VarType.Type` numbers and C types.
--
-- Each dtype, its enum number and its C element type:
--
-- * `bool` (0): `bool`
-- * `int16` (1): `int16_t`
-- * `int32` (2): `int32_t`
-- * `int64` (3): `int64_t`
-- * `float16` (4): `uint16_t`, the raw IEEE half bits
-- * `float32` (5): `float`
-- * `float64` (6): `double`
-- * `uint8` (20): `uint8_t`
-- * `int8` (21): `int8_t`
--
-- Aliases accepted wherever a dtype is: `float`, `fp32` (float32),
-- `double`, `fp64` (float64), `half`, `fp16` (float16), `int` (int32),
-- `long` (int64).
-- @module oar.dtypes
-- @usage print(oar.dtypes.name("double"), oar.dtypes.enum("int64"))   --> float64  3
local M = {}

-- name -> {enum, ctype}; enum values are Fluid's VarType.Type (see oar.h)
local by_name = {
  bool    = { enum = 0,  ctype = "bool" },
  int16   = { enum = 1,  ctype = "int16_t" },
  int32   = { enum = 2,  ctype = "int32_t" },
  int64   = { enum = 3,  ctype = "int64_t" },
  float16 = { enum = 4,  ctype = "uint16_t" },   -- raw IEEE half bits
  float32 = { enum = 5,  ctype = "float" },
  float64 = { enum = 6,  ctype = "double" },
  uint8   = { enum = 20, ctype = "uint8_t" },
  int8    = { enum = 21, ctype = "int8_t" },
}

-- spellings users bring from numpy and C
local aliases = {
  float = "float32", double = "float64", half = "float16",
  fp16 = "float16", fp32 = "float32", fp64 = "float64",
  int = "int32", long = "int64",
}

local by_enum = {}
for name, info in pairs(by_name) do by_enum[info.enum] = name end

--- The canonical name of a dtype.
-- @tparam string|int d a name, an alias or an enum number
-- @treturn ?string the name, or nil when `d` is no dtype
-- @usage print(oar.dtypes.name(5))   --> float32
function M.name(d)
  if type(d) == "string" then
    if by_name[d] then return d end
    return aliases[d]
  elseif type(d) == "number" then
    return by_enum[d]
  end
  return nil
end

--- The canonical name of a dtype, or an error listing the dtypes.
-- @tparam string|int d a name, an alias or an enum number
-- @tparam[opt="dtype"] string who the function named in the error
-- @treturn string
-- @usage local dt = oar.dtypes.check(user_dtype, "my_layer")
function M.check(d, who)
  local name = M.name(d)
  if not name then
    error(string.format("%s: unknown dtype %s (expected one of float32, float64, " ..
      "int32, int64, bool, uint8, int8, int16, float16)",
      who or "dtype", type(d) == "string" and ("'" .. d .. "'") or tostring(d)), 0)
  end
  return name
end

--- Fluid's `VarType.Type` number of a dtype.
-- @tparam string|int d
-- @tparam[opt] string who the function named in the error
-- @treturn int
-- @usage print(oar.dtypes.enum("float32"))   --> 5
function M.enum(d, who)
  return by_name[M.check(d, who)].enum
end

--- The C element type of a dtype, for `ffi.cast`.
-- @tparam string|int d
-- @tparam[opt] string who the function named in the error
-- @treturn string `"float"`, `"int64_t"`, ...
-- @usage local p = ffi.cast(oar.dtypes.ctype("int64") .. " *", t:data())
function M.ctype(d, who)
  return by_name[M.check(d, who)].ctype
end

--- Whether a dtype is floating point (float16, float32, float64).
-- @tparam string|int d
-- @treturn boolean
-- @usage assert(oar.dtypes.is_float("double"))
function M.is_float(d)
  local n = M.name(d)
  return n == "float32" or n == "float64" or n == "float16"
end

--- Whether a dtype is an integer type (int8 to int64, uint8).
-- @tparam string|int d
-- @treturn boolean
-- @usage assert(oar.dtypes.is_integer("int64"))
function M.is_integer(d)
  local n = M.name(d)
  return n == "int32" or n == "int64" or n == "int16" or n == "int8" or n == "uint8"
end

--- The number held by IEEE 754 half-precision bits.
-- @tparam int h the 16 bits, 0..65535
-- @treturn number
-- @usage print(oar.dtypes.half_to_number(0x3c00))   --> 1
function M.half_to_number(h)
  local sign = (h >= 0x8000) and -1 or 1
  local exp = math.floor(h / 0x400) % 0x20
  local frac = h % 0x400
  if exp == 0 then return sign * frac * 2 ^ -24 end
  if exp == 31 then
    if frac == 0 then return sign * math.huge end
    return 0 / 0
  end
  return sign * (1 + frac / 1024) * 2 ^ (exp - 15)
end

--- The IEEE 754 half-precision bits nearest to a number (round to
-- nearest even is not guaranteed on ties; overflow gives infinity).
-- @tparam number x
-- @treturn int the 16 bits
-- @usage print(oar.dtypes.number_to_half(1))   --> 15360 (0x3c00)
function M.number_to_half(x)
  if x ~= x then return 0x7e00 end
  local sign = 0
  if x < 0 or (x == 0 and 1 / x < 0) then sign = 0x8000; x = -x end
  if x == math.huge then return sign + 0x7c00 end
  if x >= 65520 then return sign + 0x7c00 end         -- rounds to infinity
  if x < 2 ^ -14 then                                  -- subnormal
    local frac = math.floor(x * 2 ^ 24 + 0.5)
    return sign + frac
  end
  local m, e = math.frexp(x)                           -- x = m * 2^e, m in [0.5, 1)
  local exp = e - 1 + 15
  local frac = math.floor((m * 2 - 1) * 1024 + 0.5)
  if frac == 1024 then frac = 0; exp = exp + 1 end
  if exp >= 31 then return sign + 0x7c00 end
  return sign + exp * 0x400 + frac
end

return M
