-- The layers of issue 21 over ops that had no Lua function: each layer's
-- forward values against plain Lua, its gradients against central finite
-- differences in float64 (through a loss sum(out * w) with a fixed w, so
-- every output element weighs differently), its argument checks, and
-- param_attr / bias_attr = true.
local oar = require("oar")
local CF = require("spec.helpers.cf_check")
local layers = oar.layers
local expect_error = require("spec.helpers.expect_error")

-- ---- plain-Lua helpers ----------------------------------------------------------------

local nest = require("spec.helpers.index").nest

local flat_of = require("spec.helpers.index").flatten

local numel = require("spec.helpers.index").numel

-- loss weights: a fixed pattern of n values, none zero
local function weights(n)
  local w = {}
  for i = 1, n do w[i] = ((i * 7) % 11 - 5) / 5 + 0.13 end
  return w
end

-- erf by Simpson's rule on 2/sqrt(pi) exp(-t^2) (error far below 1e-12 here)
local function erf(x)
  local n = 4000
  local h = x / n
  local s = 1 + math.exp(-x * x)
  for i = 1, n - 1 do s = s + (i % 2 == 1 and 4 or 2) * math.exp(-(i * h) ^ 2) end
  return 2 / math.sqrt(math.pi) * s * h / 3
end

-- Builds out = make(inputs...) on float64 data inputs (all differentiated),
-- loss = sum(out * lw). inputs: list of {name, shape}. Returns r, and a
-- function feeds(values...) giving the feed table (lw filled in).
local function build(inputs, make, opts)
  opts = opts or {}
  local out_shape = opts.out_shape
  local r = CF.build(function()
    local vars = {}
    for i, spec in ipairs(inputs) do
      vars[i] = layers.data{ name = spec[1], shape = spec[2], dtype = spec[3] or "float64", append_batch_size = false }
      if (spec[3] or "float64") == "float64" then vars[i].stop_gradient = false end
    end
    local out = make(unpack(vars))
    out_shape = out_shape or out.shape
    local lw = layers.data{ name = "lw", shape = out.shape, dtype = "float64", append_batch_size = false }
    local wrt = {}
    for _, v in ipairs(vars) do if not v.stop_gradient then wrt[#wrt + 1] = v end end
    return layers.reduce_sum(layers.elementwise_mul(out, lw)), wrt, { out }
  end, opts)
  local function feeds(values)
    local f = { lw = nest(weights(numel(out_shape)), out_shape) }
    for k, v in pairs(values) do f[k] = v end
    return f
  end
  return r, feeds, out_shape
end

-- forward value of r's output as {shape, flat}
local function forward(r, feeds)
  local t = CF.run(r, feeds, r.extra)[1]
  return t:shape(), CF.flat(t)
end

local X23 = { { -1.7, -0.4, 0.3 }, { 0.9, 1.2, 2.5 } }

-- ---- activations ------------------------------------------------------------------------

-- float attributes are float32 in an op: selu's defaults as the op holds them
local ffi = require("ffi")
local function f32(v) return tonumber(ffi.new("float", v)) end
local SELU_SCALE, SELU_ALPHA = f32(1.0507009873554804934), f32(1.6732632423543772848)
local ACTS = {
  { "acos", math.acos, { { -0.7, -0.2, 0.1 }, { 0.3, 0.5, 0.8 } } },
  { "asin", math.asin, { { -0.7, -0.2, 0.1 }, { 0.3, 0.5, 0.8 } } },
  { "atan", math.atan, X23 },
  { "erf", erf, X23 },
  { "selu", function(x) return x > 0 and SELU_SCALE * x or SELU_SCALE * SELU_ALPHA * (math.exp(x) - 1) end, X23 },
  { "hard_swish", function(x) return x * math.min(math.max(x + 3, 0), 6) / 6 end, X23 },
  { "mish", function(x) return x * math.tanh(math.log(1 + math.exp(x))) end, X23 },
  { "tan", math.tan, { { -1.1, -0.4, 0.3 }, { 0.6, 0.9, 1.2 } } },
  { "sinh", math.sinh, X23 },
  { "cosh", math.cosh, X23 },
  { "silu", function(x) return x / (1 + math.exp(-x)) end, X23 },
  { "expm1", function(x) return math.exp(x) - 1 end, X23 },
  { "log1p", function(x) return math.log(1 + x) end, { { 0.2, 0.5, 1.1 }, { 1.7, 2.9, 4.0 } } },
  { "log2", function(x) return math.log(x) / math.log(2) end, { { 0.2, 0.5, 1.1 }, { 1.7, 2.9, 4.0 } } },
  { "log10", math.log10, { { 0.2, 0.5, 1.1 }, { 1.7, 2.9, 4.0 } } },
  { "logit", function(x) return math.log(x / (1 - x)) end, { { 0.1, 0.25, 0.4 }, { 0.6, 0.75, 0.9 } } },
  -- declared in one line each of src/ops/activation.ops (docs/CONTRIBUTING.md)
  { "asinh", function(x) return math.log(x + math.sqrt(x * x + 1)) end, X23 },
  { "acosh", function(x) return math.log(x + math.sqrt(x * x - 1)) end, { { 1.1, 1.4, 2.0 }, { 2.6, 3.3, 5.0 } } },
  { "atanh", function(x) return 0.5 * math.log((1 + x) / (1 - x)) end, { { -0.7, -0.2, 0.1 }, { 0.3, 0.5, 0.8 } } },
}

describe("new activation layers", function()
  for _, case in ipairs(ACTS) do
    local name, f, xv = case[1], case[2], case[3]
    it(name .. ": values and gradient", function()
      local r, feeds = build({ { "x", { 2, 3 } } }, function(x) return layers[name](x) end)
      local shape, got = forward(r, feeds{ x = xv })
      assert.same({ 2, 3 }, shape)
      local want = {}
      for i, v in ipairs(flat_of(xv)) do want[i] = f(v) end
      CF.assert_near(got, want, 1e-10, name)
      CF.check_grads(r, feeds{ x = xv })
    end)
  end

  it("take their attributes as keys or the first one positionally", function()
    local a = 0.5
    local celu = function(x) return math.max(0, x) + math.min(0, a * (math.exp(x / a) - 1)) end
    local r, feeds = build({ { "x", { 2, 3 } } }, function(x) return layers.celu(x, a) end)
    local _, got = forward(r, feeds{ x = X23 })
    local want = {}
    for i, v in ipairs(flat_of(X23)) do want[i] = celu(v) end
    CF.assert_near(got, want, 1e-12, "celu(x, 0.5)")
    CF.check_grads(r, feeds{ x = X23 })
    -- hard_swish with its three attributes; selu with its own scale and alpha
    local r2, feeds2 = build({ { "x", { 2, 3 } } }, function(x)
      return layers.hard_swish{ x = x, threshold = 4, scale = 5, offset = 2 } + layers.selu{ x = x, scale = 2, alpha = 0.5 }
    end)
    _, got = forward(r2, feeds2{ x = X23 })
    for i, v in ipairs(flat_of(X23)) do
      want[i] = v * math.min(math.max(v + 2, 0), 4) / 5 + (v > 0 and 2 * v or 2 * 0.5 * (math.exp(v) - 1))
    end
    CF.assert_near(got, want, 1e-12, "hard_swish + selu")
    -- mish's threshold (Paddle's): softplus(x) is x above it, exp(x) below -threshold
    local r3, feeds3 = build({ { "x", { 2, 3 } } }, function(x) return layers.mish(x, 1.0) end)
    _, got = forward(r3, feeds3{ x = X23 })
    for i, v in ipairs(flat_of(X23)) do
      local sp = v > 1 and v or (v < -1 and math.exp(v) or math.log(1 + math.exp(v)))
      want[i] = v * math.tanh(sp)
    end
    CF.assert_near(got, want, 1e-12, "mish threshold 1")
  end)

  it("refuse a positional number without an attribute, and unknown keys", function()
    oar.program_guard(oar.Program(), oar.Program(), function()
      local x = layers.data{ name = "x", shape = { 3 } }
      expect_error(function() layers.acos(x, 2) end, "acos: has no attribute to give positionally")
      expect_error(function() layers.mish{ x = x, treshold = 3 } end, "layers.mish: unknown argument 'treshold' (did you mean 'threshold'?)")
      expect_error(function() layers.erf{ x = 3 } end, "erf: 'x' must be a Variable")
    end)
  end)
end)

