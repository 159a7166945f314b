-- Refusing bad input: malformed programs, corrupt tensor files, absurd
-- shapes, wrong feeds, out-of-range indices, integer division by zero and
-- wrong-typed arguments to every public function family. Each case asserts
-- a clear error (its message matched) and then runs a small valid program to
-- show the process keeps working.
local ffi = require("ffi")
local bit = require("bit")
local oar = require("oar")
local layers = oar.layers
local C = require("oar.lib").C
local F = require("spec.helpers.files")

-- ---- the liveness probe ---------------------------------------------------------
local probe_prog, probe_out
do
  probe_prog = oar.Program()
  oar.program_guard(probe_prog, oar.Program(), function()
    local x = layers.data{ name = "x", shape = { 3 }, append_batch_size = false }
    probe_out = layers.scale{ x = x, scale = 2, bias = 1 }
  end)
end
local probe_exe = oar.Executor()
local function alive()
  local r = probe_exe:run(probe_prog, { feed = { x = { 1, 2, 3 } }, fetch_list = { probe_out }, scope = oar.Scope() })
  assert.same({ 3, 5, 7 }, r[1]:totable())
end

-- fn must raise an error matching every pattern; then the runtime must still work
local function refuses(fn, ...)
  local ok, err = pcall(fn)
  assert.is_false(ok, "expected an error")
  err = tostring(err)
  for _, pat in ipairs({ ... }) do
    assert.is_truthy(err:find(pat), string.format("error %q does not match %q", err, pat))
  end
  alive()
  return err
end

