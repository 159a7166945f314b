-- dropout: mask semantics, keep ratio over many elements, both
-- implementations in train and test mode, seeding, gradients, errors.
local T = require("spec.helpers.op_test")

local function ramp(n, dtype)
  local v = {}
  for i = 1, n do v[i] = (i % 17) * 0.25 - 2 + i * 1e-3 end
  return T.tensor(v, { shape = { n }, dtype = dtype })
end

local function run(x, attrs, outs)
  return T.run{ type = "dropout", inputs = { X = x }, attrs = attrs, outputs = outs or { Out = 1, Mask = 1 } }
end

local function err_of(fn)
  local ok, err = pcall(fn)
  assert.is_false(ok, "expected an error")
  return tostring(err)
end

local function count_kept(mask)
  local k = 0
  for _, m in ipairs(mask.data) do k = k + m end
  return k
end

describe("dropout forward (training)", function()
  for _, dtype in ipairs({ "float64", "float32" }) do
    it("downgrade_in_infer: Out = X * Mask with a 0/1 uint8 mask (" .. dtype .. ")", function()
      local x = ramp(1000, dtype)
      local r = run(x, { dropout_prob = 0.4, fix_seed = true, seed = 3 })
      local out, mask = r.Out[1], r.Mask[1]
      assert.equals("uint8", mask.dtype)
      assert.same({ 1000 }, mask.shape)
      local want = {}
      for i, m in ipairs(mask.data) do
        assert.is_true(m == 0 or m == 1)
        want[i] = x.data[i] * m
      end
      T.assert_close(out, { shape = { 1000 }, data = want }, dtype == "float32" and 1e-6 or 0, 0, "Out")
    end)

    it("upscale_in_train: Out = X * Mask / (1 - p) (" .. dtype .. ")", function()
      local x = ramp(1000, dtype)
      local r = run(x, { dropout_prob = 0.25, fix_seed = true, seed = 5, dropout_implementation = "upscale_in_train" })
      local want = {}
      for i, m in ipairs(r.Mask[1].data) do want[i] = x.data[i] * m / 0.75 end
      T.assert_close(r.Out[1], { shape = { 1000 }, data = want }, dtype == "float32" and 1e-6 or 1e-15, 0, "Out")
    end)
  end

  it("keeps a 1 - p share of many elements", function()
    -- 200000 Bernoulli draws: the standard deviation of the kept share is
    -- about 0.001, so 0.006 is a 6-sigma band
    for _, p in ipairs({ 0.1, 0.5, 0.8 }) do
      local n = 200000
      local x = ramp(n)
      local mask = run(x, { dropout_prob = p }).Mask[1]
      local share = count_kept(mask) / n
      assert.is_true(math.abs(share - (1 - p)) < 0.006, ("p=%g: kept share %g"):format(p, share))
    end
  end)

  it("handles an empty input", function()
    local r = run(T.tensor({}, { shape = { 0, 3 } }), { dropout_prob = 0.5 })
    assert.same({ 0, 3 }, r.Out[1].shape)
    assert.same({ 0, 3 }, r.Mask[1].shape)
  end)

  it("keeps everything at p = 0 and nothing at p = 1", function()
    local x = ramp(64)
    local r0 = run(x, { dropout_prob = 0 })
    assert.equals(64, count_kept(r0.Mask[1]))
    T.assert_close(r0.Out[1], { shape = { 64 }, data = x.data }, 0, 0, "Out")
    local r1 = run(x, { dropout_prob = 1, dropout_implementation = "upscale_in_train" })
    assert.equals(0, count_kept(r1.Mask[1]))
    for _, v in ipairs(r1.Out[1].data) do assert.equals(0, v) end
  end)

  it("repeats its mask with fix_seed, and changes it with the seed", function()
    local x = ramp(500)
    local a = run(x, { dropout_prob = 0.5, fix_seed = true, seed = 42 }).Mask[1].data
    local b = run(x, { dropout_prob = 0.5, fix_seed = true, seed = 42 }).Mask[1].data
    local c = run(x, { dropout_prob = 0.5, fix_seed = true, seed = 43 }).Mask[1].data
    assert.same(a, b)
    assert.are_not.same(a, c)
  end)

  it("draws a fresh mask on every run without fix_seed", function()
    local x = ramp(500)
    local a = run(x, { dropout_prob = 0.5 }).Mask[1].data
    local b = run(x, { dropout_prob = 0.5 }).Mask[1].data
    assert.are_not.same(a, b)
  end)

  it("keeps the input's shape and LoD", function()
    local x = T.tensor({ 1, 2, 3, 4, 5, 6 }, { shape = { 3, 2 }, lod = { { 0, 1, 3 } } })
    local r = run(x, { dropout_prob = 0.5 })
    assert.same({ 3, 2 }, r.Out[1].shape)
    assert.same({ { 0, 1, 3 } }, r.Out[1].lod)
  end)
end)

