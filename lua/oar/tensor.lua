-- oar.tensor: dense tensors (Fluid's LoDTensor) held by C, refcounted, freed
-- by the garbage collector. Values move between Lua and C by copying.
local ffi = require("ffi")
local lib = require("oar.lib")
local raise = require("oar.framework").raise
local dtypes = require("oar.dtypes")
local C = lib.C

local M = {}

local Tensor = {}
Tensor.__index = Tensor
M.Tensor = Tensor

local function is_tensor(x) return getmetatable(x) == Tensor end
M.is_tensor = is_tensor

-- LuaJIT's collector sees a Tensor as a small table and cdata pointer, not
-- the megabytes of data C holds for it, so a loop that makes a batch tensor
-- per step would pile them up between collections. Every wrapped tensor's
-- data counts here, and each GC_BYTES of it run a full collection.
local GC_BYTES = 64 * 1024 * 1024
local unseen_bytes = 0

local function account(ptr)
  local dt = C.oar_tensor_dtype(ptr)
  if dt < 0 then return end
  unseen_bytes = unseen_bytes + tonumber(C.oar_tensor_numel(ptr)) * tonumber(C.oar_dtype_size(dt))
  if unseen_bytes >= GC_BYTES then
    unseen_bytes = 0
    collectgarbage()
  end
end

-- Wraps an owned oar_tensor_t* (one reference, handed to the GC).
function M.wrap(ptr)
  if type(ptr) ~= "cdata" or not ffi.istype("oar_tensor_t *", ptr) or ptr == nil then
    raise("tensor.wrap: expected a non-NULL oar_tensor_t* cdata, got " .. tostring(ptr))
  end
  account(ptr)
  return setmetatable({ handle = ffi.gc(ptr, C.oar_tensor_free) }, Tensor)
end

local function dims_array(shape, who)
  if type(shape) ~= "table" then
    raise(who .. ": 'shape' must be a list of non-negative integers, got " .. type(shape))
  end
  local n = #shape
  local dims = ffi.new("int64_t[?]", n > 0 and n or 1)
  for i = 1, n do
    local d = shape[i]
    if type(d) ~= "number" or d < 0 or d % 1 ~= 0 then
      raise(string.format("%s: 'shape' must be non-negative integers, got %s at position %d",
        who, tostring(d), i))
    end
    dims[i - 1] = d
  end
  return dims, n
end

-- ---- element conversion ------------------------------------------------
-- the integers each integer dtype holds: [low, high)
local int_range = {
  uint8 = { 0, 2 ^ 8, "0..255" }, int8 = { -2 ^ 7, 2 ^ 7, "-128..127" }, int16 = { -2 ^ 15, 2 ^ 15, "-32768..32767" },
  int32 = { -2 ^ 31, 2 ^ 31, "-2^31..2^31-1" }, int64 = { -2 ^ 63, 2 ^ 63, "-2^63..2^63-1" },
}

local function to_c_value(dtype, v, who)
  if dtype == "bool" then
    if type(v) == "boolean" then return v end
    if type(v) == "number" then return v ~= 0 end
  elseif type(v) == "number" then
    if dtype == "float16" then return dtypes.number_to_half(v) end
    local range = int_range[dtype]
    if range then
      if v % 1 ~= 0 then
        raise(string.format("%s: %s is not an integer (tensor dtype %s)", who, tostring(v), dtype))
      end
      if v < range[1] or v >= range[2] then
        raise(string.format("%s: %s is outside the range of %s (%s)", who, tostring(v), dtype, range[3]))
      end
    end
    return v
  elseif type(v) == "boolean" then
    return v and 1 or 0
  end
  raise(string.format("%s: expected a number for a %s tensor, got %s", who, dtype, type(v)))
end

local function from_c_value(dtype, v)
  if dtype == "bool" then return v == true end
  if dtype == "float16" then return dtypes.half_to_number(v) end
  return tonumber(v)
end

-- ---- nested tables -------------------------------------------------------
-- Shape of a nested Lua table; raises for ragged or non-numeric tables.
local function infer_shape(t, who)
  local shape = {}
  local probe = t
  while type(probe) == "table" do
    shape[#shape + 1] = #probe
    probe = probe[1]
  end
  local function check(node, depth)
    if depth > #shape then
      if type(node) ~= "number" and type(node) ~= "boolean" then
        raise(string.format("%s: expected numbers at depth %d, got %s", who, depth, type(node)))
      end
      return
    end
    if type(node) ~= "table" then
      raise(string.format("%s: ragged table: expected a list at depth %d, got %s",
        who, depth, type(node)))
    end
    if #node ~= shape[depth] then
      raise(string.format("%s: ragged table: a list at depth %d has %d elements, expected %d",
        who, depth, #node, shape[depth]))
    end
    for i = 1, #node do check(node[i], depth + 1) end
  end
  check(t, 1)
  return shape
end

local function flatten_into(node, depth, ndim, buf, pos, dtype, who)
  if depth > ndim then
    buf[pos] = to_c_value(dtype, node, who)
    return pos + 1
  end
  for i = 1, #node do
    pos = flatten_into(node[i], depth + 1, ndim, buf, pos, dtype, who)
  end
  return pos
end

-- oar.Tensor(nested_table, dtype) or oar.Tensor{shape=, dtype=} (zeros).
local function construct(_, spec, dtype)
  local who = "Tensor"
  if type(spec) == "number" or type(spec) == "boolean" then spec = { spec } end
  if type(spec) ~= "table" then
    raise("Tensor: expected a nested table of numbers or {shape=, dtype=}, got " .. type(spec))
  end
  if spec.shape ~= nil then
    local dt = dtypes.check(spec.dtype or dtype or "float32", who)
    local dims, n = dims_array(spec.shape, who)
    local out = ffi.new("oar_tensor_t *[1]")
    if C.oar_tensor_new(dtypes.enum(dt), dims, n, out) ~= 0 then
      raise("Tensor: " .. lib.last_error())
    end
    local t = M.wrap(out[0])
    if spec.lod then t:set_lod(spec.lod) end
    return t
  end
  local dt = dtypes.check(dtype or "float32", who)
  local shape = infer_shape(spec, who)
  local numel = 1
  for _, d in ipairs(shape) do numel = numel * d end
  local buf = ffi.new(dtypes.ctype(dt) .. "[?]", numel > 0 and numel or 1)
  flatten_into(spec, 1, #shape, buf, 0, dt, who)
  local dims, n = dims_array(shape, who)
  local out = ffi.new("oar_tensor_t *[1]")
  if C.oar_tensor_from_data(dtypes.enum(dt), dims, n, buf, out) ~= 0 then
    raise("Tensor: " .. lib.last_error())
  end
  return M.wrap(out[0])
end

setmetatable(M, { __call = construct })
M.new = function(...) return construct(nil, ...) end

-- A tensor with a copy of `numel(shape)` elements at `ptr` (any pointer cdata).
function M.from_buffer(ptr, shape, dtype)
  local who = "tensor.from_buffer"
  local ctype = type(ptr) == "cdata" and tostring(ffi.typeof(ptr)) or ""
  if ptr == nil or not (ctype:find("*", 1, true) or ctype:find("[", 1, true)) then
    raise(who .. ": 'ptr' must be a non-NULL pointer or array cdata, got " .. tostring(ptr))
  end
  local dt = dtypes.check(dtype or "float32", who)
  local dims, n = dims_array(shape, who)
  -- an array cdata knows its size: refuse to read past it (a bare pointer cannot tell)
  local have = not ctype:find("*", 1, true) and ctype:find("[", 1, true) and ffi.sizeof(ptr)
  if have then
    local need = ffi.sizeof(dtypes.ctype(dt))
    for i = 0, n - 1 do need = need * tonumber(dims[i]) end
    if need > have then
      raise(string.format("%s: shape [%s] of %s needs %.0f bytes but the array holds %d", who,
        table.concat(shape, ", "), dt, need, have))
    end
  end
  local out = ffi.new("oar_tensor_t *[1]")
  if C.oar_tensor_from_data(dtypes.enum(dt), dims, n, ffi.cast("const void *", ptr), out) ~= 0 then
    raise(who .. ": " .. lib.last_error())
  end
  return M.wrap(out[0])
end

-- ---- methods -------------------------------------------------------------
local function self_check(t, who)
  if not is_tensor(t) then
    raise("Tensor:" .. who .. ": call it with ':' on a Tensor")
  end
end

function Tensor:shape()
  self_check(self, "shape")
  local n = C.oar_tensor_ndim(self.handle)
  local dims = C.oar_tensor_dims(self.handle)
  local s = {}
  for i = 0, n - 1 do s[i + 1] = tonumber(dims[i]) end
  return s
end

function Tensor:dtype()
  self_check(self, "dtype")
  return dtypes.name(C.oar_tensor_dtype(self.handle)) or "unknown"
end

function Tensor:numel()
  self_check(self, "numel")
  return tonumber(C.oar_tensor_numel(self.handle))
end

-- Typed pointer to the elements (float* for float32, ...), or nil before the
-- buffer exists. The pointer is valid only while you hold this Tensor.
function Tensor:data()
  self_check(self, "data")
  local p = C.oar_tensor_data(self.handle)
  if p == nil then return nil end
  return ffi.cast(dtypes.ctype(self:dtype()) .. " *", p)
end

-- The buffer as a typed pointer, raising when there is none to read.
local function readable(self, who)
  local p = self:data()
  if p == nil then
    if self:numel() == 0 then return nil end
    raise("Tensor:" .. who .. ": the tensor holds no data yet")
  end
  return p
end

function Tensor:totable()
  self_check(self, "totable")
  local shape = self:shape()
  local dt = self:dtype()
  local p = readable(self, "totable")
  local pos = 0
  local function build(depth)
    if depth > #shape then
      local v = from_c_value(dt, p[pos])
      pos = pos + 1
      return v
    end
    local node = {}
    for i = 1, shape[depth] do node[i] = build(depth + 1) end
    return node
  end
  if #shape == 0 then
    if p == nil then return nil end
    return from_c_value(dt, p[0])
  end
  return build(1)
end

-- flat 0-based offset of 1-based indices, with range checks
local function offset(self, who, ...)
  local shape = self:shape()
  local n = select("#", ...)
  if n ~= #shape then
    raise(string.format("Tensor:%s: expected %d indices for shape [%s], got %d",
      who, #shape, table.concat(shape, ", "), n))
  end
  local off = 0
  for k = 1, n do
    local i = select(k, ...)
    if type(i) ~= "number" or i % 1 ~= 0 or i < 1 or i > shape[k] then
      raise(string.format("Tensor:%s: index %d is %s, outside 1..%d", who, k, tostring(i), shape[k]))
    end
    off = off * shape[k] + (i - 1)
  end
  return off
end

function Tensor:get(...)
  self_check(self, "get")
  local off = offset(self, "get", ...)
  local p = readable(self, "get")
  return from_c_value(self:dtype(), p[off])
end

function Tensor:set(value, ...)
  self_check(self, "set")
  local off = offset(self, "set", ...)
  local p = readable(self, "set")
  p[off] = to_c_value(self:dtype(), value, "Tensor:set")
end

-- {{0, 2, 5}, ...}: offsets per level, 0-based like Fluid's LoD
function Tensor:lod()
  self_check(self, "lod")
  local levels = {}
  for l = 0, C.oar_tensor_lod_levels(self.handle) - 1 do
    local n = tonumber(C.oar_tensor_lod_size(self.handle, l))
    local d = C.oar_tensor_lod_data(self.handle, l)
    local level = {}
    for i = 0, n - 1 do level[i + 1] = tonumber(d[i]) end
    levels[l + 1] = level
  end
  return levels
end

function Tensor:set_lod(levels)
  self_check(self, "set_lod")
  if type(levels) ~= "table" then
    raise("Tensor:set_lod: expected a list of offset lists like {{0, 2, 5}}, got " .. type(levels))
  end
  local n = #levels
  local ptrs = ffi.new("const int64_t *[?]", n > 0 and n or 1)
  local sizes = ffi.new("int64_t[?]", n > 0 and n or 1)
  local keep = {}
  for l = 1, n do
    local level = levels[l]
    if type(level) ~= "table" then
      raise(string.format("Tensor:set_lod: level %d must be a list of offsets, got %s", l, type(level)))
    end
    local arr = ffi.new("int64_t[?]", #level > 0 and #level or 1)
    for i = 1, #level do
      local v = level[i]
      if type(v) ~= "number" or v % 1 ~= 0 then
        raise(string.format("Tensor:set_lod: level %d offset %d must be an integer, got %s",
          l, i, tostring(v)))
      end
      arr[i - 1] = v
    end
    keep[l] = arr
    ptrs[l - 1] = arr
    sizes[l - 1] = #level
  end
  if C.oar_tensor_set_lod(self.handle, n, ptrs, sizes) ~= 0 then
    raise("Tensor:set_lod: " .. lib.last_error())
  end
  return self
end

-- Fluid's recursive_sequence_lengths: lengths per level instead of offsets.
function Tensor:recursive_sequence_lengths()
  local out = {}
  for l, level in ipairs(self:lod()) do
    local lens = {}
    for i = 2, #level do lens[i - 1] = level[i] - level[i - 1] end
    out[l] = lens
  end
  return out
end

function Tensor:set_recursive_sequence_lengths(lengths)
  if type(lengths) ~= "table" then
    raise("Tensor:set_recursive_sequence_lengths: expected a list of length lists")
  end
  local levels = {}
  for l, lens in ipairs(lengths) do
    local level, acc = { 0 }, 0
    for i, n in ipairs(lens) do acc = acc + n; level[i + 1] = acc end
    levels[l] = level
  end
  return self:set_lod(levels)
end

-- A deep copy (data and LoD).
function Tensor:clone()
  self_check(self, "clone")
  local out = ffi.new("oar_tensor_t *[1]")
  if C.oar_tensor_copy(self.handle, out) ~= 0 then raise("Tensor:clone: " .. lib.last_error()) end
  return M.wrap(out[0])
end

local function fmt_value(v)
  if type(v) == "boolean" then return tostring(v) end
  if v ~= v then return "nan" end
  if v == math.floor(v) and math.abs(v) < 1e15 then return string.format("%d", v) end
  return string.format("%.6g", v)
end

-- values (abbreviated past `limit` per dimension), then shape, dtype and LoD
function Tensor:__tostring()
  local shape = self:shape()
  local dt = self:dtype()
  local p = self:data()
  local limit = 6
  local body
  if p == nil then
    body = "<no data>"
  elseif #shape == 0 then
    body = fmt_value(from_c_value(dt, p[0]))
  else
    local strides = {}
    local acc = 1
    for k = #shape, 1, -1 do strides[k] = acc; acc = acc * shape[k] end
    local function render(depth, base)
      local n = shape[depth]
      local parts = {}
      local function item(i)
        if depth == #shape then return fmt_value(from_c_value(dt, p[base + i])) end
        return render(depth + 1, base + i * strides[depth])
      end
      if n > limit then
        for i = 0, 2 do parts[#parts + 1] = item(i) end
        parts[#parts + 1] = "..."
        for i = n - 3, n - 1 do parts[#parts + 1] = item(i) end
      else
        for i = 0, n - 1 do parts[#parts + 1] = item(i) end
      end
      local sep = depth == #shape and ", " or ",\n" .. string.rep(" ", depth)
      return "[" .. table.concat(parts, sep) .. "]"
    end
    body = render(1, 0)
  end
  local s = string.format("Tensor(%s, shape=[%s], dtype=%s", body, table.concat(shape, ", "), dt)
  local lod = self:lod()
  if #lod > 0 then
    local ls = {}
    for l, level in ipairs(lod) do ls[l] = "{" .. table.concat(level, ", ") .. "}" end
    s = s .. ", lod={" .. table.concat(ls, ", ") .. "}"
  end
  return s .. ")"
end

require("oar.framework")._guard_methods(Tensor, is_tensor, "Tensor", {})

return M
