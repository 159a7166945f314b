-- CUDA kernels of the recurrent ops (lstm, gru, lstm_unit, gru_unit and
-- their grads; kernels/cuda/lstm.cu, gru.cu) against the CPU kernels (tag:
-- gpu), with the helpers of spec/cuda_spec.lua (spec/helpers/cuda_compare.lua):
-- each case runs a one-op program on both places with the same random
-- inputs and compares every output (the Batch* outputs too: both places use
-- the same sequence-to-batch order) and the grads of every input under a
-- loss that weighs the outputs with random weights; the kernel counter shows
-- the CUDA kernel ran. LoDs: one sequence, equal lengths, unsorted lengths,
-- an empty sequence, only empty ones; with and without Bias, H0, C0, peepholes, is_reverse,
-- other activations, float64; hidden sizes that are not multiples of 32.
-- Then a few training steps of small LSTM and GRU text classifiers, CPU vs
-- CUDA from the same parameters.
--
-- Without a GPU the comparisons skip with the reason; the spec's own code
-- still runs here through the fake backend (spec/fixtures/fake_cuda_backend.c:
-- CPU kernels on both places), the last describe below.
local ffi = require("ffi")
local oar = require("oar")
local lib = require("oar.lib")
local H = require("spec.helpers.cuda_compare")
local C = lib.C
local layers = oar.layers
local rand, randint, same, to_tensor, same_training = H.rand, H.randint, H.same, H.to_tensor, H.same_training

-- LoDs (offsets) of the cases
local LODS = {
  { name = "one sequence", lod = { 0, 6 } },
  { name = "equal lengths", lod = { 0, 3, 6, 9 } },
  { name = "unsorted lengths", lod = { 0, 2, 7, 8, 12, 15 } },
  { name = "an empty sequence", lod = { 0, 3, 3, 7, 8 } },
}

local function tol_of(dtype) return dtype == "float64" and 1e-10 or 5e-5 end

