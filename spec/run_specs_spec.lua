-- tools/run_specs gives every spec file a time limit (issue 20): a file that
-- hangs is stopped with every process it started, counted as a failure and
-- reported with the limit, the test it hung in and the end of its output.
-- A skip counts only for a missing GPU, data set or peer client library.
-- The files it runs here are under spec/fixtures/time_limit/ and skips/.
local F = require("spec.helpers.files")
local J = require("spec.helpers.mpi_jobs")

-- runs tools/run_specs with `env` and `args` (without building); returns its
-- output, exit status and seconds
local function run_specs(env, args)
  local _, out, secs = J.run(env .. " OAR_NO_BUILD=1 tools/run_specs " .. args)
  local status = tonumber(out:match("::status=(%d+)%s*$"))
  return out:gsub("::status=%d+%s*$", ""), status, secs
end

-- whether process `pid` still runs (a zombie waiting for its parent does not)
local function running(pid)
  local f = io.open("/proc/" .. pid .. "/stat", "rb")
  if not f then return false end
  local stat = f:read("*a")
  f:close()
  return stat:match("^%d+ %b() (%a)") ~= "Z"
end

describe("tools/run_specs time limits", function()
  it("stops a file that hangs at its limit, with its processes, and names the test", function()
    local dir = F.tmpdir()
    assert(os.execute("mkdir '" .. dir .. "'") == 0)
    local limit = 2
    local out, status, secs = run_specs("OAR_SPEC_TIMEOUT=" .. limit .. " OAR_HANG_DIR='" .. dir .. "'",
      "spec/fixtures/time_limit/hangs.lua")
    local pids = {}
    for _, name in ipairs({ "escaped.pid", "shell.pid" }) do
      local f = io.open(dir .. "/" .. name, "rb")
      pids[name] = f and f:read("*l")
      if f then f:close() end
    end
    F.rmtree(dir)
    -- back within the limit and the time to start busted and stop it (the
    -- machine may be busy: a generous margin, far below the 120 s of the hang)
    assert(secs < limit + 10, ("run_specs took %.1f s with a limit of %d s:\n%s"):format(secs, limit, out))
    assert.equals(1, status, out)
    -- the file's line: failed, with the limit and the test it hung in
    local line = out:match("\n?(FAIL +fixtures/time_limit/hangs%.lua[^\n]*)")
    assert(line, "no FAIL line for the file:\n" .. out)
    assert.truthy(line:find("1 passed +1 failed", 1, false), line)
    assert.truthy(line:find("time limit of 2 s", 1, true), line)
    assert.truthy(line:find("in the test: a file that hangs waits on a child process forever", 1, true), line)
    -- the failure report: the same, and the end of the output
    assert.truthy(out:find("---- spec/fixtures/time_limit/hangs.lua: killed at its time limit of 2 s", 1, true), out)
    assert.truthy(out:find("| ok 1 - a file that hangs passes first", 1, true), out)
    assert.falsy(out:find("never reached", 1, true), out)
    assert.truthy(out:match("\n1 passed, 1 failed, 0 skipped%s*$"), out)
    -- nothing it started is left: neither the shell it waited on nor the
    -- process that had left its group
    for name, pid in pairs(pids) do
      assert.truthy(pid, name .. " was not written: the fixture did not reach its hang\n" .. out)
      assert.is_false(running(pid), name .. " (" .. pid .. ") still runs")
    end
  end)

  it("gives a file the longer limit its run_specs comment asks for", function()
    -- slow.lua sleeps 2 s and asks for 60 s: a limit of 1 s does not apply
    local out, status = run_specs("", "--timeout=1 spec/fixtures/time_limit/slow.lua")
    assert.equals(0, status, out)
    assert.truthy(out:find("ok +fixtures/time_limit/slow%.lua +1 passed +0 failed"), out)
  end)

  it("refuses a time limit that is not a number of seconds", function()
    local out, status = run_specs("", "--timeout=soon spec/fixtures/time_limit/slow.lua")
    assert.equals(2, status, out)
    assert.truthy(out:find("whole number of seconds", 1, true), out)
    local out2, status2 = run_specs("OAR_SPEC_TIMEOUT=-5", "spec/fixtures/time_limit/slow.lua")
    assert.equals(2, status2, out2)
  end)

  it("takes a skip for a missing GPU, data set or peer client library, and fails any other", function()
    local out, status = run_specs("", "spec/fixtures/skips/reasons.lua")
    assert.equals(1, status, out)
    assert.truthy(out:match("\n0 passed, 1 failed, 2 skipped%s*$"), out)
    assert.truthy(out:find("skipped for a reason other than a missing GPU, data set or peer client", 1, true), out)
    assert.truthy(out:find("later", 1, true), out)
  end)
end)
