-- The op registry is strict (src/registry.c): an op declared twice, a
-- second kernel for the same (op, place, dtype) and a kernel for an op no
-- definition declares are errors that name both parties, whether they come
-- from a direct call or from a library's constructors as it loads (then
-- oar_registry_check reports them before anything runs).
local ffi = require("ffi")
local oar = require("oar")
local lib = require("oar.lib")
local C = lib.load_op_api()
local tmpdir = require("spec.helpers.files").tmpdir

local function sh(cmd)
  local p = io.popen(cmd .. " 2>&1")
  local out = p:read("*a")
  local ok = p:close()
  return ok, out
end

describe("the op registry", function()
  it("is consistent as liboar loads", function()
    assert.are.equal(0, C.oar_registry_check())
    assert.is_true(oar ~= nil)
  end)

  it("refuses a second kernel for one op, place and dtype, naming both", function()
    local relu = C.oar_registry_kernel("relu", 0, 5)   -- CPU, float32
    assert.is_true(relu ~= nil)
    -- the same function again is harmless (a library loaded twice)
    assert.are.equal(0, C.oar_registry_add_kernel_named("relu", 0, 5, relu, "relu again"))
    local other = C.oar_registry_kernel("sigmoid", 0, 5)
    assert.are_not.equal(0, C.oar_registry_add_kernel_named("relu", 0, 5, other, "impostor_kernel"))
    local msg = lib.last_error()
    assert.matches("op 'relu' has two CPU float32 kernels", msg, 1, true)
    assert.matches("impostor_kernel", msg, 1, true)
    assert.matches("relu", msg, 1, true)
    -- the first one stays
    assert.are.equal(relu, C.oar_registry_kernel("relu", 0, 5))
  end)

  it("reports, before anything runs, what a library's constructors registered wrongly", function()
    local dir = tmpdir()
    assert(os.execute("mkdir -p " .. dir) == 0)
    local src = dir .. "/bad_kernels.c"
    local f = assert(io.open(src, "w"))
    f:write([[
#include "op.h"
static int dup_relu_f32(oar_kernel_ctx_t *k) { (void)k; return 0; }
OAR_REGISTER_KERNEL("relu", OAR_PLACE_CPU, OAR_FP32, dup_relu_f32)
static int ghost_f32(oar_kernel_ctx_t *k) { (void)k; return 0; }
OAR_REGISTER_KERNEL("no_such_op_xyz", OAR_PLACE_CPU, OAR_FP32, ghost_f32)
]])
    f:close()
    local so = dir .. "/libbad_kernels.so"
    local ok, out = sh(("cc -std=c11 -shared -fPIC -D_GNU_SOURCE -Isrc -Ibuild %s -o %s -Lbuild -loar"):format(src, so))
    assert.is_true(ok, out)
    -- a process of its own: the registry it leaves behind is unusable
    local lua = ([[
      package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
      package.cpath = "./build/?.so;" .. package.cpath
      local ffi = require("ffi")
      local lib = require("oar.lib")
      ffi.load("%s")
      if lib.C.oar_registry_check() == 0 then print("no error") os.exit(1) end
      print(lib.last_error())
    ]]):format(so)
    local ok2, out2 = sh("luajit -e '" .. lua:gsub("'", "'\\''") .. "'")
    assert.is_true(ok2, out2)
    assert.matches("op 'relu' has two CPU float32 kernels", out2, 1, true)
    assert.matches("dup_relu_f32", out2, 1, true)
    assert.matches("kernel ghost_f32", out2, 1, true)
    assert.matches("op 'no_such_op_xyz', which no definition declares", out2, 1, true)
  end)
end)
