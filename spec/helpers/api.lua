-- spec/helpers/api.lua — small pieces shared by the specs of the Lua API:
-- building a main/startup pair under fresh names, running it, and specs
-- that wait for ops not registered yet.
--
-- (Each spec keeps its own errmsg: an error raised at level 2 names the
-- frame that called the failing function, and specs assert it is theirs.)
--
--   local A = require("spec.helpers.api")
--   local main, startup, out = A.build(function() return layers.relu(x) end)
--   local res = A.run(main, startup, { x = t }, { out })
local oar = require("oar")
local lib = require("oar.lib")
-- busted's globals are not visible in modules: take them from its module
local busted = require("busted")

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

-- an `it` that is pending until every op it needs is registered in C
-- An `it` over programs that use `ops`: every op is registered, so a missing
-- one is a failure naming it, never a skipped spec.
function M.it_ops(ops, name, fn)
  busted.it(name, function()
    for _, op in ipairs(ops) do
      assert(lib.C.oar_op_is_registered(op), "op '" .. op .. "' is not registered")
    end
    fn()
  end)
end

return M
