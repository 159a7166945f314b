-- layers.linear_chain_crf, layers.crf_decoding, layers.chunk_eval and
-- oar.metrics.ChunkEvaluator: a tiny sequence-labelling model (embedding ->
-- fc -> linear_chain_crf, SGD) whose cost falls, decoded with crf_decoding
-- (sharing the CRF's transition parameter by name, as Fluid's book
-- label_semantic_roles does) and scored with chunk_eval; argument errors.
local oar = require("oar")
local layers = oar.layers
local R = require("spec.helpers.random")
local expect_error = require("spec.helpers.expect_error")

-- words 0,1 begin a type-0 chunk, 2,3 continue it; 4,5 / 6,7 the same for
-- type 1; 8,9 are outside. IOB tags: B-0 0, I-0 1, B-1 2, I-1 3, O 4.
local TAG = { [0] = 0, 0, 1, 1, 2, 2, 3, 3, 4, 4 }

local function make_batch(nseq, seed)
  local u = R.uniform(200, seed, 0, 1)
  local ui = 0
  local function rnd(n) ui = ui + 1; return math.floor(u[ui] * n) end
  local words, tags, lod = {}, {}, { 0 }
  for _ = 1, nseq do
    local len = 3 + rnd(4)
    local pos = 0
    while pos < len do
      local kind = rnd(3)   -- 0, 1: a chunk of that type, 2: an outside word
      local clen = kind == 2 and 1 or math.min(len - pos, 1 + rnd(3))
      for k = 1, clen do
        local w = kind == 2 and 8 + rnd(2) or (kind * 4 + (k == 1 and 0 or 2) + rnd(2))
        words[#words + 1] = { w }
        tags[#tags + 1] = { TAG[w] }
      end
      pos = pos + clen
    end
    lod[#lod + 1] = #words
  end
  local tw, tt = oar.Tensor(words, "int64"), oar.Tensor(tags, "int64")
  tw:set_lod({ lod })
  tt:set_lod({ lod })
  return tw, tt
end

describe("layers.linear_chain_crf / crf_decoding / chunk_eval", function()
  it("train a tiny tagger whose CRF cost falls; Viterbi decoding then scores F1 1 with chunk_eval", function()
    local main, startup = oar.Program(), oar.Program()
    local cost, path, p, r, f1, ni, nl, nc, hits
    oar.program_guard(main, startup, function()
      local word = layers.data{ name = "word", shape = { 1 }, dtype = "int64", lod_level = 1 }
      local target = layers.data{ name = "target", shape = { 1 }, dtype = "int64", lod_level = 1 }
      local emb = layers.embedding{ input = word, size = { 10, 8 } }
      local emission = layers.fc{ input = emb, size = 5 }
      local crf_cost = layers.linear_chain_crf{ input = emission, label = target,
                                                param_attr = oar.ParamAttr{ name = "crfw" } }
      cost = layers.mean(crf_cost)
      oar.optimizer.SGD{ learning_rate = 0.1 }:minimize(cost)
      path = layers.crf_decoding{ input = emission, param_attr = oar.ParamAttr{ name = "crfw" } }
      hits = layers.crf_decoding{ input = emission, param_attr = "crfw", label = target }
      p, r, f1, ni, nl, nc = layers.chunk_eval{ input = path, label = target, chunk_scheme = "IOB",
                                                num_chunk_types = 2 }
    end)
    assert.same({ 7, 5 }, main:global_block():var("crfw").shape)   -- [(D + 2), D]
    local scope = oar.Scope()
    local exe = oar.Executor(oar.CPUPlace())
    exe:run(startup, { scope = scope })
    local words, tags = make_batch(12, 3)
    local first, last
    for step = 1, 80 do
      local out = exe:run(main, { feed = { word = words, target = tags }, fetch_list = { cost }, scope = scope })
      local c = out[1]:item()
      if step == 1 then first = c end
      last = c
    end
    assert.is_true(last < 0.2 * first, ("cost %g -> %g"):format(first, last))
    local out = exe:run(main, { feed = { word = words, target = tags }, scope = scope,
                                fetch_list = { path, hits, p, r, f1, ni, nl, nc } })
    local want = tags:totable()
    local got, h = out[1]:totable(), out[2]:totable()
    assert.same(want, got)
    for i = 1, #h do assert.same({ 1 }, h[i]) end
    assert.same(tags:lod(), out[1]:lod())
    assert.near(1, out[3]:item(), 1e-6)
    assert.near(1, out[4]:item(), 1e-6)
    assert.near(1, out[5]:item(), 1e-6)
    assert.is_true(out[6]:item() > 10)
    assert.equal(out[6]:item(), out[8]:item())
    -- the evaluator over two batches: the second one's counts are the first's again
    local ev = oar.metrics.ChunkEvaluator()
    ev:update(out[6], out[7], out[8])
    ev:update(out[6]:item(), out[7]:item(), out[8]:item() - 1)
    local ep, er, ef = ev:eval()
    local n = out[6]:item()
    assert.near((2 * n - 1) / (2 * n), ep, 1e-12)
    assert.near((2 * n - 1) / (2 * n), er, 1e-12)
    assert.near(ep, ef, 1e-12)
    ev:reset()
    assert.same({ 0, 0, 0 }, { ev:eval() })
  end)

  it("take a padded input with length", function()
    local main, startup = oar.Program(), oar.Program()
    local cost, path
    oar.program_guard(main, startup, function()
      local x = layers.data{ name = "x", shape = { 2, 3, 4 }, append_batch_size = false }
      local y = layers.data{ name = "y", shape = { 2, 3 }, dtype = "int64", append_batch_size = false }
      local len = layers.data{ name = "len", shape = { 2 }, dtype = "int64", append_batch_size = false }
      cost = layers.linear_chain_crf{ input = x, label = y, length = len, param_attr = "t" }
      path = layers.crf_decoding{ input = x, param_attr = "t", length = len }
    end)
    local scope = oar.Scope()
    local exe = oar.Executor(oar.CPUPlace())
    exe:run(startup, { scope = scope })
    local xv = { { { 0, 0, 5, 0 }, { 5, 0, 0, 0 }, { 0, 0, 0, 0 } }, { { 0, 5, 0, 0 }, { 0, 0, 0, 0 }, { 0, 0, 0, 0 } } }
    local out = exe:run(main, { scope = scope, fetch_list = { cost, path },
      feed = { x = oar.Tensor(xv, "float32"), y = oar.Tensor({ { 2, 0, 0 }, { 1, 0, 0 } }, "int64"),
               len = oar.Tensor({ 2, 1 }, "int64") } })
    assert.same({ 2, 1 }, out[1]:shape())
    assert.same({ { 2, 0, 0 }, { 1, 0, 0 } }, out[2]:totable())
  end)

  it("refuse unknown arguments, a missing transition parameter, a bad scheme", function()
    oar.program_guard(oar.Program(), oar.Program(), function()
      local x = layers.data{ name = "x", shape = { 4 }, lod_level = 1 }
      local y = layers.data{ name = "y", shape = { 1 }, dtype = "int64", lod_level = 1 }
      expect_error(function() layers.linear_chain_crf{ input = x, label = y, size = 3 } end,
        "linear_chain_crf", "size")
      expect_error(function() layers.crf_decoding{ input = x, param_attr = "nope" } end,
        "crf_decoding", "no parameter 'nope'")
      layers.linear_chain_crf{ input = x, label = y, param_attr = "w4" }
      local x3 = layers.data{ name = "x3", shape = { 3 }, lod_level = 1 }
      expect_error(function() layers.crf_decoding{ input = x3, param_attr = "w4" } end,
        "crf_decoding", "'w4'", "[5, 3]")
      expect_error(function() layers.chunk_eval{ input = y, label = y, chunk_scheme = "BIO", num_chunk_types = 2 } end,
        "chunk_eval", "chunk_scheme")
      expect_error(function() layers.chunk_eval{ input = y, label = y, chunk_scheme = "IOB" } end,
        "chunk_eval", "num_chunk_types")
      local p = { layers.chunk_eval{ input = y, label = y, chunk_scheme = "IOE", num_chunk_types = 2,
                                     excluded_chunk_types = { 1 } } }
      assert.equal(6, #p)
      assert.equal("float32", p[1].dtype)
      assert.equal("int64", p[6].dtype)
    end)
  end)
end)
