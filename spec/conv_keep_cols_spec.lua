-- conv2d keeps the columns it unfolds for conv2d_grad (kernels/cpu/conv.c,
-- "kept columns"): when conv2d_grad follows in the same program on the same
-- Input, the forward of a padded or horizontally strided conv attaches the
-- whole batch's column matrix (up to 4 MiB) to Input and the backward reads
-- Filter@GRAD's columns from it instead of unfolding the images again (a
-- plain unfold, whole rows, and a larger matrix cost less to redo: not
-- kept). Checked here:
--  - Output, Input@GRAD and Filter@GRAD are bit-identical to the forward and
--    the backward run as separate programs (where nothing is kept and the
--    backward unfolds), in float32 and float64, NCHW and NHWC, groups 1 and
--    2, strides / paddings / dilations, batches of 1, 3, 17, 40 and 48 (the
--    Filter@GRAD chunks of 16 fall across the forward's blocks of images or
--    on them), on 1 and 2 threads, and the same for 1 and 2 threads;
--  - the backward really reuses them: oar_debug_conv_cols(0) counts the
--    images im2col unfolded (one pass over the batch per step, not two;
--    two for an unpadded stride-1 conv, which keeps nothing);
--  - a write to Input between the forward and the backward drops them: the
--    backward unfolds the new values and matches the unfolding path;
--  - nothing outlives the step: no kept matrix is alive after a run
--    (oar_debug_conv_cols(1)), over many training steps of a small convnet
--    fed from a ring of batches the caller keeps, whose peak memory stays
--    the same from step to step.
local lib = require("oar.lib")
local C = lib.C
local T = require("spec.helpers.op_test")
local P = require("spec.helpers.program")
local R = require("spec.helpers.random")

local function unfolded() return tonumber(C.oar_debug_conv_cols(0)) end
local function kept_alive()
  collectgarbage()
  collectgarbage()
  return tonumber(C.oar_debug_conv_cols(1))
end

local numel = require("spec.helpers.index").numel

local function check(rc, what)
  if rc ~= 0 then error(what .. ": " .. lib.last_error(), 2) end
end

local function declare(block, name, shape, dtype)
  P.new_var(block, name, { dims = shape, dtype = T.DTYPES[dtype] })
end

-- output shape of a conv (NCHW or NHWC) of xs with filter ws
local function out_shape(xs, ws, a)
  local st, dl, pd = a.strides or { 1, 1 }, a.dilations or { 1, 1 }, a.paddings or { 0, 0 }
  local nhwc = a.data_format == "NHWC"
  local H, W = nhwc and xs[2] or xs[3], nhwc and xs[3] or xs[4]
  local OH = math.floor((H + 2 * pd[1] - (dl[1] * (ws[3] - 1) + 1)) / st[1]) + 1
  local OW = math.floor((W + 2 * pd[2] - (dl[2] * (ws[4] - 1) + 1)) / st[2]) + 1
  if nhwc then return { xs[1], OH, OW, ws[1] } end
  return { xs[1], ws[1], OH, OW }
end

local function problem(xs, ws, attrs, dtype, seed)
  local ys = out_shape(xs, ws, attrs)
  return { xs = xs, ws = ws, ys = ys, attrs = attrs, dtype = dtype,
           x = R.symmetric(numel(xs), seed), w = R.symmetric(numel(ws), seed + 1),
           dy = R.symmetric(numel(ys), seed + 2) }
end

local function feeds(p, x)
  return { x = T.tensor(x or p.x, { shape = p.xs, dtype = p.dtype }),
           w = T.tensor(p.w, { shape = p.ws, dtype = p.dtype }),
           dy = T.tensor(p.dy, { shape = p.ys, dtype = p.dtype }) }
end

-- one program: conv2d, [ops between,] conv2d_grad on the same Input (the
-- forward keeps its columns); returns {Output, Input@GRAD, Filter@GRAD}
local function train_run(p, between)
  local prog = P.new_program()
  local block = C.oar_program_block(prog, 0)
  declare(block, "x", p.xs, p.dtype)
  declare(block, "w", p.ws, p.dtype)
  declare(block, "dy", p.ys, p.dtype)
  T.append_op(block, "conv2d", { Input = { "x" }, Filter = { "w" } }, { Output = { "y" } }, p.attrs)
  if between then between(block) end
  T.append_op(block, "conv2d_grad", { Input = { "x" }, Filter = { "w" }, ["Output@GRAD"] = { "dy" } },
    { ["Input@GRAD"] = { "dx" }, ["Filter@GRAD"] = { "dw" } }, p.attrs)
  return T.run_program(prog, feeds(p), { "y", "dx", "dw" }, p.dtype)
