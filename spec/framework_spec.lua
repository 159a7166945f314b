-- Programs, blocks, variables, operators, guards, names, serialization,
-- clone/prune, text forms, and Variable arithmetic (values computed by hand).
local oar = require("oar")
local A = require("spec.helpers.api")
local layers = oar.layers

local function errmsg(fn, ...)
  local ok, err = pcall(fn, ...)
  assert.is_false(ok, "expected an error")
  return tostring(err)
end

local fresh = A.build

local run = A.run

describe("Program and blocks", function()
  it("starts with a global block 0 whose parent is -1", function()
    local p = oar.Program()
    assert.are.equal(1, p:num_blocks())
    local gb = p:global_block()
    assert.are.equal(0, gb.idx)
    assert.are.equal(-1, gb.parent_idx)
    assert.are.equal(p, gb.program)
    assert.are.equal(gb, p:block(0))
    assert.are.equal(gb, p:current_block())
  end)

  it("pushes child blocks and rolls back to the parent", function()
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
    assert.are.equal(b1, p:current_block())
    p:rollback()
    assert.are.equal(p:global_block(), p:current_block())
    assert.matches("global block", errmsg(function() p:rollback() end))
  end)

  it("rejects block indices outside the program", function()
    local p = oar.Program()
    assert.matches("outside 0..0", errmsg(function() p:block(1) end))
    assert.matches("outside", errmsg(function() p:block(-1) end))
  end)

  it("finds variables through ancestors and names the missing one", function()
    local p = oar.Program()
    local x = p:global_block():create_var{ name = "x", shape = { 2, 3 } }
    local child = p:create_block()
    local y = child:create_var{ name = "y", shape = { 4 } }
    assert.are.equal(x, child:var("x"))
    assert.are.equal(y, child:var("y"))
    assert.is_true(child:has_var("y"))
    assert.is_false(child:has_var("x"))   -- has_var looks at the block itself, like Fluid
    assert.is_true(child:has_var_recursive("x"))
    local msg = errmsg(function() p:global_block():var("y") end)
    assert.matches("no variable 'y' in block 0", msg)
    assert.matches("framework_spec.lua:%d+", msg)
  end)

  it("creates vars with Fluid's defaults and lists them in creation order", function()
    local b = oar.Program():global_block()
    local a = b:create_var{ name = "a", shape = { -1, 5 } }
    local c = b:create_var{ name = "c", dtype = "int64", lod_level = 1, persistable = true, stop_gradient = true }
    local g = b:create_var{}
    assert.are.same({ -1, 5 }, a.shape)
    assert.are.equal("float32", a.dtype)
    assert.are.equal(0, a.lod_level)
    assert.is_false(a.persistable)
    assert.is_false(a.stop_gradient)
    assert.are.equal("int64", c.dtype)
    assert.are.equal(1, c.lod_level)
    assert.is_true(c.persistable)
    assert.is_true(c.stop_gradient)
    assert.is_string(g.name)
    local names = {}
    for i, v in ipairs(b:vars()) do names[i] = v.name end
    assert.are.same({ "a", "c", g.name }, names)
    assert.are.equal(b, a.block)
    assert.are.equal(a, b:var("a"))   -- the same Lua object each time
  end)

  it("writes stop_gradient through to the desc", function()
    local p = oar.Program()
    local v = p:global_block():create_var{ name = "v", shape = { 1 } }
    v.stop_gradient = true
    local copy = oar.Program.parse(p:serialize())
    assert.is_true(copy:global_block():var("v").stop_gradient)
    assert.matches("boolean", errmsg(function() v.stop_gradient = 1 end))
  end)

  it("creates parameters in the global block from any block", function()
    local p = oar.Program()
    local child = p:create_block()
    local w = child:create_parameter{ name = "w", shape = { 3, 4 }, regularizer = oar.regularizer.L2Decay(0.1) }
    assert.is_true(oar.is_parameter(w))
    assert.are.equal(0, w.block.idx)
    assert.is_true(w.persistable)
    assert.is_true(w.trainable)
    assert.are.equal(0.1, w.regularizer.coeff)
    assert.are.same({ learning_rate = 1.0 }, w.optimize_attr)
    assert.are.equal(w, p:global_block():var("w"))
    local f = child:create_parameter{ name = "frozen", shape = { 2 }, trainable = false }
    assert.is_false(f.trainable)
    assert.matches("shape", errmsg(function() child:create_parameter{ name = "bad", shape = { -1, 2 } } end))
  end)
end)

