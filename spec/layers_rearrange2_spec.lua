-- The layers of oar.layers.rearrange2: each builds its op with Fluid 1.8's
-- slots and attributes and runs to the values plain Lua computes; bad
-- arguments are refused naming the layer and the argument.
local oar = require("oar")
local layers = oar.layers

local L = require("spec.helpers.layer_run")
local run, op_of, refuses, in_prog, data = L.run, L.op_of, L.refuses, L.in_prog, L.data

local function near(want, got, tol)
  assert.equal(#want, #got)
  for i = 1, #want do assert.is_true(math.abs(want[i] - got[i]) <= (tol or 1e-6), i .. ": " .. got[i]) end
end

describe("oar.layers.rearrange2: creation", function()
  local m = { 1, 2, 3, 4, 5, 6 }   -- [2, 3]

  it("range, arange and linspace make sequences", function()
    local got, main = run({ 2, 3 }, m, function()
      return { layers.range(0, 10, 3, "int64"), layers.arange(4), layers.arange{ start = 1, ["end"] = 2, step = 0.25,
               dtype = "float32" }, layers.linspace(0, 1, 5) }
    end)
    assert.same({ 0, 3, 6, 9 }, got[1])
    assert.same({ 0, 1, 2, 3 }, got[2])
    near({ 1, 1.25, 1.5, 1.75 }, got[3])
    near({ 0, 0.25, 0.5, 0.75, 1 }, got[4])
    assert.equal(5, op_of(main, "linspace"):attr("dtype"))
    refuses(function() in_prog(function() layers.linspace(0, 1, 0) end) end, "linspace: 'num' must be a positive integer")
    refuses(function() in_prog(function() layers.range{ start = 0, stop = 1, step = 1, dtype = "int64" } end) end,
      "unknown argument 'stop'")
  end)

  it("size counts elements", function()
    local got = run({ 2, 3 }, m, function(x) return layers.size(x) end)
    assert.same({ { 6 } }, got)
  end)
end)

describe("oar.layers.rearrange2: rearranging", function()
  local m = { 1, 2, 3, 4, 5, 6 }   -- [2, 3]

  it("cross, diag_embed, meshgrid and index_sample", function()
    local got = run({ 2, 3 }, m, function(x)
      local y = layers.fill_constant{ shape = { 2, 3 }, dtype = "float32", value = 1 }
      local v = layers.fill_constant{ shape = { 2 }, dtype = "float32", value = 2 }
      local idx = layers.fill_constant{ shape = { 2, 2 }, dtype = "int64", value = 2 }
      local g = layers.meshgrid(v, layers.fill_constant{ shape = { 3 }, dtype = "float32", value = 1 })
      return { layers.cross{ x = x, y = y, axis = 1 }, layers.diag_embed(v), g[1], layers.index_sample(x, idx) }
    end)
    assert.same({ -1, 2, -1, -1, 2, -1 }, got[1])
    assert.same({ 2, 0, 0, 2 }, got[2])
    assert.same({ 2, 2, 2, 2, 2, 2 }, got[3])
    assert.same({ 3, 3, 6, 6 }, got[4])
    refuses(function() in_prog(function() layers.diag_embed{ input = data("x", { 3 }), dim1 = 0, dim2 = -2 } end) end,
      "diag_embed: 'dim1' = 0 and 'dim2' = -2 must be distinct dims")
  end)

  it("scatter and scatter_nd_add", function()
    local got, main = run({ 2, 3 }, m, function(x)
      local ids = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 1 }
      local u = layers.fill_constant{ shape = { 1, 3 }, dtype = "float32", value = 9 }
      local nd = layers.fill_constant{ shape = { 1, 2 }, dtype = "int64", value = 0 }
      local un = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 10 }
      return { layers.scatter{ input = x, index = ids, updates = u, overwrite = false }, layers.scatter_nd_add(x, nd, un) }
    end)
    assert.same({ 1, 2, 3, 9, 9, 9 }, got[1])
    assert.same({ 11, 2, 3, 4, 5, 6 }, got[2])
    assert.is_false(op_of(main, "scatter"):attr("overwrite"))
    refuses(function() in_prog(function() layers.scatter{ input = data("x", { 2 }), index = 1, updates = 2 } end) end,
      "scatter: 'index' must be a Variable")
  end)

  it("strided_slice and crop_tensor", function()
    local got, main = run({ 2, 3 }, m, function(x)
      local s = layers.fill_constant{ shape = { 1 }, dtype = "int32", value = 2 }
      return { layers.strided_slice{ input = x, axes = { 1 }, starts = { -1 }, ends = { -1000 }, strides = { -2 } },
               layers.strided_slice(x, { 0, 1 }, { 1, s }, { 2, 3 }, { 1, 1 }),
               layers.crop_tensor{ x = x, shape = { 1, -1 }, offsets = { 1, 1 } } }
    end)
    assert.same({ 3, 1, 6, 4 }, got[1])
    assert.same({ 6 }, got[2])
    assert.same({ 5, 6 }, got[3])
    local flags = {}
    for _, op in ipairs(main:global_block():ops()) do
      if op.type == "strided_slice" then flags[#flags + 1] = op:attr("infer_flags") end
    end
    assert.same({ { 1 }, { -1, -1 } }, flags)
    refuses(function() in_prog(function()
      layers.strided_slice{ input = data("x", { 3 }), axes = { 0 }, starts = { 0 }, ends = { 2 }, strides = { 0 } }
    end) end, "strided_slice: 'strides[1]' must be nonzero")
    refuses(function() in_prog(function() layers.crop_tensor{ x = data("x", { 3 }), shape = { 1, 1 } } end) end,
      "crop_tensor: 'shape' must be a list of 1 integers or a Variable")
  end)

  it("pixel_shuffle, shuffle_channel and space_to_depth", function()
    local got = run({ 2, 3 }, m, function()
      local x = layers.assign(oar.Tensor({ { { { 1 } }, { { 2 } }, { { 3 } }, { { 4 } } } }, "float32"))
      local v = {}
      for c = 1, 4 do v[c] = { { 4 * c - 3, 4 * c - 2 }, { 4 * c - 1, 4 * c } } end
      local s = layers.space_to_depth(layers.assign(oar.Tensor({ v }, "float32")), 2)
      return { layers.pixel_shuffle(x, 2), layers.shuffle_channel{ x = x, group = 2 }, s }
    end)
    assert.same({ 1, 2, 3, 4 }, got[1])
    assert.same({ 1, 3, 2, 4 }, got[2])
    -- Fluid's reorg order: X (0, k, j, i) lands at (i*2 + k % 2) + 4*(j*2 + k // 2): one out channel
    local want = {}
    for k = 0, 3 do for j = 0, 1 do for i = 0, 1 do
      want[i * 2 + k % 2 + 4 * (j * 2 + math.floor(k / 2)) + 1] = 4 * k + 2 * j + i + 1
    end end end
    assert.same(want, got[3])
    refuses(function() in_prog(function() layers.space_to_depth(data("x", { 1, 4, 2, 2 }), 1) end) end,
      "space_to_depth: 'blocksize' must be an integer >= 2")
    refuses(function() in_prog(function() layers.pixel_shuffle(data("x", { 1, 6, 2, 2 }), 2) end) end,
      "pixel_shuffle: x's 6 channels are not a multiple of upscale_factor^2 = 4")
  end)
end)
