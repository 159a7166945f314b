-- pool2d: forward against plain Lua window loops, hand-computed border and
-- ceil_mode cases, gradients (finite differences and hand-derived routing),
-- and error cases.
local T = require("spec.helpers.op_test")

local numel = require("spec.helpers.index").numel

-- distinct values (a shuffled ramp) so max pooling has no ties and finite
-- differences never cross an argmax switch: neighbours differ by >= 0.05
local function distinct_values(n, seed)
  local v = {}
  for i = 1, n do v[i] = (i - 1) * 0.05 - n * 0.025 end
  local s = seed or 7
  for i = n, 2, -1 do
    s = (s * 1103515245 + 12345) % 2147483648
    local j = s % i + 1
    v[i], v[j] = v[j], v[i]
  end
  return v
end

-- reference pooling: a = {type, ksize, strides, paddings (2 or 4), ceil_mode,
-- exclusive, global_pooling, adaptive}
local function pool_ref(x, xs, a)
  local N, C, H, W = xs[1], xs[2], xs[3], xs[4]
  local ks = a.global_pooling and { H, W } or a.ksize
  local st = a.strides or { 1, 1 }
  local p = a.paddings or { 0, 0 }
  if #p == 2 then p = { p[1], p[1], p[2], p[2] } end
  if a.global_pooling then p = { 0, 0, 0, 0 } end
  local exclusive = a.exclusive ~= false
  local function osize(inn, k, p0, p1, s)
    if a.global_pooling then return 1 end
    if a.adaptive then return k end
    if a.ceil_mode then return math.floor((inn - k + p0 + p1 + s - 1) / s) + 1 end
    return math.floor((inn - k + p0 + p1) / s) + 1
  end
  local OH, OW = osize(H, ks[1], p[1], p[2], st[1]), osize(W, ks[2], p[3], p[4], st[2])
  local out = {}
  for n = 0, N - 1 do
    for c = 0, C - 1 do
      for i = 0, OH - 1 do
        for j = 0, OW - 1 do
          local h0, h1, w0, w1
          if a.adaptive then
            h0, h1 = math.floor(i * H / OH), math.ceil((i + 1) * H / OH)
            w0, w1 = math.floor(j * W / OW), math.ceil((j + 1) * W / OW)
          else
            h0 = i * st[1] - p[1]; h1 = math.min(h0 + ks[1], H); h0 = math.max(h0, 0)
            w0 = j * st[2] - p[3]; w1 = math.min(w0 + ks[2], W); w0 = math.max(w0, 0)
          end
          local best, sum = -math.huge, 0
          for h = h0, h1 - 1 do
            for w = w0, w1 - 1 do
              local v = x[((n * C + c) * H + h) * W + w + 1]
              if v > best then best = v end
              sum = sum + v
            end
          end
          if a.type == "max" then
            out[#out + 1] = best
          else
            local cnt = (exclusive or a.adaptive) and (h1 - h0) * (w1 - w0) or ks[1] * ks[2]
            out[#out + 1] = sum / cnt
          end
        end
      end
    end
  end
  return out, { N, C, OH, OW }
end

local function attrs_of(a)
  return { pooling_type = a.type, ksize = a.ksize or { 1, 1 }, strides = a.strides, paddings = a.paddings,
            ceil_mode = a.ceil_mode, exclusive = a.exclusive, global_pooling = a.global_pooling,
            adaptive = a.adaptive }
end

local function case(xs, a, dtype)
  local x = distinct_values(numel(xs), numel(xs))
  local want, oshape = pool_ref(x, xs, a)
  local tol = dtype == "float32" and 1e-5 or 1e-12
  T.check_output{
    type = "pool2d", inputs = { X = T.tensor(x, { shape = xs, dtype = dtype }) }, attrs = attrs_of(a),
    expect = { Out = { shape = oshape, data = want } }, atol = tol, rtol = tol,
  }
end

local function err_of(fn)
  local ok, err = pcall(fn)
  assert.is_false(ok, "expected an error")
  return tostring(err)
end

local x33 = { 1, 2, 3, 4, 5, 6, 7, 8, 9 }

describe("pool2d forward", function()
  it("max 2x2 stride 2 by hand", function()
    local x = { 1, 5, 2, 0,
                3, 4, 8, 1,
                0, 0, 1, 1,
                9, 2, 1, 7 }
    T.check_output{ type = "pool2d", inputs = { X = T.tensor(x, { shape = { 1, 1, 4, 4 } }) },
      attrs = { pooling_type = "max", ksize = { 2, 2 }, strides = { 2, 2 } },
      expect = { Out = { shape = { 1, 1, 2, 2 }, data = { 5, 8, 9, 7 } } } }
  end)

  it("exclusive avg at padded borders divides by the in-bounds count", function()
    -- 3x3 window, pad 1 on the 3x3 image 1..9: the corner sees {1,2,4,5}
    T.check_output{ type = "pool2d", inputs = { X = T.tensor(x33, { shape = { 1, 1, 3, 3 } }) },
      attrs = { pooling_type = "avg", ksize = { 3, 3 }, paddings = { 1, 1 } },
      expect = { Out = { shape = { 1, 1, 3, 3 }, data = {
        (1 + 2 + 4 + 5) / 4, (1 + 2 + 3 + 4 + 5 + 6) / 6, (2 + 3 + 5 + 6) / 4,
        (1 + 2 + 4 + 5 + 7 + 8) / 6, 45 / 9, (2 + 3 + 5 + 6 + 8 + 9) / 6,
        (4 + 5 + 7 + 8) / 4, (4 + 5 + 6 + 7 + 8 + 9) / 6, (5 + 6 + 8 + 9) / 4 } } } }
  end)

  it("non-exclusive avg counts the padding (divides by kh*kw)", function()
    T.check_output{ type = "pool2d", inputs = { X = T.tensor(x33, { shape = { 1, 1, 3, 3 } }) },
      attrs = { pooling_type = "avg", ksize = { 3, 3 }, paddings = { 1, 1 }, exclusive = false },
      expect = { Out = { shape = { 1, 1, 3, 3 }, data = {
        12 / 9, 21 / 9, 16 / 9, 27 / 9, 45 / 9, 33 / 9, 24 / 9, 39 / 9, 28 / 9 } } } }
  end)

  it("ceil_mode adds a last partial window", function()
    -- H = W = 5, k 2, s 2: floor gives 2, ceil gives 3 (the last window sees row/col 4 only)
    local x = {}
    for i = 1, 25 do x[i] = i end
    local floor = T.run{ type = "pool2d", inputs = { X = T.tensor(x, { shape = { 1, 1, 5, 5 } }) },
      attrs = { pooling_type = "max", ksize = { 2, 2 }, strides = { 2, 2 } } }
    assert.same({ 1, 1, 2, 2 }, floor.Out[1].shape)
    T.check_output{ type = "pool2d", inputs = { X = T.tensor(x, { shape = { 1, 1, 5, 5 } }) },
      attrs = { pooling_type = "max", ksize = { 2, 2 }, strides = { 2, 2 }, ceil_mode = true },
      expect = { Out = { shape = { 1, 1, 3, 3 }, data = { 7, 9, 10, 17, 19, 20, 22, 24, 25 } } } }
    T.check_output{ type = "pool2d", inputs = { X = T.tensor(x, { shape = { 1, 1, 5, 5 } }) },
      attrs = { pooling_type = "avg", ksize = { 2, 2 }, strides = { 2, 2 }, ceil_mode = true },
      expect = { Out = { shape = { 1, 1, 3, 3 }, data = {
        (1 + 2 + 6 + 7) / 4, (3 + 4 + 8 + 9) / 4, (5 + 10) / 2,
        (11 + 12 + 16 + 17) / 4, (13 + 14 + 18 + 19) / 4, (15 + 20) / 2,
        (21 + 22) / 2, (23 + 24) / 2, 25 } } } }
  end)

  it("padding_algorithm SAME and VALID", function()
    -- 5x5, k 2, s 2: SAME gives out 3 with pad sum 1 -> {0, 1} (the extra at the end)
    local x = {}
    for i = 1, 25 do x[i] = i end
    local want, oshape = pool_ref(x, { 1, 1, 5, 5 }, { type = "avg", ksize = { 2, 2 }, strides = { 2, 2 },
      paddings = { 0, 1, 0, 1 } })
    assert.same({ 1, 1, 3, 3 }, oshape)
    T.check_output{ type = "pool2d", inputs = { X = T.tensor(x, { shape = { 1, 1, 5, 5 } }) },
      attrs = { pooling_type = "avg", ksize = { 2, 2 }, strides = { 2, 2 }, paddings = { 3, 3 }, padding_algorithm = "SAME" },
      expect = { Out = { shape = oshape, data = want } } }
    want, oshape = pool_ref(x, { 1, 1, 5, 5 }, { type = "max", ksize = { 2, 2 }, strides = { 2, 2 } })
    T.check_output{ type = "pool2d", inputs = { X = T.tensor(x, { shape = { 1, 1, 5, 5 } }) },
      attrs = { pooling_type = "max", ksize = { 2, 2 }, strides = { 2, 2 }, paddings = { 1, 1 }, padding_algorithm = "VALID" },
      expect = { Out = { shape = oshape, data = want } } }
  end)

  it("global pooling ignores ksize and paddings", function()
    T.check_output{ type = "pool2d", inputs = { X = T.tensor(x33, { shape = { 1, 1, 3, 3 } }) },
      attrs = { pooling_type = "avg", ksize = { 1, 1 }, paddings = { 2, 2 }, global_pooling = true },
      expect = { Out = { shape = { 1, 1, 1, 1 }, data = { 5 } } } }
    T.check_output{ type = "pool2d", inputs = { X = T.tensor(x33, { shape = { 1, 1, 3, 3 } }) },
      attrs = { pooling_type = "max", ksize = { 1, 1 }, global_pooling = true },
      expect = { Out = { shape = { 1, 1, 1, 1 }, data = { 9 } } } }
  end)

  it("adaptive pooling makes ksize the output size", function()
    -- 1x5 rows into 3 bins: [0,2) [1,4) [3,5)
    T.check_output{ type = "pool2d", inputs = { X = T.tensor({ 1, 2, 3, 4, 5 }, { shape = { 1, 1, 1, 5 } }) },
      attrs = { pooling_type = "avg", ksize = { 1, 3 }, adaptive = true },
      expect = { Out = { shape = { 1, 1, 1, 3 }, data = { 1.5, 3, 4.5 } } } }
  end)

  it("handles an empty batch", function()
    local r = T.run{ type = "pool2d", inputs = { X = T.tensor({}, { shape = { 0, 3, 4, 4 } }) },
      attrs = { pooling_type = "max", ksize = { 2, 2 }, strides = { 2, 2 } } }
    assert.same({ 0, 3, 2, 2 }, r.Out[1].shape)
  end)

  it("propagates NaN through max pooling", function()
    local r = T.run{ type = "pool2d", inputs = { X = T.tensor({ 1, 0 / 0, 3, 4 }, { shape = { 1, 1, 2, 2 } }) },
      attrs = { pooling_type = "max", ksize = { 2, 2 } } }
    local v = r.Out[1].data[1]
    assert.is_true(v ~= v)
  end)

  for _, dtype in ipairs({ "float64", "float32" }) do
    describe(dtype, function()
      it("max, strides and paddings", function()
        case({ 2, 3, 7, 6 }, { type = "max", ksize = { 3, 2 }, strides = { 2, 1 }, paddings = { 1, 1 } }, dtype)
      end)
      it("avg exclusive, 4-value paddings", function()
        case({ 2, 2, 6, 7 }, { type = "avg", ksize = { 3, 3 }, strides = { 2, 2 }, paddings = { 1, 0, 2, 1 } }, dtype)
      end)
      it("avg non-exclusive, ceil_mode", function()
        case({ 1, 2, 7, 7 }, { type = "avg", ksize = { 3, 3 }, strides = { 2, 2 }, paddings = { 1, 1 },
          exclusive = false, ceil_mode = true }, dtype)
      end)
      it("max ceil_mode", function()
        case({ 2, 2, 6, 5 }, { type = "max", ksize = { 3, 3 }, strides = { 2, 2 }, ceil_mode = true }, dtype)
      end)
      it("global avg and max", function()
        case({ 2, 3, 4, 5 }, { type = "avg", global_pooling = true }, dtype)
        case({ 2, 3, 4, 5 }, { type = "max", global_pooling = true }, dtype)
      end)
      it("adaptive max and avg", function()
        case({ 1, 2, 7, 5 }, { type = "max", ksize = { 3, 2 }, adaptive = true }, dtype)
        case({ 1, 2, 5, 7 }, { type = "avg", ksize = { 4, 3 }, adaptive = true }, dtype)
      end)
      it("LeNet-sized batch (parallel path)", function()
        case({ 8, 20, 24, 24 }, { type = "max", ksize = { 2, 2 }, strides = { 2, 2 } }, dtype)
      end)
    end)
  end
end)

describe("pool2d gradients", function()
  local function grad(xs, a)
    T.check_grad{ type = "pool2d", inputs = { X = T.tensor(distinct_values(numel(xs), 3), { shape = xs }) },
      attrs = attrs_of(a), wrt = { "X" }, of = { "Out" } }
  end
  it("max with overlapping windows", function()
    grad({ 1, 2, 5, 5 }, { type = "max", ksize = { 3, 3 }, strides = { 1, 2 }, paddings = { 1, 1 } })
  end)
  it("avg exclusive with padding", function()
    grad({ 2, 1, 4, 5 }, { type = "avg", ksize = { 3, 2 }, strides = { 2, 1 }, paddings = { 1, 1 } })
  end)
  it("avg non-exclusive, ceil_mode", function()
    grad({ 1, 2, 5, 5 }, { type = "avg", ksize = { 2, 2 }, strides = { 2, 2 }, exclusive = false, ceil_mode = true })
  end)
  it("global max and adaptive avg", function()
    grad({ 2, 2, 3, 3 }, { type = "max", global_pooling = true })
    grad({ 1, 2, 5, 4 }, { type = "avg", ksize = { 3, 3 }, adaptive = true })
  end)

  it("max routes ties to the first maximum in the window", function()
    -- all four values equal: the whole gradient goes to the top-left element
    local x = T.tensor({ 2, 2, 2, 2 }, { shape = { 1, 1, 2, 2 } })
    local res = T.run{ type = "pool2d_grad",
      inputs = { X = x, Out = T.tensor({ 2 }, { shape = { 1, 1, 1, 1 } }),
                 ["Out@GRAD"] = T.tensor({ 3 }, { shape = { 1, 1, 1, 1 } }) },
      attrs = { pooling_type = "max", ksize = { 2, 2 } }, outputs = { ["X@GRAD"] = 1 } }
    T.assert_close(res["X@GRAD"][1], { shape = { 1, 1, 2, 2 }, data = { 3, 0, 0, 0 } })
  end)

  it("2x2 windows route to the first maximum wherever it is", function()
    -- four 2x2 windows of a 2x8 image: maxima at (0,0) tie, (0,1) tie, (1,0), (1,1)
    local x = { 0, 0, 3, 3, -1, -2, 5, 1,
                0, 0, 1, 2, -0.5, -3, 4, 6 }
    local res = T.run{ type = "pool2d_grad",
      inputs = { X = T.tensor(x, { shape = { 1, 1, 2, 8 } }),
                 Out = T.tensor({ 0, 3, -0.5, 6 }, { shape = { 1, 1, 1, 4 } }),
                 ["Out@GRAD"] = T.tensor({ 1, 2, 3, 4 }, { shape = { 1, 1, 1, 4 } }) },
      attrs = { pooling_type = "max", ksize = { 2, 2 }, strides = { 2, 2 } }, outputs = { ["X@GRAD"] = 1 } }
    T.assert_close(res["X@GRAD"][1], { shape = { 1, 1, 2, 8 }, data = {
      1, 0, 2, 0, 0, 0, 0, 0,
      0, 0, 0, 0, 3, 0, 0, 4 } })
  end)

  it("overlapping max windows accumulate into the shared argmax", function()
    -- 1x3 row {1, 5, 2}, k 2 stride 1: both windows pick 5
    local res = T.run{ type = "pool2d_grad",
      inputs = { X = T.tensor({ 1, 5, 2 }, { shape = { 1, 1, 1, 3 } }),
                 Out = T.tensor({ 5, 5 }, { shape = { 1, 1, 1, 2 } }),
                 ["Out@GRAD"] = T.tensor({ 0.5, 2 }, { shape = { 1, 1, 1, 2 } }) },
      attrs = { pooling_type = "max", ksize = { 1, 2 } }, outputs = { ["X@GRAD"] = 1 } }
    T.assert_close(res["X@GRAD"][1], { shape = { 1, 1, 1, 3 }, data = { 0, 2.5, 0 } })
  end)
end)

describe("pool2d errors", function()
  local function run(xs, attrs)
    return T.run{ type = "pool2d", inputs = { X = T.tensor(distinct_values(numel(xs)), { shape = xs }) }, attrs = attrs }
  end
  it("rejects an unknown pooling_type", function()
    local e = err_of(function() run({ 1, 1, 2, 2 }, { pooling_type = "min", ksize = { 2, 2 } }) end)
    assert.truthy(e:find("pooling_type", 1, true) and e:find("min", 1, true))
  end)
  it("requires pooling_type", function()
    assert.has_error(function() run({ 1, 1, 2, 2 }, { ksize = { 2, 2 } }) end)
  end)
  it("rejects a missing ksize", function()
    local e = err_of(function() run({ 1, 1, 2, 2 }, { pooling_type = "max" }) end)
    assert.truthy(e:find("ksize", 1, true))
  end)
  it("rejects a window larger than the padded input", function()
    local e = err_of(function() run({ 1, 1, 2, 2 }, { pooling_type = "max", ksize = { 3, 3 } }) end)
    assert.truthy(e:find("[1, 1, 2, 2]", 1, true) and e:find("ksize {3, 3}", 1, true))
  end)
  it("rejects non-4-D input", function()
    local e = err_of(function()
      T.run{ type = "pool2d", inputs = { X = T.tensor({ 1, 2, 3, 4 }, { shape = { 1, 4 } }) },
        attrs = { pooling_type = "max", ksize = { 2, 2 } } }
    end)
    assert.truthy(e:find("4-D", 1, true))
  end)
  it("rejects an unknown data_format (NHWC is spec/ops_pool_nhwc_spec.lua)", function()
    local e = err_of(function() run({ 1, 1, 2, 2 }, { pooling_type = "max", ksize = { 2, 2 }, data_format = "NCDHW" }) end)
    assert.truthy(e:find("NCDHW", 1, true))
  end)
end)
