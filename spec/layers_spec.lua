-- oar.layers: shapes from compile-time inference, parameters, argument
-- checks, and values after running (expected values computed in Lua).
local oar = require("oar")
local A = require("spec.helpers.api")
local layers = oar.layers
local Constant = oar.initializer.Constant

local function errmsg(fn, ...)
  local ok, err = pcall(fn, ...)
  assert.is_false(ok, "expected an error")
  return tostring(err)
end


local build = A.build

local run = A.run

local function near(expect, got, tol, path)
  tol = tol or 1e-5
  path = path or ""
  if type(expect) == "table" then
    assert.are.equal(#expect, #got, "length at " .. path)
    for i = 1, #expect do near(expect[i], got[i], tol, path .. "[" .. i .. "]") end
  else
    assert.is_true(math.abs(expect - got) <= tol * math.max(1, math.abs(expect)),
      string.format("%s: expected %.7g, got %.7g", path, expect, got))
  end
end

local function op_types(prog)
  local t = {}
  for _, op in ipairs(prog:global_block():ops()) do t[#t + 1] = op.type end
  return t
end

describe("data", function()
  it("prepends the batch dimension and stops gradients", function()
    local main, _, x, y, z = build(function()
      return layers.data{ name = "x", shape = { 13 } },
             layers.data{ name = "y", shape = { 2, 3 }, append_batch_size = false, dtype = "int64" },
             layers.data{ name = "z", shape = { -1, 5 }, lod_level = 1 }
    end)
    assert.are.same({ -1, 13 }, x.shape)
    assert.is_true(x.stop_gradient)
    assert.is_true(x.need_check_feed)
    assert.are.same({ 2, 3 }, y.shape)
    assert.are.equal("int64", y.dtype)
    assert.are.same({ -1, 5 }, z.shape)
    assert.are.equal(1, z.lod_level)
    assert.are.equal(0, x.block.idx)
    assert.are.equal(main, x.block.program)
    assert.matches("data: 'name' must be a non%-empty string, got nil", errmsg(layers.data, { shape = { 1 } }))
  end)
end)

describe("fc", function()
  it("creates weight and bias named like Fluid, initialized in startup", function()
    local main, startup, out = build(function()
      local x = layers.data{ name = "x", shape = { 4 } }
      return layers.fc{ input = x, size = 3, act = "relu" }
    end)
    assert.are.same({ -1, 3 }, out.shape)
    local w = main:global_block():var("fc_0.w_0")
    local b = main:global_block():var("fc_0.b_0")
    assert.is_true(oar.is_parameter(w))
    assert.are.same({ 4, 3 }, w.shape)
    assert.are.same({ 3 }, b.shape)
    assert.are.same({ "mul", "elementwise_add", "relu" }, op_types(main))
    -- the startup program initializes both; the main program does not
    local init = {}
    for _, op in ipairs(startup:global_block():ops()) do init[op:output("Out")[1]] = op.type end
    assert.are.equal("uniform_random", init["fc_0.w_0"])   -- Xavier
    assert.are.equal("fill_constant", init["fc_0.b_0"])
    assert.is_true(startup:global_block():var("fc_0.w_0").persistable)
  end)

  it("computes x W + b with constant parameters", function()
    local main, startup, out = build(function()
      local x = layers.data{ name = "x", shape = { 2 } }
      return layers.fc{ input = x, size = 3, param_attr = { initializer = Constant{ value = 0.5 } },
                        bias_attr = oar.ParamAttr{ initializer = Constant{ value = -1 } } }
    end)
    local got = run(main, startup, { x = { { 1, 2 }, { 3, -4 } } }, { out })[1]:totable()
    -- each output = 0.5 * (x1 + x2) - 1
    near({ { 0.5, 0.5, 0.5 }, { -1.5, -1.5, -1.5 } }, got)
  end)

  it("sums one weight per input, honours bias_attr=false and num_flatten_dims", function()
    local main, _, out, out2 = build(function()
      local a = layers.data{ name = "a", shape = { 2 } }
      local b = layers.data{ name = "b", shape = { 5 } }
      local c = layers.data{ name = "c", shape = { 3, 4 } }
      return layers.fc{ input = { a, b }, size = 6, bias_attr = false, param_attr = { "wa", "wb" } },
             layers.fc{ input = c, size = 7, num_flatten_dims = 2 }
    end)
    assert.are.same({ -1, 6 }, out.shape)
    assert.are.same({ 2, 6 }, main:global_block():var("wa").shape)
    assert.are.same({ 5, 6 }, main:global_block():var("wb").shape)
    assert.are.same({ -1, 3, 7 }, out2.shape)
    assert.are.same({ 4, 7 }, main:global_block():var("fc_1.w_0").shape)
    local types = op_types(main)
    assert.are.same({ "mul", "mul", "sum", "mul", "elementwise_add" }, types)
  end)

  it("shares a parameter given the same name", function()
    local main = build(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      layers.fc{ input = x, size = 2, param_attr = "shared_w", bias_attr = false }
      layers.fc{ input = x, size = 2, param_attr = "shared_w", bias_attr = false }
    end)
    local n = 0
    for _, v in ipairs(main:global_block():all_parameters()) do
      if v.name == "shared_w" then n = n + 1 end
    end
    assert.are.equal(1, n)
  end)

  it("checks its arguments", function()
    build(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      assert.matches("fc: 'size' must be a positive integer, got nil", errmsg(layers.fc, { input = x }))
      assert.matches("fc: 'size' must be a positive integer, got number %-2", errmsg(layers.fc, { input = x, size = -2 }))
      assert.matches("fc: 'input' must be a Variable or a list of Variables, got nil", errmsg(layers.fc, { size = 2 }))
      assert.matches("layers_spec.lua:%d+", errmsg(layers.fc, { size = 2 }))
      assert.matches("num_flatten_dims", errmsg(layers.fc, { input = x, size = 2, num_flatten_dims = 2 }))
    end)
  end)
end)

describe("activations and elementwise layers", function()
  local X = { { -2, -0.5, 0 }, { 0.5, 1, 3 } }

  local function map(f)
    local out = {}
    for i, row in ipairs(X) do
      out[i] = {}
      for j, v in ipairs(row) do out[i][j] = f(v) end
    end
    return out
  end

  it("computes activations, positional or as tables", function()
    local main, startup, outs = build(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      return { layers.relu(x), layers.sigmoid{ x = x }, layers.tanh(x), layers.exp(x), layers.abs(x),
               layers.leaky_relu{ x = x, alpha = 0.1 }, layers.elu(x), layers.square(x) }
    end)
    local got = run(main, startup, { x = X }, outs)
    near(map(function(v) return math.max(v, 0) end), got[1]:totable())
    near(map(function(v) return 1 / (1 + math.exp(-v)) end), got[2]:totable())
    near(map(math.tanh), got[3]:totable())
    near(map(math.exp), got[4]:totable())
    near(map(math.abs), got[5]:totable())
    near(map(function(v) return v > 0 and v or 0.1 * v end), got[6]:totable())
    near(map(function(v) return v > 0 and v or math.exp(v) - 1 end), got[7]:totable())
    near(map(function(v) return v * v end), got[8]:totable())
  end)

  it("computes softmax over the last axis", function()
    local main, startup, y = build(function()
      return layers.softmax(layers.data{ name = "x", shape = { 3 } })
    end)
    local got = run(main, startup, { x = X }, { y })[1]:totable()
    for i, row in ipairs(X) do
      local z = 0
      for _, v in ipairs(row) do z = z + math.exp(v) end
      for j, v in ipairs(row) do near(math.exp(v) / z, got[i][j]) end
    end
  end)

  it("computes elementwise ops with broadcasting along axis", function()
    local main, startup, outs = build(function()
      local a = layers.data{ name = "a", shape = { 2, 3 }, append_batch_size = false }
      local b = layers.data{ name = "b", shape = { 3 }, append_batch_size = false }
      local c = layers.data{ name = "c", shape = { 2 }, append_batch_size = false }
      return { layers.elementwise_add{ x = a, y = b }, layers.elementwise_mul{ x = a, y = c, axis = 0 },
               layers.elementwise_max{ x = a, y = b }, layers.elementwise_div(a, b),
               layers.scale{ x = a, scale = 2, bias = 1 }, layers.scale{ x = a, scale = 2, bias = 1, bias_after_scale = false } }
    end)
    local A = { { 1, 2, 3 }, { 4, 5, 6 } }
    local B = { 10, -1, 2 }
    local Cv = { 2, -3 }
    local got = run(main, startup, { a = A, b = B, c = Cv }, outs)
    local function each(f)
      local out = {}
      for i = 1, 2 do out[i] = {} for j = 1, 3 do out[i][j] = f(i, j) end end
      return out
    end
    near(each(function(i, j) return A[i][j] + B[j] end), got[1]:totable())
    near(each(function(i, j) return A[i][j] * Cv[i] end), got[2]:totable())
    near(each(function(i, j) return math.max(A[i][j], B[j]) end), got[3]:totable())
    near(each(function(i, j) return A[i][j] / B[j] end), got[4]:totable())
    near(each(function(i, j) return 2 * A[i][j] + 1 end), got[5]:totable())
    near(each(function(i, j) return 2 * (A[i][j] + 1) end), got[6]:totable())
  end)

  it("reduces and takes means", function()
    local main, startup, outs = build(function()
      local a = layers.data{ name = "a", shape = { 2, 3 }, append_batch_size = false }
      return { layers.mean(a), layers.reduce_sum{ input = a }, layers.reduce_sum{ input = a, dim = 1 },
               layers.reduce_mean{ input = a, dim = { 0 }, keep_dim = true }, layers.reduce_max{ input = a, dim = 1 } }
    end)
    assert.are.same({ 1 }, outs[1].shape)
    assert.are.same({ 2 }, outs[3].shape)
    assert.are.same({ 1, 3 }, outs[4].shape)
    local A = { { 1, 2, 3 }, { 4, 5, 9 } }
    local got = run(main, startup, { a = A }, outs)
    near({ 4 }, got[1]:totable())
    near({ 24 }, got[2]:totable())
    near({ 6, 18 }, got[3]:totable())
    near({ { 2.5, 3.5, 6 } }, got[4]:totable())
    near({ 3, 9 }, got[5]:totable())
  end)

  it("multiplies matrices", function()
    local main, startup, out, out_t = build(function()
      local a = layers.data{ name = "a", shape = { 2, 3 }, append_batch_size = false }
      local b = layers.data{ name = "b", shape = { 3, 2 }, append_batch_size = false }
      return layers.matmul{ x = a, y = b }, layers.matmul{ x = a, y = a, transpose_y = true, alpha = 0.5 }
    end)
    assert.are.same({ 2, 2 }, out.shape)
    local A = { { 1, 2, 3 }, { 4, 5, 6 } }
    local B = { { 1, 0 }, { 0, 1 }, { 2, -1 } }
    local got = run(main, startup, { a = A, b = B }, { out, out_t })
    near({ { 7, -1 }, { 16, -1 } }, got[1]:totable())
    near({ { 7, 16 }, { 16, 38.5 } }, got[2]:totable())
  end)
end)

describe("tensor layers", function()
  it("fills constants, casts and assigns", function()
    local main, startup, outs = build(function()
      local c = layers.fill_constant{ shape = { 2, 2 }, dtype = "int64", value = 3 }
      local f = layers.cast{ x = c, dtype = "float64" }
      local a = layers.assign(f)
      local z = layers.zeros{ shape = { 3 }, dtype = "float32" }
      local o = layers.ones{ shape = { 1 }, dtype = "float32" }
      return { c, f, a, z, o }
    end)
    assert.is_true(outs[1].stop_gradient)
    local got = run(main, startup, {}, outs)
    assert.are.equal("int64", got[1]:dtype())
    assert.are.same({ { 3, 3 }, { 3, 3 } }, got[1]:totable())
    assert.are.equal("float64", got[2]:dtype())
    assert.are.same({ { 3, 3 }, { 3, 3 } }, got[3]:totable())
    assert.are.same({ 0, 0, 0 }, got[4]:totable())
    assert.are.same({ 1 }, got[5]:totable())
  end)

  it("compares with broadcasting and combines booleans", function()
    local main, startup, outs = build(function()
      local a = layers.data{ name = "a", shape = { 4 }, append_batch_size = false }
      local b = layers.data{ name = "b", shape = { 4 }, append_batch_size = false }
      local lt = layers.less_than{ x = a, y = b }
      local gt = layers.greater_than{ x = a, y = b }
      local eq = layers.equal{ x = a, y = b }
      local cond = layers.fill_constant{ shape = { 4 }, dtype = "bool", value = 0 }
      layers.less_than{ x = b, y = a, cond = cond }
      return { lt, gt, eq, layers.logical_or{ x = lt, y = eq }, layers.logical_not(lt), cond,
               layers.logical_and{ x = lt, y = gt } }
    end)
    assert.are.equal("bool", outs[1].dtype)
    local A, B = { 1, 2, 3, 4 }, { 2, 2, 1, 5 }
    local got = run(main, startup, { a = A, b = B }, outs)
    assert.are.same({ true, false, false, true }, got[1]:totable())
    assert.are.same({ false, false, true, false }, got[2]:totable())
    assert.are.same({ false, true, false, false }, got[3]:totable())
    assert.are.same({ true, true, false, true }, got[4]:totable())
    assert.are.same({ false, true, true, false }, got[5]:totable())
    assert.are.same({ false, false, true, false }, got[6]:totable())
    assert.are.same({ false, false, false, false }, got[7]:totable())
  end)

  it("concatenates and splits", function()
    local main, startup, c, parts, sec = build(function()
      local a = layers.data{ name = "a", shape = { 2, 2 }, append_batch_size = false }
      local b = layers.data{ name = "b", shape = { 2, 1 }, append_batch_size = false }
      local c = layers.concat{ input = { a, b }, axis = 1 }
      return c, layers.split{ input = c, num_or_sections = 3, dim = 1 },
             layers.split{ input = c, num_or_sections = { 1, 2 }, dim = 1 }
    end)
    assert.are.same({ 2, 3 }, c.shape)
    assert.are.equal(3, #parts)
    assert.are.same({ 2, 1 }, parts[1].shape)
    local got = run(main, startup, { a = { { 1, 2 }, { 3, 4 } }, b = { { 5 }, { 6 } } },
      { c, parts[3], sec[2] })
    assert.are.same({ { 1, 2, 5 }, { 3, 4, 6 } }, got[1]:totable())
    assert.are.same({ { 5 }, { 6 } }, got[2]:totable())
    assert.are.same({ { 2, 5 }, { 4, 6 } }, got[3]:totable())
  end)

  it("transposes", function()
    local main, startup, t = build(function()
      local a = layers.data{ name = "a", shape = { 2, 3 }, append_batch_size = false }
      return layers.transpose{ x = a, perm = { 1, 0 } }
    end)
    assert.are.same({ 3, 2 }, t.shape)
    local got = run(main, startup, { a = { { 1, 2, 3 }, { 4, 5, 6 } } }, { t })
    assert.are.same({ { 1, 4 }, { 2, 5 }, { 3, 6 } }, got[1]:totable())
  end)

  it("checks reshape and transpose arguments", function()
    build(function()
      local a = layers.data{ name = "a", shape = { 2, 3 }, append_batch_size = false }
      assert.matches("only one dimension", errmsg(layers.reshape, { x = a, shape = { -1, -1 } }))
      assert.matches("transpose: 'perm'", errmsg(layers.transpose, { x = a, perm = { 0, 0 } }))
      assert.matches("split: 'num_or_sections'", errmsg(layers.split, { input = a }))
    end)
  end)

  it("reshapes", function()
    local main, startup, r = build(function()
      local a = layers.data{ name = "a", shape = { 2, 3 }, append_batch_size = false }
      return layers.reshape{ x = a, shape = { 3, -1 } }
    end)
    assert.are.same({ 3, 2 }, r.shape)
    local got = run(main, startup, { a = { { 1, 2, 3 }, { 4, 5, 6 } } }, { r })
    assert.are.same({ { 1, 2 }, { 3, 4 }, { 5, 6 } }, got[1]:totable())
  end)

  it("finds argmax and top-k", function()
    local main, startup, am, vals, idx = build(function()
      local a = layers.data{ name = "a", shape = { 2, 3 }, append_batch_size = false }
      local v, i = layers.topk{ input = a, k = 2 }
      return layers.argmax{ x = a, axis = 1 }, v, i
    end)
    local got = run(main, startup, { a = { { 1, 9, 3 }, { 7, 5, 6 } } }, { am, vals, idx })
    assert.are.same({ 1, 0 }, got[1]:totable())
    assert.are.same({ { 9, 3 }, { 7, 6 } }, got[2]:totable())
    assert.are.same({ { 1, 2 }, { 0, 2 } }, got[3]:totable())
  end)
end)

describe("convolution, pooling and normalization", function()
  it("infers conv2d and pool2d shapes and creates the filter", function()
    local main, _, conv, pool, gpool = build(function()
      local img = layers.data{ name = "img", shape = { 3, 8, 8 } }
      local c = layers.conv2d{ input = img, num_filters = 4, filter_size = 3, padding = 1, act = "relu" }
      local p = layers.pool2d{ input = c, pool_size = 2, pool_stride = 2 }
      return c, p, layers.pool2d{ input = c, pool_type = "avg", global_pooling = true }
    end)
    assert.are.same({ -1, 4, 8, 8 }, conv.shape)
    assert.are.same({ -1, 4, 4, 4 }, pool.shape)
    assert.are.same({ -1, 4, 1, 1 }, gpool.shape)
    assert.are.same({ 4, 3, 3, 3 }, main:global_block():var("conv2d_0.w_0").shape)
    assert.are.same({ 4 }, main:global_block():var("conv2d_0.b_0").shape)
    assert.matches("conv2d: 'num_filters'", errmsg(function()
      oar.program_guard(main, nil, function()
        layers.conv2d{ input = main:global_block():var("img"), filter_size = 3 }
      end)
    end))
  end)

  it("convolves with constant filters", function()
    local main, startup, out = build(function()
      local img = layers.data{ name = "img", shape = { 1, 3, 3 } }
      return layers.conv2d{ input = img, num_filters = 1, filter_size = 2,
                            param_attr = { initializer = Constant{ value = 1 } }, bias_attr = false }
    end)
    local got = run(main, startup, { img = { { { { 1, 2, 3 }, { 4, 5, 6 }, { 7, 8, 9 } } } } }, { out })
    -- each output is the sum of a 2x2 window
    near({ { { { 12, 16 }, { 24, 28 } } } }, got[1]:totable())
  end)

  it("convolves and pools channels-last input with data_format NHWC", function()
    local main, startup, out, pooled = build(function()
      local img = layers.data{ name = "img", shape = { 3, 3, 2 } }   -- H, W, C
      local c = layers.conv2d{ input = img, num_filters = 2, filter_size = 2, data_format = "NHWC",
                               param_attr = { initializer = Constant{ value = 1 } },
                               bias_attr = { initializer = Constant{ value = 0.5 } } }
      return c, layers.pool2d{ input = c, pool_size = 2, pool_type = "max", data_format = "NHWC" }
    end)
    assert.are.same({ -1, 2, 2, 2 }, out.shape)
    assert.are.same({ 2, 2, 2, 2 }, main:global_block():var("conv2d_0.w_0").shape)   -- OIHW as in NCHW
    assert.are.same({ 2 }, main:global_block():var("conv2d_0.b_0").shape)
    -- channel 0 holds v, channel 1 holds 10 v, v = 1..9 row-major
    local X = {}
    for h = 1, 3 do
      X[h] = {}
      for w = 1, 3 do local v = (h - 1) * 3 + w; X[h][w] = { v, 10 * v } end
    end
    local got = run(main, startup, { img = { X } }, { out, pooled })
    -- each output channel: 11 * (sum of the 2x2 window of v) + 0.5, the same for both filters
    local function o(s) return { 11 * s + 0.5, 11 * s + 0.5 } end
    near({ { { o(12), o(16) }, { o(24), o(28) } } }, got[1]:totable())
    near({ { { o(28) } } }, got[2]:totable())
    assert.matches("data_format", errmsg(function()
      oar.program_guard(main, nil, function()
        layers.conv2d{ input = main:global_block():var("img"), num_filters = 1, filter_size = 1, data_format = "CHWN" }
      end)
    end))
  end)

  it("normalizes a batch with batch_norm and layer_norm", function()
    local main, startup, bn, ln = build(function()
      local x = layers.data{ name = "x", shape = { 2, 1, 1 } }
      local flat = layers.data{ name = "f", shape = { 4 } }
      return layers.batch_norm{ input = x, epsilon = 1e-5 }, layers.layer_norm{ input = flat, epsilon = 1e-5 }
    end)
    local gb = main:global_block()
    assert.is_false(gb:var("batch_norm_0.w_1").trainable)   -- moving mean
    assert.is_true(gb:var("batch_norm_0.w_1").stop_gradient)
    local X = { { { { 1 } }, { { 10 } } }, { { { 3 } }, { { 30 } } } }
    local F = { { 1, 2, 3, 6 }, { -1, -1, 1, 1 } }
    local got = run(main, startup, { x = X, f = F }, { bn, ln })
    -- channel 1: values 1, 3 -> mean 2, var 1; channel 2: 10, 30 -> mean 20, var 100
    near({ { { { -1 } }, { { -1 } } }, { { { 1 } }, { { 1 } } } }, got[1]:totable(), 1e-4)
    local expect = {}
    for i, row in ipairs(F) do
      local m, v = 0, 0
      for _, x in ipairs(row) do m = m + x / 4 end
      for _, x in ipairs(row) do v = v + (x - m) ^ 2 / 4 end
      expect[i] = {}
      for j, x in ipairs(row) do expect[i][j] = (x - m) / math.sqrt(v + 1e-5) end
    end
    near(expect, got[2]:totable(), 1e-4)
  end)

  it("drops nothing at test time and scales by keep probability in training", function()
    local main, startup, train, test = build(function()
      local x = layers.data{ name = "x", shape = { 1000 } }
      return layers.dropout{ x = x, dropout_prob = 0.3 }, layers.dropout{ x = x, dropout_prob = 0.3, is_test = true }
    end)
    local ones = {}
    for i = 1, 1000 do ones[i] = 1 end
    local got = run(main, startup, { x = { ones } }, { train, test })
    local zeros = 0
    for _, v in ipairs(got[1]:totable()[1]) do
      if v == 0 then zeros = zeros + 1 else assert.are.equal(1, v) end
    end
    assert.is_true(zeros > 200 and zeros < 400, "dropped " .. zeros .. " of 1000")
    for _, v in ipairs(got[2]:totable()[1]) do near(0.7, v) end
    assert.matches("dropout_prob", errmsg(layers.dropout, { x = train, dropout_prob = 2 }))
    -- a test clone switches training-time behaviour off
    for _, op in ipairs(main:clone{ for_test = true }:global_block():ops()) do
      if op.type == "dropout" then assert.is_true(op:attr("is_test")) end
    end
  end)
end)

describe("losses and metrics", function()
  it("computes square_error_cost", function()
    local main, startup, out = build(function()
      local x = layers.data{ name = "x", shape = { 1 } }
      local y = layers.data{ name = "y", shape = { 1 } }
      return layers.square_error_cost{ input = x, label = y }
    end)
    local got = run(main, startup, { x = { { 1 }, { 4 } }, y = { { 3 }, { 1 } } }, { out })
    near({ { 4 }, { 9 } }, got[1]:totable())
  end)

  it("computes cross_entropy from probabilities", function()
    local main, startup, out = build(function()
      local p = layers.data{ name = "p", shape = { 3 } }
      local l = layers.data{ name = "l", shape = { 1 }, dtype = "int64" }
      return layers.cross_entropy{ input = p, label = l }
    end)
    local got = run(main, startup, { p = { { 0.2, 0.5, 0.3 }, { 0.1, 0.1, 0.8 } }, l = { { 1 }, { 2 } } }, { out })
    near({ { -math.log(0.5) }, { -math.log(0.8) } }, got[1]:totable())
  end)

  it("computes softmax_with_cross_entropy", function()
    local main, startup, loss = build(function()
      local z = layers.data{ name = "z", shape = { 3 } }
      local l = layers.data{ name = "l", shape = { 1 }, dtype = "int64" }
      return layers.softmax_with_cross_entropy{ logits = z, label = l }
    end)
    local Z = { { 1, 2, 3 } }
    local got = run(main, startup, { z = Z, l = { { 0 } } }, { loss })
    local lse = math.log(math.exp(1) + math.exp(2) + math.exp(3))
    near({ { lse - 1 } }, got[1]:totable())
  end)

  it("computes sigmoid_cross_entropy_with_logits", function()
    local main, startup, out = build(function()
      local x = layers.data{ name = "x", shape = { 2 } }
      local y = layers.data{ name = "y", shape = { 2 } }
      return layers.sigmoid_cross_entropy_with_logits{ x = x, label = y }
    end)
    local got = run(main, startup, { x = { { 0.5, -2 } }, y = { { 1, 0 } } }, { out })
    local function sce(x, z) return math.max(x, 0) - x * z + math.log(1 + math.exp(-math.abs(x))) end
    near({ { sce(0.5, 1), sce(-2, 0) } }, got[1]:totable())
  end)

  it("computes accuracy through top_k", function()
    local main, startup, acc, acc2 = build(function()
      local p = layers.data{ name = "p", shape = { 3 } }
      local l = layers.data{ name = "l", shape = { 1 }, dtype = "int64" }
      return layers.accuracy{ input = p, label = l }, layers.accuracy{ input = p, label = l, k = 2 }
    end)
    local P = { { 0.1, 0.7, 0.2 }, { 0.5, 0.3, 0.2 }, { 0.2, 0.3, 0.5 }, { 0.4, 0.35, 0.25 } }
    local got = run(main, startup, { p = P, l = { { 1 }, { 1 }, { 2 }, { 2 } } }, { acc, acc2 })
    near({ 0.5 }, got[1]:totable())
    near({ 0.75 }, got[2]:totable())
  end)

  it("looks up embeddings", function()
    local main, startup, emb = build(function()
      local ids = layers.data{ name = "ids", shape = { 1 }, dtype = "int64" }
      return layers.embedding{ input = ids, size = { 5, 2 }, param_attr = { initializer = Constant{ value = 2 } },
                               padding_idx = -1 }
    end)
    assert.are.same({ -1, 2 }, emb.shape)
    local got = run(main, startup, { ids = { { 0 }, { 4 } } }, { emb })
    near({ { 2, 2 }, { 0, 0 } }, got[1]:totable())   -- padding_idx -1 is row 4
  end)

  it("checks loss arguments", function()
    build(function()
      local x = layers.data{ name = "x", shape = { 1 } }
      assert.matches("square_error_cost: 'label' must be a Variable, got nil",
        errmsg(layers.square_error_cost, { input = x }))
      assert.matches("embedding: 'size'", errmsg(layers.embedding, { input = x, size = 5 }))
    end)
  end)
end)
