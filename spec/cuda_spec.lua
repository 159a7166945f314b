-- CUDA kernels against the CPU kernels (tag: gpu). Each case builds a
-- one-op program, runs it on a CPU and on a CUDA executor with the same
-- random inputs, and compares every output and the gradients the backward
-- pass computes through the op. The loss is a weighted sum of the chosen
-- outputs with random weights (fed, the same on both places), so every
-- upstream gradient differs: a kernel writing zeros, or a gradient that
-- only a constant upstream makes vanish (softmax, batch_norm), cannot pass.
-- The per-place kernel counter (flag count_kernels) shows that an op with a
-- CUDA kernel ran it, not the CPU fallback. Ops with random draws are compared through what does not depend
-- on the draws (ranges, moments, the mask's consistency). Whole training
-- steps of an MLP and of a LeNet-style net are compared too, starting from
-- the same parameters. Where no GPU can be used the spec says so and skips.
local ffi = require("ffi")
local oar = require("oar")
local lib = require("oar.lib")
local T = require("spec.helpers.op_test")
local tensor = require("oar.tensor")
local C = lib.C
local layers = oar.layers
local H = require("spec.helpers.cuda_compare")
local CPU, GPU = H.CPU, H.GPU
local check = H.check
local rnd = H.rnd
local numel = H.numel
local rand = H.rand
local randint = H.randint
local probs = H.probs
local new_program = H.new_program
local declare = H.declare
local build = H.build
local executor = H.executor
local run_on = H.run_on
local forward_shapes = H.forward_shapes
local first_dtype = H.first_dtype
local same = H.same
local same_error = H.same_error
local to_tensor = H.to_tensor
local mean_of = H.mean_of
local same_training = H.same_training
local mnist_feed = H.mnist_feed

describe("CUDA kernels #gpu", function()
  local why = H.no_gpu("cuda_spec")
  if why then pending(why) return end

  describe("elementwise ops", function()
    for _, op in ipairs({ "elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div" }) do
      it(op .. " with equal shapes, a bias row and a channel vector, with grads", function()
        local y_lo = op == "elementwise_div" and 0.5 or -1
        same{ type = op, inputs = { X = rand({ 4, 5 }, -1, 1), Y = rand({ 4, 5 }, y_lo, 2) },
              grad = { wrt = { "X", "Y" } } }
        same{ type = op, inputs = { X = rand({ 6, 3 }, -1, 1), Y = rand({ 3 }, y_lo, 2) },
              grad = { wrt = { "X", "Y" } } }
        same{ type = op, inputs = { X = rand({ 2, 3, 4, 5 }, -1, 1), Y = rand({ 3 }, y_lo, 2) },
              attrs = { axis = 1 }, grad = { wrt = { "X", "Y" } } }
        -- many rows summed per Y element (the block reduction)
        same{ type = op, inputs = { X = rand({ 8, 4, 6, 6 }, -1, 1), Y = rand({ 4, 1, 1 }, y_lo, 2) },
              attrs = { axis = 1 }, grad = { wrt = { "X", "Y" } } }
        -- both sides broadcast
        same{ type = op, inputs = { X = rand({ 3, 1 }, -1, 1), Y = rand({ 1, 4 }, y_lo, 2) },
              grad = { wrt = { "X", "Y" } } }
      end)
    end
    it("float64", function()
      same{ type = "elementwise_mul", inputs = { X = rand({ 5, 7 }, -1, 1, "float64"), Y = rand({ 7 }, -1, 1, "float64") },
            grad = { wrt = { "X", "Y" } }, atol = 1e-12, rtol = 1e-12 }
    end)
  end)

  describe("activations", function()
    local cases = {
      relu = {}, sigmoid = {}, tanh = {}, exp = {}, abs = {}, square = {}, softplus = {}, sin = {}, cos = {},
      log = { lo = 0.1, hi = 3 }, sqrt = { lo = 0.1, hi = 3 }, reciprocal = { lo = 0.5, hi = 2 },
      leaky_relu = { attrs = { alpha = 0.1 } }, elu = { attrs = { alpha = 0.7 } },
      gelu = {}, gelu_tanh = { op = "gelu", attrs = { approximate = true } },
      -- Paddle 2.x's softplus parameters: its struct is activation_ext's
      softplus_beta = { op = "softplus", attrs = { beta = 2.0, threshold = 1.5 } },
      asinh = {}, acosh = { lo = 1.1, hi = 3 }, atanh = { lo = -0.8, hi = 0.8 },
      clip = { attrs = { min = -0.3, max = 0.4 } }, pow = { lo = 0.1, hi = 2, attrs = { factor = 2.5 } },
    }
    for name, c in pairs(cases) do
      it(name .. " and its grad", function()
        same{ type = c.op or name, inputs = { X = rand({ 3, 17 }, c.lo or -2, c.hi or 2, nil, 0.05) }, attrs = c.attrs,
              grad = { wrt = { "X" } } }
      end)
    end
  end)

  describe("softmax", function()
    it("over the last axis and a middle one, with grads", function()
      same{ type = "softmax", inputs = { X = rand({ 7, 10 }, -3, 3) }, grad = { wrt = { "X" } } }
      same{ type = "softmax", inputs = { X = rand({ 2, 5, 3 }, -3, 3) }, attrs = { axis = 1 }, grad = { wrt = { "X" } } }
      same{ type = "softmax", inputs = { X = rand({ 3, 700 }, -3, 3) }, grad = { wrt = { "X" } } }
      same{ type = "log_softmax", inputs = { X = rand({ 7, 10 }, -3, 3) }, grad = { wrt = { "X" } } }
    end)
  end)

  describe("mul and matmul (cuBLAS)", function()
    it("mul as fc computes it, with grads", function()
      same{ type = "mul", inputs = { X = rand({ 8, 20 }, -1, 1), Y = rand({ 20, 7 }, -1, 1) }, grad = { wrt = { "X", "Y" } } }
      same{ type = "mul", inputs = { X = rand({ 4, 3, 2, 2 }, -1, 1), Y = rand({ 12, 5 }, -1, 1) },
            attrs = { x_num_col_dims = 1 }, grad = { wrt = { "X", "Y" } } }
      same{ type = "mul", inputs = { X = rand({ 1, 9 }, -1, 1), Y = rand({ 9, 1 }, -1, 1) }, grad = { wrt = { "X", "Y" } } }
    end)
    it("matmul with transposes, batches, broadcast batches, vectors and alpha, with grads", function()
      local function mm(xs, ys, attrs)
        same{ type = "matmul", inputs = { X = rand(xs, -1, 1), Y = rand(ys, -1, 1) }, attrs = attrs,
              grad = { wrt = { "X", "Y" } } }
      end
      mm({ 4, 6 }, { 6, 3 })
      mm({ 6, 4 }, { 6, 3 }, { transpose_X = true })
      mm({ 4, 6 }, { 3, 6 }, { transpose_Y = true, alpha = 0.5 })
      mm({ 6, 4 }, { 3, 6 }, { transpose_X = true, transpose_Y = true })
      mm({ 2, 3, 4, 5 }, { 5, 2 })
      mm({ 3, 4, 5 }, { 3, 5, 2 })
      mm({ 3, 5, 4 }, { 3, 2, 5 }, { transpose_X = true, transpose_Y = true })
      mm({ 4, 5 }, { 3, 5, 2 })
      mm({ 2, 1, 4, 5 }, { 1, 3, 5, 2 })
      mm({ 5 }, { 5 })
      mm({ 5 }, { 2, 5, 3 })
      mm({ 2, 4, 5 }, { 5 })
    end)
    it("float64", function()
      same{ type = "matmul", inputs = { X = rand({ 3, 4, 5 }, -1, 1, "float64"), Y = rand({ 5, 6 }, -1, 1, "float64") },
            grad = { wrt = { "X", "Y" } }, atol = 1e-12, rtol = 1e-12 }
    end)
  end)

  describe("reductions", function()
    it("mean, reduce_sum, reduce_mean, reduce_max with grads", function()
      same{ type = "mean", inputs = { X = rand({ 5, 6 }, -1, 1) }, grad = { wrt = { "X" } } }
      same{ type = "mean", inputs = { X = rand({ 300, 400 }, -1, 1) }, grad = { wrt = { "X" } }, atol = 1e-5 }
      same{ type = "reduce_sum", inputs = { X = rand({ 3, 4, 5 }, -1, 1) }, attrs = { dim = { 1 } }, grad = { wrt = { "X" } } }
      same{ type = "reduce_sum", inputs = { X = rand({ 3, 4, 5 }, -1, 1) }, attrs = { dim = { 0, 2 }, keep_dim = true },
            grad = { wrt = { "X" } } }
      same{ type = "reduce_sum", inputs = { X = rand({ 4, 70000 }, -1, 1) }, attrs = { dim = { 1 } },
            grad = { wrt = { "X" } }, atol = 1e-3 }
      same{ type = "reduce_mean", inputs = { X = rand({ 3, 4, 5 }, -1, 1) }, attrs = { reduce_all = true },
            grad = { wrt = { "X" } } }
      same{ type = "reduce_mean", inputs = { X = rand({ 6, 5 }, -1, 1) }, attrs = { dim = { -1 } }, grad = { wrt = { "X" } } }
      same{ type = "reduce_max", inputs = { X = rand({ 6, 5 }, -1, 1) }, attrs = { dim = { 0 } }, grad = { wrt = { "X" } } }
    end)
  end)

  describe("tensor ops", function()
    it("scale, cast, sum, fill_zeros_like, fill_constant", function()
      same{ type = "scale", inputs = { X = rand({ 4, 3 }, -1, 1) }, attrs = { scale = 2.5, bias = 0.5 }, grad = { wrt = { "X" } } }
      same{ type = "scale", inputs = { X = rand({ 4, 3 }, -1, 1) }, attrs = { scale = -2, bias = 1, bias_after_scale = false } }
      same{ type = "cast", inputs = { X = rand({ 3, 4 }, -300, 300) }, attrs = { in_dtype = 5, out_dtype = 2 } }
      same{ type = "cast", inputs = { X = rand({ 3, 4 }, -300, 300) }, attrs = { in_dtype = 5, out_dtype = 20 } }
      same{ type = "cast", inputs = { X = randint({ 7 }, 100) }, attrs = { in_dtype = 3, out_dtype = 6 } }
      same{ type = "sum", inputs = { X = { rand({ 3, 4 }, -1, 1), rand({ 3, 4 }, -1, 1), rand({ 3, 4 }, -1, 1) } },
            grad = { wrt = { "X" } } }
      same{ type = "fill_zeros_like", inputs = { X = rand({ 5, 2 }, -1, 1) } }
      same{ type = "fill_constant", inputs = {}, attrs = { shape = { 3, 4 }, dtype = 5, value = 1.25 } }
      same{ type = "fill_constant", inputs = {}, attrs = { shape = { 2 }, dtype = 6, str_value = "0.1" } }
      same{ type = "fill_constant", inputs = {}, attrs = { shape = { 2 }, dtype = 5, value = 3, force_cpu = true } }
    end)
    it("sum of more inputs than one kernel call takes", function()
      local xs = {}
      for i = 1, 40 do xs[i] = rand({ 2, 3 }, -1, 1) end
      same{ type = "sum", inputs = { X = xs } }
    end)
  end)

  describe("losses and metrics", function()
    it("cross_entropy with hard and soft labels, with grads", function()
      same{ type = "cross_entropy", inputs = { X = probs(6, 5), Label = randint({ 6, 1 }, 5) }, grad = { wrt = { "X" }, of = { "Y" } } }
      same{ type = "cross_entropy", inputs = { X = probs(6, 5), Label = probs(6, 5) }, attrs = { soft_label = true },
            grad = { wrt = { "X" }, of = { "Y" } } }
      local lbl = randint({ 4, 1 }, 3)
      lbl.data[2] = -100
      same{ type = "cross_entropy", inputs = { X = probs(4, 3), Label = lbl }, attrs = { ignore_index = -100 },
            grad = { wrt = { "X" }, of = { "Y" } } }
    end)
    it("softmax_with_cross_entropy, hard and soft labels and another axis, with grads", function()
      same{ type = "softmax_with_cross_entropy", inputs = { Logits = rand({ 8, 10 }, -3, 3), Label = randint({ 8, 1 }, 10) },
            grad = { wrt = { "Logits" }, of = { "Loss" } } }
      same{ type = "softmax_with_cross_entropy", inputs = { Logits = rand({ 5, 4 }, -3, 3), Label = probs(5, 4) },
            attrs = { soft_label = true }, grad = { wrt = { "Logits" }, of = { "Loss" } } }
      same{ type = "softmax_with_cross_entropy", inputs = { Logits = rand({ 2, 4, 3 }, -3, 3), Label = randint({ 2, 1, 3 }, 4) },
            attrs = { axis = 1 }, grad = { wrt = { "Logits" }, of = { "Loss" } } }
    end)
    it("square_error_cost with grads", function()
      same{ type = "square_error_cost", inputs = { X = rand({ 6, 1 }, -1, 1), Y = rand({ 6, 1 }, -1, 1) },
            grad = { wrt = { "X", "Y" } } }
    end)
    it("labels out of range fail on both places", function()
      local lbl = randint({ 3, 1 }, 4)
      lbl.data[3] = 7
      -- the device's check (inside the kernel) names the first bad row, not its value
      local on_device = "Label 'in_Label_1' holds a value outside %[0, 4%).-first at position 2%)"
      same_error({ type = "cross_entropy", inputs = { X = probs(3, 4), Label = lbl } }, "holds 7 at row 2", on_device)
      same_error({ type = "softmax_with_cross_entropy", inputs = { Logits = rand({ 3, 4 }, -1, 1), Label = lbl } },
                 "holds 7 at row 2", on_device)
    end)
    it("top_k (small and large k) with grads, and accuracy", function()
      same{ type = "top_k", inputs = { X = rand({ 5, 10 }, -1, 1) }, attrs = { k = 1 }, grad = { wrt = { "X" } } }
      same{ type = "top_k", inputs = { X = rand({ 5, 10 }, -1, 1) }, attrs = { k = 3 }, grad = { wrt = { "X" } } }
      same{ type = "top_k", inputs = { X = rand({ 3, 50 }, -1, 1) }, attrs = { k = 30 }, grad = { wrt = { "X" } } }
      local ties = T.tensor({ 1, 2, 2, 0, 2, 1 }, { shape = { 2, 3 }, dtype = "float32" })
      same{ type = "top_k", inputs = { X = ties }, attrs = { k = 2 } }
      local ind = randint({ 16, 3 }, 10)
      same{ type = "accuracy", inputs = { Out = rand({ 16, 3 }, 0, 1), Indices = ind, Label = randint({ 16, 1 }, 10) } }
    end)
  end)

  describe("lookup_table", function()
    it("rows, padding and the dense grad", function()
      local ids = randint({ 7, 1 }, 6)
      ids.data[3] = ids.data[1]
      same{ type = "lookup_table", inputs = { W = rand({ 6, 4 }, -1, 1), Ids = ids }, grad = { wrt = { "W" } } }
      same{ type = "lookup_table", inputs = { W = rand({ 6, 4 }, -1, 1), Ids = ids }, attrs = { padding_idx = ids.data[2] },
            grad = { wrt = { "W" } } }
    end)
    it("an id out of range fails on both places", function()
      same_error({ type = "lookup_table", inputs = { W = rand({ 6, 4 }, -1, 1),
                   Ids = T.tensor({ 1, 6 }, { shape = { 2, 1 }, dtype = "int64" }) } }, "holds 6 at position 1",
                 "Ids 'in_Ids_1' holds an id out of range %[0, 6%).-first at position 1%)")
    end)
  end)

  describe("optimizers", function()
    local function opt_case(op, states, extra)
      local inputs = { Param = rand({ 5, 3 }, -1, 1), Grad = rand({ 5, 3 }, -1, 1),
                       LearningRate = T.tensor({ 0.1 }, { shape = { 1 }, dtype = "float32" }) }
      local outputs = { ParamOut = 1 }
      for slot, v in pairs(states) do inputs[slot] = v; outputs[slot .. "Out"] = 1 end
      for slot, v in pairs(extra.inputs or {}) do inputs[slot] = v end
      for slot, v in pairs(extra.outputs or {}) do outputs[slot] = v end
      same{ type = op, inputs = inputs, outputs = outputs, attrs = extra.attrs }
    end
    it("sgd, momentum (plain, nesterov), adam", function()
      opt_case("sgd", {}, {})
      opt_case("momentum", { Velocity = rand({ 5, 3 }, -1, 1) }, { attrs = { mu = 0.9 } })
      opt_case("momentum", { Velocity = rand({ 5, 3 }, -1, 1) }, { attrs = { mu = 0.8, use_nesterov = true } })
      local pow = function(v) return T.tensor({ v }, { shape = { 1 }, dtype = "float32" }) end
      opt_case("adam", { Moment1 = rand({ 5, 3 }, -1, 1), Moment2 = rand({ 5, 3 }, 0, 1) },
               { inputs = { Beta1Pow = pow(0.9 ^ 3), Beta2Pow = pow(0.999 ^ 3) },
                 outputs = { Beta1PowOut = 1, Beta2PowOut = 1 }, attrs = { beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8 } })
    end)
    it("sparse gradients through lookup_table: sgd and adam (lazy and not)", function()
      for _, c in ipairs({ { opt = "SGD" }, { opt = "Adam" }, { opt = "Adam", lazy = true }, { opt = "Momentum" } }) do
        same_training(function()
          local ids = layers.data{ name = "img", shape = { 1 }, dtype = "int64" }
          local lbl = layers.data{ name = "label", shape = { 1 }, dtype = "int64" }
          local emb = layers.embedding{ input = ids, size = { 10, 4 }, is_sparse = true }
          local pred = layers.fc{ input = emb, size = 10, act = "softmax" }
          return layers.mean(layers.cross_entropy{ input = pred, label = lbl })
        end, function()
          return { img = to_tensor(randint({ 6, 1 }, 10)), label = to_tensor(randint({ 6, 1 }, 10)) }
        end, 3, function()
          if c.opt == "SGD" then return oar.optimizer.SGD{ learning_rate = 0.5 } end
          if c.opt == "Momentum" then return oar.optimizer.Momentum{ learning_rate = 0.2, momentum = 0.9 } end
          return oar.optimizer.Adam{ learning_rate = 0.05, epsilon = 1e-3, lazy_mode = c.lazy }
        end, 1e-4)
      end
    end)
  end)

  describe("convolution, pooling, batch norm", function()
    it("conv2d: strides, paddings (also asymmetric), dilations, groups, with grads", function()
      if os.getenv("OAR_CUDA_EMU") and not C.oar_kernel_registered("conv2d", GPU, T.DTYPES.float32) then
        -- conv.cu needs cuDNN: under tools/cuda_emu the case would compare the CPU kernel with itself
        pending("conv2d runs through cuDNN, which tools/cuda_emu does not emulate")
        return
      end
      local function conv(xs, ws, attrs, dtype)
        same{ type = "conv2d", inputs = { Input = rand(xs, -1, 1, dtype), Filter = rand(ws, -1, 1, dtype) }, attrs = attrs,
              outputs = { Output = 1 }, grad = { wrt = { "Input", "Filter" }, of = { "Output" } }, atol = 1e-4 }
      end
      conv({ 2, 3, 9, 9 }, { 4, 3, 3, 3 }, {})
      conv({ 2, 3, 9, 8 }, { 4, 3, 3, 3 }, { strides = { 2, 2 }, paddings = { 1, 1 } })
      conv({ 1, 2, 7, 7 }, { 3, 2, 3, 2 }, { paddings = { 0, 2, 1, 0 } })
      conv({ 1, 2, 9, 9 }, { 2, 2, 3, 3 }, { dilations = { 2, 2 }, paddings = { 2, 2 } })
      conv({ 2, 4, 6, 6 }, { 6, 2, 3, 3 }, { groups = 2, paddings = { 1, 1 } })
      conv({ 2, 3, 6, 6 }, { 4, 3, 1, 1 }, {}, "float64")
      same{ type = "depthwise_conv2d", inputs = { Input = rand({ 2, 3, 6, 6 }, -1, 1), Filter = rand({ 3, 1, 3, 3 }, -1, 1) },
            attrs = { groups = 3, paddings = { 1, 1 } }, grad = { wrt = { "Input", "Filter" }, of = { "Output" } }, atol = 1e-4 }
    end)
    it("conv2d NHWC: cuDNN's channels-last format, Filter [M, C/groups, kh, kw], with grads", function()
      if os.getenv("OAR_CUDA_EMU") and not C.oar_kernel_registered("conv2d", GPU, T.DTYPES.float32) then
        pending("conv2d runs through cuDNN, which tools/cuda_emu does not emulate")
        return
      end
      local function conv(xs, ws, attrs, dtype, type)
        attrs.data_format = "NHWC"
        same{ type = type or "conv2d", inputs = { Input = rand(xs, -1, 1, dtype), Filter = rand(ws, -1, 1, dtype) },
              attrs = attrs, outputs = { Output = 1 }, grad = { wrt = { "Input", "Filter" }, of = { "Output" } },
              atol = 1e-4 }
      end
      conv({ 2, 9, 9, 3 }, { 4, 3, 3, 3 }, {})
      conv({ 2, 9, 8, 3 }, { 4, 3, 3, 3 }, { strides = { 2, 2 }, paddings = { 1, 1 } })
      conv({ 1, 7, 7, 2 }, { 3, 2, 3, 2 }, { paddings = { 0, 2, 1, 0 } })
      conv({ 1, 9, 9, 2 }, { 2, 2, 3, 3 }, { dilations = { 2, 2 }, paddings = { 2, 2 } })
      conv({ 2, 6, 6, 4 }, { 6, 2, 3, 3 }, { groups = 2, paddings = { 1, 1 } })
      conv({ 2, 7, 6, 3 }, { 4, 3, 3, 2 }, { strides = { 2, 1 }, padding_algorithm = "SAME" })
      conv({ 2, 6, 6, 3 }, { 4, 3, 1, 1 }, {}, "float64")
      conv({ 2, 6, 6, 3 }, { 3, 1, 3, 3 }, { groups = 3, paddings = { 1, 1 } }, nil, "depthwise_conv2d")
    end)
    it("pool2d: max (with ReLU-like ties), avg exclusive/inclusive, ceil_mode, global, adaptive, with grads", function()
      local function pool(x, attrs)
        same{ type = "pool2d", inputs = { X = x }, attrs = attrs, grad = { wrt = { "X" } } }
      end
      local relu_like = rand({ 2, 3, 8, 8 }, -1, 1)
      for i, v in ipairs(relu_like.data) do if v < 0.3 then relu_like.data[i] = 0 end end
      pool(relu_like, { pooling_type = "max", ksize = { 2, 2 }, strides = { 2, 2 } })
      pool(rand({ 2, 3, 7, 7 }, -1, 1), { pooling_type = "max", ksize = { 3, 3 }, strides = { 2, 2 }, paddings = { 1, 1 } })
      pool(rand({ 2, 3, 7, 7 }, -1, 1), { pooling_type = "avg", ksize = { 3, 3 }, strides = { 2, 2 }, paddings = { 1, 1 } })
      pool(rand({ 2, 3, 7, 7 }, -1, 1), { pooling_type = "avg", ksize = { 3, 3 }, strides = { 2, 2 }, paddings = { 1, 1 },
                                           exclusive = false })
      pool(rand({ 1, 2, 7, 7 }, -1, 1), { pooling_type = "max", ksize = { 2, 2 }, strides = { 2, 2 }, ceil_mode = true })
      pool(rand({ 1, 2, 6, 6 }, -1, 1), { pooling_type = "avg", ksize = { 2, 3 }, paddings = { 0, 1, 1, 0 } })
      pool(rand({ 2, 3, 5, 5 }, -1, 1), { pooling_type = "avg", global_pooling = true })
      pool(rand({ 2, 3, 7, 5 }, -1, 1), { pooling_type = "max", ksize = { 3, 2 }, adaptive = true })
    end)
    it("pool2d NHWC: the same windows channels-last, with grads", function()
      local function pool(x, attrs)
        attrs.data_format = "NHWC"
        same{ type = "pool2d", inputs = { X = x }, attrs = attrs, grad = { wrt = { "X" } } }
      end
      local relu_like = rand({ 2, 8, 8, 3 }, -1, 1)
      for i, v in ipairs(relu_like.data) do if v < 0.3 then relu_like.data[i] = 0 end end
      pool(relu_like, { pooling_type = "max", ksize = { 2, 2 }, strides = { 2, 2 } })
      pool(rand({ 2, 7, 6, 3 }, -1, 1), { pooling_type = "max", ksize = { 3, 3 }, strides = { 2, 2 }, paddings = { 1, 1 } })
      pool(rand({ 2, 7, 7, 5 }, -1, 1), { pooling_type = "avg", ksize = { 3, 2 }, strides = { 2, 1 }, paddings = { 1, 1 },
                                           exclusive = false })
      pool(rand({ 1, 6, 6, 2 }, -1, 1), { pooling_type = "avg", ksize = { 2, 3 }, paddings = { 0, 1, 1, 0 } })
      pool(rand({ 1, 7, 7, 2 }, -1, 1), { pooling_type = "max", ksize = { 2, 2 }, strides = { 2, 2 }, ceil_mode = true })
      pool(rand({ 2, 5, 4, 3 }, -1, 1), { pooling_type = "avg", global_pooling = true })
      pool(rand({ 2, 7, 5, 3 }, -1, 1), { pooling_type = "max", ksize = { 3, 2 }, adaptive = true })
      pool(rand({ 2, 7, 5, 3 }, -1, 1), { pooling_type = "avg", ksize = { 3, 3 }, strides = { 2, 2 },
                                           padding_algorithm = "SAME" })
    end)
    it("batch_norm: training (running statistics updated in place), test mode, NHWC, with grads", function()
      local function bn(xs, attrs, c)
        same{ type = "batch_norm",
              inputs = { X = rand(xs, -1, 2), Scale = rand({ c }, 0.5, 1.5), Bias = rand({ c }, -1, 1),
                         Mean = rand({ c }, -0.1, 0.1), Variance = rand({ c }, 0.5, 1.5) },
              persist = { Mean = true, Variance = true },
              outputs = { Y = 1, MeanOut = { "in_Mean_1" }, VarianceOut = { "in_Variance_1" }, SavedMean = 1,
                          SavedVariance = 1 },
              attrs = attrs, grad = { wrt = { "X", "Scale", "Bias" }, of = { "Y" } }, atol = 1e-4 }
      end
      bn({ 4, 3, 5, 5 }, { momentum = 0.9, epsilon = 1e-5 }, 3)
      bn({ 6, 4 }, { momentum = 0.8 }, 4)
      bn({ 2, 5, 5, 3 }, { data_layout = "NHWC" }, 3)
      bn({ 4, 3, 5, 5 }, { is_test = true }, 3)
      bn({ 4, 3, 5, 5 }, { use_global_stats = true }, 3)
    end)
  end)

  describe("random ops", function()
    it("uniform_random and gaussian_random draw in range with the right moments", function()
      local prog, feeds, fetch = build{ type = "uniform_random", inputs = {},
                                        attrs = { shape = { 200, 100 }, min = -2, max = 3, dtype = 5 } }
      local u = assert(run_on(GPU, prog, feeds, fetch))[1]
      local lo, hi = math.huge, -math.huge
      for _, x in ipairs(u.data) do lo = math.min(lo, x); hi = math.max(hi, x) end
      assert.is_true(lo >= -2 and hi < 3 and lo < -1.99 and hi > 2.99)
      assert.is_true(math.abs(mean_of(u) - 0.5) < 0.05)
      prog, feeds, fetch = build{ type = "gaussian_random", inputs = {},
                                  attrs = { shape = { 200, 100 }, mean = 1, std = 2, dtype = 5 } }
      local g = assert(run_on(GPU, prog, feeds, fetch))[1]
      local m = mean_of(g)
      local v = 0
      for _, x in ipairs(g.data) do v = v + (x - m) ^ 2 end
      v = v / #g.data
      assert.is_true(math.abs(m - 1) < 0.06 and math.abs(v - 4) < 0.2)
      -- a seed fixes the draws
      prog, feeds, fetch = build{ type = "uniform_random", inputs = {}, attrs = { shape = { 8 }, seed = 3, dtype = 5 } }
      local a = assert(run_on(GPU, prog, feeds, fetch))[1]
      local b = assert(run_on(GPU, prog, feeds, fetch))[1]
      T.assert_close(a, b, 0, 0, "seeded draws")
    end)
    it("dropout keeps about 1 - p, scales by the mask, and its grad follows the mask", function()
      local x = rand({ 100, 50 }, 0.5, 1.5)
      for _, impl in ipairs({ "downgrade_in_infer", "upscale_in_train" }) do
        local prog, feeds, fetch = build{ type = "dropout", inputs = { X = x }, outputs = { Out = 1, Mask = 1 },
                                          attrs = { dropout_prob = 0.3, dropout_implementation = impl },
                                          grad = { wrt = { "X" }, mean = true } }
        local r = assert(run_on(GPU, prog, feeds, fetch))
        local out, mask, dx = r[1], r[2], r[3]
        if fetch[1]:find("Mask") then out, mask = mask, out end
        local f = impl == "upscale_in_train" and 1 / 0.7 or 1
        local kept, n = 0, #x.data
        for i = 1, n do
          local m = mask.data[i]
          kept = kept + m
          assert.is_true(math.abs(out.data[i] - (m == 1 and x.data[i] * f or 0)) < 1e-5)
          assert.is_true(math.abs(dx.data[i] - (m == 1 and f / n or 0)) < 1e-7)
        end
        assert.is_true(math.abs(kept / n - 0.7) < 0.03)
      end
      -- test mode is deterministic: x * (1 - p)
      same{ type = "dropout", inputs = { X = x }, outputs = { Out = 1 }, attrs = { dropout_prob = 0.3, is_test = true } }
    end)
  end)

  describe("executor placement", function()
    it("runs an op without a CUDA kernel on the CPU between CUDA ops", function()
      local main, startup = oar.Program(), oar.Program()
      local y
      oar.program_guard(main, startup, function()
        local x = layers.data{ name = "x", shape = { 6 } }
        local h = layers.layer_norm{ input = layers.relu(x) }
        y = layers.scale{ x = layers.tanh(h), scale = 2 }
      end)
      local cpu, gpu = oar.Executor(oar.CPUPlace()), oar.Executor(oar.CUDAPlace(0))
      local sc, sg = oar.Scope(), oar.Scope()
      cpu:run(startup, { scope = sc })
      gpu:run(startup, { scope = sg })
      local feed = { x = to_tensor(rand({ 4, 6 }, -1, 1)) }
      local a = cpu:run(main, { feed = feed, fetch_list = { y }, scope = sc })[1]
      local b = gpu:run(main, { feed = feed, fetch_list = { y }, scope = sg })[1]
      T.assert_close(T.from_c(b.handle), T.from_c(a.handle), 1e-5, 1e-4, "mixed placement")
    end)
  end)

  describe("the defects of issue 12", function()
    it("cross_entropy: a row whose label is ignore_index inside the class range has no gradient", function()
      local lbl = randint({ 5, 1 }, 4)
      lbl.data[2], lbl.data[4] = 1, 1
      local got = same{ type = "cross_entropy", inputs = { X = probs(5, 4), Label = lbl }, attrs = { ignore_index = 1 },
                        grad = { wrt = { "X" }, of = { "Y" } } }
      local dx = got[#got]
      for _, row in ipairs({ 2, 4 }) do
        for c = 1, 4 do assert.are.equal(0, dx.data[(row - 1) * 4 + c], "row " .. row .. " class " .. c) end
      end
    end)
    it("conv2d and pool2d with padding_algorithm SAME and VALID", function()
      for _, algo in ipairs({ "SAME", "VALID" }) do
        same{ type = "conv2d", inputs = { Input = rand({ 2, 3, 7, 6 }, -1, 1), Filter = rand({ 4, 3, 3, 2 }, -1, 1) },
              attrs = { strides = { 2, 1 }, paddings = { 1, 1 }, dilations = { 2, 1 }, padding_algorithm = algo },
              outputs = { Output = 1 }, grad = { wrt = { "Input", "Filter" }, of = { "Output" } }, atol = 1e-4 }
        same{ type = "pool2d", inputs = { X = rand({ 2, 3, 7, 5 }, -1, 1) },
              attrs = { pooling_type = "max", ksize = { 3, 2 }, strides = { 2, 2 }, paddings = { 1, 1 },
                        padding_algorithm = algo }, grad = { wrt = { "X" } } }
        same{ type = "pool2d", inputs = { X = rand({ 2, 3, 7, 5 }, -1, 1) },
              attrs = { pooling_type = "avg", ksize = { 3, 3 }, strides = { 2, 2 }, padding_algorithm = algo },
              grad = { wrt = { "X" } } }
      end
    end)
    it("reduce_min with grads", function()
      same{ type = "reduce_min", inputs = { X = rand({ 6, 5 }, -1, 1) }, attrs = { dim = { 1 } }, grad = { wrt = { "X" } } }
    end)
    it("a range check flagged inside a kernel fails the run, read once at its end", function()
      local lbl = randint({ 4, 1 }, 3)
      lbl.data[3] = 7
      local prog, feeds, fetch = build{ type = "cross_entropy", inputs = { X = probs(4, 3), Label = lbl } }
      local ok, err = run_on(GPU, prog, feeds, fetch)
      assert.is_nil(ok)
      assert.matches("op 'cross_entropy'.-Label 'in_Label_1' holds .-outside %[0, 3%)", err)
      if C.oar_kernel_registered("cross_entropy", GPU, T.DTYPES.float32) then
        assert.matches("first at position 2", err)
      end
    end)
  end)

  describe("ops that used to fall back to the CPU", function()
    it("views share the device buffer: reshape2, squeeze2, unsqueeze2, flatten2, with grads", function()
      same{ type = "reshape2", inputs = { X = rand({ 4, 6 }, -1, 1) }, attrs = { shape = { 3, -1, 2 } },
            outputs = { Out = 1, XShape = 1 }, skip = { XShape = true }, grad = { wrt = { "X" } } }
      same{ type = "squeeze2", inputs = { X = rand({ 3, 1, 5 }, -1, 1) }, attrs = { axes = { 1 } },
            outputs = { Out = 1, XShape = 1 }, skip = { XShape = true }, grad = { wrt = { "X" } } }
      same{ type = "unsqueeze2", inputs = { X = rand({ 3, 5 }, -1, 1) }, attrs = { axes = { 0, 2 } },
            outputs = { Out = 1, XShape = 1 }, skip = { XShape = true }, grad = { wrt = { "X" } } }
      same{ type = "flatten2", inputs = { X = rand({ 2, 3, 4 }, -1, 1) }, attrs = { axis = 2 },
            outputs = { Out = 1, XShape = 1 }, skip = { XShape = true }, grad = { wrt = { "X" } } }
    end)
    it("transpose2, concat, split, stack with grads, including edge shapes", function()
      same{ type = "transpose2", inputs = { X = rand({ 3, 33, 5 }, -1, 1) }, attrs = { axis = { 2, 0, 1 } },
            outputs = { Out = 1, XShape = 1 }, skip = { XShape = true }, grad = { wrt = { "X" } } }
      same{ type = "transpose2", inputs = { X = rand({ 1, 4, 1, 3 }, -1, 1) }, attrs = { axis = { 3, 1, 2, 0 } },
            outputs = { Out = 1, XShape = 1 }, skip = { XShape = true }, grad = { wrt = { "X" } } }
      for _, axis in ipairs({ 0, 1, -1 }) do
        same{ type = "concat", inputs = { X = { rand({ 2, 3, 4 }, -1, 1), rand({ 2, 3, 4 }, -1, 1) } },
              attrs = { axis = axis }, grad = { wrt = { "X" } } }
      end
      same{ type = "concat", inputs = { X = { rand({ 1, 33 }, -1, 1), rand({ 1, 2 }, -1, 1), rand({ 1, 65 }, -1, 1) } },
            attrs = { axis = 1 }, grad = { wrt = { "X" } } }
      same{ type = "split", inputs = { X = rand({ 4, 9 }, -1, 1) }, attrs = { axis = 1, sections = { 2, 3, 4 } },
            outputs = { Out = 3 } }
      same{ type = "stack", inputs = { X = { rand({ 3, 5 }, -1, 1), rand({ 3, 5 }, -1, 1) } }, attrs = { axis = 1 },
            outputs = { Y = 1 }, grad = { wrt = { "X" }, of = { "Y" } } }
    end)
    it("comparisons, logical ops, elementwise max/min/pow with grads", function()
      for _, op in ipairs({ "less_than", "less_equal", "greater_than", "greater_equal", "equal", "not_equal" }) do
        same{ type = op, inputs = { X = randint({ 4, 33 }, 3), Y = randint({ 4, 33 }, 3) } }
        same{ type = op, inputs = { X = rand({ 4, 5 }, -1, 1), Y = rand({ 5 }, -1, 1) } }
      end
      local function bools(n)
        local d = {}
        for i = 1, n do d[i] = rnd() < 0.5 end
        return T.tensor(d, { shape = { n }, dtype = "bool" })
      end
      for _, op in ipairs({ "logical_and", "logical_or", "logical_xor" }) do
        same{ type = op, inputs = { X = bools(37), Y = bools(37) } }
      end
      same{ type = "logical_not", inputs = { X = bools(37) } }
      for _, op in ipairs({ "elementwise_max", "elementwise_min" }) do
        same{ type = op, inputs = { X = rand({ 6, 35 }, -1, 1), Y = rand({ 6, 35 }, -1, 1) }, grad = { wrt = { "X", "Y" } } }
        same{ type = op, inputs = { X = rand({ 6, 5 }, -1, 1), Y = rand({ 5 }, -1, 1) }, grad = { wrt = { "X", "Y" } } }
      end
      same{ type = "elementwise_pow", inputs = { X = rand({ 4, 7 }, 0.2, 2), Y = rand({ 4, 7 }, -1.5, 1.5) },
            grad = { wrt = { "X", "Y" } } }
    end)
    it("gather, increment, sigmoid_cross_entropy_with_logits, clip_by_norm", function()
      same{ type = "gather", inputs = { X = rand({ 7, 33 }, -1, 1), Index = randint({ 11 }, 7) }, grad = { wrt = { "X" } } }
      same{ type = "increment", inputs = { X = rand({ 1 }, -1, 1) }, attrs = { step = 2.5 } }
      local z = randint({ 5, 6 }, 2)
      z.dtype = "float32"
      z.data[3] = -100
      for _, normalize in ipairs({ false, true }) do
        same{ type = "sigmoid_cross_entropy_with_logits", inputs = { X = rand({ 5, 6 }, -3, 3), Label = z },
              attrs = { normalize = normalize, ignore_index = -100 }, grad = { wrt = { "X" } } }
      end
      same{ type = "clip_by_norm", inputs = { X = rand({ 40, 33 }, -1, 1) }, attrs = { max_norm = 1.5 } }
      same{ type = "clip_by_norm", inputs = { X = rand({ 3 }, -0.1, 0.1) }, attrs = { max_norm = 5 } }
    end)
    it("one_hot, arg_max, arg_min", function()
      same{ type = "one_hot", inputs = { X = randint({ 9, 1 }, 5) }, attrs = { depth = 5, dtype = 5 } }
      local x = randint({ 6, 1 }, 4)
      x.data[2] = 9
      same{ type = "one_hot", inputs = { X = x }, attrs = { depth = 4, dtype = 3, allow_out_of_range = true } }
      for _, op in ipairs({ "arg_max", "arg_min" }) do
        same{ type = op, inputs = { X = rand({ 5, 37 }, -1, 1) }, attrs = { axis = 1 } }
        same{ type = op, inputs = { X = rand({ 4, 3, 5 }, -1, 1) }, attrs = { axis = 1, dtype = 2 } }
        same{ type = op, inputs = { X = randint({ 3, 33 }, 4) }, attrs = { axis = 0 } }
      end
    end)
    it("adagrad, rmsprop (plain, centered), adamax, adadelta", function()
      local function p(n) return rand({ n, 7 }, -1, 1) end
      local function pos(n) return rand({ n, 7 }, 0.1, 1) end
      local lr = T.tensor({ 0.05 }, { shape = { 1 }, dtype = "float32" })
      same{ type = "adagrad", inputs = { Param = p(5), Grad = p(5), Moment = pos(5), LearningRate = lr },
            attrs = { epsilon = 1e-6 }, outputs = { ParamOut = 1, MomentOut = 1 } }
      for _, centered in ipairs({ false, true }) do
        -- MeanSquare well above MeanGrad^2: the centered denominator stays positive
        same{ type = "rmsprop", inputs = { Param = p(5), Grad = p(5), MeanSquare = rand({ 5, 7 }, 1, 2), Moment = p(5),
                                           MeanGrad = rand({ 5, 7 }, -0.1, 0.1),
                                           LearningRate = lr },
              attrs = { centered = centered, decay = 0.9, momentum = 0.5, epsilon = 1e-6 },
              outputs = { ParamOut = 1, MeanSquareOut = 1, MomentOut = 1, MeanGradOut = 1 }, atol = 1e-4 }
      end
      same{ type = "adamax", inputs = { Param = p(5), Grad = p(5), Moment = p(5), InfNorm = pos(5), LearningRate = lr,
                                        Beta1Pow = T.tensor({ 0.81 }, { shape = { 1 }, dtype = "float32" }) },
            outputs = { ParamOut = 1, MomentOut = 1, InfNormOut = 1 } }
      same{ type = "adadelta", inputs = { Param = p(5), Grad = p(5), AvgSquaredGrad = pos(5), AvgSquaredUpdate = pos(5) },
            outputs = { ParamOut = 1, AvgSquaredGradOut = 1, AvgSquaredUpdateOut = 1 } }
    end)
    it("edge shapes: an empty batch, one row, sizes that are no multiple of 32", function()
      for _, rows in ipairs({ 0, 1, 33 }) do
        for _, op in ipairs({ "relu", "sigmoid", "tanh", "softmax" }) do
          same{ type = op, inputs = { X = rand({ rows, 37 }, -2, 2, nil, 0.05) }, grad = rows > 0 and { wrt = { "X" } } or nil }
        end
        same{ type = "elementwise_add", inputs = { X = rand({ rows, 65 }, -1, 1), Y = rand({ 65 }, -1, 1) },
              grad = rows > 0 and { wrt = { "X", "Y" } } or nil }
        same{ type = "mul", inputs = { X = rand({ rows, 33 }, -1, 1), Y = rand({ 33, 17 }, -1, 1) },
              grad = rows > 0 and { wrt = { "X", "Y" } } or nil }
      end
    end)
  end)

  describe("after training on the device", function()
    it("scope tensors read as host values, and save/load round-trips", function()
      local main, startup = oar.Program(), oar.Program()
      local loss
      oar.program_guard(main, startup, function()
        local img = layers.data{ name = "img", shape = { 784 }, dtype = "float32" }
        local lbl = layers.data{ name = "label", shape = { 1 }, dtype = "int64" }
        local pred = layers.fc{ input = layers.fc{ input = img, size = 32, act = "relu" }, size = 10, act = "softmax" }
        loss = layers.mean(layers.cross_entropy{ input = pred, label = lbl })
        oar.optimizer.SGD{ learning_rate = 0.1 }:minimize(loss)
      end)
      local exe, scope = oar.Executor(oar.CUDAPlace(0)), oar.Scope()
      exe:run(startup, { scope = scope })
      local feed = mnist_feed({ 784 }, 8)
      for _ = 1, 3 do exe:run(main, { feed = feed(), fetch_list = { loss }, scope = scope }) end
      local pname = main:all_parameters()[1].name
      local w = scope:find_var(pname):get_tensor()
      local before = w:totable()
      assert.is_true(#before > 0 and type(before[1][1]) == "number")
      local dir = os.tmpname()
      os.remove(dir)
      oar.scope_guard(scope, function() oar.io.save_persistables(exe, dir, main) end)
      local fresh = oar.Scope()
      oar.scope_guard(fresh, function() oar.io.load_persistables(oar.Executor(oar.CPUPlace()), dir, main) end)
      local after = fresh:find_var(pname):get_tensor():totable()
      os.execute("rm -rf '" .. dir .. "'")
      for i = 1, #before do for j = 1, #before[i] do assert.are.equal(before[i][j], after[i][j]) end end
    end)
  end)

  describe("training steps", function()
    it("an MLP with Adam", function()
      same_training(function()
        local img = layers.data{ name = "img", shape = { 784 }, dtype = "float32" }
        local lbl = layers.data{ name = "label", shape = { 1 }, dtype = "int64" }
        local h1 = layers.fc{ input = img, size = 64, act = "relu" }
        local h2 = layers.fc{ input = h1, size = 32, act = "relu" }
        local pred = layers.fc{ input = h2, size = 10, act = "softmax" }
        return layers.mean(layers.cross_entropy{ input = pred, label = lbl })
      end, mnist_feed({ 784 }, 16), 3, function()
        -- a larger epsilon: Adam's first steps move a weight by about lr * sign(grad), so a
        -- gradient that is 0 up to rounding would otherwise decide a whole step
        return oar.optimizer.Adam{ learning_rate = 0.001, epsilon = 1e-3 }
      end, 2e-4)
    end)
    it("a LeNet-style net with batch norm and Momentum", function()
      same_training(function()
        local img = layers.data{ name = "img", shape = { 1, 28, 28 }, dtype = "float32" }
        local lbl = layers.data{ name = "label", shape = { 1 }, dtype = "int64" }
        local c1 = layers.conv2d{ input = img, num_filters = 6, filter_size = 5, act = "relu" }
        local p1 = layers.pool2d{ input = c1, pool_size = 2, pool_stride = 2, pool_type = "max" }
        local b1 = layers.batch_norm{ input = p1 }
        local c2 = layers.conv2d{ input = b1, num_filters = 8, filter_size = 5, act = "relu" }
        local p2 = layers.pool2d{ input = c2, pool_size = 2, pool_stride = 2, pool_type = "max" }
        local pred = layers.fc{ input = p2, size = 10, act = "softmax" }
        return layers.mean(layers.cross_entropy{ input = pred, label = lbl })
      end, mnist_feed({ 1, 28, 28 }, 8), 3, function()
        return oar.optimizer.Momentum{ learning_rate = 0.01, momentum = 0.9 }
      end, 5e-4)
    end)
  end)
end)
