-- pool2d with data_format = "NHWC" against the NCHW op on transposed tensors
-- (the NCHW op is checked against plain loops in ops_pool_spec.lua), and the
-- backward pass's disjoint-window path (windows that never overlap assign
-- their gradient instead of adding it; uncovered borders and gaps stay 0)
-- against finite differences in both layouts.
local T = require("spec.helpers.op_test")

local numel = require("spec.helpers.index").numel

-- distinct values (a shuffled ramp): no ties, so finite differences never
-- cross an argmax switch
local function distinct(n, seed)
  local v = {}
  for i = 1, n do v[i] = (i - 1) * 0.05 - n * 0.025 end
  local s = seed or 7
  for i = n, 2, -1 do
    s = (s * 1103515245 + 12345) % 2147483648
    local j = s % i + 1
    v[i], v[j] = v[j], v[i]
  end
  return v
end

local function swap(data, n, a, b)
  local out = {}
  for i = 0, n - 1 do
    for r = 0, a - 1 do
      for c = 0, b - 1 do out[i * a * b + c * a + r + 1] = data[i * a * b + r * b + c + 1] end
    end
  end
  return out
end
local function to_nhwc(d, s) return swap(d, s[1], s[2], s[3] * s[4]), { s[1], s[3], s[4], s[2] } end

local function with(attrs, fmt)
  local a = {}
  for k, v in pairs(attrs) do a[k] = v end
  a.data_format = fmt
  return a
end

local function same_as_nchw(xs, attrs, dtype, seed)
  local x = distinct(numel(xs), seed)
  local y = T.run{ type = "pool2d", attrs = with(attrs, "NCHW"), outputs = { Out = 1 },
    inputs = { X = T.tensor(x, { shape = xs, dtype = dtype }) } }.Out[1]
  local xh, xhs = to_nhwc(x, xs)
  local yh = T.run{ type = "pool2d", attrs = with(attrs, "NHWC"), outputs = { Out = 1 },
    inputs = { X = T.tensor(xh, { shape = xhs, dtype = dtype }) } }.Out[1]
  local want, ws = to_nhwc(y.data, y.shape)
  T.assert_close(yh, { shape = ws, data = want }, 1e-12, 1e-6, "Out")
  local dy = distinct(numel(y.shape), seed + 1)
  local g = T.run{ type = "pool2d_grad", attrs = with(attrs, "NCHW"), outputs = { ["X@GRAD"] = 1 },
    inputs = { X = T.tensor(x, { shape = xs, dtype = dtype }), Out = T.tensor(y.data, { shape = y.shape, dtype = dtype }),
               ["Out@GRAD"] = T.tensor(dy, { shape = y.shape, dtype = dtype }) } }["X@GRAD"][1]
  local gh = T.run{ type = "pool2d_grad", attrs = with(attrs, "NHWC"), outputs = { ["X@GRAD"] = 1 },
    inputs = { X = T.tensor(xh, { shape = xhs, dtype = dtype }), Out = T.tensor(want, { shape = ws, dtype = dtype }),
               ["Out@GRAD"] = T.tensor(to_nhwc(dy, y.shape), { shape = ws, dtype = dtype }) } }["X@GRAD"][1]
  local gw = to_nhwc(g.data, xs)
  T.assert_close(gh, { shape = xhs, data = gw }, 1e-12, 1e-6, "X@GRAD")
end

local function fd(xs, attrs, seed)
  T.check_grad{ type = "pool2d", inputs = { X = T.tensor(distinct(numel(xs), seed), { shape = xs }) },
    attrs = attrs, outputs = { Out = 1 }, wrt = { "X" }, of = { "Out" } }
end

