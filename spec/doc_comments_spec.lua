-- Every public function of these modules has an LDoc doc comment with an
-- example (@usage), and `ldoc` renders them without a warning. The first
-- part reads the sources (no tool needed); the second runs ldoc when it is
-- installed (Debian's lua-ldoc and lua-markdown; `make doc` needs them too).
local MODULES = {
  -- module name, source file, classes: {field of the module or a function giving the metatable}
  { "oar.io", "lua/oar/io.lua" },
  { "oar.tensor", "lua/oar/tensor.lua", { Tensor = function(m) return m.Tensor end } },
  { "oar.scope", "lua/oar/scope.lua",
    { Scope = function(m) return m.Scope end, ScopeVar = function(m) return m.ScopeVar end } },
  { "oar.place", "lua/oar/place.lua", { Place = function(m) return getmetatable(m.CPUPlace()) end } },
  { "oar.reader", "lua/oar/reader.lua", { Rng = function(m) return getmetatable(m.rng(1)) end } },
  { "oar.data_feeder", "lua/oar/data_feeder.lua", { DataFeeder = function(m) return m.DataFeeder end } },
  { "oar.dataset", "lua/oar/dataset/init.lua" },
  { "oar.dataset.fashion_mnist", "lua/oar/dataset/fashion_mnist.lua" },
  { "oar.dataset.idx", "lua/oar/dataset/idx.lua" },
  { "oar.profiler", "lua/oar/profiler.lua" },
  { "oar.flags", "lua/oar/flags.lua" },
  { "oar.unique_name", "lua/oar/unique_name.lua" },
  { "oar.dtypes", "lua/oar/dtypes.lua" },
}

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

-- name -> true for every public function of the module and its classes,
-- as "f" and "Class:f"
local function public_functions(name, classes)
  local m = require(name)
  local out = {}
  for k, v in pairs(m) do
    -- a submodule loaded into its parent's table (oar.dataset.split) has its own page
    local submodule = type(k) == "string" and package.loaded[name .. "." .. k] == v
    if type(v) == "function" and type(k) == "string" and not k:match("^_") and not submodule then
      out[k] = true
    end
  end
  for cname, get in pairs(classes or {}) do
    local class = get(m)
    for k, v in pairs(class) do
      if type(v) == "function" and type(k) == "string" and not k:match("^_") then
        out[cname .. ":" .. k] = true
      end
    end
  end
  return out
end

-- "f" / "Class:f" -> the doc comment block above its definition, or false
local function doc_blocks(src)
  local lines = {}
  for line in (src .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = line end
  local docs = {}
  for i, line in ipairs(lines) do
    local class, sep, fname = line:match("^function ([%w_]+)([%.:])([%w_]+)%s*%(")
    local key
    if class then key = (class == "M") and fname or (class .. ":" .. fname) end
    if key then
      local j = i - 1
      local block = {}
      while j >= 1 and lines[j]:match("^%-%-") do
        table.insert(block, 1, lines[j])
        j = j - 1
      end
      local first
      for _, l in ipairs(block) do
        if l:match("^%-%-%-") then first = true end
      end
      docs[key] = first and table.concat(block, "\n") or false
      if sep == "." and class ~= "M" then docs[class .. "." .. fname] = docs[key] end
    end
  end
  return docs
end

describe("doc comments", function()
  for _, spec in ipairs(MODULES) do
    local name, file, classes = spec[1], spec[2], spec[3]
    it(name .. ": a module comment and every public function documented with an example", function()
      local src = read(file)
      assert.truthy(src:find("@module " .. name:gsub("%.", "%%.") .. "%f[^%w_.]"),
        file .. " has no '@module " .. name .. "' comment")
      local docs = doc_blocks(src)
      local missing = {}
      for f in pairs(public_functions(name, classes)) do
        local d = docs[f]
        -- a method may be defined with the class's local name (Tensor:shape)
        if d == nil then d = docs[f:gsub("^[%w_]+:", "M.")] end
        if not d then
          missing[#missing + 1] = f .. " (no --- doc comment)"
        elseif not d:find("@usage", 1, true) then
          missing[#missing + 1] = f .. " (no @usage)"
        end
      end
      table.sort(missing)
      assert(#missing == 0, file .. ": " .. table.concat(missing, ", "))
    end)
  end

  local has_ldoc = os.execute("command -v ldoc >/dev/null 2>&1") == 0
  local has_markdown = os.execute("lua -e 'require(\"markdown\")' >/dev/null 2>&1") == 0
    or os.execute("test -f /usr/share/lua/5.1/markdown.lua") == 0
  if not (has_ldoc and has_markdown) then
    pending("ldoc renders these modules without a warning (needs lua-ldoc and lua-markdown)")
    return
  end

  it("ldoc renders these modules without a warning, an anchor per public function", function()
    local dir = os.tmpname()
    os.remove(dir)
    -- a configuration like config.ld's, limited to these files
    local files = {}
    local pwd = io.popen("pwd")
    local root = pwd:read("*l")
    pwd:close()
    for _, spec in ipairs(MODULES) do files[#files + 1] = string.format("%q", root .. "/" .. spec[2]) end
    local config = dir .. ".ld"
    local cf = assert(io.open(config, "wb"))
    cf:write((read("config.ld"):gsub("\nfile%s*=[^\n]*", "\nfile = {" .. table.concat(files, ", ") .. "}")
      :gsub("\ndir%s*=[^\n]*", "\ndir = " .. string.format("%q", dir))))
    cf:close()
    local p = io.popen("ldoc --fatalwarnings -c " .. config .. " . 2>&1; echo \"exit:$?\"")
    local out = p:read("*a")
    p:close()
    local ok = out:match("exit:(%d+)%s*$") == "0"
    local htmls = {}
    if ok then
      for _, spec in ipairs(MODULES) do
        local f = io.open(dir .. "/modules/" .. spec[1] .. ".html", "rb")
        htmls[spec[1]] = f and f:read("*a") or ""
        if f then f:close() end
      end
    end
    os.execute("rm -rf '" .. dir .. "'")
    os.remove(config)
    assert(ok, "ldoc failed or warned:\n" .. out)
    assert.falsy(out:find("falling back to text", 1, true), out)
    for _, spec in ipairs(MODULES) do
      local html = htmls[spec[1]]
      assert(#html > 0, "no page for " .. spec[1])
      for f in pairs(public_functions(spec[1], spec[3])) do
        assert(html:find('<a name = "' .. f .. '"', 1, true), spec[1] .. ": no entry for " .. f)
      end
    end
  end)
end)
