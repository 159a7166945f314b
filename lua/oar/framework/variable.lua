--- oar.framework.variable: Variable and Parameter fields over the VarDesc.
-- @module oar.framework.variable
local I = require("oar.framework.core")
local C = I.C
local ParameterMT = I.ParameterMT
local Variable = I.Variable
local VariableMT = I.VariableMT
local describe = I.describe
local dims_array = I.dims_array
local dtypes = I.dtypes
local is_parameter = I.is_parameter
local lib = I.lib
local raise = I.raise
local shape_text = I.shape_text
local var_type_enum = I.var_type_enum
local var_type_names = I.var_type_names
local is_int = I.is_int

-- ==== Variable =================================================================

--- A variable of a block (Fluid's `Variable`), a view on its VarDesc. Layers
-- return Variables; arithmetic operators build ops (`a + b`, `2 * x`, `-x`:
-- see oar.layers.math). Reading or setting a field reads or writes the desc.
-- A Parameter is a persistable Variable made by `Block:create_parameter`,
-- with the extra fields below.
-- @type Variable
-- @tfield string name unique in its block (read only)
-- @tfield Block block the declaring block (read only)
-- @tfield {int,...} shape dims, -1 for unknown (settable)
-- @tfield string dtype "float32", "int64", ... (settable)
-- @tfield int lod_level levels of sequence structure (settable)
-- @tfield bool persistable kept in the scope across runs (settable)
-- @tfield bool stop_gradient no gradient flows through it (settable)
-- @tfield bool need_check_feed the executor checks feeds against it (settable)
-- @tfield string type "lod_tensor", "lod_tensor_array", "selected_rows", ... (settable)
-- @tfield bool trainable Parameter only: updated by optimizers
-- @tfield Regularizer regularizer Parameter only: its weight decay, or nil
-- @tfield table optimize_attr Parameter only: `{learning_rate = scale}`
-- @tfield Initializer initializer Parameter only: how it was initialized
-- @tfield GradientClip gradient_clip Parameter only: its clipping, or nil
-- @usage
-- local x = layers.data{name = "x", shape = {13}}
-- print(x.name, x.dtype, table.concat(x.shape, "x"))   -- x float32 -1x13
-- x.stop_gradient = true
function Variable:_desc()
  local d = C.oar_block_find_var(self.block:_ptr(), rawget(self, "name"))
  if d == nil then
    raise(string.format("variable '%s' no longer exists in block %d", rawget(self, "name"), self.block.idx))
  end
  return d
end

local getters = {
  shape = function(v)
    local d = v:_desc()
    local n = C.oar_var_desc_ndim(d)
    local s = {}
    if n <= 0 then return s end
    local dims = C.oar_var_desc_dims(d)
    for i = 0, n - 1 do s[i + 1] = tonumber(dims[i]) end
    return s
  end,
  dtype = function(v) return dtypes.name(C.oar_var_desc_dtype(v:_desc())) end,
  lod_level = function(v) return C.oar_var_desc_lod_level(v:_desc()) end,
  persistable = function(v) return C.oar_var_desc_persistable(v:_desc()) == true end,
  stop_gradient = function(v) return C.oar_var_desc_stop_gradient(v:_desc()) == true end,
  need_check_feed = function(v) return C.oar_var_desc_need_check_feed(v:_desc()) == true end,
  type = function(v)
    local t = C.oar_var_desc_type(v:_desc())
    return var_type_names[t] or t
  end,
  desc = function(v) return v:_desc() end,
}

local function setter_rc(v, rc, field)
  if rc ~= 0 then raise(string.format("setting %s of '%s': %s", field, rawget(v, "name"), lib.last_error())) end
end

local setters = {
  stop_gradient = function(v, x)
    if type(x) ~= "boolean" then raise("Variable.stop_gradient must be a boolean, got " .. describe(x)) end
    setter_rc(v, C.oar_var_desc_set_stop_gradient(v:_desc(), x), "stop_gradient")
  end,
  persistable = function(v, x)
    if type(x) ~= "boolean" then raise("Variable.persistable must be a boolean, got " .. describe(x)) end
    setter_rc(v, C.oar_var_desc_set_persistable(v:_desc(), x), "persistable")
  end,
  need_check_feed = function(v, x)
    if type(x) ~= "boolean" then raise("Variable.need_check_feed must be a boolean, got " .. describe(x)) end
    setter_rc(v, C.oar_var_desc_set_need_check_feed(v:_desc(), x), "need_check_feed")
  end,
  lod_level = function(v, x)
    if not is_int(x) or x < 0 then raise("Variable.lod_level must be a non-negative integer, got " .. describe(x)) end
    setter_rc(v, C.oar_var_desc_set_lod_level(v:_desc(), x), "lod_level")
  end,
  shape = function(v, x)
    local dims, n = dims_array(x, "Variable.shape", -1)
    setter_rc(v, C.oar_var_desc_set_shape(v:_desc(), dims, n), "shape")
  end,
  dtype = function(v, x)
    setter_rc(v, C.oar_var_desc_set_dtype(v:_desc(), dtypes.enum(x, "Variable.dtype")), "dtype")
  end,
  type = function(v, x)
    setter_rc(v, C.oar_var_desc_set_type(v:_desc(), var_type_enum(x, "Variable.type")), "type")
  end,
  name = function() raise("Variable.name cannot be changed") end,
  block = function() raise("Variable.block cannot be changed") end,
}

local function var_index(v, k)
  local g = getters[k]
  if g then return g(v) end
  return Variable[k]
end

local function var_newindex(v, k, x)
  local s = setters[k]
  if s then return s(v, x) end
  rawset(v, k, x)
end

for _, mt in ipairs({ VariableMT, ParameterMT }) do
  mt.__index = var_index
  mt.__newindex = var_newindex
end

--- The name of this variable's gradient ("name@GRAD").
-- @treturn string
-- @usage local g = main:global_block():var(w:grad_name())
function Variable:grad_name() return rawget(self, "name") .. "@GRAD" end

--- The variable as one line of text (also `tostring(v)`):
-- "Variable(name=x, shape=[-1, 13], dtype=float32)".
-- @treturn string
-- @usage print(x:to_string())
function Variable:to_string()
  local kind = is_parameter(self) and "Parameter" or "Variable"
  local s = string.format("%s(name=%s, shape=%s, dtype=%s", kind, rawget(self, "name"),
    shape_text(self.shape), tostring(self.dtype))
  if self.lod_level > 0 then s = s .. ", lod_level=" .. self.lod_level end
  if self.persistable then s = s .. ", persistable" end
  if self.stop_gradient then s = s .. ", stop_gradient" end
  if is_parameter(self) and not rawget(self, "trainable") then s = s .. ", not trainable" end
  return s .. ")"
end
VariableMT.__tostring = Variable.to_string
ParameterMT.__tostring = Variable.to_string

-- The same variable declared in `block` (another program's global block, say).
function Variable:_clone_into(block)
  return block:create_var{
    name = rawget(self, "name"), shape = self.shape, dtype = self.dtype, type = self.type,
    lod_level = self.lod_level, persistable = self.persistable,
  }
end

