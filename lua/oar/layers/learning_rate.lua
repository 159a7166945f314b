--- oar.layers.learning_rate: learning-rate schedules as ops of the main
-- program (role LRSched), driven by the persistable float counter
-- "@LR_DECAY_COUNTER@" that an `increment` op at the front of the global
-- block advances once per run. Branches (piecewise, warmup) are written as
-- arithmetic on 0/1 comparison results instead of control flow.
-- @module oar.layers.learning_rate
local framework = require("oar.framework")
local argcheck = require("oar.argcheck")
local LayerHelper = require("oar.layer_helper")
local initializer = require("oar.initializer")

local check, raise, is_variable = LayerHelper.check, framework.raise, framework.is_variable

local M = {}

local COUNTER = "@LR_DECAY_COUNTER@"
M.COUNTER_NAME = COUNTER

-- ---- small op builders (current block of the default main program) ----------
local function block() return framework.default_main_program():current_block() end

local function tmp()
  return block():create_var{ dtype = "float32", shape = { 1 } }
end

local function unary(op_type, x, attrs)
  local out = tmp()
  block():append_op{ type = op_type, inputs = { X = { x } }, outputs = { Out = { out } }, attrs = attrs }
  return out
end

local function scale(x, s, b) return unary("scale", x, { scale = s, bias = b or 0.0 }) end

local function binary(kind, x, y)
  local out = tmp()
  block():append_op{ type = "elementwise_" .. kind, inputs = { X = { x }, Y = { y } }, outputs = { Out = { out } },
                     attrs = { axis = -1 } }
  return out
end

local function const(value)
  local out = tmp()
  block():append_op{ type = "fill_constant", outputs = { Out = { out } },
                     attrs = { shape = { 1 }, dtype = "float32", value = value } }
  out.stop_gradient = true
  return out
end

-- 1.0 where step < bound, else 0.0
local function indicator_less(step, bound)
  local cond = block():create_var{ dtype = "bool", shape = { 1 } }
  block():append_op{ type = "less_than", inputs = { X = { step }, Y = { const(bound) } },
                     outputs = { Out = { cond } }, attrs = { axis = -1 } }
  local out = tmp()
  block():append_op{ type = "cast", inputs = { X = { cond } }, outputs = { Out = { out } },
                     attrs = { in_dtype = "bool", out_dtype = "float32" } }
  return out
end

--- The float step counter the schedules read ("@LR_DECAY_COUNTER@", persistable),
-- created once per program; it reads `begin` at the first run and grows by
-- one per run (also `autoincreased_step_counter`).
-- @tparam[opt=0] number begin
-- @treturn Variable float32 [1]
-- @usage local step = layers.decay_step_counter()
function M.decay_step_counter(begin)
  begin = begin or 0
  local main = framework.default_main_program()
  local gb = main:global_block()
  if gb:has_var(COUNTER) then return gb:var(COUNTER) end
  local helper = LayerHelper("global_step_counter", {})
  local counter = helper:create_global_variable{ name = COUNTER, shape = { 1 }, dtype = "float32",
                                                 persistable = true, stop_gradient = true }
  helper:set_variable_initializer(counter, initializer.Constant{ value = begin - 1, force_cpu = true })
  main:_lr_schedule_guard(function()
    gb:prepend_op{ type = "increment", inputs = { X = { counter } }, outputs = { Out = { counter } },
                   attrs = { step = 1.0 } }
  end)
  return counter
end
M.autoincreased_step_counter = M.decay_step_counter

local function scheduled(fn)
  return framework.default_main_program():_lr_schedule_guard(fn)
end

local function positive(who, key, v)
  v = check.number(who, key, v)
  if v <= 0 then check.fail(who, key, "positive", v) end
  return v
end

-- the decay step counter over decay_steps, rounded down when staircase:
-- the progress the exponential, natural_exp and inverse_time schedules use
local function decay_progress(decay_steps, staircase)
  local div = scale(M.decay_step_counter(0), 1.0 / decay_steps)
  if staircase then div = unary("floor", div) end
  return div
