-- Argument and receiver checks of the control-flow API (lua/oar/layers/
-- control_flow.lua): every misuse is a Lua error naming the function, the
-- argument, what was expected and what was given, raised at the caller's
-- line; never Lua's own "attempt to index a nil value".
local oar = require("oar")
local layers = oar.layers

local THIS_FILE = "control_flow_args_spec.lua"

local function refuses(fn, ...)
  local ok, err = pcall(fn)
  assert.is_false(ok, "expected an error")
  assert.are.equal("string", type(err))
  assert.is_nil(err:find("attempt to ", 1, true), err)
  assert.is_nil(err:find("bad argument #", 1, true), err)
  for _, pat in ipairs({ ... }) do
    assert.is_truthy(err:find(pat, 1, true), ("error %q does not mention %q"):format(err, pat))
  end
  return err
end

-- fn(v) in a fresh program, v holding Variables of every kind
local function with_program(fn)
  local main, startup = oar.Program(), oar.Program()
  oar.unique_name.guard(function()
    oar.program_guard(main, startup, function()
      local v = {}
      v.x = layers.data{ name = "x", shape = { 3 }, lod_level = 1 }                          -- float32 [-1, 3]
      v.s = layers.data{ name = "s", shape = { 4, 2, 3 }, append_batch_size = false }       -- [T, N, D]
      v.c = layers.data{ name = "c", shape = { 1 }, dtype = "bool" }                          -- bool [-1, 1]
      v.p = layers.fill_constant{ shape = { 1 }, dtype = "bool", value = true }              -- bool [1]
      v.b3 = layers.fill_constant{ shape = { 3 }, dtype = "bool", value = true }             -- bool [3]
      v.i = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 0 }
      v.i3 = layers.fill_constant{ shape = { 3 }, dtype = "int64", value = 0 }
      v.f = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 0 }
      v.arr = layers.create_array("float32")
      v.t = layers.lod_rank_table(v.x)
      fn(v)
    end)
  end)
end

describe("control-flow arguments: errors at the caller's line", function()
  it("points at the line of the bad call, not at oar's internals", function()
    with_program(function(v)
      local line = debug.getinfo(1, "l").currentline + 1
      local ok, err = pcall(function() layers.array_write{ x = v.x } end)
      assert.is_false(ok)
      assert.is_truthy(err:find(THIS_FILE .. ":" .. line .. ": array_write: 'i'", 1, true), err)
      local rnn = layers.StaticRNN()
      local line2 = debug.getinfo(1, "l").currentline + 1
      local ok2, err2 = pcall(function() rnn.step_input(v.s) end)
      assert.is_false(ok2)
      assert.is_truthy(err2:find(THIS_FILE .. ":" .. line2 .. ": StaticRNN:step_input", 1, true), err2)
    end)
  end)
end)

describe("control-flow arguments: tensor arrays", function()
  it("create_array", function()
    with_program(function()
      refuses(function() layers.create_array("nope") end, "create_array", "'dtype'", "string 'nope'")
      refuses(function() layers.create_array(42) end, "create_array", "'dtype'", "number 42")
    end)
  end)

  it("array_write", function()
    with_program(function(v)
      refuses(function() layers.array_write{ x = v.x } end,
        "array_write: 'i' must be a Variable (int64 [1]), got nil")
      refuses(function() layers.array_write(v.x, nil) end, "array_write: 'i' must be a Variable (int64 [1]), got nil")
      refuses(function() layers.array_write(nil, v.i) end, "array_write: 'x' must be a Variable, got nil")
      refuses(function() layers.array_write(42, v.i) end, "array_write", "'x'", "number 42")
      refuses(function() layers.array_write(v.arr, v.i) end, "array_write", "'x'", "tensor Variable", "tensor array")
      refuses(function() layers.array_write(v.x, v.f) end, "array_write", "'i'", "int64 [1]", "float32 [1]")
      refuses(function() layers.array_write(v.x, v.i3) end, "array_write", "'i'", "int64 [1]", "int64 [3]")
      refuses(function() layers.array_write(v.x, "0") end, "array_write", "'i'", "string '0'")
      refuses(function() layers.array_write(v.x, v.i, v.x) end, "array_write", "'array'", "tensor array", "Variable 'x'")
      refuses(function() layers.array_write{ x = v.x, i = v.i, array = {} } end, "array_write", "'array'", "got {}")
    end)
  end)

  it("array_read", function()
    with_program(function(v)
      refuses(function() layers.array_read() end, "array_read: 'array' must be a tensor array", "got nil")
      refuses(function() layers.array_read(v.x, v.i) end, "array_read", "'array'", "tensor array", "Variable 'x'")
      refuses(function() layers.array_read{ array = v.arr } end, "array_read: 'i' must be a Variable (int64 [1]), got nil")
      refuses(function() layers.array_read(v.arr, v.x) end, "array_read", "'i'", "int64 [1]", "Variable 'x'")
      refuses(function() layers.array_read(42) end, "array_read", "'array'", "number 42")
    end)
  end)

  it("array_length", function()
    with_program(function(v)
      refuses(function() layers.array_length() end, "array_length", "'array'", "tensor array", "got nil")
      refuses(function() layers.array_length(v.x) end, "array_length", "'array'", "Variable 'x'")
      refuses(function() layers.array_length{ array = "a" } end, "array_length", "'array'", "string 'a'")
    end)
  end)
end)

