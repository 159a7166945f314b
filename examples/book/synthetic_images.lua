-- examples/book/synthetic_images.lua: CIFAR-10-shaped data for the
-- image_classification programs when CIFAR is not on the machine: 10
-- classes of [3, 32, 32] images, each class a fixed pattern (a colour
-- balance and a stripe orientation and frequency) under Gaussian noise, so
-- there is something to learn. Loaded with dofile; returns
-- batches(seed, batch_size, size) -> function() images, labels.
local oar = require("oar")
local book = dofile((debug.getinfo(1, "S").source:match("^@(.*/)[^/]*$") or "./") .. "common.lua")

local CLASSES = 10

return function(seed, batch_size, size, noise)
  size = size or 32
  noise = noise or 0.5
  local rng = book.rng(seed)
  -- class patterns, the same for every seed
  local prng = book.rng(12345)
  local patterns = {}
  for c = 1, CLASSES do
    local color = { prng.uniform() - 0.5, prng.uniform() - 0.5, prng.uniform() - 0.5 }
    local angle, freq, phase = prng.uniform() * math.pi, 0.2 + 0.6 * prng.uniform(), prng.uniform() * 2 * math.pi
    local p = {}
    for ch = 1, 3 do
      for i = 0, size - 1 do
        for j = 0, size - 1 do
          local u = math.cos(angle) * i + math.sin(angle) * j
          p[#p + 1] = color[ch] + 0.5 * math.sin(freq * u + phase + ch)
        end
      end
    end
    patterns[c] = p
  end
  local per = 3 * size * size
  return function()
    local images = oar.Tensor{ shape = { batch_size, 3, size, size }, dtype = "float32" }
    local labels = oar.Tensor{ shape = { batch_size, 1 }, dtype = "int64" }
    local x, y = images:data(), labels:data()
    for b = 0, batch_size - 1 do
      local c = rng.int(CLASSES)
      y[b] = c
      local p = patterns[c + 1]
      for k = 1, per do x[b * per + k - 1] = p[k] + noise * rng.normal() end
    end
    return images, labels
  end
end
