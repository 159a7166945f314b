-- Eager optimizers (lua/oar/optimizer_eager.lua, lua/oar/lr_scheduler.lua):
-- learning-rate schedules against their formulas in plain Lua; gradient
-- clipping, regularization and schedules bit for bit against the static
-- program's optimize pass; state_dict / set_state_dict resuming bit for bit.
local oar = require("oar")
local nn = oar.nn
local F = nn.functional
local layers = oar.layers
local lr = oar.optimizer.lr

local function close(got, want, tol, what)
  assert(math.abs(got - want) <= tol * math.max(1, math.abs(want)),
    string.format("%s: expected %.9g, got %.9g", what or "value", want, got))
end

describe("oar.optimizer.lr schedules", function()
  it("follow their formulas, one step per optimizer step", function()
    local cases = {
      { lr.exponential_decay{ learning_rate = 0.1, decay_steps = 3, decay_rate = 0.5 },
        function(s) return 0.1 * 0.5 ^ (s / 3) end },
      { lr.exponential_decay(0.1, 3, 0.5, true), function(s) return 0.1 * 0.5 ^ math.floor(s / 3) end },
      { lr.natural_exp_decay(0.2, 2, 0.3), function(s) return 0.2 * math.exp(-0.3 * s / 2) end },
      { lr.inverse_time_decay(0.2, 2, 0.3), function(s) return 0.2 / (1 + 0.3 * s / 2) end },
      { lr.piecewise_decay({ 2, 5 }, { 1.0, 0.5, 0.1 }),
        function(s) return s < 2 and 1.0 or (s < 5 and 0.5 or 0.1) end },
      { lr.polynomial_decay(0.1, 4, 0.01, 2),
        function(s) return (0.1 - 0.01) * (1 - math.min(s, 4) / 4) ^ 2 + 0.01 end },
      { lr.cosine_decay(0.1, 2, 4), function(s) return 0.1 * 0.5 * (math.cos(math.floor(s / 2) * math.pi / 4) + 1) end },
      { lr.noam_decay(16, 3), function(s) s = s + 1; return 16 ^ -0.5 * math.min(s ^ -0.5, s * 3 ^ -1.5) end },
      { lr.linear_lr_warmup(0.1, 4, 0.0, 0.1), function(s) return s < 4 and 0.1 * s / 4 or 0.1 end },
    }
    for ci, case in ipairs(cases) do
      local sched, f = case[1], case[2]
      local w = oar.zeros(1):requires_grad()
      local opt = oar.optimizer.SGD{ learning_rate = sched, parameters = { w } }
      local total = 0
      for s = 0, 7 do
        close(opt:get_lr(), f(s), 1e-6, string.format("case %d step %d (get_lr)", ci, s))
        assert.are.equal(s, sched:steps())
        ;(w * 1):sum():backward()      -- grad 1: w moves by -lr
        opt:step(); opt:zero_grad()
        total = total + f(s)
      end
      close(w:item(), -total, 1e-5, "case " .. ci .. ": w = -sum of the rates")
    end
  end)

  it("is for eager optimizers; a static one is told to use the layers' decays", function()
    local ok, err = pcall(function() return oar.optimizer.SGD{ learning_rate = lr.cosine_decay(0.1, 2, 4) } end)
    assert.truthy(not ok and err:find("oar.layers", 1, true), err)
  end)
end)

