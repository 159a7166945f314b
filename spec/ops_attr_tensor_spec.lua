-- Tensor inputs that override attributes (Fluid 1.8): scale.ScaleTensor,
-- clip.Min/Max, concat.AxisTensor, split.AxisTensor/SectionsTensorList,
-- unsqueeze2.AxesTensor/AxesTensorList, fill_constant.ShapeTensor/
-- ShapeTensorList/ValueTensor, and fill_constant's LONGS shape. The cases
-- follow Fluid's test_scale_op / test_clip_op / test_concat_op /
-- test_split_op / test_unsqueeze2_op / test_fill_constant_op.
local ffi = require("ffi")
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")

local function f32(v) return tonumber(ffi.new("float", v)) end
local function one(v, dtype) return T.tensor({ v }, { shape = { 1 }, dtype = dtype or "float32" }) end
local function ints(vals, dtype) return T.tensor(vals, { shape = { #vals }, dtype = dtype or "int32" }) end
local function int_list(vals)
  local l = {}
  for i, v in ipairs(vals) do l[i] = one(v, "int32") end
  return l
end
local numel = require("spec.helpers.index").numel

describe("scale.ScaleTensor", function()
  it("replaces attr scale (test_scale_op: scale -2.3 as a tensor)", function()
    local x = R.uniform(100, 3, -1, 1)
    local s = f32(-2.3)
    local want = {}
    for i, v in ipairs(x) do want[i] = s * v + 0.5 end
    T.check_output{ type = "scale", attrs = { scale = 7, bias = 0.5 },
      inputs = { X = T.tensor(x, { shape = { 10, 10 } }), ScaleTensor = one(-2.3) },
      expect = { Out = { shape = { 10, 10 }, data = want } }, atol = 1e-12 }
    T.check_grad{ type = "scale", attrs = { scale = 7 },
      inputs = { X = T.tensor(R.uniform(12, 4), { shape = { 3, 4 } }), ScaleTensor = one(-2.3) },
      wrt = { "X" }, no_grad = { "ScaleTensor" } }
  end)
end)

describe("clip.Min / clip.Max", function()
  it("replace attrs min/max (test_clip_op with tensor bounds)", function()
    local shape = { 4, 8, 16 }
    local x = R.uniform(numel(shape), 5, -1, 1)
    for i, v in ipairs(x) do
      if math.abs(v - f32(0.1)) < 0.01 or math.abs(v - f32(0.7)) < 0.01 then x[i] = v + 0.03 end
    end
    local lo, hi = f32(0.1), f32(0.7)
    local want = {}
    for i, v in ipairs(x) do want[i] = math.min(math.max(v, lo), hi) end
    T.check_output{ type = "clip", attrs = { min = -5, max = 5 },
      inputs = { X = T.tensor(x, { shape = shape }), Min = one(0.1), Max = one(0.7) },
      expect = { Out = { shape = shape, data = want } }, atol = 1e-12 }
    -- only Max given: attr min still applies
    local want2 = {}
    for i, v in ipairs(x) do want2[i] = math.min(math.max(v, f32(-0.5)), hi) end
    T.check_output{ type = "clip", attrs = { min = -0.5, max = 5 },
      inputs = { X = T.tensor(x, { shape = shape }), Max = one(0.7) },
      expect = { Out = { shape = shape, data = want2 } }, atol = 1e-12 }
    T.check_grad{ type = "clip", attrs = { min = -5, max = 5 },
      inputs = { X = T.tensor({ -0.8, 0.3, 0.5, 0.9, 0.2, -0.2 }, { shape = { 2, 3 } }), Min = one(0.1), Max = one(0.7) },
      wrt = { "X" }, no_grad = { "Min", "Max" } }
  end)

  it("refuses Min above Max at run time", function()
    local ok, err = pcall(T.run, { type = "clip", attrs = { min = 0, max = 1 },
      inputs = { X = T.tensor({ 1, 2 }, { shape = { 2 } }), Min = one(3), Max = one(1) } })
    assert.is_false(ok)
    assert.matches("min (3) must not exceed max (1)", err, 1, true)
  end)
end)

describe("concat.AxisTensor / split.AxisTensor", function()
  it("concat takes its axis from AxisTensor", function()
    local a, b = R.uniform(6, 1), R.uniform(4, 2)
    local res = T.run{ type = "concat", attrs = { axis = 0 },
      inputs = { X = { T.tensor(a, { shape = { 2, 3 } }), T.tensor(b, { shape = { 2, 2 } }) }, AxisTensor = one(1, "int32") } }
    local o = res.Out[1]
    assert.are.same({ 2, 5 }, o.shape)
    assert.are.same({ a[1], a[2], a[3], b[1], b[2], a[4], a[5], a[6], b[3], b[4] }, o.data)
    T.check_grad{ type = "concat", attrs = { axis = 0 },
      inputs = { X = { T.tensor(a, { shape = { 2, 3 } }), T.tensor(b, { shape = { 2, 2 } }) }, AxisTensor = one(-1, "int64") },
      wrt = { "X" }, no_grad = { "AxisTensor" } }
  end)

  it("split takes its axis from AxisTensor and its sections from SectionsTensorList", function()
    local x = R.uniform(4 * 5 * 6, 3)
    local res = T.run{ type = "split", attrs = { axis = 0, sections = { 1, 1, 1 } }, outputs = { Out = 3 },
      inputs = { X = T.tensor(x, { shape = { 4, 5, 6 } }), AxisTensor = one(2, "int32"), SectionsTensorList = int_list({ 2, 1, 3 }) } }
    assert.are.same({ 4, 5, 2 }, res.Out[1].shape)
    assert.are.same({ 4, 5, 1 }, res.Out[2].shape)
    assert.are.same({ 4, 5, 3 }, res.Out[3].shape)
    for r = 0, 19 do
      assert.are.equal(x[r * 6 + 3], res.Out[2].data[r + 1])
      assert.are.equal(x[r * 6 + 6], res.Out[3].data[r * 3 + 3])
    end
    T.check_grad{ type = "split", attrs = { axis = 0, num = 2 }, outputs = { Out = 2 },
      inputs = { X = T.tensor(R.uniform(12, 6), { shape = { 3, 4 } }), AxisTensor = one(1, "int32") },
      wrt = { "X" }, of = { "Out" }, no_grad = { "AxisTensor" } }
  end)
end)

describe("unsqueeze2.AxesTensor / AxesTensorList", function()
  it("inserts the axes the tensors give (test_unsqueeze2_op)", function()
    local x = R.uniform(60, 8)
    for _, inputs in ipairs({ { AxesTensor = ints({ 0, -2 }) }, { AxesTensorList = int_list({ 0, -2 }) } }) do
      inputs.X = T.tensor(x, { shape = { 3, 4, 5 } })
      local res = T.check_output{ type = "unsqueeze2", attrs = { axes = { 1 } }, inputs = inputs,
        outputs = { Out = 1, XShape = 1 }, expect = { Out = { shape = { 1, 3, 4, 1, 5 }, data = x } }, atol = 0 }
      assert.are.same({ 0, 3, 4, 5 }, res.XShape[1].shape)
    end
  end)
end)

describe("fill_constant tensors and LONGS shape", function()
  it("takes its shape from ShapeTensor or ShapeTensorList and its value from ValueTensor", function()
    T.check_output{ type = "fill_constant", attrs = { shape = { 1 }, value = 0, dtype = 5 },
      inputs = { ShapeTensor = ints({ 2, 3 }, "int64") },
      expect = { Out = { shape = { 2, 3 }, data = { 0, 0, 0, 0, 0, 0 } } }, atol = 0 }
    T.check_output{ type = "fill_constant", attrs = { shape = { 1 }, value = 1, dtype = 6 },
      inputs = { ShapeTensorList = int_list({ 3, 1 }), ValueTensor = one(3.5) },
      expect = { Out = { shape = { 3, 1 }, data = { 3.5, 3.5, 3.5 } } }, atol = 0 }
    -- int64 ValueTensor keeps every digit
    local res = T.run{ type = "fill_constant", attrs = { shape = { 2 }, dtype = 3 },
      inputs = { ValueTensor = T.tensor({ 2 ^ 53 + 2 }, { shape = { 1 }, dtype = "int64" }) } }
    assert.are.same({ 2 ^ 53 + 2, 2 ^ 53 + 2 }, res.Out[1].data)
  end)

  it("declares shape as LONGS (Paddle's type) and takes INTS given at insertion", function()
    local C = require("oar.lib").C
    assert.are.equal(11, C.oar_op_attr_type("fill_constant", "shape"))
    T.check_output{ type = "fill_constant", attrs = { shape = { 2, 2 }, value = 1.5, dtype = 6 },
      expect = { Out = { shape = { 2, 2 }, data = { 1.5, 1.5, 1.5, 1.5 } } }, atol = 0 }
  end)
end)
