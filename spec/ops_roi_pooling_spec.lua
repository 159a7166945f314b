-- roi_pool, roi_align and psroi_pool with their layers: the cases of Fluid
-- 1.8's test_roi_pool_op.py, test_roi_align_op.py and test_psroi_pool_op.py
-- (ROIs from a fixed generator instead of numpy's), expected values from
-- Paddle's geometry written out in plain Lua, gradients against float64
-- finite differences.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")

local function fails(spec, want)
  local ok, err = pcall(T.run, spec)
  assert.is_false(ok)
  assert.matches(want, tostring(err), 1, true)
end

local function round(v) return v >= 0 and math.floor(v + 0.5) or -math.floor(-v + 0.5) end
local function clamp(v, lo, hi) return math.max(lo, math.min(hi, v)) end

-- batch images with 1, 2, ... ROIs each (as the Python tests make them):
-- integer corners in the input scale, x2 >= x1 + pw, y2 >= y1 + ph
local function make_rois(batch, h, w, scale, ph, pw, seed)
  local u = R.uniform(batch * (batch + 1) * 2, seed or 13, 0, 1)
  local k = 0
  local function rint(lo, hi)
    k = k + 1
    return lo + math.floor(u[k] * (hi - lo + 1))
  end
  local rois, ids, lod = {}, {}, { 0 }
  for b = 0, batch - 1 do
    for _ = 1, b + 1 do
      local x1 = rint(0, math.floor(w / scale) - pw)
      local y1 = rint(0, math.floor(h / scale) - ph)
      local x2 = rint(x1 + pw, math.floor(w / scale))
      local y2 = rint(y1 + ph, math.floor(h / scale))
      for _, v in ipairs({ x1, y1, x2, y2 }) do rois[#rois + 1] = v end
      ids[#ids + 1] = b
    end
    lod[#lod + 1] = #ids
  end
  return rois, ids, lod
end

local function roi_pool_ref(x, d, rois, ids, scale, PH, PW)
  local C, H, W = d[2], d[3], d[4]
  local out, arg = {}, {}
  for n = 0, #ids - 1 do
    local sw, sh = round(rois[n * 4 + 1] * scale), round(rois[n * 4 + 2] * scale)
    local ew, eh = round(rois[n * 4 + 3] * scale), round(rois[n * 4 + 4] * scale)
    local rh, rw = math.max(eh - sh + 1, 1), math.max(ew - sw + 1, 1)
    local bh, bw = rh / PH, rw / PW
    for c = 0, C - 1 do
      local base = (ids[n + 1] * C + c) * H * W
      for ph = 0, PH - 1 do
        for pw = 0, PW - 1 do
          local hs = clamp(math.floor(ph * bh) + sh, 0, H)
          local he = clamp(math.ceil((ph + 1) * bh) + sh, 0, H)
          local ws = clamp(math.floor(pw * bw) + sw, 0, W)
          local we = clamp(math.ceil((pw + 1) * bw) + sw, 0, W)
          local best, a = 0, -1
          if he > hs and we > ws then
            best = -math.huge
            for hh = hs, he - 1 do
              for ww = ws, we - 1 do
                if x[base + hh * W + ww + 1] > best then best, a = x[base + hh * W + ww + 1], hh * W + ww end
              end
            end
          end
          out[#out + 1], arg[#arg + 1] = best, a
        end
      end
    end
  end
  return out, arg
end

local function bilinear(xc, H, W, y, x)
  if y < -1 or y > H or x < -1 or x > W then return 0 end
  y, x = math.max(y, 0), math.max(x, 0)
  local yl, xl = math.floor(y), math.floor(x)
  local yh, xh
  if yl >= H - 1 then yl, yh, y = H - 1, H - 1, H - 1 else yh = yl + 1 end
  if xl >= W - 1 then xl, xh, x = W - 1, W - 1, W - 1 else xh = xl + 1 end
  local ly, lx = y - yl, x - xl
  local v = function(a, b) return xc(a * W + b) end
  return (1 - ly) * (1 - lx) * v(yl, xl) + (1 - ly) * lx * v(yl, xh) + ly * (1 - lx) * v(yh, xl) + ly * lx * v(yh, xh)
end

local function roi_align_ref(x, d, rois, ids, scale, PH, PW, ratio)
  local C, H, W = d[2], d[3], d[4]
  local out = {}
  for n = 0, #ids - 1 do
    local xmin, ymin = rois[n * 4 + 1] * scale, rois[n * 4 + 2] * scale
    local rw = math.max(rois[n * 4 + 3] * scale - xmin, 1)
    local rh = math.max(rois[n * 4 + 4] * scale - ymin, 1)
    local bh, bw = rh / PH, rw / PW
    local gh = ratio > 0 and ratio or math.ceil(rh / PH)
    local gw = ratio > 0 and ratio or math.ceil(rw / PW)
    local count = math.max(gh * gw, 1)
    for c = 0, C - 1 do
      local base = (ids[n + 1] * C + c) * H * W
      local xc = function(i) return x[base + i + 1] end
      for ph = 0, PH - 1 do
        for pw = 0, PW - 1 do
          local s = 0
          for iy = 0, gh - 1 do
            local y = ymin + ph * bh + (iy + 0.5) * bh / gh
            for ix = 0, gw - 1 do
              s = s + bilinear(xc, H, W, y, xmin + pw * bw + (ix + 0.5) * bw / gw)
            end
          end
          out[#out + 1] = s / count
        end
      end
    end
  end
  return out
end

local function psroi_ref(x, d, rois, ids, scale, OC, PH, PW)
  local C, H, W = d[2], d[3], d[4]
  local out = {}
  for n = 0, #ids - 1 do
    local sw, sh = round(rois[n * 4 + 1]) * scale, round(rois[n * 4 + 2]) * scale
    local ew, eh = (round(rois[n * 4 + 3]) + 1) * scale, (round(rois[n * 4 + 4]) + 1) * scale
    local rh, rw = math.max(eh - sh, 0.1), math.max(ew - sw, 0.1)
    local bh, bw = rh / PH, rw / PW
    for c = 0, OC - 1 do
      for ph = 0, PH - 1 do
        for pw = 0, PW - 1 do
          local hs = clamp(math.floor(bh * ph + sh), 0, H)
          local he = clamp(math.ceil(bh * (ph + 1) + sh), 0, H)
          local ws = clamp(math.floor(bw * pw + sw), 0, W)
          local we = clamp(math.ceil(bw * (pw + 1) + sw), 0, W)
          local base = (ids[n + 1] * C + (c * PH + ph) * PW + pw) * H * W
          local s = 0
          for hh = hs, he - 1 do
            for ww = ws, we - 1 do s = s + x[base + hh * W + ww + 1] end
          end
          out[#out + 1] = (he <= hs or we <= ws) and 0 or s / ((he - hs) * (we - ws))
        end
      end
    end
  end
  return out
end

local function numel(s)
  local k = 1
  for _, v in ipairs(s) do k = k * v end
  return k
end

describe("roi_pool (test_roi_pool_op.py)", function()
  -- batch 3, channels 3, 6 x 4, spatial_scale 1/4, pooled 2 x 2
  local d, scale, PH, PW = { 3, 3, 6, 4 }, 0.25, 2, 2
  local x = R.symmetric(numel(d), 17)
  local rois, ids, lod = make_rois(3, 6, 4, scale, PH, PW)
  local out, arg = roi_pool_ref(x, d, rois, ids, scale, PH, PW)
  local oshape = { #ids, 3, PH, PW }

  it("TestROIPoolOp: Out and Argmax, float64 and float32; the LoD or RoisLod gives the images", function()
    for _, dt in ipairs({ "float64", "float32" }) do
      T.check_output{ type = "roi_pool", dtype = dt,
        inputs = { X = T.tensor(x, { shape = d, dtype = dt }),
                   ROIs = T.tensor(rois, { shape = { #ids, 4 }, dtype = dt, lod = { lod } }) },
        attrs = { spatial_scale = scale, pooled_height = PH, pooled_width = PW },
        expect = { Out = { shape = oshape, data = out }, Argmax = { shape = oshape, data = arg } } }
    end
    -- TestROIPoolInLodOp: RoisLod, the ROIs without a LoD
    T.check_output{ type = "roi_pool", dtype = "float64",
      inputs = { X = T.tensor(x, { shape = d }), ROIs = T.tensor(rois, { shape = { #ids, 4 } }),
                 RoisLod = T.tensor(lod, { dtype = "int64" }) },
      attrs = { spatial_scale = scale, pooled_height = PH, pooled_width = PW },
      expect = { Out = { shape = oshape, data = out } } }
  end)

  it("larger bins and an ROI partly outside X", function()
    local r2 = { 0, 0, 15, 23, 8, 12, 40, 40 }
    local o2, a2 = roi_pool_ref(x, d, r2, { 0, 2 }, scale, 3, 2)
    T.check_output{ type = "roi_pool", dtype = "float64",
      inputs = { X = T.tensor(x, { shape = d }), ROIs = T.tensor(r2, { shape = { 2, 4 }, lod = { { 0, 1, 1, 2 } } }) },
      attrs = { spatial_scale = scale, pooled_height = 3, pooled_width = 2 },
      expect = { Out = { shape = { 2, 3, 3, 2 }, data = o2 }, Argmax = { shape = { 2, 3, 3, 2 }, data = a2 } } }
  end)

  it("gradient against finite differences", function()
    T.check_grad{ type = "roi_pool", dtype = "float64",
      inputs = { X = T.tensor(x, { shape = d }), ROIs = T.tensor(rois, { shape = { #ids, 4 }, lod = { lod } }) },
      attrs = { spatial_scale = scale, pooled_height = PH, pooled_width = PW },
      wrt = { "X" }, delta = 1e-6, max_rel = 1e-6 }
  end)

  it("rejects ROIs without images and a wrong image count, naming the variables", function()
    fails({ type = "roi_pool", inputs = { X = T.tensor(x, { shape = d }), ROIs = T.tensor(rois, { shape = { #ids, 4 } }) } },
          "ROIs ('in_ROIs_1') has no LoD and no RoisLod is given")
    fails({ type = "roi_pool", inputs = { X = T.tensor(x, { shape = d }),
                                          ROIs = T.tensor(rois, { shape = { #ids, 4 }, lod = { { 0, 2, 6 } } }) } },
          "the LoD of ROIs has 2 sequences of ROIs, expected one per image of X (3)")
    fails({ type = "roi_pool", inputs = { X = T.tensor(x, { shape = d }),
                                          ROIs = T.tensor({ 1, 2, 3 }, { shape = { 1, 3 }, lod = { { 0, 1 } } }) } },
          "ROIs ('in_ROIs_1') must be 2-D [R, 4] (x1, y1, x2, y2), got shape [1, 3]")
  end)
end)

describe("roi_align (test_roi_align_op.py)", function()
  -- batch 3, channels 3, 8 x 6, spatial_scale 1/2, pooled 2 x 2, sampling_ratio -1
  local d, scale = { 3, 3, 8, 6 }, 0.5
  local x = R.uniform(numel(d), 19, 0, 1)
  local rois, ids, lod = make_rois(3, 8, 6, scale, 2, 2, 29)

  for _, o in ipairs({ { name = "TestROIAlignOp: sampling_ratio -1", ph = 2, pw = 2, ratio = -1 },
                       { name = "sampling_ratio 2, pooled 3 x 2", ph = 3, pw = 2, ratio = 2 },
                       { name = "TestROIAlignInLodOp: RoisLod", ph = 2, pw = 2, ratio = -1, roislod = true } }) do
    it(o.name, function()
      local want = roi_align_ref(x, d, rois, ids, scale, o.ph, o.pw, o.ratio)
      for _, dt in ipairs({ "float64", "float32" }) do
        local inputs = { X = T.tensor(x, { shape = d, dtype = dt }),
                         ROIs = T.tensor(rois, { shape = { #ids, 4 }, dtype = dt, lod = not o.roislod and { lod } or nil }) }
        if o.roislod then inputs.RoisLod = T.tensor(lod, { dtype = "int64" }) end
        T.check_output{ type = "roi_align", dtype = dt, atol = dt == "float32" and 1e-5 or 1e-12, inputs = inputs,
          attrs = { spatial_scale = scale, pooled_height = o.ph, pooled_width = o.pw, sampling_ratio = o.ratio },
          expect = { Out = { shape = { #ids, 3, o.ph, o.pw }, data = want } } }
      end
    end)
  end

  it("an ROI reaching past X samples zeros there", function()
    local r2 = { -4, -3, 20, 30 }
    local want = roi_align_ref(x, d, r2, { 1 }, scale, 2, 3, 2)
    T.check_output{ type = "roi_align", dtype = "float64",
      inputs = { X = T.tensor(x, { shape = d }), ROIs = T.tensor(r2, { shape = { 1, 4 }, lod = { { 0, 0, 1, 1 } } }) },
      attrs = { spatial_scale = scale, pooled_height = 2, pooled_width = 3, sampling_ratio = 2 },
      expect = { Out = { shape = { 1, 3, 2, 3 }, data = want } } }
  end)

  it("gradient against finite differences", function()
    T.check_grad{ type = "roi_align", dtype = "float64",
      inputs = { X = T.tensor(x, { shape = d }), ROIs = T.tensor(rois, { shape = { #ids, 4 }, lod = { lod } }) },
      attrs = { spatial_scale = scale, pooled_height = 2, pooled_width = 2, sampling_ratio = -1 },
      wrt = { "X" }, delta = 1e-5, max_rel = 1e-7 }
  end)
end)

describe("psroi_pool (test_psroi_pool_op.py)", function()
  -- batch 3, output_channels 3, pooled 2 x 2 (12 channels), 6 x 4, spatial_scale 1/4
  local OC, PH, PW, scale = 3, 2, 2, 0.25
  local d = { 3, OC * PH * PW, 6, 4 }
  local x = R.uniform(numel(d), 37, 0, 1)
  local rois, ids, lod = make_rois(3, 6, 4, scale, PH, PW, 41)

  it("TestPSROIPoolOp: float64 and float32", function()
    local want = psroi_ref(x, d, rois, ids, scale, OC, PH, PW)
    for _, dt in ipairs({ "float64", "float32" }) do
      T.check_output{ type = "psroi_pool", dtype = dt, atol = dt == "float32" and 1e-6 or 1e-12,
        inputs = { X = T.tensor(x, { shape = d, dtype = dt }),
                   ROIs = T.tensor(rois, { shape = { #ids, 4 }, dtype = dt, lod = { lod } }) },
        attrs = { output_channels = OC, spatial_scale = scale, pooled_height = PH, pooled_width = PW },
        expect = { Out = { shape = { #ids, OC, PH, PW }, data = want } } }
    end
  end)

  it("gradient against finite differences", function()
    T.check_grad{ type = "psroi_pool", dtype = "float64",
      inputs = { X = T.tensor(x, { shape = d }), ROIs = T.tensor(rois, { shape = { #ids, 4 }, lod = { lod } }) },
      attrs = { output_channels = OC, spatial_scale = scale, pooled_height = PH, pooled_width = PW },
      wrt = { "X" }, delta = 1e-5, max_rel = 1e-7 }
  end)

  it("rejects X whose channels are not output_channels * pooled_height * pooled_width", function()
    fails({ type = "psroi_pool", inputs = { X = T.tensor(x, { shape = d }),
                                            ROIs = T.tensor(rois, { shape = { #ids, 4 }, lod = { lod } }) },
            attrs = { output_channels = 2, pooled_height = PH, pooled_width = PW } },
          "X ('in_X_1') has 12 channels, expected output_channels * pooled_height * pooled_width = 2 * 2 * 2 = 8")
  end)
end)


-- prroi_pool: on each unit cell X's interpolation is bilinear, so the
-- midpoint rule is exact on every piece of the window inside one cell
local function prroi_ref(x, d, rois, ids, scale, PH, PW)
  local C, H, W = d[2], d[3], d[4]
  local out = {}
  for n = 0, #ids - 1 do
    local sw, sh = rois[n * 4 + 1] * scale, rois[n * 4 + 2] * scale
    local bw = math.max(rois[n * 4 + 3] * scale - sw, 0) / PW
    local bh = math.max(rois[n * 4 + 4] * scale - sh, 0) / PH
    for c = 0, C - 1 do
      local base = (ids[n + 1] * C + c) * H * W
      local function at(h, w)
        if h < 0 or w < 0 or h >= H or w >= W then return 0 end
        return x[base + h * W + w + 1]
      end
      local function f(y, xx)
        local h, w = math.floor(y), math.floor(xx)
        local dy, dx = y - h, xx - w
        return at(h, w) * (1 - dy) * (1 - dx) + at(h + 1, w) * dy * (1 - dx) + at(h, w + 1) * (1 - dy) * dx +
               at(h + 1, w + 1) * dy * dx
      end
      for ph = 0, PH - 1 do
        for pw = 0, PW - 1 do
          local y0, x0 = sh + ph * bh, sw + pw * bw
          local y1, x1 = y0 + bh, x0 + bw
          local s = 0
          if bh * bw > 0 then
            for h = math.floor(y0), math.ceil(y1) - 1 do
              for w = math.floor(x0), math.ceil(x1) - 1 do
                local ya, yb = math.max(y0, h), math.min(y1, h + 1)
                local xa, xb = math.max(x0, w), math.min(x1, w + 1)
                if yb > ya and xb > xa then
                  -- the centre of the piece, nudged into the cell so floor() picks it
                  s = s + f(math.min((ya + yb) / 2, h + 1 - 1e-12), math.min((xa + xb) / 2, w + 1 - 1e-12)) *
                      (yb - ya) * (xb - xa)
                end
              end
            end
            s = s / (bh * bw)
          end
          out[#out + 1] = s
        end
      end
    end
  end
  return out
end

describe("prroi_pool (test_prroi_pool_op.py)", function()
  -- batch 3, channels 4, 6 x 8, spatial_scale 1/2, pooled 2 x 2; fractional ROI corners
  local d, scale = { 3, 4, 6, 8 }, 0.5
  local x = R.uniform(numel(d), 67, 0, 1)
  local rois, ids, lod = make_rois(3, 6, 8, scale, 2, 2, 71)
  local frac = R.uniform(#rois, 73, 0, 0.9)
  for i = 1, #rois do rois[i] = rois[i] + frac[i] end

  for _, o in ipairs({ { name = "TestPRROIPoolOp: pooled 2 x 2, the LoD gives the images", ph = 2, pw = 2 },
                       { name = "pooled 3 x 4, BatchRoINums gives the images", ph = 3, pw = 4, nums = true } }) do
    it(o.name, function()
      local want = prroi_ref(x, d, rois, ids, scale, o.ph, o.pw)
      for _, dt in ipairs({ "float64", "float32" }) do
        local inputs = { X = T.tensor(x, { shape = d, dtype = dt }),
                         ROIs = T.tensor(rois, { shape = { #ids, 4 }, dtype = dt, lod = not o.nums and { lod } or nil }) }
        if o.nums then inputs.BatchRoINums = T.tensor({ 1, 2, 3 }, { dtype = "int64" }) end
        T.check_output{ type = "prroi_pool", dtype = dt, atol = dt == "float32" and 1e-5 or 1e-10, inputs = inputs,
          attrs = { spatial_scale = scale, pooled_height = o.ph, pooled_width = o.pw },
          expect = { Out = { shape = { #ids, 4, o.ph, o.pw }, data = want } } }
      end
    end)
  end

  it("an ROI reaching past X and an empty ROI", function()
    local r2 = { -3.5, -2.25, 20.5, 15.75, 4, 4, 4, 9 }
    local want = prroi_ref(x, d, r2, { 0, 2 }, scale, 2, 2)
    T.check_output{ type = "prroi_pool", dtype = "float64", atol = 1e-10,
      inputs = { X = T.tensor(x, { shape = d }), ROIs = T.tensor(r2, { shape = { 2, 4 }, lod = { { 0, 1, 1, 2 } } }) },
      attrs = { spatial_scale = scale, pooled_height = 2, pooled_width = 2 },
      expect = { Out = { shape = { 2, 4, 2, 2 }, data = want } } }
    for i = 17, 32 do assert.equal(0, want[i]) end
  end)

  it("gradients of X and of the ROIs against finite differences", function()
    T.check_grad{ type = "prroi_pool", dtype = "float64",
      inputs = { X = T.tensor(x, { shape = d }), ROIs = T.tensor(rois, { shape = { #ids, 4 }, lod = { lod } }) },
      attrs = { spatial_scale = scale, pooled_height = 2, pooled_width = 2 },
      wrt = { "X", "ROIs" }, delta = 1e-6, max_rel = 1e-5 }
  end)

  it("rejects BatchRoINums that do not add up to the ROI count", function()
    fails({ type = "prroi_pool", inputs = { X = T.tensor(x, { shape = d }), ROIs = T.tensor(rois, { shape = { #ids, 4 } }),
                                            BatchRoINums = T.tensor({ 1, 2, 2 }, { dtype = "int64" }) } },
          "BatchRoINums must run from 0 to the ROI count 6, got 0 .. 5")
  end)
end)

describe("layers.roi_pool / roi_align / psroi_pool / prroi_pool", function()
  local oar = require("oar")
  local layers = oar.layers

  local function tensor(shape, v, lod)
    local t = oar.Tensor{ shape = shape, dtype = "float64", lod = lod }
    for i = 1, #v do t:data()[i - 1] = v[i] end
    return t
  end
  local function flat(t)
    local r = {}
    for i = 1, numel(t:shape()) do r[i] = t:data()[i - 1] end
    return { data = r, shape = t:shape() }
  end

  it("build their ops with Fluid 1.8's slots and attributes and run on LoD ROIs", function()
    local d = { 2, 8, 6, 5 }
    local x = R.uniform(numel(d), 53, 0, 1)
    local rois, ids, lod = make_rois(2, 6, 5, 0.5, 2, 2, 59)
    local main, startup = oar.Program(), oar.Program()
    local outs
    oar.program_guard(main, startup, function()
      local xv = layers.data{ name = "x", shape = d, dtype = "float64", append_batch_size = false }
      local rv = layers.data{ name = "rois", shape = { 4 }, dtype = "float64", lod_level = 1 }
      outs = { layers.roi_pool(xv, rv, 2, 3, 0.5),
               layers.roi_align{ input = xv, rois = rv, pooled_height = 2, pooled_width = 2, spatial_scale = 0.5,
                                 sampling_ratio = 2 },
               layers.psroi_pool{ input = xv, rois = rv, output_channels = 2, spatial_scale = 0.5, pooled_height = 2,
                                  pooled_width = 2 },
               layers.prroi_pool(xv, rv, 0.5, 3, 2) }
      assert.same({ -1, 8, 2, 3 }, outs[1].shape)
      assert.same({ -1, 2, 2, 2 }, outs[3].shape)
    end)
    local exe = oar.Executor(oar.CPUPlace())
    exe:run(startup)
    local got = exe:run(main, { feed = { x = tensor(d, x), rois = tensor({ #ids, 4 }, rois, { lod }) }, fetch_list = outs })
    T.assert_close(flat(got[1]), { data = (roi_pool_ref(x, d, rois, ids, 0.5, 2, 3)) }, 1e-12)
    T.assert_close(flat(got[2]), { data = roi_align_ref(x, d, rois, ids, 0.5, 2, 2, 2) }, 1e-12)
    T.assert_close(flat(got[3]), { data = psroi_ref(x, d, rois, ids, 0.5, 2, 2, 2) }, 1e-12)
    T.assert_close(flat(got[4]), { data = prroi_ref(x, d, rois, ids, 0.5, 3, 2) }, 1e-10)
    local ops = main:global_block():ops()
    assert.equal("roi_pool", ops[1].type)
    assert.equal(1, #ops[1]:output("Argmax"))
    assert.equal(2, ops[2]:attr("sampling_ratio"))
    assert.equal(2, ops[3]:attr("output_channels"))
    assert.equal("prroi_pool", ops[4].type)
    assert.equal(3, ops[4]:attr("pooled_height"))
  end)

  it("reject bad arguments with the layer's name", function()
    oar.program_guard(oar.Program(), oar.Program(), function()
      local xv = layers.data{ name = "x", shape = { 8, 6, 5 }, dtype = "float32" }
      local rv = layers.data{ name = "rois", shape = { 4 }, dtype = "float32", lod_level = 1 }
      local r64 = layers.data{ name = "r64", shape = { 4 }, dtype = "float64", lod_level = 1 }
      local function err(f, want)
        local ok, e = pcall(f)
        assert.is_false(ok)
        assert.matches(want, tostring(e), 1, true)
      end
      err(function() layers.roi_pool{ input = xv, rois = r64 } end, "roi_pool: 'rois' must be a float32 Variable")
      err(function() layers.roi_align{ input = rv, rois = rv } end, "roi_align: 'input' must be 4-D [N, C, H, W]")
      err(function() layers.roi_pool{ input = xv, rois = rv, pooled_height = 0 } end,
        "roi_pool: 'pooled_height' must be a positive integer")
      err(function() layers.psroi_pool{ input = xv, rois = rv, output_channels = 3, spatial_scale = 1,
                                        pooled_height = 2, pooled_width = 2 } end,
        "psroi_pool: 'input' has 8 channels, expected output_channels * pooled_height * pooled_width = 12")
      err(function() layers.psroi_pool{ input = xv, rois = rv, output_channels = 2, pooled_height = 2,
                                        pooled_width = 2 } end, "psroi_pool: 'spatial_scale'")
    end)
  end)
end)

describe("roi ops: spatial_scale must be positive (Fluid 1.8's InferShape)", function()
  it("roi_pool, roi_align, psroi_pool and prroi_pool refuse spatial_scale 0", function()
    local x = T.tensor(R.symmetric(16), { shape = { 1, 4, 2, 2 } })
    local rois = T.tensor({ 0, 0, 1, 1 }, { shape = { 1, 4 }, lod = { { 0, 1 } } })
    for _, op in ipairs({ "roi_pool", "roi_align", "psroi_pool", "prroi_pool" }) do
      local attrs = { spatial_scale = 0 }
      if op == "psroi_pool" then attrs.output_channels = 4 end
      fails({ type = op, inputs = { X = x, ROIs = rois }, attrs = attrs }, "spatial_scale must be positive, got 0")
    end
  end)
end)
