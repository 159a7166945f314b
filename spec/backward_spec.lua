-- The backward pass (src/backward*.c) through the C API: the grad ops it
-- emits for small programs (types, slot wiring, @GRAD names, op_role and
-- op_role_var), sums for shared grads, @EMPTY@ for no-grad inputs,
-- fill_zeros_like for grads nothing produced, sub-block grads, renames on a
-- second pass, rollback on failure, and gradients that match central finite
-- differences of the forward program.
local ffi = require("ffi")
local lib = require("oar.lib")
local C = lib.C
local T = require("spec.helpers.op_test")
local P = require("spec.helpers.program")
local O = require("spec.helpers.test_ops")

local FP64 = 6
local ROLE_FORWARD, ROLE_BACKWARD, ROLE_OPTIMIZE, ROLE_LOSS = 0, 1, 2, 256
local NOT_FOUND = -2

-- ---- test-only ops -------------------------------------------------------
local define_op, guarded, same_as = O.define_op, O.guarded, O.same_as

local function try(rc) if rc ~= 0 then error("status " .. rc) end end

-- two outputs A and B, both copies of X; its grad reads both output grads
define_op{
  type = "bwtest_split", inputs = { { "X" } }, outputs = { { "A" }, { "B" } },
  infer = same_as({ { "X", "A" }, { "X", "B" } }),
  grad = guarded(function(g)
    local op = C.oar_gc_new_op(g, "bwtest_split_grad")
    if op == nil then return -5 end
    try(C.oar_gc_out_grad(g, op, "A"))
    try(C.oar_gc_out_grad(g, op, "B"))
    try(C.oar_gc_in_grad(g, op, "X"))
    return 0
  end),
}
define_op{
  type = "bwtest_split_grad", inputs = { { "A@GRAD" }, { "B@GRAD" } }, outputs = { { "X@GRAD" } },
  infer = same_as({ { "A@GRAD", "X@GRAD" } }),
}

-- an op running sub-block `sub_block` that reads X and writes Out (outer vars)
define_op{
  type = "bwtest_block", inputs = { { "X", 1 } }, outputs = { { "Out", 1 } },
  attrs = { { "sub_block", 8 } },
  grad = guarded(function(g)
    local idx = C.oar_gc_grad_block(g, C.oar_attr_block(C.oar_gc_fwd(g), "sub_block"))
    if idx < 0 then return idx end
    local op = C.oar_gc_new_op(g, "bwtest_block_grad")
    if op == nil then return -5 end
    try(C.oar_gc_in(g, op, "X"))
    try(C.oar_gc_out(g, op, "Out"))
    try(C.oar_gc_out_grad(g, op, "Out"))
    try(C.oar_gc_in_grad(g, op, "X"))
    try(C.oar_op_desc_set_attr_block(op, "sub_block", idx))
    return 0
  end),
}
define_op{
  type = "bwtest_block_grad", inputs = { { "X", 1 }, { "Out", 1 }, { "Out@GRAD", 1 } },
  outputs = { { "X@GRAD", 1 } }, attrs = { { "sub_block", 8 } },
}

-- its grad maker asks for a grad op nobody registered
define_op{
  type = "bwtest_bad", inputs = { { "X" } }, outputs = { { "Out" } },
  infer = same_as({ { "X", "Out" } }),
  grad = guarded(function(g)
    local op = C.oar_gc_new_op(g, "bwtest_unregistered_grad")
    if op == nil then return -5 end
    try(C.oar_gc_out_grad(g, op, "Out"))
    try(C.oar_gc_in_grad(g, op, "X"))
    return 0
  end),
}

-- ---- building programs ---------------------------------------------------

local new_program = P.new_program

-- a float64 var unless opts.dtype says otherwise
local function var(b, name, shape, opts)
  opts = opts or {}
  return P.new_var(b, name, { dims = shape, dtype = opts.dtype or FP64, persistable = opts.persistable,
                              stop_gradient = opts.stop })
end

-- T.append_op, plus BLOCK attrs (sub_block = idx)
local function op(b, type, ins, outs, attrs)
  local plain, block_attrs = {}, {}
  for k, v in pairs(attrs or {}) do
    if C.oar_op_attr_type(type, k) == 8 then block_attrs[k] = v else plain[k] = v end
  end
  if next(block_attrs) == nil then return T.append_op(b, type, ins, outs, plain) end
  assert(next(plain) == nil, "op(): mix of BLOCK and other attrs is not needed here")
  return P.append_block_op(b, type, ins, outs, block_attrs)
end

local new_block = P.new_block

