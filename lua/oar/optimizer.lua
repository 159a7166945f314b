--- oar.optimizer: Fluid's optimizers. minimize = append_backward, gradient
-- clipping, regularization, then per parameter: its learning rate, its
-- accumulators (persistable, initialized by the startup program) and the
-- update op (role Optimize, op_role_var {param, grad}).
-- @module oar.optimizer
local framework = require("oar.framework")
local backward = require("oar.backward")
local regularizer = require("oar.regularizer")
local clip = require("oar.clip")
local unique_name = require("oar.unique_name")
local initializer = require("oar.initializer")
local lib = require("oar.lib")
local argcheck = require("oar.argcheck")

local raise, describe, is_variable = framework.raise, framework.describe, framework.is_variable

local M = {}

local Optimizer = {}
Optimizer.__index = Optimizer
M.Optimizer = Optimizer

-- ---- construction ------------------------------------------------------------
local function number_opt(spec, key, default, who)
  local v = spec[key]
  if v == nil then return default end
  if type(v) ~= "number" then
    raise(string.format("%s: '%s' must be a number, got %s", who, key, describe(v)))
  end
  return v
end

-- kind: a table describing one optimizer (see the definitions below)
local function new_optimizer(kind, spec)
  local who = kind.name
  if spec == nil then spec = {} end
  if type(spec) == "number" or is_variable(spec) then spec = { learning_rate = spec } end
  if type(spec) ~= "table" then raise(who .. ": expected a table of options, got " .. describe(spec)) end
  local known = { "learning_rate", "regularization", "grad_clip", "name", "parameters" }
  for key in pairs(kind.hyper or {}) do known[#known + 1] = key end
  argcheck.keys("oar.optimizer." .. who, spec, known)
  local lr = spec.learning_rate
  if lr == nil and kind.default_lr then lr = kind.default_lr end
  if lr == nil then raise(who .. ": 'learning_rate' is required") end
  if type(lr) ~= "number" and not is_variable(lr) and not require("oar.lr_scheduler").is_scheduler(lr) then
    raise(who .. ": 'learning_rate' must be a number or a Variable, got " .. describe(lr))
  end
  if require("oar.lr_scheduler").is_scheduler(lr) and spec.parameters == nil then
    raise(who .. ": an oar.optimizer.lr schedule is for eager optimizers (with 'parameters'); static programs " ..
      "take the schedule Variable of oar.layers' decays")
  end
  if spec.regularization ~= nil and not regularizer.is_regularizer(spec.regularization) then
    raise(who .. ": 'regularization' must be L1Decay or L2Decay, got " .. describe(spec.regularization))
  end
  if spec.grad_clip ~= nil and not clip.is_clip(spec.grad_clip) then
    raise(who .. ": 'grad_clip' must be a GradientClipBy* object, got " .. describe(spec.grad_clip))
  end
  local self = setmetatable({
    type = kind.op, kind = kind, learning_rate = lr, regularization = spec.regularization,
    grad_clip = spec.grad_clip, name = spec.name,
    _lr_vars = setmetatable({}, { __mode = "k" }),  -- program -> lr var
    _accumulators = {},                            -- acc name -> program -> param name -> var
    hyper = {},
  }, Optimizer)
  if spec.parameters ~= nil then
    local params = spec.parameters
    local tensor = require("oar.tensor")
    if type(params) ~= "table" or tensor.is_tensor(params) then
      raise(who .. ": 'parameters' must be a list of tensors (model:parameters()), got " .. describe(params))
    end
    for i, p in ipairs(params) do
      if not tensor.is_tensor(p) then
        raise(string.format("%s: item %d of 'parameters' must be a tensor, got %s", who, i, describe(p)))
      end
    end
    if type(lr) ~= "number" and not require("oar.lr_scheduler").is_scheduler(lr) then
      raise(who .. ": with 'parameters' (eager) 'learning_rate' must be a number or an oar.optimizer.lr " ..
        "schedule, got " .. describe(lr))
    end
    self.parameters = {}
    for i, p in ipairs(params) do self.parameters[i] = p end
    self._eager_acc = {}   -- acc name -> param tensor -> tensor
  end
  for key, default in pairs(kind.hyper or {}) do
    if type(default) == "boolean" then
      local v = spec[key]
      if v == nil then v = default end
      if type(v) ~= "boolean" then raise(string.format("%s: '%s' must be a boolean, got %s", who, key, describe(v))) end
      self.hyper[key] = v
    else
      self.hyper[key] = number_opt(spec, key, default, who)
    end
  end
  return self
end

-- ---- learning rate ------------------------------------------------------------
-- The global learning-rate Variable of `program` (created once, persistable,
-- filled by the startup program), or the schedule Variable given.
function Optimizer:_global_learning_rate(program, startup)
  if is_variable(self.learning_rate) then
    if self.learning_rate.block.program ~= program then
      raise(self.kind.name .. ": the 'learning_rate' Variable belongs to another program than the loss")
    end
    return self.learning_rate
  end
  local v = self._lr_vars[program]
  if v then return v end
  local name = unique_name.generate("learning_rate")
  v = program:global_block():create_var{ name = name, shape = { 1 }, dtype = "float32", persistable = true,
                                         stop_gradient = true }
  local sv = startup:global_block():create_var{ name = name, shape = { 1 }, dtype = "float32", persistable = true }
  initializer.Constant{ value = self.learning_rate }(sv, startup:global_block())
  self._lr_vars[program] = v
  return v
end

-- The param's learning rate: the global one scaled by ParamAttr.learning_rate.
function Optimizer:_param_learning_rate(param, program, startup)
  local lr = self:_global_learning_rate(program, startup)
  local attr = rawget(param, "optimize_attr")
  local factor = attr and attr.learning_rate or 1.0
  if factor == 1.0 then return lr end
  local block = program:global_block()
  local out = block:create_var{ name = unique_name.generate(param.name .. "_lr"), shape = { 1 }, dtype = "float32" }
  program:_lr_schedule_guard(function()
    block:append_op{ type = "scale", inputs = { X = { lr } }, outputs = { Out = { out } },
                     attrs = { scale = factor, bias = 0.0 } }
  end, true)
  return out
end

-- ---- accumulators -----------------------------------------------------------
-- A persistable var "<param>_<name>_N" shaped like the param (or `shape`),
-- filled with `fill` by the startup program.
function Optimizer:_add_accumulator(name, param, program, startup, fill, shape)
  local by_program = self._accumulators[name]
  if not by_program then
    by_program = setmetatable({}, { __mode = "k" })
    self._accumulators[name] = by_program
  end
  local by_param = by_program[program] or {}
  by_program[program] = by_param
  if by_param[param.name] then return by_param[param.name] end
  local vname = unique_name.generate(param.name .. "_" .. name)
  local spec = { name = vname, shape = shape or param.shape, dtype = param.dtype, persistable = true,
                 stop_gradient = true }
  local v = program:global_block():create_var(spec)
  local sv = startup:global_block():create_var(spec)
  initializer.Constant{ value = fill or 0.0 }(sv, startup:global_block())
  by_param[param.name] = v
  return v
end

-- the accumulator `name` of `param` (in param's program), or nil
function Optimizer:_get_accumulator(name, param)
  local by_program = self._accumulators[name]
  local by_param = by_program and by_program[param.block.program]
  return by_param and by_param[param.name]
end

-- ---- passes -------------------------------------------------------------------

--- Appends backward, clipping, regularization and the update ops.
-- The loss must hold one value (reduce it with layers.mean first).
-- @tparam Variable loss a one-value loss
-- @tparam[opt] table|Program opts keyword arguments (or Fluid's positional startup_program):
-- @tparam[opt] Program opts.startup_program where accumulators are initialized (default: the default startup program)
-- @tparam[opt] {Variable|string,...} opts.parameter_list parameters to train (default: all trainable)
-- @tparam[opt] {Variable|string,...} opts.no_grad_set variables no gradient flows through
-- @tparam[opt] {Variable|string,...} parameter_list Fluid's positional form
-- @tparam[opt] {Variable|string,...} no_grad_set Fluid's positional form
-- @treturn {Operator,...} the optimize ops
-- @treturn {{Variable,Variable},...} `{param, grad}` pairs
-- @raise when the loss holds more than one value, or on an unknown key
-- @usage oar.optimizer.Adam{learning_rate = 1e-3}:minimize(loss)
function Optimizer:minimize(loss, opts, parameter_list, no_grad_set)
  local who = self.kind.name .. ":minimize"
  if getmetatable(self) ~= Optimizer then raise("minimize: call it with ':' on an optimizer") end
  if not is_variable(loss) then raise(who .. ": 'loss' must be a Variable, got " .. describe(loss)) end
  if framework.is_program(opts) or opts == nil and (parameter_list or no_grad_set) then
    opts = { startup_program = opts, parameter_list = parameter_list, no_grad_set = no_grad_set }
  end
  opts = opts or {}
  if type(opts) ~= "table" then raise(who .. ": options must be a table, got " .. describe(opts)) end
  argcheck.keys(who, opts, "startup_program parameter_list no_grad_set")
  if opts.startup_program ~= nil and not framework.is_program(opts.startup_program) then
    raise(who .. ": 'startup_program' must be a Program, got " .. describe(opts.startup_program))
  end
  backward._check_scalar_loss(loss, who)
  local params_grads = self:backward(loss, opts)
  local ops = self:apply_gradients(params_grads, loss.block.program, opts.startup_program)
  return ops, params_grads
end

--- Appends the backward pass only (`oar.append_backward`), for use with
-- `Optimizer:apply_gradients`.
-- @tparam Variable loss
-- @tparam[opt] table opts `{parameter_list=, no_grad_set=, startup_program=}` as for minimize
-- @treturn {{Variable,Variable},...} `{param, grad}` pairs
-- @usage
-- local opt = oar.optimizer.SGD{learning_rate = 0.01}
-- local pg = opt:backward(loss)
-- opt:apply_gradients(pg)
function Optimizer:backward(loss, opts)
  local who = self.kind.name .. ":backward"
  if not is_variable(loss) then raise(who .. ": 'loss' must be a Variable, got " .. describe(loss)) end
  if opts == nil then opts = {} end
  if type(opts) ~= "table" then raise(who .. ": options must be a table, got " .. describe(opts)) end
  argcheck.keys(who, opts, "startup_program parameter_list no_grad_set")
  return backward.append_backward(loss, { parameter_list = opts.parameter_list, no_grad_set = opts.no_grad_set })
end

--- Clips and regularizes the gradients, then appends the update ops.
-- @tparam {{Variable,Variable},...} params_grads `{param, grad}` pairs
-- @tparam[opt] Program program default: the params' program
-- @tparam[opt] Program startup where accumulators are initialized (default: the default startup program)
-- @treturn {Operator,...} the optimize ops
-- @usage opt:apply_gradients(opt:backward(loss))
function Optimizer:apply_gradients(params_grads, program, startup)
  local who = self.kind.name .. ":apply_gradients"
  if type(params_grads) ~= "table" or is_variable(params_grads) then
    raise(who .. ": 'params_grads' must be a list of {param, grad} pairs, got " .. describe(params_grads))
  end
  for i, pg in ipairs(params_grads) do
    if type(pg) ~= "table" or not is_variable(pg[1]) or (pg[2] ~= nil and not is_variable(pg[2])) then
      raise(string.format("%s: item %d of 'params_grads' must be {param, grad} (Variables), got %s", who, i,
        describe(pg)))
    end
  end
  if program == nil and params_grads[1] then program = params_grads[1][1].block.program end
  if not framework.is_program(program) then
    raise(who .. ": 'program' must be a Program, got " .. describe(program))
  end
  startup = startup or framework.default_startup_program()
  if not framework.is_program(startup) then
    raise(who .. ": 'startup_program' must be a Program, got " .. describe(startup))
  end
  table.sort(params_grads, function(a, b) return a[1].name < b[1].name end)
  local pg = params_grads
  pg = self.grad_clip and self.grad_clip:apply(pg) or clip.append_gradient_clip_ops(pg)
  pg = regularizer.append_regularization_ops(pg, self.regularization)
  return self:_create_optimization_pass(pg, program, startup)
end

function Optimizer:_create_optimization_pass(params_grads, program, startup)
  local kind = self.kind
  if not lib.C.oar_op_is_registered(kind.op) then
    raise(string.format("%s: the '%s' op is not available in this build of liboar", kind.name, kind.op))
  end
  local block = program:current_block()   -- a conditional block's under GradientMerge
  local ops = {}
  local updated = {}
  for _, pg in ipairs(params_grads) do
    local param, grad = pg[1], pg[2]
    if grad ~= nil and rawget(param, "trainable") ~= false then
      updated[#updated + 1] = pg
      program:_optimized_guard({ param, grad }, function()
        local lr = kind.uses_lr ~= false and self:_param_learning_rate(param, program, startup) or nil
        local acc = {}
        for _, a in ipairs(kind.accumulators or {}) do
          local fill = a.fill
          if type(fill) == "string" then fill = self.hyper[fill] end
          acc[a.name] = self:_add_accumulator(a.name, param, program, startup, fill, a.shape)
        end
        local pin = param
        if kind.prepare then
          local function tmp(shape, dtype)
            return block:create_var{ name = unique_name.generate(param.name .. "_tmp"), shape = shape,
                                     dtype = dtype, stop_gradient = true }
          end
          local extra
          pin, extra = kind.prepare(self, param, lr, block, tmp)
          for _, op in ipairs(extra) do ops[#ops + 1] = op end
        end
        local spec = kind.build(self, pin, grad, lr, acc)
        spec.type = kind.op
        if pin ~= param then spec.inputs.Param = { pin }; spec.outputs.ParamOut = { param } end
        ops[#ops + 1] = block:append_op(spec)
        if kind.finish then
          for _, extra in ipairs(kind.finish(self, param, acc, block)) do ops[#ops + 1] = extra end
        end
      end)
    end
  end
  return ops
end

-- ---- eager mode -------------------------------------------------------------------
-- step, zero_grad, set_lr, get_lr, state_dict, set_state_dict: lua/oar/optimizer_eager.lua
require("oar.optimizer_eager").install(Optimizer)

function Optimizer:__tostring() return self.kind.name .. "Optimizer" end

-- ---- the optimizers ---------------------------------------------------------------
local function has_output_slot(op_type, slot)
  return lib.C.oar_op_output_flags(op_type, slot) >= 0
end

-- beta_pow *= beta, for ops that do not update their beta powers themselves
local function scale_in_place(block, var, factor)
  return block:append_op{ type = "scale", inputs = { X = { var } }, outputs = { Out = { var } },
                          attrs = { scale = factor, bias = 0.0 } }
end

local kinds = {}

kinds.SGD = {
  name = "SGD", op = "sgd",
  build = function(_, p, g, lr)
    return { inputs = { Param = { p }, Grad = { g }, LearningRate = { lr } }, outputs = { ParamOut = { p } } }
  end,
}

kinds.Momentum = {
  name = "Momentum", op = "momentum", hyper = { momentum = 0.9, use_nesterov = false },
  accumulators = { { name = "velocity" } },
  build = function(self, p, g, lr, acc)
    return { inputs = { Param = { p }, Grad = { g }, Velocity = { acc.velocity }, LearningRate = { lr } },
             outputs = { ParamOut = { p }, VelocityOut = { acc.velocity } },
             attrs = { mu = self.hyper.momentum, use_nesterov = self.hyper.use_nesterov } }
  end,
}

kinds.Adam = {
  name = "Adam", op = "adam", default_lr = 0.001,
  hyper = { beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8, lazy_mode = false },
  accumulators = { { name = "moment1" }, { name = "moment2" },
                   { name = "beta1_pow_acc", shape = { 1 }, fill = "beta1" },
                   { name = "beta2_pow_acc", shape = { 1 }, fill = "beta2" } },
  build = function(self, p, g, lr, acc)
    local outputs = { ParamOut = { p }, Moment1Out = { acc.moment1 }, Moment2Out = { acc.moment2 } }
    if has_output_slot("adam", "Beta1PowOut") then
      outputs.Beta1PowOut = { acc.beta1_pow_acc }
      outputs.Beta2PowOut = { acc.beta2_pow_acc }
    end
    return { inputs = { Param = { p }, Grad = { g }, LearningRate = { lr }, Moment1 = { acc.moment1 },
                        Moment2 = { acc.moment2 }, Beta1Pow = { acc.beta1_pow_acc }, Beta2Pow = { acc.beta2_pow_acc } },
             outputs = outputs,
             attrs = { beta1 = self.hyper.beta1, beta2 = self.hyper.beta2, epsilon = self.hyper.epsilon,
                       lazy_mode = self.hyper.lazy_mode } }
  end,
  finish = function(self, _, acc, block)
    if has_output_slot("adam", "Beta1PowOut") then return {} end
    return { scale_in_place(block, acc.beta1_pow_acc, self.hyper.beta1),
             scale_in_place(block, acc.beta2_pow_acc, self.hyper.beta2) }
  end,
}

kinds.Adamax = {
  name = "Adamax", op = "adamax", default_lr = 0.001,
  hyper = { beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8 },
  accumulators = { { name = "moment" }, { name = "inf_norm" },
                   { name = "beta1_pow_acc", shape = { 1 }, fill = "beta1" } },
  build = function(self, p, g, lr, acc)
    return { inputs = { Param = { p }, Grad = { g }, LearningRate = { lr }, Moment = { acc.moment },
                        InfNorm = { acc.inf_norm }, Beta1Pow = { acc.beta1_pow_acc } },
             outputs = { ParamOut = { p }, MomentOut = { acc.moment }, InfNormOut = { acc.inf_norm } },
             attrs = { beta1 = self.hyper.beta1, beta2 = self.hyper.beta2, epsilon = self.hyper.epsilon } }
  end,
  finish = function(self, _, acc, block)
    if has_output_slot("adamax", "Beta1PowOut") then return {} end
    return { scale_in_place(block, acc.beta1_pow_acc, self.hyper.beta1) }
  end,
}

kinds.Adagrad = {
  name = "Adagrad", op = "adagrad", hyper = { epsilon = 1e-6, initial_accumulator_value = 0.0 },
  accumulators = { { name = "moment", fill = "initial_accumulator_value" } },
  build = function(self, p, g, lr, acc)
    return { inputs = { Param = { p }, Grad = { g }, Moment = { acc.moment }, LearningRate = { lr } },
             outputs = { ParamOut = { p }, MomentOut = { acc.moment } },
             attrs = { epsilon = self.hyper.epsilon } }
  end,
}

kinds.DecayedAdagrad = {
  name = "DecayedAdagrad", op = "decayed_adagrad", hyper = { decay = 0.95, epsilon = 1e-6 },
  accumulators = { { name = "moment" } },
  build = function(self, p, g, lr, acc)
    return { inputs = { Param = { p }, Grad = { g }, Moment = { acc.moment }, LearningRate = { lr } },
             outputs = { ParamOut = { p }, MomentOut = { acc.moment } },
             attrs = { decay = self.hyper.decay, epsilon = self.hyper.epsilon } }
  end,
}

kinds.RMSProp = {
  name = "RMSProp", op = "rmsprop", hyper = { rho = 0.95, epsilon = 1e-6, momentum = 0.0, centered = false },
  accumulators = { { name = "momentum" }, { name = "mean_square" }, { name = "mean_grad" } },
  build = function(self, p, g, lr, acc)
    return { inputs = { Param = { p }, Grad = { g }, Moment = { acc.momentum }, MeanSquare = { acc.mean_square },
                        MeanGrad = { acc.mean_grad }, LearningRate = { lr } },
             outputs = { ParamOut = { p }, MomentOut = { acc.momentum }, MeanSquareOut = { acc.mean_square },
                         MeanGradOut = { acc.mean_grad } },
             attrs = { epsilon = self.hyper.epsilon, decay = self.hyper.rho, momentum = self.hyper.momentum,
                       centered = self.hyper.centered } }
  end,
}

kinds.Adadelta = {
  name = "Adadelta", op = "adadelta", hyper = { epsilon = 1e-6, rho = 0.95 }, uses_lr = false,
  default_lr = 1.0,
  accumulators = { { name = "_avg_squared_grad" }, { name = "_avg_squared_update" } },
  build = function(self, p, g, _, acc)
    return { inputs = { Param = { p }, Grad = { g }, AvgSquaredGrad = { acc._avg_squared_grad },
                        AvgSquaredUpdate = { acc._avg_squared_update } },
             outputs = { ParamOut = { p }, AvgSquaredGradOut = { acc._avg_squared_grad },
                         AvgSquaredUpdateOut = { acc._avg_squared_update } },
             attrs = { epsilon = self.hyper.epsilon, rho = self.hyper.rho } }
  end,
}

-- LAMB (Fluid 1.8's LambOptimizer): Adam's moments with a layer-wise trust
-- ratio; the lamb op does not advance (or use) the beta powers, as in 1.8.
kinds.Lamb = {
  name = "Lamb", op = "lamb", default_lr = 0.001,
  hyper = { lamb_weight_decay = 0.01, beta1 = 0.9, beta2 = 0.999, epsilon = 1e-6 },
  accumulators = { { name = "moment1" }, { name = "moment2" },
                   { name = "beta1_pow_acc", shape = { 1 }, fill = "beta1" },
                   { name = "beta2_pow_acc", shape = { 1 }, fill = "beta2" } },
  build = function(self, p, g, lr, acc)
    return { inputs = { Param = { p }, Grad = { g }, LearningRate = { lr }, Moment1 = { acc.moment1 },
                        Moment2 = { acc.moment2 }, Beta1Pow = { acc.beta1_pow_acc }, Beta2Pow = { acc.beta2_pow_acc } },
             outputs = { ParamOut = { p }, Moment1Out = { acc.moment1 }, Moment2Out = { acc.moment2 } },
             attrs = { beta1 = self.hyper.beta1, beta2 = self.hyper.beta2, epsilon = self.hyper.epsilon,
                       weight_decay = self.hyper.lamb_weight_decay } }
  end,
}

kinds.LarsMomentum = {
  name = "LarsMomentum", op = "lars_momentum",
  hyper = { momentum = 0.9, lars_coeff = 0.001, lars_weight_decay = 0.0005 },
  accumulators = { { name = "velocity" } },
  build = function(self, p, g, lr, acc)
    return { inputs = { Param = { p }, Grad = { g }, Velocity = { acc.velocity }, LearningRate = { lr } },
             outputs = { ParamOut = { p }, VelocityOut = { acc.velocity } },
             attrs = { mu = self.hyper.momentum, lars_coeff = self.hyper.lars_coeff,
                       lars_weight_decay = self.hyper.lars_weight_decay } }
  end,
}

kinds.Ftrl = {
  name = "Ftrl", op = "ftrl", hyper = { l1 = 0.0, l2 = 0.0, lr_power = -0.5 },
  accumulators = { { name = "squared" }, { name = "linear" } },
  build = function(self, p, g, lr, acc)
    return { inputs = { Param = { p }, Grad = { g }, SquaredAccumulator = { acc.squared },
                        LinearAccumulator = { acc.linear }, LearningRate = { lr } },
             outputs = { ParamOut = { p }, SquaredAccumOut = { acc.squared }, LinearAccumOut = { acc.linear } },
             attrs = { l1 = self.hyper.l1, l2 = self.hyper.l2, lr_power = self.hyper.lr_power } }
  end,
}

kinds.ProximalAdagrad = {
  name = "ProximalAdagrad", op = "proximal_adagrad",
  hyper = { l1 = 0.0, l2 = 0.0, initial_accumulator_value = 0.1 },
  accumulators = { { name = "moment", fill = "initial_accumulator_value" } },
  build = function(self, p, g, lr, acc)
    return { inputs = { Param = { p }, Grad = { g }, Moment = { acc.moment }, LearningRate = { lr } },
             outputs = { ParamOut = { p }, MomentOut = { acc.moment } },
             attrs = { l1 = self.hyper.l1, l2 = self.hyper.l2 } }
  end,
}

kinds.ProximalGD = {
  name = "ProximalGD", op = "proximal_gd", hyper = { l1 = 0.0, l2 = 0.0 },
  build = function(self, p, g, lr)
    return { inputs = { Param = { p }, Grad = { g }, LearningRate = { lr } }, outputs = { ParamOut = { p } },
             attrs = { l1 = self.hyper.l1, l2 = self.hyper.l2 } }
  end,
}

kinds.Dpsgd = {
  name = "Dpsgd", op = "dpsgd", default_lr = 0.001,
  hyper = { clip = 0.9, batch_size = 0.999, sigma = 1e-8, seed = 0 },
  build = function(self, p, g, lr)
    return { inputs = { Param = { p }, Grad = { g }, LearningRate = { lr } }, outputs = { ParamOut = { p } },
             attrs = { clip = self.hyper.clip, batch_size = self.hyper.batch_size, sigma = self.hyper.sigma,
                       seed = math.floor(self.hyper.seed) } }
  end,
}

-- AdamW (Paddle 2's): decoupled weight decay composed from existing ops,
-- Param * (1 - lr weight_decay) (a scale of the rate, an elementwise_mul)
-- into a temporary that the adam op reads as Param and writes to the param.
kinds.AdamW = {
  name = "AdamW", op = "adam", default_lr = 0.001,
  hyper = { beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8, lazy_mode = false, weight_decay = 0.01 },
  accumulators = kinds.Adam.accumulators,
  prepare = function(self, p, lr, block, tmp)
    local coeff = tmp({ 1 }, "float32")
    local decayed = is_variable(p) and tmp(p.shape, p.dtype) or tmp(p:shape(), p:dtype())
    local ops = {}
    ops[1] = block:append_op{ type = "scale", inputs = { X = { lr } }, outputs = { Out = { coeff } },
                              attrs = { scale = -self.hyper.weight_decay, bias = 1.0 } }
    local pdt = is_variable(p) and p.dtype or p:dtype()
    if pdt ~= "float32" then   -- the rate is float32; elementwise_mul wants p's dtype
      local c2 = tmp({ 1 }, pdt)
      ops[#ops + 1] = block:append_op{ type = "cast", inputs = { X = { coeff } }, outputs = { Out = { c2 } },
                                       attrs = { in_dtype = "float32", out_dtype = pdt } }
      coeff = c2
    end
    ops[#ops + 1] = block:append_op{ type = "elementwise_mul", inputs = { X = { p }, Y = { coeff } },
                              outputs = { Out = { decayed } }, attrs = { axis = -1 } }
    return decayed, ops
  end,
  build = kinds.Adam.build,
  finish = kinds.Adam.finish,
}

--- The optimizers. Each is `oar.optimizer.NAME{learning_rate=, ...}` (also
-- `NAMEOptimizer`, and `NAME(lr)` for just the rate) and returns an
-- Optimizer. Every one takes `learning_rate` (a number or a schedule
-- Variable), `regularization` (L1Decay/L2Decay), `grad_clip`
-- (a GradientClipBy* object) and `name`; an unknown key is an error.
-- Fluid's names are aliases: `SGDOptimizer`, `MomentumOptimizer`,
-- `AdamOptimizer`, `AdamaxOptimizer`, `AdagradOptimizer`,
-- `DecayedAdagradOptimizer`, `RMSPropOptimizer`, `AdadeltaOptimizer`,
-- `LambOptimizer`, `LarsMomentumOptimizer`, `FtrlOptimizer`,
-- `ProximalAdagradOptimizer`, `ProximalGDOptimizer`, `DpsgdOptimizer`, `AdamWOptimizer`.
-- @section optimizers

--- Plain gradient descent: `p -= lr * g`.
-- @function SGD
-- @tparam table spec `{learning_rate=, regularization=, grad_clip=, name=}`; learning_rate required
-- @treturn Optimizer
-- @usage oar.optimizer.SGD{learning_rate = 0.01}:minimize(loss)

--- Momentum: `v = momentum * v + g; p -= lr * v` (Nesterov's form with use_nesterov).
-- @function Momentum
-- @tparam table spec keyword arguments:
-- @tparam number spec.learning_rate
-- @tparam[opt=0.9] number spec.momentum
-- @tparam[opt=false] bool spec.use_nesterov
-- @treturn Optimizer
-- @usage oar.optimizer.Momentum{learning_rate = 0.01, momentum = 0.9}:minimize(loss)

--- Adam: steps by bias-corrected running means of the gradient and its square.
-- @function Adam
-- @tparam table spec keyword arguments:
-- @tparam[opt=0.001] number spec.learning_rate
-- @tparam[opt=0.9] number spec.beta1
-- @tparam[opt=0.999] number spec.beta2
-- @tparam[opt=1e-8] number spec.epsilon
-- @tparam[opt=false] bool spec.lazy_mode update only the rows a sparse gradient touches
-- @treturn Optimizer
-- @usage oar.optimizer.Adam{learning_rate = 1e-3, beta1 = 0.9}:minimize(loss)

--- Adamax (Adam with the infinity norm).
-- @function Adamax
-- @tparam table spec keyword arguments:
-- @tparam[opt=0.001] number spec.learning_rate
-- @tparam[opt=0.9] number spec.beta1
-- @tparam[opt=0.999] number spec.beta2
-- @tparam[opt=1e-8] number spec.epsilon
-- @treturn Optimizer
-- @usage oar.optimizer.Adamax{learning_rate = 2e-3}:minimize(loss)

--- Adagrad: steps scaled by the root of the summed squared gradients.
-- @function Adagrad
-- @tparam table spec keyword arguments:
-- @tparam number spec.learning_rate
-- @tparam[opt=1e-6] number spec.epsilon
-- @tparam[opt=0.0] number spec.initial_accumulator_value
-- @treturn Optimizer
-- @usage oar.optimizer.Adagrad{learning_rate = 0.1}:minimize(loss)

--- Adagrad with a decaying accumulator.
-- @function DecayedAdagrad
-- @tparam table spec keyword arguments:
-- @tparam number spec.learning_rate
-- @tparam[opt=0.95] number spec.decay
-- @tparam[opt=1e-6] number spec.epsilon
-- @treturn Optimizer
-- @usage oar.optimizer.DecayedAdagrad{learning_rate = 0.1, decay = 0.9}:minimize(loss)

--- RMSProp: steps scaled by the root of a running mean of squared gradients.
-- @function RMSProp
-- @tparam table spec keyword arguments:
-- @tparam number spec.learning_rate
-- @tparam[opt=0.95] number spec.rho decay of the mean square
-- @tparam[opt=1e-6] number spec.epsilon
-- @tparam[opt=0.0] number spec.momentum
-- @tparam[opt=false] bool spec.centered
-- @treturn Optimizer
-- @usage oar.optimizer.RMSProp{learning_rate = 1e-3, rho = 0.9}:minimize(loss)

--- Adadelta (the update does not use the learning rate).
-- @function Adadelta
-- @tparam table spec keyword arguments:
-- @tparam[opt=1.0] number spec.learning_rate
-- @tparam[opt=0.95] number spec.rho
-- @tparam[opt=1e-6] number spec.epsilon
-- @treturn Optimizer
-- @usage oar.optimizer.Adadelta{learning_rate = 1.0, rho = 0.95}:minimize(loss)

--- LAMB (Fluid 1.8's LambOptimizer): Adam's moments, a weight-decay term, and
-- a layer-wise trust ratio `||p|| / ||r||` scaling the step (no bias
-- correction, as Fluid 1.8's lamb op). Fluid's `exclude_from_weight_decay_fn`
-- is not supported.
-- @function Lamb
-- @tparam table spec keyword arguments:
-- @tparam[opt=0.001] number spec.learning_rate
-- @tparam[opt=0.01] number spec.lamb_weight_decay
-- @tparam[opt=0.9] number spec.beta1
-- @tparam[opt=0.999] number spec.beta2
-- @tparam[opt=1e-6] number spec.epsilon
-- @treturn Optimizer
-- @usage oar.optimizer.Lamb{learning_rate = 1e-3, lamb_weight_decay = 0.01}:minimize(loss)

--- LARS momentum: momentum with a layer-wise rate
-- `lr * lars_coeff * ||p|| / (||g|| + lars_weight_decay * ||p||)`.
-- @function LarsMomentum
-- @tparam table spec keyword arguments:
-- @tparam number spec.learning_rate
-- @tparam[opt=0.9] number spec.momentum
-- @tparam[opt=0.001] number spec.lars_coeff
-- @tparam[opt=0.0005] number spec.lars_weight_decay
-- @treturn Optimizer
-- @usage oar.optimizer.LarsMomentum{learning_rate = 0.2, momentum = 0.9}:minimize(loss)

--- FTRL-proximal (Fluid's FtrlOptimizer), with L1 and L2 strengths.
-- @function Ftrl
-- @tparam table spec keyword arguments:
-- @tparam number spec.learning_rate
-- @tparam[opt=0.0] number spec.l1
-- @tparam[opt=0.0] number spec.l2
-- @tparam[opt=-0.5] number spec.lr_power
-- @treturn Optimizer
-- @usage oar.optimizer.Ftrl{learning_rate = 0.1, l1 = 0.01}:minimize(loss)

--- Proximal Adagrad: an Adagrad step, then the L1/L2 proximal operator (the
-- proximal_adagrad op; Fluid 1.8 has the op but no class).
-- @function ProximalAdagrad
-- @tparam table spec keyword arguments:
-- @tparam number spec.learning_rate
-- @tparam[opt=0.0] number spec.l1
-- @tparam[opt=0.0] number spec.l2
-- @tparam[opt=0.1] number spec.initial_accumulator_value the moment's start (a zero gradient at 0 would divide 0 by 0)
-- @treturn Optimizer
-- @usage oar.optimizer.ProximalAdagrad{learning_rate = 0.1, l1 = 1e-3}:minimize(loss)

--- Proximal gradient descent: a gradient step, then the L1/L2 proximal
-- operator (the proximal_gd op; Fluid 1.8 has the op but no class).
-- @function ProximalGD
-- @tparam table spec keyword arguments:
-- @tparam number spec.learning_rate
-- @tparam[opt=0.0] number spec.l1
-- @tparam[opt=0.0] number spec.l2
-- @treturn Optimizer
-- @usage oar.optimizer.ProximalGD{learning_rate = 0.1, l1 = 1e-3}:minimize(loss)

--- Differentially private SGD (Fluid's DpsgdOptimizer, its defaults): the
-- gradient clipped to norm `clip`, plus one Gaussian draw of deviation
-- `sigma` divided by `batch_size`.
-- @function Dpsgd
-- @tparam table spec keyword arguments:
-- @tparam[opt=0.001] number spec.learning_rate
-- @tparam[opt=0.9] number spec.clip
-- @tparam[opt=0.999] number spec.batch_size
-- @tparam[opt=1e-8] number spec.sigma
-- @tparam[opt=0] number spec.seed 0: oar's global generator; otherwise the op reseeds with it on every run
-- @treturn Optimizer
-- @usage oar.optimizer.Dpsgd{learning_rate = 0.01, clip = 1.0, sigma = 0.5}:minimize(loss)

--- AdamW (Paddle 2's): Adam after a decoupled weight decay,
-- `p = p * (1 - lr * weight_decay)` then the adam op on the decayed p.
-- @function AdamW
-- @tparam table spec keyword arguments:
-- @tparam[opt=0.001] number spec.learning_rate
-- @tparam[opt=0.01] number spec.weight_decay
-- @tparam[opt=0.9] number spec.beta1
-- @tparam[opt=0.999] number spec.beta2
-- @tparam[opt=1e-8] number spec.epsilon
-- @tparam[opt=false] bool spec.lazy_mode
-- @treturn Optimizer
-- @usage oar.optimizer.AdamW{learning_rate = 1e-3, weight_decay = 0.01}:minimize(loss)
for name, kind in pairs(kinds) do
  M[name] = function(spec) return new_optimizer(kind, spec) end
  M[name .. "Optimizer"] = M[name]
end
M.kinds = kinds
require("oar.optimizer_wrappers").install(M)   -- ModelAverage, EMA, Lookahead, GradientMerge, Recompute
--- Learning-rate schedules for eager optimizers (oar.lr_scheduler): `oar.optimizer.lr.exponential_decay{...}` and the other decays of oar.layers.
-- @field lr
M.lr = require("oar.lr_scheduler")

require("oar.framework")._guard_methods(Optimizer, function(x) return getmetatable(x) == Optimizer end, "Optimizer", {})

return M
