--- Zalando's Fashion-MNIST: 28x28 grey images of clothes in 10 classes,
-- 60000 training and 10000 test samples.
--
-- The data come from the IDX files that Debian's `dataset-fashion-mnist`
-- package installs (`tools/bootstrap` installs it). The directory is, in
-- order: the `data_dir` option, `$OAR_DATA_DIR`,
-- `/usr/share/datasets/fashion-mnist`; each file may be gzipped (`name.gz`)
-- or plain.
--
-- Pixels are scaled to [-1, 1] (`x / 255 * 2 - 1`), as Fluid's mnist reader
-- does; labels are integers 0..9 (names in `classes`). Three ways in:
--
-- * `train()`, `test()`: Fluid-style reader creators of samples `{image, label}`;
-- * `load(split)`: a whole split as contiguous FFI arrays;
-- * `batches(split, size)`: an iterator of ready-made Tensors (fast: memory copies).
-- @module oar.dataset.fashion_mnist
-- @usage
-- local fm = oar.dataset.fashion_mnist
-- for images, labels, n in fm.batches("train", 64, {seed = 1}) do
--   -- images: float32 [n, 784], labels: int64 [n, 1]
-- end
local ffi = require("ffi")
local argcheck = require("oar.argcheck")
local idx = require("oar.dataset.idx")
local reader = require("oar.reader")

local M = {}

--- Where Debian installs the files.
M.DEFAULT_DIR = "/usr/share/datasets/fashion-mnist"
--- Image height.
M.ROWS = 28
--- Image width.
M.COLS = 28
--- Pixels per image (784).
M.IMAGE_SIZE = 784
--- Class names, `classes[label + 1]`.
M.classes = { "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
              "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot" }

local FILES = {
  train = { images = "train-images-idx3-ubyte", labels = "train-labels-idx1-ubyte" },
  test = { images = "t10k-images-idx3-ubyte", labels = "t10k-labels-idx1-ubyte" },
}

-- pixel byte -> [-1, 1]
local SCALE = ffi.new("float[256]")
for b = 0, 255 do SCALE[b] = b / 255 * 2 - 1 end

--- The directory the data are read from.
-- @tparam[opt] string dir a directory; nil gives `$OAR_DATA_DIR` or `DEFAULT_DIR`
-- @treturn string
-- @usage print(oar.dataset.fashion_mnist.data_dir())
function M.data_dir(dir)
  if dir ~= nil then
    if type(dir) ~= "string" or dir == "" then
      error("oar.dataset.fashion_mnist: data_dir must be a non-empty string, got " .. tostring(dir), 3)
    end
    return dir
  end
  local env = os.getenv("OAR_DATA_DIR")
  if env and env ~= "" then return env end
  return M.DEFAULT_DIR
end

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() return true end
  return false
end

-- The path of a data file, trying name.gz then name.
local function locate(dir, name)
  for _, candidate in ipairs({ dir .. "/" .. name .. ".gz", dir .. "/" .. name }) do
    if exists(candidate) then return candidate end
  end
  return nil
end

local function check_split(split, who)
  if FILES[split] == nil then
    error(string.format("oar.dataset.fashion_mnist.%s: split must be \"train\" or \"test\", got %s",
                        who, tostring(split)), 3)
  end
end

-- Options may be given as a data_dir string or a table {data_dir=, max_items=}
-- (batches takes more: `allowed`).
local LOAD_OPTIONS = { "data_dir", "max_items" }
local function options(opts, who, allowed)
  if opts == nil then return {} end
  if type(opts) == "string" then return { data_dir = opts } end
  if type(opts) ~= "table" then
    error(string.format("oar.dataset.fashion_mnist.%s: options must be a table or a directory, got %s",
                        who, type(opts)), 3)
  end
  argcheck.keys("oar.dataset.fashion_mnist." .. who, opts, allowed or LOAD_OPTIONS)
  return opts
end

-- Both files of a split, or the error saying how to get them.
local function paths(split, dir)
  local files = FILES[split]
  local images, labels = locate(dir, files.images), locate(dir, files.labels)
  if not images and not labels then
    local any = false
    for _, f in pairs(FILES) do
      if locate(dir, f.images) or locate(dir, f.labels) then any = true end
    end
    if not any then
      error(string.format("Fashion-MNIST not found in %s: install it with " ..
                          "`apt-get install dataset-fashion-mnist`", dir), 0)
    end
  end
  if not images or not labels then
    error(string.format("Fashion-MNIST in %s is incomplete: %s(.gz) is missing", dir,
                        images and files.labels or files.images), 0)
  end
  return images, labels
end

local cache = setmetatable({}, { __mode = "v" })