describe("append_op and Operator", function()
  it("appends ops, runs compile-time inference and exposes the desc", function()
    local p = oar.Program()
    local b = p:global_block()
    local x = b:create_var{ name = "x", shape = { -1, 3 } }
    local y = b:create_var{ name = "y" }
    local op = b:append_op{ type = "scale", inputs = { X = { x } }, outputs = { Out = { y } },
                            attrs = { scale = 2.5, bias = 1 } }
    assert.are.equal("scale", op.type)
    assert.are.same({ "x" }, op:input("X"))
    assert.are.same({ "y" }, op:output("Out"))
    assert.are.same({ "X" }, op:input_names())
    assert.are.same({ "Out" }, op:output_names())
    assert.are.equal(2.5, op:attr("scale"))
    assert.are.equal(1, op:attr("bias"))
    assert.are.equal(true, op:attr("bias_after_scale"))   -- default filled in
    assert.is_nil(op:attr("no_such_attr"))
    assert.are.same({ -1, 3 }, y.shape)                  -- inferred
    assert.are.same({}, op:input("Nope"))
    local cs = op:attr("op_callstack")
    assert.matches("framework_spec.lua:%d+", cs[1])
    assert.are.equal(0, op:attr("op_role"))
    local first = b:prepend_op{ type = "fill_constant", outputs = { Out = { x } },
                                attrs = { shape = { 2, 3 }, dtype = "float32", value = 1 } }
    local ops = b:ops()
    assert.are.equal(first, ops[1])
    assert.are.equal(op, ops[2])
    assert.are.equal(5, first:attr("dtype"))   -- dtype names become Fluid's enum
  end)

  it("names the op, the problem and the user's line in errors", function()
    local b = oar.Program():global_block()
    local x = b:create_var{ name = "x", shape = { 2 } }
    local msg = errmsg(function() b:append_op{ type = "no_such_op", inputs = { X = { x } } } end)
    assert.matches("unknown op type 'no_such_op'", msg)
    assert.matches("^spec/framework_spec.lua:%d+:", msg)
    msg = errmsg(function()
      b:append_op{ type = "scale", inputs = { X = { x } }, outputs = { Out = { "o" } }, attrs = { scale = "big" } }
    end)
    assert.matches("'scale'", msg)
    assert.matches("number", msg)
    msg = errmsg(function() b:append_op{ type = "scale", inputs = { X = { "ghost" } }, outputs = { Out = { "o" } } } end)
    assert.matches("ghost", msg)
    assert.matches("scale", msg)
    assert.is_false(b:has_var("o"))   -- a failed op leaves the block unchanged
    msg = errmsg(function() b:append_op{ type = "scale", inputs = { X = { 42 } } } end)
    assert.matches("item 1 must be a Variable or a name", msg)
  end)

  it("infers attr types from Lua values, blocks included, and reads them back", function()
    local p = oar.Program()
    local b = p:global_block()
    local x = b:create_var{ name = "x", shape = { 2 } }
    local child = p:create_block()
    p:rollback()
    -- attrs scale does not declare are refused at insertion (src/attr_check.c)
    local msg = errmsg(function()
      b:append_op{ type = "scale", inputs = { X = { x } }, outputs = { Out = { "y0" } }, attrs = { big = 2 ^ 40 } }
    end)
    assert.matches("attr 'big' = 1099511627776 is not an attribute oar knows", msg, 1, true)
    local op = b:append_op{ type = "scale", inputs = { X = { x } }, outputs = { Out = { "y" } } }
    -- set_attr after insertion stores any attr: the types are inferred from Lua values
    for k, v in pairs({ sub_block = child, blocks = { child }, names = { "a", "b" }, fl = { 1.5, 2 },
                        flags = { true, false }, big = 2 ^ 40, n = 3, f = 0.25, s = "text", yes = true }) do
      op:set_attr(k, v)
    end
    assert.are.equal(child, op:attr("sub_block"))
    assert.are.equal(1, op:block_attr_id("sub_block"))
    assert.are.equal(child, op:attr("blocks")[1])
    assert.are.same({ "a", "b" }, op:attr("names"))
    assert.are.same({ 1.5, 2 }, op:attr("fl"))
    assert.are.same({ true, false }, op:attr("flags"))
    assert.are.equal(2 ^ 40, op:attr("big"))
    assert.are.equal("LONG", op:attr_type("big"))
    assert.are.equal("INT", op:attr_type("n"))
    assert.are.equal("FLOAT", op:attr_type("f"))
    assert.are.equal("text", op:attr("s"))
    assert.is_true(op:attr("yes"))
    op:set_attr("scale", 4)
    assert.are.equal(4, op:attr("scale"))
    -- loading refuses the undeclared ones
    assert.has_error(function() oar.Program.parse(p:serialize()) end)
  end)

  it("tags ops with the name scope they were created in", function()
    local p = oar.Program()
    oar.name_scope("encoder", function()
      oar.program_guard(p, function()
        local x = layers.data{ name = "x", shape = { 2 } }
        layers.relu(x)
      end)
    end)
    assert.are.equal("/encoder/", p:global_block():ops()[1]:attr("op_namescope"))
  end)

  it("keeps ops of other programs' variables out", function()
    local x = oar.Program():global_block():create_var{ name = "x", shape = { 1 } }
    local b = oar.Program():global_block()
    assert.matches("another program", errmsg(function()
      b:append_op{ type = "scale", inputs = { X = { x } }, outputs = { Out = { "y" } } }
    end))
  end)
end)

