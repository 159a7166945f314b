-- The Lua examples in docs/*.md run, so the documentation cannot rot.
--
-- Every fenced block whose info string is `lua` is runnable: the runnable
-- blocks of one page are joined in order into one script (later blocks use
-- the variables of earlier ones, as a reader typing them would) and run by
-- luajit in a fresh process, in an empty temporary directory, with this
-- checkout's lua/ and build/ on the paths. The script must exit with status 0
-- (an `assert` in an example is a check). A block marked `lua no-run` (one
-- that needs the full data set, a GPU, or minutes of training) is not run,
-- but it must still compile.
local ROOT = (function()
  local p = io.popen("pwd")
  local d = p:read("*l")
  p:close()
  return d
end)()

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

local function shell_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- {info=, code=, line=} for each fenced block of a Markdown text
local function blocks(text)
  local out, cur = {}, nil
  local n = 0
  for line in (text .. "\n"):gmatch("(.-)\n") do
    n = n + 1
    if cur then
      if line:match("^```%s*$") then
        cur.code = table.concat(cur.lines, "\n") .. "\n"
        out[#out + 1] = cur
        cur = nil
      else
        cur.lines[#cur.lines + 1] = line
      end
    else
      local info = line:match("^```(.*)$")
      if info then cur = { info = info:match("^%s*(.-)%s*$"), lines = {}, line = n + 1 } end
    end
  end
  assert(cur == nil, "a code block is not closed")
  return out
end

local function doc_pages()
  local p = io.popen("ls docs/*.md")
  local pages = {}
  for f in p:lines() do pages[#pages + 1] = f end
  p:close()
  table.sort(pages)
  return pages
end

-- The page's runnable blocks as one script; each block starts with a comment
-- naming its line in the page, so an error points back to the Markdown.
local function script_of(page, list)
  local parts = {}
  for _, b in ipairs(list) do
    parts[#parts + 1] = string.format("-- %s:%d\n%s", page, b.line, b.code)
  end
  return table.concat(parts)
end

local function run_script(page, code)
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p " .. shell_quote(dir)) == 0)
  local file = dir .. "/" .. page:gsub("[/%.]", "_") .. ".lua"
  local f = assert(io.open(file, "wb"))
  f:write(code)
  f:close()
  local env = string.format("LUA_PATH=%s LUA_CPATH=%s OAR_LIBRARY=%s",
    shell_quote(ROOT .. "/lua/?.lua;" .. ROOT .. "/lua/?/init.lua;;"),
    shell_quote(ROOT .. "/build/?.so;;"), shell_quote(ROOT .. "/build/liboar.so"))
  local cmd = string.format("cd %s && %s luajit %s 2>&1; echo \"exit:$?\"", shell_quote(dir), env,
    shell_quote(file))
  local p = io.popen(cmd)
  local out = p:read("*a")
  p:close()
  os.execute("rm -rf " .. shell_quote(dir))
  local status = tonumber(out:match("exit:(%d+)%s*$"))
  return status, out:gsub("exit:%d+%s*$", "")
end

describe("docs examples", function()
  local pages = doc_pages()

  it("finds the tutorial pages", function()
    assert.is_true(#pages >= 8, "expected the tutorial pages under docs/, found " .. #pages)
  end)

  for _, page in ipairs(pages) do
    local list = blocks(read(page))
    local runnable, skipped = {}, {}
    for _, b in ipairs(list) do
      local lang, mark = b.info:match("^(%S*)%s*(.-)$")
      if lang == "lua" then
        if mark == "" then
          runnable[#runnable + 1] = b
        elseif mark == "no-run" then
          skipped[#skipped + 1] = b
        else
          error(string.format("%s:%d: unknown mark '%s' on a lua block (use `lua` or `lua no-run`)",
            page, b.line, mark))
        end
      end
    end

    if #skipped > 0 then
      it(page .. ": the blocks marked no-run compile", function()
        for _, b in ipairs(skipped) do
          local fn, err = loadstring(b.code, "=" .. page .. ":" .. b.line)
          assert(fn, err)
        end
      end)
    end

    if #runnable > 0 then
      it(page .. ": the examples run (" .. #runnable .. " blocks)", function()
        local code = script_of(page, runnable)
        local fn, err = loadstring(code, "=" .. page)
        assert(fn, err)
        local status, out = run_script(page, code)
        assert(status == 0, string.format("%s: the examples failed (exit %s):\n%s", page,
          tostring(status), out))
      end)
    end
  end
end)
