-- oar.repl_complete: what Tab offers at the REPL.
--
-- `wor<Tab>` completes globals and keywords; `a.b.c<Tab>` the fields of
-- `a.b` and `obj:m<Tab>` its methods, found through metatables (__index
-- tables, as classes are built) and, for the `oar` table, the modules it
-- loads on first use. Paths are walked by indexing only, never by calling.
-- Inside a string, file names are completed (readline does that part).
local M = {}

local KEYWORDS = {
  "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "if", "in",
  "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while",
}

-- Is the end of `before` (the line up to the cursor) inside a string literal?
function M.in_string(before)
  local quote
  local i = 1
  while i <= #before do
    local c = before:sub(i, i)
    if quote then
      if c == "\\" then i = i + 1
      elseif c == quote then quote = nil end
    elseif c == '"' or c == "'" then
      quote = c
    elseif c == "-" and before:sub(i, i + 1) == "--" then
      return false -- a comment: nothing to complete
    end
    i = i + 1
  end
  return quote ~= nil
end

-- Index without raising and without metamethods that could do harm: raw
-- first, then an ordinary (protected) index for __index tables and
-- functions (which may load a module).
local function get(v, k)
  if type(v) == "table" then
    local r = rawget(v, k)
    if r ~= nil then return r end
  elseif type(v) ~= "string" and type(v) ~= "userdata" and type(v) ~= "cdata" then
    return nil
  end
  local ok, r = pcall(function() return v[k] end)
  if ok then return r end
  return nil
end

-- Modules `oar` loads on first use (oar.io, oar.dataset...): the .lua files
-- and packages beside oar/init.lua that are not yet fields.
local HIDDEN_MODULES = { init = true, cdef = true, cdef_op = true, lib = true }
function M.lazy_modules(tbl)
  local oar = package.loaded["oar"]
  if tbl ~= oar or type(oar) ~= "table" then return {} end
  local path = package.searchpath("oar", package.path)
  local dir = path and path:match("^(.*)/init%.lua$")
  if not dir then return {} end
  local names = {}
  local p = io.popen('ls -1 "' .. dir .. '" 2>/dev/null')
  if not p then return {} end
  for f in p:lines() do
    local name = f:match("^([%a][%w_]*)%.lua$") or f:match("^([%a][%w_]*)$")
    if name and not HIDDEN_MODULES[name] and not name:match("^repl") and rawget(oar, name) == nil
        and package.loaded["oar." .. name] == nil then
      if f:match("%.lua$") or io.open(dir .. "/" .. f .. "/init.lua") then
        names[#names + 1] = name
      end
    end
  end
  p:close()
  table.sort(names)
  return names
end

-- Names an __index function may answer: the metatable's own fields and
-- those of the tables the function refers to (its upvalues: the class of
-- methods, a table of property getters...). Only guesses: fields() keeps
-- those that indexing the object really answers.
local function index_function_names(mt, idx, out)
  for k in pairs(mt) do
    if type(k) == "string" and k:sub(1, 2) ~= "__" then out[k] = true end
  end
  for i = 1, 200 do
    local name, up = debug.getupvalue(idx, i)
    if not name then break end
    if type(up) == "table" then
      for k in pairs(up) do
        if type(k) == "string" then out[k] = true end
      end
    end
  end
end

-- The names reachable from `v` by `.` (every field) or `:` (methods only):
-- its own fields, those of the __index tables up a few levels, and those an
-- __index function answers (checked by indexing v, protected).
function M.fields(v, methods_only)
  local seen, out = {}, {}
  local function add(k, val)
    if type(k) == "string" and k:match("^[%a_][%w_]*$") and not seen[k] then
      if not methods_only or type(val) == "function" then
        seen[k] = true
        out[#out + 1] = k
      end
    end
  end
  local guesses = {}
  local t, depth = v, 0
  while t ~= nil and depth < 8 do
    if type(t) == "table" then
      for k, val in pairs(t) do add(k, val) end
      if depth == 0 then
        for _, name in ipairs(M.lazy_modules(t)) do add(name, {}) end
      end
    end
    local mt = getmetatable(t)
    if type(mt) ~= "table" then break end
    local idx = rawget(mt, "__index")
    if type(idx) == "function" then
      index_function_names(mt, idx, guesses)
      break
    end
    if type(idx) ~= "table" or idx == t then break end
    t, depth = idx, depth + 1
  end
  local n = 0
  for k in pairs(guesses) do
    if not seen[k] and k:match("^[%a_][%w_]*$") then
      n = n + 1
      if n > 1000 then break end
      local ok, val = pcall(function() return v[k] end)
      if ok and val ~= nil then add(k, val) end
    end
  end
  table.sort(out)
  return out
end

-- Resolves a path of names `a.b.c` (no calls) in env; nil when any part is.
function M.resolve(path, env)
  local v
  for part in path:gmatch("[^.:]+") do
    if not part:match("^[%a_][%w_]*$") then return nil end
    if v == nil then
      v = get(env, part)
    else
      v = get(v, part)
    end
    if v == nil then return nil end
  end
  return v
end

-- The completions of `text` (the word before the cursor, as readline cut
-- it) on the line `before`; nil when the cursor is in a string (file names).
function M.candidates(text, before, env)
  before = before or text
  if M.in_string(before) then return nil end
  local out = {}
  local head, sep, partial = text:match("^(.*)([.:])([%w_]*)$")
  local names
  if head then
    if head == "" or not head:match("^[%a_][%w_.]*$") or head:match("%.%.") then return out end
    local v = M.resolve(head, env)
    if v == nil then return out end
    names = M.fields(v, sep == ":")
  else
    if not text:match("^[%a_]?[%w_]*$") then return out end
    partial, head, sep = text, "", ""
    local seen = {}
    names = {}
    local function add(k)
      if type(k) == "string" and k:match("^[%a_][%w_]*$") and not seen[k] then
        seen[k] = true
        names[#names + 1] = k
      end
    end
    for k in pairs(env) do add(k) end
    local mt = getmetatable(env)
    if mt and type(mt.__index) == "table" then for k in pairs(mt.__index) do add(k) end end
    for _, k in ipairs(KEYWORDS) do add(k) end
    table.sort(names)
  end
  local show_private = partial:sub(1, 1) == "_"
  for _, k in ipairs(names) do
    if k:sub(1, #partial) == partial and (show_private or k:sub(1, 1) ~= "_") then
      out[#out + 1] = head .. sep .. k
    end
  end
  return out
end

return M
