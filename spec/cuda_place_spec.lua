-- CUDAPlace where no GPU can be used (a build without CUDA, or no driver or
-- device): an Executor on it fails with an error that says why, from Lua and
-- from C, and the runtime goes on working on the CPU afterwards. Where a GPU
-- exists, asking for a device beyond the last one fails the same way.
local ffi = require("ffi")
local oar = require("oar")
local lib = require("oar.lib")
local place = require("oar.place")
local C = lib.C
local layers = oar.layers

local function errmsg(fn, ...)
  local ok, err = pcall(fn, ...)
  assert.is_false(ok, "expected an error")
  return tostring(err)
end

-- the device index that cannot be used here, and the reason C gives
local function unusable()
  local n = place.cuda_device_count()
  if not oar.is_compiled_with_cuda() then return 0, "oar was built without CUDA" end
  if n == 0 then return 0, "no CUDA device is available" end
  return n, "there %a+ only " .. n .. " CUDA device"
end

describe("CUDA place without a usable device", function()
  it("counts devices consistently with the build", function()
    local n = place.cuda_device_count()
    assert.are.equal("number", type(n))
    assert.are.equal(n, tonumber(C.oar_cuda_device_count()))
    assert.is_true(n >= 0 and n % 1 == 0)
    if not oar.is_compiled_with_cuda() then assert.are.equal(0, n) end
  end)

  it("refuses an Executor on the device with the reason, naming the place once", function()
    local dev, reason = unusable()
    local msg = errmsg(oar.Executor, oar.CUDAPlace(dev))
    assert.matches("Executor%(CUDAPlace%(" .. dev .. "%)%): " .. reason, msg)
    assert.is_nil(msg:find("CUDAPlace%(" .. dev .. "%): CUDAPlace"))
    -- asking again gives the same answer
    assert.are.equal(msg, errmsg(oar.Executor, oar.CUDAPlace(dev)))
  end)

  it("fails oar_executor_new in C with a status and the message", function()
    local dev, reason = unusable()
    local out = ffi.new("oar_executor_t *[1]")
    local rc = C.oar_executor_new(C.OAR_PLACE_CUDA, dev, out)
    assert.is_true(rc == C.OAR_ERR_UNSUPPORTED or rc == C.OAR_ERR_RANGE)
    assert.matches("CUDAPlace%(" .. dev .. "%): " .. reason, lib.last_error())
    -- a negative device is a bad argument, whatever the build
    assert.are.equal(C.OAR_ERR_INVALID, C.oar_executor_new(C.OAR_PLACE_CUDA, -1, out))
  end)

  it("keeps running programs on the CPU after the failure", function()
    local dev = unusable()
    pcall(oar.Executor, oar.CUDAPlace(dev))
    local main, startup = oar.Program(), oar.Program()
    local y, w
    oar.program_guard(main, startup, function()
      local x = layers.data{ name = "x", shape = { 3 } }
      y = layers.fc{ input = x, size = 2, act = "relu",
                     param_attr = oar.ParamAttr{ name = "w",
                       initializer = oar.initializer.Constant{ value = 0.5 } },
                     bias_attr = false }
      w = "w"
    end)
    local exe = oar.Executor(oar.CPUPlace())
    local scope = oar.Scope()
    exe:run(startup, { scope = scope })
    local out = exe:run(main, { feed = { x = { { 1, 2, 3 }, { -4, 0, 1 } } }, fetch_list = { y, w }, scope = scope })
    assert.are.same({ { 3, 3 }, { 0, 0 } }, out[1]:totable())
    assert.are.same({ { 0.5, 0.5 }, { 0.5, 0.5 }, { 0.5, 0.5 } }, out[2]:totable())
    -- fetched tensors live in host memory
    assert.are.equal(C.OAR_PLACE_CPU, C.oar_tensor_place(out[1].handle))
    assert.is_not_nil(out[1]:data())
  end)
end)
