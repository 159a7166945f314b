-- Loading oar leaves the process environment as it was (oar configures
-- libgomp's wait policy and spin count, and OpenBLAS's pool size, only for
-- the moment the libraries read them, and only when the user has not set
-- them); checked in a fresh process, since busted's has oar loaded already.
describe("require('oar')", function()
  local function in_fresh_process(env_prefix)
    local code = [[package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
package.cpath = "./build/?.so;" .. package.cpath
require("oar")
io.write(tostring(os.getenv("OMP_WAIT_POLICY")), " ", tostring(os.getenv("OPENBLAS_CORETYPE")), " ",
         tostring(os.getenv("GOMP_SPINCOUNT")), " ", tostring(os.getenv("OPENBLAS_NUM_THREADS")))]]
    local f = assert(io.popen(env_prefix .. " luajit -e '" .. code .. "' 2>&1"))
    local out = f:read("*a")
    f:close()
    return out
  end
  it("does not leave OMP_WAIT_POLICY, GOMP_SPINCOUNT or OPENBLAS_NUM_THREADS set", function()
    assert.equals("nil nil nil nil", in_fresh_process(
      "env -u OMP_WAIT_POLICY -u OPENBLAS_CORETYPE -u GOMP_SPINCOUNT -u OPENBLAS_NUM_THREADS"))
  end)
  it("keeps the user's own settings", function()
    assert.equals("ACTIVE Haswell nil nil", in_fresh_process(
      "env -u GOMP_SPINCOUNT -u OPENBLAS_NUM_THREADS OMP_WAIT_POLICY=ACTIVE OPENBLAS_CORETYPE=Haswell"))
    assert.equals("nil nil 50 3", in_fresh_process(
      "env -u OMP_WAIT_POLICY -u OPENBLAS_CORETYPE GOMP_SPINCOUNT=50 OPENBLAS_NUM_THREADS=3"))
  end)
  it("starts no OpenBLAS worker thread unless the user sized its pool", function()
    local code = [[package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
package.cpath = "./build/?.so;" .. package.cpath
local ffi = require("ffi")
ffi.cdef("int getpid(void);")
require("oar")
local n = 0
for _ in io.popen("ls /proc/" .. ffi.C.getpid() .. "/task"):lines() do n = n + 1 end
io.write(n)]]
    local function threads(env)
      local f = assert(io.popen(env .. " luajit -e '" .. code .. "' 2>&1"))
      local out = f:read("*a")
      f:close()
      return tonumber(out) or out
    end
    -- OpenBLAS would size its pool from OMP_NUM_THREADS: one worker beside the main thread
    assert.equals(1, threads("env -u OPENBLAS_NUM_THREADS OMP_NUM_THREADS=2"))
    assert.equals(2, threads("env OPENBLAS_NUM_THREADS=2 OMP_NUM_THREADS=2"))
  end)
end)
