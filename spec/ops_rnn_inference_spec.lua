-- lstm/gru as Paddle's save_inference_model leaves them: without the
-- BatchGate/BatchCellPreAct/BatchResetHiddenPrev/BatchHidden outputs. The
-- kernels then work in scratch; Hidden (and Cell) must equal a full run's.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")

local D, lod = 3, { { 0, 2, 5, 6 } }

local function same(a, b)
  assert.are.same(a.shape, b.shape)
  for i = 1, #a.data do assert.are.equal(a.data[i], b.data[i]) end
end

describe("recurrent ops without their batch outputs", function()
  it("lstm gives the same Hidden and Cell", function()
    local spec = {
      type = "lstm", attrs = { use_peepholes = false },
      inputs = { Input = T.tensor(R.uniform(6 * 4 * D, 1), { shape = { 6, 4 * D }, lod = lod }),
                 Weight = T.tensor(R.uniform(D * 4 * D, 2), { shape = { D, 4 * D } }),
                 Bias = T.tensor(R.uniform(4 * D, 3), { shape = { 1, 4 * D } }) },
    }
    spec.outputs = { Hidden = 1, Cell = 1, BatchGate = 1, BatchCellPreAct = 1 }
    local full = T.run(spec)
    spec.outputs = { Hidden = 1, Cell = 1 }
    local lean = T.run(spec)
    same(full.Hidden[1], lean.Hidden[1])
    same(full.Cell[1], lean.Cell[1])
    assert.are.same(lod, lean.Hidden[1].lod)
  end)

  it("gru gives the same Hidden", function()
    local spec = {
      type = "gru", attrs = {},
      inputs = { Input = T.tensor(R.uniform(6 * 3 * D, 4), { shape = { 6, 3 * D }, lod = lod }),
                 Weight = T.tensor(R.uniform(D * 3 * D, 5), { shape = { D, 3 * D } }),
                 Bias = T.tensor(R.uniform(3 * D, 6), { shape = { 1, 3 * D } }) },
    }
    spec.outputs = { Hidden = 1, BatchGate = 1, BatchResetHiddenPrev = 1, BatchHidden = 1 }
    local full = T.run(spec)
    spec.outputs = { Hidden = 1 }
    local lean = T.run(spec)
    same(full.Hidden[1], lean.Hidden[1])
  end)
end)
