-- mul and matmul: products computed here with plain Lua loops, gradients
-- against finite differences (covering the GEMV paths for one-row and
-- one-column products and batch broadcasting), and shape errors.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")

local function rand_values(n, seed) return R.symmetric(n, seed) end

local numel = require("spec.helpers.index").numel

-- C[M x N] = A[M x K] B[K x N], flat row-major, 1-based
local function gemm(a, b, M, K, N)
  local c = {}
  for i = 0, M - 1 do
    for j = 0, N - 1 do
      local s = 0
      for k = 0, K - 1 do s = s + a[i * K + k + 1] * b[k * N + j + 1] end
      c[i * N + j + 1] = s
    end
  end
  return c
end

describe("mul", function()
  -- X flattened at xnf to [M, K], Y at ynf to [K, N]
  local cases = {
    { name = "2-D", xs = { 2, 3 }, ys = { 3, 4 }, xnf = 1, ynf = 1, M = 2, K = 3, N = 4, out = { 2, 4 } },
    { name = "one row (GEMV)", xs = { 1, 5 }, ys = { 5, 3 }, xnf = 1, ynf = 1, M = 1, K = 5, N = 3, out = { 1, 3 } },
    { name = "one column", xs = { 4, 3 }, ys = { 3, 1 }, xnf = 1, ynf = 1, M = 4, K = 3, N = 1, out = { 4, 1 } },
    { name = "X flattened at 2", xs = { 2, 3, 4 }, ys = { 4, 5 }, xnf = 2, ynf = 1, M = 6, K = 4, N = 5, out = { 2, 3, 5 } },
    { name = "X flattened at 1", xs = { 2, 3, 2 }, ys = { 6, 2 }, xnf = 1, ynf = 1, M = 2, K = 6, N = 2, out = { 2, 2 } },
    { name = "Y flattened at 2", xs = { 3, 6 }, ys = { 2, 3, 2, 2 }, xnf = 1, ynf = 2, M = 3, K = 6, N = 4, out = { 3, 2, 2 } },
  }
  for ci, c in ipairs(cases) do
    for _, dtype in ipairs({ "float64", "float32" }) do
      it(("%s (%s)"):format(c.name, dtype), function()
        local x, y = rand_values(numel(c.xs), ci), rand_values(numel(c.ys), ci + 40)
        local tol = dtype == "float32" and 1e-5 or 1e-12
        T.check_output{
          type = "mul", attrs = { x_num_col_dims = c.xnf, y_num_col_dims = c.ynf },
          inputs = { X = T.tensor(x, { shape = c.xs, dtype = dtype }), Y = T.tensor(y, { shape = c.ys, dtype = dtype }) },
          expect = { Out = { shape = c.out, data = gemm(x, y, c.M, c.K, c.N) } }, atol = tol, rtol = tol,
        }
      end)
    end
    it(("grad %s"):format(c.name), function()
      T.check_grad{
        type = "mul", attrs = { x_num_col_dims = c.xnf, y_num_col_dims = c.ynf },
        inputs = { X = T.tensor(rand_values(numel(c.xs), ci + 3), { shape = c.xs }),
                   Y = T.tensor(rand_values(numel(c.ys), ci + 9), { shape = c.ys }) },
        wrt = { "X", "Y" },
      }
    end)
  end

  it("grad of X alone (Y in no_grad)", function()
    T.check_grad{
      type = "mul",
      inputs = { X = T.tensor(rand_values(6, 1), { shape = { 2, 3 } }), Y = T.tensor(rand_values(6, 2), { shape = { 3, 2 } }) },
      wrt = { "X" }, no_grad = { "Y" },
    }
  end)

  it("passes X's LoD to Out", function()
    local res = T.run{
      type = "mul",
      inputs = { X = T.tensor({ { 1, 2 }, { 3, 4 }, { 5, 6 } }, { lod = { { 0, 1, 3 } } }), Y = T.tensor{ { 1 }, { 1 } } },
    }
    assert.are.same({ { 0, 1, 3 } }, res.Out[1].lod)
    assert.are.same({ 3, 7, 11 }, res.Out[1].data)
  end)

  it("names the op and both shapes on a mismatch", function()
    local ok, err = pcall(T.run, {
      type = "mul",
      inputs = { X = T.tensor(rand_values(6, 1), { shape = { 2, 3 } }), Y = T.tensor(rand_values(8, 2), { shape = { 4, 2 } }) },
    })
    assert.is_false(ok)
    assert.truthy(err:find("mul", 1, true), err)
    assert.truthy(err:find("[2, 3]", 1, true), err)
    assert.truthy(err:find("[4, 2]", 1, true), err)
  end)

  it("rejects x_num_col_dims not below X's rank", function()
    local ok, err = pcall(T.run, {
      type = "mul", attrs = { x_num_col_dims = 2 },
      inputs = { X = T.tensor(rand_values(6, 1), { shape = { 2, 3 } }), Y = T.tensor(rand_values(6, 2), { shape = { 3, 2 } }) },
    })
    assert.is_false(ok)
    assert.truthy(err:find("x_num_col_dims", 1, true), err)
  end)
end)

