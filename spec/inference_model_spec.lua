-- oar.io.save_inference_model / load_inference_model: Fluid's directory
-- layout (`__model__` with feed ops first and fetch ops last, parameters one
-- file each or combined), pruning to the targets, inference-only ops, and
-- outputs checked against the network computed here in Lua.
local oar = require("oar")
local layers = oar.layers
local F = require("spec.helpers.files")

local tmpdir, rmtree, list_dir = F.tmpdir, F.rmtree, F.list_dir
local read_bytes, write_bytes = F.read_bytes, F.write_bytes

local W1 = { { 0.1, -0.2, 0.3, 0.4 }, { 0.5, 0.6, -0.7, 0.8 }, { 0.9, 1.0, 1.1, -1.2 } }
local B1 = { 0.01, 0.02, 0.03, 0.04 }
local W2 = { { 1.5, 0.5 }, { -2.5, 0.25 }, { 3.5, -1 }, { 4.5, 2 } }
local B2 = { 0.25, -0.5 }

-- reference: hidden = tanh(x W1 + b1), out = hidden W2 + b2
local function ref_hidden(x)
  local h = {}
  for i = 1, #x do
    h[i] = {}
    for j = 1, 4 do
      local s = B1[j]
      for k = 1, 3 do s = s + x[i][k] * W1[k][j] end
      h[i][j] = math.tanh(s)
    end
  end
  return h
end
local function ref_out(h)
  local o = {}
  for i = 1, #h do
    o[i] = {}
    for j = 1, 2 do
      local s = B2[j]
      for k = 1, 4 do s = s + h[i][k] * W2[k][j] end
      o[i][j] = s
    end
  end
  return o
end

