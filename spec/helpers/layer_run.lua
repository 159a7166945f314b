-- spec/helpers/layer_run.lua — small program scaffolding for the layer specs
-- that build one layer over a fed `x` and compare its values with plain Lua
-- (spec/layers_rearrange_spec.lua, spec/layers_rearrange2_spec.lua, the
-- conv3d and vision layer specs).
local oar = require("oar")
local CF = require("spec.helpers.cf_check")
local nest = require("spec.helpers.index").nest
local numel = require("spec.helpers.index").numel
local R = require("spec.helpers.random")
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

-- runs build(x) on a float64 x of `xshape` (no batch dim added) fed with
-- R.symmetric(numel(xshape), seed); build may return several variables.
-- Returns { data = values (flat), shape = } for each output, the fed x
-- (flat) and the main program
function M.run_symmetric(xshape, seed, build)
  local main, startup = oar.Program(), oar.Program()
  local outs
  oar.program_guard(main, startup, function()
    local v = layers.data{ name = "x", shape = xshape, dtype = "float64", append_batch_size = false }
    outs = { build(v) }
  end)
  local x = R.symmetric(numel(xshape), seed)
  local t = oar.Tensor{ shape = xshape, dtype = "float64" }
  local p = t:data()
  for i = 1, #x do p[i - 1] = x[i] end
  local exe = oar.Executor(oar.CPUPlace())
  exe:run(startup)
  local got = exe:run(main, { feed = { x = t }, fetch_list = outs })
  local res = {}
  for i, g in ipairs(got) do
    local flat, d = {}, g:data()
    for j = 1, numel(g:shape()) do flat[j] = tonumber(d[j - 1]) end
    res[i] = { data = flat, shape = g:shape() }
  end
  return res, x, main
end

return M