describe("dropout forward (is_test)", function()
  for _, dtype in ipairs({ "float64", "float32" }) do
    it("downgrade_in_infer scales by 1 - p (" .. dtype .. ")", function()
      local x = ramp(40, dtype)
      local want = {}
      -- dropout_prob is a float32 attr: 0.3 rounds to 0.30000001192...
      local p = tonumber(require("ffi").new("float", 0.3))
      for i, v in ipairs(x.data) do want[i] = v * (1 - p) end
      T.check_output{ type = "dropout", inputs = { X = x }, attrs = { dropout_prob = 0.3, is_test = true },
        outputs = { Out = 1 }, expect = { Out = { shape = { 40 }, data = want } },
        atol = dtype == "float32" and 1e-6 or 1e-15 }
    end)
    it("upscale_in_train passes X through (" .. dtype .. ")", function()
      local x = ramp(40, dtype)
      T.check_output{ type = "dropout", inputs = { X = x },
        attrs = { dropout_prob = 0.3, is_test = true, dropout_implementation = "upscale_in_train" },
        outputs = { Out = 1 }, expect = { Out = { shape = { 40 }, data = x.data } },
        atol = dtype == "float32" and 1e-6 or 0 }
    end)
  end
end)

describe("dropout gradients", function()
  local x = T.tensor({ 0.5, -1, 2, 0.25, -0.75, 1.5, 3, -2, 1, 0.1, -0.3, 0.8 }, { shape = { 3, 4 } })
  it("downgrade_in_infer (fixed seed)", function()
    T.check_grad{ type = "dropout", inputs = { X = x }, attrs = { dropout_prob = 0.5, fix_seed = true, seed = 9 },
      outputs = { Out = 1, Mask = 1 }, wrt = { "X" }, of = { "Out" } }
  end)
  it("upscale_in_train (fixed seed)", function()
    T.check_grad{ type = "dropout", inputs = { X = x },
      attrs = { dropout_prob = 0.35, fix_seed = true, seed = 10, dropout_implementation = "upscale_in_train" },
      outputs = { Out = 1, Mask = 1 }, wrt = { "X" }, of = { "Out" } }
  end)
  it("dropout_grad multiplies by the mask (and 1 / (1 - p) when upscaling)", function()
    local mask = T.tensor({ 1, 0, 1, 1 }, { shape = { 4 }, dtype = "uint8" })
    local dy = T.tensor({ 2, 3, -4, 0.5 }, { shape = { 4 } })
    local r = T.run{ type = "dropout_grad", inputs = { Mask = mask, ["Out@GRAD"] = dy },
      attrs = { dropout_prob = 0.5 }, outputs = { ["X@GRAD"] = 1 } }
    T.assert_close(r["X@GRAD"][1], { shape = { 4 }, data = { 2, 0, -4, 0.5 } })
    r = T.run{ type = "dropout_grad", inputs = { Mask = mask, ["Out@GRAD"] = dy },
      attrs = { dropout_prob = 0.5, dropout_implementation = "upscale_in_train" }, outputs = { ["X@GRAD"] = 1 } }
    T.assert_close(r["X@GRAD"][1], { shape = { 4 }, data = { 4, 0, -8, 1 } })
  end)
end)

describe("dropout errors", function()
  it("rejects an unknown dropout_implementation", function()
    local e = err_of(function() run(ramp(4), { dropout_implementation = "scale_always" }) end)
    assert.truthy(e:find("dropout_implementation", 1, true) and e:find("scale_always", 1, true))
  end)
  it("rejects dropout_prob outside [0, 1]", function()
    assert.has_error(function() run(ramp(4), { dropout_prob = 1.5 }) end)
    assert.has_error(function() run(ramp(4), { dropout_prob = -0.1 }) end)
  end)
  it("rejects an integer input", function()
    local e = err_of(function() run(T.tensor({ 1, 2 }, { dtype = "int64" }), {}) end)
    assert.truthy(e:find("int64", 1, true))
  end)
  it("refuses a grad op in test mode", function()
    local e = err_of(function()
      T.run{ type = "dropout_grad",
        inputs = { Mask = T.tensor({ 1, 0 }, { dtype = "uint8" }), ["Out@GRAD"] = T.tensor({ 1, 2 }) },
        attrs = { is_test = true }, outputs = { ["X@GRAD"] = 1 } }
    end)
    assert.truthy(e:find("is_test", 1, true))
  end)
  it("rejects a Mask of another shape than Out@GRAD", function()
    local e = err_of(function()
      T.run{ type = "dropout_grad",
        inputs = { Mask = T.tensor({ 1, 0, 1 }, { dtype = "uint8" }), ["Out@GRAD"] = T.tensor({ 1, 2 }) },
        outputs = { ["X@GRAD"] = 1 } }
    end)
    assert.truthy(e:find("Mask", 1, true) and e:find("[3]", 1, true) and e:find("[2]", 1, true))
  end)
end)
