-- C-level tensor behaviour through the FFI: construction, dims, dtypes,
-- refcounted buffers, in-place storage reuse and LoD validation.
local ffi = require("ffi")
local lib = require("oar.lib")
local C = lib.C

-- the tensor layout and the tensor calls of kernels (src/tensor.h): the
-- op-authoring API (src/oar_op.h), for white-box checks
lib.load_op_api()

local OK, INVALID, SHAPE, DTYPE, NOMEM = 0, -1, -3, -4, -5
local BOOL, INT16, INT32, INT64, FP16, FP32, FP64, UINT8, INT8 = 0, 1, 2, 3, 4, 5, 6, 20, 21

local function dims_of(list)
  local n = #list
  local d = ffi.new("int64_t[?]", n > 0 and n or 1)
  for i = 1, n do d[i - 1] = list[i] end
  return d, n
end

local function new_tensor(dtype, list)
  local d, n = dims_of(list)
  local out = ffi.new("oar_tensor_t *[1]")
  local rc = C.oar_tensor_new(dtype, d, n, out)
  assert(rc == OK, lib.last_error())
  return ffi.gc(out[0], C.oar_tensor_free)
end

local function try_new(dtype, list)
  local d, n = dims_of(list)
  local out = ffi.new("oar_tensor_t *[1]")
  local rc = C.oar_tensor_new(dtype, d, n, out)
  if rc == OK then C.oar_tensor_free(out[0]) end
  return rc, lib.last_error()
end

