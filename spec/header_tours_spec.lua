-- The tours in the header comments of src/oar.h (the embedding API) and
-- src/op.h (an op: declaration, definition, kernel) are code that works.
-- A tour is the comment lines between "@tour-begin <name>" and "@tour-end";
-- this spec strips the comment's " * " and the indent, adds only what a
-- header comment cannot hold (main, the includes of a program), compiles
-- it against build/liboar.so and runs it.
local L = require("spec.helpers.op_lib")

local read = require("spec.helpers.files").read_bytes

-- name -> {code =, line =} of every tour in a header
local function tours(path)
  local out, cur, n = {}, nil, 0
  for line in read(path):gmatch("([^\n]*)\n") do
    n = n + 1
    local body = line:match("^ %*(.*)$")
    if cur then
      if body and body:match("^%s*@tour%-end") then
        out[cur.name] = { code = table.concat(cur.lines, "\n") .. "\n", line = cur.line }
        cur = nil
      else
        assert(body, path .. ":" .. n .. ": a tour ends at @tour-end, inside the comment")
        cur.lines[#cur.lines + 1] = body:gsub("^    ", "", 1)
      end
    else
      local name = body and body:match("^%s*@tour%-begin%s+(%S+)")
      if name then cur = { name = name, lines = {}, line = n + 1 } end
    end
  end
  assert(cur == nil, path .. ": @tour-begin " .. (cur and cur.name or "") .. " without @tour-end")
  return out
end

describe("header tours", function()
  it("src/oar.h: the embedding tour compiles and runs", function()
    local t = tours("src/oar.h").main
    assert(t, "src/oar.h has no @tour-begin main")
    local dir = L.dir()
    L.write(dir .. "/tour.c", ('#include <stdio.h>\n#include "oar.h"\nint main(void)\n{\n#line %d "src/oar.h"\n%s    return 0;\n}\n')
      :format(t.line, t.code))
    local ok, out = L.sh(("cc -std=c11 -Wall -Wextra -Werror -Isrc -o '%s/tour' '%s/tour.c' -Lbuild -loar -Wl,-rpath,build")
      :format(dir, dir))
    assert(ok, out)
    local ok2, out2 = L.sh("'" .. dir .. "/tour'")
    assert(ok2, out2)
    assert.are.equal("0 2 6\n", out2)
  end)

  it("src/op.h: the op tour builds into a library whose op runs in a program", function()
    local t = tours("src/op.h")
    for _, name in ipairs({ "my_scale.ops", "my_scale.c", "my_scale_kernels.c" }) do
      assert(t[name], "src/op.h has no tour " .. name)
    end
    local dir = L.dir()
    local so = L.build(dir, { ["my_scale.ops"] = t["my_scale.ops"].code, ["my_scale.c"] = t["my_scale.c"].code,
                              ["my_scale_kernels.c"] = t["my_scale_kernels.c"].code })
    local ok, out = L.run_lua(dir, so, [[
local layers = oar.layers
local prog, y = oar.Program(), nil
oar.program_guard(prog, nil, function()
  local x = layers.data{name = "x", shape = {3}}
  local block = prog:global_block()
  y = block:create_var{name = "y", dtype = "float32"}
  block:append_op{type = "my_scale", inputs = {X = {x}}, outputs = {Out = {y}}, attrs = {scale = 2.5}}
end)
assert(y.shape[1] == -1 and y.shape[2] == 3, "inference: " .. tostring(prog))
local out = oar.Executor(oar.CPUPlace()):run(prog, {feed = {x = {{1, -2, 4}}}, fetch_list = {y}})[1]
local got = out:totable()[1]
assert(got[1] == 2.5 and got[2] == -5 and got[3] == 10, table.concat(got, " "))
-- the attribute table checks a value of the wrong kind
local bad = oar.Program()
local okb, err = pcall(oar.program_guard, bad, nil, function()
  local x = layers.data{name = "x", shape = {3}}
  bad:global_block():append_op{type = "my_scale", inputs = {X = {x}}, outputs = {Out = {x}}, attrs = {scale = "big"}}
end)
assert(not okb and tostring(err):find("scale", 1, true), tostring(err))
print("ok")
]])
    assert(ok, out)
    assert.matches("ok\n$", out)
  end)
end)
