-- fill_constant, fill_constant_batch_size_like, uniform_random,
-- gaussian_random, truncated_gaussian_random.
local T = require("spec.helpers.op_test")

local FP32, FP64, INT32, INT64, BOOL, UINT8 = 5, 6, 2, 3, 0, 20

local expect_error = require("spec.helpers.expect_error")

local function filled(n, v)
  local t = {}
  for i = 1, n do t[i] = v end
  return t
end

local function fill(attrs)
  return T.run{ type = "fill_constant", attrs = attrs, outputs = { Out = 1 } }.Out[1]
end

describe("fill_constant", function()
  it("fills float64 and float32 with the value and the requested shape", function()
    local r = fill{ shape = { 2, 3 }, dtype = FP64, value = 2.5 }
    assert.are.same({ 2, 3 }, r.shape)
    assert.are.equal("float64", r.dtype)
    assert.are.same(filled(6, 2.5), r.data)
    r = fill{ shape = { 4 }, dtype = FP32, value = -0.25 }
    assert.are.equal("float32", r.dtype)
    assert.are.same(filled(4, -0.25), r.data)
  end)

  it("defaults to float32 zeros", function()
    local r = fill{ shape = { 3, 1 } }
    assert.are.equal("float32", r.dtype)
    assert.are.same({ 3, 1 }, r.shape)
    assert.are.same(filled(3, 0), r.data)
  end)

  it("fills integer, bool and uint8 tensors", function()
    local r = fill{ shape = { 2, 2 }, dtype = INT64, value = 7 }
    assert.are.equal("int64", r.dtype)
    assert.are.same(filled(4, 7), r.data)
    r = fill{ shape = { 3 }, dtype = INT32, value = -3 }
    assert.are.equal("int32", r.dtype)
    assert.are.same(filled(3, -3), r.data)
    r = fill{ shape = { 2 }, dtype = BOOL, value = 1 }
    assert.are.equal("bool", r.dtype)
    assert.are.same({ true, true }, r.data)
    r = fill{ shape = { 2 }, dtype = BOOL, value = 0 }
    assert.are.same({ false, false }, r.data)
    r = fill{ shape = { 2 }, dtype = UINT8, value = 300 }  -- saturates
    assert.are.same({ 255, 255 }, r.data)
  end)

  it("truncates a fractional value toward zero for integer dtypes", function()
    assert.are.same(filled(2, 2), fill{ shape = { 2 }, dtype = INT32, value = 2.75 }.data)
    assert.are.same(filled(2, -2), fill{ shape = { 2 }, dtype = INT32, value = -2.75 }.data)
  end)

  it("takes str_value over value, exactly for large int64", function()
    -- neither is a float32, which is what the `value` attr holds
    local r = fill{ shape = { 1 }, dtype = INT64, value = 1, str_value = "16777217" }
    assert.are.same({ 16777217 }, r.data)
    r = fill{ shape = { 1 }, dtype = INT64, value = 1, str_value = "-9007199254740991" }
    assert.are.same({ -9007199254740991 }, r.data)
    r = fill{ shape = { 2 }, dtype = FP64, value = 1, str_value = "0.1" }
    assert.are.same({ 0.1, 0.1 }, r.data)
    r = fill{ shape = { 1 }, dtype = FP64, str_value = "-inf" }
    assert.are.equal(-math.huge, r.data[1])
  end)

  it("gives shape [1] for an empty shape", function()
    local r = fill{ dtype = FP64, value = 4 }
    assert.are.same({ 1 }, r.shape)
    assert.are.same({ 4 }, r.data)
  end)

  it("rejects negative dims, unknown dtypes and bad str_value", function()
    expect_error(function() fill{ shape = { 2, -1 }, dtype = FP32 } end, "fill_constant", "shape[1]", "-1")
    expect_error(function() fill{ shape = { 2 }, dtype = 99 } end, "fill_constant", "dtype", "99")
    expect_error(function() fill{ shape = { 2 }, dtype = FP32, str_value = "abc" } end,
      "fill_constant", "str_value", "abc")
  end)
end)

describe("fill_constant_batch_size_like", function()
  it("takes the batch dim from Input", function()
    local x = T.tensor({ 1, 2, 3, 4, 5, 6, 7, 8 }, { shape = { 4, 2 } })
    local r = T.run{ type = "fill_constant_batch_size_like", inputs = { Input = x },
      attrs = { shape = { -1, 3 }, value = 1.5, dtype = FP64 } }.Out[1]
    assert.are.same({ 4, 3 }, r.shape)
    assert.are.same(filled(12, 1.5), r.data)
  end)

  it("maps input_dim_idx to output_dim_idx and honours dtype", function()
    local x = T.tensor(filled(10, 0), { shape = { 2, 5 }, dtype = "float32" })
    local r = T.run{ type = "fill_constant_batch_size_like", inputs = { Input = x },
      attrs = { shape = { 3, -1 }, value = 9, dtype = INT64, input_dim_idx = 1, output_dim_idx = 1 } }.Out[1]
    assert.are.same({ 3, 5 }, r.shape)
    assert.are.equal("int64", r.dtype)
    assert.are.same(filled(15, 9), r.data)
  end)

  it("counts sequences, not rows, of a LoD input", function()
    local x = T.tensor(filled(5, 1), { shape = { 5, 1 }, lod = { { 0, 2, 5 } } })
    local r = T.run{ type = "fill_constant_batch_size_like", inputs = { Input = x },
      attrs = { shape = { -1, 2 }, value = 3, dtype = FP64 } }.Out[1]
    assert.are.same({ 2, 2 }, r.shape)
    assert.are.same(filled(4, 3), r.data)
  end)

  it("rejects out-of-range dim indices", function()
    local x = T.tensor({ 1, 2 }, { shape = { 2, 1 } })
    expect_error(function()
      T.run{ type = "fill_constant_batch_size_like", inputs = { Input = x },
        attrs = { shape = { -1, 2 }, input_dim_idx = 2 } }
    end, "fill_constant_batch_size_like", "input_dim_idx", "2")
    expect_error(function()
      T.run{ type = "fill_constant_batch_size_like", inputs = { Input = x },
        attrs = { shape = { -1, 2 }, output_dim_idx = 5 } }
    end, "output_dim_idx", "5")
  end)
end)

