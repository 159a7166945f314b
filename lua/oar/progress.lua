--- oar.progress: a progress bar for training loops, on stderr.
--
--   local bar = oar.progress{ total = 938, title = "epoch 1/2" }
--   for step = 1, 938 do
--     ...
--     bar:update(step, { loss = l, acc = a })
--   end
--   bar:finish()
--
-- On a terminal the bar redraws one line in place:
--   epoch 1/2 [=========>          ] 420/938  45% 312.4 it/s 00:01<00:01 acc 0.8125 loss 0.5023
-- (count, percentage, rate, elapsed<ETA, then the metrics by name). Anywhere
-- else (a pipe, a log file, CI) redrawing would fill the log with carriage
-- returns, so it prints a plain line each time another tenth is done instead:
--   epoch 1/2  10% 94/938 312.4 it/s elapsed 00:00 eta 00:02 acc 0.8125 loss 0.5023
-- @module oar.progress
local ffi = require("ffi")
local argcheck = require("oar.argcheck")

local M = {}

pcall(ffi.cdef, "int isatty(int fd);")
pcall(ffi.cdef, [[
typedef struct { long tv_sec; long tv_nsec; } oar_progress_timespec;
int oar_progress_clock_gettime(int clk_id, oar_progress_timespec *tp) __asm__("clock_gettime");
]])

local ts = ffi.new("oar_progress_timespec")

--- Wall-clock seconds from a monotonic clock (os.clock is CPU time, summed
-- over every thread, so it runs fast while OpenMP kernels work).
-- @treturn number seconds from an arbitrary origin
-- @usage
-- local t0 = oar.progress.clock()
-- exe:run(main, {feed = feed})
-- print(string.format("%.3f s", oar.progress.clock() - t0))
function M.clock()
  ffi.C.oar_progress_clock_gettime(1, ts)  -- CLOCK_MONOTONIC (under a private name: other code may declare clock_gettime with its own struct)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

