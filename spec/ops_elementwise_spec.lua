-- elementwise_{add,sub,mul,div,max,min,pow}: forward values computed here in
-- plain Lua over hand-written broadcast shapes, gradients against finite
-- differences, integer kernels, and error messages.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")

local rand_values = R.uniform

local numel = require("spec.helpers.index").numel

-- flat index into an operand of padded dims `pad` for output multi-index idx (0-based)
local function operand_index(idx, pad)
  local off, stride = 0, 1
  for d = #pad, 1, -1 do
    if pad[d] ~= 1 then off = off + idx[d] * stride end
    stride = stride * pad[d]
  end
  return off + 1
end

-- out[i] = f(x[..], y[..]) over the output shape; xpad/ypad are the
-- operands' dims padded to the output rank (written by hand in each case)
local function ref(f, x, xpad, y, ypad, oshape)
  local out, idx = {}, {}
  for d = 1, #oshape do idx[d] = 0 end
  for i = 1, numel(oshape) do
    out[i] = f(x[operand_index(idx, xpad)], y[operand_index(idx, ypad)])
    for d = #oshape, 1, -1 do
      idx[d] = idx[d] + 1
      if idx[d] < oshape[d] then break end
      idx[d] = 0
    end
  end
  return out
end

local OPS = {
  elementwise_add = function(a, b) return a + b end,
  elementwise_sub = function(a, b) return a - b end,
  elementwise_mul = function(a, b) return a * b end,
  elementwise_div = function(a, b) return a / b end,
  elementwise_max = function(a, b) return a > b and a or b end,
  elementwise_min = function(a, b) return a < b and a or b end,
  elementwise_pow = function(a, b) return a ^ b end,
}

-- shapes: X, Y, axis, then X and Y padded to Out's rank, and Out
local CASES = {
  { name = "same shape", xs = { 3, 4 }, ys = { 3, 4 }, axis = -1, xp = { 3, 4 }, yp = { 3, 4 }, out = { 3, 4 } },
  { name = "row vector (bias add)", xs = { 5, 3 }, ys = { 3 }, axis = -1, xp = { 5, 3 }, yp = { 1, 3 }, out = { 5, 3 } },
  { name = "middle axis", xs = { 2, 3, 4 }, ys = { 3 }, axis = 1, xp = { 2, 3, 4 }, yp = { 1, 3, 1 }, out = { 2, 3, 4 } },
  { name = "leading axis", xs = { 2, 3, 4 }, ys = { 2, 3 }, axis = 0, xp = { 2, 3, 4 }, yp = { 2, 3, 1 }, out = { 2, 3, 4 } },
  { name = "trailing 1s of Y trimmed", xs = { 2, 3 }, ys = { 3, 1 }, axis = 1, xp = { 2, 3 }, yp = { 1, 3 }, out = { 2, 3 } },
  { name = "Y trailing 1 kept within rank", xs = { 2, 3, 4 }, ys = { 3, 1 }, axis = -1, xp = { 2, 3, 4 }, yp = { 1, 3, 1 }, out = { 2, 3, 4 } },
  { name = "scalar Y", xs = { 2, 3 }, ys = { 1 }, axis = -1, xp = { 2, 3 }, yp = { 1, 1 }, out = { 2, 3 } },
  { name = "both broadcast", xs = { 2, 1, 4 }, ys = { 3, 1 }, axis = -1, xp = { 2, 1, 4 }, yp = { 1, 3, 1 }, out = { 2, 3, 4 } },
  { name = "X of lower rank", xs = { 4 }, ys = { 2, 3, 4 }, axis = -1, xp = { 1, 1, 4 }, yp = { 2, 3, 4 }, out = { 2, 3, 4 } },
}

-- positive operands keep div and pow defined; Y in [0.5, 2]
local function operands(c, dtype, seed)
  local x = rand_values(numel(c.xs), seed, 0.2, 3)
  local y = rand_values(numel(c.ys), seed + 50, 0.5, 2)
  return x, y, T.tensor(x, { shape = c.xs, dtype = dtype }), T.tensor(y, { shape = c.ys, dtype = dtype })
