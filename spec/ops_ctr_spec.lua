-- cvm (issue 22): ports of Fluid 1.8's test_cvm_op.py with the reference
-- re-computed in plain Lua, Fluid's cvm_grad rule (the first two columns of
-- X@GRAD are the CVM values, the rest Y@GRAD), the layer
-- continuous_value_model, and errors naming the op and variable.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")
local expect_error = require("spec.helpers.expect_error")

local function cvm_ref(x, n, D, use_cvm)
  local y = {}
  for r = 0, n - 1 do
    if use_cvm then
      local a = math.log(x[r * D + 1] + 1)
      y[#y + 1] = a
      y[#y + 1] = math.log(x[r * D + 2] + 1) - a
      for j = 3, D do y[#y + 1] = x[r * D + j] end
    else
      for j = 3, D do y[#y + 1] = x[r * D + j] end
    end
  end
  return y
end

describe("cvm", function()
  -- TestCVMOpWithLodTensor: x [1, 11] with lod [[1]], use_cvm false
  it("a LoD input [1, 11], use_cvm false", function()
    local x = R.uniform(11, 3, 0, 1)
    T.check_output{ type = "cvm", dtype = "float32", attrs = { use_cvm = false },
                    inputs = { X = T.tensor(x, { shape = { 1, 11 }, lod = { { 0, 1 } }, dtype = "float32" }),
                               CVM = T.tensor({ 0.6, 0.4 }, { shape = { 1, 2 }, dtype = "float32" }) },
                    expect = { Y = { shape = { 1, 9 }, data = cvm_ref(x, 1, 11, false), lod = { { 0, 1 } } } },
                    atol = 1e-6 }
  end)

  -- TestCVMOpWithOutLodTensor1/2: x [2, 11], use_cvm true / false
  for _, use in ipairs({ true, false }) do
    for _, dt in ipairs({ "float32", "float64" }) do
      it(("x [2, 11], use_cvm %s (%s)"):format(tostring(use), dt), function()
        local x = R.uniform(22, 5, 0, 1)
        T.check_output{ type = "cvm", dtype = dt, attrs = { use_cvm = use },
                        inputs = { X = T.tensor(x, { shape = { 2, 11 }, dtype = dt }),
                                   CVM = T.tensor({ 0.6, 0.4 }, { shape = { 1, 2 }, dtype = dt }) },
                        expect = { Y = { shape = { 2, use and 11 or 9 }, data = cvm_ref(x, 2, 11, use) } },
                        atol = dt == "float32" and 1e-6 or 1e-12 }
      end)
    end
  end

  -- the test's cvm_grad_compute: DX[:, 0:2] = CVM, DX[:, 2:] = DY's non-cvm columns
  for _, use in ipairs({ true, false }) do
    it("grad follows Fluid's rule, use_cvm " .. tostring(use), function()
      local n, D = 3, 5
      local x, cvm = R.uniform(n * D, 7, 0, 1), R.uniform(n * 2, 9, 0, 1)
      local W = use and D or D - 2
      local g = T.analytic_grads{ type = "cvm", attrs = { use_cvm = use },
                                  inputs = { X = T.tensor(x, { shape = { n, D } }), CVM = T.tensor(cvm, { shape = { n, 2 } }) },
                                  wrt = { "X" }, of = { "Y" } }
      -- the loss is mean(Y): every Y@GRAD element is 1 / (n * W)
      local want = {}
      for r = 0, n - 1 do
        want[#want + 1] = cvm[r * 2 + 1]
        want[#want + 1] = cvm[r * 2 + 2]
        for _ = 3, D do want[#want + 1] = 1 / (n * W) end
      end
      T.assert_close(g[1], { shape = { n, D }, data = want }, 1e-12)
    end)
  end

  it("grad with a LoD: one CVM row per sequence", function()
    local x, cvm = R.uniform(4 * 4, 11, 0, 1), { 0.1, 0.2, 0.3, 0.4 }
    local g = T.analytic_grads{ type = "cvm", attrs = { use_cvm = true },
                                inputs = { X = T.tensor(x, { shape = { 4, 4 }, lod = { { 0, 3, 4 } } }),
                                           CVM = T.tensor(cvm, { shape = { 2, 2 } }) },
                                wrt = { "X" }, of = { "Y" } }
    local e = 1 / 16
    T.assert_close(g[1], { shape = { 4, 4 },
      data = { 0.1, 0.2, e, e, 0.1, 0.2, e, e, 0.1, 0.2, e, e, 0.3, 0.4, e, e } }, 1e-12)
  end)

  it("refuses X with fewer than 2 columns and a CVM that is not [batch, 2]", function()
    expect_error(function()
      T.run{ type = "cvm", inputs = { X = T.tensor({ 1, 2 }, { shape = { 2, 1 } }),
                                      CVM = T.tensor({ 1, 2 }, { shape = { 1, 2 } }) } }
    end, "cvm", "in_X", "show and click need 2")
    expect_error(function()
      T.run{ type = "cvm", inputs = { X = T.tensor({ 1, 2, 3, 4 }, { shape = { 2, 2 } }),
                                      CVM = T.tensor({ 1, 2, 3 }, { shape = { 1, 3 } }) } }
    end, "cvm", "in_CVM", "[batch, 2]")
  end)
end)

describe("oar.layers.continuous_value_model", function()
  local oar = require("oar")
  local A = require("spec.helpers.api")
  local layers = oar.layers

  it("builds cvm with Fluid's arguments and runs", function()
    local main, startup, y, y2 = A.build(function()
      local x = layers.data{ name = "x", shape = { 5 } }
      local c = layers.data{ name = "c", shape = { 2 } }
      return layers.continuous_value_model{ input = x, cvm = c },
             layers.continuous_value_model{ input = x, cvm = c, use_cvm = false }
    end)
    assert.are.same({ -1, 5 }, y.shape)
    assert.are.same({ -1, 3 }, y2.shape)
    local xs = R.uniform(10, 3, 0, 1)
    local got = A.run(main, startup, { x = oar.Tensor(xs, "float32"):reshape({ 2, 5 }),
                                       c = oar.Tensor({ 1, 0, 1, 0 }, "float32"):reshape({ 2, 2 }) }, { y, y2 })
    local function flat(t)
      local out = {}
      for _, row in ipairs(t:totable()) do for _, v in ipairs(row) do out[#out + 1] = v end end
      return out
    end
    T.assert_close({ data = flat(got[1]) }, { data = cvm_ref(xs, 2, 5, true) }, 1e-6)
    T.assert_close({ data = flat(got[2]) }, { data = cvm_ref(xs, 2, 5, false) }, 1e-6)
  end)

  it("refuses a missing cvm, naming the layer", function()
    A.build(function()
      local x = layers.data{ name = "x", shape = { 5 } }
      local e = A.errmsg(layers.continuous_value_model, { input = x })
      assert.is_truthy(e:find("continuous_value_model", 1, true) and e:find("cvm", 1, true), e)
    end)
  end)
end)
