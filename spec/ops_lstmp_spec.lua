-- lstmp (issue 22): ports of Fluid 1.8's test_lstmp_op.py (lod [[2, 3, 2]],
-- D 16, P 10, cell_clip = proj_clip = 0.1; initial states, reverse, no
-- peepholes, a linear projection, empty sequences) with the reference
-- re-computed in plain Lua one sequence at a time, float64 finite-difference
-- gradients, the layer dynamic_lstmp, and errors naming the op and variable.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")
local W = require("spec.helpers.sequence_grad")
local expect_error = require("spec.helpers.expect_error")
local offsets = require("spec.helpers.index").offsets
local ffi = require("ffi")

-- the Batch* outputs are dispensable (inference programs drop them) but the gradient reads them
T.GRAD_STATE.lstmp = { BatchGate = true, BatchCellPreAct = true, BatchHidden = true }

local function f32(v) return tonumber(ffi.new("float", v)) end
local ACT = {
  identity = function(v) return v end,
  sigmoid = function(v) return 1 / (1 + math.exp(-v)) end,
  tanh = function(v) return math.tanh(v) end,
  relu = function(v) return v > 0 and v or 0 end,
}
local function clip(v, c) if c > 0 then return math.max(-c, math.min(c, v)) end return v end

-- the reference: x [T, 4D], h0 [N, P] or nil, c0 [N, D] or nil, w [P, 4D],
-- pw [D, P], b [4D] or [7D] (peepholes when 7D); returns r [T, P], c [T, D]
local function lstmp_ref(o)
  local D, P, offs = o.D, o.P, o.offs
  local cc, pc = f32(o.cell_clip or 0), f32(o.proj_clip or 0)
  local ag, ac, an, ap = ACT[o.gate or "sigmoid"], ACT[o.cell or "tanh"], ACT[o.cand or "tanh"], ACT[o.proj or "tanh"]
  local rout, cout = {}, {}
  for s = 1, #offs - 1 do
    local r, c = {}, {}
    for j = 1, P do r[j] = o.h0 and o.h0[(s - 1) * P + j] or 0 end
    for j = 1, D do c[j] = o.c0 and o.c0[(s - 1) * D + j] or 0 end
    local len = offs[s + 1] - offs[s]
    for step = 0, len - 1 do
      local row = o.reverse and offs[s + 1] - 1 - step or offs[s] + step
      local g = {}
      for q = 1, 4 * D do
        local v = o.x[row * 4 * D + q] + (o.b and o.b[q] or 0)
        for p = 1, P do v = v + r[p] * o.w[(p - 1) * 4 * D + q] end
        g[q] = v
      end
      local peep = o.b and #o.b == 7 * D
      local nc, h = {}, {}
      for j = 1, D do
        local gi, gf = g[D + j], g[2 * D + j]
        if peep then gi, gf = gi + o.b[4 * D + j] * c[j], gf + o.b[5 * D + j] * c[j] end
        nc[j] = clip(ag(gf) * c[j] + ag(gi) * an(g[j]), cc)
      end
      for j = 1, D do
        local go = g[3 * D + j]
        if peep then go = go + o.b[6 * D + j] * nc[j] end
        h[j] = ag(go) * ac(nc[j])
      end
      local nr = {}
      for p = 1, P do
        local v = 0
        for j = 1, D do v = v + h[j] * o.pw[(j - 1) * P + p] end
        nr[p] = clip(ap(v), pc)
      end
      r, c = nr, nc
      for p = 1, P do rout[row * P + p] = r[p] end
      for j = 1, D do cout[row * D + j] = c[j] end
    end
  end
  return rout, cout
end

