-- oar.reader: Fluid's reader decorators. Expected outputs are worked out by
-- hand from the small inputs.
local reader = require("oar.reader")

-- A reader creator over a Lua list; counts how many samples were pulled.
local function list_reader_counted(list)
  local pulled = { n = 0 }
  local creator = function()
    local i = 0
    return function()
      i = i + 1
      if list[i] ~= nil then pulled.n = pulled.n + 1 end
      return list[i]
    end
  end
  return creator, pulled
end

local function list_reader(list)
  return (list_reader_counted(list))
end

local function range(a, b)
  local t = {}
  for i = a, b do t[#t + 1] = i end
  return t
end

local function collect(creator)
  local out = {}
  for s in creator() do out[#out + 1] = s end
  return out
end

describe("oar.reader.rng", function()
  it("is SplitMix64 (reference outputs)", function()
    -- First outputs of Vigna's splitmix64.c for these seeds, printed with
    -- an independent Python implementation (arbitrary-precision ints):
    -- seed 0 -> 0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4
    -- seed 1234567 -> 6457827717110365317, 3203168211198807973
    local g = reader.rng(0)
    assert.are.equal(0xe220a8397b1dcdafULL, g:next_u64())
    assert.are.equal(0x6e789e6aa1b965f4ULL, g:next_u64())
    local h = reader.rng(1234567)
    assert.are.equal(6457827717110365317ULL, h:next_u64())
    assert.are.equal(3203168211198807973ULL, h:next_u64())
  end)

  it("gives uniform doubles in [0,1) and integers in range", function()
    local g = reader.rng(7)
    local sum = 0
    for _ = 1, 10000 do
      local x = g:random()
      assert.is_true(x >= 0 and x < 1)
      sum = sum + x
    end
    assert.is_true(math.abs(sum / 10000 - 0.5) < 0.02)
    local seen = {}
    for _ = 1, 1000 do
      local k = g:randint(3, 5)
      assert.is_true(k == 3 or k == 4 or k == 5)
      seen[k] = true
    end
    assert.is_true(seen[3] and seen[4] and seen[5])
  end)

  it("rejects bad seeds", function()
    assert.has_error(function() reader.rng(-1) end)
    assert.has_error(function() reader.rng(1.5) end)
    assert.has_error(function() reader.rng("x") end)
  end)
end)

describe("oar.reader.batch", function()
  it("groups samples and keeps the last partial batch", function()
    local b = collect(reader.batch(list_reader(range(1, 7)), 3))
    assert.are.same({ { 1, 2, 3 }, { 4, 5, 6 }, { 7 } }, b)
  end)

  it("drops the last partial batch with drop_last", function()
    local b = collect(reader.batch(list_reader(range(1, 7)), 3, true))
    assert.are.same({ { 1, 2, 3 }, { 4, 5, 6 } }, b)
    b = collect(reader.batch(list_reader(range(1, 6)), 3, true))
    assert.are.same({ { 1, 2, 3 }, { 4, 5, 6 } }, b)
  end)

  it("yields nothing for an empty reader and restarts on each call", function()
    assert.are.same({}, collect(reader.batch(list_reader({}), 2)))
    local r = reader.batch(list_reader({ "a", "b", "c" }), 2)
    assert.are.same({ { "a", "b" }, { "c" } }, collect(r))
    assert.are.same({ { "a", "b" }, { "c" } }, collect(r))
  end)

  it("rejects bad arguments with clear messages", function()
    assert.has_error(function() reader.batch(list_reader({}), 0) end,
      "oar.reader.batch: batch_size must be a positive integer, got 0")
    assert.has_error(function() reader.batch(list_reader({}), 2.5) end)
    assert.has_error(function() reader.batch(42, 2) end)
    local bad = reader.batch(function() return 5 end, 2)
    assert.has_error(function() bad() end,
      "oar.reader.batch: the reader returned number, not an iterator function")
  end)
end)

describe("oar.reader.shuffle", function()
  it("permutes within buffers of buf_size", function()
    local out = collect(reader.shuffle(list_reader(range(1, 7)), 3, 11))
    assert.are.equal(7, #out)
    -- buffers are {1,2,3}, {4,5,6}, {7}: each block comes out permuted in place
    local b1 = { out[1], out[2], out[3] }
    local b2 = { out[4], out[5], out[6] }
    table.sort(b1); table.sort(b2)
    assert.are.same({ 1, 2, 3 }, b1)
    assert.are.same({ 4, 5, 6 }, b2)
    assert.are.equal(7, out[7])
  end)

  it("is deterministic given the seed, and epochs differ", function()
    local a = reader.shuffle(list_reader(range(1, 50)), 50, 123)
    local b = reader.shuffle(list_reader(range(1, 50)), 50, 123)
    local a1, a2 = collect(a), collect(a)
    local b1, b2 = collect(b), collect(b)
    assert.are.same(a1, b1)
    assert.are.same(a2, b2)
    assert.are_not.same(a1, a2)
    assert.are_not.same(range(1, 50), a1)
    local sorted = { unpack(a1) }
    table.sort(sorted)
    assert.are.same(range(1, 50), sorted)
    local c1 = collect(reader.shuffle(list_reader(range(1, 50)), 50, 124))
    assert.are_not.same(a1, c1)
  end)

  it("handles an empty reader and rejects a bad buffer size", function()
    assert.are.same({}, collect(reader.shuffle(list_reader({}), 4, 1)))
    assert.has_error(function() reader.shuffle(list_reader({}), 0, 1) end)
  end)
end)

describe("oar.reader.map_readers", function()
  it("applies fn to samples read in step and stops at the shortest", function()
    local r = reader.map_readers(function(a, b) return a * 10 + b end,
      list_reader({ 1, 2, 3 }), list_reader({ 4, 5 }))
    assert.are.same({ 14, 25 }, collect(r))
  end)

  it("works with one reader", function()
    local r = reader.map_readers(function(a) return { a, a * a } end, list_reader({ 2, 3 }))
    assert.are.same({ { 2, 4 }, { 3, 9 } }, collect(r))
  end)

  it("rejects a non-function", function()
    assert.has_error(function() reader.map_readers(3, list_reader({})) end)
    assert.has_error(function() reader.map_readers(print) end)
  end)
end)

describe("oar.reader.chain", function()
  it("concatenates readers, skipping empty ones", function()
    local r = reader.chain(list_reader({ 1, 2 }), list_reader({}), list_reader({ 3 }))
    assert.are.same({ 1, 2, 3 }, collect(r))
    assert.are.same({ 1, 2, 3 }, collect(r))
    assert.are.same({}, collect(reader.chain()))
  end)
end)

describe("oar.reader.compose", function()
  it("flattens table samples and appends plain values", function()
    local r = reader.compose(list_reader({ { 1, 2 }, { 3, 4 } }), list_reader({ "a", "b" }),
      list_reader({ { { 9 } }, { { 8 } } }))
    assert.are.same({ { 1, 2, "a", { 9 } }, { 3, 4, "b", { 8 } } }, collect(r))
  end)

  it("raises when readers are not aligned", function()
    local r = reader.compose(list_reader({ 1, 2, 3 }), list_reader({ 1, 2 }))
    local it = r()
    assert.are.same({ 1, 1 }, it())
    assert.are.same({ 2, 2 }, it())
    assert.has_error(function() it() end,
      "oar.reader.compose: readers are not aligned: reader 2 ended while reader 1 still had " ..
      "samples (pass {check_alignment=false} to stop at the shortest)")
  end)

  it("stops at the shortest with check_alignment=false", function()
    local r = reader.compose(list_reader({ 1, 2, 3 }), list_reader({ 5, 6 }),
      { check_alignment = false })
    assert.are.same({ { 1, 5 }, { 2, 6 } }, collect(r))
  end)

  it("ends cleanly when all readers end together", function()
    local r = reader.compose(list_reader({ 1 }), list_reader({ 2 }))
    assert.are.same({ { 1, 2 } }, collect(r))
  end)
end)

describe("oar.reader.buffered", function()
  it("reads size samples ahead and yields them all in order", function()
    local src, pulled = list_reader_counted(range(1, 10))
    local it = reader.buffered(src, 3)()
    assert.are.equal(0, pulled.n)           -- nothing read before asked
    assert.are.equal(1, it())
    assert.are.equal(4, pulled.n)           -- the one returned + 3 ahead
    assert.are.equal(2, it())
    assert.are.equal(5, pulled.n)
    local rest = {}
    for s in it do rest[#rest + 1] = s end
    assert.are.same(range(3, 10), rest)
    assert.are.equal(10, pulled.n)
    assert.is_nil(it())
  end)

  it("passes short readers through", function()
    assert.are.same({ 1, 2 }, collect(reader.buffered(list_reader({ 1, 2 }), 5)))
    assert.are.same({}, collect(reader.buffered(list_reader({}), 5)))
    assert.has_error(function() reader.buffered(list_reader({}), 0) end)
  end)
end)

describe("oar.reader.firstn", function()
  it("yields at most n samples and reads no more than needed", function()
    local src, pulled = list_reader_counted(range(1, 10))
    assert.are.same({ 1, 2, 3 }, collect(reader.firstn(src, 3)))
    assert.are.equal(3, pulled.n)
    assert.are.same({ 1, 2 }, collect(reader.firstn(list_reader({ 1, 2 }), 5)))
    assert.are.same({}, collect(reader.firstn(list_reader({ 1, 2 }), 0)))
    assert.has_error(function() reader.firstn(src, -1) end)
  end)
end)

describe("oar.reader.cache", function()
  it("reads the source once and replays it", function()
    local src, pulled = list_reader_counted({ 1, 2, 3 })
    local r = reader.cache(src)
    assert.are.same({ 1, 2, 3 }, collect(r))
    assert.are.same({ 1, 2, 3 }, collect(r))
    assert.are.equal(3, pulled.n)
  end)
end)

describe("composed decorators", function()
  it("batch(shuffle(...)) keeps every sample once", function()
    local r = reader.batch(reader.shuffle(list_reader(range(1, 10)), 4, 5), 3)
    local seen, sizes = {}, {}
    for b in r() do
      sizes[#sizes + 1] = #b
      for _, s in ipairs(b) do
        assert.is_nil(seen[s])
        seen[s] = true
      end
    end
    assert.are.same({ 3, 3, 3, 1 }, sizes)
    for i = 1, 10 do assert.is_true(seen[i]) end
  end)
end)