describe("eager optimizers against the static optimize pass", function()
  -- an MLP 6 -> 8 -> 3 trained eagerly and statically from the same
  -- parameters; opt(extra, static) makes the optimizer. The eager
  -- parameters are listed in the static pass's order (sorted by name), the
  -- order the global norm sums them in.
  local ES = require("spec.helpers.eager_static")
  local with = ES.with
  local function both(make_opt, steps)
    local scope, sd, init = ES.train(make_opt, steps, function(model)
      local byname = {}
      for _, np in ipairs(model:named_parameters()) do byname[np[1]] = np[2] end
      return { byname["0.bias"], byname["2.bias"], byname["0.weight"], byname["2.weight"] }
    end)
    for sname, ename in pairs(ES.MAP) do
      assert.are.same(scope:find_var(sname):get_tensor():totable(), sd[ename]:totable(), sname)
      assert.are_not.same(init[ename]:totable(), sd[ename]:totable(), sname .. " did not move")
    end
  end

  it("grad_clip by global norm and L2 regularization with Adam, bit for bit", function()
    both(function(e)
      return oar.optimizer.Adam(with({ learning_rate = 0.01, grad_clip = oar.clip.GradientClipByGlobalNorm(0.05),
                                       regularization = oar.regularizer.L2Decay(0.01) }, e))
    end, 12)
  end)

  it("grad_clip by norm, by value, and L1 regularization with SGD and Momentum, bit for bit", function()
    both(function(e)
      return oar.optimizer.SGD(with({ learning_rate = 0.2, grad_clip = oar.clip.GradientClipByNorm(0.1),
                                      regularization = oar.regularizer.L1Decay(0.001) }, e))
    end, 10)
    both(function(e)
      return oar.optimizer.Momentum(with({ learning_rate = 0.1, momentum = 0.9,
                                           grad_clip = oar.clip.GradientClipByValue{ min = -0.02, max = 0.03 } }, e))
    end, 10)
  end)

  it("a schedule: the same rates as the static program's decay, bit for bit", function()
    both(function(e, static)
      local rate = static and layers.exponential_decay(0.1, 2, 0.7, true) or lr.exponential_decay(0.1, 2, 0.7, true)
      return oar.optimizer.Adam(with({ learning_rate = rate }, e))
    end, 9)
    both(function(e, static)
      local rate = static and layers.piecewise_decay({ 3, 6 }, { 0.1, 0.05, 0.01 })
        or lr.piecewise_decay({ 3, 6 }, { 0.1, 0.05, 0.01 })
      return oar.optimizer.SGD(with({ learning_rate = rate, grad_clip = oar.clip.GradientClipByGlobalNorm(1.0) }, e))
    end, 9)
  end)
end)

describe("optimizer state_dict", function()
  -- trains `steps` steps from the model's state and the optimizer's, on fixed batches
  local function setup()
    local model = nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 2))
    local opt = oar.optimizer.Adam{ learning_rate = lr.cosine_decay(0.05, 3, 10), parameters = model:parameters(),
                                    grad_clip = oar.clip.GradientClipByGlobalNorm(0.5),
                                    regularization = oar.regularizer.L2Decay(1e-3) }
    return model, opt
  end
  local batches = {}
  oar.seed(8)
  for i = 1, 12 do batches[i] = { oar.randn(6, 5), oar.randint(0, 2, { 6 }) } end
  local function train(model, opt, from, to)
    for i = from, to do
      F.cross_entropy(model(batches[i][1]), batches[i][2]):backward()
      opt:step()
      opt:zero_grad()
    end
  end

  it("a run resumed from saved model and optimizer states equals an uninterrupted one, bit for bit", function()
    oar.seed(3)
    local m1, o1 = setup()
    local start = m1:state_dict()
    for k, v in pairs(start) do start[k] = v:clone() end
    train(m1, o1, 1, 12)
    -- interrupted after 5 steps, saved to files, loaded into fresh objects
    oar.seed(99)
    local m2, o2 = setup()
    m2:load_state_dict(start)
    train(m2, o2, 1, 5)
    local mp, op = os.tmpname(), os.tmpname()
    oar.save(m2:state_dict(), mp)
    oar.save(o2:state_dict(), op)
    local m3, o3 = setup()
    m3:load_state_dict(oar.load(mp))
    o3:set_state_dict(oar.load(op))
    os.remove(mp); os.remove(op)
    assert.are.equal(5, o3.learning_rate:steps())
    train(m3, o3, 6, 12)
    local a, b = m1:state_dict(), m3:state_dict()
    for k, v in pairs(a) do assert.are.same(v:totable(), b[k]:totable(), k) end
    -- and without the optimizer's state it differs (the check can fail)
    local m4, o4 = setup()
    m4:load_state_dict(m2:state_dict())
    train(m4, o4, 6, 12)
    assert.are_not.same(a["0.weight"]:totable(), m4:state_dict()["0.weight"]:totable())
  end)

  it("names the accumulators by position; refuses keys and shapes it does not have", function()
    local w = oar.ones(3):requires_grad()
    local opt = oar.optimizer.Adam{ learning_rate = 0.1, parameters = { w } }
    ;(w * w):sum():backward()
    opt:step()
    local sd = opt:state_dict()
    assert.truthy(sd["1.moment1"] and sd["1.moment2"] and sd["1.beta1_pow_acc"])
    assert.are.equal(0.1, sd.learning_rate)
    local ok, err = pcall(function() opt:set_state_dict({ ["2.moment1"] = oar.zeros(3) }) end)
    assert.truthy(not ok and err:find("2.moment1", 1, true), err)
    ok, err = pcall(function() opt:set_state_dict({ ["1.moment1"] = oar.zeros(4) }) end)
    assert.truthy(not ok and err:find("[4]", 1, true) and err:find("[3]", 1, true), err)
  end)
end)
