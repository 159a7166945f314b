-- range, linspace, size, cross, diag_embed, meshgrid, index_sample, scatter,
-- scatter_nd_add, strided_slice, crop_tensor, pixel_shuffle,
-- shuffle_channel, space_to_depth: the cases of Fluid 1.8's test_range.py,
-- test_linspace.py, test_size_op.py, test_cross_op.py, test_diag_embed.py,
-- test_meshgrid_op.py, test_index_sample_op.py, test_scatter_op.py,
-- test_scatter_nd_op.py, test_strided_slice_op.py, test_crop_tensor_op.py,
-- test_pixel_shuffle.py, test_shuffle_channel_op.py and
-- test_space_to_depth_op.py (same attributes; shapes shrunk where Fluid's
-- are large), expected values computed here in plain Lua; float64
-- gradients against finite differences.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")
local I = require("spec.helpers.index")
local numel, unravel, ravel = I.numel, I.unravel, I.ravel

local function fails(spec, msg)
  local ok, err = pcall(T.run, spec)
  assert.is_false(ok)
  assert.matches(msg, tostring(err), 1, true)
end

local function f64(data, shape) return T.tensor(data, { shape = shape, dtype = "float64" }) end
local function i64(data, shape) return T.tensor(data, { shape = shape, dtype = "int64" }) end
local function i32(data, shape) return T.tensor(data, { shape = shape, dtype = "int32" }) end

describe("range (Fluid 1.8 test_range.py)", function()
  local cases = { { 0, 1, 0.2, "float32" }, { 1, 2, 0.25, "float32" }, { -1, -10, -2, "float32" },
                  { -10, -1, 2, "float64" }, { 0, 5, 1, "int32" }, { 10, 1, -3, "int64" } }
  for _, c in ipairs(cases) do
    local s, e, st, dt = c[1], c[2], c[3], c[4]
    it(("%s %g, %g, %g"):format(dt, s, e, st), function()
      local n = math.ceil(math.abs((e - s) / st))
      local want, v = {}, s
      for i = 1, n do want[i] = v; v = v + st end
      local one = function(x) return T.tensor({ x }, { shape = { 1 }, dtype = dt }) end
      T.check_output{ type = "range", inputs = { Start = one(s), End = one(e), Step = one(st) },
        expect = { Out = { shape = { n }, data = want } }, atol = 1e-5 }
    end)
  end
  it("refuses a step pointing away from End", function()
    local one = function(x) return T.tensor({ x }, { shape = { 1 }, dtype = "float32" }) end
    fails({ type = "range", inputs = { Start = one(0), End = one(5), Step = one(-1) } }, "Step must be nonzero")
  end)
end)

describe("linspace (Fluid 1.8 test_linspace.py)", function()
  local cases = { { 0, 10, 11, "float32" }, { 0, 10, 11, "float64" }, { 10, 0, 5, "float32" },
                  { 0, 10, 1, "float32" } }
  for _, c in ipairs(cases) do
    it(("%s %g..%g x%d"):format(c[4], c[1], c[2], c[3]), function()
      local s, e, n, dt = c[1], c[2], c[3], c[4]
      local want = {}
      for i = 0, n - 1 do want[i + 1] = n > 1 and s + (e - s) / (n - 1) * i or s end
      T.check_output{ type = "linspace", attrs = { dtype = T.DTYPES[dt] },
        inputs = { Start = T.tensor({ s }, { shape = { 1 }, dtype = dt }),
                   Stop = T.tensor({ e }, { shape = { 1 }, dtype = dt }), Num = i32({ n }, { 1 }) },
        expect = { Out = { shape = { n }, data = want } }, atol = 1e-5 }
    end)
  end
  it("refuses Num 0", function()
    fails({ type = "linspace", attrs = { dtype = T.DTYPES.float32 },
            inputs = { Start = T.tensor({ 0 }), Stop = T.tensor({ 1 }), Num = i32({ 0 }, { 1 }) } },
      "it must be a positive integer")
  end)
end)

