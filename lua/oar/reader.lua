--- Fluid's reader decorators, in Lua.
--
-- A *reader creator* (a "reader" in Fluid's words) is a function that takes
-- no argument and returns a fresh *iterator*: a function returning the next
-- sample on each call and nil when the data is exhausted. Calling the
-- creator again starts over (a new epoch). Iterators work with the generic
-- `for`: `for sample in reader() do ... end`.
--
-- A sample is any non-nil value; by convention a table of fields, e.g.
-- `{image, label}`. The decorators take and return reader creators; none of
-- them reads anything before its iterator is asked for a sample.
--
-- Randomness (`shuffle`) uses a private SplitMix64 generator, never the
-- global `math.random` state: the same seed gives the same sequence of epochs.
-- @module oar.reader
-- @usage
-- local reader = oar.reader
-- local function numbers()                -- a reader creator: 1..10
--   local i = 0
--   return function() i = i + 1; if i <= 10 then return {i, i % 2} end end
-- end
-- for batch in reader.batch(reader.shuffle(numbers, 10, 1), 4)() do
--   print(#batch)                          --> 4, 4, 2
-- end
local ffi = require("ffi")
local bit = require("bit")
local argcheck = require("oar.argcheck")

local M = {}

local function is_callable(f)
  if type(f) == "function" then return true end
  local mt = getmetatable(f)
  return mt ~= nil and type(mt) == "table" and mt.__call ~= nil
end

local function check_reader(fname, r, what)
  if not is_callable(r) then
    error(string.format("oar.reader.%s: %s must be a reader creator (a function returning an iterator), got %s",
                        fname, what or "reader", type(r)), 3)
  end
end

-- Calls a reader creator and checks that it gave an iterator.
local function start(fname, r)
  local it = r()
  if not is_callable(it) then
    error(string.format("oar.reader.%s: the reader returned %s, not an iterator function",
                        fname, type(it)), 3)
  end
  return it
end

local function check_count(fname, name, v, allow_zero)
  if type(v) ~= "number" or v ~= math.floor(v) or v < (allow_zero and 0 or 1) or v == math.huge then
    error(string.format("oar.reader.%s: %s must be a %s integer, got %s",
                        fname, name, allow_zero and "non-negative" or "positive", tostring(v)), 3)
  end
end

-- ---- random numbers ----------------------------------------------------

local Rng = {}
Rng.__index = Rng

local GOLDEN = 0x9E3779B97F4A7C15ULL
local MIX1 = 0xBF58476D1CE4E5B9ULL
local MIX2 = 0x94D049BB133111EBULL

--- A SplitMix64 random generator of its own (not `math.random`).
-- @tparam[opt] int seed an integer in [0, 2^53); nil draws one from the clock
-- @treturn Rng
-- @usage
-- local rng = oar.reader.rng(7)
-- print(rng:randint(1, 6))
function M.rng(seed)
  if seed == nil then
    seed = (os.time() * 1000003 + math.floor(os.clock() * 1e6)) % 2 ^ 52
  end
  if type(seed) ~= "number" or seed ~= math.floor(seed) or seed < 0 or seed >= 2 ^ 53 then
    error("oar.reader.rng: seed must be an integer in [0, 2^53), got " .. tostring(seed), 2)
  end
  local self = setmetatable({}, Rng)
  self.state = ffi.new("uint64_t[1]", seed)
  return self
end

--- Methods of a random generator.
-- @type Rng

--- The next 64 random bits.
-- @treturn cdata a `uint64_t`
-- @usage local bits = rng:next_u64()
function Rng:next_u64()
  local s = self.state[0] + GOLDEN
  self.state[0] = s
  local z = s
  z = bit.bxor(z, bit.rshift(z, 30)) * MIX1
  z = bit.bxor(z, bit.rshift(z, 27)) * MIX2
  return bit.bxor(z, bit.rshift(z, 31))
end

--- A number uniform in [0, 1).
-- @treturn number
-- @usage local u = rng:random()
function Rng:random()
  return tonumber(bit.rshift(self:next_u64(), 11)) * (1 / 9007199254740992)
end

--- An integer uniform in [lo, hi].
-- @tparam int lo
-- @tparam int hi at least `lo`
-- @treturn int
-- @usage local die = rng:randint(1, 6)
function Rng:randint(lo, hi)
  return lo + math.floor(self:random() * (hi - lo + 1))
end

--- Shuffles `t[1..n]` in place (Fisher-Yates).
-- @tparam table t a Lua list
-- @tparam[opt=#t] int n how many items to shuffle
-- @treturn table `t`
-- @usage rng:shuffle({1, 2, 3, 4})
function Rng:shuffle(t, n)
  n = n or #t
  for i = n, 2, -1 do
    local j = self:randint(1, i)
    t[i], t[j] = t[j], t[i]
  end
  return t
end

--- Shuffles the FFI array `p[0..n-1]` in place.
-- @param p an FFI array or pointer
-- @tparam int n the number of items
-- @return `p`
-- @usage rng:shuffle_array(ffi.new("int32_t[4]", {0, 1, 2, 3}), 4)
function Rng:shuffle_array(p, n)
  for i = n - 1, 1, -1 do
    local j = self:randint(0, i)
    p[i], p[j] = p[j], p[i]
  end
  return p
end

--- Decorators.
-- @section decorators

--- Groups samples into lists of `batch_size` samples.
-- @tparam function reader a reader creator
-- @tparam int batch_size samples per batch
-- @tparam[opt=false] boolean drop_last drop the last batch when it is shorter
-- @treturn function a reader creator of batches (lists of samples)
-- @usage local batched = oar.reader.batch(train_reader, 64, true)
function M.batch(reader, batch_size, drop_last)
  check_reader("batch", reader)
  check_count("batch", "batch_size", batch_size)
  return function()
    local it = start("batch", reader)
    local done = false
    return function()
      if done then return nil end
      local b = {}
      for i = 1, batch_size do
        local s = it()
        if s == nil then
          done = true
          break
        end
        b[i] = s
      end
      if #b == 0 or (drop_last and #b < batch_size) then
        done = true
        return nil
      end
      return b
    end
  end
end

--- Shuffles within a buffer of `buf_size` samples: fills the buffer,
-- shuffles it, yields it all, and so on; the last partial buffer is shuffled
-- too. The generator is made once from `seed` and goes on across epochs, so
-- a seed gives the same sequence of epoch orders (each epoch different).
-- @tparam function reader a reader creator
-- @tparam int buf_size samples per buffer (the data set's size for a full shuffle)
-- @tparam[opt] int seed nil draws one from the clock
-- @treturn function a reader creator
-- @usage local shuffled = oar.reader.shuffle(train_reader, 1000, 42)
function M.shuffle(reader, buf_size, seed)
  check_reader("shuffle", reader)
  check_count("shuffle", "buf_size", buf_size)
  local rng = M.rng(seed)
  return function()
    local it = start("shuffle", reader)
    local buf, pos, n = {}, 1, 0
    local exhausted = false
    return function()
      if pos > n then
        if exhausted then return nil end
        n = 0
        while n < buf_size do
          local s = it()
          if s == nil then
            exhausted = true
            break
          end
          n = n + 1
          buf[n] = s
        end
        for i = n + 1, #buf do buf[i] = nil end
        if n == 0 then return nil end
        rng:shuffle(buf, n)
        pos = 1
      end
      local s = buf[pos]
      buf[pos] = nil
      pos = pos + 1
      return s
    end
  end
end

--- Yields `fn(s1, s2, ...)` for the samples read in step from each reader;
-- stops with the shortest reader. A nil result ends the data.
-- @tparam function fn the mapping
-- @tparam function ... one or more reader creators
-- @treturn function a reader creator
-- @usage local doubled = oar.reader.map_readers(function(s) return {s[1] * 2, s[2]} end, numbers)
function M.map_readers(fn, ...)
  if not is_callable(fn) then
    error("oar.reader.map_readers: the first argument must be a function, got " .. type(fn), 2)
  end
  local readers = { ... }
  local nr = select("#", ...)
  if nr == 0 then error("oar.reader.map_readers: no reader given", 2) end
  for i = 1, nr do check_reader("map_readers", readers[i], "reader " .. i) end
  return function()
    local its = {}
    for i = 1, nr do its[i] = start("map_readers", readers[i]) end
    local done = false
    return function()
      if done then return nil end
      local args = {}
      for i = 1, nr do
        local s = its[i]()
        if s == nil then
          done = true
          return nil
        end
        args[i] = s
      end
      return fn(unpack(args, 1, nr))
    end
  end
end

--- Yields every sample of the first reader, then of the second, and so on.
-- @tparam function ... reader creators
-- @treturn function a reader creator
-- @usage local both = oar.reader.chain(numbers, numbers)   -- 20 samples
function M.chain(...)
  local readers = { ... }
  local nr = select("#", ...)
  for i = 1, nr do check_reader("chain", readers[i], "reader " .. i) end
  return function()
    local k, it = 0, nil
    return function()
      while true do
        if it then
          local s = it()
          if s ~= nil then return s end
        end
        k = k + 1
        if k > nr then
          it = nil
          k = nr
          return nil
        end
        it = start("chain", readers[k])
      end
    end
  end
end

--- Reads the readers in step and yields one flat sample made of their
-- outputs: a table contributes its fields (`t[1..#t]`) in order, any other
-- value contributes itself (wrap a table, `{t}`, to keep it one field).
-- @tparam function ... reader creators, then optionally an options table
-- `{check_alignment = true}`: with it (the default) readers of different
-- lengths raise an error; with `false` the shortest reader ends the data
-- @treturn function a reader creator
-- @usage local pairs_ = oar.reader.compose(images, labels, {check_alignment = false})
function M.compose(...)
  local readers = { ... }
  local nr = select("#", ...)
  local check_alignment = true
  if nr > 0 and type(readers[nr]) == "table" and not is_callable(readers[nr]) then
    local opts = readers[nr]
    argcheck.keys("oar.reader.compose", opts, { "check_alignment" })
    if opts.check_alignment ~= nil then check_alignment = opts.check_alignment and true or false end
    readers[nr] = nil
    nr = nr - 1
  end
  if nr == 0 then error("oar.reader.compose: no reader given", 2) end
  for i = 1, nr do check_reader("compose", readers[i], "reader " .. i) end
  return function()
    local its = {}
    for i = 1, nr do its[i] = start("compose", readers[i]) end
    local done = false
    return function()
      if done then return nil end
      local out, n = {}, 0
      local ended, alive = nil, nil
      for i = 1, nr do
        local s = its[i]()
        if s == nil then
          ended = ended or i
          if not check_alignment then break end
        else
          alive = alive or i
          if type(s) == "table" then
            for j = 1, #s do out[n + j] = s[j] end
            n = n + #s
          else
            n = n + 1
            out[n] = s
          end
        end
      end
      if ended then
        done = true
        if check_alignment and alive then
          error(string.format("oar.reader.compose: readers are not aligned: reader %d ended " ..
                              "while reader %d still had samples (pass {check_alignment=false} " ..
                              "to stop at the shortest)", ended, alive), 2)
        end
        return nil
      end
      return out
    end
  end
end

--- Reads ahead: once started, the iterator keeps `size` samples read
-- beyond the one it returns (the first call reads `size + 1` samples, each
-- later call one more), like Fluid's buffered reader with its queue kept
-- full. There are no threads: the reading happens in the caller.
-- @tparam function reader a reader creator
-- @tparam int size samples kept ahead
-- @treturn function a reader creator
-- @usage local ahead = oar.reader.buffered(train_reader, 128)
function M.buffered(reader, size)
  check_reader("buffered", reader)
  check_count("buffered", "size", size)
  return function()
    local it = start("buffered", reader)
    local q, head, tail = {}, 1, 0
    local exhausted = false
    return function()
      while not exhausted and tail - head + 1 <= size do
        local s = it()
        if s == nil then
          exhausted = true
        else
          tail = tail + 1
          q[tail] = s
        end
      end
      if head > tail then return nil end
      local s = q[head]
      q[head] = nil
      head = head + 1
      return s
    end
  end
end

--- Yields at most the first `n` samples.
-- @tparam function reader a reader creator
-- @tparam int n at least 0
-- @treturn function a reader creator
-- @usage local few = oar.reader.firstn(train_reader, 100)
function M.firstn(reader, n)
  check_reader("firstn", reader)
  check_count("firstn", "n", n, true)
  return function()
    local it, k = nil, 0
    return function()
      if k >= n then return nil end
      it = it or start("firstn", reader)
      local s = it()
      if s == nil then
        k = n
        return nil
      end
      k = k + 1
      return s
    end
  end
end

--- The part of a reader that worker `index` of `num` reads (oar.fleet).
-- Samples index, index + num, index + 2 num, ... of each epoch (0-based), so
-- the workers together see every sample exactly once; when the count is not a
-- multiple of num, the first workers get one sample more. Shard before
-- shuffle or batch, and with a shuffle give every worker the same seed.
-- @tparam function reader a reader creator
-- @tparam int index this worker, 0 .. num-1 (`oar.fleet.worker_index()`)
-- @tparam int num the number of workers (`oar.fleet.worker_num()`)
-- @treturn function a reader creator
-- @usage local r = oar.reader.shard(base, oar.fleet.worker_index(), oar.fleet.worker_num())
function M.shard(reader, index, num)
  check_reader("shard", reader)
  check_count("shard", "num", num)
  check_count("shard", "index", index, true)
  if index >= num then
    error(string.format("oar.reader.shard: index %d is not below num %d (workers are 0 .. num-1)", index, num), 2)
  end
  return function()
    local it, k = start("shard", reader), 0
    return function()
      while true do
        local s = it()
        if s == nil then return nil end
        k = k + 1
        if (k - 1) % num == index then return s end
      end
    end
  end
end

--- Reads the whole reader once, on the first epoch, and replays the
-- samples from memory afterwards.
-- @tparam function reader a reader creator
-- @treturn function a reader creator
-- @usage local cached = oar.reader.cache(slow_reader)
function M.cache(reader)
  check_reader("cache", reader)
  local all
  return function()
    if not all then
      local list = {}
      for s in start("cache", reader) do list[#list + 1] = s end
      all = list
    end
    local i = 0
    return function()
      i = i + 1
      return all[i]
    end
  end
end

return M
