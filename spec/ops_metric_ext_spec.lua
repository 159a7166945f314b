-- auc, precision_recall, positive_negative_pair and mean_iou against plain
-- Lua recomputations of Fluid 1.8's OpTest cases (test_auc_op.py,
-- test_precision_recall_op.py, test_positive_negative_pair_op.py,
-- test_mean_iou.py; random data from spec.helpers.random instead of
-- numpy's), plus the edge cases and the errors.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")
local lib = require("oar.lib")
local expect_error = require("spec.helpers.expect_error")

local function ints(list, shape, dt) return T.tensor(list, { shape = shape, dtype = dt or "int64" }) end
local function rand_ints(n, seed, hi)
  local u, out = R.uniform(n, seed, 0, 1), {}
  for i = 1, n do out[i] = math.min(hi - 1, math.floor(u[i] * hi)) end
  return out
end

-- Fluid's metrics.Auc: buckets floor(p * nt), trapezoids from the top down
local function auc_of(pos, neg, nt)
  local tp, tn, area = 0, 0, 0
  for i = nt, 0, -1 do
    local pp, pn = tp, tn
    tp, tn = tp + pos[i + 1], tn + neg[i + 1]
    area = area + math.abs(tn - pn) * (tp + pp) / 2
  end
  return (tp > 0 and tn > 0) and area / tp / tn or area
end
local function buckets(pred, labels, nt)
  local pos, neg = {}, {}
  for i = 1, nt + 1 do pos[i], neg[i] = 0, 0 end
  for i, l in ipairs(labels) do
    local b = math.floor(pred[i] * nt) + 1
    if l ~= 0 then pos[b] = pos[b] + 1 else neg[b] = neg[b] + 1 end
  end
  return pos, neg
end

