-- spec/helpers/bounded.lua — failure messages of bounded size for big tables.
--
-- luassert prints both tables of a failed `assert.same` in full, building the
-- text by repeated concatenation: for two 64,000-entry arrays that takes
-- minutes (issue 20). Loaded for every spec by spec/helpers/setup.lua
-- (.busted's helper), this module registers:
--   - a table formatter that prints a table of more than MAX_ENTRIES entries
--     (nested tables counted down to luassert's TableFormatLevel) as a short
--     summary: its size, its first values and, in a failed `same`, the values
--     around the first difference (luassert passes its path as "crumbs");
--     smaller tables keep luassert's own format;
--   - `assert.same_array(expected, actual [, message])`: the comparison for
--     two big arrays (nested ones too), whose message names the first
--     differing index, how many entries differ, and the values around it.
--     Values compare with ==, except that NaN equals NaN.
local luassert = require("luassert")
local say = require("say")

local M = {}
M.MAX_ENTRIES = 50 -- a table with more entries is summarized
M.SHOWN = 5        -- values shown at the start, and around a difference

local floor, huge = math.floor, math.huge

local function is_index(k, n)
  return type(k) == "number" and k >= 1 and k <= n and floor(k) == k
end

-- entries of t in all (one level)
local function count(t)
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  return n
end

-- one value on one line, of bounded length
local function short(v)
  local ty = type(v)
  if ty == "number" then
    if v ~= v then return "nan" end
    if v == huge then return "inf" end
    if v == -huge then return "-inf" end
    return ("%.17g"):format(v)
  elseif ty == "string" then
    local s = #v > 40 and v:sub(1, 40) or v
    s = ("%q"):format(s):gsub("\\\n", "\\n")
    return #v > 40 and (s .. "... (" .. #v .. " bytes)") or s
  elseif ty == "table" then
    return "(table, " .. count(v) .. " entries)"
  end
  return tostring(v)
end
M.short = short

-- whether t holds more than `budget` entries, counting those of the tables
-- in it down to `depth` levels; stops counting as soon as it knows
local function exceeds(t, depth, budget, seen)
  for _, v in pairs(t) do
    budget = budget - 1
    if budget < 0 then return true, budget end
    if type(v) == "table" and depth > 1 and not seen[v] then
      seen[v] = true
      local over
      over, budget = exceeds(v, depth - 1, budget, seen)
      if over then return true, budget end
    end
  end
  return false, budget
end

local function key_text(k)
  return type(k) == "string" and ("[%q]"):format(k) or ("[" .. tostring(k) .. "]")
end

local function path_text(path)
  local parts = {}
  for i, k in ipairs(path) do parts[i] = key_text(k) end
  return table.concat(parts)
end

-- the keys to show around key k of a table of sequence length n
local function around(k, n)
  if type(k) ~= "number" or floor(k) ~= k then return { k } end
  local ks = {}
  for i = math.max(1, k - 2), math.min(math.max(n, k), k + 2) do ks[#ks + 1] = i end
  return ks
end

-- follows path (outermost key first) from t; returns the table holding the
-- last key, or nil when the path leaves the tables
local function container(t, path)
  for i = 1, #path - 1 do
    t = type(t) == "table" and t[path[i]] or nil
  end
  return type(t) == "table" and t or nil
end

-- the summary of a big table; path: where a failed comparison found the
-- first difference (outermost key first), or nil
function M.summary(t, path)
  local n, total = #t, count(t)
  local kinds, seen = {}, {}
  for i = 1, n do
    local ty = type(t[i])
    if not seen[ty] then seen[ty] = true; kinds[#kinds + 1] = ty end
  end
  local head = {}
  if n > 0 then
    head[1] = ("(table) %d entries: [1..%d] of %s"):format(total, n, table.concat(kinds, ", "))
    if total > n then head[1] = head[1] .. (", and %d other keys"):format(total - n) end
  else
    head[1] = ("(table) %d entries"):format(total)
  end
  local first = {}
  if n > 0 then
    for i = 1, math.min(n, M.SHOWN) do first[#first + 1] = ("[%d] = %s"):format(i, short(t[i])) end
  else
    local keys = {}
    for k in pairs(t) do
      keys[#keys + 1] = k
      if #keys == M.SHOWN then break end
    end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    for _, k in ipairs(keys) do first[#first + 1] = key_text(k) .. " = " .. short(t[k]) end
  end
  head[2] = "  first: " .. table.concat(first, ", ") .. ((total > #first) and ", ..." or "")
  local c = path and #path > 0 and container(t, path)
  if c then
    local k = path[#path]
    head[#head + 1] = "  around the first difference, " .. path_text(path) .. ":"
    local outer = path_text({ unpack(path, 1, #path - 1) })
    for _, i in ipairs(around(k, #c)) do
      head[#head + 1] = ("  %s %s%s = %s"):format(i == k and "*" or " ", outer, key_text(i), short(c[i]))
    end
  elseif path and #path > 0 then
    head[#head + 1] = "  the first difference is at " .. path_text(path)
  end
  head[#head + 1] = ("  (a summary: tables of more than %d entries are not printed in full)"):format(M.MAX_ENTRIES)
  return table.concat(head, "\n")
end

-- the luassert formatter: nil (luassert's own format) for small tables
function M.format_table(t, fmtargs)
  if type(t) ~= "table" then return nil end
  local level = luassert:get_parameter("TableFormatLevel") or 3
  local depth = level < 0 and huge or level
  if not exceeds(t, depth, M.MAX_ENTRIES, { [t] = true }) then return nil end
  local path
  local crumbs = fmtargs and fmtargs.crumbs
  if crumbs and #crumbs > 0 then
    -- luassert's crumbs run from the innermost key out
    path = {}
    for i = #crumbs, 1, -1 do path[#path + 1] = crumbs[i] end
  end
  return M.summary(t, path)
end

local function same_value(a, b)
  return a == b or (a ~= a and b ~= b)
end

-- the path (outermost key first) to the first place where a and b differ,
-- or nil when they are the same; sequence positions are compared in order,
-- then the other keys. `pairs_seen` stops at cycles.
local function first_difference(a, b, pairs_seen)
  if same_value(a, b) then return nil end
  if type(a) ~= "table" or type(b) ~= "table" then return {} end
  pairs_seen = pairs_seen or {}
  if pairs_seen[a] == b then return nil end
  pairs_seen[a] = b
  local n = math.max(#a, #b)
  for i = 1, n do
    local p = first_difference(a[i], b[i], pairs_seen)
    if p then table.insert(p, 1, i); return p end
  end
  for k, v in pairs(a) do
    if not is_index(k, n) then
      local p = first_difference(v, b[k], pairs_seen)
      if p then table.insert(p, 1, k); return p end
    end
  end
  for k in pairs(b) do
    if a[k] == nil and not is_index(k, n) then return { k } end
  end
  return nil
end
M.first_difference = first_difference

-- how many top-level keys of a and b hold different values
local function differing(a, b)
  local d = 0
  for k, v in pairs(a) do
    if first_difference(v, b[k]) then d = d + 1 end
  end
  for k in pairs(b) do
    if a[k] == nil then d = d + 1 end
  end
  return d
end

-- the message of a failed same_array: expected and actual differ at path
function M.array_difference(expected, actual, path)
  local keys = {}
  for k in pairs(expected) do keys[k] = true end
  for k in pairs(actual) do keys[k] = true end
  local lines = {
    ("Expected arrays to be the same, but they differ first at %s (%d of %d entries differ; "
      .. "lengths: expected %d, passed in %d):"):format(path_text(path), differing(expected, actual), count(keys),
      #expected, #actual),
    ("  %-14s %-26s %s"):format("", "expected", "passed in"),
  }
  local ce, ca = container(expected, path), container(actual, path)
  local k = path[#path]
  local n = math.max(ce and #ce or 0, ca and #ca or 0)
  for _, i in ipairs(around(k, n)) do
    local prefix = path_text({ unpack(path, 1, #path - 1) }) .. key_text(i)
    lines[#lines + 1] = ("%s %-14s %-26s %s"):format(i == k and "*" or " ", prefix,
      short(ce and ce[i]), short(ca and ca[i]))
  end
  return table.concat(lines, "\n")
end

local function same_array(state, arguments, level)
  local expected, actual = arguments[1], arguments[2]
  local message
  if arguments[3] ~= nil then state.failure_message = arguments[3] end
  local same
  if type(expected) ~= "table" or type(actual) ~= "table" then
    same = false
    message = ("same_array compares two tables; it was given a %s and a %s"):format(type(expected), type(actual))
  else
    local path = first_difference(expected, actual)
    same = path == nil
    message = same and ("Expected arrays to differ, but they are the same (%d entries)"):format(count(expected))
      or M.array_difference(expected, actual, path)
  end
  -- the message is built here: luassert prints the arguments through its
  -- formatters, so they are replaced by the message itself
  arguments[1], arguments[2], arguments[3] = message, nil, nil
  arguments.n = 1
  arguments.nofmt = { true }
  return same
end

local installed = false

-- registers the formatter and the assertion (once per process)
function M.install()
  if installed then return end
  installed = true
  luassert:add_formatter(M.format_table)
  say:set("assertion.same_array.positive", "%s")
  say:set("assertion.same_array.negative", "%s")
  luassert:register("assertion", "same_array", same_array,
    "assertion.same_array.positive", "assertion.same_array.negative")
end

return M
