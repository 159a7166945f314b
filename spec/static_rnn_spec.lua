-- StaticRNN (the recurrent op): the RNN of Fluid's block design, forward values
-- against plain-Lua time loops, gradients of inputs, initial states and
-- parameters against finite differences, one-step sequences, two memories,
-- serialization and misuse.
local oar = require("oar")
local CF = require("spec.helpers.cf_check")
local layers = oar.layers

local expect_error = require("spec.helpers.expect_error")

local function sigmoid(v) return 1 / (1 + math.exp(-v)) end

-- [rows][cols] x [cols][k]
local function matmul(a, w)
  local out = {}
  for i, row in ipairs(a) do
    out[i] = {}
    for j = 1, #w[1] do
      local s = 0
      for k = 1, #row do s = s + row[k] * w[k][j] end
      out[i][j] = s
    end
  end
  return out
end

local function zip(a, b, f)
  local out = {}
  for i, row in ipairs(a) do
    out[i] = {}
    for j, v in ipairs(row) do out[i][j] = f(v, type(b[1]) == "table" and b[i][j] or b[j]) end
  end
  return out
end

local flat = require("spec.helpers.index").flatten

local function rnd(seed, ...)
  local dims = { ... }
  local state = seed
  local function nextv()
    state = (state * 1103515245 + 12345) % 2147483648
    return state / 2147483648 - 0.5
  end
  local function mk(d)
    local t = {}
    for i = 1, dims[d] do t[i] = d == #dims and nextv() or mk(d + 1) end
    return t
  end
  return mk(1)
end

local function param(r, name) return r.scope:find_var(name):get_tensor():totable() end

