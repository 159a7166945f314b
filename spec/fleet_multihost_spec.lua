-- Data-parallel training across hosts, on one machine: tools/netns_hosts
-- makes each host a network namespace with its own address on a private
-- bridge, mpirun starts the remote daemons through a launch agent that
-- enters the namespace (in place of ssh), and the workers talk over
-- OpenMPI's TCP transport on the bridge's addresses, as on real machines.
-- Skipped, saying so, where namespaces cannot be made (not root, no
-- iproute2), mpirun is missing or liboar has no MPI.
-- run_specs: timeout=600
local C = require("oar.lib").C
local J = require("spec.helpers.mpi_jobs")
local run, tmpbase, load_params, rel_diff, sh_ok = J.run, J.tmpbase, J.load_params, J.rel_diff, J.sh_ok

local TOOL = "tools/netns_hosts"
-- a prefix of this run's own (several runs may share the machine); it ends
-- in a letter so that host names never match another run's prefix
local PREFIX = string.format("o%05dh", math.random(0, 99999) + (os.time() % 7919))
local ENV = "OAR_NETNS_PREFIX=" .. PREFIX .. " "

local skip_reason
if not sh_ok("command -v mpirun >/dev/null 2>&1") then
  skip_reason = "mpirun is not installed (openmpi-bin)"
elseif not C.oar_comm_compiled_with_mpi() then
  skip_reason = "liboar was built without MPI (libopenmpi-dev)"
else
  local ok, out = run(ENV .. TOOL .. " check")
  if not ok then skip_reason = "network namespaces unavailable here: " .. out:gsub("%s+$", "") end
end
if skip_reason then io.stderr:write("fleet_multihost_spec: skipped: ", skip_reason, "\n") end

local function wall()
  local p = io.popen("date +%s.%N")
  local t = tonumber(p:read("*l"))
  p:close()
  return t
end

