-- tools/gen_ops.lua — turns an op family's declaration (src/ops/<family>.ops)
-- into the C its definition and kernels include (build/ops/<family>.h).
--
--   luajit tools/gen_ops.lua src/ops/fc.ops build/ops/fc.h
--
-- A declaration file is Lua: one `op "<type>" { ... }` call per op type (the
-- fields are listed under `check_op` below; docs/CONTRIBUTING.md walks
-- through one). Beyond the attributes, `fields` adds struct members the
-- decoder computes ("C type name", or "C type name[N]" for an array),
-- `set` assigns them C expressions (a, the struct, and d, the decode
-- context, in scope) and `finish` names a C function of the .c,
-- void f(oar_decode_ctx_t *d, <struct>_t *a), that the decoder calls last
-- for what an expression cannot do (list attrs read into fixed arrays,
-- checked; its failures go through oar_dec_error). A choice attribute
-- with enum = "" names its constants OAR_<P>_<NAME>. From it come, in one header:
--   part 1 (always): the slot indices (enum OAR_<P>_<SLOT>), the choice
--     constants (enum OAR_<P>_<ENUM>_<NAME>) and the typed attribute struct
--     (oar_<p>_attrs_t) that inference and kernels of every place read;
--   part 2 (with OAR_OPS_DEFINE, once, at the end of src/ops/<family>.c):
--     the slot and attribute tables (with their docs), the decoder that
--     fills the struct, the op definition and its registration.
-- The runtime checks every attribute against the table (type, range,
-- choices) wherever a program comes from; the decoder only reads.
local src, dst = arg[1], arg[2]
if not src or not dst then
  io.stderr:write("usage: luajit tools/gen_ops.lua FAMILY.ops OUT.h\n")
  os.exit(2)
end

local ops = {}
local function fail(msg)
  io.stderr:write(("%s: %s\n"):format(src, msg))
  os.exit(1)
end

-- the attribute kinds: C field type, runtime attr type, decoder call
local KINDS = {
  int = { "int32_t", "OAR_ATTR_INT", "oar_dec_i" },
  long = { "int64_t", "OAR_ATTR_LONG", "oar_dec_l" },
  float = { "float", "OAR_ATTR_FLOAT", "oar_dec_f" },
  bool = { "bool", "OAR_ATTR_BOOLEAN", "oar_dec_b" },
  string = { "const char *", "OAR_ATTR_STRING", "oar_dec_s" },
  choice = { "int", "OAR_ATTR_STRING", "oar_dec_choice" },
  ints = { "oar_ints_t", "OAR_ATTR_INTS", "oar_dec_ints" },
  longs = { "oar_longs_t", "OAR_ATTR_LONGS", "oar_dec_longs" },
  floats = { "oar_floats_t", "OAR_ATTR_FLOATS", "oar_dec_floats" },
  strings = { nil, "OAR_ATTR_STRINGS" },
  bools = { nil, "OAR_ATTR_BOOLEANS" },
  block = { nil, "OAR_ATTR_BLOCK" },
  blocks = { nil, "OAR_ATTR_BLOCKS" },
}
local OP_KEYS = { type = 1, prefix = 1, doc = 1, inputs = 1, outputs = 1, attrs = 1, paddle_attrs = 1, infer = 1,
                  grad = 1, dtype_slot = 1, flags = 1, run = 1, struct = 1, fields = 1, set = 1, finish = 1 }
local SLOT_KEYS = { [1] = 1, [2] = 1, dispensable = 1, duplicable = 1, enum = 1 }
local ATTR_KEYS = { [1] = 1, [2] = 1, [3] = 1, doc = 1, min = 1, max = 1, choices = 1, names = 1, field = 1,
                    enum = 1, required = 1, decode = 1, ctype = 1 }

local function c_ident(s) return (s:gsub("@GRAD", "_GRAD"):gsub("[^%w]", "_")) end

local function check_keys(t, allowed, what)
  for k in pairs(t) do
    if not allowed[k] then fail(("%s: unknown field '%s'"):format(what, tostring(k))) end
  end
end

