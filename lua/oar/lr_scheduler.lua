--- oar.optimizer.lr: the learning-rate decays of oar.layers for eager
-- optimizers (`learning_rate = oar.optimizer.lr.exponential_decay{...}`).
--
-- A schedule is the static decay itself: the oar.layers function (same
-- name, same arguments) appended to a small program of its own, with its
-- step counter, run by an Executor once per optimizer step. The rate an
-- eager step reads is the [1] float32 tensor that program computes, so an
-- eager run and a static run of one schedule use the same bits, and the
-- schedule's formula exists once (lua/oar/layers/learning_rate.lua). As in
-- Fluid 1.8's dygraph, the optimizer advances its schedule once per
-- `step()`.
-- @module oar.lr_scheduler
local framework = require("oar.framework")

local M = {}

local Schedule = {}
Schedule.__index = Schedule

local COUNTER = "@LR_DECAY_COUNTER@"

local DECAYS = {
  "exponential_decay", "natural_exp_decay", "inverse_time_decay", "piecewise_decay", "polynomial_decay",
  "cosine_decay", "noam_decay", "linear_lr_warmup",
}

--- Whether x is a schedule made here.
-- @usage assert(oar.optimizer.lr.is_scheduler(oar.optimizer.lr.cosine_decay(0.1, 10, 5)))
function M.is_scheduler(x) return getmetatable(x) == Schedule end

local function make(name, ...)
  local layers = require("oar.layers")
  local main, startup = framework.Program(), framework.Program()
  local args = { n = select("#", ...), ... }
  local lr
  -- names of its own: the user's programs see no names taken
  require("oar.unique_name").guard(function()
    framework.program_guard(main, startup, function() lr = layers[name](unpack(args, 1, args.n)) end)
  end)
  local oar = require("oar")
  local exe, scope = oar.Executor(oar.CPUPlace()), oar.Scope()
  exe:run(startup, { scope = scope })
  return setmetatable({ name = name, _main = main, _lr = lr, _exe = exe, _scope = scope }, Schedule)
end

for _, name in ipairs(DECAYS) do
  M[name] = function(...) return make(name, ...) end
end

--- The schedules: `exponential_decay`, `natural_exp_decay`,
-- `inverse_time_decay`, `piecewise_decay`, `polynomial_decay`,
-- `cosine_decay`, `noam_decay`, `linear_lr_warmup`, each taking what the
-- oar.layers function of that name takes (positional or a table).
-- @function exponential_decay
-- @usage local opt = oar.optimizer.SGD{parameters = model:parameters(),
--   learning_rate = oar.optimizer.lr.exponential_decay{learning_rate = 0.1, decay_steps = 100, decay_rate = 0.5}}

-- the step counter's tensor in the schedule's scope
local function counter(self) return self._scope:find_var(COUNTER):get_tensor() end

--- Advances the schedule one step and returns this step's rate, a [1] float32 tensor (the optimizer calls it once per step).
-- @treturn Tensor
-- @usage local lr = oar.optimizer.lr.piecewise_decay({2}, {1.0, 0.5}); lr:step()
function Schedule:step()
  return self._exe:run(self._main, { fetch_list = { self._lr }, scope = self._scope })[1]
end

--- The rate the next step will use, a number (the schedule does not advance).
-- @treturn number
-- @usage print(oar.optimizer.lr.cosine_decay(0.1, 10, 5):get_lr())
function Schedule:get_lr()
  local was = counter(self):totable()[1]
  local v = self:step():totable()[1]
  counter(self):data()[0] = was   -- the run may have given the variable a new tensor
  return v
end

--- The number of steps taken.
-- @treturn number
-- @usage local n = oar.optimizer.lr.cosine_decay(0.1, 10, 5):steps()   -- 0
function Schedule:steps()
  local v = counter(self):totable()[1]
  local begin = self.name == "noam_decay" and 1 or 0
  return v - (begin - 1)
end

--- The schedule's state (`{steps = n}`), for an optimizer's state_dict.
-- @treturn table
-- @usage local sd = sched:state_dict()
function Schedule:state_dict() return { steps = self:steps() } end

--- Restores what state_dict returned.
-- @tparam table sd
-- @usage sched:set_state_dict({steps = 10})
function Schedule:set_state_dict(sd)
  if type(sd) ~= "table" or type(sd.steps) ~= "number" then
    framework.raise("lr schedule:set_state_dict: expected {steps = n}, got " .. framework.describe(sd))
  end
  local begin = self.name == "noam_decay" and 1 or 0
  counter(self):data()[0] = sd.steps + (begin - 1)
end

function Schedule:__tostring() return "oar.optimizer.lr." .. self.name end

return M
