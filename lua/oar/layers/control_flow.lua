-- oar.layers.control_flow: Fluid's control flow (layers/control_flow.py)
-- with closures in place of `with` blocks: While, ConditionalBlock, Switch,
-- IfElse, cond, StaticRNN, DynamicRNN, and the tensor-array and LoD
-- rank-table layers they are built from.
--
-- A closure runs between program:create_block() and program:rollback(); the
-- block is restored also when the closure errors. When a While or
-- conditional body is complete, its writes to outer variables are put in
-- single-assignment form: a write that later ops of the body still read
-- goes to a body-local variable, and one `assign` at the end of the body
-- stores the final value. Every op of the body then reads an outer variable
-- as it was when the body started, which is the value the control-flow op
-- shows the body's grad ops (see src/ops/control_flow.c).
local framework = require("oar.framework")
local LayerHelper = require("oar.layer_helper")
local unique_name = require("oar.unique_name")
local tensor_layers = require("oar.layers.tensor")

local check = LayerHelper.check
local raise, is_variable, describe = framework.raise, framework.is_variable, framework.describe

local M = {}

local EMPTY = "@EMPTY@"

-- ---- helpers ------------------------------------------------------------------

local function main_program() return framework.default_main_program() end

-- blocks whose bodies get the single-assignment rewrite (While, conditionals)
local function ssa_blocks(prog)
  local t = rawget(prog, "_cf_ssa_blocks")
  if not t then
    t = {}
    rawset(prog, "_cf_ssa_blocks", t)
  end
  return t
end

-- Runs fn() in a new child block of the current block; returns the block
-- and fn's results. The current block is restored also when fn errors.
local function in_sub_block(prog, fn, ssa)
  local parent = prog:current_block()
  local block = prog:create_block()
  if ssa then ssa_blocks(prog)[block.idx] = true end
  local res = { framework.protected(function()
    -- a failing closure may leave a nested block current: return to ours first
    if prog:current_block().idx ~= block.idx then prog._current = block.idx end
    prog:rollback()
  end, fn) }
  return block, res
end

local function check_fn(who, fn)
  if type(fn) ~= "function" then check.fail(who, "fn", "a function", fn) end
end

local function unique_var(block, key, spec)
  spec = spec or {}
  spec.name = unique_name.generate(key)
  return block:create_var(spec)
end