describe("control-flow arguments: LoD rank tables", function()
  it("lod_rank_table", function()
    with_program(function(v)
      refuses(function() layers.lod_rank_table() end, "lod_rank_table: 'x' must be a Variable, got nil")
      refuses(function() layers.lod_rank_table(v.arr) end, "lod_rank_table", "'x'", "tensor Variable", "tensor array")
      refuses(function() layers.lod_rank_table(v.x, -1) end, "lod_rank_table", "'level'", ">= 0", "-1")
      refuses(function() layers.lod_rank_table{ x = v.x, level = "a" } end, "lod_rank_table", "'level'", "integer")
    end)
  end)

  it("max_sequence_len", function()
    with_program(function(v)
      refuses(function() layers.max_sequence_len() end, "max_sequence_len", "'rank_table'", "LoD rank table", "got nil")
      refuses(function() layers.max_sequence_len(v.x) end, "max_sequence_len", "'rank_table'", "Variable 'x'")
      refuses(function() layers.max_sequence_len(7) end, "max_sequence_len", "'rank_table'", "number 7")
    end)
  end)

  it("lod_tensor_to_array and array_to_lod_tensor", function()
    with_program(function(v)
      refuses(function() layers.lod_tensor_to_array(nil, v.t) end, "lod_tensor_to_array", "'x'", "got nil")
      refuses(function() layers.lod_tensor_to_array(v.arr, v.t) end, "lod_tensor_to_array", "'x'", "tensor array")
      refuses(function() layers.lod_tensor_to_array(v.x, v.x) end, "lod_tensor_to_array", "'table'", "LoD rank table",
        "Variable 'x'")
      refuses(function() layers.lod_tensor_to_array{ x = v.x } end, "lod_tensor_to_array", "'table'", "got nil")
      refuses(function() layers.array_to_lod_tensor(v.x, v.t) end, "array_to_lod_tensor", "'x'", "tensor array",
        "Variable 'x'")
      refuses(function() layers.array_to_lod_tensor(v.arr) end, "array_to_lod_tensor", "'table'", "got nil")
      refuses(function() layers.array_to_lod_tensor(v.arr, v.arr) end, "array_to_lod_tensor", "'table'", "tensor array")
    end)
  end)

  it("reorder_lod_tensor_by_rank", function()
    with_program(function(v)
      refuses(function() layers.reorder_lod_tensor_by_rank(nil, v.t) end, "reorder_lod_tensor_by_rank", "'x'", "nil")
      refuses(function() layers.reorder_lod_tensor_by_rank(v.x) end, "reorder_lod_tensor_by_rank", "'rank_table'",
        "LoD rank table", "got nil")
      refuses(function() layers.reorder_lod_tensor_by_rank(v.x, v.x) end, "reorder_lod_tensor_by_rank", "'rank_table'",
        "Variable 'x'")
    end)
  end)

  it("shrink_memory", function()
    with_program(function(v)
      refuses(function() layers.shrink_memory(nil, v.i, v.t) end, "shrink_memory", "'x'", "got nil")
      refuses(function() layers.shrink_memory(v.x, v.x, v.t) end, "shrink_memory", "'i'", "int64 [1]", "Variable 'x'")
      refuses(function() layers.shrink_memory(v.x, v.i) end, "shrink_memory", "'table'", "LoD rank table", "got nil")
      refuses(function() layers.shrink_memory{ x = v.x, i = v.i, table = v.x } end, "shrink_memory", "'table'")
    end)
  end)

  it("lod_reset", function()
    with_program(function(v)
      refuses(function() layers.lod_reset() end, "lod_reset: 'x' must be a Variable, got nil")
      refuses(function() layers.lod_reset(v.x) end, "lod_reset", "'target_lod'", "list of offsets", "or give y", "got nil")
      refuses(function() layers.lod_reset{ x = v.x, target_lod = { 1, 2 } } end, "lod_reset", "'target_lod'", "{1, 2}")
      refuses(function() layers.lod_reset{ x = v.x, target_lod = { 0, 3, 2 } } end, "lod_reset", "'target_lod'",
        "{0, 3, 2}")
      refuses(function() layers.lod_reset{ x = v.x, target_lod = { 0, "a" } } end, "lod_reset", "'target_lod'")
      refuses(function() layers.lod_reset{ x = v.x, target_lod = 5 } end, "lod_reset", "'target_lod'", "number 5")
      refuses(function() layers.lod_reset{ x = v.x, y = v.arr } end, "lod_reset", "'y'", "tensor Variable", "tensor array")
      refuses(function() layers.lod_reset{ x = v.x, y = 3 } end, "lod_reset", "'y'", "number 3")
      refuses(function() layers.lod_reset{ x = v.x, target_lod = { 0, 2 }, append = "yes" } end, "lod_reset", "'append'",
        "boolean")
    end)
  end)

  it("Print", function()
    with_program(function(v)
      refuses(function() layers.Print() end, "Print: 'input' must be a Variable, got nil")
      refuses(function() layers.Print(v.arr) end, "Print", "'input'", "tensor Variable", "tensor array")
      refuses(function() layers.Print(v.x, 5) end, "Print", "'options'", "table", "number 5")
      refuses(function() layers.Print(v.x, { print_phase = "sideways" }) end, "Print", "'print_phase'", "sideways")
      refuses(function() layers.Print(v.x, { first_n = 1.5 }) end, "Print", "'first_n'", "integer")
    end)
  end)

  it("increment", function()
    with_program(function(v)
      refuses(function() layers.increment() end, "increment", "'x'", "got nil")
      refuses(function() layers.increment(v.i, "one") end, "increment", "'value'", "number")
    end)
  end)
end)

