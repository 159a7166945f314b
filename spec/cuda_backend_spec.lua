-- The CUDA place's CPU side, on any machine: liboar.so links no CUDA
-- library and a CPU-only process maps none; the CUDA backend is loaded at
-- run time and every way it can be missing gives an error naming what is
-- missing; and, with a fake backend whose "device" memory is host memory
-- (spec/fixtures/fake_cuda_backend.c), the paths a CUDA run takes:
-- device kernels against CPU fallbacks (the per-place kernel counter), the
-- fallback's host copies leaving variables on the device, reading and
-- saving device tensors, copies between two devices, the run-end check.
-- Each case runs in a child process, since a loaded backend stays loaded.
local ROOT = assert(io.popen("pwd")):read("*l")
local BUILD = ROOT .. "/build"

local function sh_quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

local function sh(cmd)
  local p = io.popen(cmd .. " 2>&1; echo \"exit $?\"")
  local out = p:read("*a")
  p:close()
  local code = tonumber(out:match("exit (%d+)%s*$"))
  return code, out:gsub("exit %d+%s*$", "")
end

local tmp
local function tmpdir()
  if not tmp then
    tmp = os.tmpname()
    os.remove(tmp)
    assert(os.execute("mkdir -p " .. sh_quote(tmp)) == 0 or true)
  end
  return tmp
end

