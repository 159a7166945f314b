-- The API contract (docs/api.md): places and executor, tensors, scopes. One of the
-- api_contract_*_spec.lua files (one per API area): every table row, bullet,
-- keyword default and code-sample call has at least one assertion, with
-- expected values worked out by hand in the comments.
local oar = require("oar")
local A = require("spec.helpers.api")
local layers = oar.layers

local THIS_FILE = "api_contract_execution_spec.lua"

-- ---- helpers (spec/helpers/api.lua) ---------------------------------------------
local errmsg, eval, near, op_types, contains = A.errmsg, A.eval, A.near, A.op_types, A.contains
local build, run = A.build, A.run
local Constant, const_attr, X23 = oar.initializer.Constant, A.const_attr, A.X23


-- ==== Execution, tensors, scopes ===========================================================
describe("API: places and executor", function()
  it("CPUPlace, CUDAPlace(n), is_compiled_with_cuda", function()
    local cpu = oar.CPUPlace()
    assert.is_true(cpu:is_cpu_place())
    local gpu = oar.CUDAPlace(0)
    assert.is_true(gpu:is_gpu_place())
    assert.are.equal("boolean", type(oar.is_compiled_with_cuda()))
    assert.truthy(errmsg(oar.CUDAPlace, -1):find("CUDAPlace", 1, true))
    if not oar.is_compiled_with_cuda() then
      assert.truthy(errmsg(oar.Executor, oar.CUDAPlace(0)))
    end
  end)

  it("run(program, {feed=, fetch_list=, scope=}) -> list of Tensors; program and scope default", function()
    local exe = oar.Executor(oar.CPUPlace())
    local main, startup = oar.Program(), oar.Program()
    local y, w
    oar.program_guard(main, startup, function()
      oar.unique_name.guard(function()
        local x = layers.data{ name = "x", shape = { 2 } }
        y = layers.fc{ input = x, size = 1, param_attr = oar.ParamAttr{ name = "contract_w", initializer = Constant{ value = 2 } },
                       bias_attr = false }
        w = main:global_block():var("contract_w")
      end)
    end)
    local gs = oar.Scope()
    oar.scope_guard(gs, function()
      assert.are.equal(gs, oar.global_scope())
      oar.program_guard(main, startup, function()
        exe:run(startup)                                        -- scope: the global scope
        assert.truthy(gs:find_var("contract_w"))
        -- program nil: the default main program; fetch by Variable and by name; feed a Tensor or a table
        local out = exe:run(nil, { feed = { x = oar.Tensor({ { 1, 2 } }, "float32") }, fetch_list = { y, "contract_w" } })
        assert.are.equal(2, #out)
        near({ { 6 } }, out[1]:totable())
        near({ { 2 }, { 2 } }, out[2]:totable())
        local out2 = exe:run{ feed = { x = { { 1, 1 } } }, fetch_list = { y } }
        near({ { 4 } }, out2[1]:totable())
      end)
    end)
    assert.truthy(w)
    -- an explicit scope
    local s = oar.Scope()
    exe:run(startup, { scope = s })
    local out = exe:run(main, { feed = { x = { { 3, 0 } } }, fetch_list = { y }, scope = s })
    near({ { 6 } }, out[1]:totable())
    assert.are.same({}, exe:run(main, { feed = { x = { { 3, 0 } } }, scope = s }))
  end)
end)

describe("API: tensors", function()
  it("Tensor(nested_table, dtype) and Tensor{shape=, dtype=} (zeros)", function()
    local t = oar.Tensor({ { 1, 2, 3 }, { 4, 5, 6 } }, "float64")
    assert.are.same({ 2, 3 }, t:shape())
    assert.are.equal("float64", t:dtype())
    assert.are.equal(6, t:numel())
    assert.are.same(X23, t:totable())
    local f = oar.Tensor({ 1.5, 2.5 })
    assert.are.equal("float32", f:dtype())
    local z = oar.Tensor{ shape = { 2, 3 }, dtype = "int32" }
    assert.are.same({ { 0, 0, 0 }, { 0, 0, 0 } }, z:totable())
    assert.are.equal("int32", z:dtype())
    local zf = oar.Tensor{ shape = { 2 } }
    assert.are.equal("float32", zf:dtype())
    for _, dt in ipairs({ "float32", "float64", "int32", "int64", "bool", "uint8", "float16" }) do
      local v = dt == "bool" and true or 1
      assert.are.equal(dt, oar.Tensor({ v, v }, dt):dtype())
    end
    assert.truthy(errmsg(oar.Tensor, { { 1, 2 }, { 3 } }):find("ragged", 1, true))
    assert.truthy(errmsg(oar.Tensor, { 1.5 }, "int32"):find("integer", 1, true))
    -- no silent wrap-around
    assert.truthy(errmsg(oar.Tensor, { 300 }, "uint8"):find("uint8", 1, true))
    assert.truthy(errmsg(oar.Tensor, { 2 ^ 40 }, "int32"):find("int32", 1, true))
    assert.are.same({ 255, 0 }, oar.Tensor({ 255, 0 }, "uint8"):totable())
    assert.are.same({ 2 ^ 40 }, oar.Tensor({ 2 ^ 40 }, "int64"):totable())
  end)

  it("tensor.from_buffer(ptr, shape, dtype) copies", function()
    local ffi = require("ffi")
    local buf = ffi.new("double[6]", { 1, 2, 3, 4, 5, 6 })
    local t = oar.tensor.from_buffer(buf, { 3, 2 }, "float64")
    buf[0] = 100
    assert.are.same({ { 1, 2 }, { 3, 4 }, { 5, 6 } }, t:totable())
    assert.are.equal("float64", t:dtype())
    assert.truthy(errmsg(oar.tensor.from_buffer, nil, { 2 }, "float32"))
    -- an array knows its size: no reading past it
    assert.truthy(errmsg(oar.tensor.from_buffer, buf, { 100 }, "float64"):find("bytes", 1, true))
  end)

  it("get/set are 1-based; data() is a typed pointer; lod/set_lod; tostring shows values, shape, dtype, LoD", function()
    local t = oar.Tensor({ { 1, 2, 3 }, { 4, 5, 6 } }, "float32")
    assert.are.equal(1, t:get(1, 1))
    assert.are.equal(6, t:get(2, 3))
    t:set(9.5, 2, 1)
    assert.are.equal(9.5, t:get(2, 1))
    assert.truthy(errmsg(t.get, t, 0, 1):find("outside", 1, true))
    assert.truthy(errmsg(t.get, t, 3, 1))
    assert.truthy(errmsg(t.get, t, 1))
    local p = t:data()
    collectgarbage()
    collectgarbage()
    assert.are.equal(9.5, p[3])                       -- row-major; alive while t is held
    assert.truthy(tostring(require("ffi").typeof(p)):find("float", 1, true))
    p[0] = 7
    assert.are.equal(7, t:get(1, 1))
    assert.are.same({}, t:lod())
    t:set_lod({ { 0, 1, 2 } })
    assert.are.same({ { 0, 1, 2 } }, t:lod())
    local s = tostring(t)
    assert.truthy(s:find("9.5", 1, true))
    assert.truthy(s:find("7", 1, true))
    assert.truthy(s:find("2, 3", 1, true))
    assert.truthy(s:find("float32", 1, true))
    assert.truthy(s:find("0, 1, 2", 1, true))
    assert.truthy(errmsg(t.set_lod, t, { { 0, 5 } }))   -- 5 is past the 2 rows
  end)
end)

describe("API: scopes", function()
  it("Scope, global_scope, scope_guard; var, find_var, new_scope, drop_kids, parent, local_var_names", function()
    local s = oar.Scope()
    local v = s:var("a")
    v:set_tensor(oar.Tensor({ 1, 2 }))
    assert.are.same({ 1, 2 }, v:get_tensor():totable())
    assert.are.same({ 1, 2 }, s:var("a"):get_tensor():totable())      -- var finds the existing one
    assert.is_nil(s:find_var("missing"))
    local kid = s:new_scope()
    assert.truthy(kid:find_var("a"))                                    -- searches the parents
    assert.is_nil(s:find_var("b"))
    kid:var("b")
    assert.is_nil(s:find_var("b"))
    assert.are.same({ "b" }, kid:local_var_names())
    assert.are.same({ "a" }, s:local_var_names())
    assert.truthy(kid:parent())
    assert.truthy(kid:parent():find_var("a"))
    assert.is_nil(s:parent())
    assert.are.equal(1, s:num_kids())
    s:drop_kids()
    assert.are.equal(0, s:num_kids())
    local g = oar.global_scope()
    local r = oar.scope_guard(s, function()
      assert.are.equal(s, oar.global_scope())
      return "done"
    end)
    assert.are.equal("done", r)
    assert.are.equal(g, oar.global_scope())
    errmsg(oar.scope_guard, s, function() error("inside") end)
    assert.are.equal(g, oar.global_scope())                             -- restored on error too
  end)
end)
