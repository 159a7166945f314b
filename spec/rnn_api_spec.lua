-- Fluid 1.8's padded-batch RNN API (lua/oar/layers/rnn_api.lua,
-- rnn_decode.lua) and the gather_tree op, against plain Lua: the cells'
-- step math, rnn and birnn with sequence lengths computed step by step,
-- gradients through rnn and dynamic_decode against finite differences
-- (float64), BeamSearchDecoder + dynamic_decode against a plain-Lua beam
-- search over the same fixed cell, training loops whose loss falls, and
-- the argument errors.
local oar = require("oar")
local layers = oar.layers
local T = require("spec.helpers.op_test")
local expect_error = require("spec.helpers.expect_error")

local R = require("spec.helpers.rnn_ref")
local lcg, randm, randv, cat, lstm_step, gru_step, gru_seq = R.lcg, R.randm, R.randv, R.cat, R.lstm_step, R.gru_step,
  R.gru_seq
local flat, near, program, session, gru_params, gru_param_feed = R.flat, R.near, R.program, R.session, R.gru_params,
  R.gru_param_feed

-- ---- gather_tree -------------------------------------------------------------------------------

local backtrace = require("spec.helpers.beam_ref").backtrace

describe("gather_tree", function()
  -- Fluid's TestGatherTreeOp: max_length 5, batch 2, beam 2, ids in [0, 10)
  local rnd = lcg(7)
  local ids, parents = {}, {}
  for t = 1, 5 do
    ids[t], parents[t] = {}, {}
    for b = 1, 2 do
      ids[t][b], parents[t][b] = {}, {}
      for k = 1, 2 do
        ids[t][b][k] = math.floor((rnd(1) + 1) * 5)
        parents[t][b][k] = (rnd(1) > 0) and 1 or 0
      end
    end
  end
  local want = backtrace(ids, parents)

  for _, dt in ipairs({ "int64", "int32" }) do
    it("backtracks the beams (OpTest, " .. dt .. ")", function()
      T.check_output{ type = "gather_tree",
        inputs = { Ids = T.tensor(ids, { dtype = dt }), Parents = T.tensor(parents, { dtype = dt }) },
        expect = { Out = { shape = { 5, 2, 2 }, data = flat(want) } } }
    end)
  end

  it("layers.gather_tree builds it, and a parent outside the beam is an error", function()
    local main, startup, out = program(function()
      local i = layers.data{ name = "ids", shape = { 3, 1, 2 }, dtype = "int64", append_batch_size = false }
      local p = layers.data{ name = "par", shape = { 3, 1, 2 }, dtype = "int64", append_batch_size = false }
      return layers.gather_tree(i, p)
    end)
    local run = session(startup)
    local idv = { { { 1, 2 } }, { { 3, 4 } }, { { 5, 6 } } }
    local got = run(main, { ids = oar.Tensor(idv, "int64"),
                            par = oar.Tensor({ { { 0, 0 } }, { { 1, 0 } }, { { 1, 0 } } }, "int64") }, { out })[1]
    assert.are.same(flat(backtrace(idv, { { { 0, 0 } }, { { 1, 0 } }, { { 1, 0 } } })), flat(got:totable()))
    expect_error(function()
      run(main, { ids = oar.Tensor(idv, "int64"), par = oar.Tensor({ { { 0, 0 } }, { { 2, 0 } }, { { 1, 0 } } }, "int64") },
          { out })
    end, "gather_tree", "outside [0, 2)")
  end)

  it("checks its arguments", function()
    program(function()
      local f = layers.data{ name = "f", shape = { 3, 1, 2 }, dtype = "float32", append_batch_size = false }
      local i = layers.data{ name = "i", shape = { 3, 1, 2 }, dtype = "int64", append_batch_size = false }
      local i2 = layers.data{ name = "i2", shape = { 3, 2 }, dtype = "int64", append_batch_size = false }
      expect_error(function() layers.gather_tree(f, i) end, "gather_tree", "ids", "int32 or int64")
      expect_error(function() layers.gather_tree(i2, i2) end, "gather_tree", "rank 2")
      expect_error(function() layers.gather_tree(i, i2) end, "gather_tree", "Parents")
    end)
  end)
end)