-- The float images of a loaded set (or of a part of one that
-- oar.dataset.split made: it keeps this metatable and `base`), scaled from
-- the pixels on first use and kept on the base set, so parts share them.
-- Kept lazy because 60000 float images are 188 MB where the bytes are 47.
local LAZY_IMAGES = {
  __index = function(t, k)
    if k ~= "images" then return nil end
    local base = rawget(t, "base") or t
    local images = rawget(base, "images")
    if images == nil then
      local px, n = rawget(base, "pixels"), rawget(base, "count") * M.IMAGE_SIZE
      images = ffi.new("float[?]", math.max(n, 1))
      for i = 0, n - 1 do images[i] = SCALE[px[i]] end
      rawset(base, "images", images)
    end
    return images
  end,
}

--- Loads a whole split into FFI arrays. Loaded splits are cached while
-- something still refers to them.
-- @tparam string split `"train"` or `"test"`
-- @tparam[opt] string|table opts a directory, or `{data_dir=, max_items=}`
-- (`max_items` reads only the first items; handy for quick checks)
-- @treturn table `{split=, count=N, rows=28, cols=28, image_size=784,
-- pixels=, images=, labels=, image_path=, label_path=}`: `pixels` the raw
-- bytes, a `uint8_t[N*784]` (row-major, 0..255); `images` the same scaled
-- to [-1, 1], a `float[N*784]` made on first use (4x the memory: `batches`
-- never needs it, it scales each batch from `pixels`); `labels` an
-- `int64_t[N]` (0..9)
-- @raise when the files are missing (naming the Debian package), truncated or corrupt
-- @usage
-- local d = oar.dataset.fashion_mnist.load("test", {max_items = 100})
-- print(d.count, d.labels[0])
function M.load(split, opts)
  check_split(split, "load")
  opts = options(opts, "load")
  local dir = M.data_dir(opts.data_dir)
  local max = opts.max_items
  if max ~= nil and (type(max) ~= "number" or max < 0 or max % 1 ~= 0) then
    error("oar.dataset.fashion_mnist.load: max_items must be a non-negative integer, got " ..
          tostring(max), 2)
  end
  local key = dir .. "\0" .. split .. "\0" .. tostring(max)
  if cache[key] then return cache[key] end
  local image_path, label_path = paths(split, dir)
  local im = idx.read(image_path, { magic = idx.MAGIC_IMAGES, ndim = 3, dims = { M.ROWS, M.COLS },
                                    max_items = max })
  local lb = idx.read(label_path, { magic = idx.MAGIC_LABELS, ndim = 1, max_items = max })
  if im.dims[1] ~= lb.dims[1] then
    error(string.format("Fashion-MNIST %s: %s holds %d images but %s holds %d labels",
                        split, image_path, im.dims[1], label_path, lb.dims[1]), 0)
  end
  local n = im.count
  local labels = ffi.new("int64_t[?]", math.max(n, 1))
  for i = 0, n - 1 do
    local l = lb.data[i]
    if l > 9 then
      error(string.format("%s: label %d of item %d is outside 0..9", label_path, l, i), 0)
    end
    labels[i] = l
  end
  local data = setmetatable({ split = split, count = n, rows = M.ROWS, cols = M.COLS,
                              image_size = M.IMAGE_SIZE, pixels = im.data, labels = labels,
                              image_path = image_path, label_path = label_path }, LAZY_IMAGES)
  cache[key] = data
  return data
end

local function creator(split)
  return function(opts)
    opts = options(opts, split)
    local dir = M.data_dir(opts.data_dir)
    paths(split, dir)  -- fail now, not at the first sample, when the files are absent
    return function()
      local data = M.load(split, { data_dir = opts.data_dir, max_items = opts.max_items })
      local i, n, images, labels = -1, data.count, data.images, data.labels
      return function()
        i = i + 1
        if i >= n then return nil end
        local img, base = {}, i * 784
        for k = 1, 784 do img[k] = images[base + k - 1] end
        return { img, tonumber(labels[i]) }
      end
    end
  end
end

local train_creator, test_creator = creator("train"), creator("test")

--- A reader creator over the 60000 training samples (checks now that the files exist).
-- Each sample is `{image, label}`: `image` a Lua list of 784 numbers in
-- [-1, 1] (row-major 28x28), `label` an integer 0..9.
-- @tparam[opt] string|table opts as for `load`
-- @treturn function a reader creator
-- @usage
-- local reader = oar.reader.batch(oar.dataset.fashion_mnist.train(), 64)
function M.train(opts) return train_creator(opts) end

--- A reader creator over the 10000 test samples; as `train`.
-- @tparam[opt] string|table opts as for `load`
-- @treturn function a reader creator
-- @usage for sample in oar.dataset.fashion_mnist.test({max_items = 10})() do print(sample[2]) end
function M.test(opts) return test_creator(opts) end

