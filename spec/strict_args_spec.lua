-- Strict arguments (docs/api.md, "Checked arguments"): every silent mistake
-- of issue 14 is an error naming the function, the key and the closest valid
-- key, located at the line of this file that made it; misuse of control
-- flow and LoD is explained with the call to make.
local oar = require("oar")
local A = require("spec.helpers.api")
local argcheck = require("oar.argcheck")
local layers = oar.layers

local THIS_FILE = "strict_args_spec.lua"

-- the error message of fn(...), which must fail
local function errmsg(fn, ...)
  local ok, err = pcall(fn, ...)
  assert.is_false(ok, "expected an error")
  return tostring(err)
end

-- asserts the error of fn is located in this file and ends with `tail` exactly
local function expect(tail, fn, ...)
  local msg = errmsg(fn, ...)
  assert.truthy(msg:find(THIS_FILE .. ":%d+: "), "not located at the user's line: " .. msg)
  assert.are.equal(tail, msg:gsub("^.-" .. THIS_FILE .. ":%d+: ", ""), "message was: " .. msg)
end

local build = A.build

describe("strict arguments: the helper (oar.argcheck)", function()
  it("suggests the closest key: typos, transpositions, case, prefixes", function()
    assert.are.equal(1, argcheck.distance("inptu", "input"))       -- a transposition costs 1
    assert.are.equal(1, argcheck.distance("dtyp", "dtype"))
    assert.are.equal(3, argcheck.distance("kitten", "sitting"))
    assert.are.equal(0, argcheck.distance("", ""))
    assert.are.equal("input", argcheck.suggest("inptu", { "input", "size" }))
    assert.are.equal("act", argcheck.suggest("activation", { "act", "input", "size" }))
    assert.are.equal("Program", argcheck.suggest("program", { "Program", "layers" }))
    assert.is_nil(argcheck.suggest("zzzz", { "input", "size" }))
  end)

  it("keys() passes known keys, nil and positional values when allowed", function()
    local t = { input = 1 }
    assert.are.equal(t, argcheck.keys("f", t, "input size"))
    assert.is_nil(argcheck.keys("f", nil, "input"))
    assert.are.same({ 5 }, argcheck.keys("f", { 5 }, { "x" }, { positional = 1 }))
  end)

  it("keys() names the function, the key and the suggestion, or lists the valid keys", function()
    expect("layers.fc: unknown argument 'inptu' (did you mean 'input'?)",
      function() argcheck.keys("layers.fc", { inptu = 1 }, { "input", "size" }) end)
    expect("f: unknown argument 'qqq' (valid: input, size)",
      function() argcheck.keys("f", { qqq = 1 }, "input size") end)
    expect("f: unknown argument [1] (a positional value) (valid: x)",
      function() argcheck.keys("f", { 5 }, { "x" }) end)
  end)
end)

