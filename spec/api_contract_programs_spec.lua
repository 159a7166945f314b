-- The API contract (docs/api.md): programs and blocks; variables and operators. One of the
-- api_contract_*_spec.lua files (one per API area): every table row, bullet,
-- keyword default and code-sample call has at least one assertion, with
-- expected values worked out by hand in the comments.
local oar = require("oar")
local A = require("spec.helpers.api")
local layers = oar.layers

local THIS_FILE = "api_contract_programs_spec.lua"

-- ---- helpers (spec/helpers/api.lua) ---------------------------------------------
local errmsg, eval, near, op_types, contains = A.errmsg, A.eval, A.near, A.op_types, A.contains
local build, run = A.build, A.run


-- ==== Programs and blocks =====================================================
describe("API: programs and blocks", function()
  it("oar.Program() has its global block 0 with parent_idx -1", function()
    local p = oar.Program()
    assert.are.equal(1, p:num_blocks())
    local b = p:global_block()
    assert.are.equal(0, b.idx)
    assert.are.equal(-1, b.parent_idx)
    assert.are.equal(p, b.program)
    assert.are.equal(b, p:block(0))
    assert.are.equal(b, p:current_block())
  end)

  it("default programs and program_guard (restores after, also on error; startup may be nil)", function()
    local m0, s0 = oar.default_main_program(), oar.default_startup_program()
    assert.is_true(oar.framework.is_program(m0))
    assert.is_true(oar.framework.is_program(s0))
    local main, startup = oar.Program(), oar.Program()
    local seen_m, seen_s
    local r = oar.program_guard(main, startup, function()
      seen_m, seen_s = oar.default_main_program(), oar.default_startup_program()
      return 42
    end)
    assert.are.equal(42, r)
    assert.are.equal(main, seen_m)
    assert.are.equal(startup, seen_s)
    assert.are.equal(m0, oar.default_main_program())
    assert.are.equal(s0, oar.default_startup_program())
    -- restored when fn errors
    local err = errmsg(oar.program_guard, main, startup, function() error("boom") end)
    assert.truthy(err:find("boom", 1, true))
    assert.are.equal(m0, oar.default_main_program())
    assert.are.equal(s0, oar.default_startup_program())
    -- startup nil: only main switches
    oar.program_guard(main, nil, function()
      seen_m, seen_s = oar.default_main_program(), oar.default_startup_program()
    end)
    assert.are.equal(main, seen_m)
    assert.are.equal(s0, seen_s)
  end)

  it("block(i) is 0-based; create_block pushes a child of the current block; rollback returns", function()
    local p = oar.Program()
    local b1 = p:create_block()
    assert.are.equal(1, b1.idx)
    assert.are.equal(0, b1.parent_idx)
    assert.are.equal(b1, p:current_block())
    local b2 = p:create_block()
    assert.are.equal(2, b2.idx)
    assert.are.equal(1, b2.parent_idx)
    assert.are.equal(3, p:num_blocks())
    p:rollback()
    assert.are.equal(1, p:current_block().idx)
    p:rollback()
    assert.are.equal(0, p:current_block().idx)
    assert.are.equal(b2, p:block(2))
    assert.truthy(errmsg(p.block, p, 3):find("outside", 1, true))
    assert.truthy(errmsg(p.rollback, p):find("global block", 1, true))
  end)

  it("clone{for_test=true} drops backward/optimize ops and sets is_test; clone() copies", function()
    local main, _, loss = build(function()
      local x = layers.data{ name = "x", shape = { 4 } }
      local h = layers.dropout{ x = layers.fc{ input = x, size = 3 }, dropout_prob = 0.5 }
      local l = layers.mean(h)
      oar.optimizer.SGD{ learning_rate = 0.1 }:minimize(l)
      return l
    end)
    local n = #main:global_block():ops()
    local copy = main:clone()
    assert.are.equal(n, #copy:global_block():ops())
    local test = main:clone{ for_test = true }
    local types = op_types(test:global_block())
    for _, t in ipairs(types) do
      assert.is_nil(t:find("_grad", 1, true), "grad op " .. t .. " left in the test program")
      assert.are_not.equal("sgd", t)
    end
    assert.is_true(contains(types, "dropout"))
    for _, op in ipairs(test:global_block():ops()) do
      if op.type == "dropout" then assert.is_true(op:attr("is_test")) end
    end
    -- the original is untouched
    assert.are.equal(n, #main:global_block():ops())
    assert.is_true(test:global_block():has_var(loss.name))
  end)

  it("prune(targets) keeps only the ops the targets need (Variables or names)", function()
    local main, _, a, b = build(function()
      local x = layers.data{ name = "x", shape = { 2 } }
      return layers.scale{ x = x, scale = 2 }, layers.relu(x)
    end)
    local p1 = main:prune({ a })
    assert.are.same({ "scale" }, op_types(p1:global_block()))
    local p2 = main:prune(b.name)
    assert.are.same({ "relu" }, op_types(p2:global_block()))
    assert.are.equal(2, #main:global_block():ops())
  end)

  it("serialize() gives ProgramDesc bytes and Program.parse reads them back", function()
    local main = build(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      return layers.fc{ input = x, size = 2, act = "relu" }
    end)
    local bytes = main:serialize()
    assert.are.equal("string", type(bytes))
    assert.is_true(#bytes > 0)
    local back = oar.Program.parse(bytes)
    assert.are.same(op_types(main:global_block()), op_types(back:global_block()))
    assert.are.equal(tostring(main), tostring(back))
    assert.are.equal(bytes, back:serialize())
    assert.truthy(errmsg(oar.Program.parse, "\255\255not a program"):find("Program.parse", 1, true))
  end)

  it("tostring(prog) lists blocks, vars with shape and dtype, and ops", function()
    local main, _, y = build(function()
      local x = layers.data{ name = "xin", shape = { 3 } }
      return layers.scale{ x = x, scale = 2 }
    end)
    local s = tostring(main)
    assert.truthy(s:find("block 0", 1, true))
    assert.truthy(s:find("xin", 1, true))
    assert.truthy(s:find("[-1, 3]", 1, true))
    assert.truthy(s:find("float32", 1, true))
    assert.truthy(s:find("scale", 1, true))
    assert.truthy(s:find(y.name, 1, true))
  end)

  it("to_dot() is Graphviz text with ops and vars", function()
    local main = build(function()
      local x = layers.data{ name = "xin", shape = { 3 } }
      return layers.relu(x)
    end)
    local d = main:to_dot()
    assert.truthy(d:match("^digraph"))
    assert.truthy(d:find("relu", 1, true))
    assert.truthy(d:find("xin", 1, true))
    assert.truthy(d:find("->", 1, true))
    assert.truthy(d:match("}%s*$"))
  end)

  it("block:var finds vars of the block and its ancestors, errors when missing", function()
    local p = oar.Program()
    local g = p:global_block()
    local v = g:create_var{ name = "outer", shape = { 2 } }
    local child = p:create_block()
    local w = child:create_var{ name = "inner", shape = { 2 } }
    assert.are.equal("outer", child:var("outer").name)
    assert.are.equal(v, g:var("outer"))
    assert.are.equal(w, child:var("inner"))
    local err = errmsg(g.var, g, "inner")
    assert.truthy(err:find("inner", 1, true))
    assert.truthy(errmsg(child.var, child, "nope"):find("nope", 1, true))
  end)

  it("has_var, vars() and ops() in creation order", function()
    local p = oar.Program()
    local b = p:global_block()
    local a = b:create_var{ name = "a", shape = { 2 } }
    local c = b:create_var{ name = "c", shape = { 2 } }
    local bb = b:create_var{ name = "b", shape = { 2 } }
    assert.is_true(b:has_var("a"))
    assert.is_false(b:has_var("zzz"))
    local names = {}
    for _, v in ipairs(b:vars()) do names[#names + 1] = v.name end
    assert.are.same({ "a", "c", "b" }, names)
    b:append_op{ type = "relu", inputs = { X = { a } }, outputs = { Out = { c } } }
    b:append_op{ type = "scale", inputs = { X = { c } }, outputs = { Out = { bb } }, attrs = { scale = 2 } }
    assert.are.same({ "relu", "scale" }, op_types(b))
  end)

  it("create_var defaults: dtype float32, lod_level 0, not persistable, gradients on, generated name", function()
    local b = oar.Program():global_block()
    local v = b:create_var{ shape = { 2, 3 } }
    assert.are.equal("string", type(v.name))
    assert.is_true(#v.name > 0)
    assert.are.equal("float32", v.dtype)
    assert.are.equal(0, v.lod_level)
    assert.is_false(v.persistable)
    assert.is_false(v.stop_gradient)
    assert.are.same({ 2, 3 }, v.shape)
    local w = b:create_var{ shape = { 2 } }
    assert.are_not.equal(v.name, w.name)
    local u = b:create_var{ name = "u", shape = { -1, 4 }, dtype = "int64", lod_level = 1, persistable = true,
                            stop_gradient = true }
    assert.are.same({ -1, 4 }, u.shape)
    assert.are.equal("int64", u.dtype)
    assert.are.equal(1, u.lod_level)
    assert.is_true(u.persistable)
    assert.is_true(u.stop_gradient)
  end)

  it("create_parameter puts a Parameter in the global block, trainable by default", function()
    local p = oar.Program()
    p:create_block()
    local child = p:current_block()
    local reg = oar.regularizer.L2Decay(0.1)
    local w = child:create_parameter{ name = "w", shape = { 2, 3 }, dtype = "float32",
                                      initializer = oar.initializer.Constant{ value = 0.5 }, regularizer = reg }
    assert.is_true(oar.is_parameter(w))
    assert.is_true(p:global_block():has_var("w"))
    assert.is_false(child:has_var("w"))
    assert.are.equal(p:global_block(), w.block)
    assert.is_true(w.trainable)
    assert.are.equal(reg, w.regularizer)
    assert.is_true(w.persistable)
    -- the initializer op writes it
    local ops = p:global_block():ops()
    assert.are.equal("fill_constant", ops[#ops].type)
    assert.are.same({ "w" }, ops[#ops]:output("Out"))
    local frozen = child:create_parameter{ name = "f", shape = { 1 }, dtype = "float32", trainable = false }
    assert.is_false(frozen.trainable)
  end)

  it("append_op runs inference and names the op in errors; prepend_op inserts at the front", function()
    local b = oar.Program():global_block()
    local x = b:create_var{ name = "x", shape = { -1, 4 } }
    local y = b:create_var{ name = "y" }
    local op = b:append_op{ type = "scale", inputs = { X = { x } }, outputs = { Out = { y } }, attrs = { scale = 3 } }
    assert.are.equal("scale", op.type)
    assert.are.same({ -1, 4 }, y.shape)          -- compile-time inference
    assert.are.equal("float32", y.dtype)
    local z = b:create_var{ name = "z" }
    local first = b:prepend_op{ type = "relu", inputs = { X = { x } }, outputs = { Out = { z } } }
    assert.are.same({ "relu", "scale" }, op_types(b))
    assert.are.equal("relu", first.type)
    local w = b:create_var{ name = "w", shape = { 3, 5 } }
    local err = errmsg(b.append_op, b, { type = "mul", inputs = { X = { x }, Y = { w } },
                                         outputs = { Out = { b:create_var{ name = "o" } } } })
    assert.truthy(err:find("mul", 1, true))
    assert.truthy(errmsg(b.append_op, b, { type = "no_such_op" }):find("no_such_op", 1, true))
    assert.are.same({ "relu", "scale" }, op_types(b))   -- a failed insert leaves the block as it was
  end)
end)

-- ==== Variables and operators ====================================================
describe("API: variables and operators", function()
  it("fields name, shape (-1 batch), dtype (all seven), lod_level, persistable, stop_gradient, block", function()
    local b = oar.Program():global_block()
    for _, dt in ipairs({ "float32", "float64", "int32", "int64", "bool", "uint8", "float16" }) do
      local v = b:create_var{ name = "v_" .. dt, shape = { -1, 2 }, dtype = dt }
      assert.are.equal(dt, v.dtype)
    end
    local v = b:create_var{ name = "seq", shape = { -1, 5 }, lod_level = 2 }
    assert.are.equal("seq", v.name)
    assert.are.same({ -1, 5 }, v.shape)
    assert.are.equal(2, v.lod_level)
    assert.is_false(v.persistable)
    assert.are.equal(b, v.block)
    v.stop_gradient = true
    assert.is_true(v.stop_gradient)
    v.stop_gradient = false
    assert.is_false(v.stop_gradient)
    assert.truthy(errmsg(function() v.stop_gradient = "yes" end):find("stop_gradient", 1, true))
  end)

  it("arithmetic appends elementwise ops; numbers on either side", function()
    local main, _, outs = build(function()
      local a = layers.data{ name = "a", shape = { 3 } }
      local b = layers.data{ name = "b", shape = { 3 } }
      return { a + b, a - b, a * b, a / b, -a, a * 2, 1 - a, 3 + a, a - 1, a / 4, 2 * a, 6 / b }
    end)
    local types = op_types(main:global_block())
    for _, t in ipairs({ "elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div" }) do
      assert.is_true(contains(types, t), t)
    end
    local res = run(main, oar.Program(), { a = { { 1, 2, 3 } }, b = { { 4, 5, 6 } } }, outs)
    near({ { 5, 7, 9 } }, res[1]:totable())
    near({ { -3, -3, -3 } }, res[2]:totable())
    near({ { 4, 10, 18 } }, res[3]:totable())
    near({ { 0.25, 0.4, 0.5 } }, res[4]:totable())
    near({ { -1, -2, -3 } }, res[5]:totable())
    near({ { 2, 4, 6 } }, res[6]:totable())
    near({ { 0, -1, -2 } }, res[7]:totable())
    near({ { 4, 5, 6 } }, res[8]:totable())
    near({ { 0, 1, 2 } }, res[9]:totable())
    near({ { 0.25, 0.5, 0.75 } }, res[10]:totable())
    near({ { 2, 4, 6 } }, res[11]:totable())
    near({ { 1.5, 1.2, 1 } }, res[12]:totable())
    assert.truthy(errmsg(function() return oar.Program():global_block():create_var{ name = "q" } + "s" end)
      :find("Variable", 1, true))
  end)

  it("op.type, op:input/output (lists of names), op:attr, input_names, output_names", function()
    local main, _, y = build(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      return layers.scale{ x = x, scale = 2.5, bias = 1 }
    end)
    local op = main:global_block():ops()[1]
    assert.are.equal("scale", op.type)
    assert.are.same({ "x" }, op:input("X"))
    assert.are.same({ y.name }, op:output("Out"))
    assert.are.same({}, op:input("Nope"))
    near(2.5, op:attr("scale"))
    near(1, op:attr("bias"))
    assert.is_nil(op:attr("no_such_attr"))
    assert.are.same({ "X" }, op:input_names())
    assert.are.same({ "Out" }, op:output_names())
  end)

  it("Parameter is a Variable with trainable, regularizer, optimize_attr", function()
    local reg = oar.regularizer.L1Decay(0.01)
    local main, _, h = build(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      return layers.fc{ input = x, size = 2,
        param_attr = oar.ParamAttr{ name = "W", learning_rate = 0.5, regularizer = reg, trainable = false } }
    end)
    assert.truthy(h)
    local w = main:global_block():var("W")
    assert.is_true(oar.is_parameter(w))
    assert.is_true(oar.is_variable(w))
    assert.are.same({ 3, 2 }, w.shape)
    assert.is_false(w.trainable)
    assert.are.equal(reg, w.regularizer)
    assert.are.equal("table", type(w.optimize_attr))
    near(0.5, w.optimize_attr.learning_rate)
  end)
end)
