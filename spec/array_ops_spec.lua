-- Tensor arrays, LoD rank tables and the ops DynamicRNN/IfElse are built from:
-- write_to_array, read_from_array, lod_array_length, lod_rank_table,
-- max_sequence_len, lod_tensor_to_array, array_to_lod_tensor,
-- shrink_rnn_memory, reorder_lod_tensor_by_rank, split_lod_tensor,
-- merge_lod_tensor; values against plain-Lua reference loops, gradients
-- against finite differences.
local oar = require("oar")
local T = require("spec.helpers.op_test")
local CF = require("spec.helpers.cf_check")
local layers = oar.layers

local expect_error = require("spec.helpers.expect_error")

-- rows of a [n, d] table as a flat list
local function flatten(rows)
  local out = {}
  for _, r in ipairs(rows) do for _, v in ipairs(r) do out[#out + 1] = v end end
  return out
end

-- the rank order of sequences given by offsets: longest first, ties by index
local function rank_order(offs)
  local idx = {}
  for i = 1, #offs - 1 do idx[i] = i end
  table.sort(idx, function(a, b)
    local la, lb = offs[a + 1] - offs[a], offs[b + 1] - offs[b]
    if la ~= lb then return la > lb end
    return a < b
  end)
  return idx
end

-- item t of lod_tensor_to_array, computed here: row t of every sequence
-- longer than t, in rank order
local function ref_item(rows, offs, t)
  local out = {}
  for _, s in ipairs(rank_order(offs)) do
    if offs[s + 1] - offs[s] > t then out[#out + 1] = rows[offs[s] + t + 1] end
  end
  return out
end

local ROWS = { { 1, 2 }, { 3, 4 }, { 5, 6 }, { 7, 8 }, { 9, 10 }, { 11, 12 }, { 13, 14 } }
local OFFS = { 0, 2, 3, 6, 7 }   -- lengths 2, 1, 3, 1: all different but two of length 1

describe("tensor arrays", function()
  it("write, read and count items, growing the array to the index", function()
    local r = CF.build(function()
      local x = layers.data{ name = "x", shape = { 2 }, dtype = "float64", append_batch_size = false }
      local y = layers.data{ name = "y", shape = { 3 }, dtype = "float64", append_batch_size = false }
      local i0 = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 0 }
      local i2 = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 2 }
      local arr = layers.array_write{ x = x, i = i0 }
      layers.array_write{ x = y, i = i2, array = arr }
      return nil, {}, { layers.array_read{ array = arr, i = i0 }, layers.array_read{ array = arr, i = i2 },
                        layers.array_length(arr) }
    end, { no_backward = true })
    local out = CF.run(r, { x = { 1.5, -2 }, y = { 3, 4, 5 } }, r.extra)
    assert.same({ 1.5, -2 }, CF.flat(out[1]))
    assert.same({ 3, 4, 5 }, CF.flat(out[2]))
    assert.same({ 3 }, CF.flat(out[3]))
    assert.equal("int64", out[3]:dtype())
  end)

  it("refuses to read an item that was never written, naming the array", function()
    local r = CF.build(function()
      local x = layers.data{ name = "x", shape = { 2 }, dtype = "float64", append_batch_size = false }
      local i0 = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 0 }
      local i1 = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 1 }
      local arr = layers.array_write{ x = x, i = i0 }
      layers.array_write{ x = x, i = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 3 }, array = arr }
      return nil, {}, { layers.array_read{ array = arr, i = i1 }, arr }
    end, { no_backward = true })
    expect_error(function() CF.run(r, { x = { 1, 2 } }, { r.extra[1] }) end,
      "read_from_array", "item 1", r.extra[2].name, "never written")
  end)

  it("refuses indices that are not integers and arrays that are not arrays", function()
    expect_error(function()
      CF.build(function()
        local x = layers.data{ name = "x", shape = { 2 }, dtype = "float64" }
        layers.array_write{ x = x, i = x }
      end)
    end, "array_write", "'i'")
    expect_error(function()
      CF.build(function()
        local x = layers.data{ name = "x", shape = { 2 }, dtype = "float64" }
        layers.array_read{ array = x, i = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 0 } }
      end)
    end, "array_read", "tensor array")
  end)

  it("gives gradients through writes and reads, summing reads of one item", function()
    local r = CF.build(function()
      local x = layers.data{ name = "x", shape = { 3 }, dtype = "float64", append_batch_size = false }
      local y = layers.data{ name = "y", shape = { 3 }, dtype = "float64", append_batch_size = false }
      x.stop_gradient, y.stop_gradient = false, false
      local i0 = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 0 }
      local i1 = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 1 }
      local arr = layers.array_write{ x = x, i = i0 }
      layers.array_write{ x = y, i = i1, array = arr }
      local a = layers.array_read{ array = arr, i = i1 }
      local b = layers.array_read{ array = arr, i = i1 }
      local c = layers.array_read{ array = arr, i = i0 }
      return layers.mean(a * b) + layers.mean(layers.tanh(c) * a), { x, y }
    end)
    CF.check_grads(r, { x = { 0.3, -0.2, 0.9 }, y = { 1.5, 0.4, -0.7 } })
  end)
