-- The API contract (docs/api.md): no call, whatever its arguments, crashes the process (the contract fuzz). One of the
-- api_contract_*_spec.lua files (one per API area): every table row, bullet,
-- keyword default and code-sample call has at least one assertion, with
-- expected values worked out by hand in the comments.
local oar = require("oar")
local A = require("spec.helpers.api")
local layers = oar.layers

local THIS_FILE = "api_contract_no_crash_spec.lua"

-- ---- helpers (spec/helpers/api.lua) ---------------------------------------------
local errmsg, eval, near, op_types, contains = A.errmsg, A.eval, A.near, A.op_types, A.contains
local build, run = A.build, A.run
local Constant, const_attr, X23 = oar.initializer.Constant, A.const_attr, A.X23


-- ==== No call may crash the process ========================================================
-- Every public function and method, called with nil, a number, a string and an
-- empty table in each argument position (and in all at once), returns or raises
-- a Lua error with a message; a crash would end this process. Messages must be
-- oar's own, not Lua's ("attempt to index a nil value").
describe("API: no call, whatever its arguments, crashes the process", function()
  local BAD = { { "nil", function() return nil end }, { "a number", function() return 42 end },
                { "a string", function() return "str" end }, { "an empty table", function() return {} end } }

  local function arity(f)
    local info = debug.getinfo(f, "u")
    local n = info.nparams or 2
    if info.isvararg then n = n + 2 end
    return math.max(1, math.min(n, 4))
  end

  local calls, failures = 0, {}
  local function try(label, f, args, n)
    calls = calls + 1
    local ok, err = pcall(f, unpack(args, 1, n))
    if ok then return end
    if type(err) ~= "string" or err == "" then
      failures[#failures + 1] = label .. ": error value is " .. tostring(err)
      return
    end
    if err:find("attempt to ", 1, true) or err:find("bad argument #", 1, true) then
      failures[#failures + 1] = label .. ": unclear message: " .. err
    end
  end

  -- f(...) with each position bad in turn (the others nil), then all bad;
  -- `make_self` (methods) gives a fresh receiver for each call
  local function fuzz(label, f, make_self)
    local first = make_self and 2 or 1
    local n = math.max(arity(f), first)
    local function args_with(pos, bad)
      local args = {}
      if make_self then args[1] = make_self() end
      if pos then args[pos] = bad() else for i = first, n do args[i] = bad() end end
      return args
    end
    for _, b in ipairs(BAD) do
      for pos = first, n do try(string.format("%s arg %d = %s", label, pos - first + 1, b[1]), f, args_with(pos, b[2]), n) end
      try(label .. " all = " .. b[1], f, args_with(nil, b[2]), n)
      if make_self then try(label .. " self = " .. b[1], f, { b[2]() }, n) end   -- '.' for ':'
    end
  end

  local function public_functions(t)
    local names = {}
    for k, v in pairs(t) do
      if type(k) == "string" and type(v) == "function" and not k:match("^_") then names[#names + 1] = k end
    end
    table.sort(names)
    return names
  end

  local function methods(obj)
    local seen, names = {}, {}
    local function add(t)
      if type(t) ~= "table" then return end
      for k, v in pairs(t) do
        if type(k) == "string" and type(v) == "function" and not k:match("^_") and not seen[k] then
          seen[k] = true
          names[#names + 1] = k
        end
      end
    end
    local mt = getmetatable(obj)
    add(obj)
    if mt then add(mt); add(type(mt.__index) == "table" and mt.__index or nil) end
    if oar.is_variable(obj) then add(oar.Variable) end
    if oar.framework.is_block(obj) then add(oar.Block) end
    if oar.framework.is_operator(obj) then add(oar.Operator) end
    table.sort(names)
    return names
  end

  it("module functions and methods of every class", function()
    local seed = oar.seed()
    local main, startup = oar.Program(), oar.Program()
    oar.unique_name.guard(function()
      oar.program_guard(main, startup, function()
        local modules = { oar = oar, ["oar.layers"] = layers, ["oar.optimizer"] = oar.optimizer,
          ["oar.regularizer"] = oar.regularizer, ["oar.clip"] = oar.clip, ["oar.initializer"] = oar.initializer,
          ["oar.io"] = oar.io, ["oar.tensor"] = oar.tensor, ["oar.backward"] = oar.backward }
        local mod_names = {}
        for name in pairs(modules) do mod_names[#mod_names + 1] = name end
        table.sort(mod_names)
        for _, mname in ipairs(mod_names) do
          for _, fname in ipairs(public_functions(modules[mname])) do
            -- oar.save(42, "str") is a valid call: it would write ./str
            if not (mname == "oar" and fname == "save") then
              fuzz(mname .. "." .. fname, modules[mname][fname])
            end
          end
        end

        local x = layers.data{ name = "fz_x", shape = { 3 } }
        local cond1 = layers.less_than{ x = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 0 },
                                        y = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 1 } }
        local condN = layers.less_than{ x = layers.reduce_sum{ input = x, dim = 1, keep_dim = true },
                                        y = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 1 } }
        local classes = {
          { "Program", function() return oar.Program() end },
          { "Block", function() return oar.Program():global_block() end },
          { "Block(child)", function() return oar.Program():create_block() end },
          { "Variable", function() return oar.Program():global_block():create_var{ name = "v", shape = { 2 } } end },
          { "Parameter", function()
            return oar.Program():global_block():create_parameter{ name = "p", shape = { 2 }, dtype = "float32" } end },
          { "Operator", function()
            local b = oar.Program():global_block()
            local v = b:create_var{ name = "v", shape = { 2 } }
            return b:append_op{ type = "relu", inputs = { X = { v } }, outputs = { Out = { b:create_var{ name = "o" } } } }
          end },
          { "Tensor", function() return oar.Tensor({ { 1, 2 }, { 3, 4 } }) end },
          { "Scope", function() return oar.Scope() end },
          { "ScopeVariable", function() return oar.Scope():var("a") end },
          { "Executor", function() return oar.Executor(oar.CPUPlace()) end },
          { "Initializer", function() return oar.initializer.Xavier() end },
          { "Regularizer", function() return oar.regularizer.L2Decay(0.1) end },
          { "GradientClip", function() return oar.clip.GradientClipByGlobalNorm{ clip_norm = 1 } end },
          { "ParamAttr", function() return oar.ParamAttr{ name = "w" } end },
          { "Place", function() return oar.CPUPlace() end },
          { "IfElse", function() return layers.IfElse(condN) end },
          { "StaticRNN", function() return layers.StaticRNN() end },
          { "DynamicRNN", function() return layers.DynamicRNN() end },
          { "While", function() return layers.While(cond1) end },
          { "Switch", function() return layers.Switch() end },
          { "ConditionalBlock", function() return layers.ConditionalBlock({ cond1 }, true) end },
        }
        for _, k in ipairs({ "SGD", "Momentum", "Adam", "Adagrad", "RMSProp", "Adamax", "Adadelta" }) do
          classes[#classes + 1] = { k, function() return oar.optimizer[k]{ learning_rate = 0.1 } end }
        end
        for _, c in ipairs(classes) do
          for _, m in ipairs(methods(c[2]())) do
            if m ~= "close" then
              fuzz(c[1] .. ":" .. m, c[2]()[m], c[2])
            end
          end
        end
      end)
    end)
    oar.seed(seed)
    assert.is_true(calls > 2000, "only " .. calls .. " calls made")
    assert.are.same({}, failures)
  end)

  it("Executor:close, then run, is an error", function()
    local exe = oar.Executor(oar.CPUPlace())
    exe:close()
    exe:close()
    assert.truthy(errmsg(exe.run, exe, oar.Program()):find("closed", 1, true))
  end)
end)
