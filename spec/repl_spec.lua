-- oar.repl: expression-first evaluation, continuation lines, printing by type
local repl = require("oar.repl")

local function capture(fn)
  local out, err = {}, {}
  local real_out, real_err = io.stdout, io.stderr
  io.stdout = { write = function(_, ...) for _, s in ipairs({ ... }) do out[#out + 1] = tostring(s) end end }
  io.stderr = { write = function(_, ...) for _, s in ipairs({ ... }) do err[#err + 1] = tostring(s) end end }
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

  it("prints every value of a multiple return, nils included", function()
    local out = capture(function() return repl.eval("1, nil, 3", env) end)
    assert.are.equal("1\tnil\t3\n", out)
  end)
end)