describe("auc", function()
  local N, NT = 128, 200
  local u = R.uniform(2 * N, 11, 0, 1)
  local labels = rand_ints(N, 12, 2)
  local pos_prob = {}
  for i = 1, N do pos_prob[i] = u[2 * i] end
  local pos, neg = buckets(pos_prob, labels, NT)
  local want = auc_of(pos, neg, NT)

  it("slide_steps 1 (TestAucOp): the window's AUC, its stats twice and the batch counter", function()
    local len = 2 * (NT + 1) + 1
    local zeros = {}
    for i = 1, len do zeros[i] = 0 end
    local sp, sn = {}, {}
    for i = 1, NT + 1 do sp[i], sn[i], sp[NT + 1 + i], sn[NT + 1 + i] = pos[i], neg[i], pos[i], neg[i] end
    sp[len], sn[len] = 1, 1
    local r = T.check_output{ type = "auc", attrs = { curve = "ROC", num_thresholds = NT, slide_steps = 1 },
      inputs = { Predict = T.tensor(u, { shape = { N, 2 } }), Label = ints(labels, { N, 1 }),
                 StatPos = ints(zeros, { len }), StatNeg = ints(zeros, { len }) },
      expect = { AUC = { shape = { 1 }, data = { want } }, StatPosOut = { shape = { len }, data = sp },
                 StatNegOut = { shape = { len }, data = sn } }, atol = 1e-12 }
    assert.are.equal("float64", r.AUC[1].dtype)
    assert.is_true(want > 0.2 and want < 0.8)
  end)

  it("slide_steps 0 (TestGlobalAucOp): accumulates onto the stats given", function()
    local old_p, old_n = rand_ints(NT + 1, 13, 5), rand_ints(NT + 1, 14, 5)
    local sp, sn = {}, {}
    for i = 1, NT + 1 do sp[i], sn[i] = pos[i] + old_p[i], neg[i] + old_n[i] end
    T.check_output{ type = "auc", attrs = { num_thresholds = NT, slide_steps = 0 },
      inputs = { Predict = T.tensor(u, { shape = { N, 2 } }), Label = ints(labels, { N, 1 }),
                 StatPos = ints(old_p, { 1, NT + 1 }), StatNeg = ints(old_n, { 1, NT + 1 }) },
      expect = { AUC = { data = { auc_of(sp, sn, NT) } }, StatPosOut = { shape = { 1, NT + 1 }, data = sp },
                 StatNegOut = { shape = { 1, NT + 1 }, data = sn } }, atol = 1e-12 }
  end)

  it("takes [N, 1] predictions and float32, and gives 0 with one class only", function()
    local p = { 0.125, 0.5, 0.875, 0.25 }
    local pos1, neg1 = buckets(p, { 1, 0, 1, 0 }, 4)
    T.check_output{ type = "auc", attrs = { num_thresholds = 4, slide_steps = 0 },
      inputs = { Predict = T.tensor(p, { shape = { 4, 1 }, dtype = "float32" }), Label = ints({ 1, 0, 1, 0 }, { 4, 1 }),
                 StatPos = ints({ 0, 0, 0, 0, 0 }, { 1, 5 }), StatNeg = ints({ 0, 0, 0, 0, 0 }, { 1, 5 }) },
      expect = { AUC = { data = { auc_of(pos1, neg1, 4) } }, StatPosOut = { data = pos1 } } }
    T.check_output{ type = "auc", attrs = { num_thresholds = 4, slide_steps = 0 },
      inputs = { Predict = T.tensor(p, { shape = { 4, 1 } }), Label = ints({ 1, 1, 1, 1 }, { 4, 1 }),
                 StatPos = ints({ 0, 0, 0, 0, 0 }, { 1, 5 }), StatNeg = ints({ 0, 0, 0, 0, 0 }, { 1, 5 }) },
      expect = { AUC = { data = { 0 } } } }
  end)

  it("names the op and the variable for bad shapes and values", function()
    local z = ints({ 0, 0, 0, 0, 0 }, { 1, 5 })
    expect_error(function()
      T.run{ type = "auc", attrs = { num_thresholds = 4, slide_steps = 0 },
        inputs = { Predict = T.tensor({ 1, 2, 3 }, { shape = { 1, 3 } }), Label = ints({ 1 }, { 1, 1 }), StatPos = z, StatNeg = z } }
    end, "auc", "Predict", "[1, 3]")
    expect_error(function()
      T.run{ type = "auc", attrs = { num_thresholds = 4, slide_steps = 1 },
        inputs = { Predict = T.tensor({ 0.5 }, { shape = { 1, 1 } }), Label = ints({ 1 }, { 1, 1 }), StatPos = z, StatNeg = z } }
    end, "auc", "StatPos", "[1, 5]", "[11]")
    expect_error(function()
      T.run{ type = "auc", attrs = { num_thresholds = 4, slide_steps = 0 },
        inputs = { Predict = T.tensor({ 0.5, 0.2 }, { shape = { 2, 1 } }), Label = ints({ 1 }, { 1, 1 }), StatPos = z, StatNeg = z } }
    end, "auc", "Label", "[1, 1]")
    expect_error(function()
      T.run{ type = "auc", attrs = { num_thresholds = 4, slide_steps = 0 },
        inputs = { Predict = T.tensor({ 1.5 }, { shape = { 1, 1 } }), Label = ints({ 1 }, { 1, 1 }), StatPos = z, StatNeg = z } }
    end, "auc", "Predict", "[0, 1]")
  end)

  it("has no gradient", function()
    for _, t in ipairs({ "auc", "precision_recall", "positive_negative_pair", "mean_iou" }) do
      assert.is_false(lib.C.oar_op_has_grad(t))
    end
  end)
end)

-- test_precision_recall_op.py's get_states and compute_metrics
local function pr_states(idx, lbl, cls, w)
  local st = {}
  for c = 1, cls * 4 do st[c] = 0 end
  local function add(c, j, v) st[c * 4 + j + 1] = st[c * 4 + j + 1] + v end
  for i = 1, #idx do
    local x, l, wi = idx[i], lbl[i], w and w[i] or 1
    if x == l then
      add(x, 0, wi)
      for j = 0, cls - 1 do add(j, 2, wi) end
      add(x, 2, -wi)
    else
      add(l, 3, wi); add(x, 1, wi)
      for j = 0, cls - 1 do add(j, 2, wi) end
      add(l, 2, -wi); add(x, 2, -wi)
    end
  end
  return st
end
local function pr_metrics(st, cls)
  local function ratio(a, b) return (a > 0 or b > 0) and a / (a + b) or 1 end
  local function f1(p, r) return (p > 0 or r > 0) and 2 * p * r / (p + r) or 0 end
  local tp, fp, fn, mp, mr = 0, 0, 0, 0, 0
  for c = 0, cls - 1 do
    local t, f, n = st[c * 4 + 1], st[c * 4 + 2], st[c * 4 + 4]
    tp, fp, fn = tp + t, fp + f, fn + n
    mp, mr = mp + ratio(t, f), mr + ratio(t, n)
  end
  mp, mr = mp / cls, mr / cls
  local p, r = ratio(tp, fp), ratio(tp, fn)
  return { mp, mr, f1(mp, mr), p, r, f1(p, r) }