-- a [rows, w] input carrying the LoD
local function seq_input(lod, w, dtype)
  local x = rand({ lod[#lod], w }, -1, 1, dtype)
  x.lod = { lod }
  return x
end

local function lstm_case(c)
  local dt, D, lod = c.dtype or "float32", c.D, c.lod
  local nseq = #lod - 1
  local inputs = { Input = seq_input(lod, 4 * D, dt), Weight = rand({ D, 4 * D }, -0.5, 0.5, dt) }
  local wrt = { "Input", "Weight" }
  if c.bias ~= false then
    inputs.Bias = rand({ 1, (c.peep and 7 or 4) * D }, -0.5, 0.5, dt)
    wrt[#wrt + 1] = "Bias"
  end
  if c.h0 then inputs.H0 = rand({ nseq, D }, -1, 1, dt); wrt[#wrt + 1] = "H0" end
  if c.c0 then inputs.C0 = rand({ nseq, D }, -1, 1, dt); wrt[#wrt + 1] = "C0" end
  local tol = c.tol or tol_of(dt)
  same{ type = "lstm", inputs = inputs,
        attrs = { use_peepholes = c.peep or false, is_reverse = c.reverse or false,
                  gate_activation = c.gate or "sigmoid", cell_activation = c.cell or "tanh",
                  candidate_activation = c.cand or "tanh" },
        outputs = { Hidden = 1, Cell = 1, BatchGate = 1, BatchCellPreAct = 1 },
        grad = { wrt = wrt, of = c.of or { "Hidden", "Cell" } }, atol = tol, rtol = tol }
end

local function gru_case(c)
  local dt, D, lod = c.dtype or "float32", c.D, c.lod
  local nseq = #lod - 1
  local inputs = { Input = seq_input(lod, 3 * D, dt), Weight = rand({ D, 3 * D }, -0.5, 0.5, dt) }
  local wrt = { "Input", "Weight" }
  if c.bias ~= false then inputs.Bias = rand({ 1, 3 * D }, -0.5, 0.5, dt); wrt[#wrt + 1] = "Bias" end
  if c.h0 then inputs.H0 = rand({ nseq, D }, -1, 1, dt); wrt[#wrt + 1] = "H0" end
  local tol = c.tol or tol_of(dt)
  same{ type = "gru", inputs = inputs,
        attrs = { is_reverse = c.reverse or false, origin_mode = c.origin or false,
                  activation = c.act or "tanh", gate_activation = c.gate or "sigmoid" },
        outputs = { Hidden = 1, BatchGate = 1, BatchResetHiddenPrev = 1, BatchHidden = 1 },
        grad = { wrt = wrt, of = { "Hidden" } }, atol = tol, rtol = tol }
end

-- a batch of word-id sequences (lengths 1..7) and labels for the classifiers
local function text_feed(batch, vocab)
  return function()
    local offs, rows = { 0 }, 0
    for i = 1, batch do
      rows = rows + 1 + math.floor(H.rnd() * 7)
      offs[i + 1] = rows
    end
    local words = randint({ rows, 1 }, vocab)
    words.lod = { offs }
    return { words = to_tensor(words), label = to_tensor(randint({ batch, 1 }, 2)) }
  end
end

local function classifier(cell, hidden, vocab)
  return function()
    local words = layers.data{ name = "words", shape = { 1 }, dtype = "int64", lod_level = 1 }
    local label = layers.data{ name = "label", shape = { 1 }, dtype = "int64" }
    local emb = layers.embedding{ input = words, size = { vocab, 8 } }
    local h
    if cell == "gru" then
      h = layers.dynamic_gru{ input = layers.fc{ input = emb, size = 3 * hidden }, size = hidden }
    else
      h = layers.dynamic_lstm{ input = layers.fc{ input = emb, size = 4 * hidden }, size = 4 * hidden }
    end
    local pooled = layers.sequence_pool{ input = h, pool_type = "average" }
    local pred = layers.fc{ input = pooled, size = 2, act = "softmax" }
    return layers.mean(layers.cross_entropy{ input = pred, label = label })
  end
end

describe("CUDA recurrent kernels #gpu", function()
  local why = H.no_gpu("cuda_rnn_spec")
  if why then pending(why) return end

  describe("lstm", function()
    for _, l in ipairs(LODS) do
      it(l.name .. ": plain, with H0 and C0, with peepholes, reversed", function()
        lstm_case{ lod = l.lod, D = 5 }
        lstm_case{ lod = l.lod, D = 7, h0 = true, c0 = true }
        lstm_case{ lod = l.lod, D = 6, peep = true, c0 = true }
        lstm_case{ lod = l.lod, D = 5, peep = true, reverse = true, h0 = true }
      end)
    end
    it("no Bias; only H0; only C0; a loss on Hidden alone (no Cell@GRAD); every sequence empty", function()
      local lod = LODS[3].lod
      lstm_case{ lod = lod, D = 4, bias = false }
      lstm_case{ lod = lod, D = 4, h0 = true }
      lstm_case{ lod = lod, D = 4, c0 = true, peep = true }
      lstm_case{ lod = lod, D = 4, h0 = true, of = { "Hidden" } }
      lstm_case{ lod = { 0, 0, 0 }, D = 3, h0 = true, c0 = true, peep = true }
    end)
    it("other activations", function()
      lstm_case{ lod = LODS[3].lod, D = 5, cand = "relu", cell = "identity", peep = true, c0 = true }
      lstm_case{ lod = LODS[4].lod, D = 3, gate = "tanh", cell = "sigmoid", cand = "identity", reverse = true }
    end)
    it("float64", function()
      lstm_case{ lod = LODS[3].lod, D = 5, dtype = "float64", peep = true, h0 = true, c0 = true }
      lstm_case{ lod = LODS[4].lod, D = 3, dtype = "float64", reverse = true }
    end)
    it("hidden sizes past one warp, and a longer batch", function()
      lstm_case{ lod = LODS[3].lod, D = 33, peep = true, h0 = true, c0 = true, tol = 1e-4 }
      lstm_case{ lod = { 0, 17, 20, 41, 41, 50, 63 }, D = 40, reverse = true, h0 = true, tol = 1e-4 }
    end)
  end)

  describe("gru", function()
    for _, l in ipairs(LODS) do
      it(l.name .. ": plain, with H0, reversed, origin_mode", function()
        gru_case{ lod = l.lod, D = 5 }
        gru_case{ lod = l.lod, D = 7, h0 = true }
        gru_case{ lod = l.lod, D = 6, reverse = true, h0 = true }
        gru_case{ lod = l.lod, D = 5, origin = true }
      end)
    end
    it("no Bias, other activations, every sequence empty", function()
      gru_case{ lod = LODS[3].lod, D = 4, bias = false, h0 = true }
      gru_case{ lod = { 0, 0, 0 }, D = 3, h0 = true }
      gru_case{ lod = LODS[3].lod, D = 4, act = "relu", gate = "tanh", reverse = true }
      gru_case{ lod = LODS[4].lod, D = 3, act = "identity", origin = true, h0 = true }
    end)
    it("float64", function()
      gru_case{ lod = LODS[3].lod, D = 5, dtype = "float64", h0 = true, origin = true }
      gru_case{ lod = LODS[4].lod, D = 3, dtype = "float64", reverse = true }
    end)
    it("hidden sizes past one warp, and a longer batch", function()
      gru_case{ lod = LODS[3].lod, D = 33, h0 = true, tol = 1e-4 }
      gru_case{ lod = { 0, 17, 20, 41, 41, 50, 63 }, D = 40, reverse = true, h0 = true, tol = 1e-4 }
    end)
  end)

  describe("lstm_unit and gru_unit", function()
    it("lstm_unit with forget_bias, float32 and float64", function()
      for _, dt in ipairs({ "float32", "float64" }) do
        for _, nd in ipairs({ { 1, 3 }, { 5, 33 } }) do
          local N, D = nd[1], nd[2]
          same{ type = "lstm_unit", inputs = { X = rand({ N, 4 * D }, -2, 2, dt), C_prev = rand({ N, D }, -1, 1, dt) },
                attrs = { forget_bias = 0.5 }, outputs = { C = 1, H = 1 },
                grad = { wrt = { "X", "C_prev" }, of = { "C", "H" } }, atol = tol_of(dt), rtol = tol_of(dt) }
        end
      end
    end)
    it("gru_unit with and without Bias, origin_mode, activation codes, float32 and float64", function()
      for _, c in ipairs({ { dt = "float32", N = 4, D = 5, bias = true },
                           { dt = "float32", N = 1, D = 33, origin = true, act = 3, gate = 2 },
                           { dt = "float64", N = 3, D = 6, bias = true, origin = true },
                           { dt = "float64", N = 2, D = 4, act = 0 } }) do
        local inputs = { Input = rand({ c.N, 3 * c.D }, -1, 1, c.dt), HiddenPrev = rand({ c.N, c.D }, -1, 1, c.dt),
                         Weight = rand({ c.D, 3 * c.D }, -0.5, 0.5, c.dt) }
        local wrt = { "Input", "HiddenPrev", "Weight" }
        if c.bias then inputs.Bias = rand({ 1, 3 * c.D }, -0.5, 0.5, c.dt); wrt[#wrt + 1] = "Bias" end
        local tol = c.D > 32 and 1e-4 or tol_of(c.dt)
        same{ type = "gru_unit", inputs = inputs,
              attrs = { activation = c.act or 2, gate_activation = c.gate or 1, origin_mode = c.origin or false },
              outputs = { Gate = 1, ResetHiddenPrev = 1, Hidden = 1 },
              grad = { wrt = wrt, of = { "Hidden" } }, atol = tol, rtol = tol }
      end
    end)
  end)

  describe("training steps", function()
    for _, cell in ipairs({ "lstm", "gru" }) do
      it("a " .. cell .. " text classifier (embedding, fc, dynamic_" .. cell .. ", sequence_pool, fc) with Adam", function()
        oar.set_flags{ count_kernels = true }
        C.oar_kernel_calls_reset()
        same_training(classifier(cell, 12, 30), text_feed(6, 30), 4, function()
          return oar.optimizer.Adam{ learning_rate = 0.01, epsilon = 1e-3 }
        end, 2e-4)
        local fwd, bwd = tonumber(C.oar_kernel_calls(cell, H.GPU)), tonumber(C.oar_kernel_calls(cell .. "_grad", H.GPU))
        oar.set_flags{ count_kernels = false }
        if C.oar_kernel_registered(cell, H.GPU, C.OAR_FP32) then
          assert.is_true(fwd >= 4 and bwd >= 4, ("%s ran %d times and %s_grad %d times on the CUDA place"):format(
            cell, fwd, cell, bwd))
        end
      end)
    end
  end)
end)

-- The spec's own code (cases, loss weights, counters, the training nets)
-- keeps working on a machine without a GPU: the whole file runs again in a
-- child process through the fake backend, CPU kernels on both places.
describe("the recurrent GPU spec through the fake backend", function()
  if os.getenv("OAR_CUDA_RNN_SPEC_CHILD") then return end
  it("runs spec/cuda_rnn_spec.lua end to end", function()
    local function sh(cmd)
      local p = io.popen(cmd .. " 2>&1; echo \"exit $?\"")
      local out = p:read("*a")
      p:close()
      return tonumber(out:match("exit (%d+)%s*$")), out
    end
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p '" .. dir .. "'") == 0)
    local so = dir .. "/fake_cuda_backend.so"
    local code, out = sh("gcc -std=c11 -D_GNU_SOURCE -fPIC -shared -Isrc -Ibuild spec/fixtures/fake_cuda_backend.c -o '" ..
                         so .. "' -Lbuild -loar -Wl,-rpath,$PWD/build")
    assert.are.equal(0, code, out)
    code, out = sh("env OAR_CUDA_RNN_SPEC_CHILD=1 OAR_CUDA_BACKEND='" .. so .. "' busted spec/cuda_rnn_spec.lua")
    os.execute("rm -rf '" .. dir .. "'")
    assert.are.equal(0, code, out)
    assert.matches("(%d+) successes / 0 failures / 0 errors / 0 pending", out)
    assert.is_true(tonumber(out:match("(%d+) successes")) >= 18, out)
  end)
end)
