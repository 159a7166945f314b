-- nce and nce_grad (Fluid 1.8's noise-contrastive estimation): values
-- against plain Lua for the three samplers with the negatives fixed by
-- custom_neg_classes (as Fluid's test_nce.py) or read back from the
-- SampleLabels the op drew, the samplers' distributions, seeds, is_test,
-- gradients by float64 finite differences, the sparse Weight@GRAD against
-- the dense one through sgd, and errors.
local ffi = require("ffi")
local lib = require("oar.lib")
local C = lib.load_op_api()
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")
local expect_error = require("spec.helpers.expect_error")

-- the reference: o = sigmoid(x . w[c] + b[c]), q = S * P(c); a true class
-- costs -log(o / (o + q)), a negative one -log(q / (o + q))
local function ref(c)
  local cost, logits = {}, {}
  for i = 0, c.n - 1 do
    local s = 0
    for j = 0, c.m - 1 do
      local cls = c.classes[i * c.m + j + 1]
      local z = c.b and c.b[cls + 1] or 0
      for e = 0, c.d - 1 do z = z + c.x[i * c.d + e + 1] * c.w[cls * c.d + e + 1] end
      local o = 1 / (1 + math.exp(-z))
      local q = c.prob(cls) * c.s
      logits[#logits + 1] = o
      s = s + (j < c.t and -math.log(o / (o + q)) or -math.log(q / (o + q)))
    end
    cost[i + 1] = s * (c.sw and c.sw[i + 1] or 1)
  end
  return cost, logits
end

local OUTS = { Cost = 1, SampleLogits = 1, SampleLabels = 1 }

local function case(n, d, k, t, s, seed)
  local c = { n = n, d = d, k = k, t = t, s = s, m = t + s }
  c.x = R.symmetric(n * d, seed)
  c.w = R.symmetric(k * d, seed + 1)
  c.b = R.symmetric(k, seed + 2, 0.5)
  c.sw = R.uniform(n, seed + 3, 0.5, 1.5)
  c.labels = {}
  for i, v in ipairs(R.uniform(n * t, seed + 4, 0, k)) do c.labels[i] = math.floor(v) end
  return c
end

local function inputs(c, dtype)
  return {
    Input = T.tensor(c.x, { shape = { c.n, c.d }, dtype = dtype }),
    Label = T.tensor(c.labels, { shape = { c.n, c.t }, dtype = "int64" }),
    Weight = T.tensor(c.w, { shape = { c.k, c.d }, dtype = dtype }),
    Bias = c.b and T.tensor(c.b, { shape = { c.k, 1 }, dtype = dtype }),
    SampleWeight = c.sw and T.tensor(c.sw, { shape = { c.n, 1 }, dtype = dtype }),
  }
end

-- the classes of each row: its labels then the fixed negatives
local function fixed_classes(c, neg)
  local out = {}
  for i = 0, c.n - 1 do
    for j = 1, c.t do out[#out + 1] = c.labels[i * c.t + j] end
    for _, v in ipairs(neg) do out[#out + 1] = v end
  end
  return out
end

local function uniform_p(k) return function() return 1 / k end end
local function log_uniform_p(k) return function(v) return math.log((v + 2) / (v + 1)) / math.log(k) end end

-- Walker's alias tables for a distribution, built here by the textbook
-- construction (small and large stacks)
local function alias_tables(p)
  local n = #p
  local keep, alias, small, large = {}, {}, {}, {}
  for i = 1, n do
    keep[i] = p[i] * n
    alias[i] = -1
    if keep[i] < 1 then small[#small + 1] = i else large[#large + 1] = i end
  end
  while #small > 0 and #large > 0 do
    local l, g = table.remove(small), table.remove(large)
    alias[l] = g - 1
    keep[g] = keep[g] + keep[l] - 1
    if keep[g] < 1 then small[#small + 1] = g else large[#large + 1] = g end
  end
  for _, i in ipairs(small) do keep[i] = 1 end
  for _, i in ipairs(large) do keep[i] = 1 end
  return keep, alias
end

describe("nce forward (Fluid's test_nce cases, custom_neg_classes)", function()
  for _, dtype in ipairs({ "float64", "float32" }) do
    it("uniform sampler, 3 true classes, bias and SampleWeight, " .. dtype, function()
      local c = case(5, 10, 20, 3, 10, 11)
      local neg = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 }
      c.classes, c.prob = fixed_classes(c, neg), uniform_p(c.k)
      local cost, logits = ref(c)
      local tol = dtype == "float32" and 1e-5 or 1e-12
      T.check_output{ type = "nce", inputs = inputs(c, dtype), dtype = dtype, outputs = OUTS,
        attrs = { num_total_classes = c.k, num_neg_samples = c.s, custom_neg_classes = neg, sampler = 0 },
        atol = tol, rtol = tol,
        expect = { Cost = { shape = { c.n, 1 }, data = cost },
                   SampleLogits = { shape = { c.n, c.m }, data = logits },
                   SampleLabels = { shape = { c.n, c.m }, data = c.classes } } }
    end)
  end

  it("log-uniform sampler, one true class, no bias or SampleWeight", function()
    local c = case(4, 3, 7, 1, 4, 21)
    local neg = { 6, 0, 3, 3 }
    c.classes, c.prob = fixed_classes(c, neg), log_uniform_p(c.k)
    c.b, c.sw = nil, nil
    local cost = ref(c)
    local ins = inputs(c, "float64")
    ins.Bias, ins.SampleWeight = nil, nil
    T.check_output{ type = "nce", inputs = ins, outputs = OUTS,
      attrs = { num_total_classes = c.k, num_neg_samples = c.s, custom_neg_classes = neg, sampler = 1 },
      expect = { Cost = { shape = { c.n, 1 }, data = cost } } }
  end)

  it("custom distribution: P(c) from CustomDistProbs", function()
    local c = case(3, 4, 5, 2, 3, 31)
    local p = { 0.1, 0.2, 0.3, 0.25, 0.15 }
    local keep, alias = alias_tables(p)
    local neg = { 4, 2, 0 }
    c.classes, c.prob = fixed_classes(c, neg), function(v) return p[v + 1] end
    local cost = ref(c)
    local ins = inputs(c, "float64")
    ins.CustomDistProbs = T.tensor(p, { shape = { 5 }, dtype = "float32" })
    ins.CustomDistAlias = T.tensor(alias, { shape = { 5 }, dtype = "int32" })
    ins.CustomDistAliasProbs = T.tensor(keep, { shape = { 5 }, dtype = "float32" })
    -- the probabilities are float32 as in Fluid: compare at float32 precision
    T.check_output{ type = "nce", inputs = ins, outputs = OUTS, atol = 1e-6, rtol = 1e-6,
      attrs = { num_total_classes = c.k, num_neg_samples = c.s, custom_neg_classes = neg, sampler = 2 },
      expect = { Cost = { shape = { c.n, 1 }, data = cost } } }
  end)
end)

-- runs nce drawing its negatives; returns Cost, SampleLabels
local function drawn(c, attrs, extra)
  local ins = inputs(c, "float64")
  for k, v in pairs(extra or {}) do ins[k] = v end
  attrs.num_total_classes, attrs.num_neg_samples = c.k, c.s
  local r = T.run{ type = "nce", inputs = ins, attrs = attrs, outputs = OUTS }
  return r.Cost[1], r.SampleLabels[1]
end

describe("nce samplers", function()
  it("uniform draws with a seed: in range, repeatable, and the cost of the drawn classes", function()
    local c = case(6, 3, 9, 2, 5, 41)
    local cost, labels = drawn(c, { sampler = 0, seed = 5 })
    local _, again = drawn(c, { sampler = 0, seed = 5 })
    local _, other = drawn(c, { sampler = 0, seed = 6 })
    assert.are.same(labels.data, again.data)
    assert.are_not.same(labels.data, other.data)
    for i = 0, c.n - 1 do
      for j = 0, c.m - 1 do
        local v = labels.data[i * c.m + j + 1]
        if j < c.t then assert.are.equal(c.labels[i * c.t + j + 1], v)
        else assert.is_true(v >= 0 and v < c.k) end
      end
    end
    c.classes, c.prob = labels.data, uniform_p(c.k)
    T.assert_close(cost, { shape = { c.n, 1 }, data = (ref(c)) }, 1e-12, 1e-12, "Cost")
  end)

  -- frequencies of many draws against the sampler's distribution
  local function frequencies(kind, k, extra, p)
    local c = case(1500, 1, k, 1, 4, 51)
    local _, labels = drawn(c, { sampler = kind, seed = 3 }, extra)
    local count, total = {}, 0
    for i = 0, c.n - 1 do
      for j = c.t, c.m - 1 do
        local v = labels.data[i * c.m + j + 1]
        count[v] = (count[v] or 0) + 1
        total = total + 1
      end
    end
    for v = 0, k - 1 do
      local f = (count[v] or 0) / total
      assert.is_true(math.abs(f - p(v)) < 0.02, ("class %d: frequency %.4f, probability %.4f"):format(v, f, p(v)))
    end
  end

  it("uniform: every class about 1/K", function() frequencies(0, 8, nil, function() return 1 / 8 end) end)

  it("log-uniform: Zipfian frequencies over [0, K - 1)", function()
    -- Fluid's log-uniform sampler draws from [0, K - 2]; class K - 1 never
    local k = 8
    frequencies(1, k, nil, function(v)
      if v == k - 1 then return 0 end
      return math.log((v + 2) / (v + 1)) / math.log(k)
    end)
  end)

  it("custom distribution by the alias method", function()
    local p = { 0.05, 0.4, 0, 0.25, 0.3 }
    local keep, alias = alias_tables(p)
    frequencies(2, 5, {
      CustomDistProbs = T.tensor(p, { shape = { 5 }, dtype = "float32" }),
      CustomDistAlias = T.tensor(alias, { shape = { 5 }, dtype = "int64" }),
      CustomDistAliasProbs = T.tensor(keep, { shape = { 5 }, dtype = "float32" }) },
      function(v) return p[v + 1] end)
  end)

  it("is_test without SampleLogits and SampleLabels computes the same Cost", function()
    local c = case(3, 4, 6, 1, 2, 61)
    local neg = { 5, 1 }
    c.classes, c.prob = fixed_classes(c, neg), uniform_p(c.k)
    local r = T.run{ type = "nce", inputs = inputs(c, "float64"), outputs = { Cost = 1 },
      attrs = { num_total_classes = c.k, num_neg_samples = 2, custom_neg_classes = neg, is_test = true } }
    T.assert_close(r.Cost[1], { shape = { 3, 1 }, data = (ref(c)) }, 1e-12, 1e-12, "Cost")
  end)
end)

describe("nce gradients (float64 finite differences)", function()
  it("Input, Weight and Bias with fixed negatives and SampleWeight", function()
    local c = case(4, 3, 8, 2, 3, 71)
    T.check_grad{ type = "nce", inputs = inputs(c, "float64"), outputs = OUTS, wrt = { "Input", "Weight", "Bias" },
      of = { "Cost" }, no_grad = { "SampleWeight" },
      attrs = { num_total_classes = c.k, num_neg_samples = 3, custom_neg_classes = { 7, 0, 2 } } }
  end)

  it("Input and Weight with log-uniform draws fixed by the seed", function()
    local c = case(3, 2, 10, 1, 4, 81)
    local ins = inputs(c, "float64")
    ins.Bias, ins.SampleWeight = nil, nil
    T.check_grad{ type = "nce", inputs = ins, outputs = OUTS, wrt = { "Input", "Weight" }, of = { "Cost" },
      attrs = { num_total_classes = c.k, num_neg_samples = 4, sampler = 1, seed = 9 } }
  end)
end)

-- nce -> mean -> backward -> sgd on the weight, dense or sparse: the weight
-- after one step
local function train_step(c, is_sparse, neg, lr)
  return (require("spec.helpers.sgd_step")({ { "x", { c.n, c.d }, 6 }, { "y", { c.n, c.t }, 3 },
    { "w", { c.k, c.d }, 6, true }, { "b", { c.k, 1 }, 6, true }, { "lr", { 1 }, 6 } },
    function(block)
      T.append_op(block, "nce", { Input = { "x" }, Label = { "y" }, Weight = { "w" }, Bias = { "b" } },
        { Cost = { "cost" }, SampleLogits = { "sl" }, SampleLabels = { "sc" } },
        { num_total_classes = c.k, num_neg_samples = #neg, custom_neg_classes = neg, is_sparse = is_sparse })
      return "cost"
    end, is_sparse, { x = T.tensor(c.x, { shape = { c.n, c.d } }),
    y = T.tensor(c.labels, { shape = { c.n, c.t }, dtype = "int64" }), w = T.tensor(c.w, { shape = { c.k, c.d } }),
    b = T.tensor(c.b, { shape = { c.k, 1 } }), lr = T.tensor({ lr }, { shape = { 1 } }) }))
end

describe("nce is_sparse", function()
  it("Weight@GRAD is a SELECTED_ROWS and one sgd step matches the dense one", function()
    local c = case(4, 3, 12, 2, 3, 91)
    local neg = { 11, 4, 4 }
    local dense = train_step(c, false, neg, 0.5)
    local sparse = train_step(c, true, neg, 0.5)
    T.assert_close(sparse, dense, 1e-12, 1e-12, "sparse W")
    -- rows no sample touched keep their values
    local touched = {}
    for _, v in ipairs(fixed_classes(c, neg)) do touched[v] = true end
    local moved = 0
    for r = 0, c.k - 1 do
      for e = 1, c.d do
        local changed = dense.data[r * c.d + e] ~= c.w[r * c.d + e]
        if not touched[r] then assert.is_false(changed, "row " .. r .. " was not sampled") end
        if changed then moved = moved + 1 end
      end
    end
    assert.is_true(moved > 0)
  end)
end)

describe("nce errors", function()
  local c = case(2, 3, 5, 1, 2, 101)
  it("a label out of range names Label", function()
    local ins = inputs(c, "float64")
    ins.Label = T.tensor({ 1, 5 }, { shape = { 2, 1 }, dtype = "int64" })
    expect_error(function() T.run{ type = "nce", inputs = ins, outputs = OUTS,
      attrs = { num_total_classes = 5, num_neg_samples = 2, custom_neg_classes = { 0, 1 } } } end,
      "nce", "Label", "5")
  end)
  it("custom_neg_classes must have num_neg_samples classes", function()
    expect_error(function() T.run{ type = "nce", inputs = inputs(c, "float64"), outputs = OUTS,
      attrs = { num_total_classes = 5, num_neg_samples = 3, custom_neg_classes = { 0, 1 } } } end,
      "custom_neg_classes", "num_neg_samples")
  end)
  it("Weight's rows must be num_total_classes", function()
    expect_error(function() T.run{ type = "nce", inputs = inputs(c, "float64"), outputs = OUTS,
      attrs = { num_total_classes = 6, num_neg_samples = 2 } } end, "Weight", "num_total_classes")
  end)
  it("sampler 2 needs the custom distribution", function()
    expect_error(function() T.run{ type = "nce", inputs = inputs(c, "float64"), outputs = OUTS,
      attrs = { num_total_classes = 5, num_neg_samples = 2, sampler = 2 } } end, "CustomDistProbs")
  end)
end)
