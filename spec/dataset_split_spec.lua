-- oar.dataset.split: deterministic, disjoint train/validation parts that
-- cover every sample once; for loaded data sets (followed by
-- fashion_mnist.batches) and for reader creators.
local ffi = require("ffi")
local oar = require("oar")
local fm = require("oar.dataset.fashion_mnist")

-- A small data set shaped like fashion_mnist.load's: image k is filled with
-- the value k, label k % 10.
local function fake(n)
  local images = ffi.new("float[?]", n * 784)
  local labels = ffi.new("int64_t[?]", n)
  for k = 0, n - 1 do
    for p = 0, 783 do images[k * 784 + p] = k end
    labels[k] = k % 10
  end
  return { split = "train", count = n, rows = 28, cols = 28, image_size = 784, images = images, labels = labels }
end

local function list(p)
  local out = {}
  for i = 0, p.count - 1 do out[#out + 1] = p.indices[i] end
  return out
end

describe("oar.dataset.split", function()
  it("splits a loaded data set into disjoint parts covering every sample once", function()
    local data = fake(100)
    local train, valid = oar.dataset.split(data, { validation = 0.2, seed = 7 })
    assert.are.equal(80, train.count)
    assert.are.equal(20, valid.count)
    assert.are.equal("train", train.part)
    assert.are.equal("validation", valid.part)
    assert.are.equal(data.images, train.images)   -- shared, not copied
    local seen = {}
    for _, p in ipairs({ train, valid }) do
      local prev = -1
      for _, i in ipairs(list(p)) do
        assert.is_nil(seen[i])
        assert.is_true(i > prev)                  -- each part keeps the original order
        seen[i], prev = true, i
      end
    end
    for i = 0, 99 do assert.is_true(seen[i]) end
  end)

  it("is the same split for the same seed, another for another seed", function()
    local data = fake(100)
    local _, v1 = oar.dataset.split(data, { validation = 10, seed = 3 })
    local _, v2 = oar.dataset.split(data, { validation = 10, seed = 3 })
    local _, v3 = oar.dataset.split(data, { validation = 10, seed = 4 })
    local _, v0 = oar.dataset.split(data, { validation = 10 })
    local _, v00 = oar.dataset.split(data, { validation = 10, seed = 0 })
    assert.are.same(list(v1), list(v2))
    assert.are_not.same(list(v1), list(v3))
    assert.are.same(list(v0), list(v00))   -- seed defaults to 0
    assert.are.equal(10, #list(v1))
  end)

  it("picks the validation samples the seeded generator says", function()
    -- an independent replay: partial Fisher-Yates over 0..n-1 with oar.reader.rng
    local n, k, seed = 50, 5, 11
    local order = {}
    for i = 0, n - 1 do order[i] = i end
    local rng = oar.reader.rng(seed)
    for i = 0, k - 1 do
      local j = rng:randint(i, n - 1)
      order[i], order[j] = order[j], order[i]
    end
    local want = {}
    for i = 0, k - 1 do want[#want + 1] = order[i] end
    table.sort(want)
    local _, valid = oar.dataset.split(fake(n), { validation = k, seed = seed })
    assert.are.same(want, list(valid))
  end)

  it("feeds fashion_mnist.batches: each part's samples, shuffled or not", function()
    local data = fake(30)
    local train, valid = oar.dataset.split(data, { validation = 6, seed = 1 })
    local function drain(part, opts)
      local got, labels = {}, {}
      for x, y, b in fm.batches(part, 4, opts) do
        local px, py = x:data(), y:data()
        assert.are.same({ b, 784 }, x:shape())
        for i = 0, b - 1 do
          got[#got + 1] = px[i * 784 + 783]
          labels[#labels + 1] = tonumber(py[i])
        end
      end
      return got, labels
    end
    local v, vl = drain(valid)          -- validation: not shuffled by default
    assert.are.same(list(valid), v)
    for i, k in ipairs(v) do assert.are.equal(k % 10, vl[i]) end
    local t = drain(train, { seed = 5 }) -- training part: shuffled by default
    assert.are_not.same(list(train), t)
    table.sort(t)
    assert.are.same(list(train), t)
    local t2 = drain(train, { shuffle = false })
    assert.are.same(list(train), t2)
  end)

  it("splits a part again, composing the indices", function()
    local data = fake(40)
    local train = oar.dataset.split(data, { validation = 10, seed = 2 })
    local a, b = oar.dataset.split(train, { validation = 5, seed = 9 })
    assert.are.equal(25, a.count)
    local all = {}
    for _, i in ipairs(list(a)) do all[#all + 1] = i end
    for _, i in ipairs(list(b)) do all[#all + 1] = i end
    table.sort(all)
    assert.are.same(list(train), all)
  end)

  it("splits a reader creator: both parts readable every epoch, disjoint, complete", function()
    local function source()
      local i = 0
      return function()
        i = i + 1
        if i <= 20 then return { i } end
      end
    end
    local tr, va = oar.dataset.split(source, { validation = 0.25, seed = 5 })
    local function drain(r)
      local out = {}
      for s in r() do out[#out + 1] = s[1] end
      return out
    end
    local t, v = drain(tr), drain(va)
    assert.are.equal(15, #t)
    assert.are.equal(5, #v)
    assert.are.same(t, drain(tr))      -- a second epoch: the same samples
    local all = {}
    for _, x in ipairs(t) do all[#all + 1] = x end
    for _, x in ipairs(v) do all[#all + 1] = x end
    table.sort(all)
    for i = 1, 20 do assert.are.equal(i, all[i]) end
    -- the same split as a data set of 20 with that seed
    local d = { count = 20 }
    local _, vd = oar.dataset.split(d, { validation = 5, seed = 5 })
    local want = {}
    for _, i in ipairs(list(vd)) do want[#want + 1] = i + 1 end
    assert.are.same(want, v)
    -- count= saves the counting pass; a reader longer than its count is an error
    local tr2 = oar.dataset.split(source, { validation = 2, count = 10 })
    assert.has_error(function() drain(tr2) end)
  end)

  it("explains bad options", function()
    local data = fake(10)
    local ok, err = pcall(function() oar.dataset.split(data, { validaton = 2 }) end)
    assert.is_false(ok)
    assert.truthy(err:find("dataset_split_spec.lua:%d+: oar.dataset.split: unknown argument 'validaton' %(did you mean 'validation'%?%)"))
    assert.has_error(function() oar.dataset.split(data, {}) end)
    assert.has_error(function() oar.dataset.split(data, { validation = 10 }) end)   -- leaves no training sample
    assert.has_error(function() oar.dataset.split(data, { validation = 0 }) end)
    assert.has_error(function() oar.dataset.split(data, { validation = 2.5 }) end)
    assert.has_error(function() oar.dataset.split(data, { validation = 2, seed = -1 }) end)
    assert.has_error(function() oar.dataset.split(42, { validation = 2 }) end)
  end)

  local real = io.open(fm.DEFAULT_DIR .. "/train-labels-idx1-ubyte.gz", "rb")
  if real then real:close() end
  it("splits Fashion-MNIST's 60000 training images into 55000 + 5000", function()
    if not real then
      pending("Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)")
      return
    end
    local train, valid = oar.dataset.split(fm.load("train"), { validation = 5000, seed = 1 })
    assert.are.same({ 55000, 5000 }, { train.count, valid.count })
    local n = 0
    for _, _, b in fm.batches(valid, 1000) do n = n + b end
    assert.are.equal(5000, n)
  end)
end)
