-- Eager mode (docs/eager.md): (a) each eager call equals the static
-- executor's run of the same op on the same inputs, bit for bit; (b) eager
-- gradients equal append_backward's (oar.gradients) for an MLP; (c) autograd
-- against float64 finite differences; (d) Torch7 habits with values worked
-- out in plain Lua; (e) errors name the op, the shapes and the caller's line.
local oar = require("oar")

local exe = oar.Executor(oar.CPUPlace())

-- runs `optype` once in a program: inputs {slot = {tensor, ...}}, outputs
-- {slot = n}; returns {slot = {tensor, ...}}
local function static_run(optype, inputs, outputs, attrs)
  local prog = oar.Program()
  local b = prog:global_block()
  local feed, ins, outs, fetch, where = {}, {}, {}, {}, {}
  for slot, list in pairs(inputs) do
    ins[slot] = {}
    for i, t in ipairs(list) do
      local name = "in_" .. slot .. i
      ins[slot][i] = b:create_var{ name = name, shape = t:shape(), dtype = t:dtype() }
      feed[name] = t
    end
  end
  for slot, n in pairs(outputs) do
    outs[slot] = {}
    for i = 1, n do
      local v = b:create_var{ name = "out_" .. slot .. i }
      outs[slot][i] = v
      fetch[#fetch + 1] = v
      where[#fetch] = { slot, i }
    end
  end
  b:append_op{ type = optype, inputs = ins, outputs = outs, attrs = attrs }
  local r = exe:run(prog, { feed = feed, fetch_list = fetch })
  local res = {}
  for k, t in ipairs(r) do
    local slot, i = where[k][1], where[k][2]
    res[slot] = res[slot] or {}
    res[slot][i] = t
  end
  return res
end

local function same_bits(got, want)
  assert.are.same(want:shape(), got:shape())
  assert.are.equal(want:dtype(), got:dtype())
  assert.are.same(want:totable(), got:totable())
end

local function close(got, want, tol, label)
  local g, w = got, want
  if type(g) ~= "table" then g, w = { g }, { w } end
  local function walk(a, b, path)
    if type(b) == "table" then
      assert.are.equal(#b, #a, path)
      for i = 1, #b do walk(a[i], b[i], path .. "[" .. i .. "]") end
    else
      assert(math.abs(a - b) <= tol * (1 + math.abs(b)),
        string.format("%s%s: %.12g vs %.12g", label or "", path, a, b))
    end
  end
  walk(g, w, "")
end

describe("eager mode", function()
  before_each(function() oar.seed(7) end)

  describe("(a) forward equals the static executor's run of the same op", function()
    local x = oar.Tensor({ { 1.5, -2, 3 }, { 4, 0.25, -6 } })
    local y = oar.Tensor({ 0.5, 3, -1.25 })
    local sq = oar.Tensor({ { 1, 2 }, { 3, 4 }, { 5, -1 } })
    local cases = {
      { "add", function() return x + y end, "elementwise_add", { X = { x }, Y = { y } }, { axis = -1 } },
      { "sub", function() return x - y end, "elementwise_sub", { X = { x }, Y = { y } }, { axis = -1 } },
      { "mul", function() return x * y end, "elementwise_mul", { X = { x }, Y = { y } }, { axis = -1 } },
      { "div", function() return x / y end, "elementwise_div", { X = { x }, Y = { y } }, { axis = -1 } },
      { "matmul", function() return x:matmul(sq) end, "matmul_v2", { X = { x }, Y = { sq } }, {} },
      { "exp", function() return x:exp() end, "exp", { X = { x } }, {} },
      { "tanh", function() return x:tanh() end, "tanh", { X = { x } }, {} },
      { "sigmoid", function() return oar.sigmoid(x) end, "sigmoid", { X = { x } }, {} },
      { "relu", function() return x:relu() end, "relu", { X = { x } }, {} },
      { "abs", function() return x:abs() end, "abs", { X = { x } }, {} },
      { "pow", function() return x ^ 2 end, "pow", { X = { x } }, { factor = 2 } },
      { "softmax", function() return x:softmax(2) end, "softmax", { X = { x } }, { axis = 1 } },
      { "clamp", function() return x:clamp(-1, 2) end, "clip", { X = { x } }, { min = -1, max = 2 } },
      { "sum(d)", function() return x:sum(2) end, "reduce_sum", { X = { x } }, { dim = { 1 } } },
      { "mean(d)", function() return x:mean(1) end, "reduce_mean", { X = { x } }, { dim = { 0 } } },
      { "t", function() return x:t() end, "transpose2", { X = { x } }, { axis = { 1, 0 } } },
      { "cat", function() return oar.cat({ x, x }, 2) end, "concat", { X = { x, x } }, { axis = 1 } },
      { "float64", function() return x:double() end, "cast", { X = { x } }, { in_dtype = 5, out_dtype = 6 } },
    }
    for _, c in ipairs(cases) do
      it(c[1], function()
        local want = static_run(c[3], c[4], { Out = 1 }, c[5]).Out[1]
        same_bits(c[2](), want)
      end)
    end

    it("sort and topk (values; indices 1-based)", function()
      local v = oar.Tensor({ 3, 1, 2, 5 })
      local r = static_run("argsort", { X = { v } }, { Out = 1, Indices = 1 }, { axis = 0 })
      local vals, idx = v:sort()
      same_bits(vals, r.Out[1])
      assert.are.same({ 2, 3, 1, 4 }, idx:totable())
      local k = static_run("top_k", { X = { v } }, { Out = 1, Indices = 1 }, { k = 2 })
      local tv, ti = v:topk(2)
      same_bits(tv, k.Out[1])
      assert.are.same({ 4, 1 }, ti:totable())
    end)
  end)

  describe("(b) gradients equal append_backward's", function()
    it("an MLP with a mean squared error", function()
      local xv = oar.randn(4, 3, "float64")
      local w1v, b1v = oar.randn(3, 5, "float64"), oar.randn(5, "float64")
      local w2v, b2v = oar.randn(5, 2, "float64"), oar.randn(2, "float64")
      local tv = oar.randn(4, 2, "float64")
      -- static: the same ops in a program, grads from the backward pass
      local prog = oar.Program()
      local grads
      oar.program_guard(prog, oar.Program(), function()
        local b = prog:global_block()
        local function var(name, t)
          local v = b:create_var{ name = name, shape = t:shape(), dtype = "float64" }
          v.stop_gradient = false
          return v
        end
        local function op(t, ins, attrs)
          local out = b:create_var{ name = oar.unique_name.generate(t), dtype = "float64" }
          b:append_op{ type = t, inputs = ins, outputs = { Out = { out } }, attrs = attrs }
          return out
        end
        local x, w1, b1 = var("x", xv), var("w1", w1v), var("b1", b1v)
        local w2, b2, t = var("w2", w2v), var("b2", b2v), var("t", tv)
        local h = op("relu", { X = { op("elementwise_add", { X = { op("matmul_v2", { X = { x }, Y = { w1 } }) }, Y = { b1 } }, { axis = -1 }) } })
        local o = op("elementwise_add", { X = { op("matmul_v2", { X = { h }, Y = { w2 } }) }, Y = { b2 } }, { axis = -1 })
        local d = op("elementwise_sub", { X = { o }, Y = { t } }, { axis = -1 })
        local loss = op("reduce_mean", { X = { op("pow", { X = { d } }, { factor = 2 }) } }, { reduce_all = true, dim = { 0 } })
        grads = oar.gradients({ loss }, { w1, b1, w2, b2 })
      end)
      local sg = exe:run(prog, { feed = { x = xv, w1 = w1v, b1 = b1v, w2 = w2v, b2 = b2v, t = tv }, fetch_list = grads })
      -- eager
      local w1, b1 = w1v:clone():requires_grad(), b1v:clone():requires_grad()
      local w2, b2 = w2v:clone():requires_grad(), b2v:clone():requires_grad()
      local loss = (((xv:matmul(w1) + b1):relu():matmul(w2) + b2 - tv) ^ 2):mean()
      loss:backward()
      for i, p in ipairs({ w1, b1, w2, b2 }) do same_bits(p.grad, sg[i]) end
    end)
  end)

  describe("(c) autograd against float64 finite differences", function()
    -- numeric gradient of f (a function of one tensor returning a number)
    local function numeric(f, x)
      local g = {}
      oar.no_grad(function()
        local flat = x:reshape(-1)
        for i = 1, x:numel() do
          local v = flat[i]
          flat[i] = v + 1e-6
          local up = f(x)
          flat[i] = v - 1e-6
          local down = f(x)
          flat[i] = v
          g[i] = (up - down) / 2e-6
        end
      end)
      return g
    end
    local function value(r) return type(r) == "number" and r or r:item() end
    local function check(f, x)
      local want = numeric(function(t) return value(f(t)) end, x)
      local leaf = x:clone():requires_grad()
      local y = f(leaf)
      y:backward()
      close(leaf.grad:reshape(-1):totable(), want, 1e-6)
    end

    it("broadcasting", function()
      local b = oar.randn(3, "float64")
      check(function(x) return ((x + b) * x / (b * b + 1)):sum() end, oar.randn(2, 3, "float64"))
      local x2 = oar.randn(2, 3, "float64")
      check(function(v) return (x2 * v - v):tanh():sum() end, oar.randn(3, "float64"))
    end)

    it("a tensor used several times, and branches taken by Lua ifs", function()
      check(function(x)
        local s = x:exp():sum()
        local y = x * x
        if value(s) > 1 then y = y + x:sigmoid() * 3 else y = y - x end
        for _ = 1, 2 do y = y * x end
        return y:mean()
      end, oar.randn(4, "float64"))
    end)

    it("matmul, softmax, reductions, views and joins", function()
      local w = oar.randn(3, 2, "float64")
      check(function(x) return (x:matmul(w):softmax(2) * oar.Tensor({ 1, 2 }, "float64")):sum() end,
        oar.randn(4, 3, "float64"))
      check(function(x) return (x[2] * 3):sum() + x:narrow(1, 1, 2):max() end, oar.randn(3, 2, "float64"))
      check(function(x)
        local parts = x:split(2, 2)
        return (oar.cat({ parts[2], parts[1] }, 2) * x):sum() + x:t():reshape(-1):narrow(1, 2, 1):sum()
      end, oar.randn(2, 4, "float64"))
      check(function(x) return x:gather(2, oar.Tensor({ { 2, 1 }, { 1, 1 } }, "int64")):pow(3):sum() end,
        oar.randn(2, 3, "float64"))
      check(function(x) return x:norm(2) + x:abs():sum(1):mean() end, oar.randn(2, 3, "float64"))
    end)

    it("grads accumulate over backward calls until cleared", function()
      local x = oar.Tensor({ 1, 2 }, "float64"):requires_grad();
      (x * x):sum():backward();
      (x * 3):sum():backward()
      assert.are.same({ 5, 7 }, x.grad:totable())
      x.grad = nil
      x:sum():backward()
      assert.are.same({ 1, 1 }, x.grad:totable())
      local y = x * 2
      y:backward(oar.Tensor({ 1, 10 }, "float64"))
      assert.are.same({ 3, 21 }, x.grad:totable())
    end)

    it("detach and no_grad stop the tape", function()
      local x = oar.Tensor({ 1, 2 }, "float64"):requires_grad()
      local y = (x:detach() * x):sum()
      y:backward()
      assert.are.same({ 1, 2 }, x.grad:totable())
      local z = oar.no_grad(function() return x * 2 end)
      assert.has_error(function() z:backward(oar.ones(2, "float64")) end)   -- not on the tape
      assert.are.equal(6, z:sum())
    end)
  end)

  describe("(d) Torch7 habits", function()
    it("creation", function()
      assert.are.same({ { 0, 0, 0 }, { 0, 0, 0 } }, oar.zeros(2, 3):totable())
      assert.are.same({ 3, 4 }, oar.ones{ 3, 4 }:shape())
      assert.are.equal("int64", oar.zeros({ 2 }, "int64"):dtype())
      assert.are.same({ { 7, 7 }, { 7, 7 } }, oar.full({ 2, 2 }, 7):totable())
      assert.are.same({ { 1, 0, 0 }, { 0, 1, 0 }, { 0, 0, 1 } }, oar.eye(3):totable())
      assert.are.same({ 1, 3, 5 }, oar.arange(1, 7, 2):totable())
      assert.are.same({ 0, 0.25, 0.5, 0.75, 1 }, oar.linspace(0, 1, 5):totable())
      local r = oar.rand(50)
      for _, v in ipairs(r:totable()) do assert(v >= 0 and v < 1) end
      local ri = oar.randint(2, 5, { 200 })
      assert.are.equal("int64", ri:dtype())
      local seen = {}
      for _, v in ipairs(ri:totable()) do assert(v >= 2 and v < 5); seen[v] = true end
      assert.truthy(seen[2] and seen[3] and seen[4])
      oar.seed(3); local a = oar.randn(4):totable()
      oar.seed(3); assert.are.same(a, oar.randn(4):totable())
    end)

    it("arithmetic with numbers on either side, comparisons", function()
      local a = oar.Tensor({ { 1, 2 }, { 3, 4 } })
      assert.are.same({ { 3, 4 }, { 5, 6 } }, (a + 2):totable())
      assert.are.same({ { 9, 8 }, { 7, 6 } }, (10 - a):totable())
      assert.are.same({ { 0.5, 1 }, { 1.5, 2 } }, (a / 2):totable())
      assert.are.same({ { 1, 4 }, { 9, 16 } }, (a ^ 2):totable())
      assert.are.same({ { -1, -2 }, { -3, -4 } }, (-a):totable())
      assert.are.same({ { 11, 22 }, { 13, 24 } }, (a + oar.Tensor({ 10, 20 })):totable())
      assert.are.same({ { false, true }, { false, false } }, a:eq(2):totable())
      assert.are.same({ { true, false }, { true, true } }, a:ne(2):totable())
      assert.are.same({ { false, false }, { true, true } }, a:ge(3):totable())
      assert.are.same({ { true, false }, { false, false } }, a:lt(2):totable())
    end)

    it("indexing and views share memory", function()
      local a = oar.arange(1, 13):reshape(3, 4)
      assert.are.equal(7, a[{ 2, 3 }])
      assert.are.same({ 5, 6, 7, 8 }, a[2]:totable())
      assert.are.same({ { 2, 3 }, { 6, 7 } }, a[{ { 1, 2 }, { 2, 3 } }]:totable())
      assert.are.same({ 3, 7, 11 }, a[{ {}, 3 }]:totable())
      local row = a[2]
      row:fill(0)
      assert.are.same({ 0, 0, 0, 0 }, a[2]:totable())
      a[{ 1, 1 }] = 100
      assert.are.equal(100, a:narrow(1, 1, 1)[{ 1, 1 }])
      local sel = a:select(1, 3)
      a[{ 3, {} }] = oar.Tensor({ -1, -2, -3, -4 })
      assert.are.same({ -1, -2, -3, -4 }, sel:totable())
      a[{ {}, 2 }] = 9
      assert.are.same({ { 100, 9, 3, 4 }, { 0, 9, 0, 0 }, { -1, 9, -3, -4 } }, a:totable())
      local v = a:view(-1)
      v[1] = 5
      assert.are.equal(5, a[{ 1, 1 }])
      assert.are.same({ 4, 3 }, a:t():shape())
      assert.are.same({ 1, 3, 4 }, a:unsqueeze(1):shape())
      assert.are.same({ 3, 4 }, a:unsqueeze(1):squeeze(1):shape())
      assert.are.same({ 4, 3 }, oar.zeros(3, 1, 4):permute{ 3, 2, 1 }:squeeze(2):shape())
    end)

    it("reductions", function()
      local a = oar.Tensor({ { 1, 5, 3 }, { 4, 2, 6 } })
      assert.are.equal(21, a:sum())
      assert.are.equal(3.5, a:mean())
      assert.are.same({ 9, 12 }, a:sum(2):totable())
      assert.are.same({ { 9 }, { 12 } }, a:sum(2, true):totable())
      assert.are.same({ 2.5, 3.5, 4.5 }, a:mean(1):totable())
      local m, i = a:max(2)
      assert.are.same({ 5, 6 }, m:totable())
      assert.are.same({ 2, 3 }, i:totable())
      local mn, mi = a:min(1)
      assert.are.same({ 1, 2, 3 }, mn:totable())
      assert.are.same({ 1, 2, 1 }, mi:totable())
      assert.are.equal(6, a:max())
      assert.are.equal(1, a:min())
      assert.are.equal(6, a:argmax())
      assert.are.same({ 2, 3 }, a:argmax(2):totable())
      local n = 0
      for _, v in ipairs({ 1, 5, 3, 4, 2, 6 }) do n = n + v * v end
      assert(math.abs(a:norm() - math.sqrt(n)) < 1e-5)
      assert(math.abs(a:norm(1) - 21) < 1e-5)
    end)

    it("matmul, functions, sort, topk, joins and selections", function()
      local a = oar.Tensor({ { 1, 2 }, { 3, 4 } })
      local b = oar.Tensor({ { 5, 6 }, { 7, 8 } })
      assert.are.same({ { 19, 22 }, { 43, 50 } }, a:mm(b):totable())
      assert.are.same({ { 19, 22 }, { 43, 50 } }, oar.matmul(a, b):totable())
      assert.are.same({ 3, 7 }, oar.sum(a, 2):totable())
      close(oar.exp(a):totable(), { { math.exp(1), math.exp(2) }, { math.exp(3), math.exp(4) } }, 1e-6)
      close(a:sqrt():totable(), { { 1, math.sqrt(2) }, { math.sqrt(3), 2 } }, 1e-6)
      close(oar.Tensor({ 1, 2 }):softmax(1):totable(), { 1 / (1 + math.exp(1)), 1 / (1 + math.exp(-1)) }, 1e-6)
      assert.are.same({ 0, 0, 1, 2 }, oar.Tensor({ -1, 0, 1, 3 }):clamp(0, 2):totable())
      assert.are.same({ 0, 0, 1, 3 }, oar.Tensor({ -1, 0, 1, 3 }):relu():totable())
      local v, i = oar.Tensor({ 3, 1, 2 }):sort(1, true)
      assert.are.same({ 3, 2, 1 }, v:totable()); assert.are.same({ 1, 3, 2 }, i:totable())
      v, i = oar.Tensor({ { 3, 9 }, { 5, 1 } }):topk(1, 1)
      assert.are.same({ { 5, 9 } }, v:totable()); assert.are.same({ { 2, 1 } }, i:totable())
      assert.are.same({ 2, 4 }, oar.cat({ a, b }, 2):shape())
      assert.are.same({ 2, 2, 2 }, oar.stack({ a, b }, 1):shape())
      assert.are.same({ { 1, 5 }, { 2, 6 } }, oar.stack({ a[1], b[1] }, 2):totable())
      local parts = oar.arange(1, 6):split(2)
      assert.are.same({ { 1, 2 }, { 3, 4 }, { 5 } }, { parts[1]:totable(), parts[2]:totable(), parts[3]:totable() })
      assert.are.same({ { 3, 4 }, { 1, 2 } }, a:index_select(1, { 2, 1 }):totable())
      assert.are.same({ { 2, 1 }, { 3, 3 } }, a:gather(2, oar.Tensor({ { 2, 1 }, { 1, 1 } }, "int64")):totable())
      assert.are.same({ 1, 20, 3 }, oar.where(oar.Tensor({ 1, 0, 1 }):gt(0), oar.Tensor({ 1, 2, 3 }), 20):totable())
    end)

    it("in place, conversion, queries, printing", function()
      local a = oar.Tensor({ { 1.5, -2.5 }, { 3, 4 } })
      assert.are.equal(a, a:clone():zero() and a)
      local c = a:clone()
      c:fill(2)
      assert.are.same({ { 1.5, -2.5 }, { 3, 4 } }, a:totable())
      assert.are.same({ { 2, 2 }, { 2, 2 } }, c:totable())
      assert.are.equal(c, c:copy(a))
      assert.are.same(a:totable(), c:totable())
      assert.are.equal("float64", a:double():dtype())
      assert.are.equal("int64", a:long():dtype())
      assert.are.same({ { 1, -2 }, { 3, 4 } }, a:long():totable())
      assert.are.equal("int32", a:int():dtype())
      assert.are.equal("float32", a:long():float():dtype())
      assert.are.equal("float64", a:type("float64"):dtype())
      assert.are.equal(2, a:dim())
      assert.are.equal(4, a:numel())
      assert.are.equal(7, oar.Tensor({ 7 }):item())
      assert.are.equal(a, a:contiguous())
      local s = tostring(a)
      assert.truthy(s:find("1.5", 1, true) and s:find("float32", 1, true) and s:find("2, 2", 1, true))
      local big = tostring(oar.zeros(100, 100))
      assert.truthy(big:find("...", 1, true))
      assert(#big < 2000)
    end)

    it("save and load", function()
      local path = os.tmpname()
      local t = oar.randn(3, 2, "float64")
      oar.save({ w = t, step = 12, name = "run", ok = true, list = { oar.ones(2), 5 } }, path)
      local r = oar.load(path)
      assert.are.same(t:totable(), r.w:totable())
      assert.are.equal("float64", r.w:dtype())
      assert.are.equal(12, r.step); assert.are.equal("run", r.name); assert.are.equal(true, r.ok)
      assert.are.same({ 1, 1 }, r.list[1]:totable()); assert.are.equal(5, r.list[2])
      oar.save(t, path)
      assert.are.same(t:totable(), oar.load(path):totable())
      os.remove(path)
    end)
  end)

  describe("(e) errors", function()
    it("a shape mismatch names the op, both shapes and the line of the call", function()
      local line
      local ok, err = pcall(function()
        line = debug.getinfo(1, "l").currentline; return oar.ones(2, 3) + oar.ones(4, 5)
      end)
      assert.is_false(ok)
      assert.truthy(err:find("elementwise_add", 1, true), err)
      assert.truthy(err:find("[2, 3]", 1, true) and err:find("[4, 5]", 1, true), err)
      assert.truthy(err:find("eager_spec.lua:" .. line, 1, true), err)
      ok, err = pcall(function() return oar.ones(2, 3):matmul(oar.ones(2, 3)) end)
      assert.is_false(ok)
      assert.truthy(err:find("matmul_v2", 1, true), err)
      ok, err = pcall(function() return oar.ones(2, 3)[{ 3, 1 }] end)
      assert.is_false(ok)
      assert.truthy(err:find("outside 1..2", 1, true), err)
      assert.has_error(function() oar.Tensor({ 1, 2 }):backward() end)
      assert.has_error(function() oar.ones(2):long():requires_grad() end)
    end)
  end)
end)
