-- Helpers of the specs that start mpirun jobs (spec/fleet_mpi_spec.lua,
-- spec/cuda_collective_spec.lua): shell runs with their output and time
-- (spec/run_specs_spec.lua times its runs with it too), temporary file
-- prefixes, and the parameter files the workers write.
local ffi = require("ffi")

local M = {}

-- mpirun for two workers, as root too, on a machine with fewer cores
M.MPIRUN = "mpirun --allow-run-as-root --oversubscribe -np 2 "

function M.sh_ok(cmd)
  local r = os.execute(cmd)
  return r == 0 or r == true
end

-- a fresh path prefix for the files a job writes
function M.tmpbase()
  local p = os.tmpname()
  os.remove(p)
  return p
end

pcall(ffi.cdef, "typedef struct { long s; long ns; } mpi_jobs_ts; int mpi_jobs_clock_gettime(int, mpi_jobs_ts *) __asm__(\"clock_gettime\");")
local ts = ffi.new("mpi_jobs_ts")
local function wall()
  ffi.C.mpi_jobs_clock_gettime(1, ts)
  return tonumber(ts.s) + tonumber(ts.ns) * 1e-9
end

-- runs a shell command line; returns ok, combined output, seconds
function M.run(cmd)
  local t0 = wall()
  local p = io.popen(cmd .. " 2>&1; echo \"::status=$?\"")
  local out = p:read("*a")
  p:close()
  local status = tonumber(out:match("::status=(%d+)%s*$"))
  return status == 0, out, wall() - t0
end

-- a worker's parameter file ("name v1 v2 ..." lines) as {name = {v1, ...}}
function M.load_params(path)
  local t = {}
  for l in io.lines(path) do
    local name, rest = l:match("^(%S+) (.*)$")
    local v = {}
    for x in rest:gmatch("%S+") do v[#v + 1] = tonumber(x) end
    t[name] = v
  end
  return t
end

-- ||a - b|| / ||b||
function M.rel_diff(a, b)
  assert(#a == #b, "lengths differ")
  local d, s = 0, 0
  for i = 1, #a do
    d = d + (a[i] - b[i]) ^ 2
    s = s + b[i] ^ 2
  end
  return math.sqrt(d) / math.max(math.sqrt(s), 1e-30)
end

return M
