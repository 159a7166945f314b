--- oar.layers.control_flow.case: case, switch_case (built from nested
-- `cond`s, as in Fluid) and is_empty.
-- @module oar.layers.control_flow.case
local framework = require("oar.framework")
local LayerHelper = require("oar.layer_helper")
local tensor_layers = require("oar.layers.tensor")
local common = require("oar.layers.control_flow.common")
local cond = require("oar.layers.control_flow.cond").cond

local check = LayerHelper.check
local raise, is_variable = framework.raise, framework.is_variable
local name_arg = common.name_arg
local scalar_bool_arg = common.scalar_bool_arg
local tensor_arg = common.tensor_arg

local M = {}

-- runs the pairs as nested conds: pair 1's fn when its pred holds, else pair
-- 2's when its pred holds, ..., else default
local function chain(pairs, default, name)
  local fallback = default
  for k = #pairs, 1, -1 do
    local pred, fn, rest = pairs[k][1], pairs[k][2], fallback
    fallback = function() return cond(pred, fn, rest, name) end
  end
  return fallback()
end

-- a {pred, fn} pair list, checked
local function pairs_arg(who, key, list)
  if type(list) ~= "table" or is_variable(list) or #list == 0 then
    check.fail(who, key, "a non-empty list of {pred, fn} pairs", list)
  end
  for k, p in ipairs(list) do
    if type(p) ~= "table" or is_variable(p) or #p ~= 2 then
      check.fail(who, key .. "[" .. k .. "]", "a pair {pred, fn}", p)
    end
    scalar_bool_arg(who, key .. "[" .. k .. "][1]", p[1])
    if type(p[2]) ~= "function" then check.fail(who, key .. "[" .. k .. "][2]", "a function", p[2]) end
  end
  return list
end

