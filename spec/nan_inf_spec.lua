-- oar.set_flags{check_nan_inf=true}: the first op that writes a NaN or an
-- Inf into a floating output stops the run with an error naming the op, the
-- output variable and the user's line that created the op; with the flag
-- off the same program runs and hands the NaN/Inf back.
local oar = require("oar")
local layers = oar.layers

local function isnan(x) return x ~= x end

local function with_flag(value, fn)
  local old = oar.get_flags("check_nan_inf").check_nan_inf
  oar.set_flags{ check_nan_inf = value }
  local res = { pcall(fn) }
  oar.set_flags{ check_nan_inf = old == 1 }
  if not res[1] then error(res[2], 0) end
  return unpack(res, 2)
end

describe("check_nan_inf", function()
  local exe = oar.Executor()

  -- x -> log -> relu -> scale: log of a negative number is the first NaN
  local function log_chain(dtype)
    local prog = oar.Program()
    local vars = {}
    oar.program_guard(prog, oar.Program(), function()
      vars.x = layers.data{ name = "x", shape = { 3 }, dtype = dtype }
      vars.l = layers.log(vars.x)
      vars.r = layers.relu(vars.l)
      vars.s = layers.scale{ x = vars.r, scale = 2 }
    end)
    return prog, vars
  end

  it("names the op and the variable of the first NaN (log of a negative number)", function()
    local prog, v = log_chain("float32")
    with_flag(true, function()
      local ok, err = pcall(exe.run, exe, prog, { feed = { x = { { 1, -2, 3 } } }, fetch_list = { v.s } })
      assert.is_false(ok)
      assert.matches("op 'log'", err)
      assert.matches("'" .. v.l.name .. "'", err, 1, true)
      assert.matches("NaN at flat index 1", err)
      assert.matches("nan_inf_spec.lua:%d+", err)      -- where the op was created
      assert.is_nil(err:find("op 'relu'", 1, true))    -- not a later op
    end)
  end)

  it("restores normal behaviour when turned off", function()
    local prog, v = log_chain("float64")
    with_flag(true, function()
      assert.is_false(pcall(exe.run, exe, prog, { feed = { x = { { -1, 1, 1 } } }, fetch_list = { v.l } }))
    end)
    with_flag(false, function()
      local out = exe:run(prog, { feed = { x = { { -1, 1, math.exp(1) } } }, fetch_list = { v.l, v.s } })
      assert.is_true(isnan(out[1]:get(1, 1)))
      assert.equal(0, out[1]:get(1, 2))
      assert.is_true(math.abs(out[1]:get(1, 3) - 1) < 1e-15)
      -- relu(NaN) propagates or clamps, either way the run completed
      assert.equal(2, out[2]:get(1, 3))
    end)
    -- and the executor still works with the flag on for finite values
    with_flag(true, function()
      local out = exe:run(prog, { feed = { x = { { 1, 1, 1 } } }, fetch_list = { v.s } })
      assert.same({ { 0, 0, 0 } }, out[1]:totable())
    end)
  end)

  it("catches Inf as well: division by zero and overflow", function()
    local prog = oar.Program()
    local q, e
    oar.program_guard(prog, oar.Program(), function()
      local a = layers.data{ name = "a", shape = { 2 }, append_batch_size = false }
      local b = layers.data{ name = "b", shape = { 2 }, append_batch_size = false }
      q = layers.elementwise_div{ x = a, y = b }
      e = layers.exp(a)
    end)
    with_flag(true, function()
      local ok, err = pcall(exe.run, exe, prog, { feed = { a = { 1, 2 }, b = { 1, 0 } }, fetch_list = { q } })
      assert.is_false(ok)
      assert.matches("op 'elementwise_div'", err)
      assert.matches("'" .. q.name .. "'", err, 1, true)
      assert.matches("Inf at flat index 1", err)
      ok, err = pcall(exe.run, exe, prog, { feed = { a = { 1000, 0 }, b = { 1, 1 } }, fetch_list = { e } })
      assert.is_false(ok)
      assert.matches("op 'exp'", err)
      assert.matches("Inf at flat index 0", err)
    end)
    with_flag(false, function()
      local out = exe:run(prog, { feed = { a = { 1, 2 }, b = { 1, 0 } }, fetch_list = { q } })
      assert.equal(1, out[1]:get(1))
      assert.equal(math.huge, out[1]:get(2))
    end)
  end)

  it("checks gradient ops too", function()
    local main, startup = oar.Program(), oar.Program()
    local loss
    oar.program_guard(main, startup, function()
      local x = layers.data{ name = "x", shape = { 2 }, append_batch_size = false, stop_gradient = false }
      x.stop_gradient = false
      local w = layers.create_parameter{ shape = { 2 }, dtype = "float32", name = "w_nan",
        default_initializer = oar.initializer.Constant{ value = 0 } }
      -- sqrt'(0) = Inf: the forward pass is finite, the backward pass is not
      loss = layers.mean(layers.sqrt(w + x))
      oar.append_backward(loss)
    end)
    local scope = oar.Scope()
    exe:run(startup, { scope = scope })
    with_flag(true, function()
      local ok, err = pcall(exe.run, exe, main, { feed = { x = { 0, 1 } }, fetch_list = { loss }, scope = scope })
      assert.is_false(ok)
      assert.matches("op 'sqrt_grad'", err)
      assert.matches("Inf", err)
    end)
    with_flag(false, function()
      local out = exe:run(main, { feed = { x = { 0, 1 } }, fetch_list = { loss }, scope = scope })
      assert.equal(0.5, out[1]:get(1))
    end)
  end)

  it("takes booleans and 0/1 and refuses other values", function()
    with_flag(1, function() assert.equal(1, oar.get_flags("check_nan_inf").check_nan_inf) end)
    oar.set_flags{ FLAGS_check_nan_inf = false }
    assert.equal(0, oar.get_flags{ "FLAGS_check_nan_inf" }.FLAGS_check_nan_inf)
    local ok, err = pcall(oar.set_flags, { check_nan_inf = 2 })
    assert.is_false(ok)
    assert.matches("check_nan_inf takes 0 or 1, got 2", err)
    ok, err = pcall(oar.set_flags, { check_nan_inf = "yes" })
    assert.is_false(ok)
    assert.matches("flag 'check_nan_inf' must be a boolean or an integer", err)
    assert.equal(0, oar.get_flags("check_nan_inf").check_nan_inf)
  end)
end)
