-- linear_interp and layers.resize_linear / image_resize LINEAR: the cases
-- of Fluid 1.8's test_linear_interp_op.py (shapes reduced), expected values
-- from Paddle's sampling rule written out in plain Lua, gradients against
-- float64 finite differences.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")

local function trunc(v) return v >= 0 and math.floor(v) or math.ceil(v) end

local ffi = require("ffi")
local function f32(v) return tonumber(ffi.new("float", v)) end

-- x flat [N, C, W] (channels first); returns flat [N, C, ow]. Paddle 1.8
-- computes the ratio and the weights in float: so does this reference.
local function linear_ref(x, n, c, w, ow, align, mode)
  local r = 0
  if ow > 1 then r = align and f32(f32(w - 1) / f32(ow - 1)) or f32(f32(w) / f32(ow)) end
  local half = mode == 0 and not align
  local out = {}
  for m = 0, n * c - 1 do
    for j = 0, ow - 1 do
      local rj = f32(r * j)
      local lo = half and trunc(r * (j + 0.5) - 0.5) or trunc(rj)
      lo = math.max(lo, 0)
      local hi = lo < w - 1 and lo + 1 or lo
      local d = half and f32(f32(math.max(f32(r * (j + 0.5) - 0.5), 0)) - lo) or f32(rj - lo)
      out[m * ow + j + 1] = f32(1 - d) * x[m * w + lo + 1] + d * x[m * w + hi + 1]
    end
  end
  return out
end

-- [N, C, W] flat -> [N, W, C] flat
local function to_nwc(v, n, c, w)
  local out = {}
  for b = 0, n - 1 do
    for ch = 0, c - 1 do
      for i = 0, w - 1 do out[(b * w + i) * c + ch + 1] = v[(b * c + ch) * w + i + 1] end
    end
  end
  return out
end

local function fails(spec, want)
  local ok, err = pcall(T.run, spec)
  assert.is_false(ok)
  assert.matches(want, tostring(err), 1, true)
end

