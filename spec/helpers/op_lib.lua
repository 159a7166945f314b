-- spec/helpers/op_lib.lua — builds an op library outside the tree, the way
-- the Makefile builds the tree's ops, for specs that check a documented
-- example: each .ops file through tools/gen_ops.lua into <dir>/ops/, the .c
-- files into one shared library against build/liboar.so; and runs Lua in a
-- process of its own with that library loaded.
--
--   local L = require("spec.helpers.op_lib")
--   local so = L.build(dir, { ["x.ops"] = text, ["x.c"] = text, ["x_kernels.c"] = text })
--   local ok, out = L.run_lua(dir, so, "assert(...)")
local F = require("spec.helpers.files")
local M = {}

local function sh(cmd)
  local p = io.popen(cmd .. " 2>&1")
  local out = p:read("*a")
  return p:close(), out
end
M.sh = sh

local function write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end
M.write = write

-- a fresh scratch directory, created
function M.dir()
  local d = F.tmpdir()
  assert(os.execute("mkdir -p '" .. d .. "/ops'") == 0)
  return d
end

-- files: name -> text; returns the library's path (errors carry the
-- generator's or the compiler's output)
function M.build(dir, files)
  local cs = {}
  for name, text in pairs(files) do
    write(dir .. "/" .. name, text)
    if name:match("%.ops$") then
      local h = dir .. "/ops/" .. name:gsub("%.ops$", ".h")
      local ok, out = sh(("luajit tools/gen_ops.lua '%s/%s' '%s'"):format(dir, name, h))
      assert(ok, "gen_ops " .. name .. ":\n" .. out)
    elseif name:match("%.c$") then
      cs[#cs + 1] = "'" .. dir .. "/" .. name .. "'"
    end
  end
  table.sort(cs)
  local so = dir .. "/libexample_ops.so"
  local ok, out = sh(("cc -std=c11 -Wall -Wextra -Werror -shared -fPIC -D_GNU_SOURCE -Isrc -Ibuild -I'%s' %s -o '%s' -Lbuild -loar")
    :format(dir, table.concat(cs, " "), so))
  assert(ok, "compiling " .. table.concat(cs, " ") .. ":\n" .. out)
  return so
end

-- runs `code` in a new luajit, from the checkout's root, after loading oar
-- and the library `so` and checking the registry; returns ok and the output
function M.run_lua(dir, so, code)
  local script = dir .. "/run.lua"
  write(script, ([[
package.path = "./lua/?.lua;./lua/?/init.lua;./?.lua;" .. package.path
package.cpath = "./build/?.so;" .. package.cpath
local ffi = require("ffi")
local oar = require("oar")
local lib = require("oar.lib")
local OPS = ffi.load(%q)   -- its constructors register the ops and kernels
local C = lib.load_op_api()
assert(C.oar_registry_check() == 0, lib.last_error())
]]):format(so) .. code)
  return sh("luajit '" .. script .. "'")
end

return M
