--- Control flow (Fluid's layers/control_flow.py) with closures in place of
-- `with` blocks: While, while_loop, ConditionalBlock, Switch, IfElse, cond,
-- case, switch_case, is_empty, StaticRNN,
-- DynamicRNN, and the tensor-array and LoD rank-table layers they are built
-- from. Merged into `oar.layers`; one construct per module under
-- oar/layers/control_flow/.
--
-- A closure runs between program:create_block() and program:rollback(); the
-- block is restored also when the closure errors. When a While or
-- conditional body is complete, its writes to outer variables are put in
-- single-assignment form: a write that later ops of the body still read
-- goes to a body-local variable, and one `assign` at the end of the body
-- stores the final value. Every op of the body then reads an outer variable
-- as it was when the body started, which is the value the control-flow op
-- shows the body's grad ops (see src/ops/control_flow.c).
-- @module oar.layers.control_flow
local M = {}

for _, part in ipairs({ "arrays", "while", "switch", "cond", "case", "ifelse", "static_rnn", "dynamic_rnn", "print" }) do
  for k, v in pairs(require("oar.layers.control_flow." .. part)) do
    assert(M[k] == nil, "control_flow: two modules define " .. k)
    M[k] = v
  end
end

M._describe = require("oar.framework").describe
return M
