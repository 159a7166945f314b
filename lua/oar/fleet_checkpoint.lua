--- oar.fleet.Checkpointer: checkpoints of a data-parallel job that a
-- restarted job resumes from, bit for bit (docs/distributed.md,
-- "Recovering from failures").
--
--   local ckpt = oar.fleet.Checkpointer{dir = "ckpt", every_steps = 100, keep = 3}
--   local start = ckpt:restore(exe, main)   -- 1, or the step after the last complete set
--   for step = start, total_steps do
--     exe:run(main, {feed = next_batch(step)})
--     ckpt:step(exe, main, step)            -- a set every every_steps
--   end
--
-- A set, DIR/step-NNNNNNNNN, holds every persistable variable of the
-- program (parameters, optimizer and learning-rate state) in one file
-- `persistables`, every worker's random generator state and its own saved
-- value (`worker_state`, e.g. a reader's position) in `workers`, and a
-- MANIFEST written last: the job, the step, the number of workers, the
-- data position, the persistable variables (name, dtype, shape) and the
-- size and CRC-32 of every file. Each worker's piece reaches worker 0 by an
-- allgather; worker 0 alone writes, into DIR/.tmp-step-N-PID, fsyncs the
-- files and the directory, renames it to step-N and fsyncs DIR: a set is
-- complete or absent. `restore` checks the newest set against its manifest
-- and the program, falls back to older ones, and refuses, naming the file,
-- when sets exist and none is complete. Worker 0 reads the set and sends
-- it to the others (no shared file system needed).
-- @module oar.fleet_checkpoint
local ffi = require("ffi")
local lib = require("oar.lib")
local framework = require("oar.framework")
local files = require("oar.fleet_ckpt_files")
local C = lib.C

local raise, describe = framework.raise, framework.describe
local join = files.join

local M = {}

local Checkpointer = {}
Checkpointer.__index = Checkpointer
M.Checkpointer = Checkpointer

local SET_PATTERN = "^step%-(%d+)$"
local PERSISTABLES, WORKERS, MANIFEST = "persistables", "workers", "MANIFEST"

local function set_name(step) return string.format("step-%09d", step) end

-- the job as this process sees it: rank, size, and whether collectives run
local function job()
  local fleet = package.loaded["oar.fleet"]
  if fleet and fleet.is_initialized() and fleet.worker_num() > 1 then
    return fleet.worker_index(), fleet.worker_num(), fleet
  end
  return 0, 1, nil
end

local function check_count(who, name, v, default)
  if v == nil then return default end
  if type(v) ~= "number" or v < 1 or v ~= math.floor(v) then
    raise(string.format("%s: '%s' must be a whole number >= 1, got %s", who, name, describe(v)))
  end
  return v
end

--- Makes a Checkpointer. Every worker makes one with the same options.
-- @tparam table opts options:
-- @tparam string opts.dir the directory of the sets (created when missing)
-- @tparam[opt=100] int opts.every_steps a set after every step that is a multiple of it
-- @tparam[opt=3] int opts.keep how many sets to keep (older ones are removed)
-- @tparam[opt] int opts.batch_size the per-worker batch; enables `batch` (the data position)
-- @tparam[opt="global_batch"] string opts.resize on resuming with another number of
-- workers: "global_batch" keeps the global batch (each worker's batch becomes
-- global / workers) or "worker_batch" keeps each worker's batch (the global
-- batch changes with the workers) or "accumulate" (needs `batch_size`): M workers resuming a set
-- of N >= M keep each worker's batch and accumulate k = N/M micro-batches per
-- update (`accumulate_steps`, `batch(step, micro)`), keeping the global batch
-- @tparam[opt] function opts.worker_state returns this worker's plain value to save (a reader's position)
-- @tparam[opt] function opts.set_worker_state `f(value, all, saved_workers)` on restore:
-- this worker's saved value (nil when the set had fewer workers) and every worker's
-- @tparam[opt=""] string opts.job a name of the job: a set of another job is refused
-- @tparam[opt] Scope opts.scope default: the global scope
-- @treturn Checkpointer
-- @raise on a bad option
-- @usage local ckpt = oar.fleet.Checkpointer{dir = "ckpt", every_steps = 100, keep = 3}
function M.new(opts)
  local who = "oar.fleet.Checkpointer"
  if type(opts) ~= "table" or getmetatable(opts) ~= nil then
    raise(who .. ": expected a table of options {dir=, every_steps=, keep=}, got " .. describe(opts))
  end
  local allowed = { dir = 1, every_steps = 1, keep = 1, batch_size = 1, resize = 1, worker_state = 1,
                    set_worker_state = 1, job = 1, scope = 1 }
  for k in pairs(opts) do
    if not allowed[k] then raise(string.format("%s: unknown option '%s'", who, tostring(k))) end
  end
  if type(opts.dir) ~= "string" or opts.dir == "" then
    raise(who .. ": 'dir' must be a directory name, got " .. describe(opts.dir))
  end
  local resize = opts.resize or "global_batch"
  if resize ~= "global_batch" and resize ~= "worker_batch" and resize ~= "accumulate" then
    raise(who .. ": 'resize' must be 'global_batch', 'worker_batch' or 'accumulate', got " .. describe(opts.resize))
  end
  if resize == "accumulate" and opts.batch_size == nil then
    raise(who .. ": resize = 'accumulate' needs 'batch_size' (each worker's micro-batch)")
  end
  for _, k in ipairs({ "worker_state", "set_worker_state" }) do
    if opts[k] ~= nil and type(opts[k]) ~= "function" then
      raise(string.format("%s: '%s' must be a function, got %s", who, k, describe(opts[k])))
    end
  end
  if (opts.worker_state == nil) ~= (opts.set_worker_state == nil) then
    raise(who .. ": give both 'worker_state' and 'set_worker_state', or neither")
  end
  if opts.job ~= nil and type(opts.job) ~= "string" then raise(who .. ": 'job' must be a string, got " .. describe(opts.job)) end
  local self = setmetatable({
    dir = opts.dir:gsub("(.)/+$", "%1"),
    every_steps = check_count(who, "every_steps", opts.every_steps, 100),
    keep = check_count(who, "keep", opts.keep, 3),
    batch_size = check_count(who, "batch_size", opts.batch_size, nil),
    resize = resize, worker_state = opts.worker_state, set_worker_state = opts.set_worker_state,
    job = opts.job or "", scope = opts.scope,
  }, Checkpointer)
  -- the data position: step `anchor_step` reads from global sample `anchor_sample`
  self.anchor_step, self.anchor_sample = 1, 0
  return self
