-- spec/helpers/program.lua — building ProgramDescs by hand through the C API
-- (no Lua framework in between), for specs of the desc layer, the backward
-- pass, pruning and serialization.
--
--   local P = require("spec.helpers.program")
--   local p = P.new_program()
--   local b = C.oar_program_block(p, 0)
--   P.new_var(b, "x", { dims = { 2, 3 }, dtype = 5, persistable = true })
--   P.append_block_op(b, "while", { X = { "x" } }, { Out = { "y" } }, { sub_block = 1 })
local ffi = require("ffi")
local lib = require("oar.lib")
local C = lib.C

local M = {}

-- a new empty program, freed by the GC
function M.new_program()
  local pp = ffi.new("oar_program_t *[1]")
  lib.check(C.oar_program_new(pp))
  return ffi.gc(pp[0], C.oar_program_free)
end

-- appends a block whose parent is block index `parent`
function M.new_block(p, parent)
  local bp = ffi.new("oar_block_t *[1]")
  lib.check(C.oar_program_append_block(p, parent, bp))
  return bp[0]
end

-- a C array filled element by element (table initializers replicate a single value)
function M.carray(ctype, t)
  local a = ffi.new(ctype .. "[?]", #t + 1)
  for i, x in ipairs(t) do a[i - 1] = x end
  return a
end

-- declares var `name` in block b; o sets, when present: type, dims, dtype,
-- lod_level, persistable, need_check_feed, stop_gradient
function M.new_var(b, name, o)
  o = o or {}
  local vp = ffi.new("oar_var_desc_t *[1]")
  lib.check(C.oar_block_var_new(b, name, vp))
  local v = vp[0]
  if o.type then lib.check(C.oar_var_desc_set_type(v, o.type)) end
  if o.dims then lib.check(C.oar_var_desc_set_shape(v, M.carray("int64_t", o.dims), #o.dims)) end
  if o.dtype then lib.check(C.oar_var_desc_set_dtype(v, o.dtype)) end
  if o.lod_level then lib.check(C.oar_var_desc_set_lod_level(v, o.lod_level)) end
  if o.persistable then lib.check(C.oar_var_desc_set_persistable(v, true)) end
  if o.need_check_feed then lib.check(C.oar_var_desc_set_need_check_feed(v, true)) end
  if o.stop_gradient then lib.check(C.oar_var_desc_set_stop_gradient(v, true)) end
  return v
end

-- inserts an op of `type` at the end of block b with slots ins/outs
-- ({ slot = { names } }) and BLOCK attrs block_attrs ({ name = block index }),
-- through the checked oar_block_insert_op; on refusal the op is freed and
-- the C message raised
function M.append_block_op(b, type, ins, outs, block_attrs)
  local out = ffi.new("oar_op_desc_t *[1]")
  lib.check(C.oar_op_desc_new(type, out))
  local o = out[0]
  for slot, names in pairs(ins) do lib.check(C.oar_op_desc_set_input(o, slot, lib.cstrings(names), #names)) end
  for slot, names in pairs(outs) do lib.check(C.oar_op_desc_set_output(o, slot, lib.cstrings(names), #names)) end
  for k, v in pairs(block_attrs) do lib.check(C.oar_op_desc_set_attr_block(o, k, v)) end
  if C.oar_block_insert_op(b, -1, o) ~= 0 then
    local msg = lib.last_error()
    C.oar_op_desc_free(o)
    error(msg, 2)
  end
  return o
end

return M
