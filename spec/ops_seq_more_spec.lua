-- add_position_encoding, row_conv, sequence_topk_avg_pooling,
-- match_matrix_tensor (issue 22): ports of Fluid 1.8's
-- test_add_position_encoding_op.py, test_row_conv_op.py,
-- sequence/test_sequence_topk_avg_pooling.py and
-- test_match_matrix_tensor_op.py with references re-computed in plain Lua,
-- float64 finite-difference gradients, and errors naming the op and variable.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")
local W = require("spec.helpers.sequence_grad")
local expect_error = require("spec.helpers.expect_error")
local offsets = require("spec.helpers.index").offsets
local ffi = require("ffi")

-- a float attribute as the op reads it (float32)
local function f32(v) return tonumber(ffi.new("float", v)) end

-- ---- add_position_encoding ------------------------------------------------------------
-- out[row j of a sequence] from the formula of Fluid's docs, over the sequences' offsets
local function ape_ref(x, D, offs, alpha, beta)
  local out, half = {}, D / 2
  alpha, beta = f32(alpha), f32(beta)
  for s = 1, #offs - 1 do
    for r = offs[s], offs[s + 1] - 1 do
      local j = r - offs[s]
      for k = 0, half - 1 do
        local v = half > 1 and j / 10000 ^ (k / (half - 1)) or j / 10000
        out[r * D + k + 1] = x[r * D + k + 1] * alpha + math.sin(v) * beta
        out[r * D + half + k + 1] = x[r * D + half + k + 1] * alpha + math.cos(v) * beta
      end
    end
  end
  return out
end

describe("add_position_encoding", function()
  it("a [2, 15, 4] tensor, alpha 0.6, beta 0.5 (float64 and float32)", function()
    local x = R.uniform(2 * 15 * 4, 3, 0.1, 1)
    for _, dt in ipairs({ "float64", "float32" }) do
      T.check_output{
        type = "add_position_encoding", attrs = { alpha = 0.6, beta = 0.5 }, dtype = dt,
        inputs = { X = T.tensor(x, { shape = { 2, 15, 4 }, dtype = dt }) },
        expect = { Out = { shape = { 2, 15, 4 }, data = ape_ref(x, 4, { 0, 15, 30 }, 0.6, 0.5) } },
        atol = dt == "float32" and 1e-5 or 1e-12,
      }
    end
  end)

  it("a LoD tensor [20, 6] with lengths 13, 7", function()
    local x = R.uniform(20 * 6, 5, 0.1, 1)
    T.check_output{
      type = "add_position_encoding", attrs = { alpha = 0.6, beta = 0.5 },
      inputs = { X = T.tensor(x, { shape = { 20, 6 }, lod = { { 0, 13, 20 } } }) },
      expect = { Out = { shape = { 20, 6 }, data = ape_ref(x, 6, { 0, 13, 20 }, 0.6, 0.5), lod = { { 0, 13, 20 } } } },
      atol = 1e-12,
    }
  end)

  it("an encoding of size 2 (half 1: j / 10000)", function()
    local x = R.uniform(6, 9, 0.1, 1)
    T.check_output{
      type = "add_position_encoding", inputs = { X = T.tensor(x, { shape = { 1, 3, 2 } }) },
      expect = { Out = { shape = { 1, 3, 2 }, data = ape_ref(x, 2, { 0, 3 }, 1, 1) } }, atol = 1e-12,
    }
  end)

  it("grad (tensor and LoD)", function()
    T.check_grad{ type = "add_position_encoding", attrs = { alpha = 0.6, beta = 0.5 },
                  inputs = { X = T.tensor(R.uniform(2 * 5 * 4, 3, 0.1, 1), { shape = { 2, 5, 4 } }) },
                  wrt = { "X" }, of = { "Out" } }
    W.check{ type = "add_position_encoding", attrs = { alpha = 0.6, beta = 0.5 },
             inputs = { X = T.tensor(R.uniform(9 * 6, 4, 0.1, 1), { shape = { 9, 6 }, lod = { { 0, 6, 9 } } }) },
             wrt = { "X" }, of = { "Out" } }
  end)

  it("refuses an odd encoding size and a 2-D input without LoD", function()
    expect_error(function()
      T.run{ type = "add_position_encoding", inputs = { X = T.tensor(R.uniform(6, 1), { shape = { 1, 2, 3 } }) } }
    end, "add_position_encoding", "in_X", "even")
    expect_error(function()
      T.run{ type = "add_position_encoding", inputs = { X = T.tensor(R.uniform(8, 1), { shape = { 2, 4 } }) } }
    end, "add_position_encoding", "in_X", "[batch, max_len, D]")
  end)
end)

