-- spec/helpers/files.lua — scratch directories and whole-file reads and
-- writes for specs that save and load files.
--
--   local F = require("spec.helpers.files")
--   local dir = F.tmpdir()   -- a fresh path, not created yet
--   ...
--   F.rmtree(dir)
local M = {}

-- a fresh path for a scratch directory (not created): os.tmpname() gives
-- /tmp/lua_XXXXXX, a name of our own making, so it is safe in a shell
function M.tmpdir()
  local d = os.tmpname()
  os.remove(d)
  return d
end

-- removes d and everything below it (d comes from tmpdir)
function M.rmtree(d) os.execute("rm -rf '" .. d .. "'") end

-- the names in directory d (dot files included), sorted
function M.list_dir(d)
  local p = io.popen("ls -A '" .. d .. "'")
  local out = {}
  for l in p:lines() do out[#out + 1] = l end
  p:close()
  table.sort(out)
  return out
end

function M.read_bytes(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

function M.write_bytes(path, s)
  local f = assert(io.open(path, "wb"))
  f:write(s)
  f:close()
end

-- whether path can be opened for reading
function M.exists(path)
  local f = io.open(path, "rb")
  if f then f:close() return true end
  return false
end

return M
