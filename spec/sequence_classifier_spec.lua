-- examples/sequence_classifier.lua learns: a short run (fewer sequences and
-- epochs than the example's defaults) of both recurrent cells must classify
-- held-out sequences clearly better than chance, including the hard ones
-- (long sequences whose marked-token counts differ by one), which no
-- shortcut short of counting gets right.
local ex = dofile("examples/sequence_classifier.lua")

local function counts(s)
  local a, b = 0, 0
  for _, t in ipairs(s.tokens) do
    if t == ex.TOKEN_A then a = a + 1 elseif t == ex.TOKEN_B then b = b + 1 end
  end
  return a, b
end

describe("sequence_classifier", function()
  it("makes the same data every time, without ties, with both labels and all lengths", function()
    local d1, d2 = ex.make_data(500, nil, 3), ex.make_data(500, nil, 3)
    assert.are.same(d1, d2)
    local ones, minlen, maxlen = 0, math.huge, 0
    for _, s in ipairs(d1) do
      local a, b = counts(s)
      assert.are_not.equal(a, b)
      assert.are.equal(a > b and 1 or 0, s.label)
      ones = ones + s.label
      minlen, maxlen = math.min(minlen, #s.tokens), math.max(maxlen, #s.tokens)
    end
    assert.is_true(ones > 150 and ones < 350, "labels are unbalanced: " .. ones .. " of 500")
    assert.are.equal(1, minlen)
    assert.are.equal(30, maxlen)
  end)

  it("batches sequences into one LoD tensor", function()
    local d = ex.make_data(3, nil, 9)
    local b = ex.make_batch(d, 1, 3)
    local lod = b.words:lod()[1]
    assert.are.same({ 0, #d[1].tokens, #d[1].tokens + #d[2].tokens, #d[1].tokens + #d[2].tokens + #d[3].tokens }, lod)
    assert.are.same({ lod[4], 1 }, b.words:shape())
    assert.are.same({ 3, 1 }, b.label:shape())
  end)

  for _, cell in ipairs({ "lstm", "gru" }) do
    it(cell .. ": a short run reaches > 90% test accuracy, also on hard sequences", function()
      local accs, final, m = ex.train{ train = 2000, test = 800, epochs = 3, hidden = 24, cell = cell,
                                       verbose = false, seed = 2 }
      assert.are.equal(3, #accs)
      assert.is_true(final > 0.9, ("%s: final test accuracy %.4f"):format(cell, final))
      -- long sequences whose counts differ by exactly one
      local hard = {}
      for _, s in ipairs(ex.make_data(3000, nil, 12345)) do
        local a, b = counts(s)
        if #s.tokens >= 15 and math.abs(a - b) == 1 then hard[#hard + 1] = s end
      end
      assert.is_true(#hard >= 200, "enough hard sequences")
      local acc = ex.evaluate(m.exe, m.r, hard, m.scope)
      assert.is_true(acc > 0.8, ("%s: accuracy %.4f on %d hard sequences"):format(cell, acc, #hard))
    end)
  end
end)
