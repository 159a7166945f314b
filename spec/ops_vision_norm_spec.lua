-- spectral_norm and data_norm: the cases of Fluid 1.8's
-- test_spectral_norm_op.py and test_data_norm_op.py (shapes reduced),
-- expected values computed here in plain Lua, gradients against float64
-- finite differences (spectral_norm with power_iters 0, as Fluid's test:
-- its gradient holds u and v constant); and the two layers.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")

local numel = require("spec.helpers.index").numel
local expect_error = require("spec.helpers.expect_error")

local function fails(spec, want) expect_error(function() T.run(spec) end, want) end

-- Weight / sigma after power_iters iterations from u, v
local function spectral_ref(w, shape, u, v, dim, iters, eps)
  -- the matrix [h, rest]: dim moved first
  local nd, h = #shape, shape[dim + 1]
  local rows, cols = {}, {}
  local c = {}
  for j = 1, nd do c[j] = 0 end
  for f = 1, #w do
    local r = 0
    for j = 1, nd do if j ~= dim + 1 then r = r * shape[j] + c[j] end end
    rows[f], cols[f] = c[dim + 1], r
    for j = nd, 1, -1 do
      c[j] = c[j] + 1
      if c[j] < shape[j] then break end
      c[j] = 0
    end
  end
  local wd = #w / h
  u, v = { unpack(u) }, { unpack(v) }
  for _ = 1, iters do
    local nv = {}
    for r = 1, wd do nv[r] = 0 end
    for f = 1, #w do nv[cols[f] + 1] = nv[cols[f] + 1] + w[f] * u[rows[f] + 1] end
    local s = 0
    for r = 1, wd do s = s + nv[r] ^ 2 end
    for r = 1, wd do v[r] = nv[r] / (math.sqrt(s) + eps) end
    local nu = {}
    for i = 1, h do nu[i] = 0 end
    for f = 1, #w do nu[rows[f] + 1] = nu[rows[f] + 1] + w[f] * v[cols[f] + 1] end
    s = 0
    for i = 1, h do s = s + nu[i] ^ 2 end
    for i = 1, h do u[i] = nu[i] / (math.sqrt(s) + eps) end
  end
  local sigma = 0
  for f = 1, #w do sigma = sigma + u[rows[f] + 1] * w[f] * v[cols[f] + 1] end
  local out = {}
  for f = 1, #w do out[f] = w[f] / sigma end
  return out
end

describe("spectral_norm (test_spectral_norm_op.py)", function()
  local CASES = {
    { name = "TestSpectralNormOpNoGrad: [10, 12], dim 0, 5 iterations", w = { 10, 12 }, dim = 0, iters = 5 },
    { name = "TestSpectralNormOpNoGrad2: [2, 6, 3, 3], dim 1, 5 iterations", w = { 2, 6, 3, 3 }, dim = 1, iters = 5 },
    { name = "TestSpectralNormOp: [10, 12], dim 0, no iteration", w = { 10, 12 }, dim = 0, iters = 0, grad = true },
    { name = "TestSpectralNormOp2: [2, 6, 3, 3], dim 1, no iteration", w = { 2, 6, 3, 3 }, dim = 1, iters = 0, grad = true },
    { name = "dim 2 of a 3-D weight, 2 iterations", w = { 2, 3, 4 }, dim = 2, iters = 2 },
  }
  for _, o in ipairs(CASES) do
    it(o.name, function()
      local h = o.w[o.dim + 1]
      local wd = numel(o.w) / h
      local w, u, v = R.symmetric(numel(o.w), 113), R.symmetric(h, 127), R.symmetric(wd, 131)
      local want = spectral_ref(w, o.w, u, v, o.dim, o.iters, 1e-12)
      local function inputs(dt)
        return { Weight = T.tensor(w, { shape = o.w, dtype = dt }), U = T.tensor(u, { shape = { h }, dtype = dt }),
                 V = T.tensor(v, { shape = { wd }, dtype = dt }) }
      end
      for _, dt in ipairs({ "float64", "float32" }) do
        T.check_output{ type = "spectral_norm", dtype = dt, atol = dt == "float32" and 1e-4 or 1e-10,
          inputs = inputs(dt), attrs = { dim = o.dim, power_iters = o.iters, eps = 1e-12 },
          expect = { Out = { shape = o.w, data = want } } }
      end
      if o.grad then
        T.check_grad{ type = "spectral_norm", dtype = "float64", inputs = inputs("float64"),
          attrs = { dim = o.dim, power_iters = 0 }, wrt = { "Weight" }, delta = 1e-6, max_rel = 1e-6 }
      end
    end)
  end

  it("bad inputs name the variable", function()
    fails({ type = "spectral_norm", inputs = { Weight = T.tensor(R.symmetric(6), { shape = { 2, 3 } }),
            U = T.tensor(R.symmetric(3), { shape = { 3 } }), V = T.tensor(R.symmetric(3), { shape = { 3 } }) } },
      "U ('")
    fails({ type = "spectral_norm", inputs = { Weight = T.tensor(R.symmetric(6), { shape = { 2, 3 } }),
            U = T.tensor(R.symmetric(2), { shape = { 2 } }), V = T.tensor(R.symmetric(3), { shape = { 3 } }) },
            attrs = { dim = 2 } }, "attr dim = 2 must be less than Weight's rank 2")
  end)
end)

