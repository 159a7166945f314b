--- Fluid's DataFeeder: from a minibatch of Lua samples to a feed table.
--
-- A minibatch is a list of samples, each a list of fields in `feed_list`
-- order; `feeder:feed(minibatch)` gives the table `{name = Tensor}` that
-- `exe:run` takes as `feed`.
--
-- A field may be a number, a boolean, a nested table of them (read in
-- row-major order), or an oar Tensor. For `lod_level` 0 the slot's shape has
-- -1 as its first (batch) dimension and each sample holds `prod(shape[2..])`
-- values (the tensor is `[batch, shape[2..]]`), or has no -1 at all and the
-- whole minibatch holds `prod(shape)` values. For `lod_level` L > 0 a field
-- is a list of sequences nested L deep whose items hold `prod(shape[2..])`
-- values each; the tensor is `[total items, shape[2..]]` with the LoD of the
-- nesting (Fluid's rule).
--
-- `oar.DataFeeder` is this module; calling it makes a feeder.
-- @module oar.data_feeder
-- @usage
-- local feeder = oar.DataFeeder{feed_list = {img, label}, place = oar.CPUPlace()}
-- local batch = {{pixels1, 3}, {pixels2, 7}}   -- two samples {image, label}
-- exe:run(prog, {feed = feeder:feed(batch), fetch_list = {loss}})
local ffi = require("ffi")
local argcheck = require("oar.argcheck")

local M = {}

local DataFeeder = {}
DataFeeder.__index = DataFeeder
M.DataFeeder = DataFeeder

local DTYPES = { float32 = "float", float64 = "double", int32 = "int32_t", int64 = "int64_t",
                 int16 = "int16_t", int8 = "int8_t", uint8 = "uint8_t", bool = "bool",
                 float16 = "uint16_t" }

local function dtype_name(d)
  if type(d) == "string" and DTYPES[d] then return d end
  local ok, dtypes = pcall(require, "oar.dtypes")
  if ok then
    local n = dtypes.name(d)
    if n then return n end
  end
  return nil
end

local function shape_str(s)
  local parts = {}
  for i, d in ipairs(s) do parts[i] = tostring(d) end
  return "{" .. table.concat(parts, ", ") .. "}"
end

-- A slot's description from one feed_list entry.
local function make_slot(entry, i, program)
  local name, shape, dtype, lod_level
  if type(entry) == "string" then
    local prog = program
    if prog == nil then
      local ok, fw = pcall(require, "oar.framework")
      if ok and type(fw) == "table" and fw.default_main_program then
        prog = fw.default_main_program()
      end
    end
    if prog == nil then
      error(string.format("DataFeeder: feed_list[%d] is the name '%s' but there is no program to " ..
                          "look it up in; pass program= or a Variable or {name=, shape=, dtype=}",
                          i, entry), 4)
    end
    local ok, v = pcall(function() return prog:global_block():var(entry) end)
    if not ok or v == nil then
      error(string.format("DataFeeder: feed_list[%d]: no variable named '%s' in the program's global block",
                          i, entry), 4)
    end
    entry = v
  end
  if type(entry) == "table" and getmetatable(entry) == nil then
    argcheck.keys(string.format("oar.DataFeeder: feed_list[%d]", i), entry,
      { "name", "shape", "dtype", "lod_level" })
  end
  if type(entry) ~= "table" then
    error(string.format("DataFeeder: feed_list[%d] must be a Variable, a name or {name=, shape=, dtype=}, got %s",
                        i, type(entry)), 4)
  end
  name, shape, dtype, lod_level = entry.name, entry.shape, entry.dtype, entry.lod_level
  if type(name) ~= "string" or name == "" then
    error(string.format("DataFeeder: feed_list[%d] has no name", i), 4)
  end
  if type(shape) ~= "table" or #shape == 0 then
    error(string.format("DataFeeder: slot '%s' needs a shape (a list like {-1, 784}), got %s",
                        name, tostring(shape)), 4)
  end
  local dims = {}
  for k, d in ipairs(shape) do
    if type(d) ~= "number" or d % 1 ~= 0 or d < -1 then
      error(string.format("DataFeeder: slot '%s': shape %s has a bad size at position %d",
                          name, shape_str(shape), k), 4)
    end
    dims[k] = d
  end
  local dt = dtype_name(dtype or "float32")
  if not dt then
    error(string.format("DataFeeder: slot '%s': unknown dtype %s", name, tostring(dtype)), 4)
  end
  lod_level = lod_level or 0
  if type(lod_level) ~= "number" or lod_level < 0 or lod_level % 1 ~= 0 then
    error(string.format("DataFeeder: slot '%s': lod_level must be a non-negative integer, got %s",
                        name, tostring(lod_level)), 4)
  end
  -- values per sample (lod 0, batch dim first) or per item (lod > 0)
  local per, batched = 1, dims[1] == -1
  for k = 2, #dims do
    if dims[k] == -1 then
      error(string.format("DataFeeder: slot '%s': shape %s has -1 outside the first (batch) " ..
                          "dimension; the feeder cannot tell its size", name, shape_str(dims)), 4)
    end
    per = per * dims[k]
  end
  if not batched then per = per * dims[1] end
  if lod_level > 0 and not batched then
    error(string.format("DataFeeder: slot '%s': a sequence slot (lod_level %d) needs -1 as its " ..
                        "first dimension, got shape %s", name, lod_level, shape_str(dims)), 4)
  end
  return { name = name, shape = dims, dtype = dt, ctype = DTYPES[dt], lod_level = lod_level,
           per = per, batched = batched, index = i }
end

-- a keyword table has string keys; a feed list is a plain list
local function is_keyword_table(a)
  if type(a) ~= "table" or getmetatable(a) ~= nil then return false end
  for k in pairs(a) do
    if type(k) == "string" then return true end
  end
  return false
end

--- Makes a feeder: `DataFeeder{feed_list=, place=, program=}` or, as in
-- Fluid, `DataFeeder(feed_list, place, program)`.
-- @tparam table feed_list the slots, in sample field order: Variables
-- (`layers.data`), tables `{name=, shape=, dtype="float32", lod_level=0}`,
-- or names of variables in `program`'s global block
-- @param[opt] place accepted for Fluid's sake; tensors are made on the CPU
-- and the executor moves them
-- @param[opt] program where names are looked up (default: the default main program)
-- @treturn DataFeeder
-- @raise on an unknown keyword (`feed_lst`), an empty feed list, a slot
-- without a usable shape or dtype, a slot given twice
-- @usage local feeder = oar.DataFeeder{feed_list = {"x", "y"}}
function M.new(feed_list, place, program)
  if is_keyword_table(feed_list) then
    local a = feed_list
    argcheck.keys("oar.DataFeeder", a, { "feed_list", "place", "program" })
    feed_list, place, program = a.feed_list, a.place, a.program
  end
  if type(feed_list) ~= "table" or #feed_list == 0 then
    error("DataFeeder: feed_list must be a non-empty list of Variables, names or {name=, shape=, dtype=}", 2)
  end
  local self = setmetatable({ slots = {}, place = place, program = program }, DataFeeder)
  local seen = {}
  for i, entry in ipairs(feed_list) do
    local slot = make_slot(entry, i, program)
    if seen[slot.name] then
      error(string.format("DataFeeder: slot '%s' appears twice in feed_list", slot.name), 2)
    end
    seen[slot.name] = true
    self.slots[i] = slot
  end
  self.feed_names = {}
  for i, s in ipairs(self.slots) do self.feed_names[i] = s.name end
  return self
end

setmetatable(M, { __call = function(_, ...) return M.new(...) end })

-- ---- filling -------------------------------------------------------------

local half_of
local function converter(slot)
  local dt = slot.dtype
  if dt == "bool" then
    return function(v, where)
      if type(v) == "boolean" then return v end
      if type(v) == "number" then return v ~= 0 end
      error(string.format("DataFeeder: slot '%s', %s: expected a boolean or number, got %s",
                          slot.name, where(), type(v)), 0)
    end
  end
  local integer = dt ~= "float32" and dt ~= "float64" and dt ~= "float16"
  if dt == "float16" and not half_of then half_of = require("oar.dtypes").number_to_half end
  return function(v, where)
    if type(v) == "boolean" then v = v and 1 or 0 end
    if type(v) ~= "number" then
      error(string.format("DataFeeder: slot '%s', %s: expected a number, got %s",
                          slot.name, where(), type(v)), 0)
    end
    if integer and v % 1 ~= 0 then
      error(string.format("DataFeeder: slot '%s', %s: %s is not an integer (dtype %s)",
                          slot.name, where(), tostring(v), dt), 0)
    end
    if dt == "float16" then return half_of(v) end
    return v
  end
end

local tensor_mod  -- oar.tensor, loaded on first need (it loads liboar)
local function is_tensor(v)
  if type(v) ~= "table" or getmetatable(v) == nil then return false end
  if tensor_mod == nil then
    local ok, mod = pcall(require, "oar.tensor")
    tensor_mod = ok and mod or false
  end
  return tensor_mod and tensor_mod.is_tensor(v) or false
end

-- Writes the values of `v` (number, nested table, Tensor) into buf from
-- position pos (0-based), at most `limit` values in all; returns the new
-- position or limit + 1 when v holds more than fits.
local function flatten(v, buf, pos, limit, conv, where)
  if type(v) == "table" then
    if is_tensor(v) then
      local n = v:numel()
      if pos + n > limit then return limit + 1 end
      local p = v:data()
      local read = tonumber
      if v:dtype() == "bool" then
        read = function(x) return x end
      elseif v:dtype() == "float16" then
        read = require("oar.dtypes").half_to_number
      end
      for k = 0, n - 1 do buf[pos + k] = conv(read(p[k]), where) end
      return pos + n
    end
    for k = 1, #v do
      pos = flatten(v[k], buf, pos, limit, conv, where)
      if pos > limit then return pos end
    end
    return pos
  end
  if pos >= limit then return limit + 1 end
  buf[pos] = conv(v, where)
  return pos + 1
end

local function count_values(v)
  if type(v) == "table" then
    if is_tensor(v) then return v:numel() end
    local n = 0
    for k = 1, #v do n = n + count_values(v[k]) end
    return n
  end
  return 1
end

local function new_tensor(shape, dtype)
  local tensor = require("oar.tensor")
  return tensor{ shape = shape, dtype = dtype }
end

-- A dense slot (lod_level 0).
local function fill_dense(slot, minibatch, conv)
  local b = #minibatch
  local out_shape, total
  if slot.batched then
    out_shape = { b }
    for k = 2, #slot.shape do out_shape[k] = slot.shape[k] end
    total = b * slot.per
  else
    out_shape = slot.shape
    total = slot.per
  end
  local t = new_tensor(out_shape, slot.dtype)
  local buf = total > 0 and ffi.cast(slot.ctype .. " *", t:data()) or nil
  local pos = 0
  for i = 1, b do
    local field = minibatch[i][slot.index]
    local function where() return "sample " .. i end
    local start = pos
    local limit = slot.batched and (start + slot.per) or total
    pos = flatten(field, buf, pos, limit, conv, where)
    if slot.batched and pos ~= start + slot.per then
      error(string.format("DataFeeder: slot '%s' (shape %s): sample %d holds %d values, expected %d",
                          slot.name, shape_str(slot.shape), i, count_values(field), slot.per), 0)
    end
    if not slot.batched and pos > total then
      error(string.format("DataFeeder: slot '%s' (fixed shape %s, no batch dimension): the minibatch " ..
                          "holds more than %d values", slot.name, shape_str(slot.shape), total), 0)
    end
  end
  if pos ~= total then
    error(string.format("DataFeeder: slot '%s' (fixed shape %s, no batch dimension): the minibatch " ..
                        "holds %d values, expected %d", slot.name, shape_str(slot.shape), pos, total), 0)
  end
  return t
end

-- A sequence slot (lod_level > 0): walk the nesting for the LoD, then fill.
local function fill_lod(slot, minibatch, conv)
  local levels = {}
  for l = 1, slot.lod_level do levels[l] = { 0 } end
  local items = {}
  local function walk(v, level, i)
    if level > slot.lod_level then
      items[#items + 1] = v
      return
    end
    if type(v) ~= "table" or is_tensor(v) then
      error(string.format("DataFeeder: slot '%s' (lod_level %d), sample %d: expected a list of " ..
                          "sequences at nesting level %d, got %s", slot.name, slot.lod_level, i,
                          level, type(v)), 0)
    end
    local off = levels[level]
    off[#off + 1] = off[#off] + #v
    for k = 1, #v do walk(v[k], level + 1, i) end
  end
  local owner = {}
  for i = 1, #minibatch do
    local before = #items
    walk(minibatch[i][slot.index], 1, i)
    for k = before + 1, #items do owner[k] = i end
  end
  local shape = { #items }
  for k = 2, #slot.shape do shape[k] = slot.shape[k] end
  local t = new_tensor(shape, slot.dtype)
  local total = #items * slot.per
  local buf = total > 0 and ffi.cast(slot.ctype .. " *", t:data()) or nil
  local pos = 0
  for k, item in ipairs(items) do
    local function where() return "sample " .. owner[k] end
    local start = pos
    pos = flatten(item, buf, pos, start + slot.per, conv, where)
    if pos ~= start + slot.per then
      error(string.format("DataFeeder: slot '%s' (shape %s), sample %d: a sequence item holds %d " ..
                          "values, expected %d", slot.name, shape_str(slot.shape), owner[k],
                          count_values(item), slot.per), 0)
    end
  end
  t:set_lod(levels)
  return t
end

--- Methods of a DataFeeder.
-- @type DataFeeder

--- The feed table for a minibatch.
-- @tparam table minibatch a non-empty list of samples, each a list of
-- fields in `feed_list` order
-- @treturn table `{name = Tensor}`, one Tensor per slot
-- @raise naming the slot and the sample when a field has the wrong number
-- of values or a value of the wrong type
-- @usage
-- local feeder = oar.DataFeeder{feed_list = {{name = "x", shape = {-1, 2}}}}
-- local feed = feeder:feed({{{1, 2}}, {{3, 4}}})   -- feed.x is float32 [2, 2]
function DataFeeder:feed(minibatch)
  if getmetatable(self) ~= DataFeeder then
    error("DataFeeder:feed: call it with ':' on a DataFeeder", 2)
  end
  if type(minibatch) ~= "table" or #minibatch == 0 then
    error("DataFeeder:feed: the minibatch must be a non-empty list of samples", 2)
  end
  local nslots = #self.slots
  for i, sample in ipairs(minibatch) do
    if type(sample) ~= "table" then
      error(string.format("DataFeeder:feed: sample %d must be a list of %d fields, got %s",
                          i, nslots, type(sample)), 2)
    end
    if #sample ~= nslots then
      error(string.format("DataFeeder:feed: sample %d has %d fields but feed_list has %d (%s)",
                          i, #sample, nslots, table.concat(self.feed_names, ", ")), 2)
    end
  end
  local out = {}
  for _, slot in ipairs(self.slots) do
    local conv = converter(slot)
    local ok, t = pcall(slot.lod_level == 0 and fill_dense or fill_lod, slot, minibatch, conv)
    if not ok then error(t, 2) end
    out[slot.name] = t
  end
  return out
end

--- A reader creator of feed tables, from a reader creator of minibatches
-- (such as `oar.reader.batch(...)`).
-- @tparam function reader a reader creator of minibatches
-- @treturn function a reader creator of feed tables
-- @usage
-- for feed in feeder:decorate_reader(oar.reader.batch(train, 64))() do
--   exe:run(main, {feed = feed, fetch_list = {loss}})
-- end
function DataFeeder:decorate_reader(reader)
  if getmetatable(self) ~= DataFeeder then
    error("DataFeeder:decorate_reader: call it with ':' on a DataFeeder", 2)
  end
  if type(reader) ~= "function" then
    error("DataFeeder:decorate_reader: reader must be a reader creator (a function), got " ..
          type(reader), 2)
  end
  return function()
    local it = reader()
    return function()
      local batch = it()
      if batch == nil then return nil end
      return self:feed(batch)
    end
  end
end

return M
