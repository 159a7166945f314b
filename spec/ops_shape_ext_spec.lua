-- slice, expand, expand_v2, tile, flatten_contiguous_range: the cases of
-- Fluid 1.8's test_slice_op.py / test_expand_op.py and Paddle 2.x's
-- test_expand_v2_op.py / test_tile_op.py / test_flatten_contiguous_range_op.py,
-- expected values computed here by plain index arithmetic.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")
local I = require("spec.helpers.index")
local numel, unravel, ravel = I.numel, I.unravel, I.ravel

-- out[idx] = x[idx mod xdims], X's dims padded with leading 1s
local function repeat_ref(x, xs, os)
  local pad = {}
  for i = 1, #os do pad[i] = xs[i - (#os - #xs)] or 1 end
  local out = {}
  for p = 0, numel(os) - 1 do
    local idx = unravel(p, os)
    for i = 1, #idx do idx[i] = idx[i] % pad[i] end
    out[p + 1] = x[ravel(idx, pad) + 1]
  end
  return out
end

-- python slicing of one axis
local function bounds(dim, s, e)
  if s < 0 then s = s + dim end
  if e < 0 then e = e + dim end
  s = math.max(0, math.min(s, dim))
  e = math.max(0, math.min(e, dim))
  return s, math.max(e - s, 0)
end

local function slice_ref(x, xs, axes, starts, ends, decrease)
  local st, len = {}, {}
  for i = 1, #xs do st[i], len[i] = 0, xs[i] end
  for i, a in ipairs(axes) do st[a + 1], len[a + 1] = bounds(xs[a + 1], starts[i], ends[i]) end
  local out = {}
  for p = 0, numel(len) - 1 do
    local idx = unravel(p, len)
    for i = 1, #idx do idx[i] = idx[i] + st[i] end
    out[p + 1] = x[ravel(idx, xs) + 1]
  end
  local shape, drop = {}, {}
  for _, a in ipairs(decrease or {}) do drop[a + 1] = true end
  for i = 1, #len do if not drop[i] then shape[#shape + 1] = len[i] end end
  if #shape == 0 then shape = { 1 } end
  return { shape = shape, data = out }
end

