-- The API contract (docs/api.md): errors and flags. One of the
-- api_contract_*_spec.lua files (one per API area): every table row, bullet,
-- keyword default and code-sample call has at least one assertion, with
-- expected values worked out by hand in the comments.
local oar = require("oar")
local A = require("spec.helpers.api")
local layers = oar.layers

local THIS_FILE = "api_contract_errors_spec.lua"

-- ---- helpers (spec/helpers/api.lua) ---------------------------------------------
local errmsg, eval, near, op_types, contains = A.errmsg, A.eval, A.near, A.op_types, A.contains
local build, run = A.build, A.run
local Constant, const_attr, X23 = oar.initializer.Constant, A.const_attr, A.X23


-- ==== Errors and flags ======================================================================
describe("API: errors and flags", function()
  it("set_flags{check_nan_inf=true} names the op and the variable at the first NaN or Inf", function()
    local main, startup, y = build(function()
      local x = layers.data{ name = "x", shape = { 2 } }
      return layers.log(x)
    end)
    local ok, out = pcall(run, main, startup, { x = { { 1, 0 } } }, { y })
    assert.is_true(ok)                                            -- off by default: log(0) = -inf passes
    assert.are.equal(-math.huge, out[1]:get(1, 2))
    oar.set_flags{ check_nan_inf = true }
    local ok2, err = pcall(run, main, startup, { x = { { 1, 0 } } }, { y })
    oar.set_flags{ check_nan_inf = false }
    assert.is_false(ok2)
    err = tostring(err)
    assert.truthy(err:find("log", 1, true))
    assert.truthy(err:find(y.name, 1, true))
    assert.truthy(err:lower():find("inf", 1, true))
    assert.are.equal(0, oar.get_flags("check_nan_inf").check_nan_inf)
  end)

  it("errors name what is wrong and, for ops, the Lua file:line that created the op", function()
    local line
    local main, startup, z = build(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      local y = layers.data{ name = "y", shape = { 3 } }
      -- (not `return layers...`: a tail call leaves no frame for the line to come from)
      line = debug.getinfo(1, "l").currentline + 1
      local sum = layers.elementwise_add{ x = x, y = y }
      return sum
    end)
    -- a run-time shape error: batches of 2 and 3 rows do not broadcast
    local err = errmsg(run, main, startup, { x = { { 1, 2, 3 }, { 4, 5, 6 } }, y = { { 1, 1, 1 }, { 2, 2, 2 }, { 3, 3, 3 } } }, { z })
    assert.truthy(err:find("elementwise_add", 1, true), err)
    assert.truthy(err:find(THIS_FILE .. ":" .. line, 1, true), err)
    assert.truthy(err:find("[2, 3]", 1, true), err)
    assert.truthy(err:find("[3, 3]", 1, true), err)
    assert.truthy(err:find("'x'", 1, true) and err:find("'y'", 1, true), err)     -- the variables
    -- a compile-time one
    local cline
    local err2 = errmsg(build, function()
      local a = layers.data{ name = "a", shape = { 3 } }
      local b = layers.data{ name = "b", shape = { 4 } }
      cline = debug.getinfo(1, "l").currentline + 1
      local sum = layers.elementwise_add{ x = a, y = b }
      return sum
    end)
    assert.truthy(err2:find("elementwise_add", 1, true), err2)
    assert.truthy(err2:find(THIS_FILE .. ":" .. cline, 1, true), err2)
    assert.truthy(err2:find("'a'", 1, true) and err2:find("'b'", 1, true), err2)
    -- a feed of the wrong shape and dtype names the variable and both
    local err3 = errmsg(run, main, startup, { x = { { 1, 2 } }, y = { { 1, 2, 3 } } }, { z })
    assert.truthy(err3:find("'x'", 1, true), err3)
    assert.truthy(err3:find("[-1, 3]", 1, true), err3)
    assert.truthy(err3:find("[1, 2]", 1, true), err3)
    local err4 = errmsg(run, main, startup, { x = oar.Tensor({ { 1, 2, 3 } }, "float64"), y = { { 1, 2, 3 } } }, { z })
    assert.truthy(err4:find("float32", 1, true) and err4:find("float64", 1, true), err4)
    -- a layer argument error names the layer and the argument
    local err5 = errmsg(build, function() return layers.fc{ input = layers.data{ name = "q", shape = { 2 } }, size = "ten" } end)
    assert.truthy(err5:find("fc", 1, true) and err5:find("size", 1, true), err5)
    -- an uninitialized parameter: did you run the startup program?
    local err6 = errmsg(function()
      local m, _, h = build(function() return layers.fc{ input = layers.data{ name = "u", shape = { 2 } }, size = 1 } end)
      return oar.Executor(oar.CPUPlace()):run(m, { feed = { u = { { 1, 2 } } }, fetch_list = { h }, scope = oar.Scope() })
    end)
    assert.truthy(err6:find("mul", 1, true), err6)
  end)
end)
