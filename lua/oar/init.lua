--- oar: a deep learning environment shaped like PaddlePaddle Fluid 1.x.
--
--     local oar = require("oar")
--     local layers = oar.layers
--
-- This table gathers the public API; each part lives in its own module
-- under oar/, where its functions are documented. The `oar` table's own
-- fields are those modules' functions under a short name:
--
-- * programs (oar.framework): `oar.Program`, `oar.Block`, `oar.Variable`,
--   `oar.Operator`, `oar.default_main_program`, `oar.default_startup_program`,
--   `oar.switch_main_program`, `oar.switch_startup_program`,
--   `oar.program_guard`, `oar.name_scope`, `oar.is_variable`,
--   `oar.is_parameter`, `oar.OpRole`;
-- * building: `oar.ParamAttr` (oar.param_attr), `oar.LayerHelper`
--   (oar.layer_helper), `oar.append_backward` and `oar.gradients`
--   (oar.backward), `oar.embedding` and `oar.one_hot` (oar.input, Fluid's
--   fluid.embedding and fluid.one_hot);
-- * running: `oar.CPUPlace`, `oar.CUDAPlace`, `oar.is_compiled_with_cuda`
--   (oar.place), `oar.Executor` (oar.executor), `oar.Tensor`, `oar.LoDTensor`
--   (oar.tensor), `oar.Scope` (oar.scope's new), `oar.global_scope`,
--   `oar.scope_guard` (oar.scope);
-- * switches (oar.flags): `oar.set_flags`, `oar.get_flags`, `oar.seed`;
-- * eager mode (oar.eager, docs/eager.md), tensors that compute when called:
--   `oar.zeros`, `oar.ones`, `oar.full`, `oar.eye`, `oar.rand`, `oar.randn`,
--   `oar.randint`, `oar.arange`, `oar.linspace`, `oar.save`, `oar.load`,
--   `oar.no_grad`, `oar.is_grad_enabled`, and every Tensor method as a
--   function: `oar.add`, `oar.sub`, `oar.mul`, `oar.div`, `oar.pow`,
--   `oar.neg`, `oar.maximum`, `oar.minimum`, `oar.eq`, `oar.ne`, `oar.lt`,
--   `oar.le`, `oar.gt`, `oar.ge`, `oar.matmul`, `oar.mm`, `oar.t`,
--   `oar.transpose`, `oar.permute`, `oar.reshape`, `oar.view`,
--   `oar.squeeze`, `oar.unsqueeze`, `oar.sum`, `oar.mean`, `oar.prod`,
--   `oar.max`, `oar.min`, `oar.argmax`, `oar.argmin`, `oar.norm`,
--   `oar.exp`, `oar.log`, `oar.sqrt`, `oar.abs`, `oar.tanh`, `oar.sigmoid`,
--   `oar.relu`, `oar.floor`, `oar.ceil`, `oar.sin`, `oar.cos`,
--   `oar.square`, `oar.rsqrt`, `oar.reciprocal`, `oar.sign`, `oar.log1p`,
--   `oar.round`, `oar.softmax`, `oar.clamp`, `oar.cat`, `oar.stack`,
--   `oar.split`, `oar.narrow`, `oar.select`, `oar.index_select`,
--   `oar.gather`, `oar.where`, `oar.sort`, `oar.topk`, `oar.fill`,
--   `oar.zero`, `oar.copy`, `oar.clone`, `oar.float`, `oar.double`,
--   `oar.long`, `oar.int`, `oar.bool`, `oar.type`, `oar.contiguous`,
--   `oar.dim`, `oar.nDimension`, `oar.requires_grad`, `oar.detach`.
--
-- Modules: `oar.layers`, `oar.optimizer`, `oar.initializer`,
-- `oar.regularizer`, `oar.clip`, `oar.unique_name`, `oar.dtypes`,
-- `oar.framework`, `oar.backward`, `oar.tensor`, `oar.scope`; these load on
-- first use: `oar.nets`, `oar.io`, `oar.dataset`, `oar.reader`, `oar.data_feeder`
-- (`oar.DataFeeder`), `oar.profiler`, `oar.fleet`, `oar.amp`,
-- `oar.progress`, `oar.summary`, `oar.plot`, `oar.metrics`. Any other name
-- is an error with a suggestion ("oar: no field 'layres' (did you mean
-- 'layers'?)"); probe for an optional field with rawget(oar, name).
-- @module oar
-- @usage
-- local oar = require("oar")
-- local x = oar.layers.data{name = "x", shape = {13}}
-- local y = oar.layers.fc{input = x, size = 1}
-- local exe = oar.Executor(oar.CPUPlace())
-- exe:run(oar.default_startup_program())
if not pcall(require, "ffi") then
  error("oar needs LuaJIT (module 'ffi' not found): run it with luajit or the oar command", 2)
end
local framework = require("oar.framework")
local tensor = require("oar.tensor")
local scope = require("oar.scope")
local place = require("oar.place")
local executor = require("oar.executor")
local backward = require("oar.backward")
local flags = require("oar.flags")
local param_attr = require("oar.param_attr")

local oar = {}

-- programs
oar.Program = framework.Program
oar.Block = framework.Block
oar.Variable = framework.Variable
oar.Operator = framework.Operator
oar.default_main_program = framework.default_main_program
oar.default_startup_program = framework.default_startup_program
oar.switch_main_program = framework.switch_main_program
oar.switch_startup_program = framework.switch_startup_program
oar.program_guard = framework.program_guard
oar.name_scope = framework.name_scope
oar.is_variable = framework.is_variable
oar.is_parameter = framework.is_parameter
oar.OpRole = framework.OpRole
oar.framework = framework

-- building
oar.layers = require("oar.layers")
oar.unique_name = require("oar.unique_name")
oar.initializer = require("oar.initializer")
oar.regularizer = require("oar.regularizer")
oar.clip = require("oar.clip")
oar.optimizer = require("oar.optimizer")
oar.ParamAttr = param_attr
oar.LayerHelper = require("oar.layer_helper")
oar.append_backward = backward.append_backward
oar.gradients = backward.gradients
oar.backward = backward
oar.dtypes = require("oar.dtypes")
oar.embedding = require("oar.input").embedding   -- fluid.embedding (fluid/input.py)
oar.one_hot = require("oar.input").one_hot       -- fluid.one_hot (fluid/input.py)

-- running
oar.CPUPlace = place.CPUPlace
oar.CUDAPlace = place.CUDAPlace
oar.is_compiled_with_cuda = place.is_compiled_with_cuda
oar.Executor = executor.Executor
oar.Tensor = tensor
oar.tensor = tensor
oar.LoDTensor = tensor
oar.Scope = scope.new
oar.global_scope = scope.global_scope
oar.scope_guard = scope.scope_guard
oar.scope = scope

-- switches
oar.set_flags = flags.set_flags
oar.get_flags = flags.get_flags
oar.seed = flags.seed

-- eager mode (oar.eager, docs/eager.md): creation, math and autograd on
-- tensors, every method also a function (oar.matmul(a, b), oar.sum(a, 2));
-- names the table already gives a meaning (oar.tensor, oar.backward,
-- oar.seed) keep it
oar.eager = require("oar.eager")
for k, v in pairs(oar.eager) do
  if type(v) == "function" and not k:match("^_") and k ~= "run" and oar[k] == nil then oar[k] = v end
end
-- eager modules (oar.nn.Linear, ...; docs/eager.md, "Training a model eagerly")
oar.nn = require("oar.nn")

-- Modules written elsewhere join when first read (oar.io, oar.dataset, ...);
-- any other name is an error with a suggestion ("oar: no field 'layres'
-- (did you mean 'layers'?)"). Probe for an optional field with
-- rawget(oar, name) or pcall.
local aliases = { DataFeeder = function() return require("oar.data_feeder") end }
-- training conveniences (docs/api.md, "Training conveniences"): oar.progress{...}, oar.summary(prog),
-- oar.plot.curves/program, oar.metrics.logger/read; loaded on first use
for _, name in ipairs({ "progress", "summary", "plot", "metrics" }) do
  aliases[name] = function() return require("oar." .. name) end
end
local function lazy(t, k)
  if aliases[k] then
    local v = aliases[k]()
    rawset(t, k, v)
    return v
  end
  if type(k) ~= "string" or not k:match("^[%a_][%w_]*$") then return nil end
  local ok, mod = pcall(require, "oar." .. k)
  if ok then
    rawset(t, k, mod)
    return mod
  end
  if not tostring(mod):find("module 'oar." .. k .. "' not found", 1, true) then error(mod, 2) end
  return nil
end
require("oar.argcheck").strict_module(oar, "oar", lazy, {
  -- modules that load on first use, offered as suggestions before they are loaded
  extra = { "DataFeeder", "nets", "io", "data_feeder", "reader", "dataset", "profiler", "fleet", "progress",
            "summary", "plot", "metrics", "repl", "jit", "argcheck", "cdef", "lib", "place", "unique_name" },
})

return oar