-- ---- cells -------------------------------------------------------------------------------------

describe("LSTMCell and GRUCell", function()
  local N, D, H = 2, 3, 2
  local rnd = lcg(11)
  local x, h, c = randm(N, D, rnd, 1), randm(N, H, rnd, 1), randm(N, H, rnd, 1)

  it("LSTMCell: one step is BasicLSTMUnit's math (forget_bias 1 and 0.5)", function()
    for _, fb in ipairs({ 1.0, 0.5 }) do
      local cell
      local main, startup, out = program(function()
        local xv = layers.data{ name = "x", shape = { D }, dtype = "float64" }
        local hv = layers.data{ name = "h", shape = { H }, dtype = "float64" }
        local cv = layers.data{ name = "c", shape = { H }, dtype = "float64" }
        cell = layers.LSTMCell{ hidden_size = H, dtype = "float64", forget_bias = fb ~= 1.0 and fb or nil }
        local o, st = cell:call(xv, { hv, cv })
        assert.are.same({ { H }, { H } }, cell.state_shape)
        return { o, st[1], st[2] }
      end)
      local W, b = randm(D + H, 4 * H, rnd), randv(4 * H, rnd)
      assert.are.same({ D + H, 4 * H }, cell.weight.shape)
      local run = session(startup, { [cell.weight.name] = W, [cell.bias.name] = b })
      local got = run(main, { x = oar.Tensor(x, "float64"), h = oar.Tensor(h, "float64"), c = oar.Tensor(c, "float64") }, out)
      local wh, wc = {}, {}
      for n = 1, N do wh[n], wc[n] = lstm_step(x[n], h[n], c[n], W, b, fb) end
      near(wh, got[1]:totable(), 1e-12, "output")
      near(wh, got[2]:totable(), 1e-12, "h'")
      near(wc, got[3]:totable(), 1e-12, "c'")
    end
  end)

  it("GRUCell: one step is BasicGRUUnit's math", function()
    local cell
    local main, startup, out = program(function()
      local xv = layers.data{ name = "x", shape = { D }, dtype = "float64" }
      local hv = layers.data{ name = "h", shape = { H }, dtype = "float64" }
      cell = layers.GRUCell{ hidden_size = H, dtype = "float64" }
      local o, st = cell:call(xv, hv)
      return { o, st }
    end)
    local p = gru_params(rnd, D, H)
    local run = session(startup, gru_param_feed(cell, p))
    local got = run(main, { x = oar.Tensor(x, "float64"), h = oar.Tensor(h, "float64") }, out)
    local want = {}
    for n = 1, N do want[n] = gru_step(x[n], h[n], p) end
    near(want, got[1]:totable(), 1e-12, "output")
    near(want, got[2]:totable(), 1e-12, "h'")
  end)

  it("a cell used in a second program declares the same parameters there (shared in a scope)", function()
    local cell = layers.GRUCell{ hidden_size = H, dtype = "float64", name = "shared" }
    local function build()
      return program(function()
        local xv = layers.data{ name = "x", shape = { D }, dtype = "float64" }
        local hv = layers.data{ name = "h", shape = { H }, dtype = "float64" }
        return (cell:call(xv, hv))
      end)
    end
    local main1, startup1, out1 = build()
    local name1 = cell.gate_weight.name
    local main2, _, out2 = build()
    assert.are.equal(name1, cell.gate_weight.name)
    assert.are.equal(main2:global_block():var(name1).name, name1)
    local p = gru_params(rnd, D, H)
    local run, scope = session(startup1, gru_param_feed(cell, p))
    local feed = { x = oar.Tensor(x, "float64"), h = oar.Tensor(h, "float64") }
    local a = run(main1, feed, { out1 })[1]
    local b = oar.Executor():run(main2, { feed = feed, fetch_list = { out2 }, scope = scope })[1]
    local want = {}
    for n = 1, N do want[n] = gru_step(x[n], h[n], p) end
    near(want, a:totable(), 1e-12, "first program")
    near(want, b:totable(), 1e-12, "second program")
  end)

  it("get_initial_states fills the state shapes with the batch of batch_ref", function()
    local main, startup, out = program(function()
      local xv = layers.data{ name = "x", shape = { 5, D }, dtype = "float32" }
      local st = layers.LSTMCell{ hidden_size = 4 }:get_initial_states{ batch_ref = xv, init_value = 0.5 }
      return st
    end)
    local run = session(startup)
    local got = run(main, { x = oar.Tensor(randm(3, 5 * D, lcg(1)), "float32"):reshape({ 3, 5, D }) }, { out[1], out[2] })
    assert.are.same({ 3, 4 }, got[1]:shape())
    assert.are.same({ 3, 4 }, got[2]:shape())
    for _, v in ipairs(flat(got[1]:totable())) do assert.are.equal(0.5, v) end
  end)
end)

