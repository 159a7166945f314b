-- Issue 22's optimizer wrappers and averages (lua/oar/optimizer_wrappers.lua)
-- on a small linear model, loss = mean((x w - t)^2), against plain-Lua
-- references of Fluid's update rules; ModelAverage and EMA apply and
-- restore exactly.
local oar = require("oar")
local layers = oar.layers

local W0 = { 0.5, -0.25 }
local FEEDS = {
  { x = { { 1, 2 }, { -1, 0.5 }, { 0.25, -2 } }, t = { { 1 }, { 0 }, { -1 } } },
  { x = { { 0.5, 1 }, { 2, -1 }, { -0.5, 0.75 } }, t = { { -1 }, { 2 }, { 0.5 } } },
  { x = { { -1, -1 }, { 1, 1 }, { 0, 2 } }, t = { { 0.5 }, { 0.5 }, { 1 } } },
}
local function feed(s) return FEEDS[(s - 1) % #FEEDS + 1] end

-- d loss / d w at w for feed f (float64 here; the program is float32)
local function grad(w, f)
  local g, n = { 0, 0 }, #f.x
  for i, x in ipairs(f.x) do
    local e = x[1] * w[1] + x[2] * w[2] - f.t[i][1]
    g[1], g[2] = g[1] + 2 * e * x[1] / n, g[2] + 2 * e * x[2] / n
  end
  return g
end

local function build(make)
  local main, startup = oar.Program(), oar.Program()
  local r = {}
  oar.program_guard(main, startup, function()
    local x = layers.data{ name = "x", shape = { 2 } }
    local t = layers.data{ name = "t", shape = { 1 } }
    local y = layers.fc{ input = x, size = 1, bias_attr = false, param_attr = oar.ParamAttr{ name = "w",
      initializer = oar.initializer.NumpyArrayInitializer({ { W0[1] }, { W0[2] } }) } }
    r.loss = layers.mean(layers.square(layers.elementwise_sub{ x = y, y = t }))
    make(r)
  end)
  r.scope, r.exe = oar.Scope(), oar.Executor(oar.CPUPlace())
  r.exe:run(startup, { scope = r.scope })
  r.step = function(s) r.exe:run(main, { feed = feed(s), scope = r.scope }) end
  r.w = function()
    local v = r.scope:var("w"):get_tensor():totable()
    return { v[1][1], v[2][1] }
  end
  return r
end

local function near(want, got, tol, what)
  for i = 1, #want do
    assert(math.abs(want[i] - got[i]) <= (tol or 1e-5), string.format("%s[%d]: want %.8g, got %.8g", what or "w", i,
      want[i], got[i]))
  end
end

describe("LookaheadOptimizer", function()
  it("matches the plain-Lua rule: slow = fast after step 1, every k-th step both mix", function()
    local alpha, k, lr = 0.4, 3, 0.1
    local r = build(function(r)
      oar.optimizer.LookaheadOptimizer(oar.optimizer.SGD{ learning_rate = lr }, { alpha = alpha, k = k }):minimize(r.loss)
    end)
    local fast, slow = { W0[1], W0[2] }, nil
    for s = 1, 8 do
      r.step(s)
      local g = grad(fast, feed(s))
      for j = 1, 2 do fast[j] = fast[j] - lr * g[j] end
      if s == 1 then slow = { fast[1], fast[2] }
      elseif s % k == 0 then
        for j = 1, 2 do
          local m = alpha * fast[j] + (1 - alpha) * slow[j]
          fast[j], slow[j] = m, m
        end
      end
      near(fast, r.w(), 1e-5, "step " .. s .. " w")
    end
  end)
end)

describe("GradientMergeOptimizer", function()
  for _, avg in ipairs({ true, false }) do
    it("updates every k_steps with the merged gradient (avg = " .. tostring(avg) .. ")", function()
      local k, lr = 2, 0.1
      local r = build(function(r)
        oar.optimizer.GradientMergeOptimizer(oar.optimizer.SGD{ learning_rate = lr }, { k_steps = k, avg = avg })
          :minimize(r.loss)
      end)
      local w, acc = { W0[1], W0[2] }, { 0, 0 }
      for s = 1, 6 do
        r.step(s)
        local g = grad(w, feed(s))
        acc[1], acc[2] = acc[1] + g[1], acc[2] + g[2]
        if s % k == 0 then
          for j = 1, 2 do w[j] = w[j] - lr * (avg and acc[j] / k or acc[j]) end
          acc = { 0, 0 }
        end
        near(w, r.w(), 1e-5, "step " .. s .. " w")
      end
    end)
  end
end)

describe("GradientMergeOptimizer around Momentum", function()
  it("moves the velocity only on merge steps (the update runs in a conditional block)", function()
    local k, lr, mu = 3, 0.1, 0.9
    local r = build(function(r)
      oar.optimizer.GradientMergeOptimizer(oar.optimizer.Momentum{ learning_rate = lr, momentum = mu },
        { k_steps = k }):minimize(r.loss)
    end)
    local w, acc, v = { W0[1], W0[2] }, { 0, 0 }, { 0, 0 }
    for s = 1, 7 do
      r.step(s)
      local g = grad(w, feed(s))
      acc[1], acc[2] = acc[1] + g[1], acc[2] + g[2]
      if s % k == 0 then
        for j = 1, 2 do
          v[j] = mu * v[j] + acc[j] / k
          w[j] = w[j] - lr * v[j]
        end
        acc = { 0, 0 }
      end
      near(w, r.w(), 1e-5, "step " .. s .. " w")
    end
  end)
end)

describe("ExponentialMovingAverage", function()
  it("apply swaps in the bias-corrected average and restore puts the weights back exactly", function()
    local decay, lr = 0.9, 0.1
    local ema
    local r = build(function(r)
      oar.optimizer.SGD{ learning_rate = lr }:minimize(r.loss)
      ema = oar.optimizer.ExponentialMovingAverage{ decay = decay }
      ema:update()
    end)
    local w, e = { W0[1], W0[2] }, { 0, 0 }
    for s = 1, 3 do
      r.step(s)
      local g = grad(w, feed(s))
      for j = 1, 2 do
        w[j] = w[j] - lr * g[j]
        e[j] = decay * e[j] + (1 - decay) * w[j]
      end
    end
    local trained = r.w()
    near(w, trained)
    local seen
    ema:apply(r.exe, true, function() seen = r.w() end, r.scope)
    local corr = 1 - decay ^ 3
    near({ e[1] / corr, e[2] / corr }, seen, 1e-5, "averaged w")
    local back = r.w()
    assert.are.same(trained, back)   -- restored bit for bit
    ema:apply(r.exe, false, nil, r.scope)
    near({ e[1] / corr, e[2] / corr }, r.w(), 1e-5, "averaged w")
    ema:restore(r.exe, r.scope)
    assert.are.same(trained, r.w())
  end)
end)

describe("ExponentialMovingAverage with thres_steps", function()
  it("uses decay = min(decay, (t + 1) / (t + 10)) and corrects with the last decay", function()
    local decay, lr = 0.9, 0.1
    local ema
    local r = build(function(r)
      oar.optimizer.SGD{ learning_rate = lr }:minimize(r.loss)
      ema = oar.optimizer.ExponentialMovingAverage{ decay = decay, thres_steps = layers.autoincreased_step_counter() }
      ema:update()
    end)
    local w, e, d = { W0[1], W0[2] }, { 0, 0 }, nil
    for s = 1, 3 do
      r.step(s)
      local g = grad(w, feed(s))
      d = math.min(decay, s / (s + 9))   -- the counter reads 0 at the first run
      for j = 1, 2 do
        w[j] = w[j] - lr * g[j]
        e[j] = d * e[j] + (1 - d) * w[j]
      end
    end
    local seen
    ema:apply(r.exe, true, function() seen = r.w() end, r.scope)
    local corr = 1 - d ^ 3
    near({ e[1] / corr, e[2] / corr }, seen, 1e-5, "averaged w")
    near(w, r.w(), 1e-6, "restored w")
  end)
end)

describe("ModelAverage", function()
  it("apply sets (sum_1 + sum_2 + sum_3) / (num + old_num), restore puts the weights back exactly", function()
    local lr, rate, minw, maxw = 0.1, 0.5, 2, 3
    local ma
    local r = build(function(r)
      oar.optimizer.SGD{ learning_rate = lr }:minimize(r.loss)
      ma = oar.optimizer.ModelAverage{ average_window_rate = rate, min_average_window = minw, max_average_window = maxw }
    end)
    local w = { W0[1], W0[2] }
    local s1, s2, s3, na, no, nu = { 0, 0 }, { 0, 0 }, { 0, 0 }, 0, 0, 0
    local closed = false
    for s = 1, 5 do
      r.step(s)
      local g = grad(w, feed(s))
      for j = 1, 2 do w[j] = w[j] - lr * g[j] end
      -- average_accumulates after the update (Fluid's rule)
      nu, na = nu + 1, na + 1
      local n1 = { s1[1] + w[1], s1[2] + w[2] }
      if na >= minw and na >= math.min(maxw, nu * rate) then
        s3 = { s1[1] + s2[1], s1[2] + s2[2] }
        n1, s2 = { 0, 0 }, { 0, 0 }
        no, na = na, 0
        closed = true
      end
      s1 = n1
    end
    assert.is_true(closed)   -- the window closed at least once: sum_3 is in play
    local trained = r.w()
    near(w, trained)
    local seen
    ma:apply(r.exe, true, function() seen = r.w() end, r.scope)
    local n = na + no
    near({ (s1[1] + s2[1] + s3[1]) / n, (s1[2] + s2[2] + s3[2]) / n }, seen, 1e-5, "averaged w")
    assert.are.same(trained, r.w())
  end)
end)
