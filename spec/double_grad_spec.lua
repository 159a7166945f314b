-- Second-order gradients (issue 22): oar.gradients of a gradient runs the
-- double-grad ops (src/ops/double_grad.ops) the grad makers of first-order
-- grad ops emit. Each op type's second-order gradients are checked against
-- float64 central finite differences of its first-order gradient: for
-- dX = gradients(out, wrt, dOut) and directions V, the gradients of
-- sum(V * dX) with respect to every input and to dOut. Then a gradient
-- penalty trains, and a path through an op without a grad maker is an error
-- naming the op.
local oar = require("oar")
local layers = oar.layers

local EPS, TOL = 1e-6, 1e-5

-- a deterministic pseudo-random value in [lo, hi]
local seed = 7
local function rnd(lo, hi)
  seed = (seed * 1103515245 + 12345) % 2147483648
  return lo + (hi - lo) * seed / 2147483648
end

local function numel(shape)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  return n
end

-- flat data -> nested table of `shape`
local function nest(flat, shape)
  local function rec(dim, off)
    if dim > #shape then return flat[off + 1], off + 1 end
    local t = {}
    for i = 1, shape[dim] do t[i], off = rec(dim + 1, off) end
    return t, off
  end
  return (rec(1, 0))
end

local flatten = require("spec.helpers.index").flatten

local function data(name, shape)
  local v = layers.data{ name = name, shape = shape, dtype = "float64", append_batch_size = false }
  v.stop_gradient = false
  return v
end

