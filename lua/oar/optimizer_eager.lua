--- The eager half of oar.optimizer (installed into Optimizer by
-- optimizer.lua): with `parameters=`, `step()` runs the static pass's ops
-- on tensors, each op at once by the eager op runner — gradient clipping
-- (oar.clip's ops), regularization (oar.regularizer's), then the update op
-- (the same kind.build / kind.finish specs as programs) — and copies the
-- outputs into the tensors the static op updates in place (param,
-- accumulators). Accumulators are tensors filled as the startup program
-- fills them, so an eager step and a static step agree bit for bit. The
-- learning rate is a number or an oar.optimizer.lr schedule, advanced once
-- per step. `state_dict()` / `set_state_dict()` carry the accumulators and
-- the schedule's step, so a resumed run repeats an uninterrupted one.
-- @module oar.optimizer_eager
local framework = require("oar.framework")
local lib = require("oar.lib")
local lr_scheduler = require("oar.lr_scheduler")

local raise, describe = framework.raise, framework.describe

local M = {}

local function sorted(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys)
  return keys
end

-- runs one op spec {type=, inputs=, outputs=, attrs=} eagerly, in place:
-- the kernel writes the output tensors (param, accumulators) as it writes
-- a program's variables
local function run_spec_eagerly(spec)
  local ins, outs = {}, {}
  for _, slot in ipairs(sorted(spec.inputs or {})) do ins[#ins + 1] = { slot, spec.inputs[slot] } end
  for _, slot in ipairs(sorted(spec.outputs or {})) do outs[#outs + 1] = { slot, spec.outputs[slot] } end
  require("oar.eager")._run_into(spec.type, ins, outs, spec.attrs)
end

-- kind.finish appends to a block; in eager mode its ops run at once
local EAGER_BLOCK = { append_op = function(_, spec) run_spec_eagerly(spec) end }
-- (kind.prepare, when a kind has one, runs before the update op, static or
-- eager: prepare(self, param, lr, block, tmp) returns the value the op reads
-- as Param, and, static, the ops it appended; tmp(shape, dtype) makes a
-- temporary variable (a tensor in eager mode).)

local function op1(opname, inputs, attrs)
  local ins = {}
  for i, kv in ipairs(inputs) do ins[i] = kv end
  return require("oar.eager")._run(opname, ins, { { "Out", 1 } }, attrs)[1]
end

-- the grads after oar.clip's ops (the ops Clip:apply appends, in its order)
local function clip_grads(c, grads, order)
  if c.kind == "value" or c.kind == "norm" then
    for _, i in ipairs(order) do
      if c.kind == "value" then
        grads[i] = op1("clip", { { "X", grads[i] } }, { min = c.min, max = c.max })
      else
        grads[i] = op1("clip_by_norm", { { "X", grads[i] } }, { max_norm = c.clip_norm })
      end
    end
    return
  end
  local sums = {}
  for k, i in ipairs(order) do
    local sq = op1("square", { { "X", grads[i] } })
    sums[k] = op1("reduce_sum", { { "X", sq } }, { dim = { 0 }, keep_dim = false, reduce_all = true })
  end
  local total = #sums > 1 and op1("sum", { { "X", sums } }) or sums[1]
  local norm = op1("sqrt", { { "X", total } })
  local clip = op1("fill_constant", {}, { shape = { 1 }, dtype = require("oar.dtypes").enum("float32"),
                                          value = c.clip_norm })
  local denom = op1("elementwise_max", { { "X", norm }, { "Y", clip } }, { axis = -1 })
  local factor = op1("elementwise_div", { { "X", clip }, { "Y", denom } }, { axis = -1 })
  for _, i in ipairs(order) do
    grads[i] = op1("elementwise_mul", { { "X", grads[i] }, { "Y", factor } }, { axis = -1 })
  end
end

-- grad + decay(param), by oar.regularizer's ops (Regularizer:decay_term, then sum)
local function regularized(reg, p, g)
  local decay
  if reg.kind == "l2" then
    decay = op1("scale", { { "X", p } }, { scale = reg.coeff })
  else
    decay = op1("scale", { { "X", op1("sign", { { "X", p } }) } }, { scale = reg.coeff })
  end
  return op1("sum", { { "X", { g, decay } } })
end

-- the methods, copied into the class by install
local Optimizer = {}

function Optimizer:_eager_accumulator(a, p)
  local by_param = self._eager_acc[a.name]
  if not by_param then
    by_param = setmetatable({}, { __mode = "k" })
    self._eager_acc[a.name] = by_param
  end
  local t = by_param[p]
  if t then return t end
  local fill = a.fill
  if type(fill) == "string" then fill = self.hyper[fill] end
  t = require("oar.eager").full(a.shape or p:shape(), fill or 0.0, p:dtype())
  by_param[p] = t
  return t
end

function Optimizer:_eager_check(who)
  if type(self) ~= "table" or getmetatable(self) == nil or getmetatable(self)._eager_check ~= Optimizer._eager_check then
    raise(who .. ": call it with ':' on an optimizer")
  end
  if not self.parameters then
    raise(string.format("%s:%s: this optimizer has no 'parameters' (make it with {parameters = model:parameters()} "
      .. "for eager mode; static programs use minimize)", self.kind.name, who))
  end
end

-- this step's [1] float32 rate: the schedule's next value, or the number's tensor
function Optimizer:_eager_rate()
  local eager = require("oar.eager")
  local lr = self.learning_rate
  if lr_scheduler.is_scheduler(lr) then return lr:step() end
  if type(lr) ~= "number" then
    raise(self.kind.name .. ":step: 'learning_rate' must be a number or a schedule in eager mode, got " .. describe(lr))
  end
  -- the [1] float32 rate the startup program would fill
  if not self._eager_lr or self._eager_lr_value ~= lr then
    self._eager_lr = eager.full({ 1 }, lr, "float32")
    self._eager_lr_value = lr
  end
  return self._eager_lr
end

--- Eager mode: updates every parameter that has a gradient (`p.grad`) as a static program's optimize pass would: `grad_clip` (over the parameters with a gradient), `regularization`, then the optimizer's op (sgd, momentum, adam, ...); accumulators live in the optimizer; a schedule advances one step. Needs `parameters=` at construction.
-- @raise when the optimizer was made without `parameters`
-- @usage
-- local w = oar.ones(2):requires_grad()
-- local opt = oar.optimizer.SGD{learning_rate = 0.1, parameters = {w}}
-- (w * w):sum():backward(); opt:step(); opt:zero_grad()
function Optimizer:step()
  self:_eager_check("step")
  local kind = self.kind
  if not lib.C.oar_op_is_registered(kind.op) then
    raise(string.format("%s: the '%s' op is not available in this build of liboar", kind.name, kind.op))
  end
  local eager = require("oar.eager")
  eager.no_grad(function()
    local lr_t = self:_eager_rate()
    local grads, live = {}, {}
    for i, p in ipairs(self.parameters) do
      local g = rawget(p, "grad")
      if g ~= nil then grads[i] = g; live[#live + 1] = i end
    end
    if #live == 0 then return end
    if self.grad_clip then clip_grads(self.grad_clip, grads, live) end
    if self.regularization then
      for _, i in ipairs(live) do grads[i] = regularized(self.regularization, self.parameters[i], grads[i]) end
    end
    for _, i in ipairs(live) do
      local p = self.parameters[i]
      local acc = {}
      for _, a in ipairs(kind.accumulators or {}) do acc[a.name] = self:_eager_accumulator(a, p) end
      local rate = kind.uses_lr ~= false and lr_t or nil
      local pin = p
      if kind.prepare then
        pin = kind.prepare(self, p, rate, EAGER_BLOCK, function(shape, dtype) return eager.full(shape, 0.0, dtype) end)
      end
      local spec = kind.build(self, pin, grads[i], rate, acc)
      spec.type = kind.op
      if pin ~= p then spec.inputs.Param = { pin }; spec.outputs.ParamOut = { p } end
      run_spec_eagerly(spec)
      if kind.finish then kind.finish(self, p, acc, EAGER_BLOCK) end
    end
  end)
end

--- Eager mode: forgets the parameters' gradients (`p.grad = nil`), so the next backward starts from zero.
-- @usage opt:zero_grad()
function Optimizer:zero_grad()
  self:_eager_check("zero_grad")
  for _, p in ipairs(self.parameters) do rawset(p, "grad", nil) end
end

--- Eager mode: the learning rate used from the next step on (a number; it replaces a schedule).
-- @tparam number lr
-- @usage opt:set_lr(opt:get_lr() * 0.5)
function Optimizer:set_lr(lr)
  if type(lr) ~= "number" then raise(self.kind.name .. ":set_lr: expected a number, got " .. describe(lr)) end
  self.learning_rate = lr
end

--- The learning rate: a number; with a schedule, the rate of the next step (a number); the schedule Variable of a static optimizer.
-- @usage local lr = opt:get_lr()
function Optimizer:get_lr()
  local lr = self.learning_rate
  if lr_scheduler.is_scheduler(lr) then return lr:get_lr() end
  return lr
end

--- Eager mode: the optimizer's state, a table of tensors (copies) and numbers: each accumulator as `"<i>.<name>"` (i the parameter's 1-based position in `parameters`, e.g. `"1.moment1"`), `"learning_rate"` (a number) or `"LR_Scheduler"` (`{steps = n}`). `oar.save` writes it; `set_state_dict` restores it.
-- @treturn table
-- @usage oar.save(opt:state_dict(), path)
function Optimizer:state_dict()
  self:_eager_check("state_dict")
  local sd = {}
  for _, a in ipairs(self.kind.accumulators or {}) do
    local by_param = self._eager_acc[a.name]
    if by_param then
      for i, p in ipairs(self.parameters) do
        local t = by_param[p]
        if t then sd[i .. "." .. a.name] = require("oar.eager")._plain_clone(t) end
      end
    end
  end
  local lr = self.learning_rate
  if lr_scheduler.is_scheduler(lr) then sd.LR_Scheduler = lr:state_dict() else sd.learning_rate = lr end
  return sd
end

--- Eager mode: restores a state `state_dict` returned (or `oar.load` read) into this optimizer, made over the same parameters in the same order; every key must be one this optimizer has, with its shape. Returns self.
-- @tparam table sd
-- @usage opt:set_state_dict(oar.load(path))
function Optimizer:set_state_dict(sd)
  self:_eager_check("set_state_dict")
  local who = self.kind.name .. ":set_state_dict"
  if type(sd) ~= "table" then raise(who .. ": expected a table from state_dict, got " .. describe(sd)) end
  local accs = {}
  for _, a in ipairs(self.kind.accumulators or {}) do accs[a.name] = a end
  local tensor = require("oar.tensor")
  local todo = {}
  for k, v in pairs(sd) do
    if k == "LR_Scheduler" then
      if not lr_scheduler.is_scheduler(self.learning_rate) then
        raise(who .. ": the state has a schedule's step, this optimizer's learning rate is a number")
      end
    elseif k == "learning_rate" then
      if type(v) ~= "number" then raise(who .. ": 'learning_rate' must be a number, got " .. describe(v)) end
    else
      local i, name = tostring(k):match("^(%d+)%.(.+)$")
      local p = i and self.parameters[tonumber(i)]
      if not p or not accs[name] then
        raise(string.format("%s: unexpected key '%s' (this %s has %d parameters and accumulators {%s})", who,
          tostring(k), self.kind.name, #self.parameters, table.concat((function()
            local n = {}
            for _, a in ipairs(self.kind.accumulators or {}) do n[#n + 1] = a.name end
            return n
          end)(), ", ")))
      end
      if not tensor.is_tensor(v) then raise(string.format("%s: '%s' must be a tensor, got %s", who, k, describe(v))) end
      local want = accs[name].shape or p:shape()
      if table.concat(want, ",") ~= table.concat(v:shape(), ",") then
        raise(string.format("%s: '%s' has shape [%s] in the state, [%s] here", who, k,
          table.concat(v:shape(), ", "), table.concat(want, ", ")))
      end
      todo[#todo + 1] = { accs[name], p, v }
    end
  end
  require("oar.eager").no_grad(function()
    for _, job in ipairs(todo) do self:_eager_accumulator(job[1], job[2]):copy(job[3]) end
  end)
  if sd.LR_Scheduler then self.learning_rate:set_state_dict(sd.LR_Scheduler) end
  if sd.learning_rate then self.learning_rate = sd.learning_rate end
  return self
end

--- Installs the eager methods into the Optimizer class (optimizer.lua calls it).
-- @tparam table cls the optimizer class
-- @local
function M.install(cls)
  for k, v in pairs(Optimizer) do cls[k] = v end
end

return M
