-- IfElse: rows split by a bool condition, a block per side, outputs merged
-- back in row order; values against plain-Lua row loops, gradients against
-- finite differences, a side that gets no rows (Fluid #11811), IfElse nested
-- in an IfElse block (Fluid #8107), sequence inputs and misuse.
local oar = require("oar")
local CF = require("spec.helpers.cf_check")
local layers = oar.layers

local expect_error = require("spec.helpers.expect_error")

local function param(r, name)
  return r.scope:find_var(name):get_tensor():totable()
end

-- y = x W + b for one row
local function affine(row, w, b)
  local out = {}
  for j = 1, #w[1] do
    local s = b and b[j] or 0
    for i = 1, #row do s = s + row[i] * w[i][j] end
    out[j] = s
  end
  return out
end

local function map(row, f)
  local out = {}
  for i, v in ipairs(row) do out[i] = f(v) end
  return out
end

local function softmax(row)
  local m = -math.huge
  for _, v in ipairs(row) do m = math.max(m, v) end
  local s, out = 0, {}
  for i, v in ipairs(row) do out[i] = math.exp(v - m); s = s + out[i] end
  for i = 1, #out do out[i] = out[i] / s end
  return out
end

local X = { { 0.1, 0.2, 0.3 }, { 0.4, -0.5, 0.6 }, { -0.7, 0.8, 0.9 }, { 1.0, 1.1, -1.2 }, { 0.3, 0.3, 0.1 } }

local function bools(list)
  local rows = {}
  for i, b in ipairs(list) do rows[i] = { b } end
  return { data = rows, dtype = "bool" }
end

-- an IfElse with two outputs per side, an fc in the false side
local function build_example()
  return CF.build(function()
    local x = layers.data{ name = "x", shape = { 3 }, dtype = "float64" }
    local c = layers.data{ name = "c", shape = { 1 }, dtype = "bool" }
    x.stop_gradient = false
    local ie = layers.IfElse(c)
    ie:true_block(function()
      local xt = ie:input(x)
      ie:output(layers.scale{ x = xt, scale = 2 }, layers.softmax(xt))
    end)
    ie:false_block(function()
      local xf = ie:input(x)
      ie:output(layers.fc{ input = xf, size = 3, param_attr = oar.ParamAttr{ name = "w" },
                           bias_attr = oar.ParamAttr{ name = "b" } }, xf + 1)
    end)
    local o1, o2 = ie()
    local loss = layers.mean(o1 * o1) + layers.mean(layers.tanh(o2))
    local gb = oar.default_main_program():global_block()
    return loss, { x, gb:var("w"), gb:var("b") }, { o1, o2 }
  end)
end

describe("IfElse", function()
  it("runs each row through its side and merges the outputs in row order", function()
    local r = build_example()
    local mask = { true, false, false, true, false }
    local out = CF.run(r, { x = X, c = bools(mask) }, r.extra)
    local w, b = param(r, "w"), param(r, "b")
    local want1, want2 = {}, {}
    for i, row in ipairs(X) do
      local o1, o2
      if mask[i] then
        o1, o2 = map(row, function(v) return 2 * v end), softmax(row)
      else
        o1, o2 = affine(row, w, b), map(row, function(v) return v + 1 end)
      end
      for _, v in ipairs(o1) do want1[#want1 + 1] = v end
      for _, v in ipairs(o2) do want2[#want2 + 1] = v end
    end
    CF.assert_near(CF.flat(out[1]), want1, 1e-12, "o1")
    CF.assert_near(CF.flat(out[2]), want2, 1e-12, "o2")
    assert.same({ 5, 3 }, out[1]:shape())
  end)

  it("has gradients for the input and the parameters of both sides", function()
    local r = build_example()
    CF.check_grads(r, { x = X, c = bools({ true, false, false, true, false }) })
  end)

  it("gives a side that receives no rows no work and zero gradients", function()
    local r = build_example()
    for _, mask in ipairs({ { true, true, true, true, true }, { false, false, false, false, false } }) do
      local out = CF.run(r, { x = X, c = bools(mask) }, r.extra)
      assert.same({ 5, 3 }, out[1]:shape())
      local g = CF.check_grads(r, { x = X, c = bools(mask) })
      if mask[1] then   -- the fc never ran: its parameters get zeros
        assert.same({ 0, 0, 0, 0, 0, 0, 0, 0, 0 }, CF.flat(g[2]))
        assert.same({ 0, 0, 0 }, CF.flat(g[3]))
      end
    end
  end)

  it("runs an empty batch: neither side runs, the outputs have 0 rows", function()
    local r = CF.build(function()
      local x = layers.data{ name = "x", shape = { 3 }, dtype = "float64" }
      local c = layers.data{ name = "c", shape = { 1 }, dtype = "bool" }
      x.stop_gradient = false
      local ie = layers.IfElse(c)
      ie:true_block(function() ie:output(layers.fc{ input = ie:input(x), size = 2 }) end)
      ie:false_block(function() ie:output(layers.fc{ input = ie:input(x), size = 2 }) end)
      local o = ie()
      return layers.reduce_sum{ input = o }, { x }, { o }
    end)
    local out = CF.run(r, { x = oar.Tensor{ shape = { 0, 3 }, dtype = "float64" },
                            c = oar.Tensor{ shape = { 0, 1 }, dtype = "bool" } }, { r.extra[1], r.grads[1] })
    assert.same({ 0, 2 }, out[1]:shape())
    assert.same({ 0, 3 }, out[2]:shape())
  end)

  it("works nested in a block of another IfElse", function()
    local r = CF.build(function()
      local x = layers.data{ name = "x", shape = { 3 }, dtype = "float64" }
      local c1 = layers.data{ name = "c1", shape = { 1 }, dtype = "bool" }
      local c2 = layers.data{ name = "c2", shape = { 1 }, dtype = "bool" }
      x.stop_gradient = false
      local outer = layers.IfElse(c1)
      outer:true_block(function()
        local xt = outer:input(x)
        local ct = outer:input(c2)
        local inner = layers.IfElse(ct)
        inner:true_block(function() inner:output(layers.tanh(inner:input(xt))) end)
        inner:false_block(function() inner:output(inner:input(xt) * 3) end)
        outer:output(inner())
      end)
      outer:false_block(function() outer:output(layers.exp(outer:input(x))) end)
      local o = outer()
      return layers.mean(o * o), { x }, { o }
    end)
    local m1 = { true, true, false, true, false }
    local m2 = { false, true, true, true, false }
    local feeds = { x = X, c1 = bools(m1), c2 = bools(m2) }
    local out = CF.flat(CF.run(r, feeds, r.extra)[1])
    local want = {}
    for i, row in ipairs(X) do
      local f
      if not m1[i] then f = math.exp
      elseif m2[i] then f = math.tanh
      else f = function(v) return 3 * v end end
      for _, v in ipairs(row) do want[#want + 1] = f(v) end
    end
    CF.assert_near(out, want, 1e-12, "nested")
    CF.check_grads(r, feeds)
    -- an inner side with no rows inside an outer side with no rows
    CF.check_grads(r, { x = X, c1 = bools({ false, false, false, false, true }), c2 = bools(m2) })
  end)

  it("splits sequences, not rows, when the input has a LoD", function()
    local r = CF.build(function()
      local x = layers.data{ name = "x", shape = { 1 }, dtype = "float64", lod_level = 1 }
      local c = layers.data{ name = "c", shape = { 1 }, dtype = "bool" }
      x.stop_gradient = false
      local ie = layers.IfElse(c)
      ie:true_block(function() ie:output(ie:input(x) * 10) end)
      ie:false_block(function() ie:output(layers.scale{ x = ie:input(x), bias = 1 }) end)
      local o = ie()
      return layers.mean(o * o), { x }, { o }
    end)
    local feeds = { x = { data = { { 1 }, { 2 }, { 3 }, { 4 }, { 5 }, { 6 } }, lod = { { 0, 2, 3, 6 } } },
                    c = bools({ false, true, false }) }
    local out = CF.run(r, feeds, r.extra)[1]
    assert.same({ 2, 3, 30, 5, 6, 7 }, CF.flat(out))
    CF.check_grads(r, feeds)
  end)

  it("returns the outputs of the only side when one side is built", function()
    local r = CF.build(function()
      local x = layers.data{ name = "x", shape = { 3 }, dtype = "float64" }
      local c = layers.data{ name = "c", shape = { 1 }, dtype = "bool" }
      local ie = layers.IfElse(c)
      ie:true_block(function() ie:output(ie:input(x) * 2) end)
      return nil, {}, { ie() }
    end, { no_backward = true })
    local out = CF.run(r, { x = X, c = bools({ true, false, false, true, false }) }, r.extra)[1]
    CF.assert_near(CF.flat(out), { 0.2, 0.4, 0.6, 2.0, 2.2, -2.4 }, 1e-12, "true rows")
  end)

  it("names misuse", function()
    local main = oar.Program()
    oar.program_guard(main, oar.Program(), function()
      local x = layers.data{ name = "x", shape = { 3 }, dtype = "float64" }
      local c = layers.data{ name = "c", shape = { 1 }, dtype = "bool" }
      expect_error(function() layers.IfElse(x) end, "IfElse", "'cond'", "bool")
      local ie = layers.IfElse(c)
      expect_error(function() ie:input(x) end, "IfElse:input", "inside true_block")
      expect_error(function() ie() end, "IfElse()", "no block gave outputs")
      ie:true_block(function() ie:output(ie:input(x), ie:input(x)) end)
      ie:false_block(function() ie:output(ie:input(x)) end)
      expect_error(function() ie() end, "IfElse()", "2 outputs", "1")
      expect_error(function() ie:true_block(function() end) end, "already built")
      -- an error inside a block leaves the program in its block 0
      local ie2 = layers.IfElse(c)
      expect_error(function() ie2:true_block(function() error("boom") end) end, "boom")
      assert.equal(0, main:current_block().idx)
    end)
  end)
end)
