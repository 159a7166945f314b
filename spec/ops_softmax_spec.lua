-- softmax and log_softmax: values computed here in plain Lua along any
-- axis, stability on large inputs, gradients, and errors.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")

local function rand_values(n, seed, scale) return R.symmetric(n, seed, scale or 2) end

local numel = require("spec.helpers.index").numel

-- softmax (or log_softmax) of x of `shape` along axis (0-based, may be negative)
local function ref(x, shape, axis, log)
  if axis < 0 then axis = axis + #shape end
  local pre, n, post = 1, shape[axis + 1], 1
  for i = 1, axis do pre = pre * shape[i] end
  for i = axis + 2, #shape do post = post * shape[i] end
  local out = {}
  for p = 0, pre - 1 do
    for q = 0, post - 1 do
      local function at(j) return p * n * post + j * post + q + 1 end
      local m = -math.huge
      for j = 0, n - 1 do m = math.max(m, x[at(j)]) end
      local s = 0
      for j = 0, n - 1 do s = s + math.exp(x[at(j)] - m) end
      for j = 0, n - 1 do
        out[at(j)] = log and (x[at(j)] - m - math.log(s)) or math.exp(x[at(j)] - m) / s
      end
    end
  end
  return out
end

local CASES = {
  { name = "last axis", shape = { 3, 5 }, axis = -1 },
  { name = "1-D", shape = { 7 }, axis = -1 },
  { name = "middle axis", shape = { 2, 4, 3 }, axis = 1 },
  { name = "first axis", shape = { 4, 3 }, axis = 0 },
  { name = "negative middle axis", shape = { 2, 3, 2, 2 }, axis = -3 },
}

for _, optype in ipairs({ "softmax", "log_softmax" }) do
  describe(optype, function()
    for ci, c in ipairs(CASES) do
      for _, dtype in ipairs({ "float64", "float32" }) do
        it(("%s (%s)"):format(c.name, dtype), function()
          local x = rand_values(numel(c.shape), ci)
          local tol = dtype == "float32" and 2e-6 or 1e-12
          T.check_output{
            type = optype, attrs = { axis = c.axis },
            inputs = { X = T.tensor(x, { shape = c.shape, dtype = dtype }) },
            expect = { Out = { shape = c.shape, data = ref(x, c.shape, c.axis, optype == "log_softmax") } },
            atol = tol, rtol = tol,
          }
        end)
      end
      it("grad " .. c.name, function()
        -- for softmax mean(Out) is constant (rows sum to 1), so this checks
        -- a zero gradient; the weighted-loss specs below check the values
        T.check_grad{
          type = optype, attrs = { axis = c.axis },
          inputs = { X = T.tensor(rand_values(numel(c.shape), ci + 20), { shape = c.shape }) },
          wrt = { "X" },
        }
      end)
    end

    it("is stable for large inputs", function()
      local x = { 1000, 1001, 1002, -1000 }
      T.check_output{
        type = optype, inputs = { X = T.tensor(x, { shape = { 1, 4 } }) },
        expect = { Out = { shape = { 1, 4 }, data = ref(x, { 1, 4 }, -1, optype == "log_softmax") } },
        atol = 1e-12, rtol = 1e-12,
      }
    end)

    it("many rows (parallel path) match the plain loop", function()
      local shape = { 700, 100 }
      local x = rand_values(numel(shape), 3)
      T.check_output{
        type = optype, dtype = "float32",
        inputs = { X = T.tensor(x, { shape = shape, dtype = "float32" }) },
        expect = { Out = { shape = shape, data = ref(x, shape, -1, optype == "log_softmax") } },
        atol = 2e-6, rtol = 2e-6,
      }
    end)

    it("rejects an axis out of range, naming the op and the shape", function()
      local ok, err = pcall(T.run, { type = optype, attrs = { axis = 2 }, inputs = { X = T.tensor(rand_values(6, 1), { shape = { 2, 3 } }) } })
      assert.is_false(ok)
      assert.truthy(err:find(optype, 1, true), err)
      assert.truthy(err:find("[2, 3]", 1, true), err)
    end)
  end)
end

-- Gradient of loss = mean(w * op(x)) from the C backward pass, against
-- central differences of the plain Lua reference (mean(Out) alone would give
-- softmax a zero gradient).
local function weighted_grad_check(optype, shape, axis, seed)
  local ffi = require("ffi")
  local lib = require("oar.lib")
  local C = lib.C
  local p = ffi.new("oar_program_t*[1]")
  assert.are.equal(0, C.oar_program_new(p))
  local prog = ffi.gc(p[0], C.oar_program_free)
  local b = C.oar_program_block(prog, 0)
  for _, name in ipairs({ "x", "w" }) do
    local v = ffi.new("oar_var_desc_t*[1]")
    C.oar_block_var_new(b, name, v)
    C.oar_var_desc_set_shape(v[0], ffi.new("int64_t[?]", #shape, shape), #shape)
    C.oar_var_desc_set_dtype(v[0], 6)
  end
  T.append_op(b, optype, { X = { "x" } }, { Out = { "y" } }, { axis = axis })
  T.append_op(b, "elementwise_mul", { X = { "y" }, Y = { "w" } }, { Out = { "yw" } }, {})
  T.append_op(b, "mean", { X = { "yw" } }, { Out = { "loss" } }, {})
  local grads = ffi.new("char**[1]")
  assert.are.equal(0, C.oar_backward_gradients(prog, lib.cstrings({ "loss" }), 1, nil,
    lib.cstrings({ "x" }), 1, lib.cstrings({ "w" }), 1, grads), lib.last_error())
  local gname = ffi.string(grads[0][0])
  C.oar_strings_free(grads[0], 1)
  local n = numel(shape)
  local x, w = rand_values(n, seed), rand_values(n, seed + 1, 3)
  local feeds = { x = T.tensor(x, { shape = shape }), w = T.tensor(w, { shape = shape }) }
  local got = T.run_program(prog, feeds, { gname })[1].data
  local function loss(xv)
    local y, l = ref(xv, shape, axis, optype == "log_softmax"), 0
    for i = 1, n do l = l + w[i] * y[i] end
    return l / n
  end
  local h = 1e-6
  for i = 1, n do
    local saved = x[i]
    x[i] = saved + h
    local lp = loss(x)
    x[i] = saved - h
    local lm = loss(x)
    x[i] = saved
    local num = (lp - lm) / (2 * h)
    assert.is_true(math.abs(got[i] - num) < 1e-7,
      ("%s grad element %d: %.10g vs numeric %.10g"):format(optype, i, got[i], num))
  end
end

for _, optype in ipairs({ "softmax", "log_softmax" }) do
  describe(optype .. "_grad on a weighted loss", function()
    for ci, c in ipairs(CASES) do
      it(c.name, function() weighted_grad_check(optype, c.shape, c.axis, ci * 5) end)
    end
  end)
end