--- Iterates over a split in batches of Tensors, filled by memory copies.
-- One iterator is one epoch: for a new order each epoch, pass a new seed
-- (e.g. `base + epoch`).
-- @tparam string|table split `"train"`, `"test"`, or a data set table: `load()`'s
-- result or a part of it made by `oar.dataset.split` (its `indices` pick the
-- samples; a training part shuffles by default, a validation part does not)
-- @tparam int batch_size samples per batch
-- @tparam[opt] table opts
--
-- * `shuffle`: reorder the samples (default true for `"train"`, false for `"test"`)
-- * `seed`: the shuffle's seed (nil: from the clock)
-- * `drop_last`: skip the last, shorter batch (default false)
-- * `image_shape`: per-sample shape, `{784}` by default; `{1, 28, 28}` for conv nets
-- * `data_dir`, `max_items`: as for `load`
-- @treturn function an iterator giving `images` (float32 `[n, image_shape...]`),
-- `labels` (int64 `[n, 1]`) and `n`, the batch's size
-- @usage
-- for images, labels, n in oar.dataset.fashion_mnist.batches("test", 500,
--     {image_shape = {1, 28, 28}}) do
--   local out = exe:run(test_prog, {feed = {img = images, label = labels}, fetch_list = {acc}})
-- end
function M.batches(split, batch_size, opts)
  local given
  if type(split) == "table" then
    given = split
    if type(given.count) ~= "number" or (rawget(given, "pixels") == nil and given.images == nil) or given.labels == nil then
      error("oar.dataset.fashion_mnist.batches: a data set table must come from load() or oar.dataset.split", 2)
    end
  else
    check_split(split, "batches")
  end
  if type(batch_size) ~= "number" or batch_size < 1 or batch_size % 1 ~= 0 then
    error("oar.dataset.fashion_mnist.batches: batch_size must be a positive integer, got " ..
          tostring(batch_size), 2)
  end
  opts = options(opts, "batches",
    { "shuffle", "seed", "drop_last", "image_shape", "data_dir", "max_items" })
  local shape = opts.image_shape or { M.IMAGE_SIZE }
  local per = 1
  if type(shape) ~= "table" then
    error("oar.dataset.fashion_mnist.batches: image_shape must be a list of sizes", 2)
  end
  for _, d in ipairs(shape) do
    if type(d) ~= "number" or d < 1 or d % 1 ~= 0 then
      error("oar.dataset.fashion_mnist.batches: image_shape must be a list of positive integers", 2)
    end
    per = per * d
  end
  if per ~= M.IMAGE_SIZE then
    error(string.format("oar.dataset.fashion_mnist.batches: image_shape {%s} holds %d values, an image has 784",
                        table.concat(shape, ", "), per), 2)
  end
  local tensor = require("oar.tensor")
  local data = given or M.load(split, { data_dir = opts.data_dir, max_items = opts.max_items })
  local n = data.count
  local shuffle = opts.shuffle
  if shuffle == nil then shuffle = ((data.part or data.split) == "train") end
  local order
  if shuffle or data.indices then
    order = ffi.new("int32_t[?]", math.max(n, 1))
    for i = 0, n - 1 do order[i] = data.indices and data.indices[i] or i end
    if shuffle then reader.rng(opts.seed):shuffle_array(order, n) end
  end
  -- raw bytes are scaled per batch (a table lookup per pixel) rather than
  -- copied from float images, so the float copy of the set is never made
  local pixels, labels = rawget(data, "pixels"), data.labels
  local images = not pixels and data.images
  local row_bytes = M.IMAGE_SIZE * ffi.sizeof("float")
  local function scale_row(x, j)
    local src = pixels + j * M.IMAGE_SIZE
    for k = 0, M.IMAGE_SIZE - 1 do x[k] = SCALE[src[k]] end
  end
  local pos = 0
  return function()
    local b = math.min(batch_size, n - pos)
    if b <= 0 or (opts.drop_last and b < batch_size) then return nil end
    local ishape = { b }
    for k, d in ipairs(shape) do ishape[k + 1] = d end
    local xt = tensor{ shape = ishape, dtype = "float32" }
    local yt = tensor{ shape = { b, 1 }, dtype = "int64" }
    local x, y = xt:data(), yt:data()
    if order then
      for i = 0, b - 1 do
        local j = order[pos + i]
        if pixels then scale_row(x + i * M.IMAGE_SIZE, j)
        else ffi.copy(x + i * M.IMAGE_SIZE, images + j * M.IMAGE_SIZE, row_bytes) end
        y[i] = labels[j]
      end
    else
      if pixels then
        for i = 0, b - 1 do scale_row(x + i * M.IMAGE_SIZE, pos + i) end
      else
        ffi.copy(x, images + pos * M.IMAGE_SIZE, b * row_bytes)
      end
      ffi.copy(y, labels + pos, b * ffi.sizeof("int64_t"))
    end
    pos = pos + b
    return xt, yt, b
  end
end

return M
