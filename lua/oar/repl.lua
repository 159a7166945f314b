-- oar.repl: the `oar` command — an interactive LuaJIT prompt with oar loaded,
-- and the runner of scripts (`oar script.lua args`).
--
-- The prompt: each line is first tried as an expression (`return <line>`),
-- so `t` or `layers.fc{...}` prints its value; else it runs as statements;
-- `a = 1; a` runs the statements and prints the last expression. A line
-- continues on the next one only when Lua stops at the end of the input (an
-- open `function`, `{`, string...); anything else is an error at once, so a
-- stray `)` never swallows the lines after it. Ctrl-C abandons the line
-- being typed, and interrupts a running command (`while true do end` too:
-- the prompt's own code runs interpreted so the interrupt hook fires);
-- variables (globals) are kept. `?name` prints the documentation of a
-- function or module (oar.repl_doc), Tab completes (oar.repl_complete),
-- lines go to the history file as they are read (oar.repl_input). Errors
-- show the user's frames only; chunks are named `stdin` and numbered by the
-- session's lines. A command that takes over a second prints its time.
-- Colour only when writing to a terminal (and NO_COLOR is unset).
--
-- Ctrl-C needs the `oar` launcher (bin/oar.c: a SIGINT handler that arms a
-- Lua hook); `luajit -e 'require("oar.repl").run()'` works without it, with
-- Ctrl-C handled by luajit as usual.
local ffi = require("ffi")
local input = require("oar.repl_input")
local complete = require("oar.repl_complete")
local doc = require("oar.repl_doc")

local M = {}

M.TIME_THRESHOLD = 1.0 -- seconds; slower commands print their time

-- ---- where oar's own Lua files are (their frames are not the user's) ------------
local OAR_DIR = debug.getinfo(1, "S").source:match("^@(.*/)[^/]*$") or "\0"

