-- An end-to-end beam-search decoder written as Fluid 1.8's book writes it
-- (machine_translation's decode): a While loop over tensor arrays of ids
-- and scores, the next-token scores from a fixed bigram table fed through
-- lookup_table, topk, beam_search, and beam_search_decode after the loop.
-- Its sentences must match a plain-Lua beam search over the same table.
-- Also the layers' argument checks.
local oar = require("oar")
local framework = require("oar.framework")
local layers = oar.layers
local expect_error = require("spec.helpers.expect_error")

local V, START, END = 7, 0, 6

-- a fixed bigram "model": L[i][j] = log P(next j | last i), from a small LCG
-- (distinct values, so no two hypotheses tie)
local function table_of_logprobs(seed)
  local s = seed
  local L = {}
  for i = 1, V do
    local row, z = {}, 0
    for j = 1, V do
      s = (s * 1103515245 + 12345) % 2147483648
      row[j] = math.exp(3 * s / 2147483648)
      z = z + row[j]
    end
    -- float32 values, so Lua and the program add the same numbers
    for j = 1, V do row[j] = tonumber(require("ffi").new("float", math.log(row[j] / z))) end
    L[i] = row
  end
  return L
end

local f32 = function(x) return tonumber(require("ffi").new("float", x)) end

-- plain Lua: beam search over L for sources starting at the ids `starts`.
-- Returns per source its hypotheses {ids=, scores=}, best final score first.
local function lua_beam(L, starts, beam, max_len)
  local out = {}
  for _, start in ipairs(starts) do
    local beams = { { ids = { start }, scores = { 0 } } }
    for _ = 1, max_len do
      local cands = {}
      for bi, b in ipairs(beams) do
        local last, sc = b.ids[#b.ids], b.scores[#b.scores]
        if last == END then
          cands[#cands + 1] = { b = bi, id = END, sc = sc, carried = true }
        else
          for j = 1, V do cands[#cands + 1] = { b = bi, id = j - 1, sc = f32(sc + L[last + 1][j]) } end
        end
      end
      table.sort(cands, function(x, y) return x.sc > y.sc end)
      local kept, all_done = {}, true
      for k = 1, math.min(beam, #cands) do
        kept[k] = cands[k]
        all_done = all_done and cands[k].carried == true
      end
      if all_done then break end   -- pruned: the hypotheses stay as they are
      local nb = {}
      for k, c in ipairs(kept) do
        local b = beams[c.b]
        local ids, scores = { unpack(b.ids) }, { unpack(b.scores) }
        if not c.carried then ids[#ids + 1], scores[#scores + 1] = c.id, c.sc end
        nb[k] = { ids = ids, scores = scores }
      end
      beams = nb
    end
    table.sort(beams, function(x, y) return x.scores[#x.scores] > y.scores[#y.scores] end)
    out[#out + 1] = beams
  end
  return out
end

-- the decoder program; returns main, startup, sentence ids and scores
local function build(L, beam, max_len)
  local main, startup = oar.Program(), oar.Program()
  local sent_ids, sent_scores
  oar.program_guard(main, startup, function()
    local init_ids = layers.data{ name = "init_ids", shape = { 1 }, dtype = "int64", lod_level = 2 }
    local init_scores = layers.data{ name = "init_scores", shape = { 1 }, dtype = "float32", lod_level = 2 }
    local W = layers.assign(L)
    local max_len_v = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = max_len }
    local counter = layers.zeros{ shape = { 1 }, dtype = "int64" }
    local ids_arr, sc_arr = layers.create_array("int64"), layers.create_array("float32")
    layers.array_write{ x = init_ids, i = counter, array = ids_arr }
    layers.array_write{ x = init_scores, i = counter, array = sc_arr }
    local cond = layers.less_than{ x = counter, y = max_len_v }
    local loop = layers.While(cond)
    loop:block(function()
      local pre_ids = layers.array_read{ array = ids_arr, i = counter }
      local pre_scores = layers.array_read{ array = sc_arr, i = counter }
      -- the "model": row pre_id of the table, through lookup_table
      local block = framework.default_main_program():current_block()
      local logp = block:create_var{ dtype = "float32" }
      block:append_op{ type = "lookup_table", inputs = { W = { W }, Ids = { pre_ids } },
                       outputs = { Out = { logp } }, attrs = {} }
      logp = layers.lod_reset{ x = logp, y = pre_scores }
      local top_scores, top_ids = layers.topk(logp, beam)
      local accu = layers.elementwise_add{ x = top_scores, y = layers.reshape(pre_scores, { -1 }), axis = 0 }
      local sel_ids, sel_scores = layers.beam_search{ pre_ids = pre_ids, pre_scores = pre_scores, ids = top_ids,
                                                      scores = accu, beam_size = beam, end_id = END, level = 0 }
      layers.increment{ x = counter, value = 1, in_place = true }
      layers.array_write{ x = sel_ids, i = counter, array = ids_arr }
      layers.array_write{ x = sel_scores, i = counter, array = sc_arr }
      local len_ok = layers.less_than{ x = counter, y = max_len_v }
      local going = layers.logical_not(layers.is_empty{ x = sel_ids })
      layers.logical_and{ x = len_ok, y = going, out = cond }
    end)
    sent_ids, sent_scores = layers.beam_search_decode{ ids = ids_arr, scores = sc_arr, beam_size = beam,
                                                       end_id = END }
  end)
  return main, startup, sent_ids, sent_scores
end

local function decode(L, starts, beam, max_len)
  local nsrc = #starts
  local main, startup, sid, ssc = build(L, beam, max_len)
  local exe = oar.Executor()
  exe:run(startup)
  local lod, col = { 0 }, {}
  for i = 1, nsrc do lod[i + 1] = i; col[i] = { starts[i] } end
  local ids = oar.Tensor(col, "int64")
  ids:set_lod({ lod, lod })
  local zeros = {}
  for i = 1, nsrc do zeros[i] = { 0 } end
  local sc = oar.Tensor(zeros, "float32")
  sc:set_lod({ lod, lod })
  local got = exe:run(main, { feed = { init_ids = ids, init_scores = sc }, fetch_list = { sid, ssc } })
  return got[1], got[2]
end

-- the fetched sentences as {source -> {{ids=, scores=}, ...}}
local function split(ids_t, sc_t)
  local lod = ids_t:lod()
  assert.are.same(lod, sc_t:lod())
  local ids, sc = ids_t:totable(), sc_t:totable()
  local out = {}
  for s = 1, #lod[1] - 1 do
    local hyps = {}
    for h = lod[1][s] + 1, lod[1][s + 1] do
      local hi, hs = {}, {}
      for w = lod[2][h] + 1, lod[2][h + 1] do hi[#hi + 1], hs[#hs + 1] = ids[w], sc[w] end
      hyps[#hyps + 1] = { ids = hi, scores = hs }
    end
    out[s] = hyps
  end
  return out
end

local function check_matches(got, want)
  assert.are.equal(#want, #got)
  for s = 1, #want do
    assert.are.equal(#want[s], #got[s], "source " .. s .. ": hypotheses")
    for h = 1, #want[s] do
      assert.are.same(want[s][h].ids, got[s][h].ids)
      for w = 1, #want[s][h].scores do
        assert.is_true(math.abs(want[s][h].scores[w] - got[s][h].scores[w]) <= 1e-5,
          ("source %d hypothesis %d word %d: %g vs %g"):format(s, h, w, want[s][h].scores[w], got[s][h].scores[w]))
      end
    end
  end
end

describe("a beam-search decoder in a While loop", function()
  for _, c in ipairs({ { beam = 3, max_len = 6, seed = 7 }, { beam = 2, max_len = 8, seed = 11 },
                       { beam = 1, max_len = 5, seed = 3 }, { beam = 4, max_len = 12, seed = 5 } }) do
    it(("decodes what a plain-Lua beam search finds (beam %d, %d steps at most)"):format(c.beam, c.max_len),
      function()
        local L = table_of_logprobs(c.seed)
        local ids_t, sc_t = decode(L, { START, 3, 1 }, c.beam, c.max_len)
        assert.are.equal("int64", ids_t:dtype())
        assert.are.equal("float32", sc_t:dtype())
        check_matches(split(ids_t, sc_t), lua_beam(L, { START, 3, 1 }, c.beam, c.max_len))
      end)
  end

  it("stops early once every hypothesis has ended", function()
    -- END is the likeliest token after anything: every beam ends at once
    local L = table_of_logprobs(9)
    for i = 1, V do L[i][END + 1] = f32(-0.01) end
    local ids_t, sc_t = decode(L, { START }, 2, 50)
    local got = split(ids_t, sc_t)
    check_matches(got, lua_beam(L, { START }, 2, 50))
    assert.are.same({ START, END }, got[1][1].ids)
  end)
end)

describe("layers.beam_search / beam_search_decode arguments", function()
  local function in_program(fn)
    oar.program_guard(oar.Program(), oar.Program(), fn)
  end

  it("build the ops with Fluid's attributes and defaults", function()
    in_program(function()
      local pre_ids = layers.data{ name = "p", shape = { 1 }, dtype = "int64", lod_level = 2 }
      local pre_scores = layers.data{ name = "ps", shape = { 1 }, dtype = "float32", lod_level = 2 }
      local scores = layers.data{ name = "s", shape = { 4 }, dtype = "float32", lod_level = 2 }
      local a, b, p = layers.beam_search{ pre_ids = pre_ids, pre_scores = pre_scores, scores = scores,
                                          beam_size = 2, end_id = 1, return_parent_idx = true }
      assert.are.equal("int64", a.dtype)
      assert.are.equal("float32", b.dtype)
      assert.are.equal("int32", p.dtype)
      local op = framework.default_main_program():global_block():ops()[1]
      assert.are.equal("beam_search", op.type)
      assert.are.equal(0, op:attr("level"))
      assert.are.equal(true, op:attr("is_accumulated"))
      -- positional, as Fluid
      local x, y = layers.beam_search(pre_ids, pre_scores, nil, scores, 3, 2, 0, false)
      assert.is_truthy(x and y)
      local ia, sa = layers.create_array("int64"), layers.create_array("float32")
      local si, ss = layers.beam_search_decode(ia, sa, 2, 1)
      assert.are.equal("int64", si.dtype)
      assert.are.equal("float32", ss.dtype)
    end)
  end)

  it("refuse unknown keys, bad beam sizes and wrong dtypes", function()
    in_program(function()
      local pre_ids = layers.data{ name = "p", shape = { 1 }, dtype = "int64", lod_level = 2 }
      local pre_scores = layers.data{ name = "ps", shape = { 1 }, dtype = "float32", lod_level = 2 }
      local scores = layers.data{ name = "s", shape = { 4 }, dtype = "float32", lod_level = 2 }
      local base = { pre_ids = pre_ids, pre_scores = pre_scores, scores = scores, beam_size = 2, end_id = 1 }
      local function with(k, v)
        local t = {}
        for kk, vv in pairs(base) do t[kk] = vv end
        t[k] = v
        return t
      end
      expect_error(function() layers.beam_search(with("beamsize", 2)) end, "beam_search", "beamsize")
      expect_error(function() layers.beam_search(with("beam_size", 0)) end, "beam_search", "beam_size")
      expect_error(function() layers.beam_search(with("pre_ids", pre_scores)) end, "beam_search", "pre_ids", "int64")
      expect_error(function() layers.beam_search(with("scores", pre_ids)) end, "beam_search", "scores", "float32")
      local ia, sa = layers.create_array("int64"), layers.create_array("float32")
      expect_error(function() layers.beam_search_decode{ ids = pre_ids, scores = sa, beam_size = 2, end_id = 1 } end,
        "beam_search_decode", "ids", "tensor array")
      expect_error(function() layers.beam_search_decode{ ids = sa, scores = sa, beam_size = 2, end_id = 1 } end,
        "beam_search_decode", "ids", "int64")
      expect_error(function() layers.beam_search_decode{ ids = ia, scores = sa, beam_size = 2, ["end"] = 1 } end,
        "beam_search_decode", "end")
    end)
  end)
end)
