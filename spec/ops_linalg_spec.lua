-- bmm, dot, addmm: the cases of Paddle's test_bmm_op.py, test_dot_op.py and
-- test_addmm_op.py (shapes reduced where the finite differences would be
-- slow), expected values from plain-Lua references, gradients against
-- finite differences in float64; and the layers.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")

local numel = require("spec.helpers.index").numel

-- C[M, N] = A[M, K] B[K, N], flat row-major from offsets ao, bo
local function mm(a, ao, b, bo, M, K, N)
  local c = {}
  for i = 0, M - 1 do
    for j = 0, N - 1 do
      local s = 0
      for p = 0, K - 1 do s = s + a[ao + i * K + p + 1] * b[bo + p * N + j + 1] end
      c[i * N + j + 1] = s
    end
  end
  return c
end

describe("bmm (test_bmm_op.py)", function()
  local B, M, K, N = 10, 3, 4, 5
  local x, y = R.uniform(B * M * K, 1, 0, 1), R.uniform(B * K * N, 2, 0, 1)
  local inputs = { X = T.tensor(x, { shape = { B, M, K } }), Y = T.tensor(y, { shape = { B, K, N } }) }
  it("Out[b] = X[b] Y[b]", function()
    local want = {}
    for b = 0, B - 1 do
      for _, v in ipairs(mm(x, b * M * K, y, b * K * N, M, K, N)) do want[#want + 1] = v end
    end
    T.check_output{ type = "bmm", inputs = inputs, expect = { Out = { shape = { B, M, N }, data = want } }, atol = 1e-12 }
    T.check_output{ type = "bmm", dtype = "float32", inputs = inputs,
                    expect = { Out = { shape = { B, M, N }, data = want } }, atol = 1e-5 }
  end)
  it("has the gradient of X and Y", function()
    T.check_grad{ type = "bmm", inputs = inputs, wrt = { "X", "Y" } }
  end)
  it("refuses a batch mismatch and a 2-D input, naming the op and the variable", function()
    local ok, err = pcall(T.run, { type = "bmm", inputs = { X = T.tensor(x, { shape = { B, M, K } }),
                                                            Y = T.tensor(R.uniform(4 * K * N), { shape = { 4, K, N } }) } })
    assert.is_false(ok)
    assert.matches("bmm", err)
    assert.matches("in_X_1", err)
    ok, err = pcall(T.run, { type = "bmm", inputs = { X = T.tensor(x, { shape = { B * M, K } }), Y = inputs.Y } })
    assert.is_false(ok)
    assert.matches("must be 3%-D", err)
  end)
end)

describe("dot (test_dot_op.py)", function()
  local function ref(x, y, rows, n)
    local out = {}
    for r = 0, rows - 1 do
      local s = 0
      for j = 1, n do s = s + x[r * n + j] * y[r * n + j] end
      out[r + 1] = s
    end
    return out
  end
  it("1-D [121] -> [1], with gradients", function()
    local x, y = R.uniform(121, 3, 0.1, 1), R.uniform(121, 4, 0.1, 1)
    local inputs = { X = T.tensor(x, { shape = { 121 } }), Y = T.tensor(y, { shape = { 121 } }) }
    T.check_output{ type = "dot", inputs = inputs, expect = { Out = { shape = { 1 }, data = ref(x, y, 1, 121) } },
                    atol = 1e-12 }
    T.check_grad{ type = "dot", inputs = inputs, wrt = { "X", "Y" } }
  end)
  it("batched [11, 12] -> [11, 1], float32 and float64, with gradients", function()
    local x, y = R.uniform(132, 5, 0.1, 1), R.uniform(132, 6, 0.1, 1)
    local inputs = { X = T.tensor(x, { shape = { 11, 12 } }), Y = T.tensor(y, { shape = { 11, 12 } }) }
    local want = { shape = { 11, 1 }, data = ref(x, y, 11, 12) }
    T.check_output{ type = "dot", inputs = inputs, expect = { Out = want }, atol = 1e-12 }
    T.check_output{ type = "dot", dtype = "float32", inputs = inputs, expect = { Out = want }, atol = 1e-5 }
    T.check_grad{ type = "dot", inputs = inputs, wrt = { "X", "Y" } }
  end)
  it("int32 and int64", function()
    local x, y = { 1, -2, 3, 4, 5, -6 }, { 7, 8, -9, 1, 2, 3 }
    for _, dt in ipairs({ "int32", "int64" }) do
      T.check_output{ type = "dot", inputs = { X = T.tensor(x, { shape = { 2, 3 }, dtype = dt }),
                                               Y = T.tensor(y, { shape = { 2, 3 }, dtype = dt }) },
                      expect = { Out = { shape = { 2, 1 }, data = ref(x, y, 2, 3) } }, atol = 0 }
    end
  end)
  it("refuses X and Y of different shapes", function()
    local ok, err = pcall(T.run, { type = "dot", inputs = { X = T.tensor(R.uniform(6), { shape = { 2, 3 } }),
                                                            Y = T.tensor(R.uniform(6), { shape = { 3, 2 } }) } })
    assert.is_false(ok)
    assert.matches("dot", err)
    assert.matches("in_Y_1", err)
  end)
end)

describe("addmm (test_addmm_op.py)", function()
  -- {Input shape, M, K, N, Alpha, Beta}
  local cases = {
    { { 10, 1 }, 10, 4, 6, 1.0, 1.0 },      -- TestAddMMOp: Input [M, 1] broadcast
    { { 6, 5 }, 6, 7, 5, 0.1, 1.0 },        -- TestAddMMOp2
    { { 4, 8 }, 4, 3, 8, 0.5, 2.0 },        -- TestAddMMOp3
    { { 1, 6 }, 5, 3, 6, 0.5, 2.0 },        -- TestAddMMOp4: Input [1, N] broadcast
    { { 1, 1 }, 3, 2, 4, 1.5, -0.5 },
  }
  for ci, c in ipairs(cases) do
    local ishape, M, K, N, alpha, beta = c[1], c[2], c[3], c[4], c[5], c[6]
    it(("Input %dx%d, X %dx%d, Y %dx%d, Alpha %g, Beta %g"):format(ishape[1], ishape[2], M, K, K, N, alpha, beta),
      function()
        local iv = R.uniform(numel(ishape), 10 + ci, 0, 1)
        local x, y = R.uniform(M * K, 20 + ci, 0, 1), R.uniform(K * N, 30 + ci, 0, 1)
        local p = mm(x, 0, y, 0, M, K, N)
        local want = {}
        for i = 0, M - 1 do
          for j = 0, N - 1 do
            local ii, jj = ishape[1] == 1 and 0 or i, ishape[2] == 1 and 0 or j
            want[i * N + j + 1] = beta * iv[ii * ishape[2] + jj + 1] + alpha * p[i * N + j + 1]
          end
        end
        local inputs = { Input = T.tensor(iv, { shape = ishape }), X = T.tensor(x, { shape = { M, K } }),
                         Y = T.tensor(y, { shape = { K, N } }) }
        local attrs = { Alpha = alpha, Beta = beta }
        T.check_output{ type = "addmm", inputs = inputs, attrs = attrs,
                        expect = { Out = { shape = { M, N }, data = want } }, atol = 1e-7 }  -- Alpha, Beta are float32 attributes
        T.check_output{ type = "addmm", dtype = "float32", inputs = inputs, attrs = attrs,
                        expect = { Out = { shape = { M, N }, data = want } }, atol = 1e-5 }
        T.check_grad{ type = "addmm", inputs = inputs, attrs = attrs, wrt = { "Input", "X", "Y" } }
      end)
  end
  it("refuses an Input that does not broadcast to [M, N]", function()
    local ok, err = pcall(T.run, { type = "addmm", inputs = {
      Input = T.tensor(R.uniform(6), { shape = { 2, 3 } }), X = T.tensor(R.uniform(12), { shape = { 3, 4 } }),
      Y = T.tensor(R.uniform(20), { shape = { 4, 5 } }) } })
    assert.is_false(ok)
    assert.matches("addmm", err)
    assert.matches("in_Input_1", err)
  end)
end)

describe("layers.bmm, layers.dot, layers.addmm", function()
  local oar = require("oar")
  local A = require("spec.helpers.api")
  local layers = oar.layers
  it("build the ops with Paddle's slots and attributes", function()
    local main, startup, out = A.build(function()
      local a = layers.data{ name = "a", shape = { 2, 2, 3 }, append_batch_size = false }
      local b = layers.data{ name = "b", shape = { 2, 3, 1 }, append_batch_size = false }
      local i = layers.data{ name = "i", shape = { 1, 2 }, append_batch_size = false }
      local m = layers.data{ name = "m", shape = { 2, 2 }, append_batch_size = false }
      local v = layers.data{ name = "v", shape = { 3 }, append_batch_size = false }
      return { layers.bmm{ x = a, y = b }, layers.dot{ x = v, y = v },
               layers.addmm{ input = i, x = m, y = m, alpha = 2, beta = 3 } }
    end)
    assert.same({ 2, 2, 1 }, out[1].shape)
    assert.same({ 1 }, out[2].shape)
    assert.same({ 2, 2 }, out[3].shape)
    local got = A.run(main, startup, { a = { { { 1, 2, 3 }, { 4, 5, 6 } }, { { 1, 0, 0 }, { 0, 1, 0 } } },
                                       b = { { { 1 }, { 1 }, { 1 } }, { { 2 }, { 3 }, { 4 } } },
                                       i = { { 1, 2 } }, m = { { 1, 2 }, { 0, 1 } }, v = { 1, 2, 3 } }, out)
    assert.same({ { { 6 }, { 15 } }, { { 2 }, { 3 } } }, got[1]:totable())
    assert.same({ 14 }, got[2]:totable())
    -- 3 [1 2] + 2 [[1 4] [0 1]]
    assert.same({ { 5, 14 }, { 3, 8 } }, got[3]:totable())
  end)
  it("refuse unknown arguments", function()
    assert.has_error(function() layers.bmm{ x = 1, y = 2, z = 3 } end)
    assert.has_error(function() layers.addmm{ input = 1, x = 2, y = 3, gamma = 1 } end)
  end)
end)

describe("squared_l2_norm and l1_norm (test_squared_l2_norm_op.py, test_l1_norm_op.py)", function()
  -- X [13, 19] in [-1, 1), values near 0 moved off the kink as Paddle's tests do
  local x = R.uniform(13 * 19, 41, -1, 1)
  for i, v in ipairs(x) do if math.abs(v) < 0.03 then x[i] = 0.1 end end
  local inputs = { X = T.tensor(x, { shape = { 13, 19 } }) }
  it("squared_l2_norm: Out = sum X^2, with the gradient", function()
    local s = 0
    for _, v in ipairs(x) do s = s + v * v end
    T.check_output{ type = "squared_l2_norm", inputs = inputs, expect = { Out = { shape = { 1 }, data = { s } } },
                    atol = 1e-10 }
    T.check_output{ type = "squared_l2_norm", dtype = "float32", inputs = inputs,
                    expect = { Out = { shape = { 1 }, data = { s } } }, atol = 1e-3 }
    T.check_grad{ type = "squared_l2_norm", inputs = inputs, wrt = { "X" } }
  end)
  it("l1_norm: Out = sum |X|, with the gradient", function()
    local s = 0
    for _, v in ipairs(x) do s = s + math.abs(v) end
    T.check_output{ type = "l1_norm", inputs = inputs, expect = { Out = { shape = { 1 }, data = { s } } }, atol = 1e-10 }
    T.check_output{ type = "l1_norm", dtype = "float32", inputs = inputs,
                    expect = { Out = { shape = { 1 }, data = { s } } }, atol = 1e-3 }
    T.check_grad{ type = "l1_norm", inputs = inputs, wrt = { "X" } }
  end)
  it("refuse an int input, naming the op and the variable", function()
    local ok, err = pcall(T.run, { type = "l1_norm", inputs = { X = T.tensor({ 1, 2 }, { dtype = "int32" }) } })
    assert.is_false(ok)
    assert.matches("l1_norm", err)
    assert.matches("in_X_1", err)
  end)
end)

describe("squared_l2_distance (test_squared_l2_distance_op.py)", function()
  -- TestSquaredL2DistanceOp_f0, _f1, _f2
  local cases = { { { 2, 3 }, { 2, 3 } }, { { 2, 3 }, { 1, 3 } }, { { 2, 3, 4 }, { 1, 3, 4 } } }
  for ci, c in ipairs(cases) do
    it(("X %s, Y %s"):format(table.concat(c[1], "x"), table.concat(c[2], "x")), function()
      local x, y = R.uniform(numel(c[1]), 50 + ci, 0.1, 0.6), R.uniform(numel(c[2]), 60 + ci, 0.1, 0.6)
      local N = c[1][1]
      local D = numel(c[1]) / N
      local sub, out = {}, {}
      for i = 0, N - 1 do
        local s = 0
        for j = 1, D do
          local d = x[i * D + j] - y[(c[2][1] == 1 and 0 or i * D) + j]
          sub[i * D + j] = d
          s = s + d * d
        end
        out[i + 1] = s
      end
      local inputs = { X = T.tensor(x, { shape = c[1] }), Y = T.tensor(y, { shape = c[2] }) }
      T.check_output{ type = "squared_l2_distance", inputs = inputs, atol = 1e-12,
                      expect = { Out = { shape = { N, 1 }, data = out }, sub_result = { shape = { N, D }, data = sub } } }
      T.check_grad{ type = "squared_l2_distance", inputs = inputs, wrt = { "X", "Y" } }
    end)
  end
  it("refuses a Y of another row count", function()
    local ok, err = pcall(T.run, { type = "squared_l2_distance", inputs = {
      X = T.tensor(R.uniform(6), { shape = { 3, 2 } }), Y = T.tensor(R.uniform(4), { shape = { 2, 2 } }) } })
    assert.is_false(ok)
    assert.matches("squared_l2_distance", err)
  end)
  it("layers.squared_l2_norm, l1_norm, squared_l2_distance build their ops", function()
    local oar = require("oar")
    local A = require("spec.helpers.api")
    local layers = oar.layers
    local main, startup, out = A.build(function()
      local a = layers.data{ name = "a", shape = { 2, 2 }, append_batch_size = false }
      local b = layers.data{ name = "b", shape = { 1, 2 }, append_batch_size = false }
      return { layers.squared_l2_norm(a), layers.l1_norm{ x = a }, (layers.squared_l2_distance{ x = a, y = b }) }
    end)
    local got = A.run(main, startup, { a = { { 1, -2 }, { 3, 4 } }, b = { { 1, 1 } } }, out)
    assert.same({ 30 }, got[1]:totable())
    assert.same({ 10 }, got[2]:totable())
    assert.same({ { 9 }, { 13 } }, got[3]:totable())
    assert.has_error(function() layers.l1_norm{ x = 1, axis = 0 } end)
  end)
end)

describe("minus (test_minus_op.py)", function()
  it("Out = X - Y, with the gradients (two scale ops, as Fluid's)", function()
    local x, y = R.uniform(24, 71, 0.1, 1), R.uniform(24, 72, 0.1, 1)
    local want = {}
    for i = 1, 24 do want[i] = x[i] - y[i] end
    local inputs = { X = T.tensor(x, { shape = { 4, 6 } }), Y = T.tensor(y, { shape = { 4, 6 } }) }
    T.check_output{ type = "minus", inputs = inputs, expect = { Out = { shape = { 4, 6 }, data = want } }, atol = 1e-12 }
    T.check_grad{ type = "minus", inputs = inputs, wrt = { "X", "Y" } }
    T.check_grad{ type = "minus", inputs = inputs, wrt = { "Y" }, no_grad = { "X" } }
  end)
  it("refuses X and Y of different shapes", function()
    local ok, err = pcall(T.run, { type = "minus", inputs = { X = T.tensor(R.uniform(6), { shape = { 2, 3 } }),
                                                              Y = T.tensor(R.uniform(6), { shape = { 3, 2 } }) } })
    assert.is_false(ok)
    assert.matches("minus", err)
  end)
end)

describe("isfinite, isinf, isnan (test_isfinite_op.py)", function()
  local inf, nan = math.huge, 0 / 0
  -- numpy's np.isinf(x).any(), np.isnan(x).any(), np.isfinite(x).all()
  local function ref(x)
    local anyinf, anynan = false, false
    for _, v in ipairs(x) do
      if v == inf or v == -inf then anyinf = true end
      if v ~= v then anynan = true end
    end
    return anyinf, anynan, not anyinf and not anynan
  end
  local base = R.uniform(11 * 17, 81, 0.1, 1)
  local variants = {
    { "finite", function(x) return x end },
    { "x[0] = inf", function(x) x[1] = inf return x end },
    { "x[-1] = nan", function(x) x[#x] = nan return x end },
    { "x[0] = -inf, x[-1] = nan", function(x) x[1] = -inf x[#x] = nan return x end },
  }
  for _, v in ipairs(variants) do
    it(v[1], function()
      local x = v[2]({ unpack(base) })
      local hi, hn, fin = ref(x)
      for _, dt in ipairs({ "float32", "float64" }) do
        local inputs = { X = T.tensor(x, { shape = { 11, 17 }, dtype = dt }) }
        T.check_output{ type = "isinf", inputs = inputs, expect = { Out = { shape = { 1 }, data = { hi } } } }
        T.check_output{ type = "isnan", inputs = inputs, expect = { Out = { shape = { 1 }, data = { hn } } } }
        T.check_output{ type = "isfinite", inputs = inputs, expect = { Out = { shape = { 1 }, data = { fin } } } }
      end
    end)
  end
  it("int64 X is finite", function()
    local inputs = { X = T.tensor({ 1, 2, 3 }, { dtype = "int64" }) }
    T.check_output{ type = "isfinite", inputs = inputs, expect = { Out = { shape = { 1 }, data = { true } } } }
    T.check_output{ type = "isinf", inputs = inputs, expect = { Out = { shape = { 1 }, data = { false } } } }
  end)
  it("layers.isfinite, has_inf, has_nan, minus", function()
    local oar = require("oar")
    local A = require("spec.helpers.api")
    local layers = oar.layers
    local main, startup, out = A.build(function()
      local a = layers.data{ name = "a", shape = { 3 }, append_batch_size = false }
      local b = layers.data{ name = "b", shape = { 3 }, append_batch_size = false }
      return { layers.isfinite(a), layers.has_inf{ x = a }, layers.has_nan(a), layers.minus{ x = b, y = a } }
    end)
    assert.equal("bool", out[1].dtype)
    local got = A.run(main, startup, { a = { 1, inf, 3 }, b = { 2, 2, 2 } }, out)
    assert.same({ false }, got[1]:totable())
    assert.same({ true }, got[2]:totable())
    assert.same({ false }, got[3]:totable())
    assert.same({ 1, -inf, -1 }, got[4]:totable())
    assert.has_error(function() layers.has_nan{ x = 1, y = 2 } end)
  end)
end)
