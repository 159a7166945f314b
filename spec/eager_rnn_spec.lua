-- nn.LSTM and nn.GRU (lua/oar/nn_rnn.lua): forward against a plain-Lua
-- float64 reference of the cell math (one and two layers, both directions,
-- sequence lengths, batch_first and time-major), gradients against central
-- finite differences in float64, initialization against the static
-- layers' startup programs, and errors.
local oar = require("oar")
local nn = oar.nn
local layers = oar.layers

local function sig(v) return 1 / (1 + math.exp(-v)) end

-- flat Lua copy of a tensor's values
local function flat(t)
  local out = {}
  local r = t:reshape({ -1 }):totable()
  for i = 1, #r do out[i] = r[i] end
  return out
end

-- the module's parameters by name as flat Lua arrays
local function params_of(m)
  local p = {}
  for _, np in ipairs(m:named_parameters()) do p[np[1]] = { v = flat(np[2]), shape = np[2]:shape() } end
  return p
end

-- one LSTM step for one row: x (in values), h, c (H values); W flat [(in+H), 4H], b flat [4H]
local function lstm_cell(x, h, c, W, b, H, fb)
  local nin = #x
  local z = {}
  for j = 1, 4 * H do
    local s = b[j]
    for k = 1, nin do s = s + x[k] * W[(k - 1) * 4 * H + j] end
    for k = 1, H do s = s + h[k] * W[(nin + k - 1) * 4 * H + j] end
    z[j] = s
  end
  local nh, nc = {}, {}
  for j = 1, H do
    local i, f, o, g = sig(z[j]), sig(z[H + j] + fb), sig(z[2 * H + j]), math.tanh(z[3 * H + j])
    nc[j] = f * c[j] + i * g
    nh[j] = o * math.tanh(nc[j])
  end
  return nh, nc
end

-- one GRU step: Wih flat [in, 3H], bih [3H], Whh flat as the gru_unit op
-- stores it (W_ur [H, 2H] then W_c [H, H]), bhh [3H]; origin mode
local function gru_cell(x, h, Wih, bih, Whh, bhh, H)
  local nin = #x
  local g = {}
  for j = 1, 3 * H do
    local s = bih[j] + bhh[j]
    for k = 1, nin do s = s + x[k] * Wih[(k - 1) * 3 * H + j] end
    g[j] = s
  end
  local u, r = {}, {}
  for j = 1, H do
    local su, sr = g[j], g[H + j]
    for k = 1, H do
      su = su + h[k] * Whh[(k - 1) * 2 * H + j]
      sr = sr + h[k] * Whh[(k - 1) * 2 * H + H + j]
    end
    u[j], r[j] = sig(su), sig(sr)
  end
  local nh = {}
  for j = 1, H do
    local sc = g[2 * H + j]
    for k = 1, H do sc = sc + r[k] * h[k] * Whh[2 * H * H + (k - 1) * H + j] end
    nh[j] = u[j] * h[j] + (1 - u[j]) * math.tanh(sc)
  end
  return nh
end

-- reference forward: xs[t][n] input rows (time-major, Lua tables); returns
-- out[t][n] (directions concatenated), hs[k][n], cs[k][n]
local function reference(kind, p, xs, N, H, L, D, lengths, fb)
  local T = #xs
  local seq = xs
  local hs, cs = {}, {}
  for l = 0, L - 1 do
    local outs = {}
    for t = 1, T do outs[t] = {} for n = 1, N do outs[t][n] = {} end end
    for d = 1, D do
      local sfx = "_l" .. l .. (d == 2 and "_reverse" or "")
      local k = l * D + d
      hs[k], cs[k] = {}, {}
      for n = 1, N do
        local h, c = {}, {}
        for j = 1, H do h[j], c[j] = 0, 0 end
        local len = lengths and lengths[n] or T
        local a, b, inc = 1, T, 1
        if d == 2 then a, b, inc = T, 1, -1 end
        for t = a, b, inc do
          local o = {}
          if t <= len then
            if kind == "lstm" then
              h, c = lstm_cell(seq[t][n], h, c, p["weight" .. sfx].v, p["bias" .. sfx].v, H, fb or 0)
            else
              h = gru_cell(seq[t][n], h, p["weight_ih" .. sfx].v, p["bias_ih" .. sfx].v, p["weight_hh" .. sfx].v,
                p["bias_hh" .. sfx].v, H)
            end
            for j = 1, H do o[j] = h[j] end
          else
            for j = 1, H do o[j] = 0 end
          end
          for j = 1, H do outs[t][n][(d - 1) * H + j] = o[j] end
        end
        hs[k][n], cs[k][n] = h, c
      end
    end
    seq = outs
  end
  return seq, hs, cs
