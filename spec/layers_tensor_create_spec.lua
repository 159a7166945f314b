-- The layers of oar.layers.tensor_create: each builds its op with Fluid
-- 1.8's slots and attributes and runs to values plain Lua checks; bad
-- arguments are refused naming the layer and the argument.
local oar = require("oar")
local layers = oar.layers

local L = require("spec.helpers.layer_run")
local run, op_of, refuses, in_prog = L.run, L.op_of, L.refuses, L.in_prog

describe("oar.layers.tensor_create", function()
  it("oar.one_hot (fluid.one_hot, op one_hot_v2) takes ids of any shape and a depth", function()
    local got, main = run({ 2, 2 }, { 0, 2, 1, 2 }, function(x)
      return { oar.one_hot(x, 3), oar.one_hot{ input = x, depth = layers.fill_constant{ shape = { 1 }, dtype = "int32", value = 2 },
                                               allow_out_of_range = true } }
    end, "int64")
    assert.same({ 1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1 }, got[1])
    assert.same({ 1, 0, 0, 0, 0, 1, 0, 0 }, got[2])
    assert.equal(3, op_of(main, "one_hot_v2"):attr("depth"))
    refuses(function() in_prog(function() oar.one_hot{ input = 1, depth = 3 } end) end, "one_hot")
  end)

  it("randint, randperm and the *_batch_size_like layers", function()
    local got = run({ 3, 2 }, { 1, 2, 3, 4, 5, 6 }, function(x)
      return { layers.randint{ low = 2, high = 5, shape = { 50 }, seed = 1 }, layers.randperm(6),
               layers.uniform_random_batch_size_like{ input = x, shape = { -1, 4 }, min = 0, max = 1 },
               layers.gaussian_random_batch_size_like{ input = x, shape = { 2, -1 }, output_dim_idx = 1,
                                                       input_dim_idx = 1, mean = 3, std = 0 } }
    end)
    for _, v in ipairs(got[1]) do assert.is_true(v >= 2 and v < 5) end
    local sorted = { unpack(got[2]) }
    table.sort(sorted)
    assert.same({ 0, 1, 2, 3, 4, 5 }, sorted)
    assert.equal(12, #got[3])
    for _, v in ipairs(got[3]) do assert.is_true(v >= 0 and v < 1) end
    assert.same({ 3, 3, 3, 3 }, got[4])
    refuses(function() in_prog(function() layers.randint{ low = 3, high = 1 } end) end, "randint")
    refuses(function() in_prog(function() layers.randperm{ n = 3, sead = 1 } end) end, "unknown argument 'sead'")
  end)

  it("sampling_id, shard_index and hash", function()
    local got, main = run({ 2, 3 }, { 0, 0, 1, 0, 1, 0 }, function(x)
      local ids = layers.fill_constant{ shape = { 4, 1 }, dtype = "int64", value = 7 }
      return { layers.sampling_id{ x = x, dtype = "int64" }, layers.shard_index{ input = ids, index_num = 10, nshards = 2, shard_id = 1 },
               layers.hash{ input = ids, hash_size = 1000, num_hash = 2 } }
    end)
    assert.same({ 2, 1 }, got[1])
    assert.equal(3, op_of(main, "cast"):attr("out_dtype"))   -- the ids cast to int64
    assert.same({ 2, 2, 2, 2 }, got[2])
    assert.equal(8, #got[3])
    for _, v in ipairs(got[3]) do assert.is_true(v >= 0 and v < 1000) end
    refuses(function() in_prog(function() layers.shard_index{ input = 1, index_num = 1, nshards = 2, shard_id = 3 } end) end,
      "shard_index")
  end)

  it("random_crop crops each instance and moves its seed on", function()
    local main, startup = oar.Program(), oar.Program()
    local out
    oar.program_guard(main, startup, function()
      local x = layers.data{ name = "x", shape = { 2, 4, 4 }, dtype = "float32", append_batch_size = false }
      out = layers.random_crop{ x = x, shape = { 2, 2 }, seed = 5 }
    end)
    local vals = {}
    for b = 0, 1 do
      vals[b + 1] = {}
      for i = 0, 3 do
        vals[b + 1][i + 1] = {}
        for j = 0, 3 do vals[b + 1][i + 1][j + 1] = 100 * b + 10 * i + j end
      end
    end
    local exe = oar.Executor()
    exe:run(startup)
    local firsts = {}
    for r = 1, 6 do
      local res = exe:run(main, { feed = { x = oar.Tensor(vals, "float32") }, fetch_list = { out } })
      local flat = require("spec.helpers.cf_check").flat(res[1])
      assert.equal(8, #flat)
      local i0, j0 = math.floor(flat[1] / 10), flat[1] % 10
      assert.same({ 10 * i0 + j0, 10 * i0 + j0 + 1, 10 * (i0 + 1) + j0, 10 * (i0 + 1) + j0 + 1 },
                  { flat[1], flat[2], flat[3], flat[4] })
      firsts[flat[1]] = true
      assert.equal(5, op_of(main, "random_crop"):attr("startup_seed"))
    end
    local n = 0
    for _ in pairs(firsts) do n = n + 1 end
    assert.is_true(n > 1, "every run cropped the same window")
  end)
end)