describe("program_guard and unique names", function()
  it("sets the defaults inside and restores them after", function()
    local main0, startup0 = oar.default_main_program(), oar.default_startup_program()
    local main, startup = oar.Program(), oar.Program()
    oar.program_guard(main, startup, function()
      assert.are.equal(main, oar.default_main_program())
      assert.are.equal(startup, oar.default_startup_program())
    end)
    assert.are.equal(main0, oar.default_main_program())
    assert.are.equal(startup0, oar.default_startup_program())
  end)

  it("restores the defaults when fn errors and re-raises the error", function()
    local main0 = oar.default_main_program()
    local ok, err = pcall(oar.program_guard, oar.Program(), nil, function() error("boom") end)
    assert.is_false(ok)
    assert.matches("boom", tostring(err))
    assert.are.equal(main0, oar.default_main_program())
  end)

  it("accepts a nil startup and keeps the current one", function()
    local startup0 = oar.default_startup_program()
    oar.program_guard(oar.Program(), nil, function()
      assert.are.equal(startup0, oar.default_startup_program())
    end)
  end)

  it("rejects bad arguments", function()
    assert.matches("'main' must be a Program", errmsg(oar.program_guard, 1, nil, function() end))
    assert.matches("'fn' must be a function", errmsg(oar.program_guard, oar.Program(), nil, 3))
  end)

  it("generates Fluid-style names", function()
    oar.unique_name.guard(function()
      assert.are.equal("fc_0", oar.unique_name.generate("fc"))
      assert.are.equal("fc_1", oar.unique_name.generate("fc"))
      assert.are.equal("conv_0", oar.unique_name.generate("conv"))
    end)
    local main = fresh(function()
      local x = layers.data{ name = "x", shape = { 4 } }
      layers.fc{ input = x, size = 2 }
    end)
    local gb = main:global_block()
    assert.is_true(gb:has_var("fc_0.w_0"))
    assert.is_true(gb:has_var("fc_0.b_0"))
    assert.is_true(gb:has_var("fc_0.tmp_0"))
  end)
end)

