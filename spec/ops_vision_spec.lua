-- lrn, maxout, affine_channel, pool3d, conv3d: the cases of Fluid 1.8's
-- test_lrn_op.py, test_maxout_op.py, test_affine_channel_op.py,
-- test_pool3d_op.py and test_conv3d_op.py (shapes reduced), expected values
-- computed here in plain Lua, gradients against finite differences in float64.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")
local ffi = require("ffi")

-- float attrs are float32
local function f32(v) return tonumber(ffi.new("float", v)) end

local function numel(s)
  local k = 1
  for _, v in ipairs(s) do k = k * v end
  return k
end

-- the flat (1-based) index of (b, c, p) in [N, C, S] or, channels last, [N, S, C]
local function at(last, C, S, b, c, p)
  if last then return (b * S + p) * C + c + 1 end
  return (b * C + c) * S + p + 1
end

local function expect_error(spec, want)
  local ok, err = pcall(T.run, spec)
  assert.is_false(ok)
  assert.matches(want, tostring(err), 1, true)
end

describe("lrn (test_lrn_op.py)", function()
  -- Fluid's reference: mid = k + alpha * sum of squares over channels
  -- [c - (n-1)/2, c + (n-1)/2], out = x * mid^-beta
  local function lrn_ref(x, N, C, S, n, k, alpha, beta, last)
    local out, mid = {}, {}
    local pre = math.floor((n - 1) / 2)
    for b = 0, N - 1 do
      for c = 0, C - 1 do
        for p = 0, S - 1 do
          local s = 0
          for m = c - pre, c - pre + n - 1 do
            if m >= 0 and m < C then s = s + x[at(last, C, S, b, m, p)] ^ 2 end
          end
          local i = at(last, C, S, b, c, p)
          mid[i] = k + alpha * s
          out[i] = x[i] * mid[i] ^ (-beta)
        end
      end
    end
    return out, mid
  end

  for _, case in ipairs({ { "TestLRNOp (NCHW)", "NCHW", { 2, 6, 3, 3 } },
                          { "TestLRNOpAttrDataFormat (NHWC)", "NHWC", { 2, 3, 3, 6 } },
                          { "AnyLayout is NCHW", "AnyLayout", { 1, 4, 2, 3 } } }) do
    it(case[1], function()
      local xs, last = case[3], case[2] == "NHWC"
      local C = last and xs[4] or xs[2]
      local x = R.uniform(numel(xs), 3, 1, 2)   -- Fluid: rand + 1
      local out, mid = lrn_ref(x, xs[1], C, xs[3] * (last and xs[2] or xs[4]), 5, 2.0, f32(1e-4), 0.75, last)
      T.check_output{
        type = "lrn", attrs = { n = 5, k = 2.0, alpha = 1e-4, beta = 0.75, data_format = case[2] },
        inputs = { X = T.tensor(x, { shape = xs }) }, outputs = { Out = 1, MidOut = 1 },
        expect = { Out = { shape = xs, data = out }, MidOut = { shape = xs, data = mid } },
        atol = 1e-12, rtol = 1e-12,
      }
    end)
  end

  it("gradient wrt X (strong alpha so the window terms matter)", function()
    for _, fmt in ipairs({ "NCHW", "NHWC" }) do
      local xs = { 2, 5, 2, 2 }
      T.check_grad{
        type = "lrn", attrs = { n = 3, k = 1.0, alpha = 0.5, beta = 0.75, data_format = fmt },
        inputs = { X = T.tensor(R.uniform(numel(xs), 4, -1, 1), { shape = xs }) },
        outputs = { Out = 1, MidOut = 1 }, wrt = { "X" },
      }
    end
  end)

  it("float32 matches the float64 reference", function()
    local xs = { 1, 3, 2, 2 }
    local x = R.uniform(numel(xs), 5, 1, 2)
    local out = lrn_ref(x, 1, 3, 4, 5, 2.0, f32(1e-4), 0.75, false)
    T.check_output{ type = "lrn", dtype = "float32", inputs = { X = T.tensor(x, { shape = xs }) },
                    outputs = { Out = 1, MidOut = 1 }, expect = { Out = { shape = xs, data = out } }, atol = 1e-5 }
  end)

  it("refuses a non-4-D X and an even n", function()
    expect_error({ type = "lrn", inputs = { X = T.tensor(R.uniform(6, 1, 0, 1), { shape = { 2, 3 } }) },
                   outputs = { Out = 1, MidOut = 1 } }, "must be 4-D")
    expect_error({ type = "lrn", attrs = { n = 4 }, inputs = { X = T.tensor(R.uniform(8, 1, 0, 1), { shape = { 1, 2, 2, 2 } }) },
                   outputs = { Out = 1, MidOut = 1 } }, "odd")
  end)
end)

