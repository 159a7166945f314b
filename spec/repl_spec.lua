-- oar.repl: expression-first evaluation, continuation lines, printing by
-- type, error trimming, ?help from doc comments (on a fixture module) and Tab
-- completion. spec/repl_tty_spec.lua drives the real command in a terminal.
local repl = require("oar.repl")
local doc = require("oar.repl_doc")
local complete = require("oar.repl_complete")

local function capture(fn)
  local out, err = {}, {}
  local real_out, real_err = io.stdout, io.stderr
  local function sink(list)
    return { write = function(_, ...) for _, s in ipairs({ ... }) do list[#list + 1] = tostring(s) end end,
             flush = function() end }
  end
  io.stdout, io.stderr = sink(out), sink(err)
  local ok, res = pcall(fn)
  io.stdout, io.stderr = real_out, real_err
  assert(ok, res)
  return table.concat(out), table.concat(err), res
end

describe("oar.repl", function()
  local env = repl.env()

  it("prints the value of an expression", function()
    local out = capture(function() return repl.eval("1 + 2", env) end)
    assert.are.equal("3\n", out)
  end)

  it("runs statements and keeps globals between chunks", function()
    capture(function() repl.eval("repl_spec_x = 20", env) end)
    local out = capture(function() return repl.eval("repl_spec_x + 1", env) end)
    assert.are.equal("21\n", out)
    repl_spec_x = nil
  end)

  it("asks for more input on an unfinished chunk", function()
    local _, _, done = capture(function() return repl.eval("function f(a)", env) end)
    assert.is_false(done)
    _, _, done = capture(function() return repl.eval("y = 1 +", env) end)
    assert.is_false(done)
    local out
    out, _, done = capture(function() return repl.eval("(function(a)\n return a * 2\nend)(21)", env) end)
    assert.is_true(done)
    assert.are.equal("42\n", out)
  end)

  it("reports errors without stopping", function()
    local out, err, done = capture(function() return repl.eval("error('boom')", env) end)
    assert.is_true(done)
    assert.are.equal("", out)
    assert.truthy(err:find("boom", 1, true))
  end)

  it("prints tensors with their own tostring and tables as a listing", function()
    local out = capture(function() return repl.eval("oar.Tensor({{1, 2}}, 'float64')", env) end)
    assert.truthy(out:find("shape=[1, 2]", 1, true))
    out = capture(function() return repl.eval("{1, 2, a = 'x'}", env) end)
    assert.are.equal('{1, 2, a = "x"}\n', out)
  end)

  it("prints an eager tensor result as a tensor: values, shape and dtype", function()
    local out = capture(function() return repl.eval("oar.ones(2, 3) * 2 + 1", env) end)
    assert.truthy(out:find("^Tensor%(%[%[3, 3, 3%],"), out)
    assert.truthy(out:find("shape=[2, 3], dtype=float32)", 1, true), out)
    out = capture(function() return repl.eval("oar.eye(2):matmul(oar.Tensor({{1, 2}, {3, 4}})):t()", env) end)
    assert.truthy(out:find("[[1, 3],", 1, true), out)
  end)

  it("prints every value of a multiple return, nils included", function()
    local out = capture(function() return repl.eval("1, nil, 3", env) end)
    assert.are.equal("1\tnil\t3\n", out)
  end)

  it("runs `a = 1; a` as a statement then an expression", function()
    local out, err, done = capture(function() return repl.eval("repl_spec_a = 1; repl_spec_a", env) end)
    assert.is_true(done)
    assert.are.equal("", err)
    assert.are.equal("1\n", out)
    out, err, done = capture(function() return repl.eval("repl_spec_a = 5; repl_spec_a + 1, 7", env) end)
    assert.are.equal("6\t7\n", out)
    repl_spec_a = nil
  end)

  it("continues only when Lua stopped at the end of the input", function()
    for _, src in ipairs({ "1 +", "f(", "x = {", "s = [[abc", "if true then", "local t = {1; 2" }) do
      local _, _, done = capture(function() return repl.eval(src, env) end)
      assert.is_false(done, src)
    end
    -- errors anywhere else end the chunk at once: nothing swallows later lines
    for _, src in ipairs({ ")", "x = = 1", "a = 1; a\nprint(1)", "return 1 2", "end" }) do
      local _, err, done = capture(function() return repl.eval(src, env) end)
      assert.is_true(done, src)
      assert.truthy(err:find("stdin:", 1, true), src .. ": " .. err)
    end
    local out, _, done = capture(function() return repl.eval("2 * 21", env) end)
    assert.is_true(done)
    assert.are.equal("42\n", out)
  end)

  it("locates an expression's error on its line, numbered by the session", function()
    local _, err = capture(function() return repl.eval("error('boom')", env) end)
    assert.are.equal("stdin:1: boom\n", err)
    _, err = capture(function() return repl.eval("nil_global_xyz.field", env, { first_line = 12 }) end)
    assert.truthy(err:find("^stdin:12: attempt to index global 'nil_global_xyz'"), err)
  end)

  it("trims errors to the user's frames", function()
    -- an error raised inside oar: no frame of oar's or the REPL's own files
    local _, err = capture(function() return repl.eval("layers.fc{input = 1, size = 2}", env) end)
    assert.truthy(err:find("fc", 1, true), err)
    assert.is_nil(err:find("repl.lua", 1, true), err)
    assert.is_nil(err:find("in function", 1, true), err)
    assert.is_nil(err:find("[C]", 1, true), err)
    -- the user's own functions are listed
    capture(function() repl.eval("function repl_spec_g() error('deep') end\nfunction repl_spec_f() repl_spec_g() end", env) end)
    _, err = capture(function() return repl.eval("repl_spec_f()", env, { first_line = 3 }) end)
    assert.truthy(err:find("^stdin:1: deep\n"), err)
    assert.truthy(err:find("in function 'repl_spec_g'", 1, true), err)
    assert.truthy(err:find("in function 'repl_spec_f'", 1, true), err)
    assert.truthy(err:find("stdin:3: in main chunk", 1, true), err)
    assert.is_nil(err:find("xpcall", 1, true), err)
    repl_spec_f, repl_spec_g = nil, nil
  end)

  it("prints a module as a sorted summary grouped by kind", function()
    local out = capture(function() return repl.eval("layers", env) end)
    assert.is_nil(out:find("0x", 1, true), out)
    assert.truthy(out:find("^oar%.layers %(%d+ fields"), out)
    assert.truthy(out:find("\n  functions\n", 1, true), out)
    local function at(name) return out:find("%f[%w_]" .. name .. "%f[^%w_]") end
    local fc, mean, data = at("fc"), at("mean"), at("data")
    assert.truthy(fc and mean and data, out)
    assert.is_true(data < fc and fc < mean) -- sorted
    out = capture(function() return repl.eval("oar", env) end)
    assert.truthy(out:find("\n  tables\n", 1, true), out)
    assert.truthy(out:find("layers", 1, true), out)
    assert.truthy(out:find("modules loaded on first use", 1, true), out)
  end)
end)

describe("oar.repl_doc", function()
  local path = "spec/fixtures/repl_doc_fixture.lua"
  local fx = dofile(path)

  local function doc_of(fn, name)
    local info = doc.for_function(fn, name, path)
    assert.truthy(info, name)
    return info
  end

  it("parses an LDoc block above `function M.name`", function()
    local info = doc_of(fx.add, "add")
    assert.are.equal("(a, b)", info.signature)
    assert.are.equal(17, info.line)
    local d = info.doc
    assert.are.equal("Adds two numbers.", d.summary)
    assert.are.same({ "Adds two numbers.", "Works on integers and floats alike." }, d.text)
    assert.are.equal(2, #d.params)
    assert.are.same({ name = "a", type = "number", desc = "the first" }, d.params[1])
    assert.are.same({ name = "b", type = "number", desc = "the second, on two lines", opt = "0" }, d.params[2])
    assert.are.same({ { type = "number", desc = "the sum" } }, d.returns)
    assert.are.same({ "local s = M.add(1, 2)", "print(s)  -- 3" }, d.usage)
  end)

  it("reads plain comments, `M.name = function`, classes and long comments", function()
    local d = doc_of(fx.twice, "twice").doc
    assert.are.same({ "A plain comment right above the definition.", "Second line." }, d.text)
    d = doc_of(fx.Class.new, "new").doc
    assert.are.equal("Makes a Class.", d.summary)
    assert.are.same({ "args", "args.size" }, { d.params[1].name, d.params[2].name })
    assert.are.equal("the new object", d.returns[1].desc)
    local info = doc_of(fx.Class.get_size, "get_size")
    assert.are.equal("()", info.signature)
    assert.are.equal("The size, from a long comment.", info.doc.summary)
    assert.are.equal("number", info.doc.returns[1].type)
  end)

  it("finds factory-made and loop-made functions by name, and says when there is nothing", function()
    assert.are.equal("Made by a factory, documented at its assignment.", doc_of(fx.made, "made").doc.summary)
    local d = doc_of(fx.looped, "looped").doc
    assert.are.equal("Made in a loop, documented by a free-standing block.", d.summary)
    assert.are.equal("its name", d.returns[1].desc)
    assert.is_nil(doc_of(fx.undocumented, "undocumented").doc)
    assert.is_nil(doc.for_function(print, "print"))
  end)

  it("does not take a section banner or a distant comment for documentation", function()
    local lines = doc.lines(path)
    assert.are.equal("--- Adds two numbers.", lines[8])
    assert.is_nil(doc.comment_above(lines, 8)) -- a blank line separates the banner
    assert.are.same({ "text" }, doc.comment_above({ "-- ---- section ----", "-- text", "function f() end" }, 3))
    assert.is_nil(doc.comment_above({ "x = 1", "function f() end" }, 2))
    local d = doc.for_file(path)
    assert.are.equal("A fixture module for the REPL's documentation parser.", d.summary)
    assert.are.equal("repl_doc_fixture", d.module)
  end)

  it("formats help with arguments, returns and the example", function()
    local env = setmetatable({ fx = fx }, { __index = _G })
    package.loaded["repl_doc_fixture"] = fx
    local old = package.path
    package.path = "spec/fixtures/?.lua;" .. package.path
    local text = repl.help("fx.add", env)
    package.path = old
    package.loaded["repl_doc_fixture"] = nil
    assert.truthy(text:find("^fx%.add%(a, b%)\n"), text)
    assert.truthy(text:find("Arguments:\n    a (number):\n      the first", 1, true), text)
    assert.truthy(text:find("b (number, optional) default 0:", 1, true), text)
    assert.truthy(text:find("Returns:\n    number: the sum", 1, true), text)
    assert.truthy(text:find("Example:\n    local s = M.add(1, 2)", 1, true), text)
    assert.truthy(text:find("defined at spec/fixtures/repl_doc_fixture.lua:17", 1, true), text)
    assert.truthy(repl.help("fx.nothing_here", env):find("'nothing_here' is not a field of fx", 1, true))
    assert.truthy(repl.help("", env):find("?name", 1, true))
  end)
end)

describe("?help on eager tensors", function()
  local env = repl.env()

  it("shows the documentation of a tensor's methods and of the same oar functions", function()
    env.repl_spec_t = env.oar.ones(2, 2)
    for _, path in ipairs({ "repl_spec_t.matmul", "repl_spec_t:matmul", "oar.matmul" }) do
      local text = repl.help(path, env)
      assert.truthy(text:find(path .. "(a, b)", 1, true), text)
      assert.truthy(text:find("The matrix product", 1, true), text)
      assert.truthy(text:find("defined at oar/eager.lua:", 1, true), text)
    end
    -- aliases and loop-made methods: the block that names them
    local text = repl.help("repl_spec_t.mm", env)
    assert.truthy(text:find("The matrix product", 1, true), text)
    text = repl.help("repl_spec_t.abs", env)
    assert.truthy(text:find("Elementwise functions", 1, true), text)
    text = repl.help("repl_spec_t.mean", env)
    assert.truthy(text:find("Sum along d", 1, true), text)
    -- every method the completion offers has its documentation
    for _, w in ipairs(complete.candidates("repl_spec_t:", "repl_spec_t:", env)) do
      text = repl.help(w:gsub(":", "."), env)
      assert.is_nil(text:find("no documentation comment", 1, true), text)
    end
    text = repl.help("oar.jit.trace", env)
    assert.truthy(text:find("Records a module or a function", 1, true), text)
    _G.repl_spec_t = nil
  end)
end)

describe("oar.repl_complete", function()
  local env = repl.env()

  it("completes globals, fields through __index and methods", function()
    assert.are.same({ "oar.layers" }, complete.candidates("oar.lay", "oar.lay", env))
    assert.are.same({ "print" }, complete.candidates("prin", "prin", env))
    assert.truthy(#complete.candidates("whi", "whi", env) == 1) -- the keyword
    env.repl_spec_p = env.oar.Program()
    assert.are.same({ "repl_spec_p:global_block" }, complete.candidates("repl_spec_p:glo", "x = repl_spec_p:glo", env))
    -- `:` offers methods only, `.` fields too; private names only when asked
    for _, w in ipairs(complete.candidates("repl_spec_p:", "repl_spec_p:", env)) do
      assert.are.equal("function", type(env.repl_spec_p[w:match(":(.*)")]))
      assert.is_nil(w:find(":_", 1, true))
    end
    assert.truthy(#complete.candidates("repl_spec_p:_", "repl_spec_p:_", env) > 0)
    _G.repl_spec_p = nil
    -- string methods through the string metatable
    env.repl_spec_s = "abc"
    assert.are.same({ "repl_spec_s:upper" }, complete.candidates("repl_spec_s:up", "repl_spec_s:up", env))
    _G.repl_spec_s = nil
    -- modules oar loads on first use
    local io_found = false
    for _, w in ipairs(complete.candidates("oar.i", "oar.i", env)) do io_found = io_found or w == "oar.io" end
    assert.is_true(io_found)
    assert.are.same({}, complete.candidates("nosuch.x", "nosuch.x", env))
  end)

  it("completes what an __index function answers (Variables, Blocks), checked on the object", function()
    local v = env.layers.data{ name = "repl_spec_v", shape = { 4 } }
    env.repl_spec_v = v
    local methods = complete.candidates("repl_spec_v:", "repl_spec_v:", env)
    local fields = complete.candidates("repl_spec_v.", "repl_spec_v.", env)
    local function has(list, w) for _, x in ipairs(list) do if x == w then return true end end return false end
    assert.is_true(has(methods, "repl_spec_v:grad_name"))
    assert.is_false(has(methods, "repl_spec_v:shape")) -- a property, not a method
    assert.is_true(has(fields, "repl_spec_v.shape"))
    assert.is_true(has(fields, "repl_spec_v.dtype"))
    for _, w in ipairs(fields) do assert.is_not_nil(v[w:match("%.(.*)")], w) end
    _G.repl_spec_v = nil
    env.repl_spec_b = env.oar.default_main_program():global_block()
    assert.are.same({ "repl_spec_b:create_var" }, complete.candidates("repl_spec_b:create_v", "repl_spec_b:create_v", env))
    _G.repl_spec_b = nil
  end)

  it("completes an eager tensor's methods, those oar.eager adds included", function()
    env.repl_spec_t = env.oar.ones(2, 2)
    assert.are.same({ "repl_spec_t:matmul", "repl_spec_t:max", "repl_spec_t:maximum" },
      complete.candidates("repl_spec_t:ma", "y = repl_spec_t:ma", env))
    assert.are.same({ "repl_spec_t:softmax", "repl_spec_t:sort" },
      complete.candidates("repl_spec_t:so", "repl_spec_t:so", env))
    -- oar.tensor's own methods too (shape, numel)
    assert.are.same({ "repl_spec_t:shape" }, complete.candidates("repl_spec_t:sha", "repl_spec_t:sha", env))
    local all = complete.candidates("repl_spec_t:", "repl_spec_t:", env)
    for _, w in ipairs(all) do assert.are.equal("function", type(env.repl_spec_t[w:match(":(.*)")]), w) end
    assert.are.same({ "oar.jit" }, complete.candidates("oar.ji", "oar.ji", env))
    _G.repl_spec_t = nil
  end)

  it("leaves file names inside strings to readline", function()
    assert.is_nil(complete.candidates("exa", 'dofile("exa', env))
    assert.is_nil(complete.candidates("spec/", "f('spec/", env))
    assert.is_true(complete.in_string('x = "a\\"b'))
    assert.is_false(complete.in_string('x = "a" .. b'))
    assert.is_false(complete.in_string('x -- "comment'))
  end)
end)
