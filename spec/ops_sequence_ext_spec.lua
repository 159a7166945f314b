-- sequence_mask, sequence_reverse, sequence_expand_as, sequence_pad,
-- sequence_unpad, sequence_concat, sequence_slice, sequence_enumerate,
-- sequence_reshape, sequence_scatter (issue 22): ports of Fluid 1.8's
-- unittests/sequence/test_<op>.py cases with references re-computed in plain
-- Lua over the LoD offsets, weighted float64 finite-difference gradients
-- (spec/helpers/sequence_grad.lua), and errors naming the op and variable.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")
local W = require("spec.helpers.sequence_grad")
local expect_error = require("spec.helpers.expect_error")

local function rand(n, seed) return R.symmetric(n, seed, 2) end
local offsets = require("spec.helpers.index").offsets
local numel = require("spec.helpers.index").numel

-- ---- sequence_mask -------------------------------------------------------------------
local function mask_ref(x, maxlen)
  local out = {}
  for _, v in ipairs(x) do
    for j = 0, maxlen - 1 do out[#out + 1] = j < v and 1 or 0 end
  end
  return out
end

describe("sequence_mask", function()
  -- test_sequence_mask.py: x [[0, 3, 4], [5, 7, 9]], maxlen 10, each out dtype
  local x = { 0, 3, 4, 5, 7, 9 }
  for _, c in ipairs({ { "int64", 3 }, { "int32", 2 }, { "float32", 5 }, { "float64", 6 }, { "bool", 0 } }) do
    for _, xdt in ipairs({ "int64", "int32", "float64" }) do
      it(("X %s, out_dtype %s, maxlen 10"):format(xdt, c[1]), function()
        local want = mask_ref(x, 10)
        if c[1] == "bool" then for i, v in ipairs(want) do want[i] = v == 1 end end
        local res = T.check_output{
          type = "sequence_mask", attrs = { maxlen = 10, out_dtype = c[2] },
          inputs = { X = T.tensor(x, { shape = { 2, 3 }, dtype = xdt }) },
          expect = { Y = { shape = { 2, 3, 10 }, data = want } },
        }
        assert.are.equal(c[1], res.Y[1].dtype)
      end)
    end
  end

  it("maxlen -1 takes the largest length", function()
    T.check_output{
      type = "sequence_mask", attrs = { out_dtype = 3 },
      inputs = { X = T.tensor(x, { shape = { 6 }, dtype = "int64" }) },
      expect = { Y = { shape = { 6, 9 }, data = mask_ref(x, 9) } },
    }
  end)

  it("MaxLenTensor overrides the attribute", function()
    T.check_output{
      type = "sequence_mask", attrs = { maxlen = 2 },
      inputs = { X = T.tensor(x, { shape = { 2, 3 }, dtype = "int64" }),
                 MaxLenTensor = T.tensor({ 6 }, { shape = { 1 }, dtype = "int32" }) },
      expect = { Y = { shape = { 2, 3, 6 }, data = mask_ref(x, 6) } },
    }
  end)

  it("compares float lengths as Fluid does (j < x)", function()
    T.check_output{
      type = "sequence_mask", attrs = { maxlen = 4, out_dtype = 6 },
      inputs = { X = T.tensor({ 2.5, 0.5 }, { shape = { 2 }, dtype = "float64" }) },
      expect = { Y = { shape = { 2, 4 }, data = { 1, 1, 1, 0, 1, 0, 0, 0 } } },
    }
  end)

  it("rejects a bad out_dtype and a bad X dtype", function()
    expect_error(function()
      T.run{ type = "sequence_mask", attrs = { maxlen = 3, out_dtype = 4 },
             inputs = { X = T.tensor({ 1 }, { shape = { 1 }, dtype = "int64" }) } }
    end, "sequence_mask", "out_dtype")
    expect_error(function()
      T.run{ type = "sequence_mask", inputs = { X = T.tensor({ 1 }, { shape = { 1 }, dtype = "bool" }) } }
    end, "sequence_mask", "in_X_1", "dtype")
  end)
end)

-- ---- sequence_reverse ----------------------------------------------------------------
local function reverse_ref(x, w, offs)
  local out = {}
  for s = 1, #offs - 1 do
    local b, e = offs[s], offs[s + 1]
    for r = b, e - 1 do
      local src = b + e - 1 - r
      for j = 1, w do out[r * w + j] = x[src * w + j] end
    end
  end
  return out
end

describe("sequence_reverse", function()
  -- test_sequence_reverse.py: x (18, 4) with lod [[3, 5, 10]], [[0, 6, 12]] and [[12, 0, 6]]
  for _, lens in ipairs({ { 3, 5, 10 }, { 0, 6, 12 }, { 12, 0, 6 } }) do
    local offs = offsets(lens)
    for _, dtype in ipairs({ "float64", "float32", "int64" }) do
      it(("lengths %s (%s)"):format(table.concat(lens, ","), dtype), function()
        local x = dtype == "int64" and {} or rand(18 * 4, 3)
        if dtype == "int64" then for i = 1, 72 do x[i] = i end end
        T.check_output{
          type = "sequence_reverse", dtype = dtype,
          inputs = { X = T.tensor(x, { shape = { 18, 4 }, lod = { offs }, dtype = dtype }) },
          expect = { Y = { shape = { 18, 4 }, data = reverse_ref(x, 4, offs), lod = { offs } } },
          atol = 1e-6,
        }
      end)
    end
    it("grad, lengths " .. table.concat(lens, ","), function()
      W.check{ type = "sequence_reverse", of = { "Y" },
               inputs = { X = T.tensor(rand(18 * 4, 5), { shape = { 18, 4 }, lod = { offs } }) }, wrt = { "X" } }
    end)
  end

  it("refuses an input without LoD or with two levels", function()
    expect_error(function()
      T.run{ type = "sequence_reverse", inputs = { X = T.tensor(rand(4, 1), { shape = { 2, 2 } }) } }
    end, "sequence_reverse", "in_X_1", "no LoD")
    expect_error(function()
      T.run{ type = "sequence_reverse",
             inputs = { X = T.tensor(rand(4, 1), { shape = { 2, 2 }, lod = { { 0, 1 }, { 0, 2 } } }) } }
    end, "sequence_reverse", "in_X_1", "2 LoD levels")
  end)
end)

-- ---- sequence_expand_as --------------------------------------------------------------
local function expand_as_ref(x, w, offs)
  local out = {}
  for s = 1, #offs - 1 do
    for _ = offs[s], offs[s + 1] - 1 do
      for j = 1, w do out[#out + 1] = x[(s - 1) * w + j] end
    end
  end
  return out
end

describe("sequence_expand_as", function()
  -- test_sequence_expand_as.py: x (3, 40) by y lod [[1, 3, 4]]; x (5, 20) by [[2, 2, 0, 3, 3]]
  for _, c in ipairs({ { rows = 3, w = 40, lens = { 1, 3, 4 } }, { rows = 5, w = 20, lens = { 2, 2, 0, 3, 3 } } }) do
    local offs = offsets(c.lens)
    local name = ("x [%d, %d], y lengths %s"):format(c.rows, c.w, table.concat(c.lens, ","))
    it(name, function()
      local x = rand(c.rows * c.w, 7)
      local yrows = offs[#offs]
      T.check_output{
        type = "sequence_expand_as",
        inputs = { X = T.tensor(x, { shape = { c.rows, c.w } }),
                   Y = T.tensor(rand(yrows, 8), { shape = { yrows, 1 }, lod = { offs } }) },
        expect = { Out = { shape = { yrows, c.w }, data = expand_as_ref(x, c.w, offs), lod = { offs } } },
      }
    end)
    it("grad, " .. name, function()
      local yrows = offs[#offs]
      W.check{ type = "sequence_expand_as",
               inputs = { X = T.tensor(rand(c.rows * 3, 9), { shape = { c.rows, 3 } }),
                          Y = T.tensor(rand(yrows, 8), { shape = { yrows, 1 }, lod = { offs } }) },
               wrt = { "X" } }
    end)
  end

  it("int64 values", function()
    T.check_output{
      type = "sequence_expand_as", dtype = "int64",
      inputs = { X = T.tensor({ 1, 2 }, { shape = { 2, 1 }, dtype = "int64" }),
                 Y = T.tensor(rand(3, 1), { shape = { 3, 1 }, lod = { { 0, 1, 3 } }, dtype = "float64" }) },
      expect = { Out = { shape = { 3, 1 }, data = { 1, 2, 2 } } },
    }
  end)

  it("refuses X rows that do not match Y's sequences", function()
    expect_error(function()
      T.run{ type = "sequence_expand_as",
             inputs = { X = T.tensor(rand(4, 1), { shape = { 2, 2 } }),
                        Y = T.tensor(rand(3, 1), { shape = { 3, 1 }, lod = { { 0, 1, 2, 3 } } }) } }
    end, "sequence_expand_as", "in_X_1", "in_Y_1", "3 sequences")
  end)
end)

-- ---- sequence_pad / sequence_unpad ---------------------------------------------------
local function pad_ref(x, w, offs, L, pad)
  local out, len = {}, {}
  for s = 1, #offs - 1 do
    local b, e = offs[s], offs[s + 1]
    len[s] = e - b
    for r = 0, L - 1 do
      for j = 1, w do
        out[#out + 1] = r < e - b and x[(b + r) * w + j] or (#pad == 1 and pad[1] or pad[j])
      end
    end
  end
  return out, len
end

describe("sequence_pad", function()
  -- test_sequence_pad.py: x (12, 10) lod [[2, 3, 4, 3]]; PadValue [1] or a row; padded_length -1 or 7;
  -- x (12, 2, 2); and float32
  for _, c in ipairs({
    { shape = { 12, 10 }, pad = { 1 }, L = -1 },
    { shape = { 12, 10 }, pad = "row", L = -1 },
    { shape = { 12, 10 }, pad = { 1 }, L = 7 },
    { shape = { 12, 2, 2 }, pad = "row", L = 7 },
  }) do
    local offs = offsets({ 2, 3, 4, 3 })
    local w = numel(c.shape) / 12
    local name = ("x [%s], PadValue %s, padded_length %d"):format(table.concat(c.shape, ","),
      c.pad == "row" and "a row" or "[1]", c.L)
    for _, dtype in ipairs({ "float64", "float32" }) do
      it(name .. " (" .. dtype .. ")", function()
        local x = rand(12 * w, 11)
        local pad, pshape = { 0.5 }, { 1 }
        if c.pad == "row" then
          pad = rand(w, 12)
          pshape = { table.unpack(c.shape, 2) }
        end
        local L = c.L == -1 and 4 or c.L
        local want, len = pad_ref(x, w, offs, L, pad)
        local oshape = { 4, L, table.unpack(c.shape, 2) }
        local res = T.check_output{
          type = "sequence_pad", dtype = dtype, attrs = { padded_length = c.L },
          inputs = { X = T.tensor(x, { shape = c.shape, lod = { offs }, dtype = dtype }),
                     PadValue = T.tensor(pad, { shape = pshape, dtype = dtype }) },
          expect = { Out = { shape = oshape, data = want }, Length = { shape = { 4 }, data = len } },
          atol = 1e-6,
        }
        assert.are.equal("int64", res.Length[1].dtype)
      end)
    end
    it("grad, " .. name, function()
      local pad, pshape = { 0.5 }, { 1 }
      if c.pad == "row" then pad, pshape = rand(w, 12), { table.unpack(c.shape, 2) } end
      W.check{ type = "sequence_pad", attrs = { padded_length = c.L }, outputs = { Out = 1, Length = 1 },
               inputs = { X = T.tensor(rand(12 * w, 13), { shape = c.shape, lod = { offs } }),
                          PadValue = T.tensor(pad, { shape = pshape }) },
               wrt = { "X" } }
    end)
  end

  it("refuses a padded_length shorter than a sequence, and a missing LoD", function()
    expect_error(function()
      T.run{ type = "sequence_pad", attrs = { padded_length = 2 },
             inputs = { X = T.tensor(rand(8, 1), { shape = { 4, 2 }, lod = { { 0, 3, 4 } } }),
                        PadValue = T.tensor({ 0 }, { shape = { 1 } }) } }
    end, "sequence_pad", "padded_length 2", "in_X_1")
    expect_error(function()
      T.run{ type = "sequence_pad", inputs = { X = T.tensor(rand(8, 1), { shape = { 4, 2 } }),
                                               PadValue = T.tensor({ 0 }, { shape = { 1 } }) } }
    end, "sequence_pad", "in_X_1", "no LoD")
    expect_error(function()
      T.run{ type = "sequence_pad", inputs = { X = T.tensor(rand(8, 1), { shape = { 4, 2 }, lod = { { 0, 4 } } }),
                                               PadValue = T.tensor({ 0 }, { shape = { 1 }, dtype = "float32" }) } }
    end, "sequence_pad", "in_PadValue_1", "dtype")
  end)
end)

describe("sequence_unpad", function()
  -- test_sequence_unpad.py: length [2, 3, 4] of x (3, 5, 4); [0, 4, 3] of x (3, 5); [1, 0, 2] of x (3, 4, 2, 2)
  for _, c in ipairs({ { len = { 2, 3, 4 }, shape = { 3, 5, 4 } }, { len = { 0, 4, 3 }, shape = { 3, 5 } },
                       { len = { 1, 0, 2 }, shape = { 3, 4, 2, 2 } } }) do
    local L, w = c.shape[2], numel(c.shape) / (c.shape[1] * c.shape[2])
    local name = ("lengths %s of x [%s]"):format(table.concat(c.len, ","), table.concat(c.shape, ","))
    for _, dtype in ipairs({ "float64", "int64" }) do
      it(name .. " (" .. dtype .. ")", function()
        local x = {}
        for i = 1, numel(c.shape) do x[i] = i end
        local want, offs = {}, offsets(c.len)
        for s = 1, 3 do
          for r = 0, c.len[s] - 1 do
            for j = 1, w do want[#want + 1] = x[((s - 1) * L + r) * w + j] end
          end
        end
        local oshape = { offs[4], table.unpack(c.shape, 3) }
        T.check_output{
          type = "sequence_unpad", dtype = dtype,
          inputs = { X = T.tensor(x, { shape = c.shape, dtype = dtype }),
                     Length = T.tensor(c.len, { shape = { 3 }, dtype = "int64" }) },
          expect = { Out = { shape = oshape, data = want, lod = { offs } } },
        }
      end)
    end
    it("grad, " .. name, function()
      W.check{ type = "sequence_unpad",
               inputs = { X = T.tensor(rand(numel(c.shape), 15), { shape = c.shape }),
                          Length = T.tensor(c.len, { shape = { 3 }, dtype = "int64" }) },
               wrt = { "X" } }
    end)
  end

  it("refuses a length past the padding", function()
    expect_error(function()
      T.run{ type = "sequence_unpad", inputs = { X = T.tensor(rand(6, 1), { shape = { 2, 3 } }),
                                                 Length = T.tensor({ 1, 4 }, { shape = { 2 }, dtype = "int64" }) } }
    end, "sequence_unpad", "Length[1] = 4")
    expect_error(function()
      T.run{ type = "sequence_unpad", inputs = { X = T.tensor(rand(6, 1), { shape = { 2, 3 } }),
                                                 Length = T.tensor({ 1, 2 }, { shape = { 2 }, dtype = "int32" }) } }
    end, "sequence_unpad", "in_Length_1", "int64")
  end)

  it("undoes sequence_pad", function()
    local x, offs = rand(7 * 3, 17), { 0, 2, 2, 7 }
    local p = T.run{ type = "sequence_pad", attrs = { padded_length = 6 },
                     inputs = { X = T.tensor(x, { shape = { 7, 3 }, lod = { offs } }),
                                PadValue = T.tensor({ 9 }, { shape = { 1 } }) } }
    T.check_output{
      type = "sequence_unpad",
      inputs = { X = T.tensor(p.Out[1].data, { shape = p.Out[1].shape }),
                 Length = T.tensor(p.Length[1].data, { shape = { 3 }, dtype = "int64" }) },
      expect = { Out = { shape = { 7, 3 }, data = x, lod = { offs } } },
    }
  end)
end)

-- ---- sequence_concat -----------------------------------------------------------------
describe("sequence_concat", function()
  -- test_sequence_concat.py: x1 (20, 80) lod [[9, 11]], x2 (20, 80) lod [[7, 13]], x3 [[5, 15]]
  -- (widths reduced), and empty sequences ([[0, 20]], [[10, 10]])
  local function concat_ref(xs, w)
    local out, offs = {}, { 0 }
    local nseq = #xs[1].lod[1] - 1
    for s = 1, nseq do
      for _, x in ipairs(xs) do
        local o = x.lod[1]
        for r = o[s], o[s + 1] - 1 do
          for j = 1, w do out[#out + 1] = x.data[r * w + j] end
        end
      end
      offs[s + 1] = #out / w
    end
    return out, offs
  end
  for _, lods in ipairs({ { { 9, 11 }, { 7, 13 }, { 5, 15 } }, { { 0, 20 }, { 10, 10 } } }) do
    local name = "lengths " .. table.concat((function()
      local t = {}
      for _, l in ipairs(lods) do t[#t + 1] = "[" .. table.concat(l, ",") .. "]" end
      return t
    end)(), " ")
    for _, dtype in ipairs({ "float64", "int64" }) do
      it(name .. " (" .. dtype .. ")", function()
        local xs = {}
        for k, l in ipairs(lods) do
          local d = rand(20 * 4, 20 + k)
          if dtype == "int64" then for i = 1, #d do d[i] = math.floor(d[i] * 100) end end
          xs[k] = T.tensor(d, { shape = { 20, 4 }, lod = { offsets(l) }, dtype = dtype })
        end
        local want, offs = concat_ref(xs, 4)
        T.check_output{ type = "sequence_concat", dtype = dtype, inputs = { X = xs },
                        expect = { Out = { shape = { 20 * #lods, 4 }, data = want, lod = { offs } } } }
      end)
    end
    it("grad, " .. name, function()
      local xs = {}
      for k, l in ipairs(lods) do
        xs[k] = T.tensor(rand(20 * 2, 30 + k), { shape = { 20, 2 }, lod = { offsets(l) } })
      end
      T.check_grad{ type = "sequence_concat", inputs = { X = xs }, wrt = { "X" }, delta = 1e-4, max_rel = 1e-5 }
    end)
  end

  it("grad op sends each row back to its input", function()
    local g = {}
    for i = 1, 5 do g[i] = i * 10 end
    -- Out = [a0 a1 | b0] [a2 | b1]: rows a0 a1 b0 a2 b1
    local res = T.run{ type = "sequence_concat_grad", outputs = { ["X@GRAD"] = 2 },
                       inputs = { X = { T.tensor(rand(3, 1), { shape = { 3, 1 }, lod = { { 0, 2, 3 } } }),
                                        T.tensor(rand(2, 2), { shape = { 2, 1 }, lod = { { 0, 1, 2 } } }) },
                                  ["Out@GRAD"] = T.tensor(g, { shape = { 5, 1 } }) } }
    assert.are.same({ 10, 20, 40 }, res["X@GRAD"][1].data)
    assert.are.same({ 30, 50 }, res["X@GRAD"][2].data)
  end)

  it("refuses inputs with different sequence counts or row shapes", function()
    expect_error(function()
      T.run{ type = "sequence_concat", inputs = { X = {
        T.tensor(rand(4, 1), { shape = { 2, 2 }, lod = { { 0, 1, 2 } } }),
        T.tensor(rand(4, 2), { shape = { 2, 2 }, lod = { { 0, 2 } } }) } } }
    end, "sequence_concat", "in_X_2", "1 sequences")
    expect_error(function()
      T.run{ type = "sequence_concat", inputs = { X = {
        T.tensor(rand(4, 1), { shape = { 2, 2 }, lod = { { 0, 2 } } }),
        T.tensor(rand(3, 2), { shape = { 1, 3 }, lod = { { 0, 1 } } }) } } }
    end, "sequence_concat", "in_X_2", "row shapes")
  end)
end)

-- ---- sequence_slice ------------------------------------------------------------------
describe("sequence_slice", function()
  -- test_sequence_slice_op.py: x (100, 3, 2) lod [[20, 20, 20, 20, 20]], offset [1..5], length [10, 8, 6, 4, 2];
  -- and offsets/lengths with a zero length
  for _, c in ipairs({ { off = { 1, 2, 3, 4, 5 }, len = { 10, 8, 6, 4, 2 } },
                       { off = { 0, 19, 3, 4, 5 }, len = { 20, 0, 6, 0, 15 } } }) do
    local offs = offsets({ 20, 20, 20, 20, 20 })
    local name = ("offset %s length %s"):format(table.concat(c.off, ","), table.concat(c.len, ","))
    local function ref(x)
      local out = {}
      for s = 1, 5 do
        for r = offs[s] + c.off[s], offs[s] + c.off[s] + c.len[s] - 1 do
          for j = 1, 6 do out[#out + 1] = x[r * 6 + j] end
        end
      end
      return out
    end
    for _, dtype in ipairs({ "float64", "float32", "int64" }) do
      it(name .. " (" .. dtype .. ")", function()
        local x = {}
        for i = 1, 600 do x[i] = dtype == "int64" and i or (i % 17) / 4 end
        local oo = offsets(c.len)
        T.check_output{
          type = "sequence_slice", dtype = dtype,
          inputs = { X = T.tensor(x, { shape = { 100, 3, 2 }, lod = { offs }, dtype = dtype }),
                     Offset = T.tensor(c.off, { shape = { 5, 1 }, dtype = "int64" }),
                     Length = T.tensor(c.len, { shape = { 5, 1 }, dtype = "int64" }) },
          expect = { Out = { shape = { oo[6], 3, 2 }, data = ref(x), lod = { oo } } },
        }
      end)
    end
  end

  it("grad", function()
    W.check{ type = "sequence_slice",
             inputs = { X = T.tensor(rand(9 * 2, 41), { shape = { 9, 2 }, lod = { { 0, 4, 4, 9 } } }),
                        Offset = T.tensor({ 1, 0, 2 }, { shape = { 3, 1 }, dtype = "int64" }),
                        Length = T.tensor({ 2, 0, 3 }, { shape = { 3, 1 }, dtype = "int64" }) },
             wrt = { "X" } }
  end)

  it("refuses a slice past a sequence's end and a missing LoD", function()
    expect_error(function()
      T.run{ type = "sequence_slice",
             inputs = { X = T.tensor(rand(4, 1), { shape = { 4, 1 }, lod = { { 0, 2, 4 } } }),
                        Offset = T.tensor({ 1, 1 }, { shape = { 2, 1 }, dtype = "int64" }),
                        Length = T.tensor({ 1, 2 }, { shape = { 2, 1 }, dtype = "int64" }) } }
    end, "sequence_slice", "sequence 1", "Offset 1 and Length 2")
    expect_error(function()
      T.run{ type = "sequence_slice",
             inputs = { X = T.tensor(rand(4, 1), { shape = { 4, 1 } }),
                        Offset = T.tensor({ 1 }, { shape = { 1, 1 }, dtype = "int64" }),
                        Length = T.tensor({ 1 }, { shape = { 1, 1 }, dtype = "int64" }) } }
    end, "sequence_slice", "in_X_1", "no LoD")
  end)
end)

-- ---- sequence_enumerate --------------------------------------------------------------
describe("sequence_enumerate", function()
  -- test_sequence_enumerate_op.py: ids 1..18 with lod [[9, 4, 11, 6]] (offsets), win_size 2, pad_value 0;
  -- win_size 5 pad 2; win_size longer than a sequence
  local x = {}
  for i = 1, 18 do x[i] = i end
  local function ref(offs, win, pad)
    local out = {}
    for s = 1, #offs - 1 do
      for r = offs[s], offs[s + 1] - 1 do
        for j = 0, win - 1 do out[#out + 1] = r + j < offs[s + 1] and x[r + j + 1] or pad end
      end
    end
    return out
  end
  for _, c in ipairs({ { lens = { 9, 4, 5 }, win = 2, pad = 0 }, { lens = { 9, 4, 5 }, win = 5, pad = 2 },
                       { lens = { 2, 0, 16 }, win = 20, pad = -1 } }) do
    for _, dtype in ipairs({ "int64", "int32" }) do
      it(("lengths %s, win_size %d, pad_value %d (%s)"):format(table.concat(c.lens, ","), c.win, c.pad, dtype), function()
        local offs = offsets(c.lens)
        T.check_output{
          type = "sequence_enumerate", dtype = dtype, attrs = { win_size = c.win, pad_value = c.pad },
          inputs = { X = T.tensor(x, { shape = { 18, 1 }, lod = { offs }, dtype = dtype }) },
          expect = { Out = { shape = { 18, c.win }, data = ref(offs, c.win, c.pad), lod = { offs } } },
        }
      end)
    end
  end

  it("refuses float ids and a win_size below 2", function()
    expect_error(function()
      T.run{ type = "sequence_enumerate", attrs = { win_size = 2 },
             inputs = { X = T.tensor({ 1, 2 }, { shape = { 2, 1 }, lod = { { 0, 2 } } }) } }
    end, "sequence_enumerate", "in_X_1", "int32 or int64")
    expect_error(function()
      T.run{ type = "sequence_enumerate", attrs = { win_size = 1 }, dtype = "int64",
             inputs = { X = T.tensor({ 1, 2 }, { shape = { 2, 1 }, lod = { { 0, 2 } }, dtype = "int64" }) } }
    end, "sequence_enumerate", "win_size")
  end)
end)

-- ---- sequence_reshape ----------------------------------------------------------------
describe("sequence_reshape", function()
  -- test_sequence_reshape.py: x (11, 24) lod [[4, 1, 3, 3]] new_dim 12; new_dim 48 with lod [[4, 2, 2, 4]];
  -- x (12, 5) lod [[4, 2, 2, 4]] new_dim 10
  for _, c in ipairs({ { lens = { 4, 1, 3, 3 }, d = 24, nd = 12 }, { lens = { 4, 2, 2, 4 }, d = 24, nd = 48 },
                       { lens = { 4, 2, 2, 4 }, d = 5, nd = 10 } }) do
    local name = ("x [%d, %d] lengths %s, new_dim %d"):format(offsets(c.lens)[#c.lens + 1], c.d, table.concat(c.lens, ","), c.nd)
    local offs = offsets(c.lens)
    local n = offs[#offs]
    local oo = {}
    for i, o in ipairs(offs) do oo[i] = o * c.d / c.nd end
    for _, dtype in ipairs({ "float64", "int64" }) do
      it(name .. " (" .. dtype .. ")", function()
        local x = {}
        for i = 1, n * c.d do x[i] = i end
        T.check_output{
          type = "sequence_reshape", dtype = dtype, attrs = { new_dim = c.nd },
          inputs = { X = T.tensor(x, { shape = { n, c.d }, lod = { offs }, dtype = dtype }) },
          expect = { Out = { shape = { n * c.d / c.nd, c.nd }, data = x, lod = { oo } } },
        }
      end)
    end
    it("grad, " .. name, function()
      W.check{ type = "sequence_reshape", attrs = { new_dim = c.nd },
               inputs = { X = T.tensor(rand(n * c.d, 51), { shape = { n, c.d }, lod = { offs } }) },
               wrt = { "X" } }
    end)
  end

  it("refuses a sequence that does not re-cut evenly", function()
    expect_error(function()
      T.run{ type = "sequence_reshape", attrs = { new_dim = 4 },
             inputs = { X = T.tensor(rand(6, 1), { shape = { 3, 2 }, lod = { { 0, 1, 3 } } }) } }
    end, "sequence_reshape", "in_X_1", "new_dim 4")
  end)
end)

-- ---- sequence_scatter ----------------------------------------------------------------
describe("sequence_scatter", function()
  -- test_sequence_scatter_op.py: x ones (3, 6), ids [[0..5]...] with lod [[3, 5, 4]], updates random
  local ids = { 0, 1, 2, 5, 4, 3, 2, 1, 3, 2, 5, 4 }
  local offs = offsets({ 3, 5, 4 })
  local function ref(x, upd)
    local out = {}
    for i, v in ipairs(x) do out[i] = v end
    for s = 1, 3 do
      for j = offs[s], offs[s + 1] - 1 do
        local q = (s - 1) * 6 + ids[j + 1] + 1
        out[q] = out[q] + upd[j + 1]
      end
    end
    return out
  end
  for _, dtype in ipairs({ "float64", "float32", "int64", "int32" }) do
    for _, idt in ipairs({ "int64", "int32" }) do
      it(("X %s, Ids %s"):format(dtype, idt), function()
        local x, upd = {}, {}
        for i = 1, 18 do x[i] = 1 end
        for i = 1, 12 do upd[i] = dtype:find("int") and i - 6 or (i - 6) / 4 end
        T.check_output{
          type = "sequence_scatter", dtype = dtype,
          inputs = { X = T.tensor(x, { shape = { 3, 6 }, dtype = dtype }),
                     Ids = T.tensor(ids, { shape = { 12, 1 }, lod = { offs }, dtype = idt }),
                     Updates = T.tensor(upd, { shape = { 12, 1 }, lod = { offs }, dtype = dtype }) },
          expect = { Out = { shape = { 3, 6 }, data = ref(x, upd) } },
        }
      end)
    end
  end

  it("grad (X and Updates)", function()
    W.check{ type = "sequence_scatter",
             inputs = { X = T.tensor(rand(18, 61), { shape = { 3, 6 } }),
                        Ids = T.tensor(ids, { shape = { 12, 1 }, lod = { offs }, dtype = "int64" }),
                        Updates = T.tensor(rand(12, 62), { shape = { 12, 1 }, lod = { offs } }) },
             wrt = { "X", "Updates" } }
  end)

  it("refuses an id past the row and Ids without LoD", function()
    expect_error(function()
      T.run{ type = "sequence_scatter",
             inputs = { X = T.tensor(rand(4, 1), { shape = { 2, 2 } }),
                        Ids = T.tensor({ 0, 2 }, { shape = { 2, 1 }, lod = { { 0, 1, 2 } }, dtype = "int64" }),
                        Updates = T.tensor({ 1, 1 }, { shape = { 2, 1 } }) } }
    end, "sequence_scatter", "Ids[1] = 2")
    expect_error(function()
      T.run{ type = "sequence_scatter",
             inputs = { X = T.tensor(rand(4, 1), { shape = { 2, 2 } }),
                        Ids = T.tensor({ 0, 1 }, { shape = { 2, 1 }, dtype = "int64" }),
                        Updates = T.tensor({ 1, 1 }, { shape = { 2, 1 } }) } }
    end, "sequence_scatter", "in_Ids_1", "no LoD")
  end)
end)

-- ---- the oar.layers functions ---------------------------------------------------------
describe("oar.layers sequence_ext layers", function()
  local oar = require("oar")
  local A = require("spec.helpers.api")
  local layers = oar.layers

  local flatten = require("spec.helpers.index").flatten
  local function flat(t) return flatten(t:totable()) end
  local function op_of(prog, typ)
    for _, op in ipairs(prog:global_block():ops()) do if op.type == typ then return op end end
  end

  it("build Fluid's ops with Fluid's attributes and run", function()
    local main, startup, _, outs = A.build(function()
      local x = layers.data{ name = "x", shape = { 2 }, lod_level = 1 }
      local len = layers.data{ name = "len", shape = { 3 }, dtype = "int64", append_batch_size = false }
      local ids = layers.data{ name = "ids", shape = { 1 }, dtype = "int64", lod_level = 1 }
      local zero = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 0 }
      local padded, plen = layers.sequence_pad{ x = x, pad_value = zero, maxlen = 4 }
      return x, {
        mask = layers.sequence_mask{ x = len, maxlen = 5, dtype = "float32" },
        rev = layers.sequence_reverse(x),
        padded = padded, plen = plen,
        unpadded = layers.sequence_unpad{ x = padded, length = plen },
        cat = layers.sequence_concat{ input = { x, x } },
        reshaped = layers.sequence_reshape{ input = x, new_dim = 1 },
        enum = layers.sequence_enumerate{ input = ids, win_size = 2, pad_value = 9 },
      }
    end)
    assert.are.same({ 3, 5 }, outs.mask.shape)
    assert.are.equal(5, op_of(main, "sequence_mask"):attr("out_dtype"))
    assert.are.equal(4, op_of(main, "sequence_pad"):attr("padded_length"))
    assert.are.equal(1, outs.unpadded.lod_level)
    local exe = oar.Executor(oar.CPUPlace())
    local scope = oar.Scope()
    exe:run(startup, { scope = scope })
    local xt = oar.Tensor({ { 1, 2 }, { 3, 4 }, { 5, 6 } }, "float32")
    xt:set_lod({ { 0, 2, 3 } })
    local it_ = oar.Tensor({ { 7 }, { 8 }, { 9 } }, "int64")
    it_:set_lod({ { 0, 2, 3 } })
    local got = exe:run(main, { scope = scope,
      feed = { x = xt, len = oar.Tensor({ 1, 0, 3 }, "int64"), ids = it_ },
      fetch_list = { outs.mask, outs.rev, outs.padded, outs.plen, outs.unpadded, outs.cat, outs.reshaped, outs.enum } })
    assert.are.same({ 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0 }, flat(got[1]))
    assert.are.same({ 3, 4, 1, 2, 5, 6 }, flat(got[2]))
    assert.are.same({ 1, 2, 3, 4, 0, 0, 0, 0, 5, 6, 0, 0, 0, 0, 0, 0 }, flat(got[3]))
    assert.are.same({ 2, 1 }, flat(got[4]))
    assert.are.same({ 1, 2, 3, 4, 5, 6 }, flat(got[5]))
    assert.are.same({ 1, 2, 3, 4, 1, 2, 3, 4, 5, 6, 5, 6 }, flat(got[6]))
    assert.are.same({ 6, 1 }, got[7]:shape())
    assert.are.same({ 7, 8, 8, 9, 9, 9 }, flat(got[8]))
  end)

  it("sequence_expand_as, sequence_slice and sequence_scatter take Fluid's arguments", function()
    local main = A.build(function()
      local x = layers.data{ name = "x", shape = { 4 } }
      local y = layers.data{ name = "y", shape = { 1 }, lod_level = 1 }
      local off = layers.data{ name = "off", shape = { 1 }, dtype = "int64" }
      local ids = layers.data{ name = "ids", shape = { 1 }, dtype = "int64", lod_level = 1 }
      local upd = layers.data{ name = "upd", shape = { 1 }, lod_level = 1 }
      return x, { layers.sequence_expand_as(x, y), layers.sequence_slice(y, off, off),
                  layers.sequence_scatter{ input = x, index = ids, updates = upd } }
    end)
    assert.is_truthy(op_of(main, "sequence_expand_as"))
    assert.is_truthy(op_of(main, "sequence_slice"))
    assert.is_truthy(op_of(main, "sequence_scatter"))
  end)

  it("refuse unknown keys and missing inputs, naming the layer", function()
    A.build(function()
      local x = layers.data{ name = "x", shape = { 2 }, lod_level = 1 }
      local e = A.errmsg(layers.sequence_reverse, { x = x, axis = 1 })
      assert.is_truthy(e:find("layers.sequence_reverse", 1, true) and e:find("axis", 1, true), e)
      e = A.errmsg(layers.sequence_pad, { x = x })
      assert.is_truthy(e:find("sequence_pad", 1, true) and e:find("pad_value", 1, true), e)
      e = A.errmsg(layers.sequence_enumerate, { input = x, win_size = 0 })
      assert.is_truthy(e:find("win_size", 1, true), e)
      return x, {}
    end)
  end)
end)
