--- Runtime switches kept in C (Fluid's `FLAGS_*`).
--
-- Flag names may carry Fluid's `FLAGS_` prefix (`FLAGS_check_nan_inf` and
-- `check_nan_inf` are the same flag). The flags are:
--
-- * `check_nan_inf` (boolean): every op checks its floating outputs and
--   raises an error naming the op and the variable at the first NaN or Inf;
-- * `count_kernels` (boolean): count kernel calls per op type and place
--   (`oar.place.kernel_calls`), to tell a CUDA kernel from a CPU fallback;
-- * `cuda_sync_each_op` (boolean): wait for the device after every CUDA
--   kernel, so a failing kernel is reported by the op that launched it;
-- * `num_threads` (integer 1..4096): the threads OpenMP and OpenBLAS use
--   (default: OpenMP's, i.e. `OMP_NUM_THREADS` or the number of cores);
-- * `profile` (boolean): record per-op times (prefer `oar.profiler`).
--
-- `oar.set_flags`, `oar.get_flags` and `oar.seed` are these functions.
-- @module oar.flags
local ffi = require("ffi")
local lib = require("oar.lib")
local argcheck = require("oar.argcheck")
local C = lib.C

local raise = require("oar.framework").raise
local M = {}

--- The names of the flags, in alphabetical order.
M.KNOWN = { "check_nan_inf", "count_kernels", "cuda_sync_each_op", "inference_max_while_iterations",
            "max_while_iterations", "memory_plan", "num_threads", "profile" }

local function flag_name(name, who)
  if type(name) ~= "string" then
    raise(who .. ": flag names must be strings, got " .. type(name))
  end
  local n = name:gsub("^FLAGS_", "")
  for _, k in ipairs(M.KNOWN) do
    if k == n then return n end
  end
  raise((argcheck.unknown_message(who, n, M.KNOWN):gsub("unknown argument", "unknown flag")))
end

--- Sets runtime flags.
-- Every name and value is checked before any flag changes.
-- @tparam table flags `{name = value}`; booleans or integers
-- @raise on an unknown flag (with the closest known name) or a bad value
-- @usage oar.set_flags{check_nan_inf = true, num_threads = 2}
function M.set_flags(flags)
  local who = "oar.set_flags"
  if type(flags) ~= "table" then
    raise(who .. ": expected a table of flags like {check_nan_inf=true}, got " .. type(flags))
  end
  local todo = {}
  for name, value in pairs(flags) do
    local n = flag_name(name, who)
    local v
    if type(value) == "boolean" then v = value and 1 or 0
    elseif type(value) == "number" and value % 1 == 0 then v = value
    else
      raise(string.format("%s: flag '%s' must be a boolean or an integer, got %s",
        who, n, tostring(value)))
    end
    todo[#todo + 1] = { n, v }
  end
  for _, f in ipairs(todo) do
    if C.oar_set_flag(f[1], ffi.new("int64_t", f[2])) ~= 0 then
      raise(who .. ": " .. lib.last_error())
    end
  end
end

--- Reads runtime flags.
-- @tparam string|{string,...} names one flag name or a list of them
-- @treturn table `{name = number}` (booleans read as 0 or 1), keyed by the names as given
-- @usage print(oar.get_flags("num_threads").num_threads)
function M.get_flags(names)
  local who = "oar.get_flags"
  if type(names) == "string" then names = { names } end
  if type(names) ~= "table" then
    raise(who .. ": expected a flag name or a list of names, got " .. type(names))
  end
  local out = {}
  for _, name in ipairs(names) do
    out[name] = tonumber(C.oar_get_flag(flag_name(name, who)))
  end
  return out
end

--- Reads or sets the seed of the global random generator.
-- Random ops (dropout, random initializers) whose own `seed` attribute is 0
-- draw from this generator.
-- @tparam[opt] int s a non-negative integer; nil reads the seed
-- @treturn ?int the seed, when called without an argument
-- @usage oar.seed(42)
function M.seed(s)
  if s == nil then return tonumber(C.oar_random_seed()) end
  if type(s) ~= "number" or s < 0 or s % 1 ~= 0 then
    raise("oar.seed: expected a non-negative integer, got " .. tostring(s))
  end
  C.oar_set_random_seed(ffi.new("uint64_t", s))
end

return M