describe("maxout (test_maxout_op.py)", function()
  -- output channel c = max of input channels c*g .. c*g + g-1
  local function maxout_ref(x, xs, g, last)
    local N, C = xs[1], last and xs[4] or xs[2]
    local S = numel(xs) / (N * C)
    local co, out = C / g, {}
    for b = 0, N - 1 do
      for c = 0, co - 1 do
        for p = 0, S - 1 do
          local m = -math.huge
          for j = 0, g - 1 do m = math.max(m, x[at(last, C, S, b, c * g + j, p)]) end
          out[at(last, co, S, b, c, p)] = m
        end
      end
    end
    return out
  end

  for _, case in ipairs({ { "TestMaxOutOp (axis 1)", { 3, 6, 2, 4 }, 2, 1 },
                          { "TestMaxOutOpAxis (axis -1)", { 3, 2, 4, 6 }, 3, -1 },
                          { "axis 3", { 2, 2, 3, 4 }, 2, 3 } }) do
    it(case[1], function()
      local xs, g, axis = case[2], case[3], case[4]
      local last = axis ~= 1
      local x = R.uniform(numel(xs), 6, -1, 1)
      local os = { xs[1], xs[2], xs[3], xs[4] }
      os[last and 4 or 2] = os[last and 4 or 2] / g
      T.check_output{ type = "maxout", attrs = { groups = g, axis = axis },
                      inputs = { X = T.tensor(x, { shape = xs }) },
                      expect = { Out = { shape = os, data = maxout_ref(x, xs, g, last) } }, atol = 0 }
      -- distinct values a finite difference does not flip
      local gx = {}
      for i = 1, numel(xs) do gx[i] = ((i * 37) % 97) / 10 end
      T.check_grad{ type = "maxout", attrs = { groups = g, axis = axis },
                    inputs = { X = T.tensor(gx, { shape = xs }) }, wrt = { "X" }, delta = 0.001 }
    end)
  end

  it("ties send the gradient to the first maximum only", function()
    local r = T.analytic_grads{ type = "maxout", attrs = { groups = 2 },
                                inputs = { X = T.tensor({ 1, 1 }, { shape = { 1, 2, 1, 1 } }) }, wrt = { "X" } }
    assert.same({ 1, 0 }, r[1].data)
  end)

  it("refuses channels groups does not divide, and a bad axis", function()
    local x = T.tensor(R.uniform(12, 1, 0, 1), { shape = { 1, 3, 2, 2 } })
    expect_error({ type = "maxout", attrs = { groups = 2 }, inputs = { X = x } }, "not divisible by groups = 2")
    expect_error({ type = "maxout", attrs = { groups = 3, axis = 2 }, inputs = { X = x } }, "axis must be 1, -1 or 3")
  end)
end)

