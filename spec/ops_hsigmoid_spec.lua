-- hierarchical_sigmoid and its grad (Fluid 1.8's hsigmoid): values against
-- plain Lua on the default complete binary tree and on custom trees
-- (Fluid's test_hsigmoid_op.py cases), gradients by float64 finite
-- differences, the sparse W@GRAD against the dense one through sgd, and
-- errors.
local ffi = require("ffi")
local lib = require("oar.lib")
local C = lib.load_op_api()
local T = require("spec.helpers.op_test")
local R = require("spec.helpers.random")
local expect_error = require("spec.helpers.expect_error")

-- the default tree's path for a label: the nodes from the root and the
-- branch bits, built from the heap numbering of a complete binary tree whose
-- leaves are num_classes .. 2 num_classes - 1 (node v's parent is v // 2;
-- inner node v is W's row v - 1)
local function default_path(label, k)
  local nodes, bits = {}, {}
  local v = label + k
  while v > 1 do
    table.insert(nodes, 1, math.floor(v / 2) - 1)
    table.insert(bits, 1, v % 2)
    v = math.floor(v / 2)
  end
  -- Fluid orders the steps from the leaf's parent up: step j is the j-th
  -- ancestor; reverse to that order
  local rn, rb = {}, {}
  for i = #nodes, 1, -1 do rn[#rn + 1] = nodes[i]; rb[#rb + 1] = bits[i] end
  return rn, rb
end

local function softplus(z) return math.log(1 + math.exp(z)) end

-- Out[i] = sum over the path of softplus(z) - bit * z, plus log 2 for each
-- of the L columns past the path; PreOut the softplus of each column
local function ref(c)
  local out, pre = {}, {}
  for i = 0, c.n - 1 do
    local nodes, bits = c.path(i)
    local s = 0
    for j = 1, c.width do
      local z = 0
      if j <= #nodes then
        local node = nodes[j]
        z = c.b and c.b[node + 1] or 0
        for e = 0, c.d - 1 do z = z + c.w[node * c.d + e + 1] * c.x[i * c.d + e + 1] end
        z = math.max(-40, math.min(40, z))
        s = s - bits[j] * z
      end
      s = s + softplus(z)
      pre[#pre + 1] = softplus(z)
    end
    out[i + 1] = s
  end
  return out, pre
end

local function default_case(n, d, k, labels, seed)
  local c = { n = n, d = d, k = k, labels = labels, nodes = k - 1 }
  c.width = 0
  while bit.rshift(k - 1, c.width) > 0 do c.width = c.width + 1 end
  c.x = R.symmetric(n * d, seed)
  c.w = R.symmetric(c.nodes * d, seed + 1)
  c.b = R.symmetric(c.nodes, seed + 2, 0.5)
  c.path = function(i) return default_path(labels[i + 1], k) end
  return c
end

local function inputs(c, dtype)
  return {
    X = T.tensor(c.x, { shape = { c.n, c.d }, dtype = dtype }),
    W = T.tensor(c.w, { shape = { c.nodes, c.d }, dtype = dtype }),
    Label = T.tensor(c.labels, { shape = { c.n, 1 }, dtype = "int64" }),
    Bias = c.b and T.tensor(c.b, { shape = { c.nodes, 1 }, dtype = dtype }),
    PathTable = c.table and T.tensor(c.table, { shape = { c.n, c.width }, dtype = "int64" }),
    PathCode = c.code and T.tensor(c.code, { shape = { c.n, c.width }, dtype = "int64" }),
  }
end

-- Fluid's test_hsigmoid_op custom tree (5 columns, -1 past each path)
local function custom_case(seed)
  local c = { n = 4, d = 8, k = 6, nodes = 6, width = 5, labels = { 1, 4, 5, 2 } }
  c.table = { 0, 2, -1, -1, -1, 0, 1, 3, -1, -1, 0, 1, 4, -1, -1, 0, 2, -1, -1, -1 }
  c.code = { 0, 1, -1, -1, -1, 1, 1, 1, -1, -1, 1, 0, 0, -1, -1, 0, 1, -1, -1, -1 }
  c.x = R.symmetric(c.n * c.d, seed)
  c.w = R.symmetric(c.nodes * c.d, seed + 1)
  c.b = R.symmetric(c.nodes, seed + 2, 0.5)
  c.path = function(i)
    local nodes, bits = {}, {}
    for j = 1, c.width do
      local v = c.table[i * c.width + j]
      if v < 0 then break end
      nodes[j], bits[j] = v, c.code[i * c.width + j]
    end
    return nodes, bits
  end
  return c
end

describe("hierarchical_sigmoid forward", function()
  it("the default tree's paths are Fluid's SimpleCode", function()
    -- 6 classes: label 0 is leaf 6 (binary 110): steps (node 2, bit 0), (node 0, bit 1)
    local nodes, bits = default_path(0, 6)
    assert.are.same({ 2, 0 }, nodes)
    assert.are.same({ 0, 1 }, bits)
    nodes, bits = default_path(5, 6)   -- leaf 11 = 1011: (4, 1), (1, 1), (0, 0)
    assert.are.same({ 4, 1, 0 }, nodes)
    assert.are.same({ 1, 1, 0 }, bits)
  end)

  for _, dtype in ipairs({ "float64", "float32" }) do
    it("default tree, 6 classes (test_hsigmoid_op), " .. dtype, function()
      local c = default_case(4, 8, 6, { 0, 1, 4, 5 }, 3)
      local out, pre = ref(c)
      local tol = dtype == "float32" and 1e-5 or 1e-12
      T.check_output{ type = "hierarchical_sigmoid", inputs = inputs(c, dtype), dtype = dtype,
        attrs = { num_classes = 6 }, atol = tol, rtol = tol,
        expect = { Out = { shape = { 4, 1 }, data = out }, PreOut = { shape = { 4, 3 }, data = pre } } }
    end)
  end

  it("default tree without bias, 2 classes (one node) and 9 classes (paths of 3 and 4 steps)", function()
    for _, k in ipairs({ 2, 9 }) do
      local labels = {}
      for i = 1, 7 do labels[i] = (i * 5) % k end
      local c = default_case(7, 3, k, labels, 13 + k)
      c.b = nil
      T.check_output{ type = "hierarchical_sigmoid", inputs = inputs(c, "float64"), attrs = { num_classes = k },
        expect = { Out = { shape = { 7, 1 }, data = (ref(c)) } } }
    end
  end)

  it("custom tree from PathTable and PathCode (test_hsigmoid_op's)", function()
    local c = custom_case(23)
    local out, pre = ref(c)
    T.check_output{ type = "hierarchical_sigmoid", inputs = inputs(c, "float64"), attrs = { num_classes = 6 },
      expect = { Out = { shape = { 4, 1 }, data = out }, PreOut = { shape = { 4, 5 }, data = pre } } }
  end)

  it("clips the node logits to [-40, 40]", function()
    local c = default_case(2, 1, 3, { 1, 2 }, 5)
    c.x, c.w, c.b = { 30, -30 }, { 2, 3 }, nil
    local out = ref(c)
    -- logits of 90 and 60 (row 0), -90 and -60 (row 1) clipped to +-40:
    -- 40 + 40 and 40 + 0 (unclipped: 150 and 90)
    assert.is_true(math.abs(out[1] - 80) < 1e-6 and math.abs(out[2] - 40) < 1e-6)
    T.check_output{ type = "hierarchical_sigmoid", inputs = inputs(c, "float64"), attrs = { num_classes = 3 },
      expect = { Out = { shape = { 2, 1 }, data = out } } }
  end)
end)

describe("hierarchical_sigmoid gradients (float64 finite differences)", function()
  it("X, W and Bias on the default tree", function()
    local c = default_case(5, 3, 7, { 0, 6, 3, 2, 5 }, 31)
    T.check_grad{ type = "hierarchical_sigmoid", inputs = inputs(c, "float64"), attrs = { num_classes = 7 },
      wrt = { "X", "W", "Bias" } }
  end)
  it("X, W and Bias on a custom tree", function()
    local c = custom_case(41)
    T.check_grad{ type = "hierarchical_sigmoid", inputs = inputs(c, "float64"), attrs = { num_classes = 6 },
      wrt = { "X", "W", "Bias" } }
  end)
end)

-- hierarchical_sigmoid -> mean -> backward -> sgd on W, dense or sparse
local function train_step(c, is_sparse, lr)
  return (require("spec.helpers.sgd_step")({ { "x", { c.n, c.d }, 6 }, { "y", { c.n, 1 }, 3 },
    { "w", { c.nodes, c.d }, 6, true }, { "pt", { c.n, c.width }, 3 }, { "pc", { c.n, c.width }, 3 }, { "lr", { 1 }, 6 } },
    function(block)
      T.append_op(block, "hierarchical_sigmoid", { X = { "x" }, W = { "w" }, Label = { "y" }, PathTable = { "pt" },
        PathCode = { "pc" } }, { Out = { "out" }, PreOut = { "pre" } }, { num_classes = c.k, is_sparse = is_sparse })
      return "out"
    end, is_sparse, { x = T.tensor(c.x, { shape = { c.n, c.d } }),
    y = T.tensor(c.labels, { shape = { c.n, 1 }, dtype = "int64" }), w = T.tensor(c.w, { shape = { c.nodes, c.d } }),
    pt = T.tensor(c.table, { shape = { c.n, c.width }, dtype = "int64" }),
    pc = T.tensor(c.code, { shape = { c.n, c.width }, dtype = "int64" }),
    lr = T.tensor({ lr }, { shape = { 1 } }) }))
end

describe("hierarchical_sigmoid is_sparse", function()
  it("W@GRAD is a SELECTED_ROWS; one sgd step matches the dense one and leaves node 5 alone", function()
    local c = custom_case(51)
    local dense = train_step(c, false, 0.3)
    local sparse = train_step(c, true, 0.3)
    T.assert_close(sparse, dense, 1e-12, 1e-12, "sparse W")
    for e = 1, c.d do   -- no path visits node 5
      assert.are.equal(c.w[5 * c.d + e], sparse.data[5 * c.d + e])
      assert.are_not.equal(c.w[e], sparse.data[e])
    end
  end)
end)

describe("hierarchical_sigmoid errors", function()
  it("a label out of range names Label", function()
    local c = default_case(2, 2, 4, { 1, 4 }, 61)
    expect_error(function() T.run{ type = "hierarchical_sigmoid", inputs = inputs(c, "float64"),
      attrs = { num_classes = 4 } } end, "hierarchical_sigmoid", "Label", "4")
  end)
  it("a custom path's node beyond W's rows", function()
    local c = custom_case(71)
    c.table[2] = 6
    expect_error(function() T.run{ type = "hierarchical_sigmoid", inputs = inputs(c, "float64"),
      attrs = { num_classes = 6 } } end, "node 6", "W")
  end)
  it("PathTable without PathCode", function()
    local c = custom_case(81)
    c.code = nil
    expect_error(function() T.run{ type = "hierarchical_sigmoid", inputs = inputs(c, "float64"),
      attrs = { num_classes = 6 } } end, "PathCode")
  end)
  it("the default tree needs num_classes - 1 rows of W", function()
    local c = default_case(2, 2, 5, { 1, 3 }, 91)
    expect_error(function() T.run{ type = "hierarchical_sigmoid", inputs = inputs(c, "float64"),
      attrs = { num_classes = 8 } } end, "W", "7 rows")
  end)
end)