end

describe("elementwise ops forward", function()
  for optype, f in pairs(OPS) do
    for ci, c in ipairs(CASES) do
      for _, dtype in ipairs({ "float64", "float32" }) do
        it(("%s %s (%s)"):format(optype, c.name, dtype), function()
          local x, y, xt, yt = operands(c, dtype, ci * 3)
          local tol = dtype == "float32" and 1e-5 or 1e-12
          T.check_output{
            type = optype, inputs = { X = xt, Y = yt }, attrs = { axis = c.axis },
            expect = { Out = { shape = c.out, data = ref(f, x, c.xp, y, c.yp, c.out) } },
            atol = tol, rtol = tol,
          }
        end)
      end
    end
  end

  it("big tensors (parallel path) match the plain loop", function()
    local xs, ys = { 300, 257 }, { 257 }
    local x, y = rand_values(numel(xs), 3), rand_values(numel(ys), 4)
    T.check_output{
      type = "elementwise_mul", dtype = "float32",
      inputs = { X = T.tensor(x, { shape = xs, dtype = "float32" }), Y = T.tensor(y, { shape = ys, dtype = "float32" }) },
      expect = { Out = { shape = xs, data = ref(OPS.elementwise_mul, x, xs, y, { 1, 257 }, xs) } },
      atol = 1e-6, rtol = 1e-6,
    }
  end)

  it("max and min pick elementwise", function()
    T.check_output{
      type = "elementwise_max",
      inputs = { X = T.tensor{ { 1, -2, 3 } }, Y = T.tensor{ { 0, 5, 3 } } },
      expect = { Out = { shape = { 1, 3 }, data = { 1, 5, 3 } } },
    }
    T.check_output{
      type = "elementwise_min",
      inputs = { X = T.tensor{ { 1, -2, 3 } }, Y = T.tensor{ { 0, 5, 3 } } },
      expect = { Out = { shape = { 1, 3 }, data = { 0, -2, 3 } } },
    }
  end)

  it("passes X's LoD to Out", function()
    local res = T.run{
      type = "elementwise_add",
      inputs = { X = T.tensor({ { 1 }, { 2 }, { 3 } }, { lod = { { 0, 1, 3 } } }), Y = T.tensor{ 10 } },
    }
    assert.are.same({ { 0, 1, 3 } }, res.Out[1].lod)
    assert.are.same({ 11, 12, 13 }, res.Out[1].data)
  end)
end)

describe("elementwise ops on integers", function()
  local function trunc_div(a, b)
    local q = a / b
    return q >= 0 and math.floor(q) or math.ceil(q)
  end
  local int_ops = {
    elementwise_add = function(a, b) return a + b end,
    elementwise_sub = function(a, b) return a - b end,
    elementwise_mul = function(a, b) return a * b end,
    elementwise_div = trunc_div,
    elementwise_max = OPS.elementwise_max,
    elementwise_min = OPS.elementwise_min,
  }
  local x = { 7, -7, 9, 0, -12, 5 }
  local y = { 2, -3 }
  for optype, f in pairs(int_ops) do
    for _, dtype in ipairs({ "int32", "int64" }) do
      it(("%s (%s, broadcast)"):format(optype, dtype), function()
        T.check_output{
          type = optype,
          inputs = { X = T.tensor(x, { shape = { 3, 2 }, dtype = dtype }), Y = T.tensor(y, { shape = { 2 }, dtype = dtype }) },
          expect = { Out = { shape = { 3, 2 }, data = ref(f, x, { 3, 2 }, y, { 1, 2 }, { 3, 2 }) } },
          atol = 0,
        }
      end)
    end
  end

  it("division truncates toward zero", function()
    T.check_output{
      type = "elementwise_div",
      inputs = { X = T.tensor({ -7, 7, -8, 1 }, { shape = { 4 }, dtype = "int32" }),
                 Y = T.tensor({ 2, -2, 3, 2 }, { shape = { 4 }, dtype = "int32" }) },
      expect = { Out = { shape = { 4 }, data = { -3, -3, -2, 0 } } }, atol = 0,
    }
  end)

  it("integer division by zero is an error, not a crash", function()
    for _, dtype in ipairs({ "int32", "int64" }) do
      local ok, err = pcall(T.run, {
        type = "elementwise_div",
        inputs = { X = T.tensor({ 1, 2, 3 }, { shape = { 3 }, dtype = dtype }),
                   Y = T.tensor({ 1, 0, 3 }, { shape = { 3 }, dtype = dtype }) },
      })
      assert.is_false(ok)
      assert.truthy(err:find("elementwise_div", 1, true), err)
      assert.truthy(err:find("division by zero", 1, true), err)
    end
  end)

  it("INT_MIN / -1 wraps instead of trapping", function()
    T.check_output{
      type = "elementwise_div",
      inputs = { X = T.tensor({ -2147483648, 6 }, { shape = { 2 }, dtype = "int32" }),
                 Y = T.tensor({ -1, -1 }, { shape = { 2 }, dtype = "int32" }) },
      expect = { Out = { shape = { 2 }, data = { -2147483648, -6 } } }, atol = 0,
    }
  end)
end)

