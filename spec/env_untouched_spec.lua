-- Loading oar leaves the process environment as it was (oar configures
-- libgomp's wait policy and spin count only for the moment libgomp reads
-- them, and never
-- touches OPENBLAS_*); checked in a fresh process, since busted's has oar
-- loaded already.
describe("require('oar')", function()
  local function in_fresh_process(env_prefix)
    local code = [[package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
package.cpath = "./build/?.so;" .. package.cpath
require("oar")
io.write(tostring(os.getenv("OMP_WAIT_POLICY")), " ", tostring(os.getenv("OPENBLAS_CORETYPE")), " ",
         tostring(os.getenv("GOMP_SPINCOUNT")))]]
    local f = assert(io.popen(env_prefix .. " luajit -e '" .. code .. "' 2>&1"))
    local out = f:read("*a")
    f:close()
    return out
  end
  it("does not leave OMP_WAIT_POLICY or GOMP_SPINCOUNT set", function()
    assert.equals("nil nil nil", in_fresh_process("env -u OMP_WAIT_POLICY -u OPENBLAS_CORETYPE -u GOMP_SPINCOUNT"))
  end)
  it("keeps the user's own settings", function()
    assert.equals("ACTIVE Haswell nil", in_fresh_process("env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=ACTIVE OPENBLAS_CORETYPE=Haswell"))
    assert.equals("nil nil 50", in_fresh_process("env -u OMP_WAIT_POLICY -u OPENBLAS_CORETYPE GOMP_SPINCOUNT=50"))
  end)
end)
