-- cos/sin/floor/ceil/round/sign, assign_value, shape, clip_by_norm, print
local T = require("spec.helpers.op_test")

local xs = { -2.5, -1.2, -0.5, 0.3, 1.7, 2.5 }

local function map(f)
  local out = {}
  for i, x in ipairs(xs) do out[i] = f(x) end
  return out
end

local function round_half_away(x)
  if x >= 0 then return math.floor(x + 0.5) end
  return -math.floor(-x + 0.5)
end

describe("unary math ops", function()
  local cases = {
    cos = math.cos, sin = math.sin, floor = math.floor, ceil = math.ceil,
    round = round_half_away,
    sign = function(x) return x > 0 and 1 or (x < 0 and -1 or 0) end,
  }
  for op, f in pairs(cases) do
    it(op .. " matches Lua in float64 and float32", function()
      for _, dt in ipairs({ "float64", "float32" }) do
        T.check_output{ type = op, dtype = dt, inputs = { X = T.tensor(xs, { shape = { 2, 3 } }) },
          expect = { Out = { shape = { 2, 3 }, data = map(f) } }, atol = dt == "float32" and 1e-6 or 1e-12 }
      end
    end)
  end
  it("cos and sin have correct gradients", function()
    T.check_grad{ type = "cos", inputs = { X = T.tensor(xs, { shape = { 2, 3 } }) }, wrt = { "X" } }
    T.check_grad{ type = "sin", inputs = { X = T.tensor(xs, { shape = { 2, 3 } }) }, wrt = { "X" } }
  end)
  it("floor has a zero gradient", function()
    T.check_grad{ type = "floor", inputs = { X = T.tensor({ 0.3, 1.6 }, { shape = { 2 } }) }, wrt = { "X" } }
  end)
end)

describe("assign_value", function()
  it("builds a float tensor from attrs", function()
    T.check_output{ type = "assign_value", inputs = {},
      attrs = { shape = { 2, 2 }, dtype = 5, fp32_values = { 1.5, -2, 3.25, 0 } },
      expect = { Out = { shape = { 2, 2 }, data = { 1.5, -2, 3.25, 0 } } } }
  end)
  it("builds int64 and int32 tensors", function()
    local r = T.run{ type = "assign_value", inputs = {}, attrs = { shape = { 3 }, dtype = 3, int64_values = { 7, -1, 4 } } }
    assert.are.same({ 7, -1, 4 }, r.Out[1].data)
    assert.are.equal("int64", r.Out[1].dtype)
    r = T.run{ type = "assign_value", inputs = {}, attrs = { shape = { 1, 2 }, dtype = 2, int32_values = { 9, 8 } } }
    assert.are.same({ 9, 8 }, r.Out[1].data)
  end)
  it("refuses a value count that does not match the shape", function()
    local ok, err = pcall(T.run, { type = "assign_value", inputs = {},
      attrs = { shape = { 2, 3 }, dtype = 5, fp32_values = { 1, 2 } } })
    assert.is_false(ok)
    assert.truthy(err:find("fp32_values has 2 values, the shape needs 6", 1, true))
  end)
end)

describe("shape", function()
  it("returns the dims as int32", function()
    local r = T.run{ type = "shape", inputs = { Input = T.tensor(map(function(x) return x end), { shape = { 3, 2 } }) } }
    assert.are.same({ 3, 2 }, r.Out[1].data)
    assert.are.equal("int32", r.Out[1].dtype)
  end)
end)

describe("clip_by_norm", function()
  it("scales down a tensor whose norm exceeds max_norm", function()
    -- norm of (3, 4) is 5; max_norm 2.5 halves it
    T.check_output{ type = "clip_by_norm", inputs = { X = T.tensor{ 3, 4 } }, attrs = { max_norm = 2.5 },
      expect = { Out = { shape = { 2 }, data = { 1.5, 2 } } }, atol = 1e-12 }
  end)
  it("leaves a small tensor unchanged", function()
    T.check_output{ type = "clip_by_norm", inputs = { X = T.tensor{ 0.3, -0.4 } }, attrs = { max_norm = 1 },
      expect = { Out = { shape = { 2 }, data = { 0.3, -0.4 } } }, atol = 1e-12 }
  end)
  it("refuses a non-positive max_norm", function()
    assert.has_error(function()
      T.run{ type = "clip_by_norm", inputs = { X = T.tensor{ 1, 2 } }, attrs = { max_norm = 0 } }
    end)
  end)
end)

describe("print", function()
  it("passes its input through", function()
    T.check_output{ type = "print", inputs = { In = T.tensor{ 1, 2, 3 } }, outputs = { Out = 1 },
      attrs = { message = "spec print:", summarize = 2 },
      expect = { Out = { shape = { 3 }, data = { 1, 2, 3 } } } }
  end)
end)
