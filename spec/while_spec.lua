-- While: loops against plain-Lua loops, loop-carried variables and
-- parameters with finite-difference gradients, tensor arrays indexed by a
-- counter (Fluid's test_while_op, a While inside a While), zero iterations,
-- Print inside the body (Fluid #6788), test-mode clones and misuse.
local oar = require("oar")
local CF = require("spec.helpers.cf_check")
local layers = oar.layers

local expect_error = require("spec.helpers.expect_error")

local function const(value, dtype)
  return layers.fill_constant{ shape = { 1 }, dtype = dtype or "int64", value = value }
end

-- h <- h * x + tanh(h), n times (n fed)
local function build_carried()
  return CF.build(function()
    local x = layers.data{ name = "x", shape = { 2, 3 }, dtype = "float64", append_batch_size = false }
    local h = layers.data{ name = "h", shape = { 2, 3 }, dtype = "float64", append_batch_size = false }
    local n = layers.data{ name = "n", shape = { 1 }, dtype = "int64", append_batch_size = false }
    x.stop_gradient, h.stop_gradient = false, false
    local i = const(0)
    local cond = layers.less_than{ x = i, y = n }
    local loop = layers.While(cond)
    loop:block(function()
      layers.assign(layers.elementwise_mul{ x = h, y = x } + layers.tanh(h), h)
      layers.increment{ x = i }
      layers.less_than{ x = i, y = n, cond = cond }
    end)
    return layers.mean(h * h), { x, h }, { h, i }
  end)
end

local XV = { { 0.1, 0.2, -0.3 }, { 0.4, -0.5, 0.6 } }
local HV = { { 1.0, 2.0, 3.0 }, { -1.0, 0.5, 0.2 } }

describe("While", function()
  it("repeats its body while the condition holds", function()
    local r = build_carried()
    for _, n in ipairs({ 0, 1, 3 }) do
      local out = CF.run(r, { x = XV, h = HV, n = { data = { n }, dtype = "int64" } }, r.extra)
      local want = {}
      for a = 1, 2 do
        for b = 1, 3 do
          local v = HV[a][b]
          for _ = 1, n do v = v * XV[a][b] + math.tanh(v) end
          want[#want + 1] = v
        end
      end
      CF.assert_near(CF.flat(out[1]), want, 1e-12, "h after " .. n .. " steps")
      assert.same({ n }, CF.flat(out[2]))
    end
  end)

  it("differentiates loop-carried variables and loop-invariant inputs", function()
    local r = build_carried()
    for _, n in ipairs({ 3, 1, 0 }) do
      local g = CF.check_grads(r, { x = XV, h = HV, n = { data = { n }, dtype = "int64" } })
      if n == 0 then
        assert.same({ 0, 0, 0, 0, 0, 0 }, CF.flat(g[1]))   -- x never used
      end
    end
  end)

  it("indexes tensor arrays with its counter, nested in another While (Fluid's test_while_op)", function()
    local r = CF.build(function()
      local d = {}
      for k = 0, 2 do
        d[k] = layers.data{ name = "d" .. k, shape = { 3 }, dtype = "float64", append_batch_size = false }
        d[k].stop_gradient = false
      end
      local i = const(0)
      local init = layers.fill_constant{ shape = { 3 }, dtype = "float64", value = 0 }
      local mem = layers.array_write{ x = init, i = i }
      local data = layers.array_write{ x = d[0], i = i }
      i = layers.increment{ x = i }          -- in place, before the arrays' grads read it
      layers.array_write{ x = d[1], i = i, array = data }
      i = layers.increment{ x = i }
      layers.array_write{ x = d[2], i = i, array = data }
      i = const(0)
      local len1, j, len2 = const(1), const(1), const(3)
      local cond1, cond2 = layers.less_than{ x = i, y = len1 }, layers.less_than{ x = j, y = len2 }
      local outer, inner = layers.While(cond1), layers.While(cond2)
      outer:block(function()
        local prev = layers.array_read{ array = mem, i = i }
        local result = layers.sums{ input = { layers.array_read{ array = data, i = i }, prev } }
        layers.increment{ x = i }
        layers.array_write{ x = result, i = i, array = mem }
        layers.less_than{ x = i, y = len1, cond = cond1 }
        inner:block(function()
          local prev2 = layers.array_read{ array = mem, i = j }
          local result2 = layers.sums{ input = { layers.array_read{ array = data, i = j }, prev2 * prev2 } }
          layers.increment{ x = j }
          layers.array_write{ x = result2, i = j, array = mem }
          layers.less_than{ x = j, y = len2, cond = cond2 }
        end)
      end)
      local result = layers.array_read{ array = mem, i = j }
      return layers.mean(result), { d[0], d[1], d[2] }, { result }
    end)
    local feeds = { d0 = { 0.1, 0.2, 0.3 }, d1 = { 0.4, -0.5, 0.6 }, d2 = { -0.7, 0.8, 0.9 } }
    local out = CF.flat(CF.run(r, feeds, r.extra)[1])
    -- mem[1] = d0; mem[2] = d1 + mem[1]^2; mem[3] = d2 + mem[2]^2
    local want = {}
    for k = 1, 3 do
      local m1 = feeds.d0[k]
      local m2 = feeds.d1[k] + m1 * m1
      want[k] = feeds.d2[k] + m2 * m2
    end
    CF.assert_near(out, want, 1e-12, "mem[3]")
    CF.check_grads(r, feeds)
  end)

  it("shows values inside the loop with Print and leaves them unchanged", function()
    local r = CF.build(function()
      local s = layers.data{ name = "s", shape = { 1 }, dtype = "float64", append_batch_size = false }
      local i, n = const(0), const(3)
      local cond = layers.less_than{ x = i, y = n }
      layers.While(cond):block(function()
        layers.Print(s, { message = "while_spec: s =", summarize = 1 })
        layers.assign(s * 2, s)
        layers.increment{ x = i }
        layers.less_than{ x = i, y = n, cond = cond }
      end)
      return nil, {}, { s }
    end, { no_backward = true })
    assert.same({ 8 }, CF.flat(CF.run(r, { s = { 1 } }, r.extra)[1]))
  end)

  it("runs in a test-mode clone without keeping step scopes", function()
    local r = build_carried()
    local test_prog = r.forward:clone{ for_test = true }
    local found = false
    for _, op in ipairs(test_prog:global_block():ops()) do
      if op.type == "while" then found = true; assert.is_true(op:attr("is_test")) end
    end
    assert.is_true(found)
    local feeds = { x = XV, h = HV, n = { data = { 2 }, dtype = "int64" } }
    local a = CF.run(r, feeds, { r.extra[1].name }, test_prog)
    local b = CF.run(r, feeds, { r.extra[1].name }, r.forward)
    CF.assert_near(CF.flat(a[1]), CF.flat(b[1]), 0, "h")
  end)

  it("names misuse and the step an error happens in", function()
    oar.program_guard(oar.Program(), oar.Program(), function()
      local x = layers.data{ name = "x", shape = { 3 }, dtype = "float64" }
      local i, n = const(0), const(2)
      local cond = layers.less_than{ x = i, y = n }
      expect_error(function() layers.While(x) end, "While", "'cond'", "bool")
      expect_error(function() layers.While(cond):block(function() layers.increment{ x = i } end) end,
        "never writes its condition")
      expect_error(function() layers.While(cond):block(42) end, "While:block", "function")
      assert.equal(0, oar.default_main_program():current_block().idx)
    end)
    local r = CF.build(function()
      local arr = layers.create_array("float64")
      local i, n = const(0), const(3)
      local cond = layers.less_than{ x = i, y = n }
      layers.While(cond):block(function()
        layers.array_read{ array = arr, i = i }
        layers.increment{ x = i }
        layers.less_than{ x = i, y = n, cond = cond }
      end)
      return nil, {}, {}
    end, { no_backward = true })
    expect_error(function() CF.run(r, {}, {}) end, "op 'while'", "step 0", "read_from_array", "never written")
  end)
end)
