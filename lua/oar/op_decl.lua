--- What an op's declaration says, read from the registry (the
-- declarations in src/ops/*.ops, docs/CONTRIBUTING.md "Adding an op"):
-- the layers that map one to one onto an op take their keyword arguments,
-- defaults and ranges from here rather than from a second list in Lua.
-- @module oar.op_decl
local ffi = require("ffi")
local lib = require("oar.lib")

local M = {}

local KIND = { [0] = "int", "float", "string", "ints", "floats", "strings", "bool", "bools", "block", "long",
               "blocks", "longs" }
-- the doc every Paddle execution switch carries (src/ops/paddle_attrs.h):
-- accepted from files, never a layer argument
local PADDLE_SWITCH = "a switch of Paddle's own execution paths"

local cache = {}

--- The attributes a layer may set on op `op_type`, in declaration order:
-- each `{name=, kind=, default=, min=, max=, choices=, required=, doc=}`
-- (`kind` "int", "float", "bool", "string", ...; `min`/`max` only when the
-- declaration gives a range; `choices` a list for choice attributes).
-- Paddle's execution switches are left out.
-- @tparam string op_type a registered op type
-- @treturn table the list (empty when the op declares none)
-- @raise when op_type is not registered
function M.attrs(op_type)
  if cache[op_type] then return cache[op_type] end
  local C = lib.C
  local n = C.oar_op_num_attrs(op_type)
  if n < 0 then error("oar.op_decl: no op '" .. tostring(op_type) .. "' is registered", 2) end
  local list = {}
  local d = ffi.new("oar_attr_info_t")
  for i = 0, n - 1 do
    lib.check(C.oar_op_attr_info(op_type, i, d))
    local doc = d.doc ~= nil and ffi.string(d.doc) or ""
    if doc:sub(1, #PADDLE_SWITCH) ~= PADDLE_SWITCH then
      local e = { name = ffi.string(d.name), kind = KIND[d.type], required = d.required, doc = doc }
      if e.kind == "string" then
        e.default = d.def_str ~= nil and ffi.string(d.def_str) or ""
        if d.choices ~= nil then
          e.choices = {}
          for c in (ffi.string(d.choices) .. "|"):gmatch("([^|]*)|") do e.choices[#e.choices + 1] = c end
        end
      elseif e.kind == "bool" then
        e.default = d.def ~= 0
      elseif e.kind == "int" or e.kind == "long" or e.kind == "float" then
        e.default = d.def
      end
      if d.min < d.max then e.min, e.max = d.min, d.max end
      list[#list + 1] = e
    end
  end
  cache[op_type] = list
  return list
end

return M
