--- oar.framework.core: what the parts of oar.framework share: the class
-- tables, type tests, error location (the user's line), constants and
-- small text helpers. Internal: users require("oar.framework"), which
-- returns the public table M (this module's field M).
-- @module oar.framework.core
local ffi = require("ffi")
local lib = require("oar.lib")
local dtypes = require("oar.dtypes")
local unique_name = require("oar.unique_name")
local C = lib.C

local M = {}

-- ---- where the user is -----------------------------------------------------
-- Sources under this directory are oar's own; the first frame outside them is
-- the user's line that an error or an op_callstack should point at.
local own_prefix = debug.getinfo(1, "S").source:match("^(@.*oar/)framework/core%.lua$") or "@oar/"

local function is_own(source)
  return source:sub(1, #own_prefix) == own_prefix
end

local function frame_text(info)
  local src = info.source:sub(1, 1) == "@" and info.source:sub(2) or info.short_src
  return (src:gsub("^%./", "")) .. ":" .. info.currentline
end

--- Up to `max` "file:line" strings of the user's frames (outside oar), innermost first.
-- @tparam[opt=4] int max
-- @treturn {string,...}
-- @usage print(table.concat(oar.framework.callstack(2), " <- "))
function M.callstack(max)
  max = max or 4
  local frames = {}
  local level = 2
  while #frames < max do
    local info = debug.getinfo(level, "Sl")
    if not info then break end
    if info.what ~= "C" and info.currentline and info.currentline > 0 and not is_own(info.source) then
      frames[#frames + 1] = frame_text(info)
    end
    level = level + 1
  end
  return frames
end

--- "file:line" of the user's innermost frame (outside oar), or nil.
-- @treturn string|nil
-- @usage print(oar.framework.user_location())
function M.user_location()
  return M.callstack(1)[1]
end

--- Raises `msg` located at the user's line rather than oar's internals.
-- @tparam string msg
-- @raise always
-- @usage if n < 1 then oar.framework.raise("mylayer: 'n' must be positive") end
function M.raise(msg)
  local loc = M.user_location()
  if loc then error(loc .. ": " .. msg, 0) end
  error(msg, 0)
end
local raise = M.raise

-- Runs fn(...) and re-raises its error unchanged after `restore()`.
local function protected(restore, fn, ...)
  local res = { pcall(fn, ...) }
  restore()
  if not res[1] then error(res[2], 0) end
  return unpack(res, 2, table.maxn(res))
end
--- Runs `fn(...)`, then `restore()` whether or not it raised; re-raises
-- fn's error unchanged.
-- @function protected
-- @tparam function restore
-- @tparam function fn
-- @param ... fn's arguments
-- @return what `fn` returns
-- @usage oar.framework.protected(function() print("restored") end, function() return 1 end)
M.protected = protected

-- ---- constants ---------------------------------------------------------------

--- Op roles (the `op_role` attribute): Forward, Backward, Optimize, RPC,
-- Dist, LRSched, Loss (bit flags, as Fluid's).
-- @table OpRole
M.OpRole = { Forward = 0, Backward = 1, Optimize = 2, RPC = 4, Dist = 8, LRSched = 16, Loss = 256 }

local var_types = {
  lod_tensor = 7, selected_rows = 8, feed_minibatch = 9, fetch_list = 10, step_scopes = 11,
  lod_rank_table = 12, lod_tensor_array = 13, raw = 17,
}
local var_type_names = {}
for k, v in pairs(var_types) do var_type_names[v] = k end
--- Variable types by name: lod_tensor, selected_rows, feed_minibatch,
-- fetch_list, step_scopes, lod_rank_table, lod_tensor_array, raw.
-- @table VarType
M.VarType = var_types

local function var_type_enum(t, who)
  if t == nil then return var_types.lod_tensor end
  if type(t) == "number" and var_type_names[t] then return t end
  if type(t) == "string" and var_types[t:lower()] then return var_types[t:lower()] end
  raise(string.format("%s: unknown variable type %s (expected one of lod_tensor, " ..
    "lod_tensor_array, step_scopes, lod_rank_table, selected_rows, raw)", who, tostring(t)))
end

-- ---- classes -----------------------------------------------------------------
local Program = {}
local Block = {}
local Operator = {}
local Variable = {}      -- methods shared by Variable and Parameter
local VariableMT = {}    -- metatable of plain Variables
local ParameterMT = {}   -- metatable of Parameters
M.Program, M.Block, M.Operator, M.Variable = Program, Block, Operator, Variable
M.VariableMT, M.ParameterMT = VariableMT, ParameterMT

local function is_program(x) return getmetatable(x) == Program end
local function is_block(x) return getmetatable(x) == Block end
local function is_variable(x)
  local mt = getmetatable(x)
  return mt == VariableMT or mt == ParameterMT
end
local function is_parameter(x) return getmetatable(x) == ParameterMT end
local function is_operator(x) return getmetatable(x) == Operator end
--- Whether `x` is a Program.
-- @function is_program
-- @param x anything
-- @treturn bool
-- @usage assert(oar.framework.is_program(oar.default_main_program()))

--- Whether `x` is a Block.
-- @function is_block
-- @param x anything
-- @treturn bool
-- @usage assert(oar.framework.is_block(main:global_block()))

--- Whether `x` is a Variable (a Parameter counts).
-- @function is_variable
-- @param x anything
-- @treturn bool
-- @usage print(oar.is_variable(x))

--- Whether `x` is a Parameter.
-- @function is_parameter
-- @param x anything
-- @treturn bool
-- @usage print(oar.is_parameter(main:all_parameters()[1]))   -- true

--- Whether `x` is an Operator.
-- @function is_operator
-- @param x anything
-- @treturn bool
-- @usage print(oar.framework.is_operator(main:global_block():op(0)))
M.is_program, M.is_block, M.is_variable = is_program, is_block, is_variable
M.is_parameter, M.is_operator = is_parameter, is_operator

-- a short list of plain values as "{1, 2, 3}", else nil
local function list_text(t)
  if getmetatable(t) ~= nil then return nil end
  local n = #t
  if n > 8 then return nil end
  local count = 0
  for _ in pairs(t) do count = count + 1 end
  if count ~= n then return nil end
  local parts = {}
  for i = 1, n do
    local v = t[i]
    if type(v) == "number" or type(v) == "boolean" then parts[i] = tostring(v)
    elseif type(v) == "string" and #v <= 40 then parts[i] = string.format("%q", v)
    else return nil end
  end
  return "{" .. table.concat(parts, ", ") .. "}"
end

local function describe(x)
  if is_variable(x) then return "Variable '" .. rawget(x, "name") .. "'" end
  if is_program(x) then return "Program" end
  if is_block(x) then return "Block" end
  if type(x) == "string" then return "string '" .. x .. "'" end
  if type(x) == "table" then return list_text(x) or "table" end
  return type(x) .. " " .. tostring(x)
end
--- A short description of a value for error messages ("Variable 'x'",
-- "string 'a'", "{1, 2}", "number 3").
-- @function describe
-- @param x anything
-- @treturn string
-- @usage print(oar.framework.describe({1, 2}))   -- {1, 2}
M.describe = describe

local function shape_text(shape)
  if shape == nil then return "?" end
  return "[" .. table.concat(shape, ", ") .. "]"
end
--- A shape as text: "[-1, 13]" ("?" for nil).
-- @function shape_text
-- @tparam {int,...}|nil shape
-- @treturn string
-- @usage print(oar.framework.shape_text(x.shape))
M.shape_text = shape_text

-- dims from a Lua list, validated; `min` is the smallest dim allowed
local function dims_array(shape, who, min)
  if type(shape) ~= "table" then
    raise(string.format("%s: 'shape' must be a list of integers, got %s", who, describe(shape)))
  end
  local n = #shape
  local dims = ffi.new("int64_t[?]", n > 0 and n or 1)
  for i = 1, n do
    local d = shape[i]
    if type(d) ~= "number" or d % 1 ~= 0 or d < min or d >= 2 ^ 53 then
      raise(string.format("%s: 'shape' must hold integers >= %d, got %s at position %d",
        who, min, tostring(d), i))
    end
    dims[i - 1] = d
  end
  return dims, n
end


-- ---- shared with the other parts of oar.framework ----------------------------
local I = {
  Block = Block,
  C = C,
  M = M,
  Operator = Operator,
  ParameterMT = ParameterMT,
  Program = Program,
  Variable = Variable,
  VariableMT = VariableMT,
  describe = describe,
  dims_array = dims_array,
  dtypes = dtypes,
  ffi = ffi,
  frame_text = frame_text,
  is_block = is_block,
  is_operator = is_operator,
  is_own = is_own,
  is_parameter = is_parameter,
  is_program = is_program,
  is_variable = is_variable,
  lib = lib,
  list_text = list_text,
  own_prefix = own_prefix,
  protected = protected,
  raise = raise,
  shape_text = shape_text,
  unique_name = unique_name,
  var_type_enum = var_type_enum,
  var_type_names = var_type_names,
  var_types = var_types,
}
return I
