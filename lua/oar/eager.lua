--- Eager mode: tensors that compute when called, on the ops and kernels
-- programs use (docs/eager.md).
--
-- Each call runs one registered op at once (C: oar_eager_op_run): run-time
-- inference and the kernel for the inputs' place and dtype, no program. One
-- prepared op is kept per (op type, attrs, arity) and reused. While grad
-- mode is on and an input requires grad, the call is recorded on a tape
-- (the op, its input and output tensors); `y:backward()` asks each recorded
-- op's grad maker for its grad ops (C: oar_eager_grad_ops, the ops
-- append_backward would add) and runs them, last op first, summing the
-- grads of tensors that feed several ops.
--
-- Indices are 1-based. Views (`a[i]`, `narrow`, `select`, and any
-- selection whose elements are contiguous) share the tensor's memory; other
-- selections are copies.
-- @module oar.eager
local ffi = require("ffi")
local lib = require("oar.lib")
local tensor = require("oar.tensor")
local dtypes = require("oar.dtypes")
require("oar.framework")   -- fills core.set_attr
local core = require("oar.framework.core")
local C = lib.C

local M = {}
local Tensor = tensor.Tensor
local wrap = tensor.wrap
local is_tensor = tensor.is_tensor
local set_attr = core.set_attr

local EMPTY = "@EMPTY@"
local grad_enabled = true
-- oar.jit.trace's recorder while a trace runs: op(h, inputs, outputs) sees
-- every op call, write(t, who) every in-place write (oar.jit)
local tracer = nil

-- ---- errors: the op's message, prefixed with the user's line ---------------

local HERE = debug.getinfo(1, "S").source
local TENSOR_SRC = debug.getinfo(tensor.wrap, "S").source

-- sources whose frames an error's call site skips (oar.nn adds its own)
local INTERNAL = { [HERE] = true, [TENSOR_SRC] = true }
function M._internal_source(src) INTERNAL[src] = true end
-- the functions of module mod (all but its install) into oar.eager, and
-- the calling module's source internal (eager_create, eager_select, eager_index)
function M._install_functions(mod)
  for k, v in pairs(mod) do
    if k ~= "install" then M[k] = v end
  end
  INTERNAL[debug.getinfo(2, "S").source] = true
end

-- "file:line: " of the first caller outside this module, oar.tensor and oar.nn
local function call_site()
  for level = 3, 40 do
    local info = debug.getinfo(level, "Sl")
    if not info then break end
    if not INTERNAL[info.source] and info.currentline > 0 then
      return info.short_src .. ":" .. info.currentline .. ": "
    end
  end
  return ""
end

local function fail(msg) error(call_site() .. msg, 0) end
M._fail = fail

-- ---- prepared ops ------------------------------------------------------------

-- key -> { ptr, type, nin, nout, ins (cdata array), outs, in_names, out_names, grads }
local handles = {}

