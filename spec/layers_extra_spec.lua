-- oar.layers.extra (conv2d_transpose, resize_*, prelu, instance_norm,
-- group_norm, pad, gather_nd, index_select, cumsum, argsort) and
-- cross_entropy with a hard label of rank X - 1: shapes from compile-time
-- inference, parameters, strict arguments, and values after running
-- (expected values computed here).
local oar = require("oar")
local A = require("spec.helpers.api")
local layers = oar.layers
local Constant = oar.initializer.Constant

local build, run = A.build, A.run

local function errmsg(fn, ...)
  local ok, err = pcall(fn, ...)
  assert.is_false(ok, "expected an error")
  return tostring(err)
end

local function near(expect, got, tol)
  tol = tol or 1e-5
  if type(expect) == "table" then
    assert.are.equal(#expect, #got)
    for i = 1, #expect do near(expect[i], got[i], tol) end
  else
    assert.is_true(math.abs(expect - got) <= tol * math.max(1, math.abs(expect)),
      string.format("expected %.7g, got %.7g", expect, got))
  end
end

describe("layers.conv2d_transpose", function()
  it("doubles the spatial size with a 2x2 kernel of ones and stride 2", function()
    local main, startup, out = build(function()
      local x = layers.data{ name = "x", shape = { 1, 2, 2 } }
      return layers.conv2d_transpose{ input = x, num_filters = 1, filter_size = 2, stride = 2,
                                      param_attr = { initializer = Constant{ value = 1 } }, bias_attr = false }
    end)
    assert.are.same({ -1, 1, 4, 4 }, out.shape)
    local got = run(main, startup, { x = { { { { 1, 2 }, { 3, 4 } } } } }, { out })[1]:totable()
    assert.are.same({ { { { 1, 1, 2, 2 }, { 1, 1, 2, 2 }, { 3, 3, 4, 4 }, { 3, 3, 4, 4 } } } }, got)
  end)

  it("derives filter_size from output_size as Fluid does, with a bias", function()
    local main = build(function()
      local x = layers.data{ name = "x", shape = { 3, 5, 5 } }
      local y = layers.conv2d_transpose{ input = x, num_filters = 4, output_size = { 11, 11 }, stride = 2 }
      assert.are.same({ -1, 4, 11, 11 }, y.shape)
      return y
    end)
    local w
    for _, p in ipairs(main:global_block():all_parameters()) do
      if #p.shape == 4 then w = p end
    end
    assert.are.same({ 3, 4, 3, 3 }, w.shape)   -- (11 - 4 * 2 - 1) / 1 + 1 = 3
    assert.matches("layers.conv2d_transpose: unknown argument 'filters'", errmsg(function()
      build(function()
        layers.conv2d_transpose{ input = layers.data{ name = "x", shape = { 3, 5, 5 } }, filters = 2 }
      end)
    end), 1, true)
  end)
end)

describe("layers.resize_bilinear / resize_nearest", function()
  it("resizes to out_shape (Fluid 1.8's bilinear_interp / nearest_interp ops)", function()
    local main, startup, b, n = build(function()
      local x = layers.data{ name = "x", shape = { 1, 2, 2 } }
      return layers.resize_bilinear{ input = x, out_shape = { 3, 3 } }, layers.resize_nearest(x, { 4, 4 })
    end)
    assert.are.same({ -1, 1, 3, 3 }, b.shape)
    local ops = {}
    for _, op in ipairs(main:global_block():ops()) do ops[#ops + 1] = op.type end
    assert.are.same({ "bilinear_interp", "nearest_interp" }, ops)
    local got = run(main, startup, { x = { { { { 0, 2 }, { 4, 6 } } } } }, { b, n })
    assert.are.same({ { { { 0, 1, 2 }, { 2, 3, 4 }, { 4, 5, 6 } } } }, got[1]:totable())
    -- align_corners: source index round(k * (2 - 1) / (4 - 1))
    assert.are.same({ { { { 0, 0, 2, 2 }, { 0, 0, 2, 2 }, { 4, 4, 6, 6 }, { 4, 4, 6, 6 } } } }, got[2]:totable())
  end)

  it("needs out_shape or scale", function()
    assert.matches("resize_bilinear: one of 'out_shape' and 'scale' must be set", errmsg(function()
      build(function() layers.resize_bilinear{ input = layers.data{ name = "x", shape = { 1, 2, 2 } } } end)
    end), 1, true)
  end)
end)

describe("layers.prelu, instance_norm, group_norm", function()
  it("prelu starts with alpha 0.25 per channel", function()
    local main, startup, y = build(function()
      local x = layers.data{ name = "x", shape = { 2, 1, 2 } }
      return layers.prelu{ x = x, mode = "channel" }
    end)
    local got = run(main, startup, { x = { { { { -4, 4 } }, { { 8, -8 } } } } }, { y })[1]:totable()
    assert.are.same({ { { { -1, 4 } }, { { 8, -2 } } } }, got)
    assert.matches("prelu: 'mode' must be one of all, channel, element, got string 'row'", errmsg(function()
      build(function() layers.prelu{ x = layers.data{ name = "x", shape = { 2 } }, mode = "row" } end)
    end), 1, true)
  end)

  it("instance_norm and group_norm normalize to mean 0, variance 1 (scale 1, bias 0)", function()
    local main, startup, a, b = build(function()
      local x = layers.data{ name = "x", shape = { 2, 1, 2 } }
      return layers.instance_norm{ input = x }, layers.group_norm{ input = x, groups = 1, epsilon = 0 }
    end)
    local got = run(main, startup, { x = { { { { 1, 3 } }, { { 5, 5 } } } } }, { a, b })
    near({ { { { -1, 1 } }, { { 0, 0 } } } }, got[1]:totable(), 1e-4)
    -- group of 4 values {1, 3, 5, 5}: mean 3.5, variance 2.75
    local s = math.sqrt(2.75)
    near({ { { { -2.5 / s, -0.5 / s } }, { { 1.5 / s, 1.5 / s } } } }, got[2]:totable(), 1e-5)
    assert.matches("group_norm: 2 channels are not divisible by groups = 3", errmsg(function()
      build(function() layers.group_norm{ input = layers.data{ name = "x", shape = { 2, 1, 2 } }, groups = 3 } end)
    end), 1, true)
  end)
end)

describe("layers.pad, gather_nd, index_select, cumsum, argsort", function()
  it("compute their values", function()
    local main, startup, p, g, s, c, v, i = build(function()
      local x = layers.data{ name = "x", shape = { 2, 3 }, append_batch_size = false }
      local idx = layers.data{ name = "idx", shape = { 2, 2 }, dtype = "int64", append_batch_size = false }
      local sel = layers.data{ name = "sel", shape = { 2 }, dtype = "int64", append_batch_size = false }
      local vals, ids = layers.argsort{ input = x, axis = 1, descending = true }
      return layers.pad{ x = x, paddings = { 0, 1, 1, 0 }, pad_value = 9 }, layers.gather_nd(x, idx),
             layers.index_select{ x = x, index = sel, dim = 1 }, layers.cumsum{ x = x, axis = 1 }, vals, ids
    end)
    assert.are.same({ 3, 4 }, p.shape)
    local got = run(main, startup, { x = { { 3, 1, 2 }, { 6, 5, 4 } }, idx = { { 0, 2 }, { 1, 0 } }, sel = { 2, 0 } },
      { p, g, s, c, v, i })
    assert.are.same({ { 9, 3, 1, 2 }, { 9, 6, 5, 4 }, { 9, 9, 9, 9 } }, got[1]:totable())
    assert.are.same({ 2, 6 }, got[2]:totable())
    assert.are.same({ { 2, 3 }, { 4, 6 } }, got[3]:totable())
    assert.are.same({ { 3, 4, 6 }, { 6, 11, 15 } }, got[4]:totable())
    assert.are.same({ { 3, 2, 1 }, { 6, 5, 4 } }, got[5]:totable())
    assert.are.same({ { 0, 2, 1 }, { 0, 1, 2 } }, got[6]:totable())
    assert.matches("pad: 'paddings' must be a list of 4 integers (2 per dim), got {1, 1}", errmsg(function()
      build(function() layers.pad{ x = layers.data{ name = "x", shape = { 3 } }, paddings = { 1, 1 } } end)
    end), 1, true)
  end)
end)

describe("cross_entropy with a hard label of rank X - 1 (Fluid 1.8)", function()
  it("takes Label [N] for X [N, C]; Y is [N]; the gradient flows", function()
    local main, startup, loss, xg = build(function()
      local x = layers.data{ name = "x", shape = { 2, 3 }, append_batch_size = false, stop_gradient = false }
      local lbl = layers.data{ name = "lbl", shape = { 2 }, dtype = "int64", append_batch_size = false }
      local y = layers.cross_entropy{ input = x, label = lbl }
      assert.are.same({ 2 }, y.shape)
      local m = layers.mean(y)
      local grads = oar.gradients({ m }, { x })
      return y, grads[1]
    end)
    local probs = { { 0.2, 0.3, 0.5 }, { 0.6, 0.1, 0.3 } }
    local got = run(main, startup, { x = probs, lbl = { 2, 0 } }, { loss, xg })
    near({ -math.log(0.5), -math.log(0.6) }, got[1]:totable(), 1e-6)
    -- d mean(-log x[label]) / dx = -1 / (N x[label]) at the label, 0 elsewhere
    near({ { 0, 0, -1 / (2 * 0.5) }, { -1 / (2 * 0.6), 0, 0 } }, got[2]:totable(), 1e-5)
  end)

  it("still refuses a Label that matches neither form", function()
    local msg = errmsg(function()
      build(function()
        local x = layers.data{ name = "x", shape = { 2, 3 }, append_batch_size = false }
        local lbl = layers.data{ name = "lbl", shape = { 3 }, dtype = "int64", append_batch_size = false }
        layers.cross_entropy{ input = x, label = lbl }
      end)
    end)
    assert.matches("Label 'lbl' has shape [3] but X 'x' has shape [2, 3]", msg, 1, true)
  end)
end)
