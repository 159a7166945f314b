-- oar.data_feeder (Fluid's DataFeeder) and the tensor batches of
-- oar.dataset.fashion_mnist. Expected tensors are written out by hand.
local DataFeeder = require("oar.data_feeder")
local tensor = require("oar.tensor")
local idx = require("oar.dataset.idx")
local fm = require("oar.dataset.fashion_mnist")
local reader = require("oar.reader")

local function errmsg(fn, ...)
  local ok, err = pcall(fn, ...)
  assert.is_false(ok)
  return tostring(err)
end

describe("DataFeeder", function()
  local img = { name = "img", shape = { -1, 2, 2 }, dtype = "float32" }
  local label = { name = "label", shape = { -1, 1 }, dtype = "int64" }

  it("fills dense slots with the batch dimension first", function()
    local feeder = DataFeeder{ feed_list = { img, label } }
    local feed = feeder:feed({
      { { 1, 2, 3, 4 }, 7 },              -- flat values
      { { { 5, 6 }, { 7, 8.5 } }, { 3 } } -- nested rows, label in a list
    })
    assert.are.same({ 2, 2, 2 }, feed.img:shape())
    assert.are.equal("float32", feed.img:dtype())
    assert.are.same({ { { 1, 2 }, { 3, 4 } }, { { 5, 6 }, { 7, 8.5 } } }, feed.img:totable())
    assert.are.same({ 2, 1 }, feed.label:shape())
    assert.are.equal("int64", feed.label:dtype())
    assert.are.same({ { 7 }, { 3 } }, feed.label:totable())
    assert.are.same({ "img", "label" }, feeder.feed_names)
  end)

  it("takes positional arguments like Fluid and a constructor call", function()
    local feeder = DataFeeder({ label }, nil)
    assert.are.same({ { 1 }, { 2 }, { 0 } }, feeder:feed({ { 1 }, { 2 }, { 0 } }).label:totable())
    local f2 = DataFeeder.new{ feed_list = { { name = "x", shape = { -1 } } } }
    assert.are.same({ 0.5, 1.5 }, f2:feed({ { 0.5 }, { 1.5 } }).x:totable())
  end)

  it("accepts Tensors as fields", function()
    local feeder = DataFeeder{ feed_list = { img } }
    local t = tensor({ { 1, 2 }, { 3, 4 } }, "float64")
    local feed = feeder:feed({ { t }, { { 0, 0, 0, 1 } } })
    assert.are.same({ { { 1, 2 }, { 3, 4 } }, { { 0, 0 }, { 0, 1 } } }, feed.img:totable())
  end)

  it("fills a fixed-shape slot from the whole minibatch", function()
    local feeder = DataFeeder{ feed_list = { { name = "w", shape = { 2, 3 }, dtype = "float64" } } }
    local feed = feeder:feed({ { { 1, 2, 3 } }, { { 4, 5, 6 } } })
    assert.are.same({ { 1, 2, 3 }, { 4, 5, 6 } }, feed.w:totable())
    assert.matches("holds 3 values, expected 6", errmsg(feeder.feed, feeder, { { { 1, 2, 3 } } }))
  end)

  it("builds LoD tensors for sequence slots", function()
    local words = { name = "words", shape = { -1, 1 }, dtype = "int64", lod_level = 1 }
    local feeder = DataFeeder{ feed_list = { words, label } }
    local feed = feeder:feed({ { { 3, 1, 4 }, 0 }, { { 1, 5 }, 1 }, { {}, 1 } })
    assert.are.same({ 5, 1 }, feed.words:shape())
    assert.are.same({ { 3 }, { 1 }, { 4 }, { 1 }, { 5 } }, feed.words:totable())
    assert.are.same({ { 0, 3, 5, 5 } }, feed.words:lod())
    assert.are.same({ 3, 1 }, feed.label:shape())
  end)

  it("builds two-level LoD", function()
    local para = { name = "para", shape = { -1, 2 }, dtype = "float32", lod_level = 2 }
    local feeder = DataFeeder{ feed_list = { para } }
    -- sample 1: two sentences of 1 and 2 items; sample 2: one sentence of 1 item
    local feed = feeder:feed({
      { { { { 1, 1 } }, { { 2, 2 }, { 3, 3 } } } },
      { { { { 4, 4 } } } },
    })
    assert.are.same({ { 0, 2, 3 }, { 0, 1, 3, 4 } }, feed.para:lod())
    assert.are.same({ { 1, 1 }, { 2, 2 }, { 3, 3 }, { 4, 4 } }, feed.para:totable())
  end)

  it("converts booleans and checks integers", function()
    local feeder = DataFeeder{ feed_list = { { name = "b", shape = { -1 }, dtype = "bool" },
                                             { name = "i", shape = { -1 }, dtype = "int32" } } }
    local feed = feeder:feed({ { true, 1 }, { 0, -2 } })
    assert.are.same({ true, false }, feed.b:totable())
    assert.are.same({ 1, -2 }, feed.i:totable())
    assert.are.equal("DataFeeder: slot 'i', sample 2: 2.5 is not an integer (dtype int32)",
      errmsg(feeder.feed, feeder, { { true, 1 }, { false, 2.5 } }))
  end)

  it("names the slot and the sample when sizes or fields are wrong", function()
    local feeder = DataFeeder{ feed_list = { img, label } }
    assert.are.equal("DataFeeder: slot 'img' (shape {-1, 2, 2}): sample 2 holds 3 values, expected 4",
      errmsg(feeder.feed, feeder, { { { 1, 2, 3, 4 }, 1 }, { { 1, 2, 3 }, 1 } }))
    assert.are.equal("DataFeeder: slot 'img' (shape {-1, 2, 2}): sample 1 holds 5 values, expected 4",
      errmsg(feeder.feed, feeder, { { { 1, 2, 3, 4, 5 }, 1 } }))
    assert.matches("sample 1 has 1 fields but feed_list has 2 %(img, label%)",
      errmsg(feeder.feed, feeder, { { { 1, 2, 3, 4 } } }))
    assert.matches("slot 'img', sample 1: expected a number, got string",
      errmsg(feeder.feed, feeder, { { { 1, 2, "x", 4 }, 1 } }))
    assert.matches("non%-empty list of samples", errmsg(feeder.feed, feeder, {}))
  end)

  it("rejects bad feed lists", function()
    assert.has_error(function() DataFeeder{ feed_list = {} } end)
    assert.matches("needs a shape", errmsg(DataFeeder, { feed_list = { { name = "x" } } }))
    assert.matches("unknown dtype", errmsg(DataFeeder, { feed_list = { { name = "x", shape = { -1 }, dtype = "f7" } } }))
    assert.matches("appears twice", errmsg(DataFeeder, { feed_list = { label, label } }))
    assert.matches("%-1 outside the first", errmsg(DataFeeder, { feed_list = { { name = "x", shape = { -1, -1 } } } }))
    assert.matches("no variable named 'nope'",
      errmsg(DataFeeder, { feed_list = { "nope" },
                           program = { global_block = function() return { var = function() error("absent") end } end } }))
  end)

  it("looks names up in the program", function()
    local vars = { img = { name = "img", shape = { -1, 4 }, dtype = "float32", lod_level = 0 } }
    local prog = { global_block = function() return { var = function(_, n) return vars[n] end } end }
    local feeder = DataFeeder{ feed_list = { "img" }, program = prog }
    assert.are.same({ { 1, 2, 3, 4 } }, feeder:feed({ { { 1, 2, 3, 4 } } }).img:totable())
  end)

  it("decorates a batched reader", function()
    local src = function()
      local i = 0
      return function()
        i = i + 1
        if i <= 3 then return { i } end
      end
    end
    local feeder = DataFeeder{ feed_list = { { name = "x", shape = { -1, 1 }, dtype = "float32" } } }
    local feeds = {}
    for f in feeder:decorate_reader(reader.batch(src, 2))() do feeds[#feeds + 1] = f.x:totable() end
    assert.are.same({ { { 1 }, { 2 } }, { { 3 } } }, feeds)
  end)
end)

describe("fashion_mnist.batches", function()
  local dir = os.tmpname()
  os.remove(dir)
  os.execute("mkdir -p '" .. dir .. "'")
  teardown(function() os.execute("rm -rf '" .. dir .. "'") end)
  -- 5 images, image k has every pixel = 10 * k; labels 0..4
  local pix = {}
  for k = 0, 4 do for _ = 1, 784 do pix[#pix + 1] = 10 * k end end
  idx.write(dir .. "/train-images-idx3-ubyte.gz", { 5, 28, 28 }, pix)
  idx.write(dir .. "/train-labels-idx1-ubyte.gz", { 5 }, { 0, 1, 2, 3, 4 })
  local function value(k) return 10 * k / 255 * 2 - 1 end

  it("yields batches in order without shuffle, keeping the last one", function()
    local seen = {}
    for x, y, n in fm.batches("train", 2, { data_dir = dir, shuffle = false }) do
      assert.are.same({ n, 784 }, x:shape())
      assert.are.same({ n, 1 }, y:shape())
      assert.are.equal("float32", x:dtype())
      assert.are.equal("int64", y:dtype())
      for i = 1, n do
        local k = y:get(i, 1)
        seen[#seen + 1] = k
        assert.is_true(math.abs(x:get(i, 1) - value(k)) < 1e-6)
        assert.is_true(math.abs(x:get(i, 784) - value(k)) < 1e-6)
      end
    end
    assert.are.same({ 0, 1, 2, 3, 4 }, seen)
  end)

  it("shuffles deterministically given the seed and reshapes images", function()
    local function order(seed)
      local out = {}
      for x, y, n in fm.batches("train", 2, { data_dir = dir, seed = seed, drop_last = true,
                                              image_shape = { 1, 28, 28 } }) do
        assert.are.same({ n, 1, 28, 28 }, x:shape())
        for i = 1, n do
          local k = y:get(i, 1)
          out[#out + 1] = k
          assert.is_true(math.abs(x:get(i, 1, 28, 28) - value(k)) < 1e-6)
        end
      end
      return out
    end
    local a, b = order(3), order(3)
    assert.are.equal(4, #a)           -- drop_last: 2 + 2 of 5
    assert.are.same(a, b)
    local seen = {}
    for _, k in ipairs(a) do
      assert.is_nil(seen[k])
      seen[k] = true
    end
    -- over several seeds the orders are not all the same
    local distinct = {}
    for s = 1, 6 do distinct[table.concat(order(s), ",")] = true end
    local count = 0
    for _ in pairs(distinct) do count = count + 1 end
    assert.is_true(count > 1)
  end)

  it("rejects bad arguments", function()
    assert.has_error(function() fm.batches("train", 0, { data_dir = dir }) end)
    assert.has_error(function() fm.batches("dev", 2, { data_dir = dir }) end)
    assert.matches("holds 700 values, an image has 784",
      errmsg(fm.batches, "train", 2, { data_dir = dir, image_shape = { 7, 100 } }))
  end)
end)