end

--- `lr * decay_rate ^ (step / decay_steps)`, the exponent floored with
-- staircase. Positional or `{learning_rate=, decay_steps=, decay_rate=, staircase=}`.
-- Each schedule returns a Variable that an optimizer takes as its learning_rate.
-- @tparam number|table learning_rate the initial rate, or the keyword table
-- @tparam number decay_steps positive
-- @tparam number decay_rate positive
-- @tparam[opt=false] bool staircase
-- @treturn Variable float32 [1], the rate at each step
-- @usage
-- local lr = layers.exponential_decay{learning_rate = 0.1, decay_steps = 1000, decay_rate = 0.5}
-- oar.optimizer.SGD{learning_rate = lr}:minimize(loss)
function M.exponential_decay(learning_rate, decay_steps, decay_rate, staircase)
  local who = "exponential_decay"
  if type(learning_rate) == "table" and not is_variable(learning_rate) then
    local a = argcheck.keys("layers." .. who, learning_rate, "learning_rate decay_steps decay_rate staircase")
    learning_rate, decay_steps, decay_rate, staircase = a.learning_rate, a.decay_steps, a.decay_rate, a.staircase
  end
  learning_rate = check.number(who, "learning_rate", learning_rate)
  decay_steps = positive(who, "decay_steps", decay_steps)
  decay_rate = positive(who, "decay_rate", decay_rate)
  return scheduled(function()
    local div = decay_progress(decay_steps, staircase)
    -- decay_rate ^ div = exp(div * ln(decay_rate))
    return scale(unary("exp", scale(div, math.log(decay_rate))), learning_rate)
  end)
end

--- `lr * exp(-decay_rate * step / decay_steps)` (floored progress with staircase).
-- Positional or `{learning_rate=, decay_steps=, decay_rate=, staircase=}`.
-- @tparam number|table learning_rate
-- @tparam number decay_steps positive
-- @tparam number decay_rate
-- @tparam[opt=false] bool staircase
-- @treturn Variable
-- @usage local lr = layers.natural_exp_decay(0.1, 1000, 0.5, true)
function M.natural_exp_decay(learning_rate, decay_steps, decay_rate, staircase)
  local who = "natural_exp_decay"
  if type(learning_rate) == "table" and not is_variable(learning_rate) then
    local a = argcheck.keys("layers." .. who, learning_rate, "learning_rate decay_steps decay_rate staircase")
    learning_rate, decay_steps, decay_rate, staircase = a.learning_rate, a.decay_steps, a.decay_rate, a.staircase
  end
  learning_rate = check.number(who, "learning_rate", learning_rate)
  decay_steps = positive(who, "decay_steps", decay_steps)
  decay_rate = check.number(who, "decay_rate", decay_rate)
  return scheduled(function()
    local div = decay_progress(decay_steps, staircase)
    return scale(unary("exp", scale(div, -decay_rate)), learning_rate)
  end)
end

--- `lr / (1 + decay_rate * step / decay_steps)` (floored progress with staircase).
-- Positional or `{learning_rate=, decay_steps=, decay_rate=, staircase=}`.
-- @tparam number|table learning_rate
-- @tparam number decay_steps positive
-- @tparam number decay_rate
-- @tparam[opt=false] bool staircase
-- @treturn Variable
-- @usage local lr = layers.inverse_time_decay(0.1, 100, 0.5)
function M.inverse_time_decay(learning_rate, decay_steps, decay_rate, staircase)
  local who = "inverse_time_decay"
  if type(learning_rate) == "table" and not is_variable(learning_rate) then
    local a = argcheck.keys("layers." .. who, learning_rate, "learning_rate decay_steps decay_rate staircase")
    learning_rate, decay_steps, decay_rate, staircase = a.learning_rate, a.decay_steps, a.decay_rate, a.staircase
  end
  learning_rate = check.number(who, "learning_rate", learning_rate)
  decay_steps = positive(who, "decay_steps", decay_steps)
  decay_rate = check.number(who, "decay_rate", decay_rate)
  return scheduled(function()
    local div = decay_progress(decay_steps, staircase)
    return binary("div", const(learning_rate), scale(div, decay_rate, 1.0))
  end)
