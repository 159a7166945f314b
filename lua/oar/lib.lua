-- oar.lib: the one place that declares the C API to LuaJIT's FFI and loads
-- liboar. Everything else reaches C through `lib.C` and `lib.check`.
local ffi = require("ffi")

local M = {}

ffi.cdef(require("oar.cdef"))
ffi.cdef[[
void free(void *ptr);
int setenv(const char *name, const char *value, int overwrite);
int unsetenv(const char *name);
]]

local function find_library()
  local env = os.getenv("OAR_LIBRARY")
  if env and env ~= "" then return env end
  local path = package.searchpath("liboar", package.cpath)
  if path then return path end
  -- a source checkout: lua/oar/lib.lua -> build/liboar.so
  local here = debug.getinfo(1, "S").source:match("^@(.*)lua/oar/lib%.lua$")
  if here then
    local candidate = (here == "" and "./" or here) .. "build/liboar.so"
    local f = io.open(candidate, "rb")
    if f then f:close() return candidate end
  end
  return nil
end

local libpath = find_library()
if not libpath then
  error("oar: liboar.so not found on package.cpath (" .. package.cpath .. "). " ..
        "Build it with `make` in the source tree, or install with " ..
        "`luarocks --lua-version=5.1 make --deps-mode=none` and run " ..
        "`eval \"$(luarocks --lua-version=5.1 path)\"`.", 0)
end
M.path = libpath
-- OpenMP worker threads wait between parallel loops. Spinning forever
-- takes the core from the thread with work whenever the machine runs
-- anything else (measured: 5x slower MLP training under load); sleeping at
-- once costs a futex wake-up per loop (measured: MLP SGD on 2 threads at
-- 55-60k samples/s against 72k with a short spin, quiet machine). So they
-- spin briefly (GOMP_SPINCOUNT=1000, about 10 us) and then sleep (passive
-- policy). libgomp reads both once, when liboar loads it, so they are set
-- for that moment and removed again: the user's environment is left as it
-- was, and a user's own OMP_WAIT_POLICY or GOMP_SPINCOUNT wins.
--
-- OpenBLAS (float64 products, GEMVs) is held to one thread by liboar
-- (kernels/cpu/dnnl_gemm.c): every split is oar's, on libgomp. But OpenBLAS's
-- pthread build starts its own pool when it loads, sized by
-- OPENBLAS_NUM_THREADS or else OMP_NUM_THREADS, and a fresh worker spins in
-- sched_yield for its first ~0.1 s: a whole core taken from oar's second
-- thread (fit_a_line's epoch ran 15 % slower on 2 threads than on 1). So
-- OPENBLAS_NUM_THREADS=1 is set, like the two above, only for that moment
-- and only when the user has not set it.
local function unset(name) return os.getenv(name) == nil end
local for_load = {}   -- the variables set here, removed once the library is loaded
local function set_for_load(name, value, when)
  if when then
    ffi.C.setenv(name, value, 0)
    for_load[#for_load + 1] = name
  end
end
-- a user's own wait policy also keeps the spin count libgomp derives from it
set_for_load("GOMP_SPINCOUNT", "1000", unset("OMP_WAIT_POLICY") and unset("GOMP_SPINCOUNT"))
set_for_load("OMP_WAIT_POLICY", "PASSIVE", unset("OMP_WAIT_POLICY"))
set_for_load("OPENBLAS_NUM_THREADS", "1", unset("OPENBLAS_NUM_THREADS"))
local ok_load, lib_or_err = pcall(ffi.load, libpath)
for _, name in ipairs(for_load) do ffi.C.unsetenv(name) end
if not ok_load then error(lib_or_err, 0) end
M.C = lib_or_err
local C = M.C

-- The message for the last failed call, as a Lua string.
function M.last_error()
  local msg = C.oar_last_error()
  if msg == nil then return "unknown error" end
  return ffi.string(msg)
end

-- A registry that did not load cleanly (an op declared twice, two kernels
-- for one op, place and dtype, a kernel for an undeclared op) is refused
-- before anything runs.
if C.oar_registry_check() ~= 0 then error("liboar: " .. M.last_error(), 0) end

-- Raises the last error when rc is not OAR_OK. `level` is passed to error()
-- (default 3: the caller of the function that called check).
function M.check(rc, level)
  if rc ~= 0 then
    error(M.last_error(), level or 3)
  end
  return rc
end

-- The op-authoring API (src/oar_op.h: op definitions, kernel contexts, the
-- tensor layout, ...) declared to the FFI, once per process; returns lib.C.
-- The embedding API (oar.h) is always declared; this is for Lua code that
-- defines ops or looks inside C objects (specs, tools).
function M.load_op_api()
  if not pcall(ffi.typeof, "oar_op_def_t") then ffi.cdef(require("oar.cdef_op")) end
  return C
end

-- An array of C strings kept alive together with the Lua strings it points to.
function M.cstrings(list)
  local n = #list
  local arr = ffi.new("const char *[?]", n > 0 and n or 1)
  for i = 1, n do arr[i - 1] = list[i] end
  return arr, n, list
end

return M
