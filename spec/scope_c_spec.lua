-- C-level scopes and variables through the FFI: lookup through parents,
-- creation order, kids, release in any order (no crash, no leak), typed
-- variables and tensor sharing.
local ffi = require("ffi")
local lib = require("oar.lib")
local C = lib.C

-- the scope, tensor and buffer layouts, detached kids and typed variables:
-- the op-authoring API (src/oar_op.h), for white-box checks
lib.load_op_api()

local OK, INVALID, NOT_FOUND, DTYPE, RANGE = 0, -1, -2, -4, -8
local FP32 = 5
local LOD_TENSOR, SELECTED_ROWS, STEP_SCOPES, LOD_TENSOR_ARRAY = 7, 8, 11, 13

local function new_scope()
  local out = ffi.new("oar_scope_t *[1]")
  assert(C.oar_scope_new(out) == OK, lib.last_error())
  return out[0]
end

local function kid_of(s)
  local out = ffi.new("oar_scope_t *[1]")
  assert(C.oar_scope_new_scope(s, out) == OK, lib.last_error())
  return out[0]
end

local function var(s, name)
  local out = ffi.new("oar_variable_t *[1]")
  local rc = C.oar_scope_var(s, name, out)
  assert(rc == OK, lib.last_error())
  return out[0]
end

