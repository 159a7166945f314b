-- oar.amp.decorate: loss scaling around an optimizer, checked on the CPU in
-- float32 (where scaling changes only rounding): static scaling trains like
-- the plain optimizer; a step with a non-finite gradient leaves SGD's
-- parameters untouched; the dynamic scaling halves after bad steps and
-- doubles after runs of good ones, with the counters Fluid keeps.
local oar = require("oar")
local layers = oar.layers

local function net(decorate_opts, lr)
  local main, startup = oar.Program(), oar.Program()
  main.random_seed, startup.random_seed = 3, 3
  local loss, opt
  oar.program_guard(main, startup, function()
    local x = layers.data{ name = "x", shape = { 3 } }
    local y = layers.data{ name = "y", shape = { 1 } }
    local pred = layers.fc{ input = layers.fc{ input = x, size = 4, act = "tanh" }, size = 1 }
    loss = layers.mean(layers.square_error_cost{ input = pred, label = y })
    opt = oar.optimizer.SGD{ learning_rate = lr or 0.1 }
    if decorate_opts then opt = oar.amp.decorate(opt, decorate_opts) end
    opt:minimize(loss)
  end)
  return main, startup, loss, opt
end

local function feed(bad)
  local x = { { 1, -2, 0.5 }, { 0.3, 0.7, -1 } }
  if bad then x[2][2] = 0 / 0 end
  return { x = oar.Tensor(x, "float32"), y = oar.Tensor({ { 0.5 }, { -1 } }, "float32") }
end

local function value(scope, var) return scope:find_var(var.name):get_tensor():totable() end

-- parameter values by position (names differ between two built nets)
local function params(main, scope)
  local out = {}
  for i, p in ipairs(main:all_parameters()) do out[i] = value(scope, p) end
  return out
end

local function flat(t, acc)
  acc = acc or {}
  if type(t) == "table" then for _, v in ipairs(t) do flat(v, acc) end else acc[#acc + 1] = t end
  return acc
end

describe("oar.amp.decorate", function()
  it("static loss scaling trains like the plain optimizer", function()
    local function train(opts)
      local main, startup, loss = net(opts)
      local exe, scope = oar.Executor(oar.CPUPlace()), oar.Scope()
      exe:run(startup, { scope = scope })
      local losses = {}
      for i = 1, 4 do losses[i] = exe:run(main, { feed = feed(), fetch_list = { loss }, scope = scope })[1]:item() end
      return losses, params(main, scope)
    end
    local l0, p0 = train(nil)
    local l1, p1 = train({ init_loss_scaling = 128 })
    assert.is_true(l0[4] < l0[1])
    for i = 1, 4 do assert.is_true(math.abs(l1[i] - l0[i]) < 1e-5, l1[i] .. " vs " .. l0[i]) end
    assert.are.equal(4, #p0)
    for k, v in ipairs(p0) do
      local a, b = flat(v), flat(p1[k])
      assert.are.equal(#a, #b)
      for i = 1, #a do assert.is_true(math.abs(a[i] - b[i]) < 1e-5, "parameter " .. k) end
    end
  end)

  it("skips a step whose gradients are not finite and adapts the scaling", function()
    local main, startup, loss, opt = net({ init_loss_scaling = 8, use_dynamic_loss_scaling = true,
                                           incr_every_n_steps = 2, decr_every_n_nan_or_inf = 1,
                                           incr_ratio = 2, decr_ratio = 0.5 })
    local exe, scope = oar.Executor(oar.CPUPlace()), oar.Scope()
    exe:run(startup, { scope = scope })
    local function scaling() return value(scope, opt.loss_scaling)[1] end
    local function counters() return value(scope, opt.good_steps)[1], value(scope, opt.bad_steps)[1] end
    assert.are.equal(8, scaling())
    local before = params(main, scope)
    -- a NaN in the batch: NaN loss, NaN gradients
    local l = exe:run(main, { feed = feed(true), fetch_list = { loss, opt.finite }, scope = scope })
    assert.is_true(l[1]:item() ~= l[1]:item())
    assert.are.equal(false, l[2]:item())
    local after = params(main, scope)
    for name, v in pairs(before) do assert.are.same(v, after[name], name .. " changed on a non-finite step") end
    assert.are.equal(4, scaling())
    local good, bad = counters()
    assert.are.equal(0, good)
    assert.are.equal(0, bad)   -- reset after the decrease
    -- two finite steps: the parameters move, then the scaling doubles
    local f = exe:run(main, { feed = feed(), fetch_list = { opt.finite }, scope = scope })[1]:item()
    assert.are.equal(true, f)
    assert.are.equal(4, scaling())
    good, bad = counters()
    assert.are.equal(1, good)
    assert.are.equal(0, bad)
    exe:run(main, { feed = feed(), scope = scope })
    assert.are.equal(8, scaling())
    assert.are.equal(0, (counters()))
    local moved = params(main, scope)
    local changed = false
    for name, v in pairs(before) do
      local a, b = flat(v), flat(moved[name])
      for i = 1, #a do changed = changed or a[i] ~= b[i] end
    end
    assert.is_true(changed)
  end)

  it("the scaling never falls below 1", function()
    local main, startup, _, opt = net({ init_loss_scaling = 1.5, use_dynamic_loss_scaling = true,
                                        decr_every_n_nan_or_inf = 1, decr_ratio = 0.5 })
    local exe, scope = oar.Executor(oar.CPUPlace()), oar.Scope()
    exe:run(startup, { scope = scope })
    for _ = 1, 3 do exe:run(main, { feed = feed(true), scope = scope }) end
    assert.are.equal(1, value(scope, opt.loss_scaling)[1])
    assert.is_truthy(main)
  end)

  it("refuses bad arguments by name", function()
    local sgd = oar.optimizer.SGD{ learning_rate = 0.1 }
    assert.has_error(function() oar.amp.decorate(nil) end,
      "oar.amp.decorate: 'optimizer' must be an optimizer (oar.optimizer.SGD{...}, ...), got nil")
    assert.has_error(function() oar.amp.decorate(sgd, { decr_ratio = 1.5 }) end,
      "oar.amp.decorate: 'decr_ratio' must be below 1, got 1.5")
    assert.has_error(function() oar.amp.decorate(sgd, { incr_every_n_steps = 0.5 }) end,
      "oar.amp.decorate: 'incr_every_n_steps' must be an integer >= 1, got 0.5")
    local ok, err = pcall(oar.amp.decorate, sgd, { init_loss_scale = 2 })
    assert.is_false(ok)
    assert.matches("init_loss_scale", err)
  end)
end)
