-- oar_program_prune (the ops and vars a set of targets needs) and
-- oar_program_inference_optimize (what clone{for_test=true} does) through
-- the C API, on programs built by hand.
local ffi = require("ffi")
local lib = require("oar.lib")
-- OpDesc.is_target has no accessor: read from struct oar_op_desc (src/desc.h,
-- declared by the op-authoring API)
local C = lib.load_op_api()
local T = require("spec.helpers.op_test")
local P = require("spec.helpers.program")
local O = require("spec.helpers.test_ops")

local FP32, FEED_MINIBATCH, FETCH_LIST = 5, 9, 10
local ROLE_BACKWARD, ROLE_OPTIMIZE, ROLE_LRSCHED, ROLE_LOSS = 1, 2, 16, 256
local NOT_FOUND = -2

-- A test op that runs sub-block `sub_block` (no infer, no grad, no kernel)
O.define_op{ type = "prunetest_block", inputs = { { "X", 3 } }, outputs = { { "Out", 1 } },
             attrs = { { "sub_block", 8 } } }

local new_program = P.new_program

local function var(b, name, shape, opts)
  opts = opts or {}
  return P.new_var(b, name, { type = opts.type, dims = shape, dtype = shape and FP32 or nil,
                              persistable = opts.persistable, need_check_feed = opts.data })
end

local op = T.append_op

local function sub_block_op(b, ins, outs, idx)
  return P.append_block_op(b, "prunetest_block", { X = ins }, { Out = outs }, { sub_block = idx })
end

