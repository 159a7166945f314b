-- spec/helpers/layer_run.lua — small program scaffolding for the layer specs
-- that build one layer over a fed `x` and compare its values with plain Lua
-- (spec/layers_rearrange_spec.lua, spec/layers_rearrange2_spec.lua).
local oar = require("oar")
local CF = require("spec.helpers.cf_check")
local nest = require("spec.helpers.index").nest
local expect_error = require("spec.helpers.expect_error")
local layers = oar.layers

local M = {}

-- runs build(x) on x fed with `vals` (flat) of `shape` (1-D or 2-D, no batch
-- dim added); returns the fetched values (flat) and the main program
function M.run(shape, vals, build, dtype)
  local main, startup = oar.Program(), oar.Program()
  local outs
  oar.program_guard(main, startup, function()
    local x = layers.data{ name = "x", shape = shape, dtype = dtype or "float32", append_batch_size = false }
    outs = build(x)
    if oar.framework.is_variable(outs) then outs = { outs } end
  end)
  local exe = oar.Executor()
  local res = exe:run(main, { feed = { x = oar.Tensor(nest(vals, shape), dtype or "float32") },
                             fetch_list = outs })
  local flat = {}
  for i, t in ipairs(res) do flat[i] = CF.flat(t) end
  return flat, main
end

-- the first op of that type in the main block
function M.op_of(main, type)
  for _, op in ipairs(main:global_block():ops()) do if op.type == type then return op end end
end

-- fn fails with an error containing msg (plain text)
function M.refuses(fn, msg) expect_error(fn, msg) end

function M.in_prog(fn)
  return oar.program_guard(oar.Program(), oar.Program(), fn)
end

-- a data var of exactly that shape (no batch dim)
function M.data(name, shape, dtype)
  return layers.data{ name = name, shape = shape, dtype = dtype or "float32", append_batch_size = false }
end

return M
