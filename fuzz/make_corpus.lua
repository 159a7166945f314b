-- fuzz/make_corpus.lua — writes the seed corpus for the fuzz targets:
-- small valid ProgramDescs (fuzz/corpus/program/) and tensor records
-- (fuzz/corpus/tensor/), built with oar's own Lua API so they are exactly
-- what oar writes. Run from the repository root after `make`:
--   luajit fuzz/make_corpus.lua
package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
local oar = require("oar")
local layers = oar.layers

local function write(path, bytes)
  local f = assert(io.open(path, "wb"))
  f:write(bytes)
  f:close()
end

-- ---- programs ----------------------------------------------------------------
local programs = {}

programs.empty = oar.Program()

do -- a classifier with backward and Adam, and its startup program
  local main, startup = oar.Program(), oar.Program()
  oar.program_guard(main, startup, function()
    local x = layers.data{name = "x", shape = {4}}
    local y = layers.data{name = "y", shape = {1}, dtype = "int64"}
    local h = layers.fc{input = x, size = 8, act = "relu"}
    h = layers.dropout{x = h, dropout_prob = 0.3}
    local p = layers.fc{input = h, size = 3, act = "softmax"}
    local loss = layers.mean(layers.cross_entropy{input = p, label = y})
    oar.optimizer.Adam{learning_rate = 0.01}:minimize(loss)
  end)
  programs.mlp_adam = main
  programs.mlp_startup = startup
  programs.mlp_test = main:clone{for_test = true}
end

do -- embeddings over LoD input, SGD
  local main, startup = oar.Program(), oar.Program()
  oar.program_guard(main, startup, function()
    local w = layers.data{name = "w", shape = {1}, dtype = "int64", lod_level = 1}
    local e = layers.embedding{input = w, size = {20, 4}}
    local o = layers.fc{input = e, size = 2}
    oar.optimizer.SGD{learning_rate = 0.1}:minimize(layers.mean(o))
  end)
  programs.embedding = main
end

do -- nested blocks: vars and ops in sub-blocks that read their ancestors' vars
  local main = oar.Program()
  oar.program_guard(main, oar.Program(), function()
    local x = layers.data{name = "x", shape = {3}}
    main:create_block()
    local y = layers.scale{x = x, scale = 2}
    main:create_block()
    layers.relu(y)
    main:rollback()
    main:rollback()
  end)
  programs.nested_blocks = main
end

-- control flow, when these layers are present: sub-blocks run by ops
-- (BLOCK attrs), step scopes, tensor arrays, LoD sequences
if layers.While then
  local main = oar.Program()
  oar.program_guard(main, oar.Program(), function()
    local i = layers.fill_constant{shape = {1}, dtype = "int64", value = 0}
    local n = layers.fill_constant{shape = {1}, dtype = "int64", value = 3}
    local cond = layers.less_than{x = i, y = n}
    local loop = layers.While(cond)
    loop:block(function()
      layers.increment{x = i, value = 1}
      layers.less_than{x = i, y = n, cond = cond}
    end)
  end)
  programs.while_loop = main
end

if layers.IfElse then
  local main, startup = oar.Program(), oar.Program()
  oar.program_guard(main, startup, function()
    local x = layers.data{name = "x", shape = {4}}
    local zero = layers.fill_constant_batch_size_like{input = x, shape = {-1, 1}, dtype = "float32", value = 0}
    local cond = layers.less_than{x = layers.reduce_sum{input = x, dim = 1, keep_dim = true}, y = zero}
    local ie = layers.IfElse(cond)
    ie:true_block(function() ie:output(layers.scale{x = ie:input(x), scale = 2}) end)
    ie:false_block(function() ie:output(layers.fc{input = ie:input(x), size = 4}) end)
    local out = ie()
    oar.optimizer.SGD{learning_rate = 0.1}:minimize(layers.mean(out))
  end)
  programs.ifelse_backward = main
end

if layers.DynamicRNN and layers.sequence_pool then
  local main, startup = oar.Program(), oar.Program()
  oar.program_guard(main, startup, function()
    local seq = layers.data{name = "seq", shape = {3}, lod_level = 1}
    local drnn = layers.DynamicRNN()
    drnn:block(function()
      local w = drnn:step_input(seq)
      local m = drnn:memory{shape = {4}, value = 0}
      local h = layers.fc{input = {w, m}, size = 4, act = "tanh"}
      drnn:update_memory(m, h)
      drnn:output(h)
    end)
    local pooled = layers.sequence_pool{input = drnn(), pool_type = "max"}
    oar.optimizer.Adam{learning_rate = 0.01}:minimize(layers.mean(pooled))
  end)
  programs.dynamic_rnn = main
