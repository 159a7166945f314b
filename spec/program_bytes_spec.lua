-- ProgramDesc bytes: exact encodings checked against bytes computed by hand
-- and by a small protobuf encoder written here from the wire format
-- (tag = field * 8 + wire type; varints little-endian base 128; negative
-- int32/int64 as ten-byte two's complement varints; float as fixed32),
-- serialize -> parse round trips compared field by field, and malformed
-- input refused with OAR_ERR_FORMAT and a message that says what is wrong.
local ffi = require("ffi")
local lib = require("oar.lib")
-- raw insertion and oar_program_normalize: the op-authoring API (src/oar_op.h)
local C = lib.load_op_api()
local P = require("spec.helpers.program")

local OK, FORMAT, UNSUPPORTED = 0, -7, -10
local ATTR = { INT = 0, FLOAT = 1, STRING = 2, INTS = 3, FLOATS = 4, STRINGS = 5, BOOLEAN = 6,
               BOOLEANS = 7, BLOCK = 8, LONG = 9, BLOCKS = 10, LONGS = 11 }
local BOOL_, INT64, FP32, FP64 = 0, 3, 5, 6
local LOD_TENSOR, SELECTED_ROWS, FEED_MINIBATCH, LOD_TENSOR_ARRAY = 7, 8, 9, 13

-- ---- a protobuf encoder, independent of protobuf-c -------------------------
local pb = {}
function pb.varint(n)
  local x = ffi.cast("uint64_t", ffi.cast("int64_t", n))
  local out = {}
  repeat
    local byte = tonumber(x % 128)
    x = x / 128
    if x ~= 0 then byte = byte + 128 end
    out[#out + 1] = string.char(byte)
  until x == 0
  return table.concat(out)
end
function pb.int(field, n) return pb.varint(field * 8) .. pb.varint(n) end
function pb.bytes(field, s) return pb.varint(field * 8 + 2) .. pb.varint(#s) .. s end
function pb.float(field, x) return pb.varint(field * 8 + 5) .. ffi.string(ffi.new("float[1]", x), 4) end

local function tensor_desc(dtype, dims)
  local s = pb.int(1, dtype)
  for _, d in ipairs(dims or {}) do s = s .. pb.int(2, d) end
  return s
end

-- o: {type=, dtype=, dims=, lod_level=, persistable=, need_check_feed=, stop_gradient=}
local function var_bytes(name, o)
  local t = o.type or LOD_TENSOR
  local vt = pb.int(1, t)
  local td = tensor_desc(o.dtype or FP32, o.dims)
  local lod = o.lod_level and pb.int(2, o.lod_level) or ""
  if t == SELECTED_ROWS then vt = vt .. pb.bytes(2, td)
  elseif t == LOD_TENSOR and not o.no_tensor then vt = vt .. pb.bytes(3, pb.bytes(1, td) .. lod)
  elseif t == LOD_TENSOR_ARRAY then vt = vt .. pb.bytes(4, pb.bytes(1, td) .. lod) end
  local s = pb.bytes(1, name) .. pb.bytes(2, vt)
  if o.persistable ~= nil then s = s .. pb.int(3, o.persistable and 1 or 0) end
  if o.need_check_feed then s = s .. pb.int(4, 1) end
  if o.stop_gradient then s = s .. pb.int(6, 1) end
  return s
end

-- value encodings per attr type
local function attr_bytes(name, type, v)
  local s = pb.bytes(1, name) .. pb.int(2, type)
  if type == ATTR.INT then s = s .. pb.int(3, v)
  elseif type == ATTR.FLOAT then s = s .. pb.float(4, v)
  elseif type == ATTR.STRING then s = s .. pb.bytes(5, v)
  elseif type == ATTR.INTS then for _, x in ipairs(v) do s = s .. pb.int(6, x) end
  elseif type == ATTR.FLOATS then for _, x in ipairs(v) do s = s .. pb.float(7, x) end
  elseif type == ATTR.STRINGS then for _, x in ipairs(v) do s = s .. pb.bytes(8, x) end
  elseif type == ATTR.BOOLEAN then s = s .. pb.int(10, v and 1 or 0)
  elseif type == ATTR.BOOLEANS then for _, x in ipairs(v) do s = s .. pb.int(11, x and 1 or 0) end
  elseif type == ATTR.BLOCK then s = s .. pb.int(12, v)
  elseif type == ATTR.LONG then s = s .. pb.int(13, v)
  elseif type == ATTR.BLOCKS then for _, x in ipairs(v) do s = s .. pb.int(14, x) end
  elseif type == ATTR.LONGS then for _, x in ipairs(v) do s = s .. pb.int(15, x) end
  end
  return s
end

local function slot_bytes(param, args)
  local s = pb.bytes(1, param)
  for _, a in ipairs(args) do s = s .. pb.bytes(2, a) end
  return s
end

-- o: {inputs={{slot,{args}}}, outputs=..., attrs={{name,type,value}}}
local function op_bytes(type, o)
  local s = ""
  for _, sl in ipairs(o.inputs or {}) do s = s .. pb.bytes(1, slot_bytes(sl[1], sl[2])) end
  for _, sl in ipairs(o.outputs or {}) do s = s .. pb.bytes(2, slot_bytes(sl[1], sl[2])) end
  s = s .. pb.bytes(3, type)
  for _, a in ipairs(o.attrs or {}) do s = s .. pb.bytes(4, attr_bytes(a[1], a[2], a[3])) end
  return s
end

local function block_bytes(idx, parent, vars, ops, fwd)
  local s = pb.int(1, idx) .. pb.int(2, parent)
  for _, v in ipairs(vars or {}) do s = s .. pb.bytes(3, v) end
  for _, o in ipairs(ops or {}) do s = s .. pb.bytes(4, o) end
  if fwd then s = s .. pb.int(5, fwd) end
  return s
end

local function program_bytes(blocks, version)
  local s = ""
  for _, b in ipairs(blocks) do s = s .. pb.bytes(1, b) end
  return s .. pb.bytes(4, pb.int(1, version or 0))
end

-- ---- C API helpers -------------------------------------------------------------
local function hex(s) return (s:gsub(".", function(c) return ("%02X "):format(c:byte()) end)) end
local function unhex(h) return (h:gsub("%s", ""):gsub("..", function(x) return string.char(tonumber(x, 16)) end)) end

local new_program = P.new_program

local function serialize(p)
  local buf, n = ffi.new("void *[1]"), ffi.new("size_t[1]")
  lib.check(C.oar_program_serialize(p, buf, n))
  local s = ffi.string(buf[0], n[0])
  C.oar_free(buf[0])
  return s
end

-- returns program (or nil), status, message
local function parse(bytes)
  local pp = ffi.new("oar_program_t *[1]")
  local rc = C.oar_program_parse(bytes, #bytes, pp)
  if rc ~= OK then return nil, rc, lib.last_error() end
  return ffi.gc(pp[0], C.oar_program_free), rc
end

local carray, new_var = P.carray, P.new_var

local setters = {
  [ATTR.INT] = function(op, n, v) return C.oar_op_desc_set_attr_int(op, n, v) end,
  [ATTR.LONG] = function(op, n, v) return C.oar_op_desc_set_attr_long(op, n, v) end,
  [ATTR.FLOAT] = function(op, n, v) return C.oar_op_desc_set_attr_float(op, n, v) end,
  [ATTR.BOOLEAN] = function(op, n, v) return C.oar_op_desc_set_attr_bool(op, n, v) end,
  [ATTR.STRING] = function(op, n, v) return C.oar_op_desc_set_attr_string(op, n, v) end,
  [ATTR.BLOCK] = function(op, n, v) return C.oar_op_desc_set_attr_block(op, n, v) end,
  [ATTR.INTS] = function(op, n, v) return C.oar_op_desc_set_attr_ints(op, n, carray("int32_t", v), #v) end,
  [ATTR.LONGS] = function(op, n, v) return C.oar_op_desc_set_attr_longs(op, n, carray("int64_t", v), #v) end,
  [ATTR.FLOATS] = function(op, n, v) return C.oar_op_desc_set_attr_floats(op, n, carray("float", v), #v) end,
  [ATTR.BOOLEANS] = function(op, n, v) return C.oar_op_desc_set_attr_bools(op, n, carray("bool", v), #v) end,
  [ATTR.BLOCKS] = function(op, n, v) return C.oar_op_desc_set_attr_blocks(op, n, carray("int32_t", v), #v) end,
  [ATTR.STRINGS] = function(op, n, v)
    local arr, k = lib.cstrings(v)
    return C.oar_op_desc_set_attr_strings(op, n, arr, k)
  end,
}

local function new_op(b, type, o)
  local pp = ffi.new("oar_op_desc_t *[1]")
  lib.check(C.oar_op_desc_new(type, pp))
  local op = pp[0]
  for _, sl in ipairs(o.inputs or {}) do
    local arr, n = lib.cstrings(sl[2])
    lib.check(C.oar_op_desc_set_input(op, sl[1], arr, n))
  end
  for _, sl in ipairs(o.outputs or {}) do
    local arr, n = lib.cstrings(sl[2])
    lib.check(C.oar_op_desc_set_output(op, sl[1], arr, n))
  end
  for _, a in ipairs(o.attrs or {}) do lib.check(setters[a[2]](op, a[1], a[3])) end
  lib.check(C.oar_block_insert_op_raw(b, -1, op))
  return op
end

-- Everything the C API tells about a program, as plain Lua values.
local list_ctype = {
  [ATTR.INTS] = "const int32_t *", [ATTR.BLOCKS] = "const int32_t *", [ATTR.LONGS] = "const int64_t *",
  [ATTR.FLOATS] = "const float *", [ATTR.BOOLEANS] = "const bool *", [ATTR.STRINGS] = "char *const *",
}
local function attr_value(op, name, type)
  if type == ATTR.INT then local v = ffi.new("int32_t[1]"); lib.check(C.oar_op_desc_get_attr_int(op, name, v)); return v[0] end
  if type == ATTR.LONG then local v = ffi.new("int64_t[1]"); lib.check(C.oar_op_desc_get_attr_long(op, name, v)); return tonumber(v[0]) end
  if type == ATTR.FLOAT then local v = ffi.new("float[1]"); lib.check(C.oar_op_desc_get_attr_float(op, name, v)); return v[0] end
  if type == ATTR.BOOLEAN then local v = ffi.new("bool[1]"); lib.check(C.oar_op_desc_get_attr_bool(op, name, v)); return v[0] end
  if type == ATTR.STRING then return ffi.string(C.oar_op_desc_get_attr_string(op, name)) end
  if type == ATTR.BLOCK then
    -- a BLOCK attr reads through the checked int getter as its block index
    local v = ffi.new("int32_t[1]"); lib.check(C.oar_op_desc_get_attr_int(op, name, v)); return v[0]
  end
  local data, n = ffi.new("const void *[1]"), ffi.new("int[1]")
  lib.check(C.oar_op_desc_get_attr_list(op, name, data, n))
  local p, out = ffi.cast(list_ctype[type], data[0]), {}
  for i = 0, n[0] - 1 do
    local x = p[i]
    if type == ATTR.STRINGS then x = ffi.string(x) elseif type == ATTR.LONGS then x = tonumber(x) end
    out[#out + 1] = x
  end
  return out
end

local function dump(p)
  local out = {}
  for bi = 0, C.oar_program_num_blocks(p) - 1 do
    local b = C.oar_program_block(p, bi)
    local bt = { idx = C.oar_block_idx(b), parent = C.oar_block_parent_idx(b),
                 fwd = C.oar_block_forward_block_idx(b), vars = {}, ops = {} }
    for vi = 0, C.oar_block_num_vars(b) - 1 do
      local v = C.oar_block_var_at(b, vi)
      local dims, d = {}, C.oar_var_desc_dims(v)
      for k = 0, C.oar_var_desc_ndim(v) - 1 do dims[#dims + 1] = tonumber(d[k]) end
      bt.vars[#bt.vars + 1] = {
        name = ffi.string(C.oar_var_desc_name(v)), type = C.oar_var_desc_type(v),
        dtype = C.oar_var_desc_dtype(v), ndim = C.oar_var_desc_ndim(v), dims = dims,
        lod_level = C.oar_var_desc_lod_level(v), persistable = C.oar_var_desc_persistable(v),
        stop_gradient = C.oar_var_desc_stop_gradient(v), need_check_feed = C.oar_var_desc_need_check_feed(v) }
    end
    for oi = 0, C.oar_block_num_ops(b) - 1 do
      local op = C.oar_block_op_at(b, oi)
      local ot = { type = ffi.string(C.oar_op_desc_type(op)), inputs = {}, outputs = {}, attrs = {} }
      for s = 0, C.oar_op_desc_num_inputs(op) - 1 do
        local slot, args = ffi.string(C.oar_op_desc_input_slot(op, s)), {}
        for k = 0, C.oar_op_desc_input_count(op, slot) - 1 do args[#args + 1] = ffi.string(C.oar_op_desc_input_arg(op, slot, k)) end
        ot.inputs[#ot.inputs + 1] = { slot, args }
      end
      for s = 0, C.oar_op_desc_num_outputs(op) - 1 do
        local slot, args = ffi.string(C.oar_op_desc_output_slot(op, s)), {}
        for k = 0, C.oar_op_desc_output_count(op, slot) - 1 do args[#args + 1] = ffi.string(C.oar_op_desc_output_arg(op, slot, k)) end
        ot.outputs[#ot.outputs + 1] = { slot, args }
      end
      for a = 0, C.oar_op_desc_num_attrs(op) - 1 do
        local name = ffi.string(C.oar_op_desc_attr_name(op, a))
        local type = C.oar_op_desc_attr_type(op, name)
        ot.attrs[#ot.attrs + 1] = { name, type, attr_value(op, name, type) }
      end
      bt.ops[#bt.ops + 1] = ot
    end
    out[#out + 1] = bt
  end
  return out
end

-- ---- the program every round trip uses ------------------------------------------
-- fill_constant and fill_constant_batch_size_like come from src/ops/fill.c;
-- attrs they do not declare may have any type, so the extra ones cover the rest.
local VARS0 = {
  { "x", { dtype = FP32, dims = { -1, 4 }, lod_level = 1, need_check_feed = true } },
  { "w", { dtype = FP64, dims = { 4, 3 }, persistable = true, stop_gradient = true } },
  { "arr", { type = LOD_TENSOR_ARRAY, dtype = INT64, dims = { 2 }, lod_level = 2 } },
  { "rows", { type = SELECTED_ROWS, dtype = FP32, dims = { 10, 3 } } },
  { "mask", { dtype = BOOL_, dims = { 7 } } },
  { "feed", { type = FEED_MINIBATCH, persistable = true } },
}
local OP0 = { outputs = { { "Out", { "w" } } }, attrs = {
  { "shape", ATTR.INTS, { 4, 3 } }, { "dtype", ATTR.INT, FP64 }, { "value", ATTR.FLOAT, 0.5 },
  { "str_value", ATTR.STRING, "" }, { "force_cpu", ATTR.BOOLEAN, true },
  { "big", ATTR.LONG, 2 ^ 40 + 1 }, { "neg", ATTR.INT, -3 },
  { "longs", ATTR.LONGS, { -1, 2 ^ 33 } }, { "floats", ATTR.FLOATS, { 1.5, -2 } },
  { "strings", ATTR.STRINGS, { "a", "", "bc" } }, { "bools", ATTR.BOOLEANS, { true, false } },
  { "sub_block", ATTR.BLOCK, 1 }, { "sub_blocks", ATTR.BLOCKS, { 1 } },
  { "op_callstack", ATTR.STRINGS, { "train.lua:3" } } } }
-- what fill_constant declares: a parsed program may carry only these (an
-- attr no definition declares is refused at load, src/attr_check.c)
local OP0_DECLARED = { outputs = OP0.outputs, attrs = {} }
for _, a in ipairs(OP0.attrs) do
  local known = { shape = true, dtype = true, value = true, str_value = true, force_cpu = true, op_callstack = true }
  if known[a[1]] then OP0_DECLARED.attrs[#OP0_DECLARED.attrs + 1] = a end
end
local VARS1 = { { "inner", { dtype = FP32, dims = { -1, 3 } } } }
local OP1 = { inputs = { { "Input", { "x" } } }, outputs = { { "Out", { "inner" } } },
              -- every declared attr: a parsed op gets the declared defaults of missing ones
              attrs = { { "shape", ATTR.INTS, { -1, 3 } }, { "dtype", ATTR.INT, FP32 }, { "value", ATTR.FLOAT, 0 },
                        { "str_value", ATTR.STRING, "" }, { "force_cpu", ATTR.BOOLEAN, false },
                        { "input_dim_idx", ATTR.INT, 0 }, { "output_dim_idx", ATTR.INT, 0 } } }

local function build_rich(declared_only)
  local p = new_program()
  local b0 = C.oar_program_block(p, 0)
  for _, v in ipairs(VARS0) do new_var(b0, v[1], v[2]) end
  new_op(b0, "fill_constant", declared_only and OP0_DECLARED or OP0)
  local bp = ffi.new("oar_block_t *[1]")
  lib.check(C.oar_program_append_block(p, 0, bp))
  lib.check(C.oar_block_set_forward_block_idx(bp[0], 0))
  for _, v in ipairs(VARS1) do new_var(bp[0], v[1], v[2]) end
  new_op(bp[0], "fill_constant_batch_size_like", OP1)
  return p
end

local function encode_rich(declared_only)
  local vars0 = {}
  for _, v in ipairs(VARS0) do
    local o = {}
    for k, x in pairs(v[2]) do o[k] = x end
    o.persistable = o.persistable or false   -- persistable is always written
    vars0[#vars0 + 1] = var_bytes(v[1], o)
  end
  local b0 = block_bytes(0, -1, vars0, { op_bytes("fill_constant", declared_only and OP0_DECLARED or OP0) })
  local b1 = block_bytes(1, 0, { var_bytes("inner", { dtype = FP32, dims = { -1, 3 }, persistable = false }) },
                         { op_bytes("fill_constant_batch_size_like", OP1) }, 0)
  return program_bytes({ b0, b1 })
end

describe("ProgramDesc bytes", function()
  it("of a new program are the hand-computed 19 bytes", function()
    -- ProgramDesc.blocks (field 1, LEN=2): tag 0x0A, length 13;
    --   BlockDesc.idx (1, varint) 0: 08 00
    --   BlockDesc.parent_idx (2, varint) -1: 10 then ten bytes FF x9 01
    --   forward_block_idx -1 is the default and is left out
    -- ProgramDesc.version (field 4, LEN): 22 02, Version.version (1) 0: 08 00
    local expected = unhex("0A 0D 08 00 10 FF FF FF FF FF FF FF FF FF 01 22 02 08 00")
    assert.are.equal(hex(expected), hex(serialize(new_program())))
    assert.are.equal(hex(expected), hex(program_bytes({ block_bytes(0, -1) })))
  end)

  it("of one tensor var are the hand-computed 38 bytes, both ways", function()
    -- TensorDesc{data_type 5, dims [2]}            = 08 05 10 02               (4)
    -- LoDTensorDesc{tensor}                        = 0A 04 <4>                 (6)
    -- VarType{type 7, lod_tensor (3)}              = 08 07 1A 06 <6>           (10)
    -- VarDesc{name "x", type, persistable false}   = 0A 01 78 12 0A <10> 18 00 (17)
    -- BlockDesc{idx 0, parent -1, vars}            = 08 00 10 FF..01 1A 11 <17> (32)
    -- ProgramDesc{blocks, version {0}}             = 0A 20 <32> 22 02 08 00    (38)
    local expected = unhex([[
      0A 20 08 00 10 FF FF FF FF FF FF FF FF FF 01 1A 11
      0A 01 78 12 0A 08 07 1A 06 0A 04 08 05 10 02 18 00
      22 02 08 00]])
    assert.are.equal(38, #expected)
    local p = new_program()
    new_var(C.oar_program_block(p, 0), "x", { dims = { 2 } })
    assert.are.equal(hex(expected), hex(serialize(p)))
    local q, rc, msg = parse(expected)
    assert.are.equal(OK, rc, msg)
    local v = C.oar_block_find_var(C.oar_program_block(q, 0), "x")
    assert.is_true(v ~= nil)
    assert.are.equal(FP32, C.oar_var_desc_dtype(v))
    assert.are.equal(1, C.oar_var_desc_ndim(v))
    assert.are.equal(2, tonumber(C.oar_var_desc_dims(v)[0]))
    assert.are.equal(LOD_TENSOR, C.oar_var_desc_type(v))
  end)

  it("of a program with every var kind and attr type match an independent encoding", function()
    local got, want = serialize(build_rich()), encode_rich()
    assert.are.equal(#want, #got)
    assert.are.equal(hex(want), hex(got))
  end)

  it("round-trip field by field", function()
    -- attrs fill_constant does not declare are refused at load, named with their value
    local _, rc0, msg0 = parse(serialize(build_rich()))
    assert.are.equal(FORMAT, rc0)
    assert.matches("op 'fill_constant': attr 'big' = 1099511627777 is not an attribute oar knows", msg0, 1, true)
    local p = build_rich(true)
    local q, rc, msg = parse(serialize(p))
    assert.are.equal(OK, rc, msg)
    -- parsing fills in declared defaults (issue 13): the original, given the
    -- same defaults, is what comes back
    assert.are.equal(OK, C.oar_program_normalize(p))
    local a, b = dump(p), dump(q)
    assert.are.same(a, b)
    -- and the dump says what was built
    assert.are.equal(2, #b)
    assert.are.same({ idx = 1, parent = 0, fwd = 0 }, { idx = b[2].idx, parent = b[2].parent, fwd = b[2].fwd })
    assert.are.same({ name = "arr", type = LOD_TENSOR_ARRAY, dtype = INT64, ndim = 1, dims = { 2 }, lod_level = 2,
                      persistable = false, stop_gradient = false, need_check_feed = false }, b[1].vars[3])
    assert.are.same({ "shape", ATTR.LONGS, { 4, 3 } }, b[1].ops[1].attrs[1])   -- Paddle writes LONGS; INTS are converted
    assert.are.same({ "force_cpu", ATTR.BOOLEAN, true }, b[1].ops[1].attrs[5])
    assert.are.same({ { "Input", { "x" } } }, b[2].ops[1].inputs)
    -- bytes -> program -> bytes is the identity once declared defaults and
    -- kinds are in (parsing adds them), and adds nothing a second time
    local once = serialize(parse(encode_rich(true)))
    assert.are.equal(hex(once), hex(serialize(parse(once))))
  end)

  it("give an unset shape back as rank 0 (Fluid writes both as no dims)", function()
    local p = new_program()
    local v = new_var(C.oar_program_block(p, 0), "u", {})
    assert.are.equal(-1, C.oar_var_desc_ndim(v))
    local q = parse(serialize(p))
    assert.are.equal(0, C.oar_var_desc_ndim(C.oar_block_find_var(C.oar_program_block(q, 0), "u")))
  end)

  it("keep a var without a tensor desc at the new-var defaults", function()
    local q, rc, msg = parse(program_bytes({ block_bytes(0, -1, { var_bytes("bare", { no_tensor = true }) }) }))
    assert.are.equal(OK, rc, msg)
    local v = C.oar_block_find_var(C.oar_program_block(q, 0), "bare")
    assert.are.equal(FP32, C.oar_var_desc_dtype(v))
    assert.are.equal(-1, C.oar_var_desc_ndim(v))
  end)

  it("keep the ProgramDesc version number", function()
    local bytes = program_bytes({ block_bytes(0, -1) }, 1008000)
    local q, rc, msg = parse(bytes)
    assert.are.equal(OK, rc, msg)
    assert.are.equal(hex(bytes), hex(serialize(q)))
  end)

  it("without a version field parse as version 0", function()
    local q = parse(pb.bytes(1, block_bytes(0, -1)))
    assert.are.equal(hex(program_bytes({ block_bytes(0, -1) }, 0)), hex(serialize(q)))
  end)
end)

describe("malformed ProgramDesc bytes", function()
  local function refused(bytes, status, ...)
    local q, rc, msg = parse(bytes)
    assert.is_nil(q)
    assert.are.equal(status, rc, msg)
    for _, s in ipairs({ ... }) do
      assert(msg:find(s, 1, true), ("expected %q in error %q"):format(s, msg))
    end
    return msg
  end
  local function fc(attrs, outputs)
    return op_bytes("fill_constant", { outputs = outputs or { { "Out", { "o" } } }, attrs = attrs or {} })
  end
  local o_var = var_bytes("o", { dims = { 1 } })

  it("refuses truncated bytes", function()
    local bytes = encode_rich()
    refused(bytes:sub(1, #bytes - 1), FORMAT, "do not decode")
    refused(bytes:sub(1, 20), FORMAT)
  end)

  it("refuses messages missing a required field", function()
    -- a VarDesc without its type, an OpDesc without its type
    refused(program_bytes({ block_bytes(0, -1, { pb.bytes(1, "x") }) }), FORMAT, "required field")
    refused(program_bytes({ block_bytes(0, -1, nil, { pb.bytes(1, slot_bytes("X", { "a" })) }) }),
            FORMAT, "required field")
  end)

  it("refuses garbage", function()
    refused("\255\255\255\255\255\255\255\255\255\255\255", FORMAT, "malformed ProgramDesc")
    refused("hello, world", FORMAT)
  end)

  it("refuses a program without blocks", function()
    refused("", FORMAT, "no blocks")
    refused(pb.bytes(4, pb.int(1, 0)), FORMAT, "no blocks")
  end)

  it("refuses a block whose idx is not its position", function()
    refused(program_bytes({ block_bytes(0, -1), block_bytes(5, 0) }), FORMAT, "position 1", "idx 5")
  end)

  it("refuses a global block with a parent", function()
    refused(program_bytes({ block_bytes(0, 1), block_bytes(1, 0) }), FORMAT, "block 0", "parent_idx 1")
  end)

  it("refuses parents out of range, self-parents and cycles", function()
    refused(program_bytes({ block_bytes(0, -1), block_bytes(1, 7) }), FORMAT, "block 1", "parent_idx 7")
    refused(program_bytes({ block_bytes(0, -1), block_bytes(1, 1) }), FORMAT, "block 1", "parent_idx 1")
    refused(program_bytes({ block_bytes(0, -1), block_bytes(1, 2), block_bytes(2, 1) }), FORMAT, "loops")
  end)

  it("refuses nesting deeper than 64 blocks", function()
    local blocks = { block_bytes(0, -1) }
    for i = 1, 64 do blocks[#blocks + 1] = block_bytes(i, i - 1) end
    local q, rc, msg = parse(program_bytes(blocks))
    assert.are.equal(OK, rc, msg)   -- block 64 is 64 levels deep: allowed
    blocks[#blocks + 1] = block_bytes(65, 64)
    refused(program_bytes(blocks), FORMAT, "block 65", "nested 65 levels")
    local _ = q
  end)

  it("refuses a forward_block_idx out of range", function()
    refused(program_bytes({ block_bytes(0, -1), block_bytes(1, 0, nil, nil, 4) }), FORMAT, "forward_block_idx 4")
  end)

  it("refuses a BLOCK attr out of range, at block 0 or at its own block", function()
    refused(program_bytes({ block_bytes(0, -1, { o_var }, { fc({ { "sub_block", ATTR.BLOCK, 9 } }) }) }),
            FORMAT, "block 0", "op #0", "'fill_constant'", "'sub_block'", "block 9")
    refused(program_bytes({ block_bytes(0, -1, { o_var }, { fc({ { "sub_block", ATTR.BLOCK, 0 } }) }) }),
            FORMAT, "'sub_block'", "block 0")
    refused(program_bytes({ block_bytes(0, -1, { o_var }),
                            block_bytes(1, 0, nil, { fc({ { "sub_block", ATTR.BLOCK, 1 } }) }) }),
            FORMAT, "block 1", "'sub_block'")
    refused(program_bytes({ block_bytes(0, -1, { o_var }, { fc({ { "subs", ATTR.BLOCKS, { 1, 3 } } }) }),
                            block_bytes(1, 0) }), FORMAT, "'subs'", "block 3")
    refused(program_bytes({ block_bytes(0, -1, { o_var }, { fc({ { "sub_block", ATTR.BLOCK, -5 } }) }) }),
            FORMAT, "'sub_block'", "-5")
  end)

  it("refuses sub-blocks that run each other", function()
    refused(program_bytes({ block_bytes(0, -1, { o_var }),
                            block_bytes(1, 0, nil, { fc({ { "sub_block", ATTR.BLOCK, 2 } }) }),
                            block_bytes(2, 0, nil, { fc({ { "sub_block", ATTR.BLOCK, 1 } }) }) }),
            FORMAT, "cycle")
  end)

  it("refuses a dtype that is not a VarType element type", function()
    refused(program_bytes({ block_bytes(0, -1, { var_bytes("v", { dtype = 42, dims = { 1 } }) }) }),
            FORMAT, "'v'", "dtype 42")
    refused(program_bytes({ block_bytes(0, -1, { var_bytes("v", { dtype = LOD_TENSOR, dims = { 1 } }) }) }),
            FORMAT, "'v'", "dtype 7")
  end)

  it("refuses shapes whose element count overflows int64, bad dims and ranks", function()
    refused(program_bytes({ block_bytes(0, -1, { var_bytes("big", { dims = { 2 ^ 62, 2 ^ 62 } }) }) }),
            FORMAT, "'big'", "int64")
    -- a dim below -1 is Paddle's compile-time product of unknown dims
    -- (instance_norm's SavedMean [N * C] = [-3]): read as unknown
    local p = assert(parse(program_bytes({ block_bytes(0, -1, { var_bytes("neg", { dims = { 3, -2 } }) }) })))
    local v = C.oar_block_find_var(C.oar_program_block(p, 0), "neg")
    assert.are.same({ 3, -1 }, { tonumber(C.oar_var_desc_dims(v)[0]), tonumber(C.oar_var_desc_dims(v)[1]) })
    refused(program_bytes({ block_bytes(0, -1, { var_bytes("r", { dims = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 } }) }) }),
            FORMAT, "'r'", "rank 10")
    refused(program_bytes({ block_bytes(0, -1, { var_bytes("l", { dims = { 1 }, lod_level = -1 }) }) }),
            FORMAT, "'l'", "lod_level -1")
  end)

  it("refuses duplicate vars and slots; a repeated attr reads as its last value, as in Paddle", function()
    refused(program_bytes({ block_bytes(0, -1, { o_var, o_var }) }), FORMAT, "block 0", "'o'", "already exists")
    refused(program_bytes({ block_bytes(0, -1, { o_var }, {
              op_bytes("fill_constant", { outputs = { { "Out", { "o" } }, { "Out", { "o" } } } }) }) }),
            FORMAT, "'fill_constant'", "'Out'", "twice")
    -- Paddle's OpDesc keeps attrs in a map, and Paddle 2.6 itself writes some
    -- (use_mkldnn, ...) twice in sub-blocks: the later one holds
    local q, rc, msg = parse(program_bytes({ block_bytes(0, -1, { o_var }, {
      fc({ { "dtype", ATTR.INT, 5 }, { "dtype", ATTR.INT, 6 } }) }) }))
    assert.are.equal(OK, rc, msg)
    local once = parse(program_bytes({ block_bytes(0, -1, { o_var }, { fc({ { "dtype", ATTR.INT, 6 } }) }) }))
    assert.are.equal(hex(serialize(once)), hex(serialize(q)))
  end)

  it("refuses unknown op types, attr types and undeclared inputs", function()
    refused(program_bytes({ block_bytes(0, -1, nil, { op_bytes("no_such_op_xyz", {}) }) }),
            FORMAT, "'no_such_op_xyz'", "not registered")
    refused(program_bytes({ block_bytes(0, -1, { o_var }, { fc({ { "dtype", ATTR.FLOAT, 5 } }) }) }),
            FORMAT, "'fill_constant'", "'dtype'", "FLOAT", "INT")
    refused(program_bytes({ block_bytes(0, -1, { o_var }, {
              op_bytes("fill_constant", { attrs = { { "odd", 42, nil } } }) }) }),
            FORMAT, "'odd'", "unknown type 42")
    refused(program_bytes({ block_bytes(0, -1, { o_var }, {
              op_bytes("fill_constant_batch_size_like", { inputs = { { "Input", { "ghost" } } },
                                                          outputs = { { "Out", { "o" } } },
                                                          attrs = { { "shape", ATTR.INTS, { -1 } } } }) }) }),
            FORMAT, "'ghost'", "block 0")
  end)

  it("refuses variable kinds oar does not model", function()
    refused(program_bytes({ block_bytes(0, -1, { var_bytes("rd", { type = 15 }) }) }),
            UNSUPPORTED, "'rd'", "READER")
    refused(program_bytes({ block_bytes(0, -1, { var_bytes("odd", { type = 99 }) }) }),
            FORMAT, "'odd'", "99")
  end)

  it("never crashes on mutated, truncated or random bytes", function()
    -- a fixed LCG so failures reproduce
    local state = 12345
    local function rand(n)
      state = (state * 1103515245 + 12345) % 2147483648
      return state % n
    end
    local base = encode_rich(true)
    local seen = { [OK] = 0, [FORMAT] = 0, [UNSUPPORTED] = 0 }
    local function try(bytes)
      local q, rc, msg = parse(bytes)
      assert(seen[rc], ("unexpected status %s (%s)"):format(tostring(rc), tostring(msg)))
      seen[rc] = seen[rc] + 1
      if q then
        assert.are.equal(OK, C.oar_program_validate(q), lib.last_error())
        serialize(q)
      else
        assert(#msg > 0, "an error without a message")
      end
    end
    for len = 0, #base do try(base:sub(1, len)) end
    for _ = 1, 2000 do
      local pos = rand(#base) + 1
      local mutated = base:sub(1, pos - 1) .. string.char(rand(256)) .. base:sub(pos + 1)
      try(mutated)
    end
    for _ = 1, 500 do
      local t = {}
      for k = 1, rand(80) do t[k] = string.char(rand(256)) end
      try(table.concat(t))
    end
    assert(seen[FORMAT] > 0 and seen[OK] > 0, "the corpus should contain both outcomes")
  end)
end)
