-- Fluid 1.8's functional control flow: while_loop, case, switch_case and
-- is_empty. Small models whose forward values are computed in plain Lua and
-- whose gradients through the loop / the taken branch are checked against
-- central finite differences (float64), for every branch and loop count.
local oar = require("oar")
local CF = require("spec.helpers.cf_check")
local layers = oar.layers
local expect_error = require("spec.helpers.expect_error")

local function data(name, shape, dtype)
  local v = layers.data{ name = name, shape = shape, dtype = dtype or "float64", append_batch_size = false }
  if (dtype or "float64") == "float64" then v.stop_gradient = false end
  return v
end

local function param(name, value, shape)
  return layers.create_parameter{ shape = shape or { 2, 3 }, dtype = "float64", name = name,
    default_initializer = oar.initializer.Constant{ value = value } }
end

local X = { { 0.1, 0.2, -0.3 }, { 0.4, -0.5, 0.6 } }
-- the parameters start at Constant 0.7, a float32 attribute
local W = tonumber(require("ffi").new("float", 0.7))
local function flat(t)
  local out = {}
  for _, row in ipairs(t) do for _, v in ipairs(row) do out[#out + 1] = v end end
  return out
end
local function int64(v) return { data = { v }, dtype = "int64" } end

describe("while_loop", function()
  -- i, h <- i + 1, tanh(h * w) + x while i < n; loss = mean(h^2)
  local function build(w0)
    return CF.build(function()
      local x, n = data("x", { 2, 3 }), data("n", { 1 }, "int64")
      local w = param("w", w0)
      local i = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 0 }
      local h0 = layers.scale(x, 2.0)
      local out = layers.while_loop{
        cond = function(i_) return layers.less_than{ x = i_, y = n } end,
        body = function(i_, h) return layers.increment{ x = i_, in_place = false }, layers.tanh(layers.elementwise_mul(h, w)) + x end,
        loop_vars = { i, h0 } }
      assert.equal(i, out[1])
      assert.equal(h0, out[2])
      return layers.mean(layers.elementwise_mul(out[2], out[2])), { x, w }, { out[1], out[2] }
    end)
  end

  it("runs body while cond holds, with values as a plain-Lua loop", function()
    local r = build(0.5)
    for _, n in ipairs({ 0, 1, 4 }) do
      local out = CF.run(r, { x = X, n = int64(n) }, r.extra)
      assert.same({ n }, CF.flat(out[1]))
      local want = {}
      for k, xv in ipairs(flat(X)) do
        local h = 2 * xv
        for _ = 1, n do h = math.tanh(h * 0.5) + xv end
        want[k] = h
      end
      CF.assert_near(CF.flat(out[2]), want, 1e-12, "h after " .. n .. " steps")
    end
  end)

  it("trains: gradients through the loop match finite differences for 0, 1 and 4 steps", function()
    local r = build(0.5)
    for _, n in ipairs({ 4, 1, 0 }) do
      local g = CF.check_grads(r, { x = X, n = int64(n) })
      if n == 0 then assert.same({ 0, 0, 0, 0, 0, 0 }, CF.flat(g[2])) end
    end
    -- one step by hand: loss = mean((tanh(2x w) + x)^2), d/dw = mean-weight 2 (h) (1 - t^2) 2x
    local g = CF.check_grads(r, { x = X, n = int64(1) })
    local want = {}
    for k, xv in ipairs(flat(X)) do
      local t = math.tanh(2 * xv * 0.5)
      want[k] = 2 * (t + xv) / 6 * (1 - t * t) * 2 * xv
    end
    CF.assert_near(CF.flat(g[2]), want, 1e-10, "dloss/dw after one step")
  end)

  it("takes loop variables returned as a list, and a body that leaves one unchanged", function()
    local r = CF.build(function()
      local x = data("x", { 2, 3 })
      local i = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 0 }
      local three = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 3 }
      local s = layers.scale(x, 1.0)
      local out = layers.while_loop(function(i_) return layers.less_than(i_, three) end,
        function(i_, s_, x_) return { layers.increment{ x = i_, in_place = false }, s_ + x_, x_ } end,
        { i, s, x })
      return layers.reduce_sum(out[2]), { x }, { out[2] }
    end)
    local out = CF.run(r, { x = X }, r.extra)
    local want = {}
    for k, v in ipairs(flat(X)) do want[k] = 4 * v end
    CF.assert_near(CF.flat(out[1]), want, 1e-12, "s = x + 3x")
    local g = CF.check_grads(r, { x = X })
    assert.same({ 4, 4, 4, 4, 4, 4 }, CF.flat(g[1]))
  end)

  it("names misuse", function()
    oar.program_guard(oar.Program(), oar.Program(), function()
      local i = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 0 }
      local n = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 3 }
      local c = function(i_) return layers.less_than(i_, n) end
      expect_error(function() layers.while_loop{ cond = c, body = 3, loop_vars = { i } } end,
        "while_loop: 'body' must be a function")
      expect_error(function() layers.while_loop{ cond = c, body = function(v) return v end, loop_vars = {} } end,
        "while_loop: 'loop_vars' must be a non-empty list of Variables")
      expect_error(function()
        layers.while_loop{ cond = function(v) return v end, body = function(v) return v end, loop_vars = { i } }
      end, "while_loop: 'cond's result' must be a bool Variable of one element")
      expect_error(function()
        layers.while_loop{ cond = c, body = function(v) return v, v end, loop_vars = { i } }
      end, "while_loop: 'body' returns 2 values; it must return as many as loop_vars (1)")
      expect_error(function() layers.while_loop{ cond = c, body = c, loop_var = { i } } end,
        "layers.while_loop: unknown argument 'loop_var' (did you mean 'loop_vars'?)")
    end)
  end)
