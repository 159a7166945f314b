-- Deploying from C: a model trained here and written by save_inference_model
-- is run by examples/c_predict (C only, through oar_predictor_*), and its
-- printed outputs match exe:run on the program load_inference_model returns.
-- Paths handed to the shell come from os.tmpname() and the repository.
local oar = require("oar")
local layers = oar.layers

local function sh_quote(s)
  assert(not s:find("'", 1, true))
  return "'" .. s .. "'"
end

local function run(cmd)
  local p = io.popen(cmd .. " 2>&1; echo \"exit $?\"")
  local out = p:read("*a")
  p:close()
  local code = tonumber(out:match("exit (%d+)\n?$"))
  return code, out:gsub("exit %d+\n?$", "")
end

local tmpdir = require("spec.helpers.files").tmpdir

local PREDICT = "examples/c_predict/predict"

local function train_model(dir, params_filename)
  local main, startup = oar.Program(), oar.Program()
  local probs
  oar.program_guard(main, startup, function()
    local x = layers.data{ name = "pixels", shape = { 5 } }
    local y = layers.data{ name = "label", shape = { 1 }, dtype = "int64" }
    local h = layers.fc{ input = x, size = 8, act = "relu" }
    h = layers.dropout{ x = h, dropout_prob = 0.2 }
    probs = layers.fc{ input = h, size = 3, act = "softmax" }
    local loss = layers.mean(layers.cross_entropy{ input = probs, label = y })
    oar.optimizer.SGD{ learning_rate = 0.5 }:minimize(loss)
  end)
  local exe, scope = oar.Executor(), oar.Scope()
  oar.seed(5)
  exe:run(startup, { scope = scope })
  for step = 1, 20 do
    local xs, ys = {}, {}
    for r = 1, 6 do
      xs[r] = {}
      for c = 1, 5 do xs[r][c] = math.cos(step + r * 0.9 + c * 1.7) end
      ys[r] = { (r + step) % 3 }
    end
    exe:run(main, { feed = { pixels = xs, label = oar.Tensor(ys, "int64") }, scope = scope })
  end
  oar.io.save_inference_model(dir, { "pixels" }, { probs }, exe, main,
    { params_filename = params_filename, scope = scope })
  return exe
end

