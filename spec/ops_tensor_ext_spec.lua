-- prelu, where, index_select, gather_nd, cumsum: the cases of Paddle's
-- test_prelu_op.py, test_where_op.py, test_index_select_op.py,
-- test_gather_nd_op.py and test_cumsum_op.py (shapes reduced where Paddle's
-- are large), expected values by plain index arithmetic here, gradients
-- against finite differences in float64.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")
local I = require("spec.helpers.index")
local numel, unravel, ravel = I.numel, I.unravel, I.ravel

-- values in [-1, 1] kept away from 0 (the kink of prelu)
local function away_from_zero(n, seed)
  local x = R.uniform(n, seed, -1, 1)
  for i, v in ipairs(x) do if math.abs(v) < 0.05 then x[i] = 0.1 end end
  return x
end

describe("prelu (test_prelu_op.py)", function()
  local xs = { 2, 3, 3, 4 }
  local modes = {
    all = { 1 },
    channel = { 1, 3, 1, 1 },
    element = { 1, 3, 3, 4 },
  }
  for mode, as in pairs(modes) do
    it("mode " .. mode, function()
      local x = away_from_zero(numel(xs), 3)
      local alpha = R.uniform(numel(as), 4, 0, 1)
      local want = {}
      for p = 0, numel(xs) - 1 do
        local idx = unravel(p, xs)
        local j = mode == "all" and 0 or (mode == "channel" and idx[2] or ravel({ idx[2], idx[3], idx[4] }, { 3, 3, 4 }))
        local v = x[p + 1]
        want[p + 1] = v > 0 and v or alpha[j + 1] * v
      end
      T.check_output{
        type = "prelu", attrs = { mode = mode },
        inputs = { X = T.tensor(x, { shape = xs }), Alpha = T.tensor(alpha, { shape = as }) },
        expect = { Out = { shape = xs, data = want } }, atol = 1e-12,
      }
      T.check_grad{
        type = "prelu", attrs = { mode = mode },
        inputs = { X = T.tensor(x, { shape = xs }), Alpha = T.tensor(alpha, { shape = as }) },
        wrt = { "X", "Alpha" },
      }
    end)
  end

  it("channel mode of Paddle 2.x (Alpha [C]) and NHWC", function()
    local x = { -1, 2, -3, 4, -5, 6 }
    T.check_output{
      type = "prelu", attrs = { mode = "channel", data_format = "NHWC" },
      inputs = { X = T.tensor(x, { shape = { 1, 3, 2 } }), Alpha = T.tensor({ 0.5, 0.25 }, { shape = { 2 } }) },
      expect = { Out = { shape = { 1, 3, 2 }, data = { -0.5, 2, -1.5, 4, -2.5, 6 } } }, atol = 0,
    }
  end)

  it("refuses an Alpha of the wrong size", function()
    local ok, err = pcall(T.run, { type = "prelu", attrs = { mode = "channel" },
      inputs = { X = T.tensor(R.uniform(24, 1, -1, 1), { shape = { 2, 3, 4 } }), Alpha = T.tensor({ 1, 2 }, { shape = { 2 } }) } })
    assert.is_false(ok)
    assert.matches("Alpha ('in_Alpha_1') has 2 values, mode \"channel\" needs X's channel count = 3", err, 1, true)
  end)
end)

describe("where (test_where_op.py)", function()
  for _, shape in ipairs({ { 100 }, { 60, 2 }, { 20, 2, 2 } }) do
    it("shape " .. table.concat(shape, "x"), function()
      local n = numel(shape)
      local x, y = R.uniform(n, 1, -3, 5), R.uniform(n, 2, -5, 3)
      local cond, want = {}, {}
      for i = 1, n do
        cond[i] = x[i] > y[i]
        want[i] = cond[i] and x[i] or y[i]
      end
      local ins = { Condition = T.tensor(cond, { shape = shape, dtype = "bool" }),
                    X = T.tensor(x, { shape = shape }), Y = T.tensor(y, { shape = shape }) }
      T.check_output{ type = "where", inputs = ins, expect = { Out = { shape = shape, data = want } }, atol = 0 }
      T.check_grad{ type = "where", inputs = ins, wrt = { "X", "Y" } }
    end)
  end

  it("selects int64 elements too", function()
    T.check_output{
      type = "where",
      inputs = { Condition = T.tensor({ true, false, true }, { shape = { 3 }, dtype = "bool" }),
                 X = T.tensor({ 1, 2, 3 }, { shape = { 3 }, dtype = "int64" }),
                 Y = T.tensor({ 10, 20, 30 }, { shape = { 3 }, dtype = "int64" }) },
      expect = { Out = { shape = { 3 }, data = { 1, 20, 3 } } }, atol = 0,
    }
  end)
end)

