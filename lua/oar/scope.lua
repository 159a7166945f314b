-- oar.scope: Fluid's scope hierarchy (name -> variable, parent, kids), held
-- by C and refcounted, so Lua may drop handles in any order.
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
M.is_scope = is_scope

-- Wraps an oar_scope_t* that we hold one reference to.
local function wrap(ptr)
  if type(ptr) ~= "cdata" or not ffi.istype("oar_scope_t *", ptr) or ptr == nil then
    raise("scope.wrap: expected a non-NULL oar_scope_t* cdata, got " .. tostring(ptr))
  end
  return setmetatable({ handle = ffi.gc(ptr, C.oar_scope_free) }, Scope)
end
M.wrap = wrap

local function check_self(s, who)
  if not is_scope(s) then raise("Scope:" .. who .. ": call it with ':' on a Scope") end
end

local function check_name(name, who)
  if type(name) ~= "string" or name == "" then
    raise("Scope:" .. who .. ": 'name' must be a non-empty string, got " .. tostring(name))
  end
end

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

-- finds the variable locally or creates it
function Scope:var(name)
  check_self(self, "var")
  check_name(name, "var")
  local out = ffi.new("oar_variable_t *[1]")
  if C.oar_scope_var(self.handle, name, out) ~= 0 then
    raise("Scope:var: " .. lib.last_error())
  end
  return wrap_var(self, out[0])
end

-- searches this scope and its parents; nil when absent
function Scope:find_var(name)
  check_self(self, "find_var")
  check_name(name, "find_var")
  local v = C.oar_scope_find_var(self.handle, name)
  if v == nil then return nil end
  return wrap_var(self, v)
end

function Scope:find_local_var(name)
  check_self(self, "find_local_var")
  check_name(name, "find_local_var")
  local v = C.oar_scope_find_local(self.handle, name)
  if v == nil then return nil end
  return wrap_var(self, v)
end

function Scope:erase(name)
  check_self(self, "erase")
  check_name(name, "erase")
  if C.oar_scope_erase(self.handle, name) ~= 0 then raise("Scope:erase: " .. lib.last_error()) end
end

function Scope:new_scope()
  check_self(self, "new_scope")
  local out = ffi.new("oar_scope_t *[1]")
  if C.oar_scope_new_scope(self.handle, out) ~= 0 then
    raise("Scope:new_scope: " .. lib.last_error())
  end
  return wrap(out[0])
end

function Scope:drop_kids()
  check_self(self, "drop_kids")
  C.oar_scope_drop_kids(self.handle)
end

function Scope:num_kids()
  check_self(self, "num_kids")
  return C.oar_scope_num_kids(self.handle)
end

-- the parent scope, or nil at a root
function Scope:parent()
  check_self(self, "parent")
  local p = C.oar_scope_parent(self.handle)
  if p == nil then return nil end
  return wrap(C.oar_scope_retain(p))
end

-- names created in this scope, in creation order
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

-- ---- scope variables -------------------------------------------------------
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

function ScopeVar:name()
  check_var(self, "ScopeVar:name")
  return ffi.string(C.oar_variable_name(self.handle))
end

-- "lod_tensor", "lod_tensor_array", ... or "empty" before anything is stored
function ScopeVar:type()
  check_var(self, "ScopeVar:type")
  local t = C.oar_variable_type(self.handle)
  return kind_names[t] or tostring(t)
end

function ScopeVar:is_initialized()
  check_var(self, "ScopeVar:is_initialized")
  return C.oar_variable_type(self.handle) ~= 0
end

-- The held tensor (shares its data), created empty when the variable is new.
function ScopeVar:get_tensor()
  check_var(self, "get_tensor")
  local out = ffi.new("oar_tensor_t *[1]")
  if C.oar_variable_get_tensor(self.handle, out) ~= 0 then
    raise("get_tensor: " .. lib.last_error())
  end
  return tensor.wrap(out[0])
end

-- Stores `t` (an oar Tensor, or a nested table converted as float32).
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

-- length and items of a LOD_TENSOR_ARRAY variable
function ScopeVar:array_size()
  check_var(self, "array_size")
  return C.oar_variable_array_size(self.handle)
end

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

-- ---- the global scope and scope_guard ------------------------------------------
local global
local current

function M.global_scope()
  if not global then global = M.new() end
  return current or global
end

-- Runs fn() with `scope` as the global scope; restores it also on error.
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
