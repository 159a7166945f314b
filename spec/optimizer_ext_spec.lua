-- lamb, lars_momentum, ftrl, proximal_adagrad, proximal_gd, dpsgd (Fluid
-- 1.8): each op's update against its formula re-computed in plain Lua on
-- inputs of the form Fluid's OpTests use (their attrs; uniform values from a
-- fixed LCG instead of numpy's draws), float64 and float32; dpsgd's noise by its statistics with fixed seeds; the
-- optimizer classes Lamb, LarsMomentum, Ftrl, ProximalAdagrad, Dpsgd and
-- AdamW training a linear regression against the same optimizer written in
-- Lua (static and eager); shape errors.
local ffi = require("ffi")
local oar = require("oar")
local T = require("spec.helpers.op_test")
local layers = oar.layers

local function f32(x) return tonumber(ffi.new("float", x)) end

local SHAPE = { 4, 5 }
local N = 20
-- uniform [lo, hi) from a fixed LCG: the same inputs on every run
local seed = 12345
local function uniform(lo, hi, n)
  local r = {}
  for i = 1, n or N do
    seed = (seed * 1103515245 + 12345) % 2147483648
    r[i] = lo + (hi - lo) * seed / 2147483648
  end
  return r
end
local function norm(v)
  local s = 0
  for i = 1, #v do s = s + v[i] * v[i] end
  return math.sqrt(s)
end

-- one op run; ins: slot -> flat data (a number: a [1] tensor)
local function run(optype, ins, attrs, outs, dt)
  local inputs = {}
  for slot, v in pairs(ins) do
    if type(v) == "number" then inputs[slot] = T.tensor({ v }, { shape = { 1 }, dtype = dt })
    else inputs[slot] = T.tensor(v, { shape = SHAPE, dtype = dt }) end
  end
  local o = {}
  for _, s in ipairs(outs) do o[s] = 1 end
  local res = T.run{ type = optype, inputs = inputs, attrs = attrs, outputs = o, dtype = dt }
  local r = {}
  for _, s in ipairs(outs) do
    assert.are.equal(dt, res[s][1].dtype)
    r[s] = res[s][1].data
  end
  return r
end

