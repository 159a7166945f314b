-- alpha_beta.lua: the α-β model of ring allreduce, applied to data-parallel
-- training of the book models (docs/distributed.md).
--   luajit bench/alpha_beta.lua ALPHA_US BUSBW_GBPS MLP_MS LENET_MS
-- ALPHA_US: per-message latency of one ring step (half the 2-worker small
-- allreduce time: a ring of n takes 2(n-1) steps); BUSBW_GBPS: bus bandwidth
-- of large messages; *_MS: one worker's compute time per step (batch 64).
-- Ring allreduce of S bytes over n workers: T = 2(n-1)·α + 2(n-1)/n · S/β.
-- Without overlap a step takes compute + T; efficiency = compute / (compute + T).
-- With the allreduce fully overlapped by the backward pass (bucketed,
-- launched as gradients become ready): max(compute, T) at best.
local alpha = (tonumber(arg[1]) or 10) * 1e-6
local beta = (tonumber(arg[2]) or 5) * 1e9
local models = {
  { "MLP 784-512-256-10", 535818, tonumber(arg[3]) or 3.0 },
  { "LeNet (conv)", 431080, tonumber(arg[4]) or 30.0 },
  -- larger references (compute scaled from LeNet by FLOPs is not attempted:
  -- their step times are typical published single-GPU figures, batch 64)
  { "ResNet-50 (GPU, 25.6M)", 25557032, 200.0 },
  { "VGG-16 (GPU, 138M)", 138357544, 300.0 },
}
print(string.format("alpha %.1f us, bus bandwidth %.2f GB/s", alpha * 1e6, beta / 1e9))
print(string.format("%-24s %6s %10s %10s %8s %8s", "model", "n", "allred_ms", "step_ms", "eff", "eff_ovl"))
for _, m in ipairs(models) do
  local bytes, comp = m[2] * 4, m[3] / 1e3
  for _, n in ipairs({ 2, 8, 32, 128, 512, 1024 }) do
    local t = 2 * (n - 1) * alpha + 2 * (n - 1) / n * bytes / beta
    local step = comp + t
    print(string.format("%-24s %6d %10.3f %10.3f %7.1f%% %7.1f%%", m[1], n, t * 1e3, step * 1e3,
      100 * comp / step, 100 * comp / math.max(comp, t)))
  end
end
