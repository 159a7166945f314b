--- oar.layers.control_flow.print: Print (values to stderr as the op runs).
-- @module oar.layers.control_flow.print
local framework = require("oar.framework")
local LayerHelper = require("oar.layer_helper")
local argcheck = require("oar.argcheck")
local common = require("oar.layers.control_flow.common")

local check = LayerHelper.check
local tensor_arg = common.tensor_arg

local M = {}

-- ---- Print ---------------------------------------------------------------------------------

--- Writes `input`'s values to stderr each time the op runs (each step
-- inside a While or an RNN) and returns `input`. The print op only looks;
-- gradients flow around it.
-- @tparam Variable input a tensor Variable
-- @tparam[opt] table a options:
-- @tparam[opt=-1] int a.first_n print only the first n times (-1: always)
-- @tparam[opt=""] string a.message printed before the values
-- @tparam[opt=20] int a.summarize how many values to print (-1: all)
-- @tparam[opt=true] bool a.print_tensor_name
-- @tparam[opt=true] bool a.print_tensor_type
-- @tparam[opt=true] bool a.print_tensor_shape
-- @tparam[opt=true] bool a.print_tensor_lod
-- @tparam[opt="both"] string a.print_phase "forward", "backward" or "both"
-- @tparam[opt] string a.name
-- @treturn Variable input
-- @usage layers.Print(loss, {message = "loss", summarize = 1})
function M.Print(input, a)
  tensor_arg("Print", "input", input)
  a = a or {}
  if type(a) ~= "table" then check.fail("Print", "options", "a table", a) end
  argcheck.keys("layers.Print", a, "first_n message summarize print_tensor_name print_tensor_type "
    .. "print_tensor_shape print_tensor_lod print_phase name")
  local helper = LayerHelper("print", a)
  helper:append_op{ type = "print", inputs = { In = { input } }, attrs = {
    first_n = check.int("Print", "first_n", a.first_n, -1),
    message = check.string("Print", "message", a.message, ""),
    summarize = check.int("Print", "summarize", a.summarize, 20),
    print_tensor_name = check.boolean("Print", "print_tensor_name", a.print_tensor_name, true),
    print_tensor_type = check.boolean("Print", "print_tensor_type", a.print_tensor_type, true),
    print_tensor_shape = check.boolean("Print", "print_tensor_shape", a.print_tensor_shape, true),
    print_tensor_lod = check.boolean("Print", "print_tensor_lod", a.print_tensor_lod, true),
    print_phase = check.string("Print", "print_phase", a.print_phase, "both", { "forward", "backward", "both" }) } }
  return input
end


return M
