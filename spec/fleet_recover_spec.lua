-- run_specs: timeout=600
-- Training that survives a lost worker (docs/distributed.md, "Recovering
-- from failures"): oar.fleet.Checkpointer's sets (complete or absent,
-- verified, fallback, refusal naming the file) in one process, and
-- `oar launch` restarting 2-worker jobs (spec/helpers/recover_worker.lua)
-- killed with SIGKILL at chosen and random moments: the parameters and
-- optimizer state at the end equal, bit for bit, an uninterrupted run's.
-- The times to recover are printed on stderr ("fleet_recover_spec: ...").
local ffi = require("ffi")
local oar = require("oar")
local C = require("oar.lib").C
local J = require("spec.helpers.mpi_jobs")
local files = require("oar.fleet_ckpt_files")

local layers = oar.layers

-- ---- the sets, in one process -------------------------------------------------------

local function build(width, seed)
  oar.seed(seed or 1)
  local m = { main = oar.Program(), startup = oar.Program(), scope = oar.Scope() }
  -- a fresh name generator: the optimizer's accumulators get the names a new process would
  oar.unique_name.guard(function() oar.program_guard(m.main, m.startup, function()
    local x = layers.data{ name = "x", shape = { 6 }, dtype = "float32" }
    local y = layers.data{ name = "y", shape = { 1 }, dtype = "int64" }
    local h = layers.fc{ input = x, size = width, act = "tanh", param_attr = oar.ParamAttr{ name = "h.w" } }
    local p = layers.fc{ input = h, size = 3, act = "softmax", param_attr = oar.ParamAttr{ name = "p.w" } }
    oar.optimizer.Adam{ learning_rate = 0.05 }:minimize(layers.mean(layers.cross_entropy{ input = p, label = y }))
  end) end)
  m.exe = oar.Executor(oar.CPUPlace())
  m.exe:run(m.startup, { scope = m.scope })
  return m
end

local function feed(step)
  local xs, ys = {}, {}
  for b = 1, 4 do
    local x = {}
    for j = 1, 6 do x[j] = math.sin(step * 0.7 + b * 1.3 + j * 0.11) end
    xs[b], ys[b] = x, { (step + b) % 3 }
  end
  return { x = xs, y = ys }
end

local function values(m, name)
  local t = m.scope:find_var(name):get_tensor()
  local d, out = t:data(), {}
  for i = 0, t:numel() - 1 do out[i + 1] = d[i] end
  return out
end

local function train(m, ckpt, from, to, snapshots)
  for step = from, to do
    m.exe:run(m.main, { feed = feed(step), scope = m.scope })
    ckpt:step(m.exe, m.main, step)
    if snapshots then snapshots[step] = { w = values(m, "h.w"), m1 = values(m, "h.w_moment1_0") } end
  end
end

local function ckpt_for(m, dir, extra)
  local o = { dir = dir, every_steps = 2, keep = 2, scope = m.scope }
  for k, v in pairs(extra or {}) do o[k] = v end
  return oar.fleet.Checkpointer(o)
end

