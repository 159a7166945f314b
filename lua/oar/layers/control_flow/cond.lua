--- oar.layers.control_flow.cond: cond(pred, true_fn, false_fn).
-- @module oar.layers.control_flow.cond
local framework = require("oar.framework")
local LayerHelper = require("oar.layer_helper")
local argcheck = require("oar.argcheck")
local tensor_layers = require("oar.layers.tensor")
local common = require("oar.layers.control_flow.common")

local check = LayerHelper.check
local raise, is_variable = framework.raise, framework.is_variable
local conditional = common.conditional
local main_program = common.main_program
local name_arg = common.name_arg
local scalar_bool_arg = common.scalar_bool_arg
local unique_var = common.unique_var

local M = {}

-- ---- cond ----------------------------------------------------------------------------------

-- fn's results as a list of Variables and how to return them
local function results_of(who, res)
  local n = table.maxn(res)
  if n == 0 or (n == 1 and res[1] == nil) then return nil end
  if n == 1 and type(res[1]) == "table" and not is_variable(res[1]) then
    local list = res[1]
    for i = 1, table.maxn(list) do
      if not is_variable(list[i]) then check.fail(who, "result[" .. i .. "]", "a Variable", list[i]) end
    end
    return list, "list"
  end
  for i = 1, n do
    if not is_variable(res[i]) then check.fail(who, "result " .. i, "a Variable", res[i]) end
  end
  return res, "values"
end

--- Runs the branch `pred` selects and returns its results (Fluid's
-- layers.cond). Both functions must return the same number of Variables,
-- of the same dtypes (one or several values, or one list); a branch may
-- be left out when neither returns anything. Also `cond{pred=, true_fn=, false_fn=, name=}`.
-- @tparam Variable pred a bool Variable of one element
-- @tparam[opt] function true_fn builds the ops run when pred holds
-- @tparam[opt] function false_fn builds the ops run otherwise
-- @tparam[opt] string name
-- @return the selected branch's Variables (a list when the branches return a list), or nil
-- @raise when the branches' results differ in number or dtype
-- @usage
-- local y = layers.cond(layers.less_than{x = a, y = b},
--   function() return layers.scale{x = a, scale = 2} end,
--   function() return layers.scale{x = b, scale = 0.5} end)
function M.cond(pred, true_fn, false_fn, name)
  if type(pred) == "table" and not is_variable(pred) then
    argcheck.keys("layers.cond", pred, "pred true_fn false_fn name")
    pred, true_fn, false_fn, name = pred.pred, pred.true_fn, pred.false_fn, pred.name
  end
  scalar_bool_arg("cond", "pred", pred)
  if true_fn == nil and false_fn == nil then raise("cond: give true_fn, false_fn or both") end
  if true_fn ~= nil and type(true_fn) ~= "function" then check.fail("cond", "true_fn", "a function", true_fn) end
  if false_fn ~= nil and type(false_fn) ~= "function" then check.fail("cond", "false_fn", "a function", false_fn) end
  name_arg("cond", name)
  local prog = main_program()
  local parent = prog:current_block()
  local helper = LayerHelper("cond", { name = name })
  local function branch(fn, label)
    if fn == nil then return nil end
    local shape
    local outs = conditional(prog, { label == "true" and pred or tensor_layers.logical_not{ x = pred } }, true,
      function()
        local list, kind = results_of("cond", { fn() })
        shape = kind
        if not list then return end
        local copies = {}
        for i, v in ipairs(list) do
          copies[i] = unique_var(parent, helper.name .. "." .. label .. "_out", { dtype = v.dtype })
          tensor_layers.assign(v, copies[i])
        end
        return copies
      end)
    return outs[1], shape
  end
  local t_out, t_kind = branch(true_fn, "true")
  local f_out, f_kind = branch(false_fn, "false")
  if t_out == nil and f_out == nil then return nil end
  if t_out == nil or f_out == nil then
    raise("cond: " .. (t_out == nil and "true_fn" or "false_fn") .. " returns nothing while the other "
      .. "returns Variables; both must return the same number of Variables")
  end
  if #t_out ~= #f_out then
    raise(string.format("cond: true_fn returns %d Variables, false_fn %d", #t_out, #f_out))
  end
  local mask = tensor_layers.cast{ x = pred, dtype = "int32" }
  local merged = {}
  for i = 1, #t_out do
    if t_out[i].dtype ~= f_out[i].dtype then
      raise(string.format("cond: result %d is %s from true_fn but %s from false_fn", i, tostring(t_out[i].dtype),
        tostring(f_out[i].dtype)))
    end
    merged[i] = helper:create_variable_for_type_inference(t_out[i].dtype)
    helper:append_op{ type = "select_input", inputs = { X = { f_out[i], t_out[i] }, Mask = { mask } },
                      outputs = { Out = { merged[i] } } }
  end
  if t_kind == "list" then return merged end
  return unpack(merged, 1, #merged)
end


return M
