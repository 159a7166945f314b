-- gather, one_hot, top_k, arg_max, arg_min: values against plain Lua
-- references, ties and NaN, range errors, gradients.
local T = require("spec.helpers.op_test")

local expect_error = require("spec.helpers.expect_error")

local DTYPES = { "float64", "float32" }

local function ints(list, shape, dtype)
  return T.tensor(list, { shape = shape or { #list }, dtype = dtype or "int64" })
end

describe("gather", function()
  local X = { 1.5, -2, 0.25, 3, -0.5, 4, 7, 8 }   -- [4, 2]
  local function rows(idx)
    local out = {}
    for _, i in ipairs(idx) do out[#out + 1] = X[i * 2 + 1]; out[#out + 1] = X[i * 2 + 2] end
    return out
  end
  for _, dt in ipairs(DTYPES) do
    it("takes rows by int64 and int32 index (" .. dt .. ")", function()
      local x = T.tensor(X, { shape = { 4, 2 }, dtype = dt })
      T.check_output{ type = "gather", inputs = { X = x, Index = ints({ 3, 0, 3 }) },
        expect = { Out = { shape = { 3, 2 }, data = rows({ 3, 0, 3 }) } } }
      T.check_output{ type = "gather", inputs = { X = x, Index = ints({ 2, 1 }, { 2, 1 }, "int32") },
        expect = { Out = { shape = { 2, 2 }, data = rows({ 2, 1 }) } } }
    end)
  end

  it("moves int64 rows of higher rank", function()
    local r = T.run{ type = "gather", inputs = { X = ints({ 1, 2, 3, 4, 5, 6, 7, 2 ^ 45 }, { 2, 2, 2 }),
      Index = ints({ 1, 1, 0 }) } }
    assert.are.same({ 3, 2, 2 }, r.Out[1].shape)
    assert.are.same({ 5, 6, 7, 2 ^ 45, 5, 6, 7, 2 ^ 45, 1, 2, 3, 4 }, r.Out[1].data)
  end)

  it("rejects indices out of range and bad index shapes", function()
    local x = T.tensor(X, { shape = { 4, 2 } })
    expect_error(function() T.run{ type = "gather", inputs = { X = x, Index = ints({ 0, 4 }) } } end,
      "gather", "holds 4 at position 1", "[0, 4)")
    expect_error(function() T.run{ type = "gather", inputs = { X = x, Index = ints({ -1 }, nil, "int32") } } end,
      "gather", "holds -1 at position 0")
    expect_error(function() T.run{ type = "gather", inputs = { X = x, Index = ints({ 0, 1 }, { 1, 2 }) } } end,
      "gather", "[1, 2]")
    expect_error(function() T.run{ type = "gather", inputs = { X = x, Index = T.tensor({ 0 }, { shape = { 1 } }) } } end,
      "gather", "float64", "int32 or int64")
  end)

  it("has a gradient that adds repeated indices", function()
    T.check_grad{ type = "gather", wrt = { "X" },
      inputs = { X = T.tensor(X, { shape = { 4, 2 } }), Index = ints({ 1, 3, 1, 1 }) } }
  end)
end)

describe("one_hot", function()
  local function ref(vals, depth)
    local out = {}
    for _, v in ipairs(vals) do
      for j = 0, depth - 1 do out[#out + 1] = (j == v) and 1 or 0 end
    end
    return out
  end

  for _, xdt in ipairs({ "int64", "int32" }) do
    it("encodes " .. xdt .. " ids as float32 rows by default", function()
      local r = T.check_output{ type = "one_hot", attrs = { depth = 4 },
        inputs = { X = ints({ 3, 0, 2 }, { 3, 1 }, xdt) }, expect = { Out = { shape = { 3, 4 }, data = ref({ 3, 0, 2 }, 4) } } }
      assert.are.equal("float32", r.Out[1].dtype)
    end)
  end

  it("honours dtype, LoD and depth_tensor", function()
    local r = T.run{ type = "one_hot", attrs = { depth = 3, dtype = 3 },
      inputs = { X = T.tensor({ 1, 2 }, { shape = { 2, 1 }, dtype = "int64", lod = { { 0, 2 } } }) } }
    assert.are.equal("int64", r.Out[1].dtype)
    assert.are.same(ref({ 1, 2 }, 3), r.Out[1].data)
    assert.are.same({ { 0, 2 } }, r.Out[1].lod)
    r = T.run{ type = "one_hot", attrs = { dtype = 6 },
      inputs = { X = ints({ 4, 1 }, { 2, 1 }), depth_tensor = ints({ 5 }, { 1 }, "int32") } }
    assert.are.same({ 2, 5 }, r.Out[1].shape)
    assert.are.same(ref({ 4, 1 }, 5), r.Out[1].data)
  end)

  it("rejects ids out of range unless allowed", function()
    expect_error(function() T.run{ type = "one_hot", attrs = { depth = 3 }, inputs = { X = ints({ 1, 3 }, { 2, 1 }) } } end,
      "one_hot", "holds 3 at row 1", "[0, 3)")
    local r = T.run{ type = "one_hot", attrs = { depth = 3, allow_out_of_range = true },
      inputs = { X = ints({ 1, 3, -1 }, { 3, 1 }) } }
    assert.are.same({ 0, 1, 0, 0, 0, 0, 0, 0, 0 }, r.Out[1].data)
    expect_error(function() T.run{ type = "one_hot", inputs = { X = ints({ 1 }, { 1, 1 }) } } end,
      "one_hot", "depth = -1")
    expect_error(function() T.run{ type = "one_hot", attrs = { depth = 2 }, inputs = { X = ints({ 1, 0 }, { 1, 2 }) } } end,
      "one_hot", "[1, 2]", "[..., 1]")
  end)
end)

-- top k of each row (ties to the lower index; NaN above all)
local function topk_ref(data, rows, d, k)
  local vals, idx = {}, {}
  for r = 0, rows - 1 do
    local order = {}
    for j = 0, d - 1 do order[#order + 1] = j end
    local function v(j) return data[r * d + j + 1] end
    table.sort(order, function(a, b)
      local va, vb = v(a), v(b)
      local na, nb = va ~= va, vb ~= vb
      if na ~= nb then return na end
      if not na and va ~= vb then return va > vb end
      return a < b
    end)
    for j = 1, k do vals[#vals + 1] = v(order[j]); idx[#idx + 1] = order[j] end
  end
  return vals, idx
end

describe("top_k", function()
  local X = { 3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8 }   -- ties: 1, 1 and 5, 5, 5
  for _, dt in ipairs(DTYPES) do
    it("returns the k largest per row with their indices (" .. dt .. ")", function()
      for _, k in ipairs({ 1, 3, 6 }) do
        local v, i = topk_ref(X, 2, 6, k)
        local r = T.check_output{ type = "top_k", attrs = { k = k }, inputs = { X = T.tensor(X, { shape = { 2, 6 }, dtype = dt }) },
          expect = { Out = { shape = { 2, k }, data = v }, Indices = { shape = { 2, k }, data = i } } }
        assert.are.equal("int64", r.Indices[1].dtype)
      end
    end)
  end

  it("breaks ties by the lower index and ranks NaN first", function()
    local nan = 0 / 0
    local r = T.run{ type = "top_k", attrs = { k = 3 }, inputs = { X = T.tensor({ 2, 7, 7, nan, 7, 1 }, { shape = { 1, 6 } }) } }
    assert.are.same({ 3, 1, 2 }, r.Indices[1].data)
    assert.is_true(r.Out[1].data[1] ~= r.Out[1].data[1])
  end)

  it("selects from long rows with large k (sort path) and int rows", function()
    local d, rows = 150, 3
    local X2 = {}
    for i = 1, d * rows do X2[i] = (i * 37) % 101 - 50 end   -- many ties
    local v, i = topk_ref(X2, rows, d, 100)
    T.check_output{ type = "top_k", attrs = { k = 100 }, inputs = { X = T.tensor(X2, { shape = { rows, d } }) },
      expect = { Out = { shape = { rows, 100 }, data = v }, Indices = { shape = { rows, 100 }, data = i } } }
    local v2, i2 = topk_ref(X2, rows, d, 7)
    local r = T.run{ type = "top_k", attrs = { k = 7 }, inputs = { X = T.tensor(X2, { shape = { rows, d }, dtype = "int64" }) } }
    assert.are.same(v2, r.Out[1].data)
    assert.are.same(i2, r.Indices[1].data)
  end)

  it("takes k from the K input and works on higher ranks", function()
    local v, i = topk_ref(X, 4, 3, 2)
    T.check_output{ type = "top_k", inputs = { X = T.tensor(X, { shape = { 2, 2, 3 } }), K = ints({ 2 }, { 1 }, "int32") },
      expect = { Out = { shape = { 2, 2, 2 }, data = v }, Indices = { shape = { 2, 2, 2 }, data = i } } }
  end)

  it("rejects k larger than the last dimension", function()
    expect_error(function() T.run{ type = "top_k", attrs = { k = 7 }, inputs = { X = T.tensor(X, { shape = { 2, 6 } }) } } end,
      "top_k", "k = 7", "last dimension is 6")
    expect_error(function()
      T.run{ type = "top_k", inputs = { X = T.tensor(X, { shape = { 2, 6 } }), K = ints({ 0 }, { 1 }, "int32") } }
    end, "top_k", "k = 0")
  end)

  it("routes the gradient to the chosen positions", function()
    local Xg = { 0.3, -1.2, 2.5, 0.9, 1.7, -0.4, 0.05, 1.1 }
    T.check_grad{ type = "top_k", attrs = { k = 3 }, of = { "Out" }, wrt = { "X" },
      inputs = { X = T.tensor(Xg, { shape = { 2, 4 } }) } }
  end)
end)

-- arg of the extreme along axis (0-based) of a row-major tensor; first wins
local function arg_ref(data, shape, axis, is_max)
  local pre, post, n = 1, 1, shape[axis + 1]
  for i = 1, axis do pre = pre * shape[i] end
  for i = axis + 2, #shape do post = post * shape[i] end
  local out = {}
  for p = 0, pre - 1 do
    for q = 0, post - 1 do
      local best, bv = 0, data[p * n * post + q + 1]
      for j = 1, n - 1 do
        local v = data[(p * n + j) * post + q + 1]
        if (is_max and v > bv) or (not is_max and v < bv) then best, bv = j, v end
      end
      out[#out + 1] = best
    end
  end
  return out
end

describe("arg_max / arg_min", function()
  local X = { 3, 9, 4, 9, 0, -1, 2, 2, 7, 7, 1, 0, 5, 5, 5, -3, 8, 8, 8, -3, 6, 6, 2, 1 }   -- [2, 3, 4]
  local shape = { 2, 3, 4 }
  for _, dt in ipairs({ "float64", "float32", "int64", "int32" }) do
    it("finds the first extreme along each axis (" .. dt .. ")", function()
      for _, op in ipairs({ "arg_max", "arg_min" }) do
        for axis = 0, 2 do
          local oshape = {}
          for i = 1, 3 do if i ~= axis + 1 then oshape[#oshape + 1] = shape[i] end end
          local r = T.check_output{ type = op, attrs = { axis = axis },
            inputs = { X = T.tensor(X, { shape = shape, dtype = dt }) },
            expect = { Out = { shape = oshape, data = arg_ref(X, shape, axis, op == "arg_max") } } }
          assert.are.equal("int64", r.Out[1].dtype)
        end
      end
    end)
  end

  it("supports negative axes, keepdims, flatten and int32 output", function()
    local x = T.tensor(X, { shape = shape })
    T.check_output{ type = "arg_max", attrs = { axis = -1, keepdims = true }, inputs = { X = x },
      expect = { Out = { shape = { 2, 3, 1 }, data = arg_ref(X, shape, 2, true) } } }
    T.check_output{ type = "arg_min", attrs = { flatten = true }, inputs = { X = x },
      expect = { Out = { shape = { 1 }, data = { 15 } } } }
    local r = T.run{ type = "arg_max", attrs = { axis = 1, dtype = 2 }, inputs = { X = x } }
    assert.are.equal("int32", r.Out[1].dtype)
    assert.are.same(arg_ref(X, shape, 1, true), r.Out[1].data)
    T.check_output{ type = "arg_max", inputs = { X = T.tensor({ 1, 4, 4 }, { shape = { 3 } }) },
      expect = { Out = { shape = { 1 }, data = { 1 } } } }
  end)

  it("takes the first NaN", function()
    local nan = 0 / 0
    for _, op in ipairs({ "arg_max", "arg_min" }) do
      local r = T.run{ type = op, attrs = { axis = 1 }, inputs = { X = T.tensor({ 1, nan, 5, nan }, { shape = { 1, 4 } }) } }
      assert.are.same({ 1 }, r.Out[1].data)
    end
  end)

  it("rejects bad axes and dtypes", function()
    local x = T.tensor(X, { shape = shape })
    expect_error(function() T.run{ type = "arg_max", attrs = { axis = 3 }, inputs = { X = x } } end,
      "arg_max", "axis = 3", "rank 3")
    expect_error(function() T.run{ type = "arg_min", attrs = { axis = -4 }, inputs = { X = x } } end,
      "arg_min", "axis = -4")
    expect_error(function() T.run{ type = "arg_max", attrs = { dtype = 5 }, inputs = { X = x } } end,
      "arg_max", "dtype = 5")
  end)
end)
