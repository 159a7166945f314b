-- spec/helpers/op_test.lua — Fluid's OpTest in Lua: build a one-op program
-- through the C API, run it, compare outputs with values the spec computed
-- itself, and compare analytic gradients (the backward pass + grad kernels)
-- with central finite differences.
--
--   local T = require("spec.helpers.op_test")
--   T.check_output{type="relu", inputs={X=T.tensor{{-1, 2}}}, expect={Out={shape={1,2}, data={0, 2}}}}
--   T.check_grad{type="relu", inputs={X=T.tensor{{-1, 2}}}, wrt={"X"}, of={"Out"}}
local ffi = require("ffi")
local lib = require("oar.lib")
local C = lib.C

local M = {}

local DTYPES = { bool = 0, int16 = 1, int32 = 2, int64 = 3, float16 = 4, float32 = 5,
                 float64 = 6, uint8 = 20, int8 = 21 }
local CTYPES = { [0] = "bool", [1] = "int16_t", [2] = "int32_t", [3] = "int64_t",
                 [5] = "float", [6] = "double", [20] = "uint8_t", [21] = "int8_t" }
M.DTYPES = DTYPES

local function check(rc, what)
  if rc ~= 0 then error((what and (what .. ": ") or "") .. lib.last_error(), 3) end
end

