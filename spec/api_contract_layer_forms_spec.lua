-- The API contract (docs/api.md): more layer keywords and positional forms. One of the
-- api_contract_*_spec.lua files (one per API area): every table row, bullet,
-- keyword default and code-sample call has at least one assertion, with
-- expected values worked out by hand in the comments.
local oar = require("oar")
local A = require("spec.helpers.api")
local layers = oar.layers

local THIS_FILE = "api_contract_layer_forms_spec.lua"

-- ---- helpers (spec/helpers/api.lua) ---------------------------------------------
local errmsg, eval, near, op_types, contains = A.errmsg, A.eval, A.near, A.op_types, A.contains
local build, run = A.build, A.run
local Constant, const_attr, X23 = oar.initializer.Constant, A.const_attr, A.X23


describe("API: more layer keywords and forms", function()
  it("a layer with one input also takes it positionally", function()
    local out = eval(function()
      local x = layers.data{ name = "x", shape = { 2 } }
      local f = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 5 }
      return { layers.reduce_mean(x), layers.reduce_max(x), layers.softmax(x), layers.batch_norm(x),
               layers.layer_norm(x), layers.increment(f), layers.dropout(x, 0.0), layers.topk(x, 1),
               layers.cast(x, "float64"), layers.reshape(x, { 4 }), layers.transpose(x, { 1, 0 }) }
    end, { x = { { 1, 3 }, { 5, 7 } } })
    near({ 4 }, out[1]:totable())
    near({ 7 }, out[2]:totable())
    local lo, hi = 1 / (1 + math.exp(2)), math.exp(2) / (1 + math.exp(2))   -- rows differ by 2
    near({ { lo, hi }, { lo, hi } }, out[3]:totable())
    near({ { -1, -1 }, { 1, 1 } }, out[4]:totable(), 1e-4)
    near({ { -1, 1 }, { -1, 1 } }, out[5]:totable(), 1e-4)
    near({ 6 }, out[6]:totable())
    near({ { 1, 3 }, { 5, 7 } }, out[7]:totable())
    near({ { 3 }, { 7 } }, out[8]:totable())
    assert.are.equal("float64", out[9]:dtype())
    near({ 1, 3, 5, 7 }, out[10]:totable())
    near({ { 1, 5 }, { 3, 7 } }, out[11]:totable())
  end)

  it("batch_norm's momentum updates the moving statistics; conv2d stride and padding", function()
    local main, startup, y = build(function()
      local x = layers.data{ name = "x", shape = { 2 } }
      return layers.batch_norm{ input = x, moving_mean_name = "bn_mean", moving_variance_name = "bn_var" }
    end)
    local _, scope = run(main, startup, { x = { { 1, 10 }, { 3, 30 } } }, { y })
    -- moving = 0.9 * moving + 0.1 * batch: mean 0.1 * {2, 20}; variance 0.9 * 1 + 0.1 * {1, 100}
    near({ 0.2, 2 }, scope:find_var("bn_mean"):get_tensor():totable(), 1e-4)
    near({ 1.0, 10.9 }, scope:find_var("bn_var"):get_tensor():totable(), 1e-3)
    local out = eval(function()
      local img = layers.data{ name = "img", shape = { 1, 4, 4 } }
      return layers.conv2d{ input = img, num_filters = 1, filter_size = 3, stride = 2, padding = 1,
                            param_attr = const_attr(1), bias_attr = false }
    end, { img = { { { { 1, 1, 1, 1 }, { 1, 1, 1, 1 }, { 1, 1, 1, 1 }, { 1, 1, 1, 1 } } } } })
    -- (4 + 2 - 3) / 2 + 1 = 2; the top-left window covers 2x2 ones, the others 2x3, 3x2, 3x3
    near({ { { { 4, 6 }, { 6, 9 } } } }, out[1]:totable())
  end)

  it("comparisons write into cond (greater_than, equal)", function()
    local c1, c2, r1, r2
    local main, startup = build(function()
      local x = layers.data{ name = "x", shape = { 2 } }
      local y = layers.data{ name = "y", shape = { 2 } }
      c1 = layers.create_tensor{ dtype = "bool" }
      c2 = layers.create_tensor{ dtype = "bool" }
      r1 = layers.greater_than{ x = x, y = y, cond = c1 }
      r2 = layers.equal{ x = x, y = y, cond = c2 }
    end)
    assert.are.equal(c1, r1)
    assert.are.equal(c2, r2)
    local out = run(main, startup, { x = { { 1, 2 } }, y = { { 1, 1 } } }, { c1, c2 })
    assert.are.same({ { false, true } }, out[1]:totable())
    assert.are.same({ { true, false } }, out[2]:totable())
  end)

  it("embedding{is_sparse=true} trains", function()
    local main, startup = build(function()
      local ids = layers.data{ name = "ids", shape = { 1 }, dtype = "int64" }
      local e = layers.embedding{ input = ids, size = { 4, 2 }, is_sparse = true,
                                  param_attr = oar.ParamAttr{ name = "E", initializer = Constant{ value = 1 } } }
      oar.optimizer.SGD{ learning_rate = 1 }:minimize(layers.mean(e))
    end)
    local _, scope = run(main, startup, { ids = oar.Tensor({ { 0 }, { 2 }, { 2 } }, "int64") }, {})
    -- mean over 6 values: each looked-up value gets 1/6, row 2 twice
    near({ { 1 - 1 / 6, 1 - 1 / 6 }, { 1, 1 }, { 1 - 2 / 6, 1 - 2 / 6 }, { 1, 1 } },
      scope:find_var("E"):get_tensor():totable())
  end)
end)
