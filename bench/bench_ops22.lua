-- bench_ops22.lua: oar side of issue 22's speed check (bench/run_ops22.sh):
-- forward + backward of the losses, norms, bmm and conv3d on fixed inputs,
-- timed per call. Each case is one program (data -> op [-> mean] ->
-- oar.gradients with respect to every float input and parameter), built
-- once and run by the prepared executor, the same tensors fed every step,
-- the reduced loss fetched. PyTorch's side: bench/torch_ops22.py (same
-- cases, shapes, inputs and reductions). One line per case:
--   RESULT oar ops22_<case> us_per_call=<x>
--   luajit bench/bench_ops22.lua [iters] [reps] [case-pattern]
-- iters calls per timed window, the best of reps windows; case-pattern (a
-- Lua pattern) keeps the matching cases only. BENCH_PRINT_LOSS=1 prints
-- each case's loss once (to check it against the PyTorch side's).
-- A source checkout runs without installing (lua/ and build/ next to bench/).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)[^/]*$") or "./") .. "../examples/checkout.lua")
local ffi = require("ffi")
local oar = require("oar")
local layers = oar.layers

local ITERS, REPS = tonumber(arg[1]) or 200, tonumber(arg[2]) or 5
local PAT = (arg[3] and arg[3] ~= "") and arg[3] or nil

ffi.cdef[[typedef struct { long tv_sec; long tv_nsec; } bench_ts22; int clock_gettime(int, bench_ts22 *);]]
local function now()
  local t = ffi.new("bench_ts22")
  ffi.C.clock_gettime(1, t)
  return tonumber(t.tv_sec) + tonumber(t.tv_nsec) * 1e-9
end

-- the inputs, as torch_ops22.py makes them: element i of an input with seed
-- s is f(sin(0.37 i + s)) for a transform f
local fills = {
  sin = function(v) return v end,                                   -- in [-1, 1]
  prob = function(v) return 1 / (1 + math.exp(-2 * v)) end,          -- in (0.12, 0.88)
  logp = function(v) return -1.5 - v end,                            -- in [-2.5, -0.5]
  sign = function(v) return v >= 0 and 1 or -1 end,                  -- 1 or -1
  binary = function(v) return v >= 0 and 1 or 0 end,                 -- 0 or 1
}
local function tensor(shape, seed, fill)
  local t = oar.Tensor{shape = shape, dtype = "float32"}
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  local p, f = t:data(), fills[fill]
  for i = 0, n - 1 do p[i] = f(math.sin(0.37 * i + seed)) end
  return t
end

