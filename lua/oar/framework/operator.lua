--- oar.framework.operator: Operator accessors (slots, arguments, attributes).
-- @module oar.framework.operator
local I = require("oar.framework.core")
local C = I.C
local Operator = I.Operator
local ffi = I.ffi
local is_operator = I.is_operator
local lib = I.lib
local raise = I.raise
local check_name = I.check_name
local A = I.A
local attr_type_names = I.attr_type_names
local set_attr = I.set_attr

-- ==== Operator ================================================================
local op_getters = {
  type = function(op) return ffi.string(C.oar_op_desc_type(op.handle)) end,
  idx = function(op)
    local ptr = op.block:_ptr()
    for i = 0, C.oar_block_num_ops(ptr) - 1 do
      if C.oar_block_op_at(ptr, i) == op.handle then return i end
    end
    return nil
  end,
}

op_getters.handle = function(op)   -- only reached once Block:_remove_op dropped the handle
  if rawget(op, "_removed") then raise("Operator: the op was removed from its block (Block:_remove_op)") end
end

--- An operator of a block (Fluid's `Operator`): a view on its OpDesc.
-- @type Operator
-- @tfield string type the op type ("mul", "relu", ...)
-- @tfield Block block the block holding it
-- @tfield int idx its 0-based position in the block (nil once removed)
-- @tfield cdata handle the C op desc
-- @usage
-- for _, op in ipairs(main:global_block():ops()) do
--   print(op.type, table.concat(op:input_arg_names(), ","))
-- end
Operator.__index = function(op, k)
  local g = op_getters[k]
  if g then return g(op) end
  return Operator[k]
end

local function check_op(op, who)
  if not is_operator(op) then raise("Operator:" .. who .. ": call it with ':' on an Operator") end
  if rawget(op, "_removed") then raise("Operator:" .. who .. ": the op was removed from its block (Block:_remove_op)") end
end

local function slot_args(op, slot, count_fn, arg_fn)
  local n = count_fn(op.handle, slot)
  local out = {}
  for i = 0, n - 1 do out[#out + 1] = ffi.string(arg_fn(op.handle, slot, i)) end
  return out
end

--- The variable names in input slot `slot` ({} when the op has no such slot).
-- @tparam string slot e.g. "X"
-- @treturn {string,...}
-- @usage print(op:input("X")[1])
function Operator:input(slot)
  check_op(self, "input")
  check_name(slot, "Operator:input")
  return slot_args(self, slot, C.oar_op_desc_input_count, C.oar_op_desc_input_arg)
end

--- The variable names in output slot `slot` ({} when absent).
-- @tparam string slot e.g. "Out"
-- @treturn {string,...}
-- @usage print(op:output("Out")[1])
function Operator:output(slot)
  check_op(self, "output")
  check_name(slot, "Operator:output")
  return slot_args(self, slot, C.oar_op_desc_output_count, C.oar_op_desc_output_arg)
end

-- the strings at_fn(handle, i) for i below count_fn(handle)
local function indexed_strings(handle, count_fn, at_fn)
  local out = {}
  for i = 0, count_fn(handle) - 1 do out[#out + 1] = ffi.string(at_fn(handle, i)) end
  return out
end

--- The op's input slot names.
-- @treturn {string,...}
-- @usage print(table.concat(op:input_names(), ", "))   -- "X, Y" for mul
function Operator:input_names()
  check_op(self, "input_names")
  return indexed_strings(self.handle, C.oar_op_desc_num_inputs, C.oar_op_desc_input_slot)
end

--- The op's output slot names.
-- @treturn {string,...}
-- @usage print(table.concat(op:output_names(), ", "))
function Operator:output_names()
  check_op(self, "output_names")
  return indexed_strings(self.handle, C.oar_op_desc_num_outputs, C.oar_op_desc_output_slot)
end

-- the names of every slot op:<slots_method>() lists, through op:<args_method>(slot)
local function args_of_slots(op, slots_method, args_method)
  local out = {}
  for _, slot in ipairs(op[slots_method](op)) do
    for _, n in ipairs(op[args_method](op, slot)) do out[#out + 1] = n end
  end
  return out
end

--- Every variable name the op reads, slot by slot.
-- @treturn {string,...}
-- @usage for _, n in ipairs(op:input_arg_names()) do print(n) end
function Operator:input_arg_names()
  return args_of_slots(self, "input_names", "input")
end

--- Every variable name the op writes, slot by slot.
-- @treturn {string,...}
-- @usage for _, n in ipairs(op:output_arg_names()) do print(n) end
function Operator:output_arg_names()
  return args_of_slots(self, "output_names", "output")
end

--- The names of the attributes set on the op.
-- @treturn {string,...}
-- @usage for _, a in ipairs(op:attr_names()) do print(a, op:attr(a)) end
function Operator:attr_names()
  check_op(self, "attr_names")
  return indexed_strings(self.handle, C.oar_op_desc_num_attrs, C.oar_op_desc_attr_name)
end

--- Whether attribute `name` is set on the op.
-- @tparam string name
-- @treturn bool
-- @usage if op:has_attr("is_test") then print(op:attr("is_test")) end
function Operator:has_attr(name)
  check_name(name, "Operator:has_attr")
  return C.oar_op_desc_attr_type(self.handle, name) >= 0
end

--- The type of attribute `name`: "INT", "FLOAT", "STRING", "INTS", "FLOATS",
-- "STRINGS", "BOOLEAN", "BOOLEANS", "BLOCK", "LONG", "BLOCKS", "LONGS", or nil.
-- @tparam string name
-- @treturn string|nil
-- @usage print(op:attr_type("scale"))   -- "FLOAT"
function Operator:attr_type(name)
  check_name(name, "Operator:attr_type")
  local t = C.oar_op_desc_attr_type(self.handle, name)
  return attr_type_names[t]
end

-- Raw attr reads; BLOCK attrs come back as the block index.
local function read_attr(h, name, t)
  if t == A.INT then
    local v = ffi.new("int32_t[1]"); C.oar_op_desc_get_attr_int(h, name, v); return v[0]
  elseif t == A.LONG then
    local v = ffi.new("int64_t[1]"); C.oar_op_desc_get_attr_long(h, name, v); return tonumber(v[0])
  elseif t == A.FLOAT then
    local v = ffi.new("float[1]"); C.oar_op_desc_get_attr_float(h, name, v); return v[0]
  elseif t == A.BOOLEAN then
    local v = ffi.new("bool[1]"); C.oar_op_desc_get_attr_bool(h, name, v); return v[0] == true
  elseif t == A.STRING then
    local s = C.oar_op_desc_get_attr_string(h, name)
    return s ~= nil and ffi.string(s) or ""
  elseif t == A.BLOCK then
    local v = ffi.new("int32_t[1]"); C.oar_op_desc_get_attr_int(h, name, v); return v[0]
  end
  local data = ffi.new("const void *[1]")
  local n = ffi.new("int[1]")
  if C.oar_op_desc_get_attr_list(h, name, data, n) ~= 0 then return nil end
  local out = {}
  if t == A.STRINGS then
    for i = 0, n[0] - 1 do
      local s = C.oar_op_desc_get_attr_strings_at(h, name, i)
      out[i + 1] = s ~= nil and ffi.string(s) or ""
    end
    return out
  end
  local ctype = (t == A.INTS or t == A.BLOCKS) and "const int32_t *" or t == A.LONGS and "const int64_t *"
    or t == A.FLOATS and "const float *" or t == A.BOOLEANS and "const bool *"
  if not ctype then return nil end
  local p = ffi.cast(ctype, data[0])
  for i = 0, n[0] - 1 do
    local x = p[i]
    if t == A.BOOLEANS then out[i + 1] = x == true else out[i + 1] = tonumber(x) end
  end
  return out
end

local function block_attr_value(h, name)
  local data = ffi.new("const void *[1]")
  local n = ffi.new("int[1]")
  -- the desc stores BLOCK attrs like an INT; try the int getter first
  local v = ffi.new("int32_t[1]")
  if C.oar_op_desc_get_attr_int(h, name, v) == 0 then return v[0] end
  if C.oar_op_desc_get_attr_list(h, name, data, n) == 0 and n[0] > 0 then
    return ffi.cast("const int32_t *", data[0])[0]
  end
  return -1
end

--- The value of attribute `name` (nil when absent). A BLOCK attribute gives
-- the Block, BLOCKS a list of Blocks.
-- @tparam string name
-- @return the value: number, string, boolean, list, Block or nil
-- @usage print(op:attr("scale"))
function Operator:attr(name)
  check_op(self, "attr")
  check_name(name, "Operator:attr")
  local t = C.oar_op_desc_attr_type(self.handle, name)
  if t < 0 then return nil end
  if t == A.BLOCK then
    local idx = block_attr_value(self.handle, name)
    if idx < 0 then return nil end
    return self.block.program:block(idx)
  end
  local v = read_attr(self.handle, name, t)
  if t == A.BLOCKS and v then
    for i, idx in ipairs(v) do v[i] = self.block.program:block(idx) end
  end
  return v
end

--- The block index a BLOCK attribute holds (-1 when absent).
-- @tparam string name e.g. "sub_block"
-- @treturn int
-- @usage print(while_op:block_attr_id("sub_block"))
function Operator:block_attr_id(name)
  check_name(name, "Operator:block_attr_id")
  return block_attr_value(self.handle, name)
end

--- Sets attribute `name`, coerced to the type the op declares.
-- @tparam string name
-- @param value number, string, boolean, list or Block
-- @raise when the value does not fit the attribute's type
-- @usage op:set_attr("scale", 0.5)
function Operator:set_attr(name, value)
  check_op(self, "set_attr")
  check_name(name, "Operator:set_attr")
  set_attr(self.handle, self.type, name, value, self.block.program)
end
Operator._set_attr = Operator.set_attr

function Operator:_rename_input(from, to)
  if C.oar_op_desc_rename_input(self.handle, from, to) ~= 0 then raise("Operator:_rename_input: " .. lib.last_error()) end
end

function Operator:_rename_output(from, to)
  if C.oar_op_desc_rename_output(self.handle, from, to) ~= 0 then raise("Operator:_rename_output: " .. lib.last_error()) end
end


-- shared with the later parts
I.block_attr_value = block_attr_value
I.read_attr = read_attr