end)

describe("LoD rank tables", function()
  local function build_array_program(extra_fn, steps)
    return CF.build(function()
      local x = layers.data{ name = "x", shape = { 2 }, dtype = "float64", lod_level = 1 }
      x.stop_gradient = false
      local tbl = layers.lod_rank_table(x)
      local arr = layers.lod_tensor_to_array(x, tbl)
      local outs = { layers.max_sequence_len(tbl), layers.array_length(arr) }
      for t = 0, (steps or 3) - 1 do
        outs[#outs + 1] = layers.array_read{ array = arr,
          i = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = t } }
      end
      local back = layers.array_to_lod_tensor(arr, tbl)
      outs[#outs + 1] = back
      local loss = extra_fn and extra_fn(x, tbl, arr, outs) or nil
      return loss, loss and { x } or {}, outs
    end, { no_backward = extra_fn == nil })
  end

  it("split sequences of different lengths into steps and join them back", function()
    local r = build_array_program()
    local out = CF.run(r, { x = { data = ROWS, lod = { OFFS } } }, r.extra)
    assert.same({ 3 }, CF.flat(out[1]))
    assert.same({ 3 }, CF.flat(out[2]))
    for t = 0, 2 do
      assert.same(flatten(ref_item(ROWS, OFFS, t)), CF.flat(out[3 + t]), "item " .. t)
    end
    assert.same(flatten(ROWS), CF.flat(out[6]))
    assert.same({ OFFS }, out[6]:lod())
  end)

  it("handle a batch where every sequence has length 1", function()
    local r = build_array_program(nil, 1)
    local rows = { { 1, 2 }, { 3, 4 }, { 5, 6 } }
    local out = CF.run(r, { x = { data = rows, lod = { { 0, 1, 2, 3 } } } }, r.extra)
    assert.same({ 1 }, CF.flat(out[1]))
    assert.same({ 1 }, CF.flat(out[2]))
    assert.same(flatten(rows), CF.flat(out[3]))
    assert.same(flatten(rows), CF.flat(out[4]))
    assert.same({ { 0, 1, 2, 3 } }, out[4]:lod())
  end)

  it("give gradients back to the rows each step came from", function()
    local r = build_array_program(function(x, tbl, arr, outs)
      -- weight each step differently so misplaced rows would show
      local loss = layers.mean(outs[3] * outs[3]) + layers.mean(layers.tanh(outs[4])) * 3
      return loss + layers.mean(outs[6] * layers.scale{ x = outs[6], scale = 0.5 })
    end)
    CF.check_grads(r, { x = { data = { { 0.1, -0.2 }, { 0.3, 0.4 }, { -0.5, 0.6 }, { 0.7, 0.8 }, { 0.9, -1 },
                                       { 1.1, 1.2 }, { -1.3, 0.4 } }, lod = { OFFS } } })
  end)

  it("shrink memories to the sequences still running and pad their gradients with zeros", function()
    local r = CF.build(function()
      local x = layers.data{ name = "x", shape = { 2 }, dtype = "float64", lod_level = 1 }
      local m = layers.data{ name = "m", shape = { 3 }, dtype = "float64" }
      m.stop_gradient = false
      local tbl = layers.lod_rank_table(x)
      local outs = {}
      for t = 0, 3 do
        outs[t + 1] = layers.shrink_memory(m, layers.fill_constant{ shape = { 1 }, dtype = "int64", value = t }, tbl)
      end
      return layers.mean(outs[2] * outs[2]) + layers.mean(outs[1]), { m }, outs
    end)
    local mrows = { { 1, 2, 3 }, { 4, 5, 6 }, { 7, 8, 9 }, { 10, 11, 12 } }
    local feeds = { x = { data = ROWS, lod = { OFFS } }, m = mrows }
    local out = CF.run(r, feeds, r.extra)
    -- lengths 2, 1, 3, 1: step 0 keeps 4 rows, step 1 keeps 2, step 2 keeps 1, step 3 none
    assert.same(flatten(mrows), CF.flat(out[1]))
    assert.same({ 1, 2, 3, 4, 5, 6 }, CF.flat(out[2]))
    assert.same({ 1, 2, 3 }, CF.flat(out[3]))
    assert.same({ 0, 3 }, out[4]:shape())
    local g = CF.check_grads(r, feeds)
    -- rows 3 and 4 only reach the loss through outs[1]
    local gv = CF.flat(g[1])
    for j = 7, 12 do assert.near(1 / 12, gv[j], 1e-12) end
  end)

  it("reorder rows and sequences by rank, with the inverse order for gradients", function()
    local r = CF.build(function()
      local x = layers.data{ name = "x", shape = { 2 }, dtype = "float64", lod_level = 1 }
      local s = layers.data{ name = "s", shape = { 1 }, dtype = "float64" }
      local q = layers.data{ name = "q", shape = { 1 }, dtype = "float64", lod_level = 1 }
      s.stop_gradient, q.stop_gradient = false, false
      local tbl = layers.lod_rank_table(x)
      local rs = layers.reorder_lod_tensor_by_rank(s, tbl)
      local rq = layers.reorder_lod_tensor_by_rank(q, tbl)
      local w = layers.data{ name = "w", shape = { 1 }, dtype = "float64" }
      return layers.mean(rs * w) + layers.mean(layers.tanh(rq)), { s, q }, { rs, rq }
    end)
    local feeds = { x = { data = ROWS, lod = { OFFS } }, s = { { 10 }, { 20 }, { 30 }, { 40 } },
                    q = { data = { { 1 }, { 2 }, { 3 }, { 4 }, { 5 } }, lod = { { 0, 1, 3, 4, 5 } } },
                    w = { { 1 }, { 2 }, { 3 }, { 4 } } }
    local out = CF.run(r, feeds, r.extra)
    -- rank order of lengths {2, 1, 3, 1}: sequence 3, 1, 2, 4
    assert.same({ 30, 10, 20, 40 }, CF.flat(out[1]))
    assert.same({ 4, 1, 2, 3, 5 }, CF.flat(out[2]))
    assert.same({ { 0, 1, 2, 4, 5 } }, out[2]:lod())
    CF.check_grads(r, feeds)
  end)

  it("refuse inputs whose LoD does not match the table", function()
    local r = CF.build(function()
      local x = layers.data{ name = "x", shape = { 2 }, dtype = "float64", lod_level = 1 }
      local y = layers.data{ name = "y", shape = { 2 }, dtype = "float64", lod_level = 1 }
      local tbl = layers.lod_rank_table(x)
      return nil, {}, { layers.array_to_lod_tensor(layers.lod_tensor_to_array(y, tbl), tbl) }
    end, { no_backward = true })
    expect_error(function()
      CF.run(r, { x = { data = ROWS, lod = { OFFS } }, y = { data = { { 1, 2 }, { 3, 4 } }, lod = { { 0, 1, 2 } } } },
        r.extra)
    end, "lod_tensor_to_array", "'y'", "2 sequences", "rank table has 4")
    -- a LoD variable fed without a LoD is refused at the feed, in the user's terms
    expect_error(function()
      CF.run(r, { x = { data = { { 1, 2 } } }, y = { data = { { 1, 2 } } } }, r.extra)
    end, "Executor:run", "feed 'x'", "lod_level=1", "no LoD", "t:set_lod{{0, 2, 5}}")
    -- a variable not declared as a sequence reaches the op, which says what it lacks
    local r0 = CF.build(function()
      local x = layers.data{ name = "x", shape = { 2 }, dtype = "float64" }
      local tbl = layers.lod_rank_table(x)
      return nil, {}, { layers.max_sequence_len(tbl) }
    end, { no_backward = true })
    expect_error(function()
      CF.run(r0, { x = { data = { { 1, 2 } } } }, r0.extra)
    end, "lod_rank_table", "'x'", "0 LoD levels")
  end)
end)