-- numpy matmul in plain Lua. ob: Out's batch dims (by hand per case).
local function matmul_ref(x, xs, y, ys, tx, ty, alpha, ob)
  local xv, yv = #xs == 1, #ys == 1
  if xv then tx = false end
  if yv then ty = false end
  local xr, xc = xv and 1 or xs[#xs - 1], xv and xs[1] or xs[#xs]
  local yr, yc = yv and ys[1] or ys[#ys - 1], yv and 1 or ys[#ys]
  local M, K = tx and xc or xr, tx and xr or xc
  local N = ty and yr or yc
  local xbd, ybd = {}, {}
  for i = 1, (xv and 0 or #xs - 2) do xbd[i] = xs[i] end
  for i = 1, (yv and 0 or #ys - 2) do ybd[i] = ys[i] end
  -- batch index of an operand for out batch multi-index idx (right-aligned, 1s broadcast)
  local function bidx(idx, bd)
    local off, stride = 0, 1
    for d = #bd, 1, -1 do
      local od = #ob - (#bd - d)
      if bd[d] ~= 1 then off = off + idx[od] * stride end
      stride = stride * bd[d]
    end
    return off
  end
  local out, idx = {}, {}
  for d = 1, #ob do idx[d] = 0 end
  for _ = 1, numel(ob) do
    local xb, yb = bidx(idx, xbd), bidx(idx, ybd)
    for i = 0, M - 1 do
      for j = 0, N - 1 do
        local s = 0
        for k = 0, K - 1 do
          local xe = tx and x[xb * xr * xc + k * xc + i + 1] or x[xb * xr * xc + i * xc + k + 1]
          local ye = ty and y[yb * yr * yc + j * yc + k + 1] or y[yb * yr * yc + k * yc + j + 1]
          s = s + xe * ye
        end
        out[#out + 1] = alpha * s
      end
    end
    for d = #ob, 1, -1 do
      idx[d] = idx[d] + 1
      if idx[d] < ob[d] then break end
      idx[d] = 0
    end
  end
  return out
end

describe("matmul", function()
  local cases = {
    { name = "2-D", xs = { 2, 3 }, ys = { 3, 4 }, ob = {}, out = { 2, 4 } },
    { name = "transpose_X", xs = { 3, 2 }, ys = { 3, 4 }, tx = true, ob = {}, out = { 2, 4 } },
    { name = "transpose_Y", xs = { 2, 3 }, ys = { 4, 3 }, ty = true, ob = {}, out = { 2, 4 } },
    { name = "both transposed, alpha", xs = { 3, 2 }, ys = { 4, 3 }, tx = true, ty = true, alpha = 0.5, ob = {}, out = { 2, 4 } },
    { name = "one row (GEMV)", xs = { 1, 5 }, ys = { 5, 3 }, ob = {}, out = { 1, 3 } },
    { name = "one row, Y transposed", xs = { 1, 5 }, ys = { 3, 5 }, ty = true, ob = {}, out = { 1, 3 } },
    { name = "one column", xs = { 4, 3 }, ys = { 3, 1 }, ob = {}, out = { 4, 1 } },
    { name = "one column, X transposed", xs = { 3, 4 }, ys = { 3, 1 }, tx = true, ob = {}, out = { 4, 1 } },
    { name = "batched", xs = { 2, 2, 3 }, ys = { 2, 3, 4 }, ob = { 2 }, out = { 2, 2, 4 } },
    { name = "batched transposes", xs = { 2, 3, 2 }, ys = { 2, 4, 3 }, tx = true, ty = true, ob = { 2 }, out = { 2, 2, 4 } },
    { name = "3-D by 2-D (stacked rows)", xs = { 2, 3, 4 }, ys = { 4, 5 }, ob = { 2 }, out = { 2, 3, 5 } },
    { name = "3-D by 2-D, Y transposed", xs = { 2, 3, 4 }, ys = { 5, 4 }, ty = true, ob = { 2 }, out = { 2, 3, 5 } },
    { name = "2-D by 3-D (X broadcast)", xs = { 3, 4 }, ys = { 2, 4, 2 }, ob = { 2 }, out = { 2, 3, 2 } },
    { name = "batch dims broadcast both ways", xs = { 2, 1, 2, 3 }, ys = { 3, 3, 2 }, ob = { 2, 3 }, out = { 2, 3, 2, 2 } },
    { name = "vector by matrix", xs = { 3 }, ys = { 3, 4 }, ob = {}, out = { 4 } },
    { name = "matrix by vector", xs = { 2, 3 }, ys = { 3 }, ob = {}, out = { 2 } },
    { name = "vector by vector", xs = { 4 }, ys = { 4 }, ob = {}, out = { 1 } },
    { name = "batched by vector", xs = { 2, 3, 4 }, ys = { 4 }, ob = { 2 }, out = { 2, 3 } },
    { name = "vector by batched", xs = { 3 }, ys = { 2, 3, 2 }, ob = { 2 }, out = { 2, 2 } },
  }
  for ci, c in ipairs(cases) do
    local attrs = { transpose_X = c.tx or false, transpose_Y = c.ty or false, alpha = c.alpha or 1 }
    for _, dtype in ipairs({ "float64", "float32" }) do
      it(("%s (%s)"):format(c.name, dtype), function()
        local x, y = rand_values(numel(c.xs), ci), rand_values(numel(c.ys), ci + 40)
        local tol = dtype == "float32" and 1e-5 or 1e-12
        T.check_output{
          type = "matmul", attrs = attrs,
          inputs = { X = T.tensor(x, { shape = c.xs, dtype = dtype }), Y = T.tensor(y, { shape = c.ys, dtype = dtype }) },
          expect = { Out = { shape = c.out, data = matmul_ref(x, c.xs, y, c.ys, c.tx, c.ty, c.alpha or 1, c.ob) } },
          atol = tol, rtol = tol,
        }
      end)
    end
    it(("grad %s"):format(c.name), function()
      T.check_grad{
        type = "matmul", attrs = attrs,
        inputs = { X = T.tensor(rand_values(numel(c.xs), ci + 3), { shape = c.xs }),
                   Y = T.tensor(rand_values(numel(c.ys), ci + 9), { shape = c.ys }) },
        wrt = { "X", "Y" },
      }
    end)
  end

  it("a larger float32 product (BLAS blocking) matches the plain loop", function()
    local xs, ys = { 37, 65 }, { 65, 29 }
    local x, y = rand_values(numel(xs), 5), rand_values(numel(ys), 6)
    T.check_output{
      type = "matmul", dtype = "float32",
      inputs = { X = T.tensor(x, { shape = xs, dtype = "float32" }), Y = T.tensor(y, { shape = ys, dtype = "float32" }) },
      expect = { Out = { shape = { 37, 29 }, data = gemm(x, y, 37, 65, 29) } }, atol = 1e-4, rtol = 1e-4,
    }
  end)

  it("names the op and both shapes when inner dims differ", function()
    local ok, err = pcall(T.run, {
      type = "matmul",
      inputs = { X = T.tensor(rand_values(6, 1), { shape = { 2, 3 } }), Y = T.tensor(rand_values(8, 2), { shape = { 4, 2 } }) },
    })
    assert.is_false(ok)
    assert.truthy(err:find("matmul", 1, true), err)
    assert.truthy(err:find("[2, 3]", 1, true), err)
    assert.truthy(err:find("[4, 2]", 1, true), err)
  end)

  it("rejects batch dims that do not broadcast", function()
    local ok, err = pcall(T.run, {
      type = "matmul",
      inputs = { X = T.tensor(rand_values(12, 1), { shape = { 2, 2, 3 } }), Y = T.tensor(rand_values(18, 2), { shape = { 3, 3, 2 } }) },
    })
    assert.is_false(ok)
    assert.truthy(err:find("matmul", 1, true), err)
    assert.truthy(err:find("[2, 2, 3]", 1, true) and err:find("[3, 3, 2]", 1, true), err)
  end)

  it("rejects mismatched dtypes", function()
    local ok, err = pcall(T.run, {
      type = "matmul",
      inputs = { X = T.tensor({ 1, 2 }, { shape = { 1, 2 }, dtype = "float32" }), Y = T.tensor({ 1, 2 }, { shape = { 2, 1 } }) },
    })
    assert.is_false(ok)
    assert.truthy(err:find("float32", 1, true) and err:find("float64", 1, true), err)
  end)
end)
