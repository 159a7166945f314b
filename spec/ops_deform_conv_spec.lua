-- deformable_conv (v2, with Mask) and deformable_conv_v1: the cases of
-- Fluid 1.8's test_deformable_conv_op.py and test_deformable_conv_v1_op.py
-- (shapes reduced), expected values from a direct deformable convolution
-- in plain Lua, gradients of every input against float64 finite
-- differences; and layers.deformable_conv.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")

local function numel(s)
  local k = 1
  for _, v in ipairs(s) do k = k * v end
  return k
end

-- bilinear sample of plane (b, c) at (y, x): 0 at or beyond -1 and the size,
-- corners outside read 0
local function sample(x, xs, b, c, y, xx)
  local H, W = xs[3], xs[4]
  if y <= -1 or xx <= -1 or y >= H or xx >= W then return 0 end
  local y0, x0 = math.floor(y), math.floor(xx)
  local function at(yy, xc)
    if yy < 0 or yy >= H or xc < 0 or xc >= W then return 0 end
    return x[((b * xs[2] + c) * H + yy) * W + xc + 1]
  end
  local ly, lx = y - y0, xx - x0
  return (1 - ly) * (1 - lx) * at(y0, x0) + (1 - ly) * lx * at(y0, x0 + 1) + ly * (1 - lx) * at(y0 + 1, x0) +
    ly * lx * at(y0 + 1, x0 + 1)
end

local function deform_ref(x, xs, off, mask, w, ws, o)
  local st, pd, dl = o.strides or { 1, 1 }, o.paddings or { 0, 0 }, o.dilations or { 1, 1 }
  local groups, dg = o.groups or 1, o.dg or 1
  local kh, kw = ws[3], ws[4]
  local oh = math.floor((xs[3] + 2 * pd[1] - (dl[1] * (kh - 1) + 1)) / st[1]) + 1
  local ow = math.floor((xs[4] + 2 * pd[2] - (dl[2] * (kw - 1) + 1)) / st[2]) + 1
  local cg, mg, cpd = xs[2] / groups, ws[1] / groups, xs[2] / dg
  local out = {}
  for b = 0, xs[1] - 1 do
    for m = 0, ws[1] - 1 do
      local g = math.floor(m / mg)
      for y = 0, oh - 1 do
        for xo = 0, ow - 1 do
          local s = 0
          for cc = 0, cg - 1 do
            local c = g * cg + cc
            local d = math.floor(c / cpd)
            for i = 0, kh - 1 do
              for j = 0, kw - 1 do
                local tap = i * kw + j
                local ob = ((b * dg + d) * 2 * kh * kw + 2 * tap) * oh * ow + y * ow + xo
                local py = y * st[1] - pd[1] + i * dl[1] + off[ob + 1]
                local px = xo * st[2] - pd[2] + j * dl[2] + off[ob + oh * ow + 1]
                local v = sample(x, xs, b, c, py, px)
                if mask then v = v * mask[((b * dg + d) * kh * kw + tap) * oh * ow + y * ow + xo + 1] end
                s = s + v * w[((m * cg + cc) * kh + i) * kw + j + 1]
              end
            end
          end
          out[((b * ws[1] + m) * oh + y) * ow + xo + 1] = s
        end
      end
    end
  end
  return out, { xs[1], ws[1], oh, ow }
end

local CASES = {
  { name = "TestModulatedDeformableConvOp: [2, 4, 4, 4], 3 x 3, padding 1", x = { 2, 4, 4, 4 }, w = { 4, 4, 3, 3 },
    paddings = { 1, 1 } },
  { name = "TestWithStride: stride 2, padding 1", x = { 1, 3, 5, 5 }, w = { 2, 3, 3, 3 }, strides = { 2, 2 },
    paddings = { 1, 1 } },
  { name = "TestWithDilation: dilation 2, padding 2", x = { 1, 2, 5, 5 }, w = { 2, 2, 3, 3 }, dilations = { 2, 2 },
    paddings = { 2, 2 } },
  { name = "TestWith1x1", x = { 2, 3, 3, 3 }, w = { 2, 3, 1, 1 } },
  { name = "TestWithGroup: groups 2, deformable_groups 2", x = { 1, 4, 4, 3 }, w = { 4, 2, 2, 2 }, groups = 2, dg = 2,
    paddings = { 1, 0 } },
}

