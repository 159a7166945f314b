-- Models that PaddlePaddle 2.6.2 and 3.3.1 exported (spec/fixtures/paddle,
-- made by tools/paddle_fixtures/gen_paddle{2,3}.py with their inputs and
-- Paddle's outputs) load in every layout and give Paddle's outputs, through
-- Lua and through the C predictor. No Paddle is needed here.
local oar = require("oar")
local ffi = require("ffi")
local lib = require("oar.lib")
local PF = require("spec.helpers.paddle_fixtures")
local F = require("spec.helpers.files")
local C = lib.C

local TOL = 1e-6   -- float32 results; the largest difference seen is 2.4e-7

local function sh(s) assert(not s:find("'", 1, true)) return "'" .. s .. "'" end

-- Lua: load_inference_model(path) + exe:run; returns the fetched tensors
local function run_lua(path, fx, opts)
  local exe, scope = oar.Executor(), oar.Scope()
  opts = opts or {}
  opts.scope = scope
  local prog, feeds, fetches = oar.io.load_inference_model(path, exe, opts)
  local feed = {}
  for _, inp in ipairs(fx.inputs) do feed[inp[1]] = inp[2] end
  assert.equal(#fx.inputs, #feeds)
  return exe:run(prog, { feed = feed, fetch_list = fetches, scope = scope }), scope, feeds
end

-- every output within TOL of Paddle's; a 0-D output may come back as [1]
-- from exe:run (see the 0-D spec below)
local function check_outputs(got, fx, what)
  assert.equal(#fx.outputs, #got)
  for i, want in ipairs(fx.outputs) do
    local g = got[i]
    if #want:shape() == 0 and #g:shape() == 1 and g:numel() == 1 then
      assert.is_true(math.abs(g:data()[0] - want:data()[0]) <= TOL, what .. ": scalar output")
    else
      local d = PF.max_diff(g, want, what .. " output " .. i)
      assert.is_true(d <= TOL, string.format("%s output %d: max |oar - Paddle| = %g", what, i, d))
    end
  end
end

-- C: oar_predictor_load_files + set_input_ex + get_output_ex
local function run_c(layout, fx)
  local pp = ffi.new("oar_predictor_t *[1]")
  assert(C.oar_predictor_load_files(layout.model, layout.params, pp) == 0, lib.last_error())
  local p = ffi.gc(pp[0], C.oar_predictor_free)
  for _, inp in ipairs(fx.inputs) do
    local t = inp[2]
    local shape = t:shape()
    local dims = ffi.new("int64_t[?]", math.max(#shape, 1), shape)
    local lod = t:lod()
    local level = lod[#lod]
    local offs = level and ffi.new("uint64_t[?]", #level, level) or nil
    assert(C.oar_predictor_set_input_ex(p, inp[1], C.oar_tensor_dtype(t.handle), t:data(), dims, #shape, offs,
      level and #level or 0) == 0, lib.last_error())
  end
  assert(C.oar_predictor_run(p) == 0, lib.last_error())
  assert.equal(#fx.outputs, C.oar_predictor_num_outputs(p))
  local dt, data, dims, nd = ffi.new("int[1]"), ffi.new("const void *[1]"), ffi.new("const int64_t *[1]"), ffi.new("int[1]")
  for i, want in ipairs(fx.outputs) do
    assert(C.oar_predictor_get_output_ex(p, i - 1, dt, data, dims, nd, nil, nil) == 0, lib.last_error())
    if layout.name == "pir" then   -- the names Paddle 3's predictor gives its outputs
      assert.equal("fetch_name_" .. (i - 1), ffi.string(C.oar_predictor_output_name(p, i - 1)))
    end
    local shape = {}
    for k = 0, nd[0] - 1 do shape[k + 1] = tonumber(dims[0][k]) end
    assert.same(want:shape(), shape)   -- a 0-D output stays 0-D here
    assert.equal(5, dt[0])
    local g, w = ffi.cast("const float *", data[0]), want:data()
    for k = 0, want:numel() - 1 do
      assert.is_true(math.abs(g[k] - w[k]) <= TOL, string.format("C output %d[%d]: %g vs Paddle %g", i, k, g[k], w[k]))
    end
  end
end

describe("PaddlePaddle's exported models", function()
  for _, model in ipairs(PF.MODELS) do
    local fx = PF.load(model)
    for _, layout in ipairs(fx.layouts) do
      local what = model .. " (" .. layout.name .. ")"
      it(what .. ": load_inference_model + exe:run give Paddle's outputs", function()
        local missing = PF.missing(model, layout.name)
        assert(not missing, what .. " needs " .. tostring(missing))
        check_outputs(run_lua(layout.path, fx), fx, what)
        -- the model file named directly, with its parameters found beside it
        if layout.name ~= "fluid_separate" and layout.name ~= "fluid_combined" then
          check_outputs(run_lua(layout.model, fx), fx, what .. " by file")
        end
      end)
      it(what .. ": the C predictor gives Paddle's outputs", function()
        local missing = PF.missing(model, layout.name)
        assert(not missing, what .. " needs " .. tostring(missing))
        run_c(layout, fx)
      end)
    end
  end
end)

describe("Paddle model files", function()
  local dir
  before_each(function() dir = F.tmpdir(); os.execute("mkdir -p " .. sh(dir)) end)
  after_each(function() F.rmtree(dir) end)

  it("are told apart by content, not by name: PIR JSON as .pdmodel, a ProgramDesc as .json", function()
    local fx = PF.load("pir_convnet")
    F.write_bytes(dir .. "/a.pdmodel", F.read_bytes(fx.dir .. "/pir/model.json"))
    F.write_bytes(dir .. "/a.pdiparams", F.read_bytes(fx.dir .. "/pir/model.pdiparams"))
    check_outputs(run_lua(dir .. "/a", fx), fx, "PIR named .pdmodel")
    local mlp = PF.load("mlp")
    F.write_bytes(dir .. "/b.json", F.read_bytes(mlp.dir .. "/pd2/model.pdmodel"))
    F.write_bytes(dir .. "/b.pdiparams", F.read_bytes(mlp.dir .. "/pd2/model.pdiparams"))
    check_outputs(run_lua(dir .. "/b", mlp), mlp, "ProgramDesc named .json")
  end)

  it("a 0-D parameter and a 0-D output keep their rank (Paddle 2.5+)", function()
    local fx = PF.load("scalar_out")
    assert.same({}, fx.outputs[2]:shape())
    local got, scope = run_lua(fx.dir .. "/pd2/model", fx)
    assert.same({}, scope:find_var("scalar_w"):get_tensor():shape())
    assert.equal(1.5, scope:find_var("scalar_w"):get_tensor():data()[0])
    -- exe:run keeps the rank the program declares, as the C predictor does
    assert.same({}, got[2]:shape())
  end)

  it("says what is wrong with a bad PIR JSON file", function()
    local good = F.read_bytes(PF.ROOT .. "/pir_convnet/pir/model.json")
    local function load_text(text)
      F.write_bytes(dir .. "/m.json", text)
      os.execute("cp " .. sh(PF.ROOT .. "/pir_convnet/pir/model.pdiparams") .. " " .. sh(dir .. "/m.pdiparams"))
      local ok, err = pcall(oar.io.load_inference_model, dir .. "/m", oar.Executor(), { scope = oar.Scope() })
      assert.is_false(ok)
      return tostring(err)
    end
    assert.matches("m%.json: PIR JSON: .* at byte", load_text(good:sub(1, 500)))
    assert.matches("not a PIR program", load_text((good:gsub('"magic":"pir"', '"magic":"xyz"'))))
    assert.matches("PIR op #%d+ 'pd_op%.softmax_v9': no Fluid op is known for this PIR op",
      load_text((good:gsub('"1%.softmax"', '"1.softmax_v9"'))))
    local at = good:find('"1.relu"', 1, true)
    local broken = good:sub(1, at) .. good:sub(at + 1):gsub('"I":%[{"%%":%d+', '"I":[{"%%":99999', 1)
    assert.matches("PIR op #%d+ 'pd_op%.relu': input 0 %(value %%99999%) is absent", load_text(broken))
    -- C reports the same through the predictor
    local pp = ffi.new("oar_predictor_t *[1]")
    assert.is_true(C.oar_predictor_load_files(dir .. "/m.json", dir .. "/m.pdiparams", pp) < 0)
    assert.matches("m%.json: PIR op", lib.last_error())
  end)

  it("loads nothing from a path that holds no model, and says where it looked", function()
    local ok, err = pcall(oar.io.load_inference_model, dir .. "/nothing", oar.Executor())
    assert.is_false(ok)
    assert.matches("cannot open '.*nothing/__model__': no such file %(no model at '.*nothing': also looked for " ..
      ".*nothing%.pdmodel, .*nothing%.json", err)
  end)
end)

describe("combined parameter files oar writes", function()
  local dir
  before_each(function() dir = F.tmpdir() end)
  after_each(function() F.rmtree(dir) end)

  local function save_again(fx, model_filename, params_filename)
    local exe, scope = oar.Executor(), oar.Scope()
    local prog, feeds, fetches = oar.io.load_inference_model(fx.dir .. "/pd2/model", exe, { scope = scope })
    oar.io.save_inference_model(dir, feeds, fetches, exe, prog,
      { model_filename = model_filename, params_filename = params_filename, scope = scope })
  end

  it("are byte for byte Paddle's (.pdiparams), with their checksum beside them", function()
    for _, model in ipairs({ "mlp", "mixed", "scalar_out" }) do
      local fx = PF.load(model)
      save_again(fx, "model.pdmodel", "model.pdiparams")
      assert.equal(F.read_bytes(fx.dir .. "/pd2/model.pdiparams"), F.read_bytes(dir .. "/model.pdiparams"))
      assert.matches("^oar%-crc32 1 %d+ %x+\n$", F.read_bytes(dir .. "/model.pdiparams.crc"))
      check_outputs(run_lua(dir .. "/model", fx), fx, model .. " saved by oar")
      F.rmtree(dir)
    end
  end)

  it("are checked against their .crc, and load without one (Paddle's own)", function()
    local fx = PF.load("mlp")
    save_again(fx, "__model__", "__params__")
    local path = dir .. "/__params__"
    local bytes = F.read_bytes(path)
    local mid = math.floor(#bytes / 2)
    F.write_bytes(path, bytes:sub(1, mid - 1) .. string.char((bytes:byte(mid) + 1) % 256) .. bytes:sub(mid + 1))
    local ok, err = pcall(run_lua, dir, fx)
    assert.is_false(ok)
    assert.matches("__params__': checksum mismatch %(file corrupted, or replaced without its checksum file", err)
    local pp = ffi.new("oar_predictor_t *[1]")
    assert.is_true(C.oar_predictor_load(dir, pp) < 0)
    assert.matches("checksum mismatch", lib.last_error())
    -- Paddle's file in its place, the stale .crc removed: loads
    F.write_bytes(path, F.read_bytes(fx.dir .. "/fluid_combined/__params__"))
    os.remove(path .. ".crc")
    check_outputs(run_lua(dir, fx), fx, "Paddle's __params__")
  end)

  it("of older oar versions (a checksum trailer after each record) still load", function()
    local fx = PF.load("mlp")
    local exe, scope = oar.Executor(), oar.Scope()
    local prog = oar.io.load_inference_model(fx.dir .. "/fluid_combined", exe, { scope = scope })
    local names = {}
    for _, v in ipairs(prog:global_block():vars()) do
      if v.persistable and v.type == "lod_tensor" then names[#names + 1] = v.name end
    end
    table.sort(names)
    local parts = {}
    for _, n in ipairs(names) do
      local bytes, len = ffi.new("void *[1]"), ffi.new("size_t[1]")
      assert(C.oar_tensor_serialize(scope:find_var(n):get_tensor().handle, bytes, len) == 0)
      parts[#parts + 1] = ffi.string(bytes[0], len[0])
      C.oar_free(bytes[0])
      assert.equal("OARC", parts[#parts]:sub(-12, -9))
    end
    os.execute("mkdir -p " .. sh(dir))
    F.write_bytes(dir .. "/__model__", F.read_bytes(fx.dir .. "/fluid_combined/__model__"))
    F.write_bytes(dir .. "/__params__", table.concat(parts))
    check_outputs(run_lua(dir, fx), fx, "old oar __params__")
  end)
end)

describe("PIR JSON from a hostile source", function()
  -- every mutation is an error with a message or a program, never a crash
  it("survives truncations and byte changes anywhere in a real file", function()
    local good = F.read_bytes(PF.ROOT .. "/pir_convnet/pir/model.json")
    local out = ffi.new("oar_program_t *[1]")
    local seed = 12345
    local function rand(n) seed = (seed * 1103515245 + 12345) % 2147483648 return seed % n + 1 end
    local bad, okc = 0, 0
    local chars = { "0", "9", "-", "{", "}", "[", "]", '"', ",", ":", "x", "1e999", "-1", "99999999999" }
    for i = 1, 400 do
      local s
      if i <= 100 then
        s = good:sub(1, rand(#good))
      else
        local at = rand(#good)
        s = good:sub(1, at - 1) .. chars[rand(#chars)] .. good:sub(at + 1)
      end
      if C.oar_program_parse_model(s, #s, out) == 0 then
        okc = okc + 1
        C.oar_program_free(out[0])
      else
        bad = bad + 1
        assert.is_true(#lib.last_error() > 0)
      end
    end
    assert.is_true(bad > 100, "only " .. bad .. " of 400 mutations were refused")
  end)
end)