local function parse_output(out)
  local shape = out:match("output shape %[([^%]]*)%]")
  local values_line = out:match("output shape %[[^%]]*%]\n([^\n]*)\n")
  local argmax = tonumber(out:match("argmax (%d+)"))
  local values = {}
  for v in (values_line or ""):gmatch("%S+") do values[#values + 1] = tonumber(v) end
  return shape, values, argmax
end

describe("examples/c_predict", function()
  local dir

  setup(function()
    local code, out = run("make -C examples/c_predict")
    assert.equal(0, code, out)
  end)
  before_each(function() dir = tmpdir() end)
  after_each(function() os.execute("rm -rf " .. sh_quote(dir)) end)

  for _, params_filename in ipairs({ false, "__params__" }) do
    it("prints what exe:run computes (" .. (params_filename and "combined parameters" or "one file per parameter") .. ")", function()
      local exe = train_model(dir, params_filename or nil)
      local inputs = { { 0.5, -1, 0.25, 2, -0.75 }, { 0, 0, 0, 0, 0 }, { 3, 1, -2, 0.5, 1 } }
      for _, input in ipairs(inputs) do
        local f = assert(io.open(dir .. "/input.txt", "w"))
        f:write(table.concat(input, " "), "\n")
        f:close()
        local code, out = run("OAR_INPUT_NAME=pixels " .. PREDICT .. " " .. sh_quote(dir) .. " " ..
          sh_quote(dir .. "/input.txt"))
        assert.equal(0, code, out)
        local shape, values, argmax = parse_output(out)
        assert.equal("1, 3", shape)

        local scope = oar.Scope()
        local prog, feeds, fetches = oar.io.load_inference_model(dir, exe, { params_filename = params_filename or nil,
          scope = scope })
        assert.same({ "pixels" }, feeds)
        local want = exe:run(prog, { feed = { pixels = { input } }, fetch_list = fetches, scope = scope })[1]
        assert.equal(3, #values)
        local best = 1
        for j = 1, 3 do
          local w = want:get(1, j)
          assert.is_true(math.abs(values[j] - w) <= 2e-6, string.format("output %d: C %g, Lua %g", j, values[j], w))
          if w > want:get(1, best) then best = j end
        end
        assert.equal(best - 1, argmax)
      end
    end)
  end

  it("reports a wrong input name, a missing model and a corrupt parameter file", function()
    train_model(dir, nil)
    local f = assert(io.open(dir .. "/input.txt", "w"))
    f:write("1 2 3 4 5\n")
    f:close()
    local code, out = run("OAR_INPUT_NAME=img " .. PREDICT .. " " .. sh_quote(dir) .. " " .. sh_quote(dir .. "/input.txt"))
    assert.equal(1, code)
    assert.matches("set_input: 'img' is not an input of the model %(inputs: pixels%)", out)

    code, out = run("OAR_INPUT_NAME=pixels " .. PREDICT .. " " .. sh_quote(dir .. "/nothing"))
    assert.equal(1, code)
    assert.matches("load: .*__model__.*No such file", out)

    -- a feature count that does not fit the model
    f = assert(io.open(dir .. "/input.txt", "w"))
    f:write("1 2 3\n")
    f:close()
    code, out = run("OAR_INPUT_NAME=pixels " .. PREDICT .. " " .. sh_quote(dir) .. " " .. sh_quote(dir .. "/input.txt"))
    assert.equal(1, code)
    assert.matches("run: .*shape", out)

    -- flip one byte in the middle of a parameter file
    local p = io.popen("ls " .. sh_quote(dir) .. " | grep '^fc_.*[.]w_0$' | head -1")
    local wname = p:read("*l")
    p:close()
    local wf = assert(io.open(dir .. "/" .. wname, "rb"))
    local bytes = wf:read("*a")
    wf:close()
    local mid = math.floor(#bytes / 2)
    wf = assert(io.open(dir .. "/" .. wname, "wb"))
    wf:write(bytes:sub(1, mid - 1), string.char((bytes:byte(mid) + 1) % 256), bytes:sub(mid + 1))
    wf:close()
    code, out = run("OAR_INPUT_NAME=pixels " .. PREDICT .. " " .. sh_quote(dir))
    assert.equal(1, code)
    assert.matches("load: .*" .. wname:gsub("%p", "%%%0") .. ".*checksum mismatch", out)
  end)
end)

describe("the C predictor API through the FFI", function()
  local ffi = require("ffi")
  local C = require("oar.lib").C
  local dir
  before_each(function() dir = tmpdir() end)
  after_each(function() os.execute("rm -rf " .. sh_quote(dir)) end)

  local function last_error() return ffi.string(C.oar_last_error()) end

  local function load(d)
    local out = ffi.new("oar_predictor_t *[1]")
    local rc = C.oar_predictor_load(d, out)
    if rc ~= 0 then return nil, last_error() end
    return ffi.gc(out[0], C.oar_predictor_free)
  end

  it("runs, and refuses bad arguments with a status and a message", function()
    local exe = train_model(dir, nil)
    local p = assert(load(dir))
    local data = ffi.new("const float *[1]")
    local dims = ffi.new("const int64_t *[1]")
    local nd = ffi.new("int[1]")
    assert.is_true(C.oar_predictor_get_output(p, 0, data, dims, nd) < 0)
    assert.matches("output 0: the model has not been run", last_error())
    assert.is_true(C.oar_predictor_run(p) < 0)
    assert.matches("input 'pixels' was not set", last_error())
    local x = ffi.new("float[10]", { 1, 2, 3, 4, 5, 0.5, 0.25, 0, -1, -2 })
    local d2 = ffi.new("int64_t[2]", { 2, 5 })
    assert.is_true(C.oar_predictor_set_input(p, "pixels", x, d2, 99) < 0)
    assert.matches("bad ndims 99", last_error())
    assert.is_true(C.oar_predictor_set_input(p, "pixels", nil, d2, 2) < 0)
    assert.matches("NULL data for 10 elements", last_error())
    local neg = ffi.new("int64_t[2]", { 2, -5 })
    assert.is_true(C.oar_predictor_set_input(p, "pixels", x, neg, 2) < 0)
    assert.is_true(C.oar_predictor_set_input(p, "pixels", x, d2, 2) == 0)
    assert.equal(0, C.oar_predictor_run(p))
    assert.is_true(C.oar_predictor_get_output(p, 1, data, dims, nd) < 0)
    assert.matches("output index 1 outside %[0, 1%)", last_error())
    assert.is_true(C.oar_predictor_get_output(p, -1, data, dims, nd) < 0)
    assert.equal(0, C.oar_predictor_get_output(p, 0, data, dims, nd))
    assert.equal(2, nd[0])
    assert.equal(2, tonumber(dims[0][0]))
    assert.equal(3, tonumber(dims[0][1]))
    -- the same numbers as the Lua side
    local scope = oar.Scope()
    local prog, _, fetches = oar.io.load_inference_model(dir, exe, { scope = scope })
    local want = exe:run(prog, { feed = { pixels = { { 1, 2, 3, 4, 5 }, { 0.5, 0.25, 0, -1, -2 } } },
      fetch_list = fetches, scope = scope })[1]
    for i = 0, 5 do
      assert.is_true(math.abs(data[0][i] - want:get(math.floor(i / 3) + 1, i % 3 + 1)) < 1e-6)
    end
    assert.is_true(C.oar_predictor_run(nil) < 0)
    assert.is_true(C.oar_predictor_load(nil, ffi.new("oar_predictor_t *[1]")) < 0)
    assert.is_true(C.oar_predictor_load(dir, nil) < 0)
    C.oar_predictor_free(nil)
  end)

  it("refuses models that read or write files, and parameters named like paths", function()
    -- a model whose forward pass would also save a file
    local main = oar.Program()
    local out
    oar.program_guard(main, oar.Program(), function()
      local x = layers.data{ name = "x", shape = { 2 } }
      out = layers.scale{ x = x, scale = 2 }
      main:global_block():append_op{ type = "save", inputs = { X = { x } },
        attrs = { file_path = dir .. "/stolen" } }
    end)
    local exe = oar.Executor()
    oar.io.save_inference_model(dir, { "x" }, { out }, exe, main, { scope = oar.Scope() })
    -- save_inference_model prunes the save op away: put it back by hand
    local prog = oar.Program.parse(io.open(dir .. "/__model__", "rb"):read("*a"))
    prog:global_block():append_op{ type = "save", inputs = { X = { "x" } }, attrs = { file_path = dir .. "/stolen" } }
    local bytes = prog:serialize()
    assert.equal(0, C.oar_file_write(dir .. "/__model__", bytes, #bytes))
    local p, err = load(dir)
    assert.is_nil(p)
    assert.matches("is a 'save' op: an inference model may not read or write files", err)
    local ok, lerr = pcall(oar.io.load_inference_model, dir, exe, { scope = oar.Scope() })
    assert.is_false(ok)
    assert.matches("is a 'save' op; an inference model may not read or write files", lerr)
    assert.is_nil(io.open(dir .. "/stolen", "rb"))

    -- a persistable named "../x" would read outside the model directory
    local m2 = oar.Program()
    local o2
    oar.program_guard(m2, oar.Program(), function()
      local x = layers.data{ name = "x", shape = { 2 } }
      o2 = layers.fc{ input = x, size = 1, param_attr = oar.ParamAttr{ name = "../evil" }, bias_attr = false }
    end)
    local s = oar.Scope()
    s:var("../evil"):set_tensor(oar.Tensor({ { 1 }, { 1 } }, "float32"))
    oar.io.save_inference_model(dir .. "/m2", { "x" }, { o2 }, exe, m2, { params_filename = "__params__", scope = s })
    -- combined parameters: fine
    assert.truthy(load(dir .. "/m2"))
    os.remove(dir .. "/m2/__params__")
    p, err = load(dir .. "/m2")
    assert.is_nil(p)
    assert.matches("parameter '%.%./evil' cannot name a file", err)
  end)
end)

-- PaddlePaddle's own exports (spec/fixtures/paddle) run from C alone: the
-- example feeds tensor files of any dtype with their LoD through
-- oar_predictor_set_input_ex and prints every output through
-- oar_predictor_get_output_ex.
describe("examples/c_predict on PaddlePaddle's models", function()
  local PF = require("spec.helpers.paddle_fixtures")
  setup(function()
    local code, out = run("make -C examples/c_predict")
    assert.equal(0, code, out)
  end)

  local function outputs_of(text)
    local outs = {}
    for head, values in text:gmatch("(output %d+ [^\n]*)\n([^\n]*)") do
      local o = { dtype = head:match("^output %d+ %S+ (%S+)"), values = {} }
      o.shape = head:match("shape %[([^%]]*)%]")
      o.lod = head:match("lod %[([^%]]*)%]")
      for v in values:gmatch("%S+") do o.values[#o.values + 1] = tonumber(v) end
      outs[#outs + 1] = o
    end
    return outs
  end

  local cases = {
    { "lstm", "fluid_combined" },   -- int64 ids with one level of LoD, combined __params__
    { "gru", "fluid_separate" },    -- one file per parameter beside __model__
    { "mixed", "pd2" },             -- two inputs, .pdmodel/.pdiparams
    { "pir_convnet", "pir" },       -- Paddle 3's PIR JSON, a 0-D second output
  }
  for _, case in ipairs(cases) do
    it(case[1] .. " (" .. case[2] .. ") prints Paddle's outputs", function()
      local fx = PF.load(case[1])
      local layout
      for _, l in ipairs(fx.layouts) do if l.name == case[2] then layout = l end end
      local cmd = PREDICT .. " --model " .. sh_quote(layout.model)
      if layout.params then cmd = cmd .. " --params " .. sh_quote(layout.params) end
      for _, inp in ipairs(fx.inputs) do cmd = cmd .. " --input " .. sh_quote(inp[1] .. "=" .. inp.file) end
      local code, out = run(cmd)
      assert.equal(0, code, out)
      local outs = outputs_of(out)
      assert.equal(#fx.outputs, #outs, out)
      for i, want in ipairs(fx.outputs) do
        assert.equal("float32", outs[i].dtype)
        assert.equal(table.concat(want:shape(), ", "), outs[i].shape)
        assert.equal(want:numel(), #outs[i].values)
        local w = want:data()
        for k = 1, #outs[i].values do
          assert.is_true(math.abs(outs[i].values[k] - w[k - 1]) <= 1e-6,
            string.format("output %d[%d]: C %g, Paddle %g", i, k, outs[i].values[k], w[k - 1]))
        end
      end
    end)
  end

  it("refuses a bad dtype code, a bad LoD and an unknown input, saying which", function()
    local ffi = require("ffi")
    local C = require("oar.lib").C
    local fx = PF.load("lstm")
    local pp = ffi.new("oar_predictor_t *[1]")
    assert.equal(0, C.oar_predictor_load_files(fx.dir .. "/fluid_separate/__model__", nil, pp))
    local p = ffi.gc(pp[0], C.oar_predictor_free)
    assert.equal(1, C.oar_predictor_num_inputs(p))
    assert.equal("ids", ffi.string(C.oar_predictor_input_name(p, 0)))
    assert.is_true(C.oar_predictor_input_name(p, 1) == nil)
    local ids = ffi.new("int64_t[5]", { 1, 2, 3, 4, 5 })
    local dims = ffi.new("int64_t[2]", { 5, 1 })
    local lod = ffi.new("uint64_t[3]", { 0, 2, 5 })
    local function msg() return ffi.string(C.oar_last_error()) end
    assert.is_true(C.oar_predictor_set_input_ex(p, "ids", 77, ids, dims, 2, lod, 3) < 0)
    assert.matches("input 'ids': unknown dtype code 77", msg())
    local bad = ffi.new("uint64_t[3]", { 0, 2, 9 })
    assert.is_true(C.oar_predictor_set_input_ex(p, "ids", 3, ids, dims, 2, bad, 3) < 0)
    assert.matches("input 'ids': ", msg())
    assert.is_true(C.oar_predictor_set_input_ex(p, "words", 3, ids, dims, 2, lod, 3) < 0)
    assert.matches("'words' is not an input of the model %(inputs: ids%)", msg())
    assert.is_true(C.oar_predictor_set_input_ex(p, "ids", 3, ids, dims, 2, nil, 2) < 0)
    -- a good one runs, and the output has no float32 problem
    assert.equal(0, C.oar_predictor_set_input_ex(p, "ids", 3, ids, dims, 2, lod, 3))
    assert.equal(0, C.oar_predictor_run(p))
    local dt, data, odims, nd = ffi.new("int[1]"), ffi.new("const void *[1]"), ffi.new("const int64_t *[1]"), ffi.new("int[1]")
    assert.equal(0, C.oar_predictor_get_output_ex(p, 0, dt, data, odims, nd, nil, nil))
    assert.equal(2, nd[0])
    assert.equal(2, tonumber(odims[0][0]))   -- two sequences, one row each
    assert.is_true(C.oar_predictor_load_files(fx.dir .. "/fluid_separate/__model__", "", pp) < 0)
    assert.matches("empty params path", msg())
  end)
end)