-- ---- selection and shapes ---------------------------------------------------------------

local X43 = { { 1, 2, 3 }, { 4, 5, 6 }, { 7, 8, 9 }, { 10, 11, 12 } }

describe("selection and shape layers", function()
  it("gather: rows at the indices; overwrite=false sums repeated indices' gradients", function()
    local r, feeds = build({ { "x", { 4, 3 } }, { "i", { 3 }, "int64" } }, function(x, i)
      return layers.gather(x, i)
    end)
    local shape, got = forward(r, feeds{ x = X43, i = { data = { 3, 0, 1 }, dtype = "int64" } })
    assert.same({ 3, 3 }, shape)
    assert.same({ 10, 11, 12, 1, 2, 3, 4, 5, 6 }, got)
    CF.check_grads(r, feeds{ x = X43, i = { data = { 3, 0, 1 }, dtype = "int64" } })
    local r2, feeds2 = build({ { "x", { 4, 3 } }, { "i", { 3 }, "int64" } }, function(x, i)
      return layers.gather{ input = x, index = i, overwrite = false }
    end)
    local f = feeds2{ x = X43, i = { data = { 2, 0, 2 }, dtype = "int64" } }
    local _, v = forward(r2, f)
    assert.same({ 7, 8, 9, 1, 2, 3, 7, 8, 9 }, v)
    local g = CF.flat(CF.check_grads(r2, f)[1])
    -- row 3 (index 2) collects the weights of output rows 1 and 3
    local w = weights(9)
    CF.assert_near({ g[7], g[8], g[9] }, { w[1] + w[7], w[2] + w[8], w[3] + w[9] }, 1e-12, "summed row")
    assert.same({ 0, 0, 0 }, { g[4], g[5], g[6] })
  end)

  it("slice: negative and clipped bounds, bounds from Variables, gradient", function()
    local r, feeds = build({ { "x", { 4, 3 } } }, function(x)
      return layers.slice{ input = x, axes = { 0, 1 }, starts = { 1, -2 }, ends = { 3, 100 } }
    end)
    local shape, got = forward(r, feeds{ x = X43 })
    assert.same({ 2, 2 }, shape)
    assert.same({ 5, 6, 8, 9 }, got)
    CF.check_grads(r, feeds{ x = X43 })
    -- starts as an int32 Variable, ends as a list holding a Variable
    local r2, feeds2 = build({ { "x", { 4, 3 } }, { "s", { 2 }, "int32" }, { "e", { 1 }, "int32" } },
      function(x, s, e) return layers.slice(x, { 0, 1 }, s, { e, 3 }) end, { out_shape = { 2, 2 } })
    local f = feeds2{ x = X43, s = { data = { 2, 1 }, dtype = "int32" }, e = { data = { 4 }, dtype = "int32" } }
    shape, got = forward(r2, f)
    assert.same({ 2, 2 }, shape)
    assert.same({ 8, 9, 11, 12 }, got)
    CF.check_grads(r2, f)
  end)

  it("stack: along a new axis, positive or negative", function()
    local A, B = { { 1, 2, 3 }, { 4, 5, 6 } }, { { -1, -2, -3 }, { -4, -5, -6 } }
    for _, axis in ipairs({ 0, 1, -1 }) do
      local r, feeds = build({ { "a", { 2, 3 } }, { "b", { 2, 3 } } }, function(a, b)
        return layers.stack({ a, b }, axis)
      end)
      local shape, got = forward(r, feeds{ a = A, b = B })
      local want = {}
      if axis == 0 then
        assert.same({ 2, 2, 3 }, shape)
        want = { 1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -6 }
      elseif axis == 1 then
        assert.same({ 2, 2, 3 }, shape)
        want = { 1, 2, 3, -1, -2, -3, 4, 5, 6, -4, -5, -6 }
      else
        assert.same({ 2, 3, 2 }, shape)
        want = { 1, -1, 2, -2, 3, -3, 4, -4, 5, -5, 6, -6 }
      end
      assert.same(want, got)
      CF.check_grads(r, feeds{ a = A, b = B })
    end
  end)

  it("squeeze, unsqueeze and flatten: shapes, values kept in order, gradients", function()
    local X = { { { 1, 2, 3 } }, { { 4, 5, 6 } } }   -- [2, 1, 3]
    local cases = {
      { function(x) return layers.squeeze(x, { 1 }) end, { 2, 3 } },
      { function(x) return layers.squeeze{ input = x, axes = {} } end, { 2, 3 } },
      { function(x) return layers.unsqueeze{ input = x, axes = { 0, 4 } } end, { 1, 2, 1, 3, 1 } },
      { function(x) return layers.unsqueeze(x, 3) end, { 2, 1, 3, 1 } },
      { function(x) return layers.flatten(x) end, { 2, 3 } },
      { function(x) return layers.flatten{ x = x, axis = 0 } end, { 1, 6 } },
      { function(x) return layers.flatten(x, 3) end, { 6, 1 } },
    }
    for k, c in ipairs(cases) do
      local r, feeds = build({ { "x", { 2, 1, 3 } } }, c[1])
      local shape, got = forward(r, feeds{ x = X })
      assert.same(c[2], shape, "case " .. k)
      assert.same({ 1, 2, 3, 4, 5, 6 }, got, "case " .. k)
      CF.check_grads(r, feeds{ x = X })
    end
  end)

  it("expand, tile and broadcast_to repeat the input; the gradient sums the copies", function()
    local X = { { 1.5 }, { -2 } }   -- [2, 1]
    local r, feeds = build({ { "x", { 2, 1 } } }, function(x) return layers.expand(x, { 2, 3 }) end)
    local shape, got = forward(r, feeds{ x = X })
    assert.same({ 4, 3 }, shape)
    assert.same({ 1.5, 1.5, 1.5, -2, -2, -2, 1.5, 1.5, 1.5, -2, -2, -2 }, got)
    local g = CF.flat(CF.check_grads(r, feeds{ x = X })[1])
    local w = weights(12)
    CF.assert_near(g, { w[1] + w[2] + w[3] + w[7] + w[8] + w[9], w[4] + w[5] + w[6] + w[10] + w[11] + w[12] },
      1e-12, "expand gradient")

    local X23b = { { 1, 2, 3 }, { 4, 5, 6 } }
    r, feeds = build({ { "x", { 2, 3 } } }, function(x) return layers.tile{ x = x, repeat_times = { 2, 2 } } end)
    shape, got = forward(r, feeds{ x = X23b })
    assert.same({ 4, 6 }, shape)
    local want = {}
    for i = 1, 4 do
      for j = 1, 6 do want[#want + 1] = X23b[(i - 1) % 2 + 1][(j - 1) % 3 + 1] end
    end
    assert.same(want, got)
    CF.check_grads(r, feeds{ x = X23b })
    -- fewer repeat counts than dims: leading dims of 1
    r, feeds = build({ { "x", { 2, 3 } } }, function(x) return layers.tile(x, { 3, 1, 1 }) end)
    shape = forward(r, feeds{ x = X23b })
    assert.same({ 3, 2, 3 }, shape)

    r, feeds = build({ { "x", { 1, 3 } } }, function(x) return layers.broadcast_to(x, { 2, 2, 3 }) end)
    shape, got = forward(r, feeds{ x = { { 1, 2, 3 } } })
    assert.same({ 2, 2, 3 }, shape)
    assert.same({ 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3 }, got)
    CF.check_grads(r, feeds{ x = { { 1, 2, 3 } } })
  end)

  it("where picks x or y by the condition; sum adds its inputs", function()
    local A, B = { { 1, -2, 3 }, { -4, 5, -6 } }, { { 0.5, 0.5, 4 }, { 4, 4, -7 } }
    local r, feeds = build({ { "a", { 2, 3 } }, { "b", { 2, 3 } } }, function(a, b)
      return layers.where(layers.greater_than(a, b), a, b)
    end)
    local _, got = forward(r, feeds{ a = A, b = B })
    local want = {}
    for i, v in ipairs(flat_of(A)) do want[i] = math.max(v, flat_of(B)[i]) end
    assert.same(want, got)
    local g = CF.check_grads(r, feeds{ a = A, b = B })
    local w = weights(6)
    for i, v in ipairs(flat_of(A)) do
      local a_wins = v > flat_of(B)[i]
      assert.equal(a_wins and w[i] or 0, CF.flat(g[1])[i])
      assert.equal(a_wins and 0 or w[i], CF.flat(g[2])[i])
    end

    r, feeds = build({ { "a", { 2, 3 } }, { "b", { 2, 3 } } }, function(a, b) return layers.sum{ a, b, a } end)
    _, got = forward(r, feeds{ a = A, b = B })
    for i, v in ipairs(flat_of(A)) do want[i] = 2 * v + flat_of(B)[i] end
    assert.same(want, got)
    CF.check_grads(r, feeds{ a = A, b = B })
  end)

  it("pad2d pads constant, reflect and edge, NCHW and NHWC", function()
    local img = { { 1, 2, 3 }, { 4, 5, 6 }, { 7, 8, 9 } }
    local top, bottom, left, right = 1, 0, 2, 1
    local function source(i, n, mode)
      if i >= 0 and i < n then return i end
      if mode == "reflect" then return i < 0 and -i or 2 * (n - 1) - i end
      if mode == "edge" then return math.max(0, math.min(n - 1, i)) end
      return nil
    end
    for _, mode in ipairs({ "constant", "reflect", "edge" }) do
      local want = {}
      for r_ = 0, 3 + top + bottom - 1 do
        for c = 0, 3 + left + right - 1 do
          local sr, sc = source(r_ - top, 3, mode), source(c - left, 3, mode)
          want[#want + 1] = (sr and sc) and img[sr + 1][sc + 1] or 9.5
        end
      end
      local r, feeds = build({ { "x", { 1, 1, 3, 3 } } }, function(x)
        return layers.pad2d{ input = x, paddings = { top, bottom, left, right }, mode = mode, pad_value = 9.5 }
      end)
      local shape, got = forward(r, feeds{ x = { { img } } })
      assert.same({ 1, 1, 4, 6 }, shape, mode)
      assert.same(want, got, mode)
      CF.check_grads(r, feeds{ x = { { img } } })
      -- NHWC: one channel last gives the same numbers
      local r2, feeds2 = build({ { "x", { 1, 3, 3, 1 } } }, function(x)
        return layers.pad2d{ input = x, paddings = { top, bottom, left, right }, mode = mode, pad_value = 9.5,
                             data_format = "NHWC" }
      end)
      local nhwc = {}
      for i = 1, 3 do
        nhwc[i] = {}
        for j = 1, 3 do nhwc[i][j] = { img[i][j] } end
      end
      shape, got = forward(r2, feeds2{ x = { nhwc } })
      assert.same({ 1, 4, 6, 1 }, shape, mode .. " NHWC")
      assert.same(want, got, mode .. " NHWC")
    end
  end)

  it("p_norm: (sum |x|^p)^(1/p) along an axis, keepdim, gradient", function()
    local X = { { 1.5, -2, 0.5 }, { -3, 1, 2.5 } }
    for _, c in ipairs({ { 2, 1, false, { 2 } }, { 3, 0, true, { 1, 3 } }, { 1, -1, false, { 2 } } }) do
      local p, axis, keep, oshape = c[1], c[2], c[3], c[4]
      local r, feeds = build({ { "x", { 2, 3 } } }, function(x)
        return layers.p_norm{ x = x, porder = p, axis = axis, keepdim = keep }
      end)
      local shape, got = forward(r, feeds{ x = X })
      assert.same(oshape, shape)
      local want = {}
      if axis == 0 then
        for j = 1, 3 do want[j] = (math.abs(X[1][j]) ^ p + math.abs(X[2][j]) ^ p) ^ (1 / p) end
      else
        for i = 1, 2 do
          local s = 0
          for j = 1, 3 do s = s + math.abs(X[i][j]) ^ p end
          want[i] = s ^ (1 / p)
        end
      end
      CF.assert_near(got, want, 1e-12, "p_norm p=" .. p)
      CF.check_grads(r, feeds{ x = X })
    end
  end)

  it("full_like fills x's shape with a value, in x's dtype or another", function()
    local r = CF.build(function()
      local x = layers.data{ name = "x", shape = { 2, 3 }, dtype = "float64", append_batch_size = false }
      return nil, {}, { layers.full_like(x, 0.25), layers.full_like{ x = x, fill_value = 7, dtype = "int64" } }
    end, { no_backward = true })
    local out = CF.run(r, { x = X23 }, r.extra)
    assert.same({ 2, 3 }, out[1]:shape())
    assert.equal("float64", out[1]:dtype())
    assert.same({ 0.25, 0.25, 0.25, 0.25, 0.25, 0.25 }, CF.flat(out[1]))
    assert.equal("int64", out[2]:dtype())
    assert.same({ 7, 7, 7, 7, 7, 7 }, CF.flat(out[2]))
  end)

  it("refuse wrong arguments, naming them", function()
    oar.program_guard(oar.Program(), oar.Program(), function()
      local x = layers.data{ name = "x", shape = { 2, 1, 3 }, append_batch_size = false }
      local i = layers.data{ name = "i", shape = { 2 }, dtype = "int64", append_batch_size = false }
      expect_error(function() layers.gather{ input = x, indx = i } end, "layers.gather: unknown argument 'indx' (did you mean 'index'?)")
      expect_error(function() layers.gather(x, x) end, "gather: 'index' must be int32 or int64")
      expect_error(function() layers.slice(x, { 5 }, { 0 }, { 1 }) end, "slice: 'axes[1]' = 5 is out of range")
      expect_error(function() layers.slice(x, { 0, 1 }, { 0 }, { 1, 1 }) end, "slice: 'starts' must be a list of 2 integers")
      expect_error(function() layers.stack({ x, x }, 5) end, "stack: 'axis' = 5 is out of range")
      expect_error(function() layers.squeeze(x, { 2 }) end, "squeeze: 'axes[1]' = 2 names a dim of size 3")
      expect_error(function() layers.flatten(x, 4) end, "flatten: 'axis' = 4 must be in [0, 3]")
      expect_error(function() layers.expand(x, { 1, 2 }) end, "expand: 'expand_times' has 2 values, x has 3 dims")
      expect_error(function() layers.tile(x, { 1, 0, 1 }) end, "tile: 'repeat_times[2]' must be positive")
      expect_error(function() layers.where(layers.greater_than(x, x)) end, "where: give 'x' and 'y'")
      expect_error(function() layers.pad2d{ input = layers.unsqueeze(x, 0), mode = "wrap" } end, "pad2d: 'mode' must be one of constant, reflect, edge")
      expect_error(function() layers.uniform_random{ shape = { 2 }, min = 2, max = 1 } end, "uniform_random: 'min' (2) must not exceed 'max' (1)")
      expect_error(function() layers.gaussian_random{ shape = { 2, 0 } } end, "gaussian_random: 'shape[2]' must be a positive integer")
      expect_error(function() layers.p_norm{ x = x, porder = 2, keep_dim = true } end, "layers.p_norm: unknown argument 'keep_dim' (did you mean 'keepdim'?)")
    end)
  end)
end)

-- ---- random tensors, load ---------------------------------------------------------------

describe("random tensor layers", function()
  local function sample(make)
    local r = CF.build(function() return nil, {}, { make() } end, { no_backward = true })
    return CF.run(r, {}, r.extra)[1]
  end

  it("uniform_random draws from [min, max) with the mean and variance of the uniform law", function()
    local t = sample(function() return layers.uniform_random{ shape = { 100, 40 }, min = -2, max = 3, seed = 7,
                                                               dtype = "float64" } end)
    assert.same({ 100, 40 }, t:shape())
    assert.equal("float64", t:dtype())
    local v = CF.flat(t)
    local s, s2 = 0, 0
    for _, x in ipairs(v) do
      assert.is_true(x >= -2 and x < 3)
      s, s2 = s + x, s2 + x * x
    end
    local mean = s / #v
    local var = s2 / #v - mean * mean
    -- mean 0.5 (sd of the mean 1.443/sqrt(4000) = 0.023), variance 25/12
    assert.is_true(math.abs(mean - 0.5) < 0.1, "mean " .. mean)
    assert.is_true(math.abs(var - 25 / 12) < 0.2, "variance " .. var)
    -- the same seed gives the same values
    local again = CF.flat(sample(function() return layers.uniform_random{ shape = { 100, 40 }, min = -2, max = 3,
                                                                           seed = 7, dtype = "float64" } end))
    assert.same(v, again)
  end)

  it("draw new values at every run without a seed, the same ones with a seed", function()
    local r = CF.build(function()
      return nil, {}, { layers.uniform_random{ shape = { 8 } }, layers.gaussian_random{ shape = { 8 }, seed = 11 } }
    end, { no_backward = true })
    local one, two = CF.run(r, {}, r.extra), CF.run(r, {}, r.extra)
    assert.are_not.same(CF.flat(one[1]), CF.flat(two[1]))
    assert.same(CF.flat(one[2]), CF.flat(two[2]))
  end)

  it("gaussian_random draws with the requested mean and standard deviation", function()
    local t = sample(function() return layers.gaussian_random{ shape = { 4000 }, mean = 1, std = 2, seed = 3 } end)
    assert.equal("float32", t:dtype())
    local v = CF.flat(t)
    local s, s2 = 0, 0
    for _, x in ipairs(v) do s, s2 = s + x, s2 + x * x end
    local mean = s / #v
    local sd = math.sqrt(s2 / #v - mean * mean)
    assert.is_true(math.abs(mean - 1) < 0.15, "mean " .. mean)
    assert.is_true(math.abs(sd - 2) < 0.15, "sd " .. sd)
  end)

  it("load reads what a save op wrote", function()
    local path = os.tmpname()
    local exe = oar.Executor()
    local save_prog = oar.Program()
    oar.program_guard(save_prog, oar.Program(), function()
      local x = layers.assign(oar.Tensor({ { 1.5, 2 }, { -3, 4 } }, "float32"))
      save_prog:global_block():append_op{ type = "save", inputs = { X = { x } }, attrs = { file_path = path } }
    end)
    exe:run(save_prog)
    local load_prog = oar.Program()
    local out
    oar.program_guard(load_prog, oar.Program(), function()
      out = layers.create_tensor{ dtype = "float32" }
      layers.load{ out = out, file_path = path }
    end)
    local got = exe:run(load_prog, { fetch_list = { out } })[1]
    os.remove(path)
    assert.same({ 2, 2 }, got:shape())
    assert.same({ 1.5, 2, -3, 4 }, CF.flat(got))
  end)
end)

-- ---- param_attr / bias_attr = true --------------------------------------------------------

describe("param_attr and bias_attr", function()
  local function params_of(make)
    local main, startup = oar.Program(), oar.Program()
    oar.program_guard(main, startup, function()
      oar.unique_name.guard(function() make(layers.data{ name = "x", shape = { 3 } }) end)
    end)
    local names = {}
    for _, p in ipairs(main:global_block():all_parameters()) do names[#names + 1] = p.name end
    table.sort(names)
    return names, main, startup
  end

  it("true means the default attribute, as nil does (Fluid)", function()
    local plain = params_of(function(x) layers.fc{ input = x, size = 2 } end)
    local trued = params_of(function(x) layers.fc{ input = x, size = 2, param_attr = true, bias_attr = true } end)
    assert.same({ "fc_0.b_0", "fc_0.w_0" }, plain)
    assert.same(plain, trued)
    local none = params_of(function(x) layers.fc{ input = x, size = 2, bias_attr = false } end)
    assert.same({ "fc_0.w_0" }, none)
    -- a bias made from true starts at zero and trains
    local names, main, startup = params_of(function(x)
      local y = layers.fc{ input = x, size = 2, bias_attr = true }
      local loss = layers.mean(y)
      oar.optimizer.SGD{ learning_rate = 0.5 }:minimize(loss)
    end)
    assert.same({ "fc_0.b_0", "fc_0.w_0" }, names)
    local exe, scope = oar.Executor(), oar.Scope()
    exe:run(startup, { scope = scope })
    assert.same({ 0, 0 }, CF.flat(scope:find_var("fc_0.b_0"):get_tensor()))
    exe:run(main, { feed = { x = oar.Tensor({ { 1, 2, 3 } }) }, scope = scope })
    -- d mean(y) / d b = 1/2 for each of the two units: b = 0 - 0.5 * 0.5
    assert.same({ -0.25, -0.25 }, CF.flat(scope:find_var("fc_0.b_0"):get_tensor()))
  end)

  it("true works for the other layers with parameters", function()
    local names = params_of(function(x)
      local img = layers.reshape(x, { -1, 3, 1, 1 })
      layers.conv2d{ input = img, num_filters = 2, filter_size = 1, param_attr = true, bias_attr = true }
      layers.batch_norm{ input = img, param_attr = true, bias_attr = true }
      layers.layer_norm{ input = x, param_attr = true, bias_attr = true }
    end)
    assert.same({ "batch_norm_0.b_0", "batch_norm_0.w_0", "batch_norm_0.w_1", "batch_norm_0.w_2", "conv2d_0.b_0",
                  "conv2d_0.w_0", "layer_norm_0.b_0", "layer_norm_0.w_0" }, names)
  end)

  it("errors name the argument that was wrong", function()
    oar.program_guard(oar.Program(), oar.Program(), function()
      local x = layers.data{ name = "x", shape = { 3 } }
      local ok, err = pcall(layers.fc, { input = x, size = 2, bias_attr = 3 })
      assert.is_false(ok)
      assert.truthy(err:find("fc: 'bias_attr' must be a ParamAttr", 1, true), err)
      assert.falsy(err:find("param_attr", 1, true), err)
      expect_error(function() layers.fc{ input = x, size = 2, param_attr = 3 } end, "fc: 'param_attr' must be a ParamAttr")
      expect_error(function() layers.fc{ input = x, size = 2, bias_attr = { nme = "b" } } end, "fc: 'bias_attr': unknown argument 'nme' (did you mean 'name'?)")
      expect_error(function() layers.fc{ input = { x, x }, size = 2, param_attr = { "a", 5 } } end, "fc: 'param_attr[2]' must be a ParamAttr")
      expect_error(function()
        layers.conv2d{ input = layers.reshape(x, { -1, 3, 1, 1 }), num_filters = 1, filter_size = 1, bias_attr = 7 }
      end, "conv2d: 'bias_attr' must be a ParamAttr")
    end)
  end)
end)
