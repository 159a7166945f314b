--- oar.layers.tensor_create: creation and random layers of issue 22:
-- Fluid 1.8's sampling_id, gaussian_random_batch_size_like,
-- uniform_random_batch_size_like, shard_index, hash and random_crop;
-- fluid.one_hot (op one_hot_v2) as one_hot_v2, since layers.one_hot keeps
-- Fluid's fluid.layers.one_hot (op one_hot); Paddle 2.x's randint and
-- randperm (Fluid 1.8 has their ops but no layer). Merged into `oar.layers`.
-- @module oar.layers.tensor_create
local LayerHelper = require("oar.layer_helper")
local framework = require("oar.framework")

local check, args = LayerHelper.check, LayerHelper.args
local raise, is_variable = framework.raise, framework.is_variable

local M = {}

local function one_out(layer, a, op_type, inputs, attrs, dtype, extra_outs)
  local helper = LayerHelper(layer, a)
  local out = helper:create_variable_for_type_inference(dtype, true)
  local outs = { Out = { out } }
  for k, v in pairs(extra_outs or {}) do outs[k] = v end
  helper:append_op{ type = op_type, inputs = inputs or {}, outputs = outs, attrs = attrs }
  return out, helper
end

-- the seed attr: the argument, else the program's random_seed
local function seed_of(layer, a)
  local seed = check.int(layer, "seed", a.seed, 0)
  if seed == 0 then
    local prog = framework.default_main_program()
    if prog.random_seed and prog.random_seed ~= 0 then seed = prog.random_seed end
  end
  return seed
end

local function int_shape(layer, shape, allow_neg1)
  if type(shape) ~= "table" or is_variable(shape) or #shape == 0 then
    check.fail(layer, "shape", "a list of integers", shape)
  end
  for i, d in ipairs(shape) do
    if type(d) ~= "number" or d % 1 ~= 0 or (d < 0 and not (allow_neg1 and d == -1)) then
      check.fail(layer, "shape[" .. i .. "]", allow_neg1 and "an integer >= -1" or "an integer >= 0", d)
    end
  end
  return shape
end

local function float_dtype(layer, v)
  local dt = check.dtype(layer, "dtype", v, "float32")
  if dt ~= "float32" and dt ~= "float64" then check.fail(layer, "dtype", "\"float32\" or \"float64\"", v) end
  return dt
end

--- randint{low=0, high=, shape={1}, dtype="int64", seed=0, name=}: integers
-- drawn uniformly from [low, high) (Paddle 2.x's paddle.randint; op
-- randint). With high nil the range is [0, low).
-- @tparam table a keyword arguments: low, high, shape (a list, or a 1-D int Variable), dtype (int32 or int64), seed
-- @treturn Variable of shape and dtype
-- @usage local r = layers.randint{low = 0, high = 10, shape = {4, 5}}
function M.randint(a)
  a = args("randint", a, nil, nil, "dtype high low name seed shape")
  local low = check.int("randint", "low", a.low, 0)
  local high = a.high
  if high == nil then low, high = 0, low else high = check.int("randint", "high", high) end
  if low >= high then raise(("layers.randint: low (%d) must be below high (%d)"):format(low, high)) end
  local dt = check.dtype("randint", "dtype", a.dtype, "int64")
  if dt ~= "int32" and dt ~= "int64" then check.fail("randint", "dtype", "\"int32\" or \"int64\"", a.dtype) end
  local inputs, attrs = {}, { low = low, high = high, dtype = dt, seed = seed_of("randint", a) }
  if is_variable(a.shape) then inputs.ShapeTensor = { a.shape }
  else attrs.shape = int_shape("randint", a.shape or { 1 }) end
  return (one_out("randint", a, "randint", inputs, attrs, dt))
end

