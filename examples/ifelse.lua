#!/usr/bin/env luajit
-- ifelse.lua: the IfElse program of Fluid's block design ("Blocks with if-else
-- and IfElseOp"), with oar.
--
--   x = minibatch([10, 20, 30])   -- shape [N, 1]
--   y = var(1)                    -- shape [1]
--   z = minibatch([10, 20, 30])   -- shape [N, 1]
--   cond = larger_than(x, 15)     -- [false, true, true]
--   true block:  d = x + y;  outputs d, softmax(d)
--   false block: d = fc(z);  outputs d, d + 1
--   o1, o2 = ie(cond)
--
-- Runs it, prints o1 and o2, and checks them against the same computation
-- done row by row in plain Lua (with the fc's parameters read back from the
-- scope). Exits with status 1 on a mismatch.
--
--   luajit examples/ifelse.lua

-- A source checkout runs without installing (lua/ and build/ next to examples/).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)[^/]*$") or "./") .. "checkout.lua")

local oar = require("oar")
local layers = oar.layers

local main, startup = oar.Program(), oar.Program()
local o1, o2
oar.program_guard(main, startup, function()
  local x = layers.data{ name = "x", shape = { 1 }, dtype = "float32" }
  local z = layers.data{ name = "z", shape = { 1 }, dtype = "float32" }
  local y = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 1 }
  local fifteen = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 15 }
  local cond = layers.greater_than{ x = x, y = fifteen }

  local ie = layers.IfElse(cond)
  ie:true_block(function()
    local d = layers.elementwise_add{ x = ie:input(x), y = y }
    ie:output(d, layers.softmax(d))
  end)
  ie:false_block(function()
    local d = layers.fc{ input = ie:input(z), size = 1, param_attr = oar.ParamAttr{ name = "fc.w" },
                         bias_attr = oar.ParamAttr{ name = "fc.b" } }
    ie:output(d, d + 1)
  end)
  o1, o2 = ie()
end)

local exe = oar.Executor(oar.CPUPlace())
local scope = oar.Scope()
exe:run(startup, { scope = scope })
local xs = { { 10 }, { 20 }, { 30 } }
local out = exe:run(main, { feed = { x = xs, z = xs }, fetch_list = { o1, o2 }, scope = scope })

print("o1 = " .. tostring(out[1]))
print("o2 = " .. tostring(out[2]))

-- the same program, one row at a time, in plain Lua (float32 arithmetic is
-- compared with a tolerance)
local w = scope:find_var("fc.w"):get_tensor():get(1, 1)
local b = scope:find_var("fc.b"):get_tensor():get(1)
local ok = true
for i, row in ipairs(xs) do
  local xv = row[1]
  local want1, want2
  if xv > 15 then
    local d = xv + 1
    want1, want2 = d, 1.0          -- softmax over one value
  else
    local d = xv * w + b
    want1, want2 = d, d + 1
  end
  local got1, got2 = out[1]:get(i, 1), out[2]:get(i, 1)
  local good = math.abs(got1 - want1) <= 1e-5 * math.max(1, math.abs(want1))
           and math.abs(got2 - want2) <= 1e-5 * math.max(1, math.abs(want2))
  print(string.format("row %d: x = %g, cond = %s, o1 = %.6g (Lua %.6g), o2 = %.6g (Lua %.6g) %s", i, xv,
    tostring(xv > 15), got1, want1, got2, want2, good and "ok" or "MISMATCH"))
  ok = ok and good
end
if not ok then
  io.stderr:write("ifelse: the program's outputs differ from the plain-Lua computation\n")
  os.exit(1)
end
print("ifelse: outputs match the plain-Lua computation")
