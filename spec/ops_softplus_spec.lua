-- softplus with Paddle 2.x's beta/threshold and thresholded_relu with Paddle
-- 3's value (kernels/cpu/activation_ext.c): Paddle's test_activation_op.py
-- cases (TestSoftplus: beta 2, threshold 15, X uniform in [-1, 1], [10, 12]),
-- expected values in plain Lua, gradients against finite differences.
local ffi = require("ffi")
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")

local function f32(v) return tonumber(ffi.new("float", v)) end

-- Paddle's SoftplusFunctor: x where beta x > threshold, else log(1 + e^(beta x)) / beta
local function softplus(x, beta, threshold)
  if beta * x > threshold then return x end
  return math.log(1 + math.exp(beta * x)) / beta
end

local function map(f, xs)
  local out = {}
  for i, x in ipairs(xs) do out[i] = f(x) end
  return out
end

describe("softplus (Paddle 2.x beta, threshold)", function()
  for _, dtype in ipairs({ "float64", "float32" }) do
    it("TestSoftplus: beta 2, threshold 15 (" .. dtype .. ")", function()
      local x = R.uniform(120, 11, -1, 1)
      local tol = dtype == "float32" and 3e-6 or 1e-12
      T.check_output{
        type = "softplus", attrs = { beta = 2, threshold = 15 }, dtype = dtype,
        inputs = { X = T.tensor(x, { shape = { 10, 12 }, dtype = dtype }) },
        expect = { Out = { shape = { 10, 12 }, data = map(function(v) return softplus(v, 2, 15) end, x) } },
        atol = tol, rtol = tol,
      }
    end)
  end

  it("cuts off at the threshold: x itself where beta x > threshold", function()
    local beta, th = f32(0.5), f32(3)
    local x = { -10, -1, 0, 2, 5.9, 6.1, 50, 800 }
    T.check_output{
      type = "softplus", attrs = { beta = 0.5, threshold = 3 },
      inputs = { X = T.tensor(x, { shape = { 8 } }) },
      expect = { Out = { shape = { 8 }, data = map(function(v) return softplus(v, beta, th) end, x) } },
      atol = 1e-12, rtol = 1e-12,
    }
    -- 6.1 is past the cut-off (0.5 * 6.1 > 3): exactly x, not log(1 + e^3.05) / 0.5
    local out = T.run{ type = "softplus", attrs = { beta = 0.5, threshold = 3 },
                       inputs = { X = T.tensor({ 6.1 }, { shape = { 1 } }) } }
    assert.are.equal(6.1, out.Out[1].data[1])
  end)

  it("defaults to beta 1, threshold 20 (Fluid 1.8's softplus below 20)", function()
    local x = { -30, -3, 0, 3, 19, 21, 800 }
    T.check_output{
      type = "softplus", inputs = { X = T.tensor(x, { shape = { 7 } }) },
      expect = { Out = { shape = { 7 }, data = map(function(v) return softplus(v, 1, 20) end, x) } },
      atol = 1e-12, rtol = 1e-12,
    }
  end)

  it("gradient matches finite differences (beta 2, threshold 15 and beta 0.7, threshold 1)", function()
    T.check_grad{ type = "softplus", attrs = { beta = 2, threshold = 15 },
                  inputs = { X = T.tensor(R.uniform(12, 3, -1, 1), { shape = { 3, 4 } }) }, wrt = { "X" } }
    -- values away from the cut-off at x = 1 / 0.7
    local x = { -2, -1, -0.3, 0.2, 0.6, 1, 1.2, 1.7, 2, 3, 4, 5 }
    T.check_grad{ type = "softplus", attrs = { beta = 0.7, threshold = 1 },
                  inputs = { X = T.tensor(x, { shape = { 3, 4 } }) }, wrt = { "X" } }
  end)

  it("refuses beta 0", function()
    local ok, err = pcall(T.run, { type = "softplus", attrs = { beta = 0 },
                                   inputs = { X = T.tensor({ 1 }, { shape = { 1 } }) } })
    assert.is_false(ok)
    assert.matches("attr beta must not be 0", err, 1, true)
  end)
end)

describe("thresholded_relu value (Paddle 3)", function()
  it("gives value below the threshold, x above", function()
    local x = { -2, 0.5, 1, 1.5, 3 }
    T.check_output{
      type = "thresholded_relu", attrs = { threshold = 1, value = -0.5 },
      inputs = { X = T.tensor(x, { shape = { 5 } }) },
      expect = { Out = { shape = { 5 }, data = { -0.5, -0.5, -0.5, 1.5, 3 } } }, atol = 1e-12,
    }
    T.check_grad{ type = "thresholded_relu", attrs = { threshold = 1, value = 2 },
                  inputs = { X = T.tensor({ -2, 0.5, 1.5, 3 }, { shape = { 2, 2 } }) }, wrt = { "X" } }
  end)
end)
