-- gru (Fluid's dynamic GRU over LoD sequences) and gru_unit: values against a
-- plain Lua GRU run sequence by sequence, both origin modes, H0, reversal,
-- other activations, Fluid's weight layout ([D, 2D] gate block then [D, D]
-- candidate block); sequences of distinct lengths incl. 1 and empty ones;
-- gradients of every input against central differences; errors.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")
local W = require("spec.helpers.sequence_grad")

local rand_values = R.symmetric

local expect_error = require("spec.helpers.expect_error")

local ACT = {
  sigmoid = function(v) return 1 / (1 + math.exp(-v)) end,
  tanh = function(v) return math.tanh(v) end,
  relu = function(v) return v > 0 and v or 0 end,
  identity = function(v) return v end,
}
local CODES = { [0] = "identity", "sigmoid", "tanh", "relu" }

-- one GRU step for one row: x (3D values, bias included), h previous hidden
local function gru_step(x, h, w, D, act, gate, origin)
  local wur = function(j, q) return w[(j - 1) * 2 * D + q] end
  local wc = function(j, q) return w[2 * D * D + (j - 1) * D + q] end
  local u, r, rh, c, out = {}, {}, {}, {}, {}
  for q = 1, 2 * D do
    local v = x[q]
    for j = 1, D do v = v + h[j] * wur(j, q) end
    if q <= D then u[q] = gate(v) else r[q - D] = gate(v) end
  end
  for j = 1, D do rh[j] = r[j] * h[j] end
  for q = 1, D do
    local v = x[2 * D + q]
    for j = 1, D do v = v + rh[j] * wc(j, q) end
    c[q] = act(v)
  end
  for j = 1, D do
    out[j] = origin and (u[j] * h[j] + (1 - u[j]) * c[j]) or (u[j] * c[j] + (1 - u[j]) * h[j])
  end
  return out, u, r, c, rh
end

local function gru_ref(o)
  local D, lod = o.D, o.lod
  local act, gate = ACT[o.act or "tanh"], ACT[o.gate or "sigmoid"]
  local hidden = {}
  for s = 1, #lod - 1 do
    local b0, e0 = lod[s], lod[s + 1]
    local h = {}
    for j = 1, D do h[j] = o.h0 and o.h0[(s - 1) * D + j] or 0 end
    local first, last, step = b0, e0 - 1, 1
    if o.reverse then first, last, step = e0 - 1, b0, -1 end
    for row = first, last, step do
      local x = {}
      for q = 1, 3 * D do x[q] = o.x[row * 3 * D + q] + (o.b and o.b[q] or 0) end
      h = gru_step(x, h, o.w, D, act, gate, o.origin)
      for j = 1, D do hidden[row * D + j] = h[j] end
    end
  end
  return hidden
end