end

describe("precision_recall", function()
  local N, CLS = 64, 10
  local probs = R.uniform(N, 21, 0, 1)
  local idx, lbl = rand_ints(N, 22, CLS), rand_ints(N, 23, CLS)
  local w = R.uniform(N, 24, 0, 1)
  for _, it_dt in ipairs({ "int32", "int64" }) do
    it("case 0: no weights, no states (" .. it_dt .. " ids)", function()
      local st = pr_states(idx, lbl, CLS)
      local m = pr_metrics(st, CLS)
      local r = T.check_output{ type = "precision_recall", attrs = { class_number = CLS },
        inputs = { MaxProbs = T.tensor(probs, { shape = { N, 1 } }), Indices = ints(idx, { N, 1 }, it_dt),
                   Labels = ints(lbl, { N, 1 }, it_dt) },
        expect = { BatchMetrics = { shape = { 6 }, data = m }, AccumMetrics = { data = m },
                   AccumStatesInfo = { shape = { CLS, 4 }, data = st } }, atol = 1e-12 }
      assert.are.equal("float64", r.BatchMetrics[1].dtype)
    end)
  end

  it("case 1: weights (float32)", function()
    local wf = {}
    for i = 1, N do wf[i] = tonumber(require("ffi").new("float", w[i])) end
    local st = pr_states(idx, lbl, CLS, wf)
    local m = pr_metrics(st, CLS)
    T.check_output{ type = "precision_recall", attrs = { class_number = CLS },
      inputs = { MaxProbs = T.tensor(probs, { shape = { N, 1 }, dtype = "float32" }), Indices = ints(idx, { N, 1 }, "int32"),
                 Labels = ints(lbl, { N, 1 }, "int32"), Weights = T.tensor(wf, { shape = { N, 1 }, dtype = "float32" }) },
      expect = { BatchMetrics = { data = m }, AccumMetrics = { data = m }, AccumStatesInfo = { data = st } },
      atol = 1e-5 }
  end)

  it("case 2: weights and states", function()
    local old = rand_ints(CLS * 4, 25, 30)
    local st = pr_states(idx, lbl, CLS, w)
    local acc = {}
    for i = 1, CLS * 4 do acc[i] = st[i] + old[i] end
    T.check_output{ type = "precision_recall", attrs = { class_number = CLS },
      inputs = { MaxProbs = T.tensor(probs, { shape = { N, 1 } }), Indices = ints(idx, { N, 1 }), Labels = ints(lbl, { N, 1 }),
                 Weights = T.tensor(w, { shape = { N, 1 } }), StatesInfo = T.tensor(old, { shape = { CLS, 4 } }) },
      expect = { BatchMetrics = { data = pr_metrics(st, CLS) }, AccumMetrics = { data = pr_metrics(acc, CLS) },
                 AccumStatesInfo = { data = acc } }, atol = 1e-12 }
  end)

  it("names the op and the variable for bad shapes and ids", function()
    local mp = T.tensor({ 0.5, 0.5 }, { shape = { 2, 1 } })
    expect_error(function()
      T.run{ type = "precision_recall", attrs = { class_number = 3 },
        inputs = { MaxProbs = mp, Indices = ints({ 0, 1, 2 }, { 3, 1 }), Labels = ints({ 0, 1 }, { 2, 1 }) } }
    end, "precision_recall", "Indices", "[3, 1]")
    expect_error(function()
      T.run{ type = "precision_recall", attrs = { class_number = 3 },
        inputs = { MaxProbs = mp, Indices = ints({ 0, 1 }, { 2, 1 }), Labels = ints({ 0, 1 }, { 2, 1 }),
                   StatesInfo = T.tensor({ 0, 0, 0, 0 }, { shape = { 1, 4 } }) } }
    end, "precision_recall", "StatesInfo", "[1, 4]", "class_number = 3")
    expect_error(function()
      T.run{ type = "precision_recall", attrs = { class_number = 3 },
        inputs = { MaxProbs = mp, Indices = ints({ 0, 3 }, { 2, 1 }), Labels = ints({ 0, 1 }, { 2, 1 }) } }
    end, "precision_recall", "Indices", "3")
  end)
end)