local function is_internal(source)
  return source:sub(1, 1) == "@" and source:sub(2, #OAR_DIR + 1) == OAR_DIR
end

-- "/long/path/lua/oar/framework.lua:12: msg" -> "oar/framework.lua:12: msg"
local function short_paths(msg)
  local start, stop = msg:find(OAR_DIR, 1, true)
  while start do
    msg = msg:sub(1, start - 1) .. "oar/" .. msg:sub(stop + 1)
    start, stop = msg:find(OAR_DIR, start + 4, true)
  end
  return msg
end

-- ---- colour -----------------------------------------------------------------------
local function colour_enabled(fd)
  local nc = os.getenv("NO_COLOR")
  return input.isatty(fd) and (nc == nil or nc == "") and os.getenv("TERM") ~= "dumb"
end

local CODES = { prompt = "1;32", error = "31", heading = "1", dim = "2", name = "1;36" }

-- A styler: style(kind, text).
local function styler(enabled, prompt_markers)
  return function(kind, text)
    if not enabled or not CODES[kind] then return text end
    local on, off = "\27[" .. CODES[kind] .. "m", "\27[0m"
    if prompt_markers then on, off = "\1" .. on .. "\2", "\1" .. off .. "\2" end
    return on .. text .. off
  end
end
local plain = styler(false)
M.style_out, M.style_err = plain, plain

-- ---- clock --------------------------------------------------------------------------
pcall(ffi.cdef, "struct timespec { long tv_sec; long tv_nsec; };")
pcall(ffi.cdef, "int clock_gettime(int clk_id, struct timespec *tp);")
local ts = ffi.new("struct timespec")
local function now()
  ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

-- ---- printing values -------------------------------------------------------------------
local function has_tostring(v)
  local mt = getmetatable(v)
  return type(mt) == "table" and mt.__tostring ~= nil
end

local function describe_function(f)
  local info = debug.getinfo(f, "S")
  if info.what == "C" then return "builtin function" end
  local src = info.source:sub(1, 1) == "@" and short_paths(info.source:sub(2)) or info.short_src
  local lines = info.source:sub(1, 1) == "@" and doc.lines(info.source:sub(2))
  local sig = lines and doc.signature(lines[info.linedefined]) or "(...)"
  return "function" .. sig .. " " .. src .. ":" .. info.linedefined
end

local function is_array_key(k, n)
  return type(k) == "number" and k >= 1 and k <= n and k % 1 == 0
end

-- Module-like tables (functions inside, or many fields) get a summary.
local function wants_summary(t)
  local n = 0
  for _, v in pairs(t) do
    n = n + 1
    if type(v) == "function" or n > 20 then return true end
  end
  return false
end

local function columns(names, indent, width)
  local out, line = {}, indent
  for _, name in ipairs(names) do
    if #line + #name + 2 > width and line ~= indent then
      out[#out + 1] = line
      line = indent
    end
    line = line .. (line == indent and "" or "  ") .. name
  end
  if line ~= indent then out[#out + 1] = line end
  return out
end

local function term_width()
  local c = tonumber(os.getenv("COLUMNS") or "")
  return (c and c >= 40) and c or 80
end

-- A sorted summary of a module-like table, grouped by kind of value.
function M.summary(t, name)
  name = name or select(2, doc.module_file(t)) or "table"
  local groups = { ["function"] = {}, table = {}, other = {} }
  local count = 0
  for k, v in pairs(t) do
    count = count + 1
    if type(k) == "string" and k:sub(1, 1) == "_" then goto continue end -- private
    local key = type(k) == "string" and k or "[" .. tostring(k) .. "]"
    if type(v) == "function" then
      table.insert(groups["function"], key)
    elseif type(v) == "table" and not has_tostring(v) then
      table.insert(groups.table, key)
    else
      local shown = type(v) == "string" and string.format("%q", v) or tostring(v)
      if #shown > 30 then shown = shown:sub(1, 27) .. "..." end
      table.insert(groups.other, key .. " = " .. shown)
    end
    ::continue::
  end
  local lazy = complete.lazy_modules(t)
  local style = M.style_out
  local out = { style("heading", name) .. style("dim", string.format(" (%d fields%s; ?%s for help)",
    count, #lazy > 0 and string.format(", %d more modules on first use", #lazy) or "", name)) }
  local width = term_width()
  local function group(title, list)
    if #list == 0 then return end
    table.sort(list)
    out[#out + 1] = "  " .. style("heading", title)
    for _, l in ipairs(columns(list, "    ", width)) do out[#out + 1] = l end
  end
  group("functions", groups["function"])
  group("tables", groups.table)
  group("values", groups.other)
  group("modules loaded on first use", lazy)
  return table.concat(out, "\n")
end

local function show(v, depth)
  depth = depth or 0
  local t = type(v)
  if t == "string" then return string.format("%q", v) end
  if t == "function" then return describe_function(v) end
  if t ~= "table" or has_tostring(v) then return tostring(v) end
  if depth > 1 then return tostring(v) end
  if depth == 0 and wants_summary(v) then return M.summary(v) end
  local parts = {}
  local n = #v
  for i = 1, n do
    if i > 20 then parts[#parts + 1] = "..." break end
    parts[#parts + 1] = show(v[i], depth + 1)
  end
  local keys = {}
  for k in pairs(v) do
    if not is_array_key(k, n) then keys[#keys + 1] = k end
  end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  for i, k in ipairs(keys) do
    if i > 20 then parts[#parts + 1] = "... (" .. (#keys - 20) .. " more)" break end
    local key = (type(k) == "string" and k:match("^[%a_][%w_]*$")) and k or "[" .. show(k, 2) .. "]"
    parts[#parts + 1] = key .. " = " .. show(v[k], depth + 1)
  end
  return "{" .. table.concat(parts, ", ") .. "}"
end
M.show = show

local function print_results(n, ...)
  for i = 1, n do
    io.stdout:write(show((select(i, ...))), i < n and "\t" or "\n")
  end
end

-- ---- errors ----------------------------------------------------------------------------
-- xpcall's handler: the message and the user's frames (no oar, no REPL, no
-- C), from where the error was raised down to `chunk` (the function the
-- REPL or the launcher called: nothing below it is the user's).
local function capture_error(err, chunk)
  local frames = {}
  local level = 2
  while true do
    local info = debug.getinfo(level, "Slnf")
    if not info then break end
    if info.what ~= "C" and not is_internal(info.source) then
      local where = info.short_src .. ":" .. (info.currentline or "?")
      local what
      if info.what == "main" then what = "main chunk"
      elseif info.name then what = "function '" .. info.name .. "'"
      else what = "function <" .. info.short_src .. ":" .. info.linedefined .. ">" end
      frames[#frames + 1] = where .. ": in " .. what
    end
    if info.func == chunk then break end
    level = level + 1
  end
  local msg
  if type(err) == "string" then msg = err
  elseif has_tostring(err) then msg = tostring(err)
  else msg = "(error object is a " .. type(err) .. " value)" end
  return { msg = short_paths(msg), frames = frames }
end

local function is_interrupt(msg)
  return type(msg) == "string" and (msg:match(": interrupted!?$") or msg:match("^interrupted!?$")) ~= nil
end

-- The text of a captured error: the message, then the user's frames when
-- there is more than one (one frame says no more than the message).
function M.format_error(e)
  local lines = { e.msg }
  if is_interrupt(e.msg) then
    lines[1] = "interrupted" .. (e.msg:match("^(.-): interrupted") and " at " .. e.msg:match("^(.-): interrupted") or "")
  elseif #e.frames > 1 then
    lines[#lines + 1] = "stack traceback:"
    for _, f in ipairs(e.frames) do lines[#lines + 1] = "  " .. f end
  end
  return table.concat(lines, "\n")
end

-- ---- compiling and running one chunk ------------------------------------------------------
local function pack(...) return { n = select("#", ...), ... } end

-- Lua stopped at the end of the input: more lines could complete the chunk.
local function at_eof(err)
  return err ~= nil and err:match("'<eof>'$") ~= nil
end

-- `src` as an expression, else as statements, else as statements followed by
-- an expression (`a = 1; a`). Returns fn, or nil, err, more (more: the chunk
-- is unfinished and the next line may complete it). `first_line` numbers
-- the chunk's lines as the session's.
function M.compile(src, chunkname, first_line)
  chunkname = chunkname or "=stdin"
  local pad = string.rep("\n", (first_line or 1) - 1)
  local expr = src:match("^%s*=(.*)$") -- Lua 5.1's `=expr`
  local fn, experr = loadstring(pad .. "return " .. (expr or src), chunkname)
  if fn then
    -- run as an argument list, not a tail call, so that an error raised by
    -- the expression (error("x"), a failing layer) is located on its line
    -- (the `)` on the same line keeps the location; on the next one after a comment)
    return loadstring(pad .. "return select(1, " .. (expr or src) .. ")", chunkname)
        or loadstring(pad .. "return select(1, " .. (expr or src) .. "\n)", chunkname) or fn
  end
  local err
  fn, err = loadstring(pad .. src, chunkname)
  if fn then return fn end
  -- statements then a final expression, split at a `;`
  local pos = #src
  while true do
    pos = src:sub(1, pos - 1):match(".*();")
    if not pos then break end
    local last = loadstring(pad .. src:sub(1, pos) .. " return " .. src:sub(pos + 1), chunkname)
    if last then return last end
  end
  return nil, err, at_eof(err) or at_eof(experr)
end

local launcher -- the `oar_launcher` table of bin/oar.c, when running under it

local function set_running(on, script)
  if launcher then launcher.set_running(on, script) end
end

-- Runs one chunk typed at the prompt; returns false when it is unfinished
-- (more lines needed), true otherwise (it ran, or it was an error).
-- opts: first_line (the session line the chunk starts on).
function M.eval(src, env, opts)
  opts = opts or {}
  local fn, err, more = M.compile(src, "=stdin", opts.first_line)
  if not fn then
    if more then return false end
    io.stdout:flush()
    io.stderr:write(M.style_err("error", err), "\n")
    return true
  end
  setfenv(fn, env)
  -- interpreted, so that the interrupt hook fires even in `while true do end`
  -- (LuaJIT's compiled loops do not run hooks); functions oar calls keep the JIT
  if jit then jit.off(fn, true) end
  local start = now()
  set_running(true)
  local res = pack(xpcall(fn, function(e) return capture_error(e, fn) end))
  set_running(false)
  local elapsed = now() - start
  if not res[1] then
    io.stdout:flush()
    -- the terminal echoed ^C on the command's line
    if is_interrupt(res[2].msg) and input.isatty(2) then io.stderr:write("\n") end
    io.stderr:write(M.style_err("error", M.format_error(res[2])), "\n")
  elseif res.n > 1 then
    print_results(res.n - 1, unpack(res, 2, res.n))
  end
  if elapsed > M.TIME_THRESHOLD then
    io.stdout:write(M.style_out("dim", string.format("(%.2f s)", elapsed)), "\n")
  end
  io.stdout:flush()
  return true
end

-- ---- ?name ----------------------------------------------------------------------------------
local REPL_HELP = [[
oar prompt: type Lua; expressions print their value.
  ?name          documentation of a function or module: ?oar.layers.fc, ?oar, ?layers
  Tab            complete names, fields, methods (obj:<Tab>), file names inside strings
  Ctrl-C         clear the line, or interrupt the running command (variables are kept)
  Ctrl-D         quit
  `oar` and `layers` are loaded; history is kept in ~/.oar_history (OAR_HISTORY).]]

-- The value of a path `a.b:c` in env, with the table it was found in;
-- nil and a message when a part is missing.
local function lookup(path, env)
  local v, parent, last
  for sep, part in ("." .. path):gmatch("([.:])([^.:]+)") do
    if not part:match("^[%a_][%w_]*$") then return nil, "not a name: " .. path end
    local holder = v == nil and env or v
    if v ~= nil and type(v) ~= "table" and type(v) ~= "string" and type(v) ~= "userdata" then
      return nil, (last or "?") .. " is a " .. type(v) .. ", it has no field '" .. part .. "'"
    end
    local ok, r = pcall(function() return holder[part] end)
    if not ok then return nil, short_paths(tostring(r)) end
    if r == nil then
      return nil, (last and ("'" .. part .. "' is not a field of " .. last) or ("'" .. part .. "' is not defined"))
    end
    parent, v = holder, r
    last = last and (last .. sep .. part) or part
  end
  return v, nil, parent
end

local function function_help(name, fn, parent, style)
  local last = name:match("([%w_]+)$")
  local parent_file = type(parent) == "table" and doc.module_file(parent) or nil
  local info = doc.for_function(fn, last, parent_file)
  if not info then return style("name", name) .. "  (a builtin function: see the Lua 5.1 manual)" end
  local out = { style("name", name .. (info.signature or "(...)")) }
  if info.doc then
    for _, l in ipairs(doc.format(info.doc, style)) do out[#out + 1] = l end
  else
    out[#out + 1] = "  (no documentation comment)"
  end
  out[#out + 1] = style("dim", "  defined at " .. short_paths(info.file) .. ":" .. info.line)
  return table.concat(out, "\n")
end

-- The help text for `?path`.
function M.help(path, env)
  local style = M.style_out
  path = path:gsub("^%s+", ""):gsub("[%s(]+$", "")
  if path == "" then return REPL_HELP end
  local v, err, parent = lookup(path, env)
  if v == nil then return style("error", "?" .. path .. ": " .. err) end
  if type(v) == "function" then return function_help(path, v, parent, style) end
  if type(v) == "table" then
    local mt = getmetatable(v)
    local file = doc.module_file(v)
    local out = {}
    local mdoc = file and doc.for_file(file)
    if mdoc then
      out[#out + 1] = style("name", path) .. style("dim", "  (" .. short_paths(file) .. ")")
      for _, l in ipairs(doc.format(mdoc, style)) do out[#out + 1] = l end
    elseif type(mt) == "table" and type(rawget(mt, "__call")) == "function" then
      -- a class: its constructor's documentation
      out[#out + 1] = function_help(path, rawget(mt, "__call"), v, style)
    end
    if has_tostring(v) then
      out[#out + 1] = tostring(v)
    else
      out[#out + 1] = M.summary(v, path)
    end
    return table.concat(out, "\n")
  end
  return style("name", path) .. ": a " .. type(v) .. " (" .. show(v) .. ")"
end

-- ---- the prompt ------------------------------------------------------------------------------
-- HOOK (issue 13): let Ctrl-C cancel a running oar executor. The launcher
-- calls the function from its SIGINT handler while a command runs; used
-- only when liboar has it (oar_executor_cancel, declared in oar.h).
local function install_cancel()
  if not launcher then return end
  local ok, lib = pcall(require, "oar.lib")
  if not ok then return end
  -- a function of no arguments, safe in a signal handler: every run stops
  local found, fn = pcall(function() return lib.C.oar_interrupt_runs end)
  if found and fn ~= nil then
    launcher.set_cancel(tonumber(ffi.cast("intptr_t", ffi.cast("void *", fn))))
  end
end

-- The environment of the prompt: globals plus oar, layers and ffi.
function M.env()
  local oar = require("oar")
  install_cancel()
  return setmetatable({ oar = oar, layers = oar.layers, ffi = ffi }, { __index = _G, __newindex = _G })
end

local function version_string()
  local v = launcher and launcher.version or "unknown"
  return "oar " .. v .. " (" .. (jit and jit.version or _VERSION) .. ")"
end

-- The interactive loop. opts: env (default M.env()).
function M.run(opts)
  opts = opts or {}
  launcher = launcher or rawget(_G, "oar_launcher")
  local env = opts.env or M.env()
  local reader = input.new({
    launcher = launcher,
    history = input.history_path(),
    complete = function(text, before) return complete.candidates(text, before, env) end,
    in_string = complete.in_string,
  })
  M.style_out = styler(colour_enabled(1))
  M.style_err = styler(colour_enabled(2))
  local pstyle = styler(colour_enabled(1), reader.rl ~= nil)
  local prompt, more_prompt = pstyle("prompt", "oar>") .. " ", pstyle("prompt", "  >>") .. " "
  if reader.tty then
    io.stdout:write(version_string(), ": `oar` and `layers` are loaded. ",
      "?name for help, Tab completes, Ctrl-D quits.\n")
  end
  local buffer, first_line, lineno = nil, 1, 0
  -- one line read: help, or added to the chunk being typed and run when complete
  local function handle(line)
    reader:remember(line)
    lineno = lineno + 1
    if not buffer and line:match("^%s*%?") then
      set_running(true) -- (reading many sources can take a moment: interruptible)
      local hok, text = pcall(M.help, line:match("^%s*%?(.*)$"), env)
      set_running(false)
      io.stdout:write(hok and text or ("?: " .. (is_interrupt(text) and "interrupted" or tostring(text))), "\n")
      return
    end
    if not buffer then first_line = lineno end
    buffer = buffer and (buffer .. "\n" .. line) or line
    if M.eval(buffer, env, { first_line = first_line }) then buffer = nil end
  end
  while true do
    local ok, line = pcall(reader.read, reader, buffer and more_prompt or prompt)
    if not ok then
      -- an interrupt that reached the prompt's own code: treat as Ctrl-C
      set_running(false)
      if not is_interrupt(line) then io.stderr:write(tostring(line), "\n") end
      line = false
    end
    if line == nil then break end
    if line == false then
      buffer = nil
    else
      -- protected: an interrupt landing between the command's end and the
      -- return to the prompt mode (or a bug in printing) keeps the session
      local hok, err = pcall(handle, line)
      if not hok then
        set_running(false)
        buffer = nil
        io.stderr:write(M.style_err("error", is_interrupt(err) and "interrupted" or tostring(err)), "\n")
      end
    end
  end
end

-- ---- the command line ------------------------------------------------------------------------
local USAGE = [==[
usage: oar [options] [script [args...]]
       oar serve MODEL [--port P] [...]   (HTTP inference server; oar serve --help)

With no script, an interactive prompt with `oar` and `layers` loaded:
  Tab completes names, fields, methods and (inside a string) file names;
  ?name prints the documentation of a function or module (?oar.layers.fc);
  Ctrl-C clears the line or interrupts the running command; Ctrl-D quits.
  History goes to ~/.oar_history as you type (OAR_HISTORY=file to change it,
  OAR_HISTORY= for none).

Options:
  -e code        run code
  -l module      require module into the global of that name
  -i             the interactive prompt after the script or -e
  -              read the script from stdin
  -v, --version  print the version and exit
  -h, --help     print this help and exit

A script runs under LuaJIT with oar's modules on the path; its arguments are
arg[1], arg[2], ... and `...`.]==]

-- Runs a loaded chunk as a script: returns the exit status.
local function run_script(fn, args)
  set_running(true, true)
  local res = pack(xpcall(function() return fn(unpack(args, 1, args.n)) end,
    function(e) return capture_error(e, fn) end))
  set_running(false)
  if res[1] then return 0 end
  local e = res[2]
  if is_interrupt(e.msg) then
    io.stderr:write("oar: interrupted\n")
    return 130
  end
  local text = e.msg
  if #e.frames > 0 then text = text .. "\nstack traceback:\n  " .. table.concat(e.frames, "\n  ") end
  io.stderr:write(styler(colour_enabled(2))("error", "oar: " .. text), "\n")
  return 1
end

-- The `oar` command: arg (the global, as the launcher set it) -> exit status.
function M.main(the_launcher)
  launcher = the_launcher or rawget(_G, "oar_launcher")
  local argv = rawget(_G, "arg") or {}
  local i, interactive, actions = 1, false, {}
  local script
  while argv[i] do
    local a = argv[i]
    if a == "-h" or a == "--help" then
      io.stdout:write(USAGE, "\n")
      return 0
    elseif a == "-v" or a == "--version" then
      io.stdout:write(version_string(), "\n")
      return 0
    elseif a == "-i" then
      interactive = true
    elseif a == "-e" or a == "-l" then
      if not argv[i + 1] then
        io.stderr:write("oar: ", a, " needs an argument\n", "usage: oar [options] [script [args...]] (oar --help)\n")
        return 2
      end
      actions[#actions + 1] = { a, argv[i + 1] }
      i = i + 1
    elseif a == "--" then
      i = i + 1
      script = argv[i]
      break
    elseif a == "-" or a:sub(1, 1) ~= "-" then
      script = a
      break
    else
      io.stderr:write("oar: unknown option '", a, "'\n", "usage: oar [options] [script [args...]] (oar --help)\n")
      return 2
    end
    i = i + 1
  end
  for _, act in ipairs(actions) do
    local fn, err
    if act[1] == "-l" then
      fn = function() _G[act[2]] = require(act[2]) end
    else
      fn, err = loadstring(act[2], "=(command line)")
      if not fn then io.stderr:write("oar: ", err, "\n") return 1 end
    end
    local status = run_script(fn, { n = 0 })
    if status ~= 0 then return status end
  end
  if script then
    -- arg as luajit makes it: arg[0] the script, arg[1..] its arguments
    local new_arg = { [-1] = argv[0], [0] = script }
    local args = { n = 0 }
    for k = i + 1, #argv do
      new_arg[k - i] = argv[k]
      args[k - i], args.n = argv[k], k - i
    end
    _G.arg = new_arg
    local fn, err
    if script == "-" then fn, err = loadstring(io.read("*a"), "=stdin") else fn, err = loadfile(script) end
    if not fn then
      io.stderr:write("oar: ", err, "\n")
      return 1
    end
    local status = run_script(fn, args)
    if status ~= 0 or not interactive then return status end
  elseif #actions > 0 and not interactive then
    return 0
  end
  M.run()
  return 0
end

return M
