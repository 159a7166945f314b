-- trilinear_interp, bicubic_interp and layers.resize_trilinear /
-- image_resize (TRILINEAR, BICUBIC): the cases of Fluid 1.8's
-- test_trilinear_interp_op.py and test_bicubic_interp_op.py (shapes
-- reduced), expected values from Paddle's sampling rules written out in
-- plain Lua, gradients against float64 finite differences.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")

local numel = require("spec.helpers.index").numel
local expect_error = require("spec.helpers.expect_error")

local function fails(spec, want) expect_error(function() T.run(spec) end, want) end

-- ---- trilinear_interp, bicubic_interp --------------------------------------------------
local ffi = require("ffi")
local function f32(v) return tonumber(ffi.new("float", v)) end

-- Paddle's float ratio
local function ratio(align, i, o)
  if o <= 1 then return 0 end
  if align then return f32(f32(i - 1) / f32(o - 1)) end
  return f32(f32(i) / f32(o))
end

local function trunc(v) return v >= 0 and math.floor(v) or math.ceil(v) end

local function trilinear_ref(x, xs, os, align, mode)
  local out = {}
  local r = {}
  for i = 1, 3 do r[i] = ratio(align, xs[i + 2], os[i + 2]) end
  local half = mode == 0 and not align
  local function src(i, k)
    local rk = f32(r[i] * k)
    local n = half and trunc(r[i] * (k + 0.5) - 0.5) or trunc(rk)
    if n < 0 then n = 0 end
    local hi = math.min(n + 1, xs[i + 2] - 1)
    local s = math.max(r[i] * (k + 0.5) - 0.5, 0)
    local d = half and s - n or rk - n
    return n, hi, 1 - d, d
  end
  local D, H, W = xs[3], xs[4], xs[5]
  for m = 0, xs[1] * xs[2] - 1 do
    for a = 0, os[3] - 1 do
      local a0, a1, wa0, wa1 = src(1, a)
      for b = 0, os[4] - 1 do
        local b0, b1, wb0, wb1 = src(2, b)
        for c = 0, os[5] - 1 do
          local c0, c1, wc0, wc1 = src(3, c)
          local function v(z, y, xx) return x[m * D * H * W + (z * H + y) * W + xx + 1] end
          out[#out + 1] = wa0 * (wb0 * (wc0 * v(a0, b0, c0) + wc1 * v(a0, b0, c1)) +
                                 wb1 * (wc0 * v(a0, b1, c0) + wc1 * v(a0, b1, c1))) +
                          wa1 * (wb0 * (wc0 * v(a1, b0, c0) + wc1 * v(a1, b0, c1)) +
                                 wb1 * (wc0 * v(a1, b1, c0) + wc1 * v(a1, b1, c1)))
        end
      end
    end
  end
  return out
end