describe("control-flow arguments: While, ConditionalBlock, Switch, cond", function()
  it("While", function()
    with_program(function(v)
      refuses(function() layers.While() end, "While: 'cond' must be a bool Variable of one element, got nil")
      refuses(function() layers.While(v.x) end, "While", "'cond'", "bool", "Variable 'x' (float32 [-1, 3])")
      refuses(function() layers.While(v.b3) end, "While", "'cond'", "one element", "bool [3]")
      refuses(function() layers.While(42) end, "While", "'cond'", "number 42")
      refuses(function() layers.While{ cond = v.p, name = 5 } end, "While", "'name'", "string", "number 5")
      refuses(function() layers.While(v.p, "no") end, "While", "'is_test'", "boolean")
      local loop = layers.While(v.p)
      refuses(function() loop.block(function() end) end, "While:block: call it with ':' on a While")
      refuses(function() loop:block(42) end, "While:block", "'fn'", "function", "number 42")
      refuses(function() loop:block() end, "While:block", "'fn'", "got nil")
    end)
  end)

  it("ConditionalBlock", function()
    with_program(function(v)
      refuses(function() layers.ConditionalBlock() end, "ConditionalBlock", "'inputs'", "got nil")
      refuses(function() layers.ConditionalBlock({ 42 }) end, "ConditionalBlock", "'inputs[1]'", "number 42")
      refuses(function() layers.ConditionalBlock("c") end, "ConditionalBlock", "'inputs'", "string 'c'")
      refuses(function() layers.ConditionalBlock({ v.arr }) end, "ConditionalBlock", "'inputs[1]'", "tensor array")
      refuses(function() layers.ConditionalBlock({ v.x }, true) end, "ConditionalBlock", "'inputs[1]'",
        "bool Variable of one element", "Variable 'x'")
      refuses(function() layers.ConditionalBlock({ v.p }, "yes") end, "ConditionalBlock", "'is_scalar_condition'",
        "boolean")
      local cb = layers.ConditionalBlock({ v.p }, true)
      refuses(function() cb.block(function() end) end, "ConditionalBlock:block: call it with ':' on a ConditionalBlock")
      refuses(function() cb:block("f") end, "ConditionalBlock:block", "'fn'", "function")
    end)
  end)

  it("Switch", function()
    with_program(function(v)
      refuses(function() layers.Switch(3) end, "Switch", "'name'", "string")
      local sw = layers.Switch()
      refuses(function() sw.case(v.p, function() end) end, "Switch:case: call it with ':' on a Switch")
      refuses(function() sw.default(function() end) end, "Switch:default: call it with ':' on a Switch")
      refuses(function() sw:case(nil, function() end) end, "Switch:case: 'cond' must be a bool Variable of one element",
        "got nil")
      refuses(function() sw:case(v.x, function() end) end, "Switch:case", "'cond'", "Variable 'x'")
      refuses(function() sw:case(v.p) end, "Switch:case", "'fn'", "function", "got nil")
      refuses(function() sw:default(5) end, "Switch:default", "'fn'", "number 5")
    end)
  end)

  it("cond", function()
    with_program(function(v)
      local function f() return v.f end
      refuses(function() layers.cond(nil, f, f) end, "cond: 'pred' must be a bool Variable of one element, got nil")
      refuses(function() layers.cond(v.f, f, f) end, "cond", "'pred'", "bool", "float32 [1]")
      refuses(function() layers.cond(v.b3, f, f) end, "cond", "'pred'", "one element", "bool [3]")
      refuses(function() layers.cond(v.p, 5, f) end, "cond", "'true_fn'", "function", "number 5")
      refuses(function() layers.cond(v.p, f, "x") end, "cond", "'false_fn'", "function", "string 'x'")
      refuses(function() layers.cond(v.p, f, f, 7) end, "cond", "'name'", "string")
      refuses(function() layers.cond{ pred = v.p, true_fn = {} } end, "cond", "'true_fn'", "function")
    end)
  end)
end)

