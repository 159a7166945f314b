--- Checks tables of keyword arguments: an unknown key is an error naming the
-- function, the key and the closest valid key.
--
-- A stand-in until the shared version lands: same message format,
-- `who: unknown argument 'filenme' (did you mean 'filename'?)`.
-- @module oar.argcheck
local M = {}

-- Levenshtein distance, with an early exit once every entry of a row is past
-- `limit` (the strings are short: argument names).
local function distance(a, b, limit)
  local la, lb = #a, #b
  if math.abs(la - lb) > limit then return limit + 1 end
  local prev = {}
  for j = 0, lb do prev[j] = j end
  for i = 1, la do
    local cur = { [0] = i }
    local best = i
    local ca = a:byte(i)
    for j = 1, lb do
      local cost = ca == b:byte(j) and 0 or 1
      local v = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
      cur[j] = v
      if v < best then best = v end
    end
    if best > limit then return limit + 1 end
    prev = cur
  end
  return prev[lb]
end

--- The valid name closest to `name`, or nil when none is close.
-- Close means at most a third of the longer name's letters differ (at least
-- one), or one name is the other with a prefix or suffix added.
-- @tparam string name the misspelled name
-- @tparam {string,...} valid the names to choose from
-- @treturn ?string the closest name, or nil
-- @usage argcheck.suggest("filenme", {"filename", "scope"})  --> "filename"
function M.suggest(name, valid)
  if type(name) ~= "string" then return nil end
  local best, best_d
  local lname = name:lower()
  for _, v in ipairs(valid) do
    local limit = math.max(1, math.floor(math.max(#name, #v) / 3))
    local d = distance(lname, v:lower(), limit)
    if d <= limit and (best_d == nil or d < best_d or (d == best_d and v < best)) then
      best, best_d = v, d
    end
  end
  if best then return best end
  for _, v in ipairs(valid) do
    if #name >= 3 and (v:find(lname, 1, true) or lname:find(v:lower(), 1, true)) then return v end
  end
  return nil
end

-- sorted list of the names of a set or a list
local function names_of(allowed)
  local out = {}
  if #allowed > 0 then
    for i, v in ipairs(allowed) do out[i] = v end
  else
    for k in pairs(allowed) do out[#out + 1] = k end
  end
  table.sort(out)
  return out
end

--- The message for an unknown argument.
-- @tparam string who the function, as the user calls it (`"oar.io.save_params"`)
-- @param key the unknown key
-- @tparam {string,...} valid the valid names
-- @treturn string `who: unknown argument 'key' (did you mean 'x'?)`, or with the valid names listed
function M.message(who, key, valid)
  if type(key) ~= "string" then
    return string.format("%s: unexpected positional or non-string key %s in the argument table " ..
      "(valid names: %s)", who, tostring(key), table.concat(valid, ", "))
  end
  local hint = M.suggest(key, valid)
  if hint then
    return string.format("%s: unknown argument '%s' (did you mean '%s'?)", who, key, hint)
  end
  return string.format("%s: unknown argument '%s' (valid names: %s)", who, key, table.concat(valid, ", "))
end

--- Raises an error when `args` holds a key not in `allowed`.
-- Integer keys 1..#args (positional values) are accepted when `positional`
-- is true. The error is raised at the caller's caller (`level`, 3 by default:
-- the line that called the checked function).
-- @tparam string who the function's name for the message
-- @tparam table args the keyword table given by the user
-- @tparam table allowed a list of valid names, or a set `{name = true}`
-- @tparam[opt] table opts `{positional = false, level = 3}`
-- @treturn table args, unchanged
-- @usage argcheck.check("oar.io.save_params", opts, {"filename", "scope"})
function M.check(who, args, allowed, opts)
  if type(args) ~= "table" then return args end
  local set = {}
  if #allowed > 0 then
    for _, v in ipairs(allowed) do set[v] = true end
  else
    set = allowed
  end
  local positional = opts and opts.positional
  local n = positional and #args or 0
  for k in pairs(args) do
    if not set[k] and not (type(k) == "number" and k >= 1 and k <= n and k % 1 == 0) then
      local ok, framework = pcall(require, "oar.framework")
      local msg = M.message(who, k, names_of(allowed))
      if ok and framework.raise then framework.raise(msg) end
      error(msg, (opts and opts.level) or 3)
    end
  end
  return args
end

return M
