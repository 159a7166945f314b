-- Backward and optimization: append_backward/gradients, every optimizer's
-- first update against its formula computed in Lua, regularization,
-- clipping, per-parameter learning rates, learning-rate schedules and
-- initializer statistics.
local oar = require("oar")
local A = require("spec.helpers.api")
local layers = oar.layers
local Constant = oar.initializer.Constant

local function errmsg(fn, ...)
  local ok, err = pcall(fn, ...)
  assert.is_false(ok, "expected an error")
  return tostring(err)
end


local function near(expect, got, tol, what)
  tol = tol or 1e-5
  assert.is_true(math.abs(expect - got) <= tol * math.max(1, math.abs(expect)),
    string.format("%s: expected %.8g, got %.8g", what or "value", expect, got))
end

-- The tiny model: pred = x . w (w: 3 weights, all W0), loss = mean(pred).
-- d loss / d w_j = mean over the batch of x_j.
local W0 = 0.5
local X = { { 1, -2, 4 }, { 3, 0.5, -1 } }
local G = {}
for j = 1, 3 do G[j] = (X[1][j] + X[2][j]) / 2 end

local function tiny(make_optimizer, param_attr_extra)
  local main, startup = oar.Program(), oar.Program()
  local loss, ops, pg
  oar.unique_name.guard(function()
    oar.program_guard(main, startup, function()
      local x = layers.data{ name = "x", shape = { 3 } }
      local attr = { name = "w", initializer = Constant{ value = W0 } }
      for k, v in pairs(param_attr_extra or {}) do attr[k] = v end
      local pred = layers.fc{ input = x, size = 1, param_attr = oar.ParamAttr(attr), bias_attr = false }
      loss = layers.mean(pred)
      ops, pg = make_optimizer():minimize(loss)
    end)
  end)
  local exe = oar.Executor(oar.CPUPlace())
  local scope = oar.Scope()
  exe:run(startup, { scope = scope })
  local function step()
    exe:run(main, { feed = { x = X }, scope = scope })
    local t = scope:find_var("w"):get_tensor():totable()
    return { t[1][1], t[2][1], t[3][1] }
  end
  return { main = main, startup = startup, scope = scope, step = step, ops = ops, params_grads = pg, loss = loss }
end

local function check_weights(expect, got, tol)
  for j = 1, 3 do near(expect[j], got[j], tol, "w[" .. j .. "]") end
end

