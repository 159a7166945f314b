-- oar.jit.trace (docs/eager.md, "From eager to static"): an eager module or
-- function run once and recorded as a Program. The traced program computes
-- the eager outputs bit for bit (same kernels, same thread count), so does
-- the inference model it saves once load_inference_model or the C predictor
-- (examples/c_predict) reads it back.
local oar = require("oar")
local ffi = require("ffi")
local C = require("oar.lib").C
local F = require("spec.helpers.files")
local nn = oar.nn

local function bytes(t)
  local size = tonumber(C.oar_dtype_size(C.oar_tensor_dtype(t.handle)))
  return ffi.string(t:data(), t:numel() * size)
end

local function assert_bits(want, got)
  assert.same(want:shape(), got:shape())
  assert.equal(want:dtype(), got:dtype())
  assert.is_true(bytes(want) == bytes(got), "the values differ:\n" .. tostring(want) .. "\n" .. tostring(got))
end

local function mlp()
  oar.seed(11)
  return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 3), nn.Softmax())
end

local ConvNet = nn.Module:extend("JitConvNet")
function ConvNet:init()
  self.conv = nn.Conv2D(2, 4, 3, { padding = 1 })
  self.bn = nn.BatchNorm(4)
  self.pool = nn.Pool2D{ pool_size = 2, pool_stride = 2 }
  self.drop = nn.Dropout(0.5)
  self.fc = nn.Linear(4 * 4 * 4, 5)
end
function ConvNet:forward(x)
  local h = self.pool(self.bn(self.conv(x)):relu())
  return self.fc(self.drop(h:reshape{ x:shape()[1], -1 }))
end

local function convnet()
  oar.seed(12)
  local net = ConvNet()
  -- running statistics away from their initial values, so eval mode matters
  for _ = 1, 3 do net(oar.randn(3, 2, 8, 8)) end
  net:eval()
  return net
end

local function sh_quote(s)
  assert(not s:find("'", 1, true))
  return "'" .. s .. "'"
end
local function run(cmd)
  local p = io.popen(cmd .. " 2>&1; echo \"exit $?\"")
  local out = p:read("*a")
  p:close()
  return tonumber(out:match("exit (%d+)\n?$")), out:gsub("exit %d+\n?$", "")
end

-- a tensor in Fluid's LoDTensor file format, what predict --input reads
local function write_tensor(path, t)
  local data, n = ffi.new("void *[1]"), ffi.new("size_t[1]")
  assert.equal(0, C.oar_tensor_serialize(t.handle, data, n))
  local f = assert(io.open(path, "wb"))
  f:write(ffi.string(data[0], n[0]))
  f:close()
  C.oar_free(data[0])
end

