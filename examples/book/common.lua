-- examples/book/common.lua: what the book programs share: a deterministic
-- random generator for their synthetic data, the training loop, LoD
-- batches of word ids, and the command line. Each program loads it with
-- dofile (see any of them); it is not a module of oar.

local dir = debug.getinfo(1, "S").source:match("^@(.*/)[^/]*$") or "./"
-- A source checkout runs without installing (lua/ and build/ next to examples/).
dofile(dir .. "../checkout.lua")

local ffi = require("ffi")
local oar = require("oar")
local layers = oar.layers

local M = {}

-- A small deterministic generator (xorshift64*): the same data on every
-- machine. rng(seed)() gives a number in [0, 1); :int(n) one in [0, n).
function M.rng(seed)
  local s = ffi.new("uint64_t[1]", 0x9E3779B97F4A7C15ULL + seed * 0x2545F4914F6CDD1DULL)
  local r = {}
  local function next01()
    local x = s[0]
    x = bit.bxor(x, bit.rshift(x, 12))
    x = bit.bxor(x, bit.lshift(x, 25))
    x = bit.bxor(x, bit.rshift(x, 27))
    s[0] = x
    return tonumber(bit.rshift(x * 0x2545F4914F6CDD1DULL, 11)) / 9007199254740992
  end
  function r.uniform() return next01() end
  function r.int(n) return math.floor(next01() * n) end
  -- a standard normal value (Box-Muller)
  function r.normal()
    local u = math.max(next01(), 1e-300)
    return math.sqrt(-2 * math.log(u)) * math.cos(2 * math.pi * next01())
  end
  return r
end

