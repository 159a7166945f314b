-- oar.repl_input: reading lines for the REPL.
--
-- On a terminal with GNU readline (libreadline8, loaded through the FFI, not
-- linked) lines are edited with readline's callback interface: the reader
-- polls stdin together with the `oar` launcher's interrupt pipe, so Ctrl-C
-- at the prompt throws the line away and gives a fresh prompt (readline's
-- own signal handling is turned off). Without readline, or when stdin is not
-- a terminal, lines come from io.read, Ctrl-C still abandoning the line when
-- the launcher is there.
--
-- History: every line is appended to the history file as soon as it is read
-- (OAR_HISTORY, default ~/.oar_history; OAR_HISTORY="" keeps none).
local ffi = require("ffi")

local M = {}

local function declare(decl) pcall(ffi.cdef, decl) end
declare("int isatty(int fd);")
declare("void free(void *ptr);")
declare("char *strdup(const char *s);")
declare("void *malloc(size_t size);")
declare("struct pollfd { int fd; short events; short revents; };")
declare("int poll(struct pollfd *fds, unsigned long nfds, int timeout);")
declare("typedef struct _IO_FILE FILE;")
declare("extern FILE *stdin;")
declare("void clearerr(FILE *stream);")
local C = ffi.C
local POLLIN = 1

function M.isatty(fd) return C.isatty(fd) == 1 end

-- ---- history file --------------------------------------------------------------
local HISTORY_KEEP = 1000

function M.history_path()
  local env = os.getenv("OAR_HISTORY")
  if env then return env ~= "" and env or nil end
  local home = os.getenv("HOME")
  return home and home ~= "" and (home .. "/.oar_history") or nil
end