describe("serialization, clone and prune", function()
  local function model()
    return fresh(function()
      local x = layers.data{ name = "x", shape = { 4 } }
      local y = layers.data{ name = "y", shape = { 1 } }
      local h = layers.fc{ input = x, size = 3, act = "relu" }
      local pred = layers.fc{ input = h, size = 1 }
      local loss = layers.mean(layers.square_error_cost{ input = pred, label = y })
      oar.optimizer.SGD{ learning_rate = 0.1 }:minimize(loss)
      return pred, loss
    end)
  end

  it("round-trips through ProgramDesc bytes with an equal listing", function()
    local main = model()
    local bytes = main:serialize()
    assert.is_string(bytes)
    assert.is_true(#bytes > 100)
    local copy = oar.Program.parse(bytes)
    assert.are.equal(tostring(main), tostring(copy))
    assert.matches("Program.parse", errmsg(oar.Program.parse, "\255\255garbage"))
    assert.matches("string", errmsg(oar.Program.parse, nil))
  end)

  it("clones for test without backward and optimize ops", function()
    local main, _, _, loss = model()
    local test = main:clone{ for_test = true }
    local types = {}
    for _, op in ipairs(test:global_block():ops()) do
      types[op.type] = true
      local role = op:attr("op_role") or 0
      assert.are.equal(0, role % 256, op.type .. " has role " .. role)
    end
    assert.is_nil(types.sgd)
    assert.is_nil(types.mul_grad)
    assert.is_true(types.mul)
    assert.is_true(types.mean)
    assert.is_true(test:global_block():has_var(loss.name))
    assert.is_true(oar.is_parameter(test:global_block():var("fc_0.w_0")))
    -- a plain clone keeps everything
    local full = main:clone()
    assert.are.equal(#main:global_block():ops(), #full:global_block():ops())
  end)

  it("prunes to the ops a target needs", function()
    local main, _, pred = model()
    local test = main:clone(true)
    local pruned = test:prune({ pred })
    local types = {}
    for _, op in ipairs(pruned:global_block():ops()) do types[#types + 1] = op.type end
    -- fc(relu) -> fc: mul, add, relu, mul, add; no loss ops
    assert.are.same({ "mul", "elementwise_add", "relu", "mul", "elementwise_add" }, types)
    assert.matches("targets", errmsg(function() test:prune(42) end))
  end)

  it("lists blocks, vars and ops, and draws Graphviz", function()
    local main = model()
    main:create_block()
    main:rollback()
    local text = tostring(main)
    assert.matches("Program %(2 blocks%)", text)
    assert.matches("block 0 %(parent %-1%)", text)
    assert.matches("block 1 %(parent 0%)", text)
    assert.matches("var x : float32 %[%-1, 4%]", text)
    assert.matches("fc_0.w_0 : float32 %[4, 3%] persistable", text)
    assert.matches("mul%(X=%[x%], Y=%[fc_0.w_0%]%)", text)
    local dot = main:to_dot()
    assert.matches("^digraph", dot)
    assert.matches("subgraph cluster_block_0", dot)
    assert.matches("subgraph cluster_block_1", dot)
    assert.matches('label="mul"', dot)
    assert.matches('"b0_var_x" %-> "b0_op_0"', dot)
    assert.matches('"b0_op_0" %-> "b0_var_fc_0.tmp_0"', dot)
  end)
end)

describe("Variable arithmetic", function()
  local A = { { 1, -2, 3 }, { 4, 5, -6 } }
  local B = { { 2, 4, -1 }, { 0.5, 2, 3 } }

  local function elementwise(f)
    local out = {}
    for i = 1, 2 do
      out[i] = {}
      for j = 1, 3 do out[i][j] = f(A[i][j], B[i][j]) end
    end
    return out
  end

  local function near(expect, got)
    for i = 1, #expect do
      for j = 1, #expect[i] do
        assert.is_true(math.abs(expect[i][j] - got[i][j]) < 1e-5,
          string.format("[%d][%d]: expected %g, got %g", i, j, expect[i][j], got[i][j]))
      end
    end
  end

  it("computes + - * / and unary minus with Variables and numbers", function()
    local main, startup, outs = fresh(function()
      local a = layers.data{ name = "a", shape = { 3 } }
      local b = layers.data{ name = "b", shape = { 3 } }
      return { a + b, a - b, a * b, a / b, -a, a * 2, 3 + a, 1 - a, a - 0.5, a / 4, 2 * b, 6 / b }
    end)
    local got = run(main, startup, { a = A, b = B }, outs)
    local expect = {
      elementwise(function(x, y) return x + y end),
      elementwise(function(x, y) return x - y end),
      elementwise(function(x, y) return x * y end),
      elementwise(function(x, y) return x / y end),
      elementwise(function(x) return -x end),
      elementwise(function(x) return x * 2 end),
      elementwise(function(x) return 3 + x end),
      elementwise(function(x) return 1 - x end),
      elementwise(function(x) return x - 0.5 end),
      elementwise(function(x) return x / 4 end),
      elementwise(function(_, y) return 2 * y end),
      elementwise(function(_, y) return 6 / y end),
    }
    for k = 1, #expect do near(expect[k], got[k]:totable()) end
  end)

  it("rejects operands that are neither Variables nor numbers", function()
    fresh(function()
      local a = layers.data{ name = "a", shape = { 3 } }
      assert.matches("expected Variables or numbers", errmsg(function() return a + "x" end))
    end)
  end)
end)