describe("strict arguments: the silent mistakes of issue 14", function()
  it("layers.fc{activation=} (the key is act)", function()
    build(function()
      local x = layers.data{ name = "x", shape = { 4 } }
      expect("layers.fc: unknown argument 'activation' (did you mean 'act'?)",
        function() layers.fc{ input = x, size = 2, activation = "relu" } end)
      expect("layers.fc: unknown argument 'inptu' (did you mean 'input'?)",
        function() layers.fc{ inptu = x, size = 2 } end)
    end)
  end)

  it("layers.fc{bias_atr=false}", function()
    build(function()
      local x = layers.data{ name = "x", shape = { 4 } }
      expect("layers.fc: unknown argument 'bias_atr' (did you mean 'bias_attr'?)",
        function() layers.fc{ input = x, size = 2, bias_atr = false } end)
    end)
  end)

  it("layers.data{dtyp=}", function()
    build(function()
      expect("layers.data: unknown argument 'dtyp' (did you mean 'dtype'?)",
        function() layers.data{ name = "ids", shape = { 1 }, dtyp = "int64" } end)
    end)
  end)

  it("prog:clone{for_tset=true}", function()
    local main = build(function() layers.data{ name = "x", shape = { 1 } } end)
    expect("Program:clone: unknown argument 'for_tset' (did you mean 'for_test'?)",
      function() main:clone{ for_tset = true } end)
    assert.is_true(oar.framework.is_program(main:clone{ for_test = true }))
  end)

  it("oar.optimizer.Adam{beta_1=0.5} and the other optimizers", function()
    expect("oar.optimizer.Adam: unknown argument 'beta_1' (did you mean 'beta1'?)",
      function() oar.optimizer.Adam{ beta_1 = 0.5 } end)
    expect("oar.optimizer.SGD: unknown argument 'learning_rat' (did you mean 'learning_rate'?)",
      function() oar.optimizer.SGD{ learning_rat = 0.1 } end)
    expect("oar.optimizer.Momentum: unknown argument 'nesterov' (did you mean 'use_nesterov'?)",
      function() oar.optimizer.Momentum{ learning_rate = 0.1, nesterov = true } end)
  end)

  it("exe:run(prog, {feeds=...})", function()
    local exe = oar.Executor(oar.CPUPlace())
    expect("Executor:run: unknown argument 'feeds' (did you mean 'feed'?)",
      function() exe:run(oar.Program(), { feeds = {} }) end)
    expect("Executor:run: unknown argument 'fetch' (did you mean 'fetch_list'?)",
      function() exe:run(oar.Program(), { fetch = {} }) end)
  end)

  it("oar.layres and oar.layers.fcc are errors; lazy modules and rawget probes still work", function()
    expect("oar: no field 'layres' (did you mean 'layers'?)", function() return oar.layres end)
    expect("oar.layers: no field 'fcc' (did you mean 'fc'?)", function() return layers.fcc end)
    assert.is_nil(rawget(oar, "no_such_thing"))
    assert.is_table(oar.io)            -- loaded on first read
    assert.is_not_nil(oar.DataFeeder)
  end)

  it("ParamAttr, initializers, clips, regularizers, append_backward and minimize options", function()
    expect("oar.ParamAttr: unknown argument 'nmae' (did you mean 'name'?)", function() oar.ParamAttr{ nmae = "w" } end)
    expect("oar.initializer.Uniform: unknown argument 'hi' (did you mean 'high'?)",
      function() oar.initializer.Uniform{ low = -1, hi = 1 } end)
    expect("oar.initializer.Constant: unknown argument 'val' (did you mean 'value'?)",
      function() oar.initializer.Constant{ val = 1 } end)
    expect("oar.clip.GradientClipByGlobalNorm: unknown argument 'clipnorm' (did you mean 'clip_norm'?)",
      function() oar.clip.GradientClipByGlobalNorm{ clipnorm = 1 } end)
    expect("oar.regularizer.L2Decay: unknown argument 'coef' (did you mean 'coeff'?)",
      function() oar.regularizer.L2Decay{ coef = 0.1 } end)
    build(function()
      local x = layers.data{ name = "x", shape = { 2 } }
      local loss = layers.mean(layers.fc{ input = x, size = 1 })
      expect("oar.append_backward: unknown argument 'no_grad' (did you mean 'no_grad_set'?)",
        function() oar.append_backward(loss, { no_grad = {} }) end)
      expect("SGD:minimize: unknown argument 'parameters' (did you mean 'parameter_list'?)",
        function() oar.optimizer.SGD{ learning_rate = 0.1 }:minimize(loss, { parameters = {} }) end)
    end)
  end)

  it("layers of every kind, control-flow constructors and memories", function()
    build(function()
      local x = layers.data{ name = "x", shape = { 4 } }
      expect("layers.relu: unknown argument 'input' (valid: name, x)", function() layers.relu{ input = x } end)
      expect("layers.leaky_relu: unknown argument 'alpah' (did you mean 'alpha'?)",
        function() layers.leaky_relu(x, { alpah = 0.1 }) end)
      expect("layers.reduce_sum: unknown argument 'keepdim' (did you mean 'keep_dim'?)",
        function() layers.reduce_sum{ input = x, keepdim = true } end)
      expect("layers.conv2d: unknown argument 'num_filter' (did you mean 'num_filters'?)",
        function() layers.conv2d{ input = x, num_filter = 2 } end)
      expect("layers.cross_entropy: unknown argument 'lable' (did you mean 'label'?)",
        function() layers.cross_entropy{ input = x, lable = x } end)
      expect("layers.While: unknown argument 'is_tset' (did you mean 'is_test'?)",
        function() layers.While{ cond = x, is_tset = true } end)
      expect("layers.StaticRNN: unknown argument 'nmae' (did you mean 'name'?)", function() layers.StaticRNN{ nmae = "r" } end)
      expect("layers.exponential_decay: unknown argument 'decay_step' (did you mean 'decay_steps'?)",
        function() layers.exponential_decay{ learning_rate = 0.1, decay_step = 10, decay_rate = 0.5 } end)
      local seq = layers.data{ name = "seq", shape = { 3 }, lod_level = 1 }
      local drnn = layers.DynamicRNN()
      expect("DynamicRNN:memory: unknown argument 'shap' (did you mean 'shape'?)", function()
        drnn:block(function()
          local w = drnn:step_input(seq)
          drnn:memory{ shap = { 3 } }
          drnn:output(w)
        end)
      end)
      local b = oar.default_main_program():global_block()
      expect("Block:create_var: unknown argument 'persistent' (did you mean 'persistable'?)",
        function() b:create_var{ name = "v", persistent = true } end)
      expect("Block:append_op: unknown argument 'attr' (did you mean 'attrs'?)",
        function() b:append_op{ type = "relu", inputs = { X = { x } }, outputs = { Out = { x } }, attr = {} } end)
    end)
  end)
end)