local function read_file(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

-- the modification time of a file, in seconds with a fraction
local function mtime(path)
  local p = io.popen("stat -c %.9Y " .. path .. " 2>/dev/null")
  local t = tonumber(p:read("*l"))
  p:close()
  return t
end

local function netns(args) return run(ENV .. TOOL .. " " .. args) end

-- tools/bootstrap installs what this needs (iproute2, OpenMPI) and CI runs
-- as root: a machine that cannot make the hosts leaves the multi-host path
-- untested, which is a failure, not a skip
local describe_hosts = skip_reason and function(name)
  describe(name, function() it("needs network namespaces, mpirun and an MPI build", function() error(skip_reason) end) end)
end or describe

describe_hosts("fleet across 2 hosts x 2 workers (network namespaces, TCP)", function()
  setup(function()
    netns("down")
    local ok, out = netns("up 2")
    assert(ok, out)
  end)
  teardown(function() netns("down") end)

  local function worker_cmd(args)
    return "luajit spec/helpers/fleet_worker.lua " .. args
  end

  for _, optname in ipairs({ "sgd", "adam" }) do
    it("MLP, " .. optname .. ": 2 hosts x 2 workers x batch B == 1 process x batch 4B", function()
      local base = tmpbase()
      local ok, out = netns("mpirun -np 4 " .. worker_cmd(string.format(
        "model=mlp opt=%s mode=dist batch=3 steps=20 timeout=30 out=%s.dist", optname, base)))
      assert(ok, out)
      ok, out = run(worker_cmd(string.format("model=mlp opt=%s mode=single workers=4 batch=3 steps=20 out=%s.single",
        optname, base)))
      assert(ok, out)
      local single = load_params(base .. ".single.0")
      local w = {}
      for r = 0, 3 do w[r] = load_params(base .. ".dist." .. r) end
      local n = 0
      for name, v in pairs(single) do
        assert.is_true(rel_diff(w[0][name], v) <= 1e-5, name .. " differs from the single process's")
        for r = 1, 3 do assert.same_array(w[0][name], w[r][name], name .. " on worker " .. r) end
        n = n + 1
      end
      assert.is_true(n >= 4)
      os.remove(base .. ".single.0")
      for r = 0, 3 do os.remove(base .. ".dist." .. r) end
    end)
  end

  it("a cut link is detected within the timeout on every worker, on both hosts", function()
    local TIMEOUT = 3
    local base = tmpbase()
    -- each worker's stderr goes to a file of its own: a host whose link is
    -- down cannot send its output back to mpirun.
    -- mpirun itself may never learn of the far host's workers once the link
    -- is down: run it in the background, bounded, and end it afterwards
    local inner = "exec " .. worker_cmd(string.format(
      "model=mlp opt=adam mode=dist batch=3 steps=1000000 timeout=%d out=%s.cut", TIMEOUT, base))
      .. " 2>" .. base .. ".err.$OMPI_COMM_WORLD_RANK"
    local bg = string.format("(%s timeout -s KILL 90 %s mpirun -np 4 sh -c '%s' >%s.mpirun 2>&1 &)", ENV:sub(1, -2),
      TOOL, inner, base)
    assert(os.execute(bg) == 0 or true)
    -- training is under way once every worker has taken a few steps; wait for
    -- the job to be up (daemons started, programs checked)
    local t_wait = wall()
    repeat
      os.execute("sleep 0.5")
    until wall() - t_wait > 8
    local cut_at = wall()
    finally(function()
      -- the link back, and the rest of the job (mpirun, the far daemon) ended
      netns("restore " .. PREFIX .. "2")
      netns("down")
      os.execute("pkill -KILL -f '" .. base .. ".cut' 2>/dev/null")
      local ok2, out2 = netns("up 2")
      assert(ok2, out2)
    end)
    local ok, out = netns("cut " .. PREFIX .. "2")
    assert(ok, out)
    local deadline = cut_at + TIMEOUT + 15
    local done
    repeat
      os.execute("sleep 0.5")
      done = true
      for r = 0, 3 do
        local s = read_file(base .. ".err." .. r) or ""
        -- its own deadline, or mpirun ending it after a worker of its host reported
        if not (s:find("MPI_Allreduce", 1, true) and (s:find("did not finish within", 1, true)
            or s:find("did not answer", 1, true) or s:find("stopped by the launcher", 1, true))) then done = false end
      end
    until done or wall() > deadline
    local report = {}
    for r = 0, 3 do
      local s = read_file(base .. ".err." .. r) or "(nothing)"
      report[#report + 1] = string.format("worker %d: %s", r, s:sub(1, 300))
    end
    report = table.concat(report, "\n")
    assert.is_true(done, "not every worker reported the lost link:\n" .. report
      .. "\nmpirun: " .. (read_file(base .. ".mpirun") or ""))
    for r = 0, 3 do
      local lag = mtime(base .. ".err." .. r) - cut_at
      -- within the timeout, plus the step that was running and the check's poll
      assert.is_true(lag <= TIMEOUT + 2.5, string.format("worker %d noticed after %.2f s (timeout %d s)", r, lag, TIMEOUT))
      os.remove(base .. ".err." .. r)
    end
    os.remove(base .. ".mpirun")
  end)

  -- `oar launch` across the hosts: the launcher runs in host 1 (where
  -- mpirun would run on a cluster), the MCA settings in its environment
  local function launch_bg(prefix, opts, args)
    local hf = prefix .. ".hosts"
    assert(run(ENV .. TOOL .. " hostfile 2 > " .. hf))
    os.execute(string.format("(%s OAR_LAUNCH_GRACE=5 timeout -s KILL 240 %s exec build/oar launch --np 4 --hostfile %s %s " ..
      "spec/helpers/recover_worker.lua %s > %s.log 2>&1; echo \"::rc=$?\" >> %s.log) &", ENV:sub(1, -2), TOOL, hf, opts,
      args, prefix, prefix))
  end

  -- waits until the file holds one of the patterns (a string or a list)
  local function wait_for(path, pattern, secs)
    local pats = type(pattern) == "table" and pattern or { pattern }
    local t0 = wall()
    while wall() - t0 < secs do
      local s = read_file(path) or ""
      for _, p in ipairs(pats) do
        if s:find(p) then return s end
      end
      os.execute("sleep 0.1")
    end
    return nil
  end

  local function persistables(prefix)
    local t = {}
    for r = 0, 3 do t[r] = read_file(prefix .. "." .. r) end
    return t
  end

  it("under oar launch, a job whose link was cut recovers once the link returns, ending as an uninterrupted run", function()
    local base = tmpbase()
    local args = "opt=adam steps=600 every=50 batch=4"
    launch_bg(base .. ".ref", "--restarts 0", args .. " dir=" .. base .. ".refckpt out=" .. base .. ".ref")
    local ref_log = wait_for(base .. ".ref.log", "::rc=%d+", 200)
    assert(ref_log and ref_log:find("::rc=0", 1, true), ref_log)
    local ref = persistables(base .. ".ref")
    for r = 0, 3 do assert(ref[r], "worker " .. r .. " wrote no parameters:\n" .. ref_log) end
    for r = 1, 3 do assert.equal(ref[0], ref[r], "worker " .. r .. " of the uninterrupted run") end
    local train_s = tonumber(ref_log:match("recover: end 0 ([%d.]+)")) - tonumber(ref_log:match("recover: start 0 1 ([%d.]+)"))

    launch_bg(base .. ".run", "--restarts 2 --timeout 3", args .. " dir=" .. base .. ".ckpt out=" .. base .. ".run")
    local log = base .. ".run.log"
    assert(wait_for(log, "recover: start 0 1 ", 60), read_file(log))
    os.execute(string.format("sleep %.2f", 0.3 * train_s))
    local cut_at = wall()
    assert(netns("cut " .. PREFIX .. "2"))
    -- the first host's workers report the lost job within the timeout
    local seen = wait_for(log, { "lost the job", "did not finish within" }, 20)
    local lag = wall() - cut_at
    assert(netns("restore " .. PREFIX .. "2"))
    assert(seen, "no worker reported the lost job:\n" .. (read_file(log) or ""))
    local out = wait_for(log, "::rc=%d+", 200)
    assert(out and out:find("::rc=0", 1, true), out or read_file(log))
    assert.matches("restarting the job", out)
    local run_p = persistables(base .. ".run")
    for r = 0, 3 do assert.equal(ref[r], run_p[r], "worker " .. r .. "'s persistables differ from the uninterrupted run's") end
    local restart = out:find("restarting the job", 1, true)
    local again = restart and tonumber(out:match("recover: start 0 %d+ ([%d.]+)", restart))
    io.stderr:write(string.format("fleet_multihost_spec: link cut %.2f s into %.2f s of training, reported after %.2f s, " ..
      "training again (from step %s) %.2f s after the cut (OAR_LAUNCH_GRACE=5)\n", 0.3 * train_s, train_s, lag,
      out:match("resuming at step (%d+)") or "?", again and again - cut_at or -1))
    os.execute("rm -rf '" .. base .. "'.*")
  end)

  -- one uninterrupted 2 x 2 run per optimizer, shared by the kill cases
  local refs = {}
  local function common(o) return "opt=" .. o .. " steps=12 every=3 batch=4" end
  local function reference(o)
    if refs[o] then return refs[o] end
    local base = tmpbase()
    launch_bg(base .. ".ref", "--restarts 0", common(o) .. " dir=" .. base .. ".refckpt out=" .. base .. ".ref")
    local ref_log = wait_for(base .. ".ref.log", "::rc=%d+", 120)
    assert(ref_log and ref_log:find("::rc=0", 1, true), ref_log)
    refs[o] = persistables(base .. ".ref")
    for r = 0, 3 do assert(refs[o][r], "the uninterrupted run's worker " .. r .. " wrote nothing") end
    for r = 1, 3 do assert.equal(refs[o][0], refs[o][r], "worker " .. r .. " of the uninterrupted run") end
    os.execute("rm -rf '" .. base .. "'.*")
    return refs[o]
  end

  -- a 2 x 2 job under oar launch killed once (`die`), ending as the uninterrupted run;
  -- prints the time from the death to the restarted job's first step done
  local function killed_2x2(o, die, what)
    local ref = reference(o)
    local base = tmpbase()
    launch_bg(base .. ".run", "--restarts 2 --timeout 5", common(o) .. " dir=" .. base .. ".ckpt out=" .. base .. ".run " .. die)
    local out = wait_for(base .. ".run.log", "::rc=%d+", 120)
    assert(out and out:find("::rc=0", 1, true), out or read_file(base .. ".run.log"))
    assert.matches("restarting the job", out)
    local got = persistables(base .. ".run")
    for r = 0, 3 do assert.equal(ref[r], got[r], "worker " .. r .. "'s persistables differ from the uninterrupted run's") end
    local died = tonumber(out:match("recover: dying %d+ ([%d.]+)"))
    local restart = out:find("restarting the job", 1, true)
    local again = tonumber(out:match("recover: start 0 %d+ ([%d.]+)", restart))
    io.stderr:write(string.format("fleet_multihost_spec: 2 hosts x 2 workers, %s, %s: %s, time to recover %.2f s\n", o, what,
      out:match("resuming at step %d+") or "?", died and again and again - died or -1))
    os.execute("rm -rf '" .. base .. "'.*")
  end

  it("under oar launch, 2 hosts x 2 workers: a worker of the far host killed (SIGKILL) before a step", function()
    killed_2x2("sgd", "die=step die_rank=3 die_step=8", "worker 3 killed before step 8")
  end)

  for _, o in ipairs({ "sgd", "adam" }) do
    it("under oar launch, 2 x 2, " .. o .. ": a far-host worker killed while the others wait in its all-reduce", function()
      killed_2x2(o, "die=wait die_rank=3 die_step=8", "worker 3 killed during step 8's all-reduce")
    end)
    it("under oar launch, 2 x 2, " .. o .. ": worker 0 killed while writing the set of step 6", function()
      killed_2x2(o, "die=ckpt die_step=6", "worker 0 killed writing the set of step 6")
    end)
  end
end)
