--- oar.layers.control_flow.while: While loops and ConditionalBlock.
-- @module oar.layers.control_flow.while
local framework = require("oar.framework")
local LayerHelper = require("oar.layer_helper")
local argcheck = require("oar.argcheck")
local common = require("oar.layers.control_flow.common")

local check = LayerHelper.check
local raise, is_variable = framework.raise, framework.is_variable
local args = common.args
local check_fn = common.check_fn
local conditional = common.conditional
local in_sub_block = common.in_sub_block
local lists_name = common.lists_name
local main_program = common.main_program
local name_arg = common.name_arg
local outer_io = common.outer_io
local scalar_bool_arg = common.scalar_bool_arg
local ssa_rewrite = common.ssa_rewrite
local tensor_arg = common.tensor_arg
local unique_var = common.unique_var

local M = {}

local function tensor_layers() return require("oar.layers.tensor") end

-- ---- While ------------------------------------------------------------------------------

local While = {}
While.__index = While

--- A while loop: the body built by `While:block(fn)` runs while `cond`
-- holds. The body must update `cond` (`layers.less_than{x=, y=, cond=cond}`).
-- Also positional: `While(cond, is_test)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.cond a bool Variable of one element
-- @tparam[opt=false] bool a.is_test
-- @tparam[opt] string a.name
-- @tparam[opt] bool is_test with a positional cond
-- @treturn While the loop; build its body with `:block(fn)`
-- @raise when cond is not a bool Variable of one element
-- @usage
-- local i = layers.zeros{shape = {1}, dtype = "int64"}
-- local n = layers.fill_constant{shape = {1}, dtype = "int64", value = 10}
-- local cond = layers.less_than{x = i, y = n}
-- local loop = layers.While(cond)
-- loop:block(function()
--   layers.increment{x = i, in_place = true}
--   layers.less_than{x = i, y = n, cond = cond}
-- end)
function M.While(a, is_test)
  a = args("While", a, "cond", { is_test = is_test }, "cond is_test name")
  local cond = scalar_bool_arg("While", "cond", a.cond)
  name_arg("While", a.name)
  return setmetatable({ cond = cond, is_test = check.boolean("While", "is_test", a.is_test, false),
                        helper = LayerHelper("while", a), done = false }, While)
end

--- Builds the loop's body: the ops `fn()` appends go into a sub-block the
-- `while` op runs. Call once.
-- @tparam function fn builds the body; it must write the loop's condition
-- @treturn Block the body's block
-- @raise when the body is already built, cond is not visible here, or fn never writes cond
-- @usage
-- loop:block(function()
--   layers.increment{x = i, in_place = true}
--   layers.less_than{x = i, y = n, cond = cond}
-- end)
function While:block(fn)
  check_fn("While:block", fn)
  if self.done then raise("While:block: the loop body is already built") end
  local prog = self.helper.main_program
  local parent = prog:current_block()
  local cond = self.cond
  if not parent:find_var_recursive(cond.name) then
    raise("While:block: 'cond' ('" .. cond.name .. "') is not visible in the block the loop is built in")
  end
  local body = in_sub_block(prog, fn, true)
  self.done = true
  ssa_rewrite(body)
  local reads, writes = outer_io(body)
  if not lists_name(writes, cond.name) then
    raise(string.format("While:block: the loop body never writes its condition '%s' (update it with "
      .. "layers.less_than{x=..., y=..., cond=cond}); the loop would not end", cond.name))
  end
  local steps = unique_var(parent, "while.step_scopes", { type = "step_scopes" })
  parent:append_op{ type = "while", inputs = { X = reads, Condition = { cond } },
    outputs = { Out = writes, StepScopes = { steps } }, attrs = { sub_block = body, is_test = self.is_test } }
  return body
end


-- ---- while_loop ------------------------------------------------------------------------------

-- the Variables a function returned: several values, or one list
local function returned(who, what, res, n_expected)
  local n = table.maxn(res)
  local list = res
  if n == 1 and type(res[1]) == "table" and not is_variable(res[1]) then
    list = res[1]
    n = table.maxn(list)
  end
  if n_expected and n ~= n_expected then
    raise(string.format("%s: '%s' returns %d values; it must return as many as loop_vars (%d)", who, what, n,
      n_expected))
  end
  for i = 1, n do
    if not is_variable(list[i]) then check.fail(who, what .. " result " .. i, "a Variable", list[i]) end
  end
  return list, n
end

-- cond(...) must give a bool Variable of one element
local function loop_cond(who, fn, vars)
  local res = { fn(unpack(vars, 1, #vars)) }
  if table.maxn(res) ~= 1 then
    raise(string.format("%s: 'cond' must return one bool Variable, it returned %d values", who, table.maxn(res)))
  end
  return scalar_bool_arg(who, "cond's result", res[1])
end

--- A loop over `loop_vars` (Fluid's layers.while_loop): while
-- `cond(loop_vars...)` holds, `loop_vars` take the values
-- `body(loop_vars...)` returns. `cond` and `body` are Lua functions called
-- once, when the program is built: they receive the loop variables and
-- build ops. `body` returns as many Variables as there are loop variables,
-- of the same dtypes (several values or one list). Gradients flow through
-- the loop. Also positional: `while_loop(cond, body, loop_vars)`.
-- @tparam table a keyword arguments:
-- @tparam function a.cond `function(v1, v2, ...)` returning a bool Variable of one element
-- @tparam function a.body `function(v1, v2, ...)` returning the next values
-- @tparam {Variable,...} a.loop_vars the loop variables (tensors or tensor arrays)
-- @tparam[opt=false] bool a.is_test
-- @tparam[opt] string a.name
-- @param[opt] body with a positional cond
-- @param[opt] loop_vars with a positional cond
-- @treturn {Variable,...} loop_vars, which hold the values after the loop when the program runs
-- @raise when cond or body is not a function, loop_vars is empty, cond's result
-- is not a scalar bool, or body returns the wrong number of Variables
-- @usage
-- local i = layers.fill_constant{shape = {1}, dtype = "int64", value = 0}
-- local ten = layers.fill_constant{shape = {1}, dtype = "int64", value = 10}
-- local out = layers.while_loop{
--   cond = function(i) return layers.less_than{x = i, y = ten} end,
--   body = function(i) return layers.increment{x = i, value = 1, in_place = false} end,
--   loop_vars = {i}}
-- -- out[1] (that is, i) holds 10 after the run
function M.while_loop(a, body, loop_vars)
  if type(a) == "function" then a = { cond = a, body = body, loop_vars = loop_vars } end
  a = args("while_loop", a, nil, nil, "body cond is_test loop_vars name")
  local who = "while_loop"
  if type(a.cond) ~= "function" then check.fail(who, "cond", "a function", a.cond) end
  if type(a.body) ~= "function" then check.fail(who, "body", "a function", a.body) end
  local vars = a.loop_vars
  if is_variable(vars) then vars = { vars } end
  if type(vars) ~= "table" or #vars == 0 then check.fail(who, "loop_vars", "a non-empty list of Variables", vars) end
  for i, v in ipairs(vars) do
    if not is_variable(v) then check.fail(who, "loop_vars[" .. i .. "]", "a Variable", v) end
  end
  name_arg(who, a.name)
  local pre_cond = loop_cond(who, a.cond, vars)
  local loop = M.While{ cond = pre_cond, is_test = check.boolean(who, "is_test", a.is_test, false), name = a.name }
  loop:block(function()
    local outs = returned(who, "body", { a.body(unpack(vars, 1, #vars)) }, #vars)
    local now_cond = loop_cond(who, a.cond, outs)
    for i, v in ipairs(vars) do
      local o = outs[i]
      if v.type == "lod_tensor_array" then
        -- an array is updated in place by array_write: the body must return it
        if o ~= v then
          raise(string.format("%s: loop_vars[%d] is a tensor array; body must return that same array", who, i))
        end
      elseif o ~= v then
        if o.dtype ~= v.dtype then
          raise(string.format("%s: body's result %d is %s but loop_vars[%d] is %s", who, i, tostring(o.dtype), i,
            tostring(v.dtype)))
        end
        tensor_layers().assign(o, v)
      end
    end
    tensor_layers().assign(now_cond, pre_cond)
  end)
  return vars
end

-- ---- ConditionalBlock ----------------------------------------------------------------------

local ConditionalBlock = {}
ConditionalBlock.__index = ConditionalBlock

--- Fluid's conditional building block: the ops of `:block(fn)` run when the
-- scalar condition holds (is_scalar_condition), or else when every input
-- is non-empty. Also positional: `ConditionalBlock(inputs, is_scalar_condition)`.
-- @tparam table a keyword arguments:
-- @tparam Variable|{Variable,...} a.inputs the condition (a bool Variable of one element) or the inputs
-- @tparam[opt=false] bool a.is_scalar_condition
-- @tparam[opt] string a.name
-- @tparam[opt] bool is_scalar_condition with positional inputs
-- @treturn ConditionalBlock build its body with `:block(fn)`
-- @usage
-- local cb = layers.ConditionalBlock{inputs = {flag}, is_scalar_condition = true}
-- cb:block(function() layers.assign{input = one, output = result} end)
function M.ConditionalBlock(a, is_scalar_condition)
  if is_variable(a) or type(a) ~= "table" or (a.inputs == nil and a[1] ~= nil) then
    a = { inputs = a, is_scalar_condition = is_scalar_condition }
  end
  argcheck.keys("layers.ConditionalBlock", a, "inputs is_scalar_condition name")
  local inputs = check.variables("ConditionalBlock", "inputs", a.inputs)
  for k, v in ipairs(inputs) do tensor_arg("ConditionalBlock", "inputs[" .. k .. "]", v) end
  local is_scalar = check.boolean("ConditionalBlock", "is_scalar_condition", a.is_scalar_condition, false)
  if is_scalar then scalar_bool_arg("ConditionalBlock", "inputs[1]", inputs[1]) end
  return setmetatable({ inputs = inputs, is_scalar = is_scalar }, ConditionalBlock)
end

--- Builds the conditional body: the ops `fn()` appends run only when the
-- condition holds.
-- @tparam function fn builds the body
-- @return fn's results
-- @raise when an input is not visible in the current block
-- @usage cb:block(function() layers.assign{input = one, output = result} end)
function ConditionalBlock:block(fn)
  check_fn("ConditionalBlock:block", fn)
  local block = main_program():current_block()
  for k, v in ipairs(self.inputs) do
    if not block:find_var_recursive(v.name) then
      raise(string.format("ConditionalBlock:block: 'inputs[%d]' ('%s') is not visible in the block it is built in",
        k, v.name))
    end
  end
  local res = conditional(main_program(), self.inputs, self.is_scalar, fn)
  return unpack(res, 1, table.maxn(res))
end


-- every public method checks it was called with ':' on a While
framework._guard_methods(While, function(x) return getmetatable(x) == While end, "While", {})

-- every public method checks it was called with ':' on a ConditionalBlock
framework._guard_methods(ConditionalBlock, function(x) return getmetatable(x) == ConditionalBlock end, "ConditionalBlock", {})

return M
