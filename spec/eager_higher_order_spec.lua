-- Eager higher-order gradients (issue 24, docs/eager.md, "Higher-order
-- gradients"): oar.autograd.grad and backward{create_graph = true} record
-- the grad ops they run, so a gradient is differentiated again through the
-- double-grad ops. Second derivatives of each supported op are checked
-- against float64 central differences of the eagerly computed first
-- derivative; the eager gradient-penalty step equals the static one
-- (spec/double_grad_spec.lua) bit for bit; an op without a double-grad maker
-- is an error naming it; and create_graph = false records nothing.
local oar = require("oar")
local eager = oar.eager

local EPS, TOL = 1e-6, 1e-6

-- a deterministic pseudo-random value in [lo, hi]
local seed = 11
local function rnd(lo, hi)
  seed = (seed * 1103515245 + 12345) % 2147483648
  return lo + (hi - lo) * seed / 2147483648
end

local function numel(shape)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  return n
end

local function flat(t) return t:reshape({ -1 }):totable() end

-- a float64 tensor of `shape` from flat values
local function tensor(values, shape) return oar.Tensor(values, "float64"):reshape(shape) end

local function random(shape, lo, hi)
  local v = {}
  for i = 1, numel(shape) do v[i] = rnd(lo, hi) end
  return v
end

-- the op types on the tape t depends on
local function tape_types(t)
  local types, seen, stack = {}, {}, { t }
  while #stack > 0 do
    local node = rawget(table.remove(stack), "_node")
    if node and not seen[node] then
      seen[node] = true
      types[node.h.type] = true
      for i = 1, node.h.nin do if node.inputs[i] then stack[#stack + 1] = node.inputs[i] end end
    end
  end
  return types
end

local mul = eager._prepared("mul", 2, { x_num_col_dims = 1, y_num_col_dims = 1 })
local mean_op = eager._prepared("mean", 1)

local function conv(attrs)
  return function(x, w)
    return eager._run("conv2d", { { "Input", x }, { "Filter", w } }, { { "Output", 1 } }, attrs)[1]
  end
end

-- case: inputs = { {shape, lo, hi}, ... }, op(tensors...) -> tensor, grad = the grad op whose
-- double grad is checked. F = sum(w * op(x..)^3) (w fixed), so that the first derivative depends
-- on x through the grad op's inputs and through its incoming gradient.
local CASES = {
  { name = "relu", grad = "relu_grad", inputs = { { { 2, 3 }, -2, 2 } }, op = function(x) return x:relu() end },
  { name = "square", grad = "square_grad", inputs = { { { 2, 3 }, -2, 2 } }, op = function(x) return x:square() end },
  { name = "sqrt", grad = "sqrt_grad", inputs = { { { 2, 3 }, 0.5, 2 } }, op = function(x) return x:sqrt() end },
  { name = "mul", grad = "mul_grad", inputs = { { { 2, 3 }, -1, 1 }, { { 3, 2 }, -1, 1 } }, op = mul },
  { name = "elementwise_add", grad = "elementwise_add_grad", inputs = { { { 2, 3 }, -1, 1 }, { { 2, 3 }, -1, 1 } },
    op = function(x, y) return x + y end },
  { name = "elementwise_sub", grad = "elementwise_sub_grad", inputs = { { { 2, 3 }, -1, 1 }, { { 3 }, -1, 1 } },
    op = function(x, y) return x - y end },
  { name = "elementwise_mul", grad = "elementwise_mul_grad", inputs = { { { 2, 3 }, -1, 1 }, { { 2, 3 }, -1, 1 } },
    op = function(x, y) return x * y end },
  { name = "elementwise_div", grad = "elementwise_div_grad", inputs = { { { 2, 3 }, -1, 1 }, { { 3 }, 0.5, 2 } },
    op = function(x, y) return x / y end },
  { name = "reshape", grad = "reshape2_grad", inputs = { { { 2, 3 }, -1, 1 } },
    op = function(x) return x:square():reshape(3, 2) end },
  { name = "mean", grad = "reduce_mean_grad", inputs = { { { 2, 3 }, -1, 1 } },
    op = function(x) return x:square():mean(2) end },
  { name = "sum", grad = "reduce_sum_grad", inputs = { { { 2, 3 }, -1, 1 } },
    op = function(x) return x:square():sum(1) end },
  { name = "leaky_relu", grad = "leaky_relu_grad", inputs = { { { 2, 3 }, -2, 2 } },
    op = eager._prepared("leaky_relu", 1, { alpha = 0.1 }) },
  { name = "elu", grad = "elu_grad", inputs = { { { 2, 3 }, -2, 2 } }, op = eager._prepared("elu", 1, { alpha = 0.7 }) },
  { name = "expand", grad = "expand_grad", inputs = { { { 2, 1 }, -1, 1 } },
    op = function(x) return eager._run("expand", { { "X", x } }, { { "Out", 1 } }, { expand_times = { 1, 3 } })[1] end },
  { name = "instance_norm", grad = "instance_norm_grad",
    inputs = { { { 2, 2, 2, 2 }, -1, 1 }, { { 2 }, 0.5, 1.5 }, { { 2 }, -1, 1 } },
    op = function(x, scale, bias)
      return eager._run("instance_norm", { { "X", x }, { "Scale", scale }, { "Bias", bias } },
        { { "Y", 1 }, { "SavedMean", 1 }, { "SavedVariance", 1 } }, { epsilon = 1e-5 })[1]
    end },
  { name = "conv2d", grad = "conv2d_grad", inputs = { { { 1, 2, 3, 3 }, -1, 1 }, { { 2, 2, 2, 2 }, -1, 1 } },
    op = conv{ strides = { 2, 2 }, paddings = { 1, 1 }, dilations = { 1, 1 }, groups = 1 } },
  { name = "conv2d (groups 2, dilation 2)", grad = "conv2d_grad",
    inputs = { { { 1, 4, 4, 4 }, -1, 1 }, { { 2, 2, 2, 2 }, -1, 1 } },
    op = conv{ strides = { 1, 1 }, paddings = { 0, 0 }, dilations = { 2, 2 }, groups = 2 } },
}

local function check_case(case)
  local vals, dirs = {}, {}
  for i, inp in ipairs(case.inputs) do
    vals[i] = random(inp[1], inp[2], inp[3])
    dirs[i] = random(inp[1], -1, 1)
  end
  local w
  -- the first derivatives at vals, as tensors (create: recorded for a second backward)
  local function firsts(create)
    local xs = {}
    for i, inp in ipairs(case.inputs) do xs[i] = tensor(vals[i], inp[1]):requires_grad() end
    local o = case.op(table.unpack(xs))
    if not w then w = tensor(random(o:shape(), -1, 1), o:shape()) end
    local f = (o * o * o * w):sum()
    return oar.autograd.grad(f, xs, { create_graph = create }), xs
  end
  local g, xs = firsts(true)
  assert.is_true(tape_types(g[1])[case.grad] or false, case.grad .. " not recorded")
  -- s = sum_i dir_i . g_i; its gradient is the Hessian times the directions
  local s
  for i = 1, #g do
    local term = (g[i] * tensor(dirs[i], case.inputs[i][1])):sum()
    s = s and s + term or term
  end
  local h = oar.autograd.grad(s, xs)
  local function dot()
    local gs = firsts(false)
    local acc = 0
    for i = 1, #gs do
      assert.is_nil(rawget(gs[i], "_node"))
      for j, v in ipairs(flat(gs[i])) do acc = acc + v * dirs[i][j] end
    end
    return acc
  end
  local nonzero = false
  for i = 1, #vals do
    local hv = flat(h[i])
    for j = 1, #vals[i] do
      local keep = vals[i][j]
      vals[i][j] = keep + EPS
      local fp = dot()
      vals[i][j] = keep - EPS
      local fm = dot()
      vals[i][j] = keep
      local fd = (fp - fm) / (2 * EPS)
      if math.abs(fd) > 1e-3 then nonzero = true end
      assert(math.abs(hv[j] - fd) <= TOL * math.max(1, math.abs(fd)),
        string.format("%s: d/dx%d[%d]: analytic %.12g, finite difference %.12g", case.name, i, j, hv[j], fd))
    end
  end
  assert.is_true(nonzero, "every second derivative is zero: the check proves little")
end

describe("eager second derivatives", function()
  for _, case in ipairs(CASES) do
    it(case.name .. " against finite differences of the eager first derivative", function() check_case(case) end)
  end

  it("d2/dx2 of sum(x^3) by backward{create_graph = true} is 6 x", function()
    local xv = { 0.5, -1, 2, 1.5 }
    local x = oar.Tensor(xv, "float64"):requires_grad()
    ;(x:square() * x):sum():backward{ create_graph = true }
    local g = x.grad
    assert.is_truthy(rawget(g, "_node"))
    x.grad = nil
    g:sum():backward()
    local got = x.grad:totable()
    for i = 1, 4 do assert(math.abs(got[i] - 6 * xv[i]) < 1e-12, "6 x at " .. i) end
    -- y:backward(g, {create_graph = true}) on a y of several elements
    local z = oar.Tensor(xv, "float64"):requires_grad()
    ;(z:square() * z):backward(oar.Tensor({ 1, 2, 3, 4 }, "float64"), { create_graph = true })
    local gz = z.grad
    z.grad = nil
    gz:sum():backward()
    got = z.grad:totable()
    for i = 1, 4 do assert(math.abs(got[i] - 6 * xv[i] * i) < 1e-12, "6 x g at " .. i) end
  end)

  it("takes grad_outputs; a third derivative is an error naming the double-grad op", function()
    local xv = { 0.5, -1, 2 }
    local x = oar.Tensor(xv, "float64"):requires_grad()
    local y = x:square() * x:square()   -- x^4
    local dy = oar.Tensor({ 1, 2, -1 }, "float64")
    local g1 = oar.autograd.grad(y, x, { grad_outputs = dy, create_graph = true })[1]
    local g2 = oar.autograd.grad(g1:sum(), x, { create_graph = true })[1]:totable()
    local d = dy:totable()
    for i = 1, 3 do assert(math.abs(g2[i] - 12 * xv[i] ^ 2 * d[i]) < 1e-12, "12 x^2 dy at " .. i) end
    g2 = oar.autograd.grad(g1:sum(), x, { create_graph = true })[1]
    local ok, err = pcall(oar.autograd.grad, g2:sum(), x)
    assert.is_false(ok)
    assert.matches("_grad_grad' has no gradient", tostring(err), 1, true)
  end)
end)

-- the static gradient penalty of spec/double_grad_spec.lua, one SGD step
local X = { { 0.5, -1 }, { 1.5, 0.25 }, { -0.75, 2 } }
local W0 = { { 0.3, -0.6 }, { 0.9, 0.2 } }
local LAM = 0.5

describe("an eager gradient penalty", function()
  it("moves W as the static program's step does, bit for bit", function()
    local layers = oar.layers
    local main, startup = oar.Program(), oar.Program()
    oar.program_guard(main, startup, function()
      local x = layers.data{ name = "x", shape = { 3, 2 }, dtype = "float64", append_batch_size = false }
      x.stop_gradient = false
      local w = layers.create_parameter{ shape = { 2, 2 }, dtype = "float64", name = "W" }
      local h = layers.mul(x, w)
      local loss0 = layers.mean(layers.elementwise_mul{ x = h, y = h })
      local dx = oar.gradients({ loss0 }, { x })[1]
      local penalty = layers.mean(layers.square(dx))
      local total = layers.elementwise_add{ x = loss0, y = layers.scale{ x = penalty, scale = LAM } }
      oar.optimizer.SGD{ learning_rate = 0.1 }:minimize(total)
    end)
    local exe, sc = oar.Executor(oar.CPUPlace()), oar.Scope()
    exe:run(startup, { scope = sc })
    sc:var("W"):set_tensor(oar.Tensor(W0, "float64"))
    exe:run(main, { feed = { x = X }, scope = sc })
    local want = sc:var("W"):get_tensor():totable()

    local x = oar.Tensor(X, "float64"):requires_grad()
    local w = oar.Tensor(W0, "float64"):requires_grad()
    local opt = oar.optimizer.SGD{ learning_rate = 0.1, parameters = { w } }
    local h = mul(x, w)
    local loss0 = mean_op(h * h)
    local dx = oar.autograd.grad(loss0, x, { create_graph = true })[1]
    local gp = mean_op(dx:square())
    local total = loss0 + eager._prepared("scale", 1, { scale = LAM, bias = 0 })(gp)
    total:backward()
    opt:step()
    local got = w:totable()
    local moved = false
    for i = 1, 2 do
      for j = 1, 2 do
        assert(got[i][j] == want[i][j], string.format("W[%d][%d]: eager %.17g, static %.17g", i, j, got[i][j],
          want[i][j]))
        if got[i][j] ~= W0[i][j] then moved = true end
      end
    end
    assert.is_true(moved)
    -- and the penalty counted: without it W moves elsewhere
    local w2 = oar.Tensor(W0, "float64"):requires_grad()
    local h2 = mul(x, w2)
    mean_op(h2 * h2):backward()
    assert.is_true(math.abs(w2.grad:totable()[1][1] - (W0[1][1] - got[1][1]) / 0.1) > 1e-3)
  end)
end)

describe("a second derivative that cannot be taken", function()
  it("is an error naming the grad op without a double-grad maker", function()
    local x = oar.Tensor({ 0.5, -1, 2 }, "float64"):requires_grad()
    local g = oar.autograd.grad(x:tanh():sum(), x, { create_graph = true })[1]
    local ok, err = pcall(function() return oar.autograd.grad(g:sum(), x) end)
    assert.is_false(ok)
    assert.matches("tanh_grad", tostring(err), 1, true)
    assert.matches("eager_higher_order_spec.lua:%d+", tostring(err))
    -- matmul (matmul_v2) too: its grad op has no double-grad maker yet
    local a = oar.Tensor({ { 1, 2 }, { 3, 4 } }, "float64"):requires_grad()
    local ga = oar.autograd.grad((a:matmul(a)):sum(), a, { create_graph = true })[1]
    ok, err = pcall(function() ga:sum():backward() end)
    assert.is_false(ok)
    assert.matches("matmul_v2_grad", tostring(err), 1, true)
  end)

  it("names an input the outputs do not depend on, unless allow_unused", function()
    local x = oar.Tensor({ 1, 2 }, "float64"):requires_grad()
    local z = oar.Tensor({ 1, 2 }, "float64"):requires_grad()
    local ok, err = pcall(oar.autograd.grad, (x * x):sum(), { x, z })
    assert.is_false(ok)
    assert.matches("inputs[2]", tostring(err), 1, true)
    local g = oar.autograd.grad((x * x):sum(), { x, z }, { allow_unused = true })
    assert.are.same({ 2, 4 }, g[1]:totable())
    assert.is_nil(g[2])
  end)
end)

describe("create_graph = false", function()
  -- the id the tape gives the next recorded op
  local function next_id(x) return rawget(x * x, "_node").id end

  it("records nothing: backward and grad leave the tape as it was", function()
    local x = oar.Tensor({ 0.5, -1, 2 }, "float64"):requires_grad()
    local y = (x:square() * x):sum()
    local before = next_id(x)
    y:backward()
    oar.autograd.grad(y, x)
    assert.are.equal(before + 1, next_id(x))
    assert.is_nil(rawget(x.grad, "_node"))
    -- create_graph = true does record the grad ops
    local id = next_id(x)
    local g = oar.autograd.grad(y, x, { create_graph = true })[1]
    assert.is_truthy(rawget(g, "_node"))
    assert.is_true(next_id(x) > id + 3)
  end)

  it("leaves x.grad alone in oar.autograd.grad", function()
    local x = oar.Tensor({ 1, 2 }, "float64"):requires_grad()
    local g = oar.autograd.grad((x * x):sum(), x)[1]
    assert.are.same({ 2, 4 }, g:totable())
    assert.is_nil(rawget(x, "grad"))
  end)
end)
