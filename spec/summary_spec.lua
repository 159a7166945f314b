-- oar.summary: parameters grouped by layer, with numbers worked out by hand
-- for a small model.
local oar = require("oar")
local layers = oar.layers

-- x[4] -> fc 3 -> batch_norm -> fc 2 (weight named "head", no bias)
local function model()
  local main, startup = oar.Program(), oar.Program()
  oar.unique_name.guard(nil, function()
    oar.program_guard(main, startup, function()
      local x = layers.data{ name = "x", shape = { 4 } }
      local y = layers.data{ name = "y", shape = { 1 }, dtype = "int64" }
      local h = layers.fc{ input = x, size = 3 }
      h = layers.batch_norm{ input = h }
      local p = layers.fc{ input = h, size = 2, act = "softmax", bias_attr = false,
                           param_attr = oar.ParamAttr{ name = "head" } }
      oar.optimizer.SGD{ learning_rate = 0.1 }:minimize(layers.mean(layers.cross_entropy{ input = p, label = y }))
    end)
  end)
  return main, startup
end

describe("oar.summary", function()
  it("counts every parameter's elements and bytes, grouped by layer in the order of use", function()
    local main = model()
    local s = require("oar.summary").collect(main)
    local got = {}
    for _, g in ipairs(s.layers) do
      local ps = {}
      for _, p in ipairs(g.params) do
        ps[#ps + 1] = { p.name, table.concat(p.shape, "x"), p.elements, p.bytes, p.trainable }
      end
      got[#got + 1] = { g.name, g.op, g.elements, g.bytes, ps }
    end
    assert.are.same({
      { "fc_0", "mul", 15, 60, { { "fc_0.w_0", "4x3", 12, 48, true }, { "fc_0.b_0", "3", 3, 12, true } } },
      -- batch_norm reads Bias, Mean, Scale, Variance at once: by name then
      { "batch_norm_0", "batch_norm", 12, 48, {
          { "batch_norm_0.b_0", "3", 3, 12, true }, { "batch_norm_0.w_0", "3", 3, 12, true },
          { "batch_norm_0.w_1", "3", 3, 12, false }, { "batch_norm_0.w_2", "3", 3, 12, false } } },
      { "head", "mul", 6, 24, { { "head", "3x2", 6, 24, true } } },
    }, got)
    assert.are.equal(7, s.parameters)
    assert.are.equal(5, s.trainable)
    assert.are.equal(33, s.elements)          -- 12 + 3 + 4 * 3 + 6
    assert.are.equal(27, s.trainable_elements)
    assert.are.equal(132, s.bytes)            -- float32: 4 bytes each
  end)

  it("prints the table and the totals", function()
    local main = model()
    local text = oar.summary(main)
    local lines = {}
    for l in (text .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
    assert.are.same({
      "Layer (op)                 Parameter           Shape   dtype    Elements  Bytes",
      "-------------------------------------------------------------------------------",
      "fc_0 (mul)                 fc_0.w_0            [4, 3]  float32        12     48",
      "                           fc_0.b_0            [3]     float32         3     12",
      "batch_norm_0 (batch_norm)  batch_norm_0.b_0    [3]     float32         3     12",
      "                           batch_norm_0.w_0    [3]     float32         3     12",
      "                           batch_norm_0.w_1 *  [3]     float32         3     12",
      "                           batch_norm_0.w_2 *  [3]     float32         3     12",
      "head (mul)                 head                [3, 2]  float32         6     24",
      "-------------------------------------------------------------------------------",
      "Total: 7 parameters (5 trainable), 33 elements (27 trainable), 132 bytes (132 bytes)",
      "* not trained by the optimizer (trainable = false)",
    }, lines)
  end)

  it("groups a startup program's parameters by name prefix (no op reads them there)", function()
    local _, startup = model()
    local s = require("oar.summary").collect(startup)
    local names = {}
    for _, g in ipairs(s.layers) do names[#names + 1] = g.name .. ":" .. #g.params end
    assert.are.same({ "batch_norm_0:4", "fc_0:2", "head:1" }, names)
    assert.are.equal(33, s.elements)
  end)

  it("writes big numbers with thousands separators and sizes in KiB/MiB", function()
    local S = require("oar.summary")
    assert.are.equal("2,143,272", S.thousands(2143272))
    assert.are.equal("999", S.thousands(999))
    assert.are.equal("2.04 MiB", S.human_bytes(2143272))
    assert.are.equal("1.50 KiB", S.human_bytes(1536))
  end)

  it("refuses what is not a program", function()
    local ok, err = pcall(oar.summary, "main")
    assert.is_false(ok)
    assert.truthy(err:find("oar.summary: expects a Program", 1, true))
  end)
end)