local function close(got, want, tol, label)
  assert.are.equal(#want, #got, label)
  for i = 1, #want do
    assert.is_true(math.abs(got[i] - want[i]) <= tol * (1 + math.abs(want[i])),
      ("%s[%d]: got %.12g, expected %.12g"):format(label, i, got[i], want[i]))
  end
end

-- Each case: inputs, attrs, and ref(inputs) -> outputs (slot -> data)
local CASES = {}

CASES.lamb = function()
  -- TestLambOp1: epsilon 1e-4, beta1 0.78, beta2 0.836, weight_decay 0.01
  local a = { epsilon = 1e-4, beta1 = 0.78, beta2 = 0.836, weight_decay = 0.01 }
  local m2 = uniform(0, 1)
  local ins = { Param = uniform(-1, 1), Grad = uniform(-1, 1), Moment1 = uniform(-0.5, 0.5), Moment2 = m2,
                LearningRate = 0.001, Beta1Pow = 0.78 ^ 10, Beta2Pow = 0.836 ^ 10 }
  local ref = function(x)
    local b1, b2, eps, wd = f32(a.beta1), f32(a.beta2), f32(a.epsilon), f32(a.weight_decay)
    local m1o, m2o, r = {}, {}, {}
    for i = 1, N do
      local g = x.Grad[i]
      m1o[i] = b1 * x.Moment1[i] + (1 - b1) * g
      m2o[i] = b2 * x.Moment2[i] + (1 - b2) * g * g
      r[i] = m1o[i] / (math.sqrt(m2o[i]) + eps) + wd * x.Param[i]
    end
    local pn, rn = norm(x.Param), norm(r)
    local trust = (pn > 0 and rn > 0) and pn / rn or 1   -- the trust ratio
    local po = {}
    for i = 1, N do po[i] = x.Param[i] - x.LearningRate * trust * r[i] end
    return { ParamOut = po, Moment1Out = m1o, Moment2Out = m2o }
  end
  return ins, a, ref
end

CASES.lars_momentum = function()
  -- TestLarsMomentumOp: mu 0.0001, lars_coeff 0.001, lars_weight_decay 0.0005
  local a = { mu = 0.0001, lars_coeff = 0.001, lars_weight_decay = 0.0005 }
  local ins = { Param = uniform(-1, 1), Grad = uniform(-1, 1), Velocity = uniform(0, 1), LearningRate = 0.1 }
  local ref = function(x)
    local mu, c, wd = f32(a.mu), f32(a.lars_coeff), f32(a.lars_weight_decay)
    local pn, gn = norm(x.Param), norm(x.Grad)
    local local_lr = x.LearningRate * c * pn / (gn + wd * pn)   -- LARS' local rate
    local vo, po = {}, {}
    for i = 1, N do
      vo[i] = x.Velocity[i] * mu + local_lr * (x.Grad[i] + wd * x.Param[i])
      po[i] = x.Param[i] - vo[i]
    end
    return { ParamOut = po, VelocityOut = vo }
  end
  return ins, a, ref
end

local function ftrl_case(lr_power)
  return function()
    -- TestFTRLOp: l1 0.1, l2 0.2, lr_power -0.5 (and another power)
    local a = { l1 = 0.1, l2 = 0.2, lr_power = lr_power }
    local ins = { Param = uniform(-1, 1), SquaredAccumulator = uniform(0.1, 1), LinearAccumulator = uniform(-1, 1),
                  Grad = uniform(-1, 1), LearningRate = 0.01 }
    local ref = function(x)
      local l1, l2, pw = f32(a.l1) + 1e-10, f32(a.l2) + 1e-10, f32(a.lr_power)
      local po, so, lo = {}, {}, {}
      for i = 1, N do
        local g, s = x.Grad[i], x.SquaredAccumulator[i]
        local new = s + g * g
        lo[i] = x.LinearAccumulator[i] + g - (new ^ -pw - s ^ -pw) / x.LearningRate * x.Param[i]
        if math.abs(lo[i]) > l1 then
          local sign = lo[i] >= 0 and 1 or -1
          po[i] = (l1 * sign - lo[i]) / (new ^ -pw / x.LearningRate + 2 * l2)
        else
          po[i] = 0
        end
        so[i] = new
      end
      return { ParamOut = po, SquaredAccumOut = so, LinearAccumOut = lo }
    end
    return ins, a, ref
  end
end
CASES.ftrl = ftrl_case(-0.5)
CASES["ftrl (lr_power -0.6)"] = ftrl_case(-0.6)

local function prox(p, lr, l1, l2)
  if l1 > 0 then
    local sign = p > 0 and 1 or (p < 0 and -1 or 0)
    return sign * math.max(math.abs(p) - lr * l1, 0) / (1 + lr * l2)
  end
  return p / (1 + lr * l2)
end

CASES.proximal_adagrad = function()
  -- TestProximalAdagradOp: l1 0.1, l2 0.2, lr 0.01
  local a = { l1 = 0.1, l2 = 0.2 }
  local ins = { Param = uniform(-1, 1), Moment = uniform(0, 1), Grad = uniform(-1, 1), LearningRate = 0.01 }
  local ref = function(x)
    local po, mo = {}, {}
    for i = 1, N do
      mo[i] = x.Moment[i] + x.Grad[i] ^ 2
      po[i] = prox(x.Param[i] - x.LearningRate * x.Grad[i] / math.sqrt(mo[i]), x.LearningRate, f32(a.l1), f32(a.l2))
    end
    return { ParamOut = po, MomentOut = mo }
  end
  return ins, a, ref
end

local function prox_gd_case(l1)
  return function()
    -- TestProximalGDOp: l1 0.1, l2 0.2, lr 0.1 (and l1 = 0)
    local a = { l1 = l1, l2 = 0.2 }
    local ins = { Param = uniform(-1, 1), Grad = uniform(-1, 1), LearningRate = 0.1 }
    local ref = function(x)
      local po = {}
      for i = 1, N do po[i] = prox(x.Param[i] - x.LearningRate * x.Grad[i], x.LearningRate, f32(a.l1), f32(a.l2)) end
      return { ParamOut = po }
    end
    return ins, a, ref
  end
end
CASES.proximal_gd = prox_gd_case(0.1)
CASES["proximal_gd (l1 0)"] = prox_gd_case(0)

local function dpsgd_case(clip)
  return function()
    -- TestDpsgdOp: clip 10000, batch_size 16, sigma 0 (no noise: exact); a
    -- clip below the gradient's norm scales it
    local a = { clip = clip, batch_size = 16.0, sigma = 0.0 }
    local ins = { Param = uniform(-1, 1), Grad = uniform(-1, 1), LearningRate = 0.001 }
    local ref = function(x)
      local gn = f32(norm(x.Grad))
      local scale = gn > a.clip and gn / a.clip or 1
      local po = {}
      for i = 1, N do po[i] = x.Param[i] - x.LearningRate * x.Grad[i] / scale end
      return { ParamOut = po }
    end
    return ins, a, ref
  end
end
CASES.dpsgd = dpsgd_case(10000.0)
CASES["dpsgd (clipped)"] = dpsgd_case(0.5)

local function round32(t)
  if type(t) == "number" then return f32(t) end
  local r = {}
  for i, v in ipairs(t) do r[i] = f32(v) end
  return r
end

describe("optimizer_ext ops against their formulas in Lua", function()
  local names = {}
  for k in pairs(CASES) do names[#names + 1] = k end
  table.sort(names)
  for _, name in ipairs(names) do
    local optype = name:match("^(%S+)")
    for _, dt in ipairs({ "float64", "float32" }) do
      it(name .. " " .. dt, function()
        local ins, attrs, ref = CASES[name]()
        if dt == "float32" then for k, v in pairs(ins) do ins[k] = round32(v) end end
        local want = ref(ins)
        local outs = {}
        for s in pairs(want) do outs[#outs + 1] = s end
        local got = run(optype, ins, attrs, outs, dt)
        for s, w in pairs(want) do close(got[s], w, dt == "float64" and 1e-9 or 2e-5, name .. " " .. s) end
      end)
    end
  end
end)

describe("dpsgd noise", function()
  -- Param = Grad = 0, LearningRate = 1, batch_size = 1: ParamOut = -sigma z
  local function draw(seed_, sigma)
    local r = run("dpsgd", { Param = uniform(0, 0), Grad = uniform(0, 0), LearningRate = 1 },
      { clip = 1, batch_size = 1, sigma = sigma, seed = seed_ }, { "ParamOut" }, "float64")
    local v = r.ParamOut
    for i = 2, N do assert.are.equal(v[1], v[i]) end   -- one draw for the whole tensor
    return -v[1]
  end

  it("a fixed seed repeats its draw; seeds 1..800 give N(0, sigma^2) statistics", function()
    assert.are.equal(draw(7, 2.0), draw(7, 2.0))
    local n, s, s2, sigma = 800, 0, 0, 2.0
    for k = 1, n do
      local z = draw(k, sigma)
      s, s2 = s + z, s2 + z * z
    end
    local mean = s / n
    local sd = math.sqrt(s2 / n - mean * mean)
    -- bounds: 4 standard errors of the mean, 15% on the deviation
    assert.is_true(math.abs(mean) < 4 * sigma / math.sqrt(n), "mean " .. mean)
    assert.is_true(math.abs(sd / sigma - 1) < 0.15, "sd " .. sd)
  end)

  it("seed 0 draws from the global generator: runs differ", function()
    assert.are_not.equal(draw(0, 1.0), draw(0, 1.0))
  end)
end)

describe("optimizer_ext shape errors name the op and the variable", function()
  it("lamb: Moment1 unlike Param", function()
    local ok, err = pcall(T.run, { type = "lamb", attrs = { weight_decay = 0.01 },
      inputs = { Param = T.tensor(uniform(0, 1), { shape = SHAPE }), Grad = T.tensor(uniform(0, 1), { shape = SHAPE }),
                 Moment1 = T.tensor(uniform(0, 1, 6), { shape = { 2, 3 } }),
                 Moment2 = T.tensor(uniform(0, 1), { shape = SHAPE }), LearningRate = T.tensor({ 0.1 }, { shape = { 1 } }),
                 Beta1Pow = T.tensor({ 0.9 }, { shape = { 1 } }), Beta2Pow = T.tensor({ 0.9 }, { shape = { 1 } }) },
      outputs = { ParamOut = 1, Moment1Out = 1, Moment2Out = 1 } })
    assert.is_false(ok)
    err = tostring(err)
    assert.truthy(err:find("lamb", 1, true), err)
    assert.truthy(err:find("Moment1 'in_Moment1_1'", 1, true), err)
  end)

  it("proximal_adagrad: Moment unlike Param", function()
    local ok, err = pcall(T.run, { type = "proximal_adagrad", attrs = {},
      inputs = { Param = T.tensor(uniform(0, 1), { shape = SHAPE }), Grad = T.tensor(uniform(0, 1), { shape = SHAPE }),
                 Moment = T.tensor(uniform(0, 1, 4), { shape = { 4 } }), LearningRate = T.tensor({ 0.1 }, { shape = { 1 } }) },
      outputs = { ParamOut = 1, MomentOut = 1 } })
    assert.is_false(ok)
    err = tostring(err)
    assert.truthy(err:find("proximal_adagrad", 1, true), err)
    assert.truthy(err:find("Moment 'in_Moment_1'", 1, true), err)
  end)
end)

-- ---- the optimizer classes -------------------------------------------------
-- Linear regression, float64: pred = X w (w: [3, 1], all 0.5, no bias),
-- loss = mean((pred - Y)^2), so d loss / d w_j = 2/4 sum_i (pred_i - Y_i) X_ij.
local X = { { 1, -2, 0.5 }, { 0.3, 1.5, -1 }, { -0.7, 0.2, 2 }, { 1.1, -0.4, 0.9 } }
local Y = { { 0.5 }, { -1 }, { 2 }, { 0.25 } }

local function lua_loss_grad(w)
  local loss, g = 0, { 0, 0, 0 }
  for i = 1, 4 do
    local pred = 0
    for j = 1, 3 do pred = pred + X[i][j] * w[j] end
    local e = pred - Y[i][1]
    loss = loss + e * e / 4
    for j = 1, 3 do g[j] = g[j] + 2 / 4 * e * X[i][j] end
  end
  return loss, g
end

local function static_losses(opt, steps)
  local main, startup = oar.Program(), oar.Program()
  local loss
  oar.unique_name.guard(function()
    oar.program_guard(main, startup, function()
      local x = layers.data{ name = "x", shape = { 3 }, dtype = "float64" }
      local y = layers.data{ name = "y", shape = { 1 }, dtype = "float64" }
      local pred = layers.fc{ input = x, size = 1, bias_attr = false,
        param_attr = oar.ParamAttr{ name = "w", initializer = oar.initializer.Constant{ value = 0.5 } } }
      loss = layers.mean(layers.square(layers.elementwise_sub(pred, y)))
      opt:minimize(loss)
    end)
  end)
  local exe = oar.Executor(oar.CPUPlace())
  local scope = oar.Scope()
  exe:run(startup, { scope = scope })
  local out = {}
  for s = 1, steps + 1 do
    local r = exe:run(main, { feed = { x = X, y = Y }, fetch_list = { loss }, scope = scope })
    out[s] = r[1]:totable()[1]
  end
  return out
end

-- each: the class's spec and a Lua step(w, g, state) with its formula
local LR = 0.25   -- exact in float32
local CLASSES = {
  Lamb = { spec = { learning_rate = LR, lamb_weight_decay = 0.01 }, step = function(w, g, st)
    local b1, b2, eps, wd = f32(0.9), f32(0.999), f32(1e-6), f32(0.01)
    st.m1, st.m2 = st.m1 or { 0, 0, 0 }, st.m2 or { 0, 0, 0 }
    local r = {}
    for j = 1, 3 do
      st.m1[j] = b1 * st.m1[j] + (1 - b1) * g[j]
      st.m2[j] = b2 * st.m2[j] + (1 - b2) * g[j] ^ 2
      r[j] = st.m1[j] / (math.sqrt(st.m2[j]) + eps) + wd * w[j]
    end
    local trust = norm(w) / norm(r)
    for j = 1, 3 do w[j] = w[j] - LR * trust * r[j] end
  end },
  LarsMomentum = { spec = { learning_rate = LR, momentum = 0.5, lars_coeff = 0.5 }, step = function(w, g, st)
    local mu, c, wd = 0.5, 0.5, f32(0.0005)
    st.v = st.v or { 0, 0, 0 }
    local pn, gn = norm(w), norm(g)
    local llr = LR * c * pn / (gn + wd * pn)
    for j = 1, 3 do
      st.v[j] = mu * st.v[j] + llr * (g[j] + wd * w[j])
      w[j] = w[j] - st.v[j]
    end
  end },
  Ftrl = { spec = { learning_rate = LR, l1 = 0.01, l2 = 0.02 }, step = function(w, g, st)
    local l1, l2 = f32(0.01) + 1e-10, f32(0.02) + 1e-10
    st.sq, st.lin = st.sq or { 0, 0, 0 }, st.lin or { 0, 0, 0 }
    for j = 1, 3 do
      local new = st.sq[j] + g[j] ^ 2
      st.lin[j] = st.lin[j] + g[j] - (math.sqrt(new) - math.sqrt(st.sq[j])) / LR * w[j]
      if math.abs(st.lin[j]) > l1 then
        w[j] = ((st.lin[j] >= 0 and l1 or -l1) - st.lin[j]) / (math.sqrt(new) / LR + 2 * l2)
      else
        w[j] = 0
      end
      st.sq[j] = new
    end
  end },
  ProximalAdagrad = { spec = { learning_rate = LR, l1 = 0.01, l2 = 0.02 }, step = function(w, g, st)
    st.m = st.m or { f32(0.1), f32(0.1), f32(0.1) }
    for j = 1, 3 do
      st.m[j] = st.m[j] + g[j] ^ 2
      w[j] = prox(w[j] - LR * g[j] / math.sqrt(st.m[j]), LR, f32(0.01), f32(0.02))
    end
  end },
  ProximalGD = { spec = { learning_rate = LR, l1 = 0.01, l2 = 0.02 }, step = function(w, g)
    for j = 1, 3 do w[j] = prox(w[j] - LR * g[j], LR, f32(0.01), f32(0.02)) end
  end },
  Dpsgd = { spec = { learning_rate = LR, clip = 0.5, batch_size = 4, sigma = 0 }, step = function(w, g)
    local gn = f32(norm(g))
    local scale = gn > 0.5 and gn / 0.5 or 1
    for j = 1, 3 do w[j] = w[j] - LR * g[j] / scale end
  end },
  AdamW = { spec = { learning_rate = LR, weight_decay = 0.1 }, step = function(w, g, st)
    local b1, b2, eps = f32(0.9), f32(0.999), f32(1e-8)
    st.t = (st.t or 0) + 1
    st.m1, st.m2 = st.m1 or { 0, 0, 0 }, st.m2 or { 0, 0, 0 }
    local decay = f32(1 - LR * f32(0.1))   -- the scale op's float32 result
    local lr_t = LR * math.sqrt(1 - b2 ^ st.t) / (1 - b1 ^ st.t)
    for j = 1, 3 do
      w[j] = w[j] * decay
      st.m1[j] = b1 * st.m1[j] + (1 - b1) * g[j]
      st.m2[j] = b2 * st.m2[j] + (1 - b2) * g[j] ^ 2
      w[j] = w[j] - lr_t * st.m1[j] / (math.sqrt(st.m2[j]) + eps * math.sqrt(1 - b2 ^ st.t))
    end
  end },
}

describe("optimizer classes train a linear regression like their Lua versions", function()
  local STEPS = 4
  for name, c in pairs(CLASSES) do
    it(name .. " (static)", function()
      local got = static_losses(oar.optimizer[name](c.spec), STEPS)
      local w, st = { 0.5, 0.5, 0.5 }, {}
      for s = 1, STEPS + 1 do
        local loss, g = lua_loss_grad(w)
        assert.is_true(math.abs(got[s] - loss) <= 1e-6 * math.abs(loss),
          ("%s step %d: loss %.12g, expected %.12g"):format(name, s, got[s], loss))
        c.step(w, g, st)
      end
      assert.is_true(got[STEPS + 1] < got[1], name .. " did not reduce the loss")
    end)
  end
end)