-- flattens a nested table, returning data and shape
local function flatten(data)
  local shape, flat = {}, {}
  local probe = data
  while type(probe) == "table" do
    shape[#shape + 1] = #probe
    probe = probe[1]
  end
  local function walk(t, depth)
    if depth > #shape then
      flat[#flat + 1] = t
      return
    end
    assert(type(t) == "table" and #t == shape[depth], "ragged tensor data at depth " .. depth)
    for i = 1, #t do walk(t[i], depth + 1) end
  end
  walk(data, 1)
  return flat, shape
end

-- T.tensor(data, opts): a test value. data nested, or flat with opts.shape.
function M.tensor(data, opts)
  opts = opts or {}
  local flat, shape
  if type(data) == "number" or type(data) == "boolean" then
    flat, shape = { data }, opts.shape or { 1 }
  elseif opts.shape then
    flat, shape = data, opts.shape
  else
    flat, shape = flatten(data)
  end
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  assert(#flat == n, ("tensor data has %d values, shape wants %d"):format(#flat, n))
  return { is_test_tensor = true, data = flat, shape = shape, dtype = opts.dtype, lod = opts.lod }
end

local function is_value(v) return type(v) == "table" and v.is_test_tensor end

-- a C tensor from a test value
function M.to_c(v, dtype_name)
  local dt = DTYPES[v.dtype or dtype_name or "float64"]
  local n = #v.data
  local dims = ffi.new("int64_t[?]", math.max(#v.shape, 1))
  for i, d in ipairs(v.shape) do dims[i - 1] = d end
  local buf = ffi.new(CTYPES[dt] .. "[?]", math.max(n, 1))
  for i = 1, n do
    local x = v.data[i]
    if type(x) == "boolean" then x = x and 1 or 0 end
    buf[i - 1] = x
  end
  local out = ffi.new("oar_tensor_t*[1]")
  check(C.oar_tensor_from_data(dt, dims, #v.shape, buf, out), "tensor")
  local t = ffi.gc(out[0], C.oar_tensor_free)
  if v.lod then
    local levels = #v.lod
    local ptrs = ffi.new("const int64_t*[?]", levels)
    local sizes = ffi.new("int64_t[?]", levels)
    local keep = {}
    for l, offs in ipairs(v.lod) do
      local a = ffi.new("int64_t[?]", #offs)
      for i, o in ipairs(offs) do a[i - 1] = o end
      keep[l] = a
      ptrs[l - 1] = a
      sizes[l - 1] = #offs
    end
    check(C.oar_tensor_set_lod(t, levels, ptrs, sizes), "lod")
  end
  return t
end

-- a plain Lua view {shape, data, dtype, lod} of a C tensor
function M.from_c(t)
  local dt = C.oar_tensor_dtype(t)
  local nd = C.oar_tensor_ndim(t)
  local dims = C.oar_tensor_dims(t)
  local shape = {}
  for i = 0, nd - 1 do shape[i + 1] = tonumber(dims[i]) end
  local n = tonumber(C.oar_tensor_numel(t))
  local data = {}
  local p = ffi.cast(CTYPES[dt] .. "*", C.oar_tensor_data(t))
  for i = 0, n - 1 do
    local x = p[i]
    if dt == 0 then data[i + 1] = x and true or false else data[i + 1] = tonumber(x) end
  end
  local lod = {}
  for l = 0, C.oar_tensor_lod_levels(t) - 1 do
    local sz = tonumber(C.oar_tensor_lod_size(t, l))
    local ld = C.oar_tensor_lod_data(t, l)
    local level = {}
    for i = 0, sz - 1 do level[i + 1] = tonumber(ld[i]) end
    lod[l + 1] = level
  end
  local names = {}
  for k, v in pairs(DTYPES) do names[v] = k end
  return { shape = shape, data = data, dtype = names[dt], lod = lod }
end

local function set_attr(op, optype, name, value)
  local t = C.oar_op_attr_type(optype, name)
  if t < 0 then
    if type(value) == "boolean" then t = 6
    elseif type(value) == "string" then t = 2
    elseif type(value) == "number" then t = (value == math.floor(value)) and 0 or 1
    elseif type(value) == "table" then
      local first = value[1]
      if type(first) == "string" then t = 5
      elseif type(first) == "boolean" then t = 7
      elseif type(first) == "number" and first ~= math.floor(first) then t = 4
      else t = 3 end
    else error("attr " .. name .. ": unsupported value " .. tostring(value), 3) end
  end
  local rc
  if t == 0 then rc = C.oar_op_desc_set_attr_int(op, name, value)
  elseif t == 9 then rc = C.oar_op_desc_set_attr_long(op, name, value)
  elseif t == 1 then rc = C.oar_op_desc_set_attr_float(op, name, value)
  elseif t == 6 then rc = C.oar_op_desc_set_attr_bool(op, name, value and true or false)
  elseif t == 2 then rc = C.oar_op_desc_set_attr_string(op, name, value)
  elseif t == 3 or t == 8 or t == 10 then
    local a = ffi.new("int32_t[?]", math.max(#value, 1), value)
    if t == 3 then rc = C.oar_op_desc_set_attr_ints(op, name, a, #value)
    elseif t == 10 then rc = C.oar_op_desc_set_attr_blocks(op, name, a, #value)
    else rc = C.oar_op_desc_set_attr_block(op, name, value) end
  elseif t == 11 then
    local a = ffi.new("int64_t[?]", math.max(#value, 1), value)
    rc = C.oar_op_desc_set_attr_longs(op, name, a, #value)
  elseif t == 4 then
    local a = ffi.new("float[?]", math.max(#value, 1), value)
    rc = C.oar_op_desc_set_attr_floats(op, name, a, #value)
  elseif t == 7 then
    local a = ffi.new("bool[?]", math.max(#value, 1))
    for i, b in ipairs(value) do a[i - 1] = b end
    rc = C.oar_op_desc_set_attr_bools(op, name, a, #value)
  elseif t == 5 then
    local a = lib.cstrings(value)
    rc = C.oar_op_desc_set_attr_strings(op, name, a, #value)
  end
  check(rc, "attr " .. name)
end

local function declare(block, name, v, dtype_name)
  local out = ffi.new("oar_var_desc_t*[1]")
  check(C.oar_block_var_new(block, name, out), "var " .. name)
  local dims = ffi.new("int64_t[?]", math.max(#v.shape, 1))
  for i, d in ipairs(v.shape) do dims[i - 1] = d end
  check(C.oar_var_desc_set_shape(out[0], dims, #v.shape))
  check(C.oar_var_desc_set_dtype(out[0], DTYPES[v.dtype or dtype_name or "float64"]))
  if v.lod then check(C.oar_var_desc_set_lod_level(out[0], #v.lod)) end
  return out[0]
end
-- declares var `name` in block for the test tensor v (its shape, dtype
-- (default dtype_name, else float64) and LoD level); returns the desc
M.declare = declare

-- append an op with the given named slots ({Slot={names}}) and attrs
function M.append_op(block, optype, inputs, outputs, attrs)
  local out = ffi.new("oar_op_desc_t*[1]")
  check(C.oar_op_desc_new(optype, out), optype)
  local op = out[0]
  for slot, names in pairs(inputs) do
    check(C.oar_op_desc_set_input(op, slot, lib.cstrings(names), #names))
  end
  for slot, names in pairs(outputs) do
    check(C.oar_op_desc_set_output(op, slot, lib.cstrings(names), #names))
  end
  for k, v in pairs(attrs or {}) do set_attr(op, optype, k, v) end
  local rc = C.oar_block_insert_op(block, -1, op)
  if rc ~= 0 then
    local msg = lib.last_error()
    C.oar_op_desc_free(op)
    error(msg, 3)
  end
  return op
end

-- dispensable outputs (inference programs drop them) that the gradient reads
local GRAD_STATE = {
  lstm = { BatchGate = true, BatchCellPreAct = true },
  gru = { BatchGate = true, BatchResetHiddenPrev = true, BatchHidden = true },
}

M.GRAD_STATE = GRAD_STATE

-- Builds the one-op program. Returns prog, feeds {name -> value}, outs {slot -> {names}}.
local function build(spec)
  local dtype = spec.dtype or "float64"
  local pout = ffi.new("oar_program_t*[1]")
  check(C.oar_program_new(pout))
  local prog = ffi.gc(pout[0], C.oar_program_free)
  local block = C.oar_program_block(prog, 0)
  local feeds, in_names = {}, {}
  for slot, val in pairs(spec.inputs or {}) do
    local list = is_value(val) and { val } or val
    in_names[slot] = {}
    for i, v in ipairs(list) do
      assert(is_value(v), "input " .. slot .. " must be T.tensor(...) or a list of them")
      local name = "in_" .. slot .. "_" .. i
      declare(block, name, v, dtype)
      feeds[name] = v
      in_names[slot][i] = name
    end
  end
  local outs = {}
  local wanted = spec.outputs
  if not wanted then
    wanted = {}
    for i = 0, C.oar_op_num_output_slots(spec.type) - 1 do
      local s = ffi.string(C.oar_op_output_slot_at(spec.type, i))
      -- XShape: the *2 shape ops' grads read it (inference models drop it)
      local keep = (GRAD_STATE[spec.type] and GRAD_STATE[spec.type][s]) or s == "XShape"
      if bit.band(C.oar_op_output_flags(spec.type, s), 2) == 0 or keep then wanted[s] = 1 end
    end
  end
  for slot, count in pairs(wanted) do
    outs[slot] = {}
    for i = 1, count do outs[slot][i] = "out_" .. slot .. "_" .. i end
  end
  M.append_op(block, spec.type, in_names, outs, spec.attrs)
  return prog, feeds, outs, in_names
end

local function run(prog, feeds, fetch_names, dtype)
  local eout = ffi.new("oar_executor_t*[1]")
  check(C.oar_executor_new(0, 0, eout))
  local exe = ffi.gc(eout[0], C.oar_executor_free)
  local sout = ffi.new("oar_scope_t*[1]")
  check(C.oar_scope_new(sout))
  local scope = ffi.gc(sout[0], C.oar_scope_free)
  local names, tensors, keep = {}, {}, {}
  for name, v in pairs(feeds) do
    names[#names + 1] = name
    local t = M.to_c(v, dtype)
    keep[#keep + 1] = t
    tensors[#names] = t
  end
  local fnames = ffi.new("const char*[?]", math.max(#names, 1), names)
  local ftensors = ffi.new("oar_tensor_t*[?]", math.max(#names, 1))
  for i, t in ipairs(tensors) do ftensors[i - 1] = t end
  local out = ffi.new("oar_tensor_t*[?]", math.max(#fetch_names, 1))
  local rc = C.oar_executor_run(exe, prog, 0, scope, #names, fnames, ftensors,
                                #fetch_names, lib.cstrings(fetch_names), out)
  if rc ~= 0 then error(lib.last_error(), 3) end
  local res = {}
  for i = 1, #fetch_names do
    local t = ffi.gc(out[i - 1], C.oar_tensor_free)
    res[i] = M.from_c(t)
  end
  return res
end
M.run_program = run

-- T.run{type=, inputs=, attrs=, outputs=} -> {Slot = {value, ...}}
function M.run(spec)
  local prog, feeds, outs = build(spec)
  local fetch, where = {}, {}
  for slot, names in pairs(outs) do
    for i, n in ipairs(names) do
      fetch[#fetch + 1] = n
      where[#fetch] = { slot, i }
    end
  end
  local got = run(prog, feeds, fetch, spec.dtype)
  local res = {}
  for i, v in ipairs(got) do
    local slot, idx = where[i][1], where[i][2]
    res[slot] = res[slot] or {}
    res[slot][idx] = v
  end
  return res
end

local function close(a, b, atol, rtol)
  if type(a) == "boolean" or type(b) == "boolean" then return a == b end
  if a ~= a or b ~= b then return false end
  return math.abs(a - b) <= atol + rtol * math.abs(b)
end

-- asserts equality of a fetched value and an expected {shape=, data=, lod=}
function M.assert_close(got, want, atol, rtol, label)
  label = label or "value"
  atol, rtol = atol or 1e-6, rtol or 0
  if want.shape then
    assert(#got.shape == #want.shape and table.concat(got.shape, ",") == table.concat(want.shape, ","),
      ("%s: shape [%s], expected [%s]"):format(label, table.concat(got.shape, ", "), table.concat(want.shape, ", ")))
  end
  assert(#got.data == #want.data, ("%s: %d values, expected %d"):format(label, #got.data, #want.data))
  for i = 1, #want.data do
    if not close(got.data[i], want.data[i], atol, rtol) then
      error(("%s: element %d is %s, expected %s (atol %g, rtol %g)"):format(
        label, i, tostring(got.data[i]), tostring(want.data[i]), atol, rtol), 2)
    end
  end
  if want.lod then
    for l, level in ipairs(want.lod) do
      assert(got.lod[l] and table.concat(got.lod[l], ",") == table.concat(level, ","),
        ("%s: LoD level %d is {%s}, expected {%s}"):format(label, l,
          got.lod[l] and table.concat(got.lod[l], ",") or "", table.concat(level, ",")))
    end
  end
end

function M.check_output(spec)
  local res = M.run(spec)
  for slot, want in pairs(spec.expect) do
    local list = want.data and { want } or want
    for i, w in ipairs(list) do
      assert(res[slot] and res[slot][i], "no output " .. slot .. "[" .. i .. "]")
      M.assert_close(res[slot][i], w, spec.atol, spec.rtol, spec.type .. " " .. slot .. "[" .. i .. "]")
    end
  end
  return res
end

-- loss = sum over `of` outputs of mean(output), appended to the program
local function append_loss(prog, outs, of)
  local block = C.oar_program_block(prog, 0)
  local means = {}
  for _, slot in ipairs(of) do
    for i, name in ipairs(outs[slot] or error("no output slot " .. slot)) do
      local m = "mean_" .. slot .. "_" .. i
      M.append_op(block, "mean", { X = { name } }, { Out = { m } }, {})
      means[#means + 1] = m
    end
  end
  if #means == 1 then return means[1] end
  M.append_op(block, "sum", { X = means }, { Out = { "loss" } }, {})
  return "loss"
end

local numel = require("spec.helpers.index").numel

-- T.check_grad{type=, inputs=, attrs=, outputs=, wrt={...}, of={...}, delta=, max_rel=, no_grad=}
-- The analytic gradients of the loss (sum of the means of the `of` outputs)
-- with respect to the `wrt` inputs, through the backward pass and the grad
-- kernels. Returns the gradients (one per input, in slot order), the input
-- names and the feeds.
local function analytic_grads(spec)
  local of = spec.of or { "Out" }
  local bprog, feeds, outs, in_names = build(spec)
  local bloss = append_loss(bprog, outs, of)
  local wrt_names = {}
  for _, slot in ipairs(spec.wrt) do
    for _, n in ipairs(in_names[slot] or error("no input slot " .. slot)) do wrt_names[#wrt_names + 1] = n end
  end
  local no_grad = {}
  for _, slot in ipairs(spec.no_grad or {}) do
    for _, n in ipairs(in_names[slot] or {}) do no_grad[#no_grad + 1] = n end
  end
  local grads = ffi.new("char**[1]")
  check(C.oar_backward_gradients(bprog, lib.cstrings({ bloss }), 1, nil,
        lib.cstrings(wrt_names), #wrt_names, lib.cstrings(no_grad), #no_grad, grads), "backward")
  local gnames = {}
  for i = 1, #wrt_names do
    local p = grads[0][i - 1]
    assert(p ~= nil, "no gradient path to " .. wrt_names[i])
    gnames[i] = ffi.string(p)
  end
  C.oar_strings_free(grads[0], #wrt_names)
  return run(bprog, feeds, gnames, spec.dtype), wrt_names, feeds
end
M.analytic_grads = analytic_grads

function M.check_grad(spec)
  local of = spec.of or { "Out" }
  local delta = spec.delta or 0.005
  local max_rel = spec.max_rel or 0.005
  -- forward program for finite differences
  local fprog, _, outs = build(spec)
  local floss = append_loss(fprog, outs, of)
  local analytic, wrt_names, feeds = analytic_grads(spec)
  for w, name in ipairs(wrt_names) do
    local v = feeds[name]
    local a = analytic[w]
    assert(numel(a.shape) == #v.data, name .. ": gradient shape differs from the input's")
    local orig = v.data
    local worst, worst_i, worst_a, worst_n = 0, 0, 0, 0
    for i = 1, #orig do
      local saved = orig[i]
      orig[i] = saved + delta
      local lp = run(fprog, feeds, { floss }, spec.dtype)[1].data[1]
      orig[i] = saved - delta
      local lm = run(fprog, feeds, { floss }, spec.dtype)[1].data[1]
      orig[i] = saved
      local num = (lp - lm) / (2 * delta)
      local denom = math.abs(a.data[i])
      if denom < 1e-3 then denom = 1 end
      local rel = math.abs(a.data[i] - num) / denom
      if rel > worst then worst, worst_i, worst_a, worst_n = rel, i, a.data[i], num end
    end
    if worst > max_rel then
      error(("%s: gradient of %s (%s) element %d: analytic %.8g vs numeric %.8g, relative error %.3g > %g"):format(
        spec.type, spec.wrt[1], name, worst_i, worst_a, worst_n, worst, max_rel), 2)
    end
  end
  return true
end

return M