local function names(s)
  local r = {}
  for i = 0, C.oar_scope_num_vars(s) - 1 do r[#r + 1] = ffi.string(C.oar_scope_var_name(s, i)) end
  return r
end

local function tensor(values)
  local dims = ffi.new("int64_t[1]", #values)
  local src = ffi.new("float[?]", #values, values)
  local out = ffi.new("oar_tensor_t *[1]")
  assert(C.oar_tensor_from_data(FP32, dims, 1, src, out) == OK, lib.last_error())
  return ffi.gc(out[0], C.oar_tensor_free)
end

-- a tensor whose buffer refcount tells whether the variable holding it is alive
local function tracer()
  local t = tensor({ 1, 2, 3 })
  return t, function() return t.buf.refcount end
end

local function put(s, name, t)
  assert.are.equal(OK, C.oar_variable_set_tensor(var(s, name), t))
end

describe("scope lookup", function()
  local root
  before_each(function() root = ffi.gc(new_scope(), C.oar_scope_free) end)

  it("var finds or creates locally", function()
    local a = var(root, "a")
    assert.are.equal(a, var(root, "a"))
    assert.are.equal("a", ffi.string(C.oar_variable_name(a)))
    assert.are.equal(0, C.oar_variable_type(a))
    assert.are.equal(a, C.oar_scope_find_local(root, "a"))
    assert.are.equal(1, C.oar_scope_num_vars(root))
  end)

  it("find_var is nil when absent and searches up the parents", function()
    assert.is_true(C.oar_scope_find_var(root, "w") == nil)
    local w = var(root, "w")
    local kid = ffi.gc(kid_of(root), C.oar_scope_free)
    local grandkid = ffi.gc(kid_of(kid), C.oar_scope_free)
    assert.are.equal(w, C.oar_scope_find_var(grandkid, "w"))
    assert.is_true(C.oar_scope_find_local(grandkid, "w") == nil)
    -- a local variable of the same name hides the parent's
    local w2 = var(kid, "w")
    assert.are.equal(w2, C.oar_scope_find_var(grandkid, "w"))
    assert.are.equal(w, C.oar_scope_find_var(root, "w"))
    -- parents do not see their kids' variables
    var(grandkid, "only_here")
    assert.is_true(C.oar_scope_find_var(root, "only_here") == nil)
    assert.are.equal(root, C.oar_scope_parent(kid))
    assert.is_true(C.oar_scope_parent(root) == nil)
  end)

  it("lists local names in creation order, also after erase", function()
    for _, n in ipairs({ "c", "a", "b", "d" }) do var(root, n) end
    assert.are.same({ "c", "a", "b", "d" }, names(root))
    assert.are.equal(OK, C.oar_scope_erase(root, "a"))
    assert.are.same({ "c", "b", "d" }, names(root))
    assert.is_true(C.oar_scope_find_local(root, "a") == nil)
    -- the remaining names still map to their variables
    for _, n in ipairs({ "c", "b", "d" }) do
      assert.are.equal(n, ffi.string(C.oar_variable_name(C.oar_scope_find_local(root, n))))
    end
    assert.is_true(C.oar_scope_var_name(root, 3) == nil)
  end)

  it("handles many variables", function()
    for i = 1, 2000 do var(root, "v" .. i) end
    for i = 1, 2000, 2 do assert.are.equal(OK, C.oar_scope_erase(root, "v" .. i)) end
    assert.are.equal(1000, C.oar_scope_num_vars(root))
    for i = 1, 2000 do
      local v = C.oar_scope_find_local(root, "v" .. i)
      if i % 2 == 1 then assert.is_true(v == nil)
      else assert.are.equal("v" .. i, ffi.string(C.oar_variable_name(v))) end
    end
    assert.are.equal("v2", ffi.string(C.oar_scope_var_name(root, 0)))
    assert.are.equal("v2000", ffi.string(C.oar_scope_var_name(root, 999)))
  end)

  it("rejects invalid arguments", function()
    local out = ffi.new("oar_variable_t *[1]")
    assert.are.equal(INVALID, C.oar_scope_var(root, "", out))
    assert.matches("empty", lib.last_error())
    assert.are.equal(INVALID, C.oar_scope_var(nil, "x", out))
    assert.are.equal(INVALID, C.oar_scope_var(root, nil, out))
    assert.is_true(C.oar_scope_find_var(root, "") == nil)
    assert.are.equal(NOT_FOUND, C.oar_scope_erase(root, "missing"))
    assert.matches("'missing'", lib.last_error())
  end)
end)

describe("scope kids", function()
  it("new_scope registers kids and drop_kids forgets them", function()
    local root = ffi.gc(new_scope(), C.oar_scope_free)
    local k1 = ffi.gc(kid_of(root), C.oar_scope_free)
    local k2 = ffi.gc(kid_of(root), C.oar_scope_free)
    assert.are.equal(2, C.oar_scope_num_kids(root))
    assert.are.equal(2, k1.refcount)   -- the caller's and the parent's
    C.oar_scope_drop_kids(root)
    assert.are.equal(0, C.oar_scope_num_kids(root))
    assert.are.equal(1, k1.refcount)
    -- kids held by the caller stay usable
    var(root, "p")
    assert.is_true(C.oar_scope_find_var(k2, "p") ~= nil)
  end)

  it("detached kids are not listed but see the parent", function()
    local root = ffi.gc(new_scope(), C.oar_scope_free)
    var(root, "p")
    local out = ffi.new("oar_scope_t *[1]")
    assert.are.equal(OK, C.oar_scope_new_detached_kid(root, out))
    local d = ffi.gc(out[0], C.oar_scope_free)
    assert.are.equal(0, C.oar_scope_num_kids(root))
    assert.are.equal(1, d.refcount)
    assert.is_true(C.oar_scope_find_var(d, "p") ~= nil)
  end)

  it("a kid keeps its parent's variables alive after the parent's handle is freed", function()
    local t, refs = tracer()
    local root = new_scope()
    put(root, "w", t)
    local kid = kid_of(root)
    C.oar_scope_free(root)
    assert.are.equal(2, refs())
    local w = C.oar_scope_find_var(kid, "w")
    assert.is_true(w ~= nil)
    assert.are.equal(LOD_TENSOR, C.oar_variable_type(w))
    C.oar_scope_free(kid)
    assert.are.equal(1, refs())   -- both scopes are gone
  end)

  it("parent and kid are freed whichever handle goes first", function()
    for _, order in ipairs({ "parent_first", "kid_first" }) do
      local tp, refs_p = tracer()
      local tk, refs_k = tracer()
      local root = new_scope()
      local kid = kid_of(root)
      put(root, "p", tp)
      put(kid, "k", tk)
      if order == "parent_first" then
        C.oar_scope_free(root)
        assert.are.equal(2, refs_p())
        C.oar_scope_free(kid)
      else
        C.oar_scope_free(kid)
        assert.are.equal(2, refs_k())   -- still listed in the live parent
        assert.are.equal(1, C.oar_scope_num_kids(root))
        C.oar_scope_free(root)
      end
      assert.are.equal(1, refs_p(), order)
      assert.are.equal(1, refs_k(), order)
    end
  end)

  it("drop_kids frees kids nobody else holds", function()
    local t, refs = tracer()
    local root = ffi.gc(new_scope(), C.oar_scope_free)
    local kid = kid_of(root)
    put(kid, "k", t)
    C.oar_scope_free(kid)
    assert.are.equal(2, refs())
    C.oar_scope_drop_kids(root)
    assert.are.equal(1, refs())
  end)

  it("collects deep trees released through the garbage collector", function()
    local t, refs = tracer()
    local function build()
      local root = ffi.gc(new_scope(), C.oar_scope_free)
      local a = ffi.gc(kid_of(root), C.oar_scope_free)
      local b = ffi.gc(kid_of(a), C.oar_scope_free)
      local c = ffi.gc(kid_of(b), C.oar_scope_free)
      put(c, "deep", t)
      C.oar_scope_free(kid_of(root))   -- now held only by root's list
      C.oar_scope_free(kid_of(c))
    end
    build()
    assert.are.equal(2, refs())
    collectgarbage()
    collectgarbage()
    assert.are.equal(1, refs())
  end)

  it("collects step scopes that point back at their parent", function()
    local tk, refs_k = tracer()
    local tp, refs_p = tracer()
    local root = new_scope()
    put(root, "p", tp)
    local steps = C.oar_var_step_scopes(var(root, "steps"))
    assert.is_true(steps ~= nil)
    for _ = 1, 3 do
      local kid = kid_of(root)
      assert.are.equal(OK, C.oar_step_scopes_push(steps, kid))
      put(kid, "k", tk)
      C.oar_scope_free(kid)   -- the step list and the parent's list keep it
    end
    assert.are.equal(4, refs_k())
    C.oar_scope_drop_kids(root)
    assert.are.equal(4, refs_k())   -- the step list still holds them
    assert.are.equal(STEP_SCOPES, C.oar_variable_type(C.oar_scope_find_local(root, "steps")))
    C.oar_scope_free(root)
    assert.are.equal(1, refs_k())
    assert.are.equal(1, refs_p())
  end)

  it("clearing a step scopes variable releases its scopes", function()
    local t, refs = tracer()
    local root = ffi.gc(new_scope(), C.oar_scope_free)
    local out = ffi.new("oar_scope_t *[1]")
    assert.are.equal(OK, C.oar_scope_new_detached_kid(root, out))
    put(out[0], "x", t)
    local v = var(root, "steps")
    assert.are.equal(OK, C.oar_step_scopes_push(C.oar_var_step_scopes(v), out[0]))
    C.oar_scope_free(out[0])
    assert.are.equal(2, refs())
    C.oar_variable_clear(v)
    assert.are.equal(0, C.oar_variable_type(v))
    assert.are.equal(1, refs())
  end)
end)

describe("variables", function()
  local root
  before_each(function() root = ffi.gc(new_scope(), C.oar_scope_free) end)

  it("refuse a kind other than the one they hold", function()
    local v = var(root, "arr")
    assert.is_true(C.oar_var_array(v) ~= nil)
    assert.are.equal(LOD_TENSOR_ARRAY, C.oar_variable_type(v))
    local out = ffi.new("oar_tensor_t *[1]")
    assert.are.equal(DTYPE, C.oar_variable_get_tensor(v, out))
    assert.matches("variable 'arr' holds a LOD_TENSOR_ARRAY, not a LOD_TENSOR", lib.last_error())
    assert.are.equal(DTYPE, C.oar_variable_set_tensor(v, tensor({ 1 })))
    assert.is_true(C.oar_var_selected_rows(v) == nil)
    assert.matches("holds a LOD_TENSOR_ARRAY, not a SELECTED_ROWS", lib.last_error())
    local t = var(root, "t")
    assert.are.equal(OK, C.oar_variable_get_tensor(t, out))
    C.oar_tensor_free(out[0])
    assert.are.equal(LOD_TENSOR, C.oar_variable_type(t))
    assert.is_true(C.oar_var_step_scopes(t) == nil)
    assert.matches("variable 't' holds a LOD_TENSOR, not a STEP_SCOPES", lib.last_error())
    assert.are.equal(DTYPE, C.oar_variable_array_size(t))
    -- cleared, a variable takes any kind
    C.oar_variable_clear(v)
    assert.is_true(C.oar_var_selected_rows(v) ~= nil)
    assert.are.equal(SELECTED_ROWS, C.oar_variable_type(v))
  end)

  it("get_tensor and set_tensor share data and LoD", function()
    local v = var(root, "x")
    local t = tensor({ 1, 2, 3, 4 })
    local offs = ffi.new("int64_t[3]", { 0, 1, 4 })
    local arr = ffi.new("const int64_t *[1]", { offs })
    local sizes = ffi.new("int64_t[1]", { 3 })
    assert.are.equal(OK, C.oar_tensor_set_lod(t, 1, arr, sizes))
    assert.are.equal(OK, C.oar_variable_set_tensor(v, t))
    local out = ffi.new("oar_tensor_t *[1]")
    assert.are.equal(OK, C.oar_variable_get_tensor(v, out))
    local got = ffi.gc(out[0], C.oar_tensor_free)
    assert.is_true(got ~= t)
    assert.are.equal(C.oar_tensor_data(t), C.oar_tensor_data(got))
    assert.are.equal(3, t.buf.refcount)   -- t, the variable's tensor, got
    ffi.cast("float *", C.oar_tensor_data(got))[2] = 30
    assert.are.equal(30, ffi.cast("float *", C.oar_tensor_data(t))[2])
    assert.are.equal(1, C.oar_tensor_lod_levels(got))
    assert.are.equal(4, tonumber(C.oar_tensor_lod_data(got, 0)[2]))
    -- the returned tensor outlives the scope
    C.oar_scope_erase(root, "x")
    assert.are.equal(2, t.buf.refcount)
    assert.are.equal(30, ffi.cast("float *", C.oar_tensor_data(got))[2])
  end)

  it("an empty variable reads as an empty tensor", function()
    local out = ffi.new("oar_tensor_t *[1]")
    assert.are.equal(OK, C.oar_variable_get_tensor(var(root, "e"), out))
    local t = ffi.gc(out[0], C.oar_tensor_free)
    assert.is_true(C.oar_tensor_data(t) == nil)
    assert.are.equal(-1, C.oar_tensor_dtype(t))
  end)

  it("tensor arrays report size and range errors", function()
    local v = var(root, "arr")
    assert.are.equal(0, C.oar_variable_array_size(v))
    local a = C.oar_var_array(v)
    assert.are.equal(OK, C.oar_array_resize(a, 3))
    assert.are.equal(3, C.oar_variable_array_size(v))
    local out = ffi.new("oar_tensor_t *[1]")
    assert.are.equal(OK, C.oar_variable_array_get(v, 2, out))
    assert.is_true(C.oar_tensor_data(out[0]) == nil)   -- never written
    C.oar_tensor_free(out[0])
    assert.are.equal(RANGE, C.oar_variable_array_get(v, 3, out))
    assert.matches("index 3 out of range for tensor array 'arr' of size 3", lib.last_error())
    assert.are.equal(RANGE, C.oar_variable_array_get(v, -1, out))
    assert.are.equal(INVALID, C.oar_array_resize(a, -1))
    assert.are.equal(OK, C.oar_array_resize(a, 1))
    assert.are.equal(1, C.oar_variable_array_size(v))
  end)
end)
