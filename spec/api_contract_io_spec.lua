-- The API contract (docs/api.md): saving, loading, deploying. One of the
-- api_contract_*_spec.lua files (one per API area): every table row, bullet,
-- keyword default and code-sample call has at least one assertion, with
-- expected values worked out by hand in the comments.
local oar = require("oar")
local A = require("spec.helpers.api")
local layers = oar.layers

local THIS_FILE = "api_contract_io_spec.lua"

-- ---- helpers (spec/helpers/api.lua) ---------------------------------------------
local errmsg, eval, near, op_types, contains = A.errmsg, A.eval, A.near, A.op_types, A.contains
local build, run = A.build, A.run
local Constant, const_attr, X23 = oar.initializer.Constant, A.const_attr, A.X23


-- ==== Saving, loading, deploying ===========================================================
describe("API: saving, loading, deploying", function()
  local F = require("spec.helpers.files")
  local tmpdir, rmtree, exists = F.tmpdir, F.rmtree, F.exists

  local function model()
    return build(function()
      local x = layers.data{ name = "x", shape = { 2 } }
      local y = layers.fc{ input = x, size = 1, param_attr = oar.ParamAttr{ name = "io_w", initializer = Constant{ value = 2 } },
                           bias_attr = oar.ParamAttr{ name = "io_b", initializer = Constant{ value = 0.5 } } }
      local loss = layers.mean(y)
      oar.optimizer.Momentum{ learning_rate = 0.1, momentum = 0.9 }:minimize(loss)
      return y
    end)
  end

  it("save_params/load_params: one file per variable by default, filename= for one file", function()
    local main, startup = model()
    local exe = oar.Executor(oar.CPUPlace())
    local dir = tmpdir()
    local s1 = oar.Scope()
    oar.scope_guard(s1, function()
      exe:run(startup)
      oar.io.save_params(exe, dir, main)
      oar.io.save_params(exe, dir .. "_c", main, { filename = "all_params" })
    end)
    assert.is_true(exists(dir .. "/io_w"))
    assert.is_true(exists(dir .. "/io_b"))
    assert.is_true(exists(dir .. "_c/all_params"))
    assert.is_false(exists(dir .. "_c/io_w"))
    for _, d in ipairs({ { dir }, { dir .. "_c", { filename = "all_params" } } }) do
      local s2 = oar.Scope()
      oar.scope_guard(s2, function()
        oar.io.load_params(exe, d[1], main, d[2])
      end)
      near({ { 2 }, { 2 } }, s2:find_var("io_w"):get_tensor():totable())
      near({ 0.5 }, s2:find_var("io_b"):get_tensor():totable())
    end
    rmtree(dir)
    rmtree(dir .. "_c")
  end)

  it("save_persistables/load_persistables include optimizer state", function()
    local main, startup = model()
    local exe = oar.Executor(oar.CPUPlace())
    local dir = tmpdir()
    local s1 = oar.Scope()
    exe:run(startup, { scope = s1 })
    exe:run(main, { feed = { x = { { 1, 1 } } }, scope = s1 })
    oar.scope_guard(s1, function() oar.io.save_persistables(exe, dir, main) end)
    local velocity
    for _, v in ipairs(main:global_block():vars()) do
      if v.persistable and v.name:find("velocity", 1, true) then velocity = v.name end
    end
    assert.truthy(velocity)
    assert.is_true(exists(dir .. "/" .. velocity))
    local s2 = oar.Scope()
    oar.scope_guard(s2, function() oar.io.load_persistables(exe, dir, main) end)
    -- one step: grad of w = the mean row of x = 1 each; velocity = 1; w = 2 - 0.1
    near({ { 1.9 }, { 1.9 } }, s2:find_var("io_w"):get_tensor():totable())
    near({ { 1 }, { 1 } }, s2:find_var(velocity):get_tensor():totable())
    rmtree(dir)
  end)

  it("save_inference_model/load_inference_model and the C predictor read the same directory", function()
    local main, startup, y = model()
    local exe = oar.Executor(oar.CPUPlace())
    local dir = tmpdir()
    local s1 = oar.Scope()
    oar.scope_guard(s1, function()
      exe:run(startup)
      oar.io.save_inference_model(dir, { "x" }, { y }, exe, main)
    end)
    assert.is_true(exists(dir .. "/__model__"))
    local prog, feed_names, fetch_targets
    local s2 = oar.Scope()
    oar.scope_guard(s2, function()
      prog, feed_names, fetch_targets = oar.io.load_inference_model(dir, exe)
      assert.is_true(oar.framework.is_program(prog))
      assert.are.same({ "x" }, feed_names)
      assert.are.equal(1, #fetch_targets)
      assert.is_true(oar.is_variable(fetch_targets[1]))
      local out = exe:run(prog, { feed = { x = { { 1, 2 }, { 0, 1 } } }, fetch_list = fetch_targets })
      near({ { 6.5 }, { 2.5 } }, out[1]:totable())          -- 2*(1+2) + 0.5, 2*(0+1) + 0.5
    end)
    -- no optimizer or backward op survives
    for _, op in ipairs(prog:global_block():ops()) do
      assert.is_nil(op.type:find("_grad", 1, true))
      assert.are_not.equal("momentum", op.type)
    end
    -- the C API
    local ffi = require("ffi")
    local C = require("oar.lib").C
    local pp = ffi.new("oar_predictor_t *[1]")
    assert.are.equal(0, C.oar_predictor_load(dir, pp))
    local p = ffi.gc(pp[0], C.oar_predictor_free)
    local data = ffi.new("float[4]", { 1, 2, 0, 1 })
    local dims = ffi.new("int64_t[2]", { 2, 2 })
    assert.are.equal(0, C.oar_predictor_set_input(p, "x", data, dims, 2))
    assert.are.equal(0, C.oar_predictor_run(p))
    local od, odims, ond = ffi.new("const float *[1]"), ffi.new("const int64_t *[1]"), ffi.new("int[1]")
    assert.are.equal(0, C.oar_predictor_get_output(p, 0, od, odims, ond))
    assert.are.equal(2, ond[0])
    assert.are.equal(2, tonumber(odims[0][0]))
    assert.are.equal(1, tonumber(odims[0][1]))
    near(6.5, od[0][0])
    near(2.5, od[0][1])
    -- failures return nonzero and say why
    assert.are_not.equal(0, C.oar_predictor_set_input(p, "nope", data, dims, 2))
    assert.truthy(ffi.string(C.oar_last_error()):find("nope", 1, true))
    assert.are_not.equal(0, C.oar_predictor_get_output(p, 5, od, odims, ond))
    assert.is_true(#ffi.string(C.oar_last_error()) > 0)
    assert.are_not.equal(0, C.oar_predictor_load(dir .. "/missing", pp))
    assert.is_true(#ffi.string(C.oar_last_error()) > 0)
    rmtree(dir)
  end)
end)
