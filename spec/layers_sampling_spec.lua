-- layers.nce, layers.hsigmoid and layers.sampled_softmax_with_cross_entropy:
-- a small classifier trained through each (its cost falls, and the learned
-- weights classify the rows), the sparse-gradient variants, nce's alias
-- tables for custom_dist, and argument errors.
local oar = require("oar")
local layers = oar.layers
local R = require("spec.helpers.random")
local expect_error = require("spec.helpers.expect_error")
local sampling = require("oar.layers.sampling")

local N, D, K = 48, 6, 8

-- rows x and their class: the argmax of a fixed projection
local function dataset(seed)
  local x, y = R.symmetric(N * D, seed), {}
  local proj = R.symmetric(D * K, seed + 1)
  local rows, labels = {}, {}
  for i = 0, N - 1 do
    local best, arg = -math.huge, 0
    for c = 0, K - 1 do
      local s = 0
      for e = 0, D - 1 do s = s + x[i * D + e + 1] * proj[e * K + c + 1] end
      if s > best then best, arg = s, c end
    end
    y[i + 1] = arg
    local row = {}
    for e = 1, D do row[e] = x[i * D + e] end
    rows[i + 1], labels[i + 1] = row, { arg }
  end
  return oar.Tensor(rows, "float32"), oar.Tensor(labels, "int64"), y
end

-- builds the model with `loss_of(x, y)`, trains `steps` SGD steps; returns
-- the mean cost of the first and last 10 steps, the scope and the program
local function train(loss_of, steps, lr)
  local main, startup = oar.Program(), oar.Program()
  local cost
  oar.program_guard(main, startup, function()
    local x = layers.data{ name = "x", shape = { D }, dtype = "float32" }
    local y = layers.data{ name = "y", shape = { 1 }, dtype = "int64" }
    cost = layers.mean(loss_of(x, y))
    oar.optimizer.SGD{ learning_rate = lr }:minimize(cost)
  end)
  local scope, exe = oar.Scope(), oar.Executor(oar.CPUPlace())
  exe:run(startup, { scope = scope })
  local xs, ys = dataset(5)
  local first, last = 0, 0
  for step = 1, steps do
    local c = exe:run(main, { feed = { x = xs, y = ys }, fetch_list = { cost }, scope = scope })[1]:item()
    if step <= 10 then first = first + c / 10 end
    if step > steps - 10 then last = last + c / 10 end
  end
  return first, last, scope, main
end

-- the share of rows whose highest score W x + b is their class
local function accuracy(scope, wname, bname)
  local w = scope:find_var(wname):get_tensor():totable()
  local b = bname and scope:find_var(bname):get_tensor():totable()
  local _, _, y = dataset(5)
  local x = R.symmetric(N * D, 5)
  local right = 0
  for i = 0, N - 1 do
    local best, arg = -math.huge, -1
    for c = 0, K - 1 do
      local s = b and b[c + 1][1] or 0
      for e = 0, D - 1 do s = s + x[i * D + e + 1] * w[c + 1][e + 1] end
      if s > best then best, arg = s, c end
    end
    if arg == y[i + 1] then right = right + 1 end
  end
  return right / N
end

describe("layers.nce", function()
  for _, sampler in ipairs({ "uniform", "log_uniform" }) do
    it("trains a classifier with the " .. sampler .. " sampler", function()
      local first, last, scope = train(function(x, y)
        return layers.nce{ input = x, label = y, num_total_classes = K, num_neg_samples = 4, sampler = sampler,
                           param_attr = "nce_w", bias_attr = "nce_b" }
      end, 300, 0.5)
      assert.is_true(last < 0.6 * first, ("cost %g -> %g"):format(first, last))
      -- the log-uniform sampler seldom draws the high classes (never K - 1),
      -- so only the uniform one learns them all
      if sampler == "uniform" then
        local acc = accuracy(scope, "nce_w", "nce_b")
        assert.is_true(acc > 0.6, "accuracy " .. acc)
      end
    end)
  end

  it("custom_dist with is_sparse and a sample weight", function()
    local p = { 0.2, 0.1, 0.1, 0.15, 0.05, 0.1, 0.2, 0.1 }
    local first, last, _, main = train(function(x, y)
      local sw = layers.fill_constant_batch_size_like{ input = x, shape = { -1, 1 }, dtype = "float32", value = 2 }
      return layers.nce{ input = x, label = y, num_total_classes = K, num_neg_samples = 3, sampler = "custom_dist",
                         custom_dist = p, is_sparse = true, sample_weight = sw, seed = 0 }
    end, 200, 0.2)
    assert.is_true(last < 0.7 * first, ("cost %g -> %g"):format(first, last))
    local found = false
    for _, op in ipairs(main:global_block():ops()) do
      if op.type == "nce_grad" then
        found = true
        local g = main:global_block():var(op:output("Weight@GRAD")[1])
        assert.are.equal("selected_rows", g.type)
      end
    end
    assert.is_true(found)
  end)

  it("custom_dist's alias tables reproduce the distribution", function()
    for _, p in ipairs({ { 0.5, 0.25, 0.125, 0.125 }, { 0.1, 0.2, 0.3, 0.4, 0 }, { 0.25, 0.25, 0.25, 0.25 } }) do
      local keep, alias = sampling._alias_tables(p)
      local n, got = #p, {}
      for i = 1, n do got[i] = keep[i] / n end
      for i = 1, n do
        if alias[i] >= 0 then got[alias[i] + 1] = got[alias[i] + 1] + (1 - keep[i]) / n end
      end
      for i = 1, n do assert.near(p[i], got[i], 1e-12) end
    end
  end)
end)

