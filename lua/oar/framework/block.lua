--- oar.framework.block: Block (variables, parameters, op lists).
-- @module oar.framework.block
local I = require("oar.framework.core")
local argcheck = require("oar.argcheck")
local Block = I.Block
local C = I.C
local Operator = I.Operator
local ParameterMT = I.ParameterMT
local VariableMT = I.VariableMT
local describe = I.describe
local dims_array = I.dims_array
local dtypes = I.dtypes
local ffi = I.ffi
local is_block = I.is_block
local is_parameter = I.is_parameter
local lib = I.lib
local raise = I.raise
local shape_text = I.shape_text
local unique_name = I.unique_name
local var_type_enum = I.var_type_enum
local var_types = I.var_types

-- ==== Block ===================================================================

--- A block of a program: its variables and its list of operators (Fluid's
-- `Block`). Block 0 is the global block; control-flow layers add sub-blocks
-- whose variables may read their ancestors'.
-- @type Block
-- @tfield Program program the program it belongs to
-- @tfield int idx its index in the program
-- @tfield int parent_idx its parent's index (-1 for the global block)
-- @tfield int forward_block_idx for a gradient block, the forward block it differentiates (-1 otherwise)
-- @usage
-- local b = main:global_block()
-- print(b.idx, b:num_ops(), #b:vars())
Block.__index = function(b, k)
  if k == "forward_block_idx" then return C.oar_block_forward_block_idx(b:_ptr()) end
  return Block[k]
end

function Block:_ptr()
  local p = C.oar_program_block(self.program.handle, self.idx)
  if p == nil then raise("block " .. self.idx .. " no longer exists") end
  return p
end

function Block:_set_forward_block_idx(idx)
  if C.oar_block_set_forward_block_idx(self:_ptr(), idx) ~= 0 then
    raise("Block:_set_forward_block_idx: " .. lib.last_error())
  end
end

--- The parent block, or nil for the global block.
-- @treturn Block|nil
-- @usage local outer = sub:parent()
function Block:parent()
  if self.parent_idx < 0 then return nil end
  return self.program:block(self.parent_idx)
end

function Block:__tostring()
  return string.format("Block(idx=%d, parent_idx=%d, %d vars, %d ops)", self.idx, self.parent_idx,
    C.oar_block_num_vars(self:_ptr()), C.oar_block_num_ops(self:_ptr()))
end

local function check_block(b, who)
  if not is_block(b) then raise(who .. ": call it with ':' on a Block") end
end

local function check_name(name, who)
  if type(name) ~= "string" or name == "" then
    raise(string.format("%s: 'name' must be a non-empty string, got %s", who, describe(name)))
  end
end

local function wrap_var(block, name)
  local v = setmetatable({ block = block, name = name }, VariableMT)
  block._vars[name] = v
  return v
end

-- the Variable named `name` of this block only, or nil
function Block:_find_var_local(name)
  local v = self._vars[name]
  if v then
    if C.oar_block_find_var(self:_ptr(), name) ~= nil then return v end
    self._vars[name] = nil   -- removed in C meanwhile
    return nil
  end
  if C.oar_block_find_var(self:_ptr(), name) == nil then return nil end
  return wrap_var(self, name)
end

--- The Variable `name` of this block or its ancestors.
-- @tparam string name
-- @treturn Variable
-- @raise when no such variable exists
-- @usage local w = main:global_block():var("fc_0.w_0")
function Block:var(name)
  check_block(self, "Block:var")
  check_name(name, "Block:var")
  local b = self
  while b do
    local v = b:_find_var_local(name)
    if v then return v end
    b = b:parent()
  end
  raise(string.format("Block:var: no variable '%s' in block %d%s", name, self.idx,
    self.parent_idx >= 0 and " or its ancestors" or ""))
end
Block._var_recursive = Block.var

--- The Variable `name` of this block or its ancestors, or nil when absent.
-- @tparam string name
-- @treturn Variable|nil
-- @usage if block:find_var_recursive("x") then print("x is visible here") end
function Block:find_var_recursive(name)
  check_name(name, "Block:find_var_recursive")
  local b = self
  while b do
    local v = b:_find_var_local(name)
    if v then return v end
    b = b:parent()
  end
  return nil
end

--- Whether this block itself declares `name` (Fluid's `has_var`: ancestors
-- are not searched).
-- @tparam string name
-- @treturn bool
-- @usage print(main:global_block():has_var("x"))
function Block:has_var(name)
  check_block(self, "Block:has_var")
  check_name(name, "Block:has_var")
  return C.oar_block_find_var(self:_ptr(), name) ~= nil
end

--- Whether `name` is declared in this block or one of its ancestors.
-- @tparam string name
-- @treturn bool
-- @usage print(sub:has_var_recursive("x"))
function Block:has_var_recursive(name)
  return self:find_var_recursive(name) ~= nil
end

--- The variables this block declares, in declaration order.
-- @treturn {Variable,...}
-- @usage for _, v in ipairs(main:global_block():vars()) do print(v.name, v.dtype) end
function Block:vars()
  check_block(self, "Block:vars")
  local ptr = self:_ptr()
  local out = {}
  for i = 0, C.oar_block_num_vars(ptr) - 1 do
    local name = ffi.string(C.oar_var_desc_name(C.oar_block_var_at(ptr, i)))
    out[#out + 1] = self._vars[name] or wrap_var(self, name)
  end
  return out
end

--- The parameters this block declares, in declaration order.
-- @treturn {Parameter,...}
-- @usage print(#main:global_block():all_parameters())
function Block:all_parameters()
  local out = {}
  for _, v in ipairs(self:vars()) do
    if is_parameter(v) then out[#out + 1] = v end
  end
  return out
end

local function wrap_op(block, ptr)
  local key = tostring(tonumber(ffi.cast("uintptr_t", ptr)))
  local op = block._ops[key]
  if op and op.handle == ptr then return op end
  op = setmetatable({ block = block, handle = ptr }, Operator)
  block._ops[key] = op
  return op
end

--- The block's operators, in execution order.
-- @treturn {Operator,...}
-- @usage for _, op in ipairs(main:global_block():ops()) do print(op.type) end
function Block:ops()
  check_block(self, "Block:ops")
  local ptr = self:_ptr()
  local out = {}
  for i = 0, C.oar_block_num_ops(ptr) - 1 do out[#out + 1] = wrap_op(self, C.oar_block_op_at(ptr, i)) end
  return out
end

--- The number of operators in the block.
-- @treturn int
-- @usage print(main:global_block():num_ops())
function Block:num_ops() return C.oar_block_num_ops(self:_ptr()) end
--- The operator at 0-based position `i` (like the desc).
-- @tparam int i in 0..num_ops()-1
-- @treturn Operator
-- @raise when `i` is out of range
-- @usage print(main:global_block():op(0).type)
function Block:op(i) -- 0-based like the desc
  local n = self:num_ops()
  if type(i) ~= "number" or i < 0 or i >= n then
    raise(string.format("Block:op: index %s outside 0..%d", tostring(i), n - 1))
  end
  return wrap_op(self, C.oar_block_op_at(self:_ptr(), i))
end

local function same_shape(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do
    if a[i] ~= b[i] and a[i] ~= -1 and b[i] ~= -1 then return false end
  end
  return true
end

--- Declares a variable in this block. An existing variable of this block
-- with the same name is returned instead (after checking that shape and
-- dtype agree).
-- @tparam table spec keyword arguments:
-- @tparam[opt] string spec.name default: a generated unique name
-- @tparam[opt] {int,...} spec.shape dims, -1 for unknown
-- @tparam[opt="float32"] string spec.dtype
-- @tparam[opt=0] int spec.lod_level
-- @tparam[opt=false] bool spec.persistable kept across runs in the scope
-- @tparam[opt=false] bool spec.stop_gradient
-- @tparam[opt="lod_tensor"] string spec.type "lod_tensor", "lod_tensor_array", "selected_rows", "step_scopes", ...
-- @tparam[opt=false] bool spec.need_check_feed the executor checks feeds against it
-- @treturn Variable
-- @raise on an unknown key, a bad shape or dtype, or a clash with an existing variable
-- @usage local tmp = main:global_block():create_var{name = "tmp", shape = {-1, 4}, dtype = "float32"}
function Block:create_var(spec)
  check_block(self, "Block:create_var")
  spec = spec or {}
  if type(spec) ~= "table" then raise("Block:create_var: expected a table of fields, got " .. describe(spec)) end
  local who = "Block:create_var"
  argcheck.keys(who, spec, "name shape dtype lod_level persistable stop_gradient type need_check_feed")
  local name = spec.name
  if name == nil then name = unique_name.generate("_generated_var") end
  check_name(name, who)
  local dtype = spec.dtype ~= nil and dtypes.name(spec.dtype)
  if spec.dtype ~= nil and not dtype then
    raise(string.format("%s: unknown dtype %s for '%s'", who, tostring(spec.dtype), name))
  end
  local existing = self:_find_var_local(name)
  if existing then
    if spec.shape ~= nil then
      dims_array(spec.shape, who, -1)
      local have = existing.shape
      if #have > 0 and not same_shape(have, spec.shape) then
        raise(string.format("%s: variable '%s' exists with shape %s, asked for %s", who, name,
          shape_text(have), shape_text(spec.shape)))
      end
    end
    if dtype and existing.dtype and existing.dtype ~= dtype then
      raise(string.format("%s: variable '%s' exists with dtype %s, asked for %s", who, name,
        existing.dtype, dtype))
    end
    if spec.persistable then existing.persistable = true end
    if spec.stop_gradient ~= nil then existing.stop_gradient = spec.stop_gradient end
    return existing
  end
  local vtype = var_type_enum(spec.type, who)
  local dims, ndim
  if spec.shape ~= nil then dims, ndim = dims_array(spec.shape, who, -1) end
  if spec.lod_level ~= nil and (type(spec.lod_level) ~= "number" or spec.lod_level < 0 or spec.lod_level % 1 ~= 0) then
    raise(string.format("%s: 'lod_level' must be a non-negative integer, got %s", who, tostring(spec.lod_level)))
  end
  local out = ffi.new("oar_var_desc_t *[1]")
  local ptr = self:_ptr()
  if C.oar_block_var_new(ptr, name, out) ~= 0 then raise(who .. ": " .. lib.last_error()) end
  local d = out[0]
  local function ok(rc) if rc ~= 0 then C.oar_block_remove_var(ptr, name); raise(who .. ": " .. lib.last_error()) end end
  ok(C.oar_var_desc_set_type(d, vtype))
  if vtype == var_types.lod_tensor or vtype == var_types.lod_tensor_array or vtype == var_types.selected_rows then
    ok(C.oar_var_desc_set_dtype(d, dtypes.enum(dtype or "float32")))
  elseif dtype then
    ok(C.oar_var_desc_set_dtype(d, dtypes.enum(dtype)))
  end
  if dims then ok(C.oar_var_desc_set_shape(d, dims, ndim)) end
  if spec.lod_level then ok(C.oar_var_desc_set_lod_level(d, spec.lod_level)) end
  if spec.persistable then ok(C.oar_var_desc_set_persistable(d, true)) end
  if spec.stop_gradient then ok(C.oar_var_desc_set_stop_gradient(d, true)) end
  if spec.need_check_feed then ok(C.oar_var_desc_set_need_check_feed(d, true)) end
  return wrap_var(self, name)
end

local param_fields = { "trainable", "regularizer", "optimize_attr", "initializer", "gradient_clip",
                       "do_model_average" }

--- Declares a persistable Parameter in the program's global block. The
-- initializer appends its op to the global block of *this* block's program
-- (the startup program, for layers).
-- @tparam table spec keyword arguments:
-- @tparam[opt] string spec.name default: a generated unique name
-- @tparam {int,...} spec.shape non-empty, known dims
-- @tparam[opt="float32"] string spec.dtype
-- @tparam[opt] Initializer spec.initializer appended now when given
-- @tparam[opt=true] bool spec.trainable
-- @tparam[opt] Regularizer spec.regularizer
-- @tparam[opt=1] number spec.learning_rate scales the optimizer's rate for it
-- @tparam[opt] GradientClip spec.gradient_clip
-- @tparam[opt] bool spec.do_model_average
-- @tparam[opt] table spec.optimize_attr `{learning_rate=}` (overrides learning_rate)
-- @tparam[opt] int spec.lod_level
-- @treturn Parameter
-- @usage
-- local w = startup:global_block():create_parameter{name = "w", shape = {4, 2},
--   initializer = oar.initializer.Constant{value = 0.5}}
function Block:create_parameter(spec)
  check_block(self, "Block:create_parameter")
  local who = "Block:create_parameter"
  if type(spec) ~= "table" then raise(who .. ": expected a table of fields, got " .. describe(spec)) end
  argcheck.keys(who, spec, "name shape dtype initializer trainable regularizer learning_rate gradient_clip "
    .. "do_model_average optimize_attr lod_level")
  local name = spec.name
  if name == nil then name = unique_name.generate("parameter") end
  check_name(name, who)
  dims_array(spec.shape, who, 1)
  if #spec.shape == 0 then raise(who .. ": parameter '" .. name .. "' needs a non-empty 'shape'") end
  local gb = self.program:global_block()
  local trainable = spec.trainable
  if trainable == nil then trainable = true end
  local v = gb:create_var{
    name = name, shape = spec.shape, dtype = spec.dtype or "float32", persistable = true,
    stop_gradient = not trainable, lod_level = spec.lod_level,
  }
  setmetatable(v, ParameterMT)
  rawset(v, "trainable", trainable)
  rawset(v, "regularizer", spec.regularizer)
  rawset(v, "optimize_attr", spec.optimize_attr or { learning_rate = spec.learning_rate or 1.0 })
  rawset(v, "gradient_clip", spec.gradient_clip)
  rawset(v, "do_model_average", spec.do_model_average)
  if spec.initializer ~= nil then
    local init = spec.initializer
    if type(init) ~= "table" and type(init) ~= "function" then
      raise(who .. ": 'initializer' must be an initializer, got " .. describe(init))
    end
    rawset(v, "initializer", init)
    init(v, gb)
  end
  return v
end


-- shared with the later parts
I.check_block = check_block
I.check_name = check_name
I.wrap_op = wrap_op