end

local function scope_of(self) return self.scope or require("oar.scope").global_scope() end

-- {name, dtype, shape text} of the program's persistables, sorted by name
local function var_specs(main)
  local out = {}
  for _, v in ipairs(require("oar.io").get_program_persistable_vars(main)) do
    local dims = {}
    for i, d in ipairs(v.shape or {}) do dims[i] = tostring(d) end
    out[#out + 1] = { rawget(v, "name"), tostring(v.dtype), "[" .. table.concat(dims, ",") .. "]" }
  end
  table.sort(out, function(a, b) return a[1] < b[1] end)
  return out
end

local function specs_text(specs)
  local t = {}
  for i, s in ipairs(specs) do t[i] = table.concat(s, " ") end
  return table.concat(t, "\n")
end

-- ---- talking to the other workers --------------------------------------------------

-- worker 0's string s on every worker (s ignored elsewhere)
local function broadcast_string(s, who)
  local len = ffi.new("int64_t[1]", s and #s or 0)
  if C.oar_comm_broadcast(len, 8, 0) ~= 0 then raise(who .. ": " .. lib.last_error()) end
  local n = tonumber(len[0])
  local buf = ffi.new("uint8_t[?]", n > 0 and n or 1)
  if s then ffi.copy(buf, s, n) end
  if n > 0 and C.oar_comm_broadcast(buf, n, 0) ~= 0 then raise(who .. ": " .. lib.last_error()) end
  return ffi.string(buf, n)
end

-- every worker's string, in worker order
local function allgather_strings(s, fleet, size, who)
  local width = fleet.all_reduce(#s, "max")
  local send = ffi.new("uint8_t[?]", width + 1)
  ffi.copy(send, s, #s)
  local recv = ffi.new("uint8_t[?]", (width + 1) * size)
  if C.oar_comm_allgather(send, recv, width + 1) ~= 0 then raise(who .. ": " .. lib.last_error()) end
  local out = {}
  for r = 0, size - 1 do out[r + 1] = ffi.string(recv + r * (width + 1)) end
  return out
end

-- ---- this worker's piece --------------------------------------------------------

local TWO32 = 4294967296ULL

local function rng_words(who)
  local st = ffi.new("uint64_t[4]")
  if C.oar_rng_get_state(st) ~= 0 then raise(who .. ": " .. lib.last_error()) end
  local out = {}
  for i = 0, 3 do
    out[#out + 1] = tonumber(st[i] / TWO32)
    out[#out + 1] = tonumber(st[i] % TWO32)
  end
  return out
end

local function set_rng_words(w, who)
  local st = ffi.new("uint64_t[4]")
  for i = 0, 3 do st[i] = ffi.new("uint64_t", w[2 * i + 1]) * TWO32 + w[2 * i + 2] end
  if C.oar_rng_set_state(st) ~= 0 then raise(who .. ": " .. lib.last_error()) end
end

local function my_piece(self, who)
  local rec = { rng = rng_words(who) }
  if self.worker_state then
    local v = self.worker_state()
    local text, err = files.encode(v)
    if not text then raise(who .. ": worker_state returned a value that cannot be saved: " .. err) end
    rec.state = v
  end
  return assert(files.encode(rec))
end

-- ---- writing a set -------------------------------------------------------------------

-- the step-N sets of dir, newest first: {name, step}
local function list_sets(dir)
  local out = {}
  for _, n in ipairs(files.list(dir) or {}) do
    local s = n:match(SET_PATTERN)
    if s then out[#out + 1] = { n, tonumber(s) } end
  end
  table.sort(out, function(a, b) return a[2] > b[2] end)
  return out
end

local function remove_leftovers(dir)
  for _, n in ipairs(files.list(dir) or {}) do
    if n:match("^%.tmp%-step%-") or n:match("^%.old%-step%-") then files.remove_tree(join(dir, n)) end
  end
end

function Checkpointer:_position_after(step)
  if not self.batch_size then return {} end
  return { next_sample = self.anchor_sample + (step - self.anchor_step + 1) * self.global_batch,
           global_batch = self.global_batch, worker_batch = self.worker_batch, accumulate = self.accumulate }
end

-- worker 0: writes the set of `step` from the gathered pieces
function Checkpointer:_write(exe, main, step, pieces, who)
  local dir = self.dir
  if not files.mkdir_p(dir) then raise(string.format("%s: cannot create the directory '%s'", who, dir)) end
  remove_leftovers(dir)
  local tmp = join(dir, string.format(".tmp-step-%d-%d", step, files.pid()))
  if not files.mkdir_p(tmp) then raise(string.format("%s: cannot create '%s'", who, tmp)) end
  require("oar.io").save_persistables(exe, tmp, main, PERSISTABLES, { scope = scope_of(self) })
  local ok, err = files.write_synced(join(tmp, WORKERS), assert(files.encode(pieces)))
  if not ok then raise(string.format("%s: cannot write '%s': %s", who, join(tmp, WORKERS), err)) end
  local listed = {}
  for _, n in ipairs(files.list(tmp) or {}) do
    local path = join(tmp, n)
    if files.is_dir(path) then raise(string.format("%s: unexpected directory '%s'", who, path)) end
    files.fsync(path)
    local size, crc = files.size_crc(path)
    if not size then raise(string.format("%s: cannot read back '%s': %s", who, path, crc)) end
    listed[#listed + 1] = { n, size, crc }
  end
  local m = { job = self.job, step = step, workers = #pieces, position = self:_position_after(step),
              vars = var_specs(main), files = listed }
  ok, err = files.write_synced(join(tmp, MANIFEST), files.manifest_text(m))
  if not ok then raise(string.format("%s: cannot write '%s': %s", who, join(tmp, MANIFEST), err)) end
  files.fsync(tmp)
  local final = join(dir, set_name(step))
  if files.is_dir(final) then   -- a damaged set of the same step (restore fell back past it)
    local old = join(dir, ".old-" .. set_name(step))
    files.remove_tree(old)
    os.rename(final, old)
  end
  local rok, rerr = os.rename(tmp, final)
  if not rok then raise(string.format("%s: cannot rename '%s' to '%s': %s", who, tmp, final, tostring(rerr))) end
  files.fsync(dir)
  remove_leftovers(dir)
  local sets = list_sets(dir)
  for i = self.keep + 1, #sets do files.remove_tree(join(dir, sets[i][1])) end
end

--- Ends step `step`: after every `every_steps` steps, writes a set (every
-- worker must call it with the same steps: each sends worker 0 its piece).
-- @tparam Executor exe
-- @tparam Program main the program trained
-- @tparam int step the step just run (the numbering `restore` returns)
-- @treturn bool whether a set was written
-- @raise on a bad step, or when the set cannot be written (worker 0)
-- @usage ckpt:step(exe, main, step)
function Checkpointer:step(exe, main, step)
  local who = "Checkpointer:step"
  if type(step) ~= "number" or step < 1 or step ~= math.floor(step) then
    raise(who .. ": 'step' must be a whole number >= 1, got " .. describe(step))
  end
  if not framework.is_program(main) then raise(who .. ": 'main' must be a Program, got " .. describe(main)) end
  if self.batch_size and not self.global_batch then self:_plan(nil) end
  if step % self.every_steps ~= 0 then return false end
  local rank, size, fleet = job()
  local mine = my_piece(self, who)
  local pieces = fleet and allgather_strings(mine, fleet, size, who) or { mine }
  if rank == 0 then
    local decoded = {}
    for i, p in ipairs(pieces) do decoded[i] = files.decode(p) end
    self:_write(exe, main, step, decoded, who)
  end
  return true
end

-- ---- reading a set ---------------------------------------------------------------------

-- nil when the set `name` is complete and belongs to this job and program;
-- else the reason, naming the file. On success, also the manifest.
-- (specs nil: the variables are not checked; `spare(name)`: a variable of this
-- program the set may lack, e.g. gradient merge's sums)
local function verify(self, name, specs, spare)
  local setdir = join(self.dir, name)
  local mpath = join(setdir, MANIFEST)
  local text, err = files.read_all(mpath)
  if not text then return "'" .. mpath .. "' is missing or unreadable (" .. tostring(err) .. ")" end
  local m, why = files.parse_manifest(text)
  if not m then return "'" .. mpath .. "' is damaged: " .. why end
  if m.job ~= self.job then
    return string.format("'%s' was written by job '%s', not by this job ('%s')", mpath, m.job, self.job)
  end
  local mine = {}
  for _, s in ipairs(specs or {}) do mine[s[1]] = s end
  for _, v in ipairs(specs and m.vars or {}) do
    local s = mine[v[1]]
    if not s then
      return string.format("'%s' comes from another program: it holds variable '%s', which this program lacks", mpath, v[1])
    elseif s[2] ~= v[2] or s[3] ~= v[3] then
      return string.format("'%s' comes from another program: variable '%s' is %s %s there, %s %s here",
        mpath, v[1], v[2], v[3], s[2], s[3])
    end
    mine[v[1]] = nil
  end
  for n in pairs(mine) do
    if spare and spare(n) then mine[n] = nil end
  end
  local missing = next(mine)
  if missing then
    return string.format("'%s' comes from another program: it lacks variable '%s'", mpath, missing)
  end
  local need = { [PERSISTABLES] = true, [WORKERS] = true }
  for _, f in ipairs(m.files) do
    local path = join(setdir, f[1])
    local size, crc = files.size_crc(path)
    if not size then return "'" .. path .. "' is missing (" .. tostring(crc) .. ")" end
    if size ~= f[2] then
      return string.format("'%s' is %d bytes, its manifest says %d: it is truncated or damaged", path, size, f[2])
    end
    if crc ~= f[3] then
      return string.format("'%s' does not match its manifest (CRC-32 %s, expected %s): it is damaged or " ..
        "comes from another checkpoint", path, crc, f[3])
    end
    need[f[1]] = nil
  end
  local lacking = next(need)
  if lacking then return "'" .. join(setdir, lacking) .. "' is not listed in its manifest" end
  return nil, m
end

-- worker 0: what to resume from, as a table for every worker
local function decide(self, specs, spare)
  local sets = list_sets(self.dir)
  if #sets == 0 then return { kind = "fresh" } end
  local problems = {}
  for _, s in ipairs(sets) do
    local why, m = verify(self, s[1], specs, spare)
    if not why then
      local pieces = files.decode(assert(files.read_all(join(join(self.dir, s[1]), WORKERS))))
      local present = {}
      for i, v in ipairs(m.vars) do present[i] = v[1] end
      return { kind = "ok", set = s[1], step = m.step, workers = m.workers, position = m.position,
               pieces = pieces, skipped = problems, present = present }
    end
    problems[#problems + 1] = why
  end
  return { kind = "error", msg = string.format(
    "no complete checkpoint in '%s' (refusing to load a damaged one): %s", self.dir, table.concat(problems, "; ")) }
end

-- worker 0's loaded persistables on every worker
local function broadcast_vars(self, specs, who)
  local dtypes = require("oar.dtypes")
  local scope = scope_of(self)
  for _, s in ipairs(specs) do
    local var = scope:find_var(s[1])
    if not var then raise(string.format("%s: variable '%s' is not in the scope: run the startup program first", who, s[1])) end
    local t = var:get_tensor()
    local host = t:to_host()
    local bytes = host:numel() * ffi.sizeof(dtypes.ctype(host:dtype(), who))
    local p = bytes > 0 and host:data() or nil
    if bytes > 0 and p == nil then raise(string.format("%s: variable '%s' holds no data: run the startup program first", who, s[1])) end
    if C.oar_comm_broadcast(p, bytes, 0) ~= 0 then raise(who .. ": " .. lib.last_error()) end
    if host ~= t then var:set_tensor(host:to_place(t:place())) end
  end
end

-- the data position from a set written by `saved` workers (position table) for `size` workers now
function Checkpointer:_plan(saved, saved_workers, size, who)
  who = who or "Checkpointer:restore"
  size = size or select(2, job())
  if not self.batch_size then return end
  local global, worker = size * self.batch_size, self.batch_size
  if self.resize == "accumulate" then
    global = saved and saved.global_batch or global
    local n = global / worker   -- the workers of the run that set the global batch
    if global % worker ~= 0 then
      raise(string.format("%s: the checkpoint's global batch %d is not a multiple of this " ..
        "Checkpointer's batch_size %d (resize = 'accumulate')", who, global, worker))
    end
    if global % (size * worker) ~= 0 then
      raise(string.format("%s: the checkpoint's global batch %d (%d workers x %d) cannot be " ..
        "kept by %d workers accumulating micro-batches of %d (resize = 'accumulate'): %d / %d is not a whole " ..
        "number; use a number of workers that divides %d", who, global, n, worker, size, worker, n, size, n))
    end
    self.global_batch, self.worker_batch, self.accumulate = global, worker, global / (size * worker)
    return
  end
  if saved and saved.global_batch and saved_workers ~= size and self.resize == "global_batch" then
    global = saved.global_batch
    if global % size ~= 0 then
      raise(string.format("Checkpointer:restore: the checkpoint's global batch %d cannot be split over %d workers " ..
        "(resize = 'global_batch'); use resize = 'worker_batch' or a number of workers that divides it", global, size))
    end
    worker = global / size
  end
  self.global_batch, self.worker_batch = global, worker
end

-- worker 0: loads the set's persistables; those of the program the set lacks
-- (spare ones only, see `verify`) are left out of the read and keep their values
local function load_present(self, exe, main, d)
  local present = {}
  for _, n in ipairs(d.present) do present[n] = true end
  local hidden = {}
  for _, v in ipairs(require("oar.io").get_program_persistable_vars(main)) do
    if not present[rawget(v, "name")] then
      hidden[#hidden + 1] = v
      rawset(v, "persistable", false)
    end
  end
  local ok, err = pcall(require("oar.io").load_persistables, exe, join(self.dir, d.set), main, PERSISTABLES,
    { scope = scope_of(self) })
  for _, v in ipairs(hidden) do rawset(v, "persistable", true) end
  if not ok then error(err, 0) end
end

--- The number of micro-batches each worker runs per step with
-- `resize = "accumulate"`: k = N / M when the newest complete set of `dir`
-- was written by a job of N workers' global batch and M workers run now (1
-- without a set). Build the program with it before `restore`, e.g.
-- `fleet.distributed_optimizer(opt, {gradient_merge = {k_steps = k, avg = true}})`.
-- Every worker calls it (worker 0 reads the manifest and tells the others).
-- @treturn int k
-- @raise without resize = "accumulate", or when M does not divide N (naming both)
-- @usage local k = ckpt:accumulate_steps()
function Checkpointer:accumulate_steps()
  local who = "Checkpointer:accumulate_steps"
  if self.resize ~= "accumulate" then raise(who .. ": needs resize = 'accumulate', this Checkpointer has '" .. self.resize .. "'") end
  local rank, size, fleet = job()
  local d
  if rank == 0 then
    local ok, res = pcall(decide, self, nil)
    d = ok and res or { kind = "error", msg = tostring(res) }
    d = { kind = d.kind, msg = d.msg, position = d.position }
  end
  if fleet then d = files.decode(broadcast_string(rank == 0 and assert(files.encode(d)) or nil, who)) end
  if d.kind == "error" then raise(who .. ": " .. d.msg) end
  self:_plan(d.kind == "ok" and d.position or nil, nil, size, who)
  return self.accumulate
end

--- Resumes from the newest complete set of `dir`: loads the persistables
-- into the scope (worker 0 reads them and sends them to the others), each
-- worker's random generator state and saved value, and the data position.
-- Run the startup program first. Every worker calls it.
-- @tparam Executor exe
-- @tparam Program main the program trained
-- @treturn int the step to run next: 1 when there is no set, else the set's step + 1
-- @raise when sets exist but none is complete and of this job and program
-- (naming the file), or when the workers' programs differ
-- @usage local start = ckpt:restore(exe, main)
function Checkpointer:restore(exe, main)
  local who = "Checkpointer:restore"
  if not framework.is_program(main) then raise(who .. ": 'main' must be a Program, got " .. describe(main)) end
  local rank, size, fleet = job()
  local specs = var_specs(main)
  if fleet then
    local h = tonumber("0x" .. files.crc32_string(specs_text(specs)))
    local r = fleet.all_reduce({ h, -h }, "max")
    if r[1] ~= -r[2] then raise(who .. ": the workers' programs have different persistable variables") end
  end
  -- resize = "accumulate": gradient merge's sums and counter (zero at a step's
  -- end) may be missing from a set written without accumulation
  local spare = self.resize == "accumulate" and function(n)
    return n:find("@GRAD@MERGED", 1, true) ~= nil or n:match("^gradient_merge_step") ~= nil
  end or nil
  local d
  if rank == 0 then
    local ok, res = pcall(decide, self, specs, spare)
    d = ok and res or { kind = "error", msg = tostring(res) }
  end
  if fleet then d = files.decode(broadcast_string(rank == 0 and assert(files.encode(d)) or nil, who)) end
  if d.kind == "error" then raise(who .. ": " .. d.msg) end
  if d.kind == "fresh" then
    self:_plan(nil, nil, size)
    self.anchor_step, self.anchor_sample = 1, 0
    return 1
  end
  -- worker 0 loads; the others hear whether it could (and then raise with it, not wait)
  local failed
  if rank == 0 then
    for _, why in ipairs(d.skipped) do io.stderr:write("oar.fleet.Checkpointer: skipping a damaged set: ", why, "\n") end
    local ok, err = pcall(load_present, self, exe, main, d)
    failed = not ok and tostring(err) or ""
  end
  if fleet then failed = broadcast_string(failed, who) end
  if failed ~= "" then raise(string.format("%s: loading '%s' failed: %s", who, join(self.dir, d.set), failed)) end
  if fleet then broadcast_vars(self, specs, who) end
  local piece = d.pieces[rank + 1]
  if piece then set_rng_words(piece.rng, who) end
  if self.set_worker_state then
    local all = {}
    for i, p in ipairs(d.pieces) do all[i] = p.state end
    self.set_worker_state(piece and piece.state, all, d.workers)
  end
  local told = self.accumulate
  self:_plan(d.position, d.workers, size)
  if told and told ~= self.accumulate then
    raise(string.format("%s: the set '%s' needs %d micro-batches per step, but accumulate_steps() said %d " ..
      "(the newer set it read was refused)", who, join(self.dir, d.set), self.accumulate, told))
  end
  self.anchor_step, self.anchor_sample = d.step + 1, d.position.next_sample or 0
  if rank == 0 then
    io.stderr:write(string.format("oar.fleet.Checkpointer: resuming at step %d from '%s' (written by %d worker%s)\n",
      d.step + 1, join(self.dir, d.set), d.workers, d.workers == 1 and "" or "s"))
  end
  return d.step + 1
end

--- This worker's samples at `step` (needs `batch_size`): the first global
-- sample index (0-based) and the count. With resize = "accumulate", those of
-- its micro-batch `micro` (1 .. `accumulate_steps()`) of the step. Worker r reads samples
-- first .. first + count - 1, where consecutive steps read consecutive
-- global batches; after a resume with another number of workers the
-- shards are split again from the saved position (see `resize`).
-- @tparam int step
-- @tparam[opt=1] int micro the micro-batch (resize = "accumulate")
-- @treturn int first
-- @treturn int count
-- @raise without batch_size, or on a micro-batch out of range
-- @usage local first, count = ckpt:batch(step)
function Checkpointer:batch(step, micro)
  if not self.batch_size then raise("Checkpointer:batch: give the Checkpointer a 'batch_size'") end
  if not self.global_batch then self:_plan(nil) end
  local rank, size = job()
  local k = self.accumulate or 1
  micro = micro or 1
  if type(micro) ~= "number" or micro < 1 or micro > k or micro ~= math.floor(micro) then
    raise(string.format("Checkpointer:batch: 'micro' must be a whole number in [1, %d], got %s", k, describe(micro)))
  end
  return self.anchor_sample + (step - self.anchor_step) * self.global_batch + ((micro - 1) * size + rank) * self.worker_batch,
    self.worker_batch
end

--- The directory of the newest set, or nil when there is none (not checked).
-- @treturn ?string
-- @usage print(ckpt:latest())
function Checkpointer:latest()
  local sets = list_sets(self.dir)
  return sets[1] and join(self.dir, sets[1][1]) or nil
end

Checkpointer.__tostring = function(self)
  return string.format("Checkpointer(dir=%q, every_steps=%d, keep=%d)", self.dir, self.every_steps, self.keep)
end

return M
