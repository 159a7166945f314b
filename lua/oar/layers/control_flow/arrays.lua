--- oar.layers.control_flow.arrays: tensor arrays (create_array, array_write,
-- array_read, array_length) and the LoD rank-table layers (lod_rank_table,
-- max_sequence_len, lod_tensor_to_array, array_to_lod_tensor,
-- reorder_lod_tensor_by_rank, shrink_memory, lod_reset).
-- @module oar.layers.control_flow.arrays
local framework = require("oar.framework")
local LayerHelper = require("oar.layer_helper")
local argcheck = require("oar.argcheck")
local common = require("oar.layers.control_flow.common")

local check = LayerHelper.check
local is_variable = framework.is_variable
local args = common.args
local array_arg = common.array_arg
local bad_arg = common.bad_arg
local from_array_in = common.from_array_in
local index_arg = common.index_arg
local level_arg = common.level_arg
local main_program = common.main_program
local max_len_in = common.max_len_in
local opt_tensor_arg = common.opt_tensor_arg
local rank_table_arg = common.rank_table_arg
local rank_table_in = common.rank_table_in
local reorder_in = common.reorder_in
local shrink_in = common.shrink_in
local ssa_blocks = common.ssa_blocks
local tensor_arg = common.tensor_arg
local to_array_in = common.to_array_in
local unique_var = common.unique_var

local M = {}

-- ---- tensor arrays --------------------------------------------------------------

--- An empty tensor array (a LoD tensor array), to fill with array_write.
-- @tparam[opt="float32"] string|table dtype the element dtype, or `{dtype=}`
-- @treturn Variable a variable of type lod_tensor_array
-- @usage local arr = layers.create_array("float32")
function M.create_array(dtype)
  if type(dtype) == "table" and not is_variable(dtype) then
    argcheck.keys("layers.create_array", dtype, "dtype")
    dtype = dtype.dtype
  end
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

--- Writes `x` at index `i` of a tensor array: `array[i] = x`. Also
-- positional: `array_write(x, i, array)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x the tensor to write
-- @tparam Variable a.i the index, int64 [1] (0-based)
-- @tparam[opt] Variable a.array the array; omitted: a new array of x's dtype
-- @tparam[opt] string a.name
-- @tparam[opt] Variable i with a positional x
-- @tparam[opt] Variable array with a positional x
-- @treturn Variable the array
-- @raise when i is not an int64 [1] Variable or array not a tensor array
-- @usage
-- local i = layers.zeros{shape = {1}, dtype = "int64"}
-- local arr = layers.array_write{x = x, i = i}
function M.array_write(a, i, array)
  a = args("array_write", a, "x", { i = i, array = array }, "array i name x")
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

--- Reads element `i` of a tensor array. Also positional: `array_read(array, i)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.array a tensor array (made by create_array)
-- @tparam Variable a.i the index, int64 [1] (0-based)
-- @tparam[opt] string a.name
-- @tparam[opt] Variable i with a positional array
-- @treturn Variable the element, of the array's dtype
-- @usage local x0 = layers.array_read{array = arr, i = i}
function M.array_read(a, i)
  a = args("array_read", a, "array", { i = i }, "array i name")
  local arr = array_arg("array_read", "array", a.array)
  local helper = LayerHelper("array_read", a)
  local idx = index_for(helper, a.i, "array_read")
  local out = helper:create_variable_for_type_inference(arr.dtype)
  helper:append_op{ type = "read_from_array", inputs = { X = { arr }, I = { idx } }, outputs = { Out = { out } } }
  return out
end

--- The number of elements of a tensor array.
-- @tparam Variable|table a the array, or `{array=}`
-- @treturn Variable int64 [1] (stop_gradient)
-- @usage local n = layers.array_length(arr)
function M.array_length(a)
  if type(a) == "table" and not is_variable(a) then
    argcheck.keys("layers.array_length", a, "array")
    a = a.array
  end
  local arr = array_arg("array_length", "array", a)
  local helper = LayerHelper("array_length", {})
  local out = helper:create_variable_for_type_inference("int64", true)
  helper:append_op{ type = "lod_array_length", inputs = { X = { arr } }, outputs = { Out = { out } } }
  out.stop_gradient = true
  return out
end

-- ---- LoD rank tables ------------------------------------------------------------------