-- out[.., i, ..] = x[.., index[i], ..] along dim
local function index_select_ref(x, xs, index, dim)
  local os = {}
  for i, d in ipairs(xs) do os[i] = d end
  os[dim + 1] = #index
  local out = {}
  for p = 0, numel(os) - 1 do
    local idx = unravel(p, os)
    idx[dim + 1] = index[idx[dim + 1] + 1]
    out[p + 1] = x[ravel(idx, xs) + 1]
  end
  return out, os
end

describe("index_select (test_index_select_op.py)", function()
  local cases = {
    { { 10, 4, 5 }, 1, 6 },      -- TestIndexSelectOp (x 100x4x5, 20 indices along dim 1)
    { { 5, 6, 3, 4 }, -2, 5 },   -- TestIndexSelectOpCase2 (dim -2)
    { { 7, 3 }, 0, 9 },          -- repeated indices along dim 0
  }
  for ci, c in ipairs(cases) do
    it(("x %s, dim %d"):format(table.concat(c[1], "x"), c[2]), function()
      local xs = c[1]
      local dim = c[2] < 0 and c[2] + #xs or c[2]
      local x = R.uniform(numel(xs), ci, -1, 1)
      local index = {}
      for i = 1, c[3] do index[i] = (i * 7 + ci) % xs[dim + 1] end
      local want, os = index_select_ref(x, xs, index, dim)
      for _, idt in ipairs({ "int64", "int32" }) do
        local ins = { X = T.tensor(x, { shape = xs }), Index = T.tensor(index, { shape = { #index }, dtype = idt }) }
        T.check_output{ type = "index_select", attrs = { dim = c[2] }, inputs = ins,
                        expect = { Out = { shape = os, data = want } }, atol = 0 }
      end
      T.check_grad{ type = "index_select", attrs = { dim = c[2] },
                    inputs = { X = T.tensor(x, { shape = xs }), Index = T.tensor(index, { shape = { #index }, dtype = "int64" }) },
                    wrt = { "X" } }
    end)
  end

  it("refuses an index out of range", function()
    local ok, err = pcall(T.run, { type = "index_select", attrs = { dim = 0 },
      inputs = { X = T.tensor({ 1, 2, 3 }, { shape = { 3 } }), Index = T.tensor({ 0, 3 }, { shape = { 2 }, dtype = "int64" }) } })
    assert.is_false(ok)
    assert.matches("Index[1] = 3 is out of range [0, 3)", err, 1, true)
  end)
end)

describe("gather_nd (test_gather_nd_op.py)", function()
  -- x, index (rows of k coordinates), index shape; out = x[index row] slices
  local function ref(x, xs, index, is)
    local k = is[#is]
    local rows = 1
    for i = 1, #is - 1 do rows = rows * is[i] end
    local slice = 1
    for i = k + 1, #xs do slice = slice * xs[i] end
    local out = {}
    for r = 0, rows - 1 do
      local off = 0
      for j = 1, k do off = off * xs[j] + index[r * k + j] end
      for s = 1, slice do out[#out + 1] = x[off * slice + s] end
    end
    local os = {}
    for i = 1, #is - 1 do os[i] = is[i] end
    for i = k + 1, #xs do os[#os + 1] = xs[i] end
    return out, os
  end

  local cases = {
    { "TestGatherNdOpWithEmptyIndex", { 5, 4 }, {}, { 2, 0 } },
    { "TestGatherNdOpWithIndex1", { 5, 6, 4 }, { 1 }, { 1 } },
    { "TestGatherNdOpWithLowIndex", { 10, 20 }, { 1, 2 }, { 2, 1 } },
    { "TestGatherNdOpIndex1", { 10, 20 }, { 1, 2 }, { 2 } },
    { "TestGatherNdOpWithSameIndexAsX", { 4, 3 }, nil, { 12, 2 } },
    { "TestGatherNdOpWithHighRankSame", { 3, 4, 2, 3 }, { 1, 2, 0, 1, 0, 2, 1, 0, 2, 3, 1, 2 }, { 3, 4 } },
    { "TestGatherNdOpWithHighRankDiff", { 3, 4, 2, 3 }, { 2, 3, 1, 0, 1, 0, 1, 2 }, { 2, 2, 2 } },
  }
  for ci, c in ipairs(cases) do
    it(c[1], function()
      local xs, is = c[2], c[4]
      local index = c[3]
      if not index then   -- every coordinate of X
        index = {}
        for i = 0, 3 do for j = 0, 2 do index[#index + 1] = i; index[#index + 1] = j end end
      end
      local x = R.uniform(numel(xs), ci, -1, 1)
      local want, os = ref(x, xs, index, is)
      local ins = { X = T.tensor(x, { shape = xs }), Index = T.tensor(index, { shape = is, dtype = "int32" }) }
      T.check_output{ type = "gather_nd", inputs = ins, expect = { Out = { shape = os, data = want } }, atol = 0 }
      T.check_grad{ type = "gather_nd", inputs = ins, wrt = { "X" } }
    end)
  end

  it("refuses a coordinate out of range", function()
    local ok, err = pcall(T.run, { type = "gather_nd",
      inputs = { X = T.tensor(R.uniform(6, 1, -1, 1), { shape = { 2, 3 } }),
                 Index = T.tensor({ 1, 3 }, { shape = { 1, 2 }, dtype = "int64" }) } })
    assert.is_false(ok)
    assert.matches("Index row 0, entry 1 = 3 is out of range [0, 3)", err, 1, true)
  end)
end)

describe("cumsum (test_cumsum_op.py)", function()
  local function ref(x, xs, axis, exclusive, reverse)
    if axis < 0 then axis = axis + #xs end
    local out = {}
    for p = 0, numel(xs) - 1 do
      local idx = unravel(p, xs)
      local s = 0
      local lo, hi = 0, idx[axis + 1]
      if reverse then lo, hi = idx[axis + 1], xs[axis + 1] - 1 end
      for t = lo, hi do
        local j = { unpack(idx) }
        j[axis + 1] = t
        if not (exclusive and t == idx[axis + 1]) then s = s + x[ravel(j, xs) + 1] end
      end
      out[p + 1] = s
    end
    return out
  end

  local cases = {
    { "TestSumOp1", { 5, 6, 4 }, { axis = 2 } },
    { "TestSumOp2 (reverse)", { 5, 6, 4 }, { axis = -1, reverse = true } },
    { "TestSumOp3", { 5, 6, 4 }, { axis = 1 } },
    { "TestSumOp4", { 5, 6, 4 }, { axis = 0 } },
    { "TestSumOp5 (default axis)", { 5, 20 }, {} },
    { "TestSumOpExclusive1", { 4, 5, 7 }, { axis = 2, exclusive = true } },
    { "TestSumOpExclusive (reverse)", { 4, 5, 7 }, { axis = 1, exclusive = true, reverse = true } },
  }
  for ci, c in ipairs(cases) do
    it(c[1], function()
      local xs, a = c[2], c[3]
      local x = R.uniform(numel(xs), ci, -1, 1)
      local want = ref(x, xs, a.axis or -1, a.exclusive, a.reverse)
      T.check_output{ type = "cumsum", attrs = a, inputs = { X = T.tensor(x, { shape = xs }) },
                      expect = { Out = { shape = xs, data = want } }, atol = 1e-12 }
      T.check_grad{ type = "cumsum", attrs = a, inputs = { X = T.tensor(x, { shape = xs }) }, wrt = { "X" } }
    end)
  end

  it("TestSumOp7 (flatten): a running sum over all of X, Out 1-D", function()
    local x = { 1, 2, 3, 4, 5, 6 }
    T.check_output{ type = "cumsum", attrs = { flatten = true }, inputs = { X = T.tensor(x, { shape = { 2, 3 } }) },
                    expect = { Out = { shape = { 6 }, data = { 1, 3, 6, 10, 15, 21 } } }, atol = 0 }
    T.check_grad{ type = "cumsum", attrs = { flatten = true, reverse = true },
                  inputs = { X = T.tensor(R.uniform(6, 3, -1, 1), { shape = { 2, 3 } }) }, wrt = { "X" } }
  end)

  it("sums int32 and int64", function()
    T.check_output{ type = "cumsum", attrs = { axis = 0 },
                    inputs = { X = T.tensor({ 1, 2, 3, 4 }, { shape = { 4 }, dtype = "int32" }) },
                    expect = { Out = { shape = { 4 }, data = { 1, 3, 6, 10 } } }, atol = 0 }
  end)
end)