describe("size (Fluid 1.8 test_size_op.py)", function()
  for _, s in ipairs({ { 1, 2 }, { 3, 4, 5 }, { 7 } }) do
    it("[" .. table.concat(s, ",") .. "]", function()
      T.check_output{ type = "size", inputs = { Input = T.tensor(R.uniform(numel(s)), { shape = s }) },
        expect = { Out = { shape = { 1 }, data = { numel(s) } } }, atol = 0 }
    end)
  end
end)

describe("cross (Fluid 1.8 test_cross_op.py)", function()
  -- Out = X x Y along dim d
  local function ref(x, y, s, d)
    local out = {}
    for p = 0, numel(s) - 1 do
      local idx = unravel(p, s)
      local k = idx[d + 1]
      local function at(v, j) idx[d + 1] = j; local r = v[ravel(idx, s) + 1]; idx[d + 1] = k; return r end
      local a1, a2 = (k + 1) % 3, (k + 2) % 3
      out[p + 1] = at(x, a1) * at(y, a2) - at(x, a2) * at(y, a1)
    end
    return out
  end
  local cases = { { { 12, 3, 1 }, -2, 1 }, { { 16, 3 }, nil, 1 }, { { 3, 4 }, 0, 0 } }
  for _, c in ipairs(cases) do
    local s, dim, d = c[1], c[2], c[3]
    it(("[%s] dim %s"):format(table.concat(s, ","), tostring(dim)), function()
      local x, y = R.uniform(numel(s), 3), R.uniform(numel(s), 5)
      local attrs = dim and { dim = dim } or nil
      T.check_output{ type = "cross", attrs = attrs, inputs = { X = f64(x, s), Y = f64(y, s) },
        expect = { Out = { shape = s, data = ref(x, y, s, d) } }, atol = 1e-12 }
      T.check_grad{ type = "cross", attrs = attrs, inputs = { X = f64(x, s), Y = f64(y, s) }, wrt = { "X", "Y" } }
    end)
  end
  it("refuses a dim not of size 3", function()
    fails({ type = "cross", attrs = { dim = 1 }, inputs = { X = f64(R.uniform(12), { 3, 4 }), Y = f64(R.uniform(12), { 3, 4 }) } },
      "dim 1 of X")
  end)
end)

