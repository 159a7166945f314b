--- Scopes: where the values of variables live (Fluid's Scope).
--
-- A scope maps names to variables and has a parent and kids; a lookup
-- searches the scope, then its parents. The executor runs a program against
-- a scope (the global scope unless `exe:run` is given `scope=`): the startup
-- program creates the parameters there, and the main program reads and
-- updates them. Scopes are held by C and reference counted, so Lua may drop
-- handles in any order.
--
-- `oar.Scope()`, `oar.global_scope()` and `oar.scope_guard()` come from
-- this module.
-- @module oar.scope
-- @usage
-- local scope = oar.Scope()
-- exe:run(oar.default_startup_program(), {scope = scope})
-- local w = scope:find_var("fc_0.w_0"):get_tensor()
local ffi = require("ffi")
local lib = require("oar.lib")
local raise = require("oar.framework").raise
local tensor = require("oar.tensor")
local C = lib.C

local M = {}

local Scope = {}
Scope.__index = Scope
M.Scope = Scope

local ScopeVar = {}
ScopeVar.__index = ScopeVar
M.ScopeVar = ScopeVar

local function is_scope(x) return getmetatable(x) == Scope end

--- Whether `x` is an oar Scope.
-- @param x any value
-- @treturn boolean
-- @usage assert(oar.scope.is_scope(oar.global_scope()))
function M.is_scope(x) return is_scope(x) end

-- Wraps an oar_scope_t* that we hold one reference to.
local function wrap(ptr)
  if type(ptr) ~= "cdata" or not ffi.istype("oar_scope_t *", ptr) or ptr == nil then
    raise("scope.wrap: expected a non-NULL oar_scope_t* cdata, got " .. tostring(ptr))
  end
  return setmetatable({ handle = ffi.gc(ptr, C.oar_scope_free) }, Scope)
end

--- Wraps an `oar_scope_t *` from the C API that the caller holds one
-- reference to (handed to the garbage collector). For code that calls
-- liboar through the FFI.
-- @param ptr a non-NULL `oar_scope_t *` cdata
-- @treturn Scope
-- @usage local scope = oar.scope.wrap(ptr)
function M.wrap(ptr) return wrap(ptr) end

local function check_self(s, who)
  if not is_scope(s) then raise("Scope:" .. who .. ": call it with ':' on a Scope") end
end

local function check_name(name, who)
  if type(name) ~= "string" or name == "" then
    raise("Scope:" .. who .. ": 'name' must be a non-empty string, got " .. tostring(name))
  end
end

--- A new root scope (`oar.Scope()`).
-- @treturn Scope
-- @usage local scope = oar.Scope()
function M.new()
  local out = ffi.new("oar_scope_t *[1]")
  if C.oar_scope_new(out) ~= 0 then raise("Scope: " .. lib.last_error()) end
  return wrap(out[0])
end

-- A variable of `scope`; holds the scope so the variable outlives no owner.
-- It also remembers the scope that holds it and its name: Scope:erase frees
-- a variable, and every use of the handle checks that it is still there.
local function wrap_var(scope, ptr)
  local owner = scope.handle
  local name = ffi.string(C.oar_variable_name(ptr))
  while owner ~= nil and C.oar_scope_find_local(owner, name) ~= ptr do owner = C.oar_scope_parent(owner) end
  return setmetatable({ scope = scope, handle = ptr, _owner = owner, _name = name }, ScopeVar)
end

--- Methods of a Scope.
-- @type Scope

--- The variable `name` of this scope, created (empty) when absent here.
-- Parents are not searched: use `find_var` to read.
-- @tparam string name
-- @treturn ScopeVar
-- @usage oar.Scope():var("x"):set_tensor(oar.Tensor({1, 2, 3}))
function Scope:var(name)
  check_self(self, "var")
  check_name(name, "var")
  local out = ffi.new("oar_variable_t *[1]")
  if C.oar_scope_var(self.handle, name, out) ~= 0 then
    raise("Scope:var: " .. lib.last_error())
  end
  return wrap_var(self, out[0])
end

--- The variable `name`, searched in this scope and then its parents.
-- @tparam string name
-- @treturn ?ScopeVar the variable, or nil when no scope in the chain has it
-- @usage local v = oar.global_scope():find_var("fc_0.w_0")
function Scope:find_var(name)
  check_self(self, "find_var")
  check_name(name, "find_var")
  local v = C.oar_scope_find_var(self.handle, name)
  if v == nil then return nil end
  return wrap_var(self, v)
end

--- The variable `name` of this scope only (parents are not searched).
-- @tparam string name
-- @treturn ?ScopeVar the variable, or nil
-- @usage local v = scope:find_local_var("x")
function Scope:find_local_var(name)
  check_self(self, "find_local_var")
  check_name(name, "find_local_var")
  local v = C.oar_scope_find_local(self.handle, name)
  if v == nil then return nil end
  return wrap_var(self, v)
end

--- Removes the variable `name` from this scope.
-- @tparam string name
-- @usage scope:erase("x")
function Scope:erase(name)
  check_self(self, "erase")
  check_name(name, "erase")
  if C.oar_scope_erase(self.handle, name) ~= 0 then raise("Scope:erase: " .. lib.last_error()) end
end

--- A new kid of this scope (lookups in it fall back to this scope).
-- @treturn Scope
-- @usage local kid = scope:new_scope()
function Scope:new_scope()
  check_self(self, "new_scope")
  local out = ffi.new("oar_scope_t *[1]")
  if C.oar_scope_new_scope(self.handle, out) ~= 0 then
    raise("Scope:new_scope: " .. lib.last_error())
  end
  return wrap(out[0])
end

--- Forgets every kid of this scope (a kid still held in Lua stays usable).
-- @usage scope:drop_kids()
function Scope:drop_kids()
  check_self(self, "drop_kids")
  C.oar_scope_drop_kids(self.handle)
end

--- The number of kids.
-- @treturn int
-- @usage print(scope:num_kids())
function Scope:num_kids()
  check_self(self, "num_kids")
  return C.oar_scope_num_kids(self.handle)
end

--- The parent scope.
-- @treturn ?Scope the parent, or nil for a root scope
-- @usage assert(scope:new_scope():parent() ~= nil)
function Scope:parent()
  check_self(self, "parent")
  local p = C.oar_scope_parent(self.handle)
  if p == nil then return nil end
  return wrap(C.oar_scope_retain(p))
end

--- The names of this scope's own variables, in creation order.
-- @treturn {string,...}
-- @usage for _, n in ipairs(scope:local_var_names()) do print(n) end
function Scope:local_var_names()
  check_self(self, "local_var_names")
  local names = {}
  for i = 0, C.oar_scope_num_vars(self.handle) - 1 do
    local s = C.oar_scope_var_name(self.handle, i)
    if s ~= nil then names[#names + 1] = ffi.string(s) end
  end
  return names
end

function Scope:__tostring()
  check_self(self, "__tostring")
  return string.format("Scope(%d vars, %d kids)", C.oar_scope_num_vars(self.handle),
    C.oar_scope_num_kids(self.handle))
end

--- Methods of a scope variable (what `Scope:var` and `Scope:find_var` return).
-- @type ScopeVar
local kind_names = {
  [0] = "empty", [7] = "lod_tensor", [8] = "selected_rows", [9] = "feed_minibatch",
  [10] = "fetch_list", [11] = "step_scopes", [12] = "lod_rank_table",
  [13] = "lod_tensor_array", [17] = "raw",
}

local function check_var(v, who)
  if getmetatable(v) ~= ScopeVar then raise(who .. ": call it with ':' on a scope variable") end
  local owner = rawget(v, "_owner")
  if owner == nil or C.oar_scope_find_local(owner, v._name) ~= v.handle then
    raise(string.format("%s: scope variable '%s' was erased from its scope (Scope:erase); get it again with "
      .. "scope:var or scope:find_var", who, tostring(v._name)))
  end
end

--- The variable's name.
-- @treturn string
-- @usage print(scope:var("x"):name())   --> x
function ScopeVar:name()
  check_var(self, "ScopeVar:name")
  return ffi.string(C.oar_variable_name(self.handle))
end

--- What the variable holds.
-- @treturn string `"lod_tensor"`, `"lod_tensor_array"`, `"selected_rows"`,
-- ..., or `"empty"` before anything is stored
-- @usage print(scope:var("x"):type())   --> empty
function ScopeVar:type()
  check_var(self, "ScopeVar:type")
  local t = C.oar_variable_type(self.handle)
  return kind_names[t] or tostring(t)
end

--- Whether the variable holds something.
-- @treturn boolean
-- @usage if not v:is_initialized() then print("run the startup program first") end
function ScopeVar:is_initialized()
  check_var(self, "ScopeVar:is_initialized")
  return C.oar_variable_type(self.handle) ~= 0
end

--- The Tensor the variable holds; it shares its data (a write through
-- `t:set` or `t:data()` changes the variable). An empty variable gets an
-- empty tensor.
-- @treturn Tensor
-- @usage local w = oar.global_scope():find_var("fc_0.w_0"):get_tensor()
function ScopeVar:get_tensor()
  check_var(self, "get_tensor")
  local out = ffi.new("oar_tensor_t *[1]")
  if C.oar_variable_get_tensor(self.handle, out) ~= 0 then
    raise("get_tensor: " .. lib.last_error())
  end
  return tensor.wrap(out[0])
end

--- Stores a Tensor in the variable (shared, not copied).
-- @tparam Tensor|table t a Tensor, or a nested table of numbers converted with `oar.Tensor(t, dtype)`
-- @tparam[opt="float32"] string dtype the dtype when `t` is a table
-- @usage scope:var("x"):set_tensor({{1, 2}, {3, 4}})
function ScopeVar:set_tensor(t, dtype)
  check_var(self, "set_tensor")
  if type(t) == "table" and not tensor.is_tensor(t) then t = tensor(t, dtype) end
  if not tensor.is_tensor(t) then
    raise("set_tensor: expected an oar Tensor, got " .. type(t))
  end
  if C.oar_variable_set_tensor(self.handle, t.handle) ~= 0 then
    raise("set_tensor: " .. lib.last_error())
  end
end

--- The length of a tensor array variable (`layers.create_array`).
-- @treturn int
-- @usage print(scope:find_var("array_0"):array_size())
function ScopeVar:array_size()
  check_var(self, "array_size")
  return C.oar_variable_array_size(self.handle)
end

--- One item of a tensor array variable.
-- @tparam int i 1-based position
-- @treturn Tensor
-- @usage local first = scope:find_var("array_0"):array_get(1)
function ScopeVar:array_get(i)
  check_var(self, "array_get")
  if type(i) ~= "number" or i % 1 ~= 0 then raise("array_get: index must be an integer") end
  local out = ffi.new("oar_tensor_t *[1]")
  if C.oar_variable_array_get(self.handle, i - 1, out) ~= 0 then
    raise("array_get: " .. lib.last_error())
  end
  return tensor.wrap(out[0])
end

function ScopeVar:__tostring()
  local ok = pcall(check_var, self, "tostring")
  if not ok then return "ScopeVariable(" .. tostring(rawget(self, "_name")) .. ", erased)" end
  return "ScopeVariable(" .. self:name() .. ", " .. self:type() .. ")"
end

--- The global scope.
-- @section global

local global
local current

--- The current global scope: the one `scope_guard` set, or the process's
-- global scope (`oar.global_scope()`).
-- @treturn Scope
-- @usage local w = oar.global_scope():find_var("fc_0.w_0")
function M.global_scope()
  if not global then global = M.new() end
  return current or global
end

--- Runs `fn()` with `scope` as the global scope (`oar.scope_guard`); the
-- previous global scope comes back afterwards, also when `fn` raises.
-- @tparam Scope scope
-- @tparam function fn
-- @return what `fn` returns
-- @usage
-- oar.scope_guard(oar.Scope(), function()
--   exe:run(oar.default_startup_program())   -- runs in the new scope
-- end)
function M.scope_guard(scope, fn)
  if not is_scope(scope) then
    raise("scope_guard: 'scope' must be an oar Scope, got " .. type(scope))
  end
  if type(fn) ~= "function" then
    raise("scope_guard: 'fn' must be a function, got " .. type(fn))
  end
  local old = current
  current = scope
  local res = { pcall(fn) }
  current = old
  if not res[1] then error(res[2], 0) end
  return unpack(res, 2, table.maxn(res))
end

setmetatable(M, { __call = function() return M.new() end })

require("oar.framework")._guard_methods(Scope, is_scope, "Scope", {})
require("oar.framework")._guard_methods(ScopeVar, function(x) return getmetatable(x) == ScopeVar end,
  "ScopeVariable", {})

return M
