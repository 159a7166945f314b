-- cross_entropy, softmax_with_cross_entropy, sigmoid_cross_entropy_with_logits:
-- values against plain Lua formulas, ignore_index, soft labels, axes,
-- label range errors and finite-difference gradients.
local T = require("spec.helpers.op_test")

local expect_error = require("spec.helpers.expect_error")

local DTYPES = { "float64", "float32" }
local TOL = { float64 = 1e-12, float32 = 2e-6 }

-- rows of probabilities [n, c], each row normalized
local function probs(n, c, seed)
  local out = {}
  for i = 1, n do
    local row, s = {}, 0
    for j = 1, c do
      row[j] = 0.2 + ((i * 7 + j * 13 + seed) % 11) / 10
      s = s + row[j]
    end
    for j = 1, c do out[#out + 1] = row[j] / s end
  end
  return out
end

local function labels(list, shape)
  return T.tensor(list, { shape = shape or { #list, 1 }, dtype = "int64" })
end

describe("cross_entropy", function()
  local N, Cn = 3, 4
  local X = probs(N, Cn, 1)
  for _, dt in ipairs(DTYPES) do
    it("is -log of the label's probability (" .. dt .. ")", function()
      local lb = { 2, 0, 3 }
      local want = {}
      for i = 1, N do want[i] = -math.log(X[(i - 1) * Cn + lb[i] + 1]) end
      T.check_output{ type = "cross_entropy", inputs = { X = T.tensor(X, { shape = { N, Cn }, dtype = dt }),
        Label = labels(lb) }, expect = { Y = { shape = { N, 1 }, data = want } }, atol = TOL[dt], rtol = TOL[dt] }
    end)

    it("takes soft labels (" .. dt .. ")", function()
      local Z = probs(N, Cn, 5)
      local want = {}
      for i = 1, N do
        local s = 0
        for j = 1, Cn do s = s - Z[(i - 1) * Cn + j] * math.log(X[(i - 1) * Cn + j]) end
        want[i] = s
      end
      T.check_output{ type = "cross_entropy", attrs = { soft_label = true },
        inputs = { X = T.tensor(X, { shape = { N, Cn }, dtype = dt }), Label = T.tensor(Z, { shape = { N, Cn }, dtype = dt }) },
        expect = { Y = { shape = { N, 1 }, data = want } }, atol = TOL[dt], rtol = TOL[dt] }
    end)
  end

  it("gives 0 for ignore_index rows and works on higher ranks", function()
    local lb = { 1, -100, 3 }
    local want = { -math.log(X[2]), 0, -math.log(X[2 * Cn + 4]) }
    T.check_output{ type = "cross_entropy", inputs = { X = T.tensor(X, { shape = { N, Cn } }), Label = labels(lb) },
      expect = { Y = { shape = { N, 1 }, data = want } }, atol = 1e-12 }
    T.check_output{ type = "cross_entropy", attrs = { ignore_index = 3 },
      inputs = { X = T.tensor(X, { shape = { N, Cn } }), Label = labels({ 3, 0, 3 }) },
      expect = { Y = { shape = { N, 1 }, data = { 0, -math.log(X[Cn + 1]), 0 } } }, atol = 1e-12 }
    local X4 = probs(4, 3, 2)
    local lb4 = { 0, 2, 1, 2 }
    local want4 = {}
    for i = 1, 4 do want4[i] = -math.log(X4[(i - 1) * 3 + lb4[i] + 1]) end
    T.check_output{ type = "cross_entropy", inputs = { X = T.tensor(X4, { shape = { 2, 2, 3 } }),
      Label = labels(lb4, { 2, 2, 1 }) }, expect = { Y = { shape = { 2, 2, 1 }, data = want4 } }, atol = 1e-12 }
  end)

  it("gives a huge finite loss for a zero probability", function()
    local r = T.run{ type = "cross_entropy",
      inputs = { X = T.tensor({ 0, 1 }, { shape = { 1, 2 } }), Label = labels({ 0 }) } }
    assert.are.equal(1e20, r.Y[1].data[1])
  end)

  it("rejects labels out of range, naming the value and row", function()
    local x = T.tensor(X, { shape = { N, Cn } })
    expect_error(function() T.run{ type = "cross_entropy", inputs = { X = x, Label = labels({ 0, 4, 1 }) } } end,
      "cross_entropy", "holds 4 at row 1", "[0, 4)")
    expect_error(function() T.run{ type = "cross_entropy", inputs = { X = x, Label = labels({ 0, 1, -1 }) } } end,
      "holds -1 at row 2")
  end)

  it("rejects bad label shapes and dtypes", function()
    local x = T.tensor(X, { shape = { N, Cn } })
    expect_error(function()
      T.run{ type = "cross_entropy", inputs = { X = x, Label = T.tensor({ 0, 1, 2 }, { shape = { N, 1 }, dtype = "int32" }) } }
    end, "cross_entropy", "int32", "int64")
    expect_error(function() T.run{ type = "cross_entropy", inputs = { X = x, Label = labels({ 0, 1 }) } } end,
      "cross_entropy", "[2, 1]", "[3, 4]")
    expect_error(function()
      T.run{ type = "cross_entropy", attrs = { soft_label = true }, inputs = { X = x, Label = labels({ 0, 1, 2 }) } }
    end, "cross_entropy", "soft")
  end)

  it("has gradients (hard with an ignored row, soft)", function()
    T.check_grad{ type = "cross_entropy", of = { "Y" }, wrt = { "X" },
      inputs = { X = T.tensor(X, { shape = { N, Cn } }), Label = labels({ 3, -100, 0 }) } }
    T.check_grad{ type = "cross_entropy", of = { "Y" }, wrt = { "X" }, attrs = { soft_label = true }, no_grad = { "Label" },
      inputs = { X = T.tensor(X, { shape = { N, Cn } }), Label = T.tensor(probs(N, Cn, 4), { shape = { N, Cn } }) } }
  end)
end)

-- softmax and per-row loss along axis of a [pre, C, post] tensor (0-based axis)
local function swce_ref(x, shape, axis, label, soft, ignore)
  local pre, post, C = 1, 1, shape[axis + 1]
  for i = 1, axis do pre = pre * shape[i] end
  for i = axis + 2, #shape do post = post * shape[i] end
  local sm, loss = {}, {}
  for p = 0, pre - 1 do
    for q = 0, post - 1 do
      local function at(c) return p * C * post + c * post + q + 1 end
      local s = 0
      for c = 0, C - 1 do s = s + math.exp(x[at(c)]) end
      for c = 0, C - 1 do sm[at(c)] = math.exp(x[at(c)]) / s end
      local r = p * post + q + 1
      if soft then
        local l = 0
        for c = 0, C - 1 do l = l - label[at(c)] * math.log(sm[at(c)]) end
        loss[r] = l
      else
        loss[r] = (label[r] == ignore) and 0 or -math.log(sm[at(label[r])])
      end
    end
  end
  return sm, loss
end

describe("softmax_with_cross_entropy", function()
  local L = { 0.5, -1, 2, 0.25, 1.5, -0.5, 0, 3, -2, 1, 0.75, 0.1, -0.3, 0.9, 2.2 }
  for _, dt in ipairs(DTYPES) do
    it("gives softmax and the hard-label loss (" .. dt .. ")", function()
      local lb = { 4, 0, 2 }
      local sm, loss = swce_ref(L, { 3, 5 }, 1, lb, false, -100)
      T.check_output{ type = "softmax_with_cross_entropy",
        inputs = { Logits = T.tensor(L, { shape = { 3, 5 }, dtype = dt }), Label = labels(lb) },
        expect = { Softmax = { shape = { 3, 5 }, data = sm }, Loss = { shape = { 3, 1 }, data = loss } },
        atol = TOL[dt], rtol = 4 * TOL[dt] }
    end)

    it("takes soft labels (" .. dt .. ")", function()
      local Z = probs(3, 5, 3)
      local sm, loss = swce_ref(L, { 3, 5 }, 1, Z, true)
      T.check_output{ type = "softmax_with_cross_entropy", attrs = { soft_label = true },
        inputs = { Logits = T.tensor(L, { shape = { 3, 5 }, dtype = dt }), Label = T.tensor(Z, { shape = { 3, 5 }, dtype = dt }) },
        expect = { Softmax = { shape = { 3, 5 }, data = sm }, Loss = { shape = { 3, 1 }, data = loss } },
        atol = TOL[dt], rtol = 4 * TOL[dt] }
    end)
  end

  it("works along an inner axis, with ignore_index", function()
    local X = {}
    for i = 1, 24 do X[i] = math.sin(i) * 2 end
    local lb = { 0, 2, -100, 1, 1, 0, 2, 2 }
    local sm, loss = swce_ref(X, { 2, 3, 4 }, 1, lb, false, -100)
    T.check_output{ type = "softmax_with_cross_entropy", attrs = { axis = 1 },
      inputs = { Logits = T.tensor(X, { shape = { 2, 3, 4 } }), Label = labels(lb, { 2, 1, 4 }) },
      expect = { Softmax = { shape = { 2, 3, 4 }, data = sm }, Loss = { shape = { 2, 1, 4 }, data = loss } },
      atol = 1e-12, rtol = 1e-12 }
  end)

  it("stays finite for huge logits", function()
    local r = T.run{ type = "softmax_with_cross_entropy",
      inputs = { Logits = T.tensor({ 1000, 0, -1000 }, { shape = { 1, 3 } }), Label = labels({ 1 }) } }
    assert.is_true(math.abs(r.Loss[1].data[1] - 1000) < 1e-9)
    assert.is_true(math.abs(r.Softmax[1].data[1] - 1) < 1e-12)
  end)

  it("rejects labels out of range and bad axes", function()
    local x = T.tensor(L, { shape = { 3, 5 } })
    expect_error(function() T.run{ type = "softmax_with_cross_entropy", inputs = { Logits = x, Label = labels({ 0, 1, 5 }) } } end,
      "softmax_with_cross_entropy", "holds 5 at row 2", "[0, 5)")
    expect_error(function() T.run{ type = "softmax_with_cross_entropy", inputs = { Logits = x, Label = labels({ -3, 1, 2 }) } } end,
      "holds -3 at row 0")
    expect_error(function()
      T.run{ type = "softmax_with_cross_entropy", attrs = { axis = 2 }, inputs = { Logits = x, Label = labels({ 0, 1, 2 }) } }
    end, "softmax_with_cross_entropy", "axis = 2")
    expect_error(function()
      T.run{ type = "softmax_with_cross_entropy", inputs = { Logits = x, Label = labels({ 0, 1 }) } }
    end, "softmax_with_cross_entropy", "[2, 1]")
  end)

  it("has the fused gradient (hard, soft, inner axis)", function()
    local x = T.tensor(L, { shape = { 3, 5 } })
    T.check_grad{ type = "softmax_with_cross_entropy", of = { "Loss" }, wrt = { "Logits" },
      inputs = { Logits = x, Label = labels({ 1, -100, 4 }) } }
    -- soft labels that do not sum to 1: the gradient is still exact
    local Z = {}
    for i = 1, 15 do Z[i] = ((i * 5) % 7) / 10 end
    T.check_grad{ type = "softmax_with_cross_entropy", of = { "Loss" }, wrt = { "Logits" }, no_grad = { "Label" },
      attrs = { soft_label = true }, inputs = { Logits = x, Label = T.tensor(Z, { shape = { 3, 5 } }) } }
    local X = {}
    for i = 1, 12 do X[i] = math.cos(i) end
    T.check_grad{ type = "softmax_with_cross_entropy", of = { "Loss" }, wrt = { "Logits" }, attrs = { axis = 0 },
      inputs = { Logits = T.tensor(X, { shape = { 3, 4 } }), Label = labels({ 2, 0, 1, 1 }, { 1, 4 }) } }
  end)
end)

describe("sigmoid_cross_entropy_with_logits", function()
  local X = { -3, -0.5, 0, 0.7, 2.5, 40 }
  local Z = { 0, 1, 0.3, -100, 1, 0 }
  local function ref(x, z) return math.max(x, 0) - x * z + math.log(1 + math.exp(-math.abs(x))) end

  for _, dt in ipairs(DTYPES) do
    it("computes the logistic loss, 0 for ignored labels (" .. dt .. ")", function()
      local want = {}
      for i = 1, #X do want[i] = Z[i] == -100 and 0 or ref(X[i], Z[i]) end
      T.check_output{ type = "sigmoid_cross_entropy_with_logits",
        inputs = { X = T.tensor(X, { shape = { 2, 3 }, dtype = dt }), Label = T.tensor(Z, { shape = { 2, 3 }, dtype = dt }) },
        expect = { Out = { shape = { 2, 3 }, data = want } }, atol = TOL[dt], rtol = TOL[dt] }
    end)
  end

  it("normalizes by the number of labels not ignored", function()
    local want = {}
    for i = 1, #X do want[i] = Z[i] == -100 and 0 or ref(X[i], Z[i]) / 5 end
    T.check_output{ type = "sigmoid_cross_entropy_with_logits", attrs = { normalize = true },
      inputs = { X = T.tensor(X, { shape = { 2, 3 } }), Label = T.tensor(Z, { shape = { 2, 3 } }) },
      expect = { Out = { shape = { 2, 3 }, data = want } }, atol = 1e-12 }
    -- a custom ignore_index
    local want2 = {}
    for i = 1, #X do want2[i] = Z[i] == 1 and 0 or ref(X[i], Z[i]) end
    T.check_output{ type = "sigmoid_cross_entropy_with_logits", attrs = { ignore_index = 1 },
      inputs = { X = T.tensor(X, { shape = { 2, 3 } }), Label = T.tensor(Z, { shape = { 2, 3 } }) },
      expect = { Out = { shape = { 2, 3 }, data = want2 } }, atol = 1e-12 }
  end)

  it("rejects mismatched shapes and dtypes", function()
    expect_error(function()
      T.run{ type = "sigmoid_cross_entropy_with_logits",
        inputs = { X = T.tensor(X, { shape = { 2, 3 } }), Label = T.tensor(Z, { shape = { 3, 2 } }) } }
    end, "sigmoid_cross_entropy_with_logits", "[3, 2]", "[2, 3]")
    expect_error(function()
      T.run{ type = "sigmoid_cross_entropy_with_logits",
        inputs = { X = T.tensor(X, { shape = { 2, 3 } }), Label = T.tensor(Z, { shape = { 2, 3 }, dtype = "float32" }) } }
    end, "sigmoid_cross_entropy_with_logits", "float32")
  end)

  it("has gradients (plain and normalized, with an ignored label)", function()
    local Xg = { -3, -0.5, 0.1, 0.7, 2.5, 4 }
    for _, norm in ipairs({ false, true }) do
      T.check_grad{ type = "sigmoid_cross_entropy_with_logits", wrt = { "X" }, no_grad = { "Label" },
        attrs = { normalize = norm },
        inputs = { X = T.tensor(Xg, { shape = { 2, 3 } }), Label = T.tensor(Z, { shape = { 2, 3 } }) } }
    end
  end)
end)
