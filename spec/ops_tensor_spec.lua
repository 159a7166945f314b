-- assign, scale, cast, sum, fill_zeros_like, increment.
local ffi = require("ffi")
local T = require("spec.helpers.op_test")
local lib = require("oar.lib")
local C = lib.C

local DT = T.DTYPES

local expect_error = require("spec.helpers.expect_error")

local function map(t, f)
  local r = {}
  for i, v in ipairs(t) do r[i] = f(v, i) end
  return r
end

local X23 = { 1.5, -2, 0.25, 3, -0.5, 4 }

describe("assign", function()
  for _, dt in ipairs({ "float64", "float32" }) do
    it("copies values, shape and LoD (" .. dt .. ")", function()
      local x = T.tensor(X23, { shape = { 3, 2 }, dtype = dt, lod = { { 0, 1, 3 } } })
      T.check_output{ type = "assign", inputs = { X = x },
        expect = { Out = { shape = { 3, 2 }, data = X23, lod = { { 0, 1, 3 } } } } }
    end)
  end

  it("copies int64 and bool tensors", function()
    local r = T.run{ type = "assign", inputs = { X = T.tensor({ 5, -7, 9 }, { shape = { 3 }, dtype = "int64" }) } }
    assert.are.equal("int64", r.Out[1].dtype)
    assert.are.same({ 5, -7, 9 }, r.Out[1].data)
    r = T.run{ type = "assign", inputs = { X = T.tensor({ true, false }, { shape = { 2 }, dtype = "bool" }) } }
    assert.are.same({ true, false }, r.Out[1].data)
  end)

  it("passes the gradient through", function()
    T.check_grad{ type = "assign", inputs = { X = T.tensor(X23, { shape = { 2, 3 } }) }, wrt = { "X" } }
  end)

  it("copies a tensor array, unwritten slots included", function()
    lib.load_op_api()   -- tensor arrays from C (src/oar_op.h)
    local pp = ffi.new("oar_program_t*[1]")
    lib.check(C.oar_program_new(pp))
    local prog = ffi.gc(pp[0], C.oar_program_free)
    local block = C.oar_program_block(prog, 0)
    for _, name in ipairs({ "arr", "arr_copy" }) do
      local vp = ffi.new("oar_var_desc_t*[1]")
      lib.check(C.oar_block_var_new(block, name, vp))
      lib.check(C.oar_var_desc_set_type(vp[0], 13))   -- LOD_TENSOR_ARRAY
      lib.check(C.oar_var_desc_set_dtype(vp[0], DT.float64))
      lib.check(C.oar_var_desc_set_persistable(vp[0], true))
    end
    T.append_op(block, "assign", { X = { "arr" } }, { Out = { "arr_copy" } }, {})
    local sp = ffi.new("oar_scope_t*[1]")
    lib.check(C.oar_scope_new(sp))
    local scope = ffi.gc(sp[0], C.oar_scope_free)
    local vp = ffi.new("oar_variable_t*[1]")
    lib.check(C.oar_scope_var(scope, "arr", vp))
    local arr = ffi.cast("oar_tensor_array_t *", C.oar_var_array(vp[0]))
    assert.is_true(arr ~= nil, lib.last_error())
    lib.check(C.oar_array_resize(arr, 3))
    local items = { T.tensor({ 1, 2 }, { shape = { 2 } }), false, T.tensor({ 3, 4, 5 }, { shape = { 3, 1 } }) }
    for i, v in ipairs(items) do
      if v then arr.items[i - 1] = C.oar_tensor_retain(T.to_c(v)) end
    end
    local ep = ffi.new("oar_executor_t*[1]")
    lib.check(C.oar_executor_new(0, 0, ep))
    local exe = ffi.gc(ep[0], C.oar_executor_free)
    lib.check(C.oar_executor_run(exe, prog, 0, scope, 0, nil, nil, 0, nil, nil))
    -- the source may change afterwards without touching the copy
    ffi.cast("double*", C.oar_tensor_data(arr.items[0]))[0] = 100
    local out = C.oar_scope_find_var(scope, "arr_copy")
    assert.are.equal(3, C.oar_variable_array_size(out))
    local tp = ffi.new("oar_tensor_t*[1]")
    lib.check(C.oar_variable_array_get(out, 0, tp))
    local t0 = T.from_c(ffi.gc(tp[0], C.oar_tensor_free))
    assert.are.same({ 2 }, t0.shape)
    assert.are.same({ 1, 2 }, t0.data)
    lib.check(C.oar_variable_array_get(out, 1, tp))
    local t1 = ffi.gc(tp[0], C.oar_tensor_free)
    assert.is_true(C.oar_tensor_data(t1) == nil)
    lib.check(C.oar_variable_array_get(out, 2, tp))
    local t2 = T.from_c(ffi.gc(tp[0], C.oar_tensor_free))
    assert.are.same({ 3, 1 }, t2.shape)
    assert.are.same({ 3, 4, 5 }, t2.data)
  end)
end)

