-- beam_search and beam_search_decode: Fluid 1.8's test_beam_search_op
-- cases, each also re-computed by a plain-Lua beam step; finished prefixes,
-- pruning, is_accumulated = false, float64, ids absent; backtracking by
-- beam_search_decode on hand-built steps; bad inputs named in errors.
local T = require("spec.helpers.op_test")
local expect_error = require("spec.helpers.expect_error")

-- plain Lua: one beam step. lod = {sources (over rows), rows -> candidates};
-- returns ids, scores, lod, parent (0-based rows)
local function ref_step(pre_ids, pre_scores, ids, scores, lod, beam, end_id, accumulated)
  local out_ids, out_sc, parent, low = {}, {}, {}, {}
  local high = {}
  for i, v in ipairs(lod[1]) do high[i] = lod[2][v + 1] end   -- level 0 down to rows
  for s = 1, #high - 1 do
    local cands = {}
    for r = high[s], high[s + 1] - 1 do
      if pre_ids[r + 1] == end_id then
        cands[#cands + 1] = { r = r, id = end_id, sc = pre_scores[r + 1], n = #cands }
      else
        for d = 1, #scores[r + 1] do
          local v = scores[r + 1][d]
          local sc = accumulated and v or pre_scores[r + 1] + math.log(v)
          cands[#cands + 1] = { r = r, id = ids and ids[r + 1][d] or d - 1, sc = sc, n = #cands }
        end
      end
    end
    -- best first; an equal score: the later prefix first
    table.sort(cands, function(a, b)
      if a.sc ~= b.sc then return a.sc > b.sc end
      if a.r ~= b.r then return a.r > b.r end
      return a.n < b.n
    end)
    local kept = {}
    for j = 1, math.min(beam, #cands) do kept[j] = cands[j] end
    local done = true
    for _, c in ipairs(kept) do done = done and c.id == end_id and pre_ids[c.r + 1] == end_id end
    if done then kept = {} end
    for r = high[s], high[s + 1] - 1 do
      low[r + 1] = #out_ids
      for _, c in ipairs(kept) do
        if c.r == r then
          out_ids[#out_ids + 1], out_sc[#out_sc + 1], parent[#parent + 1] = c.id, c.sc, r
        end
      end
    end
  end
  low[#low + 1] = #out_ids
  return out_ids, out_sc, { high, low }, parent
end

local function flat(rows)
  local out = {}
  for _, r in ipairs(rows) do for _, v in ipairs(r) do out[#out + 1] = v end end
  return out
end

-- runs beam_search on a case and checks it against the plain-Lua step and Fluid's expected values
local function check_case(c)
  local dtype = c.dtype or "float32"
  local pre_ids_flat = flat(c.pre_ids)
  local pre_sc_flat = flat(c.pre_scores)
  local inputs = {
    pre_ids = T.tensor(c.pre_ids, { dtype = "int64" }),
    pre_scores = T.tensor(c.pre_scores, { dtype = dtype }),
    scores = T.tensor(c.scores, { dtype = dtype, lod = c.lod }),
  }
  if c.ids then inputs.ids = T.tensor(c.ids, { dtype = "int64", lod = c.lod }) end
  local res = T.run{ type = "beam_search", inputs = inputs, dtype = dtype,
                     outputs = { selected_ids = 1, selected_scores = 1, parent_idx = 1 },
                     attrs = { level = 0, beam_size = c.beam_size, end_id = 0,
                               is_accumulated = c.is_accumulated ~= false } }
  local ids, sc, lod, parent = ref_step(pre_ids_flat, pre_sc_flat, c.ids, c.scores, c.lod, c.beam_size, 0,
                                        c.is_accumulated ~= false)
  local n = #ids
  -- the plain-Lua step against Fluid's recorded outputs
  assert.same(c.out_ids, ids)
  assert.same(c.out_lod, lod)
  assert.same(c.out_parent, parent)
  for i = 1, n do assert.is_true(math.abs(sc[i] - c.out_scores[i]) <= 1e-5 * math.abs(c.out_scores[i]) + 1e-6) end
  -- the op against the plain-Lua step
  local tol = dtype == "float32" and 1e-6 or 1e-12
  T.assert_close(res.selected_ids[1], { shape = { n, 1 }, data = ids, lod = lod }, 0, 0, "selected_ids")
  T.assert_close(res.selected_scores[1], { shape = { n, 1 }, data = sc, lod = lod }, tol, tol, "selected_scores")
  T.assert_close(res.parent_idx[1], { shape = { n }, data = parent }, 0, 0, "parent_idx")
  assert.are.equal("int64", res.selected_ids[1].dtype)
  assert.are.equal(dtype, res.selected_scores[1].dtype)
  assert.are.equal("int32", res.parent_idx[1].dtype)
  return res
end

-- Fluid 1.8's test_beam_search_op.py cases (end_id 0, level 0)
local LOD = { { 0, 2, 4 }, { 0, 1, 2, 3, 4 } }
local CASES = {
  { name = "four prefixes, two sources", pre_ids = { { 1, 2, 3, 4 } }, pre_scores = { { 0.1, 0.2, 0.3, 0.4 } },
    ids = { { 4, 2, 5 }, { 2, 1, 3 }, { 3, 5, 2 }, { 8, 2, 1 } },
    scores = { { 0.5, 0.3, 0.2 }, { 0.6, 0.3, 0.1 }, { 0.9, 0.5, 0.1 }, { 0.7, 0.5, 0.1 } }, lod = LOD,
    beam_size = 2, out_ids = { 4, 2, 3, 8 }, out_scores = { 0.5, 0.6, 0.9, 0.7 },
    out_lod = { { 0, 2, 4 }, { 0, 1, 2, 3, 4 } }, out_parent = { 0, 1, 2, 3 } },
  { name = "a prefix wins both slots", pre_ids = { { 1 }, { 2 }, { 3 }, { 4 } },
    pre_scores = { { 0.1, 0.2, 0.3, 0.4 } },
    ids = { { 4, 2 }, { 7, 3 }, { 3, 5 }, { 8, 1 } },
    scores = { { 0.6, 0.9 }, { 0.5, 0.3 }, { 0.9, 0.5 }, { 0.1, 0.7 } }, lod = LOD,
    beam_size = 2, out_ids = { 2, 4, 3, 1 }, out_scores = { 0.9, 0.6, 0.9, 0.7 },
    out_lod = { { 0, 2, 4 }, { 0, 2, 2, 3, 4 } }, out_parent = { 0, 0, 2, 3 } },
  { name = "finished prefixes carried with their scores", pre_ids = { { 1 }, { 0 }, { 0 }, { 4 } },
    pre_scores = { { 0.1 }, { 1.2 }, { 0.5 }, { 0.4 } },
    ids = { { 4, 2 }, { 7, 3 }, { 3, 5 }, { 8, 1 } },
    scores = { { 0.6, 0.9 }, { 0.5, 0.3 }, { 0.9, 0.5 }, { 0.6, 0.7 } }, lod = LOD,
    beam_size = 2, out_ids = { 2, 0, 1, 8 }, out_scores = { 0.9, 1.2, 0.7, 0.6 },
    out_lod = { { 0, 2, 4 }, { 0, 1, 2, 2, 4 } }, out_parent = { 0, 1, 3, 3 } },
  { name = "a source all of whose prefixes ended is pruned", pre_ids = { { 0 }, { 0 }, { 0 }, { 4 } },
    pre_scores = { { 0.1 }, { 1.2 }, { 0.5 }, { 0.4 } },
    ids = { { 4, 2 }, { 7, 3 }, { 3, 5 }, { 8, 1 } },
    scores = { { 0.6, 0.9 }, { 0.5, 0.3 }, { 0.9, 0.5 }, { 0.6, 0.7 } }, lod = LOD,
    beam_size = 2, out_ids = { 1, 8 }, out_scores = { 0.7, 0.6 },
    out_lod = { { 0, 2, 4 }, { 0, 0, 0, 0, 2 } }, out_parent = { 3, 3 } },
  { name = "is_accumulated = false adds log(scores)", pre_ids = { { 1 }, { 2 }, { 3 }, { 4 } },
    pre_scores = { { 0.1, 2.2, 0.3, 0.4 } }, is_accumulated = false,
    ids = { { 4, 2 }, { 7, 3 }, { 3, 5 }, { 8, 1 } },
    scores = { { 0.6, 0.9 }, { 0.5, 0.3 }, { 0.9, 0.5 }, { 0.1, 0.7 } }, lod = LOD,
    beam_size = 2, out_ids = { 7, 3, 3, 1 }, out_scores = { 1.50685, 0.996027, 0.194639, 0.043325 },
    out_lod = { { 0, 2, 4 }, { 0, 0, 2, 3, 4 } }, out_parent = { 1, 1, 2, 3 } },
  { name = "beam_size 1, one prefix per source", pre_ids = { { 1 }, { 2 }, { 3 }, { 4 } },
    pre_scores = { { 0.1, 0.2, 0.3, 0.4 } },
    ids = { { 4, 2 }, { 7, 3 }, { 3, 5 }, { 8, 1 } },
    scores = { { 0.6, 0.9 }, { 0.5, 0.3 }, { 0.9, 0.5 }, { 0.1, 0.7 } }, lod = { { 0, 1, 2, 3, 4 }, { 0, 1, 2, 3, 4 } },
    beam_size = 1, out_ids = { 2, 7, 3, 1 }, out_scores = { 0.9, 0.5, 0.9, 0.7 },
    out_lod = { { 0, 1, 2, 3, 4 }, { 0, 1, 2, 3, 4 } }, out_parent = { 0, 1, 2, 3 } },
}

describe("beam_search", function()
  for _, c in ipairs(CASES) do
    it("Fluid's case: " .. c.name, function() check_case(c) end)
  end

  it("float64 scores, is_accumulated false", function()
    local c = {}
    for k, v in pairs(CASES[5]) do c[k] = v end
    c.dtype = "float64"
    check_case(c)
  end)

  it("without ids a candidate's id is its column", function()
    local c = {}
    for k, v in pairs(CASES[2]) do c[k] = v end
    c.ids = nil
    c.out_ids = { 1, 0, 0, 1 }
    check_case(c)
  end)

  it("follows a level-0 LoD over prefixes with several candidates (absolute offsets)", function()
    -- 3 previous prefixes made 5 rows: source 0 has rows 0..2, source 1 rows 3..4
    local c = { pre_ids = { { 5 }, { 6 }, { 0 }, { 7 }, { 8 } }, pre_scores = { { -1 }, { -2 }, { -0.5 }, { -3 }, { -4 } },
      ids = { { 1, 2 }, { 3, 4 }, { 5, 6 }, { 1, 2 }, { 3, 4 } },
      scores = { { -1.5, -2.5 }, { -2.25, -0.75 }, { -0.1, -0.2 }, { -3.5, -4.5 }, { -4.25, -5.5 } },
      lod = { { 0, 2, 3 }, { 0, 2, 3, 5 } }, beam_size = 3,
      out_ids = { 1, 4, 0, 1, 2, 3 }, out_scores = { -1.5, -0.75, -0.5, -3.5, -4.5, -4.25 },
      out_lod = { { 0, 3, 5 }, { 0, 1, 2, 3, 5, 6 } }, out_parent = { 0, 1, 2, 3, 3, 4 } }
    check_case(c)
  end)

  it("refuses bad inputs, naming the op and the variable", function()
    local base = function()
      return { pre_ids = T.tensor({ { 1 }, { 2 } }, { dtype = "int64" }),
               pre_scores = T.tensor({ { 0.1 }, { 0.2 } }, { dtype = "float32" }),
               ids = T.tensor({ { 3, 4 }, { 5, 6 } }, { dtype = "int64", lod = { { 0, 2 }, { 0, 1, 2 } } }),
               scores = T.tensor({ { 0.3, 0.4 }, { 0.5, 0.6 } }, { dtype = "float32", lod = { { 0, 2 }, { 0, 1, 2 } } }) }
    end
    local function run(inputs, attrs)
      return T.run{ type = "beam_search", inputs = inputs, dtype = "float32",
                    outputs = { selected_ids = 1, selected_scores = 1 },
                    attrs = attrs or { level = 0, beam_size = 2, end_id = 0 } }
    end
    assert.is_truthy(run(base()).selected_ids[1])
    local i = base()
    i.scores = T.tensor({ { 0.3, 0.4 }, { 0.5, 0.6 } }, { dtype = "float32", lod = { { 0, 1, 2 } } })
    expect_error(function() run(i) end, "beam_search", "scores", "in_scores_1", "LoD of level 2")
    i = base()
    i.ids = T.tensor({ { 3, 4 }, { 5, 6 } }, { dtype = "int64", lod = { { 0, 1, 2 } } })
    expect_error(function() run(i) end, "beam_search", "ids", "in_ids_1", "LoD of level 2")
    i = base()
    i.ids = T.tensor({ { 3, 4, 7 }, { 5, 6, 8 } }, { dtype = "int64", lod = { { 0, 2 }, { 0, 1, 2 } } })
    expect_error(function() run(i) end, "beam_search", "ids", "in_ids_1", "shape of scores")
    i = base()
    i.pre_ids = T.tensor({ { 1 }, { 2 }, { 3 } }, { dtype = "int64" })
    expect_error(function() run(i) end, "beam_search", "pre_ids", "in_pre_ids_1", "one value per prefix")
    i = base()
    i.pre_scores = T.tensor({ { 0.1 }, { 0.2 } }, { dtype = "float64" })
    expect_error(function() run(i) end, "beam_search", "pre_scores", "dtype of scores")
    expect_error(function() run(base(), { level = 0, beam_size = 0, end_id = 0 }) end, "beam_search", "beam_size")
    expect_error(function() run(base(), { level = 0, end_id = 0 }) end, "beam_search", "beam_size")
  end)
end)

-- ---- beam_search_decode ---------------------------------------------------------------

-- one step: ids, scores (per row) and its LoD
local function step(ids, scores, lod, dtype)
  return { ids = T.tensor(ids, { shape = { #ids, 1 }, dtype = "int64", lod = lod }),
           scores = T.tensor(scores, { shape = { #scores, 1 }, dtype = dtype or "float32", lod = lod }) }
end

-- runs beam_search_decode over steps: builds the two arrays with write_to_array
local function decode(steps, beam_size, end_id, dtype)
  local ffi = require("ffi")
  local C = require("oar.lib").C
  local pout = ffi.new("oar_program_t*[1]")
  assert(C.oar_program_new(pout) == 0)
  local prog = ffi.gc(pout[0], C.oar_program_free)
  local block = C.oar_program_block(prog, 0)
  local feeds = {}
  local function declare(name, v, dt, vtype)
    local out = ffi.new("oar_var_desc_t*[1]")
    assert(C.oar_block_var_new(block, name, out) == 0)
    if vtype then assert(C.oar_var_desc_set_type(out[0], vtype) == 0) end
    if dt then assert(C.oar_var_desc_set_dtype(out[0], T.DTYPES[dt]) == 0) end
    if v then feeds[name] = v end
  end
  declare("ids_arr", nil, "int64", 10)
  declare("sc_arr", nil, dtype or "float32", 10)
  for s, st in ipairs(steps) do
    local i = "i" .. s
    declare(i, T.tensor({ s - 1 }, { dtype = "int64" }), "int64")
    declare("sid" .. s, st.ids, "int64")
    declare("ssc" .. s, st.scores, dtype or "float32")
    T.append_op(block, "write_to_array", { X = { "sid" .. s }, I = { i } }, { Out = { "ids_arr" } })
    T.append_op(block, "write_to_array", { X = { "ssc" .. s }, I = { i } }, { Out = { "sc_arr" } })
  end
  declare("out_ids", nil, "int64")
  declare("out_sc", nil, dtype or "float32")
  T.append_op(block, "beam_search_decode", { Ids = { "ids_arr" }, Scores = { "sc_arr" } },
              { SentenceIds = { "out_ids" }, SentenceScores = { "out_sc" } },
              { beam_size = beam_size, end_id = end_id })
  return T.run_program(prog, feeds, { "out_ids", "out_sc" }, dtype or "float32")
end

describe("beam_search_decode", function()
  it("backtracks Fluid's test_beam_search_decode_op steps (beam 2, end_id 1)", function()
    -- the scores equal the ids, as in Fluid's test
    local function st(ids, lod) return step(ids, ids, lod) end
    local got = decode({
      st({ 0, 0 }, { { 0, 1, 2 }, { 0, 1, 2 } }),
      st({ 2, 3, 4, 5 }, { { 0, 1, 2 }, { 0, 2, 4 } }),
      st({ 3, 1, 5, 4 }, { { 0, 2, 4 }, { 0, 2, 2, 4, 4 } }),
      st({ 1, 1, 3, 5 }, { { 0, 2, 4 }, { 0, 1, 2, 3, 4 } }),
      st({ 5, 1 }, { { 0, 2, 4 }, { 0, 0, 0, 2, 2 } }),
    }, 2, 1)
    local want = { 0, 2, 3, 1, 0, 2, 1, 0, 4, 5, 3, 5, 0, 4, 5, 3, 1 }
    local lod = { { 0, 2, 4 }, { 0, 4, 7, 12, 17 } }
    T.assert_close(got[1], { shape = { 17 }, data = want, lod = lod }, 0, 0, "SentenceIds")
    T.assert_close(got[2], { shape = { 17 }, data = want, lod = lod }, 0, 0, "SentenceScores")
    assert.are.equal("int64", got[1].dtype)
    assert.are.equal("float32", got[2].dtype)
  end)

  it("one end_id per hypothesis, a pruned last step, float64, sorted by the final score", function()
    -- source 0: 7 -> {3, 9}; then 3 -> 9 and the finished 9 carried; then pruned (no rows)
    local got = decode({
      step({ 7 }, { 0 }, { { 0, 1 }, { 0, 1 } }, "float64"),
      step({ 3, 9 }, { -1, -2 }, { { 0, 1 }, { 0, 2 } }, "float64"),
      step({ 9, 9 }, { -1.5, -2 }, { { 0, 2 }, { 0, 1, 2 } }, "float64"),
      step({}, {}, { { 0, 2 }, { 0, 0, 0 } }, "float64"),
    }, 2, 9, "float64")
    local lod = { { 0, 2 }, { 0, 3, 5 } }
    T.assert_close(got[1], { shape = { 5 }, data = { 7, 3, 9, 7, 9 }, lod = lod }, 0, 0, "SentenceIds")
    T.assert_close(got[2], { shape = { 5 }, data = { 0, -1, -1.5, 0, -2 }, lod = lod }, 0, 0, "SentenceScores")
    assert.are.equal("float64", got[2].dtype)
  end)

  it("refuses steps that are not LoD level 2 or hold more than beam_size candidates", function()
    expect_error(function()
      decode({ step({ 7 }, { 0 }, { { 0, 1 } }) }, 2, 9)
    end, "beam_search_decode", "Ids", "LoD of level 2")
    expect_error(function()
      decode({ step({ 1, 2, 3 }, { 0, 0, 0 }, { { 0, 1 }, { 0, 3 } }) }, 2, 9)
    end, "beam_search_decode", "Ids", "more than beam_size")
  end)
end)
