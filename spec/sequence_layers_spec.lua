-- oar.layers sequence layers: sequence_pool / first_step / last_step /
-- softmax / expand / conv, dynamic_lstm, dynamic_gru, lstm_unit, gru_unit.
-- Checks compile-time shapes and LoD levels, parameters (shapes,
-- initializers), op attrs, run-time values against plain Lua (pooling) or
-- against the op run directly on the layer's parameters (recurrent layers),
-- gradients reaching every parameter, and argument errors.
local oar = require("oar")
local R = require("spec.helpers.random")
local A = require("spec.helpers.api")
local T = require("spec.helpers.op_test")
local layers = oar.layers

local rand_values = R.symmetric

local function errmsg(fn, ...)
  local ok, err = pcall(fn, ...)
  assert.is_false(ok, "expected an error")
  return tostring(err)
end

local build = A.build

-- a float32 LoD tensor [rows, width] from flat values
local function lod_tensor(values, rows, width, lod, dtype)
  local nested = {}
  for r = 1, rows do
    local row = {}
    for j = 1, width do row[j] = values[(r - 1) * width + j] end
    nested[r] = row
  end
  local t = oar.Tensor(nested, dtype or "float32")
  if lod then t:set_lod(lod) end
  return t
end

local function flat(t)
  local out = {}
  local function walk(v)
    if type(v) == "table" then for _, x in ipairs(v) do walk(x) end else out[#out + 1] = v end
  end
  walk(t:totable())
  return out
end

local function near(expect, got, tol, what)
  assert.are.equal(#expect, #got, (what or "") .. ": value count")
  for i = 1, #expect do
    assert.is_true(math.abs(expect[i] - got[i]) <= (tol or 1e-5) * math.max(1, math.abs(expect[i])),
      string.format("%s[%d]: expected %.7g, got %.7g", what or "value", i, expect[i], got[i]))
  end
end

local function op_of(prog, typ)
  for _, op in ipairs(prog:global_block():ops()) do
    if op.type == typ then return op end
  end
end

local function param_values(scope, p)
  return flat(scope:find_var(p.name):get_tensor())
end

describe("sequence pooling layers", function()
  local offs = { 0, 2, 5, 6 }
  local x_vals = rand_values(6 * 3, 3)

  it("sequence_pool, sequence_first_step, sequence_last_step run and pool per sequence", function()
    local main, startup, x, outs = build(function()
      local x = layers.data{ name = "x", shape = { 3 }, lod_level = 1 }
      return x, {
        max = layers.sequence_pool{ input = x, pool_type = "max" },
        sum = layers.sequence_pool(x, "sum"),
        avg = layers.sequence_pool{ input = x, pool_type = "AVERAGE" },
        first = layers.sequence_first_step(x),
        last = layers.sequence_last_step{ input = x },
      }
    end)
    assert.are.same({ -1, 3 }, outs.max.shape)
    assert.are.equal(0, outs.max.lod_level)
    assert.are.equal("MAX", op_of(main, "sequence_pool"):attr("pooltype"))
    local exe = oar.Executor(oar.CPUPlace())
    local scope = oar.Scope()
    exe:run(startup, { scope = scope })
    local names = { "max", "sum", "avg", "first", "last" }
    local fetch = {}
    for i, n in ipairs(names) do fetch[i] = outs[n] end
    local got = exe:run(main, { feed = { x = lod_tensor(x_vals, 6, 3, { offs }) }, fetch_list = fetch, scope = scope })
    local function ref(kind)
      local out = {}
      for s = 1, 3 do
        local b, e = offs[s], offs[s + 1]
        for j = 1, 3 do
          local v
          if kind == "first" then v = x_vals[b * 3 + j]
          elseif kind == "last" then v = x_vals[(e - 1) * 3 + j]
          elseif kind == "max" then
            v = -math.huge
            for r = b, e - 1 do v = math.max(v, x_vals[r * 3 + j]) end
          else
            v = 0
            for r = b, e - 1 do v = v + x_vals[r * 3 + j] end
            if kind == "avg" then v = v / (e - b) end
          end
          out[#out + 1] = v
        end
      end
      return out
    end
    for i, n in ipairs(names) do
      assert.are.same({ 3, 3 }, got[i]:shape())
      near(ref(n), flat(got[i]), 1e-6, n)
    end
  end)

  it("keeps the upper LoD level for a two-level input", function()
    local main, startup, pooled = build(function()
      local x = layers.data{ name = "x", shape = { 1 }, lod_level = 2 }
      return layers.sequence_pool{ input = x, pool_type = "sum" }
    end)
    assert.are.equal(1, pooled.lod_level)
    local exe = oar.Executor(oar.CPUPlace())
    exe:run(startup)
    local got = exe:run(main, { feed = { x = lod_tensor({ 1, 2, 3, 4, 5 }, 5, 1, { { 0, 2, 3 }, { 0, 1, 3, 5 } }) },
                                fetch_list = { pooled } })[1]
    near({ 1, 5, 9 }, flat(got), 1e-6, "sum")
    assert.are.same({ { 0, 2, 3 } }, got:lod())
  end)

  it("sequence_softmax and sequence_expand", function()
    local main, startup, sm, ex = build(function()
      local s = layers.data{ name = "s", shape = { 1 }, lod_level = 1 }
      local v = layers.data{ name = "v", shape = { 2 } }
      return layers.sequence_softmax(s), layers.sequence_expand{ x = v, y = s }
    end)
    local exe = oar.Executor(oar.CPUPlace())
    exe:run(startup)
    local got = exe:run(main, { feed = { s = lod_tensor({ 0, 1, 2, 5 }, 4, 1, { { 0, 3, 4 } }),
                                         v = lod_tensor({ 1, 2, 3, 4 }, 2, 2) },
                                fetch_list = { sm, ex } })
    local z = 1 + math.exp(1) + math.exp(2)
    near({ 1 / z, math.exp(1) / z, math.exp(2) / z, 1 }, flat(got[1]), 1e-6, "softmax")
    near({ 1, 2, 1, 2, 1, 2, 3, 4 }, flat(got[2]), 1e-6, "expand")
  end)

  it("rejects unknown pool types and non-Variables", function()
    local err = errmsg(function()
      build(function()
        local x = layers.data{ name = "x", shape = { 3 }, lod_level = 1 }
        return layers.sequence_pool{ input = x, pool_type = "median" }
      end)
    end)
    assert.truthy(err:find("sequence_pool", 1, true) and err:find("pool_type", 1, true), err)
    err = errmsg(function() build(function() return layers.sequence_last_step(3) end) end)
    assert.truthy(err:find("sequence_last_step", 1, true), err)
  end)
end)

describe("sequence_conv layer", function()
  it("creates the filter [filter_size * D, num_filters] and a bias, pads around each sequence", function()
    local main, startup, out = build(function()
      local x = layers.data{ name = "x", shape = { 2 }, lod_level = 1 }
      return layers.sequence_conv{ input = x, num_filters = 3, filter_size = 3,
        param_attr = oar.ParamAttr{ initializer = oar.initializer.Constant{ value = 0.5 } },
        bias_attr = oar.ParamAttr{ initializer = oar.initializer.Constant{ value = 0.25 } } }
    end)
    local op = op_of(main, "sequence_conv")
    assert.are.equal(-1, op:attr("contextStart"))
    assert.are.equal(3, op:attr("contextLength"))
    local params = main:global_block():all_parameters()
    local shapes = {}
    for _, p in ipairs(params) do shapes[#shapes + 1] = table.concat(p.shape, "x") end
    table.sort(shapes)
    assert.are.same({ "3", "6x3" }, shapes)
    assert.are.same({ -1, 3 }, out.shape)
    local exe = oar.Executor(oar.CPUPlace())
    exe:run(startup)
    local x = { 1, 2, 3, 4, 5, 6, 7, 8 }   -- rows (1,2) (3,4) (5,6) | (7,8)
    local got = exe:run(main, { feed = { x = lod_tensor(x, 4, 2, { { 0, 3, 4 } }) }, fetch_list = { out } })[1]
    -- each output = 0.5 * (sum of the window's values) + 0.25, for every filter
    local win = { 1 + 2 + 3 + 4, 1 + 2 + 3 + 4 + 5 + 6, 3 + 4 + 5 + 6, 7 + 8 }
    local want = {}
    for r = 1, 4 do for _ = 1, 3 do want[#want + 1] = 0.5 * win[r] + 0.25 end end
    near(want, flat(got), 1e-6, "sequence_conv")
    assert.are.same({ { 0, 3, 4 } }, got:lod())
  end)
end)

-- runs an lstm/gru layer program; returns fetched values and the scope
local function run_layer(main, startup, feed, fetch)
  local exe = oar.Executor(oar.CPUPlace())
  local scope = oar.Scope()
  exe:run(startup, { scope = scope })
  return exe:run(main, { feed = feed, fetch_list = fetch, scope = scope }), scope
end

describe("dynamic_lstm", function()
  local lod = { 0, 3, 4, 8 }
  local x_vals = rand_values(8 * 8, 11)

  for _, peep in ipairs({ true, false }) do
    for _, reverse in ipairs({ false, true }) do
      it(("hidden and cell match the lstm op on the layer's parameters (use_peepholes %s, is_reverse %s)"):format(
        tostring(peep), tostring(reverse)), function()
        local main, startup, h, c, w, b = build(function()
          local x = layers.data{ name = "x", shape = { 8 }, lod_level = 1 }
          local h, c = layers.dynamic_lstm{ input = x, size = 8, use_peepholes = peep, is_reverse = reverse,
            bias_attr = oar.ParamAttr{ initializer = oar.initializer.Uniform{ low = -0.5, high = 0.5 } } }
          local params = oar.default_main_program():global_block():all_parameters()
          local w, b
          for _, p in ipairs(params) do
            if #p.shape == 2 and p.shape[1] == 2 then w = p else b = p end
          end
          return h, c, w, b
        end)
        assert.are.same({ 2, 8 }, w.shape)
        assert.are.same({ 1, peep and 14 or 8 }, b.shape)
        assert.are.same({ -1, 2 }, h.shape)
        assert.are.equal(1, h.lod_level)
        assert.are.equal(1, c.lod_level)
        local op = op_of(main, "lstm")
        assert.are.equal(peep, op:attr("use_peepholes"))
        assert.are.equal(reverse, op:attr("is_reverse"))
        local got, scope = run_layer(main, startup, { x = lod_tensor(x_vals, 8, 8, { lod }) }, { h, c })
        local want = T.run{ type = "lstm", dtype = "float32",
          attrs = { use_peepholes = peep, is_reverse = reverse },
          inputs = { Input = T.tensor(x_vals, { shape = { 8, 8 }, lod = { lod }, dtype = "float32" }),
                     Weight = T.tensor(param_values(scope, w), { shape = { 2, 8 }, dtype = "float32" }),
                     Bias = T.tensor(param_values(scope, b), { shape = b.shape, dtype = "float32" }) } }
        near(want.Hidden[1].data, flat(got[1]), 1e-6, "hidden")
        near(want.Cell[1].data, flat(got[2]), 1e-6, "cell")
        assert.are.same({ lod }, got[1]:lod())
      end)
    end
  end

  it("takes h_0 and c_0, and the backward pass reaches weight, bias, input and initial states", function()
    local main, startup, loss, grads = build(function()
      local x = layers.data{ name = "x", shape = { 8 }, lod_level = 1 }
      x.stop_gradient = false
      local h0 = layers.data{ name = "h0", shape = { 2 } }
      local c0 = layers.data{ name = "c0", shape = { 2 } }
      h0.stop_gradient, c0.stop_gradient = false, false
      local h = layers.dynamic_lstm{ input = x, size = 8, h_0 = h0, c_0 = c0 }
      local loss = layers.mean(layers.sequence_pool{ input = h, pool_type = "max" })
      local pg = oar.append_backward(loss)
      local g = oar.gradients({ loss }, { x, h0, c0 })
      return loss, { pg = pg, x = g[1], h0 = g[2], c0 = g[3] }
    end)
    assert.are.equal(2, #grads.pg)
    local fetch = { loss, grads.x, grads.h0, grads.c0 }
    for _, pg in ipairs(grads.pg) do fetch[#fetch + 1] = pg[2] end
    local got = run_layer(main, startup, { x = lod_tensor(x_vals, 8, 8, { lod }),
      h0 = lod_tensor(rand_values(6, 2), 3, 2), c0 = lod_tensor(rand_values(6, 3), 3, 2) }, fetch)
    for i = 2, #got do
      local v, nonzero = flat(got[i]), 0
      for _, g in ipairs(v) do
        assert.is_true(g == g and math.abs(g) < 1e3, "finite gradient")
        if g ~= 0 then nonzero = nonzero + 1 end
      end
      assert.is_true(nonzero > 0, "gradient " .. i .. " is not all zero")
    end
  end)

  it("rejects a size that is not 4 * hidden or does not match the input width", function()
    local err = errmsg(function()
      build(function()
        local x = layers.data{ name = "x", shape = { 6 }, lod_level = 1 }
        return layers.dynamic_lstm{ input = x, size = 6 }
      end)
    end)
    assert.truthy(err:find("dynamic_lstm", 1, true) and err:find("multiple of 4", 1, true), err)
    err = errmsg(function()
      build(function()
        local x = layers.data{ name = "x", shape = { 12 }, lod_level = 1 }
        return layers.dynamic_lstm{ input = x, size = 8 }
      end)
    end)
    assert.truthy(err:find("width 12", 1, true) and err:find("size is 8", 1, true), err)
  end)
end)

describe("dynamic_gru", function()
  local lod = { 0, 2, 7, 8 }
  local x_vals = rand_values(8 * 6, 5)

  for _, origin in ipairs({ false, true }) do
    it("hidden matches the gru op on the layer's parameters (origin_mode " .. tostring(origin) .. ")", function()
      local main, startup, h, w, b = build(function()
        local x = layers.data{ name = "x", shape = { 6 }, lod_level = 1 }
        local h = layers.dynamic_gru{ input = x, size = 2, origin_mode = origin, is_reverse = origin,
          bias_attr = oar.ParamAttr{ initializer = oar.initializer.Uniform{ low = -0.5, high = 0.5 } } }
        local w, b
        for _, p in ipairs(oar.default_main_program():global_block():all_parameters()) do
          if p.shape[1] == 2 then w = p else b = p end
        end
        return h, w, b
      end)
      assert.are.same({ 2, 6 }, w.shape)
      assert.are.same({ 1, 6 }, b.shape)
      assert.are.same({ -1, 2 }, h.shape)
      local got, scope = run_layer(main, startup, { x = lod_tensor(x_vals, 8, 6, { lod }) }, { h })
      local want = T.run{ type = "gru", dtype = "float32",
        attrs = { origin_mode = origin, is_reverse = origin },
        inputs = { Input = T.tensor(x_vals, { shape = { 8, 6 }, lod = { lod }, dtype = "float32" }),
                   Weight = T.tensor(param_values(scope, w), { shape = { 2, 6 }, dtype = "float32" }),
                   Bias = T.tensor(param_values(scope, b), { shape = { 1, 6 }, dtype = "float32" }) } }
      near(want.Hidden[1].data, flat(got[1]), 1e-6, "hidden")
    end)
  end

  it("trains: a few SGD steps lower the loss", function()
    local main, startup, loss = build(function()
      local x = layers.data{ name = "x", shape = { 6 }, lod_level = 1 }
      local h = layers.dynamic_gru{ input = x, size = 2 }
      local loss = layers.mean(layers.square(layers.sequence_last_step(h) - 0.5))
      oar.optimizer.SGD{ learning_rate = 0.5 }:minimize(loss)
      return loss
    end)
    local exe = oar.Executor(oar.CPUPlace())
    local scope = oar.Scope()
    exe:run(startup, { scope = scope })
    local feed = { x = lod_tensor(x_vals, 8, 6, { lod }) }
    local first, last
    for step = 1, 30 do
      local l = flat(exe:run(main, { feed = feed, fetch_list = { loss }, scope = scope })[1])[1]
      if step == 1 then first = l end
      last = l
    end
    assert.is_true(last < first * 0.5, ("loss %g -> %g"):format(first, last))
  end)

  it("rejects an input whose width is not 3 * size", function()
    local err = errmsg(function()
      build(function()
        local x = layers.data{ name = "x", shape = { 8 }, lod_level = 1 }
        return layers.dynamic_gru{ input = x, size = 2 }
      end)
    end)
    assert.truthy(err:find("dynamic_gru", 1, true) and err:find("3 * size = 6", 1, true), err)
  end)
end)

describe("lstm_unit and gru_unit layers", function()
  it("lstm_unit: fc over [x_t, h_prev] then the lstm_unit op", function()
    local main, startup, h, c = build(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      local hp = layers.data{ name = "hp", shape = { 2 } }
      local cp = layers.data{ name = "cp", shape = { 2 } }
      return layers.lstm_unit{ x_t = x, hidden_t_prev = hp, cell_t_prev = cp, forget_bias = 1.0 }
    end)
    assert.are.same({ -1, 2 }, h.shape)
    assert.are.same({ -1, 2 }, c.shape)
    assert.are.equal(1.0, op_of(main, "lstm_unit"):attr("forget_bias"))
    local got = run_layer(main, startup, { x = lod_tensor(rand_values(6, 1), 2, 3),
      hp = lod_tensor(rand_values(4, 2), 2, 2), cp = lod_tensor(rand_values(4, 3), 2, 2) }, { h, c })
    assert.are.same({ 2, 2 }, got[1]:shape())
    for _, v in ipairs(flat(got[1])) do assert.is_true(math.abs(v) < 1) end
  end)

  it("gru_unit: Fluid's INT activation codes and three outputs", function()
    local main, startup, h, rhp, g = build(function()
      local x = layers.data{ name = "x", shape = { 6 } }
      local hp = layers.data{ name = "hp", shape = { 2 } }
      return layers.gru_unit{ input = x, hidden = hp, size = 6, activation = "relu" }
    end)
    local op = op_of(main, "gru_unit")
    assert.are.equal(3, op:attr("activation"))
    assert.are.equal(1, op:attr("gate_activation"))
    assert.are.same({ -1, 2 }, h.shape)
    assert.are.same({ -1, 6 }, g.shape)
    local got = run_layer(main, startup, { x = lod_tensor(rand_values(12, 1), 2, 6),
      hp = lod_tensor(rand_values(4, 2), 2, 2) }, { h, rhp, g })
    assert.are.same({ 2, 2 }, got[1]:shape())
    assert.are.same({ 2, 6 }, got[3]:shape())
  end)
end)
