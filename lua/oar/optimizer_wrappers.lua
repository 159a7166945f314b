--- Fluid 1.8's optimizer wrappers and parameter averages, installed into
-- `oar.optimizer`: LookaheadOptimizer and GradientMergeOptimizer wrap an
-- optimizer's minimize; ModelAverage and ExponentialMovingAverage keep
-- averages of the parameters and swap them in (`apply`) and back out
-- (`restore`); RecomputeOptimizer is in oar.recompute.
-- Step counters are float32 cycles in [0, k): exact, and selecting with
-- 0/1 masks (`a * (1 - m) + b * m`) keeps the chosen value bit for bit.
-- @module oar.optimizer_wrappers
local framework = require("oar.framework")
local unique_name = require("oar.unique_name")
local argcheck = require("oar.argcheck")
local initializer = require("oar.initializer")

local raise, describe, is_variable = framework.raise, framework.describe, framework.is_variable
local dtype_enum = require("oar.dtypes").enum
local BOOL, I64, F32 = dtype_enum("bool"), dtype_enum("int64"), dtype_enum("float32")

local M = {}

-- ---- small builders -----------------------------------------------------------

local function op(block, t, inputs, outputs, attrs)
  return block:append_op{ type = t, inputs = inputs, outputs = outputs, attrs = attrs }
end

local function tmp(block, like, dtype)
  return block:create_var{ name = unique_name.generate((like and like.name or "wrapper") .. ".tmp"),
                           shape = like and like.shape or { 1 }, dtype = dtype or (like and like.dtype) or "float32",
                           stop_gradient = true }
end

-- a persistable var of `program` filled with `value` by `startup`
local function persist(program, startup, name, shape, dtype, value)
  local spec = { name = unique_name.generate(name), shape = shape, dtype = dtype, persistable = true,
                 stop_gradient = true }
  local v = program:global_block():create_var(spec)
  local sv = startup:global_block():create_var(spec)
  initializer.Constant{ value = value or 0 }(sv, startup:global_block())
  return v
end

local function binary(block, t, x, y, out)
  out = out or tmp(block, x)
  op(block, t, { X = { x }, Y = { y } }, { Out = { out } }, { axis = -1 })
  return out
end

local function scale(block, x, s, b, out)
  out = out or tmp(block, x)
  op(block, "scale", { X = { x } }, { Out = { out } }, { scale = s, bias = b or 0, bias_after_scale = true })
  return out
end

-- out = a (where m = 0) or b (where m = 1), exactly: a * (1 - m) + b * m
local function select(block, m, a, b, out)
  local keep = scale(block, m, -1, 1)
  local x = binary(block, "elementwise_mul", a, keep)
  local y = binary(block, "elementwise_mul", b, m)
  return binary(block, "elementwise_add", x, y, out or a)
end

-- A cycle counter c in [0, k) counted up once per run: returns a float32
-- [1] mask that is 1 on every k-th run (c reached k, and wraps to 0)
local function every_k(program, startup, block, k, name)
  local c = persist(program, startup, name .. "_step", { 1 }, "float32", 0)
  scale(block, c, 1, 1, c)
  local kv = tmp(block, c)
  op(block, "fill_constant", {}, { Out = { kv } }, { shape = { 1 }, dtype = "float32", value = k })
  local hit = tmp(block, c, "bool")
  op(block, "greater_equal", { X = { c }, Y = { kv } }, { Out = { hit } }, { axis = -1 })
  local m = tmp(block, c)
  op(block, "cast", { X = { hit } }, { Out = { m } }, { in_dtype = BOOL, out_dtype = F32 })
  local back = scale(block, m, -k)
  binary(block, "elementwise_add", c, back, c)
  return m, hit
end

local function startup_of(opts)
  local s = type(opts) == "table" and not framework.is_program(opts) and opts.startup_program or opts
  if s == nil then return framework.default_startup_program() end
  if not framework.is_program(s) then raise("startup_program must be a Program, got " .. describe(s)) end
  return s
end

