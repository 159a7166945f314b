-- What liboar.so exports (docs/DECISIONS.md, "What liboar exports"): built
-- with -fvisibility=hidden, it exports exactly the functions and variables
-- its headers mark OAR_API (src/oar.h, the embedding API; src/oar_op.h and
-- the headers it gathers, the op-authoring API; a few definition-layer
-- helpers in src/ops/*.h a device backend calls). Everything Lua declares
-- through the generated cdef modules resolves; the device backend imports
-- nothing else; the generated modules match their headers; no spec declares
-- oar's own C functions or structs by hand.
local lib = require("oar.lib")
local C = lib.load_op_api()

local ROOT = assert(io.popen("pwd")):read("*l")

local function sh_quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end
local function sh(cmd)
  local p = assert(io.popen(cmd .. " 2>&1"))
  local out = p:read("*a")
  local ok, _, code = p:close()
  if type(ok) == "number" then code = ok end   -- LuaJIT without 5.2 compat
  return (ok == true or code == 0) and 0 or (code or 1), out
end
local function read(path) return assert(io.open(ROOT .. "/" .. path, "rb")):read("*a") end
local function lines_of(cmd)
  local code, out = sh(cmd)
  assert.are.equal(0, code, out)
  local t = {}
  for l in out:gmatch("[^\n]+") do t[#t + 1] = l end
  return t
end
local function keys(set)
  local t = {}
  for k in pairs(set) do t[#t + 1] = k end
  table.sort(t)
  return t
end
local function minus(a, b)
  local t = {}
  for k in pairs(a) do if not b[k] then t[#t + 1] = k end end
  table.sort(t)
  return t
end

-- every header under src/ (and src/ops/), by path
local HEADERS = lines_of("cd " .. sh_quote(ROOT) .. " && ls src/*.h src/ops/*.h")

-- name -> header for every declaration marked OAR_API (the name is the last
-- identifier before the parameter list, or before the ';' of a variable)
local function marked(paths)
  local set = {}
  for _, path in ipairs(paths) do
    for line in read(path):gmatch("([^\n]*)\n") do
      if line:find("^%s*OAR_API%s") or line:find("^%s*extern%s+OAR_API%s") then
        local decl = line:match("^([^(;]*)")
        local name = decl:match("([%a_][%w_]*)%s*$")
        assert(name, path .. ": cannot read the name in: " .. line)
        set[name] = path
      end
    end
  end
  return set
end

-- functions and variables a cdef module declares (one declaration may span lines)
local function declared(cdef)
  local set, decls = {}, {}
  -- top-level declarations: split at the ';' outside braces
  local text, depth, start = cdef:gsub("/%*.-%*/", " "), 0, 1
  for i = 1, #text do
    local c = text:sub(i, i)
    if c == "{" then depth = depth + 1
    elseif c == "}" then depth = depth - 1
    elseif c == ";" and depth == 0 then decls[#decls + 1] = text:sub(start, i - 1); start = i + 1 end
  end
  for _, decl in ipairs(decls) do
    decl = decl:gsub("%s+", " ")
    -- a typedef or a struct/enum definition declares types, not symbols
    if not decl:find("^ ?typedef ") and not decl:find("[{}]") then
      local name = decl:match("([%a_][%w_]*) ?%(") or decl:match("^ ?extern [^(]-([%a_][%w_]*) ?$")
      if name then set[name] = true end
    end
  end
  return set
end

local function exported()
  local set = {}
  for _, l in ipairs(lines_of("nm -D --defined-only " .. sh_quote(lib.path))) do
    local kind, name = l:match("^%x*%s+(%a)%s+([^%s@]+)")
    -- _init/_fini come from the C runtime's crti.o; absolute (A) symbols are
    -- linker markers, not code or data; __odr_asan.* are AddressSanitizer's
    -- (the `make asan` build)
    if name and kind ~= "A" and name ~= "_init" and name ~= "_fini" and not name:find("^__odr_asan") then
      set[name] = true
    end
  end
  return set
end

describe("liboar.so's exports", function()
  local exports, api = exported(), marked(HEADERS)

  it("are exactly the OAR_API-marked functions and variables", function()
    assert.is_true(#keys(api) > 300, "found only " .. #keys(api) .. " OAR_API declarations")
    assert.are.same({}, minus(exports, api))   -- exported without a mark: an internal helper leaks
    assert.are.same({}, minus(api, exports))   -- marked but hidden (defined without its header?)
  end)

  it("cover everything the generated cdef modules declare, and it resolves", function()
    local missing = {}
    for _, mod in ipairs({ "oar.cdef", "oar.cdef_op" }) do
      local names = declared(require(mod))
      assert.is_true(#keys(names) > 50, mod)
      for _, name in ipairs(keys(names)) do
        local ok = exports[name] and pcall(function() return C[name] end)
        if not ok then missing[#missing + 1] = mod .. ": " .. name end
      end
    end
    assert.are.same({}, missing)
  end)

  it("put oar.h's functions in oar.cdef and the op-authoring ones in oar.cdef_op", function()
    local public, cdef = marked({ "src/oar.h" }), declared(require("oar.cdef"))
    assert.are.same({}, minus(public, cdef))
    assert.are.same({}, minus(cdef, public))
    -- every other mark: oar_op.h's headers and the definition layer's (src/ops);
    -- a function marked in a header oar_op.h does not include is missing here
    local others = {}
    for _, path in ipairs(HEADERS) do
      if path ~= "src/oar.h" then others[#others + 1] = path end
    end
    local op_api, cdef_op = marked(others), declared(require("oar.cdef_op"))
    assert.is_true(#keys(op_api) > 100)
    assert.are.same({}, minus(op_api, cdef_op))
    assert.are.same({}, minus(cdef_op, op_api))
  end)

  it("include everything the device backend imports (OAR_BACKEND_IMPORTS), from the two APIs", function()
    local list = read("src/backend.h"):match("#define OAR_BACKEND_IMPORTS(.-)\n\n")
    assert.is_truthy(list, "OAR_BACKEND_IMPORTS not found in src/backend.h")
    local cdefs = declared(require("oar.cdef") .. require("oar.cdef_op"))
    local bad, n = {}, 0
    for name in list:gmatch('"([%w_]+)"') do
      n = n + 1
      -- exported, and part of one of the two APIs
      if not exports[name] then
        bad[#bad + 1] = name .. " (not exported: mark its declaration OAR_API)"
      elseif not cdefs[name] then
        bad[#bad + 1] = name .. " (not in oar.h, oar_op.h or a definition-layer header)"
      end
    end
    assert.is_true(n > 10, list)
    assert.are.same({}, bad)
  end)

  it("include every C function the Lua modules call, declared by oar.cdef", function()
    local public = declared(require("oar.cdef"))
    local bad = {}
    for _, path in ipairs(lines_of("cd " .. sh_quote(ROOT) .. " && find lua -name '*.lua' | sort")) do
      -- lib.C (liboar); ffi.C names are the C library's, aliased by __asm__
      for via, name in read(path):gmatch("([%w_%.]*)C%.(oar_[%w_]+)") do
        if via ~= "ffi." and not public[name] then bad[#bad + 1] = path .. ": " .. name end
      end
    end
    assert.are.same({}, bad)
  end)
end)

describe("the generated cdef modules", function()
  it("match the headers they are generated from (stale: run make)", function()
    for _, g in ipairs({ { "lua/oar/cdef.lua", "src/oar.h" }, { "lua/oar/cdef_op.lua", "--op src/oar_op.h" } }) do
      local code, out = sh("cd " .. sh_quote(ROOT) .. " && sh tools/gen_cdef.sh " .. g[2])
      assert.are.equal(0, code, out)
      assert.is_true(out == read(g[1]), g[1] .. " is stale: `make` regenerates it from " .. g[2]:gsub("^%-%-op ", ""))
    end
  end)

  it("are what specs declare oar's C API with: no spec declares an oar function or struct by hand", function()
    local bad = {}
    local files = lines_of("cd " .. sh_quote(ROOT) .. " && ls spec/*.lua spec/helpers/*.lua")
    for _, path in ipairs(files) do
      if path ~= "spec/exports_spec.lua" then
        local n = 0
        for line in read(path):gmatch("([^\n]*)\n") do
          n = n + 1
          local l = line:gsub("^.-cdef_once%(?%s*[\"%[]+", ""):gsub("^.-ffi%.cdef%(?%s*[\"%[]+", "")
          -- a C prototype, variable or struct of oar's own, not a Lua call
          if l:find("^%s*typedef%s+struct%s+oar_") or l:find("^%s*struct%s+oar_[%w_]+%s*{")
             or (l:find("^%s*[%a_][%w_ ]*[%s%*]oar_[%w_]+%s*%(.*%)%s*;") and not l:find("[=%.]"))
             or l:find("^%s*extern%s+[%w_ ]+oar_[%w_]+%s*;") then
            bad[#bad + 1] = path .. ":" .. n .. ": " .. line
          end
        end
      end
    end
    assert.are.same({}, bad)
  end)
end)

