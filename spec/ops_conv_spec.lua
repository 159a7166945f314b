-- conv2d / depthwise_conv2d: forward against a direct convolution written in
-- plain Lua loops, gradients against finite differences, and error cases.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")

-- deterministic values in [-1, 1)
local function rand_values(n, seed) return R.symmetric(n, seed or 12345) end

local numel = require("spec.helpers.index").numel

local function pads4(p)
  p = p or { 0, 0 }
  if #p == 2 then return { p[1], p[1], p[2], p[2] } end
  return p
end

-- direct NCHW convolution; x, w flat 1-based
local function conv_ref(x, xs, w, ws, a)
  a = a or {}
  local st, dl = a.strides or { 1, 1 }, a.dilations or { 1, 1 }
  local pd = pads4(a.paddings)
  local groups = a.groups or 1
  local N, C, H, W = xs[1], xs[2], xs[3], xs[4]
  local M, CG, KH, KW = ws[1], ws[2], ws[3], ws[4]
  local OH = math.floor((H + pd[1] + pd[2] - (dl[1] * (KH - 1) + 1)) / st[1]) + 1
  local OW = math.floor((W + pd[3] + pd[4] - (dl[2] * (KW - 1) + 1)) / st[2]) + 1
  local MG = M / groups
  local out = {}
  for n = 0, N - 1 do
    for m = 0, M - 1 do
      local g = math.floor(m / MG)
      for oh = 0, OH - 1 do
        for ow = 0, OW - 1 do
          local s = 0
          for c = 0, CG - 1 do
            local ci = g * CG + c
            for i = 0, KH - 1 do
              local ih = oh * st[1] - pd[1] + i * dl[1]
              if ih >= 0 and ih < H then
                for j = 0, KW - 1 do
                  local iw = ow * st[2] - pd[3] + j * dl[2]
                  if iw >= 0 and iw < W then
                    s = s + x[((n * C + ci) * H + ih) * W + iw + 1] * w[((m * CG + c) * KH + i) * KW + j + 1]
                  end
                end
              end
            end
          end
          out[#out + 1] = s
        end
      end
    end
  end
  return out, { N, M, OH, OW }
end

local function case(xs, ws, attrs, dtype, seed, optype)
  local x = rand_values(numel(xs), seed or 1)
  local w = rand_values(numel(ws), (seed or 1) + 100)
  local want, oshape = conv_ref(x, xs, w, ws, attrs)
  local tol = dtype == "float32" and 1e-4 or 1e-10
  T.check_output{
    type = optype or "conv2d",
    inputs = { Input = T.tensor(x, { shape = xs, dtype = dtype }), Filter = T.tensor(w, { shape = ws, dtype = dtype }) },
    attrs = attrs, outputs = { Output = 1 },
    expect = { Output = { shape = oshape, data = want } }, atol = tol, rtol = tol,
  }
end

local function grad_case(xs, ws, attrs, wrt, no_grad, optype)
  T.check_grad{
    type = optype or "conv2d",
    inputs = { Input = T.tensor(rand_values(numel(xs), 7), { shape = xs }),
               Filter = T.tensor(rand_values(numel(ws), 8), { shape = ws }) },
    attrs = attrs, outputs = { Output = 1 }, wrt = wrt or { "Input", "Filter" }, of = { "Output" },
    no_grad = no_grad,
  }
end

local function err_of(fn)
  local ok, err = pcall(fn)
  assert.is_false(ok, "expected an error")
  return tostring(err)
end

describe("conv2d forward", function()
  it("matches a hand-computed 3x3 * 2x2 example", function()
    -- x = 1..9 in a 3x3 image; filter [[1, 0], [0, 1]] sums the diagonal pairs
    T.check_output{
      type = "conv2d",
      inputs = { Input = T.tensor({ 1, 2, 3, 4, 5, 6, 7, 8, 9 }, { shape = { 1, 1, 3, 3 } }),
                 Filter = T.tensor({ 1, 0, 0, 1 }, { shape = { 1, 1, 2, 2 } }) },
      outputs = { Output = 1 },
      expect = { Output = { shape = { 1, 1, 2, 2 }, data = { 1 + 5, 2 + 6, 4 + 8, 5 + 9 } } },
    }
  end)

  for _, dtype in ipairs({ "float64", "float32" }) do
    describe(dtype, function()
      it("plain, several images and channels", function()
        case({ 3, 2, 6, 5 }, { 4, 2, 3, 3 }, {}, dtype)
      end)
      it("strides and paddings", function()
        case({ 2, 3, 7, 6 }, { 2, 3, 3, 2 }, { strides = { 2, 1 }, paddings = { 1, 2 } }, dtype)
      end)
      it("asymmetric 4-value paddings", function()
        case({ 2, 1, 5, 5 }, { 2, 1, 3, 3 }, { paddings = { 0, 2, 1, 0 } }, dtype)
      end)
      it("dilations", function()
        case({ 2, 2, 8, 7 }, { 3, 2, 3, 2 }, { dilations = { 2, 3 }, paddings = { 1, 1 } }, dtype)
      end)
      it("groups", function()
        case({ 2, 4, 5, 5 }, { 6, 2, 3, 3 }, { groups = 2, paddings = { 1, 1 } }, dtype)
      end)
      it("1x1 convolution (no im2col)", function()
        case({ 3, 4, 3, 5 }, { 5, 4, 1, 1 }, {}, dtype)
      end)
      it("1x1 convolution with groups", function()
        case({ 2, 4, 3, 3 }, { 6, 2, 1, 1 }, { groups = 2 }, dtype)
      end)
      it("1x1 convolution with stride takes the im2col path", function()
        case({ 2, 3, 5, 5 }, { 2, 3, 1, 1 }, { strides = { 2, 2 } }, dtype)
      end)
      it("depthwise (direct loops) with a channel multiplier, strides, paddings, dilations", function()
        case({ 2, 4, 9, 8 }, { 8, 1, 3, 3 }, { groups = 4, strides = { 2, 1 }, paddings = { 1, 2 }, dilations = { 1, 2 } },
          dtype, 9, "depthwise_conv2d")
        case({ 2, 3, 7, 7 }, { 3, 1, 2, 3 }, { groups = 3, strides = { 1, 3 } }, dtype, 10)
      end)
      it("depthwise_conv2d", function()
        case({ 2, 3, 6, 6 }, { 6, 1, 3, 3 }, { groups = 3, paddings = { 1, 1 }, strides = { 2, 2 } }, dtype, 3,
          "depthwise_conv2d")
      end)
    end)
  end

  -- sizes here pass the kernel's threading threshold (2^18 multiply-adds)
  it("one large image (GEMM columns split across threads)", function()
    case({ 1, 8, 40, 40 }, { 4, 8, 3, 3 }, { paddings = { 1, 1 } }, "float32", 5)
    case({ 1, 16, 48, 48 }, { 16, 8, 3, 3 }, { groups = 2, strides = { 2, 2 } }, "float64", 6)
    case({ 1, 64, 24, 24 }, { 32, 64, 1, 1 }, {}, "float32", 7)
  end)

  it("a LeNet-sized batch (images split across threads)", function()
    case({ 16, 20, 12, 12 }, { 50, 20, 5, 5 }, {}, "float32", 8)
  end)

  it("padding_algorithm SAME pads to ceil(in / stride) (extra at the end) and drops dilations", function()
    local xs, ws = { 2, 2, 6, 7 }, { 3, 2, 3, 3 }
    local x, w = rand_values(numel(xs), 61), rand_values(numel(ws), 62)
    -- height: out 3, pad sum 2*2 + 3 - 6 = 1 -> {0, 1}; width: out 4, pad sum 3*2 + 3 - 7 = 2 -> {1, 1}
    local want, oshape = conv_ref(x, xs, w, ws, { strides = { 2, 2 }, paddings = { 0, 1, 1, 1 } })
    assert.same({ 2, 3, 3, 4 }, oshape)
    T.check_output{ type = "conv2d",
      inputs = { Input = T.tensor(x, { shape = xs }), Filter = T.tensor(w, { shape = ws }) },
      attrs = { strides = { 2, 2 }, paddings = { 5, 5 }, dilations = { 2, 2 }, padding_algorithm = "SAME" },
      outputs = { Output = 1 }, expect = { Output = { shape = oshape, data = want } }, atol = 1e-10 }
  end)

  it("padding_algorithm VALID ignores paddings", function()
    local xs, ws = { 1, 2, 6, 6 }, { 2, 2, 3, 2 }
    local x, w = rand_values(numel(xs), 63), rand_values(numel(ws), 64)
    local want, oshape = conv_ref(x, xs, w, ws, { dilations = { 1, 2 } })
    T.check_output{ type = "conv2d",
      inputs = { Input = T.tensor(x, { shape = xs }), Filter = T.tensor(w, { shape = ws }) },
      attrs = { paddings = { 2, 2 }, dilations = { 1, 2 }, padding_algorithm = "VALID" },
      outputs = { Output = 1 }, expect = { Output = { shape = oshape, data = want } }, atol = 1e-10 }
  end)

  it("handles an empty batch", function()
    local r = T.run{ type = "conv2d", outputs = { Output = 1 },
      inputs = { Input = T.tensor({}, { shape = { 0, 2, 5, 5 } }), Filter = T.tensor(rand_values(36), { shape = { 2, 2, 3, 3 } }) } }
    assert.same({ 0, 2, 3, 3 }, r.Output[1].shape)
  end)

  it("infers the output shape at compile time with an unknown batch", function()
    local ffi = require("ffi")
    local lib = require("oar.lib")
    local C = lib.C
    local pp = ffi.new("oar_program_t*[1]")
    assert(C.oar_program_new(pp) == 0)
    local prog = ffi.gc(pp[0], C.oar_program_free)
    local b = C.oar_program_block(prog, 0)
    local function decl(name, dims)
      local v = ffi.new("oar_var_desc_t*[1]")
      assert(C.oar_block_var_new(b, name, v) == 0)
      assert(C.oar_var_desc_set_shape(v[0], ffi.new("int64_t[4]", dims), 4) == 0)
      assert(C.oar_var_desc_set_dtype(v[0], 5) == 0)
    end
    decl("x", { -1, 3, 32, 30 })
    decl("w", { 8, 3, 5, 5 })
    T.append_op(b, "conv2d", { Input = { "x" }, Filter = { "w" } }, { Output = { "y" } },
      { strides = { 2, 2 }, paddings = { 2, 1 } })
    local y = C.oar_block_find_var(b, "y")
    assert.equals(4, C.oar_var_desc_ndim(y))
    local d = C.oar_var_desc_dims(y)
    -- (32 + 4 - 5) / 2 + 1 = 16, (30 + 2 - 5) / 2 + 1 = 14
    assert.same({ -1, 8, 16, 14 }, { tonumber(d[0]), tonumber(d[1]), tonumber(d[2]), tonumber(d[3]) })
  end)
end)

-- direct gradients of sum(Output * dy): dInput and dFilter by plain loops
local function conv_grad_ref(x, xs, w, ws, dy, a)
  a = a or {}
  local st, dl = a.strides or { 1, 1 }, a.dilations or { 1, 1 }
  local pd = pads4(a.paddings)
  local groups = a.groups or 1
  local N, C, H, W = xs[1], xs[2], xs[3], xs[4]
  local M, CG, KH, KW = ws[1], ws[2], ws[3], ws[4]
  local OH = math.floor((H + pd[1] + pd[2] - (dl[1] * (KH - 1) + 1)) / st[1]) + 1
  local OW = math.floor((W + pd[3] + pd[4] - (dl[2] * (KW - 1) + 1)) / st[2]) + 1
  local MG = M / groups
  local dx, dw = {}, {}
  for i = 1, numel(xs) do dx[i] = 0 end
  for i = 1, numel(ws) do dw[i] = 0 end
  for n = 0, N - 1 do
    for m = 0, M - 1 do
      local g = math.floor(m / MG)
      for oh = 0, OH - 1 do
        for ow = 0, OW - 1 do
          local d = dy[((n * M + m) * OH + oh) * OW + ow + 1]
          for c = 0, CG - 1 do
            for i = 0, KH - 1 do
              local ih = oh * st[1] - pd[1] + i * dl[1]
              if ih >= 0 and ih < H then
                for j = 0, KW - 1 do
                  local iw = ow * st[2] - pd[3] + j * dl[2]
                  if iw >= 0 and iw < W then
                    local xi = ((n * C + g * CG + c) * H + ih) * W + iw + 1
                    local wi = ((m * CG + c) * KH + i) * KW + j + 1
                    dw[wi] = dw[wi] + d * x[xi]
                    dx[xi] = dx[xi] + d * w[wi]
                  end
                end
              end
            end
          end
        end
      end
    end
  end
  return dx, dw, { N, M, OH, OW }
end

local function grad_ref_case(xs, ws, attrs, dtype, seed)
  local x = rand_values(numel(xs), seed)
  local w = rand_values(numel(ws), seed + 1)
  local _, oshape = conv_ref(x, xs, w, ws, attrs)
  local dy = rand_values(numel(oshape), seed + 2)
  local dx, dw = conv_grad_ref(x, xs, w, ws, dy, attrs)
  local r = T.run{ type = "conv2d_grad", attrs = attrs,
    inputs = { Input = T.tensor(x, { shape = xs, dtype = dtype }), Filter = T.tensor(w, { shape = ws, dtype = dtype }),
               ["Output@GRAD"] = T.tensor(dy, { shape = oshape, dtype = dtype }) },
    outputs = { ["Input@GRAD"] = 1, ["Filter@GRAD"] = 1 } }
  local tol = dtype == "float32" and 2e-4 or 1e-10
  T.assert_close(r["Input@GRAD"][1], { shape = xs, data = dx }, tol, tol, "Input@GRAD")
  T.assert_close(r["Filter@GRAD"][1], { shape = ws, data = dw }, tol, tol, "Filter@GRAD")
end

describe("conv2d_grad against direct loops", function()
  it("a batch split across threads (per-thread Filter@GRAD sums)", function()
    grad_ref_case({ 9, 6, 10, 10 }, { 8, 6, 3, 3 }, { paddings = { 1, 1 } }, "float64", 20)
    grad_ref_case({ 9, 6, 10, 10 }, { 8, 6, 3, 3 }, { paddings = { 1, 1 } }, "float32", 20)
  end)
  it("gives bit-identical Filter@GRAD with 1 and 2 threads", function()
    local C = require("oar.lib").C
    local xs, ws = { 20, 6, 10, 10 }, { 8, 6, 3, 3 }
    local x, w = rand_values(numel(xs), 70), rand_values(numel(ws), 71)
    local _, oshape = conv_ref(x, xs, w, ws, {})
    local dy = rand_values(numel(oshape), 72)
    local function grads()
      return T.run{ type = "conv2d_grad",
        inputs = { Input = T.tensor(x, { shape = xs, dtype = "float32" }), Filter = T.tensor(w, { shape = ws, dtype = "float32" }),
                   ["Output@GRAD"] = T.tensor(dy, { shape = oshape, dtype = "float32" }) },
        outputs = { ["Input@GRAD"] = 1, ["Filter@GRAD"] = 1 } }
    end
    local before = tonumber(C.oar_get_flag("num_threads"))
    assert.equals(0, C.oar_set_flag("num_threads", 1))
    local ok1, r1 = pcall(grads)
    C.oar_set_flag("num_threads", 2)
    local ok2, r2 = pcall(grads)
    C.oar_set_flag("num_threads", before)
    assert(ok1, r1)
    assert(ok2, r2)
    assert.same_array(r1["Filter@GRAD"][1].data, r2["Filter@GRAD"][1].data, "Filter@GRAD")
    assert.same_array(r1["Input@GRAD"][1].data, r2["Input@GRAD"][1].data, "Input@GRAD")
  end)
  it("one large image (columns split across threads)", function()
    grad_ref_case({ 1, 16, 40, 40 }, { 12, 8, 3, 3 }, { groups = 2, strides = { 1, 2 }, dilations = { 2, 1 } }, "float64", 30)
  end)
  it("depthwise (direct loops), threaded", function()
    grad_ref_case({ 4, 16, 20, 20 }, { 32, 1, 3, 3 }, { groups = 16, paddings = { 1, 1 } }, "float64", 50)
    grad_ref_case({ 4, 16, 20, 20 }, { 32, 1, 3, 3 }, { groups = 16, strides = { 2, 2 }, dilations = { 2, 1 } },
      "float32", 51)
  end)
  it("1x1 with groups, threaded", function()
    grad_ref_case({ 4, 32, 16, 16 }, { 16, 16, 1, 1 }, { groups = 2 }, "float64", 40)
    grad_ref_case({ 1, 32, 24, 24 }, { 16, 32, 1, 1 }, {}, "float64", 41)
  end)
end)

describe("conv2d gradients", function()
  it("plain", function() grad_case({ 2, 2, 4, 4 }, { 3, 2, 2, 2 }, {}) end)
  it("strides, paddings, dilations", function()
    grad_case({ 1, 2, 6, 5 }, { 2, 2, 3, 2 }, { strides = { 2, 1 }, paddings = { 1, 2 }, dilations = { 1, 2 } })
  end)
  it("groups", function() grad_case({ 1, 4, 4, 4 }, { 4, 2, 2, 2 }, { groups = 2, paddings = { 1, 0 } }) end)
  it("1x1", function() grad_case({ 2, 3, 3, 2 }, { 2, 3, 1, 1 }, {}) end)
  it("Filter only (Input in no_grad)", function()
    grad_case({ 2, 2, 4, 3 }, { 2, 2, 2, 2 }, { paddings = { 1, 1 } }, { "Filter" }, { "Input" })
  end)
  it("Input only (Filter in no_grad)", function()
    grad_case({ 2, 2, 4, 3 }, { 2, 2, 2, 2 }, { strides = { 2, 2 } }, { "Input" }, { "Filter" })
  end)
  it("depthwise with a multiplier, strides and dilations", function()
    grad_case({ 1, 2, 5, 6 }, { 4, 1, 2, 3 }, { groups = 2, strides = { 2, 1 }, dilations = { 1, 2 }, paddings = { 1, 1 } },
      nil, nil, "depthwise_conv2d")
  end)
  it("depthwise_conv2d", function()
    grad_case({ 1, 2, 4, 4 }, { 2, 1, 3, 3 }, { groups = 2, paddings = { 1, 1 } }, nil, nil, "depthwise_conv2d")
  end)

  it("conv2d_grad run directly matches hand-derived sums", function()
    -- 1 image 1x3x3, filter 1x1x2x2 of ones, dOut all ones (2x2):
    -- dFilter[i][j] = sum of the 2x2 input window shifted by (i, j); dInput = how many
    -- output windows cover each pixel
    local x = { 1, 2, 3, 4, 5, 6, 7, 8, 9 }
    local res = T.run{
      type = "conv2d_grad",
      inputs = { Input = T.tensor(x, { shape = { 1, 1, 3, 3 } }), Filter = T.tensor({ 1, 1, 1, 1 }, { shape = { 1, 1, 2, 2 } }),
                 ["Output@GRAD"] = T.tensor({ 1, 1, 1, 1 }, { shape = { 1, 1, 2, 2 } }) },
      outputs = { ["Input@GRAD"] = 1, ["Filter@GRAD"] = 1 },
    }
    T.assert_close(res["Filter@GRAD"][1], { shape = { 1, 1, 2, 2 }, data = { 1 + 2 + 4 + 5, 2 + 3 + 5 + 6, 4 + 5 + 7 + 8, 5 + 6 + 8 + 9 } })
    T.assert_close(res["Input@GRAD"][1], { shape = { 1, 1, 3, 3 }, data = { 1, 2, 1, 2, 4, 2, 1, 2, 1 } })
  end)
end)

describe("conv2d errors", function()
  local function run(xs, ws, attrs, xdt, wdt)
    return T.run{
      type = "conv2d",
      inputs = { Input = T.tensor(rand_values(numel(xs)), { shape = xs, dtype = xdt }),
                 Filter = T.tensor(rand_values(numel(ws)), { shape = ws, dtype = wdt }) },
      attrs = attrs, outputs = { Output = 1 },
    }
  end
  it("rejects a channel mismatch, naming both vars and shapes", function()
    local e = err_of(function() run({ 1, 3, 5, 5 }, { 2, 2, 3, 3 }) end)
    assert.truthy(e:find("conv2d", 1, true))
    assert.truthy(e:find("in_Input_1", 1, true))
    assert.truthy(e:find("[1, 3, 5, 5]", 1, true))
    assert.truthy(e:find("[2, 2, 3, 3]", 1, true))
  end)
  it("rejects a non-positive output size, printing input, filter and attrs", function()
    local e = err_of(function() run({ 1, 1, 3, 3 }, { 1, 1, 3, 3 }, { dilations = { 2, 2 } }) end)
    assert.truthy(e:find("[1, 1, 3, 3]", 1, true))
    assert.truthy(e:find("dilations {2, 2}", 1, true))
    assert.truthy(e:find("strides {1, 1}", 1, true))
    assert.truthy(e:find("paddings {0, 0, 0, 0}", 1, true))
  end)
  it("rejects an unknown padding_algorithm", function()
    local e = err_of(function() run({ 1, 1, 3, 3 }, { 1, 1, 2, 2 }, { padding_algorithm = "FULL" }) end)
    assert.truthy(e:find("padding_algorithm", 1, true) and e:find("FULL", 1, true))
  end)
  it("rejects an unknown data_format (NHWC is spec/ops_conv_nhwc_spec.lua)", function()
    local e = err_of(function() run({ 1, 1, 3, 3 }, { 1, 1, 2, 2 }, { data_format = "NCDHW" }) end)
    assert.truthy(e:find("NCDHW", 1, true))
  end)
  it("rejects output channels not divisible by groups", function()
    local e = err_of(function() run({ 1, 4, 3, 3 }, { 3, 2, 2, 2 }, { groups = 2 }) end)
    assert.truthy(e:find("divisible by groups", 1, true))
  end)
  it("rejects mismatched dtypes", function()
    local e = err_of(function() run({ 1, 1, 3, 3 }, { 1, 1, 2, 2 }, {}, "float32", "float64") end)
    assert.truthy(e:find("float32", 1, true) and e:find("float64", 1, true))
  end)
  it("rejects a 3-D input", function()
    local e = err_of(function()
      T.run{ type = "conv2d", outputs = { Output = 1 },
        inputs = { Input = T.tensor(rand_values(9), { shape = { 1, 3, 3 } }),
                   Filter = T.tensor(rand_values(4), { shape = { 1, 1, 2, 2 } }) } }
    end)
    assert.truthy(e:find("4-D", 1, true))
  end)
  it("rejects strides of the wrong length and zero strides", function()
    assert.truthy(err_of(function() run({ 1, 1, 3, 3 }, { 1, 1, 2, 2 }, { strides = { 1 } }) end):find("strides", 1, true))
    assert.truthy(err_of(function() run({ 1, 1, 3, 3 }, { 1, 1, 2, 2 }, { strides = { 0, 1 } }) end):find("strides", 1, true))
  end)
  it("rejects a Output@GRAD of the wrong shape at run time", function()
    local e = err_of(function()
      T.run{
        type = "conv2d_grad",
        inputs = { Input = T.tensor(rand_values(9), { shape = { 1, 1, 3, 3 } }),
                   Filter = T.tensor(rand_values(4), { shape = { 1, 1, 2, 2 } }),
                   ["Output@GRAD"] = T.tensor(rand_values(9), { shape = { 1, 1, 3, 3 } }) },
        outputs = { ["Input@GRAD"] = 1 },
      }
    end)
    assert.truthy(e:find("Output@GRAD", 1, true))
    assert.truthy(e:find("[1, 1, 2, 2]", 1, true))
  end)
end)
