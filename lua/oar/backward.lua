--- oar.backward: gradient ops appended by C's backward pass
-- (append_backward, gradients), returned as Lua Variables.
-- @module oar.backward
local ffi = require("ffi")
local lib = require("oar.lib")
local framework = require("oar.framework")
local argcheck = require("oar.argcheck")
local C = lib.C

local raise, describe, is_variable = framework.raise, framework.describe, framework.is_variable

local M = {}

local function name_list(x, who, what)
  if x == nil then return {} end
  if is_variable(x) or type(x) == "string" then return { framework.names_of(x, who, what)[1] } end
  if type(x) ~= "table" then
    raise(string.format("%s: '%s' must be a list of Variables or names, got %s", who, what, describe(x)))
  end
  if #x > 0 then return framework.names_of(x, who, what) end
  local out = {}
  for k, v in pairs(x) do
    if type(k) == "string" and v then out[#out + 1] = k
    elseif is_variable(v) then out[#out + 1] = v.name
    elseif type(v) == "string" then out[#out + 1] = v end
  end
  table.sort(out)
  return out
end

--- Variable names from a Variable, a name, a list of them, or a set
-- (`{name = true}` or `{name = var}`), sorted for a set.
-- @function name_list
-- @param x nil, a Variable, a name, a list or a set
-- @tparam string who the function to name in errors
-- @tparam string what the argument to name in errors
-- @treturn {string,...} the names (`{}` for nil)
-- @raise on any other value
-- @usage local names = oar.backward.name_list({w, "b"}, "mine", "no_grad_set")   --> {"w...", "b"}
M.name_list = name_list

-- Tags the op producing `loss` as the loss op (Fluid: Forward | Loss).
local function mark_loss_op(loss)
  local ops = loss.block:ops()
  for i = #ops, 1, -1 do
    local op = ops[i]
    for _, n in ipairs(op:output_arg_names()) do
      if n == loss.name then
        local role = op:attr("op_role") or 0
        if role % 512 < 256 then op:set_attr("op_role", role + framework.OpRole.Loss) end
        return
      end
    end
  end
end

-- A loss must hold one value: the gradient of a tensor is not defined
-- without weights for its elements (PyTorch refuses it too; Fluid silently
-- took the sum). A batch dimension (-1) may be more than one row.
local function check_scalar_loss(loss, who)
  local shape = loss.shape
  local n, unknown = 1, false
  for _, d in ipairs(shape) do
    if d < 0 then unknown = true else n = n * d end
  end
  if (not unknown and n == 1) or (unknown and n == 0) then return end
  raise(string.format("%s: the loss '%s' has shape %s (%s), not one value; reduce it first, e.g. "
    .. "loss = layers.mean(%s), or give its gradient explicitly with "
    .. "oar.gradients({loss}, inputs, {loss_grad})", who, loss.name, framework.shape_text(shape),
    unknown and "one value per row" or (n .. " values"), loss.name))
end
M._check_scalar_loss = check_scalar_loss

-- The names block `b` declares (a set), to tell this pass's grads later.
local function var_names(b)
  local set = {}
  for _, v in ipairs(b:vars()) do set[v.name] = true end
  return set
end

-- Error clips (oar.clip.ErrorClipByValue) of the vars of `b` on the grads
-- this pass wrote: "<var>@GRAD", or "<var>@GRAD_<k>" when an earlier pass
-- had the name.
local function error_clips(b, before, nops)
  require("oar.clip")._apply_error_clips(b, nops, function(name)
    local g = name .. "@GRAD"
    if not before[g] and b:has_var(g) then return g end
    for k = 1, 64 do
      local r = g .. "_" .. k
      if not b:has_var(r) then return nil end
      if not before[r] then return r end
    end
  end)
end

--- Appends the gradient ops of `loss` to its program.
-- The loss must hold one value (reduce it with layers.mean first); for
-- another loss, give its gradient to `gradients`.
-- @tparam Variable loss a one-value loss in the global block
-- @tparam[opt] table opts keyword arguments:
-- @tparam[opt] {Variable|string,...} opts.parameter_list the parameters to differentiate (default: all trainable)
-- @tparam[opt] {Variable|string,...} opts.no_grad_set variables no gradient flows through
-- @treturn {{Variable,Variable},...} `{param, grad}` pairs
-- @usage local pg = oar.append_backward(layers.mean(cost))
function M.append_backward(loss, opts)
  local who = "append_backward"
  if not is_variable(loss) then raise(who .. ": 'loss' must be a Variable, got " .. describe(loss)) end
  opts = opts or {}
  if type(opts) ~= "table" then raise(who .. ": options must be a table, got " .. describe(opts)) end
  argcheck.keys("oar.append_backward", opts, "parameter_list no_grad_set")
  check_scalar_loss(loss, who)
  local prog = loss.block.program
  if loss.block.idx ~= 0 then raise(who .. ": 'loss' must be in the global block, '" .. loss.name .. "' is not") end
  local params
  if opts.parameter_list ~= nil then
    params = name_list(opts.parameter_list, who, "parameter_list")
  else
    local ps = prog:global_block():all_parameters()
    if #ps > 0 then
      params = {}
      for _, p in ipairs(ps) do
        if rawget(p, "trainable") ~= false then params[#params + 1] = p.name end
      end
    end
  end
  local no_grad = name_list(opts.no_grad_set, who, "no_grad_set")
  mark_loss_op(loss)
  local gb0 = prog:global_block()
  local before, nops = var_names(gb0), gb0:num_ops()
  local parr, np = nil, 0
  if params then parr, np = lib.cstrings(params) end
  local narr, nn = lib.cstrings(no_grad)
  local pairs_out = ffi.new("char **[1]")
  local npairs = ffi.new("int[1]")
  if C.oar_backward_append(prog.handle, loss.name, parr, np, narr, nn, pairs_out, npairs) ~= 0 then
    raise(who .. ": " .. lib.last_error())
  end
  local names = {}
  local n = npairs[0]
  for i = 0, 2 * n - 1 do names[i + 1] = ffi.string(pairs_out[0][i]) end
  C.oar_strings_free(pairs_out[0], 2 * n)
  error_clips(gb0, before, nops)
  local gb = prog:global_block()
  local result = {}
  for i = 1, 2 * n, 2 do
    result[#result + 1] = { gb:var(names[i]), gb:var(names[i + 1]) }
  end
  return result
end

--- Gradients of `targets` with respect to `inputs` (also `calc_gradient`, Fluid's name).
-- @tparam Variable|{Variable,...} targets what to differentiate
-- @tparam Variable|{Variable,...} inputs with respect to what
-- @tparam[opt] {Variable,...} target_gradients the gradient of each target (default: ones)
-- @tparam[opt] {Variable|string,...} no_grad_set variables no gradient flows through
-- @treturn {Variable,...} the gradient of each input, nil where no path leads from the targets
-- @usage local dx = oar.gradients({y}, {x}, {dy})[1]
function M.gradients(targets, inputs, target_gradients, no_grad_set)
  local who = "gradients"
  local tnames = framework.names_of(targets, who, "targets")
  local inames = framework.names_of(inputs, who, "inputs")
  if #tnames == 0 then raise(who .. ": 'targets' is empty") end
  local first = is_variable(targets) and targets or targets[1]
  if not is_variable(first) then raise(who .. ": 'targets' must be Variables") end
  local prog = first.block.program
  local tg
  if target_gradients ~= nil then
    local g = framework.names_of(target_gradients, who, "target_gradients")
    if #g ~= #tnames then
      raise(string.format("%s: %d target_gradients for %d targets", who, #g, #tnames))
    end
    tg = lib.cstrings(g)
  end
  local tarr, nt = lib.cstrings(tnames)
  local iarr, ni = lib.cstrings(inames)
  local narr, nn = lib.cstrings(name_list(no_grad_set, who, "no_grad_set"))
  local out = ffi.new("char **[1]")
  local gb0 = prog:global_block()
  local before, nops = var_names(gb0), gb0:num_ops()
  if C.oar_backward_gradients(prog.handle, tarr, nt, tg, iarr, ni, narr, nn, out) ~= 0 then
    raise(who .. ": " .. lib.last_error())
  end
  local names = {}
  for i = 0, ni - 1 do
    local s = out[0][i]
    names[i + 1] = s ~= nil and ffi.string(s) or false
  end
  C.oar_strings_free(out[0], ni)
  error_clips(gb0, before, nops)
  local block = first.block
  local result = { n = ni }
  for i = 1, ni do
    if names[i] then result[i] = block:var(names[i]) end
  end
  return result
end

-- Fluid's name for `gradients`: `calc_gradient`
M.calc_gradient = M.gradients

return M