-- inputs: {name, shape, fill, needs_grad}; build(vars) -> the one-value loss
local function case(name, inputs, build)
  if PAT and not name:find(PAT) then return end
  local main, startup = oar.Program(), oar.Program()
  local loss
  oar.program_guard(main, startup, function()
    local vars, wrt = {}, {}
    for i, s in ipairs(inputs) do
      local v = layers.data{name = s[1], shape = s[2], dtype = "float32", append_batch_size = false}
      v.stop_gradient = not s[4]
      vars[s[1]] = v
      if s[4] then wrt[#wrt + 1] = v end
      s.seed = i
    end
    loss = build(vars)
    for _, p in ipairs(main:global_block():all_parameters()) do wrt[#wrt + 1] = p end
    local grads = oar.gradients({loss}, wrt)
    for i, v in ipairs(wrt) do assert(grads[i], name .. ": no gradient reaches " .. v.name) end
  end)
  local exe = oar.Executor(oar.CPUPlace())
  exe:run(startup)
  local feed = {}
  for _, s in ipairs(inputs) do feed[s[1]] = tensor(s[2], s.seed, s[3]) end
  local opts = {feed = feed, fetch_list = {loss}}
  for _ = 1, 3 do exe:run(main, opts) end
  if os.getenv("BENCH_PRINT_LOSS") then
    print(string.format("# %s loss %.6g", name, exe:run(main, opts)[1]:data()[0]))
  end
  local best = math.huge
  for _ = 1, REPS do
    local t0 = now()
    for _ = 1, ITERS do exe:run(main, opts) end
    best = math.min(best, (now() - t0) / ITERS)
  end
  print(string.format("RESULT oar ops22_%s us_per_call=%.2f", name, best * 1e6))
  io.stdout:flush()
end

local function mean(v) return layers.mean(v) end

for _, sh in ipairs{{128, 10}, {64, 1000}} do
  local tag = sh[1] .. "x" .. sh[2]
  local col = {sh[1] * sh[2], 1}  -- the [N, 1] losses get as many rows as the others' elements
  local ctag = col[1] .. "x1"
  case("huber_loss_" .. tag, {{"x", sh, "sin", true}, {"y", sh, "sin", false}},
    function(v) return mean(layers.huber_loss{input = v.x, label = v.y, delta = 1.0}) end)
  case("smooth_l1_loss_" .. tag, {{"x", sh, "sin", true}, {"y", sh, "sin", false}},
    function(v) return mean(layers.smooth_l1{x = v.x, y = v.y}) end)
  case("kldiv_loss_" .. tag, {{"x", sh, "logp", true}, {"t", sh, "prob", false}},
    function(v) return layers.kldiv_loss{x = v.x, target = v.t, reduction = "batchmean"} end)
  case("bce_loss_" .. tag, {{"x", sh, "prob", true}, {"y", sh, "binary", false}},
    function(v) return mean(layers.bce_loss{input = v.x, label = v.y}) end)
  case("log_loss_" .. ctag, {{"x", col, "prob", true}, {"y", col, "binary", false}},
    function(v) return mean(layers.log_loss{input = v.x, label = v.y}) end)
  case("margin_rank_loss_" .. ctag, {{"l", col, "sign", false}, {"a", col, "sin", true}, {"b", col, "sin", true}},
    function(v) return mean(layers.margin_rank_loss{label = v.l, left = v.a, right = v.b, margin = 0.1}) end)
end

for _, sh in ipairs{{128, 10}, {64, 1000}} do
  local tag = sh[1] .. "x" .. sh[2]
  case("l1_norm_" .. tag, {{"x", sh, "sin", true}}, function(v) return layers.l1_norm(v.x) end)
  case("squared_l2_norm_" .. tag, {{"x", sh, "sin", true}}, function(v) return layers.squared_l2_norm(v.x) end)
  case("norm_axis1_" .. tag, {{"x", sh, "sin", true}},
    function(v) return mean(layers.l2_normalize{x = v.x, axis = 1, epsilon = 1e-12}) end)
  case("cos_sim_" .. tag, {{"x", sh, "sin", true}, {"y", sh, "sin", true}},
    function(v) return mean(layers.cos_sim{X = v.x, Y = v.y}) end)
  case("dist_p2_" .. tag, {{"x", sh, "sin", true}, {"y", sh, "sin", true}},
    function(v) return layers.dist{x = v.x, y = v.y, p = 2} end)
end

case("bmm_32x64x64_32x64x64", {{"a", {32, 64, 64}, "sin", true}, {"b", {32, 64, 64}, "sin", true}},
  function(v) return mean(layers.bmm{x = v.a, y = v.b}) end)
case("bmm_16x128x256_16x256x128", {{"a", {16, 128, 256}, "sin", true}, {"b", {16, 256, 128}, "sin", true}},
  function(v) return mean(layers.bmm{x = v.a, y = v.b}) end)

-- a small video net's layer: 16 -> 32 channels, 3x3x3, padding 1, bias;
-- gradients of the input, the filter and the bias; the filter all 0.01 and
-- the bias 0, as on the PyTorch side (the losses agree)
case("conv3d_4x16x16x32x32_k3_32", {{"x", {4, 16, 16, 32, 32}, "sin", true}},
  function(v)
    return mean(layers.conv3d{input = v.x, num_filters = 32, filter_size = 3, padding = 1,
      param_attr = oar.ParamAttr{initializer = oar.initializer.Constant{value = 0.01}},
      bias_attr = oar.ParamAttr{initializer = oar.initializer.Constant{value = 0.0}}})
  end)
