--- oar.fleet_ckpt_files: the file-system side of oar.fleet.Checkpointer:
-- directory listing, creation and removal, fsync, CRC-32 of a file, the
-- text manifest of a checkpoint set, and a serializer for the plain Lua
-- values (numbers, strings, booleans, tables of them) a worker saves.
-- Nothing here talks to the other workers.
-- @module oar.fleet_ckpt_files
local ffi = require("ffi")
local bit = require("bit")

local M = {}

pcall(ffi.cdef, [[
typedef struct { uint64_t d_ino; int64_t d_off; unsigned short d_reclen; unsigned char d_type; char d_name[256]; }
  oar_fckpt_dirent;
void *oar_fckpt_opendir(const char *name) __asm__("opendir");
oar_fckpt_dirent *oar_fckpt_readdir(void *dir) __asm__("readdir");
int oar_fckpt_closedir(void *dir) __asm__("closedir");
int oar_fckpt_mkdir(const char *path, unsigned int mode) __asm__("mkdir");
int oar_fckpt_open(const char *path, int flags) __asm__("open");
int oar_fckpt_fsync(int fd) __asm__("fsync");
int oar_fckpt_close(int fd) __asm__("close");
int oar_fckpt_getpid(void) __asm__("getpid");
]])

--- `dir/name` (without doubling a trailing slash of dir).
-- @tparam string dir
-- @tparam string name
-- @treturn string
-- @usage print(oar.fleet_ckpt_files.join("ckpt/", "MANIFEST"))   --> ckpt/MANIFEST
function M.join(dir, name) return (dir:gsub("/+$", "")) .. "/" .. name end
local join = M.join

