-- conv3d, conv3d_transpose and their layers: the cases of Fluid 1.8's
-- test_conv3d_op.py and test_conv3d_transpose_op.py (shapes reduced),
-- expected values from direct loops in plain Lua below, gradients against
-- float64 finite differences.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")

local function numel(s)
  local k = 1
  for _, v in ipairs(s) do k = k * v end
  return k
end

-- the flat index (1-based) of (b, c, z, y, x) in an [N, C, D, H, W] volume,
-- or its channels-last [N, D, H, W, C] form
local function idx(cl, s, b, c, z, y, x)
  local C, D, H, W = s[2], s[3], s[4], s[5]
  if cl then return (((b * D + z) * H + y) * W + x) * C + c + 1 end
  return (((b * C + c) * D + z) * H + y) * W + x + 1
end

-- the stored shape of a logical NCDHW shape
local function stored(s, cl)
  if cl then return { s[1], s[3], s[4], s[5], s[2] } end
  return s
end

-- paddings {front, back, top, bottom, left, right} after Fluid's
-- padding_algorithm, and the dilations (SAME sets them to 1)
local function resolve(algo, insz, k, st, pads, dil)
  local pd, dl = {}, {}
  for i = 1, 3 do
    if #pads == 3 then pd[2 * i - 1], pd[2 * i] = pads[i], pads[i] else pd[2 * i - 1], pd[2 * i] = pads[2 * i - 1], pads[2 * i] end
    dl[i] = dil[i]
    if algo == "VALID" then pd[2 * i - 1], pd[2 * i] = 0, 0 end
    if algo == "SAME" then
      local out = math.ceil(insz[i] / st[i])
      local sum = math.max((out - 1) * st[i] + k[i] - insz[i], 0)
      pd[2 * i - 1], pd[2 * i] = math.floor(sum / 2), sum - math.floor(sum / 2)
      dl[i] = 1
    end
  end
  return pd, dl
end

-- direct 3-D cross-correlation; xs, the result shape logical NCDHW
local function conv3d_ref(x, xs, w, ws, o)
  local st, groups, cl = o.strides or { 1, 1, 1 }, o.groups or 1, o.cl
  local pd, dl = resolve(o.algo, { xs[3], xs[4], xs[5] }, { ws[3], ws[4], ws[5] }, st, o.paddings or { 0, 0, 0 },
    o.dilations or { 1, 1, 1 })
  local os = { xs[1], ws[1] }
  for i = 1, 3 do
    os[i + 2] = math.floor((xs[i + 2] + pd[2 * i - 1] + pd[2 * i] - (dl[i] * (ws[i + 2] - 1) + 1)) / st[i]) + 1
  end
  local cg, mg = xs[2] / groups, ws[1] / groups
  local out = {}
  for b = 0, os[1] - 1 do
    for m = 0, os[2] - 1 do
      local g = math.floor(m / mg)
      for oz = 0, os[3] - 1 do
        for oy = 0, os[4] - 1 do
          for ox = 0, os[5] - 1 do
            local s = 0
            for c = 0, cg - 1 do
              for a = 0, ws[3] - 1 do
                for bb = 0, ws[4] - 1 do
                  for e = 0, ws[5] - 1 do
                    local z = oz * st[1] - pd[1] + a * dl[1]
                    local y = oy * st[2] - pd[3] + bb * dl[2]
                    local xx = ox * st[3] - pd[5] + e * dl[3]
                    if z >= 0 and z < xs[3] and y >= 0 and y < xs[4] and xx >= 0 and xx < xs[5] then
                      s = s + x[idx(cl, xs, b, g * cg + c, z, y, xx)] *
                        w[(((m * cg + c) * ws[3] + a) * ws[4] + bb) * ws[5] + e + 1]
                    end
                  end
                end
              end
            end
            out[idx(cl, os, b, m, oz, oy, ox)] = s
          end
        end
      end
    end
  end
  return out, stored(os, cl)
