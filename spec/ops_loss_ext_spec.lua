-- Fluid 1.8's smaller losses (src/ops/loss_ext.ops): ports of Fluid's
-- OpTests (test_<op>_op.py: the same shapes, value ranges and attributes,
-- inputs from a seeded generator instead of numpy's), references computed
-- here in plain Lua, float64 finite-difference gradients and bad inputs.
local ffi = require("ffi")
local T = require("spec.helpers.op_test")
local expect_error = require("spec.helpers.expect_error")

local TOL = { float64 = 1e-12, float32 = 2e-5 }

-- a small deterministic generator: uniform values in [lo, hi)
local function gen(seed)
  local s = seed
  return function(lo, hi)
    s = (s * 1103515245 + 12345) % 2147483648
    return lo + (hi - lo) * s / 2147483648
  end
end

local function uniform(n, lo, hi, seed)
  local r, out = gen(seed), {}
  for i = 1, n do out[i] = r(lo, hi) end
  return out
end

local function randint(n, lo, hi, seed)   -- integers in [lo, hi)
  local r, out = gen(seed), {}
  for i = 1, n do out[i] = math.floor(r(lo, hi)) end
  return out
end

-- float attributes are float32, as in Fluid: the references use the rounded value
local function f32(v) return tonumber(ffi.new("float", v)) end

local function t(data, shape, dt) return T.tensor(data, { shape = shape, dtype = dt }) end
local function ids(data, shape) return T.tensor(data, { shape = shape, dtype = "int64" }) end

describe("smooth_l1_loss", function()
  local function ref(x, y, iw, ow, sigma, rows)
    local s2, cols = sigma * sigma, #x / rows
    local diff, out = {}, {}
    for r = 1, rows do
      local sum = 0
      for j = (r - 1) * cols + 1, r * cols do
        local d = (x[j] - y[j]) * (iw and iw[j] or 1)
        diff[j] = d
        local e = math.abs(d) < 1 / s2 and 0.5 * d * d * s2 or math.abs(d) - 0.5 / s2
        sum = sum + e * (ow and ow[j] or 1)
      end
      out[r] = sum
    end
    return diff, out
  end
  -- test_smooth_l1_loss_op.py: X, Y uniform(0, 1) [32, 10], sigma 3; weights random
  local X, Y = uniform(320, 0, 1, 1), uniform(320, 0, 1, 2)
  local IW, OW = uniform(320, 0, 1, 3), uniform(320, 0, 1, 4)
  for _, dt in ipairs({ "float64", "float32" }) do
    it("matches the reference without and with weights (" .. dt .. ")", function()
      local diff, out = ref(X, Y, nil, nil, 3.0, 32)
      T.check_output{ type = "smooth_l1_loss", attrs = { sigma = 3.0 },
        inputs = { X = t(X, { 32, 10 }, dt), Y = t(Y, { 32, 10 }, dt) },
        expect = { Out = { shape = { 32, 1 }, data = out }, Diff = { shape = { 32, 10 }, data = diff } },
        atol = TOL[dt], rtol = TOL[dt] }
      diff, out = ref(X, Y, IW, OW, 3.0, 32)
      T.check_output{ type = "smooth_l1_loss", attrs = { sigma = 3.0 },
        inputs = { X = t(X, { 32, 10 }, dt), Y = t(Y, { 32, 10 }, dt), InsideWeight = t(IW, { 32, 10 }, dt),
                   OutsideWeight = t(OW, { 32, 10 }, dt) },
        expect = { Out = { shape = { 32, 1 }, data = out }, Diff = { shape = { 32, 10 }, data = diff } },
        atol = TOL[dt], rtol = TOL[dt] }
    end)
  end
  it("has finite-difference gradients (float64)", function()
    -- away from the kink at |d| = 1/sigma^2
    local x, y = uniform(24, 0, 1, 5), uniform(24, 0, 1, 6)
    for i = 1, 24 do if math.abs(math.abs(x[i] - y[i]) - 1 / 9) < 0.02 then x[i] = x[i] + 0.05 end end
    T.check_grad{ type = "smooth_l1_loss", attrs = { sigma = 3.0 }, of = { "Out" }, wrt = { "X", "Y" },
      inputs = { X = t(x, { 4, 6 }), Y = t(y, { 4, 6 }) } }
    T.check_grad{ type = "smooth_l1_loss", attrs = { sigma = 1.0 }, of = { "Out" }, wrt = { "X", "Y" },
      no_grad = { "InsideWeight", "OutsideWeight" },
      inputs = { X = t(x, { 4, 6 }), Y = t(y, { 4, 6 }), InsideWeight = t(uniform(24, 0.5, 1, 7), { 4, 6 }),
                 OutsideWeight = t(uniform(24, 0, 1, 8), { 4, 6 }) } }
  end)
  it("refuses Y of another shape, naming the op and the variable", function()
    expect_error(function()
      T.run{ type = "smooth_l1_loss", inputs = { X = t(X, { 32, 10 }), Y = t(uniform(30, 0, 1, 9), { 3, 10 }) } }
    end, "smooth_l1_loss", "Y")
  end)
end)

describe("huber_loss", function()
  local function ref(x, y, delta)
    local res, out = {}, {}
    for i = 1, #x do
      local r = y[i] - x[i]
      res[i] = r
      out[i] = math.abs(r) <= delta and 0.5 * r * r or delta * (math.abs(r) - 0.5 * delta)
    end
    return res, out
  end
  -- test_huber_loss_op.py: X, Y uniform(0, 1) [100, 1] (and [6, 6]), delta 0.5
  for _, shape in ipairs({ { 100, 1 }, { 6, 6 } }) do
    for _, dt in ipairs({ "float64", "float32" }) do
      it(("matches the reference on %dx%d (%s)"):format(shape[1], shape[2], dt), function()
        local n = shape[1] * shape[2]
        local X, Y = uniform(n, 0, 1, 11), uniform(n, 0, 1, 12)
        local res, out = ref(X, Y, 0.5)
        T.check_output{ type = "huber_loss", attrs = { delta = 0.5 },
          inputs = { X = t(X, shape, dt), Y = t(Y, shape, dt) },
          expect = { Out = { shape = shape, data = out }, Residual = { shape = shape, data = res } },
          atol = TOL[dt], rtol = TOL[dt] }
      end)
    end
  end
  it("has finite-difference gradients (float64)", function()
    local X, Y = uniform(36, 0, 1, 13), uniform(36, 0, 1, 14)
    for i = 1, 36 do if math.abs(math.abs(Y[i] - X[i]) - 0.5) < 0.02 then X[i] = X[i] + 0.05 end end
    T.check_grad{ type = "huber_loss", attrs = { delta = 0.5 }, of = { "Out" }, wrt = { "X", "Y" },
      inputs = { X = t(X, { 6, 6 }), Y = t(Y, { 6, 6 }) } }
  end)
  it("requires delta and equal shapes", function()
    expect_error(function()
      T.run{ type = "huber_loss", inputs = { X = t({ 1, 2 }, { 2, 1 }), Y = t({ 1, 2 }, { 2, 1 }) } }
    end, "huber_loss", "delta")
    expect_error(function()
      T.run{ type = "huber_loss", attrs = { delta = 1 }, inputs = { X = t({ 1, 2 }, { 2, 1 }), Y = t({ 1, 2 }, { 1, 2 }) } }
    end, "huber_loss", "Y")
  end)
end)

describe("log_loss", function()
  -- test_log_loss_op.py: Predicted uniform(0, 1) [16, 1], Labels randint(0, 2), epsilon 1e-4
  local P, L = uniform(16, 0, 1, 21), randint(16, 0, 2, 22)
  local eps = 1e-4
  for _, dt in ipairs({ "float64", "float32" }) do
    it("matches the reference (" .. dt .. ")", function()
      local want, eps = {}, f32(eps)
      for i = 1, 16 do want[i] = -L[i] * math.log(P[i] + eps) - (1 - L[i]) * math.log(1 - P[i] + eps) end
      T.check_output{ type = "log_loss", attrs = { epsilon = eps },
        inputs = { Predicted = t(P, { 16, 1 }, dt), Labels = t(L, { 16, 1 }, dt) },
        expect = { Loss = { shape = { 16, 1 }, data = want } }, atol = TOL[dt], rtol = TOL[dt] }
    end)
  end
  it("has finite-difference gradients (float64)", function()
    local p = uniform(16, 0.05, 0.95, 23)
    T.check_grad{ type = "log_loss", attrs = { epsilon = eps }, of = { "Loss" }, wrt = { "Predicted" },
      no_grad = { "Labels" }, inputs = { Predicted = t(p, { 16, 1 }), Labels = t(L, { 16, 1 }) } }
  end)
  it("wants [N, 1]", function()
    expect_error(function()
      T.run{ type = "log_loss", attrs = { epsilon = eps },
        inputs = { Predicted = t(uniform(4, 0, 1, 1), { 2, 2 }), Labels = t({ 0, 1, 1, 0 }, { 2, 2 }) } }
    end, "log_loss", "Predicted", "[N, 1]")
  end)
end)

describe("hinge_loss", function()
  -- test_hinge_loss_op.py: Logits uniform(-10, 10) [100, 1], Labels randint(0, 2)
  local X, L = uniform(100, -10, 10, 31), randint(100, 0, 2, 32)
  for _, dt in ipairs({ "float64", "float32" }) do
    it("matches the reference (" .. dt .. ")", function()
      local want = {}
      for i = 1, 100 do want[i] = math.max(0, 1 - X[i] * (2 * L[i] - 1)) end
      T.check_output{ type = "hinge_loss", inputs = { Logits = t(X, { 100, 1 }, dt), Labels = t(L, { 100, 1 }, dt) },
        expect = { Loss = { shape = { 100, 1 }, data = want } }, atol = TOL[dt], rtol = TOL[dt] }
    end)
  end
  it("has finite-difference gradients (float64)", function()
    local x = {}
    for i = 1, 100 do x[i] = math.abs(X[i] * (2 * L[i] - 1) - 1) < 0.02 and X[i] + 0.1 or X[i] end
    T.check_grad{ type = "hinge_loss", of = { "Loss" }, wrt = { "Logits" }, no_grad = { "Labels" },
      inputs = { Logits = t(x, { 100, 1 }), Labels = t(L, { 100, 1 }) } }
  end)
end)

describe("kldiv_loss", function()
  local function ref(x, tg, reduction, rows)
    local out, sum = {}, 0
    for i = 1, #x do
      out[i] = tg[i] > 0 and tg[i] * (math.log(tg[i]) - x[i]) or 0
      sum = sum + out[i]
    end
    if reduction == "none" then return out end
    if reduction == "mean" then return { sum / #x } end
    if reduction == "batchmean" then return { sum / rows } end
    return { sum }
  end
  -- test_kldiv_loss_op.py: x, target uniform(-10, 10); the shapes and reductions of its cases
  local cases = { { { 4, 10 }, "batchmean" }, { { 3, 7, 7 }, "none" }, { { 2, 3, 5, 5 }, "mean" }, { { 4, 5, 5 }, "sum" } }
  for k, c in ipairs(cases) do
    local shape, red = c[1], c[2]
    local n = 1
    for _, d in ipairs(shape) do n = n * d end
    local X, Tg = uniform(n, -10, 10, 40 + k), uniform(n, -10, 10, 50 + k)
    for _, dt in ipairs({ "float64", "float32" }) do
      it(("reduction %s (%s)"):format(red, dt), function()
        local want = ref(X, Tg, red, shape[1])
        T.check_output{ type = "kldiv_loss", attrs = { reduction = red },
          inputs = { X = t(X, shape, dt), Target = t(Tg, shape, dt) },
          expect = { Loss = { shape = red == "none" and shape or { 1 }, data = want } },
          atol = dt == "float32" and 1e-3 or 1e-10, rtol = TOL[dt] }
      end)
    end
    it(("has finite-difference gradients, reduction %s (float64)"):format(red), function()
      local m = math.min(n, 24)
      local sh = red == "none" and { 4, 6 } or { 3, 8 }
      if n < 24 then sh = shape end
      T.check_grad{ type = "kldiv_loss", attrs = { reduction = red }, of = { "Loss" }, wrt = { "X" },
        no_grad = { "Target" },
        inputs = { X = t(uniform(m, -10, 10, 60 + k), sh), Target = t(uniform(m, -10, 10, 70 + k), sh) } }
    end)
  end
end)

describe("bce_loss", function()
  -- test_bce_loss.py (op test): X uniform(0.1, 0.8) [10, 10], Label randint(0, 2)
  local X, L = uniform(100, 0.1, 0.8, 81), randint(100, 0, 2, 82)
  for _, dt in ipairs({ "float64", "float32" }) do
    it("matches the reference (" .. dt .. ")", function()
      local want = {}
      for i = 1, 100 do
        want[i] = (L[i] - 1) * math.max(math.log(1 - X[i]), -100) - L[i] * math.max(math.log(X[i]), -100)
      end
      T.check_output{ type = "bce_loss", inputs = { X = t(X, { 10, 10 }, dt), Label = t(L, { 10, 10 }, dt) },
        expect = { Out = { shape = { 10, 10 }, data = want } }, atol = TOL[dt], rtol = TOL[dt] }
    end)
  end
  it("clamps the logs at -100", function()
    T.check_output{ type = "bce_loss", inputs = { X = t({ 0, 1 }, { 2, 1 }), Label = t({ 1, 0 }, { 2, 1 }) },
      expect = { Out = { shape = { 2, 1 }, data = { 100, 100 } } } }
  end)
  it("has finite-difference gradients (float64)", function()
    T.check_grad{ type = "bce_loss", of = { "Out" }, wrt = { "X" }, no_grad = { "Label" },
      inputs = { X = t(X, { 10, 10 }), Label = t(L, { 10, 10 }) } }
  end)
  it("refuses probabilities outside [0, 1]", function()
    expect_error(function()
      T.run{ type = "bce_loss", inputs = { X = t({ 0.5, 1.5 }, { 2, 1 }), Label = t({ 1, 0 }, { 2, 1 }) } }
    end, "bce_loss", "X", "[0, 1]")
  end)
end)

describe("margin_rank_loss", function()
  -- test_margin_rank_loss_op.py: X1, X2 random [5, 1], Label random signs, margin 0.5
  local X1, X2 = uniform(5, 0, 1, 91), uniform(5, 0, 1, 92)
  local L = randint(5, 0, 2, 93)
  for i = 1, 5 do L[i] = 2 * L[i] - 1 end
  local function ref(m)
    local out, act = {}, {}
    for i = 1, 5 do
      out[i] = math.max(0, -L[i] * (X1[i] - X2[i]) + m)
      act[i] = out[i] > 0 and 1 or 0
    end
    return out, act
  end
  for _, dt in ipairs({ "float64", "float32" }) do
    it("matches the reference (" .. dt .. ")", function()
      local out, act = ref(0.5)
      T.check_output{ type = "margin_rank_loss", attrs = { margin = 0.5 },
        inputs = { X1 = t(X1, { 5, 1 }, dt), X2 = t(X2, { 5, 1 }, dt), Label = t(L, { 5, 1 }, dt) },
        expect = { Out = { shape = { 5, 1 }, data = out }, Activated = { shape = { 5, 1 }, data = act } },
        atol = TOL[dt], rtol = TOL[dt] }
    end)
  end
  it("has finite-difference gradients (float64)", function()
    local x1 = {}
    for i = 1, 5 do
      x1[i] = X1[i]
      if math.abs(-L[i] * (X1[i] - X2[i]) + 0.5) < 0.02 then x1[i] = X1[i] + 0.1 end
    end
    T.check_grad{ type = "margin_rank_loss", attrs = { margin = 0.5 }, of = { "Out" }, wrt = { "X1", "X2" },
      no_grad = { "Label" }, inputs = { X1 = t(x1, { 5, 1 }), X2 = t(X2, { 5, 1 }), Label = t(L, { 5, 1 }) } }
  end)
end)

describe("rank_loss", function()
  -- test_rank_loss_op.py: batch 5, Label randint(0, 2), Left, Right random, [5, 1] (and [5])
  local L, A, B = randint(5, 0, 2, 101), uniform(5, 0, 1, 102), uniform(5, 0, 1, 103)
  for _, shape in ipairs({ { 5, 1 }, { 5 } }) do
    for _, dt in ipairs({ "float64", "float32" }) do
      it(("matches the reference on rank %d (%s)"):format(#shape, dt), function()
        local want = {}
        for i = 1, 5 do want[i] = math.log(1 + math.exp(A[i] - B[i])) - L[i] * (A[i] - B[i]) end
        T.check_output{ type = "rank_loss",
          inputs = { Label = t(L, shape, dt), Left = t(A, shape, dt), Right = t(B, shape, dt) },
          expect = { Out = { shape = shape, data = want } }, atol = TOL[dt], rtol = TOL[dt] }
      end)
    end
  end
  it("has finite-difference gradients (float64)", function()
    T.check_grad{ type = "rank_loss", of = { "Out" }, wrt = { "Left", "Right" }, no_grad = { "Label" },
      inputs = { Label = t(L, { 5, 1 }), Left = t(A, { 5, 1 }), Right = t(B, { 5, 1 }) } }
  end)
  it("refuses a Left of another shape", function()
    expect_error(function()
      T.run{ type = "rank_loss", inputs = { Label = t(L, { 5, 1 }), Left = t({ 1, 2 }, { 2, 1 }), Right = t(B, { 5, 1 }) } }
    end, "rank_loss", "Left")
  end)
end)

describe("modified_huber_loss", function()
  -- test_modified_huber_loss_op.py: X uniform(-2, 2) [10, 1], Y randint(0, 2)
  local X, Y = uniform(10, -2, 2, 111), randint(10, 0, 2, 112)
  for _, dt in ipairs({ "float64", "float32" }) do
    it("matches the reference (" .. dt .. ")", function()
      local v, out = {}, {}
      for i = 1, 10 do
        v[i] = X[i] * (2 * Y[i] - 1)
        out[i] = v[i] < -1 and -4 * v[i] or v[i] < 1 and (1 - v[i]) ^ 2 or 0
      end
      T.check_output{ type = "modified_huber_loss", inputs = { X = t(X, { 10, 1 }, dt), Y = t(Y, { 10, 1 }, dt) },
        expect = { Out = { shape = { 10, 1 }, data = out }, IntermediateVal = { shape = { 10, 1 }, data = v } },
        atol = TOL[dt], rtol = TOL[dt] }
    end)
  end
  it("has finite-difference gradients (float64)", function()
    local x = {}
    for i = 1, 10 do
      x[i] = X[i]
      if math.abs(math.abs(X[i]) - 1) < 0.02 then x[i] = X[i] * 1.1 end
    end
    T.check_grad{ type = "modified_huber_loss", of = { "Out" }, wrt = { "X" }, no_grad = { "Y" },
      inputs = { X = t(x, { 10, 1 }), Y = t(Y, { 10, 1 }) } }
  end)
  it("refuses labels other than 0 and 1", function()
    expect_error(function()
      T.run{ type = "modified_huber_loss", inputs = { X = t({ 1, 2 }, { 2, 1 }), Y = t({ 1, 2 }, { 2, 1 }) } }
    end, "modified_huber_loss", "Y", "0 or 1")
  end)
end)

describe("label_smooth", function()
  -- test_label_smooth_op.py: batch 10, label_dim 12, one-hot rows, epsilon 0.1; with a uniform(0,1) prior [1, 12]
  local N, C = 10, 12
  local hot = randint(N, 0, C, 121)
  local X = {}
  for i = 1, N do for j = 1, C do X[(i - 1) * C + j] = (j - 1 == hot[i]) and 1 or 0 end end
  local P = uniform(C, 0, 1, 122)
  for _, dt in ipairs({ "float64", "float32" }) do
    it("smooths toward uniform and toward a prior (" .. dt .. ")", function()
      local want, wantp, e = {}, {}, f32(0.1)
      for i = 1, N * C do
        want[i] = (1 - e) * X[i] + e / C
        wantp[i] = (1 - e) * X[i] + e * P[(i - 1) % C + 1]
      end
      T.check_output{ type = "label_smooth", attrs = { epsilon = 0.1 }, inputs = { X = t(X, { N, C }, dt) },
        expect = { Out = { shape = { N, C }, data = want } }, atol = TOL[dt], rtol = TOL[dt] }
      T.check_output{ type = "label_smooth", attrs = { epsilon = 0.1 },
        inputs = { X = t(X, { N, C }, dt), PriorDist = t(P, { 1, C }, dt) },
        expect = { Out = { shape = { N, C }, data = wantp } }, atol = TOL[dt], rtol = TOL[dt] }
      -- 3-D input (TestLabelSmoothOp3D)
      T.check_output{ type = "label_smooth", attrs = { epsilon = 0.1 }, inputs = { X = t(X, { 2, 5, C }, dt) },
        expect = { Out = { shape = { 2, 5, C }, data = want } }, atol = TOL[dt], rtol = TOL[dt] }
    end)
  end
  it("has finite-difference gradients (float64)", function()
    T.check_grad{ type = "label_smooth", attrs = { epsilon = 0.1 }, of = { "Out" }, wrt = { "X" },
      no_grad = { "PriorDist" }, inputs = { X = t(X, { N, C }), PriorDist = t(P, { 1, C }) } }
  end)
  it("refuses a prior of the wrong size", function()
    expect_error(function()
      T.run{ type = "label_smooth", attrs = { epsilon = 0.1 },
        inputs = { X = t(X, { N, C }), PriorDist = t({ 0.5, 0.5 }, { 1, 2 }) } }
    end, "label_smooth", "PriorDist")
  end)
end)

describe("nll_loss", function()
  -- [N, C] or [N, C, H, W]; Label without the class axis
  local function ref(x, shape, lbl, w, reduction, ignore)
    local N, C = shape[1], shape[2]
    local map = #shape == 4 and shape[3] * shape[4] or 1
    local out, sum, tw = {}, 0, 0
    for i = 0, N - 1 do
      for s = 0, map - 1 do
        local c = lbl[i * map + s + 1]
        local v = 0
        if c ~= ignore then
          local wc = w and w[c + 1] or 1
          v = -x[(i * C + c) * map + s + 1] * wc
          tw = tw + wc
        end
        out[i * map + s + 1] = v
        sum = sum + v
      end
    end
    if reduction == "none" then return out, tw end
    if reduction == "mean" and tw ~= 0 then return { sum / tw }, tw end
    return { sum }, tw
  end
  -- test_nll_loss.py: input random [10, 10] (and [5, 3, 5, 5]), label randint(0, C), weight random
  local X2, L2, W2 = uniform(100, 0, 1, 131), randint(10, 0, 10, 132), uniform(10, 0, 1, 133)
  local X4, L4, W4 = uniform(375, 0, 1, 134), randint(125, 0, 3, 135), uniform(3, 0, 1, 136)
  for _, red in ipairs({ "mean", "sum", "none" }) do
    for _, dt in ipairs({ "float64", "float32" }) do
      it(("reduction %s, 2-D and 4-D, with and without weights (%s)"):format(red, dt), function()
        for _, c in ipairs({ { X2, { 10, 10 }, L2, { 10 }, W2 }, { X4, { 5, 3, 5, 5 }, L4, { 5, 5, 5 }, W4 } }) do
          for _, w in ipairs({ false, true }) do
            local out, tw = ref(c[1], c[2], c[3], w and c[5] or nil, red, -100)
            local inputs = { X = t(c[1], c[2], dt), Label = ids(c[3], c[4]) }
            if w then inputs.Weight = t(c[5], { #c[5] }, dt) end
            T.check_output{ type = "nll_loss", attrs = { reduction = red }, inputs = inputs,
              expect = { Out = { shape = red == "none" and c[4] or { 1 }, data = out },
                         Total_weight = { shape = { 1 }, data = { tw } } },
              atol = dt == "float32" and 1e-4 or 1e-12, rtol = TOL[dt] }
          end
        end
      end)
    end
  end
  it("skips ignore_index", function()
    local lbl = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 0 }
    local out, tw = ref(X2, { 10, 10 }, lbl, nil, "mean", 3)
    T.check_output{ type = "nll_loss", attrs = { ignore_index = 3 },
      inputs = { X = t(X2, { 10, 10 }), Label = ids(lbl, { 10 }) },
      expect = { Out = { shape = { 1 }, data = out }, Total_weight = { shape = { 1 }, data = { tw } } } }
  end)
  it("has finite-difference gradients (float64)", function()
    for _, red in ipairs({ "mean", "sum", "none" }) do
      T.check_grad{ type = "nll_loss", attrs = { reduction = red }, of = { "Out" }, wrt = { "X" },
        no_grad = { "Weight" }, inputs = { X = t(X2, { 10, 10 }), Label = ids(L2, { 10 }), Weight = t(W2, { 10 }) } }
      T.check_grad{ type = "nll_loss", attrs = { reduction = red, ignore_index = L4[1] }, of = { "Out" }, wrt = { "X" },
        inputs = { X = t(uniform(24, 0, 1, 137), { 2, 3, 2, 2 }), Label = ids({ 0, 1, 2, 1, 2, 0, 0, 1 }, { 2, 2, 2 }) } }
    end
  end)
  it("refuses labels out of range and a Label of the wrong shape", function()
    expect_error(function()
      T.run{ type = "nll_loss", inputs = { X = t(X2, { 10, 10 }), Label = ids({ 0, 1, 2, 3, 4, 5, 6, 7, 8, 10 }, { 10 }) } }
    end, "nll_loss", "Label", "10")
    expect_error(function()
      T.run{ type = "nll_loss", inputs = { X = t(X2, { 10, 10 }), Label = ids({ 0, 1 }, { 2 }) } }
    end, "nll_loss", "Label")
  end)
end)

describe("bpr_loss", function()
  local function ref(x, lbl, rows, C)
    local out = {}
    for i = 0, rows - 1 do
      local pos, sum = x[i * C + lbl[i + 1] + 1], 0
      for j = 0, C - 1 do
        if j ~= lbl[i + 1] then sum = sum - math.log(1 + math.exp(x[i * C + j + 1] - pos)) end
      end
      out[i + 1] = -sum / (C - 1)
    end
    return out
  end
  -- test_bpr_loss_op.py: batch 40, class 5, X random, Label randint(0, 5) [40, 1]
  local X, L = uniform(200, 0, 1, 141), randint(40, 0, 5, 142)
  for _, dt in ipairs({ "float64", "float32" }) do
    it("matches the reference (" .. dt .. ")", function()
      T.check_output{ type = "bpr_loss", inputs = { X = t(X, { 40, 5 }, dt), Label = ids(L, { 40, 1 }) },
        expect = { Y = { shape = { 40, 1 }, data = ref(X, L, 40, 5) } }, atol = TOL[dt], rtol = TOL[dt] }
    end)
  end
  it("has finite-difference gradients (float64)", function()
    T.check_grad{ type = "bpr_loss", of = { "Y" }, wrt = { "X" },
      inputs = { X = t(uniform(30, 0, 1, 143), { 6, 5 }), Label = ids({ 0, 4, 2, 1, 3, 2 }, { 6, 1 }) } }
  end)
  it("refuses labels out of range", function()
    expect_error(function()
      T.run{ type = "bpr_loss", inputs = { X = t(X, { 40, 5 }), Label = ids(randint(40, 5, 6, 1), { 40, 1 }) } }
    end, "bpr_loss", "Label")
  end)
end)

describe("cross_entropy2", function()
  local function probs(rows, C, seed)
    local r, out = gen(seed), {}
    for i = 0, rows - 1 do
      local s, row = 0, {}
      for j = 1, C do row[j] = r(0.1, 1); s = s + row[j] end
      for j = 1, C do out[i * C + j] = row[j] / s end
    end
    return out
  end
  local function ref(x, lbl, rows, C, ignore)
    local y, m = {}, {}
    for i = 0, rows - 1 do
      if lbl[i + 1] == ignore then y[i + 1], m[i + 1] = 0, 0
      else
        m[i + 1] = x[i * C + lbl[i + 1] + 1]
        y[i + 1] = -math.log(m[i + 1])
      end
    end
    return y, m
  end
  -- test_cross_entropy2_op.py: [5, 10] probabilities, and [2, 3, 5] with ignore_index 3
  for _, dt in ipairs({ "float64", "float32" }) do
    it("matches the reference, with ignore_index (" .. dt .. ")", function()
      local X, L = probs(5, 10, 151), randint(5, 0, 10, 152)
      local y, m = ref(X, L, 5, 10, -100)
      T.check_output{ type = "cross_entropy2", inputs = { X = t(X, { 5, 10 }, dt), Label = ids(L, { 5, 1 }) },
        expect = { Y = { shape = { 5, 1 }, data = y }, MatchX = { shape = { 5, 1 }, data = m } },
        atol = TOL[dt], rtol = TOL[dt] }
      local X3, L3 = probs(6, 5, 153), { 3, 1, 3, 0, 4, 2 }
      y, m = ref(X3, L3, 6, 5, 3)
      T.check_output{ type = "cross_entropy2", attrs = { ignore_index = 3 },
        inputs = { X = t(X3, { 2, 3, 5 }, dt), Label = ids(L3, { 2, 3, 1 }) },
        expect = { Y = { shape = { 2, 3, 1 }, data = y } }, atol = TOL[dt], rtol = TOL[dt] }
    end)
  end
  it("has finite-difference gradients (float64)", function()
    -- -log p curves fast for small p: a finer step than the default
    T.check_grad{ type = "cross_entropy2", of = { "Y" }, wrt = { "X" }, delta = 1e-5,
      inputs = { X = t(probs(5, 10, 154), { 5, 10 }), Label = ids(randint(5, 0, 10, 155), { 5, 1 }) } }
    T.check_grad{ type = "cross_entropy2", attrs = { ignore_index = 3 }, of = { "Y" }, wrt = { "X" }, delta = 1e-5,
      inputs = { X = t(probs(6, 5, 156), { 2, 3, 5 }), Label = ids({ 3, 1, 3, 0, 4, 2 }, { 2, 3, 1 }) } }
  end)
  it("refuses a float Label, naming it", function()
    expect_error(function()
      T.run{ type = "cross_entropy2", inputs = { X = t(probs(2, 3, 1), { 2, 3 }), Label = t({ 0, 1 }, { 2, 1 }) } }
    end, "cross_entropy2", "Label", "int64")
  end)
end)