-- ---- reading programs back -----------------------------------------------

local function slot_map(o, input)
  local n = input and C.oar_op_desc_num_inputs(o) or C.oar_op_desc_num_outputs(o)
  local m = {}
  for k = 0, n - 1 do
    local s = input and C.oar_op_desc_input_slot(o, k) or C.oar_op_desc_output_slot(o, k)
    local cnt = input and C.oar_op_desc_input_count(o, s) or C.oar_op_desc_output_count(o, s)
    local names = {}
    for j = 0, cnt - 1 do
      names[#names + 1] = ffi.string(input and C.oar_op_desc_input_arg(o, s, j) or C.oar_op_desc_output_arg(o, s, j))
    end
    m[ffi.string(s)] = names
  end
  return m
end

local function strings_attr(o, name)
  local data, n = ffi.new("const void *[1]"), ffi.new("int[1]")
  if C.oar_op_desc_attr_type(o, name) < 0 then return nil end
  lib.check(C.oar_op_desc_get_attr_list(o, name, data, n))
  local out = {}
  for i = 0, n[0] - 1 do out[#out + 1] = ffi.string(C.oar_op_desc_get_attr_strings_at(o, name, i)) end
  return out
end

local function describe_op(o)
  local role = ffi.new("int32_t[1]")
  local has_role = C.oar_op_desc_attr_type(o, "op_role") >= 0
  if has_role then lib.check(C.oar_op_desc_get_attr_int(o, "op_role", role)) end
  return { type = ffi.string(C.oar_op_desc_type(o)), ins = slot_map(o, true), outs = slot_map(o, false),
           role = has_role and role[0] or nil, role_var = strings_attr(o, "op_role_var"), desc = o }
end

local function ops_of(b, from)
  local out = {}
  for i = from or 0, C.oar_block_num_ops(b) - 1 do out[#out + 1] = describe_op(C.oar_block_op_at(b, i)) end
  return out
end

local function types(list)
  local t = {}
  for i, o in ipairs(list) do t[i] = o.type end
  return t
end

local function var_info(b, name)
  local v = C.oar_block_find_var(b, name)
  if v == nil then return nil end
  local shape = {}
  local d = C.oar_var_desc_dims(v)
  for i = 0, C.oar_var_desc_ndim(v) - 1 do shape[#shape + 1] = tonumber(d[i]) end
  return { shape = shape, dtype = C.oar_var_desc_dtype(v), persistable = C.oar_var_desc_persistable(v),
           lod_level = C.oar_var_desc_lod_level(v) }
end

-- ---- running the passes --------------------------------------------------

local function append_backward(p, loss, opts)
  opts = opts or {}
  local out, n = ffi.new("char **[1]"), ffi.new("int[1]")
  local params = opts.params
  local no_grad = opts.no_grad or {}
  local rc = C.oar_backward_append(p, loss, params and lib.cstrings(params) or nil, params and #params or 0,
                                   lib.cstrings(no_grad), #no_grad, out, n)
  if rc ~= 0 then return nil, lib.last_error(), rc end
  local res = {}
  for i = 0, n[0] - 1 do res[#res + 1] = { ffi.string(out[0][2 * i]), ffi.string(out[0][2 * i + 1]) } end
  C.oar_strings_free(out[0], 2 * n[0])
  return res
end

local function gradients(p, targets, inputs, opts)
  opts = opts or {}
  local out = ffi.new("char **[1]")
  local no_grad = opts.no_grad or {}
  local tg = nil
  if opts.target_grads then
    tg = ffi.new("const char *[?]", #targets)
    for i = 1, #targets do tg[i - 1] = opts.target_grads[i] or nil end
  end
  local rc = C.oar_backward_gradients(p, lib.cstrings(targets), #targets, tg, lib.cstrings(inputs), #inputs,
                                      lib.cstrings(no_grad), #no_grad, out)
  if rc ~= 0 then return nil, lib.last_error(), rc end
  local res = {}
  for i = 1, #inputs do
    local s = out[0][i - 1]
    res[i] = s ~= nil and ffi.string(s) or false
  end
  C.oar_strings_free(out[0], #inputs)
  return res
end

-- ---- numbers ---------------------------------------------------------------

-- a small deterministic generator, values in [-1, 1)
local function filler(seed)
  local s = seed
  return function()
    s = (s * 1103515245 + 12345) % 2147483648
    return s / 1073741824 - 1
  end
end

local function rand_tensor(shape, rnd)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  local data = {}
  for i = 1, n do data[i] = rnd() end
  return T.tensor(data, { shape = shape })
end

-- Central differences of `loss` in `fprog` for every element of feed `name`,
-- compared with the fetched analytic gradient.
local function check_numeric(fprog, feeds, loss, name, analytic)
  local v = feeds[name]
  assert(#analytic.data == #v.data, name .. ": gradient has " .. #analytic.data .. " values, input " .. #v.data)
  local delta = 1e-6
  for i = 1, #v.data do
    local saved = v.data[i]
    v.data[i] = saved + delta
    local lp = T.run_program(fprog, feeds, { loss }, "float64")[1].data[1]
    v.data[i] = saved - delta
    local lm = T.run_program(fprog, feeds, { loss }, "float64")[1].data[1]
    v.data[i] = saved
    local num = (lp - lm) / (2 * delta)
    local a = analytic.data[i]
    local denom = math.max(math.abs(num), 1e-3)
    if math.abs(a - num) / denom > 1e-5 then
      error(("%s[%d]: analytic %.10g, numeric %.10g"):format(name, i, a, num), 2)
    end
  end
end

-- ---- specs -------------------------------------------------------------------

describe("backward pass", function()
  -- grad makers of the test ops are Lua callbacks: keep traces from calling into them
  setup(function() jit.off() end)
  teardown(function() jit.on() end)

  -- x[3,4] (data) -> mul W1[4,5] -> + b1 -> relu -> mul W2[5,2] -> mean
  local function mlp(b)
    var(b, "x", { 3, 4 }, { stop = true })
    var(b, "W1", { 4, 5 }, { persistable = true })
    var(b, "b1", { 5 }, { persistable = true })
    var(b, "W2", { 5, 2 }, { persistable = true })
    op(b, "mul", { X = { "x" }, Y = { "W1" } }, { Out = { "h" } })
    op(b, "elementwise_add", { X = { "h" }, Y = { "b1" } }, { Out = { "a" } })
    op(b, "relu", { X = { "a" } }, { Out = { "r" } })
    op(b, "mul", { X = { "r" }, Y = { "W2" } }, { Out = { "o" } })
    op(b, "mean", { X = { "o" } }, { Out = { "loss" } })
  end

  it("emits the MLP's grad ops in reverse with Fluid's names and wiring", function()
    local p = new_program()
    local b = C.oar_program_block(p, 0)
    mlp(b)
    local pairs_ = assert(append_backward(p, "loss"))
    assert.same({ { "W1", "W1@GRAD" }, { "b1", "b1@GRAD" }, { "W2", "W2@GRAD" } }, pairs_)
    local ops = ops_of(b)
    assert.same({ "mul", "elementwise_add", "relu", "mul", "mean",
                  "fill_constant", "mean_grad", "mul_grad", "relu_grad", "elementwise_add_grad", "mul_grad" },
                types(ops))
    -- the loss op is Forward|Loss, the others stay Forward
    assert.equal(ROLE_FORWARD + ROLE_LOSS, ops[5].role)
    for i = 1, 4 do assert.equal(ROLE_FORWARD, ops[i].role or 0) end
    -- the seed: ones of the loss's shape and dtype, Backward|Loss
    local fill = ops[6]
    assert.same({ Out = { "loss@GRAD" } }, fill.outs)
    assert.equal(ROLE_BACKWARD + ROLE_LOSS, fill.role)
    local shape = ffi.new("const void *[1]")
    local n = ffi.new("int[1]")
    lib.check(C.oar_op_desc_get_attr_list(fill.desc, "shape", shape, n))
    assert.equal(1, n[0])
    assert.equal(1, ffi.cast("const int32_t *", shape[0])[0])
    local val = ffi.new("float[1]")
    lib.check(C.oar_op_desc_get_attr_float(fill.desc, "value", val))
    assert.equal(1, val[0])
    local dt = ffi.new("int32_t[1]")
    lib.check(C.oar_op_desc_get_attr_int(fill.desc, "dtype", dt))
    assert.equal(FP64, dt[0])
    -- wiring of each grad op
    assert.same({ X = { "o" }, ["Out@GRAD"] = { "loss@GRAD" } }, ops[7].ins)
    assert.same({ ["X@GRAD"] = { "o@GRAD" } }, ops[7].outs)
    assert.same({ X = { "r" }, Y = { "W2" }, ["Out@GRAD"] = { "o@GRAD" } }, ops[8].ins)
    assert.same({ ["X@GRAD"] = { "r@GRAD" }, ["Y@GRAD"] = { "W2@GRAD" } }, ops[8].outs)
    assert.same({ Out = { "r" }, ["Out@GRAD"] = { "r@GRAD" } }, ops[9].ins)
    assert.same({ ["X@GRAD"] = { "a@GRAD" } }, ops[9].outs)
    assert.same({ X = { "h" }, Y = { "b1" }, ["Out@GRAD"] = { "a@GRAD" } }, ops[10].ins)
    assert.same({ ["X@GRAD"] = { "h@GRAD" }, ["Y@GRAD"] = { "b1@GRAD" } }, ops[10].outs)
    -- x is data (stop_gradient): its grad is @EMPTY@
    assert.same({ X = { "x" }, Y = { "W1" }, ["Out@GRAD"] = { "h@GRAD" } }, ops[11].ins)
    assert.same({ ["X@GRAD"] = { "@EMPTY@" }, ["Y@GRAD"] = { "W1@GRAD" } }, ops[11].outs)
    for i = 7, 11 do assert.equal(ROLE_BACKWARD, ops[i].role) end
    -- op_role_var names (param, grad) on the op writing each param grad
    assert.same({ "W2", "W2@GRAD" }, ops[8].role_var)
    assert.same({ "b1", "b1@GRAD" }, ops[10].role_var)
    assert.same({ "W1", "W1@GRAD" }, ops[11].role_var)
    assert.is_nil(ops[9].role_var and ops[9].role_var[1])
    -- grad vars are declared like their forward vars, not persistable
    for _, name in ipairs({ "W1", "b1", "W2", "h", "a", "r", "o", "loss" }) do
      local f, g = var_info(b, name), var_info(b, name .. "@GRAD")
      assert.is_not_nil(g, name .. "@GRAD declared")
      assert.same(f.shape, g.shape)
      assert.equal(f.dtype, g.dtype)
      assert.is_false(g.persistable)
    end
    assert.is_nil(var_info(b, "x@GRAD"))
    assert.is_nil(var_info(b, "@EMPTY@"))
  end)

  it("returns only the params asked for and honours no_grad names", function()
    local p = new_program()
    local b = C.oar_program_block(p, 0)
    mlp(b)
    local pairs_ = assert(append_backward(p, "loss", { params = { "W2", "W1" }, no_grad = { "b1" } }))
    assert.same({ { "W2", "W2@GRAD" }, { "W1", "W1@GRAD" } }, pairs_)
    local ops = ops_of(b, 5)
    assert.same({ ["X@GRAD"] = { "h@GRAD" }, ["Y@GRAD"] = { "@EMPTY@" } }, ops[5].outs)
    assert.is_nil(var_info(b, "b1@GRAD"))
  end)

  it("emits nothing for ops whose inputs all need no gradient", function()
    local p = new_program()
    local b = C.oar_program_block(p, 0)
    var(b, "x", { 2, 3 }, { stop = true })
    var(b, "W", { 3, 3 }, { persistable = true })
    op(b, "relu", { X = { "x" } }, { Out = { "rx" } })          -- only data flows in
    op(b, "mul", { X = { "rx" }, Y = { "W" } }, { Out = { "h" } })
    op(b, "mean", { X = { "h" } }, { Out = { "loss" } })
    assert(append_backward(p, "loss"))
    assert.same({ "fill_constant", "mean_grad", "mul_grad" }, types(ops_of(b, 3)))
    assert.same({ ["X@GRAD"] = { "@EMPTY@" }, ["Y@GRAD"] = { "W@GRAD" } }, ops_of(b, 5)[1].outs)
  end)

  it("sums the grads of a var read twice right before its first reader", function()
    local p = new_program()
    local b = C.oar_program_block(p, 0)
    var(b, "x", { 3, 4 }, { stop = true })
    var(b, "W", { 4, 4 }, { persistable = true })
    op(b, "mul", { X = { "x" }, Y = { "W" } }, { Out = { "z" } })
    op(b, "relu", { X = { "z" } }, { Out = { "a" } })
    op(b, "elementwise_add", { X = { "a" }, Y = { "z" } }, { Out = { "s" } })
    op(b, "mean", { X = { "s" } }, { Out = { "loss" } })
    assert(append_backward(p, "loss"))
    local ops = ops_of(b, 4)
    assert.same({ "fill_constant", "mean_grad", "elementwise_add_grad", "relu_grad", "sum", "mul_grad" }, types(ops))
    assert.same({ ["X@GRAD"] = { "a@GRAD" }, ["Y@GRAD"] = { "z@GRAD@RENAME@block0@0" } }, ops[3].outs)
    assert.same({ ["X@GRAD"] = { "z@GRAD@RENAME@block0@1" } }, ops[4].outs)
    assert.same({ X = { "z@GRAD@RENAME@block0@0", "z@GRAD@RENAME@block0@1" } }, ops[5].ins)
    assert.same({ Out = { "z@GRAD" } }, ops[5].outs)
    assert.equal(ROLE_BACKWARD, ops[5].role)
    assert.same({ "z@GRAD" }, ops[6].ins["Out@GRAD"])
    for _, n in ipairs({ "z@GRAD@RENAME@block0@0", "z@GRAD@RENAME@block0@1", "z@GRAD" }) do
      assert.same({ 3, 4 }, var_info(b, n).shape)
    end
  end)

  it("sums a param's grads at the end and names the pair on the sum", function()
    local p = new_program()
    local b = C.oar_program_block(p, 0)
    var(b, "x", { 3, 4 }, { stop = true })
    var(b, "W", { 4, 4 }, { persistable = true })
    op(b, "mul", { X = { "x" }, Y = { "W" } }, { Out = { "h1" } })
    op(b, "mul", { X = { "h1" }, Y = { "W" } }, { Out = { "h2" } })
    op(b, "mean", { X = { "h2" } }, { Out = { "loss" } })
    local pairs_ = assert(append_backward(p, "loss"))
    assert.same({ { "W", "W@GRAD" } }, pairs_)
    local ops = ops_of(b, 3)
    assert.same({ "fill_constant", "mean_grad", "mul_grad", "mul_grad", "sum" }, types(ops))
    assert.same({ ["X@GRAD"] = { "h1@GRAD" }, ["Y@GRAD"] = { "W@GRAD@RENAME@block0@0" } }, ops[3].outs)
    assert.same({ ["X@GRAD"] = { "@EMPTY@" }, ["Y@GRAD"] = { "W@GRAD@RENAME@block0@1" } }, ops[4].outs)
    assert.same({ X = { "W@GRAD@RENAME@block0@0", "W@GRAD@RENAME@block0@1" } }, ops[5].ins)
    assert.same({ "W", "W@GRAD" }, ops[5].role_var)
    assert.is_nil(ops[3].role_var and ops[3].role_var[1])
  end)

  it("fills zeros for the grad of an output that does not reach the loss", function()
    local p = new_program()
    local b = C.oar_program_block(p, 0)
    var(b, "W", { 2, 3 }, { persistable = true })
    op(b, "bwtest_split", { X = { "W" } }, { A = { "a" }, B = { "c" } })
    op(b, "mean", { X = { "a" } }, { Out = { "loss" } })
    assert.same({ { "W", "W@GRAD" } }, assert(append_backward(p, "loss")))
    local ops = ops_of(b, 2)
    assert.same({ "fill_constant", "mean_grad", "fill_zeros_like", "bwtest_split_grad" }, types(ops))
    assert.same({ X = { "c" } }, ops[3].ins)
    assert.same({ Out = { "c@GRAD" } }, ops[3].outs)
    assert.equal(ROLE_BACKWARD, ops[3].role)
    assert.same({ ["A@GRAD"] = { "a@GRAD" }, ["B@GRAD"] = { "c@GRAD" } }, ops[4].ins)
    assert.same({ 2, 3 }, var_info(b, "c@GRAD").shape)
  end)

  it("differentiates a sub-block into a new grad block", function()
    local p = new_program()
    local b0 = C.oar_program_block(p, 0)
    var(b0, "x", { 2, 3 }, { stop = true })
    var(b0, "W", { 3, 3 }, { persistable = true })
    var(b0, "o1", { 2, 3 })
    var(b0, "o2", { 2, 3 })
    local b1 = new_block(p, 0)
    -- the sub-block reads W twice and writes two outer vars
    op(b1, "mul", { X = { "x" }, Y = { "W" } }, { Out = { "o1" } })
    op(b1, "mul", { X = { "o1" }, Y = { "W" } }, { Out = { "o2" } })
    op(b0, "bwtest_block", { X = { "x", "W" } }, { Out = { "o2" } }, { sub_block = 1 })
    op(b0, "mean", { X = { "o2" } }, { Out = { "loss" } })
    assert.same({ { "W", "W@GRAD" } }, assert(append_backward(p, "loss")))
    assert.equal(3, C.oar_program_num_blocks(p))
    local g = C.oar_program_block(p, 2)
    assert.equal(0, C.oar_block_parent_idx(g))
    assert.equal(1, C.oar_block_forward_block_idx(g))
    local top = ops_of(b0, 2)
    assert.same({ "fill_constant", "mean_grad", "bwtest_block_grad" }, types(top))
    assert.same({ X = { "x", "W" }, Out = { "o2" }, ["Out@GRAD"] = { "o2@GRAD" } }, top[3].ins)
    assert.same({ ["X@GRAD"] = { "@EMPTY@", "W@GRAD" } }, top[3].outs)
    assert.equal(2, C.oar_attr_block(top[3].desc, "sub_block"))
    assert.same({ "W", "W@GRAD" }, top[3].role_var)
    -- inside: the outer grad o2@GRAD flows in; W's two grads are summed locally
    local inner = ops_of(g)
    assert.same({ "mul_grad", "mul_grad", "sum" }, types(inner))
    assert.same({ X = { "o1" }, Y = { "W" }, ["Out@GRAD"] = { "o2@GRAD" } }, inner[1].ins)
    assert.same({ ["X@GRAD"] = { "o1@GRAD" }, ["Y@GRAD"] = { "W@GRAD@RENAME@block1@0" } }, inner[1].outs)
    assert.same({ ["X@GRAD"] = { "@EMPTY@" }, ["Y@GRAD"] = { "W@GRAD@RENAME@block1@1" } }, inner[2].outs)
    assert.same({ Out = { "W@GRAD" } }, inner[3].outs)
    -- every grad written inside is declared inside, shaped like its forward var
    for _, n in ipairs({ "o1@GRAD", "W@GRAD", "W@GRAD@RENAME@block1@0" }) do
      assert.same(var_info(b0, n:match("^(.-)@GRAD")).shape, var_info(g, n).shape)
    end
    assert.is_nil(var_info(g, "o2@GRAD"))
  end)

  -- Grad ops inside a grad block read the forward sub-block's own vars; the
  -- grad block's parent is where its grad op goes, so those vars are found
  -- only when var lookup also follows forward_block_idx (as Fluid's
  -- BlockDesc::FindVarRecursive does).
  local function lookup_follows_forward_block()
    local p = new_program()
    local b1, b2 = new_block(p, 0), new_block(p, 0)
    var(b1, "only_in_forward", { 1 })
    lib.check(C.oar_block_set_forward_block_idx(b2, 1))
    return C.oar_block_find_var_recursive(b2, "only_in_forward") ~= nil
  end

  it("differentiates a sub-block with its own intermediate vars", function()
    assert.is_true(lookup_follows_forward_block())
    local p = new_program()
    local b0 = C.oar_program_block(p, 0)
    var(b0, "x", { 2, 3 }, { stop = true })
    var(b0, "W", { 3, 3 }, { persistable = true })
    var(b0, "o", { 2, 3 })
    local b1 = new_block(p, 0)
    var(b1, "t", { 2, 3 })
    op(b1, "mul", { X = { "x" }, Y = { "W" } }, { Out = { "t" } })
    op(b1, "mul", { X = { "t" }, Y = { "W" } }, { Out = { "o" } })
    op(b0, "bwtest_block", { X = { "x", "W" } }, { Out = { "o" } }, { sub_block = 1 })
    op(b0, "mean", { X = { "o" } }, { Out = { "loss" } })
    assert.same({ { "W", "W@GRAD" } }, assert(append_backward(p, "loss")))
    local g = C.oar_program_block(p, 2)
    local inner = ops_of(g)
    assert.same({ "mul_grad", "mul_grad", "sum" }, types(inner))
    assert.same({ X = { "t" }, Y = { "W" }, ["Out@GRAD"] = { "o@GRAD" } }, inner[1].ins)
    assert.same({ ["X@GRAD"] = { "t@GRAD" }, ["Y@GRAD"] = { "W@GRAD@RENAME@block1@0" } }, inner[1].outs)
    assert.same({ "t@GRAD" }, inner[2].ins["Out@GRAD"])
    assert.same({ 2, 3 }, var_info(g, "t@GRAD").shape)
    assert.is_nil(var_info(b1, "t@GRAD"))
  end)

  it("undoes everything when a grad op cannot be added", function()
    local p = new_program()
    local b = C.oar_program_block(p, 0)
    var(b, "x", { 2, 3 }, { stop = true })
    var(b, "W", { 2, 3 }, { persistable = true })
    op(b, "bwtest_bad", { X = { "W" } }, { Out = { "y" } })
    op(b, "elementwise_add", { X = { "x" }, Y = { "y" } }, { Out = { "s" } })
    op(b, "mean", { X = { "s" } }, { Out = { "loss" } })
    local nops, nvars = C.oar_block_num_ops(b), C.oar_block_num_vars(b)
    local res, err = append_backward(p, "loss")
    assert.is_nil(res)
    assert.matches("bwtest_unregistered_grad", err)
    assert.equal(nops, C.oar_block_num_ops(b))
    assert.equal(nvars, C.oar_block_num_vars(b))
    assert.is_nil(var_info(b, "loss@GRAD"))
    assert.equal(ROLE_FORWARD, ops_of(b)[3].role or 0)
  end)

  it("names what is wrong", function()
    local p = new_program()
    local b = C.oar_program_block(p, 0)
    mlp(b)
    local _, err, rc = append_backward(p, "nope")
    assert.equal(NOT_FOUND, rc)
    assert.matches("'nope'", err)
    _, err, rc = append_backward(p, "x")
    assert.equal(NOT_FOUND, rc)
    assert.matches("no op in block 0 computes loss 'x'", err)
    _, err, rc = append_backward(p, "loss", { params = { "W9" } })
    assert.equal(NOT_FOUND, rc)
    assert.matches("parameter 'W9'", err)
    _, err = gradients(p, { "loss" }, { "ghost" })
    assert.matches("input 'ghost'", err)
    assert.equal(5, C.oar_block_num_ops(b))
  end)

  it("renames grads that an earlier pass declared", function()
    local p = new_program()
    local b = C.oar_program_block(p, 0)
    mlp(b)
    assert(append_backward(p, "loss"))
    local n1 = C.oar_block_num_ops(b)
    local g = assert(gradients(p, { "loss" }, { "W1", "W2" }))
    assert.same({ "W1@GRAD_1", "W2@GRAD_1" }, g)
    local ops = ops_of(b, n1)
    assert.same({ Out = { "loss@GRAD_1" } }, ops[1].outs)
    assert.same({ "loss@GRAD_1" }, ops[2].ins["Out@GRAD"])
    -- the first pass's ops are untouched
    assert.same({ ["X@GRAD"] = { "o@GRAD" } }, ops_of(b, 6)[1].outs)
  end)

  describe("numerically", function()
    -- a forward program and the same program with its backward pass
    local function twin(build)
      local f, g = new_program(), new_program()
      build(C.oar_program_block(f, 0))
      build(C.oar_program_block(g, 0))
      return f, g
    end

    local function feeds_for(spec, seed)
      local rnd, feeds = filler(seed), {}
      for name, shape in pairs(spec) do feeds[name] = rand_tensor(shape, rnd) end
      return feeds
    end

    it("matches finite differences for mean(relu(x*W*W + b))", function()
      local function build(b)
        var(b, "x", { 3, 4 }, { stop = true })
        var(b, "W", { 4, 4 }, { persistable = true })
        var(b, "bias", { 4 }, { persistable = true })
        op(b, "mul", { X = { "x" }, Y = { "W" } }, { Out = { "h1" } })
        op(b, "mul", { X = { "h1" }, Y = { "W" } }, { Out = { "h2" } })
        op(b, "elementwise_add", { X = { "h2" }, Y = { "bias" } }, { Out = { "a" } })
        op(b, "relu", { X = { "a" } }, { Out = { "r" } })
        op(b, "mean", { X = { "r" } }, { Out = { "loss" } })
      end
      local fprog, bprog = twin(build)
      local pairs_ = assert(append_backward(bprog, "loss"))
      assert.same({ { "W", "W@GRAD" }, { "bias", "bias@GRAD" } }, pairs_)
      local feeds = feeds_for({ x = { 3, 4 }, W = { 4, 4 }, bias = { 4 } }, 7)
      local got = T.run_program(bprog, feeds, { "W@GRAD", "bias@GRAD" }, "float64")
      check_numeric(fprog, feeds, "loss", "W", got[1])
      check_numeric(fprog, feeds, "loss", "bias", got[2])
    end)

    it("matches finite differences when a var feeds two ops", function()
      local function build(b)
        var(b, "x", { 3, 4 }, { stop = true })
        var(b, "W", { 4, 4 }, { persistable = true })
        op(b, "mul", { X = { "x" }, Y = { "W" } }, { Out = { "z" } })
        op(b, "relu", { X = { "z" } }, { Out = { "a" } })
        op(b, "elementwise_add", { X = { "a" }, Y = { "z" } }, { Out = { "s" } })
        op(b, "mean", { X = { "s" } }, { Out = { "loss" } })
      end
      local fprog, bprog = twin(build)
      assert(append_backward(bprog, "loss"))
      local feeds = feeds_for({ x = { 3, 4 }, W = { 4, 4 } }, 11)
      check_numeric(fprog, feeds, "loss", "W", T.run_program(bprog, feeds, { "W@GRAD" }, "float64")[1])
    end)

    it("handles in-place ops and overwritten vars", function()
      local function build(b)
        var(b, "x", { 3, 4 }, { stop = true })
        var(b, "W", { 4, 4 }, { persistable = true })
        var(b, "V", { 4, 4 }, { persistable = true })
        op(b, "mul", { X = { "x" }, Y = { "W" } }, { Out = { "a" } })
        op(b, "scale", { X = { "a" } }, { Out = { "a" } }, { scale = 3.0 })   -- in place
        op(b, "relu", { X = { "a" } }, { Out = { "s" } })
        op(b, "mul", { X = { "s" }, Y = { "V" } }, { Out = { "a" } })        -- a overwritten
        op(b, "mean", { X = { "a" } }, { Out = { "loss" } })
      end
      local fprog, bprog = twin(build)
      assert(append_backward(bprog, "loss"))
      local ops = ops_of(C.oar_program_block(bprog, 0), 5)
      -- the grad of the overwritten a is a new version, not summed with the old
      assert.same({ "fill_constant", "mean_grad", "mul_grad", "relu_grad", "scale", "mul_grad" }, types(ops))
      local feeds = feeds_for({ x = { 3, 4 }, W = { 4, 4 }, V = { 4, 4 } }, 5)
      local got = T.run_program(bprog, feeds, { "W@GRAD", "V@GRAD" }, "float64")
      check_numeric(fprog, feeds, "loss", "W", got[1])
      check_numeric(fprog, feeds, "loss", "V", got[2])
    end)

    it("computes gradients() of several targets with given target grads", function()
      local function build(b)
        var(b, "x", { 2, 3 }, { stop = true })
        var(b, "W", { 3, 3 }, { persistable = true })
        var(b, "U", { 3, 3 }, { persistable = true })
        var(b, "dy", { 2, 3 }, { stop = true })
        op(b, "mul", { X = { "x" }, Y = { "W" } }, { Out = { "y" } })
        op(b, "mul", { X = { "y" }, Y = { "W" } }, { Out = { "z" } })
        op(b, "mul", { X = { "x" }, Y = { "U" } }, { Out = { "u" } })
      end
      local fprog, bprog = twin(build)
      local g = assert(gradients(bprog, { "y", "z" }, { "x", "W", "U" }, { target_grads = { "dy", false } }))
      -- U does not reach the targets; x is data but was asked for
      assert.same({ "x@GRAD", "W@GRAD", false }, g)
      -- d/dθ [sum(dy * y) + sum(z)], compared through an explicit loss
      local bl = C.oar_program_block(fprog, 0)
      op(bl, "elementwise_mul", { X = { "dy" }, Y = { "y" } }, { Out = { "p" } })
      op(bl, "reduce_sum", { X = { "p" } }, { Out = { "s1" } }, { reduce_all = true })
      op(bl, "reduce_sum", { X = { "z" } }, { Out = { "s2" } }, { reduce_all = true })
      op(bl, "sum", { X = { "s1", "s2" } }, { Out = { "loss" } })
      local feeds = feeds_for({ x = { 2, 3 }, W = { 3, 3 }, U = { 3, 3 }, dy = { 2, 3 } }, 3)
      local got = T.run_program(bprog, feeds, { "x@GRAD", "W@GRAD" }, "float64")
      check_numeric(fprog, feeds, "loss", "x", got[1])
      check_numeric(fprog, feeds, "loss", "W", got[2])
    end)

    it("seeds ones of the runtime shape for a target with a batch dim", function()
      local p = new_program()
      local b = C.oar_program_block(p, 0)
      var(b, "x", { -1, 3 }, { stop = true })
      var(b, "W", { 3, 2 }, { persistable = true })
      op(b, "mul", { X = { "x" }, Y = { "W" } }, { Out = { "y" } })
      local g = assert(gradients(p, { "y" }, { "W" }))
      assert.same({ "W@GRAD" }, g)
      local feeds = { x = T.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }), W = T.tensor({ { 1, 0 }, { 0, 1 }, { 1, 1 } }) }
      -- d sum(x W) / dW[i][j] = sum over rows of x[:, i]
      local got = T.run_program(p, feeds, { "W@GRAD" }, "float64")[1]
      assert.same({ 3, 2 }, got.shape)
      T.assert_close(got, { data = { 5, 5, 7, 7, 9, 9 } }, 1e-12, 0, "W@GRAD")
    end)
  end)
end)
