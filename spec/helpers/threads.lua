-- spec/helpers/threads.lua — run a function with oar's `num_threads` flag
-- set, putting the previous value back whatever happens.
--   local at_threads = require("spec.helpers.threads")
--   local one, two = at_threads(1, run), at_threads(2, run)
local C = require("oar.lib").C

return function(n, fn)
  local before = tonumber(C.oar_get_flag("num_threads"))
  assert(C.oar_set_flag("num_threads", n) == 0, "num_threads " .. n .. " refused")
  local ok, r = pcall(fn)
  C.oar_set_flag("num_threads", before)
  assert(ok, r)
  return r
end
