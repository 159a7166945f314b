-- reshape(2), squeeze(2), unsqueeze(2), flatten(2), transpose(2), concat,
-- split, stack: values against plain Lua references, LoD, errors, gradients,
-- and the view (shared buffer, copy-on-write) behaviour of the reshapes.
local ffi = require("ffi")
local T = require("spec.helpers.op_test")
local lib = require("oar.lib")
local C = lib.C

local expect_error = require("spec.helpers.expect_error")

local function iota(n, scale, off)
  local t = {}
  for i = 1, n do t[i] = (i - 1) * (scale or 1) + (off or 0) end
  return t
end

local numel = require("spec.helpers.index").numel

-- row-major strides
local function strides(shape)
  local s, acc = {}, 1
  for i = #shape, 1, -1 do s[i] = acc; acc = acc * shape[i] end
  return s
end

-- out[i0..] = x[idx permuted]: out dim j is x dim perm[j] (0-based perm)
local function transpose_ref(data, shape, perm)
  local oshape = {}
  for j = 1, #perm do oshape[j] = shape[perm[j] + 1] end
  local xs, os_ = strides(shape), strides(oshape)
  local out = {}
  for o = 0, numel(oshape) - 1 do
    local rem, src = o, 0
    for j = 1, #oshape do
      local idx = math.floor(rem / os_[j])
      rem = rem % os_[j]
      src = src + idx * xs[perm[j] + 1]
    end
    out[o + 1] = data[src + 1]
  end
  return out, oshape
end

