-- Activations: forward values computed here in plain Lua (float64 and
-- float32), gradients against finite differences, attr handling and errors.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")

local rand_values = R.uniform

-- erf by its Maclaurin series (plenty of terms for |x| <= 4)
local function erf(x)
  local sum, term, n = x, x, 0
  repeat
    n = n + 1
    term = -term * x * x / n
    local add = term / (2 * n + 1)
    sum = sum + add
  until math.abs(add) < 1e-17 * math.max(1, math.abs(sum)) or n > 200
  return 2 / math.sqrt(math.pi) * sum
end

local function tanh(x)
  local e = math.exp(-2 * math.abs(x))
  local t = (1 - e) / (1 + e)
  return x < 0 and -t or t
end

local function sigmoid(x) return 1 / (1 + math.exp(-x)) end

-- FLOAT attrs are stored as float32, so attr values in these cases are
-- exactly representable (0.125, 0.75, ...).
-- name -> {f(x, attrs), domain lo, hi, attrs}
local ACTS = {
  relu = { f = function(x) return x > 0 and x or 0 end },
  sigmoid = { f = sigmoid },
  tanh = { f = tanh },
  exp = { f = math.exp },
  log = { f = function(x) return math.log(x) end, lo = 0.2, hi = 3 },
  sqrt = { f = math.sqrt, lo = 0.2, hi = 3 },
  abs = { f = math.abs },
  square = { f = function(x) return x * x end },
  reciprocal = { f = function(x) return 1 / x end, lo = 0.5, hi = 3 },
  softplus = { f = function(x) return math.log(1 + math.exp(x)) end, lo = -3, hi = 3 },
  leaky_relu = { f = function(x, a) return x > 0 and x or a.alpha * x end, attrs = { alpha = 0.125 } },
  elu = { f = function(x, a) return x > 0 and x or a.alpha * (math.exp(x) - 1) end, attrs = { alpha = 0.75 } },
  gelu = { f = function(x) return 0.5 * x * (1 + erf(x / math.sqrt(2))) end, lo = -3, hi = 3 },
  gelu_tanh = {
    op = "gelu", attrs = { approximate = true }, lo = -3, hi = 3,
    f = function(x) return 0.5 * x * (1 + tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ^ 3))) end,
  },
  pow = { f = function(x, a) return x ^ a.factor end, attrs = { factor = 2.5 }, lo = 0.2, hi = 2 },
  clip = { f = function(x, a) return math.min(math.max(x, a.min), a.max) end, attrs = { min = -0.375, max = 0.5 } },
}

-- keep x away from kinks (0 for relu-like ops, clip bounds) so finite
-- differences do not straddle them
local function away_from_kinks(xs, name, attrs)
  local kinks = { 0 }
  if name == "clip" then kinks = { attrs.min, attrs.max } end
  for i, x in ipairs(xs) do
    for _, k in ipairs(kinks) do
      if math.abs(x - k) < 0.05 then xs[i] = k + 0.1 end
    end
  end
  return xs
end

local function map(f, xs, a)
  local out = {}
  for i, x in ipairs(xs) do out[i] = f(x, a or {}) end
  return out
end

