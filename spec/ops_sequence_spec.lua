-- sequence_pool, sequence_softmax, sequence_expand, sequence_conv: values
-- against plain Lua loops over the LoD, sequences of length 1, batches of
-- different lengths, empty sequences, gradients against central differences
-- (float64), and errors that name the op and the variable.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")
local W = require("spec.helpers.sequence_grad")

local function rand_values(n, seed, scale) return R.symmetric(n, seed, scale or 2) end

local expect_error = require("spec.helpers.expect_error")

-- ---- sequence_pool -------------------------------------------------------------------
-- reference: x flat [rows, w], offs 0-based offsets -> out flat, max index
local function pool_ref(x, w, offs, ptype, pad)
  local out, idx = {}, {}
  for s = 1, #offs - 1 do
    local b, e = offs[s], offs[s + 1]
    local len = e - b
    for j = 1, w do
      local v, mi
      if len == 0 then
        v, mi = pad or 0, -1
      elseif ptype == "LAST" then
        v = x[(e - 1) * w + j]
      elseif ptype == "FIRST" then
        v = x[b * w + j]
      elseif ptype == "MAX" then
        v, mi = -math.huge, -1
        for r = b, e - 1 do
          if x[r * w + j] > v then v, mi = x[r * w + j], r end
        end
      else
        local sum = 0
        for r = b, e - 1 do sum = sum + x[r * w + j] end
        if ptype == "AVERAGE" then v = sum / len
        elseif ptype == "SQRT" then v = sum / math.sqrt(len)
        else v = sum end
      end
      out[#out + 1] = v
      idx[#idx + 1] = mi or -1
    end
  end
  return out, idx
end

local POOLS = { "AVERAGE", "SUM", "SQRT", "MAX", "LAST", "FIRST" }

describe("sequence_pool", function()
  local offs = { 0, 2, 5, 6 }       -- lengths 2, 3, 1
  local w = 3
  for _, ptype in ipairs(POOLS) do
    for _, dtype in ipairs({ "float64", "float32" }) do
      it(("%s over sequences of lengths 2, 3, 1 (%s)"):format(ptype, dtype), function()
        local x = rand_values(6 * w, 3)
        local want, idx = pool_ref(x, w, offs, ptype)
        local res = T.check_output{
          type = "sequence_pool", dtype = dtype, attrs = { pooltype = ptype },
          inputs = { X = T.tensor(x, { shape = { 6, w }, lod = { offs }, dtype = dtype }) },
          outputs = { Out = 1, MaxIndex = 1 },
          expect = { Out = { shape = { 3, w }, data = want } },
          atol = dtype == "float32" and 1e-6 or 1e-12, rtol = 1e-6,
        }
        assert.are.equal(0, #res.Out[1].lod, "Out of a one-level LoD has no LoD")
        if ptype == "MAX" then
          assert.are.same(idx, res.MaxIndex[1].data)
          assert.are.equal("int32", res.MaxIndex[1].dtype)
        end
      end)
    end

    it(ptype .. " gives pad_value for empty sequences", function()
      local x = rand_values(5 * 2, 5)
      local lod = { 0, 2, 2, 5, 5 }
      local want = pool_ref(x, 2, lod, ptype, -7.5)
      T.check_output{
        type = "sequence_pool", attrs = { pooltype = ptype, pad_value = -7.5 },
        inputs = { X = T.tensor(x, { shape = { 5, 2 }, lod = { lod } }) },
        expect = { Out = { shape = { 4, 2 }, data = want } },
      }
    end)

    it(ptype .. " grad (lengths 2, 3, 1)", function()
      T.check_grad{
        type = "sequence_pool", attrs = { pooltype = ptype },
        inputs = { X = T.tensor(rand_values(6 * w, 9), { shape = { 6, w }, lod = { offs } }) },
        outputs = { Out = 1, MaxIndex = 1 }, wrt = { "X" }, of = { "Out" },
      }
      W.check{
        type = "sequence_pool", attrs = { pooltype = ptype },
        inputs = { X = T.tensor(rand_values(6 * w, 10), { shape = { 6, w }, lod = { offs } }) },
        outputs = { Out = 1, MaxIndex = 1 }, wrt = { "X" }, of = { "Out" },
      }
    end)

    it(ptype .. " grad with empty sequences is zero where nothing was pooled", function()
      local res = T.run{
        type = "sequence_pool", attrs = { pooltype = ptype },
        inputs = { X = T.tensor(rand_values(8, 4), { shape = { 4, 2 }, lod = { { 0, 0, 3, 3, 4 } } }) },
      }
      assert.are.same({ 4, 2 }, res.Out[1].shape)
      W.check{
        type = "sequence_pool", attrs = { pooltype = ptype },
        inputs = { X = T.tensor(rand_values(8, 4), { shape = { 4, 2 }, lod = { { 0, 0, 3, 3, 4 } } }) },
        wrt = { "X" }, of = { "Out" },
      }
    end)
  end

  it("MAX grad without MaxIndex finds the maxima in X", function()
    T.check_grad{
      type = "sequence_pool", attrs = { pooltype = "MAX" },
      inputs = { X = T.tensor(rand_values(12, 21), { shape = { 4, 3 }, lod = { { 0, 1, 4 } } }) },
      outputs = { Out = 1 }, wrt = { "X" },
    }
  end)

  it("pools the last level and keeps the levels above as Out's LoD", function()
    local x = rand_values(7, 13)
    local top, inner = { 0, 2, 3 }, { 0, 1, 3, 7 }
    local want = pool_ref(x, 1, inner, "SUM")
    T.check_output{
      type = "sequence_pool", attrs = { pooltype = "SUM" },
      inputs = { X = T.tensor(x, { shape = { 7, 1 }, lod = { top, inner } }) },
      expect = { Out = { shape = { 3, 1 }, data = want, lod = { top } } },
    }
  end)

  it("works on rows of more than two dims", function()
    local x = rand_values(5 * 2 * 3, 17)
    local want = pool_ref(x, 6, { 0, 4, 5 }, "AVERAGE")
    T.check_output{
      type = "sequence_pool", attrs = { pooltype = "AVERAGE" },
      inputs = { X = T.tensor(x, { shape = { 5, 2, 3 }, lod = { { 0, 4, 5 } } }) },
      expect = { Out = { shape = { 2, 2, 3 }, data = want } }, atol = 1e-12,
    }
  end)

  it("rejects an input without LoD, naming the op and the variable", function()
    expect_error(function()
      T.run{ type = "sequence_pool", attrs = { pooltype = "SUM" }, inputs = { X = T.tensor(rand_values(4, 1), { shape = { 2, 2 } }) } }
    end, "sequence_pool", "in_X_1", "no LoD")
  end)

  it("rejects an unknown pooltype", function()
    expect_error(function()
      T.run{ type = "sequence_pool", attrs = { pooltype = "MEDIAN" },
             inputs = { X = T.tensor(rand_values(4, 1), { shape = { 2, 2 }, lod = { { 0, 2 } } }) } }
    end, "sequence_pool", "MEDIAN", "AVERAGE")
  end)
end)

-- ---- sequence_softmax --------------------------------------------------------------
local function seq_softmax_ref(x, offs)
  local out = {}
  for s = 1, #offs - 1 do
    local b, e = offs[s], offs[s + 1]
    local m = -math.huge
    for r = b + 1, e do m = math.max(m, x[r]) end
    local sum = 0
    for r = b + 1, e do sum = sum + math.exp(x[r] - m) end
    for r = b + 1, e do out[r] = math.exp(x[r] - m) / sum end
  end
  return out
end

describe("sequence_softmax", function()
  for _, c in ipairs({
    { name = "[N, 1], lengths 3, 1, 4", shape = { 8, 1 }, lod = { 0, 3, 4, 8 } },
    { name = "[N], lengths 1, 1, 2 and an empty one", shape = { 4 }, lod = { 0, 1, 2, 2, 4 } },
  }) do
    for _, dtype in ipairs({ "float64", "float32" }) do
      it(c.name .. " (" .. dtype .. ")", function()
        local x = rand_values(c.shape[1], 5, 4)
        T.check_output{
          type = "sequence_softmax", dtype = dtype,
          inputs = { X = T.tensor(x, { shape = c.shape, lod = { c.lod }, dtype = dtype }) },
          expect = { Out = { shape = c.shape, data = seq_softmax_ref(x, c.lod), lod = { c.lod } } },
          atol = dtype == "float32" and 1e-6 or 1e-12, rtol = 1e-6,
        }
      end)
    end
    it("grad " .. c.name, function()
      W.check{
        type = "sequence_softmax",
        inputs = { X = T.tensor(rand_values(c.shape[1], 8), { shape = c.shape, lod = { c.lod } }) },
        wrt = { "X" },
      }
    end)
  end

  it("is stable for large inputs", function()
    local x = { 1000, 1001, -1000, 5000 }
    T.check_output{
      type = "sequence_softmax",
      inputs = { X = T.tensor(x, { shape = { 4, 1 }, lod = { { 0, 3, 4 } } }) },
      expect = { Out = { shape = { 4, 1 }, data = seq_softmax_ref(x, { 0, 3, 4 }) } }, atol = 1e-12,
    }
  end)

  it("rejects rows wider than one value and inputs without LoD", function()
    expect_error(function()
      T.run{ type = "sequence_softmax", inputs = { X = T.tensor(rand_values(4, 1), { shape = { 2, 2 }, lod = { { 0, 2 } } }) } }
    end, "sequence_softmax", "[2, 2]", "[N, 1]")
    expect_error(function()
      T.run{ type = "sequence_softmax", inputs = { X = T.tensor(rand_values(2, 1), { shape = { 2, 1 } }) } }
    end, "sequence_softmax", "no LoD")
  end)
end)

-- ---- sequence_expand --------------------------------------------------------------------
-- reference following Fluid's cases: rows of x (width w) with x_lod (or nil)
-- repeated by the lengths of ref
local function expand_ref(x, w, x_lod, ref)
  local out, lod = {}, { 0 }
  for i = 1, #ref - 1 do
    local rep = ref[i + 1] - ref[i]
    local b, e = i - 1, i
    if x_lod then b, e = x_lod[i], x_lod[i + 1] end
    for _ = 1, rep do
      for r = b, e - 1 do
        for j = 1, w do out[#out + 1] = x[r * w + j] end
      end
      lod[#lod + 1] = lod[#lod] + (e - b)
    end
  end
  return out, lod
end

describe("sequence_expand", function()
  it("Fluid case 1: X with LoD, ref_level 0", function()
    local x = { 1, 2, 3, 4 }
    local y = T.tensor(rand_values(8, 1), { shape = { 8, 1 }, lod = { { 0, 2, 4 }, { 0, 3, 6, 7, 8 } } })
    T.check_output{
      type = "sequence_expand", attrs = { ref_level = 0 },
      inputs = { X = T.tensor(x, { shape = { 4, 1 }, lod = { { 0, 2, 4 } } }), Y = y },
      expect = { Out = { shape = { 8, 1 }, data = { 1, 2, 1, 2, 3, 4, 3, 4 }, lod = { { 0, 2, 4, 6, 8 } } } },
    }
  end)

  it("Fluid case 2: sequences of different lengths and a zero repeat", function()
    local y = T.tensor(rand_values(8, 1), { shape = { 8, 1 }, lod = { { 0, 2, 4 }, { 0, 3, 6, 6, 8 } } })
    T.check_output{
      type = "sequence_expand", attrs = { ref_level = 0 },
      inputs = { X = T.tensor({ 1, 2, 3, 4 }, { shape = { 4, 1 }, lod = { { 0, 1, 4 } } }), Y = y },
      expect = { Out = { shape = { 8, 1 }, data = { 1, 1, 2, 3, 4, 2, 3, 4 }, lod = { { 0, 1, 2, 5, 8 } } } },
    }
  end)

  it("Fluid case 3: X without LoD, ref_level -1 (last level); Out has no LoD", function()
    local y = T.tensor(rand_values(6, 1), { shape = { 6, 1 }, lod = { { 0, 2, 3, 6 } } })
    local res = T.check_output{
      type = "sequence_expand",
      inputs = { X = T.tensor({ 1, 2, 3 }, { shape = { 3, 1 } }), Y = y },
      expect = { Out = { shape = { 6, 1 }, data = { 1, 1, 2, 3, 3, 3 } } },
    }
    assert.are.equal(0, #res.Out[1].lod)
  end)

  it("Fluid case 4: wide rows", function()
    local y = T.tensor(rand_values(6, 1), { shape = { 6, 1 }, lod = { { 0, 2, 3, 6 } } })
    T.check_output{
      type = "sequence_expand", attrs = { ref_level = 0 },
      inputs = { X = T.tensor({ 1, 2, 3, 4, 5, 6 }, { shape = { 3, 2 } }), Y = y },
      expect = { Out = { shape = { 6, 2 }, data = { 1, 2, 1, 2, 3, 4, 5, 6, 5, 6, 5, 6 } } },
    }
  end)

  for _, dtype in ipairs({ "float32", "float64", "int64", "int32" }) do
    it("random lengths, every sequence different (" .. dtype .. ")", function()
      local x_lod, ref = { 0, 1, 3, 6, 10 }, { 0, 2, 3, 3, 6 }
      local x = {}
      for i = 1, 10 * 2 do x[i] = i * 3 - 7 end
      local want, lod = expand_ref(x, 2, x_lod, ref)
      T.check_output{
        type = "sequence_expand", dtype = dtype,
        inputs = { X = T.tensor(x, { shape = { 10, 2 }, lod = { x_lod }, dtype = dtype }),
                   Y = T.tensor(rand_values(6, 2), { shape = { 6, 1 }, lod = { ref }, dtype = "float32" }) },
        expect = { Out = { shape = { #want / 2, 2 }, data = want, lod = { lod } } },
      }
    end)
  end

  it("copies X when Y's level has no sequences", function()
    T.check_output{
      type = "sequence_expand",
      inputs = { X = T.tensor({ 1, 2, 3 }, { shape = { 3, 1 }, lod = { { 0, 3 } } }),
                 Y = T.tensor({}, { shape = { 0, 1 }, lod = { { 0 } } }) },
      expect = { Out = { shape = { 3, 1 }, data = { 1, 2, 3 }, lod = { { 0, 3 } } } },
    }
  end)

  it("grad sums the copies (X with and without LoD)", function()
    local y = T.tensor(rand_values(6, 1), { shape = { 6, 1 }, lod = { { 0, 2, 3, 3, 6 } } })
    W.check{
      type = "sequence_expand",
      inputs = { X = T.tensor(rand_values(10, 3), { shape = { 5, 2 }, lod = { { 0, 1, 3, 4, 5 } } }), Y = y },
      wrt = { "X" },
    }
    T.check_grad{
      type = "sequence_expand",
      inputs = { X = T.tensor(rand_values(8, 4), { shape = { 4, 2 } }), Y = y },
      wrt = { "X" }, no_grad = { "Y" },
    }
  end)

  it("rejects mismatched sequence counts and a bad ref_level", function()
    local y = T.tensor(rand_values(6, 1), { shape = { 6, 1 }, lod = { { 0, 2, 3, 6 } } })
    expect_error(function()
      T.run{ type = "sequence_expand", inputs = { X = T.tensor({ 1, 2 }, { shape = { 2, 1 } }), Y = y } }
    end, "sequence_expand", "in_X_1", "2 rows", "3 sequences")
    expect_error(function()
      T.run{ type = "sequence_expand", attrs = { ref_level = 3 },
             inputs = { X = T.tensor({ 1, 2, 3 }, { shape = { 3, 1 } }), Y = y } }
    end, "sequence_expand", "ref_level 3")
    expect_error(function()
      T.run{ type = "sequence_expand",
             inputs = { X = T.tensor({ 1, 2, 3 }, { shape = { 3, 1 } }), Y = T.tensor({ 1, 2, 3 }, { shape = { 3, 1 } }) } }
    end, "sequence_expand", "in_Y_1", "no LoD")
  end)
end)

-- ---- sequence_conv ---------------------------------------------------------------------
-- reference: out[r] = sum_j sum_c ctx(r, j)[c] * filter[(j*d + c), m]
local function conv_ref(x, d, offs, filter, m, cl, cs, pad)
  local up = math.max(0, -cs)
  local out = {}
  for s = 1, #offs - 1 do
    local b, e = offs[s], offs[s + 1]
    local len = e - b
    for p = 0, len - 1 do
      for o = 1, m do
        local acc = 0
        for j = 0, cl - 1 do
          local q = p + cs + j
          for c = 1, d do
            local v = 0
            if q >= 0 and q < len then v = x[(b + q) * d + c]
            elseif pad then
              local pr = q < 0 and up + q or up + (q - len)
              v = pad[pr * d + c]
            end
            acc = acc + v * filter[(j * d + c - 1) * m + o]
          end
        end
        out[(b + p) * m + o] = acc
      end
    end
  end
  return out
end

describe("sequence_conv", function()
  local offs = { 0, 3, 4, 9 }    -- lengths 3, 1, 5
  local n, d, m = 9, 2, 3
  for _, c in ipairs({
    { cl = 3, cs = -1 }, { cl = 3, cs = 0 }, { cl = 5, cs = -2 }, { cl = 2, cs = 1 }, { cl = 1, cs = 0 },
    { cl = 4, cs = -3 },
  }) do
    local up, down = math.max(0, -c.cs), math.max(0, c.cs + c.cl - 1)
    for _, trainable in ipairs({ false, true }) do
      local label = ("contextLength %d, contextStart %d%s"):format(c.cl, c.cs, trainable and ", trainable padding" or "")
      local function inputs(seed)
        local ins = {
          X = T.tensor(rand_values(n * d, seed), { shape = { n, d }, lod = { offs } }),
          Filter = T.tensor(rand_values(c.cl * d * m, seed + 1), { shape = { c.cl * d, m } }),
        }
        if trainable and up + down > 0 then
          ins.PaddingData = T.tensor(rand_values((up + down) * d, seed + 2), { shape = { up + down, d } })
        end
        return ins
      end
      it(label, function()
        local ins = inputs(1)
        local want = conv_ref(ins.X.data, d, offs, ins.Filter.data, m, c.cl, c.cs,
          ins.PaddingData and ins.PaddingData.data)
        for _, dtype in ipairs({ "float64", "float32" }) do
          local di = {}
          for k, v in pairs(ins) do di[k] = T.tensor(v.data, { shape = v.shape, lod = v.lod, dtype = dtype }) end
          T.check_output{
            type = "sequence_conv", dtype = dtype,
            attrs = { contextLength = c.cl, contextStart = c.cs, paddingTrainable = trainable },
            inputs = di, expect = { Out = { shape = { n, m }, data = want, lod = { offs } } },
            atol = dtype == "float32" and 1e-5 or 1e-12, rtol = 1e-5,
          }
        end
      end)
      it(label .. " grad", function()
        local ins = inputs(5)
        local wrt = { "X", "Filter" }
        if ins.PaddingData then wrt[3] = "PaddingData" end
        W.check{
          type = "sequence_conv",
          attrs = { contextLength = c.cl, contextStart = c.cs, paddingTrainable = trainable },
          inputs = ins, wrt = wrt,
        }
      end)
    end
  end

  it("gives PaddingData a zero grad when the padding is not trainable", function()
    local ins = {
      X = T.tensor(rand_values(4 * 2, 3), { shape = { 4, 2 }, lod = { { 0, 1, 4 } } }),
      Filter = T.tensor(rand_values(3 * 2 * 2, 4), { shape = { 6, 2 } }),
      PaddingData = T.tensor(rand_values(2 * 2, 5), { shape = { 2, 2 } }),
    }
    T.check_grad{
      type = "sequence_conv", attrs = { contextLength = 3, contextStart = -1 },
      inputs = ins, wrt = { "PaddingData", "X" },
    }
  end)

  it("rejects a filter of the wrong height and a stride other than 1", function()
    local x = T.tensor(rand_values(6, 3), { shape = { 3, 2 }, lod = { { 0, 3 } } })
    expect_error(function()
      T.run{ type = "sequence_conv", attrs = { contextLength = 3 },
             inputs = { X = x, Filter = T.tensor(rand_values(10, 1), { shape = { 5, 2 } }) } }
    end, "sequence_conv", "in_Filter_1", "[5, 2]", "[6, M]")
    expect_error(function()
      T.run{ type = "sequence_conv", attrs = { contextLength = 3, contextStride = 2 },
             inputs = { X = x, Filter = T.tensor(rand_values(12, 1), { shape = { 6, 2 } }) } }
    end, "sequence_conv", "contextStride")
    expect_error(function()
      T.run{ type = "sequence_conv", attrs = { contextLength = 3, contextStart = -1, paddingTrainable = true },
             inputs = { X = x, Filter = T.tensor(rand_values(12, 1), { shape = { 6, 2 } }) } }
    end, "sequence_conv", "PaddingData")
  end)
end)
