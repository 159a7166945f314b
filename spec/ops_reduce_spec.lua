-- mean, reduce_{sum,mean,max,min,prod} and square_error_cost.
local ffi = require("ffi")
local T = require("spec.helpers.op_test")
local lib = require("oar.lib")
local C = lib.C

local expect_error = require("spec.helpers.expect_error")

-- Reference reduction: walks every multi-index of X in row-major order and
-- folds it into the Out element named by the kept axes.
local function reduce_ref(kind, data, shape, attrs)
  local nd = #shape
  local mask = {}
  if attrs.reduce_all then
    for i = 1, nd do mask[i] = true end
  else
    local dims = attrs.dim or { 0 }
    if #dims == 0 then dims = { 0 } end
    for _, d in ipairs(dims) do
      if d < 0 then d = d + nd end
      mask[d + 1] = true
    end
  end
  local oshape = {}
  for i = 1, nd do
    if not mask[i] then oshape[#oshape + 1] = shape[i]
    elseif attrs.keep_dim then oshape[#oshape + 1] = 1 end
  end
  if #oshape == 0 then oshape = { 1 } end
  local acc, cnt = {}, {}
  local idx = {}
  for i = 1, nd do idx[i] = 0 end
  for f = 1, #data do
    local o = 0
    for i = 1, nd do
      if not mask[i] then o = o * shape[i] + idx[i] end
    end
    o = o + 1
    local v = data[f]
    if acc[o] == nil then acc[o], cnt[o] = v, 1
    else
      cnt[o] = cnt[o] + 1
      if kind == "sum" or kind == "mean" then acc[o] = acc[o] + v
      elseif kind == "prod" then acc[o] = acc[o] * v
      elseif kind == "max" then acc[o] = math.max(acc[o], v)
      else acc[o] = math.min(acc[o], v) end
    end
    for i = nd, 1, -1 do
      idx[i] = idx[i] + 1
      if idx[i] < shape[i] then break end
      idx[i] = 0
    end
  end
  if kind == "mean" then
    for o = 1, #acc do acc[o] = acc[o] / cnt[o] end
  end
  return { shape = oshape, data = acc }
end

-- 2x3x4, all values distinct and at least 0.1 apart (no ties under +-delta)
local X234 = {}
for i = 1, 24 do X234[i] = ((i * 7) % 24 - 11.5) * 0.2 end
local POS234 = {}   -- for products: away from zero, modest magnitudes
for i = 1, 24 do POS234[i] = 0.6 + ((i * 5) % 24) * 0.05 end

local CASES = {
  { dim = { 0 } }, { dim = { 1 } }, { dim = { 2 } }, { dim = { -1 } }, { dim = { -3 } },
  { dim = { 0, 2 } }, { dim = { 1, -1 } }, { dim = { 0, 1, 2 } },
  { dim = { 1 }, keep_dim = true }, { dim = { 0, 2 }, keep_dim = true },
  { reduce_all = true }, { reduce_all = true, keep_dim = true },
}

local function case_name(c)
  local parts = {}
  if c.dim then parts[#parts + 1] = "dim={" .. table.concat(c.dim, ",") .. "}" end
  if c.keep_dim then parts[#parts + 1] = "keep_dim" end
  if c.reduce_all then parts[#parts + 1] = "reduce_all" end
  return table.concat(parts, " ")
end

for _, kind in ipairs({ "sum", "mean", "max", "min", "prod" }) do
  local optype = "reduce_" .. kind
  local input = kind == "prod" and POS234 or X234
  describe(optype, function()
    for _, c in ipairs(CASES) do
      for _, dt in ipairs({ "float64", "float32" }) do
        it(("reduces %s (%s)"):format(case_name(c), dt), function()
          local want = reduce_ref(kind, input, { 2, 3, 4 }, c)
          T.check_output{ type = optype, inputs = { X = T.tensor(input, { shape = { 2, 3, 4 }, dtype = dt }) },
            attrs = c, expect = { Out = want }, atol = dt == "float32" and 1e-4 or 1e-9,
            rtol = dt == "float32" and 1e-5 or 1e-12 }
        end)
      end
    end

    it("reduces axis 0 by default", function()
      local want = reduce_ref(kind, input, { 2, 3, 4 }, {})
      assert.are.same({ 3, 4 }, want.shape)
      T.check_output{ type = optype, inputs = { X = T.tensor(input, { shape = { 2, 3, 4 } }) },
        expect = { Out = want }, atol = 1e-9 }
    end)

    it("keeps the LoD when axis 0 survives", function()
      local x = T.tensor({ 1, 2, 3, 4, 5, 6 }, { shape = { 3, 2 }, lod = { { 0, 1, 3 } } })
      local want = reduce_ref(kind, x.data, { 3, 2 }, { dim = { 1 } })
      want.lod = { { 0, 1, 3 } }
      T.check_output{ type = optype, inputs = { X = x }, attrs = { dim = { 1 } }, expect = { Out = want } }
    end)

    if kind ~= "mean" then
      for _, dt in ipairs({ "int32", "int64" }) do
        it("reduces " .. dt, function()
          local ints = { 3, -1, 4, 1, -5, 9, 2, 6 }
          local want = reduce_ref(kind, ints, { 2, 4 }, { dim = { 1 } })
          local r = T.run{ type = optype, inputs = { X = T.tensor(ints, { shape = { 2, 4 }, dtype = dt }) },
            attrs = { dim = { 1 } } }
          assert.are.equal(dt, r.Out[1].dtype)
          assert.are.same(want.shape, r.Out[1].shape)
          assert.are.same(want.data, r.Out[1].data)
        end)
      end
    end

    for _, c in ipairs({ { dim = { 1 } }, { dim = { 0, 2 } }, { dim = { -1 }, keep_dim = true }, { reduce_all = true } }) do
      it("has the finite-difference gradient, " .. case_name(c), function()
        T.check_grad{ type = optype, inputs = { X = T.tensor(input, { shape = { 2, 3, 4 } }) },
          attrs = c, wrt = { "X" } }
      end)
    end

    it("rejects an axis out of range", function()
      expect_error(function()
        T.run{ type = optype, inputs = { X = T.tensor(input, { shape = { 2, 3, 4 } }) }, attrs = { dim = { 3 } } }
      end, optype, "dim[0] = 3", "rank 3")
      expect_error(function()
        T.run{ type = optype, inputs = { X = T.tensor(input, { shape = { 2, 3, 4 } }) }, attrs = { dim = { 1, -4 } } }
      end, optype, "dim[1] = -4")
    end)
  end)
end

-- d mean(op(X)) / dX from the backward pass (analytic values, for tie rules)
local function analytic_grad(optype, x, attrs)
  local pp = ffi.new("oar_program_t*[1]")
  lib.check(C.oar_program_new(pp))
  local prog = ffi.gc(pp[0], C.oar_program_free)
  local block = C.oar_program_block(prog, 0)
  local vp = ffi.new("oar_var_desc_t*[1]")
  lib.check(C.oar_block_var_new(block, "x", vp))
  local dims = ffi.new("int64_t[?]", #x.shape, x.shape)
  lib.check(C.oar_var_desc_set_shape(vp[0], dims, #x.shape))
  lib.check(C.oar_var_desc_set_dtype(vp[0], 6))
  T.append_op(block, optype, { X = { "x" } }, { Out = { "y" } }, attrs)
  T.append_op(block, "mean", { X = { "y" } }, { Out = { "loss" } }, {})
  local grads = ffi.new("char**[1]")
  lib.check(C.oar_backward_gradients(prog, lib.cstrings({ "loss" }), 1, nil, lib.cstrings({ "x" }), 1,
    nil, 0, grads))
  local gname = ffi.string(grads[0][0])
  C.oar_strings_free(grads[0], 1)
  return T.run_program(prog, { x = x }, { gname })[1]
end

describe("reduce_max / reduce_min gradients at ties", function()
  it("route the output gradient to every position equal to the extreme", function()
    -- row 1: max 5 twice, min 0 once; row 2: max 3 once, min -2 twice
    local x = T.tensor({ 5, 1, 5, 0, -2, 3, -2, 1 }, { shape = { 2, 4 } })
    local g = analytic_grad("reduce_max", x, { dim = { 1 } })
    -- mean over 2 outputs: each output gradient is 1/2
    assert.are.same({ 0.5, 0, 0.5, 0, 0, 0.5, 0, 0 }, g.data)
    g = analytic_grad("reduce_min", x, { dim = { 1 } })
    assert.are.same({ 0, 0, 0, 0.5, 0.5, 0, 0.5, 0 }, g.data)
  end)
end)

describe("reduce_prod gradient with zeros", function()
  it("is the product of the other elements", function()
    -- row 1 has one zero, row 2 two zeros, row 3 none
    local x = T.tensor({ 2, 0, 3, 0, 4, 0, 1, 2, 5 }, { shape = { 3, 3 } })
    local g = analytic_grad("reduce_prod", x, { dim = { 1 } })
    local s = 1 / 3
    assert.are.same({ 0, 6 * s, 0, 0, 0, 0, 10 * s, 5 * s, 2 * s }, g.data)
    T.check_grad{ type = "reduce_prod", inputs = { X = x }, attrs = { dim = { 1 } }, wrt = { "X" } }
  end)
end)

describe("mean", function()
  for _, dt in ipairs({ "float64", "float32" }) do
    it("averages every element into shape [1] (" .. dt .. ")", function()
      local s = 0
      for _, v in ipairs(X234) do s = s + v end
      T.check_output{ type = "mean", inputs = { X = T.tensor(X234, { shape = { 2, 3, 4 }, dtype = dt }) },
        expect = { Out = { shape = { 1 }, data = { s / 24 } } }, atol = dt == "float32" and 1e-6 or 1e-12 }
    end)
  end

  it("has gradient Out@GRAD / numel", function()
    T.check_grad{ type = "mean", inputs = { X = T.tensor(X234, { shape = { 4, 6 } }) }, wrt = { "X" } }
    local g = analytic_grad("mean", T.tensor({ 1, 2, 3, 4, 5 }, { shape = { 5 } }), {})
    assert.are.same({ 0.2, 0.2, 0.2, 0.2, 0.2 }, g.data)
  end)

  it("rejects an empty X", function()
    expect_error(function()
      T.run{ type = "mean", inputs = { X = T.tensor({}, { shape = { 0, 3 } }) } }
    end, "mean", "X", "empty")
  end)
end)

describe("square_error_cost", function()
  local x = { 0.5, -1, 2, 3.25, 0, -0.75 }
  local y = { 1, 1, -2, 3, 0.5, -0.75 }
  local want = {}
  for i = 1, #x do want[i] = (x[i] - y[i]) ^ 2 end

  for _, dt in ipairs({ "float64", "float32" }) do
    it("computes (X - Y)^2 elementwise with X's LoD (" .. dt .. ")", function()
      T.check_output{ type = "square_error_cost",
        inputs = { X = T.tensor(x, { shape = { 3, 2 }, dtype = dt, lod = { { 0, 2, 3 } } }),
                   Y = T.tensor(y, { shape = { 3, 2 }, dtype = dt }) },
        expect = { Out = { shape = { 3, 2 }, data = want, lod = { { 0, 2, 3 } } } } }
    end)
  end

  it("has gradients for both X and Y", function()
    T.check_grad{ type = "square_error_cost",
      inputs = { X = T.tensor(x, { shape = { 6, 1 } }), Y = T.tensor(y, { shape = { 6, 1 } }) }, wrt = { "X", "Y" } }
    T.check_grad{ type = "square_error_cost",
      inputs = { X = T.tensor(x, { shape = { 6, 1 } }), Y = T.tensor(y, { shape = { 6, 1 } }) },
      wrt = { "X" }, no_grad = { "Y" } }
  end)

  it("rejects shape and dtype mismatches", function()
    expect_error(function()
      T.run{ type = "square_error_cost", inputs = { X = T.tensor(x, { shape = { 3, 2 } }),
        Y = T.tensor(y, { shape = { 2, 3 } }) } }
    end, "square_error_cost", "[3, 2]", "[2, 3]")
    expect_error(function()
      T.run{ type = "square_error_cost", inputs = { X = T.tensor(x, { shape = { 6 } }),
        Y = T.tensor(y, { shape = { 6 }, dtype = "float32" }) } }
    end, "square_error_cost", "float64", "float32")
  end)
end)