local function assert_close(want, got, tol)
  assert.equal(#want, #got)
  for i = 1, #want do
    if type(want[i]) == "table" then assert_close(want[i], got[i], tol)
    else assert.is_true(math.abs(want[i] - got[i]) <= tol, string.format("want %g got %g", want[i], got[i])) end
  end
end

-- A trainable model: x -> fc(tanh) -> dropout -> fc -> out, plus a loss on y.
local function model()
  local m = { main = oar.Program(), startup = oar.Program(), scope = oar.Scope(), exe = oar.Executor() }
  oar.program_guard(m.main, m.startup, function()
    m.x = layers.data{ name = "x", shape = { 3 } }
    m.y = layers.data{ name = "y", shape = { 2 } }
    m.h = layers.fc{ input = m.x, size = 4, act = "tanh", param_attr = oar.ParamAttr{ name = "w1" },
      bias_attr = oar.ParamAttr{ name = "b1" } }
    m.d = layers.dropout{ x = m.h, dropout_prob = 0.5, dropout_implementation = "upscale_in_train" }
    m.out = layers.fc{ input = m.d, size = 2, param_attr = oar.ParamAttr{ name = "w2" },
      bias_attr = oar.ParamAttr{ name = "b2" } }
    m.score = layers.reduce_sum{ input = m.out }
    m.loss = layers.mean(layers.square_error_cost{ input = m.out, label = m.y })
    oar.optimizer.Adam{ learning_rate = 0.01 }:minimize(m.loss)
  end)
  m.exe:run(m.startup, { scope = m.scope })
  -- a training step, so optimizer state exists (and must not be saved)
  m.exe:run(m.main, { feed = { x = { { 1, 2, 3 } }, y = { { 0, 1 } } }, scope = m.scope })
  for name, v in pairs({ w1 = W1, b1 = B1, w2 = W2, b2 = B2 }) do
    m.scope:var(name):set_tensor(oar.Tensor(v, "float32"))
  end
  return m
end

local X = { { 1, 2, 3 }, { -1, 0.5, 2 }, { 0, 0, 0 } }

describe("save_inference_model", function()
  local dir
  before_each(function() dir = tmpdir() end)
  after_each(function() rmtree(dir) end)

  it("writes __model__ and only the parameters the targets need", function()
    local m = model()
    local names = oar.io.save_inference_model(dir, { "x" }, { m.out }, m.exe, m.main, { scope = m.scope })
    assert.same({ m.out.name }, names)
    assert.same({ "__model__", "b1", "b2", "w1", "w2" }, list_dir(dir))
  end)

  it("lays __model__ out like Fluid: feed ops first, fetch ops last, no training ops", function()
    local m = model()
    oar.io.save_inference_model(dir, { "x", "y" }, { m.out, m.loss }, m.exe, m.main, { scope = m.scope })
    local prog = oar.Program.parse(read_bytes(dir .. "/__model__"))
    local b = prog:global_block()
    local ops = b:ops()
    -- feeds are prepended one after another: the last feed comes first
    assert.equal("feed", ops[1].type)
    assert.equal("feed", ops[2].type)
    assert.same({ "y" }, ops[1]:output("Out"))
    assert.equal(1, ops[1]:attr("col"))
    assert.same({ "x" }, ops[2]:output("Out"))
    assert.equal(0, ops[2]:attr("col"))
    assert.same({ "feed" }, ops[1]:input("X"))
    assert.equal("fetch", ops[#ops - 1].type)
    assert.equal("fetch", ops[#ops].type)
    assert.same({ m.out.name }, ops[#ops - 1]:input("X"))
    assert.equal(0, ops[#ops - 1]:attr("col"))
    assert.same({ m.loss.name }, ops[#ops]:input("X"))
    assert.equal(1, ops[#ops]:attr("col"))
    assert.same({ "fetch" }, ops[#ops]:output("Out"))
    assert.equal("feed_minibatch", b:var("feed").type)
    assert.equal("fetch_list", b:var("fetch").type)
    assert.is_true(b:var("feed").persistable and b:var("fetch").persistable)
    for i, op in ipairs(ops) do
      -- Backward 1, Optimize 2, LRSched 16 are gone (Loss 256 marks a forward op)
      assert.equal(0, require("bit").band(op:attr("op_role"), 1 + 2 + 16), "op " .. i .. " " .. op.type)
      if op.type == "dropout" then assert.is_true(op:attr("is_test")) end
      if i > 2 and i < #ops - 1 then assert.is_false(op.type == "feed" or op.type == "fetch") end
    end
    -- no optimizer state in the model
    for _, v in ipairs(b:vars()) do assert.is_nil(v.name:find("moment")) end
  end)

  it("combines the parameters into params_filename, and names the model model_filename", function()
    local m = model()
    oar.io.save_inference_model(dir, { "x" }, { m.out }, m.exe, m.main,
      { params_filename = "__params__", model_filename = "net", scope = m.scope })
    assert.same({ "__params__", "__params__.crc", "net" }, list_dir(dir))   -- Paddle's bytes + their checksum
    local s2 = oar.Scope()
    local prog, feeds, fetches = oar.io.load_inference_model(dir, m.exe,
      { model_filename = "net", params_filename = "__params__", scope = s2 })
    assert.same({ "x" }, feeds)
    local r = m.exe:run(prog, { feed = { x = X }, fetch_list = fetches, scope = s2 })
    assert_close(ref_out(ref_hidden(X)), r[1]:totable(), 1e-5)
  end)

  it("accepts Fluid's positional model_filename and params_filename", function()
    local m = model()
    oar.scope_guard(m.scope, function()
      oar.io.save_inference_model(dir, { "x" }, { m.out }, m.exe, m.main, "m", "p")
    end)
    assert.same({ "m", "p", "p.crc" }, list_dir(dir))
    local s2 = oar.Scope()
    oar.scope_guard(s2, function()
      local prog, _, fetches = oar.io.load_inference_model(dir, m.exe, "m", "p")
      local r = m.exe:run(prog, { feed = { x = X }, fetch_list = fetches })
      assert_close(ref_out(ref_hidden(X)), r[1]:totable(), 1e-5)
    end)
  end)

  it("feeding an intermediate variable replaces the ops that computed it", function()
    local m = model()
    oar.io.save_inference_model(dir, { m.d.name }, { m.out }, m.exe, m.main, { scope = m.scope })
    assert.same({ "__model__", "b2", "w2" }, list_dir(dir))
    local s2 = oar.Scope()
    local prog, feeds, fetches = oar.io.load_inference_model(dir, m.exe, { scope = s2 })
    assert.same({ m.d.name }, feeds)
    local H = { { 0.5, -0.25, 1, 0 } }
    local r = m.exe:run(prog, { feed = { [m.d.name] = H }, fetch_list = fetches, scope = s2 })
    assert_close(ref_out(H), r[1]:totable(), 1e-6)
  end)

  it("refuses feeds the targets do not need, unknown targets and reserved names", function()
    local m = model()
    local cases = {
      { function() oar.io.save_inference_model(dir, { "x", "y" }, { m.out }, m.exe, m.main, { scope = m.scope }) end,
        "feed 'y' is not needed to compute the targets" },
      { function() oar.io.save_inference_model(dir, { "x" }, { "nope" }, m.exe, m.main) end,
        "target 'nope' is not a variable of the program's global block" },
      { function() oar.io.save_inference_model(dir, { "zz" }, { m.out }, m.exe, m.main) end,
        "feed 'zz' is not a variable" },
      { function() oar.io.save_inference_model(dir, {}, { m.out }, m.exe, m.main) end,
        "'feeded_var_names' must be a non%-empty list" },
      { function() oar.io.save_inference_model(dir, { "x", "x" }, { m.out }, m.exe, m.main) end,
        "'x' appears twice in feeded_var_names" },
      { function() oar.io.save_inference_model(dir, { "x" }, { 3 }, m.exe, m.main) end,
        "target_vars%[1%] must be a Variable" },
      { function() oar.io.save_inference_model(dir, { "x" }, { m.out }, "exe", m.main) end,
        "'executor' must be an oar Executor" },
      { function() oar.io.save_inference_model(dir, { "x" }, { m.out }, m.exe, m.main, { params_filename = "a/b" }) end,
        "'params_filename' must name a file inside dirname" },
    }
    for i, c in ipairs(cases) do
      local ok, err = pcall(c[1])
      assert.is_false(ok, "case " .. i)
      assert.matches(c[2], err)
    end
    -- nothing was written by the refused calls
    assert.is_nil(io.open(dir .. "/__model__", "rb"))
  end)

  it("leaves the source program unchanged", function()
    local m = model()
    local before = m.main:serialize()
    oar.io.save_inference_model(dir, { "x" }, { m.out }, m.exe, m.main, { scope = m.scope })
    assert.equal(before, m.main:serialize())
  end)
end)

describe("load_inference_model", function()
  local dir
  before_each(function() dir = tmpdir() end)
  after_each(function() rmtree(dir) end)

  it("returns a runnable program without feed/fetch ops, feed names and fetch targets in order", function()
    local m = model()
    oar.io.save_inference_model(dir, { "x" }, { m.score, m.out }, m.exe, m.main, { scope = m.scope })
    local s2 = oar.Scope()
    local prog, feeds, fetches = oar.io.load_inference_model(dir, m.exe, { scope = s2 })
    assert.same({ "x" }, feeds)
    assert.equal(2, #fetches)
    assert.is_true(oar.is_variable(fetches[1]))
    assert.equal(m.score.name, fetches[1].name)
    assert.equal(m.out.name, fetches[2].name)
    for _, op in ipairs(prog:global_block():ops()) do
      assert.is_false(op.type == "feed" or op.type == "fetch")
    end
    assert.is_false(prog:global_block():has_var("feed"))
    local r = m.exe:run(prog, { feed = { x = X }, fetch_list = fetches, scope = s2 })
    local want = ref_out(ref_hidden(X))
    local total = 0
    for i = 1, #want do total = total + want[i][1] + want[i][2] end
    assert_close({ total }, r[1]:totable(), 1e-4)
    assert_close(want, r[2]:totable(), 1e-5)
    -- dropout is in test mode: runs agree
    local again = m.exe:run(prog, { feed = { x = X }, fetch_list = fetches, scope = s2 })
    assert.same(r[2]:totable(), again[2]:totable())
  end)

  it("round-trips: a loaded model saved again gives the same outputs", function()
    local m = model()
    oar.io.save_inference_model(dir .. "/a", { "x" }, { m.out }, m.exe, m.main, { scope = m.scope })
    local s2 = oar.Scope()
    local prog, feeds, fetches = oar.io.load_inference_model(dir .. "/a", m.exe, { scope = s2 })
    oar.io.save_inference_model(dir .. "/b", feeds, fetches, m.exe, prog, { scope = s2 })
    assert.equal(read_bytes(dir .. "/a/w1"), read_bytes(dir .. "/b/w1"))
    local s3 = oar.Scope()
    local p3, _, f3 = oar.io.load_inference_model(dir .. "/b", m.exe, { scope = s3 })
    local r = m.exe:run(p3, { feed = { x = X }, fetch_list = f3, scope = s3 })
    assert_close(ref_out(ref_hidden(X)), r[1]:totable(), 1e-5)
  end)

  it("reports missing, corrupt or incomplete models and loads nothing", function()
    local m = model()
    local target = oar.Scope()
    local ok, err = pcall(oar.io.load_inference_model, dir, m.exe, { scope = target })
    assert.is_false(ok)
    assert.matches("load_inference_model: cannot open '.*__model__'", err)

    oar.io.save_inference_model(dir, { "x" }, { m.out }, m.exe, m.main, { scope = m.scope })
    local model_bytes = read_bytes(dir .. "/__model__")
    write_bytes(dir .. "/__model__", model_bytes:sub(1, #model_bytes - 9))
    ok, err = pcall(oar.io.load_inference_model, dir, m.exe, { scope = target })
    assert.is_false(ok)
    assert.matches("__model__: .*malformed ProgramDesc", err)

    write_bytes(dir .. "/__model__", model_bytes)
    os.remove(dir .. "/w2")
    ok, err = pcall(oar.io.load_inference_model, dir, m.exe, { scope = target })
    assert.is_false(ok)
    assert.matches("cannot open '.*w2'", err)
    assert.same({}, target:local_var_names())

    -- a program without feed/fetch ops is no inference model
    write_bytes(dir .. "/__model__", m.main:serialize())
    ok, err = pcall(oar.io.load_inference_model, dir, m.exe, { scope = target })
    assert.is_false(ok)
    assert.matches("has 0 feed and 0 fetch ops", err)
    assert.same({}, target:local_var_names())
  end)
end)