describe("control-flow arguments: IfElse", function()
  it("IfElse and its methods", function()
    with_program(function(v)
      refuses(function() layers.IfElse() end, "IfElse: 'cond' must be a bool Variable", "got nil")
      refuses(function() layers.IfElse(v.x) end, "IfElse", "'cond'", "bool", "Variable 'x'")
      refuses(function() layers.IfElse(v.arr) end, "IfElse", "'cond'", "tensor array")
      refuses(function() layers.IfElse(v.c, 5) end, "IfElse", "'name'", "string")
      local ie = layers.IfElse(v.c)
      refuses(function() ie.true_block(function() end) end, "IfElse:true_block: call it with ':' on an IfElse")
      refuses(function() ie.false_block(function() end) end, "IfElse:false_block: call it with ':' on an IfElse")
      refuses(function() ie.input(v.x) end, "IfElse:input: call it with ':' on an IfElse", "Variable 'x'")
      refuses(function() ie.output(v.x) end, "IfElse:output: call it with ':' on an IfElse")
      refuses(function() ie:true_block() end, "IfElse:true_block", "'fn'", "function", "got nil")
      refuses(function() ie:false_block({}) end, "IfElse:false_block", "'fn'", "function", "got {}")
      refuses(function() ie:true_block(function() ie:input(nil) end) end, "IfElse:input: 'x' must be a Variable, got nil")
      local ie2 = layers.IfElse(v.c)
      refuses(function() ie2:true_block(function() ie2:input(v.arr) end) end, "IfElse:input", "'x'", "tensor array")
      local ie3 = layers.IfElse(v.c)
      refuses(function() ie3:true_block(function() ie3:input(layers.scale(v.x)) end) end, "IfElse:input", "'x'",
        "made inside the block")
      local ie4 = layers.IfElse(v.c)
      refuses(function() ie4:true_block(function() ie4:output(ie4:input(v.x), 3) end) end, "IfElse:output",
        "'output 2'", "number 3")
      refuses(function() getmetatable(ie4).__call(nil) end, "IfElse()", "IfElse", "got nil")
    end)
  end)
end)

