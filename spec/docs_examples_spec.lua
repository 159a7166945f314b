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
--
-- A fenced `c` block is a whole C program using the C API (src/oar.h): it
-- is compiled with -Wall -Wextra -Werror against build/liboar.so and run,
-- after the page's Lua script, in the same directory (so it can load a model
-- the Lua examples saved); it must exit with status 0. A block marked
-- `c op-example` is one file of an op's library, not a program:
-- spec/contributing_op_spec.lua builds those.
local ROOT = (function()
  local p = io.popen("pwd")
  local d = p:read("*l")
  p:close()
  return d
end)()

local read = require("spec.helpers.files").read_bytes

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

local function capture(cmd)
  local p = io.popen(cmd .. " 2>&1; echo \"exit:$?\"")
  local out = p:read("*a")
  p:close()
  local status = tonumber(out:match("exit:(%d+)%s*$"))
  return status, (out:gsub("exit:%d+%s*$", ""))
end

local function new_dir()
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p " .. shell_quote(dir)) == 0)
  return dir
end

local function write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

-- runs the page's Lua script in `dir`
local function run_script(dir, page, code)
  local file = dir .. "/" .. page:gsub("[/%.]", "_") .. ".lua"
  write(file, code)
  local env = string.format("LUA_PATH=%s LUA_CPATH=%s OAR_LIBRARY=%s",
    shell_quote(ROOT .. "/lua/?.lua;" .. ROOT .. "/lua/?/init.lua;;"),
    shell_quote(ROOT .. "/build/?.so;;"), shell_quote(ROOT .. "/build/liboar.so"))
  return capture(string.format("cd %s && %s luajit %s", shell_quote(dir), env, shell_quote(file)))
end

-- compiles the C block `b` in `dir` and runs the program there
local function run_c(dir, page, k, b)
  local name = string.format("example_%d", k)
  write(dir .. "/" .. name .. ".c", string.format("#line %d \"%s\"\n%s", b.line, page, b.code))
  local build = ROOT .. "/build"
  local status, out = capture(string.format(
    "cd %s && cc -std=c11 -Wall -Wextra -Werror -I%s -o %s %s.c -L%s -loar -Wl,-rpath,%s",
    shell_quote(dir), shell_quote(ROOT .. "/src"), name, name, shell_quote(build), shell_quote(build)))
  if status ~= 0 then return status, "compiling:\n" .. out end
  return capture(string.format("cd %s && ./%s", shell_quote(dir), name))
end

-- GitHub's anchor of a heading: lower case, punctuation dropped, spaces to '-'
local function slug(title)
  return (title:lower():gsub("[^%w%- _]", ""):gsub(" ", "-"))
end

local function anchors_of(text)
  local set = {}
  for line in (text .. "\n"):gmatch("(.-)\n") do
    local title = line:match("^#+%s+(.-)%s*$")
    if title then set[slug(title)] = true end
  end
  return set
end

describe("docs links", function()
  local pages = doc_pages()
  pages[#pages + 1] = "README.md"
  for _, page in ipairs(pages) do
    it(page .. ": relative links point to files and headings that exist", function()
      local text = read(page)
      local dir = page:match("^(.*)/") or "."
      local bad = {}
      for link in text:gmatch("%]%(([^%)%s]+)%)") do
        if not link:match("^%a+:") then
          local file, anchor = link:match("^([^#]*)#?(.*)$")
          local target = file == "" and page or (dir .. "/" .. file)
          local f = io.open(target, "rb")
          if not f then
            bad[#bad + 1] = link .. " (no file)"
          else
            local body = f:read("*a")
            f:close()
            if anchor ~= "" and target:match("%.md$") and not anchors_of(body)[anchor] then
              bad[#bad + 1] = link .. " (no such heading)"
            end
          end
        end
      end
      assert(#bad == 0, page .. ": " .. table.concat(bad, ", "))
    end)
  end
end)

describe("docs examples", function()
  local pages = doc_pages()

  it("finds the tutorial pages", function()
    assert.is_true(#pages >= 8, "expected the tutorial pages under docs/, found " .. #pages)
  end)

  for _, page in ipairs(pages) do
    local list = blocks(read(page))
    local runnable, skipped, cblocks = {}, {}, {}
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
      elseif lang == "c" and mark == "" then
        cblocks[#cblocks + 1] = b
      elseif lang == "c" and mark ~= "op-example" then
        error(string.format("%s:%d: unknown mark '%s' on a c block (use `c`, or `c op-example` for a file of an op's library)",
          page, b.line, mark))
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

    if #runnable > 0 or #cblocks > 0 then
      it(page .. ": the examples run (" .. #runnable .. " Lua, " .. #cblocks .. " C blocks)", function()
        local dir = new_dir()
        local ok, err = pcall(function()
          if #runnable > 0 then
            local code = script_of(page, runnable)
            local fn, perr = loadstring(code, "=" .. page)
            assert(fn, perr)
            local status, out = run_script(dir, page, code)
            assert(status == 0, string.format("%s: the Lua examples failed (exit %s):\n%s", page,
              tostring(status), out))
          end
          for k, b in ipairs(cblocks) do
            local status, out = run_c(dir, page, k, b)
            assert(status == 0, string.format("%s:%d: the C example failed (exit %s):\n%s", page, b.line,
              tostring(status), out))
          end
        end)
        os.execute("rm -rf " .. shell_quote(dir))
        if not ok then error(err, 0) end
      end)
    end
  end
end)
