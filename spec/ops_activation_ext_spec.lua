-- The rest of the activation family (src/ops/activation_ext.c): Fluid 1.8's
-- test_activation_op.py cases (input ranges, shapes and attrs as there),
-- expected values computed here in plain Lua, gradients against finite
-- differences in float64.
local ffi = require("ffi")
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")

-- FLOAT attrs are stored as float32: formulas use the stored value
local function f32(v) return tonumber(ffi.new("float", v)) end

local function tanh(x)
  local e = math.exp(-2 * math.abs(x))
  local t = (1 - e) / (1 + e)
  return x < 0 and -t or t
end
local function sigmoid(x) return 1 / (1 + math.exp(-x)) end
local function clamp(x, lo, hi) return math.min(math.max(x, lo), hi) end
local function log1p(x) return x < 1e-4 and x > -1e-4 and x - x * x / 2 + x * x * x / 3 or math.log(1 + x) end
local function erf(x)
  local sum, term, n = x, x, 0
  repeat
    n = n + 1
    term = -term * x * x / n
    local add = term / (2 * n + 1)
    sum = sum + add
  until math.abs(add) < 1e-17 * math.max(1, math.abs(sum)) or n > 200
  return 2 / math.sqrt(math.pi) * sum
end

-- name -> {f(x, attrs), lo, hi, shape, attrs, kinks (values the gradient check keeps away from)}
local CASES = {
  relu6 = { lo = -1, hi = 10, shape = { 10, 12 }, attrs = { threshold = 6 }, kinks = { 0, 6 },
            f = function(x, a) return clamp(x, 0, a.threshold) end },
  hard_sigmoid = { lo = -5, hi = 5, shape = { 10, 12 }, attrs = { slope = f32(0.2), offset = 0.5 }, kinks = { -2.5, 2.5 },
                   f = function(x, a) return clamp(a.slope * x + a.offset, 0, 1) end },
  swish = { lo = -1, hi = 1, shape = { 10, 12 }, attrs = { beta = f32(2.3) },
            f = function(x, a) return x * sigmoid(a.beta * x) end },
  silu = { lo = -3, hi = 3, shape = { 11, 17 }, f = function(x) return x * sigmoid(x) end },
  logsigmoid = { lo = -1, hi = 1, shape = { 11, 17 }, f = function(x) return math.log(1 / (1 + math.exp(-x))) end },
  atan = { lo = 0.1, hi = 1, shape = { 11, 17 }, f = math.atan },
  acos = { lo = -0.95, hi = 0.95, shape = { 10, 12 }, f = math.acos },
  asin = { lo = -0.95, hi = 0.95, shape = { 10, 12 }, f = math.asin },
  tan = { lo = -1, hi = 1, shape = { 10, 12 }, f = math.tan },
  sinh = { lo = -2, hi = 2, shape = { 10, 12 }, f = math.sinh },
  cosh = { lo = -2, hi = 2, shape = { 10, 12 }, f = math.cosh },
  tanh_shrink = { lo = 0.1, hi = 1, shape = { 10, 17 }, f = function(x) return x - tanh(x) end },
  hard_shrink = { lo = -10, hi = 10, shape = { 10, 12 }, attrs = { threshold = 0.5 }, kinks = { -0.5, 0.5 },
                  f = function(x, a) return (x < -a.threshold or x > a.threshold) and x or 0 end },
  softshrink = { lo = 0.25, hi = 10, shape = { 4, 4 }, attrs = { lambda = f32(0.1) }, kinks = { -0.1, 0.1 },
                 f = function(x, a)
                   if x > a.lambda then return x - a.lambda elseif x < -a.lambda then return x + a.lambda end
                   return 0
                 end },
  rsqrt = { lo = 1, hi = 10, shape = { 10, 12 }, f = function(x) return 1 / math.sqrt(x) end },
  brelu = { lo = -5, hi = 10, shape = { 10, 12 }, attrs = { t_min = 1, t_max = 4 }, kinks = { 1, 4 },
            f = function(x, a) return clamp(x, a.t_min, a.t_max) end },
  hard_swish = { lo = -6, hi = 6, shape = { 10, 12 }, attrs = { threshold = 6, scale = 6, offset = 3 }, kinks = { -3, 3 },
                 f = function(x, a) return x * clamp(x + a.offset, 0, a.threshold) / a.scale end },
  -- Fluid's soft_relu_grad tests Out (not X) against [-t, t]: the gradient
  -- check stays inside (-t, log(e^t - 1)), where both agree
  soft_relu = { lo = -3, hi = 3, glo = -1.8, ghi = 1.8, shape = { 4, 4 }, attrs = { threshold = 2 }, kinks = { -2, 2 },
                f = function(x, a) return math.log(1 + math.exp(clamp(x, -a.threshold, a.threshold))) end },
  log1p = { lo = 0.1, hi = 1, shape = { 11, 17 }, f = log1p },
  expm1 = { lo = -1, hi = 1, shape = { 11, 17 }, f = function(x) return math.exp(x) - 1 end },
  log2 = { lo = 0.1, hi = 3, shape = { 11, 17 }, f = function(x) return math.log(x) / math.log(2) end },
  log10 = { lo = 0.1, hi = 3, shape = { 11, 17 }, f = math.log10 },
  stanh = { lo = 0.1, hi = 1, shape = { 11, 17 }, attrs = { scale_a = f32(2 / 3), scale_b = f32(1.7159) },
            f = function(x, a) return a.scale_b * tanh(a.scale_a * x) end },
  softsign = { lo = -1, hi = 1, shape = { 10, 12 }, f = function(x) return x / (1 + math.abs(x)) end },
  thresholded_relu = { lo = -20, hi = 20, shape = { 10, 12 }, attrs = { threshold = 0.25 }, kinks = { 0.25 },
                       f = function(x, a) return x > a.threshold and x or 0 end },
  mish = { lo = -25, hi = 25, shape = { 10, 12 }, attrs = { threshold = 20 }, kinks = { -20, 20 },
           f = function(x, a)
             local sp = x > a.threshold and x or (x < -a.threshold and math.exp(x) or math.log(1 + math.exp(x)))
             return x * tanh(sp)
           end },
  selu = { lo = -3, hi = 3, shape = { 3, 5, 5, 10 }, kinks = { 0 },
           attrs = { scale = f32(1.0507009873554804934193349852946), alpha = f32(1.6732632423543772848170429916717) },
           f = function(x, a) return x > 0 and a.scale * x or a.scale * a.alpha * (math.exp(x) - 1) end },
  celu = { lo = -3, hi = 3, shape = { 10, 12 }, attrs = { alpha = 1.5 }, kinks = { 0 },
           f = function(x, a) return math.max(0, x) + math.min(0, a.alpha * (math.exp(x / a.alpha) - 1)) end },
  erf = { lo = -3, hi = 3, shape = { 10, 12 }, f = erf },
  logit = { lo = 0.05, hi = 0.95, shape = { 10, 12 }, attrs = { eps = f32(1e-6) },
            f = function(x) return math.log(x / (1 - x)) end },
}

