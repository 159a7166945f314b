--- oar.initializer: ops that give a parameter its first value, appended to the
-- block that declares it (the startup program's global block, for layers).
-- Xavier and MSRA compute fan_in/fan_out from the shape like Fluid.
-- @module oar.initializer
local framework = require("oar.framework")
local raise = require("oar.framework").raise
local argcheck = require("oar.argcheck")

local M = {}

local Initializer = {}
Initializer.__index = Initializer
Initializer.__call = function(self, var, block) return self:apply(var, block) end

local function make(kind, fields)
  fields.kind = kind
  fields._is_initializer = true
  return setmetatable(fields, Initializer)
end

local function opt_number(spec, key, default, who)
  local v = spec[key]
  if v == nil then return default end
  if type(v) ~= "number" then
    raise(string.format("%s: '%s' must be a number, got %s", who, key, type(v)))
  end
  return v
end

-- the options table (a number stands for `positional_key`), its keys checked
local function spec_of(spec, who, positional_key, known)
  if spec == nil then return {} end
  if type(spec) == "number" and positional_key then return { [positional_key] = spec } end
  if type(spec) ~= "table" then raise(who .. ": expected a table of options, got " .. type(spec)) end
  return argcheck.keys("oar.initializer." .. who, spec, known)
end

--- Fills the parameter with one value. Also `Constant(value)`; `ConstantInitializer` is
-- Fluid's name.
-- @tparam[opt] table|number spec options, or the value:
-- @tparam[opt=0.0] number spec.value
-- @tparam[opt=false] bool spec.force_cpu keep the filled tensor on the CPU
-- @treturn Initializer
-- @raise on an unknown option or a value that is not a number
-- @usage local attr = oar.ParamAttr{initializer = oar.initializer.Constant{value = 0.1}}
function M.Constant(spec)
  spec = spec_of(spec, "Constant", "value", "value force_cpu")
  return make("constant", { value = opt_number(spec, "value", 0.0, "Constant"),
                            force_cpu = spec.force_cpu and true or false })
end

--- Draws from Uniform(low, high) (also `UniformInitializer`).
-- @tparam[opt] table spec options:
-- @tparam[opt=-1.0] number spec.low
-- @tparam[opt=1.0] number spec.high
-- @tparam[opt=0] int spec.seed 0: the program's random_seed
-- @treturn Initializer
-- @raise when low > high
-- @usage local init = oar.initializer.Uniform{low = -0.1, high = 0.1}
function M.Uniform(spec)
  spec = spec_of(spec, "Uniform", nil, "low high seed")
  local low, high = opt_number(spec, "low", -1.0, "Uniform"), opt_number(spec, "high", 1.0, "Uniform")
  if low > high then raise("Uniform: 'low' must not exceed 'high'") end
  return make("uniform", { low = low, high = high, seed = opt_number(spec, "seed", 0, "Uniform") })
end

--- Draws from Normal(loc, scale) (also `NormalInitializer`).
-- @tparam[opt] table spec options:
-- @tparam[opt=0.0] number spec.loc the mean
-- @tparam[opt=1.0] number spec.scale the standard deviation
-- @tparam[opt=0] int spec.seed 0: the program's random_seed
-- @treturn Initializer
-- @usage local init = oar.initializer.Normal{loc = 0, scale = 0.01}
function M.Normal(spec)
  spec = spec_of(spec, "Normal", nil, "loc scale seed")
  return make("normal", { loc = opt_number(spec, "loc", 0.0, "Normal"),
                          scale = opt_number(spec, "scale", 1.0, "Normal"),
                          seed = opt_number(spec, "seed", 0, "Normal") })
end

--- Draws from Normal(loc, scale) truncated to two standard deviations
-- (also `TruncatedNormalInitializer`).
-- @tparam[opt] table spec options:
-- @tparam[opt=0.0] number spec.loc
-- @tparam[opt=1.0] number spec.scale
-- @tparam[opt=0] int spec.seed 0: the program's random_seed
-- @treturn Initializer
-- @usage local init = oar.initializer.TruncatedNormal{scale = 0.02}
function M.TruncatedNormal(spec)
  spec = spec_of(spec, "TruncatedNormal", nil, "loc scale seed")
  return make("truncated_normal", { loc = opt_number(spec, "loc", 0.0, "TruncatedNormal"),
                                    scale = opt_number(spec, "scale", 1.0, "TruncatedNormal"),
                                    seed = opt_number(spec, "seed", 0, "TruncatedNormal") })
end

--- Xavier/Glorot: Uniform(+-sqrt(6 / (fan_in + fan_out))), or
-- Normal(0, sqrt(2 / (fan_in + fan_out))) when not uniform. The fans come
-- from the shape (see compute_fans) unless given. Also `XavierInitializer`.
-- @tparam[opt] table spec options:
-- @tparam[opt=true] bool spec.uniform
-- @tparam[opt] number spec.fan_in
-- @tparam[opt] number spec.fan_out
-- @tparam[opt=0] int spec.seed 0: the program's random_seed
-- @treturn Initializer
-- @usage layers.fc{input = x, size = 64, param_attr = oar.ParamAttr{initializer = oar.initializer.Xavier()}}
function M.Xavier(spec)
  spec = spec_of(spec, "Xavier", nil, "uniform fan_in fan_out seed")
  local uniform = spec.uniform
  if uniform == nil then uniform = true end
  return make("xavier", { uniform = uniform, fan_in = spec.fan_in, fan_out = spec.fan_out,
                          seed = opt_number(spec, "seed", 0, "Xavier") })
end

--- MSRA/He: Uniform(+-sqrt(6 / fan_in)), or Normal(0, sqrt(2 / fan_in))
-- when not uniform. fan_in comes from the shape unless given. Also
-- `MSRAInitializer`.
-- @tparam[opt] table spec options:
-- @tparam[opt=true] bool spec.uniform
-- @tparam[opt] number spec.fan_in
-- @tparam[opt=0] int spec.seed 0: the program's random_seed
-- @treturn Initializer
-- @usage local init = oar.initializer.MSRA{uniform = false}
function M.MSRA(spec)
  spec = spec_of(spec, "MSRA", nil, "uniform fan_in seed")
  local uniform = spec.uniform
  if uniform == nil then uniform = true end
  return make("msra", { uniform = uniform, fan_in = spec.fan_in,
                        seed = opt_number(spec, "seed", 0, "MSRA") })
end

--- The weights of a bilinear upsampling (Fluid's BilinearInitializer), for a
-- 4-D filter [C_out, C_in, k, k] of a transposed convolution: every [k, k]
-- map is the same tent, (1 - abs(x / f - c)) (1 - abs(y / f - c)) with
-- f = ceil(k / 2) and c = (2 f - 1 - f % 2) / (2 f). Also
-- `BilinearInitializer`.
-- @treturn Initializer
-- @raise (when applied) unless the variable is 4-D with equal last two dims
-- @usage local attr = oar.ParamAttr{initializer = oar.initializer.Bilinear(), learning_rate = 0}
function M.Bilinear(spec)
  spec_of(spec, "Bilinear", nil, "")
  return make("bilinear", {})
end

--- A given value (Fluid's NumpyArrayInitializer): a nested or flat Lua
-- table of numbers, or an oar Tensor, holding exactly as many values as the
-- variable (its shape is the variable's). Also `NumpyArray`.
-- @tparam table|Tensor value the values, row-major (or `{value = ...}`)
-- @treturn Initializer
-- @raise when value is neither a table of numbers nor a Tensor
-- @usage local init = oar.initializer.NumpyArrayInitializer({{1, 2}, {3, 4}})
function M.NumpyArrayInitializer(value)
  local tensor = require("oar.tensor")
  if type(value) == "table" and not tensor.is_tensor(value) and value.value ~= nil then
    argcheck.keys("oar.initializer.NumpyArrayInitializer", value, "value")
    value = value.value
  end
  local flat = {}
  if tensor.is_tensor(value) then
    local p = value:data()
    for i = 0, value:numel() - 1 do flat[i + 1] = tonumber(p[i]) end
  elseif type(value) == "table" then
    local function walk(t, path)
      for i, v in ipairs(t) do
        if type(v) == "table" then walk(v, path .. "[" .. i .. "]")
        elseif type(v) == "number" then flat[#flat + 1] = v
        else raise(string.format("NumpyArrayInitializer: value%s[%d] must be a number, got %s", path, i,
          framework.describe(v))) end
      end
    end
    walk(value, "")
  else
    raise("NumpyArrayInitializer: 'value' must be a table of numbers or a Tensor, got " .. framework.describe(value))
  end
  return make("numpy_array", { values = flat })
end
M.NumpyArray = M.NumpyArrayInitializer
M.BilinearInitializer = M.Bilinear

-- Fluid's long names: `ConstantInitializer`, `UniformInitializer`,
-- `NormalInitializer`, `TruncatedNormalInitializer`, `XavierInitializer`,
-- `MSRAInitializer` are the functions above.
M.ConstantInitializer, M.UniformInitializer, M.NormalInitializer = M.Constant, M.Uniform, M.Normal
M.TruncatedNormalInitializer, M.XavierInitializer, M.MSRAInitializer = M.TruncatedNormal, M.Xavier, M.MSRA

--- Whether `x` is an initializer (made by the functions of this module).
-- @param x any value
-- @treturn bool
-- @usage assert(oar.initializer.is_initializer(oar.initializer.Constant(1)))
function M.is_initializer(x) return getmetatable(x) == Initializer end

--- The fans of a weight shape, as Fluid computes them: [in, out] for fc,
-- [out, in, k...] for conv (times the kernel's size); a 1-D shape gives its
-- size twice, a scalar 1, 1.
-- @tparam {int,...} shape
-- @treturn int fan_in
-- @treturn int fan_out
-- @raise when shape is not a list of numbers
-- @usage local fan_in, fan_out = oar.initializer.compute_fans({64, 3, 3, 3})   --> 27, 576
function M.compute_fans(shape)
  if type(shape) ~= "table" then
    raise("compute_fans: 'shape' must be a list of positive integers, got " .. framework.describe(shape))
  end
  for i, d in ipairs(shape) do
    if type(d) ~= "number" then
      raise(string.format("compute_fans: 'shape' item %d must be a number, got %s", i, framework.describe(d)))
    end
  end
  if #shape == 0 then return 1, 1 end
  if #shape == 1 then return shape[1], shape[1] end
  if #shape == 2 then return shape[1], shape[2] end
  local receptive = 1
  for i = 3, #shape do receptive = receptive * shape[i] end
  return shape[2] * receptive, shape[1] * receptive
end

local function seed_of(self, block)
  if self.seed and self.seed ~= 0 then return self.seed end
  return block.program.random_seed or 0
end

--- Methods of an initializer (also callable: `init(var, block)`).
-- @type Initializer

--- Appends the init op writing `var` to `block`.
-- @tparam Variable var the variable to initialize (its shape and dtype are used)
-- @tparam Block block where the op goes (a startup program's block, for parameters)
-- @treturn Operator the init op
-- @raise when var is not a Variable or block not a Block
-- @usage oar.initializer.Constant(0):apply(v, oar.default_startup_program():global_block())
function Initializer:apply(var, block)
  if not framework.is_variable(var) then
    framework.raise("initializer: expected a Variable to initialize, got " .. framework.describe(var))
  end
  if not framework.is_block(block) then
    framework.raise("initializer: expected a Block to append to, got " .. framework.describe(block))
  end
  local shape, dtype = var.shape, var.dtype
  local out = { Out = { var } }
  local kind = self.kind
  if kind == "constant" then
    return block:append_op{ type = "fill_constant", outputs = out,
      attrs = { shape = shape, dtype = dtype, value = self.value, force_cpu = self.force_cpu } }
  end
  if kind == "bilinear" or kind == "numpy_array" then return self:_apply_values(var, block) end
  local seed = seed_of(self, block)
  local low, high, mean, std
  if kind == "uniform" then
    low, high = self.low, self.high
  elseif kind == "normal" or kind == "truncated_normal" then
    mean, std = self.loc, self.scale
  else
    local fan_in, fan_out = M.compute_fans(shape)
    fan_in = self.fan_in or fan_in
    if kind == "xavier" then
      fan_out = self.fan_out or fan_out
      if self.uniform then
        local limit = math.sqrt(6.0 / (fan_in + fan_out)); low, high = -limit, limit
      else
        mean, std = 0.0, math.sqrt(2.0 / (fan_in + fan_out))
      end
    else -- msra
      if self.uniform then
        local limit = math.sqrt(6.0 / fan_in); low, high = -limit, limit
      else
        mean, std = 0.0, math.sqrt(2.0 / fan_in)
      end
    end
  end
  if low then
    return block:append_op{ type = "uniform_random", outputs = out,
      attrs = { shape = shape, dtype = dtype, min = low, max = high, seed = seed } }
  end
  return block:append_op{ type = kind == "truncated_normal" and "truncated_gaussian_random" or "gaussian_random",
    outputs = out, attrs = { shape = shape, dtype = dtype, mean = mean, std = std, seed = seed } }
end

-- Bilinear's tent and NumpyArray's values, written by an assign_value op
function Initializer:_apply_values(var, block)
  local shape, dtype = var.shape, var.dtype
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  local values
  if self.kind == "bilinear" then
    if #shape ~= 4 or shape[3] ~= shape[4] or shape[3] < 1 then
      raise(string.format("Bilinear: '%s' must be 4-D [C_out, C_in, k, k], its shape is %s", var.name,
        framework.shape_text(shape)))
    end
    local size = shape[4]
    local f = math.ceil(size / 2)
    local c = (2 * f - 1 - f % 2) / (2 * f)
    values = {}
    for i = 0, n - 1 do
      local x, y = i % size, math.floor(i / size) % size
      values[i + 1] = (1 - math.abs(x / f - c)) * (1 - math.abs(y / f - c))
    end
  else
    values = self.values
    if #values ~= n then
      raise(string.format("NumpyArrayInitializer: %d values for '%s' of shape %s (%d values)", #values, var.name,
        framework.shape_text(shape), n))
    end
  end
  local attrs = { shape = shape, dtype = dtype }
  if dtype == "float32" or dtype == "float64" then attrs.fp32_values = values
  elseif dtype == "int32" then attrs.int32_values = values
  elseif dtype == "int64" then attrs.int64_values = values
  elseif dtype == "bool" then
    local b = {}
    for i, v in ipairs(values) do b[i] = v ~= 0 and 1 or 0 end
    attrs.bool_values = b
  else
    raise(string.format("%s: cannot initialize '%s' of dtype %s", self.kind == "bilinear" and "Bilinear" or
      "NumpyArrayInitializer", var.name, dtype))
  end
  return block:append_op{ type = "assign_value", outputs = { Out = { var } }, attrs = attrs }
end

function Initializer:__tostring()
  return "Initializer(" .. self.kind .. ")"
end

require("oar.framework")._guard_methods(Initializer, M.is_initializer, "Initializer", {})

return M
