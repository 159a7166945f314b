--- oar.eager's indexing, views and in-place writes (docs/eager.md,
-- "Views"): `a[i]`, `a[{...}]` reads and writes, narrow, select, fill,
-- zero, copy, clone, contiguous, dim; eager.lua installs them. A
-- selection whose elements are contiguous is a view (oar_tensor_view: an
-- offset into the same buffer; autograd and traces see the slice op it
-- equals), any other a copy by the slice op. Writes go through
-- `writable`, which refuses what autograd could not follow and marks the
-- buffer written (oar_tensor_mark_written: a new version).
-- @module oar.eager_index
local ffi = require("ffi")
local lib = require("oar.lib")
local tensor = require("oar.tensor")
local dtypes = require("oar.dtypes")

local C = lib.C
local Tensor = tensor.Tensor
local wrap = tensor.wrap
local is_tensor = tensor.is_tensor

local M = {}
-- oar.eager and its internals (install)
local E, fail, run, run1, check_tensor, axis, get_handle, record, tracked, note_write, grad_on, tracer


-- A selection: per dim a number (that index, the dim dropped), {lo, hi}
-- (inclusive), {i} or {} (the whole dim). Returns starts/ends (0-based,
-- exclusive), the dims dropped, and whether the elements are contiguous.
local function region(a, spec, who)
  local shape = a:shape()
  local n = #shape
  if #spec > n then fail(string.format("%s: %d indices for a tensor of %d dims", who, #spec, n)) end
  local starts, ends, drop = {}, {}, {}
  for k = 1, n do
    local s = spec[k]
    local size = shape[k]
    local lo, hi
    if s == nil then
      lo, hi = 1, size
    elseif type(s) == "number" then
      if s < 0 then s = size + 1 + s end
      if s % 1 ~= 0 or s < 1 or s > size then
        fail(string.format("%s: index %s of dim %d is outside 1..%d", who, tostring(spec[k]), k, size))
      end
      lo, hi = s, s
      drop[#drop + 1] = k - 1
    elseif type(s) == "table" then
      lo, hi = s[1] or 1, s[2] or s[1] or size
      if lo < 0 then lo = size + 1 + lo end
      if hi < 0 then hi = size + 1 + hi end
      if lo < 1 or hi > size or lo > hi + 1 then
        fail(string.format("%s: range {%s, %s} of dim %d is outside 1..%d", who, tostring(s[1]), tostring(s[2]), k, size))
      end
    else
      fail(string.format("%s: index %d must be a number or a {lo, hi} table, got %s", who, k, type(s)))
    end
    starts[k], ends[k] = lo - 1, hi
  end
  -- contiguous: leading single indices, one partial dim, then whole dims
  local contiguous, partial = true, false
  for k = 1, n do
    local whole = starts[k] == 0 and ends[k] == shape[k]
    local single = ends[k] - starts[k] == 1
    if partial and not whole then contiguous = false end
    if not single then partial = true end
    if not whole and not single then partial = true end
  end
  return starts, ends, drop, contiguous, shape
end

local function slice_attrs(starts, ends, drop)
  local axes = {}
  for k = 1, #starts do axes[k] = k - 1 end
  return { axes = axes, starts = starts, ends = ends, decrease_axis = drop, infer_flags = {} }
end

-- the selection as a view (contiguous) or a copy (the slice op)
local function select_region(a, spec, who)
  local starts, ends, drop, contiguous, shape = region(a, spec, who)
  local n = #shape
  local dims = {}
  local dropped = {}
  for _, k in ipairs(drop) do dropped[k + 1] = true end
  for k = 1, n do
    if not dropped[k] then dims[#dims + 1] = ends[k] - starts[k] end
  end
  if #dims == 0 and #drop > 0 then dims = { 1 } end
  local attrs = slice_attrs(starts, ends, drop)
  if not contiguous then
    return run("slice", { { "Input", a } }, { { "Out", 1 } }, attrs)[1]
  end
  local off, stride = 0, 1
  for k = n, 1, -1 do off = off + starts[k] * stride; stride = stride * shape[k] end
  local cd = ffi.new("int64_t[?]", math.max(#dims, 1), dims)
  local out = ffi.new("oar_tensor_t *[1]")
  if C.oar_tensor_view(a.handle, off, cd, #dims, out) ~= 0 then fail(lib.last_error()) end
  local v = wrap(out[0])
  rawset(v, "_base", rawget(a, "_base") or a)
  -- autograd and traces see the view as the slice op it equals
  local tr = tracer()
  if (grad_on() and tracked(a)) or tr then
    local h = get_handle("slice", { { "Input", 1 } }, { { "Out", 1 } }, attrs)
    if grad_on() and tracked(a) then record(h, { a }, { v }) end
    if tr then tr.op(h, { a }, { v }) end
  end
  return v
end

--- len slices of dim d from start on; a view sharing memory when its elements are contiguous (always along dim 1), else a copy.
-- @usage local n = oar.eye(4):narrow(1, 2, 2)
function M.narrow(a, d, start, len)
  check_tensor(a, "narrow")
  local spec = {}
  spec[axis(d, #a:shape(), "narrow") + 1] = { start, start + len - 1 }
  return select_region(a, spec, "narrow")
end

--- Slice i of dim d, the dim dropped; a view sharing memory when contiguous (always along dim 1), else a copy.
-- @usage local row = oar.eye(3):select(1, 2)
function M.select(a, d, i)
  check_tensor(a, "select")
  local spec = {}
  spec[axis(d, #a:shape(), "select") + 1] = i
  return select_region(a, spec, "select")
end

-- the elements of a selection: calls f(offset) for each, in order
local function each_offset(starts, ends, shape, f)
  local n = #shape
  local strides, acc = {}, 1
  for k = n, 1, -1 do strides[k] = acc; acc = acc * shape[k] end
  local pos = {}
  for k = 1, n do
    pos[k] = starts[k]
    if ends[k] <= starts[k] then return end
  end
  while true do
    local off = 0
    for k = 1, n do off = off + pos[k] * strides[k] end
    f(off)
    local k = n
    while k >= 1 do
      pos[k] = pos[k] + 1
      if pos[k] < ends[k] then break end
      pos[k] = starts[k]
      k = k - 1
    end
    if k < 1 then return end
  end
end

local function writable(a, who)
  local base = rawget(a, "_base")
  if grad_on() and (rawget(a, "_rg") or (base and rawget(base, "_rg"))) then
    fail(who .. ": the tensor " .. (base and "is a view of one that " or "") ..
      "requires grad; write into it inside oar.no_grad(function() ... end)")
  end
  if tracer() then tracer().write(a, who) end
  local p = a:data()
  if p == nil and a:numel() > 0 then fail(who .. ": the tensor has no data on the host") end
  C.oar_tensor_mark_written(a.handle)
  -- the call site of this write, for backward's message should the write
  -- spoil a recorded op
  if grad_on() then note_write(a) end
  return p
end

-- autograd cannot follow values written in place: a source it tracks is refused
local function untracked_source(v, who)
  if grad_on() and tracked(v) then
    fail(who .. ": the value depends on a tensor that requires grad, and autograd does not follow in-place " ..
      "writes; build the tensor with oar.cat, oar.stack or oar.where instead, or write v:detach()")
  end
end

local function to_elem(a, v)
  local dt = a:dtype()
  if dt == "bool" then return v ~= 0 and v ~= false end
  if dt == "float16" then return dtypes.number_to_half(v) end
  return v
end

-- a[spec] = v: a number everywhere, or a tensor's values in order
local function assign_region(a, spec, v, who)
  local starts, ends, _, _, shape = region(a, spec, who)
  local p = writable(a, who)
  if type(v) == "number" or type(v) == "boolean" then
    local x = to_elem(a, v)
    each_offset(starts, ends, shape, function(off) p[off] = x end)
    return
  end
  check_tensor(v, who, "the value")
  untracked_source(v, who)
  local count = 1
  for k = 1, #shape do count = count * (ends[k] - starts[k]) end
  if v:numel() ~= count then
    fail(string.format("%s: the selection has %d elements, the value %d (shape [%s])", who, count, v:numel(),
      table.concat(v:shape(), ", ")))
  end
  local src = E.type(v, a:dtype())
  local q = src:data()
  local i = 0
  each_offset(starts, ends, shape, function(off) p[off] = q[i]; i = i + 1 end)
end

local methods = Tensor
local function spec_of(k)
  if type(k) == "number" then return { k } end
  return k
end

-- a[i], a[{...}]: selections; everything else: methods and fields
Tensor.__index = function(t, k)
  local m = methods[k]
  if m ~= nil then return m end
  local tk = type(k)
  if tk == "number" or (tk == "table" and not is_tensor(k)) then
    local spec = spec_of(k)
    local shape = t:shape()
    -- every dim given a number: the element
    local all = #spec == #shape
    for i = 1, #spec do if type(spec[i]) ~= "number" then all = false end end
    if all and #shape > 0 then
      local starts = region(t, spec, "index")
      local off, stride = 0, 1
      for i = #shape, 1, -1 do off = off + starts[i] * stride; stride = stride * shape[i] end
      local dt = t:dtype()
      local v = t:data()[off]
      if dt == "bool" then return v == true end
      if dt == "float16" then return dtypes.half_to_number(v) end
      return tonumber(v)
    end
    return select_region(t, spec, "index")
  end
  return nil
end

Tensor.__newindex = function(t, k, v)
  local tk = type(k)
  if tk == "number" or (tk == "table" and not is_tensor(k)) then
    assign_region(t, spec_of(k), v, "index assignment")
    return
  end
  rawset(t, k, v)
end

-- ---- in place and copies -------------------------------------------------------------------

--- Writes v into every element, in place; returns the tensor (also `zero`).
-- @usage local f = oar.zeros(2):fill(7)
function M.fill(a, v)
  check_tensor(a, "fill")
  local p = writable(a, "fill")
  local x = to_elem(a, v)
  for i = 0, a:numel() - 1 do p[i] = x end
  return a
end

function M.zero(a) return M.fill(a, 0) end

--- Writes b's values (cast to this dtype; same number of elements) into the tensor, in place; returns it.
-- @usage local c = oar.zeros(2):copy(oar.Tensor({1, 2}))
function M.copy(a, b)
  check_tensor(a, "copy"); check_tensor(b, "copy", "the source")
  if a:numel() ~= b:numel() then
    fail(string.format("copy: %d elements (shape [%s]) from %d (shape [%s])", a:numel(),
      table.concat(a:shape(), ", "), b:numel(), table.concat(b:shape(), ", ")))
  end
  untracked_source(b, "copy")
  local p = writable(a, "copy")
  local src = E.type(b, a:dtype())
  if a:numel() > 0 then ffi.copy(p, src:data(), a:numel() * tonumber(C.oar_dtype_size(C.oar_tensor_dtype(a.handle)))) end
  return a
end

-- a copy; autograd sees the assign op
local plain_clone = Tensor.clone
--- A copy with its own memory.
-- @usage local c = oar.ones(2):clone()
function M.clone(a)
  check_tensor(a, "clone")
  -- a trace must see the copy as an op, or it would freeze it as a constant
  if (grad_on() and tracked(a)) or tracer() then return run1("assign", a) end
  return plain_clone(a)
end
M._plain_clone = plain_clone

--- The tensor itself: every oar tensor is contiguous (also `dim`, `nDimension`: the number of dims).
-- @usage local c = oar.ones(2):contiguous()
function M.contiguous(a) return check_tensor(a, "contiguous") end
function M.dim(a) return #check_tensor(a, "dim"):shape() end
function M.nDimension(a) return #check_tensor(a, "nDimension"):shape() end

--- Puts these functions into oar.eager (eager.lua calls it).
-- @tparam table eager the oar.eager module
-- @tparam table internals run, run1, check_tensor, axis, get_handle, record, tracked, note_write(t), grad_on(), tracer()
-- @local
function M.install(eager, internals)
  E, fail = eager, eager._fail
  local I = internals
  run, run1, check_tensor, get_handle, record = I.run, I.run1, I.check_tensor, I.get_handle, I.record
  axis = I.axis
  tracked, note_write, grad_on, tracer = I.tracked, I.note_write, I.grad_on, I.tracer
  eager._install_functions(M)
end

return M