-- ---- row_conv -------------------------------------------------------------------------
local function row_conv_ref(x, w, D, ctx, offs)
  local out = {}
  for s = 1, #offs - 1 do
    for r = offs[s], offs[s + 1] - 1 do
      for d = 1, D do
        local acc = 0
        for q = 0, ctx - 1 do
          if r + q < offs[s + 1] then acc = acc + w[q * D + d] * x[(r + q) * D + d] end
        end
        out[r * D + d] = acc
      end
    end
  end
  return out
end

describe("row_conv", function()
  -- test_row_conv_op.py: x (T=22, D=16) with lod [[2, 3, 17]], filter (context 3, D)
  local lens, D, ctx = { 2, 3, 17 }, 16, 3
  local offs = offsets(lens)
  local x, w = R.symmetric(22 * D, 3), R.symmetric(ctx * D, 5)
  for _, dt in ipairs({ "float64", "float32" }) do
    it("lengths 2, 3, 17, D 16, context 3 (" .. dt .. ")", function()
      T.check_output{
        type = "row_conv", dtype = dt,
        inputs = { X = T.tensor(x, { shape = { 22, D }, lod = { offs }, dtype = dt }),
                   Filter = T.tensor(w, { shape = { ctx, D }, dtype = dt }) },
        expect = { Out = { shape = { 22, D }, data = row_conv_ref(x, w, D, ctx, offs), lod = { offs } } },
        atol = dt == "float32" and 1e-5 or 1e-12,
      }
    end)
  end

  -- test_row_conv_op.py TestRowOpCase2: lod [[20, 30, 50]], D 35, context 8; and a 3-D input
  it("lengths 20, 30, 50, D 35, context 8", function()
    local o2 = offsets({ 20, 30, 50 })
    local x2, w2 = R.symmetric(100 * 35, 7), R.symmetric(8 * 35, 9)
    T.check_output{
      type = "row_conv",
      inputs = { X = T.tensor(x2, { shape = { 100, 35 }, lod = { o2 } }), Filter = T.tensor(w2, { shape = { 8, 35 } }) },
      expect = { Out = { shape = { 100, 35 }, data = row_conv_ref(x2, w2, 35, 8, o2) } }, atol = 1e-12,
    }
  end)

  it("a [2, 5, 3] input without LoD: each batch entry is a sequence", function()
    local x3, w3 = R.symmetric(30, 11), R.symmetric(6, 13)
    T.check_output{
      type = "row_conv",
      inputs = { X = T.tensor(x3, { shape = { 2, 5, 3 } }), Filter = T.tensor(w3, { shape = { 2, 3 } }) },
      expect = { Out = { shape = { 2, 5, 3 }, data = row_conv_ref(x3, w3, 3, 2, { 0, 5, 10 }) } }, atol = 1e-12,
    }
  end)

  it("grad of X and Filter (LoD and 3-D)", function()
    local o = offsets({ 2, 3, 4 })
    W.check{ type = "row_conv", wrt = { "X", "Filter" }, of = { "Out" },
             inputs = { X = T.tensor(R.symmetric(9 * 4, 3), { shape = { 9, 4 }, lod = { o } }),
                        Filter = T.tensor(R.symmetric(3 * 4, 5), { shape = { 3, 4 } }) } }
    W.check{ type = "row_conv", wrt = { "X", "Filter" }, of = { "Out" },
             inputs = { X = T.tensor(R.symmetric(2 * 4 * 3, 7), { shape = { 2, 4, 3 } }),
                        Filter = T.tensor(R.symmetric(2 * 3, 9), { shape = { 2, 3 } }) } }
  end)

  it("refuses a Filter of another width", function()
    expect_error(function()
      T.run{ type = "row_conv", inputs = { X = T.tensor(R.symmetric(8, 1), { shape = { 2, 4 }, lod = { { 0, 2 } } }),
                                           Filter = T.tensor(R.symmetric(6, 1), { shape = { 2, 3 } }) } }
    end, "row_conv", "Filter", "in_Filter", "last dim")
  end)
end)

