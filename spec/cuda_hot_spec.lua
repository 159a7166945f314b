-- CUDA kernels of the ops on a training step's hot path (issue 22) against
-- the CPU kernels (tag: gpu), as spec/cuda_spec.lua does, forward and
-- grads, float32 and float64 (int32/int64 for the forwards that have them):
-- bmm, dot and addmm (cuBLAS); the losses smooth_l1, huber, log, hinge,
-- kldiv, bce, margin_rank, modified_huber, label_smooth, nll and
-- cross_entropy2; the norms squared_l2_norm, l1_norm, squared_l2_distance,
-- norm, cos_sim, p_norm, frobenius_norm and dist; and flip, roll,
-- tril_triu, expand_as, unstack, cross, meshgrid, index_sample, trace,
-- kron, scatter, scatter_nd_add, gather_nd, pad, pad3d and strided_slice.
-- Each case runs a one-op program (and its backward, with random upstream
-- weights) on both places and requires the op with a CUDA kernel to have
-- run it; bad labels and indices fail on both. Where no GPU can be used
-- the spec skips (tools/cuda_emu runs it on the CPU, as .ci/run does).
local T = require("spec.helpers.op_test")
local H = require("spec.helpers.cuda_compare")
local rand, randint, probs, same, same_error = H.rand, H.randint, H.probs, H.same, H.same_error

-- v with every value made 0 or 1 (labels), in dtype dt
local function bits(shape, dt)
  local t = randint(shape, 2)
  return T.tensor(t.data, { shape = shape, dtype = dt })
end

