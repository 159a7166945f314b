-- The scopes a run creates (step scopes of StaticRNN, While, IfElse, kept
-- for their grad ops) live until the run ends: counted exactly with
-- oar_debug_live_scopes over many training steps, after failing runs, and
-- while a persistable STEP_SCOPES variable holds them.
local oar = require("oar")
local C = require("oar.lib").C
local layers = oar.layers

local function live()
  collectgarbage()
  collectgarbage()
  return C.oar_debug_live_scopes()
end

local T, N, D, H = 5, 2, 3, 4

-- a StaticRNN trained with SGD; returns main, startup, loss
local function rnn_program()
  local main, startup = oar.Program(), oar.Program()
  local loss, steps
  oar.program_guard(main, startup, function()
    local x = layers.data{ name = "x", shape = { T, N, D }, dtype = "float32", append_batch_size = false }
    local rnn = layers.StaticRNN()
    rnn:step(function()
      local x_t = rnn:step_input(x)
      local h = rnn:memory{ shape = { -1, H }, batch_ref = x_t }
      local nh = layers.fc{ input = { x_t, h }, size = H, act = "tanh" }
      rnn:update_memory(h, nh)
      rnn:output(nh)
    end)
    loss = layers.mean(rnn())
    oar.optimizer.SGD{ learning_rate = 0.1 }:minimize(loss)
    for _, op in ipairs(main:global_block():ops()) do
      if op.type == "recurrent" then steps = main:global_block():var(op:output("step_scopes")[1]) end
    end
  end)
  return main, startup, loss, steps
end

local function feed_x()
  local t = oar.Tensor{ shape = { T, N, D }, dtype = "float32" }
  local p = t:data()
  for i = 0, T * N * D - 1 do p[i] = math.sin(i) end
  return t
end

describe("scopes of a run", function()
  it("do not accumulate over 1000 StaticRNN training steps", function()
    local main, startup, loss = rnn_program()
    local exe, scope = oar.Executor(), oar.Scope()
    exe:run(startup, { scope = scope })
    local x = feed_x()
    exe:run(main, { feed = { x = x }, fetch_list = { loss }, scope = scope })
    local base = live()
    local first, last
    for k = 1, 1000 do
      local l = exe:run(main, { feed = { x = x }, fetch_list = { loss }, scope = scope })[1]
      if k == 1 then first = l:get(1) end
      last = l:get(1)
      if k % 250 == 0 then assert.equal(base, live(), "live scopes after step " .. k) end
    end
    assert.is_true(last < first, "training lowers the loss")
    assert.equal(base, live())
  end)

  it("are kept by a STEP_SCOPES variable while it lives, and freed with it", function()
    local main, startup, loss, steps = rnn_program()
    steps.persistable = true   -- keep the step scopes past the run, in the caller's scope
    local exe = oar.Executor()
    local base = live()
    local scope = oar.Scope()
    exe:run(startup, { scope = scope })
    local x = feed_x()
    exe:run(main, { feed = { x = x }, fetch_list = { loss }, scope = scope })
    -- the scope, the T step scopes, and the local scopes the executor keeps
    -- bound to it (one per prepared program: startup and main)
    assert.equal(base + 3 + T, live())
    exe:run(main, { feed = { x = x }, fetch_list = { loss }, scope = scope })
    assert.equal(base + 3 + T, live())   -- the next run replaces them
    -- a test-mode clone keeps none (and drops what the training run kept)
    local test_prog = main:clone{ for_test = true }
    exe:run(test_prog, { feed = { x = x }, scope = scope })
    assert.equal(base + 4, live())
    -- the executor's bindings hold the scope until it is closed
    scope = nil
    collectgarbage(); collectgarbage()
    assert.equal(base + 4, live())
    exe:close()
    assert.equal(base, live())
  end)

  it("are freed after While, IfElse and DynamicRNN training steps", function()
    local main, startup = oar.Program(), oar.Program()
    local loss
    oar.program_guard(main, startup, function()
      local x = layers.data{ name = "x", shape = { 3 }, dtype = "float32", lod_level = 1 }
      local c = layers.data{ name = "c", shape = { 1 }, dtype = "bool" }
      local drnn = layers.DynamicRNN()
      drnn:block(function()
        local w = drnn:step_input(x)
        local m = drnn:memory{ shape = { 3 }, value = 0 }
        local h = layers.fc{ input = { w, m }, size = 3, act = "tanh" }
        drnn:update_memory(m, h)
        drnn:output(h)
      end)
      local pooled = layers.fc{ input = drnn(), size = 3 }
      local ie = layers.IfElse(c)
      ie:true_block(function() ie:output(layers.tanh(ie:input(pooled))) end)
      ie:false_block(function() ie:output(ie:input(pooled) * 2) end)
      local o = ie()
      local i = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 0 }
      local n = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 4 }
      local cond = layers.less_than{ x = i, y = n }
      layers.While(cond):block(function()
        layers.assign(o * 0.5 + o, o)
        layers.increment{ x = i }
        layers.less_than{ x = i, y = n, cond = cond }
      end)
      loss = layers.mean(o)
      oar.optimizer.SGD{ learning_rate = 0.01 }:minimize(loss)
    end)
    local exe, scope = oar.Executor(), oar.Scope()
    exe:run(startup, { scope = scope })
    local rows = oar.Tensor{ shape = { 6, 3 }, dtype = "float32" }
    for r = 1, 6 do for k = 1, 3 do rows:set((r * k) % 5 / 5, r, k) end end
    rows:set_lod({ { 0, 2, 3, 6 } })
    local feeds = { x = rows, c = oar.Tensor({ { true }, { false }, { true } }, "bool") }
    exe:run(main, { feed = feeds, fetch_list = { loss }, scope = scope })
    local base = live()
    for _ = 1, 100 do exe:run(main, { feed = feeds, fetch_list = { loss }, scope = scope }) end
    assert.equal(base, live())
  end)

  it("are freed when a run fails inside a loop", function()
    local main = oar.Program()
    oar.program_guard(main, oar.Program(), function()
      local x = layers.data{ name = "x", shape = { 3 }, dtype = "float32" }
      local arr = layers.array_write{ x = x, i = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 0 } }
      local j = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 0 }
      local n = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 4 }
      local cj = layers.less_than{ x = j, y = n }
      layers.While(cj):block(function()
        layers.array_read{ array = arr, i = j }   -- item 2 was never written
        layers.increment{ x = j, value = 2 }
        layers.less_than{ x = j, y = n, cond = cj }
      end)
    end)
    local exe, scope = oar.Executor(), oar.Scope()
    local feeds = { x = oar.Tensor({ { 1, 2, 3 } }, "float32") }
    pcall(exe.run, exe, main, { feed = feeds, scope = scope })
    local base = live()
    for _ = 1, 50 do
      local ok, err = pcall(exe.run, exe, main, { feed = feeds, scope = scope })
      assert.is_false(ok)
      assert.is_truthy(tostring(err):find("step 1", 1, true), tostring(err))
      assert.is_truthy(tostring(err):find("never written", 1, true), tostring(err))
    end
    assert.equal(base, live())
  end)
end)