-- A batch of word-id sequences as one int64 [total, 1] LoD tensor, and the
-- labels as int64 [n, 1].
function M.word_batch(seqs, labels)
  local total, lod = 0, { 0 }
  for _, s in ipairs(seqs) do
    total = total + #s
    lod[#lod + 1] = total
  end
  local words = oar.Tensor{ shape = { total, 1 }, dtype = "int64" }
  local p, k = words:data(), 0
  for _, s in ipairs(seqs) do
    for _, w in ipairs(s) do p[k] = w; k = k + 1 end
  end
  words:set_lod{ lod }
  local lab = oar.Tensor{ shape = { #labels, 1 }, dtype = "int64" }
  local q = lab:data()
  for i, l in ipairs(labels) do q[i - 1] = l end
  return words, lab
end

-- Runs `steps` training steps of r.main: next_batch(step) gives the feed
-- table. Returns the losses and accuracies of every step. With
-- opts.verbose, prints one line every opts.log_every steps.
function M.train_loop(r, next_batch, opts)
  local exe, scope = oar.Executor(oar.CPUPlace()), oar.Scope()
  exe:run(r.startup, { scope = scope })
  local losses, accs = {}, {}
  local t0 = os.clock()
  for step = 1, opts.steps do
    local out = exe:run(r.main, { feed = next_batch(step), fetch_list = { r.avg_cost, r.acc }, scope = scope })
    local l, a = out[1]:data()[0], out[2]:data()[0]
    if l ~= l then error(string.format("the loss became NaN at step %d", step)) end
    losses[step], accs[step] = l, a
    if opts.verbose and (step % (opts.log_every or 10) == 0 or step == opts.steps) then
      print(string.format("step %4d  loss %.4f  accuracy %.3f  (%.1f s)", step, l, a, os.clock() - t0))
    end
  end
  return losses, accs, exe, scope
end

-- The main and startup programs of a book program, seeded with opts.seed;
-- build(r) adds the layers inside their program_guard and sets r's fields
-- (avg_cost and acc for train_loop).
function M.programs(opts, build)
  local r = { main = oar.Program(), startup = oar.Program() }
  r.main.random_seed, r.startup.random_seed = opts.seed, opts.seed
  oar.program_guard(r.main, r.startup, function() build(r) end)
  return r
end

-- A book program's train(opts): opts over prog.DEFAULTS, prog.build(o),
-- then train_loop over the feeds of batches(o) (a function of the step).
function M.trainer(prog, batches)
  return function(opts)
    local o = {}
    for k, v in pairs(prog.DEFAULTS) do o[k] = v end
    for k, v in pairs(opts or {}) do o[k] = v end
    local r = prog.build(o)
    return M.train_loop(r, batches(o), o)
  end
end

-- Trains prog with the command line's options when `name`.lua is the
-- script luajit runs (not when it is loaded with dofile).
function M.main(prog, name)
  if arg and arg[0] and arg[0]:match(name .. "%.lua$") then
    prog.train(M.parse_args(name, arg, prog.DEFAULTS))
  end
end

-- Fluid's image_classification train program, shared by its two nets as in
-- the book test: pixel [3, 32, 32] and label fed, net(images), an fc
-- softmax over `classes`, cross entropy, accuracy, Adam.
function M.image_classifier(opts, classes, net)
  return M.programs(opts, function(r)
    local images = layers.data{ name = "pixel", shape = { 3, 32, 32 }, dtype = "float32" }
    local label = layers.data{ name = "label", shape = { 1 }, dtype = "int64" }
    r.predict = layers.fc{ input = net(images), size = classes, act = "softmax" }
    local cost = layers.cross_entropy{ input = r.predict, label = label }
    r.avg_cost = layers.mean(cost)
    r.acc = layers.accuracy{ input = r.predict, label = label }
    oar.optimizer.Adam{ learning_rate = opts.lr }:minimize(r.avg_cost)
  end)
end

-- the image_classification feeds: synthetic CIFAR-shaped batches
function M.image_batches(o)
  local next_batch = dofile(dir .. "synthetic_images.lua")(o.seed, o.batch_size)
  return function()
    local x, y = next_batch()
    return { pixel = x, label = y }
  end
end

-- Fluid's understand_sentiment train program, shared by its nets as in the
-- book test: words (LoD level 1) and label fed, net(data, label, dict_dim)
-- gives avg_cost, accuracy and prediction; Adagrad.
function M.sentiment_classifier(opts, net)
  return M.programs(opts, function(r)
    local data = layers.data{ name = "words", shape = { 1 }, dtype = "int64", lod_level = 1 }
    local label = layers.data{ name = "label", shape = { 1 }, dtype = "int64" }
    r.avg_cost, r.acc, r.prediction = net(data, label, opts.dict_dim)
    oar.optimizer.Adagrad{ learning_rate = opts.lr }:minimize(r.avg_cost)
  end)
end

-- the understand_sentiment feeds: synthetic reviews of dict_dim words
function M.review_batches(o)
  local next_batch = dofile(dir .. "synthetic_reviews.lua")(o.seed, o.batch_size, o.dict_dim)
  return function()
    local words, labels = next_batch()
    return { words = words, label = labels }
  end
end

-- Parses "--key value" options into a copy of defaults (numbers where the
-- default is a number); exits with the usage on an unknown key.
function M.parse_args(name, argv, defaults)
  local o = {}
  for k, v in pairs(defaults) do o[k] = v end
  local keys = {}
  for k in pairs(defaults) do keys[#keys + 1] = "--" .. k:gsub("_", "-") end
  table.sort(keys)
  local function usage(msg)
    io.stderr:write((msg and (name .. ": " .. msg .. "\n") or "") .. "usage: luajit examples/book/" .. name
      .. ".lua [" .. table.concat(keys, " X] [") .. " X]\n")
    os.exit(msg and 2 or 0)
  end
  local i = 1
  while i <= #argv do
    local a = argv[i]
    if a == "-h" or a == "--help" then usage() end
    local key = a:match("^%-%-([%w%-]+)$")
    if not key then usage("unexpected argument '" .. a .. "'") end
    key = key:gsub("%-", "_")
    if defaults[key] == nil then usage("unknown option --" .. key:gsub("_", "-")) end
    local val = argv[i + 1]
    if val == nil then usage("--" .. key:gsub("_", "-") .. " needs a value") end
    if type(defaults[key]) == "number" then
      val = tonumber(val)
      if not val then usage("--" .. key:gsub("_", "-") .. " expects a number") end
    elseif type(defaults[key]) == "boolean" then
      val = val == "true" or val == "1"
    end
    o[key] = val
    i = i + 2
  end
  o.verbose = true
  return o
end

-- the mean of xs[from..to]
function M.mean(xs, from, to)
  local s = 0
  for i = from, to do s = s + xs[i] end
  return s / (to - from + 1)
end

return M
