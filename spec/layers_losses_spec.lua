-- The layers of lua/oar/layers/losses.lua: each appends its op with Fluid's
-- slots and defaults (values against plain Lua), mse_loss and dice_loss are
-- built from ops as Fluid builds them (values and float64 finite-difference
-- gradients through the backward pass), positional forms, unknown keys.
local oar = require("oar")
local CF = require("spec.helpers.cf_check")
local layers = oar.layers
local expect_error = require("spec.helpers.expect_error")

local function data(name, shape, dtype)
  local v = layers.data{ name = name, shape = shape, dtype = dtype or "float64", append_batch_size = false }
  if (dtype or "float64") == "float64" then v.stop_gradient = false end
  return v
end

local function ints(v) return oar.Tensor(v, "int64") end

local function close(got, want, tol)
  assert.are.equal(#want, #got)
  for i = 1, #want do
    assert(math.abs(got[i] - want[i]) <= tol * (1 + math.abs(want[i])),
      ("element %d: %.15g vs %.15g"):format(i, got[i], want[i]))
  end
end

local X = { { 0.2, 0.9, 0.4 }, { 0.7, 0.1, 0.55 } }
local Y = { { 0.5, 0.3, 0.45 }, { 0.1, 0.6, 0.5 } }

describe("layers.mse_loss", function()
  it("is the mean of the squared errors, with gradients", function()
    local r = CF.build(function()
      local x, y = data("x", { 2, 3 }), data("y", { 2, 3 })
      local loss = layers.mse_loss{ input = x, label = y }
      return loss, { x, y }, { loss }
    end)
    local s = 0
    for i = 1, 2 do for j = 1, 3 do s = s + (X[i][j] - Y[i][j]) ^ 2 end end
    local got = CF.flat(CF.run(r, { x = X, y = Y }, r.extra)[1])
    close(got, { s / 6 }, 1e-12)
    CF.check_grads(r, { x = X, y = Y })
  end)
end)

describe("layers.dice_loss", function()
  it("is 1 - 2 |p . onehot| / (|p| + |onehot| + eps), averaged, with gradients", function()
    local P = { { 0.2, 0.5, 0.3 }, { 0.6, 0.1, 0.3 } }
    local L = { { 1 }, { 2 } }
    local LT = ints(L)
    local r = CF.build(function()
      local p, l = data("p", { 2, 3 }), data("l", { 2, 1 }, "int64")
      local loss = layers.dice_loss{ input = p, label = l }
      return loss, { p }, { loss }
    end)
    local sum = 0
    for i = 1, 2 do
      local inse, den = 0, 1
      for j = 1, 3 do
        if j - 1 == L[i][1] then inse = inse + P[i][j] end
        den = den + P[i][j]
      end
      sum = sum + 1 - 2 * inse / (den + 1e-5)
    end
    local got = CF.flat(CF.run(r, { p = P, l = LT }, r.extra)[1])
    close(got, { sum / 2 }, 1e-6)   -- epsilon reaches the scale op as a float32 attribute
    CF.check_grads(r, { p = P, l = LT })
  end)
end)

describe("loss layers over single ops", function()
  -- builds out = make(x, y) and returns its forward values
  local function run(make, feeds, shapes)
    local out
    local r = CF.build(function()
      local vars = {}
      for i, s in ipairs(shapes) do vars[i] = data(s[1], s[2], s[3]) end
      out = make(unpack(vars))
      return layers.reduce_sum(out), { vars[1] }, { out }
    end)
    return CF.flat(CF.run(r, feeds, r.extra)[1]), r
  end

  it("smooth_l1 sums rows with sigma 1 by default", function()
    local got, r = run(function(x, y) return layers.smooth_l1(x, y) end, { x = X, y = Y }, { { "x", { 2, 3 } }, { "y", { 2, 3 } } })
    local want = {}
    for i = 1, 2 do
      local s = 0
      for j = 1, 3 do
        local d = math.abs(X[i][j] - Y[i][j])
        s = s + (d < 1 and 0.5 * d * d or d - 0.5)
      end
      want[i] = s
    end
    close(got, want, 1e-12)
    CF.check_grads(r, { x = X, y = Y })
  end)

  it("huber_loss, log_loss, kldiv_loss, rank losses, label_smooth, bpr_loss compute their ops", function()
    local got = run(function(x, y) return layers.huber_loss(x, y, 0.3) end, { x = X, y = Y },
      { { "x", { 2, 3 } }, { "y", { 2, 3 } } })
    local want = {}
    for i = 1, 2 do for j = 1, 3 do
      local r = Y[i][j] - X[i][j]
      want[#want + 1] = math.abs(r) <= 0.3 and 0.5 * r * r or 0.3 * (math.abs(r) - 0.15)
    end end
    close(got, want, 1e-6)
    local p, l = { { 0.3 }, { 0.8 } }, { { 1 }, { 0 } }
    got = run(function(x, y) return layers.log_loss{ input = x, label = y } end, { x = p, y = l },
      { { "x", { 2, 1 } }, { "y", { 2, 1 } } })
    close(got, { -math.log(0.3 + 1e-4), -math.log(1 - 0.8 + 1e-4) }, 1e-6)
    got = run(function(x, y) return layers.kldiv_loss{ x = x, target = y, reduction = "sum" } end, { x = X, y = Y },
      { { "x", { 2, 3 } }, { "y", { 2, 3 } } })
    local s = 0
    for i = 1, 2 do for j = 1, 3 do s = s + Y[i][j] * (math.log(Y[i][j]) - X[i][j]) end end
    close(got, { s }, 1e-12)
    local lab, a, b = { { 1 }, { -1 } }, { { 0.2 }, { 0.5 } }, { { 0.4 }, { 0.1 } }
    got = run(function(x, y, z) return layers.margin_rank_loss(y, x, z) end, { x = a, y = lab, z = b },
      { { "x", { 2, 1 } }, { "y", { 2, 1 } }, { "z", { 2, 1 } } })
    close(got, { math.max(0, -(0.2 - 0.4) + 0.1), math.max(0, (0.5 - 0.1) + 0.1) }, 1e-6)
    got = run(function(x, y, z) return layers.rank_loss{ label = y, left = x, right = z } end,
      { x = a, y = { { 1 }, { 0 } }, z = b }, { { "x", { 2, 1 } }, { "y", { 2, 1 } }, { "z", { 2, 1 } } })
    close(got, { math.log(1 + math.exp(-0.2)) + 0.2, math.log(1 + math.exp(0.4)) }, 1e-12)
    got = run(function(x) return layers.label_smooth{ label = x, dtype = "float64" } end,
      { x = { { 0, 1, 0 }, { 1, 0, 0 } } }, { { "x", { 2, 3 } } })
    local e = tonumber(require("ffi").new("float", 0.1))
    close(got, { e / 3, 1 - e + e / 3, e / 3, 1 - e + e / 3, e / 3, e / 3 }, 1e-12)
    got = run(function(x, y) return layers.bpr_loss(x, y) end, { x = X, y = ints({ { 1 }, { 0 } }) },
      { { "x", { 2, 3 } }, { "y", { 2, 1 }, "int64" } })
    local function lsig(z) return -math.log(1 + math.exp(-z)) end
    close(got, { -(lsig(0.9 - 0.2) + lsig(0.9 - 0.4)) / 2, -(lsig(0.7 - 0.1) + lsig(0.7 - 0.55)) / 2 }, 1e-12)
  end)

  it("hinge_loss, modified_huber_loss, bce_loss, nll_loss, cross_entropy2 compute their ops", function()
    local s, l = { { 0.3 }, { -2.0 } }, { { 1 }, { 1 } }
    local got = run(function(x, y) return layers.hinge_loss(x, y) end, { x = s, y = l },
      { { "x", { 2, 1 } }, { "y", { 2, 1 } } })
    close(got, { 0.7, 3.0 }, 1e-12)
    got = run(function(x, y) return layers.modified_huber_loss(x, y) end, { x = s, y = l },
      { { "x", { 2, 1 } }, { "y", { 2, 1 } } })
    close(got, { 0.49, 8.0 }, 1e-12)
    got = run(function(x, y) return layers.bce_loss(x, y) end, { x = X, y = { { 1, 0, 1 }, { 0, 0, 1 } } },
      { { "x", { 2, 3 } }, { "y", { 2, 3 } } })
    close(got, { -math.log(0.2), -math.log(0.1), -math.log(0.4), -math.log(0.3), -math.log(0.9), -math.log(0.55) }, 1e-12)
    got = run(function(x, y) return layers.nll_loss{ input = x, label = y, reduction = "none" } end,
      { x = X, y = ints({ 2, 0 }) }, { { "x", { 2, 3 } }, { "y", { 2 }, "int64" } })
    close(got, { -0.4, -0.7 }, 1e-12)
    got = run(function(x, y) return layers.cross_entropy2(x, y) end, { x = X, y = ints({ { 1 }, { 2 } }) },
      { { "x", { 2, 3 } }, { "y", { 2, 1 }, "int64" } })
    close(got, { -math.log(0.9), -math.log(0.55) }, 1e-12)
  end)

  it("refuses unknown keys and bad values, naming the layer", function()
    oar.program_guard(oar.Program(), oar.Program(), function()
      local x, y = data("x", { 2, 3 }), data("y", { 2, 3 })
      expect_error(function() layers.smooth_l1{ x = x, y = y, sigmaa = 2 } end, "smooth_l1", "sigma")
      expect_error(function() layers.huber_loss{ input = x, label = y } end, "huber_loss", "delta")
      expect_error(function() layers.kldiv_loss{ x = x, target = y, reduction = "avg" } end, "kldiv_loss", "reduction")
      expect_error(function() layers.label_smooth{ label = x, epsilon = 2 } end, "label_smooth", "epsilon")
      expect_error(function() layers.mse_loss{ input = x, lable = y } end, "mse_loss", "label")
    end)
  end)
end)