describe("linear_interp (test_linear_interp_op.py)", function()
  local CASES = {
    { name = "TestLinearInterpOp: OutSize 50 of 100, align_mode 1", n = 1, c = 3, w = 100, ow = 50,
      align = false, mode = 1, outsize = true },
    { name = "TestLinearInterpOpDataLayout: NWC", n = 1, c = 3, w = 100, ow = 50, align = false, mode = 1,
      outsize = true, nwc = true },
    { name = "TestLinearInterpOpAlignMode: align_mode 0", n = 1, c = 3, w = 100, ow = 50, align = false,
      mode = 0, outsize = true },
    { name = "TestLinearInterpOpScale: scale 0.5, align_mode 0", n = 1, c = 3, w = 100, ow = 50,
      align = false, mode = 0, scale = 0.5 },
    { name = "TestLinearInterpOpSizeTensor", n = 1, c = 3, w = 100, ow = 50, align = false, mode = 1,
      sizetensor = true },
    { name = "TestResizeLinearOpUint8's geometry: align_corners, [2, 3, 100] -> 50", n = 2, c = 3, w = 100,
      ow = 50, align = true, mode = 1 },
    { name = "upsampling 7 -> 12, align_corners", n = 2, c = 2, w = 7, ow = 12, align = true, mode = 1 },
    { name = "upsampling 5 -> 13, half-pixel", n = 1, c = 2, w = 5, ow = 13, align = false, mode = 0 },
    { name = "upsampling 4 -> 9, align_mode 1", n = 2, c = 1, w = 4, ow = 9, align = false, mode = 1 },
    { name = "to one element", n = 1, c = 2, w = 6, ow = 1, align = true, mode = 1 },
  }
  for _, o in ipairs(CASES) do
    it(o.name, function()
      local x = R.uniform(o.n * o.c * o.w, 31, 0, 1)
      local want = linear_ref(x, o.n, o.c, o.w, o.ow, o.align, o.mode)
      local xs, os = { o.n, o.c, o.w }, { o.n, o.c, o.ow }
      local attrs = { interp_method = "linear", align_corners = o.align, align_mode = o.mode }
      if o.nwc then
        x, want = to_nwc(x, o.n, o.c, o.w), to_nwc(want, o.n, o.c, o.ow)
        xs, os = { o.n, o.w, o.c }, { o.n, o.ow, o.c }
        attrs.data_layout = "NHWC"
      end
      for _, dt in ipairs({ "float64", "float32" }) do
        local inputs = { X = T.tensor(x, { shape = xs, dtype = dt }) }
        -- a wrong out_w shows that OutSize / SizeTensor / scale decide
        attrs.out_w = (o.outsize or o.sizetensor or o.scale) and 7 or o.ow
        if o.outsize then inputs.OutSize = T.tensor({ o.ow }, { dtype = "int32" }) end
        if o.sizetensor then inputs.SizeTensor = { T.tensor({ o.ow }, { dtype = "int32" }) } end
        if o.scale then attrs.scale = o.scale end
        T.check_output{ type = "linear_interp", dtype = dt, atol = dt == "float64" and 1e-6 or 1e-5,
          inputs = inputs, attrs = attrs, expect = { Out = { shape = os, data = want } } }
      end
      local small = R.symmetric(o.n * o.c * math.min(o.w, 9), 41)
      if o.w <= 9 then
        T.check_grad{ type = "linear_interp", dtype = "float64",
          inputs = { X = T.tensor(o.nwc and to_nwc(small, o.n, o.c, o.w) or small,
                                  { shape = xs, dtype = "float64" }) },
          attrs = attrs, wrt = { "X" }, delta = 1e-5, max_rel = 1e-7 }
      end
    end)
  end

  it("gradient against finite differences, every mode and layout", function()
    for _, align in ipairs({ true, false }) do
      for _, mode in ipairs({ 0, 1 }) do
        for _, layout in ipairs({ "NCHW", "NHWC" }) do
          local shape = layout == "NCHW" and { 2, 3, 5 } or { 2, 5, 3 }
          T.check_grad{ type = "linear_interp", dtype = "float64",
            inputs = { X = T.tensor(R.symmetric(30, 43), { shape = shape, dtype = "float64" }) },
            attrs = { out_w = 8, align_corners = align, align_mode = mode, data_layout = layout },
            wrt = { "X" }, delta = 1e-5, max_rel = 1e-7 }
          T.check_grad{ type = "linear_interp", dtype = "float64",
            inputs = { X = T.tensor(R.symmetric(30, 47), { shape = shape, dtype = "float64" }) },
            attrs = { out_w = 3, align_corners = align, align_mode = mode, data_layout = layout },
            wrt = { "X" }, delta = 1e-5, max_rel = 1e-7 }
        end
      end
    end
  end)

  it("rejects a wrong rank and no output size, naming the op and the variable", function()
    fails({ type = "linear_interp", inputs = { X = T.tensor(R.symmetric(8), { shape = { 2, 2, 2, 1 } }) },
            attrs = { out_w = 3 } }, "linear_interp: X ('in_X_1') must be 3-D [N, C, W] (NCW), got shape [2, 2, 2, 1]")
    fails({ type = "linear_interp", inputs = { X = T.tensor(R.symmetric(8), { shape = { 2, 2, 2 } }) } },
          "linear_interp: the output width 0 must be positive")
  end)
end)

