-- fc (Paddle's fused inference op) and the predictor's pass that builds it
-- from mul + elementwise_add (+ relu): values against plain Lua, the pass
-- against the unfused program, and the kernel's kept state (reordered
-- weights) following every change of W.
local ffi = require("ffi")
local oar = require("oar")
local layers = oar.layers
local lib = require("oar.lib")
local C = lib.C
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")
local expect_error = require("spec.helpers.expect_error")
local tmpdir = require("spec.helpers.files").tmpdir

-- out[m][n] = act(sum_k x[m][k] w[k][n] + b[n]) over flat row-major tables
local function fc_ref(x, w, b, M, K, N, ldw, relu)
  local out = {}
  for m = 0, M - 1 do
    for n = 0, N - 1 do
      local s = 0
      for k = 0, K - 1 do s = s + x[m * K + k + 1] * w[k * ldw + n + 1] end
      if b then s = s + b[n + 1] end
      if relu and s < 0 then s = 0 end
      out[m * N + n + 1] = s
    end
  end
  return out
end

local at_threads = require("spec.helpers.threads")

describe("fc op", function()
  for _, dtype in ipairs({ "float64", "float32" }) do
    for _, relu in ipairs({ false, true }) do
      it(("%s, activation '%s', bias, in_num_col_dims 1"):format(dtype, relu and "relu" or ""), function()
        local M, K, N = 5, 7, 6
        local x, w, b = R.symmetric(M * K, 1), R.symmetric(K * N, 2), R.symmetric(N, 3)
        local tol = dtype == "float32" and 1e-5 or 1e-12
        T.check_output{ type = "fc", dtype = dtype, atol = tol, rtol = tol,
          inputs = { Input = T.tensor(x, { shape = { M, K }, dtype = dtype }),
                     W = T.tensor(w, { shape = { K, N }, dtype = dtype }),
                     Bias = T.tensor(b, { shape = { N }, dtype = dtype }) },
          attrs = { activation_type = relu and "relu" or "" },
          expect = { Out = { shape = { M, N }, data = fc_ref(x, w, b, M, K, N, N, relu) } } }
      end)
    end
  end

  it("flattens Input at in_num_col_dims 2 and works without Bias", function()
    local x, w = R.symmetric(2 * 3 * 4, 4), R.symmetric(4 * 5, 5)
    T.check_output{ type = "fc", atol = 1e-12,
      inputs = { Input = T.tensor(x, { shape = { 2, 3, 4 } }), W = T.tensor(w, { shape = { 4, 5 } }) },
      attrs = { in_num_col_dims = 2 },
      expect = { Out = { shape = { 2, 3, 5 }, data = fc_ref(x, w, nil, 6, 4, 5, 5, false) } } }
  end)

  it("reads the top-left K x N of W with padding_weights", function()
    local K, N = 3, 2
    local x, w, b = R.symmetric(4 * K, 6), R.symmetric((K + 4) * (N + 4), 7), R.symmetric(N, 8)
    for _, dtype in ipairs({ "float64", "float32" }) do
      T.check_output{ type = "fc", dtype = dtype, atol = 1e-5,
        inputs = { Input = T.tensor(x, { shape = { 4, K }, dtype = dtype }),
                   W = T.tensor(w, { shape = { K + 4, N + 4 }, dtype = dtype }),
                   Bias = T.tensor(b, { shape = { 1, N }, dtype = dtype }) },
        attrs = { padding_weights = true, activation_type = "relu" },
        expect = { Out = { shape = { 4, N }, data = fc_ref(x, w, b, 4, K, N, N + 4, true) } } }
    end
  end)

  it("refuses shapes that do not multiply, a 3-D W and an unknown activation", function()
    local function run(xs, ws, attrs)
      T.run{ type = "fc", attrs = attrs,
        inputs = { Input = T.tensor(R.symmetric(xs[1] * xs[2], 1), { shape = xs }),
                   W = T.tensor(R.symmetric(ws[1] * ws[2] * (ws[3] or 1), 2), { shape = ws }) } }
    end
    expect_error(function() run({ 2, 3 }, { 4, 5 }) end, "fc", "3 columns", "4 rows")
    expect_error(function() run({ 2, 3 }, { 3, 5, 1 }) end, "fc", "W must be 2-D")
    expect_error(function() run({ 2, 3 }, { 3, 5 }, { activation_type = "tanh" }) end, "activation_type", "tanh")
    -- a W of another dtype than Input, as a loaded model could hold
    expect_error(function()
      T.run{ type = "fc", inputs = { Input = T.tensor(R.symmetric(6, 1), { shape = { 2, 3 }, dtype = "float32" }),
                                     W = T.tensor(R.symmetric(15, 2), { shape = { 3, 5 }, dtype = "float64" }) } }
    end, "fc", "float64")
  end)

  it("gives the same bits with 1 and 2 threads (float32, batch 1 and 128)", function()
    for _, M in ipairs({ 1, 128 }) do
      local K, N = 300, 200
      local x, w, b = R.symmetric(M * K, 9), R.symmetric(K * N, 10), R.symmetric(N, 11)
      local function run()
        return T.run{ type = "fc", dtype = "float32", attrs = { activation_type = "relu" },
          inputs = { Input = T.tensor(x, { shape = { M, K }, dtype = "float32" }),
                     W = T.tensor(w, { shape = { K, N }, dtype = "float32" }),
                     Bias = T.tensor(b, { shape = { N }, dtype = "float32" }) } }.Out[1].data
      end
      assert.same_array(at_threads(1, run), at_threads(2, run), "batch " .. M)
    end
  end)
end)