local function make(o)
  local offs = offsets(o.lens)
  local n, Tn = #o.lens, offs[#offs]
  o.offs = offs
  o.x = R.symmetric(Tn * 4 * o.D, 3)
  o.w = R.symmetric(o.P * 4 * o.D, 5, 0.5)
  o.pw = R.symmetric(o.D * o.P, 7, 0.5)
  o.b = R.symmetric((o.peep == false and 4 or 7) * o.D, 9)
  if o.init then o.h0, o.c0 = R.symmetric(n * o.P, 11), R.symmetric(n * o.D, 13) end
  local inputs = {
    Input = T.tensor(o.x, { shape = { Tn, 4 * o.D }, lod = { offs } }),
    Weight = T.tensor(o.w, { shape = { o.P, 4 * o.D } }),
    ProjWeight = T.tensor(o.pw, { shape = { o.D, o.P } }),
    Bias = T.tensor(o.b, { shape = { 1, #o.b } }),
  }
  if o.init then
    inputs.H0 = T.tensor(o.h0, { shape = { n, o.P } })
    inputs.C0 = T.tensor(o.c0, { shape = { n, o.D } })
  end
  local attrs = { use_peepholes = o.peep ~= false, is_reverse = o.reverse or false,
                  cell_clip = o.cell_clip or 0, proj_clip = o.proj_clip or 0,
                  gate_activation = o.gate or "sigmoid", cell_activation = o.cell or "tanh",
                  candidate_activation = o.cand or "tanh", proj_activation = o.proj or "tanh" }
  return inputs, attrs, Tn
end

describe("lstmp", function()
  local CASES = {
    { name = "TestLstmpOp" },
    { name = "HasInitial", init = true },
    { name = "Rerverse", reverse = true },
    { name = "NotUsePeepholes", peep = false },
    { name = "LinearProjection", proj = "identity" },
    { name = "Len0Case1", lens = { 0, 4, 0 } },
    { name = "Len0Case2", lens = { 2, 0, 3 } },
  }
  for _, c in ipairs(CASES) do
    it(c.name .. " (lod {" .. table.concat(c.lens or { 2, 3, 2 }, ",") .. "}, D 16, P 10, clips 0.1)", function()
      local o = { lens = c.lens or { 2, 3, 2 }, D = 16, P = 10, init = c.init, reverse = c.reverse, peep = c.peep,
                  proj = c.proj, cell_clip = 0.1, proj_clip = 0.1 }
      local inputs, attrs, Tn = make(o)
      local r, cc = lstmp_ref(o)
      for _, dt in ipairs({ "float64", "float32" }) do
        local ins = {}
        for k, v in pairs(inputs) do ins[k] = T.tensor(v.data, { shape = v.shape, lod = v.lod, dtype = dt }) end
        T.check_output{ type = "lstmp", inputs = ins, attrs = attrs, dtype = dt,
                        expect = { Projection = { shape = { Tn, 10 }, data = r, lod = { o.offs } },
                                   Cell = { shape = { Tn, 16 }, data = cc, lod = { o.offs } } },
                        atol = dt == "float32" and 1e-5 or 1e-10 }
      end
    end)
  end

  -- the test file's explicit case (setUp2): lod [[5]], D 3, P 2, no peepholes, identity projection,
  -- proj_clip 0.5, given numbers; Input = x wx
  it("the test's explicit numbers (D 3, P 2, proj_clip 0.5)", function()
    local xr = { { -0.50806344, 0.50909436 }, { -0.50087136, 0.4904187 }, { -0.48933774, 0.50408053 },
                 { 0.00896523, 0.00770854 }, { -0.00851139, -0.01005108 } }
    local wx = { { 0.2932311, -0.8829277, 1.100133, 0.8197811, -0.8194872, -0.829262, 0.7708865, -0.62339246,
                   -0.7656475, 0.4283645, -0.27164033, -0.3600223 },
                 { -0.609142, 0.25025278, 0.15731744, -0.66051376, -0.70994514, 0.8344964, -0.00551117, -0.7072167,
                   -0.63929003, -0.52340907, -0.8842589, 0.9531688 } }
    local x = {}
    for r = 1, 5 do for c = 1, 12 do x[#x + 1] = xr[r][1] * wx[1][c] + xr[r][2] * wx[2][c] end end
    local o = { D = 3, P = 2, offs = { 0, 5 }, x = x, proj = "identity", proj_clip = 0.5,
                w = { 0.7808204, -0.7412322, -0.9458036, -0.01664658, 0.7930616, 0.10208707, 0.20036687, -0.16743736,
                      1.0295134, -0.3118722, 0.02241168, 0.3154219, -0.29026014, 0.24638331, -0.5435432, 0.87635124,
                      -0.96091515, -0.1411362, 0.58606523, -0.38996056, -0.9003789, 0.8540163, -0.8831781,
                      -0.28499633 },
                pw = { 0.15685119, 0.05694652, -0.9641068, -1.5106804, 0.3599193, 1.2540514 },
                b = { -0.49999997, 0.5, -0.49999997, -0.5, 0.5, 0.5, 0.49999997, -0.49999997, 0.49999997, -0.5,
                      0.49999997, 0.5 },
                h0 = { -1.3392334e-04, -6.8468950e-04 }, c0 = { 4.5552300e-04, 1.3302206e-03, -3.6721351e-04 } }
    local r, cc = lstmp_ref(o)
    T.check_output{ type = "lstmp",
                    inputs = { Input = T.tensor(x, { shape = { 5, 12 }, lod = { { 0, 5 } } }),
                               Weight = T.tensor(o.w, { shape = { 2, 12 } }), ProjWeight = T.tensor(o.pw, { shape = { 3, 2 } }),
                               Bias = T.tensor(o.b, { shape = { 1, 12 } }), H0 = T.tensor(o.h0, { shape = { 1, 2 } }),
                               C0 = T.tensor(o.c0, { shape = { 1, 3 } }) },
                    attrs = { use_peepholes = false, proj_activation = "identity", proj_clip = 0.5 },
                    expect = { Projection = { shape = { 5, 2 }, data = r }, Cell = { shape = { 5, 3 }, data = cc } },
                    atol = 1e-10 }
  end)

  it("no clipping, relu projection and sigmoid cell", function()
    local o = { lens = { 3, 1, 2 }, D = 5, P = 3, init = true, proj = "relu", cell = "sigmoid" }
    local inputs, attrs, Tn = make(o)
    local r, cc = lstmp_ref(o)
    T.check_output{ type = "lstmp", inputs = inputs, attrs = attrs,
                    expect = { Projection = { shape = { Tn, 3 }, data = r }, Cell = { shape = { Tn, 5 }, data = cc } },
                    atol = 1e-10 }
  end)

  -- gradients of every input, with and without the clips binding
  for _, c in ipairs({ { init = true }, { init = true, reverse = true, peep = false },
                       { init = true, cell_clip = 0.3, proj_clip = 0.2 }, { lens = { 2, 0, 3 }, proj = "identity" } }) do
    local what = ("init %s, reverse %s, peepholes %s, clips %s/%s, lod {%s}"):format(tostring(c.init),
      tostring(c.reverse or false), tostring(c.peep ~= false), c.cell_clip or 0, c.proj_clip or 0,
      table.concat(c.lens or { 2, 3, 1 }, ","))
    it("grad: " .. what, function()
      local o = { lens = c.lens or { 2, 3, 1 }, D = 3, P = 2, init = c.init, reverse = c.reverse, peep = c.peep,
                  proj = c.proj, cell_clip = c.cell_clip, proj_clip = c.proj_clip }
      local inputs, attrs = make(o)
      local wrt = { "Input", "Weight", "ProjWeight", "Bias" }
      if c.init then wrt[#wrt + 1] = "H0"; wrt[#wrt + 1] = "C0" end
      W.check{ type = "lstmp", inputs = inputs, attrs = attrs, wrt = wrt, of = { "Projection", "Cell" },
               delta = 1e-6, max_rel = 1e-4 }
    end)
  end

  it("refuses a ProjWeight that does not fit Weight and an H0 of the hidden size", function()
    local o = { lens = { 2, 1 }, D = 3, P = 2, init = true }
    local inputs, attrs = make(o)
    inputs.ProjWeight = T.tensor(R.symmetric(9, 1), { shape = { 3, 3 } })
    expect_error(function() T.run{ type = "lstmp", inputs = inputs, attrs = attrs } end,
      "lstmp", "ProjWeight", "in_ProjWeight", "[D, P] = [3, 2]")
    inputs = make(o)
    inputs.H0 = T.tensor(R.symmetric(6, 1), { shape = { 2, 3 } })
    expect_error(function() T.run{ type = "lstmp", inputs = inputs, attrs = attrs } end,
      "lstmp", "H0", "in_H0", "[2, 3]", "[N, P]")
  end)
end)

describe("oar.layers.dynamic_lstmp", function()
  local oar = require("oar")
  local A = require("spec.helpers.api")
  local layers = oar.layers

  local flatten = require("spec.helpers.index").flatten
  local function flat(t) return flatten(t:totable()) end

  it("builds lstmp with Fluid's arguments and matches the reference", function()
    local main, startup, r, c = A.build(function()
      local x = layers.data{ name = "x", shape = { 8 }, lod_level = 1 }
      return layers.dynamic_lstmp{ input = x, size = 8, proj_size = 3, cell_clip = 0.5, proj_clip = 0.4,
                                   proj_activation = "identity" }
    end)
    local op
    for _, o in ipairs(main:global_block():ops()) do if o.type == "lstmp" then op = o end end
    assert.are.equal(0.5, op:attr("cell_clip"))
    assert.are.equal("identity", op:attr("proj_activation"))
    assert.are.same({ -1, 3 }, r.shape)
    local xs = R.symmetric(5 * 8, 3)
    local xt = oar.Tensor(xs, "float32"):reshape({ 5, 8 })
    xt:set_lod({ { 0, 2, 5 } })
    local got, scope = A.run(main, startup, { x = xt }, { r, c })
    local o = { D = 2, P = 3, offs = { 0, 2, 5 }, x = xs, cell_clip = 0.5, proj_clip = 0.4, proj = "identity" }
    for _, p in ipairs(main:global_block():all_parameters()) do
      local v = flat(scope:find_var(p.name):get_tensor())
      local sh = table.concat(p.shape, "x")
      if sh == "3x8" then o.w = v elseif sh == "2x3" then o.pw = v elseif sh == "1x14" then o.b = v end
    end
    assert.is_truthy(o.w and o.pw and o.b, "the layer's three parameters")
    local wr, wc = lstmp_ref(o)
    T.assert_close({ shape = got[1]:shape(), data = flat(got[1]) }, { shape = { 5, 3 }, data = wr }, 1e-5)
    T.assert_close({ shape = got[2]:shape(), data = flat(got[2]) }, { shape = { 5, 2 }, data = wc }, 1e-5)
  end)

  it("trains: SGD on the mean projection changes all three parameters", function()
    local main, startup, loss = A.build(function()
      local x = layers.data{ name = "x", shape = { 8 }, lod_level = 1 }
      local r = layers.dynamic_lstmp{ input = x, size = 8, proj_size = 3 }
      local l = layers.mean(r)
      oar.optimizer.SGD{ learning_rate = 0.5 }:minimize(l)
      return l
    end)
    local xt = oar.Tensor(R.symmetric(5 * 8, 5), "float32"):reshape({ 5, 8 })
    xt:set_lod({ { 0, 2, 5 } })
    local exe, scope = oar.Executor(oar.CPUPlace()), oar.Scope()
    exe:run(startup, { scope = scope })
    local before = {}
    for _, p in ipairs(main:global_block():all_parameters()) do before[p.name] = flat(scope:find_var(p.name):get_tensor()) end
    exe:run(main, { scope = scope, feed = { x = xt }, fetch_list = { loss } })
    for name, v in pairs(before) do
      local now, moved = flat(scope:find_var(name):get_tensor()), false
      for i = 1, #v do if math.abs(now[i] - v[i]) > 1e-7 then moved = true end end
      assert.is_true(moved, name .. " did not change")
    end
  end)

  it("refuses a size that is not 4 x the input's width and an h_0 of the wrong width", function()
    A.build(function()
      local x = layers.data{ name = "x", shape = { 8 }, lod_level = 1 }
      local e = A.errmsg(layers.dynamic_lstmp, { input = x, size = 12, proj_size = 2 })
      assert.is_truthy(e:find("dynamic_lstmp", 1, true) and e:find("fc{size = 12}", 1, true), e)
      local h = layers.data{ name = "h", shape = { 5 } }
      e = A.errmsg(layers.dynamic_lstmp, { input = x, size = 8, proj_size = 2, h_0 = h })
      assert.is_truthy(e:find("h_0", 1, true) and e:find("[N, 2]", 1, true), e)
    end)
  end)
end)
