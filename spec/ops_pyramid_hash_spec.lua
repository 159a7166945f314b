-- pyramid_hash (issue 22): Out against a plain-Lua reference (XXH32 written
-- here from the xxHash specification, checked on its published vectors;
-- Fluid's n-gram order; glibc's rand_r for the training dropout as Fluid
-- draws it), the grad of W by weighted finite differences, and the refusals.
local ffi = require("ffi")
local bit = require("bit")
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")
local W = require("spec.helpers.sequence_grad")
local expect_error = require("spec.helpers.expect_error")
local offsets = require("spec.helpers.index").offsets

pcall(ffi.cdef, "int rand_r(unsigned int *seed);")

-- ---- XXH32 in plain Lua ------------------------------------------------------------------
local function u32(x) return x % 4294967296 end
local function mul(a, b)   -- (a * b) mod 2^32 without losing bits in doubles
  local al, ah = a % 65536, math.floor(a / 65536)
  return u32(al * b % 4294967296 + (ah * (b % 65536) % 65536) * 65536)
end
local function rotl(x, r) return u32(bit.rol(bit.tobit(x), r)) end
local function shr(x, r) return math.floor(x / 2 ^ r) end
local function xor(a, b) return u32(bit.bxor(bit.tobit(a), bit.tobit(b))) end
local P1, P2, P3, P4, P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393

local function xxh32(bytes, seed)   -- bytes: a Lua list of 0..255
  local len, p = #bytes, 1
  local function rd(i) return bytes[i] + bytes[i + 1] * 256 + bytes[i + 2] * 65536 + bytes[i + 3] * 16777216 end
  local function round(acc, v) return mul(rotl(u32(acc + mul(v, P2)), 13), P1) end
  local h
  if len >= 16 then
    local v1, v2, v3, v4 = u32(seed + P1 + P2), u32(seed + P2), seed, u32(seed - P1)
    while p + 15 <= len do
      v1, v2, v3, v4 = round(v1, rd(p)), round(v2, rd(p + 4)), round(v3, rd(p + 8)), round(v4, rd(p + 12))
      p = p + 16
    end
    h = u32(rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18))
  else
    h = u32(seed + P5)
  end
  h = u32(h + len)
  while p + 3 <= len do
    h = mul(rotl(u32(h + mul(rd(p), P3)), 17), P4)
    p = p + 4
  end
  while p <= len do
    h = mul(rotl(u32(h + mul(bytes[p], P5)), 11), P1)
    p = p + 1
  end
  h = mul(xor(h, shr(h, 15)), P2)
  h = mul(xor(h, shr(h, 13)), P3)
  return xor(h, shr(h, 16))
end