end

-- direct transposed convolution: each input cell scatters filter * value
local function conv3d_t_ref(x, xs, w, ws, o)
  local st, groups, cl = o.strides or { 1, 1, 1 }, o.groups or 1, o.cl
  local pd, dl = resolve(o.algo, { xs[3], xs[4], xs[5] }, { ws[3], ws[4], ws[5] }, st, o.paddings or { 0, 0, 0 },
    o.dilations or { 1, 1, 1 })
  local ocg = ws[2]
  local os = { xs[1], ocg * groups }
  for i = 1, 3 do
    os[i + 2] = (xs[i + 2] - 1) * st[i] - pd[2 * i - 1] - pd[2 * i] + dl[i] * (ws[i + 2] - 1) + 1
    if o.output_size then os[i + 2] = o.output_size[i] end
  end
  local out = {}
  for i = 1, numel(os) do out[i] = 0 end
  local icg = xs[2] / groups
  for b = 0, xs[1] - 1 do
    for ci = 0, xs[2] - 1 do
      local g = math.floor(ci / icg)
      for z = 0, xs[3] - 1 do
        for y = 0, xs[4] - 1 do
          for xx = 0, xs[5] - 1 do
            local v = x[idx(cl, xs, b, ci, z, y, xx)]
            for co = 0, ocg - 1 do
              for a = 0, ws[3] - 1 do
                for bb = 0, ws[4] - 1 do
                  for e = 0, ws[5] - 1 do
                    local oz = z * st[1] - pd[1] + a * dl[1]
                    local oy = y * st[2] - pd[3] + bb * dl[2]
                    local ox = xx * st[3] - pd[5] + e * dl[3]
                    if oz >= 0 and oz < os[3] and oy >= 0 and oy < os[4] and ox >= 0 and ox < os[5] then
                      local j = idx(cl, os, b, g * ocg + co, oz, oy, ox)
                      out[j] = out[j] + v * w[(((ci * ocg + co) * ws[3] + a) * ws[4] + bb) * ws[5] + e + 1]
                    end
                  end
                end
              end
            end
          end
        end
      end
    end
  end
  return out, stored(os, cl)
end

local function attrs_of(o, fmt)
  local a = { strides = o.strides, paddings = o.paddings, dilations = o.dilations, groups = o.groups,
              padding_algorithm = o.algo, output_size = o.output_size }
  if o.cl then a.data_format = fmt end
  return a
end

local function run_case(optype, ref, o, dtype, fmt)
  local x = R.symmetric(numel(o.x), 11)
  local w = R.symmetric(numel(o.w), 5, 0.5)
  local want, os = ref(x, o.x, w, o.w, o)
  T.check_output{ type = optype, dtype = dtype, atol = dtype == "float32" and 1e-4 or 1e-10,
    inputs = { Input = T.tensor(x, { shape = stored(o.x, o.cl), dtype = dtype }),
               Filter = T.tensor(w, { shape = o.w, dtype = dtype }) },
    attrs = attrs_of(o, fmt), outputs = { Output = 1 },
    expect = { Output = { shape = os, data = want } } }
end

local function grad_case(optype, o, fmt)
  T.check_grad{ type = optype, dtype = "float64",
    inputs = { Input = T.tensor(R.symmetric(numel(o.x), 3), { shape = stored(o.x, o.cl), dtype = "float64" }),
               Filter = T.tensor(R.symmetric(numel(o.w), 9, 0.5), { shape = o.w, dtype = "float64" }) },
    attrs = attrs_of(o, fmt), outputs = { Output = 1 }, wrt = { "Input", "Filter" }, of = { "Output" },
    delta = 1e-4, max_rel = 1e-5 }
end

