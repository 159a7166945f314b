-- Products large enough to be split across threads (kernels/cpu/gemm.h)
-- give bit-identical results with 1 and 2 threads: the split is at fixed
-- column/row blocks, each one single-threaded call.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")

local numel = require("spec.helpers.index").numel

local at_threads = require("spec.helpers.threads")

local function mul_grads(xs, ys, dtype)
  dtype = dtype or "float32"
  local x, y = R.symmetric(numel(xs), 1), R.symmetric(numel(ys), 2)
  local g = R.symmetric(xs[1] * ys[2], 3)
  return function()
    local f = T.run{ type = "mul", outputs = { Out = 1 },
      inputs = { X = T.tensor(x, { shape = xs, dtype = dtype }), Y = T.tensor(y, { shape = ys, dtype = dtype }) } }
    local b = T.run{ type = "mul_grad", outputs = { ["X@GRAD"] = 1, ["Y@GRAD"] = 1 },
      inputs = { X = T.tensor(x, { shape = xs, dtype = dtype }), Y = T.tensor(y, { shape = ys, dtype = dtype }),
                 ["Out@GRAD"] = T.tensor(g, { shape = { xs[1], ys[2] }, dtype = dtype }) } }
    return { f.Out[1].data, b["X@GRAD"][1].data, b["Y@GRAD"][1].data }
  end
end

describe("GEMMs split across threads", function()
  it("float64 (OpenBLAS, fixed blocks) mul [128, 784] x [784, 500] and its grads", function()
    local run = mul_grads({ 128, 784 }, { 784, 500 }, "float64")
    local one, two = at_threads(1, run), at_threads(2, run)
    for i = 1, 3 do assert.same_array(one[i], two[i], ({ "Out", "X@GRAD", "Y@GRAD" })[i]) end
  end)
  for _, case in ipairs({ { { 128, 784 }, { 784, 500 } }, { { 100, 256 }, { 256, 10 } }, { { 1, 784 }, { 784, 300 } },
                          { { 300, 784 }, { 784, 1 } }, { { 70, 33 }, { 33, 129 } },
                          -- GEMVs large enough to split (>= 2^17 multiply-adds), batch-1 MLP inference's too
                          { { 1, 784 }, { 784, 512 } }, { { 1, 512 }, { 512, 256 } }, { { 512, 784 }, { 784, 1 } },
                          { { 1, 4096 }, { 4096, 600 } }, { { 600, 4096 }, { 4096, 1 } } }) do
    it(("mul [%d, %d] x [%d, %d] and its grads"):format(case[1][1], case[1][2], case[2][1], case[2][2]), function()
      local run = mul_grads(case[1], case[2])
      local one, two = at_threads(1, run), at_threads(2, run)
      for i = 1, 3 do assert.same_array(one[i], two[i], ({ "Out", "X@GRAD", "Y@GRAD" })[i]) end
    end)
  end
end)
