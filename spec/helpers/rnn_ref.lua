-- spec/helpers/rnn_ref.lua — plain-Lua references for the RNN API specs
-- (spec/rnn_api_spec.lua, spec/rnn_decode_spec.lua): deterministic random
-- values, Fluid's BasicLSTMUnit and BasicGRUUnit steps, a GRU over padded
-- sequences, value comparison, and building and running programs in a
-- scope of their own with float64 parameters set by name.
local assert = require("luassert")
local oar = require("oar")

-- ---- plain Lua ---------------------------------------------------------------------------------

-- deterministic values in [-r, r)
local function lcg(seed)
  local s = seed
  return function(r)
    s = (s * 1103515245 + 12345) % 2147483648
    return (s / 2147483648 * 2 - 1) * (r or 0.5)
  end
end
local function randm(rows, cols, rnd, r)
  local m = {}
  for i = 1, rows do
    m[i] = {}
    for j = 1, cols do m[i][j] = rnd(r) end
  end
  return m
end
local function randv(n, rnd, r)
  local v = {}
  for i = 1, n do v[i] = rnd(r) end
  return v
end
local function sig(x) return 1 / (1 + math.exp(-x)) end
local function cat(a, b)
  local t = {}
  for i = 1, #a do t[i] = a[i] end
  for i = 1, #b do t[#a + i] = b[i] end
  return t
end
-- v [n] times m [n, k] plus b [k]
local function vecmat(v, m, b)
  local out = {}
  for k = 1, #m[1] do
    local s = b and b[k] or 0
    for i = 1, #v do s = s + v[i] * m[i][k] end
    out[k] = s
  end
  return out
end

-- one LSTM step of Fluid's BasicLSTMUnit for one row
local function lstm_step(x, h, c, W, b, fb)
  local H = #h
  local g = vecmat(cat(x, h), W, b)
  local nc, nh = {}, {}
  for k = 1, H do
    local i, j, f, o = g[k], g[H + k], g[2 * H + k], g[3 * H + k]
    nc[k] = c[k] * sig(f + fb) + sig(i) * math.tanh(j)
    nh[k] = math.tanh(nc[k]) * sig(o)
  end
  return nh, nc
end

-- one GRU step of Fluid's BasicGRUUnit for one row
local function gru_step(x, h, p)
  local H = #h
  local g = vecmat(cat(x, h), p.Wg, p.bg)
  local r, u, rh = {}, {}, {}
  for k = 1, H do
    r[k], u[k] = sig(g[k]), sig(g[H + k])
    rh[k] = r[k] * h[k]
  end
  local c = vecmat(cat(x, rh), p.Wc, p.bc)
  local nh = {}
  for k = 1, H do nh[k] = u[k] * h[k] + (1 - u[k]) * math.tanh(c[k]) end
  return nh
end

-- a GRU over x[n][t] for t <= len[n] (backwards with reverse); zeros past len
local function gru_seq(x, lens, h0, p, reverse)
  local outs, finals = {}, {}
  for n = 1, #x do
    local Tn, H = #x[n], #h0[n]
    local h = h0[n]
    outs[n] = {}
    for t = 1, Tn do
      outs[n][t] = {}
      for k = 1, H do outs[n][t][k] = 0 end
    end
    local first, last, step = 1, lens[n], 1
    if reverse then first, last, step = lens[n], 1, -1 end
    for t = first, last, step do
      h = gru_step(x[n][t], h, p)
      outs[n][t] = h
    end
    finals[n] = h
  end
  return outs, finals
end

local function flat(t, out)
  out = out or {}
  if type(t) == "number" then out[#out + 1] = t
  else for _, v in ipairs(t) do flat(v, out) end end
  return out
end

local function near(want, got, tol, what)
  local w, g = flat(want), flat(got)
  assert.are.equal(#w, #g, (what or "") .. ": element count")
  for i = 1, #w do
    local d = math.abs(w[i] - g[i])
    assert(d <= tol * (1 + math.abs(w[i])),
      string.format("%s: element %d: want %.12g, got %.12g", what or "values", i, w[i], g[i]))
  end
end

-- ---- running programs --------------------------------------------------------------------------

local function program(build)
  local main, startup = oar.Program(), oar.Program()
  local out = { oar.program_guard(main, startup, build) }
  return main, startup, out[1]
end

-- a fresh scope with the startup run and the named parameters set (float64)
local function session(startup, params)
  local scope, exe = oar.Scope(), oar.Executor()
  exe:run(startup, { scope = scope })
  for name, v in pairs(params or {}) do scope:var(name):set_tensor(oar.Tensor(v, "float64")) end
  return function(main, feed, fetch)
    local r = exe:run(main, { feed = feed, fetch_list = fetch, scope = scope })
    return r
  end, scope
end

local function gru_params(rnd, D, H)
  return { Wg = randm(D + H, 2 * H, rnd), bg = randv(2 * H, rnd), Wc = randm(D + H, H, rnd), bc = randv(H, rnd) }
end
local function gru_param_feed(cell, p)
  return { [cell.gate_weight.name] = p.Wg, [cell.gate_bias.name] = p.bg,
           [cell.candidate_weight.name] = p.Wc, [cell.candidate_bias.name] = p.bc }
end

return { lcg = lcg, randm = randm, randv = randv, sig = sig, cat = cat, vecmat = vecmat, lstm_step = lstm_step,
         gru_step = gru_step, gru_seq = gru_seq, flat = flat, near = near, program = program, session = session,
         gru_params = gru_params, gru_param_feed = gru_param_feed }