describe("layers.resize_linear / image_resize LINEAR", function()
  local oar = require("oar")
  local layers = oar.layers

  local function run(xshape, build, feeds)
    local main, startup = oar.Program(), oar.Program()
    local out
    oar.program_guard(main, startup, function()
      local v = layers.data{ name = "x", shape = xshape, dtype = "float64", append_batch_size = false }
      out = build(v)
    end)
    local n = 1
    for _, d in ipairs(xshape) do n = n * d end
    local x = R.symmetric(n, 97)
    local t = oar.Tensor{ shape = xshape, dtype = "float64" }
    local p = t:data()
    for i = 1, #x do p[i - 1] = x[i] end
    local exe = oar.Executor(oar.CPUPlace())
    exe:run(startup)
    local feed = { x = t }
    for k, v in pairs(feeds or {}) do feed[k] = v end
    local got = exe:run(main, { feed = feed, fetch_list = { out } })[1]
    local flat, d = {}, got:data()
    local m = 1
    for _, s in ipairs(got:shape()) do m = m * s end
    for i = 1, m do flat[i] = d[i - 1] end
    return { data = flat, shape = got:shape() }, x, main
  end

  it("resize_linear with out_shape (TestResizeLinearAPI, align_mode 1, no align_corners)", function()
    local got, x, main = run({ 1, 3, 16 }, function(v)
      return layers.resize_linear(v, { 32 }, nil)
    end)
    T.assert_close(got, { shape = { 1, 3, 32 }, data = linear_ref(x, 1, 3, 16, 32, true, 1) }, 1e-12)
    local op = main:global_block():ops()[1]
    assert.equal("linear_interp", op.type)
    assert.equal("linear", op:attr("interp_method"))
    assert.equal(32, op:attr("out_w"))
    got, x = run({ 1, 3, 16 }, function(v)
      return layers.resize_linear{ input = v, out_shape = { 32 }, align_mode = 1, align_corners = false }
    end)
    T.assert_close(got, { shape = { 1, 3, 32 }, data = linear_ref(x, 1, 3, 16, 32, false, 1) }, 1e-6)
  end)

  it("resize_linear with a scale, NWC, and image_resize LINEAR", function()
    local got, x, main = run({ 2, 6, 2 }, function(v)
      return layers.resize_linear{ input = v, scale = 1.5, data_format = "NWC", align_corners = false, align_mode = 0 }
    end)
    local ncw = {}
    for b = 0, 1 do
      for c = 0, 1 do
        for i = 0, 5 do ncw[(b * 2 + c) * 6 + i + 1] = x[(b * 6 + i) * 2 + c + 1] end
      end
    end
    T.assert_close(got, { shape = { 2, 9, 2 }, data = to_nwc(linear_ref(ncw, 2, 2, 6, 9, false, 0), 2, 2, 9) }, 1e-6)
    assert.equal("NHWC", main:global_block():ops()[1]:attr("data_layout"))
    got, x = run({ 2, 2, 5 }, function(v)
      return layers.image_resize{ input = v, out_shape = { 3 }, resample = "LINEAR" }
    end)
    T.assert_close(got, { shape = { 2, 2, 3 }, data = linear_ref(x, 2, 2, 5, 3, true, 1) }, 1e-12)
  end)

  it("resize_linear with an OutSize Variable (actual_shape)", function()
    local sz = oar.Tensor{ shape = { 1 }, dtype = "int32" }
    sz:data()[0] = 11
    local got, x = run({ 1, 2, 4 }, function(v)
      local s = layers.data{ name = "s", shape = { 1 }, dtype = "int32", append_batch_size = false }
      return layers.resize_linear{ input = v, out_shape = { 5 }, actual_shape = s }
    end, { s = sz })
    T.assert_close(got, { shape = { 1, 2, 11 }, data = linear_ref(x, 1, 2, 4, 11, true, 1) }, 1e-12)
  end)

  it("rejects bad arguments with the layer's name (TestLinearInterpOpException)", function()
    oar.program_guard(oar.Program(), oar.Program(), function()
      local x1 = layers.data{ name = "x1", shape = { 1 }, dtype = "float32", append_batch_size = false }
      assert.has_error(function() layers.resize_linear{ input = x1, out_shape = { 256 } } end,
        "resize_linear: 'input' must be 3-D, got shape [1]")
      local x2 = layers.data{ name = "x2", shape = { 1, 3, 128 }, dtype = "float32", append_batch_size = false }
      assert.has_error(function() layers.resize_linear{ input = x2, out_shape = { 256 }, data_format = "NHWCD" } end)
      assert.has_error(function() layers.resize_linear{ input = x2, out_shape = { 256, 256 } } end)
      assert.has_error(function() layers.resize_linear{ input = x2 } end,
        "resize_linear: one of 'out_shape' and 'scale' must be set")
    end)
  end)
end)
