-- bench_seq23.lua: oar side of issue 23's speed check (bench/run_seq23.sh):
-- CTC loss + gradient (warpctc) and the linear-chain CRF's forward +
-- backward (linear_chain_crf), each over a LoD batch and over the padded
-- form with lengths, timed per call. Each case is one program (data -> op ->
-- reduce_sum -> oar.gradients with respect to the scores and, for the CRF,
-- its transition parameter), built once and run by the prepared executor,
-- the same tensors fed every step, the summed loss fetched. PyTorch's side:
-- bench/torch_seq23.py. One line per case:
--   RESULT oar seq23_<case> us_per_call=<x>
--   luajit bench/bench_seq23.lua [iters] [reps] [case-pattern] [crf-tags]
-- Shapes: CTC T = 100 steps (each sequence 70..100), batch 16, 30 classes
-- (blank 0), label lengths 20..30; CRF batch 16, sequences of 20..60 words,
-- crf-tags tags (default 59; examples/book/label_semantic_roles.lua's
-- synthetic data has 7). iters calls per window, the best of reps windows.
-- BENCH_PRINT_LOSS=1 prints each case's loss once (the PyTorch side's agree).
-- A source checkout runs without installing (lua/ and build/ next to bench/).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)[^/]*$") or "./") .. "../examples/checkout.lua")
local ffi = require("ffi")
local oar = require("oar")
local layers = oar.layers

local ITERS, REPS = tonumber(arg[1]) or 50, tonumber(arg[2]) or 5
local PAT = (arg[3] and arg[3] ~= "") and arg[3] or nil
local TAGS = tonumber(arg[4]) or 59

ffi.cdef[[typedef struct { long tv_sec; long tv_nsec; } bench_ts23; int clock_gettime(int, bench_ts23 *);]]
local function now()
  local t = ffi.new("bench_ts23")
  ffi.C.clock_gettime(1, t)
  return tonumber(t.tv_sec) + tonumber(t.tv_nsec) * 1e-9
end

-- the shapes and data, as torch_seq23.py makes them (b counts from 0)
local B = 16
local CTC_T, CTC_C = 100, 30
local function ctc_steps(b) return 100 - 3 * ((b * 5) % 11) end          -- 70..100
local function ctc_labels(b) return 20 + (b * 7) % 11 end                 -- 20..30
local function ctc_label(b, j) return 1 + (b * 13 + j * 7) % (CTC_C - 1) end
local CRF_T = 60
local function crf_len(b) return 20 + (b * 11) % 41 end                  -- 20..60
local function crf_tag(b, j) return (b * 17 + j * 5) % TAGS end
-- the transition weights (start, end, tag to tag) all 0.05, as torchcrf's
-- on the PyTorch side: both sides' losses agree (BENCH_PRINT_LOSS=1)
local CRFW = oar.ParamAttr{name = "crfw", initializer = oar.initializer.Constant{value = 0.05}}

local function fill_float(t, n, seed)
  local p = t:data()
  for i = 0, n - 1 do p[i] = math.sin(0.37 * i + seed) end
  return t
end

