-- Issue 22's Lua API beside the optimizers: oar.initializer.Bilinear and
-- NumpyArrayInitializer, oar.clip.ErrorClipByValue and set_gradient_clip.
-- Values are computed here in plain Lua.
local oar = require("oar")
local layers = oar.layers

local function near(a, b, tol) return math.abs(a - b) <= (tol or 1e-6) end

local flatten = require("spec.helpers.index").flatten

local function init_value(init, shape, dtype)
  local main, startup = oar.Program(), oar.Program()
  local p
  oar.program_guard(main, startup, function()
    p = layers.create_parameter{ shape = shape, dtype = dtype or "float32", name = "p",
                                 attr = oar.ParamAttr{ name = "p", initializer = init } }
  end)
  local scope, exe = oar.Scope(), oar.Executor(oar.CPUPlace())
  exe:run(startup, { scope = scope })
  return scope:var("p"):get_tensor()
end

describe("oar.initializer", function()
  it("Bilinear gives Fluid's tent in every [k, k] map", function()
    local t = init_value(oar.initializer.Bilinear(), { 2, 1, 4, 4 })
    local got = flatten(t:totable())
    local size, f = 4, 2
    local c = (2 * f - 1 - f % 2) / (2 * f)
    for i = 0, 2 * 16 - 1 do
      local x, y = i % size, math.floor(i / size) % size
      assert.is_true(near((1 - math.abs(x / f - c)) * (1 - math.abs(y / f - c)), got[i + 1]))
    end
    -- the 4x4 tent's corners and centre (upsampling by 2)
    assert.is_true(near(got[1], 0.0625) and near(got[6], 0.5625))
    assert.has_error(function() init_value(oar.initializer.Bilinear(), { 2, 3 }) end)
  end)

  it("NumpyArrayInitializer takes a nested table, a flat one or a Tensor", function()
    local v = { { 1.5, -2 }, { 3, 4.25 }, { 0, 7 } }
    assert.are.same(v, init_value(oar.initializer.NumpyArrayInitializer(v), { 3, 2 }):totable())
    assert.are.same(v, init_value(oar.initializer.NumpyArrayInitializer{ value = flatten(v) }, { 3, 2 }):totable())
    local t = oar.Tensor({ { 1, 2, 3 }, { 4, 5, 6 } }, "int64")
    assert.are.same({ { 1, 2, 3 }, { 4, 5, 6 } }, init_value(oar.initializer.NumpyArrayInitializer(t), { 2, 3 },
      "int64"):totable())
    local ok, err = pcall(init_value, oar.initializer.NumpyArrayInitializer({ 1, 2, 3 }), { 2, 2 })
    assert.is_false(ok)
    assert.matches("3 values", tostring(err), 1, true)
  end)
end)

describe("oar.clip", function()
  -- y = x w (x = 1, a 1x1 weight); loss = mean(3 y): dL/dy = 3
  local function build(setup)
    local main, startup = oar.Program(), oar.Program()
    local r = {}
    oar.program_guard(main, startup, function()
      local x = layers.data{ name = "x", shape = { 1 } }
      r.y = layers.fc{ input = x, size = 1, bias_attr = false,
                       param_attr = oar.ParamAttr{ name = "w", initializer = oar.initializer.Constant(1) } }
      r.loss = layers.mean(layers.scale{ x = r.y, scale = 3 })
      setup(r)
    end)
    local scope, exe = oar.Scope(), oar.Executor(oar.CPUPlace())
    exe:run(startup, { scope = scope })
    r.run = function(fetch) return exe:run(main, { feed = { x = { { 2 } } }, fetch_list = fetch, scope = scope }) end
    r.scope = scope
    return r
  end

  it("ErrorClipByValue clips a variable's gradient where the pass makes it", function()
    local r = build(function(r)
      r.y.error_clip = oar.clip.ErrorClipByValue{ max = 0.5 }
      r.pg = oar.append_backward(r.loss)
    end)
    local out = r.run({ r.y.name .. "@GRAD", r.pg[1][2] })
    assert.is_true(near(0.5, out[1]:totable()[1][1]))     -- 3 clipped to 0.5
    assert.is_true(near(1.0, out[2]:totable()[1][1]))     -- dL/dw = x * 0.5
  end)

  it("set_gradient_clip clips the gradients of an optimizer without grad_clip", function()
    local r = build(function(r)
      oar.clip.set_gradient_clip(oar.clip.GradientClipByValue{ max = 0.25 })
      oar.optimizer.SGD{ learning_rate = 1 }:minimize(r.loss)
    end)
    r.run({})
    assert.is_true(near(0.75, r.scope:var("w"):get_tensor():totable()[1][1]))   -- 1 - 1 * 0.25 (unclipped: 6)
    assert.has_error(function() oar.clip.set_gradient_clip(oar.clip.ErrorClipByValue(1)) end)
  end)
end)
