-- batch_norm and layer_norm: forward against plain Lua statistics loops,
-- running-stat updates (in place, as Fluid's MeanOut == Mean), test mode,
-- gradients by finite differences of a weighted loss, and error cases.
local ffi = require("ffi")
local R = require("spec.helpers.random")
local lib = require("oar.lib")
local T = require("spec.helpers.op_test")
local C = lib.C

-- attrs are float32: references use the values the op actually sees
local function f32(v) return tonumber(ffi.new("float", v)) end

local function rand_values(n, seed, lo, hi) return R.uniform(n, seed or 12345, lo, hi) end

local numel = require("spec.helpers.index").numel

local function err_of(fn)
  local ok, err = pcall(fn)
  assert.is_false(ok, "expected an error")
  return tostring(err)
end

-- ---- a small program builder (several ops, shared names) -----------------
local function new_program()
  local pp = ffi.new("oar_program_t*[1]")
  assert(C.oar_program_new(pp) == 0)
  local prog = ffi.gc(pp[0], C.oar_program_free)
  return prog, C.oar_program_block(prog, 0)
end

local function declare(block, name, v, dtype)
  local out = ffi.new("oar_var_desc_t*[1]")
  assert(C.oar_block_var_new(block, name, out) == 0, lib.last_error())
  local dims = ffi.new("int64_t[?]", #v.shape)
  for i, d in ipairs(v.shape) do dims[i - 1] = d end
  assert(C.oar_var_desc_set_shape(out[0], dims, #v.shape) == 0)
  assert(C.oar_var_desc_set_dtype(out[0], T.DTYPES[v.dtype or dtype or "float64"]) == 0)
end

-- Gradient check of loss = sum over `of` slots of mean(output * weight), so
-- that outputs whose plain mean does not depend on the inputs (a batch-normed
-- Y sums to Bias per channel) still give informative gradients.
local function check_grad_weighted(spec)
  local delta, max_rel = spec.delta or 0.005, spec.max_rel or 0.005
  local function build()
    local prog, block = new_program()
    local feeds, in_names = {}, {}
    for slot, v in pairs(spec.inputs) do
      local name = "in_" .. slot
      declare(block, name, v)
      feeds[name] = v
      in_names[slot] = { name }
    end
    local outs = {}
    for slot in pairs(spec.outputs) do outs[slot] = { "out_" .. slot } end
    T.append_op(block, spec.type, in_names, outs, spec.attrs)
    local means = {}
    for _, slot in ipairs(spec.of) do
      local wname = "w_" .. slot
      feeds[wname] = spec.weights[slot]
      declare(block, wname, spec.weights[slot])
      T.append_op(block, "elementwise_mul", { X = outs[slot], Y = { wname } }, { Out = { "wy_" .. slot } }, {})
      T.append_op(block, "mean", { X = { "wy_" .. slot } }, { Out = { "m_" .. slot } }, {})
      means[#means + 1] = "m_" .. slot
    end
    local loss = means[1]
    if #means > 1 then
      T.append_op(block, "sum", { X = means }, { Out = { "loss" } }, {})
      loss = "loss"
    end
    return prog, feeds, loss, in_names
  end
  local fprog, feeds, floss, in_names = build()
  local bprog, _, bloss = build()
  local wrt = {}
  for i, slot in ipairs(spec.wrt) do wrt[i] = in_names[slot][1] end
  local no_grad = {}
  for _, slot in ipairs(spec.of) do no_grad[#no_grad + 1] = "w_" .. slot end
  for _, slot in ipairs(spec.no_grad or {}) do no_grad[#no_grad + 1] = in_names[slot][1] end
  local grads = ffi.new("char**[1]")
  local rc = C.oar_backward_gradients(bprog, lib.cstrings({ bloss }), 1, nil, lib.cstrings(wrt), #wrt,
    lib.cstrings(no_grad), #no_grad, grads)
  assert(rc == 0, lib.last_error())
  local gnames = {}
  for i = 1, #wrt do
    assert(grads[0][i - 1] ~= nil, "no gradient path to " .. wrt[i])
    gnames[i] = ffi.string(grads[0][i - 1])
  end
  C.oar_strings_free(grads[0], #wrt)
  local analytic = T.run_program(bprog, feeds, gnames)
  for w, name in ipairs(wrt) do
    local v = feeds[name]
    local a = analytic[w]
    assert.equals(#v.data, #a.data)
    local nontrivial = false
    for i = 1, #v.data do
      local saved = v.data[i]
      v.data[i] = saved + delta
      local lp = T.run_program(fprog, feeds, { floss })[1].data[1]
      v.data[i] = saved - delta
      local lm = T.run_program(fprog, feeds, { floss })[1].data[1]
      v.data[i] = saved
      local num = (lp - lm) / (2 * delta)
      local denom = math.abs(a.data[i])
      if denom < 1e-3 then denom = 1 end
      local rel = math.abs(a.data[i] - num) / denom
      if rel > max_rel then
        error(("%s: d loss / d %s[%d]: analytic %.8g vs numeric %.8g (relative error %.3g)"):format(
          spec.type, spec.wrt[w], i, a.data[i], num, rel), 2)
      end
      if math.abs(num) > 1e-4 then nontrivial = true end
    end
    assert.is_true(nontrivial, "the gradient of " .. spec.wrt[w] .. " should not vanish in this check")
  end
end

-- ---- batch_norm reference ------------------------------------------------
-- a = {layout, momentum, epsilon, global}; returns y, saved_mean, saved_inv_std, mean_out, var_out
local function bn_ref(x, xs, scale, bias, rm, rv, a)
  local nhwc = a.layout == "NHWC"
  local N, Cn = xs[1], nhwc and xs[#xs] or xs[2]
  local S = 1
  for i = nhwc and 2 or 3, nhwc and #xs - 1 or #xs do S = S * xs[i] end
  local function idx(n, c, s)
    if nhwc then return (n * S + s) * Cn + c + 1 end
    return (n * Cn + c) * S + s + 1
  end
  local mom, eps = f32(a.momentum or 0.9), f32(a.epsilon or 1e-5)
  local mean, var, mo, vo = {}, {}, {}, {}
  for c = 1, Cn do
    if a.global then
      mean[c], var[c] = rm[c], rv[c]
      mo[c], vo[c] = rm[c], rv[c]
    else
      local s1 = 0
      for n = 0, N - 1 do for s = 0, S - 1 do s1 = s1 + x[idx(n, c - 1, s)] end end
      local mu = s1 / (N * S)
      local s2 = 0
      for n = 0, N - 1 do for s = 0, S - 1 do s2 = s2 + (x[idx(n, c - 1, s)] - mu) ^ 2 end end
      mean[c], var[c] = mu, s2 / (N * S)
      mo[c] = mom * rm[c] + (1 - mom) * mean[c]
      vo[c] = mom * rv[c] + (1 - mom) * var[c]
    end
  end
  local y, inv = {}, {}
  for c = 1, Cn do inv[c] = 1 / math.sqrt(var[c] + eps) end
  for n = 0, N - 1 do
    for c = 0, Cn - 1 do
      for s = 0, S - 1 do
        local i = idx(n, c, s)
        y[i] = (x[i] - mean[c + 1]) * inv[c + 1] * scale[c + 1] + bias[c + 1]
      end
    end
  end
  return y, mean, inv, mo, vo
end

local BN_OUTS = { Y = 1, MeanOut = 1, VarianceOut = 1, SavedMean = 1, SavedVariance = 1 }

local function bn_case(xs, a, dtype)
  local nhwc = a.layout == "NHWC"
  local Cn = nhwc and xs[#xs] or xs[2]
  local x = rand_values(numel(xs), 11, -2, 3)
  local scale, bias = rand_values(Cn, 21, 0.5, 1.5), rand_values(Cn, 22)
  local rm, rv = rand_values(Cn, 23), rand_values(Cn, 24, 0.5, 2)
  local y, mean, inv, mo, vo = bn_ref(x, xs, scale, bias, rm, rv, a)
  local tol = dtype == "float32" and 2e-5 or 1e-10
  local function t(v, shape) return T.tensor(v, { shape = shape, dtype = dtype }) end
  local attrs = { data_layout = a.layout, is_test = a.is_test, use_global_stats = a.use_global_stats,
                  momentum = a.momentum, epsilon = a.epsilon }
  T.check_output{
    type = "batch_norm",
    inputs = { X = t(x, xs), Scale = t(scale, { Cn }), Bias = t(bias, { Cn }), Mean = t(rm, { Cn }),
               Variance = t(rv, { Cn }) },
    attrs = attrs, outputs = BN_OUTS, atol = tol, rtol = tol,
    expect = { Y = { shape = xs, data = y }, SavedMean = { shape = { Cn }, data = mean },
               SavedVariance = { shape = { Cn }, data = inv },
               MeanOut = { shape = { Cn }, data = mo }, VarianceOut = { shape = { Cn }, data = vo } },
  }
end

describe("batch_norm forward", function()
  it("normalizes a hand-computed NC batch and updates the running stats in place", function()
    -- X = [[1], [3]] (N=2, C=1): batch mean 2, biased variance 1.
    -- Mean 0 -> 0.9*0 + 0.1*2 = 0.2; Variance 0 -> 0.9*0 + 0.1*1 = 0.1
    -- (with momentum the float32 nearest 0.9, as the attr stores it)
    local prog, block = new_program()
    local feeds = {
      x = T.tensor({ 1, 3 }, { shape = { 2, 1 } }), scale = T.tensor({ 2 }, { shape = { 1 } }),
      bias = T.tensor({ 0.5 }, { shape = { 1 } }), mean = T.tensor({ 0 }, { shape = { 1 } }),
      var = T.tensor({ 0 }, { shape = { 1 } }),
    }
    for name, v in pairs(feeds) do declare(block, name, v) end
    T.append_op(block, "batch_norm",
      { X = { "x" }, Scale = { "scale" }, Bias = { "bias" }, Mean = { "mean" }, Variance = { "var" } },
      { Y = { "y" }, MeanOut = { "mean" }, VarianceOut = { "var" }, SavedMean = { "sm" }, SavedVariance = { "sv" } },
      { epsilon = 1e-5 })
    local r = T.run_program(prog, feeds, { "y", "mean", "var", "sm", "sv" })
    local inv = 1 / math.sqrt(1 + f32(1e-5))
    local m = f32(0.9)
    T.assert_close(r[1], { shape = { 2, 1 }, data = { -inv * 2 + 0.5, inv * 2 + 0.5 } }, 1e-12, 0, "Y")
    T.assert_close(r[2], { shape = { 1 }, data = { (1 - m) * 2 } }, 1e-12, 0, "MeanOut")
    T.assert_close(r[3], { shape = { 1 }, data = { (1 - m) * 1 } }, 1e-12, 0, "VarianceOut")
    T.assert_close(r[4], { shape = { 1 }, data = { 2 } }, 1e-12, 0, "SavedMean")
    T.assert_close(r[5], { shape = { 1 }, data = { inv } }, 1e-12, 0, "SavedVariance")
  end)

  it("accumulates the running stats over two steps with momentum 0.5", function()
    -- two batch_norm ops on the same Mean/Variance variables, batches {0, 2} and {4, 8}:
    -- mean 0 -> 0.5*0 + 0.5*1 = 0.5 -> 0.5*0.5 + 0.5*6 = 3.25
    -- var  1 -> 0.5*1 + 0.5*1 = 1   -> 0.5*1 + 0.5*4 = 2.5
    local prog, block = new_program()
    local feeds = {
      x1 = T.tensor({ 0, 2 }, { shape = { 2, 1 } }), x2 = T.tensor({ 4, 8 }, { shape = { 2, 1 } }),
      scale = T.tensor({ 1 }, { shape = { 1 } }), bias = T.tensor({ 0 }, { shape = { 1 } }),
      mean = T.tensor({ 0 }, { shape = { 1 } }), var = T.tensor({ 1 }, { shape = { 1 } }),
    }
    for name, v in pairs(feeds) do declare(block, name, v) end
    for i = 1, 2 do
      T.append_op(block, "batch_norm",
        { X = { "x" .. i }, Scale = { "scale" }, Bias = { "bias" }, Mean = { "mean" }, Variance = { "var" } },
        { Y = { "y" .. i }, MeanOut = { "mean" }, VarianceOut = { "var" }, SavedMean = { "sm" .. i },
          SavedVariance = { "sv" .. i } },
        { momentum = 0.5 })
    end
    local r = T.run_program(prog, feeds, { "mean", "var" })
    T.assert_close(r[1], { shape = { 1 }, data = { 3.25 } }, 1e-12, 0, "Mean after two steps")
    T.assert_close(r[2], { shape = { 1 }, data = { 2.5 } }, 1e-12, 0, "Variance after two steps")
  end)

  for _, dtype in ipairs({ "float64", "float32" }) do
    describe(dtype, function()
      it("training NCHW", function() bn_case({ 3, 4, 3, 2 }, {}, dtype) end)
      it("training NC (2-D input)", function() bn_case({ 5, 3 }, { momentum = 0.7 }, dtype) end)
      it("training NHWC", function() bn_case({ 2, 3, 2, 4 }, { layout = "NHWC", epsilon = 1e-4 }, dtype) end)
      it("training on a 5-D NCDHW input", function() bn_case({ 2, 2, 2, 3, 2 }, {}, dtype) end)
      it("is_test uses the running statistics and leaves them unchanged", function()
        bn_case({ 2, 3, 2, 2 }, { is_test = true, global = true }, dtype)
      end)
      it("use_global_stats in training", function()
        bn_case({ 2, 3, 2, 2 }, { use_global_stats = true, global = true }, dtype)
      end)
      it("a large batch (parallel path)", function() bn_case({ 16, 8, 16, 16 }, {}, dtype) end)
    end)
  end
end)

describe("batch_norm gradients", function()
  local function grad(xs, attrs, layout)
    local Cn = layout == "NHWC" and xs[#xs] or xs[2]
    check_grad_weighted{
      type = "batch_norm",
      inputs = { X = T.tensor(rand_values(numel(xs), 31, -1, 2), { shape = xs }),
                 Scale = T.tensor(rand_values(Cn, 32, 0.5, 1.5), { shape = { Cn } }),
                 Bias = T.tensor(rand_values(Cn, 33), { shape = { Cn } }),
                 Mean = T.tensor(rand_values(Cn, 34), { shape = { Cn } }),
                 Variance = T.tensor(rand_values(Cn, 35, 0.5, 1.5), { shape = { Cn } }) },
      attrs = attrs, outputs = BN_OUTS, of = { "Y" }, wrt = { "X", "Scale", "Bias" },
      no_grad = { "Mean", "Variance" },
      weights = { Y = T.tensor(rand_values(numel(xs), 36), { shape = xs }) },
    }
  end
  it("training NCHW", function() grad({ 2, 3, 2, 2 }, {}) end)
  it("training NC", function() grad({ 4, 3 }, {}) end)
  it("training NHWC", function() grad({ 2, 2, 2, 3 }, { data_layout = "NHWC" }, "NHWC") end)
  it("use_global_stats", function() grad({ 2, 3, 2, 2 }, { use_global_stats = true }) end)

  it("the plain mean of Y only depends on Bias (checked with the shared helper)", function()
    T.check_grad{ type = "batch_norm",
      inputs = { X = T.tensor(rand_values(12, 41), { shape = { 3, 2, 2 } }),
                 Scale = T.tensor({ 1.5, 0.5 }, { shape = { 2 } }), Bias = T.tensor({ 0.1, -0.2 }, { shape = { 2 } }),
                 Mean = T.tensor({ 0, 0 }, { shape = { 2 } }), Variance = T.tensor({ 1, 1 }, { shape = { 2 } }) },
      outputs = BN_OUTS, of = { "Y" }, wrt = { "X", "Scale", "Bias" }, no_grad = { "Mean", "Variance" } }
  end)
end)

describe("batch_norm errors", function()
  local function run(xs, cn, attrs)
    return T.run{ type = "batch_norm",
      inputs = { X = T.tensor(rand_values(numel(xs)), { shape = xs }),
                 Scale = T.tensor(rand_values(cn), { shape = { cn } }), Bias = T.tensor(rand_values(cn), { shape = { cn } }),
                 Mean = T.tensor(rand_values(cn), { shape = { cn } }),
                 Variance = T.tensor(rand_values(cn, 2, 0.5, 1), { shape = { cn } }) },
      attrs = attrs, outputs = BN_OUTS }
  end
  it("rejects a Scale that does not match the channels", function()
    local e = err_of(function() run({ 2, 3, 2, 2 }, 4) end)
    assert.truthy(e:find("batch_norm", 1, true) and e:find("Scale", 1, true) and e:find("[3]", 1, true))
  end)
  it("rejects an unknown data_layout", function()
    local e = err_of(function() run({ 2, 3 }, 3, { data_layout = "NCWH" }) end)
    assert.truthy(e:find("data_layout", 1, true))
  end)
  it("rejects a 1-D X", function()
    local e = err_of(function() run({ 3 }, 3) end)
    assert.truthy(e:find("2 to 5 dims", 1, true))
  end)
  it("rejects epsilon out of range", function()
    assert.has_error(function() run({ 2, 3 }, 3, { epsilon = 0.5 }) end)
  end)
  it("rejects a training batch with no values per channel", function()
    local e = err_of(function()
      T.run{ type = "batch_norm",
        inputs = { X = T.tensor({}, { shape = { 0, 2 } }), Scale = T.tensor({ 1, 1 }, { shape = { 2 } }),
                   Bias = T.tensor({ 0, 0 }, { shape = { 2 } }), Mean = T.tensor({ 0, 0 }, { shape = { 2 } }),
                   Variance = T.tensor({ 1, 1 }, { shape = { 2 } }) },
        outputs = BN_OUTS }
    end)
    assert.truthy(e:find("no values per channel", 1, true))
  end)
end)

-- ---- layer_norm ----------------------------------------------------------
local function ln_ref(x, xs, axis, scale, bias, eps)
  local left, right = 1, 1
  for i = 1, #xs do
    if i <= axis then left = left * xs[i] else right = right * xs[i] end
  end
  local y, mean, var = {}, {}, {}
  for i = 0, left - 1 do
    local s = 0
    for j = 1, right do s = s + x[i * right + j] end
    local mu = s / right
    local v = 0
    for j = 1, right do v = v + (x[i * right + j] - mu) ^ 2 end
    v = v / right
    mean[i + 1], var[i + 1] = mu, v
    for j = 1, right do
      local h = (x[i * right + j] - mu) / math.sqrt(v + eps)
      if scale then h = h * scale[j] end
      if bias then h = h + bias[j] end
      y[i * right + j] = h
    end
  end
  return y, mean, var, left, right
end

local function ln_case(xs, axis, with_scale, with_bias, dtype, eps)
  eps = f32(eps or 1e-5)
  local x = rand_values(numel(xs), 51, -2, 2)
  local right = 1
  for i = axis + 1, #xs do right = right * xs[i] end
  local scale = with_scale and rand_values(right, 52, 0.5, 1.5) or nil
  local bias = with_bias and rand_values(right, 53) or nil
  local y, mean, var, left = ln_ref(x, xs, axis, scale, bias, eps)
  local inputs = { X = T.tensor(x, { shape = xs, dtype = dtype }) }
  if scale then inputs.Scale = T.tensor(scale, { shape = { right }, dtype = dtype }) end
  if bias then inputs.Bias = T.tensor(bias, { shape = { right }, dtype = dtype }) end
  local tol = dtype == "float32" and 2e-5 or 1e-10
  T.check_output{ type = "layer_norm", inputs = inputs, attrs = { begin_norm_axis = axis, epsilon = eps },
    outputs = { Y = 1, Mean = 1, Variance = 1 }, atol = tol, rtol = tol,
    expect = { Y = { shape = xs, data = y }, Mean = { shape = { left }, data = mean },
               Variance = { shape = { left }, data = var } } }
end

describe("layer_norm forward", function()
  it("normalizes a hand-computed row", function()
    -- row {1, 2, 3}: mean 2, variance 2/3
    local inv = 1 / math.sqrt(2 / 3 + f32(1e-5))
    T.check_output{ type = "layer_norm", inputs = { X = T.tensor({ { 1, 2, 3 } }) },
      outputs = { Y = 1, Mean = 1, Variance = 1 },
      expect = { Y = { shape = { 1, 3 }, data = { -inv, 0, inv } }, Mean = { shape = { 1 }, data = { 2 } },
                 Variance = { shape = { 1 }, data = { 2 / 3 } } }, atol = 1e-12 }
  end)
  for _, dtype in ipairs({ "float64", "float32" }) do
    describe(dtype, function()
      it("begin_norm_axis 1 with Scale and Bias", function() ln_case({ 3, 2, 4 }, 1, true, true, dtype) end)
      it("begin_norm_axis 2", function() ln_case({ 2, 3, 5 }, 2, true, true, dtype) end)
      it("without Scale and Bias", function() ln_case({ 4, 6 }, 1, false, false, dtype) end)
      it("Scale only, epsilon 1e-3", function() ln_case({ 2, 2, 3 }, 1, true, false, dtype, 1e-3) end)
      it("Bias only", function() ln_case({ 3, 4 }, 1, false, true, dtype) end)
      it("many rows (parallel path)", function() ln_case({ 64, 8, 40 }, 2, true, true, dtype) end)
    end)
  end
end)

describe("layer_norm gradients", function()
  it("X, Scale, Bias (begin_norm_axis 1)", function()
    T.check_grad{ type = "layer_norm",
      inputs = { X = T.tensor(rand_values(12, 61, -2, 2), { shape = { 2, 2, 3 } }),
                 Scale = T.tensor(rand_values(6, 62, 0.5, 1.5), { shape = { 6 } }),
                 Bias = T.tensor(rand_values(6, 63), { shape = { 6 } }) },
      outputs = { Y = 1, Mean = 1, Variance = 1 }, of = { "Y" }, wrt = { "X", "Scale", "Bias" } }
  end)
  it("weighted loss, begin_norm_axis 2", function()
    check_grad_weighted{ type = "layer_norm",
      inputs = { X = T.tensor(rand_values(24, 64, -2, 2), { shape = { 2, 3, 4 } }),
                 Scale = T.tensor(rand_values(4, 65, 0.5, 1.5), { shape = { 4 } }),
                 Bias = T.tensor(rand_values(4, 66), { shape = { 4 } }) },
      attrs = { begin_norm_axis = 2 }, outputs = { Y = 1, Mean = 1, Variance = 1 }, of = { "Y" },
      wrt = { "X", "Scale", "Bias" }, weights = { Y = T.tensor(rand_values(24, 67), { shape = { 2, 3, 4 } }) } }
  end)
  it("without Scale and Bias", function()
    check_grad_weighted{ type = "layer_norm",
      inputs = { X = T.tensor(rand_values(15, 68, -2, 2), { shape = { 3, 5 } }) },
      outputs = { Y = 1, Mean = 1, Variance = 1 }, of = { "Y" }, wrt = { "X" },
      weights = { Y = T.tensor(rand_values(15, 69), { shape = { 3, 5 } }) } }
  end)
  it("a large input (threaded Scale/Bias sums)", function()
    -- few elements are perturbed here: compare the analytic sums with plain Lua sums
    local xs = { 64, 300 }
    local x, dy = rand_values(numel(xs), 70, -2, 2), rand_values(numel(xs), 71)
    local scale = rand_values(300, 72, 0.5, 1.5)
    local _, mean, var = ln_ref(x, xs, 1, nil, nil, f32(1e-5))
    local r = T.run{ type = "layer_norm_grad",
      inputs = { X = T.tensor(x, { shape = xs }), Mean = T.tensor(mean, { shape = { 64 } }),
                 Variance = T.tensor(var, { shape = { 64 } }), Scale = T.tensor(scale, { shape = { 300 } }),
                 Bias = T.tensor(rand_values(300, 73), { shape = { 300 } }), ["Y@GRAD"] = T.tensor(dy, { shape = xs }) },
      outputs = { ["X@GRAD"] = 1, ["Scale@GRAD"] = 1, ["Bias@GRAD"] = 1 } }
    local ds, db = {}, {}
    for j = 1, 300 do ds[j], db[j] = 0, 0 end
    for i = 0, 63 do
      local inv = 1 / math.sqrt(var[i + 1] + f32(1e-5))
      for j = 1, 300 do
        local k = i * 300 + j
        ds[j] = ds[j] + dy[k] * (x[k] - mean[i + 1]) * inv
        db[j] = db[j] + dy[k]
      end
    end
    T.assert_close(r["Scale@GRAD"][1], { shape = { 300 }, data = ds }, 1e-10, 1e-10, "Scale@GRAD")
    T.assert_close(r["Bias@GRAD"][1], { shape = { 300 }, data = db }, 1e-10, 1e-10, "Bias@GRAD")
  end)
end)

describe("layer_norm errors", function()
  it("rejects begin_norm_axis at or past the rank", function()
    local e = err_of(function()
      T.run{ type = "layer_norm", inputs = { X = T.tensor({ { 1, 2 } }) }, attrs = { begin_norm_axis = 2 },
        outputs = { Y = 1, Mean = 1, Variance = 1 } }
    end)
    assert.truthy(e:find("begin_norm_axis", 1, true) and e:find("[1, 2]", 1, true))
  end)
  it("rejects a Scale of the wrong size", function()
    local e = err_of(function()
      T.run{ type = "layer_norm", inputs = { X = T.tensor({ { 1, 2, 3 } }), Scale = T.tensor({ 1, 1 }) },
        outputs = { Y = 1, Mean = 1, Variance = 1 } }
    end)
    assert.truthy(e:find("Scale", 1, true) and e:find("3 values", 1, true))
  end)
  it("rejects a Bias of another dtype", function()
    local e = err_of(function()
      T.run{ type = "layer_norm",
        inputs = { X = T.tensor({ { 1, 2, 3 } }), Bias = T.tensor({ 1, 1, 1 }, { dtype = "float32" }) },
        outputs = { Y = 1, Mean = 1, Variance = 1 } }
    end)
    assert.truthy(e:find("float32", 1, true) and e:find("float64", 1, true))
  end)
end)