describe("lod_reset", function()
  it("gives the data a LoD from target_lod, from Y's values or from Y's LoD", function()
    local x = T.tensor({ 1, 2, 3, 4, 5, 6 }, { shape = { 3, 2 } })
    T.check_output{ type = "lod_reset", inputs = { X = x }, attrs = { target_lod = { 0, 1, 3 } },
      expect = { Out = { shape = { 3, 2 }, data = { 1, 2, 3, 4, 5, 6 }, lod = { { 0, 1, 3 } } } } }
    T.check_output{ type = "lod_reset", inputs = { X = x, Y = T.tensor({ 0, 2, 3 }, { shape = { 3 }, dtype = "int32" }) },
      expect = { Out = { shape = { 3, 2 }, data = { 1, 2, 3, 4, 5, 6 }, lod = { { 0, 2, 3 } } } } }
    T.check_output{ type = "lod_reset",
      inputs = { X = x, Y = T.tensor({ 9, 9, 9 }, { shape = { 3, 1 }, lod = { { 0, 3 } } }) },
      expect = { Out = { shape = { 3, 2 }, data = { 1, 2, 3, 4, 5, 6 }, lod = { { 0, 3 } } } } }
    T.check_grad{ type = "lod_reset", inputs = { X = x }, attrs = { target_lod = { 0, 1, 3 } }, wrt = { "X" } }
  end)

  it("refuses offsets that do not cover X's rows", function()
    expect_error(function()
      T.run{ type = "lod_reset", inputs = { X = T.tensor({ 1, 2, 3 }, { shape = { 3, 1 } }) },
             attrs = { target_lod = { 0, 2 } } }
    end, "lod_reset", "end at X's 3 rows")
  end)
end)