describe("layers.hsigmoid", function()
  it("the default tree trains a classifier", function()
    local first, last = train(function(x, y)
      return layers.hsigmoid{ input = x, label = y, num_classes = K }
    end, 200, 0.5)
    assert.is_true(last < 0.5 * first, ("cost %g -> %g"):format(first, last))
  end)

  it("a custom tree with is_sparse: the default tree's paths given as PathTable / PathCode", function()
    -- the default tree over K = 8 classes: leaf c + 8, paths of 3 steps
    local tbl, code = {}, {}
    local _, _, y = dataset(5)
    for i = 1, N do
      local v, t, cd = y[i] + K, {}, {}
      for j = 1, 3 do t[j] = math.floor(v / 2 ^ j) - 1; cd[j] = math.floor(v / 2 ^ (j - 1)) % 2 end
      tbl[i], code[i] = t, cd
    end
    local main, startup = oar.Program(), oar.Program()
    local cost
    oar.program_guard(main, startup, function()
      local x = layers.data{ name = "x", shape = { D }, dtype = "float32" }
      local lbl = layers.data{ name = "y", shape = { 1 }, dtype = "int64" }
      local pt = layers.data{ name = "pt", shape = { 3 }, dtype = "int64" }
      local pc = layers.data{ name = "pc", shape = { 3 }, dtype = "int64" }
      cost = layers.mean(layers.hsigmoid{ input = x, label = lbl, num_classes = K - 1, path_table = pt,
                                          path_code = pc, is_custom = true, is_sparse = true })
      oar.optimizer.SGD{ learning_rate = 0.5 }:minimize(cost)
    end)
    local scope, exe = oar.Scope(), oar.Executor(oar.CPUPlace())
    exe:run(startup, { scope = scope })
    local xs, ys = dataset(5)
    local feed = { x = xs, y = ys, pt = oar.Tensor(tbl, "int64"), pc = oar.Tensor(code, "int64") }
    local first, last
    for step = 1, 150 do
      local c = exe:run(main, { feed = feed, fetch_list = { cost }, scope = scope })[1]:item()
      first = first or c
      last = c
    end
    assert.is_true(last < 0.5 * first, ("cost %g -> %g"):format(first, last))
  end)
end)

describe("layers.sampled_softmax_with_cross_entropy", function()
  it("trains a linear classifier through sampled softmax", function()
    local first, last, scope = train(function(x, y)
      local logits = layers.fc{ input = x, size = K, param_attr = "ss_w", bias_attr = "ss_b" }
      return layers.sampled_softmax_with_cross_entropy{ logits = logits, label = y, num_samples = 4 }
    end, 300, 0.5)
    assert.is_true(last < 0.6 * first, ("loss %g -> %g"):format(first, last))
    -- fc's weight is [D, K]: transpose for accuracy()
    local w = scope:find_var("ss_w"):get_tensor():totable()
    local b = scope:find_var("ss_b"):get_tensor():totable()
    local x = R.symmetric(N * D, 5)
    local _, _, y = dataset(5)
    local right = 0
    for i = 0, N - 1 do
      local best, arg = -math.huge, -1
      for c = 0, K - 1 do
        local s = b[c + 1]
        for e = 0, D - 1 do s = s + x[i * D + e + 1] * w[e + 1][c + 1] end
        if s > best then best, arg = s, c end
      end
      if arg == y[i + 1] then right = right + 1 end
    end
    assert.is_true(right / N > 0.6, "accuracy " .. right / N)
  end)

  it("num_true = 2: the mean of the two true classes' cross entropies, as plain Lua computes it", function()
    local main, startup = oar.Program(), oar.Program()
    local loss
    oar.program_guard(main, startup, function()
      local z = layers.data{ name = "z", shape = { 5 }, dtype = "float64" }
      local y = layers.data{ name = "y", shape = { 2 }, dtype = "int64" }
      local s = layers.data{ name = "s", shape = { 4 }, dtype = "int64" }
      local p = layers.data{ name = "p", shape = { 4 }, dtype = "float64" }
      loss = layers.sampled_softmax_with_cross_entropy{ logits = z, label = y, num_samples = 2, num_true = 2,
        use_customized_samples = true, customized_samples = s, customized_probabilities = p }
    end)
    local exe = oar.Executor(oar.CPUPlace())
    local z = { { 0.5, -1, 2, 0.25, 1 }, { -0.5, 1.5, 0, 1, -2 } }
    local samples = { { 1, 3, 0, 4 }, { 2, 0, 1, 4 } }
    local probs = { { 0.5, 0.25, 0.2, 0.4 }, { 0.1, 0.3, 0.6, 0.5 } }
    local out = exe:run(main, { feed = { z = oar.Tensor(z, "float64"),
      y = oar.Tensor({ { 1, 3 }, { 2, 0 } }, "int64"), s = oar.Tensor(samples, "int64"),
      p = oar.Tensor(probs, "float64") }, fetch_list = { loss } })[1]:totable()
    for i = 1, 2 do
      local l, sum = {}, 0
      for j = 1, 4 do l[j] = z[i][samples[i][j] + 1] - math.log(probs[i][j]); sum = sum + math.exp(l[j]) end
      local want = -(l[1] + l[2] - 2 * math.log(sum)) / 2
      assert.near(want, out[i][1], 1e-9)
    end
  end)
end)

