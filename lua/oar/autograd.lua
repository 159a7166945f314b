--- Eager autograd's backward pass (docs/eager.md, "Autograd"), part of
-- oar.eager (eager.lua installs it and hands it its internals).
--
-- `y:backward()` walks the ops recorded on the tape that y depends on,
-- latest first, asks each one's grad maker for its grad ops (C:
-- oar_eager_grad_ops, the ops append_backward would add; cached per op and
-- mask of inputs that want grads) and runs them, summing the grads of
-- tensors that feed several ops; each grad is released as soon as the op
-- that needed it has run. The versions a recorded op saved are checked
-- against the tensors' buffers (oar_tensor_version): a tensor written in
-- place since is an error naming it, never a wrong gradient.
-- `oar.autograd.grad` returns the gradients of chosen tensors instead; with
-- `create_graph` the grad ops backward runs are recorded on the tape too,
-- so a gradient can be differentiated again through the double-grad ops
-- (docs/eager.md, "Higher-order gradients").
-- @module oar.autograd
local ffi = require("ffi")
local lib = require("oar.lib")
local tensor = require("oar.tensor")

local C = lib.C
local wrap = tensor.wrap

local M = {}

-- eager.lua's internals (install): its op runner, tape helpers and state
local E
local exec, get_handle, handle_from_desc, tracked, version, fail, check_tensor
local SPEC_XY, SPEC_OUT, EMPTY

local add_handle