--- The names in directory `dir` (without "." and ".."), sorted; nil when
-- it cannot be opened.
-- @tparam string dir
-- @treturn ?{string,...}
-- @usage for _, n in ipairs(oar.fleet_ckpt_files.list("ckpt") or {}) do print(n) end
function M.list(dir)
  local d = ffi.C.oar_fckpt_opendir(dir)
  if d == nil then return nil end
  local out = {}
  while true do
    local e = ffi.C.oar_fckpt_readdir(d)
    if e == nil then break end
    local n = ffi.string(e.d_name)
    if n ~= "." and n ~= ".." then out[#out + 1] = n end
  end
  ffi.C.oar_fckpt_closedir(d)
  table.sort(out)
  return out
end

--- Whether `path` is a directory.
-- @tparam string path
-- @treturn bool
-- @usage if oar.fleet_ckpt_files.is_dir("ckpt") then print("there") end
function M.is_dir(path)
  local d = ffi.C.oar_fckpt_opendir(path)
  if d == nil then return false end
  ffi.C.oar_fckpt_closedir(d)
  return true
end

--- Creates directory `path` and its parents; true when it exists afterwards.
-- @tparam string path
-- @treturn bool
-- @usage assert(oar.fleet_ckpt_files.mkdir_p("ckpt/run1"))
function M.mkdir_p(path)
  local prefix = path:sub(1, 1) == "/" and "/" or ""
  for part in path:gmatch("[^/]+") do
    prefix = prefix .. part
    ffi.C.oar_fckpt_mkdir(prefix, tonumber("755", 8))
    prefix = prefix .. "/"
  end
  return M.is_dir(path)
end

--- Removes `path` and everything under it (nothing when it is not there).
-- @tparam string path
-- @usage oar.fleet_ckpt_files.remove_tree("ckpt/.tmp-step-100-42")
function M.remove_tree(path)
  local names = M.list(path)
  if names then
    for _, n in ipairs(names) do M.remove_tree(join(path, n)) end
  end
  os.remove(path)
end

--- Flushes a file or a directory to the disk (fsync); true on success.
-- @tparam string path
-- @treturn bool
-- @usage oar.fleet_ckpt_files.fsync("ckpt")
function M.fsync(path)
  local fd = ffi.C.oar_fckpt_open(path, 0)   -- O_RDONLY: enough for fsync, directories too
  if fd < 0 then return false end
  local ok = ffi.C.oar_fckpt_fsync(fd) == 0
  ffi.C.oar_fckpt_close(fd)
  return ok
end

--- This process's id.
-- @treturn int
-- @usage print(oar.fleet_ckpt_files.pid())
function M.pid() return ffi.C.oar_fckpt_getpid() end

local crc_table = {}
for i = 0, 255 do
  local c = i
  for _ = 1, 8 do
    if bit.band(c, 1) ~= 0 then c = bit.bxor(bit.rshift(c, 1), 0xEDB88320) else c = bit.rshift(c, 1) end
  end
  crc_table[i] = c
end

local function crc_update(crc, s)
  local p = ffi.cast("const uint8_t *", s)
  crc = bit.bnot(crc)
  for i = 0, #s - 1 do
    crc = bit.bxor(bit.rshift(crc, 8), crc_table[bit.band(bit.bxor(crc, p[i]), 255)])
  end
  return bit.bnot(crc)
end

--- The CRC-32 (IEEE) of a string, as 8 hex digits.
-- @tparam string s
-- @treturn string
-- @usage print(oar.fleet_ckpt_files.crc32_string("123456789"))   --> cbf43926
function M.crc32_string(s) return bit.tohex(crc_update(0, s)) end

--- The size and CRC-32 (8 hex digits) of file `path`; nil and a reason
-- when it cannot be read.
-- @tparam string path
-- @treturn ?int size in bytes
-- @treturn string the CRC-32, or the reason
-- @usage local size, crc = oar.fleet_ckpt_files.size_crc("ckpt/step-000000100/persistables")
function M.size_crc(path)
  local f, err = io.open(path, "rb")
  if not f then return nil, err end
  local crc, size = 0, 0
  while true do
    local s = f:read(1048576)
    if not s then break end
    crc = crc_update(crc, s)
    size = size + #s
  end
  f:close()
  return size, bit.tohex(crc)
end

--- Writes `text` into file `path` and flushes it to the disk.
-- @tparam string path
-- @tparam string text
-- @treturn bool
-- @treturn ?string the reason on failure
-- @usage assert(oar.fleet_ckpt_files.write_synced("ckpt/notes", "hello\n"))
function M.write_synced(path, text)
  local f, err = io.open(path, "wb")
  if not f then return false, err end
  local ok, werr = f:write(text)
  if ok then ok, werr = f:flush() end
  f:close()
  if not ok then return false, werr end
  if not M.fsync(path) then return false, "fsync failed" end
  return true
end

--- The whole content of file `path`, or nil and a reason.
-- @tparam string path
-- @treturn ?string
-- @usage local s = oar.fleet_ckpt_files.read_all("ckpt/step-000000100/MANIFEST")
function M.read_all(path)
  local f, err = io.open(path, "rb")
  if not f then return nil, err end
  local s = f:read("*a")
  f:close()
  return s
end

-- ---- plain values ------------------------------------------------------------

local function ser(v, out, depth)
  local t = type(v)
  if t == "number" then
    if v ~= v or v == math.huge or v == -math.huge then error("a number that is NaN or infinite", 0) end
    out[#out + 1] = string.format("%.17g", v)
  elseif t == "string" then
    out[#out + 1] = string.format("%q", v)
  elseif t == "boolean" or t == "nil" then
    out[#out + 1] = tostring(v)
  elseif t == "table" and getmetatable(v) == nil then
    if depth > 32 then error("tables nested deeper than 32", 0) end
    local keys = {}
    for k in pairs(v) do
      if type(k) ~= "string" and type(k) ~= "number" then error("a table key that is a " .. type(k), 0) end
      keys[#keys + 1] = k
    end
    table.sort(keys, function(a, b)
      if type(a) == type(b) then return a < b end
      return type(a) == "number"
    end)
    out[#out + 1] = "{"
    for _, k in ipairs(keys) do
      out[#out + 1] = "["
      ser(k, out, depth + 1)
      out[#out + 1] = "]="
      ser(v[k], out, depth + 1)
      out[#out + 1] = ","
    end
    out[#out + 1] = "}"
  else
    error("a " .. t .. (t == "table" and " with a metatable" or ""), 0)
  end
end

--- A plain value (number, string, boolean, nil, tables of them without
-- metatables or cycles) as text that `decode` turns back into it.
-- @param v the value
-- @treturn ?string the text, or nil and the reason
-- @treturn ?string the reason
-- @usage local text = oar.fleet_ckpt_files.encode({pos = 12, order = {3, 1, 2}})
function M.encode(v)
  local out = {}
  local ok, err = pcall(ser, v, out, 0)
  if not ok then return nil, err end
  return table.concat(out)
end

--- The value `encode` made text of (evaluated with no globals at all).
-- @tparam string text
-- @return the value, or nil and the reason
-- @usage local v = oar.fleet_ckpt_files.decode(oar.fleet_ckpt_files.encode({1, 2}))
function M.decode(text)
  local fn, err = loadstring("return " .. text, "=checkpoint value")
  if not fn then return nil, err end
  setfenv(fn, {})
  local ok, v = pcall(fn)
  if not ok then return nil, v end
  return v
end

-- ---- the manifest --------------------------------------------------------------

local MAGIC = "oar-fleet-checkpoint 1"

--- The text of a manifest. `m` holds job, step, workers, position (a
-- table of numbers), vars ({name, dtype, shape text} lists) and files
-- ({name, size, crc} lists); the last line is "end".
-- @tparam table m
-- @treturn string
-- @usage local text = oar.fleet_ckpt_files.manifest_text(m)
function M.manifest_text(m)
  local lines = { MAGIC, "job " .. string.format("%q", m.job), "step " .. m.step, "workers " .. m.workers,
                  "position " .. assert(M.encode(m.position)) }
  for _, v in ipairs(m.vars) do lines[#lines + 1] = "var " .. v[1] .. " " .. v[2] .. " " .. v[3] end
  for _, f in ipairs(m.files) do lines[#lines + 1] = string.format("file %s %d %s", f[1], f[2], f[3]) end
  lines[#lines + 1] = "end"
  return table.concat(lines, "\n") .. "\n"
end

--- Parses a manifest's text; nil and the reason when it is not one or is
-- cut short.
-- @tparam string text
-- @treturn ?table as for `manifest_text`
-- @treturn ?string the reason
-- @usage local m, why = oar.fleet_ckpt_files.parse_manifest(text)
function M.parse_manifest(text)
  local lines = {}
  for l in text:gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
  if lines[1] ~= MAGIC then return nil, "it is not an oar checkpoint manifest" end
  if lines[#lines] ~= "end" then return nil, "it is cut short (no final 'end' line)" end
  local m = { vars = {}, files = {} }
  for i = 2, #lines - 1 do
    local key, rest = lines[i]:match("^(%S+) (.*)$")
    if key == "job" then
      m.job = M.decode(rest)
    elseif key == "step" or key == "workers" then
      m[key] = tonumber(rest)
    elseif key == "position" then
      m.position = M.decode(rest)
    elseif key == "var" then
      local n, d, s = rest:match("^(%S+) (%S+) (%S+)$")
      if not n then return nil, "line " .. i .. " is malformed" end
      m.vars[#m.vars + 1] = { n, d, s }
    elseif key == "file" then
      local n, size, crc = rest:match("^(%S+) (%d+) (%x+)$")
      if not n then return nil, "line " .. i .. " is malformed" end
      m.files[#m.files + 1] = { n, tonumber(size), crc }
    else
      return nil, "line " .. i .. " is malformed"
    end
  end
  if type(m.job) ~= "string" or not m.step or not m.workers or type(m.position) ~= "table" or #m.files == 0 then
    return nil, "it lacks the job, step, workers, position or files"
  end
  return m
end

return M