describe("data_norm (test_data_norm_op.py)", function()
  local N, C = 5, 3
  local x = R.symmetric(N * C, 137, 3)
  local size, sum, sq = R.uniform(C, 139, 50, 100), R.symmetric(C, 149, 20), R.uniform(C, 151, 30, 90)
  local function inputs(dt)
    return { X = T.tensor(x, { shape = { N, C }, dtype = dt }), BatchSize = T.tensor(size, { dtype = dt }),
             BatchSum = T.tensor(sum, { dtype = dt }), BatchSquareSum = T.tensor(sq, { dtype = dt }) }
  end
  local means, scales, y = {}, {}, {}
  for c = 1, C do means[c], scales[c] = sum[c] / size[c], math.sqrt(size[c] / sq[c]) end
  for n = 0, N - 1 do for c = 1, C do y[n * C + c] = (x[n * C + c] - means[c]) * scales[c] end end

  it("Y, Means and Scales from the summaries, float64 and float32", function()
    for _, dt in ipairs({ "float64", "float32" }) do
      T.check_output{ type = "data_norm", dtype = dt, atol = 1e-5, inputs = inputs(dt),
        outputs = { Y = 1, Means = 1, Scales = 1 },
        expect = { Y = { shape = { N, C }, data = y }, Means = { shape = { C }, data = means },
                   Scales = { shape = { C }, data = scales } } }
    end
  end)

  it("X@GRAD against finite differences; the summaries' gradients are the batch statistics", function()
    T.check_grad{ type = "data_norm", dtype = "float64", inputs = inputs("float64"),
      outputs = { Y = 1, Means = 1, Scales = 1 }, wrt = { "X" }, of = { "Y" }, delta = 1e-5, max_rel = 1e-7 }
    local g = T.analytic_grads{ type = "data_norm", dtype = "float64", inputs = inputs("float64"),
      outputs = { Y = 1, Means = 1, Scales = 1 }, wrt = { "BatchSize", "BatchSum", "BatchSquareSum" }, of = { "Y" } }
    local s, q = {}, {}
    for c = 1, C do
      s[c], q[c] = 0, 0
      for n = 0, N - 1 do
        s[c] = s[c] + x[n * C + c]
        q[c] = q[c] + (x[n * C + c] - means[c]) ^ 2
      end
      q[c] = q[c] + N * tonumber(require("ffi").new("float", 1e-4))
    end
    T.assert_close(g[1], { shape = { C }, data = { N, N, N } }, 1e-12)
    T.assert_close(g[2], { shape = { C }, data = s }, 1e-12)
    T.assert_close(g[3], { shape = { C }, data = q }, 1e-12)
  end)

  it("slot_dim (TestDataNormOpWithSlotDim): a slot whose show is 0 gives 0 and counts nowhere", function()
    -- 4 samples, 2 slots of 2 columns; sample 1 hides slot 0, samples 2 and 3 hide slot 1
    local sx = { 1.5, -0.5, 2, 0.25,
                 0, 0.75, -1, 0.5,
                 0.5, 1, 0, -2,
                 2.5, 0.125, 0, 3 }
    local sz, ss, sq2 = { 10, 20, 30, 40 }, { 5, -4, 6, 8 }, { 40, 50, 60, 70 }
    local function ins(dt)
      return { X = T.tensor(sx, { shape = { 4, 4 }, dtype = dt }), BatchSize = T.tensor(sz, { dtype = dt }),
               BatchSum = T.tensor(ss, { dtype = dt }), BatchSquareSum = T.tensor(sq2, { dtype = dt }) }
    end
    local m, sc, want = {}, {}, {}
    for c = 1, 4 do m[c], sc[c] = ss[c] / sz[c], math.sqrt(sz[c] / sq2[c]) end
    local function hidden(n, c) return sx[n * 4 + (c - 1) - (c - 1) % 2 + 1] == 0 end
    for n = 0, 3 do
      for c = 1, 4 do want[n * 4 + c] = hidden(n, c) and 0 or (sx[n * 4 + c] - m[c]) * sc[c] end
    end
    T.check_output{ type = "data_norm", dtype = "float64", inputs = ins("float64"), attrs = { slot_dim = 2 },
      outputs = { Y = 1, Means = 1, Scales = 1 }, expect = { Y = { shape = { 4, 4 }, data = want } } }
    local g = T.analytic_grads{ type = "data_norm", dtype = "float64", inputs = ins("float64"), attrs = { slot_dim = 2 },
      outputs = { Y = 1, Means = 1, Scales = 1 }, wrt = { "X", "BatchSize", "BatchSum", "BatchSquareSum" }, of = { "Y" } }
    local eps = tonumber(require("ffi").new("float", 1e-4))
    local gs, gsum, gsq = {}, {}, {}
    for c = 1, 4 do
      local cnt, s, q = 0, 0, 0
      for n = 0, 3 do
        if not hidden(n, c) then
          cnt, s, q = cnt + 1, s + sx[n * 4 + c], q + (sx[n * 4 + c] - m[c]) ^ 2
        end
      end
      gs[c], gsum[c], gsq[c] = 1, s / cnt, q / cnt + cnt * eps
    end
    T.assert_close(g[2], { data = gs }, 1e-12)
    T.assert_close(g[3], { data = gsum }, 1e-12)
    T.assert_close(g[4], { data = gsq }, 1e-12)
    -- X@GRAD = Y@GRAD Scales everywhere (Fluid's rule, hidden slots too): the loss is mean(Y)
    local dx = {}
    for n = 0, 3 do for c = 1, 4 do dx[n * 4 + c] = sc[c] / 16 end end
    T.assert_close(g[1], { data = dx }, 1e-12)
  end)

  it("slot_dim must divide C, epsilon is bounded, and X must be 2-D", function()
    fails({ type = "data_norm", inputs = inputs("float32"), attrs = { slot_dim = 2 },
            outputs = { Y = 1, Means = 1, Scales = 1 } }, "not a whole number of slots of slot_dim = 2")
    fails({ type = "data_norm", inputs = inputs("float32"), attrs = { epsilon = 0.5 },
            outputs = { Y = 1, Means = 1, Scales = 1 } }, "epsilon")
    local bad = inputs("float32")
    bad.X = T.tensor(R.symmetric(2 * C * 2), { shape = { 2, C, 2 } })
    fails({ type = "data_norm", inputs = bad, outputs = { Y = 1, Means = 1, Scales = 1 } }, "must be 2-D [N, C], it has rank 3")
  end)
end)

describe("layers.spectral_norm / layers.data_norm", function()
  local oar = require("oar")
  local layers = oar.layers

  it("spectral_norm: U and V are non-trainable parameters; Out = W / sigma from them", function()
    local main, startup = oar.Program(), oar.Program()
    local out, op
    oar.program_guard(main, startup, function()
      local w = layers.data{ name = "w", shape = { 3, 4, 2 }, dtype = "float64", append_batch_size = false }
      out = layers.spectral_norm{ weight = w, dim = 1, power_iters = 3 }
    end)
    op = main:global_block():ops()[1]
    assert.equal(3, op:attr("power_iters"))
    local scope = oar.Scope()
    local exe = oar.Executor(oar.CPUPlace())
    local wv = R.symmetric(24, 157)
    local t = oar.Tensor{ shape = { 3, 4, 2 }, dtype = "float64" }
    for i = 1, 24 do t:data()[i - 1] = wv[i] end
    local got
    oar.scope_guard(scope, function()
      exe:run(startup)
      got = exe:run(main, { feed = { w = t }, fetch_list = { out } })[1]
    end)
    local function vals(name, n)
      local tt = scope:find_var(name):get_tensor()
      local r = {}
      for i = 1, n do r[i] = tt:data()[i - 1] end
      return r
    end
    local u, v = vals(op:input("U")[1], 4), vals(op:input("V")[1], 6)
    local want = spectral_ref(wv, { 3, 4, 2 }, u, v, 1, 3, 1e-12)
    local flat = {}
    for i = 1, 24 do flat[i] = got:data()[i - 1] end
    T.assert_close({ data = flat, shape = got:shape() }, { data = want, shape = { 3, 4, 2 } }, 1e-10)
    assert.is_false(main:global_block():var(op:input("U")[1]).trainable)
  end)

  it("data_norm: named summaries with their start values, act applied", function()
    local main, startup = oar.Program(), oar.Program()
    local out
    oar.program_guard(main, startup, function()
      local x = layers.data{ name = "x", shape = { 3 }, dtype = "float64" }
      out = layers.data_norm{ input = x, name = "dn", act = "relu",
                              param_attr = { batch_size = 4, batch_sum = 2, batch_square = 16 } }
    end)
    local xv = R.symmetric(6, 163, 2)
    local t = oar.Tensor{ shape = { 2, 3 }, dtype = "float64" }
    for i = 1, 6 do t:data()[i - 1] = xv[i] end
    local exe = oar.Executor(oar.CPUPlace())
    exe:run(startup)
    local got = exe:run(main, { feed = { x = t }, fetch_list = { out } })[1]
    -- mean 2 / 4, scale sqrt(4 / 16)
    for i = 1, 6 do assert.near(math.max((xv[i] - 0.5) * 0.5, 0), got:data()[i - 1], 1e-12) end
    assert.is_not_nil(main:global_block():var("dn.batch_square_sum"))
  end)

  it("reject bad arguments with the layer's name", function()
    oar.program_guard(oar.Program(), oar.Program(), function()
      local x = layers.data{ name = "x", shape = { 3, 4 }, dtype = "float32" }
      assert.has_error(function() layers.data_norm{ input = x } end,
        "data_norm: 'input' must be 2-D [N, C], got shape [-1, 3, 4]")
      assert.has_error(function() layers.spectral_norm{ weight = x, dim = 3 } end,
        "spectral_norm: 'dim' must be a dim of weight (0 to 2), got number 3")
    end)
  end)
end)
