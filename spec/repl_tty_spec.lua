-- The `oar` command under a real terminal: tmux runs build/oar, the spec
-- types with send-keys and reads the screen with capture-pane. Every wait
-- polls the screen until the expected text shows (or a timeout, which fails
-- with the screen's content). Skipped, saying so, only when tmux is missing.
-- Runs a shell command: its output (stdout and stderr) and exit status.
local function sh(cmd)
  local p = io.popen("( " .. cmd .. " ) 2>&1; echo \"__status=$?\"")
  local out = p:read("*a")
  p:close()
  local code = tonumber(out:match("__status=(%d+)\n?$"))
  return (out:gsub("__status=%d+\n?$", "")), code
end

local function shq(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local have_tmux = sh("command -v tmux >/dev/null && echo yes"):match("yes") ~= nil
local root = sh("pwd"):gsub("%s+$", "")
local OAR = root .. "/build/oar"

local function sleep(s) os.execute("sleep " .. s) end

-- a tmux server of this spec's own (no user configuration, no sharing with
-- anyone's sessions), kept alive between sessions by an idle one
math.randomseed(os.time())
local TMUX = string.format("tmux -L oar_spec_%d_%d -f /dev/null", os.time() % 100000, math.random(1e6))

local Term = {}
Term.__index = Term

local serial = 0
local function start(opts)
  opts = opts or {}
  serial = serial + 1
  local name = string.format("oar_spec_%d_%d", math.floor(os.time() % 100000), serial)
  local history = os.tmpname()
  local env = "env -u LUA_PATH -u LUA_CPATH OAR_HISTORY=" .. shq(history) .. " COLUMNS=100 " .. (opts.env or "")
  -- the shell after oar prints how it ended and keeps the pane to be read
  -- (the shell around oar survives the Ctrl-C that the terminal sends to it too)
  local cmd = "trap : INT; cd /tmp && " .. env .. " " .. shq(OAR) .. " " .. (opts.args or "") .. "; echo OAR_EXIT=$?; sleep 60"
  local out, code = sh(TMUX .. " new-session -d -s " .. name .. " -x 100 -y 50 " .. shq(cmd))
  assert(code == 0, out)
  local t = setmetatable({ name = name, history = history }, Term)
  return t
end

function Term:screen()
  return (sh(TMUX .. " capture-pane -p -J -S -200 -t " .. self.name))
end

-- Waits until `text` (plain) shows `count` times (default 1) on the screen.
function Term:wait(text, timeout, count)
  timeout, count = timeout or 15, count or 1
  local deadline = os.time() + timeout
  local screen
  repeat
    screen = self:screen()
    local n, pos = 0, 1
    while true do
      local s, e = screen:find(text, pos, true)
      if not s then break end
      n, pos = n + 1, e + 1
    end
    if n >= count then return screen end
    sleep(0.05)
  until os.time() > deadline
  error(string.format("timed out waiting for %q (x%d); the screen:\n%s", text, count, screen), 2)
end

-- the screen with its colours (escape sequences)
function Term:screen_escapes()
  return (sh(TMUX .. " capture-pane -p -e -J -S -200 -t " .. self.name))
end

function Term:keys(...)
  sh(TMUX .. " send-keys -t " .. self.name .. " " .. table.concat({ ... }, " "))
end

function Term:type(text) sh(TMUX .. " send-keys -t " .. self.name .. " -l " .. shq(text)) end

function Term:line(text)
  self:type(text)
  self:keys("Enter")
end

function Term:close()
  sh(TMUX .. " kill-session -t " .. self.name)
  os.remove(self.history)
end

-- tools/bootstrap installs tmux: without it the terminal behaviours are
-- untested, which is a failure, not a skip
local describe_tty = have_tmux and describe or function(name, _)
  describe(name, function()
    it("needs tmux", function()
      error("tmux is not installed (Debian package tmux; tools/bootstrap installs it)")
    end)
  end)
end

describe_tty("oar in a terminal (tmux)", function()
  setup(function()
    local out, code = sh(TMUX .. " new-session -d -s keeper 'sleep 3600'")
    assert(code == 0, out)
  end)

  teardown(function()
    sh(TMUX .. " kill-server")
  end)

  describe("the oar command in a terminal", function()
    local t

    setup(function()
      assert(io.open(OAR, "rb"), "build/oar is missing: run `make`")
      t = start()
      t:wait("oar> ")
    end)

    teardown(function()
      if t then t:close() end
    end)

    it("prints a banner with the version and a coloured prompt", function()
      local screen = t:screen()
      assert.truthy(screen:find("oar scm%-1 %(LuaJIT"), screen)
      assert.truthy(t:screen_escapes():find("\27%[32moar>"), "no colour on the terminal") -- (tmux splits 1;32)
    end)

    it("completes oar.lay<Tab> to oar.layers", function()
      t:type("c1 = oar.lay")
      t:keys("Tab")
      t:wait("c1 = oar.layers")
      t:line(".fc ~= nil")
      t:line('c1 and "comp" .. "leted"')
      t:wait('"completed"')
    end)

    it("completes a method of an object", function()
      t:line("prog = oar.Program()")
      t:type('"blk" .. prog:glo')
      t:keys("Tab")
      t:wait('prog:global_block')
      t:line("().idx")
      t:wait('"blk0"')
    end)

    it("completes the methods of a Variable (answered by an __index function)", function()
    t:line('vx = layers.data{name = "vx", shape = {4}}')
    t:type('"g" .. vx:grad_')
    t:keys("Tab")
    t:wait("vx:grad_name")
    t:line("()")
    t:wait('"gvx@GRAD"')
  end)

  it("lists the choices on a second Tab", function()
      t:type("layers.elementwise_")
      t:keys("Tab", "Tab")
      -- the list names the fields, not the whole path each time
      local screen = t:wait("elementwise_floordiv")
      assert.truthy(screen:find("\nelementwise_add%s"), screen)
      assert.is_nil(screen:find("layers.elementwise_add", 1, true), screen)
      t:keys("C-c")
      t:wait("oar> layers.elementwise_^C")
      t:line('"after" .. "list"')
      t:wait('"afterlist"')
    end)

    it("completes file names inside a string", function()
      t:type('fname = "/usr/share/lua/5.1/busted/runn')
      t:keys("Tab")
      t:wait('busted/runner.lua"')
      t:keys("Enter")
      t:line('fname:sub(-10) .. "!"')
      t:wait('"runner.lua!"')
    end)

    it("completes an eager tensor's method and prints the tensor result", function()
      t:line("et = oar.Tensor({{1, 2}, {3, 4}})")
      t:type("et:matm")
      t:keys("Tab")
      t:wait("et:matmul")
      t:line("(et)")
      local screen = t:wait("shape=[2, 2], dtype=float32)")
      assert.truthy(screen:find("Tensor([[7, 10],", 1, true), screen)
    end)

    it("prints the documentation of ?et.matmul", function()
      t:line("?et.matmul")
      local screen = t:wait("defined at oar/eager.lua:")
      assert.truthy(screen:find("The matrix product", 1, true), screen)
    end)

    it("prints the documentation of ?oar.layers.fc", function()
      t:line("?oar.layers.fc")
      local screen = t:wait("defined at oar/layers/nn.lua:")
      assert.truthy(screen:find("oar.layers.fc(", 1, true), screen)
    end)

    it("clears the line on Ctrl-C at the prompt and keeps the session", function()
      t:type("never_run = 1 +")
      t:keys("C-c")
      -- (waiting for ^C: a key typed right after Ctrl-C may reach the line
      -- before the signal reaches oar)
      t:wait("never_run = 1 +^C")
      t:line('"cleared" .. tostring(never_run)')
      t:wait('"clearednil"')
    end)

    it("abandons an unfinished chunk on Ctrl-C", function()
      t:line("open_table = {")
      t:wait("  >> ")
      t:keys("C-c")
      t:wait("  >> ^C")
      t:line('"abandoned" .. tostring(open_table)')
      t:wait('"abandonednil"')
    end)

    it("interrupts `while true do end` with Ctrl-C and keeps the variables", function()
      t:line("kept = 41")
      t:line("while true do end")
      t:wait("oar> while true do end")
      sleep(0.3) -- let the loop get compiled, if it ever were
      t:keys("C-c")
      t:wait("interrupted")
      t:line('"kept" .. (kept + 1)')
      t:wait('"kept42"')
    end)

    it("runs `a = 1; a` and prints the value", function()
      t:line("semi = 20; semi + 1, 'semi'")
      local screen = t:wait('"semi"')
      assert.truthy(screen:find('\n21%s+"semi"\n'), screen)
    end)

    it("reports a stray ) at once and takes the next line", function()
      t:line(")")
      t:wait("unexpected symbol near ')'")
      t:line('"stray" .. "ok"')
      t:wait('"strayok"')
    end)

    it("trims errors to the user's frames", function()
      t:line("layers.fc{input = 1, size = 2}")
      local screen = t:wait("fc: 'input' must be")
      assert.truthy(screen:find("stdin:%d+: fc: 'input' must be"), screen)
      assert.is_nil(screen:find("stack traceback", 1, true), screen)
      assert.is_nil(screen:find("repl.lua", 1, true), screen)
      t:line("function inner() error('deep') end; function outer() inner() end")
      t:line("outer()")
      screen = t:wait("in function 'outer'")
      assert.truthy(screen:find("stdin:%d+: deep"), screen)
      assert.truthy(screen:find("in function 'inner'", 1, true), screen)
      assert.is_nil(screen:find("xpcall", 1, true), screen)
    end)

    it("prints the time of a command that takes over a second", function()
      t:line('os.execute("sleep 1.2") and "slept" or "slept"')
      local screen = t:wait('"slept"')
      t:wait(" s)")
      assert.truthy(t:screen():find("%(1%.%d%d s%)"), screen)
    end)

    it("saves the history as it goes", function()
      local f = assert(io.open(t.history))
      local text = f:read("*a")
      f:close()
      assert.truthy(text:find("kept = 41\n", 1, true), text)
      assert.truthy(text:find("?oar.layers.fc\n", 1, true), text)
    end)

    it("quits on Ctrl-D", function()
      t:keys("C-d")
      t:wait("OAR_EXIT=0")
    end)
  end)

  describe("the oar command in a terminal without readline", function()
    local t

    setup(function()
      t = start({ env = "OAR_NO_READLINE=1 NO_COLOR=1" })
      t:wait("oar> ")
    end)

    teardown(function()
      if t then t:close() end
    end)

    it("clears the line on Ctrl-C and interrupts a loop, keeping variables", function()
      assert.is_nil(t:screen_escapes():find("\27[", 1, true), "colour despite NO_COLOR")
      t:type("never = 1 +")
      t:keys("C-c")
      t:wait("oar> ", 15, 2)
      t:line('"plain" .. tostring(never)')
      t:wait('"plainnil"')
      t:line("kept = 1")
      t:line("for i = 1, 1e15 do kept = kept + 0 end")
      t:wait("oar> for i")
      sleep(0.3)
      t:keys("C-c")
      t:wait("interrupted")
      t:line('"still" .. kept')
      t:wait('"still1"')
      t:keys("C-d")
      t:wait("OAR_EXIT=0")
    end)
  end)

  describe("a script under oar in a terminal", function()
    it("ends at Ctrl-C (a second one when a compiled loop ignores the first)", function()
      local t = start({ args = shq("-e") .. " " .. shq("print('looping') while true do end") })
      t:wait("looping")
      t:keys("C-c")
      sleep(0.3)
      t:keys("C-c")
      t:wait("OAR_EXIT=130")
      t:close()
      t = start({ args = shq("-e") .. " " .. shq("jit.off() print('looping') while true do end") })
      t:wait("looping")
      t:keys("C-c")
      local screen = t:wait("OAR_EXIT=130")
      assert.truthy(screen:find("oar: interrupted", 1, true), screen)
      t:close()
    end)
  end)

end)

describe("oar --help, --version and scripts", function()
  it("answers --help and --version", function()
    local out, code = sh("cd /tmp && env -u LUA_PATH -u LUA_CPATH " .. OAR .. " --help")
    assert.are.equal(0, code)
    assert.truthy(out:find("^usage: oar %[options%] %[script %[args%.%.%.%]%]"), out)
    assert.truthy(out:find("?name", 1, true), out)
    out, code = sh("cd /tmp && env -u LUA_PATH -u LUA_CPATH " .. OAR .. " --version")
    assert.are.equal(0, code)
    assert.truthy(out:find("^oar scm%-1 %(LuaJIT 2%."), out)
    out, code = sh(OAR .. " --nope")
    assert.are.equal(2, code)
    assert.truthy(out:find("unknown option '--nope'", 1, true), out)
  end)

  it("finds its modules from its own place, runs a script with arguments", function()
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write('local oar = require("oar")\n',
            'print(type(oar.layers.fc), arg[0] ~= nil, select("#", ...), arg[1], arg[2])\n')
    f:close()
    local out, code = sh("cd /tmp && env -u LUA_PATH -u LUA_CPATH " .. OAR .. " " .. script .. " one two")
    assert.are.equal(0, code, out)
    assert.are.equal("function\ttrue\t2\tone\ttwo\n", out)
    f = assert(io.open(script, "w"))
    f:write("local function fails() error('script failed') end\nfails()\n")
    f:close()
    out, code = sh("cd /tmp && " .. OAR .. " " .. script)
    os.remove(script)
    assert.are.equal(1, code)
    assert.truthy(out:find("^oar: [^\n]*:1: script failed\nstack traceback:\n"), out)
    assert.truthy(out:find("in function 'fails'", 1, true), out)
    assert.is_nil(out:find("repl.lua", 1, true), out)
  end)

  it("reads piped input without prompts and keeps going after errors", function()
    local out = sh("printf 'x = 2\\n)\\nx * 21\\n' | OAR_HISTORY= " .. OAR)
    assert.truthy(out:find("stdin:2: unexpected symbol near ')'", 1, true), out)
    assert.truthy(out:find("42\n", 1, true), out)
    assert.is_nil(out:find("oar>", 1, true), out)
    assert.is_nil(out:find("\27[", 1, true), out) -- no colour off a terminal
  end)
end)
