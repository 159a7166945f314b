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
local function add_grads(a, b)
  add_handle = add_handle or get_handle("elementwise_add", SPEC_XY, SPEC_OUT, { axis = -1 })
  return exec(add_handle, { a, b })[1]
end

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
      list[#list + 1] = handle_from_desc(d, ffi.string(C.oar_op_desc_type(d)))
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

--- Runs the grad ops of every recorded op y depends on, last first; leaves' grads accumulate in `x.grad`. y one element, or give its gradient g.
-- @usage local x = oar.Tensor({1, 2}):requires_grad(); (x * x):sum():backward(); print(x.grad)
function M.backward(y, g)
  check_tensor(y, "backward")
  local made_here = false
  if g == nil then
    if y:numel() ~= 1 then
      fail(string.format("backward: y has %d elements (shape [%s]); give its gradient: y:backward(g)",
        y:numel(), table.concat(y:shape(), ", ")))
    end
    g = E.full(y:shape(), 1, y:dtype())
    made_here = true
  else
    check_tensor(g, "backward", "the gradient")
  end
  if not tracked(y) then fail("backward: y does not depend on a tensor that requires grad") end
  -- the recorded ops y depends on, latest first
  local nodes, seen = {}, {}
  local stack = { y }
  while #stack > 0 do
    local t = table.remove(stack)
    local node = rawget(t, "_node")
    if node and not seen[node] then
      seen[node] = true
      nodes[#nodes + 1] = node
      for _, x in ipairs(node.inputs) do if x then stack[#stack + 1] = x end end
    end
  end
  table.sort(nodes, function(a, b) return a.id > b.id end)
  local grads = setmetatable({}, { __mode = "k" })
  grads[y] = g
  -- the grads backward makes: each is released as soon as the op that made
  -- the tensor it is the grad of has used it (not left to the collector)
  local made = setmetatable({}, { __mode = "k" })
  if made_here then made[g] = true end
  local was = E.set_grad_enabled(false)
  local ok, err = pcall(function()
    for _, node in ipairs(nodes) do
      local any = false
      for _, o in ipairs(node.outputs) do if grads[o] then any = true end end
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
          local res = exec(gh, ins)
          for i = 1, gh.nout do
            local name = gh.out_names[i]
            local r = res[i]
            if name ~= EMPTY and r then
              made[r] = true
              if temps[name] then r = add_grads(temps[name], r); made[r] = true end
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
            if grads[x] then t = add_grads(grads[x], t); made[t] = true end
            grads[x] = t
          end
        end
        -- the grads of this op's outputs are used up
        for pos = 1, node.h.nout do
          local o = node.outputs[pos]
          local gt = o and grads[o]
          if gt then
            grads[o] = nil
            if made[gt] then release(gt) end
          end
        end
      end
    end
  end)
  E.set_grad_enabled(was)
  if not ok then error(err, 0) end
  -- leaves keep theirs, accumulated over backward calls
  for t, gt in pairs(grads) do
    if rawget(t, "_rg") and not rawget(t, "_node") then
      local old = rawget(t, "grad")
      if old then gt = add_grads(old, gt) end
      rawset(t, "grad", gt)
    end
  end
end

--- Takes eager.lua's internals and puts backward into oar.eager (eager.lua calls it).
-- @tparam table eager the oar.eager module
-- @tparam table internals exec, get_handle, handle_from_desc, tracked, version, fail, check_tensor, full, write_sites(), set_grad_enabled(on) (returns the old setting), SPEC_XY, SPEC_OUT, EMPTY
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
