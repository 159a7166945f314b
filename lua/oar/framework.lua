--- Program, Block, Variable, Parameter and Operator over C's ProgramDesc
-- (Fluid's Python API design; docs/design.md, "The Lua side"). The desc in C is the single source of truth; Lua
-- objects are views on it plus the construction-time facts that the desc
-- does not hold (a Parameter's trainable, regularizer, ...). One concept per
-- module under oar/framework/; this module gathers them.
-- @module oar.framework
local I = require("oar.framework.core")
for _, part in ipairs({ "program", "block", "attrs", "variable", "operator", "text" }) do
  require("oar.framework." .. part)
end
local M = I.M
local Block = I.Block
local Operator = I.Operator
local Program = I.Program
local Variable = I.Variable
local describe = I.describe
local is_block = I.is_block
local is_operator = I.is_operator
local is_program = I.is_program
local is_variable = I.is_variable
local raise = I.raise

-- ==== methods called on the wrong thing ==============================================
-- prog.block(3) or Block.var("x") (a '.' for a ':') would fail somewhere
-- inside with a message about oar's internals, or hand C a bad handle; every
-- public method checks its receiver first.
-- wrapper -> the method it guards (weak keys), so tools that read a
-- function's source (the REPL's ?name help) find the real definition
M.guarded = setmetatable({}, { __mode = "k" })
local function guard_methods(class, test, what, static)
  for name, f in pairs(class) do
    if type(f) == "function" and not name:match("^_") and not static[name] then
      local wrapper
      wrapper = function(self, ...)
        if not test(self) then
          raise(string.format("%s:%s: call it with ':' on %s %s, got %s", what, name,
            what:match("^[AEIOU]") and "an" or "a", what, self == nil and "nil" or describe(self)))
        end
        return f(self, ...)
      end
      class[name] = wrapper
      M.guarded[wrapper] = f
    end
  end
end
guard_methods(Program, is_program, "Program", { new = true, parse = true, parse_from_string = true })
guard_methods(Block, is_block, "Block", {})
guard_methods(Operator, is_operator, "Operator", {})
guard_methods(Variable, is_variable, "Variable", {})
M._guard_methods = guard_methods

return M
