-- instance_norm, group_norm, p_norm: the cases of Paddle's
-- test_instance_norm_op.py, test_group_norm_op.py and test_norm_all.py
-- (shapes reduced), expected values computed here in plain Lua, gradients
-- against finite differences in float64.
local ffi = require("ffi")
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")

local function f32(v) return tonumber(ffi.new("float", v)) end

local numel = require("spec.helpers.index").numel

-- group norm of x [n, c, s...] with g groups; returns y, means, variances
local function group_norm_ref(x, xs, g, eps, scale, bias)
  local n, c = xs[1], xs[2]
  local s = numel(xs) / (n * c)
  local cpg = c / g
  local y, means, vars = {}, {}, {}
  for b = 0, n - 1 do
    for gr = 0, g - 1 do
      local base = (b * c + gr * cpg) * s
      local m, cnt = 0, cpg * s
      for i = 1, cnt do m = m + x[base + i] end
      m = m / cnt
      local v = 0
      for i = 1, cnt do v = v + (x[base + i] - m) ^ 2 end
      v = v / cnt
      means[#means + 1], vars[#vars + 1] = m, v
      for cc = 0, cpg - 1 do
        local ch = gr * cpg + cc + 1
        for i = 1, s do
          local at = base + cc * s + i
          y[at] = (x[at] - m) / math.sqrt(v + eps) * (scale and scale[ch] or 1) + (bias and bias[ch] or 0)
        end
      end
    end
  end
  return y, means, vars
end

describe("instance_norm (test_instance_norm_op.py)", function()
  local xs = { 2, 3, 4, 5 }
  it("normalizes each (sample, channel), SavedVariance = 1/std", function()
    local x = R.uniform(numel(xs), 1, -1, 1)
    local scale, bias = R.uniform(3, 2, 0.5, 1.5), R.uniform(3, 3, -1, 1)
    local eps = f32(1e-5)
    local y, means, vars = group_norm_ref(x, xs, 3, eps, scale, bias)
    local inv = {}
    for i, v in ipairs(vars) do inv[i] = 1 / math.sqrt(v + eps) end
    T.check_output{
      type = "instance_norm", attrs = { epsilon = 1e-5 },
      inputs = { X = T.tensor(x, { shape = xs }), Scale = T.tensor(scale, { shape = { 3 } }),
                 Bias = T.tensor(bias, { shape = { 3 } }) },
      outputs = { Y = 1, SavedMean = 1, SavedVariance = 1 },
      expect = { Y = { shape = xs, data = y }, SavedMean = { shape = { 6 }, data = means },
                 SavedVariance = { shape = { 6 }, data = inv } },
      atol = 1e-10,
    }
  end)

  it("gradient wrt X, Scale and Bias", function()
    local s = { 2, 2, 3, 2 }
    T.check_grad{
      type = "instance_norm", attrs = { epsilon = 1e-5 }, of = { "Y" },
      inputs = { X = T.tensor(R.uniform(numel(s), 4, -1, 1), { shape = s }),
                 Scale = T.tensor({ 0.7, 1.3 }, { shape = { 2 } }), Bias = T.tensor({ 0.1, -0.2 }, { shape = { 2 } }) },
      wrt = { "X", "Scale", "Bias" },
    }
  end)

  it("works without Scale and Bias", function()
    local x = R.uniform(numel(xs), 5, -1, 1)
    local y = group_norm_ref(x, xs, 3, f32(1e-5))
    T.check_output{
      type = "instance_norm", inputs = { X = T.tensor(x, { shape = xs }) }, outputs = { Y = 1 },
      expect = { Y = { shape = xs, data = y } }, atol = 1e-10,
    }
  end)
end)

describe("group_norm (test_group_norm_op.py)", function()
  for _, c in ipairs({ { { 2, 4, 3, 5 }, 2 }, { { 2, 6, 4 }, 3 }, { { 1, 4, 2, 2 }, 1 } }) do
    local xs, g = c[1], c[2]
    it(("X %s, groups %d"):format(table.concat(xs, "x"), g), function()
      local ch = xs[2]
      local x = R.uniform(numel(xs), g, -1, 1)
      local scale, bias = R.uniform(ch, 7, 0.5, 1.5), R.uniform(ch, 8, -1, 1)
      local eps = f32(1e-5)
      local y, means, vars = group_norm_ref(x, xs, g, eps, scale, bias)
      T.check_output{
        type = "group_norm", attrs = { groups = g, epsilon = 1e-5 },
        inputs = { X = T.tensor(x, { shape = xs }), Scale = T.tensor(scale, { shape = { ch } }),
                   Bias = T.tensor(bias, { shape = { ch } }) },
        outputs = { Y = 1, Mean = 1, Variance = 1 },
        expect = { Y = { shape = xs, data = y }, Mean = { shape = { xs[1], g }, data = means },
                   Variance = { shape = { xs[1], g }, data = vars } },
        atol = 1e-10,
      }
      local gs = { 2, ch, 3 }
      T.check_grad{
        type = "group_norm", attrs = { groups = g }, of = { "Y" },
        inputs = { X = T.tensor(R.uniform(numel(gs), 9, -1, 1), { shape = gs }),
                   Scale = T.tensor(scale, { shape = { ch } }), Bias = T.tensor(bias, { shape = { ch } }) },
        wrt = { "X", "Scale", "Bias" },
      }
    end)
  end

  it("refuses channels that do not split into the groups, and NHWC", function()
    local x = T.tensor(R.uniform(12, 1, -1, 1), { shape = { 1, 3, 4 } })
    local ok, err = pcall(T.run, { type = "group_norm", attrs = { groups = 2 }, inputs = { X = x }, outputs = { Y = 1 } })
    assert.is_false(ok)
    assert.matches("X's 3 channels are not divisible by groups = 2", err, 1, true)
    ok, err = pcall(T.run, { type = "group_norm", attrs = { groups = 3, data_layout = "NHWC" }, inputs = { X = x },
                             outputs = { Y = 1 } })
    assert.is_false(ok)
    assert.matches("NHWC", err, 1, true)
  end)
end)

describe("p_norm (test_norm_all.py)", function()
  local function pnorm_ref(x, xs, axis, p, keepdim)
    if axis < 0 then axis = axis + #xs end
    local outer, mid, inner = 1, xs[axis + 1], 1
    for i = 1, axis do outer = outer * xs[i] end
    for i = axis + 2, #xs do inner = inner * xs[i] end
    local out = {}
    for u = 0, outer - 1 do
      for v = 0, inner - 1 do
        local r = p == -math.huge and math.huge or 0
        for i = 0, mid - 1 do
          local e = math.abs(x[(u * mid + i) * inner + v + 1])
          if p == 0 then r = r + (e ~= 0 and 1 or 0)
          elseif p == math.huge then r = math.max(r, e)
          elseif p == -math.huge then r = math.min(r, e)
          else r = r + e ^ p end
        end
        if p ~= 0 and p ~= math.huge and p ~= -math.huge then r = r ^ (1 / p) end
        out[#out + 1] = r
      end
    end
    local os = {}
    for i, d in ipairs(xs) do
      if i - 1 ~= axis then os[#os + 1] = d elseif keepdim then os[#os + 1] = 1 end
    end
    return out, os
  end

  local cases = {
    { "TestPnormOp", { 2, 3, 4, 5 }, 1, 2.0, false },
    { "TestPnormOp2 (keepdim, p 3)", { 3, 20, 3 }, 2, 3.0, true },
    { "TestPnormOp3 (p inf)", { 3, 20, 3 }, 2, math.huge, true },
    { "TestPnormOp4 (p -inf)", { 3, 20, 3 }, 2, -math.huge, true },
    { "TestPnormOp5 (p 0)", { 3, 20, 3 }, 2, 0, true },
    { "axis -1, p 1.5", { 4, 6 }, -1, 1.5, false },
  }
  for ci, c in ipairs(cases) do
    it(c[1], function()
      local x = R.uniform(numel(c[2]), ci, -1, 1)
      if c[4] == 0 then x[3] = 0; x[7] = 0 end
      local want, os = pnorm_ref(x, c[2], c[3], c[4], c[5])
      T.check_output{
        type = "p_norm", attrs = { axis = c[3], porder = c[4], keepdim = c[5] },
        inputs = { X = T.tensor(x, { shape = c[2] }) },
        expect = { Out = { shape = os, data = want } }, atol = 1e-12, rtol = 1e-12,
      }
      if c[4] ~= 0 then
        T.check_grad{ type = "p_norm", attrs = { axis = -1, porder = c[4], keepdim = c[5] },
                      inputs = { X = T.tensor(R.uniform(12, ci + 9, -1, 1), { shape = { 3, 4 } }) }, wrt = { "X" } }
      end
    end)
  end

  it("asvector: the norm of all of X", function()
    local x = { 3, -4, 0, 12 }
    T.check_output{ type = "p_norm", attrs = { asvector = true }, inputs = { X = T.tensor(x, { shape = { 2, 2 } }) },
                    expect = { Out = { shape = { 1 }, data = { 13 } } }, atol = 1e-12 }
  end)
end)