describe("activation forward", function()
  for name, a in pairs(ACTS) do
    for _, dtype in ipairs({ "float64", "float32" }) do
      it(("%s (%s)"):format(name, dtype), function()
        local shape = { 3, 5 }
        local x = rand_values(15, #name, a.lo or -2, a.hi or 2)
        local tol = dtype == "float32" and 2e-6 or 1e-12
        T.check_output{
          type = a.op or name, attrs = a.attrs,
          inputs = { X = T.tensor(x, { shape = shape, dtype = dtype }) },
          expect = { Out = { shape = shape, data = map(a.f, x, a.attrs) } },
          atol = tol, rtol = tol,
        }
      end)
    end
  end

  it("uses the Fluid defaults for leaky_relu (0.02) and elu (1.0)", function()
    local x = { -2, -0.5, 0.5, 3 }
    local a = tonumber(require("ffi").new("float", 0.02))   -- the attr as stored
    T.check_output{
      type = "leaky_relu", inputs = { X = T.tensor(x, { shape = { 4 } }) },
      expect = { Out = { shape = { 4 }, data = { -2 * a, -0.5 * a, 0.5, 3 } } }, atol = 1e-12,
    }
    T.check_output{
      type = "elu", inputs = { X = T.tensor(x, { shape = { 4 } }) },
      expect = { Out = { shape = { 4 }, data = { math.exp(-2) - 1, math.exp(-0.5) - 1, 0.5, 3 } } }, atol = 1e-12,
    }
  end)

  it("softplus does not overflow for large inputs", function()
    T.check_output{
      type = "softplus", inputs = { X = T.tensor({ 800, -800, 0 }, { shape = { 3 } }) },
      expect = { Out = { shape = { 3 }, data = { 800, 0, math.log(2) } } }, atol = 1e-12,
    }
  end)

  it("sigmoid saturates without NaN", function()
    T.check_output{
      type = "sigmoid", dtype = "float32",
      inputs = { X = T.tensor({ 100, -100 }, { shape = { 2 }, dtype = "float32" }) },
      expect = { Out = { shape = { 2 }, data = { 1, 0 } } }, atol = 1e-7,
    }
  end)

  it("pow takes its exponent from FactorTensor when given", function()
    local x = { 0.5, 1.5, 2 }
    T.check_output{
      type = "pow", attrs = { factor = 2 },
      inputs = { X = T.tensor(x, { shape = { 3 } }), FactorTensor = T.tensor({ 3 }, { shape = { 1 }, dtype = "float32" }) },
      expect = { Out = { shape = { 3 }, data = { 0.125, 3.375, 8 } } }, atol = 1e-12,
    }
  end)

  it("keeps X's LoD", function()
    local res = T.run{ type = "relu", inputs = { X = T.tensor({ { -1 }, { 2 }, { 3 } }, { lod = { { 0, 2, 3 } } }) } }
    assert.are.same({ { 0, 2, 3 } }, res.Out[1].lod)
    assert.are.same({ 0, 2, 3 }, res.Out[1].data)
  end)

  it("large inputs (parallel path) match the plain loop", function()
    local n = 70000
    local x = rand_values(n, 9)
    T.check_output{
      type = "tanh", dtype = "float32",
      inputs = { X = T.tensor(x, { shape = { n }, dtype = "float32" }) },
      expect = { Out = { shape = { n }, data = map(tanh, x) } }, atol = 2e-6, rtol = 2e-6,
    }
  end)
end)

describe("activation gradients", function()
  for name, a in pairs(ACTS) do
    it(name .. "_grad", function()
      local x = away_from_kinks(rand_values(12, #name + 3, a.lo or -2, a.hi or 2), name, a.attrs or {})
      T.check_grad{
        type = a.op or name, attrs = a.attrs,
        inputs = { X = T.tensor(x, { shape = { 3, 4 } }) },
        wrt = { "X" },
      }
    end)
  end

  it("pow_grad with FactorTensor uses the tensor's exponent", function()
    T.check_grad{
      type = "pow", attrs = { factor = 1 },
      inputs = { X = T.tensor(rand_values(6, 4, 0.5, 2), { shape = { 2, 3 } }),
                 FactorTensor = T.tensor({ 3 }, { shape = { 1 }, dtype = "float32" }) },
      wrt = { "X" }, no_grad = { "FactorTensor" },
    }
  end)

  -- the grad op of an Out-dependent activation takes Out, not X
  local function grad_op_inputs(optype)
    local ffi = require("ffi")
    local lib = require("oar.lib")
    local C = lib.C
    local p = ffi.new("oar_program_t*[1]")
    assert.are.equal(0, C.oar_program_new(p))
    local prog = ffi.gc(p[0], C.oar_program_free)
    local b = C.oar_program_block(prog, 0)
    local v = ffi.new("oar_var_desc_t*[1]")
    assert.are.equal(0, C.oar_block_var_new(b, "x", v))
    local dims = ffi.new("int64_t[2]", { 2, 3 })
    C.oar_var_desc_set_shape(v[0], dims, 2)
    C.oar_var_desc_set_dtype(v[0], 6)
    T.append_op(b, optype, { X = { "x" } }, { Out = { "y" } }, {})
    T.append_op(b, "mean", { X = { "y" } }, { Out = { "loss" } }, {})
    local grads = ffi.new("char**[1]")
    assert.are.equal(0, C.oar_backward_gradients(prog, lib.cstrings({ "loss" }), 1, nil,
      lib.cstrings({ "x" }), 1, nil, 0, grads), lib.last_error())
    C.oar_strings_free(grads[0], 1)
    for i = 0, C.oar_block_num_ops(b) - 1 do
      local op = C.oar_block_op_at(b, i)
      if ffi.string(C.oar_op_desc_type(op)) == optype .. "_grad" then
        return { X = C.oar_op_desc_input_count(op, "X"), Out = C.oar_op_desc_input_count(op, "Out"),
                 G = C.oar_op_desc_input_count(op, "Out@GRAD") }
      end
    end
    error("no " .. optype .. "_grad op in the backward program")
  end

  it("relu_grad, sigmoid_grad read Out and Out@GRAD only; log_grad reads X", function()
    for _, optype in ipairs({ "relu", "sigmoid", "tanh", "exp", "sqrt", "reciprocal" }) do
      local ins = grad_op_inputs(optype)
      assert.are.same({ X = -1, Out = 1, G = 1 }, ins, optype)
    end
    for _, optype in ipairs({ "log", "abs", "gelu", "softplus" }) do
      local ins = grad_op_inputs(optype)
      assert.are.same({ X = 1, Out = -1, G = 1 }, ins, optype)
    end
  end)
end)

describe("activation errors", function()
  it("clip rejects min > max, naming the op", function()
    local ok, err = pcall(T.run, { type = "clip", attrs = { min = 1, max = -1 }, inputs = { X = T.tensor({ 1, 2 }, { shape = { 2 } }) } })
    assert.is_false(ok)
    assert.truthy(err:find("clip", 1, true), err)
    assert.truthy(err:find("min", 1, true), err)
  end)

  it("clip requires min and max", function()
    local ok, err = pcall(T.run, { type = "clip", attrs = { min = 0 }, inputs = { X = T.tensor({ 1, 2 }, { shape = { 2 } }) } })
    assert.is_false(ok)
    assert.truthy(err:find("max", 1, true), err)
  end)

  it("pow rejects a FactorTensor with more than one value", function()
    local ok, err = pcall(T.run, {
      type = "pow",
      inputs = { X = T.tensor({ 1, 2 }, { shape = { 2 } }), FactorTensor = T.tensor({ 1, 2 }, { shape = { 2 }, dtype = "float32" }) },
    })
    assert.is_false(ok)
    assert.truthy(err:find("pow", 1, true), err)
    assert.truthy(err:find("[2]", 1, true), err)
  end)
end)
