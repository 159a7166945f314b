--- Strict keyword arguments and strict module tables, with "did you mean".
--
-- Every oar function that takes a table of keyword arguments refuses a key it
-- does not know, naming the function, the key and the closest valid key:
--
--     layers.fc: unknown argument 'inptu' (did you mean 'input'?)
--
-- and a module table such as `oar` or `oar.layers` refuses a name it does not
-- have (`oar: no field 'layres' (did you mean 'layers'?)`). This module is a
-- leaf (it requires nothing from oar) so that any oar module may use it.
--
-- How to use it in a module:
--
--     local argcheck = require("oar.argcheck")
--     function M.save(dirname, opts)
--       opts = argcheck.keys("oar.io.save", opts, { "filename", "main_program" })
--       ...
--     end
--
-- Errors are raised at the user's line (the first stack frame outside
-- lua/oar/), like every other oar error: "script.lua:12: layers.fc: ...".
-- @module oar.argcheck
local M = {}

-- ---- where the user is -------------------------------------------------------
-- Sources under lua/oar/ are oar's own; the first frame outside them is the
-- user's. (Computed from this file's own path, so it works from a checkout
-- and from an installed tree alike.)
local own_prefix = debug.getinfo(1, "S").source:match("^(@.*oar/)argcheck%.lua$") or "@oar/"

