-- DynamicRNN over LoD level-1 sequences: values against a plain-Lua loop
-- over each sequence, the output LoD, a batch where every sequence has a
-- different length, sequences of one step, static inputs, memories from
-- init (reordered or not), and gradients against finite differences.
local oar = require("oar")
local CF = require("spec.helpers.cf_check")
local layers = oar.layers

local expect_error = require("spec.helpers.expect_error")

local function param(r, name) return r.scope:find_var(name):get_tensor():totable() end

-- row (list) x w ([k][j]) + b
local function affine(row, w, b)
  local out = {}
  for j = 1, #w[1] do
    local s = b and b[j] or 0
    for k = 1, #row do s = s + row[k] * w[k][j] end
    out[j] = s
  end
  return out
end

local D, H = 3, 2

-- h_t = tanh(x_t Wx + h_{t-1} Wh + s Ws + b), h_0 = init (zeros or h0), per sequence
local function build(opts)
  opts = opts or {}
  return CF.build(function()
    local x = layers.data{ name = "x", shape = { D }, dtype = "float64", lod_level = 1 }
    local s = layers.data{ name = "s", shape = { 2 }, dtype = "float64" }
    local h0 = layers.data{ name = "h0", shape = { H }, dtype = "float64" }
    x.stop_gradient, s.stop_gradient, h0.stop_gradient = false, false, false
    local drnn = layers.DynamicRNN()
    drnn:block(function()
      local w = drnn:step_input(x)
      local st = drnn:static_input(s)
      local m
      if opts.init then m = drnn:memory{ init = h0, need_reorder = true }
      else m = drnn:memory{ shape = { H }, value = 0 } end
      local h = layers.fc{ input = { w, m, st }, size = H, act = "tanh",
        param_attr = { oar.ParamAttr{ name = "wx" }, oar.ParamAttr{ name = "wh" }, oar.ParamAttr{ name = "ws" } },
        bias_attr = oar.ParamAttr{ name = "b" } }
      drnn:update_memory(m, h)
      drnn:output(h, w * 2)
    end)
    local out, twice = drnn()
    local gb = oar.default_main_program():global_block()
    local wrt = { x, s, gb:var("wx"), gb:var("wh"), gb:var("ws"), gb:var("b") }
    if opts.init then wrt[#wrt + 1] = h0 end
    return layers.mean(out * out) + layers.mean(twice), wrt, { out, twice }
  end)
end

local function reference(r, rows, offs, srows, h0)
  local wx, wh, ws, b = param(r, "wx"), param(r, "wh"), param(r, "ws"), param(r, "b")
  local out = {}
  for q = 1, #offs - 1 do
    local h = h0 and h0[q] or { 0, 0 }
    for t = offs[q] + 1, offs[q + 1] do
      local a, c, e = affine(rows[t], wx, b), affine(h, wh), affine(srows[q], ws)
      local nh = {}
      for j = 1, H do nh[j] = math.tanh(a[j] + c[j] + e[j]) end
      out[t] = nh
      h = nh
    end
  end
  local flat = {}
  for _, row in ipairs(out) do for _, v in ipairs(row) do flat[#flat + 1] = v end end
  return flat
end

local ROWS = { { 0.1, 0.2, 0.3 }, { -0.4, 0.5, 0.6 }, { 0.7, -0.8, 0.9 }, { 1.0, 0.1, -0.2 }, { 0.3, 0.3, 0.3 },
               { -0.6, 0.2, 0.4 }, { 0.5, -0.5, 0.1 }, { 0.2, 0.9, -0.3 }, { 0.0, 0.4, 0.8 }, { -0.1, -0.2, 0.6 } }
-- four sequences, every one of a different length (2, 1, 4, 3), not sorted
local OFFS = { 0, 2, 3, 7, 10 }
local S = { { 0.5, -0.5 }, { 1.0, 0.2 }, { -0.3, 0.7 }, { 0.1, 0.1 } }
local H0 = { { 0.2, -0.1 }, { 0.4, 0.3 }, { -0.5, 0.6 }, { 0.0, 0.9 } }

describe("DynamicRNN", function()
  it("runs each sequence through the step and keeps the input's LoD", function()
    local r = build()
    local out = CF.run(r, { x = { data = ROWS, lod = { OFFS } }, s = S, h0 = H0 }, r.extra)
    CF.assert_near(CF.flat(out[1]), reference(r, ROWS, OFFS, S), 1e-12, "h")
    assert.same({ OFFS }, out[1]:lod())
    assert.same({ 10, H }, out[1]:shape())
    local twice = {}
    for _, row in ipairs(ROWS) do for _, v in ipairs(row) do twice[#twice + 1] = 2 * v end end
    CF.assert_near(CF.flat(out[2]), twice, 1e-12, "2x")
    assert.same({ OFFS }, out[2]:lod())
  end)

  it("starts memories from init, reordered to the sequences' rank order", function()
    local r = build{ init = true }
    local out = CF.run(r, { x = { data = ROWS, lod = { OFFS } }, s = S, h0 = H0 }, r.extra)
    CF.assert_near(CF.flat(out[1]), reference(r, ROWS, OFFS, S, H0), 1e-12, "h")
  end)

  it("handles a batch of one-step sequences and a single sequence", function()
    local r = build()
    local rows = { ROWS[1], ROWS[2], ROWS[3] }
    local offs = { 0, 1, 2, 3 }
    local out = CF.run(r, { x = { data = rows, lod = { offs } }, s = { S[1], S[2], S[3] }, h0 = H0 }, r.extra)
    CF.assert_near(CF.flat(out[1]), reference(r, rows, offs, S), 1e-12, "one step")
    out = CF.run(r, { x = { data = ROWS, lod = { { 0, 10 } } }, s = { S[2] }, h0 = H0 }, r.extra)
    CF.assert_near(CF.flat(out[1]), reference(r, ROWS, { 0, 10 }, { S[2] }), 1e-12, "one sequence")
  end)

  it("has gradients for the sequences, static inputs, parameters and initial memory", function()
    local r = build{ init = true }
    CF.check_grads(r, { x = { data = ROWS, lod = { OFFS } }, s = S, h0 = H0 })
    CF.check_grads(r, { x = { data = { ROWS[1], ROWS[2], ROWS[3] }, lod = { { 0, 1, 2, 3 } } },
                        s = { S[1], S[2], S[3] }, h0 = { H0[1], H0[2], H0[3] } })
  end)

  it("names misuse", function()
    oar.program_guard(oar.Program(), oar.Program(), function()
      local x = layers.data{ name = "x", shape = { D }, dtype = "float64", lod_level = 1 }
      local y = layers.data{ name = "y", shape = { D }, dtype = "float64" }
      local drnn = layers.DynamicRNN()
      expect_error(function() drnn:step_input(x) end, "DynamicRNN:step_input", "inside drnn:block")
      expect_error(function() drnn:block(function() drnn:step_input(y) end) end, "step_input", "lod_level 0")
      local d2 = layers.DynamicRNN()
      expect_error(function() d2:block(function() d2:memory{ shape = { 2 } } end) end, "step_input before memory")
      local d3 = layers.DynamicRNN()
      expect_error(function() d3:block(function() d3:update_memory(d3:step_input(x), x) end) end, "not a memory")
      assert.equal(0, oar.default_main_program():current_block().idx)
    end)
  end)
end)
