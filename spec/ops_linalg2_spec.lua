-- cos_sim, dist, norm, frobenius_norm, allclose, bilinear_tensor_product:
-- the cases of Paddle's test_cos_sim_op.py, test_dist_op.py,
-- test_norm_op.py, test_norm_all.py (frobenius), test_allclose_op.py and
-- test_bilinear_tensor_product_op.py (shapes reduced where the finite
-- differences would be slow), expected values from plain-Lua references,
-- gradients against finite differences in float64; and the layers.
local ffi = require("ffi")
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")

local function numel(shape)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  return n
end

local function expect_error(spec, ...)
  local ok, err = pcall(T.run, spec)
  assert.is_false(ok)
  for _, pat in ipairs({ ... }) do assert.matches(pat, err) end
end

describe("cos_sim (test_cos_sim_op.py)", function()
  -- rows of X against rows of Y (Y's one row when it has one)
  local function ref(x, y, n, d, yrows)
    local out, xn, yn = {}, {}, {}
    for r = 0, yrows - 1 do
      local s = 0
      for j = 1, d do s = s + y[r * d + j] ^ 2 end
      yn[r + 1] = math.sqrt(s)
    end
    for i = 0, n - 1 do
      local s, p, yr = 0, 0, yrows == 1 and 0 or i
      for j = 1, d do
        s = s + x[i * d + j] ^ 2
        p = p + x[i * d + j] * y[yr * d + j]
      end
      xn[i + 1] = math.sqrt(s)
      out[i + 1] = p / (xn[i + 1] * yn[yr + 1])
    end
    return out, xn, yn
  end
  local cases = {
    { { 10, 5 }, { 10, 5 } },        -- TestCosSimOp
    { { 10, 5 }, { 1, 5 } },         -- TestCosSimOp2: Y broadcast
    { { 6, 5, 2 }, { 6, 5, 2 } },    -- TestCosSimOp3 (10 rows in Fluid)
    { { 6, 5, 2 }, { 1, 5, 2 } },    -- TestCosSimOp4
  }
  for ci, c in ipairs(cases) do
    local xs, ys = c[1], c[2]
    it(("X [%s], Y [%s]: values and gradients"):format(table.concat(xs, ", "), table.concat(ys, ", ")), function()
      local n, d = xs[1], numel(xs) / xs[1]
      local x, y = R.uniform(numel(xs), 40 + ci, 0.1, 1), R.uniform(numel(ys), 50 + ci, 0.1, 1)
      local out, xn, yn = ref(x, y, n, d, ys[1])
      local inputs = { X = T.tensor(x, { shape = xs }), Y = T.tensor(y, { shape = ys }) }
      local want = { Out = { shape = { n, 1 }, data = out }, XNorm = { shape = { n, 1 }, data = xn },
                     YNorm = { shape = { ys[1], 1 }, data = yn } }
      T.check_output{ type = "cos_sim", inputs = inputs, expect = want, atol = 1e-12 }
      T.check_output{ type = "cos_sim", dtype = "float32", inputs = inputs, expect = want, atol = 1e-5 }
      T.check_grad{ type = "cos_sim", inputs = inputs, wrt = { "X", "Y" } }
      T.check_grad{ type = "cos_sim", inputs = inputs, wrt = { "X" }, no_grad = { "Y" } }
      T.check_grad{ type = "cos_sim", inputs = inputs, wrt = { "Y" }, no_grad = { "X" } }
    end)
  end
  it("refuses Y of another width or row count, naming the op and the variable", function()
    expect_error({ type = "cos_sim", inputs = { X = T.tensor(R.uniform(6), { shape = { 2, 3 } }),
                                                Y = T.tensor(R.uniform(4), { shape = { 2, 2 } }) } },
                 "cos_sim", "in_Y_1")
    expect_error({ type = "cos_sim", inputs = { X = T.tensor(R.uniform(6), { shape = { 2, 3 } }),
                                                Y = T.tensor(R.uniform(9), { shape = { 3, 3 } }) } },
                 "cos_sim", "one row")
  end)
end)

describe("dist (test_dist_op.py)", function()
  -- numpy broadcasting of x [xs] and y [ys] (right-aligned), then the p-norm of x - y
  local function ref(x, xs, y, ys, p)
    local nd = math.max(#xs, #ys)
    local xp, yp, o = {}, {}, {}
    for i = 1, nd do
      xp[i] = xs[i - (nd - #xs)] or 1
      yp[i] = ys[i - (nd - #ys)] or 1
      o[i] = math.max(xp[i], yp[i])
    end
    local total = numel(o)
    local r = p == -math.huge and math.huge or 0
    for lin = 0, total - 1 do
      local rem, xo, yo, xst, yst = lin, 0, 0, 1, 1
      for i = nd, 1, -1 do
        local idx = rem % o[i]
        rem = (rem - idx) / o[i]
        if xp[i] > 1 then xo = xo + idx * xst end
        if yp[i] > 1 then yo = yo + idx * yst end
        xst, yst = xst * xp[i], yst * yp[i]
      end
      local z = math.abs(x[xo + 1] - y[yo + 1])
      if p == 0 then r = r + (z ~= 0 and 1 or 0)
      elseif p == math.huge then r = math.max(r, z)
      elseif p == -math.huge then r = math.min(r, z)
      else r = r + z ^ p end
    end
    if p ~= 0 and p ~= math.huge and p ~= -math.huge then r = r ^ (1 / p) end
    return r
  end
  local cases = {
    { { 2, 3, 4, 5 }, { 3, 1, 5 }, 2.0 },   -- TestDistOp
    { { 3, 1 }, { 2 }, 1.0 },               -- TestDistOpCase1
    { { 3, 4, 2 }, { 4, 2 }, 0 },           -- TestDistOpCase2 (p = 0)
    { { 4, 2 }, { 3, 4, 2 }, math.huge },   -- TestDistOpCase3 (p = inf)
    { { 3, 2, 1 }, { 2, 3 }, -math.huge },  -- TestDistOpCase4 (p = -inf)
    { { 2, 3 }, { 1, 3 }, 1.5 },            -- TestDistOpCase5 (p = 1.5)
  }
  for ci, c in ipairs(cases) do
    local xs, ys, p = c[1], c[2], c[3]
    it(("X [%s], Y [%s], p = %s"):format(table.concat(xs, ", "), table.concat(ys, ", "), tostring(p)), function()
      local x, y = R.uniform(numel(xs), 60 + ci, -1, 1), R.uniform(numel(ys), 70 + ci, -1, 1)
      if p == 0 then x[1], y[1] = 0.5, 0.5 end   -- one zero difference to skip (broadcast position 0)
      local inputs = { X = T.tensor(x, { shape = xs }), Y = T.tensor(y, { shape = ys }) }
      local want = { Out = { shape = { 1 }, data = { ref(x, xs, y, ys, p) } } }
      T.check_output{ type = "dist", inputs = inputs, attrs = { p = p }, expect = want, atol = 1e-12 }
      T.check_output{ type = "dist", dtype = "float32", inputs = inputs, attrs = { p = p }, expect = want,
                      atol = 1e-4, rtol = 1e-5 }
      if p == 0 then
        local g = T.analytic_grads{ type = "dist", inputs = inputs, attrs = { p = p }, wrt = { "X", "Y" } }
        for _, v in ipairs(g[1].data) do assert.equal(0, v) end
      else
        T.check_grad{ type = "dist", inputs = inputs, attrs = { p = p }, wrt = { "X", "Y" }, delta = 1e-4 }
      end
    end)
  end
  it("Out = 0 has a zero gradient, not nan", function()
    local inputs = { X = T.tensor({ 1, 2, 3 }), Y = T.tensor({ 1, 2, 3 }) }
    local g = T.analytic_grads{ type = "dist", inputs = inputs, wrt = { "X" } }
    assert.same({ 0, 0, 0 }, g[1].data)
  end)
  it("refuses shapes that do not broadcast", function()
    expect_error({ type = "dist", inputs = { X = T.tensor(R.uniform(6), { shape = { 2, 3 } }),
                                             Y = T.tensor(R.uniform(2), { shape = { 2 } }) } }, "dist", "in_X_1",
                 "broadcast")
  end)
end)

describe("norm (test_norm_op.py)", function()
  local function ref(x, shape, axis, eps)
    if axis < 0 then axis = axis + #shape end
    local pre, n, post = 1, shape[axis + 1], 1
    for i = 1, axis do pre = pre * shape[i] end
    for i = axis + 2, #shape do post = post * shape[i] end
    local out, norm = {}, {}
    for i = 0, pre - 1 do
      for j = 0, post - 1 do
        local s = 0
        for t = 0, n - 1 do s = s + x[i * n * post + t * post + j + 1] ^ 2 end
        local nr = math.sqrt(s + eps)
        norm[i * post + j + 1] = nr
        for t = 0, n - 1 do
          local o = i * n * post + t * post + j + 1
          out[o] = x[o] / nr
        end
      end
    end
    return out, norm
  end
  local cases = {
    { { 2, 3, 4, 5 }, 1, 1e-8 },   -- TestNormOp
    { { 5, 3, 3, 2 }, 0, 1e-8 },   -- TestNormOp2 ([5, 3, 9, 7] in Fluid)
    { { 5, 3, 2, 7 }, -1, 1e-8 },  -- TestNormOp3
    { { 4, 6 }, 1, 1e-10 },        -- the default epsilon
  }
  for ci, c in ipairs(cases) do
    local shape, axis, eps = c[1], c[2], c[3]
    it(("X [%s], axis %d"):format(table.concat(shape, ", "), axis), function()
      local x = R.uniform(numel(shape), 80 + ci, -1, 1)
      local out, norm = ref(x, shape, axis, eps)
      local nshape = {}
      for i, d in ipairs(shape) do nshape[i] = d end
      nshape[(axis < 0 and axis + #shape or axis) + 1] = 1
      local inputs = { X = T.tensor(x, { shape = shape }) }
      local attrs = { axis = axis, epsilon = eps }
      local want = { Out = { shape = shape, data = out }, Norm = { shape = nshape, data = norm } }
      local outs = { Out = 1, Norm = 1 }   -- Norm is dispensable (Paddle 2.x's is_test drops it)
      T.check_output{ type = "norm", inputs = inputs, attrs = attrs, outputs = outs, expect = want, atol = 1e-12 }
      T.check_output{ type = "norm", dtype = "float32", inputs = inputs, attrs = attrs, outputs = outs, expect = want,
                      atol = 1e-5 }
      T.check_output{ type = "norm", inputs = inputs, attrs = attrs, expect = { Out = want.Out }, atol = 1e-12 }
      T.check_grad{ type = "norm", inputs = inputs, attrs = attrs, outputs = outs, wrt = { "X" } }
    end)
  end
  it("needs axis, and refuses one out of range", function()
    expect_error({ type = "norm", inputs = { X = T.tensor(R.uniform(6), { shape = { 2, 3 } }) } }, "norm", "axis")
    expect_error({ type = "norm", inputs = { X = T.tensor(R.uniform(6), { shape = { 2, 3 } }) }, attrs = { axis = 2 } },
                 "norm", "axis", "in_X_1")
  end)
end)

describe("frobenius_norm (test_norm_all.py)", function()
  -- sqrt(sum x^2) over the axes in mask; out in the order of the kept axes
  local function ref(x, shape, mask)
    local kept = {}
    for i = 1, #shape do if not mask[i] then kept[#kept + 1] = i end end
    local out = {}
    for lin = 0, #x - 1 do
      local rem, idx = lin, {}
      for i = #shape, 1, -1 do
        idx[i] = rem % shape[i]
        rem = (rem - idx[i]) / shape[i]
      end
      local o = 0
      for _, i in ipairs(kept) do o = o * shape[i] + idx[i] end
      out[o + 1] = (out[o + 1] or 0) + x[lin + 1] ^ 2
    end
    for i = 1, #out do out[i] = math.sqrt(out[i]) end
    return out
  end
  local cases = {
    -- shape, dim, keep_dim, reduce_all, out shape
    { { 2, 3, 4, 5 }, { 1, 2 }, false, false, { 2, 5 } },   -- TestFrobeniusNormOp
    { { 5, 5, 5 }, { 0, 1 }, true, false, { 1, 1, 5 } },     -- TestFrobeniusNormOp2
    { { 3, 4 }, { -1 }, false, false, { 3 } },
    { { 2, 3, 2 }, { 0 }, false, true, { 1 } },               -- reduce_all ignores dim
    { { 4, 3 }, {}, false, false, { 3 } },                    -- empty dim is {0}
  }
  for ci, c in ipairs(cases) do
    local shape, dim, keep, all, oshape = c[1], c[2], c[3], c[4], c[5]
    it(("X [%s], dim {%s}, keep_dim %s, reduce_all %s"):format(table.concat(shape, ", "), table.concat(dim, ", "),
      tostring(keep), tostring(all)), function()
      local x = R.uniform(numel(shape), 90 + ci, -1, 1)
      local mask = {}
      for i = 1, #shape do mask[i] = all end
      for _, d in ipairs(#dim > 0 and dim or { 0 }) do mask[(d < 0 and d + #shape or d) + 1] = true end
      local inputs = { X = T.tensor(x, { shape = shape }) }
      local attrs = { dim = dim, keep_dim = keep, reduce_all = all }
      local want = { Out = { shape = oshape, data = ref(x, shape, mask) } }
      T.check_output{ type = "frobenius_norm", inputs = inputs, attrs = attrs, expect = want, atol = 1e-12 }
      T.check_output{ type = "frobenius_norm", dtype = "float32", inputs = inputs, attrs = attrs, expect = want,
                      atol = 1e-5 }
      T.check_grad{ type = "frobenius_norm", inputs = inputs, attrs = attrs, wrt = { "X" } }
    end)
  end
  it("refuses a dim out of range", function()
    expect_error({ type = "frobenius_norm", inputs = { X = T.tensor(R.uniform(6), { shape = { 2, 3 } }) },
                   attrs = { dim = { 2 } } }, "frobenius_norm", "dim", "in_X_1")
  end)
end)

describe("allclose (test_allclose_op.py)", function()
  local nan = 0 / 0
  local function f32(v) return ffi.new("float[1]", v)[0] end
  -- numpy.allclose on values already in the kernel's dtype
  local function ref(a, b, rtol, atol, equal_nan)
    for i = 1, #a do
      local p, q = a[i], b[i]
      if p ~= p or q ~= q then
        if not (equal_nan and p ~= p and q ~= q) then return false end
      elseif not (p == q or math.abs(p - q) <= atol + rtol * math.abs(q)) then
        return false
      end
    end
    return true
  end
  local cases = {
    { "TestAllcloseOp", { 10000, 1e-07 }, { 10000.1, 1e-08 }, 1e-5, 1e-8, false },
    { "TestAllcloseOpSmallNum", { 10000, 1e-08 }, { 10000.1, 1e-09 }, 1e-5, 1e-8, false },
    { "TestAllcloseOpNanFalse", { 1.0, nan }, { 1.0, nan }, 1e-5, 1e-8, false },
    { "TestAllcloseOpNanTrue", { 1.0, nan }, { 1.0, nan }, 1e-5, 1e-8, true },
    { "one nan", { 1.0, nan }, { 1.0, 2.0 }, 1e-5, 1e-8, true },
    { "looser tolerances", { 1.0, 2.0 }, { 1.05, 2.1 }, 0.01, 0.05, false },
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      local attrs = { rtol = c[4], atol = c[5], equal_nan = c[6] }
      for _, dt in ipairs({ "float64", "float32" }) do
        local a, b = c[2], c[3]
        local ra, rb, rrtol, ratol = a, b, c[4], c[5]
        if dt == "float32" then
          ra, rb = {}, {}
          for i = 1, #a do ra[i], rb[i] = f32(a[i]), f32(b[i]) end
          rrtol, ratol = f32(c[4]), f32(c[5])
        end
        local inputs = { Input = T.tensor(a, { shape = { #a } }), Other = T.tensor(b, { shape = { #b } }) }
        T.check_output{ type = "allclose", dtype = dt, inputs = inputs, attrs = attrs,
                        expect = { Out = { shape = { 1 }, data = { ref(ra, rb, rrtol, ratol, c[6]) } } } }
      end
    end)
  end
  it("TestAllcloseOp's values give false, the small numbers true", function()
    local r = T.run{ type = "allclose", inputs = { Input = T.tensor({ 10000, 1e-07 }), Other = T.tensor({ 10000.1, 1e-08 }) } }
    assert.same({ false }, r.Out[1].data)
    r = T.run{ type = "allclose", inputs = { Input = T.tensor({ 10000, 1e-08 }), Other = T.tensor({ 10000.1, 1e-09 }) } }
    assert.same({ true }, r.Out[1].data)
  end)
  it("refuses Other of another shape", function()
    expect_error({ type = "allclose", inputs = { Input = T.tensor(R.uniform(6), { shape = { 2, 3 } }),
                                                 Other = T.tensor(R.uniform(6), { shape = { 3, 2 } }) } },
                 "allclose", "in_Other_1")
  end)
end)

describe("bilinear_tensor_product (test_bilinear_tensor_product_op.py)", function()
  local function ref(x, y, w, bias, B, M, N, K)
    local out = {}
    for b = 0, B - 1 do
      for k = 0, K - 1 do
        local s = bias and bias[k + 1] or 0
        for i = 0, M - 1 do
          for j = 0, N - 1 do s = s + x[b * M + i + 1] * w[k * M * N + i * N + j + 1] * y[b * N + j + 1] end
        end
        out[b * K + k + 1] = s
      end
    end
    return out
  end
  local B, M, N, K = 6, 5, 4, 5
  local x, y = R.uniform(B * M, 101, 0, 1), R.uniform(B * N, 102, 0, 1)
  local w, bias = R.uniform(K * M * N, 103, 0, 1), R.uniform(K, 104, 0, 1)
  local function inputs(with_bias)
    local t = { X = T.tensor(x, { shape = { B, M } }), Y = T.tensor(y, { shape = { B, N } }),
                Weight = T.tensor(w, { shape = { K, M, N } }) }
    if with_bias then t.Bias = T.tensor(bias, { shape = { 1, K } }) end
    return t
  end
  it("with Bias: values and gradients of X, Y, Weight and Bias", function()
    local want = { Out = { shape = { B, K }, data = ref(x, y, w, bias, B, M, N, K) } }
    T.check_output{ type = "bilinear_tensor_product", inputs = inputs(true), expect = want, atol = 1e-12 }
    T.check_output{ type = "bilinear_tensor_product", dtype = "float32", inputs = inputs(true), expect = want,
                    atol = 1e-5 }
    T.check_grad{ type = "bilinear_tensor_product", inputs = inputs(true), wrt = { "X", "Y", "Weight", "Bias" } }
  end)
  it("without Bias; one gradient at a time", function()
    local want = { Out = { shape = { B, K }, data = ref(x, y, w, nil, B, M, N, K) } }
    T.check_output{ type = "bilinear_tensor_product", inputs = inputs(false), expect = want, atol = 1e-12 }
    T.check_grad{ type = "bilinear_tensor_product", inputs = inputs(false), wrt = { "Weight" }, no_grad = { "X", "Y" } }
    T.check_grad{ type = "bilinear_tensor_product", inputs = inputs(false), wrt = { "Y" }, no_grad = { "X", "Weight" } }
  end)
  it("refuses a Weight that does not fit X and Y", function()
    local t = inputs(false)
    t.Weight = T.tensor(R.uniform(K * N * M), { shape = { K, N, M } })
    expect_error({ type = "bilinear_tensor_product", inputs = t }, "bilinear_tensor_product", "in_Weight_1")
  end)
end)

describe("the layers", function()
  local oar = require("oar")
  local A = require("spec.helpers.api")
  local layers = oar.layers
  local function flat(t, out)
    out = out or {}
    if type(t) ~= "table" then out[#out + 1] = t; return out end
    for _, v in ipairs(t) do flat(v, out) end
    return out
  end
  it("cos_sim, dist, l2_normalize, frobenius_norm, allclose", function()
    local main, startup, out = A.build(function()
      local a = layers.data{ name = "a", shape = { 2, 2 }, append_batch_size = false }
      local b = layers.data{ name = "b", shape = { 1, 2 }, append_batch_size = false }
      return { layers.cos_sim{ X = a, Y = b }, layers.dist{ x = a, y = b, p = 1 },
               layers.l2_normalize{ x = a, axis = 1 }, layers.frobenius_norm(a),
               layers.allclose{ x = a, y = a }, layers.frobenius_norm{ input = a, dim = 1, keep_dim = true } }
    end)
    assert.equal("bool", out[5].dtype)
    local got = A.run(main, startup, { a = { { 3, 4 }, { 0, 2 } }, b = { { 1, 0 } } }, out)
    A.near({ 0.6, 0 }, flat(got[1]:totable()), 1e-6)
    A.near({ 2 + 4 + 1 + 2 }, flat(got[2]:totable()), 1e-6)
    A.near({ 0.6, 0.8, 0, 1 }, flat(got[3]:totable()), 1e-5)
    A.near({ math.sqrt(29) }, flat(got[4]:totable()), 1e-5)
    assert.same({ true }, got[5]:totable())
    A.near({ 5, 2 }, flat(got[6]:totable()), 1e-5)
  end)
  it("bilinear_tensor_product creates Weight [size, M, N] and Bias [1, size] and trains", function()
    local main, startup, out = A.build(function()
      local a = layers.data{ name = "a", shape = { 3 }, dtype = "float32" }
      local b = layers.data{ name = "b", shape = { 2 }, dtype = "float32" }
      local h = layers.bilinear_tensor_product{ x = a, y = b, size = 4, act = "tanh",
                                                param_attr = { name = "btp_w" }, bias_attr = { name = "btp_b" } }
      local loss = layers.mean(h)
      oar.optimizer.SGD{ learning_rate = 0.1 }:minimize(loss)
      return { h, loss }
    end)
    local w = main:global_block():var("btp_w")
    assert.same({ 4, 3, 2 }, w.shape)
    assert.same({ 1, 4 }, main:global_block():var("btp_b").shape)
    local types = A.op_types(main:global_block())
    assert.is_true(A.contains(types, "bilinear_tensor_product"))
    assert.is_true(A.contains(types, "bilinear_tensor_product_grad"))
    assert.is_true(A.contains(types, "tanh"))
    local got = A.run(main, startup, { a = { { 1, 2, 3 }, { 0.5, 0, 1 } }, b = { { 1, -1 }, { 2, 0 } } }, out)
    assert.same({ 2, 4 }, { #got[1]:totable(), #got[1]:totable()[1] })
  end)
  it("bad arguments name the layer", function()
    local err = A.errmsg(function()
      A.build(function()
        local a = layers.data{ name = "a", shape = { 3 } }
        return { layers.l2_normalize{ x = a, axes = 1 } }
      end)
    end)
    assert.matches("l2_normalize", err)
    err = A.errmsg(function()
      A.build(function() return { layers.bilinear_tensor_product{ x = 1, y = 2, size = 3 } } end)
    end)
    assert.matches("bilinear_tensor_product", err)
  end)
end)