describe("a loss that is not one value", function()
  it("minimize and append_backward refuse it; oar.gradients with its gradient still works", function()
    local main, startup, per_row, sum, x = build(function()
      local x = layers.data{ name = "x", shape = { 2 } }
      local y = layers.fc{ input = x, size = 1, param_attr = "w", bias_attr = false }
      local per_row = layers.square_error_cost{ input = y, label = layers.fill_constant_batch_size_like{
        input = y, shape = { -1, 1 }, dtype = "float32", value = 0 } }
      return per_row, layers.reduce_sum{ input = layers.fill_constant{ shape = { 2, 3 }, dtype = "float32", value = 1 } }, x
    end)
    oar.program_guard(main, startup, function()
      local msg = errmsg(function() oar.optimizer.SGD{ learning_rate = 0.1 }:minimize(per_row) end)
      assert.truthy(msg:find(THIS_FILE, 1, true), msg)
      assert.truthy(msg:find("SGD:minimize: the loss '" .. per_row.name .. "' has shape [-1, 1] (one value per row), "
        .. "not one value; reduce it first, e.g. loss = layers.mean(", 1, true), msg)
      assert.truthy(msg:find("oar.gradients({loss}, inputs, {loss_grad})", 1, true), msg)
      msg = errmsg(function() oar.append_backward(per_row) end)
      assert.truthy(msg:find("append_backward: the loss '" .. per_row.name .. "' has shape [-1, 1]", 1, true), msg)
      -- a known shape of several values says how many
      local full = layers.fill_constant{ shape = { 2, 3 }, dtype = "float32", value = 1 }
      msg = errmsg(function() oar.append_backward(full) end)
      assert.truthy(msg:find("has shape [2, 3] (6 values)", 1, true), msg)
      -- a [1] loss (reduce_sum of everything) is fine
      assert.is_table(oar.append_backward(sum))
      -- the explicit path: d(sum of w*x rows weighted by g)/dw, g given
      local g = layers.fill_constant_batch_size_like{ input = per_row, shape = { -1, 1 }, dtype = "float32", value = 2 }
      local grads = oar.gradients({ per_row }, { x }, { g })
      assert.is_true(oar.is_variable(grads[1]))
    end)
  end)
end)

