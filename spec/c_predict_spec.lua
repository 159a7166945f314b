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

local function tmpdir()
  local d = os.tmpname()
  os.remove(d)
  return d
end

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
