-- average_accumulates and dgc_clip_by_norm (src/ops/train_extras.ops), a
-- port of Fluid's OpTests (test_average_accumulates_op.py,
-- test_dgc_clip_by_norm_op.py): the expected values computed here.
local T = require("spec.helpers.op_test")

local seed = 3
local function rnd()
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed / 2147483648 - 0.5
end
local function vals(n)
  local t = {}
  for i = 1, n do t[i] = rnd() end
  return t
end
local function i64(v) return T.tensor({ v }, { dtype = "int64" }) end

-- Fluid's rule, in Lua
local function reference(p, s1, s2, s3, nacc, nold, nupd, win, maxw, minw)
  nupd, nacc = nupd + 1, nacc + 1
  local o1, o2, o3 = {}, {}, {}
  local move = nupd % 16384 == 0
  local full = nacc >= minw and nacc >= math.min(maxw, nupd * win)
  for i = 1, #p do
    o1[i], o2[i], o3[i] = s1[i] + p[i], s2[i], s3[i]
    if move then o2[i], o1[i] = s2[i] + s1[i], 0 end
    if full then o3[i], o1[i], o2[i] = s1[i] + s2[i], 0, 0 end
  end
  if full then nold, nacc = nacc, 0 end
  return o1, o2, o3, nacc, nold, nupd
end

local function case(nacc, nold, nupd, attrs)
  local shape = { 3, 4 }
  local p, s1, s2, s3 = vals(12), vals(12), vals(12), vals(12)
  local o1, o2, o3, na, no, nu = reference(p, s1, s2, s3, nacc, nold, nupd, attrs.average_window,
    attrs.max_average_window, attrs.min_average_window)
  T.check_output{ type = "average_accumulates",
    inputs = { param = T.tensor(p, { shape = shape }), in_sum_1 = T.tensor(s1, { shape = shape }),
               in_sum_2 = T.tensor(s2, { shape = shape }), in_sum_3 = T.tensor(s3, { shape = shape }),
               in_num_accumulates = i64(nacc), in_old_num_accumulates = i64(nold), in_num_updates = i64(nupd) },
    attrs = attrs,
    expect = { out_sum_1 = { shape = shape, data = o1 }, out_sum_2 = { shape = shape, data = o2 },
               out_sum_3 = { shape = shape, data = o3 }, out_num_accumulates = { shape = { 1 }, data = { na } },
               out_old_num_accumulates = { shape = { 1 }, data = { no } },
               out_num_updates = { shape = { 1 }, data = { nu } } } }
  return na, no
end

describe("average_accumulates", function()
  it("accumulates param into sum_1 inside the window (Fluid's OpTest)", function()
    local na, no = case(2, 1, 5, { average_window = 0.5, max_average_window = 10000, min_average_window = 10000 })
    assert.are.equal(3, na)
    assert.are.equal(1, no)
  end)
  it("closes the window: sum_3 = sum_1 + sum_2 and the counters move", function()
    local na, no = case(4, 2, 9, { average_window = 0.5, max_average_window = 100, min_average_window = 3 })
    assert.are.equal(0, na)
    assert.are.equal(5, no)
  end)
  it("moves sum_1 into sum_2 every 16384 updates", function()
    case(7, 0, 16383, { average_window = 1, max_average_window = 1000000, min_average_window = 100000 })
  end)
end)

describe("dgc_clip_by_norm", function()
  local x = vals(12)
  local function clipped(max_norm)
    local sq = 0
    for _, v in ipairs(x) do sq = sq + v * v end
    local norm, out = math.sqrt(sq), {}
    for i, v in ipairs(x) do out[i] = norm > max_norm and v * max_norm / norm or v end
    return out
  end
  local function run(step, rampup)
    return T.check_output{ type = "dgc_clip_by_norm",
      inputs = { X = T.tensor(x, { shape = { 3, 4 } }), current_step = T.tensor({ step }) },
      attrs = { max_norm = 0.5, rampup_begin_step = rampup },
      expect = { Out = { shape = { 3, 4 }, data = (rampup >= 0 and step >= rampup) and clipped(0.5) or x } } }
  end
  it("clips by norm once current_step reaches rampup_begin_step", function()
    run(5, 3)
    run(3, 3)
  end)
  it("passes X through before rampup_begin_step and when it is negative", function()
    run(2, 3)
    run(100, -1)
  end)
  it("actually clips in the case it should (the norm is above max_norm)", function()
    local c = clipped(0.5)
    assert.is_true(math.abs(c[1] - x[1]) > 1e-6)
  end)
end)
