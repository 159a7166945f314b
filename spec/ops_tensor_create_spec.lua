-- fill, fill_zeros_like2, one_hot_v2, randint, randperm, seed, sampling_id,
-- gaussian/uniform_random_batch_size_like, shard_index, hash, random_crop:
-- the cases of Paddle's test_fill_op.py, test_fill_zeros_like2_op.py,
-- test_one_hot_v2_op.py, test_randint_op.py, test_randperm_op.py,
-- test_seed_op.py, test_sampling_id_op.py, test_*_random_batch_size_like_op.py,
-- test_shard_index_op.py, test_hash_op.py and test_random_crop_op.py (shapes
-- reduced where Paddle's are large). Deterministic ops against values
-- computed here; random ones by their distribution, their range and their
-- determinism under a seed.
local ffi = require("ffi")
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")

local expect_error = require("spec.helpers.expect_error")
local function refuses(spec, ...) expect_error(function() T.run(spec) end, ...) end

local function out(spec, slot) return T.run(spec)[slot or "Out"][1] end

describe("fill (test_fill_op.py)", function()
  for _, dt in ipairs({ { 5, "float32" }, { 6, "float64" }, { 2, "int32" }, { 3, "int64" } }) do
    it("fills attr shape with attr value as " .. dt[2], function()
      local val = R.uniform(12, 5, -3, 3)
      if dt[1] == 2 or dt[1] == 3 then for i, v in ipairs(val) do val[i] = math.floor(v * 10) end end
      local want = {}
      for i, v in ipairs(val) do
        want[i] = dt[1] == 5 and tonumber(ffi.new("float", ffi.new("float", v))) or v
      end
      local got = out{ type = "fill", attrs = { value = val, shape = { 3, 4 }, dtype = dt[1] } }
      assert.are.equal(dt[2], got.dtype)
      T.assert_close(got, { shape = { 3, 4 }, data = want }, 1e-6, 0)
    end)
  end
  it("refuses a value list of the wrong length", function()
    refuses({ type = "fill", attrs = { value = { 1, 2, 3 }, shape = { 2, 2 } } }, "fill", "value holds 3", "needs 4")
  end)
  it("refuses a dtype it has no kernel for", function()
    refuses({ type = "fill", attrs = { value = { 1 }, shape = { 1 }, dtype = 4 } }, "attr dtype = 4")
  end)
end)

describe("fill_zeros_like2 (test_fill_zeros_like2_op.py)", function()
  for _, dt in ipairs({ { 5, "float32" }, { 6, "float64" }, { 2, "int32" }, { 3, "int64" }, { 0, "bool" } }) do
    it("zeros of X's shape as " .. dt[2], function()
      local x = T.tensor(R.uniform(21, 3), { shape = { 3, 7 } })
      local got = out{ type = "fill_zeros_like2", inputs = { X = x }, attrs = { dtype = dt[1] } }
      assert.are.equal(dt[2], got.dtype)
      local want = {}
      for i = 1, 21 do if dt[1] == 0 then want[i] = false else want[i] = 0 end end
      T.assert_close(got, { shape = { 3, 7 }, data = want }, 0, 0)
    end)
  end
end)

describe("one_hot_v2 (test_one_hot_v2_op.py)", function()
  local function ref(ids, depth, allow)
    local w = {}
    for i, v in ipairs(ids) do
      for d = 0, depth - 1 do w[(i - 1) * depth + d + 1] = (v == d) and 1 or 0 end
    end
    return w
  end
  it("ids of any shape, LoD kept (attr depth)", function()
    local ids = { 0, 3, 9, 2, 2, 7, 1, 8, 4, 5, 6 }
    local x = T.tensor(ids, { shape = { 11 }, dtype = "int64", lod = { { 0, 4, 5, 8, 11 } } })
    T.check_output{ type = "one_hot_v2", inputs = { X = x }, attrs = { depth = 10, dtype = 5 },
                    expect = { Out = { shape = { 11, 10 }, data = ref(ids, 10), lod = { { 0, 4, 5, 8, 11 } } } } }
  end)
  it("depth_tensor replaces attr depth; int32 ids of rank 2; float64 out", function()
    local ids = { 1, 0, 2, 3, 3, 1 }
    T.check_output{ type = "one_hot_v2", attrs = { depth = 2, dtype = 6 },
                    inputs = { X = T.tensor(ids, { shape = { 2, 3 }, dtype = "int32" }),
                               depth_tensor = T.tensor({ 4 }, { shape = { 1 }, dtype = "int32" }) },
                    expect = { Out = { shape = { 2, 3, 4 }, data = ref(ids, 4) } } }
  end)
  it("allow_out_of_range gives zero rows", function()
    local ids = { -1, 2, 5, 0 }
    T.check_output{ type = "one_hot_v2", attrs = { depth = 3, allow_out_of_range = true },
                    inputs = { X = T.tensor(ids, { shape = { 4 }, dtype = "int64" }) },
                    expect = { Out = { shape = { 4, 3 }, data = ref(ids, 3) } } }
  end)
  it("refuses an id outside [0, depth) and float ids", function()
    refuses({ type = "one_hot_v2", attrs = { depth = 3 }, inputs = { X = T.tensor({ 0, 3 }, { shape = { 2 }, dtype = "int64" }) } },
            "one_hot_v2", "holds 3", "allow_out_of_range")
    refuses({ type = "one_hot_v2", attrs = { depth = 3 }, inputs = { X = T.tensor({ 0, 1 }, { shape = { 2 } }) } },
            "input X", "float64", "int32 or int64")
  end)
end)

describe("randint (test_randint_op.py)", function()
  it("draws every value of [low, high) about equally, int64 by default", function()
    local got = out{ type = "randint", attrs = { shape = { 100, 100 }, low = -5, high = 10, seed = 9 } }
    assert.are.equal("int64", got.dtype)
    assert.are.same({ 100, 100 }, got.shape)
    local hist = {}
    for _, v in ipairs(got.data) do
      assert.is_true(v >= -5 and v < 10 and v == math.floor(v))
      hist[v] = (hist[v] or 0) + 1
    end
    for v = -5, 9 do
      local p = (hist[v] or 0) / 10000
      assert.is_true(math.abs(p - 1 / 15) < 0.012, ("value %d has frequency %g"):format(v, p))
    end
  end)
  it("is fixed by a seed; int32 and ShapeTensor", function()
    local spec = { type = "randint", attrs = { low = 0, high = 1000, seed = 3, dtype = 2 },
                   inputs = { ShapeTensor = T.tensor({ 4, 5 }, { shape = { 2 }, dtype = "int64" }) } }
    local a, b = out(spec), out(spec)
    assert.are.equal("int32", a.dtype)
    assert.are.same({ 4, 5 }, a.shape)
    assert.are.same(a.data, b.data)
    spec.attrs.seed = 4
    assert.are_not.same(a.data, out(spec).data)
  end)
  it("ShapeTensorList gives one dim per tensor", function()
    local got = out{ type = "randint", attrs = { low = 5, high = 6, seed = 2 },
                     inputs = { ShapeTensorList = { T.tensor({ 2 }, { dtype = "int32" }), T.tensor({ 3 }, { dtype = "int64" }) } } }
    assert.are.same({ 2, 3 }, got.shape)
    assert.are.same({ 5, 5, 5, 5, 5, 5 }, got.data)
  end)
  it("refuses low >= high", function()
    refuses({ type = "randint", attrs = { shape = { 2 }, low = 3, high = 3 } }, "randint", "low = 3", "high = 3")
  end)
end)

describe("randperm (test_randperm_op.py)", function()
  for _, dt in ipairs({ { 3, "int64" }, { 2, "int32" }, { 5, "float32" }, { 6, "float64" } }) do
    it("a permutation of 0..n-1 as " .. dt[2], function()
      local got = out{ type = "randperm", attrs = { n = 200, dtype = dt[1], seed = 11 } }
      assert.are.equal(dt[2], got.dtype)
      local seen, moved = {}, 0
      for i, v in ipairs(got.data) do
        assert.is_nil(seen[v])
        seen[v] = true
        if v ~= i - 1 then moved = moved + 1 end
      end
      for v = 0, 199 do assert.is_true(seen[v]) end
      assert.is_true(moved > 150)
    end)
  end
  it("every position is equally likely for each value (global generator)", function()
    local count = {}
    for _ = 1, 300 do
      local p = out{ type = "randperm", attrs = { n = 3 } }.data
      count[p[1]] = (count[p[1]] or 0) + 1
    end
    for v = 0, 2 do assert.is_true(math.abs(count[v] / 300 - 1 / 3) < 0.1) end
  end)
  it("refuses n < 1", function()
    refuses({ type = "randperm", attrs = { n = 0 } }, "randperm", "attr n = 0")
  end)
end)

describe("seed (test_seed_op.py)", function()
  it("outputs a nonzero attr seed", function()
    T.check_output{ type = "seed", attrs = { seed = 123 }, expect = { Out = { shape = { 1 }, data = { 123 } } } }
  end)
  it("draws a positive one for seed 0", function()
    local got = out{ type = "seed", attrs = { seed = 0 } }
    assert.are.equal("int32", got.dtype)
    assert.is_true(got.data[1] > 0)
  end)
end)

describe("sampling_id (test_sampling_id_op.py)", function()
  it("draws ids with the rows' probabilities", function()
    local probs = { 0.1, 0.2, 0.3, 0.4 }
    local x = {}
    for i = 1, 2000 do x[i] = probs[(i - 1) % 4 + 1] end
    local got = out{ type = "sampling_id", attrs = { seed = 5 }, inputs = { X = T.tensor(x, { shape = { 500, 4 } }) } }
    assert.are.same({ 500 }, got.shape)
    local hist = { [0] = 0, 0, 0, 0 }
    for _, v in ipairs(got.data) do hist[v] = hist[v] + 1 end
    for j = 0, 3 do assert.is_true(math.abs(hist[j] / 500 - probs[j + 1]) < 0.07, "id " .. j) end
    local again = out{ type = "sampling_id", attrs = { seed = 5 }, inputs = { X = T.tensor(x, { shape = { 500, 4 } }) } }
    assert.are.same(got.data, again.data)
  end)
  it("takes the last id when r outruns the row (min = max = 2)", function()
    T.check_output{ type = "sampling_id", attrs = { min = 2, max = 2, seed = 1 },
                    inputs = { X = T.tensor({ { 0.5, 0.25, 0.25 }, { 1, 1.5, 0.25 } }) },
                    expect = { Out = { shape = { 2 }, data = { 2, 1 } } } }
  end)
  it("refuses a rank-1 X", function()
    refuses({ type = "sampling_id", inputs = { X = T.tensor({ 0.5, 0.5 }) } }, "input X")
  end)
end)

describe("random *_batch_size_like (test_*_random_batch_size_like_op.py)", function()
  local input = T.tensor(R.uniform(500 * 2, 1), { shape = { 500, 2 } })
  it("uniform: Input's batch at output_dim_idx, values in [min, max)", function()
    local got = out{ type = "uniform_random_batch_size_like", inputs = { Input = input },
                     attrs = { shape = { -1, 2, 3 }, min = 1, max = 2, seed = 7 } }
    assert.are.same({ 500, 2, 3 }, got.shape)
    local sum = 0
    for _, v in ipairs(got.data) do assert.is_true(v >= 1 and v < 2); sum = sum + v end
    assert.is_true(math.abs(sum / #got.data - 1.5) < 0.02)
  end)
  it("gaussian: mean and std, input_dim_idx / output_dim_idx, float64, seeded", function()
    local spec = { type = "gaussian_random_batch_size_like", inputs = { Input = input },
                   attrs = { shape = { 6, -1 }, input_dim_idx = 0, output_dim_idx = 1, mean = 1, std = 2, seed = 4,
                             dtype = 6 } }
    local got = out(spec)
    assert.are.same({ 6, 500 }, got.shape)
    assert.are.equal("float64", got.dtype)
    local s, s2 = 0, 0
    for _, v in ipairs(got.data) do s = s + v; s2 = s2 + v * v end
    local n = #got.data
    local mean = s / n
    assert.is_true(math.abs(mean - 1) < 0.1)
    assert.is_true(math.abs(math.sqrt(s2 / n - mean * mean) - 2) < 0.1)
    assert.are.same(got.data, out(spec).data)
  end)
  it("uniform: diag_num elements i * (diag_step + 1) set to diag_val", function()
    local got = out{ type = "uniform_random_batch_size_like", inputs = { Input = T.tensor({ 1, 2, 3 }, { shape = { 3 } }) },
                     attrs = { shape = { -1, 4 }, min = 0, max = 1, seed = 3, diag_num = 3, diag_step = 4, diag_val = 7 } }
    for i, v in ipairs(got.data) do
      if (i - 1) % 5 == 0 then assert.are.equal(7, v) else assert.is_true(v >= 0 and v < 1) end
    end
    refuses({ type = "uniform_random_batch_size_like", inputs = { Input = T.tensor({ 1, 2 }, { shape = { 2 } }) },
              attrs = { shape = { -1, 2 }, diag_num = 3, diag_step = 2 } }, "diagonal element 2")
  end)
  it("refuses an output_dim_idx past shape", function()
    refuses({ type = "uniform_random_batch_size_like", inputs = { Input = input }, attrs = { shape = { -1, 2 }, output_dim_idx = 2 } },
            "output_dim_idx = 2")
  end)
end)

describe("shard_index (test_shard_index_op.py)", function()
  local function ref(x, index_num, nshards, shard_id, ignore)
    local size = math.floor((index_num + nshards - 1) / nshards)
    local w = {}
    for i, v in ipairs(x) do w[i] = math.floor(v / size) == shard_id and v % size or ignore end
    return w
  end
  for _, case in ipairs({ { 20, 2, 0, -1 }, { 20, 2, 1, -1 }, { 20, 3, 2, -1 }, { 7, 3, 1, -2 } }) do
    it(("index_num %d, nshards %d, shard_id %d"):format(case[1], case[2], case[3]), function()
      local x = {}
      for i = 1, 12 do x[i] = (i * 7) % case[1] end
      for _, dt in ipairs({ "int32", "int64" }) do
        T.check_output{ type = "shard_index", inputs = { X = T.tensor(x, { shape = { 12, 1 }, dtype = dt }) },
                        attrs = { index_num = case[1], nshards = case[2], shard_id = case[3], ignore_value = case[4] },
                        expect = { Out = { shape = { 12, 1 }, data = ref(x, case[1], case[2], case[3], case[4]) } } }
      end
    end)
  end
  it("refuses an id outside [0, index_num) and a bad shard_id", function()
    refuses({ type = "shard_index", inputs = { X = T.tensor({ 3, 20 }, { shape = { 2, 1 }, dtype = "int64" }) },
              attrs = { index_num = 20, nshards = 2, shard_id = 0 } }, "shard_index", "holds 20")
    refuses({ type = "shard_index", inputs = { X = T.tensor({ 3 }, { shape = { 1, 1 }, dtype = "int64" }) },
              attrs = { index_num = 20, nshards = 2, shard_id = 2 } }, "shard_id = 2")
  end)
end)

-- XXH64 in Lua over uint64 cdata (wrapping arithmetic), from the published
-- description of the algorithm
local U = function(x) return ffi.new("uint64_t", x) end
local P1, P2, P3 = 0x9E3779B185EBCA87ULL, 0xC2B2AE3D27D4EB4FULL, 0x165667B19E3779F9ULL
local P4, P5 = 0x85EBCA77C2B2AE63ULL, 0x27D4EB2F165667C5ULL
local function rotl(x, r) return bit.bor(bit.lshift(x, r), bit.rshift(x, 64 - r)) end
local function le(bytes, i, n)
  local v = U(0)
  for j = n - 1, 0, -1 do v = v * 256 + bytes[i + j] end
  return v
end
local function round(acc, v) return rotl(acc + v * P2, 31) * P1 end
local function xxh64(bytes, seed)
  local len, i, h = #bytes, 1, nil
  seed = U(seed)
  if len >= 32 then
    local v = { seed + P1 + P2, seed + P2, seed, seed - P1 }
    while i + 31 <= len do
      for l = 1, 4 do v[l] = round(v[l], le(bytes, i + (l - 1) * 8, 8)) end
      i = i + 32
    end
    h = rotl(v[1], 1) + rotl(v[2], 7) + rotl(v[3], 12) + rotl(v[4], 18)
    for l = 1, 4 do h = bit.bxor(h, round(U(0), v[l])) * P1 + P4 end
  else
    h = seed + P5
  end
  h = h + len
  while i + 7 <= len do
    h = rotl(bit.bxor(h, round(U(0), le(bytes, i, 8))), 27) * P1 + P4
    i = i + 8
  end
  if i + 3 <= len then
    h = rotl(bit.bxor(h, le(bytes, i, 4) * P1), 23) * P2 + P3
    i = i + 4
  end
  while i <= len do
    h = rotl(bit.bxor(h, U(bytes[i]) * P5), 11) * P1
    i = i + 1
  end
  h = bit.bxor(h, bit.rshift(h, 33)) * P2
  h = bit.bxor(h, bit.rshift(h, 29)) * P3
  return bit.bxor(h, bit.rshift(h, 32))
end
local function bytes_of(vals, size)
  local b = {}
  for _, v in ipairs(vals) do
    local u = ffi.cast("uint64_t", ffi.new("int64_t", v))
    for _ = 1, size do b[#b + 1] = tonumber(u % 256); u = u / 256 end
  end
  return b
end

describe("hash (test_hash_op.py)", function()
  it("the Lua XXH64 meets the published vectors", function()
    assert.are.equal(0xEF46DB3751D8E999ULL, xxh64({}, 0))
    assert.are.equal(0x44BC2CF5AD770999ULL, xxh64({ 97, 98, 99 }, 0))
  end)
  it("test_hash_op.py's case: ids 5 8 9 5 0 0 1 7 (numpy's randint under seed 1), LoD {2, 6}", function()
    -- Out as test_hash_op.py lists it (Paddle's XXH64 results)
    local want = { 3481, 7475, 1719, 5986, 8473, 694, 3481, 7475, 4372, 9456, 4372, 9456, 6897, 3218, 9038, 7951 }
    local ids = { 5, 8, 9, 5, 0, 0, 1, 7 }
    for i, v in ipairs(ids) do
      for h = 0, 1 do assert.are.equal(want[(i - 1) * 2 + h + 1], tonumber(xxh64(bytes_of({ v }, 4), h) % 10000)) end
    end
    T.check_output{ type = "hash", attrs = { num_hash = 2, mod_by = 10000 },
                    inputs = { X = T.tensor(ids, { shape = { 8, 1 }, dtype = "int32", lod = { { 0, 2, 8 } } }) },
                    expect = { Out = { shape = { 8, 2, 1 }, data = want, lod = { { 0, 2, 8 } } } }, atol = 0 }
  end)
  for _, case in ipairs({ { "int32", 4, 1 }, { "int64", 8, 1 }, { "int32", 4, 10 }, { "int64", 8, 5 } }) do
    it(("%s rows of %d, num_hash 2, mod_by 10000"):format(case[1], case[3]), function()
      local n, L = 8, case[3]
      local x = {}
      for i = 1, n * L do x[i] = (i * 37) % 11 - 3 end
      local want = {}
      for r = 0, n - 1 do
        local row = {}
        for j = 1, L do row[j] = x[r * L + j] end
        local b = bytes_of(row, case[2])
        for h = 0, 1 do want[#want + 1] = tonumber(xxh64(b, h) % 10000) end
      end
      T.check_output{ type = "hash", attrs = { num_hash = 2, mod_by = 10000 },
                      inputs = { X = T.tensor(x, { shape = { n, L }, dtype = case[1], lod = { { 0, 2, 8 } } }) },
                      expect = { Out = { shape = { n, 2, 1 }, data = want, lod = { { 0, 2, 8 } } } }, atol = 0 }
    end)
  end
  it("refuses float input", function()
    refuses({ type = "hash", inputs = { X = T.tensor({ { 1 } }) } }, "hash", "input X", "int32 or int64")
  end)
end)

describe("random_crop (test_random_crop_op.py)", function()
  -- X [4, 5, 6]: element (b, i, j) = 100 b + 10 i + j
  local x = {}
  for b = 0, 3 do for i = 0, 4 do for j = 0, 5 do x[#x + 1] = 100 * b + 10 * i + j end end end
  local spec = { type = "random_crop", attrs = { shape = { 3, 2 } }, outputs = { Out = 1, SeedOut = 1 },
                 inputs = { X = T.tensor(x, { shape = { 4, 5, 6 } }),
                            Seed = T.tensor({ 10 }, { shape = { 1 }, dtype = "int64" }) } }
  it("crops a window of attr shape from each instance", function()
    local res = T.run(spec)
    local o = res.Out[1]
    assert.are.same({ 4, 3, 2 }, o.shape)
    for b = 0, 3 do
      local first = o.data[b * 6 + 1]
      local i0, j0 = math.floor((first - 100 * b) / 10), (first - 100 * b) % 10
      assert.is_true(i0 >= 0 and i0 <= 2 and j0 >= 0 and j0 <= 4)
      for i = 0, 2 do for j = 0, 1 do
        assert.are.equal(100 * b + 10 * (i0 + i) + j0 + j, o.data[b * 6 + i * 2 + j + 1])
      end end
    end
    local s = res.SeedOut[1]
    assert.are.equal("int64", s.dtype)
    assert.are_not.equal(10, s.data[1])
    assert.are.same(o.data, T.run(spec).Out[1].data)
  end)
  it("reaches every offset over many seeds", function()
    local seen = {}
    for seed = 1, 200 do
      spec.inputs.Seed = T.tensor({ seed }, { shape = { 1 }, dtype = "int64" })
      local first = T.run(spec).Out[1].data[1]
      seen[first] = true
    end
    for i = 0, 2 do for j = 0, 4 do assert.is_true(seen[10 * i + j], ("offset %d, %d"):format(i, j)) end end
  end)
  it("refuses a crop larger than X", function()
    refuses({ type = "random_crop", attrs = { shape = { 6, 2 } }, inputs = { X = T.tensor(x, { shape = { 4, 5, 6 } }) } },
            "random_crop", "shape[0] = 6")
  end)
end)
