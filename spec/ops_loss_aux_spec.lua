-- center_loss and teacher_student_sigmoid_loss (Fluid 1.8) and their
-- grads: values against plain Lua (Fluid's test_center_loss.py and
-- test_teacher_student_sigmoid_loss_op.py cases), gradients by float64
-- finite differences, and errors.
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")
local expect_error = require("spec.helpers.expect_error")

local function center_case(n, d, k, seed)
  local c = { n = n, d = d, k = k, alpha = 0.1 }
  c.x = R.symmetric(n * d, seed)
  c.centers = R.symmetric(k * d, seed + 1)
  c.labels = {}
  for i = 1, n do c.labels[i] = (i * 3 + seed) % k end
  return c
end

-- the differences, the losses, and the centers after the update
-- (alpha / (1 + count) times the summed differences of each class)
local function center_ref(c, update)
  local diff, loss, out, acc, cnt = {}, {}, {}, {}, {}
  for j = 1, c.k * c.d do out[j], acc[j] = c.centers[j], 0 end
  for k = 0, c.k - 1 do cnt[k] = 1 end
  for i = 0, c.n - 1 do
    local y = c.labels[i + 1]
    local s = 0
    for e = 1, c.d do
      local v = c.x[i * c.d + e] - c.centers[y * c.d + e]
      diff[#diff + 1] = v
      s = s + v * v
      acc[y * c.d + e] = acc[y * c.d + e] + v
    end
    cnt[y] = cnt[y] + 1
    loss[i + 1] = s / 2
  end
  if update then
    for k = 0, c.k - 1 do
      for e = 1, c.d do out[k * c.d + e] = out[k * c.d + e] + c.alpha / cnt[k] * acc[k * c.d + e] end
    end
  end
  return diff, loss, out
end

local function center_inputs(c, dtype, label_dtype)
  return { X = T.tensor(c.x, { shape = { c.n, c.d }, dtype = dtype }),
           Label = T.tensor(c.labels, { shape = { c.n, 1 }, dtype = label_dtype or "int64" }),
           Centers = T.tensor(c.centers, { shape = { c.k, c.d }, dtype = dtype }),
           CenterUpdateRate = T.tensor({ c.alpha }, { shape = { 1 }, dtype = dtype }) }
end

describe("center_loss", function()
  for _, dtype in ipairs({ "float64", "float32" }) do
    for _, update in ipairs({ true, false }) do
      it(("%s, need_update = %s"):format(dtype, tostring(update)), function()
        local c = center_case(10, 4, 3, 5)
        local diff, loss, out = center_ref(c, update)
        local tol = dtype == "float32" and 1e-5 or 1e-12
        T.check_output{ type = "center_loss", inputs = center_inputs(c, dtype), dtype = dtype, atol = tol, rtol = tol,
          attrs = { cluster_num = 3, need_update = update },
          expect = { SampleCenterDiff = { shape = { 10, 4 }, data = diff }, Loss = { shape = { 10, 1 }, data = loss },
                     CentersOut = { shape = { 3, 4 }, data = out } } }
      end)
    end
  end

  it("int32 labels, and a class no row has keeps its center", function()
    local c = center_case(4, 2, 6, 7)
    c.labels = { 0, 2, 2, 5 }
    local _, loss, out = center_ref(c, true)
    for e = 1, 2 do assert.are.equal(c.centers[1 * 2 + e], out[1 * 2 + e]) end
    T.check_output{ type = "center_loss", inputs = center_inputs(c, "float64", "int32"),
      attrs = { cluster_num = 6, need_update = true },
      expect = { Loss = { shape = { 4, 1 }, data = loss }, CentersOut = { shape = { 6, 2 }, data = out } } }
  end)

  it("the gradient of X (float64 finite differences)", function()
    local c = center_case(5, 3, 4, 9)
    T.check_grad{ type = "center_loss", inputs = center_inputs(c, "float64"), attrs = { cluster_num = 4 },
      wrt = { "X" }, of = { "Loss" }, no_grad = { "Centers", "CenterUpdateRate" } }
  end)

  it("errors: a label out of range, Centers' rows against cluster_num", function()
    local c = center_case(3, 2, 3, 11)
    c.labels[2] = 3
    expect_error(function() T.run{ type = "center_loss", inputs = center_inputs(c, "float64"),
      attrs = { cluster_num = 3 } } end, "center_loss", "Label", "3")
    c.labels[2] = 0
    expect_error(function() T.run{ type = "center_loss", inputs = center_inputs(c, "float64"),
      attrs = { cluster_num = 4 } } end, "Centers", "cluster_num")
  end)
end)

-- the teacher-student loss as Fluid defines it, written from its four cases
local function softplus(x) return math.log(1 + math.exp(x)) end
local function tssl_ref(x, l)
  -- l(x, t) = softplus(x) - x t: the logistic loss against target t
  local function ll(t) return softplus(x) - x * t end
  if l < -1 then return ll(0) elseif l < 0 then return ll(1)
  elseif l < 1 then return ll(0) + ll(l) else return ll(1) + ll(l - 1) end
end

describe("teacher_student_sigmoid_loss", function()
  local x = { 0.5, -1.25, 2, -0.3, 1.1, -2.2, 0.05, 3 }
  local lab = { -2, -1, 0.3, 0, 1.7, 1, 0.95, -2 }
  for _, dtype in ipairs({ "float64", "float32" }) do
    it("the four label cases, " .. dtype, function()
      local want = {}
      for i = 1, #x do want[i] = tssl_ref(x[i], lab[i]) end
      local tol = dtype == "float32" and 1e-5 or 1e-12
      T.check_output{ type = "teacher_student_sigmoid_loss", dtype = dtype, atol = tol, rtol = tol,
        inputs = { X = T.tensor(x, { shape = { 8, 1 }, dtype = dtype }),
                   Label = T.tensor(lab, { shape = { 8, 1 }, dtype = dtype }) },
        expect = { Y = { shape = { 8, 1 }, data = want } } }
    end)
  end

  it("the gradient of X (float64 finite differences)", function()
    T.check_grad{ type = "teacher_student_sigmoid_loss", of = { "Y" }, wrt = { "X" }, no_grad = { "Label" },
      inputs = { X = T.tensor(x, { shape = { 8, 1 } }), Label = T.tensor(lab, { shape = { 8, 1 } }) } }
  end)

  it("no gradient outside (soft_max_lower_bound, soft_max_up_bound)", function()
    local g = T.analytic_grads{ type = "teacher_student_sigmoid_loss", of = { "Y" }, wrt = { "X" },
      no_grad = { "Label" }, attrs = { soft_max_up_bound = 1.0, soft_max_lower_bound = -1.0 },
      inputs = { X = T.tensor(x, { shape = { 8, 1 } }), Label = T.tensor(lab, { shape = { 8, 1 } }) } }[1]
    for i = 1, #x do
      local p = 1 / (1 + math.exp(-x[i]))
      local l = lab[i]
      local d = l < -1 and p or l < 0 and p - 1 or 2 * p - l
      local want = (x[i] >= 1 or x[i] <= -1) and 0 or d / #x   -- the loss is mean(Y)
      assert.near(want, g.data[i], 1e-12)
    end
  end)

  it("errors: X must be [N, 1], Label X's dtype", function()
    expect_error(function() T.run{ type = "teacher_student_sigmoid_loss",
      inputs = { X = T.tensor({ 1, 2 }, { shape = { 1, 2 } }), Label = T.tensor({ 0 }, { shape = { 1, 1 } }) } } end,
      "teacher_student_sigmoid_loss", "X", "[N, 1]")
    expect_error(function() T.run{ type = "teacher_student_sigmoid_loss",
      inputs = { X = T.tensor({ 1 }, { shape = { 1, 1 } }), Label = T.tensor({ 0 }, { shape = { 1, 1 }, dtype = "float32" }) } } end,
      "Label", "float32")
  end)
end)