end

-- x tensor [N, T, C] -> time-major Lua rows
local function rows_time_major(x)
  local v = x:totable()
  local xs = {}
  for t = 1, #v[1] do
    xs[t] = {}
    for n = 1, #v do xs[t][n] = v[n][t] end
  end
  return xs
end

local function check_close(got, want, tol, what)
  assert(math.abs(got - want) <= tol * math.max(1, math.abs(want)),
    string.format("%s: expected %.12g, got %.12g", what, want, got))
end

local function compare_forward(kind, opts, lengths)
  oar.seed(21)
  local N, T, C, H = 3, 4, 2, 3
  local L = opts.num_layers or 1
  local D = opts.direction == "bidirect" and 2 or 1
  opts.dtype = "float64"
  local m = (kind == "lstm" and nn.LSTM or nn.GRU)(C, H, opts)
  -- nonzero biases, so that the bias paths are checked too
  oar.no_grad(function()
    for _, p in ipairs(m:parameters()) do p:copy(p + oar.randn(p:shape(), "float64") * 0.3) end
  end)
  local x = oar.randn({ N, T, C }, "float64")
  local out, st = m(x, nil, lengths)
  local h = kind == "lstm" and st[1] or st
  local c = kind == "lstm" and st[2] or nil
  assert.are.same({ N, T, D * H }, out:shape())
  assert.are.same({ L * D, N, H }, h:shape())
  local want, hs, cs = reference(kind, params_of(m), rows_time_major(x), N, H, L, D, lengths, opts.forget_bias)
  local ov, hv = out:totable(), h:totable()
  for t = 1, T do
    for n = 1, N do
      for j = 1, D * H do check_close(ov[n][t][j], want[t][n][j], 1e-10, string.format("out[%d][%d][%d]", n, t, j)) end
    end
  end
  for k = 1, L * D do
    for n = 1, N do
      for j = 1, H do check_close(hv[k][n][j], hs[k][n][j], 1e-10, string.format("h[%d][%d][%d]", k, n, j)) end
    end
  end
  if c then
    local cv = c:totable()
    for k = 1, L * D do
      for n = 1, N do
        for j = 1, H do check_close(cv[k][n][j], cs[k][n][j], 1e-10, "c") end
      end
    end
  end
  -- time-major input gives the same numbers, transposed
  local tm_opts = {}
  for k, v in pairs(opts) do tm_opts[k] = v end
  tm_opts.batch_first = false
  local m2 = (kind == "lstm" and nn.LSTM or nn.GRU)(C, H, tm_opts)
  m2:load_state_dict(m:state_dict())
  local out2 = m2(x:transpose(1, 2), nil, lengths)
  assert.are.same(out:transpose(1, 2):totable(), out2:totable())
end

