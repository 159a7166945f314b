-- spec/helpers/test_ops.lua — defining test-only ops from Lua through the
-- registry (src/op.h), for specs that need an op with a particular shape of
-- slots, attrs or grad maker that no real op has.
--
--   local O = require("spec.helpers.test_ops")
--   O.define_op{ type = "mytest_copy", inputs = { { "X" } }, outputs = { { "Out" } },
--                attrs = { { "sub_block", 8 } }, infer = O.same_as({ { "X", "Out" } }) }
--
-- The registry keeps pointers, so definitions live in malloc'd memory and
-- the callbacks are never freed (they outlive the spec file in the process).
-- Loading this module declares the op-authoring API (src/oar_op.h: the
-- definition structs, the registry, the grad makers) to the FFI.
local ffi = require("ffi")
local lib = require("oar.lib")
local C = lib.load_op_api()

local M = {}

pcall(ffi.cdef, "void *malloc(size_t n);")

-- a malloc'd copy of s
local function cstr(s)
  local p = ffi.cast("char *", C.malloc(#s + 1))
  ffi.copy(p, s)
  return p
end

-- { { name, flags }, ... } as a NULL-terminated oar_slot_def_t array
local function slots(list)
  local n = #list
  local a = ffi.cast("oar_slot_def_t *", C.malloc(ffi.sizeof("oar_slot_def_t") * (n + 1)))
  for i, s in ipairs(list) do
    a[i - 1].name = cstr(s[1])
    a[i - 1].flags = s[2] or 0
  end
  a[n].name = nil
  a[n].flags = 0
  return a
end

-- { { name, type, default }, ... } as a NULL-terminated oar_attr_def_t array
local function attrs(list)
  local n = #list
  local a = ffi.cast("oar_attr_def_t *", C.malloc(ffi.sizeof("oar_attr_def_t") * (n + 1)))
  ffi.fill(a, ffi.sizeof("oar_attr_def_t") * (n + 1))
  for i, s in ipairs(list) do
    a[i - 1].name = cstr(s[1])
    a[i - 1].type = s[2]
    a[i - 1].def = s[3] or 0
  end
  return a
end

-- registers op d.type (once per process): d.inputs, d.outputs as for
-- slots(), d.attrs as for attrs(), optional d.infer and d.grad callbacks
function M.define_op(d)
  if C.oar_op_is_registered(d.type) then return end
  local def = ffi.cast("oar_op_def_t *", C.malloc(ffi.sizeof("oar_op_def_t")))
  ffi.fill(def, ffi.sizeof("oar_op_def_t"))
  def.type = cstr(d.type)
  def.inputs = slots(d.inputs)
  def.outputs = slots(d.outputs)
  def.attrs = d.attrs and attrs(d.attrs) or nil
  if d.infer then def.infer = ffi.cast("int (*)(oar_infer_ctx_t *)", d.infer) end
  if d.grad then def.grad = ffi.cast("int (*)(oar_grad_ctx_t *)", d.grad) end
  lib.check(C.oar_registry_add_op(def))
end

-- errors inside a callback cannot cross C frames: report them as statuses
function M.guarded(f)
  return function(...)
    local ok, rc = pcall(f, ...)
    if not ok then return -1 end
    return rc
  end
end

-- an infer callback giving each { in, out } pair's out the desc of in
function M.same_as(pairs_)
  return M.guarded(function(c)
    for _, p in ipairs(pairs_) do
      local rc = C.oar_infer_same_as(c, p[1], p[2])
      if rc ~= 0 then return rc end
    end
    return 0
  end)
end

return M