--- Runs the function of the first pair whose predicate holds, else
-- `default` (Fluid's layers.case); returns what it returns. Without a
-- default the last pair's function is the default (its predicate is not
-- looked at), as in Fluid. Every function must return the same number of
-- Variables of the same dtypes (or all nothing). Gradients flow through
-- the branch taken. Also positional: `case(pred_fn_pairs, default)`.
-- @tparam table a keyword arguments:
-- @tparam {{Variable,function},...} a.pred_fn_pairs `{pred, fn}` pairs; pred a bool Variable of one element
-- @tparam[opt] function a.default run when no pred holds
-- @tparam[opt] string a.name
-- @tparam[opt] function default with positional pairs
-- @return the taken function's Variables (a list when the functions return a list)
-- @raise when a pair is not `{bool Variable, function}` or the functions' results differ
-- @usage
-- local y = layers.case{
--   pred_fn_pairs = {{layers.less_than(x, one), function() return layers.scale(x, 2) end},
--                    {layers.less_than(x, two), function() return layers.scale(x, 3) end}},
--   default = function() return layers.scale(x, 4) end}
function M.case(a, default)
  if type(a) == "table" and not is_variable(a) and a.pred_fn_pairs == nil and a[1] ~= nil then
    a = { pred_fn_pairs = a, default = default }
  end
  a = common.args("case", a, nil, nil, "default name pred_fn_pairs")
  local pairs_list = pairs_arg("case", "pred_fn_pairs", a.pred_fn_pairs)
  name_arg("case", a.name)
  local fallback = a.default
  if fallback ~= nil and type(fallback) ~= "function" then check.fail("case", "default", "a function", fallback) end
  local list = {}
  for k = 1, #pairs_list do list[k] = pairs_list[k] end
  if fallback == nil then
    fallback = list[#list][2]
    list[#list] = nil
  end
  if #list == 0 then return fallback() end
  return chain(list, fallback, a.name)
end

-- branch_fns as a sorted list of {index, fn}
local function branches_arg(who, fns)
  if type(fns) ~= "table" or is_variable(fns) then
    check.fail(who, "branch_fns", "a table {index = fn} or a list of {index, fn} pairs", fns)
  end
  local list, seen = {}, {}
  local function add(idx, fn, where)
    if type(idx) ~= "number" or idx % 1 ~= 0 then check.fail(who, where .. " index", "an integer", idx) end
    if type(fn) ~= "function" then check.fail(who, where, "a function", fn) end
    if seen[idx] then raise(string.format("%s: 'branch_fns' gives index %d twice", who, idx)) end
    seen[idx] = true
    list[#list + 1] = { idx, fn }
  end
  local first = next(fns)
  if first == nil then check.fail(who, "branch_fns", "a non-empty table", fns) end
  if type(fns[first]) == "function" then
    for idx, fn in pairs(fns) do add(idx, fn, "branch_fns[" .. tostring(idx) .. "]") end
  else
    for k, p in pairs(fns) do
      if type(k) ~= "number" or type(p) ~= "table" or is_variable(p) or #p ~= 2 then
        check.fail(who, "branch_fns[" .. tostring(k) .. "]", "a pair {index, fn} (or give {index = fn})", p)
      end
      add(p[1], p[2], "branch_fns[" .. k .. "]")
    end
  end
  table.sort(list, function(x, y) return x[1] < y[1] end)
  return list
end

--- Runs the branch whose index equals `branch_index`, else `default`
-- (Fluid's layers.switch_case); returns what it returns. Without a default
-- the branch with the largest index is the default. Every function must
-- return the same number of Variables of the same dtypes (or all
-- nothing). Also positional: `switch_case(branch_index, branch_fns, default)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.branch_index an int32 or int64 Variable of one element
-- @tparam table a.branch_fns `{[index] = fn, ...}` or a list of `{index, fn}`
-- pairs (a plain list `{f, g}` is indexes 1 and 2, not Python's 0 and 1)
-- @tparam[opt] function a.default run when no index matches
-- @tparam[opt] string a.name
-- @param[opt] branch_fns with a positional branch_index
-- @param[opt] default with a positional branch_index
-- @return the taken branch's Variables (a list when the branches return a list)
-- @raise when branch_index is not an integer scalar, an index repeats or a branch is not a function
-- @usage
-- local y = layers.switch_case{branch_index = k,
--   branch_fns = {[0] = function() return layers.scale(x, 2) end,
--                 [1] = function() return layers.scale(x, 3) end},
--   default = function() return x end}
function M.switch_case(a, branch_fns, default)
  if is_variable(a) then a = { branch_index = a, branch_fns = branch_fns, default = default } end
  a = common.args("switch_case", a, nil, nil, "branch_fns branch_index default name")
  local who = "switch_case"
  local index = common.index_arg(who, "branch_index", a.branch_index)
  local list = branches_arg(who, a.branch_fns)
  name_arg(who, a.name)
  local fallback = a.default
  if fallback ~= nil and type(fallback) ~= "function" then check.fail(who, "default", "a function", fallback) end
  if fallback == nil then
    fallback = list[#list][2]
    list[#list] = nil
  end
  local pairs_list = {}
  for k, p in ipairs(list) do
    local value = tensor_layers.fill_constant{ shape = { 1 }, dtype = index.dtype, value = p[1] }
    pairs_list[k] = { tensor_layers.equal{ x = index, y = value }, p[2] }
  end
  if #pairs_list == 0 then return fallback() end
  return chain(pairs_list, fallback, a.name)
end

--- Whether x has no elements: a bool [1] Variable (Fluid's layers.is_empty;
-- op is_empty), written into `cond` when given. Also `is_empty(x)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x
-- @tparam[opt] Variable a.cond a bool Variable to write the answer into
-- @tparam[opt] string a.name
-- @tparam[opt] Variable cond_var `cond`, with a positional x
-- @treturn Variable bool [1]
-- @usage local none_left = layers.is_empty{x = candidates}
function M.is_empty(a, cond_var)
  a = common.args("is_empty", a, "x", { cond = cond_var }, "cond name x")
  local x = tensor_arg("is_empty", "x", a.x)
  if a.cond ~= nil and (not is_variable(a.cond) or a.cond.dtype ~= "bool") then
    check.fail("is_empty", "cond", "a bool Variable", a.cond)
  end
  local helper = LayerHelper("is_empty", a)
  local out = a.cond or helper:create_variable_for_type_inference("bool", true)
  helper:append_op{ type = "is_empty", inputs = { X = { x } }, outputs = { Out = { out } } }
  return out
end

return M