local function attr_key(attrs)
  if not attrs then return "" end
  local parts = {}
  for k, v in pairs(attrs) do
    if type(v) == "table" then v = "{" .. table.concat(v, ",") .. "}" end
    parts[#parts + 1] = k .. "=" .. tostring(v)
  end
  return table.concat(parts, ";")
end

-- A prepared op from a desc: positional argument names and scratch arrays.
local function handle_from_desc(desc, opname)
  local out = ffi.new("oar_eager_op_t *[1]")
  if C.oar_eager_op_new(desc, C.OAR_PLACE_CPU, 0, out) ~= 0 then fail(lib.last_error()) end
  local h = { ptr = ffi.gc(out[0], C.oar_eager_op_free), type = opname, grads = {} }
  h.desc = C.oar_eager_op_desc(h.ptr)
  local function names(n, count, slot_at, arg_at, slots)
    local list = {}
    for s = 0, n - 1 do
      local slot = slot_at(desc, s)
      for a = 0, count(desc, slot) - 1 do
        list[#list + 1] = ffi.string(arg_at(desc, slot, a))
        if slots then slots[#list] = ffi.string(slot) end
      end
    end
    return list
  end
  h.in_slots = {}
  h.in_names = names(C.oar_op_desc_num_inputs(desc), C.oar_op_desc_input_count,
    C.oar_op_desc_input_slot, C.oar_op_desc_input_arg, h.in_slots)
  h.out_names = names(C.oar_op_desc_num_outputs(desc), C.oar_op_desc_output_count,
    C.oar_op_desc_output_slot, C.oar_op_desc_output_arg)
  h.nin, h.nout = #h.in_names, #h.out_names
  h.ins = ffi.new("oar_tensor_t *[?]", math.max(h.nin, 1))
  h.outs = ffi.new("oar_tensor_t *[?]", math.max(h.nout, 1))
  return h
end

-- The prepared op for `opname` with input slots `ins` ({slot, n}...), output
-- slots `outs` ({slot, n}...) and attrs; forward args are named x1.., y1..
local function get_handle(opname, ins, outs, attrs)
  local kp = { opname }
  for i = 1, #ins do kp[#kp + 1] = ins[i][1] .. ins[i][2] end
  kp[#kp + 1] = "|"
  for i = 1, #outs do kp[#kp + 1] = outs[i][1] .. outs[i][2] end
  kp[#kp + 1] = attr_key(attrs)
  local key = table.concat(kp, " ")
  local h = handles[key]
  if h then return h end
  local dp = ffi.new("oar_op_desc_t *[1]")
  if C.oar_op_desc_new(opname, dp) ~= 0 then fail(lib.last_error()) end
  local desc = ffi.gc(dp[0], C.oar_op_desc_free)
  local nx, ny = 0, 0
  for i = 1, #ins do
    local list = {}
    for _ = 1, ins[i][2] do nx = nx + 1; list[#list + 1] = "x" .. nx end
    if C.oar_op_desc_set_input(desc, ins[i][1], lib.cstrings(list), #list) ~= 0 then fail(lib.last_error()) end
  end
  for i = 1, #outs do
    local list = {}
    for _ = 1, outs[i][2] do ny = ny + 1; list[#list + 1] = "y" .. ny end
    if C.oar_op_desc_set_output(desc, outs[i][1], lib.cstrings(list), #list) ~= 0 then fail(lib.last_error()) end
  end
  if attrs then
    local ok, err = pcall(function()
      for k, v in pairs(attrs) do set_attr(desc, opname, k, v) end
    end)
    if not ok then fail(tostring(err):gsub("^[^:]*:%d+: ", "")) end
  end
  h = handle_from_desc(desc, opname)
  -- what a tracer needs to append the same op to a program
  h.in_spec, h.out_spec = ins, outs
  h.has_grad = C.oar_op_has_grad(opname)
  if attrs then
    h.attrs = {}
    for k, v in pairs(attrs) do h.attrs[k] = v end
  end
  handles[key] = h
  return h
end

-- ---- the tape ------------------------------------------------------------------

local node_count = 0

local function tracked(t) return rawget(t, "_rg") or rawget(t, "_node") end

-- the version of the memory under t (oar_tensor_version): a recorded op
-- saves its inputs' and outputs' versions, backward checks them
local tensor_version = C.oar_tensor_version
local function version(t) return tonumber(tensor_version(t.handle)) end

-- where in-place writes happened, by the version they made (the latest
-- few hundred, for backward's message)
local write_sites, write_count = {}, 0

-- records outputs = op(inputs) when grad mode is on and an input is tracked
local function record(h, inputs, outputs)
  if not grad_enabled or not h.has_grad then return end
  -- (a grad op recorded by backward{create_graph} may have holes: h.nin)
  local nin, nout = math.max(#inputs, h.nin or 0), math.max(#outputs, h.nout or 0)
  local any = false
  for i = 1, nin do
    local t = inputs[i]
    if t and tracked(t) then any = true; break end
  end
  if not any then return end
  node_count = node_count + 1
  local vin, vout = {}, {}
  for i = 1, nin do vin[i] = inputs[i] and version(inputs[i]) or 0 end
  for i = 1, nout do vout[i] = outputs[i] and version(outputs[i]) or 0 end
  local node = { h = h, inputs = inputs, outputs = outputs, id = node_count, vin = vin, vout = vout }
  for i = 1, nout do
    if outputs[i] then rawset(outputs[i], "_node", node) end
  end
end

-- Runs a prepared op on positional input tensors; returns the positional
-- outputs (new tensors). No recording.
local function exec(h, inputs)
  local ins, outs = h.ins, h.outs
  for i = 1, h.nin do
    local t = inputs[i]
    ins[i - 1] = t and t.handle or nil
  end
  for i = 0, h.nout - 1 do outs[i] = nil end
  local rc = C.oar_eager_op_run(h.ptr, ins, h.nin, outs, h.nout)
  for i = 0, h.nin - 1 do ins[i] = nil end
  if rc ~= 0 then fail(lib.last_error()) end
  local res = {}
  for i = 1, h.nout do
    local p = outs[i - 1]
    if p ~= nil then res[i] = wrap(p) end
    outs[i - 1] = nil
  end
  return res
end

--- Runs op `opname` now: `ins` lists `{slot, tensor}` or `{slot, {tensor, ...}}`,
-- `outs` lists `{slot, n}`; returns the output tensors in order.
-- @local
function M._run(opname, ins, outs, attrs)
  local spec, flat = {}, {}
  for i = 1, #ins do
    local v = ins[i][2]
    if is_tensor(v) then
      spec[i] = { ins[i][1], 1 }
      flat[#flat + 1] = v
    else
      spec[i] = { ins[i][1], #v }
      for j = 1, #v do flat[#flat + 1] = v[j] end
    end
  end
  local h = get_handle(opname, spec, outs, attrs)
  local res = exec(h, flat)
  record(h, flat, res)
  if tracer then tracer.op(h, flat, res) end
  return res
end

--- Runs op `opname` writing its outputs into given tensors, in place
-- (`outs` lists `{slot, {tensor, ...}}`; the kernel writes them as a
-- program's in-place ops write their variables); records nothing.
-- @local
function M._run_into(opname, ins, outs, attrs)
  local spec, flat, ospec, targets = {}, {}, {}, {}
  for i = 1, #ins do
    local v = ins[i][2]
    if is_tensor(v) then v = { v } end
    spec[i] = { ins[i][1], #v }
    for j = 1, #v do flat[#flat + 1] = v[j] end
  end
  for i = 1, #outs do
    ospec[i] = { outs[i][1], #outs[i][2] }
    for j = 1, #outs[i][2] do targets[#targets + 1] = outs[i][2][j] end
  end
  local h = get_handle(opname, spec, ospec, attrs)
  local cin, cout = h.ins, h.outs
  for i = 1, h.nin do cin[i - 1] = flat[i] and flat[i].handle or nil end
  for i = 1, h.nout do cout[i - 1] = targets[i].handle end
  local rc = C.oar_eager_op_run(h.ptr, cin, h.nin, cout, h.nout)
  for i = 0, h.nin - 1 do cin[i] = nil end
  for i = 0, h.nout - 1 do cout[i] = nil end
  if rc ~= 0 then fail(lib.last_error()) end
end

-- The hot path: prepared op h (one output) on tensors a and b (b nil for
-- an op of one input); records and traces as M._run does, building the
-- argument tables only when something records.
local function call(h, a, b)
  local ins, outs = h.ins, h.outs
  ins[0] = a.handle
  if b then ins[1] = b.handle end
  outs[0] = nil
  local rc = C.oar_eager_op_run(h.ptr, ins, h.nin, outs, 1)
  ins[0] = nil
  if b then ins[1] = nil end
  if rc ~= 0 then fail(lib.last_error()) end
  local y = wrap(outs[0])
  outs[0] = nil
  if (grad_enabled and h.has_grad and (tracked(a) or (b and tracked(b)))) or tracer then
    local inputs, outputs = { a, b }, { y }
    record(h, inputs, outputs)
    if tracer then tracer.op(h, inputs, outputs) end
  end
  return y
end

-- A function running op `opname` with fixed slots and attrs on its tensor
-- arguments (one output): the prepared op is looked up once, on first use.
local SPEC_X, SPEC_XY, SPEC_OUT = { { "X", 1 } }, { { "X", 1 }, { "Y", 1 } }, { { "Out", 1 } }
local function prepared(opname, nin, attrs)
  local h
  if nin == 1 then
    return function(a)
      h = h or get_handle(opname, SPEC_X, SPEC_OUT, attrs)
      return call(h, a)
    end
  end
  return function(a, b)
    h = h or get_handle(opname, SPEC_XY, SPEC_OUT, attrs)
    return call(h, a, b)
  end
end

--- A function running op `opname` (slots X, Y or X alone, by nin; one output Out) with fixed attrs on its tensors; the prepared op is looked up once (oar.nn's hot calls).
-- @local
M._prepared = prepared

--- Sets the recorder oar.jit.trace uses (nil: none); returns the previous one.
-- @local
function M._set_tracer(t)
  local was = tracer
  tracer = t
  return was
end
local run = M._run

local function run1(opname, x, attrs)
  return run(opname, { { "X", x } }, { { "Out", 1 } }, attrs)[1]
end

-- ---- arguments -----------------------------------------------------------------

local function check_tensor(x, who, what)
  if not is_tensor(x) then
    fail(string.format("%s: %s must be a Tensor, got %s", who, what or "the argument", type(x)))
  end
  return x
end

local function check_dtype(name, who)
  if dtypes.name(name) == nil then fail(string.format("%s: unknown dtype %s", who, tostring(name))) end
  return dtypes.enum(name)
end

-- 1-based dim d of an n-dim tensor (negative counts from the end) -> 0-based
local function axis(d, n, who)
  if type(d) ~= "number" or d % 1 ~= 0 then fail(string.format("%s: dim must be an integer, got %s", who, tostring(d))) end
  if d < 0 then d = n + 1 + d end
  if d < 1 or d > math.max(n, 1) then
    fail(string.format("%s: dim %d is out of range for a tensor of %d dims", who, d, n))
  end
  return d - 1
end

-- ---- creation: zeros, ones, full, eye, rand, randn, randint, arange,
-- linspace, seed, tensor (lua/oar/eager_create.lua)
require("oar.eager_create").install(M, { run = run, check_dtype = check_dtype })

-- ---- operands --------------------------------------------------------------------

-- a one-element tensor of t's dtype holding number v
local function scalar_like(v, t)
  local dt = t:dtype()
  local one = ffi.new("int64_t[1]", 1)
  local out = ffi.new("oar_tensor_t *[1]")
  if C.oar_tensor_new(C.oar_tensor_dtype(t.handle), one, 1, out) ~= 0 then fail(lib.last_error()) end
  local s = wrap(out[0])
  local p = s:data()
  if dt == "bool" then p[0] = v ~= 0 and v ~= false
  elseif dt == "float16" then p[0] = dtypes.number_to_half(v)
  else p[0] = v end
  return s
end

local function operands(a, b, who)
  if is_tensor(a) and is_tensor(b) then return a, b end
  if is_tensor(a) and type(b) == "number" then return a, scalar_like(b, a) end
  if type(a) == "number" and is_tensor(b) then return scalar_like(a, b), b end
  fail(string.format("%s: expected tensors or numbers, got %s and %s", who, type(a), type(b)))
end

local function binary(opname)
  local op = prepared(opname, 2, { axis = -1 })
  return function(a, b)
    local x, y = operands(a, b, opname)
    return op(x, y)
  end
end

--- Elementwise a + b, broadcasting as numpy; numbers on either side (also `sub`, `mul`, `div`, `maximum`, `minimum`, the operators `+ - * /`).
-- @usage local c = oar.add(oar.ones(2, 3), oar.Tensor({1, 2, 3}))   -- or a + b
M.add = binary("elementwise_add")
M.sub = binary("elementwise_sub")
M.mul = binary("elementwise_mul")
M.div = binary("elementwise_div")
M.maximum = binary("elementwise_max")
M.minimum = binary("elementwise_min")

--- -a (the unary minus operator).
-- @usage local n = -oar.ones(2)
function M.neg(a) return run1("scale", check_tensor(a, "neg"), { scale = -1, bias = 0 }) end

local elementwise_pow = binary("elementwise_pow")
--- a ^ p: elementwise power by a number or a tensor (the `^` operator).
-- @usage local sq = oar.Tensor({1, 2}) ^ 2
function M.pow(a, p)
  if is_tensor(a) and type(p) == "number" then return run1("pow", a, { factor = p }) end
  return elementwise_pow(a, p)
end

local compare = {
  eq = "equal", ne = "not_equal", lt = "less_than", le = "less_equal", gt = "greater_than", ge = "greater_equal",
}
--- Elementwise comparisons to bool tensors: `eq`, `ne`, `lt`, `le`, `gt`, `ge`
-- (a tensor or a number on either side, broadcasting).
-- @function eq
-- @usage local m = oar.Tensor({1, 2, 3}):gt(1)
for name, opname in pairs(compare) do M[name] = binary(opname) end

Tensor.__add = M.add
Tensor.__sub = M.sub
Tensor.__mul = M.mul
Tensor.__div = M.div
Tensor.__pow = M.pow
Tensor.__unm = M.neg

-- ---- unary ops ------------------------------------------------------------------

--- Elementwise functions, each its registered op: `exp`, `log`, `sqrt`, `abs`,
-- `tanh`, `sigmoid`, `relu`, `floor`, `ceil`, `sin`, `cos`, `square`,
-- `rsqrt`, `reciprocal`, `sign`, `log1p`, `round`.
-- @function exp
-- @usage local e = oar.Tensor({0, 1}):exp()
for _, name in ipairs({ "exp", "log", "sqrt", "abs", "tanh", "sigmoid", "relu", "floor", "ceil", "sin", "cos",
                        "square", "rsqrt", "reciprocal", "sign", "log1p", "round" }) do
  local op = prepared(name, 1, nil)
  M[name] = function(a) return op(check_tensor(a, name)) end
end

--- Softmax along dim d (default the last).
-- @usage local p = oar.Tensor({{1, 2}}):softmax(2)
function M.softmax(a, d)
  check_tensor(a, "softmax")
  local n = #a:shape()
  return run1("softmax", a, { axis = d and axis(d, n, "softmax") or -1 })
end

--- Values limited to [lo, hi] (either may be nil).
-- @usage local c = oar.Tensor({-1, 5}):clamp(0, 1)
function M.clamp(a, lo, hi)
  check_tensor(a, "clamp")
  return run1("clip", a, { min = lo or -3.4e38, max = hi or 3.4e38 })
end

-- ---- linear algebra and shapes ---------------------------------------------------

local matmul_v2 = prepared("matmul_v2", 2, { trans_x = false, trans_y = false })
--- The matrix product (batched for more than 2 dims; also `mm`).
-- @usage local p = oar.ones(2, 3):matmul(oar.ones(3, 4))
function M.matmul(a, b)
  check_tensor(a, "matmul"); check_tensor(b, "matmul")
  return matmul_v2(a, b)
end
M.mm = M.matmul

local function with_xshape(opname, a, attrs)
  return run(opname, { { "X", a } }, { { "Out", 1 }, { "XShape", 1 } }, attrs)[1]
end

--- The dims in a new order (1-based).
-- @usage local p = oar.zeros(2, 3, 4):permute{3, 1, 2}
function M.permute(a, dims)
  check_tensor(a, "permute")
  local n = #a:shape()
  if type(dims) ~= "table" or #dims ~= n then
    fail(string.format("permute: expected a table of %d dims, got %s", n, type(dims) == "table" and #dims or type(dims)))
  end
  local ax = {}
  for i = 1, n do ax[i] = axis(dims[i], n, "permute") end
  return with_xshape("transpose2", a, { axis = ax })
end

--- Two dims swapped.
-- @usage local tr = oar.zeros(2, 3):transpose(1, 2)
function M.transpose(a, d1, d2)
  check_tensor(a, "transpose")
  local n = #a:shape()
  local perm = {}
  for i = 1, n do perm[i] = i end
  local i, j = axis(d1, n, "transpose") + 1, axis(d2, n, "transpose") + 1
  perm[i], perm[j] = perm[j], perm[i]
  return M.permute(a, perm)
end

--- The transpose of a 2-d tensor.
-- @usage local tr = oar.zeros(2, 3):t()
function M.t(a)
  check_tensor(a, "t")
  local n = #a:shape()
  if n ~= 2 then fail(string.format("t: expects a 2-d tensor, got %d dims", n)) end
  return M.permute(a, { 2, 1 })
end

local function signed_shape(...)
  local first = (...)
  local shape = {}
  if type(first) == "table" then
    for i = 1, #first do shape[i] = first[i] end
  else
    for i = 1, select("#", ...) do shape[i] = select(i, ...) end
  end
  for i, d in ipairs(shape) do
    if type(d) ~= "number" or d % 1 ~= 0 or d < -1 then
      fail(string.format("reshape: size %d is %s, expected an integer >= -1", i, tostring(d)))
    end
  end
  return shape
end
--- A new shape over the same elements (-1 infers one size); shares the tensor's memory (also `view`).
-- @usage local r = oar.arange(1, 7):reshape{2, 3}
function M.reshape(a, ...)
  check_tensor(a, "reshape")
  return with_xshape("reshape2", a, { shape = signed_shape(...) })
end
M.view = M.reshape

--- Drops dim d of size 1 (every dim of size 1 without d).
-- @usage local s = oar.zeros(1, 3):squeeze(1)
function M.squeeze(a, d)
  check_tensor(a, "squeeze")
  local n = #a:shape()
  return with_xshape("squeeze2", a, { axes = d and { axis(d, n, "squeeze") } or {} })
end

--- Inserts a dim of size 1 at d.
-- @usage local u = oar.zeros(3):unsqueeze(1)
function M.unsqueeze(a, d)
  check_tensor(a, "unsqueeze")
  local n = #a:shape()
  if type(d) ~= "number" then fail("unsqueeze: expected a dim") end
  if d < 0 then d = n + 2 + d end
  if d < 1 or d > n + 1 then fail(string.format("unsqueeze: dim %d is out of range for %d dims", d, n)) end
  return with_xshape("unsqueeze2", a, { axes = { d - 1 } })
end

-- ---- reductions --------------------------------------------------------------------

-- a number, unless autograd tracks the result (then a one-element tensor,
-- so that y:backward() works)
local function number_or_tensor(t)
  if rawget(t, "_node") then return t end
  return t:item()
end

local function reduce(opname, who)
  return function(a, d, keepdim)
    check_tensor(a, who)
    local n = #a:shape()
    if d == nil then
      return number_or_tensor(run1(opname, a, { dim = { 0 }, keep_dim = false, reduce_all = true }))
    end
    return run1(opname, a, { dim = { axis(d, n, who) }, keep_dim = keepdim and true or false, reduce_all = false })
  end
end
--- Sum along d (keepdim keeps it as size 1); without d the sum of all, a number (a one-element tensor when autograd records it, so that backward works; also `mean`, `prod`).
-- @usage local s = oar.Tensor({{1, 2}, {3, 4}}):sum(2)
M.sum = reduce("reduce_sum", "sum")
M.mean = reduce("reduce_mean", "mean")
M.prod = reduce("reduce_prod", "prod")

-- 0-based int64 indices -> 1-based
local function one_based(idx)
  return run("elementwise_add", { { "X", idx }, { "Y", scalar_like(1, idx) } }, { { "Out", 1 } }, { axis = -1 })[1]
end
local function zero_based(idx, who)
  if type(idx) == "table" and not is_tensor(idx) then idx = tensor(idx, "int64") end
  check_tensor(idx, who, "the index")
  if idx:dtype() ~= "int64" then idx = M.long(idx) end
  return run("elementwise_sub", { { "X", idx }, { "Y", scalar_like(1, idx) } }, { { "Out", 1 } }, { axis = -1 })[1]
end

--- 1-based indices of the largest values along d; the flat 1-based index without d (also `argmin`).
-- @usage local i = oar.Tensor({{1, 3}, {4, 2}}):argmax(2)
function M.argmax(a, d, keepdim)
  check_tensor(a, "argmax")
  local n = #a:shape()
  if d == nil then
    local i = run1("arg_max", a, { axis = 0, flatten = true, keepdims = false, dtype = 3 })
    return i:item() + 1
  end
  return one_based(run1("arg_max", a, { axis = axis(d, n, "argmax"), keepdims = keepdim and true or false, dtype = 3 }))
end

function M.argmin(a, d, keepdim)
  check_tensor(a, "argmin")
  local n = #a:shape()
  if d == nil then
    local i = run1("arg_min", a, { axis = 0, flatten = true, keepdims = false, dtype = 3 })
    return i:item() + 1
  end
  return one_based(run1("arg_min", a, { axis = axis(d, n, "argmin"), keepdims = keepdim and true or false, dtype = 3 }))
end

local function extreme(opname, argname, who)
  local red = reduce(opname, who)
  return function(a, d, keepdim)
    if d == nil then return red(a) end
    return red(a, d, keepdim), M[argname](a, d, keepdim)
  end
end
--- Largest values along d and their 1-based indices; without d the largest element, a number (also `min`).
-- @usage local v, i = oar.Tensor({{1, 3}, {4, 2}}):max(2)
M.max = extreme("reduce_max", "argmax", "max")
M.min = extreme("reduce_min", "argmin", "min")

--- The p-norm (default 2) of all elements, a number; along d with d.
-- @usage local n = oar.Tensor({3, 4}):norm()   -- 5
function M.norm(a, p, d, keepdim)
  check_tensor(a, "norm")
  local n = #a:shape()
  p = p or 2
  if d == nil then
    return number_or_tensor(run1("p_norm", a, { porder = p, axis = -1, asvector = true, keepdim = false }))
  end
  return run1("p_norm", a, { porder = p, axis = axis(d, n, "norm"), asvector = false, keepdim = keepdim and true or false })
end

-- ---- joining, splitting, selecting: cat, stack, split, index_select, gather,
-- where, sort, topk (lua/oar/eager_select.lua)
require("oar.eager_select").install(M, { run = run, check_tensor = check_tensor, axis = axis,
                                         one_based = one_based, zero_based = zero_based })

-- ---- conversion ------------------------------------------------------------------------

--- The dtype name without an argument; else a copy cast to that dtype (the tensor itself when it has it already; also `float`, `double`, `long`, `int`, `bool`).
-- @usage local d = oar.Tensor({1.5}):type("float64")
function M.type(a, name)
  check_tensor(a, "type")
  if name == nil then return a:dtype() end
  local to = check_dtype(name, "type")
  local from = C.oar_tensor_dtype(a.handle)
  if from == to then return a end
  return run1("cast", a, { in_dtype = from, out_dtype = to })
end
function M.float(a) return M.type(a, "float32") end
function M.double(a) return M.type(a, "float64") end
function M.long(a) return M.type(a, "int64") end
function M.int(a) return M.type(a, "int32") end
function M.bool(a) return M.type(a, "bool") end

-- ---- indexing, views, in-place writes and copies: a[i], a[{...}], narrow,
-- select, fill, zero, copy, clone, contiguous, dim (lua/oar/eager_index.lua)

-- notes where an in-place write happened, by the version it made (the
-- latest 256 writes with grad mode on), for backward's message
local function note_write(a)
  if write_count >= 256 then write_sites, write_count = {}, 0 end
  write_sites[version(a)] = call_site()
  write_count = write_count + 1
end

require("oar.eager_index").install(M, {
  run = run, run1 = run1, check_tensor = check_tensor, axis = axis, get_handle = get_handle, record = record,
  tracked = tracked, note_write = note_write,
  grad_on = function() return grad_enabled end, tracer = function() return tracer end,
})

-- ---- autograd ---------------------------------------------------------------------------------

--- Marks a floating-point tensor as a leaf whose gradient `backward` accumulates in `t.grad` (false undoes it); returns the tensor.
-- @usage local w = oar.randn(3, 2):requires_grad()
function M.requires_grad(a, on)
  check_tensor(a, "requires_grad")
  if on == false then rawset(a, "_rg", nil); return a end
  local dt = a:dtype()
  if dt ~= "float32" and dt ~= "float64" and dt ~= "float16" then
    fail("requires_grad: only floating-point tensors have grads, this one is " .. dt)
  end
  rawset(a, "_rg", true)
  return a
end

--- A tensor sharing the data, outside autograd.
-- @usage local d = oar.ones(2):requires_grad():detach()
function M.detach(a)
  check_tensor(a, "detach")
  return wrap(C.oar_tensor_retain(a.handle))
end

local function restore(was, ok, ...)
  grad_enabled = was
  if not ok then error((...), 0) end
  return ...
end

--- Runs fn() with autograd off (nothing recorded); returns what fn returns.
-- @usage local y = oar.no_grad(function() return oar.ones(2) * 2 end)
function M.no_grad(fn)
  if type(fn) ~= "function" then fail("oar.no_grad: expected a function, got " .. type(fn)) end
  local was = grad_enabled
  grad_enabled = false
  return restore(was, pcall(fn))
end

--- Whether calls are being recorded for autograd.
-- @usage assert(oar.eager.is_grad_enabled())
function M.is_grad_enabled() return grad_enabled end

-- backward (lua/oar/autograd.lua) and save / load (lua/oar/eager_io.lua)
require("oar.autograd").install(M, {
  exec = exec, get_handle = get_handle, handle_from_desc = handle_from_desc, tracked = tracked,
  version = version, fail = fail, check_tensor = check_tensor, full = M.full, record = record,
  is_tensor = is_tensor, write_sites = function() return write_sites end,
  set_grad_enabled = function(on) local was = grad_enabled; grad_enabled = on; return was end,
  SPEC_XY = SPEC_XY, SPEC_OUT = SPEC_OUT, EMPTY = EMPTY,
})
require("oar.eager_io").install(M)

-- ---- methods ---------------------------------------------------------------------------------

local METHODS = {
  "add", "sub", "mul", "div", "pow", "neg", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge",
  "matmul", "mm", "t", "transpose", "permute", "reshape", "view", "squeeze", "unsqueeze",
  "sum", "mean", "prod", "max", "min", "argmax", "argmin", "norm",
  "exp", "log", "sqrt", "abs", "tanh", "sigmoid", "relu", "floor", "ceil", "sin", "cos", "square", "rsqrt",
  "reciprocal", "sign", "log1p", "round", "softmax", "clamp",
  "split", "narrow", "select", "index_select", "gather", "sort", "topk",
  "fill", "zero", "copy", "clone", "float", "double", "long", "int", "bool", "type", "contiguous", "dim",
  "nDimension", "requires_grad", "detach", "backward",
}
for _, name in ipairs(METHODS) do
  local f = M[name]
  assert(f, name)
  Tensor[name] = f
end

return M
