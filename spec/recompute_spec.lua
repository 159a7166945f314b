-- RecomputeOptimizer (lua/oar/recompute.lua) on a deep MLP: the same
-- parameters as without recompute after a few SGD steps, the recomputed
-- copies in the backward pass, and a lower peak of tensor memory (the
-- executor's memory plan frees the forward activations between
-- checkpoints at their last forward use). The figure is printed.
local oar = require("oar")
local layers = oar.layers

local DEPTH, WIDTH, BATCH = 16, 64, 256

local function feed()
  local x = {}
  for i = 1, BATCH do
    local row = {}
    for j = 1, WIDTH do row[j] = math.sin(i * 0.37 + j * 0.11) end
    x[i] = row
  end
  return { x = x }
end

local function build(checkpoint_every)
  local main, startup = oar.Program(), oar.Program()
  local opt
  oar.program_guard(main, startup, function()
    local h = layers.data{ name = "x", shape = { WIDTH } }
    local cps = {}
    for i = 1, DEPTH do
      h = layers.fc{ input = h, size = WIDTH, act = "relu", name = "fc" .. i,
        param_attr = oar.ParamAttr{ name = "w" .. i, initializer = oar.initializer.Uniform{ low = -0.12, high = 0.12, seed = i } },
        bias_attr = oar.ParamAttr{ name = "b" .. i, initializer = oar.initializer.Constant(0.01) } }
      if checkpoint_every and i % checkpoint_every == 0 then cps[#cps + 1] = h end
    end
    local loss = layers.mean(layers.square(h))
    if checkpoint_every then
      opt = oar.optimizer.RecomputeOptimizer(oar.optimizer.SGD{ learning_rate = 0.05 })
      opt:_set_checkpoints(cps)
      opt:minimize(loss)
    else
      oar.optimizer.SGD{ learning_rate = 0.05 }:minimize(loss)
    end
  end)
  return main, startup, opt
end

local function train(checkpoint_every, steps)
  local main, startup, opt = build(checkpoint_every)
  local scope, exe = oar.Scope(), oar.Executor(oar.CPUPlace())
  exe:run(startup, { scope = scope })
  local f = feed()
  exe:run(main, { feed = f, scope = scope })   -- prepare and warm the pool outside the measured run
  oar.profiler.start()
  exe:run(main, { feed = f, scope = scope })
  oar.profiler.stop()
  local peak = oar.profiler.peak_bytes()
  for _ = 3, steps do exe:run(main, { feed = f, scope = scope }) end
  local params = {}
  for i = 1, DEPTH do params[i] = scope:var("w" .. i):get_tensor():totable() end
  return params, peak, main, opt
end

describe("RecomputeOptimizer", function()
  it("trains to the same parameters with less peak tensor memory", function()
    local plain, peak_plain = train(nil, 4)
    local rec, peak_rec, main, opt = train(4, 4)
    assert.is_true(opt.recomputed_ops > 0)
    local copies = 0
    for _, op in ipairs(main:global_block():ops()) do
      for _, n in ipairs(op:output_arg_names()) do if n:find("@RECOMPUTE", 1, true) then copies = copies + 1 break end end
    end
    assert.are.equal(opt.recomputed_ops, copies)
    for i = 1, DEPTH do
      for r = 1, #plain[i] do
        for c = 1, #plain[i][r] do
          assert(plain[i][r][c] == rec[i][r][c],   -- the same ops on the same values: the same bits
            string.format("w%d[%d][%d]: %.9g vs %.9g", i, r, c, plain[i][r][c], rec[i][r][c]))
        end
      end
    end
    io.stderr:write(string.format("\n[recompute] %d fc layers of %d, batch %d, checkpoints every 4 layers: "
      .. "peak tensor memory %.1f KiB without recompute, %.1f KiB with (%.0f%% saved)\n", DEPTH, WIDTH, BATCH,
      peak_plain / 1024, peak_rec / 1024, 100 * (1 - peak_rec / peak_plain)))
    assert.is_true(peak_rec < peak_plain, "recompute did not lower the peak")
  end)

  it("refuses a checkpoint the forward pass does not compute", function()
    local main, startup = oar.Program(), oar.Program()
    oar.program_guard(main, startup, function()
      local x = layers.data{ name = "x", shape = { 4 } }
      local h = layers.fc{ input = x, size = 4 }
      local loss = layers.mean(h)
      local opt = oar.optimizer.RecomputeOptimizer(oar.optimizer.SGD{ learning_rate = 0.1 })
      opt:_set_checkpoints({ x, h })
      local ok, err = pcall(opt.minimize, opt, loss)
      assert.is_false(ok)
      assert.matches("checkpoint 'x'", tostring(err), 1, true)
    end)
  end)
end)