local function case_inputs(c, seed, dtype)
  local D, rows = c.D, c.lod[#c.lod]
  local ins = {
    Input = T.tensor(rand_values(rows * 3 * D, seed, c.scale or 1.5), { shape = { rows, 3 * D }, lod = { c.lod }, dtype = dtype }),
    Weight = T.tensor(rand_values(D * 3 * D, seed + 1, 0.8), { shape = { D, 3 * D }, dtype = dtype }),
  }
  if c.bias ~= false then ins.Bias = T.tensor(rand_values(3 * D, seed + 2, 0.5), { shape = { 1, 3 * D }, dtype = dtype }) end
  if c.h0 then ins.H0 = T.tensor(rand_values((#c.lod - 1) * D, seed + 3), { shape = { #c.lod - 1, D }, dtype = dtype }) end
  return ins
end

local function case_attrs(c)
  return { activation = c.act or "tanh", gate_activation = c.gate or "sigmoid",
           is_reverse = c.reverse or false, origin_mode = c.origin or false }
end

local CASES = {
  { name = "lengths 3, 1, 4, 2", D = 3, lod = { 0, 3, 4, 8, 10 } },
  { name = "origin_mode with H0", D = 2, lod = { 0, 2, 7, 8 }, h0 = true, origin = true },
  { name = "reversed with H0", D = 2, lod = { 0, 4, 5, 7 }, h0 = true, reverse = true },
  { name = "relu candidate, tanh gates, no bias", D = 2, lod = { 0, 1, 3, 6 }, act = "relu", gate = "tanh", bias = false },
  { name = "one sequence of length 1 with H0", D = 4, lod = { 0, 1 }, h0 = true },
  { name = "an empty sequence among others", D = 2, lod = { 0, 2, 2, 5 }, h0 = true, reverse = true },
  -- 8-wide vector activations plus a scalar tail
  { name = "hidden size 9, large pre-activations", D = 9, lod = { 0, 3, 4 }, h0 = true, scale = 6 },
}

describe("gru", function()
  for ci, c in ipairs(CASES) do
    for _, dtype in ipairs({ "float64", "float32" }) do
      it(c.name .. " (" .. dtype .. ")", function()
        local ins = case_inputs(c, ci * 10, dtype)
        local hidden = gru_ref{ D = c.D, lod = c.lod, x = ins.Input.data, w = ins.Weight.data,
          b = ins.Bias and ins.Bias.data, h0 = ins.H0 and ins.H0.data, reverse = c.reverse,
          origin = c.origin, act = c.act, gate = c.gate }
        local tol = dtype == "float32" and 2e-6 or 1e-12
        T.check_output{
          type = "gru", dtype = dtype, attrs = case_attrs(c), inputs = ins,
          expect = { Hidden = { shape = { c.lod[#c.lod], c.D }, data = hidden, lod = { c.lod } } },
          atol = tol, rtol = tol,
        }
      end)
    end

    it(c.name .. ": grads of every input", function()
      local ins = case_inputs(c, ci * 10 + 5)
      local wrt = { "Input", "Weight" }
      for _, s in ipairs({ "Bias", "H0" }) do if ins[s] then wrt[#wrt + 1] = s end end
      W.check{ type = "gru", attrs = case_attrs(c), inputs = ins, wrt = wrt, of = { "Hidden" }, seed = ci }
    end)
  end

  it("OpTest-style grad of mean(Hidden)", function()
    local c = CASES[2]
    T.check_grad{ type = "gru", attrs = case_attrs(c), inputs = case_inputs(c, 41),
                  wrt = { "Input", "Weight", "Bias", "H0" }, of = { "Hidden" } }
  end)

  it("batch order: many sequences of distinct lengths match the per-sequence run", function()
    local lod, r = { 0 }, 0
    for _, len in ipairs({ 5, 1, 9, 3, 7, 2, 8, 4, 6, 1 }) do r = r + len; lod[#lod + 1] = r end
    for _, reverse in ipairs({ false, true }) do
      local c = { D = 5, lod = lod, h0 = true, reverse = reverse }
      local ins = case_inputs(c, 3)
      local hidden = gru_ref{ D = 5, lod = lod, x = ins.Input.data, w = ins.Weight.data, b = ins.Bias.data,
                              h0 = ins.H0.data, reverse = reverse }
      T.check_output{ type = "gru", attrs = case_attrs(c), inputs = ins,
        expect = { Hidden = { shape = { r, 5 }, data = hidden } }, atol = 1e-12 }
    end
  end)

  it("runs a batch whose sequences are all empty", function()
    local res = T.run{ type = "gru",
      inputs = { Input = T.tensor({}, { shape = { 0, 6 }, lod = { { 0, 0 } } }),
                 Weight = T.tensor(rand_values(12, 1), { shape = { 2, 6 } }) } }
    assert.are.same({ 0, 2 }, res.Hidden[1].shape)
  end)

  it("rejects an Input without LoD and H0 with the wrong row count", function()
    local ins = case_inputs(CASES[1], 1)
    ins.Input.lod = nil
    expect_error(function() T.run{ type = "gru", inputs = ins } end, "gru", "in_Input_1", "no LoD")
    ins = case_inputs(CASES[1], 1)
    ins.H0 = T.tensor(rand_values(6, 1), { shape = { 2, 3 } })
    expect_error(function() T.run{ type = "gru", inputs = ins } end, "gru", "in_H0_1", "[2, 3]", "[4, 3]")
  end)

  it("rejects a Weight that is not [D, 3D] and an unknown activation", function()
    local ins = case_inputs(CASES[1], 1)
    ins.Weight = T.tensor(rand_values(3 * 6, 1), { shape = { 3, 6 } })
    expect_error(function() T.run{ type = "gru", inputs = ins } end, "gru", "in_Weight_1", "[3, 6]", "[D, 3D]")
    expect_error(function() T.run{ type = "gru", attrs = { activation = "swish" }, inputs = case_inputs(CASES[1], 1) } end,
      "gru", "activation", "swish")
  end)
end)

describe("gru_unit", function()
  local function unit_ref(ins, N, D, act, gate, origin)
    local g, rh, h = {}, {}, {}
    for r = 0, N - 1 do
      local x, hp = {}, {}
      for q = 1, 3 * D do x[q] = ins.Input.data[r * 3 * D + q] + (ins.Bias and ins.Bias.data[q] or 0) end
      for j = 1, D do hp[j] = ins.HiddenPrev.data[r * D + j] end
      local out, u, rg, c, rhp = gru_step(x, hp, ins.Weight.data, D, ACT[CODES[act]], ACT[CODES[gate]], origin)
      for j = 1, D do
        h[r * D + j], rh[r * D + j] = out[j], rhp[j]
        g[r * 3 * D + j], g[r * 3 * D + D + j], g[r * 3 * D + 2 * D + j] = u[j], rg[j], c[j]
      end
    end
    return g, rh, h
  end

  local function unit_inputs(N, D, seed, dtype, bias)
    local ins = {
      Input = T.tensor(rand_values(N * 3 * D, seed, 1.5), { shape = { N, 3 * D }, dtype = dtype }),
      HiddenPrev = T.tensor(rand_values(N * D, seed + 1), { shape = { N, D }, dtype = dtype }),
      Weight = T.tensor(rand_values(D * 3 * D, seed + 2, 0.8), { shape = { D, 3 * D }, dtype = dtype }),
    }
    if bias then ins.Bias = T.tensor(rand_values(3 * D, seed + 3), { shape = { 1, 3 * D }, dtype = dtype }) end
    return ins
  end

  for _, c in ipairs({
    { act = 2, gate = 1, origin = false, bias = true },
    { act = 2, gate = 1, origin = true, bias = true },
    { act = 3, gate = 2, origin = false, bias = false },
    { act = 0, gate = 1, origin = true, bias = true },
  }) do
    local label = ("activation %d, gate_activation %d, origin_mode %s%s"):format(c.act, c.gate, tostring(c.origin),
      c.bias and "" or ", no bias")
    for _, dtype in ipairs({ "float64", "float32" }) do
      it(label .. " (" .. dtype .. ")", function()
        local N, D = 3, 2
        local ins = unit_inputs(N, D, 5, dtype, c.bias)
        local g, rh, h = unit_ref(ins, N, D, c.act, c.gate, c.origin)
        local tol = dtype == "float32" and 2e-6 or 1e-12
        T.check_output{ type = "gru_unit", dtype = dtype,
          attrs = { activation = c.act, gate_activation = c.gate, origin_mode = c.origin }, inputs = ins,
          expect = { Gate = { shape = { N, 3 * D }, data = g }, ResetHiddenPrev = { shape = { N, D }, data = rh },
                     Hidden = { shape = { N, D }, data = h } }, atol = tol, rtol = tol }
      end)
    end
    it(label .. " grads", function()
      local ins = unit_inputs(2, 3, 9, nil, c.bias)
      local wrt = { "Input", "HiddenPrev", "Weight" }
      if c.bias then wrt[4] = "Bias" end
      W.check{ type = "gru_unit", attrs = { activation = c.act, gate_activation = c.gate, origin_mode = c.origin },
               inputs = ins, wrt = wrt, of = { "Hidden" } }
    end)
  end

  it("rejects an activation code outside 0..3 and a HiddenPrev of the wrong shape", function()
    expect_error(function()
      T.run{ type = "gru_unit", attrs = { activation = 7 }, inputs = unit_inputs(2, 2, 1, nil, true) }
    end, "gru_unit", "activation", "7")
    local ins = unit_inputs(2, 2, 1, nil, true)
    ins.HiddenPrev = T.tensor(rand_values(6, 1), { shape = { 2, 3 } })
    expect_error(function() T.run{ type = "gru_unit", inputs = ins } end, "gru_unit", "in_HiddenPrev_1", "[2, 3]", "[2, 2]")
  end)
end)
