-- Eager autograd against float64 central differences on compositions
-- (broadcasting, views, in-place writes into views before use, reused
-- tensors, branches taken by Lua ifs on values), and the version checks:
-- an in-place write to a tensor a recorded op needs is an error at
-- backward naming the op, the tensor and the line of the write, never a
-- wrong gradient (docs/eager.md, "Autograd").
local oar = require("oar")

-- analytic grads of f(leaves...) (a one-element tensor) against central
-- differences, every element of every leaf
local function check_fd(f, leaves, tol)
  tol = tol or 1e-7
  for _, x in ipairs(leaves) do rawset(x, "grad", nil) end
  f(table.unpack(leaves)):backward()
  local eps = 1e-6
  for li, x in ipairs(leaves) do
    assert(x.grad, "leaf " .. li .. " has no grad")
    local g = x.grad:reshape({ -1 }):totable()
    local d = x:data()
    for i = 0, x:numel() - 1 do
      local v = d[i]
      local lp, lm
      oar.no_grad(function()
        d[i] = v + eps; lp = f(table.unpack(leaves))
        d[i] = v - eps; lm = f(table.unpack(leaves))
      end)
      d[i] = v
      if type(lp) ~= "number" then lp, lm = lp:item(), lm:item() end
      local want = (lp - lm) / (2 * eps)
      assert(math.abs(g[i + 1] - want) <= tol * math.max(1, math.abs(want)),
        string.format("leaf %d element %d: backward %.12g, finite differences %.12g", li, i + 1, g[i + 1], want))
    end
  end
end

local function leaf(...) return oar.randn(...):requires_grad() end

describe("eager autograd against finite differences (float64)", function()
  before_each(function() oar.seed(31) end)

  it("broadcasting, and a tensor used several times", function()
    local a, b, c = leaf(3, 1, "float64"), leaf({ 4 }, "float64"), leaf(3, 4, "float64")
    check_fd(function(a_, b_, c_)
      local s = a_ + b_                          -- [3, 1] + [4] -> [3, 4]
      local y = (s * c_):tanh() + s * s / (c_ * c_ + 1) - b_
      return (y * b_):sum()
    end, { a, b, c })
  end)

  it("views: rows, narrow, select and index reads of one tensor", function()
    local x = leaf(4, 3, "float64")
    check_fd(function(x_)
      local r2 = x_[2]                           -- a view
      local mid = x_:narrow(1, 2, 2)             -- a view
      local col = x_:select(2, 3)                -- a copy (slice)
      local blk = x_[{ { 3, 4 }, { 1, 2 } }]
      return (r2 * x_[3]):sum() + (mid:exp()):mean() + (col ^ 2):sum() + blk:sigmoid():sum()
    end, { x })
  end)

  it("in-place writes into views of a constant before it is used", function()
    local x = leaf(3, 3, "float64")
    check_fd(function(x_)
      local m = oar.zeros(3, 3, "float64")
      m[2]:fill(2)                               -- through a view of m
      m[{ 1, { 2, 3 } }] = -1
      m:narrow(1, 3, 1):copy(oar.Tensor({ { 0.5, 1.5, 3 } }, "float64"))
      local buf = oar.zeros(3, "float64")
      buf[{ { 1, 2 } }] = m[2][{ { 2, 3 } }]     -- tensor values, into a view
      return (x_ * m):sum() + (x_:matmul(buf:reshape({ 3, 1 }))):sum()
    end, { x })
  end)

  it("reused intermediates and matmul, softmax, reshape, transpose, cat, where, max", function()
    local w, x = leaf(3, 2, "float64"), leaf(4, 3, "float64")
    check_fd(function(w_, x_)
      local h = x_:matmul(w_)                    -- [4, 2]
      local y = h * h + h:t():reshape({ 4, 2 })
      local z = oar.cat({ y, h:softmax(2) }, 2)  -- [4, 4]
      local sel = oar.where(z:gt(0), z, z * 0.1)
      return sel:max(2):sum() + (z:permute({ 2, 1 }) * 0.5):sum() + oar.stack({ h, y }, 1):mean()
    end, { w, x })
  end)

  it("branches taken by Lua ifs on values follow the branch taken", function()
    local x = leaf({ 5 }, "float64")
    local function f(x_)
      local s = x_:sum()
      local sv = type(s) == "number" and s or s:item()
      local y
      if sv > 0 then y = x_:exp() * x_ else y = (-x_):sigmoid() end
      for i = 1, 5 do
        if x_[i] > 0 then y = y + x_ * i else y = y - x_:abs() end   -- x_[i] reads a number
      end
      return (y ^ 2):mean()
    end
    check_fd(f, { x })
    oar.no_grad(function() x:copy(-x) end)
    check_fd(f, { x })
  end)
end)

