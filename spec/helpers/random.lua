-- spec/helpers/random.lua — deterministic test values from one linear
-- congruential generator (s = (s * 1103515245 + 12345) mod 2^31), so specs
-- need no math.random state and every run sees the same numbers.
--
--   local R = require("spec.helpers.random")
--   R.symmetric(6)             -- 6 values in [-1, 1), seed 7
--   R.uniform(6, 3, 0.5, 2)    -- 6 values in [0.5, 2), seed 3
local M = {}

-- n values in [-scale, scale): (s / 2^30 - 1) * scale; seed defaults to 7,
-- scale to 1
function M.symmetric(n, seed, scale)
  local s = seed or 7
  local out = {}
  for i = 1, n do
    s = (s * 1103515245 + 12345) % 2147483648
    out[i] = (s / 1073741824 - 1) * (scale or 1)
  end
  return out
end

-- n values in [lo, hi): lo + (hi - lo) * s / 2^31; seed defaults to 7, the
-- range to [-1, 1)
function M.uniform(n, seed, lo, hi)
  local s = seed or 7
  lo, hi = lo or -1, hi or 1
  local out = {}
  for i = 1, n do
    s = (s * 1103515245 + 12345) % 2147483648
    out[i] = lo + (hi - lo) * (s / 2147483648)
  end
  return out
end

return M