describe("oar.jit.trace", function()
  it("records an MLP; traced(x) gives the eager outputs, bit for bit", function()
    local model = mlp()
    local x = oar.randn(4, 6)
    local traced = oar.jit.trace(model, { x })
    local prog = traced:program()
    assert.is_true(oar.framework.is_program(prog))
    local gb = prog:global_block()
    assert.same({ "x1" }, traced:feed_names())
    assert.is_true(gb:var("0.weight").persistable)
    assert.is_true(gb:var("4.bias").persistable)
    assert.is_false(gb:var("x1").persistable)
    local types = {}
    for _, op in ipairs(gb:ops()) do types[#types + 1] = op.type end
    assert.same({ "mul", "elementwise_add", "tanh", "mul", "elementwise_add", "relu", "mul", "elementwise_add",
      "softmax" }, types)
    assert_bits(model(x), traced(x))
    -- other inputs of the same shape
    for _ = 1, 3 do
      local x2 = oar.randn(4, 6)
      assert_bits(model(x2), traced(x2))
    end
  end)

  it("records a conv net in eval mode (batch_norm is_test, no dropout)", function()
    local net = convnet()
    local x = oar.randn(2, 2, 8, 8)
    local traced = oar.jit.trace(net, { x })
    local gb = traced:program():global_block()
    local bn
    for _, op in ipairs(gb:ops()) do
      assert.are_not.equal("dropout", op.type)
      if op.type == "batch_norm" then bn = op end
    end
    assert.is_true(bn:attr("is_test"))
    assert.is_true(gb:var("bn.running_mean").persistable)
    assert_bits(net(x), traced(x))
    local x2 = oar.randn(2, 2, 8, 8)
    assert_bits(net(x2), traced(x2))
  end)

  it("records a function: closed-over tensors become parameters and constants, several outputs", function()
    oar.seed(3)
    local w = oar.randn(5, 3):requires_grad()
    local shift = oar.Tensor({ 0.5, -1, 2 })
    local function f(a, b)
      local h = (a:matmul(w) + shift) * 2
      return h:tanh() - b, h:sum(2)
    end
    local a, b = oar.randn(4, 5), oar.randn(4, 3)
    local traced = oar.jit.trace(f, { a, b })
    assert.same({ "x1", "x2" }, traced:feed_names())
    local gb = traced:program():global_block()
    assert.is_true(gb:var("param_1").persistable)
    assert.is_true(gb:var("const_1").persistable)
    local y1, y2 = traced(a, b)
    local e1, e2 = f(a, b)
    assert_bits(e1, y1)
    assert_bits(e2, y2)
    -- the parameter's value is the one at trace time
    local a2, b2 = oar.randn(4, 5), oar.randn(4, 3)
    local z1 = traced(a2, b2)
    assert_bits((f(a2, b2)), z1)
  end)

  it("freezes Lua control flow at the branch the example took", function()
    local function f(x)
      if x:sum() > 0 then return x * 2 end
      return x * -1
    end
    local traced = oar.jit.trace(f, { oar.ones(3) })
    local neg = oar.Tensor({ -1, -2, -3 })
    -- eager takes the other branch; the trace still doubles
    assert.same({ -2, -4, -6 }, traced(neg):totable())
    assert.same({ 1, 2, 3 }, f(neg):totable())
  end)

  it("refuses a call with other shapes, dtypes or counts, saying what it takes", function()
    local traced = oar.jit.trace(mlp(), { oar.randn(4, 6) })
    local ok, err = pcall(traced, oar.randn(5, 6))
    assert.is_false(ok)
    assert.matches("input 1 has shape %[5, 6%], the traced program takes %[4, 6%]", err)
    ok, err = pcall(traced, oar.randn(4, 6):double())
    assert.is_false(ok)
    assert.matches("input 1 is float64, the traced program takes float32", err)
    ok, err = pcall(traced, oar.randn(4, 6), oar.randn(4, 6))
    assert.is_false(ok)
    assert.matches("takes 1 inputs, got 2", err)
    ok, err = pcall(traced, { 1, 2 })
    assert.is_false(ok)
    assert.matches("input 1 must be a Tensor", err)
  end)

  it("refuses what it cannot record: in-place writes, non-tensor results, bad arguments", function()
    local ok, err = pcall(oar.jit.trace, function(x) local y = x * 2; y:fill(1); return y end, { oar.ones(2) })
    assert.is_false(ok)
    assert.matches("in%-place write into a traced tensor", err)
    ok, err = pcall(oar.jit.trace, function(x) return x:sum() end, { oar.ones(2) })
    assert.is_false(ok)
    assert.matches("result 1 is a number", err)
    ok, err = pcall(oar.jit.trace, 42, { oar.ones(2) })
    assert.is_false(ok)
    assert.matches("expected a module or a function", err)
    ok, err = pcall(oar.jit.trace, function(x) return x end, {})
    assert.is_false(ok)
    assert.matches("example input", err)
  end)

  describe("save_inference_model", function()
    local dir
    before_each(function() dir = F.tmpdir() end)
    after_each(function() F.rmtree(dir) end)

    for _, case in ipairs({ { "an MLP", mlp, { 4, 6 } }, { "a conv net", convnet, { 2, 2, 8, 8 } } }) do
      it("writes " .. case[1] .. " that load_inference_model runs to the eager outputs", function()
        local model = case[2]()
        local x = oar.randn(case[3])
        local traced = oar.jit.trace(model, { x })
        traced:save_inference_model(dir)
        local exe, scope = oar.Executor(), oar.Scope()
        local prog, feeds, fetches = oar.io.load_inference_model(dir, exe, { scope = scope })
        assert.same({ "x1" }, feeds)
        local x2 = oar.randn(case[3])
        local got = exe:run(prog, { feed = { x1 = x2 }, fetch_list = fetches, scope = scope })[1]
        assert_bits(model(x2), got)
      end)
    end

    it("writes a model the C predictor runs to the eager outputs", function()
      local code, out = run("make -C examples/c_predict")
      assert.equal(0, code, out)
      local net = convnet()
      local x = oar.randn(2, 2, 8, 8)
      local traced = oar.jit.trace(net, { x })
      traced:save_inference_model(dir, { params_filename = "__params__" })
      local x2 = oar.randn(2, 2, 8, 8)
      write_tensor(dir .. "/x1.tensor", x2)
      code, out = run("examples/c_predict/predict --model " .. sh_quote(dir .. "/__model__") .. " --params " ..
        sh_quote(dir .. "/__params__") .. " --input " .. sh_quote("x1=" .. dir .. "/x1.tensor"))
      assert.equal(0, code, out)
      local head, line = out:match("(output 0 [^\n]*)\n([^\n]*)")
      assert.truthy(head, out)
      assert.matches("shape %[2, 5%]", head)
      local want = net(x2)
      local w = want:data()
      local k = 0
      for v in line:gmatch("%S+") do
        -- %.9g prints a float32 exactly
        assert.equal(w[k], ffi.new("float[1]", tonumber(v))[0], "value " .. k)
        k = k + 1
      end
      assert.equal(want:numel(), k)
    end)
  end)
end)