-- test_conv3d_op.py's cases (input [2, 3, 4, 4, 4] and friends, reduced)
local CONV_CASES = {
  { name = "TestConv3dOp", x = { 2, 3, 4, 4, 4 }, w = { 4, 3, 3, 3, 3 } },
  { name = "TestCase1 (padding 1)", x = { 2, 3, 4, 4, 4 }, w = { 4, 3, 3, 3, 3 }, paddings = { 1, 1, 1 } },
  { name = "TestWithGroup1 (groups 3)", x = { 2, 3, 4, 4, 4 }, w = { 6, 1, 3, 3, 3 }, groups = 3 },
  { name = "TestWith1x1", x = { 2, 3, 4, 4, 4 }, w = { 4, 3, 1, 1, 1 }, paddings = { 0, 0, 0 } },
  { name = "TestWithInput1x1Filter1x1", x = { 2, 3, 1, 1, 1 }, w = { 4, 3, 1, 1, 1 } },
  { name = "TestWithDilation", x = { 2, 3, 6, 6, 6 }, w = { 4, 3, 2, 2, 2 }, dilations = { 2, 2, 2 } },
  { name = "TestConv3dOp_AsyPadding", x = { 2, 3, 4, 4, 5 }, w = { 4, 3, 3, 3, 3 }, strides = { 1, 1, 2 },
    paddings = { 1, 0, 1, 0, 0, 2 } },
  { name = "TestCase1_AsyPadding", x = { 2, 3, 4, 4, 4 }, w = { 4, 3, 3, 3, 3 }, paddings = { 0, 0, 1, 0, 0, 2 } },
  { name = "TestConv3dOp_SAME (strides 2)", x = { 2, 3, 5, 4, 5 }, w = { 4, 3, 3, 3, 3 }, strides = { 2, 2, 2 },
    algo = "SAME", dilations = { 2, 2, 2 } },
  { name = "TestConv3dOp_VALID", x = { 2, 3, 4, 4, 4 }, w = { 4, 3, 3, 3, 3 }, paddings = { 1, 1, 1 },
    algo = "VALID" },
  { name = "TestCase1_channel_last (NDHWC)", x = { 2, 3, 4, 4, 4 }, w = { 4, 3, 3, 3, 3 }, paddings = { 1, 0, 1, 0, 0, 2 },
    cl = true },
  { name = "TestWithGroup1 NDHWC", x = { 2, 4, 3, 4, 4 }, w = { 6, 2, 2, 3, 2 }, groups = 2, strides = { 2, 1, 2 },
    cl = true },
}

-- one it per case of `cases`: optype in float64 and float32 against ref
local function against_loops(optype, ref, cases)
  for _, o in ipairs(cases) do
    it(o.name .. ": float64 and float32 against direct loops", function()
      run_case(optype, ref, o, "float64", "NDHWC")
      run_case(optype, ref, o, "float32", "NDHWC")
    end)
  end
end

-- fails(inputs, attrs, want): op `type` on those inputs raises an error that mentions want
local function failing(type)
  local expect_error = require("spec.helpers.expect_error")
  return function(inputs, attrs, want)
    expect_error(function() T.run{ type = type, inputs = inputs, attrs = attrs or {}, outputs = { Output = 1 } } end, want)
  end
end

