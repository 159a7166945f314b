-- lstm (Fluid's dynamic LSTM over LoD sequences) and lstm_unit: values
-- against a plain Lua LSTM run sequence by sequence (no batching), with and
-- without peepholes, initial states, reversal and other activations; batches
-- whose sequences all differ in length (incl. length 1 and empty ones);
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

-- Plain LSTM. x flat [T, 4D] with gate blocks {c, i, f, o}; w flat [D, 4D];
-- b flat (4D or 7D) or nil; h0/c0 flat [N, D] or nil. Returns hidden, cell flat [T, D].
local function lstm_ref(o)
  local D, lod = o.D, o.lod
  local ga, ca, na = ACT[o.gate or "sigmoid"], ACT[o.cell or "tanh"], ACT[o.cand or "tanh"]
  local peep = o.peep and o.b
  local hidden, cell = {}, {}
  for s = 1, #lod - 1 do
    local b0, e0 = lod[s], lod[s + 1]
    local h, c = {}, {}
    for j = 1, D do
      h[j] = o.h0 and o.h0[(s - 1) * D + j] or 0
      c[j] = o.c0 and o.c0[(s - 1) * D + j] or 0
    end
    local first, last, step = b0, e0 - 1, 1
    if o.reverse then first, last, step = e0 - 1, b0, -1 end
    for r = first, last, step do
      local g = {}
      for q = 1, 4 * D do
        local v = o.x[r * 4 * D + q] + (o.b and o.b[q] or 0)
        for j = 1, D do v = v + h[j] * o.w[(j - 1) * 4 * D + q] end
        g[q] = v
      end
      local nh, nc = {}, {}
      for j = 1, D do
        local a = na(g[j])
        local ig = g[D + j] + (peep and c[j] * o.b[4 * D + j] or 0)
        local fg = g[2 * D + j] + (peep and c[j] * o.b[5 * D + j] or 0)
        ig, fg = ga(ig), ga(fg)
        nc[j] = a * ig + c[j] * fg
        local og = ga(g[3 * D + j] + (peep and nc[j] * o.b[6 * D + j] or 0))
        nh[j] = og * ca(nc[j])
      end
      h, c = nh, nc
      for j = 1, D do
        hidden[r * D + j] = h[j]
        cell[r * D + j] = c[j]
      end
    end
  end
  return hidden, cell
end

-- the inputs of one case as test tensors
local function case_inputs(c, seed, dtype)
  local D, rows = c.D, c.lod[#c.lod]
  local nseq = #c.lod - 1
  local ins = {
    Input = T.tensor(rand_values(rows * 4 * D, seed, c.scale or 1.5), { shape = { rows, 4 * D }, lod = { c.lod }, dtype = dtype }),
    Weight = T.tensor(rand_values(D * 4 * D, seed + 1, 0.8), { shape = { D, 4 * D }, dtype = dtype }),
  }
  if c.bias ~= false then
    local bw = c.peep and 7 * D or 4 * D
    ins.Bias = T.tensor(rand_values(bw, seed + 2, 0.5), { shape = { 1, bw }, dtype = dtype })
  end
  if c.h0 then ins.H0 = T.tensor(rand_values(nseq * D, seed + 3), { shape = { nseq, D }, dtype = dtype }) end
  if c.c0 then ins.C0 = T.tensor(rand_values(nseq * D, seed + 4), { shape = { nseq, D }, dtype = dtype }) end
  return ins
end

local function case_attrs(c)
  return { use_peepholes = c.peep or false, is_reverse = c.reverse or false,
           gate_activation = c.gate or "sigmoid", cell_activation = c.cell or "tanh",
           candidate_activation = c.cand or "tanh" }
end

local CASES = {
  { name = "lengths 3, 1, 4, 2 with peepholes", D = 3, lod = { 0, 3, 4, 8, 10 }, peep = true },
  { name = "no peepholes, H0 and C0", D = 2, lod = { 0, 2, 7, 8 }, h0 = true, c0 = true },
  { name = "reversed, peepholes, H0 and C0", D = 2, lod = { 0, 4, 5, 7 }, peep = true, reverse = true, h0 = true, c0 = true },
  { name = "only H0, relu candidate, identity cell", D = 2, lod = { 0, 1, 3, 6 }, h0 = true, cand = "relu", cell = "identity" },
  { name = "only C0, tanh gates, no bias", D = 2, lod = { 0, 3, 5 }, c0 = true, gate = "tanh", bias = false },
  { name = "one sequence of length 1", D = 4, lod = { 0, 1 }, peep = true, h0 = true },
  { name = "an empty sequence among others", D = 2, lod = { 0, 2, 2, 5 }, peep = true, h0 = true, c0 = true },
  -- 8-wide vector activations plus a scalar tail
  { name = "hidden size 9, large pre-activations", D = 9, lod = { 0, 2, 5 }, peep = true, h0 = true, scale = 6 },
}

describe("lstm", function()
  for ci, c in ipairs(CASES) do
    for _, dtype in ipairs({ "float64", "float32" }) do
      it(c.name .. " (" .. dtype .. ")", function()
        local ins = case_inputs(c, ci * 10, dtype)
        local hidden, cell = lstm_ref{
          D = c.D, lod = c.lod, x = ins.Input.data, w = ins.Weight.data, b = ins.Bias and ins.Bias.data,
          h0 = ins.H0 and ins.H0.data, c0 = ins.C0 and ins.C0.data, peep = c.peep, reverse = c.reverse,
          gate = c.gate, cell = c.cell, cand = c.cand,
        }
        local rows = c.lod[#c.lod]
        local tol = dtype == "float32" and 2e-6 or 1e-12
        T.check_output{
          type = "lstm", dtype = dtype, attrs = case_attrs(c), inputs = ins,
          expect = { Hidden = { shape = { rows, c.D }, data = hidden, lod = { c.lod } },
                     Cell = { shape = { rows, c.D }, data = cell, lod = { c.lod } } },
          atol = tol, rtol = tol,
        }
      end)
    end

    it(c.name .. ": grads of every input", function()
      local ins = case_inputs(c, ci * 10 + 5)
      local wrt = { "Input", "Weight" }
      for _, s in ipairs({ "Bias", "H0", "C0" }) do if ins[s] then wrt[#wrt + 1] = s end end
      W.check{ type = "lstm", attrs = case_attrs(c), inputs = ins, wrt = wrt, of = { "Hidden", "Cell" },
               seed = ci }
    end)
  end

  it("grads through Hidden alone (Cell@GRAD filled with zeros), OpTest-style", function()
    local c = CASES[1]
    T.check_grad{ type = "lstm", attrs = case_attrs(c), inputs = case_inputs(c, 77),
                  wrt = { "Input", "Weight", "Bias" }, of = { "Hidden" } }
  end)

  it("batch order: many sequences of distinct lengths match the per-sequence run", function()
    local lod, r = { 0 }, 0
    for _, len in ipairs({ 5, 1, 9, 3, 7, 2, 8, 4, 6, 1 }) do r = r + len; lod[#lod + 1] = r end
    local c = { D = 5, lod = lod, peep = true, h0 = true, c0 = true }
    for _, reverse in ipairs({ false, true }) do
      c.reverse = reverse
      local ins = case_inputs(c, 3)
      local hidden, cell = lstm_ref{ D = 5, lod = lod, x = ins.Input.data, w = ins.Weight.data, b = ins.Bias.data,
        h0 = ins.H0.data, c0 = ins.C0.data, peep = true, reverse = reverse }
      T.check_output{ type = "lstm", attrs = case_attrs(c), inputs = ins,
        expect = { Hidden = { shape = { r, 5 }, data = hidden }, Cell = { shape = { r, 5 }, data = cell } },
        atol = 1e-12 }
    end
  end)

  it("runs a batch whose sequences are all empty", function()
    local res = T.run{ type = "lstm", attrs = { use_peepholes = false },
      inputs = { Input = T.tensor({}, { shape = { 0, 8 }, lod = { { 0, 0, 0 } } }),
                 Weight = T.tensor(rand_values(16, 1), { shape = { 2, 8 } }),
                 H0 = T.tensor(rand_values(4, 2), { shape = { 2, 2 } }) } }
    assert.are.same({ 0, 2 }, res.Hidden[1].shape)
    assert.are.same({ 0, 2 }, res.Cell[1].shape)
  end)

  it("rejects an Input without LoD, naming the op and the variable", function()
    local ins = case_inputs(CASES[2], 1)
    ins.Input.lod = nil
    ins.H0, ins.C0 = nil, nil
    expect_error(function() T.run{ type = "lstm", attrs = { use_peepholes = false }, inputs = ins } end,
      "lstm", "in_Input_1", "no LoD")
  end)

  it("rejects mismatched shapes: Weight, Bias width with peepholes, H0 rows", function()
    local ins = case_inputs(CASES[2], 1)
    ins.Weight = T.tensor(rand_values(2 * 6, 1), { shape = { 2, 6 } })
    expect_error(function() T.run{ type = "lstm", attrs = { use_peepholes = false }, inputs = ins } end,
      "lstm", "in_Weight_1", "[2, 6]", "[D, 4D]")
    ins = case_inputs(CASES[2], 1)
    expect_error(function() T.run{ type = "lstm", attrs = { use_peepholes = true }, inputs = ins } end,
      "lstm", "in_Bias_1", "[1, 8]", "[1, 14]")
    ins.H0 = T.tensor(rand_values(4, 1), { shape = { 2, 2 } })
    expect_error(function() T.run{ type = "lstm", attrs = { use_peepholes = false }, inputs = ins } end,
      "lstm", "in_H0_1", "[2, 2]", "[3, 2]")
  end)

  it("rejects an unknown activation", function()
    expect_error(function()
      T.run{ type = "lstm", attrs = { use_peepholes = false, cell_activation = "softsign" }, inputs = case_inputs(CASES[2], 1) }
    end, "lstm", "cell_activation", "softsign")
  end)
end)

describe("lstm_unit", function()
  local function unit_ref(x, cp, N, D, fb)
    local sig, th = ACT.sigmoid, math.tanh
    local c, h = {}, {}
    for r = 0, N - 1 do
      for j = 1, D do
        local xr = r * 4 * D
        local i, f = sig(x[xr + j]), sig(x[xr + D + j] + fb)
        local o, g = sig(x[xr + 2 * D + j]), th(x[xr + 3 * D + j])
        local q = r * D + j
        c[q] = f * cp[q] + i * g
        h[q] = o * th(c[q])
      end
    end
    return c, h
  end

  for _, fb in ipairs({ 0, 1.5 }) do
    for _, dtype in ipairs({ "float64", "float32" }) do
      it(("values, forget_bias %g (%s)"):format(fb, dtype), function()
        local N, D = 3, 4
        local x, cp = rand_values(N * 4 * D, 5, 2), rand_values(N * D, 6)
        local c, h = unit_ref(x, cp, N, D, fb)
        local tol = dtype == "float32" and 2e-6 or 1e-12
        T.check_output{ type = "lstm_unit", dtype = dtype, attrs = { forget_bias = fb },
          inputs = { X = T.tensor(x, { shape = { N, 4 * D }, dtype = dtype }),
                     C_prev = T.tensor(cp, { shape = { N, D }, dtype = dtype }) },
          expect = { C = { shape = { N, D }, data = c }, H = { shape = { N, D }, data = h } }, atol = tol, rtol = tol }
      end)
    end
    it(("grads, forget_bias %g"):format(fb), function()
      local ins = { X = T.tensor(rand_values(2 * 12, 8, 2), { shape = { 2, 12 } }),
                    C_prev = T.tensor(rand_values(6, 9), { shape = { 2, 3 } }) }
      W.check{ type = "lstm_unit", attrs = { forget_bias = fb }, inputs = ins, wrt = { "X", "C_prev" }, of = { "C", "H" } }
      T.check_grad{ type = "lstm_unit", attrs = { forget_bias = fb }, inputs = ins, wrt = { "X", "C_prev" }, of = { "H" } }
    end)
  end

  it("rejects X that is not [N, 4D] for C_prev [N, D]", function()
    expect_error(function()
      T.run{ type = "lstm_unit", inputs = { X = T.tensor(rand_values(10, 1), { shape = { 2, 5 } }),
                                            C_prev = T.tensor(rand_values(4, 1), { shape = { 2, 2 } }) } }
    end, "lstm_unit", "in_X_1", "[2, 5]", "[2, 8]")
  end)
end)
