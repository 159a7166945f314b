-- layers.warpctc, layers.ctc_greedy_decoder, layers.edit_distance and
-- oar.metrics.EditDistance: the ops they append (as Fluid builds them),
-- hand-worked decodes and distances, unknown keys refused, and a tiny model
-- (fc -> warpctc on synthetic sequences, SGD) whose loss falls.
local oar = require("oar")
local A = require("spec.helpers.api")
local layers = oar.layers
local build, run, errmsg = A.build, A.run, A.errmsg

local function lod_tensor(rows, lod, dtype)
  local t = oar.Tensor(rows, dtype)
  t:set_lod(lod)
  return t
end

local function types(main)
  local out = {}
  for _, op in ipairs(main:global_block():ops()) do out[#out + 1] = op.type end
  return table.concat(out, " ")
end

describe("layers.ctc_greedy_decoder", function()
  it("takes the best class per step, merges repeats and drops blanks (top_k then ctc_align)", function()
    -- steps' best classes: seq 1: 1 1 0 2 2 ; seq 2: 0 3 3 (blank 0)
    local probs = {
      { 0.1, 0.8, 0.05, 0.05 }, { 0.2, 0.6, 0.1, 0.1 }, { 0.7, 0.1, 0.1, 0.1 }, { 0.1, 0.1, 0.7, 0.1 },
      { 0.1, 0.1, 0.5, 0.3 },
      { 0.9, 0.0, 0.05, 0.05 }, { 0.1, 0.1, 0.1, 0.7 }, { 0.1, 0.2, 0.1, 0.6 },
    }
    local main, startup, out = build(function()
      local x = layers.data{ name = "x", shape = { 4 }, lod_level = 1 }
      return layers.ctc_greedy_decoder{ input = x, blank = 0 }
    end)
    assert.equal("top_k ctc_align", types(main))
    local res = run(main, startup, { x = lod_tensor(probs, { { 0, 5, 8 } }, "float32") }, { out })
    assert.same({ { 1 }, { 2 }, { 3 } }, res[1]:totable())
    assert.same({ { 0, 2, 3 } }, res[1]:lod())
  end)

  it("decodes the padded form with input_length and padding_value", function()
    local main, startup, out, len = build(function()
      local x = layers.data{ name = "x", shape = { 3, 3 } }   -- [B, T, C]
      local l = layers.data{ name = "l", shape = { 1 }, dtype = "int64" }
      return layers.ctc_greedy_decoder{ input = x, blank = 2, input_length = l, padding_value = -1 }
    end)
    local x = { { { 0.9, 0, 0.1 }, { 0.8, 0.1, 0.1 }, { 0, 0.1, 0.9 } },
                { { 0, 0.9, 0.1 }, { 0, 0.1, 0.9 }, { 0, 0.9, 0.1 } } }
    local res = run(main, startup, { x = x, l = { { 3 }, { 2 } } }, { out, len })
    assert.same({ { 0, -1, -1 }, { 1, -1, -1 } }, res[1]:totable())
    assert.same({ { 1 }, { 1 } }, res[2]:totable())
  end)

  it("refuses unknown keys and a missing blank", function()
    build(function()
      local x = layers.data{ name = "x", shape = { 4 }, lod_level = 1 }
      assert.truthy(errmsg(layers.ctc_greedy_decoder, { input = x, blank = 0, blnk = 1 }):find("blnk", 1, true))
      assert.truthy(errmsg(layers.ctc_greedy_decoder, { input = x }):find("blank", 1, true))
    end)
  end)
end)

describe("layers.edit_distance and metrics.EditDistance", function()
  it("gives the distances and the sequence count; ignored_tokens erase first", function()
    local main, startup, d, n, d2 = build(function()
      local h = layers.data{ name = "h", shape = { 1 }, dtype = "int64", lod_level = 1 }
      local r = layers.data{ name = "r", shape = { 1 }, dtype = "int64", lod_level = 1 }
      local dist, num = layers.edit_distance{ input = h, label = r }
      local dist2 = layers.edit_distance{ input = h, label = r, normalized = false, ignored_tokens = { 9 } }
      return dist, num, dist2
    end)
    assert.equal("edit_distance sequence_erase sequence_erase edit_distance", types(main))
    -- "kitten" -> "sitting" = 3 (normalized 3/7); {1, 9, 2} vs {1, 2} = 1, 0 without 9
    local h = lod_tensor({ { 11 }, { 9 }, { 20 }, { 20 }, { 5 }, { 14 }, { 1 }, { 9 }, { 2 } }, { { 0, 6, 9 } }, "int64")
    local r = lod_tensor({ { 19 }, { 9 }, { 20 }, { 20 }, { 9 }, { 14 }, { 7 }, { 1 }, { 2 } }, { { 0, 7, 9 } }, "int64")
    local res = run(main, startup, { h = h, r = r }, { d, n, d2 })
    A.near({ { 3 / 7 }, { 1 / 2 } }, res[1]:totable())
    assert.same({ 2 }, res[2]:totable())
    -- with 9 erased: "k t t e n" vs "s t t n g" ... worked by the op's own Levenshtein:
    -- {11,20,20,5,14} vs {19,20,20,14,7} = 3; {1,2} vs {1,2} = 0
    A.near({ { 3 }, { 0 } }, res[3]:totable())
    local m = oar.metrics.EditDistance("ed")
    m:update(res[3], res[2])
    m:update({ 0, 2 }, 2)
    local avg, err = m:eval()
    assert.near(5 / 4, avg, 1e-12)
    assert.near(2 / 4, err, 1e-12)
    m:reset()
    assert.truthy(errmsg(function() m:eval() end):find("no data", 1, true))
  end)

  it("refuses unknown keys and a length without its pair", function()
    build(function()
      local h = layers.data{ name = "h", shape = { 1 }, dtype = "int64", lod_level = 1 }
      assert.truthy(errmsg(layers.edit_distance, { input = h, label = h, normalise = true }):find("normalise", 1, true))
      local l = layers.data{ name = "l", shape = { 1 }, dtype = "int64" }
      assert.truthy(errmsg(layers.edit_distance, { input = h, label = h, input_length = l }):find("label_length", 1, true))
    end)
  end)
end)

describe("layers.warpctc", function()
  it("appends warpctc with Fluid's slots and attributes; unknown keys refused", function()
    local main = build(function()
      local x = layers.data{ name = "x", shape = { 5 }, lod_level = 1 }
      local y = layers.data{ name = "y", shape = { 1 }, dtype = "int32", lod_level = 1 }
      layers.warpctc{ input = x, label = y, blank = 4, norm_by_times = true }
      assert.truthy(errmsg(layers.warpctc, { input = x, label = y, blnk = 1 }):find("blnk", 1, true))
    end)
    local op = main:global_block():ops()[1]
    assert.equal("warpctc", op.type)
    assert.equal(4, op:attr("blank"))
    assert.is_true(op:attr("norm_by_times"))
  end)

  it("trains: fc -> warpctc on synthetic sequences with SGD, the loss falls", function()
    -- class c's step feature is a one-hot at c (plus noise); labels are the
    -- distinct classes of the steps, so a linear map can learn them
    local C, D = 4, 6   -- classes with blank 0; feature width
    local state = 12345
    local function rnd()
      state = (state * 1103515245 + 12345) % 2147483648
      return state / 2147483648
    end
    local rows, labs, xo, yo = {}, {}, { 0 }, { 0 }
    for s = 1, 6 do
      local T_ = 4 + s % 3
      local prev
      local lab = {}
      for _ = 1, T_ do
        local c = math.floor(rnd() * C)
        local f = {}
        for j = 1, D do f[j] = (rnd() - 0.5) * 0.2 end
        f[c + 1] = f[c + 1] + 1
        rows[#rows + 1] = f
        if c ~= 0 and c ~= prev then lab[#lab + 1] = c end
        prev = c
      end
      if #lab == 0 then lab[1] = 1 end
      for _, l in ipairs(lab) do labs[#labs + 1] = { l } end
      xo[#xo + 1] = #rows
      yo[#yo + 1] = #labs
    end
    local main, startup, loss = build(function()
      local x = layers.data{ name = "x", shape = { D }, lod_level = 1 }
      local y = layers.data{ name = "y", shape = { 1 }, dtype = "int32", lod_level = 1 }
      local logits = layers.fc{ input = x, size = C }
      local l = layers.mean(layers.warpctc{ input = logits, label = y, blank = 0 })
      oar.optimizer.SGD{ learning_rate = 0.5 }:minimize(l)
      return l
    end)
    local exe, scope = oar.Executor(oar.CPUPlace()), oar.Scope()
    exe:run(startup, { scope = scope })
    local feed = { x = lod_tensor(rows, { xo }, "float32"), y = lod_tensor(labs, { yo }, "int32") }
    local first, last
    for i = 1, 60 do
      local v = exe:run(main, { feed = feed, fetch_list = { loss }, scope = scope })[1]:totable()[1]
      if i == 1 then first = v end
      last = v
    end
    assert.is_true(last < first * 0.5, ("loss %g -> %g"):format(first, last))
  end)
end)
