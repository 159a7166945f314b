-- deformable_psroi_pooling and layers.deformable_roi_pooling: the cases of
-- Fluid 1.8's test_deformable_psroi_pooling.py (shapes reduced, ROIs fixed),
-- expected values from the op's geometry written out in plain Lua, the
-- gradients of Input and Trans against float64 finite differences.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")

local ffi = require("ffi")
-- trans_std is a float attribute
local function f32(v) return tonumber(ffi.new("float", v)) end
local function round(v) return v >= 0 and math.floor(v + 0.5) or -math.floor(-v + 0.5) end
local function numel(s)
  local k = 1
  for _, v in ipairs(s) do k = k * v end
  return k
end

-- o: {d (Input dims), rois, ids, trans (flat or nil), tdims, od, gs, ph, pw, ps, spp, std, scale}
local function dps_ref(x, o)
  local C, H, W = o.d[2], o.d[3], o.d[4]
  local ncls = o.trans and o.tdims[2] / 2 or 1
  local std = f32(o.std)
  local out, cnt = {}, {}
  for n = 0, #o.ids - 1 do
    local r = { o.rois[n * 4 + 1], o.rois[n * 4 + 2], o.rois[n * 4 + 3], o.rois[n * 4 + 4] }
    local sw, sh = round(r[1]) * o.scale - 0.5, round(r[2]) * o.scale - 0.5
    local ew, eh = (round(r[3]) + 1) * o.scale - 0.5, (round(r[4]) + 1) * o.scale - 0.5
    local rw, rh = math.max(ew - sw, 0.1), math.max(eh - sh, 0.1)
    local bh, bw = rh / o.ph, rw / o.pw
    for c = 0, o.od - 1 do
      for ph = 0, o.ph - 1 do
        for pw = 0, o.pw - 1 do
          local part_h, part_w = math.floor(ph / o.ph * o.ps[1]), math.floor(pw / o.pw * o.ps[2])
          local tx, ty = 0, 0
          if o.trans then
            local cls = math.floor(c / (o.od / ncls))
            tx = o.trans[(((n * ncls + cls) * 2) * o.ps[1] + part_h) * o.ps[2] + part_w + 1] * std
            ty = o.trans[(((n * ncls + cls) * 2 + 1) * o.ps[1] + part_h) * o.ps[2] + part_w + 1] * std
          end
          local ws, hs = pw * bw + sw + tx * rw, ph * bh + sh + ty * rh
          local gw = math.min(math.max(math.floor(pw * o.gs[2] / o.pw), 0), o.gs[2] - 1)
          local gh = math.min(math.max(math.floor(ph * o.gs[1] / o.ph), 0), o.gs[1] - 1)
          local base = (o.ids[n + 1] * C + (c * o.gs[1] + gh) * o.gs[2] + gw) * H * W
          local function at(yy, xx) return x[base + yy * W + xx + 1] end
          local s, k = 0, 0
          for ih = 0, o.spp - 1 do
            for iw = 0, o.spp - 1 do
              local w, h = ws + iw * bw / o.spp, hs + ih * bh / o.spp
              if not (w < -0.5 or w > W - 0.5 or h < -0.5 or h > H - 0.5) then
                w, h = math.min(math.max(w, 0), W - 1), math.min(math.max(h, 0), H - 1)
                local x0, y0 = math.floor(w), math.floor(h)
                local x1, y1 = math.ceil(w), math.ceil(h)
                local dx, dy = w - x0, h - y0
                s = s + (1 - dx) * (1 - dy) * at(y0, x0) + (1 - dx) * dy * at(y1, x0) + dx * (1 - dy) * at(y0, x1) +
                    dx * dy * at(y1, x1)
                k = k + 1
              end
            end
          end
          out[#out + 1], cnt[#cnt + 1] = k > 0 and s / k or 0, k
        end
      end
    end
  end
  return out, cnt
end

local ROIS = { 2, 1, 12, 10, 0, 3, 9, 14, 5, 5, 15, 13 }   -- image 0: 1 ROI, image 1: 2 (input scale 2x)
local IDS, LOD = { 0, 1, 1 }, { 0, 1, 3 }

local CASES = {
  { name = "position-sensitive: group 2 x 2, output_dim 3, one class", d = { 2, 12, 8, 8 }, od = 3, gs = { 2, 2 },
    ph = 2, pw = 2, ps = { 2, 2 }, spp = 2, std = 0.1, scale = 0.5, tdims = { 3, 2, 2, 2 } },
  { name = "two classes, group 1 x 1, pooled 3 x 2, part 3 x 2, 3 samples", d = { 2, 4, 8, 8 }, od = 4, gs = { 1, 1 },
    ph = 3, pw = 2, ps = { 3, 2 }, spp = 3, std = 0.2, scale = 0.5, tdims = { 3, 4, 3, 2 } },
  { name = "no_trans", d = { 2, 3, 8, 8 }, od = 3, gs = { 1, 1 }, ph = 2, pw = 2, ps = { 2, 2 }, spp = 2, std = 0.1,
    scale = 0.5, tdims = { 3, 2, 2, 2 }, no_trans = true },
}

describe("deformable_psroi_pooling (test_deformable_psroi_pooling.py)", function()
  for ci, o in ipairs(CASES) do
    local x = R.uniform(numel(o.d), 80 + ci, 0, 1)
    local trans = R.symmetric(numel(o.tdims), 90 + ci, 0.5)
    local attrs = { no_trans = o.no_trans or false, spatial_scale = o.scale, output_dim = o.od, group_size = o.gs,
                    pooled_height = o.ph, pooled_width = o.pw, part_size = o.ps, sample_per_part = o.spp,
                    trans_std = o.std }
    local ref = { d = o.d, rois = ROIS, ids = IDS, trans = not o.no_trans and trans or nil, tdims = o.tdims, od = o.od,
                  gs = o.gs, ph = o.ph, pw = o.pw, ps = o.ps, spp = o.spp, std = o.std, scale = o.scale }
    local function inputs(dt)
      return { Input = T.tensor(x, { shape = o.d, dtype = dt }),
               ROIs = T.tensor(ROIS, { shape = { 3, 4 }, dtype = dt, lod = { LOD } }),
               Trans = T.tensor(trans, { shape = o.tdims, dtype = dt }) }
    end
    it(o.name, function()
      local want, cnt = dps_ref(x, ref)
      local os = { 3, o.od, o.ph, o.pw }
      for _, dt in ipairs({ "float64", "float32" }) do
        T.check_output{ type = "deformable_psroi_pooling", dtype = dt, atol = dt == "float32" and 1e-5 or 1e-12,
          inputs = inputs(dt), attrs = attrs,
          expect = { Output = { shape = os, data = want }, TopCount = { shape = os, data = cnt } } }
      end
      T.check_grad{ type = "deformable_psroi_pooling", dtype = "float64", inputs = inputs("float64"), attrs = attrs,
        wrt = o.no_trans and { "Input" } or { "Input", "Trans" }, of = { "Output" }, delta = 1e-6, max_rel = 1e-5 }
    end)
  end

  it("rejects too few channels and a Trans of the wrong shape, naming the variables", function()
    local o = CASES[1]
    local function run(attrs, tdims)
      return pcall(T.run, { type = "deformable_psroi_pooling",
        inputs = { Input = T.tensor(R.symmetric(numel(o.d)), { shape = o.d }),
                   ROIs = T.tensor(ROIS, { shape = { 3, 4 }, lod = { LOD } }),
                   Trans = T.tensor(R.symmetric(numel(tdims)), { shape = tdims }) }, attrs = attrs })
    end
    local base = { output_dim = 4, group_size = { 2, 2 }, part_size = { 2, 2 }, pooled_height = 2, pooled_width = 2 }
    local ok, err = run(base, o.tdims)
    assert.is_false(ok)
    assert.matches("Input ('in_Input_1') has 12 channels, expected at least output_dim * group_size[0] * group_size[1] = 16",
      tostring(err), 1, true)
    base.output_dim = 3
    ok, err = run(base, { 3, 2, 3, 2 })
    assert.is_false(ok)
    assert.matches("Trans ('in_Trans_1') must be [R, 2 * num_classes, 2, 2]", tostring(err), 1, true)
  end)
end)

describe("layers.deformable_roi_pooling", function()
  local oar = require("oar")
  local layers = oar.layers

  it("builds deformable_psroi_pooling as Fluid 1.8's layer does and runs", function()
    local o = CASES[1]
    local x = R.uniform(numel(o.d), 81, 0, 1)
    local trans = R.symmetric(numel(o.tdims), 91, 0.5)
    local main, startup = oar.Program(), oar.Program()
    local out, plain
    oar.program_guard(main, startup, function()
      local xv = layers.data{ name = "x", shape = o.d, dtype = "float64", append_batch_size = false }
      local rv = layers.data{ name = "rois", shape = { 4 }, dtype = "float64", lod_level = 1 }
      local tv = layers.data{ name = "trans", shape = o.tdims, dtype = "float64", append_batch_size = false }
      out = layers.deformable_roi_pooling{ input = xv, rois = rv, trans = tv, spatial_scale = 0.5, group_size = { 2, 2 },
        pooled_height = 2, pooled_width = 2, sample_per_part = 2, trans_std = 0.1, position_sensitive = true }
      plain = layers.deformable_roi_pooling{ input = xv, rois = rv, trans = tv, no_trans = true, spatial_scale = 0.5,
        pooled_height = 2, pooled_width = 2, sample_per_part = 2 }
      assert.same({ -1, 3, 2, 2 }, out.shape)
      assert.same({ -1, 12, 2, 2 }, plain.shape)
    end)
    local function tensor(shape, v, lod)
      local t = oar.Tensor{ shape = shape, dtype = "float64", lod = lod }
      for i = 1, #v do t:data()[i - 1] = v[i] end
      return t
    end
    local exe = oar.Executor(oar.CPUPlace())
    exe:run(startup)
    local got = exe:run(main, { feed = { x = tensor(o.d, x), rois = tensor({ 3, 4 }, ROIS, { LOD }),
                                         trans = tensor(o.tdims, trans) }, fetch_list = { out, plain } })
    local want = dps_ref(x, { d = o.d, rois = ROIS, ids = IDS, trans = trans, tdims = o.tdims, od = 3, gs = { 2, 2 },
                              ph = 2, pw = 2, ps = { 2, 2 }, spp = 2, std = 0.1, scale = 0.5 })
    for i = 1, #want do assert.is_true(math.abs(got[1]:data()[i - 1] - want[i]) < 1e-12, "element " .. i) end
    local want2 = dps_ref(x, { d = o.d, rois = ROIS, ids = IDS, od = 12, gs = { 1, 1 }, ph = 2, pw = 2, ps = { 2, 2 },
                               spp = 2, std = 0.1, scale = 0.5 })
    for i = 1, #want2 do assert.is_true(math.abs(got[2]:data()[i - 1] - want2[i]) < 1e-12, "element " .. i) end
    local op = main:global_block():ops()[1]
    assert.equal("deformable_psroi_pooling", op.type)
    assert.same({ 2, 2 }, op:attr("part_size"))
    assert.equal(3, op:attr("output_dim"))
  end)

  it("rejects bad arguments with the layer's name", function()
    oar.program_guard(oar.Program(), oar.Program(), function()
      local xv = layers.data{ name = "x", shape = { 12, 8, 8 }, dtype = "float32" }
      local rv = layers.data{ name = "rois", shape = { 4 }, dtype = "float32", lod_level = 1 }
      local ok, err = pcall(layers.deformable_roi_pooling, { input = xv, rois = rv })
      assert.is_false(ok)
      assert.matches("deformable_roi_pooling: 'trans' must be a Variable", tostring(err), 1, true)
      ok, err = pcall(layers.deformable_roi_pooling, { input = xv, rois = rv, trans = rv, group_size = { 1, 2, 3 } })
      assert.is_false(ok)
      assert.matches("deformable_roi_pooling: 'group_size'", tostring(err), 1, true)
    end)
  end)
end)
