--- Fluid's RecomputeOptimizer: trades compute for memory. After the
-- backward pass, the forward ops between two consecutive checkpoints are
-- copied (their outputs renamed "<var>@RECOMPUTE") and inserted right
-- before the first grad op that reads one of those outputs, and the grad
-- ops read the copies. The forward originals then die at their last
-- forward use (the executor's memory plan frees them), so only the
-- checkpoints live from the forward pass to the backward pass.
-- Ops that own sub-blocks, write persistable variables or draw random
-- numbers (dropout, ...) are not recomputed: their outputs stay alive.
-- @module oar.recompute
local framework = require("oar.framework")
local argcheck = require("oar.argcheck")

local raise, describe = framework.raise, framework.describe

local M = {}

local Recompute = {}
Recompute.__index = Recompute

-- ops whose second run would differ from the first
local RANDOM = { dropout = true, uniform_random = true, gaussian_random = true, truncated_gaussian_random = true,
                 sampling_id = true, random_crop = true, uniform_random_batch_size_like = true,
                 gaussian_random_batch_size_like = true }

--- Recompute around an inner optimizer (Fluid's RecomputeOptimizer).
-- Set the checkpoints with `_set_checkpoints` before minimize.
-- @param inner the inner optimizer
-- @treturn RecomputeOptimizer
-- @usage local opt = oar.optimizer.RecomputeOptimizer(oar.optimizer.SGD(0.1)); opt:_set_checkpoints({h1, h2}); opt:minimize(loss)
function M.RecomputeOptimizer(inner)
  if type(inner) == "table" and inner.inner_optimizer ~= nil then
    argcheck.keys("oar.optimizer.RecomputeOptimizer", inner, "inner_optimizer")
    inner = inner.inner_optimizer
  end
  if type(inner) ~= "table" or type(inner.backward) ~= "function" then
    raise("RecomputeOptimizer: 'inner_optimizer' must be an optimizer, got " .. describe(inner))
  end
  return setmetatable({ inner = inner, checkpoints = nil }, Recompute)
end

--- The checkpoints: forward variables kept from the forward pass (Fluid's
-- `_set_checkpoints`).
-- @tparam {Variable|string,...} checkpoints
-- @usage opt:_set_checkpoints({fc1, fc3})
function Recompute:_set_checkpoints(checkpoints)
  if type(checkpoints) ~= "table" or framework.is_variable(checkpoints) then
    raise("RecomputeOptimizer:_set_checkpoints: expected a list of Variables, got " .. describe(checkpoints))
  end
  self.checkpoints = framework.names_of(checkpoints, "RecomputeOptimizer:_set_checkpoints", "checkpoints")
end

local function has_block_attr(op)
  for _, n in ipairs(op:attr_names()) do
    local t = op:attr_type(n)
    if t == "BLOCK" or t == "BLOCKS" then return true end
  end
  return false
end

local function recomputable(gb, op)
  if RANDOM[op.type] or has_block_attr(op) then return false end
  for _, n in ipairs(op:output_arg_names()) do
    local v = gb:has_var(n) and gb:var(n)
    if v and v.persistable then return false end
  end
  return true
end

-- index (1-based) of the last op in ops[1..nfwd] writing `name`
local function producer(ops, nfwd, name)
  for i = nfwd, 1, -1 do
    for _, n in ipairs(ops[i]:output_arg_names()) do if n == name then return i end end
  end
end

local function reads_any(op, set)
  for _, n in ipairs(op:input_arg_names()) do if set[n] then return true end end
  return false
end

-- Rewrites block `gb` whose first nfwd ops are the forward pass.
local function rewrite(gb, nfwd, checkpoints)
  local ops = gb:ops()
  local is_cp, pos = {}, {}
  for _, name in ipairs(checkpoints) do
    is_cp[name] = true
    local p = producer(ops, nfwd, name)
    if not p then raise("RecomputeOptimizer: checkpoint '" .. name .. "' is not computed by the forward pass") end
    pos[#pos + 1] = p
  end
  table.sort(pos)
  local recomputed = 0
  for j = 1, #pos - 1 do
    ops = gb:ops()
    local rename, copies = {}, {}
    for i = pos[j] + 1, pos[j + 1] do
      local op = ops[i]
      if recomputable(gb, op) then
        local any = false
        for _, n in ipairs(op:output_arg_names()) do
          if n ~= "@EMPTY@" and not is_cp[n] then rename[n] = n .. "@RECOMPUTE"; any = true end
        end
        if any then copies[#copies + 1] = op end   -- a checkpoint's own op is not run again
      end
    end
    local first
    for i = nfwd + 1, #ops do
      if reads_any(ops[i], rename) then first = i break end
    end
    if first then
      for from, to in pairs(rename) do
        local v = gb:var(from)
        gb:create_var{ name = to, shape = v.shape, dtype = v.dtype, lod_level = v.lod_level, stop_gradient = true }
      end
      local at = first - 1   -- 0-based: right before the first reader
      for k, op in ipairs(copies) do
        local function slots(names, get)
          local t = {}
          for _, slot in ipairs(names) do
            local args = {}
            for i, n in ipairs(get(op, slot)) do args[i] = rename[n] or n end
            t[slot] = args
          end
          return t
        end
        local attrs = {}
        for _, n in ipairs(op:attr_names()) do attrs[n] = op:attr(n) end
        attrs.op_role = framework.OpRole.Backward
        gb:_insert_op(at + k - 1, { type = op.type, inputs = slots(op:input_names(), op.input),
          outputs = slots(op:output_names(), op.output), attrs = attrs }, "RecomputeOptimizer")
      end
      ops = gb:ops()
      for i = first + #copies, #ops do
        for from, to in pairs(rename) do
          if reads_any(ops[i], { [from] = true }) then ops[i]:_rename_input(from, to) end
        end
      end
      recomputed = recomputed + #copies
    end
  end
  return recomputed
end

--- Appends the backward pass with the checkpointed segments recomputed
-- (the first half of minimize).
-- @tparam Variable loss
-- @tparam[opt] table opts `{startup_program=, parameter_list=, no_grad_set=}`
-- @treturn {{Variable,Variable},...} `{param, grad}` pairs
-- @usage local pg = opt:backward(loss); opt:apply_gradients(pg)
function Recompute:backward(loss, opts)
  if not framework.is_variable(loss) then raise("RecomputeOptimizer:backward: 'loss' must be a Variable") end
  local gb = loss.block.program:global_block()
  local nfwd = gb:num_ops()
  local pg = self.inner:backward(loss, opts or {})
  if self.checkpoints and #self.checkpoints >= 2 then
    self.recomputed_ops = rewrite(gb, nfwd, self.checkpoints)
  end
  return pg
end

--- The inner optimizer's update ops (the second half of minimize).
-- @tparam {{Variable,Variable},...} params_grads
-- @tparam[opt] Program program
-- @tparam[opt] Program startup
-- @treturn {Operator,...}
-- @usage opt:apply_gradients(opt:backward(loss))
function Recompute:apply_gradients(params_grads, program, startup)
  return self.inner:apply_gradients(params_grads, program, startup)
end

--- Appends backward, rewrites it to recompute the forward segments between
-- checkpoints, then the inner optimizer's update ops.
-- @tparam Variable loss
-- @tparam[opt] Program|table startup_program or minimize's options
-- @treturn {Operator,...} the optimize ops
-- @treturn {{Variable,Variable},...} `{param, grad}` pairs
-- @usage opt:minimize(loss)
function Recompute:minimize(loss, startup_program)
  if not framework.is_variable(loss) then raise("RecomputeOptimizer:minimize: 'loss' must be a Variable") end
  local program = loss.block.program
  local opts = type(startup_program) == "table" and not framework.is_program(startup_program) and startup_program
    or { startup_program = startup_program }
  local pg = self:backward(loss, opts)
  local ops = self.inner:apply_gradients(pg, program, opts.startup_program)
  return ops, pg
end

return M
