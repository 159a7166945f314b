-- Crash safety of saves: a child process saves a large combined file over
-- and over (each version holds one value everywhere) and is killed with
-- SIGKILL after various delays. Afterwards the file must load as one
-- complete version -- the last one finished, or the one being renamed into
-- place -- and neither a leftover temp file nor the kill may corrupt a later
-- load or save. The child is a script this spec writes into a directory made
-- by os.tmpname(); no other path reaches the shell.
local ffi = require("ffi")
local oar = require("oar")

local function sh_quote(s)
  assert(not s:find("'", 1, true))
  return "'" .. s .. "'"
end

local function cwd()
  local p = io.popen("pwd")
  local d = p:read("*l")
  p:close()
  return d
end

local function read_lines(path)
  local out = {}
  local f = io.open(path, "r")
  if not f then return out end
  for l in f:lines() do out[#out + 1] = l end
  f:close()
  return out
end

local function list_dir(d)
  local p = io.popen("ls -A " .. sh_quote(d))
  local out = {}
  for l in p:lines() do out[#out + 1] = l end
  p:close()
  table.sort(out)
  return out
end

local NVARS, NUMEL = 4, 1000000    -- 16 MB per version

-- the program both processes use: NVARS persistable float32 [NUMEL] vars
local CHILD = [[
package.path = ROOT .. "/lua/?.lua;" .. ROOT .. "/lua/?/init.lua;" .. package.path
local ffi = require("ffi")
local oar = require("oar")
local prog = oar.Program()
local names = {}
for i = 1, NVARS do
  names[i] = "v" .. i
  prog:global_block():create_var{ name = names[i], shape = { NUMEL }, persistable = true }
end
local exe, scope = oar.Executor(), oar.Scope()
local log = assert(io.open(DIR .. "/log", "w"))
for version = FIRST, 1000000 do
  for i = 1, NVARS do
    local t = oar.Tensor{ shape = { NUMEL }, dtype = "float32" }
    local p = t:data()
    for k = 0, NUMEL - 1 do p[k] = version end
    scope:var(names[i]):set_tensor(t)
  end
  log:write("start ", version, "\n") log:flush()
  oar.io.save_vars(exe, DIR .. "/ckpt", prog, names, "big", { scope = scope })
  log:write("done ", version, "\n") log:flush()
end
]]

local function program()
  local prog = oar.Program()
  local names = {}
  for i = 1, NVARS do
    names[i] = "v" .. i
    prog:global_block():create_var{ name = names[i], shape = { NUMEL }, persistable = true }
  end
  return prog, names
end

-- the single value every element of every var holds, or an error
local function version_of(dir)
  local prog, names = program()
  local scope = oar.Scope()
  oar.io.load_vars(oar.Executor(), dir .. "/ckpt", prog, names, "big", { scope = scope })
  local v
  for _, n in ipairs(names) do
    local t = scope:find_var(n):get_tensor()
    assert.equal(NUMEL, t:numel())
    local p = t:data()
    v = v or p[0]
    for k = 0, NUMEL - 1 do
      if p[k] ~= v then error(string.format("var %s mixes versions: %g at 0, %g at %d", n, v, p[k], k)) end
    end
  end
  return v
end

describe("atomic saves under kill -9", function()
  local root = cwd()
  local dir

  before_each(function()
    dir = os.tmpname()
    os.remove(dir)
    assert.is_true(os.execute("mkdir " .. sh_quote(dir)) == 0)
  end)
  after_each(function() os.execute("rm -rf " .. sh_quote(dir)) end)

  it("leaves the complete old or the complete new file, whenever the kill lands", function()
    local script = string.format("local ROOT, DIR, NVARS, NUMEL, FIRST = %q, %q, %d, %d, %%d\n", root, dir, NVARS, NUMEL)
      .. CHILD
    -- version 0 (zeros) is on disk before the first child starts
    local prog0, names0 = program()
    local scope0 = oar.Scope()
    for i = 1, NVARS do scope0:var(names0[i]):set_tensor(oar.Tensor{ shape = { NUMEL }, dtype = "float32" }) end
    oar.io.save_vars(oar.Executor(), dir .. "/ckpt", prog0, names0, "big", { scope = scope0 })
    assert.equal(0, version_of(dir))
    local mid_save, after_rename = 0, 0
    local first, on_disk = 1, 0
    for _, delay in ipairs({ 0.15, 0.3, 0.45, 0.7, 1.0, 1.4 }) do
      local f = assert(io.open(dir .. "/child.lua", "w"))
      f:write(script:format(first))
      f:close()
      os.remove(dir .. "/log")
      -- exec: the background process is luajit itself, so $! is the pid to kill
      local cmd = string.format("( exec luajit %s > %s 2>&1 ) & echo $! > %s",
        sh_quote(dir .. "/child.lua"), sh_quote(dir .. "/child.out"), sh_quote(dir .. "/pid"))
      assert.is_true(os.execute(cmd) == 0)
      local pid = tonumber(read_lines(dir .. "/pid")[1])
      assert.is_truthy(pid)
      os.execute(string.format("sleep %.2f", delay))
      assert.is_true(os.execute("kill -9 " .. pid) == 0, "the child ended on its own: " ..
        table.concat(read_lines(dir .. "/child.out"), "\n"))
      os.execute(string.format("while kill -0 %d 2>/dev/null; do sleep 0.01; done", pid))

      local log = read_lines(dir .. "/log")
      -- before this child finished a save, the file holds what the last check found
      local last_done, last_started = on_disk, first - 1
      for _, l in ipairs(log) do
        local what, n = l:match("^(%a+) (%d+)$")
        if what == "start" then last_started = tonumber(n) end
        if what == "done" then last_done = tonumber(n) end
      end
      if last_started >= first then
        local v = version_of(dir)
        -- killed during a save: the old version, or the new one if the rename was done
        assert.is_true(v == last_done or v == last_started,
          string.format("delay %.2f: loaded version %g, last done %d, last started %d", delay, v, last_done, last_started))
        if last_started > last_done then
          mid_save = mid_save + 1
          if v == last_started then after_rename = after_rename + 1 end
        end
        first = last_started + 1
        on_disk = v
      end
    end
    -- the kills did land inside saves (the check above is not vacuous)
    assert.is_true(mid_save >= 2, "only " .. mid_save .. " kills landed inside a save")
    print(string.format("\natomic_save_spec: %d kills inside a save (%d after the rename)", mid_save, after_rename))

    -- leftover temp files (if any) do not disturb a later save and load
    local prog, names = program()
    local scope = oar.Scope()
    for i = 1, NVARS do
      local t = oar.Tensor{ shape = { NUMEL }, dtype = "float32" }
      ffi.fill(t:data(), 4 * NUMEL, 0)
      local p = t:data()
      for k = 0, NUMEL - 1, 997 do p[k] = -1 end
      scope:var(names[i]):set_tensor(t)
    end
    oar.io.save_vars(oar.Executor(), dir .. "/ckpt", prog, names, "big", { scope = scope })
    local s2 = oar.Scope()
    oar.io.load_vars(oar.Executor(), dir .. "/ckpt", prog, names, "big", { scope = s2 })
    local got = s2:find_var("v3"):get_tensor():data()
    assert.equal(-1, got[0])
    assert.equal(0, got[1])
    assert.equal(-1, got[997])
    -- only the file itself, its checksum, and possibly temp files named after them
    for _, name in ipairs(list_dir(dir .. "/ckpt")) do
      assert.is_true(name == "big" or name == "big.crc" or name:match("^%.big%.tmp%.") ~= nil or
        name:match("^%.big%.crc%.tmp%.") ~= nil, "unexpected file " .. name)
    end
  end)
end)