describe("control-flow arguments: StaticRNN", function()
  it("StaticRNN and its methods", function()
    with_program(function(v)
      refuses(function() layers.StaticRNN(4) end, "StaticRNN", "'name'", "string")
      local rnn = layers.StaticRNN()
      for _, m in ipairs({ "step", "step_input", "memory", "update_memory", "step_output", "output" }) do
        refuses(function() rnn[m](v.s) end, "StaticRNN:" .. m .. ": call it with ':' on a StaticRNN", "Variable 's'")
        refuses(function() rnn[m]() end, "StaticRNN:" .. m .. ": call it with ':' on a StaticRNN", "got nil")
      end
      refuses(function() rnn:step(42) end, "StaticRNN:step", "'fn'", "function", "number 42")
      refuses(function() rnn:output(v.s) end, "StaticRNN:output", "inside rnn:step")
      local function in_step(body)
        local r = layers.StaticRNN()
        r:step(function() body(r) end)
      end
      refuses(function() in_step(function(r) r:step_input() end) end, "StaticRNN:step_input: 'x' must be a Variable, got nil")
      refuses(function() in_step(function(r) r:step_input(v.arr) end) end, "StaticRNN:step_input", "'x'", "tensor array")
      refuses(function() in_step(function(r) r:step_input(layers.scale(v.s)) end) end, "StaticRNN:step_input", "'x'",
        "made inside the step")
      refuses(function() in_step(function(r) r:memory(5) end) end, "StaticRNN:memory", "number 5")
      refuses(function() in_step(function(r) r:memory{ shape = 5, batch_ref = r:step_input(v.s) } end) end,
        "StaticRNN:memory", "'shape'", "list of integers", "number 5")
      refuses(function() in_step(function(r) r:memory{ shape = { -1, "a" }, batch_ref = r:step_input(v.s) } end) end,
        "StaticRNN:memory", "'shape'", "list of integers")
      refuses(function() in_step(function(r) r:memory{ shape = { -1, 3 }, batch_ref = v.arr } end) end,
        "StaticRNN:memory", "'batch_ref'", "tensor array")
      refuses(function()
        in_step(function(r) r:memory{ shape = { -1, 3 }, batch_ref = r:step_input(v.s), value = "zero" } end)
      end, "StaticRNN:memory", "'value'", "number")
      refuses(function() in_step(function(r) r:memory{ init = v.arr } end) end, "StaticRNN:memory", "'init'",
        "tensor array")
      refuses(function() in_step(function(r) r:memory{ init = layers.scale(r:step_input(v.s)) } end) end,
        "StaticRNN:memory", "'init'", "made inside the step")
      local h0 = layers.fill_constant{ shape = { 2, 3 }, dtype = "float32", value = 0 }
      refuses(function() in_step(function(r) r:update_memory(nil, r:step_input(v.s)) end) end,
        "StaticRNN:update_memory: 'mem' must be a Variable, got nil")
      refuses(function() in_step(function(r) r:update_memory(r:memory{ init = h0 }, 3) end) end,
        "StaticRNN:update_memory", "'value'", "number 3")
      refuses(function() in_step(function(r) r:step_output("o") end) end, "StaticRNN:step_output", "'o'", "string 'o'")
      refuses(function() in_step(function(r) r:output(r:step_input(v.s), nil) end) end, "StaticRNN:output",
        "'output 2'", "got nil")
      refuses(function() getmetatable(rnn).__call(5) end, "StaticRNN()", "number 5")
    end)
  end)
end)

