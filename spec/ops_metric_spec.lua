-- accuracy: top-k hits counted by hand, the top_k -> accuracy chain of the
-- book models, shapes and dtypes of the outputs, errors.
local ffi = require("ffi")
local T = require("spec.helpers.op_test")
local lib = require("oar.lib")
local C = lib.C

local expect_error = require("spec.helpers.expect_error")

local function ints(list, shape)
  return T.tensor(list, { shape = shape, dtype = "int64" })
end

describe("accuracy", function()
  local IND = { 0, 2, 1, 3, 2, 0, 3, 1 }     -- [4, 2]
  local LBL = { 2, 0, 2, 1 }                 -- hits: rows 0, 2, 3
  for _, dt in ipairs({ "float64", "float32" }) do
    it("counts rows whose label is among the top k (" .. dt .. ")", function()
      local r = T.check_output{ type = "accuracy",
        inputs = { Out = T.tensor({ 0.9, 0.1, 0.8, 0.2, 0.7, 0.3, 0.6, 0.4 }, { shape = { 4, 2 }, dtype = dt }),
                   Indices = ints(IND, { 4, 2 }), Label = ints(LBL, { 4, 1 }) },
        expect = { Accuracy = { shape = { 1 }, data = { 0.75 } }, Correct = { shape = { 1 }, data = { 3 } },
                   Total = { shape = { 1 }, data = { 4 } } } }
      assert.are.equal("float32", r.Accuracy[1].dtype)
      assert.are.equal("int32", r.Correct[1].dtype)
      assert.are.equal("int32", r.Total[1].dtype)
    end)
  end

  it("gives 0 for an empty batch", function()
    T.check_output{ type = "accuracy",
      inputs = { Out = T.tensor({}, { shape = { 0, 1 } }), Indices = ints({}, { 0, 1 }), Label = ints({}, { 0, 1 }) },
      expect = { Accuracy = { data = { 0 } }, Correct = { data = { 0 } }, Total = { data = { 0 } } } }
  end)

  it("scores top_k predictions (the book models' chain)", function()
    local pp = ffi.new("oar_program_t*[1]")
    lib.check(C.oar_program_new(pp))
    local prog = ffi.gc(pp[0], C.oar_program_free)
    local block = C.oar_program_block(prog, 0)
    for _, v in ipairs({ { "pred", { 5, 4 }, 6 }, { "label", { 5, 1 }, 3 } }) do
      local vp = ffi.new("oar_var_desc_t*[1]")
      lib.check(C.oar_block_var_new(block, v[1], vp))
      lib.check(C.oar_var_desc_set_shape(vp[0], ffi.new("int64_t[2]", v[2]), 2))
      lib.check(C.oar_var_desc_set_dtype(vp[0], v[3]))
    end
    local P = { 0.1, 0.6, 0.2, 0.1,   0.5, 0.1, 0.3, 0.1,   0.25, 0.25, 0.4, 0.1,   0.3, 0.3, 0.2, 0.2,
                0.05, 0.05, 0.1, 0.8 }
    local L = { 1, 2, 2, 1, 0 }
    local results = {}
    for _, k in ipairs({ 1, 2 }) do
      T.append_op(block, "top_k", { X = { "pred" } }, { Out = { "v" .. k }, Indices = { "i" .. k } }, { k = k })
      T.append_op(block, "accuracy", { Out = { "v" .. k }, Indices = { "i" .. k }, Label = { "label" } },
        { Accuracy = { "acc" .. k }, Correct = { "cor" .. k }, Total = { "tot" .. k } }, {})
    end
    results = T.run_program(prog, { pred = T.tensor(P, { shape = { 5, 4 } }), label = ints(L, { 5, 1 }) },
      { "acc1", "cor1", "acc2", "cor2", "tot2" })
    -- top-1: argmax per row = 1, 0, 2, 0 (tie 0/1 -> 0), 3; matches label in rows 0 and 2
    -- top-2: {1,2}, {0,2}, {2,0} (tie 0/1 -> 0), {0,1}, {3,2}: rows 0, 1, 2, 3 hit
    assert.are.same({ 2 }, results[2].data)
    assert.is_true(math.abs(results[1].data[1] - 0.4) < 1e-7)
    assert.are.same({ 4 }, results[4].data)
    assert.is_true(math.abs(results[3].data[1] - 0.8) < 1e-7)
    assert.are.same({ 5 }, results[5].data)
  end)

  it("rejects mismatched shapes and dtypes", function()
    local out = T.tensor({ 0.9, 0.1, 0.8, 0.2 }, { shape = { 2, 2 } })
    expect_error(function()
      T.run{ type = "accuracy", inputs = { Out = out, Indices = ints({ 0, 1, 1, 0 }, { 2, 2 }), Label = ints({ 0, 1, 1 }, { 3, 1 }) } }
    end, "accuracy", "Label", "[3, 1]", "[N, 1]")
    expect_error(function()
      T.run{ type = "accuracy", inputs = { Out = out, Indices = ints({ 0, 1 }, { 2, 1 }), Label = ints({ 0, 1 }, { 2, 1 }) } }
    end, "accuracy", "Indices", "[2, 1]", "[2, 2]")
    expect_error(function()
      T.run{ type = "accuracy", inputs = { Out = out, Indices = T.tensor({ 0, 1, 1, 0 }, { shape = { 2, 2 }, dtype = "int32" }),
        Label = ints({ 0, 1 }, { 2, 1 }) } }
    end, "accuracy", "Indices", "int32", "int64")
  end)

  it("has no gradient", function()
    assert.is_false(C.oar_op_has_grad("accuracy"))
    assert.is_false(C.oar_op_has_grad("arg_max"))
    assert.is_true(C.oar_op_has_grad("top_k"))
  end)
end)