describe("conv3d (test_conv3d_op.py)", function()
  against_loops("conv3d", conv3d_ref, CONV_CASES)

  it("gradients against finite differences: padding, strides, groups, dilation, SAME, NDHWC", function()
    grad_case("conv3d", { x = { 1, 2, 3, 3, 3 }, w = { 2, 2, 2, 2, 2 }, paddings = { 1, 0, 0, 1, 1, 1 },
                          strides = { 2, 1, 1 } })
    grad_case("conv3d", { x = { 2, 4, 3, 3, 2 }, w = { 4, 2, 2, 1, 2 }, groups = 2, dilations = { 2, 1, 1 } })
    grad_case("conv3d", { x = { 1, 2, 3, 4, 3 }, w = { 3, 2, 2, 2, 2 }, strides = { 2, 2, 1 }, algo = "SAME" })
    grad_case("conv3d", { x = { 1, 3, 2, 3, 3 }, w = { 2, 3, 1, 2, 2 }, paddings = { 1, 1, 1 }, cl = true }, "NDHWC")
  end)

  it("bad inputs are errors naming the op, the variable and the shapes", function()
    local fails = failing("conv3d")
    local x5 = T.tensor(R.symmetric(2 * 3 * 27), { shape = { 2, 3, 3, 3, 3 } })
    fails({ Input = T.tensor(R.symmetric(18), { shape = { 2, 3, 3 } }),
            Filter = T.tensor(R.symmetric(24), { shape = { 1, 3, 2, 2, 2 } }) }, nil, "must be 5-D")
    fails({ Input = x5, Filter = T.tensor(R.symmetric(16), { shape = { 1, 2, 2, 2, 2 } }) }, nil,
      "has 3 channels but Filter")
    fails({ Input = x5, Filter = T.tensor(R.symmetric(3 * 64), { shape = { 1, 3, 4, 4, 4 } }) }, nil,
      "output depth would be empty")
    fails({ Input = x5, Filter = T.tensor(R.symmetric(24), { shape = { 1, 3, 2, 2, 2 } }) }, { strides = { 1, 1 } },
      "strides must hold 3 values")
    fails({ Input = x5, Filter = T.tensor(R.symmetric(24), { shape = { 1, 3, 2, 2, 2 } }) }, { fuse_relu = true },
      "does not fuse")
    fails({ Input = x5, Filter = T.tensor(R.symmetric(48), { shape = { 2, 3, 2, 2, 2 } }) }, { groups = 3 },
      "Filter[1] * groups")
  end)
end)

-- test_conv3d_transpose_op.py's cases (input [2, 3, 5, 5, 5], reduced)
local CT_CASES = {
  { name = "TestConv3dTransposeOp", x = { 2, 3, 3, 3, 3 }, w = { 3, 4, 3, 3, 3 } },
  { name = "TestWithSymmetricPad", x = { 1, 2, 3, 3, 3 }, w = { 2, 3, 3, 3, 3 }, paddings = { 1, 1, 1 } },
  { name = "TestWithAsymmetricPad", x = { 1, 2, 3, 3, 3 }, w = { 2, 3, 3, 3, 3 }, paddings = { 1, 0, 1, 0, 1, 2 } },
  { name = "TestWithSAMEPad", x = { 1, 2, 3, 4, 3 }, w = { 2, 3, 3, 3, 4 }, strides = { 1, 2, 1 },
    dilations = { 1, 2, 1 }, algo = "SAME" },
  { name = "TestWithVALIDPad", x = { 1, 2, 3, 3, 3 }, w = { 2, 3, 3, 3, 3 }, paddings = { 1, 1, 1 }, algo = "VALID" },
  { name = "TestWithStride", x = { 1, 2, 3, 3, 3 }, w = { 2, 3, 3, 3, 3 }, paddings = { 1, 1, 1 },
    strides = { 2, 2, 2 } },
  { name = "TestWithGroups", x = { 1, 4, 3, 3, 3 }, w = { 4, 3, 3, 3, 3 }, paddings = { 1, 1, 1 }, groups = 2 },
  { name = "TestWithDilation", x = { 1, 2, 3, 3, 3 }, w = { 2, 3, 3, 3, 3 }, paddings = { 1, 1, 1 },
    dilations = { 2, 2, 2 } },
  { name = "Test_NHWC (NDHWC)", x = { 1, 2, 3, 3, 3 }, w = { 2, 3, 3, 3, 3 }, paddings = { 0, 0, 0 }, cl = true },
  { name = "output_size (stride 2, one past the computed size)", x = { 1, 2, 2, 3, 2 }, w = { 2, 2, 2, 2, 2 },
    strides = { 2, 2, 2 }, output_size = { 5, 6, 4 } },
}