describe("scale", function()
  for _, dt in ipairs({ "float64", "float32" }) do
    it("computes scale*x + bias and scale*(x + bias) (" .. dt .. ")", function()
      local x = T.tensor(X23, { shape = { 2, 3 }, dtype = dt, lod = { { 0, 2 } } })
      T.check_output{ type = "scale", inputs = { X = x }, attrs = { scale = 2.5, bias = 1 },
        expect = { Out = { shape = { 2, 3 }, data = map(X23, function(v) return 2.5 * v + 1 end),
                           lod = { { 0, 2 } } } } }
      T.check_output{ type = "scale", inputs = { X = x },
        attrs = { scale = 2.5, bias = 1, bias_after_scale = false },
        expect = { Out = { shape = { 2, 3 }, data = map(X23, function(v) return 2.5 * (v + 1) end) } } }
    end)
  end

  it("defaults to the identity", function()
    T.check_output{ type = "scale", inputs = { X = T.tensor(X23, { shape = { 6 } }) },
      expect = { Out = { shape = { 6 }, data = X23 } } }
  end)

  it("scales integers in double and truncates toward zero", function()
    local r = T.run{ type = "scale", inputs = { X = T.tensor({ 3, -3, 4, 7 }, { shape = { 4 }, dtype = "int32" }) },
      attrs = { scale = 0.5 } }
    assert.are.same({ 1, -1, 2, 3 }, r.Out[1].data)
    r = T.run{ type = "scale", inputs = { X = T.tensor({ 10, -4 }, { shape = { 2 }, dtype = "int64" }) },
      attrs = { scale = 3, bias = -1 } }
    assert.are.equal("int64", r.Out[1].dtype)
    assert.are.same({ 29, -13 }, r.Out[1].data)
  end)

  it("has gradient scale * Out@GRAD whatever the bias", function()
    T.check_grad{ type = "scale", inputs = { X = T.tensor(X23, { shape = { 3, 2 } }) },
      attrs = { scale = -1.5, bias = 4, bias_after_scale = false }, wrt = { "X" } }
  end)
end)