local function check_op(o)
  check_keys(o, OP_KEYS, "op " .. o.type)
  if type(o.doc) ~= "string" or #o.doc < 10 then fail("op " .. o.type .. ": doc (a sentence or more) is required") end
  o.prefix = o.prefix or c_ident(o.type):upper()
  o.struct = o.struct or ("oar_" .. o.prefix:lower() .. "_attrs")
  for _, side in ipairs({ "inputs", "outputs" }) do
    o[side] = o[side] or {}
    local seen = {}
    for i, s in ipairs(o[side]) do
      local what = ("op %s: %s[%d]"):format(o.type, side, i)
      check_keys(s, SLOT_KEYS, what)
      if type(s[1]) ~= "string" then fail(what .. ": the slot's name comes first") end
      if type(s[2]) ~= "string" then fail(what .. " (" .. s[1] .. "): a doc string comes second") end
      s.enum = s.enum or c_ident(s[1]):upper()
      if seen[s.enum] then fail(what .. ": two slots map to the enum name " .. s.enum) end
      seen[s.enum] = true
    end
  end
  o.attrs = o.attrs or {}
  local fields = {}
  for i, a in ipairs(o.attrs) do
    local what = ("op %s: attrs[%d]"):format(o.type, i)
    check_keys(a, ATTR_KEYS, what)
    if type(a[1]) ~= "string" then fail(what .. ": the attribute's name comes first") end
    what = what .. " (" .. a[1] .. ")"
    local k = KINDS[a[2]]
    if not k then fail(what .. ": unknown kind '" .. tostring(a[2]) .. "'") end
    if type(a.doc) ~= "string" then fail(what .. ": doc is required") end
    if a[2] == "choice" then
      if type(a.choices) ~= "table" or #a.choices < 1 then fail(what .. ": a choice needs choices = {...}") end
      a.names = a.names or {}
      for j, c in ipairs(a.choices) do
        a.names[j] = a.names[j] or (c == "" and "NONE" or c_ident(c):upper())
      end
    elseif a.choices then
      fail(what .. ": choices belong to kind 'choice'")
    end
    if a.decode == nil then a.decode = k[1] ~= nil end
    if a.decode and not k[1] then fail(what .. ": kind " .. a[2] .. " cannot be decoded into the struct") end
    a.field = a.field or c_ident(a[1])
    if a.decode then
      if fields[a.field] then fail(what .. ": field " .. a.field .. " twice") end
      fields[a.field] = true
    end
    a.enum = a.enum or a.field:upper()
  end
  if o.finish and type(o.finish) ~= "string" then fail("op " .. o.type .. ": finish is a C function's name") end
  if o.finish and not o.fields then fail("op " .. o.type .. ": finish fills fields: declare them") end
  if not o.infer and not o.run then fail("op " .. o.type .. ": infer (a C function name) is required") end
end

