-- layers.cond, Switch and ConditionalBlock: the branch taken by a scalar
-- condition, its outputs and gradients (finite differences), the branch not
-- taken (no work, zero gradients, or the untouched value's gradient passing
-- through), in-place updates inside a branch, nesting and misuse.
local oar = require("oar")
local CF = require("spec.helpers.cf_check")
local layers = oar.layers

local expect_error = require("spec.helpers.expect_error")

local XV = { { 0.1, 0.2, -0.3 }, { 0.4, -0.5, 0.6 } }

local function mapv(f)
  local out = {}
  for _, row in ipairs(XV) do for _, v in ipairs(row) do out[#out + 1] = f(v) end end
  return out
end

local function bool1(b) return { data = { b }, dtype = "bool" } end

describe("cond", function()
  local function build()
    return CF.build(function()
      local x = layers.data{ name = "x", shape = { 2, 3 }, dtype = "float64", append_batch_size = false }
      local p = layers.data{ name = "p", shape = { 1 }, dtype = "bool", append_batch_size = false }
      x.stop_gradient = false
      local a, b = layers.cond(p, function() return layers.tanh(x), x * 2 end,
                                  function() return x * x, layers.exp(x) end)
      return layers.mean(a) + layers.mean(b * b), { x }, { a, b }
    end)
  end

  it("returns the outputs of the branch the predicate selects", function()
    local r = build()
    local out = CF.run(r, { x = XV, p = bool1(true) }, r.extra)
    CF.assert_near(CF.flat(out[1]), mapv(math.tanh), 1e-12, "true a")
    CF.assert_near(CF.flat(out[2]), mapv(function(v) return 2 * v end), 1e-12, "true b")
    out = CF.run(r, { x = XV, p = bool1(false) }, r.extra)
    CF.assert_near(CF.flat(out[1]), mapv(function(v) return v * v end), 1e-12, "false a")
    CF.assert_near(CF.flat(out[2]), mapv(math.exp), 1e-12, "false b")
  end)

  it("differentiates the branch taken", function()
    local r = build()
    CF.check_grads(r, { x = XV, p = bool1(true) })
    CF.check_grads(r, { x = XV, p = bool1(false) })
  end)

  it("keeps the shape of the results: one value, several, or a list", function()
    oar.program_guard(oar.Program(), oar.Program(), function()
      local x = layers.data{ name = "x", shape = { 3 }, dtype = "float64" }
      local p = layers.data{ name = "p", shape = { 1 }, dtype = "bool", append_batch_size = false }
      local one = layers.cond(p, function() return x end, function() return x * 2 end)
      assert.is_true(oar.is_variable(one))
      local list = layers.cond(p, function() return { x, x } end, function() return { x, x * 3 } end)
      assert.equal(2, #list)
      assert.is_nil(layers.cond(p, function() end, function() end))
      expect_error(function() layers.cond(p, function() return x end, function() end) end, "false_fn returns nothing")
      expect_error(function() layers.cond(p, function() return x, x end, function() return x end) end,
        "true_fn returns 2", "false_fn 1")
      expect_error(function() layers.cond(x, function() return x end) end, "cond", "'pred'", "bool")
      expect_error(function() layers.cond(p) end, "give true_fn, false_fn or both")
    end)
  end)
end)

describe("Switch", function()
  local function build()
    return CF.build(function()
      local x = layers.data{ name = "x", shape = { 2 }, dtype = "float64", append_batch_size = false }
      local k = layers.data{ name = "k", shape = { 1 }, dtype = "float64", append_batch_size = false }
      x.stop_gradient = false
      local y = layers.fill_constant{ shape = { 2 }, dtype = "float64", value = 0 }
      y.stop_gradient = false   -- a constant until a case writes x into it
      local one = layers.fill_constant{ shape = { 1 }, dtype = "float64", value = 1 }
      local two = layers.fill_constant{ shape = { 1 }, dtype = "float64", value = 2 }
      local sw = layers.Switch()
      sw:case(layers.less_than{ x = k, y = one }, function() layers.assign(x * 3, y) end)
      sw:case(layers.less_than{ x = k, y = two }, function() layers.assign(layers.tanh(x), y) end)
      sw:default(function() layers.assign(x * x, y) end)
      return layers.mean(y * x), { x }, { y }
    end)
  end

  it("runs the first case that holds, else the default", function()
    local r = build()
    local x = { 0.3, -0.7 }
    local cases = {
      { 0.5, { 0.9, -2.1 } },                          -- both conditions hold: the first wins
      { 1.5, { math.tanh(0.3), math.tanh(-0.7) } },
      { 2.5, { 0.09, 0.49 } },
    }
    for _, c in ipairs(cases) do
      CF.assert_near(CF.flat(CF.run(r, { x = x, k = { c[1] } }, r.extra)[1]), c[2], 1e-12, "k = " .. c[1])
      CF.check_grads(r, { x = x, k = { c[1] } })
    end
  end)

  it("lets a case update a variable in place; untaken cases pass its gradient through", function()
    local r = CF.build(function()
      local v = layers.data{ name = "v", shape = { 3 }, dtype = "float64", append_batch_size = false }
      local k = layers.data{ name = "k", shape = { 1 }, dtype = "float64", append_batch_size = false }
      v.stop_gradient = false
      local zero = layers.fill_constant{ shape = { 1 }, dtype = "float64", value = 0 }
      local sw = layers.Switch()
      -- v = v * v, then v = v + tanh(v): reads after writes inside the case
      sw:case(layers.less_than{ x = k, y = zero }, function()
        layers.assign(v * v, v)
        layers.assign(v + layers.tanh(v), v)
      end)
      local w = v * 2
      return layers.mean(w * w), { v }, { w }
    end)
    local v = { 0.5, -0.25, 0.75 }
    local out = CF.flat(CF.run(r, { v = v, k = { -1 } }, r.extra)[1])
    local want = {}
    for i, x in ipairs(v) do local s = x * x; want[i] = 2 * (s + math.tanh(s)) end
    CF.assert_near(out, want, 1e-12, "updated")
    CF.check_grads(r, { v = v, k = { -1 } })
    out = CF.flat(CF.run(r, { v = v, k = { 1 } }, r.extra)[1])
    CF.assert_near(out, { 1, -0.5, 1.5 }, 1e-12, "untouched")
    CF.check_grads(r, { v = v, k = { 1 } })
  end)

  it("names misuse", function()
    oar.program_guard(oar.Program(), oar.Program(), function()
      local k = layers.data{ name = "k", shape = { 1 }, dtype = "bool", append_batch_size = false }
      local x = layers.data{ name = "x", shape = { 3 }, dtype = "float64" }
      local sw = layers.Switch()
      expect_error(function() sw:default(function() end) end, "add a case before the default")
      expect_error(function() sw:case(x, function() end) end, "Switch:case", "'cond'", "bool")
      sw:case(k, function() end)
      sw:default(function() end)
      expect_error(function() sw:case(k, function() end) end, "after the default")
    end)
  end)
end)

describe("ConditionalBlock", function()
  it("runs when every input is non-empty (Fluid's rule without a scalar condition)", function()
    local r = CF.build(function()
      local x = layers.data{ name = "x", shape = { 2 }, dtype = "float64" }
      local y = layers.fill_constant{ shape = { 1 }, dtype = "float64", value = -1 }
      layers.ConditionalBlock{ inputs = { x } }:block(function() layers.assign(layers.reduce_sum{ input = x }, y) end)
      return nil, {}, { y }
    end, { no_backward = true })
    assert.same({ 10 }, CF.flat(CF.run(r, { x = { { 1, 2 }, { 3, 4 } } }, r.extra)[1]))
    assert.same({ -1 }, CF.flat(CF.run(r, { x = oar.Tensor{ shape = { 0, 2 }, dtype = "float64" } }, r.extra)[1]))
  end)

  it("restores the current block when the closure fails", function()
    local main = oar.Program()
    oar.program_guard(main, oar.Program(), function()
      local p = layers.data{ name = "p", shape = { 1 }, dtype = "bool", append_batch_size = false }
      expect_error(function()
        layers.ConditionalBlock({ p }, true):block(function() error("inside the block") end)
      end, "inside the block")
      assert.equal(0, main:current_block().idx)
    end)
  end)
end)
