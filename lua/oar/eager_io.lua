--- oar.save and oar.load (docs/eager.md): a tensor, or a Lua table of
-- tensors, numbers, strings and booleans, in one file written atomically;
-- part of oar.eager (eager.lua installs them).
-- @module oar.eager_io
local ffi = require("ffi")
local lib = require("oar.lib")
local tensor = require("oar.tensor")

local C = lib.C
local wrap = tensor.wrap
local is_tensor = tensor.is_tensor

local M = {}
local fail   -- oar.eager's: the message prefixed with the user's line

local MAGIC = "OAR-EAGER-1\n"

local function encode(v, out, depth)
  if depth > 64 then fail("oar.save: tables nest deeper than 64 (a cycle?)") end
  local tv = type(v)
  if is_tensor(v) then
    local bytes, n = ffi.new("void *[1]"), ffi.new("size_t[1]")
    if C.oar_tensor_serialize(v.handle, bytes, n) ~= 0 then fail("oar.save: " .. lib.last_error()) end
    local s = ffi.string(bytes[0], n[0])
    C.oar_free(bytes[0])
    out[#out + 1] = "T" .. #s .. ":" .. s
  elseif tv == "number" then
    out[#out + 1] = "N" .. string.format("%.17g", v) .. ";"
  elseif tv == "string" then
    out[#out + 1] = "S" .. #v .. ":" .. v
  elseif tv == "boolean" then
    out[#out + 1] = v and "B1" or "B0"
  elseif tv == "table" then
    local keys = {}
    for k in pairs(v) do
      if type(k) ~= "string" and type(k) ~= "number" then
        fail("oar.save: table keys must be strings or numbers, got " .. type(k))
      end
      keys[#keys + 1] = k
    end
    out[#out + 1] = "{" .. #keys .. ";"
    for _, k in ipairs(keys) do
      encode(k, out, depth + 1)
      encode(v[k], out, depth + 1)
    end
  else
    fail("oar.save: cannot save a " .. tv .. " (tensors, numbers, strings, booleans and tables of them)")
  end
end

--- Saves a tensor or a Lua table of tensors, numbers, strings and booleans, atomically.
-- @usage oar.save({w = oar.ones(2), step = 3}, os.tmpname())
function M.save(obj, path)
  if type(path) ~= "string" then fail("oar.save: expected a path string") end
  local out = { MAGIC }
  encode(obj, out, 0)
  local s = table.concat(out)
  if C.oar_file_write(path, s, #s) ~= 0 then fail("oar.save: " .. lib.last_error()) end
end

local function decode(s, pos, path)
  local tag = s:sub(pos, pos)
  local function bad() fail(string.format("oar.load: %s is malformed at byte %d", path, pos)) end
  if tag == "T" or tag == "S" then
    local len, after = s:match("^(%d+):()", pos + 1)
    if not len then bad() end
    len = tonumber(len)
    local body = s:sub(after, after + len - 1)
    if #body ~= len then bad() end
    if tag == "S" then return body, after + len end
    local out, used = ffi.new("oar_tensor_t *[1]"), ffi.new("size_t[1]")
    if C.oar_tensor_deserialize(body, len, used, out) ~= 0 then fail("oar.load: " .. lib.last_error()) end
    return wrap(out[0]), after + len
  elseif tag == "N" then
    local num, after = s:match("^([^;]+);()", pos + 1)
    if not num or not tonumber(num) then bad() end
    return tonumber(num), after
  elseif tag == "B" then
    return s:sub(pos + 1, pos + 1) == "1", pos + 2
  elseif tag == "{" then
    local n, after = s:match("^(%d+);()", pos + 1)
    if not n then bad() end
    local t = {}
    pos = after
    for _ = 1, tonumber(n) do
      local k, v
      k, pos = decode(s, pos, path)
      v, pos = decode(s, pos, path)
      t[k] = v
    end
    return t, pos
  end
  bad()
end

--- Loads what `oar.save` wrote.
-- @usage local p = os.tmpname(); oar.save(oar.ones(2), p); local t = oar.load(p)
function M.load(path)
  if type(path) ~= "string" then fail("oar.load: expected a path string") end
  local data, n = ffi.new("void *[1]"), ffi.new("size_t[1]")
  if C.oar_file_read(path, data, n) ~= 0 then fail("oar.load: " .. lib.last_error()) end
  local s = ffi.string(data[0], n[0])
  C.oar_free(data[0])
  if s:sub(1, #MAGIC) ~= MAGIC then fail("oar.load: " .. path .. " was not written by oar.save") end
  local v = decode(s, #MAGIC + 1, path)
  return v
end

--- Puts save and load into oar.eager (eager.lua calls it).
-- @tparam table eager the oar.eager module
-- @local
function M.install(eager)
  fail = eager._fail
  eager.save, eager.load = M.save, M.load
  eager._internal_source(debug.getinfo(1, "S").source)
end

return M