-- slices [lo, hi) along axis (0-based) of a row-major tensor
local function slice_ref(data, shape, axis, lo, hi)
  local outer = 1
  for i = 1, axis do outer = outer * shape[i] end
  local inner = 1
  for i = axis + 2, #shape do inner = inner * shape[i] end
  local out = {}
  for o = 0, outer - 1 do
    for a = lo, hi - 1 do
      for q = 0, inner - 1 do
        out[#out + 1] = data[(o * shape[axis + 1] + a) * inner + q + 1]
      end
    end
  end
  return out
end

local DTYPES = { "float64", "float32" }

describe("reshape", function()
  local X = iota(24, 0.5, -3)
  for _, dt in ipairs(DTYPES) do
    it("applies 0 (copy) and -1 (infer) in the shape attr (" .. dt .. ")", function()
      local x = T.tensor(X, { shape = { 2, 3, 4 }, dtype = dt })
      T.check_output{ type = "reshape", inputs = { X = x }, attrs = { shape = { 4, -1 } },
        expect = { Out = { shape = { 4, 6 }, data = X } } }
      T.check_output{ type = "reshape", inputs = { X = x }, attrs = { shape = { 0, -1 } },
        expect = { Out = { shape = { 2, 12 }, data = X } } }
      T.check_output{ type = "reshape2", inputs = { X = x }, attrs = { shape = { 0, 0, 2, 2 } },
        expect = { Out = { shape = { 2, 3, 2, 2 }, data = X }, XShape = { shape = { 0, 2, 3, 4 }, data = {} } } }
    end)
  end

  it("reshapes int64 and bool tensors", function()
    local r = T.run{ type = "reshape", attrs = { shape = { 3, 2 } },
      inputs = { X = T.tensor({ 1, -2, 3, -4, 5, 2 ^ 40 }, { shape = { 2, 3 }, dtype = "int64" }) } }
    assert.are.same({ 3, 2 }, r.Out[1].shape)
    assert.are.same({ 1, -2, 3, -4, 5, 2 ^ 40 }, r.Out[1].data)
    r = T.run{ type = "reshape2", attrs = { shape = { -1 } },
      inputs = { X = T.tensor({ { true, false }, { false, true } }, { dtype = "bool" }) } }
    assert.are.same({ true, false, false, true }, r.Out[1].data)
  end)

  it("keeps the LoD only when the first dimension is unchanged", function()
    local x = T.tensor(iota(12), { shape = { 3, 4 }, lod = { { 0, 1, 3 } } })
    local r = T.run{ type = "reshape", inputs = { X = x }, attrs = { shape = { 0, 2, 2 } } }
    assert.are.same({ { 0, 1, 3 } }, r.Out[1].lod)
    r = T.run{ type = "reshape", inputs = { X = x }, attrs = { shape = { 6, 2 } } }
    assert.are.same({}, r.Out[1].lod)
  end)

  it("takes the shape from the Shape input over the attr", function()
    local x = T.tensor(X, { shape = { 2, 3, 4 } })
    T.check_output{ type = "reshape", attrs = { shape = { 1, 24 } },
      inputs = { X = x, Shape = T.tensor({ 3, 8 }, { shape = { 2 }, dtype = "int32" }) },
      expect = { Out = { shape = { 3, 8 }, data = X } } }
    T.check_output{ type = "reshape2", attrs = { shape = { 1, 24 } },
      inputs = { X = x, Shape = T.tensor({ 4, -1 }, { shape = { 2 }, dtype = "int64" }) },
      expect = { Out = { shape = { 4, 6 }, data = X } } }
    -- ShapeTensor (one value per tensor) wins over Shape
    T.check_output{ type = "reshape2", attrs = { shape = { -1, -1 } },
      inputs = { X = x, Shape = T.tensor({ 4, 6 }, { shape = { 2 }, dtype = "int32" }),
                 ShapeTensor = { T.tensor({ 8 }, { shape = { 1 }, dtype = "int32" }),
                                 T.tensor({ 0 }, { shape = { 1 }, dtype = "int32" }) } },
      expect = { Out = { shape = { 8, 3 }, data = X } } }
  end)

  it("rejects shapes that do not fit", function()
    local x = T.tensor(X, { shape = { 2, 3, 4 } })
    expect_error(function() T.run{ type = "reshape", inputs = { X = x }, attrs = { shape = { 5, 5 } } } end,
      "reshape", "in_X_1", "[2, 3, 4]", "24 elements", "[5, 5]", "25 elements")
    expect_error(function() T.run{ type = "reshape", inputs = { X = x }, attrs = { shape = { -1, -1 } } } end,
      "reshape", "only one")
    expect_error(function() T.run{ type = "reshape", inputs = { X = x }, attrs = { shape = { 5, -1 } } } end,
      "reshape", "cannot be inferred")
    expect_error(function() T.run{ type = "reshape", inputs = { X = x }, attrs = { shape = { 1, 1, 1, 0 } } } end,
      "shape[3] = 0", "[2, 3, 4]")
    expect_error(function() T.run{ type = "reshape2", inputs = { X = x }, attrs = { shape = { -2, 12 } } } end,
      "reshape2", "shape[0] = -2")
    expect_error(function() T.run{ type = "reshape", inputs = { X = x }, attrs = { shape = {} } } end,
      "reshape", "attr shape is empty")
    -- a run-time Shape that does not fit
    expect_error(function()
      T.run{ type = "reshape", attrs = { shape = { 1, 24 } },
        inputs = { X = x, Shape = T.tensor({ 5, 5 }, { shape = { 2 }, dtype = "int32" }) } }
    end, "reshape", "25 elements")
  end)

  it("has gradients (v1 from X, v2 from XShape)", function()
    local x = T.tensor(iota(12, 0.3, -1), { shape = { 3, 4 } })
    T.check_grad{ type = "reshape", inputs = { X = x }, attrs = { shape = { 2, -1, 2 } }, wrt = { "X" } }
    T.check_grad{ type = "reshape2", inputs = { X = x }, attrs = { shape = { -1 } }, wrt = { "X" } }
  end)
end)

-- runs a hand-built program on C tensors, returning the fetched C tensors
local function new_program()
  local pp = ffi.new("oar_program_t*[1]")
  lib.check(C.oar_program_new(pp))
  local prog = ffi.gc(pp[0], C.oar_program_free)
  return prog, C.oar_program_block(prog, 0)
end

local function declare(block, name, shape, dtype)
  local vp = ffi.new("oar_var_desc_t*[1]")
  lib.check(C.oar_block_var_new(block, name, vp))
  local dims = ffi.new("int64_t[?]", #shape, shape)
  lib.check(C.oar_var_desc_set_shape(vp[0], dims, #shape))
  lib.check(C.oar_var_desc_set_dtype(vp[0], T.DTYPES[dtype or "float64"]))
  return vp[0]
end

local function run_c(prog, feeds, fetch)
  local ep = ffi.new("oar_executor_t*[1]")
  lib.check(C.oar_executor_new(0, 0, ep))
  local exe = ffi.gc(ep[0], C.oar_executor_free)
  local sp = ffi.new("oar_scope_t*[1]")
  lib.check(C.oar_scope_new(sp))
  local scope = ffi.gc(sp[0], C.oar_scope_free)
  local names, ts = {}, ffi.new("oar_tensor_t*[?]", 4)
  for name, t in pairs(feeds) do
    names[#names + 1] = name
    ts[#names - 1] = t
  end
  local out = ffi.new("oar_tensor_t*[?]", #fetch)
  lib.check(C.oar_executor_run(exe, prog, 0, scope, #names, lib.cstrings(names), ts,
    #fetch, lib.cstrings(fetch), out))
  local res = {}
  for i = 1, #fetch do res[i] = ffi.gc(out[i - 1], C.oar_tensor_free) end
  return res
end

describe("reshape views", function()
  local X = { 1, 2, 3, 4, 5, 6 }
  for _, op in ipairs({ "reshape", "reshape2", "squeeze", "unsqueeze2", "flatten" }) do
    it(op .. " computes a view, fetched as a copy where it would alias the caller's feed", function()
      local prog, block = new_program()
      declare(block, "x", { 2, 3 })
      local outs = { Out = { "y" } }
      if op:sub(-1) == "2" then outs.XShape = { "xs" } end
      local attrs = ({ reshape = { shape = { 3, 2 } }, reshape2 = { shape = { 6 } }, squeeze = { axes = {} },
                       unsqueeze2 = { axes = { 1 } }, flatten = { axis = 0 } })[op]
      T.append_op(block, op, { X = { "x" } }, outs, attrs)
      local feed = T.to_c(T.tensor(X, { shape = { 2, 3 } }))
      local y = run_c(prog, { x = feed }, { "y" })[1]
      -- a fetch never shares the fed tensor's buffer: writing into it must not change the input
      assert.are_not.equal(ffi.cast("uintptr_t", C.oar_tensor_data(feed)), ffi.cast("uintptr_t", C.oar_tensor_data(y)))
      local got = T.from_c(y)
      assert.are.same(X, got.data)
    end)
  end

  it("keeps its values when the viewed tensor is overwritten in place (copy-on-write)", function()
    local prog, block = new_program()
    declare(block, "x", { 2, 3 })
    T.append_op(block, "reshape", { X = { "x" } }, { Out = { "y" } }, { shape = { 3, 2 } })
    -- x = 2 * x in place, after the view was taken
    T.append_op(block, "scale", { X = { "x" } }, { Out = { "x" } }, { scale = 2.0 })
    T.append_op(block, "reshape", { X = { "x" } }, { Out = { "z" } }, { shape = { 6 } })
    local feed = T.to_c(T.tensor(X, { shape = { 2, 3 } }))
    local r = run_c(prog, { x = feed }, { "y", "z", "x" })
    assert.are.same(X, T.from_c(r[1]).data)
    assert.are.same({ 2, 4, 6, 8, 10, 12 }, T.from_c(r[2]).data)
    assert.are.same({ 2, 4, 6, 8, 10, 12 }, T.from_c(r[3]).data)
    -- the caller's fed tensor is untouched
    assert.are.same(X, T.from_c(feed).data)
  end)

  it("writing into the view leaves the input alone", function()
    local prog, block = new_program()
    declare(block, "x", { 2, 3 })
    T.append_op(block, "reshape", { X = { "x" } }, { Out = { "y" } }, { shape = { 6 } })
    T.append_op(block, "scale", { X = { "y" } }, { Out = { "y" } }, { scale = -1.0 })
    local feed = T.to_c(T.tensor(X, { shape = { 2, 3 } }))
    local r = run_c(prog, { x = feed }, { "y", "x" })
    assert.are.same({ -1, -2, -3, -4, -5, -6 }, T.from_c(r[1]).data)
    assert.are.same(X, T.from_c(r[2]).data)
    assert.are.same(X, T.from_c(feed).data)
  end)

  it("reshapes a variable in place (Out is X)", function()
    local prog, block = new_program()
    declare(block, "x", { 2, 3 })
    T.append_op(block, "scale", { X = { "x" } }, { Out = { "a" } }, { scale = 1.0 })
    T.append_op(block, "reshape", { X = { "a" } }, { Out = { "a" } }, { shape = { 3, 2 } })
    local r = run_c(prog, { x = T.to_c(T.tensor(X, { shape = { 2, 3 } })) }, { "a" })
    local a = T.from_c(r[1])
    assert.are.same({ 3, 2 }, a.shape)
    assert.are.same(X, a.data)
  end)
end)

describe("squeeze / unsqueeze / flatten", function()
  local X = iota(6, 1.5, -2)
  for _, dt in ipairs(DTYPES) do
    it("squeeze drops size-1 axes (" .. dt .. ")", function()
      local x = T.tensor(X, { shape = { 1, 3, 1, 2 }, dtype = dt })
      local cases = { { {}, { 3, 2 } }, { { 0 }, { 3, 1, 2 } }, { { -2 }, { 1, 3, 2 } },
                      { { 1 }, { 1, 3, 1, 2 } }, { { 0, 2 }, { 3, 2 } } }
      for _, cse in ipairs(cases) do
        T.check_output{ type = "squeeze", inputs = { X = x }, attrs = { axes = cse[1] },
          expect = { Out = { shape = cse[2], data = X } } }
      end
      T.check_output{ type = "squeeze2", inputs = { X = x }, attrs = { axes = { 0 } },
        expect = { Out = { shape = { 3, 1, 2 }, data = X }, XShape = { shape = { 0, 1, 3, 1, 2 }, data = {} } } }
      -- everything squeezed: [1]
      T.check_output{ type = "squeeze", inputs = { X = T.tensor({ 7 }, { shape = { 1, 1 }, dtype = dt }) },
        expect = { Out = { shape = { 1 }, data = { 7 } } } }
    end)

    it("unsqueeze inserts axes one after another (" .. dt .. ")", function()
      local x = T.tensor(X, { shape = { 3, 2 }, dtype = dt })
      local cases = { { { 0 }, { 1, 3, 2 } }, { { 0, 3 }, { 1, 3, 2, 1 } }, { { -1 }, { 3, 2, 1 } },
                      { { 1, 1 }, { 3, 1, 1, 2 } }, { { 2, -4 }, { 1, 3, 2, 1 } }, { { -2, 0 }, { 1, 3, 1, 2 } } }
      for _, cse in ipairs(cases) do
        T.check_output{ type = "unsqueeze", inputs = { X = x }, attrs = { axes = cse[1] },
          expect = { Out = { shape = cse[2], data = X } } }
      end
      T.check_output{ type = "unsqueeze2", inputs = { X = x }, attrs = { axes = { 1 } },
        expect = { Out = { shape = { 3, 1, 2 }, data = X }, XShape = { shape = { 0, 3, 2 }, data = {} } } }
    end)

    it("flatten folds around axis (" .. dt .. ")", function()
      local x = T.tensor(iota(24), { shape = { 2, 3, 4 }, dtype = dt })
      for _, cse in ipairs({ { 0, { 1, 24 } }, { 1, { 2, 12 } }, { 2, { 6, 4 } }, { 3, { 24, 1 } } }) do
        T.check_output{ type = "flatten", inputs = { X = x }, attrs = { axis = cse[1] },
          expect = { Out = { shape = cse[2], data = iota(24) } } }
      end
      T.check_output{ type = "flatten2", inputs = { X = x },
        expect = { Out = { shape = { 2, 12 }, data = iota(24) }, XShape = { shape = { 0, 2, 3, 4 }, data = {} } } }
    end)
  end

  it("pass the LoD when rows are kept", function()
    local x = T.tensor(iota(6), { shape = { 2, 1, 3 }, lod = { { 0, 2 } } })
    assert.are.same({ { 0, 2 } }, T.run{ type = "squeeze", inputs = { X = x }, attrs = { axes = { 1 } } }.Out[1].lod)
    assert.are.same({ { 0, 2 } }, T.run{ type = "unsqueeze2", inputs = { X = x }, attrs = { axes = { 3 } } }.Out[1].lod)
    assert.are.same({ { 0, 2 } }, T.run{ type = "flatten", inputs = { X = x } }.Out[1].lod)
    assert.are.same({}, T.run{ type = "unsqueeze", inputs = { X = x }, attrs = { axes = { 0 } } }.Out[1].lod)
  end)

  it("reject bad axes", function()
    local x = T.tensor(X, { shape = { 1, 3, 2 } })
    expect_error(function() T.run{ type = "squeeze", inputs = { X = x }, attrs = { axes = { 3 } } } end,
      "squeeze", "axes[0] = 3", "rank 3")
    expect_error(function() T.run{ type = "squeeze2", inputs = { X = x }, attrs = { axes = { -4 } } } end,
      "squeeze2", "axes[0] = -4")
    expect_error(function() T.run{ type = "unsqueeze", inputs = { X = x }, attrs = { axes = { 5 } } } end,
      "unsqueeze", "axes[0] = 5", "rank 3")
    expect_error(function() T.run{ type = "flatten", inputs = { X = x }, attrs = { axis = 4 } } end,
      "flatten", "axis = 4", "rank 3")
    expect_error(function() T.run{ type = "flatten2", inputs = { X = x }, attrs = { axis = -1 } } end,
      "flatten2", "axis = -1")
  end)

  it("have gradients", function()
    local x = T.tensor(iota(6, 0.7, -2), { shape = { 1, 3, 1, 2 } })
    T.check_grad{ type = "squeeze", inputs = { X = x }, attrs = { axes = { 0, 2 } }, wrt = { "X" } }
    T.check_grad{ type = "squeeze2", inputs = { X = x }, wrt = { "X" } }
    T.check_grad{ type = "unsqueeze", inputs = { X = x }, attrs = { axes = { 1 } }, wrt = { "X" } }
    T.check_grad{ type = "unsqueeze2", inputs = { X = x }, attrs = { axes = { -1 } }, wrt = { "X" } }
    T.check_grad{ type = "flatten", inputs = { X = x }, attrs = { axis = 2 }, wrt = { "X" } }
    T.check_grad{ type = "flatten2", inputs = { X = x }, attrs = { axis = 3 }, wrt = { "X" } }
  end)
end)

describe("transpose", function()
  for _, dt in ipairs(DTYPES) do
    it("permutes axes (" .. dt .. ")", function()
      local X = iota(24, 0.25, -1)
      for _, perm in ipairs({ { 1, 2, 0 }, { 2, 1, 0 }, { 0, 2, 1 }, { 0, 1, 2 }, { 1, 0, 2 } }) do
        local want, wshape = transpose_ref(X, { 2, 3, 4 }, perm)
        T.check_output{ type = "transpose", inputs = { X = T.tensor(X, { shape = { 2, 3, 4 }, dtype = dt }) },
          attrs = { axis = perm }, expect = { Out = { shape = wshape, data = want } } }
      end
    end)
  end

  it("handles large tiles, size-1 axes and 4-D layouts", function()
    local X = iota(37 * 45, 1, 0)
    local want, wshape = transpose_ref(X, { 37, 45 }, { 1, 0 })
    T.check_output{ type = "transpose2", inputs = { X = T.tensor(X, { shape = { 37, 45 } }) },
      attrs = { axis = { 1, 0 } }, expect = { Out = { shape = wshape, data = want } } }
    local Y = iota(2 * 3 * 5 * 7)
    for _, perm in ipairs({ { 0, 2, 3, 1 }, { 0, 3, 1, 2 }, { 3, 2, 1, 0 }, { 1, 0, 3, 2 } }) do
      local w, ws = transpose_ref(Y, { 2, 3, 5, 7 }, perm)
      T.check_output{ type = "transpose", inputs = { X = T.tensor(Y, { shape = { 2, 3, 5, 7 } }) },
        attrs = { axis = perm }, expect = { Out = { shape = ws, data = w } } }
    end
    local Z = iota(12)
    local w, ws = transpose_ref(Z, { 3, 1, 4, 1 }, { 2, 1, 3, 0 })
    T.check_output{ type = "transpose", inputs = { X = T.tensor(Z, { shape = { 3, 1, 4, 1 } }) },
      attrs = { axis = { 2, 1, 3, 0 } }, expect = { Out = { shape = ws, data = w } } }
  end)

  it("moves int64, int32 and bool elements", function()
    local r = T.run{ type = "transpose", attrs = { axis = { 1, 0 } },
      inputs = { X = T.tensor({ { 1, 2 ^ 50, 3 }, { 4, 5, -6 } }, { dtype = "int64" }) } }
    assert.are.same({ 1, 4, 2 ^ 50, 5, 3, -6 }, r.Out[1].data)
    r = T.run{ type = "transpose", attrs = { axis = { 1, 0 } },
      inputs = { X = T.tensor({ { 1, 2 }, { 3, 4 } }, { dtype = "int32" }) } }
    assert.are.same({ 1, 3, 2, 4 }, r.Out[1].data)
    r = T.run{ type = "transpose2", attrs = { axis = { 1, 0 } },
      inputs = { X = T.tensor({ { true, true }, { false, false } }, { dtype = "bool" }) } }
    assert.are.same({ true, false, true, false }, r.Out[1].data)
  end)

  it("validates the permutation", function()
    local x = T.tensor(iota(6), { shape = { 2, 3 } })
    expect_error(function() T.run{ type = "transpose", inputs = { X = x }, attrs = { axis = { 0 } } } end,
      "transpose", "1 entries", "rank 2")
    expect_error(function() T.run{ type = "transpose", inputs = { X = x }, attrs = { axis = { 1, 1 } } } end,
      "transpose", "not a permutation")
    expect_error(function() T.run{ type = "transpose2", inputs = { X = x }, attrs = { axis = { 0, 2 } } } end,
      "transpose2", "axis[1] = 2")
  end)

  it("has gradients", function()
    local x = T.tensor(iota(24, 0.1, -1), { shape = { 2, 3, 4 } })
    T.check_grad{ type = "transpose", inputs = { X = x }, attrs = { axis = { 2, 0, 1 } }, wrt = { "X" } }
    T.check_grad{ type = "transpose2", inputs = { X = x }, attrs = { axis = { 1, 2, 0 } }, wrt = { "X" } }
  end)
end)

describe("concat", function()
  local A, B, Cc = iota(6, 1, 0), iota(2, 1, 100), iota(4, 1, 200)
  for _, dt in ipairs(DTYPES) do
    it("joins along an axis (" .. dt .. ")", function()
      local ins = { T.tensor(A, { shape = { 2, 3 }, dtype = dt }), T.tensor(B, { shape = { 2, 1 }, dtype = dt }),
                    T.tensor(Cc, { shape = { 2, 2 }, dtype = dt }) }
      local want = { 0, 1, 2, 100, 200, 201, 3, 4, 5, 101, 202, 203 }
      for _, axis in ipairs({ 1, -1 }) do
        T.check_output{ type = "concat", inputs = { X = ins }, attrs = { axis = axis },
          expect = { Out = { shape = { 2, 6 }, data = want } } }
      end
      T.check_output{ type = "concat", attrs = { axis = 0 },
        inputs = { X = { T.tensor(A, { shape = { 3, 2 }, dtype = dt }), T.tensor(B, { shape = { 1, 2 }, dtype = dt }) } },
        expect = { Out = { shape = { 4, 2 }, data = { 0, 1, 2, 3, 4, 5, 100, 101 } } } }
    end)
  end

  it("joins LoDs along axis 0 and keeps X[0]'s on other axes", function()
    local r = T.run{ type = "concat", attrs = { axis = 0 }, inputs = { X = {
      T.tensor(iota(2), { shape = { 1, 2 }, lod = { { 0, 1 } } }),
      T.tensor(iota(6), { shape = { 3, 2 }, lod = { { 0, 2, 3 } } }) } } }
    assert.are.same({ 4, 2 }, r.Out[1].shape)
    assert.are.same({ { 0, 1, 3, 4 } }, r.Out[1].lod)
    r = T.run{ type = "concat", attrs = { axis = 1 }, inputs = { X = {
      T.tensor(iota(3), { shape = { 3, 1 }, lod = { { 0, 2, 3 } } }), T.tensor(iota(3), { shape = { 3, 1 } }) } } }
    assert.are.same({ { 0, 2, 3 } }, r.Out[1].lod)
  end)

  it("concatenates int64 ids", function()
    local r = T.run{ type = "concat", attrs = { axis = 0 }, inputs = { X = {
      T.tensor({ 1, 2 }, { shape = { 2, 1 }, dtype = "int64" }), T.tensor({ 2 ^ 40 }, { shape = { 1, 1 }, dtype = "int64" }) } } }
    assert.are.same({ 1, 2, 2 ^ 40 }, r.Out[1].data)
  end)

  it("rejects mismatched inputs and bad axes", function()
    local a, b = T.tensor(A, { shape = { 2, 3 } }), T.tensor(A, { shape = { 3, 2 } })
    expect_error(function() T.run{ type = "concat", inputs = { X = { a, b } }, attrs = { axis = 1 } } end,
      "concat", "X[1]", "[3, 2]", "[2, 3]")
    expect_error(function() T.run{ type = "concat", inputs = { X = { a, a } }, attrs = { axis = 2 } } end,
      "concat", "axis = 2", "rank 2")
    expect_error(function()
      T.run{ type = "concat", inputs = { X = { a, T.tensor(A, { shape = { 2, 3 }, dtype = "float32" }) } } }
    end, "concat", "dtype")
  end)

  it("has gradients", function()
    T.check_grad{ type = "concat", attrs = { axis = 1 }, wrt = { "X" }, inputs = { X = {
      T.tensor(iota(6, 0.3), { shape = { 2, 3 } }), T.tensor(iota(4, -0.2), { shape = { 2, 2 } }) } } }
    T.check_grad{ type = "concat", attrs = { axis = 0 }, wrt = { "X" }, inputs = { X = {
      T.tensor(iota(2, 0.3), { shape = { 1, 2 } }), T.tensor(iota(4, -0.2), { shape = { 2, 2 } }) } } }
  end)
end)

describe("split", function()
  local X = iota(24, 0.5)
  for _, dt in ipairs(DTYPES) do
    it("cuts into num equal parts or sections (" .. dt .. ")", function()
      local x = T.tensor(X, { shape = { 4, 6 }, dtype = dt })
      T.check_output{ type = "split", inputs = { X = x }, attrs = { num = 3, axis = 1 }, outputs = { Out = 3 },
        expect = { Out = { { shape = { 4, 2 }, data = slice_ref(X, { 4, 6 }, 1, 0, 2) },
                           { shape = { 4, 2 }, data = slice_ref(X, { 4, 6 }, 1, 2, 4) },
                           { shape = { 4, 2 }, data = slice_ref(X, { 4, 6 }, 1, 4, 6) } } } }
      T.check_output{ type = "split", inputs = { X = x }, attrs = { sections = { 1, -1, 2 } }, outputs = { Out = 3 },
        expect = { Out = { { shape = { 1, 6 }, data = slice_ref(X, { 4, 6 }, 0, 0, 1) },
                           { shape = { 1, 6 }, data = slice_ref(X, { 4, 6 }, 0, 1, 2) },
                           { shape = { 2, 6 }, data = slice_ref(X, { 4, 6 }, 0, 2, 4) } } } }
      T.check_output{ type = "split", inputs = { X = x }, attrs = { sections = { 5, 1 }, axis = -1 },
        outputs = { Out = 2 },
        expect = { Out = { { shape = { 4, 5 }, data = slice_ref(X, { 4, 6 }, 1, 0, 5) },
                           { shape = { 4, 1 }, data = slice_ref(X, { 4, 6 }, 1, 5, 6) } } } }
    end)
  end

  it("rejects parts that do not fit", function()
    local x = T.tensor(X, { shape = { 4, 6 } })
    expect_error(function() T.run{ type = "split", inputs = { X = x }, attrs = { num = 4, axis = 1 }, outputs = { Out = 4 } } end,
      "split", "6", "num = 4")
    expect_error(function() T.run{ type = "split", inputs = { X = x }, attrs = { sections = { 1, 2 } }, outputs = { Out = 2 } } end,
      "split", "sum to 3", "size 4")
    expect_error(function() T.run{ type = "split", inputs = { X = x }, attrs = { num = 2 }, outputs = { Out = 3 } } end,
      "split", "3 variables", "2 parts")
    expect_error(function() T.run{ type = "split", inputs = { X = x }, attrs = { num = 2, axis = 2 }, outputs = { Out = 2 } } end,
      "split", "axis = 2")
    expect_error(function() T.run{ type = "split", inputs = { X = x }, outputs = { Out = 2 } } end,
      "split", "neither")
  end)

  it("has a gradient (a concat of the part gradients)", function()
    T.check_grad{ type = "split", inputs = { X = T.tensor(iota(12, 0.4, -2), { shape = { 3, 4 } }) },
      attrs = { sections = { 1, 3 }, axis = 1 }, outputs = { Out = 2 }, wrt = { "X" } }
  end)

  it("fills zeros for parts the loss does not use", function()
    local prog, block = new_program()
    declare(block, "x", { 3, 4 })
    T.append_op(block, "split", { X = { "x" } }, { Out = { "p1", "p2", "p3", "p4" } }, { num = 4, axis = 1 })
    T.append_op(block, "mean", { X = { "p2" } }, { Out = { "loss" } }, {})
    local grads = ffi.new("char**[1]")
    lib.check(C.oar_backward_gradients(prog, lib.cstrings({ "loss" }), 1, nil, lib.cstrings({ "x" }), 1,
      nil, 0, grads))
    local gname = ffi.string(grads[0][0])
    C.oar_strings_free(grads[0], 1)
    local g = T.run_program(prog, { x = T.tensor(iota(12), { shape = { 3, 4 } }) }, { gname })[1]
    assert.are.same({ 3, 4 }, g.shape)
    -- mean over p2 (column 1 of each row, 3 entries): 1/3 there, 0 elsewhere
    for i = 1, 12 do
      local col = (i - 1) % 4
      assert.is_true(math.abs(g.data[i] - (col == 1 and 1 / 3 or 0)) < 1e-12, "element " .. i)
    end
  end)
end)

describe("stack", function()
  local A, B = iota(6), iota(6, 1, 10)
  for _, dt in ipairs(DTYPES) do
    it("stacks along a new axis (" .. dt .. ")", function()
      local ins = { T.tensor(A, { shape = { 2, 3 }, dtype = dt }), T.tensor(B, { shape = { 2, 3 }, dtype = dt }) }
      T.check_output{ type = "stack", inputs = { X = ins }, attrs = { axis = 0 },
        expect = { Y = { shape = { 2, 2, 3 }, data = { 0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15 } } } }
      T.check_output{ type = "stack", inputs = { X = ins }, attrs = { axis = 1 },
        expect = { Y = { shape = { 2, 2, 3 }, data = { 0, 1, 2, 10, 11, 12, 3, 4, 5, 13, 14, 15 } } } }
      T.check_output{ type = "stack", inputs = { X = ins }, attrs = { axis = -1 },
        expect = { Y = { shape = { 2, 3, 2 }, data = { 0, 10, 1, 11, 2, 12, 3, 13, 4, 14, 5, 15 } } } }
    end)
  end

  it("rejects shape mismatches and bad axes", function()
    local a = T.tensor(A, { shape = { 2, 3 } })
    expect_error(function() T.run{ type = "stack", inputs = { X = { a, T.tensor(A, { shape = { 3, 2 } }) } } } end,
      "stack", "X[1]", "[3, 2]")
    expect_error(function() T.run{ type = "stack", inputs = { X = { a, a } }, attrs = { axis = 3 } } end,
      "stack", "axis = 3")
  end)

  it("has a gradient", function()
    T.check_grad{ type = "stack", attrs = { axis = 1 }, wrt = { "X" }, of = { "Y" }, inputs = { X = {
      T.tensor(iota(6, 0.3), { shape = { 2, 3 } }), T.tensor(iota(6, -0.2), { shape = { 2, 3 } }),
      T.tensor(iota(6, 0.1, 1), { shape = { 2, 3 } }) } } }
  end)
end)

describe("compile-time shapes with an unknown batch dimension", function()
  local function dims_of(block, name)
    local v = C.oar_block_find_var(block, name)
    assert.is_true(v ~= nil, "no var " .. name)
    local nd = C.oar_var_desc_ndim(v)
    local d = C.oar_var_desc_dims(v)
    local out = {}
    for i = 0, nd - 1 do out[i + 1] = tonumber(d[i]) end
    return out
  end

  it("infers -1 where the batch decides and runs with any batch", function()
    local prog, block = new_program()
    declare(block, "x", { -1, 2, 3 })
    declare(block, "y", { -1, 1, 4 })
    local ops = {
      { "reshape", { X = { "x" } }, { Out = { "r1" } }, { shape = { 0, -1 } }, { -1, 6 } },
      { "reshape2", { X = { "x" } }, { Out = { "r2" }, XShape = { "r2s" } }, { shape = { -1, 3 } }, { -1, 3 } },
      { "squeeze", { X = { "y" } }, { Out = { "s1" } }, { axes = {} }, { -1, 4 } },
      { "unsqueeze", { X = { "x" } }, { Out = { "u1" } }, { axes = { 1 } }, { -1, 1, 2, 3 } },
      { "flatten", { X = { "x" } }, { Out = { "f1" } }, { axis = 1 }, { -1, 6 } },
      { "flatten", { X = { "x" } }, { Out = { "f2" } }, { axis = 2 }, { -1, 3 } },
      { "transpose", { X = { "x" } }, { Out = { "t1" } }, { axis = { 2, 0, 1 } }, { 3, -1, 2 } },
      { "concat", { X = { "r1", "f1" } }, { Out = { "c1" } }, { axis = 1 }, { -1, 12 } },
      { "concat", { X = { "r1", "f1" } }, { Out = { "c0" } }, { axis = 0 }, { -1, 6 } },
      { "split", { X = { "r1" } }, { Out = { "p1", "p2" } }, { num = 2, axis = 1 }, { -1, 3 } },
      { "stack", { X = { "r1", "f1" } }, { Y = { "k1" } }, { axis = 1 }, { -1, 2, 6 } },
    }
    for _, o in ipairs(ops) do
      T.append_op(block, o[1], o[2], o[3], o[4])
      local first
      for _, names in pairs(o[3]) do first = first or names[1] end
      local out = o[3].Out and o[3].Out[1] or o[3].Y[1]
      assert.are.same(o[5], dims_of(block, out), o[1] .. " -> " .. out)
    end
    assert.are.same({ 0, -1, 2, 3 }, dims_of(block, "r2s"))
    -- copied unknown batch cancels, so the rest is checked at compile time
    expect_error(function() T.append_op(block, "reshape", { X = { "x" } }, { Out = { "bad" } }, { shape = { 0, 5 } }) end,
      "reshape", "[-1, 2, 3]", "known part", "[-1, 5]")
    -- an unknown dim that is not copied leaves -1 unknown
    T.append_op(block, "reshape", { X = { "x" } }, { Out = { "r3" } }, { shape = { 3, -1 } })
    assert.are.same({ 3, -1 }, dims_of(block, "r3"))
    local X = iota(4 * 6)
    local Y = iota(4 * 4)
    local r = T.run_program(prog, { x = T.tensor(X, { shape = { 4, 2, 3 } }), y = T.tensor(Y, { shape = { 4, 1, 4 } }) },
      { "r1", "s1", "t1", "c1", "c0", "p2", "k1" })
    assert.are.same({ 4, 6 }, r[1].shape)
    assert.are.same({ 4, 4 }, r[2].shape)
    assert.are.same({ 3, 4, 2 }, r[3].shape)
    assert.are.same({ 4, 12 }, r[4].shape)
    assert.are.same({ 8, 6 }, r[5].shape)
    assert.are.same({ 4, 3 }, r[6].shape)
    assert.are.same(slice_ref(X, { 4, 6 }, 1, 3, 6), r[6].data)
    assert.are.same({ 4, 2, 6 }, r[7].shape)
  end)
end)
