-- im2sequence and conv_shift: the cases of Fluid 1.8's
-- test_im2sequence_op.py and test_conv_shift_op.py (shapes reduced),
-- expected values from direct loops in plain Lua, gradients against float64
-- finite differences; and layers.im2sequence.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")

local numel = require("spec.helpers.index").numel
local expect_error = require("spec.helpers.expect_error")

local function fails(spec, want) expect_error(function() T.run(spec) end, want) end

-- rows (image, oy, ox), columns (c, i, j); pd {up, left, down, right}
local function im2seq_ref(x, s, ks, st, pd)
  local N, C, H, W = s[1], s[2], s[3], s[4]
  local oh = math.floor((H + pd[1] + pd[3] - ks[1]) / st[1]) + 1
  local ow = math.floor((W + pd[2] + pd[4] - ks[2]) / st[2]) + 1
  local out = {}
  for b = 0, N - 1 do
    for y = 0, oh - 1 do
      for xx = 0, ow - 1 do
        for c = 0, C - 1 do
          for i = 0, ks[1] - 1 do
            for j = 0, ks[2] - 1 do
              local yy, xc = y * st[1] - pd[1] + i, xx * st[2] - pd[2] + j
              local v = 0
              if yy >= 0 and yy < H and xc >= 0 and xc < W then v = x[((b * C + c) * H + yy) * W + xc + 1] end
              out[#out + 1] = v
            end
          end
        end
      end
    end
  end
  local lod = {}
  for b = 0, N do lod[b + 1] = b * oh * ow end
  return out, { N * oh * ow, C * ks[1] * ks[2] }, lod
end

describe("im2sequence (test_im2sequence_op.py)", function()
  local CASES = {
    { name = "TestBlockExpandOp: kernels 2 x 2, stride 1, padding 1", x = { 2, 3, 4, 4 }, ks = { 2, 2 }, st = { 1, 1 },
      pd = { 1, 1, 1, 1 } },
    { name = "TestBlockExpandOpCase2: 3 x 2 windows, strides {2, 1}, uneven paddings", x = { 2, 2, 5, 4 },
      ks = { 3, 2 }, st = { 2, 1 }, pd = { 2, 1, 2, 1 } },
    { name = "TestBlockExpandOpCase3: no padding, strides 2", x = { 1, 2, 6, 5 }, ks = { 2, 3 }, st = { 2, 2 },
      pd = { 0, 0, 0, 0 } },
    { name = "asymmetric paddings {up 0, left 1, down 2, right 0}", x = { 2, 1, 3, 4 }, ks = { 2, 2 }, st = { 1, 2 },
      pd = { 0, 1, 2, 0 } },
  }
  for _, o in ipairs(CASES) do
    it(o.name, function()
      local x = R.symmetric(numel(o.x), 101)
      local want, os, lod = im2seq_ref(x, o.x, o.ks, o.st, o.pd)
      for _, dt in ipairs({ "float64", "float32" }) do
        T.check_output{ type = "im2sequence", dtype = dt, atol = 1e-6,
          inputs = { X = T.tensor(x, { shape = o.x, dtype = dt }) },
          attrs = { kernels = o.ks, strides = o.st, paddings = o.pd },
          expect = { Out = { shape = os, data = want, lod = { lod } } } }
      end
      T.check_grad{ type = "im2sequence", dtype = "float64",
        inputs = { X = T.tensor(x, { shape = o.x, dtype = "float64" }) },
        attrs = { kernels = o.ks, strides = o.st, paddings = o.pd }, wrt = { "X" }, delta = 1e-5, max_rel = 1e-7 }
    end)
  end

  it("Y (real image sizes, Fluid's inference path): each image's grid from ceil(Y / out_stride)", function()
    local xs = { 3, 2, 5, 6 }
    local x = R.symmetric(numel(xs), 199)
    local real = { 5, 6, 3, 4, 4, 1 }            -- per image {h, w}
    local ks, st, pd, os = { 2, 2 }, { 1, 2 }, { 0, 1, 1, 0 }, { 1, 2 }
    local want, lod = {}, { 0 }
    for b = 0, 2 do
      local rh, rw = math.ceil(real[2 * b + 1] / os[1]), math.ceil(real[2 * b + 2] / os[2])
      local oh = math.floor((rh + pd[1] + pd[3] - ks[1]) / st[1]) + 1
      local ow = math.floor((rw + pd[2] + pd[4] - ks[2]) / st[2]) + 1
      for y = 0, oh - 1 do
        for xx = 0, ow - 1 do
          for c = 0, 1 do
            for i = 0, 1 do
              for j = 0, 1 do
                local yy, xc = y * st[1] - pd[1] + i, xx * st[2] - pd[2] + j
                local v = 0
                if yy >= 0 and yy < 5 and xc >= 0 and xc < 6 then v = x[((b * 2 + c) * 5 + yy) * 6 + xc + 1] end
                want[#want + 1] = v
              end
            end
          end
        end
      end
      lod[#lod + 1] = lod[#lod] + oh * ow
    end
    T.check_output{ type = "im2sequence", dtype = "float64",
      inputs = { X = T.tensor(x, { shape = xs, dtype = "float64" }), Y = T.tensor(real, { shape = { 3, 2 }, dtype = "float64" }) },
      attrs = { kernels = ks, strides = st, paddings = pd, out_stride = os },
      expect = { Out = { shape = { #want / 8, 8 }, data = want, lod = { lod } } } }
    -- one image: Fluid ignores Y
    local x1 = R.symmetric(2 * 16, 211)
    local w1, s1, l1 = im2seq_ref(x1, { 1, 2, 4, 4 }, ks, st, pd)
    T.check_output{ type = "im2sequence", dtype = "float64",
      inputs = { X = T.tensor(x1, { shape = { 1, 2, 4, 4 }, dtype = "float64" }), Y = T.tensor({ 1, 1 }, { shape = { 1, 2 }, dtype = "int32" }) },
      attrs = { kernels = ks, strides = st, paddings = pd, out_stride = os },
      expect = { Out = { shape = s1, data = w1, lod = { l1 } } } }
  end)

  it("bad inputs name the variable and the expectation", function()
    fails({ type = "im2sequence", inputs = { X = T.tensor(R.symmetric(12), { shape = { 1, 3, 4 } }) },
            attrs = { kernels = { 2, 2 } } }, "must be 4-D [N, C, H, W], got shape [1, 3, 4]")
    fails({ type = "im2sequence", inputs = { X = T.tensor(R.symmetric(16), { shape = { 1, 1, 4, 4 } }) },
            attrs = { kernels = { 5, 2 } } }, "the height window 5 is larger than the padded input 4")
    fails({ type = "im2sequence", inputs = { X = T.tensor(R.symmetric(16), { shape = { 1, 1, 4, 4 } }) },
            attrs = { kernels = { 2, 2 }, paddings = { 1, 1, 1 } } }, "paddings must hold 4 values")
  end)
end)

local function conv_shift_ref(x, y, B, M, N)
  local out, h = {}, (N - 1) / 2
  for b = 0, B - 1 do
    for i = 0, M - 1 do
      local s = 0
      for j = 0, N - 1 do s = s + x[b * M + (i + j - h) % M + 1] * y[b * N + j + 1] end
      out[b * M + i + 1] = s
    end
  end
  return out
end

describe("conv_shift (test_conv_shift_op.py)", function()
  for _, o in ipairs({ { B = 4, M = 7, N = 3 }, { B = 2, M = 5, N = 5 }, { B = 3, M = 6, N = 1 } }) do
    it(("X [%d, %d], Y [%d, %d]"):format(o.B, o.M, o.B, o.N), function()
      local x, y = R.symmetric(o.B * o.M, 103), R.symmetric(o.B * o.N, 107)
      local want = conv_shift_ref(x, y, o.B, o.M, o.N)
      for _, dt in ipairs({ "float64", "float32" }) do
        T.check_output{ type = "conv_shift", dtype = dt, atol = 1e-6,
          inputs = { X = T.tensor(x, { shape = { o.B, o.M }, dtype = dt }), Y = T.tensor(y, { shape = { o.B, o.N }, dtype = dt }) },
          expect = { Out = { shape = { o.B, o.M }, data = want } } }
      end
      T.check_grad{ type = "conv_shift", dtype = "float64",
        inputs = { X = T.tensor(x, { shape = { o.B, o.M }, dtype = "float64" }),
                   Y = T.tensor(y, { shape = { o.B, o.N }, dtype = "float64" }) },
        wrt = { "X", "Y" }, delta = 1e-5, max_rel = 1e-7 }
    end)
  end

  it("an even or too wide Y is an error naming Y", function()
    fails({ type = "conv_shift", inputs = { X = T.tensor(R.symmetric(10), { shape = { 2, 5 } }),
            Y = T.tensor(R.symmetric(4), { shape = { 2, 2 } }) } }, "its width must be odd and at most X's width")
    fails({ type = "conv_shift", inputs = { X = T.tensor(R.symmetric(10), { shape = { 2, 5 } }),
            Y = T.tensor(R.symmetric(7), { shape = { 1, 7 } }) } }, "must have the same batch size")
  end)
end)

describe("layers.im2sequence", function()
  local oar = require("oar")
  local layers = oar.layers

  it("builds im2sequence with Fluid's argument forms; the output is one sequence per image", function()
    local main, startup = oar.Program(), oar.Program()
    local out
    oar.program_guard(main, startup, function()
      local v = layers.data{ name = "x", shape = { 2, 2, 4, 5 }, dtype = "float64", append_batch_size = false }
      out = layers.im2sequence{ input = v, filter_size = { 2, 3 }, stride = 2, padding = { 1, 0 } }
    end)
    local x = R.symmetric(80, 109)
    local t = oar.Tensor{ shape = { 2, 2, 4, 5 }, dtype = "float64" }
    local p = t:data()
    for i = 1, #x do p[i - 1] = x[i] end
    local exe = oar.Executor(oar.CPUPlace())
    exe:run(startup)
    local got = exe:run(main, { feed = { x = t }, fetch_list = { out } })[1]
    local want, os, lod = im2seq_ref(x, { 2, 2, 4, 5 }, { 2, 3 }, { 2, 2 }, { 1, 0, 1, 0 })
    local flat = {}
    for i = 1, numel(os) do flat[i] = got:data()[i - 1] end
    T.assert_close({ data = flat, shape = got:shape() }, { data = want, shape = os }, 1e-12)
    assert.same({ lod }, got:lod())
    assert.same({ 1, 0, 1, 0 }, main:global_block():ops()[1]:attr("paddings"))
  end)

  it("input_image_size becomes input Y and out_stride", function()
    local main = oar.Program()
    oar.program_guard(main, oar.Program(), function()
      local v = layers.data{ name = "x", shape = { 1, 4, 4 }, dtype = "float32" }
      local sz = layers.data{ name = "s", shape = { 2 }, dtype = "float32" }
      layers.im2sequence{ input = v, filter_size = 2, input_image_size = sz, out_stride = { 2, 1 } }
    end)
    local op = main:global_block():ops()[1]
    assert.same({ "s" }, op:input("Y"))
    assert.same({ 2, 1 }, op:attr("out_stride"))
  end)
end)