describe("StaticRNN", function()
  it("computes the RNN of Fluid's block design (W = 0.314, U = 0.375, sigmoid)", function()
    local r = CF.build(function()
      local x = layers.data{ name = "x", shape = { 3, 1, 1 }, dtype = "float64", append_batch_size = false }
      local m = layers.fill_constant{ shape = { 1, 1 }, dtype = "float64", value = 0 }
      local rnn = layers.StaticRNN()
      rnn:step(function()
        local x_t = rnn:step_input(x)
        local h = rnn:memory{ init = m }
        local a = layers.fc{ input = x_t, size = 1, bias_attr = false,
                             param_attr = oar.ParamAttr{ name = "W", initializer = oar.initializer.Constant{ value = 0.314 } } }
        local b = layers.fc{ input = h, size = 1, bias_attr = false,
                             param_attr = oar.ParamAttr{ name = "U", initializer = oar.initializer.Constant{ value = 0.375 } } }
        local act = layers.sigmoid(a + b)
        rnn:update_memory(h, act)
        rnn:output(act, b)
      end)
      return nil, {}, { rnn() }
    end, { no_backward = true })
    local out = CF.run(r, { x = { { { 10 } }, { { 20 } }, { { 30 } } } }, r.extra)
    -- the parameters are float32 constants widened to float64
    local ffi = require("ffi")
    local W, U = tonumber(ffi.new("float", 0.314)), tonumber(ffi.new("float", 0.375))
    local h, acts, bs = 0, {}, {}
    for t, xv in ipairs({ 10, 20, 30 }) do
      local a, b = W * xv, U * h
      h = sigmoid(a + b)
      acts[t], bs[t] = h, b
    end
    assert.same({ 3, 1, 1 }, out[1]:shape())
    CF.assert_near(CF.flat(out[1]), acts, 1e-12, "act")
    CF.assert_near(CF.flat(out[2]), bs, 1e-12, "b")
  end)

  local T, N, D, H = 4, 3, 2, 3

  local function build_general(opts)
    opts = opts or {}
    return CF.build(function()
      local x = layers.data{ name = "x", shape = { opts.T or T, N, D }, dtype = "float64", append_batch_size = false }
      local h0 = layers.data{ name = "h0", shape = { N, H }, dtype = "float64", append_batch_size = false }
      x.stop_gradient, h0.stop_gradient = false, false
      local rnn = layers.StaticRNN()
      rnn:step(function()
        local x_t = rnn:step_input(x)
        local h = rnn:memory{ init = h0 }
        local c = rnn:memory{ shape = { -1, H }, batch_ref = x_t, value = 0.5 }
        local a = layers.fc{ input = x_t, size = H, param_attr = oar.ParamAttr{ name = "wx" },
                             bias_attr = oar.ParamAttr{ name = "bx" } }
        local b = layers.fc{ input = h, size = H, bias_attr = false, param_attr = oar.ParamAttr{ name = "wh" } }
        local act = layers.tanh(a + b)
        rnn:update_memory(h, act)
        rnn:update_memory(c, c * act)
        rnn:output(act, c)
      end)
      local o1, o2 = rnn()
      local gb = oar.default_main_program():global_block()
      return layers.mean(o1 * o1) + layers.mean(o2), { x, h0, gb:var("wx"), gb:var("bx"), gb:var("wh") }, { o1, o2 }
    end)
  end

  local function reference(r, x, h0)
    local wx, bx, wh = param(r, "wx"), param(r, "bx"), param(r, "wh")
    local h, c = h0, {}
    for i = 1, N do c[i] = { 0.5, 0.5, 0.5 } end
    local o1, o2 = {}, {}
    for t = 1, #x do
      local a = zip(matmul(x[t], wx), bx, function(p, q) return p + q end)
      local act = zip(a, matmul(h, wh), function(p, q) return math.tanh(p + q) end)
      o1[t], o2[t] = act, c   -- the output c is the memory's value at the step, before the update
      c = zip(c, act, function(p, q) return p * q end)
      h = act
    end
    return flat(o1), flat(o2)
  end

  it("runs a step per time step with memories from init and from batch_ref", function()
    local r = build_general()
    local x, h0 = rnd(1, T, N, D), rnd(2, N, H)
    local out = CF.run(r, { x = x, h0 = h0 }, r.extra)
    local w1, w2 = reference(r, x, h0)
    assert.same({ T, N, H }, out[1]:shape())
    CF.assert_near(CF.flat(out[1]), w1, 1e-12, "o1")
    CF.assert_near(CF.flat(out[2]), w2, 1e-12, "o2")
  end)

  it("has gradients for the sequence, the initial state and the parameters", function()
    local r = build_general()
    CF.check_grads(r, { x = rnd(3, T, N, D), h0 = rnd(4, N, H) })
  end)

  it("runs its steps from the last with the recurrent op's reverse attr", function()
    local r = build_general()
    for _, prog in ipairs({ r.main, r.forward }) do
      for _, op in ipairs(prog:global_block():ops()) do
        if op.type == "recurrent" or op.type == "recurrent_grad" then op:set_attr("reverse", true) end
      end
    end
    local x, h0 = rnd(9, T, N, D), rnd(10, N, H)
    local out = CF.run(r, { x = x, h0 = h0 }, r.extra)
    local rev = {}
    for t = 1, T do rev[t] = x[T + 1 - t] end
    local w1, w2 = reference(r, rev, h0)
    -- the reference ran over the reversed sequence: put its steps back in place
    local back1, back2 = {}, {}
    local per = N * H
    for t = 1, T do
      for k = 1, per do
        back1[(T - t) * per + k] = w1[(t - 1) * per + k]
        back2[(T - t) * per + k] = w2[(t - 1) * per + k]
      end
    end
    CF.assert_near(CF.flat(out[1]), back1, 1e-12, "o1")
    CF.assert_near(CF.flat(out[2]), back2, 1e-12, "o2")
    CF.check_grads(r, { x = x, h0 = h0 })
  end)

  it("handles sequences of one step", function()
    local r = build_general{ T = 1 }
    local x, h0 = rnd(5, 1, N, D), rnd(6, N, H)
    local out = CF.run(r, { x = x, h0 = h0 }, r.extra)
    local w1 = reference(r, x, h0)
    CF.assert_near(CF.flat(out[1]), w1, 1e-12, "o1")
    CF.check_grads(r, { x = x, h0 = h0 })
  end)

  it("runs an IfElse inside its step, forward and backward", function()
    local TT, NN, DD = 3, 4, 2
    local r = CF.build(function()
      local x = layers.data{ name = "x", shape = { TT, NN, DD }, dtype = "float64", append_batch_size = false }
      local c = layers.data{ name = "c", shape = { TT, NN, 1 }, dtype = "bool", append_batch_size = false }
      x.stop_gradient = false
      local rnn = layers.StaticRNN()
      rnn:step(function()
        local x_t = rnn:step_input(x)
        local c_t = rnn:step_input(c)
        local h = rnn:memory{ shape = { -1, DD }, batch_ref = x_t, value = 0.5 }
        local ie = layers.IfElse(c_t)
        ie:true_block(function() ie:output(layers.tanh(ie:input(x_t) + ie:input(h))) end)
        ie:false_block(function() ie:output(ie:input(x_t) * ie:input(h) + 1) end)
        local nh = ie()
        rnn:update_memory(h, nh)
        rnn:output(nh)
      end)
      local o = rnn()
      return layers.mean(o * o), { x }, { o }
    end)
    local x = rnd(11, TT, NN, DD)
    local masks = { { true, false, true, true }, { false, false, false, false }, { true, true, true, true } }
    local c = {}
    for t = 1, TT do
      c[t] = {}
      for n = 1, NN do c[t][n] = { masks[t][n] } end
    end
    local feeds = { x = x, c = { data = c, dtype = "bool" } }
    local out = CF.run(r, feeds, r.extra)
    local want, h = {}, {}
    for n = 1, NN do h[n] = { 0.5, 0.5 } end
    for t = 1, TT do
      for n = 1, NN do
        local nh = {}
        for d = 1, DD do
          local xv, hv = x[t][n][d], h[n][d]
          nh[d] = masks[t][n] and math.tanh(xv + hv) or xv * hv + 1
          want[#want + 1] = nh[d]
        end
        h[n] = nh
      end
    end
    CF.assert_near(CF.flat(out[1]), want, 1e-12, "o")
    CF.check_grads(r, feeds)
  end)

  it("survives serialization of its program", function()
    local r = build_general()
    local x, h0 = rnd(7, T, N, D), rnd(8, N, H)
    local before = CF.run(r, { x = x, h0 = h0 }, r.extra)
    local parsed = oar.Program.parse(r.main:serialize())
    local after = CF.run(r, { x = x, h0 = h0 }, { r.extra[1].name, r.extra[2].name }, parsed)
    CF.assert_near(CF.flat(after[1]), CF.flat(before[1]), 0, "o1")
    CF.assert_near(CF.flat(after[2]), CF.flat(before[2]), 0, "o2")
  end)

  it("names misuse", function()
    oar.program_guard(oar.Program(), oar.Program(), function()
      local x = layers.data{ name = "x", shape = { 2, 3, 4 }, dtype = "float64", append_batch_size = false }
      local rnn = layers.StaticRNN()
      expect_error(function() rnn:step_input(x) end, "StaticRNN:step_input", "inside rnn:step")
      expect_error(function()
        rnn:step(function()
          local x_t = rnn:step_input(x)
          local h = rnn:memory{ shape = { -1, 4 }, batch_ref = x_t }
          rnn:output(h + x_t)
        end)
      end, "memory", "never updated")
      local rnn2 = layers.StaticRNN()
      expect_error(function()
        rnn2:step(function()
          local x_t = rnn2:step_input(x)
          rnn2:update_memory(x_t, x_t)
        end)
      end, "update_memory", "not a memory")
      local rnn3 = layers.StaticRNN()
      expect_error(function() rnn3:step(function() rnn3:memory{} end) end, "memory", "'init'")
      expect_error(function() rnn3() end, "StaticRNN()", "build the step first")
      assert.equal(0, oar.default_main_program():current_block().idx)
    end)
  end)
end)
