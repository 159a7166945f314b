-- temporal_shift, unfold, partial_concat, partial_sum: the cases of
-- Paddle's test_temporal_shift_op.py, test_unfold_op.py,
-- test_partial_concat_op.py and test_partial_sum_op.py (shapes reduced),
-- expected values by index arithmetic here, gradients against finite
-- differences in float64.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")
local I = require("spec.helpers.index")
local numel, unravel, ravel = I.numel, I.unravel, I.ravel

local expect_error = require("spec.helpers.expect_error")
local function refuses(spec, ...) expect_error(function() T.run(spec) end, ...) end

describe("temporal_shift (test_temporal_shift_op.py)", function()
  -- the numpy reference: pad T by one frame each side, take three channel slices
  local function ref(x, shape, seg, ratio, nhwc)
    local C = nhwc and shape[4] or shape[2]
    local c1, c2 = math.floor(C * ratio), math.floor(C * 2 * ratio)
    local w = {}
    for p = 0, numel(shape) - 1 do
      local idx = unravel(p, shape)
      local ch = nhwc and idx[4] or idx[2]
      local t = idx[1] % seg
      local st = ch < c1 and t - 1 or (ch < c2 and t + 1 or t)
      if st < 0 or st >= seg then w[p + 1] = 0
      else
        idx[1] = idx[1] - t + st
        w[p + 1] = x[ravel(idx, shape) + 1]
      end
    end
    return w
  end
  local cases = { { { 6, 4, 2, 2 }, 3, 0.25, "NCHW" }, { { 4, 9, 2, 3 }, 2, 0.2, "NCHW" }, { { 3, 10, 1, 2 }, 1, 0.3, "NCHW" },
                  { { 4, 2, 2, 8 }, 2, 0.25, "NHWC" } }
  for _, c in ipairs(cases) do
    it(("X [%s], seg_num %d, shift_ratio %g, %s"):format(table.concat(c[1], ","), c[2], c[3], c[4]), function()
      local x = R.uniform(numel(c[1]), 6)
      local spec = { type = "temporal_shift", inputs = { X = T.tensor(x, { shape = c[1] }) },
                     attrs = { seg_num = c[2], shift_ratio = c[3], data_format = c[4] },
                     expect = { Out = { shape = c[1], data = ref(x, c[1], c[2], c[3], c[4] == "NHWC") } }, wrt = { "X" } }
      T.check_output(spec)
      T.check_grad(spec)
    end)
  end
  it("refuses a batch that is not a multiple of seg_num", function()
    refuses({ type = "temporal_shift", inputs = { X = T.tensor(R.uniform(20), { shape = { 5, 4, 1, 1 } }) },
              attrs = { seg_num = 2 } }, "temporal_shift", "seg_num = 2")
  end)
end)

