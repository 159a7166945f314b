-- The API contract (docs/api.md): sequence layers (LoD); arrays and counters. One of the
-- api_contract_*_spec.lua files (one per API area): every table row, bullet,
-- keyword default and code-sample call has at least one assertion, with
-- expected values worked out by hand in the comments.
local oar = require("oar")
local A = require("spec.helpers.api")
local layers = oar.layers

local THIS_FILE = "api_contract_sequence_spec.lua"

-- ---- helpers (spec/helpers/api.lua) ---------------------------------------------
local errmsg, eval, near, op_types, contains = A.errmsg, A.eval, A.near, A.op_types, A.contains
local build, run = A.build, A.run
local Constant, const_attr, X23 = oar.initializer.Constant, A.const_attr, A.X23


describe("API: sequence layers (LoD)", function()
  local function seq_tensor(rows, lod)
    local t = oar.Tensor(rows, "float32")
    t:set_lod(lod)
    return t
  end

  it("sequence_pool, sequence_first_step, sequence_last_step (positional), sequence_softmax, sequence_expand", function()
    local rows = { { 1, 2 }, { 3, 4 }, { 5, 6 }, { 7, 8 }, { 9, 10 } }
    local out = eval(function()
      local x = layers.data{ name = "x", shape = { 2 }, lod_level = 1 }
      local s = layers.data{ name = "s", shape = { 1 }, lod_level = 1 }
      local e = layers.data{ name = "e", shape = { 1 } }
      return { layers.sequence_pool{ input = x, pool_type = "sum" }, layers.sequence_pool{ input = x, pool_type = "average" },
               layers.sequence_pool{ input = x, pool_type = "max" }, layers.sequence_first_step(x),
               layers.sequence_last_step(x), layers.sequence_softmax(s), layers.sequence_expand{ x = e, y = s } }
    end, { x = seq_tensor(rows, { { 0, 2, 5 } }), s = seq_tensor({ { 0 }, { 0 }, { 0 }, { 0 }, { math.log(2) } }, { { 0, 2, 5 } }),
           e = { { 1 }, { 2 } } })
    near({ { 4, 6 }, { 21, 24 } }, out[1]:totable())
    near({ { 2, 3 }, { 7, 8 } }, out[2]:totable())
    near({ { 3, 4 }, { 9, 10 } }, out[3]:totable())
    near({ { 1, 2 }, { 5, 6 } }, out[4]:totable())
    near({ { 3, 4 }, { 9, 10 } }, out[5]:totable())
    near({ { 0.5 }, { 0.5 }, { 0.25 }, { 0.25 }, { 0.5 } }, out[6]:totable())
    near({ { 1 }, { 1 }, { 2 }, { 2 }, { 2 } }, out[7]:totable())   -- x had no LoD: a plain tensor, like Fluid
  end)

  it("dynamic_lstm{input=, size=} and dynamic_gru{input=, size=}", function()
    -- zero weights and biases: every gate sees its input 1, so i = f = o = u = r = s = sigmoid(1)
    -- and the candidate is tanh(1)
    local s, cand = 1 / (1 + math.exp(-1)), math.tanh(1)
    local c1 = s * cand
    local h1 = s * math.tanh(c1)
    local c2 = s * c1 + s * cand
    local h2 = s * math.tanh(c2)
    local g1 = s * cand                    -- GRU (origin_mode=false): h = (1-u) h_prev + u c
    local g2 = (1 - s) * g1 + s * cand
    local out = eval(function()
      local x4 = layers.data{ name = "x4", shape = { 4 }, lod_level = 1 }
      local x3 = layers.data{ name = "x3", shape = { 3 }, lod_level = 1 }
      local h, c = layers.dynamic_lstm{ input = x4, size = 4, param_attr = const_attr(0), bias_attr = const_attr(0) }
      local g = layers.dynamic_gru{ input = x3, size = 1, param_attr = const_attr(0), bias_attr = const_attr(0) }
      return { h, c, g }
    end, { x4 = seq_tensor({ { 1, 1, 1, 1 }, { 1, 1, 1, 1 }, { 1, 1, 1, 1 } }, { { 0, 2, 3 } }),
           x3 = seq_tensor({ { 1, 1, 1 }, { 1, 1, 1 }, { 1, 1, 1 } }, { { 0, 2, 3 } }) })
    near({ { h1 }, { h2 }, { h1 } }, out[1]:totable(), 1e-4)
    near({ { c1 }, { c2 }, { c1 } }, out[2]:totable(), 1e-4)
    assert.are.same({ { 0, 2, 3 } }, out[1]:lod())
    near({ { g1 }, { g2 }, { g1 } }, out[3]:totable(), 1e-4)
  end)
end)

describe("API: arrays and counters", function()
  it("create_array, array_write{x=, i=, array=}, array_read{array=, i=}, array_length, increment{x=, value=1}", function()
    local out = eval(function()
      local a = layers.fill_constant{ shape = { 2 }, dtype = "float32", value = 1.5 }
      local b = layers.fill_constant{ shape = { 2 }, dtype = "float32", value = -4 }
      local i = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 0 }
      local zero = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 0 }
      local arr = layers.create_array("float32")
      assert.are.equal("lod_tensor_array", arr.type)
      local ret = layers.array_write{ x = a, i = i, array = arr }
      assert.are.equal(arr, ret)
      layers.increment{ x = i, value = 1 }
      layers.array_write{ x = b, i = i, array = arr }
      local f = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 5 }
      local f2 = layers.increment{ x = f }                 -- value defaults to 1
      local f3 = layers.increment{ x = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 5 }, value = 2.5 }
      return { layers.array_length(arr), layers.array_read{ array = arr, i = zero }, layers.array_read{ array = arr, i = i },
               i, f2, f3 }
    end)
    assert.are.same({ 2 }, out[1]:totable())
    near({ 1.5, 1.5 }, out[2]:totable())
    near({ -4, -4 }, out[3]:totable())
    assert.are.same({ 1 }, out[4]:totable())
    near({ 6 }, out[5]:totable())
    near({ 7.5 }, out[6]:totable())
  end)
end)
