-- Data-parallel training across processes: each case starts
-- spec/helpers/fleet_worker.lua under `mpirun -np 2` (about 1 s per start)
-- and checks what the workers wrote. Skipped, saying so, where mpirun is
-- absent or liboar was built without MPI.
local oar = require("oar")
local C = require("oar.lib").C

local J = require("spec.helpers.mpi_jobs")
local sh_ok, run, tmpbase, load_params, rel_diff = J.sh_ok, J.run, J.tmpbase, J.load_params, J.rel_diff

local have_mpirun = sh_ok("command -v mpirun >/dev/null 2>&1")
local skip_reason = not have_mpirun and "mpirun is not installed (openmpi-bin)"
  or (not C.oar_comm_compiled_with_mpi() and "liboar was built without MPI (libopenmpi-dev)") or nil
if skip_reason then io.stderr:write("fleet_mpi_spec: skipped: ", skip_reason, "\n") end

local MPIRUN = J.MPIRUN

local function worker(args, np_prefix)
  return run((np_prefix or MPIRUN) .. "luajit spec/helpers/fleet_worker.lua " .. args)
end

local function describe_mpi(name, fn)
  if skip_reason then
    -- tools/bootstrap installs OpenMPI and the build finds it: a missing
    -- engine leaves data-parallel training untested, which is a failure
    describe(name, function() it("needs mpirun and an MPI build", function() error(skip_reason) end) end)
  else
    describe(name, fn)
  end
end

