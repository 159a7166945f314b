-- unbind, crop, reverse, pad2d, pad_constant_like, multiplex: the cases of
-- Paddle's test_unbind_op.py, test_crop_op.py, test_reverse_op.py,
-- test_pad2d_op.py, test_pad_constant_like.py and test_multiplex_op.py
-- (shapes reduced where Paddle's are large), expected values by index
-- arithmetic here, gradients against finite differences in float64.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")
local I = require("spec.helpers.index")
local numel, unravel, ravel = I.numel, I.unravel, I.ravel

local expect_error = require("spec.helpers.expect_error")
local function refuses(spec, ...) expect_error(function() T.run(spec) end, ...) end

describe("unbind (test_unbind_op.py)", function()
  for _, case in ipairs({ { { 3, 4, 2 }, 0 }, { { 3, 4, 2 }, 1 }, { { 3, 4, 2 }, -1 } }) do
    local shape, axis = case[1], case[2]
    it(("X [%s], axis %d"):format(table.concat(shape, ", "), axis), function()
      local x = R.uniform(numel(shape), 2)
      local ax = axis < 0 and axis + #shape or axis
      local oshape = {}
      for i, d in ipairs(shape) do if i ~= ax + 1 then oshape[#oshape + 1] = d end end
      local want = {}
      for s = 1, shape[ax + 1] do want[s] = { shape = oshape, data = {} } end
      for p = 0, numel(shape) - 1 do
        local idx = unravel(p, shape)
        local s = idx[ax + 1] + 1
        table.insert(want[s].data, x[p + 1])
      end
      local spec = { type = "unbind", attrs = { axis = axis }, inputs = { X = T.tensor(x, { shape = shape }) },
                     outputs = { Out = shape[ax + 1] } }
      spec.expect = { Out = want }
      T.check_output(spec)
      spec.wrt, spec.of = { "X" }, { "Out" }
      T.check_grad(spec)
    end)
  end
  it("refuses an output count other than X's size along axis", function()
    refuses({ type = "unbind", inputs = { X = T.tensor(R.uniform(6), { shape = { 2, 3 } }) }, outputs = { Out = 3 } },
            "unbind", "3 variables", "2 slices")
  end)
end)

local function crop_ref(x, xs, off, os)
  local w = {}
  for p = 0, numel(os) - 1 do
    local idx = unravel(p, os)
    for i = 1, #idx do idx[i] = idx[i] + off[i] end
    w[p + 1] = x[ravel(idx, xs) + 1]
  end
  return w
end

describe("crop (test_crop_op.py)", function()
  local cases = {
    { { 8, 8 }, { 2, 2 }, { 1, 2 } },
    { { 3, 4, 5 }, { 2, 2, 3 }, { 1, 0, 2 } },
    { { 10, 9, 14 }, { 2, 3, 5 }, { 0, 6, 9 } },
  }
  for _, c in ipairs(cases) do
    local xs, os, off = c[1], c[2], c[3]
    it(("X [%s] -> [%s] at {%s}, attr shape, Y or Offsets"):format(table.concat(xs, ","), table.concat(os, ","),
       table.concat(off, ",")), function()
      local x = R.uniform(numel(xs), 5)
      local want = { Out = { shape = os, data = crop_ref(x, xs, off, os) } }
      local X = T.tensor(x, { shape = xs })
      local a = { type = "crop", inputs = { X = X }, attrs = { shape = os, offsets = off }, expect = want }
      T.check_output(a)
      a.wrt = { "X" }
      T.check_grad(a)
      local zeros = {}
      for i = 1, numel(os) do zeros[i] = 0 end
      local b = { type = "crop", inputs = { X = X, Y = T.tensor(zeros, { shape = os }),
                                            Offsets = T.tensor(off, { shape = { #off }, dtype = "int32" }) },
                  expect = want }
      T.check_output(b)
      b.wrt = { "X" }
      T.check_grad(b)
    end)
  end
  it("zero offsets when none are given", function()
    T.check_output{ type = "crop", inputs = { X = T.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }) }, attrs = { shape = { 1, 2 } },
                    expect = { Out = { shape = { 1, 2 }, data = { 1, 2 } } } }
  end)
  it("refuses a window leaving X", function()
    refuses({ type = "crop", inputs = { X = T.tensor(R.uniform(16), { shape = { 4, 4 } }) },
              attrs = { shape = { 2, 2 }, offsets = { 3, 0 } } }, "crop", "offset 3 + shape 2")
  end)
end)

describe("reverse (test_reverse_op.py)", function()
  local cases = { { { 3, 5 }, { 0 } }, { { 3, 5 }, { 1 } }, { { 3, 5 }, { 0, 1 } }, { { 7, 3, 4 }, { -1, 1 } } }
  for _, c in ipairs(cases) do
    local shape, axis = c[1], c[2]
    it(("X [%s], axis {%s}"):format(table.concat(shape, ","), table.concat(axis, ",")), function()
      local x = R.uniform(numel(shape), 3)
      local flip = {}
      for _, a in ipairs(axis) do flip[(a < 0 and a + #shape or a) + 1] = true end
      local want = {}
      for p = 0, numel(shape) - 1 do
        local idx = unravel(p, shape)
        for i = 1, #idx do if flip[i] then idx[i] = shape[i] - 1 - idx[i] end end
        want[p + 1] = x[ravel(idx, shape) + 1]
      end
      local spec = { type = "reverse", attrs = { axis = axis }, inputs = { X = T.tensor(x, { shape = shape }) },
                     expect = { Out = { shape = shape, data = want } }, wrt = { "X" } }
      T.check_output(spec)
      T.check_grad(spec)
    end)
  end
  it("reverses int64 and refuses an axis twice", function()
    T.check_output{ type = "reverse", attrs = { axis = { 0 } }, inputs = { X = T.tensor({ 1, 2, 3 }, { dtype = "int64" }) },
                    expect = { Out = { shape = { 3 }, data = { 3, 2, 1 } } } }
    refuses({ type = "reverse", attrs = { axis = { 0, -2 } }, inputs = { X = T.tensor(R.uniform(4), { shape = { 2, 2 } }) } },
            "reverse", "twice")
  end)
end)

describe("pad2d (test_pad2d_op.py)", function()
  local function src(i, lo, n, mode)
    local s = i - lo
    if s >= 0 and s < n then return s end
    if mode == "constant" then return nil end
    if mode == "edge" then return s < 0 and 0 or n - 1 end
    if s < 0 then s = -s end
    if s >= n then s = 2 * (n - 1) - s end
    return s
  end
  local function ref(x, xs, p, mode, value, nhwc)
    local N, C, H, W
    if nhwc then N, H, W, C = xs[1], xs[2], xs[3], xs[4] else N, C, H, W = xs[1], xs[2], xs[3], xs[4] end
    local OH, OW = H + p[1] + p[2], W + p[3] + p[4]
    local os = nhwc and { N, OH, OW, C } or { N, C, OH, OW }
    local w = {}
    for q = 0, numel(os) - 1 do
      local idx = unravel(q, os)
      local b, c, h, ww
      if nhwc then b, h, ww, c = idx[1], idx[2], idx[3], idx[4] else b, c, h, ww = idx[1], idx[2], idx[3], idx[4] end
      local sh, sw = src(h, p[1], H, mode), src(ww, p[3], W, mode)
      if sh and sw then
        w[q + 1] = x[ravel(nhwc and { b, sh, sw, c } or { b, c, sh, sw }, xs) + 1]
      else
        w[q + 1] = value
      end
    end
    return w, os
  end
  for _, mode in ipairs({ "constant", "reflect", "edge" }) do
    for _, fmt in ipairs({ "NCHW", "NHWC" }) do
      it(mode .. ", " .. fmt .. ", paddings {0, 1, 2, 3}", function()
        local xs = fmt == "NCHW" and { 2, 3, 4, 5 } or { 2, 4, 5, 3 }
        local p = { 0, 1, 2, 3 }
        local x = R.uniform(numel(xs), 7)
        local want, os = ref(x, xs, p, mode, 0.5, fmt == "NHWC")
        local spec = { type = "pad2d", inputs = { X = T.tensor(x, { shape = xs }) },
                       attrs = { paddings = p, mode = mode, pad_value = 0.5, data_format = fmt },
                       expect = { Out = { shape = os, data = want } }, wrt = { "X" } }
        T.check_output(spec)
        T.check_grad(spec)
      end)
    end
  end
  it("Paddings replaces attr paddings (reflect)", function()
    local xs, p = { 1, 2, 3, 3 }, { 2, 1, 1, 2 }
    local x = R.uniform(numel(xs), 9)
    local want, os = ref(x, xs, p, "reflect", 0, false)
    local spec = { type = "pad2d", attrs = { paddings = { 0, 0, 0, 0 }, mode = "reflect" },
                   inputs = { X = T.tensor(x, { shape = xs }), Paddings = T.tensor(p, { shape = { 4 }, dtype = "int32" }) },
                   expect = { Out = { shape = os, data = want } }, wrt = { "X" } }
    T.check_output(spec)
    T.check_grad(spec)
  end)
  it("refuses reflect paddings as large as the dim", function()
    refuses({ type = "pad2d", inputs = { X = T.tensor(R.uniform(12), { shape = { 1, 1, 3, 4 } }) },
              attrs = { paddings = { 3, 0, 0, 0 }, mode = "reflect" } }, "pad2d", "reflect mode")
  end)
end)

describe("pad_constant_like (test_pad_constant_like.py)", function()
  for _, c in ipairs({ { { 4, 4 }, { 1, 4 } }, { { 4, 3, 4 }, { 2, 3, 1 } }, { { 2, 3 }, { 2, 3 } } }) do
    local xs, ys = c[1], c[2]
    it(("X [%s], Y [%s], pad_value 0.1"):format(table.concat(xs, ","), table.concat(ys, ",")), function()
      local y = R.uniform(numel(ys), 4)
      local want = {}
      for p = 0, numel(xs) - 1 do
        local idx, inside = unravel(p, xs), true
        for i = 1, #idx do if idx[i] >= ys[i] then inside = false end end
        want[p + 1] = inside and y[ravel(idx, ys) + 1] or 0.1
      end
      local spec = { type = "pad_constant_like", attrs = { pad_value = 0.1 },
                     inputs = { X = T.tensor(R.uniform(numel(xs), 1), { shape = xs }), Y = T.tensor(y, { shape = ys }) },
                     expect = { Out = { shape = xs, data = want } }, wrt = { "Y" }, atol = 1e-7 }
      T.check_output(spec)
      T.check_grad(spec)
    end)
  end
  it("refuses Y larger than X", function()
    refuses({ type = "pad_constant_like", inputs = { X = T.tensor(R.uniform(4), { shape = { 2, 2 } }),
                                                    Y = T.tensor(R.uniform(6), { shape = { 3, 2 } }) } },
            "pad_constant_like", "input X", "at most X's")
  end)
end)

describe("multiplex (test_multiplex_op.py)", function()
  it("row i from candidate Ids[i], gradients to the chosen rows", function()
    local xs = {}
    for k = 1, 4 do xs[k] = T.tensor(R.uniform(12, k), { shape = { 4, 3 } }) end
    local ids = { 3, 0, 1, 2 }
    local want = {}
    for i = 0, 3 do for j = 1, 3 do want[i * 3 + j] = xs[ids[i + 1] + 1].data[i * 3 + j] end end
    for _, dt in ipairs({ "int32", "int64" }) do
      local spec = { type = "multiplex", inputs = { Ids = T.tensor(ids, { shape = { 4, 1 }, dtype = dt }), X = xs },
                     expect = { Out = { shape = { 4, 3 }, data = want } }, wrt = { "X" } }
      T.check_output(spec)
      T.check_grad(spec)
    end
  end)
  it("refuses an id past the candidates", function()
    refuses({ type = "multiplex", inputs = { Ids = T.tensor({ 0, 2 }, { shape = { 2, 1 }, dtype = "int32" }),
              X = { T.tensor({ 1, 2 }, { shape = { 2, 1 } }), T.tensor({ 3, 4 }, { shape = { 2, 1 } }) } } },
            "multiplex", "holds 2", "[0, 2)")
  end)
end)

describe("grad ops given an Out@GRAD that does not fit", function()
  it("fail naming the op instead of reading past it", function()
    local x = T.tensor(R.uniform(12), { shape = { 3, 4 } })
    refuses({ type = "crop_grad", attrs = { offsets = { 1, 1 } }, outputs = { ["X@GRAD"] = 1 },
              inputs = { X = x, ["Out@GRAD"] = T.tensor(R.uniform(9), { shape = { 3, 3 } }) } },
            "crop_grad", "leaves X")
    refuses({ type = "pad2d_grad", attrs = { paddings = { 1, 1, 1, 1 } }, outputs = { ["X@GRAD"] = 1 },
              inputs = { X = T.tensor(R.uniform(4), { shape = { 1, 1, 2, 2 } }),
                         ["Out@GRAD"] = T.tensor(R.uniform(4), { shape = { 1, 1, 2, 2 } }) } },
            "pad2d_grad", "Out@GRAD", "expected 16")
    refuses({ type = "multiplex_grad", outputs = { ["X@GRAD"] = 2 },
              inputs = { Ids = T.tensor({ 0 }, { shape = { 1, 1 }, dtype = "int32" }), X = { x, x },
                         ["Out@GRAD"] = x } },
            "multiplex_grad", "Ids")
    refuses({ type = "pad_constant_like_grad", outputs = { ["Y@GRAD"] = 1 },
              inputs = { Y = x, ["Out@GRAD"] = T.tensor(R.uniform(4), { shape = { 2, 2 } }) } },
            "pad_constant_like_grad", "Out@GRAD")
  end)
end)