-- a program x -> fc(W, B) -> out run in one scope, to change W between runs
local function fc_program(K, N)
  local prog = oar.Program()
  local block = prog:global_block()
  local x = block:create_var{ name = "x", shape = { -1, K }, dtype = "float32" }
  local w = block:create_var{ name = "w", shape = { K, N }, dtype = "float32", persistable = true }
  local b = block:create_var{ name = "b", shape = { N }, dtype = "float32", persistable = true }
  local out = block:create_var{ name = "out", dtype = "float32" }
  block:append_op{ type = "fc", inputs = { Input = { x }, W = { w }, Bias = { b } }, outputs = { Out = { out } },
                   attrs = { activation_type = "relu" } }
  return prog
end

describe("fc's reordered weights", function()
  local K, N, M = 64, 48, 16
  local x, w, b = R.symmetric(M * K, 21), R.symmetric(K * N, 22), R.symmetric(N, 23)
  local function rows(flat, r, c)
    local t = {}
    for i = 1, r do
      t[i] = {}
      for j = 1, c do t[i][j] = flat[(i - 1) * c + j] end
    end
    return t
  end
  local function run(exe, prog, scope)
    local out = exe:run(prog, { feed = { x = oar.Tensor(rows(x, M, K), "float32") }, fetch_list = { "out" },
                                scope = scope })
    local d, r = out[1]:data(), {}
    for i = 0, M * N - 1 do r[i + 1] = d[i] end
    return r
  end
  local function close(got, want)
    for i = 1, #want do assert(math.abs(got[i] - want[i]) <= 1e-4 + 1e-4 * math.abs(want[i]), "element " .. i) end
  end

  it("follow a write through Tensor:set, a new tensor and an op writing W", function()
    local prog, exe, scope = fc_program(K, N), oar.Executor(), oar.Scope()
    scope:var("w"):set_tensor(oar.Tensor(rows(w, K, N), "float32"))
    scope:var("b"):set_tensor(oar.Tensor(b, "float32"))
    close(run(exe, prog, scope), fc_ref(x, w, b, M, K, N, N, true))
    -- the second run reuses the weights kept from the first
    close(run(exe, prog, scope), fc_ref(x, w, b, M, K, N, N, true))
    -- one element changed in place from Lua
    scope:var("w"):get_tensor():set(5.0, 3, 7)
    w[2 * N + 7] = 5.0
    close(run(exe, prog, scope), fc_ref(x, w, b, M, K, N, N, true))
    -- a new tensor in the variable
    local w2 = R.symmetric(K * N, 24)
    scope:var("w"):set_tensor(oar.Tensor(rows(w2, K, N), "float32"))
    close(run(exe, prog, scope), fc_ref(x, w2, b, M, K, N, N, true))
    -- an op scaling W in place (as an optimizer step would)
    local upd = oar.Program()
    local ub = upd:global_block()
    local wv = ub:create_var{ name = "w", shape = { K, N }, dtype = "float32", persistable = true }
    ub:append_op{ type = "scale", inputs = { X = { wv } }, outputs = { Out = { wv } }, attrs = { scale = -2.0 } }
    exe:run(upd, { scope = scope })
    for i = 1, #w2 do w2[i] = -2 * w2[i] end
    close(run(exe, prog, scope), fc_ref(x, w2, b, M, K, N, N, true))
  end)
end)

