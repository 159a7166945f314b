-- Row-major index arithmetic shared by the op specs that compute expected
-- values in plain Lua: element counts, flat <-> multi-index (0-based),
-- nesting and flattening, LoD offsets.
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

-- nested tables of the given shape filled row-major from the flat list
function M.nest(flat, shape)
  local pos = 0
  local function build(d)
    local t = {}
    for i = 1, shape[d] do
      if d == #shape then
        pos = pos + 1
        t[i] = flat[pos]
      else
        t[i] = build(d + 1)
      end
    end
    return t
  end
  return build(1)
end

-- the leaves of nested tables, row-major
function M.flatten(t)
  local out = {}
  local function walk(x)
    if type(x) == "table" then for _, y in ipairs(x) do walk(y) end else out[#out + 1] = x end
  end
  walk(t)
  return out
end

-- LoD offsets {0, l1, l1+l2, ...} from sequence lengths (Fluid's tests give
-- lengths, oar's tensors take offsets)
function M.offsets(lengths)
  local o = { 0 }
  for i, n in ipairs(lengths) do o[i + 1] = o[i] + n end
  return o
end

return M
