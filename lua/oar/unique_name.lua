--- Fluid's name generator.
--
-- `generate("fc")` gives `"fc_0"`, then `"fc_1"`; layers derive the names of
-- their parameters and temporaries from it (`fc_0.w_0`, `fc_0.b_0`,
-- `fc_0.tmp_0`). Building the same network twice in one process therefore
-- gives different names, unless the second build runs inside `guard`.
-- @module oar.unique_name
-- @usage
-- local unique_name = oar.unique_name
-- print(unique_name.generate("fc"))   --> fc_0 (in a fresh process)
local M = {}

local Generator = {}
Generator.__index = Generator

--- A generator with its own counters. Calling it, `gen(key)`, gives the next name.
-- @tparam[opt=""] string prefix put before every name
-- @return a generator
-- @usage
-- local gen = oar.unique_name.Generator("tower1/")
-- print(gen("fc"))   --> tower1/fc_0
function M.Generator(prefix)
  return setmetatable({ ids = {}, prefix = prefix or "" }, Generator)
end

function Generator:__call(key)
  local n = self.ids[key] or 0
  self.ids[key] = n + 1
  return self.prefix .. key .. "_" .. n
end

local current = M.Generator()

--- The next name for `key` in the current generator: `key_N`, with N
-- counting from 0 per key.
-- @tparam string key
-- @treturn string
-- @usage local name = oar.unique_name.generate("my_layer")
function M.generate(key)
  if type(key) ~= "string" then
    error("unique_name.generate: 'key' must be a string, got " .. type(key), 2)
  end
  return current(key)
end

--- The same as `generate` (Fluid keeps a second entry point for temporaries).
-- @tparam string key
-- @treturn string
-- @usage local name = oar.unique_name.generate_with_ignorable_key("tmp")
function M.generate_with_ignorable_key(key) return M.generate(key) end

--- Makes a generator current.
-- @param[opt] gen a Generator, a prefix string, or nil for a fresh generator
-- @return the previous generator (give it back to `switch` to restore it)
-- @usage
-- local old = oar.unique_name.switch()
-- -- ... build ...
-- oar.unique_name.switch(old)
function M.switch(gen)
  local old = current
  if type(gen) == "string" or gen == nil then gen = M.Generator(gen) end
  current = gen
  return old
end

--- Runs `fn()` with a fresh generator, restoring the previous one
-- afterwards, also when `fn` raises: `guard(fn)` or `guard(prefix, fn)`.
-- Two networks built each in its own guard get the same names.
-- @tparam[opt] string prefix put before every name
-- @tparam function fn
-- @return what `fn` returns
-- @usage
-- oar.unique_name.guard(function()
--   local h = oar.layers.fc{input = x, size = 4}   -- its weight is fc_0.w_0
-- end)
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

--- Forgets every counter of the current generator.
-- @usage oar.unique_name.reset()
function M.reset()
  current = M.Generator(current.prefix)
end

return M