describe("elementwise ops gradients", function()
  local grad_cases = { CASES[1], CASES[2], CASES[3], CASES[6], CASES[8], CASES[9] }
  for optype in pairs(OPS) do
    for ci, c in ipairs(grad_cases) do
      it(("%s_grad %s"):format(optype, c.name), function()
        local x = rand_values(numel(c.xs), ci * 11, 0.5, 2)
        local y = rand_values(numel(c.ys), ci * 11 + 5, 0.5, 2)
        if optype == "elementwise_max" or optype == "elementwise_min" then
          -- keep |x - y| well above delta so no finite difference crosses a tie
          for i = 1, #x do x[i] = (i % 2 == 0) and x[i] + 3 or x[i] - 3 end
        end
        T.check_grad{
          type = optype, attrs = { axis = c.axis },
          inputs = { X = T.tensor(x, { shape = c.xs }), Y = T.tensor(y, { shape = c.ys }) },
          wrt = { "X", "Y" }, of = { "Out" },
        }
      end)
    end
  end

  it("gives only the wanted gradient (Y in no_grad)", function()
    T.check_grad{
      type = "elementwise_mul",
      inputs = { X = T.tensor(rand_values(6, 1), { shape = { 2, 3 } }), Y = T.tensor(rand_values(3, 2), { shape = { 3 } }) },
      wrt = { "X" }, no_grad = { "Y" },
    }
  end)

  it("sub grad of a broadcast Y alone (dX shares Out@GRAD, dY reduces)", function()
    T.check_grad{
      type = "elementwise_sub",
      inputs = { X = T.tensor(rand_values(12, 3), { shape = { 4, 3 } }), Y = T.tensor({ 1, 2, 3 }, { shape = { 3 } }) },
      wrt = { "Y" },
    }
  end)
end)

describe("elementwise ops errors", function()
  it("names the op and both shapes when Y does not broadcast", function()
    local ok, err = pcall(T.run, {
      type = "elementwise_add",
      inputs = { X = T.tensor(rand_values(10, 1), { shape = { 2, 5 } }), Y = T.tensor(rand_values(12, 2), { shape = { 3, 4 } }) },
      attrs = { axis = 1 },
    })
    assert.is_false(ok)
    assert.truthy(err:find("elementwise_add", 1, true), err)
    assert.truthy(err:find("[3, 4]", 1, true), err)
    assert.truthy(err:find("[2, 5]", 1, true), err)
  end)

  it("rejects an axis past X's rank", function()
    local ok, err = pcall(T.run, {
      type = "elementwise_mul",
      inputs = { X = T.tensor(rand_values(6, 1), { shape = { 2, 3 } }), Y = T.tensor(rand_values(3, 2), { shape = { 3 } }) },
      attrs = { axis = 2 },
    })
    assert.is_false(ok)
    assert.truthy(err:find("elementwise_mul", 1, true), err)
    assert.truthy(err:find("axis", 1, true), err)
  end)

  it("rejects mismatched dtypes", function()
    local ok, err = pcall(T.run, {
      type = "elementwise_sub",
      inputs = { X = T.tensor({ 1, 2 }, { shape = { 2 }, dtype = "float32" }), Y = T.tensor({ 1, 2 }, { shape = { 2 }, dtype = "float64" }) },
    })
    assert.is_false(ok)
    assert.truthy(err:find("elementwise_sub", 1, true), err)
    assert.truthy(err:find("float32", 1, true) and err:find("float64", 1, true), err)
  end)
end)

