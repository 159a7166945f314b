-- Builds and trains three small models with oar and saves each the three
-- ways PaddlePaddle reads (check_oar_saves.py then loads them in Paddle):
--   <OUT>/<model>/sep/   __model__ + one file per parameter
--   <OUT>/<model>/comb/  __model__ + __params__
--   <OUT>/<model>/pd/    model.pdmodel + model.pdiparams
-- with in_<name>.tensor, out_<i>.tensor (oar's outputs) and manifest.txt as
-- in spec/fixtures/paddle.
--
--   luajit tools/paddle_fixtures/save_with_oar.lua OUT_DIR
-- (from the repository root, with LUA_PATH/LUA_CPATH set as .busted does)
local oar = require("oar")
local ffi = require("ffi")
local C = require("oar.lib").C
local layers = oar.layers

local OUT = assert(arg[1], "usage: save_with_oar.lua OUT_DIR")

local function write_tensor(path, t)
  local bytes, n = ffi.new("void *[1]"), ffi.new("size_t[1]")
  assert(C.oar_tensor_serialize(t.handle, bytes, n) == 0)
  local f = assert(io.open(path, "wb"))
  f:write(ffi.string(bytes[0], n[0]))
  f:close()
  C.oar_free(bytes[0])
end

local function wave(rows, cols, phase)
  local t = {}
  for r = 1, rows do
    t[r] = {}
    for c = 1, cols do t[r][c] = math.sin(phase + r * 1.3 + c * 0.7) end
  end
  return t
end

-- build(): feeds (Variables), target, loss; feed(step): name -> Tensor
local function export(name, build, feed, steps)
  local main, startup = oar.Program(), oar.Program()
  local feeds, target, loss
  oar.program_guard(main, startup, function()
    feeds, target, loss = build()
    oar.optimizer.SGD{ learning_rate = 0.1 }:minimize(loss)
  end)
  local test = main:clone{ for_test = true }
  local exe, scope = oar.Executor(), oar.Scope()
  oar.seed(11)
  exe:run(startup, { scope = scope })
  for s = 1, steps do exe:run(main, { feed = feed(s), scope = scope }) end
  local dir = OUT .. "/" .. name
  os.execute("mkdir -p '" .. dir .. "'")
  local lines, fd, feed_names = { "oar" }, feed(0), {}
  for _, v in ipairs(feeds) do
    feed_names[#feed_names + 1] = v.name
    write_tensor(dir .. "/in_" .. v.name .. ".tensor", fd[v.name])
    lines[#lines + 1] = "input " .. v.name .. " in_" .. v.name .. ".tensor"
  end
  local got = exe:run(test, { feed = fd, fetch_list = { target }, scope = scope })
  write_tensor(dir .. "/out_0.tensor", got[1])
  lines[#lines + 1] = "output 0 out_0.tensor"
  for _, l in ipairs({ { "sep" }, { "comb", "__model__", "__params__" }, { "pd", "model.pdmodel", "model.pdiparams" } }) do
    oar.io.save_inference_model(dir .. "/" .. l[1], feed_names, { target }, exe, test,
      { model_filename = l[2], params_filename = l[3], scope = scope })
    lines[#lines + 1] = string.format("layout %s %s %s", l[1], l[2] or "__model__", l[3] or "-")
  end
  local f = assert(io.open(dir .. "/manifest.txt", "w"))
  f:write(table.concat(lines, "\n"), "\n")
  f:close()
end

export("mlp", function()
  local x = layers.data{ name = "x", shape = { 8 } }
  local y = layers.data{ name = "y", shape = { 1 }, dtype = "int64" }
  local h = layers.fc{ input = x, size = 16, act = "relu" }
  local p = layers.fc{ input = h, size = 4, act = "softmax" }
  return { x }, p, layers.mean(layers.cross_entropy{ input = p, label = y })
end, function(s)
  local ys = {}
  for r = 1, 5 do ys[r] = { (r + s) % 4 } end
  return { x = oar.Tensor(wave(5, 8, s), "float32"), y = oar.Tensor(ys, "int64") }
end, 10)

export("convbn", function()
  local img = layers.data{ name = "img", shape = { 1, 8, 8 } }
  local y = layers.data{ name = "y", shape = { 1 }, dtype = "int64" }
  local c = layers.conv2d{ input = img, num_filters = 4, filter_size = 3, padding = 1, act = "relu" }
  local b = layers.batch_norm{ input = c }
  local p = layers.pool2d{ input = b, pool_size = 2, pool_type = "max", pool_stride = 2 }
  local d = layers.dropout{ x = p, dropout_prob = 0.3 }
  local o = layers.fc{ input = d, size = 5, act = "softmax" }
  return { img }, o, layers.mean(layers.cross_entropy{ input = o, label = y })
end, function(s)
  local imgs, ys = {}, {}
  for n = 1, 3 do
    imgs[n] = { wave(8, 8, s + n) }
    ys[n] = { (n + s) % 5 }
  end
  return { img = oar.Tensor(imgs, "float32"), y = oar.Tensor(ys, "int64") }
end, 6)

export("lstm", function()
  local words = layers.data{ name = "words", shape = { 1 }, dtype = "int64", lod_level = 1 }
  local y = layers.data{ name = "y", shape = { 1 }, dtype = "int64" }
  local e = layers.embedding{ input = words, size = { 20, 6 } }
  local proj = layers.fc{ input = e, size = 4 * 5 }
  local h = layers.dynamic_lstm{ input = proj, size = 4 * 5 }
  local pooled = layers.sequence_pool{ input = h, pool_type = "max" }
  local o = layers.fc{ input = pooled, size = 3, act = "softmax" }
  return { words }, o, layers.mean(layers.cross_entropy{ input = o, label = y })
end, function(s)
  local ids = {}
  for i = 1, 9 do ids[i] = { (i * 7 + s) % 20 } end
  local w = oar.Tensor(ids, "int64")
  w:set_lod({ { 0, 4, 6, 9 } })
  return { words = w, y = oar.Tensor({ { s % 3 }, { (s + 1) % 3 }, { (s + 2) % 3 } }, "int64") }
end, 5)
print("saved under " .. OUT)
