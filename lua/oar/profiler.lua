-- oar.profiler: per-op-type wall time of everything the executor runs.
--
--   oar.profiler.start()
--   for i = 1, 100 do exe:run(main, {...}) end
--   print(oar.profiler.report())   -- a table sorted by total time
--   oar.profiler.stop()
--
-- Or oar.profiler.profile(fn) -> report, around one function. Control-flow
-- ops (while, conditional_block, recurrent) include the ops of their blocks.
local ffi = require("ffi")
local lib = require("oar.lib")
local C = lib.C

local M = {}

function M.start()
  C.oar_profile_reset()
  lib.check(C.oar_set_flag("profile", 1), 2)
end

function M.stop()
  lib.check(C.oar_set_flag("profile", 0), 2)
end

function M.reset()
  C.oar_profile_reset()
end

function M.report()
  local s = C.oar_profile_report()
  if s == nil then error(lib.last_error(), 2) end
  return ffi.string(s)
end

-- The largest peak of tensor memory (bytes) a profiled run reached above what
-- was live when it started: what the memory plan keeps small.
function M.peak_bytes()
  return tonumber(C.oar_profile_peak_bytes())
end

function M.profile(fn)
  if type(fn) ~= "function" then error("profiler.profile: expected a function, got " .. type(fn), 2) end
  M.start()
  local ok, err = pcall(fn)
  M.stop()
  if not ok then error(err, 0) end
  return M.report()
end

return M
