-- max_pool2d_with_index, max_pool3d_with_index, unpool, spp, affine_grid,
-- grid_sampler (and the layers adaptive_pool2d / adaptive_pool3d,
-- affine_grid, grid_sampler): the cases of Fluid 1.8's test_pool_max_op.py,
-- test_unpool_op.py, test_spp_op.py, test_affine_grid_op.py and
-- test_grid_sampler_op.py (shapes reduced), expected values from direct
-- loops in plain Lua, gradients against float64 finite differences.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")

local numel = require("spec.helpers.index").numel
local expect_error = require("spec.helpers.expect_error")

local function fails(spec, want) expect_error(function() T.run(spec) end, want) end

-- max pooling with the flat index of each maximum; shape [N, C, sp...]
-- (nd = #shape - 2); o: ksize, strides, paddings, global, adaptive
local function pool_index_ref(x, shape, o)
  local nd = #shape - 2
  local sp, ks, st, pd, out = {}, {}, {}, {}, {}
  for i = 1, nd do
    sp[i] = shape[i + 2]
    ks[i] = o.global and sp[i] or o.ksize[i]
    st[i] = o.global and 1 or (o.strides and o.strides[i] or 1)
    pd[i] = o.global and 0 or (o.paddings and o.paddings[i] or 0)
    if o.global then out[i] = 1
    elseif o.adaptive then out[i] = ks[i]
    else out[i] = math.floor((sp[i] + 2 * pd[i] - ks[i]) / st[i]) + 1 end
  end
  local function range(i, d)
    if o.adaptive and not o.global then
      return math.floor(i * sp[d] / out[d]), math.ceil((i + 1) * sp[d] / out[d])
    end
    local a = i * st[d] - pd[d]
    return math.max(a, 0), math.min(a + ks[d], sp[d])
  end
  local is, os = numel(sp), numel(out)
  local vals, mask = {}, {}
  local oc = {}
  for m = 0, shape[1] * shape[2] - 1 do
    for oi = 0, os - 1 do
      local r = oi
      for d = nd, 1, -1 do oc[d] = r % out[d]; r = math.floor(r / out[d]) end
      local lo, hi = {}, {}
      for d = 1, nd do lo[d], hi[d] = range(oc[d], d) end
      local best, at = nil, -1
      -- every cell of the window, in row-major order
      local cell = {}
      for d = 1, nd do cell[d] = lo[d] end
      while true do
        local j = 0
        for d = 1, nd do j = j * sp[d] + cell[d] end
        local v = x[m * is + j + 1]
        if best == nil or v > best then best, at = v, j end
        local d = nd
        while d >= 1 do
          cell[d] = cell[d] + 1
          if cell[d] < hi[d] then break end
          cell[d] = lo[d]
          d = d - 1
        end
        if d < 1 then break end
      end
      vals[m * os + oi + 1], mask[m * os + oi + 1] = best, at
    end
  end
  local oshape = { shape[1], shape[2] }
  for d = 1, nd do oshape[d + 2] = out[d] end
  return vals, mask, oshape
end

local function pwi_attrs(o)
  return { ksize = o.ksize, strides = o.strides, paddings = o.paddings, global_pooling = o.global,
           adaptive = o.adaptive }
end

-- test_pool_max_op.py's TestMaxPoolWithIndex_Op and its cases
local PWI_CASES = {
  { name = "3-D ksize 3, stride 1, padding 1", shape = { 2, 3, 4, 4, 4 }, ksize = { 3, 3, 3 }, strides = { 1, 1, 1 },
    paddings = { 1, 1, 1 } },
  { name = "3-D global_pooling (Case1)", shape = { 2, 3, 4, 4, 4 }, ksize = { 3, 3, 3 }, paddings = { 1, 1, 1 },
    global = true },
  { name = "3-D stride 2 (Case2)", shape = { 2, 3, 5, 5, 5 }, ksize = { 3, 3, 3 }, strides = { 2, 2, 2 },
    paddings = { 0, 0, 0 } },
  { name = "3-D uneven window", shape = { 1, 2, 3, 5, 4 }, ksize = { 2, 3, 2 }, strides = { 1, 2, 2 },
    paddings = { 1, 1, 0 } },
  { name = "3-D adaptive (TestCastAdaptive3d)", shape = { 2, 3, 5, 7, 7 }, ksize = { 3, 3, 3 }, adaptive = true },
  { name = "2-D ksize 3, stride 1, padding 1 (Case4)", shape = { 2, 3, 7, 7 }, ksize = { 3, 3 }, strides = { 1, 1 },
    paddings = { 1, 1 } },
  { name = "2-D global_pooling (Case5)", shape = { 2, 3, 7, 7 }, ksize = { 3, 3 }, paddings = { 1, 1 }, global = true },
  { name = "2-D stride 2, padding 0 (Case6)", shape = { 2, 3, 7, 7 }, ksize = { 3, 3 }, strides = { 2, 2 },
    paddings = { 0, 0 } },
  { name = "2-D adaptive (TestCastAdaptive2d)", shape = { 2, 3, 7, 7 }, ksize = { 3, 3 }, adaptive = true },
}

describe("max_pool2d_with_index / max_pool3d_with_index (test_pool_max_op.py)", function()
  for _, o in ipairs(PWI_CASES) do
    it(o.name .. ": Out and Mask against direct loops, float64 and float32", function()
      local optype = #o.shape == 5 and "max_pool3d_with_index" or "max_pool2d_with_index"
      local x = R.symmetric(numel(o.shape), 17)
      local vals, mask, os = pool_index_ref(x, o.shape, o)
      for _, dt in ipairs({ "float64", "float32" }) do
        T.check_output{ type = optype, dtype = dt, atol = 1e-6,
          inputs = { X = T.tensor(x, { shape = o.shape, dtype = dt }) }, attrs = pwi_attrs(o),
          outputs = { Out = 1, Mask = 1 },
          expect = { Out = { shape = os, data = vals }, Mask = { shape = os, data = mask } } }
      end
    end)
  end

  it("gradients against finite differences", function()
    for _, o in ipairs({ PWI_CASES[1], PWI_CASES[4], PWI_CASES[5], PWI_CASES[6], PWI_CASES[9] }) do
      local small = {}
      for k, v in pairs(o) do small[k] = v end
      T.check_grad{ type = #o.shape == 5 and "max_pool3d_with_index" or "max_pool2d_with_index", dtype = "float64",
        inputs = { X = T.tensor(R.symmetric(numel(o.shape), 23), { shape = o.shape, dtype = "float64" }) },
        attrs = pwi_attrs(small), outputs = { Out = 1, Mask = 1 }, wrt = { "X" }, of = { "Out" },
        delta = 1e-5, max_rel = 1e-6 }
    end
  end)

  it("bad inputs are errors naming the variable", function()
    local x4 = T.tensor(R.symmetric(2 * 3 * 9), { shape = { 2, 3, 3, 3 } })
    fails({ type = "max_pool3d_with_index", inputs = { X = x4 }, attrs = { ksize = { 2, 2, 2 } },
            outputs = { Out = 1, Mask = 1 } }, "must be 5-D [N, C, D, H, W], got shape [2, 3, 3, 3]")
    fails({ type = "max_pool2d_with_index", inputs = { X = x4 }, attrs = { ksize = { 2, 2, 2 } },
            outputs = { Out = 1, Mask = 1 } }, "attr ksize must hold 2 values, got 3")
    fails({ type = "max_pool2d_with_index", inputs = { X = x4 }, attrs = { ksize = { 5, 2 } },
            outputs = { Out = 1, Mask = 1 } }, "output would be empty")
  end)
end)

-- Out from X and Indices, by the rule itself
local function unpool_ref(x, idx, shape, ks, st, pd)
  local oh = (shape[3] - 1) * st[1] - 2 * pd[1] + ks[1]
  local ow = (shape[4] - 1) * st[2] - 2 * pd[2] + ks[2]
  local out = {}
  local nc, is, os = shape[1] * shape[2], shape[3] * shape[4], oh * ow
  for i = 1, nc * os do out[i] = 0 end
  for m = 0, nc - 1 do
    for i = 0, is - 1 do out[m * os + idx[m * is + i + 1] + 1] = x[m * is + i + 1] end
  end
  return out, { shape[1], shape[2], oh, ow }
end

describe("unpool (test_unpool_op.py)", function()
  -- the indices of a 2 x 2 / stride 2 max pooling of a [N, C, 4, 6] input
  local function case(n, c, h, w, ks, st, pd)
    local pre = R.symmetric(n * c * h * w, 29)
    local o = { ksize = ks, strides = st, paddings = pd }
    local x, mask, xs = pool_index_ref(pre, { n, c, h, w }, o)
    return x, mask, xs
  end

  it("TestUnpoolOp: ksize 2, stride 2 back onto the pooled input's grid, int32 and int64 Indices", function()
    local x, mask, xs = case(2, 3, 4, 6, { 2, 2 }, { 2, 2 }, { 0, 0 })
    local want, os = unpool_ref(x, mask, xs, { 2, 2 }, { 2, 2 }, { 0, 0 })
    for _, it_dt in ipairs({ "int32", "int64" }) do
      T.check_output{ type = "unpool", dtype = "float64",
        inputs = { X = T.tensor(x, { shape = xs, dtype = "float64" }), Indices = T.tensor(mask, { shape = xs, dtype = it_dt }) },
        attrs = { ksize = { 2, 2 }, strides = { 2, 2 }, paddings = { 0, 0 }, unpooling_type = "max" },
        expect = { Out = { shape = os, data = want } } }
    end
    assert.same({ 2, 3, 4, 6 }, os)
  end)

  it("ksize 3, stride 2, padding 1 (output (in - 1) stride - 2 padding + ksize)", function()
    local x, mask, xs = case(1, 2, 5, 5, { 3, 3 }, { 2, 2 }, { 1, 1 })
    local want, os = unpool_ref(x, mask, xs, { 3, 3 }, { 2, 2 }, { 1, 1 })
    assert.same({ 1, 2, 5, 5 }, os)
    T.check_output{ type = "unpool", dtype = "float32",
      inputs = { X = T.tensor(x, { shape = xs, dtype = "float32" }), Indices = T.tensor(mask, { shape = xs, dtype = "int32" }) },
      attrs = { ksize = { 3, 3 }, strides = { 2, 2 }, paddings = { 1, 1 } },
      expect = { Out = { shape = os, data = want } }, atol = 1e-6 }
  end)

  it("Paddle 2.x's output_size replaces the computed size", function()
    -- a 2 x 2 / stride 2 pooling of a [1, 2, 5, 5] input: unpooled back onto 5 x 5
    local x, mask, xs = case(1, 2, 5, 5, { 2, 2 }, { 2, 2 }, { 0, 0 })
    local want = {}
    for i = 1, 50 do want[i] = 0 end
    for m = 0, 1 do
      for i = 0, 3 do want[m * 25 + mask[m * 4 + i + 1] + 1] = x[m * 4 + i + 1] end
    end
    T.check_output{ type = "unpool", dtype = "float64",
      inputs = { X = T.tensor(x, { shape = xs, dtype = "float64" }), Indices = T.tensor(mask, { shape = xs, dtype = "int32" }) },
      attrs = { ksize = { 2, 2 }, strides = { 2, 2 }, output_size = { 5, 5 } },
      expect = { Out = { shape = { 1, 2, 5, 5 }, data = want } } }
  end)

  it("gradient against finite differences", function()
    local x, mask, xs = case(2, 2, 4, 4, { 2, 2 }, { 2, 2 }, { 0, 0 })
    T.check_grad{ type = "unpool", dtype = "float64",
      inputs = { X = T.tensor(x, { shape = xs, dtype = "float64" }), Indices = T.tensor(mask, { shape = xs, dtype = "int32" }) },
      attrs = { ksize = { 2, 2 }, strides = { 2, 2 } }, wrt = { "X" }, of = { "Out" }, delta = 1e-5, max_rel = 1e-6 }
  end)

  it("an index outside the output map is an error naming Indices", function()
    local x = T.tensor({ 1, 2, 3, 4 }, { shape = { 1, 1, 2, 2 }, dtype = "float32" })
    fails({ type = "unpool", inputs = { X = x, Indices = T.tensor({ 0, 1, 16, 2 }, { shape = { 1, 1, 2, 2 }, dtype = "int32" }) },
            attrs = { ksize = { 2, 2 }, strides = { 2, 2 } } }, "value 16 at 2 is outside the output map of 16 cells")
    fails({ type = "unpool", inputs = { X = x, Indices = T.tensor({ 0, 1, 2, 3 }, { shape = { 1, 1, 2, 2 }, dtype = "float32" }) },
            attrs = { ksize = { 2, 2 }, strides = { 2, 2 } } }, "must be int32 or int64, it is float32")
  end)
end)

-- spp by its definition: level p pools 2^p x 2^p bins of size ceil(H / 2^p)
local function spp_ref(x, shape, height, ptype)
  local N, C, H, W = shape[1], shape[2], shape[3], shape[4]
  local rows = {}
  for b = 0, N - 1 do rows[b] = {} end
  for p = 0, height - 1 do
    local bins = 2 ^ p
    local kh, kw = math.ceil(H / bins), math.ceil(W / bins)
    local ph, pw = math.floor((kh * bins - H + 1) / 2), math.floor((kw * bins - W + 1) / 2)
    for b = 0, N - 1 do
      for c = 0, C - 1 do
        for by = 0, bins - 1 do
          for bx = 0, bins - 1 do
            local h0, h1 = math.max(by * kh - ph, 0), math.min(by * kh - ph + kh, H)
            local w0, w1 = math.max(bx * kw - pw, 0), math.min(bx * kw - pw + kw, W)
            local best, s = nil, 0
            for h = h0, h1 - 1 do
              for w = w0, w1 - 1 do
                local v = x[((b * C + c) * H + h) * W + w + 1]
                s = s + v
                if best == nil or v > best then best = v end
              end
            end
            local r = rows[b]
            -- a bin wholly in the padding (H = 5, 4 bins: the first) is 0
            if best == nil then r[#r + 1] = 0
            else r[#r + 1] = ptype == "max" and best or s / ((h1 - h0) * (w1 - w0)) end
          end
        end
      end
    end
  end
  local out = {}
  for b = 0, N - 1 do for _, v in ipairs(rows[b]) do out[#out + 1] = v end end
  return out, { N, #rows[0] }
end

describe("spp (test_spp_op.py)", function()
  local CASES = {
    { name = "TestSppOp: [3, 2, 4, 4], height 3, max", shape = { 3, 2, 4, 4 }, height = 3, type = "max" },
    { name = "TestCase2: avg", shape = { 3, 2, 4, 4 }, height = 3, type = "avg" },
    { name = "odd sizes with padding: [2, 3, 5, 7], height 3, max", shape = { 2, 3, 5, 7 }, height = 3, type = "max" },
    { name = "odd sizes with padding: avg", shape = { 2, 3, 5, 7 }, height = 2, type = "avg" },
  }
  for _, o in ipairs(CASES) do
    it(o.name, function()
      local x = R.symmetric(numel(o.shape), 31)
      local want, os = spp_ref(x, o.shape, o.height, o.type)
      assert.equal(o.shape[2] * (4 ^ o.height - 1) / 3, os[2])
      for _, dt in ipairs({ "float64", "float32" }) do
        T.check_output{ type = "spp", dtype = dt, atol = 1e-6,
          inputs = { X = T.tensor(x, { shape = o.shape, dtype = dt }) },
          attrs = { pyramid_height = o.height, pooling_type = o.type },
          expect = { Out = { shape = os, data = want } } }
      end
      T.check_grad{ type = "spp", dtype = "float64",
        inputs = { X = T.tensor(x, { shape = o.shape, dtype = "float64" }) },
        attrs = { pyramid_height = o.height, pooling_type = o.type }, wrt = { "X" }, delta = 1e-5, max_rel = 1e-6 }
    end)
  end

  it("pooling_type is required and checked", function()
    local x = T.tensor(R.symmetric(16), { shape = { 1, 1, 4, 4 } })
    fails({ type = "spp", inputs = { X = x }, attrs = { pyramid_height = 2, pooling_type = "sum" } }, "pooling_type")
    fails({ type = "spp", inputs = { X = T.tensor(R.symmetric(4), { shape = { 4 } }) },
            attrs = { pyramid_height = 2, pooling_type = "max" } }, "must be 4-D [N, C, H, W], it has rank 1")
  end)
end)

describe("layers.adaptive_pool2d / layers.adaptive_pool3d", function()
  local oar = require("oar")
  local layers = oar.layers

  local function run(xshape, build) return require("spec.helpers.layer_run").run_symmetric(xshape, 37, build) end

  it("adaptive_pool2d with require_index: max_pool2d_with_index's Out and Mask", function()
    local res, x, main = run({ 2, 3, 7, 5 }, function(v)
      return layers.adaptive_pool2d{ input = v, pool_size = { 3, 2 }, require_index = true }
    end)
    local vals, mask, os = pool_index_ref(x, { 2, 3, 7, 5 }, { ksize = { 3, 2 }, adaptive = true })
    T.assert_close(res[1], { data = vals, shape = os }, 1e-12)
    T.assert_close(res[2], { data = mask, shape = os }, 0)
    assert.equal("max_pool2d_with_index", main:global_block():ops()[1].type)
  end)

  it("adaptive_pool3d avg: pool3d with adaptive windows", function()
    local res, x = run({ 1, 2, 5, 4, 3 }, function(v)
      return layers.adaptive_pool3d{ input = v, pool_size = { 2, 3, 2 }, pool_type = "avg" }
    end)
    -- the adaptive window's mean, computed here
    local want, sp, out = {}, { 5, 4, 3 }, { 2, 3, 2 }
    for m = 0, 1 do
      for a = 0, 1 do for b = 0, 2 do for c = 0, 1 do
        local lo, hi = {}, {}
        for d, i in ipairs({ a, b, c }) do
          lo[d], hi[d] = math.floor(i * sp[d] / out[d]), math.ceil((i + 1) * sp[d] / out[d])
        end
        local s, n = 0, 0
        for z = lo[1], hi[1] - 1 do for y = lo[2], hi[2] - 1 do for w = lo[3], hi[3] - 1 do
          s, n = s + x[m * 60 + (z * 4 + y) * 3 + w + 1], n + 1
        end end end
        want[#want + 1] = s / n
      end end end
    end
    T.assert_close(res[1], { data = want, shape = { 1, 2, 2, 3, 2 } }, 1e-12)
  end)

  it("reject bad arguments with the layer's name", function()
    oar.program_guard(oar.Program(), oar.Program(), function()
      local v = layers.data{ name = "x", shape = { 3, 4, 4 }, dtype = "float32" }
      assert.has_error(function() layers.adaptive_pool2d{ input = v, pool_size = 2, pool_type = "avg",
                                                          require_index = true } end,
        "adaptive_pool2d: require_index is only for pool_type \"max\", got \"avg\"")
      assert.has_error(function() layers.adaptive_pool3d{ input = v, pool_size = 2 } end,
        "adaptive_pool3d: 'input' must be 5-D, got shape [-1, 3, 4, 4]")
    end)
  end)
end)

-- ---- affine_grid, grid_sampler -------------------------------------------------------
local function lin(i, n, align)
  if n == 1 then return 0 end
  local v = -1 + 2 * i / (n - 1)
  if align then return v end
  return v * (n - 1) / n
end

local function affine_grid_ref(theta, N, H, W, align)
  local out = {}
  for n = 0, N - 1 do
    local t = {}
    for j = 1, 6 do t[j] = theta[n * 6 + j] end
    for h = 0, H - 1 do
      for w = 0, W - 1 do
        local x, y = lin(w, W, align), lin(h, H, align)
        out[#out + 1] = t[1] * x + t[2] * y + t[3]
        out[#out + 1] = t[4] * x + t[5] * y + t[6]
      end
    end
  end
  return out
end

-- bilinear (or nearest) sampling with zeros (or border) outside
local function grid_sample_ref(x, xs, grid, OH, OW, o)
  local N, C, H, W = xs[1], xs[2], xs[3], xs[4]
  local align = o.align_corners ~= false
  local out = {}
  local function px_of(g, n)
    if align then return (g + 1) * (n - 1) / 2 end
    return ((g + 1) * n - 1) / 2
  end
  local function at(n, c, yy, xx)
    if xx < 0 or xx >= W or yy < 0 or yy >= H then return 0 end
    return x[((n * C + c) * H + yy) * W + xx + 1]
  end
  for n = 0, N - 1 do
    for c = 0, C - 1 do
      for i = 0, OH * OW - 1 do
        local gx, gy = grid[(n * OH * OW + i) * 2 + 1], grid[(n * OH * OW + i) * 2 + 2]
        local px, py = px_of(gx, W), px_of(gy, H)
        -- Paddle's reflection: mirror at lo and hi (given doubled), then clamp
        local function reflect(v, lo2, hi2)
          if lo2 == hi2 then return 0 end
          local mn, span = lo2 / 2, (hi2 - lo2) / 2
          v = math.abs(v - mn)
          local extra, flips = math.fmod(v, span), math.floor(v / span)
          if flips % 2 == 0 then return extra + mn end
          return span - extra + mn
        end
        if o.padding_mode == "reflection" then
          if align then px, py = reflect(px, 0, 2 * (W - 1)), reflect(py, 0, 2 * (H - 1))
          else px, py = reflect(px, -1, 2 * W - 1), reflect(py, -1, 2 * H - 1) end
        end
        if o.padding_mode == "border" or o.padding_mode == "reflection" then
          px, py = math.min(math.max(px, 0), W - 1), math.min(math.max(py, 0), H - 1)
        end
        local v
        if o.mode == "nearest" then
          local function rne(z)
            local f = math.floor(z)
            local d = z - f
            if d > 0.5 or (d == 0.5 and f % 2 == 1) then return f + 1 end
            return f
          end
          v = at(n, c, rne(py), rne(px))
        else
          local fx, fy = math.floor(px), math.floor(py)
          local ex, ey = px - fx, py - fy
          v = at(n, c, fy, fx) * (1 - ex) * (1 - ey) + at(n, c, fy, fx + 1) * ex * (1 - ey) +
              at(n, c, fy + 1, fx) * (1 - ex) * ey + at(n, c, fy + 1, fx + 1) * ex * ey
        end
        out[(n * C + c) * OH * OW + i + 1] = v
      end
    end
  end
  return out
end

describe("affine_grid (test_affine_grid_op.py)", function()
  it("TestAffineGridOp: theta [3, 2, 3], output_shape {3, 2, 5, 7} by attr and by OutputShape", function()
    local theta = R.symmetric(18, 41)
    local want = affine_grid_ref(theta, 3, 5, 7, true)
    for _, dt in ipairs({ "float64", "float32" }) do
      T.check_output{ type = "affine_grid", dtype = dt, atol = 1e-6,
        inputs = { Theta = T.tensor(theta, { shape = { 3, 2, 3 }, dtype = dt }) },
        attrs = { output_shape = { 3, 2, 5, 7 } }, outputs = { Output = 1 },
        expect = { Output = { shape = { 3, 5, 7, 2 }, data = want } } }
    end
    T.check_output{ type = "affine_grid", dtype = "float64",
      inputs = { Theta = T.tensor(theta, { shape = { 3, 2, 3 }, dtype = "float64" }),
                 OutputShape = T.tensor({ 3, 2, 5, 7 }, { dtype = "int32" }) },
      outputs = { Output = 1 }, expect = { Output = { shape = { 3, 5, 7, 2 }, data = want } } }
  end)

  it("align_corners = false samples the pixel centres", function()
    local theta = R.symmetric(12, 43)
    T.check_output{ type = "affine_grid", dtype = "float64",
      inputs = { Theta = T.tensor(theta, { shape = { 2, 2, 3 }, dtype = "float64" }) },
      attrs = { output_shape = { 2, 3, 4, 3 }, align_corners = false }, outputs = { Output = 1 },
      expect = { Output = { shape = { 2, 4, 3, 2 }, data = affine_grid_ref(theta, 2, 4, 3, false) } } }
  end)

  it("gradient against finite differences", function()
    T.check_grad{ type = "affine_grid", dtype = "float64",
      inputs = { Theta = T.tensor(R.symmetric(12, 47), { shape = { 2, 2, 3 }, dtype = "float64" }) },
      attrs = { output_shape = { 2, 1, 3, 4 } }, outputs = { Output = 1 }, wrt = { "Theta" }, of = { "Output" },
      delta = 1e-5, max_rel = 1e-7 }
  end)

  it("bad inputs name the variable", function()
    fails({ type = "affine_grid", inputs = { Theta = T.tensor(R.symmetric(8), { shape = { 2, 2, 2 } }) },
            attrs = { output_shape = { 2, 1, 3, 3 } }, outputs = { Output = 1 } }, "must be [N, 2, 3], got shape [2, 2, 2]")
    fails({ type = "affine_grid", inputs = { Theta = T.tensor(R.symmetric(6), { shape = { 1, 2, 3 } }) },
            outputs = { Output = 1 } }, "attr output_shape must hold 4 values")
  end)
end)

describe("grid_sampler (test_grid_sampler_op.py)", function()
  -- x [2, 3, 5, 6], the grid of an affine map of [2, 4, 7] points (some outside)
  local xs = { 2, 3, 5, 6 }
  local x = R.symmetric(numel(xs), 53)
  local grid = affine_grid_ref(R.symmetric(12, 59, 1.2), 2, 4, 7, true)

  for _, o in ipairs({ { name = "bilinear, zeros, align_corners (Fluid 1.8)" },
                       { name = "align_corners = false", align_corners = false },
                       { name = "border padding", padding_mode = "border" },
                       { name = "reflection padding, align_corners", padding_mode = "reflection" },
                       { name = "reflection padding, no align_corners", padding_mode = "reflection", align_corners = false },
                       { name = "nearest", mode = "nearest" } }) do
    it(o.name .. ": against direct sampling", function()
      local want = grid_sample_ref(x, xs, grid, 4, 7, o)
      for _, dt in ipairs({ "float64", "float32" }) do
        T.check_output{ type = "grid_sampler", dtype = dt, atol = 1e-5,
          inputs = { X = T.tensor(x, { shape = xs, dtype = dt }), Grid = T.tensor(grid, { shape = { 2, 4, 7, 2 }, dtype = dt }) },
          attrs = { align_corners = o.align_corners, padding_mode = o.padding_mode, mode = o.mode },
          outputs = { Output = 1 }, expect = { Output = { shape = { 2, 3, 4, 7 }, data = want } } }
      end
    end)
  end

  it("gradients of X and Grid against finite differences", function()
    for _, o in ipairs({ {}, { align_corners = false }, { padding_mode = "border" },
                         { padding_mode = "reflection" }, { padding_mode = "reflection", align_corners = false } }) do
      T.check_grad{ type = "grid_sampler", dtype = "float64",
        inputs = { X = T.tensor(x, { shape = xs, dtype = "float64" }), Grid = T.tensor(grid, { shape = { 2, 4, 7, 2 }, dtype = "float64" }) },
        attrs = o, outputs = { Output = 1 }, wrt = { "X", "Grid" }, of = { "Output" }, delta = 1e-6, max_rel = 1e-5 }
    end
  end)

  it("a grid of another batch size is an error naming Grid", function()
    fails({ type = "grid_sampler", inputs = { X = T.tensor(x, { shape = xs }),
            Grid = T.tensor(R.symmetric(2 * 2 * 2), { shape = { 1, 2, 2, 2 } }) }, outputs = { Output = 1 } },
      "must be [N, OH, OW, 2] with X's N, got shape [1, 2, 2, 2]")
  end)
end)

describe("layers.affine_grid / layers.grid_sampler", function()
  local oar = require("oar")
  local layers = oar.layers

  it("an affine grid sampled from an image: values as the ops' references", function()
    local main, startup = oar.Program(), oar.Program()
    local out, grid
    oar.program_guard(main, startup, function()
      local img = layers.data{ name = "img", shape = { 2, 2, 4, 5 }, dtype = "float64", append_batch_size = false }
      local th = layers.data{ name = "th", shape = { 2, 2, 3 }, dtype = "float64", append_batch_size = false }
      grid = layers.affine_grid(th, { 2, 2, 3, 4 })
      out = layers.grid_sampler{ x = img, grid = grid }
    end)
    local xv, tv = R.symmetric(80, 61), R.symmetric(12, 67)
    local function tensor(v, shape)
      local t = oar.Tensor{ shape = shape, dtype = "float64" }
      local p = t:data()
      for i = 1, #v do p[i - 1] = v[i] end
      return t
    end
    local exe = oar.Executor(oar.CPUPlace())
    exe:run(startup)
    local got = exe:run(main, { feed = { img = tensor(xv, { 2, 2, 4, 5 }), th = tensor(tv, { 2, 2, 3 }) },
                                fetch_list = { grid, out } })
    local g = affine_grid_ref(tv, 2, 3, 4, true)
    local want = grid_sample_ref(xv, { 2, 2, 4, 5 }, g, 3, 4, {})
    local flat = {}
    for i = 1, 48 do flat[i] = got[2]:data()[i - 1] end
    T.assert_close({ data = flat, shape = got[2]:shape() }, { data = want, shape = { 2, 2, 3, 4 } }, 1e-12)
    assert.same({ 2, 3, 4, 2 }, got[1]:shape())
  end)

  it("reject bad arguments with the layer's name", function()
    oar.program_guard(oar.Program(), oar.Program(), function()
      local th = layers.data{ name = "th", shape = { 2, 3 }, dtype = "float32" }
      assert.has_error(function() layers.affine_grid{ theta = th, out_shape = { 1, 2, 3 } } end,
        "affine_grid: 'out_shape' must be an integer or a list of 4 integers, got {1, 2, 3}")
      assert.has_error(function() layers.grid_sampler{ x = th, grid = th } end,
        "grid_sampler: 'x' must be 4-D, got shape [-1, 2, 3]")
    end)
  end)
end)

describe("grid_sampler with non-finite points", function()
  it("a NaN or huge grid point samples nothing (0), without crashing", function()
    local res = T.run{ type = "grid_sampler", dtype = "float64",
      inputs = { X = T.tensor(R.symmetric(8), { shape = { 1, 2, 2, 2 }, dtype = "float64" }),
                 Grid = T.tensor({ 0 / 0, 0.5, 1e300, -1e300, 0, 0 }, { shape = { 1, 1, 3, 2 }, dtype = "float64" }) },
      outputs = { Output = 1 } }
    local d = res.Output[1].data
    assert.equal(0, d[1])
    assert.equal(0, d[2])
    assert.is_true(d[3] ~= 0)
  end)
end)
