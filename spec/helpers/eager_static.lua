-- spec/helpers/eager_static.lua — one MLP (6 -> 8 -> 3, softmax cross
-- entropy) trained `steps` times on one batch eagerly and in a static
-- program started from the eager model's initial parameters, for the specs
-- that hold eager optimizers to the static optimize pass bit for bit
-- (spec/eager_nn_spec.lua, spec/eager_optim_spec.lua).
--
--   local ES = require("spec.helpers.eager_static")
--   local scope, sd, init = ES.train(make_opt, steps, function(model) return model:parameters() end)
--   for sname, ename in pairs(ES.MAP) do ... scope:find_var(sname) ... sd[ename] ... end
local oar = require("oar")
local nn = oar.nn
local F = nn.functional
local layers = oar.layers

local M = {}

-- the static parameters' names -> the eager state_dict's keys
M.MAP = { w0 = "0.weight", b0 = "0.bias", w2 = "2.weight", b2 = "2.bias" }

-- make_opt(extra, static) makes the optimizer (extra: the keys to add, the
-- eager parameters when not static); params(model) lists the eager
-- parameters. Returns the static scope, the eager state_dict and the
-- initial state_dict (cloned).
function M.train(make_opt, steps, params)
  oar.seed(42)
  local model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
  local x = oar.randn(10, 6)
  local label = oar.randint(0, 3, { 10, 1 })
  local init = {}
  for k, v in pairs(model:state_dict()) do init[k] = v:clone() end
  -- static
  local main, startup = oar.Program(), oar.Program()
  oar.unique_name.guard(function()
    oar.program_guard(main, startup, function()
      local xv = layers.data{ name = "x", shape = { 6 } }
      local lv = layers.data{ name = "label", shape = { 1 }, dtype = "int64" }
      local h = layers.fc{ input = xv, size = 8, act = "relu", param_attr = oar.ParamAttr{ name = "w0" },
                           bias_attr = oar.ParamAttr{ name = "b0" } }
      local o = layers.fc{ input = h, size = 3, param_attr = oar.ParamAttr{ name = "w2" },
                           bias_attr = oar.ParamAttr{ name = "b2" } }
      local loss = layers.mean(layers.softmax_with_cross_entropy{ logits = o, label = lv })
      make_opt({}, true):minimize(loss)
    end)
  end)
  local exe = oar.Executor(oar.CPUPlace())
  local scope = oar.Scope()
  exe:run(startup, { scope = scope })
  for sname, ename in pairs(M.MAP) do scope:var(sname):set_tensor(init[ename]:clone()) end
  for _ = 1, steps do exe:run(main, { feed = { x = x, label = label }, scope = scope }) end
  -- eager
  local opt = make_opt({ parameters = params(model) }, false)
  for _ = 1, steps do
    F.cross_entropy(model(x), label):backward()
    opt:step()
    opt:zero_grad()
  end
  return scope, model:state_dict(), init
end

-- a copy of base with extra's keys added
function M.with(base, extra)
  local t = {}
  for k, v in pairs(base) do t[k] = v end
  for k, v in pairs(extra) do t[k] = v end
  return t
end

return M
