-- The API contract (docs/api.md): backward, optimizers, learning-rate schedules, initializers. One of the
-- api_contract_*_spec.lua files (one per API area): every table row, bullet,
-- keyword default and code-sample call has at least one assertion, with
-- expected values worked out by hand in the comments.
local oar = require("oar")
local A = require("spec.helpers.api")
local layers = oar.layers

local THIS_FILE = "api_contract_training_spec.lua"

-- ---- helpers (spec/helpers/api.lua) ---------------------------------------------
local errmsg, eval, near, op_types, contains = A.errmsg, A.eval, A.near, A.op_types, A.contains
local build, run = A.build, A.run
local Constant, const_attr, X23 = oar.initializer.Constant, A.const_attr, A.X23


-- ==== Backward and optimization =======================================================
-- loss = mean(x . w + b) over the batch: d/dw = the mean row of x, d/db = 1
describe("API: backward", function()
  it("append_backward(loss, {parameter_list=, no_grad_set=}) -> {param, grad} pairs", function()
    local pg_all, pg_w, pg_nob
    local main, startup, loss = build(function()
      local x = layers.data{ name = "x", shape = { 2 } }
      local h = layers.fc{ input = x, size = 1, param_attr = oar.ParamAttr{ name = "W", initializer = Constant{ value = 1 } },
                           bias_attr = oar.ParamAttr{ name = "B" } }
      return layers.mean(h)
    end)
    oar.program_guard(main, startup, function()
      pg_all = oar.append_backward(loss)
    end)
    assert.are.equal(2, #pg_all)
    local by_name = {}
    for _, pg in ipairs(pg_all) do
      assert.is_true(oar.is_parameter(pg[1]))
      assert.is_true(oar.is_variable(pg[2]))
      by_name[pg[1].name] = pg[2]
    end
    assert.truthy(by_name.W and by_name.B)
    local out = run(main, startup, { x = { { 1, 2 }, { 3, 4 } } }, { by_name.W, by_name.B })
    near({ { 2 }, { 3 } }, out[1]:totable())
    near({ 1 }, out[2]:totable())
    -- parameter_list and no_grad_set, on fresh copies of the forward program
    local m2, s2, l2 = build(function()
      local x = layers.data{ name = "x", shape = { 2 } }
      return layers.mean(layers.fc{ input = x, size = 1, param_attr = "W", bias_attr = "B" })
    end)
    oar.program_guard(m2, s2, function() pg_w = oar.append_backward(l2, { parameter_list = { "W" } }) end)
    assert.are.equal(1, #pg_w)
    assert.are.equal("W", pg_w[1][1].name)
    local m3, s3, l3 = build(function()
      local x = layers.data{ name = "x", shape = { 2 } }
      return layers.mean(layers.fc{ input = x, size = 1, param_attr = "W", bias_attr = "B" })
    end)
    oar.program_guard(m3, s3, function()
      pg_nob = oar.append_backward(l3, { no_grad_set = { "B" } })
    end)
    for _, pg in ipairs(pg_nob) do assert.are_not.equal("B", pg[1].name) end
    assert.are.equal(1, #pg_nob)
  end)

  it("gradients(targets, inputs, target_gradients, no_grad_set) -> grad Variables", function()
    local g1, g2, g3
    local main, startup = build(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      x.stop_gradient = false
      local z = layers.data{ name = "z", shape = { 3 } }
      z.stop_gradient = false
      local y = x * x + z
      local tg = layers.fill_constant{ shape = { 2, 3 }, dtype = "float32", value = 3 }
      g1 = oar.gradients({ y }, { x, z })
      g2 = oar.gradients(y, x, tg)
      g3 = oar.gradients({ y }, { x, z }, nil, { "z" })
    end)
    assert.are.equal(2, #g1)
    assert.is_true(oar.is_variable(g1[1]))
    local out = run(main, startup, { x = X23, z = X23 }, { g1[1], g1[2], g2[1] })
    near({ { 2, 4, 6 }, { 8, 10, 12 } }, out[1]:totable())       -- d(x^2)/dx = 2x
    near({ { 1, 1, 1 }, { 1, 1, 1 } }, out[2]:totable())
    near({ { 6, 12, 18 }, { 24, 30, 36 } }, out[3]:totable())     -- times the target gradient 3
    assert.truthy(g3[1])
    assert.is_nil(g3[2])                                           -- z is in no_grad_set
  end)
end)

describe("API: optimizers", function()
  -- one step on w = 1 (a 1x1 fc weight, x = 1): gradient 1, clipped to 0.5 by value,
  -- plus L2 decay 0.1 * w: g = 0.6
  local function one_step(make_opt, opts)
    opts = opts or {}
    local ops, pgs
    local main, startup = build(function()
      local x = layers.data{ name = "x", shape = { 1 } }
      local loss = layers.mean(layers.fc{ input = x, size = 1, param_attr = opts.param_attr or
        oar.ParamAttr{ name = "w", initializer = Constant{ value = 1 } }, bias_attr = false })
      ops, pgs = make_opt():minimize(loss)
    end)
    local scope = oar.Scope()
    local exe = oar.Executor(oar.CPUPlace())
    exe:run(startup, { scope = scope })
    for _ = 1, opts.steps or 1 do exe:run(main, { feed = { x = { { 1 } } }, scope = scope }) end
    return scope:find_var("w"):get_tensor():get(1, 1), ops, pgs, main
  end
  local reg, clip = oar.regularizer.L2Decay(0.1), oar.clip.GradientClipByValue{ max = 0.5 }
  local g = 0.6

  it("minimize returns the optimize ops and the {param, grad} pairs", function()
    local w, ops, pgs, main = one_step(function() return oar.optimizer.SGD{ learning_rate = 0.1 } end)
    near(0.9, w)
    assert.are.equal(1, #ops)
    assert.are.equal("sgd", ops[1].type)
    assert.are.equal(1, #pgs)
    assert.are.equal("w", pgs[1][1].name)
    assert.are.equal(main, pgs[1][2].block.program)
  end)

  it("SGD, Momentum, Adam, Adagrad, RMSProp, Adamax, Adadelta each take regularization= and grad_clip=", function()
    local O = oar.optimizer
    local function opt(name, extra)
      return function()
        local spec = { learning_rate = 0.1, regularization = reg, grad_clip = clip }
        for k, v in pairs(extra or {}) do spec[k] = v end
        return O[name](spec)
      end
    end
    near(1 - 0.1 * g, (one_step(opt("SGD"))))
    near(1 - 0.1 * g, (one_step(opt("Momentum", { momentum = 0.9 }))))
    near(1 - 0.1 * (g + 0.9 * g), (one_step(opt("Momentum", { momentum = 0.9, use_nesterov = true }))))
    -- Adam, step 1: the bias-corrected update is lr * m / sqrt(v) = lr * sign(g)
    near(0.9, (one_step(opt("Adam", { beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8 }))), 1e-5)
    near(0.9, (one_step(opt("Adagrad"))), 1e-5)                            -- lr * g / sqrt(g^2)
    local ms = 0.05 * g * g
    near(1 - 0.1 * g / math.sqrt(ms + 1e-6), (one_step(opt("RMSProp"))), 1e-5)
    near(0.9, (one_step(opt("Adamax"))), 1e-5)                             -- lr/(1-b1) * (0.1 g) / |g|
    local upd = math.sqrt(1e-6 / (0.05 * g * g + 1e-6)) * g
    near(1 - upd, (one_step(opt("Adadelta"))), 1e-4)
  end)

  it("minimize(loss, {startup_program=, parameter_list=, no_grad_set=})", function()
    local startup2 = oar.Program()
    local ops, pgs
    local main = build(function()
      local x = layers.data{ name = "x", shape = { 1 } }
      local a = layers.fc{ input = x, size = 1, bias_attr = false, param_attr = oar.ParamAttr{ name = "a", initializer = Constant{ value = 1 } } }
      local b = layers.fc{ input = x, size = 1, bias_attr = false, param_attr = oar.ParamAttr{ name = "b", initializer = Constant{ value = 1 } } }
      local c = layers.fc{ input = x, size = 1, bias_attr = false, param_attr = oar.ParamAttr{ name = "c", initializer = Constant{ value = 1 } } }
      ops, pgs = oar.optimizer.Momentum{ learning_rate = 0.5, momentum = 0.9 }:minimize(layers.mean(a + b + c),
        { startup_program = startup2, parameter_list = { "a", "b" }, no_grad_set = { "b" } })
    end)
    assert.are.equal(1, #pgs)
    assert.are.equal("a", pgs[1][1].name)
    assert.are.equal(1, #ops)
    assert.are.equal("momentum", ops[1].type)
    -- the optimizer's own state (learning rate, velocity) is initialized by startup2
    local types = op_types(startup2:global_block())
    assert.is_true(#types >= 2)
    for _, t in ipairs(types) do assert.are.equal("fill_constant", t) end
    assert.truthy(main)
  end)

  it("learning_rate may be a Variable", function()
    local w = one_step(function()
      local lr = layers.create_global_var{ shape = { 1 }, value = 0.5, dtype = "float32", persistable = true }
      return oar.optimizer.SGD{ learning_rate = lr }
    end)
    near(0.5, w)
  end)

  it("L1Decay, ByNorm, ByGlobalNorm", function()
    local O = oar.optimizer
    -- L1: g = 1 + 0.2 * sign(1)
    near(1 - 0.1 * 1.2, (one_step(function()
      return O.SGD{ learning_rate = 0.1, regularization = oar.regularizer.L1Decay(0.2) } end)))
    -- the gradient 1 scaled to norm 0.25
    near(1 - 0.1 * 0.25, (one_step(function()
      return O.SGD{ learning_rate = 0.1, grad_clip = oar.clip.GradientClipByNorm{ clip_norm = 0.25 } } end)))
    near(1 - 0.1 * 0.25, (one_step(function()
      return O.SGD{ learning_rate = 0.1, grad_clip = oar.clip.GradientClipByGlobalNorm{ clip_norm = 0.25 } } end)))
    -- a norm above the gradient's leaves it alone
    near(0.9, (one_step(function()
      return O.SGD{ learning_rate = 0.1, grad_clip = oar.clip.ByGlobalNorm{ clip_norm = 5 } } end)))
    near(1 - 0.1 * 0.3, (one_step(function()
      return O.SGD{ learning_rate = 0.1, grad_clip = oar.clip.ByValue{ max = 0.3 } } end)))
    near(1 - 0.1 * 0.25, (one_step(function()
      return O.SGD{ learning_rate = 0.1, grad_clip = oar.clip.ByNorm{ clip_norm = 0.25 } } end)))
  end)

  it("ParamAttr{name=, initializer=, learning_rate=, regularizer=, trainable=}", function()
    local a = oar.ParamAttr{ name = "w", initializer = Constant{ value = 1 }, learning_rate = 0.5,
                             regularizer = oar.regularizer.L2Decay(1), trainable = true }
    assert.are.equal("w", a.name)
    near(0.5, a.learning_rate)
    assert.is_true(a.trainable)
    -- lr 0.1 * 0.5; the param's own L2(1) wins over none: g = 1 + 1
    near(1 - 0.05 * 2, (one_step(function() return oar.optimizer.SGD{ learning_rate = 0.1 } end, { param_attr = a })))
    local frozen = oar.ParamAttr{ name = "w", initializer = Constant{ value = 1 }, trainable = false }
    assert.is_false(frozen.trainable)
    local w, ops = one_step(function() return oar.optimizer.SGD{ learning_rate = 0.1 } end, { param_attr = frozen })
    near(1, w)
    assert.are.equal(0, #ops)
    assert.truthy(errmsg(oar.ParamAttr, { nmae = "typo" }):find("nmae", 1, true))
  end)
end)

describe("API: learning-rate schedules", function()
  local function lr_values(make, steps)
    local lr
    local main, startup = build(function() lr = make() end)
    assert.is_true(oar.is_variable(lr))
    local scope, exe = oar.Scope(), oar.Executor(oar.CPUPlace())
    exe:run(startup, { scope = scope })
    local out = {}
    for s = 1, steps do out[s] = exe:run(main, { fetch_list = { lr }, scope = scope })[1]:totable()[1] end
    return out
  end

  it("exponential_decay, piecewise_decay, polynomial_decay, cosine_decay, noam_decay", function()
    near({ 1, math.sqrt(0.5), 0.5, math.sqrt(0.125) },
      lr_values(function() return layers.exponential_decay{ learning_rate = 1, decay_steps = 2, decay_rate = 0.5 } end, 4))
    near({ 1, 1, 0.5, 0.5 },
      lr_values(function() return layers.exponential_decay(1, 2, 0.5, true) end, 4))
    near({ 1, 0.5, 0.1, 0.1 }, lr_values(function() return layers.piecewise_decay({ 1, 2 }, { 1, 0.5, 0.1 }) end, 4))
    near({ 1, 0.75, 0.5, 0.25, 0, 0 },
      lr_values(function() return layers.polynomial_decay{ learning_rate = 1, decay_steps = 4, end_learning_rate = 0 } end, 6))
    near({ 1, 0.5 * (math.cos(math.pi / 4) + 1), 0.5 },
      lr_values(function() return layers.cosine_decay{ learning_rate = 1, step_each_epoch = 1, epochs = 4 } end, 3))
    -- d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), steps from 1
    local function noam(s) return 0.5 * math.min(s ^ -0.5, s * 2 ^ -1.5) end
    near({ noam(1), noam(2), noam(3) }, lr_values(function() return layers.noam_decay(4, 2) end, 3))
  end)

  it("a schedule drives an optimizer", function()
    local main, startup = build(function()
      local x = layers.data{ name = "x", shape = { 1 } }
      local loss = layers.mean(layers.fc{ input = x, size = 1, bias_attr = false,
        param_attr = oar.ParamAttr{ name = "w", initializer = Constant{ value = 1 } } })
      oar.optimizer.SGD{ learning_rate = layers.piecewise_decay({ 1 }, { 0.5, 0.25 }) }:minimize(loss)
    end)
    local scope, exe = oar.Scope(), oar.Executor(oar.CPUPlace())
    exe:run(startup, { scope = scope })
    exe:run(main, { feed = { x = { { 1 } } }, scope = scope })
    exe:run(main, { feed = { x = { { 1 } } }, scope = scope })
    near(1 - 0.5 - 0.25, scope:find_var("w"):get_tensor():get(1, 1))
  end)
end)

describe("API: initializers", function()
  local function init_values(init, shape)
    local main, startup = build(function()
      return layers.create_parameter{ shape = shape or { 100, 100 }, dtype = "float32", attr = oar.ParamAttr{
        name = "p", initializer = init } }
    end)
    local scope = oar.Scope()
    oar.Executor(oar.CPUPlace()):run(startup, { scope = scope })
    assert.truthy(main)
    local t = scope:find_var("p"):get_tensor()
    local p, n = t:data(), t:numel()
    local lo, hi, sum, sq = math.huge, -math.huge, 0, 0
    for i = 0, n - 1 do
      local v = p[i]
      lo, hi, sum, sq = math.min(lo, v), math.max(hi, v), sum + v, sq + v * v
    end
    local mean = sum / n
    return { min = lo, max = hi, mean = mean, std = math.sqrt(sq / n - mean * mean) }
  end

  it("Constant, Uniform, Normal, TruncatedNormal, Xavier, MSRA", function()
    local I = oar.initializer
    local c = init_values(I.Constant{ value = 0.75 })
    assert.are.equal(0.75, c.min)
    assert.are.equal(0.75, c.max)
    local u = init_values(I.Uniform{ low = 2, high = 4 })
    assert.is_true(u.min >= 2 and u.max <= 4)
    near(3, u.mean, 0.02)
    near(2 / math.sqrt(12), u.std, 0.03)
    local nrm = init_values(I.Normal{ loc = 1, scale = 2 })
    near(1, nrm.mean, 0.06)
    near(2, nrm.std, 0.03)
    local tn = init_values(I.TruncatedNormal{ loc = 0, scale = 1 })
    assert.is_true(tn.min >= -2 and tn.max <= 2)                  -- cut at two standard deviations
    near(0.8796, tn.std, 0.03)
    local xv = init_values(I.Xavier(), { 150, 50 })
    local limit = math.sqrt(6 / (150 + 50))
    assert.is_true(xv.min >= -limit and xv.max <= limit and xv.max > 0.9 * limit)
    local ms = init_values(I.MSRA(), { 150, 50 })
    local mlimit = math.sqrt(6 / 150)
    assert.is_true(ms.min >= -mlimit and ms.max <= mlimit and ms.max > 0.9 * mlimit)
  end)
end)