local function time_case(name, build, feed)
  if PAT and not name:find(PAT) then return end
  local main, startup = oar.Program(), oar.Program()
  local loss
  oar.program_guard(main, startup, function()
    local wrt
    loss, wrt = build()
    for _, p in ipairs(main:global_block():all_parameters()) do wrt[#wrt + 1] = p end
    local grads = oar.gradients({loss}, wrt)
    for i, v in ipairs(wrt) do assert(grads[i], name .. ": no gradient reaches " .. v.name) end
  end)
  local exe = oar.Executor(oar.CPUPlace())
  exe:run(startup)
  local opts = {feed = feed(), fetch_list = {loss}}
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
  print(string.format("RESULT oar seq23_%s us_per_call=%.2f", name, best * 1e6))
  io.stdout:flush()
end

-- warpctc over one LoD batch: scores [sum T_b, C], labels int32 [sum L_b, 1]
time_case("warpctc_lod_T100_B16_C30", function()
  local x = layers.data{name = "x", shape = {CTC_C}, dtype = "float32", lod_level = 1}
  x.stop_gradient = false
  local y = layers.data{name = "y", shape = {1}, dtype = "int32", lod_level = 1}
  return layers.reduce_sum(layers.warpctc{input = x, label = y, blank = 0}), {x}
end, function()
  local xl, yl, nx, ny = {0}, {0}, 0, 0
  for b = 0, B - 1 do
    nx, ny = nx + ctc_steps(b), ny + ctc_labels(b)
    xl[#xl + 1], yl[#yl + 1] = nx, ny
  end
  -- sequence b's step t holds the padded form's [t, b, :] (the same scores)
  local x = oar.Tensor{shape = {nx, CTC_C}, dtype = "float32"}
  local xp = x:data()
  for b = 0, B - 1 do
    for t = 0, ctc_steps(b) - 1 do
      for c = 0, CTC_C - 1 do xp[(xl[b + 1] + t) * CTC_C + c] = math.sin(0.37 * ((t * B + b) * CTC_C + c) + 1) end
    end
  end
  x:set_lod({xl})
  local y = oar.Tensor{shape = {ny, 1}, dtype = "int32"}
  local p, k = y:data(), 0
  for b = 0, B - 1 do
    for j = 0, ctc_labels(b) - 1 do p[k] = ctc_label(b, j); k = k + 1 end
  end
  y:set_lod({yl})
  return {x = x, y = y}
end)

-- warpctc, padded: scores [Tmax, B, C], labels int32 [B, Lmax], lengths int64 [B]
time_case("warpctc_padded_T100_B16_C30", function()
  local x = layers.data{name = "x", shape = {CTC_T, B, CTC_C}, dtype = "float32", append_batch_size = false}
  x.stop_gradient = false
  local y = layers.data{name = "y", shape = {B, 30}, dtype = "int32", append_batch_size = false}
  local xlen = layers.data{name = "xlen", shape = {B}, dtype = "int64", append_batch_size = false}
  local ylen = layers.data{name = "ylen", shape = {B}, dtype = "int64", append_batch_size = false}
  return layers.reduce_sum(layers.warpctc{input = x, label = y, blank = 0, input_length = xlen,
                                          label_length = ylen}), {x}
end, function()
  local x = fill_float(oar.Tensor{shape = {CTC_T, B, CTC_C}, dtype = "float32"}, CTC_T * B * CTC_C, 1)
  local y = oar.Tensor{shape = {B, 30}, dtype = "int32"}
  local xlen = oar.Tensor{shape = {B}, dtype = "int64"}
  local ylen = oar.Tensor{shape = {B}, dtype = "int64"}
  local p = y:data()
  for b = 0, B - 1 do
    xlen:data()[b], ylen:data()[b] = ctc_steps(b), ctc_labels(b)
    for j = 0, 29 do p[b * 30 + j] = j < ctc_labels(b) and ctc_label(b, j) or 0 end
  end
  return {x = x, y = y, xlen = xlen, ylen = ylen}
end)

-- linear_chain_crf over one LoD batch: emissions [sum L_b, D], tags int64 [sum L_b, 1]
time_case("crf_lod_B16_L20-60_D" .. TAGS, function()
  local x = layers.data{name = "x", shape = {TAGS}, dtype = "float32", lod_level = 1}
  x.stop_gradient = false
  local y = layers.data{name = "y", shape = {1}, dtype = "int64", lod_level = 1}
  return layers.reduce_sum(layers.linear_chain_crf{input = x, label = y, param_attr = CRFW}), {x}
end, function()
  local lod, n = {0}, 0
  for b = 0, B - 1 do n = n + crf_len(b); lod[#lod + 1] = n end
  -- sequence b's word t holds the padded form's [b, t, :] (the same emissions)
  local x = oar.Tensor{shape = {n, TAGS}, dtype = "float32"}
  local xp = x:data()
  for b = 0, B - 1 do
    for t = 0, crf_len(b) - 1 do
      for d = 0, TAGS - 1 do xp[(lod[b + 1] + t) * TAGS + d] = math.sin(0.37 * ((b * CRF_T + t) * TAGS + d) + 1) end
    end
  end
  x:set_lod({lod})
  local y = oar.Tensor{shape = {n, 1}, dtype = "int64"}
  local p, k = y:data(), 0
  for b = 0, B - 1 do
    for j = 0, crf_len(b) - 1 do p[k] = crf_tag(b, j); k = k + 1 end
  end
  y:set_lod({lod})
  return {x = x, y = y}
end)

-- linear_chain_crf, padded: emissions [B, Tmax, D], tags int64 [B, Tmax], lengths int64 [B]
time_case("crf_padded_B16_L20-60_D" .. TAGS, function()
  local x = layers.data{name = "x", shape = {B, CRF_T, TAGS}, dtype = "float32", append_batch_size = false}
  x.stop_gradient = false
  local y = layers.data{name = "y", shape = {B, CRF_T}, dtype = "int64", append_batch_size = false}
  local len = layers.data{name = "len", shape = {B}, dtype = "int64", append_batch_size = false}
  return layers.reduce_sum(layers.linear_chain_crf{input = x, label = y, length = len, param_attr = CRFW}), {x}
end, function()
  local x = fill_float(oar.Tensor{shape = {B, CRF_T, TAGS}, dtype = "float32"}, B * CRF_T * TAGS, 1)
  local y = oar.Tensor{shape = {B, CRF_T}, dtype = "int64"}
  local len = oar.Tensor{shape = {B}, dtype = "int64"}
  local p = y:data()
  for b = 0, B - 1 do
    len:data()[b] = crf_len(b)
    for j = 0, CRF_T - 1 do p[b * CRF_T + j] = j < crf_len(b) and crf_tag(b, j) or 0 end
  end
  return {x = x, y = y, len = len}
end)
