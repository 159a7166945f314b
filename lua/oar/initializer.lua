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

function Initializer:__tostring()
  return "Initializer(" .. self.kind .. ")"
end

require("oar.framework")._guard_methods(Initializer, M.is_initializer, "Initializer", {})

return M