describe_mpi("fleet with 2 workers (mpirun)", function()
  -- trainable params of both workers equal one process's with twice the batch
  local function check_equal_training(model, optname, extra_single, extra_both)
    local base = tmpbase()
    extra_both = extra_both or ""
    extra_single = (extra_single or "") .. " " .. extra_both
    local ok, out = worker(string.format("model=%s opt=%s mode=dist batch=3 steps=20 %s out=%s.dist", model, optname,
      extra_both, base))
    assert(ok, out)
    ok, out = run(string.format("luajit spec/helpers/fleet_worker.lua model=%s opt=%s mode=single batch=3 steps=20 %s out=%s.single",
      model, optname, extra_single or "", base))
    assert(ok, out)
    local w0, w1 = load_params(base .. ".dist.0"), load_params(base .. ".dist.1")
    local single = load_params(base .. ".single.0")
    local n = 0
    for name, v in pairs(single) do
      if not name:match("^bn%.mean") and not name:match("^bn%.var") then
        assert.is_true(rel_diff(w0[name], v) <= 1e-5, name .. " differs from the single process's")
        assert.same_array(w0[name], w1[name], name)
        n = n + 1
      end
    end
    assert.is_true(n >= 4)
    for _, f in ipairs({ ".dist.0", ".dist.1", ".single.0" }) do os.remove(base .. f) end
    return w0, w1, single
  end

  it("MLP, SGD: 2 workers x batch B == 1 worker x batch 2B after 20 steps", function()
    check_equal_training("mlp", "sgd")
  end)

  it("MLP, Adam: the same", function()
    check_equal_training("mlp", "adam")
  end)

  it("MLP whose wide layers' gradients are all-reduced in place (>= 256 KiB), Adam: the same", function()
    check_equal_training("mlp", "adam", nil, "wide=8192")
  end)

  -- batch_norm normalizes each worker's B samples by their own statistics,
  -- so the reference is one process running two towers that share the
  -- parameters, each with its own B samples and own statistics, loss the
  -- towers' mean: the same gradients, hence the same parameters. Each
  -- worker's moving statistics equal its tower's.
  for _, o in ipairs({ "sgd", "adam" }) do
    it("conv + batch_norm, " .. o .. ": equal to one process with per-half statistics", function()
      local w0, w1, single = check_equal_training("convbn", o, "towers=2")
      assert.is_true(rel_diff(w0["bn.mean"], single["bn.mean"]) <= 1e-5)
      assert.is_true(rel_diff(w1["bn.mean"], single["bn.mean2"]) <= 1e-5)
      assert.is_true(rel_diff(w1["bn.var"], single["bn.var2"]) <= 1e-5)
      assert.is_true(rel_diff(w0["bn.mean"], w1["bn.mean"]) > 1e-3)   -- the statistics really are per worker
    end)
  end

  it("workers started from different seeds hold worker 0's parameters after the startup program", function()
    local base = tmpbase()
    local ok, out = worker("task=startup model=mlp out=" .. base)
    assert(ok, out)
    local w0, w1 = load_params(base .. ".0"), load_params(base .. ".1")
    local ok2, out2 = run("luajit spec/helpers/fleet_worker.lua task=startup mode=single model=mlp out=" .. base .. ".alone")
    assert(ok2, out2)
    local alone = load_params(base .. ".alone.0")
    for name, v in pairs(w0) do
      assert.same_array(v, w1[name], name)
      assert.same_array(v, alone[name], name)   -- worker 0 kept its own draw (seed 1)
    end
    os.remove(base .. ".0") os.remove(base .. ".1") os.remove(base .. ".alone.0")
  end)

  it("oar.reader.shard gives every sample to exactly one worker, uneven counts too", function()
    for _, n in ipairs({ 7, 1, 8 }) do
      local ok, out = worker("task=shard n=" .. n)
      assert(ok, out)
      local seen = {}
      for _, list in out:gmatch("(%d+):([%d,]*)") do
        for v in list:gmatch("%d+") do
          local i = tonumber(v)
          assert.is_nil(seen[i], "sample " .. i .. " twice")
          seen[i] = true
        end
      end
      for i = 1, n do assert.is_true(seen[i], "sample " .. i .. " missing") end
    end
  end)

  it("checkpoints and models are written by worker 0 only and load on every worker", function()
    local base = tmpbase()
    local ok, out = worker("task=save model=mlp steps=2 out=" .. base)
    assert(ok, out)
    assert.is_truthy(out:find("loaded 0", 1, true) and out:find("loaded 1", 1, true), out)
    local function exists(p)
      local f = io.open(p, "rb")
      if f then f:close() return true end
      return false
    end
    assert.is_true(exists(base .. ".ckpt0/fc1.w"))
    assert.is_true(exists(base .. ".model0/__model__"))
    assert.is_false(exists(base .. ".ckpt1/fc1.w"))
    assert.is_false(exists(base .. ".model1/__model__"))
    os.execute("rm -rf '" .. base .. ".ckpt0' '" .. base .. ".model0'")
  end)

  it("a worker killed mid-training ends the job with an error naming it, in bounded time", function()
    local ok, out, secs = worker("task=die model=mlp mode=dist steps=200 die_at=5 timeout=3")
    assert.is_false(ok)
    assert.is_true(secs < 20, "took " .. secs .. " s")
    assert.is_truthy(out:find("exited on signal 9", 1, true) or out:find("stopped by the launcher", 1, true), out)
  end)

  it("with mpirun's recovery on, the survivor's own timeout ends it with a clear error", function()
    local ok, out, secs = worker("task=die model=mlp mode=dist steps=200 die_at=5 timeout=2",
      "mpirun --allow-run-as-root --oversubscribe --enable-recovery -np 2 ")
    -- (mpirun exits 0 in this mode whatever its workers did: the output tells)
    local _ = ok
    assert.is_true(secs < 20, "took " .. secs .. " s")
    assert.is_truthy(out:find("the other workers did not answer", 1, true), out)
    assert.is_truthy(out:find("c_allreduce_sum", 1, true), out)
  end)

  it("a program that differs on one worker is refused with a clear error", function()
    local ok, out, secs = worker("task=differ model=mlp mode=dist steps=3 timeout=5")
    assert.is_false(ok)
    assert.is_true(secs < 20, "took " .. secs .. " s")
    assert.is_truthy(out:find("runs a different program than worker 0", 1, true), out)
  end)
end)