local function float_bytes(tokens)
  local out, f = {}, ffi.new("float[1]")
  local b = ffi.cast("uint8_t*", f)
  for _, t in ipairs(tokens) do
    f[0] = t
    for i = 0, 3 do out[#out + 1] = b[i] end
  end
  return out
end

-- the reference: Fluid's walk over n-grams, Out rows, DropPos, the LoDs
local function pyramid_ref(x, lens, w, a)
  local offs = offsets(lens)
  local seed = ffi.new("unsigned int[1]", a.seed or 0)
  local out, out_lod, drop = {}, { 0 }, {}
  local scale = (a.is_training or 0) == 0 and (a.drop_out_percent or 0) or 1
  for s = 1, #offs - 1 do
    local n = offs[s + 1] - offs[s]
    local rows = {}
    for il = 1, math.min(a.pyramid_layer - 1, n - 1) do
      for l = 0, n - il - 1 do
        local keep = 1
        if (a.is_training or 0) ~= 0 then
          -- float(rand_r) / float(RAND_MAX) in float, as Fluid's kernel
          local num, den = tonumber(ffi.new("float", ffi.C.rand_r(seed))), tonumber(ffi.new("float", 2147483647))
          local rate = tonumber(ffi.new("float", num / den))
          keep = rate < tonumber(ffi.new("float", a.drop_out_percent)) and 0 or 1
        end
        drop[#drop + 1] = keep
        if keep == 1 then
          local toks = {}
          for q = 0, il do toks[#toks + 1] = x[offs[s] + l + q + 1] end
          local bytes = float_bytes(toks)
          local row = {}
          for j = 0, a.num_emb - 1, a.rand_len do
            local pos = xxh32(bytes, j) % a.space_len
            for q = 1, a.rand_len do row[j + q] = w[pos + q] * scale end
          end
          rows[#rows + 1] = row
        end
      end
    end
    if #rows == 0 then
      local z = {}
      for j = 1, a.num_emb do z[j] = 0 end
      rows[1] = z
    end
    for _, r in ipairs(rows) do for _, v in ipairs(r) do out[#out + 1] = v end end
    out_lod[#out_lod + 1] = out_lod[#out_lod] + #rows
  end
  return out, out_lod, drop
end

describe("XXH32 (the spec's reference)", function()
  it("gives the published vectors", function()
    assert.are.equal(0x02cc5d05, xxh32({}, 0))
    assert.are.equal(0x32d153ff, xxh32({ 97, 98, 99 }, 0))
  end)
end)

describe("pyramid_hash", function()
  local A = { num_emb = 8, space_len = 50, rand_len = 4, pyramid_layer = 3 }
  local function inputs(x, lens, w, dt)
    return { X = T.tensor(x, { shape = { #x, 1 }, lod = { offsets(lens) }, dtype = "int32" }),
             W = T.tensor(w, { shape = { #w, 1 }, dtype = dt }) }
  end
  local function attrs(a)
    local t = {}
    for k, v in pairs(A) do t[k] = v end
    for k, v in pairs(a or {}) do t[k] = v end
    return t
  end

  for _, c in ipairs({
    { name = "inference, drop_out_percent scales Out", a = { drop_out_percent = 0.5 }, lens = { 4, 1, 3 } },
    { name = "inference, pyramid_layer 4, 16-byte n-grams", a = { pyramid_layer = 5, drop_out_percent = 1 }, lens = { 6, 2 } },
    { name = "training, dropout with seed 7", a = { is_training = 1, drop_out_percent = 0.4, seed = 7 }, lens = { 5, 4, 1 } },
  }) do
    for _, dt in ipairs({ "float64", "float32" }) do
      it(c.name .. " (" .. dt .. ")", function()
        local n = 0
        for _, l in ipairs(c.lens) do n = n + l end
        local x = {}
        for i = 1, n do x[i] = (i * 37) % 101 end
        local a = attrs(c.a)
        local w = R.uniform(a.space_len + a.rand_len, 3, -1, 1)
        local out, out_lod, drop = pyramid_ref(x, c.lens, w, a)
        if a.is_training == 1 then   -- the draws both keep and drop some n-grams here
          local kept = 0
          for _, v in ipairs(drop) do kept = kept + v end
          assert.is_true(kept > 0 and kept < #drop, "kept " .. kept .. " of " .. #drop)
        end
        local res = T.check_output{ type = "pyramid_hash", dtype = dt, attrs = a, inputs = inputs(x, c.lens, w, dt),
                                    expect = { Out = { shape = { #out / a.num_emb, a.num_emb }, data = out, lod = { out_lod } } },
                                    atol = dt == "float32" and 1e-6 or 1e-12 }
        local dp = res.DropPos[1]
        for i, v in ipairs(drop) do assert.are.equal(v, dp.data[i], "DropPos " .. i) end
        for i = #drop + 1, #dp.data do assert.are.equal(0, dp.data[i]) end
        T.assert_close(res.X_Temp_Out[1], { shape = { n, 1 }, data = x })
      end)
    end
  end

  it("grad of W (weighted finite differences), training and inference", function()
    local x = { 3, 17, 5, 2, 9, 11, 4 }
    local w = R.uniform(A.space_len + A.rand_len, 5, -1, 1)
    W.check{ type = "pyramid_hash", attrs = attrs({ is_training = 1, drop_out_percent = 0.3, seed = 3 }),
             inputs = inputs(x, { 4, 3 }, w, "float64"), wrt = { "W" }, of = { "Out" } }
    W.check{ type = "pyramid_hash", attrs = attrs({ drop_out_percent = 0.7 }),
             inputs = inputs(x, { 4, 3 }, w, "float64"), wrt = { "W" }, of = { "Out" } }
  end)

  it("refuses the bloom-filter lists, a W of the wrong height and num_emb not a multiple of rand_len", function()
    local x, w = { 1, 2, 3 }, R.uniform(54, 1)
    expect_error(function()
      T.run{ type = "pyramid_hash", attrs = attrs({ white_list_len = 4 }), inputs = inputs(x, { 3 }, w, "float64") }
    end, "pyramid_hash", "bloom-filter")
    expect_error(function()
      T.run{ type = "pyramid_hash", attrs = attrs(), inputs = inputs(x, { 3 }, R.uniform(50, 1), "float64") }
    end, "pyramid_hash", "in_W", "[54, 1]")
    expect_error(function()
      T.run{ type = "pyramid_hash", attrs = attrs({ num_emb = 6 }), inputs = inputs(x, { 3 }, w, "float64") }
    end, "pyramid_hash", "num_emb 6", "multiple of rand_len")
  end)
end)