-- what a declaration file may use: `op`, and plain Lua for loops and tables
local env = setmetatable({
  ipairs = ipairs, pairs = pairs, type = type, tostring = tostring, tonumber = tonumber, select = select,
  unpack = unpack, error = error, assert = assert, table = table, string = string, math = math,
  op = function(type_name)
    return function(t)
      if type(t) ~= "table" then fail("op " .. tostring(type_name) .. " { ... } expected") end
      t.type = type_name
      ops[#ops + 1] = t
    end
  end,
}, { __index = function(_, k) fail("unknown name '" .. tostring(k) .. "'") end })

local chunk, err = loadfile(src)
if not chunk then fail(err) end
setfenv(chunk, env)
chunk()
if #ops == 0 then fail("declares no op") end
for _, o in ipairs(ops) do check_op(o) end

-- ---- C text ---------------------------------------------------------------
local out = {}
local function w(fmt, ...) out[#out + 1] = select("#", ...) > 0 and fmt:format(...) or fmt end
local function cstr(s)
  if s == nil then return "NULL" end
  return '"' .. s:gsub("\\", "\\\\"):gsub('"', '\\"'):gsub("\n", "\\n") .. '"'
end
local function num(v)
  if type(v) == "boolean" then return v and "1" or "0" end
  if type(v) == "number" then
    if v == math.huge then return "INFINITY" elseif v == -math.huge then return "-INFINITY" end
    return ("%.17g"):format(v)
  end
  return tostring(v)   -- a C expression: "OAR_MAX_DIMS"
end

local family = src:match("([^/]+)%.ops$") or fail("the file name must end in .ops")
local guard = "OAR_OPS_GEN_" .. c_ident(family):upper()

w("/* generated from %s by tools/gen_ops.lua: edit the declaration, not this file */", src)
w("#ifndef %s_TYPES", guard)
w("#define %s_TYPES", guard)
w("#include <stdbool.h>")
w("#include <stdint.h>")
w('#include "op.h"')
-- ops of one family may share slot enums (the same prefix and slots) and
-- an attribute struct (the same `struct`: its fields are the union of theirs)
local const_value = {}
local function enum_line(names_values)
  local e = {}
  for _, nv in ipairs(names_values) do
    local prev = const_value[nv[1]]
    if prev and prev ~= nv[2] then fail(("%s is %d in one op and %d in another"):format(nv[1], prev, nv[2])) end
    if not prev then e[#e + 1] = ("%s = %d"):format(nv[1], nv[2]) end
    const_value[nv[1]] = nv[2]
  end
  if #e > 0 then w("enum { %s };", table.concat(e, ", ")) end
end
local structs, struct_order = {}, {}
for _, o in ipairs(ops) do
  local first = o.doc:gsub("%s+", " "):match("^(.-%.)%s") or o.doc:gsub("%s+", " ")
  local mark = #out
  w("")
  w("/* ---- %s: %s */", o.type, (first:gsub("%*/", "* /")))
  for _, side in ipairs({ "inputs", "outputs" }) do
    if #o[side] > 0 then
      local e = {}
      for i, s in ipairs(o[side]) do e[i] = { ("OAR_%s_%s"):format(o.prefix, s.enum), i - 1 } end
      enum_line(e)
    end
  end
  local decoded = {}
  for _, a in ipairs(o.attrs) do
    if a[2] == "choice" then
      local e = {}
      local mid = a.enum == "" and "" or (a.enum .. "_")
      for j, n in ipairs(a.names) do e[j] = { ("OAR_%s_%s%s"):format(o.prefix, mid, n), j - 1 } end
      enum_line(e)
    end
    if a.decode then decoded[#decoded + 1] = a end
  end
  o.decoded = decoded
  if #out == mark + 2 then out[#out] = nil; out[#out] = nil end   -- nothing new: no heading
  if #decoded > 0 or o.fields then
    local st = structs[o.struct]
    if not st then
      st = { fields = {}, by_name = {} }
      structs[o.struct] = st
      struct_order[#struct_order + 1] = o.struct
    end
    local function add(ct, field, comment, dims)
      dims = dims or ""
      local have = st.by_name[field]
      if have then
        if have.ct ~= ct or have.dims ~= dims then
          fail(("%s.%s is %s%s in one op and %s%s in another"):format(o.struct, field, have.ct, have.dims, ct, dims))
        end
        if comment and not have.seen[comment] then
          have.seen[comment] = true
          have.comment = have.comment == "" and comment or have.comment .. ", " .. comment
        end
        return
      end
      local f = { ct = ct, field = field, dims = dims, comment = comment or "",
                  seen = comment and { [comment] = true } or {} }
      st.by_name[field] = f
      st.fields[#st.fields + 1] = f
    end
    for _, a in ipairs(decoded) do
      add(a.ctype or KINDS[a[2]][1], a.field, a[1] ..
        (a[2] == "choice" and (": OAR_" .. o.prefix .. "_" .. (a.enum == "" and "" or (a.enum .. "_")) .. "*") or ""))
    end
    for _, f in ipairs(o.fields or {}) do
      local ct, field, dims = f:match("^(.-)%s*([%w_]+)%s*(%[[%w_]+%])$")
      if not ct then ct, field = f:match("^(.-)%s*([%w_]+)$") end
      if not ct or ct == "" then
        fail("op " .. o.type .. ": fields entries are 'C type name' or 'C type name[N]'")
      end
      add(ct, field, o.set and o.set[field] and ("set by " .. o.type) or
          (o.finish and ("set by " .. o.finish)) or nil, dims)
    end
  end
end
for _, name in ipairs(struct_order) do
  w("")
  w("typedef struct %s {", name)
  for _, f in ipairs(structs[name].fields) do
    w("    %s%s%s%s;%s", f.ct, f.ct:sub(-1) == "*" and "" or " ", f.field, f.dims,
      f.comment ~= "" and ("   /* " .. f.comment .. " */") or "")
  end
  w("} %s_t;", name)
end
w("#endif")
w("")
w("#if defined(OAR_OPS_DEFINE) && !defined(%s_DEFS)", guard)
w("#define %s_DEFS", guard)
w("#include <math.h>")
w('#include "ops/paddle_attrs.h"')
for _, o in ipairs(ops) do
  local id = c_ident(o.type)
  w("")
  for _, side in ipairs({ "inputs", "outputs" }) do
    w("static const oar_slot_def_t %s_%s_decl[] = {", id, side)
    for _, s in ipairs(o[side]) do
      local fl = {}
      if s.duplicable then fl[#fl + 1] = "OAR_SLOT_DUPLICABLE" end
      if s.dispensable then fl[#fl + 1] = "OAR_SLOT_DISPENSABLE" end
      w("    {%s, %s, %s},", cstr(s[1]), #fl > 0 and table.concat(fl, " | ") or "0", cstr(s[2]))
    end
    w("    {NULL, 0, NULL}};")
  end
  w("static const oar_attr_def_t %s_attrs_decl[] = {", id)
  for _, a in ipairs(o.attrs) do
    local def, def_str = "0", "NULL"
    if a[2] == "string" or a[2] == "choice" then def_str = cstr(a[3] or "")
    elseif a[3] ~= nil and type(a[3]) ~= "table" then def = num(a[3]) end
    w("    {.name = %s, .type = %s, .def = %s, .def_str = %s, .required = %s, .min = %s, .max = %s, .choices = %s,",
      cstr(a[1]), KINDS[a[2]][2], def, def_str, a.required and "true" or "false", num(a.min or 0), num(a.max or 0),
      a.choices and cstr(table.concat(a.choices, "|")) or "NULL")
    w("     .doc = %s},", cstr(a.doc))
  end
  for _, p in ipairs(o.paddle_attrs or {}) do w("    %s,", p) end
  w("    {.name = NULL}};")
  local has_struct = #o.decoded > 0 or o.fields ~= nil
  if has_struct then
    w("static int %s_decode_decl(oar_decode_ctx_t *d, void *out) {", id)
    w("    %s_t *a = out;", o.struct)
    w("    (void)a;")
    for _, a in ipairs(o.decoded) do w("    a->%s = %s(d, %s);", a.field, KINDS[a[2]][3], cstr(a[1])) end
    local keys = {}
    for k in pairs(o.set or {}) do keys[#keys + 1] = k end
    table.sort(keys)
    for _, k in ipairs(keys) do w("    a->%s = %s;", k, tostring(o.set[k])) end
    if o.finish then w("    %s(d, a);", o.finish) end
    w("    return oar_dec_status(d);")
    w("}")
  end
  local flags = o.flags or "0"
  w("static const oar_op_def_t %s_def_decl = {", id)
  w("    .type = %s, .doc = %s,", cstr(o.type), cstr((o.doc:gsub("%s+", " "):gsub("^ ", ""))))
  w("    .inputs = %s_inputs_decl, .outputs = %s_outputs_decl, .attrs = %s_attrs_decl,", id, id, id)
  w("    .infer = %s, .grad = %s, .dtype_slot = %s, .flags = %s, .run = %s,", o.infer or "NULL",
    o.grad or "NULL", cstr(o.dtype_slot), flags, o.run or "NULL")
  if has_struct then
    w("    .attrs_size = sizeof(%s_t), .decode = %s_decode_decl};", o.struct, id)
  else
    w("    .attrs_size = 0, .decode = NULL};")
  end
  w("OAR_REGISTER_OP(%s_def_decl)", id)
end
w("#endif")

local tmp = dst .. ".tmp"
local f = assert(io.open(tmp, "w"))
f:write(table.concat(out, "\n"), "\n")
f:close()
assert(os.rename(tmp, dst))
