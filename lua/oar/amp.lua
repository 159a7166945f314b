--- Mixed-precision training helpers: loss scaling (Fluid's
-- `fluid.contrib.mixed_precision.decorate`).
--
-- `oar.amp.decorate(optimizer, opts)` wraps an optimizer so that its
-- `minimize(loss)` builds, all inside the program:
--
-- * the scaled loss `loss * loss_scaling` (a persistable float32 [1]
--   variable, `init_loss_scaling` at start-up), and its backward pass;
-- * the gradients divided by `loss_scaling` again;
-- * a check that every gradient is finite: a step whose gradients hold an
--   Inf or a NaN applies zero gradients instead (SGD then leaves the
--   parameters as they are; methods with state, such as momentum or Adam,
--   still decay it);
-- * with `use_dynamic_loss_scaling`, the scaling's update: times
--   `incr_ratio` after `incr_every_n_steps` finite steps in a row, times
--   `decr_ratio` (never below 1) after `decr_every_n_nan_or_inf`
--   non-finite ones.
--
-- The scaling keeps small float16 gradients from flushing to zero; in
-- float32 it changes nothing but rounding. Float16 compute itself needs the
-- CUDA backend's float16 kernels (see docs/DECISIONS.md, CUDA section, for
-- what exists); this module is the place- and precision-neutral part.
-- @module oar.amp
-- @usage
-- local opt = oar.amp.decorate(oar.optimizer.SGD{learning_rate = 0.1},
--   {init_loss_scaling = 1024, use_dynamic_loss_scaling = true})
-- opt:minimize(loss)
-- -- opt.loss_scaling is the scaling variable, opt.scaled_loss the scaled loss
local framework = require("oar.framework")
local argcheck = require("oar.argcheck")
local unique_name = require("oar.unique_name")
local layers = require("oar.layers")

local raise = framework.raise
local M = {}

local Decorated = {}
Decorated.__index = Decorated

local OPTS = "init_loss_scaling use_dynamic_loss_scaling incr_every_n_steps decr_every_n_nan_or_inf " ..
  "incr_ratio decr_ratio"

local function number(who, name, v, lo, integer)
  if type(v) ~= "number" or v ~= v or v < lo or (integer and v % 1 ~= 0) then
    raise(string.format("%s: '%s' must be %s >= %s, got %s", who, name, integer and "an integer" or "a number",
      tostring(lo), tostring(v)))
  end
  return v
end

