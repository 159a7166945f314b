--- oar.layers: every layer function in one table, like fluid.layers. The
-- control-flow and sequence modules join in when they exist.
-- @module oar.layers
local M = {}
-- visible before the optional modules load, so they may require("oar.layers")
package.loaded["oar.layers"] = M

local function merge(modname, required)
  local ok, mod = pcall(require, modname)
  if not ok then
    -- a missing optional module is fine; a broken one must not be hidden
    if required or not tostring(mod):find("module '" .. modname .. "' not found", 1, true) then
      error(mod, 0)
    end
    return
  end
  for k, v in pairs(mod) do
    if M[k] == nil then M[k] = v end
  end
end

merge("oar.layers.nn", true)
merge("oar.layers.tensor", true)
merge("oar.layers.loss", true)
merge("oar.layers.learning_rate", true)
merge("oar.layers.extra", true)
merge("oar.layers.manip", true)
merge("oar.layers.rearrange", true)
merge("oar.layers.beam", true)
merge("oar.layers.ctc", true)
merge("oar.layers.losses", true)
merge("oar.layers.linalg", true)
merge("oar.layers.rearrange2", true)
merge("oar.layers.linalg2", true)
require("oar.layers.math")   -- Variable operators
merge("oar.layers.control_flow", false)
merge("oar.layers.sequence", false)
merge("oar.layers.crf", true)
merge("oar.layers.sequence_ext", true)
merge("oar.layers.vision", true)
merge("oar.layers.metric_ext", true)
merge("oar.layers.conv3d", true)
merge("oar.layers.vision_more", true)
merge("oar.layers.vision_norm", true)
merge("oar.layers.sampling", true)
merge("oar.layers.rnn_api", true)
merge("oar.layers.tensor_create", true)
merge("oar.layers.tensor_shape", true)
merge("oar.layers.tensor_window", true)

merge("oar.layers.seq_ctr", true)
merge("oar.layers.nn_last", true)
merge("oar.layers.roi", true)

-- a name oar.layers does not have is an error with a suggestion
-- ("oar.layers: no field 'fcc' (did you mean 'fc'?)"); probe with rawget
require("oar.argcheck").strict_module(M, "oar.layers")

return M
