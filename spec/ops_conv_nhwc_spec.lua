-- conv2d / depthwise_conv2d with data_format = "NHWC" (Fluid's semantics:
-- Input and Output are [N, H, W, C], the Filter stays [M, C/groups, kh, kw]):
-- forward and gradients against the NCHW op on the transposed tensors (the
-- NCHW op is checked against plain loops in ops_conv_spec.lua), gradients
-- against finite differences, and Filter@GRAD bit-identical for 1 and 2
-- threads in both layouts.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")

local numel = require("spec.helpers.index").numel

-- flat [N, A, B] -> [N, B, A]
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
local function to_nchw(d, s) return swap(d, s[1], s[2] * s[3], s[4]), { s[1], s[4], s[2], s[3] } end

local function with(attrs, fmt)
  local a = {}
  for k, v in pairs(attrs) do a[k] = v end
  a.data_format = fmt
  return a
end

local function fwd(optype, x, xs, w, ws, attrs, dtype)
  return T.run{ type = optype, attrs = attrs, outputs = { Output = 1 },
    inputs = { Input = T.tensor(x, { shape = xs, dtype = dtype }), Filter = T.tensor(w, { shape = ws, dtype = dtype }) } }
    .Output[1]
end

local function bwd(optype, x, xs, w, ws, dy, ys, attrs, dtype)
  return T.run{ type = optype .. "_grad", attrs = attrs, outputs = { ["Input@GRAD"] = 1, ["Filter@GRAD"] = 1 },
    inputs = { Input = T.tensor(x, { shape = xs, dtype = dtype }), Filter = T.tensor(w, { shape = ws, dtype = dtype }),
               ["Output@GRAD"] = T.tensor(dy, { shape = ys, dtype = dtype }) } }
end

local function same_as_nchw(xs, ws, attrs, dtype, seed, optype)
  optype = optype or "conv2d"
  local x, w = R.symmetric(numel(xs), seed), R.symmetric(numel(ws), seed + 1)
  local y = fwd(optype, x, xs, w, ws, with(attrs, "NCHW"), dtype)
  local xh, xhs = to_nhwc(x, xs)
  local yh = fwd(optype, xh, xhs, w, ws, with(attrs, "NHWC"), dtype)
  local want, wshape = to_nhwc(y.data, y.shape)
  local tol = dtype == "float32" and 1e-5 or 1e-12
  T.assert_close(yh, { shape = wshape, data = want }, tol, tol, "Output")
  local dy = R.symmetric(numel(y.shape), seed + 2)
  local g = bwd(optype, x, xs, w, ws, dy, y.shape, with(attrs, "NCHW"), dtype)
  local dyh = to_nhwc(dy, y.shape)
  local gh = bwd(optype, xh, xhs, w, ws, dyh, wshape, with(attrs, "NHWC"), dtype)
  local dxw, dxs = to_nhwc(g["Input@GRAD"][1].data, xs)
  T.assert_close(gh["Input@GRAD"][1], { shape = dxs, data = dxw }, tol, tol, "Input@GRAD")
  T.assert_close(gh["Filter@GRAD"][1], g["Filter@GRAD"][1], tol, tol, "Filter@GRAD")
end