local function from_floats(list, shape)
  local d, n = dims_of(shape)
  local src = ffi.new("float[?]", #list, list)
  local out = ffi.new("oar_tensor_t *[1]")
  assert(C.oar_tensor_from_data(FP32, d, n, src, out) == OK, lib.last_error())
  return ffi.gc(out[0], C.oar_tensor_free), src
end

local function floats(t)
  local p = ffi.cast("float *", C.oar_tensor_data(t))
  local r = {}
  for i = 0, tonumber(C.oar_tensor_numel(t)) - 1 do r[#r + 1] = p[i] end
  return r
end

local function set_lod(t, levels)
  local n = #levels
  local arrs = ffi.new("const int64_t *[?]", n > 0 and n or 1)
  local sizes = ffi.new("int64_t[?]", n > 0 and n or 1)
  local keep = {}
  for l = 1, n do
    local a = ffi.new("int64_t[?]", #levels[l] > 0 and #levels[l] or 1)
    for i = 1, #levels[l] do a[i - 1] = levels[l][i] end
    keep[l] = a
    arrs[l - 1] = a
    sizes[l - 1] = #levels[l]
  end
  return C.oar_tensor_set_lod(t, n, arrs, sizes), lib.last_error()
end

local function lod_of(t)
  local r = {}
  for l = 0, C.oar_tensor_lod_levels(t) - 1 do
    local p, level = C.oar_tensor_lod_data(t, l), {}
    for i = 0, tonumber(C.oar_tensor_lod_size(t, l)) - 1 do level[#level + 1] = tonumber(p[i]) end
    r[#r + 1] = level
  end
  return r
end

describe("dtypes", function()
  it("have Fluid's sizes and names", function()
    local expect = {
      [BOOL] = { 1, "bool" }, [INT16] = { 2, "int16" }, [INT32] = { 4, "int32" },
      [INT64] = { 8, "int64" }, [FP16] = { 2, "float16" }, [FP32] = { 4, "float32" },
      [FP64] = { 8, "float64" }, [UINT8] = { 1, "uint8" }, [INT8] = { 1, "int8" },
    }
    for dt, e in pairs(expect) do
      assert.are.equal(e[1], tonumber(C.oar_dtype_size(dt)))
      assert.are.equal(e[2], ffi.string(C.oar_dtype_name(dt)))
      assert.are.equal(dt, C.oar_dtype_from_name(e[2]))
    end
  end)

  it("reject unknown dtypes and names", function()
    assert.are.equal(0, tonumber(C.oar_dtype_size(7)))
    assert.are.equal(0, tonumber(C.oar_dtype_size(-1)))
    assert.is_true(C.oar_dtype_name(99) == nil)
    assert.are.equal(-1, C.oar_dtype_from_name("float"))
    assert.are.equal(-1, C.oar_dtype_from_name("Float32"))
    assert.are.equal(-1, C.oar_dtype_from_name(nil))
  end)

  it("report whether CUDA was compiled in", function()
    assert.are.equal("boolean", type(C.oar_is_compiled_with_cuda()))
  end)
end)

describe("tensor construction", function()
  it("makes zeros with the given dims, aligned to 64 bytes", function()
    local t = new_tensor(FP64, { 2, 3, 4 })
    assert.are.equal(FP64, C.oar_tensor_dtype(t))
    assert.are.equal(3, C.oar_tensor_ndim(t))
    local d = C.oar_tensor_dims(t)
    assert.are.same({ 2, 3, 4 }, { tonumber(d[0]), tonumber(d[1]), tonumber(d[2]) })
    assert.are.equal(24, tonumber(C.oar_tensor_numel(t)))
    assert.are.equal(0, C.oar_tensor_place(t))
    local p = ffi.cast("double *", C.oar_tensor_data(t))
    assert.are.equal(0, tonumber(ffi.cast("uintptr_t", p)) % 64)
    for i = 0, 23 do assert.are.equal(0, p[i]) end
  end)

  it("makes a scalar (rank 0) with one element", function()
    local t = new_tensor(INT64, {})
    assert.are.equal(0, C.oar_tensor_ndim(t))
    assert.are.equal(1, tonumber(C.oar_tensor_numel(t)))
    assert.are.equal(0, tonumber(ffi.cast("int64_t *", C.oar_tensor_data(t))[0]))
  end)

  it("allows zero-sized dims with a valid data pointer", function()
    local t = new_tensor(FP32, { 0, 5 })
    assert.are.equal(0, tonumber(C.oar_tensor_numel(t)))
    assert.is_true(C.oar_tensor_data(t) ~= nil)
  end)

  it("copies from caller data", function()
    local t, src = from_floats({ 1, 2, 3, 4, 5, 6 }, { 3, 2 })
    src[0] = 100
    assert.are.same({ 1, 2, 3, 4, 5, 6 }, floats(t))
    assert.is_true(ffi.cast("void *", src) ~= C.oar_tensor_data(t))
  end)

  it("rejects NULL data with a nonzero size", function()
    local d, n = dims_of({ 2 })
    local out = ffi.new("oar_tensor_t *[1]")
    assert.are.equal(INVALID, C.oar_tensor_from_data(FP32, d, n, nil, out))
    assert.matches("NULL data", lib.last_error())
  end)

  it("makes an empty tensor without dims, dtype or buffer", function()
    local out = ffi.new("oar_tensor_t *[1]")
    assert.are.equal(OK, C.oar_tensor_new_empty(out))
    local t = ffi.gc(out[0], C.oar_tensor_free)
    assert.are.equal(0, C.oar_tensor_ndim(t))
    assert.are.equal(-1, C.oar_tensor_dtype(t))
    assert.is_true(C.oar_tensor_data(t) == nil)
    assert.are.equal(0, C.oar_tensor_lod_levels(t))
  end)

  it("rejects negative dims naming the shape", function()
    local rc, msg = try_new(FP32, { 3, -1 })
    assert.are.equal(SHAPE, rc)
    assert.matches("negative dimension %-1 at axis 1 of shape %[3, %-1%]", msg)
  end)

  it("rejects shapes whose element count overflows int64", function()
    local rc, msg = try_new(FP32, { 2 ^ 40, 2 ^ 40 })
    assert.are.equal(SHAPE, rc)
    assert.matches("overflows int64", msg)
    assert.matches("%[1099511627776, 1099511627776%]", msg)
  end)

  it("rejects buffers over the 1 TiB limit before allocating", function()
    -- 2^39 float32 elements = 2 TiB
    local rc, msg = try_new(FP32, { 2 ^ 20, 2 ^ 19 })
    assert.are.equal(NOMEM, rc)
    assert.matches("%[1048576, 524288%]", msg)
    assert.matches("float32", msg)
  end)

  it("rejects ranks over 9 and unknown dtypes", function()
    local rc, msg = try_new(FP32, { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 })
    assert.are.equal(SHAPE, rc)
    assert.matches("rank 10", msg)
    rc, msg = try_new(99, { 2 })
    assert.are.equal(DTYPE, rc)
    assert.matches("unknown dtype 99", msg)
  end)
end)

describe("tensor references", function()
  it("retain and free count references", function()
    local out = ffi.new("oar_tensor_t *[1]")
    local d, n = dims_of({ 4 })
    assert.are.equal(OK, C.oar_tensor_new(FP32, d, n, out))
    local t = out[0]
    assert.are.equal(1, t.refcount)
    assert.are.equal(t, C.oar_tensor_retain(t))
    assert.are.equal(2, t.refcount)
    C.oar_tensor_free(t)
    assert.are.equal(1, t.refcount)
    C.oar_tensor_free(t)
  end)

  it("share makes two tensors use one buffer", function()
    local a = from_floats({ 1, 2, 3, 4 }, { 2, 2 })
    local b = new_tensor(FP64, { 7 })
    assert.are.equal(OK, C.oar_tensor_share(b, a))
    assert.are.equal(C.oar_tensor_data(a), C.oar_tensor_data(b))
    assert.are.equal(2, a.buf.refcount)
    assert.are.equal(FP32, C.oar_tensor_dtype(b))
    assert.are.equal(2, C.oar_tensor_ndim(b))
    ffi.cast("float *", C.oar_tensor_data(b))[3] = 40
    assert.are.same({ 1, 2, 3, 40 }, floats(a))
  end)

  it("copy is deep, including the LoD", function()
    local a = from_floats({ 1, 2, 3 }, { 3, 1 })
    assert.are.equal(OK, (set_lod(a, { { 0, 1, 3 } })))
    local out = ffi.new("oar_tensor_t *[1]")
    assert.are.equal(OK, C.oar_tensor_copy(a, out))
    local b = ffi.gc(out[0], C.oar_tensor_free)
    assert.is_true(C.oar_tensor_data(a) ~= C.oar_tensor_data(b))
    assert.are.same({ 1, 2, 3 }, floats(b))
    assert.are.same({ { 0, 1, 3 } }, lod_of(b))
    ffi.cast("float *", C.oar_tensor_data(b))[0] = 9
    assert.are.same({ 1, 2, 3 }, floats(a))
    assert.is_true(C.oar_tensor_lod_data(a, 0) ~= C.oar_tensor_lod_data(b, 0))
  end)

  it("copy_into a tensor sharing the source's buffer detaches it", function()
    local a = from_floats({ 5, 6 }, { 2 })
    local b = new_tensor(FP32, { 1 })
    C.oar_tensor_share(b, a)
    assert.are.equal(OK, C.oar_tensor_copy_into(b, a))
    assert.is_true(C.oar_tensor_data(a) ~= C.oar_tensor_data(b))
    assert.are.same({ 5, 6 }, floats(b))
    assert.are.equal(1, a.buf.refcount)
  end)
end)

describe("tensor_mutable", function()
  it("reuses an unshared buffer that is large enough", function()
    local t = new_tensor(FP32, { 8 })
    local p0 = C.oar_tensor_data(t)
    assert.are.equal(p0, C.oar_tensor_mutable(t, FP32))
    assert.are.equal(OK, C.oar_tensor_resize(t, dims_of({ 2, 2 })))
    assert.are.equal(p0, C.oar_tensor_mutable(t, FP32))
    -- same element size: the buffer stays, the dtype changes
    assert.are.equal(p0, C.oar_tensor_mutable(t, INT32))
    assert.are.equal(INT32, C.oar_tensor_dtype(t))
  end)

  it("allocates when the buffer is too small", function()
    local t = new_tensor(FP32, { 4 })
    local p0 = C.oar_tensor_data(t)
    -- 4 float64 need 32 bytes, the buffer holds 16
    local p1 = C.oar_tensor_mutable(t, FP64)
    assert.is_true(p1 ~= nil and p1 ~= p0)
    assert.are.equal(FP64, C.oar_tensor_dtype(t))
    assert.are.equal(OK, C.oar_tensor_resize(t, dims_of({ 100 })))
    local p2 = C.oar_tensor_mutable(t, FP64)
    assert.is_true(p2 ~= p1)
    local d = ffi.cast("double *", p2)
    for i = 0, 99 do assert.are.equal(0, d[i]) end
  end)

  it("allocates a fresh zeroed buffer when the buffer is shared", function()
    local a = from_floats({ 1, 2, 3 }, { 3 })
    local b = new_tensor(FP32, { 1 })
    C.oar_tensor_share(b, a)
    local p = C.oar_tensor_mutable(b, FP32)
    assert.is_true(p ~= C.oar_tensor_data(a))
    assert.are.same({ 0, 0, 0 }, floats(b))
    assert.are.same({ 1, 2, 3 }, floats(a))
    assert.are.equal(1, a.buf.refcount)
  end)

  it("allocates for an empty tensor after resize and refuses absurd sizes", function()
    local out = ffi.new("oar_tensor_t *[1]")
    C.oar_tensor_new_empty(out)
    local t = ffi.gc(out[0], C.oar_tensor_free)
    assert.are.equal(OK, C.oar_tensor_resize(t, dims_of({ 3, 2 })))
    local p = C.oar_tensor_mutable(t, INT64)
    assert.is_true(p ~= nil)
    assert.are.equal(0, tonumber(ffi.cast("uintptr_t", p)) % 64)
    -- resize already refuses 2^38 int64 elements (2 TiB) for the known dtype
    assert.are.equal(NOMEM, C.oar_tensor_resize(t, dims_of({ 2 ^ 30, 2 ^ 8 })))
    assert.matches("exceeds", lib.last_error())
    assert.are.equal(2, C.oar_tensor_ndim(t))
    assert.are.equal(3, tonumber(C.oar_tensor_dims(t)[0]))
    -- as uint8, 2^39 elements (512 GiB) pass; as float64 they would be 4 TiB
    assert.is_true(C.oar_tensor_mutable(t, UINT8) ~= nil)
    assert.are.equal(OK, C.oar_tensor_resize(t, dims_of({ 2 ^ 39 })))
    assert.is_true(C.oar_tensor_mutable(t, FP64) == nil)
    assert.matches("exceeds", lib.last_error())
    assert.are.equal(SHAPE, C.oar_tensor_resize(t, dims_of({ 2, -3 })))
  end)

  it("reset drops the buffer and LoD but keeps the shape", function()
    local t = from_floats({ 1, 2 }, { 2 })
    set_lod(t, { { 0, 2 } })
    C.oar_tensor_reset(t)
    assert.is_true(C.oar_tensor_data(t) == nil)
    assert.are.equal(0, C.oar_tensor_lod_levels(t))
    assert.are.equal(2, tonumber(C.oar_tensor_dims(t)[0]))
  end)
end)

describe("LoD", function()
  it("accepts valid one- and two-level LoDs and reads them back", function()
    local t = new_tensor(FP32, { 5, 2 })
    assert.are.equal(OK, (set_lod(t, { { 0, 2, 5 } })))
    assert.are.same({ { 0, 2, 5 } }, lod_of(t))
    -- 2 outer sequences made of 1 and 2 inner sequences (3 in all)
    assert.are.equal(OK, (set_lod(t, { { 0, 1, 3 }, { 0, 2, 4, 5 } })))
    assert.are.same({ { 0, 1, 3 }, { 0, 2, 4, 5 } }, lod_of(t))
    assert.are.equal(OK, (set_lod(t, {})))
    assert.are.equal(0, C.oar_tensor_lod_levels(t))
  end)

  it("accepts empty sequences (repeated offsets)", function()
    local t = new_tensor(FP32, { 3 })
    assert.are.equal(OK, (set_lod(t, { { 0, 0, 3, 3 } })))
  end)

  it("rejects a level not starting at 0", function()
    local t = new_tensor(FP32, { 5 })
    local rc, msg = set_lod(t, { { 1, 2, 5 } })
    assert.are.equal(INVALID, rc)
    assert.matches("LoD level 0 starts at 1", msg)
  end)

  it("rejects decreasing offsets", function()
    local t = new_tensor(FP32, { 5 })
    local rc, msg = set_lod(t, { { 0, 3, 2, 5 } })
    assert.are.equal(INVALID, rc)
    assert.matches("LoD level 0 decreases at position 2", msg)
  end)

  it("rejects a last level that disagrees with dims[0]", function()
    local t = new_tensor(FP32, { 5, 2 })
    local rc, msg = set_lod(t, { { 0, 2, 4 } })
    assert.are.equal(SHAPE, rc)
    assert.matches("ends at 4 but the tensor has 5 rows", msg)
    assert.matches("%[5, 2%]", msg)
  end)

  it("rejects a level whose end does not count the next level's sequences", function()
    local t = new_tensor(FP32, { 5 })
    local rc, msg = set_lod(t, { { 0, 1, 2 }, { 0, 2, 4, 5 } })
    assert.are.equal(INVALID, rc)
    assert.matches("LoD level 0 ends at 2 but level 1 holds 3 sequences", msg)
  end)

  it("rejects an empty level and leaves the old LoD in place", function()
    local t = new_tensor(FP32, { 5 })
    assert.are.equal(OK, (set_lod(t, { { 0, 5 } })))
    local rc, msg = set_lod(t, { {} })
    assert.are.equal(INVALID, rc)
    assert.matches("level 0 has 0 offsets", msg)
    assert.are.same({ { 0, 5 } }, lod_of(t))
  end)

  it("reports out-of-range levels", function()
    local t = new_tensor(FP32, { 5 })
    assert.are.equal(-1, tonumber(C.oar_tensor_lod_size(t, 0)))
    assert.is_true(C.oar_tensor_lod_data(t, 3) == nil)
    assert.matches("LoD level 3 out of range", lib.last_error())
  end)

  it("copy_lod copies and clear_lod clears", function()
    local a = new_tensor(FP32, { 4 })
    local b = new_tensor(FP32, { 4 })
    set_lod(a, { { 0, 1, 4 } })
    assert.are.equal(OK, C.oar_tensor_copy_lod(b, a))
    assert.are.same({ { 0, 1, 4 } }, lod_of(b))
    C.oar_tensor_clear_lod(a)
    assert.are.equal(0, C.oar_tensor_lod_levels(a))
    assert.are.same({ { 0, 1, 4 } }, lod_of(b))
  end)

  it("share gives the target its own copy of the LoD", function()
    local a = new_tensor(FP32, { 2 })
    local b = new_tensor(FP32, { 1 })
    set_lod(a, { { 0, 2 } })
    C.oar_tensor_share(b, a)
    C.oar_tensor_clear_lod(a)
    assert.are.same({ { 0, 2 } }, lod_of(b))
  end)
end)

describe("error buffer", function()
  it("clear_error empties the message", function()
    try_new(FP32, { -2 })
    assert.is_true(#lib.last_error() > 0)
    C.oar_clear_error()
    assert.are.equal("", lib.last_error())
  end)
end)
