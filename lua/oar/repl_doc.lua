-- oar.repl_doc: the documentation behind the REPL's `?name`.
--
-- Documentation lives in the sources as LDoc comments: a block that starts
-- with `---` right above `function M.name(...)`, `function Class:name(...)`,
-- `M.name = function(...)` or `M.name = make_something(...)`, with @param,
-- @tparam, @return, @treturn, @usage, @see... tags. A plain `--` block right
-- above a definition counts too (the summary is its first sentence). A
-- module's documentation is the first comment block of its file.
--
-- A function is found from its value (debug.getinfo gives its file and first
-- line); when that line does not define the name asked for (a function made
-- by a factory, an alias), the definitions of that name in the module's file
-- are searched instead.
local M = {}

-- ---- reading sources ---------------------------------------------------------
local file_cache = {}

-- The lines of a file (cached), or nil.
function M.lines(path)
  local cached = file_cache[path]
  if cached ~= nil then return cached or nil end
  local f = io.open(path, "r")
  if not f then file_cache[path] = false return nil end
  local lines = {}
  for line in f:lines() do lines[#lines + 1] = line end
  f:close()
  file_cache[path] = lines
  return lines
end

function M.clear_cache() file_cache = {} end

local function is_banner(text)
  -- "---- printing ----", "=====": separators, not documentation
  return text:match("^[%-=%s]*$") ~= nil or text:match("^%-%-%-%-+ .* %-%-%-%-+$") ~= nil
end

-- The comment block that ends right above line `n` (no blank line between),
-- as a list of texts with the comment markers removed; nil when there is none.
function M.comment_above(lines, n)
  local i = n - 1
  if i < 1 or not lines[i] then return nil end
  local out = {}
  -- a long comment: --[[ ... ]] or --[[-- ... ]] (LDoc's block form)
  if lines[i]:match("%]=*%]%s*$") and not lines[i]:match("^%s*%-%-[^%[]") then
    local j = i
    while j >= 1 and j > i - 200 and not lines[j]:match("^%s*%-%-%[=*%[") do j = j - 1 end
    if j < 1 or j <= i - 200 then return nil end
    for k = j, i do
      local text = lines[k]
      if k == j then text = text:gsub("^%s*%-%-%[=*%[%-*", "") end
      if k == i then text = text:gsub("%]=*%]%s*$", "") end
      out[#out + 1] = text
    end
    while out[1] and not out[1]:match("%S") do table.remove(out, 1) end
    while out[#out] and not out[#out]:match("%S") do table.remove(out) end
    return #out > 0 and out or nil
  end
  local first = i + 1
  while i >= 1 do
    local line = lines[i]
    if not line:match("^%s*%-%-") then break end
    first = i
    -- `---` opens an LDoc block: stop there (but not at a `-- ----` banner)
    if line:match("^%s*%-%-%-[^%-]") or line:match("^%s*%-%-%-$") then break end
    i = i - 1
  end
  if first > n - 1 then return nil end
  for k = first, n - 1 do
    local text = lines[k]:gsub("^%s*%-%-%-?", "")
    text = text:gsub("^ ", "")
    out[#out + 1] = text
  end
  -- drop section banners at the top of a plain block
  while out[1] and is_banner(out[1]) do table.remove(out, 1) end
  return #out > 0 and out or nil
end

-- ---- parsing a block -----------------------------------------------------------
local function trim(s) return (s:gsub("^%s+", ""):gsub("%s+$", "")) end

-- A comment block -> { text = {lines}, params = {{name, type, desc, opt}},
-- returns = {{type, desc}}, usage = {lines}, see = {...}, raise = {...},
-- fields = {...}, tags = {{tag, text}} (others) }.
function M.parse(block)
  local doc = { text = {}, params = {}, returns = {}, usage = {}, see = {}, raise = {}, fields = {}, tags = {} }
  local current -- the tag a continuation line belongs to
  for _, raw in ipairs(block or {}) do
    local tag, mod, rest = raw:match("^%s*@([%w_]+)(%b[])%s*(.*)$")
    if not tag then tag, rest = raw:match("^%s*@([%w_]+)%s*(.*)$") end
    if tag then
      local opt = mod and (mod:match("^%[opt=?(.*)%]$"))
      if tag == "param" or tag == "tparam" or tag == "field" or tag == "tfield" then
        local ty, name, desc
        if tag:sub(1, 1) == "t" then
          ty, name, desc = rest:match("^(%S+)%s+(%S+)%s*(.*)$")
        else
          name, desc = rest:match("^(%S+)%s*(.*)$")
        end
        local entry = { name = name or rest, type = ty, desc = desc or "", opt = opt }
        local list = (tag == "param" or tag == "tparam") and doc.params or doc.fields
        list[#list + 1] = entry
        current = entry
      elseif tag == "return" or tag == "treturn" then
        local entry
        if tag == "treturn" then
          local ty, desc = rest:match("^(%S+)%s*(.*)$")
          entry = { type = ty, desc = desc or "" }
        else
          entry = { desc = rest }
        end
        doc.returns[#doc.returns + 1] = entry
        current = entry
      elseif tag == "usage" then
        if rest:match("%S") then doc.usage[#doc.usage + 1] = rest end
        current = "usage"
      elseif tag == "see" or tag == "raise" then
        local list = doc[tag]
        list[#list + 1] = { desc = rest }
        current = list[#list]
      elseif tag == "module" or tag == "classmod" or tag == "submodule" or tag == "function"
          or tag == "local" or tag == "within" or tag == "section" or tag == "table" or tag == "type" then
        doc[tag] = rest ~= "" and rest or true
        current = nil
      else
        local entry = { tag = tag, desc = rest }
        doc.tags[#doc.tags + 1] = entry
        current = entry
      end
    elseif current == "usage" then
      doc.usage[#doc.usage + 1] = raw
    elseif current then
      local t = trim(raw)
      if t ~= "" then current.desc = (current.desc ~= "" and current.desc .. " " or "") .. t end
    else
      doc.text[#doc.text + 1] = raw
    end
  end
  while doc.text[#doc.text] and not doc.text[#doc.text]:match("%S") do table.remove(doc.text) end
  -- the usage block keeps its indentation relative to its least indented line
  local indent
  for _, l in ipairs(doc.usage) do
    if l:match("%S") then
      local w = #l:match("^%s*")
      indent = indent and math.min(indent, w) or w
    end
  end
  for k, l in ipairs(doc.usage) do doc.usage[k] = l:sub((indent or 0) + 1) end
  while doc.usage[#doc.usage] and not doc.usage[#doc.usage]:match("%S") do table.remove(doc.usage) end
  doc.summary = doc.text[1] and trim(doc.text[1]) or nil
  return doc
end

-- ---- finding definitions ---------------------------------------------------------
-- Does source line `line` define `name` (a field or method, or a local)?
function M.defines(line, name)
  local n = name:gsub("%p", "%%%0")
  return line:match("^%s*function%s+[%w_.:]*[.:]" .. n .. "%s*%(") ~= nil
      or line:match("^%s*local%s+function%s+" .. n .. "%s*%(") ~= nil
      or line:match("^%s*function%s+" .. n .. "%s*%(") ~= nil
      or line:match("^%s*[%w_.]*[.]" .. n .. "%s*=") ~= nil
      or line:match("^%s*[%w_]+%s*%[%s*[\"']" .. n .. "[\"']%s*%]%s*=") ~= nil
      or line:match("^%s*local%s+" .. n .. "%s*=") ~= nil
end

-- The argument list written on a definition line, "(a, b)", or nil.
function M.signature(line)
  return line and line:match("function%s*[%w_.:]*%s*(%b())") or nil
end

local function source_path(fn)
  -- a receiver-checking wrapper (oar.framework) stands for the method it guards
  local fw = package.loaded["oar.framework"]
  local guarded = type(fw) == "table" and rawget(fw, "guarded")
  if guarded and guarded[fn] then fn = guarded[fn] end
  local ok, info = pcall(debug.getinfo, fn, "S")
  if not ok or not info or info.what == "C" then return nil end
  local src = info.source or ""
  if src:sub(1, 1) ~= "@" then return nil end
  return src:sub(2), info.linedefined
end

-- The definition of `name` in `path`: line number with a comment above it
-- preferred, else the first definition.
local function find_definition(path, name)
  local lines = M.lines(path)
  if not lines then return nil end
  local first
  for i, line in ipairs(lines) do
    if M.defines(line, name) then
      if M.comment_above(lines, i) then return i end
      first = first or i
    end
  end
  return first
end

-- A free-standing LDoc block naming `name` with `@function name` (how
-- functions made in a loop are documented): its first line + 1, or nil.
local function find_tagged(path, name)
  local lines = M.lines(path)
  if not lines then return nil end
  local n = name:gsub("%p", "%%%0")
  for i, line in ipairs(lines) do
    if line:match("^%s*%-%-%s*@function%s+[%w_.:]-" .. n .. "%s*$")
        and (line:match("@function%s+" .. n .. "%s*$") or line:match("[.:]" .. n .. "%s*$")) then
      local j = i
      while lines[j + 1] and lines[j + 1]:match("^%s*%-%-") and not lines[j + 1]:match("^%s*%-%-%-") do
        j = j + 1
      end
      return j + 1
    end
  end
  return nil
end

-- An LDoc block that names `name` in backquotes as an alias or a sibling
-- ("(also `mm`)", "`exp`, `log`, ..."): the line after it, or nil. Blocks
-- whose summary line names it come first.
local function find_mentioned(path, name)
  local lines = M.lines(path)
  if not lines then return nil end
  local mention = "`" .. name .. "`"
  local fallback
  local i = 1
  while i <= #lines do
    if lines[i]:match("^%s*%-%-%-[^%-]") or lines[i]:match("^%s*%-%-%-$") then
      local j = i
      while lines[j + 1] and lines[j + 1]:match("^%s*%-%-") and not lines[j + 1]:match("^%s*%-%-%-") do
        j = j + 1
      end
      if lines[i]:find(mention, 1, true) then return j + 1 end
      if not fallback then
        for k = i + 1, j do
          -- the text, not the example
          if lines[k]:match("^%s*%-%-%s*@") then break end
          if lines[k]:find(mention, 1, true) then fallback = j + 1; break end
        end
      end
      i = j + 1
    else
      i = i + 1
    end
  end
  return fallback
end

-- Everything known about function `fn` asked for as `name` (the last part of
-- the path, may be nil), with `module_path` the file of the table it was
-- found in (may be nil): { doc=, file=, line=, signature= } or nil for C functions.
function M.for_function(fn, name, module_path)
  local path, linedefined = source_path(fn)
  if not path then return nil end
  local lines = M.lines(path)
  local line = linedefined
  if name and lines and lines[line] and not M.defines(lines[line], name) then
    -- a factory-made function or an alias: look for `name`'s definition
    local found = module_path and find_definition(module_path, name)
    if found then
      path, lines, line = module_path, M.lines(module_path), found
    else
      found = find_definition(path, name)
      if found then line = found end
    end
  end
  local block = lines and M.comment_above(lines, line)
  if not block and name then
    for _, p in ipairs({ path, module_path }) do
      local after = p and find_tagged(p, name)
      if after then
        block = M.comment_above(M.lines(p), after)
        break
      end
    end
  end
  if not block and name then
    -- an alias or a sibling documented with the function it goes with
    for _, p in ipairs({ path, module_path }) do
      local after = p and find_mentioned(p, name)
      if after then
        block = M.comment_above(M.lines(p), after)
        break
      end
    end
  end
  local sig = lines and M.signature(lines[line])
  if not sig and lines and path == source_path(fn) and lines[linedefined] then
    sig = M.signature(lines[linedefined])
  end
  return { doc = block and M.parse(block) or nil, file = path, line = line, signature = sig }
end

-- The documentation of a module file: its first comment block.
function M.for_file(path)
  local lines = M.lines(path)
  if not lines then return nil end
  local i = 1
  while lines[i] and (lines[i]:match("^#!") or not lines[i]:match("%S")) do i = i + 1 end
  if not lines[i] or not lines[i]:match("^%s*%-%-") then return nil end
  local j = i
  if lines[i]:match("^%s*%-%-%[=*%[") then
    while lines[j] and not lines[j]:match("%]=*%]") do j = j + 1 end
  else
    while lines[j + 1] and lines[j + 1]:match("^%s*%-%-") do j = j + 1 end
  end
  local block = M.comment_above(lines, j + 1)
  return block and M.parse(block) or nil
end

-- The file of a loaded module table: its name in package.loaded, then
-- package.searchpath. Returns path, module name.
function M.module_file(tbl)
  for name, mod in pairs(package.loaded) do
    if mod == tbl and type(name) == "string" then
      local path = package.searchpath(name, package.path)
      if path then return path, name end
    end
  end
  return nil
end

-- ---- formatting -----------------------------------------------------------------
local function wrap(text, width, indent)
  local out, line = {}, indent
  for word in text:gmatch("%S+") do
    if #line + #word + 1 > width and line:match("%S") then
      out[#out + 1] = line
      line = indent .. word
    else
      line = line .. (line:match("%S") and " " or "") .. word
    end
  end
  if line:match("%S") then out[#out + 1] = line end
  return out
end

-- A parsed doc as text lines (no colour; `style` decorates headings when given).
function M.format(doc, style)
  style = style or function(_, s) return s end
  local out = {}
  local width = 78
  -- paragraphs of the free text keep their line breaks for code-looking lines
  local para = {}
  local function flush()
    if #para > 0 then
      for _, l in ipairs(wrap(table.concat(para, " "), width, "  ")) do out[#out + 1] = l end
      para = {}
    end
  end
  for _, l in ipairs(doc.text) do
    if not l:match("%S") then flush() out[#out + 1] = ""
    elseif l:match("^%s%s") or l:match("^%s*[-*|]") then flush() out[#out + 1] = "  " .. l
    else para[#para + 1] = l end
  end
  flush()
  if #doc.params > 0 then
    out[#out + 1] = ""
    out[#out + 1] = style("heading", "Arguments:")
    for _, p in ipairs(doc.params) do
      local head = "    " .. p.name
      if p.type then head = head .. " (" .. p.type .. (p.opt and ", optional" or "") .. ")"
      elseif p.opt then head = head .. " (optional)" end
      if p.opt and p.opt ~= "" then head = head .. " default " .. p.opt end
      local lines = wrap(p.desc, width, "      ")
      out[#out + 1] = head .. (lines[1] and ":" or "")
      for _, l in ipairs(lines) do out[#out + 1] = l end
    end
  end
  if #doc.fields > 0 then
    out[#out + 1] = ""
    out[#out + 1] = style("heading", "Fields:")
    for _, p in ipairs(doc.fields) do
      out[#out + 1] = "    " .. p.name .. (p.type and " (" .. p.type .. ")" or "") .. (p.desc ~= "" and ": " .. p.desc or "")
    end
  end
  if #doc.returns > 0 then
    out[#out + 1] = ""
    out[#out + 1] = style("heading", "Returns:")
    for _, r in ipairs(doc.returns) do
      local text = (r.type and r.type .. (r.desc ~= "" and ": " or "") or "") .. r.desc
      for _, l in ipairs(wrap(text, width, "    ")) do out[#out + 1] = l end
    end
  end
  for _, key in ipairs({ "raise", "see" }) do
    if #doc[key] > 0 then
      out[#out + 1] = ""
      out[#out + 1] = style("heading", key == "raise" and "Raises:" or "See also:")
      for _, r in ipairs(doc[key]) do out[#out + 1] = "    " .. r.desc end
    end
  end
  for _, t in ipairs(doc.tags) do
    out[#out + 1] = ""
    out[#out + 1] = style("heading", t.tag:sub(1, 1):upper() .. t.tag:sub(2) .. ":") .. " " .. t.desc
  end
  if #doc.usage > 0 then
    out[#out + 1] = ""
    out[#out + 1] = style("heading", "Example:")
    for _, l in ipairs(doc.usage) do out[#out + 1] = "    " .. l end
  end
  return out
end

return M
