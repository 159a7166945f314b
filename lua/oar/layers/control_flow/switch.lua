--- oar.layers.control_flow.switch: Switch (first case whose condition holds).
-- @module oar.layers.control_flow.switch
local framework = require("oar.framework")
local LayerHelper = require("oar.layer_helper")
local argcheck = require("oar.argcheck")
local tensor_layers = require("oar.layers.tensor")
local common = require("oar.layers.control_flow.common")

local raise = framework.raise
local check_fn = common.check_fn
local conditional = common.conditional
local name_arg = common.name_arg
local scalar_bool_arg = common.scalar_bool_arg

local M = {}

-- ---- Switch --------------------------------------------------------------------------------

local Switch = {}
Switch.__index = Switch

--- A switch: add cases with `:case(cond, fn)` and an optional
-- `:default(fn)`; when the program runs, the first case whose condition
-- holds runs its ops, else the default's.
-- @tparam[opt] string|table name a name prefix, or `{name=}`
-- @treturn Switch
-- @usage
-- local sw = layers.Switch()
-- sw:case(layers.less_than{x = step, y = warmup}, function()
--   layers.assign{input = warm_lr, output = lr}
-- end):default(function()
--   layers.assign{input = base_lr, output = lr}
-- end)
function M.Switch(name)
  if type(name) == "table" then
    argcheck.keys("layers.Switch", name, "name")
    name = name.name
  end
  name_arg("Switch", name)
  return setmetatable({ helper = LayerHelper("switch", { name = name }), pre_not = nil, has_default = false },
    Switch)
end

--- Adds a case: `fn`'s ops run when `cond` holds and no earlier case did.
-- @tparam Variable cond a bool Variable of one element
-- @tparam function fn builds the case's ops
-- @treturn Switch the switch, to chain calls
-- @raise after the default, or when cond is not a scalar bool
-- @usage sw:case(layers.less_than{x = step, y = warmup}, function() layers.assign{input = warm_lr, output = lr} end)
function Switch:case(cond, fn)
  scalar_bool_arg("Switch:case", "cond", cond)
  check_fn("Switch:case", fn)
  if self.has_default then raise("Switch:case: a case after the default would never run") end
  local run_if
  if not self.pre_not then
    run_if = cond
    self.pre_not = tensor_layers.logical_not{ x = cond }
  else
    run_if = tensor_layers.logical_and{ x = self.pre_not, y = cond }
    self.pre_not = tensor_layers.logical_and{ x = self.pre_not, y = tensor_layers.logical_not{ x = cond } }
  end
  conditional(self.helper.main_program, { run_if }, true, fn)
  return self
end

--- Adds the default: `fn`'s ops run when no case's condition holds.
-- @tparam function fn builds the default's ops
-- @treturn Switch the switch
-- @raise before any case, or when a default is already there
-- @usage sw:default(function() layers.assign{input = base_lr, output = lr} end)
function Switch:default(fn)
  check_fn("Switch:default", fn)
  if not self.pre_not then raise("Switch:default: add a case before the default") end
  if self.has_default then raise("Switch:default: the switch already has a default") end
  self.has_default = true
  conditional(self.helper.main_program, { self.pre_not }, true, fn)
  return self
end


-- every public method checks it was called with ':' on a Switch
framework._guard_methods(Switch, function(x) return getmetatable(x) == Switch end, "Switch", {})

return M
