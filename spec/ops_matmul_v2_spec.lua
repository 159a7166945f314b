-- matmul (Fluid 1.8: transposed vectors) and matmul_v2 (Paddle 2.x: numpy's
-- matmul with trans_x/trans_y): the shape grids of Fluid's test_matmul_op.py
-- and Paddle's test_matmul_v2_op.py, expected values from a plain-Lua
-- reference that follows numpy's rules.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")

local numel = require("spec.helpers.index").numel

local function value(shape, seed)
  return { shape = shape, data = R.uniform(numel(shape), seed, -1, 1) }
end

-- swap the last two dims of a rank >= 2 value
local function swap_last(v)
  local nd = #v.shape
  local r, c = v.shape[nd - 1], v.shape[nd]
  local batch = numel(v.shape) / (r * c)
  local shape = {}
  for i = 1, nd - 2 do shape[i] = v.shape[i] end
  shape[nd - 1], shape[nd] = c, r
  local out = {}
  for b = 0, batch - 1 do
    for i = 0, r - 1 do
      for j = 0, c - 1 do out[b * r * c + j * r + i + 1] = v.data[b * r * c + i * c + j + 1] end
    end
  end
  return { shape = shape, data = out }
end

-- numpy.matmul for ranks 1..3 (batch dims broadcast)
local function np_matmul(x, y)
  local xs, ys = x.shape, y.shape
  local xv, yv = #xs == 1, #ys == 1
  local X = xv and { shape = { 1, xs[1] }, data = x.data } or x
  local Y = yv and { shape = { ys[1], 1 }, data = y.data } or y
  local xn, yn = #X.shape, #Y.shape
  local M, K = X.shape[xn - 1], X.shape[xn]
  local N = Y.shape[yn]
  assert(Y.shape[yn - 1] == K, "reference: inner dims differ")
  local xb = xn == 3 and X.shape[1] or 1
  local yb = yn == 3 and Y.shape[1] or 1
  local B = math.max(xb, yb)
  assert(xb == yb or xb == 1 or yb == 1)
  local out = {}
  for b = 0, B - 1 do
    local bx, by = xb == 1 and 0 or b, yb == 1 and 0 or b
    for i = 0, M - 1 do
      for j = 0, N - 1 do
        local s = 0
        for k = 0, K - 1 do s = s + X.data[bx * M * K + i * K + k + 1] * Y.data[by * K * N + k * N + j + 1] end
        out[#out + 1] = s
      end
    end
  end
  local shape = {}
  if xn == 3 or yn == 3 then shape[1] = B end
  if not xv then shape[#shape + 1] = M end
  if not yv then shape[#shape + 1] = N end
  if #shape == 0 then shape = { 1 } end
  return { shape = shape, data = out }
end

-- Fluid's reference_matmul: a transposed vector X is a column, a transposed vector Y a row
local function fluid_matmul(x, y, tx, ty)
  if tx then x = #x.shape == 1 and { shape = { x.shape[1], 1 }, data = x.data } or swap_last(x) end
  if ty then y = #y.shape == 1 and { shape = { 1, y.shape[1] }, data = y.data } or swap_last(y) end
  return np_matmul(x, y)
end

-- Fluid's generate_compatible_shapes
local function fluid_shapes(dim_x, dim_y, tx, ty)
  local B, M, N, K = 2, 3, 4, 5
  if (dim_x == 1 and tx) or (dim_y == 1 and ty) then K = 1 end
  local sx, sy
  if dim_x == 1 then sx = tx and { M } or { K }
  elseif dim_x == 2 then sx = tx and { K, M } or { M, K }
  else sx = tx and { B, K, M } or { B, M, K } end
  if dim_y == 1 then sy = ty and { N } or { K }
  elseif dim_y == 2 then sy = ty and { N, K } or { K, N }
  else sy = ty and { B, N, K } or { B, K, N } end
  return sx, sy
end

describe("matmul (Fluid 1.8 OpTest grid)", function()
  for dim_x = 1, 3 do
    for dim_y = 1, 3 do
      for _, tx in ipairs({ false, true }) do
        for _, ty in ipairs({ false, true }) do
          local name = ("X rank %d%s, Y rank %d%s"):format(dim_x, tx and " (T)" or "", dim_y, ty and " (T)" or "")
          it(name, function()
            local sx, sy = fluid_shapes(dim_x, dim_y, tx, ty)
            local x, y = value(sx, dim_x * 10 + dim_y), value(sy, dim_y * 10 + dim_x + 3)
            local want = fluid_matmul(x, y, tx, ty)
            T.check_output{
              type = "matmul", attrs = { transpose_X = tx, transpose_Y = ty },
              inputs = { X = T.tensor(x.data, { shape = sx }), Y = T.tensor(y.data, { shape = sy }) },
              expect = { Out = want }, atol = 1e-12,
            }
            T.check_grad{
              type = "matmul", attrs = { transpose_X = tx, transpose_Y = ty },
              inputs = { X = T.tensor(x.data, { shape = sx }), Y = T.tensor(y.data, { shape = sy }) },
              wrt = { "X", "Y" },
            }
          end)
        end
      end
    end
  end

  it("X [K] and Y [K], both transposed, is the outer product [K, K]", function()
    local res = T.run{ type = "matmul", attrs = { transpose_X = true, transpose_Y = true },
      inputs = { X = T.tensor({ 1, 2, 3 }, { shape = { 3 } }), Y = T.tensor({ 4, 5, 6 }, { shape = { 3 } }) } }
    assert.are.same({ 3, 3 }, res.Out[1].shape)
    assert.are.same({ 4, 5, 6, 8, 10, 12, 12, 15, 18 }, res.Out[1].data)
  end)
end)

-- Paddle's test_matmul_v2_op.py cases: {x shape, y shape, trans_x, trans_y}
local V2 = {
  { { 100 }, { 100 }, false, false },
  { { 100 }, { 1, 3, 2, 100 }, false, true },
  { { 100 }, { 3, 1, 100, 2 }, false, false },
  { { 3, 1, 2, 100 }, { 100 }, false, false },
  { { 3, 1, 100, 2 }, { 100 }, true, false },
  { { 1, 1, 1, 100 }, { 1, 1, 100, 1 }, false, false },
  { { 2, 100 }, { 100, 3 }, false, false },
  { { 100, 2 }, { 100, 3 }, true, false },
  { { 2, 100 }, { 3, 100 }, false, true },
  { { 2, 3, 2, 10 }, { 10, 4 }, false, false },
  { { 3, 2, 10 }, { 1, 10, 4 }, false, false },
  { { 3, 2, 10 }, { 3, 10, 4 }, false, false },
  { { 3, 10, 2 }, { 3, 4, 10 }, true, true },
  { { 2, 1, 10, 3 }, { 1, 3, 10, 4 }, true, false },
}

-- numpy matmul on any ranks: flatten leading dims through explicit loops
local function v2_reference(xs, xd, ys, yd, tx, ty)
  local x, y = { shape = xs, data = xd }, { shape = ys, data = yd }
  if tx and #xs > 1 then x = swap_last(x) end
  if ty and #ys > 1 then y = swap_last(y) end
  -- vectors
  local xv, yv = #x.shape == 1, #y.shape == 1
  if xv then x = { shape = { 1, x.shape[1] }, data = x.data } end
  if yv then y = { shape = { y.shape[1], 1 }, data = y.data } end
  local xn, yn = #x.shape, #y.shape
  local nb = math.max(xn, yn) - 2
  local bx, by, bo = {}, {}, {}
  for i = 1, nb do
    bx[i] = x.shape[xn - 2 - nb + i] or 1
    by[i] = y.shape[yn - 2 - nb + i] or 1
    bo[i] = math.max(bx[i], by[i])
  end
  local M, K, N = x.shape[xn - 1], x.shape[xn], y.shape[yn]
  local out, total = {}, numel(bo)
  for b = 0, total - 1 do
    local rem, xi, yi, xst, yst = b, 0, 0, 1, 1
    for d = nb, 1, -1 do
      local i = rem % bo[d]
      rem = (rem - i) / bo[d]
      if bx[d] ~= 1 then xi = xi + i * xst end
      if by[d] ~= 1 then yi = yi + i * yst end
      xst, yst = xst * bx[d], yst * by[d]
    end
    for i = 0, M - 1 do
      for j = 0, N - 1 do
        local s = 0
        for k = 0, K - 1 do s = s + x.data[xi * M * K + i * K + k + 1] * y.data[yi * K * N + k * N + j + 1] end
        out[#out + 1] = s
      end
    end
  end
  local shape = {}
  for i = 1, nb do shape[i] = bo[i] end
  if not xv then shape[#shape + 1] = M end
  if not yv then shape[#shape + 1] = N end
  if #shape == 0 then shape = { 1 } end
  return { shape = shape, data = out }
end

describe("matmul_v2 (Paddle 2.x OpTest cases)", function()
  for i, c in ipairs(V2) do
    local xs, ys, tx, ty = c[1], c[2], c[3], c[4]
    it(("case %d: [%s] x [%s]%s%s"):format(i, table.concat(xs, ","), table.concat(ys, ","),
      tx and " trans_x" or "", ty and " trans_y" or ""), function()
      local xd, yd = R.uniform(numel(xs), i, -1, 1), R.uniform(numel(ys), i + 50, -1, 1)
      for _, dtype in ipairs({ "float64", "float32" }) do
        T.check_output{
          type = "matmul_v2", attrs = { trans_x = tx, trans_y = ty }, dtype = dtype,
          inputs = { X = T.tensor(xd, { shape = xs, dtype = dtype }), Y = T.tensor(yd, { shape = ys, dtype = dtype }) },
          expect = { Out = v2_reference(xs, xd, ys, yd, tx, ty) },
          atol = dtype == "float32" and 1e-5 or 1e-12,
        }
      end
      if numel(xs) * numel(ys) <= 40000 then
        T.check_grad{
          type = "matmul_v2", attrs = { trans_x = tx, trans_y = ty },
          inputs = { X = T.tensor(xd, { shape = xs }), Y = T.tensor(yd, { shape = ys }) },
          wrt = { "X", "Y" },
        }
      end
    end)
  end

  it("refuses operands whose inner dims differ, naming both shapes", function()
    local ok, err = pcall(T.run, { type = "matmul_v2", inputs = {
      X = T.tensor(R.uniform(6, 1), { shape = { 2, 3 } }), Y = T.tensor(R.uniform(8, 2), { shape = { 4, 2 } }) } })
    assert.is_false(ok)
    assert.matches("shape [2, 3]", err, 1, true)
    assert.matches("shape [4, 2]", err, 1, true)
  end)
end)