-- ---- sequence_topk_avg_pooling ------------------------------------------------------------
-- the reference of the Python test: per sequence, channel and row, the
-- positions of the max_k largest (descending; -1 past the row), averages of
-- the first topks[m]; Out row-major [row, channel, m]
local function topk_ref(x, topks, C, rows, cols)
  local maxk, nk = topks[#topks], #topks
  local out, pos, grad = {}, {}, {}
  local xoff, roff = 0, 0
  for i = 1, #x do grad[i] = 0 end
  for b = 1, #rows do
    local nr, nc = rows[b], cols[b]
    for ch = 0, C - 1 do
      for r = 0, nr - 1 do
        local base = xoff + (ch * nr + r) * nc
        local idx = {}
        for q = 0, nc - 1 do idx[#idx + 1] = q end
        table.sort(idx, function(p, q)
          local a, c = x[base + p + 1], x[base + q + 1]
          if a ~= c then return a > c end
          return p < q
        end)
        local prow = ((roff + r) * C + ch) * maxk
        local sums, acc = {}, 0
        for q = 1, maxk do
          local p = idx[q]
          pos[prow + q] = p or -1
          if p then acc = acc + x[base + p + 1] end
          sums[q] = acc
        end
        local orow = ((roff + r) * C + ch) * nk
        for m = 1, nk do out[orow + m] = sums[topks[m]] / topks[m] end
      end
    end
    xoff = xoff + C * nr * nc
    roff = roff + nr
  end
  return out, pos
end

local function topk_inputs(topks, C, rows, cols, x)
  local feature, xl = 0, {}
  for b = 1, #rows do
    xl[b] = rows[b] * cols[b] * C
    feature = feature + xl[b]
  end
  if not x then
    x = {}
    for i = 1, feature do x[i] = i - 1 end   -- np.arange, as the test
  end
  local nr, nc = 0, 0
  for b = 1, #rows do nr, nc = nr + rows[b], nc + cols[b] end
  return {
    X = T.tensor(x, { shape = { feature, 1 }, lod = { offsets(xl) } }),
    ROW = T.tensor(R.uniform(nr * 10, 3, 0, 1), { shape = { nr, 10 }, lod = { offsets(rows) } }),
    COLUMN = T.tensor(R.uniform(nc * 10, 5, 0, 1), { shape = { nc, 10 }, lod = { offsets(cols) } }),
  }, x, nr
end

describe("sequence_topk_avg_pooling", function()
  for _, c in ipairs({ { topks = { 1, 3, 5 }, C = 3, rows = { 30, 45 }, cols = { 25, 36 } },
                       { topks = { 2, 3 }, C = 5, rows = { 36 }, cols = { 48 } },
                       { topks = { 1, 3, 5 }, C = 2, rows = { 2, 3 }, cols = { 3, 1 } } }) do
    it(("topks {%s}, channel_num %d, rows {%s}, cols {%s}"):format(table.concat(c.topks, ","), c.C,
        table.concat(c.rows, ","), table.concat(c.cols, ",")), function()
      local inputs, x, nr = topk_inputs(c.topks, c.C, c.rows, c.cols)
      local out, pos = topk_ref(x, c.topks, c.C, c.rows, c.cols)
      T.check_output{
        type = "sequence_topk_avg_pooling", attrs = { topks = c.topks, channel_num = c.C }, inputs = inputs,
        expect = { Out = { shape = { nr, c.C * #c.topks }, data = out, lod = { offsets(c.rows) } },
                   pos = { shape = { nr * c.C * c.topks[#c.topks] }, data = pos } },
      }
    end)
  end

  it("the gradient the test defines (1 / k at each chosen position), and a finite-difference check", function()
    local topks, C, rows, cols = { 1, 3, 5 }, 3, { 3, 4 }, { 5, 6 }
    local inputs, x = topk_inputs(topks, C, rows, cols)
    local _, pos = topk_ref(x, topks, C, rows, cols)
    local nout = (3 + 4) * C * #topks
    local want, xoff, roff = {}, 0, 0
    for i = 1, #x do want[i] = 0 end
    for b = 1, #rows do
      for ch = 0, C - 1 do
        for r = 0, rows[b] - 1 do
          local prow = ((roff + r) * C + ch) * 5
          for _, k in ipairs(topks) do
            for q = 1, k do
              local p = pos[prow + q]
              if p >= 0 then
                local i = xoff + (ch * rows[b] + r) * cols[b] + p + 1
                want[i] = want[i] + 1 / nout / k
              end
            end
          end
        end
      end
      xoff, roff = xoff + C * rows[b] * cols[b], roff + rows[b]
    end
    local g = T.analytic_grads{ type = "sequence_topk_avg_pooling", attrs = { topks = topks, channel_num = C },
                                inputs = inputs, wrt = { "X" }, of = { "Out" } }
    T.assert_close(g[1], { data = want }, 1e-12)
    -- distinct, shuffled values keep the top-k choice stable under the finite-difference step
    local xs = {}
    for i = 1, #x do xs[i] = ((i * 37) % #x) * 0.1 end
    T.check_grad{ type = "sequence_topk_avg_pooling", attrs = { topks = topks, channel_num = C },
                  inputs = (topk_inputs(topks, C, rows, cols, xs)), wrt = { "X" }, of = { "Out" } }
  end)

  it("refuses X whose sequence does not hold channel_num x rows x cols values", function()
    local inputs = topk_inputs({ 1 }, 2, { 2 }, { 3 })
    expect_error(function()
      T.run{ type = "sequence_topk_avg_pooling", attrs = { topks = { 1 }, channel_num = 3 }, inputs = inputs }
    end, "sequence_topk_avg_pooling", "in_X", "channel_num 3")
  end)
end)

-- ---- match_matrix_tensor --------------------------------------------------------------
local function mmt_ref(x, y, w, xo, yo, dx, dy, dim_t)
  local out, lod = {}, { 0 }
  for b = 1, #xo - 1 do
    local lx, ly = xo[b + 1] - xo[b], yo[b + 1] - yo[b]
    for t = 0, dim_t - 1 do
      for i = 0, lx - 1 do
        for j = 0, ly - 1 do
          local acc = 0
          for p = 0, dx - 1 do
            for q = 0, dy - 1 do
              acc = acc + x[(xo[b] + i) * dx + p + 1] * w[(p * dim_t + t) * dy + q + 1] * y[(yo[b] + j) * dy + q + 1]
            end
          end
          out[#out + 1] = acc
        end
      end
    end
    lod[#lod + 1] = #out
  end
  return out, lod
end

describe("match_matrix_tensor", function()
  -- test_match_matrix_tensor_op.py: x_lod [[1, 2, 3]], y_lod [[3, 1, 2]], h 2, dim_t 2;
  -- Case1: x_lod [[5]], y_lod [[4]], h 4, dim_t 2; Case2: x_lod [[5, 6]], y_lod [[4, 3]], h 7, dim_t 3
  for n, c in ipairs({ { xl = { 1, 2, 3 }, yl = { 3, 1, 2 }, h = 2, t = 2 }, { xl = { 5 }, yl = { 4 }, h = 4, t = 2 },
                       { xl = { 5, 6 }, yl = { 4, 3 }, h = 7, t = 3 }, { xl = { 2, 3 }, yl = { 3, 2 }, h = 3, dy = 2, t = 2 } }) do
    local dx, dy = c.h, c.dy or c.h
    local xo, yo = offsets(c.xl), offsets(c.yl)
    local nx, ny = xo[#xo], yo[#yo]
    local x, y, w = R.symmetric(nx * dx, 3 + n), R.symmetric(ny * dy, 5 + n), R.symmetric(dx * c.t * dy, 7 + n)
    local inputs = { X = T.tensor(x, { shape = { nx, dx }, lod = { xo } }),
                     Y = T.tensor(y, { shape = { ny, dy }, lod = { yo } }),
                     W = T.tensor(w, { shape = { dx, c.t, dy } }) }
    it(("x lengths {%s}, y lengths {%s}, dx %d, dy %d, dim_t %d"):format(table.concat(c.xl, ","),
        table.concat(c.yl, ","), dx, dy, c.t), function()
      local out, lod = mmt_ref(x, y, w, xo, yo, dx, dy, c.t)
      for _, dt in ipairs({ "float64", "float32" }) do
        local ins = {}
        for k, v in pairs(inputs) do ins[k] = T.tensor(v.data, { shape = v.shape, lod = v.lod, dtype = dt }) end
        T.check_output{ type = "match_matrix_tensor", attrs = { dim_t = c.t }, inputs = ins, dtype = dt,
                        expect = { Out = { shape = { #out, 1 }, data = out, lod = { lod } } },
                        atol = dt == "float32" and 1e-5 or 1e-12 }
      end
    end)
    if n ~= 3 then
      it(("grad of X, Y and W (case %d)"):format(n), function()
        W.check{ type = "match_matrix_tensor", attrs = { dim_t = c.t }, inputs = inputs,
                 wrt = { "X", "Y", "W" }, of = { "Out" } }
      end)
    end
  end

  it("refuses a W that does not fit X, dim_t and Y", function()
    expect_error(function()
      T.run{ type = "match_matrix_tensor", attrs = { dim_t = 2 },
             inputs = { X = T.tensor(R.symmetric(6, 1), { shape = { 3, 2 }, lod = { { 0, 3 } } }),
                        Y = T.tensor(R.symmetric(6, 1), { shape = { 3, 2 }, lod = { { 0, 3 } } }),
                        W = T.tensor(R.symmetric(8, 1), { shape = { 2, 1, 4 } }) } }
    end, "match_matrix_tensor", "in_W", "dim_t 2")
  end)
end)

-- ---- the layers ---------------------------------------------------------------------------
describe("oar.layers add_position_encoding, row_conv, npair_loss", function()
  local oar = require("oar")
  local A = require("spec.helpers.api")
  local layers = oar.layers

  local flatten = require("spec.helpers.index").flatten
  local function flat(t) return flatten(t:totable()) end

  it("add_position_encoding and row_conv build Fluid's ops and match the references", function()
    local main, startup, x, pe, rc = A.build(function()
      local x = layers.data{ name = "x", shape = { 4 }, lod_level = 1 }
      return x, layers.add_position_encoding{ input = x, alpha = 0.5, beta = 2 },
             layers.row_conv{ input = x, future_context_size = 1 }
    end)
    assert.are.equal("x", x.name)
    local xs = R.symmetric(5 * 4, 3)
    local xt = oar.Tensor(xs, "float32"):reshape({ 5, 4 })
    xt:set_lod({ { 0, 3, 5 } })
    local got, scope = A.run(main, startup, { x = xt }, { pe, rc })
    assert.are.same({ 5, 4 }, got[1]:shape())
    T.assert_close({ data = flat(got[1]) }, { data = ape_ref(xs, 4, { 0, 3, 5 }, 0.5, 2) }, 1e-5)
    local filt
    for _, p in ipairs(main:global_block():all_parameters()) do filt = p end
    assert.are.same({ 2, 4 }, filt.shape)
    local w = flat(scope:find_var(filt.name):get_tensor())
    T.assert_close({ data = flat(got[2]) }, { data = row_conv_ref(xs, w, 4, 2, { 0, 3, 5 }) }, 1e-5)
  end)

  -- test_npair_loss_op.py: 18 x 6 embeddings, 3 classes, l2_reg 0.002, the numpy reference re-done in Lua
  it("npair_loss matches the reference of Fluid's test", function()
    local n, d = 18, 6
    local anc, pos = R.uniform(n * d, 3, 0, 1), R.uniform(n * d, 5, 0, 1)
    local lab = {}
    for i = 1, n do lab[i] = (i * 7) % 3 end
    local main, startup, loss = A.build(function()
      local a = layers.data{ name = "anc", shape = { n, d }, append_batch_size = false }
      local p = layers.data{ name = "pos", shape = { n, d }, append_batch_size = false }
      local l = layers.data{ name = "lab", shape = { n }, append_batch_size = false }
      return layers.npair_loss{ anchor = a, positive = p, labels = l, l2_reg = 0.002 }
    end)
    local got = A.run(main, startup, { anc = oar.Tensor(anc, "float32"):reshape({ n, d }),
      pos = oar.Tensor(pos, "float32"):reshape({ n, d }), lab = oar.Tensor(lab, "float32") }, { loss })
    -- reference
    local l2a, l2p = 0, 0
    for i = 0, n - 1 do
      for j = 1, d do l2a, l2p = l2a + anc[i * d + j] ^ 2, l2p + pos[i * d + j] ^ 2 end
    end
    local l2 = (l2a / n + l2p / n) * 0.25 * 0.002
    local ce = 0
    for i = 0, n - 1 do
      local sims, mx = {}, -math.huge
      for j = 0, n - 1 do
        local s = 0
        for k = 1, d do s = s + anc[i * d + k] * pos[j * d + k] end
        sims[j] = s
        mx = math.max(mx, s)
      end
      local z, same = 0, 0
      for j = 0, n - 1 do
        z = z + math.exp(sims[j] - mx)
        if lab[j + 1] == lab[i + 1] then same = same + 1 end
      end
      for j = 0, n - 1 do
        if lab[j + 1] == lab[i + 1] then ce = ce - (1 / same) * (sims[j] - mx - math.log(z)) end
      end
    end
    local want = l2 + ce / n
    local v = flat(got[1])
    assert.are.equal(1, #v)
    assert.is_true(math.abs(v[1] - want) < 1e-4 * math.max(1, math.abs(want)), ("%g vs %g"):format(v[1], want))
  end)

  it("refuse bad arguments, naming the layer", function()
    A.build(function()
      local x = layers.data{ name = "x", shape = { 4 }, lod_level = 1 }
      local e = A.errmsg(layers.row_conv, { input = x, future_context_size = -1 })
      assert.is_truthy(e:find("row_conv", 1, true) and e:find("future_context_size", 1, true), e)
      e = A.errmsg(layers.add_position_encoding, { input = x, alpha = 1, beta = 1, gamma = 2 })
      assert.is_truthy(e:find("add_position_encoding", 1, true) and e:find("gamma", 1, true), e)
    end)
  end)
end)

-- ---- attention_lstm (test_attention_lstm_op.py) ------------------------------------------
local ACT = {
  identity = function(v) return v end,
  sigmoid = function(v) return 1 / (1 + math.exp(-v)) end,
  tanh = math.tanh,
  relu = function(v) return v > 0 and v or 0 end,
}

-- the test's reference: per sequence and step, relu fcs over [x, prev_cell], a softmax over
-- the sequence, the weighted sum of its rows, then an LSTM cell on [prev_hidden, sum]
local function attention_lstm_ref(o)
  local M, D = o.M, o.D
  local hidden, cell = {}, {}
  for s = 1, #o.offs - 1 do
    local b0, len = o.offs[s], o.offs[s + 1] - o.offs[s]
    local pc, ph = {}, {}
    for j = 1, D do pc[j] = o.c0[(s - 1) * D + j]; ph[j] = o.h0 and o.h0[(s - 1) * D + j] or 0 end
    for step = 0, len - 1 do
      local a, mx = {}, -math.huge
      for q = 0, len - 1 do
        local v = o.fcb1
        for j = 1, M do v = v + o.x[(b0 + q) * M + j] * o.fcw1[j] end
        for j = 1, D do v = v + pc[j] * o.fcw1[M + j] end
        v = ACT.relu(v)
        v = ACT.relu(v * o.fcw2 + o.fcb2)
        a[q] = v
        mx = math.max(mx, v)
      end
      local z = 0
      for q = 0, len - 1 do a[q] = math.exp(a[q] - mx); z = z + a[q] end
      local lin = {}
      for j = 1, D do lin[j] = ph[j] end
      for j = 1, M do
        local acc = 0
        for q = 0, len - 1 do acc = acc + a[q] / z * o.x[(b0 + q) * M + j] end
        lin[D + j] = acc
      end
      local g = {}
      for c = 1, 4 * D do
        local acc = o.b[c]
        for j = 1, D + M do acc = acc + lin[j] * o.w[(j - 1) * 4 * D + c] end
        g[c] = acc
      end
      local nc, nh = {}, {}
      local ag, ac, an = ACT[o.gate], ACT[o.cell], ACT[o.cand]
      for j = 1, D do
        nc[j] = pc[j] * ag(g[j]) + ag(g[D + j]) * an(g[3 * D + j])
        nh[j] = ag(g[2 * D + j]) * ac(nc[j])
      end
      for j = 1, D do hidden[(b0 + step) * D + j] = nh[j]; cell[(b0 + step) * D + j] = nc[j] end
      pc, ph = nc, nh
    end
  end
  return hidden, cell
end

describe("attention_lstm", function()
  local CASES = {
    { name = "TestAttentionLSTMOp", lens = { 3 }, M = 30, D = 15 },
    { name = "NonInit", lens = { 3 }, M = 30, D = 15, no_h0 = true },
    { name = "Act", lens = { 3 }, M = 3, D = 2, gate = "relu", cand = "sigmoid" },
    { name = "MD1", lens = { 3 }, M = 36, D = 8 },
    { name = "MD2", lens = { 3 }, M = 8, D = 8 },
    { name = "MD3", lens = { 3 }, M = 15, D = 30 },
    { name = "BS1", lens = { 5 }, M = 16, D = 32 },
    { name = "BS2", lens = { 3, 6 }, M = 30, D = 15 },
    { name = "BS5", lens = { 3, 2, 4, 7, 5 }, M = 30, D = 15 },
  }
  for n, c in ipairs(CASES) do
    it(("%s (lod {%s}, M %d, D %d)"):format(c.name, table.concat(c.lens, ","), c.M, c.D), function()
      local offs = offsets(c.lens)
      local Tn, N = offs[#offs], #c.lens
      local o = { M = c.M, D = c.D, offs = offs, gate = c.gate or "sigmoid", cell = "tanh", cand = c.cand or "tanh",
                  x = R.symmetric(Tn * c.M, n), c0 = R.symmetric(N * c.D, n + 1),
                  h0 = not c.no_h0 and R.symmetric(N * c.D, n + 2) or nil,
                  fcw1 = R.symmetric(c.M + c.D, n + 3, 0.3), fcb1 = 0.1, fcw2 = 0.8, fcb2 = -0.05,
                  w = R.symmetric((c.M + c.D) * 4 * c.D, n + 4, 0.3), b = R.symmetric(4 * c.D, n + 5, 0.3) }
      local hid, cell = attention_lstm_ref(o)
      for _, dt in ipairs({ "float64", "float32" }) do
        local inputs = {
          X = T.tensor(o.x, { shape = { Tn, c.M }, lod = { offs }, dtype = dt }),
          C0 = T.tensor(o.c0, { shape = { N, c.D }, dtype = dt }),
          AttentionWeight = T.tensor(o.fcw1, { shape = { c.M + c.D, 1 }, dtype = dt }),
          AttentionBias = T.tensor({ o.fcb1 }, { shape = { 1, 1 }, dtype = dt }),
          AttentionScalar = T.tensor({ o.fcw2 }, { shape = { 1, 1 }, dtype = dt }),
          AttentionScalarBias = T.tensor({ o.fcb2 }, { shape = { 1, 1 }, dtype = dt }),
          LSTMWeight = T.tensor(o.w, { shape = { c.M + c.D, 4 * c.D }, dtype = dt }),
          LSTMBias = T.tensor(o.b, { shape = { 1, 4 * c.D }, dtype = dt }),
        }
        if o.h0 then inputs.H0 = T.tensor(o.h0, { shape = { N, c.D }, dtype = dt }) end
        T.check_output{ type = "attention_lstm", dtype = dt, inputs = inputs,
                        attrs = { gate_activation = o.gate, cell_activation = o.cell, candidate_activation = o.cand },
                        expect = { Hidden = { shape = { Tn, c.D }, data = hid, lod = { offs } },
                                   Cell = { shape = { Tn, c.D }, data = cell, lod = { offs } } },
                        atol = dt == "float32" and 1e-4 or 1e-10 }
      end
    end)
  end

  it("refuses an LSTMWeight without D + M rows", function()
    expect_error(function()
      T.run{ type = "attention_lstm", inputs = {
        X = T.tensor(R.symmetric(6, 1), { shape = { 2, 3 }, lod = { { 0, 2 } } }),
        C0 = T.tensor(R.symmetric(2, 1), { shape = { 1, 2 } }),
        AttentionWeight = T.tensor(R.symmetric(5, 1), { shape = { 5, 1 } }),
        LSTMWeight = T.tensor(R.symmetric(32, 1), { shape = { 4, 8 } }),
        LSTMBias = T.tensor(R.symmetric(8, 1), { shape = { 1, 8 } }) } }
    end, "attention_lstm", "in_LSTMWeight", "D + M = 5")
  end)
end)
