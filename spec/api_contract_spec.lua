-- The API contract (/work/shared/API.md), item by item: every table row,
-- bullet, layer name, keyword default and code-sample call has at least one
-- assertion here, with expected values worked out by hand in the comments.
local oar = require("oar")
local A = require("spec.helpers.api")
local layers = oar.layers

local THIS_FILE = "api_contract_spec.lua"

-- ---- helpers -------------------------------------------------------------------
local function errmsg(fn, ...)
  local ok, err = pcall(fn, ...)
  assert.is_false(ok, "expected an error")
  return tostring(err)
end

local build = A.build

local run = A.run

-- values of `fetch` after building with fn (which returns the fetch list)
local function eval(fn, feed)
  local main, startup, fetch = build(function() return fn() end)
  if type(fetch) ~= "table" or oar.is_variable(fetch) then fetch = { fetch } end
  local out = run(main, startup, feed or {}, fetch)
  return out, main
end

local function near(expect, got, tol, path)
  tol = tol or 1e-5
  path = path or "value"
  if type(expect) == "table" then
    assert.are.equal("table", type(got), path .. " is not a table")
    assert.are.equal(#expect, #got, "length at " .. path)
    for i = 1, #expect do near(expect[i], got[i], tol, path .. "[" .. i .. "]") end
  else
    assert.is_true(type(got) == "number" and math.abs(expect - got) <= tol * math.max(1, math.abs(expect)),
      string.format("%s: expected %.7g, got %s", path, expect, tostring(got)))
  end
end

local function op_types(block)
  local t = {}
  for _, op in ipairs(block:ops()) do t[#t + 1] = op.type end
  return t
end

local function contains(list, x)
  for _, y in ipairs(list) do if y == x then return true end end
  return false
end

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

-- ==== Layers =========================================================================
local Constant = oar.initializer.Constant
local function const_attr(v) return oar.ParamAttr{ initializer = Constant{ value = v } } end

local X23 = { { 1, 2, 3 }, { 4, 5, 6 } }

describe("API: layers, common keys and data", function()
  it("data{name=, shape=, dtype='float32', lod_level=0, append_batch_size=true}", function()
    local main, _, x, y, z = build(function()
      return layers.data{ name = "x", shape = { 3 } },
             layers.data{ name = "y", shape = { 2, 3 }, dtype = "int64", lod_level = 1, append_batch_size = false },
             layers.data{ name = "z", shape = { -1, 7 } }
    end)
    assert.are.same({ -1, 3 }, x.shape)
    assert.are.equal("float32", x.dtype)
    assert.are.equal(0, x.lod_level)
    assert.are.equal("x", x.name)
    assert.are.same({ 2, 3 }, y.shape)
    assert.are.equal("int64", y.dtype)
    assert.are.equal(1, y.lod_level)
    assert.are.same({ -1, 7 }, z.shape)       -- a -1 already there: no extra batch dim
    assert.are.equal(main:global_block(), x.block)
  end)

  it("name, param_attr, bias_attr=false and act are common keys", function()
    local main, _, h, h2 = build(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      return layers.fc{ input = x, size = 2, name = "myfc", param_attr = const_attr(0.5), act = "relu" },
             layers.fc{ input = x, size = 2, bias_attr = false, act = "softmax" }
    end)
    local params = main:global_block():all_parameters()
    local names = {}
    for _, p in ipairs(params) do names[#names + 1] = p.name end
    assert.are.equal(3, #params)   -- myfc's weight and bias, the second fc's weight only
    local prefixed = 0
    for _, n in ipairs(names) do if n:find("^myfc") then prefixed = prefixed + 1 end end
    assert.are.equal(2, prefixed)
    local types = op_types(main:global_block())
    assert.is_true(contains(types, "relu"))
    assert.is_true(contains(types, "softmax"))
    -- x {{1,-2,3}}: 0.5*(1-2+3) = 1 per unit (bias 0) -> relu 1; softmax of two equal = 0.5 each
    local out = eval(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      return { layers.fc{ input = x, size = 2, param_attr = const_attr(0.5), act = "relu" },
               layers.fc{ input = x, size = 2, bias_attr = false, param_attr = const_attr(0.5), act = "softmax" } }
    end, { x = { { 1, -2, 3 } } })
    near({ { 1, 1 } }, out[1]:totable())
    near({ { 0.5, 0.5 } }, out[2]:totable())
    assert.are.equal("relu", main:global_block():ops()[3].type)
    assert.are.same({ h.name }, main:global_block():ops()[3]:output("Out"))
    assert.truthy(h2.name:find("^fc"))
  end)
end)

describe("API: layers fc, embedding, conv2d, pool2d, norms, dropout", function()
  it("fc{input=, size=, num_flatten_dims=1, act=}", function()
    local main, _, h, h3 = build(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      local x3 = layers.data{ name = "x3", shape = { 2, 3 } }
      return layers.fc{ input = x, size = 4 }, layers.fc{ input = x3, size = 5, num_flatten_dims = 2 }
    end)
    assert.are.same({ -1, 4 }, h.shape)
    assert.are.same({ -1, 2, 5 }, h3.shape)
    local mul = main:global_block():ops()[1]
    assert.are.equal("mul", mul.type)
    assert.are.equal(1, mul:attr("x_num_col_dims"))
    -- [2,3] rows times a 3x2 weight of 0.5 plus a bias of 1: 0.5*rowsum + 1
    local out = eval(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      return layers.fc{ input = x, size = 2, param_attr = const_attr(0.5), bias_attr = const_attr(1) }
    end, { x = X23 })
    near({ { 4, 4 }, { 8.5, 8.5 } }, out[1]:totable())
  end)

  it("fc with a list input (one weight each, summed) and a list param_attr", function()
    local out, main = eval(function()
      local a = layers.data{ name = "a", shape = { 2 } }
      local b = layers.data{ name = "b", shape = { 3 } }
      return layers.fc{ input = { a, b }, size = 1, param_attr = { const_attr(1), const_attr(2) }, bias_attr = false }
    end, { a = { { 1, 2 } }, b = { { 1, 1, 1 } } })
    -- 1*(1+2) + 2*(1+1+1) = 9
    near({ { 9 } }, out[1]:totable())
    local ws = main:global_block():all_parameters()
    assert.are.equal(2, #ws)
    local shapes = {}
    for _, w in ipairs(ws) do shapes[#shapes + 1] = table.concat(w.shape, "x") end
    table.sort(shapes)
    assert.are.same({ "2x1", "3x1" }, shapes)
    assert.is_true(contains(op_types(main:global_block()), "sum"))
    -- a single param_attr applies to every input
    local out2 = eval(function()
      local a = layers.data{ name = "a", shape = { 2 } }
      local b = layers.data{ name = "b", shape = { 3 } }
      return layers.fc{ input = { a, b }, size = 1, param_attr = const_attr(1), bias_attr = false }
    end, { a = { { 1, 2 } }, b = { { 1, 1, 1 } } })
    near({ { 6 } }, out2[1]:totable())
  end)

  it("embedding{input=, size={vocab, dim}, is_sparse=false, padding_idx=}", function()
    local out, main = eval(function()
      local ids = layers.data{ name = "ids", shape = { 1 }, dtype = "int64" }
      local e = layers.embedding{ input = ids, size = { 4, 2 }, padding_idx = 1, param_attr = const_attr(3) }
      local e2 = layers.embedding{ input = ids, size = { 4, 2 }, padding_idx = -1, param_attr = const_attr(3) }
      return { e, e2 }
    end, { ids = oar.Tensor({ { 0 }, { 1 }, { 3 } }, "int64") })
    near({ { 3, 3 }, { 0, 0 }, { 3, 3 } }, out[1]:totable())   -- row 1 is padding: zeros
    near({ { 3, 3 }, { 3, 3 }, { 0, 0 } }, out[2]:totable())   -- -1 means vocab - 1 = 3
    local op = main:global_block():ops()[1]
    assert.are.equal("lookup_table", op.type)
    assert.is_false(op:attr("is_sparse"))
    assert.are.equal(1, op:attr("padding_idx"))
    local w = main:global_block():var(op:input("W")[1])
    assert.are.same({ 4, 2 }, w.shape)
  end)

  it("conv2d{... stride=1, padding=0, dilation=1, groups=1} with groups and dilation", function()
    -- x[c][i][j] = 16c + 4i + j; groups=2 keeps channels apart; a 2x2 filter of ones with
    -- dilation 2 sums x[i][j] + x[i][j+2] + x[i+2][j] + x[i+2][j+2] = 4*x[i][j] + 20
    local vals = {}
    for c = 0, 1 do
      vals[c + 1] = {}
      for i = 0, 3 do
        vals[c + 1][i + 1] = {}
        for j = 0, 3 do vals[c + 1][i + 1][j + 1] = 16 * c + 4 * i + j end
      end
    end
    local out, main = eval(function()
      local x = layers.data{ name = "img", shape = { 2, 4, 4 } }
      local y = layers.conv2d{ input = x, num_filters = 2, filter_size = 2, dilation = 2, groups = 2,
                               param_attr = const_attr(1), bias_attr = false }
      local z = layers.conv2d{ input = x, num_filters = 3, filter_size = 3, act = "relu" }
      return { y, z }
    end, { img = { vals } })
    near({ { { { 20, 24 }, { 36, 40 } }, { { 84, 88 }, { 100, 104 } } } }, out[1]:totable())
    assert.are.same({ 1, 3, 2, 2 }, out[2]:shape())
    local conv = main:global_block():ops()[1]
    assert.are.equal(2, conv:attr("groups"))
    assert.are.same({ 2, 2 }, conv:attr("dilations"))
    assert.are.same({ 1, 1 }, conv:attr("strides"))
    assert.are.same({ 0, 0 }, conv:attr("paddings"))
    local w = main:global_block():var(conv:input("Filter")[1])
    assert.are.same({ 2, 1, 2, 2 }, w.shape)
    local defaults
    for _, op in ipairs(main:global_block():ops()) do
      if (op.type == "conv2d" or op.type == "depthwise_conv2d") and op ~= conv then defaults = op end
    end
    assert.are.equal(1, defaults:attr("groups"))
    assert.are.same({ 1, 1 }, defaults:attr("dilations"))
  end)

  it("pool2d{pool_size=, pool_type='max', pool_stride=1, pool_padding=0, global_pooling=false}", function()
    local vals = {}
    for c = 0, 1 do
      vals[c + 1] = {}
      for i = 0, 3 do
        vals[c + 1][i + 1] = {}
        for j = 0, 3 do vals[c + 1][i + 1][j + 1] = 16 * c + 4 * i + j end
      end
    end
    local out = eval(function()
      local x = layers.data{ name = "img", shape = { 2, 4, 4 } }
      return { layers.pool2d{ input = x, pool_size = 2 },
               layers.pool2d{ input = x, pool_size = 2, pool_stride = 2, pool_type = "max" },
               layers.pool2d{ input = x, pool_type = "avg", global_pooling = true },
               layers.pool2d{ input = x, pool_size = 2, pool_stride = 2, pool_padding = 1, pool_type = "max" } }
    end, { img = { vals } })
    assert.are.same({ 1, 2, 3, 3 }, out[1]:shape())      -- stride 1, no padding: 4 - 2 + 1
    near(5, out[1]:get(1, 1, 1, 1))
    near({ { { { 5, 7 }, { 13, 15 } }, { { 21, 23 }, { 29, 31 } } } }, out[2]:totable())
    near({ { { { 7.5 } }, { { 23.5 } } } }, out[3]:totable())   -- channel means
    assert.are.same({ 1, 2, 3, 3 }, out[4]:shape())       -- (4 + 2 - 2) / 2 + 1
    near(0, out[4]:get(1, 1, 1, 1))
    near(15, out[4]:get(1, 1, 3, 3))
  end)

  it("batch_norm{input=, act=, is_test=false, momentum=0.9, epsilon=1e-5}", function()
    local out, main = eval(function()
      local x = layers.data{ name = "x", shape = { 2 } }
      return { layers.batch_norm{ input = x }, layers.batch_norm{ input = x, is_test = true },
               layers.batch_norm{ input = x, act = "relu" } }
    end, { x = { { 1, 10 }, { 3, 30 } } })
    -- training: per-channel batch stats: ch0 mean 2 var 1, ch1 mean 20 var 100
    near({ { -1, -1 }, { 1, 1 } }, out[1]:totable(), 1e-4)
    -- test: moving mean 0, variance 1: x / sqrt(1 + 1e-5)
    near({ { 1, 10 }, { 3, 30 } }, out[2]:totable(), 1e-4)
    near({ { 0, 0 }, { 1, 1 } }, out[3]:totable(), 1e-4)
    local bn = main:global_block():ops()[1]
    assert.are.equal("batch_norm", bn.type)
    near(0.9, bn:attr("momentum"))
    near(1e-5, bn:attr("epsilon"))
    assert.is_false(bn:attr("is_test"))
    assert.is_true(main:global_block():ops()[2]:attr("is_test"))
  end)

  it("layer_norm normalizes each row", function()
    local out = eval(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      return layers.layer_norm{ input = x }
    end, { x = { { 1, 2, 3 }, { 2, 4, 6 } } })
    local k = 1 / math.sqrt(2 / 3 + 1e-5)            -- row 1: mean 2, var 2/3
    local k2 = 2 / math.sqrt(8 / 3 + 1e-5)           -- row 2: mean 4, var 8/3, deviations -2 0 2
    near({ { -k, 0, k }, { -k2, 0, k2 } }, out[1]:totable(), 1e-4)
  end)

  it("dropout{x=, dropout_prob=, is_test=false, seed=}", function()
    local ones = {}
    for i = 1, 4 do ones[i] = { 2, 2, 2, 2, 2, 2, 2, 2 } end
    local out, main = eval(function()
      local x = layers.data{ name = "x", shape = { 8 } }
      return { layers.dropout{ x = x, dropout_prob = 0.25, is_test = true },
               layers.dropout{ x = x, dropout_prob = 0.5, seed = 7 },
               layers.dropout{ x = x, dropout_prob = 0.5, seed = 7 },
               layers.dropout{ x = x, dropout_prob = 0.0 } }
    end, { x = ones })
    near({ 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5 }, out[1]:totable()[1])   -- 2 * (1 - 0.25)
    local a, b = out[2]:totable(), out[3]:totable()
    local zeros, kept = 0, 0
    for i = 1, 4 do
      for j = 1, 8 do
        assert.are.equal(a[i][j], b[i][j])            -- same seed, same mask
        if a[i][j] == 0 then zeros = zeros + 1 else near(2, a[i][j]); kept = kept + 1 end
      end
    end
    assert.is_true(zeros > 0 and kept > 0)
    near(ones, out[4]:totable())
    local d = main:global_block():ops()[2]
    assert.are.equal("dropout", d.type)
    assert.are.equal(7, d:attr("seed"))
    assert.is_true(d:attr("fix_seed"))
    assert.is_false(d:attr("is_test"))
  end)
end)

describe("API: activations, reductions, arithmetic layers", function()
  it("activations take the Variable or {x=}", function()
    local s = function(v) return 1 / (1 + math.exp(-v)) end
    local e1, e5, e2 = math.exp(-1), math.exp(0.5), math.exp(2)
    local sum = e1 + e5 + e2
    local expect = {
      relu = { 0, 0.5, 2 }, sigmoid = { s(-1), s(0.5), s(2) },
      tanh = { math.tanh(-1), math.tanh(0.5), math.tanh(2) },
      softmax = { e1 / sum, e5 / sum, e2 / sum }, exp = { e1, e5, e2 }, abs = { 1, 0.5, 2 },
      leaky_relu = { -0.02, 0.5, 2 }, elu = { e1 - 1, 0.5, 2 },
      -- x * Phi(x): Phi(-1) = 0.1586553, Phi(0.5) = 0.6914625, Phi(2) = 0.9772499
      gelu = { -0.1586553, 0.3457312, 1.9544997 },
    }
    local positive = { log = { math.log(0.25), 0, math.log(4) }, sqrt = { 0.5, 1, 2 } }
    local names = { "relu", "sigmoid", "tanh", "softmax", "exp", "log", "sqrt", "abs", "leaky_relu", "elu", "gelu" }
    local out = eval(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      local p = layers.data{ name = "p", shape = { 3 } }
      local fetch = {}
      for _, n in ipairs(names) do
        local input = positive[n] and p or x
        fetch[#fetch + 1] = layers[n](input)
        fetch[#fetch + 1] = layers[n]{ x = input }
      end
      return fetch
    end, { x = { { -1, 0.5, 2 } }, p = { { 0.25, 1, 4 } } })
    for i, n in ipairs(names) do
      local want = expect[n] or positive[n]
      near({ want }, out[2 * i - 1]:totable(), n == "gelu" and 1e-3 or 1e-5, n .. "(v)")
      near({ want }, out[2 * i]:totable(), n == "gelu" and 1e-3 or 1e-5, n .. "{x=}")
    end
    local out2 = eval(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      return layers.leaky_relu{ x = x, alpha = 0.1 }
    end, { x = { { -1, 0.5, 2 } } })
    near({ { -0.1, 0.5, 2 } }, out2[1]:totable())
  end)

  it("mean(v) positional; reduce_sum{input=, dim=, keep_dim=}, reduce_mean, reduce_max", function()
    local out = eval(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      return { layers.mean(x), layers.mean{ x = x },
               layers.reduce_sum{ input = x, dim = 1 }, layers.reduce_sum{ input = x, dim = 0, keep_dim = true },
               layers.reduce_sum{ input = x }, layers.reduce_sum(x),
               layers.reduce_mean{ input = x, dim = 1 }, layers.reduce_max{ input = x, dim = 0 },
               layers.reduce_sum{ input = x, dim = { 0, 1 }, keep_dim = true } }
    end, { x = X23 })
    near({ 3.5 }, out[1]:totable())
    assert.are.same({ 1 }, out[1]:shape())
    near({ 3.5 }, out[2]:totable())
    near({ 6, 15 }, out[3]:totable())
    assert.are.same({ 2 }, out[3]:shape())
    near({ { 5, 7, 9 } }, out[4]:totable())
    assert.are.same({ 1, 3 }, out[4]:shape())
    near({ 21 }, out[5]:totable())
    near({ 21 }, out[6]:totable())
    near({ 2, 5 }, out[7]:totable())
    near({ 4, 5, 6 }, out[8]:totable())
    near({ { 21 } }, out[9]:totable())
  end)

  it("matmul{x=, y=, transpose_x=, transpose_y=}", function()
    local out = eval(function()
      local x = layers.data{ name = "x", shape = { 2, 3 }, append_batch_size = false }
      return { layers.matmul{ x = x, y = x, transpose_y = true }, layers.matmul{ x = x, y = x, transpose_x = true } }
    end, { x = X23 })
    near({ { 14, 32 }, { 32, 77 } }, out[1]:totable())
    near({ { 17, 22, 27 }, { 22, 29, 36 }, { 27, 36, 45 } }, out[2]:totable())
  end)

  it("elementwise_add/sub/mul/div/max/min/pow{x=, y=, axis=-1}", function()
    local out = eval(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      local y = layers.data{ name = "y", shape = { 3 }, append_batch_size = false }
      local z = layers.data{ name = "z", shape = { 3 }, append_batch_size = false }
      local r = layers.data{ name = "r", shape = { 2 }, append_batch_size = false }
      return { layers.elementwise_add{ x = x, y = y }, layers.elementwise_sub{ x = x, y = y },
               layers.elementwise_mul{ x = x, y = y }, layers.elementwise_div{ x = x, y = y },
               layers.elementwise_max{ x = x, y = z }, layers.elementwise_min{ x = x, y = z },
               layers.elementwise_pow{ x = x, y = layers.scale{ x = y, scale = 0.5 } },
               layers.elementwise_add{ x = x, y = r, axis = 0 } }
    end, { x = X23, y = { 1, 2, 3 }, z = { 3, 2, 1 }, r = { 10, 20 } })
    near({ { 2, 4, 6 }, { 5, 7, 9 } }, out[1]:totable())
    near({ { 0, 0, 0 }, { 3, 3, 3 } }, out[2]:totable())
    near({ { 1, 4, 9 }, { 4, 10, 18 } }, out[3]:totable())
    near({ { 1, 1, 1 }, { 4, 2.5, 2 } }, out[4]:totable())
    near({ { 3, 2, 3 }, { 4, 5, 6 } }, out[5]:totable())
    near({ { 1, 2, 1 }, { 3, 2, 1 } }, out[6]:totable())
    near({ { 1, 2, 3 ^ 1.5 }, { 2, 5 ^ 1, 6 ^ 1.5 } }, out[7]:totable())   -- exponents 0.5, 1, 1.5
    near({ { 11, 12, 13 }, { 24, 25, 26 } }, out[8]:totable())
  end)

  it("scale{x=, scale=, bias=} and sums{input={...}}", function()
    local out = eval(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      return { layers.scale{ x = x, scale = 2, bias = 1 }, layers.scale(x),
               layers.sums{ input = { x, x, layers.scale{ x = x, scale = 3 } } } }
    end, { x = X23 })
    near({ { 3, 5, 7 }, { 9, 11, 13 } }, out[1]:totable())
    near(X23, out[2]:totable())
    near({ { 5, 10, 15 }, { 20, 25, 30 } }, out[3]:totable())
  end)
end)

describe("API: shape, type and index layers", function()
  it("reshape{x=, shape=}, transpose{x=, perm=}, concat{input=, axis=}", function()
    local out, main = eval(function()
      local x = layers.data{ name = "x", shape = { 2, 3 }, append_batch_size = false }
      local r = layers.reshape{ x = x, shape = { 3, 2 } }
      local r2 = layers.reshape{ x = x, shape = { -1 } }
      return { r, r2, layers.transpose{ x = x, perm = { 1, 0 } }, layers.concat{ input = { x, x }, axis = 1 },
               layers.concat{ input = { x, x } } }
    end, { x = X23 })
    near({ { 1, 2 }, { 3, 4 }, { 5, 6 } }, out[1]:totable())
    near({ 1, 2, 3, 4, 5, 6 }, out[2]:totable())
    near({ { 1, 4 }, { 2, 5 }, { 3, 6 } }, out[3]:totable())
    near({ { 1, 2, 3, 1, 2, 3 }, { 4, 5, 6, 4, 5, 6 } }, out[4]:totable())
    near({ { 1, 2, 3 }, { 4, 5, 6 }, { 1, 2, 3 }, { 4, 5, 6 } }, out[5]:totable())   -- axis defaults to 0
    assert.truthy(main)
  end)

  it("split{input=, num_or_sections=, dim=} returns a list", function()
    local parts, parts2
    local main, startup = build(function()
      local x = layers.data{ name = "x", shape = { 2, 3 }, append_batch_size = false }
      parts = layers.split{ input = x, num_or_sections = 3, dim = 1 }
      parts2 = layers.split{ input = x, num_or_sections = { 1, 2 }, dim = 1 }
    end)
    assert.are.equal("table", type(parts))
    assert.are.equal(3, #parts)
    assert.are.equal(2, #parts2)
    for _, p in ipairs(parts) do assert.is_true(oar.is_variable(p)) end
    assert.are.same({ 2, 1 }, parts[1].shape)
    assert.are.same({ 2, 2 }, parts2[2].shape)
    local out = run(main, startup, { x = X23 }, { parts[1], parts[2], parts[3], parts2[1], parts2[2] })
    near({ { 1 }, { 4 } }, out[1]:totable())
    near({ { 2 }, { 5 } }, out[2]:totable())
    near({ { 3 }, { 6 } }, out[3]:totable())
    near({ { 1 }, { 4 } }, out[4]:totable())
    near({ { 2, 3 }, { 5, 6 } }, out[5]:totable())
  end)

  it("cast{x=, dtype=}, fill_constant{shape=, dtype=, value=}", function()
    local out = eval(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      local c = layers.cast{ x = x, dtype = "int32" }
      local d = layers.cast{ x = c, dtype = "float64" }
      return { c, d, layers.fill_constant{ shape = { 2, 2 }, dtype = "int64", value = 7 },
               layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 0.25 } }
    end, { x = { { 1, -2, 3 } } })
    assert.are.equal("int32", out[1]:dtype())
    assert.are.same({ { 1, -2, 3 } }, out[1]:totable())
    assert.are.equal("float64", out[2]:dtype())
    assert.are.same({ { 1, -2, 3 } }, out[2]:totable())
    assert.are.equal("int64", out[3]:dtype())
    assert.are.same({ { 7, 7 }, { 7, 7 } }, out[3]:totable())
    near({ 0.25 }, out[4]:totable())
  end)

  it("assign(input, output): output optional", function()
    local fresh, target, ret
    local main, startup = build(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      fresh = layers.assign(x)
      target = layers.create_tensor{ dtype = "float32" }
      ret = layers.assign(layers.scale{ x = x, scale = 2 }, target)
    end)
    assert.are_not.equal(fresh.name, "x")
    assert.are.equal(target, ret)
    local out = run(main, startup, { x = X23 }, { fresh, target })
    near(X23, out[1]:totable())
    near({ { 2, 4, 6 }, { 8, 10, 12 } }, out[2]:totable())
    -- a table of numbers is a constant
    local c = eval(function() return layers.assign({ { 1, 2 }, { 3, 4 } }) end)
    near({ { 1, 2 }, { 3, 4 } }, c[1]:totable())
  end)

  it("argmax{x=, axis=} and topk{input=, k=} (values AND indices)", function()
    local out = eval(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      local v, i = layers.topk{ input = x, k = 2 }
      return { layers.argmax{ x = x, axis = 1 }, layers.argmax{ x = x, axis = 0 }, v, i }
    end, { x = { { 1, 5, 3 }, { 7, 2, 9 } } })
    assert.are.equal("int64", out[1]:dtype())
    assert.are.same({ 1, 2 }, out[1]:totable())    -- 0-based positions of 5 and 9
    assert.are.same({ 1, 0, 1 }, out[2]:totable())
    near({ { 5, 3 }, { 9, 7 } }, out[3]:totable())
    assert.are.equal("int64", out[4]:dtype())
    assert.are.same({ { 1, 2 }, { 2, 0 } }, out[4]:totable())
  end)
end)

describe("API: losses and metrics", function()
  it("cross_entropy, softmax_with_cross_entropy, square_error_cost, sigmoid_cross_entropy_with_logits", function()
    local out = eval(function()
      local p = layers.data{ name = "p", shape = { 2 } }
      local lbl = layers.data{ name = "lbl", shape = { 1 }, dtype = "int64" }
      local logits = layers.data{ name = "logits", shape = { 2 } }
      local a = layers.data{ name = "a", shape = { 1 } }
      local b = layers.data{ name = "b", shape = { 1 } }
      local z = layers.data{ name = "z", shape = { 1 } }
      return { layers.cross_entropy{ input = p, label = lbl },
               layers.softmax_with_cross_entropy{ logits = logits, label = lbl },
               layers.square_error_cost{ input = a, label = b },
               layers.sigmoid_cross_entropy_with_logits{ x = a, label = z } }
    end, { p = { { 0.2, 0.8 }, { 0.6, 0.4 } }, lbl = oar.Tensor({ { 1 }, { 0 } }, "int64"),
           logits = { { 0, math.log(3) }, { 0, math.log(3) } },
           a = { { 0 }, { -1 } }, b = { { 3 }, { 2 } }, z = { { 1 }, { 0.5 } } })
    near({ { -math.log(0.8) }, { -math.log(0.6) } }, out[1]:totable())
    near({ { -math.log(0.75) }, { -math.log(0.25) } }, out[2]:totable())   -- softmax {1/4, 3/4}
    near({ { 9 }, { 9 } }, out[3]:totable())
    -- max(x,0) - x*z + log(1 + e^-|x|)
    near({ { math.log(2) }, { 0.5 + math.log(1 + math.exp(-1)) } }, out[4]:totable())
  end)

  it("accuracy{input=, label=, k=1}", function()
    local out = eval(function()
      local p = layers.data{ name = "p", shape = { 2 } }
      local lbl = layers.data{ name = "lbl", shape = { 1 }, dtype = "int64" }
      return { layers.accuracy{ input = p, label = lbl }, layers.accuracy{ input = p, label = lbl, k = 2 } }
    end, { p = { { 0.1, 0.9 }, { 0.8, 0.2 }, { 0.3, 0.7 } }, lbl = oar.Tensor({ { 1 }, { 1 }, { 0 } }, "int64") })
    near({ 1 / 3 }, out[1]:totable())
    near({ 1 }, out[2]:totable())
  end)
end)

describe("API: comparisons and logic", function()
  it("less_than/greater_than/equal broadcast like elementwise ops and write into cond", function()
    local cond, ret
    local main, startup, lt, gt, eq = build(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      local y = layers.data{ name = "y", shape = { 3 }, append_batch_size = false }
      cond = layers.create_tensor{ dtype = "bool" }
      ret = layers.less_than{ x = x, y = y, cond = cond }
      return layers.less_than{ x = x, y = y }, layers.greater_than{ x = x, y = y }, layers.equal{ x = x, y = y }
    end)
    assert.are.equal(cond, ret)
    assert.are.equal("bool", lt.dtype)
    local out = run(main, startup, { x = { { 1, 5, 3 }, { 7, 2, 9 } }, y = { 3, 3, 3 } }, { lt, gt, eq, cond })
    assert.are.same({ { true, false, false }, { false, true, false } }, out[1]:totable())
    assert.are.same({ { false, true, false }, { true, false, true } }, out[2]:totable())
    assert.are.same({ { false, false, true }, { false, false, false } }, out[3]:totable())
    assert.are.same(out[1]:totable(), out[4]:totable())
  end)

  it("logical_and/or/not", function()
    local out = eval(function()
      local a = layers.data{ name = "a", shape = { 4 }, dtype = "bool", append_batch_size = false }
      local b = layers.data{ name = "b", shape = { 4 }, dtype = "bool", append_batch_size = false }
      return { layers.logical_and{ x = a, y = b }, layers.logical_or{ x = a, y = b }, layers.logical_not{ x = a },
               layers.logical_not(a) }
    end, { a = oar.Tensor({ true, false, true, false }, "bool"), b = oar.Tensor({ true, true, false, false }, "bool") })
    assert.are.same({ true, false, false, false }, out[1]:totable())
    assert.are.same({ true, true, true, false }, out[2]:totable())
    assert.are.same({ false, true, false, true }, out[3]:totable())
    assert.are.same({ false, true, false, true }, out[4]:totable())
  end)
end)

describe("API: sequence layers (LoD)", function()
  local function seq_tensor(rows, lod)
    local t = oar.Tensor(rows, "float32")
    t:set_lod(lod)
    return t
  end

  it("sequence_pool, sequence_first_step, sequence_last_step (positional), sequence_softmax, sequence_expand", function()
    local rows = { { 1, 2 }, { 3, 4 }, { 5, 6 }, { 7, 8 }, { 9, 10 } }
    local out = eval(function()
      local x = layers.data{ name = "x", shape = { 2 }, lod_level = 1 }
      local s = layers.data{ name = "s", shape = { 1 }, lod_level = 1 }
      local e = layers.data{ name = "e", shape = { 1 } }
      return { layers.sequence_pool{ input = x, pool_type = "sum" }, layers.sequence_pool{ input = x, pool_type = "average" },
               layers.sequence_pool{ input = x, pool_type = "max" }, layers.sequence_first_step(x),
               layers.sequence_last_step(x), layers.sequence_softmax(s), layers.sequence_expand{ x = e, y = s } }
    end, { x = seq_tensor(rows, { { 0, 2, 5 } }), s = seq_tensor({ { 0 }, { 0 }, { 0 }, { 0 }, { math.log(2) } }, { { 0, 2, 5 } }),
           e = { { 1 }, { 2 } } })
    near({ { 4, 6 }, { 21, 24 } }, out[1]:totable())
    near({ { 2, 3 }, { 7, 8 } }, out[2]:totable())
    near({ { 3, 4 }, { 9, 10 } }, out[3]:totable())
    near({ { 1, 2 }, { 5, 6 } }, out[4]:totable())
    near({ { 3, 4 }, { 9, 10 } }, out[5]:totable())
    near({ { 0.5 }, { 0.5 }, { 0.25 }, { 0.25 }, { 0.5 } }, out[6]:totable())
    near({ { 1 }, { 1 }, { 2 }, { 2 }, { 2 } }, out[7]:totable())   -- x had no LoD: a plain tensor, like Fluid
  end)

  it("dynamic_lstm{input=, size=} and dynamic_gru{input=, size=}", function()
    -- zero weights and biases: every gate sees its input 1, so i = f = o = u = r = s = sigmoid(1)
    -- and the candidate is tanh(1)
    local s, cand = 1 / (1 + math.exp(-1)), math.tanh(1)
    local c1 = s * cand
    local h1 = s * math.tanh(c1)
    local c2 = s * c1 + s * cand
    local h2 = s * math.tanh(c2)
    local g1 = s * cand                    -- GRU (origin_mode=false): h = (1-u) h_prev + u c
    local g2 = (1 - s) * g1 + s * cand
    local out = eval(function()
      local x4 = layers.data{ name = "x4", shape = { 4 }, lod_level = 1 }
      local x3 = layers.data{ name = "x3", shape = { 3 }, lod_level = 1 }
      local h, c = layers.dynamic_lstm{ input = x4, size = 4, param_attr = const_attr(0), bias_attr = const_attr(0) }
      local g = layers.dynamic_gru{ input = x3, size = 1, param_attr = const_attr(0), bias_attr = const_attr(0) }
      return { h, c, g }
    end, { x4 = seq_tensor({ { 1, 1, 1, 1 }, { 1, 1, 1, 1 }, { 1, 1, 1, 1 } }, { { 0, 2, 3 } }),
           x3 = seq_tensor({ { 1, 1, 1 }, { 1, 1, 1 }, { 1, 1, 1 } }, { { 0, 2, 3 } }) })
    near({ { h1 }, { h2 }, { h1 } }, out[1]:totable(), 1e-4)
    near({ { c1 }, { c2 }, { c1 } }, out[2]:totable(), 1e-4)
    assert.are.same({ { 0, 2, 3 } }, out[1]:lod())
    near({ { g1 }, { g2 }, { g1 } }, out[3]:totable(), 1e-4)
  end)
end)

describe("API: arrays and counters", function()
  it("create_array, array_write{x=, i=, array=}, array_read{array=, i=}, array_length, increment{x=, value=1}", function()
    local out = eval(function()
      local a = layers.fill_constant{ shape = { 2 }, dtype = "float32", value = 1.5 }
      local b = layers.fill_constant{ shape = { 2 }, dtype = "float32", value = -4 }
      local i = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 0 }
      local zero = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 0 }
      local arr = layers.create_array("float32")
      assert.are.equal("lod_tensor_array", arr.type)
      local ret = layers.array_write{ x = a, i = i, array = arr }
      assert.are.equal(arr, ret)
      layers.increment{ x = i, value = 1 }
      layers.array_write{ x = b, i = i, array = arr }
      local f = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 5 }
      local f2 = layers.increment{ x = f }                 -- value defaults to 1
      local f3 = layers.increment{ x = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 5 }, value = 2.5 }
      return { layers.array_length(arr), layers.array_read{ array = arr, i = zero }, layers.array_read{ array = arr, i = i },
               i, f2, f3 }
    end)
    assert.are.same({ 2 }, out[1]:totable())
    near({ 1.5, 1.5 }, out[2]:totable())
    near({ -4, -4 }, out[3]:totable())
    assert.are.same({ 1 }, out[4]:totable())
    near({ 6 }, out[5]:totable())
    near({ 7.5 }, out[6]:totable())
  end)
end)

describe("API: more layer keywords and forms", function()
  it("a layer with one input also takes it positionally", function()
    local out = eval(function()
      local x = layers.data{ name = "x", shape = { 2 } }
      local f = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 5 }
      return { layers.reduce_mean(x), layers.reduce_max(x), layers.softmax(x), layers.batch_norm(x),
               layers.layer_norm(x), layers.increment(f), layers.dropout(x, 0.0), layers.topk(x, 1),
               layers.cast(x, "float64"), layers.reshape(x, { 4 }), layers.transpose(x, { 1, 0 }) }
    end, { x = { { 1, 3 }, { 5, 7 } } })
    near({ 4 }, out[1]:totable())
    near({ 7 }, out[2]:totable())
    local lo, hi = 1 / (1 + math.exp(2)), math.exp(2) / (1 + math.exp(2))   -- rows differ by 2
    near({ { lo, hi }, { lo, hi } }, out[3]:totable())
    near({ { -1, -1 }, { 1, 1 } }, out[4]:totable(), 1e-4)
    near({ { -1, 1 }, { -1, 1 } }, out[5]:totable(), 1e-4)
    near({ 6 }, out[6]:totable())
    near({ { 1, 3 }, { 5, 7 } }, out[7]:totable())
    near({ { 3 }, { 7 } }, out[8]:totable())
    assert.are.equal("float64", out[9]:dtype())
    near({ 1, 3, 5, 7 }, out[10]:totable())
    near({ { 1, 5 }, { 3, 7 } }, out[11]:totable())
  end)

  it("batch_norm's momentum updates the moving statistics; conv2d stride and padding", function()
    local main, startup, y = build(function()
      local x = layers.data{ name = "x", shape = { 2 } }
      return layers.batch_norm{ input = x, moving_mean_name = "bn_mean", moving_variance_name = "bn_var" }
    end)
    local _, scope = run(main, startup, { x = { { 1, 10 }, { 3, 30 } } }, { y })
    -- moving = 0.9 * moving + 0.1 * batch: mean 0.1 * {2, 20}; variance 0.9 * 1 + 0.1 * {1, 100}
    near({ 0.2, 2 }, scope:find_var("bn_mean"):get_tensor():totable(), 1e-4)
    near({ 1.0, 10.9 }, scope:find_var("bn_var"):get_tensor():totable(), 1e-3)
    local out = eval(function()
      local img = layers.data{ name = "img", shape = { 1, 4, 4 } }
      return layers.conv2d{ input = img, num_filters = 1, filter_size = 3, stride = 2, padding = 1,
                            param_attr = const_attr(1), bias_attr = false }
    end, { img = { { { { 1, 1, 1, 1 }, { 1, 1, 1, 1 }, { 1, 1, 1, 1 }, { 1, 1, 1, 1 } } } } })
    -- (4 + 2 - 3) / 2 + 1 = 2; the top-left window covers 2x2 ones, the others 2x3, 3x2, 3x3
    near({ { { { 4, 6 }, { 6, 9 } } } }, out[1]:totable())
  end)

  it("comparisons write into cond (greater_than, equal)", function()
    local c1, c2, r1, r2
    local main, startup = build(function()
      local x = layers.data{ name = "x", shape = { 2 } }
      local y = layers.data{ name = "y", shape = { 2 } }
      c1 = layers.create_tensor{ dtype = "bool" }
      c2 = layers.create_tensor{ dtype = "bool" }
      r1 = layers.greater_than{ x = x, y = y, cond = c1 }
      r2 = layers.equal{ x = x, y = y, cond = c2 }
    end)
    assert.are.equal(c1, r1)
    assert.are.equal(c2, r2)
    local out = run(main, startup, { x = { { 1, 2 } }, y = { { 1, 1 } } }, { c1, c2 })
    assert.are.same({ { false, true } }, out[1]:totable())
    assert.are.same({ { true, false } }, out[2]:totable())
  end)

  it("embedding{is_sparse=true} trains", function()
    local main, startup = build(function()
      local ids = layers.data{ name = "ids", shape = { 1 }, dtype = "int64" }
      local e = layers.embedding{ input = ids, size = { 4, 2 }, is_sparse = true,
                                  param_attr = oar.ParamAttr{ name = "E", initializer = Constant{ value = 1 } } }
      oar.optimizer.SGD{ learning_rate = 1 }:minimize(layers.mean(e))
    end)
    local _, scope = run(main, startup, { ids = oar.Tensor({ { 0 }, { 2 }, { 2 } }, "int64") }, {})
    -- mean over 6 values: each looked-up value gets 1/6, row 2 twice
    near({ { 1 - 1 / 6, 1 - 1 / 6 }, { 1, 1 }, { 1 - 2 / 6, 1 - 2 / 6 }, { 1, 1 } },
      scope:find_var("E"):get_tensor():totable())
  end)
end)

-- ==== Control flow (owned elsewhere; the API.md samples, run as written) ======================
describe("API: control flow samples", function()
  local sig = function(v) return 1 / (1 + math.exp(-v)) end

  it("IfElse: input/output per side, rows merged back in order", function()
    local main, startup, o1, o2 = build(function()
      local x = layers.data{ name = "x", shape = { 2 } }
      local col = layers.data{ name = "c", shape = { 1 } }
      local cond = layers.less_than{ x = col, y = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 0 } }
      local ie = layers.IfElse(cond)
      ie:true_block(function()
        local xt = ie:input(x)
        ie:output(layers.scale{ x = xt, scale = 2 }, layers.softmax(xt))
      end)
      ie:false_block(function()
        local xf = ie:input(x)
        ie:output(layers.fc{ input = xf, size = 2, param_attr = const_attr(1), bias_attr = false }, xf + 1)
      end)
      return ie()
    end)
    local out = run(main, startup, { x = { { 1, 2 }, { 3, 4 }, { 0, 0 } }, c = { { -1 }, { 1 }, { -1 } } }, { o1, o2 })
    -- rows 1 and 3 true: 2x and softmax; row 2 false: fc of ones (3 + 4 = 7 each) and x + 1
    near({ { 2, 4 }, { 7, 7 }, { 0, 0 } }, out[1]:totable())
    near({ { sig(-1), sig(1) }, { 4, 5 }, { 0.5, 0.5 } }, out[2]:totable())
  end)

  it("StaticRNN: step_input, memory (init or shape/batch_ref/value), update_memory, output", function()
    local T, N, H = 3, 2, 2
    local xs = { { { 1, 0 }, { 0, 1 } }, { { 1, 1 }, { 2, 0 } }, { { 0, 0 }, { -1, 1 } } }
    local main, startup, o1, o2 = build(function()
      local x = layers.data{ name = "x", shape = { T, N, 2 }, append_batch_size = false }
      local h0 = layers.fill_constant{ shape = { N, H }, dtype = "float32", value = 0 }
      local rnn = layers.StaticRNN()
      rnn:step(function()
        local x_t = rnn:step_input(x)
        local h = rnn:memory{ init = h0 }
        local a = layers.fc{ input = x_t, size = H, param_attr = const_attr(0.5), bias_attr = false }
        local b = layers.fc{ input = h, size = H, param_attr = const_attr(1), bias_attr = false }
        local act = layers.sigmoid(a + b)
        rnn:update_memory(h, act)
        rnn:output(act, b)
      end)
      return rnn()
    end)
    local out = run(main, startup, { x = xs }, { o1, o2 })
    assert.are.same({ T, N, H }, out[1]:shape())
    assert.are.same({ T, N, H }, out[2]:shape())
    for n = 1, N do
      local h = 0                                   -- both hidden units are equal
      for t = 1, T do
        local b = H * h                              -- fc of ones over the previous state
        local act = sig(0.5 * (xs[t][n][1] + xs[t][n][2]) + b)
        near(act, out[1]:get(t, n, 1), 1e-5, "act")
        near(b, out[2]:get(t, n, 2), 1e-5, "b")
        h = act
      end
    end
    -- the shape/batch_ref/value form of memory
    local main2, startup2, o = build(function()
      local x = layers.data{ name = "x", shape = { T, N, 2 }, append_batch_size = false }
      local rnn = layers.StaticRNN()
      rnn:step(function()
        local x_t = rnn:step_input(x)
        local h = rnn:memory{ shape = { -1, H }, batch_ref = x_t, value = 1 }
        local nh = h + 1
        rnn:update_memory(h, nh)
        rnn:step_output(nh)
      end)
      return rnn()
    end)
    local r = run(main2, startup2, { x = xs }, { o })
    near({ 2, 2 }, r[1]:totable()[1][1])
    near({ 4, 4 }, r[1]:totable()[3][2])
  end)

  it("DynamicRNN over LoD sequences: step_input, memory{shape=, value=}, output keeps the LoD", function()
    local seq = oar.Tensor({ { 1 }, { 2 }, { 3 }, { -1 }, { 0.5 } }, "float32")
    seq:set_lod({ { 0, 3, 5 } })
    local main, startup, out_var = build(function()
      local s = layers.data{ name = "seq", shape = { 1 }, lod_level = 1 }
      local drnn = layers.DynamicRNN()
      drnn:block(function()
        local w = drnn:step_input(s)
        local m = drnn:memory{ shape = { 1 }, value = 0 }
        local h = layers.fc{ input = { w, m }, size = 1, act = "tanh",
                             param_attr = { const_attr(1), const_attr(0.5) }, bias_attr = false }
        drnn:update_memory(m, h)
        drnn:output(h)
      end)
      return drnn()
    end)
    local out = run(main, startup, { seq = seq }, { out_var })
    assert.are.same({ { 0, 3, 5 } }, out[1]:lod())
    local want = {}
    for _, s in ipairs({ { 1, 2, 3 }, { -1, 0.5 } }) do
      local h = 0
      for _, v in ipairs(s) do h = math.tanh(v + 0.5 * h); want[#want + 1] = { h } end
    end
    near(want, out[1]:totable(), 1e-5)
  end)

  it("DynamicRNN: memory{init=} and static_input, rows back in the input's order", function()
    -- sequence A = {1}, B = {2, 3} (B is longer, so the step order differs from the input order)
    local seq = oar.Tensor({ { 1 }, { 2 }, { 3 } }, "float32")
    seq:set_lod({ { 0, 1, 3 } })
    local main, startup, out_var = build(function()
      local s = layers.data{ name = "seq", shape = { 1 }, lod_level = 1 }
      local h0 = layers.data{ name = "h0", shape = { 1 } }
      local st = layers.data{ name = "st", shape = { 1 } }
      local drnn = layers.DynamicRNN()
      drnn:block(function()
        local w = drnn:step_input(s)
        local m = drnn:memory{ init = h0, need_reorder = true }   -- Fluid's default keeps h0 in rank order
        local c = drnn:static_input(st)
        local h = m + w + c
        drnn:update_memory(m, h)
        drnn:output(h)
      end)
      return drnn()
    end)
    local out = run(main, startup, { seq = seq, h0 = { { 10 }, { 20 } }, st = { { 100 }, { 200 } } }, { out_var })
    -- A: 10 + 1 + 100; B: 20 + 2 + 200, then 222 + 3 + 200
    near({ { 111 }, { 222 }, { 425 } }, out[1]:totable())
    assert.are.same({ { 0, 1, 3 } }, out[1]:lod())
  end)

  it("gradients flow through IfElse, StaticRNN and cond", function()
    local g = {}
    local main, startup = build(function()
      local x = layers.data{ name = "x", shape = { 2 } }
      x.stop_gradient = false
      local col = layers.data{ name = "c", shape = { 1 } }
      local cond = layers.less_than{ x = col, y = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 0 } }
      local ie = layers.IfElse(cond)
      ie:true_block(function() ie:output(layers.scale{ x = ie:input(x), scale = 3 }) end)
      ie:false_block(function() local xf = ie:input(x); ie:output(xf * xf) end)
      local o = ie()
      g.ie = oar.gradients({ layers.reduce_sum(o) }, { x })[1]
      local p = layers.data{ name = "p", shape = { 1 }, dtype = "bool", append_batch_size = false }
      local r = layers.cond(p, function() return x * 5 end, function() return x * 7 end)
      g.cond = oar.gradients({ layers.reduce_sum(r) }, { x })[1]
      local seq = layers.data{ name = "tx", shape = { 2, 1, 1 }, append_batch_size = false }
      seq.stop_gradient = false
      local rnn = layers.StaticRNN()
      rnn:step(function()
        local x_t = rnn:step_input(seq)
        local h = rnn:memory{ shape = { -1, 1 }, batch_ref = x_t, value = 1 }
        local nh = h * x_t
        rnn:update_memory(h, nh)
        rnn:step_output(nh)
      end)
      local o2 = rnn()
      g.rnn = oar.gradients({ layers.reduce_sum(o2) }, { seq })[1]
    end)
    local out = run(main, startup, { x = { { 1, 2 }, { 3, 4 } }, c = { { -1 }, { 1 } }, p = oar.Tensor({ false }, "bool"),
                                     tx = { { { 2 } }, { { 5 } } } }, { g.ie, g.cond, g.rnn })
    near({ { 3, 3 }, { 6, 8 } }, out[1]:totable())      -- row 1 true: 3; row 2 false: 2x
    near({ { 7, 7 }, { 7, 7 } }, out[2]:totable())      -- the false branch ran
    -- outputs x1 and x1*x2: d/dx1 = 1 + x2 = 6, d/dx2 = x1 = 2
    near({ { { 6 } }, { { 2 } } }, out[3]:totable())
  end)

  it("While(cond) with less_than writing into cond; Switch; cond(pred, true_fn, false_fn)", function()
    local main, startup, acc, sw_out, c1, c2 = build(function()
      local i = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 0 }
      local n = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 3 }
      local acc = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 0 }
      local cond = layers.less_than{ x = i, y = n }
      local loop = layers.While(cond)
      loop:block(function()
        layers.assign(layers.scale{ x = acc, scale = 2, bias = 1 }, acc)   -- acc = 2 acc + 1
        layers.increment{ x = i }
        layers.less_than{ x = i, y = n, cond = cond }
      end)
      local x = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 5 }
      local out = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 0 }
      local sw = layers.Switch()
      sw:case(layers.less_than{ x = x, y = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 3 } },
        function() layers.assign(layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 1 }, out) end)
      sw:case(layers.less_than{ x = x, y = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 10 } },
        function() layers.assign(layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 2 }, out) end)
      sw:default(function() layers.assign(layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 3 }, out) end)
      local p = layers.data{ name = "p", shape = { 1 }, dtype = "bool", append_batch_size = false }
      local r1 = layers.cond(p, function() return layers.scale{ x = x, scale = 2 } end,
                                function() return layers.scale{ x = x, scale = -1 } end)
      local r2 = layers.cond(layers.logical_not(p), function() return layers.scale{ x = x, scale = 2 } end,
                                                    function() return layers.scale{ x = x, scale = -1 } end)
      return acc, out, r1, r2
    end)
    local out = run(main, startup, { p = oar.Tensor({ true }, "bool") }, { acc, sw_out, c1, c2 })
    near({ 7 }, out[1]:totable())        -- 0 -> 1 -> 3 -> 7
    near({ 2 }, out[2]:totable())        -- 5 < 3 fails, 5 < 10 holds
    near({ 10 }, out[3]:totable())
    near({ -5 }, out[4]:totable())
  end)
