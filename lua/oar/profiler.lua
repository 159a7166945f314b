--- Per-op-type wall time of everything the executor runs.
--
-- The profiler counts, for each op type, the calls and the seconds spent in
-- its kernel. Control-flow ops (`while`, `conditional_block`, `recurrent`)
-- include the time of the ops in their blocks, so the shares of a report add
-- up to more than 100% when a program has control flow.
--
-- A report is a text table sorted by total time:
--
--     op                                    calls     total ms     avg us   share
--     mul                                     300       12.500      41.67   52.1%
--     ...
--     total                                             24.000
--
-- @module oar.profiler
-- @usage
-- oar.profiler.start()
-- for i = 1, 100 do exe:run(main, {feed = feed, fetch_list = {loss}}) end
-- print(oar.profiler.report())
-- oar.profiler.stop()
local ffi = require("ffi")
local lib = require("oar.lib")
local C = lib.C

local M = {}

local function no_args(who, n)
  if n > 0 then
    error(string.format("oar.profiler.%s: takes no arguments, got %d", who, n), 3)
  end
end

--- Clears the counts and starts recording.
-- @usage oar.profiler.start()
function M.start(...)
  no_args("start", select("#", ...))
  C.oar_profile_reset()
  lib.check(C.oar_set_flag("profile", 1), 2)
end

--- Stops recording; the counts stay until `start` or `reset`.
-- @usage oar.profiler.stop()
function M.stop(...)
  no_args("stop", select("#", ...))
  lib.check(C.oar_set_flag("profile", 0), 2)
end

--- Clears the counts without changing whether the profiler records.
-- @usage oar.profiler.reset()
function M.reset(...)
  no_args("reset", select("#", ...))
  C.oar_profile_reset()
end

--- The report of the counts so far.
-- @treturn string a table with one line per op type (calls, total ms,
-- average microseconds per call, share of the total) and a closing total line
-- @usage print(oar.profiler.report())
function M.report(...)
  no_args("report", select("#", ...))
  local s = C.oar_profile_report()
  if s == nil then error(lib.last_error(), 2) end
  return ffi.string(s)
end

--- The largest peak of tensor memory a profiled run reached.
-- Bytes above what was live when the run started: what the memory plan keeps
-- small. 0 until a run was profiled.
-- @treturn number bytes
-- @usage
-- oar.profiler.start(); exe:run(main, {feed = feed}); oar.profiler.stop()
-- print(oar.profiler.peak_bytes() / 2^20 .. " MiB")
function M.peak_bytes()
  return tonumber(C.oar_profile_peak_bytes())
end

--- Profiles one function.
-- Starts the profiler, calls `fn`, stops the profiler (also when `fn`
-- raises, re-raising its error) and returns the report.
-- @tparam function fn the code to profile
-- @treturn string the report, as `report` gives it
-- @usage
-- local report = oar.profiler.profile(function()
--   exe:run(main, {feed = feed, fetch_list = {loss}})
-- end)
-- print(report)
function M.profile(fn, ...)
  if type(fn) ~= "function" then
    error("oar.profiler.profile: expected a function, got " .. type(fn), 2)
  end
  if select("#", ...) > 0 then
    error("oar.profiler.profile: takes one function, got more arguments", 2)
  end
  M.start()
  local ok, err = pcall(fn)
  M.stop()
  if not ok then error(err, 0) end
  return M.report()
end

return M