describe("conv3d_transpose (test_conv3d_transpose_op.py)", function()
  against_loops("conv3d_transpose", conv3d_t_ref, CT_CASES)

  it("gradients against finite differences", function()
    grad_case("conv3d_transpose", { x = { 1, 2, 2, 2, 3 }, w = { 2, 2, 2, 2, 2 }, paddings = { 1, 0, 0, 1, 0, 0 },
                                    strides = { 2, 1, 2 } })
    grad_case("conv3d_transpose", { x = { 2, 4, 2, 2, 2 }, w = { 4, 1, 2, 2, 1 }, groups = 2, dilations = { 1, 2, 1 } })
    grad_case("conv3d_transpose", { x = { 1, 2, 2, 3, 2 }, w = { 2, 2, 2, 2, 2 }, cl = true }, "NDHWC")
  end)

  it("bad inputs are errors naming the variable and the expectation", function()
    local fails = failing("conv3d_transpose")
    local x = T.tensor(R.symmetric(2 * 8), { shape = { 1, 2, 2, 2, 2 } })
    fails({ Input = x, Filter = T.tensor(R.symmetric(24), { shape = { 3, 1, 2, 2, 2 } }) }, nil,
      "Filter '")
    fails({ Input = x, Filter = T.tensor(R.symmetric(16), { shape = { 2, 1, 2, 2, 2 } }) },
      { strides = { 2, 2, 2 }, output_size = { 9, 4, 4 } }, "output_size[0] = 9 must be in [4, 6)")
    fails({ Input = x, Filter = T.tensor(R.symmetric(16), { shape = { 2, 1, 2, 2, 2 } }) },
      { paddings = { 3, 3, 0 } }, "would be")
  end)
end)

describe("layers.conv3d / layers.conv3d_transpose", function()
  local oar = require("oar")
  local layers = oar.layers

  -- builds one layer over a fed [2, ...] float64 x; returns the fetched
  -- value (flat) and its shape, and the layer's op
  local function run(xshape, build)
    local res, x, main = require("spec.helpers.layer_run").run_symmetric(xshape, 13, build)
    local op
    for _, o in ipairs(main:global_block():ops()) do
      if o.type == "conv3d" or o.type == "conv3d_transpose" then op = o end
    end
    return res[1].data, res[1].shape, x, op
  end

  local function const(v) return oar.ParamAttr{ initializer = oar.initializer.Constant{ value = v } } end

  it("conv3d: NDHWC, SAME padding, stride, bias and act as Fluid's layer", function()
    local got, shape, x, op = run({ 2, 4, 3, 5, 2 }, function(v)
      return layers.conv3d{ input = v, num_filters = 3, filter_size = { 2, 3, 2 }, stride = { 2, 1, 2 },
                            padding = "SAME", data_format = "NDHWC", param_attr = const(0.25),
                            bias_attr = const(-0.125), act = "relu" }
    end)
    assert.equal("SAME", op:attr("padding_algorithm"))
    assert.equal("NDHWC", op:attr("data_format"))
    local w = {}
    for i = 1, 3 * 2 * 2 * 3 * 2 do w[i] = 0.25 end
    local want, ws = conv3d_ref(x, { 2, 2, 4, 3, 5 }, w, { 3, 2, 2, 3, 2 },
      { strides = { 2, 1, 2 }, algo = "SAME", cl = true })
    assert.same(ws, shape)
    for i = 1, #want do want[i] = math.max(want[i] - 0.125, 0) end
    T.assert_close({ data = got, shape = shape }, { data = want, shape = ws }, 1e-12)
  end)

  it("conv3d_transpose: filter_size from output_size, groups, explicit paddings", function()
    local got, shape, x, op = run({ 1, 4, 2, 3, 2 }, function(v)
      return layers.conv3d_transpose{ input = v, num_filters = 2, output_size = { 4, 6, 4 }, stride = 2,
                                      padding = { 1, 0, 1, 1, 0, 1 }, groups = 2, param_attr = const(0.5),
                                      bias_attr = false }
    end)
    assert.same({ 4, 6, 4 }, op:attr("output_size"))
    local w = {}
    -- filter_size = (out - (in - 1) stride + pad_before + pad_after - 1) / dilation + 1 = {3, 4, 3}
    for i = 1, 4 * 1 * 3 * 4 * 3 do w[i] = 0.5 end
    local want, ws = conv3d_t_ref(x, { 1, 4, 2, 3, 2 }, w, { 4, 1, 3, 4, 3 },
      { strides = { 2, 2, 2 }, paddings = { 1, 0, 1, 1, 0, 1 }, groups = 2, output_size = { 4, 6, 4 } })
    assert.same(ws, shape)
    T.assert_close({ data = got, shape = shape }, { data = want, shape = ws }, 1e-12)
  end)

  it("reject bad arguments with the layer's name", function()
    oar.program_guard(oar.Program(), oar.Program(), function()
      local v = layers.data{ name = "x", shape = { 3, 4, 4, 4 }, dtype = "float32" }
      local flat = layers.data{ name = "y", shape = { 3, 4 }, dtype = "float32" }
      assert.has_error(function() layers.conv3d{ input = flat, num_filters = 2, filter_size = 3 } end,
        "conv3d: 'input' must be 5-D NCDHW, got shape [-1, 3, 4]")
      assert.has_error(function() layers.conv3d{ input = v, num_filters = 2, filter_size = 3, groups = 2 } end,
        "conv3d: input channels 3 must be known and divisible by groups 2")
      assert.has_error(function() layers.conv3d{ input = v, num_filters = 2, filter_size = 3, padding = "FULL" } end,
        "conv3d: 'padding' must be one of SAME, VALID, got string 'FULL'")
      assert.has_error(function() layers.conv3d_transpose{ input = v, num_filters = 2 } end,
        "conv3d_transpose: 'filter_size' must be an integer or a list of 3 (or give output_size), got nil")
    end)
  end)
end)

