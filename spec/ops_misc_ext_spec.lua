-- pad, pad3d, fill_any_like, argsort, reduce_all/reduce_any,
-- elementwise_floordiv/mod: the cases of Paddle's test_pad_op.py,
-- test_pad3d_op.py, test_fill_any_like_op.py, test_argsort_op.py,
-- test_reduce_op.py (all/any) and test_elementwise_floordiv_op.py /
-- test_elementwise_mod_op.py (shapes reduced), expected values in plain Lua,
-- gradients against finite differences in float64.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")
local I = require("spec.helpers.index")
local numel, unravel, ravel = I.numel, I.unravel, I.ravel

-- numpy.pad's modes for one index: the source index or nil (constant)
local function src(mode, o, before, n)
  local i = o - before
  if i >= 0 and i < n then return i end
  if mode == "constant" then return nil end
  if mode == "replicate" then return i < 0 and 0 or n - 1 end
  if mode == "circular" then return i % n end
  while i < 0 or i >= n do   -- reflect
    if i < 0 then i = -i else i = 2 * (n - 1) - i end
  end
  return i
end

local function pad_ref(x, xs, pads, mode, value)
  local os = {}
  for i, d in ipairs(xs) do os[i] = d + pads[2 * i - 1] + pads[2 * i] end
  local out = {}
  for p = 0, numel(os) - 1 do
    local idx = unravel(p, os)
    local s, ok = {}, true
    for d = 1, #xs do
      s[d] = src(mode, idx[d], pads[2 * d - 1], xs[d])
      if s[d] == nil then ok = false end
    end
    out[p + 1] = ok and x[ravel(s, xs) + 1] or value
  end
  return out, os
end

describe("pad (test_pad_op.py)", function()
  local cases = {
    { { 4, 5 }, { 0, 1, 2, 3 }, 0.0 },
    { { 2, 2, 3 }, { 0, 1, 2, 3, 1, 0 }, 0.5 },
    { { 3, 4, 2 }, { 0, 0, 3, 2, 1, 1 }, 1.0 },
  }
  for ci, c in ipairs(cases) do
    it(("X %s, paddings {%s}, pad_value %g"):format(table.concat(c[1], "x"), table.concat(c[2], ","), c[3]), function()
      local x = R.uniform(numel(c[1]), ci, -1, 1)
      local want, os = pad_ref(x, c[1], c[2], "constant", c[3])
      T.check_output{ type = "pad", attrs = { paddings = c[2], pad_value = c[3] },
                      inputs = { X = T.tensor(x, { shape = c[1] }) },
                      expect = { Out = { shape = os, data = want } }, atol = 0 }
      T.check_grad{ type = "pad", attrs = { paddings = c[2], pad_value = c[3] },
                    inputs = { X = T.tensor(x, { shape = c[1] }) }, wrt = { "X" } }
    end)
  end
end)

describe("pad3d (test_pad3d_op.py)", function()
  local xs = { 2, 2, 3, 4, 3 }
  -- paddings [left, right, top, bottom, front, back] pad W, H, D
  local function full_pads(p) return { 0, 0, 0, 0, p[5], p[6], p[3], p[4], p[1], p[2] } end
  local cases = {
    { "constant", { 1, 2, 0, 1, 2, 1 }, 0.5 },
    { "reflect", { 1, 2, 2, 1, 1, 2 } },
    { "replicate", { 2, 1, 3, 0, 1, 2 } },
    { "circular", { 1, 2, 3, 1, 2, 2 } },
  }
  for ci, c in ipairs(cases) do
    it("mode " .. c[1], function()
      local x = R.uniform(numel(xs), ci, -1, 1)
      local want, os = pad_ref(x, xs, full_pads(c[2]), c[1], c[3] or 0)
      local attrs = { mode = c[1], paddings = c[2], value = c[3] or 0 }
      T.check_output{ type = "pad3d", attrs = attrs, inputs = { X = T.tensor(x, { shape = xs }) },
                      expect = { Out = { shape = os, data = want } }, atol = 0 }
      local gs = { 1, 1, 3, 4, 3 }
      T.check_grad{ type = "pad3d", attrs = attrs,
                    inputs = { X = T.tensor(R.uniform(numel(gs), ci + 5, -1, 1), { shape = gs }) }, wrt = { "X" } }
    end)
  end

  it("takes the pads from a Paddings tensor", function()
    local x = R.uniform(numel(xs), 9, -1, 1)
    local p = { 1, 0, 0, 2, 1, 1 }
    local want, os = pad_ref(x, xs, full_pads(p), "replicate", 0)
    T.check_output{ type = "pad3d", attrs = { mode = "replicate", paddings = { 0, 0, 0, 0, 0, 0 } },
                    inputs = { X = T.tensor(x, { shape = xs }), Paddings = T.tensor(p, { shape = { 6 }, dtype = "int32" }) },
                    expect = { Out = { shape = os, data = want } }, atol = 0 }
  end)

  it("refuses reflect pads as large as the dim", function()
    local ok, err = pcall(T.run, { type = "pad3d", attrs = { mode = "reflect", paddings = { 3, 0, 0, 0, 0, 0 } },
                                   inputs = { X = T.tensor(R.uniform(numel(xs), 1, -1, 1), { shape = xs }) } })
    assert.is_false(ok)
    assert.matches("reflect padding (3, 0) must be less than the dim (3)", err, 1, true)
  end)
end)