end)

describe("case", function()
  -- k < 1: x * w; k < 2: tanh(x + w); else 3 w (w starts at 0.7)
  local function build(with_default)
    return CF.build(function()
      local x, k = data("x", { 2, 3 }), data("k", { 1 }, "int64")
      local w = param("w", 0.7)
      local one = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 1 }
      local two = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 2 }
      local pairs_ = { { layers.less_than(k, one), function() return layers.elementwise_mul(x, w) end },
                       { layers.less_than(k, two), function() return layers.tanh(x + w) end } }
      local y
      if with_default then
        y = layers.case{ pred_fn_pairs = pairs_, default = function() return layers.scale(w, 3) end }
      else
        y = layers.case(pairs_)   -- the last pair's function is the default
      end
      return layers.mean(layers.elementwise_mul(y, y)), { x, w }, { y }
    end)
  end
  local function want(k, with_default)
    local out = {}
    for j, xv in ipairs(flat(X)) do
      if k < 1 then out[j] = xv * W
      elseif k < 2 or not with_default then out[j] = math.tanh(xv + W)
      else out[j] = 3 * W end
    end
    return out
  end

  it("runs the first pair whose predicate holds, else the default; gradients flow through it", function()
    local r = build(true)
    for _, k in ipairs({ 0, 1, 2, 5 }) do
      local out = CF.run(r, { x = X, k = int64(k) }, r.extra)
      CF.assert_near(CF.flat(out[1]), want(k, true), 1e-12, "case k = " .. k)
      local g = CF.check_grads(r, { x = X, k = int64(k) })
      if k >= 2 then assert.same({ 0, 0, 0, 0, 0, 0 }, CF.flat(g[1])) end   -- the default ignores x
    end
  end)

  it("without a default runs the last pair's function when no earlier predicate holds", function()
    local r = build(false)
    for _, k in ipairs({ 0, 1, 7 }) do
      local out = CF.run(r, { x = X, k = int64(k) }, r.extra)
      CF.assert_near(CF.flat(out[1]), want(k, false), 1e-12, "case k = " .. k)
      CF.check_grads(r, { x = X, k = int64(k) })
    end
  end)

  it("names misuse", function()
    oar.program_guard(oar.Program(), oar.Program(), function()
      local x = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 1 }
      local p = layers.less_than(x, x)
      expect_error(function() layers.case{ pred_fn_pairs = { { x, function() return x end } } } end,
        "case: 'pred_fn_pairs[1][1]' must be a bool Variable of one element")
      expect_error(function() layers.case{ pred_fn_pairs = { { p, 3 } } } end,
        "case: 'pred_fn_pairs[1][2]' must be a function")
      expect_error(function() layers.case{ pred_fn_pairs = {} } end,
        "case: 'pred_fn_pairs' must be a non-empty list of {pred, fn} pairs")
      expect_error(function() layers.case{ pred_fn_pairs = { { p, function() return x end } }, defalut = 1 } end,
        "layers.case: unknown argument 'defalut' (did you mean 'default'?)")
    end)
  end)
end)