describe("in-place writes and backward", function()
  it("a write to an input an op needs is an error at backward naming the op, the tensor and the line", function()
    local x = oar.randn(3, "float64"):requires_grad()
    local a = oar.Tensor({ 1, 2, 3 }, "float64")
    local y = (x * a):sum()                      -- the mul's grad reads a
    local line = debug.getinfo(1, "l").currentline; a:fill(5)
    local ok, err = pcall(function() y:backward() end)
    assert.is_false(ok)
    assert.truthy(err:find("elementwise_mul", 1, true), err)
    assert.truthy(err:find("float64 [3]", 1, true), err)
    assert.truthy(err:find("read as Y", 1, true), err)
    assert.truthy(err:find("written in place at spec/eager_autograd_spec.lua:" .. line, 1, true), err)
  end)

  it("a write through a view of an input is caught too; a name set on the tensor is in the message", function()
    local x = oar.randn(2, 3, "float64"):requires_grad()
    local a = oar.ones(2, 3, "float64")
    a.name = "mask"
    local y = (x * a):sum()
    a[1]:fill(2)                                 -- a view of a
    local ok, err = pcall(function() y:backward() end)
    assert.truthy(not ok and err:find("'mask'", 1, true), err)
  end)

  it("writing into an op's output spoils its history: an error, not a wrong gradient", function()
    local x = oar.randn(4, "float64"):requires_grad()
    local y = x * 2
    y[{ { 1, 2 } }] = 0                          -- y no longer 2 x there
    local ok, err = pcall(function() (y * y):sum():backward() end)
    assert.is_false(ok)
    assert.truthy(err:find("made as Out", 1, true), err)
  end)

  it("an optimizer step changes the parameters an old graph read", function()
    local w = oar.randn(3, "float64"):requires_grad()
    local loss = (w * w):sum()
    loss:backward()
    local opt = oar.optimizer.SGD{ learning_rate = 0.1, parameters = { w } }
    opt:step()
    local ok, err = pcall(function() loss:backward() end)
    assert.truthy(not ok and err:find("written in place", 1, true), err)
    -- a new forward reads the new values: fine
    opt:zero_grad()
    ;(w * w):sum():backward()
    assert.truthy(w.grad)
  end)

  it("a write that no grad op reads leaves backward correct", function()
    local x = oar.randn(3, "float64"):requires_grad()
    local a = oar.Tensor({ 1, 2, 3 }, "float64")
    local y = (x + a):sum()                      -- add's grad does not read a
    a:fill(9)
    y:backward()
    assert.are.same({ 1, 1, 1 }, x.grad:totable())
  end)

  it("refuses at the call what autograd could not follow", function()
    local x = oar.randn(3, "float64"):requires_grad()
    local buf = oar.zeros(3, "float64")
    local ok, err = pcall(function() buf:copy(x * 2) end)
    assert.truthy(not ok and err:find("requires grad", 1, true) and err:find("eager_autograd_spec.lua", 1, true), err)
    ok, err = pcall(function() buf[{ { 1, 3 } }] = x end)
    assert.truthy(not ok and err:find("requires grad", 1, true), err)
    local w = oar.randn(2, 3, "float64"):requires_grad()
    ok, err = pcall(function() w[1]:fill(0) end)
    assert.truthy(not ok and err:find("view of one that requires grad", 1, true), err)
    -- inside no_grad all three are allowed
    oar.no_grad(function() buf:copy(x * 2); w[1]:fill(0) end)
    assert.are.same({ 0, 0, 0 }, w[1]:totable())
  end)
end)

describe("buffer versions (oar_tensor_version)", function()
  local C = require("oar.lib").C
  local function v(t) return tonumber(C.oar_tensor_version(t.handle)) end

  it("differ between buffers, change on writes through any view, not on reads", function()
    local a, b = oar.zeros(4, 3), oar.zeros(4, 3)
    assert.are_not.equal(v(a), v(b))
    local row = a[2]                 -- a view: a's memory
    assert.are.equal(v(a), v(row))
    local before = v(a)
    local _ = a:totable(), a[{ 1, 1 }], a:data()   -- reads (data() hands out a pointer, uncounted)
    assert.are.equal(before, v(a))
    row:fill(1)
    assert.are_not.equal(before, v(a))
    assert.are.equal(v(a), v(row))
    local mid = v(a)
    a[{ 3, 2 }] = 5
    assert.are_not.equal(mid, v(row))
    -- an op writing in place (an optimizer's update) counts too
    local w = oar.ones(3):requires_grad()
    local opt = oar.optimizer.SGD{ learning_rate = 0.5, parameters = { w } }
    ;(w * w):sum():backward()
    local vw = v(w)
    opt:step()
    assert.are_not.equal(vw, v(w))
    assert.are.same({ 0, 0, 0 }, w:totable())
  end)
end)