local function ops_of(b)
  local out = {}
  for i = 0, C.oar_block_num_ops(b) - 1 do
    local o = C.oar_block_op_at(b, i)
    local ins = {}
    for k = 0, C.oar_op_desc_num_inputs(o) - 1 do
      local s = C.oar_op_desc_input_slot(o, k)
      for j = 0, C.oar_op_desc_input_count(o, s) - 1 do ins[#ins + 1] = ffi.string(C.oar_op_desc_input_arg(o, s, j)) end
    end
    table.sort(ins)
    local role = ffi.new("int32_t[1]")
    if C.oar_op_desc_attr_type(o, "op_role") >= 0 then lib.check(C.oar_op_desc_get_attr_int(o, "op_role", role)) end
    out[#out + 1] = { type = ffi.string(C.oar_op_desc_type(o)), ins = table.concat(ins, ","), desc = o,
                      role = role[0], is_target = o.is_target }
  end
  return out
end

local function sig(b)
  local t = {}
  for i, o in ipairs(ops_of(b)) do t[i] = o.type .. "(" .. o.ins .. ")" end
  return t
end

local function var_names(b)
  local t = {}
  for i = 0, C.oar_block_num_vars(b) - 1 do t[#t + 1] = ffi.string(C.oar_var_desc_name(C.oar_block_var_at(b, i))) end
  return t
end

local function prune(p, targets)
  local out = ffi.new("oar_program_t *[1]")
  local rc = C.oar_program_prune(p, lib.cstrings(targets), #targets, out)
  if rc ~= 0 then return nil, lib.last_error(), rc end
  return ffi.gc(out[0], C.oar_program_free)
end

describe("prune", function()
  -- feed -> x; two heads l1 = mean(relu(x W1)) and l2 = mean(x W2); an sgd
  -- op updating W1; a fetch of l1
  local function two_heads()
    local p = new_program()
    local b = C.oar_program_block(p, 0)
    var(b, "feed", nil, { type = FEED_MINIBATCH, persistable = true })
    var(b, "fetch", nil, { type = FETCH_LIST, persistable = true })
    var(b, "x", { 2, 3 }, { data = true })
    var(b, "W1", { 3, 4 }, { persistable = true })
    var(b, "W2", { 3, 2 }, { persistable = true })
    var(b, "lr", { 1 }, { persistable = true })
    var(b, "g1", { 3, 4 })
    var(b, "unused", { 5 })
    op(b, "feed", { X = { "feed" } }, { Out = { "x" } }, { col = 0 })
    op(b, "mul", { X = { "x" }, Y = { "W1" } }, { Out = { "h1" } })
    op(b, "relu", { X = { "h1" } }, { Out = { "r1" } })
    op(b, "mean", { X = { "r1" } }, { Out = { "l1" } })
    op(b, "mul", { X = { "x" }, Y = { "W2" } }, { Out = { "h2" } })
    op(b, "mean", { X = { "h2" } }, { Out = { "l2" } })
    op(b, "sgd", { Param = { "W1" }, Grad = { "g1" }, LearningRate = { "lr" } }, { ParamOut = { "W1" } },
       { op_role = ROLE_OPTIMIZE })
    op(b, "fetch", { X = { "l1" } }, { Out = { "fetch" } }, { col = 0 })
    return p, b
  end

  it("keeps exactly the ops and vars one target needs", function()
    local p, b = two_heads()
    local q = assert(prune(p, { "l1" }))
    local qb = C.oar_program_block(q, 0)
    assert.same({ "mul(W1,x)", "relu(h1)", "mean(r1)" }, sig(qb))
    assert.same({ "x", "W1", "h1", "r1", "l1" }, var_names(qb))
    local ops = ops_of(qb)
    assert.is_false(ops[1].is_target)
    assert.is_false(ops[2].is_target)
    assert.is_true(ops[3].is_target)
    -- the source program is untouched
    assert.equal(8, C.oar_block_num_ops(b))
    assert.equal(13, C.oar_block_num_vars(b))
  end)

  it("keeps another set for another target, and the union for both", function()
    local p = two_heads()
    local q2 = assert(prune(p, { "l2" }))
    assert.same({ "mul(W2,x)", "mean(h2)" }, sig(C.oar_program_block(q2, 0)))
    assert.same({ "x", "W2", "h2", "l2" }, var_names(C.oar_program_block(q2, 0)))
    local q12 = assert(prune(p, { "l2", "l1" }))
    local b12 = C.oar_program_block(q12, 0)
    assert.same({ "mul(W1,x)", "relu(h1)", "mean(r1)", "mul(W2,x)", "mean(h2)" }, sig(b12))
    local ops = ops_of(b12)
    assert.is_true(ops[3].is_target)
    assert.is_true(ops[5].is_target)
    assert.is_false(ops[1].is_target)
  end)

  it("pulls an optimize op in only when it writes a target", function()
    local p = two_heads()
    local q = assert(prune(p, { "W1" }))
    local qb = C.oar_program_block(q, 0)
    assert.same({ "sgd(W1,g1,lr)" }, sig(qb))
    assert.same({ "W1", "lr", "g1" }, var_names(qb))
    assert.is_true(ops_of(qb)[1].is_target)
  end)

  it("keeps an op's whole sub-block and the outer vars it reads", function()
    local p = new_program()
    local b0 = C.oar_program_block(p, 0)
    var(b0, "x", { 2, 3 }, { data = true })
    var(b0, "k", { 2, 3 }, { persistable = true })
    var(b0, "o", { 2, 3 })
    var(b0, "other", { 2, 3 })
    op(b0, "relu", { X = { "x" } }, { Out = { "c" } })
    op(b0, "relu", { X = { "x" } }, { Out = { "dead" } })
    local b1 = C.oar_program_block(p, 0)
    local bp = ffi.new("oar_block_t *[1]")
    lib.check(C.oar_program_append_block(p, 0, bp))
    b1 = bp[0]
    var(b1, "t", { 2, 3 })
    op(b1, "elementwise_add", { X = { "c" }, Y = { "k" } }, { Out = { "t" } })
    op(b1, "relu", { X = { "t" } }, { Out = { "o" } })
    op(b1, "relu", { X = { "k" } }, { Out = { "other" } })
    sub_block_op(b0, {}, { "o" }, 1)
    local q = assert(prune(p, { "o" }))
    local qb = C.oar_program_block(q, 0)
    -- c is read inside the sub-block only, yet its producer stays
    assert.same({ "relu(x)", "prunetest_block()" }, sig(qb))
    assert.same({ "x", "k", "o", "other", "c" }, var_names(qb))
    assert.same({ "elementwise_add(c,k)", "relu(t)", "relu(k)" }, sig(C.oar_program_block(q, 1)))
    assert.equal(1, C.oar_attr_block(ops_of(qb)[2].desc, "sub_block"))
  end)

  it("names a missing target", function()
    local p = two_heads()
    local q, err, rc = prune(p, { "l1", "nope" })
    assert.is_nil(q)
    assert.equal(NOT_FOUND, rc)
    assert.matches("target 'nope'", err)
  end)
end)

describe("inference_optimize", function()
  it("drops backward, optimize and LR-schedule ops, sets is_test, drops their vars", function()
    local p = new_program()
    local b = C.oar_program_block(p, 0)
    var(b, "x", { 2, 3 }, { data = true })
    var(b, "label", { 2, 1 }, { data = true })      -- a data var no op reads
    var(b, "W", { 3, 3 }, { persistable = true })
    var(b, "lr", { 1 }, { persistable = true })
    var(b, "junk", { 4 })
    var(b, "gW", { 3, 3 })
    op(b, "mul", { X = { "x" }, Y = { "W" } }, { Out = { "h" } })
    op(b, "dropout", { X = { "h" } }, { Out = { "d" }, Mask = { "m" } }, { dropout_prob = 0.5 })
    op(b, "mean", { X = { "d" } }, { Out = { "loss" } }, { op_role = ROLE_LOSS })
    op(b, "scale", { X = { "lr" } }, { Out = { "lr_now" } }, { scale = 0.5, op_role = ROLE_LRSCHED })
    op(b, "fill_constant", {}, { Out = { "loss@GRAD" } }, { shape = { 1 }, value = 1.0, op_role = ROLE_BACKWARD + ROLE_LOSS })
    op(b, "mean_grad", { X = { "d" }, ["Out@GRAD"] = { "loss@GRAD" } }, { ["X@GRAD"] = { "d@GRAD" } },
       { op_role = ROLE_BACKWARD })
    op(b, "sgd", { Param = { "W" }, Grad = { "gW" }, LearningRate = { "lr_now" } }, { ParamOut = { "W" } },
       { op_role = ROLE_OPTIMIZE })
    -- a sub-block keeps its forward op and loses its backward one
    local bp = ffi.new("oar_block_t *[1]")
    lib.check(C.oar_program_append_block(p, 0, bp))
    op(bp[0], "relu", { X = { "h" } }, { Out = { "inner" } })
    op(bp[0], "relu", { X = { "inner" } }, { Out = { "inner2" } }, { op_role = ROLE_BACKWARD })

    lib.check(C.oar_program_inference_optimize(p))
    assert.same({ "mul(W,x)", "dropout(h)", "mean(d)" }, sig(b))
    assert.same({ "relu(h)" }, sig(bp[0]))
    local ops = ops_of(b)
    assert.equal(ROLE_LOSS, ops[3].role)
    local v = ffi.new("bool[1]")
    lib.check(C.oar_op_desc_get_attr_bool(ops[2].desc, "is_test", v))
    assert.is_true(v[0])
    -- every remaining op whose definition has is_test got it set; the others did not get one
    for _, blk in ipairs({ b, bp[0] }) do
      for _, o in ipairs(ops_of(blk)) do
        if C.oar_op_attr_type(o.type, "is_test") == 6 then
          lib.check(C.oar_op_desc_get_attr_bool(o.desc, "is_test", v))
          assert.is_true(v[0], o.type .. " is_test")
        else
          assert.is_true(C.oar_op_desc_attr_type(o.desc, "is_test") < 0, o.type .. " has no is_test")
        end
      end
    end
    -- used vars, persistables and data vars stay; grads and temporaries of dropped ops go
    -- (d and m are declared in the order the helper sets dropout's output slots)
    local names = var_names(b)
    table.sort(names)
    assert.same({ "W", "d", "h", "label", "loss", "lr", "m", "x" }, names)
    assert.same({ "inner" }, var_names(bp[0]))
    -- the program still validates
    lib.check(C.oar_program_validate(p))
  end)

  it("makes a trained program's clone runnable forward only", function()
    local p = new_program()
    local b = C.oar_program_block(p, 0)
    var(b, "x", { 2, 2 }, { data = true })
    var(b, "W", { 2, 2 }, { persistable = true })
    op(b, "mul", { X = { "x" }, Y = { "W" } }, { Out = { "y" } })
    op(b, "mean", { X = { "y" } }, { Out = { "loss" } })
    local out, n = ffi.new("char **[1]"), ffi.new("int[1]")
    lib.check(C.oar_backward_append(p, "loss", nil, 0, nil, 0, out, n))
    C.oar_strings_free(out[0], 2 * n[0])
    local cp = ffi.new("oar_program_t *[1]")
    lib.check(C.oar_program_clone(p, cp))
    local q = ffi.gc(cp[0], C.oar_program_free)
    lib.check(C.oar_program_inference_optimize(q))
    local qb = C.oar_program_block(q, 0)
    assert.same({ "mul(W,x)", "mean(y)" }, sig(qb))
    assert.same({ "x", "W", "y", "loss" }, var_names(qb))
    local feeds = { x = T.tensor({ { 1, 2 }, { 3, 4 } }), W = T.tensor({ { 1, 0 }, { 0, 2 } }) }
    local got = T.run_program(q, feeds, { "loss" }, "float32")[1]
    -- mean of [[1, 4], [3, 8]]
    T.assert_close(got, { data = { 4 } }, 1e-6, 0, "loss")
  end)
end)