describe("switch_case", function()
  local function build(fns, default)
    return CF.build(function()
      local x, k = data("x", { 2, 3 }), data("k", { 1 }, "int64")
      local w = param("w", 0.7)
      local branches = fns(x, w)
      local y = layers.switch_case{ branch_index = k, branch_fns = branches,
                                    default = default and function() return layers.scale(x, -1) end or nil }
      return layers.mean(layers.elementwise_mul(y, w)), { x, w }, { y }
    end)
  end
  local B = {
    [0] = function(x) return x * math.sin(x) end,
    [3] = function(x) return math.tanh(x * W) end,
    [5] = function() return W * W end,
  }

  it("runs the branch of the index, else the default; gradients flow through it", function()
    local r = build(function(x, w)
      return { [0] = function() return layers.elementwise_mul(x, layers.sin(x)) end,
               [3] = function() return layers.tanh(layers.elementwise_mul(x, w)) end,
               [5] = function() return layers.elementwise_mul(w, w) end }
    end, true)
    for _, k in ipairs({ 0, 3, 5, 1, 9 }) do
      local out = CF.run(r, { x = X, k = int64(k) }, r.extra)
      local want = {}
      for j, xv in ipairs(flat(X)) do want[j] = B[k] and B[k](xv) or -xv end
      CF.assert_near(CF.flat(out[1]), want, 1e-12, "switch_case k = " .. k)
      CF.check_grads(r, { x = X, k = int64(k) })
    end
  end)

  it("takes a list of {index, fn} pairs; without a default the largest index is the default", function()
    local r = build(function(x, w)
      return { { 3, function() return layers.tanh(layers.elementwise_mul(x, w)) end },
               { 0, function() return layers.elementwise_mul(x, layers.sin(x)) end },
               { 5, function() return layers.elementwise_mul(w, w) end } }
    end, false)
    for _, k in ipairs({ 0, 3, 5, 2 }) do
      local out = CF.run(r, { x = X, k = int64(k) }, r.extra)
      local want = {}
      for j, xv in ipairs(flat(X)) do want[j] = (B[k] or B[5])(xv) end
      CF.assert_near(CF.flat(out[1]), want, 1e-12, "switch_case pairs k = " .. k)
      CF.check_grads(r, { x = X, k = int64(k) })
    end
  end)

  it("names misuse", function()
    oar.program_guard(oar.Program(), oar.Program(), function()
      local k = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 1 }
      local f = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 1 }
      local fn = function() return f end
      expect_error(function() layers.switch_case{ branch_index = f, branch_fns = { [0] = fn } } end,
        "switch_case: 'branch_index' must be a Variable (int64 [1])")
      expect_error(function() layers.switch_case{ branch_index = k, branch_fns = { { 1, fn }, { 1, fn } } } end,
        "switch_case: 'branch_fns' gives index 1 twice")
      expect_error(function() layers.switch_case{ branch_index = k, branch_fns = { [0] = fn, [1] = 4 } } end,
        "switch_case: 'branch_fns[1]' must be a function")
      expect_error(function() layers.switch_case{ branch_index = k, branch_fns = { [0.5] = fn } } end,
        "switch_case: 'branch_fns[0.5] index' must be an integer")
    end)
  end)
end)

describe("is_empty", function()
  it("says whether a tensor has no elements, also into a given cond", function()
    local r = CF.build(function()
      local x = layers.data{ name = "x", shape = { -1, 3 }, dtype = "float32", append_batch_size = false }
      local c = layers.fill_constant{ shape = { 1 }, dtype = "bool", value = 0 }
      local e = layers.is_empty(x)
      layers.is_empty{ x = x, cond = c }
      return nil, {}, { e, c }
    end, { no_backward = true })
    for _, rows in ipairs({ 0, 1, 4 }) do
      local out = CF.run(r, { x = oar.Tensor{ shape = { rows, 3 }, dtype = "float32" } }, r.extra)
      assert.same({ 1 }, out[1]:shape())
      assert.same({ rows == 0 }, CF.flat(out[1]))
      assert.same({ rows == 0 }, CF.flat(out[2]))
    end
  end)

  it("drives a cond", function()
    local r = CF.build(function()
      local x = layers.data{ name = "x", shape = { -1, 3 }, dtype = "float64", append_batch_size = false }
      local zero = layers.fill_constant{ shape = { 1 }, dtype = "float64", value = -1 }
      local y = layers.cond(layers.is_empty(x), function() return zero end,
        function() return layers.reduce_sum(x, nil, false) end)
      return nil, {}, { y }
    end, { no_backward = true })
    assert.same({ -1 }, CF.flat(CF.run(r, { x = oar.Tensor{ shape = { 0, 3 }, dtype = "float64" } }, r.extra)[1]))
    assert.same({ 21 }, CF.flat(CF.run(r, { x = { { 1, 2, 3 }, { 4, 5, 6 } } }, r.extra)[1]))
  end)

  it("names misuse", function()
    oar.program_guard(oar.Program(), oar.Program(), function()
      local x = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 1 }
      expect_error(function() layers.is_empty{ x = 3 } end, "is_empty: 'x' must be a Variable")
      expect_error(function() layers.is_empty{ x = x, cond = x } end, "is_empty: 'cond' must be a bool Variable")
    end)
  end)
end)
