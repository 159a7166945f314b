-- spec/helpers/sequence_grad.lua — a weighted gradient check for ops whose
-- plain mean(output) has a trivial gradient (sequence_softmax sums to 1 per
-- sequence) or hides errors that cancel (recurrent cells).
--
--   local W = require("spec.helpers.sequence_grad")
--   W.check{type=, inputs={Slot=T.tensor(...)}, attrs=, outputs=, wrt={"X"}, of={"Out"},
--           seed=, delta=, max_rel=}
--
-- loss = sum over `of` outputs of mean(w_o * output), the weights w_o fixed
-- pseudo-random values in [-2, 2). The analytic gradients come from the C
-- backward pass and the grad kernels; the numeric ones from central
-- differences of the same forward program (float64). The relative error
-- rule is OpTest's: |a - n| / max(|a|, floor 1 when |a| < 1e-3).
local ffi = require("ffi")
local lib = require("oar.lib")
local T = require("spec.helpers.op_test")
local C = lib.C

local M = {}

local function check(rc, what)
  if rc ~= 0 then error((what and (what .. ": ") or "") .. lib.last_error(), 3) end
end

local function weights(n, seed)
  local s, out = seed, {}
  for i = 1, n do
    s = (s * 1103515245 + 12345) % 2147483648
    out[i] = (s / 1073741824 - 1) * 2
  end
  return out
end

local declare = T.declare

local numel = require("spec.helpers.index").numel

-- program: the op, then w * output -> mean for each `of` output, summed
local function build(spec, out_shapes, wvals)
  local p = ffi.new("oar_program_t*[1]")
  check(C.oar_program_new(p))
  local prog = ffi.gc(p[0], C.oar_program_free)
  local block = C.oar_program_block(prog, 0)
  local feeds, in_names = {}, {}
  for slot, v in pairs(spec.inputs) do
    local name = "in_" .. slot
    declare(block, name, v)
    feeds[name] = v
    in_names[slot] = { name }
  end
  local outs = {}
  for slot, count in pairs(spec.outputs) do
    outs[slot] = {}
    for i = 1, count do outs[slot][i] = "out_" .. slot .. "_" .. i end
  end
  T.append_op(block, spec.type, in_names, outs, spec.attrs)
  local means = {}
  for k, slot in ipairs(spec.of) do
    local wname = "w_" .. slot
    local wv = T.tensor(wvals[k], { shape = out_shapes[k] })
    declare(block, wname, wv)
    feeds[wname] = wv
    T.append_op(block, "elementwise_mul", { X = { outs[slot][1] }, Y = { wname } }, { Out = { "wo_" .. slot } }, {})
    T.append_op(block, "mean", { X = { "wo_" .. slot } }, { Out = { "m_" .. slot } }, {})
    means[#means + 1] = "m_" .. slot
  end
  local loss = means[1]
  if #means > 1 then
    T.append_op(block, "sum", { X = means }, { Out = { "loss" } }, {})
    loss = "loss"
  end
  return prog, feeds, in_names, loss
end

function M.check(spec)
  local of = spec.of or { "Out" }
  spec.of = of
  local delta, max_rel = spec.delta or 1e-4, spec.max_rel or 1e-4
  if not spec.outputs then
    spec.outputs = {}
    for i = 0, C.oar_op_num_output_slots(spec.type) - 1 do
      local s = ffi.string(C.oar_op_output_slot_at(spec.type, i))
      local keep = require("spec.helpers.op_test").GRAD_STATE[spec.type]
      if bit.band(C.oar_op_output_flags(spec.type, s), 2) == 0 or (keep and keep[s]) then spec.outputs[s] = 1 end
    end
  end
  -- output shapes from one plain run
  local res = T.run{ type = spec.type, inputs = spec.inputs, attrs = spec.attrs, outputs = spec.outputs }
  local shapes, wvals = {}, {}
  for k, slot in ipairs(of) do
    shapes[k] = res[slot][1].shape
    wvals[k] = weights(numel(shapes[k]), (spec.seed or 11) + 17 * k)
  end
  local fprog, feeds, in_names, floss = build(spec, shapes, wvals)
  local bprog, _, _, bloss = build(spec, shapes, wvals)
  local wrt = {}
  for _, slot in ipairs(spec.wrt) do wrt[#wrt + 1] = in_names[slot][1] end
  local no_grad = {}
  for k, slot in ipairs(of) do no_grad[k] = "w_" .. slot end
  local grads = ffi.new("char**[1]")
  check(C.oar_backward_gradients(bprog, lib.cstrings({ bloss }), 1, nil, lib.cstrings(wrt), #wrt,
    lib.cstrings(no_grad), #no_grad, grads), "backward")
  local gnames = {}
  for i = 1, #wrt do
    local p = grads[0][i - 1]
    assert(p ~= nil, "no gradient path to " .. wrt[i])
    gnames[i] = ffi.string(p)
  end
  C.oar_strings_free(grads[0], #wrt)
  local analytic = T.run_program(bprog, feeds, gnames)
  for w, name in ipairs(wrt) do
    local v = feeds[name]
    local a = analytic[w]
    assert(#a.data == #v.data, name .. ": gradient has " .. #a.data .. " values, the input " .. #v.data)
    for i = 1, #v.data do
      local saved = v.data[i]
      v.data[i] = saved + delta
      local lp = T.run_program(fprog, feeds, { floss })[1].data[1]
      v.data[i] = saved - delta
      local lm = T.run_program(fprog, feeds, { floss })[1].data[1]
      v.data[i] = saved
      local num = (lp - lm) / (2 * delta)
      local denom = math.abs(a.data[i])
      if denom < 1e-3 then denom = 1 end
      local rel = math.abs(a.data[i] - num) / denom
      if rel > max_rel then
        error(("%s: d loss / d %s element %d: analytic %.10g vs numeric %.10g (relative error %.3g > %g)"):format(
          spec.type, spec.wrt[w], i, a.data[i], num, rel, max_rel), 2)
      end
    end
  end
  return true
end

return M