local function int_tensor(vals, dtype)
  return T.tensor(vals, { shape = { #vals }, dtype = dtype or "int32" })
end
local function int_list(vals)
  local l = {}
  for i, v in ipairs(vals) do l[i] = T.tensor({ v }, { shape = { 1 }, dtype = "int32" }) end
  return l
end

describe("slice (Fluid 1.8 test_slice_op.py)", function()
  local xs = { 3, 4, 5, 6 }
  local x = R.uniform(numel(xs), 11, -1, 1)
  local cases = {
    { "TestSliceOp", { 0, 1, 2 }, { 1, 0, 2 }, { 3, 3, 4 } },
    { "TestCase1", { 0, 1, 2 }, { -3, 0, 2 }, { 3, 100, -1 } },
    { "TestCase2", { 0, 1, 3 }, { -3, 0, 2 }, { 3, 100, -1 } },
    { "decrease 0", { 0, 1, 2 }, { 1, 0, 2 }, { 2, 3, 4 }, { 0 } },
    { "decrease 0, 1", { 0, 1, 2 }, { 1, 0, 2 }, { 2, 1, 4 }, { 0, 1 } },
    { "decrease, from the end", { 0, 1, 2 }, { -1, 0, 2 }, { 1000000, 1, 4 }, { 0, 1 } },
    { "decrease every axis", { 0, 1, 2, 3 }, { 0, 1, 2, 3 }, { 1, 2, 3, 4 }, { 0, 1, 2, 3 } },
    { "negative axis", { -1 }, { 1 }, { 4 } },
  }
  for _, c in ipairs(cases) do
    local name, axes, starts, ends, dec = c[1], c[2], c[3], c[4], c[5]
    it(name, function()
      local pos_axes = {}
      for i, a in ipairs(axes) do pos_axes[i] = a < 0 and a + #xs or a end
      local attrs = { axes = axes, starts = starts, ends = ends, decrease_axis = dec or {} }
      T.check_output{ type = "slice", attrs = attrs, inputs = { Input = T.tensor(x, { shape = xs }) },
        expect = { Out = slice_ref(x, xs, pos_axes, starts, ends, dec) }, atol = 0 }
      T.check_grad{ type = "slice", attrs = attrs, inputs = { Input = T.tensor(x, { shape = xs }) },
        wrt = { "Input" } }
    end)
  end

  it("takes starts/ends from StartsTensor/EndsTensor and from tensor lists", function()
    local want = slice_ref(x, xs, { 0, 1, 2 }, { 1, 0, 2 }, { 3, 3, 4 })
    T.check_output{ type = "slice", attrs = { axes = { 0, 1, 2 }, starts = { 0, 0, 0 }, ends = { 1, 1, 1 } },
      inputs = { Input = T.tensor(x, { shape = xs }), StartsTensor = int_tensor({ 1, 0, 2 }, "int64"),
                 EndsTensor = int_tensor({ 3, 3, 4 }) },
      expect = { Out = want }, atol = 0 }
    T.check_output{ type = "slice", attrs = { axes = { 0, 1, 2 }, starts = { 0, 0, 0 }, ends = { 3, 3, 4 } },
      inputs = { Input = T.tensor(x, { shape = xs }), StartsTensorList = int_list({ 1, 0, 2 }) },
      expect = { Out = want }, atol = 0 }
    T.check_grad{ type = "slice", attrs = { axes = { 1 }, starts = { 0 }, ends = { 1 } },
      inputs = { Input = T.tensor(R.uniform(12, 5), { shape = { 3, 4 } }), StartsTensor = int_tensor({ 1 }),
                 EndsTensor = int_tensor({ 3 }) },
      wrt = { "Input" }, no_grad = { "StartsTensor", "EndsTensor" } }
  end)

  it("slices int64 tensors", function()
    T.check_output{ type = "slice", attrs = { axes = { 0 }, starts = { 1 }, ends = { -1 } },
      inputs = { Input = T.tensor({ 5, 6, 7, 8 }, { shape = { 4 }, dtype = "int64" }) },
      expect = { Out = { shape = { 2 }, data = { 6, 7 } } }, atol = 0 }
  end)

  it("refuses an axis out of range and a decrease_axis of size > 1", function()
    local ok, err = pcall(T.run, { type = "slice", attrs = { axes = { 4 }, starts = { 0 }, ends = { 1 } },
      inputs = { Input = T.tensor(x, { shape = xs }) } })
    assert.is_false(ok)
    assert.matches("axes[0] = 4 is out of range", err, 1, true)
    ok, err = pcall(T.run, { type = "slice", attrs = { axes = { 0 }, starts = { 0 }, ends = { 2 }, decrease_axis = { 0 } },
      inputs = { Input = T.tensor(x, { shape = xs }) } })
    assert.is_false(ok)
    assert.matches("decrease_axis[0] = 0 must name a sliced axis of size 1", err, 1, true)
  end)
end)

describe("expand (Fluid 1.8 test_expand_op.py)", function()
  local cases = {
    { { 12 }, { 2 } }, { { 12, 14 }, { 2, 3 } }, { { 2, 4, 5 }, { 2, 1, 4 } }, { { 2, 4, 5, 7 }, { 3, 2, 1, 2 } },
    { { 2, 4, 5, 7 }, { 1, 1, 1, 1 } },
  }
  for _, c in ipairs(cases) do
    local xs, times = c[1], c[2]
    it(("[%s] x [%s]"):format(table.concat(xs, ","), table.concat(times, ",")), function()
      local x = R.uniform(numel(xs), #xs, -1, 1)
      local os = {}
      for i = 1, #xs do os[i] = xs[i] * times[i] end
      local want = { shape = os, data = repeat_ref(x, xs, os) }
      T.check_output{ type = "expand", attrs = { expand_times = times }, inputs = { X = T.tensor(x, { shape = xs }) },
        expect = { Out = want }, atol = 0 }
      T.check_output{ type = "expand", attrs = { expand_times = {} },
        inputs = { X = T.tensor(x, { shape = xs }), ExpandTimes = int_tensor(times) }, expect = { Out = want }, atol = 0 }
      T.check_output{ type = "expand", attrs = { expand_times = {} },
        inputs = { X = T.tensor(x, { shape = xs }), expand_times_tensor = int_list(times) }, expect = { Out = want }, atol = 0 }
      if numel(xs) <= 200 then
        T.check_grad{ type = "expand", attrs = { expand_times = times }, inputs = { X = T.tensor(x, { shape = xs }) }, wrt = { "X" } }
      end
    end)
  end

  it("refuses expand_times of the wrong length", function()
    local ok, err = pcall(T.run, { type = "expand", attrs = { expand_times = { 2 } },
      inputs = { X = T.tensor({ 1, 2, 3, 4 }, { shape = { 2, 2 } }) } })
    assert.is_false(ok)
    assert.matches("expand_times has 1 values but X 'in_X_1' [2, 2] has rank 2", err, 1, true)
  end)
end)

describe("expand_v2 (Paddle 2.x test_expand_v2_op.py)", function()
  local cases = {
    { { 100 }, { 100 }, { 100 } }, { { 120 }, { 2, 120 }, { 2, 120 } }, { { 2, 10, 5 }, { 2, 10, 5 }, { 2, 10, 5 } },
    { { 2, 4, 5, 7 }, { -1, -1, -1, -1 }, { 2, 4, 5, 7 } }, { { 2, 4, 1, 15 }, { 2, -1, 4, -1 }, { 2, 4, 4, 15 } },
    { { 4, 1, 15 }, { 2, -1, 4, -1 }, { 2, 4, 4, 15 } }, { { 1, 1 }, { 3, 4 }, { 3, 4 } },
  }
  for _, c in ipairs(cases) do
    local xs, shape, os = c[1], c[2], c[3]
    it(("[%s] to [%s]"):format(table.concat(xs, ","), table.concat(shape, ",")), function()
      local x = R.uniform(numel(xs), #xs + 1, -1, 1)
      local want = { shape = os, data = repeat_ref(x, xs, os) }
      T.check_output{ type = "expand_v2", attrs = { shape = shape }, inputs = { X = T.tensor(x, { shape = xs }) },
        expect = { Out = want }, atol = 0 }
      T.check_output{ type = "expand_v2", attrs = { shape = {} },
        inputs = { X = T.tensor(x, { shape = xs }), Shape = int_tensor(os) }, expect = { Out = want }, atol = 0 }
      T.check_output{ type = "expand_v2", attrs = { shape = {} },
        inputs = { X = T.tensor(x, { shape = xs }), expand_shapes_tensor = int_list(shape) }, expect = { Out = want }, atol = 0 }
      if numel(os) <= 300 then
        T.check_grad{ type = "expand_v2", attrs = { shape = shape }, inputs = { X = T.tensor(x, { shape = xs }) }, wrt = { "X" } }
      end
    end)
  end

  it("refuses a dim that is neither 1 nor the target", function()
    local ok, err = pcall(T.run, { type = "expand_v2", attrs = { shape = { 3, 4 } },
      inputs = { X = T.tensor({ 1, 2 }, { shape = { 2, 1 } }) } })
    assert.is_false(ok)
    assert.matches("cannot expand to shape[0] = 3", err, 1, true)
  end)
end)

describe("tile (Paddle 2.x test_tile_op.py)", function()
  local cases = {
    { { 100 }, { 2 } }, { { 120 }, { 2, 2 } }, { { 1, 4 }, { 3 } }, { { 2, 10, 5 }, { 2, 3 } }, { { 2, 4, 5, 7 }, { 3, 2, 1, 2 } },
  }
  for _, c in ipairs(cases) do
    local xs, reps = c[1], c[2]
    it(("[%s] by [%s]"):format(table.concat(xs, ","), table.concat(reps, ",")), function()
      local x = R.uniform(numel(xs), #xs + 2, -1, 1)
      local r = math.max(#xs, #reps)
      local os = {}
      for i = 1, r do os[i] = (xs[i - (r - #xs)] or 1) * (reps[i - (r - #reps)] or 1) end
      local want = { shape = os, data = repeat_ref(x, xs, os) }
      T.check_output{ type = "tile", attrs = { repeat_times = reps }, inputs = { X = T.tensor(x, { shape = xs }) },
        expect = { Out = want }, atol = 0 }
      T.check_output{ type = "tile", attrs = { repeat_times = {} },
        inputs = { X = T.tensor(x, { shape = xs }), RepeatTimes = int_tensor(reps) }, expect = { Out = want }, atol = 0 }
      if numel(os) <= 300 then
        T.check_grad{ type = "tile", attrs = { repeat_times = reps }, inputs = { X = T.tensor(x, { shape = xs }) }, wrt = { "X" } }
      end
    end)
  end
end)

describe("flatten_contiguous_range (Paddle 2.x)", function()
  local xs = { 3, 2, 5, 4 }
  local cases = {
    { 0, -1, { 120 } }, { 1, 2, { 3, 10, 4 } }, { 0, 1, { 6, 5, 4 } }, { 2, -1, { 3, 2, 20 } },
    { -2, -1, { 3, 2, 20 } }, { 1, 1, { 3, 2, 5, 4 } }, { 3, 3, { 3, 2, 5, 4 } },
  }
  for _, c in ipairs(cases) do
    it(("start_axis %d, stop_axis %d"):format(c[1], c[2]), function()
      local x = R.uniform(numel(xs), 4, -1, 1)
      local res = T.check_output{ type = "flatten_contiguous_range", attrs = { start_axis = c[1], stop_axis = c[2] },
        inputs = { X = T.tensor(x, { shape = xs }) }, outputs = { Out = 1, XShape = 1 },
        expect = { Out = { shape = c[3], data = x } }, atol = 0 }
      assert.are.same({ 0, 3, 2, 5, 4 }, res.XShape[1].shape)
      T.check_grad{ type = "flatten_contiguous_range", attrs = { start_axis = c[1], stop_axis = c[2] },
        inputs = { X = T.tensor(R.uniform(numel(xs), 2), { shape = xs }) }, outputs = { Out = 1, XShape = 1 },
        wrt = { "X" } }
    end)
  end

  it("runs without XShape (inference programs) and refuses a reversed range", function()
    T.check_output{ type = "flatten_contiguous_range", attrs = { start_axis = 1, stop_axis = -1 },
      inputs = { X = T.tensor({ 1, 2, 3, 4, 5, 6 }, { shape = { 1, 2, 3 } }) }, outputs = { Out = 1 },
      expect = { Out = { shape = { 1, 6 }, data = { 1, 2, 3, 4, 5, 6 } } }, atol = 0 }
    local ok, err = pcall(T.run, { type = "flatten_contiguous_range", attrs = { start_axis = 2, stop_axis = 1 },
      inputs = { X = T.tensor({ 1, 2, 3, 4, 5, 6 }, { shape = { 1, 2, 3 } }) }, outputs = { Out = 1 } })
    assert.is_false(ok)
    assert.matches("start_axis 2 and stop_axis 1 do not name a range", err, 1, true)
  end)
end)