end)

-- ==== Backward and optimization =======================================================
-- loss = mean(x . w + b) over the batch: d/dw = the mean row of x, d/db = 1
describe("API: backward", function()
  it("append_backward(loss, {parameter_list=, no_grad_set=}) -> {param, grad} pairs", function()
    local pg_all, pg_w, pg_nob
    local main, startup, loss = build(function()
      local x = layers.data{ name = "x", shape = { 2 } }
      local h = layers.fc{ input = x, size = 1, param_attr = oar.ParamAttr{ name = "W", initializer = Constant{ value = 1 } },
                           bias_attr = oar.ParamAttr{ name = "B" } }
      return layers.mean(h)
    end)
    oar.program_guard(main, startup, function()
      pg_all = oar.append_backward(loss)
    end)
    assert.are.equal(2, #pg_all)
    local by_name = {}
    for _, pg in ipairs(pg_all) do
      assert.is_true(oar.is_parameter(pg[1]))
      assert.is_true(oar.is_variable(pg[2]))
      by_name[pg[1].name] = pg[2]
    end
    assert.truthy(by_name.W and by_name.B)
    local out = run(main, startup, { x = { { 1, 2 }, { 3, 4 } } }, { by_name.W, by_name.B })
    near({ { 2 }, { 3 } }, out[1]:totable())
    near({ 1 }, out[2]:totable())
    -- parameter_list and no_grad_set, on fresh copies of the forward program
    local m2, s2, l2 = build(function()
      local x = layers.data{ name = "x", shape = { 2 } }
      return layers.mean(layers.fc{ input = x, size = 1, param_attr = "W", bias_attr = "B" })
    end)
    oar.program_guard(m2, s2, function() pg_w = oar.append_backward(l2, { parameter_list = { "W" } }) end)
    assert.are.equal(1, #pg_w)
    assert.are.equal("W", pg_w[1][1].name)
    local m3, s3, l3 = build(function()
      local x = layers.data{ name = "x", shape = { 2 } }
      return layers.mean(layers.fc{ input = x, size = 1, param_attr = "W", bias_attr = "B" })
    end)
    oar.program_guard(m3, s3, function()
      pg_nob = oar.append_backward(l3, { no_grad_set = { "B" } })
    end)
    for _, pg in ipairs(pg_nob) do assert.are_not.equal("B", pg[1].name) end
    assert.are.equal(1, #pg_nob)
  end)

  it("gradients(targets, inputs, target_gradients, no_grad_set) -> grad Variables", function()
    local g1, g2, g3
    local main, startup = build(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      x.stop_gradient = false
      local z = layers.data{ name = "z", shape = { 3 } }
      z.stop_gradient = false
      local y = x * x + z
      local tg = layers.fill_constant{ shape = { 2, 3 }, dtype = "float32", value = 3 }
      g1 = oar.gradients({ y }, { x, z })
      g2 = oar.gradients(y, x, tg)
      g3 = oar.gradients({ y }, { x, z }, nil, { "z" })
    end)
    assert.are.equal(2, #g1)
    assert.is_true(oar.is_variable(g1[1]))
    local out = run(main, startup, { x = X23, z = X23 }, { g1[1], g1[2], g2[1] })
    near({ { 2, 4, 6 }, { 8, 10, 12 } }, out[1]:totable())       -- d(x^2)/dx = 2x
    near({ { 1, 1, 1 }, { 1, 1, 1 } }, out[2]:totable())
    near({ { 6, 12, 18 }, { 24, 30, 36 } }, out[3]:totable())     -- times the target gradient 3
    assert.truthy(g3[1])
    assert.is_nil(g3[2])                                           -- z is in no_grad_set
  end)
end)

describe("API: optimizers", function()
  -- one step on w = 1 (a 1x1 fc weight, x = 1): gradient 1, clipped to 0.5 by value,
  -- plus L2 decay 0.1 * w: g = 0.6
  local function one_step(make_opt, opts)
    opts = opts or {}
    local ops, pgs
    local main, startup = build(function()
      local x = layers.data{ name = "x", shape = { 1 } }
      local loss = layers.mean(layers.fc{ input = x, size = 1, param_attr = opts.param_attr or
        oar.ParamAttr{ name = "w", initializer = Constant{ value = 1 } }, bias_attr = false })
      ops, pgs = make_opt():minimize(loss)
    end)
    local scope = oar.Scope()
    local exe = oar.Executor(oar.CPUPlace())
    exe:run(startup, { scope = scope })
    for _ = 1, opts.steps or 1 do exe:run(main, { feed = { x = { { 1 } } }, scope = scope }) end
    return scope:find_var("w"):get_tensor():get(1, 1), ops, pgs, main
  end
  local reg, clip = oar.regularizer.L2Decay(0.1), oar.clip.GradientClipByValue{ max = 0.5 }
  local g = 0.6

  it("minimize returns the optimize ops and the {param, grad} pairs", function()
    local w, ops, pgs, main = one_step(function() return oar.optimizer.SGD{ learning_rate = 0.1 } end)
    near(0.9, w)
    assert.are.equal(1, #ops)
    assert.are.equal("sgd", ops[1].type)
    assert.are.equal(1, #pgs)
    assert.are.equal("w", pgs[1][1].name)
    assert.are.equal(main, pgs[1][2].block.program)
  end)

  it("SGD, Momentum, Adam, Adagrad, RMSProp, Adamax, Adadelta each take regularization= and grad_clip=", function()
    local O = oar.optimizer
    local function opt(name, extra)
      return function()
        local spec = { learning_rate = 0.1, regularization = reg, grad_clip = clip }
        for k, v in pairs(extra or {}) do spec[k] = v end
        return O[name](spec)
      end
    end
    near(1 - 0.1 * g, (one_step(opt("SGD"))))
    near(1 - 0.1 * g, (one_step(opt("Momentum", { momentum = 0.9 }))))
    near(1 - 0.1 * (g + 0.9 * g), (one_step(opt("Momentum", { momentum = 0.9, use_nesterov = true }))))
    -- Adam, step 1: the bias-corrected update is lr * m / sqrt(v) = lr * sign(g)
    near(0.9, (one_step(opt("Adam", { beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8 }))), 1e-5)
    near(0.9, (one_step(opt("Adagrad"))), 1e-5)                            -- lr * g / sqrt(g^2)
    local ms = 0.05 * g * g
    near(1 - 0.1 * g / math.sqrt(ms + 1e-6), (one_step(opt("RMSProp"))), 1e-5)
    near(0.9, (one_step(opt("Adamax"))), 1e-5)                             -- lr/(1-b1) * (0.1 g) / |g|
    local upd = math.sqrt(1e-6 / (0.05 * g * g + 1e-6)) * g
    near(1 - upd, (one_step(opt("Adadelta"))), 1e-4)
  end)

  it("minimize(loss, {startup_program=, parameter_list=, no_grad_set=})", function()
    local startup2 = oar.Program()
    local ops, pgs
    local main = build(function()
      local x = layers.data{ name = "x", shape = { 1 } }
      local a = layers.fc{ input = x, size = 1, bias_attr = false, param_attr = oar.ParamAttr{ name = "a", initializer = Constant{ value = 1 } } }
      local b = layers.fc{ input = x, size = 1, bias_attr = false, param_attr = oar.ParamAttr{ name = "b", initializer = Constant{ value = 1 } } }
      local c = layers.fc{ input = x, size = 1, bias_attr = false, param_attr = oar.ParamAttr{ name = "c", initializer = Constant{ value = 1 } } }
      ops, pgs = oar.optimizer.Momentum{ learning_rate = 0.5, momentum = 0.9 }:minimize(layers.mean(a + b + c),
        { startup_program = startup2, parameter_list = { "a", "b" }, no_grad_set = { "b" } })
    end)
    assert.are.equal(1, #pgs)
    assert.are.equal("a", pgs[1][1].name)
    assert.are.equal(1, #ops)
    assert.are.equal("momentum", ops[1].type)
    -- the optimizer's own state (learning rate, velocity) is initialized by startup2
    local types = op_types(startup2:global_block())
    assert.is_true(#types >= 2)
    for _, t in ipairs(types) do assert.are.equal("fill_constant", t) end
    assert.truthy(main)
  end)

  it("learning_rate may be a Variable", function()
    local w = one_step(function()
      local lr = layers.create_global_var{ shape = { 1 }, value = 0.5, dtype = "float32", persistable = true }
      return oar.optimizer.SGD{ learning_rate = lr }
    end)
    near(0.5, w)
  end)

  it("L1Decay, ByNorm, ByGlobalNorm", function()
    local O = oar.optimizer
    -- L1: g = 1 + 0.2 * sign(1)
    near(1 - 0.1 * 1.2, (one_step(function()
      return O.SGD{ learning_rate = 0.1, regularization = oar.regularizer.L1Decay(0.2) } end)))
    -- the gradient 1 scaled to norm 0.25
    near(1 - 0.1 * 0.25, (one_step(function()
      return O.SGD{ learning_rate = 0.1, grad_clip = oar.clip.GradientClipByNorm{ clip_norm = 0.25 } } end)))
    near(1 - 0.1 * 0.25, (one_step(function()
      return O.SGD{ learning_rate = 0.1, grad_clip = oar.clip.GradientClipByGlobalNorm{ clip_norm = 0.25 } } end)))
    -- a norm above the gradient's leaves it alone
    near(0.9, (one_step(function()
      return O.SGD{ learning_rate = 0.1, grad_clip = oar.clip.ByGlobalNorm{ clip_norm = 5 } } end)))
    near(1 - 0.1 * 0.3, (one_step(function()
      return O.SGD{ learning_rate = 0.1, grad_clip = oar.clip.ByValue{ max = 0.3 } } end)))
    near(1 - 0.1 * 0.25, (one_step(function()
      return O.SGD{ learning_rate = 0.1, grad_clip = oar.clip.ByNorm{ clip_norm = 0.25 } } end)))
  end)

  it("ParamAttr{name=, initializer=, learning_rate=, regularizer=, trainable=}", function()
    local a = oar.ParamAttr{ name = "w", initializer = Constant{ value = 1 }, learning_rate = 0.5,
                             regularizer = oar.regularizer.L2Decay(1), trainable = true }
    assert.are.equal("w", a.name)
    near(0.5, a.learning_rate)
    assert.is_true(a.trainable)
    -- lr 0.1 * 0.5; the param's own L2(1) wins over none: g = 1 + 1
    near(1 - 0.05 * 2, (one_step(function() return oar.optimizer.SGD{ learning_rate = 0.1 } end, { param_attr = a })))
    local frozen = oar.ParamAttr{ name = "w", initializer = Constant{ value = 1 }, trainable = false }
    assert.is_false(frozen.trainable)
    local w, ops = one_step(function() return oar.optimizer.SGD{ learning_rate = 0.1 } end, { param_attr = frozen })
    near(1, w)
    assert.are.equal(0, #ops)
    assert.truthy(errmsg(oar.ParamAttr, { nmae = "typo" }):find("nmae", 1, true))
  end)
end)

describe("API: learning-rate schedules", function()
  local function lr_values(make, steps)
    local lr
    local main, startup = build(function() lr = make() end)
    assert.is_true(oar.is_variable(lr))
    local scope, exe = oar.Scope(), oar.Executor(oar.CPUPlace())
    exe:run(startup, { scope = scope })
    local out = {}
    for s = 1, steps do out[s] = exe:run(main, { fetch_list = { lr }, scope = scope })[1]:totable()[1] end
    return out
  end

  it("exponential_decay, piecewise_decay, polynomial_decay, cosine_decay, noam_decay", function()
    near({ 1, math.sqrt(0.5), 0.5, math.sqrt(0.125) },
      lr_values(function() return layers.exponential_decay{ learning_rate = 1, decay_steps = 2, decay_rate = 0.5 } end, 4))
    near({ 1, 1, 0.5, 0.5 },
      lr_values(function() return layers.exponential_decay(1, 2, 0.5, true) end, 4))
    near({ 1, 0.5, 0.1, 0.1 }, lr_values(function() return layers.piecewise_decay({ 1, 2 }, { 1, 0.5, 0.1 }) end, 4))
    near({ 1, 0.75, 0.5, 0.25, 0, 0 },
      lr_values(function() return layers.polynomial_decay{ learning_rate = 1, decay_steps = 4, end_learning_rate = 0 } end, 6))
    near({ 1, 0.5 * (math.cos(math.pi / 4) + 1), 0.5 },
      lr_values(function() return layers.cosine_decay{ learning_rate = 1, step_each_epoch = 1, epochs = 4 } end, 3))
    -- d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), steps from 1
    local function noam(s) return 0.5 * math.min(s ^ -0.5, s * 2 ^ -1.5) end
    near({ noam(1), noam(2), noam(3) }, lr_values(function() return layers.noam_decay(4, 2) end, 3))
  end)

  it("a schedule drives an optimizer", function()
    local main, startup = build(function()
      local x = layers.data{ name = "x", shape = { 1 } }
      local loss = layers.mean(layers.fc{ input = x, size = 1, bias_attr = false,
        param_attr = oar.ParamAttr{ name = "w", initializer = Constant{ value = 1 } } })
      oar.optimizer.SGD{ learning_rate = layers.piecewise_decay({ 1 }, { 0.5, 0.25 }) }:minimize(loss)
    end)
    local scope, exe = oar.Scope(), oar.Executor(oar.CPUPlace())
    exe:run(startup, { scope = scope })
    exe:run(main, { feed = { x = { { 1 } } }, scope = scope })
    exe:run(main, { feed = { x = { { 1 } } }, scope = scope })
    near(1 - 0.5 - 0.25, scope:find_var("w"):get_tensor():get(1, 1))
  end)
end)

describe("API: initializers", function()
  local function init_values(init, shape)
    local main, startup = build(function()
      return layers.create_parameter{ shape = shape or { 100, 100 }, dtype = "float32", attr = oar.ParamAttr{
        name = "p", initializer = init } }
    end)
    local scope = oar.Scope()
    oar.Executor(oar.CPUPlace()):run(startup, { scope = scope })
    assert.truthy(main)
    local t = scope:find_var("p"):get_tensor()
    local p, n = t:data(), t:numel()
    local lo, hi, sum, sq = math.huge, -math.huge, 0, 0
    for i = 0, n - 1 do
      local v = p[i]
      lo, hi, sum, sq = math.min(lo, v), math.max(hi, v), sum + v, sq + v * v
    end
    local mean = sum / n
    return { min = lo, max = hi, mean = mean, std = math.sqrt(sq / n - mean * mean) }
  end

  it("Constant, Uniform, Normal, TruncatedNormal, Xavier, MSRA", function()
    local I = oar.initializer
    local c = init_values(I.Constant{ value = 0.75 })
    assert.are.equal(0.75, c.min)
    assert.are.equal(0.75, c.max)
    local u = init_values(I.Uniform{ low = 2, high = 4 })
    assert.is_true(u.min >= 2 and u.max <= 4)
    near(3, u.mean, 0.02)
    near(2 / math.sqrt(12), u.std, 0.03)
    local nrm = init_values(I.Normal{ loc = 1, scale = 2 })
    near(1, nrm.mean, 0.06)
    near(2, nrm.std, 0.03)
    local tn = init_values(I.TruncatedNormal{ loc = 0, scale = 1 })
    assert.is_true(tn.min >= -2 and tn.max <= 2)                  -- cut at two standard deviations
    near(0.8796, tn.std, 0.03)
    local xv = init_values(I.Xavier(), { 150, 50 })
    local limit = math.sqrt(6 / (150 + 50))
    assert.is_true(xv.min >= -limit and xv.max <= limit and xv.max > 0.9 * limit)
    local ms = init_values(I.MSRA(), { 150, 50 })
    local mlimit = math.sqrt(6 / 150)
    assert.is_true(ms.min >= -mlimit and ms.max <= mlimit and ms.max > 0.9 * mlimit)
  end)
end)

-- ==== Execution, tensors, scopes ===========================================================
describe("API: places and executor", function()
  it("CPUPlace, CUDAPlace(n), is_compiled_with_cuda", function()
    local cpu = oar.CPUPlace()
    assert.is_true(cpu:is_cpu_place())
    local gpu = oar.CUDAPlace(0)
    assert.is_true(gpu:is_gpu_place())
    assert.are.equal("boolean", type(oar.is_compiled_with_cuda()))
    assert.truthy(errmsg(oar.CUDAPlace, -1):find("CUDAPlace", 1, true))
    if not oar.is_compiled_with_cuda() then
      assert.truthy(errmsg(oar.Executor, oar.CUDAPlace(0)))
    end
  end)

  it("run(program, {feed=, fetch_list=, scope=}) -> list of Tensors; program and scope default", function()
    local exe = oar.Executor(oar.CPUPlace())
    local main, startup = oar.Program(), oar.Program()
    local y, w
    oar.program_guard(main, startup, function()
      oar.unique_name.guard(function()
        local x = layers.data{ name = "x", shape = { 2 } }
        y = layers.fc{ input = x, size = 1, param_attr = oar.ParamAttr{ name = "contract_w", initializer = Constant{ value = 2 } },
                       bias_attr = false }
        w = main:global_block():var("contract_w")
      end)
    end)
    local gs = oar.Scope()
    oar.scope_guard(gs, function()
      assert.are.equal(gs, oar.global_scope())
      oar.program_guard(main, startup, function()
        exe:run(startup)                                        -- scope: the global scope
        assert.truthy(gs:find_var("contract_w"))
        -- program nil: the default main program; fetch by Variable and by name; feed a Tensor or a table
        local out = exe:run(nil, { feed = { x = oar.Tensor({ { 1, 2 } }, "float32") }, fetch_list = { y, "contract_w" } })
        assert.are.equal(2, #out)
        near({ { 6 } }, out[1]:totable())
        near({ { 2 }, { 2 } }, out[2]:totable())
        local out2 = exe:run{ feed = { x = { { 1, 1 } } }, fetch_list = { y } }
        near({ { 4 } }, out2[1]:totable())
      end)
    end)
    assert.truthy(w)
    -- an explicit scope
    local s = oar.Scope()
    exe:run(startup, { scope = s })
    local out = exe:run(main, { feed = { x = { { 3, 0 } } }, fetch_list = { y }, scope = s })
    near({ { 6 } }, out[1]:totable())
    assert.are.same({}, exe:run(main, { feed = { x = { { 3, 0 } } }, scope = s }))
  end)
end)

describe("API: tensors", function()
  it("Tensor(nested_table, dtype) and Tensor{shape=, dtype=} (zeros)", function()
    local t = oar.Tensor({ { 1, 2, 3 }, { 4, 5, 6 } }, "float64")
    assert.are.same({ 2, 3 }, t:shape())
    assert.are.equal("float64", t:dtype())
    assert.are.equal(6, t:numel())
    assert.are.same(X23, t:totable())
    local f = oar.Tensor({ 1.5, 2.5 })
    assert.are.equal("float32", f:dtype())
    local z = oar.Tensor{ shape = { 2, 3 }, dtype = "int32" }
    assert.are.same({ { 0, 0, 0 }, { 0, 0, 0 } }, z:totable())
    assert.are.equal("int32", z:dtype())
    local zf = oar.Tensor{ shape = { 2 } }
    assert.are.equal("float32", zf:dtype())
    for _, dt in ipairs({ "float32", "float64", "int32", "int64", "bool", "uint8", "float16" }) do
      local v = dt == "bool" and true or 1
      assert.are.equal(dt, oar.Tensor({ v, v }, dt):dtype())
    end
    assert.truthy(errmsg(oar.Tensor, { { 1, 2 }, { 3 } }):find("ragged", 1, true))
    assert.truthy(errmsg(oar.Tensor, { 1.5 }, "int32"):find("integer", 1, true))
    -- no silent wrap-around
    assert.truthy(errmsg(oar.Tensor, { 300 }, "uint8"):find("uint8", 1, true))
    assert.truthy(errmsg(oar.Tensor, { 2 ^ 40 }, "int32"):find("int32", 1, true))
    assert.are.same({ 255, 0 }, oar.Tensor({ 255, 0 }, "uint8"):totable())
    assert.are.same({ 2 ^ 40 }, oar.Tensor({ 2 ^ 40 }, "int64"):totable())
  end)

  it("tensor.from_buffer(ptr, shape, dtype) copies", function()
    local ffi = require("ffi")
    local buf = ffi.new("double[6]", { 1, 2, 3, 4, 5, 6 })
    local t = oar.tensor.from_buffer(buf, { 3, 2 }, "float64")
    buf[0] = 100
    assert.are.same({ { 1, 2 }, { 3, 4 }, { 5, 6 } }, t:totable())
    assert.are.equal("float64", t:dtype())
    assert.truthy(errmsg(oar.tensor.from_buffer, nil, { 2 }, "float32"))
    -- an array knows its size: no reading past it
    assert.truthy(errmsg(oar.tensor.from_buffer, buf, { 100 }, "float64"):find("bytes", 1, true))
  end)

  it("get/set are 1-based; data() is a typed pointer; lod/set_lod; tostring shows values, shape, dtype, LoD", function()
    local t = oar.Tensor({ { 1, 2, 3 }, { 4, 5, 6 } }, "float32")
    assert.are.equal(1, t:get(1, 1))
    assert.are.equal(6, t:get(2, 3))
    t:set(9.5, 2, 1)
    assert.are.equal(9.5, t:get(2, 1))
    assert.truthy(errmsg(t.get, t, 0, 1):find("outside", 1, true))
    assert.truthy(errmsg(t.get, t, 3, 1))
    assert.truthy(errmsg(t.get, t, 1))
    local p = t:data()
    collectgarbage()
    collectgarbage()
    assert.are.equal(9.5, p[3])                       -- row-major; alive while t is held
    assert.truthy(tostring(require("ffi").typeof(p)):find("float", 1, true))
    p[0] = 7
    assert.are.equal(7, t:get(1, 1))
    assert.are.same({}, t:lod())
    t:set_lod({ { 0, 1, 2 } })
    assert.are.same({ { 0, 1, 2 } }, t:lod())
    local s = tostring(t)
    assert.truthy(s:find("9.5", 1, true))
    assert.truthy(s:find("7", 1, true))
    assert.truthy(s:find("2, 3", 1, true))
    assert.truthy(s:find("float32", 1, true))
    assert.truthy(s:find("0, 1, 2", 1, true))
    assert.truthy(errmsg(t.set_lod, t, { { 0, 5 } }))   -- 5 is past the 2 rows
  end)
end)

describe("API: scopes", function()
  it("Scope, global_scope, scope_guard; var, find_var, new_scope, drop_kids, parent, local_var_names", function()
    local s = oar.Scope()
    local v = s:var("a")
    v:set_tensor(oar.Tensor({ 1, 2 }))
    assert.are.same({ 1, 2 }, v:get_tensor():totable())
    assert.are.same({ 1, 2 }, s:var("a"):get_tensor():totable())      -- var finds the existing one
    assert.is_nil(s:find_var("missing"))
    local kid = s:new_scope()
    assert.truthy(kid:find_var("a"))                                    -- searches the parents
    assert.is_nil(s:find_var("b"))
    kid:var("b")
    assert.is_nil(s:find_var("b"))
    assert.are.same({ "b" }, kid:local_var_names())
    assert.are.same({ "a" }, s:local_var_names())
    assert.truthy(kid:parent())
    assert.truthy(kid:parent():find_var("a"))
    assert.is_nil(s:parent())
    assert.are.equal(1, s:num_kids())
    s:drop_kids()
    assert.are.equal(0, s:num_kids())
    local g = oar.global_scope()
    local r = oar.scope_guard(s, function()
      assert.are.equal(s, oar.global_scope())
      return "done"
    end)
    assert.are.equal("done", r)
    assert.are.equal(g, oar.global_scope())
    errmsg(oar.scope_guard, s, function() error("inside") end)
    assert.are.equal(g, oar.global_scope())                             -- restored on error too
  end)
end)

-- ==== Saving, loading, deploying ===========================================================
describe("API: saving, loading, deploying", function()
  local F = require("spec.helpers.files")
  local tmpdir, rmtree, exists = F.tmpdir, F.rmtree, F.exists

  local function model()
    return build(function()
      local x = layers.data{ name = "x", shape = { 2 } }
      local y = layers.fc{ input = x, size = 1, param_attr = oar.ParamAttr{ name = "io_w", initializer = Constant{ value = 2 } },
                           bias_attr = oar.ParamAttr{ name = "io_b", initializer = Constant{ value = 0.5 } } }
      local loss = layers.mean(y)
      oar.optimizer.Momentum{ learning_rate = 0.1, momentum = 0.9 }:minimize(loss)
      return y
    end)
  end

  it("save_params/load_params: one file per variable by default, filename= for one file", function()
    local main, startup = model()
    local exe = oar.Executor(oar.CPUPlace())
    local dir = tmpdir()
    local s1 = oar.Scope()
    oar.scope_guard(s1, function()
      exe:run(startup)
      oar.io.save_params(exe, dir, main)
      oar.io.save_params(exe, dir .. "_c", main, { filename = "all_params" })
    end)
    assert.is_true(exists(dir .. "/io_w"))
    assert.is_true(exists(dir .. "/io_b"))
    assert.is_true(exists(dir .. "_c/all_params"))
    assert.is_false(exists(dir .. "_c/io_w"))
    for _, d in ipairs({ { dir }, { dir .. "_c", { filename = "all_params" } } }) do
      local s2 = oar.Scope()
      oar.scope_guard(s2, function()
        oar.io.load_params(exe, d[1], main, d[2])
      end)
      near({ { 2 }, { 2 } }, s2:find_var("io_w"):get_tensor():totable())
      near({ 0.5 }, s2:find_var("io_b"):get_tensor():totable())
    end
    rmtree(dir)
    rmtree(dir .. "_c")
  end)

  it("save_persistables/load_persistables include optimizer state", function()
    local main, startup = model()
    local exe = oar.Executor(oar.CPUPlace())
    local dir = tmpdir()
    local s1 = oar.Scope()
    exe:run(startup, { scope = s1 })
    exe:run(main, { feed = { x = { { 1, 1 } } }, scope = s1 })
    oar.scope_guard(s1, function() oar.io.save_persistables(exe, dir, main) end)
    local velocity
    for _, v in ipairs(main:global_block():vars()) do
      if v.persistable and v.name:find("velocity", 1, true) then velocity = v.name end
    end
    assert.truthy(velocity)
    assert.is_true(exists(dir .. "/" .. velocity))
    local s2 = oar.Scope()
    oar.scope_guard(s2, function() oar.io.load_persistables(exe, dir, main) end)
    -- one step: grad of w = the mean row of x = 1 each; velocity = 1; w = 2 - 0.1
    near({ { 1.9 }, { 1.9 } }, s2:find_var("io_w"):get_tensor():totable())
    near({ { 1 }, { 1 } }, s2:find_var(velocity):get_tensor():totable())
    rmtree(dir)
  end)

  it("save_inference_model/load_inference_model and the C predictor read the same directory", function()
    local main, startup, y = model()
    local exe = oar.Executor(oar.CPUPlace())
    local dir = tmpdir()
    local s1 = oar.Scope()
    oar.scope_guard(s1, function()
      exe:run(startup)
      oar.io.save_inference_model(dir, { "x" }, { y }, exe, main)
    end)
    assert.is_true(exists(dir .. "/__model__"))
    local prog, feed_names, fetch_targets
    local s2 = oar.Scope()
    oar.scope_guard(s2, function()
      prog, feed_names, fetch_targets = oar.io.load_inference_model(dir, exe)
      assert.is_true(oar.framework.is_program(prog))
      assert.are.same({ "x" }, feed_names)
      assert.are.equal(1, #fetch_targets)
      assert.is_true(oar.is_variable(fetch_targets[1]))
      local out = exe:run(prog, { feed = { x = { { 1, 2 }, { 0, 1 } } }, fetch_list = fetch_targets })
      near({ { 6.5 }, { 2.5 } }, out[1]:totable())          -- 2*(1+2) + 0.5, 2*(0+1) + 0.5
    end)
    -- no optimizer or backward op survives
    for _, op in ipairs(prog:global_block():ops()) do
      assert.is_nil(op.type:find("_grad", 1, true))
      assert.are_not.equal("momentum", op.type)
    end
    -- the C API
    local ffi = require("ffi")
    local C = require("oar.lib").C
    local pp = ffi.new("oar_predictor_t *[1]")
    assert.are.equal(0, C.oar_predictor_load(dir, pp))
    local p = ffi.gc(pp[0], C.oar_predictor_free)
    local data = ffi.new("float[4]", { 1, 2, 0, 1 })
    local dims = ffi.new("int64_t[2]", { 2, 2 })
    assert.are.equal(0, C.oar_predictor_set_input(p, "x", data, dims, 2))
    assert.are.equal(0, C.oar_predictor_run(p))
    local od, odims, ond = ffi.new("const float *[1]"), ffi.new("const int64_t *[1]"), ffi.new("int[1]")
    assert.are.equal(0, C.oar_predictor_get_output(p, 0, od, odims, ond))
    assert.are.equal(2, ond[0])
    assert.are.equal(2, tonumber(odims[0][0]))
    assert.are.equal(1, tonumber(odims[0][1]))
    near(6.5, od[0][0])
    near(2.5, od[0][1])
    -- failures return nonzero and say why
    assert.are_not.equal(0, C.oar_predictor_set_input(p, "nope", data, dims, 2))
    assert.truthy(ffi.string(C.oar_last_error()):find("nope", 1, true))
    assert.are_not.equal(0, C.oar_predictor_get_output(p, 5, od, odims, ond))
    assert.is_true(#ffi.string(C.oar_last_error()) > 0)
    assert.are_not.equal(0, C.oar_predictor_load(dir .. "/missing", pp))
    assert.is_true(#ffi.string(C.oar_last_error()) > 0)
    rmtree(dir)
  end)
end)

-- ==== Errors and flags ======================================================================
describe("API: errors and flags", function()
  it("set_flags{check_nan_inf=true} names the op and the variable at the first NaN or Inf", function()
    local main, startup, y = build(function()
      local x = layers.data{ name = "x", shape = { 2 } }
      return layers.log(x)
    end)
    local ok, out = pcall(run, main, startup, { x = { { 1, 0 } } }, { y })
    assert.is_true(ok)                                            -- off by default: log(0) = -inf passes
    assert.are.equal(-math.huge, out[1]:get(1, 2))
    oar.set_flags{ check_nan_inf = true }
    local ok2, err = pcall(run, main, startup, { x = { { 1, 0 } } }, { y })
    oar.set_flags{ check_nan_inf = false }
    assert.is_false(ok2)
    err = tostring(err)
    assert.truthy(err:find("log", 1, true))
    assert.truthy(err:find(y.name, 1, true))
    assert.truthy(err:lower():find("inf", 1, true))
    assert.are.equal(0, oar.get_flags("check_nan_inf").check_nan_inf)
  end)

  it("errors name what is wrong and, for ops, the Lua file:line that created the op", function()
    local line
    local main, startup, z = build(function()
      local x = layers.data{ name = "x", shape = { 3 } }
      local y = layers.data{ name = "y", shape = { 3 } }
      -- (not `return layers...`: a tail call leaves no frame for the line to come from)
      line = debug.getinfo(1, "l").currentline + 1
      local sum = layers.elementwise_add{ x = x, y = y }
      return sum
    end)
    -- a run-time shape error: batches of 2 and 3 rows do not broadcast
    local err = errmsg(run, main, startup, { x = { { 1, 2, 3 }, { 4, 5, 6 } }, y = { { 1, 1, 1 }, { 2, 2, 2 }, { 3, 3, 3 } } }, { z })
    assert.truthy(err:find("elementwise_add", 1, true), err)
    assert.truthy(err:find(THIS_FILE .. ":" .. line, 1, true), err)
    assert.truthy(err:find("[2, 3]", 1, true), err)
    assert.truthy(err:find("[3, 3]", 1, true), err)
    assert.truthy(err:find("'x'", 1, true) and err:find("'y'", 1, true), err)     -- the variables
    -- a compile-time one
    local cline
    local err2 = errmsg(build, function()
      local a = layers.data{ name = "a", shape = { 3 } }
      local b = layers.data{ name = "b", shape = { 4 } }
      cline = debug.getinfo(1, "l").currentline + 1
      local sum = layers.elementwise_add{ x = a, y = b }
      return sum
    end)
    assert.truthy(err2:find("elementwise_add", 1, true), err2)
    assert.truthy(err2:find(THIS_FILE .. ":" .. cline, 1, true), err2)
    assert.truthy(err2:find("'a'", 1, true) and err2:find("'b'", 1, true), err2)
    -- a feed of the wrong shape and dtype names the variable and both
    local err3 = errmsg(run, main, startup, { x = { { 1, 2 } }, y = { { 1, 2, 3 } } }, { z })
    assert.truthy(err3:find("'x'", 1, true), err3)
    assert.truthy(err3:find("[-1, 3]", 1, true), err3)
    assert.truthy(err3:find("[1, 2]", 1, true), err3)
    local err4 = errmsg(run, main, startup, { x = oar.Tensor({ { 1, 2, 3 } }, "float64"), y = { { 1, 2, 3 } } }, { z })
    assert.truthy(err4:find("float32", 1, true) and err4:find("float64", 1, true), err4)
    -- a layer argument error names the layer and the argument
    local err5 = errmsg(build, function() return layers.fc{ input = layers.data{ name = "q", shape = { 2 } }, size = "ten" } end)
    assert.truthy(err5:find("fc", 1, true) and err5:find("size", 1, true), err5)
    -- an uninitialized parameter: did you run the startup program?
    local err6 = errmsg(function()
      local m, _, h = build(function() return layers.fc{ input = layers.data{ name = "u", shape = { 2 } }, size = 1 } end)
      return oar.Executor(oar.CPUPlace()):run(m, { feed = { u = { { 1, 2 } } }, fetch_list = { h }, scope = oar.Scope() })
    end)
    assert.truthy(err6:find("mul", 1, true), err6)
  end)
end)

-- ==== No call may crash the process ========================================================
-- Every public function and method, called with nil, a number, a string and an
-- empty table in each argument position (and in all at once), returns or raises
-- a Lua error with a message; a crash would end this process. Messages must be
-- oar's own, not Lua's ("attempt to index a nil value").
describe("API: no call, whatever its arguments, crashes the process", function()
  local BAD = { { "nil", function() return nil end }, { "a number", function() return 42 end },
                { "a string", function() return "str" end }, { "an empty table", function() return {} end } }

  local function arity(f)
    local info = debug.getinfo(f, "u")
    local n = info.nparams or 2
    if info.isvararg then n = n + 2 end
    return math.max(1, math.min(n, 4))
  end

  local calls, failures = 0, {}
  local function try(label, f, args, n)
    calls = calls + 1
    local ok, err = pcall(f, unpack(args, 1, n))
    if ok then return end
    if type(err) ~= "string" or err == "" then
      failures[#failures + 1] = label .. ": error value is " .. tostring(err)
      return
    end
    if err:find("attempt to ", 1, true) or err:find("bad argument #", 1, true) then
      failures[#failures + 1] = label .. ": unclear message: " .. err
    end
  end

  -- f(...) with each position bad in turn (the others nil), then all bad;
  -- `make_self` (methods) gives a fresh receiver for each call
  local function fuzz(label, f, make_self)
    local first = make_self and 2 or 1
    local n = math.max(arity(f), first)
    local function args_with(pos, bad)
      local args = {}
      if make_self then args[1] = make_self() end
      if pos then args[pos] = bad() else for i = first, n do args[i] = bad() end end
      return args
    end
    for _, b in ipairs(BAD) do
      for pos = first, n do try(string.format("%s arg %d = %s", label, pos - first + 1, b[1]), f, args_with(pos, b[2]), n) end
      try(label .. " all = " .. b[1], f, args_with(nil, b[2]), n)
      if make_self then try(label .. " self = " .. b[1], f, { b[2]() }, n) end   -- '.' for ':'
    end
  end

  local function public_functions(t)
    local names = {}
    for k, v in pairs(t) do
      if type(k) == "string" and type(v) == "function" and not k:match("^_") then names[#names + 1] = k end
    end
    table.sort(names)
    return names
  end

  local function methods(obj)
    local seen, names = {}, {}
    local function add(t)
      if type(t) ~= "table" then return end
      for k, v in pairs(t) do
        if type(k) == "string" and type(v) == "function" and not k:match("^_") and not seen[k] then
          seen[k] = true
          names[#names + 1] = k
        end
      end
    end
    local mt = getmetatable(obj)
    add(obj)
    if mt then add(mt); add(type(mt.__index) == "table" and mt.__index or nil) end
    if oar.is_variable(obj) then add(oar.Variable) end
    if oar.framework.is_block(obj) then add(oar.Block) end
    if oar.framework.is_operator(obj) then add(oar.Operator) end
    table.sort(names)
    return names
  end

  it("module functions and methods of every class", function()
    local seed = oar.seed()
    local main, startup = oar.Program(), oar.Program()
    oar.unique_name.guard(function()
      oar.program_guard(main, startup, function()
        local modules = { oar = oar, ["oar.layers"] = layers, ["oar.optimizer"] = oar.optimizer,
          ["oar.regularizer"] = oar.regularizer, ["oar.clip"] = oar.clip, ["oar.initializer"] = oar.initializer,
          ["oar.io"] = oar.io, ["oar.tensor"] = oar.tensor, ["oar.backward"] = oar.backward }
        local mod_names = {}
        for name in pairs(modules) do mod_names[#mod_names + 1] = name end
        table.sort(mod_names)
        for _, mname in ipairs(mod_names) do
          for _, fname in ipairs(public_functions(modules[mname])) do
            fuzz(mname .. "." .. fname, modules[mname][fname])
          end
        end

        local x = layers.data{ name = "fz_x", shape = { 3 } }
        local cond1 = layers.less_than{ x = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 0 },
                                        y = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 1 } }
        local condN = layers.less_than{ x = layers.reduce_sum{ input = x, dim = 1, keep_dim = true },
                                        y = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 1 } }
        local classes = {
          { "Program", function() return oar.Program() end },
          { "Block", function() return oar.Program():global_block() end },
          { "Block(child)", function() return oar.Program():create_block() end },
          { "Variable", function() return oar.Program():global_block():create_var{ name = "v", shape = { 2 } } end },
          { "Parameter", function()
            return oar.Program():global_block():create_parameter{ name = "p", shape = { 2 }, dtype = "float32" } end },
          { "Operator", function()
            local b = oar.Program():global_block()
            local v = b:create_var{ name = "v", shape = { 2 } }
            return b:append_op{ type = "relu", inputs = { X = { v } }, outputs = { Out = { b:create_var{ name = "o" } } } }
          end },
          { "Tensor", function() return oar.Tensor({ { 1, 2 }, { 3, 4 } }) end },
          { "Scope", function() return oar.Scope() end },
          { "ScopeVariable", function() return oar.Scope():var("a") end },
          { "Executor", function() return oar.Executor(oar.CPUPlace()) end },
          { "Initializer", function() return oar.initializer.Xavier() end },
          { "Regularizer", function() return oar.regularizer.L2Decay(0.1) end },
          { "GradientClip", function() return oar.clip.GradientClipByGlobalNorm{ clip_norm = 1 } end },
          { "ParamAttr", function() return oar.ParamAttr{ name = "w" } end },
          { "Place", function() return oar.CPUPlace() end },
          { "IfElse", function() return layers.IfElse(condN) end },
          { "StaticRNN", function() return layers.StaticRNN() end },
          { "DynamicRNN", function() return layers.DynamicRNN() end },
          { "While", function() return layers.While(cond1) end },
          { "Switch", function() return layers.Switch() end },
          { "ConditionalBlock", function() return layers.ConditionalBlock({ cond1 }, true) end },
        }
        for _, k in ipairs({ "SGD", "Momentum", "Adam", "Adagrad", "RMSProp", "Adamax", "Adadelta" }) do
          classes[#classes + 1] = { k, function() return oar.optimizer[k]{ learning_rate = 0.1 } end }
        end
        for _, c in ipairs(classes) do
          for _, m in ipairs(methods(c[2]())) do
            if m ~= "close" then
              fuzz(c[1] .. ":" .. m, c[2]()[m], c[2])
            end
          end
        end
      end)
    end)
    oar.seed(seed)
    assert.is_true(calls > 2000, "only " .. calls .. " calls made")
    assert.are.same({}, failures)
  end)

  it("Executor:close, then run, is an error", function()
    local exe = oar.Executor(oar.CPUPlace())
    exe:close()
    exe:close()
    assert.truthy(errmsg(exe.run, exe, oar.Program()):find("closed", 1, true))
  end)
end)