describe("split_lod_tensor and merge_lod_tensor", function()
  local X = T.tensor({ 1, 2, 3, 4, 5, 6, 7, 8 }, { shape = { 4, 2 } })
  local MASK = T.tensor({ true, false, true, true }, { shape = { 4, 1 }, dtype = "bool" })

  it("split rows by the mask and merge them back in order", function()
    T.check_output{ type = "split_lod_tensor", inputs = { X = X, Mask = MASK },
      expect = { OutTrue = { shape = { 3, 2 }, data = { 1, 2, 5, 6, 7, 8 } },
                 OutFalse = { shape = { 1, 2 }, data = { 3, 4 } } } }
    T.check_output{ type = "merge_lod_tensor",
      inputs = { X = MASK, Mask = MASK, InTrue = T.tensor({ 1, 2, 5, 6, 7, 8 }, { shape = { 3, 2 } }),
                 InFalse = T.tensor({ 3, 4 }, { shape = { 1, 2 } }) },
      expect = { Out = { shape = { 4, 2 }, data = { 1, 2, 3, 4, 5, 6, 7, 8 } } } }
  end)

  it("split whole sequences when the input has a LoD", function()
    local x = T.tensor({ 1, 2, 3, 4, 5, 6 }, { shape = { 6, 1 }, lod = { { 0, 2, 3, 6 } } })
    local m = T.tensor({ false, true, true }, { shape = { 3, 1 }, dtype = "bool" })
    T.check_output{ type = "split_lod_tensor", inputs = { X = x, Mask = m },
      expect = { OutTrue = { shape = { 4, 1 }, data = { 3, 4, 5, 6 }, lod = { { 0, 1, 4 } } },
                 OutFalse = { shape = { 2, 1 }, data = { 1, 2 }, lod = { { 0, 2 } } } } }
    T.check_output{ type = "merge_lod_tensor",
      inputs = { X = m, Mask = m, InTrue = T.tensor({ 3, 4, 5, 6 }, { shape = { 4, 1 }, lod = { { 0, 1, 4 } } }),
                 InFalse = T.tensor({ 1, 2 }, { shape = { 2, 1 }, lod = { { 0, 2 } } }) },
      expect = { Out = { shape = { 6, 1 }, data = { 1, 2, 3, 4, 5, 6 }, lod = { { 0, 2, 3, 6 } } } } }
  end)

  it("give a side no rows when the mask sends none there", function()
    local none = T.tensor({ false, false, false, false }, { shape = { 4, 1 }, dtype = "bool" })
    local r = T.run{ type = "split_lod_tensor", inputs = { X = X, Mask = none } }
    assert.same({ 0, 2 }, r.OutTrue[1].shape)
    assert.same({ 4, 2 }, r.OutFalse[1].shape)
  end)

  it("have gradients", function()
    T.check_grad{ type = "split_lod_tensor", inputs = { X = X, Mask = MASK }, wrt = { "X" },
                  of = { "OutTrue", "OutFalse" } }
    T.check_grad{ type = "merge_lod_tensor",
      inputs = { X = MASK, Mask = MASK, InTrue = T.tensor({ 1, 2, 5, 6, 7, 8 }, { shape = { 3, 2 } }),
                 InFalse = T.tensor({ 3, 4 }, { shape = { 1, 2 } }) },
      wrt = { "InTrue", "InFalse" } }
  end)

  it("refuse a mask that does not have one entry per row", function()
    expect_error(function()
      T.run{ type = "split_lod_tensor", inputs = { X = X, Mask = T.tensor({ true, false }, { shape = { 2, 1 },
        dtype = "bool" }) } }
    end, "split_lod_tensor", "4 rows", "expected 2", "one entry per unit")
    expect_error(function()
      T.run{ type = "merge_lod_tensor", inputs = { X = MASK, Mask = MASK,
        InTrue = T.tensor({ 1, 2 }, { shape = { 1, 2 } }), InFalse = T.tensor({ 3, 4 }, { shape = { 1, 2 } }) } }
    end, "merge_lod_tensor", "InTrue", "1 rows", "expected 3", "true")
  end)
end)
