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
