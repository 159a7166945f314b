-- The API contract (docs/api.md): layers: shape, type and index layers; losses and metrics; comparisons and logic. One of the
-- api_contract_*_spec.lua files (one per API area): every table row, bullet,
-- keyword default and code-sample call has at least one assertion, with
-- expected values worked out by hand in the comments.
local oar = require("oar")
local A = require("spec.helpers.api")
local layers = oar.layers

local THIS_FILE = "api_contract_layers_tensor_spec.lua"

-- ---- helpers (spec/helpers/api.lua) ---------------------------------------------
local errmsg, eval, near, op_types, contains = A.errmsg, A.eval, A.near, A.op_types, A.contains
local build, run = A.build, A.run
local Constant, const_attr, X23 = oar.initializer.Constant, A.const_attr, A.X23


describe("API: shape, type and index layers", function()
  it("reshape{x=, shape=}, transpose{x=, perm=}, concat{input=, axis=}", function()
    local out, main = eval(function()
      local x = layers.data{ name = "x", shape = { 2, 3 }, append_batch_size = false }
      local r = layers.reshape{ x = x, shape = { 3, 2 } }
      local r2 = layers.reshape{ x = x, shape = { -1 } }
      return { r, r2, layers.transpose{ x = x, perm = { 1, 0 } }, layers.concat{ input = { x, x }, axis = 1 },
               layers.concat{ input = { x, x } } }
    end, { x = X23 })
    near({ { 1, 2 }, { 3, 4 }, { 5, 6 } }, out[1]:totable())
    near({ 1, 2, 3, 4, 5, 6 }, out[2]:totable())
    near({ { 1, 4 }, { 2, 5 }, { 3, 6 } }, out[3]:totable())
    near({ { 1, 2, 3, 1, 2, 3 }, { 4, 5, 6, 4, 5, 6 } }, out[4]:totable())
    near({ { 1, 2, 3 }, { 4, 5, 6 }, { 1, 2, 3 }, { 4, 5, 6 } }, out[5]:totable())   -- axis defaults to 0
    assert.truthy(main)
  end)

  it("split{input=, num_or_sections=, dim=} returns a list", function()
    local parts, parts2
    local main, startup = build(function()
      local x = layers.data{ name = "x", shape = { 2, 3 }, append_batch_size = false }
      parts = layers.split{ input = x, num_or_sections = 3, dim = 1 }
      parts2 = layers.split{ input = x, num_or_sections = { 1, 2 }, dim = 1 }
    end)
    assert.are.equal("table", type(parts))
    assert.are.equal(3, #parts)
    assert.are.equal(2, #parts2)
    for _, p in ipairs(parts) do assert.is_true(oar.is_variable(p)) end
    assert.are.same({ 2, 1 }, parts[1].shape)
    assert.are.same({ 2, 2 }, parts2[2].shape)
    local out = run(main, startup, { x = X23 }, { parts[1], parts[2], parts[3], parts2[1], parts2[2] })
    near({ { 1 }, { 4 } }, out[1]:totable())
    near({ { 2 }, { 5 } }, out[2]:totable())
    near({ { 3 }, { 6 } }, out[3]:totable())
    near({ { 1 }, { 4 } }, out[4]:totable())
    near({ { 2, 3 }, { 5, 6 } }, out[5]:totable())
  end)

  it("cast{x=, dtype=}, fill_constant{shape=, dtype=, value=}", function()
    local out = eval(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      local c = layers.cast{ x = x, dtype = "int32" }
      local d = layers.cast{ x = c, dtype = "float64" }
      return { c, d, layers.fill_constant{ shape = { 2, 2 }, dtype = "int64", value = 7 },
               layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 0.25 } }
    end, { x = { { 1, -2, 3 } } })
    assert.are.equal("int32", out[1]:dtype())
    assert.are.same({ { 1, -2, 3 } }, out[1]:totable())
    assert.are.equal("float64", out[2]:dtype())
    assert.are.same({ { 1, -2, 3 } }, out[2]:totable())
    assert.are.equal("int64", out[3]:dtype())
    assert.are.same({ { 7, 7 }, { 7, 7 } }, out[3]:totable())
    near({ 0.25 }, out[4]:totable())
  end)

  it("assign(input, output): output optional", function()
    local fresh, target, ret
    local main, startup = build(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      fresh = layers.assign(x)
      target = layers.create_tensor{ dtype = "float32" }
      ret = layers.assign(layers.scale{ x = x, scale = 2 }, target)
    end)
    assert.are_not.equal(fresh.name, "x")
    assert.are.equal(target, ret)
    local out = run(main, startup, { x = X23 }, { fresh, target })
    near(X23, out[1]:totable())
    near({ { 2, 4, 6 }, { 8, 10, 12 } }, out[2]:totable())
    -- a table of numbers is a constant
    local c = eval(function() return layers.assign({ { 1, 2 }, { 3, 4 } }) end)
    near({ { 1, 2 }, { 3, 4 } }, c[1]:totable())
  end)

  it("argmax{x=, axis=} and topk{input=, k=} (values AND indices)", function()
    local out = eval(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      local v, i = layers.topk{ input = x, k = 2 }
      return { layers.argmax{ x = x, axis = 1 }, layers.argmax{ x = x, axis = 0 }, v, i }
    end, { x = { { 1, 5, 3 }, { 7, 2, 9 } } })
    assert.are.equal("int64", out[1]:dtype())
    assert.are.same({ 1, 2 }, out[1]:totable())    -- 0-based positions of 5 and 9
    assert.are.same({ 1, 0, 1 }, out[2]:totable())
    near({ { 5, 3 }, { 9, 7 } }, out[3]:totable())
    assert.are.equal("int64", out[4]:dtype())
    assert.are.same({ { 1, 2 }, { 2, 0 } }, out[4]:totable())
  end)
end)

describe("API: losses and metrics", function()
  it("cross_entropy, softmax_with_cross_entropy, square_error_cost, sigmoid_cross_entropy_with_logits", function()
    local out = eval(function()
      local p = layers.data{ name = "p", shape = { 2 } }
      local lbl = layers.data{ name = "lbl", shape = { 1 }, dtype = "int64" }
      local logits = layers.data{ name = "logits", shape = { 2 } }
      local a = layers.data{ name = "a", shape = { 1 } }
      local b = layers.data{ name = "b", shape = { 1 } }
      local z = layers.data{ name = "z", shape = { 1 } }
      return { layers.cross_entropy{ input = p, label = lbl },
               layers.softmax_with_cross_entropy{ logits = logits, label = lbl },
               layers.square_error_cost{ input = a, label = b },
               layers.sigmoid_cross_entropy_with_logits{ x = a, label = z } }
    end, { p = { { 0.2, 0.8 }, { 0.6, 0.4 } }, lbl = oar.Tensor({ { 1 }, { 0 } }, "int64"),
           logits = { { 0, math.log(3) }, { 0, math.log(3) } },
           a = { { 0 }, { -1 } }, b = { { 3 }, { 2 } }, z = { { 1 }, { 0.5 } } })
    near({ { -math.log(0.8) }, { -math.log(0.6) } }, out[1]:totable())
    near({ { -math.log(0.75) }, { -math.log(0.25) } }, out[2]:totable())   -- softmax {1/4, 3/4}
    near({ { 9 }, { 9 } }, out[3]:totable())
    -- max(x,0) - x*z + log(1 + e^-|x|)
    near({ { math.log(2) }, { 0.5 + math.log(1 + math.exp(-1)) } }, out[4]:totable())
  end)

  it("accuracy{input=, label=, k=1}", function()
    local out = eval(function()
      local p = layers.data{ name = "p", shape = { 2 } }
      local lbl = layers.data{ name = "lbl", shape = { 1 }, dtype = "int64" }
      return { layers.accuracy{ input = p, label = lbl }, layers.accuracy{ input = p, label = lbl, k = 2 } }
    end, { p = { { 0.1, 0.9 }, { 0.8, 0.2 }, { 0.3, 0.7 } }, lbl = oar.Tensor({ { 1 }, { 1 }, { 0 } }, "int64") })
    near({ 1 / 3 }, out[1]:totable())
    near({ 1 }, out[2]:totable())
  end)
end)

describe("API: comparisons and logic", function()
  it("less_than/greater_than/equal broadcast like elementwise ops and write into cond", function()
    local cond, ret
    local main, startup, lt, gt, eq = build(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      local y = layers.data{ name = "y", shape = { 3 }, append_batch_size = false }
      cond = layers.create_tensor{ dtype = "bool" }
      ret = layers.less_than{ x = x, y = y, cond = cond }
      return layers.less_than{ x = x, y = y }, layers.greater_than{ x = x, y = y }, layers.equal{ x = x, y = y }
    end)
    assert.are.equal(cond, ret)
    assert.are.equal("bool", lt.dtype)
    local out = run(main, startup, { x = { { 1, 5, 3 }, { 7, 2, 9 } }, y = { 3, 3, 3 } }, { lt, gt, eq, cond })
    assert.are.same({ { true, false, false }, { false, true, false } }, out[1]:totable())
    assert.are.same({ { false, true, false }, { true, false, true } }, out[2]:totable())
    assert.are.same({ { false, false, true }, { false, false, false } }, out[3]:totable())
    assert.are.same(out[1]:totable(), out[4]:totable())
  end)

  it("logical_and/or/not", function()
    local out = eval(function()
      local a = layers.data{ name = "a", shape = { 4 }, dtype = "bool", append_batch_size = false }
      local b = layers.data{ name = "b", shape = { 4 }, dtype = "bool", append_batch_size = false }
      return { layers.logical_and{ x = a, y = b }, layers.logical_or{ x = a, y = b }, layers.logical_not{ x = a },
               layers.logical_not(a) }
    end, { a = oar.Tensor({ true, false, true, false }, "bool"), b = oar.Tensor({ true, true, false, false }, "bool") })
    assert.are.same({ true, false, false, false }, out[1]:totable())
    assert.are.same({ true, true, true, false }, out[2]:totable())
    assert.are.same({ false, true, false, true }, out[3]:totable())
    assert.are.same({ false, true, false, true }, out[4]:totable())
  end)
end)
