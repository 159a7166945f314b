-- oar.unique_name: Fluid's name generator. generate("fc") gives "fc_0", then
-- "fc_1"; layers derive "fc_0.w_0", "fc_0.b_0", "fc_0.tmp_0" from it.
local M = {}

local Generator = {}
Generator.__index = Generator

-- A generator with its own counters; `prefix` is put before every name.
function M.Generator(prefix)
  return setmetatable({ ids = {}, prefix = prefix or "" }, Generator)
end

function Generator:__call(key)
  local n = self.ids[key] or 0
  self.ids[key] = n + 1
  return self.prefix .. key .. "_" .. n
end

local current = M.Generator()

-- "key_N" with N counting per key in the current generator.
function M.generate(key)
  if type(key) ~= "string" then
    error("unique_name.generate: 'key' must be a string, got " .. type(key), 2)
  end
  return current(key)
end

-- Fluid keeps a second entry point for temporaries; the names are the same.
M.generate_with_ignorable_key = M.generate

-- Makes `gen` (a Generator, a prefix string, or nil for a fresh one) current
-- and returns the previous generator.
function M.switch(gen)
  local old = current
  if type(gen) == "string" or gen == nil then gen = M.Generator(gen) end
  current = gen
  return old
end

-- Runs fn() with a fresh generator (optionally with a prefix), restoring the
-- previous one afterwards, also when fn errors. guard(fn) or guard(prefix, fn).
function M.guard(prefix, fn)
  if type(prefix) == "function" then prefix, fn = nil, prefix end
  if type(fn) ~= "function" then
    error("unique_name.guard: expected a function, got " .. type(fn), 2)
  end
  local old = M.switch(prefix)
  local res = { pcall(fn) }
  current = old
  if not res[1] then error(res[2], 0) end
  return unpack(res, 2, table.maxn(res))
end

-- Forgets every counter of the current generator.
function M.reset()
  current = M.Generator(current.prefix)
end

return M