-- ---- protobuf bytes built by hand (framework.proto field numbers) -----------------
local function varint(n)
  n = ffi.new("uint64_t", n)
  local out = {}
  repeat
    local b = tonumber(bit.band(n, 0x7f))
    n = bit.rshift(n, 7)
    if n ~= 0 then b = b + 0x80 end
    out[#out + 1] = string.char(b)
  until n == 0
  return table.concat(out)
end
local function key(field, wt) return varint(field * 8 + wt) end
local function vint(field, n) return key(field, 0) .. varint(n) end
local function bytes(field, s) return key(field, 2) .. varint(#s) .. s end
local function msg(...) return table.concat({ ... }) end

local function tensor_desc(dtype, dims)
  local parts = { vint(1, dtype) }
  for _, d in ipairs(dims or {}) do parts[#parts + 1] = vint(2, d) end
  return table.concat(parts)
end
local function var(name, vtype, dtype, dims, extra)
  local vt = vint(1, vtype or 7)
  if (vtype or 7) == 7 then vt = vt .. bytes(3, bytes(1, tensor_desc(dtype or 5, dims))) end
  return bytes(1, name) .. bytes(2, vt) .. (extra or "")
end
local function slot(param, args)
  local s = bytes(1, param)
  for _, a in ipairs(args) do s = s .. bytes(2, a) end
  return s
end
local function op(type_, inputs, outputs, attrs)
  local s = ""
  for p, a in pairs(inputs or {}) do s = s .. bytes(1, slot(p, a)) end
  for p, a in pairs(outputs or {}) do s = s .. bytes(2, slot(p, a)) end
  s = s .. bytes(3, type_)
  for _, at in ipairs(attrs or {}) do s = s .. bytes(4, at) end
  return s
end
local function block(idx, parent, vars, ops, fwd)
  local s = vint(1, idx) .. vint(2, parent)
  for _, v in ipairs(vars or {}) do s = s .. bytes(3, v) end
  for _, o in ipairs(ops or {}) do s = s .. bytes(4, o) end
  if fwd then s = s .. vint(5, fwd) end
  return s
end
local function program(...)
  local s = ""
  for _, b in ipairs({ ... }) do s = s .. bytes(1, b) end
  return s
end
local function neg(n) return ffi.cast("uint64_t", ffi.new("int64_t", n)) end
local NEG1 = neg(-1)     -- int32 -1 as protobuf writes it (10 bytes)

-- ---- tensor records built by hand (Fluid's LoDTensor stream) ----------------------
local function u32(n) local b = ffi.new("uint32_t[1]", n) return ffi.string(b, 4) end
local function u64(n) local b = ffi.new("uint64_t[1]", n) return ffi.string(b, 8) end
local function i32(n) local b = ffi.new("int32_t[1]", n) return ffi.string(b, 4) end
local function f32s(list) local b = ffi.new("float[?]", #list, list) return ffi.string(b, 4 * #list) end
local function record(opts)
  local s = u32(opts.version or 0) .. u64(#(opts.lod or {}))
  for _, level in ipairs(opts.lod or {}) do
    s = s .. u64(8 * #level)
    for _, o in ipairs(level) do s = s .. u64(o) end
  end
  local desc = opts.desc or tensor_desc(opts.dtype or 5, opts.dims)
  s = s .. u32(opts.tversion or 0) .. i32(opts.dlen or #desc) .. desc .. (opts.data or "")
  return s
end

local tmpdir, write_bytes = F.tmpdir, F.write_bytes

-- a program declaring `name` as float32 `shape`, and the load of it from dir
local function load_into(dir, name, shape, dtype)
  local prog = oar.Program()
  prog:global_block():create_var{ name = name, shape = shape, dtype = dtype or "float32", persistable = true }
  local scope = oar.Scope()
  oar.io.load_vars(oar.Executor(), dir, prog, { name }, { scope = scope })
  return scope
end

describe("adversarial programs (Program.parse)", function()
  local good = program(block(0, NEG1, { var("x", 7, 5, { 2 }) },
    { op("relu", { X = { "x" } }, { Out = { "x" } }) }))

  it("accepts the hand-built baseline program", function()
    local p = oar.Program.parse(good)
    assert.equal(1, p:num_blocks())
    assert.equal("relu", p:global_block():ops()[1].type)
  end)

  it("refuses random bytes", function()
    refuses(function() oar.Program.parse("\255\254\253 not a protobuf \1\2\3") end,
      "Program.parse: malformed ProgramDesc")
  end)

  it("refuses a truncated program", function()
    refuses(function() oar.Program.parse(good:sub(1, #good - 5)) end, "malformed ProgramDesc", "truncated")
  end)

  it("refuses an empty program and non-string input", function()
    refuses(function() oar.Program.parse("") end, "no blocks")
    refuses(function() oar.Program.parse(nil) end, "'bytes' must be a string")
    refuses(function() oar.Program.parse({}) end, "'bytes' must be a string")
  end)

  it("refuses a block whose idx is not its position", function()
    refuses(function() oar.Program.parse(program(block(1, NEG1))) end, "block at position 0 has idx 1")
  end)

  it("refuses a global block with a parent", function()
    refuses(function() oar.Program.parse(program(block(0, 0))) end, "block 0 has parent_idx 0")
  end)

  it("refuses parent chains that loop or leave the program", function()
    refuses(function() oar.Program.parse(program(block(0, NEG1), block(1, 2), block(2, 1))) end,
      "parent chain of block 1 loops")
    refuses(function() oar.Program.parse(program(block(0, NEG1), block(1, 7))) end, "block 1 has parent_idx 7")
    refuses(function() oar.Program.parse(program(block(0, NEG1), block(1, 0, nil, nil, 9))) end,
      "forward_block_idx 9")
  end)

  it("refuses an op type that is not registered", function()
    refuses(function()
      oar.Program.parse(program(block(0, NEG1, { var("x") }, { op("no_such_op", { X = { "x" } }, {}) })))
    end, "op type 'no_such_op' is not registered")
  end)

  it("refuses an op reading an undeclared variable", function()
    refuses(function()
      oar.Program.parse(program(block(0, NEG1, { var("x") }, { op("relu", { X = { "ghost" } }, { Out = { "x" } }) })))
    end, "names var 'ghost', which is declared neither in block 0")
  end)

  it("refuses a variable declared twice", function()
    refuses(function() oar.Program.parse(program(block(0, NEG1, { var("x"), var("x") }))) end,
      "block 0: variable 'x' already exists")
  end)

  it("refuses an attr of the wrong type", function()
    -- STRING where scale declares FLOAT (an INT would be converted exactly, as insertion does)
    local attr = bytes(1, "scale") .. vint(2, 2) .. bytes(5, "two")
    refuses(function()
      oar.Program.parse(program(block(0, NEG1, { var("x") }, { op("scale", { X = { "x" } }, { Out = { "x" } }, { attr }) })))
    end, "'scale'", "attr 'scale' must be FLOAT, got STRING")
  end)

  it("refuses an attr of an unknown attr type", function()
    local attr = bytes(1, "whatever") .. vint(2, 42)
    refuses(function()
      oar.Program.parse(program(block(0, NEG1, { var("x") }, { op("relu", { X = { "x" } }, { Out = { "x" } }, { attr }) })))
    end, "attr 'whatever' has unknown type 42")
  end)

  it("refuses sub-block references to block 0, the op's own block, or no block", function()
    for _, target in ipairs({ 0, 1, 5 }) do
      local attr = bytes(1, "sub_block") .. vint(2, 8) .. vint(12, target)
      refuses(function()
        oar.Program.parse(program(block(0, NEG1, { var("x") }),
          block(1, 0, nil, { op("relu", { X = { "x" } }, { Out = { "x" } }, { attr }) })))
      end, "attr 'sub_block' names block " .. target)
    end
  end)

  it("refuses absurd variable shapes: rank, overflowing products (dims below -1 read as unknown)", function()
    local dims = {}
    for i = 1, 40 do dims[i] = 2 end
    refuses(function() oar.Program.parse(program(block(0, NEG1, { var("x", 7, 5, dims) }))) end, "rank 40")
    -- a dim below -1 is what Paddle writes for a product of unknown dims
    -- (instance_norm's SavedMean [N * C] = [-3]): read as unknown, not refused
    local p = oar.Program.parse(program(block(0, NEG1, { var("x", 7, 5, { 3, neg(-5) }) })))
    assert.are.same({ 3, -1 }, p:global_block():var("x").shape)
    refuses(function()
      oar.Program.parse(program(block(0, NEG1, { var("x", 7, 5, { 2 ^ 40, 2 ^ 40 }) })))
    end, "var 'x': shape %[1099511627776, 1099511627776%] has more elements than int64 holds")
  end)

  it("refuses unknown variable kinds and element types", function()
    refuses(function() oar.Program.parse(program(block(0, NEG1, { var("x", 99) }))) end, "var 'x' has type unknown %(99%), not a variable kind")
    refuses(function() oar.Program.parse(program(block(0, NEG1, { var("x", 7, 77) }))) end,
      "var 'x' has dtype 77, not a tensor element type")
  end)
end)

describe("adversarial tensor files", function()
  local dir
  before_each(function()
    dir = tmpdir()
    os.execute("mkdir '" .. dir .. "'")
  end)
  after_each(function() os.execute("rm -rf '" .. dir .. "'") end)

  local good = record{ dims = { 3 }, data = f32s({ 1, 2, 3 }) }

  it("loads the hand-built baseline record (Fluid's format without a trailer)", function()
    write_bytes(dir .. "/t", good)
    local s = load_into(dir, "t", { 3 })
    assert.same({ 1, 2, 3 }, s:find_var("t"):get_tensor():totable())
  end)

  it("refuses a truncated file", function()
    write_bytes(dir .. "/t", good:sub(1, #good - 2))
    refuses(function() load_into(dir, "t", { 3 }) end, "load_vars: ", "the shape needs 3 elements of float32, but only 10 bytes follow")
  end)

  it("refuses an empty file", function()
    write_bytes(dir .. "/t", "")
    refuses(function() load_into(dir, "t", { 3 }) end, "truncated tensor record: version needs 4 bytes")
  end)

  it("refuses unknown format versions", function()
    write_bytes(dir .. "/t", record{ version = 1, dims = { 3 }, data = f32s({ 1, 2, 3 }) })
    refuses(function() load_into(dir, "t", { 3 }) end, "unsupported LoDTensor version 1")
    write_bytes(dir .. "/t", record{ tversion = 7, dims = { 3 }, data = f32s({ 1, 2, 3 }) })
    refuses(function() load_into(dir, "t", { 3 }) end, "unsupported tensor version 7")
  end)

  it("refuses bad LoD: decreasing, not ending at the row count, absurd level counts", function()
    write_bytes(dir .. "/t", record{ lod = { { 0, 2, 1, 3 } }, dims = { 3 }, data = f32s({ 1, 2, 3 }) })
    refuses(function() load_into(dir, "t", { 3 }) end, dir .. "/t: ", "LoD level 0 decreases at position 2")
    write_bytes(dir .. "/t", record{ lod = { { 0, 2 } }, dims = { 3 }, data = f32s({ 1, 2, 3 }) })
    refuses(function() load_into(dir, "t", { 3 }) end, dir .. "/t: ", "LoD")
    write_bytes(dir .. "/t", u32(0) .. u64(ffi.new("uint64_t", 2 ^ 60)) .. good:sub(13))
    refuses(function() load_into(dir, "t", { 3 }) end, "LoD levels %(at most")
    write_bytes(dir .. "/t", u32(0) .. u64(1) .. u64(2 ^ 50) .. good:sub(13))
    refuses(function() load_into(dir, "t", { 3 }) end, "LoD level 0 claims")
  end)

  it("refuses a size that does not match the declared shape or dtype", function()
    write_bytes(dir .. "/t", good)
    refuses(function() load_into(dir, "t", { 4 }) end, "'t' in '.*' has shape %[3%], the program declares %[4%]")
    refuses(function() load_into(dir, "t", { 3 }, "int32") end, "'t' in '.*' is float32, the program declares int32")
    write_bytes(dir .. "/t", good .. "junk")
    refuses(function() load_into(dir, "t", { 3 }) end, "has 4 bytes after the 1 tensor")
  end)

  it("refuses a flipped checksum, and a flipped data byte under a good trailer", function()
    local t = oar.Tensor({ 1, 2, 3 }, "float32")
    local b, n = ffi.new("void *[1]"), ffi.new("size_t[1]")
    assert.equal(0, C.oar_tensor_serialize(t.handle, b, n))
    local rec = ffi.string(b[0], n[0])
    C.oar_free(b[0])
    write_bytes(dir .. "/t", rec:sub(1, #rec - 1) .. string.char(bit.bxor(rec:byte(#rec), 1)))
    refuses(function() load_into(dir, "t", { 3 }) end, "checksum mismatch %(file corrupted%)")
    write_bytes(dir .. "/t", rec:sub(1, #rec - 14) .. string.char(bit.bxor(rec:byte(#rec - 13), 0x40)) .. rec:sub(#rec - 12))
    refuses(function() load_into(dir, "t", { 3 }) end, "checksum mismatch")
  end)

  it("refuses absurd dims, unknown dtypes and a bad TensorDesc", function()
    write_bytes(dir .. "/t", record{ dims = { 2 ^ 30, 2 ^ 30 }, data = f32s({ 1 }) })
    refuses(function() load_into(dir, "t", { 3 }) end, dir .. "/t: the shape needs 1152921504606846976 elements")
    write_bytes(dir .. "/t", record{ dims = { 2 ^ 40, 2 ^ 40 }, data = f32s({ 1 }) })
    refuses(function() load_into(dir, "t", { 3 }) end, dir .. "/t: ", "overflows int64")
    write_bytes(dir .. "/t", record{ dtype = 55, dims = { 3 }, data = f32s({ 1, 2, 3 }) })
    refuses(function() load_into(dir, "t", { 3 }) end, "unknown tensor data type 55")
    write_bytes(dir .. "/t", record{ dlen = -4, dims = { 3 }, data = f32s({ 1, 2, 3 }) })
    refuses(function() load_into(dir, "t", { 3 }) end, "TensorDesc length %-4 is invalid")
    write_bytes(dir .. "/t", record{ desc = "\255\255\255", dims = { 3 }, data = f32s({ 1, 2, 3 }) })
    refuses(function() load_into(dir, "t", { 3 }) end, "malformed TensorDesc")
  end)

  it("refuses a directory where a file should be", function()
    os.execute("mkdir '" .. dir .. "/t'")
    refuses(function() load_into(dir, "t", { 3 }) end, "is not a regular file")
  end)

  it("refuses bad bytes given straight to the C deserializer", function()
    local out, used = ffi.new("oar_tensor_t *[1]"), ffi.new("size_t[1]")
    for _, s in ipairs({ "", "\0\0\0", good:sub(1, 20), u32(9) .. good:sub(5) }) do
      assert.is_true(C.oar_tensor_deserialize(s, #s, used, out) < 0)
      assert.is_truthy(ffi.string(C.oar_last_error()):find("tensor bytes"))
      alive()
    end
    assert.is_true(C.oar_tensor_deserialize(good, #good, nil, nil) < 0)
    assert.is_true(C.oar_tensor_deserialize(nil, 5, used, out) < 0)
  end)
end)

describe("adversarial shapes and sizes", function()
  it("layers.data with shape {2^40, 2^40}: a clear error, not a crash", function()
    refuses(function()
      local prog = oar.Program()
      oar.program_guard(prog, oar.Program(), function()
        local x = layers.data{ name = "x", shape = { 2 ^ 40, 2 ^ 40 } }
        local s = layers.reduce_sum{ input = x }
        oar.Executor():run(prog, { feed = { x = oar.Tensor{ shape = { 1, 1, 1 } } }, fetch_list = { s } })
      end)
    end, "more elements than int64 holds")
    refuses(function()
      local prog = oar.Program()
      oar.program_guard(prog, oar.Program(), function()
        local x = layers.data{ name = "x", shape = { 2 ^ 30, 2 ^ 30 }, append_batch_size = false }
        local s = layers.reduce_sum{ input = x }
        oar.Executor():run(prog, { feed = { x = oar.Tensor{ shape = { 1, 1 } } }, fetch_list = { s } })
      end)
    end, "feed 'x' expects shape %[1073741824, 1073741824%], got %[1, 1%]")
  end)

  it("Tensor{shape={1e12}}: a clear out-of-memory error", function()
    refuses(function() oar.Tensor{ shape = { 1e12 } } end, "Tensor: tensor of shape %[1000000000000%]", "exceeds")
    refuses(function() oar.Tensor{ shape = { 2 ^ 40, 2 ^ 40 } } end, "overflows int64")
  end)

  it("an op asked for 2^40 elements at run time: a clear error", function()
    refuses(function()
      local prog = oar.Program()
      local o
      oar.program_guard(prog, oar.Program(), function()
        o = layers.fill_constant{ shape = { 2 ^ 20, 2 ^ 20 }, dtype = "float32", value = 1 }
      end)
      oar.Executor():run(prog, { fetch_list = { o } })
    end, "op 'fill_constant'", "exceeds")
    refuses(function()
      local prog = oar.Program()
      oar.program_guard(prog, oar.Program(), function()
        layers.fill_constant{ shape = { 2 ^ 40, 2 ^ 40 }, dtype = "float32", value = 1 }
      end)
    end, "op 'fill_constant'", "shape %[1099511627776, 1099511627776%] has more elements than int64 holds")
  end)
end)

describe("adversarial feeds", function()
  local prog, out
  setup(function()
    prog = oar.Program()
    oar.program_guard(prog, oar.Program(), function()
      local x = layers.data{ name = "x", shape = { 2 } }
      out = layers.scale{ x = x, scale = 3 }
    end)
  end)
  local exe = oar.Executor()

  it("wrong dtype", function()
    refuses(function() exe:run(prog, { feed = { x = oar.Tensor({ { 1, 2 } }, "float64") }, fetch_list = { out } }) end,
      "feed 'x' expects dtype float32, got float64")
    refuses(function() exe:run(prog, { feed = { x = oar.Tensor({ { 1, 2 } }, "int64") }, fetch_list = { out } }) end,
      "feed 'x' expects dtype float32, got int64")
  end)

  it("wrong shape, ragged tables, strings and unknown names", function()
    refuses(function() exe:run(prog, { feed = { x = { { 1, 2, 3 } } }, fetch_list = { out } }) end,
      "feed 'x' expects shape %[%-1, 2%], got %[1, 3%]")
    refuses(function() exe:run(prog, { feed = { x = { { 1, 2 }, { 3 } } }, fetch_list = { out } }) end, "ragged table")
    refuses(function() exe:run(prog, { feed = { x = "1,2" }, fetch_list = { out } }) end,
      "feed 'x' must be an oar Tensor or a nested table of numbers")
    refuses(function() exe:run(prog, { feed = { x = { { "a", "b" } } }, fetch_list = { out } }) end, "expected numbers at depth 3, got string")
    refuses(function() exe:run(prog, { feed = { nope = { { 1, 2 } } }, fetch_list = { out } }) end,
      "feed 'nope' is not a variable of the program")
  end)
end)

describe("adversarial indices and integer arithmetic", function()
  local exe = oar.Executor()

  it("lookup_table ids out of range", function()
    local prog, st = oar.Program(), oar.Program()
    local o
    oar.program_guard(prog, st, function()
      local ids = layers.data{ name = "ids", shape = { 1 }, dtype = "int64" }
      o = layers.embedding{ input = ids, size = { 10, 3 } }
    end)
    local scope = oar.Scope()
    exe:run(st, { scope = scope })
    for _, bad in ipairs({ 10, -1, 2 ^ 40 }) do
      refuses(function()
        exe:run(prog, { feed = { ids = oar.Tensor({ { 3 }, { bad } }, "int64") }, fetch_list = { o }, scope = scope })
      end, "op 'lookup_table'", "out of range %[0, 10%)")
    end
  end)

  it("cross_entropy labels out of range", function()
    local prog = oar.Program()
    local o
    oar.program_guard(prog, oar.Program(), function()
      local p = layers.data{ name = "p", shape = { 3 } }
      local l = layers.data{ name = "l", shape = { 1 }, dtype = "int64" }
      o = layers.cross_entropy{ input = p, label = l }
    end)
    for _, bad in ipairs({ 3, -7 }) do
      refuses(function()
        exe:run(prog, { feed = { p = { { 0.2, 0.3, 0.5 } }, l = oar.Tensor({ { bad } }, "int64") }, fetch_list = { o } })
      end, "op 'cross_entropy'", "holds " .. tostring(bad):gsub("%-", "%%-") .. " at row 0, outside %[0, 3%)")
    end
  end)

  it("gather index out of range", function()
    local prog = oar.Program()
    local o
    oar.program_guard(prog, oar.Program(), function()
      local b = prog:global_block()
      local x = layers.data{ name = "gx", shape = { 3, 2 }, append_batch_size = false }
      local i = layers.data{ name = "gi", shape = { 2 }, dtype = "int64", append_batch_size = false }
      o = b:create_var{ name = "gout", dtype = "float32" }
      b:append_op{ type = "gather", inputs = { X = { x }, Index = { i } }, outputs = { Out = { o } } }
    end)
    local r = exe:run(prog, { feed = { gx = { { 1, 2 }, { 3, 4 }, { 5, 6 } }, gi = oar.Tensor({ 2, 0 }, "int64") },
      fetch_list = { o } })
    assert.same({ { 5, 6 }, { 1, 2 } }, r[1]:totable())
    for _, bad in ipairs({ 3, -1 }) do
      refuses(function()
        exe:run(prog, { feed = { gx = { { 1, 2 }, { 3, 4 }, { 5, 6 } }, gi = oar.Tensor({ 0, bad }, "int64") },
          fetch_list = { o } })
      end, "op 'gather'", tostring(bad))
    end
  end)

  it("concat axis out of range", function()
    refuses(function()
      oar.program_guard(oar.Program(), oar.Program(), function()
        local a = layers.data{ name = "a", shape = { 3 } }
        layers.concat{ input = { a, a }, axis = 5 }
      end)
    end, "op 'concat'", "axis = 5 is out of range")
  end)

  it("integer division by zero (and INT_MIN / -1 does not trap)", function()
    for _, dt in ipairs({ "int32", "int64" }) do
      local prog = oar.Program()
      local o
      oar.program_guard(prog, oar.Program(), function()
        local a = layers.data{ name = "a", shape = { 2 }, dtype = dt, append_batch_size = false }
        local b = layers.data{ name = "b", shape = { 2 }, dtype = dt, append_batch_size = false }
        o = layers.elementwise_div{ x = a, y = b }
      end)
      refuses(function()
        exe:run(prog, { feed = { a = oar.Tensor({ 7, 1 }, dt), b = oar.Tensor({ 2, 0 }, dt) }, fetch_list = { o } })
      end, "op 'elementwise_div'", "integer division by zero")
      local a = oar.Tensor({ 1, 9 }, dt)
      a:data()[0] = dt == "int32" and -2147483648 or -9223372036854775807LL - 1
      local r = exe:run(prog, { feed = { a = a, b = oar.Tensor({ -1, 3 }, dt) }, fetch_list = { o } })
      assert.equal(3, tonumber(r[1]:data()[1]))
      alive()
    end
  end)
end)

describe("wrong-typed arguments from Lua", function()
  local exe = oar.Executor()

  it("layers", function()
    refuses(function() layers.fc(nil) end, "fc")
    refuses(function() layers.fc{ input = 5, size = 3 } end, "fc")
    refuses(function()
      oar.program_guard(oar.Program(), oar.Program(), function()
        local x = layers.data{ name = "x", shape = { 2 } }
        layers.fc{ input = x, size = "three" }
      end)
    end, "size")
    refuses(function() layers.data{ shape = { 2 } } end, "name")
    refuses(function() layers.data{ name = "x", shape = "2" } end, "shape")
    refuses(function() layers.relu("x") end, "relu")
    refuses(function() layers.mean({}) end, "mean")
  end)

  it("Executor.run", function()
    refuses(function() exe:run(5) end, "'program' must be a Program")
    refuses(function() exe:run(oar.Program(), { feed = 5 }) end, "'feed' must be a table")
    refuses(function() exe:run(oar.Program(), { fetch_list = { 5 } }) end, "fetch_list")
    refuses(function() exe:run(oar.Program(), { scope = "global" }) end, "'scope' must be an oar Scope")
    refuses(function() exe.run(nil, oar.Program()) end, "Executor:run: call it with ':'")
    refuses(function() exe:run(oar.Program(), { fetch_list = { "nothing" } }) end, "fetch 'nothing' is not a variable")
    refuses(function() oar.Executor("cpu") end, "'place' must be")
  end)

  it("Tensor", function()
    refuses(function() oar.Tensor(nil) end, "Tensor: expected")
    refuses(function() oar.Tensor("abc") end, "Tensor: expected")
    refuses(function() oar.Tensor{ shape = "x" } end, "'shape' must be")
    refuses(function() oar.Tensor{ shape = { -1 } } end, "'shape' must be non%-negative")
    refuses(function() oar.Tensor({ 1, 2 }, "complex128") end, "unknown dtype 'complex128'")
    refuses(function() oar.Tensor({ { 1 }, { 2, 3 } }) end, "ragged")
    local t = oar.Tensor({ 1, 2 })
    refuses(function() t:get(5) end, "get")
    refuses(function() t:set("a", 1) end, "set")
    refuses(function() t:set_lod({ { 0, 5 } }) end, "lod")
    refuses(function() oar.tensor.Tensor.shape(nil) end, "call it with ':'")
  end)

  it("Scope", function()
    local s = oar.Scope()
    refuses(function() s:var(nil) end, "'name' must be a non%-empty string")
    refuses(function() s:find_var(5) end, "'name' must be a non%-empty string")
    refuses(function() s.var(nil, "x") end, "call it with ':' on a Scope")
    refuses(function() s:var("x"):set_tensor("nope") end, "set_tensor: expected an oar Tensor")
    refuses(function() oar.scope_guard("s", function() end) end, "'scope' must be an oar Scope")
  end)

  it("Program and Block", function()
    local p = oar.Program()
    refuses(function() p:block(7) end, "index 7 outside")
    refuses(function() p:global_block():var("zz") end, "no variable 'zz'")
    refuses(function() p:global_block():append_op{ type = "no_such" } end, "unknown op type 'no_such'")
    refuses(function() p:global_block():append_op(nil) end, "expected {type=")
    refuses(function() p:prune({ "nothing" }) end, "target 'nothing'")
    refuses(function() oar.program_guard(5, nil, function() end) end, "Program")
  end)

  it("io functions", function()
    local dir = tmpdir()
    refuses(function() oar.io.save_params(nil, dir) end, "'executor' must be an oar Executor")
    refuses(function() oar.io.load_persistables(exe, 42) end, "'dirname' must be a non%-empty")
    refuses(function() oar.io.load_inference_model(5, exe) end, "'dirname' must be a non%-empty")
    refuses(function() oar.io.load_inference_model(dir, nil) end, "'executor' must be an oar Executor")
    refuses(function() oar.io.save_inference_model(dir, nil, nil, exe) end, "'feeded_var_names' must be a non%-empty list")
    refuses(function() oar.io.save_vars(exe, dir, oar.Program(), "not a var") end, "no variable 'not a var'")
    refuses(function() oar.io.load_inference_model(dir .. "/none", exe) end, "cannot open")
    refuses(function() oar.set_flags("check_nan_inf") end, "expected a table of flags")
    refuses(function() oar.set_flags{ no_such_flag = 1 } end, "no_such_flag")
  end)

  it("a path with shell metacharacters just names a file", function()
    local dir = tmpdir()
    local weird = dir .. "/$(echo hacked) `x` ; rm -rf / | & > < * ? ' \" \\ \n end"
    local m = oar.Program()
    local out
    oar.program_guard(m, oar.Program(), function()
      local x = layers.data{ name = "x", shape = { 2 } }
      out = layers.fc{ input = x, size = 2, param_attr = oar.ParamAttr{ name = "pw" }, bias_attr = false }
    end)
    local scope = oar.Scope()
    scope:var("pw"):set_tensor(oar.Tensor({ { 1, 2 }, { 3, 4 } }, "float32"))
    oar.io.save_inference_model(weird, { "x" }, { out }, exe, m, { scope = scope })
    local f = io.open(weird .. "/__model__", "rb")
    assert.truthy(f)
    f:close()
    local s2 = oar.Scope()
    local prog, _, fetches = oar.io.load_inference_model(weird, exe, { scope = s2 })
    local r = exe:run(prog, { feed = { x = { { 1, 1 } } }, fetch_list = fetches, scope = s2 })
    assert.same({ { 4, 6 } }, r[1]:totable())
    assert.is_nil(io.open(dir .. "/hacked", "rb"))
    os.execute("rm -rf '" .. dir .. "'")
    alive()
  end)
end)
