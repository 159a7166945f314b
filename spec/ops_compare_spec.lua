-- Comparisons (bool Out, broadcasting like elementwise ops) and logical ops:
-- expected values computed here in plain Lua, and errors.
local T = require("spec.helpers.op_test")

local CMP = {
  less_than = function(a, b) return a < b end,
  less_equal = function(a, b) return a <= b end,
  greater_than = function(a, b) return a > b end,
  greater_equal = function(a, b) return a >= b end,
  equal = function(a, b) return a == b end,
  not_equal = function(a, b) return a ~= b end,
}

-- out[i, j] = f(x[i, j], y[j]) for X [rows, cols], Y [cols]
local function ref_rows(f, x, y, cols)
  local out = {}
  for i = 1, #x do out[i] = f(x[i], y[(i - 1) % cols + 1]) end
  return out
end

describe("comparison ops", function()
  local x = { 1, 2, 3, -4, 5, 6 }
  local y_same = { 1, 3, 2, -4, 6, 5 }
  local y_row = { 2, 2, 3 }
  for optype, f in pairs(CMP) do
    for _, dtype in ipairs({ "float64", "float32", "int32", "int64" }) do
      it(("%s same shape (%s)"):format(optype, dtype), function()
        local res = T.check_output{
          type = optype,
          inputs = { X = T.tensor(x, { shape = { 2, 3 }, dtype = dtype }), Y = T.tensor(y_same, { shape = { 2, 3 }, dtype = dtype }) },
          expect = { Out = { shape = { 2, 3 }, data = ref_rows(f, x, y_same, 6) } },
        }
        assert.are.equal("bool", res.Out[1].dtype)
      end)
      it(("%s broadcast row (%s)"):format(optype, dtype), function()
        T.check_output{
          type = optype,
          inputs = { X = T.tensor(x, { shape = { 2, 3 }, dtype = dtype }), Y = T.tensor(y_row, { shape = { 3 }, dtype = dtype }) },
          expect = { Out = { shape = { 2, 3 }, data = ref_rows(f, x, y_row, 3) } },
        }
      end)
    end
  end

  it("broadcasts at a given axis", function()
    -- X [2, 3], Y [2] at axis 0: out[i, j] = x[i, j] < y[i]
    T.check_output{
      type = "less_than", attrs = { axis = 0 },
      inputs = { X = T.tensor{ { 1, 2, 3 }, { 4, 5, 6 } }, Y = T.tensor({ 2, 6 }, { shape = { 2 } }) },
      expect = { Out = { shape = { 2, 3 }, data = { true, false, false, true, true, false } } },
    }
  end)

  it("compares a scalar Y against every element", function()
    T.check_output{
      type = "greater_equal",
      inputs = { X = T.tensor({ 1, 5, 3, 7 }, { shape = { 4 }, dtype = "int64" }), Y = T.tensor({ 3 }, { shape = { 1 }, dtype = "int64" }) },
      expect = { Out = { shape = { 4 }, data = { false, true, true, true } } },
    }
  end)

  it("equal and not_equal take bool operands", function()
    local a = { true, false, true, false }
    local b = { true, true, false, false }
    T.check_output{
      type = "equal",
      inputs = { X = T.tensor(a, { shape = { 4 }, dtype = "bool" }), Y = T.tensor(b, { shape = { 4 }, dtype = "bool" }) },
      expect = { Out = { shape = { 4 }, data = { true, false, false, true } } },
    }
    T.check_output{
      type = "not_equal",
      inputs = { X = T.tensor(a, { shape = { 4 }, dtype = "bool" }), Y = T.tensor(b, { shape = { 4 }, dtype = "bool" }) },
      expect = { Out = { shape = { 4 }, data = { false, true, true, false } } },
    }
  end)

  it("large inputs (parallel path) match the plain loop", function()
    local n = 70001
    local xs, ys = {}, {}
    for i = 1, n do xs[i] = (i * 7919) % 1000; ys[i] = (i * 104729) % 1000 end
    T.check_output{
      type = "less_equal",
      inputs = { X = T.tensor(xs, { shape = { n }, dtype = "int32" }), Y = T.tensor(ys, { shape = { n }, dtype = "int32" }) },
      expect = { Out = { shape = { n }, data = ref_rows(CMP.less_equal, xs, ys, n) } },
    }
  end)

  it("names the op and both shapes when Y does not broadcast", function()
    local ok, err = pcall(T.run, {
      type = "less_than",
      inputs = { X = T.tensor{ { 1, 2, 3 }, { 4, 5, 6 } }, Y = T.tensor{ { 1, 2 }, { 3, 4 } } },
    })
    assert.is_false(ok)
    assert.truthy(err:find("less_than", 1, true), err)
    assert.truthy(err:find("[2, 2]", 1, true) and err:find("[2, 3]", 1, true), err)
  end)

  it("rejects operands of different dtypes", function()
    local ok, err = pcall(T.run, {
      type = "equal",
      inputs = { X = T.tensor({ 1, 2 }, { shape = { 2 }, dtype = "int32" }), Y = T.tensor({ 1, 2 }, { shape = { 2 }, dtype = "int64" }) },
    })
    assert.is_false(ok)
    assert.truthy(err:find("equal", 1, true), err)
    assert.truthy(err:find("int32", 1, true) and err:find("int64", 1, true), err)
  end)

  it("has no gradient", function()
    local C = require("oar.lib").C
    for optype in pairs(CMP) do assert.is_false(C.oar_op_has_grad(optype), optype) end
  end)
end)