describe("control flow and LoD misuse in the user's terms", function()
  it("an IfElse block that uses an outer batch variable without ie:input says which call to make", function()
    build(function()
      local x = layers.data{ name = "x", shape = { 1 } }
      local cond = layers.less_than{ x = x, y = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 0 } }
      local ie = layers.IfElse(cond)
      local msg = errmsg(function()
        ie:true_block(function()
          ie:input(x)
          ie:output(layers.scale{ x = x, scale = 2 })
        end)
      end)
      assert.truthy(msg:find(THIS_FILE .. ":%d+: IfElse:true_block: op 'scale' %(built at [^)]*"
        .. THIS_FILE .. ":%d+%) reads 'x' %(float32 %[%-1, 1%]%) from outside the IfElse directly"), msg)
      assert.truthy(msg:find("local x_in = ie:input(x) inside the block, then use x_in", 1, true), msg)
      -- a non-batch outer value (a constant, a parameter) is fine, and so is x brought in
      local one = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 1 }
      local ie2 = layers.IfElse(cond)
      ie2:true_block(function() ie2:output(ie2:input(x) + one) end)
      ie2:false_block(function() ie2:output(ie2:input(x) - one) end)
      assert.is_true(oar.is_variable(ie2()))
    end)
  end)

  it("a lod_level=1 variable fed without a LoD is refused at the feed, with how to set one", function()
    local main, startup, out = build(function()
      local seq = layers.data{ name = "seq", shape = { 2 }, lod_level = 1 }
      return layers.sequence_pool{ input = seq, pool_type = "sum" }
    end)
    local t = oar.Tensor({ { 1, 2 }, { 3, 4 }, { 5, 6 } })
    local msg = errmsg(function() A.run(main, startup, { seq = t }, { out }) end)
    assert.truthy(msg:find("Executor:run: feed 'seq' is a sequence variable (lod_level=1) but its Tensor has no LoD; "
      .. "give it one with t:set_lod{{0, 2, 5}}", 1, true), msg)
    assert.truthy(msg:find("here the offsets run from 0 to 3 rows", 1, true), msg)
    -- a plain table has no LoD either
    msg = errmsg(function() A.run(main, startup, { seq = { { 1, 2 } } }, { out }) end)
    assert.truthy(msg:find("feed 'seq' is a sequence variable (lod_level=1)", 1, true), msg)
    -- with a LoD it runs: sequences {1,2} and {3}: sums {4, 6} and {5, 6}
    t:set_lod{ { 0, 2, 3 } }
    local res = A.run(main, startup, { seq = t }, { out })
    assert.are.same({ { 4, 6 }, { 5, 6 } }, res[1]:totable())
  end)

  it("a DynamicRNN fed a tensor without LoD is refused at the feed", function()
    local main, startup, out = build(function()
      local seq = layers.data{ name = "words", shape = { 2 }, lod_level = 1 }
      local drnn = layers.DynamicRNN()
      drnn:block(function()
        local w = drnn:step_input(seq)
        drnn:output(layers.scale{ x = w, scale = 2 })
      end)
      return drnn()
    end)
    local msg = errmsg(function() A.run(main, startup, { words = oar.Tensor({ { 1, 2 }, { 3, 4 } }) }, { out }) end)
    assert.truthy(msg:find("feed 'words' is a sequence variable (lod_level=1) but its Tensor has no LoD; "
      .. "give it one with t:set_lod{{0, 2, 5}}", 1, true), msg)
    assert.falsy(msg:find("lod_rank_table", 1, true), msg)
  end)
end)