local function case_inputs(o, v2, dt)
  local kk = o.w[3] * o.w[4]
  local oh = math.floor((o.x[3] + 2 * (o.paddings or { 0, 0 })[1] - ((o.dilations or { 1, 1 })[1] * (o.w[3] - 1) + 1)) /
    (o.strides or { 1, 1 })[1]) + 1
  local ow = math.floor((o.x[4] + 2 * (o.paddings or { 0, 0 })[2] - ((o.dilations or { 1, 1 })[2] * (o.w[4] - 1) + 1)) /
    (o.strides or { 1, 1 })[2]) + 1
  local dg = o.dg or 1
  local vals = {
    x = R.symmetric(numel(o.x), 167),
    off = R.symmetric(o.x[1] * 2 * dg * kk * oh * ow, 173, 1.7),
    mask = R.uniform(o.x[1] * dg * kk * oh * ow, 179, 0, 1),
    w = R.symmetric(numel(o.w), 181, 0.5),
  }
  local ins = { Input = T.tensor(vals.x, { shape = o.x, dtype = dt }),
                Offset = T.tensor(vals.off, { shape = { o.x[1], 2 * dg * kk, oh, ow }, dtype = dt }),
                Filter = T.tensor(vals.w, { shape = o.w, dtype = dt }) }
  if v2 then ins.Mask = T.tensor(vals.mask, { shape = { o.x[1], dg * kk, oh, ow }, dtype = dt }) end
  return ins, vals
end

local function attrs_of(o)
  return { strides = o.strides, paddings = o.paddings, dilations = o.dilations, groups = o.groups,
           deformable_groups = o.dg, im2col_step = 1 }
end

for _, v in ipairs({ { "deformable_conv", true }, { "deformable_conv_v1", false } }) do
  local optype, v2 = v[1], v[2]
  describe(optype .. " (test_" .. optype .. "_op.py)", function()
    for _, o in ipairs(CASES) do
      it(o.name, function()
        local _, vals = case_inputs(o, v2, "float64")
        local want, os = deform_ref(vals.x, o.x, vals.off, v2 and vals.mask or nil, vals.w, o.w, o)
        for _, dt in ipairs({ "float64", "float32" }) do
          T.check_output{ type = optype, dtype = dt, atol = dt == "float32" and 1e-4 or 1e-10,
            inputs = (case_inputs(o, v2, dt)), attrs = attrs_of(o), outputs = { Output = 1 },
            expect = { Output = { shape = os, data = want } } }
        end
      end)
    end

    it("gradients of every input against finite differences", function()
      for _, o in ipairs({ CASES[2], CASES[5] }) do
        T.check_grad{ type = optype, dtype = "float64", inputs = (case_inputs(o, v2, "float64")), attrs = attrs_of(o),
          outputs = { Output = 1 }, wrt = v2 and { "Input", "Offset", "Mask", "Filter" } or { "Input", "Offset", "Filter" },
          of = { "Output" }, delta = 1e-6, max_rel = 1e-5 }
      end
    end)

    it("an Offset of the wrong shape is an error naming Offset and the expected shape", function()
      local ins = case_inputs(CASES[4], v2, "float32")
      ins.Offset = T.tensor(R.symmetric(2 * 4 * 9), { shape = { 2, 4, 3, 3 }, dtype = "float32" })
      local ok, err = pcall(T.run, { type = optype, inputs = ins, outputs = { Output = 1 } })
      assert.is_false(ok)
      assert.matches("Offset ('", tostring(err), 1, true)
      assert.matches("= [2, 2, 3, 3], got shape [2, 4, 3, 3]", tostring(err), 1, true)
    end)
  end)