local function bicubic_ref(x, xs, os, align)
  local A = -0.75
  local function c1(t) return ((A + 2) * t - (A + 3)) * t * t + 1 end
  local function c2(t) return ((A * t - 5 * A) * t + 8 * A) * t - 4 * A end
  local function interp(p, t) return p[1] * c2(t + 1) + p[2] * c1(t) + p[3] * c1(1 - t) + p[4] * c2(2 - t) end
  local H, W = xs[3], xs[4]
  local rh, rw = ratio(align, H, os[3]), ratio(align, W, os[4])
  local out = {}
  for m = 0, xs[1] * xs[2] - 1 do
    for k = 0, os[3] - 1 do
      local py = align and f32(rh * k) or rh * (k + 0.5) - 0.5
      local fy = math.floor(py)
      for l = 0, os[4] - 1 do
        local px = align and f32(rw * l) or rw * (l + 0.5) - 0.5
        local fx = math.floor(px)
        local rows = {}
        for i = 0, 3 do
          local yy = math.min(math.max(fy - 1 + i, 0), H - 1)
          local p = {}
          for j = 0, 3 do
            local xx = math.min(math.max(fx - 1 + j, 0), W - 1)
            p[j + 1] = x[m * H * W + yy * W + xx + 1]
          end
          rows[i + 1] = interp(p, px - fx)
        end
        out[#out + 1] = interp(rows, py - fy)
      end
    end
  end
  return out
end

describe("trilinear_interp (test_trilinear_interp_op.py)", function()
  local CASES = {
    { name = "TestTrilinearInterpOp: [2, 3, 4, 4, 4] -> 2, 2, 2", x = { 2, 3, 4, 4, 4 }, out = { 2, 2, 2 }, align = true, mode = 1 },
    { name = "TestTrilinearInterpCase1: [4, 1, 7, 8, 9] -> 1, 1, 1", x = { 4, 1, 7, 8, 9 }, out = { 1, 1, 1 }, align = true, mode = 1 },
    { name = "TestTrilinearInterpCase2: [3, 3, 5, 4, 6] -> 9, 7, 8", x = { 3, 3, 5, 4, 6 }, out = { 9, 7, 8 }, align = true, mode = 1 },
    { name = "align_corners false, align_mode 1", x = { 2, 2, 3, 4, 5 }, out = { 5, 3, 7 }, align = false, mode = 1 },
    { name = "align_corners false, align_mode 0 (half-pixel)", x = { 2, 2, 3, 4, 5 }, out = { 5, 3, 7 }, align = false, mode = 0 },
    { name = "scale 1.5", x = { 1, 2, 2, 4, 3 }, scale = 1.5, out = { 3, 6, 4 }, align = true, mode = 1 },
  }
  for _, o in ipairs(CASES) do
    it(o.name, function()
      local x = R.symmetric(numel(o.x), 71)
      local os = { o.x[1], o.x[2], o.out[1], o.out[2], o.out[3] }
      local want = trilinear_ref(x, o.x, os, o.align, o.mode)
      local attrs = { interp_method = "trilinear", align_corners = o.align, align_mode = o.mode }
      if o.scale then attrs.scale = o.scale else attrs.out_d, attrs.out_h, attrs.out_w = o.out[1], o.out[2], o.out[3] end
      for _, dt in ipairs({ "float64", "float32" }) do
        T.check_output{ type = "trilinear_interp", dtype = dt, atol = 1e-5,
          inputs = { X = T.tensor(x, { shape = o.x, dtype = dt }) }, attrs = attrs,
          expect = { Out = { shape = os, data = want } } }
      end
    end)
  end

  it("OutSize overrides the scale; SizeTensor overrides everything", function()
    local x = R.symmetric(2 * 27, 73)
    local want = trilinear_ref(x, { 1, 2, 3, 3, 3 }, { 1, 2, 4, 2, 5 }, true, 1)
    T.check_output{ type = "trilinear_interp", dtype = "float64",
      inputs = { X = T.tensor(x, { shape = { 1, 2, 3, 3, 3 }, dtype = "float64" }),
                 OutSize = T.tensor({ 4, 2, 5 }, { dtype = "int32" }) },
      attrs = { scale = 2.0, interp_method = "trilinear" }, expect = { Out = { shape = { 1, 2, 4, 2, 5 }, data = want } } }
    T.check_output{ type = "trilinear_interp", dtype = "float64",
      inputs = { X = T.tensor(x, { shape = { 1, 2, 3, 3, 3 }, dtype = "float64" }),
                 SizeTensor = { T.tensor({ 4 }, { dtype = "int32" }), T.tensor({ 2 }, { dtype = "int32" }),
                                T.tensor({ 5 }, { dtype = "int32" }) } },
      attrs = { out_d = 9, out_h = 9, out_w = 9 }, expect = { Out = { shape = { 1, 2, 4, 2, 5 }, data = want } } }
  end)

  it("gradient against finite differences", function()
    for _, o in ipairs({ { align = true, mode = 1 }, { align = false, mode = 0 }, { align = false, mode = 1 } }) do
      T.check_grad{ type = "trilinear_interp", dtype = "float64",
        inputs = { X = T.tensor(R.symmetric(2 * 24, 79), { shape = { 1, 2, 2, 3, 4 }, dtype = "float64" }) },
        attrs = { out_d = 3, out_h = 5, out_w = 3, align_corners = o.align, align_mode = o.mode },
        wrt = { "X" }, delta = 1e-5, max_rel = 1e-7 }
    end
  end)

  it("bad inputs name the variable", function()
    fails({ type = "trilinear_interp", inputs = { X = T.tensor(R.symmetric(16), { shape = { 1, 1, 4, 4 } }) },
            attrs = { out_d = 2, out_h = 2, out_w = 2 } }, "must be 5-D [N, C, D, H, W], got shape [1, 1, 4, 4]")
    fails({ type = "trilinear_interp", inputs = { X = T.tensor(R.symmetric(8), { shape = { 1, 1, 2, 2, 2 } }) } },
          "the output size [0, 0, 0] must be positive")
  end)
end)

describe("bicubic_interp (test_bicubic_interp_op.py)", function()
  local CASES = {
    { name = "TestBicubicInterpOp: [2, 3, 5, 5] -> 3, 3, align_corners", x = { 2, 3, 5, 5 }, out = { 3, 3 }, align = true },
    { name = "TestBicubicInterpCase1: [4, 1, 7, 8] -> 1, 1", x = { 4, 1, 7, 8 }, out = { 1, 1 }, align = true },
    { name = "TestBicubicInterpCase2: [3, 3, 9, 6] -> 10, 8", x = { 3, 3, 9, 6 }, out = { 10, 8 }, align = true },
    { name = "TestBicubicInterpCase3: [1, 1, 8, 6] -> 11, 13, no align_corners", x = { 1, 1, 8, 6 }, out = { 11, 13 }, align = false },
    { name = "downsampling without align_corners", x = { 2, 2, 9, 7 }, out = { 4, 3 }, align = false },
  }
  for _, o in ipairs(CASES) do
    it(o.name, function()
      local x = R.symmetric(numel(o.x), 83)
      local os = { o.x[1], o.x[2], o.out[1], o.out[2] }
      local want = bicubic_ref(x, o.x, os, o.align)
      for _, dt in ipairs({ "float64", "float32" }) do
        T.check_output{ type = "bicubic_interp", dtype = dt, atol = 1e-5,
          inputs = { X = T.tensor(x, { shape = o.x, dtype = dt }) },
          attrs = { interp_method = "bicubic", out_h = o.out[1], out_w = o.out[2], align_corners = o.align },
          expect = { Out = { shape = os, data = want } } }
      end
    end)
  end

  it("gradient against finite differences", function()
    for _, align in ipairs({ true, false }) do
      T.check_grad{ type = "bicubic_interp", dtype = "float64",
        inputs = { X = T.tensor(R.symmetric(2 * 20, 89), { shape = { 1, 2, 4, 5 }, dtype = "float64" }) },
        attrs = { out_h = 6, out_w = 3, align_corners = align }, wrt = { "X" }, delta = 1e-5, max_rel = 1e-7 }
    end
  end)
end)

describe("layers.resize_trilinear / image_resize TRILINEAR and BICUBIC", function()
  local oar = require("oar")
  local layers = oar.layers

  local function run(xshape, build)
    local res, x, main = require("spec.helpers.layer_run").run_symmetric(xshape, 97, build)
    return res[1], x, main
  end

  it("resize_trilinear with out_shape, align_corners false, align_mode 0", function()
    local got, x, main = run({ 1, 2, 3, 2, 4 }, function(v)
      return layers.resize_trilinear{ input = v, out_shape = { 5, 3, 2 }, align_corners = false, align_mode = 0 }
    end)
    T.assert_close(got, { data = trilinear_ref(x, { 1, 2, 3, 2, 4 }, { 1, 2, 5, 3, 2 }, false, 0),
                          shape = { 1, 2, 5, 3, 2 } }, 1e-12)
    local op = main:global_block():ops()[1]
    assert.equal("trilinear_interp", op.type)
    assert.equal("trilinear", op:attr("interp_method"))
  end)

  it("resize_trilinear positional scale; image_resize TRILINEAR and BICUBIC", function()
    local got, x = run({ 1, 1, 2, 3, 2 }, function(v) return layers.resize_trilinear(v, nil, 2) end)
    T.assert_close(got, { data = trilinear_ref(x, { 1, 1, 2, 3, 2 }, { 1, 1, 4, 6, 4 }, true, 1),
                          shape = { 1, 1, 4, 6, 4 } }, 1e-12)
    got, x = run({ 1, 1, 2, 3, 2 }, function(v)
      return layers.image_resize{ input = v, out_shape = { 3, 3, 3 }, resample = "TRILINEAR" }
    end)
    T.assert_close(got, { data = trilinear_ref(x, { 1, 1, 2, 3, 2 }, { 1, 1, 3, 3, 3 }, true, 1),
                          shape = { 1, 1, 3, 3, 3 } }, 1e-12)
    got, x = run({ 2, 1, 4, 3 }, function(v)
      return layers.image_resize{ input = v, out_shape = { 5, 7 }, resample = "BICUBIC", align_corners = false }
    end)
    T.assert_close(got, { data = bicubic_ref(x, { 2, 1, 4, 3 }, { 2, 1, 5, 7 }, false), shape = { 2, 1, 5, 7 } },
      1e-12)
  end)

  it("reject bad arguments with the layer's name", function()
    oar.program_guard(oar.Program(), oar.Program(), function()
      local v = layers.data{ name = "x", shape = { 3, 4, 4 }, dtype = "float32" }
      assert.has_error(function() layers.resize_trilinear{ input = v, out_shape = { 2, 2, 2 } } end,
        "resize_trilinear: 'input' must be 5-D, got shape [-1, 3, 4, 4]")
      assert.has_error(function() layers.image_resize{ input = v, out_shape = { 2, 2 }, resample = "LANCZOS" } end,
        "image_resize: 'resample' must be one of BILINEAR, NEAREST, BICUBIC, TRILINEAR, LINEAR, got string 'LANCZOS'")
    end)
  end)
end)

describe("trilinear_interp / bicubic_interp channels last (data_layout NHWC / NDHWC)", function()
  -- [N, C, sp...] (flat) -> [N, sp..., C]
  local function to_last(v, shape)
    local N, C = shape[1], shape[2]
    local S = numel(shape) / (N * C)
    local out = {}
    for b = 0, N - 1 do
      for c = 0, C - 1 do
        for p = 0, S - 1 do out[(b * S + p) * C + c + 1] = v[(b * C + c) * S + p + 1] end
      end
    end
    return out
  end
  local function last_shape(s)
    local r = { s[1] }
    for i = 3, #s do r[#r + 1] = s[i] end
    r[#r + 1] = s[2]
    return r
  end

  for _, o in ipairs({ { op = "trilinear_interp", x = { 2, 3, 2, 3, 4 }, out = { 4, 2, 3 }, layout = "NDHWC" },
                       { op = "trilinear_interp", x = { 1, 2, 3, 2, 2 }, out = { 2, 4, 3 }, layout = "NHWC" },
                       { op = "bicubic_interp", x = { 2, 3, 4, 5 }, out = { 6, 3 }, layout = "NHWC" } }) do
    it(o.op .. " " .. o.layout .. ": the channels-first result, transposed", function()
      local x = R.symmetric(numel(o.x), 193)
      local os = { o.x[1], o.x[2] }
      for _, v in ipairs(o.out) do os[#os + 1] = v end
      local want = o.op == "trilinear_interp" and trilinear_ref(x, o.x, os, false, 0) or bicubic_ref(x, o.x, os, false)
      local attrs = { data_layout = o.layout, align_corners = false, align_mode = 0 }
      if #o.out == 3 then attrs.out_d = o.out[1] end
      attrs.out_h, attrs.out_w = o.out[#o.out - 1], o.out[#o.out]
      T.check_output{ type = o.op, dtype = "float64",
        inputs = { X = T.tensor(to_last(x, o.x), { shape = last_shape(o.x), dtype = "float64" }) }, attrs = attrs,
        expect = { Out = { shape = last_shape(os), data = to_last(want, os) } } }
      T.check_grad{ type = o.op, dtype = "float64",
        inputs = { X = T.tensor(to_last(x, o.x), { shape = last_shape(o.x), dtype = "float64" }) }, attrs = attrs,
        wrt = { "X" }, delta = 1e-5, max_rel = 1e-7 }
    end)
  end
end)

describe("layers.resize_trilinear NDHWC", function()
  local oar = require("oar")
  local layers = oar.layers
  it("writes data_layout NHWC and resizes the spatial dims", function()
    local main = oar.Program()
    oar.program_guard(main, oar.Program(), function()
      local v = layers.data{ name = "x", shape = { 2, 3, 4, 5 }, dtype = "float32" }
      local y = layers.resize_trilinear{ input = v, out_shape = { 4, 6, 8 }, data_format = "NDHWC" }
      assert.same({ -1, 4, 6, 8, 5 }, y.shape)
      local z = layers.image_resize{ input = layers.data{ name = "i", shape = { 4, 5, 3 }, dtype = "float32" },
                                     scale = 2, resample = "BICUBIC", data_format = "NHWC" }
      assert.same({ -1, 8, 10, 3 }, z.shape)
    end)
    assert.equal("NHWC", main:global_block():ops()[1]:attr("data_layout"))
  end)
end)