describe("fill_any_like (test_fill_any_like_op.py)", function()
  it("fills X's shape with value, in X's dtype or attr dtype", function()
    T.check_output{ type = "fill_any_like", attrs = { value = 0.25 },
                    inputs = { X = T.tensor(R.uniform(6, 1, -1, 1), { shape = { 2, 3 } }) },
                    expect = { Out = { shape = { 2, 3 }, data = { 0.25, 0.25, 0.25, 0.25, 0.25, 0.25 } } }, atol = 0 }
    T.check_output{ type = "fill_any_like", attrs = { value = 7, dtype = 3 },
                    inputs = { X = T.tensor({ 1.5, 2.5 }, { shape = { 2 } }) },
                    expect = { Out = { shape = { 2 }, data = { 7, 7 } } }, atol = 0 }
    local out = T.run{ type = "fill_any_like", attrs = { value = 7, dtype = 3 },
                       inputs = { X = T.tensor({ 1.5, 2.5 }, { shape = { 2 } }) } }
    assert.are.same({ 7, 7 }, out.Out[1].data)
  end)
end)

describe("argsort (test_argsort_op.py)", function()
  local function ref(x, xs, axis, descending)
    if axis < 0 then axis = axis + #xs end
    local out, idx = {}, {}
    local outer, mid, inner = 1, xs[axis + 1], 1
    for i = 1, axis do outer = outer * xs[i] end
    for i = axis + 2, #xs do inner = inner * xs[i] end
    for u = 0, outer - 1 do
      for v = 0, inner - 1 do
        local items = {}
        for i = 0, mid - 1 do items[#items + 1] = { x[(u * mid + i) * inner + v + 1], i } end
        table.sort(items, function(a, b)
          if a[1] ~= b[1] then if descending then return a[1] > b[1] end return a[1] < b[1] end
          return a[2] < b[2]
        end)
        for i, it in ipairs(items) do
          local at = (u * mid + i - 1) * inner + v + 1
          out[at], idx[at] = it[1], it[2]
        end
      end
    end
    return out, idx
  end
  for _, c in ipairs({ { { 2, 3, 4 }, -1, false }, { { 2, 3, 4 }, 1, true }, { { 5, 2 }, 0, false } }) do
    it(("X %s, axis %d, descending %s"):format(table.concat(c[1], "x"), c[2], tostring(c[3])), function()
      local x = R.uniform(numel(c[1]), 4, -1, 1)
      local want, idx = ref(x, c[1], c[2], c[3])
      local attrs = { axis = c[2], descending = c[3] }
      T.check_output{ type = "argsort", attrs = attrs, inputs = { X = T.tensor(x, { shape = c[1] }) },
                      expect = { Out = { shape = c[1], data = want }, Indices = { shape = c[1], data = idx } }, atol = 0 }
      T.check_grad{ type = "argsort", attrs = attrs, inputs = { X = T.tensor(x, { shape = c[1] }) }, wrt = { "X" } }
    end)
  end
end)

describe("reduce_all / reduce_any (test_reduce_op.py)", function()
  local xs = { 2, 3, 4 }
  local function ref(x, dims, all, keep)
    local os, red = {}, {}
    for _, d in ipairs(dims) do red[d + 1] = true end
    for i, d in ipairs(xs) do if not red[i] then os[#os + 1] = d elseif keep then os[#os + 1] = 1 end end
    if #os == 0 then os = { 1 } end
    local out = {}
    for p = 0, numel(xs) - 1 do
      local idx, oi = unravel(p, xs), {}
      for i = 1, #xs do if not red[i] then oi[#oi + 1] = idx[i] elseif keep then oi[#oi + 1] = 0 end end
      local q = #oi > 0 and ravel(oi, os) + 1 or 1
      if out[q] == nil then out[q] = all end
      if all then out[q] = out[q] and x[p + 1] else out[q] = out[q] or x[p + 1] end
    end
    return out, os
  end
  local x = {}
  for i = 1, numel(xs) do x[i] = (i * 7) % 5 ~= 0 end
  for _, op in ipairs({ "reduce_all", "reduce_any" }) do
    for _, c in ipairs({ { { 1 }, false }, { { 0, 2 }, true }, { { -1 }, false } }) do
      it(("%s over dims {%s}, keep_dim %s"):format(op, table.concat(c[1], ","), tostring(c[2])), function()
        local dims = {}
        for i, d in ipairs(c[1]) do dims[i] = d < 0 and d + #xs or d end
        local want, os = ref(x, dims, op == "reduce_all", c[2])
        T.check_output{ type = op, attrs = { dim = c[1], keep_dim = c[2] },
                        inputs = { X = T.tensor(x, { shape = xs, dtype = "bool" }) },
                        expect = { Out = { shape = os, data = want } } }
      end)
    end
    it(op .. " refuses more dims than a tensor has (the decoder's message, at insertion)", function()
      local ok, err = pcall(T.run, { type = op, attrs = { dim = { 0, 1, 2, 0, 1, 2, 0, 1, 2, 0 } },
                                     inputs = { X = T.tensor(x, { shape = xs, dtype = "bool" }) } })
      assert.is_false(ok)
      assert.matches("attr dim must be INTS or LONGS of at most 9 values", err, 1, true)
    end)
    it(op .. " with reduce_all", function()
      local want = op == "reduce_any"
      T.check_output{ type = op, attrs = { reduce_all = true },
                      inputs = { X = T.tensor(x, { shape = xs, dtype = "bool" }) },
                      expect = { Out = { shape = { 1 }, data = { want } } } }
    end)
  end
end)

describe("elementwise_floordiv / elementwise_mod", function()
  it("rounds toward minus infinity; the remainder takes the divisor's sign (Python's // and %)", function()
    local x = { 7, -7, 7, -7, 6, 0 }
    local y = { 2, 2, -2, -2, 3, 5 }
    for _, dt in ipairs({ "int32", "int64", "float64" }) do
      T.check_output{ type = "elementwise_floordiv",
                      inputs = { X = T.tensor(x, { shape = { 6 }, dtype = dt }), Y = T.tensor(y, { shape = { 6 }, dtype = dt }) },
                      expect = { Out = { shape = { 6 }, data = { 3, -4, -4, 3, 2, 0 } } }, atol = 0 }
      T.check_output{ type = "elementwise_mod",
                      inputs = { X = T.tensor(x, { shape = { 6 }, dtype = dt }), Y = T.tensor(y, { shape = { 6 }, dtype = dt }) },
                      expect = { Out = { shape = { 6 }, data = { 1, 1, -1, -1, 0, 0 } } }, atol = 0 }
    end
    T.check_output{ type = "elementwise_mod",
                    inputs = { X = T.tensor({ 5.5, -5.5 }, { shape = { 2 } }), Y = T.tensor({ 2, 2 }, { shape = { 2 } }) },
                    expect = { Out = { shape = { 2 }, data = { 1.5, 0.5 } } }, atol = 1e-12 }
  end)

  it("broadcasts Y like elementwise_* (test_elementwise_mod_op.py's axis case)", function()
    local xs = { 2, 3, 4 }
    local x, y = {}, { 3, 5, 7 }
    for i = 1, numel(xs) do x[i] = i * 11 - 40 end
    local want = {}
    for p = 0, numel(xs) - 1 do
      local idx = unravel(p, xs)
      local a, b = x[p + 1], y[idx[2] + 1]
      want[p + 1] = a - math.floor(a / b) * b
    end
    T.check_output{ type = "elementwise_mod", attrs = { axis = 1 },
                    inputs = { X = T.tensor(x, { shape = xs, dtype = "int64" }), Y = T.tensor(y, { shape = { 3 }, dtype = "int64" }) },
                    expect = { Out = { shape = xs, data = want } }, atol = 0 }
  end)

  it("refuses an integer zero divisor", function()
    local ok, err = pcall(T.run, { type = "elementwise_floordiv",
      inputs = { X = T.tensor({ 1, 2 }, { shape = { 2 }, dtype = "int32" }), Y = T.tensor({ 1, 0 }, { shape = { 2 }, dtype = "int32" }) } })
    assert.is_false(ok)
    assert.matches("integer division by zero (Y[1] is 0", err, 1, true)
  end)
end)
