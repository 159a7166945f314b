-- The API contract (docs/api.md): control flow (the docs/api.md samples, run as written). One of the
-- api_contract_*_spec.lua files (one per API area): every table row, bullet,
-- keyword default and code-sample call has at least one assertion, with
-- expected values worked out by hand in the comments.
local oar = require("oar")
local A = require("spec.helpers.api")
local layers = oar.layers

local THIS_FILE = "api_contract_control_flow_spec.lua"

-- ---- helpers (spec/helpers/api.lua) ---------------------------------------------
local errmsg, eval, near, op_types, contains = A.errmsg, A.eval, A.near, A.op_types, A.contains
local build, run = A.build, A.run
local Constant, const_attr, X23 = oar.initializer.Constant, A.const_attr, A.X23


-- ==== Control flow (owned elsewhere; the docs/api.md samples, run as written) ======================
describe("API: control flow samples", function()
  local sig = function(v) return 1 / (1 + math.exp(-v)) end

  it("IfElse: input/output per side, rows merged back in order", function()
    local main, startup, o1, o2 = build(function()
      local x = layers.data{ name = "x", shape = { 2 } }
      local col = layers.data{ name = "c", shape = { 1 } }
      local cond = layers.less_than{ x = col, y = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 0 } }
      local ie = layers.IfElse(cond)
      ie:true_block(function()
        local xt = ie:input(x)
        ie:output(layers.scale{ x = xt, scale = 2 }, layers.softmax(xt))
      end)
      ie:false_block(function()
        local xf = ie:input(x)
        ie:output(layers.fc{ input = xf, size = 2, param_attr = const_attr(1), bias_attr = false }, xf + 1)
      end)
      return ie()
    end)
    local out = run(main, startup, { x = { { 1, 2 }, { 3, 4 }, { 0, 0 } }, c = { { -1 }, { 1 }, { -1 } } }, { o1, o2 })
    -- rows 1 and 3 true: 2x and softmax; row 2 false: fc of ones (3 + 4 = 7 each) and x + 1
    near({ { 2, 4 }, { 7, 7 }, { 0, 0 } }, out[1]:totable())
    near({ { sig(-1), sig(1) }, { 4, 5 }, { 0.5, 0.5 } }, out[2]:totable())
  end)

  it("StaticRNN: step_input, memory (init or shape/batch_ref/value), update_memory, output", function()
    local T, N, H = 3, 2, 2
    local xs = { { { 1, 0 }, { 0, 1 } }, { { 1, 1 }, { 2, 0 } }, { { 0, 0 }, { -1, 1 } } }
    local main, startup, o1, o2 = build(function()
      local x = layers.data{ name = "x", shape = { T, N, 2 }, append_batch_size = false }
      local h0 = layers.fill_constant{ shape = { N, H }, dtype = "float32", value = 0 }
      local rnn = layers.StaticRNN()
      rnn:step(function()
        local x_t = rnn:step_input(x)
        local h = rnn:memory{ init = h0 }
        local a = layers.fc{ input = x_t, size = H, param_attr = const_attr(0.5), bias_attr = false }
        local b = layers.fc{ input = h, size = H, param_attr = const_attr(1), bias_attr = false }
        local act = layers.sigmoid(a + b)
        rnn:update_memory(h, act)
        rnn:output(act, b)
      end)
      return rnn()
    end)
    local out = run(main, startup, { x = xs }, { o1, o2 })
    assert.are.same({ T, N, H }, out[1]:shape())
    assert.are.same({ T, N, H }, out[2]:shape())
    for n = 1, N do
      local h = 0                                   -- both hidden units are equal
      for t = 1, T do
        local b = H * h                              -- fc of ones over the previous state
        local act = sig(0.5 * (xs[t][n][1] + xs[t][n][2]) + b)
        near(act, out[1]:get(t, n, 1), 1e-5, "act")
        near(b, out[2]:get(t, n, 2), 1e-5, "b")
        h = act
      end
    end
    -- the shape/batch_ref/value form of memory
    local main2, startup2, o = build(function()
      local x = layers.data{ name = "x", shape = { T, N, 2 }, append_batch_size = false }
      local rnn = layers.StaticRNN()
      rnn:step(function()
        local x_t = rnn:step_input(x)
        local h = rnn:memory{ shape = { -1, H }, batch_ref = x_t, value = 1 }
        local nh = h + 1
        rnn:update_memory(h, nh)
        rnn:step_output(nh)
      end)
      return rnn()
    end)
    local r = run(main2, startup2, { x = xs }, { o })
    near({ 2, 2 }, r[1]:totable()[1][1])
    near({ 4, 4 }, r[1]:totable()[3][2])
  end)

  it("DynamicRNN over LoD sequences: step_input, memory{shape=, value=}, output keeps the LoD", function()
    local seq = oar.Tensor({ { 1 }, { 2 }, { 3 }, { -1 }, { 0.5 } }, "float32")
    seq:set_lod({ { 0, 3, 5 } })
    local main, startup, out_var = build(function()
      local s = layers.data{ name = "seq", shape = { 1 }, lod_level = 1 }
      local drnn = layers.DynamicRNN()
      drnn:block(function()
        local w = drnn:step_input(s)
        local m = drnn:memory{ shape = { 1 }, value = 0 }
        local h = layers.fc{ input = { w, m }, size = 1, act = "tanh",
                             param_attr = { const_attr(1), const_attr(0.5) }, bias_attr = false }
        drnn:update_memory(m, h)
        drnn:output(h)
      end)
      return drnn()
    end)
    local out = run(main, startup, { seq = seq }, { out_var })
    assert.are.same({ { 0, 3, 5 } }, out[1]:lod())
    local want = {}
    for _, s in ipairs({ { 1, 2, 3 }, { -1, 0.5 } }) do
      local h = 0
      for _, v in ipairs(s) do h = math.tanh(v + 0.5 * h); want[#want + 1] = { h } end
    end
    near(want, out[1]:totable(), 1e-5)
  end)

  it("DynamicRNN: memory{init=} and static_input, rows back in the input's order", function()
    -- sequence A = {1}, B = {2, 3} (B is longer, so the step order differs from the input order)
    local seq = oar.Tensor({ { 1 }, { 2 }, { 3 } }, "float32")
    seq:set_lod({ { 0, 1, 3 } })
    local main, startup, out_var = build(function()
      local s = layers.data{ name = "seq", shape = { 1 }, lod_level = 1 }
      local h0 = layers.data{ name = "h0", shape = { 1 } }
      local st = layers.data{ name = "st", shape = { 1 } }
      local drnn = layers.DynamicRNN()
      drnn:block(function()
        local w = drnn:step_input(s)
        local m = drnn:memory{ init = h0, need_reorder = true }   -- Fluid's default keeps h0 in rank order
        local c = drnn:static_input(st)
        local h = m + w + c
        drnn:update_memory(m, h)
        drnn:output(h)
      end)
      return drnn()
    end)
    local out = run(main, startup, { seq = seq, h0 = { { 10 }, { 20 } }, st = { { 100 }, { 200 } } }, { out_var })
    -- A: 10 + 1 + 100; B: 20 + 2 + 200, then 222 + 3 + 200
    near({ { 111 }, { 222 }, { 425 } }, out[1]:totable())
    assert.are.same({ { 0, 1, 3 } }, out[1]:lod())
  end)

  it("gradients flow through IfElse, StaticRNN and cond", function()
    local g = {}
    local main, startup = build(function()
      local x = layers.data{ name = "x", shape = { 2 } }
      x.stop_gradient = false
      local col = layers.data{ name = "c", shape = { 1 } }
      local cond = layers.less_than{ x = col, y = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 0 } }
      local ie = layers.IfElse(cond)
      ie:true_block(function() ie:output(layers.scale{ x = ie:input(x), scale = 3 }) end)
      ie:false_block(function() local xf = ie:input(x); ie:output(xf * xf) end)
      local o = ie()
      g.ie = oar.gradients({ layers.reduce_sum(o) }, { x })[1]
      local p = layers.data{ name = "p", shape = { 1 }, dtype = "bool", append_batch_size = false }
      local r = layers.cond(p, function() return x * 5 end, function() return x * 7 end)
      g.cond = oar.gradients({ layers.reduce_sum(r) }, { x })[1]
      local seq = layers.data{ name = "tx", shape = { 2, 1, 1 }, append_batch_size = false }
      seq.stop_gradient = false
      local rnn = layers.StaticRNN()
      rnn:step(function()
        local x_t = rnn:step_input(seq)
        local h = rnn:memory{ shape = { -1, 1 }, batch_ref = x_t, value = 1 }
        local nh = h * x_t
        rnn:update_memory(h, nh)
        rnn:step_output(nh)
      end)
      local o2 = rnn()
      g.rnn = oar.gradients({ layers.reduce_sum(o2) }, { seq })[1]
    end)
    local out = run(main, startup, { x = { { 1, 2 }, { 3, 4 } }, c = { { -1 }, { 1 } }, p = oar.Tensor({ false }, "bool"),
                                     tx = { { { 2 } }, { { 5 } } } }, { g.ie, g.cond, g.rnn })
    near({ { 3, 3 }, { 6, 8 } }, out[1]:totable())      -- row 1 true: 3; row 2 false: 2x
    near({ { 7, 7 }, { 7, 7 } }, out[2]:totable())      -- the false branch ran
    -- outputs x1 and x1*x2: d/dx1 = 1 + x2 = 6, d/dx2 = x1 = 2
    near({ { { 6 } }, { { 2 } } }, out[3]:totable())
  end)

  it("While(cond) with less_than writing into cond; Switch; cond(pred, true_fn, false_fn)", function()
    local main, startup, acc, sw_out, c1, c2 = build(function()
      local i = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 0 }
      local n = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 3 }
      local acc = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 0 }
      local cond = layers.less_than{ x = i, y = n }
      local loop = layers.While(cond)
      loop:block(function()
        layers.assign(layers.scale{ x = acc, scale = 2, bias = 1 }, acc)   -- acc = 2 acc + 1
        layers.increment{ x = i }
        layers.less_than{ x = i, y = n, cond = cond }
      end)
      local x = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 5 }
      local out = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 0 }
      local sw = layers.Switch()
      sw:case(layers.less_than{ x = x, y = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 3 } },
        function() layers.assign(layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 1 }, out) end)
      sw:case(layers.less_than{ x = x, y = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 10 } },
        function() layers.assign(layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 2 }, out) end)
      sw:default(function() layers.assign(layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 3 }, out) end)
      local p = layers.data{ name = "p", shape = { 1 }, dtype = "bool", append_batch_size = false }
      local r1 = layers.cond(p, function() return layers.scale{ x = x, scale = 2 } end,
                                function() return layers.scale{ x = x, scale = -1 } end)
      local r2 = layers.cond(layers.logical_not(p), function() return layers.scale{ x = x, scale = 2 } end,
                                                    function() return layers.scale{ x = x, scale = -1 } end)
      return acc, out, r1, r2
    end)
    local out = run(main, startup, { p = oar.Tensor({ true }, "bool") }, { acc, sw_out, c1, c2 })
    near({ 7 }, out[1]:totable())        -- 0 -> 1 -> 3 -> 7
    near({ 2 }, out[2]:totable())        -- 5 < 3 fails, 5 < 10 holds
    near({ 10 }, out[3]:totable())
    near({ -5 }, out[4]:totable())
  end)
end)