end

-- the forward and the backward as two programs: nothing is kept, the
-- backward unfolds
local function split_run(p, x)
  local f = T.run{ type = "conv2d", attrs = p.attrs, outputs = { Output = 1 },
    inputs = { Input = T.tensor(x or p.x, { shape = p.xs, dtype = p.dtype }),
               Filter = T.tensor(p.w, { shape = p.ws, dtype = p.dtype }) } }
  local b = T.run{ type = "conv2d_grad", attrs = p.attrs, outputs = { ["Input@GRAD"] = 1, ["Filter@GRAD"] = 1 },
    inputs = { Input = T.tensor(x or p.x, { shape = p.xs, dtype = p.dtype }),
               Filter = T.tensor(p.w, { shape = p.ws, dtype = p.dtype }),
               ["Output@GRAD"] = T.tensor(p.dy, { shape = p.ys, dtype = p.dtype }) } }
  return { f.Output[1], b["Input@GRAD"][1], b["Filter@GRAD"][1] }
end

local function assert_bits(a, b, label)
  assert(#a.data == #b.data, label .. ": sizes differ")
  for i = 1, #a.data do
    if a.data[i] ~= b.data[i] then
      error(("%s: element %d is %.17g kept, %.17g unfolded"):format(label, i, a.data[i], b.data[i]), 2)
    end
  end
end

local function with_threads(n, fn)
  local before = tonumber(C.oar_get_flag("num_threads"))
  check(C.oar_set_flag("num_threads", n), "num_threads")
  local ok, r = pcall(fn)
  C.oar_set_flag("num_threads", before)
  if not ok then error(r, 0) end
  return r
end

local function nhwc_of(xs) return { xs[1], xs[3], xs[4], xs[2] } end

-- shapes (NCHW) and attrs; P = output pixels: under 256 the forward unfolds
-- a few images side by side (blocks of 3 here), from 256 one at a time
local CASES = {
  { "blocks of images, padding", { 4, 10, 10 }, { 6, 4, 3, 3 }, { paddings = { 1, 1 } } },
  { "one image per block", { 3, 16, 16 }, { 4, 3, 3, 3 }, { paddings = { 1, 1 } } },
  { "groups 2, strides, dilations", { 4, 11, 9 }, { 6, 2, 3, 2 },
    { groups = 2, strides = { 2, 1 }, paddings = { 1, 0 }, dilations = { 1, 2 } } },
  { "strides and paddings", { 2, 9, 12 }, { 5, 2, 2, 3 }, { strides = { 1, 2 }, paddings = { 2, 1 } } },
  -- enough work per image to thread: one image on 2 threads is image mode
  { "large images", { 8, 24, 24 }, { 16, 8, 3, 3 }, { paddings = { 1, 1 } }, { 1, 3 } },
}
local BATCHES = { 1, 3, 17, 40, 48 }

describe("conv2d kept columns", function()
  for _, dtype in ipairs({ "float32", "float64" }) do
    for _, fmt in ipairs({ "NCHW", "NHWC" }) do
      for _, c in ipairs(CASES) do
        it(("%s %s %s: bit-identical to the unfolding backward, 1 and 2 threads"):format(dtype, fmt, c[1]), function()
          for _, n in ipairs(c[5] or BATCHES) do
            local xs = { n, c[2][1], c[2][2], c[2][3] }
            if fmt == "NHWC" then xs = nhwc_of(xs) end
            local attrs = {}
            for k, v in pairs(c[4]) do attrs[k] = v end
            attrs.data_format = fmt
            local p = problem(xs, c[3], attrs, dtype, 10 * n + #c[1])
            local per_thread = {}
            for _, threads in ipairs({ 1, 2 }) do
              with_threads(threads, function()
                local u0 = unfolded()
                local kept = train_run(p)
                local u1 = unfolded()
                local split = split_run(p)
                local u2 = unfolded()
                local what = ("n=%d, %d thread(s)"):format(n, threads)
                -- the training program unfolds each image once, the split runs twice
                assert.are.equal(n, u1 - u0, what .. ": images unfolded by forward + backward")
                assert.are.equal(2 * n, u2 - u1, what .. ": images unfolded by the split runs")
                assert_bits(kept[1], split[1], what .. " Output")
                assert_bits(kept[2], split[2], what .. " Input@GRAD")
                assert_bits(kept[3], split[3], what .. " Filter@GRAD")
                per_thread[threads] = kept
              end)
            end
            assert.are.equal(0, kept_alive())
            for i, label in ipairs({ "Output", "Input@GRAD", "Filter@GRAD" }) do
              assert_bits(per_thread[1][i], per_thread[2][i], ("n=%d, 1 vs 2 threads, %s"):format(n, label))
            end
          end
        end)
      end
    end
  end

  it("keeps nothing for an unpadded stride-1 conv (the backward unfolds again)", function()
    for _, dtype in ipairs({ "float32", "float64" }) do
      for _, n in ipairs({ 3, 17 }) do
        local p = problem({ n, 2, 12, 12 }, { 4, 2, 5, 5 }, { strides = { 2, 1 }, dilations = { 1, 2 } }, dtype, n)
        local u0 = unfolded()
        local kept = train_run(p)
        assert.are.equal(2 * n, unfolded() - u0)
        local split = split_run(p)
        for i = 1, 3 do assert_bits(kept[i], split[i], "unpadded #" .. i) end
        assert.are.equal(0, kept_alive())
      end
    end
  end)

  it("keeps nothing past 4 MiB of columns (the backward unfolds again)", function()
    -- 64 images of 144 x 256 columns in float32: 9.4 MB
    local p = problem({ 64, 16, 16, 16 }, { 8, 16, 3, 3 }, { paddings = { 1, 1 } }, "float32", 9)
    local u0 = unfolded()
    local kept = train_run(p)
    assert.are.equal(2 * 64, unfolded() - u0)
    local split = split_run(p)
    for i = 1, 3 do assert_bits(kept[i], split[i], "large #" .. i) end
    -- 16 images of the same: 2.4 MB, kept
    local q = problem({ 16, 16, 16, 16 }, { 8, 16, 3, 3 }, { paddings = { 1, 1 } }, "float32", 9)
    u0 = unfolded()
    train_run(q)
    assert.are.equal(16, unfolded() - u0)
    assert.are.equal(0, kept_alive())
  end)

  it("keeps nothing for a 1x1 convolution (no columns) and stays correct", function()
    local p = problem({ 5, 4, 6, 6 }, { 3, 4, 1, 1 }, {}, "float64", 3)
    local u0 = unfolded()
    local kept = train_run(p)
    assert.are.equal(u0, unfolded())
    local split = split_run(p)
    for i = 1, 3 do assert_bits(kept[i], split[i], "1x1 #" .. i) end
    assert.are.equal(0, kept_alive())
  end)

  it("keeps nothing for an inference program", function()
    local p = problem({ 4, 3, 10, 10 }, { 4, 3, 3, 3 }, { paddings = { 1, 1 } }, "float32", 5)
    split_run(p)
    assert.are.equal(0, kept_alive())
  end)

  for _, dtype in ipairs({ "float32", "float64" }) do
    for _, fmt in ipairs({ "NCHW", "NHWC" }) do
      it(("%s %s: a write to Input after the forward drops the kept columns"):format(dtype, fmt), function()
        for _, n in ipairs({ 3, 17 }) do
          local xs = { n, 4, 10, 10 }
          if fmt == "NHWC" then xs = nhwc_of(xs) end
          local p = problem(xs, { 6, 4, 3, 3 }, { paddings = { 1, 1 }, data_format = fmt }, dtype, 40 + n)
          -- x = 2 x in place between conv2d and conv2d_grad: exact in both dtypes
          local got = train_run(p, function(block)
            T.append_op(block, "scale", { X = { "x" } }, { Out = { "x" } }, { scale = 2.0 })
          end)
          local x2 = {}
          for i, v in ipairs(p.x) do x2[i] = 2 * v end
          local before = split_run(p)
          local after = split_run(p, x2)
          assert_bits(got[1], before[1], "Output (of the unscaled x)")
          assert_bits(got[2], after[2], "Input@GRAD")
          assert_bits(got[3], after[3], "Filter@GRAD (of the scaled x)")
          -- the stale columns would have given the unscaled x's Filter@GRAD
          local differs = false
          for i = 1, #got[3].data do differs = differs or got[3].data[i] ~= before[3].data[i] end
          assert.is_true(differs)
          assert.are.equal(0, kept_alive())
        end
      end)
    end
  end

  it("Input@GRAD and Filter@GRAD match finite differences through the kept path", function()
    -- T.check_grad builds conv2d + its grad in one program: the kept path
    T.check_grad{ type = "conv2d",
      inputs = { Input = T.tensor(R.symmetric(5 * 2 * 5 * 5, 91), { shape = { 5, 2, 5, 5 } }),
                 Filter = T.tensor(R.symmetric(3 * 2 * 3 * 3, 92), { shape = { 3, 2, 3, 3 } }) },
      attrs = { paddings = { 1, 1 } }, outputs = { Output = 1 }, wrt = { "Input", "Filter" }, of = { "Output" } }
  end)
end)

describe("conv2d kept columns in training", function()
  it("unfold once per step, free them every step, peak memory steady (a small convnet, 30 steps)", function()
    local oar = require("oar")
    local layers = oar.layers
    local main, startup = oar.Program(), oar.Program()
    main.random_seed, startup.random_seed = 1, 1
    local loss
    oar.program_guard(main, startup, function()
      local img = layers.data{ name = "img", shape = { 1, 16, 16 }, dtype = "float32" }
      local label = layers.data{ name = "label", shape = { 1 }, dtype = "int64" }
      -- c1 padded (kept), c2 plain (unfolded twice)
      local c1 = layers.conv2d{ input = img, num_filters = 4, filter_size = 5, padding = 2, act = "relu" }
      local p1 = layers.pool2d{ input = c1, pool_size = 2, pool_stride = 2, pool_type = "max" }
      local c2 = layers.conv2d{ input = p1, num_filters = 6, filter_size = 3, act = "relu" }
      local pred = layers.fc{ input = c2, size = 3, act = "softmax" }
      loss = layers.mean(layers.cross_entropy{ input = pred, label = label })
      oar.optimizer.SGD{ learning_rate = 0.05 }:minimize(loss)
    end)
    local exe = oar.Executor(oar.CPUPlace())
    local scope = oar.Scope()
    exe:run(startup, { scope = scope })
    local B = 20
    -- a ring of batches the caller keeps, as a data loader would
    local ring = {}
    for r = 1, 3 do
      local x = R.symmetric(B * 256, 200 + r)
      local imgs, labels = {}, {}
      for i = 1, B do
        local rows = {}
        for h = 1, 16 do
          local row = {}
          for k = 1, 16 do row[k] = x[(i - 1) * 256 + (h - 1) * 16 + k] end
          rows[h] = row
        end
        imgs[i] = { rows }
        labels[i] = { (i + r) % 3 }
      end
      ring[r] = { img = oar.Tensor(imgs, "float32"), label = oar.Tensor(labels, "int64") }
    end
    local peaks, first, last = {}, nil, nil
    for step = 1, 30 do
      local u0 = unfolded()
      oar.profiler.start()
      local out = exe:run(main, { feed = ring[step % 3 + 1], fetch_list = { loss }, scope = scope })
      oar.profiler.stop()
      peaks[step] = oar.profiler.peak_bytes()
      -- c1's images unfolded once (by the forward), c2's twice
      assert.are.equal(3 * B, unfolded() - u0, "images unfolded in step " .. step)
      assert.are.equal(0, tonumber(C.oar_debug_conv_cols(1)), "kept matrices alive after step " .. step)
      local l = out[1]:data()[0]
      first = first or l
      last = l
    end
    assert.is_true(last < first, "the loss falls")
    for step = 3, 30 do assert.are.equal(peaks[2], peaks[step], "peak of step " .. step) end
  end)
end)
