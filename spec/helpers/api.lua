-- spec/helpers/api.lua — small pieces shared by the specs of the Lua API:
-- building a main/startup pair under fresh names and running it.
--
-- (Each spec keeps its own errmsg: an error raised at level 2 names the
-- frame that called the failing function, and specs assert it is theirs.)
--
--   local A = require("spec.helpers.api")
--   local main, startup, out = A.build(function() return layers.relu(x) end)
--   local res = A.run(main, startup, { x = t }, { out })
local oar = require("oar")
local assert = require("luassert")
local M = {}

-- main, startup and whatever fn(main, startup) returned, fn having run under
-- program_guard(main, startup) with unique names counted afresh
function M.build(fn)
  local main, startup = oar.Program(), oar.Program()
  local res
  oar.unique_name.guard(function()
    oar.program_guard(main, startup, function() res = { fn(main, startup) } end)
  end)
  return main, startup, unpack(res, 1, table.maxn(res))
end

-- runs startup then main in a new scope on the CPU: the fetched values, the
-- scope and the executor
function M.run(main, startup, feed, fetch)
  local exe = oar.Executor(oar.CPUPlace())
  local scope = oar.Scope()
  exe:run(startup, { scope = scope })
  return exe:run(main, { feed = feed, fetch_list = fetch, scope = scope }), scope, exe
end

-- ---- shared by the api_contract_*_spec files ---------------------------------
function M.errmsg(fn, ...)
  local ok, err = pcall(fn, ...)
  assert.is_false(ok, "expected an error")
  return tostring(err)
end

-- values of `fetch` after building with fn (which returns the fetch list)
function M.eval(fn, feed)
  local oar = require("oar")
  local main, startup, fetch = M.build(function() return fn() end)
  if type(fetch) ~= "table" or oar.is_variable(fetch) then fetch = { fetch } end
  local out = M.run(main, startup, feed or {}, fetch)
  return out, main
end

function M.near(expect, got, tol, path)
  tol = tol or 1e-5
  path = path or "value"
  if type(expect) == "table" then
    assert.are.equal("table", type(got), path .. " is not a table")
    assert.are.equal(#expect, #got, "length at " .. path)
    for i = 1, #expect do M.near(expect[i], got[i], tol, path .. "[" .. i .. "]") end
  else
    assert.is_true(type(got) == "number" and math.abs(expect - got) <= tol * math.max(1, math.abs(expect)),
      string.format("%s: expected %.7g, got %s", path, expect, tostring(got)))
  end
end

function M.op_types(block)
  local t = {}
  for _, op in ipairs(block:ops()) do t[#t + 1] = op.type end
  return t
end

function M.contains(list, x)
  for _, y in ipairs(list) do if y == x then return true end end
  return false
end

-- a ParamAttr whose initializer is the constant v
function M.const_attr(v)
  local oar = require("oar")
  return oar.ParamAttr{ initializer = oar.initializer.Constant{ value = v } }
end

M.X23 = { { 1, 2, 3 }, { 4, 5, 6 } }

return M