-- runs `code` in a fresh luajit with `env` ({NAME = value}); returns exit code and output
local function child(code, env)
  local file = tmpdir() .. "/child.lua"
  local f = assert(io.open(file, "w"))
  f:write('package.path = "', ROOT, '/lua/?.lua;', ROOT, '/lua/?/init.lua;" .. package.path\n')
  f:write(code)
  f:close()
  local vars = { "OAR_LIBRARY=" .. sh_quote(BUILD .. "/liboar.so") }
  for k, v in pairs(env or {}) do vars[#vars + 1] = k .. "=" .. sh_quote(v) end
  return sh("env -u OAR_CUDA_BACKEND " .. table.concat(vars, " ") .. " luajit " .. sh_quote(file))
end

local function gcc(args)
  local code, out = sh("gcc -std=c11 -D_GNU_SOURCE -fPIC -shared -I" .. ROOT .. "/src -I" .. BUILD .. " " .. args)
  assert(code == 0, out)
end

local fake
local function fake_backend()
  if not fake then
    fake = tmpdir() .. "/fake_cuda_backend.so"
    gcc(sh_quote(ROOT .. "/spec/fixtures/fake_cuda_backend.c") .. " -o " .. sh_quote(fake) ..
        " -L" .. BUILD .. " -loar -Wl,-rpath," .. BUILD)
  end
  return fake
end

teardown(function()
  if tmp then os.execute("rm -rf " .. sh_quote(tmp)) end
end)

-- a small program: fc (mul + elementwise_add, CPU only) -> relu (the fake
-- backend's CUDA kernel) -> mean, trained with SGD
local PROGRAM = [[
local oar = require("oar")
local ffi = require("ffi")
local main, startup = oar.Program(), oar.Program()
local loss, hidden
oar.program_guard(main, startup, function()
  local x = oar.layers.data{ name = "x", shape = { 3 } }
  hidden = oar.layers.fc{ input = x, size = 4, act = "relu",
    param_attr = oar.ParamAttr{ name = "w", initializer = oar.initializer.Uniform{ low = -1, high = 1, seed = 7 } } }
  loss = oar.layers.mean{ x = hidden }
  oar.optimizer.SGD{ learning_rate = 0.1 }:minimize(loss)
end)
local feed = { x = oar.Tensor({ { 1, -2, 3 }, { 0.5, 1, -1 } }, "float32") }
local function train(place, steps)
  local scope = oar.Scope()
  local exe = oar.Executor(place)
  local losses = {}
  oar.scope_guard(scope, function()
    exe:run(startup)
    for i = 1, steps do losses[i] = exe:run(main, { feed = feed, fetch_list = { loss } })[1]:item() end
  end)
  return scope, exe, losses
end
]]

describe("the CUDA backend is loaded at run time", function()
  it("liboar.so names no CUDA library", function()
    local code, out = sh("readelf -d " .. sh_quote(BUILD .. "/liboar.so"))
    assert.are.equal(0, code, out)
    assert.is_truthy(out:find("NEEDED", 1, true), out)
    for _, lib in ipairs({ "cudart", "cublas", "cudnn", "libcuda", "liboar_cuda" }) do
      assert.is_falsy(out:find(lib, 1, true), "liboar.so needs " .. lib .. ":\n" .. out)
    end
  end)

  it("liboar_cuda.so imports from liboar only what src/backend.h lists", function()
    local f = io.open(BUILD .. "/liboar_cuda.so", "rb")
    if not f then
      pending("build/liboar_cuda.so was not built (no nvcc)")
      return
    end
    f:close()
    local header = assert(io.open(ROOT .. "/src/backend.h")):read("*a")
    local list = header:match("#define OAR_BACKEND_IMPORTS(.-)\n\n")
    local listed = {}
    for name in list:gmatch('"(oar_[%w_]+)"') do listed[name] = true end
    local code, out = sh("nm -D --undefined-only " .. sh_quote(BUILD .. "/liboar_cuda.so"))
    assert.are.equal(0, code, out)
    local n = 0
    for name in out:gmatch("%s(oar_[%w_]+)") do
      n = n + 1
      assert.is_true(listed[name] == true, name .. " is imported by liboar_cuda.so but not listed in OAR_BACKEND_IMPORTS")
    end
    assert.is_true(n > 10, out)
  end)

  -- NCCL is opened by the collective ops when they first run
  -- (kernels/cuda/collective.cu), never linked; cuBLAS and cuDNN are found
  -- through the RUNPATH tools/find_cuda_libs gave the backend
  it("liboar_cuda.so does not depend on NCCL, and its RUNPATH names where cuBLAS and cuDNN were found", function()
    local so = BUILD .. "/liboar_cuda.so"
    local f = io.open(so, "rb")
    if not f then
      pending("build/liboar_cuda.so was not built (no nvcc)")
      return
    end
    f:close()
    local code, out = sh("readelf -d " .. sh_quote(so))
    assert.are.equal(0, code, out)
    assert.is_falsy(out:find("libnccl", 1, true), "liboar_cuda.so needs NCCL:\n" .. out)
    local runpath = out:match("RUNPATH%)%s+Library runpath: %[([^%]]*)%]")
    assert.is_truthy(runpath, "no RUNPATH:\n" .. out)
    local dirs = {}
    for d in runpath:gmatch("[^:]+") do dirs[d] = true end
    assert.is_true(dirs["$ORIGIN"], runpath)
    local mk = io.open(BUILD .. "/cuda_libs.mk")
    if mk then
      local vars = mk:read("*a")
      mk:close()
      for _, v in ipairs({ "CUBLAS_LIBDIR", "CUDNN_LIBDIR", "NCCL_LIBDIR" }) do
        local d = vars:match(v .. " := (%S+)")
        if d and not d:match("^/usr/lib") and not d:match("^/lib") then
          assert.is_true(dirs[d], v .. " " .. d .. " is not in the RUNPATH " .. runpath)
        end
      end
    end
    code, out = sh("nm -D --undefined-only " .. sh_quote(so))
    assert.are.equal(0, code, out)
    assert.is_falsy(out:find("nccl", 1, true), "liboar_cuda.so imports NCCL symbols:\n" .. out)
  end)

  it("a CPU-only process maps no CUDA library", function()
    local code, out = child(PROGRAM .. [[
local _, _, losses = train(oar.CPUPlace(), 2)
assert(losses[2] < losses[1])
local t = oar.Tensor({ 1, 2 }, "float32")
print(t, t:place())
for line in io.lines("/proc/self/maps") do
  if line:find("cudart") or line:find("cublas") or line:find("cudnn") or line:find("libcuda")
     or line:find("liboar_cuda") then
    print("MAPPED " .. line)
  end
end
print("DONE")
]])
    assert.are.equal(0, code, out)
    assert.is_truthy(out:find("DONE", 1, true), out)
    assert.is_falsy(out:find("MAPPED", 1, true), out)
    assert.is_truthy(out:find("CPUPlace", 1, true), out)
  end)

  it("a missing backend file is named, and CPU work goes on", function()
    local code, out = child(PROGRAM .. [[
assert(oar.is_compiled_with_cuda() == false)
assert(oar.place.cuda_device_count() == 0)
local ok, err = pcall(oar.Executor, oar.CUDAPlace(0))
assert(not ok)
print("ERR " .. tostring(err))
local _, _, losses = train(oar.CPUPlace(), 2)
assert(losses[2] < losses[1])
print("DONE")
]], { OAR_CUDA_BACKEND = "/nonexistent/liboar_cuda.so" })
    assert.are.equal(0, code, out)
    assert.is_truthy(out:find("Executor(CUDAPlace(0)): the CUDA backend /nonexistent/liboar_cuda.so (from $OAR_CUDA_BACKEND) " ..
      "does not exist", 1, true), out)
    assert.is_truthy(out:find("DONE", 1, true), out)
  end)

  it("a library the backend needs that is missing is named by the dynamic linker's message", function()
    local dir = tmpdir()
    -- a backend linked against a library that is then removed
    gcc("-x c /dev/null -o " .. sh_quote(dir .. "/libfakecudnn.so.9") .. " -Wl,-soname,libfakecudnn.so.9")
    local f = assert(io.open(dir .. "/needs.c", "w"))
    f:write("int oar_cuda_backend_marker(void) { return 1; }\n")
    f:close()
    gcc(sh_quote(dir .. "/needs.c") .. " -o " .. sh_quote(dir .. "/needs_lib.so") .. " -Wl,--no-as-needed " ..
        sh_quote(dir .. "/libfakecudnn.so.9"))
    os.remove(dir .. "/libfakecudnn.so.9")
    local code, out = child(PROGRAM .. [[
assert(oar.is_compiled_with_cuda() == false)
print("WHY " .. ffi.string(oar.lib.C.oar_cuda_backend_error()))
local ok, err = pcall(oar.Executor, oar.CUDAPlace(0))
print("ERR " .. tostring(err))
local _, _, losses = train(oar.CPUPlace(), 2)
assert(losses[2] < losses[1])
print("DONE")
]], { OAR_CUDA_BACKEND = dir .. "/needs_lib.so" })
    assert.are.equal(0, code, out)
    assert.is_truthy(out:find("ERR [^\n]*could not be loaded: [^\n]*libfakecudnn%.so%.9: cannot open shared object file"),
      out)
    assert.is_truthy(out:find("DONE", 1, true), out)
  end)

  it("a library that is not a backend, or a backend of another ABI, is refused with the reason", function()
    local dir = tmpdir()
    gcc("-x c /dev/null -o " .. sh_quote(dir .. "/not_backend.so"))
    local script = [[
local oar = require("oar")
local ok, err = pcall(oar.Executor, oar.CUDAPlace(0))
print("ERR " .. tostring(err))
]]
    local code, out = child(script, { OAR_CUDA_BACKEND = dir .. "/not_backend.so" })
    assert.are.equal(0, code, out)
    assert.is_truthy(out:find("not_backend.so is not an oar backend (it has no symbol oar_cuda_backend)", 1, true), out)
    code, out = child(script, { OAR_CUDA_BACKEND = fake_backend(), FAKE_BACKEND_ABI = "99" })
    assert.are.equal(0, code, out)
    local abi = assert(io.open(ROOT .. "/src/backend.h")):read("*a"):match("#define OAR_BACKEND_ABI (%d+)")
    assert.is_truthy(out:find("was built for backend ABI 99, this liboar needs " .. abi .. ": rebuild both with make", 1,
      true), out)
  end)
end)

-- The kernels' ABI: a CUDA kernel reaches the op it runs only through the
-- oar_k_* accessors (imported, so OAR_BACKEND_ABI covers them), never
-- through the executor's structs, whose layout liboar may change freely.
describe("the CUDA kernels see the kernel context only through accessors", function()
  local function sources()
    local files = {}
    local p = assert(io.popen("ls " .. sh_quote(ROOT) .. "/kernels/cuda/*.cu " .. sh_quote(ROOT) ..
      "/kernels/cuda/*.h " .. sh_quote(ROOT) .. "/kernels/cuda/*.cuh " .. sh_quote(ROOT) ..
      "/tools/cuda_emu/prelude*.h 2>/dev/null"))
    for f in p:lines() do files[#files + 1] = f end
    p:close()
    assert.is_true(#files > 20, "found only " .. #files .. " CUDA sources")
    return files
  end
  -- executor-private headers (src/exec.h and the ones only the executor uses)
  local PRIVATE = { "exec.h", "scope.h", "strmap.h" }

  it("include no executor-private header", function()
    local bad = {}
    for _, f in ipairs(sources()) do
      local text = assert(io.open(f)):read("*a")
      for _, h in ipairs(PRIVATE) do
        if text:find('#include%s*"' .. h:gsub("%.", "%%.") .. '"') then bad[#bad + 1] = f .. ": " .. h end
      end
    end
    assert.are.same({}, bad)
  end)

  -- k->x, or (k)->x in a macro; not f(k)->x (an accessor's result)
  local function reads_k(code)
    if code:find("%f[%w_]k%s*%->") then return true end
    for at in code:gmatch("()%(k%)%s*%->") do
      local before = code:sub(1, at - 1):match("([%w_]*)%s*$")
      if before == "" or before == "return" then return true end
    end
    return false
  end

  it("read no field of the context (k->..., (k)->...)", function()
    local bad = {}
    for _, f in ipairs(sources()) do
      local n = 0
      for line in io.lines(f) do
        n = n + 1
        if reads_k(line:gsub("//.*$", "")) then
          bad[#bad + 1] = f:sub(#ROOT + 2) .. ":" .. n .. ": " .. line
        end
      end
    end
    assert.are.same({}, bad)
  end)
end)

describe("a CUDA run through the fake backend", function()
  local PRELUDE = PROGRAM .. [[
ffi.cdef[[
int fake_live_blocks, fake_peer_copies, fake_last_src_device, fake_last_dst_device, fake_run_ends, fake_syncs;
]] .. "]]" .. [[

local fake = ffi.load(os.getenv("OAR_CUDA_BACKEND"))
local C = oar.lib.C
local function close(a, b, what)
  assert(math.abs(a - b) <= 1e-5 * math.max(1, math.abs(b)), string.format("%s: %.9g vs %.9g", what, a, b))
end
]]

  local function run(body, env)
    env = env or {}
    env.OAR_CUDA_BACKEND = fake_backend()
    local code, out = child(PRELUDE .. body .. "\nprint('DONE')\n", env)
    assert.are.equal(0, code, out)
    assert.is_truthy(out:find("DONE", 1, true), out)
    return out
  end

  it("loads it, runs its CUDA kernel and the CPU fallbacks, and trains like the CPU", function()
    run([[
assert(oar.is_compiled_with_cuda() == true)
assert(oar.place.cuda_device_count() == 2)
oar.set_flags{ count_kernels = true }
local _, _, cpu = train(oar.CPUPlace(), 3)
assert(C.oar_kernel_calls("relu", C.OAR_PLACE_CPU) == 3)
assert(C.oar_kernel_calls("relu", C.OAR_PLACE_CUDA) == 0)
oar.lib.C.oar_kernel_calls_reset()
local scope, _, gpu = train(oar.CUDAPlace(0), 3)
-- relu ran the device kernel; mul, which has none here, the CPU fallback
assert(C.oar_kernel_calls("relu", C.OAR_PLACE_CUDA) == 3, tostring(C.oar_kernel_calls("relu", C.OAR_PLACE_CUDA)))
assert(C.oar_kernel_calls("relu", C.OAR_PLACE_CPU) == 0)
assert(C.oar_kernel_calls("mul", C.OAR_PLACE_CPU) == 3)
assert(C.oar_kernel_calls("mul", C.OAR_PLACE_CUDA) == 0)
for i = 1, 3 do close(gpu[i], cpu[i], "loss " .. i) end
-- one run-end check per run (startup and three steps)
assert(fake.fake_run_ends == 4, tostring(fake.fake_run_ends))
]])
  end)

  it("a CPU fallback reads host copies: the variable stays on the device", function()
    run([[
local prog = oar.Program()
local block = prog:global_block()
local x = block:create_var{ name = "x", shape = { -1, 3 }, dtype = "float32" }
local h = block:create_var{ name = "h", shape = { -1, 3 }, dtype = "float32", persistable = true }
local o1 = block:create_var{ name = "o1", shape = { -1, 3 }, dtype = "float32" }
local o2 = block:create_var{ name = "o2", shape = { -1, 3 }, dtype = "float32" }
block:append_op{ type = "relu", inputs = { X = { x } }, outputs = { Out = { h } } }
-- two CPU fallbacks read h (scale has no kernel in the fake backend)
block:append_op{ type = "scale", inputs = { X = { h } }, outputs = { Out = { o1 } }, attrs = { scale = 2 } }
block:append_op{ type = "scale", inputs = { X = { h } }, outputs = { Out = { o2 } }, attrs = { scale = -1 } }
local scope = oar.Scope()
oar.set_flags{ count_kernels = true }
local out = oar.scope_guard(scope, function()
  return oar.Executor(oar.CUDAPlace(0)):run(prog, { feed = feed, fetch_list = { o1, o2 } })
end)
assert(C.oar_kernel_calls("scale", C.OAR_PLACE_CPU) == 2)
local a, b = out[1]:totable(), out[2]:totable()
assert(a[1][1] == 2 and a[1][2] == 0 and a[1][3] == 6, table.concat(a[1], " "))
assert(b[2][1] == -0.5 and b[2][3] == 0, table.concat(b[2], " "))
local t = scope:find_var("h"):get_tensor()
assert(t:place() == oar.CUDAPlace(0), "h was moved to " .. tostring(t:place()))
assert(t:get(1, 3) == 3)
]])
  end)

  it("reads a tensor a CUDA run left in the scope (totable, get, item, printing, to_host)", function()
    run([[
local cpu_scope = train(oar.CPUPlace(), 2)
local gpu_scope = train(oar.CUDAPlace(0), 2)
local dev = oar.Tensor({ { 1.5, -2 }, { 3, 4 } }, "float32"):to_place(oar.CUDAPlace(0))
assert(dev:place() == oar.CUDAPlace(0), tostring(dev:place()))
assert(dev:get(2, 1) == 3)
local rows = dev:totable()
assert(rows[1][1] == 1.5 and rows[2][2] == 4)
assert(tostring(dev):find("place=CUDAPlace(0)", 1, true), tostring(dev))
assert(tostring(dev):find("-2", 1, true), tostring(dev))
local one = oar.Tensor({ 7 }, "float32"):to_place(oar.CUDAPlace(1))
assert(one:item() == 7)
local ok, err = pcall(dev.data, dev)
assert(not ok and err:find("not in host memory; read it with t:to_host", 1, true), err)
ok, err = pcall(dev.set, dev, 1, 1, 1)
assert(not ok and err:find("Tensor:set: the tensor is on CUDAPlace(0)", 1, true), err)
local host = dev:to_host()
assert(host:place() == oar.CPUPlace() and host:data()[3] == 4)
-- the trained weights, read from the device scope, equal the CPU's
local a = cpu_scope:find_var("w"):get_tensor():totable()
local b = gpu_scope:find_var("w"):get_tensor():totable()
for i = 1, 3 do for j = 1, 4 do close(b[i][j], a[i][j], "w") end end
]])
  end)

  it("saves persistables after training on the device, and loads them back", function()
    local dir = tmpdir() .. "/saved"
    run(string.format([[
local scope, exe = train(oar.CUDAPlace(0), 2)
local before = scope:find_var("w"):get_tensor():totable()
oar.scope_guard(scope, function() oar.io.save_persistables(exe, %q, main) end)
local fresh = oar.Scope()
oar.scope_guard(fresh, function() oar.io.load_persistables(oar.Executor(oar.CPUPlace()), %q, main) end)
local after = fresh:find_var("w"):get_tensor():totable()
for i = 1, 3 do for j = 1, 4 do close(after[i][j], before[i][j], "w") end end
]], dir, dir))
  end)

  it("copies between two devices name both devices to the backend", function()
    run([[
local t = oar.Tensor({ 1, 2, 3 }, "float32"):to_place(oar.CUDAPlace(0))
local u = t:to_place(oar.CUDAPlace(1))
assert(fake.fake_peer_copies == 1)
assert(fake.fake_last_src_device == 0 and fake.fake_last_dst_device == 1,
  fake.fake_last_src_device .. " -> " .. fake.fake_last_dst_device)
assert(u:place() == oar.CUDAPlace(1))
local v = u:totable()
assert(v[1] == 1 and v[3] == 3)
]])
  end)

  it("a range check flagged on the device fails the run that made it", function()
    local out = run([[
local ok, err = pcall(train, oar.CUDAPlace(0), 1)
assert(not ok)
print("ERR " .. tostring(err))
]], { FAKE_FLAG_AT_RUN_END = "1" })
    assert.is_truthy(out:find("range check on fake device 0 (first at position 3)", 1, true), out)
  end)

  it("cuda_sync_each_op waits after every device kernel", function()
    run([[
train(oar.CUDAPlace(0), 1)
local base = fake.fake_syncs
oar.set_flags{ cuda_sync_each_op = true }
assert(oar.get_flags("cuda_sync_each_op").cuda_sync_each_op == 1)
train(oar.CUDAPlace(0), 1)
-- relu and relu_grad have "device" kernels here: one wait after each
assert(fake.fake_syncs - base >= 1, tostring(fake.fake_syncs - base))
]])
  end)
end)

describe("the GPU spec through the fake backend", function()
  it("spec/cuda_spec.lua runs end to end (CPU kernels on both sides, the relu kernel on the fake device)", function()
    -- keeps the GPU spec's own code (loss weights, counters, cases) working on machines without a GPU
    local code, out = sh("env OAR_CUDA_BACKEND=" .. sh_quote(fake_backend()) .. " busted spec/cuda_spec.lua")
    assert.are.equal(0, code, out)
    assert.matches("(%d+) successes / 0 failures / 0 errors / 0 pending", out)
    assert.is_true(tonumber(out:match("(%d+) successes")) >= 50, out)
  end)
end)