-- loss = sum(out * R1) + sum(h * R2) (+ sum(c * R3)): analytic grads of every
-- parameter and of x against central differences
local function check_grads(kind, opts, lengths)
  oar.seed(5)
  local N, T, C, H = 2, 3, 2, 2
  opts.dtype = "float64"
  local m = (kind == "lstm" and nn.LSTM or nn.GRU)(C, H, opts)
  oar.no_grad(function()
    for _, p in ipairs(m:parameters()) do p:copy(p + oar.randn(p:shape(), "float64") * 0.3) end
  end)
  local x = oar.randn({ N, T, C }, "float64"):requires_grad()
  local L, D = opts.num_layers or 1, opts.direction == "bidirect" and 2 or 1
  local R1 = oar.randn({ N, T, D * H }, "float64")
  local R2 = oar.randn({ L * D, N, H }, "float64")
  local R3 = oar.randn({ L * D, N, H }, "float64")
  local function loss()
    local out, st = m(x, nil, lengths)
    local l = (out * R1):sum() + ((kind == "lstm" and st[1] or st) * R2):sum()
    if kind == "lstm" then l = l + (st[2] * R3):sum() end
    return l
  end
  m:zero_grad()
  loss():backward()
  local targets = { { "x", x } }
  for _, np in ipairs(m:named_parameters()) do targets[#targets + 1] = np end
  local eps = 1e-6
  for _, np in ipairs(targets) do
    local name, t = np[1], np[2]
    assert(t.grad, name .. " has no grad")
    local g = flat(t.grad)
    local d = t:data()
    for i = 0, t:numel() - 1 do
      local v = d[i]
      local lp, lm
      oar.no_grad(function()
        d[i] = v + eps; lp = loss()   -- a number: nothing is recorded
        d[i] = v - eps; lm = loss()
      end)
      d[i] = v
      check_close(g[i + 1], (lp - lm) / (2 * eps), 1e-6, string.format("%s %s grad[%d]", kind, name, i))
    end
  end
end

describe("nn.LSTM", function()
  it("matches the plain-Lua cell math: one layer, forward", function()
    compare_forward("lstm", {})
  end)

  it("matches it for two bidirectional layers and sequence lengths", function()
    compare_forward("lstm", { num_layers = 2, direction = "bidirect" })
    compare_forward("lstm", { num_layers = 2, direction = "bidirect" }, { 4, 2, 1 })
    compare_forward("lstm", { forget_bias = 1.0, batch_first = true }, { 2, 4, 3 })
  end)

  it("gradients equal central differences (params and input, bidirect, lengths)", function()
    check_grads("lstm", {})
    check_grads("lstm", { direction = "bidirect", num_layers = 2 }, { 3, 2 })
  end)

  it("initializes as layers.lstm_unit's startup under the same seed; zero bias", function()
    local main, startup = oar.Program(), oar.Program()
    oar.program_guard(main, startup, function()
      local x = layers.data{ name = "x", shape = { 3 } }
      local h = layers.data{ name = "h", shape = { 4 } }
      local c = layers.data{ name = "c", shape = { 4 } }
      layers.lstm_unit{ x_t = x, hidden_t_prev = h, cell_t_prev = c, param_attr = oar.ParamAttr{ name = "lw" } }
    end)
    local scope = oar.Scope()
    oar.seed(17)
    oar.Executor(oar.CPUPlace()):run(startup, { scope = scope })
    oar.seed(17)
    local m = nn.LSTM(3, 4)
    assert.are.same(scope:find_var("lw"):get_tensor():totable(), m.weight_l0:totable())
    assert.are.same({ 7, 16 }, m.weight_l0:shape())
    for _, v in ipairs(m.bias_l0:totable()) do assert.are.equal(0, v) end
  end)

  it("takes initial states and trains with an optimizer", function()
    oar.seed(2)
    local m = nn.LSTM(2, 3)
    local h0, c0 = oar.randn(1, 2, 3), oar.randn(1, 2, 3)
    local x = oar.randn(2, 5, 2)
    local out1 = m(x)
    local out2 = m(x, { h0, c0 })
    assert.are_not.same(out1:totable(), out2:totable())
    local opt = oar.optimizer.Adam{ learning_rate = 0.05, parameters = m:parameters() }
    local target = oar.randn(2, 5, 3)
    local first, last
    for _ = 1, 30 do
      local loss = oar.nn.functional.mse_loss(m(x, { h0, c0 }), target)
      loss:backward(); opt:step(); opt:zero_grad()
      first = first or loss:item()
      last = loss:item()
    end
    assert(last < first * 0.8, string.format("loss %g -> %g", first, last))
  end)

  it("names the module, the shapes and the line on a bad input", function()
    local m = nn.LSTM(3, 4)
    local ok, err = pcall(function() return m(oar.randn(2, 5, 7)) end)
    assert.is_false(ok)
    assert.truthy(err:find("LSTM", 1, true) and err:find("[2, 5, 7]", 1, true) and err:find("eager_rnn_spec.lua:%d+"))
    ok, err = pcall(function() return m(oar.randn(2, 5, 3), { oar.zeros(2, 2, 4), oar.zeros(1, 2, 4) }) end)
    assert.is_false(ok)
    assert.truthy(err:find("[1, 2, 4]", 1, true) and err:find("[2, 2, 4]", 1, true), err)
    ok, err = pcall(function() return nn.LSTM(3, 4, { direction = "both" }) end)
    assert.truthy(not ok and err:find("direction", 1, true))
    ok, err = pcall(function() return m(oar.randn(2, 3, 3), nil, { 1, 9 }) end)
    assert.truthy(not ok and err:find("sequence_length", 1, true))
  end)
end)

describe("nn.LSTM and nn.GRU under oar.jit.trace", function()
  it("trace to programs that return the eager bits (lengths frozen, as the trace's constants)", function()
    oar.seed(12)
    local m = nn.LSTM(3, 4, { direction = "bidirect" })
    local x = oar.randn(2, 5, 3)
    local traced = oar.jit.trace(function(a) local out, hc = m(a, nil, { 5, 2 }); return out, hc[1] end, { x })
    local a, b = traced(x)
    local o, hc = m(x, nil, { 5, 2 })
    assert.are.same(o:totable(), a:totable())
    assert.are.same(hc[1]:totable(), b:totable())
    local g = nn.GRU(3, 4, { num_layers = 2 })
    assert.are.same(g(x):totable(), oar.jit.trace(g, { x })(x):totable())
  end)
end)

describe("nn.GRU", function()
  it("matches the plain-Lua cell math (gru_unit's weight layout, origin mode)", function()
    compare_forward("gru", {})
    compare_forward("gru", { num_layers = 2, direction = "bidirect" }, { 1, 4, 3 })
  end)

  it("gradients equal central differences", function()
    check_grads("gru", {})
    check_grads("gru", { direction = "bidirect" }, { 2, 3 })
  end)

  it("initializes as layers.fc then layers.gru_unit under the same seed", function()
    local main, startup = oar.Program(), oar.Program()
    oar.program_guard(main, startup, function()
      local x = layers.data{ name = "x", shape = { 3 } }
      local h = layers.data{ name = "h", shape = { 4 } }
      local proj = layers.fc{ input = x, size = 12, param_attr = oar.ParamAttr{ name = "gi" } }
      layers.gru_unit{ input = proj, hidden = h, size = 12, param_attr = oar.ParamAttr{ name = "gh" } }
    end)
    local scope = oar.Scope()
    oar.seed(4)
    oar.Executor(oar.CPUPlace()):run(startup, { scope = scope })
    oar.seed(4)
    local m = nn.GRU(3, 4)
    assert.are.same(scope:find_var("gi"):get_tensor():totable(), m.weight_ih_l0:totable())
    assert.are.same(scope:find_var("gh"):get_tensor():totable(), m.weight_hh_l0:totable())
    assert.are.same({ "weight_ih_l0", "bias_ih_l0", "weight_hh_l0", "bias_hh_l0" },
      (function() local t = {} for i, p in ipairs(m:named_parameters()) do t[i] = p[1] end return t end)())
  end)

  it("dropout between layers only in training", function()
    oar.seed(9)
    local m = nn.GRU(2, 3, { num_layers = 2, dropout = 0.5 })
    local x = oar.randn(2, 4, 2)
    m:eval()
    local a, b = m(x), m(x)
    assert.are.same(a:totable(), b:totable())
    m:train()
    local c = m(x)
    assert.are_not.same(a:totable(), c:totable())
  end)
end)