describe("logical ops", function()
  local a = { true, true, false, false }
  local b = { true, false, true, false }
  local LOGIC = {
    logical_and = function(p, q) return p and q end,
    logical_or = function(p, q) return p or q end,
    logical_xor = function(p, q) return p ~= q end,
  }
  for optype, f in pairs(LOGIC) do
    it(optype, function()
      local want = {}
      for i = 1, 4 do want[i] = f(a[i], b[i]) end
      T.check_output{
        type = optype,
        inputs = { X = T.tensor(a, { shape = { 2, 2 }, dtype = "bool" }), Y = T.tensor(b, { shape = { 2, 2 }, dtype = "bool" }) },
        expect = { Out = { shape = { 2, 2 }, data = want } },
      }
    end)
    it(optype .. " broadcasts a row", function()
      local want = {}
      for i = 1, 4 do want[i] = f(a[i], b[(i - 1) % 2 + 1]) end
      T.check_output{
        type = optype,
        inputs = { X = T.tensor(a, { shape = { 2, 2 }, dtype = "bool" }), Y = T.tensor({ b[1], b[2] }, { shape = { 2 }, dtype = "bool" }) },
        expect = { Out = { shape = { 2, 2 }, data = want } },
      }
    end)
  end

  it("logical_not", function()
    T.check_output{
      type = "logical_not",
      inputs = { X = T.tensor(a, { shape = { 4 }, dtype = "bool", lod = { { 0, 1, 4 } } }) },
      expect = { Out = { shape = { 4 }, data = { false, false, true, true }, lod = { { 0, 1, 4 } } } },
    }
  end)

  it("rejects non-bool inputs, naming the op and the dtype", function()
    local ok, err = pcall(T.run, {
      type = "logical_and",
      inputs = { X = T.tensor({ 1, 0 }, { shape = { 2 }, dtype = "int32" }), Y = T.tensor({ true, false }, { shape = { 2 }, dtype = "bool" }) },
    })
    assert.is_false(ok)
    assert.truthy(err:find("logical_and", 1, true), err)
    assert.truthy(err:find("int32", 1, true), err)
    ok, err = pcall(T.run, { type = "logical_not", inputs = { X = T.tensor({ 1.5 }, { shape = { 1 } }) } })
    assert.is_false(ok)
    assert.truthy(err:find("logical_not", 1, true) and err:find("float64", 1, true), err)
  end)
end)
