-- docs/CONTRIBUTING.md's worked example of an op of its own family is
-- complete: its blocks that name a file (a first line "-- file: NAME" or
-- "/* file: NAME */", in `lua no-run` and `c op-example` blocks) are built
-- as written, the .ops through tools/gen_ops.lua and the .c files into a
-- library against build/liboar.so, and its spec block (the values and the
-- float64 finite-difference check) runs with that library loaded.
local L = require("spec.helpers.op_lib")

local read = require("spec.helpers.files").read_bytes

-- file name -> code, from the fenced blocks that name a file
local function example_files(text)
  local files, cur = {}, nil
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    if cur then
      if line:match("^```%s*$") then
        local first = cur[1] or ""
        local name = first:match("^%-%- file: (%S+)") or first:match("^/%* file: (%S+) %*/")
        if name then
          assert(not files[name], "two blocks are " .. name)
          files[name] = table.concat(cur, "\n") .. "\n"
        end
        cur = nil
      else
        cur[#cur + 1] = line
      end
    elseif line:match("^```") then
      cur = {}
    end
  end
  return files
end

describe("docs/CONTRIBUTING.md, Adding an op", function()
  it("builds my_op as written and its spec passes", function()
    local files = example_files(read("docs/CONTRIBUTING.md"))
    for _, name in ipairs({ "my_op.ops", "my_op.c", "my_op_kernels.c", "my_op_spec.lua" }) do
      assert(files[name], "docs/CONTRIBUTING.md has no block " .. name)
    end
    local spec = files["my_op_spec.lua"]
    files["my_op_spec.lua"] = nil
    local dir = L.dir()
    local so = L.build(dir, files)
    local ok, out = L.run_lua(dir, so, spec .. [[
-- beyond the page: the declaration's checks reach the op
local T2 = require("spec.helpers.op_test")
local okm, err = pcall(T2.run, { type = "my_op", inputs = { X = T2.tensor({ 1, 2 }) }, attrs = { mode = "cube" } })
assert(not okm and tostring(err):find("cube", 1, true), tostring(err))
local okb, errb = pcall(T2.run, { type = "my_op", inputs = { X = T2.tensor({ 1, 2 }), Bias = T2.tensor({ 1, 2, 3 }) } })
assert(not okb and tostring(errb):find("Bias", 1, true), tostring(errb))
print("ok")
]])
    assert(ok, out)
    assert.matches("ok\n$", out)
  end)
end)
