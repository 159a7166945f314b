--- Dense tensors (Fluid's LoDTensor).
--
-- A Tensor is held by C, reference counted and freed by the garbage
-- collector. Values move between Lua and C by copying (`oar.Tensor(table)`,
-- `t:totable()`), or not at all through `t:data()`, a typed pointer to the
-- elements. Indices in Lua are 1-based; LoD offsets are 0-based like
-- Fluid's.
--
-- `oar.Tensor`, `oar.tensor` and `oar.LoDTensor` are this module; calling it
-- makes a Tensor.
--
-- A tensor a CUDA executor left in a scope lives on the device: reading it
-- (`totable`, `get`, `item`, printing) reads a host copy; `t:to_host()` and
-- `t:to_place(place)` make such copies; `t:data()` and `t:set` work on host
-- tensors only.
-- @module oar.tensor
-- @usage
-- local t = oar.Tensor({{1, 2, 3}, {4, 5, 6}})   -- float32 [2, 3]
-- print(t:shape()[2], t:get(2, 1))                -- 3   4
-- local z = oar.Tensor{shape = {2, 3}, dtype = "int64"}   -- zeros
local ffi = require("ffi")
local lib = require("oar.lib")
local raise = require("oar.framework").raise
local argcheck = require("oar.argcheck")
local dtypes = require("oar.dtypes")
local C = lib.C

local M = {}

local Tensor = {}
Tensor.__index = Tensor
M.Tensor = Tensor

local function is_tensor(x) return getmetatable(x) == Tensor end

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


--- Whether `x` is an oar Tensor.
-- @param x any value
-- @treturn boolean
-- @usage assert(oar.tensor.is_tensor(oar.Tensor({1})))
function M.is_tensor(x) return is_tensor(x) end

--- Wraps an owned `oar_tensor_t *` from the C API (one reference, handed to
-- the garbage collector). For code that calls liboar through the FFI.
-- @param ptr a non-NULL `oar_tensor_t *` cdata
-- @treturn Tensor
-- @usage local t = oar.tensor.wrap(ptr)
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

-- a table with a string key is an options table, not nested values
local function has_string_key(t)
  for k in pairs(t) do
    if type(k) ~= "number" then return true end
  end
  return false
end

local function construct(_, spec, dtype)
  local who = "Tensor"
  if type(spec) == "number" or type(spec) == "boolean" then spec = { spec } end
  if type(spec) ~= "table" or is_tensor(spec) then
    raise("Tensor: expected a nested table of numbers or {shape=, dtype=}, got " ..
      (is_tensor(spec) and "a Tensor (use t:clone() to copy one)" or type(spec)))
  end
  if has_string_key(spec) then
    argcheck.keys("oar.Tensor", spec, { "shape", "dtype", "lod" })
    if spec.shape == nil then
      raise("oar.Tensor: an options table needs 'shape' (oar.Tensor{shape={2, 3}, dtype=\"float32\"})")
    end
    if spec.dtype ~= nil and dtype ~= nil and dtypes.name(spec.dtype) ~= dtypes.name(dtype) then
      raise(string.format("oar.Tensor: dtype '%s' in the table but '%s' as the second argument",
        tostring(spec.dtype), tostring(dtype)))
    end
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

--- Makes a Tensor: `oar.Tensor(values, dtype)` or `oar.Tensor{shape=, dtype=, lod=}`.
--
-- With a nested table of numbers (or booleans, or one number), the Tensor
-- has the table's shape and a copy of its values; every list at one depth
-- must have the same length. With an options table, the Tensor is filled
-- with zeros. `oar.Tensor(...)` is the same call.
-- @tparam number|table values a number, a nested table of numbers, or the
-- options `{shape = {d1, ...}, dtype = "float32", lod = {{0, ...}}}`
-- @tparam[opt="float32"] string dtype `"float32"`, `"float64"`, `"int32"`,
-- `"int64"`, `"bool"`, `"uint8"`, `"int8"`, `"int16"` or `"float16"`
-- (numpy-style aliases such as `"float"`, `"double"` and `"long"` are accepted)
-- @treturn Tensor
-- @raise for a ragged table, a value that does not fit the dtype (an integer
-- dtype given 1.5, a uint8 given 300) or an unknown option
-- @usage
-- local a = oar.tensor.new({{1, 2}, {3, 4}}, "int64")
-- local b = oar.Tensor{shape = {4, 1}, dtype = "float64"}
function M.new(...) return construct(nil, ...) end

--- A Tensor holding a copy of `numel(shape)` elements read at `ptr`.
-- When `ptr` is an FFI array, its size is checked against the shape; a bare
-- pointer cannot be checked, so it must point to enough elements.
-- @param ptr a non-NULL pointer or array cdata
-- @tparam {int,...} shape the sizes
-- @tparam[opt="float32"] string dtype the element type behind `ptr`
-- @treturn Tensor
-- @usage
-- local buf = ffi.new("float[6]", {1, 2, 3, 4, 5, 6})
-- local t = oar.tensor.from_buffer(buf, {2, 3}, "float32")
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

--- Methods of a Tensor.
-- @type Tensor

--- The sizes, a Lua list (`{}` for a scalar).
-- @treturn {int,...}
-- @usage print(oar.Tensor{shape = {2, 3}}:shape()[2])   --> 3
function Tensor:shape()
  self_check(self, "shape")
  local n = C.oar_tensor_ndim(self.handle)
  local dims = C.oar_tensor_dims(self.handle)
  local s = {}
  for i = 0, n - 1 do s[i + 1] = tonumber(dims[i]) end
  return s
end

--- The element type's name (`"float32"`, `"int64"`, ...).
-- @treturn string
-- @usage print(oar.Tensor({1}, "int64"):dtype())   --> int64
function Tensor:dtype()
  self_check(self, "dtype")
  return dtypes.name(C.oar_tensor_dtype(self.handle)) or "unknown"
end

--- The number of elements (the product of the sizes).
-- @treturn int
-- @usage print(oar.Tensor{shape = {2, 3}}:numel())   --> 6
function Tensor:numel()
  self_check(self, "numel")
  return tonumber(C.oar_tensor_numel(self.handle))
end

--- A typed pointer to the elements: `float *` for float32, `int64_t *`
-- for int64, raw `uint16_t *` half bits for float16, and so on.
-- The elements are in row-major order and 0-based. The pointer is valid only
-- while you hold the Tensor (keep a reference to `t` as long as you use it).
-- @treturn ?cdata the pointer, or nil when the tensor holds no buffer yet
-- @usage
-- local t = oar.Tensor{shape = {3}}
-- local p = t:data()
-- for i = 0, 2 do p[i] = i * 10 end
function Tensor:data()
  self_check(self, "data")
  if C.oar_tensor_place(self.handle) ~= C.OAR_PLACE_CPU then
    raise(string.format("Tensor:data: the tensor's data is on CUDAPlace(%d), not in host memory; " ..
      "read it with t:to_host():data() (a host copy)", C.oar_tensor_device(self.handle)))
  end
  local p = C.oar_tensor_data(self.handle)
  if p == nil then return nil end
  -- the caller may write through the pointer: what kernels derived from the
  -- data (fc's reordered weights) must go
  C.oar_tensor_touch(self.handle)
  return ffi.cast(dtypes.ctype(self:dtype()) .. " *", p)
end

local function on_device(self) return C.oar_tensor_place(self.handle) ~= C.OAR_PLACE_CPU end

-- The buffer as a typed pointer, raising when there is none to read; for a
-- device tensor, a host copy's (the second result: keep it while reading).
local function readable(self, who)
  local src = self
  if on_device(self) then
    if who == "set" then
      raise(string.format("Tensor:set: the tensor is on CUDAPlace(%d); write a host tensor " ..
        "(t:to_host()) and feed or assign it instead", C.oar_tensor_device(self.handle)))
    end
    src = self:to_host()
  end
  local p = src:data()
  if p == nil then
    if self:numel() == 0 then return nil end
    raise("Tensor:" .. who .. ": the tensor holds no data yet")
  end
  return p, src
end

--- The place the data is on.
-- @treturn Place `oar.CPUPlace()`, or `oar.CUDAPlace(n)` for a tensor a CUDA executor left in a scope
-- @usage print(t:place())   --> CPUPlace
function Tensor:place()
  self_check(self, "place")
  local place = require("oar.place")
  if on_device(self) then return place.CUDAPlace(tonumber(C.oar_tensor_device(self.handle))) end
  return place.CPUPlace()
end

--- A copy of the tensor (values, LoD) on `place`, sharing nothing with it.
-- @tparam Place place `oar.CPUPlace()` or `oar.CUDAPlace(n)`
-- @treturn Tensor the copy
-- @raise when the place cannot be used (no CUDA backend, driver or device)
-- @usage local dev = t:to_place(oar.CUDAPlace(0))
function Tensor:to_place(place)
  self_check(self, "to_place")
  if not require("oar.place").is_place(place) then
    raise("Tensor:to_place: expected a Place (oar.CPUPlace() or oar.CUDAPlace(n)), got " .. type(place))
  end
  local out = ffi.new("oar_tensor_t *[1]")
  if C.oar_tensor_copy_to(self.handle, place.kind, place.device, out) ~= 0 then
    raise("Tensor:to_place(" .. tostring(place) .. "): " .. lib.last_error())
  end
  return M.wrap(out[0])
end

--- The tensor in host memory: itself when it is there, else a host copy
-- (of a tensor a CUDA executor left in a scope).
-- @treturn Tensor
-- @usage local w = scope:find_var("fc_0.w_0"):get_tensor():to_host():totable()
function Tensor:to_host()
  self_check(self, "to_host")
  if not on_device(self) then return self end
  return self:to_place(require("oar.place").CPUPlace())
end

--- The values as nested Lua tables (a number for a scalar tensor).
-- @treturn table|number|boolean a copy of the values
-- @usage local rows = oar.Tensor({{1, 2}, {3, 4}}):totable()   -- {{1, 2}, {3, 4}}
function Tensor:totable()
  self_check(self, "totable")
  local shape = self:shape()
  local dt = self:dtype()
  local p, keep = readable(self, "totable")
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
  local out = build(1)
  keep = nil   -- the host copy of a device tensor lived until here
  return out
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

--- One element.
-- @tparam int ... one 1-based index per dimension
-- @treturn number|boolean the value
-- @usage print(oar.Tensor({{1, 2}, {3, 4}}):get(2, 1))   --> 3
function Tensor:get(...)
  self_check(self, "get")
  local off = offset(self, "get", ...)
  local p, keep = readable(self, "get")
  local v = from_c_value(self:dtype(), p[off])
  keep = nil
  return v
end

--- Writes one element.
-- @tparam number|boolean value the new value (checked against the dtype)
-- @tparam int ... one 1-based index per dimension
-- @usage
-- local t = oar.Tensor{shape = {2, 2}}
-- t:set(7, 1, 2)
function Tensor:set(value, ...)
  self_check(self, "set")
  local off = offset(self, "set", ...)
  local p = readable(self, "set")
  p[off] = to_c_value(self:dtype(), value, "Tensor:set")
end

--- The LoD (level of detail): for each level, the offsets where sequences
-- start, 0-based, ending with the number of rows of the level below.
-- @treturn {{int,...},...} `{}` for a tensor without LoD
-- @usage
-- local t = oar.Tensor{shape = {5, 1}, lod = {{0, 2, 5}}}  -- sequences of 2 and 3 rows
-- print(#t:lod()[1])   --> 3
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

--- Sets the LoD (checked: offsets start at 0, never decrease, and the last
-- one of the lowest level is the number of rows).
-- @tparam {{int,...},...} levels offsets per level, like `{{0, 2, 5}}`
-- @treturn Tensor the tensor itself
-- @usage local t = oar.Tensor{shape = {5, 3}}:set_lod({{0, 2, 5}})
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

--- The LoD as lengths per level (Fluid's `recursive_sequence_lengths`).
-- @treturn {{int,...},...} e.g. `{{2, 3}}` for the LoD `{{0, 2, 5}}`
-- @usage print(oar.Tensor{shape = {5, 1}, lod = {{0, 2, 5}}}:recursive_sequence_lengths()[1][2])  --> 3
function Tensor:recursive_sequence_lengths()
  local out = {}
  for l, level in ipairs(self:lod()) do
    local lens = {}
    for i = 2, #level do lens[i - 1] = level[i] - level[i - 1] end
    out[l] = lens
  end
  return out
end

--- Sets the LoD from lengths per level.
-- @tparam {{int,...},...} lengths e.g. `{{2, 3}}` for sequences of 2 and 3 rows
-- @treturn Tensor the tensor itself
-- @usage oar.Tensor{shape = {5, 1}}:set_recursive_sequence_lengths({{2, 3}})
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

--- The number held by a one-element Tensor (any shape: `[]`, `[1]`,
-- `[1, 1]`, ...), e.g. a loss fetched by `exe:run`.
-- @treturn number|boolean the value (a boolean for a bool tensor)
-- @raise when the tensor holds no element, several elements, or no data yet
-- @usage
-- local loss = exe:run(main, {feed = feed, fetch_list = {avg_loss}})[1]
-- print(string.format("loss %.4f", loss:item()))
function Tensor:item()
  self_check(self, "item")
  local n = self:numel()
  if n ~= 1 then
    raise(string.format("Tensor:item: the tensor has %d elements (shape [%s]); item() reads a " ..
      "one-element tensor (use t:get(i, ...) or t:totable() for more)", n, table.concat(self:shape(), ", ")))
  end
  local p, keep = readable(self, "item")
  local v = from_c_value(self:dtype(), p[0])
  keep = nil
  return v
end

--- A deep copy (values and LoD).
-- @treturn Tensor
-- @usage local copy = t:clone()
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
-- (`tostring(t)` and `print(t)`)
function Tensor:__tostring()
  local shape = self:shape()
  local dt = self:dtype()
  local host = on_device(self) and self:to_host() or self
  local p = host:data()
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
  host = nil
  local s = string.format("Tensor(%s, shape=[%s], dtype=%s", body, table.concat(shape, ", "), dt)
  if on_device(self) then s = s .. ", place=" .. tostring(self:place()) end
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