-- compile-time inference on var descs, where -1 is an unknown (batch) dim
local function infer_shape(optype, decls, inputs, attrs)
  local ffi = require("ffi")
  local C = require("oar.lib").C
  local p = ffi.new("oar_program_t*[1]")
  assert.are.equal(0, C.oar_program_new(p))
  local prog = ffi.gc(p[0], C.oar_program_free)
  local b = C.oar_program_block(prog, 0)
  for name, shape in pairs(decls) do
    local v = ffi.new("oar_var_desc_t*[1]")
    C.oar_block_var_new(b, name, v)
    C.oar_var_desc_set_shape(v[0], ffi.new("int64_t[?]", #shape, shape), #shape)
    C.oar_var_desc_set_dtype(v[0], 5)
  end
  T.append_op(b, optype, inputs, { Out = { "out" } }, attrs or {})
  local v = C.oar_block_find_var(b, "out")
  local shape, dims = {}, C.oar_var_desc_dims(v)
  for i = 0, C.oar_var_desc_ndim(v) - 1 do shape[i + 1] = tonumber(dims[i]) end
  return shape, C.oar_var_desc_dtype(v)
end

describe("elementwise ops compile-time inference", function()
  it("keeps an unknown batch dim", function()
    local shape, dt = infer_shape("elementwise_add", { x = { -1, 3 }, b = { 3 } }, { X = { "x" }, Y = { "b" } })
    assert.are.same({ -1, 3 }, shape)
    assert.are.equal(5, dt)
  end)
  it("resolves -1 against a known dim and broadcasts 1s", function()
    assert.are.same({ 4, 3 }, (infer_shape("elementwise_mul", { x = { -1, 3 }, y = { 4, 1 } }, { X = { "x" }, Y = { "y" } })))
  end)
  it("names the op and both shapes on a mismatch at insertion", function()
    local ok, err = pcall(infer_shape, "elementwise_div", { x = { -1, 3 }, y = { 4 } }, { X = { "x" }, Y = { "y" } })
    assert.is_false(ok)
    assert.truthy(err:find("elementwise_div", 1, true) and err:find("[4]", 1, true) and err:find("[-1, 3]", 1, true), err)
  end)
  it("comparisons infer a bool Out", function()
    local shape, dt = infer_shape("less_than", { x = { -1, 3 }, y = { 3 } }, { X = { "x" }, Y = { "y" } })
    assert.are.same({ -1, 3 }, shape)
    assert.are.equal(0, dt)
  end)
  it("mul and matmul keep the batch dim", function()
    assert.are.same({ -1, 5 }, (infer_shape("mul", { x = { -1, 4 }, w = { 4, 5 } }, { X = { "x" }, Y = { "w" } })))
    assert.are.same({ -1, 2, 5 }, (infer_shape("mul", { x = { -1, 2, 4 }, w = { 4, 5 } }, { X = { "x" }, Y = { "w" } }, { x_num_col_dims = 2 })))
    assert.are.same({ -1, 3, 5 }, (infer_shape("matmul", { x = { -1, 3, 4 }, w = { 4, 5 } }, { X = { "x" }, Y = { "w" } })))
    assert.are.same({ -1, 3 }, (infer_shape("matmul", { x = { -1, 4 }, w = { 3, 4 } }, { X = { "x" }, Y = { "w" } }, { transpose_Y = true })))
  end)
end)
