-- oar.flags: runtime switches kept in C (check_nan_inf, num_threads, ...).
-- Names may carry Fluid's "FLAGS_" prefix.
local ffi = require("ffi")
local lib = require("oar.lib")
local C = lib.C

local raise = require("oar.framework").raise
local M = {}

local function flag_name(name, who)
  if type(name) ~= "string" then
    raise(who .. ": flag names must be strings, got " .. type(name))
  end
  return (name:gsub("^FLAGS_", ""))
end

-- set_flags{check_nan_inf=true, num_threads=2}
function M.set_flags(flags)
  if type(flags) ~= "table" then
    raise("set_flags: expected a table of flags, got " .. type(flags))
  end
  for name, value in pairs(flags) do
    local n = flag_name(name, "set_flags")
    local v
    if type(value) == "boolean" then v = value and 1 or 0
    elseif type(value) == "number" and value % 1 == 0 then v = value
    else
      raise(string.format("set_flags: flag '%s' must be a boolean or an integer, got %s",
        n, tostring(value)))
    end
    if C.oar_set_flag(n, ffi.new("int64_t", v)) ~= 0 then
      raise("set_flags: " .. lib.last_error())
    end
  end
end

-- get_flags{"check_nan_inf"} or get_flags("check_nan_inf") -> {name = number}
function M.get_flags(names)
  if type(names) == "string" then names = { names } end
  if type(names) ~= "table" then
    raise("get_flags: expected a flag name or a list of names, got " .. type(names))
  end
  local out = {}
  for _, name in ipairs(names) do
    out[name] = tonumber(C.oar_get_flag(flag_name(name, "get_flags")))
  end
  return out
end

-- The seed of the global random generator used by random ops with seed 0.
function M.seed(s)
  if s == nil then return tonumber(C.oar_random_seed()) end
  if type(s) ~= "number" or s < 0 or s % 1 ~= 0 then
    raise("seed: expected a non-negative integer, got " .. tostring(s))
  end
  C.oar_set_random_seed(ffi.new("uint64_t", s))
end

return M
