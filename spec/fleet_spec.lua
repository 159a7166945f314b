-- oar.fleet and the collective ops in one process (a job of one worker):
-- the ops' semantics and checks, the passes distributed_optimizer adds, and
-- oar.reader.shard. Across processes: spec/fleet_mpi_spec.lua.
local oar = require("oar")
local T = require("spec.helpers.op_test")
local expect_error = require("spec.helpers.expect_error")
local layers = oar.layers
local fleet = oar.fleet

describe("collective ops on one worker", function()
  it("c_coalesce flattens its inputs in order; c_split_coalesced gives them back", function()
    local a, b = T.tensor{ { 1, 2, 3 }, { 4, 5, 6 } }, T.tensor{ 7, 8 }
    local r = T.run{ type = "c_coalesce", inputs = { X = { a, b } }, outputs = { Out = 1 } }
    assert.are.same({ 8 }, r.Out[1].shape)
    assert.are.same({ 1, 2, 3, 4, 5, 6, 7, 8 }, r.Out[1].data)
    local s = T.run{ type = "c_split_coalesced", inputs = { X = T.tensor{ 9, 8, 7, 6, 5, 4, 3, 2 }, Ref = { a, b } },
                     outputs = { Out = 2 } }
    assert.are.same({ 2, 3 }, s.Out[1].shape)
    assert.are.same({ 9, 8, 7, 6, 5, 4 }, s.Out[1].data)
    assert.are.same({ 3, 2 }, s.Out[2].data)
  end)

  it("c_split_coalesced refuses a buffer of another size", function()
    expect_error(function()
      T.run{ type = "c_split_coalesced", inputs = { X = T.tensor{ 1, 2, 3 }, Ref = { T.tensor{ 1, 2 } } },
             outputs = { Out = 1 } }
    end, "3 elements", "2")
  end)

  it("c_allreduce_* and c_broadcast leave one worker's data as it is", function()
    for _, op in ipairs({ "c_allreduce_sum", "c_allreduce_max", "c_allreduce_min", "c_allreduce_prod", "c_broadcast" }) do
      local r = T.run{ type = op, inputs = { X = T.tensor{ { 1.5, -2 }, { 3, 4 } } }, outputs = { Out = 1 } }
      assert.are.same({ 1.5, -2, 3, 4 }, r.Out[1].data)
      assert.are.same({ 2, 2 }, r.Out[1].shape)
    end
  end)

  it("c_allgather stacks along dim 0 (nranks 1 on one worker)", function()
    local r = T.run{ type = "c_allgather", inputs = { X = T.tensor{ { 1, 2 } } }, attrs = { nranks = 1 },
                     outputs = { Out = 1 } }
    assert.are.same({ 1, 2 }, r.Out[1].shape)
    assert.are.same({ 1, 2 }, r.Out[1].data)
  end)

  it("errors name the attr: another ring, a root or nranks the job does not have", function()
    expect_error(function()
      T.run{ type = "c_allreduce_sum", inputs = { X = T.tensor{ 1 } }, attrs = { ring_id = 2 }, outputs = { Out = 1 } }
    end, "c_allreduce_sum", "ring_id 2")
    expect_error(function()
      T.run{ type = "c_broadcast", inputs = { X = T.tensor{ 1 } }, attrs = { root = 1 }, outputs = { Out = 1 } }
    end, "c_broadcast", "root 1")
    expect_error(function()
      T.run{ type = "c_allgather", inputs = { X = T.tensor{ 1 } }, attrs = { nranks = 3 }, outputs = { Out = 1 } }
    end, "c_allgather", "nranks is 3", "1 worker")
  end)
end)

