-- Row-major index arithmetic shared by the op specs that compute expected
-- values in plain Lua: element counts and flat <-> multi-index (0-based).
local M = {}

-- element count of a shape (a list of dims)
function M.numel(shape)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  return n
end

-- row-major multi-index of flat position p (0-based) in shape
function M.unravel(p, shape)
  local idx = {}
  for i = #shape, 1, -1 do
    idx[i] = p % shape[i]
    p = (p - idx[i]) / shape[i]
  end
  return idx
end

-- flat position (0-based) of multi-index idx in shape
function M.ravel(idx, shape)
  local p = 0
  for i = 1, #shape do p = p * shape[i] + idx[i] end
  return p
end

return M
