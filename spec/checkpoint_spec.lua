-- Checkpoint and resume: save_persistables holds parameters, optimizer state
-- (Adam's moments and beta powers), the learning-rate schedule's step
-- counter and the random generator's state, so training resumed from a
-- checkpoint in a fresh scope continues bit for bit like training that never
-- stopped -- dropout masks included.
local ffi = require("ffi")
local oar = require("oar")
local layers = oar.layers

local F = require("spec.helpers.files")
local tmpdir, rmtree = F.tmpdir, F.rmtree

-- the bytes of every persistable of `prog` in `scope`, by name
local function state_bytes(prog, scope)
  local out = {}
  for _, v in ipairs(oar.io.get_program_persistable_vars(prog)) do
    local t = scope:find_var(v.name):get_tensor()
    local size = t:numel() * ffi.sizeof(oar.dtypes.ctype(t:dtype()))
    out[v.name] = ffi.string(t:data(), size)
  end
  return out
end

local function build()
  local main, startup = oar.Program(), oar.Program()
  local loss
  oar.program_guard(main, startup, function()
    local x = layers.data{ name = "x", shape = { 6 } }
    local y = layers.data{ name = "y", shape = { 1 }, dtype = "int64" }
    local h = layers.fc{ input = x, size = 16, act = "relu" }
    h = layers.dropout{ x = h, dropout_prob = 0.4 }
    local p = layers.fc{ input = h, size = 3, act = "softmax" }
    loss = layers.mean(layers.cross_entropy{ input = p, label = y })
    local lr = layers.exponential_decay{ learning_rate = 0.05, decay_steps = 2, decay_rate = 0.9 }
    oar.optimizer.Adam{ learning_rate = lr }:minimize(loss)
  end)
  return main, startup, loss
end

-- the batch of step i: a deterministic function of i
local function batch(i)
  local x, y = {}, {}
  for r = 1, 8 do
    x[r] = {}
    for c = 1, 6 do x[r][c] = math.sin(i * 7.1 + r * 1.3 + c * 0.7) end
    y[r] = { (i + r) % 3 }
  end
  return { x = oar.Tensor(x, "float32"), y = oar.Tensor(y, "int64") }
end

local function train(exe, main, loss, scope, from, to)
  local losses = {}
  for i = from, to do
    losses[#losses + 1] = exe:run(main, { feed = batch(i), fetch_list = { loss }, scope = scope })[1]:get(1)
  end
  return losses
end

local K, N = 5, 6

local function run_case(filename)
  local dir = tmpdir()
  local main, startup, loss = build()
  local exe = oar.Executor()

  -- uninterrupted: K steps, checkpoint, N more
  oar.seed(2024)
  local s1 = oar.Scope()
  exe:run(startup, { scope = s1 })
  train(exe, main, loss, s1, 1, K)
  oar.io.save_persistables(exe, dir, main, { filename = filename, scope = s1 })
  local at_checkpoint = state_bytes(main, s1)
  local straight = train(exe, main, loss, s1, K + 1, K + N)
  local final = state_bytes(main, s1)

  -- resumed: a fresh scope, the generator somewhere else entirely, the
  -- startup program run (drawing random numbers), then the checkpoint
  oar.seed(777)
  local s2 = oar.Scope()
  exe:run(startup, { scope = s2 })
  oar.io.load_persistables(exe, dir, main, { filename = filename, scope = s2 })
  assert.same(at_checkpoint, state_bytes(main, s2))
  local resumed = train(exe, main, loss, s2, K + 1, K + N)
  rmtree(dir)
  return straight, resumed, final, state_bytes(main, s2), at_checkpoint
end

describe("checkpoint and resume", function()
  it("continues bit for bit (one file per variable)", function()
    local straight, resumed, final, final2, at_ckpt = run_case(nil)
    assert.same(straight, resumed)          -- exact equality of every loss
    assert.same(final, final2)              -- and of every persistable's bytes
    -- the N steps changed things (the comparison is not vacuous)
    local changed = 0
    for name, bytes in pairs(final) do if at_ckpt[name] ~= bytes then changed = changed + 1 end end
    assert.is_true(changed >= 8)
  end)

  it("continues bit for bit (one combined file)", function()
    local straight, resumed, final, final2 = run_case("checkpoint")
    assert.same(straight, resumed)
    assert.same(final, final2)
  end)

  it("includes the optimizer state and the learning-rate counter", function()
    local main = build()
    local names = {}
    for _, v in ipairs(oar.io.get_program_persistable_vars(main)) do names[#names + 1] = v.name end
    local joined = table.concat(names, " ")
    assert.matches("moment1", joined)
    assert.matches("moment2", joined)
    assert.matches("beta1_pow", joined)
    assert.matches("beta2_pow", joined)
    assert.matches("@LR_DECAY_COUNTER@", joined)
  end)

  it("without the generator state the resumed run differs (dropout draws other masks)", function()
    local dir = tmpdir()
    local main, startup, loss = build()
    local exe = oar.Executor()
    oar.seed(2024)
    local s1 = oar.Scope()
    exe:run(startup, { scope = s1 })
    train(exe, main, loss, s1, 1, K)
    -- persistables only, no "@RNG_STATE@"
    oar.io.save_vars(exe, dir, main, oar.io.get_program_persistable_vars(main), { scope = s1 })
    local straight = train(exe, main, loss, s1, K + 1, K + N)
    oar.seed(777)
    local s2 = oar.Scope()
    exe:run(startup, { scope = s2 })
    oar.io.load_persistables(exe, dir, main, { scope = s2 })
    local resumed = train(exe, main, loss, s2, K + 1, K + N)
    rmtree(dir)
    assert.are_not.same(straight, resumed)
  end)
end)
