-- bilinear_interp_v2 / nearest_interp_v2 (and Fluid 1.8's v1 ops): the cases
-- of Paddle's test_bilinear_interp_v2_op.py / test_nearest_interp_v2_op.py,
-- expected values from plain-Lua ports of their numpy references
-- (bilinear_interp_np, nearest_neighbor_interp_np) with the sampling ratio
-- rounded to float as Paddle's kernel keeps it; gradients against finite
-- differences in float64.
local ffi = require("ffi")
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")

local function f32(v) return tonumber(ffi.new("float", v)) end
local function trunc(v) return v >= 0 and math.floor(v) or math.ceil(v) end

local numel = require("spec.helpers.index").numel

local function ratio(in_, out, scale, align_corners, v2)
  if out <= 1 then return 0 end
  if align_corners then return f32((in_ - 1) / (out - 1)) end
  if v2 and scale and scale > 0 then return f32(1 / scale) end
  return f32(in_ / out)
end

-- x [n, c, ih, iw] -> [n, c, oh, ow]
local function reference(method, x, xs, oh, ow, o)
  local n, c, ih, iw = xs[1], xs[2], xs[3], xs[4]
  local ac = o.align_corners ~= false
  local mode = o.align_mode or 1
  local rh = ratio(ih, oh, o.scale_h, ac, o.v2 ~= false)
  local rw = ratio(iw, ow, o.scale_w, ac, o.v2 ~= false)
  local half = mode == 0 and not ac
  local function src(r, in_, k)
    if method == "nearest" then
      local i = ac and trunc(f32(r * k) + 0.5) or trunc(f32(r * k))
      return math.min(i, in_ - 1)
    end
    local lo = half and trunc(r * (k + 0.5) - 0.5) or trunc(f32(r * k))
    lo = math.max(lo, 0)
    local hi = lo + 1 < in_ - 1 and lo + 1 or in_ - 1
    local d = half and math.max(r * (k + 0.5) - 0.5, 0) - lo or f32(r * k) - lo
    return lo, hi, 1 - d, d
  end
  local out = {}
  for q = 0, n * c - 1 do
    for y = 0, oh - 1 do
      for z = 0, ow - 1 do
        local v
        if ih == oh and iw == ow then
          v = x[q * ih * iw + y * iw + z + 1]
        elseif method == "nearest" then
          v = x[q * ih * iw + src(rh, ih, y) * iw + src(rw, iw, z) + 1]
        else
          local y0, y1, a0, a1 = src(rh, ih, y)
          local z0, z1, b0, b1 = src(rw, iw, z)
          local function at(i, j) return x[q * ih * iw + i * iw + j + 1] end
          v = at(y0, z0) * a0 * b0 + at(y1, z0) * a1 * b0 + at(y0, z1) * a0 * b1 + at(y1, z1) * a1 * b1
        end
        out[#out + 1] = v
      end
    end
  end
  return out
end

-- name, method, input shape, attrs, extra inputs, expected out (h, w), reference options
local CASES = {
  { "TestBilinearInterpOp", "bilinear", { 2, 3, 5, 5 }, { out_h = 2, out_w = 2 }, nil, { 2, 2 } },
  { "TestBilinearInterpCase1", "bilinear", { 4, 1, 7, 8 }, { out_h = 1, out_w = 1 }, nil, { 1, 1 } },
  { "TestBilinearInterpCase2", "bilinear", { 3, 3, 9, 6 }, { out_h = 12, out_w = 12 }, nil, { 12, 12 } },
  { "TestBilinearInterpCase4 (OutSize)", "bilinear", { 4, 1, 7, 8 }, { out_h = 1, out_w = 1 },
    { OutSize = { 2, 2 } }, { 2, 2 } },
  { "TestBilinearInterpCase6 (OutSize)", "bilinear", { 1, 1, 8, 16 }, { out_h = 16, out_w = 8 },
    { OutSize = { 17, 9 } }, { 17, 9 } },
  { "TestBilinearInterpSame", "bilinear", { 2, 3, 8, 16 }, { out_h = 8, out_w = 16 }, nil, { 8, 16 } },
  { "TestBilinearInterpWithMethod2 (align_mode 0)", "bilinear", { 2, 3, 5, 7 },
    { out_h = 12, out_w = 9, align_corners = false, align_mode = 0 }, nil, { 12, 9 } },
  { "TestBilinearInterpWithMethod3 (align_mode 1)", "bilinear", { 2, 3, 5, 7 },
    { out_h = 12, out_w = 9, align_corners = false, align_mode = 1 }, nil, { 12, 9 } },
  { "TestBilinearInterpScale1", "bilinear", { 2, 3, 5, 7 }, { out_h = 60, out_w = 25, scale = { 2, 2 } }, nil, { 10, 14 } },
  { "TestBilinearInterpScale3 (1.5, align_corners false)", "bilinear", { 2, 3, 5, 7 },
    { scale = { 1.5, 1.5 }, align_corners = false, align_mode = 0 }, nil, { 7, 10 }, { scale = 1.5 } },
  { "TestBilinearInterpScaleTensor", "bilinear", { 2, 3, 5, 7 }, { align_corners = false },
    { Scale = { 0.5 } }, { 2, 3 }, { scale = 0.5 } },
  { "TestBilinearInterpSizeTensor", "bilinear", { 2, 3, 5, 7 }, { out_h = 3, out_w = 3 },
    { SizeTensor = { 6, 4 } }, { 6, 4 } },
  { "TestNearestInterpOp", "nearest", { 2, 3, 4, 5 }, { out_h = 2, out_w = 3 }, nil, { 2, 3 } },
  { "TestNearestNeighborInterpCase1", "nearest", { 4, 1, 7, 8 }, { out_h = 4, out_w = 4 }, nil, { 4, 4 } },
  { "TestNearestNeighborInterpCase2", "nearest", { 3, 3, 9, 6 }, { out_h = 12, out_w = 12 }, nil, { 12, 12 } },
  { "TestNearestNeighborInterpCase5 (OutSize)", "nearest", { 1, 1, 9, 6 }, { out_h = 12, out_w = 12 },
    { OutSize = { 11, 11 } }, { 11, 11 } },
  { "TestNearestNeighborInterpWithoutCorners", "nearest", { 2, 3, 4, 5 },
    { out_h = 6, out_w = 9, align_corners = false }, nil, { 6, 9 } },
  { "TestNearestNeighborInterpScale1", "nearest", { 3, 2, 7, 5 }, { scale = { 2, 2 } }, nil, { 14, 10 } },
  { "TestNearestNeighborInterpScale2 (no corners)", "nearest", { 3, 2, 5, 7 },
    { scale = { 1.5, 1.5 }, align_corners = false }, nil, { 7, 10 }, { scale = 1.5 } },
}

local function inputs_of(c, x, dtype)
  local ins = { X = T.tensor(x, { shape = c[3], dtype = dtype }) }
  local extra = c[5] or {}
  if extra.OutSize then ins.OutSize = T.tensor(extra.OutSize, { shape = { 2 }, dtype = "int32" }) end
  if extra.Scale then ins.Scale = T.tensor(extra.Scale, { shape = { 1 }, dtype = "float32" }) end
  if extra.SizeTensor then
    ins.SizeTensor = { T.tensor({ extra.SizeTensor[1] }, { shape = { 1 }, dtype = "int32" }),
                       T.tensor({ extra.SizeTensor[2] }, { shape = { 1 }, dtype = "int32" }) }
  end
  return ins
end

describe("interp_v2 (Paddle's test_*_interp_v2_op.py)", function()
  for ci, c in ipairs(CASES) do
    it(c[1], function()
      local x = R.uniform(numel(c[3]), ci, -1, 1)
      local attrs = { interp_method = c[2] }
      for k, v in pairs(c[4]) do attrs[k] = v end
      local ro = c[7] or {}
      local opts = { align_corners = attrs.align_corners, align_mode = attrs.align_mode,
                     scale_h = ro.scale, scale_w = ro.scale }
      local want = reference(c[2], x, c[3], c[6][1], c[6][2], opts)
      for _, dtype in ipairs({ "float64", "float32" }) do
        T.check_output{
          type = c[2] .. "_interp_v2", attrs = attrs, dtype = dtype, inputs = inputs_of(c, x, dtype),
          expect = { Out = { shape = { c[3][1], c[3][2], c[6][1], c[6][2] }, data = want } },
          atol = dtype == "float32" and 1e-6 or 1e-12, rtol = 1e-6,
        }
      end
    end)
  end

  it("Fluid 1.8's bilinear_interp: scale is one float and does not set the ratio", function()
    local xs = { 1, 2, 4, 6 }
    local x = R.uniform(numel(xs), 9, -1, 1)
    local want = reference("bilinear", x, xs, 6, 9, { align_corners = false, align_mode = 1, v2 = false })
    T.check_output{
      type = "bilinear_interp", attrs = { interp_method = "bilinear", scale = 1.5, align_corners = false },
      inputs = { X = T.tensor(x, { shape = xs }) },
      expect = { Out = { shape = { 1, 2, 6, 9 }, data = want } }, atol = 1e-12,
    }
  end)

  it("a hand-computed 2x upsampling (align_corners, 2x2 -> 3x3)", function()
    T.check_output{
      type = "bilinear_interp_v2", attrs = { interp_method = "bilinear", out_h = 3, out_w = 3 },
      inputs = { X = T.tensor({ 0, 2, 4, 6 }, { shape = { 1, 1, 2, 2 } }) },
      expect = { Out = { shape = { 1, 1, 3, 3 }, data = { 0, 1, 2, 2, 3, 4, 4, 5, 6 } } }, atol = 1e-12,
    }
    T.check_output{
      type = "nearest_interp_v2", attrs = { interp_method = "nearest", out_h = 4, out_w = 4, align_corners = false },
      inputs = { X = T.tensor({ 1, 2, 3, 4 }, { shape = { 1, 1, 2, 2 } }) },
      expect = { Out = { shape = { 1, 1, 4, 4 }, data = { 1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4 } } },
      atol = 0,
    }
  end)

  for _, m in ipairs({ { "bilinear", true, 1 }, { "bilinear", false, 0 }, { "nearest", true, 1 }, { "nearest", false, 1 } }) do
    it(("gradient: %s, align_corners %s, align_mode %d"):format(m[1], tostring(m[2]), m[3]), function()
      T.check_grad{
        type = m[1] .. "_interp_v2",
        attrs = { interp_method = m[1], out_h = 5, out_w = 7, align_corners = m[2], align_mode = m[3] },
        inputs = { X = T.tensor(R.uniform(2 * 2 * 3 * 4, 4, -1, 1), { shape = { 2, 2, 3, 4 } }) },
        wrt = { "X" },
      }
    end)
  end

  it("refuses NHWC, another method and a missing size", function()
    local x = T.tensor(R.uniform(16, 1, -1, 1), { shape = { 1, 1, 4, 4 } })
    local ok, err = pcall(T.run, { type = "bilinear_interp_v2", attrs = { data_layout = "NHWC", out_h = 2, out_w = 2 },
                                   inputs = { X = x } })
    assert.is_false(ok)
    assert.matches("NHWC", err, 1, true)
    ok, err = pcall(T.run, { type = "bilinear_interp_v2", attrs = { interp_method = "bicubic", out_h = 2, out_w = 2 },
                             inputs = { X = x } })
    assert.is_false(ok)
    assert.matches("bicubic", err, 1, true)
    ok, err = pcall(T.run, { type = "nearest_interp_v2", attrs = { interp_method = "nearest" }, inputs = { X = x } })
    assert.is_false(ok)
    assert.matches("must be positive", err, 1, true)
  end)
end)