describe("oar.fleet in one process", function()
  it("init alone gives one worker", function()
    fleet.init()
    assert.are.equal(1, fleet.worker_num())
    assert.are.equal(0, fleet.worker_index())
    assert.is_true(fleet.is_first_worker())
    assert.are.equal("single", fleet.backend())
    assert.are.equal(3, fleet.all_reduce(3))
    assert.are.same({ 1, 2 }, fleet.all_reduce({ 1, 2 }, "max"))
    expect_error(function() fleet.init{ timeout = -1 } end, "timeout")
  end)

  -- an MLP with an embedding (sparse grads when is_sparse) built twice: plain and through fleet
  local function build(use_fleet, opts)
    local main, startup = oar.Program(), oar.Program()
    local loss
    oar.program_guard(main, startup, function()
      local ids = layers.data{ name = "ids", shape = { 1 }, dtype = "int64" }
      local x = layers.data{ name = "x", shape = { 6 }, dtype = "float32" }
      local y = layers.data{ name = "y", shape = { 1 }, dtype = "int64" }
      local e = layers.embedding{ input = ids, size = { 10, 4 }, is_sparse = opts.sparse,
                                  param_attr = oar.ParamAttr{ name = "emb" } }
      local h = layers.fc{ input = { x, e }, size = 8, act = "tanh" }
      local p = layers.fc{ input = h, size = 3, act = "softmax" }
      loss = layers.mean(layers.cross_entropy{ input = p, label = y })
      local o = oar.optimizer.Adam{ learning_rate = 0.05 }
      if use_fleet then o = fleet.distributed_optimizer(o, opts.strategy) end
      o:minimize(loss)
    end)
    return main, startup, loss
  end

  local function train(main, startup, loss)
    oar.seed(7)
    local exe, scope = oar.Executor(), oar.Scope()
    exe:run(startup, { scope = scope })
    local losses = {}
    for step = 1, 5 do
      local ids, x, y = {}, {}, {}
      for i = 1, 6 do
        ids[i] = { (i * step) % 10 }
        y[i] = { (i + step) % 3 }
        x[i] = {}
        for j = 1, 6 do x[i][j] = math.sin(i * 0.7 + j * 0.3 + step) end
      end
      losses[step] = exe:run(main, { feed = { ids = ids, x = x, y = y }, fetch_list = { loss }, scope = scope })[1]:data()[0]
    end
    return losses, scope
  end

  local function ops_of(prog, t)
    local n = 0
    for _, op in ipairs(prog:global_block():ops()) do if op.type == t then n = n + 1 end end
    return n
  end

  for _, case in ipairs({ { sparse = false }, { sparse = true }, { sparse = true, strategy = { sparse_grad = "dense" } } }) do
    local what = case.sparse and ("sparse embedding grads, " .. ((case.strategy or {}).sparse_grad or "allgather"))
      or "dense grads"
    it("trains exactly like the plain optimizer on one worker (" .. what .. ")", function()
      fleet.init()
      local plain = train(build(false, case))
      local main, startup, loss = build(true, case)
      assert.is_true(ops_of(main, "c_allreduce_sum") >= 1)
      assert.are.equal(#main:global_block():all_parameters(), ops_of(startup, "c_broadcast"))
      if case.sparse and not case.strategy then assert.are.equal(1, ops_of(main, "c_allgather")) end
      local dist = train(main, startup, loss)
      for i = 1, #plain do assert.is_true(math.abs(plain[i] - dist[i]) <= 1e-6 * math.abs(plain[i])) end
    end)
  end

  it("fuses gradients into buckets of fuse_grad_size_in_MB", function()
    fleet.init()
    local one = build(true, { strategy = {} })
    assert.are.equal(1, ops_of(one, "c_allreduce_sum"))
    assert.are.equal(1, ops_of(one, "c_coalesce"))
    -- buckets of 100 bytes: the six gradients (12 to 192 bytes) need more than one, at most six
    local many = build(true, { strategy = { fuse_grad_size_in_MB = 100 / 2 ^ 20 } })
    local n = ops_of(many, "c_allreduce_sum")
    assert.is_true(n >= 4 and n <= 6, "buckets: " .. n)
    assert.are.equal(n, ops_of(many, "c_split_coalesced"))
    -- one worker: no scale after a reduction (the mean over one worker is the gradient)
    assert.are.equal(ops_of(one, "scale"), ops_of(many, "scale"))
  end)

  it("all-reduces a gradient of 256 KiB or more in place, fusing only the smaller ones", function()
    fleet.init()
    local main, startup = oar.Program(), oar.Program()
    oar.program_guard(main, startup, function()
      local x = oar.layers.data{ name = "x", shape = { 64 } }
      local h = oar.layers.fc{ input = x, size = 4096, param_attr = "big.w", bias_attr = false }   -- 1 MiB grad
      local loss = oar.layers.mean(oar.layers.fc{ input = h, size = 1, param_attr = "small.w", bias_attr = "small.b" })
      fleet.distributed_optimizer(oar.optimizer.SGD{ learning_rate = 0.1 }):minimize(loss)
    end)
    local inplace, fused = {}, 0
    for _, op in ipairs(main:global_block():ops()) do
      if op.type == "c_allreduce_sum" then
        local x = op:input("X")[1]
        assert.are.equal(x, op:output("Out")[1])
        if x:match("^fused_grad") then fused = fused + 1 else inplace[#inplace + 1] = x end
      end
    end
    assert.are.same({ "big.w@GRAD" }, inplace)
    assert.are.equal(1, fused)   -- small.w and small.b share one bucket
    for _, op in ipairs(main:global_block():ops()) do
      if op.type == "c_coalesce" then assert.are.same({ "small.b@GRAD", "small.w@GRAD" }, op:input("X")) end
    end
  end)

  it("checks its arguments", function()
    fleet.init()
    expect_error(function() fleet.distributed_optimizer(42) end, "expected an oar.optimizer")
    expect_error(function() fleet.distributed_optimizer(oar.optimizer.SGD{ learning_rate = 1 }, { fuse_grad_size_in_MB = 0 }) end,
      "fuse_grad_size_in_MB")
    expect_error(function() fleet.distributed_optimizer(oar.optimizer.SGD{ learning_rate = 1 }, { sparse_grad = "x" }) end,
      "sparse_grad")
    local sgd = oar.optimizer.SGD{ learning_rate = 1 }
    expect_error(function() fleet.distributed_optimizer(sgd, { gradient_merge = 2 }) end, "'gradient_merge' must be a table")
    expect_error(function() fleet.distributed_optimizer(sgd, { gradient_merge = { k_steps = 0 } }) end,
      "'gradient_merge.k_steps' must be a whole number >= 1")
    expect_error(function() fleet.distributed_optimizer(sgd, { gradient_merge = { k_steps = 2, avg = 1 } }) end,
      "'gradient_merge.avg' must be a boolean")
    expect_error(function() fleet.distributed_optimizer(sgd, { gradient_merge = { k = 2 } }) end,
      "unknown 'gradient_merge' option 'k'")
  end)

  it("gradient_merge = {k_steps = 2, avg = true}: two runs of 4 samples update as one run of 8", function()
    fleet.init()
    local function values(scope, name)
      local t = scope:find_var(name):get_tensor()
      local d, out = t:data(), {}
      for i = 0, t:numel() - 1 do out[i + 1] = d[i] end
      return out
    end
    local function feed(first, count)
      local xs, ys = {}, {}
      for i = first, first + count - 1 do
        xs[#xs + 1] = { math.sin(i), math.cos(1.7 * i), math.sin(0.3 * i + 1) }
        ys[#ys + 1] = { math.cos(0.9 * i) }
      end
      return { x = xs, y = ys }
    end
    local function train(strategy, runs)
      oar.seed(3)
      local main, startup, scope = oar.Program(), oar.Program(), oar.Scope()
      oar.unique_name.guard(function() oar.program_guard(main, startup, function()
        local x = layers.data{ name = "x", shape = { 3 }, dtype = "float32" }
        local y = layers.data{ name = "y", shape = { 1 }, dtype = "float32" }
        local p = layers.fc{ input = x, size = 1, param_attr = oar.ParamAttr{ name = "gm.w" } }
        local loss = layers.mean(layers.square_error_cost{ input = p, label = y })
        fleet.distributed_optimizer(oar.optimizer.Adam{ learning_rate = 0.1 }, strategy):minimize(loss)
      end) end)
      local exe = oar.Executor(oar.CPUPlace())
      exe:run(startup, { scope = scope })
      local after = { [0] = values(scope, "gm.w") }
      for i, r in ipairs(runs) do
        exe:run(main, { feed = feed(r[1], r[2]), scope = scope })
        after[i] = values(scope, "gm.w")
      end
      return after
    end
    local merged = train({ gradient_merge = { k_steps = 2, avg = true } }, { { 0, 4 }, { 4, 4 }, { 8, 4 }, { 12, 4 } })
    local whole = train(nil, { { 0, 8 }, { 8, 8 } })
    assert.are.same(merged[0], merged[1])   -- the first of two runs only adds up
    assert.are_not.same(merged[0], merged[2])
    for i = 1, 3 do
      assert.is_true(math.abs(merged[2][i] - whole[1][i]) <= 1e-6 * math.max(1, math.abs(whole[1][i])))
      assert.is_true(math.abs(merged[4][i] - whole[2][i]) <= 1e-6 * math.max(1, math.abs(whole[2][i])))
      assert.are.equal(merged[2][i], merged[3][i])   -- no update after the first of two runs
    end
  end)
end)

describe("oar.reader.shard", function()
  local function range(n)
    return function()
      local i = 0
      return function() i = i + 1 if i <= n then return i end end
    end
  end

  it("splits every epoch among the workers, each sample exactly once, uneven counts too", function()
    for _, n in ipairs({ 0, 1, 5, 9, 10 }) do
      for _, num in ipairs({ 1, 2, 3, 4 }) do
        local seen, sizes = {}, {}
        for idx = 0, num - 1 do
          sizes[idx + 1] = 0
          for epoch = 1, 2 do
            for s in oar.reader.shard(range(n), idx, num)() do
              if epoch == 1 then
                assert.is_nil(seen[s])
                seen[s] = idx
                sizes[idx + 1] = sizes[idx + 1] + 1
              else
                assert.are.equal(idx, seen[s])   -- the same split every epoch
              end
            end
          end
        end
        for i = 1, n do assert.is_not_nil(seen[i]) end
        for k = 1, num do assert.is_true(sizes[k] == math.floor(n / num) or sizes[k] == math.ceil(n / num)) end
      end
    end
  end)

  it("refuses an index outside 0 .. num-1 and a bad num", function()
    expect_error(function() oar.reader.shard(range(3), 2, 2) end, "index 2", "num 2")
    expect_error(function() oar.reader.shard(range(3), 0, 0) end, "num")
    expect_error(function() oar.reader.shard(42, 0, 1) end, "reader")
  end)
end)
