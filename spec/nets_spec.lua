-- oar.nets (Fluid 1.8's fluid.nets): each block's output shape and values
-- for a small case against a plain-Lua computation from the same inputs and
-- parameters (read back from the scope), gradients of the smooth ones
-- against finite differences, and argument checks.
local oar = require("oar")
local CF = require("spec.helpers.cf_check")
local layers, nets = oar.layers, oar.nets
local expect_error = require("spec.helpers.expect_error")

-- ---- plain-Lua tensors: {shape=, data= (flat, row-major)} --------------------------------

local function T(shape, f)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  local data = {}
  for i = 1, n do data[i] = f(i) end
  return { shape = shape, data = data }
end
local function at(t, ...)
  local idx, stride = 0, 1
  local ix = { ... }
  for k = #t.shape, 1, -1 do
    idx = idx + ix[k] * stride
    stride = stride * t.shape[k]
  end
  return t.data[idx + 1]
end
local nest = require("spec.helpers.index").nest
local function nested(t) return nest(t.data, t.shape) end
local function sigmoid(x) return 1 / (1 + math.exp(-x)) end

-- NCHW convolution, stride 1, zero padding p, filter [F, C, k, k], bias [F]
local function conv(x, w, b, p)
  local N, C, H, W = unpack(x.shape)
  local F, _, k = w.shape[1], w.shape[2], w.shape[3]
  local OH, OW = H + 2 * p - k + 1, W + 2 * p - k + 1
  local out = T({ N, F, OH, OW }, function() return 0 end)
  local pos = 0
  for n = 0, N - 1 do
    for f = 0, F - 1 do
      for i = 0, OH - 1 do
        for j = 0, OW - 1 do
          local s = b and b[f + 1] or 0
          for c = 0, C - 1 do
            for u = 0, k - 1 do
              for v = 0, k - 1 do
                local r, q = i + u - p, j + v - p
                if r >= 0 and r < H and q >= 0 and q < W then s = s + at(x, n, c, r, q) * at(w, f, c, u, v) end
              end
            end
          end
          pos = pos + 1
          out.data[pos] = s
        end
      end
    end
  end
  return out
end

local function map(t, f)
  local out = { shape = t.shape, data = {} }
  for i, v in ipairs(t.data) do out.data[i] = f(v) end
  return out
end

-- 2x2 pooling with stride 2 (no padding), max or avg
local function pool2(x, kind)
  local N, C, H, W = unpack(x.shape)
  local OH, OW = math.floor((H - 2) / 2) + 1, math.floor((W - 2) / 2) + 1
  local out = T({ N, C, OH, OW }, function() return 0 end)
  local pos = 0
  for n = 0, N - 1 do
    for c = 0, C - 1 do
      for i = 0, OH - 1 do
        for j = 0, OW - 1 do
          local vals = { at(x, n, c, 2 * i, 2 * j), at(x, n, c, 2 * i, 2 * j + 1), at(x, n, c, 2 * i + 1, 2 * j),
                         at(x, n, c, 2 * i + 1, 2 * j + 1) }
          pos = pos + 1
          out.data[pos] = kind == "max" and math.max(unpack(vals)) or (vals[1] + vals[2] + vals[3] + vals[4]) / 4
        end
      end
    end
  end
  return out
end

-- training-mode batch normalization per channel (scale 1, bias 0), then relu
local function batch_norm_relu(x, eps)
  local N, C, H, W = unpack(x.shape)
  local out = { shape = x.shape, data = {} }
  for c = 0, C - 1 do
    local s, s2, m = 0, 0, N * H * W
    for n = 0, N - 1 do for i = 0, H - 1 do for j = 0, W - 1 do
      local v = at(x, n, c, i, j)
      s, s2 = s + v, s2 + v * v
    end end end
    local mean = s / m
    local var = s2 / m - mean * mean
    for n = 0, N - 1 do for i = 0, H - 1 do for j = 0, W - 1 do
      local idx = ((n * C + c) * H + i) * W + j + 1
      out.data[idx] = math.max(0, (x.data[idx] - mean) / math.sqrt(var + eps))
    end end end
  end
  return out
end

-- a parameter's value from the scope as a plain tensor
local function param(r, name)
  local t = r.scope:find_var(name):get_tensor()
  return { shape = t:shape(), data = CF.flat(t) }
end
-- sets a parameter's values
local function set_param(r, name, values)
  local p = r.scope:find_var(name):get_tensor():data()
  for i, v in ipairs(values) do p[i - 1] = v end
end

local function data(name, shape, lod_level)
  local v = layers.data{ name = name, shape = shape, dtype = "float64", append_batch_size = false,
                         lod_level = lod_level }
  v.stop_gradient = false
  return v
end

-- ---- the specs ------------------------------------------------------------------------

describe("nets.simple_img_conv_pool", function()
  local X = T({ 2, 2, 5, 5 }, function(i) return math.sin(i * 0.7) end)

  it("is a conv2d then a pool2d, with Fluid's arguments", function()
    local r = CF.build(function()
      local img = data("img", { 2, 2, 5, 5 })
      local out = nets.simple_img_conv_pool{ input = img, num_filters = 3, filter_size = 3, conv_padding = 1,
        pool_size = 2, pool_stride = 2, act = "relu", param_attr = "cp_w", bias_attr = "cp_b" }
      return nil, {}, { out }
    end, { no_backward = true })
    set_param(r, "cp_b", { 0.1, -0.2, 0.3 })
    local got = CF.run(r, { img = nested(X) }, r.extra)[1]
    assert.same({ 2, 3, 2, 2 }, got:shape())
    local w = param(r, "cp_w")
    assert.same({ 3, 2, 3, 3 }, w.shape)
    local want = pool2(map(conv(X, w, { 0.1, -0.2, 0.3 }, 1), function(v) return math.max(v, 0) end), "max")
    CF.assert_near(CF.flat(got), want.data, 1e-12, "conv-relu-maxpool")
  end)

  it("differentiates (tanh, average pooling)", function()
    local r = CF.build(function()
      local img = data("img", { 2, 2, 5, 5 })
      local out = nets.simple_img_conv_pool{ input = img, num_filters = 2, filter_size = 2, pool_size = 2,
        pool_stride = 2, pool_type = "avg", act = "tanh" }
      return layers.reduce_sum(layers.elementwise_mul(out, out)), { img }
    end)
    CF.check_grads(r, { img = nested(X) })
  end)
end)

describe("nets.img_conv_group", function()
  it("chains conv (+ batch_norm with the activation) per filter count, then pools", function()
    local X = T({ 2, 1, 4, 4 }, function(i) return math.cos(i * 1.3) end)
    local r = CF.build(function()
      local img = data("img", { 2, 1, 4, 4 })
      local out = nets.img_conv_group{ input = img, conv_num_filter = { 2, 3 }, pool_size = 2, pool_stride = 2,
        conv_act = "relu", conv_with_batchnorm = { true, false }, param_attr = { "g1_w", "g2_w" } }
      return nil, {}, { out }
    end, { no_backward = true })
    set_param(r, "conv2d_0.b_0", { 0.5, -0.25 })
    set_param(r, "conv2d_1.b_0", { 0.1, 0.2, -0.3 })
    local got = CF.run(r, { img = nested(X) }, r.extra)[1]
    assert.same({ 2, 3, 2, 2 }, got:shape())
    local h = batch_norm_relu(conv(X, param(r, "g1_w"), { 0.5, -0.25 }, 1), 1e-5)
    h = map(conv(h, param(r, "g2_w"), { 0.1, 0.2, -0.3 }, 1), function(v) return math.max(v, 0) end)
    CF.assert_near(CF.flat(got), pool2(h, "max").data, 1e-9, "conv-bn-relu, conv-relu, maxpool")
    -- the first conv has no activation of its own: the batch_norm has it
    local types = {}
    for _, op in ipairs(r.forward:global_block():ops()) do types[#types + 1] = op.type end
    assert.same({ "conv2d", "elementwise_add", "batch_norm", "relu", "conv2d", "elementwise_add", "relu", "pool2d" },
      types)
  end)

  it("adds dropout after a batch_norm with a drop rate, and checks per-conv lists", function()
    oar.program_guard(oar.Program(), oar.Program(), function()
      local img = layers.data{ name = "img", shape = { 1, 6, 6 } }
      local out = nets.img_conv_group{ input = img, conv_num_filter = { 4, 4 }, pool_size = 2, pool_stride = 2,
        conv_with_batchnorm = true, conv_batchnorm_drop_rate = { 0.3, 0 }, conv_act = "relu" }
      assert.same({ -1, 4, 3, 3 }, out.shape)
      local n_dropout = 0
      for _, op in ipairs(oar.default_main_program():global_block():ops()) do
        if op.type == "dropout" then n_dropout = n_dropout + 1 end
      end
      assert.equal(1, n_dropout)
      expect_error(function()
        nets.img_conv_group{ input = img, conv_num_filter = { 4, 4 }, pool_size = 2, conv_padding = { 1, 1, 1 } }
      end, "img_conv_group: 'conv_padding' has 3 values for 2 convolutions")
      expect_error(function() nets.img_conv_group{ input = img, conv_num_filter = 4, pool_size = 2 } end,
        "img_conv_group: 'conv_num_filter' must be a list of filter counts")
    end)
  end)
end)

describe("nets.sequence_conv_pool", function()
  it("convolves each sequence over a window of rows (zeros outside it) and max-pools it", function()
    local X = { { 0.5, -1 }, { 1.5, 0.25 }, { -0.75, 2 }, { 1, 1 }, { 0.2, -0.4 } }
    local lod = { 0, 2, 5 }
    local r = CF.build(function()
      local s = data("s", { -1, 2 }, 1)
      return nil, {}, { nets.sequence_conv_pool{ input = s, num_filters = 3, filter_size = 3, param_attr = "sc_w",
                                                  bias_attr = "sc_b" } }
    end, { no_backward = true })
    set_param(r, "sc_b", { 0.05, -0.1, 0.2 })
    local got = CF.run(r, { s = { data = X, lod = { lod } } }, r.extra)[1]
    assert.same({ 2, 3 }, got:shape())
    local w = param(r, "sc_w")   -- [3 * 2, 3]: rows t-1, t, t+1 of the window
    assert.same({ 6, 3 }, w.shape)
    local want = {}
    for s = 1, 2 do
      for f = 1, 3 do
        local best = -math.huge
        for t = lod[s] + 1, lod[s + 1] do
          local acc = ({ 0.05, -0.1, 0.2 })[f]
          for o = -1, 1 do
            local row = t + o
            if row > lod[s] and row <= lod[s + 1] then
              for d = 1, 2 do acc = acc + X[row][d] * w.data[((o + 1) * 2 + d - 1) * 3 + f] end
            end
          end
          best = math.max(best, sigmoid(acc))
        end
        want[#want + 1] = best
      end
    end
    CF.assert_near(CF.flat(got), want, 1e-12, "sequence conv, sigmoid, max pool")
  end)
end)

describe("nets.glu", function()
  it("is a * sigmoid(b) of the two halves, along the last dim or another", function()
    local X = { { 0.3, -1.2, 0.8, 2.0 }, { -0.5, 0.7, -1.5, 0.1 } }
    local r = CF.build(function()
      local x = data("x", { 2, 4 })
      local a, b = nets.glu(x), nets.glu{ input = x, dim = 0 }
      return layers.reduce_sum(a) + layers.reduce_sum(layers.elementwise_mul(b, b)), { x }, { a, b }
    end)
    local out = CF.run(r, { x = X }, r.extra)
    assert.same({ 2, 2 }, out[1]:shape())
    local want = {}
    for i = 1, 2 do for j = 1, 2 do want[#want + 1] = X[i][j] * sigmoid(X[i][j + 2]) end end
    CF.assert_near(CF.flat(out[1]), want, 1e-12, "glu dim -1")
    assert.same({ 1, 4 }, out[2]:shape())
    want = {}
    for j = 1, 4 do want[j] = X[1][j] * sigmoid(X[2][j]) end
    CF.assert_near(CF.flat(out[2]), want, 1e-12, "glu dim 0")
    CF.check_grads(r, { x = X })
    oar.program_guard(oar.Program(), oar.Program(), function()
      local x = layers.data{ name = "x", shape = { 3 } }
      expect_error(function() nets.glu(x) end, "glu: dim -1 of 'input' has odd size 3")
      expect_error(function() nets.glu{ input = x, dmi = 1 } end, "nets.glu: unknown argument 'dmi' (did you mean 'dim'?)")
    end)
  end)
end)

describe("nets.scaled_dot_product_attention", function()
  local N, LQ, LK, DK, DV = 2, 3, 4, 4, 6
  local Q = T({ N, LQ, DK }, function(i) return math.sin(i * 0.37) end)
  local K = T({ N, LK, DK }, function(i) return math.cos(i * 0.21) end)
  local V = T({ N, LK, DV }, function(i) return math.sin(i * 0.13 + 1) end)

  -- softmax(q k^T / sqrt(d)) v over the columns [c0, c0 + d) of q/k and [e0, e0 + dv) of v;
  -- 1 / sqrt(d) rounded to float32, as the scale op's attribute holds it
  local function attend(q, k, v, n, c0, d, e0, dv)
    local scale = tonumber(require("ffi").new("float", d ^ -0.5))
    local out = {}
    for i = 0, LQ - 1 do
      local s, m = {}, -math.huge
      for j = 0, LK - 1 do
        local dot = 0
        for c = 0, d - 1 do dot = dot + at(q, n, i, c0 + c) * at(k, n, j, c0 + c) end
        s[j] = dot * scale
        m = math.max(m, s[j])
      end
      local z = 0
      for j = 0, LK - 1 do s[j] = math.exp(s[j] - m); z = z + s[j] end
      out[i] = {}
      for e = 0, dv - 1 do
        local acc = 0
        for j = 0, LK - 1 do acc = acc + s[j] / z * at(v, n, j, e0 + e) end
        out[i][e] = acc
      end
    end
    return out
  end

  -- [N, L, D] x W [D, D] + b
  local function project(x, w, b)
    local n_, l, d = unpack(x.shape)
    return T({ n_, l, d }, function(i)
      local row, col = math.floor((i - 1) / d), (i - 1) % d
      local acc = b[col + 1]
      for c = 0, d - 1 do acc = acc + x.data[row * d + c + 1] * w.data[c * d + col + 1] end
      return acc
    end)
  end

  local function build(heads)
    return CF.build(function()
      local q, k, v = data("q", { N, LQ, DK }), data("k", { N, LK, DK }), data("v", { N, LK, DV })
      local ctx = nets.scaled_dot_product_attention{ queries = q, keys = k, values = v, num_heads = heads }
      return layers.reduce_sum(layers.elementwise_mul(ctx, ctx)), { q, k, v }, { ctx }
    end)
  end
  local feeds = { q = nested(Q), k = nested(K), v = nested(V) }

  it("one head: softmax(Q K^T / sqrt(d)) V, as plain Lua computes it; gradients", function()
    local r = build(1)
    local got = CF.run(r, feeds, r.extra)[1]
    assert.same({ N, LQ, DV }, got:shape())
    local want = {}
    for n = 0, N - 1 do
      local a = attend(Q, K, V, n, 0, DK, 0, DV)
      for i = 0, LQ - 1 do for e = 0, DV - 1 do want[#want + 1] = a[i][e] end end
    end
    CF.assert_near(CF.flat(got), want, 1e-12, "attention")
    CF.check_grads(r, feeds)
  end)

  it("two heads: projected by an fc each, attended per head, joined; gradients", function()
    local r = build(2)
    set_param(r, "fc_0.b_0", { 0.1, -0.1, 0.2, 0 })
    set_param(r, "fc_2.b_0", { 0.3, 0, 0, -0.2, 0.1, 0.05 })
    local q = project(Q, param(r, "fc_0.w_0"), { 0.1, -0.1, 0.2, 0 })
    local k = project(K, param(r, "fc_1.w_0"), { 0, 0, 0, 0 })
    local v = project(V, param(r, "fc_2.w_0"), { 0.3, 0, 0, -0.2, 0.1, 0.05 })
    local got = CF.run(r, feeds, r.extra)[1]
    assert.same({ N, LQ, DV }, got:shape())
    local want = {}
    for n = 0, N - 1 do
      local h1 = attend(q, k, v, n, 0, 2, 0, 3)
      local h2 = attend(q, k, v, n, 2, 2, 3, 3)
      for i = 0, LQ - 1 do
        for e = 0, 2 do want[#want + 1] = h1[i][e] end
        for e = 0, 2 do want[#want + 1] = h2[i][e] end
      end
    end
    CF.assert_near(CF.flat(got), want, 1e-12, "two-head attention")
    CF.check_grads(r, feeds)
  end)

  it("checks its inputs", function()
    oar.program_guard(oar.Program(), oar.Program(), function()
      local q = layers.data{ name = "q", shape = { 3, 4 } }
      local k = layers.data{ name = "k", shape = { 5, 4 } }
      local v = layers.data{ name = "v", shape = { 5, 6 } }
      local k3 = layers.data{ name = "k3", shape = { 5, 3 } }
      local f = nets.scaled_dot_product_attention
      expect_error(function() f{ queries = q, keys = k3, values = v } end,
        "scaled_dot_product_attention: 'queries' and 'keys' must have one width, got 4 and 3")
      expect_error(function() f{ queries = q, keys = k, values = v, num_heads = 3 } end,
        "'num_heads' = 3 must divide the widths of keys (4) and values (6)")
      expect_error(function() f{ queries = q, keys = k, values = layers.data{ name = "v2", shape = { 6 } } } end,
        "'values' must be 3-D")
      expect_error(function() f{ querys = q, keys = k, values = v } end,
        "nets.scaled_dot_product_attention: unknown argument 'querys' (did you mean 'queries'?)")
      -- dropout on the weights keeps the shape
      assert.same({ -1, 3, 6 }, f{ queries = q, keys = k, values = v, dropout_rate = 0.5 }.shape)
    end)
  end)
end)

describe("oar.nets", function()
  it("names the missing argument of a block given its input alone", function()
    oar.program_guard(oar.Program(), oar.Program(), function()
      local img = layers.data{ name = "img", shape = { 1, 8, 8 } }
      expect_error(function() nets.simple_img_conv_pool(img) end,
        "simple_img_conv_pool: 'num_filters' must be a positive integer, got nil")
      expect_error(function() nets.simple_img_conv_pool{ input = img, num_filters = 2, filter_size = 3 } end,
        "simple_img_conv_pool: 'pool_size' must be an integer or a list of 2, got nil")
      expect_error(function() nets.img_conv_group(img) end,
        "img_conv_group: 'conv_num_filter' must be a list of filter counts, got nil")
      expect_error(function() nets.sequence_conv_pool{ input = img, num_filters = 2 } end,
        "sequence_conv_pool: 'filter_size' must be a positive integer, got nil")
    end)
  end)

  it("is reachable from oar and refuses unknown names", function()
    assert.equal(require("oar.nets"), oar.nets)
    expect_error(function() return oar.nets.simple_img_conv_poll end,
      "oar.nets: no field 'simple_img_conv_poll' (did you mean 'simple_img_conv_pool'?)")
  end)
end)
