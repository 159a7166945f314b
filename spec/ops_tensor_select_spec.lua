-- where_index, unique, unique_with_counts, is_empty, equal_reduce: the
-- cases of Paddle's test_where_index.py, test_unique.py,
-- test_unique_with_counts.py, test_is_empty_op.py and
-- test_compare_reduce_op.py, expected values computed here.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")
local I = require("spec.helpers.index")

local expect_error = require("spec.helpers.expect_error")
local function refuses(spec, ...) expect_error(function() T.run(spec) end, ...) end

describe("where_index (test_where_index.py)", function()
  local function ref(vals, shape)
    local w, m = {}, 0
    for p = 0, #vals - 1 do
      local v = vals[p + 1]
      if v ~= 0 and v ~= false then
        m = m + 1
        for _, c in ipairs(I.unravel(p, shape)) do w[#w + 1] = c end
      end
    end
    return { shape = { m, #shape }, data = w }
  end
  it("bool [4]", function()
    local c = { true, false, false, true }
    T.check_output{ type = "where_index", inputs = { Condition = T.tensor(c, { shape = { 4 }, dtype = "bool" }) },
                    expect = { Out = ref(c, { 4 }) }, atol = 0 }
  end)
  it("bool [2, 2] and int64 / float32 [2, 3, 2]", function()
    local c = { true, false, false, true }
    T.check_output{ type = "where_index", inputs = { Condition = T.tensor(c, { shape = { 2, 2 }, dtype = "bool" }) },
                    expect = { Out = ref(c, { 2, 2 }) }, atol = 0 }
    local v = { 0, 1, 0, 0, 3, -2, 0, 0, 7, 0, 0, 5 }
    for _, dt in ipairs({ "int64", "float32" }) do
      T.check_output{ type = "where_index", inputs = { Condition = T.tensor(v, { shape = { 2, 3, 2 }, dtype = dt }) },
                      expect = { Out = ref(v, { 2, 3, 2 }) }, atol = 0 }
    end
  end)
  it("nothing true: [0, rank]", function()
    T.check_output{ type = "where_index", inputs = { Condition = T.tensor({ false, false, false }, { shape = { 3 }, dtype = "bool" }) },
                    expect = { Out = { shape = { 0, 1 }, data = {} } } }
  end)
end)

-- distinct values in order of first appearance, the index of each element, the counts
local function unique_ref(x)
  local out, index, count, pos = {}, {}, {}, {}
  for i, v in ipairs(x) do
    if not pos[v] then
      out[#out + 1] = v
      pos[v] = #out - 1
      count[#out] = 0
    end
    index[i] = pos[v]
    count[pos[v] + 1] = count[pos[v] + 1] + 1
  end
  return out, index, count
end

describe("unique / unique_with_counts (test_unique.py, test_unique_with_counts.py)", function()
  local cases = {
    { { 2, 3, 3, 1, 5, 3 }, "int64" },
    { (function() local t = {} for i = 1, 50 do t[i] = (i * 37) % 13 end return t end)(), "int32" },
    { { 0.5, -1, 0.5, 2, -1, 0.25 }, "float64" },
  }
  for _, c in ipairs(cases) do
    local x, dt = c[1], c[2]
    it(("%d %s values"):format(#x, dt), function()
      local out, index, count = unique_ref(x)
      local X = T.tensor(x, { shape = { #x }, dtype = dt })
      T.check_output{ type = "unique", inputs = { X = X }, attrs = { dtype = 2 }, outputs = { Out = 1, Index = 1 },
                      expect = { Out = { shape = { #out }, data = out }, Index = { shape = { #x }, data = index } } }
      local res = T.run{ type = "unique_with_counts", inputs = { X = X }, attrs = { dtype = 3 } }
      T.assert_close(res.Out[1], { shape = { #out }, data = out }, 0, 0)
      T.assert_close(res.Index[1], { shape = { #x }, data = index }, 0, 0)
      T.assert_close(res.Count[1], { shape = { #out }, data = count }, 0, 0)
      assert.are.equal("int64", res.Count[1].dtype)
      assert.are.equal("int32", T.run{ type = "unique", inputs = { X = X }, outputs = { Out = 1, Index = 1 } }.Index[1].dtype)
    end)
  end
  it("refuses a 2-D X (without is_sorted)", function()
    refuses({ type = "unique", inputs = { X = T.tensor({ { 1, 2 }, { 3, 4 } }) } }, "unique", "1-D")
  end)
  it("Paddle 2.x's is_sorted form: ascending values of X flattened, Index, Indices, Counts", function()
    local x = { 3, 1, 3, 7, 1, 1, 0, 7, 2, 3, 5, 3 }
    -- sorted distinct values, each one's first position, the inverse and the counts, computed here
    local seen, vals = {}, {}
    for _, v in ipairs(x) do if not seen[v] then seen[v] = true; vals[#vals + 1] = v end end
    table.sort(vals)
    local pos, first, counts, inverse = {}, {}, {}, {}
    for j, v in ipairs(vals) do pos[v] = j - 1; counts[j] = 0 end
    for i, v in ipairs(x) do
      local j = pos[v] + 1
      if counts[j] == 0 then first[j] = i - 1 end
      counts[j] = counts[j] + 1
      inverse[i] = j - 1
    end
    for _, dt in ipairs({ "int64", "float32" }) do
      local res = T.run{ type = "unique", inputs = { X = T.tensor(x, { shape = { 3, 4 }, dtype = dt }) },
                         attrs = { is_sorted = true, return_index = true, return_inverse = true, return_counts = true,
                                   dtype = 3 },
                         outputs = { Out = 1, Index = 1, Indices = 1, Counts = 1 } }
      T.assert_close(res.Out[1], { shape = { #vals }, data = vals }, 0, 0)
      T.assert_close(res.Indices[1], { shape = { #vals }, data = first }, 0, 0)
      T.assert_close(res.Index[1], { shape = { #x }, data = inverse }, 0, 0)
      T.assert_close(res.Counts[1], { shape = { #vals }, data = counts }, 0, 0)
    end
    refuses({ type = "unique", inputs = { X = T.tensor({ { 1, 2 }, { 3, 4 } }) }, attrs = { is_sorted = true, axis = { 0 } },
              outputs = { Out = 1 } }, "unique", "axis", "not implemented")
  end)
end)

describe("is_empty (test_is_empty_op.py)", function()
  it("false for [2, 3], true for [0, 3]", function()
    T.check_output{ type = "is_empty", inputs = { X = T.tensor(R.uniform(6), { shape = { 2, 3 } }) },
                    expect = { Out = { shape = { 1 }, data = { false } } } }
    T.check_output{ type = "is_empty", inputs = { X = T.tensor({}, { shape = { 0, 3 } }) },
                    expect = { Out = { shape = { 1 }, data = { true } } } }
    for _, dt in ipairs({ "int16", "int8", "uint8", "bool", "int32" }) do
      T.check_output{ type = "is_empty", inputs = { X = T.tensor({ 1, 0 }, { shape = { 2 }, dtype = dt }) },
                      expect = { Out = { shape = { 1 }, data = { false } } } }
    end
  end)
end)

describe("equal_reduce (test_compare_reduce_op.py)", function()
  local x = { 1, 5, 2, 7, 3, 3 }
  for _, dt in ipairs({ "int32", "int64", "float32", "float64" }) do
    it(dt .. ": equal, one element different, shapes different", function()
      local X = T.tensor(x, { shape = { 2, 3 }, dtype = dt })
      T.check_output{ type = "equal_reduce", inputs = { X = X, Y = T.tensor(x, { shape = { 2, 3 }, dtype = dt }) },
                      expect = { Out = { shape = { 1 }, data = { true } } } }
      local y = { 1, 5, 2, 7, 3, 4 }
      T.check_output{ type = "equal_reduce", inputs = { X = X, Y = T.tensor(y, { shape = { 2, 3 }, dtype = dt }) },
                      expect = { Out = { shape = { 1 }, data = { false } } } }
      T.check_output{ type = "equal_reduce", inputs = { X = X, Y = T.tensor(x, { shape = { 3, 2 }, dtype = dt }) },
                      expect = { Out = { shape = { 1 }, data = { false } } } }
      -- Paddle 2.x's name of the same op
      T.check_output{ type = "equal_all", inputs = { X = X, Y = T.tensor(y, { shape = { 2, 3 }, dtype = dt }) },
                      expect = { Out = { shape = { 1 }, data = { false } } } }
      T.check_output{ type = "equal_all", inputs = { X = X, Y = X },
                      expect = { Out = { shape = { 1 }, data = { true } } } }
    end)
  end
  it("refuses X and Y of different dtypes", function()
    refuses({ type = "equal_reduce", inputs = { X = T.tensor({ 1 }, { dtype = "int32" }), Y = T.tensor({ 1 }, { dtype = "int64" }) } },
            "equal_reduce", "int32", "int64")
  end)
end)
