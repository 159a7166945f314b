-- A training script for spec/fleet_recover_spec.lua, run by `oar launch`
-- (or alone): a small MLP trained with oar.fleet and an
-- oar.fleet.Checkpointer, which fails on purpose on the first attempt
-- (OAR_LAUNCH_ATTEMPT=1, or every attempt with when=all).
--   oar launch --np 2 spec/helpers/recover_worker.lua KEY=VALUE ...
-- opt=sgd|adam steps=S every=E dir=CKPT out=PREFIX batch=B dropout=0|1 keep=K resize=...
-- (resize=accumulate: k = ckpt:accumulate_steps() micro-batches of B per step, gradient merge)
-- die=none|step|ckpt|commit|hang|lua  die_rank=R die_step=K when=first|all
--   step:   worker R kills itself (SIGKILL) before step K's run: the others wait in its all-reduce
--   wait:   worker R sleeps 1 s before step K's run, then kills itself (SIGKILL): the
--           others are by then waiting in its all-reduce
--   ckpt:   worker 0 kills itself while writing the set of step K (persistables written, no manifest)
--   commit: worker 0 kills itself right after the set of step K was renamed into place
--   hang:   worker R sleeps for an hour at step K (the others' timeout ends the job)
--   lua:    a Lua error on every worker at step K
-- Writes PREFIX.<worker> (every float persistable, "name v1 v2 ..." with
-- %.17g) at the end; prints "recover: pid R PID", "recover: start R STEP T"
-- (T: the wall clock after the first step run, CLOCK_REALTIME) and
-- "recover: dying R T" and "recover: end R T".
local ffi = require("ffi")
local oar = require("oar")
local layers, fleet = oar.layers, oar.fleet

local opt = { opt = "sgd", steps = 12, every = 3, batch = 4, dropout = 1, keep = 2, die = "none", die_rank = 1,
              die_step = 0, when = "first", resize = "global_batch" }
for _, a in ipairs(arg) do
  local k, v = a:match("^([%w_]+)=(.*)$")
  assert(k, "bad argument " .. a)
  opt[k] = tonumber(v) or v
end

pcall(ffi.cdef, [[
int kill(int pid, int sig); int getpid(void); unsigned int sleep(unsigned int s);
typedef struct { long s; long ns; } recover_ts; int recover_clock(int, recover_ts *) __asm__("clock_gettime");
]])
local function wall()
  local ts = ffi.new("recover_ts")
  ffi.C.recover_clock(0, ts)
  return tonumber(ts.s) + tonumber(ts.ns) * 1e-9
end

local attempt = tonumber(os.getenv("OAR_LAUNCH_ATTEMPT") or "1")
local armed = opt.die ~= "none" and (opt.when == "all" or attempt == 1)

oar.seed(7)   -- before init: worker 1 then moves to a seed of its own (its dropout masks differ)
fleet.init()
local rank = fleet.worker_index()
io.stdout:write(string.format("recover: pid %d %d attempt %d\n", rank, ffi.C.getpid(), attempt))
io.stdout:flush()

local function die(why)
  io.stdout:write(string.format("recover: dying %d %.6f %s\n", rank, wall(), why))
  io.stdout:flush()
  ffi.C.kill(ffi.C.getpid(), 9)
end

local D, CLASSES = 12, 5
local function batch(first, count)
  local xs, ys = {}, {}
  for b = 1, count do
    local i = first + b - 1
    local x = {}
    for j = 1, D do x[j] = math.sin(0.37 * i + 0.61 * j) + 0.1 * math.cos(1.3 * i * j) end
    xs[b], ys[b] = x, { i % CLASSES }
  end
  return xs, ys
end

-- the reader's position this worker saves: how many batches it has read
local consumed = 0
local ckpt = fleet.Checkpointer{ dir = opt.dir, every_steps = opt.every, keep = opt.keep, batch_size = opt.batch,
  resize = opt.resize,
  worker_state = function() return { consumed = consumed, rank = rank } end,
  set_worker_state = function(mine, all)
    consumed = mine and mine.consumed or all[1].consumed
  end }
-- resize=accumulate: k micro-batches per step (k = the set's workers / ours)
local k = opt.resize == "accumulate" and ckpt:accumulate_steps() or 1
if opt.resize == "accumulate" then
  io.stdout:write(string.format("recover: accumulate %d %d\n", rank, k))
  io.stdout:flush()
end

local main, startup = oar.Program(), oar.Program()
oar.program_guard(main, startup, function()
  local x = layers.data{ name = "x", shape = { D }, dtype = "float32" }
  local y = layers.data{ name = "y", shape = { 1 }, dtype = "int64" }
  local h = layers.fc{ input = x, size = 16, act = "tanh", param_attr = oar.ParamAttr{ name = "fc1.w" },
                       bias_attr = oar.ParamAttr{ name = "fc1.b" } }
  if opt.dropout == 1 then h = layers.dropout(h, 0.3) end
  local pred = layers.fc{ input = h, size = CLASSES, act = "softmax", param_attr = oar.ParamAttr{ name = "out.w" },
                          bias_attr = oar.ParamAttr{ name = "out.b" } }
  local loss = layers.mean(layers.cross_entropy{ input = pred, label = y })
  local o = opt.opt == "adam" and oar.optimizer.Adam{ learning_rate = 0.01 } or oar.optimizer.SGD{ learning_rate = 0.2 }
  fleet.distributed_optimizer(o, k > 1 and { gradient_merge = { k_steps = k, avg = true } } or nil):minimize(loss)
end)

local exe = oar.Executor(oar.CPUPlace())
exe:run(startup)

local ckpt_step = 0   -- the step whose set is being written
if armed and opt.die == "ckpt" and rank == 0 then
  local io_mod = require("oar.io")
  local save = io_mod.save_persistables
  io_mod.save_persistables = function(...)
    save(...)
    if ckpt_step == opt.die_step then die("while writing a checkpoint") end
  end
end
if armed and opt.die == "commit" and rank == 0 then
  local rename = os.rename
  os.rename = function(a, b)
    local r1, r2 = rename(a, b)
    if ckpt_step == opt.die_step and b:match("step%-%d+$") then die("right after committing a checkpoint") end
    return r1, r2
  end
end

local start = ckpt:restore(exe, main)
assert(consumed == start - 1, string.format("worker %d: restored reader position %d, expected %d", rank, consumed, start - 1))
for step = start, opt.steps do
  if armed and step == opt.die_step and rank == opt.die_rank then
    if opt.die == "step" then die("before a step") end
    if opt.die == "wait" then
      ffi.C.sleep(1)
      die("while the others wait in the all-reduce")
    end
    if opt.die == "hang" then
      io.stdout:write(string.format("recover: dying %d %.6f by hanging\n", rank, wall()))
      io.stdout:flush()
      ffi.C.sleep(3600)
    end
  end
  if armed and step == opt.die_step and opt.die == "lua" then error("a deliberate error in the script at step " .. step) end
  for micro = 1, k do
    local first, count = ckpt:batch(step, k > 1 and micro or nil)
    local xs, ys = batch(first, count)
    exe:run(main, { feed = { x = xs, y = ys } })
  end
  consumed = consumed + 1
  if step == start then
    io.stdout:write(string.format("recover: start %d %d %.6f\n", rank, start, wall()))
    io.stdout:flush()
  end
  ckpt_step = step
  ckpt:step(exe, main, step)
end

io.stdout:write(string.format("recover: end %d %.6f\n", rank, wall()))
if opt.out then
  local f = assert(io.open(opt.out .. "." .. rank, "w"))
  local names = {}
  for _, v in ipairs(oar.io.get_program_persistable_vars(main)) do
    if v.dtype == "float32" or v.dtype == "float64" then names[#names + 1] = v.name end
  end
  table.sort(names)
  for _, n in ipairs(names) do
    local t = oar.global_scope():find_var(n):get_tensor()
    local d, vals = t:data(), {}
    for i = 0, t:numel() - 1 do vals[#vals + 1] = string.format("%.17g", d[i]) end
    f:write(n, " ", table.concat(vals, " "), "\n")
  end
  f:close()
end