end

describe("layers.deformable_conv", function()
  local oar = require("oar")
  local layers = oar.layers

  for _, modulated in ipairs({ true, false }) do
    it(("modulated = %s: the %s op with Fluid's attributes, bias added"):format(tostring(modulated),
        modulated and "deformable_conv" or "deformable_conv_v1"), function()
      local o = { x = { 1, 2, 4, 4 }, w = { 3, 2, 3, 3 }, paddings = { 1, 1 } }
      local _, vals = case_inputs(o, true, "float64")
      local main, startup = oar.Program(), oar.Program()
      local out
      oar.program_guard(main, startup, function()
        local x = layers.data{ name = "x", shape = { 1, 2, 4, 4 }, dtype = "float64", append_batch_size = false }
        local off = layers.data{ name = "off", shape = { 1, 18, 4, 4 }, dtype = "float64", append_batch_size = false }
        local m = layers.data{ name = "m", shape = { 1, 9, 4, 4 }, dtype = "float64", append_batch_size = false }
        out = layers.deformable_conv{ input = x, offset = off, mask = m, num_filters = 3, filter_size = 3, padding = 1,
                                      modulated = modulated,
                                      param_attr = oar.ParamAttr{ initializer = oar.initializer.Constant{ value = 0.5 } },
                                      bias_attr = oar.ParamAttr{ initializer = oar.initializer.Constant{ value = 0.25 } } }
      end)
      local function tensor(v, shape)
        local t = oar.Tensor{ shape = shape, dtype = "float64" }
        for i = 1, #v do t:data()[i - 1] = v[i] end
        return t
      end
      local exe = oar.Executor(oar.CPUPlace())
      exe:run(startup)
      local got = exe:run(main, { feed = { x = tensor(vals.x, { 1, 2, 4, 4 }), off = tensor(vals.off, { 1, 18, 4, 4 }),
                                           m = tensor(vals.mask, { 1, 9, 4, 4 }) }, fetch_list = { out } })[1]
      local w = {}
      for i = 1, 54 do w[i] = 0.5 end
      local want, os = deform_ref(vals.x, o.x, vals.off, modulated and vals.mask or nil, w, o.w, o)
      local flat = {}
      for i = 1, #want do
        want[i] = want[i] + 0.25
        flat[i] = got:data()[i - 1]
      end
      T.assert_close({ data = flat, shape = got:shape() }, { data = want, shape = os }, 1e-10)
      assert.equal(modulated and "deformable_conv" or "deformable_conv_v1", main:global_block():ops()[1].type)
    end)
  end

  it("rejects a missing mask when modulated, with the layer's name", function()
    oar.program_guard(oar.Program(), oar.Program(), function()
      local x = layers.data{ name = "x", shape = { 2, 4, 4 }, dtype = "float32" }
      local off = layers.data{ name = "off", shape = { 18, 4, 4 }, dtype = "float32" }
      assert.has_error(function() layers.deformable_conv{ input = x, offset = off, num_filters = 2, filter_size = 3 } end,
        "deformable_conv: 'mask' must be a Variable, got nil")
    end)
  end)
end)

describe("deformable_conv with non-finite offsets", function()
  it("a NaN or huge offset samples nothing, without crashing", function()
    local off = {}
    for i = 1, 2 * 4 do off[i] = (i % 3 == 0) and 0 / 0 or 1e300 end
    local res = T.run{ type = "deformable_conv_v1", dtype = "float64",
      inputs = { Input = T.tensor(R.symmetric(4), { shape = { 1, 1, 2, 2 }, dtype = "float64" }),
                 Offset = T.tensor(off, { shape = { 1, 2, 2, 2 }, dtype = "float64" }),
                 Filter = T.tensor({ 1 }, { shape = { 1, 1, 1, 1 }, dtype = "float64" }) },
      outputs = { Output = 1 } }
    assert.same({ 0, 0, 0, 0 }, res.Output[1].data)
  end)
end)
