--- oar.framework.attrs: building ops: attribute coercion (Lua values to the
-- desc's attribute types), slot arguments, append_op/prepend_op.
-- @module oar.framework.attrs
local I = require("oar.framework.core")
local argcheck = require("oar.argcheck")
local Block = I.Block
local C = I.C
local M = I.M
local describe = I.describe
local dtypes = I.dtypes
local ffi = I.ffi
local is_block = I.is_block
local is_operator = I.is_operator
local is_program = I.is_program
local is_variable = I.is_variable
local lib = I.lib
local raise = I.raise
local check_block = I.check_block
local check_name = I.check_name
local wrap_op = I.wrap_op

-- ---- building ops --------------------------------------------------------------
local A = {
  INT = 0, FLOAT = 1, STRING = 2, INTS = 3, FLOATS = 4, STRINGS = 5, BOOLEAN = 6,
  BOOLEANS = 7, BLOCK = 8, LONG = 9, BLOCKS = 10, LONGS = 11,
}
M.AttrType = A
local attr_type_names = {}
for k, v in pairs(A) do attr_type_names[v] = k end

local INT32_MAX = 2147483647

local function is_int(x) return type(x) == "number" and x % 1 == 0 end

-- attr type for a value when the op does not declare the attr
local function infer_attr_type(v)
  local t = type(v)
  if t == "boolean" then return A.BOOLEAN end
  if t == "number" then
    if is_int(v) then return (math.abs(v) <= INT32_MAX) and A.INT or A.LONG end
    return A.FLOAT
  end
  if t == "string" then return A.STRING end
  if is_block(v) then return A.BLOCK end
  if is_variable(v) or is_program(v) or is_operator(v) then return nil end
  if t == "table" then
    local first = v[1]
    if first == nil then return A.INTS end
    if type(first) == "boolean" then return A.BOOLEANS end
    if type(first) == "string" then return A.STRINGS end
    if is_block(first) then return A.BLOCKS end
    local all_int, big = true, false
    for _, x in ipairs(v) do
      if not is_int(x) then all_int = false end
      if is_int(x) and math.abs(x) > INT32_MAX then big = true end
    end
    if all_int then return big and A.LONGS or A.INTS end
    return A.FLOATS
  end
  return nil
end

local function block_idx_of(v, op_type, name, prog)
  if is_block(v) then
    if v.program ~= prog then
      raise(string.format("op '%s': attr '%s' is a block of another program", op_type, name))
    end
    return v.idx
  end
  if is_int(v) then return v end
  raise(string.format("op '%s': attr '%s' expects a Block, got %s", op_type, name, describe(v)))
end

-- Writes attr `name` = `value` onto a detached or attached op desc.
local function set_attr(op, op_type, name, value, prog)
  local t = C.oar_op_attr_type(op_type, name)
  if t < 0 then
    t = infer_attr_type(value)
    if t == nil then
      raise(string.format("op '%s': attr '%s' has an unsupported value %s", op_type, name, describe(value)))
    end
  end
  local function bad(expect)
    raise(string.format("op '%s': attr '%s' expects %s, got %s", op_type, name, expect, describe(value)))
  end
  local rc
  if t == A.INT or t == A.LONG then
    local v = value
    if type(v) == "boolean" then v = v and 1 or 0 end
    if type(v) == "string" and dtypes.name(v) then v = dtypes.enum(v) end  -- dtype attrs
    if not is_int(v) then bad("an integer") end
    if t == A.INT then
      if math.abs(v) > INT32_MAX then bad("a 32-bit integer") end
      rc = C.oar_op_desc_set_attr_int(op, name, v)
    else
      rc = C.oar_op_desc_set_attr_long(op, name, ffi.new("int64_t", v))
    end
  elseif t == A.FLOAT then
    if type(value) ~= "number" then bad("a number") end
    rc = C.oar_op_desc_set_attr_float(op, name, value)
  elseif t == A.BOOLEAN then
    local v = value
    if type(v) == "number" and (v == 0 or v == 1) then v = v == 1 end
    if type(v) ~= "boolean" then bad("a boolean") end
    rc = C.oar_op_desc_set_attr_bool(op, name, v)
  elseif t == A.STRING then
    if type(value) ~= "string" then bad("a string") end
    rc = C.oar_op_desc_set_attr_string(op, name, value)
  elseif t == A.BLOCK then
    rc = C.oar_op_desc_set_attr_block(op, name, block_idx_of(value, op_type, name, prog))
  else
    local list = value
    if type(list) ~= "table" or is_block(list) or is_variable(list) then list = { list } end
    local n = #list
    if t == A.INTS or t == A.LONGS or t == A.BLOCKS then
      local arr = ffi.new((t == A.LONGS and "int64_t" or "int32_t") .. "[?]", n > 0 and n or 1)
      for i = 1, n do
        local x = list[i]
        if t == A.BLOCKS then x = block_idx_of(x, op_type, name, prog) end
        if type(x) == "boolean" then x = x and 1 or 0 end
        if type(x) == "string" and dtypes.name(x) then x = dtypes.enum(x) end
        if not is_int(x) or (t ~= A.LONGS and math.abs(x) > INT32_MAX) then
          bad(string.format("a list of %sintegers (item %d is %s)", t == A.LONGS and "" or "32-bit ", i, describe(x)))
        end
        arr[i - 1] = x
      end
      if t == A.INTS then rc = C.oar_op_desc_set_attr_ints(op, name, arr, n)
      elseif t == A.LONGS then rc = C.oar_op_desc_set_attr_longs(op, name, arr, n)
      else rc = C.oar_op_desc_set_attr_blocks(op, name, arr, n) end
    elseif t == A.FLOATS then
      local arr = ffi.new("float[?]", n > 0 and n or 1)
      for i = 1, n do
        if type(list[i]) ~= "number" then bad("a list of numbers") end
        arr[i - 1] = list[i]
      end
      rc = C.oar_op_desc_set_attr_floats(op, name, arr, n)
    elseif t == A.BOOLEANS then
      local arr = ffi.new("bool[?]", n > 0 and n or 1)
      for i = 1, n do
        if type(list[i]) ~= "boolean" then bad("a list of booleans") end
        arr[i - 1] = list[i]
      end
      rc = C.oar_op_desc_set_attr_bools(op, name, arr, n)
    elseif t == A.STRINGS then
      for i = 1, n do
        if type(list[i]) ~= "string" then bad("a list of strings") end
      end
      local arr = lib.cstrings(list)
      rc = C.oar_op_desc_set_attr_strings(op, name, arr, n)
    else
      raise(string.format("op '%s': attr '%s' has unsupported type %s", op_type, name, tostring(t)))
    end
  end
  if rc ~= 0 then raise(string.format("op '%s': attr '%s': %s", op_type, name, lib.last_error())) end
end
M._set_attr = set_attr

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  return keys
end

-- names of a slot's arguments: a Variable, a name, or a list of them
local function slot_names(args, op_type, slot, kind, prog)
  if is_variable(args) or type(args) == "string" then args = { args } end
  if type(args) ~= "table" then
    raise(string.format("op '%s': %s '%s' must be a Variable, a name or a list of them, got %s",
      op_type, kind, slot, describe(args)))
  end
  local names = {}
  for i = 1, table.maxn(args) do
    local a = args[i]
    if is_variable(a) then
      if a.block.program ~= prog then
        raise(string.format("op '%s': %s '%s' variable '%s' belongs to another program",
          op_type, kind, slot, rawget(a, "name")))
      end
      names[#names + 1] = rawget(a, "name")
    elseif type(a) == "string" then
      names[#names + 1] = a
    else
      raise(string.format("op '%s': %s '%s' item %d must be a Variable or a name, got %s",
        op_type, kind, slot, i, describe(a)))
    end
  end
  return names
end

local function fill_op(op, spec, prog)
  local op_type = spec.type
  for _, kind in ipairs({ "inputs", "outputs" }) do
    local slots = spec[kind]
    if slots ~= nil then
      if type(slots) ~= "table" or is_variable(slots) then
        raise(string.format("op '%s': '%s' must be a table {Slot = vars}, got %s", op_type, kind, describe(slots)))
      end
      for _, slot in ipairs(sorted_keys(slots)) do
        if type(slot) ~= "string" then
          raise(string.format("op '%s': %s slot names must be strings, got %s", op_type, kind, describe(slot)))
        end
        local names = slot_names(slots[slot], op_type, slot, kind == "inputs" and "input" or "output", prog)
        local arr, n = lib.cstrings(names)
        local setter = kind == "inputs" and C.oar_op_desc_set_input or C.oar_op_desc_set_output
        if setter(op, slot, arr, n) ~= 0 then raise(string.format("op '%s': %s", op_type, lib.last_error())) end
      end
    end
  end
  local attrs = spec.attrs or {}
  if type(attrs) ~= "table" then
    raise(string.format("op '%s': 'attrs' must be a table, got %s", op_type, describe(attrs)))
  end
  for _, name in ipairs(sorted_keys(attrs)) do
    if type(name) ~= "string" then raise(string.format("op '%s': attr names must be strings", op_type)) end
    set_attr(op, op_type, name, attrs[name], prog)
  end
  if attrs.op_role == nil then set_attr(op, op_type, "op_role", prog._role, prog) end
  if attrs.op_role_var == nil and prog._role_vars then
    set_attr(op, op_type, "op_role_var", prog._role_vars, prog)
  end
  if attrs.op_namescope == nil and M._namescope then
    set_attr(op, op_type, "op_namescope", M._namescope, prog)
  end
  if attrs.op_callstack == nil then
    local cs = M.callstack(4)
    if #cs > 0 then set_attr(op, op_type, "op_callstack", cs, prog) end
  end
end

-- Builds, validates and inserts an op at `pos` (-1 appends); the op's desc is
-- freed on any failure so nothing leaks and the block stays unchanged.
function Block:_insert_op(pos, spec, who)
  check_block(self, who)
  if type(spec) ~= "table" then raise(who .. ": expected {type=, inputs=, outputs=, attrs=}, got " .. describe(spec)) end
  argcheck.keys(who, spec, "type inputs outputs attrs")
  local op_type = spec.type
  if type(op_type) ~= "string" or op_type == "" then
    raise(who .. ": 'type' must be an op type name, got " .. describe(op_type))
  end
  if not C.oar_op_is_registered(op_type) then
    raise(string.format("%s: unknown op type '%s'", who, op_type))
  end
  local out = ffi.new("oar_op_desc_t *[1]")
  if C.oar_op_desc_new(op_type, out) ~= 0 then raise(who .. ": " .. lib.last_error()) end
  local op = out[0]
  local ok, err = pcall(fill_op, op, spec, self.program)
  if not ok then
    C.oar_op_desc_free(op)
    error(err, 0)
  end
  if C.oar_block_insert_op(self:_ptr(), pos, op) ~= 0 then
    local msg = lib.last_error()
    C.oar_op_desc_free(op)
    raise(msg)
  end
  return wrap_op(self, op)
end

--- Appends an operator to the block. Attribute values are coerced to the
-- types the op declares; undeclared ones are inferred from the Lua value.
-- The op is checked (registered type, known slots) before it is inserted;
-- on an error the block is unchanged.
-- @tparam table spec keyword arguments:
-- @tparam string spec.type the op type, e.g. "relu"
-- @tparam[opt] table spec.inputs slot -> Variable, name, or list of them: `{X = {x}}`
-- @tparam[opt] table spec.outputs slot -> variables, like inputs
-- @tparam[opt] table spec.attrs attribute name -> value (numbers, strings, booleans, lists, Blocks)
-- @treturn Operator the new op
-- @raise on an unknown key or op type, or a value that does not fit the attribute
-- @usage
-- local b = main:global_block()
-- local y = b:create_var{name = "y", shape = {-1, 4}}
-- b:append_op{type = "scale", inputs = {X = {x}}, outputs = {Out = {y}}, attrs = {scale = 2.0}}
function Block:append_op(spec) return self:_insert_op(-1, spec, "Block:append_op") end
--- Inserts an operator at the front of the block; arguments as `Block:append_op`.
-- @tparam table spec `{type=, inputs=, outputs=, attrs=}`
-- @treturn Operator the new op
-- @usage b:prepend_op{type = "fill_constant", outputs = {Out = {c}}, attrs = {shape = {1}, value = 0.0, dtype = 5}}
function Block:prepend_op(spec) return self:_insert_op(0, spec, "Block:prepend_op") end
Block._prepend_op = Block.prepend_op

function Block:_remove_op(i)
  local ptr = type(i) == "number" and i >= 0 and i < self:num_ops() and C.oar_block_op_at(self:_ptr(), i) or nil
  if C.oar_block_remove_op(self:_ptr(), i) ~= 0 then raise("Block:_remove_op: " .. lib.last_error()) end
  for k, op in pairs(self._ops) do
    if rawget(op, "handle") == ptr then   -- freed: every later use of the Operator is refused
      op._removed = true
      op.handle = nil
    end
    self._ops[k] = nil
  end
end

function Block:_remove_var(name)
  check_name(name, "Block:_remove_var")
  if C.oar_block_remove_var(self:_ptr(), name) ~= 0 then raise("Block:_remove_var: " .. lib.last_error()) end
  self._vars[name] = nil
end


-- shared with the later parts
I.A = A
I.attr_type_names = attr_type_names
I.is_int = is_int
I.set_attr = set_attr
