-- oar.io: save/load of variables, parameters and persistables, one file per
-- variable or one combined file. Files are checked by a reader of Fluid's
-- LoDTensor stream format written here; values against what was set.
local ffi = require("ffi")
local oar = require("oar")
local layers = oar.layers
local F = require("spec.helpers.files")

local tmpdir, rmtree, list_dir = F.tmpdir, F.rmtree, F.list_dir
local read_bytes, write_bytes = F.read_bytes, F.write_bytes

-- A reader of one LoDTensor record (Fluid's format + oar's 12-byte trailer),
-- independent of the C reader: returns {dtype=, dims=, lod=, values=}, next offset.
local function u32(s, at) local v = ffi.new("uint32_t[1]"); ffi.copy(v, s:sub(at, at + 3), 4); return tonumber(v[0]) end
local function u64(s, at) local v = ffi.new("uint64_t[1]"); ffi.copy(v, s:sub(at, at + 7), 8); return tonumber(v[0]) end
local function varint(s, at)
  local v, shift = 0, 0
  while true do
    local b = s:byte(at)
    at = at + 1
    v = v + (b % 128) * 2 ^ shift
    if b < 128 then return v, at end
    shift = shift + 7
  end
end
local function read_record(s, at)
  assert(u32(s, at) == 0, "version")
  at = at + 4
  local levels = u64(s, at); at = at + 8
  local lod = {}
  for l = 1, levels do
    local bytes = u64(s, at); at = at + 8
    lod[l] = {}
    for i = 1, bytes / 8 do lod[l][i] = u64(s, at); at = at + 8 end
  end
  assert(u32(s, at) == 0, "tensor version"); at = at + 4
  local dlen = u32(s, at); at = at + 4
  local stop = at + dlen
  local dtype, dims = nil, {}
  while at < stop do
    local key; key, at = varint(s, at)
    local field, wt = math.floor(key / 8), key % 8
    if field == 1 and wt == 0 then dtype, at = varint(s, at)
    elseif field == 2 and wt == 0 then dims[#dims + 1], at = varint(s, at)
    elseif field == 2 and wt == 2 then
      local len; len, at = varint(s, at)
      local e = at + len
      while at < e do dims[#dims + 1], at = varint(s, at) end
    else error("unexpected TensorDesc field " .. field) end
  end
  local numel = 1
  for _, d in ipairs(dims) do numel = numel * d end
  local values = {}
  if dtype == 5 then
    local buf = ffi.new("float[?]", numel > 0 and numel or 1)
    ffi.copy(buf, s:sub(at, at + 4 * numel - 1), 4 * numel)
    for i = 1, numel do values[i] = buf[i - 1] end
    at = at + 4 * numel
  elseif dtype == 3 then
    local buf = ffi.new("int64_t[?]", numel > 0 and numel or 1)
    ffi.copy(buf, s:sub(at, at + 8 * numel - 1), 8 * numel)
    for i = 1, numel do values[i] = buf[i - 1] end
    at = at + 8 * numel
  else error("dtype " .. tostring(dtype) .. " not handled by this reader") end
  local rec = { dtype = dtype, dims = dims, lod = lod, values = values }
  -- oar's checksum trailer follows a file of one record, never a record of a
  -- combined file (Paddle's load_combine reads them back to back)
  if s:sub(at, at + 3) == "OARC" then return rec, at + 12, true end
  return rec, at, false
end

local function flat(t)
  local out = {}
  local function walk(x) if type(x) == "table" then for _, y in ipairs(x) do walk(y) end else out[#out + 1] = x end end
  walk(t)
  return out
end

local function f32(x) return tonumber(ffi.new("float", x)) end

-- A model with two fc layers trained with Adam (so it has optimizer state),
-- in its own scope; parameters set to known values.
local function model()
  local main, startup = oar.Program(), oar.Program()
  local m = { main = main, startup = startup, scope = oar.Scope(), exe = oar.Executor() }
  oar.program_guard(main, startup, function()
    m.x = layers.data{ name = "x", shape = { 3 } }
    m.y = layers.data{ name = "y", shape = { 1 } }
    m.h = layers.fc{ input = m.x, size = 4, act = "tanh", param_attr = oar.ParamAttr{ name = "w1" },
      bias_attr = oar.ParamAttr{ name = "b1" } }
    m.pred = layers.fc{ input = m.h, size = 1, param_attr = oar.ParamAttr{ name = "w2" },
      bias_attr = oar.ParamAttr{ name = "b2" } }
    m.loss = layers.mean(layers.square_error_cost{ input = m.pred, label = m.y })
    oar.optimizer.Adam{ learning_rate = 0.01 }:minimize(m.loss)
  end)
  m.exe:run(startup, { scope = m.scope })
  m.values = {
    w1 = { { 0.1, -0.2, 0.3, 0.4 }, { 0.5, 0.6, -0.7, 0.8 }, { 0.9, 1.0, 1.1, -1.2 } },
    b1 = { 0.01, 0.02, 0.03, 0.04 },
    w2 = { { 1.5 }, { -2.5 }, { 3.5 }, { 4.5 } },
    b2 = { 0.25 },
  }
  for name, v in pairs(m.values) do m.scope:var(name):set_tensor(oar.Tensor(v, "float32")) end
  m.feed = { x = { { 1, 2, 3 }, { -1, 0, 1 } }, y = { { 1 }, { 2 } } }
  function m.train(steps)
    for _ = 1, steps do m.exe:run(main, { feed = m.feed, fetch_list = { m.loss }, scope = m.scope }) end
  end
  return m
end

local function value_of(scope, name)
  local v = scope:find_var(name)
  assert(v, "no variable " .. name)
  return v:get_tensor():totable()
end

local function snapshot(scope, names)
  local out = {}
  for _, n in ipairs(names) do out[n] = flat(value_of(scope, n)) end
  return out
end

describe("oar.io save_params / load_params", function()
  local dir
  before_each(function() dir = tmpdir() end)
  after_each(function() rmtree(dir) end)

  it("writes one file per parameter, named after it, in Fluid's tensor format", function()
    local m = model()
    oar.io.save_params(m.exe, dir, m.main, { scope = m.scope })
    assert.same({ "b1", "b2", "w1", "w2" }, list_dir(dir))
    for name, v in pairs(m.values) do
      local rec, stop, trailer = read_record(read_bytes(dir .. "/" .. name), 1)
      assert.is_true(trailer)
      assert.equal(5, rec.dtype)
      assert.equal(#read_bytes(dir .. "/" .. name) + 1, stop)
      local want = flat(v)
      assert.equal(#want, #rec.values)
      for i = 1, #want do assert.equal(f32(want[i]), rec.values[i]) end
      if type(v[1]) == "table" then assert.same({ #v, #v[1] }, rec.dims) else assert.same({ #v }, rec.dims) end
    end
  end)

  it("round-trips into a fresh scope", function()
    local m = model()
    oar.io.save_params(m.exe, dir, m.main, { scope = m.scope })
    local s2 = oar.Scope()
    oar.io.load_params(m.exe, dir, m.main, { scope = s2 })
    for name, v in pairs(m.values) do
      local got = flat(value_of(s2, name))
      local want = flat(v)
      for i = 1, #want do assert.equal(f32(want[i]), got[i]) end
    end
    -- only the parameters were loaded
    assert.is_nil(s2:find_var("learning_rate_0"))
  end)

  it("uses the global scope (scope_guard) by default", function()
    local m = model()
    oar.scope_guard(m.scope, function() oar.io.save_params(m.exe, dir, m.main) end)
    local s2 = oar.Scope()
    oar.scope_guard(s2, function() oar.io.load_params(m.exe, dir, m.main) end)
    assert.same(value_of(m.scope, "w2"), value_of(s2, "w2"))
  end)

  it("writes one combined file in name order with filename=", function()
    local m = model()
    oar.io.save_params(m.exe, dir, m.main, { filename = "params", scope = m.scope })
    -- Paddle's bytes, their checksum beside them
    assert.same({ "params", "params.crc" }, list_dir(dir))
    local s = read_bytes(dir .. "/params")
    local at, order = 1, { "b1", "b2", "w1", "w2" }
    for _, name in ipairs(order) do
      local rec, trailer
      rec, at, trailer = read_record(s, at)
      assert.is_false(trailer)
      local want = flat(m.values[name])
      assert.equal(#want, #rec.values)
      for i = 1, #want do assert.equal(f32(want[i]), rec.values[i]) end
    end
    assert.equal(#s + 1, at)
    local s2 = oar.Scope()
    oar.io.load_params(m.exe, dir, m.main, "params", { scope = s2 })
    for _, name in ipairs(order) do assert.same(value_of(m.scope, name), value_of(s2, name)) end
  end)

  it("accepts the keyword form", function()
    local m = model()
    oar.io.save_params{ executor = m.exe, dirname = dir, main_program = m.main, filename = "p", scope = m.scope }
    local s2 = oar.Scope()
    oar.io.load_params{ executor = m.exe, dirname = dir, main_program = m.main, filename = "p", scope = s2 }
    assert.same(value_of(m.scope, "w1"), value_of(s2, "w1"))
  end)

  it("creates missing directories, and replaces files that exist", function()
    local m = model()
    local deep = dir .. "/a/b/c"
    oar.io.save_params(m.exe, deep, m.main, { scope = m.scope })
    m.scope:var("b2"):set_tensor(oar.Tensor({ 7.5 }, "float32"))
    oar.io.save_params(m.exe, deep, m.main, { scope = m.scope })
    local s2 = oar.Scope()
    oar.io.load_params(m.exe, deep, m.main, { scope = s2 })
    assert.same({ 7.5 }, value_of(s2, "b2"))
    -- no temp files left behind
    assert.same({ "b1", "b2", "w1", "w2" }, list_dir(deep))
  end)
end)

describe("oar.io save_persistables / load_persistables", function()
  local dir
  before_each(function() dir = tmpdir() end)
  after_each(function() rmtree(dir) end)

  it("saves parameters, optimizer state and the generator state", function()
    local m = model()
    m.train(3)
    oar.io.save_persistables(m.exe, dir, m.main, { scope = m.scope })
    local files = list_dir(dir)
    local want = { "@RNG_STATE@" }
    for _, v in ipairs(oar.io.get_program_persistable_vars(m.main)) do want[#want + 1] = v.name end
    table.sort(want)
    assert.same(want, files)
    -- the moments and beta powers are there, and hold what the scope holds
    local found_moment, found_pow = false, false
    for _, n in ipairs(files) do
      if n:find("moment1") then found_moment = true end
      if n:find("beta1_pow") then found_pow = true end
      if n ~= "@RNG_STATE@" then
        local rec = read_record(read_bytes(dir .. "/" .. n), 1)
        assert.same(flat(value_of(m.scope, n)), rec.values)
      end
    end
    assert.is_true(found_moment and found_pow)
    local rng = read_record(read_bytes(dir .. "/@RNG_STATE@"), 1)
    assert.equal(3, rng.dtype)
    assert.same({ 4 }, rng.dims)
  end)

  it("round-trips every persistable, combined or not", function()
    local m = model()
    m.train(2)
    local names = {}
    for _, v in ipairs(oar.io.get_program_persistable_vars(m.main)) do names[#names + 1] = v.name end
    local before = snapshot(m.scope, names)
    for _, filename in ipairs({ false, "ckpt" }) do
      local d = dir .. (filename and "/combined" or "/split")
      oar.io.save_persistables(m.exe, d, m.main, { filename = filename or nil, scope = m.scope })
      local s2 = oar.Scope()
      oar.io.load_persistables(m.exe, d, m.main, { filename = filename or nil, scope = s2 })
      assert.same(before, snapshot(s2, names))
    end
  end)

  it("loads a combined file written without the generator state", function()
    local m = model()
    local pers = oar.io.get_program_persistable_vars(m.main)
    oar.io.save_vars(m.exe, dir, m.main, pers, "plain", { scope = m.scope })
    local s2 = oar.Scope()
    oar.io.load_persistables(m.exe, dir, m.main, { filename = "plain", scope = s2 })
    assert.same(value_of(m.scope, "w1"), value_of(s2, "w1"))
  end)
end)

describe("oar.io save_vars / load_vars", function()
  local dir
  before_each(function() dir = tmpdir() end)
  after_each(function() rmtree(dir) end)

  it("takes a list of Variables or names", function()
    local m = model()
    local w1 = m.main:global_block():var("w1")
    oar.io.save_vars(m.exe, dir, m.main, { w1, "b2" }, { scope = m.scope })
    assert.same({ "b2", "w1" }, list_dir(dir))
    local s2 = oar.Scope()
    oar.io.load_vars(m.exe, dir, m.main, { "w1" }, { scope = s2 })
    assert.same(value_of(m.scope, "w1"), value_of(s2, "w1"))
    assert.is_nil(s2:find_var("b2"))
  end)

  it("takes a predicate (4th or 5th argument, like Fluid)", function()
    local m = model()
    local function is_bias(v) return v.name:sub(1, 1) == "b" and oar.io.is_parameter(v) end
    oar.io.save_vars(m.exe, dir .. "/p4", m.main, is_bias, { scope = m.scope })
    oar.io.save_vars(m.exe, dir .. "/p5", m.main, nil, is_bias, "both", { scope = m.scope })
    assert.same({ "b1", "b2" }, list_dir(dir .. "/p4"))
    assert.same({ "both", "both.crc" }, list_dir(dir .. "/p5"))
    local s = read_bytes(dir .. "/p5/both")
    local r1, at = read_record(s, 1)
    local r2, stop = read_record(s, at)
    assert.equal(#s + 1, stop)
    assert.same({ 4 }, r1.dims)
    assert.same({ 1 }, r2.dims)
  end)

  it("saves nothing and raises nothing when no variable is selected", function()
    local m = model()
    oar.io.save_vars(m.exe, dir, m.main, function() return false end, { scope = m.scope })
    assert.is_nil(io.open(dir, "rb") and io.open(dir .. "/w1", "rb"))
  end)

  it("keeps integer dtypes and LoD", function()
    local prog = oar.Program()
    local exe = oar.Executor()
    local b = prog:global_block()
    b:create_var{ name = "ids", shape = { 5, 1 }, dtype = "int64", lod_level = 1, persistable = true }
    local s = oar.Scope()
    local t = oar.Tensor({ { 3 }, { 1 }, { 4 }, { 1 }, { 5 } }, "int64")
    t:set_lod({ { 0, 2, 5 } })
    s:var("ids"):set_tensor(t)
    oar.io.save_vars(exe, dir, prog, { "ids" }, { scope = s })
    local rec = read_record(read_bytes(dir .. "/ids"), 1)
    assert.equal(3, rec.dtype)
    assert.same({ { 0, 2, 5 } }, rec.lod)
    assert.same({ 3, 1, 4, 1, 5 }, rec.values)
    local s2 = oar.Scope()
    oar.io.load_vars(exe, dir, prog, { "ids" }, { scope = s2 })
    local got = s2:find_var("ids"):get_tensor()
    assert.equal("int64", got:dtype())
    assert.same({ { 0, 2, 5 } }, got:lod())
    assert.same({ { 3 }, { 1 }, { 4 }, { 1 }, { 5 } }, got:totable())
  end)
end)

describe("oar.io failed loads leave the scope as it was", function()
  local dir
  before_each(function() dir = tmpdir() end)
  after_each(function() rmtree(dir) end)

  local function prepare()
    local m = model()
    oar.io.save_params(m.exe, dir .. "/split", m.main, { scope = m.scope })
    oar.io.save_params(m.exe, dir .. "/comb", m.main, { filename = "all", scope = m.scope })
    -- the target scope holds other values, which must survive a failed load
    local target = oar.Scope()
    local old = { w1 = { { 0, 0, 0, 0 }, { 0, 0, 0, 0 }, { 9, 9, 9, 9 } }, b1 = { 1, 1, 1, 1 },
                  w2 = { { 2 }, { 2 }, { 2 }, { 2 } }, b2 = { 3 } }
    for n, v in pairs(old) do target:var(n):set_tensor(oar.Tensor(v, "float32")) end
    return m, target, old
  end

  local function unchanged(target, old)
    for n, v in pairs(old) do assert.same(v, value_of(target, n)) end
    local names = target:local_var_names()
    table.sort(names)
    assert.same({ "b1", "b2", "w1", "w2" }, names)
  end

  it("when one of several files is missing", function()
    local m, target, old = prepare()
    os.remove(dir .. "/split/w2")
    assert.has_error(function() oar.io.load_params(m.exe, dir .. "/split", m.main, { scope = target }) end)
    local ok, err = pcall(oar.io.load_params, m.exe, dir .. "/split", m.main, { scope = target })
    assert.is_false(ok)
    assert.matches("load_params: .*w2.*No such file", err)
    unchanged(target, old)
  end)

  it("when the last file of several is corrupt", function()
    local m, target, old = prepare()
    local p = dir .. "/split/w2"
    local s = read_bytes(p)
    write_bytes(p, s:sub(1, 40) .. string.char((s:byte(41) + 1) % 256) .. s:sub(42))
    local ok, err = pcall(oar.io.load_params, m.exe, dir .. "/split", m.main, { scope = target })
    assert.is_false(ok)
    assert.matches("checksum mismatch", err)
    unchanged(target, old)
  end)

  it("when a file's shape does not match the program", function()
    local m, target, old = prepare()
    -- b2 is declared [1]; write a [2] tensor in its place
    local other = oar.Scope()
    other:var("b2"):set_tensor(oar.Tensor({ 1, 2 }, "float32"))
    local prog = oar.Program()
    prog:global_block():create_var{ name = "b2", shape = { 2 }, persistable = true }
    oar.io.save_vars(m.exe, dir .. "/split", prog, { "b2" }, { scope = other })
    local ok, err = pcall(oar.io.load_params, m.exe, dir .. "/split", m.main, { scope = target })
    assert.is_false(ok)
    assert.matches("'b2' in '.*' has shape %[2%], the program declares %[1%]", err)
    unchanged(target, old)
  end)

  it("when a combined file is truncated or has trailing bytes", function()
    local m, target, old = prepare()
    local p = dir .. "/comb/all"
    local s = read_bytes(p)
    write_bytes(p, s:sub(1, #s - 7))
    local ok, err = pcall(oar.io.load_params, m.exe, dir .. "/comb", m.main, { filename = "all", scope = target })
    assert.is_false(ok)
    assert.matches("checksum mismatch", err)   -- all.crc notices first
    unchanged(target, old)
    os.remove(p .. ".crc")                      -- then the records themselves
    ok, err = pcall(oar.io.load_params, m.exe, dir .. "/comb", m.main, { filename = "all", scope = target })
    assert.is_false(ok)
    assert.matches("the shape needs 4 elements of float32, but only 9 bytes follow", err)
    unchanged(target, old)
    write_bytes(p, s .. "xyz")
    ok, err = pcall(oar.io.load_params, m.exe, dir .. "/comb", m.main, { filename = "all", scope = target })
    assert.is_false(ok)
    assert.matches("3 bytes after the 4 tensor", err)
    unchanged(target, old)
    os.remove(p)
    ok, err = pcall(oar.io.load_params, m.exe, dir .. "/comb", m.main, { filename = "all", scope = target })
    assert.is_false(ok)
    assert.matches("cannot open '.*all'", err)
    unchanged(target, old)
  end)

  it("does not touch the generator state or the scope when a checkpoint fails to load", function()
    local C = require("oar.lib").C
    local function state()
      local a = ffi.new("uint64_t[4]")
      assert.equal(0, C.oar_rng_get_state(a))
      return { tostring(a[0]), tostring(a[1]), tostring(a[2]), tostring(a[3]) }
    end
    local m = model()
    oar.seed(99)
    oar.io.save_persistables(m.exe, dir, m.main, { scope = m.scope })
    oar.seed(1234)
    local before = state()
    -- a missing parameter file
    os.remove(dir .. "/b1")
    local target = oar.Scope()
    assert.is_false(pcall(oar.io.load_persistables, m.exe, dir, m.main, { scope = target }))
    assert.same(before, state())
    assert.same({}, target:local_var_names())
    -- every parameter present, but a bad generator record (all zeros)
    oar.io.save_persistables(m.exe, dir, m.main, { scope = m.scope })
    local zeros = oar.Scope()
    zeros:var("@RNG_STATE@"):set_tensor(oar.Tensor({ 0, 0, 0, 0 }, "int64"))
    local prog = oar.Program()
    prog:global_block():create_var{ name = "@RNG_STATE@", shape = { 4 }, dtype = "int64", persistable = true }
    oar.io.save_vars(m.exe, dir, prog, { "@RNG_STATE@" }, { scope = zeros })
    local ok, err = pcall(oar.io.load_persistables, m.exe, dir, m.main, { scope = target })
    assert.is_false(ok)
    assert.matches("@RNG_STATE@' in '.*' is all zeros", err)
    assert.same(before, state())
    assert.same({}, target:local_var_names())
  end)
end)

describe("oar.io argument checks", function()
  local dir
  before_each(function() dir = tmpdir() end)
  after_each(function() rmtree(dir) end)

  it("names what is wrong", function()
    local m = model()
    local cases = {
      { function() oar.io.save_params(nil, dir, m.main) end, "save_params: 'executor' must be an oar Executor" },
      { function() oar.io.save_params(m.exe, nil, m.main) end, "save_params: 'dirname' must be a non%-empty" },
      { function() oar.io.save_params(m.exe, "", m.main) end, "'dirname' must be a non%-empty" },
      { function() oar.io.save_params(m.exe, dir, 42) end, "'main_program' must be a Program, got number" },
      { function() oar.io.save_params(m.exe, dir, m.main, 7) end, "'filename' must be a string" },
      { function() oar.io.save_params(m.exe, dir, m.main, "a/b") end, "'filename' must name a file inside dirname" },
      { function() oar.io.save_params(m.exe, dir .. "\0x", m.main) end, "'dirname' contains a NUL byte" },
      { function() oar.io.load_params(m.exe, dir, m.main, { scope = 5 }) end, "'scope' must be an oar Scope" },
      { function() oar.io.save_vars(m.exe, dir, m.main, { 5 }) end, "vars%[1%] must be a Variable or a name" },
      { function() oar.io.save_vars(m.exe, dir, m.main, { "nope" }) end, "no variable 'nope' in the program" },
      { function() oar.io.save_vars(m.exe, dir, m.main) end, "give either 'vars'" },
      { function() oar.io.save_vars(m.exe, dir, m.main, nil, 5) end, "unexpected argument number" },
      { function() oar.io.load_params(m.exe, dir, m.main) end, "load_params: .*No such file" },
    }
    for i, c in ipairs(cases) do
      local ok, err = pcall(c[1])
      assert.is_false(ok, "case " .. i)
      assert.matches(c[2], err, 1, false)
    end
  end)

  it("refuses to save a variable with no value, creating nothing", function()
    local m = model()
    local empty = oar.Scope()
    local ok, err = pcall(oar.io.save_params, m.exe, dir, m.main, { scope = empty })
    assert.is_false(ok)
    assert.matches("variable '.*' has no value in the scope %(did you run the startup program%?%)", err)
    assert.same({}, empty:local_var_names())
  end)

  it("refuses variable names that are paths when saving one file per variable", function()
    local prog = oar.Program()
    prog:global_block():create_var{ name = "../escape", shape = { 1 }, persistable = true }
    local s = oar.Scope()
    s:var("../escape"):set_tensor(oar.Tensor({ 1 }, "float32"))
    local exe = oar.Executor()
    local ok, err = pcall(oar.io.save_vars, exe, dir, prog, { "../escape" }, { scope = s })
    assert.is_false(ok)
    assert.matches("variable name' must name a file inside dirname", err)
    -- a combined file holds any name
    oar.io.save_vars(exe, dir, prog, { "../escape" }, "one", { scope = s })
    local s2 = oar.Scope()
    oar.io.load_vars(exe, dir, prog, { "../escape" }, "one", { scope = s2 })
    assert.same({ 1 }, value_of(s2, "../escape"))
  end)

  it("treats shell metacharacters in paths as plain characters", function()
    local m = model()
    local weird = dir .. "/a b;$(touch PWNED)`id`|&'\"*?<>"
    oar.io.save_params(m.exe, weird, m.main, { filename = "p $x;", scope = m.scope })
    local f = io.open(weird .. "/p $x;", "rb")
    assert.truthy(f)
    f:close()
    local s2 = oar.Scope()
    oar.io.load_params(m.exe, weird, m.main, { filename = "p $x;", scope = s2 })
    assert.same(value_of(m.scope, "w1"), value_of(s2, "w1"))
    assert.is_nil(io.open("PWNED", "rb"))
    assert.is_nil(io.open(dir .. "/PWNED", "rb"))
  end)
end)

describe("save/load ops: save_as_fp16 and load_as_fp16", function()
  local dir
  before_each(function() dir = tmpdir() end)
  after_each(function() rmtree(dir) end)

  -- half bits computed by hand: sign | exponent << 10 | fraction, ties to even
  local cases = {
    { 1, 0x3c00 }, { -2.5, 0xc100 }, { 65504, 0x7bff }, { 70000, 0x7c00 }, { 2 ^ -24, 0x0001 },
    { 1 + 2 ^ -11, 0x3c00 },        -- halfway between 0x3c00 and 0x3c01: to the even one
    { 1 + 3 * 2 ^ -11, 0x3c02 },    -- halfway between 0x3c01 and 0x3c02: to the even one
    { 0.5, 0x3800 }, { -0.0, 0x8000 },
  }

  local function run_op(spec, scope)
    local prog = oar.Program()
    local b = prog:global_block()
    local v = b:create_var{ name = "v", shape = { #cases }, dtype = spec.dtype or "float32", persistable = true }
    b:append_op{ type = spec.type, inputs = spec.type == "save" and { X = { v } } or nil,
      outputs = spec.type == "load" and { Out = { v } } or nil, attrs = spec.attrs }
    oar.Executor():run(prog, { scope = scope })
  end

  it("writes float16 records from float32 and float64 tensors", function()
    os.execute("mkdir -p '" .. dir .. "'")
    for _, dtype in ipairs({ "float32", "float64" }) do
      local values = {}
      for i, c in ipairs(cases) do values[i] = c[1] end
      local s = oar.Scope()
      s:var("v"):set_tensor(oar.Tensor(values, dtype))
      run_op({ type = "save", dtype = dtype, attrs = { file_path = dir .. "/h", save_as_fp16 = true } }, s)
      local s2 = oar.Scope()
      run_op({ type = "load", dtype = "float16", attrs = { file_path = dir .. "/h" } }, s2)
      local t = s2:find_var("v"):get_tensor()
      assert.equal("float16", t:dtype())
      for i, c in ipairs(cases) do assert.equal(c[2], t:data()[i - 1], dtype .. " case " .. i) end
    end
  end)

  it("converts float32 records to float16 when loading with load_as_fp16", function()
    os.execute("mkdir -p '" .. dir .. "'")
    local values = {}
    for i, c in ipairs(cases) do values[i] = c[1] end
    local s = oar.Scope()
    s:var("v"):set_tensor(oar.Tensor(values, "float32"))
    run_op({ type = "save", attrs = { file_path = dir .. "/f" } }, s)
    local s2 = oar.Scope()
    run_op({ type = "load", dtype = "float16", attrs = { file_path = dir .. "/f", load_as_fp16 = true } }, s2)
    local t = s2:find_var("v"):get_tensor()
    for i, c in ipairs(cases) do assert.equal(c[2], t:data()[i - 1], "case " .. i) end
    -- an integer tensor does not convert
    local si = oar.Scope()
    si:var("v"):set_tensor(oar.Tensor({ 1, 2, 3, 4, 5, 6, 7, 8, 9 }, "int32"))
    local ok, err = pcall(run_op, { type = "save", dtype = "int32", attrs = { file_path = dir .. "/i", save_as_fp16 = true } }, si)
    assert.is_false(ok)
    assert.matches("'v' is int32; only float32 and float64 tensors convert to float16", err)
    assert.is_nil(io.open(dir .. "/i", "rb"))
  end)

  it("refuses to overwrite when overwrite is false", function()
    os.execute("mkdir -p '" .. dir .. "'")
    write_bytes(dir .. "/keep", "precious")
    local s = oar.Scope()
    s:var("v"):set_tensor(oar.Tensor{ shape = { #cases } })
    local ok, err = pcall(run_op, { type = "save", attrs = { file_path = dir .. "/keep", overwrite = false } }, s)
    assert.is_false(ok)
    assert.matches("exists and overwrite is false", err)
    assert.equal("precious", read_bytes(dir .. "/keep"))
  end)
end)
