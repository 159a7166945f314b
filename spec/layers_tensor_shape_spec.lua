-- The layers of oar.layers.tensor_shape: each builds its op with Fluid
-- 1.8's slots and attributes and runs to values plain Lua computes; bad
-- arguments are refused naming the layer and the argument.
local oar = require("oar")
local layers = oar.layers

local L = require("spec.helpers.layer_run")
local run, op_of, refuses, in_prog = L.run, L.op_of, L.refuses, L.in_prog

describe("oar.layers.tensor_shape", function()
  local m = { 1, 2, 3, 4, 5, 6 }   -- [2, 3]

  it("unbind, reverse and crop", function()
    local got, main = run({ 2, 3 }, m, function(x)
      local u = layers.unbind(x, 1)
      return { u[1], u[3], layers.reverse(x, 1), layers.reverse{ x = x, axis = { 0, 1 } },
               layers.crop{ x = x, shape = { 1, 2 }, offsets = { 1, 1 } } }
    end)
    assert.same({ 1, 4 }, got[1])
    assert.same({ 3, 6 }, got[2])
    assert.same({ 3, 2, 1, 6, 5, 4 }, got[3])
    assert.same({ 6, 5, 4, 3, 2, 1 }, got[4])
    assert.same({ 5, 6 }, got[5])
    assert.same({ 1 }, op_of(main, "reverse"):attr("axis"))
    refuses(function() in_prog(function() layers.unbind(layers.data{ name = "u", shape = { 2 } }, 3) end) end,
      "layers.unbind: axis (3) is out of range")
  end)

  it("pad2d and pad_constant_like", function()
    local got = run({ 1, 1, 2, 3 }, m, function(x)
      local y = layers.fill_constant{ shape = { 1, 2 }, dtype = "float32", value = 7 }
      return { layers.pad2d{ input = x, paddings = { 1, 0, 0, 1 }, pad_value = -1 },
               layers.pad2d{ input = x, paddings = { 0, 0, 1, 0 }, mode = "edge" },
               layers.pad_constant_like{ x = layers.fill_constant{ shape = { 2, 3 }, dtype = "float32", value = 0 },
                                         y = y, pad_value = 1 } }
    end)
    assert.same({ -1, -1, -1, -1, 1, 2, 3, -1, 4, 5, 6, -1 }, got[1])
    assert.same({ 1, 1, 2, 3, 4, 4, 5, 6 }, got[2])
    assert.same({ 7, 7, 1, 1, 1, 1 }, got[3])
    refuses(function() in_prog(function() layers.pad2d{ input = layers.data{ name = "p", shape = { 1, 2, 2 } }, mode = "wrap" } end) end,
      "mode")
  end)

  it("multiplex, unique, unique_with_counts, nonzero and equal_all", function()
    local got = run({ 2, 3 }, m, function(x)
      local y = layers.scale(x, 10)
      local ids = layers.assign(oar.Tensor({ { 1 }, { 0 } }, "int32"))
      local flat = layers.reshape(layers.cast(layers.fill_constant{ shape = { 2, 3 }, dtype = "float32", value = 2 }, "int64"), { 6 })
      local u, i, c = layers.unique_with_counts(flat, "int64")
      local u2, i2 = layers.unique(flat)
      return { layers.multiplex{ inputs = { x, y }, index = ids }, u, i, c, u2, i2,
               layers.nonzero(layers.greater_than(x, layers.fill_constant{ shape = { 2, 3 }, dtype = "float32", value = 4 })),
               layers.equal_all(x, x), layers.equal_all(x, y) }
    end)
    assert.same({ 10, 20, 30, 4, 5, 6 }, got[1])
    assert.same({ 2 }, got[2])
    assert.same({ 0, 0, 0, 0, 0, 0 }, got[3])
    assert.same({ 6 }, got[4])
    assert.same({ 2 }, got[5])
    assert.same({ 0, 0, 0, 0, 0, 0 }, got[6])
    assert.same({ 1, 1, 1, 2 }, got[7])
    assert.same({ true }, got[8])
    assert.same({ false }, got[9])
    refuses(function() in_prog(function() layers.unique{ x = layers.data{ name = "q", shape = { 3 } }, dtype = "float32" } end) end,
      "dtype")
  end)
end)

describe("oar.layers.tensor_window", function()
  it("temporal_shift, unfold, partial_concat and partial_sum", function()
    local vals = {}
    for i = 1, 8 do vals[i] = i end
    local got, main = run({ 2, 4, 1, 1 }, vals, function(x)
      local m = layers.reshape(x, { 2, 4 })
      return { layers.temporal_shift{ x = x, seg_num = 2, shift_ratio = 0.25 },
               layers.unfold{ x = layers.reshape(x, { 1, 1, 2, 4 }), kernel_sizes = { 1, 2 }, strides = { 1, 2 } },
               layers.partial_concat{ input = { m, m }, start_index = 1, length = 2 },
               layers.partial_sum{ input = { m, m }, start_index = -1 } }
    end)
    -- channel 0 from the previous frame, channel 1 from the next, 2 and 3 kept
    assert.same({ 0, 6, 3, 4, 1, 0, 7, 8 }, got[1])
    assert.same({ 1, 3, 5, 7, 2, 4, 6, 8 }, got[2])
    assert.same({ 2, 3, 2, 3, 6, 7, 6, 7 }, got[3])
    assert.same({ 8, 16 }, got[4])
    assert.same({ 1, 2 }, op_of(main, "unfold"):attr("strides"))
    refuses(function() in_prog(function() layers.temporal_shift{ x = layers.data{ name = "t", shape = { 4, 1, 1 } } } end) end,
      "seg_num")
  end)
end)

describe("oar.layers.unbind's gradient", function()
  it("is zero for the slices no loss reached", function()
    local main, startup = oar.Program(), oar.Program()
    local g
    oar.program_guard(main, startup, function()
      local x = layers.data{ name = "x", shape = { 2, 3 }, dtype = "float64", append_batch_size = false }
      x.stop_gradient = false
      local u = layers.unbind(x, 1)
      g = oar.gradients({ layers.reduce_sum(layers.scale(u[2], 3)) }, { x })[1]
    end)
    local res = oar.Executor():run(main, { feed = { x = oar.Tensor({ { 1, 2, 3 }, { 4, 5, 6 } }, "float64") },
                                           fetch_list = { g } })
    assert.same({ 0, 3, 0, 0, 3, 0 }, require("spec.helpers.cf_check").flat(res[1]))
  end)
end)
