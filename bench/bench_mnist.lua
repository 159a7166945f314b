#!/usr/bin/env luajit
-- bench_mnist.lua: oar side of the MNIST-style training benchmark (see
-- bench/run_mnist.sh and bench/torch_mnist.py, which measures the same on
-- PyTorch).
--
-- Trains the nets of examples/recognize_digits.lua on Fashion-MNIST for a
-- fixed number of batches and prints the training throughput:
--   mlp:  784-512-256-10 (relu, relu, softmax + cross_entropy), batch 128
--   conv: LeNet: conv 5x5x20 relu, max-pool 2/2, conv 5x5x50 relu,
--         max-pool 2/2, fc 500 relu, fc 10 softmax + cross_entropy, batch 64
-- Adam lr 0.001. One step is one Executor:run of the main program (forward,
-- backward, Adam) fetching the mean loss. The batches are oar Tensors made
-- before timing (a ring of 64, reused), as PyTorch's side slices tensors
-- already in memory.
--
--   luajit bench/bench_mnist.lua [--batches 300] [--warmup 30] [--models mlp,conv]
-- Output lines: "RESULT oar <model> <samples/s>".

-- A source checkout runs without installing (lua/ and build/ next to bench/).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)[^/]*$") or "./") .. "../examples/checkout.lua")

local ffi = require("ffi")
local oar = require("oar")
local layers = oar.layers
local fashion_mnist = require("oar.dataset.fashion_mnist")

local BATCH = { mlp = 128, conv = 64 }
local RING = 64

local function mlp(img)
  local h1 = layers.fc{ input = img, size = 512, act = "relu" }
  local h2 = layers.fc{ input = h1, size = 256, act = "relu" }
  return layers.fc{ input = h2, size = 10, act = "softmax" }
end

local function lenet(img)
  local c1 = layers.conv2d{ input = img, num_filters = 20, filter_size = 5, act = "relu" }
  local p1 = layers.pool2d{ input = c1, pool_size = 2, pool_stride = 2, pool_type = "max" }
  local c2 = layers.conv2d{ input = p1, num_filters = 50, filter_size = 5, act = "relu" }
  local p2 = layers.pool2d{ input = c2, pool_size = 2, pool_stride = 2, pool_type = "max" }
  local h = layers.fc{ input = p2, size = 500, act = "relu" }
  return layers.fc{ input = h, size = 10, act = "softmax" }
end

local NETS = { mlp = { mlp, { 784 } }, conv = { lenet, { 1, 28, 28 } } }

ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } oar_bench_timespec;
int clock_gettime(int clk_id, oar_bench_timespec *tp);
]]
local ts = ffi.new("oar_bench_timespec")
local function wall()
  ffi.C.clock_gettime(1, ts)  -- CLOCK_MONOTONIC
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

local function parse_args(argv)
  local o = { batches = 300, warmup = 30, models = "mlp,conv" }
  local i = 1
  while i <= #argv do
    local key = argv[i]:match("^%-%-(%w+)$")
    local val = argv[i + 1]
    if not key or o[key] == nil or val == nil then
      io.stderr:write("usage: luajit bench/bench_mnist.lua [--batches N] [--warmup N] [--models mlp,conv]\n")
      os.exit(2)
    end
    if key == "models" then o.models = val
    else
      local n = tonumber(val)
      if not n or n < 0 or n % 1 ~= 0 then
        io.stderr:write("bench_mnist: --" .. key .. " expects a non-negative integer\n")
        os.exit(2)
      end
      o[key] = n
    end
    i = i + 2
  end
  return o
end

local function throughput(name, opts)
  local build, image_shape = NETS[name][1], NETS[name][2]
  local bs = BATCH[name]
  local main, startup = oar.Program(), oar.Program()
  main.random_seed, startup.random_seed = 1, 1
  local avg_loss
  oar.program_guard(main, startup, function()
    local img = layers.data{ name = "img", shape = image_shape, dtype = "float32" }
    local label = layers.data{ name = "label", shape = { 1 }, dtype = "int64" }
    local prediction = build(img)
    avg_loss = layers.mean(layers.cross_entropy{ input = prediction, label = label })
    oar.optimizer.Adam{ learning_rate = 0.001 }:minimize(avg_loss)
  end)
  local exe = oar.Executor(oar.CPUPlace())
  local scope = oar.Scope()
  exe:run(startup, { scope = scope })
  local ring = {}
  for x, y in fashion_mnist.batches("train", bs, { shuffle = false, drop_last = true,
                                                   image_shape = image_shape }) do
    ring[#ring + 1] = { img = x, label = y }
    if #ring == RING then break end
  end
  local function step(i)
    return exe:run(main, { feed = ring[i % #ring + 1], fetch_list = { avg_loss }, scope = scope })
  end
  for i = 1, opts.warmup do step(i) end
  local t0 = wall()
  local out
  for i = 1, opts.batches do out = step(opts.warmup + i) end
  local dt = wall() - t0
  local loss = out and out[1]:data()[0] or 0 / 0
  if loss ~= loss then error("bench_mnist: " .. name .. ": the loss is NaN") end
  return opts.batches * bs / dt, loss
end

local opts = parse_args(arg or {})
print(string.format("oar (LuaJIT %s), OMP_NUM_THREADS=%s, OPENBLAS_NUM_THREADS=%s",
  jit and jit.version or "?", os.getenv("OMP_NUM_THREADS") or "unset",
  os.getenv("OPENBLAS_NUM_THREADS") or "unset"))
for name in opts.models:gmatch("[^,]+") do
  if not NETS[name] then
    io.stderr:write("bench_mnist: unknown model '" .. name .. "' (mlp or conv)\n")
    os.exit(2)
  end
  local sps, loss = throughput(name, opts)
  print(string.format("oar   %-4s batch %3d: %8.0f samples/s (last loss %.4f)", name, BATCH[name], sps, loss))
  print(string.format("RESULT oar %s %.1f", name, sps))
  io.stdout:flush()
end