describe("the predictor's fc fusion", function()
  -- an MLP trained a few steps and written by save_inference_model
  local function save_mlp(dir, extra_target)
    local main, startup = oar.Program(), oar.Program()
    local probs, hidden
    oar.program_guard(main, startup, function()
      local img = layers.data{ name = "img", shape = { 20 } }
      local label = layers.data{ name = "label", shape = { 1 }, dtype = "int64" }
      hidden = layers.fc{ input = img, size = 16, act = "relu" }
      local h2 = layers.fc{ input = hidden, size = 12, act = "relu" }
      local h3 = layers.fc{ input = h2, size = 10 }   -- no activation: mul + add only
      probs = layers.fc{ input = h3, size = 4, act = "softmax" }
      oar.optimizer.SGD{ learning_rate = 0.1 }:minimize(layers.mean(layers.cross_entropy{ input = probs, label = label }))
    end)
    local exe, scope = oar.Executor(), oar.Scope()
    oar.seed(3)
    exe:run(startup, { scope = scope })
    for step = 1, 5 do
      local xs, ys = {}, {}
      for r = 1, 8 do
        xs[r] = {}
        for c = 1, 20 do xs[r][c] = math.sin(step * 0.7 + r * 1.3 + c * 0.37) end
        ys[r] = { (r + step) % 4 }
      end
      exe:run(main, { feed = { img = xs, label = oar.Tensor(ys, "int64") }, scope = scope })
    end
    local targets = { probs }
    if extra_target then targets[2] = hidden end
    oar.io.save_inference_model(dir, { "img" }, targets, exe, main, { scope = scope })
    return exe, scope
  end

  local function predictor(dir)
    local pp = ffi.new("oar_predictor_t*[1]")
    assert(C.oar_predictor_load(dir, pp) == 0, lib.last_error())
    return ffi.gc(pp[0], C.oar_predictor_free)
  end

  local function batch(bs, seed)
    local flat = R.symmetric(bs * 20, seed)
    local rows = {}
    for r = 1, bs do
      rows[r] = {}
      for c = 1, 20 do rows[r][c] = flat[(r - 1) * 20 + c] end
    end
    return flat, rows
  end

  local function predict(p, flat, bs, index)
    local x = ffi.new("float[?]", #flat, flat)
    local dims = ffi.new("int64_t[2]", bs, 20)
    assert(C.oar_predictor_set_input(p, "img", x, dims, 2) == 0, lib.last_error())
    assert(C.oar_predictor_run(p) == 0, lib.last_error())
    local out, odims, ond = ffi.new("const float*[1]"), ffi.new("const int64_t*[1]"), ffi.new("int[1]")
    assert(C.oar_predictor_get_output(p, index or 0, out, odims, ond) == 0, lib.last_error())
    local n = 1
    for i = 0, ond[0] - 1 do n = n * tonumber(odims[0][i]) end
    local r = {}
    for i = 0, n - 1 do r[i + 1] = out[0][i] end
    return r
  end

  local function unfused(dir, rows, index)
    local exe, scope = oar.Executor(), oar.Scope()
    local prog, feeds, fetches = oar.io.load_inference_model(dir, exe, { scope = scope })
    local out = exe:run(prog, { feed = { [feeds[1]] = rows }, fetch_list = fetches, scope = scope })
    local d, r = out[index or 1]:data(), {}
    for i = 0, out[index or 1]:numel() - 1 do r[i + 1] = d[i] end
    return r
  end

  local function profiled(fn)
    oar.profiler.reset()
    oar.profiler.start()
    local ok, err = pcall(fn)
    oar.profiler.stop()
    assert(ok, err)
    return oar.profiler.report()
  end

  it("computes what the unfused program computes, for batch sizes that come and go", function()
    local dir = tmpdir()
    save_mlp(dir)
    local p = predictor(dir)
    for _, bs in ipairs({ 1, 4, 130, 4, 7, 9, 11, 1 }) do
      local flat, rows = batch(bs, 30 + bs)
      local got, want = predict(p, flat, bs), unfused(dir, rows)
      assert.equals(#want, #got)
      for i = 1, #want do
        assert(math.abs(got[i] - want[i]) <= 1e-5, ("batch %d element %d: %g vs %g"):format(bs, i, got[i], want[i]))
      end
    end
  end)

  it("runs fc where the program had mul, elementwise_add and relu", function()
    local dir = tmpdir()
    save_mlp(dir)
    local p = predictor(dir)
    local flat = batch(3, 40)
    local report = profiled(function() predict(p, flat, 3) end)
    local fc = tonumber(report:match("\nfc%s+(%d+)"))
    assert.equals(4, fc)   -- every layer: three with relu or none, the softmax layer's product + bias
    assert.is_nil(report:match("\nmul%s"))
    assert.is_nil(report:match("\nelementwise_add%s"))
    assert.is_nil(report:match("\nrelu%s"))
  end)

  it("fuses a fetched layer output (the fc writes it) and keeps a relu whose input has two readers", function()
    local dir = tmpdir()
    save_mlp(dir, true)
    local p = predictor(dir)
    local flat, rows = batch(5, 50)
    local report = profiled(function() predict(p, flat, 5, 1) end)
    assert.equals(4, tonumber(report:match("\nfc%s+(%d+)")))
    local got, want = predict(p, flat, 5, 1), unfused(dir, rows, 2)
    for i = 1, #want do assert(math.abs(got[i] - want[i]) <= 1e-5) end

    -- h = x W + b read by relu and by scale: mul + add fuse, the relu stays
    local main, startup = oar.Program(), oar.Program()
    local out
    oar.program_guard(main, startup, function()
      local img = layers.data{ name = "img", shape = { 20 } }
      local h = layers.fc{ input = img, size = 6 }
      out = layers.elementwise_add(layers.relu(h), layers.scale(h, 2))
    end)
    local exe, scope = oar.Executor(), oar.Scope()
    exe:run(startup, { scope = scope })
    local dir2 = tmpdir()
    oar.io.save_inference_model(dir2, { "img" }, { out }, exe, main, { scope = scope })
    local p2 = predictor(dir2)
    report = profiled(function() predict(p2, flat, 5) end)
    assert.equals(1, tonumber(report:match("\nfc%s+(%d+)")))
    assert.equals(1, tonumber(report:match("\nrelu%s+(%d+)")))
    got, want = predict(p2, flat, 5), unfused(dir2, rows)
    for i = 1, #want do assert(math.abs(got[i] - want[i]) <= 1e-5) end
  end)

end)
