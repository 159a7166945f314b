-- The runtime's random generator (xoshiro256** seeded by splitmix64) checked
-- against a reference written here in Lua, its distributions, state
-- save/restore; and the runtime flags.
local ffi = require("ffi")
local bit = require("bit")
local lib = require("oar.lib")
-- the generators and oar_flag_check_nan_inf: the op-authoring API (src/oar_op.h)
local C = lib.load_op_api()

-- Reference generators on uint64_t cdata (LuaJIT's 64-bit arithmetic wraps).
local function splitmix64(state)
  state[1] = state[1] + 0x9e3779b97f4a7c15ULL
  local z = state[1]
  z = bit.bxor(z, bit.rshift(z, 30)) * 0xbf58476d1ce4e5b9ULL
  z = bit.bxor(z, bit.rshift(z, 27)) * 0x94d049bb133111ebULL
  return bit.bxor(z, bit.rshift(z, 31))
end

local function ref_seed(seed)
  local st = { ffi.new("uint64_t", seed) }
  return { splitmix64(st), splitmix64(st), splitmix64(st), splitmix64(st) }
end

local function ref_next(s)
  local result = bit.rol(s[2] * 5ULL, 7) * 9ULL
  local t = bit.lshift(s[2], 17)
  s[3] = bit.bxor(s[3], s[1])
  s[4] = bit.bxor(s[4], s[2])
  s[2] = bit.bxor(s[2], s[3])
  s[1] = bit.bxor(s[1], s[4])
  s[3] = bit.bxor(s[3], t)
  s[4] = bit.rol(s[4], 45)
  return result
end

local function to_unit(u64)
  return tonumber(bit.rshift(u64, 11)) / 2 ^ 53
end

describe("reference generator", function()
  it("matches splitmix64's published first output for seed 0", function()
    assert.are.equal(0xe220a8397b1dcdafULL, ref_seed(0)[1])
  end)
end)

describe("oar_rng", function()
  it("seeds through splitmix64 and steps like xoshiro256**", function()
    for _, seed in ipairs({ 0, 1, 12345, 0xdeadbeef }) do
      local r = ffi.new("oar_rng_t")
      C.oar_rng_seed(r, seed)
      local ref = ref_seed(seed)
      for i = 1, 4 do assert.are.equal(ref[i], r.s[i - 1]) end
      for _ = 1, 50 do assert.are.equal(ref_next(ref), C.oar_rng_next_r(r)) end
    end
  end)

  it("uniform uses the top 53 bits", function()
    local r = ffi.new("oar_rng_t")
    C.oar_rng_seed(r, 99)
    local ref = ref_seed(99)
    for _ = 1, 50 do assert.are.equal(to_unit(ref_next(ref)), C.oar_rng_uniform_r(r)) end
  end)

  it("the global generator is reproducible after set_random_seed", function()
    C.oar_set_random_seed(2024)
    assert.are.equal(2024ULL, C.oar_random_seed())
    local first = {}
    for i = 1, 5 do first[i] = C.oar_rng_next() end
    C.oar_set_random_seed(2024)
    local ref = ref_seed(2024)
    for i = 1, 5 do
      local v = C.oar_rng_next()
      assert.are.equal(first[i], v)
      assert.are.equal(ref_next(ref), v)
    end
    C.oar_set_random_seed(2025)
    assert.are_not.equal(first[1], C.oar_rng_next())
  end)

  it("uniform draws lie in [0, 1) with mean 1/2 and variance 1/12", function()
    C.oar_set_random_seed(7)
    local n, sum, sq, lo, hi = 100000, 0, 0, 1, 0
    for _ = 1, n do
      local u = C.oar_rng_uniform()
      sum, sq = sum + u, sq + u * u
      if u < lo then lo = u end
      if u > hi then hi = u end
    end
    local mean = sum / n
    assert.is_true(lo >= 0 and hi < 1)
    assert.is_true(math.abs(mean - 0.5) < 0.01, "mean " .. mean)
    local var = sq / n - mean * mean
    assert.is_true(math.abs(var - 1 / 12) < 0.005, "variance " .. var)
  end)

  it("normal draws have mean 0, std 1 and 68% within one std", function()
    C.oar_set_random_seed(11)
    local n, sum, sq, inside = 100000, 0, 0, 0
    for _ = 1, n do
      local x = C.oar_rng_normal()
      sum, sq = sum + x, sq + x * x
      if math.abs(x) < 1 then inside = inside + 1 end
    end
    local mean = sum / n
    local std = math.sqrt(sq / n - mean * mean)
    assert.is_true(math.abs(mean) < 0.02, "mean " .. mean)
    assert.is_true(math.abs(std - 1) < 0.02, "std " .. std)
    assert.is_true(math.abs(inside / n - 0.6827) < 0.01, "within 1 std " .. inside / n)
  end)

  it("restoring a saved state replays the same draws", function()
    C.oar_set_random_seed(5)
    C.oar_rng_normal()
    local saved = ffi.new("uint64_t[4]")
    assert.are.equal(0, C.oar_rng_get_state(saved))
    local a = {}
    for i = 1, 10 do a[i] = { C.oar_rng_next(), C.oar_rng_uniform(), C.oar_rng_normal() } end
    assert.are.equal(0, C.oar_rng_set_state(saved))
    for i = 1, 10 do
      assert.are.same(a[i], { C.oar_rng_next(), C.oar_rng_uniform(), C.oar_rng_normal() })
    end
  end)

  it("rejects an all-zero state and keeps the current one", function()
    C.oar_set_random_seed(3)
    local saved = ffi.new("uint64_t[4]")
    C.oar_rng_get_state(saved)
    local zeros = ffi.new("uint64_t[4]")
    assert.are.equal(-1, C.oar_rng_set_state(zeros))
    assert.matches("all zeros", lib.last_error())
    local ref = { saved[0], saved[1], saved[2], saved[3] }
    assert.are.equal(ref_next(ref), C.oar_rng_next())
  end)
end)

describe("flags", function()
  it("check_nan_inf sets the global the executor reads", function()
    assert.are.equal(0, C.oar_set_flag("check_nan_inf", 1))
    assert.are.equal(1LL, C.oar_get_flag("check_nan_inf"))
    assert.are.equal(1, C.oar_flag_check_nan_inf)
    assert.are.equal(0, C.oar_set_flag("check_nan_inf", 0))
    assert.are.equal(0, C.oar_flag_check_nan_inf)
    assert.are.equal(-1, C.oar_set_flag("check_nan_inf", 2))
    assert.matches("0 or 1, got 2", lib.last_error())
    assert.are.equal(0LL, C.oar_get_flag("check_nan_inf"))
  end)

  it("num_threads is settable and read back", function()
    local old = C.oar_get_flag("num_threads")
    assert.is_true(old >= 1)
    assert.are.equal(0, C.oar_set_flag("num_threads", 1))
    assert.are.equal(1LL, C.oar_get_flag("num_threads"))
    assert.are.equal(-1, C.oar_set_flag("num_threads", 0))
    assert.are.equal(1LL, C.oar_get_flag("num_threads"))
    assert.are.equal(0, C.oar_set_flag("num_threads", old))
    assert.are.equal(old, C.oar_get_flag("num_threads"))
  end)

  it("unknown flags are errors", function()
    assert.are.equal(-2, C.oar_set_flag("no_such_flag", 1))
    assert.matches("unknown flag 'no_such_flag'", lib.last_error())
    C.oar_clear_error()
    assert.are.equal(-1LL, C.oar_get_flag("no_such_flag"))
    assert.matches("unknown flag 'no_such_flag'", lib.last_error())
  end)
end)