describe("conv2d NHWC", function()
  for _, dtype in ipairs({ "float64", "float32" }) do
    it("equals the NCHW op on transposed tensors, forward and backward (" .. dtype .. ")", function()
      same_as_nchw({ 2, 3, 7, 6 }, { 4, 3, 3, 2 }, { strides = { 2, 1 }, paddings = { 1, 2 } }, dtype, 11)
      same_as_nchw({ 2, 4, 5, 5 }, { 6, 2, 3, 3 }, { groups = 2, paddings = { 0, 1, 1, 0 }, dilations = { 1, 2 } }, dtype, 21)
      same_as_nchw({ 3, 4, 3, 5 }, { 5, 4, 1, 1 }, {}, dtype, 31)
      same_as_nchw({ 2, 3, 7, 7 }, { 6, 1, 3, 3 }, { groups = 3, paddings = { 1, 1 } }, dtype, 41, "depthwise_conv2d")
      same_as_nchw({ 2, 3, 6, 5 }, { 2, 3, 3, 3 }, { strides = { 2, 2 }, padding_algorithm = "SAME" }, dtype, 51)
    end)
  end

  it("a threaded batch and one threaded large image", function()
    same_as_nchw({ 16, 20, 12, 12 }, { 50, 20, 5, 5 }, {}, "float32", 61)
    same_as_nchw({ 1, 8, 40, 40 }, { 4, 8, 3, 3 }, { paddings = { 1, 1 } }, "float64", 71)
  end)

  it("passes the finite-difference check", function()
    local xs, ws = { 2, 5, 4, 3 }, { 4, 3, 3, 2 }   -- NHWC input: 2 images, 5x4, 3 channels
    T.check_grad{ type = "conv2d",
      inputs = { Input = T.tensor(R.symmetric(numel(xs), 81), { shape = xs }),
                 Filter = T.tensor(R.symmetric(numel(ws), 82), { shape = ws }) },
      attrs = { data_format = "NHWC", strides = { 1, 2 }, paddings = { 1, 1 } },
      outputs = { Output = 1 }, wrt = { "Input", "Filter" }, of = { "Output" } }
    T.check_grad{ type = "depthwise_conv2d",
      inputs = { Input = T.tensor(R.symmetric(24, 83), { shape = { 1, 3, 4, 2 } }),
                 Filter = T.tensor(R.symmetric(18, 84), { shape = { 2, 1, 3, 3 } }) },
      attrs = { data_format = "NHWC", groups = 2, paddings = { 1, 1 } },
      outputs = { Output = 1 }, wrt = { "Input", "Filter" }, of = { "Output" } }
  end)

  it("infers [N, OH, OW, M] at compile time", function()
    local r = T.run{ type = "conv2d", attrs = { data_format = "NHWC", strides = { 2, 2 } }, outputs = { Output = 1 },
      inputs = { Input = T.tensor(R.symmetric(2 * 9 * 7 * 3, 91), { shape = { 2, 9, 7, 3 } }),
                 Filter = T.tensor(R.symmetric(5 * 3 * 9, 92), { shape = { 5, 3, 3, 3 } }) } }
    assert.same({ 2, 4, 3, 5 }, r.Output[1].shape)
  end)
end)

describe("conv2d Filter@GRAD is bit-identical for 1 and 2 threads", function()
  local C = require("oar.lib").C
  local function both(xs, ws, attrs)
    local x, w = R.symmetric(numel(xs), 101), R.symmetric(numel(ws), 102)
    local y = fwd("conv2d", x, xs, w, ws, attrs, "float32")
    local dy = R.symmetric(numel(y.shape), 103)
    local before = tonumber(C.oar_get_flag("num_threads"))
    local res = {}
    for i, n in ipairs({ 1, 2 }) do
      assert.equals(0, C.oar_set_flag("num_threads", n))
      local ok, r = pcall(bwd, "conv2d", x, xs, w, ws, dy, y.shape, attrs, "float32")
      if not ok then C.oar_set_flag("num_threads", before) error(r) end
      res[i] = r
    end
    C.oar_set_flag("num_threads", before)
    assert.same_array(res[1]["Filter@GRAD"][1].data, res[2]["Filter@GRAD"][1].data, "Filter@GRAD")
    assert.same_array(res[1]["Input@GRAD"][1].data, res[2]["Input@GRAD"][1].data, "Input@GRAD")
  end
  it("NHWC batch", function() both({ 20, 10, 10, 6 }, { 8, 6, 3, 3 }, { data_format = "NHWC", paddings = { 1, 1 } }) end)
  it("NCHW, one large image (columns split across threads)", function()
    both({ 1, 8, 40, 40 }, { 16, 8, 3, 3 }, { paddings = { 1, 1 } })
  end)
  it("NCHW, fewer images than threads would leave idle", function()
    both({ 1, 32, 20, 20 }, { 30, 32, 3, 3 }, {})
  end)
end)