-- case: { inputs = { name = { shape, lo, hi } ... }, order = {names}, wrt = {names},
--         forward = function(vars) return out end }
local function check_second_order(case)
  local main, startup = oar.Program(), oar.Program()
  local vars, firsts, seconds, dirs, dout_shape = {}, nil, nil, {}, nil
  oar.program_guard(main, startup, function()
    for _, n in ipairs(case.order) do vars[n] = data(n, case.inputs[n][1]) end
    local out = case.forward(vars)
    dout_shape = out.shape
    vars.dout = data("dout", dout_shape)
    local wrt = {}
    for i, n in ipairs(case.wrt) do
      wrt[i] = vars[n]
      dirs[i] = layers.data{ name = "dir_" .. n, shape = case.inputs[n][1], dtype = "float64",
                             append_batch_size = false }
    end
    firsts = oar.gradients({ out }, wrt, { vars.dout })
    local all = {}
    for i, n in ipairs(case.order) do all[i] = vars[n] end
    all[#all + 1] = vars.dout
    seconds = oar.gradients(firsts, all, dirs)
  end)
  -- feeds
  local feed, flat = {}, {}
  local function set(name, shape, lo, hi)
    flat[name] = {}
    for i = 1, numel(shape) do flat[name][i] = rnd(lo, hi) end
  end
  for _, n in ipairs(case.order) do set(n, case.inputs[n][1], case.inputs[n][2], case.inputs[n][3]) end
  set("dout", dout_shape, -1, 1)
  for _, n in ipairs(case.wrt) do set("dir_" .. n, case.inputs[n][1], -1, 1) end
  local shapes = { dout = dout_shape }
  for _, n in ipairs(case.order) do shapes[n] = case.inputs[n][1]; shapes["dir_" .. n] = case.inputs[n][1] end
  local function make_feed()
    for name, f in pairs(flat) do feed[name] = nest(f, shapes[name]) end
    return feed
  end
  local exe, scope = oar.Executor(oar.CPUPlace()), oar.Scope()
  exe:run(startup, { scope = scope })
  -- f = sum over wrt of dir . first
  local function f()
    local out = exe:run(main, { feed = make_feed(), fetch_list = firsts, scope = scope })
    local s = 0
    for i, n in ipairs(case.wrt) do
      local g = flatten(out[i]:totable())
      for j, v in ipairs(g) do s = s + v * flat["dir_" .. n][j] end
    end
    return s
  end
  local fetch, names = {}, {}
  for i, n in ipairs(case.order) do names[i] = n end
  names[#names + 1] = "dout"
  local present = 0
  for i = 1, #names do
    if seconds[i] then fetch[#fetch + 1] = seconds[i]; present = present + 1 end
  end
  assert.is_true(present > 0, "no second-order gradient at all")
  local got = exe:run(main, { feed = make_feed(), fetch_list = fetch, scope = scope })
  local k = 0
  for i, n in ipairs(names) do
    local analytic
    if seconds[i] then k = k + 1; analytic = flatten(got[k]:totable()) end
    for j = 1, #flat[n] do
      local keep = flat[n][j]
      flat[n][j] = keep + EPS
      local fp = f()
      flat[n][j] = keep - EPS
      local fm = f()
      flat[n][j] = keep
      local fd = (fp - fm) / (2 * EPS)
      local a = analytic and analytic[j] or 0
      assert(math.abs(a - fd) <= TOL * math.max(1, math.abs(fd)),
        string.format("%s: d/d%s[%d]: analytic %.10g, finite difference %.10g", case.name, n, j, a, fd))
    end
  end
  return main
end

local function types_in(prog)
  local t = {}
  for _, op in ipairs(prog:global_block():ops()) do t[op.type] = (t[op.type] or 0) + 1 end
  return t
end

local function unary(name, make, lo, hi, shape)
  return { name = name, inputs = { x = { shape or { 2, 3 }, lo, hi } }, order = { "x" }, wrt = { "x" },
           forward = function(v) return make(v.x) end }
end

local CASES = {
  unary("relu", layers.relu, -2, 2),
  unary("leaky_relu", function(x) return layers.leaky_relu(x, 0.1) end, -2, 2),
  unary("elu", function(x) return layers.elu(x, 0.7) end, -2, 2),
  unary("sqrt", layers.sqrt, 0.5, 2),
  unary("square", layers.square, -2, 2),
  { name = "mul", inputs = { x = { { 2, 3 }, -1, 1 }, y = { { 3, 2 }, -1, 1 } }, order = { "x", "y" },
    wrt = { "x", "y" }, forward = function(v) return layers.mul(v.x, v.y) end },
  { name = "mul (num_col_dims 2)", inputs = { x = { { 2, 2, 3 }, -1, 1 }, y = { { 3, 2 }, -1, 1 } },
    order = { "x", "y" }, wrt = { "x", "y" },
    forward = function(v) return layers.mul{ x = v.x, y = v.y, x_num_col_dims = 2 } end },
}
for _, e in ipairs({ "add", "sub", "mul", "div" }) do
  local lo = e == "div" and 0.5 or -1
  CASES[#CASES + 1] = { name = "elementwise_" .. e, inputs = { x = { { 2, 3 }, -1, 1 }, y = { { 2, 3 }, lo, 2 } },
    order = { "x", "y" }, wrt = { "x", "y" },
    forward = function(v) return layers["elementwise_" .. e]{ x = v.x, y = v.y } end }
  CASES[#CASES + 1] = { name = "elementwise_" .. e .. " (broadcast Y at axis 1)",
    inputs = { x = { { 2, 3, 2 }, -1, 1 }, y = { { 3 }, lo, 2 } }, order = { "x", "y" }, wrt = { "x", "y" },
    forward = function(v) return layers["elementwise_" .. e]{ x = v.x, y = v.y, axis = 1 } end }
end
-- conv2d with the filter as an input (not a parameter) so it is differentiated too
local function conv_case(name, xs, ws, attrs, out_shape, op_type)
  return { name = name, inputs = { x = { xs, -1, 1 }, w = { ws, -1, 1 } }, order = { "x", "w" }, wrt = { "x", "w" },
    forward = function(v)
      local b = v.x.block
      local out = b:create_var{ name = "conv_out", dtype = "float64", shape = out_shape }
      b:append_op{ type = op_type or "conv2d", inputs = { Input = { v.x }, Filter = { v.w } }, outputs = { Output = { out } },
                   attrs = attrs }
      return out
    end }
end
CASES[#CASES + 1] = conv_case("conv2d", { 1, 2, 3, 3 }, { 2, 2, 2, 2 },
  { strides = { 2, 2 }, paddings = { 1, 1 }, dilations = { 1, 1 }, groups = 1 }, { 1, 2, 2, 2 })
CASES[#CASES + 1] = conv_case("conv2d (groups 2, dilation 2)", { 1, 4, 4, 4 }, { 2, 2, 2, 2 },
  { strides = { 1, 1 }, paddings = { 0, 0 }, dilations = { 2, 2 }, groups = 2 }, { 1, 2, 2, 2 })
CASES[#CASES + 1] = conv_case("conv2d (NHWC)", { 1, 3, 3, 2 }, { 2, 2, 2, 2 },
  { strides = { 1, 1 }, paddings = { 1, 1 }, dilations = { 1, 1 }, groups = 1, data_format = "NHWC" }, { 1, 4, 4, 2 })
-- conv3d (its grad op is conv3d_grad; the double grad shares conv2d's kernel)
CASES[#CASES + 1] = conv_case("conv3d", { 1, 2, 3, 3, 3 }, { 2, 2, 2, 2, 2 },
  { strides = { 2, 2, 2 }, paddings = { 1, 1, 1 }, dilations = { 1, 1, 1 }, groups = 1 }, { 1, 2, 2, 2, 2 }, "conv3d")
CASES[#CASES + 1] = conv_case("conv3d (groups 2, dilations, asymmetric strides and paddings)", { 1, 4, 4, 3, 4 },
  { 2, 2, 2, 2, 1 },
  { strides = { 1, 2, 1 }, paddings = { 1, 0, 0, 1, 0, 0 }, dilations = { 2, 1, 1 }, groups = 2 },
  { 1, 2, 3, 2, 4 }, "conv3d")
CASES[#CASES + 1] = conv_case("conv3d (NDHWC)", { 1, 2, 3, 2, 2 }, { 3, 2, 2, 1, 2 },
  { strides = { 1, 1, 1 }, paddings = { 0, 1, 1 }, dilations = { 1, 1, 1 }, groups = 1, data_format = "NDHWC" },
  { 1, 1, 5, 3, 3 }, "conv3d")
CASES[#CASES + 1] = conv_case("conv3d (SAME padding)", { 1, 1, 3, 3, 3 }, { 2, 1, 2, 2, 2 },
  { strides = { 2, 2, 2 }, padding_algorithm = "SAME", groups = 1 }, { 1, 2, 2, 2, 2 }, "conv3d")
CASES[#CASES + 1] = { name = "instance_norm",
  inputs = { x = { { 2, 2, 2, 2 }, -1, 1 }, scale = { { 2 }, 0.5, 1.5 }, bias = { { 2 }, -1, 1 } },
  order = { "x", "scale", "bias" }, wrt = { "x", "scale", "bias" }, forward = function(v)
    local b = v.x.block
    local y = b:create_var{ name = "in_y", dtype = "float64", shape = { 2, 2, 2, 2 } }
    local m = b:create_var{ name = "in_mean", dtype = "float64", shape = { 4 } }
    local s = b:create_var{ name = "in_var", dtype = "float64", shape = { 4 } }
    b:append_op{ type = "instance_norm", inputs = { X = { v.x }, Scale = { v.scale }, Bias = { v.bias } },
                 outputs = { Y = { y }, SavedMean = { m }, SavedVariance = { s } }, attrs = { epsilon = 1e-5 } }
    return y
  end }
-- the linear grads: their double grad is the forward op again (Fluid's)
CASES[#CASES + 1] = { name = "reshape2", inputs = { x = { { 2, 3 }, -1, 1 }, w = { { 3, 2 }, -1, 1 } },
  order = { "x", "w" }, wrt = { "x" }, forward = function(v)
    local b = v.x.block
    local out = b:create_var{ name = "r_out", dtype = "float64", shape = { 3, 2 } }
    local xs = b:create_var{ name = "r_xshape", dtype = "float64", shape = { 0, 2, 3 } }
    b:append_op{ type = "reshape2", inputs = { X = { v.x } }, outputs = { Out = { out }, XShape = { xs } },
                 attrs = { shape = { 3, 2 } } }
    return layers.elementwise_mul{ x = layers.square(out), y = v.w }
  end }
CASES[#CASES + 1] = { name = "expand", inputs = { x = { { 2, 1 }, -1, 1 }, w = { { 2, 3 }, -1, 1 } },
  order = { "x", "w" }, wrt = { "x" },
  forward = function(v) return layers.elementwise_mul{ x = layers.square(layers.expand(v.x, { 1, 3 })), y = v.w } end }
CASES[#CASES + 1] = { name = "reduce_mean", inputs = { x = { { 2, 3 }, -1, 1 } }, order = { "x" }, wrt = { "x" },
  forward = function(v) return layers.square(layers.reduce_mean{ input = layers.square(v.x), dim = { 1 } }) end }
CASES[#CASES + 1] = { name = "mean", inputs = { x = { { 2, 3 }, -1, 1 } }, order = { "x" }, wrt = { "x" },
  forward = function(v) return layers.square(layers.mean(layers.square(v.x))) end }

describe("second-order gradients", function()
  for _, case in ipairs(CASES) do
    it(case.name .. " against finite differences of the first-order gradient", function()
      local prog = check_second_order(case)
      local want, count = (case.name:match("^[%w_]+")) .. "_grad_grad", 1
      if case.name == "expand" or case.name == "reduce_mean" or case.name == "mean" then
        want, count = case.name, 2   -- the forward op again differentiates its grad (Fluid's)
      end
      assert.is_true((types_in(prog)[want] or 0) >= count, want .. " not in the program")
    end)
  end
end)

-- loss(W) = mean((x W)^2) + lam * mean((d loss0 / dx)^2): a gradient penalty
local X = { { 0.5, -1 }, { 1.5, 0.25 }, { -0.75, 2 } }
local W0 = { { 0.3, -0.6 }, { 0.9, 0.2 } }
local LAM = 0.5
local function penalized(x, w)
  local h = layers.mul(x, w)
  local loss0 = layers.mean(layers.elementwise_mul{ x = h, y = h })
  local dx = oar.gradients({ loss0 }, { x })[1]
  local penalty = layers.mean(layers.square(dx))
  return layers.elementwise_add{ x = loss0, y = layers.scale{ x = penalty, scale = LAM } }
end

describe("a gradient penalty", function()
  it("has the gradient finite differences give, and one SGD step moves W by it", function()
    -- program A: W fed, its gradient by oar.gradients and by finite differences
    local main, startup = oar.Program(), oar.Program()
    local total, gw
    oar.program_guard(main, startup, function()
      local x = data("x", { 3, 2 })
      local w = data("w", { 2, 2 })
      total = penalized(x, w)
      gw = oar.gradients({ total }, { w })[1]
    end)
    assert.is_truthy(gw)
    local exe, scope = oar.Executor(oar.CPUPlace()), oar.Scope()
    exe:run(startup, { scope = scope })
    local function run(wv, fetch) return exe:run(main, { feed = { x = X, w = wv }, fetch_list = fetch, scope = scope }) end
    local g = run(W0, { gw })[1]:totable()
    for i = 1, 2 do
      for j = 1, 2 do
        local wp, wm = { { W0[1][1], W0[1][2] }, { W0[2][1], W0[2][2] } }, { { W0[1][1], W0[1][2] }, { W0[2][1], W0[2][2] } }
        wp[i][j], wm[i][j] = W0[i][j] + EPS, W0[i][j] - EPS
        local fd = (run(wp, { total })[1]:totable()[1] - run(wm, { total })[1]:totable()[1]) / (2 * EPS)
        assert(math.abs(fd - g[i][j]) < TOL, string.format("dW[%d][%d]: %.10g vs finite difference %.10g", i, j,
          g[i][j], fd))
      end
    end
    -- the penalty's own contribution is not zero (else the test proves little)
    local plain = 0
    for _ = 1, 1 do
      local m2, s2 = oar.Program(), oar.Program()
      local gp
      oar.program_guard(m2, s2, function()
        local x, w = data("x", { 3, 2 }), data("w", { 2, 2 })
        local h = layers.mul(x, w)
        gp = oar.gradients({ layers.mean(layers.elementwise_mul{ x = h, y = h }) }, { w })[1]
      end)
      plain = exe:run(m2, { feed = { x = X, w = W0 }, fetch_list = { gp }, scope = oar.Scope() })[1]:totable()
    end
    assert.is_true(math.abs(plain[1][1] - g[1][1]) > 1e-3)

    -- program B: W a parameter trained by SGD on the same loss
    local m3, s3 = oar.Program(), oar.Program()
    local wparam
    oar.program_guard(m3, s3, function()
      local x = data("x", { 3, 2 })
      x.stop_gradient = true
      wparam = layers.create_parameter{ shape = { 2, 2 }, dtype = "float64", name = "W" }
      oar.optimizer.SGD{ learning_rate = 0.1 }:minimize(penalized(x, wparam))
    end)
    local types = {}
    for _, op in ipairs(m3:global_block():ops()) do types[op.type] = true end
    assert.is_true(types.mul_grad_grad and types.elementwise_mul_grad_grad and true or false)
    local sc = oar.Scope()
    exe:run(s3, { scope = sc })
    sc:var("W"):set_tensor(oar.Tensor(W0, "float64"))
    exe:run(m3, { feed = { x = X }, scope = sc })
    local w1 = sc:var("W"):get_tensor():totable()
    for i = 1, 2 do
      for j = 1, 2 do
        assert(math.abs(w1[i][j] - (W0[i][j] - 0.1 * g[i][j])) < 1e-7, "W after one step")   -- lr is float32
      end
    end
  end)
end)

-- conv3d's float32 double grad against its float64 one: d2/dx2 and d2/dw dx of
-- sum(square(d sum(conv3d(x, w)^2) / dx)), groups 2, strides, paddings, dilations
describe("conv3d's double grad in float32", function()
  local function run(dtype)
    local main, startup = oar.Program(), oar.Program()
    local gx, gw
    oar.program_guard(main, startup, function()
      local x = layers.data{ name = "x", shape = { 1, 4, 4, 3, 4 }, dtype = dtype, append_batch_size = false }
      local w = layers.data{ name = "w", shape = { 4, 2, 2, 2, 1 }, dtype = dtype, append_batch_size = false }
      x.stop_gradient, w.stop_gradient = false, false
      local b = x.block
      local out = b:create_var{ name = "c3_out", dtype = dtype, shape = { 1, 4, 3, 2, 4 } }
      b:append_op{ type = "conv3d", inputs = { Input = { x }, Filter = { w } }, outputs = { Output = { out } },
                   attrs = { strides = { 1, 2, 1 }, paddings = { 1, 0, 0, 1, 0, 0 }, dilations = { 2, 1, 1 },
                             groups = 2 } }
      local dx = oar.gradients({ layers.reduce_sum{ input = layers.square(out) } }, { x })[1]
      local g = oar.gradients({ layers.reduce_sum{ input = layers.square(dx) } }, { x, w })
      gx, gw = g[1], g[2]
    end)
    local types = types_in(main)
    assert.is_true((types.conv3d_grad_grad or 0) >= 1, "conv3d_grad_grad not in the program")
    seed = 11
    local xf, wf = {}, {}
    for i = 1, 192 do xf[i] = rnd(-1, 1) end
    for i = 1, 32 do wf[i] = rnd(-1, 1) end
    local exe = oar.Executor(oar.CPUPlace())
    local got = exe:run(main, { feed = { x = oar.Tensor(nest(xf, { 1, 4, 4, 3, 4 }), dtype),
                                         w = oar.Tensor(nest(wf, { 4, 2, 2, 2, 1 }), dtype) },
                                fetch_list = { gx, gw }, scope = oar.Scope() })
    return flatten(got[1]:totable()), flatten(got[2]:totable())
  end
  it("matches the float64 kernel's to float32 precision", function()
    local x32, w32 = run("float32")
    local x64, w64 = run("float64")
    assert.are.equal(#x64, #x32)
    assert.are.equal(#w64, #w32)
    local big = 0
    for i, v in ipairs(x64) do
      big = math.max(big, math.abs(v))
      assert(math.abs(x32[i] - v) <= 1e-4 * math.max(1, math.abs(v)), "d2/dx2 " .. i)
    end
    for i, v in ipairs(w64) do assert(math.abs(w32[i] - v) <= 1e-4 * math.max(1, math.abs(v)), "d2/dwdx " .. i) end
    assert.is_true(big > 1e-2, "the second-order gradient is not all zeros")
  end)
end)

describe("conv3d_grad_grad's inference", function()
  it("refuses a DDInput whose shape is not Input's, and a DOutput not shaped as the output", function()
    local main = oar.Program()
    local b = main:global_block()
    local function var(name, shape) return b:create_var{ name = name, dtype = "float64", shape = shape } end
    local x, w = var("x", { 1, 2, 3, 3, 3 }), var("w", { 2, 2, 2, 2, 2 })
    local dy, ddy = var("dy", { 1, 2, 2, 2, 2 }), var("ddy", { 1, 2, 2, 2, 2 })
    local attrs = { strides = { 1, 1, 1 }, paddings = { 0, 0, 0 }, dilations = { 1, 1, 1 }, groups = 1 }
    local ok, err = pcall(function()
      b:append_op{ type = "conv3d_grad_grad", inputs = { Input = { x }, Filter = { w }, DOutput = { dy },
                   DDInput = { var("bad_ddx", { 1, 2, 3, 3, 2 }) } }, outputs = { DDOutput = { ddy } }, attrs = attrs }
    end)
    assert.is_false(ok)
    assert.matches("DDInput", tostring(err), 1, true)
    ok, err = pcall(function()
      b:append_op{ type = "conv3d_grad_grad", inputs = { Input = { x }, Filter = { w }, DOutput = { var("bad_dy",
                   { 1, 2, 3, 2, 2 }) }, DDInput = { var("ddx", { 1, 2, 3, 3, 3 }) } },
                   outputs = { DDOutput = { ddy } }, attrs = attrs }
    end)
    assert.is_false(ok)
    assert.matches("DOutput", tostring(err), 1, true)
    -- the well-formed op is accepted, DDOutput shaped as DOutput
    b:append_op{ type = "conv3d_grad_grad", inputs = { Input = { x }, Filter = { w }, DOutput = { dy },
                 DDInput = { b:var("ddx") } }, outputs = { DDOutput = { ddy }, DFilter = { var("dw2", {}) } },
                 attrs = attrs }
    local sh = b:var("dw2").shape
    assert.are.same({ 2, 2, 2, 2, 2 }, { sh[1], sh[2], sh[3], sh[4], sh[5] })
  end)
end)

describe("oar.gradients(oar.gradients(y, x), x)", function()
  it("gives the second derivative of a sum of cubes: 6 x", function()
    local main, startup = oar.Program(), oar.Program()
    local g2
    oar.program_guard(main, startup, function()
      local x = data("x", { 2, 3 })
      local y = layers.reduce_sum{ input = layers.elementwise_mul{ x = layers.square(x), y = x } }
      g2 = oar.gradients(oar.gradients(y, x), x)[1]
    end)
    local xv = { { 0.5, -1, 2 }, { 1.5, -0.25, 3 } }
    local exe = oar.Executor(oar.CPUPlace())
    local got = exe:run(main, { feed = { x = xv }, fetch_list = { g2 }, scope = oar.Scope() })[1]:totable()
    for i = 1, 2 do
      for j = 1, 3 do assert(math.abs(got[i][j] - 6 * xv[i][j]) < 1e-9, "d2y/dx2 = 6x") end
    end
  end)
end)

describe("a gradient that cannot be taken", function()
  it("is an error naming the op without a grad maker, not a nil", function()
    local main, startup = oar.Program(), oar.Program()
    oar.program_guard(main, startup, function()
      local x = data("x", { 2, 3 })
      local y = layers.tanh(x)   -- tanh_grad has no double-grad op
      local dx = oar.gradients({ layers.mean(y) }, { x })[1]
      local ok, err = pcall(oar.gradients, { dx }, { x })
      assert.is_false(ok)
      assert.matches("tanh_grad", tostring(err), 1, true)
      -- the program is left as it was: a later gradient still works
      assert.is_truthy(oar.gradients({ layers.mean(y) }, { x })[1])
    end)
  end)

  it("still gives nil where no path leads from the target", function()
    local main, startup = oar.Program(), oar.Program()
    oar.program_guard(main, startup, function()
      local x, z = data("x", { 2, 3 }), data("z", { 2, 3 })
      local g = oar.gradients({ layers.mean(layers.square(x)) }, { x, z })
      assert.is_truthy(g[1])
      assert.is_nil(g[2])
    end)
  end)
end)