--- Whether stderr is a terminal that understands carriage returns and ESC[K
-- (a TTY, TERM not "dumb").
-- @treturn bool
-- @usage if oar.progress.stderr_is_tty() then io.stderr:write("\27[1mbold\27[0m\n") end
function M.stderr_is_tty()
  local ok, r = pcall(function() return ffi.C.isatty(2) end)
  local term = os.getenv("TERM")
  return ok and r == 1 and term ~= "dumb"
end

local function duration(s)
  if s ~= s or s == math.huge then return "--:--" end
  s = math.floor(s + 0.5)
  local h, m, sec = math.floor(s / 3600), math.floor(s % 3600 / 60), s % 60
  if h > 0 then return string.format("%d:%02d:%02d", h, m, sec) end
  return string.format("%02d:%02d", m, sec)
end

--- A duration as "mm:ss", or "h:mm:ss" from an hour on (dashes for NaN or inf).
-- @function duration
-- @tparam number s seconds
-- @treturn string
-- @usage print(oar.progress.duration(3725))   --> 1:02:05
M.duration = duration

local function metric_text(v)
  if type(v) == "number" then
    if v % 1 == 0 and math.abs(v) < 1e15 then return string.format("%d", v) end
    return string.format("%.4f", v)
  end
  return tostring(v)
end

local Bar = {}
Bar.__index = Bar

local ARGS = { total = true, title = true, width = true, unit = true, stream = true, tty = true, clock = true,
               min_interval = true }

--- Creates a progress bar (also `oar.progress{...}`).
-- @tparam table args keyword arguments:
-- @tparam int args.total the count that means done (a positive integer)
-- @tparam[opt=""] string args.title text before the bar
-- @tparam[opt="it"] string args.unit the rate's unit
-- @tparam[opt=30] int args.width bar cells
-- @tparam[opt=io.stderr] file args.stream what to write to (anything with :write)
-- @tparam[opt] bool args.tty redraw in place; default: whether stderr is a terminal (false for any other stream)
-- @tparam[opt] function args.clock returns seconds; default: a monotonic wall clock
-- @tparam[opt=0.1] number args.min_interval seconds between redraws on a terminal
-- @treturn Bar
-- @raise on a missing or bad total, or a bad title, width or unknown argument
-- @usage
-- local bar = oar.progress{total = #batches, title = "epoch 1"}
-- for step, batch in ipairs(batches) do
--   local loss = exe:run(main, {feed = batch, fetch_list = {avg_loss}})[1]:item()
--   bar:update(step, {loss = loss})
-- end
-- bar:finish()
function M.new(args)
  if type(args) ~= "table" then
    error("oar.progress: expects a table of arguments {total=, title=}, got " .. type(args), 2)
  end
  argcheck.keys("oar.progress", args, ARGS)
  local total = args.total
  if type(total) ~= "number" or total < 1 or total % 1 ~= 0 or total == math.huge then
    error("oar.progress: total must be a positive integer, got " .. tostring(total), 2)
  end
  local title = args.title or ""
  if type(title) ~= "string" then error("oar.progress: title must be a string, got " .. type(title), 2) end
  local width = args.width or 30
  if type(width) ~= "number" or width < 1 or width % 1 ~= 0 then
    error("oar.progress: width must be a positive integer, got " .. tostring(width), 2)
  end
  local stream = args.stream or io.stderr
  if (type(stream) ~= "table" and type(stream) ~= "userdata") or stream.write == nil then
    error("oar.progress: stream must be a file (something with :write), got " .. type(stream), 2)
  end
  local clock = args.clock or M.clock
  if type(clock) ~= "function" then error("oar.progress: clock must be a function, got " .. type(clock), 2) end
  local tty = args.tty
  if tty == nil then tty = stream == io.stderr and M.stderr_is_tty() end
  if type(tty) ~= "boolean" then error("oar.progress: tty must be a boolean, got " .. type(tty), 2) end
  local unit = args.unit or "it"
  if type(unit) ~= "string" then error("oar.progress: unit must be a string, got " .. type(unit), 2) end
  local min_interval = args.min_interval or 0.1
  if type(min_interval) ~= "number" or min_interval < 0 then
    error("oar.progress: min_interval must be a non-negative number, got " .. tostring(min_interval), 2)
  end
  local t0 = clock()
  return setmetatable({ total = total, title = title, width = width, stream = stream, tty = tty,
                        clock = clock, unit = unit, min_interval = min_interval, t0 = t0,
                        n = 0, metrics = nil, tenth = 0, drawn_at = nil, finished = false }, Bar)
end

-- The metrics as "name value" pairs, names sorted (a Lua table keeps no order).
local function metrics_text(metrics)
  if not metrics then return "" end
  local names = {}
  for k in pairs(metrics) do names[#names + 1] = tostring(k) end
  table.sort(names)
  local parts = {}
  for _, k in ipairs(names) do parts[#parts + 1] = " " .. k .. " " .. metric_text(metrics[k]) end
  return table.concat(parts)
end

function Bar:_stats(now)
  local elapsed = now - self.t0
  local rate = elapsed > 0 and self.n / elapsed or 0
  local eta = rate > 0 and (self.total - self.n) / rate or (self.n >= self.total and 0 or math.huge)
  return elapsed, rate, eta
end

local function prefix(self)
  return self.title == "" and "" or self.title .. " "
end

-- The redrawn terminal line (without the leading \r and trailing ESC[K).
function Bar:_tty_line(now)
  local elapsed, rate, eta = self:_stats(now)
  local fill = math.floor(self.width * self.n / self.total)
  local cells = string.rep("=", fill)
  if fill < self.width then cells = cells .. (self.n > 0 and ">" or " ") .. string.rep(" ", self.width - fill - 1) end
  local digits = #tostring(self.total)
  return string.format("%s[%s] %" .. digits .. "d/%d %3d%% %.1f %s/s %s<%s%s", prefix(self), cells, self.n,
    self.total, math.floor(100 * self.n / self.total), rate, self.unit, duration(elapsed),
    duration(eta), metrics_text(self.metrics))
end

-- The plain line printed at each tenth on a non-terminal.
function Bar:_plain_line(now)
  local elapsed, rate, eta = self:_stats(now)
  return string.format("%s%3d%% %d/%d %.1f %s/s elapsed %s eta %s%s", prefix(self),
    math.floor(100 * self.n / self.total), self.n, self.total, rate, self.unit, duration(elapsed),
    duration(eta), metrics_text(self.metrics))
end

--- Methods of a progress bar.
-- @type Bar

--- Records progress and redraws the bar when it is time to.
-- @tparam int n the count done so far (0..total, not an increment)
-- @tparam[opt] table metrics name = number or string, shown after the timing
-- @raise when n is out of range, metrics is not a table, or after finish
-- @usage bar:update(step, {loss = 0.43, acc = 0.88})
function Bar:update(n, metrics)
  if getmetatable(self) ~= Bar then error("oar.progress: call bar:update(n, metrics) with ':'", 2) end
  if type(n) ~= "number" or n % 1 ~= 0 or n < 0 or n > self.total then
    error(string.format("oar.progress: update's n must be an integer in 0..%d (the count done so far), got %s",
                        self.total, tostring(n)), 2)
  end
  if metrics ~= nil and type(metrics) ~= "table" then
    error("oar.progress: update's metrics must be a table of name = value, got " .. type(metrics), 2)
  end
  if self.finished then error("oar.progress: update after finish", 2) end
  self.n = n
  if metrics then self.metrics = metrics end
  local now = self.clock()
  if self.tty then
    if n < self.total and self.drawn_at and now - self.drawn_at < self.min_interval then return end
    self.drawn_at = now
    self.stream:write("\r" .. self:_tty_line(now) .. "\27[K")
  else
    local tenth = math.floor(10 * n / self.total)
    if tenth <= self.tenth then return end
    self.tenth = tenth
    self.stream:write(self:_plain_line(now) .. "\n")
  end
  if self.stream.flush then self.stream:flush() end
end

--- Ends the bar: on a terminal, draws its final state and moves to the next
-- line; elsewhere prints a last line only when the last tenth was not
-- reached (a loop that stopped early). Finishing twice is fine.
-- @treturn number the seconds elapsed
-- @usage local seconds = bar:finish()
function Bar:finish()
  if getmetatable(self) ~= Bar then error("oar.progress: call bar:finish() with ':'", 2) end
  local now = self.clock()
  if self.finished then return now - self.t0 end
  self.finished = true
  if self.tty then
    self.stream:write("\r" .. self:_tty_line(now) .. "\27[K\n")
  elseif self.tenth < 10 and self.n > 0 then
    self.stream:write(self:_plain_line(now) .. "\n")
  end
  if self.stream.flush then self.stream:flush() end
  return now - self.t0
end

--- Seconds since the bar was created.
-- @treturn number
-- @usage print(bar:elapsed())
function Bar:elapsed()
  return self.clock() - self.t0
end

M.Bar = Bar

return setmetatable(M, { __call = function(_, args) return M.new(args) end })