-- The saved lines (the last HISTORY_KEEP; the file is trimmed when it grew
-- past twice that).
local function load_history(path)
  local lines = {}
  local f = path and io.open(path, "r")
  if not f then return lines end
  for l in f:lines() do lines[#lines + 1] = l end
  f:close()
  if #lines > 2 * HISTORY_KEEP then
    local keep = {}
    for i = #lines - HISTORY_KEEP + 1, #lines do keep[#keep + 1] = lines[i] end
    lines = keep
    local w = io.open(path, "w")
    if w then w:write(table.concat(lines, "\n"), "\n") w:close() end
  end
  return lines
end

-- ---- readline through the FFI ----------------------------------------------------
local rl_decls = {
  "void rl_callback_handler_install(const char *prompt, void (*handler)(char *));",
  "void rl_callback_read_char(void);",
  "void rl_callback_handler_remove(void);",
  "void rl_callback_sigcleanup(void);",
  "void rl_free_line_state(void);",
  "void rl_replace_line(const char *text, int clear_undo);",
  "void add_history(const char *line);",
  "extern int rl_catch_signals;",
  "extern int rl_catch_sigwinch;",
  "extern char *rl_line_buffer;",
  "extern int rl_point;",
  "extern int rl_end;",
  "int rl_redisplay(void);",
  "extern const char *rl_readline_name;",
  "extern char *rl_completer_word_break_characters;",
  "extern char *(*rl_completion_word_break_hook)(void);",
  "extern char **(*rl_attempted_completion_function)(const char *, int, int);",
  "extern int rl_attempted_completion_over;",
  "extern int rl_completion_append_character;",
  "extern int rl_completion_suppress_append;",
  "extern int rl_completion_query_items;",
  "extern void (*rl_completion_display_matches_hook)(char **, int, int);",
  "void rl_display_match_list(char **matches, int len, int max);",
  "int rl_forced_update_display(void);",
}

local function load_readline()
  if os.getenv("OAR_NO_READLINE") then return nil end
  local ok, rl = pcall(ffi.load, "readline")
  if not ok then ok, rl = pcall(ffi.load, "libreadline.so.8") end
  if not ok then return nil end
  for _, d in ipairs(rl_decls) do declare(d) end
  -- every symbol must resolve, or readline is not used at all
  local ok2 = pcall(function()
    local _ = rl.rl_callback_handler_install, rl.rl_callback_read_char, rl.rl_callback_sigcleanup,
      rl.rl_replace_line, rl.rl_attempted_completion_function, rl.rl_completion_word_break_hook
  end)
  return ok2 and rl or nil
end

-- Lua's word breaks (a field path `a.b:c` is one word) and those inside a
-- string (a file name is one word)
local LUA_BREAKS = " \t\n\"'`@$><=;|&{(+-*/%^~#,[]}"
local STRING_BREAKS = " \t\n\"'="

-- ---- the reader --------------------------------------------------------------------
local Reader = {}
Reader.__index = Reader

-- opts: launcher (the `oar_launcher` table or nil), complete (function(text,
-- line_before) -> list of words, or nil to complete file names),
-- in_string (function(line_before) -> bool), history (path or nil).
function M.new(opts)
  local self = setmetatable({}, Reader)
  self.launcher = opts.launcher
  self.history = opts.history
  self.tty = M.isatty(0) and M.isatty(1)
  self.rl = self.tty and load_readline() or nil
  self.intr_fd = self.launcher and self.launcher.interrupt_fd() or -1
  self.fds = ffi.new("struct pollfd[2]")
  local saved = load_history(self.history)
  if self.rl then self:setup_readline(opts, saved) end
  return self
end

function Reader:setup_readline(opts, saved)
  local rl = self.rl
  rl.rl_catch_signals = 0 -- the launcher owns SIGINT
  self.name = ffi.new("char[4]", "oar")
  rl.rl_readline_name = self.name
  rl.rl_completion_query_items = 200
  for _, l in ipairs(saved) do rl.add_history(l) end
  local state = { done = false }
  self.state = state
  -- callbacks are made once and kept (LuaJIT has a limited number of them)
  self.line_cb = ffi.cast("void (*)(char *)", function(p)
    if p == nil then
      state.line = nil
    else
      state.line = ffi.string(p)
      C.free(p)
    end
    state.done = true
    rl.rl_callback_handler_remove()
  end)
  local lua_breaks = ffi.new("char[?]", #LUA_BREAKS + 1, LUA_BREAKS)
  local string_breaks = ffi.new("char[?]", #STRING_BREAKS + 1, STRING_BREAKS)
  self.breaks = { lua_breaks, string_breaks }
  local in_string = opts.in_string or function() return false end
  local function before_point()
    return ffi.string(rl.rl_line_buffer, rl.rl_point)
  end
  self.break_cb = ffi.cast("char *(*)(void)", function()
    local ok, s = pcall(in_string, before_point())
    return (ok and s) and string_breaks or lua_breaks
  end)
  rl.rl_completion_word_break_hook = self.break_cb
  local complete = opts.complete
  self.complete_cb = ffi.cast("char **(*)(const char *, int, int)", function(text, _start, _end)
    local before = before_point()
    local ok, words = pcall(complete, ffi.string(text), before)
    if not ok then words = {} end
    state.files = words == nil
    if words == nil then
      -- inside a string: readline's own file name completion
      rl.rl_attempted_completion_over = 0
      return nil
    end
    rl.rl_attempted_completion_over = 1
    rl.rl_completion_suppress_append = 1
    if #words == 0 then return nil end
    -- readline's format: [0] the common prefix (what replaces the word),
    -- then the matches, then NULL; all malloc'ed, freed by readline
    local common = words[1]
    for i = 2, #words do
      local w, n = words[i], 0
      while n < #common and n < #w and common:byte(n + 1) == w:byte(n + 1) do n = n + 1 end
      common = common:sub(1, n)
    end
    local arr = ffi.cast("char **", C.malloc(ffi.sizeof("char *") * (#words + 2)))
    arr[0] = C.strdup(common)
    if #words == 1 then
      arr[1] = nil
    else
      for i, w in ipairs(words) do arr[i] = C.strdup(w) end
      arr[#words + 1] = nil
    end
    return arr
  end)
  rl.rl_attempted_completion_function = self.complete_cb
  -- the list shows the last part of each name (`fc`, not `oar.layers.fc`;
  -- `runner.lua`, not its directory), as shells do
  self.display_cb = ffi.cast("void (*)(char **, int, int)", function(matches, n, _max)
    local short, width = {}, 0
    for i = 1, n do
      local m = ffi.string(matches[i])
      local s = state.files and (m:match("([^/]+/?)$") or m) or (m:match("([^.:]+)$") or m)
      short[i] = s
      width = math.max(width, #s)
    end
    local arr = ffi.new("char *[?]", n + 2)
    local keep = {}
    for i = 1, n do
      keep[i] = ffi.new("char[?]", #short[i] + 1, short[i])
      arr[i] = keep[i]
    end
    arr[0] = matches[0]
    rl.rl_display_match_list(arr, n, width)
    rl.rl_forced_update_display()
  end)
  rl.rl_completion_display_matches_hook = self.display_cb
end

-- Waits until stdin is readable; false when Ctrl-C came first.
function Reader:wait_input()
  if self.intr_fd < 0 then return true end
  local fds = self.fds
  while true do
    fds[0].fd, fds[0].events, fds[0].revents = 0, POLLIN, 0
    fds[1].fd, fds[1].events, fds[1].revents = self.intr_fd, POLLIN, 0
    local n = C.poll(fds, 2, -1)
    if (n < 0 or fds[1].revents ~= 0) and self.launcher.take_interrupt() then return false end
    if n > 0 and fds[0].revents ~= 0 then return true end
  end
end

-- One line: the string, nil at end of input, false when Ctrl-C abandoned it.
function Reader:read(prompt)
  if self.rl then return self:read_readline(prompt) end
  if self.tty then
    io.stdout:write(prompt)
    io.stdout:flush()
  end
  if self.tty and not self:wait_input() then
    io.stdout:write("\n") -- the terminal itself echoed ^C
    return false
  end
  local line = io.read("*l")
  if line == nil and self.launcher and self.launcher.take_interrupt() then
    C.clearerr(C.stdin)
    io.stdout:write("\n")
    return false
  end
  return line
end

function Reader:read_readline(prompt)
  local rl, state = self.rl, self.state
  state.done, state.line = false, nil
  rl.rl_callback_handler_install(prompt, self.line_cb)
  while not state.done do
    if not self:wait_input() then
      -- show the abandoned line with ^C after it, then a fresh prompt
      rl.rl_point = rl.rl_end
      rl.rl_redisplay()
      io.stdout:write("^C")
      io.stdout:flush()
      rl.rl_callback_sigcleanup()
      rl.rl_replace_line("", 0)
      rl.rl_callback_handler_remove()
      io.stdout:write("\n")
      io.stdout:flush()
      return false
    end
    rl.rl_callback_read_char()
  end
  if state.line == nil then io.stdout:write("\n") end
  return state.line
end
-- readline calls back into Lua (line handler, completion): the functions
-- that call it must never be JIT-compiled
jit.off(Reader.read_readline)
jit.off(Reader.wait_input)

-- Records a line in the session's history and appends it to the file.
function Reader:remember(line)
  if not line:match("%S") or line == self.last then return end
  self.last = line
  if self.rl then self.rl.add_history(line) end
  if self.history then
    local f = io.open(self.history, "a")
    if f then
      f:write(line, "\n")
      f:close()
    end
  end
end

return M