describe("affine_channel (test_affine_channel_op.py)", function()
  local function ac_ref(x, xs, scale, bias, last)
    local N, C = xs[1], last and xs[#xs] or xs[2]
    local S = numel(xs) / (N * C)
    local out = {}
    for b = 0, N - 1 do
      for c = 0, C - 1 do
        for p = 0, S - 1 do
          local i = at(last, C, S, b, c, p)
          out[i] = x[i] * scale[c + 1] + bias[c + 1]
        end
      end
    end
    return out
  end

  for _, case in ipairs({ { "TestAffineChannelOp (NCHW)", { 2, 10, 3, 3 }, "NCHW" },
                          { "TestAffineChannelNHWC", { 2, 3, 3, 10 }, "NHWC" },
                          { "TestAffineChannel2D", { 4, 10 }, "NCHW" },
                          { "AnyLayout, 3-D", { 2, 4, 5 }, "AnyLayout" } }) do
    it(case[1], function()
      local xs, last = case[2], case[3] == "NHWC"
      local C = last and xs[#xs] or xs[2]
      local x = R.uniform(numel(xs), 7, -1, 1)
      local scale, bias = R.uniform(C, 8, 0.5, 1.5), R.uniform(C, 9, -1, 1)
      local inputs = { X = T.tensor(x, { shape = xs }), Scale = T.tensor(scale, { shape = { C } }),
                       Bias = T.tensor(bias, { shape = { C } }) }
      T.check_output{ type = "affine_channel", attrs = { data_layout = case[3] }, inputs = inputs,
                      expect = { Out = { shape = xs, data = ac_ref(x, xs, scale, bias, last) } }, atol = 1e-12 }
      T.check_grad{ type = "affine_channel", attrs = { data_layout = case[3] }, inputs = inputs,
                    wrt = { "X", "Scale", "Bias" } }
    end)
  end

  it("gradient wrt X alone (TestAffineChannelOp no_grad Scale, Bias)", function()
    local xs = { 2, 3, 2, 2 }
    T.check_grad{ type = "affine_channel",
                  inputs = { X = T.tensor(R.uniform(24, 10, -1, 1), { shape = xs }),
                             Scale = T.tensor({ 0.5, 1, 2 }, { shape = { 3 } }), Bias = T.tensor({ 0, 1, 2 }, { shape = { 3 } }) },
                  wrt = { "X" }, no_grad = { "Scale", "Bias" } }
  end)

  it("refuses a Scale of the wrong size (TestAffineChannelOpError)", function()
    expect_error({ type = "affine_channel",
                   inputs = { X = T.tensor(R.uniform(12, 1, 0, 1), { shape = { 1, 3, 2, 2 } }),
                              Scale = T.tensor({ 1, 2 }, { shape = { 2 } }), Bias = T.tensor({ 1, 2, 3 }, { shape = { 3 } }) } },
                 "Scale ('")
  end)
end)

describe("oar.layers: lrn, maxout, affine_channel", function()
  local oar = require("oar")
  local layers = oar.layers

  local function run(build, feed)
    local main, startup = oar.Program(), oar.Program()
    local fetch
    oar.program_guard(main, startup, function() fetch = build() end)
    local exe = oar.Executor(oar.CPUPlace())
    exe:run(startup)
    return exe:run(main, { feed = feed, fetch_list = { fetch } })[1]
  end

  it("build the ops with Fluid's names and defaults", function()
    local x = R.uniform(2 * 6 * 2 * 2, 11, 1, 2)
    local got = run(function()
      local v = layers.data{ name = "x", shape = { 6, 2, 2 }, dtype = "float64" }
      local y = layers.lrn(v)                       -- k = 1.0, the layer's default
      local m = layers.maxout{ x = y, groups = 2 }
      local s = layers.create_parameter{ shape = { 3 }, dtype = "float64",
                                        default_initializer = oar.initializer.Constant{ value = 2 } }
      local b = layers.create_parameter{ shape = { 3 }, dtype = "float64",
                                        default_initializer = oar.initializer.Constant{ value = 1 } }
      return layers.affine_channel{ x = m, scale = s, bias = b, act = "relu" }
    end, { x = (function()
      local t = oar.Tensor{ shape = { 2, 6, 2, 2 }, dtype = "float64" }
      local p = t:data()
      for i = 1, #x do p[i - 1] = x[i] end
      return t
    end)() })
    local t = got:totable()
    -- reference for sample 0, channel 0, cell 0
    local function xv(c, p) return x[c * 4 + p + 1] end
    local function lrn_at(c, p)
      local s = 0
      for m = c - 2, c + 2 do if m >= 0 and m < 6 then s = s + xv(m, p) ^ 2 end end
      return xv(c, p) * (1 + f32(1e-4) * s) ^ -0.75
    end
    local want = math.max(lrn_at(0, 0), lrn_at(1, 0)) * 2 + 1
    assert.near(want, t[1][1][1][1], 1e-6)
    assert.same({ 2, 3, 2, 2 }, got:shape())
  end)

  it("reject bad arguments with the layer's name", function()
    local main = oar.Program()
    oar.program_guard(main, oar.Program(), function()
      local v = layers.data{ name = "x", shape = { 6, 2, 2 }, dtype = "float32" }
      assert.has_error(function() layers.lrn{ input = v, n = 4 } end, "lrn: 'n' must be a positive odd number, got number 4")
      assert.has_error(function() layers.maxout{ x = v, groups = 4 } end,
                       "maxout: the 6 channels of 'x' are not divisible by groups = 4")
      assert.has_error(function() layers.maxout{ x = v, groups = 2, axis = 2 } end, "maxout: 'axis' must be 1, -1 or 3, got number 2")
      assert.has_error(function() layers.affine_channel{ x = v } end, "affine_channel: 'scale' must be a Variable, got nil")
    end)
  end)
end)

describe("pool3d (test_pool3d_op.py)", function()
  -- Fluid's pool3D_forward_naive: window [i*s - p, i*s - p + k) clipped (adaptive:
  -- [floor(i in/out), ceil((i+1) in/out))); avg divides by the clipped size
  -- when exclusive or adaptive, else by kd*kh*kw
  local function pool3d_ref(x, xs, o)
    local last = o.data_format == "NDHWC"
    local N, C = xs[1], last and xs[5] or xs[2]
    local ins = last and { xs[2], xs[3], xs[4] } or { xs[3], xs[4], xs[5] }
    local ks, st, pd = o.ksize, o.strides, o.paddings
    if o.global_pooling then ks, pd = ins, { 0, 0, 0 } end
    local outs = {}
    for i = 1, 3 do
      if o.adaptive then outs[i] = ks[i]
      elseif o.ceil_mode then outs[i] = math.floor((ins[i] - ks[i] + 2 * pd[i] + st[i] - 1) / st[i]) + 1
      else outs[i] = math.floor((ins[i] - ks[i] + 2 * pd[i]) / st[i]) + 1 end
    end
    local function idx(b, c, d, h, w, sp, cc)
      if last then return (((b * sp[1] + d) * sp[2] + h) * sp[3] + w) * cc + c + 1 end
      return (((b * cc + c) * sp[1] + d) * sp[2] + h) * sp[3] + w + 1
    end
    local out = {}
    for b = 0, N - 1 do for c = 0, C - 1 do
      for od = 0, outs[1] - 1 do for oh = 0, outs[2] - 1 do for ow = 0, outs[3] - 1 do
        local lo, hi, oo = {}, {}, { od, oh, ow }
        for i = 1, 3 do
          if o.adaptive then
            lo[i] = math.floor(oo[i] * ins[i] / outs[i]); hi[i] = math.ceil((oo[i] + 1) * ins[i] / outs[i])
          else
            lo[i] = math.max(oo[i] * st[i] - pd[i], 0); hi[i] = math.min(oo[i] * st[i] - pd[i] + ks[i], ins[i])
          end
        end
        local acc, n = o.pooling_type == "max" and -math.huge or 0, 0
        for d = lo[1], hi[1] - 1 do for h = lo[2], hi[2] - 1 do for w = lo[3], hi[3] - 1 do
          local v = x[idx(b, c, d, h, w, ins, C)]
          if o.pooling_type == "max" then acc = math.max(acc, v) else acc = acc + v end
          n = n + 1
        end end end
        if o.pooling_type == "avg" then
          acc = acc / ((o.exclusive ~= false or o.adaptive) and n or ks[1] * ks[2] * ks[3])
        end
        out[idx(b, c, od, oh, ow, outs, C)] = acc
      end end end
    end end
    local os = last and { N, outs[1], outs[2], outs[3], C } or { N, C, outs[1], outs[2], outs[3] }
    return out, os
  end

  local base = { 2, 3, 4, 4, 4 }
  local cases = {
    { "TestPool3d_Op (avg)", { pooling_type = "avg", ksize = { 2, 2, 2 }, strides = { 1, 1, 1 }, paddings = { 0, 0, 0 } } },
    { "TestCase1 (avg, global)", { pooling_type = "avg", ksize = { 3, 3, 3 }, strides = { 1, 1, 1 }, paddings = { 0, 0, 0 },
                                   global_pooling = true } },
    { "TestCase2 (avg, padding 1)", { pooling_type = "avg", ksize = { 3, 3, 3 }, strides = { 1, 1, 1 }, paddings = { 1, 1, 1 } } },
    { "TestCase3 (max, stride 2)", { pooling_type = "max", ksize = { 2, 2, 2 }, strides = { 2, 2, 2 }, paddings = { 0, 0, 0 } } },
    { "TestCase4 (max, padding 1)", { pooling_type = "max", ksize = { 3, 3, 3 }, strides = { 1, 1, 1 }, paddings = { 1, 1, 1 } } },
    { "TestCeilModeCase (max)", { pooling_type = "max", ksize = { 3, 3, 3 }, strides = { 2, 2, 2 }, paddings = { 0, 0, 0 },
                                  ceil_mode = true } },
    { "TestAvgInclude (exclusive false)", { pooling_type = "avg", ksize = { 3, 3, 3 }, strides = { 1, 1, 1 },
                                            paddings = { 1, 1, 1 }, exclusive = false } },
    { "TestAvgPoolAdaptive", { pooling_type = "avg", ksize = { 3, 2, 3 }, strides = { 1, 1, 1 }, paddings = { 0, 0, 0 },
                               adaptive = true } },
    { "TestCase (NDHWC, avg, padding 1)", { pooling_type = "avg", ksize = { 3, 3, 3 }, strides = { 1, 1, 1 },
                                            paddings = { 1, 1, 1 }, data_format = "NDHWC" } },
    { "TestCase (NDHWC, max, stride 2)", { pooling_type = "max", ksize = { 2, 2, 2 }, strides = { 2, 2, 2 },
                                           paddings = { 0, 0, 0 }, data_format = "NDHWC" } },
  }
  for ci, c in ipairs(cases) do
    it(c[1], function()
      local o = c[2]
      local x = {}
      for i = 1, numel(base) do x[i] = ((i * 53 + ci) % 101) / 25 - 2 end   -- distinct values
      local want, os = pool3d_ref(x, base, o)
      T.check_output{ type = "pool3d", attrs = o, inputs = { X = T.tensor(x, { shape = base }) },
                      expect = { Out = { shape = os, data = want } }, atol = 1e-12 }
      T.check_grad{ type = "pool3d", attrs = o, inputs = { X = T.tensor(x, { shape = base }) }, wrt = { "X" },
                    delta = 0.001 }
    end)
  end

  it("padding_algorithm SAME and VALID (TestCase1_SAME / VALID)", function()
    local x = R.uniform(numel(base), 21, -1, 1)
    local o = { pooling_type = "max", ksize = { 3, 3, 3 }, strides = { 2, 2, 2 }, paddings = { 0, 0, 0 } }
    -- SAME on 4 with k 3, s 2: out 2, pad 1 in total, all at the end
    local want = pool3d_ref(x, base, o)
    o.padding_algorithm = "VALID"
    T.check_output{ type = "pool3d", attrs = o, inputs = { X = T.tensor(x, { shape = base }) },
                    expect = { Out = { shape = { 2, 3, 1, 1, 1 }, data = want } }, atol = 0 }
    o.padding_algorithm = "SAME"
    local r = T.run{ type = "pool3d", attrs = o, inputs = { X = T.tensor(x, { shape = base }) } }
    assert.same({ 2, 3, 2, 2, 2 }, r.Out[1].shape)
    -- out cell (1,1,1) of sample 0 channel 0 covers cells 2..3 of each dim
    local m = -math.huge
    for d = 2, 3 do for h = 2, 3 do for w = 2, 3 do m = math.max(m, x[((d * 4) + h) * 4 + w + 1]) end end end
    assert.equal(m, r.Out[1].data[8])
  end)

  it("refuses a non-5-D X and an unset ksize", function()
    expect_error({ type = "pool3d", attrs = { pooling_type = "max", ksize = { 2, 2, 2 } },
                   inputs = { X = T.tensor(R.uniform(16, 1, 0, 1), { shape = { 1, 1, 4, 4 } }) } }, "must be 5-D NCDHW")
    expect_error({ type = "pool3d", attrs = { pooling_type = "max", ksize = { 2, 2 } },
                   inputs = { X = T.tensor(R.uniform(8, 1, 0, 1), { shape = { 1, 1, 2, 2, 2 } }) } },
                 "ksize must hold 3 values")
  end)
end)

describe("oar.layers.pool3d", function()
  local oar = require("oar")
  it("builds pool3d with Fluid's arguments and runs", function()
    local main, startup = oar.Program(), oar.Program()
    local out
    oar.program_guard(main, startup, function()
      local v = oar.layers.data{ name = "v", shape = { 2, 4, 4, 4 }, dtype = "float64" }
      out = oar.layers.pool3d{ input = v, pool_size = 2, pool_stride = 2, pool_type = "avg" }
      assert.has_error(function() oar.layers.pool3d{ input = v, pool_size = 2, pool_padding = "FULL" } end)
    end)
    local t = oar.Tensor{ shape = { 1, 2, 4, 4, 4 }, dtype = "float64" }
    local p = t:data()
    for i = 0, 127 do p[i] = i end
    local exe = oar.Executor(oar.CPUPlace())
    exe:run(startup)
    local r = exe:run(main, { feed = { v = t }, fetch_list = { out } })[1]
    assert.same({ 1, 2, 2, 2, 2 }, r:shape())
    -- window (0,0,0) of channel 0: cells d, h, w in {0, 1}
    assert.near((0 + 1 + 4 + 5 + 16 + 17 + 20 + 21) / 8, r:totable()[1][1][1][1][1], 1e-12)
  end)
end)
