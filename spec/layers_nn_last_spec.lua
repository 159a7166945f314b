-- The layers of oar.layers.nn_last composed from existing ops as Fluid
-- 1.8's nn.py composes them: lod_append (lod_reset with append),
-- image_resize_short (image_resize with the short side), scatter_nd
-- (scatter_nd_add onto zeros) and rank (an int32 constant). Values against
-- plain Lua; bad arguments refused naming the layer.
local oar = require("oar")
local layers = oar.layers
local R = require("spec.helpers.random")

local function numel(s)
  local k = 1
  for _, v in ipairs(s) do k = k * v end
  return k
end

-- builds with build(), feeds {name = Tensor}, fetches the returned Variables
local function run(build, feed)
  local main, startup = oar.Program(), oar.Program()
  local outs
  oar.program_guard(main, startup, function() outs = { build() } end)
  local exe = oar.Executor(oar.CPUPlace())
  exe:run(startup)
  local got = exe:run(main, { feed = feed or {}, fetch_list = outs })
  local res = {}
  for i, t in ipairs(got) do
    local flat, d = {}, t:data()
    for j = 1, numel(t:shape()) do flat[j] = tonumber(d[j - 1]) end
    res[i] = { data = flat, shape = t:shape(), lod = t:lod(), dtype = t:dtype() }
  end
  return res, main
end

local function tensor(shape, dtype, values, lod)
  local t = oar.Tensor{ shape = shape, dtype = dtype, lod = lod }
  local p = t:data()
  for i = 1, #values do p[i - 1] = values[i] end
  return t
end