end

do -- an inference model's layout: feed ops first, fetch ops last
  local main = oar.Program()
  oar.program_guard(main, oar.Program(), function()
    local x = layers.data{name = "img", shape = {6}}
    local o = layers.fc{input = x, size = 2, act = "softmax"}
    local b = main:global_block()
    local feed = b:create_var{name = "feed", type = "feed_minibatch", persistable = true}
    local fetch = b:create_var{name = "fetch", type = "fetch_list", persistable = true}
    b:prepend_op{type = "feed", inputs = {X = {feed}}, outputs = {Out = {x}}, attrs = {col = 0}}
    b:append_op{type = "fetch", inputs = {X = {o}}, outputs = {Out = {fetch}}, attrs = {col = 0}}
  end)
  programs.inference = main
end

for name, prog in pairs(programs) do
  write("fuzz/corpus/program/" .. name .. ".pb", prog:serialize())
end

-- ---- tensors -------------------------------------------------------------------
local C, ffi = require("oar.lib").C, require("ffi")
local function record(t)
  local bytes, n = ffi.new("void *[1]"), ffi.new("size_t[1]")
  assert(C.oar_tensor_serialize(t.handle, bytes, n) == 0)
  local s = ffi.string(bytes[0], n[0])
  C.oar_free(bytes[0])
  return s
end

local tensors = {
  f32_2x3 = oar.Tensor({{1, 2, 3}, {4, 5, 6}}, "float32"),
  f64_vec = oar.Tensor({0.5, -1.25, 3}, "float64"),
  i64_ids = oar.Tensor({{7}, {1}, {4}}, "int64"),
  i32_scalar = oar.Tensor({42}, "int32"),
  bool_mask = oar.Tensor({true, false, true}, "bool"),
  u8_bytes = oar.Tensor({0, 128, 255}, "uint8"),
  f16_vals = oar.Tensor({1, -2, 0.5}, "float16"),
  empty = oar.Tensor{shape = {0, 4}, dtype = "float32"},
  rank4 = oar.Tensor{shape = {1, 2, 2, 1}, dtype = "float32"},
}
local lod1 = oar.Tensor({{1}, {2}, {3}, {4}, {5}}, "float32")
lod1:set_lod({{0, 2, 5}})
tensors.lod1 = lod1
local lod2 = oar.Tensor({{1, 1}, {2, 2}, {3, 3}, {4, 4}}, "float32")
lod2:set_lod({{0, 1, 3}, {0, 1, 2, 4}})
tensors.lod2 = lod2

local names = {}
for name, t in pairs(tensors) do
  names[#names + 1] = name
  write("fuzz/corpus/tensor/" .. name .. ".bin", record(t))
end
table.sort(names)
-- a combined file (save_combine): records back to back, in name order
local parts = {}
for _, name in ipairs(names) do parts[#parts + 1] = record(tensors[name]) end
write("fuzz/corpus/tensor/combined.bin", table.concat(parts))
-- Fluid's own writer has no checksum trailer: the same record without it
local r = record(tensors.f32_2x3)
write("fuzz/corpus/tensor/fluid_no_trailer.bin", r:sub(1, #r - 12))
local nprog = 0
for _ in pairs(programs) do nprog = nprog + 1 end
print(string.format("wrote %d programs and %d tensor files", nprog, #names + 2))

-- ---- every program the examples and the spec suite run --------------------------
-- `luajit fuzz/make_corpus.lua --all` also runs each example (for a few
-- seconds) and the spec suite with fuzz/corpus_hook.lua loaded, which records
-- one seed per distinct program (by its op types) into fuzz/corpus/program/.
if arg and arg[1] == "--all" then
  local dir = "fuzz/corpus/program"
  local env = "OAR_CORPUS_OUT=" .. dir .. " "
  for _, ex in ipairs({ "fit_a_line", "ifelse", "recognize_digits", "rnn", "sequence_classifier" }) do
    os.execute(env .. "timeout 20 luajit -e 'package.path=\"./lua/?.lua;./lua/?/init.lua;\"..package.path; " ..
      "package.cpath=\"./build/?.so;\"..package.cpath; dofile(\"fuzz/corpus_hook.lua\")' examples/" .. ex ..
      ".lua > /dev/null 2>&1")
  end
  os.execute(env .. "busted --helper=fuzz/corpus_hook.lua spec > /dev/null 2>&1")
  local p = io.popen("ls " .. dir .. " | wc -l")
  print("program seeds: " .. p:read("*l"))
  p:close()
end