end

--- `values[i]` while step < boundaries[i]; `values[#values]` after the last
-- boundary. Positional or `{boundaries=, values=}`.
-- @tparam {number,...}|table boundaries increasing steps, or the keyword table
-- @tparam {number,...} values one more than boundaries
-- @treturn Variable
-- @usage local lr = layers.piecewise_decay({1000, 2000}, {0.1, 0.01, 0.001})
function M.piecewise_decay(boundaries, values)
  local who = "piecewise_decay"
  if type(boundaries) == "table" and boundaries.boundaries then
    argcheck.keys("layers." .. who, boundaries, "boundaries values")
    boundaries, values = boundaries.boundaries, boundaries.values
  end
  if type(boundaries) ~= "table" then check.fail(who, "boundaries", "a list of numbers", boundaries) end
  if type(values) ~= "table" then check.fail(who, "values", "a list of numbers", values) end
  if #values ~= #boundaries + 1 then
    raise(string.format("%s: 'values' needs one more entry than 'boundaries' (%d boundaries, %d values)",
      who, #boundaries, #values))
  end
  for i, b in ipairs(boundaries) do
    check.number(who, "boundaries[" .. i .. "]", b)
    if i > 1 and b < boundaries[i - 1] then raise(who .. ": 'boundaries' must be nondecreasing") end
  end
  for i, v in ipairs(values) do check.number(who, "values[" .. i .. "]", v) end
  return scheduled(function()
    local step = M.decay_step_counter(0)
    local n = #values
    if n == 1 then return const(values[1]) end
    local terms = {}
    for k = 1, #boundaries do
      terms[k] = scale(indicator_less(step, boundaries[k]), values[k] - values[k + 1])
    end
    local total = terms[1]
    if #terms > 1 then
      total = tmp()
      block():append_op{ type = "sum", inputs = { X = terms }, outputs = { Out = { total } } }
    end
    return scale(total, 1.0, values[n])
  end)
end

--- `(lr - end_lr) * (1 - step / decay_steps) ^ power + end_lr`; with cycle
-- the horizon grows to the next multiple of decay_steps, else step stops at
-- it. Positional or `{learning_rate=, decay_steps=, end_learning_rate=, power=, cycle=}`.
-- @tparam number|table learning_rate
-- @tparam number decay_steps positive
-- @tparam[opt=0.0001] number end_learning_rate
-- @tparam[opt=1.0] number power
-- @tparam[opt=false] bool cycle
-- @treturn Variable
-- @usage local lr = layers.polynomial_decay{learning_rate = 0.1, decay_steps = 5000, power = 2}
function M.polynomial_decay(learning_rate, decay_steps, end_learning_rate, power, cycle)
  local who = "polynomial_decay"
  if type(learning_rate) == "table" and not is_variable(learning_rate) then
    local a = argcheck.keys("layers." .. who, learning_rate,
      "learning_rate decay_steps end_learning_rate power cycle")
    learning_rate, decay_steps, end_learning_rate, power, cycle =
      a.learning_rate, a.decay_steps, a.end_learning_rate, a.power, a.cycle
  end
  learning_rate = check.number(who, "learning_rate", learning_rate)
  decay_steps = positive(who, "decay_steps", decay_steps)
  end_learning_rate = check.number(who, "end_learning_rate", end_learning_rate, 0.0001)
  power = check.number(who, "power", power, 1.0)
  return scheduled(function()
    local step = M.decay_step_counter(0)
    local frac
    if cycle then
      local div = unary("ceil", scale(step, 1.0 / decay_steps))
      div = binary("max", div, const(1.0))     -- step 0 uses the first horizon
      frac = binary("div", step, scale(div, decay_steps))
    else
      frac = scale(binary("min", step, const(decay_steps)), 1.0 / decay_steps)
    end
    local base = scale(frac, -1.0, 1.0)
    local p = power == 1.0 and base or unary("pow", base, { factor = power })
    return scale(p, learning_rate - end_learning_rate, end_learning_rate)
  end)
end

--- `lr * 0.5 * (cos(floor(step / step_each_epoch) * pi / epochs) + 1)`.
-- Positional or `{learning_rate=, step_each_epoch=, epochs=}`.
-- @tparam number|table learning_rate
-- @tparam number step_each_epoch positive
-- @tparam number epochs positive
-- @treturn Variable
-- @usage local lr = layers.cosine_decay(0.1, 938, 20)
function M.cosine_decay(learning_rate, step_each_epoch, epochs)
  local who = "cosine_decay"
  if type(learning_rate) == "table" and not is_variable(learning_rate) then
    local a = argcheck.keys("layers." .. who, learning_rate, "learning_rate step_each_epoch epochs")
    learning_rate, step_each_epoch, epochs = a.learning_rate, a.step_each_epoch, a.epochs
  end
  learning_rate = check.number(who, "learning_rate", learning_rate)
  step_each_epoch = positive(who, "step_each_epoch", step_each_epoch)
  epochs = positive(who, "epochs", epochs)
  return scheduled(function()
    local step = M.decay_step_counter(0)
    local epoch = unary("floor", scale(step, 1.0 / step_each_epoch))
    local c = unary("cos", scale(epoch, math.pi / epochs))
    return scale(c, learning_rate * 0.5, learning_rate * 0.5)
  end)
end

--- The Transformer's schedule: `learning_rate * d_model^-0.5 *
-- min(step^-0.5, step * warmup_steps^-1.5)`, step counted from 1.
-- Positional or `{d_model=, warmup_steps=, learning_rate=}`.
-- @tparam number|table d_model positive
-- @tparam number warmup_steps positive
-- @tparam[opt=1.0] number learning_rate
-- @treturn Variable
-- @usage local lr = layers.noam_decay(512, 4000)
function M.noam_decay(d_model, warmup_steps, learning_rate)
  local who = "noam_decay"
  if type(d_model) == "table" then
    local a = argcheck.keys("layers." .. who, d_model, "d_model warmup_steps learning_rate")
    d_model, warmup_steps, learning_rate = a.d_model, a.warmup_steps, a.learning_rate
  end
  d_model = positive(who, "d_model", d_model)
  warmup_steps = positive(who, "warmup_steps", warmup_steps)
  learning_rate = check.number(who, "learning_rate", learning_rate, 1.0)
  return scheduled(function()
    local step = M.decay_step_counter(1)
    local a = unary("pow", step, { factor = -0.5 })
    local b = scale(step, warmup_steps ^ -1.5)
    return scale(binary("min", a, b), learning_rate * d_model ^ -0.5)
  end)
end

--- A linear warm-up, `start_lr + (end_lr - start_lr) * step / warmup_steps`
-- while step < warmup_steps, then `learning_rate`.
-- @tparam number|Variable learning_rate the rate after warm-up (a number or a schedule)
-- @tparam number warmup_steps positive
-- @tparam number start_lr
-- @tparam number end_lr
-- @treturn Variable
-- @usage local lr = layers.linear_lr_warmup(layers.cosine_decay(0.1, 938, 20), 500, 0.0, 0.1)
function M.linear_lr_warmup(learning_rate, warmup_steps, start_lr, end_lr)
  local who = "linear_lr_warmup"
  warmup_steps = positive(who, "warmup_steps", warmup_steps)
  start_lr = check.number(who, "start_lr", start_lr)
  end_lr = check.number(who, "end_lr", end_lr)
  if not is_variable(learning_rate) then learning_rate = check.number(who, "learning_rate", learning_rate) end
  return scheduled(function()
    local step = M.decay_step_counter(0)
    local lr = is_variable(learning_rate) and learning_rate or const(learning_rate)
    local warm = scale(step, (end_lr - start_lr) / warmup_steps, start_lr)
    local during = indicator_less(step, warmup_steps)
    return binary("add", lr, binary("mul", during, binary("sub", warm, lr)))
  end)
end

return M
