-- cvm (issue 22): ports of Fluid 1.8's test_cvm_op.py with the reference
-- re-computed in plain Lua, Fluid's cvm_grad rule (the first two columns of
-- X@GRAD are the CVM values, the rest Y@GRAD), the layer
-- continuous_value_model, and errors naming the op and variable.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")
local W = require("spec.helpers.sequence_grad")
local expect_error = require("spec.helpers.expect_error")
local offsets = require("spec.helpers.index").offsets

local function cvm_ref(x, n, D, use_cvm)
  local y = {}
  for r = 0, n - 1 do
    if use_cvm then
      local a = math.log(x[r * D + 1] + 1)
      y[#y + 1] = a
      y[#y + 1] = math.log(x[r * D + 2] + 1) - a
      for j = 3, D do y[#y + 1] = x[r * D + j] end
    else
      for j = 3, D do y[#y + 1] = x[r * D + j] end
    end
  end
  return y
end

describe("cvm", function()
  -- TestCVMOpWithLodTensor: x [1, 11] with lod [[1]], use_cvm false
  it("a LoD input [1, 11], use_cvm false", function()
    local x = R.uniform(11, 3, 0, 1)
    T.check_output{ type = "cvm", dtype = "float32", attrs = { use_cvm = false },
                    inputs = { X = T.tensor(x, { shape = { 1, 11 }, lod = { { 0, 1 } }, dtype = "float32" }),
                               CVM = T.tensor({ 0.6, 0.4 }, { shape = { 1, 2 }, dtype = "float32" }) },
                    expect = { Y = { shape = { 1, 9 }, data = cvm_ref(x, 1, 11, false), lod = { { 0, 1 } } } },
                    atol = 1e-6 }
  end)

  -- TestCVMOpWithOutLodTensor1/2: x [2, 11], use_cvm true / false
  for _, use in ipairs({ true, false }) do
    for _, dt in ipairs({ "float32", "float64" }) do
      it(("x [2, 11], use_cvm %s (%s)"):format(tostring(use), dt), function()
        local x = R.uniform(22, 5, 0, 1)
        T.check_output{ type = "cvm", dtype = dt, attrs = { use_cvm = use },
                        inputs = { X = T.tensor(x, { shape = { 2, 11 }, dtype = dt }),
                                   CVM = T.tensor({ 0.6, 0.4 }, { shape = { 1, 2 }, dtype = dt }) },
                        expect = { Y = { shape = { 2, use and 11 or 9 }, data = cvm_ref(x, 2, 11, use) } },
                        atol = dt == "float32" and 1e-6 or 1e-12 }
      end)
    end
  end

  -- the test's cvm_grad_compute: DX[:, 0:2] = CVM, DX[:, 2:] = DY's non-cvm columns
  for _, use in ipairs({ true, false }) do
    it("grad follows Fluid's rule, use_cvm " .. tostring(use), function()
      local n, D = 3, 5
      local x, cvm = R.uniform(n * D, 7, 0, 1), R.uniform(n * 2, 9, 0, 1)
      local W = use and D or D - 2
      local g = T.analytic_grads{ type = "cvm", attrs = { use_cvm = use },
                                  inputs = { X = T.tensor(x, { shape = { n, D } }), CVM = T.tensor(cvm, { shape = { n, 2 } }) },
                                  wrt = { "X" }, of = { "Y" } }
      -- the loss is mean(Y): every Y@GRAD element is 1 / (n * W)
      local want = {}
      for r = 0, n - 1 do
        want[#want + 1] = cvm[r * 2 + 1]
        want[#want + 1] = cvm[r * 2 + 2]
        for _ = 3, D do want[#want + 1] = 1 / (n * W) end
      end
      T.assert_close(g[1], { shape = { n, D }, data = want }, 1e-12)
    end)
  end

  it("grad with a LoD: one CVM row per sequence", function()
    local x, cvm = R.uniform(4 * 4, 11, 0, 1), { 0.1, 0.2, 0.3, 0.4 }
    local g = T.analytic_grads{ type = "cvm", attrs = { use_cvm = true },
                                inputs = { X = T.tensor(x, { shape = { 4, 4 }, lod = { { 0, 3, 4 } } }),
                                           CVM = T.tensor(cvm, { shape = { 2, 2 } }) },
                                wrt = { "X" }, of = { "Y" } }
    local e = 1 / 16
    T.assert_close(g[1], { shape = { 4, 4 },
      data = { 0.1, 0.2, e, e, 0.1, 0.2, e, e, 0.1, 0.2, e, e, 0.3, 0.4, e, e } }, 1e-12)
  end)

  it("refuses X with fewer than 2 columns and a CVM that is not [batch, 2]", function()
    expect_error(function()
      T.run{ type = "cvm", inputs = { X = T.tensor({ 1, 2 }, { shape = { 2, 1 } }),
                                      CVM = T.tensor({ 1, 2 }, { shape = { 1, 2 } }) } }
    end, "cvm", "in_X", "show and click need 2")
    expect_error(function()
      T.run{ type = "cvm", inputs = { X = T.tensor({ 1, 2, 3, 4 }, { shape = { 2, 2 } }),
                                      CVM = T.tensor({ 1, 2, 3 }, { shape = { 1, 3 } }) } }
    end, "cvm", "in_CVM", "[batch, 2]")
  end)
end)

describe("oar.layers.continuous_value_model", function()
  local oar = require("oar")
  local A = require("spec.helpers.api")
  local layers = oar.layers

  it("builds cvm with Fluid's arguments and runs", function()
    local main, startup, y, y2 = A.build(function()
      local x = layers.data{ name = "x", shape = { 5 } }
      local c = layers.data{ name = "c", shape = { 2 } }
      return layers.continuous_value_model{ input = x, cvm = c },
             layers.continuous_value_model{ input = x, cvm = c, use_cvm = false }
    end)
    assert.are.same({ -1, 5 }, y.shape)
    assert.are.same({ -1, 3 }, y2.shape)
    local xs = R.uniform(10, 3, 0, 1)
    local got = A.run(main, startup, { x = oar.Tensor(xs, "float32"):reshape({ 2, 5 }),
                                       c = oar.Tensor({ 1, 0, 1, 0 }, "float32"):reshape({ 2, 2 }) }, { y, y2 })
    local function flat(t)
      local out = {}
      for _, row in ipairs(t:totable()) do for _, v in ipairs(row) do out[#out + 1] = v end end
      return out
    end
    T.assert_close({ data = flat(got[1]) }, { data = cvm_ref(xs, 2, 5, true) }, 1e-6)
    T.assert_close({ data = flat(got[2]) }, { data = cvm_ref(xs, 2, 5, false) }, 1e-6)
  end)

  it("refuses a missing cvm, naming the layer", function()
    A.build(function()
      local x = layers.data{ name = "x", shape = { 5 } }
      local e = A.errmsg(layers.continuous_value_model, { input = x })
      assert.is_truthy(e:find("continuous_value_model", 1, true) and e:find("cvm", 1, true), e)
    end)
  end)
end)

-- ---- filter_by_instag ---------------------------------------------------------------
-- the reference: instances (sequences of ins_lod, or rows) whose tags meet the filter
local function instag_ref(x, D, ins_lod, tags, tag_lod, filter, empty_val)
  local keep = {}
  for _, f in ipairs(filter) do keep[f] = true end
  local out, out_lod, map, map_lod, lw = {}, { 0 }, {}, { 0 }, {}
  for i = 1, #tag_lod - 1 do
    local pass = false
    for j = tag_lod[i] + 1, tag_lod[i + 1] do pass = pass or keep[tags[j]] == true end
    if pass then
      local r0, r1 = ins_lod and ins_lod[i] or i - 1, ins_lod and ins_lod[i + 1] or i
      map[#map + 1] = out_lod[#out_lod]; map[#map + 1] = r0; map[#map + 1] = r1 - r0
      for r = r0, r1 - 1 do for k = 1, D do out[#out + 1] = x[r * D + k] end end
      out_lod[#out_lod + 1] = out_lod[#out_lod] + r1 - r0
      map_lod[#map_lod + 1] = #map_lod
      lw[#lw + 1] = 1
    end
  end
  if #lw == 0 then
    for k = 1, D do out[k] = empty_val or 0 end
    return out, { 0, 1 }, { 0, 1, 1 }, { 0, 1 }, { 0 }
  end
  return out, out_lod, map, map_lod, lw
end

describe("filter_by_instag", function()
  local function case1()
    local x = {}
    for i = 0, 35 do for _ = 1, 4 do x[#x + 1] = i end end
    return x
  end
  local CASES = {
    -- Test Case 1: 36 x 4 rows i, lod lengths 1..8, tags 1, 2, ..., filter {2}
    { name = "Case 1", x = case1(), D = 4, ins = offsets({ 1, 2, 3, 4, 5, 6, 7, 8 }), tags = { 1, 2, 1, 2, 1, 2, 1, 2 },
      filter = { 2 }, is_lod = true, want_map = { 0, 1, 2, 2, 6, 4, 6, 15, 6, 12, 28, 8 } },
    -- Case 2: 4 x 36 random, one row per instance, tags 2, 1, 2, 1, filter {1}
    { name = "Case 2", x = R.uniform(4 * 36, 3, 0, 1), D = 36, ins = offsets({ 1, 1, 1, 1 }), tags = { 2, 1, 2, 1 },
      filter = { 1 }, is_lod = true, want_map = { 0, 1, 1, 1, 3, 1 } },
    -- Case 3: filter {3} keeps nothing
    { name = "Case 3", x = R.uniform(4 * 36, 5, 0, 1), D = 36, ins = offsets({ 1, 1, 1, 1 }), tags = { 2, 1, 2, 1 },
      filter = { 3 }, is_lod = true, want_map = { 0, 1, 1 } },
    -- Case 4: Ins without LoD (is_lod false), nothing kept
    { name = "Case 4", x = R.uniform(4 * 36, 7, 0, 1), D = 36, tags = { 2, 1, 2, 1 }, filter = { 3 }, is_lod = false,
      want_map = { 0, 1, 1 } },
    -- more: two tags per instance, several filter tags, is_lod false, out_val_if_empty
    { name = "two tags each, filter {5, 7}, is_lod false", x = R.uniform(3 * 2, 9, 0, 1), D = 2, tags = { 1, 5, 2, 3, 7, 7 },
      tag_lod = { 0, 2, 4, 6 }, filter = { 5, 7 }, is_lod = false, want_map = { 0, 0, 1, 1, 2, 1 } },
  }
  for _, c in ipairs(CASES) do
    local n = #c.x / c.D
    local tag_lod = c.tag_lod or offsets((function() local t = {} for i = 1, #c.tags do t[i] = 1 end return t end)())
    local function inputs(dt)
      return { Ins = T.tensor(c.x, { shape = { n, c.D }, lod = c.ins and { c.ins } or nil, dtype = dt }),
               Ins_tag = T.tensor(c.tags, { shape = { #c.tags, 1 }, lod = { tag_lod }, dtype = "int64" }),
               Filter_tag = T.tensor(c.filter, { shape = { #c.filter }, dtype = "int64" }) }
    end
    it(c.name, function()
      local out, out_lod, map, map_lod, lw = instag_ref(c.x, c.D, c.is_lod and c.ins, c.tags, tag_lod, c.filter)
      assert.are.same(c.want_map, map)   -- the test's IndexMap
      for _, dt in ipairs({ "float64", "float32" }) do
        T.check_output{ type = "filter_by_instag", dtype = dt, attrs = { is_lod = c.is_lod }, inputs = inputs(dt),
                        expect = { Out = { shape = { #out / c.D, c.D }, data = out, lod = { out_lod } },
                                   IndexMap = { shape = { #map / 3, 3 }, data = map, lod = { map_lod } },
                                   LossWeight = { shape = { #lw, 1 }, data = lw, lod = { map_lod } } },
                        atol = 1e-6 }
      end
    end)
    it(c.name .. ": grad", function()
      T.check_grad{ type = "filter_by_instag", attrs = { is_lod = c.is_lod }, inputs = inputs("float64"),
                    wrt = { "Ins" }, of = { "Out" }, no_grad = { "Ins_tag", "Filter_tag" } }
    end)
  end

  it("out_val_if_empty fills the one row (int64 Ins too)", function()
    T.check_output{ type = "filter_by_instag", dtype = "int64", attrs = { is_lod = false, out_val_if_empty = -7 },
                    inputs = { Ins = T.tensor({ 1, 2, 3, 4 }, { shape = { 2, 2 }, dtype = "int64" }),
                               Ins_tag = T.tensor({ 1, 2 }, { shape = { 2, 1 }, lod = { { 0, 1, 2 } }, dtype = "int64" }),
                               Filter_tag = T.tensor({ 9 }, { shape = { 1 }, dtype = "int64" }) },
                    expect = { Out = { shape = { 1, 2 }, data = { -7, -7 } } } }
  end)

  it("refuses Ins rows that do not match the instances", function()
    expect_error(function()
      T.run{ type = "filter_by_instag", attrs = { is_lod = false },
             inputs = { Ins = T.tensor({ 1, 2, 3, 4, 5, 6 }, { shape = { 3, 2 } }),
                        Ins_tag = T.tensor({ 1, 2 }, { shape = { 2, 1 }, lod = { { 0, 1, 2 } }, dtype = "int64" }),
                        Filter_tag = T.tensor({ 1 }, { shape = { 1 }, dtype = "int64" }) } }
    end, "filter_by_instag", "in_Ins", "3 rows", "2 instances")
  end)
end)

describe("oar.layers.filter_by_instag", function()
  local oar = require("oar")
  local A = require("spec.helpers.api")
  local layers = oar.layers

  it("returns Out and LossWeight and runs", function()
    local main, startup, out, lw = A.build(function()
      local ins = layers.data{ name = "ins", shape = { 2 }, lod_level = 1 }
      local tag = layers.data{ name = "tag", shape = { 1 }, dtype = "int64", lod_level = 1 }
      local filt = layers.data{ name = "filt", shape = { 1 }, dtype = "int64", append_batch_size = false }
      return layers.filter_by_instag{ ins = ins, ins_tag = tag, filter_tag = filt, is_lod = true }
    end)
    assert.are.equal("float32", lw.dtype)
    local it_ = oar.Tensor({ { 1, 2 }, { 3, 4 }, { 5, 6 } }, "float32")
    it_:set_lod({ { 0, 1, 3 } })
    local tg = oar.Tensor({ { 4 }, { 8 } }, "int64")
    tg:set_lod({ { 0, 1, 2 } })
    local got = A.run(main, startup, { ins = it_, tag = tg, filt = oar.Tensor({ 8 }, "int64") }, { out, lw })
    assert.are.same({ { 3, 4 }, { 5, 6 } }, got[1]:totable())
    assert.are.same({ { 1 } }, got[2]:totable())
  end)
end)

-- ---- shuffle_batch ------------------------------------------------------------------------
describe("shuffle_batch", function()
  -- test_shuffle_batch_op.py: x [2, 3, 4] (6 rows of 4): Out's rows are X's rows in ShuffleIdx's order
  local x = R.uniform(24, 3, 0, 1)
  local function run(attrs, seed, dt)
    local inputs = { X = T.tensor(x, { shape = { 2, 3, 4 }, dtype = dt }) }
    if seed then inputs.Seed = T.tensor({ seed }, { shape = { 1 }, dtype = "int64" }) end
    return T.run{ type = "shuffle_batch", attrs = attrs, inputs = inputs, dtype = dt }
  end
  local function perm_of(res)
    local idx, seen = res.ShuffleIdx[1].data, {}
    assert.are.equal(6, #idx)
    for _, v in ipairs(idx) do
      assert.is_true(v >= 0 and v < 6 and not seen[v], "ShuffleIdx is a permutation of 0..5")
      seen[v] = true
    end
    return idx
  end

  for _, dt in ipairs({ "float64", "float32", "int64" }) do
    it("Out[i] = X[ShuffleIdx[i]] (" .. dt .. ")", function()
      local res = run({ startup_seed = 7 }, nil, dt)
      local idx = perm_of(res)
      local want = {}
      for i = 1, 6 do for j = 1, 4 do want[#want + 1] = x[idx[i] * 4 + j] end end
      if dt == "int64" then for i, v in ipairs(want) do want[i] = math.floor(v) end end
      T.assert_close(res.Out[1], { shape = { 2, 3, 4 }, data = want }, 1e-6)
    end)
  end

  it("is deterministic under a seed; Seed overrides startup_seed; SeedOut moves on", function()
    local a, b = run({ startup_seed = 11 }), run({ startup_seed = 11 })
    assert.are.same(perm_of(a), perm_of(b))
    local c = run({ startup_seed = 11 }, 11)
    assert.are.same(perm_of(a), perm_of(c))
    local distinct = false
    for s = 12, 20 do
      if table.concat(perm_of(run({ startup_seed = s })), ",") ~= table.concat(perm_of(a), ",") then distinct = true end
    end
    assert.is_true(distinct, "other seeds give other permutations")
    assert.are_not.equal(11, a.SeedOut[1].data[1])
    assert.are.equal(a.SeedOut[1].data[1], b.SeedOut[1].data[1])
  end)

  -- weighted (spec/helpers/sequence_grad.lua): the gradient of a plain mean would not see the permutation
  it("grad puts Out@GRAD's rows back (finite differences under a fixed seed)", function()
    W.check{ type = "shuffle_batch", attrs = { startup_seed = 3 },
                  inputs = { X = T.tensor(R.uniform(12, 5, 0, 1), { shape = { 4, 3 } }) },
                  wrt = { "X" }, of = { "Out" } }
    W.check{ type = "shuffle_batch", attrs = { startup_seed = 3 }, of = { "Out" }, wrt = { "X" },
             inputs = { X = T.tensor(R.uniform(12, 5, 0, 1), { shape = { 4, 3 } }),
                        Seed = T.tensor({ 9 }, { shape = { 1 }, dtype = "int64" }) } }
  end)

  it("refuses a Seed that is not int64", function()
    expect_error(function()
      T.run{ type = "shuffle_batch", inputs = { X = T.tensor(x, { shape = { 6, 4 } }),
                                                Seed = T.tensor({ 1 }, { shape = { 1 }, dtype = "float32" }) } }
    end, "shuffle_batch", "in_Seed", "int64 expected")
  end)
end)

-- ---- rank_attention -------------------------------------------------------------------
-- test_rank_attention_op.py's gen_rank_offset and np_rank_attention, with a fixed LCG in
-- place of numpy's generator
local function gen_rank_offset(pv_nums, max_rank, seed)
  local s = seed
  local function rnd(n) s = (s * 1103515245 + 12345) % 2147483648; return s % n end
  local msgs, total = {}, 0
  for _ = 1, pv_nums do
    local ins_pv = 1 + rnd(max_rank + 1)
    local ranks = {}
    for r = 1, ins_pv do ranks[r] = r end
    for r = ins_pv, 2, -1 do local j = 1 + rnd(r); ranks[r], ranks[j] = ranks[j], ranks[r] end
    msgs[#msgs + 1] = ranks
    total = total + ins_pv
  end
  local cols = 2 * max_rank + 1
  local ro = {}
  for i = 1, total * cols do ro[i] = -1 end
  local index = 0
  for _, pv in ipairs(msgs) do
    local start = index
    for j = 1, #pv do
      local rank = pv[j] <= max_rank and pv[j] or -1
      ro[index * cols + 1] = rank
      if rank > 0 then
        for kk = 1, #pv do
          if pv[kk] <= max_rank then
            local m = pv[kk] - 1
            ro[index * cols + 2 * m + 2] = pv[kk]
            ro[index * cols + 2 * m + 3] = start + kk - 1
          end
        end
      end
      index = index + 1
    end
  end
  return total, ro
end

local function rank_att_ref(x, ro, param, N, xf, yf, mr)
  local cols = 2 * mr + 1
  local help, out, rank = {}, {}, {}
  for i = 0, N - 1 do
    rank[i + 1] = ro[i * cols + 1]
    for q = 0, mr * xf - 1 do help[i * mr * xf + q + 1] = 0 end
    for j = 1, yf do out[i * yf + j] = 0 end
    local lower = ro[i * cols + 1] - 1
    for q = 0, mr - 1 do
      local faster = ro[i * cols + 2 * q + 2] - 1
      if lower >= 0 and faster >= 0 then
        local idx = ro[i * cols + 2 * q + 3]
        for c = 0, xf - 1 do
          local v = x[idx * xf + c + 1]
          help[i * mr * xf + q * xf + c + 1] = v
          local prow = (lower * mr + faster) * xf + c
          for j = 1, yf do out[i * yf + j] = out[i * yf + j] + v * param[prow * yf + j] end
        end
      end
    end
  end
  return out, help, rank
end

describe("rank_attention", function()
  local function case(pv, xf, yf, mr, seed, dt)
    local N, ro = gen_rank_offset(pv, mr, seed)
    local x, param = R.uniform(N * xf, seed + 1, 0, 1), R.uniform(mr * mr * xf * yf, seed + 2, 0, 1)
    return N, ro, x, param, { X = T.tensor(x, { shape = { N, xf }, dtype = dt }),
                              RankOffset = T.tensor(ro, { shape = { N, 2 * mr + 1 }, dtype = "int32" }),
                              RankParam = T.tensor(param, { shape = { mr * mr * xf, yf }, dtype = dt }) }
  end

  -- TestRankAttentionOpCpu: pv_num 100, x_feat 10, y_feat 15, max_rank 3
  for _, dt in ipairs({ "float64", "float32" }) do
    it("pv_num 100, x_feat 10, y_feat 15, MaxRank 3 (" .. dt .. ")", function()
      local N, ro, x, param, inputs = case(100, 10, 15, 3, 5, dt)
      local out, help, rank = rank_att_ref(x, ro, param, N, 10, 15, 3)
      T.check_output{ type = "rank_attention", dtype = dt, attrs = { MaxRank = 3 }, inputs = inputs,
                      outputs = { Out = 1, InputHelp = 1, InsRank = 1 },
                      expect = { Out = { shape = { N, 15 }, data = out }, InputHelp = { shape = { N, 30 }, data = help },
                                 InsRank = { shape = { N, 1 }, data = rank } },
                      atol = dt == "float32" and 1e-4 or 1e-10 }
    end)
  end

  it("grad of RankParam (weighted finite differences), MaxRank 2, with and without InputHelp", function()
    local _, _, _, _, inputs = case(4, 3, 2, 2, 9, "float64")
    W.check{ type = "rank_attention", attrs = { MaxRank = 2 }, inputs = inputs, wrt = { "RankParam" }, of = { "Out" } }
    W.check{ type = "rank_attention", attrs = { MaxRank = 2 }, inputs = inputs, wrt = { "RankParam" }, of = { "Out" },
             outputs = { Out = 1, InputHelp = 1, InsRank = 1 } }
  end)

  it("without InputHelp and InsRank (dispensable, as Paddle's) Out is the same", function()
    local N, ro, x, param, inputs = case(6, 3, 2, 2, 21, "float64")
    local out = rank_att_ref(x, ro, param, N, 3, 2, 2)
    local res = T.check_output{ type = "rank_attention", attrs = { MaxRank = 2 }, inputs = inputs, outputs = { Out = 1 },
                                expect = { Out = { shape = { N, 2 }, data = out } }, atol = 1e-12 }
    assert.is_nil(res.InputHelp)
  end)

  it("refuses a rank past MaxRank", function()
    local N, ro, _, _, inputs = case(3, 2, 2, 2, 13, "float64")
    ro[1] = 3
    inputs.RankOffset = T.tensor(ro, { shape = { N, 5 }, dtype = "int32" })
    expect_error(function() T.run{ type = "rank_attention", attrs = { MaxRank = 2 }, inputs = inputs } end,
      "rank_attention", "RankOffset[0, 0] is 3", "MaxRank 2")
  end)
end)
