--- Reading and writing IDX files (the format of MNIST and Fashion-MNIST),
-- gzip-compressed or plain.
--
-- An IDX file is a big-endian header followed by the raw elements: two zero
-- bytes, the element type (0x08 = unsigned byte, the only type handled
-- here), the number of dimensions d, then d uint32 sizes, then the
-- elements. Read as one big-endian int32, the first four bytes are the
-- "magic number": 2051 for image files, 2049 for label files.
--
-- Files go through zlib, which reads a gzip stream or, when the file is not
-- gzip, the file as it is; so `name.gz` and `name` both work.
-- @module oar.dataset.idx
-- @usage
-- local idx = oar.dataset.idx
-- idx.write("/tmp/tiny-labels.gz", {3}, {1, 2, 3})
-- print(idx.read("/tmp/tiny-labels.gz").count)   --> 3
local ffi = require("ffi")
local argcheck = require("oar.argcheck")

local M = {}

local zdecl = {
  "typedef struct gzFile_s *gzFile;",
  "gzFile gzopen(const char *path, const char *mode);",
  "int gzread(gzFile file, void *buf, unsigned int len);",
  "int gzwrite(gzFile file, const void *buf, unsigned int len);",
  "int gzclose(gzFile file);",
  "const char *gzerror(gzFile file, int *errnum);",
}
-- Another module may already have declared some of these (a redefinition
-- error then only means the declaration exists): declare them one by one.
for _, decl in ipairs(zdecl) do pcall(ffi.cdef, decl) end

