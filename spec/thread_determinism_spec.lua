-- Same bits with 1 thread and 2, for every op that splits its work across
-- threads: a forward and backward pass of models large enough that every
-- split happens (GEMMs in fixed blocks, fc's oneDNN blocks, conv2d's image
-- blocks and filter-gradient chunks, batch_norm and layer_norm sums, pool,
-- softmax, mean's sum, LSTM/GRU's sequence parts), every output and every
-- gradient compared byte for byte.
--
-- CI runs this file (with gemm_threads_spec and fuse_fc_spec) also under
-- forced code paths: ONEDNN_MAX_CPU_ISA=AVX2 and SSE41, OPENBLAS_CORETYPE
-- Haswell, Zen and Sandybridge (and SkylakeX on AVX-512 machines), since
-- the promise must hold on every x86-64 CPU, not just this one.
local ffi = require("ffi")
local oar = require("oar")
local layers = oar.layers
local R = require("spec.helpers.random")
local at_threads = require("spec.helpers.threads")

ffi.cdef [[ int memcmp(const void *a, const void *b, size_t n); ]]

local function tensor(shape, seed, scale)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  local t = oar.Tensor{ shape = shape, dtype = "float32" }
  local p, v = t:data(), R.symmetric(n, seed, scale)
  for i = 1, n do p[i - 1] = v[i] end
  return t
end

-- builds fn's model in a fresh program, initializes it once, then runs the
-- forward and backward pass (no optimizer: the parameters stay put) at 1
-- and 2 threads; returns the fetched names and both runs' tensors
local function both_counts(build, feed)
  local main, startup = oar.Program(), oar.Program()
  local fetch
  oar.program_guard(main, startup, function()
    local outs, loss = build()
    local pg = oar.append_backward(loss)
    fetch = {}
    for _, o in ipairs(outs) do fetch[#fetch + 1] = o end
    for _, p in ipairs(pg) do fetch[#fetch + 1] = p[2] end
  end)
  local scope = oar.Scope()
  local exe = oar.Executor(oar.CPUPlace())
  exe:run(startup, { scope = scope })
  local function run() return exe:run(main, { feed = feed, fetch_list = fetch, scope = scope }) end
  local names = {}
  for i, v in ipairs(fetch) do names[i] = v.name end
  return names, at_threads(1, run), at_threads(2, run)
end

-- byte-for-byte equality; on a difference, the first differing element
local function same_bits(names, one, two)
  assert.are.equal(#one, #two)
  for i = 1, #one do
    local a, b = one[i], two[i]
    assert.are.same(a:shape(), b:shape(), names[i])
    local n = a:numel()
    local pa, pb = a:data(), b:data()
    local esize = ({ float32 = 4, float64 = 8, int64 = 8, int32 = 4 })[a:dtype()]
    if ffi.C.memcmp(pa, pb, n * esize) ~= 0 then
      local j = 0
      while pa[j] == pb[j] do j = j + 1 end
      error(("%s differs at element %d of %d: %.9g with 1 thread, %.9g with 2"):format(
        names[i], j + 1, n, tonumber(pa[j]), tonumber(pb[j])), 0)
    end
  end
end

describe("the same bits with 1 and 2 threads", function()
  it("a conv net: conv2d (image blocks and one image at a time), batch_norm, pool2d, fc, layer_norm, softmax", function()
    local names, one, two = both_counts(function()
      local img = layers.data{ name = "img", shape = { 3, 28, 28 } }
      local label = layers.data{ name = "label", shape = { 1 }, dtype = "int64" }
      -- 28 x 28 outputs: more than one image's columns per GEMM block is not
      -- possible, so this conv runs an image at a time; the second (7 x 7)
      -- runs blocks of images and sums its filter gradient in chunks
      local c1 = layers.conv2d{ input = img, num_filters = 16, filter_size = 3, padding = 1, act = "relu" }
      local b1 = layers.batch_norm{ input = c1 }
      local p1 = layers.pool2d{ input = b1, pool_size = 4, pool_stride = 4, pool_type = "max" }
      local c2 = layers.conv2d{ input = p1, num_filters = 32, filter_size = 3, padding = 1, act = "relu" }
      local p2 = layers.pool2d{ input = c2, pool_size = 7, pool_type = "avg", global_pooling = true }
      local h = layers.fc{ input = p2, size = 300, act = "relu" }
      local ln = layers.layer_norm{ input = h }
      local logits = layers.fc{ input = ln, size = 10 }
      local loss = layers.mean(layers.softmax_with_cross_entropy{ logits = logits, label = label })
      return { c1, b1, c2, h, ln, logits, loss }, loss
    end, { img = tensor({ 64, 3, 28, 28 }, 1), label = (function()
      local t = oar.Tensor{ shape = { 64, 1 }, dtype = "int64" }
      for i = 0, 63 do t:data()[i] = i % 10 end
      return t
    end)() })
    same_bits(names, one, two)
  end)

  it("an MLP whose loss is the mean of a large tensor (mean's sum in chunks)", function()
    local names, one, two = both_counts(function()
      local x = layers.data{ name = "x", shape = { 784 } }
      local h = layers.fc{ input = x, size = 600, act = "tanh" }
      local y = layers.fc{ input = h, size = 512 }
      local loss = layers.mean(layers.elementwise_mul{ x = y, y = y })
      return { h, y, loss }, loss
    end, { x = tensor({ 256, 784 }, 2) })
    same_bits(names, one, two)
  end)

  it("LSTM and GRU over 40 sequences (split into parts by sequence)", function()
    local nseq, H = 40, 128
    local lod, rows = { 0 }, 0
    for s = 1, nseq do
      rows = rows + 3 + (s * 7) % 9
      lod[#lod + 1] = rows
    end
    local x = tensor({ rows, 32 }, 3)
    x:set_lod({ lod })
    local names, one, two = both_counts(function()
      local xs = layers.data{ name = "x", shape = { 32 }, lod_level = 1 }
      local h = layers.dynamic_lstm{ input = layers.fc{ input = xs, size = 4 * H }, size = 4 * H }
      local g = layers.dynamic_gru{ input = layers.fc{ input = h, size = 3 * H }, size = H }
      local loss = layers.mean(layers.sequence_pool{ input = g, pool_type = "sum" })
      return { h, g, loss }, loss
    end, { x = x })
    same_bits(names, one, two)
  end)
end)
