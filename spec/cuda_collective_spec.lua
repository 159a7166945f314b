-- CUDA kernels of the collective ops over NCCL (kernels/cuda/collective.cu;
-- tag: gpu). One worker: each op against its CPU kernel with
-- spec/helpers/cuda_compare.lua (the kernel counter shows the CUDA kernel
-- ran), and the errors both places give. Two workers, under mpirun:
-- all-reduce (sum, max, min, prod), broadcast and all-gather in every dtype
-- against values computed here, and the MLP trained with Adam on the CUDA
-- place, 2 workers x batch B against 1 worker x batch 2B.
--
-- NCCL wants one GPU per worker, so the two-worker cases need two GPUs, or
-- tools/cuda_emu (OAR_CUDA_EMU: one emulated device serves both workers,
-- NCCL emulated over oar's MPI engine):
--   tools/cuda_emu/run spec/cuda_collective_spec.lua kernels/cuda/collective.cu
-- Where no GPU can be used the spec says so and skips.
local oar = require("oar")
local place = require("oar.place")
local C = require("oar.lib").C
local H = require("spec.helpers.cuda_compare")
local rand, same, same_error = H.rand, H.same, H.same_error

local J = require("spec.helpers.mpi_jobs")
local sh_ok, run, tmpbase = J.sh_ok, J.run, J.tmpbase

-- mpirun with the environment that picks the CUDA backend passed on
local function mpirun()
  local x = ""
  for _, v in ipairs({ "OAR_CUDA_BACKEND", "OAR_CUDA_EMU", "OAR_LIBRARY" }) do
    if os.getenv(v) then x = x .. "-x " .. v .. " " end
  end
  return J.MPIRUN .. x
end

describe("CUDA collective kernels (NCCL) #gpu", function()
  local why = H.no_gpu("cuda_collective_spec")
  if why then pending(why) return end
  local devices = place.cuda_device_count()
  oar.fleet.init()

  describe("one worker", function()
    -- (float16 goes through the two-worker case: the comparison helper feeds no float16)
    it("c_allreduce_sum, _max, _min, _prod and c_broadcast give the input back", function()
      for _, op in ipairs({ "c_allreduce_sum", "c_allreduce_max", "c_allreduce_min", "c_allreduce_prod", "c_broadcast" }) do
        for _, dtype in ipairs({ "float32", "float64", "int32", "int64" }) do
          local x = rand({ 3, 5 }, -4, 4, dtype)
          if dtype:match("^int") then
            for i, v in ipairs(x.data) do x.data[i] = math.floor(v) end
          end
          local attrs = { ring_id = 0 }
          if op == "c_broadcast" then attrs.root = 0 end
          local got = same{ type = op, inputs = { X = x }, attrs = attrs }
          assert.are.same({ 3, 5 }, got[1].shape)
        end
      end
    end)

    it("c_allgather of one worker is its input", function()
      same{ type = "c_allgather", inputs = { X = rand({ 4, 3 }, -1, 1) }, attrs = { ring_id = 0, nranks = 1 } }
    end)

    it("c_coalesce and c_split_coalesced copy through one flat buffer", function()
      local a, b = rand({ 2, 3 }, -1, 1), rand({ 4 }, -1, 1)
      local got = same{ type = "c_coalesce", inputs = { X = { a, b } }, outputs = { Out = 1 } }
      assert.are.equal(10, #got[1].data)
      same{ type = "c_split_coalesced", inputs = { X = rand({ 10 }, -1, 1), Ref = { a, b } }, outputs = { Out = 2 } }
    end)

    it("refuses a ring other than 0 and a root that is no worker, as the CPU kernel does", function()
      same_error({ type = "c_allreduce_sum", inputs = { X = rand({ 4 }, -1, 1) }, attrs = { ring_id = 1 } }, "ring_id 1")
      same_error({ type = "c_broadcast", inputs = { X = rand({ 4 }, -1, 1) }, attrs = { ring_id = 0, root = 3 } },
        "root 3")
      same_error({ type = "c_allgather", inputs = { X = rand({ 4 }, -1, 1) }, attrs = { ring_id = 0, nranks = 2 } },
        "nranks")
    end)
  end)

  -- NCCL is opened when the first collective runs (never linked): without
  -- it, the op fails naming the library, and every other op still runs
  it("names the NCCL library when it cannot be loaded, and the other ops still run", function()
    local script = [[
      package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
      package.cpath = "./build/?.so;" .. package.cpath
      local oar = require("oar")
      oar.fleet.init()
      local main = oar.Program()
      local block = main:global_block()
      local x = block:create_var{ name = "x", shape = { 4 }, dtype = "float32" }
      local y = block:create_var{ name = "y", shape = { 4 }, dtype = "float32" }
      local z = block:create_var{ name = "z", shape = { 4 }, dtype = "float32" }
      block:append_op{ type = "scale", inputs = { X = { x } }, outputs = { Out = { y } }, attrs = { scale = 2 } }
      local exe = oar.Executor(oar.CUDAPlace(0))
      local feed = { x = oar.tensor.new({ 1, 2, 3, 4 }, "float32") }
      print("scale " .. table.concat(exe:run(main, { feed = feed, fetch_list = { y } })[1]:totable(), " "))
      block:append_op{ type = "c_allreduce_sum", inputs = { X = { y } }, outputs = { Out = { z } }, attrs = { ring_id = 0 } }
      local ok, err = pcall(exe.run, exe, main, { feed = feed, fetch_list = { z } })
      print("allreduce " .. tostring(ok) .. " " .. tostring(err))
    ]]
    local path = tmpbase() .. ".lua"
    local f = assert(io.open(path, "w"))
    f:write(script)
    f:close()
    local ok, out = run("OAR_NCCL_LIBRARY=/nonexistent/libnccl.so.2 luajit " .. path)
    os.remove(path)
    assert(ok, out)
    assert.matches("scale 2 4 6 8", out, 1, true)
    assert.matches("allreduce false", out, 1, true)
    assert.matches("c_allreduce_sum", out, 1, true)
    assert.matches("need NCCL 2.14 or newer", out, 1, true)
    assert.matches("/nonexistent/libnccl.so.2", out, 1, true)
  end)

  describe("two workers (mpirun)", function()
    local why
    if not sh_ok("command -v mpirun >/dev/null 2>&1") then
      why = "mpirun is not installed (openmpi-bin)"
    elseif not C.oar_comm_compiled_with_mpi() then
      why = "liboar was built without MPI"
    elseif devices < 2 and not os.getenv("OAR_CUDA_EMU") then
      why = "NCCL needs one GPU per worker and this machine has " .. devices
    end
    if why then
      print("cuda_collective_spec: two-worker cases skipped: " .. why)
      pending(why)
      return
    end

    it("all-reduce, broadcast and all-gather carry every dtype between the workers", function()
      local base = tmpbase()
      local ok, out = run(mpirun() .. "luajit spec/helpers/cuda_fleet_worker.lua " .. base)
      assert(ok, out)
      local N = 6
      local function x(r, i) return (i - 2) * (r + 1) + r end
      local want = {}
      for i = 0, N - 1 do
        local a, b = x(0, i), x(1, i)
        want.c_allreduce_sum = want.c_allreduce_sum or {}
        want.c_allreduce_sum[i + 1] = a + b
        want.c_allreduce_max = want.c_allreduce_max or {}
        want.c_allreduce_max[i + 1] = math.max(a, b)
        want.c_allreduce_min = want.c_allreduce_min or {}
        want.c_allreduce_min[i + 1] = math.min(a, b)
        want.c_allreduce_prod = want.c_allreduce_prod or {}
        want.c_allreduce_prod[i + 1] = a * b
        want.c_broadcast = want.c_broadcast or {}
        want.c_broadcast[i + 1] = b   -- root 1
      end
      want.c_allgather = {}
      for r = 0, 1 do for i = 0, N - 1 do want.c_allgather[#want.c_allgather + 1] = x(r, i) end end
      for r = 0, 1 do
        local seen = 0
        for line in io.lines(base .. "." .. r) do
          local dtype, op, rest = line:match("^(%S+) (%S+) (.*)$")
          if dtype == "calls" then
            local gpu, cpu = rest:match("^(%d+) (%d+)$")
            assert.are.equal(5, tonumber(gpu), op .. ": CUDA kernel calls on worker " .. r)
            assert.are.equal(0, tonumber(cpu), op .. " ran a CPU kernel on worker " .. r)
          else
            local got = {}
            for v in rest:gmatch("%S+") do got[#got + 1] = tonumber(v) end
            assert.are.same(want[op], got, dtype .. " " .. op .. " on worker " .. r)
            seen = seen + 1
          end
        end
        assert.are.equal(5 * 6, seen)
        os.remove(base .. "." .. r)
      end
    end)

    it("MLP, Adam, on the CUDA place: 2 workers x batch B == 1 worker x batch 2B", function()
      local base = tmpbase()
      local ok, out = run(mpirun() .. "luajit spec/helpers/fleet_worker.lua model=mlp opt=adam mode=dist batch=3 "
        .. "steps=10 place=cuda out=" .. base .. ".dist")
      assert(ok, out)
      ok, out = run("luajit spec/helpers/fleet_worker.lua model=mlp opt=adam mode=single batch=3 steps=10 place=cuda out="
        .. base .. ".single")
      assert(ok, out)
      local w0, w1 = J.load_params(base .. ".dist.0"), J.load_params(base .. ".dist.1")
      local single = J.load_params(base .. ".single.0")
      local n = 0
      for name, v in pairs(single) do
        assert.is_true(J.rel_diff(w0[name], v) <= 1e-5, name .. " differs from one worker's")
        assert.same_array(w0[name], w1[name], name)
        n = n + 1
      end
      assert.is_true(n >= 4)
      for _, f in ipairs({ ".dist.0", ".dist.1", ".single.0" }) do os.remove(base .. f) end
    end)
  end)
end)
