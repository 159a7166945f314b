-- fuzz/corpus_hook.lua — records programs as they run, for the fuzz seeds.
-- Loaded before a script or the spec suite (busted --helper), it wraps
-- Executor:run so every program run is written to $OAR_CORPUS_OUT, one file
-- per distinct list of op types (the same model run again adds nothing).
local out = os.getenv("OAR_CORPUS_OUT")
if not out then return end
local exec = require("oar.executor")
local Executor = exec.ExecutorClass
local seen = {}
local raw_run = Executor.run

local function fnv(s)
  local h = 2166136261
  for i = 1, #s do h = bit.tobit(bit.bxor(h, s:byte(i)) * 16777619) end
  return bit.tohex(h)
end

Executor.run = function(self, program, opts)
  if type(program) == "table" and program.serialize then
    local ok, sig = pcall(function()
      local parts = {}
      for b = 0, program:num_blocks() - 1 do
        for _, op in ipairs(program:block(b):ops()) do parts[#parts + 1] = op.type end
        parts[#parts + 1] = "|"
      end
      return table.concat(parts, ",")
    end)
    if ok and not seen[sig] then
      seen[sig] = true
      local ok2, bytes = pcall(program.serialize, program)
      if ok2 and #bytes <= 65536 then
        local f = io.open(out .. "/" .. fnv(sig) .. ".pb", "wb")
        if f then f:write(bytes) f:close() end
      end
    end
  end
  return raw_run(self, program, opts)
end