describe("CUDA kernels of hot-path ops #gpu", function()
  local why = H.no_gpu("cuda_hot_spec")
  if why then pending(why) return end

  for _, dt in ipairs({ "float32", "float64" }) do
    local tol = dt == "float32" and 1e-4 or 1e-9
    describe(dt, function()
      it("bmm, with grads", function()
        same{ type = "bmm", inputs = { X = rand({ 3, 4, 5 }, -1, 1, dt), Y = rand({ 3, 5, 2 }, -1, 1, dt) },
              grad = { wrt = { "X", "Y" } }, atol = tol, rtol = tol }
        same{ type = "bmm", inputs = { X = rand({ 1, 7, 3 }, -1, 1, dt), Y = rand({ 1, 3, 6 }, -1, 1, dt) },
              grad = { wrt = { "X", "Y" } }, atol = tol, rtol = tol }
      end)
      it("dot of rows and of vectors, with grads", function()
        same{ type = "dot", inputs = { X = rand({ 4, 6 }, -1, 1, dt), Y = rand({ 4, 6 }, -1, 1, dt) },
              grad = { wrt = { "X", "Y" } }, atol = tol, rtol = tol }
        same{ type = "dot", inputs = { X = rand({ 9 }, -1, 1, dt), Y = rand({ 9 }, -1, 1, dt) },
              grad = { wrt = { "X", "Y" } }, atol = tol, rtol = tol }
      end)
      it("addmm with a full, a row and a scalar Input, with grads", function()
        for _, ishape in ipairs({ { 3, 4 }, { 1, 4 }, { 3, 1 }, { 1, 1 } }) do
          same{ type = "addmm",
                inputs = { Input = rand(ishape, -1, 1, dt), X = rand({ 3, 5 }, -1, 1, dt), Y = rand({ 5, 4 }, -1, 1, dt) },
                attrs = { Alpha = 0.7, Beta = 1.5 }, grad = { wrt = { "Input", "X", "Y" } }, atol = tol, rtol = tol }
        end
      end)

      it("smooth_l1_loss with and without weights, with grads", function()
        same{ type = "smooth_l1_loss", inputs = { X = rand({ 5, 4 }, -2, 2, dt), Y = rand({ 5, 4 }, -2, 2, dt) },
              attrs = { sigma = 1.5 }, grad = { wrt = { "X", "Y" } }, atol = tol, rtol = tol }
        same{ type = "smooth_l1_loss",
              inputs = { X = rand({ 4, 3 }, -2, 2, dt), Y = rand({ 4, 3 }, -2, 2, dt),
                         InsideWeight = rand({ 4, 3 }, 0, 2, dt), OutsideWeight = rand({ 4, 3 }, 0, 2, dt) },
              grad = { wrt = { "X", "Y" } }, atol = tol, rtol = tol }
      end)
      it("huber_loss, with grads", function()
        same{ type = "huber_loss", inputs = { X = rand({ 6, 1 }, -2, 2, dt), Y = rand({ 6, 1 }, -2, 2, dt) },
              attrs = { delta = 0.8 }, grad = { wrt = { "X", "Y" } }, atol = tol, rtol = tol }
      end)
      it("log_loss, with grads", function()
        same{ type = "log_loss", inputs = { Predicted = rand({ 7, 1 }, 0.05, 0.95, dt), Labels = bits({ 7, 1 }, dt) },
              attrs = { epsilon = 1e-4 }, grad = { wrt = { "Predicted" }, of = { "Loss" } }, atol = tol, rtol = tol }
      end)
      it("hinge_loss, with grads", function()
        same{ type = "hinge_loss", inputs = { Logits = rand({ 8, 1 }, -2, 2, dt, 0.05), Labels = bits({ 8, 1 }, dt) },
              grad = { wrt = { "Logits" }, of = { "Loss" } }, atol = tol, rtol = tol }
      end)
      it("kldiv_loss with each reduction, with grads", function()
        for _, red in ipairs({ "none", "batchmean", "mean", "sum" }) do
          same{ type = "kldiv_loss", inputs = { X = rand({ 4, 5 }, -2, 0, dt), Target = probs(4, 5, dt) },
                attrs = { reduction = red }, grad = { wrt = { "X" }, of = { "Loss" } }, atol = tol, rtol = tol }
        end
      end)
      it("bce_loss, with grads", function()
        same{ type = "bce_loss", inputs = { X = rand({ 6, 2 }, 0.02, 0.98, dt), Label = bits({ 6, 2 }, dt) },
              grad = { wrt = { "X" } }, atol = tol, rtol = tol }
      end)
      it("margin_rank_loss, with grads", function()
        local l = bits({ 6, 1 }, dt)
        for i = 1, #l.data do l.data[i] = 2 * l.data[i] - 1 end
        same{ type = "margin_rank_loss",
              inputs = { X1 = rand({ 6, 1 }, -1, 1, dt), X2 = rand({ 6, 1 }, -1, 1, dt), Label = l },
              attrs = { margin = 0.1 }, grad = { wrt = { "X1", "X2" } }, atol = tol, rtol = tol }
      end)
      it("modified_huber_loss, with grads", function()
        same{ type = "modified_huber_loss", inputs = { X = rand({ 8, 1 }, -3, 3, dt), Y = bits({ 8, 1 }, dt) },
              grad = { wrt = { "X" } }, atol = tol, rtol = tol }
      end)

      it("squared_l2_norm and l1_norm over small and many-block tensors, with grads", function()
        for _, shape in ipairs({ { 3, 4 }, { 70, 300 } }) do
          same{ type = "squared_l2_norm", inputs = { X = rand(shape, -1, 1, dt) }, grad = { wrt = { "X" } },
                atol = tol, rtol = tol }
          same{ type = "l1_norm", inputs = { X = rand(shape, -1, 1, dt, 0.01) }, grad = { wrt = { "X" } },
                atol = tol, rtol = tol }
        end
      end)
      it("squared_l2_distance with a Y per row and one shared Y row, with grads", function()
        same{ type = "squared_l2_distance", inputs = { X = rand({ 5, 4 }, -1, 1, dt), Y = rand({ 5, 4 }, -1, 1, dt) },
              grad = { wrt = { "X", "Y" } }, atol = tol, rtol = tol }
        same{ type = "squared_l2_distance", inputs = { X = rand({ 5, 4 }, -1, 1, dt), Y = rand({ 1, 4 }, -1, 1, dt) },
              grad = { wrt = { "X", "Y" } }, atol = tol, rtol = tol }
      end)
      it("norm along the first, a middle and the last axis, with grads", function()
        for _, axis in ipairs({ 0, 1, -1 }) do
          same{ type = "norm", inputs = { X = rand({ 3, 4, 5 }, -1, 1, dt) }, attrs = { axis = axis, epsilon = 1e-10 }, outputs = { Out = 1, Norm = 1 },
                grad = { wrt = { "X" }, of = { "Out" } }, atol = tol, rtol = tol }
        end
      end)
      it("cos_sim with a Y per row and one shared Y row, with grads", function()
        same{ type = "cos_sim", inputs = { X = rand({ 4, 6 }, -1, 1, dt), Y = rand({ 4, 6 }, -1, 1, dt) },
              grad = { wrt = { "X", "Y" }, of = { "Out" } }, atol = tol, rtol = tol }
        same{ type = "cos_sim", inputs = { X = rand({ 4, 6 }, -1, 1, dt), Y = rand({ 1, 6 }, -1, 1, dt) },
              grad = { wrt = { "X", "Y" }, of = { "Out" } }, atol = tol, rtol = tol }
      end)

      it("flip and roll (some dims, all dims, flat), with grads", function()
        same{ type = "flip", inputs = { X = rand({ 2, 3, 4 }, -1, 1, dt) }, attrs = { dims = { 0, 2 } },
              grad = { wrt = { "X" } } }
        same{ type = "flip", inputs = { X = rand({ 5 }, -1, 1, dt) }, attrs = { dims = { -1 } }, grad = { wrt = { "X" } } }
        same{ type = "roll", inputs = { X = rand({ 3, 4, 2 }, -1, 1, dt) }, attrs = { shifts = { 1, -3 }, dims = { 0, 1 } },
              grad = { wrt = { "X" } } }
        same{ type = "roll", inputs = { X = rand({ 3, 4 }, -1, 1, dt) }, attrs = { shifts = { 5 }, dims = {} },
              grad = { wrt = { "X" } } }
      end)
      it("tril_triu, lower and upper with offsets, batched, with grads", function()
        for _, c in ipairs({ { true, 0 }, { true, -1 }, { false, 1 }, { false, 0 } }) do
          same{ type = "tril_triu", inputs = { X = rand({ 2, 4, 5 }, -1, 1, dt) },
                attrs = { lower = c[1], diagonal = c[2] }, grad = { wrt = { "X" } } }
        end
      end)
      it("expand_as, with grads", function()
        same{ type = "expand_as", inputs = { X = rand({ 2, 1, 3 }, -1, 1, dt), target_tensor = rand({ 4, 5, 6 }, 0, 1, dt) },
              grad = { wrt = { "X" } }, atol = tol, rtol = tol }
        same{ type = "expand_as", inputs = { X = rand({ 3, 2 }, -1, 1, dt), target_tensor = rand({ 3, 4 }, 0, 1, dt) },
              grad = { wrt = { "X" } }, atol = tol, rtol = tol }
      end)
      it("unstack along the first and a middle axis, with grads", function()
        same{ type = "unstack", inputs = { X = rand({ 3, 4, 2 }, -1, 1, dt) }, attrs = { axis = 0, num = 3 },
              outputs = { Y = 3 }, grad = { wrt = { "X" }, of = { "Y" } } }
        same{ type = "unstack", inputs = { X = rand({ 3, 4, 2 }, -1, 1, dt) }, attrs = { axis = 1, num = 4 },
              outputs = { Y = 4 }, grad = { wrt = { "X" }, of = { "Y" } } }
      end)

      it("label_smooth with and without PriorDist, with grads", function()
        same{ type = "label_smooth", inputs = { X = probs(4, 5, dt) }, attrs = { epsilon = 0.1 },
              grad = { wrt = { "X" } }, atol = tol, rtol = tol }
        same{ type = "label_smooth", inputs = { X = probs(4, 5, dt), PriorDist = probs(1, 5, dt) }, attrs = { epsilon = 0.2 },
              grad = { wrt = { "X" } }, atol = tol, rtol = tol }
      end)
      it("nll_loss, 2-D and 4-D, weighted, ignored labels, each reduction, with grads", function()
        for _, red in ipairs({ "none", "mean", "sum" }) do
          local l = randint({ 6 }, 4)
          l.data[2] = -100
          same{ type = "nll_loss", inputs = { X = rand({ 6, 4 }, -3, 0, dt), Label = l, Weight = rand({ 4 }, 0.5, 1.5, dt) },
                attrs = { reduction = red }, grad = { wrt = { "X" }, of = { "Out" } }, atol = tol, rtol = tol }
          same{ type = "nll_loss", inputs = { X = rand({ 2, 3, 2, 2 }, -3, 0, dt), Label = randint({ 2, 2, 2 }, 3) },
                attrs = { reduction = red }, grad = { wrt = { "X" }, of = { "Out" } }, atol = tol, rtol = tol }
        end
      end)
      it("cross_entropy2 with an ignored label, with grads", function()
        local l = randint({ 5, 1 }, 4)
        l.data[4] = -100
        same{ type = "cross_entropy2", inputs = { X = probs(5, 4, dt), Label = l },
              outputs = { Y = 1, XShape = 1, MatchX = 1 }, skip = { XShape = true },
              grad = { wrt = { "X" }, of = { "Y" } }, atol = tol, rtol = tol }
      end)

      it("cross along a given and the first size-3 dim, with grads", function()
        same{ type = "cross", inputs = { X = rand({ 3, 4 }, -1, 1, dt), Y = rand({ 3, 4 }, -1, 1, dt) },
              attrs = { dim = 0 }, grad = { wrt = { "X", "Y" } }, atol = tol, rtol = tol }
        same{ type = "cross", inputs = { X = rand({ 2, 5, 3 }, -1, 1, dt), Y = rand({ 2, 5, 3 }, -1, 1, dt) },
              grad = { wrt = { "X", "Y" } }, atol = tol, rtol = tol }
      end)
      it("meshgrid of three vectors, with grads", function()
        same{ type = "meshgrid", inputs = { X = { rand({ 3 }, -1, 1, dt), rand({ 4 }, -1, 1, dt), rand({ 2 }, -1, 1, dt) } },
              outputs = { Out = 3 }, grad = { wrt = { "X" }, of = { "Out" } }, atol = tol, rtol = tol }
      end)
      it("index_sample with int64 and int32 indices, repeated, with grads", function()
        local ix = randint({ 4, 5 }, 6)
        ix.data[2] = ix.data[1]
        same{ type = "index_sample", inputs = { X = rand({ 4, 6 }, -1, 1, dt), Index = ix }, grad = { wrt = { "X" } },
              atol = tol, rtol = tol }
        local i32 = T.tensor(randint({ 4, 3 }, 6).data, { shape = { 4, 3 }, dtype = "int32" })
        same{ type = "index_sample", inputs = { X = rand({ 4, 6 }, -1, 1, dt), Index = i32 }, grad = { wrt = { "X" } },
              atol = tol, rtol = tol }
      end)

      it("p_norm of orders 2, 3, 1, 0, inf and -inf, along an axis and as a vector, with grads", function()
        for _, pn in ipairs({ 2, 3, 1, 0, math.huge, -math.huge }) do
          same{ type = "p_norm", inputs = { X = rand({ 3, 4, 5 }, -1, 1, dt, 0.05) }, attrs = { porder = pn, axis = 1 },
                grad = { wrt = { "X" } }, atol = tol, rtol = tol }
        end
        same{ type = "p_norm", inputs = { X = rand({ 4, 6 }, -1, 1, dt, 0.05) }, attrs = { porder = 2, asvector = true },
              grad = { wrt = { "X" } }, atol = tol, rtol = tol }
      end)
      it("frobenius_norm over some dims, all dims and with keep_dim, with grads", function()
        same{ type = "frobenius_norm", inputs = { X = rand({ 3, 4, 5 }, -1, 1, dt) }, attrs = { dim = { 0, 2 } },
              grad = { wrt = { "X" } }, atol = tol, rtol = tol }
        same{ type = "frobenius_norm", inputs = { X = rand({ 3, 4, 5 }, -1, 1, dt) }, attrs = { dim = { -1 }, keep_dim = true },
              grad = { wrt = { "X" } }, atol = tol, rtol = tol }
        same{ type = "frobenius_norm", inputs = { X = rand({ 3, 4 }, -1, 1, dt) }, attrs = { dim = { 0 }, reduce_all = true },
              grad = { wrt = { "X" } }, atol = tol, rtol = tol }
      end)

      it("trace with offsets and other axes, with grads", function()
        same{ type = "trace", inputs = { Input = rand({ 4, 5 }, -1, 1, dt) }, grad = { wrt = { "Input" } }, atol = tol, rtol = tol }
        same{ type = "trace", inputs = { Input = rand({ 3, 4, 5 }, -1, 1, dt) }, attrs = { offset = 1, axis1 = 0, axis2 = 2 },
              grad = { wrt = { "Input" } }, atol = tol, rtol = tol }
        same{ type = "trace", inputs = { Input = rand({ 3, 4, 5 }, -1, 1, dt) }, attrs = { offset = -2, axis1 = -1, axis2 = 1 },
              grad = { wrt = { "Input" } }, atol = tol, rtol = tol }
      end)
      it("kron of equal and of different ranks, with grads", function()
        same{ type = "kron", inputs = { X = rand({ 2, 3 }, -1, 1, dt), Y = rand({ 3, 2 }, -1, 1, dt) },
              grad = { wrt = { "X", "Y" } }, atol = tol, rtol = tol }
        same{ type = "kron", inputs = { X = rand({ 2, 2, 3 }, -1, 1, dt), Y = rand({ 4 }, -1, 1, dt) },
              grad = { wrt = { "X", "Y" } }, atol = tol, rtol = tol }
      end)

      it("scatter, overwriting and adding, with repeated ids, with grads", function()
        for _, ow in ipairs({ true, false }) do
          local ids = T.tensor({ 3, 0, 3, 1 }, { shape = { 4 }, dtype = "int64" })
          same{ type = "scatter", inputs = { X = rand({ 5, 3 }, -1, 1, dt), Ids = ids, Updates = rand({ 4, 3 }, -1, 1, dt) },
                attrs = { overwrite = ow }, grad = { wrt = { "X", "Updates" } }, atol = tol, rtol = tol }
        end
      end)
      it("scatter_nd_add with repeated tuples and gather_nd, with grads", function()
        local ix = T.tensor({ 0, 1, 2, 0, 0, 1 }, { shape = { 3, 2 }, dtype = "int64" })
        same{ type = "scatter_nd_add", inputs = { X = rand({ 3, 2, 4 }, -1, 1, dt), Index = ix, Updates = rand({ 3, 4 }, -1, 1, dt) },
              grad = { wrt = { "X", "Updates" } }, atol = tol, rtol = tol }
        local gi = T.tensor({ 1, 0, 2, 1, 1, 0 }, { shape = { 3, 2 }, dtype = "int32" })
        same{ type = "gather_nd", inputs = { X = rand({ 3, 2, 4 }, -1, 1, dt), Index = gi }, grad = { wrt = { "X" } },
              atol = tol, rtol = tol }
        same{ type = "gather_nd", inputs = { X = rand({ 4, 3 }, -1, 1, dt), Index = T.tensor({ 2, 2, 0 }, { shape = { 3, 1 }, dtype = "int64" }) },
              grad = { wrt = { "X" } }, atol = tol, rtol = tol }
      end)

      it("pad and pad3d in each mode (attr and tensor paddings), with grads", function()
        same{ type = "pad", inputs = { X = rand({ 2, 3 }, -1, 1, dt) }, attrs = { paddings = { 1, 0, 2, 1 }, pad_value = 0.5 },
              grad = { wrt = { "X" } }, atol = tol, rtol = tol }
        for _, mode in ipairs({ "constant", "reflect", "replicate", "circular" }) do
          same{ type = "pad3d", inputs = { X = rand({ 1, 2, 2, 3, 3 }, -1, 1, dt) },
                attrs = { paddings = { 1, 2, 0, 1, 1, 1 }, mode = mode, value = 0.25 },
                grad = { wrt = { "X" } }, atol = tol, rtol = tol }
        end
        local pt = T.tensor({ 2, 0, 1, 1, 0, 1 }, { shape = { 6 }, dtype = "int32" })
        same{ type = "pad3d", inputs = { X = rand({ 1, 1, 2, 3, 3 }, -1, 1, dt), Paddings = pt },
              attrs = { mode = "reflect" }, grad = { wrt = { "X" } }, atol = tol, rtol = tol }
      end)

      it("dist of orders 2, 1, 3, 0, inf and -inf, equal and broadcast shapes, with grads", function()
        for _, pn in ipairs({ 2, 1, 3, 0, math.huge, -math.huge }) do
          same{ type = "dist", inputs = { X = rand({ 3, 4 }, -1, 1, dt), Y = rand({ 3, 4 }, -1, 1, dt) }, attrs = { p = pn },
                grad = { wrt = { "X", "Y" } }, atol = tol, rtol = tol }
        end
        same{ type = "dist", inputs = { X = rand({ 2, 1, 4 }, -1, 1, dt), Y = rand({ 3, 1 }, -1, 1, dt) }, attrs = { p = 2 },
              grad = { wrt = { "X", "Y" } }, atol = tol, rtol = tol }
      end)

      it("strided_slice from attrs (negative strides too) and from tensors, with grads", function()
        same{ type = "strided_slice", inputs = { Input = rand({ 4, 5, 6 }, -1, 1, dt) },
              attrs = { axes = { 0, 2 }, starts = { 1, -1 }, ends = { 4, 0 }, strides = { 2, -2 } },
              grad = { wrt = { "Input" } } }
        local function i32(v) return T.tensor(v, { shape = { #v }, dtype = "int32" }) end
        same{ type = "strided_slice",
              inputs = { Input = rand({ 4, 5, 6 }, -1, 1, dt), StartsTensor = i32({ 0, 1 }), EndsTensor = i32({ 5, 6 }),
                         StridesTensor = i32({ 2, 3 }) },
              attrs = { axes = { 1, 2 }, starts = { 0, 0 }, ends = { 1, 1 }, strides = { 1, 1 } },
              grad = { wrt = { "Input" } } }
      end)
    end)
  end

  it("bce_loss's X outside [0, 1] and modified_huber_loss's bad labels fail on both places", function()
    local x = rand({ 4, 1 }, 0.1, 0.9)
    x.data[3] = 1.5
    same_error({ type = "bce_loss", inputs = { X = x, Label = bits({ 4, 1 }, "float32") } }, "holds 1.5 at element 2",
               "X 'in_X_1' holds a value outside %[0, 1%].-first at position 2%)")
    local y = bits({ 4, 1 }, "float32")
    y.data[2] = 0.5
    same_error({ type = "modified_huber_loss", inputs = { X = rand({ 4, 1 }, -1, 1), Y = y } },
               "holds 0.5 at element 1", "Y 'in_Y_1' holds a label other than 0 and 1.-first at position 1%)")
    local l = randint({ 3 }, 4)
    l.data[3] = 9
    same_error({ type = "nll_loss", inputs = { X = rand({ 3, 4 }, -2, 0), Label = l } }, "holds 9 at 2",
               "Label 'in_Label_1' holds a class id outside %[0, 4%).-first at position 2%)")
    local ix = randint({ 2, 2 }, 3)
    ix.data[4] = 3
    same_error({ type = "index_sample", inputs = { X = rand({ 2, 3 }, -1, 1), Index = ix } }, "is out of range",
               "Index 'in_Index_1' holds a value out of range %[0, 3%).-first at position 3%)")
  end)

  it("the movers with int32 and int64 data", function()
    local ints = T.tensor(randint({ 3, 4 }, 100).data, { shape = { 3, 4 }, dtype = "int32" })
    same{ type = "flip", inputs = { X = ints }, attrs = { dims = { 1 } } }
    same{ type = "roll", inputs = { X = randint({ 3, 4 }, 100) }, attrs = { shifts = { 2 }, dims = { 1 } } }
    same{ type = "tril_triu", inputs = { X = ints }, attrs = { lower = true, diagonal = 0 } }
    same{ type = "cross", inputs = { X = randint({ 3, 2 }, 9), Y = randint({ 3, 2 }, 9) }, attrs = { dim = 0 } }
    same{ type = "kron", inputs = { X = randint({ 2, 3 }, 9), Y = randint({ 2, 2 }, 9) } }
  end)
end)