describe("cast", function()
  local kinds = { "bool", "int32", "int64", "float32", "float64", "uint8" }
  local src = { 0, 1, 2, 5 }
  for _, from in ipairs(kinds) do
    for _, to in ipairs(kinds) do
      it(("converts %s to %s"):format(from, to), function()
        local data = from == "bool" and { false, true, true, false } or src
        local as_num = map(data, function(v) if type(v) == "boolean" then return v and 1 or 0 end return v end)
        local want = to == "bool" and map(as_num, function(v) return v ~= 0 end) or as_num
        local r = T.run{ type = "cast", inputs = { X = T.tensor(data, { shape = { 2, 2 }, dtype = from }) },
          attrs = { in_dtype = DT[from], out_dtype = DT[to] } }
        assert.are.equal(to, r.Out[1].dtype)
        assert.are.same({ 2, 2 }, r.Out[1].shape)
        assert.are.same(want, r.Out[1].data)
      end)
    end
  end

  it("truncates floats toward zero and saturates out-of-range values (NaN -> 0)", function()
    local x = T.tensor({ 2.7, -2.7, 1e10, -1e10, 0 / 0 }, { shape = { 5 } })
    local r = T.run{ type = "cast", inputs = { X = x }, attrs = { in_dtype = DT.float64, out_dtype = DT.int32 } }
    assert.are.same({ 2, -2, 2147483647, -2147483648, 0 }, r.Out[1].data)
    r = T.run{ type = "cast", inputs = { X = T.tensor({ -5, 300, 7.9 }, { shape = { 3 }, dtype = "float32" }) },
      attrs = { in_dtype = DT.float32, out_dtype = DT.uint8 } }
    assert.are.same({ 0, 255, 7 }, r.Out[1].data)
  end)

  it("keeps int64 values beyond 2^53 exact", function()
    -- Lua numbers cannot carry 2^62 + 1: feed and fetch raw int64 through the C API
    local pp = ffi.new("oar_program_t*[1]")
    lib.check(C.oar_program_new(pp))
    local prog = ffi.gc(pp[0], C.oar_program_free)
    local block = C.oar_program_block(prog, 0)
    local vp = ffi.new("oar_var_desc_t*[1]")
    lib.check(C.oar_block_var_new(block, "x", vp))
    lib.check(C.oar_var_desc_set_shape(vp[0], ffi.new("int64_t[1]", 2), 1))
    lib.check(C.oar_var_desc_set_dtype(vp[0], DT.int64))
    T.append_op(block, "cast", { X = { "x" } }, { Out = { "y" } }, { in_dtype = DT.int64, out_dtype = DT.int64 })
    local src = ffi.new("int64_t[2]", 4611686018427387905LL, -4611686018427387903LL)
    local tp = ffi.new("oar_tensor_t*[1]")
    lib.check(C.oar_tensor_from_data(DT.int64, ffi.new("int64_t[1]", 2), 1, src, tp))
    local xt = ffi.gc(tp[0], C.oar_tensor_free)
    local sp = ffi.new("oar_scope_t*[1]")
    lib.check(C.oar_scope_new(sp))
    local scope = ffi.gc(sp[0], C.oar_scope_free)
    local ep = ffi.new("oar_executor_t*[1]")
    lib.check(C.oar_executor_new(0, 0, ep))
    local exe = ffi.gc(ep[0], C.oar_executor_free)
    local out = ffi.new("oar_tensor_t*[1]")
    lib.check(C.oar_executor_run(exe, prog, 0, scope, 1, lib.cstrings({ "x" }), ffi.new("oar_tensor_t*[1]", xt),
      1, lib.cstrings({ "y" }), out))
    local yt = ffi.gc(out[0], C.oar_tensor_free)
    local y = ffi.cast("int64_t*", C.oar_tensor_data(yt))
    assert.is_true(y[0] == 4611686018427387905LL)
    assert.is_true(y[1] == -4611686018427387903LL)
  end)

  it("casts the gradient back to the input dtype", function()
    T.check_grad{ type = "cast", inputs = { X = T.tensor(X23, { shape = { 2, 3 } }) },
      attrs = { in_dtype = DT.float64, out_dtype = DT.float32 }, wrt = { "X" } }
  end)

  it("rejects an in_dtype that is not X's and unknown dtypes", function()
    local x = T.tensor({ 1, 2 }, { shape = { 2 } })
    expect_error(function()
      T.run{ type = "cast", inputs = { X = x }, attrs = { in_dtype = DT.float32, out_dtype = DT.int32 } }
    end, "cast", "in_dtype", "float64", "float32")
    expect_error(function()
      T.run{ type = "cast", inputs = { X = x }, attrs = { in_dtype = DT.float64, out_dtype = 42 } }
    end, "cast", "out_dtype", "42")
  end)
end)

