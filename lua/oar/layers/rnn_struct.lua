--- oar.layers.rnn_struct: the nested structures of Fluid's rnn.py
-- (utils.flatten, map_structure, pack_sequence_as) for Lua tables. A
-- structure is a Variable (a leaf) or a table of structures: its list part
-- in order, then its string keys in sorted order (so a table with named
-- fields, like BeamSearchDecoder's state, flattens the same way every
-- time). Used by oar.layers.rnn_api and oar.layers.rnn_decode; not merged
-- into oar.layers.
-- @module oar.layers.rnn_struct
local framework = require("oar.framework")

local is_variable, raise = framework.is_variable, framework.raise

local M = {}

-- the keys of a structure table: 1..#t, then the sorted string keys
local function keys_of(t)
  local ks = {}
  for i = 1, #t do ks[#ks + 1] = i end
  local named = {}
  for k in pairs(t) do
    if type(k) == "string" then named[#named + 1] = k
    elseif type(k) ~= "number" or k < 1 or k > #t or k % 1 ~= 0 then
      raise("rnn: a structure's keys are 1..n and names, got key " .. tostring(k))
    end
  end
  table.sort(named)
  for _, k in ipairs(named) do ks[#ks + 1] = k end
  return ks
end

--- Whether `x` is a leaf of a structure (a Variable).
-- @param x
-- @treturn bool
-- @usage if rnn_struct.is_leaf(s) then ... end
function M.is_leaf(x) return is_variable(x) end

local function flatten_into(s, out)
  if is_variable(s) then
    out[#out + 1] = s
  elseif type(s) == "table" then
    for _, k in ipairs(keys_of(s)) do flatten_into(s[k], out) end
  else
    raise("rnn: a structure holds Variables and tables of them, got " .. framework.describe(s))
  end
  return out
end

--- The leaves of a structure, in order.
-- @param s a Variable or a table of structures
-- @treturn {Variable,...}
-- @raise when a leaf is not a Variable
-- @usage local flat = rnn_struct.flatten({h, c})
function M.flatten(s) return flatten_into(s, {}) end

--- A structure like `s` whose leaves are `flat`, in order.
-- @param s the structure to follow
-- @tparam {Variable,...} flat as many leaves as `s` has
-- @return the new structure
-- @raise when the counts differ
-- @usage local states = rnn_struct.pack_as({h0, c0}, {h1, c1})
function M.pack_as(s, flat)
  local pos = 0
  local function go(x)
    if is_variable(x) then
      pos = pos + 1
      if flat[pos] == nil then raise("rnn: a structure has more leaves than the values given") end
      return flat[pos]
    end
    local t = {}
    for _, k in ipairs(keys_of(x)) do t[k] = go(x[k]) end
    return t
  end
  local r = go(s)
  if pos ~= #flat then raise(string.format("rnn: a structure has %d leaves, %d values given", pos, #flat)) end
  return r
end

--- Checks that two structures have the same shape of nesting.
-- @tparam string who the caller, for the error
-- @param a
-- @param b
-- @raise naming `who` when they differ
-- @usage rnn_struct.assert_same("rnn", states, new_states)
function M.assert_same(who, a, b)
  if is_variable(a) or is_variable(b) then
    if not (is_variable(a) and is_variable(b)) then
      raise(string.format("%s: structures differ: %s against %s", who, framework.describe(a), framework.describe(b)))
    end
    return
  end
  if type(a) ~= "table" or type(b) ~= "table" then
    raise(string.format("%s: structures differ: %s against %s", who, framework.describe(a), framework.describe(b)))
  end
  local ka, kb = keys_of(a), keys_of(b)
  if #ka ~= #kb then
    raise(string.format("%s: structures differ: %d entries against %d", who, #ka, #kb))
  end
  for i, k in ipairs(ka) do
    if kb[i] ~= k then raise(string.format("%s: structures differ at key %s", who, tostring(k))) end
    M.assert_same(who, a[k], b[k])
  end
end

--- `fn` applied leaf by leaf to parallel structures (the first one's nesting).
-- @tparam function fn called with one leaf of each structure
-- @param ... structures of the same nesting
-- @return a structure of fn's results
-- @usage local next = rnn_struct.map(function(s, n) return n end, states, new_states)
function M.map(fn, ...)
  local structs = { ... }
  local n = select("#", ...)
  local flats = {}
  for i = 1, n do flats[i] = M.flatten(structs[i]) end
  for i = 2, n do
    if #flats[i] ~= #flats[1] then
      raise(string.format("rnn: structures differ: %d leaves against %d", #flats[1], #flats[i]))
    end
  end
  local out = {}
  for j = 1, #flats[1] do
    local row = {}
    for i = 1, n do row[i] = flats[i][j] end
    out[j] = fn(unpack(row, 1, n))
  end
  return M.pack_as(structs[1], out)
end

return M
