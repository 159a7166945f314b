--- oar.launch: the `oar launch` command. Runs a training script under
-- mpirun and restarts the whole job, up to K times, when a worker dies or
-- hangs; the script resumes from its last checkpoint (oar.fleet.Checkpointer).
--
--   oar launch [--np N] [--hostfile F] [--restarts K] [--timeout S] [--mca KEY VALUE]... script.lua args...
--
-- mpirun starts N copies of `oar launch --worker script.lua args`: each
-- runs the script and, when it fails, says on stderr whether it lost the job
-- (the fleet's communication broke: another worker died or hangs, oar.fleet's
-- bounded detection) or the script itself failed (any other error). The
-- launcher reads the job's output (passed on to its stdout) and mpirun's
-- status: a job that ended by a lost worker (a worker killed by a signal,
-- a worker that lost the job, mpirun's "exited on signal") is started again;
-- a script error is not (it would fail again), nor a failure it cannot
-- explain. See docs/distributed.md, "Recovering from failures".
-- @module oar.launch
local ffi = require("ffi")

local M = {}

pcall(ffi.cdef, [[
long oar_launch_readlink(const char *path, char *buf, size_t n) __asm__("readlink");
unsigned int oar_launch_geteuid(void) __asm__("geteuid");
typedef struct { long s; long ns; } oar_launch_ts;
int oar_launch_clock_gettime(int clk, oar_launch_ts *ts) __asm__("clock_gettime");
]])

M.USAGE = [==[
usage: oar launch [options] script.lua [args...]

Runs script.lua on N workers under mpirun (OpenMPI) and restarts the whole
job when a worker dies or hangs; the script resumes from its checkpoint
(oar.fleet.Checkpointer). A script error is not restarted.

  --np N          workers (default: mpirun's, one per slot)
  --hostfile F    mpirun's hostfile
  --restarts K    restart at most K times (default 3)
  --timeout S     the workers' failure-detection timeout in seconds
                  (OAR_COMM_TIMEOUT for the workers; fleet.init{timeout=} wins)
  --mca KEY VALUE an MCA parameter for mpirun (repeatable)
  -h, --help      print this help

OAR_LAUNCH_MPIRUN_ARGS adds arguments to mpirun (split at spaces). The
workers see OAR_LAUNCH_ATTEMPT (1 for the first run, 2 after one restart...).
When a worker has reported a lost job and mpirun has not ended
OAR_LAUNCH_GRACE seconds later (default 10: a host cut off from the network
leaves mpirun waiting for its daemon), the launcher ends the job itself.]==]

local function now()
  local ts = ffi.new("oar_launch_ts")
  ffi.C.oar_launch_clock_gettime(1, ts)
  return tonumber(ts.s) + tonumber(ts.ns) * 1e-9
end

local function sh_quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

local function self_exe()
  local buf = ffi.new("char[4096]")
  local n = ffi.C.oar_launch_readlink("/proc/self/exe", buf, 4095)
  if n <= 0 then return nil end
  return ffi.string(buf, n)
end

local function whole(s, lo)
  local n = tonumber(s)
  return n and n == math.floor(n) and n >= lo and n or nil
end

--- Parses `oar launch`'s arguments argv[i..].
-- @tparam table argv the arguments
-- @tparam int i the first one to read
-- @treturn ?table `{np=, hostfile=, restarts=, timeout=, mca={{k, v},...}, worker=, script=, args={...}}`
-- @treturn ?string what is wrong, or "help"
-- @usage local o, err = require("oar.launch").parse({"--np", "2", "train.lua"}, 1)
function M.parse(argv, i)
  local o = { restarts = 3, mca = {}, args = {} }
  while argv[i] do
    local a = argv[i]
    local v = argv[i + 1]
    if a == "-h" or a == "--help" then
      return nil, "help"
    elseif a == "--worker" then
      o.worker = true
    elseif a == "--np" or a == "-np" or a == "-n" then
      o.np = whole(v, 1)
      if not o.np then return nil, a .. " needs a number of workers >= 1, got " .. tostring(v) end
      i = i + 1
    elseif a == "--restarts" then
      o.restarts = whole(v, 0)
      if not o.restarts then return nil, "--restarts needs a whole number >= 0, got " .. tostring(v) end
      i = i + 1
    elseif a == "--timeout" then
      o.timeout = tonumber(v)
      if not o.timeout or not (o.timeout > 0) or o.timeout > 1e7 then
        return nil, "--timeout needs seconds in (0, 1e7], got " .. tostring(v)
      end
      i = i + 1
    elseif a == "--hostfile" then
      if not v then return nil, "--hostfile needs a file" end
      o.hostfile = v
      i = i + 1
    elseif a == "--mca" then
      if not v or not argv[i + 2] then return nil, "--mca needs a key and a value" end
      o.mca[#o.mca + 1] = { v, argv[i + 2] }
      i = i + 2
    elseif a == "--" then
      i = i + 1
      break
    elseif a:sub(1, 1) == "-" then
      return nil, "unknown option '" .. a .. "'"
    else
      break
    end
    i = i + 1
  end
  o.script = argv[i]
  if not o.script then return nil, "no script given" end
  for k = i + 1, #argv do o.args[#o.args + 1] = argv[k] end
  return o
end

--- The mpirun command line (a shell string) of attempt `attempt`.
-- @tparam table o what `parse` returned
-- @tparam int attempt 1 for the first run
-- @tparam string exe the oar program the workers run
-- @treturn string
-- @usage print(require("oar.launch").command(o, 1, "/usr/local/bin/oar"))
function M.command(o, attempt, exe)
  local parts = { "mpirun" }
  local function add(...) for _, x in ipairs({ ... }) do parts[#parts + 1] = sh_quote(x) end end
  -- OpenMPI refuses root without it; a launcher run as root means it
  if ffi.C.oar_launch_geteuid() == 0 then add("--allow-run-as-root") end
  if o.np then add("-np", o.np) end
  if o.hostfile then add("--hostfile", o.hostfile) end
  local extra = os.getenv("OAR_LAUNCH_MPIRUN_ARGS") or ""
  -- After a worker dies mpirun sends the others SIGTERM and waits this long
  -- before it exits (default 1 s: two thirds of the time to recover). oar's
  -- writes are atomic, so the launcher does not wait, unless told otherwise.
  local told = os.getenv("OMPI_MCA_odls_base_sigkill_timeout") or extra:find("odls_base_sigkill_timeout", 1, true)
  for _, kv in ipairs(o.mca) do
    add("--mca", kv[1], kv[2])
    if kv[1] == "odls_base_sigkill_timeout" then told = true end
  end
  if not told then add("--mca", "odls_base_sigkill_timeout", "0") end
  for w in extra:gmatch("%S+") do add(w) end
  add("-x", "OAR_LAUNCH_ATTEMPT=" .. attempt)
  if o.timeout then add("-x", "OAR_COMM_TIMEOUT=" .. string.format("%.17g", o.timeout)) end
  add(exe, "launch", "--worker", o.script)
  for _, a in ipairs(o.args) do add(a) end
  return table.concat(parts, " ")
end

-- what the job's output tells of a worker lost (first match wins)
local LOST = {
  { "oar launch: worker (%d+): lost the job: ([^\n]*)", "worker %s lost the job: %s" },
  { "process rank (%d+) with PID %d+ on node %S+ exited on signal (%d+)", "worker %s was killed (signal %s)" },
  { "oar worker (%d+): ([^\n]*did not finish within[^\n]*)", "worker %s: %s" },
  { "oar worker (%d+): stopped by the launcher", "worker %s was stopped by mpirun after another worker failed" },
  { "(ORTE has lost communication[^\n]*)", "%s" },
  -- a host that cannot be reached (yet): its daemon never called back
  { "(ORTE was unable to reliably start one or more daemons)", "%s (a host could not be reached)" },
  { "(exited on signal %d+)", "a worker %s" },
}

--- Why a job ended: "ok", "script" (a script error: not restarted), "lost"
-- (a worker died or hangs: restarted) or "unknown" (not restarted), and a
-- sentence saying so.
-- @tparam string out the job's output
-- @tparam int status mpirun's exit status
-- @treturn string the kind
-- @treturn string the cause
-- @usage local kind, cause = require("oar.launch").classify(output, 1)
function M.classify(out, status)
  if status == 0 then return "ok", "the job ended normally" end
  local r, msg = out:match("oar launch: worker (%d+): script error: ([^\n]*)")
  if r then return "script", "the script failed on worker " .. r .. ": " .. msg end
  for _, p in ipairs(LOST) do
    local a, b = out:match(p[1])
    if a then return "lost", string.format(p[2], a, b) end
  end
  if status == 127 then return "unknown", "mpirun could not be run (is OpenMPI's mpirun on PATH?)" end
  if status >= 128 then return "lost", "mpirun ended on signal " .. (status - 128) end
  return "unknown", "mpirun exited with status " .. status .. " and no worker reported a lost job"
end

local function say(fmt, ...) io.stderr:write("oar launch: ", string.format(fmt, ...), "\n") end

-- how long mpirun may take to end once a worker reported a lost job before
-- the launcher ends it (a host cut off: mpirun waits on its daemon forever)
local function grace_s()
  local g = tonumber(os.getenv("OAR_LAUNCH_GRACE") or "")
  return g and g > 0 and g or 10
end

-- whether a line of the job's output reports a lost worker
local function reports_lost(line)
  for _, p in ipairs(LOST) do
    if line:find(p[1]) then return true end
  end
  return false
end

-- Runs one attempt, passing the job's output on; returns status, output,
-- and whether a signal (Ctrl-C) interrupted it. The job runs in a process
-- group of its own (oar.launch_proc): a Ctrl-C is passed on to it, and a
-- job that does not end within the grace after a worker reported a lost
-- job is ended (SIGTERM, then SIGKILL).
local function run_job(cmd)
  local proc, err = require("oar.launch_proc").spawn(cmd)
  if not proc then
    say("cannot start mpirun: %s", err)
    return 127, "", false
  end
  local kept, partial, interrupted = {}, "", false
  local lost_at, termed_at
  local function take(text)
    partial = partial .. text
    while true do
      local nl = partial:find("\n", 1, true)
      if not nl then break end
      local line = partial:sub(1, nl - 1)
      partial = partial:sub(nl + 1)
      io.stdout:write(line, "\n")
      kept[#kept + 1] = line
      if #kept > 4000 then table.remove(kept, 1) end   -- the causes are in the last lines
      if not lost_at and reports_lost(line) then lost_at = now() end
    end
    io.stdout:flush()
  end
  while true do
    local text, sig = proc:read(200)
    if sig then
      -- Ctrl-C reached the launcher only: pass it on to the job
      interrupted = true
      proc:signal(require("oar.launch_proc").SIGINT)
    end
    if text then take(text) end
    local status = proc:poll_exit()
    if status then
      -- drain what is already in the pipe; a stale daemon may hold it open
      repeat
        local more = proc:read(0)
        if more then take(more) end
      until not more or more == ""
      proc:close()
      if partial ~= "" then take("\n") end
      return status, table.concat(kept, "\n") .. "\n", interrupted
    end
    local t = now()
    if lost_at and not termed_at and t - lost_at > grace_s() then
      say("mpirun did not end %.0f s after a worker reported a lost job; ending it", grace_s())
      proc:signal(require("oar.launch_proc").SIGTERM)
      termed_at = t
    elseif termed_at and t - termed_at > 3 then
      proc:signal(require("oar.launch_proc").SIGKILL)
      termed_at = math.huge
    end
  end
end


--- Runs the job, restarting it on a lost worker: the launcher's part.
-- @tparam table o what `parse` returned
-- @tparam[opt] table launcher the oar program's launcher table (Ctrl-C)
-- @treturn int the exit status
-- @usage os.exit(require("oar.launch").run(o))
function M.run(o, launcher)
  local exe = self_exe()
  if not exe then say("cannot find the oar program (/proc/self/exe)") return 1 end
  for attempt = 1, o.restarts + 1 do
    local t0 = now()
    local status, out, interrupted = run_job(M.command(o, attempt, exe))
    local took = launcher and launcher.take_interrupt and launcher.take_interrupt()
    if interrupted or took then
      say("interrupted")
      return 130
    end
    local kind, cause = M.classify(out, status)
    if kind == "ok" then
      if attempt > 1 then say("the job finished after %d restart%s", attempt - 1, attempt == 2 and "" or "s") end
      return 0
    end
    local t_fail = now()
    if kind == "script" then
      say("%s; not restarting (a script error would happen again)", cause)
      return status ~= 0 and status or 1
    elseif kind == "unknown" then
      say("%s; not restarting", cause)
      return status ~= 0 and status or 1
    end
    if attempt > o.restarts then
      say("giving up: the job failed %d time%s (--restarts %d); last cause: %s", attempt, attempt == 1 and "" or "s",
        o.restarts, cause)
      return 1
    end
    say("attempt %d failed after %.1f s: %s; restarting the job (restart %d of %d)", attempt, t_fail - t0, cause,
      attempt, o.restarts)
  end
  return 1
end

--- Runs the script as one worker of the job (what mpirun starts). When
-- the script fails, one line on stderr says how: the worker lost the job
-- (the fleet's communication broke) or the script failed (a script error).
-- @tparam table o what `parse` returned
-- @tparam[opt] table launcher the oar program's launcher table (Ctrl-C)
-- @treturn int the exit status
-- @usage os.exit(require("oar.launch").worker(o))
function M.worker(o, launcher)
  local rank = os.getenv("OMPI_COMM_WORLD_RANK") or os.getenv("PMIX_RANK") or "0"
  local new_arg = { [0] = o.script }
  for k, a in ipairs(o.args) do new_arg[k] = a end
  _G.arg = new_arg
  local fn, err = loadfile(o.script)
  if not fn then
    io.stderr:write("oar launch: worker " .. rank .. ": script error: " .. tostring(err) .. "\n")
    return 1
  end
  if launcher and launcher.set_running then launcher.set_running(true, true) end
  local ok, e = xpcall(function() return fn(unpack(o.args)) end,
    function(m) return debug.traceback(tostring(m), 2) end)
  if launcher and launcher.set_running then launcher.set_running(false) end
  io.stdout:flush()
  if ok then return 0 end
  local broken = ""
  local lok, lib = pcall(require, "oar.lib")
  if lok then broken = ffi.string(lib.C.oar_comm_broken()) end
  local first = e:match("^[^\n]*")
  -- one write each: the workers' lines reach mpirun's output whole
  if broken ~= "" and not broken:find("runs a different program than worker", 1, true) then
    io.stderr:write("oar launch: worker " .. rank .. ": lost the job: " .. first .. "\n")
  else
    io.stderr:write(e .. "\n")
    io.stderr:flush()
    io.stderr:write("oar launch: worker " .. rank .. ": script error: " .. first .. "\n")
  end
  io.stderr:flush()
  return 1
end

--- The `oar launch` command: the global arg (arg[1] is "launch") -> exit status.
-- @tparam[opt] table launcher the oar program's launcher table
-- @treturn int
-- @usage -- the oar program calls it for `oar launch ...`
-- os.exit(require("oar.launch").main())
function M.main(launcher)
  launcher = launcher or rawget(_G, "oar_launcher")
  local argv = rawget(_G, "arg") or {}
  local o, err = M.parse(argv, 2)
  if err == "help" then
    io.stdout:write(M.USAGE, "\n")
    return 0
  end
  if not o then
    io.stderr:write("oar launch: ", err, "\n", "usage: oar launch [--np N] [--hostfile F] [--restarts K] ",
      "[--timeout S] script.lua [args...] (oar launch --help)\n")
    return 2
  end
  if o.worker then return M.worker(o, launcher) end
  return M.run(o, launcher)
end

return M
