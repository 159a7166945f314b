-- A model PaddlePaddle 2.6 built and saved (tools/paddle_ops_fixture/gen.py)
-- over the ops added for Paddle coverage: conv2d_transpose, bilinear/nearest
-- interp_v2, prelu, group_norm, instance_norm, pad3d, where, index_select,
-- gather_nd, cumsum, p_norm, argsort, softplus (beta/threshold),
-- fill_any_like, reduce_any, elementwise_floordiv/mod. oar loads the saved
-- __model__ (every attribute Paddle wrote is declared) and its parameters,
-- runs it, and matches the outputs Paddle computed.
local oar = require("oar")

local FIX = "spec/fixtures/paddle_ops"

local flatten = require("spec.helpers.index").flatten

describe("a PaddlePaddle 2.6 model over the new ops", function()
  local cases = dofile(FIX .. "/cases.lua")

  it("loads, and every op it uses is registered", function()
    for _, op in ipairs(cases.ops) do
      assert.is_true(require("oar.lib").C.oar_op_is_registered(op), op)
    end
    local exe = oar.Executor(oar.CPUPlace())
    local prog, feeds, fetches = oar.io.load_inference_model(FIX .. "/model", exe)
    assert.are.same({ "x", "idx", "nd" }, feeds)
    assert.are.equal(#cases.outputs, #fetches)
    assert.is_not_nil(prog)
  end)

  it("matches Paddle's outputs", function()
    local exe = oar.Executor(oar.CPUPlace())
    local scope = oar.Scope()
    local prog, feeds, fetches = oar.io.load_inference_model{ dirname = FIX .. "/model", executor = exe, scope = scope }
    local feed = {}
    for _, name in ipairs(feeds) do
      local v = cases.inputs[name]
      local t = oar.Tensor{ shape = v.shape, dtype = v.dtype }
      local ptr = t:data()
      for i, x in ipairs(v.data) do ptr[i - 1] = x end
      feed[name] = t
    end
    local got = exe:run(prog, { feed = feed, fetch_list = fetches, scope = scope })
    for i, want in ipairs(cases.outputs) do
      local g = got[i]
      assert.are.same(want.shape, g:shape(), "output " .. i .. " shape")
      local data = flatten(g:totable())
      assert.are.equal(#want.data, #data)
      for j, w in ipairs(want.data) do
        local d = data[j]
        assert(math.abs(d - w) <= 1e-5 * math.max(1, math.abs(w)),
          string.format("output %d (%s), element %d: oar %.8g, Paddle %.8g", i, fetches[i].name, j, d, w))
      end
    end
  end)
end)