local function truncate(path)
  local s = assert(files.read_all(path))
  local f = assert(io.open(path, "wb"))
  f:write(s:sub(1, math.floor(#s / 2)))
  f:close()
end

local function exists(p)
  local f = io.open(p, "rb")
  if f then f:close() return true end
  return false
end

describe("oar.fleet.Checkpointer sets", function()
  local dir, m, snaps
  before_each(function()
    dir = J.tmpbase() .. ".ckpt"
    m = build(8)
    snaps = {}
    train(m, ckpt_for(m, dir), 1, 8, snaps)
  end)
  after_each(function() files.remove_tree(dir) end)

  it("writes a complete set every every_steps and keeps the newest `keep`", function()
    assert.same({ "step-000000006", "step-000000008" }, files.list(dir))
    for _, set in ipairs({ "step-000000006", "step-000000008" }) do
      for _, f in ipairs({ "MANIFEST", "persistables", "workers" }) do
        assert.is_true(exists(dir .. "/" .. set .. "/" .. f), set .. "/" .. f)
      end
    end
    local man = files.parse_manifest(files.read_all(dir .. "/step-000000008/MANIFEST"))
    assert.equal(8, man.step)
    assert.equal(1, man.workers)
  end)

  it("restore resumes bit for bit: persistables and the random state", function()
    local m2 = build(8, 99)   -- another seed: other initial values, another random state
    local function state_text()
      local st = ffi.new("uint64_t[4]")
      C.oar_rng_get_state(st)
      return tostring(st[0]) .. tostring(st[1]) .. tostring(st[2]) .. tostring(st[3])
    end
    local piece = files.decode(files.read_all(dir .. "/step-000000008/workers"))[1]
    local saved = ""
    for i = 0, 3 do saved = saved .. tostring(ffi.new("uint64_t", piece.rng[2 * i + 1]) * ffi.new("uint64_t", 4294967296) + piece.rng[2 * i + 2]) end
    assert.are_not.equal(saved, state_text())
    assert.are_not.same(values(m, "h.w"), values(m2, "h.w"))
    local ck = ckpt_for(m2, dir)
    assert.equal(9, ck:restore(m2.exe, m2.main))
    assert.equal(saved, state_text())
    assert.same(values(m, "h.w"), values(m2, "h.w"))
    assert.same(values(m, "h.w_moment1_0"), values(m2, "h.w_moment1_0"))
    -- training on from both gives the same parameters
    train(m, ckpt_for(m, dir .. "-a"), 9, 10)
    train(m2, ckpt_for(m2, dir .. "-b"), 9, 10)
    assert.same(values(m, "h.w"), values(m2, "h.w"))
    files.remove_tree(dir .. "-a")
    files.remove_tree(dir .. "-b")
  end)

  it("a truncated file in the newest set: falls back to the previous complete one", function()
    truncate(dir .. "/step-000000008/persistables")
    local m2 = build(8, 5)
    assert.equal(7, ckpt_for(m2, dir):restore(m2.exe, m2.main))
    assert.same(snaps[6].w, values(m2, "h.w"))
    assert.same(snaps[6].m1, values(m2, "h.w_moment1_0"))
  end)

  local function refused(pattern, damage)
    damage()
    local m2 = build(8, 5)
    local before = values(m2, "h.w")
    local ok, err = pcall(function() return ckpt_for(m2, dir):restore(m2.exe, m2.main) end)
    assert.is_false(ok)
    assert.matches(pattern, tostring(err))
    assert.matches("no complete checkpoint", tostring(err))
    assert.same(before, values(m2, "h.w"))   -- never half-loaded
  end

  it("no complete set left (truncated files): refused, naming the file", function()
    refused("step%-000000008/persistables' is %d+ bytes, its manifest says %d+: it is truncated", function()
      truncate(dir .. "/step-000000008/persistables")
      truncate(dir .. "/step-000000006/persistables")
    end)
  end)

  it("a missing file or manifest: refused, naming it", function()
    refused("step%-000000008/workers' is missing", function()
      os.remove(dir .. "/step-000000008/workers")
      os.remove(dir .. "/step-000000006/MANIFEST")
    end)
    refused("step%-000000006/MANIFEST' is missing", function() end)
  end)

  it("a file from another job's checkpoint: refused, naming it", function()
    local other = J.tmpbase() .. ".other"
    local m3 = build(8, 42)
    train(m3, ckpt_for(m3, other), 1, 8)
    refused("step%-000000008/persistables' does not match its manifest", function()
      for _, set in ipairs({ "step-000000006", "step-000000008" }) do
        local s = files.read_all(other .. "/" .. set .. "/persistables")
        local f = assert(io.open(dir .. "/" .. set .. "/persistables", "wb"))
        f:write(s)
        f:close()
      end
    end)
    files.remove_tree(other)
  end)

  it("a set of another program or another job name: refused, naming the variable or the job", function()
    local m2 = build(7, 5)
    local ok, err = pcall(function() return ckpt_for(m2, dir):restore(m2.exe, m2.main) end)
    assert.is_false(ok)
    assert.matches("comes from another program: variable 'fc_0.b_0' is float32 %[8%] there, float32 %[7%] here",
      tostring(err))
    local m3 = build(8, 5)
    ok, err = pcall(function() return ckpt_for(m3, dir, { job = "other" }):restore(m3.exe, m3.main) end)
    assert.is_false(ok)
    assert.matches("was written by job '', not by this job %('other'%)", tostring(err))
  end)

  it("an interrupted write (only a .tmp- directory) counts as no set", function()
    local fresh = J.tmpbase() .. ".fresh"
    assert.is_true(files.mkdir_p(fresh .. "/.tmp-step-4-123"))
    local f = assert(io.open(fresh .. "/.tmp-step-4-123/persistables", "wb"))
    f:write("half")
    f:close()
    local m2 = build(8, 5)
    local before = values(m2, "h.w")
    assert.equal(1, ckpt_for(m2, fresh):restore(m2.exe, m2.main))
    assert.same(before, values(m2, "h.w"))
    -- the next write removes it
    train(m2, ckpt_for(m2, fresh), 1, 2)
    assert.same({ "step-000000002" }, files.list(fresh))
    files.remove_tree(fresh)
  end)

  it("gives each worker its samples, and re-splits them for another number of workers", function()
    local ck = oar.fleet.Checkpointer{ dir = dir, batch_size = 4 }
    assert.same({ 0, 4 }, { ck:batch(1) })
    assert.same({ 8, 4 }, { ck:batch(3) })
    local saved = { global_batch = 8, next_sample = 48, worker_batch = 4 }   -- 2 workers x 4, 6 steps
    ck:_plan(saved, 2, 1)                          -- on 1 worker, keeping the global batch
    assert.equal(8, ck.worker_batch)
    assert.equal(8, ck.global_batch)
    ck.resize = "worker_batch"
    ck:_plan(saved, 2, 1)                          -- on 1 worker, keeping each worker's batch
    assert.equal(4, ck.worker_batch)
    assert.equal(4, ck.global_batch)
    ck.resize = "global_batch"
    local ok, err = pcall(ck._plan, ck, saved, 2, 3)
    assert.is_false(ok)
    assert.matches("global batch 8 cannot be split over 3 workers", tostring(err))
    local ok2, err2 = pcall(oar.fleet.Checkpointer{ dir = dir }.batch, oar.fleet.Checkpointer{ dir = dir }, 1)
    assert.is_false(ok2)
    assert.matches("give the Checkpointer a 'batch_size'", tostring(err2))
  end)

  it("resize = 'accumulate': k micro-batches of each worker's batch; a count that does not divide is refused", function()
    local ck = oar.fleet.Checkpointer{ dir = dir, batch_size = 4, resize = "accumulate" }
    local saved = { global_batch = 16, next_sample = 96, worker_batch = 4 }   -- 4 workers x 4, 6 steps
    ck:_plan(saved, 4, 2)
    assert.same({ 16, 4, 2 }, { ck.global_batch, ck.worker_batch, ck.accumulate })
    ck.anchor_step, ck.anchor_sample = 7, 96
    -- (one process here: rank 0 of 1) micro-batch j of step 8 reads samples 96 + 16 + (j - 1) x 4 ..
    assert.same({ 96 + 16, 4 }, { ck:batch(8, 1) })
    assert.same({ 96 + 16 + 4, 4 }, { ck:batch(8, 2) })
    local ok, err = pcall(ck.batch, ck, 8, 3)
    assert.is_false(ok)
    assert.matches("'micro' must be a whole number in %[1, 2%], got number 3", tostring(err))
    ok, err = pcall(ck._plan, ck, { global_batch = 12, worker_batch = 4 }, 3, 2)
    assert.is_false(ok)
    assert.matches("global batch 12 %(3 workers x 4%) cannot be kept by 2 workers .*3 / 2 is not a whole number",
      tostring(err))
    ok, err = pcall(ck._plan, ck, { global_batch = 4, worker_batch = 4 }, 1, 2)   -- more workers than the set's
    assert.is_false(ok)
    assert.matches("1 / 2 is not a whole number", tostring(err))
    ck:_plan(nil, nil, 3)   -- no set: each of 3 workers runs one batch per step
    assert.same({ 12, 1 }, { ck.global_batch, ck.accumulate })
    -- from a real set: 1 worker x 8 per step is 2 micro-batches of 4
    local m8 = build(8)
    train(m8, ckpt_for(m8, dir .. "-acc", { batch_size = 8 }), 1, 2)
    assert.equal(2, oar.fleet.Checkpointer{ dir = dir .. "-acc", batch_size = 4, resize = "accumulate" }:accumulate_steps())
    local ok3, err3 = pcall(function()
      return oar.fleet.Checkpointer{ dir = dir .. "-acc", batch_size = 3, resize = "accumulate" }:accumulate_steps()
    end)
    assert.is_false(ok3)
    assert.matches("global batch 8 is not a multiple of this Checkpointer's batch_size 3", tostring(err3))
    files.remove_tree(dir .. "-acc")
  end)

  it("refuses bad options, naming them", function()
    local function bad(o, pat)
      local ok, err = pcall(oar.fleet.Checkpointer, o)
      assert.is_false(ok)
      assert.matches(pat, tostring(err))
    end
    bad({ every_steps = 2 }, "'dir' must be a directory name")
    bad({ dir = "x", every_steps = 0 }, "'every_steps' must be a whole number >= 1")
    bad({ dir = "x", keep = 1.5 }, "'keep' must be a whole number >= 1")
    bad({ dir = "x", resize = "both" }, "'resize' must be 'global_batch', 'worker_batch' or 'accumulate'")
    bad({ dir = "x", resize = "accumulate" }, "resize = 'accumulate' needs 'batch_size'")
    bad({ dir = "x", worker_state = function() end }, "give both 'worker_state' and 'set_worker_state'")
    bad({ dir = "x", every = 3 }, "unknown option 'every'")
  end)
end)

-- ---- oar launch's arguments and its reading of a job's end --------------------------

describe("oar launch's parts", function()
  local L = require("oar.launch")

  it("parses its options, passes the script's arguments on and refuses bad ones", function()
    local o = assert(L.parse({ "launch", "--np", "4", "--restarts", "2", "--timeout", "30", "--hostfile", "h",
      "--mca", "btl", "self,tcp", "train.lua", "--np", "9" }, 2))
    assert.equal(4, o.np)
    assert.equal(2, o.restarts)
    assert.equal(30, o.timeout)
    assert.equal("h", o.hostfile)
    assert.same({ { "btl", "self,tcp" } }, o.mca)
    assert.equal("train.lua", o.script)
    assert.same({ "--np", "9" }, o.args)
    assert.equal(3, assert(L.parse({ "x.lua" }, 1)).restarts)
    local function bad(argv, pat)
      local r, err = L.parse(argv, 1)
      assert.is_nil(r)
      assert.matches(pat, err)
    end
    bad({ "--np", "0", "x.lua" }, "%-%-np needs a number of workers >= 1, got 0")
    bad({ "--restarts", "-1", "x.lua" }, "%-%-restarts needs a whole number >= 0")
    bad({ "--timeout", "0", "x.lua" }, "%-%-timeout needs seconds in %(0, 1e7%]")
    bad({ "--mca", "k" }, "%-%-mca needs a key and a value")
    bad({ "--frobnicate", "x.lua" }, "unknown option '%-%-frobnicate'")
    bad({ "--np", "2" }, "no script given")
  end)

  it("builds the mpirun command: hostfile, MCA, the timeout and the attempt for the workers", function()
    local o = assert(L.parse({ "--np", "2", "--hostfile", "my hosts", "--mca", "btl", "self", "--timeout", "7",
      "t.lua", "a b" }, 1))
    local cmd = L.command(o, 3, "/opt/oar/bin/oar")
    assert.matches("^mpirun ", cmd)
    for _, part in ipairs({ "'-np' '2'", "'--hostfile' 'my hosts'", "'--mca' 'btl' 'self'",
      "'-x' 'OAR_LAUNCH_ATTEMPT=3'", "'-x' 'OAR_COMM_TIMEOUT=7'",
      "'/opt/oar/bin/oar' 'launch' '--worker' 't.lua' 'a b'" }) do
      assert.is_truthy(cmd:find(part, 1, true), part .. " not in " .. cmd)
    end
    assert.is_falsy(L.command(assert(L.parse({ "t.lua" }, 1)), 1, "oar"):find("OAR_COMM_TIMEOUT", 1, true))
    -- mpirun does not wait 1 s before ending a failed job, unless the user says otherwise
    assert.is_truthy(cmd:find("'--mca' 'odls_base_sigkill_timeout' '0'", 1, true), cmd)
    local mine = L.command(assert(L.parse({ "--mca", "odls_base_sigkill_timeout", "2", "t.lua" }, 1)), 1, "oar")
    assert.is_falsy(mine:find("'odls_base_sigkill_timeout' '0'", 1, true), mine)
    assert.is_truthy(mine:find("'odls_base_sigkill_timeout' '2'", 1, true), mine)
  end)

  it("tells a lost worker from a script error", function()
    local function kind(out, status) return (L.classify(out, status)) end
    assert.equal("ok", kind("", 0))
    assert.equal("script", kind("x\noar launch: worker 1: script error: t.lua:3: boom\n", 1))
    -- a script error wins over the others' being stopped
    assert.equal("script", kind("oar launch: worker 0: script error: e\noar worker 1: stopped by the launcher (signal 15)\n", 1))
    assert.equal("lost", kind("mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed).\n", 137))
    assert.equal("lost", kind("oar launch: worker 0: lost the job: c_allreduce_sum: ... did not answer\n", 1))
    assert.equal("lost", kind("oar worker 0: c_allreduce_sum did not finish within 3 s although every worker had entered it\n", 1))
    assert.equal("unknown", kind("There are not enough slots available in the system\n", 1))
    assert.equal("unknown", kind("", 127))
    local _, cause = L.classify("mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed).\n", 137)
    assert.equal("worker 1 was killed (signal 9)", cause)
  end)
end)

-- ---- oar launch with 2 workers ------------------------------------------------------

local have_mpirun = J.sh_ok("command -v mpirun >/dev/null 2>&1")
local skip_reason = not have_mpirun and "mpirun is not installed (openmpi-bin)"
  or (not C.oar_comm_compiled_with_mpi() and "liboar was built without MPI (libopenmpi-dev)")
  or (not exists("build/oar") and "build/oar is missing (make)") or nil

local ENV = "OAR_LAUNCH_MPIRUN_ARGS=--oversubscribe "
local HELPER = " spec/helpers/recover_worker.lua "

local function launch(opts, args)
  return J.run(ENV .. "build/oar launch --np 2 " .. opts .. HELPER .. args)
end

pcall(ffi.cdef, "typedef struct { long s; long ns; } recover_spec_ts; int recover_spec_clock(int, recover_spec_ts *) __asm__(\"clock_gettime\");")
local function wall()
  local ts = ffi.new("recover_spec_ts")
  ffi.C.recover_spec_clock(0, ts)
  return tonumber(ts.s) + tonumber(ts.ns) * 1e-9
end

local function count(s, pat)
  local n = 0
  for _ in s:gmatch(pat) do n = n + 1 end
  return n
end

-- seconds from the worker's death to the restarted job's first step done
local function recovery_time(out, died_at)
  died_at = died_at or tonumber(out:match("recover: dying %d+ ([%d.]+)"))
  local restart = out:find("restarting the job", 1, true)
  local t = restart and tonumber(out:match("recover: start 0 %d+ ([%d.]+)", restart))
  return died_at and t and t - died_at
end

local function describe_mpi(name, fn)
  if skip_reason then
    describe(name, function() it("needs mpirun, an MPI build and build/oar", function() error(skip_reason) end) end)
  else
    describe(name, fn)
  end
end

describe_mpi("oar launch: a job that loses a worker ends as an uninterrupted one", function()
  local base = J.tmpbase()
  teardown(function() os.execute("rm -rf '" .. base .. "'.*") end)
  local refs = {}
  local n = 0
  local function common(o) return string.format("opt=%s steps=12 every=3 batch=4", o) end

  -- the uninterrupted run's files: worker 0's and worker 1's persistables
  local function reference(o)
    if refs[o] then return refs[o] end
    local out_prefix = base .. ".ref." .. o
    local t0 = wall()
    local ok, out = launch("", common(o) .. " dir=" .. out_prefix .. ".ckpt out=" .. out_prefix)
    assert(ok, out)
    io.stderr:write(string.format("fleet_recover_spec: %s: a job's start (oar launch to the first step done) %.2f s\n",
      o, tonumber(out:match("recover: start 0 1 ([%d.]+)")) - t0))
    files.remove_tree(out_prefix .. ".ckpt")
    refs[o] = { files.read_all(out_prefix .. ".0"), files.read_all(out_prefix .. ".1") }
    assert.is_truthy(refs[o][1]:find("fc1.w_moment1_0", 1, true) or o == "sgd")
    assert.equal(refs[o][1], refs[o][2])   -- both workers hold the same values
    return refs[o]
  end

  local function check_same(o, prefix)
    local ref = reference(o)
    assert.equal(ref[1], files.read_all(prefix .. ".0"), "worker 0's persistables differ from the uninterrupted run's")
    assert.equal(ref[2], files.read_all(prefix .. ".1"), "worker 1's persistables differ from the uninterrupted run's")
  end

  local function check_same_files(ref, prefix)
    for r = 0, 1 do
      assert.equal(files.read_all(ref .. "." .. r), files.read_all(prefix .. "." .. r),
        "worker " .. r .. "'s persistables differ from the uninterrupted run's")
    end
  end

  local function killed_run(o, die, extra_opts)
    n = n + 1
    local prefix = string.format("%s.%s.%d", base, o, n)
    local ok, out, secs = launch(extra_opts or "", common(o) .. " dir=" .. prefix .. ".ckpt out=" .. prefix .. " " .. die)
    assert(ok, out)
    assert.equal(1, count(out, "restarting the job %(restart"), out)
    assert.equal(2, count(out, "recover: pid 0"), out)
    check_same(o, prefix)
    local rt = recovery_time(out)
    io.stderr:write(string.format("fleet_recover_spec: %s, %s: job %.1f s, time to recover %.2f s\n", o, die, secs,
      rt or -1))
    files.remove_tree(prefix .. ".ckpt")
    return out, rt
  end

  for _, o in ipairs({ "sgd", "adam" }) do
    -- (before step 8: the set of step 6 is surely whole, worker 0 having finished it before step 7's all-reduce)
    it(o .. ": worker 1 killed (SIGKILL) before step 8, worker 0 waiting in its all-reduce", function()
      local out = killed_run(o, "die=step die_rank=1 die_step=8")
      assert.matches("worker 1 was killed %(signal 9%)", out)
      assert.matches("resuming at step 7", out)
    end)

    it(o .. ": worker 0 killed while writing the set of step 6 (no manifest yet)", function()
      local out = killed_run(o, "die=ckpt die_step=6")
      assert.matches("resuming at step 4", out)   -- the set of step 6 never became one
    end)
  end

  it("adam: worker 0 killed right after the set of step 9 was committed", function()
    local out = killed_run("adam", "die=commit die_step=9")
    assert.matches("resuming at step 10", out)
  end)

  it("adam: worker 1 hangs; worker 0's timeout (--timeout 3) ends the job, which restarts", function()
    local out = killed_run("adam", "die=hang die_rank=1 die_step=5", "--timeout 3")
    assert.matches("worker 0 lost the job", out)
  end)

  -- SIGKILL from outside at a random moment of the training (steps, all-reduces, set writes)
  for _, o in ipairs({ "sgd", "adam" }) do
    it(o .. ": a worker killed from outside at a random moment", function()
      n = n + 1
      local prefix = string.format("%s.%s.%d", base, o, n)
      local args = string.format("opt=%s steps=1500 every=50 batch=4 dir=%s.ckpt out=%s", o, prefix, prefix)
      -- the uninterrupted run, which also gives the training's duration
      local ok, out = launch("", args:gsub("out=(%S+)", "out=%1.ref"):gsub("%.ckpt", ".refckpt"))
      assert(ok, out)
      local train_s = tonumber(out:match("recover: end 0 ([%d.]+)")) - tonumber(out:match("recover: start 0 1 ([%d.]+)"))
      local log = prefix .. ".log"
      os.execute(string.format("(%sbuild/oar launch --np 2%s%s > %s 2>&1; echo $? > %s.status) &", ENV, HELPER, args,
        log, log))
      local pids, t_start, text = {}, wall(), ""
      while not (pids[0] and pids[1] and text:find("recover: start 0 1 ", 1, true)) and wall() - t_start < 60 do
        os.execute("sleep 0.02")
        text = files.read_all(log) or ""
        for r, pid in text:gmatch("recover: pid (%d) (%d+) attempt 1") do pids[tonumber(r)] = pid end
      end
      assert(pids[0] and pids[1], text)
      math.randomseed(os.time() + n)
      local delay, victim = math.random() * 0.9 * train_s, math.random(0, 1)
      os.execute(string.format("sleep %.3f", delay))
      local killed_at = wall()
      local killed = J.sh_ok("kill -9 " .. pids[victim] .. " 2>/dev/null")
      local t0, seen_restart = wall(), nil
      while not exists(log .. ".status") and wall() - t0 < 240 do
        os.execute("sleep 0.02")
        if not seen_restart and (files.read_all(log) or ""):find("restarting the job", 1, true) then seen_restart = wall() end
      end
      local status = files.read_all(log .. ".status")
      out = files.read_all(log)
      assert.equal("0", status and status:match("%d+"), out)
      check_same_files(prefix .. ".ref", prefix)
      local restarted = count(out, "restarting the job") > 0
      local rt = restarted and recovery_time(out, killed_at)
      local resumed = out:match("resuming at step (%d+)") or "1"
      io.stderr:write(string.format("fleet_recover_spec: %s, SIGKILL to worker %d %.2f s into %.2f s of training (%s): " ..
        "%s\n", o, victim, delay, train_s, killed and "killed" or "already gone", restarted and string.format(
        "restart seen after %.2f s, training again (from step %s) after %.2f s", (seen_restart or killed_at) - killed_at,
        resumed, rt or -1) or "the job had ended"))
      if killed then assert.is_true(restarted, out) end
      files.remove_tree(prefix .. ".ckpt")
      files.remove_tree(prefix .. ".refckpt")
    end)
  end

  it("a Lua error on every worker: one attempt, the script's error shown, not restarted", function()
    local ok, out = launch("--restarts 3", "dir=" .. base .. ".lua.ckpt die=lua die_step=2 when=all")
    assert.is_false(ok)
    assert.equal(1, count(out, "recover: pid 0"), out)
    assert.matches("a deliberate error in the script at step 2", out)
    assert.matches("not restarting %(a script error would happen again%)", out)
    files.remove_tree(base .. ".lua.ckpt")
  end)

  it("a job that fails with no sign of a lost worker (a bad hostfile) is not restarted", function()
    local ok, out = launch("--restarts 3 --hostfile /nonexistent/hosts", "dir=" .. base .. ".hf.ckpt")
    assert.is_false(ok)
    assert.equal(0, count(out, "restarting the job"), out)
    assert.matches("no worker reported a lost job; not restarting", out)
  end)

  it("gives up after --restarts K, naming the last cause", function()
    local ok, out = launch("--restarts 1", "dir=" .. base .. ".up.ckpt die=step die_rank=1 die_step=2 when=all")
    assert.is_false(ok)
    assert.equal(2, count(out, "recover: pid 0"), out)
    assert.matches("giving up: the job failed 2 times %(%-%-restarts 1%); last cause: worker 1 was killed", out)
    files.remove_tree(base .. ".up.ckpt")
  end)

  it("elastic: a set of 2 workers resumes on 1 with the same global batch", function()
    local prefix = base .. ".elastic"
    -- no dropout: one worker's batch of 8 then computes what two workers' batches of 4 do
    local args = "opt=adam steps=12 every=3 batch=4 dropout=0 dir=" .. prefix .. ".ckpt"
    local ok, out = launch("", args .. " out=" .. prefix .. ".ref")
    assert(ok, out)
    files.remove_tree(prefix .. ".ckpt")
    ok, out = launch("--restarts 0", args .. " die=step die_rank=1 die_step=8")
    assert.is_false(ok)
    ok, out = J.run(ENV .. "build/oar launch --np 1" .. HELPER .. args .. " out=" .. prefix)
    assert(ok, out)
    assert.matches("resuming at step 7 from '[^']+' %(written by 2 workers%)", out)
    local ref, got = J.load_params(prefix .. ".ref.0"), J.load_params(prefix .. ".0")
    for name, v in pairs(ref) do
      assert.is_true(J.rel_diff(got[name], v) <= 1e-5, name .. " differs from the 2-worker run's")
    end
    files.remove_tree(prefix .. ".ckpt")
  end)

  -- the parameters of `prefix`.0 .. (workers - 1) within 1e-5 of the reference's worker 0
  local function close_to(ref_file, prefix, workers, what)
    local ref = J.load_params(ref_file)
    local n, worst = 0, 0
    for r = 0, workers - 1 do
      local got = J.load_params(prefix .. "." .. r)
      for name, v in pairs(ref) do
        assert(got[name], name .. " is missing on worker " .. r)
        local d = J.rel_diff(got[name], v)
        worst = math.max(worst, d)
        assert.is_true(d <= 1e-5, string.format("%s of worker %d differs from %s (relative %.3g)", name, r, what, d))
        n = n + 1
      end
    end
    assert.is_true(n >= 4 * workers)
    return worst
  end

  -- resize=accumulate: a set of `n` workers resumed on `m`, each running n/m micro-batches per step;
  -- the accumulating job is killed once more (at step 11) and resumes from its own set of step 9
  local function accumulate_case(o, n, m)
    local prefix = string.format("%s.acc%s%d%d", base, o, n, m)
    local args = "opt=" .. o .. " steps=12 every=3 batch=4 dropout=0 resize=accumulate dir=" .. prefix .. ".ckpt"
    local function np(k) return ENV .. "build/oar launch --np " .. k .. " " end
    local ok, out = J.run(np(n) .. "--restarts 0" .. HELPER .. args .. " out=" .. prefix .. ".ref")
    assert(ok, out)
    files.remove_tree(prefix .. ".ckpt")
    ok, out = J.run(np(n) .. "--restarts 0" .. HELPER .. args .. " die=step die_rank=1 die_step=8")
    assert.is_false(ok)
    -- a control: the same set resumed keeping each worker's batch without accumulating ends elsewhere
    assert(J.sh_ok(string.format("cp -r '%s.ckpt' '%s.ctlckpt'", prefix, prefix)))
    ok, out = J.run(np(m) .. "--restarts 0" .. HELPER .. args .. " resize=worker_batch dir=" .. prefix .. ".ctlckpt out="
      .. prefix .. ".ctl")
    assert(ok, out)
    local ref, ctl, apart = J.load_params(prefix .. ".ref.0"), J.load_params(prefix .. ".ctl.0"), 0
    for name, v in pairs(ref) do apart = math.max(apart, J.rel_diff(ctl[name], v)) end
    assert.is_true(apart > 1e-3, "without accumulation the run should end elsewhere")
    files.remove_tree(prefix .. ".ctlckpt")
    ok, out = J.run(np(m) .. "--restarts 1" .. HELPER .. args .. " die=step die_rank=0 die_step=11 out=" .. prefix)
    assert(ok, out)
    assert.matches(string.format("resuming at step 7 from '[^']+' %%(written by %d workers%%)", n), out)
    assert.matches(string.format("resuming at step 10 from '[^']+' %%(written by %d worker", m), out)
    assert.equal(2 * m, count(out, "recover: accumulate %d+ " .. (n / m)), out)
    local worst = close_to(prefix .. ".ref.0", prefix, m, n .. " workers' run")
    io.stderr:write(string.format("fleet_recover_spec: %s, a set of %d workers resumed on %d accumulating %d: " ..
      "largest relative difference %.3g (without accumulating: %.3g)\n", o, n, m, n / m, worst, apart))
    files.remove_tree(prefix .. ".ckpt")
  end

  for _, o in ipairs({ "sgd", "adam" }) do
    it("elastic, " .. o .. ": a set of 2 workers resumes on 1 accumulating 2 micro-batches per step", function()
      accumulate_case(o, 2, 1)
    end)
    it("elastic, " .. o .. ": a set of 4 workers resumes on 2, each accumulating 2 micro-batches per step", function()
      accumulate_case(o, 4, 2)
    end)
  end

  it("elastic: resize = 'accumulate' refuses a set of 2 workers on 3, naming both counts", function()
    local prefix = base .. ".acc23"
    local args = "opt=sgd steps=6 every=3 batch=4 dropout=0 resize=accumulate dir=" .. prefix .. ".ckpt"
    local ok, out = launch("--restarts 0", args)
    assert(ok, out)
    ok, out = J.run(ENV .. "build/oar launch --np 3 --restarts 0" .. HELPER .. args)
    assert.is_false(ok)
    assert.matches("global batch 8 %(2 workers x 4%) cannot be kept by 3 workers .*2 / 3 is not a whole number", out)
    files.remove_tree(prefix .. ".ckpt")
  end)

  it("elastic: a set of 1 worker resumes on 2, each with half the batch", function()
    local prefix = base .. ".grow"
    local args = "opt=adam steps=12 every=3 batch=8 dropout=0 dir=" .. prefix .. ".ckpt"
    local one = ENV .. "build/oar launch --np 1 --restarts 0" .. HELPER .. args
    local ok, out = J.run(one .. " out=" .. prefix .. ".ref")
    assert(ok, out)
    files.remove_tree(prefix .. ".ckpt")
    ok, out = J.run(one .. " die=step die_rank=0 die_step=8")
    assert.is_false(ok)
    ok, out = launch("", args .. " out=" .. prefix)
    assert(ok, out)
    assert.matches("resuming at step 7 from '[^']+' %(written by 1 worker%)", out)
    local ref = J.load_params(prefix .. ".ref.0")
    for r = 0, 1 do
      local got = J.load_params(prefix .. "." .. r)
      for name, v in pairs(ref) do
        assert.is_true(J.rel_diff(got[name], v) <= 1e-5, name .. " of worker " .. r .. " differs from the 1-worker run's")
      end
    end
    files.remove_tree(prefix .. ".ckpt")
  end)
end)