-- test_positive_negative_pair_op.py's py_pnpair_op; a tie counts as
-- neutral and (Fluid's kernel) negative
local function pnpair(score, d, col, label, query, w)
  local pos, neg, neu = 0, 0, 0
  local n = #label
  for i = 1, n do
    for j = i + 1, n do
      if query[i] == query[j] and label[i] ~= label[j] then
        local wt = w and (w[i] + w[j]) * 0.5 or 1
        local si, sj = score[(i - 1) * d + col + 1], score[(j - 1) * d + col + 1]
        if si == sj then neu = neu + wt end
        if (si - sj) * (label[i] - label[j]) > 0 then pos = pos + wt else neg = neg + wt end
      end
    end
  end
  return pos, neg, neu
end

describe("positive_negative_pair", function()
  local N = 20
  it("TestPositiveNegativePairOp: column -1, no weight", function()
    local score, label, query = R.symmetric(N, 31, 1), R.symmetric(N, 32, 1), rand_ints(N, 33, 5)
    local p, n, u = pnpair(score, 1, 0, label, query)
    assert.is_true(p + n > 0)
    T.check_output{ type = "positive_negative_pair", attrs = { column = -1 },
      inputs = { Score = T.tensor(score, { shape = { N, 1 } }), Label = T.tensor(label, { shape = { N, 1 } }),
                 QueryID = ints(query, { N, 1 }) },
      expect = { PositivePair = { shape = { 1 }, data = { p } }, NegativePair = { data = { n } },
                 NeutralPair = { data = { u } } }, atol = 1e-12 }
  end)

  it("TestPositiveNegativePairOpAccumulateWeight: a column of two, weights, accumulators", function()
    local score, label, w = R.symmetric(2 * N, 34, 1), R.symmetric(N, 35, 1), R.symmetric(N, 36, 1)
    local query = rand_ints(N, 37, 5)
    local acc = rand_ints(3, 38, 2 ^ 16)
    local p, n, u = pnpair(score, 2, 1, label, query, w)
    T.check_output{ type = "positive_negative_pair", attrs = { column = 1 },
      inputs = { Score = T.tensor(score, { shape = { N, 2 } }), Label = T.tensor(label, { shape = { N, 1 } }),
                 QueryID = ints(query, { N, 1 }), Weight = T.tensor(w, { shape = { N, 1 } }),
                 AccumulatePositivePair = T.tensor({ acc[1] }, { shape = { 1 } }),
                 AccumulateNegativePair = T.tensor({ acc[2] }, { shape = { 1 } }),
                 AccumulateNeutralPair = T.tensor({ acc[3] }, { shape = { 1 } }) },
      expect = { PositivePair = { data = { p + acc[1] } }, NegativePair = { data = { n + acc[2] } },
                 NeutralPair = { data = { u + acc[3] } } }, atol = 1e-9 }
  end)

  it("counts a tie as neutral and negative, as Fluid's kernel (float32)", function()
    -- query 7: rows 1, 2, 4; query 3: row 3. Pairs (1,2) tie, (1,4) positive, (2,4) one label
    T.check_output{ type = "positive_negative_pair",
      inputs = { Score = T.tensor({ 0.5, 0.5, 0.9, 0.1 }, { shape = { 4, 1 }, dtype = "float32" }),
                 Label = T.tensor({ 1, 0, 1, 0 }, { shape = { 4, 1 }, dtype = "float32" }),
                 QueryID = ints({ 7, 7, 3, 7 }, { 4, 1 }) },
      expect = { PositivePair = { data = { 1 } }, NegativePair = { data = { 1 } }, NeutralPair = { data = { 1 } } } }
  end)

  it("names the op and the variable for bad shapes", function()
    local s = T.tensor({ 0.1, 0.2 }, { shape = { 2, 1 } })
    expect_error(function()
      T.run{ type = "positive_negative_pair",
        inputs = { Score = s, Label = T.tensor({ 1, 0, 1 }, { shape = { 3, 1 } }), QueryID = ints({ 1, 1 }, { 2, 1 }) } }
    end, "positive_negative_pair", "Label", "[3, 1]")
    expect_error(function()
      T.run{ type = "positive_negative_pair", attrs = { column = 1 },
        inputs = { Score = s, Label = T.tensor({ 1, 0 }, { shape = { 2, 1 } }), QueryID = ints({ 1, 1 }, { 2, 1 }) } }
    end, "positive_negative_pair", "column", "Score")
    expect_error(function()
      T.run{ type = "positive_negative_pair",
        inputs = { Score = s, Label = T.tensor({ 1, 0 }, { shape = { 2, 1 } }), QueryID = ints({ 1, 1 }, { 2, 1 }),
                   AccumulatePositivePair = T.tensor({ 1 }, { shape = { 1 } }) } }
    end, "positive_negative_pair", "AccumulateNeutralPair", "1 given")
  end)
end)

-- test_mean_iou.py's compute_mean_iou
local function mean_iou(pred, lbl, k, wrongs, corrects, means)
  local w, c = {}, {}
  for i = 1, k do w[i], c[i] = 0, 0 end
  for _, t in ipairs(wrongs) do for i = 1, k do w[i] = w[i] + t[i] end end
  for _, t in ipairs(corrects) do for i = 1, k do c[i] = c[i] + t[i] end end
  for i = 1, #pred do
    if pred[i] == lbl[i] then c[pred[i] + 1] = c[pred[i] + 1] + 1
    else w[pred[i] + 1] = w[pred[i] + 1] + 1; w[lbl[i] + 1] = w[lbl[i] + 1] + 1 end
  end
  local valid, sum = 0, 0
  for i = 1, k do
    local den = w[i] + c[i]
    if den > 0 then valid = valid + 1; sum = sum + c[i] / den end
  end
  local m = sum / valid
  for _, v in ipairs(means) do m = m + v end
  return m, w, c
end

describe("mean_iou", function()
  it("TestMeanIOUOp: 10 classes, 128 x 128, int32", function()
    local n = 128 * 128
    local pred, lbl = rand_ints(n, 41, 10), rand_ints(n, 42, 10)
    local m, w, c = mean_iou(pred, lbl, 10, {}, {}, {})
    local r = T.check_output{ type = "mean_iou", attrs = { num_classes = 10 },
      inputs = { Predictions = ints(pred, { 128, 128 }, "int32"), Labels = ints(lbl, { 128, 128 }, "int32") },
      expect = { OutMeanIou = { shape = { 1 }, data = { m } }, OutWrong = { shape = { 10 }, data = w },
                 OutCorrect = { shape = { 10 }, data = c } }, atol = 1e-5 }
    assert.are.equal("float32", r.OutMeanIou[1].dtype)
    assert.are.equal("int32", r.OutWrong[1].dtype)
  end)

  it("TestCase1: 5 classes, two of each accumulator, int64", function()
    local n = 100 * 128
    local pred, lbl = rand_ints(n, 43, 5), rand_ints(n, 44, 5)
    local wr = { rand_ints(5, 45, 10), rand_ints(5, 46, 10) }
    local co = { rand_ints(5, 47, 10), rand_ints(5, 48, 10) }
    local mi = { 0.25, 0.625 }
    local m, w, c = mean_iou(pred, lbl, 5, wr, co, mi)
    T.check_output{ type = "mean_iou", attrs = { num_classes = 5 },
      inputs = { Predictions = ints(pred, { 100, 128 }), Labels = ints(lbl, { 100, 128 }),
                 InWrongs = { ints(wr[1], { 5 }, "int32"), ints(wr[2], { 5 }, "int32") },
                 InCorrects = { ints(co[1], { 5 }, "int32"), ints(co[2], { 5 }, "int32") },
                 InMeanIou = { T.tensor({ mi[1] }, { shape = { 1 }, dtype = "float32" }),
                               T.tensor({ mi[2] }, { shape = { 1 }, dtype = "float32" }) } },
      expect = { OutMeanIou = { data = { m } }, OutWrong = { data = w }, OutCorrect = { data = c } }, atol = 1e-5 }
  end)

  it("names the op and the variable for bad shapes and classes", function()
    expect_error(function()
      T.run{ type = "mean_iou", attrs = { num_classes = 3 },
        inputs = { Predictions = ints({ 0, 1 }, { 2 }, "int32"), Labels = ints({ 0, 1, 2 }, { 3 }, "int32") } }
    end, "mean_iou", "Labels")
    expect_error(function()
      T.run{ type = "mean_iou", attrs = { num_classes = 3 },
        inputs = { Predictions = ints({ 0, 1 }, { 2 }, "int32"), Labels = ints({ 0, 1 }, { 2 }, "int32"),
                   InWrongs = { ints({ 0, 0 }, { 2 }, "int32") } } }
    end, "mean_iou", "InWrongs", "[2]", "num_classes = 3")
    expect_error(function()
      T.run{ type = "mean_iou", attrs = { num_classes = 3 },
        inputs = { Predictions = ints({ 0, 5 }, { 2 }, "int32"), Labels = ints({ 0, 1 }, { 2 }, "int32") } }
    end, "mean_iou", "Predictions", "5")
  end)
end)