describe("append_backward and gradients", function()
  it("returns {param, grad} pairs for the trainable parameters", function()
    local main, startup = oar.Program(), oar.Program()
    local pairs_
    oar.program_guard(main, startup, function()
      local x = layers.data{ name = "x", shape = { 3 } }
      local h = layers.fc{ input = x, size = 2, param_attr = "w1", bias_attr = "b1" }
      local frozen = layers.fc{ input = h, size = 1, param_attr = { name = "w2", trainable = false }, bias_attr = false }
      pairs_ = oar.append_backward(layers.mean(frozen))
    end)
    local names = {}
    for _, pg in ipairs(pairs_) do
      names[pg[1].name] = pg[2].name
      assert.are.same(pg[1].shape, pg[2].shape)
    end
    assert.are.same({ w1 = "w1@GRAD", b1 = "b1@GRAD" }, names)
  end)

  it("honours parameter_list and no_grad_set", function()
    local main = oar.Program()
    local result
    oar.program_guard(main, oar.Program(), function()
      local x = layers.data{ name = "x", shape = { 3 } }
      local h = layers.fc{ input = x, size = 2, param_attr = "w1", bias_attr = "b1" }
      local loss = layers.mean(h)
      result = oar.append_backward(loss, { parameter_list = { "w1" } })
    end)
    assert.are.equal(1, #result)
    assert.are.equal("w1", result[1][1].name)
    assert.matches("'loss' must be a Variable", errmsg(oar.append_backward, "loss"))
  end)

  it("computes gradients of targets with respect to inputs", function()
    local main, startup = oar.Program(), oar.Program()
    local grads, x
    oar.program_guard(main, startup, function()
      x = layers.data{ name = "x", shape = { 2 } }
      x.stop_gradient = false
      local y = layers.mean(x * x)
      grads = oar.gradients(y, x)
    end)
    assert.are.equal(1, #grads)
    local exe = oar.Executor(oar.CPUPlace())
    local out = exe:run(main, { feed = { x = { { 1, 2 }, { -3, 4 } } }, fetch_list = { grads[1] }, scope = oar.Scope() })
    -- d mean(x^2) / dx = 2x / 4
    local got = out[1]:totable()
    near(0.5, got[1][1]); near(1, got[1][2]); near(-1.5, got[2][1]); near(2, got[2][2])
  end)
end)

describe("optimizers: the first update matches the formula", function()
  local lr = 0.1

  it("SGD: w - lr g", function()
    local m = tiny(function() return oar.optimizer.SGD{ learning_rate = lr } end)
    local w = m.step()
    check_weights({ W0 - lr * G[1], W0 - lr * G[2], W0 - lr * G[3] }, w)
    -- the update op is tagged Optimize with its param and grad
    local op = m.ops[1]
    assert.are.equal("sgd", op.type)
    assert.are.equal(2, op:attr("op_role"))
    assert.are.same({ "w", "w@GRAD" }, op:attr("op_role_var"))
    assert.are.equal("w", m.params_grads[1][1].name)
    local w2 = m.step()
    check_weights({ W0 - 2 * lr * G[1], W0 - 2 * lr * G[2], W0 - 2 * lr * G[3] }, w2)
  end)

  it("Momentum: velocity g, then w - lr v; Nesterov w - lr (g + mu v)", function()
    local mu = 0.9
    local m = tiny(function() return oar.optimizer.Momentum{ learning_rate = lr, momentum = mu } end)
    local w1 = m.step()
    check_weights({ W0 - lr * G[1], W0 - lr * G[2], W0 - lr * G[3] }, w1)
    local w2 = m.step()   -- v2 = mu g + g
    local e = {}
    for j = 1, 3 do e[j] = w1[j] - lr * (mu * G[j] + G[j]) end
    check_weights(e, w2)
    assert.is_not_nil(m.scope:find_var("w_velocity_0"))
    local n = tiny(function() return oar.optimizer.Momentum{ learning_rate = lr, momentum = mu, use_nesterov = true } end)
    local wn = n.step()
    for j = 1, 3 do e[j] = W0 - lr * (G[j] + mu * G[j]) end
    check_weights(e, wn)
  end)

  it("Adam: bias-corrected moments", function()
    local b1, b2, eps = 0.9, 0.999, 1e-8
    local m = tiny(function() return oar.optimizer.Adam{ learning_rate = lr, beta1 = b1, beta2 = b2, epsilon = eps } end)
    local w = m.step()
    local e = {}
    for j = 1, 3 do
      local m1 = (1 - b1) * G[j]
      local m2 = (1 - b2) * G[j] ^ 2
      local lr_t = lr * math.sqrt(1 - b2) / (1 - b1)
      e[j] = W0 - lr_t * m1 / (math.sqrt(m2) + eps * math.sqrt(1 - b2))
    end
    check_weights(e, w, 1e-4)
    -- the beta powers advanced once
    near(b1 * b1, m.scope:find_var("w_beta1_pow_acc_0"):get_tensor():get(1), 1e-6, "beta1_pow")
    near(b2 * b2, m.scope:find_var("w_beta2_pow_acc_0"):get_tensor():get(1), 1e-6, "beta2_pow")
  end)

  it("Adagrad: w - lr g / (sqrt(g^2) + eps)", function()
    local eps = 1e-6
    local m = tiny(function() return oar.optimizer.Adagrad{ learning_rate = lr, epsilon = eps } end)
    local w = m.step()
    local e = {}
    for j = 1, 3 do e[j] = W0 - lr * G[j] / (math.sqrt(G[j] ^ 2) + eps) end
    check_weights(e, w)
  end)

  it("RMSProp: mean square then momentum step", function()
    local rho, eps, mom = 0.9, 1e-6, 0.5
    local m = tiny(function()
      return oar.optimizer.RMSProp{ learning_rate = lr, rho = rho, epsilon = eps, momentum = mom }
    end)
    local w1 = m.step()
    local e, v, ms = {}, {}, {}
    for j = 1, 3 do
      ms[j] = (1 - rho) * G[j] ^ 2
      v[j] = lr * G[j] / math.sqrt(ms[j] + eps)
      e[j] = W0 - v[j]
    end
    check_weights(e, w1, 1e-4)
    local w2 = m.step()
    for j = 1, 3 do
      ms[j] = rho * ms[j] + (1 - rho) * G[j] ^ 2
      v[j] = mom * v[j] + lr * G[j] / math.sqrt(ms[j] + eps)
      e[j] = w1[j] - v[j]
    end
    check_weights(e, w2, 1e-4)
  end)

  it("Adamax: infinity norm", function()
    local b1, b2, eps = 0.9, 0.999, 1e-8
    local m = tiny(function() return oar.optimizer.Adamax{ learning_rate = lr, beta1 = b1, beta2 = b2, epsilon = eps } end)
    local w = m.step()
    local e = {}
    for j = 1, 3 do
      local mo = (1 - b1) * G[j]
      local u = math.max(eps, math.abs(G[j]))
      e[j] = W0 - lr / (1 - b1) * mo / u
    end
    check_weights(e, w, 1e-4)
    near(b1 * b1, m.scope:find_var("w_beta1_pow_acc_0"):get_tensor():get(1), 1e-6, "beta1_pow")
  end)

  it("Adadelta: no learning rate, ratio of running averages", function()
    local rho, eps = 0.95, 1e-6
    local m = tiny(function() return oar.optimizer.Adadelta{ learning_rate = 1.0, rho = rho, epsilon = eps } end)
    local w = m.step()
    local e = {}
    for j = 1, 3 do
      local eg2 = (1 - rho) * G[j] ^ 2
      local dx = -math.sqrt(eps / (eg2 + eps)) * G[j]
      e[j] = W0 + dx
    end
    check_weights(e, w, 1e-4)
  end)

  it("DecayedAdagrad: decayed squared sum", function()
    local decay, eps = 0.95, 1e-6
    local m = tiny(function() return oar.optimizer.DecayedAdagrad{ learning_rate = lr, decay = decay, epsilon = eps } end)
    local w = m.step()
    local e = {}
    for j = 1, 3 do e[j] = W0 - lr * G[j] / (math.sqrt((1 - decay) * G[j] ^ 2) + eps) end
    check_weights(e, w, 1e-4)
  end)

  it("checks optimizer arguments", function()
    assert.matches("SGD: 'learning_rate' is required", errmsg(oar.optimizer.SGD, {}))
    assert.matches("Momentum: 'momentum' must be a number", errmsg(oar.optimizer.Momentum,
      { learning_rate = 0.1, momentum = "fast" }))
    assert.matches("regularization", errmsg(oar.optimizer.SGD, { learning_rate = 0.1, regularization = 3 }))
    assert.matches("grad_clip", errmsg(oar.optimizer.SGD, { learning_rate = 0.1, grad_clip = {} }))
  end)
end)

describe("regularization, clipping and per-parameter learning rates", function()
  local lr = 0.1

  it("L2Decay adds coeff * w to the gradient", function()
    local c = 0.2
    local m = tiny(function() return oar.optimizer.SGD{ learning_rate = lr, regularization = oar.regularizer.L2Decay(c) } end)
    local w = m.step()
    check_weights({ W0 - lr * (G[1] + c * W0), W0 - lr * (G[2] + c * W0), W0 - lr * (G[3] + c * W0) }, w)
  end)

  it("a parameter's own regularizer wins over the optimizer's", function()
    local m = tiny(function()
      return oar.optimizer.SGD{ learning_rate = lr, regularization = oar.regularizer.L2Decay(5) }
    end, { regularizer = oar.regularizer.L2Decay(0.1) })
    local w = m.step()
    check_weights({ W0 - lr * (G[1] + 0.1 * W0), W0 - lr * (G[2] + 0.1 * W0), W0 - lr * (G[3] + 0.1 * W0) }, w)
  end)

  it("L1Decay adds coeff * sign(w)", function()
    local c = 0.3
    local m = tiny(function() return oar.optimizer.SGD{ learning_rate = lr, regularization = oar.regularizer.L1Decay(c) } end)
    local w = m.step()
    check_weights({ W0 - lr * (G[1] + c), W0 - lr * (G[2] + c), W0 - lr * (G[3] + c) }, w)
  end)

  it("clips by value", function()
    local m = tiny(function()
      return oar.optimizer.SGD{ learning_rate = lr, grad_clip = oar.clip.GradientClipByValue{ max = 0.5 } }
    end)
    local w = m.step()
    local e = {}
    for j = 1, 3 do e[j] = W0 - lr * math.max(-0.5, math.min(0.5, G[j])) end
    check_weights(e, w)
  end)

  it("clips by each gradient's norm", function()
    local clip_norm = 0.5
    local m = tiny(function()
      return oar.optimizer.SGD{ learning_rate = lr, grad_clip = oar.clip.GradientClipByNorm{ clip_norm = clip_norm } }
    end)
    local w = m.step()
    local norm = math.sqrt(G[1] ^ 2 + G[2] ^ 2 + G[3] ^ 2)
    local f = norm > clip_norm and clip_norm / norm or 1
    check_weights({ W0 - lr * f * G[1], W0 - lr * f * G[2], W0 - lr * f * G[3] }, w)
  end)

  it("clips by the global norm", function()
    local clip_norm = 0.5
    local m = tiny(function()
      return oar.optimizer.SGD{ learning_rate = lr, grad_clip = oar.clip.GradientClipByGlobalNorm{ clip_norm = clip_norm } }
    end)
    local w = m.step()
    local norm = math.sqrt(G[1] ^ 2 + G[2] ^ 2 + G[3] ^ 2)
    local f = clip_norm / math.max(norm, clip_norm)
    check_weights({ W0 - lr * f * G[1], W0 - lr * f * G[2], W0 - lr * f * G[3] }, w)
  end)

  it("scales the learning rate by ParamAttr.learning_rate", function()
    local m = tiny(function() return oar.optimizer.SGD{ learning_rate = lr } end, { learning_rate = 0.25 })
    local w = m.step()
    check_weights({ W0 - lr * 0.25 * G[1], W0 - lr * 0.25 * G[2], W0 - lr * 0.25 * G[3] }, w)
  end)

  it("leaves non-trainable parameters alone", function()
    local m = tiny(function() return oar.optimizer.SGD{ learning_rate = lr } end, { trainable = false })
    local ok = pcall(m.step)
    if ok then
      check_weights({ W0, W0, W0 }, m.step())
    end
    assert.are.equal(0, #m.ops)
  end)
end)

describe("learning-rate schedules", function()
  -- runs the schedule `steps` times and returns the fetched values
  local function values(make, steps)
    local main, startup = oar.Program(), oar.Program()
    local lr
    oar.program_guard(main, startup, function() lr = make() end)
    local exe = oar.Executor(oar.CPUPlace())
    local scope = oar.Scope()
    exe:run(startup, { scope = scope })
    local out = {}
    for i = 1, steps do out[i] = exe:run(main, { fetch_list = { lr }, scope = scope })[1]:get(1) end
    return out, main
  end

  local function check_sequence(got, f)
    for i, v in ipairs(got) do near(f(i - 1), v, 1e-5, "step " .. (i - 1)) end
  end

  it("exponential_decay", function()
    local got, main = values(function() return layers.exponential_decay(0.5, 3, 0.8) end, 7)
    check_sequence(got, function(s) return 0.5 * 0.8 ^ (s / 3) end)
    -- the schedule is LRSched work that clone(for_test) drops
    for _, op in ipairs(main:global_block():ops()) do assert.are.equal(16, op:attr("op_role")) end
    assert.are.equal("increment", main:global_block():ops()[1].type)
    assert.is_true(main:global_block():var("@LR_DECAY_COUNTER@").persistable)
  end)

  it("exponential_decay with staircase", function()
    local got = values(function() return layers.exponential_decay(0.5, 3, 0.8, true) end, 7)
    check_sequence(got, function(s) return 0.5 * 0.8 ^ math.floor(s / 3) end)
  end)

  it("piecewise_decay", function()
    local got = values(function() return layers.piecewise_decay({ 2, 5 }, { 1.0, 0.5, 0.1 }) end, 8)
    check_sequence(got, function(s) if s < 2 then return 1.0 elseif s < 5 then return 0.5 end return 0.1 end)
    assert.matches("one more entry", errmsg(layers.piecewise_decay, { 1 }, { 1 }))
  end)

  it("polynomial_decay", function()
    local got = values(function() return layers.polynomial_decay(1.0, 4, 0.1, 2.0) end, 7)
    check_sequence(got, function(s)
      s = math.min(s, 4)
      return (1.0 - 0.1) * (1 - s / 4) ^ 2 + 0.1
    end)
  end)

  it("polynomial_decay with cycle", function()
    local got = values(function() return layers.polynomial_decay(1.0, 3, 0.0, 1.0, true) end, 8)
    check_sequence(got, function(s)
      local horizon = 3 * math.max(1, math.ceil(s / 3))
      return 1.0 * (1 - s / horizon)
    end)
  end)

  it("cosine_decay", function()
    local got = values(function() return layers.cosine_decay(0.4, 2, 5) end, 8)
    check_sequence(got, function(s) return 0.4 * 0.5 * (math.cos(math.floor(s / 2) * math.pi / 5) + 1) end)
  end)

  it("noam_decay", function()
    local got = values(function() return layers.noam_decay(64, 3) end, 6)
    check_sequence(got, function(s)
      local step = s + 1
      return 64 ^ -0.5 * math.min(step ^ -0.5, step * 3 ^ -1.5)
    end)
  end)

  it("drives an optimizer", function()
    local m = tiny(function()
      return oar.optimizer.SGD{ learning_rate = layers.piecewise_decay({ 1 }, { 0.1, 0.01 }) }
    end)
    local w1 = m.step()
    check_weights({ W0 - 0.1 * G[1], W0 - 0.1 * G[2], W0 - 0.1 * G[3] }, w1)
    local w2 = m.step()
    check_weights({ w1[1] - 0.01 * G[1], w1[2] - 0.01 * G[2], w1[3] - 0.01 * G[3] }, w2)
  end)
end)

describe("initializers", function()
  local function init_values(init, shape)
    local main, startup = oar.Program(), oar.Program()
    oar.program_guard(main, startup, function()
      layers.create_parameter{ shape = shape, dtype = "float32", attr = oar.ParamAttr{ name = "p", initializer = init } }
    end)
    local scope = oar.Scope()
    oar.Executor(oar.CPUPlace()):run(startup, { scope = scope })
    local t = scope:find_var("p"):get_tensor()
    local p = t:data()
    local vals = {}
    for i = 0, t:numel() - 1 do vals[i + 1] = p[i] end
    return vals
  end

  local function stats(v)
    local m, s2, lo, hi = 0, 0, math.huge, -math.huge
    for _, x in ipairs(v) do m = m + x; lo = math.min(lo, x); hi = math.max(hi, x) end
    m = m / #v
    for _, x in ipairs(v) do s2 = s2 + (x - m) ^ 2 end
    return m, math.sqrt(s2 / #v), lo, hi
  end

  it("Constant is exact", function()
    for _, x in ipairs(init_values(Constant{ value = 0.25 }, { 3, 4 })) do assert.are.equal(0.25, x) end
  end)

  it("Uniform has the right range, mean and spread", function()
    local m, s, lo, hi = stats(init_values(oar.initializer.Uniform{ low = -2, high = 4 }, { 100, 100 }))
    assert.is_true(lo >= -2 and hi <= 4)
    near(1, m, 0.05, "mean")
    near(6 / math.sqrt(12), s, 0.03, "std")
  end)

  it("Normal has the right mean and spread", function()
    local m, s = stats(init_values(oar.initializer.Normal{ loc = 1, scale = 2 }, { 100, 100 }))
    near(1, m, 0.06, "mean")
    near(2, s, 0.03, "std")
  end)

  it("TruncatedNormal stays within two deviations", function()
    local m, s, lo, hi = stats(init_values(oar.initializer.TruncatedNormal{ loc = 0, scale = 1 }, { 100, 100 }))
    assert.is_true(lo >= -2 and hi <= 2)
    near(0, m, 0.03, "mean")
    near(0.8796, s, 0.03, "std")   -- std of a standard normal cut at +-2
  end)

  it("Xavier and MSRA use the fans of the shape", function()
    local limit = math.sqrt(6 / (100 + 50))
    local m, s, lo, hi = stats(init_values(oar.initializer.Xavier(), { 100, 50 }))
    assert.is_true(lo >= -limit and hi <= limit)
    near(0, m, 0.01, "xavier mean")
    near(limit / math.sqrt(3), s, 0.03, "xavier std")
    local _, sn = stats(init_values(oar.initializer.Xavier{ uniform = false }, { 100, 50 }))
    near(math.sqrt(2 / 150), sn, 0.03, "xavier normal std")
    -- conv filter [out=8, in=4, 5, 5]: fan_in = 4 * 25
    local lim2 = math.sqrt(6 / 100)
    local _, s2, lo2, hi2 = stats(init_values(oar.initializer.MSRA(), { 8, 4, 5, 5 }))
    assert.is_true(lo2 >= -lim2 and hi2 <= lim2)
    near(lim2 / math.sqrt(3), s2, 0.05, "msra std")
    local fi, fo = oar.initializer.compute_fans({ 8, 4, 5, 5 })
    assert.are.equal(100, fi)
    assert.are.equal(200, fo)
  end)

  it("checks initializer arguments", function()
    assert.matches("'low' must not exceed 'high'", errmsg(oar.initializer.Uniform, { low = 2, high = 1 }))
    assert.matches("'loc' must be a number", errmsg(oar.initializer.Normal, { loc = "zero" }))
  end)
end)
