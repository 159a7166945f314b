--- Data sets, like Fluid's `paddle.dataset`.
--
-- Submodules load on first use, so `require("oar.dataset")` costs nothing:
--
-- * `oar.dataset.fashion_mnist`: Fashion-MNIST readers, bulk loader, batches
-- * `oar.dataset.idx`: IDX file reader and writer (gzip or plain)
-- * `oar.dataset.split(data, {validation=, seed=})`: a train/validation split
-- @module oar.dataset
local M = {}

local submodules = { fashion_mnist = true, idx = true, split = true }

setmetatable(M, {
  __index = function(t, k)
    if submodules[k] then
      local mod = require("oar.dataset." .. k)
      rawset(t, k, mod)
      return mod
    end
    return nil
  end,
})

return M
