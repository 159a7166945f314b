-- conv2d_transpose / depthwise_conv2d_transpose: the cases of Paddle's
-- test_conv2d_transpose_op.py (shapes, pads, strides, dilations, groups,
-- SAME/VALID, output_size, output_padding), expected values from a plain
-- Lua scatter (every input pixel times the kernel added into the output, as
-- Paddle's conv2dtranspose_forward_naive), gradients against finite
-- differences in float64.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")

local function get(t, shape, idx)
  local p = 0
  for i = 1, #shape do p = p * shape[i] + idx[i] end
  return t[p + 1]
end

-- Paddle's _get_padding_with_SAME over the input's spatial dims
local function same_pads(h, w, k, s)
  local pads = {}
  for i, size in ipairs({ h, w }) do
    local out = math.ceil(size / s[i])
    local sum = math.max((out - 1) * s[i] + k[i] - size, 0)
    pads[2 * i - 1] = math.floor(sum / 2)
    pads[2 * i] = sum - math.floor(sum / 2)
  end
  return pads
end

-- the expected Output of conv2d_transpose for x [N, C, H, W], w [C, OC/g, kh, kw]
local function reference(x, xs, w, ws, a)
  local s, d, g = a.strides or { 1, 1 }, a.dilations or { 1, 1 }, a.groups or 1
  local p = a.paddings or { 0, 0 }
  if #p == 2 then p = { p[1], p[1], p[2], p[2] } end
  if a.padding_algorithm == "VALID" then p = { 0, 0, 0, 0 } end
  if a.padding_algorithm == "SAME" then
    p = same_pads(xs[3], xs[4], { ws[3], ws[4] }, s)
    d = { 1, 1 }
  end
  local n, c, h, wd = xs[1], xs[2], xs[3], xs[4]
  local ocg, kh, kw = ws[2], ws[3], ws[4]
  local oc = ocg * g
  local fh, fw = (h - 1) * s[1] + d[1] * (kh - 1) + 1, (wd - 1) * s[2] + d[2] * (kw - 1) + 1
  local oh, ow = fh - p[1] - p[2], fw - p[3] - p[4]
  if a.output_size then oh, ow = a.output_size[1], a.output_size[2] end
  if a.output_padding then oh, ow = oh + a.output_padding[1], ow + a.output_padding[2] end
  local out = {}
  for i = 1, n * oc * oh * ow do out[i] = 0 end
  local icg = c / g
  for b = 0, n - 1 do
    for ic = 0, c - 1 do
      local gr = math.floor(ic / icg)
      for i = 0, h - 1 do
        for j = 0, wd - 1 do
          local xv = get(x, xs, { b, ic, i, j })
          for o = 0, ocg - 1 do
            for u = 0, kh - 1 do
              for v = 0, kw - 1 do
                local y, z = i * s[1] + u * d[1] - p[1], j * s[2] + v * d[2] - p[3]
                if y >= 0 and y < oh and z >= 0 and z < ow then
                  local q = ((b * oc + gr * ocg + o) * oh + y) * ow + z + 1
                  out[q] = out[q] + xv * get(w, ws, { ic, o, u, v })
                end
              end
            end
          end
        end
      end
    end
  end
  return out, { n, oc, oh, ow }
end

local numel = require("spec.helpers.index").numel

-- name, input shape, filter shape, attrs
local CASES = {
  { "TestConv2DTransposeOp", { 2, 3, 5, 5 }, { 3, 6, 3, 3 }, { paddings = { 0, 0 }, strides = { 1, 1 } } },
  { "TestWithSymmetricPad", { 2, 3, 5, 5 }, { 3, 6, 3, 3 }, { paddings = { 1, 1 } } },
  { "TestWithAsymmetricPad", { 2, 3, 5, 5 }, { 3, 6, 3, 3 }, { paddings = { 1, 0, 1, 2 } } },
  { "TestWithSAMEPad", { 2, 3, 6, 5 }, { 3, 6, 4, 3 },
    { strides = { 2, 1 }, dilations = { 1, 2 }, padding_algorithm = "SAME" } },
  { "TestWithVALIDPad", { 2, 3, 5, 5 }, { 3, 6, 3, 3 }, { paddings = { 1, 1 }, padding_algorithm = "VALID" } },
  { "TestWithGroups", { 2, 4, 5, 5 }, { 4, 3, 3, 3 }, { paddings = { 1, 1 }, groups = 2 } },
  { "TestWithStride", { 2, 3, 5, 5 }, { 3, 6, 3, 3 }, { paddings = { 1, 1 }, strides = { 2, 2 } } },
  { "TestWithDilation", { 2, 3, 5, 5 }, { 3, 6, 3, 3 }, { paddings = { 1, 1 }, dilations = { 2, 2 } } },
  { "TestWithEvenUpsample", { 2, 3, 7, 7 }, { 3, 6, 5, 5 },
    { paddings = { 2, 2 }, strides = { 2, 2 }, output_size = { 14, 14 } } },
  { "TestWithEvenUpsampleOutputPadding", { 2, 3, 7, 7 }, { 3, 6, 5, 5 },
    { paddings = { 2, 2 }, strides = { 2, 2 }, output_padding = { 1, 1 } } },
}

describe("conv2d_transpose (Paddle's test_conv2d_transpose_op.py)", function()
  for ci, c in ipairs(CASES) do
    it(c[1], function()
      local x = R.uniform(numel(c[2]), ci, -1, 1)
      local w = R.uniform(numel(c[3]), ci + 50, -1, 1)
      local want, oshape = reference(x, c[2], w, c[3], c[4])
      for _, dtype in ipairs({ "float64", "float32" }) do
        T.check_output{
          type = "conv2d_transpose", attrs = c[4], dtype = dtype,
          inputs = { Input = T.tensor(x, { shape = c[2], dtype = dtype }),
                     Filter = T.tensor(w, { shape = c[3], dtype = dtype }) },
          expect = { Output = { shape = oshape, data = want } },
          atol = dtype == "float32" and 1e-5 or 1e-12, rtol = 1e-5,
        }
      end
    end)
  end

  it("depthwise_conv2d_transpose (groups = channels)", function()
    local xs, ws = { 1, 4, 4, 4 }, { 4, 1, 3, 3 }
    local a = { paddings = { 1, 1 }, strides = { 2, 2 }, groups = 4 }
    local x, w = R.uniform(numel(xs), 77, -1, 1), R.uniform(numel(ws), 78, -1, 1)
    local want, oshape = reference(x, xs, w, ws, a)
    T.check_output{
      type = "depthwise_conv2d_transpose", attrs = a,
      inputs = { Input = T.tensor(x, { shape = xs }), Filter = T.tensor(w, { shape = ws }) },
      expect = { Output = { shape = oshape, data = want } }, atol = 1e-12,
    }
  end)

  it("a hand-computed case: 1x1 input, 2x2 kernel, stride 2", function()
    T.check_output{
      type = "conv2d_transpose", attrs = { strides = { 2, 2 } },
      inputs = { Input = T.tensor({ 1, 2, 3, 4 }, { shape = { 1, 1, 2, 2 } }),
                 Filter = T.tensor({ 1, 10, 100, 1000 }, { shape = { 1, 1, 2, 2 } }) },
      expect = { Output = { shape = { 1, 1, 4, 4 }, data = {
        1, 10, 2, 20,
        100, 1000, 200, 2000,
        3, 30, 4, 40,
        300, 3000, 400, 4000 } } },
      atol = 0,
    }
  end)

  for _, c in ipairs({ CASES[3], CASES[4], CASES[6], CASES[7], CASES[10] }) do
    it("gradient: " .. c[1], function()
      -- smaller shapes than the forward cases: every element is perturbed twice
      local xs = { 2, c[2][2], 3, 3 }
      local ws = { c[3][1], 2, c[3][3], c[3][4] }
      local a = {}
      for k, v in pairs(c[4]) do a[k] = v end
      if a.output_size then a.output_size = nil end
      T.check_grad{
        type = "conv2d_transpose", attrs = a,
        inputs = { Input = T.tensor(R.uniform(numel(xs), 5, -1, 1), { shape = xs }),
                   Filter = T.tensor(R.uniform(numel(ws), 6, -1, 1), { shape = ws }) },
        wrt = { "Input", "Filter" }, of = { "Output" },
      }
    end)
  end

  it("refuses bad geometry with the reason", function()
    local x = T.tensor(R.uniform(2 * 3 * 4 * 4, 1, -1, 1), { shape = { 2, 3, 4, 4 } })
    local ok, err = pcall(T.run, { type = "conv2d_transpose",
      inputs = { Input = x, Filter = T.tensor(R.uniform(4 * 2 * 9, 2, -1, 1), { shape = { 4, 2, 3, 3 } }) } })
    assert.is_false(ok)
    assert.matches("Input has 3 channels but Filter's dim 0 is 4", err, 1, true)
    local w = T.tensor(R.uniform(3 * 2 * 9, 2, -1, 1), { shape = { 3, 2, 3, 3 } })
    ok, err = pcall(T.run, { type = "conv2d_transpose", attrs = { strides = { 2, 2 }, output_size = { 20, 9 } },
                             inputs = { Input = x, Filter = w } })
    assert.is_false(ok)
    assert.matches("attr output_size[0] = 20 must be in [9, 11)", err, 1, true)
    ok, err = pcall(T.run, { type = "conv2d_transpose", attrs = { data_format = "NHWC" },
                             inputs = { Input = x, Filter = w } })
    assert.is_false(ok)
    assert.matches("NHWC", err, 1, true)
    ok, err = pcall(T.run, { type = "conv2d_transpose", attrs = { fuse_relu = true },
                             inputs = { Input = x, Filter = w } })
    assert.is_false(ok)
    assert.matches("attr 'fuse_relu' = true is not supported", err, 1, true)
  end)
end)