-- an ordered set of names
local function name_set()
  local s = { list = {}, has = {} }
  function s.add(n)
    if not s.has[n] then
      s.has[n] = true
      s.list[#s.list + 1] = n
    end
  end
  return s
end

-- the variable `n` declared in an ancestor of block (not in block itself)
local function outer_var(block, n)
  if n == EMPTY or block:has_var(n) then return nil end
  return block:find_var_recursive(n)
end

local function sub_blocks(op)
  local out = {}
  for _, name in ipairs(op:attr_names()) do
    local t = op:attr_type(name)
    if t == "BLOCK" then
      local b = op:attr(name)
      if b then out[#out + 1] = b end
    elseif t == "BLOCKS" then
      for _, b in ipairs(op:attr(name) or {}) do out[#out + 1] = b end
    end
  end
  return out
end

-- Renames `from` to `to` in the ops of op's sub-blocks (and theirs), where
-- `from` is not a variable of the sub-block itself.
local function deep_rename(op, from, to)
  for _, b in ipairs(sub_blocks(op)) do
    if not b:has_var(from) then
      for _, inner in ipairs(b:ops()) do
        inner:_rename_input(from, to)
        inner:_rename_output(from, to)
        deep_rename(inner, from, to)
      end
    end
  end
end

local function lists_name(list, n)
  for _, x in ipairs(list) do if x == n then return true end end
  return false
end

-- The single-assignment rewrite of a finished body (see the top).
local function ssa_rewrite(block)
  local ops = block:ops()
  local last_ref = {}
  local function outer_tensor(n)
    local v = outer_var(block, n)
    return v and v.type == "lod_tensor" and v or nil
  end
  for k, op in ipairs(ops) do
    for _, n in ipairs(op:input_arg_names()) do if outer_tensor(n) then last_ref[n] = k end end
    for _, n in ipairs(op:output_arg_names()) do if outer_tensor(n) then last_ref[n] = k end end
  end
  local cur, order = {}, {}
  local inserted = 0
  for k, op in ipairs(ops) do
    local control = #sub_blocks(op) > 0
    local reads, writes = name_set(), name_set()
    for _, n in ipairs(op:input_arg_names()) do if outer_tensor(n) then reads.add(n) end end
    for _, n in ipairs(op:output_arg_names()) do if outer_tensor(n) then writes.add(n) end end
    for _, n in ipairs(reads.list) do
      if cur[n] and not (control and writes.has[n]) then
        op:_rename_input(n, cur[n])
        deep_rename(op, n, cur[n])
      end
    end
    for _, n in ipairs(writes.list) do
      if last_ref[n] > k or (control and cur[n]) then
        local v = outer_tensor(n)
        local fresh = unique_var(block, n .. ".ssa", {
          shape = #v.shape > 0 and v.shape or nil, dtype = v.dtype, lod_level = v.lod_level,
          stop_gradient = v.stop_gradient })
        if control then
          -- a control-flow op may leave it unwritten: start from the current value
          local src = cur[n] or n
          block:_insert_op(k - 1 + inserted, { type = "assign", inputs = { X = { src } },
            outputs = { Out = { fresh } } }, "While/ConditionalBlock")
          inserted = inserted + 1
          op:_rename_input(n, fresh.name)
          if cur[n] then op:_rename_input(cur[n], fresh.name) end
          deep_rename(op, n, fresh.name)
          if cur[n] then deep_rename(op, cur[n], fresh.name) end
        end
        op:_rename_output(n, fresh.name)
        if not cur[n] then order[#order + 1] = n end
        cur[n] = fresh.name
      elseif cur[n] then
        cur[n] = false   -- the last reference writes the variable itself
      end
    end
  end
  for _, n in ipairs(order) do
    if cur[n] then
      block:append_op{ type = "assign", inputs = { X = { cur[n] } }, outputs = { Out = { n } } }
    end
  end
end

-- Outer variables the ops of block read before writing them, and those
-- they write.
local function outer_io(block)
  local reads, writes, written = name_set(), name_set(), {}
  for _, op in ipairs(block:ops()) do
    for _, n in ipairs(op:input_arg_names()) do
      if not written[n] and outer_var(block, n) then reads.add(n) end
    end
    for _, n in ipairs(op:output_arg_names()) do
      written[n] = true
      if outer_var(block, n) then writes.add(n) end
    end
  end
  return reads.list, writes.list
end

local function is_scalar_bool(v)
  if v.dtype ~= "bool" then return false end
  local n = 1
  for _, d in ipairs(v.shape) do
    if d < 0 then return true end
    n = n * d
  end
  return n == 1
end

-- ---- argument checks ------------------------------------------------------------
-- Errors read "<function>: '<argument>' must be <expected>, got <given>"; a
-- given Variable is shown with its kind, dtype and shape.

local function var_text(v)
  if v == nil then return "nil" end
  if not is_variable(v) then return describe(v) end
  local kind = v.type
  if kind == "lod_tensor_array" then return "tensor array '" .. v.name .. "'" end
  if kind == "lod_rank_table" then return "LoD rank table '" .. v.name .. "'" end
  if kind ~= "lod_tensor" then return tostring(kind) .. " Variable '" .. v.name .. "'" end
  return string.format("Variable '%s' (%s %s)", v.name, tostring(v.dtype), framework.shape_text(v.shape))
end

local function bad_arg(who, key, expect, got)
  raise(string.format("%s: '%s' must be %s, got %s", who, key, expect, var_text(got)))
end

-- a Variable holding a tensor (not an array, rank table, ...)
local function tensor_arg(who, key, v)
  if not is_variable(v) then bad_arg(who, key, "a Variable", v) end
  if v.type ~= "lod_tensor" then bad_arg(who, key, "a tensor Variable", v) end
  return v
end

local function opt_tensor_arg(who, key, v)
  if v ~= nil then tensor_arg(who, key, v) end
  return v
end

local function array_arg(who, key, v)
  if not is_variable(v) or v.type ~= "lod_tensor_array" then
    bad_arg(who, key, "a tensor array (made by create_array)", v)
  end
  return v
end

local function rank_table_arg(who, key, v)
  if not is_variable(v) or v.type ~= "lod_rank_table" then
    bad_arg(who, key, "a LoD rank table (made by lod_rank_table)", v)
  end
  return v
end

-- the number of elements of a shape, or nil when a dim is unknown
local function known_numel(shape)
  local n = 1
  for _, d in ipairs(shape or {}) do
    if d < 0 then return nil end
    n = n * d
  end
  return n
end

-- an array index or step counter: an int64 (or int32) tensor of one element
local function index_arg(who, key, v)
  if not is_variable(v) or v.type ~= "lod_tensor" or (v.dtype ~= "int64" and v.dtype ~= "int32") then
    bad_arg(who, key, "a Variable (int64 [1])", v)
  end
  local n = known_numel(v.shape)
  if n ~= nil and n ~= 1 then bad_arg(who, key, "a Variable (int64 [1])", v) end
  return v
end

-- a bool tensor of one element (a scalar condition)
local function scalar_bool_arg(who, key, v)
  if not is_variable(v) or v.type ~= "lod_tensor" or not is_scalar_bool(v) then
    bad_arg(who, key, "a bool Variable of one element", v)
  end
  return v
end

local function name_arg(who, name)
  if name ~= nil and type(name) ~= "string" then check.fail(who, "name", "a string", name) end
  return name
end

-- a shape list: integers, -1 for a dim taken from the batch
local function shape_arg(who, key, v)
  local ok = type(v) == "table" and not is_variable(v) and #v > 0
  if ok then
    for _, d in ipairs(v) do
      if type(d) ~= "number" or d % 1 ~= 0 or d < -1 then ok = false end
    end
  end
  if not ok then bad_arg(who, key, "a list of integers (-1 for the batch dim)", v) end
  return v
end

-- v must be visible from `block` (declared in it or an ancestor)
local function visible_arg(who, key, v, block, where)
  if not block:find_var_recursive(v.name) then
    raise(string.format("%s: '%s' ('%s') is made inside %s; give a Variable from outside it", who, key, v.name,
      where))
  end
  return v
end

local args = LayerHelper.args

-- ---- tensor arrays --------------------------------------------------------------

-- create_array(dtype): an empty tensor array
function M.create_array(dtype)
  if type(dtype) == "table" and not is_variable(dtype) then dtype = dtype.dtype end
  local helper = LayerHelper("array", {})
  return unique_var(helper:block(), "array", {
    type = "lod_tensor_array", dtype = check.dtype("create_array", "dtype", dtype, "float32") })
end

-- Outside the bodies that get the single-assignment rewrite, an index may
-- change in place after the array op (layers.increment); its grad op must
-- see the index the op saw, so the op reads a copy.
local function index_for(helper, i, who)
  index_arg(who, "i", i)
  local prog = helper.main_program
  if ssa_blocks(prog)[prog:current_block().idx] then return i end
  local copy = helper:create_variable_for_type_inference(i.dtype, true)
  helper:append_op{ type = "assign", inputs = { X = { i } }, outputs = { Out = { copy } } }
  copy.stop_gradient = true
  return copy
end

-- array_write{x=, i=, array=}: array[i] = x; returns the array
function M.array_write(a, i, array)
  a = args("array_write", a, "x", { i = i, array = array })
  local x = tensor_arg("array_write", "x", a.x)
  local arr = a.array
  if arr == nil then
    index_arg("array_write", "i", a.i)
    arr = M.create_array(x.dtype)
  else
    array_arg("array_write", "array", arr)
  end
  local helper = LayerHelper("array_write", a)
  local idx = index_for(helper, a.i, "array_write")
  helper:append_op{ type = "write_to_array", inputs = { X = { x }, I = { idx } }, outputs = { Out = { arr } } }
  return arr
end

-- array_read{array=, i=}
function M.array_read(a, i)
  a = args("array_read", a, "array", { i = i })
  local arr = array_arg("array_read", "array", a.array)
  local helper = LayerHelper("array_read", a)
  local idx = index_for(helper, a.i, "array_read")
  local out = helper:create_variable_for_type_inference(arr.dtype)
  helper:append_op{ type = "read_from_array", inputs = { X = { arr }, I = { idx } }, outputs = { Out = { out } } }
  return out
end

-- array_length(array): int64 [1]
function M.array_length(a)
  if type(a) == "table" and not is_variable(a) then a = a.array end
  local arr = array_arg("array_length", "array", a)
  local helper = LayerHelper("array_length", {})
  local out = helper:create_variable_for_type_inference("int64", true)
  helper:append_op{ type = "lod_array_length", inputs = { X = { arr } }, outputs = { Out = { out } } }
  out.stop_gradient = true
  return out
end

-- ---- LoD rank tables ------------------------------------------------------------------

local function append_in(block, spec) return block:append_op(spec) end

local function rank_table_in(block, x, level)
  local t = unique_var(block, "lod_rank_table", { type = "lod_rank_table" })
  t.stop_gradient = true
  append_in(block, { type = "lod_rank_table", inputs = { X = { x } }, outputs = { Out = { t } },
                     attrs = { level = level or 0 } })
  return t
end

-- a LoD level: an integer >= 0
local function level_arg(who, v)
  v = check.int(who, "level", v, 0)
  if v < 0 then check.fail(who, "level", "a LoD level >= 0", v) end
  return v
end

-- lod_rank_table{x=, level=0}
function M.lod_rank_table(a, level)
  a = args("lod_rank_table", a, "x", { level = level })
  local x = tensor_arg("lod_rank_table", "x", a.x)
  return rank_table_in(main_program():current_block(), x, level_arg("lod_rank_table", a.level))
end

local function max_len_in(block, table_var)
  local out = unique_var(block, "max_sequence_len", { dtype = "int64" })
  out.stop_gradient = true
  append_in(block, { type = "max_sequence_len", inputs = { RankTable = { table_var } }, outputs = { Out = { out } } })
  return out
end

-- max_sequence_len{rank_table=}
function M.max_sequence_len(a)
  a = args("max_sequence_len", a, "rank_table")
  return max_len_in(main_program():current_block(), rank_table_arg("max_sequence_len", "rank_table", a.rank_table))
end

-- appends op_type{X = x, RankTable = table_var} (an op that reorders or
-- splits x by a rank table) to block; its Out, named after the op, has x's
-- dtype and variable type out_type (default: a LoD tensor)
local function by_rank_table_in(block, op_type, x, table_var, out_type)
  local out = unique_var(block, op_type, { type = out_type, dtype = x.dtype })
  append_in(block, { type = op_type, inputs = { X = { x }, RankTable = { table_var } },
                     outputs = { Out = { out } } })
  return out
end

local function to_array_in(block, x, table_var)
  return by_rank_table_in(block, "lod_tensor_to_array", x, table_var, "lod_tensor_array")
end

-- lod_tensor_to_array{x=, table=}
function M.lod_tensor_to_array(a, t)
  a = args("lod_tensor_to_array", a, "x", { table = t })
  return to_array_in(main_program():current_block(), tensor_arg("lod_tensor_to_array", "x", a.x),
    rank_table_arg("lod_tensor_to_array", "table", a.table))
end

local function from_array_in(block, arr, table_var)
  return by_rank_table_in(block, "array_to_lod_tensor", arr, table_var)
end

-- array_to_lod_tensor{x=, table=}
function M.array_to_lod_tensor(a, t)
  a = args("array_to_lod_tensor", a, "x", { table = t })
  return from_array_in(main_program():current_block(), array_arg("array_to_lod_tensor", "x", a.x),
    rank_table_arg("array_to_lod_tensor", "table", a.table))
end

local function reorder_in(block, x, table_var)
  return by_rank_table_in(block, "reorder_lod_tensor_by_rank", x, table_var)
end

-- reorder_lod_tensor_by_rank{x=, rank_table=}
function M.reorder_lod_tensor_by_rank(a, t)
  a = args("reorder_lod_tensor_by_rank", a, "x", { rank_table = t })
  return reorder_in(main_program():current_block(), tensor_arg("reorder_lod_tensor_by_rank", "x", a.x),
    rank_table_arg("reorder_lod_tensor_by_rank", "rank_table", a.rank_table))
end

local function shrink_in(block, x, i, table_var)
  local out = unique_var(block, "shrink_memory", { dtype = x.dtype })
  append_in(block, { type = "shrink_rnn_memory", inputs = { X = { x }, I = { i }, RankTable = { table_var } },
                     outputs = { Out = { out } } })
  return out
end

-- shrink_memory{x=, i=, table=}
function M.shrink_memory(a, i, t)
  a = args("shrink_memory", a, "x", { i = i, table = t })
  return shrink_in(main_program():current_block(), tensor_arg("shrink_memory", "x", a.x),
    index_arg("shrink_memory", "i", a.i), rank_table_arg("shrink_memory", "table", a.table))
end

-- lod_reset{x=, y=, target_lod=, append=false}: x's data with a new LoD
-- (y's LoD, or y's values as offsets, or target_lod)
function M.lod_reset(a, y, target_lod)
  a = args("lod_reset", a, "x", { y = y, target_lod = target_lod })
  local x = tensor_arg("lod_reset", "x", a.x)
  opt_tensor_arg("lod_reset", "y", a.y)
  local offsets = a.target_lod
  if offsets ~= nil or a.y == nil then
    -- offsets of one LoD level: integers from 0, never decreasing
    local ok = type(offsets) == "table" and not is_variable(offsets)
    if ok then
      for k, v in ipairs(offsets) do
        if type(v) ~= "number" or v % 1 ~= 0 or v < 0 or v > 2147483647 or (k > 1 and v < offsets[k - 1]) then
          ok = false
        end
      end
      if a.y == nil and (#offsets < 2 or offsets[1] ~= 0) then ok = false end
    end
    if not ok then
      bad_arg("lod_reset", "target_lod", a.y == nil and "a list of offsets like {0, 2, 5} (or give y)"
        or "a list of offsets like {0, 2, 5}", offsets)
    end
  end
  local helper = LayerHelper("lod_reset", a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = "lod_reset", inputs = { X = { x }, Y = a.y and { a.y } or nil }, outputs = { Out = { out } },
    attrs = { target_lod = a.target_lod or {}, append = check.boolean("lod_reset", "append", a.append, false) } }
  return out
end

-- ---- While ------------------------------------------------------------------------------

local While = {}
While.__index = While

-- While(cond) or While{cond=, is_test=false, name=}: cond is a bool [1]
-- Variable the loop body updates (less_than{..., cond=cond}).
function M.While(a, is_test)
  a = args("While", a, "cond", { is_test = is_test })
  local cond = scalar_bool_arg("While", "cond", a.cond)
  name_arg("While", a.name)
  return setmetatable({ cond = cond, is_test = check.boolean("While", "is_test", a.is_test, false),
                        helper = LayerHelper("while", a), done = false }, While)
end

-- Builds the loop: fn() appends the body's ops.
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

-- ---- ConditionalBlock ----------------------------------------------------------------------

-- Runs fn() as a conditional sub-block of the current block; returns fn's results.
local function conditional(prog, conds, is_scalar, fn)
  local parent = prog:current_block()
  local body, res = in_sub_block(prog, fn, true)
  ssa_rewrite(body)
  local reads, writes = outer_io(body)
  local scope = unique_var(parent, "conditional_block.scope", { type = "step_scopes" })
  parent:append_op{ type = "conditional_block", inputs = { Cond = conds, Input = reads },
    outputs = { Out = writes, Scope = { scope } },
    attrs = { sub_block = body, is_scalar_condition = is_scalar } }
  return res
end

local ConditionalBlock = {}
ConditionalBlock.__index = ConditionalBlock

-- ConditionalBlock{inputs={cond...}, is_scalar_condition=false}:block(fn)
-- (Fluid's building block: runs fn's ops when the scalar condition holds, or
-- when every input is non-empty)
function M.ConditionalBlock(a, is_scalar_condition)
  if is_variable(a) or type(a) ~= "table" or (a.inputs == nil and a[1] ~= nil) then
    a = { inputs = a, is_scalar_condition = is_scalar_condition }
  end
  local inputs = check.variables("ConditionalBlock", "inputs", a.inputs)
  for k, v in ipairs(inputs) do tensor_arg("ConditionalBlock", "inputs[" .. k .. "]", v) end
  local is_scalar = check.boolean("ConditionalBlock", "is_scalar_condition", a.is_scalar_condition, false)
  if is_scalar then scalar_bool_arg("ConditionalBlock", "inputs[1]", inputs[1]) end
  return setmetatable({ inputs = inputs, is_scalar = is_scalar }, ConditionalBlock)
end

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

-- ---- Switch --------------------------------------------------------------------------------

local Switch = {}
Switch.__index = Switch

-- Switch(): sw:case(cond, fn) ... sw:default(fn); the first case whose
-- (scalar bool) condition holds runs, else the default.
function M.Switch(name)
  if type(name) == "table" then name = name.name end
  name_arg("Switch", name)
  return setmetatable({ helper = LayerHelper("switch", { name = name }), pre_not = nil, has_default = false },
    Switch)
end

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

function Switch:default(fn)
  check_fn("Switch:default", fn)
  if not self.pre_not then raise("Switch:default: add a case before the default") end
  if self.has_default then raise("Switch:default: the switch already has a default") end
  self.has_default = true
  conditional(self.helper.main_program, { self.pre_not }, true, fn)
  return self
end

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

-- cond(pred, true_fn, false_fn): pred is a bool Variable of one element;
-- runs the function it selects and returns its Variables (one or several,
-- or a list if the function returned a list)
function M.cond(pred, true_fn, false_fn, name)
  if type(pred) == "table" and not is_variable(pred) then
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

-- ---- IfElse ---------------------------------------------------------------------------------

local IfElse = {}
IfElse.__index = IfElse

-- IfElse(cond): cond is a bool [N, 1] Variable, one entry per row (per
-- sequence of a LoD input). Inputs are split by it, the true/false blocks
-- run on their rows (a block whose rows are none does not run at all), and
-- ie() merges the outputs back in row order.
function M.IfElse(cond, name)
  if type(cond) == "table" and not is_variable(cond) then cond, name = cond.cond, cond.name end
  if not is_variable(cond) or cond.type ~= "lod_tensor" or cond.dtype ~= "bool" then
    bad_arg("IfElse", "cond", "a bool Variable (one entry per row, [N, 1])", cond)
  end
  name_arg("IfElse", name)
  local helper = LayerHelper("ifelse", { name = name })
  return setmetatable({ cond = cond, helper = helper, parent = helper.main_program:current_block(),
                        inputs = {}, outs = { [true] = {}, [false] = {} }, built = {}, status = nil }, IfElse)
end

-- the part of cond for one side: its rows (empty when no row goes there)
function IfElse:_cond_part(side)
  if not self.cond_parts then
    local t = unique_var(self.parent, self.helper.name .. ".cond_true", { dtype = "bool" })
    local f = unique_var(self.parent, self.helper.name .. ".cond_false", { dtype = "bool" })
    t.stop_gradient, f.stop_gradient = true, true
    self.parent:append_op{ type = "split_lod_tensor", inputs = { X = { self.cond }, Mask = { self.cond } },
      outputs = { OutTrue = { t }, OutFalse = { f } }, attrs = { level = 0 } }
    self.cond_parts = { [true] = t, [false] = f }
  end
  return self.cond_parts[side]
end

function IfElse:_branch(side, fn, who)
  check_fn(who, fn)
  if self.status ~= nil then raise(who .. ": called inside another block of the same IfElse") end
  if self.built[side] then raise(who .. ": the " .. tostring(side) .. " block is already built") end
  local prog = self.helper.main_program
  if prog:current_block().idx ~= self.parent.idx then
    raise(who .. ": build it in the block the IfElse was made in")
  end
  local part = self:_cond_part(side)
  self.status = side
  framework.protected(function() self.status = nil end, conditional, prog, { part }, false, fn)
  self.built[side] = true
end

function IfElse:true_block(fn) return self:_branch(true, fn, "IfElse:true_block") end
function IfElse:false_block(fn) return self:_branch(false, fn, "IfElse:false_block") end

-- input(x): inside a block, the rows of x that go to this block
function IfElse:input(x)
  if self.status == nil then raise("IfElse:input: call it inside true_block or false_block") end
  tensor_arg("IfElse:input", "x", x)
  visible_arg("IfElse:input", "x", x, self.parent, "the block")
  local pair = self.inputs[x.name]
  if not pair then
    local t = unique_var(self.parent, self.helper.name .. ".input_true", { dtype = x.dtype })
    local f = unique_var(self.parent, self.helper.name .. ".input_false", { dtype = x.dtype })
    self.parent:append_op{ type = "split_lod_tensor", inputs = { X = { x }, Mask = { self.cond } },
      outputs = { OutTrue = { t }, OutFalse = { f } }, attrs = { level = 0 } }
    pair = { [true] = t, [false] = f }
    self.inputs[x.name] = pair
  end
  return pair[self.status]
end

-- output(v1, v2, ...): inside a block, its results (both blocks give the
-- same number, in the same order)
function IfElse:output(...)
  if self.status == nil then raise("IfElse:output: call it inside true_block or false_block") end
  local list = self.outs[self.status]
  for i = 1, select("#", ...) do
    local v = select(i, ...)
    tensor_arg("IfElse:output", "output " .. i, v)
    local outside = unique_var(self.parent, self.helper.name .. ".output", { dtype = v.dtype })
    tensor_layers.assign(v, outside)
    list[#list + 1] = outside
  end
end

-- ie(): the outputs merged in row order (one Variable per output); when
-- only one side was built, that side's outputs as they are
function IfElse:__call()
  if getmetatable(self) ~= IfElse then raise("IfElse(): call it on an IfElse, got " .. var_text(self)) end
  if self.status ~= nil then raise("IfElse(): call it after the blocks, not inside one") end
  local t, f = self.outs[true], self.outs[false]
  if #t == 0 and #f == 0 then raise("IfElse(): no block gave outputs (use ie:output(...) in the blocks)") end
  if #t ~= 0 and #f ~= 0 and #t ~= #f then
    raise(string.format("IfElse(): the true block gives %d outputs and the false block %d", #t, #f))
  end
  local prog = self.helper.main_program
  if prog:current_block().idx ~= self.parent.idx then raise("IfElse(): call it in the block the IfElse was made in") end
  -- like Fluid, a single built side gives its outputs unmerged (its rows only)
  if #t == 0 then return unpack(f) end
  if #f == 0 then return unpack(t) end
  local merged = {}
  for i = 1, #t do
    local ref = t[i]
    local out = unique_var(self.parent, self.helper.name .. ".merged", { dtype = ref.dtype })
    local inputs = { X = { self.cond }, Mask = { self.cond }, InTrue = { t[i] }, InFalse = { f[i] } }
    self.parent:append_op{ type = "merge_lod_tensor", inputs = inputs, outputs = { Out = { out } },
                           attrs = { level = 0 } }
    merged[i] = out
  end
  return unpack(merged)
end

-- ---- StaticRNN ------------------------------------------------------------------------------

local StaticRNN = {}
StaticRNN.__index = StaticRNN

-- StaticRNN(): over time-major sequences [T, N, ...]; rnn:step(fn) builds
-- the step, rnn() returns the outputs [T, N, ...].
function M.StaticRNN(name)
  if type(name) == "table" then name = name.name end
  name_arg("StaticRNN", name)
  return setmetatable({ helper = LayerHelper("static_rnn", { name = name }), status = "before",
                        inputs = {}, memories = {}, outputs = {}, seq_len = nil }, StaticRNN)
end

function StaticRNN:_in_step(who)
  if self.status ~= "in" then raise(who .. ": call it inside rnn:step(function() ... end)") end
end

function StaticRNN:step(fn)
  check_fn("StaticRNN:step", fn)
  if self.status ~= "before" then raise("StaticRNN:step: the step is already built") end
  local prog = self.helper.main_program
  self.parent = prog:current_block()
  self.status = "in"
  local block = framework.protected(function() if self.status == "in" then self.status = "failed" end end,
    in_sub_block, prog, function()
      self.block = prog:current_block()
      fn()
    end, false)
  self.status = "after"
  self:_complete(block)
end

-- step_input(x): x is [T, N, ...]; inside the step, its [N, ...] slice
function StaticRNN:step_input(x)
  self:_in_step("StaticRNN:step_input")
  tensor_arg("StaticRNN:step_input", "x", x)
  visible_arg("StaticRNN:step_input", "x", x, self.parent, "the step")
  local shape = x.shape
  if #shape < 2 then
    raise(string.format("StaticRNN:step_input: '%s' has shape %s; step inputs are [T, N, ...]", x.name,
      framework.shape_text(shape)))
  end
  if self.seq_len == nil or self.seq_len < 0 then self.seq_len = shape[1]
  elseif shape[1] >= 0 and shape[1] ~= self.seq_len then
    raise(string.format("StaticRNN:step_input: '%s' has %d steps, earlier step inputs have %d", x.name, shape[1],
      self.seq_len))
  end
  local inner = {}
  for i = 2, #shape do inner[#inner + 1] = shape[i] end
  local ipt = self.block:create_var{ name = x.name, dtype = x.dtype, shape = inner, lod_level = x.lod_level }
  self.inputs[#self.inputs + 1] = ipt
  return ipt
end

-- memory{init=} or memory{shape=, batch_ref=, value=0, init_batch_dim_idx=0,
-- ref_batch_dim_idx=}: the state at this step (init at the first)
function StaticRNN:memory(a)
  self:_in_step("StaticRNN:memory")
  if is_variable(a) then a = { init = a } end
  if type(a) ~= "table" then check.fail("StaticRNN:memory", "argument", "a table {init=} or {shape=, batch_ref=}", a) end
  local init = a.init
  if init == nil then
    if a.shape == nil or a.batch_ref == nil then
      raise("StaticRNN:memory: give 'init', or 'shape' and 'batch_ref'")
    end
    shape_arg("StaticRNN:memory", "shape", a.shape)
    local ref = tensor_arg("StaticRNN:memory", "batch_ref", a.batch_ref)
    local ref_idx = a.ref_batch_dim_idx
    for _, ipt in ipairs(self.inputs) do
      if ipt.name == ref.name and ipt.block == self.block then
        ref = self.parent:var(ref.name)   -- the sequence: batch is its dim 1
        if ref_idx == nil then ref_idx = 1 end
      end
    end
    if ref.block.idx == self.block.idx then
      raise("StaticRNN:memory: 'batch_ref' must be a step input or a variable from outside the step")
    end
    local value = a.value
    if value == nil then value = a.init_value end
    local boot = unique_var(self.parent, self.helper.name .. ".memory_boot", { dtype = ref.dtype })
    boot.stop_gradient = true
    self.parent:append_op{ type = "fill_constant_batch_size_like", inputs = { Input = { ref } },
      outputs = { Out = { boot } },
      attrs = { shape = a.shape, dtype = ref.dtype, value = check.number("StaticRNN:memory", "value", value, 0),
                input_dim_idx = check.int("StaticRNN:memory", "ref_batch_dim_idx", ref_idx, 0),
                output_dim_idx = check.int("StaticRNN:memory", "init_batch_dim_idx", a.init_batch_dim_idx, 0) } }
    init = boot
  end
  tensor_arg("StaticRNN:memory", "init", init)
  visible_arg("StaticRNN:memory", "init", init, self.parent, "the step")
  local pre = unique_var(self.block, self.helper.name .. ".mem", {
    dtype = init.dtype, shape = #init.shape > 0 and init.shape or nil })
  self.memories[#self.memories + 1] = { init = init, pre = pre }
  return pre
end

-- update_memory(mem, value): the memory's state for the next step
function StaticRNN:update_memory(mem, value)
  self:_in_step("StaticRNN:update_memory")
  tensor_arg("StaticRNN:update_memory", "mem", mem)
  tensor_arg("StaticRNN:update_memory", "value", value)
  for _, m in ipairs(self.memories) do
    if m.pre.name == mem.name then
      m.value = value
      return
    end
  end
  raise("StaticRNN:update_memory: '" .. mem.name .. "' is not a memory of this StaticRNN (made by rnn:memory)")
end

-- step_output(v): v's value at every step, stacked into [T, N, ...]
function StaticRNN:step_output(o)
  self:_in_step("StaticRNN:step_output")
  tensor_arg("StaticRNN:step_output", "o", o)
  local tmp = unique_var(self.block, self.helper.name .. ".step_output", { dtype = o.dtype })
  self.block:append_op{ type = "rnn_memory_helper", inputs = { X = { o } }, outputs = { Out = { tmp } },
                        attrs = { dtype = o.dtype } }
  local shape = { self.seq_len or -1 }
  for _, d in ipairs(o.shape) do shape[#shape + 1] = d end
  local out = self.parent:create_var{ name = tmp.name, dtype = o.dtype, shape = #o.shape > 0 and shape or nil }
  self.outputs[#self.outputs + 1] = out
end

function StaticRNN:output(...)
  self:_in_step("StaticRNN:output")
  for i = 1, select("#", ...) do tensor_arg("StaticRNN:output", "output " .. i, (select(i, ...))) end
  for i = 1, select("#", ...) do self:step_output(select(i, ...)) end
end

function StaticRNN:_complete(block)
  local locals = {}
  for _, v in ipairs(self.inputs) do locals[v.name] = true end
  for _, m in ipairs(self.memories) do
    locals[m.pre.name] = true
    if not m.value then
      raise("StaticRNN: memory '" .. m.pre.name .. "' is never updated (call rnn:update_memory(mem, value) in the step)")
    end
  end
  local inits, pres, states = {}, {}, {}
  for i, m in ipairs(self.memories) do
    local new = unique_var(block, self.helper.name .. ".state", { dtype = m.value.dtype })
    block:append_op{ type = "rnn_memory_helper", inputs = { X = { m.value } }, outputs = { Out = { new } },
                     attrs = { dtype = m.value.dtype } }
    inits[i], pres[i], states[i] = m.init, m.pre.name, new.name
  end
  local params = name_set()
  for _, op in ipairs(block:ops()) do
    for _, n in ipairs(op:input_arg_names()) do
      if not locals[n] and outer_var(block, n) then params.add(n) end
    end
    for _, n in ipairs(op:output_arg_names()) do locals[n] = true end
  end
  if #self.inputs == 0 then raise("StaticRNN: the step has no step_input (the sequence length comes from them)") end
  if #self.outputs == 0 then raise("StaticRNN: the step has no output (use rnn:output(...))") end
  local outer_inputs = {}
  for i, v in ipairs(self.inputs) do outer_inputs[i] = self.parent:var(v.name) end
  local steps = unique_var(self.parent, self.helper.name .. ".step_scopes", { type = "step_scopes" })
  self.parent:append_op{ type = "recurrent",
    inputs = { inputs = outer_inputs, initial_states = inits, parameters = params.list },
    outputs = { outputs = self.outputs, step_scopes = { steps } },
    attrs = { ex_states = pres, states = states, sub_block = block, has_states = #pres > 0,
              reverse = false, is_train = true } }
end

function StaticRNN:__call()
  if getmetatable(self) ~= StaticRNN then raise("StaticRNN(): call it on a StaticRNN, got " .. var_text(self)) end
  if self.status ~= "after" then raise("StaticRNN(): build the step first (rnn:step(fn))") end
  return unpack(self.outputs)
end

-- ---- DynamicRNN ------------------------------------------------------------------------------

local DynamicRNN = {}
DynamicRNN.__index = DynamicRNN

-- DynamicRNN(): over the sequences of a LoD level-1 input; drnn:block(fn)
-- builds the step, drnn() returns LoD tensors with the input's LoD. Built
-- like Fluid's: a rank table sorts the sequences by length, inputs become
-- tensor arrays (one item per step, shrinking as sequences end), and a
-- While loop runs the step over the items.
function M.DynamicRNN(name)
  if type(name) == "table" then name = name.name end
  name_arg("DynamicRNN", name)
  return setmetatable({ helper = LayerHelper("dynamic_rnn", { name = name }), status = "before",
                        input_arrays = {}, mem_dict = {}, mem_links = {}, output_arrays = {}, outputs = {} },
    DynamicRNN)
end

function DynamicRNN:_in_block(who)
  if self.status ~= "in" then raise(who .. ": call it inside drnn:block(function() ... end)") end
end

function DynamicRNN:block(fn)
  check_fn("DynamicRNN:block", fn)
  if self.status ~= "before" then raise("DynamicRNN:block: the step is already built") end
  local prog = self.helper.main_program
  local parent = prog:current_block()
  self.parent = parent
  self.step_idx = tensor_layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 0 }
  self.zero_idx = tensor_layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 0 }
  self.cond = unique_var(parent, self.helper.name .. ".cond", { dtype = "bool", shape = { 1 } })
  self.cond.stop_gradient = true
  self.status = "in"
  local loop = M.While(self.cond)
  framework.protected(function() self.status = "after" end, loop.block, loop, function()
    fn()
    if not self.rank_table then raise("DynamicRNN:block: the step has no step_input") end
    tensor_layers.increment{ x = self.step_idx, value = 1 }
    for _, link in ipairs(self.mem_links) do M.array_write{ x = link[1], i = self.step_idx, array = link[2] } end
    tensor_layers.less_than{ x = self.step_idx, y = self.max_seq_len, cond = self.cond }
  end)
  for _, arr in ipairs(self.output_arrays) do
    self.outputs[#self.outputs + 1] = from_array_in(parent, arr, self.rank_table)
  end
end

-- step_input(x, level=0): x's current step (one row per live sequence,
-- longest sequences first)
function DynamicRNN:step_input(x, level)
  self:_in_block("DynamicRNN:step_input")
  tensor_arg("DynamicRNN:step_input", "x", x)
  level = level_arg("DynamicRNN:step_input", level)
  visible_arg("DynamicRNN:step_input", "x", x, self.parent, "the step")
  if x.lod_level < 1 then
    raise(string.format("DynamicRNN:step_input: '%s' has lod_level %d; step inputs are LoD sequences", x.name,
      x.lod_level))
  end
  local parent = self.parent
  if not self.rank_table then
    self.rank_table = rank_table_in(parent, x, level)
    self.max_seq_len = max_len_in(parent, self.rank_table)
    parent:append_op{ type = "less_than", inputs = { X = { self.step_idx }, Y = { self.max_seq_len } },
                      outputs = { Out = { self.cond } }, attrs = { force_cpu = true } }
  end
  local arr = to_array_in(parent, x, self.rank_table)
  self.input_arrays[#self.input_arrays + 1] = arr
  return M.array_read{ array = arr, i = self.step_idx }
end

-- static_input(x): x's rows of the sequences still running (x has one row
-- or sequence per input sequence)
function DynamicRNN:static_input(x)
  self:_in_block("DynamicRNN:static_input")
  tensor_arg("DynamicRNN:static_input", "x", x)
  visible_arg("DynamicRNN:static_input", "x", x, self.parent, "the step")
  if not self.rank_table then raise("DynamicRNN:static_input: call step_input first") end
  local reordered = reorder_in(self.parent, x, self.rank_table)
  return shrink_in(self.helper.main_program:current_block(), reordered, self.step_idx, self.rank_table)
end

-- memory{init=, need_reorder=false} or memory{shape=, value=0, dtype=} (dtype: the
-- first step input's by default)
function DynamicRNN:memory(a)
  self:_in_block("DynamicRNN:memory")
  if is_variable(a) then a = { init = a } end
  if type(a) ~= "table" then check.fail("DynamicRNN:memory", "argument", "a table {init=} or {shape=}", a) end
  local parent = self.parent
  local body = self.helper.main_program:current_block()
  local init = a.init
  if init == nil then
    if a.shape == nil then raise("DynamicRNN:memory: give 'init' or 'shape'") end
    shape_arg("DynamicRNN:memory", "shape", a.shape)
    if #self.input_arrays == 0 then raise("DynamicRNN:memory: call step_input before memory{shape=...}") end
    local first = self.input_arrays[1]
    local dtype = check.dtype("DynamicRNN:memory", "dtype", a.dtype, first.dtype)
    local in0 = unique_var(parent, self.helper.name .. ".in0", { dtype = first.dtype })
    parent:append_op{ type = "read_from_array", inputs = { X = { first }, I = { self.zero_idx } },
                      outputs = { Out = { in0 } } }
    init = unique_var(parent, self.helper.name .. ".memory_init", { dtype = dtype })
    local shape = { -1 }
    for _, d in ipairs(a.shape) do shape[#shape + 1] = d end
    parent:append_op{ type = "fill_constant_batch_size_like", inputs = { Input = { in0 } },
      outputs = { Out = { init } },
      attrs = { shape = shape, dtype = dtype, value = check.number("DynamicRNN:memory", "value", a.value, 0) } }
    init.stop_gradient = true
  else
    tensor_arg("DynamicRNN:memory", "init", init)
    visible_arg("DynamicRNN:memory", "init", init, parent, "the step")
    if check.boolean("DynamicRNN:memory", "need_reorder", a.need_reorder, false) then
      if not self.rank_table then raise("DynamicRNN:memory: call step_input first") end
      init = reorder_in(parent, init, self.rank_table)
    end
  end
  if not self.rank_table then raise("DynamicRNN:memory: call step_input first") end
  local arr = unique_var(parent, self.helper.name .. ".memory_array", { type = "lod_tensor_array", dtype = init.dtype })
  parent:append_op{ type = "write_to_array", inputs = { X = { init }, I = { self.zero_idx } }, outputs = { Out = { arr } } }
  local prev = M.array_read{ array = arr, i = self.step_idx }
  local mem = shrink_in(body, prev, self.step_idx, self.rank_table)
  self.mem_dict[mem.name] = arr
  return mem
end

function DynamicRNN:update_memory(ex_mem, new_mem)
  self:_in_block("DynamicRNN:update_memory")
  tensor_arg("DynamicRNN:update_memory", "ex_mem", ex_mem)
  tensor_arg("DynamicRNN:update_memory", "new_mem", new_mem)
  local arr = self.mem_dict[ex_mem.name]
  if not arr then
    raise("DynamicRNN:update_memory: '" .. ex_mem.name .. "' is not a memory of this DynamicRNN (made by drnn:memory)")
  end
  self.mem_links[#self.mem_links + 1] = { new_mem, arr }
end

function DynamicRNN:output(...)
  self:_in_block("DynamicRNN:output")
  for i = 1, select("#", ...) do
    local v = tensor_arg("DynamicRNN:output", "output " .. i, (select(i, ...)))
    local arr = unique_var(self.parent, self.helper.name .. ".output_array", { type = "lod_tensor_array", dtype = v.dtype })
    M.array_write{ x = v, i = self.step_idx, array = arr }
    self.output_arrays[#self.output_arrays + 1] = arr
  end
end

function DynamicRNN:__call()
  if getmetatable(self) ~= DynamicRNN then raise("DynamicRNN(): call it on a DynamicRNN, got " .. var_text(self)) end
  if self.status ~= "after" then raise("DynamicRNN(): build the step first (drnn:block(fn))") end
  return unpack(self.outputs)
end

-- ---- Print ---------------------------------------------------------------------------------

-- Print(input, {first_n=-1, message=, summarize=20, print_tensor_name=true,
-- print_tensor_type=true, print_tensor_shape=true, print_tensor_lod=true,
-- print_phase="both"}): writes input's values to stderr each time the op
-- runs (each step inside a While or an RNN) and returns input. The print op
-- only looks; gradients flow around it.
function M.Print(input, a)
  tensor_arg("Print", "input", input)
  a = a or {}
  if type(a) ~= "table" then check.fail("Print", "options", "a table", a) end
  local helper = LayerHelper("print", a)
  helper:append_op{ type = "print", inputs = { In = { input } }, attrs = {
    first_n = check.int("Print", "first_n", a.first_n, -1),
    message = check.string("Print", "message", a.message, ""),
    summarize = check.int("Print", "summarize", a.summarize, 20),
    print_tensor_name = check.boolean("Print", "print_tensor_name", a.print_tensor_name, true),
    print_tensor_type = check.boolean("Print", "print_tensor_type", a.print_tensor_type, true),
    print_tensor_shape = check.boolean("Print", "print_tensor_shape", a.print_tensor_shape, true),
    print_tensor_lod = check.boolean("Print", "print_tensor_lod", a.print_tensor_lod, true),
    print_phase = check.string("Print", "print_phase", a.print_phase, "both", { "forward", "backward", "both" }) } }
  return input
end

-- every public method checks it was called with ':' on its own kind of object
for _, c in ipairs({ { While, "While" }, { ConditionalBlock, "ConditionalBlock" }, { Switch, "Switch" },
                     { IfElse, "IfElse" }, { StaticRNN, "StaticRNN" }, { DynamicRNN, "DynamicRNN" } }) do
  local class = c[1]
  framework._guard_methods(class, function(x) return getmetatable(x) == class end, c[2], {})
end

M._describe = describe
return M
