-- max_pool2d_with_index, max_pool3d_with_index, unpool, spp (and the
-- layers adaptive_pool2d / adaptive_pool3d): the cases of Fluid 1.8's
-- test_pool_max_op.py, test_unpool_op.py and test_spp_op.py (shapes
-- reduced), expected values from direct loops in plain Lua, gradients
-- against float64 finite differences.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")

local function numel(s)
  local k = 1
  for _, v in ipairs(s) do k = k * v end
  return k
end

local function fails(spec, want)
  local ok, err = pcall(T.run, spec)
  assert.is_false(ok)
  assert.matches(want, tostring(err), 1, true)
end

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

  local function run(xshape, build)
    local main, startup = oar.Program(), oar.Program()
    local outs
    oar.program_guard(main, startup, function()
      local v = layers.data{ name = "x", shape = xshape, dtype = "float64", append_batch_size = false }
      outs = { build(v) }
    end)
    local x = R.symmetric(numel(xshape), 37)
    local t = oar.Tensor{ shape = xshape, dtype = "float64" }
    local p = t:data()
    for i = 1, #x do p[i - 1] = x[i] end
    local exe = oar.Executor(oar.CPUPlace())
    exe:run(startup)
    local got = exe:run(main, { feed = { x = t }, fetch_list = outs })
    local res = {}
    for i, g in ipairs(got) do
      local flat, d = {}, g:data()
      for j = 1, numel(g:shape()) do flat[j] = tonumber(d[j - 1]) end
      res[i] = { data = flat, shape = g:shape() }
    end
    return res, x, main
  end

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
        if o.padding_mode == "border" then
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
    for _, o in ipairs({ {}, { align_corners = false }, { padding_mode = "border" } }) do
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
    local main, startup = oar.Program(), oar.Program()
    local out
    oar.program_guard(main, startup, function()
      local v = layers.data{ name = "x", shape = xshape, dtype = "float64", append_batch_size = false }
      out = build(v)
    end)
    local x = R.symmetric(numel(xshape), 97)
    local t = oar.Tensor{ shape = xshape, dtype = "float64" }
    local p = t:data()
    for i = 1, #x do p[i - 1] = x[i] end
    local exe = oar.Executor(oar.CPUPlace())
    exe:run(startup)
    local got = exe:run(main, { feed = { x = t }, fetch_list = { out } })[1]
    local flat, d = {}, got:data()
    for i = 1, numel(got:shape()) do flat[i] = d[i - 1] end
    return { data = flat, shape = got:shape() }, x, main
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
        "image_resize: 'resample' must be one of BILINEAR, NEAREST, BICUBIC, TRILINEAR, got string 'LANCZOS'")
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