describe("diag_embed (Fluid 1.8 test_diag_embed.py)", function()
  local cases = { { { 2, 3 }, 0, 1, 2 }, { { 2, 3, 4 }, -1, 0, 2 }, { { 4 }, 2, -2, -1 } }
  for _, c in ipairs(cases) do
    local s, off, dim1, dim2 = c[1], c[2], c[3], c[4]
    it(("[%s] offset %d dims %d %d"):format(table.concat(s, ","), off, dim1, dim2), function()
      local x = R.uniform(numel(s), 4)
      local r = #s + 1
      local d1, d2 = dim1 < 0 and dim1 + r or dim1, dim2 < 0 and dim2 + r or dim2
      local m = s[#s] + math.abs(off)
      local os, j = {}, 1
      for i = 0, r - 1 do
        if i == d1 or i == d2 then os[i + 1] = m else os[i + 1] = s[j]; j = j + 1 end
      end
      local want = {}
      for p = 0, numel(os) - 1 do
        local idx = unravel(p, os)
        local a, b = idx[d1 + 1], idx[d2 + 1]
        local v = 0
        if b - a == off then
          local xi = {}
          for i = 0, r - 1 do if i ~= d1 and i ~= d2 then xi[#xi + 1] = idx[i + 1] end end
          xi[#xi + 1] = off >= 0 and a or b
          v = x[ravel(xi, s) + 1]
        end
        want[p + 1] = v
      end
      T.check_output{ type = "diag_embed", attrs = { offset = off, dim1 = dim1, dim2 = dim2 },
        inputs = { Input = f64(x, s) }, expect = { Out = { shape = os, data = want } }, atol = 0 }
    end)
  end
  it("refuses equal dims", function()
    fails({ type = "diag_embed", attrs = { dim1 = 1, dim2 = -1 }, inputs = { Input = f64(R.uniform(3), { 3 }) } },
      "must be distinct dims of Out")
  end)
end)

describe("meshgrid (Fluid 1.8 test_meshgrid_op.py)", function()
  for _, lens in ipairs({ { 10, 20 }, { 3, 4, 2 } }) do
    it("lengths " .. table.concat(lens, ","), function()
      local xs, ins, want = {}, {}, {}
      for i, n in ipairs(lens) do xs[i] = R.uniform(n, i); ins[i] = f64(xs[i], { n }) end
      for i = 1, #lens do
        local d = {}
        for p = 0, numel(lens) - 1 do d[p + 1] = xs[i][unravel(p, lens)[i] + 1] end
        want[i] = { shape = lens, data = d }
      end
      T.check_output{ type = "meshgrid", inputs = { X = ins }, outputs = { Out = #lens },
        expect = { Out = want }, atol = 0 }
      if numel(lens) <= 30 then
        T.check_grad{ type = "meshgrid", inputs = { X = ins }, outputs = { Out = #lens }, wrt = { "X" }, of = { "Out" } }
      end
    end)
  end
end)

describe("index_sample (Fluid 1.8 test_index_sample_op.py)", function()
  local cases = { { { 10, 20 }, 10, "int32" }, { { 5, 12 }, 6, "int64" }, { { 10, 8 }, 8, "int64" } }
  for _, c in ipairs(cases) do
    local xs, k, idt = c[1], c[2], c[3]
    it(("X [%d,%d], %d %s indices a row"):format(xs[1], xs[2], k, idt), function()
      local x = R.uniform(numel(xs), 6)
      local ix, want = {}, {}
      local r = R.uniform(xs[1] * k, 8, 0, xs[2])
      for i = 1, xs[1] * k do ix[i] = math.floor(r[i]) end
      for b = 0, xs[1] - 1 do
        for j = 0, k - 1 do want[b * k + j + 1] = x[b * xs[2] + ix[b * k + j + 1] + 1] end
      end
      local inputs = { X = f64(x, xs), Index = T.tensor(ix, { shape = { xs[1], k }, dtype = idt }) }
      T.check_output{ type = "index_sample", inputs = inputs, expect = { Out = { shape = { xs[1], k }, data = want } },
        atol = 0 }
      if numel(xs) <= 60 then T.check_grad{ type = "index_sample", inputs = inputs, wrt = { "X" }, no_grad = { "Index" } } end
    end)
  end
  it("refuses an index out of range", function()
    fails({ type = "index_sample", inputs = { X = f64(R.uniform(6), { 2, 3 }), Index = i64({ 0, 3 }, { 2, 1 }) } },
      "Index[1, 0] = 3 is out of range")
  end)
end)

describe("scatter (Fluid 1.8 test_scatter_op.py)", function()
  local function ref(x, xs, ids, u, overwrite)
    local out, w = {}, numel(xs) / xs[1]
    for i = 1, #x do out[i] = x[i] end
    if not overwrite then
      for _, r in ipairs(ids) do for j = 1, w do out[r * w + j] = 0 end end
    end
    for i, r in ipairs(ids) do
      for j = 1, w do
        local v = u[(i - 1) * w + j]
        out[r * w + j] = overwrite and v or out[r * w + j] + v
      end
    end
    return out
  end
  local cases = { { { 3, 50 }, { 1, 2 }, true, "int32" }, { { 3, 50 }, { 1, 2 }, true, "int64" },
                  { { 3, 3 }, { 1, 1 }, false, "int64" }, { { 4, 3, 2 }, { 2, 0, 2 }, false, "int32" } }
  for _, c in ipairs(cases) do
    local xs, ids, ow, idt = c[1], c[2], c[3], c[4]
    it(("X [%s] Ids {%s} overwrite %s"):format(table.concat(xs, ","), table.concat(ids, ","), tostring(ow)), function()
      local x = R.uniform(numel(xs), 2)
      local us = { #ids }
      for i = 2, #xs do us[i] = xs[i] end
      local u = R.uniform(numel(us), 3)
      local inputs = { X = f64(x, xs), Ids = T.tensor(ids, { shape = { #ids }, dtype = idt }), Updates = f64(u, us) }
      T.check_output{ type = "scatter", attrs = { overwrite = ow }, inputs = inputs,
        expect = { Out = { shape = xs, data = ref(x, xs, ids, u, ow) } }, atol = 1e-12 }
      local uniq = not (ids[1] == ids[2] or ids[1] == ids[3] or ids[2] == ids[3])
      if numel(xs) <= 60 and (uniq or not ow) then
        T.check_grad{ type = "scatter", attrs = { overwrite = ow }, inputs = inputs, wrt = { "X", "Updates" },
          no_grad = { "Ids" } }
      end
    end)
  end
  it("refuses Updates of the wrong shape", function()
    fails({ type = "scatter", inputs = { X = f64(R.uniform(6), { 3, 2 }), Ids = i64({ 0 }, { 1 }),
            Updates = f64(R.uniform(3), { 1, 3 }) } }, "Updates '")
  end)
end)

describe("scatter_nd_add (Fluid 1.8 test_scatter_nd_op.py)", function()
  local function ref(x, xs, ix, is, u)
    local out = {}
    for i = 1, #x do out[i] = x[i] end
    local k = is[#is]
    local m = numel(is) / k
    local slice = 1
    for i = k + 1, #xs do slice = slice * xs[i] end
    for t = 0, m - 1 do
      local off = 0
      for j = 1, k do off = off * xs[j] + ix[t * k + j] end
      for j = 1, slice do out[off * slice + j] = out[off * slice + j] + u[t * slice + j] end
    end
    return out
  end
  local cases = {
    { { 98 }, { 5, 1 }, { 3, 7, 7, 0, 97 } },                      -- 1-D X, repeated index
    { { 3, 5 }, { 3, 2 }, { 1, 1, 0, 1, 1, 3 } },                  -- full tuples
    { { 4, 3, 2 }, { 2, 2, 1 }, { 3, 0, 3, 1 } },                  -- index batch dims, slices of [3, 2]
  }
  for _, c in ipairs(cases) do
    local xs, is, ix = c[1], c[2], c[3]
    it(("X [%s] Index [%s]"):format(table.concat(xs, ","), table.concat(is, ",")), function()
      local k = is[#is]
      local us = {}
      for i = 1, #is - 1 do us[#us + 1] = is[i] end
      for i = k + 1, #xs do us[#us + 1] = xs[i] end
      local x, u = R.uniform(numel(xs), 4), R.uniform(numel(us), 5)
      local inputs = { X = f64(x, xs), Index = i64(ix, is), Updates = f64(u, us) }
      T.check_output{ type = "scatter_nd_add", inputs = inputs,
        expect = { Out = { shape = xs, data = ref(x, xs, ix, is, u) } }, atol = 1e-12 }
      T.check_grad{ type = "scatter_nd_add", inputs = inputs, wrt = { "X", "Updates" }, no_grad = { "Index" } }
    end)
  end
  it("refuses an index out of range", function()
    fails({ type = "scatter_nd_add", inputs = { X = f64(R.uniform(3), { 3 }), Index = i64({ 3 }, { 1, 1 }),
            Updates = f64({ 1 }, { 1 }) } }, "Index[0][0] = 3 is out of range")
  end)
end)

-- Python's slice rules, per axis: the indices taken
local function py_range(n, s, e, st)
  if s < 0 then s = s + n end
  if e < 0 then e = e + n end
  local out = {}
  if st > 0 then
    s, e = math.max(0, math.min(n, s)), math.max(0, math.min(n, e))
    local i = s
    while i < e do out[#out + 1] = i; i = i + st end
  else
    s, e = math.max(-1, math.min(n - 1, s)), math.max(-1, math.min(n - 1, e))
    local i = s
    while i > e do out[#out + 1] = i; i = i + st end
  end
  return out
end

describe("strided_slice (Fluid 1.8 test_strided_slice_op.py)", function()
  local function ref(x, xs, axes, starts, ends, strides)
    local take = {}
    for i = 1, #xs do
      take[i] = {}
      for j = 1, xs[i] do take[i][j] = j - 1 end
    end
    for i, a in ipairs(axes) do take[a + 1] = py_range(xs[a + 1], starts[i], ends[i], strides[i]) end
    local os = {}
    for i = 1, #xs do os[i] = #take[i] end
    local out = {}
    for p = 0, numel(os) - 1 do
      local idx = unravel(p, os)
      for i = 1, #idx do idx[i] = take[i][idx[i] + 1] end
      out[p + 1] = x[ravel(idx, xs) + 1]
    end
    return out, os
  end
  local cases = {
    { { 10 }, { 0 }, { -4 }, { -3 }, { 1 } },
    { { 10 }, { 0 }, { 3 }, { 8 }, { 1 } },
    { { 10 }, { 0 }, { 8 }, { 3 }, { -1 } },
    { { 3, 3, 3 }, { 0, 1, 2 }, { -3, 0, 2 }, { 3, 3, 4 }, { 1, 1, 1 } },
    { { 3, 3, 3 }, { 0, 1, 2 }, { 1, 0, 0 }, { 2, 1, 3 }, { 1, 1, 1 }, { 0, 1 } },
    { { 5, 5, 5 }, { 0, 1, 2 }, { 1, -1, 0 }, { 2, -3, 3 }, { 1, -1, 1 } },
    { { 5, 5, 5 }, { 0, 1, 2 }, { 1, 0, 0 }, { 2, -1, 3 }, { 1, 1, 1 } },
    { { 3, 3, 3, 6, 7, 8 }, { 0, 1, 2, 3, 4, 5 }, { 1, 0, 0, 0, 1, 2 }, { 2, 2, 3, 1, 2, 8 },
      { 1, 1, 1, 1, 1, 2 } },
  }
  for n, c in ipairs(cases) do
    local xs, axes, st, en, sd, dec = c[1], c[2], c[3], c[4], c[5], c[6]
    it("case " .. n, function()
      local x = R.uniform(numel(xs), n)
      local want, os = ref(x, xs, axes, st, en, sd)
      if dec then
        local keep, drop = {}, {}
        for _, d in ipairs(dec) do drop[d + 1] = true end
        for i = 1, #os do if not drop[i] then keep[#keep + 1] = os[i] end end
        os = #keep > 0 and keep or { 1 }
      end
      local attrs = { axes = axes, starts = st, ends = en, strides = sd, infer_flags = {}, decrease_axis = dec or {} }
      T.check_output{ type = "strided_slice", attrs = attrs, inputs = { Input = f64(x, xs) },
        expect = { Out = { shape = os, data = want } }, atol = 0 }
      if numel(xs) <= 130 then
        T.check_grad{ type = "strided_slice", attrs = attrs, inputs = { Input = f64(x, xs) }, wrt = { "Input" } }
      end
    end)
  end
  it("takes starts, ends and strides from tensors", function()
    local xs = { 3, 4, 5 }
    local x = R.uniform(numel(xs), 11)
    local want, os = ref(x, xs, { 1, 2 }, { 1, -1 }, { 4, 0 }, { 2, -2 })
    local inputs = { Input = f64(x, xs), StartsTensor = i32({ 1, -1 }, { 2 }),
                     EndsTensorList = { i64({ 4 }, { 1 }), i64({ 0 }, { 1 }) }, StridesTensor = i64({ 2, -2 }, { 2 }) }
    local attrs = { axes = { 1, 2 }, starts = { 0, 0 }, ends = { 1, 1 }, strides = { 1, 1 }, infer_flags = { -1, -1 } }
    T.check_output{ type = "strided_slice", attrs = attrs, inputs = inputs,
      expect = { Out = { shape = os, data = want } }, atol = 0 }
    T.check_grad{ type = "strided_slice", attrs = attrs, inputs = inputs, wrt = { "Input" },
      no_grad = { "StartsTensor", "EndsTensorList", "StridesTensor" } }
  end)
  it("refuses a zero stride", function()
    fails({ type = "strided_slice", attrs = { axes = { 0 }, starts = { 0 }, ends = { 2 }, strides = { 0 } },
            inputs = { Input = f64(R.uniform(4), { 4 }) } }, "strides[0] is 0")
  end)
end)

describe("crop_tensor (Fluid 1.8 test_crop_tensor_op.py)", function()
  local function ref(x, xs, os, off)
    local out = {}
    for p = 0, numel(os) - 1 do
      local idx = unravel(p, os)
      for i = 1, #idx do idx[i] = idx[i] + off[i] end
      out[p + 1] = x[ravel(idx, xs) + 1]
    end
    return out
  end
  local cases = { { { 10, 10 }, { 2, 2 }, { 1, 2 } }, { { 3, 5, 4, 2 }, { 2, -1, 4, 2 }, { 1, 1, 0, 0 } },
                  { { 6, 7 }, { 6, 7 }, { 0, 0 } } }
  for _, c in ipairs(cases) do
    local xs, shape, off = c[1], c[2], c[3]
    it(("X [%s] shape [%s] offsets [%s]"):format(table.concat(xs, ","), table.concat(shape, ","),
                                              table.concat(off, ",")), function()
      local x = R.uniform(numel(xs), 12)
      local os = {}
      for i = 1, #xs do os[i] = shape[i] == -1 and xs[i] - off[i] or shape[i] end
      local attrs = { shape = shape, offsets = off }
      T.check_output{ type = "crop_tensor", attrs = attrs, inputs = { X = f64(x, xs) },
        expect = { Out = { shape = os, data = ref(x, xs, os, off) } }, atol = 0 }
      if numel(xs) <= 120 then T.check_grad{ type = "crop_tensor", attrs = attrs, inputs = { X = f64(x, xs) }, wrt = { "X" } } end
    end)
  end
  it("takes shape and offsets from tensors", function()
    local xs = { 4, 5 }
    local x = R.uniform(20, 13)
    local inputs = { X = f64(x, xs), Shape = i32({ 2, 3 }, { 2 }), OffsetsTensor = { i32({ 1 }, { 1 }), i32({ 2 }, { 1 }) } }
    T.check_output{ type = "crop_tensor", inputs = inputs,
      expect = { Out = { shape = { 2, 3 }, data = ref(x, xs, { 2, 3 }, { 1, 2 }) } }, atol = 0 }
    T.check_grad{ type = "crop_tensor", inputs = inputs, wrt = { "X" }, no_grad = { "Shape", "OffsetsTensor" } }
  end)
  it("refuses a crop past X's end", function()
    fails({ type = "crop_tensor", attrs = { shape = { 3, 3 }, offsets = { 2, 0 } }, inputs = { X = f64(R.uniform(16), { 4, 4 }) } },
      "offsets[0] + shape[0] = 5 exceeds dim 0")
  end)
end)

describe("pixel_shuffle (Fluid 1.8 test_pixel_shuffle.py)", function()
  for _, c in ipairs({ { { 2, 9, 4, 4 }, 3 }, { { 1, 8, 2, 3 }, 2 } }) do
    local xs, r = c[1], c[2]
    it(("[%s] upscale_factor %d"):format(table.concat(xs, ","), r), function()
      local os = { xs[1], xs[2] / (r * r), xs[3] * r, xs[4] * r }
      local x = R.uniform(numel(xs), 14)
      local want = {}
      for p = 0, numel(os) - 1 do
        local u = unravel(p, os)
        local n, c2, h, w = u[1], u[2], u[3], u[4]
        want[p + 1] = x[ravel({ n, c2 * r * r + (h % r) * r + (w % r), math.floor(h / r), math.floor(w / r) }, xs) + 1]
      end
      T.check_output{ type = "pixel_shuffle", attrs = { upscale_factor = r }, inputs = { X = f64(x, xs) },
        expect = { Out = { shape = os, data = want } }, atol = 0 }
      if numel(xs) <= 60 then
        T.check_grad{ type = "pixel_shuffle", attrs = { upscale_factor = r }, inputs = { X = f64(x, xs) }, wrt = { "X" } }
      end
    end)
  end
  it("refuses channels not a multiple of r^2", function()
    fails({ type = "pixel_shuffle", attrs = { upscale_factor = 2 }, inputs = { X = f64(R.uniform(6), { 1, 6, 1, 1 }) } },
      "not a multiple of upscale_factor^2")
  end)
end)

describe("shuffle_channel (Fluid 1.8 test_shuffle_channel_op.py)", function()
  for _, c in ipairs({ { { 5, 16, 4, 4 }, 4 }, { { 2, 6, 2, 1 }, 3 } }) do
    local xs, g = c[1], c[2]
    it(("[%s] group %d"):format(table.concat(xs, ","), g), function()
      local x = R.uniform(numel(xs), 15)
      local cg = xs[2] / g
      local want = {}
      for p = 0, numel(xs) - 1 do
        local idx = unravel(p, xs)
        local ch = idx[2]
        idx[2] = (ch % g) * cg + math.floor(ch / g)   -- Out channel j*g + i is X channel i*(C/g) + j
        want[p + 1] = x[ravel(idx, xs) + 1]
      end
      T.check_output{ type = "shuffle_channel", attrs = { group = g }, inputs = { X = f64(x, xs) },
        expect = { Out = { shape = xs, data = want } }, atol = 0 }
      if numel(xs) <= 30 then
        T.check_grad{ type = "shuffle_channel", attrs = { group = g }, inputs = { X = f64(x, xs) }, wrt = { "X" } }
      end
    end)
  end
end)

describe("space_to_depth (Fluid 1.8 test_space_to_depth_op.py)", function()
  -- the test's reorg loop: X element (b, k, j, i) goes to flat position
  -- w2 + W*bs*(h2 + H*bs*(c2 + oc*b)) of Out
  local function ref(x, s, bs)
    local B, C, H, W = s[1], s[2], s[3], s[4]
    local oc, out = C / (bs * bs), {}
    for b = 0, B - 1 do
      for k = 0, C - 1 do
        for j = 0, H - 1 do
          for i = 0, W - 1 do
            local c2, o = k % oc, math.floor(k / oc)
            local w2, h2 = i * bs + o % bs, j * bs + math.floor(o / bs)
            out[w2 + W * bs * (h2 + H * bs * (c2 + oc * b)) + 1] = x[((b * C + k) * H + j) * W + i + 1]
          end
        end
      end
    end
    return out
  end
  for _, c in ipairs({ { { 2, 8, 4, 4 }, 2 }, { { 1, 4, 2, 2 }, 2 }, { { 1, 9, 3, 6 }, 3 } }) do
    local xs, bs = c[1], c[2]
    it(("[%s] blocksize %d"):format(table.concat(xs, ","), bs), function()
      local x = R.uniform(numel(xs), 16)
      local os = { xs[1], xs[2] * bs * bs, xs[3] / bs, xs[4] / bs }
      T.check_output{ type = "space_to_depth", attrs = { blocksize = bs }, inputs = { X = f64(x, xs) },
        expect = { Out = { shape = os, data = ref(x, xs, bs) } }, atol = 0 }
      if numel(xs) <= 16 then
        T.check_grad{ type = "space_to_depth", attrs = { blocksize = bs }, inputs = { X = f64(x, xs) }, wrt = { "X" } }
      end
    end)
  end
  it("refuses H not a multiple of blocksize", function()
    fails({ type = "space_to_depth", attrs = { blocksize = 2 }, inputs = { X = f64(R.uniform(12), { 1, 4, 3, 1 }) } },
      "C must be a multiple of blocksize^2")
  end)
end)