describe("conv3d / conv3d_transpose thread determinism", function()
  local ffi = require("ffi")
  pcall(ffi.cdef, "int memcmp(const void *a, const void *b, size_t n);")
  local oar = require("oar")
  local layers = oar.layers
  local at_threads = require("spec.helpers.threads")

  it("forward and gradients have the same bits with 1 thread and 2 (products split in shape-fixed blocks)", function()
    local main, startup = oar.Program(), oar.Program()
    local fetch
    oar.program_guard(main, startup, function()
      local v = layers.data{ name = "v", shape = { 2, 6, 6, 12, 12 }, dtype = "float32", append_batch_size = false }
      local c = layers.conv3d{ input = v, num_filters = 16, filter_size = 3, padding = 1, groups = 2 }
      local t = layers.conv3d_transpose{ input = c, num_filters = 4, filter_size = 2, stride = 2 }
      local loss = layers.mean(t)
      local pg = oar.append_backward(loss)
      fetch = { c, t }
      for _, p in ipairs(pg) do fetch[#fetch + 1] = p[2] end
    end)
    local n = 2 * 6 * 6 * 12 * 12
    local x = oar.Tensor{ shape = { 2, 6, 6, 12, 12 }, dtype = "float32" }
    local vals = R.symmetric(n, 191)
    for i = 1, n do x:data()[i - 1] = vals[i] end
    local scope = oar.Scope()
    local exe = oar.Executor(oar.CPUPlace())
    exe:run(startup, { scope = scope })
    local function run() return exe:run(main, { feed = { v = x }, fetch_list = fetch, scope = scope }) end
    local one, two = at_threads(1, run), at_threads(2, run)
    assert.equal(#fetch, #one)
    for i = 1, #one do
      assert.same(one[i]:shape(), two[i]:shape())
      assert.equal(0, ffi.C.memcmp(one[i]:data(), two[i]:data(), one[i]:numel() * 4), "fetch " .. i)
    end
  end)
end)