--- Wraps an optimizer with loss scaling.
-- @tparam Optimizer optimizer e.g. `oar.optimizer.SGD{...}`
-- @tparam[opt] table opts `init_loss_scaling` (1.0), `use_dynamic_loss_scaling`
--   (false), `incr_every_n_steps` (1000), `decr_every_n_nan_or_inf` (2),
--   `incr_ratio` (2.0), `decr_ratio` (0.8)
-- @treturn table the decorated optimizer (its `minimize(loss, opts)` takes the optimizer's options)
-- @usage local opt = oar.amp.decorate(oar.optimizer.Adam{learning_rate = 1e-3}, {init_loss_scaling = 128})
function M.decorate(optimizer, opts)
  local who = "oar.amp.decorate"
  if type(optimizer) ~= "table" or type(optimizer.minimize) ~= "function" or type(optimizer.backward) ~= "function" then
    raise(who .. ": 'optimizer' must be an optimizer (oar.optimizer.SGD{...}, ...), got " .. type(optimizer))
  end
  opts = opts or {}
  argcheck.keys(who, opts, OPTS)
  local d = {
    optimizer = optimizer,
    init_loss_scaling = number(who, "init_loss_scaling", opts.init_loss_scaling or 1.0, 0),
    dynamic = opts.use_dynamic_loss_scaling == true,
    incr_every_n_steps = number(who, "incr_every_n_steps", opts.incr_every_n_steps or 1000, 1, true),
    decr_every_n_nan_or_inf = number(who, "decr_every_n_nan_or_inf", opts.decr_every_n_nan_or_inf or 2, 1, true),
    incr_ratio = number(who, "incr_ratio", opts.incr_ratio or 2.0, 1),
    decr_ratio = number(who, "decr_ratio", opts.decr_ratio or 0.8, 0),
  }
  if opts.use_dynamic_loss_scaling ~= nil and type(opts.use_dynamic_loss_scaling) ~= "boolean" then
    raise(who .. ": 'use_dynamic_loss_scaling' must be a boolean, got " .. type(opts.use_dynamic_loss_scaling))
  end
  if d.decr_ratio >= 1 then raise(who .. ": 'decr_ratio' must be below 1, got " .. d.decr_ratio) end
  return setmetatable(d, Decorated)
end

-- ops on [1]-shaped float32 temporaries of the current block
local Builder = {}
Builder.__index = Builder

local function builder(program)
  return setmetatable({ program = program }, Builder)
end

function Builder:var(prefix, dtype, shape)
  return self.program:current_block():create_var{ name = unique_name.generate("amp_" .. prefix),
    dtype = dtype or "float32", shape = shape or { 1 }, stop_gradient = true }
end

function Builder:op(type, inputs, attrs, out, prefix, dtype, shape)
  out = out or self:var(prefix or type, dtype, shape)
  self.program:current_block():append_op{ type = type, inputs = inputs, outputs = { Out = { out } }, attrs = attrs or {} }
  return out
end

function Builder:ew(type, x, y, prefix)
  return self:op(type, { X = { x }, Y = { y } }, { axis = -1 }, nil, prefix, x.dtype, x.shape)
end

function Builder:const(value, prefix)
  return self:op("fill_constant", {}, { shape = { 1 }, dtype = 5, value = value }, nil, prefix or "const")
end

function Builder:scale(x, s, b)
  return self:op("scale", { X = { x } }, { scale = s, bias = b or 0 }, nil, "scale", x.dtype, x.shape)
end

-- 1.0 where cond (bool [1]) holds, else 0.0
function Builder:as_float(cond)
  return self:op("cast", { X = { cond } }, { in_dtype = 0, out_dtype = 5 }, nil, "cast")
end

--- Builds the scaled loss, its backward pass, the unscaling and finiteness
-- check, the scaling's update (dynamic) and the optimizer's update ops.
-- @tparam Variable loss a scalar loss
-- @tparam[opt] table opts the optimizer's minimize options (startup_program, parameter_list, no_grad_set)
-- @treturn table the update ops
-- @treturn table the `{param, grad}` pairs with the unscaled gradients
-- @usage opt:minimize(avg_loss)
function Decorated:minimize(loss, opts)
  local who = "oar.amp decorated minimize"
  if not framework.is_variable(loss) then raise(who .. ": 'loss' must be a Variable, got " .. type(loss)) end
  opts = opts or {}
  local program = loss.block.program
  local startup = opts.startup_program or framework.default_startup_program()
  local result_ops, result_pg
  framework.program_guard(program, startup, function()
    local b = builder(program)
    local ls = layers.create_global_var{ name = unique_name.generate("loss_scaling"), shape = { 1 }, dtype = "float32",
      value = self.init_loss_scaling, persistable = true }
    self.loss_scaling = ls
    self.scaled_loss = b:ew("elementwise_mul", loss, ls, "scaled_loss")
    local pg = self.optimizer:backward(self.scaled_loss, opts)
    -- unscale; sum(0 * g) over every gradient is 0 exactly when all are finite
    local zero_sums, kept = {}, {}
    for _, p in ipairs(pg) do
      if p[2] ~= nil then
        local g = b:ew("elementwise_div", p[2], ls, "unscaled_grad")
        kept[#kept + 1] = { p[1], g }
        zero_sums[#zero_sums + 1] = b:op("reduce_sum", { X = { b:scale(g, 0) } }, { reduce_all = true }, nil, "zsum")
      end
    end
    if #kept == 0 then raise(who .. ": the loss has no gradient with respect to any parameter") end
    local total = b:op("sum", { X = zero_sums }, {}, nil, "zsum_total")
    local finite = b:op("equal", { X = { total }, Y = { b:const(0) } }, { axis = -1 }, nil, "finite", "bool")
    local f = b:as_float(finite)
    self.finite = finite
    -- a non-finite step applies zero gradients: min/max map NaN and Inf to
    -- finite bounds first (0 * NaN would stay NaN), then the 0/1 factor
    local big, nbig = b:const(3e38, "big"), b:const(-3e38, "nbig")
    for i, p in ipairs(kept) do
      local g = b:ew("elementwise_max", b:ew("elementwise_min", p[2], big), nbig)
      kept[i] = { p[1], b:ew("elementwise_mul", g, f, "amp_grad") }
    end
    if self.dynamic then self:_update_scaling(b, ls, f) end
    result_ops = self.optimizer:apply_gradients(kept, program, startup)
    result_pg = kept
  end)
  return result_ops, result_pg
end

-- good/bad step counters and the scaling's update, as arithmetic on [1]
-- tensors: f is 1.0 for a finite step, else 0.0
function Decorated:_update_scaling(b, ls, f)
  local function counter(name)
    return layers.create_global_var{ name = unique_name.generate(name), shape = { 1 }, dtype = "float32", value = 0,
      persistable = true }
  end
  local good, bad = counter("amp_good_steps"), counter("amp_bad_steps")
  self.good_steps, self.bad_steps = good, bad
  local not_f = b:scale(f, -1, 1)
  local good_n = b:ew("elementwise_mul", b:scale(good, 1, 1), f)
  local bad_n = b:ew("elementwise_mul", b:scale(bad, 1, 1), not_f)
  local inc = b:as_float(b:op("greater_equal", { X = { good_n }, Y = { b:const(self.incr_every_n_steps) } },
    { axis = -1 }, nil, "inc", "bool"))
  local dec = b:as_float(b:op("greater_equal", { X = { bad_n }, Y = { b:const(self.decr_every_n_nan_or_inf) } },
    { axis = -1 }, nil, "dec", "bool"))
  local up = b:scale(inc, self.incr_ratio - 1, 1)     -- incr_ratio after a run of finite steps, else 1
  local down = b:scale(dec, self.decr_ratio - 1, 1)   -- decr_ratio after a run of bad ones, else 1
  local new_ls = b:ew("elementwise_max", b:ew("elementwise_mul", b:ew("elementwise_mul", ls, up), down), b:const(1))
  b:op("assign", { X = { new_ls } }, {}, ls)
  b:op("assign", { X = { b:ew("elementwise_mul", good_n, b:scale(inc, -1, 1)) } }, {}, good)
  b:op("assign", { X = { b:ew("elementwise_mul", bad_n, b:scale(dec, -1, 1)) } }, {}, bad)
end

require("oar.framework")._guard_methods(Decorated, function(x) return getmetatable(x) == Decorated end,
  "amp decorated optimizer", {})

return M
