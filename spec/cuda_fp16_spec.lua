-- Float16 on CUDA (tag: gpu). Each kernel case runs one op twice: on the
-- CUDA place in float16 (float32 inputs cast to float16 on the device, the
-- outputs cast back) and on the CPU in float32; outputs and the gradients
-- of the inputs (through cast's gradient, so float32 again) must agree to
-- half precision. The loss is a weighted sum of the outputs with random
-- weights, so every upstream gradient differs. The kernel counter shows
-- that the float16 op and its grad ran on CUDA. Then an MLP and a LeNet are
-- trained with oar.amp.decorate{use_fp16_compute = true} (mixed precision,
-- loss scaling) on the GPU and in float32 on the CPU from the same
-- parameters: the loss curves must stay close and both must learn. Where no
-- GPU can be used the spec says so and skips. Without a GPU, the kernels
-- other than conv2d's run on the CPU through tools/cuda_emu:
--   tools/cuda_emu/run spec/cuda_fp16_spec.lua \
--     kernels/cuda/{elementwise,activation,softmax,pool,batch_norm,half_ops,matmul,optimizer,tensor_ops}.cu
local oar = require("oar")
local lib = require("oar.lib")
local T = require("spec.helpers.op_test")
local H = require("spec.helpers.cuda_compare")
local C = lib.C
local layers = oar.layers
local rand, randint, to_tensor = H.rand, H.randint, H.to_tensor

local function flat(t, acc)
  acc = acc or {}
  if type(t) == "table" then for _, v in ipairs(t) do flat(v, acc) end else acc[#acc + 1] = t end
  return acc
end

local function max_abs(v)
  local m = 0
  for _, x in ipairs(v) do if math.abs(x) > m then m = math.abs(x) end end
  return m
end

-- got (float16 run) against want (float32 run): |g - w| <= atol * max(1, max|want|) + rtol * |w|
local function assert_half_close(got, want, what, atol, rtol)
  local g, w = flat(got), flat(want)
  assert.are.equal(#w, #g, what .. ": element count")
  local scale = math.max(1, max_abs(w))
  for i = 1, #w do
    local tol = (atol or 1e-2) * scale + (rtol or 1e-2) * math.abs(w[i])
    assert.is_true(math.abs(g[i] - w[i]) <= tol,
      ("%s: element %d is %.6g in float16, %.6g in float32 (tolerance %.3g)"):format(what, i, g[i], w[i], tol))
  end
end

-- Builds `case` (type, inputs {Slot = test tensor}, attrs, outputs {Slot,...},
-- keep32 {input slots fed as float32: batch_norm's vectors}, out32 {output
-- slots that stay float32}, grad {input slots}) in float32 or float16.
local function program(case, half)
  local main, startup = oar.Program(), oar.Program()
  local fetch, feeds, labels = {}, {}, {}
  oar.program_guard(main, startup, function()
    local b = main:global_block()
    local ins, raw = {}, {}
    for _, slot in ipairs(H.sorted_keys(case.inputs)) do
      local t = case.inputs[slot]
      local x = layers.data{ name = "in_" .. slot, shape = t.shape, dtype = "float32", append_batch_size = false }
      x.stop_gradient = false
      feeds[x.name] = to_tensor(t)
      raw[slot] = x
      ins[slot] = { (half and not (case.keep32 and case.keep32[slot])) and layers.cast(x, "float16") or x }
    end
    local outs, produced = {}, {}
    for _, slot in ipairs(case.outputs or { "Out" }) do
      local dt = (half and not (case.out32 and case.out32[slot])) and "float16" or "float32"
      local o = b:create_var{ name = "out_" .. slot, dtype = dt }
      outs[slot] = { o }
      produced[#produced + 1] = { slot, o }
    end
    for slot, names in pairs(case.extra_outputs or {}) do
      outs[slot] = {}
      for i, n in ipairs(names) do
        outs[slot][i] = b:create_var{ name = n, dtype = (half and not (case.out32 and case.out32[slot])) and "float16"
          or "float32" }
      end
    end
    b:append_op{ type = case.type, inputs = ins, outputs = outs, attrs = case.attrs or {} }
    local terms = {}
    for _, p in ipairs(produced) do
      local o = p[2]
      local o32 = o.dtype == "float16" and layers.cast(o, "float32") or o
      fetch[#fetch + 1] = o32
      labels[#fetch] = case.type .. " " .. p[1]
      if case.grad then
        local w = layers.data{ name = "w_" .. p[1], shape = case.out_shapes[p[1]], dtype = "float32",
          append_batch_size = false }
        feeds[w.name] = to_tensor(rand(case.out_shapes[p[1]], -1, 1))
        terms[#terms + 1] = layers.reduce_sum(layers.elementwise_mul(o32, w))
      end
    end
    if case.grad then
      local loss = #terms == 1 and terms[1] or layers.sums(terms)
      local wrt = {}
      for i, slot in ipairs(case.grad) do wrt[i] = raw[slot] end
      local grads = oar.gradients({ loss }, wrt)
      for i, g in ipairs(grads) do
        fetch[#fetch + 1] = g
        labels[#fetch] = case.type .. " d" .. case.grad[i]
      end
    end
  end)
  return main, feeds, fetch, labels
end

-- the float32 shapes of the outputs (for the random loss weights)
local function out_shapes(case)
  local c = {}
  for k, v in pairs(case) do c[k] = v end
  c.grad = nil
  local main, feeds, fetch = program(c, false)
  local res = oar.Executor(oar.CPUPlace()):run(main, { feed = feeds, fetch_list = fetch, scope = oar.Scope() })
  local shapes = {}
  for i, slot in ipairs(case.outputs or { "Out" }) do shapes[slot] = res[i]:shape() end
  return shapes
end

-- runs the float16 case on CUDA, the float32 one on the CPU, and compares
local function same_half(case)
  if case.grad then case.out_shapes = out_shapes(case) end
  -- the same random weights in both runs: build once, reuse the feeds
  local m32, feeds, f32, labels = program(case, false)
  local m16, _, f16 = program(case, true)
  local want = oar.Executor(oar.CPUPlace()):run(m32, { feed = feeds, fetch_list = f32, scope = oar.Scope() })
  oar.set_flags{ count_kernels = true }
  C.oar_kernel_calls_reset()
  local ok, got = pcall(function()
    return oar.Executor(oar.CUDAPlace(0)):run(m16, { feed = feeds, fetch_list = f16, scope = oar.Scope() })
  end)
  oar.set_flags{ count_kernels = false }
  assert(ok, got)
  for _, op in ipairs({ case.type, case.grad and (case.type .. "_grad") or nil }) do
    assert.is_true(C.oar_kernel_registered(op, H.GPU, T.DTYPES.float16), op .. " has no float16 CUDA kernel")
    assert.is_true(C.oar_kernel_calls(op, H.GPU) >= 1, op .. " did not run its CUDA kernel")
    assert.are.equal(0, tonumber(C.oar_kernel_calls(op, H.CPU)), op .. " ran on the CPU")
  end
  for i = 1, #f32 do
    assert_half_close(got[i]:totable(), want[i]:totable(), labels[i] .. " (float16 CUDA vs float32 CPU)",
      case.atol, case.rtol)
  end
end

-- trains `net` for `steps` on one fixed batch: float32 on the CPU and mixed
-- precision on CUDA from the same parameters; returns both loss curves
local function train_both(net, feed, steps, make_opt)
  local function build(amp)
    local main, startup = oar.Program(), oar.Program()
    main.random_seed, startup.random_seed = 7, 7
    local loss, opt
    oar.program_guard(main, startup, function()
      loss = net()
      opt = make_opt()
      if amp then
        opt = oar.amp.decorate(opt, { use_fp16_compute = true, init_loss_scaling = 1024,
          use_dynamic_loss_scaling = true })
      end
      opt:minimize(loss)
    end)
    return main, startup, loss, opt
  end
  local m32, s32, l32 = build(false)
  local m16, s16, l16, opt16 = build(true)
  local cpu, gpu = oar.Executor(oar.CPUPlace()), oar.Executor(oar.CUDAPlace(0))
  local sc, sg = oar.Scope(), oar.Scope()
  cpu:run(s32, { scope = sc })
  gpu:run(s16, { scope = sg })
  -- the same starting parameters (by position: the two builds name them alike)
  local p32, p16 = m32:all_parameters(), m16:all_parameters()
  assert.are.equal(#p32, #p16)
  for i = 1, #p32 do
    sg:var(p16[i].name):set_tensor(sc:find_var(p32[i].name):get_tensor():clone())
  end
  -- the rewrite ran: float16 compute ops and float32 parameters
  local halves = 0
  for i = 0, m16:global_block():num_ops() - 1 do
    local op = m16:global_block():op(i)
    if (op.type == "mul" or op.type == "conv2d") and m16:global_block():var(op:output(op:output_names()[1])[1]).dtype
        == "float16" then
      halves = halves + 1
    end
  end
  assert.is_true(halves > 0, "no float16 mul/conv2d in the rewritten program")
  local c32, c16 = {}, {}
  for step = 1, steps do
    c32[step] = cpu:run(m32, { feed = feed, fetch_list = { l32 }, scope = sc })[1]:item()
    c16[step] = gpu:run(m16, { feed = feed, fetch_list = { l16 }, scope = sg })[1]:item()
  end
  for i = 1, #p16 do assert.are.equal("float32", sg:find_var(p16[i].name):get_tensor():dtype()) end
  return c32, c16, opt16
end

-- a backend without cuDNN (tools/cuda_emu, only) has no float16 conv2d: say so
local function needs_conv()
  if C.oar_kernel_registered("conv2d", H.GPU, T.DTYPES.float16) then return true end
  assert(os.getenv("OAR_CUDA_EMU"), "this CUDA backend has no float16 conv2d kernel")
  pending("this CUDA backend has no float16 conv2d kernel (tools/cuda_emu has no cuDNN)")
  return false
end

local function assert_curves_close(c32, c16, tol)
  for i = 1, #c32 do
    assert.is_true(c16[i] == c16[i], ("step %d: mixed-precision loss is NaN"):format(i))
    assert.is_true(math.abs(c16[i] - c32[i]) <= tol * math.max(1, math.abs(c32[i])),
      ("step %d: loss %.6g in mixed precision, %.6g in float32"):format(i, c16[i], c32[i]))
  end
  assert.is_true(c32[#c32] < 0.7 * c32[1], "float32 training did not learn")
  assert.is_true(c16[#c16] < 0.7 * c16[1], "mixed-precision training did not learn")
end

describe("float16 on CUDA #gpu", function()
  local why = H.no_gpu("cuda_fp16_spec")
  if why then pending(why) return end

  describe("kernels against the float32 CPU kernels", function()
    it("elementwise add/sub/mul/div/max/min with broadcasting, with grads", function()
      for _, op in ipairs({ "elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div",
        "elementwise_max", "elementwise_min" }) do
        local y_lo = op == "elementwise_div" and 0.5 or -1
        same_half{ type = op, inputs = { X = rand({ 4, 37 }, -1, 1), Y = rand({ 4, 37 }, y_lo, 2) },
          grad = { "X", "Y" } }
        same_half{ type = op, inputs = { X = rand({ 6, 3 }, -1, 1), Y = rand({ 3 }, y_lo, 2) }, grad = { "X", "Y" } }
        same_half{ type = op, inputs = { X = rand({ 8, 4, 6, 6 }, -1, 1), Y = rand({ 4 }, y_lo, 2) },
          attrs = { axis = 1 }, grad = { "X", "Y" } }
      end
    end)

    it("activations, with grads", function()
      local cases = {
        relu = { -1, 1, 0.05 }, sigmoid = { -3, 3 }, tanh = { -2, 2 }, exp = { -2, 2 }, log = { 0.2, 3 },
        sqrt = { 0.2, 3 }, abs = { -1, 1, 0.05 }, square = { -2, 2 }, reciprocal = { 0.5, 2 },
        leaky_relu = { -1, 1, 0.05 }, elu = { -1, 1, 0.05 }, softplus = { -2, 2 }, gelu = { -2, 2 },
        sin = { -2, 2 }, cos = { -2, 2 },
      }
      for op, r in pairs(cases) do
        same_half{ type = op, inputs = { X = rand({ 5, 33 }, r[1], r[2], "float32", r[3]) }, grad = { "X" } }
      end
      same_half{ type = "clip", inputs = { X = rand({ 5, 33 }, -2, 2) }, attrs = { min = -0.5, max = 0.7 },
        grad = { "X" } }
      same_half{ type = "pow", inputs = { X = rand({ 5, 33 }, 0.2, 2) }, attrs = { factor = 2.5 }, grad = { "X" } }
    end)

    it("softmax and log_softmax over rows of several lengths, with grads", function()
      for _, op in ipairs({ "softmax", "log_softmax" }) do
        for _, shape in ipairs({ { 7, 10 }, { 3, 300 }, { 1, 1 } }) do
          same_half{ type = op, inputs = { X = rand(shape, -3, 3) }, grad = { "X" } }
        end
        same_half{ type = op, inputs = { X = rand({ 2, 5, 3 }, -3, 3) }, attrs = { axis = 1 }, grad = { "X" } }
      end
    end)

    it("mul and matmul (batched, transposed, broadcast) through cublasGemmEx, with grads", function()
      same_half{ type = "mul", inputs = { X = rand({ 33, 70 }, -1, 1), Y = rand({ 70, 17 }, -1, 1) },
        grad = { "X", "Y" } }
      same_half{ type = "mul", inputs = { X = rand({ 4, 3, 5 }, -1, 1), Y = rand({ 15, 6 }, -1, 1) },
        attrs = { x_num_col_dims = 1 }, grad = { "X", "Y" } }
      same_half{ type = "matmul", inputs = { X = rand({ 3, 8, 9 }, -1, 1), Y = rand({ 3, 9, 5 }, -1, 1) },
        grad = { "X", "Y" } }
      same_half{ type = "matmul", inputs = { X = rand({ 3, 9, 8 }, -1, 1), Y = rand({ 5, 9 }, -1, 1) },
        attrs = { transpose_X = true, transpose_Y = true, alpha = 0.5 }, grad = { "X", "Y" } }
      same_half{ type = "matmul_v2", inputs = { X = rand({ 2, 1, 4, 6 }, -1, 1), Y = rand({ 3, 6, 5 }, -1, 1) },
        grad = { "X", "Y" } }
    end)

    it("conv2d and depthwise_conv2d through cuDNN half tensors, with grads", function()
      if not needs_conv() then return end
      local function conv(op, xs, ws, attrs)
        same_half{ type = op, inputs = { Input = rand(xs, -1, 1), Filter = rand(ws, -1, 1) }, attrs = attrs,
          outputs = { "Output" }, grad = { "Input", "Filter" } }
      end
      conv("conv2d", { 2, 3, 9, 9 }, { 4, 3, 3, 3 }, {})
      conv("conv2d", { 2, 4, 9, 8 }, { 6, 2, 3, 3 }, { strides = { 2, 2 }, paddings = { 1, 1 }, groups = 2 })
      conv("conv2d", { 1, 2, 7, 7 }, { 3, 2, 3, 2 }, { paddings = { 0, 2, 1, 0 } })
      conv("conv2d", { 2, 3, 8, 8 }, { 4, 3, 3, 3 }, { padding_algorithm = "SAME", strides = { 2, 2 } })
      conv("depthwise_conv2d", { 2, 4, 8, 8 }, { 4, 1, 3, 3 }, { groups = 4, paddings = { 1, 1 } })
    end)

    it("pool2d max and avg, with grads", function()
      for _, t in ipairs({ "max", "avg" }) do
        same_half{ type = "pool2d", inputs = { X = rand({ 2, 3, 8, 8 }, -1, 1) },
          attrs = { pooling_type = t, ksize = { 2, 2 }, strides = { 2, 2 } }, grad = { "X" } }
        same_half{ type = "pool2d", inputs = { X = rand({ 2, 3, 7, 7 }, -1, 1) },
          attrs = { pooling_type = t, ksize = { 3, 3 }, strides = { 2, 2 }, paddings = { 1, 1 }, ceil_mode = true },
          grad = { "X" } }
        same_half{ type = "pool2d", inputs = { X = rand({ 2, 3, 5, 5 }, -1, 1) },
          attrs = { pooling_type = t, global_pooling = true }, grad = { "X" } }
      end
    end)

    it("batch_norm with float16 X and float32 scale, bias and statistics, with grads", function()
      local C4 = 4
      local function vecs()
        return { Scale = rand({ C4 }, 0.5, 1.5), Bias = rand({ C4 }, -0.5, 0.5), Mean = rand({ C4 }, -0.1, 0.1),
          Variance = rand({ C4 }, 0.5, 1.5) }
      end
      for _, is_test in ipairs({ false, true }) do
        local inputs = vecs()
        inputs.X = rand({ 3, C4, 5, 5 }, -2, 2)
        same_half{ type = "batch_norm", inputs = inputs, attrs = { is_test = is_test, epsilon = 1e-5, momentum = 0.9 },
          keep32 = { Scale = true, Bias = true, Mean = true, Variance = true },
          outputs = { "Y", "SavedMean", "SavedVariance" },
          out32 = { SavedMean = true, SavedVariance = true, MeanOut = true, VarianceOut = true },
          extra_outputs = { MeanOut = { "mean_out" }, VarianceOut = { "var_out" } },
          grad = { "X", "Scale", "Bias" }, atol = 2e-2 }
      end
    end)

    it("cast float32 <-> float16 rounds like the CPU cast", function()
      local x = rand({ 1000 }, -70000, 70000)
      local main, startup = oar.Program(), oar.Program()
      local back, h32
      oar.program_guard(main, startup, function()
        local v = layers.data{ name = "x", shape = { 1000 }, append_batch_size = false }
        local h = layers.cast(v, "float16")
        h32 = layers.cast(h, "float32")
        back = layers.cast(layers.cast(h, "float64"), "float16")
      end)
      local feed = { x = to_tensor(x) }
      local function run(p)
        return oar.Executor(p):run(main, { feed = feed, fetch_list = { h32, back }, scope = oar.Scope() })
      end
      local want, got = run(oar.CPUPlace()), run(oar.CUDAPlace(0))
      assert.are.same(want[1]:totable(), got[1]:totable())
      assert.are.same(want[2]:totable(), got[2]:totable())
      assert.are.equal("float16", got[2]:dtype())
    end)
  end)

  describe("mixed-precision training against float32", function()
    it("an MLP with Momentum and dynamic loss scaling", function()
      local feed = { img = to_tensor(rand({ 32, 64 }, -1, 1)), label = to_tensor(randint({ 32, 1 }, 10)) }
      local c32, c16, opt = train_both(function()
        local img = layers.data{ name = "img", shape = { 64 } }
        local lbl = layers.data{ name = "label", shape = { 1 }, dtype = "int64" }
        local h1 = layers.fc{ input = img, size = 64, act = "relu" }
        local h2 = layers.fc{ input = h1, size = 32, act = "tanh" }
        local logits = layers.fc{ input = h2, size = 10 }
        return layers.mean(layers.softmax_with_cross_entropy{ logits = logits, label = lbl })
      end, feed, 30, function() return oar.optimizer.Momentum{ learning_rate = 0.05, momentum = 0.9 } end)
      assert_curves_close(c32, c16, 0.05)
      assert.is_not_nil(opt.casts)
    end)

    it("a LeNet with batch norm and SGD", function()
      if not needs_conv() then return end
      local feed = { img = to_tensor(rand({ 16, 1, 28, 28 }, -1, 1)), label = to_tensor(randint({ 16, 1 }, 10)) }
      local c32, c16 = train_both(function()
        local img = layers.data{ name = "img", shape = { 1, 28, 28 } }
        local lbl = layers.data{ name = "label", shape = { 1 }, dtype = "int64" }
        local c1 = layers.conv2d{ input = img, num_filters = 6, filter_size = 5, act = "relu" }
        local p1 = layers.pool2d{ input = c1, pool_size = 2, pool_stride = 2 }
        local c2 = layers.conv2d{ input = p1, num_filters = 16, filter_size = 5 }
        local b2 = layers.batch_norm{ input = c2, act = "relu" }
        local p2 = layers.pool2d{ input = b2, pool_size = 2, pool_stride = 2, pool_type = "avg" }
        local f = layers.fc{ input = p2, size = 64, act = "relu" }
        local logits = layers.fc{ input = f, size = 10 }
        return layers.mean(layers.softmax_with_cross_entropy{ logits = logits, label = lbl })
      end, feed, 30, function() return oar.optimizer.SGD{ learning_rate = 0.05 } end)
      assert_curves_close(c32, c16, 0.05)
    end)
  end)
end)
