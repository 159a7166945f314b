-- unstack, expand_as, flip, roll, tril_triu, trace, kron, diag, eye: the
-- cases of Fluid 1.8's test_unstack_op.py, test_expand_as_op.py,
-- test_flip.py, test_roll_op.py, test_tril_triu_op.py, test_trace_op.py,
-- test_kron_op.py, test_diag.py and test_eye_op.py (same shapes and attributes), expected values
-- computed here by plain index arithmetic; float64 gradients against
-- finite differences (on smaller inputs where Fluid's are large).
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")
local I = require("spec.helpers.index")
local numel, unravel, ravel = I.numel, I.unravel, I.ravel

local function fails(spec, msg)
  local ok, err = pcall(T.run, spec)
  assert.is_false(ok)
  assert.matches(msg, tostring(err), 1, true)
end

-- out[idx] = x[f(idx)] over out shape os, x shape xs
local function remap(x, xs, os, f)
  local out = {}
  for p = 0, numel(os) - 1 do out[p + 1] = x[ravel(f(unravel(p, os)), xs) + 1] end
  return out
end

describe("unstack (Fluid 1.8 test_unstack_op.py)", function()
  local xs = { 5, 6, 7 }
  for _, axis in ipairs({ 0, -1, -3, 1, 2 }) do
    it("axis " .. axis, function()
      local x = R.uniform(numel(xs), 3, -1, 1)
      local ax = axis < 0 and axis + #xs or axis
      local ys = {}
      for i = 1, #xs do if i ~= ax + 1 then ys[#ys + 1] = xs[i] end end
      local want = {}
      for j = 0, xs[ax + 1] - 1 do
        want[j + 1] = { shape = ys, data = remap(x, xs, ys, function(idx)
          table.insert(idx, ax + 1, j)
          return idx
        end) }
      end
      T.check_output{ type = "unstack", attrs = { axis = axis, num = xs[ax + 1] },
        inputs = { X = T.tensor(x, { shape = xs }) }, outputs = { Y = xs[ax + 1] },
        expect = { Y = want }, atol = 0 }
    end)
  end
  it("has the gradient of a split", function()
    local s = { 2, 3, 4 }
    T.check_grad{ type = "unstack", attrs = { axis = 1, num = 3 }, outputs = { Y = 3 },
      inputs = { X = T.tensor(R.uniform(24, 5), { shape = s }) }, wrt = { "X" }, of = { "Y" } }
  end)
  it("refuses num other than X's dim", function()
    fails({ type = "unstack", attrs = { axis = 0, num = 3 }, outputs = { Y = 3 },
            inputs = { X = T.tensor(R.uniform(8), { shape = { 2, 4 } }) } }, "num 3 differs from dim 0 (2) of X")
  end)
end)

describe("expand_as (Fluid 1.8 test_expand_as_op.py)", function()
  local cases = { { { 12 }, { 24 } }, { { 12, 14 }, { 48, 14 } }, { { 2, 4, 5 }, { 4, 8, 5 } },
                  { { 1, 1, 7, 16 }, { 4, 6, 14, 16 } } }
  for _, c in ipairs(cases) do
    local xs, ts = c[1], c[2]
    it(("[%s] as [%s]"):format(table.concat(xs, ","), table.concat(ts, ",")), function()
      local x = R.uniform(numel(xs), #xs, -1, 1)
      local want = remap(x, xs, ts, function(idx)
        for i = 1, #idx do idx[i] = idx[i] % xs[i] end
        return idx
      end)
      local inputs = { X = T.tensor(x, { shape = xs }), target_tensor = T.tensor(R.uniform(numel(ts)), { shape = ts }) }
      T.check_output{ type = "expand_as", inputs = inputs, expect = { Out = { shape = ts, data = want } }, atol = 0 }
      if numel(xs) <= 150 then
        T.check_grad{ type = "expand_as", inputs = inputs, wrt = { "X" }, no_grad = { "target_tensor" } }
      end
    end)
  end
  it("refuses a target whose dims are not multiples of X's", function()
    fails({ type = "expand_as", inputs = { X = T.tensor(R.uniform(6), { shape = { 2, 3 } }),
            target_tensor = T.tensor(R.uniform(10), { shape = { 2, 5 } }) } }, "dim 1 is not a multiple of X")
  end)
end)

describe("flip (Fluid 1.8 test_flip.py)", function()
  local cases = { { { 6, 4, 2, 3 }, { 0, 1 } }, { { 2, 4, 4 }, { 0 } }, { { 4, 4, 6, 3 }, { 0, 2 } },
                  { { 4, 3, 1 }, { 0, 1, 2 } }, { { 6, 4, 2, 2 }, { 0, 1, 2, 3 } }, { { 3, 5 }, { -1 } } }
  for _, c in ipairs(cases) do
    local xs, dims = c[1], c[2]
    it(("[%s] dims {%s}"):format(table.concat(xs, ","), table.concat(dims, ",")), function()
      local x = R.uniform(numel(xs), 9, -1, 1)
      local rev = {}
      for _, d in ipairs(dims) do rev[(d < 0 and d + #xs or d) + 1] = true end
      local want = remap(x, xs, xs, function(idx)
        for i = 1, #idx do if rev[i] then idx[i] = xs[i] - 1 - idx[i] end end
        return idx
      end)
      T.check_output{ type = "flip", attrs = { dims = dims }, inputs = { X = T.tensor(x, { shape = xs }) },
        expect = { Out = { shape = xs, data = want } }, atol = 0 }
      if numel(xs) <= 100 then
        T.check_grad{ type = "flip", attrs = { dims = dims }, inputs = { X = T.tensor(x, { shape = xs }) }, wrt = { "X" } }
      end
    end)
  end
  it("flips int64 and refuses a repeated or out-of-range dim", function()
    T.check_output{ type = "flip", attrs = { dims = { 0 } },
      inputs = { X = T.tensor({ 1, 2, 3 }, { shape = { 3 }, dtype = "int64" }) },
      expect = { Out = { shape = { 3 }, data = { 3, 2, 1 } } }, atol = 0 }
    fails({ type = "flip", attrs = { dims = { 0, 0 } }, inputs = { X = T.tensor(R.uniform(4), { shape = { 2, 2 } }) } },
      "dims names dimension 0 twice")
    fails({ type = "flip", attrs = { dims = { 2 } }, inputs = { X = T.tensor(R.uniform(4), { shape = { 2, 2 } }) } },
      "dims[0] = 2 is out of range for X")
  end)
  it("takes Paddle 2.x's axis for dims; both given must agree", function()
    local x = T.tensor({ 1, 2, 3, 4, 5, 6 }, { shape = { 2, 3 } })
    local want = { Out = { shape = { 2, 3 }, data = { 6, 5, 4, 3, 2, 1 } } }
    T.check_output{ type = "flip", attrs = { axis = { 0, 1 } }, inputs = { X = x }, expect = want, atol = 0 }
    T.check_output{ type = "flip", attrs = { dims = { 0, 1 }, axis = { 0, 1 } }, inputs = { X = x }, expect = want,
      atol = 0 }
    T.check_grad{ type = "flip", attrs = { axis = { 1 } }, inputs = { X = T.tensor(R.uniform(6), { shape = { 2, 3 } }) },
      wrt = { "X" } }
    fails({ type = "flip", attrs = { dims = { 0 }, axis = { 1 } }, inputs = { X = x } }, "flip's attrs dims and axis")
  end)
end)

describe("roll with Paddle 2.x's axis", function()
  it("reads axis when dims is unset; both given must agree", function()
    local x = T.tensor({ 1, 2, 3, 4, 5, 6 }, { shape = { 2, 3 } })
    local want = { Out = { shape = { 2, 3 }, data = { 3, 1, 2, 6, 4, 5 } } }
    T.check_output{ type = "roll", attrs = { shifts = { 1 }, axis = { 1 } }, inputs = { X = x }, expect = want, atol = 0 }
    T.check_output{ type = "roll", attrs = { shifts = { 1 }, dims = { 1 }, axis = { 1 } }, inputs = { X = x },
      expect = want, atol = 0 }
    T.check_grad{ type = "roll", attrs = { shifts = { 1 }, axis = { 1 } },
      inputs = { X = T.tensor(R.uniform(6), { shape = { 2, 3 } }) }, wrt = { "X" } }
    fails({ type = "roll", attrs = { shifts = { 1 }, dims = { 0 }, axis = { 1 } }, inputs = { X = x } },
      "roll's attrs dims and axis")
  end)
end)

describe("roll (Fluid 1.8 test_roll_op.py)", function()
  -- Out[idx] = X[idx with idx[d] = (idx[d] - shift) mod n]
  local function roll_ref(x, xs, shifts, dims)
    if #dims == 0 then
      local n, out = #x, {}
      for p = 0, n - 1 do out[p + 1] = x[(p - shifts[1]) % n + 1] end
      return out
    end
    return remap(x, xs, xs, function(idx)
      for j, d in ipairs(dims) do
        local a = (d < 0 and d + #xs or d) + 1
        idx[a] = (idx[a] - shifts[j]) % xs[a]
      end
      return idx
    end)
  end
  local cases = { { { 100, 4, 5 }, { 101, -1 }, { 0, -2 } }, { { 100, 10, 5 }, { 8, -1 }, { -1, -2 } },
                  { { 3, 4 }, { 5 }, {} }, { { 3, 4, 2 }, { 1, -3 }, { 0, 2 } } }
  for _, c in ipairs(cases) do
    local xs, shifts, dims = c[1], c[2], c[3]
    it(("[%s] shifts {%s} dims {%s}"):format(table.concat(xs, ","), table.concat(shifts, ","), table.concat(dims, ",")),
      function()
        local x = R.uniform(numel(xs), 4, -1, 1)
        local attrs = { shifts = shifts, dims = dims }
        T.check_output{ type = "roll", attrs = attrs, inputs = { X = T.tensor(x, { shape = xs }) },
          expect = { Out = { shape = xs, data = roll_ref(x, xs, shifts, dims) } }, atol = 0 }
        if numel(xs) <= 100 then
          T.check_grad{ type = "roll", attrs = attrs, inputs = { X = T.tensor(x, { shape = xs }) }, wrt = { "X" } }
        end
      end)
  end
  it("refuses shifts and dims of different lengths", function()
    fails({ type = "roll", attrs = { shifts = { 1, 2 }, dims = { 0 } },
            inputs = { X = T.tensor(R.uniform(4), { shape = { 2, 2 } }) } }, "shifts has 2 values, dims 1")
  end)
end)

describe("tril_triu (Fluid 1.8 test_tril_triu_op.py)", function()
  local function ref(x, xs, lower, diag)
    local out, h, w = {}, xs[#xs - 1], xs[#xs]
    for p = 0, #x - 1 do
      local c, r = p % w, math.floor(p / w) % h
      local keep = lower and (c - r <= diag) or (not lower and c - r >= diag)
      out[p + 1] = keep and x[p + 1] or 0
    end
    return out
  end
  -- Fluid's cases: diagonals -3..3 on 2-D, 3-D and 4-D shapes, tril and triu
  local shapes = { { 3, 5 }, { 5, 3 }, { 2, 3, 4 }, { 2, 2, 3, 3 } }
  for _, lower in ipairs({ true, false }) do
    for _, xs in ipairs(shapes) do
      it(("%s [%s]"):format(lower and "tril" or "triu", table.concat(xs, ",")), function()
        local x = R.uniform(numel(xs), 6, -1, 1)
        for diag = -3, 3 do
          local attrs = { lower = lower, diagonal = diag }
          T.check_output{ type = "tril_triu", attrs = attrs, inputs = { X = T.tensor(x, { shape = xs }) },
            expect = { Out = { shape = xs, data = ref(x, xs, lower, diag) } }, atol = 0 }
        end
        T.check_grad{ type = "tril_triu", attrs = { lower = lower, diagonal = 1 },
          inputs = { X = T.tensor(x, { shape = xs }) }, wrt = { "X" } }
      end)
    end
  end
  it("refuses a 1-D X", function()
    fails({ type = "tril_triu", attrs = { lower = true }, inputs = { X = T.tensor(R.uniform(3), { shape = { 3 } }) } },
      "has rank 1; it must be at least 2-D")
  end)
end)

describe("trace (Fluid 1.8 test_trace_op.py)", function()
  local function ref(x, xs, offset, a1, a2)
    a1, a2 = (a1 < 0 and a1 + #xs or a1) + 1, (a2 < 0 and a2 + #xs or a2) + 1
    local rest = {}
    for i = 1, #xs do if i ~= a1 and i ~= a2 then rest[#rest + 1] = i end end
    local os = {}
    for i, d in ipairs(rest) do os[i] = xs[d] end
    local shape = #os > 0 and os or { 1 }
    local out = {}
    for q = 0, numel(os) - 1 do
      local r = unravel(q, os)
      local s, i = 0, offset < 0 and -offset or 0
      local j = offset > 0 and offset or 0
      while i < xs[a1] and j < xs[a2] do
        local idx = {}
        for k, d in ipairs(rest) do idx[d] = r[k] end
        idx[a1], idx[a2] = i, j
        s = s + x[ravel(idx, xs) + 1]
        i, j = i + 1, j + 1
      end
      out[q + 1] = s
    end
    return { shape = shape, data = out }
  end
  local cases = { { { 20, 6 }, 0, 0, 1 }, { { 2, 20, 2, 3 }, 1, 0, 2 }, { { 3, 2, 2, 2 }, -5, 1, -1 },
                  { { 3, 4, 5 }, -1, 2, 1 } }
  for _, c in ipairs(cases) do
    local xs, offset, a1, a2 = c[1], c[2], c[3], c[4]
    it(("[%s] offset %d axes %d, %d"):format(table.concat(xs, ","), offset, a1, a2), function()
      local x = R.uniform(numel(xs), 8, -1, 1)
      local attrs = { offset = offset, axis1 = a1, axis2 = a2 }
      T.check_output{ type = "trace", attrs = attrs, inputs = { Input = T.tensor(x, { shape = xs }) },
        expect = { Out = ref(x, xs, offset, a1, a2) }, atol = 1e-12 }
      T.check_grad{ type = "trace", attrs = attrs, inputs = { Input = T.tensor(x, { shape = xs }) }, wrt = { "Input" } }
    end)
  end
  it("refuses axis1 = axis2", function()
    fails({ type = "trace", attrs = { axis1 = 1, axis2 = -1 }, inputs = { Input = T.tensor(R.uniform(4), { shape = { 2, 2 } }) } },
      "axis1 and axis2 both name dim 1 of Input")
  end)
end)

describe("kron (Fluid 1.8 test_kron_op.py)", function()
  local function ref(x, xs, y, ys)
    local r = math.max(#xs, #ys)
    local xp, yp, os = {}, {}, {}
    for i = 1, r do
      xp[i], yp[i] = xs[i - (r - #xs)] or 1, ys[i - (r - #ys)] or 1
      os[i] = xp[i] * yp[i]
    end
    local out = {}
    for p = 0, numel(os) - 1 do
      local idx, xi, yi = unravel(p, os), {}, {}
      for i = 1, r do xi[i], yi[i] = math.floor(idx[i] / yp[i]), idx[i] % yp[i] end
      out[p + 1] = x[ravel(xi, xp) + 1] * y[ravel(yi, yp) + 1]
    end
    return { shape = os, data = out }
  end
  -- Fluid's three shapes, then small ones for the gradients
  local cases = { { { 10, 10 }, { 10, 10 } }, { { 5, 5, 4 }, { 10, 10 } }, { { 10, 10 }, { 2, 2, 5 } },
                  { { 2, 3 }, { 3, 2 }, true }, { { 2, 1, 2 }, { 3, 2 }, true } }
  for _, c in ipairs(cases) do
    local xs, ys = c[1], c[2]
    it(("[%s] x [%s]"):format(table.concat(xs, ","), table.concat(ys, ",")), function()
      local x, y = R.uniform(numel(xs), 2, -1, 1), R.uniform(numel(ys), 3, -1, 1)
      local inputs = { X = T.tensor(x, { shape = xs }), Y = T.tensor(y, { shape = ys }) }
      T.check_output{ type = "kron", inputs = inputs, expect = { Out = ref(x, xs, y, ys) }, atol = 1e-12 }
      if c[3] then T.check_grad{ type = "kron", inputs = inputs, wrt = { "X", "Y" } } end
    end)
  end
  it("multiplies int64 and refuses mixed dtypes", function()
    T.check_output{ type = "kron", inputs = { X = T.tensor({ 1, 2 }, { dtype = "int64", shape = { 2 } }),
      Y = T.tensor({ 3, 4 }, { dtype = "int64", shape = { 2 } }) },
      expect = { Out = { shape = { 4 }, data = { 3, 4, 6, 8 } } }, atol = 0 }
    fails({ type = "kron", inputs = { X = T.tensor({ 1, 2 }, { dtype = "int64", shape = { 2 } }),
      Y = T.tensor({ 3, 4 }, { shape = { 2 } }) } }, "they must have one dtype")
  end)
end)

describe("diag (Fluid 1.8 test_diag.py)", function()
  for _, c in ipairs({ { 10, "float64" }, { 3, "float32" }, { 4, "int64" } }) do
    it(("%d values, %s"):format(c[1], c[2]), function()
      local n = c[1]
      local d = c[2] == "int64" and { 5, -2, 7, 0 } or R.uniform(n, 4, -1, 1)
      local want = {}
      for i = 0, n - 1 do for j = 0, n - 1 do want[i * n + j + 1] = i == j and d[i + 1] or 0 end end
      T.check_output{ type = "diag", dtype = c[2], inputs = { Diagonal = T.tensor(d, { shape = { n }, dtype = c[2] }) },
        expect = { Out = { shape = { n, n }, data = want } }, atol = c[2] == "float32" and 1e-7 or 0 }
    end)
  end
  it("refuses a 2-D Diagonal", function()
    fails({ type = "diag", inputs = { Diagonal = T.tensor(R.uniform(4), { shape = { 2, 2 } }) } },
      "Diagonal 'in_Diagonal_1' has rank 2; it must be 1-D")
  end)
end)

describe("eye (Fluid 1.8 test_eye_op.py)", function()
  local function ident(r, c)
    local t = {}
    for i = 0, r - 1 do for j = 0, c - 1 do t[i * c + j + 1] = i == j and 1 or 0 end end
    return t
  end
  for _, c in ipairs({ { 219, 319, 3 }, { 50, -1, 5 }, { 99, 1, 6 }, { 3, 5, 2 } }) do
    it(("%d x %d, dtype %d"):format(c[1], c[2], c[3]), function()
      local cols = c[2] < 0 and c[1] or c[2]
      T.check_output{ type = "eye", attrs = { num_rows = c[1], num_columns = c[2], dtype = c[3] },
        expect = { Out = { shape = { c[1], cols }, data = ident(c[1], cols) } }, atol = 0 }
    end)
  end
  it("refuses a dtype it does not make", function()
    fails({ type = "eye", attrs = { num_rows = 2, dtype = 0 } }, "eye makes float32, float64, int32 or int64")
  end)
end)