--- A LoD rank table: the sequences of `x`'s LoD level `level`, sorted by
-- length, longest first (what DynamicRNN is built on). Also positional:
-- `lod_rank_table(x, level)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x a LoD tensor
-- @tparam[opt=0] int a.level the LoD level
-- @tparam[opt] int level with a positional x
-- @treturn Variable a variable of type lod_rank_table
-- @usage local table = layers.lod_rank_table{x = words, level = 0}
function M.lod_rank_table(a, level)
  a = args("lod_rank_table", a, "x", { level = level }, "level x")
  local x = tensor_arg("lod_rank_table", "x", a.x)
  return rank_table_in(main_program():current_block(), x, level_arg("lod_rank_table", a.level))
end

--- The length of the longest sequence of a rank table.
-- @tparam Variable|table a the rank table, or `{rank_table=}`
-- @treturn Variable int64 [1]
-- @usage local n = layers.max_sequence_len(layers.lod_rank_table(words))
function M.max_sequence_len(a)
  a = args("max_sequence_len", a, "rank_table", nil, "rank_table")
  return max_len_in(main_program():current_block(), rank_table_arg("max_sequence_len", "rank_table", a.rank_table))
end

--- Splits a LoD tensor into a tensor array by time step: element t holds
-- step t of every sequence long enough, in the rank table's order. Also
-- positional: `lod_tensor_to_array(x, table)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x a LoD tensor
-- @tparam Variable a.table its rank table (made by lod_rank_table)
-- @tparam[opt] Variable t the rank table, with a positional x
-- @treturn Variable a tensor array
-- @usage local steps = layers.lod_tensor_to_array{x = words, table = layers.lod_rank_table(words)}
function M.lod_tensor_to_array(a, t)
  a = args("lod_tensor_to_array", a, "x", { table = t }, "table x")
  return to_array_in(main_program():current_block(), tensor_arg("lod_tensor_to_array", "x", a.x),
    rank_table_arg("lod_tensor_to_array", "table", a.table))
end

--- Joins a tensor array of time steps back into a LoD tensor in the
-- original sequence order (the inverse of lod_tensor_to_array). Also
-- positional: `array_to_lod_tensor(x, table)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x a tensor array
-- @tparam Variable a.table the rank table the array was split by
-- @tparam[opt] Variable t the rank table, with a positional x
-- @treturn Variable a LoD tensor
-- @usage local seq = layers.array_to_lod_tensor{x = steps, table = table}
function M.array_to_lod_tensor(a, t)
  a = args("array_to_lod_tensor", a, "x", { table = t }, "table x")
  return from_array_in(main_program():current_block(), array_arg("array_to_lod_tensor", "x", a.x),
    rank_table_arg("array_to_lod_tensor", "table", a.table))
end

--- Reorders the rows (or sequences) of `x` into a rank table's order. Also
-- positional: `reorder_lod_tensor_by_rank(x, rank_table)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x a tensor with one row (or sequence) per sequence of the table
-- @tparam Variable a.rank_table a rank table (made by lod_rank_table)
-- @tparam[opt] Variable t the rank table, with a positional x
-- @treturn Variable x reordered
-- @usage local boot = layers.reorder_lod_tensor_by_rank{x = init_state, rank_table = table}
function M.reorder_lod_tensor_by_rank(a, t)
  a = args("reorder_lod_tensor_by_rank", a, "x", { rank_table = t }, "rank_table x")
  return reorder_in(main_program():current_block(), tensor_arg("reorder_lod_tensor_by_rank", "x", a.x),
    rank_table_arg("reorder_lod_tensor_by_rank", "rank_table", a.rank_table))
end

--- Keeps the first rows of `x`: one per sequence still running at step `i`
-- of the rank table (a DynamicRNN memory as sequences end). Also
-- positional: `shrink_memory(x, i, table)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x the memory, one row per sequence in rank order
-- @tparam Variable a.i the step, int64 [1]
-- @tparam Variable a.table the rank table
-- @tparam[opt] Variable i with a positional x
-- @tparam[opt] Variable t the rank table, with a positional x
-- @treturn Variable x's leading rows
-- @usage local mem = layers.shrink_memory{x = mem, i = i, table = table}
function M.shrink_memory(a, i, t)
  a = args("shrink_memory", a, "x", { i = i, table = t }, "i table x")
  return shrink_in(main_program():current_block(), tensor_arg("shrink_memory", "x", a.x),
    index_arg("shrink_memory", "i", a.i), rank_table_arg("shrink_memory", "table", a.table))
end

--- `x`'s data with a new LoD: `y`'s LoD (or, when y has none, y's values as
-- offsets), or `target_lod`. Also positional: `lod_reset(x, y, target_lod)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x the tensor
-- @tparam[opt] Variable a.y the tensor whose LoD (or values) to take
-- @tparam[opt] {int,...} a.target_lod offsets of one LoD level, like `{0, 2, 5}` (required without y)
-- @tparam[opt=false] bool a.append add the level below x's LoD instead of replacing it
-- @tparam[opt] string a.name
-- @tparam[opt] Variable y with a positional x
-- @tparam[opt] {int,...} target_lod with a positional x
-- @treturn Variable x's data with the new LoD
-- @raise when target_lod is not a list of non-decreasing offsets from 0
-- @usage local seqs = layers.lod_reset{x = rows, target_lod = {0, 2, 5}}
function M.lod_reset(a, y, target_lod)
  a = args("lod_reset", a, "x", { y = y, target_lod = target_lod }, "append name target_lod x y")
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


return M
