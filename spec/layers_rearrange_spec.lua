-- The layers of oar.layers.rearrange: each builds its op with Fluid 1.8's
-- slots and attributes and runs to the values plain Lua computes; bad
-- arguments are refused naming the layer and the argument.
local oar = require("oar")
local layers = oar.layers

local L = require("spec.helpers.layer_run")
local run, op_of, refuses, in_prog = L.run, L.op_of, L.refuses, L.in_prog

describe("oar.layers.rearrange", function()
  local m = { 1, 2, 3, 4, 5, 6 }   -- [2, 3]

  it("unstack splits along axis into num slices", function()
    local got, main = run({ 2, 3 }, m, function(x) return layers.unstack{ x = x, axis = 1 } end)
    assert.same({ { 1, 4 }, { 2, 5 }, { 3, 6 } }, got)
    local op = op_of(main, "unstack")
    assert.equal(1, op:attr("axis"))
    assert.equal(3, op:attr("num"))
    got = run({ 2, 3 }, m, function(x) return layers.unstack(x) end)
    assert.same({ { 1, 2, 3 }, { 4, 5, 6 } }, got)
    refuses(function() in_prog(function()
      layers.unstack{ x = layers.data{ name = "x", shape = { 2, 3 }, append_batch_size = false }, num = 3 }
    end) end, "unstack: 'num' = 3 differs from x's dim 0 (2)")
  end)

  it("expand_as repeats x to target_tensor's shape", function()
    local got = run({ 1, 3 }, { 1, 2, 3 }, function(x)
      local t = layers.fill_constant{ shape = { 2, 6 }, dtype = "float32", value = 0 }
      return layers.expand_as{ x = x, target_tensor = t }
    end)
    assert.same({ { 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3 } }, got)
    refuses(function() in_prog(function()
      local x = layers.data{ name = "x", shape = { 2, 3 }, append_batch_size = false }
      layers.expand_as(x, layers.fill_constant{ shape = { 6 }, dtype = "float32", value = 0 })
    end) end, "expand_as: x has 2 dims and target_tensor 1")
  end)

  it("flip reverses the dims in axis (the op's attr dims)", function()
    local got, main = run({ 2, 3 }, m, function(x) return layers.flip(x, { -1 }) end)
    assert.same({ { 3, 2, 1, 6, 5, 4 } }, got)
    assert.same({ 1 }, op_of(main, "flip"):attr("dims"))
    got = run({ 2, 3 }, m, function(x) return layers.flip{ x = x, axis = { 0, 1 } } end)
    assert.same({ { 6, 5, 4, 3, 2, 1 } }, got)
    refuses(function() in_prog(function()
      layers.flip{ x = layers.data{ name = "x", shape = { 2, 3 }, append_batch_size = false }, axis = 2 }
    end) end, "flip: 'axis[1]' = 2 is out of range")
  end)

  it("roll shifts along axis, or the flat list", function()
    local got, main = run({ 2, 3 }, m, function(x) return layers.roll{ x = x, shifts = 1, axis = 1 } end)
    assert.same({ { 3, 1, 2, 6, 4, 5 } }, got)
    assert.same({ 1 }, op_of(main, "roll"):attr("dims"))
    got = run({ 2, 3 }, m, function(x) return layers.roll(x, -2) end)
    assert.same({ { 3, 4, 5, 6, 1, 2 } }, got)
    refuses(function() in_prog(function()
      layers.roll{ x = layers.data{ name = "x", shape = { 2, 3 }, append_batch_size = false }, shifts = { 1, 2 } }
    end) end, "roll: 'shifts' must have one value")
  end)

  it("tril and triu keep a triangle", function()
    local got, main = run({ 2, 3 }, m, function(x) return { layers.tril(x), layers.triu{ x = x, diagonal = 1 } } end)
    assert.same({ { 1, 0, 0, 4, 5, 0 }, { 0, 2, 3, 0, 0, 6 } }, got)
    local op = op_of(main, "tril_triu")
    assert.is_true(op:attr("lower"))
    assert.equal(0, op:attr("diagonal"))
    refuses(function() in_prog(function()
      layers.tril{ x = layers.data{ name = "x", shape = { 3 }, append_batch_size = false } }
    end) end, "tril: x has 1 dims")
    refuses(function() in_prog(function()
      layers.triu{ x = layers.data{ name = "x", shape = { 3, 3 }, append_batch_size = false }, diag = 1 }
    end) end, "unknown argument 'diag'")
  end)
end)

describe("oar.layers.rearrange: trace, kron, diag, eye", function()
  it("trace sums a diagonal", function()
    local got, main = run({ 2, 3 }, { 1, 2, 3, 4, 5, 6 }, function(x)
      return { layers.trace(x), layers.trace{ x = x, offset = 1 } }
    end)
    assert.same({ { 6 }, { 8 } }, got)
    assert.equal(1, op_of(main, "trace"):attr("axis2"))
    refuses(function() in_prog(function()
      layers.trace{ x = layers.data{ name = "x", shape = { 2, 3 }, append_batch_size = false }, axis1 = -1 }
    end) end, "trace: 'axis1' and 'axis2' name the same dim 1")
  end)

  it("kron multiplies every pair", function()
    local got = run({ 2 }, { 1, 2 }, function(x)
      return layers.kron(x, layers.fill_constant{ shape = { 2 }, dtype = "float32", value = 3 })
    end)
    assert.same({ { 3, 3, 6, 6 } }, got)
  end)

  it("diag makes a square matrix and eye an identity", function()
    local got = run({ 2 }, { 4, 5 }, function(x) return { layers.diag(x), layers.eye{ num_rows = 2, num_columns = 3 } } end)
    assert.same({ { 4, 0, 0, 5 }, { 1, 0, 0, 0, 1, 0 } }, got)
    got = run({ 2 }, { 4, 5 }, function() return layers.eye{ num_rows = 2, batch_shape = { 2 } } end)
    assert.same({ { 1, 0, 0, 1, 1, 0, 0, 1 } }, got)
    local b
    in_prog(function()
      b = layers.eye{ num_rows = 2, batch_shape = { 3 }, dtype = "int64" }
      assert.same({ 3, 2, 2 }, b.shape)
      assert.equal("int64", b.dtype)
    end)
    refuses(function() in_prog(function() layers.eye{ num_rows = 2, dtype = "bool" } end) end,
      "float32, float64, int32 or int64")
  end)
end)
