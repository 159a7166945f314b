-- CUDA kernels of layer_norm and the sequence ops (sequence_pool,
-- sequence_softmax, sequence_expand, sequence_conv) against their CPU
-- kernels (tag: gpu), with spec/helpers/cuda_compare.lua: each case runs a
-- one-op program on both places with the same random inputs and compares
-- every output and the gradients through the op of a weighted sum with
-- random weights; the kernel counter shows the CUDA kernel ran. Edge shapes:
-- one row, row counts that are no multiple of 32, rows wider than a block,
-- empty sequences, a LoD of two levels, begin_norm_axis 1 and 2, float64.
-- Where no GPU can be used the spec says so and skips.
local oar = require("oar")
local H = require("spec.helpers.cuda_compare")
local rand, randint, same, same_error = H.rand, H.randint, H.same, H.same_error

-- a LoD tensor of random values: rows from the last level's end, then `rest` dims
local function seq_rand(lod, rest, dtype)
  local last = lod[#lod]
  local shape = { last[#last] }
  for _, d in ipairs(rest or {}) do shape[#shape + 1] = d end
  local t = rand(shape, -1, 1, dtype)
  t.lod = lod
  return t
end

-- offsets of sequences with the given lengths
local offsets = require("spec.helpers.index").offsets

local F64 = { atol = 1e-10, rtol = 1e-10 }

describe("CUDA kernels of layer_norm and the sequence ops #gpu", function()
  local why = H.no_gpu("cuda_seq_spec")
  if why then pending(why) return end

  describe("layer_norm", function()
    local function ln(shape, axis, opts)
      opts = opts or {}
      local dtype = opts.dtype or "float32"
      local right = 1
      for i = axis + 1, #shape do right = right * shape[i] end
      local inputs, wrt = { X = rand(shape, -2, 2, dtype) }, { "X" }
      if not opts.no_scale then inputs.Scale = rand({ right }, 0.5, 1.5, dtype); wrt[#wrt + 1] = "Scale" end
      if not opts.no_bias then inputs.Bias = rand({ right }, -1, 1, dtype); wrt[#wrt + 1] = "Bias" end
      local tol = dtype == "float64" and F64 or {}
      same{ type = "layer_norm", inputs = inputs, attrs = { begin_norm_axis = axis, epsilon = 1e-5 },
            grad = { wrt = wrt, of = { "Y" } }, atol = tol.atol or opts.atol, rtol = tol.rtol or opts.rtol }
    end

    it("with Scale and Bias, begin_norm_axis 1 and 2, with grads", function()
      ln({ 4, 3, 5 }, 1)
      ln({ 2, 3, 4, 5 }, 2)
      ln({ 45, 33 }, 1)            -- rows and width no multiple of 32
    end)
    it("one row, a row wider than a block, many rows (the chunked dScale/dBias sums)", function()
      ln({ 1, 37 }, 1)
      ln({ 3, 700 }, 1)
      ln({ 300, 70 }, 1, { atol = 1e-4 })
      ln({ 2000, 8 }, 1, { atol = 1e-4 })
    end)
    it("an empty batch", function()
      ln({ 0, 5 }, 1)
    end)
    it("without Scale, without Bias, without both", function()
      ln({ 6, 10 }, 1, { no_scale = true })
      ln({ 6, 10 }, 1, { no_bias = true })
      ln({ 6, 2, 5 }, 2, { no_scale = true, no_bias = true })
    end)
    it("float64", function()
      ln({ 7, 9 }, 1, { dtype = "float64" })
      ln({ 2, 3, 40 }, 2, { dtype = "float64" })
    end)
  end)

  describe("sequence_pool", function()
    local types = { "AVERAGE", "SUM", "SQRT", "MAX", "LAST", "FIRST" }
    for _, pt in ipairs(types) do
      it(pt .. " with empty sequences and pad_value, with grads", function()
        -- lengths 3, 0, 1, 33 (an empty sequence; 37 rows: no multiple of 32)
        local lod = { offsets({ 3, 0, 1, 33 }) }
        local outputs = pt == "MAX" and { Out = 1, MaxIndex = 1 } or nil
        same{ type = "sequence_pool", inputs = { X = seq_rand(lod, { 5 }) }, outputs = outputs,
              attrs = { pooltype = pt, pad_value = -2.5 }, grad = { wrt = { "X" } } }
        -- rows of more than one dim, one sequence of one row
        same{ type = "sequence_pool", inputs = { X = seq_rand({ { 0, 1 } }, { 2, 3 }) }, outputs = outputs,
              attrs = { pooltype = pt }, grad = { wrt = { "X" } } }
      end)
    end
    it("a batch of empty sequences, and no rows at all", function()
      same{ type = "sequence_pool", inputs = { X = seq_rand({ { 0, 0, 0 } }, { 3 }) }, outputs = { Out = 1, MaxIndex = 1 },
            attrs = { pooltype = "MAX", pad_value = 2 }, grad = { wrt = { "X" } } }
      same{ type = "sequence_pool", inputs = { X = seq_rand({ { 0, 0, 0 } }, { 3 }) },
            attrs = { pooltype = "AVERAGE", pad_value = 2 }, grad = { wrt = { "X" } } }
    end)
    it("MAX without MaxIndex finds the maxima again in the grad", function()
      same{ type = "sequence_pool", inputs = { X = seq_rand({ offsets({ 4, 0, 7 }) }, { 3 }) },
            outputs = { Out = 1 }, attrs = { pooltype = "MAX" }, grad = { wrt = { "X" } } }
    end)
    it("MaxIndex is -1 everywhere for the other types", function()
      local got = same{ type = "sequence_pool", inputs = { X = seq_rand({ offsets({ 2, 3 }) }, { 4 }) },
                        outputs = { Out = 1, MaxIndex = 1 }, attrs = { pooltype = "SUM" } }
      for _, r in ipairs(got) do
        if r.dtype == "int32" then
          for _, v in ipairs(r.data) do assert.are.equal(-1, v) end
        end
      end
    end)
    it("the innermost level of a LoD of two levels; Out keeps the upper level", function()
      local lod = { { 0, 2, 3 }, offsets({ 2, 4, 1 }) }
      for _, pt in ipairs(types) do
        local got = same{ type = "sequence_pool", inputs = { X = seq_rand(lod, { 3 }) }, attrs = { pooltype = pt },
                          grad = { wrt = { "X" } } }
        assert.are.same({ { 0, 2, 3 } }, got[1].lod)
      end
    end)
    it("float64", function()
      for _, pt in ipairs(types) do
        same{ type = "sequence_pool", inputs = { X = seq_rand({ offsets({ 2, 0, 5 }) }, { 3 }, "float64") },
              attrs = { pooltype = pt, pad_value = 1.5 }, grad = { wrt = { "X" } }, atol = F64.atol, rtol = F64.rtol }
      end
    end)
    it("X without a LoD fails on both places", function()
      same_error({ type = "sequence_pool", inputs = { X = rand({ 4, 2 }, -1, 1) }, attrs = { pooltype = "SUM" } },
                 "no LoD")
    end)
  end)

  describe("sequence_softmax", function()
    it("short, empty and long sequences (more rows than a warp), with grads", function()
      local lod = { offsets({ 1, 5, 0, 70, 3 }) }
      same{ type = "sequence_softmax", inputs = { X = seq_rand(lod, { 1 }, nil) }, grad = { wrt = { "X" } } }
      same{ type = "sequence_softmax", inputs = { X = seq_rand({ offsets({ 4, 2 }) }) }, grad = { wrt = { "X" } } }
    end)
    it("many sequences (more than one block of warps)", function()
      local lens = {}
      for i = 1, 45 do lens[i] = (i * 7) % 11 end
      same{ type = "sequence_softmax", inputs = { X = seq_rand({ offsets(lens) }, { 1 }) }, grad = { wrt = { "X" } } }
    end)
    it("float64, and the innermost of two levels", function()
      same{ type = "sequence_softmax", inputs = { X = seq_rand({ offsets({ 3, 0, 6 }) }, { 1 }, "float64") },
            grad = { wrt = { "X" } }, atol = F64.atol, rtol = F64.rtol }
      same{ type = "sequence_softmax", inputs = { X = seq_rand({ { 0, 1, 3 }, offsets({ 2, 3, 4 }) }, { 1 }) },
            grad = { wrt = { "X" } } }
    end)
  end)

  describe("sequence_expand", function()
    it("X with a LoD, repeats from Y's last level (zero repeats too), with grads", function()
      local x = seq_rand({ offsets({ 2, 1, 3 }) }, { 4 })
      local y = seq_rand({ offsets({ 2, 0, 3 }) }, { 1 })
      local got = same{ type = "sequence_expand", inputs = { X = x, Y = y }, grad = { wrt = { "X" } } }
      -- one sequence per copy
      assert.are.same({ { 0, 2, 4, 7, 10, 13 } }, got[1].lod)
    end)
    it("X without a LoD (one row per sequence), ref_level 0 of a two-level Y, with grads", function()
      local x = rand({ 3, 5 }, -1, 1)
      local y = seq_rand({ { 0, 2, 3, 5 }, offsets({ 1, 1, 2, 1, 3 }) }, { 1 })
      same{ type = "sequence_expand", inputs = { X = x, Y = y }, attrs = { ref_level = 0 }, grad = { wrt = { "X" } } }
      -- many rows: 40 sequences repeated up to 4 times
      local lens = {}
      for i = 1, 40 do lens[i] = i % 5 end
      same{ type = "sequence_expand", inputs = { X = rand({ 40, 3 }, -1, 1), Y = seq_rand({ offsets(lens) }, { 1 }) },
            grad = { wrt = { "X" } } }
    end)
    it("int64 values, float64 with grads", function()
      local x = randint({ 3, 2 }, 100)
      x.lod = { offsets({ 1, 0, 2 }) }
      same{ type = "sequence_expand", inputs = { X = x, Y = seq_rand({ offsets({ 3, 1, 2 }) }, { 1 }) } }
      same{ type = "sequence_expand", inputs = { X = seq_rand({ offsets({ 2, 2 }) }, { 3 }, "float64"),
                                                  Y = seq_rand({ offsets({ 1, 3 }) }, { 1 }, "float64") },
            grad = { wrt = { "X" } }, atol = F64.atol, rtol = F64.rtol }
    end)
    it("a Y with another sequence count fails on both places", function()
      same_error({ type = "sequence_expand", inputs = { X = seq_rand({ offsets({ 1, 2 }) }, { 2 }),
                                                        Y = seq_rand({ offsets({ 1, 1, 1 }) }, { 1 }) } },
                 "sequences")
    end)
  end)

  describe("sequence_conv", function()
    local function conv(lens, d, m, cl, cs, trainable, dtype)
      local up, down = math.max(0, -cs), math.max(0, cs + cl - 1)
      local inputs = { X = seq_rand({ offsets(lens) }, { d }, dtype), Filter = rand({ cl * d, m }, -1, 1, dtype) }
      local wrt = { "X", "Filter" }
      if up + down > 0 then
        inputs.PaddingData = rand({ up + down, d }, -1, 1, dtype)
        wrt[#wrt + 1] = "PaddingData"
      end
      local tol = dtype == "float64" and F64 or { atol = 1e-4, rtol = 1e-4 }
      same{ type = "sequence_conv", inputs = inputs,
            attrs = { contextLength = cl, contextStart = cs, paddingTrainable = trainable },
            grad = { wrt = wrt }, atol = tol.atol, rtol = tol.rtol }
    end
    it("context around each row, zero padding, with grads", function()
      conv({ 3, 1, 5 }, 4, 6, 3, -1, false)
      conv({ 2, 0, 4 }, 3, 2, 2, 0, false)       -- an empty sequence, context after the row only
      conv({ 40 }, 5, 3, 4, -2, false)           -- one sequence of 40 rows
    end)
    it("an empty batch", function()
      conv({ 0, 0 }, 3, 2, 3, -1, true)
    end)
    it("trainable padding rows, before and after, with grads", function()
      conv({ 3, 1, 5 }, 4, 6, 3, -1, true)
      conv({ 1, 6, 2 }, 2, 3, 5, -3, true)       -- more padding than some sequences are long
      conv({ 4, 3 }, 3, 2, 3, 1, true)           -- padding after the end only
    end)
    it("float64", function()
      conv({ 3, 0, 4 }, 3, 2, 3, -1, true, "float64")
      conv({ 5 }, 2, 4, 2, -1, false, "float64")
    end)
  end)
end)