local function rand(optype, attrs)
  return T.run{ type = optype, attrs = attrs, outputs = { Out = 1 } }.Out[1]
end

local function moments(data)
  local s, s2 = 0, 0
  for _, v in ipairs(data) do s = s + v; s2 = s2 + v * v end
  local m = s / #data
  return m, math.sqrt(s2 / #data - m * m)
end

describe("uniform_random", function()
  it("draws within [min, max) with the uniform mean and spread", function()
    local n = 20000
    local r = rand("uniform_random", { shape = { 100, 200 }, min = 2, max = 5, dtype = FP64 })
    assert.are.same({ 100, 200 }, r.shape)
    assert.are.equal("float64", r.dtype)
    for _, v in ipairs(r.data) do assert.is_true(v >= 2 and v < 5) end
    local m, sd = moments(r.data)
    -- mean 3.5, sd 3/sqrt(12); the sample mean's sd is ~0.006
    assert.is_true(math.abs(m - 3.5) < 0.04, "mean " .. m)
    assert.is_true(math.abs(sd - 3 / math.sqrt(12)) < 0.02, "sd " .. sd)
    assert.are.equal(n, #r.data)
  end)

  it("repeats itself for a fixed seed and differs across seeds", function()
    local a = rand("uniform_random", { shape = { 50 }, seed = 7, dtype = FP64 })
    local b = rand("uniform_random", { shape = { 50 }, seed = 7, dtype = FP64 })
    local c = rand("uniform_random", { shape = { 50 }, seed = 8, dtype = FP64 })
    assert.are.same(a.data, b.data)
    assert.are_not.same(a.data, c.data)
  end)

  it("draws fresh values from the global generator when seed is 0", function()
    local a = rand("uniform_random", { shape = { 50 }, dtype = FP64 })
    local b = rand("uniform_random", { shape = { 50 }, dtype = FP64 })
    assert.are_not.same(a.data, b.data)
  end)

  it("makes float32 by default", function()
    local r = rand("uniform_random", { shape = { 8 } })
    assert.are.equal("float32", r.dtype)
    for _, v in ipairs(r.data) do assert.is_true(v >= -1 and v < 1) end
  end)

  it("rejects min > max, integer dtypes and empty shapes", function()
    expect_error(function() rand("uniform_random", { shape = { 2 }, min = 1, max = 0 }) end,
      "uniform_random", "min", "max")
    expect_error(function() rand("uniform_random", { shape = { 2 }, dtype = INT32 }) end,
      "uniform_random", "dtype")
    expect_error(function() rand("uniform_random", { shape = {} }) end, "uniform_random", "shape")
  end)
end)

describe("gaussian_random", function()
  it("has the requested mean and std", function()
    local r = rand("gaussian_random", { shape = { 20000 }, mean = -1, std = 2, dtype = FP64 })
    local m, sd = moments(r.data)
    -- the sample mean's sd is 2/sqrt(20000) ~ 0.014
    assert.is_true(math.abs(m + 1) < 0.08, "mean " .. m)
    assert.is_true(math.abs(sd - 2) < 0.06, "sd " .. sd)
  end)

  it("repeats itself for a fixed seed", function()
    local a = rand("gaussian_random", { shape = { 3, 4 }, seed = 11, dtype = FP32 })
    local b = rand("gaussian_random", { shape = { 3, 4 }, seed = 11, dtype = FP32 })
    assert.are.equal("float32", a.dtype)
    assert.are.same(a.data, b.data)
  end)

  it("rejects a negative std", function()
    expect_error(function() rand("gaussian_random", { shape = { 2 }, std = -1 }) end,
      "gaussian_random", "std")
  end)
end)

describe("truncated_gaussian_random", function()
  it("keeps every value within two std of the mean", function()
    local r = rand("truncated_gaussian_random", { shape = { 10000 }, mean = 3, std = 0.5, dtype = FP64 })
    local beyond_one = 0
    for _, v in ipairs(r.data) do
      assert.is_true(math.abs(v - 3) <= 1.0, "value " .. v)
      if math.abs(v - 3) > 0.5 then beyond_one = beyond_one + 1 end
    end
    local m, sd = moments(r.data)
    assert.is_true(math.abs(m - 3) < 0.03, "mean " .. m)
    -- a normal truncated at 2 std has sd 0.880 std
    assert.is_true(math.abs(sd - 0.880 * 0.5) < 0.02, "sd " .. sd)
    -- P(|z| > 1 | |z| <= 2) = (0.9545 - 0.6827) / 0.9545 = 0.285
    assert.is_true(math.abs(beyond_one / 10000 - 0.285) < 0.03)
  end)

  it("repeats itself for a fixed seed", function()
    local a = rand("truncated_gaussian_random", { shape = { 20 }, seed = 3, dtype = FP64 })
    local b = rand("truncated_gaussian_random", { shape = { 20 }, seed = 3, dtype = FP64 })
    assert.are.same(a.data, b.data)
  end)
end)