local function check_inner(who, inner)
  if type(inner) ~= "table" or type(inner.minimize) ~= "function" then
    raise(who .. ": 'inner_optimizer' must be an optimizer, got " .. describe(inner))
  end
end

local function number(who, key, v, default, lo, hi)
  if v == nil then return default end
  if type(v) ~= "number" or v ~= v or (lo and v < lo) or (hi and v > hi) then
    raise(string.format("%s: '%s' must be a number in [%s, %s], got %s", who, key, tostring(lo or "-inf"),
      tostring(hi or "inf"), describe(v)))
  end
  return v
end

-- inner, opts from (inner, {..}) or ({inner_optimizer = inner, ..})
local function wrapper_args(who, a, b, known)
  if type(a) == "table" and a.inner_optimizer ~= nil then
    argcheck.keys("oar.optimizer." .. who, a, "inner_optimizer " .. known)
    return a.inner_optimizer, a
  end
  if b ~= nil and type(b) ~= "table" then raise(who .. ": options must be a table, got " .. describe(b)) end
  if b then argcheck.keys("oar.optimizer." .. who, b, known) end
  return a, b or {}
end

local function trainable_params(program)
  local out = {}
  for _, p in ipairs(program:global_block():all_parameters()) do
    if rawget(p, "trainable") ~= false and rawget(p, "do_model_average") ~= false then out[#out + 1] = p end
  end
  return out
end

local function run_program(executor, prog, scope)
  if type(executor) ~= "table" or type(executor.run) ~= "function" then
    raise("the executor must be an oar.Executor, got " .. describe(executor))
  end
  executor:run(prog, { scope = scope })
end

-- a persistable var of v's name, shape and dtype in block b (the apply and
-- restore programs of EMA and ModelAverage read the scope's values)
local function clone(b, v)
  return b:create_var{ name = v.name, shape = v.shape, dtype = v.dtype, persistable = true }
end

-- EMA:apply and ModelAverage:apply: build(self) makes self.apply_program and
-- self.restore_program once; runs apply, then fn() and restore when asked
local function apply_then(self, build, executor, need_restore, fn, scope)
  build(self)
  run_program(executor, self.apply_program, scope)
  if fn then
    local ok, err = pcall(fn)
    if need_restore ~= false then self:restore(executor, scope) end
    if not ok then error(err, 0) end
  end
end

-- ---- Lookahead ----------------------------------------------------------------

local Lookahead = {}
Lookahead.__index = Lookahead

--- Lookahead (Fluid's LookaheadOptimizer): the inner optimizer updates the
-- fast weights every step; slow weights start as the fast ones after the
-- first step, and every k-th step both become slow + alpha (fast - slow).
-- @param inner the inner optimizer (or `{inner_optimizer=, alpha=, k=}`)
-- @tparam[opt] table opts `{alpha = 0.5, k = 5}`
-- @treturn LookaheadOptimizer with `minimize(loss, startup_program)`
-- @usage oar.optimizer.LookaheadOptimizer(oar.optimizer.SGD(0.1), {alpha = 0.5, k = 5}):minimize(loss)
function M.LookaheadOptimizer(inner, opts)
  local who = "LookaheadOptimizer"
  inner, opts = wrapper_args(who, inner, opts, "alpha k")
  check_inner(who, inner)
  local k = number(who, "k", opts.k, 5, 1)
  if k % 1 ~= 0 then raise(who .. ": 'k' must be a positive integer, got " .. k) end
  return setmetatable({ inner = inner, alpha = number(who, "alpha", opts.alpha, 0.5, 0, 1), k = k }, Lookahead)
end

--- Minimizes with the inner optimizer, then appends the slow-weight update.
-- @tparam Variable loss
-- @tparam[opt] Program|table startup_program or the inner minimize's options
-- @treturn {Operator,...} the inner optimize ops
-- @treturn {{Variable,Variable},...} the `{param, grad}` pairs
-- @usage local ops, pg = look:minimize(loss)
function Lookahead:minimize(loss, startup_program)
  local ops, pg = self.inner:minimize(loss, startup_program)
  local program, startup = loss.block.program, startup_of(startup_program)
  local block = program:global_block()
  program:_optimized_guard(nil, function()
    local started = persist(program, startup, "lookahead_started", { 1 }, "float32", 0)
    local first = scale(block, started, -1, 1)                 -- 1 on the first step only
    op(block, "fill_constant", {}, { Out = { started } }, { shape = { 1 }, dtype = "float32", value = 1 })
    local sync = every_k(program, startup, block, self.k, "lookahead")
    local eff = binary(block, "elementwise_mul", sync, scale(block, first, -1, 1))   -- Fluid's Switch: first wins
    for _, p in ipairs(pg) do
      local fast = p[1]
      if p[2] ~= nil then
        local slow = persist(program, startup, fast.name .. "@SLOW", fast.shape, fast.dtype, 0)
        select(block, first, slow, fast, slow)
        local mix = binary(block, "elementwise_add", scale(block, fast, self.alpha), scale(block, slow, 1 - self.alpha))
        select(block, eff, fast, mix, fast)
        select(block, eff, slow, mix, slow)
      end
    end
  end)
  return ops, pg
end

-- ---- GradientMerge --------------------------------------------------------------

local GradientMerge = {}
GradientMerge.__index = GradientMerge

--- Gradient merge (Fluid's GradientMergeOptimizer): gradients add up over
-- k_steps runs; every k_steps-th run the inner optimizer updates with their
-- sum (their mean with avg) inside a conditional block, and the sums reset.
-- @param inner the inner optimizer (or `{inner_optimizer=, k_steps=, avg=}`)
-- @tparam[opt] table opts `{k_steps = 1, avg = true}`
-- @treturn GradientMergeOptimizer with `minimize(loss, startup_program)`
-- @usage oar.optimizer.GradientMergeOptimizer(oar.optimizer.SGD(0.1), {k_steps = 4}):minimize(loss)
function M.GradientMergeOptimizer(inner, opts)
  local who = "GradientMergeOptimizer"
  inner, opts = wrapper_args(who, inner, opts, "k_steps avg")
  check_inner(who, inner)
  local k = number(who, "k_steps", opts.k_steps, 1, 1)
  if k % 1 ~= 0 then raise(who .. ": 'k_steps' must be a positive integer, got " .. k) end
  local avg = opts.avg
  if avg == nil then avg = true end
  return setmetatable({ inner = inner, k_steps = k, avg = avg and true or false }, GradientMerge)
end

--- Appends backward, the gradient sums and the conditional update.
-- @tparam Variable loss
-- @tparam[opt] Program|table startup_program or the inner minimize's options
-- @treturn {{Variable,Variable},...} the `{param, grad}` pairs (the per-run grads)
-- @usage local pg = merge:minimize(loss)
function GradientMerge:minimize(loss, startup_program)
  local program, startup = loss.block.program, startup_of(startup_program)
  local opts = type(startup_program) == "table" and not framework.is_program(startup_program) and startup_program or {}
  local pg = self.inner:backward(loss, opts)
  if self.k_steps == 1 then
    self.inner:apply_gradients(pg, program, startup)
    return pg
  end
  local block = program:global_block()
  local merged = {}
  local hit
  program:_optimized_guard(nil, function()
    for i, p in ipairs(pg) do
      if p[2] ~= nil then
        local acc = persist(program, startup, p[1].name .. "@GRAD@MERGED", p[1].shape, p[1].dtype, 0)
        binary(block, "elementwise_add", acc, p[2], acc)
        merged[#merged + 1] = { p[1], acc }
      end
      pg[i] = p
    end
    local _
    _, hit = every_k(program, startup, block, self.k_steps, "gradient_merge")
  end)
  local layers = require("oar.layers")
  layers.cond(hit, function()
    local sub = program:current_block()
    program:_optimized_guard(nil, function()
      if self.avg then
        for _, m in ipairs(merged) do scale(sub, m[2], 1 / self.k_steps, 0, m[2]) end
      end
    end)
    self.inner:apply_gradients(merged, program, startup)
    program:_optimized_guard(nil, function()
      for _, m in ipairs(merged) do scale(sub, m[2], 0, 0, m[2]) end
    end)
  end)
  return pg
end

-- ---- ExponentialMovingAverage -------------------------------------------------------

local EMA = {}
EMA.__index = EMA

--- Exponential moving average of the parameters (Fluid 1.8's
-- ExponentialMovingAverage): `update()` appends ema = decay ema + (1 - decay)
-- param to the main program; `apply` swaps in ema / (1 - decay^t) (bias
-- corrected, t the number of updates) and `restore` puts the parameters
-- back. With thres_steps (a Variable, e.g. a step counter) decay is
-- min(decay, (thres_steps + 1) / (thres_steps + 10)). Takes the trainable
-- parameters of the default main program when made.
-- @tparam[opt] table spec `{decay = 0.999, thres_steps = nil, name = nil}`
-- @treturn ExponentialMovingAverage
-- @usage local ema = oar.optimizer.ExponentialMovingAverage{decay = 0.99}; ema:update()
function M.ExponentialMovingAverage(spec)
  local who = "ExponentialMovingAverage"
  spec = spec or {}
  if type(spec) == "number" then spec = { decay = spec } end
  argcheck.keys("oar.optimizer." .. who, spec, "decay thres_steps name")
  local decay = number(who, "decay", spec.decay, 0.999, 0, 1)
  if spec.thres_steps ~= nil and not is_variable(spec.thres_steps) then
    raise(who .. ": 'thres_steps' must be a Variable, got " .. describe(spec.thres_steps))
  end
  local program, startup = framework.default_main_program(), framework.default_startup_program()
  local self = setmetatable({ decay = decay, thres_steps = spec.thres_steps, name = spec.name or "",
                              program = program, params = trainable_params(program), emas = {} }, EMA)
  local block = program:global_block()
  program:_lr_schedule_guard(function()
    self.decay_var = persist(program, startup, self.name .. "scheduled_ema_decay_rate", { 1 }, "float32", decay)
    if self.thres_steps then
      local t = tmp(block, nil, "float32")
      op(block, "cast", { X = { self.thres_steps } }, { Out = { t } },
         { in_dtype = dtype_enum(self.thres_steps.dtype), out_dtype = F32 })
      local num, den = scale(block, t, 1, 1), scale(block, t, 1, 10)
      local dt = binary(block, "elementwise_div", num, den)
      local d = tmp(block, nil, "float32")
      op(block, "fill_constant", {}, { Out = { d } }, { shape = { 1 }, dtype = "float32", value = decay })
      binary(block, "elementwise_min", dt, d, self.decay_var)
    end
  end)
  self.step = persist(program, startup, self.name .. "@EMA_STEP_COUNTER@", { 1 }, "float32", 0)
  for _, p in ipairs(self.params) do
    self.emas[p.name] = persist(program, startup, self.name .. p.name .. "_ema", p.shape, p.dtype, 0)
  end
  return self
end

--- Appends the average's update to the main program (after minimize).
-- @usage ema:update()
function EMA:update()
  local program = self.program
  local block = program:global_block()
  program:_optimized_guard(nil, function()
    scale(block, self.step, 1, 1, self.step)
    local keep = scale(block, self.decay_var, -1, 1)
    for _, p in ipairs(self.params) do
      local e = self.emas[p.name]
      local a = binary(block, "elementwise_mul", e, self.decay_var)
      local b = binary(block, "elementwise_mul", p, keep)
      binary(block, "elementwise_add", a, b, e)
    end
  end)
end

local function swap_programs(self)
  if self.apply_program then return end
  local ap, rp = framework.Program(), framework.Program()
  local ab, rb = ap:global_block(), rp:global_block()
  local step, dv = clone(ab, self.step), clone(ab, self.decay_var)
  -- decay^t, and the bias correction only once t > 0
  local pow = binary(ab, "elementwise_pow", dv, step)
  local denom = scale(ab, pow, -1, 1)
  local zero = tmp(ab, step)
  op(ab, "fill_constant", {}, { Out = { zero } }, { shape = { 1 }, dtype = "float32", value = 0 })
  local pos = tmp(ab, step, "bool")
  op(ab, "greater_than", { X = { step }, Y = { zero } }, { Out = { pos } }, { axis = -1 })
  local m = tmp(ab, step)
  op(ab, "cast", { X = { pos } }, { Out = { m } }, { in_dtype = BOOL, out_dtype = F32 })
  local one = scale(ab, m, 0, 1)
  local d = select(ab, m, one, denom, tmp(ab, step))
  self.backups = {}
  for _, p in ipairs(self.params) do
    local pa, e = clone(ab, p), clone(ab, self.emas[p.name])
    local bk = clone(ab, { name = unique_name.generate(p.name .. "@EMA_BACKUP"), shape = p.shape, dtype = p.dtype })
    self.backups[p.name] = bk.name
    op(ab, "assign", { X = { pa } }, { Out = { bk } })
    local ed = tmp(ab, p)
    op(ab, "elementwise_div", { X = { e }, Y = { d } }, { Out = { ed } }, { axis = -1 })
    op(ab, "assign", { X = { ed } }, { Out = { pa } })
    local pr, br = clone(rb, p), clone(rb, bk)
    op(rb, "assign", { X = { br } }, { Out = { pr } })
  end
  self.apply_program, self.restore_program = ap, rp
end

--- Swaps the averages into the parameters (bias corrected); with
-- need_restore (the default) and `fn`, runs fn() and then restores.
-- @tparam Executor executor
-- @tparam[opt=true] bool need_restore restore after fn
-- @tparam[opt] function fn run with the averages in place
-- @tparam[opt] Scope scope default: the global scope
-- @usage ema:apply(exe, true, function() exe:run(test_prog, {feed = f}) end)
function EMA:apply(executor, need_restore, fn, scope)
  apply_then(self, swap_programs, executor, need_restore, fn, scope)
end

--- Puts back the parameters `apply` saved.
-- @tparam Executor executor
-- @tparam[opt] Scope scope default: the global scope
-- @usage ema:restore(exe)
function EMA:restore(executor, scope)
  swap_programs(self)
  run_program(executor, self.restore_program, scope)
end

-- ---- ModelAverage ----------------------------------------------------------------

local ModelAverage = {}
ModelAverage.__index = ModelAverage

--- Model average (Fluid's ModelAverage): appends average_accumulates for
-- every trainable parameter of the default main program (make it after
-- minimize); `apply` sets each parameter to (sum_1 + sum_2 + sum_3) /
-- (num_accumulates + old_num_accumulates) and `restore` puts it back.
-- @tparam table spec `{average_window_rate=, min_average_window = 10000, max_average_window = 10000, name=}`
-- @treturn ModelAverage
-- @usage local ma = oar.optimizer.ModelAverage{average_window_rate = 0.15}
function M.ModelAverage(spec)
  local who = "ModelAverage"
  if type(spec) == "number" then spec = { average_window_rate = spec } end
  if type(spec) ~= "table" then raise(who .. ": expected a table of options, got " .. describe(spec)) end
  argcheck.keys("oar.optimizer." .. who, spec, "average_window_rate min_average_window max_average_window "
    .. "regularization name")
  local rate = number(who, "average_window_rate", spec.average_window_rate, nil, 0, 1)
  if rate == nil then raise(who .. ": 'average_window_rate' is required") end
  local self = setmetatable({ rate = rate, min_w = number(who, "min_average_window", spec.min_average_window, 10000, 1),
    max_w = number(who, "max_average_window", spec.max_average_window, 10000, 1), acc = {} }, ModelAverage)
  local program, startup = framework.default_main_program(), framework.default_startup_program()
  self.params = trainable_params(program)
  local block = program:global_block()
  for _, p in ipairs(self.params) do
    local a = {}
    for _, s in ipairs({ "sum_1", "sum_2", "sum_3" }) do
      a[s] = persist(program, startup, p.name .. "_" .. s, p.shape, p.dtype, 0)
    end
    for _, s in ipairs({ "num_accumulates", "old_num_accumulates", "num_updates" }) do
      a[s] = persist(program, startup, p.name .. "_" .. s, { 1 }, "int64", 0)
    end
    self.acc[p.name] = a
    program:_optimized_guard({ p }, function()
      op(block, "average_accumulates",
        { param = { p }, in_sum_1 = { a.sum_1 }, in_sum_2 = { a.sum_2 }, in_sum_3 = { a.sum_3 },
          in_num_accumulates = { a.num_accumulates }, in_old_num_accumulates = { a.old_num_accumulates },
          in_num_updates = { a.num_updates } },
        { out_sum_1 = { a.sum_1 }, out_sum_2 = { a.sum_2 }, out_sum_3 = { a.sum_3 },
          out_num_accumulates = { a.num_accumulates }, out_old_num_accumulates = { a.old_num_accumulates },
          out_num_updates = { a.num_updates } },
        { average_window = rate, min_average_window = self.min_w, max_average_window = self.max_w })
    end)
  end
  return self
end

local function average_programs(self)
  if self.apply_program then return end
  local ap, rp = framework.Program(), framework.Program()
  local ab, rb = ap:global_block(), rp:global_block()
  for _, p in ipairs(self.params) do
    local a = self.acc[p.name]
    local pa = clone(ab, p)
    local bk = clone(ab, { name = unique_name.generate(p.name .. "@AVG_BACKUP"), shape = p.shape, dtype = p.dtype })
    op(ab, "assign", { X = { pa } }, { Out = { bk } })
    local counts = {}
    for i, c in ipairs({ a.num_accumulates, a.old_num_accumulates }) do
      counts[i] = tmp(ab, c, p.dtype)
      op(ab, "cast", { X = { clone(ab, c) } }, { Out = { counts[i] } }, { in_dtype = I64, out_dtype = dtype_enum(p.dtype) })
    end
    local nf = binary(ab, "elementwise_add", counts[1], counts[2])
    local s = tmp(ab, p)
    op(ab, "sum", { X = { clone(ab, a.sum_1), clone(ab, a.sum_2), clone(ab, a.sum_3) } }, { Out = { s } })
    op(ab, "elementwise_div", { X = { s }, Y = { nf } }, { Out = { pa } }, { axis = -1 })
    op(rb, "assign", { X = { clone(rb, bk) } }, { Out = { clone(rb, p) } })
  end
  self.apply_program, self.restore_program = ap, rp
end

--- Sets the parameters to their averages; with need_restore (the default)
-- and `fn`, runs fn() and then restores.
-- @tparam Executor executor
-- @tparam[opt=true] bool need_restore
-- @tparam[opt] function fn
-- @tparam[opt] Scope scope default: the global scope
-- @usage ma:apply(exe, true, function() exe:run(test_prog) end)
function ModelAverage:apply(executor, need_restore, fn, scope)
  apply_then(self, average_programs, executor, need_restore, fn, scope)
end

--- Puts back the parameters `apply` replaced.
-- @tparam Executor executor
-- @tparam[opt] Scope scope
-- @usage ma:restore(exe)
function ModelAverage:restore(executor, scope)
  average_programs(self)
  run_program(executor, self.restore_program, scope)
end

--- Installs the wrappers into the optimizer module `O`.
-- @tparam table O oar.optimizer
-- @usage require("oar.optimizer_wrappers").install(oar.optimizer)
function M.install(O)
  O.LookaheadOptimizer, O.GradientMergeOptimizer = M.LookaheadOptimizer, M.GradientMergeOptimizer
  O.ExponentialMovingAverage, O.ModelAverage = M.ExponentialMovingAverage, M.ModelAverage
  O.RecomputeOptimizer = function(...) return require("oar.recompute").RecomputeOptimizer(...) end
end

return M
