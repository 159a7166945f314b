-- oar.repl: an interactive LuaJIT prompt with oar loaded.
--
--   luajit -e 'require("oar.repl").run()'      (or the `oar` script in bin/)
--
-- Each line is first tried as an expression (`return <line>`), so `t` or
-- `layers.fc{...}` prints its value; statements run as they are. An
-- unfinished chunk (an open `function`, `do`, table...) continues on the next
-- line. Results print by type: Tensors, Variables and Programs with their own
-- tostring, tables as a short listing. GNU readline gives line editing and a
-- history file (~/.oar_history) when libreadline is installed. `print` is
-- left alone.
local ffi = require("ffi")

local M = {}

-- ---- line input -----------------------------------------------------------
pcall(ffi.cdef, "int isatty(int fd);")
local readline
if ffi.C.isatty(0) == 1 then
  local ok, rl = pcall(ffi.load, "readline")
  if not ok then ok, rl = pcall(ffi.load, "libreadline.so.8") end
  if ok then
    local cdef_ok = pcall(ffi.cdef, [[
      char *readline(const char *prompt);
      void add_history(const char *line);
      int read_history(const char *filename);
      int write_history(const char *filename);
    ]])
    if cdef_ok or pcall(function() return rl.readline end) then readline = rl end
  end
end

local history_file = (os.getenv("HOME") or ".") .. "/.oar_history"

local function read_line(prompt)
  if readline then
    local p = readline.readline(prompt)
    if p == nil then return nil end
    local line = ffi.string(p)
    ffi.C.free(p)
    if line:match("%S") then readline.add_history(line) end
    return line
  end
  io.stdout:write(prompt)
  io.stdout:flush()
  return io.read("*l")
end

-- ---- printing ---------------------------------------------------------------
local function has_tostring(v)
  local mt = getmetatable(v)
  return mt and mt.__tostring
end

local function show(v, depth)
  depth = depth or 0
  local t = type(v)
  if t == "string" then return string.format("%q", v) end
  if t ~= "table" or has_tostring(v) then return tostring(v) end
  if depth > 1 then return tostring(v) end
  local parts = {}
  for i = 1, #v do
    if i > 20 then parts[#parts + 1] = "..." break end
    parts[#parts + 1] = show(v[i], depth + 1)
  end
  local keys = {}
  for k in pairs(v) do
    if not (type(k) == "number" and k >= 1 and k <= #v and k % 1 == 0) then keys[#keys + 1] = k end
  end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  for i, k in ipairs(keys) do
    if i > 20 then parts[#parts + 1] = "..." break end
    local key = (type(k) == "string" and k:match("^[%a_][%w_]*$")) and k or "[" .. show(k, 2) .. "]"
    parts[#parts + 1] = key .. " = " .. show(v[k], depth + 1)
  end
  return "{" .. table.concat(parts, ", ") .. "}"
end

local function print_results(n, ...)
  for i = 1, n do
    io.stdout:write(show((select(i, ...))), i < n and "\t" or "\n")
  end
end

-- ---- evaluation -------------------------------------------------------------
local function pack(...) return { n = select("#", ...), ... } end

local function incomplete(err)
  return err ~= nil and err:find("<eof>", 1, true) ~= nil
end

-- the chunk as an expression, else as statements; `more` when either form
-- only lacks its end
local function compile(src, env)
  local fn, experr = loadstring("return " .. src, "=stdin")
  local err
  if not fn then fn, err = loadstring(src, "=stdin") end
  if fn then setfenv(fn, env) return fn end
  return nil, err, incomplete(err) or incomplete(experr)
end

-- Runs one chunk; returns false when it was incomplete (needs more lines).
function M.eval(src, env)
  local fn, err, more = compile(src, env)
  if not fn then
    if more then return false end
    io.stderr:write(err, "\n")
    return true
  end
  local res = pack(xpcall(fn, debug.traceback))
  if not res[1] then
    io.stderr:write(tostring(res[2]), "\n")
  elseif res.n > 1 then
    print_results(res.n - 1, unpack(res, 2, res.n))
  end
  return true
end

-- The environment: globals plus oar, layers and ffi.
function M.env()
  local oar = require("oar")
  return setmetatable({ oar = oar, layers = oar.layers, ffi = ffi }, { __index = _G, __newindex = _G })
end

function M.run()
  local env = M.env()
  if readline then readline.read_history(history_file) end
  io.stdout:write("oar REPL on ", jit and jit.version or _VERSION,
                  " -- `oar` and `layers` are loaded; Ctrl-D quits\n")
  local buffer = nil
  while true do
    local line = read_line(buffer and ">> " or "oar> ")
    if not line then break end
    buffer = buffer and (buffer .. "\n" .. line) or line
    if M.eval(buffer, env) then buffer = nil end
  end
  io.stdout:write("\n")
  if readline then readline.write_history(history_file) end
end

return M