describe("sum", function()
  local a = { 1, 2, 3, 4, 5, 6 }
  local b = { 0.5, -1, 2, -3, 10, 0 }
  local c = { -2, -2, 1, 1, 0.25, 8 }
  for _, dt in ipairs({ "float64", "float32" }) do
    it("adds all inputs elementwise, LoD from the first (" .. dt .. ")", function()
      local xs = {
        T.tensor(a, { shape = { 3, 2 }, dtype = dt, lod = { { 0, 1, 3 } } }),
        T.tensor(b, { shape = { 3, 2 }, dtype = dt }),
        T.tensor(c, { shape = { 3, 2 }, dtype = dt }),
      }
      T.check_output{ type = "sum", inputs = { X = xs },
        expect = { Out = { shape = { 3, 2 }, data = map(a, function(v, i) return v + b[i] + c[i] end),
                           lod = { { 0, 1, 3 } } } } }
    end)
  end

  it("adds integer tensors and passes a single input through", function()
    local r = T.run{ type = "sum", inputs = { X = {
      T.tensor({ 1, 2, 3 }, { shape = { 3 }, dtype = "int64" }),
      T.tensor({ 10, 20, 30 }, { shape = { 3 }, dtype = "int64" }) } } }
    assert.are.same({ 11, 22, 33 }, r.Out[1].data)
    r = T.run{ type = "sum", inputs = { X = { T.tensor({ 4, 5 }, { shape = { 2 }, dtype = "int32" }) } } }
    assert.are.same({ 4, 5 }, r.Out[1].data)
  end)

  it("gives every input the output gradient", function()
    T.check_grad{ type = "sum", inputs = { X = { T.tensor(a, { shape = { 2, 3 } }), T.tensor(b, { shape = { 2, 3 } }) } },
      wrt = { "X" } }
  end)

  it("rejects inputs of different shapes or dtypes", function()
    expect_error(function()
      T.run{ type = "sum", inputs = { X = { T.tensor(a, { shape = { 3, 2 } }), T.tensor(a, { shape = { 2, 3 } }) } } }
    end, "sum", "X[1]", "[2, 3]", "[3, 2]")
    expect_error(function()
      T.run{ type = "sum", inputs = { X = { T.tensor(a, { shape = { 6 } }), T.tensor(a, { shape = { 6 }, dtype = "float32" }) } } }
    end, "sum", "X[1]", "float32", "float64")
  end)
end)

describe("fill_zeros_like", function()
  it("makes zeros of X's shape, dtype and LoD", function()
    T.check_output{ type = "fill_zeros_like",
      inputs = { X = T.tensor(X23, { shape = { 3, 2 }, lod = { { 0, 3 } } }) },
      expect = { Out = { shape = { 3, 2 }, data = { 0, 0, 0, 0, 0, 0 }, lod = { { 0, 3 } } } } }
    local r = T.run{ type = "fill_zeros_like", inputs = { X = T.tensor({ 1, 2 }, { shape = { 2 }, dtype = "int32" }) } }
    assert.are.equal("int32", r.Out[1].dtype)
    assert.are.same({ 0, 0 }, r.Out[1].data)
    r = T.run{ type = "fill_zeros_like", inputs = { X = T.tensor({ true }, { shape = { 1 }, dtype = "bool" }) } }
    assert.are.same({ false }, r.Out[1].data)
    r = T.run{ type = "fill_zeros_like", inputs = { X = T.tensor({ 3, 4 }, { shape = { 1, 2 }, dtype = "float32" }) } }
    assert.are.equal("float32", r.Out[1].dtype)
    assert.are.same({ 0, 0 }, r.Out[1].data)
  end)
end)

describe("increment", function()
  it("adds step (default 1) in every numeric dtype", function()
    T.check_output{ type = "increment", inputs = { X = T.tensor({ 2.5 }, { shape = { 1 } }) },
      expect = { Out = { shape = { 1 }, data = { 3.5 } } } }
    T.check_output{ type = "increment", inputs = { X = T.tensor({ 2.5 }, { shape = { 1 }, dtype = "float32" }) },
      attrs = { step = -0.75 }, expect = { Out = { shape = { 1 }, data = { 1.75 } } } }
    local r = T.run{ type = "increment", inputs = { X = T.tensor({ 41 }, { shape = { 1 }, dtype = "int64" }) } }
    assert.are.same({ 42 }, r.Out[1].data)
    r = T.run{ type = "increment", inputs = { X = T.tensor({ 5 }, { shape = { 1, 1 }, dtype = "int32" }) },
      attrs = { step = 3 } }
    assert.are.same({ 1, 1 }, r.Out[1].shape)
    assert.are.same({ 8 }, r.Out[1].data)
  end)

  it("rejects X with more than one element", function()
    expect_error(function()
      T.run{ type = "increment", inputs = { X = T.tensor({ 1, 2 }, { shape = { 2 } }) } }
    end, "increment", "X", "[2]", "one element")
  end)

  it("has no gradient", function()
    assert.is_false(C.oar_op_has_grad("increment"))
    assert.is_false(C.oar_op_has_grad("fill_zeros_like"))
    assert.is_true(C.oar_op_has_grad("sum"))
  end)
end)

