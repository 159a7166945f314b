-- A worker of the data-parallel specs (spec/fleet_spec.lua), started by
-- mpirun (or alone) from the repository root:
--   luajit spec/helpers/fleet_worker.lua KEY=VALUE ...
-- task=train  model=mlp|convbn opt=sgd|adam mode=dist|single batch=B steps=S [wide=N: the MLP's first width]
--             seed=N out=PREFIX  -> PREFIX.<worker> holds the parameters
--             after S steps ("name v1 v2 ..." lines, %.17g).
--   mode=dist: fleet, batch B per worker, worker r takes samples
--     t*N*B + r*B .. +B at step t; mode=single: one process, batch N*B
--     (N = workers=); for convbn, towers=N builds N copies of the net
--     sharing parameters, each on its B samples with its own batch_norm
--     statistics (what N workers compute), loss = mean of the towers' losses.
--             place=cuda runs on CUDAPlace(0) (the collectives over NCCL).
-- task=startup  seed=N out=PREFIX: parameters after the startup program.
-- task=die      timeout=T die_at=K: worker 1 kills itself at step K.
-- task=differ   timeout=T: worker 1 builds a wider hidden layer.
-- task=shard    n=N: prints the indices worker r's shard yields.
-- Errors go to stderr; the exit status is nonzero.
package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
package.cpath = "./build/?.so;" .. package.cpath
local ffi = require("ffi")
local oar = require("oar")
local layers = oar.layers
local fleet = oar.fleet

local opt = { task = "train", model = "mlp", opt = "sgd", mode = "dist", batch = 4, steps = 20, seed = 1,
              workers = 2, timeout = 20, towers = 1, n = 0, wide = 16 }
for _, a in ipairs(arg) do
  local k, v = a:match("^([%w_]+)=(.*)$")
  assert(k, "bad argument " .. a)
  opt[k] = tonumber(v) or v
end

ffi.cdef[[ int kill(int pid, int sig); int getpid(void); ]]

if opt.task == "shard" then
  fleet.init{ timeout = opt.timeout }
  local base = function()
    local i = 0
    return function() i = i + 1 if i <= opt.n then return i end end
  end
  local got = {}
  for s in oar.reader.shard(base, fleet.worker_index(), fleet.worker_num())() do got[#got + 1] = s end
  io.write(fleet.worker_index(), ":", table.concat(got, ","), "\n")
  return
end

local D, CLASSES = 12, 5
-- sample i: features and label, the same on every worker
local function sample(i, shape)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  local x = {}
  for j = 1, n do x[j] = math.sin(0.37 * i + 0.61 * j) + 0.1 * math.cos(1.3 * i * j) end
  return x, i % CLASSES
end

local function batch(first, count, shape)
  local xs, ys = {}, {}
  for b = 1, count do
    local flat, y = sample(first + b - 1, shape)
    -- nest to shape
    local function nest(off, dims, d)
      if d > #dims then return flat[off + 1] end
      local out, stride = {}, 1
      for k = d + 1, #dims do stride = stride * dims[k] end
      for k = 1, dims[d] do out[k] = nest(off + (k - 1) * stride, dims, d + 1) end
      return out
    end
    xs[b] = nest(0, shape, 1)
    ys[b] = { y }
  end
  return xs, ys
end

local function net(x, model, tower)
  if model == "mlp" then
    local h = layers.fc{ input = x, size = opt.wide, act = "tanh", param_attr = oar.ParamAttr{ name = "fc1.w" },
                         bias_attr = oar.ParamAttr{ name = "fc1.b" } }
    local hidden = (opt.task == "differ" and fleet.worker_index() == 1) and 10 or 8
    local h2 = layers.fc{ input = h, size = hidden, act = "relu", param_attr = oar.ParamAttr{ name = "fc2.w" },
                          bias_attr = oar.ParamAttr{ name = "fc2.b" } }
    return layers.fc{ input = h2, size = CLASSES, act = "softmax", param_attr = oar.ParamAttr{ name = "out.w" },
                      bias_attr = oar.ParamAttr{ name = "out.b" } }
  end
  local c = layers.conv2d{ input = x, num_filters = 3, filter_size = 3, padding = 1, bias_attr = false,
                           param_attr = oar.ParamAttr{ name = "conv.w" } }
  local bn = layers.batch_norm{ input = c, act = "relu", param_attr = oar.ParamAttr{ name = "bn.scale" },
                                bias_attr = oar.ParamAttr{ name = "bn.bias" },
                                moving_mean_name = "bn.mean" .. tower, moving_variance_name = "bn.var" .. tower }
  return layers.fc{ input = bn, size = CLASSES, act = "softmax", param_attr = oar.ParamAttr{ name = "out.w" },
                    bias_attr = oar.ParamAttr{ name = "out.b" } }
end

local function shape_of(model) return model == "mlp" and { D } or { 2, 4, 4 } end

local dist = opt.mode == "dist"
-- task=startup: every worker draws from its own seed (worker-dependent program seeds too)
local own_seed = opt.task == "startup" and tonumber(os.getenv("OMPI_COMM_WORLD_RANK") or 0) * 1000 or 0
oar.seed(opt.seed + own_seed)
if dist then fleet.init{ timeout = opt.timeout } end
local rank = dist and fleet.worker_index() or 0
local nworkers = dist and fleet.worker_num() or 1
local towers = dist and 1 or opt.towers

local main, startup = oar.Program(), oar.Program()
if own_seed > 0 then main.random_seed, startup.random_seed = own_seed, own_seed end
local feeds, loss = {}, nil
oar.program_guard(main, startup, function()
  local losses = {}
  for t = 1, towers do
    local x = layers.data{ name = "x" .. t, shape = shape_of(opt.model), dtype = "float32" }
    local y = layers.data{ name = "y" .. t, shape = { 1 }, dtype = "int64" }
    feeds[t] = { x, y }
    local pred = net(x, opt.model, t == 1 and "" or tostring(t))
    losses[t] = layers.mean(layers.cross_entropy{ input = pred, label = y })
  end
  loss = losses[1]
  if towers > 1 then loss = layers.scale(layers.sums(losses), 1 / towers) end
  local o = opt.opt == "adam" and oar.optimizer.Adam{ learning_rate = 0.01 } or oar.optimizer.SGD{ learning_rate = 0.2 }
  if dist then o = fleet.distributed_optimizer(o, { fuse_grad_size_in_MB = opt.bucket_mb }) end
  o:minimize(loss)
end)

local exe = oar.Executor(opt.place == "cuda" and oar.CUDAPlace(0) or oar.CPUPlace())
local scope = oar.Scope()
exe:run(startup, { scope = scope })

local function dump(path)
  local f = assert(io.open(path, "w"))
  local names = {}
  for _, p in ipairs(main:global_block():all_parameters()) do names[#names + 1] = p.name end
  table.sort(names)
  for _, n in ipairs(names) do
    local t = scope:find_var(n):get_tensor():to_host()
    local d, vals = t:data(), {}
    for i = 0, t:numel() - 1 do vals[#vals + 1] = string.format("%.17g", d[i]) end
    f:write(n, " ", table.concat(vals, " "), "\n")
  end
  f:close()
end

if opt.task == "startup" then
  dump(opt.out .. "." .. rank)
  return
end

local B = opt.batch
local per_step = dist and nworkers * B or (opt.workers * B)
for step = 0, opt.steps - 1 do
  if opt.task == "die" and rank == 1 and step == opt.die_at then ffi.C.kill(ffi.C.getpid(), 9) end
  local feed = {}
  if dist then
    local xs, ys = batch(step * per_step + rank * B, B, shape_of(opt.model))
    feed.x1, feed.y1 = xs, ys
  elseif towers > 1 then
    for t = 1, towers do
      local xs, ys = batch(step * per_step + (t - 1) * B, B, shape_of(opt.model))
      feed["x" .. t], feed["y" .. t] = xs, ys
    end
  else
    local xs, ys = batch(step * per_step, per_step, shape_of(opt.model))
    feed.x1, feed.y1 = xs, ys
  end
  exe:run(main, { feed = feed, fetch_list = { loss }, scope = scope })
end
if opt.task == "save" then
  -- each worker asks to save into a directory of its own: only worker 0's may appear
  oar.io.save_persistables(exe, opt.out .. ".ckpt" .. rank, main, { scope = scope })
  oar.io.save_inference_model(opt.out .. ".model" .. rank, { "x1" }, { loss }, exe, main, { scope = scope })
  fleet.barrier()
  local fresh = oar.Scope()
  oar.io.load_persistables(exe, opt.out .. ".ckpt0", main, { scope = fresh })
  local p = fresh:find_var("fc1.w"):get_tensor()
  local q = scope:find_var("fc1.w"):get_tensor()
  for i = 0, q:numel() - 1 do assert(p:data()[i] == q:data()[i], "loaded fc1.w differs") end
  io.write("loaded ", rank, "\n")
  return
end
if opt.out then dump(opt.out .. "." .. rank) end