local function values(name, c, n, grad)
  local xs = R.uniform(n, #name * 7 + 1, grad and c.glo or c.lo, grad and c.ghi or c.hi)
  for i, x in ipairs(xs) do
    for _, k in ipairs(c.kinks or {}) do
      if math.abs(x - k) < 0.05 then xs[i] = k + 0.1 end
    end
  end
  return xs
end

local numel = require("spec.helpers.index").numel

local function map(f, xs, a)
  local out = {}
  for i, x in ipairs(xs) do out[i] = f(x, a or {}) end
  return out
end

describe("activation_ext forward (Fluid 1.8 OpTest cases)", function()
  for name, c in pairs(CASES) do
    for _, dtype in ipairs({ "float64", "float32" }) do
      it(("%s (%s)"):format(name, dtype), function()
        local x = values(name, c, numel(c.shape))
        local tol = dtype == "float32" and 3e-6 or 1e-12
        T.check_output{
          type = name, attrs = c.attrs, dtype = dtype,
          inputs = { X = T.tensor(x, { shape = c.shape, dtype = dtype }) },
          expect = { Out = { shape = c.shape, data = map(c.f, x, c.attrs) } },
          atol = tol, rtol = tol * 2,
        }
      end)
    end
  end

  it("uses Fluid's defaults (relu6 6, brelu [0, 24], hard_swish 6/6/3, stanh 0.67/1.7159)", function()
    local x = { -4, -1, 0.5, 5, 7, 30 }
    local s = { shape = { 6 } }
    T.check_output{ type = "relu6", inputs = { X = T.tensor(x, s) },
      expect = { Out = { shape = { 6 }, data = { 0, 0, 0.5, 5, 6, 6 } } }, atol = 1e-12 }
    T.check_output{ type = "brelu", inputs = { X = T.tensor(x, s) },
      expect = { Out = { shape = { 6 }, data = { 0, 0, 0.5, 5, 7, 24 } } }, atol = 1e-12 }
    T.check_output{ type = "hard_swish", inputs = { X = T.tensor(x, s) },
      expect = { Out = { shape = { 6 }, data = { 0, -1 * 2 / 6, 0.5 * 3.5 / 6, 5, 7, 30 } } }, atol = 1e-12 }
    local a, b = f32(0.67), f32(1.7159)
    T.check_output{ type = "stanh", inputs = { X = T.tensor(x, s) },
      expect = { Out = { shape = { 6 }, data = map(function(v) return b * tanh(a * v) end, x) } }, atol = 1e-12 }
  end)

  it("logsigmoid and soft_relu do not overflow", function()
    T.check_output{ type = "logsigmoid", inputs = { X = T.tensor({ 800, -800 }, { shape = { 2 } }) },
      expect = { Out = { shape = { 2 }, data = { 0, -800 } } }, atol = 1e-12 }
    T.check_output{ type = "soft_relu", inputs = { X = T.tensor({ 800, -800 }, { shape = { 2 } }) },
      expect = { Out = { shape = { 2 }, data = { math.log(1 + math.exp(40)), math.log(1 + math.exp(-40)) } } },
      atol = 1e-12 }
  end)

  it("refuses brelu with t_min >= t_max and hard_swish with scale 0", function()
    local x = T.tensor({ 1, 2 }, { shape = { 2 } })
    local ok, err = pcall(T.run, { type = "brelu", attrs = { t_min = 3, t_max = 1 }, inputs = { X = x } })
    assert.is_false(ok)
    assert.matches("op 'brelu' (block 0, #0): brelu: attr t_min (3) must be less than t_max (1)", err, 1, true)
    ok, err = pcall(T.run, { type = "hard_swish", attrs = { scale = 0 }, inputs = { X = x } })
    assert.is_false(ok)
    assert.matches("attr scale = 0 must be positive", err, 1, true)
  end)
end)

describe("activation_ext gradients", function()
  for name, c in pairs(CASES) do
    it(name .. "_grad", function()
      local shape = { 3, 4 }
      T.check_grad{
        type = name, attrs = c.attrs,
        inputs = { X = T.tensor(values(name, c, 12, true), { shape = shape }) },
        wrt = { "X" },
      }
    end)
  end
end)
