#!/usr/bin/env luajit
-- rnn.lua: the RNN program of Fluid's block design ("Blocks with for and
-- RNNOp"), with oar's StaticRNN.
--
--   x = sequence([10, 20, 30])    -- one sequence of three steps
--   m = var(0)                    -- the initial memory
--   W = var(0.314, param=true)
--   U = var(0.375, param=true)
--   step: h_prev = memory(init=m); a = W x; b = U h_prev;
--         act = sigmoid(a + b); update_memory(h, act); outputs a, b, act
--
-- Runs it, prints a, b and act at every step, checks them against the
-- for-loop of the seed in plain Lua, then takes the gradients of
-- mean(act) with respect to W and U and checks them against central finite
-- differences of the same Lua loop. Exits with status 1 on a mismatch.
--
--   luajit examples/rnn.lua

-- A source checkout runs without installing (lua/ and build/ next to examples/).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)[^/]*$") or "./") .. "checkout.lua")

local oar = require("oar")
local layers = oar.layers

local W, U = 0.314, 0.375
local XS = { 10, 20, 30 }

local main, startup = oar.Program(), oar.Program()
local out_a, out_b, out_act, loss, grads
oar.program_guard(main, startup, function()
  -- time-major [T, N, 1]: three steps of a batch of one
  local x = layers.data{ name = "x", shape = { #XS, 1, 1 }, dtype = "float64", append_batch_size = false }
  local m = layers.fill_constant{ shape = { 1, 1 }, dtype = "float64", value = 0 }
  local rnn = layers.StaticRNN()
  rnn:step(function()
    local x_t = rnn:step_input(x)
    local h = rnn:memory{ init = m }
    local a = layers.fc{ input = x_t, size = 1, bias_attr = false,
      param_attr = oar.ParamAttr{ name = "W", initializer = oar.initializer.Constant{ value = W } } }
    local b = layers.fc{ input = h, size = 1, bias_attr = false,
      param_attr = oar.ParamAttr{ name = "U", initializer = oar.initializer.Constant{ value = U } } }
    local act = layers.sigmoid(a + b)
    rnn:update_memory(h, act)
    rnn:output(a, b, act)
  end)
  out_a, out_b, out_act = rnn()
  loss = layers.mean(out_act)
  local gb = main:global_block()
  grads = oar.gradients({ loss }, { gb:var("W"), gb:var("U") })
end)

local exe = oar.Executor(oar.CPUPlace())
local scope = oar.Scope()
exe:run(startup, { scope = scope })
local feed = { x = { { { XS[1] } }, { { XS[2] } }, { { XS[3] } } } }
local out = exe:run(main, { feed = feed, fetch_list = { out_a, out_b, out_act, loss, grads[1], grads[2] },
                           scope = scope })

-- the parameters as the program holds them (float32 constants widened to float64)
local w = scope:find_var("W"):get_tensor():get(1, 1)
local u = scope:find_var("U"):get_tensor():get(1, 1)

-- the seed's for-loop
local function lua_rnn(wv, uv)
  local mem = 0
  local a, b, act = {}, {}, {}
  for t, xv in ipairs(XS) do
    a[t] = wv * xv
    b[t] = uv * mem
    act[t] = 1 / (1 + math.exp(-(a[t] + b[t])))
    mem = act[t]
  end
  return a, b, act
end

local a, b, act = lua_rnn(w, u)
local ok = true
local function agree(got, want)
  local good = math.abs(got - want) <= 1e-9 * math.max(1, math.abs(want))
  ok = ok and good
  return good
end
print(string.format("W = %.9g, U = %.9g", w, u))
for t = 1, #XS do
  local ga, gb, gact = out[1]:get(t, 1, 1), out[2]:get(t, 1, 1), out[3]:get(t, 1, 1)
  local good = agree(ga, a[t]) and agree(gb, b[t]) and agree(gact, act[t])
  print(string.format("step %d: x = %g  a = %.9g  b = %.9g  act = %.9g  (Lua: %.9g %.9g %.9g) %s", t, XS[t],
    ga, gb, gact, a[t], b[t], act[t], good and "ok" or "MISMATCH"))
end

-- d mean(act) / dW and dU, against central differences of the Lua loop
local function lua_loss(wv, uv)
  local _, _, s = lua_rnn(wv, uv)
  return (s[1] + s[2] + s[3]) / 3
end
local eps = 1e-6
local num_w = (lua_loss(w + eps, u) - lua_loss(w - eps, u)) / (2 * eps)
local num_u = (lua_loss(w, u + eps) - lua_loss(w, u - eps)) / (2 * eps)
local gw, gu = out[5]:get(1, 1), out[6]:get(1, 1)
local good_w = math.abs(gw - num_w) <= 1e-6 * math.max(1, math.abs(num_w))
local good_u = math.abs(gu - num_u) <= 1e-6 * math.max(1, math.abs(num_u))
ok = ok and good_w and good_u
print(string.format("mean(act) = %.9g", out[4]:get(1)))
print(string.format("d mean(act)/dW = %.9g (finite differences %.9g) %s", gw, num_w, good_w and "ok" or "MISMATCH"))
print(string.format("d mean(act)/dU = %.9g (finite differences %.9g) %s", gu, num_u, good_u and "ok" or "MISMATCH"))
if not ok then
  io.stderr:write("rnn: the program's values differ from the plain-Lua computation\n")
  os.exit(1)
end
print("rnn: values and gradients match the plain-Lua computation")