-- SELECTED_ROWS inputs cannot be fed: they are built in a scope through
-- the op-authoring API's accessor (src/oar_op.h) and declared persistable so
-- the executor takes them from that scope.
describe("selected rows inputs (sum, scale)", function()
  lib.load_op_api()
  pcall(ffi.cdef, "void *malloc(size_t n);")

  local function declare(block, name, shape, var_type, persistable)
    local vp = ffi.new("oar_var_desc_t*[1]")
    lib.check(C.oar_block_var_new(block, name, vp))
    lib.check(C.oar_var_desc_set_shape(vp[0], ffi.new("int64_t[?]", #shape, shape), #shape))
    lib.check(C.oar_var_desc_set_dtype(vp[0], DT.float64))
    if var_type then lib.check(C.oar_var_desc_set_type(vp[0], var_type)) end
    if persistable then lib.check(C.oar_var_desc_set_persistable(vp[0], true)) end
  end

  local function put_rows(scope, name, height, rows, vals, width)
    local vp = ffi.new("oar_variable_t*[1]")
    lib.check(C.oar_scope_var(scope, name, vp))
    local sr = ffi.cast("oar_selected_rows_t *", C.oar_var_selected_rows(vp[0]))
    assert.is_true(sr ~= nil, lib.last_error())
    sr.height = height
    sr.rows = ffi.cast("int64_t*", ffi.C.malloc(8 * math.max(#rows, 1)))
    for i, r in ipairs(rows) do sr.rows[i - 1] = r end
    sr.nrows, sr.cap = #rows, #rows
    local val = T.to_c(T.tensor(vals, { shape = { #rows, width } }))
    C.oar_tensor_free(sr.value)
    sr.value = C.oar_tensor_retain(val)
  end

  local function run(prog, scope, feeds, fetch)
    local names, ct = {}, {}
    for n, v in pairs(feeds) do names[#names + 1] = n; ct[#names] = T.to_c(v) end
    local ft = ffi.new("oar_tensor_t*[?]", math.max(#names, 1))
    for i, t in ipairs(ct) do ft[i - 1] = t end
    local ep = ffi.new("oar_executor_t*[1]")
    lib.check(C.oar_executor_new(0, 0, ep))
    local exe = ffi.gc(ep[0], C.oar_executor_free)
    local out = ffi.new("oar_tensor_t*[?]", math.max(#fetch, 1))
    local rc = C.oar_executor_run(exe, prog, 0, scope, #names, lib.cstrings(names), ft, #fetch,
      lib.cstrings(fetch), out)
    if rc ~= 0 then error(lib.last_error(), 2) end
    local res = {}
    for i = 1, #fetch do res[i] = T.from_c(ffi.gc(out[i - 1], C.oar_tensor_free)) end
    return res
  end

  local function new_prog()
    local pp = ffi.new("oar_program_t*[1]")
    lib.check(C.oar_program_new(pp))
    local prog = ffi.gc(pp[0], C.oar_program_free)
    local sp = ffi.new("oar_scope_t*[1]")
    lib.check(C.oar_scope_new(sp))
    return prog, C.oar_program_block(prog, 0), ffi.gc(sp[0], C.oar_scope_free)
  end

  it("concatenates rows and values when every input is sparse", function()
    local prog, block, scope = new_prog()
    declare(block, "a", { 5, 2 }, 8, true)
    declare(block, "b", { 5, 2 }, 8, true)
    declare(block, "s", { 5, 2 }, 8, true)
    T.append_op(block, "sum", { X = { "a", "b" } }, { Out = { "s" } }, {})
    put_rows(scope, "a", 5, { 4, 1 }, { 1, 2, 3, 4 }, 2)
    put_rows(scope, "b", 5, { 1 }, { 10, 20 }, 2)
    run(prog, scope, {}, {})
    local sr = ffi.cast("oar_selected_rows_t *", C.oar_var_selected_rows(C.oar_scope_find_var(scope, "s")))
    assert.are.equal(5, tonumber(sr.height))
    assert.are.equal(3, tonumber(sr.nrows))
    assert.are.same({ 4, 1, 1 }, { tonumber(sr.rows[0]), tonumber(sr.rows[1]), tonumber(sr.rows[2]) })
    local v = T.from_c(sr.value)
    assert.are.same({ 3, 2 }, v.shape)
    assert.are.same({ 1, 2, 3, 4, 10, 20 }, v.data)
  end)

  it("adds sparse rows into the dense inputs' sum", function()
    local prog, block, scope = new_prog()
    declare(block, "d", { 3, 2 })
    declare(block, "r", { 3, 2 }, 8, true)
    T.append_op(block, "sum", { X = { "d", "r" } }, { Out = { "s" } }, {})
    put_rows(scope, "r", 3, { 2, 0, 2 }, { 1, 1, 5, 6, 10, 100 }, 2)
    local got = run(prog, scope, { d = T.tensor({ 1, 2, 3, 4, 5, 6 }, { shape = { 3, 2 } }) }, { "s" })[1]
    assert.are.same({ 3, 2 }, got.shape)
    -- row 0: 1+5, 2+6; row 1 unchanged; row 2: 5+1+10, 6+1+100
    assert.are.same({ 6, 8, 3, 4, 16, 107 }, got.data)
  end)

  it("rejects sparse rows of another width or beyond the height", function()
    local prog, block, scope = new_prog()
    declare(block, "d", { 3, 2 })
    declare(block, "r", { 3, 2 }, 8, true)
    T.append_op(block, "sum", { X = { "d", "r" } }, { Out = { "s" } }, {})
    put_rows(scope, "r", 3, { 1 }, { 1, 2, 3 }, 3)
    expect_error(function()
      run(prog, scope, { d = T.tensor({ 1, 2, 3, 4, 5, 6 }, { shape = { 3, 2 } }) }, { "s" })
    end, "sum", "3 elements", "2")
    put_rows(scope, "r", 3, { 3 }, { 1, 2 }, 2)
    expect_error(function()
      run(prog, scope, { d = T.tensor({ 1, 2, 3, 4, 5, 6 }, { shape = { 3, 2 } }) }, { "s" })
    end, "sum", "row 3", "3 rows")
  end)
  it("scale keeps the rows and scales the values", function()
    local prog, block, scope = new_prog()
    declare(block, "r", { 4, 2 }, 8, true)
    declare(block, "s", { 4, 2 }, 8, true)
    T.append_op(block, "scale", { X = { "r" } }, { Out = { "s" } }, { scale = 2, bias = 1 })
    T.append_op(block, "scale", { X = { "r" } }, { Out = { "r" } }, { scale = -1 })
    put_rows(scope, "r", 4, { 3, 1, 3 }, { 1, 2, 3, 4, 5, 6 }, 2)
    run(prog, scope, {}, {})
    local function read(name)
      local sr = ffi.cast("oar_selected_rows_t *", C.oar_var_selected_rows(C.oar_scope_find_var(scope, name)))
      local rows = {}
      for i = 0, tonumber(sr.nrows) - 1 do rows[#rows + 1] = tonumber(sr.rows[i]) end
      return tonumber(sr.height), rows, T.from_c(sr.value)
    end
    local h, rows, v = read("s")
    assert.are.equal(4, h)
    assert.are.same({ 3, 1, 3 }, rows)
    assert.are.same({ 3, 2 }, v.shape)
    assert.are.same({ 3, 5, 7, 9, 11, 13 }, v.data)
    -- in place: Out is X
    h, rows, v = read("r")
    assert.are.same({ 3, 1, 3 }, rows)
    assert.are.same({ -1, -2, -3, -4, -5, -6 }, v.data)
  end)
end)
