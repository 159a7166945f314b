-- Fluid 1.8's decoders (lua/oar/layers/rnn_decode.lua) against plain Lua:
-- BeamSearchDecoder + dynamic_decode against a plain-Lua beam search over
-- the same fixed GRU cell (ids after gather_tree, scores, lengths, the
-- step count max_step_num + 1), greedy decoding with BasicDecoder and
-- GreedyEmbeddingHelper, gradients through dynamic_decode with a
-- TrainingHelper against finite differences (float64), sampling, the
-- static tile_beam_merge_with_batch, oar.embedding, and argument errors.
local oar = require("oar")
local layers = oar.layers
local expect_error = require("spec.helpers.expect_error")
local R = require("spec.helpers.rnn_ref")
local lcg, randm, gru_step, vecmat = R.lcg, R.randm, R.gru_step, R.vecmat
local flat, near, program, session, gru_params, gru_param_feed = R.flat, R.near, R.program, R.session, R.gru_params,
  R.gru_param_feed

local B = require("spec.helpers.beam_ref")
local log_softmax, backtrace_bt = B.log_softmax, B.backtrace_bt

-- Fluid's BeamSearchDecoder in plain Lua: E the embedding rows, p the GRU
-- parameters, Wo [H, V] the output weight. Returns per step ids[t][b][k],
-- parents[t][b][k], scores[t][b][k]; the final log_probs[b][k] and lengths[b][k].
local function lua_beam_search(E, p, Wo, h0s, K, start, endt, max_step)
  local function step(_, id, h)
    local nh = gru_step(E[id + 1], h, p)
    return log_softmax(vecmat(nh, Wo)), nh
  end
  return B.search(h0s, step, K, #Wo[1], start, endt, max_step)
end

describe("BeamSearchDecoder and dynamic_decode", function()
  local V, Hin, H, K, START, END = 7, 3, 4, 3, 0, 1
  local rnd = lcg(31)
  local E, Wo = randm(V, Hin, rnd, 1.5), randm(H, V, rnd, 2.5)
  local p = gru_params(rnd, Hin, H)
  local h0s = randm(2, H, rnd, 1)

  local function build(max_step, is_test)
    local cell
    local main, startup, out = program(function()
      local h0 = layers.data{ name = "h0", shape = { H }, dtype = "float64" }
      cell = layers.GRUCell{ hidden_size = H, dtype = "float64", name = "dec" }
      local dec = layers.BeamSearchDecoder{ cell = cell, start_token = START, end_token = END, beam_size = K,
        embedding_fn = function(ids) return oar.embedding{ input = ids, size = { V, Hin }, dtype = "float64",
                                                           param_attr = "bs_emb" } end,
        output_fn = function(h) return layers.fc{ input = h, size = V, num_flatten_dims = 2, bias_attr = false,
                                                  param_attr = "bs_out" } end }
      local ids, st, lens = layers.dynamic_decode{ decoder = dec, inits = h0, max_step_num = max_step,
                                                   is_test = is_test, return_length = true }
      return { ids, st.log_probs, lens }
    end)
    local params = gru_param_feed(cell, p)
    params.bs_emb, params.bs_out = E, Wo
    return main, startup, out, params
  end

  for _, case in ipairs({ { 1, true }, { 3, false }, { 12, false } }) do
    it(("finds the plain-Lua beam search's sequences and scores (max_step_num %d, is_test %s)"):format(
      case[1], tostring(case[2])), function()
      local main, startup, out, params = build(case[1], case[2])
      local run = session(startup, params)
      local got = run(main, { h0 = oar.Tensor(h0s, "float64") }, out)
      local ids, parents, _, logp, lens = lua_beam_search(E, p, Wo, h0s, K, START, END, case[1])
      assert.are.same({ 2, #ids, K }, got[1]:shape())
      assert.are.same(flat(backtrace_bt(ids, parents)), flat(got[1]:totable()))
      near(logp, got[2]:totable(), 1e-9, "final log_probs")
      assert.are.same(flat(lens), flat(got[3]:totable()))
      if case[1] == 1 then assert.are.equal(2, #ids) end   -- max_step_num + 1 steps, as Fluid's
    end)
  end

  it("tile_beam_merge_with_batch repeats each entry beam_size times in a row", function()
    local main, startup, out = program(function()
      local x = layers.data{ name = "x", shape = { 2 }, dtype = "float32" }
      return layers.BeamSearchDecoder.tile_beam_merge_with_batch(x, 3)
    end)
    local run = session(startup)
    local got = run(main, { x = { { 1, 2 }, { 3, 4 } } }, { out })[1]
    assert.are.same({ { 1, 2 }, { 1, 2 }, { 1, 2 }, { 3, 4 }, { 3, 4 }, { 3, 4 } }, got:totable())
  end)
end)

describe("BasicDecoder and its helpers", function()
  local V, Hin, H, END = 6, 3, 4, 2
  local rnd = lcg(41)
  local E, Wo = randm(V, Hin, rnd, 1.5), randm(H, V, rnd, 2.5)
  local p = gru_params(rnd, Hin, H)

  local function decoder_program(helper_of, opts)
    local cell
    local main, startup, out = program(function()
      local h0 = layers.data{ name = "h0", shape = { H }, dtype = "float64" }
      local starts = layers.data{ name = "starts", shape = { -1 }, dtype = "int64", append_batch_size = false }
      cell = layers.GRUCell{ hidden_size = H, dtype = "float64", name = "gd" }
      local embed = function(ids) return oar.embedding{ input = ids, size = { V, Hin }, dtype = "float64",
                                                        param_attr = "gd_emb" } end
      local dec = layers.BasicDecoder{ cell = cell, helper = helper_of(embed, starts),
        output_fn = function(h) return layers.fc{ input = h, size = V, bias_attr = false, param_attr = "gd_out" } end }
      local outs, _, lens = layers.dynamic_decode{ decoder = dec, inits = h0, max_step_num = opts.max_step,
                                                   return_length = true, is_test = true }
      return { outs.sample_ids, lens, outs.cell_outputs }
    end)
    local params = gru_param_feed(cell, p)
    params.gd_emb, params.gd_out = E, Wo
    return main, startup, out, params
  end

  it("GreedyEmbeddingHelper decodes the argmax until end_token, as plain Lua", function()
    local max_step = 6
    local main, startup, out, params = decoder_program(function(embed, starts)
      return layers.GreedyEmbeddingHelper{ embedding_fn = embed, start_tokens = starts, end_token = END }
    end, { max_step = max_step })
    local run = session(startup, params)
    local h0s, starts = randm(3, H, rnd, 1), { 0, 3, 5 }
    local got = run(main, { h0 = oar.Tensor(h0s, "float64"), starts = oar.Tensor(starts, "int64") }, out)
    -- plain Lua: every entry steps until all have emitted END (or max_step + 1 steps)
    local hs, ids, fin, lens = {}, {}, {}, {}
    for b = 1, 3 do hs[b], ids[b], fin[b], lens[b] = h0s[b], starts[b], false, 0 end
    local seq, t = {}, 0
    repeat
      t = t + 1
      local all = true
      for b = 1, 3 do
        hs[b] = gru_step(E[ids[b] + 1], hs[b], p)
        local logits, best = vecmat(hs[b], Wo), 1
        for v = 2, V do if logits[v] > logits[best] then best = v end end
        seq[b] = seq[b] or {}
        seq[b][t] = best - 1
        if not fin[b] then lens[b] = lens[b] + 1 end
        fin[b] = fin[b] or best - 1 == END
        ids[b] = best - 1
        all = all and fin[b]
      end
    until all or t > max_step
    assert.are.same(seq, got[1]:totable())
    assert.are.same(lens, got[2]:totable())
    assert.are.same({ 3, t, V }, got[3]:shape())
  end)

  it("SampleEmbeddingHelper draws ids in the vocabulary, the same with a fixed seed", function()
    local main, startup, out, params = decoder_program(function(embed, starts)
      return layers.SampleEmbeddingHelper{ embedding_fn = embed, start_tokens = starts, end_token = END,
                                           softmax_temperature = 0.5, seed = 3 }
    end, { max_step = 4 })
    local run = session(startup, params)
    local feed = { h0 = oar.Tensor(randm(4, H, rnd, 1), "float64"), starts = oar.Tensor({ 0, 1, 3, 4 }, "int64") }
    local a = run(main, feed, out)[1]
    local seen = {}
    for _, v in ipairs(flat(a:totable())) do
      assert(v >= 0 and v < V, "sampled id " .. v .. " outside the vocabulary")
      seen[v] = true
    end
    local n = 0
    for _ in pairs(seen) do n = n + 1 end
    assert(n >= 2, "the draws are all one id")
  end)

  it("gradients through dynamic_decode with a TrainingHelper match finite differences (float64)", function()
    local N, Tn, D, Hg = 2, 3, 2, 2
    local g = lcg(9)
    local x = {}
    for n = 1, N do x[n] = randm(Tn, D, g, 1) end
    local Rw = randm(N * Tn, Hg, g, 1)
    local cell, xv, loss, dx, dw
    local main, startup = program(function()
      xv = layers.data{ name = "x", shape = { Tn, D }, dtype = "float64" }
      xv.stop_gradient = false
      local lv = layers.data{ name = "len", shape = { -1 }, dtype = "int64", append_batch_size = false }
      cell = layers.GRUCell{ hidden_size = Hg, dtype = "float64", name = "tr" }
      local dec = layers.BasicDecoder{ cell = cell, helper = layers.TrainingHelper{ inputs = xv, sequence_length = lv } }
      local outs = layers.dynamic_decode{ decoder = dec, inits = cell:get_initial_states{ batch_ref = xv } }
      local o = layers.reshape(outs.cell_outputs, { -1, Hg })
      loss = layers.reduce_sum(layers.elementwise_mul{ x = o, y = layers.cast(layers.assign(Rw), "float64") })
      local grads = oar.gradients({ loss }, { xv, cell.candidate_weight })
      dx, dw = grads[1], grads[2]
    end)
    local run, scope = session(startup, gru_param_feed(cell, p and gru_params(g, D, Hg)))
    local lens = oar.Tensor({ 3, 2 }, "int64")
    local function L() return run(main, { x = oar.Tensor(x, "float64"), len = lens }, { loss })[1]:totable()[1] end
    local got = run(main, { x = oar.Tensor(x, "float64"), len = lens }, { dx, dw })
    local eps = 1e-6
    local want = {}
    for n = 1, N do
      want[n] = {}
      for t = 1, Tn do
        want[n][t] = {}
        for d = 1, D do
          local v = x[n][t][d]
          x[n][t][d] = v + eps
          local lp = L()
          x[n][t][d] = v - eps
          local lm = L()
          x[n][t][d] = v
          want[n][t][d] = (lp - lm) / (2 * eps)
        end
      end
    end
    near(want, got[1]:totable(), 1e-6, "d loss / d inputs")
    local W = scope:var(cell.candidate_weight.name):get_tensor():totable()
    local want_w = {}
    for i = 1, #W do
      want_w[i] = {}
      for j = 1, #W[1] do
        local v = W[i][j]
        W[i][j] = v + eps
        scope:var(cell.candidate_weight.name):set_tensor(oar.Tensor(W, "float64"))
        local lp = L()
        W[i][j] = v - eps
        scope:var(cell.candidate_weight.name):set_tensor(oar.Tensor(W, "float64"))
        local lm = L()
        W[i][j] = v
        scope:var(cell.candidate_weight.name):set_tensor(oar.Tensor(W, "float64"))
        want_w[i][j] = (lp - lm) / (2 * eps)
      end
    end
    near(want_w, got[2]:totable(), 1e-6, "d loss / d candidate weight")
  end)

  it("checks its arguments", function()
    program(function()
      local cell = layers.GRUCell{ hidden_size = 3 }
      local ids = layers.data{ name = "ids", shape = { -1 }, dtype = "int64", append_batch_size = false }
      local fl = layers.data{ name = "fl", shape = { -1 }, dtype = "float32", append_batch_size = false }
      expect_error(function() layers.BeamSearchDecoder{ cell = 1, start_token = 0, end_token = 1, beam_size = 2 } end,
        "BeamSearchDecoder", "cell")
      expect_error(function() layers.BeamSearchDecoder{ cell = cell, start_token = 0, end_token = 1, beam_size = 0 } end,
        "BeamSearchDecoder", "beam_size")
      expect_error(function() layers.dynamic_decode{ decoder = {} } end, "dynamic_decode", "decoder")
      expect_error(function() layers.BasicDecoder{ cell = cell, helper = {} } end, "BasicDecoder", "helper")
      expect_error(function() layers.GreedyEmbeddingHelper{ embedding_fn = print, start_tokens = fl, end_token = 1 } end,
        "GreedyEmbeddingHelper", "start_tokens")
      expect_error(function() layers.DecodeHelper{ initialize = print } end, "DecodeHelper", "sample")
      expect_error(function() layers.Decoder{ step = print } end, "Decoder", "initialize")
      local dec = layers.BeamSearchDecoder{ cell = cell, start_token = 0, end_token = 9, beam_size = 2,
        embedding_fn = function(x) return oar.embedding{ input = x, size = { 4, 3 } } end,
        output_fn = function(h) return layers.fc{ input = h, size = 4, num_flatten_dims = 2 } end }
      local h0 = layers.fill_constant_batch_size_like{ input = ids, shape = { -1, 3 }, dtype = "float32", value = 0 }
      expect_error(function() layers.dynamic_decode{ decoder = dec, inits = h0, max_step_num = 2 } end,
        "end_token 9 is outside the vocabulary")
      expect_error(function() layers.dynamic_decode{ decoder = dec, max_step_num = 2 } end,
        "BeamSearchDecoder:initialize", "inits")
    end)
  end)
end)

describe("oar.embedding", function()
  it("looks up [N, T] ids into [N, T, dim] (lookup_table_v2), padding_idx rows zero", function()
    local main, startup, out = program(function()
      local ids = layers.data{ name = "ids", shape = { 3 }, dtype = "int64" }
      local e = oar.embedding{ input = ids, size = { 5, 2 }, padding_idx = -1, param_attr = "emb_t",
                               dtype = "float64" }
      assert.are.same({ -1, 3, 2 }, e.shape)
      local op = oar.default_main_program():current_block():ops()
      assert.are.equal("lookup_table_v2", op[#op].type)
      return e
    end)
    local W = randm(5, 2, lcg(3), 1)
    local run = session(startup, { emb_t = W })
    local got = run(main, { ids = oar.Tensor({ { 0, 4, 2 }, { 3, 3, 1 } }, "int64") }, { out })[1]
    near({ { W[1], { 0, 0 }, W[3] }, { W[4], W[4], W[2] } }, got:totable(), 0, "rows")
    program(function()
      local f = layers.data{ name = "f", shape = { 3 }, dtype = "float32" }
      local i = layers.data{ name = "i", shape = { 3 }, dtype = "int64" }
      expect_error(function() oar.embedding{ input = f, size = { 5, 2 } } end, "embedding", "int64")
      expect_error(function() oar.embedding{ input = i, size = { 5 } } end, "embedding", "size")
      expect_error(function() oar.embedding{ input = i, size = { 5, 2 }, padding_idx = 7 } end, "padding_idx")
    end)
  end)
end)

describe("logical_or(x, y) positional (dynamic_decode's finished flags)", function()
  it("writes a new variable, not y", function()
    local main, startup, out = program(function()
      local a = layers.data{ name = "a", shape = { 3 }, dtype = "bool", append_batch_size = false }
      local b = layers.data{ name = "b", shape = { 3 }, dtype = "bool", append_batch_size = false }
      local o = layers.logical_or(a, b)
      local n = layers.logical_not(a)
      assert.are_not.equal(b.name, o.name)
      return { o, b, n }
    end)
    local run = session(startup)
    local got = run(main, { a = oar.Tensor({ true, false, false }, "bool"), b = oar.Tensor({ false, false, true }, "bool") },
                    out)
    assert.are.same({ true, false, true }, got[1]:totable())
    assert.are.same({ false, false, true }, got[2]:totable())
    assert.are.same({ false, true, true }, got[3]:totable())
  end)
end)
