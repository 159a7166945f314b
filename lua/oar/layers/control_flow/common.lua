--- oar.layers.control_flow.common: what the control-flow constructs share:
-- building sub-blocks, the single-assignment rewrite of bodies, argument
-- checks in the user's terms, and the LoD rank-table building blocks.
-- Internal: the public layers are in the sibling modules.
-- @module oar.layers.control_flow.common
local framework = require("oar.framework")
local LayerHelper = require("oar.layer_helper")
local unique_name = require("oar.unique_name")

local check = LayerHelper.check
local raise, is_variable, describe = framework.raise, framework.is_variable, framework.describe

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

-- ---- LoD rank-table building blocks (ops appended to a given block) ---------------

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

local function max_len_in(block, table_var)
  local out = unique_var(block, "max_sequence_len", { dtype = "int64" })
  out.stop_gradient = true
  append_in(block, { type = "max_sequence_len", inputs = { RankTable = { table_var } }, outputs = { Out = { out } } })
  return out
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

local function from_array_in(block, arr, table_var)
  return by_rank_table_in(block, "array_to_lod_tensor", arr, table_var)
end

local function reorder_in(block, x, table_var)
  return by_rank_table_in(block, "reorder_lod_tensor_by_rank", x, table_var)
end

local function shrink_in(block, x, i, table_var)
  local out = unique_var(block, "shrink_memory", { dtype = x.dtype })
  append_in(block, { type = "shrink_rnn_memory", inputs = { X = { x }, I = { i }, RankTable = { table_var } },
                     outputs = { Out = { out } } })
  return out
end

-- ---- conditional sub-blocks ------------------------------------------------------


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


return {
  EMPTY = EMPTY,
  append_in = append_in,
  args = args,
  array_arg = array_arg,
  bad_arg = bad_arg,
  by_rank_table_in = by_rank_table_in,
  check_fn = check_fn,
  conditional = conditional,
  deep_rename = deep_rename,
  from_array_in = from_array_in,
  in_sub_block = in_sub_block,
  index_arg = index_arg,
  is_scalar_bool = is_scalar_bool,
  known_numel = known_numel,
  level_arg = level_arg,
  lists_name = lists_name,
  main_program = main_program,
  max_len_in = max_len_in,
  name_arg = name_arg,
  name_set = name_set,
  opt_tensor_arg = opt_tensor_arg,
  outer_io = outer_io,
  outer_var = outer_var,
  rank_table_arg = rank_table_arg,
  rank_table_in = rank_table_in,
  reorder_in = reorder_in,
  scalar_bool_arg = scalar_bool_arg,
  shape_arg = shape_arg,
  shrink_in = shrink_in,
  ssa_blocks = ssa_blocks,
  ssa_rewrite = ssa_rewrite,
  sub_blocks = sub_blocks,
  tensor_arg = tensor_arg,
  to_array_in = to_array_in,
  unique_var = unique_var,
  var_text = var_text,
  visible_arg = visible_arg,
}