-- ---- rnn and birnn ------------------------------------------------------------------------------

describe("rnn and birnn", function()
  local N, Tn, D, H = 3, 4, 2, 3
  local rnd = lcg(21)
  local x = {}
  for n = 1, N do x[n] = randm(Tn, D, rnd, 1) end
  local h0 = randm(N, H, rnd, 1)
  local lens = { 4, 2, 1 }

  local function build_gru(opts)
    local cell
    local main, startup, out = program(function()
      local xv = layers.data{ name = "x", shape = { Tn, D }, dtype = "float64" }
      local hv = layers.data{ name = "h0", shape = { H }, dtype = "float64" }
      local lv = layers.data{ name = "len", shape = { -1 }, dtype = "int64", append_batch_size = false }
      cell = layers.GRUCell{ hidden_size = H, dtype = "float64" }
      local o, st = layers.rnn{ cell = cell, inputs = xv, initial_states = hv, sequence_length = lv,
                                is_reverse = opts.reverse }
      return { o, st }
    end)
    return main, startup, out, cell
  end

  for _, reverse in ipairs({ false, true }) do
    it("a GRUCell over padded sequences equals the steps in plain Lua (is_reverse = " .. tostring(reverse) .. ")",
      function()
        local main, startup, out, cell = build_gru{ reverse = reverse }
        local p = gru_params(rnd, D, H)
        local run = session(startup, gru_param_feed(cell, p))
        local got = run(main, { x = oar.Tensor(x, "float64"), h0 = oar.Tensor(h0, "float64"),
                                len = oar.Tensor(lens, "int64") }, out)
        local wo, wf = gru_seq(x, lens, h0, p, reverse)
        assert.are.same({ N, Tn, H }, got[1]:shape())
        near(wo, got[1]:totable(), 1e-12, "outputs (zeros past each length)")
        near(wf, got[2]:totable(), 1e-12, "final states (at each length)")
        local o = got[1]:totable()
        for n = 1, N do
          for t = lens[n] + 1, Tn do
            for k = 1, H do assert(1 / o[n][t][k] == math.huge, "a padded output is not +0") end
          end
        end
      end)
  end

  it("time_major, an LSTMCell's {h, c} states and default initial states", function()
    local cell
    local main, startup, out = program(function()
      local xv = layers.data{ name = "x", shape = { Tn, N, D }, dtype = "float64", append_batch_size = false }
      cell = layers.LSTMCell{ hidden_size = H, dtype = "float64" }
      local o, st = layers.rnn(cell, xv, nil, nil, true)
      return { o, st[1], st[2] }
    end)
    local W, b = randm(D + H, 4 * H, rnd), randv(4 * H, rnd)
    local run = session(startup, { [cell.weight.name] = W, [cell.bias.name] = b })
    local xt = {}
    for t = 1, Tn do
      xt[t] = {}
      for n = 1, N do xt[t][n] = x[n][t] end
    end
    local got = run(main, { x = oar.Tensor(xt, "float64") }, out)
    local wo, wh, wc = {}, {}, {}
    for t = 1, Tn do wo[t] = {} end
    for n = 1, N do
      local h, c = { 0, 0, 0 }, { 0, 0, 0 }
      for t = 1, Tn do
        h, c = lstm_step(x[n][t], h, c, W, b, 1.0)
        wo[t][n] = h
      end
      wh[n], wc[n] = h, c
    end
    near(wo, got[1]:totable(), 1e-12, "outputs [T, N, H]")
    near(wh, got[2]:totable(), 1e-12, "final h")
    near(wc, got[3]:totable(), 1e-12, "final c")
  end)

  it("birnn concatenates a forward and a backward rnn", function()
    local fw, bw
    local Hb = 2
    local main, startup, out = program(function()
      local xv = layers.data{ name = "x", shape = { Tn, D }, dtype = "float64" }
      local lv = layers.data{ name = "len", shape = { -1 }, dtype = "int64", append_batch_size = false }
      fw = layers.GRUCell{ hidden_size = H, dtype = "float64", name = "fw" }
      bw = layers.GRUCell{ hidden_size = Hb, dtype = "float64", name = "bw" }
      local o, st = layers.birnn{ cell_fw = fw, cell_bw = bw, inputs = xv, sequence_length = lv }
      return { o, st[1], st[2] }
    end)
    local pf, pb = gru_params(rnd, D, H), gru_params(rnd, D, Hb)
    local params = gru_param_feed(fw, pf)
    for k, v in pairs(gru_param_feed(bw, pb)) do params[k] = v end
    local run = session(startup, params)
    local got = run(main, { x = oar.Tensor(x, "float64"), len = oar.Tensor(lens, "int64") }, out)
    local z = {}
    for n = 1, N do z[n] = { 0, 0, 0 } end
    local zb = {}
    for n = 1, N do zb[n] = { 0, 0 } end
    local of, ff = gru_seq(x, lens, z, pf, false)
    local ob, fb = gru_seq(x, lens, zb, pb, true)
    local want = {}
    for n = 1, N do
      want[n] = {}
      for t = 1, Tn do want[n][t] = cat(of[n][t], ob[n][t]) end
    end
    assert.are.same({ N, Tn, H + Hb }, got[1]:shape())
    near(want, got[1]:totable(), 1e-12, "outputs")
    near(ff, got[2]:totable(), 1e-12, "forward final")
    near(fb, got[3]:totable(), 1e-12, "backward final")
  end)

  it("gradients through rnn with sequence lengths match finite differences (float64)", function()
    local Ng, Tg, Dg, Hg = 2, 3, 2, 2
    local g = lcg(5)
    local xg = {}
    for n = 1, Ng do xg[n] = randm(Tg, Dg, g, 1) end
    local R = {}
    for n = 1, Ng do R[n] = randm(Tg, Hg, g, 1) end
    local S = randm(Ng, Hg, g, 1)
    local cell, xvar, dx, dw, loss
    local main, startup = program(function()
      xvar = layers.data{ name = "x", shape = { Tg, Dg }, dtype = "float64" }
      xvar.stop_gradient = false
      local lv = layers.data{ name = "len", shape = { -1 }, dtype = "int64", append_batch_size = false }
      cell = layers.GRUCell{ hidden_size = Hg, dtype = "float64", name = "g" }
      local o, st = layers.rnn{ cell = cell, inputs = xvar, sequence_length = lv }
      loss = layers.reduce_sum(layers.elementwise_mul{ x = o, y = layers.cast(layers.assign(R), "float64") })
           + layers.reduce_sum(layers.elementwise_mul{ x = st, y = layers.cast(layers.assign(S), "float64") })
      local grads = oar.gradients({ loss }, { xvar, cell.gate_weight })
      dx, dw = grads[1], grads[2]
    end)
    local p = gru_params(g, Dg, Hg)
    local run, scope = session(startup, gru_param_feed(cell, p))
    local lens_t = oar.Tensor({ 3, 2 }, "int64")
    local function L(xv)
      return run(main, { x = oar.Tensor(xv, "float64"), len = lens_t }, { loss })[1]:totable()[1]
    end
    local got = run(main, { x = oar.Tensor(xg, "float64"), len = lens_t }, { dx, dw })
    local eps = 1e-6
    local want_dx = {}
    for n = 1, Ng do
      want_dx[n] = {}
      for t = 1, Tg do
        want_dx[n][t] = {}
        for d = 1, Dg do
          local v = xg[n][t][d]
          xg[n][t][d] = v + eps
          local lp = L(xg)
          xg[n][t][d] = v - eps
          local lm = L(xg)
          xg[n][t][d] = v
          want_dx[n][t][d] = (lp - lm) / (2 * eps)
        end
      end
    end
    near(want_dx, got[1]:totable(), 1e-6, "d loss / d x")
    -- x past a sequence's length gets no gradient
    for d = 1, Dg do assert.are.equal(0, got[1]:totable()[2][3][d]) end
    local want_dw = {}
    for i = 1, Dg + Hg do
      want_dw[i] = {}
      for j = 1, 2 * Hg do
        local v = p.Wg[i][j]
        p.Wg[i][j] = v + eps
        scope:var(cell.gate_weight.name):set_tensor(oar.Tensor(p.Wg, "float64"))
        local lp = L(xg)
        p.Wg[i][j] = v - eps
        scope:var(cell.gate_weight.name):set_tensor(oar.Tensor(p.Wg, "float64"))
        local lm = L(xg)
        p.Wg[i][j] = v
        scope:var(cell.gate_weight.name):set_tensor(oar.Tensor(p.Wg, "float64"))
        want_dw[i][j] = (lp - lm) / (2 * eps)
      end
    end
    near(want_dw, got[2]:totable(), 1e-6, "d loss / d gate weight")
  end)

  it("gradients reach the initial states (LSTMCell, is_reverse), as finite differences say", function()
    local Ng, Tg, Dg, Hg = 2, 3, 2, 2
    local g = lcg(8)
    local xg, h0v, c0v = {}, randm(Ng, Hg, g, 1), randm(Ng, Hg, g, 1)
    for n = 1, Ng do xg[n] = randm(Tg, Dg, g, 1) end
    local hv, cv, loss, grads
    local main, startup = program(function()
      local xv = layers.data{ name = "x", shape = { Tg, Dg }, dtype = "float64" }
      hv = layers.data{ name = "h0", shape = { Hg }, dtype = "float64" }
      cv = layers.data{ name = "c0", shape = { Hg }, dtype = "float64" }
      hv.stop_gradient, cv.stop_gradient = false, false
      local lv = layers.data{ name = "len", shape = { -1 }, dtype = "int64", append_batch_size = false }
      local o, st = layers.rnn{ cell = layers.LSTMCell{ hidden_size = Hg, dtype = "float64" }, inputs = xv,
                                initial_states = { hv, cv }, sequence_length = lv, is_reverse = true }
      loss = layers.reduce_sum(layers.elementwise_mul{ x = o, y = o }) + layers.reduce_sum(st[2])
      grads = oar.gradients({ loss }, { hv, cv })
    end)
    local run = session(startup)
    local lens_t = oar.Tensor({ 3, 1 }, "int64")
    local function feed() return { x = oar.Tensor(xg, "float64"), h0 = oar.Tensor(h0v, "float64"),
                                   c0 = oar.Tensor(c0v, "float64"), len = lens_t } end
    local got = run(main, feed(), grads)
    local eps = 1e-6
    for which, m in ipairs({ h0v, c0v }) do
      local want = {}
      for n = 1, Ng do
        want[n] = {}
        for k = 1, Hg do
          local v = m[n][k]
          m[n][k] = v + eps
          local lp = run(main, feed(), { loss })[1]:totable()[1]
          m[n][k] = v - eps
          local lm = run(main, feed(), { loss })[1]:totable()[1]
          m[n][k] = v
          want[n][k] = (lp - lm) / (2 * eps)
        end
      end
      near(want, got[which]:totable(), 1e-6, which == 1 and "d loss / d h0" or "d loss / d c0")
    end
  end)

  it("a sequence model built on rnn learns (its loss falls)", function()
    local V, E, Hs, Ts, Ns = 8, 8, 16, 5, 8
    local loss
    local main, startup = program(function()
      local src = layers.data{ name = "src", shape = { Ts }, dtype = "int64" }
      local lab = layers.data{ name = "lab", shape = { Ts }, dtype = "int64" }
      local lv = layers.data{ name = "len", shape = { -1 }, dtype = "int64", append_batch_size = false }
      local emb = oar.embedding{ input = src, size = { V, E } }
      local o = layers.rnn{ cell = layers.LSTMCell{ hidden_size = Hs }, inputs = emb, sequence_length = lv }
      local logits = layers.fc{ input = o, size = V, num_flatten_dims = 2 }
      local ce = layers.softmax_with_cross_entropy{ logits = logits, label = layers.unsqueeze(lab, { 2 }) }
      local mask = layers.sequence_mask{ x = lv, maxlen = Ts, dtype = "float32" }
      loss = layers.reduce_sum(layers.elementwise_mul{ x = layers.squeeze(ce, { 2 }), y = mask })
             / layers.reduce_sum(mask)
      oar.optimizer.Adam{ learning_rate = 0.05 }:minimize(loss)
    end)
    local run = session(startup)
    -- the label of a token is the next token of a fixed cycle
    local srcs, labs, ls = {}, {}, {}
    for n = 1, Ns do
      srcs[n], labs[n] = {}, {}
      for t = 1, Ts do
        srcs[n][t] = (n + t) % V
        labs[n][t] = (n + t + 3) % V
      end
      ls[n] = 3 + n % 3
    end
    local feed = { src = oar.Tensor(srcs, "int64"), lab = oar.Tensor(labs, "int64"), len = oar.Tensor(ls, "int64") }
    local first, last
    for s = 1, 40 do
      local l = run(main, feed, { loss })[1]:totable()[1]
      if s == 1 then first = l end
      last = l
    end
    assert(last < 0.3 * first, string.format("loss %.4f -> %.4f", first, last))
  end)

  -- the cuDNN LSTM of layers.lstm in plain Lua: x[t][n], h0/c0[layer * dirs][n], w the flat weight
  local function cudnn_lstm_ref(xt, h0, c0, w, L, H, dirs, lens)
    local Tt, Nn = #xt, #xt[1]
    local size = 0
    for l = 1, L do size = size + dirs * 4 * H * ((l == 1 and #xt[1][1] or H * dirs) + H) end
    local off, boff = 0, size
    local input, lh, lc = xt, {}, {}
    local function mat(rows, cols)
      local m = {}
      for r = 1, rows do
        m[r] = {}
        for q = 1, cols do m[r][q] = w[off + (r - 1) * cols + q] end
      end
      off = off + rows * cols
      return m
    end
    for l = 1, L do
      local Dl = #input[1][1]
      local outs = {}
      for d = 1, dirs do
        local Wih, Whh = mat(4 * H, Dl), mat(4 * H, H)
        local bih, bhh = {}, {}
        for k = 1, 4 * H do bih[k], bhh[k] = w[boff + k], w[boff + 4 * H + k] end
        boff = boff + 8 * H
        local idx = (l - 1) * dirs + d
        local out = {}
        for t = 1, Tt do
          out[t] = {}
          for n = 1, Nn do
            out[t][n] = {}
            for k = 1, H do out[t][n][k] = 0 end
          end
        end
        for n = 1, Nn do
          local h, c = h0[idx][n], c0[idx][n]
          local len = lens and lens[n] or Tt
          local a, b, st = 1, len, 1
          if d == 2 then a, b, st = len, 1, -1 end
          for t = a, b, st do
            local g = {}
            for k = 1, 4 * H do
              local v = bih[k] + bhh[k]
              for j = 1, Dl do v = v + Wih[k][j] * input[t][n][j] end
              for j = 1, H do v = v + Whh[k][j] * h[j] end
              g[k] = v
            end
            local nh, nc = {}, {}
            for k = 1, H do
              nc[k] = R.sig(g[H + k]) * c[k] + R.sig(g[k]) * math.tanh(g[2 * H + k])
              nh[k] = R.sig(g[3 * H + k]) * math.tanh(nc[k])
            end
            h, c = nh, nc
            out[t][n] = h
          end
          lh[idx] = lh[idx] or {}
          lc[idx] = lc[idx] or {}
          lh[idx][n], lc[idx][n] = h, c
        end
        outs[d] = out
      end
      local nxt = {}
      for t = 1, Tt do
        nxt[t] = {}
        for n = 1, Nn do nxt[t][n] = dirs == 2 and cat(outs[1][t][n], outs[2][t][n]) or outs[1][t][n] end
      end
      input = nxt
    end
    return input, lh, lc, boff   -- boff: the flat weight's size
  end

  for _, case in ipairs({ { 2, true, true }, { 1, false, false } }) do
    local L, bidi, with_len = case[1], case[2], case[3]
    it(("layers.lstm (cuDNN LSTM, %d layers, bidirectional %s, sequence_length %s) equals plain Lua"):format(
      L, tostring(bidi), tostring(with_len)), function()
      local Hh, dirs = 2, bidi and 2 or 1
      local main, startup, out = program(function()
        local xv = layers.data{ name = "x", shape = { Tn, N, D }, dtype = "float64", append_batch_size = false }
        local hv = layers.data{ name = "h0", shape = { L * dirs, N, Hh }, dtype = "float64", append_batch_size = false }
        local cv = layers.data{ name = "c0", shape = { L * dirs, N, Hh }, dtype = "float64", append_batch_size = false }
        local lv
        if with_len then lv = layers.data{ name = "len", shape = { N }, dtype = "int64", append_batch_size = false } end
        local o, h, c = layers.lstm{ input = xv, init_h = hv, init_c = cv, max_len = Tn, hidden_size = Hh,
                                     num_layers = L, is_bidirec = bidi, param_attr = "lstm_w", sequence_length = lv }
        assert.are.same({ Tn, N, Hh * dirs }, o.shape)
        return { o, h, c }
      end)
      local xt = {}
      for t = 1, Tn do
        xt[t] = {}
        for n = 1, N do xt[t][n] = x[n][t] end
      end
      local h0s, c0s = {}, {}
      for i = 1, L * dirs do h0s[i], c0s[i] = randm(N, Hh, rnd, 1), randm(N, Hh, rnd, 1) end
      local _, _, _, size = cudnn_lstm_ref(xt, h0s, c0s, setmetatable({}, { __index = function() return 0 end }),
                                           L, Hh, dirs, nil)
      local w = randv(size, rnd, 0.8)
      local run = session(startup, { lstm_w = w })
      local feed = { x = oar.Tensor(xt, "float64"), h0 = oar.Tensor(h0s, "float64"), c0 = oar.Tensor(c0s, "float64") }
      if with_len then feed.len = oar.Tensor(lens, "int64") end
      local got = run(main, feed, out)
      local wo, wh, wc = cudnn_lstm_ref(xt, h0s, c0s, w, L, Hh, dirs, with_len and lens or nil)
      near(wo, got[1]:totable(), 1e-12, "rnn_out")
      near(wh, got[2]:totable(), 1e-12, "last_h")
      near(wc, got[3]:totable(), 1e-12, "last_c")
    end)
  end

  it("gradients through layers.lstm's flat weight match finite differences (float64)", function()
    local Hh, L = 2, 2
    local wv, loss, dw
    local main, startup = program(function()
      local xv = layers.data{ name = "x", shape = { Tn, N, D }, dtype = "float64", append_batch_size = false }
      local z = layers.fill_constant{ shape = { L * 2, N, Hh }, dtype = "float64", value = 0 }
      local o, h = layers.lstm{ input = xv, init_h = z, init_c = z, max_len = Tn, hidden_size = Hh, num_layers = L,
                                is_bidirec = true, param_attr = "lstm_g" }
      local Rm = layers.cast(layers.assign(randm(Tn * N, 2 * Hh, lcg(77), 1)), "float64")
      loss = layers.reduce_sum(layers.elementwise_mul{ x = layers.reshape(o, { -1, 2 * Hh }), y = Rm })
             + layers.reduce_sum(h)
      wv = oar.default_main_program():global_block():var("lstm_g")
      dw = oar.gradients({ loss }, { wv })[1]
    end)
    local xt = {}
    for t = 1, Tn do
      xt[t] = {}
      for n = 1, N do xt[t][n] = x[n][t] end
    end
    local w = randv(wv.shape[1], rnd, 0.8)
    local run, scope = session(startup, { lstm_g = w })
    local feed = { x = oar.Tensor(xt, "float64") }
    local got = run(main, feed, { dw })[1]:totable()
    local eps = 1e-6
    for _, i in ipairs({ 1, 7, 40, #w - 20, #w - 3, #w }) do
      local v = w[i]
      w[i] = v + eps
      scope:var("lstm_g"):set_tensor(oar.Tensor(w, "float64"))
      local lp = run(main, feed, { loss })[1]:totable()[1]
      w[i] = v - eps
      scope:var("lstm_g"):set_tensor(oar.Tensor(w, "float64"))
      local lm = run(main, feed, { loss })[1]:totable()[1]
      w[i] = v
      scope:var("lstm_g"):set_tensor(oar.Tensor(w, "float64"))
      near({ (lp - lm) / (2 * eps) }, { got[i] }, 1e-6, "d loss / d w[" .. i .. "]")
    end
  end)

  it("checks its arguments", function()
    program(function()
      local xv = layers.data{ name = "x", shape = { Tn, D }, dtype = "float32" }
      local iv = layers.data{ name = "i", shape = { Tn, D }, dtype = "int64" }
      local fl = layers.data{ name = "fl", shape = { -1 }, dtype = "float32", append_batch_size = false }
      local cell = layers.GRUCell{ hidden_size = 3 }
      expect_error(function() layers.rnn{ cell = cell, inputs = iv } end, "rnn", "inputs[1]", "float32 or float64")
      expect_error(function() layers.rnn{ cell = 3, inputs = xv } end, "rnn", "cell")
      expect_error(function() layers.rnn{ cell = cell, inputs = xv, sequence_length = fl } end, "sequence_length",
        "int32 or int64")
      expect_error(function() layers.rnn{ cell = cell, inputs = xv, time_mayor = true } end, "time_major")
      expect_error(function() layers.GRUCell{ hidden_size = 0 } end, "GRUCell", "hidden_size")
      expect_error(function() layers.LSTMCell{ hidden_size = 3, activation = "nope" } end, "LSTMCell", "activation")
      local bad = layers.RNNCell{ state_shape = { 3 }, call = function(_, x, h) return x, { h, h } end }
      expect_error(function() layers.rnn{ cell = bad, inputs = xv } end, "rnn", "structures differ")
      local nostate = function(x2, h) return x2, h end
      expect_error(function() layers.rnn{ cell = nostate, inputs = xv } end, "layers.rnn: give 'initial_states'")
      local tm = layers.data{ name = "tm", shape = { Tn, 2, D }, dtype = "float32", append_batch_size = false }
      local s3 = layers.data{ name = "s3", shape = { 3, 2, 4 }, dtype = "float32", append_batch_size = false }
      expect_error(function()
        layers.lstm{ input = tm, init_h = s3, init_c = s3, max_len = Tn, hidden_size = 4, num_layers = 2 }
      end, "layers.lstm", "init_h", "[2, N, 4]")
      expect_error(function()
        layers.lstm{ input = tm, init_h = s3, init_c = s3, max_len = Tn, hidden_size = 4, num_layers = 3,
                     dropout_prob = 1.5 }
      end, "lstm", "dropout_prob")
    end)
  end)
end)
