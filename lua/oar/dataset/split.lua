--- Holds out a validation part of a data set (oar.dataset.split).
-- @module oar.dataset.split
--
--   local data = fashion_mnist.load("train")                   -- 60000 samples
--   local train, valid = oar.dataset.split(data, {validation = 5000, seed = 1})
--   for x, y, n in fashion_mnist.batches(train, 64, {seed = epoch}) do ... end
--   for x, y, n in fashion_mnist.batches(valid, 500) do ... end
--
--   local train_reader, valid_reader = oar.dataset.split(fashion_mnist.train(), {validation = 0.1})
--
-- The validation samples are the first k of a permutation of 0..N-1 drawn
-- from `seed` (oar.reader.rng, SplitMix64): the same seed gives the same
-- split on every run and machine, the two parts are disjoint and together
-- hold every sample exactly once. Each part keeps the samples' original order
-- (shuffling is the batches' or the reader's business).
local ffi = require("ffi")
local argcheck = require("oar.argcheck")
local reader = require("oar.reader")

local ARGS = { validation = true, seed = true, count = true }

-- The number of validation samples out of n.
local function validation_count(v, n, who)
  if type(v) ~= "number" or v ~= v or v <= 0 then
    error(string.format("%s: validation must be a fraction in (0, 1) or a count of samples, got %s",
                        who, tostring(v)), 3)
  end
  local k
  if v < 1 then
    k = math.floor(v * n + 0.5)
  elseif v % 1 == 0 then
    k = v
  else
    error(string.format("%s: validation must be a fraction in (0, 1) or a whole count of samples, got %s",
                        who, tostring(v)), 3)
  end
  if k < 1 or k >= n then
    error(string.format("%s: validation of %s leaves %d of the %d samples for validation; both parts need at least one",
                        who, tostring(v), k, n), 3)
  end
  return k
end

-- Marks the validation samples: a bool array over 0..n-1.
local function held_out(n, k, seed)
  local order = ffi.new("int32_t[?]", n)
  for i = 0, n - 1 do order[i] = i end
  -- only the first k places are needed: a partial Fisher-Yates from the front
  local rng = reader.rng(seed)
  for i = 0, k - 1 do
    local j = rng:randint(i, n - 1)
    order[i], order[j] = order[j], order[i]
  end
  local mark = ffi.new("bool[?]", n)
  for i = 0, k - 1 do mark[order[i]] = true end
  return mark
end

-- The two index lists (0-based, ascending) of the parts.
local function indices(n, k, seed)
  local mark = held_out(n, k, seed)
  local train = ffi.new("int32_t[?]", n - k)
  local valid = ffi.new("int32_t[?]", k)
  local a, b = 0, 0
  for i = 0, n - 1 do
    if mark[i] then valid[b] = i b = b + 1 else train[a] = i a = a + 1 end
  end
  return train, valid
end

-- A part of a loaded data set: the base's fields, with count and `indices`
-- (sample i of the part is sample indices[i] of the base arrays).
local function part(base, idx, count, name)
  local p = {}
  for k, v in pairs(base) do p[k] = v end
  if base.indices then   -- a part of a part: compose the index maps
    local composed = ffi.new("int32_t[?]", math.max(count, 1))
    for i = 0, count - 1 do composed[i] = base.indices[idx[i]] end
    idx = composed
  end
  p.count, p.indices, p.part, p.base = count, idx, name, base.base or base
  -- a loaded set's lazily made fields (fashion_mnist's images) come from the base
  return setmetatable(p, getmetatable(base))
end

local function is_callable(f)
  if type(f) == "function" then return true end
  local mt = getmetatable(f)
  return type(mt) == "table" and mt.__call ~= nil
end

--- Splits `source` into a training part and a validation part; returns
-- both. source: a loaded data set (a table with `count`, e.g.
-- fashion_mnist.load's; the parts share its arrays and carry `indices`,
-- which fashion_mnist.batches follows), or a reader creator (the parts are
-- reader creators; the source is read once to count it unless count= is
-- given). opts: validation (a fraction in (0, 1) of the samples, rounded, or
-- a count; required), seed (default 0), count (readers only).
local function split(source, opts)
  local who = "oar.dataset.split"
  if type(opts) ~= "table" then
    error(who .. ": expects options {validation = fraction or count, seed = n}, got " .. type(opts), 2)
  end
  argcheck.keys(who, opts, ARGS)
  if opts.validation == nil then
    error(who .. ": validation is required: a fraction of the samples (0.1) or their count (5000)", 2)
  end
  local seed = opts.seed or 0
  if type(seed) ~= "number" or seed % 1 ~= 0 or seed < 0 or seed >= 2 ^ 53 then
    error(who .. ": seed must be an integer in [0, 2^53), got " .. tostring(seed), 2)
  end
  if type(source) == "table" and not is_callable(source) then
    local n = source.count
    if type(n) ~= "number" or n % 1 ~= 0 or n < 0 then
      error(who .. ": a data set table needs a count of samples (e.g. fashion_mnist.load's), got " ..
            tostring(n), 2)
    end
    if opts.count ~= nil then error(who .. ": count is for readers; a data set knows its count", 2) end
    local k = validation_count(opts.validation, n, who)
    local train, valid = indices(n, k, seed)
    return part(source, train, n - k, "train"), part(source, valid, k, "validation")
  end
  if not is_callable(source) then
    error(who .. ": expects a data set (a table with count) or a reader creator, got " .. type(source), 2)
  end
  local n = opts.count
  if n ~= nil and (type(n) ~= "number" or n % 1 ~= 0 or n < 2) then
    error(who .. ": count must be an integer of at least 2, got " .. tostring(n), 2)
  end
  local validation = opts.validation
  if n then validation_count(validation, n, who) end
  -- the marks, made once, on the first epoch of either part
  local mark, mark_count
  local function marks()
    if mark then return mark end
    local total = n
    if not total then
      total = 0
      for _ in source() do total = total + 1 end
    end
    mark = held_out(total, validation_count(validation, total, who), seed)
    mark_count = total
    return mark
  end
  local function part_reader(want)
    return function()
      local m = marks()
      local it = source()
      local i = -1
      return function()
        while true do
          local s = it()
          if s == nil then
            if i + 1 < mark_count then
              error(string.format("%s: the reader gave %d samples, not the %d it was split over", who, i + 1,
                                  mark_count), 2)
            end
            return nil
          end
          i = i + 1
          if i >= mark_count then
            error(string.format("%s: the reader gave more than the %d samples it was split over", who, mark_count), 2)
          end
          if m[i] == want then return s end
        end
      end
    end
  end
  return part_reader(false), part_reader(true)
end

return split