describe("pool2d NHWC", function()
  for _, dtype in ipairs({ "float64", "float32" }) do
    it("equals the NCHW op on transposed tensors, forward and backward (" .. dtype .. ")", function()
      same_as_nchw({ 2, 3, 6, 6 }, { pooling_type = "max", ksize = { 2, 2 }, strides = { 2, 2 } }, dtype, 1)
      same_as_nchw({ 2, 3, 7, 5 }, { pooling_type = "avg", ksize = { 3, 3 }, strides = { 2, 2 }, paddings = { 1, 1 } },
        dtype, 3)
      same_as_nchw({ 1, 4, 5, 5 }, { pooling_type = "max", ksize = { 3, 2 }, adaptive = true }, dtype, 5)
      same_as_nchw({ 2, 2, 4, 3 }, { pooling_type = "avg", global_pooling = true }, dtype, 7)
    end)
  end
  it("passes the finite-difference check", function()
    fd({ 1, 4, 5, 2 }, { pooling_type = "max", ksize = { 2, 2 }, strides = { 2, 2 }, data_format = "NHWC" }, 11)
    fd({ 2, 5, 4, 3 }, { pooling_type = "avg", ksize = { 3, 2 }, strides = { 1, 2 }, paddings = { 1, 0 },
      exclusive = false, data_format = "NHWC" }, 13)
  end)
  it("infers [N, OH, OW, C]", function()
    local r = T.run{ type = "pool2d", attrs = { pooling_type = "max", ksize = { 2, 2 }, strides = { 2, 2 }, data_format = "NHWC" },
      outputs = { Out = 1 }, inputs = { X = T.tensor(distinct(2 * 6 * 4 * 3, 17), { shape = { 2, 6, 4, 3 } }) } }
    assert.same({ 2, 3, 2, 3 }, r.Out[1].shape)
  end)
end)

describe("pool2d_grad with disjoint windows", function()
  it("2x2 windows that tile the input: ties to the first maximum, NaN to the first NaN", function()
    -- windows {1, 7; 7, 2} (tie: first 7), {NaN, 3; 4, NaN} (Out NaN: first NaN),
    -- {0, 0; 0, 0} (all tie), {-1, -5; -3, -0.5}
    local x = { 1, 7, 0 / 0, 3, 0, 0, -1, -5,
                7, 2, 4, 0 / 0, 0, 0, -3, -0.5 }
    for _, dtype in ipairs({ "float32", "float64" }) do
      local fwd = T.run{ type = "pool2d", attrs = { pooling_type = "max", ksize = { 2, 2 }, strides = { 2, 2 } },
        inputs = { X = T.tensor(x, { shape = { 1, 1, 2, 8 }, dtype = dtype }) }, outputs = { Out = 1 } }.Out[1]
      local res = T.run{ type = "pool2d_grad",
        attrs = { pooling_type = "max", ksize = { 2, 2 }, strides = { 2, 2 } }, outputs = { ["X@GRAD"] = 1 },
        inputs = { X = T.tensor(x, { shape = { 1, 1, 2, 8 }, dtype = dtype }),
                   Out = T.tensor(fwd.data, { shape = fwd.shape, dtype = dtype }),
                   ["Out@GRAD"] = T.tensor({ 1, 2, 3, 4 }, { shape = { 1, 1, 1, 4 }, dtype = dtype }) } }
      T.assert_close(res["X@GRAD"][1], { shape = { 1, 1, 2, 8 }, data = {
        0, 1, 2, 0, 3, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 4 } })
    end
  end)
  it("windows that tile the input", function()
    fd({ 2, 2, 4, 6 }, { pooling_type = "max", ksize = { 2, 2 }, strides = { 2, 2 } }, 21)
    fd({ 1, 2, 6, 6 }, { pooling_type = "max", ksize = { 3, 3 }, strides = { 3, 3 } }, 22)
    fd({ 1, 2, 4, 4 }, { pooling_type = "avg", ksize = { 2, 2 }, strides = { 2, 2 } }, 23)
  end)
  it("an uncovered last row and column, gaps between windows, padding", function()
    fd({ 1, 2, 5, 5 }, { pooling_type = "max", ksize = { 2, 2 }, strides = { 2, 2 } }, 31)
    fd({ 1, 2, 7, 8 }, { pooling_type = "max", ksize = { 2, 2 }, strides = { 3, 3 } }, 32)
    fd({ 1, 2, 7, 7 }, { pooling_type = "avg", ksize = { 2, 3 }, strides = { 2, 4 } }, 33)
    fd({ 1, 1, 5, 5 }, { pooling_type = "max", ksize = { 2, 2 }, strides = { 2, 2 }, paddings = { 1, 1 } }, 34)
    fd({ 1, 1, 5, 5 }, { pooling_type = "avg", ksize = { 2, 2 }, strides = { 2, 2 }, ceil_mode = true }, 35)
  end)
end)