local function zeros_like(t)
  local out = ffi.new("oar_tensor_t *[1]")
  local shape = t:shape()
  local dims = ffi.new("int64_t[?]", math.max(#shape, 1), shape)
  if C.oar_tensor_new(C.oar_tensor_dtype(t.handle), dims, #shape, out) ~= 0 then fail(lib.last_error()) end
  return wrap(out[0])
end

local function differentiable(t)
  local dt = C.oar_tensor_dtype(t.handle)
  return dt == C.OAR_FP32 or dt == C.OAR_FP64 or dt == C.OAR_FP16
end

-- the grad ops of node's op for the inputs that want grads (cached per mask)
local make_grad_ops
local function grad_ops(node)
  local h = node.h
  local inputs = node.inputs
  -- the mask of inputs that want grads: a number while it fits, else a string
  local key = h.nin <= 48 and 0 or ""
  for i = 1, h.nin do
    local t = inputs[i]
    local want = t and tracked(t) and differentiable(t)
    if h.nin <= 48 then key = key * 2 + (want and 1 or 0) else key = key .. (want and "1" or "0") end
  end
  return h.grads[key] or make_grad_ops(node, key)
end

-- the miss of grad_ops: asks the op's grad maker (kept apart: a function
-- with closures does not compile, and grad_ops runs once per node)
function make_grad_ops(node, key)
  local h, inputs = node.h, node.inputs
  local no_grad = {}
  for i = 1, h.nin do
    local t = inputs[i]
    if not (t and tracked(t) and differentiable(t)) then no_grad[#no_grad + 1] = h.in_names[i] end
  end
  local pp = ffi.new("oar_op_desc_t **[1]")
  local pn = ffi.new("int[1]")
  local arr = lib.cstrings(no_grad)
  if C.oar_eager_grad_ops(h.desc, arr, #no_grad, pp, pn) ~= 0 then fail(lib.last_error()) end
  local list = {}
  local ok, err = pcall(function()
    for i = 0, pn[0] - 1 do
      local d = pp[0][i]
      -- an op all of whose outputs are unwanted (a linear grad's forward
      -- op when its incoming gradient wants none) has nothing to do
      local used = false
      for s = 0, C.oar_op_desc_num_outputs(d) - 1 do
        local slot = C.oar_op_desc_output_slot(d, s)
        for a = 0, C.oar_op_desc_output_count(d, slot) - 1 do
          if ffi.string(C.oar_op_desc_output_arg(d, slot, a)) ~= EMPTY then used = true end
        end
      end
      if used then list[#list + 1] = handle_from_desc(d, ffi.string(C.oar_op_desc_type(d))) end
    end
  end)
  C.oar_op_descs_free(pp[0], pn[0])
  if not ok then error(err, 0) end
  h.grads[key] = list
  return list
end

-- forward arg name -> ("x"|"y", position)
local function parse_name(name)
  local kind, pos = name:match("^([xy])(%d+)$")
  if kind then return kind, tonumber(pos) end
  return nil
end

-- a grad op's argument name, decoded once: {kind, pos, grad}: "x"/"y" and
-- the forward position for x3, y1 (grad false) and x3@GRAD, y1@GRAD (grad
-- true); {} for anything else (a temporary of the grad ops)
local NAMES = {}
local function name_info(name)
  local d = NAMES[name]
  if d then return d end
  local base = name:match("^(.-)@GRAD$")
  local kind, pos = parse_name(base or name)
  d = kind and { kind, pos, base ~= nil } or {}
  NAMES[name] = d
  return d
end

-- grad op inputs whose shape alone is read, not their data (Fluid's
-- NoNeedBufferVars): a write into them since the forward op does not matter
local SHAPE_ONLY = {
  elementwise_add_grad = { X = true, Y = true }, elementwise_sub_grad = { X = true, Y = true },
  slice_grad = { Input = true }, concat_grad = { X = true }, mean_grad = { X = true },
  reduce_sum_grad = { X = true }, reduce_mean_grad = { X = true }, lookup_table_v2_grad = { W = true },
  gather_grad = { X = true }, index_select_grad = { X = true },
}

-- drops a tensor backward made and no one else holds, now
local function release(t)
  local hnd = rawget(t, "handle")
  if hnd then
    ffi.gc(hnd, nil)
    C.oar_tensor_free(hnd)
    rawset(t, "handle", nil)
  end
end

-- a tensor a recorded op saved (input or output pos) must be as it was
local function check_saved(node, kind, pos, shape_only)
  local t = kind == "x" and node.inputs[pos] or node.outputs[pos]
  local saved = kind == "x" and node.vin[pos] or node.vout[pos]
  if not t or shape_only or version(t) == saved then return t end
  local h = node.h
  local names = kind == "x" and h.in_spec or h.out_spec
  -- the slot the position falls in
  local slot, n = "?", 0
  for _, sp in ipairs(names or {}) do
    n = n + sp[2]
    if pos <= n then slot = sp[1]; break end
  end
  local site = E.write_sites()[version(t)]
  local what = rawget(t, "name") and ("'" .. tostring(rawget(t, "name")) .. "' ") or ""
  fail(string.format("backward: the tensor %s(%s [%s]) that op '%s' %s as %s was written in place%s after the op " ..
    "ran, so its recorded gradient would be wrong; write into a clone(), or before the op uses it",
    what, t:dtype(), table.concat(t:shape(), ", "), h.type, kind == "x" and "read" or "made", slot,
    site and (" at " .. site:gsub(": $", "")) or " (inside oar.no_grad, an optimizer step or by an op)"))
end

-- ---- create_graph: grad ops recorded on the tape ---------------------------------------------

-- The grad op gh with its arguments renamed x1.., y1.. by position (as a
-- forward op's are), so that running it can be recorded on the tape and a
-- later backward asks its grad maker (the double-grad maker) for its grads.
-- Always recorded (has_grad): a grad op without a grad maker is an error
-- naming it when a backward reaches it, never a silent zero.
local function positional(gh)
  local p = gh.positional
  if p then return p end
  local dp = ffi.new("oar_op_desc_t *[1]")
  if C.oar_op_desc_new(gh.type, dp) ~= 0 then fail(lib.last_error()) end
  local desc = ffi.gc(dp[0], C.oar_op_desc_free)
  local src = gh.desc
  local function copy(n, count, slot_at, arg_at, set, prefix)
    local spec, k = {}, 0
    for s = 0, n - 1 do
      local slot = slot_at(src, s)
      local list = {}
      for a = 0, count(src, slot) - 1 do
        k = k + 1
        list[#list + 1] = ffi.string(arg_at(src, slot, a)) == EMPTY and EMPTY or (prefix .. k)
      end
      if set(desc, slot, lib.cstrings(list), #list) ~= 0 then fail(lib.last_error()) end
      spec[#spec + 1] = { ffi.string(slot), #list }
    end
    return spec
  end
  local in_spec = copy(C.oar_op_desc_num_inputs(src), C.oar_op_desc_input_count, C.oar_op_desc_input_slot,
    C.oar_op_desc_input_arg, C.oar_op_desc_set_input, "x")
  local out_spec = copy(C.oar_op_desc_num_outputs(src), C.oar_op_desc_output_count, C.oar_op_desc_output_slot,
    C.oar_op_desc_output_arg, C.oar_op_desc_set_output, "y")
  -- (oar_op_desc_copy_attrs is in the op-authoring API, declared on demand)
  if lib.load_op_api().oar_op_desc_copy_attrs(desc, src) ~= 0 then fail(lib.last_error()) end
  p = handle_from_desc(desc, gh.type)
  p.in_spec, p.out_spec, p.has_grad, p.keep = in_spec, out_spec, true, desc
  gh.positional = p
  return p
end

-- the recorded ops the tensors ys depend on, latest first; with `want` (a
-- set of tensors) only those through which some of them reach ys
local function tape_of(ys, want)
  local nodes, seen = {}, {}
  local stack = {}
  for i = 1, #ys do stack[i] = ys[i] end
  while #stack > 0 do
    local t = table.remove(stack)
    local node = rawget(t, "_node")
    if node and not seen[node] then
      seen[node] = true
      nodes[#nodes + 1] = node
      for i = 1, math.max(#node.inputs, node.h.nin) do
        local x = node.inputs[i]
        if x then stack[#stack + 1] = x end
      end
    end
  end
  if want then
    -- an op's inputs were made by ops recorded before it: ascending ids
    table.sort(nodes, function(a, b) return a.id < b.id end)
    local reach, kept = {}, {}
    for _, node in ipairs(nodes) do
      for i = 1, math.max(#node.inputs, node.h.nin) do
        local x = node.inputs[i]
        if x and (want[x] or (rawget(x, "_node") and reach[rawget(x, "_node")])) then reach[node] = true; break end
      end
      if reach[node] then kept[#kept + 1] = node end
    end
    nodes = kept
  end
  table.sort(nodes, function(a, b) return a.id > b.id end)
  return nodes
end

-- The backward pass from ys (their grads gs) over the tape: returns the
-- table tensor -> grad it leaves (leaves' and, with `want`, the wanted
-- tensors'). create: record the grad ops run (create_graph).
local function run_backward(ys, gs, made, want, create)
  local nodes = tape_of(ys, want)
  local grads = setmetatable({}, { __mode = "k" })
  local keep = {}   -- the wanted tensors' grads, kept as their ops are passed
  local function add(a, b)
    add_handle = add_handle or get_handle("elementwise_add", SPEC_XY, SPEC_OUT, { axis = -1 })
    local ins = { a, b }
    local res = exec(add_handle, ins)
    if create then E.record(add_handle, ins, res) end
    made[res[1]] = true
    return res[1]
  end
  for i, y in ipairs(ys) do grads[y] = grads[y] and add(grads[y], gs[i]) or gs[i] end
  for _, node in ipairs(nodes) do
    local any = false
    for pos = 1, node.h.nout do if node.outputs[pos] and grads[node.outputs[pos]] then any = true end end
    if any then
      local temps = {}
      -- an output written since: its recorded history no longer computes it
      for pos = 1, node.h.nout do check_saved(node, "y", pos) end
      for _, gh in ipairs(grad_ops(node)) do
        local ins = {}
        local no_buf = SHAPE_ONLY[gh.type]
        for i = 1, gh.nin do
          local name = gh.in_names[i]
          if name ~= EMPTY then
            local v = temps[name]
            if v == nil then
              local d = name_info(name)
              local kind, pos = d[1], d[2]
              if kind and d[3] then
                if kind == "y" then
                  local o = node.outputs[pos]
                  v = grads[o] or zeros_like(o)
                end
              elseif kind then
                v = check_saved(node, kind, pos, no_buf and no_buf[gh.in_slots[i]])
              end
            end
            ins[i] = v
          end
        end
        local run_h = create and positional(gh) or gh
        local res = exec(run_h, ins)
        if create then E.record(run_h, ins, res) end
        for i = 1, gh.nout do
          local name = gh.out_names[i]
          local r = res[i]
          if name ~= EMPTY and r then
            made[r] = true
            if temps[name] then r = add(temps[name], r) end
            temps[name] = r
          end
        end
      end
      -- the grads of this op's inputs join those from other uses
      for name, t in pairs(temps) do
        local d = name_info(name)
        local kind, pos = d[1], d[2]
        if kind == "x" and d[3] then
          local x = node.inputs[pos]
          if grads[x] then t = add(grads[x], t) end
          grads[x] = t
        end
      end
      -- the grads of this op's outputs are used up (a wanted one is kept);
      -- with create they stay: the recorded grad ops hold them
      for pos = 1, node.h.nout do
        local o = node.outputs[pos]
        local gt = o and grads[o]
        if gt then
          grads[o] = nil
          if want and want[o] then keep[o] = gt
          elseif made[gt] and not create then release(gt) end
        end
      end
    end
  end
  for t, gt in pairs(keep) do grads[t] = gt end
  return grads
end

-- runs fn with grad mode `on`, restoring it after, errors included
local function with_grad_mode(on, fn, ...)
  local was = E.set_grad_enabled(on)
  local ok, res = pcall(fn, ...)
  E.set_grad_enabled(was)
  if not ok then error(res, 0) end
  return res
end

local function check_opts(opts, who, known)
  if opts == nil then return {} end
  if type(opts) ~= "table" then fail(who .. ": options must be a table, got " .. type(opts)) end
  for k, v in pairs(opts) do
    if not known[k] then fail(string.format("%s: unknown option '%s'", who, tostring(k))) end
    if k ~= "grad_outputs" and type(v) ~= "boolean" then
      fail(string.format("%s: option '%s' must be a boolean, got %s", who, k, type(v)))
    end
  end
  return opts
end

-- the gradient of y: g, or ones when y has one element
local function seed_grad(y, g, who, made)
  if g == nil then
    if y:numel() ~= 1 then
      fail(string.format("%s: y has %d elements (shape [%s]); give its gradient%s", who,
        y:numel(), table.concat(y:shape(), ", "), who == "backward" and ": y:backward(g)" or " (grad_outputs)"))
    end
    g = E.full(y:shape(), 1, y:dtype())
    made[g] = true
    return g
  end
  return check_tensor(g, who, "the gradient")
end

local BACKWARD_OPTS = { create_graph = true, retain_graph = true }

--- Runs the grad ops of every recorded op y depends on, last first; leaves' grads accumulate in `x.grad`. y one element, or give its gradient g. Options (`y:backward{...}` or `y:backward(g, {...})`): `create_graph` records the grad ops on the tape too, so that the grads can be differentiated again (docs/eager.md, "Higher-order gradients"); `retain_graph` is accepted for PyTorch's sake (the tape is always kept).
-- @usage local x = oar.Tensor({1, 2}):requires_grad(); (x * x):sum():backward(); print(x.grad)
function M.backward(y, g, opts)
  check_tensor(y, "backward")
  if opts == nil and type(g) == "table" and not E.is_tensor(g) then g, opts = nil, g end
  opts = check_opts(opts, "backward", BACKWARD_OPTS)
  local create = opts.create_graph == true
  local made = setmetatable({}, { __mode = "k" })
  g = seed_grad(y, g, "backward", made)
  if not tracked(y) then fail("backward: y does not depend on a tensor that requires grad") end
  local grads = with_grad_mode(create, run_backward, { y }, { g }, made, nil, create)
  -- leaves keep theirs, accumulated over backward calls
  with_grad_mode(create, function()
    for t, gt in pairs(grads) do
      if rawget(t, "_rg") and not rawget(t, "_node") then
        local old = rawget(t, "grad")
        if old then
          local ins = { old, gt }
          add_handle = add_handle or get_handle("elementwise_add", SPEC_XY, SPEC_OUT, { axis = -1 })
          gt = exec(add_handle, ins)[1]
          if create then E.record(add_handle, ins, { gt }) end
        end
        rawset(t, "grad", gt)
      end
    end
  end)
end

local function list_of(v, who, what)
  if E.is_tensor(v) then return { v } end
  if type(v) ~= "table" or #v == 0 then fail(string.format("%s: %s must be a tensor or a list of tensors", who, what)) end
  for i = 1, #v do check_tensor(v[i], who, what .. "[" .. i .. "]") end
  return v
end

local GRAD_OPTS = { grad_outputs = true, create_graph = true, retain_graph = true, allow_unused = true }

--- The gradients of `outputs` (a tensor or a list) with respect to `inputs` (a tensor or a list), as a list of tensors; `x.grad` is left alone. Options: `grad_outputs` (a tensor or list, the outputs' gradients; ones where an output has one element), `create_graph` (record the grad ops, so the gradients can be differentiated again), `retain_graph` (accepted; the tape is always kept), `allow_unused` (nil for an input the outputs do not depend on instead of an error).
-- @usage local x = oar.Tensor({1, 2}, "float64"):requires_grad()
-- local g = oar.autograd.grad((x * x * x):sum(), x, {create_graph = true})[1]   -- 3 x^2
-- local h = oar.autograd.grad(g:sum(), x)[1]                                    -- 6 x
function M.grad(outputs, inputs, opts)
  local who = "autograd.grad"
  local ys, xs = list_of(outputs, who, "outputs"), list_of(inputs, who, "inputs")
  opts = check_opts(opts, who, GRAD_OPTS)
  local create = opts.create_graph == true
  local made = setmetatable({}, { __mode = "k" })
  local gs = {}
  local given = opts.grad_outputs
  if given ~= nil then
    given = E.is_tensor(given) and { given } or given
    if type(given) ~= "table" then fail(who .. ": grad_outputs must be a tensor or a list of tensors") end
  end
  for i, y in ipairs(ys) do
    if not tracked(y) then fail(string.format("%s: outputs[%d] does not depend on a tensor that requires grad", who, i)) end
    gs[i] = seed_grad(y, given and given[i], who, made)
  end
  local want = {}
  for i, x in ipairs(xs) do
    if not tracked(x) then fail(string.format("%s: inputs[%d] does not require grad", who, i)) end
    want[x] = true
  end
  local grads = with_grad_mode(create, run_backward, ys, gs, made, want, create)
  local res = {}
  for i, x in ipairs(xs) do
    res[i] = grads[x]
    if res[i] == nil and not opts.allow_unused then
      fail(string.format("%s: the outputs do not depend on inputs[%d] (shape [%s]); pass allow_unused = true for nil",
        who, i, table.concat(x:shape(), ", ")))
    end
  end
  return res
end

--- Takes eager.lua's internals and puts backward into oar.eager (eager.lua calls it).
-- @tparam table eager the oar.eager module
-- @tparam table internals exec, get_handle, handle_from_desc, tracked, version, fail, check_tensor, full, record, is_tensor, write_sites(), set_grad_enabled(on) (returns the old setting), SPEC_XY, SPEC_OUT, EMPTY
-- @local
function M.install(eager, internals)
  E = internals
  exec, get_handle, handle_from_desc = E.exec, E.get_handle, E.handle_from_desc
  tracked, version, fail, check_tensor = E.tracked, E.version, E.fail, E.check_tensor
  SPEC_XY, SPEC_OUT, EMPTY = E.SPEC_XY, E.SPEC_OUT, E.EMPTY
  eager.backward = M.backward
  eager._internal_source(debug.getinfo(1, "S").source)   -- errors point at the user's line
end

return M
