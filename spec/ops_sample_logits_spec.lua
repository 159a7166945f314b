-- sample_logits and its grad (Fluid 1.8, behind
-- sampled_softmax_with_cross_entropy): values against plain Lua with
-- customized samples (Fluid's test_sample_logits_op.py) including
-- accidental hits, the log-uniform draws checked through the Samples and
-- Probabilities the op outputs (distinct, shared by the rows, one number of
-- tries explaining every probability), gradients by float64 finite
-- differences, and errors.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")
local expect_error = require("spec.helpers.expect_error")

local function case(n, k, t, s, seed)
  local c = { n = n, k = k, t = t, s = s, m = t + s }
  c.logits = R.symmetric(n * k, seed, 2)
  c.labels = {}
  for i = 0, n - 1 do   -- distinct true labels in a row
    for j = 0, t - 1 do c.labels[#c.labels + 1] = (i * 3 + j * 5 + seed) % k end
  end
  return c
end

-- the expected SampledLogits: gathered logits minus log(probability), and
-- 1e20 off a drawn column hitting one of the row's labels
local function ref(c, samples, probs, remove)
  local out = {}
  for i = 0, c.n - 1 do
    for j = 0, c.m - 1 do
      local cls = samples[i * c.m + j + 1]
      local v = c.logits[i * c.k + cls + 1]
      if remove and j >= c.t then
        for q = 0, c.t - 1 do
          if samples[i * c.m + q + 1] == cls then v = v - 1e20; break end
        end
      end
      out[#out + 1] = v - math.log(probs[i * c.m + j + 1])
    end
  end
  return out
end

local function inputs(c, dtype)
  return { Logits = T.tensor(c.logits, { shape = { c.n, c.k }, dtype = dtype }),
           Labels = T.tensor(c.labels, { shape = { c.n, c.t }, dtype = "int64" }) }
end

-- customized samples: the labels, then classes with some accidental hits
local function customized(c, seed)
  local samples, probs = {}, R.uniform(c.n * c.m, seed, 0.05, 0.9)
  for i = 0, c.n - 1 do
    for j = 0, c.m - 1 do
      samples[#samples + 1] = j < c.t and c.labels[i * c.t + j + 1]
        or (j == c.t and c.labels[i * c.t + 1]) or (i * 7 + j * 3) % c.k
    end
  end
  return samples, probs
end

describe("sample_logits with customized samples (test_sample_logits_op)", function()
  for _, dtype in ipairs({ "float64", "float32" }) do
    for _, remove in ipairs({ true, false }) do
      it(("%s, remove_accidental_hits = %s"):format(dtype, tostring(remove)), function()
        local c = case(5, 20, 3, 6, 3)
        local samples, probs = customized(c, 11)
        local ins = inputs(c, dtype)
        ins.CustomizedSamples = T.tensor(samples, { shape = { c.n, c.m }, dtype = "int64" })
        ins.CustomizedProbabilities = T.tensor(probs, { shape = { c.n, c.m }, dtype = dtype })
        local labels = {}
        for i = 0, c.n - 1 do for j = 0, c.t - 1 do labels[#labels + 1] = j end end
        local tol = dtype == "float32" and 1e-5 or 1e-12
        T.check_output{ type = "sample_logits", inputs = ins, dtype = dtype, atol = tol, rtol = tol,
          attrs = { use_customized_samples = true, num_samples = c.s, remove_accidental_hits = remove },
          expect = { SampledLogits = { shape = { c.n, c.m }, data = ref(c, samples, probs, remove) },
                     Samples = { shape = { c.n, c.m }, data = samples },
                     Probabilities = { shape = { c.n, c.m }, data = probs },
                     SampledLabels = { shape = { c.n, c.t }, data = labels } } }
      end)
    end
  end
end)

local function log_uniform(v, k) return math.log((v + 2) / (v + 1)) / math.log(k) end

describe("sample_logits drawing from the log-uniform sampler", function()
  it("uniq: distinct draws shared by the rows, probabilities 1 - (1 - P)^tries for one tries", function()
    local c = case(4, 30, 2, 12, 5)
    local r = T.run{ type = "sample_logits", inputs = inputs(c, "float64"), attrs = { num_samples = c.s, seed = 7 } }
    local samples, probs = r.Samples[1].data, r.Probabilities[1].data
    local seen, tries = {}, nil
    for i = 0, c.n - 1 do
      for j = 0, c.m - 1 do
        local v = samples[i * c.m + j + 1]
        if j < c.t then assert.are.equal(c.labels[i * c.t + j + 1], v)
        else
          assert.is_true(v >= 0 and v < c.k - 1)
          assert.are.equal(samples[j + 1], v)   -- the same draws in every row
          if i == 0 then assert.is_nil(seen[v]); seen[v] = true end
        end
        local p = log_uniform(v, c.k)
        local n_tries = math.log(1 - probs[i * c.m + j + 1]) / math.log(1 - p)
        tries = tries or math.floor(n_tries + 0.5)
        assert.is_true(math.abs(n_tries - tries) < 1e-6, "one number of tries explains every probability")
      end
    end
    assert.is_true(tries >= c.s)
    T.assert_close(r.SampledLogits[1], { shape = { c.n, c.m }, data = ref(c, samples, probs, true) }, 1e-9, 1e-12,
      "SampledLogits")
    -- the seed repeats the draws
    local again = T.run{ type = "sample_logits", inputs = inputs(c, "float64"), attrs = { num_samples = c.s, seed = 7 } }
    assert.are.same(samples, again.Samples[1].data)
  end)

  it("uniq = false: draws with replacement, probabilities num_samples * P", function()
    local c = case(3, 6, 1, 40, 9)
    local r = T.run{ type = "sample_logits", inputs = inputs(c, "float64"),
                     attrs = { num_samples = c.s, seed = 3, uniq = false, remove_accidental_hits = false } }
    local samples, probs = r.Samples[1].data, r.Probabilities[1].data
    local count = {}
    for j = c.t, c.m - 1 do count[samples[j + 1]] = (count[samples[j + 1]] or 0) + 1 end
    local repeated = false
    for _, n in pairs(count) do repeated = repeated or n > 1 end
    assert.is_true(repeated)   -- 40 draws from 5 classes
    for i = 1, #samples do
      assert.is_true(math.abs(probs[i] - c.s * log_uniform(samples[i], c.k)) < 1e-12)
    end
  end)
end)

describe("sample_logits gradient (float64 finite differences)", function()
  it("Logits through customized samples with repeated classes", function()
    local c = case(3, 8, 2, 4, 13)
    local samples, probs = customized(c, 17)
    local ins = inputs(c, "float64")
    ins.CustomizedSamples = T.tensor(samples, { shape = { c.n, c.m }, dtype = "int64" })
    ins.CustomizedProbabilities = T.tensor(probs, { shape = { c.n, c.m } })
    T.check_grad{ type = "sample_logits", inputs = ins, wrt = { "Logits" }, of = { "SampledLogits" },
      attrs = { use_customized_samples = true, num_samples = c.s, remove_accidental_hits = false } }
  end)
  -- (a hit's column sits at -1e20, where finite differences see nothing:
  -- keep the hits)
  it("Logits through drawn samples fixed by the seed", function()
    local c = case(2, 10, 1, 4, 19)
    T.check_grad{ type = "sample_logits", inputs = inputs(c, "float64"), wrt = { "Logits" }, of = { "SampledLogits" },
      attrs = { num_samples = c.s, seed = 11, remove_accidental_hits = false } }
  end)
end)

describe("sample_logits errors", function()
  it("a label out of range names Labels", function()
    local c = case(2, 5, 1, 2, 23)
    c.labels[2] = 5
    expect_error(function() T.run{ type = "sample_logits", inputs = inputs(c, "float64"),
      attrs = { num_samples = 2 } } end, "sample_logits", "Labels", "5")
  end)
  it("uniq cannot draw more distinct classes than K - 1", function()
    local c = case(2, 5, 1, 2, 29)
    expect_error(function() T.run{ type = "sample_logits", inputs = inputs(c, "float64"),
      attrs = { num_samples = 5 } } end, "num_samples", "distinct")
  end)
  it("customized samples of the wrong width", function()
    local c = case(2, 5, 1, 2, 31)
    local ins = inputs(c, "float64")
    ins.CustomizedSamples = T.tensor({ 0, 1, 2, 3 }, { shape = { 2, 2 }, dtype = "int64" })
    ins.CustomizedProbabilities = T.tensor({ 0.1, 0.2, 0.3, 0.4 }, { shape = { 2, 2 } })
    expect_error(function() T.run{ type = "sample_logits", inputs = ins,
      attrs = { num_samples = 2, use_customized_samples = true } } end, "CustomizedSamples", "[N, T + num_samples]")
  end)
end)
