--- oar.fleet: data-parallel training in Fluid 1.8's collective mode.
--
--   mpirun -np N luajit train.lua          (one machine, or many with a hostfile)
--
--   local fleet = oar.fleet
--   fleet.init()                            -- joins the job; 1 worker when run alone
--   local opt = fleet.distributed_optimizer(oar.optimizer.Adam{learning_rate = 1e-3})
--   opt:minimize(loss)
--   local reader = oar.reader.shard(base_reader, fleet.worker_index(), fleet.worker_num())
--
-- minimize appends the backward pass with loss@GRAD filled with 1/N instead
-- of 1, so every gradient comes out already divided by the number of
-- workers (the mean; Fluid's transpiler scales the loss gradient too). Then
-- each dense gradient of 256 KiB or more gets its own c_allreduce_sum, in
-- place, and the smaller ones are fused by bucket (about
-- fuse_grad_size_in_MB each, 32 by default): one c_coalesce (copied into one
-- flat buffer), one c_allreduce_sum and one c_split_coalesced (copied back).
-- Sparse gradients (selected rows of an embedding) are gathered with
-- c_allgather. (When the loss gradient's fill is not found, e.g. under a
-- decorator that differentiates another variable, a scale by 1/N follows
-- each reduction instead.) Then the inner
-- optimizer's clipping, regularization and update ops. The startup program
-- gets one c_broadcast per parameter from worker 0, so every worker starts
-- from worker 0's values whatever its seed.
--
-- Communication goes through liboar's interface (src/comm.h): OpenMPI when
-- oar was built with it and mpirun started the job, else one worker. Every
-- blocking call is bounded by a timeout (fleet.init{timeout=}, default 300 s
-- or OAR_COMM_TIMEOUT): a worker that dies, hangs, never joins or runs a
-- different program ends the job with an error on every worker.
-- @module oar.fleet
local ffi = require("ffi")
local lib = require("oar.lib")
local framework = require("oar.framework")
local unique_name = require("oar.unique_name")
local C = lib.C

local raise, describe, is_variable = framework.raise, framework.describe, framework.is_variable

local M = {}

local state = { initialized = false }

local function ensure_init(who)
  if not state.initialized then
    raise(who .. ": call oar.fleet.init() first")
  end
end

--- Joins the job (one worker when the process was not started by mpirun).
-- Workers after the first move to a random seed of their own, so their
-- dropout masks differ. Calling it again is fine. Fluid's role makers (any
-- other table or object) are accepted and ignored: the launcher says who
-- is who.
-- @tparam[opt] table opts options:
-- @tparam[opt=300] number opts.timeout seconds any blocking call may take
-- (default: OAR_COMM_TIMEOUT, else 300), in (0, 1e7]
-- @treturn table oar.fleet
-- @raise on a bad timeout, or when the job cannot be joined
-- @usage
-- local fleet = oar.fleet.init()
-- print(fleet.worker_index(), fleet.worker_num())
function M.init(opts)
  local timeout = 0
  if type(opts) == "table" and getmetatable(opts) == nil and opts.timeout ~= nil then
    timeout = opts.timeout
    if type(timeout) ~= "number" or not (timeout > 0) or timeout > 1e7 then
      raise("fleet.init: 'timeout' must be a number of seconds in (0, 1e7], got " .. describe(timeout))
    end
  elseif opts ~= nil and type(opts) ~= "table" then
    raise("fleet.init: expected nothing or a table {timeout=seconds}, got " .. describe(opts))
  end
  if C.oar_comm_init(timeout) ~= 0 then raise("fleet.init: " .. lib.last_error()) end
  local first = not state.initialized
  state.initialized = true
  state.rank = C.oar_comm_rank()
  state.size = C.oar_comm_size()
  state.note = ffi.string(C.oar_comm_note())
  if first and state.note ~= "" then io.stderr:write("oar.fleet.init: ", state.note, "\n") end
  -- Dropout and other random ops draw from the global generator: worker k > 0
  -- moves to a seed of its own derived from the current one, so that masks
  -- are independent across workers as they are across the samples of one
  -- big batch (parameters come from worker 0's broadcast anyway).
  if first and state.rank > 0 then
    local s = C.oar_random_seed()
    C.oar_set_random_seed(s + 0x9E3779B97F4A7C15ULL * ffi.new("uint64_t", state.rank))
  end
  return M
end

--- Whether init has been called.
-- @treturn bool
-- @usage if not oar.fleet.is_initialized() then oar.fleet.init() end
function M.is_initialized() return state.initialized end

--- This worker's index, 0 to worker_num() - 1.
-- @treturn int
-- @raise before init
-- @usage local reader = oar.reader.shard(base, oar.fleet.worker_index(), oar.fleet.worker_num())
function M.worker_index() ensure_init("fleet.worker_index") return state.rank end

--- The number of workers in the job.
-- @treturn int
-- @raise before init
-- @usage local global_batch = 64 * oar.fleet.worker_num()
function M.worker_num() ensure_init("fleet.worker_num") return state.size end

--- Whether this is worker 0 (the one that should print and save).
-- @treturn bool
-- @raise before init
-- @usage if oar.fleet.is_first_worker() then oar.io.save_persistables(exe, "ckpt", main) end
function M.is_first_worker() ensure_init("fleet.is_first_worker") return state.rank == 0 end

--- Why the job has one worker although the launcher asked for more (oar
-- built without MPI, say); "" otherwise.
-- @treturn string
-- @usage if oar.fleet.note() ~= "" then print(oar.fleet.note()) end
function M.note() return state.note or "" end

--- The communication backend in use: "mpi" or "single".
-- @treturn string
-- @usage print(oar.fleet.backend())
function M.backend() return ffi.string(C.oar_comm_backend_name()) end

--- The timeout of blocking calls, in seconds.
-- @treturn number
-- @usage print(oar.fleet.timeout())
function M.timeout() return C.oar_comm_timeout() end

--- Sets the timeout of blocking calls.
-- @tparam number s seconds
-- @raise when s is not a valid number of seconds
-- @usage oar.fleet.set_timeout(600)
function M.set_timeout(s)
  if type(s) ~= "number" or C.oar_comm_set_timeout(s) ~= 0 then
    raise("fleet.set_timeout: " .. (type(s) == "number" and lib.last_error() or "expected seconds, got " .. describe(s)))
  end
end

--- Waits until every worker reaches this call.
-- @raise before init, or when a worker fails or the timeout passes
-- @usage oar.fleet.barrier()
function M.barrier()
  ensure_init("fleet.barrier")
  if C.oar_comm_barrier() ~= 0 then raise("fleet.barrier: " .. lib.last_error()) end
end

local reduce_ops = { sum = 0, max = 1, min = 2, prod = 3 }

--- Reduces numbers over the workers, in float64 (metrics, step counts):
-- every worker gets the result.
-- @tparam number|{number,...} x a number or a list of numbers
-- @tparam[opt="sum"] string op "sum", "max", "min" or "prod"
-- @treturn number|{number,...} the reduced value(s), as x
-- @raise before init, on a bad op or a value that is not a number
-- @usage local totals = oar.fleet.all_reduce({correct, seen})   -- sums over the workers
function M.all_reduce(x, op)
  ensure_init("fleet.all_reduce")
  local code = reduce_ops[op or "sum"]
  if not code then raise("fleet.all_reduce: op must be 'sum', 'max', 'min' or 'prod', got " .. describe(op)) end
  local list = type(x) == "table" and x or { x }
  local n = #list
  local buf = ffi.new("double[?]", n > 0 and n or 1)
  for i = 1, n do
    if type(list[i]) ~= "number" then raise("fleet.all_reduce: expected numbers, got " .. describe(list[i])) end
    buf[i - 1] = list[i]
  end
  if C.oar_comm_allreduce(buf, n, 6, code) ~= 0 then raise("fleet.all_reduce: " .. lib.last_error()) end
  if type(x) ~= "table" then return buf[0] end
  local out = {}
  for i = 1, n do out[i] = buf[i - 1] end
  return out
end

--- Makes a Checkpointer (oar.fleet_checkpoint): worker 0 writes a
-- complete set (persistables, every worker's random state and saved value,
-- the step) every `every_steps` steps, and `restore` resumes from the newest
-- complete one, so that a job restarted by `oar launch` ends with the
-- parameters an uninterrupted one would have (docs/distributed.md,
-- "Recovering from failures").
-- @tparam table opts `{dir=, every_steps=100, keep=3, batch_size=, resize=, worker_state=, set_worker_state=, job=, scope=}`
-- @treturn Checkpointer
-- @raise on a bad option
-- @usage
-- local ckpt = oar.fleet.Checkpointer{dir = "ckpt", every_steps = 100, keep = 3}
-- local start = ckpt:restore(exe, main)
-- for step = start, total_steps do
--   exe:run(main, {feed = next_batch(step)})
--   ckpt:step(exe, main, step)
-- end
function M.Checkpointer(opts) return require("oar.fleet_checkpoint").new(opts) end

-- ---- the distributed optimizer ------------------------------------------------

local DistributedOptimizer = {}
DistributedOptimizer.__index = function(self, k)
  local v = DistributedOptimizer[k]
  if v ~= nil then return v end
  local inner = rawget(self, "inner")
  v = inner[k]
  -- the inner optimizer's methods act on the inner optimizer
  if type(v) == "function" then return function(_, ...) return v(inner, ...) end end
  return v
end

local dtype_bytes = { float32 = 4, float64 = 8, float16 = 2, int32 = 4, int64 = 8 }

local function numel(shape)
  local n = 1
  for _, d in ipairs(shape) do
    if d < 0 then return nil end
    n = n * d
  end
  return n
end

--- Wraps an optimizer for data-parallel training: its minimize averages
-- the gradients over the workers before the update (see the module's
-- description), and broadcasts worker 0's initial parameters. Other
-- methods act on the inner optimizer.
-- @tparam Optimizer opt an oar.optimizer optimizer
-- @tparam[opt] table strategy options:
-- @tparam[opt=32] number strategy.fuse_grad_size_in_MB the size of one all-reduce bucket
-- @tparam[opt="allgather"] string strategy.sparse_grad "allgather" (gather the rows) or "dense"
-- @tparam[opt] table strategy.gradient_merge `{k_steps = k, avg = true}`: each worker's averaged
-- gradients add up over k runs and the update runs every k-th with their mean (their sum
-- without avg), as oar.optimizer.GradientMergeOptimizer (see Checkpointer's resize = "accumulate")
-- @treturn DistributedOptimizer
-- @raise when opt is not an optimizer or a strategy value is bad
-- @usage
-- local opt = oar.fleet.distributed_optimizer(oar.optimizer.Adam{learning_rate = 1e-3})
-- opt:minimize(loss)
function M.distributed_optimizer(opt, strategy)
  local mt = getmetatable(opt)
  if type(opt) ~= "table" or mt ~= require("oar.optimizer").Optimizer then
    raise("fleet.distributed_optimizer: expected an oar.optimizer optimizer, got " .. describe(opt))
  end
  strategy = strategy or {}
  if type(strategy) ~= "table" then
    raise("fleet.distributed_optimizer: 'strategy' must be a table, got " .. describe(strategy))
  end
  local mb = strategy.fuse_grad_size_in_MB
  if mb == nil then mb = 32 end
  if type(mb) ~= "number" or not (mb > 0) then
    raise("fleet.distributed_optimizer: 'fuse_grad_size_in_MB' must be a positive number, got " .. describe(mb))
  end
  local sparse = strategy.sparse_grad or "allgather"
  if sparse ~= "allgather" and sparse ~= "dense" then
    raise("fleet.distributed_optimizer: 'sparse_grad' must be 'allgather' or 'dense', got " .. describe(sparse))
  end
  local gm = strategy.gradient_merge
  if gm ~= nil then
    if type(gm) ~= "table" then
      raise("fleet.distributed_optimizer: 'gradient_merge' must be a table {k_steps=, avg=}, got " .. describe(gm))
    end
    for k in pairs(gm) do
      if k ~= "k_steps" and k ~= "avg" then
        raise("fleet.distributed_optimizer: unknown 'gradient_merge' option '" .. tostring(k) .. "'")
      end
    end
    local k = gm.k_steps
    if type(k) ~= "number" or k < 1 or k ~= math.floor(k) then
      raise("fleet.distributed_optimizer: 'gradient_merge.k_steps' must be a whole number >= 1, got " .. describe(k))
    end
    if gm.avg ~= nil and type(gm.avg) ~= "boolean" then
      raise("fleet.distributed_optimizer: 'gradient_merge.avg' must be a boolean, got " .. describe(gm.avg))
    end
  end
  return setmetatable({ inner = opt, bucket_bytes = mb * 1024 * 1024, sparse = sparse, merge = gm }, DistributedOptimizer)
end

-- Splits the dense (param, grad) pairs into buckets of one dtype and at most
-- bucket_bytes each (a gradient larger than that gets a bucket of its own).
local function make_buckets(pairs_list, bucket_bytes)
  local buckets, open = {}, {}
  for _, pg in ipairs(pairs_list) do
    local g = pg[2]
    local n = numel(g.shape)
    local bytes = n and n * (dtype_bytes[g.dtype] or 4) or nil
    local b = open[g.dtype]
    if bytes == nil or (b and b.bytes + bytes > bucket_bytes) then b = nil end
    if not b then
      b = { dtype = g.dtype, bytes = 0, grads = {} }
      buckets[#buckets + 1] = b
      open[g.dtype] = bytes and b or nil
    end
    b.grads[#b.grads + 1] = g
    b.bytes = b.bytes + (bytes or 0)
  end
  return buckets
end

-- A gradient at least this large is all-reduced in place, on its own:
-- copying it into a fused buffer and back costs two passes over its bytes
-- (measured: 180 us a step for the 2.1 MB of the bench MLP) where one more
-- collective call costs a few microseconds. Smaller ones are fused.
local INPLACE_BYTES = 256 * 1024

-- The mean over workers, taken before the backward pass instead of after
-- the reduction (Fluid's collective transpiler does the same): the fill of
-- loss@GRAD becomes 1/N, so every gradient comes out divided and no pass
-- over the reduced gradients is needed (for N a power of two the result is
-- bit-identical). True when the fill was found.
local function prescale_loss_grad(loss, nworkers)
  local gname = rawget(loss, "name") .. "@GRAD"
  for _, op in ipairs(loss.block:ops()) do
    if op.type == "fill_constant" then
      for _, n in ipairs(op:output_arg_names()) do
        if n == gname then
          op:set_attr("value", (op:attr("value") or 1.0) / nworkers)
          return true
        end
      end
    end
  end
  return false
end

-- Appends the collective ops for params_grads to `program`; returns the
-- pairs the inner optimizer updates with (sparse grads replaced by their
-- gathered form). prescaled: the gradients are already divided by the
-- number of workers (prescale_loss_grad), so no scale op follows.
function DistributedOptimizer:_append_allreduce(params_grads, program, prescaled)
  local block = program:global_block()
  local nworkers = state.size
  local inv = 1.0 / nworkers
  local dense, out = {}, {}
  -- the mean over workers after a reduction, unless the loss gradient was prescaled
  local function mean_of(v)
    if prescaled then return end
    block:append_op{ type = "scale", inputs = { X = { v } }, outputs = { Out = { v } }, attrs = { scale = inv, bias = 0.0 } }
  end
  program:_backward_role_guard(function()
    for i, pg in ipairs(params_grads) do
      local p, g = pg[1], pg[2]
      out[i] = pg
      if g ~= nil and g.type == "selected_rows" then
        if self.sparse == "allgather" then
          local gathered = block:create_var{ name = unique_name.generate(rawget(g, "name") .. "@GATHERED"),
            type = "selected_rows", dtype = g.dtype, shape = g.shape, stop_gradient = true }
          block:append_op{ type = "c_allgather", inputs = { X = { g } }, outputs = { Out = { gathered } },
            attrs = { nranks = nworkers, ring_id = 0 } }
          mean_of(gathered)
          out[i] = { p, gathered }
        else
          -- densified: zeros shaped like the param plus the rows, then fused with the rest
          local zeros = block:create_var{ name = unique_name.generate(rawget(p, "name") .. "@ZEROS"),
            dtype = p.dtype, shape = p.shape, stop_gradient = true }
          block:append_op{ type = "fill_zeros_like", inputs = { X = { p } }, outputs = { Out = { zeros } } }
          local dg = block:create_var{ name = unique_name.generate(rawget(g, "name") .. "@DENSE"),
            dtype = p.dtype, shape = p.shape, stop_gradient = true }
          block:append_op{ type = "sum", inputs = { X = { zeros, g } }, outputs = { Out = { dg } } }
          out[i] = { p, dg }
          dense[#dense + 1] = out[i]
        end
      elseif g ~= nil then
        dense[#dense + 1] = pg
      end
    end
    local fused_ones = {}
    for _, pg in ipairs(dense) do
      local g = pg[2]
      local n = numel(g.shape)
      if n and n * (dtype_bytes[g.dtype] or 4) >= INPLACE_BYTES then
        block:append_op{ type = "c_allreduce_sum", inputs = { X = { g } }, outputs = { Out = { g } },
          attrs = { ring_id = 0 } }
        mean_of(g)
      else
        fused_ones[#fused_ones + 1] = pg
      end
    end
    for _, b in ipairs(make_buckets(fused_ones, self.bucket_bytes)) do
      local total = 0
      for _, g in ipairs(b.grads) do total = total + (numel(g.shape) or 0) end
      local fused = block:create_var{ name = unique_name.generate("fused_grad"), dtype = b.dtype,
        shape = { total > 0 and total or -1 }, stop_gradient = true }
      block:append_op{ type = "c_coalesce", inputs = { X = b.grads }, outputs = { Out = { fused } } }
      block:append_op{ type = "c_allreduce_sum", inputs = { X = { fused } }, outputs = { Out = { fused } },
        attrs = { ring_id = 0 } }
      mean_of(fused)
      block:append_op{ type = "c_split_coalesced", inputs = { X = { fused }, Ref = b.grads },
        outputs = { Out = b.grads } }
    end
  end)
  return out
end

-- Worker 0's parameters go to every worker, after the startup program's own
-- initializers (once per parameter and startup program).
local broadcast_done = setmetatable({}, { __mode = "k" })
local function append_broadcasts(program, startup)
  local done = broadcast_done[startup] or {}
  broadcast_done[startup] = done
  local sb = startup:global_block()
  local params = program:global_block():all_parameters()
  table.sort(params, function(a, b) return rawget(a, "name") < rawget(b, "name") end)
  for _, p in ipairs(params) do
    local name = rawget(p, "name")
    local sv = sb:_find_var_local(name)
    if sv and not done[name] then
      done[name] = true
      sb:append_op{ type = "c_broadcast", inputs = { X = { sv } }, outputs = { Out = { sv } },
        attrs = { root = 0, ring_id = 0 } }
    end
  end
end

--- Appends the backward pass, the gradient all-reduce, the inner
-- optimizer's update ops, and the startup broadcasts. Also
-- `minimize(loss, startup_program, parameter_list, no_grad_set)`.
-- @tparam Variable loss a one-value loss
-- @tparam[opt] table opts keyword arguments:
-- @tparam[opt] Program opts.startup_program default: the default startup program
-- @tparam[opt] {Variable|string,...} opts.parameter_list default: all trainable parameters
-- @tparam[opt] {Variable|string,...} opts.no_grad_set
-- @tparam[opt] {Variable|string,...} parameter_list with a positional startup program
-- @tparam[opt] {Variable|string,...} no_grad_set with a positional startup program
-- @treturn {Operator,...} the update ops
-- @treturn {{Variable,Variable},...} the `{param, averaged grad}` pairs
-- @raise before init, or when loss is not a Variable
-- @usage local ops, pg = opt:minimize(loss)
function DistributedOptimizer:minimize(loss, opts, parameter_list, no_grad_set)
  ensure_init("DistributedOptimizer:minimize")
  if not is_variable(loss) then raise("DistributedOptimizer:minimize: 'loss' must be a Variable, got " .. describe(loss)) end
  if framework.is_program(opts) or opts == nil and (parameter_list or no_grad_set) then
    opts = { startup_program = opts, parameter_list = parameter_list, no_grad_set = no_grad_set }
  end
  opts = opts or {}
  if type(opts) ~= "table" then raise("DistributedOptimizer:minimize: options must be a table, got " .. describe(opts)) end
  local inner = rawget(self, "inner")
  local program = loss.block.program
  local startup = opts.startup_program or framework.default_startup_program()
  local params_grads = inner:backward(loss, opts)
  table.sort(params_grads, function(a, b) return rawget(a[1], "name") < rawget(b[1], "name") end)
  -- one worker: the mean over workers is the gradient itself, no scale at all
  local prescaled = state.size == 1 or prescale_loss_grad(loss, state.size)
  local reduced = self:_append_allreduce(params_grads, program, prescaled)
  local ops
  local gm = rawget(self, "merge")
  if gm and gm.k_steps > 1 then
    -- the averaged gradients add up over k runs; the inner update runs inside the merge's conditional block
    local stage = { minimize = function() end, backward = function() return reduced end,
      apply_gradients = function(_, pg, p, s)
        ops = inner:apply_gradients(pg, p, s)
        return ops
      end }
    require("oar.optimizer_wrappers").GradientMergeOptimizer(stage, { k_steps = gm.k_steps, avg = gm.avg ~= false })
      :minimize(loss, { startup_program = startup })
  else
    ops = inner:apply_gradients(reduced, program, startup)
  end
  append_broadcasts(program, startup)
  return ops, reduced
end

function DistributedOptimizer:__tostring() return "DistributedOptimizer(" .. tostring(rawget(self, "inner")) .. ")" end

return M
