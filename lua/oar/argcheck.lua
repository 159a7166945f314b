-- TEMPORARY (branch h/train): stands in for the shared oar.argcheck being
-- written in h/api; replaced by that file as soon as it lands.
local M = {}

local function distance(a, b)
  local la, lb = #a, #b
  local prev = {}
  for j = 0, lb do prev[j] = j end
  for i = 1, la do
    local cur = { [0] = i }
    for j = 1, lb do
      local cost = a:sub(i, i) == b:sub(j, j) and 0 or 1
      cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
    end
    prev = cur
  end
  return prev[lb]
end

-- Raises "who: unknown argument 'k' (did you mean 'x'?)" for a key of args
-- not in allowed (a set name -> true).
function M.check(who, args, allowed, level)
  if type(args) ~= "table" then
    error(string.format("%s: expects a table of arguments, got %s", who, type(args)), (level or 2) + 1)
  end
  for k in pairs(args) do
    if not allowed[k] then
      local best, bd
      for name in pairs(allowed) do
        local d = distance(tostring(k), name)
        if d <= math.max(2, #name / 3) and (not bd or d < bd or d == bd and name < best) then best, bd = name, d end
      end
      error(string.format("%s: unknown argument '%s'%s", who, tostring(k),
        best and " (did you mean '" .. best .. "'?)" or ""), (level or 2) + 1)
    end
  end
  return args
end

return M