--- randperm{n=, dtype="int64", seed=0, name=} (or randperm(n)): a random
-- permutation of 0 .. n-1 (Paddle 2.x's paddle.randperm; op randperm).
-- @tparam int|table a n, or keyword arguments: n, dtype (int32, int64, float32 or float64), seed
-- @treturn Variable [n]
-- @usage local p = layers.randperm(10)
function M.randperm(a)
  a = args("randperm", a, "n", nil, "dtype n name seed")
  local n = check.positive_int("randperm", "n", a.n)
  local dt = check.dtype("randperm", "dtype", a.dtype, "int64")
  return (one_out("randperm", a, "randperm", nil, { n = n, dtype = dt, seed = seed_of("randperm", a) }, dt))
end

--- sampling_id{x=, min=0, max=1, seed=0, dtype="float32", name=} (or
-- sampling_id(x)): for each row of x [B, W], a probability distribution, an
-- id drawn from it (Fluid 1.8's layers.sampling_id; op sampling_id). The op
-- writes the ids in x's dtype; another dtype (int64 for ids to embed) adds a
-- cast.
-- @tparam Variable|table a x, or keyword arguments: x, min, max, seed, dtype (the result's)
-- @treturn Variable [B] of dtype, holding the ids
-- @usage local ids = layers.sampling_id{x = layers.softmax(logits), dtype = "int64"}
function M.sampling_id(a)
  a = args("sampling_id", a, "x", nil, "dtype max min name seed x")
  local x = check.variable("sampling_id", "x", a.x)
  local dt = check.dtype("sampling_id", "dtype", a.dtype, "float32")
  local attrs = { min = check.number("sampling_id", "min", a.min, 0.0),
                  max = check.number("sampling_id", "max", a.max, 1.0), seed = seed_of("sampling_id", a) }
  if attrs.min > attrs.max then raise(("layers.sampling_id: min (%g) must not exceed max (%g)"):format(attrs.min, attrs.max)) end
  local out = one_out("sampling_id", a, "sampling_id", { X = { x } }, attrs, x.dtype)
  if dt ~= x.dtype then out = require("oar.layers").cast(out, dt) end
  return out
end

local function bsl(layer, op, a, attrs)
  local x = check.variable(layer, "input", a.input)
  local dt = float_dtype(layer, a.dtype)
  attrs.shape = int_shape(layer, a.shape, true)
  attrs.input_dim_idx = check.int(layer, "input_dim_idx", a.input_dim_idx, 0)
  attrs.output_dim_idx = check.int(layer, "output_dim_idx", a.output_dim_idx, 0)
  attrs.seed, attrs.dtype = seed_of(layer, a), dt
  return (one_out(layer, a, op, { Input = { x } }, attrs, dt))
end

--- gaussian_random_batch_size_like{input=, shape=, input_dim_idx=0,
-- output_dim_idx=0, mean=0, std=1, seed=0, dtype="float32", name=}: normal
-- values of shape whose dim output_dim_idx is input's dim input_dim_idx
-- (Fluid 1.8's layer; op gaussian_random_batch_size_like).
-- @tparam table a keyword arguments
-- @treturn Variable
-- @usage local z = layers.gaussian_random_batch_size_like{input = x, shape = {-1, 16}, std = 0.1}
function M.gaussian_random_batch_size_like(a)
  local L = "gaussian_random_batch_size_like"
  a = args(L, a, nil, nil, "dtype input input_dim_idx mean name output_dim_idx seed shape std")
  local std = check.number(L, "std", a.std, 1.0)
  if std < 0 then check.fail(L, "std", "not negative", std) end
  return bsl(L, L, a, { mean = check.number(L, "mean", a.mean, 0.0), std = std })
end

--- uniform_random_batch_size_like{input=, shape=, dtype="float32",
-- input_dim_idx=0, output_dim_idx=0, min=-1, max=1, seed=0, name=}: uniform
-- values in [min, max) of shape whose dim output_dim_idx is input's dim
-- input_dim_idx (Fluid 1.8's layer; op uniform_random_batch_size_like).
-- @tparam table a keyword arguments
-- @treturn Variable
-- @usage local u = layers.uniform_random_batch_size_like{input = x, shape = {-1, 8}}
function M.uniform_random_batch_size_like(a)
  local L = "uniform_random_batch_size_like"
  a = args(L, a, nil, nil, "dtype input input_dim_idx max min name output_dim_idx seed shape")
  local lo, hi = check.number(L, "min", a.min, -1.0), check.number(L, "max", a.max, 1.0)
  if lo > hi then raise(("layers.%s: min (%g) must not exceed max (%g)"):format(L, lo, hi)) end
  return bsl(L, L, a, { min = lo, max = hi })
end

--- shard_index{input=, index_num=, nshards=, shard_id=, ignore_value=-1,
-- name=}: ids relative to one shard, ignore_value outside it (Fluid 1.8's
-- layers.shard_index; op shard_index).
-- @tparam table a keyword arguments: input int ids [..., 1], index_num, nshards, shard_id, ignore_value
-- @treturn Variable input's shape and dtype
-- @usage local local_ids = layers.shard_index{input = label, index_num = 1000, nshards = 4, shard_id = 1}
function M.shard_index(a)
  a = args("shard_index", a, nil, nil, "ignore_value index_num input name nshards shard_id")
  local x = check.variable("shard_index", "input", a.input)
  local nshards = check.positive_int("shard_index", "nshards", a.nshards)
  local sid = check.int("shard_index", "shard_id", a.shard_id)
  if sid < 0 or sid >= nshards then
    raise(("layers.shard_index: shard_id (%d) must be in [0, nshards = %d)"):format(sid, nshards))
  end
  return (one_out("shard_index", a, "shard_index", { X = { x } },
    { index_num = check.positive_int("shard_index", "index_num", a.index_num), nshards = nshards, shard_id = sid,
      ignore_value = check.int("shard_index", "ignore_value", a.ignore_value, -1) }, x.dtype))
end

--- hash{input=, hash_size=, num_hash=1, name=}: num_hash XXH64 hashes of
-- each row of int input, modulo hash_size (Fluid 1.8's layers.hash; op
-- hash).
-- @tparam table a keyword arguments: input int32/int64 [N, L], hash_size, num_hash
-- @treturn Variable [N, num_hash, 1], input's dtype and LoD
-- @usage local h = layers.hash{input = word_ids, hash_size = 100000, num_hash = 4}
function M.hash(a)
  a = args("hash", a, nil, nil, "hash_size input name num_hash")
  local x = check.variable("hash", "input", a.input)
  return (one_out("hash", a, "hash", { X = { x } },
    { mod_by = check.positive_int("hash", "hash_size", a.hash_size),
      num_hash = check.positive_int("hash", "num_hash", a.num_hash or 1) }, x.dtype))
end

--- random_crop{x=, shape=, seed=nil, name=} (or random_crop(x, shape)): a
-- random window of shape over x's last dims, one per instance (Fluid 1.8's
-- layers.random_crop; op random_crop). seed: an int (the first run's seed;
-- nil draws one) or an int64 [1] Variable; the op writes the next seed back,
-- so each run crops elsewhere. Run the startup program first (it sets the
-- seed variable).
-- @tparam Variable|table a x, or keyword arguments: x, shape, seed
-- @tparam[opt] {int,...} shape the crop (positional form)
-- @treturn Variable
-- @usage local crops = layers.random_crop{x = images, shape = {3, 24, 24}}
function M.random_crop(a, shape)
  a = args("random_crop", a, "x", { shape = shape }, "name seed shape x")
  local x = check.variable("random_crop", "x", a.x)
  local attrs = { shape = int_shape("random_crop", a.shape) }
  local helper = LayerHelper("random_crop", a)
  local seed = a.seed
  if not is_variable(seed) then
    if seed == nil then seed = math.random(1, 65535) end
    attrs.startup_seed = check.int("random_crop", "seed", seed)
    -- Fluid leaves the seed variable to the op's startup_seed on the first
    -- run; oar initializes it to the same value in the startup program, so
    -- runs without the startup program still find it
    seed = helper:create_global_variable{ name = helper.name .. ".seed", dtype = "int64", shape = { 1 } }
    helper:set_variable_initializer(seed, require("oar.initializer").Constant{ value = attrs.startup_seed })
  end
  local out = helper:create_variable_for_type_inference(x.dtype)
  helper:append_op{ type = "random_crop", inputs = { X = { x }, Seed = { seed } },
                    outputs = { Out = { out }, SeedOut = { seed } }, attrs = attrs }
  return out
end

return M