local function load_zlib()
  local errs = {}
  for _, name in ipairs({ "z", "libz.so.1" }) do
    local ok, lib = pcall(ffi.load, name)
    if ok then return lib end
    errs[#errs + 1] = tostring(lib)
  end
  error("oar.dataset.idx: cannot load zlib (tried \"z\" and \"libz.so.1\": " ..
        table.concat(errs, "; ") .. "); install it with `apt-get install zlib1g`", 0)
end

local zlib = load_zlib()
M.zlib = zlib

--- The magic number of image files (3 dimensions).
M.MAGIC_IMAGES = 2051
--- The magic number of label files (1 dimension).
M.MAGIC_LABELS = 2049
--- The element type code of unsigned bytes.
M.UBYTE = 0x08

local CHUNK = 1048576  -- gzread takes an unsigned int length: read in 1 MiB pieces

local function gz_message(gz)
  local errnum = ffi.new("int[1]")
  local msg = zlib.gzerror(gz, errnum)
  if msg ~= nil and ffi.string(msg) ~= "" then return ffi.string(msg) end
  return "read error " .. tonumber(errnum[0])
end

-- Reads exactly n bytes into buf (uint8_t*); returns the number actually read
-- (less than n only at the end of the file). Raises on a decompression error.
local function read_into(gz, path, buf, n)
  local got = 0
  while got < n do
    local want = math.min(CHUNK, n - got)
    local r = zlib.gzread(gz, buf + got, want)
    if r < 0 then
      error(string.format("%s: cannot decompress: %s", path, gz_message(gz)), 0)
    end
    if r == 0 then break end
    got = got + r
  end
  return got
end

local function be32(b, off)
  return ((b[off] * 256 + b[off + 1]) * 256 + b[off + 2]) * 256 + b[off + 3]
end

--- Reads an IDX file of unsigned bytes.
-- @tparam string path the file (gzipped or plain)
-- @tparam[opt] table opts expectations, each checked when given:
--
-- * `magic`: the magic number (e.g. `MAGIC_IMAGES`)
-- * `ndim`: the number of dimensions
-- * `count`: the first dimension (number of items)
-- * `dims`: the sizes after the first (e.g. `{28, 28}`)
-- * `max_items`: read only the first items (nil reads everything)
-- @treturn table `{path=, magic=, dtype=0x08, dims=, count=, item_size=, data=, nbytes=}`:
-- `dims` as in the file, `count` the items read, `data` a `uint8_t[count * item_size]`
-- @raise naming the file: missing, bad magic, unexpected sizes, truncated,
-- trailing bytes, a corrupt gzip stream
-- @usage local im = oar.dataset.idx.read(path, {magic = 2051, dims = {28, 28}})
function M.read(path, opts)
  if type(path) ~= "string" then
    error("oar.dataset.idx.read: path must be a string, got " .. type(path), 2)
  end
  opts = opts or {}
  if type(opts) ~= "table" then
    error("oar.dataset.idx.read: options must be a table, got " .. type(opts), 2)
  end
  argcheck.keys("oar.dataset.idx.read", opts, { "magic", "ndim", "count", "dims", "max_items" })
  local fh = io.open(path, "rb")
  if not fh then
    error(string.format("%s: no such file or not readable", path), 0)
  end
  fh:close()
  local gz = zlib.gzopen(path, "rb")
  if gz == nil then
    error(string.format("%s: cannot open", path), 0)
  end
  local ok, result = pcall(function()
    local head = ffi.new("uint8_t[4]")
    if read_into(gz, path, head, 4) < 4 then
      error(string.format("%s: truncated IDX file: the 4-byte magic number is incomplete", path), 0)
    end
    local magic = be32(head, 0)
    if head[0] ~= 0 or head[1] ~= 0 then
      error(string.format("%s: not an IDX file (first bytes %02x %02x %02x %02x, expected 00 00 <type> <ndim>)",
                          path, head[0], head[1], head[2], head[3]), 0)
    end
    if opts.magic and magic ~= opts.magic then
      error(string.format("%s: IDX magic number %d, expected %d", path, magic, opts.magic), 0)
    end
    local dtype, ndim = head[2], head[3]
    if dtype ~= M.UBYTE then
      error(string.format("%s: IDX element type 0x%02x not supported (only unsigned bytes, 0x08)",
                          path, dtype), 0)
    end
    if ndim < 1 then
      error(string.format("%s: IDX file with 0 dimensions", path), 0)
    end
    if opts.ndim and ndim ~= opts.ndim then
      error(string.format("%s: IDX file has %d dimensions, expected %d", path, ndim, opts.ndim), 0)
    end
    local dbuf = ffi.new("uint8_t[?]", 4 * ndim)
    if read_into(gz, path, dbuf, 4 * ndim) < 4 * ndim then
      error(string.format("%s: truncated IDX file: header ends inside the %d dimension sizes",
                          path, ndim), 0)
    end
    local dims = {}
    local item_size = 1
    for i = 1, ndim do
      dims[i] = be32(dbuf, 4 * (i - 1))
      if i > 1 then item_size = item_size * dims[i] end
    end
    if opts.count and dims[1] ~= opts.count then
      error(string.format("%s: IDX file holds %d items, expected %d", path, dims[1], opts.count), 0)
    end
    if opts.dims then
      for i, d in ipairs(opts.dims) do
        if dims[i + 1] ~= d then
          error(string.format("%s: IDX item shape %s, expected %s", path,
                              table.concat(dims, "x", 2), table.concat(opts.dims, "x")), 0)
        end
      end
    end
    local count = dims[1]
    if opts.max_items then count = math.min(count, opts.max_items) end
    local nbytes = count * item_size
    if nbytes > 2 ^ 40 then
      error(string.format("%s: IDX sizes %s are implausibly large", path, table.concat(dims, "x")), 0)
    end
    local data = ffi.new("uint8_t[?]", math.max(nbytes, 1))
    local got = read_into(gz, path, data, nbytes)
    if got < nbytes then
      error(string.format("%s: truncated IDX file: header says %s (%d bytes of data), found only %d bytes",
                          path, table.concat(dims, "x"), dims[1] * item_size,
                          got), 0)
    end
    if count == dims[1] then
      local extra = ffi.new("uint8_t[1]")
      if read_into(gz, path, extra, 1) > 0 then
        error(string.format("%s: IDX file has bytes after the %d expected by its header (%s)",
                            path, nbytes, table.concat(dims, "x")), 0)
      end
    end
    return { path = path, magic = magic, dtype = dtype, dims = dims, count = count,
             item_size = item_size, data = data, nbytes = nbytes }
  end)
  zlib.gzclose(gz)
  if not ok then error(result, 0) end
  return result
end

--- Writes an unsigned-byte IDX file (magic number `0x0800 + #dims`).
-- @tparam string path a path ending in `.gz` is gzip-compressed, any other is written plain
-- @tparam {int,...} dims the sizes (1 to 255 of them)
-- @tparam table|cdata data a Lua list of integers in [0, 255], or a
-- `uint8_t` pointer or array with `prod(dims)` bytes
-- @usage oar.dataset.idx.write("/tmp/two-images", {2, 2, 2}, {0, 255, 255, 0, 1, 2, 3, 4})
function M.write(path, dims, data)
  if type(path) ~= "string" then
    error("oar.dataset.idx.write: path must be a string", 2)
  end
  if type(dims) ~= "table" or #dims < 1 or #dims > 255 then
    error("oar.dataset.idx.write: dims must be a list of 1 to 255 sizes", 2)
  end
  local n = 1
  for i, d in ipairs(dims) do
    if type(d) ~= "number" or d < 0 or d ~= math.floor(d) or d >= 2 ^ 32 then
      error(string.format("oar.dataset.idx.write: dims[%d] = %s is not a size", i, tostring(d)), 2)
    end
    n = n * d
  end
  local bytes
  if type(data) == "table" then
    if #data ~= n then
      error(string.format("oar.dataset.idx.write: %d values for dims %s (%d expected)",
                          #data, table.concat(dims, "x"), n), 2)
    end
    bytes = ffi.new("uint8_t[?]", math.max(n, 1))
    for i = 1, n do
      local v = data[i]
      if type(v) ~= "number" or v < 0 or v > 255 or v ~= math.floor(v) then
        error(string.format("oar.dataset.idx.write: value %d (%s) is not a byte", i, tostring(v)), 2)
      end
      bytes[i - 1] = v
    end
  elseif type(data) == "cdata" then
    local size = ffi.sizeof(data)  -- a number for arrays, nil for bare pointers
    if size and size < n then
      error(string.format("oar.dataset.idx.write: the data array holds %d bytes, dims %s need %d",
                          size, table.concat(dims, "x"), n), 2)
    end
    bytes = ffi.cast("const uint8_t *", data)
  else
    error("oar.dataset.idx.write: data must be a table of bytes or a uint8_t pointer", 2)
  end
  local head = ffi.new("uint8_t[?]", 4 + 4 * #dims)
  head[2], head[3] = M.UBYTE, #dims
  for i, d in ipairs(dims) do
    local o = 4 * i
    head[o] = math.floor(d / 16777216) % 256
    head[o + 1] = math.floor(d / 65536) % 256
    head[o + 2] = math.floor(d / 256) % 256
    head[o + 3] = d % 256
  end
  local mode = path:match("%.gz$") and "wb" or "wbT"  -- "T": no compression
  local gz = zlib.gzopen(path, mode)
  if gz == nil then error(string.format("%s: cannot create", path), 2) end
  local function put(buf, len)
    local off = 0
    while off < len do
      local w = math.min(CHUNK, len - off)
      if zlib.gzwrite(gz, ffi.cast("const uint8_t *", buf) + off, w) ~= w then
        local msg = gz_message(gz)
        zlib.gzclose(gz)
        error(string.format("%s: write failed: %s", path, msg), 3)
      end
      off = off + w
    end
  end
  put(head, 4 + 4 * #dims)
  put(bytes, n)
  if zlib.gzclose(gz) ~= 0 then
    error(string.format("%s: write failed on close", path), 2)
  end
end

return M