local function types_of(main)
  local r = {}
  for _, op in ipairs(main:global_block():ops()) do r[#r + 1] = op.type end
  return table.concat(r, " ")
end

describe("layers.lod_append", function()
  it("appends a level of offsets below x's LoD (lod_reset, append)", function()
    -- oar checks the result like any LoD: the new level has one sequence per
    -- row of x's last level
    local x = tensor({ 4, 1 }, "float32", { 1, 2, 3, 4 }, { { 0, 1, 4 } })
    local got, main = run(function()
      local v = layers.data{ name = "x", shape = { 1 }, dtype = "float32", lod_level = 1 }
      return layers.lod_append(v, { 0, 1, 2, 2, 4 })
    end, { x = x })
    assert.same({ 1, 2, 3, 4 }, got[1].data)
    assert.same({ { 0, 1, 4 }, { 0, 1, 2, 2, 4 } }, got[1].lod)
    local op = main:global_block():ops()[1]
    assert.equal("lod_reset", op.type)
    assert.is_true(op:attr("append"))
    assert.same({ 0, 1, 2, 2, 4 }, op:attr("target_lod"))
  end)

  it("takes the level from a Variable (input Y)", function()
    local x = tensor({ 3, 1 }, "float32", { 1, 2, 3 }, { { 0, 1, 3 } })
    local y = tensor({ 4 }, "int32", { 0, 2, 2, 3 })
    local got, main = run(function()
      local v = layers.data{ name = "x", shape = { 1 }, dtype = "float32", lod_level = 1 }
      local l = layers.data{ name = "y", shape = { 4 }, dtype = "int32", append_batch_size = false }
      return layers.lod_append{ x = v, level = l }
    end, { x = x, y = y })
    assert.same({ { 0, 1, 3 }, { 0, 2, 2, 3 } }, got[1].lod)
    assert.equal(1, #main:global_block():ops()[1]:input("Y"))
  end)

  it("refuses a level that is neither a list nor a Variable", function()
    oar.program_guard(oar.Program(), oar.Program(), function()
      local v = layers.data{ name = "x", shape = { 1 }, dtype = "float32", lod_level = 1 }
      assert.has_error(function() layers.lod_append(v, 3) end)
      local ok, err = pcall(layers.lod_append, v, 3)
      assert.is_false(ok)
      assert.matches("lod_append: 'level' must be a list of offsets or a Variable", tostring(err), 1, true)
    end)
  end)
end)

describe("layers.image_resize_short", function()
  it("scales the short side to out_short_len and the long one by the same ratio", function()
    -- H 4 (short), W 6: out 6 x floor(6 * 6 / 4 + 0.5) = 6 x 9
    local xv = R.symmetric(2 * 4 * 6, 11)
    local got, main = run(function()
      local v = layers.data{ name = "x", shape = { 1, 2, 4, 6 }, dtype = "float32", append_batch_size = false }
      return layers.image_resize_short(v, 6)
    end, { x = tensor({ 1, 2, 4, 6 }, "float32", xv) })
    assert.same({ 1, 2, 6, 9 }, got[1].shape)
    local op = main:global_block():ops()[1]
    assert.equal("bilinear_interp", op.type)
    assert.equal(6, op:attr("out_h"))
    assert.equal(9, op:attr("out_w"))
    -- bilinear with align_corners: the corners are the input's
    assert.is_true(math.abs(got[1].data[1] - xv[1]) < 1e-6)
    assert.is_true(math.abs(got[1].data[9] - xv[6]) < 1e-6)
  end)

  it("the width short (rounding half up), and NEAREST", function()
    local got, main = run(function()
      local v = layers.data{ name = "x", shape = { 3, 7, 5 }, dtype = "float32" }
      local y = layers.image_resize_short{ input = v, out_short_len = 3, resample = "NEAREST" }
      assert.same({ -1, 3, 4, 3 }, y.shape)   -- floor(7 * 3 / 5 + 0.5) = 4
      return y
    end, { x = tensor({ 1, 3, 7, 5 }, "float32", R.symmetric(105, 5)) })
    assert.same({ 1, 3, 4, 3 }, got[1].shape)
    assert.equal("nearest_interp", main:global_block():ops()[1].type)
  end)

  it("refuses a non-4-D input and unknown H or W", function()
    oar.program_guard(oar.Program(), oar.Program(), function()
      local v = layers.data{ name = "x", shape = { 3, 7 }, dtype = "float32" }
      local ok, err = pcall(layers.image_resize_short, v, 3)
      assert.is_false(ok)
      assert.matches("image_resize_short: 'input' must be 4-D [N, C, H, W], got shape [-1, 3, 7]", tostring(err), 1, true)
      local w = layers.data{ name = "w", shape = { 1, 3, -1, 7 }, dtype = "float32", append_batch_size = false }
      ok, err = pcall(layers.image_resize_short, w, 3)
      assert.is_false(ok)
      assert.matches("image_resize_short: the height and width of 'input' must be known", tostring(err), 1, true)
    end)
  end)
end)

describe("layers.scatter_nd", function()
  it("scatters into zeros, repeated indices adding up (test_scatter_nd_op.py's API case)", function()
    -- index [[1, 1], [0, 1], [1, 3]] into shape [3, 5, 9, 10]; updates [3, 9, 10]
    local shape = { 3, 5, 9, 10 }
    local idx = { 1, 1, 0, 1, 1, 1 }   -- rows (1,1), (0,1), (1,1): the first and last collide
    local upd = R.symmetric(3 * 9 * 10, 23)
    local got, main = run(function()
      local i = layers.data{ name = "i", shape = { 3, 2 }, dtype = "int64", append_batch_size = false }
      local u = layers.data{ name = "u", shape = { 3, 9, 10 }, dtype = "float64", append_batch_size = false }
      return layers.scatter_nd(i, u, shape)
    end, { i = tensor({ 3, 2 }, "int64", idx), u = tensor({ 3, 9, 10 }, "float64", upd) })
    local want = {}
    for k = 1, numel(shape) do want[k] = 0 end
    for r = 0, 2 do
      local base = (idx[2 * r + 1] * 5 + idx[2 * r + 2]) * 90
      for k = 1, 90 do want[base + k] = want[base + k] + upd[r * 90 + k] end
    end
    assert.same(shape, got[1].shape)
    for k = 1, #want do assert.is_true(math.abs(want[k] - got[1].data[k]) < 1e-12, "element " .. k) end
    assert.equal("fill_constant scatter_nd_add", types_of(main))
    assert.equal("float64", got[1].dtype)
  end)

  it("refuses a missing shape", function()
    oar.program_guard(oar.Program(), oar.Program(), function()
      local i = layers.data{ name = "i", shape = { 3, 2 }, dtype = "int64" }
      local u = layers.data{ name = "u", shape = { 3 }, dtype = "float32" }
      local ok, err = pcall(layers.scatter_nd, { index = i, updates = u })
      assert.is_false(ok)
      assert.matches("scatter_nd: 'shape' must be a list of integers", tostring(err), 1, true)
    end)
  end)
end)

describe("layers.rank", function()
  it("is the number of dims, an int32 constant", function()
    local got, main = run(function()
      local a = layers.data{ name = "a", shape = { 3, 100, 100 }, dtype = "float32", append_batch_size = false }
      local b = layers.data{ name = "b", shape = { 4 }, dtype = "float32" }
      return layers.rank(a), layers.rank{ input = b }
    end)
    assert.same({ 3 }, got[1].data)
    assert.same({ 2 }, got[2].data)
    assert.equal("int32", got[1].dtype)
    assert.equal("assign_value assign_value", types_of(main))
  end)

  it("refuses a non-Variable", function()
    local ok, err = pcall(layers.rank, 3)
    assert.is_false(ok)
    assert.matches("rank: 'input' must be a Variable", tostring(err), 1, true)
  end)
end)
