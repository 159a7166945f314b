-- layers.auc over several batches (the stat buffers accumulate in place),
-- layers.mean_iou, and the metric classes of oar.metrics (Accuracy, Auc,
-- Precision, Recall, CompositeMetric) against hand-computed values.
local oar = require("oar")
local layers = oar.layers
local metrics = oar.metrics
local expect_error = require("spec.helpers.expect_error")

-- a plain trapezoid over thresholds: ROC points (FPR, TPR) at the buckets
-- from the top down
local function trapezoid(probs, labels, nt)
  local pos, neg = {}, {}
  for b = 0, nt do pos[b], neg[b] = 0, 0 end
  local P, N = 0, 0
  for i, p in ipairs(probs) do
    local b = math.floor(p * nt)
    if labels[i] ~= 0 then pos[b] = pos[b] + 1; P = P + 1 else neg[b] = neg[b] + 1; N = N + 1 end
  end
  if P == 0 or N == 0 then return 0 end
  local area, tp, fp = 0, 0, 0
  for b = nt, 0, -1 do
    local x0, y0 = fp / N, tp / P
    tp, fp = tp + pos[b], fp + neg[b]
    area = area + (fp / N - x0) * (tp / P + y0) / 2
  end
  return area
end

describe("layers.auc", function()
  it("accumulates over batches; batch_auc is the window of slide_steps batches", function()
    local main, startup = oar.Program(), oar.Program()
    local auc, batch_auc, states
    oar.program_guard(main, startup, function()
      local x = layers.data{ name = "p", shape = { 2 }, dtype = "float32" }
      local y = layers.data{ name = "y", shape = { 1 }, dtype = "int64" }
      auc, batch_auc, states = layers.auc{ input = x, label = y, num_thresholds = 8, slide_steps = 2 }
    end)
    assert.equal(4, #states)
    assert.same({ 2 * 9 + 9 + 1 }, states[1].shape)
    assert.same({ 1, 9 }, states[3].shape)
    local scope = oar.Scope()
    local exe = oar.Executor(oar.CPUPlace())
    exe:run(startup, { scope = scope })
    local batches = {
      { { 0.125, 0.75, 0.5, 0.875 }, { 0, 1, 0, 1 } },
      { { 0.25, 0.625, 0.375, 0.0 }, { 1, 0, 0, 1 } },
      { { 0.5, 0.5, 1.0, 0.125 }, { 1, 0, 1, 0 } },
    }
    local all_p, all_l = {}, {}
    local m = metrics.Auc("auc", "ROC", 8)
    for k, b in ipairs(batches) do
      local rows = {}
      for i, p in ipairs(b[1]) do rows[i] = { 1 - p, p } end
      local out = exe:run(main, { scope = scope, fetch_list = { auc, batch_auc, states[3] },
        feed = { p = oar.Tensor(rows, "float32"), y = oar.Tensor({ { b[2][1] }, { b[2][2] }, { b[2][3] }, { b[2][4] } }, "int64") } })
      for i = 1, 4 do all_p[#all_p + 1] = b[1][i]; all_l[#all_l + 1] = b[2][i] end
      -- the window: the last two batches
      local wp, wl = {}, {}
      for i = math.max(1, #all_p - 7), #all_p do wp[#wp + 1] = all_p[i]; wl[#wl + 1] = all_l[i] end
      assert.near(trapezoid(all_p, all_l, 8), out[1]:item(), 1e-12)
      assert.near(trapezoid(wp, wl, 8), out[2]:item(), 1e-12)
      m:update(rows, b[2])
      assert.near(m:eval(), out[1]:item(), 1e-12)
      local st = out[3]:totable()[1]
      local n = 0
      for _, v in ipairs(st) do n = n + v end
      -- the global StatPos counts every positive so far
      local npos = 0
      for _, l in ipairs(all_l) do npos = npos + l end
      assert.equal(npos, n, "batch " .. k)
    end
  end)

  it("refuses unknown keys and bad arguments", function()
    oar.program_guard(oar.Program(), oar.Program(), function()
      local x = layers.data{ name = "p", shape = { 2 }, dtype = "float32" }
      local y = layers.data{ name = "y", shape = { 1 }, dtype = "int64" }
      expect_error(function() layers.auc{ input = x, label = y, thresholds = 3 } end, "auc", "thresholds")
      expect_error(function() layers.auc{ input = x, label = y, curve = "XY" } end, "auc", "curve")
      expect_error(function() layers.auc{ input = x, label = y, slide_steps = -1 } end, "auc", "slide_steps")
    end)
  end)
end)

describe("layers.mean_iou", function()
  it("gives the mean IoU and the counts", function()
    local main, startup = oar.Program(), oar.Program()
    local miou, wrong, correct
    oar.program_guard(main, startup, function()
      local p = layers.data{ name = "p", shape = { 4 }, dtype = "int32" }
      local l = layers.data{ name = "l", shape = { 4 }, dtype = "int32" }
      miou, wrong, correct = layers.mean_iou{ input = p, label = l, num_classes = 3 }
    end)
    local exe = oar.Executor(oar.CPUPlace())
    local out = exe:run(main, { fetch_list = { miou, wrong, correct },
      feed = { p = oar.Tensor({ { 0, 1, 1, 2 } }, "int32"), l = oar.Tensor({ { 0, 1, 2, 2 } }, "int32") } })
    -- class 0: 1/1; class 1: 1/(1+1); class 2: 1/(1+1)
    assert.near((1 + 0.5 + 0.5) / 3, out[1]:item(), 1e-6)
    assert.same({ 0, 1, 1 }, out[2]:totable())
    assert.same({ 1, 1, 1 }, out[3]:totable())
    expect_error(function() layers.mean_iou{ input = 1, label = 2, num_classes = 3 } end, "mean_iou", "input")
  end)
end)

describe("oar.metrics classes", function()
  it("Accuracy: the weighted mean", function()
    local acc = metrics.Accuracy("acc")
    acc:update(0.5, 10):update(1.0, 30)
    assert.near((5 + 30) / 40, acc:eval(), 1e-15)
    acc:reset()
    expect_error(function() acc:eval() end, "Accuracy", "no weight")
  end)

  it("Auc: a trapezoid over thresholds", function()
    local probs = { 0.1, 0.4, 0.35, 0.8, 0.65, 0.2, 0.9, 0.55 }
    local labels = { 0, 0, 1, 1, 1, 0, 1, 0 }
    local rows = {}
    for i, p in ipairs(probs) do rows[i] = { 1 - p, p } end
    local auc = metrics.Auc("auc", "ROC", 100)
    auc:update(rows, labels)
    assert.near(trapezoid(probs, labels, 100), auc:eval(), 1e-12)
    -- distinct buckets: the exact ROC area, 14 of 16 pairs ordered (0.35 is below 0.4 and 0.55)
    assert.near(14 / 16, auc:eval(), 1e-12)
    auc:reset()
    assert.equal(0, auc:eval())
    expect_error(function() auc:update({ { 0, 1.5 } }, { 1 }) end, "Auc", "[0, 1]")
    expect_error(function() metrics.Auc("a", "XY") end, "Auc", "curve")
  end)

  it("Precision and Recall on hand cases; CompositeMetric holds both", function()
    local preds, labels = { 0.9, 0.2, 0.7, 0.6, 0.1, 0.4 }, { 1, 1, 0, 1, 0, 0 }
    -- predicted 1: rows 1, 3, 4 (tp 2, fp 1); labelled 1: rows 1, 2, 4 (tp 2, fn 1)
    local m = metrics.CompositeMetric()
    m:add_metric(metrics.Precision()):add_metric(metrics.Recall())
    m:update(preds, labels)
    local r = m:eval()
    assert.near(2 / 3, r[1], 1e-15)
    assert.near(2 / 3, r[2], 1e-15)
    m:update({ { 1 } }, { { 0 } })   -- one more false positive
    r = m:eval()
    assert.near(2 / 4, r[1], 1e-15)
    assert.near(2 / 3, r[2], 1e-15)
    m:reset()
    assert.same({ 0, 0 }, m:eval())
    expect_error(function() m:add_metric(3) end, "add_metric")
    expect_error(function() m:update({ 1, 0 }, { 1 }) end, "2 predictions but 1 labels")
  end)
end)
