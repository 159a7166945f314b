-- lstm and gru gradients in float32: the float32 kernels (8-lane activations,
-- fused step loops, sequences split across threads) give the same gradients
-- as the float64 kernels, which spec/ops_lstm_spec.lua and ops_gru_spec.lua
-- check against finite differences.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")

-- the float32 gradient of every input agrees with the float64 one to 1e-4 of
-- that gradient's largest magnitude
local function compare(spec_of)
  local g64, names = T.analytic_grads(spec_of("float64"))
  local g32 = T.analytic_grads(spec_of("float32"))
  for w, name in ipairs(names) do
    local a, b = g64[w].data, g32[w].data
    assert.are.equal(#a, #b)
    local scale = 0
    for i = 1, #a do scale = math.max(scale, math.abs(a[i])) end
    assert.is_true(scale > 0, name .. ": the float64 gradient is all zero (the case tests nothing)")
    for i = 1, #a do
      if math.abs(a[i] - b[i]) > 1e-4 * scale then
        error(("%s element %d: float32 %.8g, float64 %.8g (scale %.3g)"):format(name, i, b[i], a[i], scale))
      end
    end
  end
end

local function lod_rows(lod) return lod[#lod] end

describe("lstm float32 gradients", function()
  local cases = {
    { D = 9, lod = { 0, 3, 4, 9, 11 }, peep = true, h0 = true, c0 = true },
    { D = 16, lod = { 0, 5, 6, 12 }, peep = false },
    { D = 8, lod = { 0, 4, 7 }, peep = true, reverse = true, h0 = true },
  }
  for i, c in ipairs(cases) do
    it(("case %d: hidden %d, %d sequences%s"):format(i, c.D, #c.lod - 1, c.reverse and ", reversed" or ""), function()
      compare(function(dtype)
        local D, rows, nseq = c.D, lod_rows(c.lod), #c.lod - 1
        local bw = c.peep and 7 * D or 4 * D
        local ins = {
          Input = T.tensor(R.symmetric(rows * 4 * D, 11, 1.5), { shape = { rows, 4 * D }, lod = { c.lod }, dtype = dtype }),
          Weight = T.tensor(R.symmetric(D * 4 * D, 12, 0.5), { shape = { D, 4 * D }, dtype = dtype }),
          Bias = T.tensor(R.symmetric(bw, 13, 0.5), { shape = { 1, bw }, dtype = dtype }),
        }
        local wrt = { "Input", "Weight", "Bias" }
        if c.h0 then
          ins.H0 = T.tensor(R.symmetric(nseq * D, 14), { shape = { nseq, D }, dtype = dtype })
          wrt[#wrt + 1] = "H0"
        end
        if c.c0 then
          ins.C0 = T.tensor(R.symmetric(nseq * D, 15), { shape = { nseq, D }, dtype = dtype })
          wrt[#wrt + 1] = "C0"
        end
        return { type = "lstm", dtype = dtype, inputs = ins, wrt = wrt, of = { "Hidden", "Cell" },
                 attrs = { use_peepholes = c.peep, is_reverse = c.reverse or false } }
      end)
    end)
  end
end)

describe("gru float32 gradients", function()
  local cases = {
    { D = 9, lod = { 0, 3, 4, 9, 11 }, h0 = true },
    { D = 16, lod = { 0, 5, 6, 12 }, origin = true },
    { D = 8, lod = { 0, 4, 7 }, reverse = true, h0 = true },
  }
  for i, c in ipairs(cases) do
    it(("case %d: hidden %d, %d sequences%s"):format(i, c.D, #c.lod - 1, c.reverse and ", reversed" or ""), function()
      compare(function(dtype)
        local D, rows, nseq = c.D, lod_rows(c.lod), #c.lod - 1
        local ins = {
          Input = T.tensor(R.symmetric(rows * 3 * D, 21, 1.5), { shape = { rows, 3 * D }, lod = { c.lod }, dtype = dtype }),
          Weight = T.tensor(R.symmetric(D * 3 * D, 22, 0.5), { shape = { D, 3 * D }, dtype = dtype }),
          Bias = T.tensor(R.symmetric(3 * D, 23, 0.5), { shape = { 1, 3 * D }, dtype = dtype }),
        }
        local wrt = { "Input", "Weight", "Bias" }
        if c.h0 then
          ins.H0 = T.tensor(R.symmetric(nseq * D, 24), { shape = { nseq, D }, dtype = dtype })
          wrt[#wrt + 1] = "H0"
        end
        return { type = "gru", dtype = dtype, inputs = ins, wrt = wrt, of = { "Hidden" },
                 attrs = { is_reverse = c.reverse or false, origin_mode = c.origin or false } }
      end)
    end)
  end
end)