local function user_location()
  local level = 2
  while true do
    local info = debug.getinfo(level, "Sl")
    if not info then return nil end
    if info.what ~= "C" and info.currentline and info.currentline > 0
        and info.source:sub(1, #own_prefix) ~= own_prefix then
      local src = info.source:sub(1, 1) == "@" and info.source:sub(2) or info.short_src
      return (src:gsub("^%./", "")) .. ":" .. info.currentline
    end
    level = level + 1
  end
end

--- Raises `msg` located at the user's line ("file:line: msg").
-- @tparam string msg the message
function M.raise(msg)
  local loc = user_location()
  if loc then error(loc .. ": " .. msg, 0) end
  error(msg, 0)
end

-- ---- suggestions ----------------------------------------------------------------

--- Edit distance between two strings (optimal string alignment: insertions,
-- deletions, substitutions and transpositions of neighbours each cost 1).
-- @tparam string a
-- @tparam string b
-- @treturn number the distance
-- @usage argcheck.distance("inptu", "input") --> 1
function M.distance(a, b)
  local la, lb = #a, #b
  if la == 0 then return lb end
  if lb == 0 then return la end
  local prev2, prev, cur = {}, {}, {}
  for j = 0, lb do prev[j] = j end
  for i = 1, la do
    cur = { [0] = i }
    local ca = a:byte(i)
    for j = 1, lb do
      local cb = b:byte(j)
      local cost = ca == cb and 0 or 1
      local d = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
      if i > 1 and j > 1 and ca == b:byte(j - 1) and a:byte(i - 1) == cb then
        d = math.min(d, prev2[j - 2] + 1)
      end
      cur[j] = d
    end
    prev2, prev = prev, cur
  end
  return prev[lb]
end

--- The candidate closest to `word`, or nil when none is close enough.
-- Case differences count as near misses; a candidate that `word` (2+
-- letters) is a prefix of, or that is a prefix (3+ letters) of `word`, counts too; otherwise the
-- distance must be at most a third of the longer word (at least 1, at most 3),
-- or the two must share a long start (5+ letters, 60% of `word`), or
-- `word` (4+ letters) must be a part of the candidate.
-- @tparam string word the misspelled name
-- @tparam table candidates list of names, or a set {name=true}
-- @treturn ?string the best candidate
-- @usage argcheck.suggest("activation", {"act", "input"}) --> "act"
function M.suggest(word, candidates)
  if type(word) ~= "string" then return nil end
  local list = {}
  if candidates[1] ~= nil then
    for _, c in ipairs(candidates) do list[#list + 1] = c end
  else
    for c in pairs(candidates) do if type(c) == "string" then list[#list + 1] = c end end
  end
  table.sort(list)
  local lw = word:lower()
  local best, best_score
  for _, c in ipairs(list) do
    local lc = c:lower()
    local d
    if lc == lw then
      d = 0
    else
      d = M.distance(lw, lc)
      -- "activation" for "act", "dtyp" for "dtype", "pool" for "pool_type"
      local limit = math.max(1, math.min(3, math.floor(math.max(#lw, #lc) / 3)))
      local prefix = (#lw >= 2 and lc:sub(1, #lw) == lw) or (#lc >= 3 and lw:sub(1, #lc) == lc)
      if d > limit then
        -- a long shared start: "persistent" for "persistable"
        local common = 0
        while common < math.min(#lw, #lc) and lw:byte(common + 1) == lc:byte(common + 1) do common = common + 1 end
        if prefix then d = limit + 0.5
        elseif common >= 5 and common >= 0.6 * #lw then d = limit + 0.6
        -- a part of the name: "nesterov" for "use_nesterov"
        elseif #lw >= 4 and lc:find(lw, 1, true) then d = limit + 0.7
        else d = nil end
      end
    end
    if d and (best_score == nil or d < best_score) then best, best_score = c, d end
  end
  return best
end

local function key_text(k)
  if type(k) == "string" then return "'" .. k .. "'" end
  if type(k) == "number" then return "[" .. tostring(k) .. "] (a positional value)" end
  return tostring(k)
end

--- The message for an unknown key, with a suggestion or the list of known keys.
-- @tparam string who the function, as the user calls it ("layers.fc")
-- @param key the unknown key
-- @tparam table known list (or set) of valid keys
-- @treturn string "who: unknown argument 'key' (did you mean 'x'?)"
function M.unknown_message(who, key, known)
  local s = M.suggest(key, known)
  if s then
    return string.format("%s: unknown argument %s (did you mean '%s'?)", who, key_text(key), s)
  end
  local list = {}
  if known[1] ~= nil then
    for _, c in ipairs(known) do list[#list + 1] = c end
  else
    for c in pairs(known) do list[#list + 1] = tostring(c) end
  end
  table.sort(list)
  return string.format("%s: unknown argument %s (valid: %s)", who, key_text(key), table.concat(list, ", "))
end

-- known lists are turned into sets once and remembered (lists by identity,
-- space-separated strings by value)
local sets = setmetatable({}, { __mode = "k" })
local string_sets = {}
local function words(str)
  local list = {}
  for w in str:gmatch("[^%s,]+") do list[#list + 1] = w end
  return list
end
local function as_set(known)
  if type(known) == "string" then
    local s = string_sets[known]
    if not s then
      s = {}
      for _, w in ipairs(words(known)) do s[w] = true end
      string_sets[known] = s
    end
    return s
  end
  local s = sets[known]
  if s then return s end
  s = {}
  if known[1] ~= nil then
    for _, k in ipairs(known) do s[k] = true end
  else
    for k in pairs(known) do s[k] = true end
  end
  sets[known] = s
  return s
end

--- Checks that every key of the table `args` is one of `known`.
-- Raises "who: unknown argument 'k' (did you mean 'x'?)" at the user's line
-- otherwise. `args` may be nil (nothing to check). Positional (integer) keys
-- are refused unless `opts.positional` is true (any) or a number n (keys 1..n).
-- @tparam string who the function as the user writes it ("layers.fc", "Program:clone")
-- @tparam ?table args the user's keyword table
-- @tparam table|string known list (or set) of valid key names, or one string
-- of names separated by spaces ("input size act name")
-- @tparam[opt] table opts `{positional=}`
-- @treturn ?table args, unchanged
-- @usage opts = argcheck.keys("Program:clone", opts, {"for_test"})
function M.keys(who, args, known, opts)
  if type(args) ~= "table" or getmetatable(args) ~= nil then return args end
  local set = as_set(known)
  local positional = opts and opts.positional
  for k in pairs(args) do
    if not set[k] then
      local ok = false
      if type(k) == "number" and k % 1 == 0 and k >= 1 then
        ok = positional == true or (type(positional) == "number" and k <= positional)
      end
      if not ok then
        M.raise(M.unknown_message(who, k, type(known) == "string" and words(known) or known))
      end
    end
  end
  return args
end

--- Joins lists of key names into one new list (common keys + own keys).
-- @tparam table ... lists of names
-- @treturn table the concatenation
-- @usage local FC = argcheck.join(COMMON, {"input", "size"})
function M.join(...)
  local out = {}
  for i = 1, select("#", ...) do
    for _, k in ipairs((select(i, ...))) do out[#out + 1] = k end
  end
  return out
end

--- Makes reading an unknown name from a module table an error.
-- `t.x` for a name `t` does not hold calls `fallback(t, name)` first (when
-- given) so that lazily loaded submodules keep working: a non-nil result is
-- returned. Otherwise the read raises "who: no field 'x' (did you mean 'y'?)".
-- `rawget(t, name)` still answers nil for probes. Names listed in
-- `opts.optional` read as nil instead of raising (for fields that code probes
-- with `t.x == nil`).
-- @tparam table t the module table (its metatable is replaced)
-- @tparam string who its name as the user writes it ("oar", "oar.layers")
-- @tparam[opt] function fallback `function(t, name) -> value or nil`
-- @tparam[opt] table opts `{optional={name=true,...}, extra={names...}}`;
-- `extra` adds names that fallback can provide, for suggestions
-- @treturn table t
-- @usage argcheck.strict_module(M, "oar.layers")
function M.strict_module(t, who, fallback, opts)
  local optional = opts and opts.optional or {}
  local extra = opts and opts.extra or {}
  setmetatable(t, {
    __index = function(tbl, k)
      if fallback then
        local v = fallback(tbl, k)
        if v ~= nil then return v end
      end
      if optional[k] or type(k) ~= "string" then return nil end
      -- names that tools probe on any table (serializers, inspectors, busted)
      if k:match("^__") then return nil end
      local names = {}
      for name in pairs(tbl) do if type(name) == "string" then names[#names + 1] = name end end
      for _, name in ipairs(extra) do names[#names + 1] = name end
      local s = M.suggest(k, names)
      M.raise(string.format("%s: no field '%s'%s", who, k, s and (" (did you mean '" .. s .. "'?)") or ""))
    end,
  })
  return t
end

return M
