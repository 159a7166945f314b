--- oar.layers.control_flow.ifelse: IfElse (rows split by a per-row condition).
-- @module oar.layers.control_flow.ifelse
local framework = require("oar.framework")
local LayerHelper = require("oar.layer_helper")
local argcheck = require("oar.argcheck")
local tensor_layers = require("oar.layers.tensor")
local common = require("oar.layers.control_flow.common")

local raise, is_variable = framework.raise, framework.is_variable
local bad_arg = common.bad_arg
local check_fn = common.check_fn
local conditional = common.conditional
local name_arg = common.name_arg
local tensor_arg = common.tensor_arg
local unique_var = common.unique_var
local var_text = common.var_text
local visible_arg = common.visible_arg

local M = {}

-- ---- IfElse ---------------------------------------------------------------------------------

local IfElse = {}
IfElse.__index = IfElse

--- A per-row if/else (Fluid's IfElse). `cond` has one entry per row (per
-- sequence of a LoD input). Inside `ie:true_block(fn)` and
-- `ie:false_block(fn)`, `ie:input(x)` gives the rows of x that go to that
-- block and `ie:output(...)` sets its results; a block whose rows are none
-- does not run at all. After both blocks, `ie()` merges the outputs back
-- in row order (one Variable per output; when only one block was built,
-- that block's outputs as they are). A block may not read a batch-shaped
-- outside variable directly: bring it in with `ie:input`.
-- @tparam Variable|table cond a bool [N, 1] Variable, or `{cond=, name=}`
-- @tparam[opt] string name
-- @treturn IfElse the builder: ie:true_block(fn), ie:false_block(fn), ie:input(x), ie:output(...), ie()
-- @raise when cond is not a bool tensor Variable
-- @usage
-- local cond = layers.less_than{x = x, y = limit}
-- local ie = layers.IfElse(cond)
-- ie:true_block(function() ie:output(layers.scale{x = ie:input(x), scale = 2}) end)
-- ie:false_block(function() ie:output(ie:input(x) + 1) end)
-- local out = ie()
function M.IfElse(cond, name)
  if type(cond) == "table" and not is_variable(cond) then
    argcheck.keys("layers.IfElse", cond, "cond name")
    cond, name = cond.cond, cond.name
  end
  if not is_variable(cond) or cond.type ~= "lod_tensor" or cond.dtype ~= "bool" then
    bad_arg("IfElse", "cond", "a bool Variable (one entry per row, [N, 1])", cond)
  end
  name_arg("IfElse", name)
  local helper = LayerHelper("ifelse", { name = name })
  return setmetatable({ cond = cond, helper = helper, parent = helper.main_program:current_block(),
                        inputs = {}, outs = { [true] = {}, [false] = {} }, built = {}, status = nil }, IfElse)
end

-- the part of cond for one side: its rows (empty when no row goes there)
function IfElse:_cond_part(side)
  if not self.cond_parts then
    local t = unique_var(self.parent, self.helper.name .. ".cond_true", { dtype = "bool" })
    local f = unique_var(self.parent, self.helper.name .. ".cond_false", { dtype = "bool" })
    t.stop_gradient, f.stop_gradient = true, true
    self.parent:append_op{ type = "split_lod_tensor", inputs = { X = { self.cond }, Mask = { self.cond } },
      outputs = { OutTrue = { t }, OutFalse = { f } }, attrs = { level = 0 } }
    self.cond_parts = { [true] = t, [false] = f }
  end
  return self.cond_parts[side]
end

function IfElse:_branch(side, fn, who)
  check_fn(who, fn)
  if self.status ~= nil then raise(who .. ": called inside another block of the same IfElse") end
  if self.built[side] then raise(who .. ": the " .. tostring(side) .. " block is already built") end
  local prog = self.helper.main_program
  if prog:current_block().idx ~= self.parent.idx then
    raise(who .. ": build it in the block the IfElse was made in")
  end
  local part = self:_cond_part(side)
  self.status = side
  framework.protected(function() self.status = nil end, conditional, prog, { part }, false, function()
    local body = prog:current_block()
    local res = { fn() }
    self:_check_reads(body, who)
    return unpack(res, 1, table.maxn(res))
  end)
  self.built[side] = true
end

-- Variables the IfElse itself made in the parent block (the rows it split
-- off with ie:input, its outputs): a block may read these.
function IfElse:_own_names()
  local own = {}
  for _, pair in pairs(self.inputs) do own[pair[true].name], own[pair[false].name] = true, true end
  for _, side in ipairs({ true, false }) do
    for _, v in ipairs(self.outs[side]) do own[v.name] = true end
  end
  if self.cond_parts then own[self.cond_parts[true].name], own[self.cond_parts[false].name] = true, true end
  return own
end

-- A block sees only its own rows. An op of the block (or of a block nested
-- in it) that reads a variable from outside the IfElse with a row per batch
-- row (a -1 first dim or a LoD) would mix the rows of both sides; like
-- Fluid, such a variable must come in through ie:input(x). Found while the
-- block is built, so the error names the user's variable and the call.
function IfElse:_check_reads(body, who)
  local own = self:_own_names()
  local function scan(block)
    for _, op in ipairs(block:ops()) do
      for _, n in ipairs(op:input_arg_names()) do
        if not own[n] and not body:has_var(n) and not block:has_var(n) then
          local v = self.parent:find_var_recursive(n)
          if v and v.type == "lod_tensor" and not v.persistable
              and ((v.shape[1] or 0) < 0 or (v.lod_level or 0) > 0) then
            local id = n:match("^[%a_][%w_]*$") and n or "x"
            local stack = op:has_attr("op_callstack") and op:attr("op_callstack") or {}
            raise(string.format("%s: op '%s'%s reads '%s' (%s %s) from outside the IfElse directly; a block "
              .. "sees only its own rows, so bring it in with ie:input: local %s_in = ie:input(%s) inside "
              .. "the block, then use %s_in", who, op.type, stack[1] and (" (built at " .. stack[1] .. ")") or "",
              n, tostring(v.dtype), framework.shape_text(v.shape), id, id, id))
          end
        end
      end
      for _, sub in ipairs(common.sub_blocks(op)) do scan(sub) end
    end
  end
  scan(body)
end

--- Builds the block for the rows where cond holds: the ops `fn()` appends
-- run on those rows only. Call once, in the block the IfElse was made in.
-- @tparam function fn builds the block (with ie:input and ie:output)
-- @raise when built twice, inside the other block, or when it reads an
-- outside batch variable not brought in with ie:input
-- @usage ie:true_block(function() ie:output(layers.scale{x = ie:input(x), scale = 2}) end)
function IfElse:true_block(fn) return self:_branch(true, fn, "IfElse:true_block") end

--- Builds the block for the rows where cond does not hold (see true_block).
-- @tparam function fn builds the block (with ie:input and ie:output)
-- @raise as true_block
-- @usage ie:false_block(function() ie:output(ie:input(x) + 1) end)
function IfElse:false_block(fn) return self:_branch(false, fn, "IfElse:false_block") end

--- Inside a block: the rows of `x` that go to this block.
-- @tparam Variable x a tensor Variable from outside the IfElse, one row per entry of cond
-- @treturn Variable x's rows for this block
-- @raise outside a block, or when x is made inside the block
-- @usage ie:true_block(function() local x_in = ie:input(x); ie:output(x_in * 2) end)
function IfElse:input(x)
  if self.status == nil then raise("IfElse:input: call it inside true_block or false_block") end
  tensor_arg("IfElse:input", "x", x)
  visible_arg("IfElse:input", "x", x, self.parent, "the block")
  local pair = self.inputs[x.name]
  if not pair then
    local t = unique_var(self.parent, self.helper.name .. ".input_true", { dtype = x.dtype })
    local f = unique_var(self.parent, self.helper.name .. ".input_false", { dtype = x.dtype })
    self.parent:append_op{ type = "split_lod_tensor", inputs = { X = { x }, Mask = { self.cond } },
      outputs = { OutTrue = { t }, OutFalse = { f } }, attrs = { level = 0 } }
    pair = { [true] = t, [false] = f }
    self.inputs[x.name] = pair
  end
  return pair[self.status]
end

--- Inside a block: sets its results. Both blocks give the same number of
-- outputs, in the same order; `ie()` merges them.
-- @tparam Variable ... the block's results
-- @raise outside a block
-- @usage ie:false_block(function() ie:output(ie:input(x) + 1) end)
function IfElse:output(...)
  if self.status == nil then raise("IfElse:output: call it inside true_block or false_block") end
  local list = self.outs[self.status]
  for i = 1, select("#", ...) do
    local v = select(i, ...)
    tensor_arg("IfElse:output", "output " .. i, v)
    local outside = unique_var(self.parent, self.helper.name .. ".output", { dtype = v.dtype })
    tensor_layers.assign(v, outside)
    list[#list + 1] = outside
  end
end

-- ie(): the outputs merged in row order (one Variable per output); when
-- only one side was built, that side's outputs as they are
function IfElse:__call()
  if getmetatable(self) ~= IfElse then raise("IfElse(): call it on an IfElse, got " .. var_text(self)) end
  if self.status ~= nil then raise("IfElse(): call it after the blocks, not inside one") end
  local t, f = self.outs[true], self.outs[false]
  if #t == 0 and #f == 0 then raise("IfElse(): no block gave outputs (use ie:output(...) in the blocks)") end
  if #t ~= 0 and #f ~= 0 and #t ~= #f then
    raise(string.format("IfElse(): the true block gives %d outputs and the false block %d", #t, #f))
  end
  local prog = self.helper.main_program
  if prog:current_block().idx ~= self.parent.idx then raise("IfElse(): call it in the block the IfElse was made in") end
  -- like Fluid, a single built side gives its outputs unmerged (its rows only)
  if #t == 0 then return unpack(f) end
  if #f == 0 then return unpack(t) end
  local merged = {}
  for i = 1, #t do
    local ref = t[i]
    local out = unique_var(self.parent, self.helper.name .. ".merged", { dtype = ref.dtype })
    local inputs = { X = { self.cond }, Mask = { self.cond }, InTrue = { t[i] }, InFalse = { f[i] } }
    self.parent:append_op{ type = "merge_lod_tensor", inputs = inputs, outputs = { Out = { out } },
                           attrs = { level = 0 } }
    merged[i] = out
  end
  return unpack(merged)
end


-- every public method checks it was called with ':' on a IfElse
framework._guard_methods(IfElse, function(x) return getmetatable(x) == IfElse end, "IfElse", {})

return M
