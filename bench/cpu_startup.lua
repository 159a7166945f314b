-- CPU-only start-up cost: require("oar"), one small fc program run on the
-- CPU; prints the process's resident set and whether any CUDA library is
-- mapped. Used for the figures in docs/DECISIONS.md (CUDA section):
--   OAR_LIBRARY=build/liboar.so luajit bench/cpu_startup.lua
package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
local oar = require("oar")
local main, startup = oar.Program(), oar.Program()
local loss
oar.program_guard(main, startup, function()
  local x = oar.layers.data{ name = "x", shape = { 4 } }
  local y = oar.layers.fc{ input = x, size = 3 }
  loss = oar.layers.mean{ x = y }
end)
local exe = oar.Executor(oar.CPUPlace())
exe:run(startup)
local out = exe:run(main, { feed = { x = oar.Tensor({ { 1, 2, 3, 4 } }, "float32") },
                            fetch_list = { loss } })
assert(#out == 1)
local rss
for line in io.lines("/proc/self/status") do
  rss = rss or line:match("^VmRSS:%s+(%d+)")
end
local cuda = {}
for line in io.lines("/proc/self/maps") do
  local lib = line:match("(lib[%w_]*cu[%w_]*%.so[%.%d]*)") or line:match("(liboar_cuda%.so)")
  if lib then cuda[lib] = true end
end
local names = {}
for k in pairs(cuda) do names[#names + 1] = k end
table.sort(names)
print(string.format("rss_kib=%s cuda_mapped=%s", rss, #names > 0 and table.concat(names, ",") or "none"))
