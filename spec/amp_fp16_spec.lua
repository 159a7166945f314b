-- Mixed precision, the place-neutral part, checked on the CPU:
-- oar.amp.AutoMixedPrecisionLists, the program rewrite of
-- oar.amp.decorate{use_fp16_compute = true} (which casts are inserted where,
-- the dtypes of the variables, parameters and the loss staying float32,
-- float32 parameter gradients through cast's gradient), mixed-precision
-- MLP training on the CPU against float32 (through the CPU's float16 mul,
-- elementwise_add and relu), the clear failure of a rewritten program whose
-- float16 op has no CPU kernel (conv2d), and the CPU cast kernel to and from
-- float16 that lets any place feed and fetch float16. Every float16 CUDA
-- kernel and GPU training are spec/cuda_fp16_spec.lua's (tag gpu).
local oar = require("oar")
local layers = oar.layers

-- x[3] -> fc(4, relu) -> fc(2) -> softmax_with_cross_entropy -> mean
local function mlp(opts)
  local main, startup = oar.Program(), oar.Program()
  main.random_seed, startup.random_seed = 5, 5
  local v = {}
  oar.program_guard(main, startup, function()
    v.x = layers.data{ name = "x", shape = { 3 } }
    v.label = layers.data{ name = "label", shape = { 1 }, dtype = "int64" }
    v.h = layers.fc{ input = v.x, size = 4, act = "relu" }
    v.logits = layers.fc{ input = v.h, size = 2 }
    v.loss = layers.mean(layers.softmax_with_cross_entropy{ logits = v.logits, label = v.label })
    v.opt = oar.amp.decorate(oar.optimizer.SGD{ learning_rate = 0.1 },
      opts or { use_fp16_compute = true, init_loss_scaling = 128 })
    v.opt:minimize(v.loss)
  end)
  return main, startup, v
end

local function op_types(block, upto)
  local out = {}
  for i = 0, (upto or block:num_ops()) - 1 do out[#out + 1] = block:op(i).type end
  return out
end

-- position of the first op of `type` at or after `from` (0-based), or nil
local function find_op(block, type, from)
  for i = from or 0, block:num_ops() - 1 do if block:op(i).type == type then return i end end
  return nil
end

local function dtype_of(block, name) return block:var(name).dtype end

describe("oar.amp.AutoMixedPrecisionLists", function()
  it("has Fluid's default white, black and gray lists", function()
    local l = oar.amp.AutoMixedPrecisionLists()
    for _, t in ipairs({ "mul", "matmul", "conv2d" }) do assert.is_true(l.white_list[t], t) end
    for _, t in ipairs({ "softmax", "softmax_with_cross_entropy", "mean", "cross_entropy" }) do
      assert.is_true(l.black_list[t], t)
    end
    for _, t in ipairs({ "elementwise_add", "relu", "pool2d", "batch_norm" }) do assert.is_true(l.gray_list[t], t) end
    assert.is_nil(l.white_list.softmax)
  end)

  it("moves custom ops between the lists and refuses an op in both", function()
    local l = oar.amp.AutoMixedPrecisionLists{ custom_white_list = { "softmax" },
      custom_black_list = { "pool2d", "mul" } }
    assert.is_true(l.white_list.softmax)
    assert.is_nil(l.black_list.softmax)
    assert.is_true(l.black_list.pool2d)
    assert.is_nil(l.gray_list.pool2d)
    assert.is_true(l.black_list.mul)
    assert.is_nil(l.white_list.mul)
    assert.has_error(function()
      oar.amp.AutoMixedPrecisionLists{ custom_white_list = { "relu" }, custom_black_list = { "relu" } }
    end, "oar.amp.AutoMixedPrecisionLists: op type 'relu' is in both custom_white_list and custom_black_list")
    assert.has_error(function() oar.amp.AutoMixedPrecisionLists{ white = { "relu" } } end)
    assert.has_error(function() oar.amp.AutoMixedPrecisionLists{ custom_white_list = { 3 } } end,
      "oar.amp.AutoMixedPrecisionLists: 'custom_white_list'[1] must be a string, got number")
  end)
end)

describe("oar.amp.decorate{use_fp16_compute = true}", function()
  it("checks its new options", function()
    local sgd = oar.optimizer.SGD{ learning_rate = 0.1 }
    -- Fluid's pure-float16 mode is not an option of oar's (parameters stay float32)
    local ok, err = pcall(oar.amp.decorate, sgd, { use_pure_fp16 = true })
    assert.is_false(ok)
    assert.matches("unknown argument 'use_pure_fp16'", tostring(err), 1, true)
    assert.has_error(function() oar.amp.decorate(sgd, { use_fp16_compute = 1 }) end,
      "oar.amp.decorate: 'use_fp16_compute' must be a boolean, got number")
    assert.has_error(function() oar.amp.decorate(sgd, { amp_lists = oar.amp.AutoMixedPrecisionLists() }) end,
      "oar.amp.decorate: 'amp_lists' needs 'use_fp16_compute = true'")
    assert.has_error(function() oar.amp.decorate(sgd, { use_fp16_compute = true, amp_lists = { "mul" } }) end,
      "oar.amp.decorate: 'amp_lists' must be an oar.amp.AutoMixedPrecisionLists{...}, got table")
    -- the default stays loss scaling only: nothing is cast to float16
    local b = mlp({ init_loss_scaling = 8 }):global_block()
    for i = 0, b:num_ops() - 1 do
      local op = b:op(i)
      if op.type == "cast" then assert.are_not.equal(4, op:attr("out_dtype")) end
      for _, n in ipairs(op:output_arg_names()) do
        if n ~= "@EMPTY@" then assert.are_not.equal("float16", dtype_of(b, n), n) end
      end
    end
  end)

  it("casts the inputs of white ops to float16 and of black ops back to float32", function()
    local main, _, v = mlp()
    local b = main:global_block()
    local fwd_end = find_op(b, "mean") + 1
    assert.are.same({
      "cast", "cast", "mul", "cast", "elementwise_add", "relu",   -- x, w1 to float16; b1 follows its gray op
      "cast", "mul", "cast", "elementwise_add",                  -- w2, b2
      "cast", "softmax_with_cross_entropy", "mean",             -- logits back to float32
    }, op_types(b, fwd_end))
    -- the white and gray ops' outputs are float16, the black ops' float32
    assert.are.equal("float16", v.h.dtype)
    assert.are.equal("float16", v.logits.dtype)
    assert.are.equal("float32", v.loss.dtype)
    assert.are.equal("float32", v.x.dtype)
    assert.are.equal("int64", v.label.dtype)
    local sce = b:op(find_op(b, "softmax_with_cross_entropy"))
    assert.are.equal("float32", dtype_of(b, sce:input("Logits")[1]))
    assert.are.same({ "label" }, sce:input("Label"))
    -- each op reads the cast copies; parameters stay float32 master weights
    local params = main:all_parameters()
    assert.are.equal(4, #params)
    for _, p in ipairs(params) do
      assert.are.equal("float32", p.dtype)
      local casts = 0
      for i = 0, fwd_end - 1 do
        local op = b:op(i)
        if op.type == "cast" and op:input("X")[1] == p.name then
          casts = casts + 1
          local out = op:output("Out")[1]
          assert.are.equal(p.name .. ".cast_fp16", out)
          assert.are.equal("float16", dtype_of(b, out))
          assert.are.equal(5, op:attr("in_dtype"))
          assert.are.equal(4, op:attr("out_dtype"))
        end
        if op.type ~= "cast" then
          for _, n in ipairs(op:input_arg_names()) do assert.are_not.equal(p.name, n, op.type .. " reads " .. n) end
        end
      end
      assert.are.equal(1, casts, p.name)
    end
    local mul1 = b:op(find_op(b, "mul"))
    assert.are.same({ "x.cast_fp16" }, mul1:input("X"))
    -- v.opt.casts lists them in order
    assert.are.equal(6, #v.opt.casts)
    assert.are.same({ from = "x", to = "x.cast_fp16", dtype = "float16" }, v.opt.casts[1])
    assert.are.equal("float32", v.opt.casts[6].dtype)
  end)

  it("differentiates through the casts: float32 parameter gradients, float16 activation gradients", function()
    local main, _, v = mlp()
    local b = main:global_block()
    for _, p in ipairs(main:all_parameters()) do
      assert.are.equal("float32", dtype_of(b, p.name .. "@GRAD"), p.name)
      assert.are.equal("float16", dtype_of(b, p.name .. ".cast_fp16@GRAD"), p.name)
    end
    assert.are.equal("float16", dtype_of(b, v.h.name .. "@GRAD"))
    -- the gradient of a float32 -> float16 cast is a float16 -> float32 cast
    local grad_casts = 0
    for i = find_op(b, "mean") + 1, b:num_ops() - 1 do
      local op = b:op(i)
      if op.type == "cast" and op:attr("in_dtype") == 4 and op:attr("out_dtype") == 5 then
        grad_casts = grad_casts + 1
      end
    end
    assert.are.equal(4, grad_casts)   -- the four parameters (x needs no gradient)
    -- the loss scaling is float32 and the optimizer updates float32 parameters
    assert.are.equal("float32", v.opt.scaled_loss.dtype)
    assert.are.equal("float32", v.opt.loss_scaling.dtype)
    local sgd = 0
    for i = 0, b:num_ops() - 1 do
      local op = b:op(i)
      if op.type == "sgd" then
        sgd = sgd + 1
        assert.are.equal("float32", dtype_of(b, op:input("Param")[1]))
        assert.are.equal("float32", dtype_of(b, op:input("Grad")[1]))
      end
    end
    assert.are.equal(4, sgd)
  end)

  it("fails on the CPU at the first float16 op without a CPU kernel, naming it and the dtype", function()
    local main, startup = oar.Program(), oar.Program()
    local loss
    oar.program_guard(main, startup, function()
      local img = layers.data{ name = "img", shape = { 1, 6, 6 } }
      local lbl = layers.data{ name = "label", shape = { 1 }, dtype = "int64" }
      local c = layers.conv2d{ input = img, num_filters = 2, filter_size = 3 }
      loss = layers.mean(layers.softmax_with_cross_entropy{ logits = layers.fc{ input = c, size = 3 }, label = lbl })
      oar.amp.decorate(oar.optimizer.SGD{ learning_rate = 0.1 }, { use_fp16_compute = true }):minimize(loss)
    end)
    local exe, scope = oar.Executor(oar.CPUPlace()), oar.Scope()
    exe:run(startup, { scope = scope })
    local ok, err = pcall(function()
      exe:run(main, { scope = scope, fetch_list = { loss },
        feed = { img = oar.Tensor{ shape = { 2, 1, 6, 6 } }, label = oar.Tensor({ { 1 }, { 0 } }, "int64") } })
    end)
    assert.is_false(ok)
    assert.matches("op 'conv2d'", tostring(err), 1, true)
    assert.matches("no CPU kernel for dtype float16", tostring(err), 1, true)
  end)

  it("trains an MLP in mixed precision on the CPU (float16 mul, add, relu) close to float32", function()
    -- one fixed batch, learned by both; the same starting parameters
    local xs, ls = {}, {}
    local seed = 12345
    local function rnd() seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648 end
    for i = 1, 16 do
      xs[i] = { rnd() * 2 - 1, rnd() * 2 - 1, rnd() * 2 - 1 }
      ls[i] = { xs[i][1] + xs[i][2] > 0 and 1 or 0 }
    end
    local feed = { x = oar.Tensor(xs, "float32"), label = oar.Tensor(ls, "int64") }
    local function train(opts)
      local main, startup, v = mlp(opts)
      local exe, scope = oar.Executor(oar.CPUPlace()), oar.Scope()
      exe:run(startup, { scope = scope })
      local curve = {}
      for i = 1, 40 do curve[i] = exe:run(main, { feed = feed, fetch_list = { v.loss }, scope = scope })[1]:item() end
      return curve, main, scope, v
    end
    local c32 = train({ init_loss_scaling = 128 })
    local c16, main, scope, v = train({ use_fp16_compute = true, init_loss_scaling = 128,
      use_dynamic_loss_scaling = true })
    for i = 1, #c32 do
      assert.is_true(math.abs(c16[i] - c32[i]) <= 0.02 * math.max(1, c32[i]),
        ("step %d: loss %.6g in mixed precision, %.6g in float32"):format(i, c16[i], c32[i]))
    end
    -- from about 0.61 to 0.42 in 40 steps
    assert.is_true(c32[#c32] < 0.75 * c32[1], "float32 training did not learn")
    assert.is_true(c16[#c16] < 0.75 * c16[1], "mixed-precision training did not learn")
    -- the master weights stayed float32 in the scope; the activations were float16
    for _, p in ipairs(main:all_parameters()) do
      assert.are.equal("float32", scope:find_var(p.name):get_tensor():dtype(), p.name)
    end
    local h = oar.Executor(oar.CPUPlace()):run(main, { feed = feed, fetch_list = { v.h }, scope = scope })[1]
    assert.are.equal("float16", h:dtype())
  end)
end)

describe("oar.amp.rewrite_program", function()
  local function build(fn)
    local main, startup = oar.Program(), oar.Program()
    local v
    oar.program_guard(main, startup, function() v = fn() end)
    return main, v
  end

  it("leaves a gray op with float32 inputs in float32 and casts a variable again after it is written", function()
    local main, v = build(function()
      local x = layers.data{ name = "x", shape = { 4 } }
      local r = layers.relu(x)                              -- gray, float32 input: float32
      local y = layers.fc{ input = r, size = 4, bias_attr = false, param_attr = oar.ParamAttr{ name = "w" } }
      local z = layers.fc{ input = r, size = 4, bias_attr = false, param_attr = oar.ParamAttr{ name = "w" } }
      return { x = x, r = r, y = y, z = z }
    end)
    local casts = oar.amp.rewrite_program(main)
    local b = main:global_block()
    assert.are.same({ "relu", "cast", "cast", "mul", "mul" }, op_types(b))
    assert.are.equal("float32", v.r.dtype)
    assert.are.equal("float16", v.y.dtype)
    assert.are.equal("float16", v.z.dtype)
    -- r and the shared weight are cast once for both muls
    assert.are.equal(2, #casts)
    assert.are.same({ "w.cast_fp16" }, b:op(3):input("Y"))
    assert.are.same({ "w.cast_fp16" }, b:op(4):input("Y"))
  end)

  it("keeps batch_norm's scale, bias and statistics in float32 and honours black variable names", function()
    local main, v = build(function()
      local img = layers.data{ name = "img", shape = { 1, 6, 6 } }
      local c = layers.conv2d{ input = img, num_filters = 2, filter_size = 3, bias_attr = false }
      local bn = layers.batch_norm{ input = c }
      local p = layers.pool2d{ input = bn, pool_size = 2, pool_stride = 2 }
      return { c = c, bn = bn, p = p }
    end)
    local lists = oar.amp.AutoMixedPrecisionLists{ custom_black_varnames = { v.p.name } }
    oar.amp.rewrite_program(main, lists)
    local b = main:global_block()
    assert.are.same({ "cast", "cast", "conv2d", "batch_norm", "cast", "pool2d" }, op_types(b))
    local bn = b:op(3)
    assert.are.equal("float16", v.c.dtype)
    assert.are.equal("float16", v.bn.dtype)
    for _, slot in ipairs({ "Scale", "Bias", "Mean", "Variance" }) do
      local n = bn:input(slot)[1]
      assert.is_nil(n:find("cast", 1, true), slot)
      assert.are.equal("float32", dtype_of(b, n), slot)
    end
    for _, slot in ipairs({ "MeanOut", "VarianceOut", "SavedMean", "SavedVariance" }) do
      assert.are.equal("float32", dtype_of(b, bn:output(slot)[1]), slot)
    end
    -- pool2d writes a black variable name: float32, its input cast back
    assert.are.equal("float32", v.p.dtype)
    assert.are.same({ v.bn.name .. ".cast_fp32" }, b:op(5):input("X"))
  end)

  it("builds the backward pass of a rewritten LeNet with batch norm: float32 parameter gradients", function()
    local main, startup = oar.Program(), oar.Program()
    local loss
    oar.program_guard(main, startup, function()
      local img = layers.data{ name = "img", shape = { 1, 12, 12 } }
      local lbl = layers.data{ name = "label", shape = { 1 }, dtype = "int64" }
      local c = layers.conv2d{ input = img, num_filters = 4, filter_size = 3, act = "relu" }
      local p = layers.pool2d{ input = c, pool_size = 2, pool_stride = 2 }
      local bn = layers.batch_norm{ input = p, act = "relu" }
      local logits = layers.fc{ input = bn, size = 10 }
      loss = layers.mean(layers.softmax_with_cross_entropy{ logits = logits, label = lbl })
      oar.amp.decorate(oar.optimizer.SGD{ learning_rate = 0.1 }, { use_fp16_compute = true }):minimize(loss)
    end)
    local b = main:global_block()
    assert.are.equal("float32", loss.dtype)
    local bng = b:op(find_op(b, "batch_norm_grad"))
    assert.are.equal("float16", dtype_of(b, bng:output("X@GRAD")[1]))
    assert.are.equal("float32", dtype_of(b, bng:output("Scale@GRAD")[1]))
    local trained = 0
    for _, p in ipairs(main:all_parameters()) do
      assert.are.equal("float32", p.dtype, p.name)   -- the running mean and variance too
      if p.trainable then
        assert.are.equal("float32", dtype_of(b, p.name .. "@GRAD"), p.name)
        trained = trained + 1
      end
    end
    assert.are.equal(6, trained)   -- conv filter and bias, scale and bias, fc weight and bias
    assert.are.equal("float16", dtype_of(b, b:op(find_op(b, "conv2d")):output("Output")[1]))
  end)

  it("checks its arguments", function()
    assert.has_error(function() oar.amp.rewrite_program({}) end,
      "oar.amp.rewrite_program: 'program' must be a Program, got table")
    assert.has_error(function() oar.amp.rewrite_program(oar.Program(), { white_list = {} }) end,
      "oar.amp.rewrite_program: 'amp_lists' must be an oar.amp.AutoMixedPrecisionLists{...}, got table")
  end)
end)

describe("the CPU float16 kernels of mul, elementwise_add and relu", function()
  it("agree with float32 to half precision, gradients included (a broadcast bias)", function()
    local seed = 99
    local function rnd() seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648 * 2 - 1 end
    local function mat(r, c)
      local m = {}
      for i = 1, r do m[i] = {} for j = 1, c do m[i][j] = rnd() end end
      return m
    end
    local X, W, B, Wt = mat(5, 7), mat(7, 6), mat(1, 6)[1], mat(5, 6)
    local function run(dt)
      local main, startup = oar.Program(), oar.Program()
      local fetch
      oar.program_guard(main, startup, function()
        local b = main:global_block()
        local function input(name, shape)
          local v = layers.data{ name = name, shape = shape, append_batch_size = false }
          v.stop_gradient = false
          return v, dt == "float16" and layers.cast(v, "float16") or v
        end
        local x, xh = input("x", { 5, 7 })
        local w, wh = input("w", { 7, 6 })
        local bias, bh = input("b", { 6 })
        local m = b:create_var{ name = "m", dtype = dt }
        b:append_op{ type = "mul", inputs = { X = { xh }, Y = { wh } }, outputs = { Out = { m } } }
        local s = b:create_var{ name = "s", dtype = dt }
        b:append_op{ type = "elementwise_add", inputs = { X = { m }, Y = { bh } }, outputs = { Out = { s } } }
        local r = layers.relu(s)
        local r32 = dt == "float16" and layers.cast(r, "float32") or r
        local wt = layers.data{ name = "wt", shape = { 5, 6 }, append_batch_size = false }
        local loss = layers.reduce_sum(layers.elementwise_mul(r32, wt))
        fetch = { r32 }
        for _, g in ipairs(oar.gradients({ loss }, { x, w, bias })) do fetch[#fetch + 1] = g end
      end)
      local feed = { x = oar.Tensor(X, "float32"), w = oar.Tensor(W, "float32"), b = oar.Tensor(B, "float32"),
        wt = oar.Tensor(Wt, "float32") }
      local res = oar.Executor(oar.CPUPlace()):run(main, { feed = feed, fetch_list = fetch, scope = oar.Scope() })
      local out = {}
      for i, t in ipairs(res) do
        assert.are.equal("float32", t:dtype())
        local flat = {}
        local function walk(v)
          if type(v) == "table" then for _, e in ipairs(v) do walk(e) end else flat[#flat + 1] = v end
        end
        walk(t:totable())
        out[i] = flat
      end
      return out
    end
    local want, got = run("float32"), run("float16")
    local names = { "relu(x w + b)", "dx", "dw", "db" }
    for i = 1, 4 do
      assert.are.equal(#want[i], #got[i])
      local zero = true
      for j = 1, #want[i] do
        if want[i][j] ~= 0 then zero = false end
        assert.is_true(math.abs(got[i][j] - want[i][j]) <= 1e-2 * (1 + math.abs(want[i][j])),
          ("%s[%d]: %.6g in float16, %.6g in float32"):format(names[i], j, got[i][j], want[i][j]))
      end
      assert.is_false(zero, names[i] .. " is all zeros")
    end
  end)
end)

describe("the CPU cast kernel and float16", function()
  -- runs cast from `from` to `to` on the CPU over values given as a tensor
  local function cast(t, to)
    local main, startup = oar.Program(), oar.Program()
    local out
    oar.program_guard(main, startup, function()
      local x = layers.data{ name = "x", shape = { #t:totable() }, dtype = t:dtype(), append_batch_size = false }
      out = layers.cast(x, to)
    end)
    local exe = oar.Executor(oar.CPUPlace())
    local r = exe:run(main, { feed = { x = t }, fetch_list = { out }, scope = oar.Scope() })[1]
    assert.are.equal(to, r:dtype())
    return r:totable()
  end

  it("rounds float32 and float64 to the nearest float16, ties to even", function()
    local vals = {
      1 + 2 ^ -11,        -- halfway between 1 and 1 + 2^-10: even is 1
      1 + 3 * 2 ^ -11,    -- halfway between 1 + 2^-10 and 1 + 2^-9: even is 1 + 2^-9
      1 + 2 ^ -11 + 2 ^ -20,  -- above halfway (float64 only holds the 2^-20 exactly)
      65504, 65519, 65520, -1e6,
      2 ^ -24, 2 ^ -25, 3 * 2 ^ -26, 2 ^ -14 - 2 ^ -25,
      -0.1, 0.1, 0,
    }
    local want = { 1, 1 + 2 ^ -9, 1 + 2 ^ -10, 65504, 65504, math.huge, -math.huge,
      2 ^ -24, 0, 2 ^ -24, 2 ^ -14, -0.0999755859375, 0.0999755859375, 0 }
    local got = cast(oar.Tensor(vals, "float64"), "float16")
    assert.are.same(want, got)
    local f32 = oar.Tensor(vals, "float32")
    local from32 = cast(f32, "float16")
    -- float32 rounds 1 + 2^-11 + 2^-20 exactly; the others agree
    for i, w in ipairs(want) do assert.are.equal(w, from32[i], "value " .. i) end
    -- NaN stays NaN
    local nan = cast(oar.Tensor({ 0 / 0 }, "float32"), "float16")[1]
    assert.is_true(nan ~= nan)
  end)

  it("reads float16 back into float32, float64 and integers, agreeing with oar.Tensor's float16", function()
    local vals = { 1.5, -2.25, 65504, 2 ^ -24, -0.0999755859375, 3.75, -7.5 }
    local h = oar.Tensor(vals, "float16")
    assert.are.same(vals, cast(h, "float32"))
    assert.are.same(vals, cast(h, "float64"))
    assert.are.same({ 1, -2, 65504, 0, 0, 3, -7 }, cast(h, "int32"))
    assert.are.same({ true, true, true, true, true, true, true }, cast(h, "bool"))
    local inf = cast(oar.Tensor({ 65520, -65520 }, "float32"), "float16")
    assert.are.same({ math.huge, -math.huge }, cast(oar.Tensor(inf, "float16"), "float32"))
    -- float16 to float16 copies
    assert.are.same(vals, cast(h, "float16"))
  end)
end)
