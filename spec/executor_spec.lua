-- Executor:run: feeds (tables and Tensors), checks that name the variable,
-- fetches, scopes, places and flags.
local oar = require("oar")
local layers = oar.layers

local function errmsg(fn, ...)
  local ok, err = pcall(fn, ...)
  assert.is_false(ok, "expected an error")
  return tostring(err)
end

local function build(fn)
  local main, startup = oar.Program(), oar.Program()
  local res
  oar.program_guard(main, startup, function() res = { fn() } end)
  return main, startup, unpack(res)
end

describe("Executor", function()
  local exe = oar.Executor(oar.CPUPlace())

  it("feeds tables and Tensors and fetches Variables or names", function()
    local main, _, y = build(function()
      local x = layers.data{ name = "x", shape = { 2 } }
      return layers.scale{ x = x, scale = 3, bias = 1 }
    end)
    local out = exe:run(main, { feed = { x = { { 1, 2 }, { 3, 4 } } }, fetch_list = { y } })
    assert.are.same({ { 4, 7 }, { 10, 13 } }, out[1]:totable())
    out = exe:run(main, { feed = { x = oar.Tensor({ { -1, 0 } }) }, fetch_list = { y.name } })
    assert.are.same({ { -2, 1 } }, out[1]:totable())
    assert.are.equal(1, #out)
  end)

  it("converts tables with the data variable's dtype", function()
    local main, _, y = build(function()
      local ids = layers.data{ name = "ids", shape = { 1 }, dtype = "int64" }
      return layers.cast{ x = ids, dtype = "float32" }
    end)
    local out = exe:run(main, { feed = { ids = { { 3 }, { 5 } } }, fetch_list = { y } })
    assert.are.same({ { 3 }, { 5 } }, out[1]:totable())
    assert.matches("feed 'ids'.*not an integer", errmsg(function()
      exe:run(main, { feed = { ids = { { 1.5 } } }, fetch_list = { y } })
    end))
  end)

  it("checks feed shapes and dtypes before running, naming the variable", function()
    local main, _, y = build(function()
      local x = layers.data{ name = "img", shape = { 3, 2 } }
      return layers.scale{ x = x, scale = 2 }
    end)
    local msg = errmsg(function()
      exe:run(main, { feed = { img = oar.Tensor{ shape = { 4, 2, 3 } } }, fetch_list = { y } })
    end)
    assert.matches("feed 'img' expects shape %[%-1, 3, 2%], got %[4, 2, 3%]", msg)
    assert.matches("executor_spec.lua:%d+", msg)
    msg = errmsg(function()
      exe:run(main, { feed = { img = oar.Tensor{ shape = { 4, 3 } } }, fetch_list = { y } })
    end)
    assert.matches("expects shape %[%-1, 3, 2%], got %[4, 3%]", msg)
    msg = errmsg(function()
      exe:run(main, { feed = { img = oar.Tensor({ { { 1, 2 }, { 3, 4 }, { 5, 6 } } }, "float64") }, fetch_list = { y } })
    end)
    assert.matches("feed 'img' expects dtype float32, got float64", msg)
    msg = errmsg(function() exe:run(main, { feed = { nope = { 1 } }, fetch_list = { y } }) end)
    assert.matches("feed 'nope' is not a variable", msg)
    msg = errmsg(function() exe:run(main, { feed = {}, fetch_list = { "ghost" } }) end)
    assert.matches("fetch 'ghost'", msg)
  end)

  it("keeps persistables in the scope given and defaults to the global scope", function()
    local main, startup, counter = build(function()
      local c = layers.create_global_var{ name = "steps", shape = { 1 }, value = 0, dtype = "float32",
                                          persistable = true }
      layers.increment{ x = c, value = 2 }
      return c
    end)
    local s = oar.Scope()
    exe:run(startup, { scope = s })
    exe:run(main, { scope = s })
    local out = exe:run(main, { scope = s, fetch_list = { counter } })
    assert.are.same({ 4 }, out[1]:totable())
    assert.are.same({ 4 }, s:find_var("steps"):get_tensor():totable())
    -- temporaries do not stay behind in the scope
    assert.is_nil(s:find_var("increment_0.tmp_0"))
    oar.scope_guard(oar.Scope(), function()
      exe:run(startup)
      exe:run(main)
      assert.are.same({ 2 }, oar.global_scope():find_var("steps"):get_tensor():totable())
    end)
  end)

  it("runs the default main program when none is given", function()
    local main, _, y = build(function()
      return layers.fill_constant{ shape = { 2 }, dtype = "float32", value = 7 }
    end)
    oar.program_guard(main, nil, function()
      local out = exe:run({ fetch_list = { y } })
      assert.are.same({ 7, 7 }, out[1]:totable())
      out = exe:run(nil, { fetch_list = { y } })
      assert.are.same({ 7, 7 }, out[1]:totable())
    end)
  end)

  it("rejects bad arguments with clear messages", function()
    assert.matches("'program' must be a Program", errmsg(function() exe:run(42, {}) end))
    assert.matches("'scope' must be an oar Scope", errmsg(function() exe:run(oar.Program(), { scope = 1 }) end))
    assert.matches("'place'", errmsg(oar.Executor, "cpu"))
    assert.matches("fetch_list", errmsg(function() exe:run(oar.Program(), { fetch_list = { 3 } }) end))
  end)

  it("describes places", function()
    assert.are.equal("CPUPlace", tostring(oar.CPUPlace()))
    assert.are.equal("CUDAPlace(1)", tostring(oar.CUDAPlace(1)))
    assert.is_boolean(oar.is_compiled_with_cuda())
    assert.has_error(function() oar.CUDAPlace(-1) end)
  end)

  it("reports NaN/Inf with check_nan_inf, naming the op and variable", function()
    local main, _, y = build(function()
      local x = layers.data{ name = "x", shape = { 1 } }
      return layers.log(x)
    end)
    oar.set_flags{ check_nan_inf = true }
    local ok, err = pcall(exe.run, exe, main, { feed = { x = { { -1 } } }, fetch_list = { y } })
    oar.set_flags{ check_nan_inf = false }
    assert.is_false(ok)
    assert.matches("log", tostring(err))
    assert.matches(y.name, tostring(err), 1, true)
    assert.are.equal(0, oar.get_flags("check_nan_inf").check_nan_inf)
    local out = exe:run(main, { feed = { x = { { -1 } } }, fetch_list = { y } })
    local v = out[1]:get(1, 1)
    assert.is_true(v ~= v)   -- NaN passes without the flag
    assert.matches("must be a boolean or an integer", errmsg(oar.set_flags, { check_nan_inf = "yes" }))
  end)
end)