describe("control-flow arguments: DynamicRNN", function()
  it("DynamicRNN and its methods", function()
    with_program(function(v)
      refuses(function() layers.DynamicRNN(4) end, "DynamicRNN", "'name'", "string")
      local drnn = layers.DynamicRNN()
      for _, m in ipairs({ "block", "step_input", "static_input", "memory", "update_memory", "output" }) do
        refuses(function() drnn[m](v.x) end, "DynamicRNN:" .. m .. ": call it with ':' on a DynamicRNN", "Variable 'x'")
        refuses(function() drnn[m]() end, "DynamicRNN:" .. m .. ": call it with ':' on a DynamicRNN", "got nil")
      end
      refuses(function() drnn:block("f") end, "DynamicRNN:block", "'fn'", "function", "string 'f'")
      refuses(function() drnn:output(v.x) end, "DynamicRNN:output", "inside drnn:block")
      local function in_block(body)
        local d = layers.DynamicRNN()
        d:block(function() body(d) end)
      end
      refuses(function() in_block(function(d) d:step_input() end) end, "DynamicRNN:step_input: 'x' must be a Variable, got nil")
      refuses(function() in_block(function(d) d:step_input(v.arr) end) end, "DynamicRNN:step_input", "'x'", "tensor array")
      refuses(function() in_block(function(d) d:step_input(v.x, "a") end) end, "DynamicRNN:step_input", "'level'",
        "integer")
      refuses(function() in_block(function(d) d:step_input(layers.scale(v.x)) end) end, "DynamicRNN:step_input", "'x'",
        "made inside the step")
      refuses(function() in_block(function(d) d:step_input(v.x); d:static_input(5) end) end, "DynamicRNN:static_input",
        "'x'", "number 5")
      refuses(function() in_block(function(d) d:step_input(v.x); d:memory(5) end) end, "DynamicRNN:memory", "number 5")
      refuses(function() in_block(function(d) d:step_input(v.x); d:memory{ shape = "a" } end) end, "DynamicRNN:memory",
        "'shape'", "list of integers", "string 'a'")
      refuses(function() in_block(function(d) d:step_input(v.x); d:memory{ shape = { 2 }, value = "v" } end) end,
        "DynamicRNN:memory", "'value'", "number")
      refuses(function() in_block(function(d) d:step_input(v.x); d:memory{ shape = { 2 }, dtype = "nope" } end) end,
        "DynamicRNN:memory", "'dtype'")
      refuses(function() in_block(function(d) d:step_input(v.x); d:memory{ init = v.arr } end) end, "DynamicRNN:memory",
        "'init'", "tensor array")
      refuses(function() in_block(function(d) d:memory{ init = layers.scale(d:step_input(v.x)) } end) end,
        "DynamicRNN:memory", "'init'", "made inside the step")
      refuses(function() in_block(function(d) d:step_input(v.x); d:memory{ init = v.x, need_reorder = "yes" } end) end,
        "DynamicRNN:memory", "'need_reorder'", "boolean")
      refuses(function() in_block(function(d) d:memory{ init = v.x, need_reorder = true } end) end,
        "DynamicRNN:memory", "call step_input first")
      refuses(function() in_block(function(d) d:update_memory(nil, d:step_input(v.x)) end) end,
        "DynamicRNN:update_memory: 'ex_mem' must be a Variable, got nil")
      refuses(function() in_block(function(d) d:update_memory(d:step_input(v.x), 1) end) end,
        "DynamicRNN:update_memory", "'new_mem'", "number 1")
      refuses(function() in_block(function(d) d:output(d:step_input(v.x), v.arr) end) end, "DynamicRNN:output",
        "'output 2'", "tensor array")
      refuses(function() getmetatable(drnn).__call({}) end, "DynamicRNN()", "DynamicRNN")
    end)
  end)
end)

describe("control-flow arguments: valid calls still build", function()
  it("positional and keyword forms of the array and rank-table layers", function()
    with_program(function(v)
      local arr = layers.array_write(v.x, v.i)
      assert.are.equal("lod_tensor_array", arr.type)
      assert.are.equal(arr, layers.array_write{ x = v.x, i = v.i, array = arr })
      assert.are.equal("float32", layers.array_read(arr, v.i).dtype)
      assert.are.equal("int64", layers.array_length{ array = arr }.dtype)
      local t = layers.lod_rank_table{ x = v.x, level = 0 }
      assert.are.equal("lod_rank_table", t.type)
      assert.is_true(oar.is_variable(layers.max_sequence_len{ rank_table = t }))
      local a2 = layers.lod_tensor_to_array(v.x, t)
      assert.is_true(oar.is_variable(layers.array_to_lod_tensor{ x = a2, table = t }))
      assert.is_true(oar.is_variable(layers.reorder_lod_tensor_by_rank(v.x, t)))
      assert.is_true(oar.is_variable(layers.shrink_memory(v.x, v.i, t)))
      assert.is_true(oar.is_variable(layers.lod_reset{ x = v.x, target_lod = { 0, 1, 2 } }))
      assert.is_true(oar.is_variable(layers.lod_reset(v.x, v.i3)))
      assert.are.equal(v.x, layers.Print(v.x, { message = "x" }))
      local cb = layers.ConditionalBlock({ v.p }, true)
      cb:block(function() layers.increment{ x = v.i, value = 1 } end)
      local cb2 = layers.ConditionalBlock{ inputs = { v.x } }
      cb2:block(function() layers.scale(v.x) end)
    end)
  end)
end)
