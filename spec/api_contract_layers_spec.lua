-- The API contract (docs/api.md): layers: common keys, data, fc/conv/pool/norms/dropout, activations, reductions, arithmetic. One of the
-- api_contract_*_spec.lua files (one per API area): every table row, bullet,
-- keyword default and code-sample call has at least one assertion, with
-- expected values worked out by hand in the comments.
local oar = require("oar")
local A = require("spec.helpers.api")
local layers = oar.layers

local THIS_FILE = "api_contract_layers_spec.lua"

-- ---- helpers (spec/helpers/api.lua) ---------------------------------------------
local errmsg, eval, near, op_types, contains = A.errmsg, A.eval, A.near, A.op_types, A.contains
local build, run = A.build, A.run



-- ==== Layers =========================================================================
local Constant = oar.initializer.Constant
local function const_attr(v) return oar.ParamAttr{ initializer = Constant{ value = v } } end

local X23 = { { 1, 2, 3 }, { 4, 5, 6 } }

describe("API: layers, common keys and data", function()
  it("data{name=, shape=, dtype='float32', lod_level=0, append_batch_size=true}", function()
    local main, _, x, y, z = build(function()
      return layers.data{ name = "x", shape = { 3 } },
             layers.data{ name = "y", shape = { 2, 3 }, dtype = "int64", lod_level = 1, append_batch_size = false },
             layers.data{ name = "z", shape = { -1, 7 } }
    end)
    assert.are.same({ -1, 3 }, x.shape)
    assert.are.equal("float32", x.dtype)
    assert.are.equal(0, x.lod_level)
    assert.are.equal("x", x.name)
    assert.are.same({ 2, 3 }, y.shape)
    assert.are.equal("int64", y.dtype)
    assert.are.equal(1, y.lod_level)
    assert.are.same({ -1, 7 }, z.shape)       -- a -1 already there: no extra batch dim
    assert.are.equal(main:global_block(), x.block)
  end)

  it("name, param_attr, bias_attr=false and act are common keys", function()
    local main, _, h, h2 = build(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      return layers.fc{ input = x, size = 2, name = "myfc", param_attr = const_attr(0.5), act = "relu" },
             layers.fc{ input = x, size = 2, bias_attr = false, act = "softmax" }
    end)
    local params = main:global_block():all_parameters()
    local names = {}
    for _, p in ipairs(params) do names[#names + 1] = p.name end
    assert.are.equal(3, #params)   -- myfc's weight and bias, the second fc's weight only
    local prefixed = 0
    for _, n in ipairs(names) do if n:find("^myfc") then prefixed = prefixed + 1 end end
    assert.are.equal(2, prefixed)
    local types = op_types(main:global_block())
    assert.is_true(contains(types, "relu"))
    assert.is_true(contains(types, "softmax"))
    -- x {{1,-2,3}}: 0.5*(1-2+3) = 1 per unit (bias 0) -> relu 1; softmax of two equal = 0.5 each
    local out = eval(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      return { layers.fc{ input = x, size = 2, param_attr = const_attr(0.5), act = "relu" },
               layers.fc{ input = x, size = 2, bias_attr = false, param_attr = const_attr(0.5), act = "softmax" } }
    end, { x = { { 1, -2, 3 } } })
    near({ { 1, 1 } }, out[1]:totable())
    near({ { 0.5, 0.5 } }, out[2]:totable())
    assert.are.equal("relu", main:global_block():ops()[3].type)
    assert.are.same({ h.name }, main:global_block():ops()[3]:output("Out"))
    assert.truthy(h2.name:find("^fc"))
  end)
end)

describe("API: layers fc, embedding, conv2d, pool2d, norms, dropout", function()
  it("fc{input=, size=, num_flatten_dims=1, act=}", function()
    local main, _, h, h3 = build(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      local x3 = layers.data{ name = "x3", shape = { 2, 3 } }
      return layers.fc{ input = x, size = 4 }, layers.fc{ input = x3, size = 5, num_flatten_dims = 2 }
    end)
    assert.are.same({ -1, 4 }, h.shape)
    assert.are.same({ -1, 2, 5 }, h3.shape)
    local mul = main:global_block():ops()[1]
    assert.are.equal("mul", mul.type)
    assert.are.equal(1, mul:attr("x_num_col_dims"))
    -- [2,3] rows times a 3x2 weight of 0.5 plus a bias of 1: 0.5*rowsum + 1
    local out = eval(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      return layers.fc{ input = x, size = 2, param_attr = const_attr(0.5), bias_attr = const_attr(1) }
    end, { x = X23 })
    near({ { 4, 4 }, { 8.5, 8.5 } }, out[1]:totable())
  end)

  it("fc with a list input (one weight each, summed) and a list param_attr", function()
    local out, main = eval(function()
      local a = layers.data{ name = "a", shape = { 2 } }
      local b = layers.data{ name = "b", shape = { 3 } }
      return layers.fc{ input = { a, b }, size = 1, param_attr = { const_attr(1), const_attr(2) }, bias_attr = false }
    end, { a = { { 1, 2 } }, b = { { 1, 1, 1 } } })
    -- 1*(1+2) + 2*(1+1+1) = 9
    near({ { 9 } }, out[1]:totable())
    local ws = main:global_block():all_parameters()
    assert.are.equal(2, #ws)
    local shapes = {}
    for _, w in ipairs(ws) do shapes[#shapes + 1] = table.concat(w.shape, "x") end
    table.sort(shapes)
    assert.are.same({ "2x1", "3x1" }, shapes)
    assert.is_true(contains(op_types(main:global_block()), "sum"))
    -- a single param_attr applies to every input
    local out2 = eval(function()
      local a = layers.data{ name = "a", shape = { 2 } }
      local b = layers.data{ name = "b", shape = { 3 } }
      return layers.fc{ input = { a, b }, size = 1, param_attr = const_attr(1), bias_attr = false }
    end, { a = { { 1, 2 } }, b = { { 1, 1, 1 } } })
    near({ { 6 } }, out2[1]:totable())
  end)

  it("embedding{input=, size={vocab, dim}, is_sparse=false, padding_idx=}", function()
    local out, main = eval(function()
      local ids = layers.data{ name = "ids", shape = { 1 }, dtype = "int64" }
      local e = layers.embedding{ input = ids, size = { 4, 2 }, padding_idx = 1, param_attr = const_attr(3) }
      local e2 = layers.embedding{ input = ids, size = { 4, 2 }, padding_idx = -1, param_attr = const_attr(3) }
      return { e, e2 }
    end, { ids = oar.Tensor({ { 0 }, { 1 }, { 3 } }, "int64") })
    near({ { 3, 3 }, { 0, 0 }, { 3, 3 } }, out[1]:totable())   -- row 1 is padding: zeros
    near({ { 3, 3 }, { 3, 3 }, { 0, 0 } }, out[2]:totable())   -- -1 means vocab - 1 = 3
    local op = main:global_block():ops()[1]
    assert.are.equal("lookup_table", op.type)
    assert.is_false(op:attr("is_sparse"))
    assert.are.equal(1, op:attr("padding_idx"))
    local w = main:global_block():var(op:input("W")[1])
    assert.are.same({ 4, 2 }, w.shape)
  end)

  it("conv2d{... stride=1, padding=0, dilation=1, groups=1} with groups and dilation", function()
    -- x[c][i][j] = 16c + 4i + j; groups=2 keeps channels apart; a 2x2 filter of ones with
    -- dilation 2 sums x[i][j] + x[i][j+2] + x[i+2][j] + x[i+2][j+2] = 4*x[i][j] + 20
    local vals = {}
    for c = 0, 1 do
      vals[c + 1] = {}
      for i = 0, 3 do
        vals[c + 1][i + 1] = {}
        for j = 0, 3 do vals[c + 1][i + 1][j + 1] = 16 * c + 4 * i + j end
      end
    end
    local out, main = eval(function()
      local x = layers.data{ name = "img", shape = { 2, 4, 4 } }
      local y = layers.conv2d{ input = x, num_filters = 2, filter_size = 2, dilation = 2, groups = 2,
                               param_attr = const_attr(1), bias_attr = false }
      local z = layers.conv2d{ input = x, num_filters = 3, filter_size = 3, act = "relu" }
      return { y, z }
    end, { img = { vals } })
    near({ { { { 20, 24 }, { 36, 40 } }, { { 84, 88 }, { 100, 104 } } } }, out[1]:totable())
    assert.are.same({ 1, 3, 2, 2 }, out[2]:shape())
    local conv = main:global_block():ops()[1]
    assert.are.equal(2, conv:attr("groups"))
    assert.are.same({ 2, 2 }, conv:attr("dilations"))
    assert.are.same({ 1, 1 }, conv:attr("strides"))
    assert.are.same({ 0, 0 }, conv:attr("paddings"))
    local w = main:global_block():var(conv:input("Filter")[1])
    assert.are.same({ 2, 1, 2, 2 }, w.shape)
    local defaults
    for _, op in ipairs(main:global_block():ops()) do
      if (op.type == "conv2d" or op.type == "depthwise_conv2d") and op ~= conv then defaults = op end
    end
    assert.are.equal(1, defaults:attr("groups"))
    assert.are.same({ 1, 1 }, defaults:attr("dilations"))
  end)

  it("pool2d{pool_size=, pool_type='max', pool_stride=1, pool_padding=0, global_pooling=false}", function()
    local vals = {}
    for c = 0, 1 do
      vals[c + 1] = {}
      for i = 0, 3 do
        vals[c + 1][i + 1] = {}
        for j = 0, 3 do vals[c + 1][i + 1][j + 1] = 16 * c + 4 * i + j end
      end
    end
    local out = eval(function()
      local x = layers.data{ name = "img", shape = { 2, 4, 4 } }
      return { layers.pool2d{ input = x, pool_size = 2 },
               layers.pool2d{ input = x, pool_size = 2, pool_stride = 2, pool_type = "max" },
               layers.pool2d{ input = x, pool_type = "avg", global_pooling = true },
               layers.pool2d{ input = x, pool_size = 2, pool_stride = 2, pool_padding = 1, pool_type = "max" } }
    end, { img = { vals } })
    assert.are.same({ 1, 2, 3, 3 }, out[1]:shape())      -- stride 1, no padding: 4 - 2 + 1
    near(5, out[1]:get(1, 1, 1, 1))
    near({ { { { 5, 7 }, { 13, 15 } }, { { 21, 23 }, { 29, 31 } } } }, out[2]:totable())
    near({ { { { 7.5 } }, { { 23.5 } } } }, out[3]:totable())   -- channel means
    assert.are.same({ 1, 2, 3, 3 }, out[4]:shape())       -- (4 + 2 - 2) / 2 + 1
    near(0, out[4]:get(1, 1, 1, 1))
    near(15, out[4]:get(1, 1, 3, 3))
  end)

  it("batch_norm{input=, act=, is_test=false, momentum=0.9, epsilon=1e-5}", function()
    local out, main = eval(function()
      local x = layers.data{ name = "x", shape = { 2 } }
      return { layers.batch_norm{ input = x }, layers.batch_norm{ input = x, is_test = true },
               layers.batch_norm{ input = x, act = "relu" } }
    end, { x = { { 1, 10 }, { 3, 30 } } })
    -- training: per-channel batch stats: ch0 mean 2 var 1, ch1 mean 20 var 100
    near({ { -1, -1 }, { 1, 1 } }, out[1]:totable(), 1e-4)
    -- test: moving mean 0, variance 1: x / sqrt(1 + 1e-5)
    near({ { 1, 10 }, { 3, 30 } }, out[2]:totable(), 1e-4)
    near({ { 0, 0 }, { 1, 1 } }, out[3]:totable(), 1e-4)
    local bn = main:global_block():ops()[1]
    assert.are.equal("batch_norm", bn.type)
    near(0.9, bn:attr("momentum"))
    near(1e-5, bn:attr("epsilon"))
    assert.is_false(bn:attr("is_test"))
    assert.is_true(main:global_block():ops()[2]:attr("is_test"))
  end)

  it("layer_norm normalizes each row", function()
    local out = eval(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      return layers.layer_norm{ input = x }
    end, { x = { { 1, 2, 3 }, { 2, 4, 6 } } })
    local k = 1 / math.sqrt(2 / 3 + 1e-5)            -- row 1: mean 2, var 2/3
    local k2 = 2 / math.sqrt(8 / 3 + 1e-5)           -- row 2: mean 4, var 8/3, deviations -2 0 2
    near({ { -k, 0, k }, { -k2, 0, k2 } }, out[1]:totable(), 1e-4)
  end)

  it("dropout{x=, dropout_prob=, is_test=false, seed=}", function()
    local ones = {}
    for i = 1, 4 do ones[i] = { 2, 2, 2, 2, 2, 2, 2, 2 } end
    local out, main = eval(function()
      local x = layers.data{ name = "x", shape = { 8 } }
      return { layers.dropout{ x = x, dropout_prob = 0.25, is_test = true },
               layers.dropout{ x = x, dropout_prob = 0.5, seed = 7 },
               layers.dropout{ x = x, dropout_prob = 0.5, seed = 7 },
               layers.dropout{ x = x, dropout_prob = 0.0 } }
    end, { x = ones })
    near({ 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5 }, out[1]:totable()[1])   -- 2 * (1 - 0.25)
    local a, b = out[2]:totable(), out[3]:totable()
    local zeros, kept = 0, 0
    for i = 1, 4 do
      for j = 1, 8 do
        assert.are.equal(a[i][j], b[i][j])            -- same seed, same mask
        if a[i][j] == 0 then zeros = zeros + 1 else near(2, a[i][j]); kept = kept + 1 end
      end
    end
    assert.is_true(zeros > 0 and kept > 0)
    near(ones, out[4]:totable())
    local d = main:global_block():ops()[2]
    assert.are.equal("dropout", d.type)
    assert.are.equal(7, d:attr("seed"))
    assert.is_true(d:attr("fix_seed"))
    assert.is_false(d:attr("is_test"))
  end)
end)

describe("API: activations, reductions, arithmetic layers", function()
  it("activations take the Variable or {x=}", function()
    local s = function(v) return 1 / (1 + math.exp(-v)) end
    local e1, e5, e2 = math.exp(-1), math.exp(0.5), math.exp(2)
    local sum = e1 + e5 + e2
    local expect = {
      relu = { 0, 0.5, 2 }, sigmoid = { s(-1), s(0.5), s(2) },
      tanh = { math.tanh(-1), math.tanh(0.5), math.tanh(2) },
      softmax = { e1 / sum, e5 / sum, e2 / sum }, exp = { e1, e5, e2 }, abs = { 1, 0.5, 2 },
      leaky_relu = { -0.02, 0.5, 2 }, elu = { e1 - 1, 0.5, 2 },
      -- x * Phi(x): Phi(-1) = 0.1586553, Phi(0.5) = 0.6914625, Phi(2) = 0.9772499
      gelu = { -0.1586553, 0.3457312, 1.9544997 },
    }
    local positive = { log = { math.log(0.25), 0, math.log(4) }, sqrt = { 0.5, 1, 2 } }
    local names = { "relu", "sigmoid", "tanh", "softmax", "exp", "log", "sqrt", "abs", "leaky_relu", "elu", "gelu" }
    local out = eval(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      local p = layers.data{ name = "p", shape = { 3 } }
      local fetch = {}
      for _, n in ipairs(names) do
        local input = positive[n] and p or x
        fetch[#fetch + 1] = layers[n](input)
        fetch[#fetch + 1] = layers[n]{ x = input }
      end
      return fetch
    end, { x = { { -1, 0.5, 2 } }, p = { { 0.25, 1, 4 } } })
    for i, n in ipairs(names) do
      local want = expect[n] or positive[n]
      near({ want }, out[2 * i - 1]:totable(), n == "gelu" and 1e-3 or 1e-5, n .. "(v)")
      near({ want }, out[2 * i]:totable(), n == "gelu" and 1e-3 or 1e-5, n .. "{x=}")
    end
    local out2 = eval(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      return layers.leaky_relu{ x = x, alpha = 0.1 }
    end, { x = { { -1, 0.5, 2 } } })
    near({ { -0.1, 0.5, 2 } }, out2[1]:totable())
  end)

  it("mean(v) positional; reduce_sum{input=, dim=, keep_dim=}, reduce_mean, reduce_max", function()
    local out = eval(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      return { layers.mean(x), layers.mean{ x = x },
               layers.reduce_sum{ input = x, dim = 1 }, layers.reduce_sum{ input = x, dim = 0, keep_dim = true },
               layers.reduce_sum{ input = x }, layers.reduce_sum(x),
               layers.reduce_mean{ input = x, dim = 1 }, layers.reduce_max{ input = x, dim = 0 },
               layers.reduce_sum{ input = x, dim = { 0, 1 }, keep_dim = true } }
    end, { x = X23 })
    near({ 3.5 }, out[1]:totable())
    assert.are.same({ 1 }, out[1]:shape())
    near({ 3.5 }, out[2]:totable())
    near({ 6, 15 }, out[3]:totable())
    assert.are.same({ 2 }, out[3]:shape())
    near({ { 5, 7, 9 } }, out[4]:totable())
    assert.are.same({ 1, 3 }, out[4]:shape())
    near({ 21 }, out[5]:totable())
    near({ 21 }, out[6]:totable())
    near({ 2, 5 }, out[7]:totable())
    near({ 4, 5, 6 }, out[8]:totable())
    near({ { 21 } }, out[9]:totable())
  end)

  it("matmul{x=, y=, transpose_x=, transpose_y=}", function()
    local out = eval(function()
      local x = layers.data{ name = "x", shape = { 2, 3 }, append_batch_size = false }
      return { layers.matmul{ x = x, y = x, transpose_y = true }, layers.matmul{ x = x, y = x, transpose_x = true } }
    end, { x = X23 })
    near({ { 14, 32 }, { 32, 77 } }, out[1]:totable())
    near({ { 17, 22, 27 }, { 22, 29, 36 }, { 27, 36, 45 } }, out[2]:totable())
  end)

  it("elementwise_add/sub/mul/div/max/min/pow{x=, y=, axis=-1}", function()
    local out = eval(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      local y = layers.data{ name = "y", shape = { 3 }, append_batch_size = false }
      local z = layers.data{ name = "z", shape = { 3 }, append_batch_size = false }
      local r = layers.data{ name = "r", shape = { 2 }, append_batch_size = false }
      return { layers.elementwise_add{ x = x, y = y }, layers.elementwise_sub{ x = x, y = y },
               layers.elementwise_mul{ x = x, y = y }, layers.elementwise_div{ x = x, y = y },
               layers.elementwise_max{ x = x, y = z }, layers.elementwise_min{ x = x, y = z },
               layers.elementwise_pow{ x = x, y = layers.scale{ x = y, scale = 0.5 } },
               layers.elementwise_add{ x = x, y = r, axis = 0 } }
    end, { x = X23, y = { 1, 2, 3 }, z = { 3, 2, 1 }, r = { 10, 20 } })
    near({ { 2, 4, 6 }, { 5, 7, 9 } }, out[1]:totable())
    near({ { 0, 0, 0 }, { 3, 3, 3 } }, out[2]:totable())
    near({ { 1, 4, 9 }, { 4, 10, 18 } }, out[3]:totable())
    near({ { 1, 1, 1 }, { 4, 2.5, 2 } }, out[4]:totable())
    near({ { 3, 2, 3 }, { 4, 5, 6 } }, out[5]:totable())
    near({ { 1, 2, 1 }, { 3, 2, 1 } }, out[6]:totable())
    near({ { 1, 2, 3 ^ 1.5 }, { 2, 5 ^ 1, 6 ^ 1.5 } }, out[7]:totable())   -- exponents 0.5, 1, 1.5
    near({ { 11, 12, 13 }, { 24, 25, 26 } }, out[8]:totable())
  end)

  it("scale{x=, scale=, bias=} and sums{input={...}}", function()
    local out = eval(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      return { layers.scale{ x = x, scale = 2, bias = 1 }, layers.scale(x),
               layers.sums{ input = { x, x, layers.scale{ x = x, scale = 3 } } } }
    end, { x = X23 })
    near({ { 3, 5, 7 }, { 9, 11, 13 } }, out[1]:totable())
    near(X23, out[2]:totable())
    near({ { 5, 10, 15 }, { 20, 25, 30 } }, out[3]:totable())
  end)
end)