describe("unfold (test_unfold_op.py)", function()
  local function ref(x, xs, k, s, p, d)
    local N, C, H, W = xs[1], xs[2], xs[3], xs[4]
    local OH = math.floor((H + p[1] + p[3] - (d[1] * (k[1] - 1) + 1)) / s[1]) + 1
    local OW = math.floor((W + p[2] + p[4] - (d[2] * (k[2] - 1) + 1)) / s[2]) + 1
    local w = {}
    for n = 0, N - 1 do for c = 0, C - 1 do for i = 0, k[1] - 1 do for j = 0, k[2] - 1 do
      for oy = 0, OH - 1 do for ox = 0, OW - 1 do
        local y, xx = oy * s[1] - p[1] + i * d[1], ox * s[2] - p[2] + j * d[2]
        w[#w + 1] = (y >= 0 and y < H and xx >= 0 and xx < W) and x[ravel({ n, c, y, xx }, xs) + 1] or 0
      end end
    end end end end
    return w, { N, C * k[1] * k[2], OH * OW }
  end
  local cases = {
    { { 2, 3, 5, 5 }, { 3, 3 }, { 1, 1 }, { 1, 1, 1, 1 }, { 1, 1 } },
    { { 2, 2, 5, 6 }, { 2, 3 }, { 2, 1 }, { 1, 0, 1, 2 }, { 1, 2 } },
  }
  for _, c in ipairs(cases) do
    it(("X [%s], kernel {%s}, strides {%s}, paddings {%s}, dilations {%s}"):format(table.concat(c[1], ","),
       table.concat(c[2], ","), table.concat(c[3], ","), table.concat(c[4], ","), table.concat(c[5], ",")), function()
      local x = R.uniform(numel(c[1]), 8)
      local want, ys = ref(x, c[1], c[2], c[3], c[4], c[5])
      local spec = { type = "unfold", inputs = { X = T.tensor(x, { shape = c[1] }) },
                     attrs = { kernel_sizes = c[2], strides = c[3], paddings = c[4], dilations = c[5] },
                     expect = { Y = { shape = ys, data = want } }, wrt = { "X" }, of = { "Y" } }
      T.check_output(spec)
      T.check_grad(spec)
    end)
  end
  it("refuses a kernel larger than the padded input", function()
    refuses({ type = "unfold", inputs = { X = T.tensor(R.uniform(4), { shape = { 1, 1, 2, 2 } }) },
              attrs = { kernel_sizes = { 3, 3 }, strides = { 1, 1 }, paddings = { 0, 0, 0, 0 }, dilations = { 1, 1 } } },
            "unfold", "smaller than the dilated kernel")
  end)
end)

describe("partial_concat / partial_sum (test_partial_concat_op.py, test_partial_sum_op.py)", function()
  local N, D = 3, 6
  local xs = {}
  for i = 1, 3 do xs[i] = R.uniform(N * D, 10 + i) end
  for _, c in ipairs({ { 0, -1 }, { 1, 3 }, { -3, 2 }, { 5, 1 } }) do
    it(("start_index %d, length %d"):format(c[1], c[2]), function()
      local s = c[1] < 0 and c[1] + D or c[1]
      local len = c[2] < 0 and D - s or c[2]
      local cat, sum = {}, {}
      for r = 0, N - 1 do
        for i = 1, 3 do for j = 0, len - 1 do cat[#cat + 1] = xs[i][r * D + s + j + 1] end end
        for j = 0, len - 1 do
          local v = 0
          for i = 1, 3 do v = v + xs[i][r * D + s + j + 1] end
          sum[#sum + 1] = v
        end
      end
      local X = {}
      for i = 1, 3 do X[i] = T.tensor(xs[i], { shape = { N, D } }) end
      local a = { type = "partial_concat", inputs = { X = X }, attrs = { start_index = c[1], length = c[2] },
                  expect = { Out = { shape = { N, 3 * len }, data = cat } }, wrt = { "X" } }
      T.check_output(a)
      T.check_grad(a)
      local b = { type = "partial_sum", inputs = { X = X }, attrs = { start_index = c[1], length = c[2] },
                  expect = { Out = { shape = { N, len }, data = sum } }, wrt = { "X" }, atol = 1e-12 }
      T.check_output(b)
      T.check_grad(b)
    end)
  end
  it("refuses a range past the columns and X of different shapes", function()
    refuses({ type = "partial_sum", inputs = { X = { T.tensor(R.uniform(6), { shape = { 2, 3 } }) } },
              attrs = { start_index = 2, length = 2 } }, "partial_sum", "passes X's 3 columns")
    refuses({ type = "partial_concat", inputs = { X = { T.tensor(R.uniform(6), { shape = { 2, 3 } }),
                                                        T.tensor(R.uniform(4), { shape = { 2, 2 } }) } } },
            "partial_concat", "X[0]'s shape")
  end)
end)

describe("tensor_array_to_tensor (test_tensor_array_to_tensor.py)", function()
  local oar = require("oar")
  local layers = oar.layers
  local flat = require("spec.helpers.cf_check").flat
  local nest = I.nest
  -- items [2, 3], [2, 1], [2, 2] written to an array, joined along axis 1 (or three [2, 3] stacked)
  local function build(shapes, axis, use_stack, out_shape)
    local main, startup = oar.Program(), oar.Program()
    local r = {}
    oar.program_guard(main, startup, function()
      local arr
      r.xs = {}
      for i, s in ipairs(shapes) do
        local x = layers.data{ name = "x" .. i, shape = s, dtype = "float64", append_batch_size = false }
        x.stop_gradient = false
        r.xs[i] = x
        local idx = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = i - 1 }
        arr = layers.array_write{ x = x, i = idx, array = arr }
      end
      r.out, r.index = layers.tensor_array_to_tensor{ input = arr, axis = axis, use_stack = use_stack }
      -- loss = sum(out * w), w = 1, 2, 3, ... so each item's gradient is its slice of w
      local w = layers.data{ name = "w", shape = out_shape, dtype = "float64", append_batch_size = false }
      r.loss = layers.reduce_sum(layers.elementwise_mul(r.out, w))
      r.grads = oar.gradients({ r.loss }, r.xs)
    end)
    r.main = main
    return r
  end
  local function run_case(shapes, axis, use_stack, out_shape, index)
    local r = build(shapes, axis, use_stack, out_shape)
    local feed, vals = {}, {}
    local k = 0
    for i, s in ipairs(shapes) do
      local v = {}
      for j = 1, I.numel(s) do k = k + 1; v[j] = k * 0.5 end
      vals[i] = v
      feed["x" .. i] = oar.Tensor(nest(v, s), "float64")
    end
    -- the expected Out: the items' blocks after the axis, row by row before it
    local pre = 1
    for d = 1, axis do pre = pre * shapes[1][d] end
    local want = {}
    for p = 0, pre - 1 do
      for i, s in ipairs(shapes) do
        local blk = I.numel(s) / pre
        for j = 1, blk do want[#want + 1] = vals[i][p * blk + j] end
      end
    end
    local w = {}
    for j = 1, I.numel(out_shape) do w[j] = j end
    feed.w = oar.Tensor(nest(w, out_shape), "float64")
    local fetch = { r.out, r.index }
    for _, g in ipairs(r.grads) do fetch[#fetch + 1] = g end
    local res = oar.Executor():run(r.main, { feed = feed, fetch_list = fetch })
    assert.same(want, flat(res[1]))
    assert.same(index, flat(res[2]))
    -- the gradient of item i: the weights at the positions its values went to
    for i = 1, #shapes do
      local gw = {}
      for j, v in ipairs(vals[i]) do
        for q, u in ipairs(want) do if u == v then gw[j] = w[q] end end
      end
      assert.same(gw, flat(res[2 + i]), "gradient of item " .. i)
    end
  end
  it("concatenates along axis 1 with OutIndex and gradients", function()
    run_case({ { 2, 3 }, { 2, 1 }, { 2, 2 } }, 1, false, { 2, 6 }, { 3, 1, 2 })
  end)
  it("concatenates along axis 0", function()
    run_case({ { 1, 2 }, { 3, 2 } }, 0, false, { 4, 2 }, { 1, 3 })
  end)
  it("stacks along a new axis 1", function()
    run_case({ { 2, 3 }, { 2, 3 } }, 1, true, { 2, 2, 3 }, { 1, 1 })
  end)
  it("refuses items of different shapes", function()
    local ok, err = pcall(run_case, { { 3, 2 }, { 2, 2 } }, 1, false, { 2, 4 }, {})
    assert.is_false(ok)
    assert.matches("tensor_array_to_tensor", err, 1, true)
    assert.matches("equal dims but along axis", err, 1, true)
  end)
end)
