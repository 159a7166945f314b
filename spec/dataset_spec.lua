-- oar.dataset: the IDX reader on small files written here, and the real
-- Fashion-MNIST files when Debian's dataset-fashion-mnist is installed.
local ffi = require("ffi")
local dataset = require("oar.dataset")
local idx = dataset.idx
local fm = dataset.fashion_mnist

local tmpdir = os.tmpname()
os.remove(tmpdir)
assert(os.execute("mkdir -p '" .. tmpdir .. "'") == 0 or true)

local function path(name) return tmpdir .. "/" .. name end

local function write_raw(p, bytes)
  local f = assert(io.open(p, "wb"))
  f:write(string.char(unpack(bytes)))
  f:close()
end

-- A big-endian IDX header.
local function header(magic_type, dims)
  local b = { 0, 0, magic_type, #dims }
  for _, d in ipairs(dims) do
    b[#b + 1] = math.floor(d / 16777216) % 256
    b[#b + 1] = math.floor(d / 65536) % 256
    b[#b + 1] = math.floor(d / 256) % 256
    b[#b + 1] = d % 256
  end
  return b
end

local function range_bytes(n, f)
  local t = {}
  for i = 1, n do t[i] = f(i) end
  return t
end

local function errmsg(fn, ...)
  local ok, err = pcall(fn, ...)
  assert.is_false(ok)
  return tostring(err)
end

teardown(function() os.execute("rm -rf '" .. tmpdir .. "'") end)

describe("oar.dataset.idx", function()
  it("reads a plain file written by hand", function()
    local bytes = header(8, { 2, 3 })
    for _, v in ipairs({ 1, 2, 3, 250, 251, 252 }) do bytes[#bytes + 1] = v end
    write_raw(path("plain.idx"), bytes)
    local r = idx.read(path("plain.idx"))
    assert.are.equal(2050, r.magic)            -- 0x00000802
    assert.are.same({ 2, 3 }, r.dims)
    assert.are.equal(2, r.count)
    assert.are.equal(3, r.item_size)
    assert.are.equal(1, r.data[0])
    assert.are.equal(252, r.data[5])
  end)

  it("writes gzip and plain files that read back the same", function()
    local vals = range_bytes(24, function(i) return (i * 37) % 256 end)
    idx.write(path("w.gz"), { 4, 3, 2 }, vals)
    idx.write(path("w.idx"), { 4, 3, 2 }, vals)
    -- the .gz really is gzip (magic 1f 8b), the other starts with the IDX header
    local f = assert(io.open(path("w.gz"), "rb"))
    local head = f:read(2)
    f:close()
    assert.are.equal("\31\139", head)
    f = assert(io.open(path("w.idx"), "rb"))
    assert.are.equal("\0\0\8\3", f:read(4))
    f:close()
    for _, p in ipairs({ path("w.gz"), path("w.idx") }) do
      local r = idx.read(p)
      assert.are.equal(0x0803, r.magic)
      assert.are.same({ 4, 3, 2 }, r.dims)
      for i = 1, 24 do assert.are.equal(vals[i], r.data[i - 1]) end
    end
  end)

  it("reads only the first items with max_items", function()
    idx.write(path("m.gz"), { 5, 2 }, range_bytes(10, function(i) return i end))
    local r = idx.read(path("m.gz"), { max_items = 2 })
    assert.are.equal(2, r.count)
    assert.are.same({ 5, 2 }, r.dims)
    assert.are.equal(4, r.nbytes)
    assert.are.equal(4, r.data[3])
  end)

  it("checks the magic number, the dimensions and the sizes", function()
    idx.write(path("l.gz"), { 3 }, { 1, 2, 3 })
    local e = errmsg(idx.read, path("l.gz"), { magic = 2051 })
    assert.are.equal(path("l.gz") .. ": IDX magic number 2049, expected 2051", e)
    e = errmsg(idx.read, path("l.gz"), { count = 4 })
    assert.are.equal(path("l.gz") .. ": IDX file holds 3 items, expected 4", e)
    idx.write(path("i.gz"), { 1, 2, 2 }, { 1, 2, 3, 4 })
    e = errmsg(idx.read, path("i.gz"), { dims = { 28, 28 } })
    assert.are.equal(path("i.gz") .. ": IDX item shape 2x2, expected 28x28", e)
    e = errmsg(idx.read, path("i.gz"), { ndim = 1 })
    assert.are.equal(path("i.gz") .. ": IDX file has 3 dimensions, expected 1", e)
  end)

  it("rejects files that are not IDX or not unsigned bytes", function()
    write_raw(path("text"), { 72, 105, 33, 10, 0, 0 })
    assert.matches("not an IDX file", errmsg(idx.read, path("text")), 1, true)
    local b = header(0x0D, { 1 })  -- float elements
    for _ = 1, 4 do b[#b + 1] = 0 end
    write_raw(path("float.idx"), b)
    assert.matches("element type 0x0d not supported", errmsg(idx.read, path("float.idx")), 1, true)
  end)

  it("names the file when it is truncated", function()
    local b = header(8, { 5, 4 })
    for i = 1, 12 do b[#b + 1] = i end          -- 3 of 5 items
    write_raw(path("short.idx"), b)
    assert.are.equal(path("short.idx") ..
      ": truncated IDX file: header says 5x4 (20 bytes of data), found only 12 bytes",
      errmsg(idx.read, path("short.idx")))
    write_raw(path("short_header.idx"), { 0, 0, 8, 3, 0, 0, 0, 2, 0, 0 })
    assert.are.equal(path("short_header.idx") ..
      ": truncated IDX file: header ends inside the 3 dimension sizes",
      errmsg(idx.read, path("short_header.idx")))
    write_raw(path("tiny.idx"), { 0, 0 })
    assert.matches("magic number is incomplete", errmsg(idx.read, path("tiny.idx")), 1, true)
  end)

  it("names the file when a gzip stream is cut short", function()
    idx.write(path("big.gz"), { 4000 }, range_bytes(4000, function(i) return (i * 7919) % 251 end))
    local f = assert(io.open(path("big.gz"), "rb"))
    local all = f:read("*a")
    f:close()
    f = assert(io.open(path("cut.gz"), "wb"))
    f:write(all:sub(1, math.floor(#all / 2)))
    f:close()
    local e = errmsg(idx.read, path("cut.gz"))
    assert.are.equal(path("cut.gz") .. ":", e:sub(1, #path("cut.gz") + 1))
    assert.is_truthy(e:find("truncated", 1, true) or e:find("decompress", 1, true))
  end)

  it("rejects bytes after the payload", function()
    local b = header(8, { 2 })
    b[#b + 1], b[#b + 2], b[#b + 3] = 1, 2, 3
    write_raw(path("long.idx"), b)
    assert.matches("bytes after the 2 expected", errmsg(idx.read, path("long.idx")), 1, true)
  end)

  it("reports a missing file and bad arguments", function()
    assert.are.equal(path("nope") .. ": no such file or not readable", errmsg(idx.read, path("nope")))
    assert.has_error(function() idx.read(42) end)
    assert.has_error(function() idx.write(path("x"), { 2 }, { 1 }) end)
    assert.has_error(function() idx.write(path("x"), { 1 }, { 256 }) end)
  end)
end)

describe("oar.dataset.fashion_mnist on hand-made files", function()
  local dir = path("fm")
  os.execute("mkdir -p '" .. dir .. "'")
  -- 3 train images (pixels 0, 255 and 51 everywhere) and 2 test images
  local function img_bytes(values)
    local t = {}
    for _, v in ipairs(values) do for _ = 1, 784 do t[#t + 1] = v end end
    return t
  end
  idx.write(dir .. "/train-images-idx3-ubyte.gz", { 3, 28, 28 }, img_bytes({ 0, 255, 51 }))
  idx.write(dir .. "/train-labels-idx1-ubyte", { 3 }, { 7, 0, 9 })       -- plain, no .gz
  idx.write(dir .. "/t10k-images-idx3-ubyte.gz", { 2, 28, 28 }, img_bytes({ 1, 2 }))
  idx.write(dir .. "/t10k-labels-idx1-ubyte.gz", { 2 }, { 3, 4 })

  it("loads contiguous arrays scaled to [-1, 1]", function()
    local d = fm.load("train", dir)
    assert.are.equal(3, d.count)
    assert.are.equal(3 * 784 * 4, ffi.sizeof(d.images))   -- float32, contiguous
    assert.are.equal(3 * 8, ffi.sizeof(d.labels))          -- int64
    assert.are.equal(-1, d.images[0])
    assert.are.equal(-1, d.images[783])
    assert.are.equal(1, d.images[784])
    assert.is_true(math.abs(d.images[2 * 784 + 5] - (51 / 255 * 2 - 1)) < 1e-6)
    assert.are.equal(7, tonumber(d.labels[0]))
    assert.are.equal(9, tonumber(d.labels[2]))
    assert.are.equal(d, fm.load("train", { data_dir = dir }))  -- cached
  end)

  it("keeps the bytes; float images are made only when asked for, and batches scale the bytes", function()
    local d = fm.load("train", { data_dir = dir, max_items = 2 })
    assert.are.equal(2 * 784, ffi.sizeof(d.pixels))        -- uint8, the file's bytes
    assert.are.equal(255, d.pixels[784])
    local xs = {}
    for x in fm.batches(d, 2, { shuffle = false }) do xs[#xs + 1] = x:totable() end
    assert.is_nil(rawget(d, "images"))                     -- batches never made them
    assert.are.equal(-1, xs[1][1][1])
    assert.are.equal(1, xs[1][2][784])
    local part = require("oar.dataset.split")(d, { validation = 1, seed = 0 })
    local images = d.images                                -- made now, kept on d
    assert.are.equal(2 * 784 * 4, ffi.sizeof(images))
    assert.are.equal(images, part.images)                  -- a part shares them
    assert.are.equal(images, d.images)
    for i = 0, 2 * 784 - 1 do assert.is_true(math.abs(d.pixels[i] / 255 * 2 - 1 - images[i]) < 1e-7) end
  end)

  it("serves Fluid-style reader creators", function()
    local samples = {}
    for s in fm.test({ data_dir = dir })() do samples[#samples + 1] = s end
    assert.are.equal(2, #samples)
    assert.are.equal(784, #samples[1][1])
    assert.is_true(math.abs(samples[1][1][1] - (1 / 255 * 2 - 1)) < 1e-6)
    assert.is_true(math.abs(samples[2][1][784] - (2 / 255 * 2 - 1)) < 1e-6)
    assert.are.equal(3, samples[1][2])
    assert.are.equal(4, samples[2][2])
  end)

  it("honours OAR_DATA_DIR through data_dir()", function()
    assert.are.equal("/x/y", fm.data_dir("/x/y"))
    local env = os.getenv("OAR_DATA_DIR")
    if env and env ~= "" then
      assert.are.equal(env, fm.data_dir())
    else
      assert.are.equal("/usr/share/datasets/fashion-mnist", fm.data_dir())
    end
  end)

  it("checks that images and labels agree", function()
    local bad = path("fm_bad")
    os.execute("mkdir -p '" .. bad .. "'")
    idx.write(bad .. "/train-images-idx3-ubyte.gz", { 2, 28, 28 }, img_bytes({ 0, 0 }))
    idx.write(bad .. "/train-labels-idx1-ubyte.gz", { 3 }, { 1, 2, 3 })
    assert.matches("holds 2 images but .* holds 3 labels", errmsg(fm.load, "train", bad))
    idx.write(bad .. "/t10k-images-idx3-ubyte.gz", { 1, 28, 28 }, img_bytes({ 0 }))
    idx.write(bad .. "/t10k-labels-idx1-ubyte.gz", { 1 }, { 12 })
    assert.matches("label 12 of item 0 is outside 0..9", errmsg(fm.load, "test", bad))
    idx.write(bad .. "/t10k-labels-idx1-ubyte.gz", { 1, 28, 28 }, img_bytes({ 0 }))
    assert.matches("IDX magic number 2051, expected 2049", errmsg(fm.load, "test", bad))
  end)

  it("says how to install the data when it is absent", function()
    local empty = path("empty")
    os.execute("mkdir -p '" .. empty .. "'")
    assert.are.equal("Fashion-MNIST not found in " .. empty .. ": install it with " ..
      "`apt-get install dataset-fashion-mnist`", errmsg(fm.load, "train", empty))
    assert.are.equal("Fashion-MNIST not found in " .. empty .. ": install it with " ..
      "`apt-get install dataset-fashion-mnist`", errmsg(fm.train, { data_dir = empty }))
    local half = path("half")
    os.execute("mkdir -p '" .. half .. "'")
    idx.write(half .. "/train-images-idx3-ubyte.gz", { 1, 28, 28 }, img_bytes({ 0 }))
    assert.are.equal("Fashion-MNIST in " .. half ..
      " is incomplete: train-labels-idx1-ubyte(.gz) is missing", errmsg(fm.load, "train", half))
  end)

  it("rejects a bad split or options", function()
    assert.has_error(function() fm.load("validation", dir) end,
      "oar.dataset.fashion_mnist.load: split must be \"train\" or \"test\", got validation")
    assert.has_error(function() fm.load("train", 5) end)
    assert.has_error(function() fm.load("train", { data_dir = dir, max_items = -1 }) end)
  end)
end)

local real_dir = "/usr/share/datasets/fashion-mnist"
local have_real = io.open(real_dir .. "/t10k-labels-idx1-ubyte.gz", "rb")
if have_real then have_real:close() end

describe("oar.dataset.fashion_mnist on the installed files", function()
  if not have_real then
    pending("Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)")
    return
  end

  it("has 10000 test samples, 1000 per class, and the right first records", function()
    local d = fm.load("test", real_dir)
    assert.are.equal(10000, d.count)
    local counts = {}
    for i = 0, d.count - 1 do
      local l = tonumber(d.labels[i])
      counts[l] = (counts[l] or 0) + 1
    end
    for c = 0, 9 do assert.are.equal(1000, counts[c]) end
    -- zcat t10k-labels-idx1-ubyte.gz | od -An -tu1 -j8 -N10
    --   -> 9 2 1 1 6 1 4 6 5 7
    local first = { 9, 2, 1, 1, 6, 1, 4, 6, 5, 7 }
    for i = 1, 10 do assert.are.equal(first[i], tonumber(d.labels[i - 1])) end
    -- zcat t10k-images-idx3-ubyte.gz | od -An -tu1 -j16 -N784 -v |
    --   awk '{for(i=1;i<=NF;i++)s+=$i} END{print s}'   -> 33456
    local sum = 0
    for k = 0, 783 do sum = sum + (d.images[k] + 1) * 255 / 2 end
    assert.are.equal(33456, math.floor(sum + 0.5))
  end)

  it("has 60000 training samples; the first labels and image match od", function()
    local d = fm.load("train", { data_dir = real_dir, max_items = 10 })
    assert.are.equal(10, d.count)
    -- zcat train-labels-idx1-ubyte.gz | od -An -tu1 -j8 -N10 -> 9 0 0 3 0 2 7 2 5 5
    local first = { 9, 0, 0, 3, 0, 2, 7, 2, 5, 5 }
    for i = 1, 10 do assert.are.equal(first[i], tonumber(d.labels[i - 1])) end
    -- zcat train-images-idx3-ubyte.gz | od -An -tu1 -j16 -N784 -v | awk ... -> 76247, max 255
    local sum, max = 0, -2
    for k = 0, 783 do
      sum = sum + (d.images[k] + 1) * 255 / 2
      if d.images[k] > max then max = d.images[k] end
    end
    assert.are.equal(76247, math.floor(sum + 0.5))
    assert.are.equal(1, max)
    -- the headers say 60000 (read without the pixels)
    local im = idx.read(real_dir .. "/train-images-idx3-ubyte.gz", { magic = 2051, max_items = 0 })
    local lb = idx.read(real_dir .. "/train-labels-idx1-ubyte.gz", { magic = 2049, max_items = 0 })
    assert.are.same({ 60000, 28, 28 }, im.dims)
    assert.are.same({ 60000 }, lb.dims)
  end)

  it("reads the test set through the reader creator", function()
    local n, lo, hi = 0, math.huge, -math.huge
    local first
    for s in fm.test({ data_dir = real_dir })() do
      n = n + 1
      first = first or s
      assert.are.equal(784, #s[1])
      if s[2] < lo then lo = s[2] end
      if s[2] > hi then hi = s[2] end
    end
    assert.are.equal(10000, n)
    assert.are.equal(0, lo)
    assert.are.equal(9, hi)
    assert.are.equal(9, first[2])
  end)
end)