describe("layers.center_loss", function()
  it("moves the centers in place toward their rows; the loss falls without any optimizer", function()
    local main, startup = oar.Program(), oar.Program()
    local loss
    oar.program_guard(main, startup, function()
      local x = layers.data{ name = "x", shape = { D }, dtype = "float32" }
      local y = layers.data{ name = "y", shape = { 1 }, dtype = "int64" }
      loss = layers.mean(layers.center_loss{ input = x, label = y, num_classes = K, alpha = 0.5,
                                             param_attr = "centers" })
    end)
    local scope, exe = oar.Scope(), oar.Executor(oar.CPUPlace())
    exe:run(startup, { scope = scope })
    local xs, ys, y = dataset(5)
    local before = scope:find_var("centers"):get_tensor():totable()
    local first = exe:run(main, { feed = { x = xs, y = ys }, fetch_list = { loss }, scope = scope })[1]:item()
    -- one update by hand: center += 0.5 / (1 + n_c) * sum of (x - center)
    local after = scope:find_var("centers"):get_tensor():totable()
    local x = R.symmetric(N * D, 5)
    for c = 0, K - 1 do
      local n, acc = 0, {}
      for e = 1, D do acc[e] = 0 end
      for i = 0, N - 1 do
        if y[i + 1] == c then
          n = n + 1
          for e = 1, D do acc[e] = acc[e] + x[i * D + e] - before[c + 1][e] end
        end
      end
      for e = 1, D do assert.near(before[c + 1][e] + 0.5 / (1 + n) * acc[e], after[c + 1][e], 1e-5) end
    end
    local last
    for _ = 1, 30 do
      last = exe:run(main, { feed = { x = xs, y = ys }, fetch_list = { loss }, scope = scope })[1]:item()
    end
    assert.is_true(last < 0.7 * first, ("loss %g -> %g"):format(first, last))
  end)
end)

describe("layers.teacher_student_sigmoid_loss", function()
  it("trains a logistic regression on clicks and teacher scores", function()
    local first, last = train(function(x, y)
      -- label: click (class >= K / 2) plus a teacher's score from the class
      local click = layers.cast(layers.greater_equal(layers.cast(y, "float32"),
        layers.fill_constant{ shape = { 1 }, dtype = "float32", value = K / 2 }), "float32")
      local q = layers.scale{ x = layers.cast(y, "float32"), scale = 0.1 }
      local logit = layers.fc{ input = x, size = 1 }
      return layers.teacher_student_sigmoid_loss{ input = logit, label = click + q }
    end, 200, 0.5)
    assert.is_true(last < 0.9 * first, ("loss %g -> %g"):format(first, last))
  end)
end)

describe("layers.sampling errors", function()
  local function build(f)
    oar.program_guard(oar.Program(), oar.Program(), function()
      local x = layers.data{ name = "x", shape = { D }, dtype = "float32" }
      local y = layers.data{ name = "y", shape = { 1 }, dtype = "int64" }
      f(x, y)
    end)
  end
  it("nce: an unknown sampler, custom_dist of the wrong length", function()
    expect_error(function() build(function(x, y)
      layers.nce{ input = x, label = y, num_total_classes = K, sampler = "zipf" } end) end, "nce", "sampler")
    expect_error(function() build(function(x, y)
      layers.nce{ input = x, label = y, num_total_classes = K, sampler = "custom_dist", custom_dist = { 1 } } end) end,
      "nce", "custom_dist")
  end)
  it("hsigmoid: paths without is_custom, a custom tree without paths, num_classes < 2", function()
    expect_error(function() build(function(x, y)
      layers.hsigmoid{ input = x, label = y, num_classes = K, path_table = y, path_code = y } end) end, "is_custom")
    expect_error(function() build(function(x, y)
      layers.hsigmoid{ input = x, label = y, num_classes = K, is_custom = true } end) end, "path_table")
    expect_error(function() build(function(x, y)
      layers.hsigmoid{ input = x, label = y, num_classes = 1 } end) end, "num_classes")
  end)
  it("sampled_softmax_with_cross_entropy: num_samples is required", function()
    expect_error(function() build(function(x, y)
      layers.sampled_softmax_with_cross_entropy{ logits = x, label = y } end) end, "num_samples")
  end)
end)
