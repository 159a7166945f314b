--- oar.layers.control_flow.static_rnn: StaticRNN over time-major [T, N, ...] inputs.
-- @module oar.layers.control_flow.static_rnn
local framework = require("oar.framework")
local LayerHelper = require("oar.layer_helper")
local argcheck = require("oar.argcheck")
local common = require("oar.layers.control_flow.common")

local check = LayerHelper.check
local raise, is_variable = framework.raise, framework.is_variable
local check_fn = common.check_fn
local in_sub_block = common.in_sub_block
local name_arg = common.name_arg
local name_set = common.name_set
local outer_var = common.outer_var
local shape_arg = common.shape_arg
local tensor_arg = common.tensor_arg
local unique_var = common.unique_var
local var_text = common.var_text
local visible_arg = common.visible_arg

local M = {}

-- ---- StaticRNN ------------------------------------------------------------------------------

local StaticRNN = {}
StaticRNN.__index = StaticRNN

--- An RNN over time-major sequences [T, N, ...] of a fixed length (Fluid's
-- StaticRNN). `rnn:step(fn)` builds one step with `rnn:step_input`,
-- `rnn:memory`, `rnn:update_memory` and `rnn:output`; then `rnn()` returns
-- the outputs, each stacked into [T, N, ...].
-- @tparam[opt] string|table name a name prefix, or `{name=}`
-- @treturn StaticRNN
-- @usage
-- local rnn = layers.StaticRNN()
-- rnn:step(function()
--   local x_t = rnn:step_input(x)                     -- x: [T, N, D]
--   local h_prev = rnn:memory{shape = {-1, 32}, batch_ref = x_t}
--   local h = layers.fc{input = {x_t, h_prev}, size = 32, act = "tanh"}
--   rnn:update_memory(h_prev, h)
--   rnn:output(h)
-- end)
-- local hs = rnn()                                    -- [T, N, 32]
function M.StaticRNN(name)
  if type(name) == "table" then
    argcheck.keys("layers.StaticRNN", name, "name")
    name = name.name
  end
  name_arg("StaticRNN", name)
  return setmetatable({ helper = LayerHelper("static_rnn", { name = name }), status = "before",
                        inputs = {}, memories = {}, outputs = {}, seq_len = nil }, StaticRNN)
end

function StaticRNN:_in_step(who)
  if self.status ~= "in" then raise(who .. ": call it inside rnn:step(function() ... end)") end
end

--- Builds the step: `fn()` declares the step inputs, memories and outputs
-- and appends the step's ops. Call once.
-- @tparam function fn builds one step
-- @raise when the step is already built, has no step input or no output, or
-- a memory is never updated
-- @usage rnn:step(function() rnn:output(layers.scale{x = rnn:step_input(x), scale = 2}) end)
function StaticRNN:step(fn)
  check_fn("StaticRNN:step", fn)
  if self.status ~= "before" then raise("StaticRNN:step: the step is already built") end
  local prog = self.helper.main_program
  self.parent = prog:current_block()
  self.status = "in"
  local block = framework.protected(function() if self.status == "in" then self.status = "failed" end end,
    in_sub_block, prog, function()
      self.block = prog:current_block()
      fn()
    end, false)
  self.status = "after"
  self:_complete(block)
end

--- Inside the step: a sequence input. All step inputs have the same T.
-- @tparam Variable x [T, N, ...], made outside the step
-- @treturn Variable the current step's slice, [N, ...]
-- @raise outside the step, or when x is not [T, N, ...] or its T differs
-- @usage local x_t = rnn:step_input(x)
function StaticRNN:step_input(x)
  self:_in_step("StaticRNN:step_input")
  tensor_arg("StaticRNN:step_input", "x", x)
  visible_arg("StaticRNN:step_input", "x", x, self.parent, "the step")
  local shape = x.shape
  if #shape < 2 then
    raise(string.format("StaticRNN:step_input: '%s' has shape %s; step inputs are [T, N, ...]", x.name,
      framework.shape_text(shape)))
  end
  if self.seq_len == nil or self.seq_len < 0 then self.seq_len = shape[1]
  elseif shape[1] >= 0 and shape[1] ~= self.seq_len then
    raise(string.format("StaticRNN:step_input: '%s' has %d steps, earlier step inputs have %d", x.name, shape[1],
      self.seq_len))
  end
  local inner = {}
  for i = 2, #shape do inner[#inner + 1] = shape[i] end
  local ipt = self.block:create_var{ name = x.name, dtype = x.dtype, shape = inner, lod_level = x.lod_level }
  self.inputs[#self.inputs + 1] = ipt
  return ipt
end

--- Inside the step: a state carried from step to step, `init` at the first
-- step. Either give `init`, or a `shape` whose batch dim is taken from
-- `batch_ref` and a fill `value`. Also `memory(init)`.
-- @tparam table a keyword arguments:
-- @tparam[opt] Variable a.init the initial state, made outside the step
-- @tparam[opt] {int,...} a.shape the state's shape, -1 for the batch dim (without init)
-- @tparam[opt] Variable a.batch_ref a step input or outside variable giving the batch size (without init)
-- @tparam[opt=0] number a.value the initial value (also `init_value`)
-- @tparam[opt=0] int a.init_batch_dim_idx the batch dim of `shape`
-- @tparam[opt] int a.ref_batch_dim_idx the batch dim of batch_ref (default 1 for a step input, else 0)
-- @treturn Variable the state at the current step
-- @raise outside the step, or without init nor shape and batch_ref
-- @usage local h_prev = rnn:memory{shape = {-1, 32}, batch_ref = x_t}
function StaticRNN:memory(a)
  self:_in_step("StaticRNN:memory")
  if is_variable(a) then a = { init = a } end
  if type(a) ~= "table" then check.fail("StaticRNN:memory", "argument", "a table {init=} or {shape=, batch_ref=}", a) end
  argcheck.keys("StaticRNN:memory", a, "init shape batch_ref value init_value init_batch_dim_idx ref_batch_dim_idx")
  local init = a.init
  if init == nil then
    if a.shape == nil or a.batch_ref == nil then
      raise("StaticRNN:memory: give 'init', or 'shape' and 'batch_ref'")
    end
    shape_arg("StaticRNN:memory", "shape", a.shape)
    local ref = tensor_arg("StaticRNN:memory", "batch_ref", a.batch_ref)
    local ref_idx = a.ref_batch_dim_idx
    for _, ipt in ipairs(self.inputs) do
      if ipt.name == ref.name and ipt.block == self.block then
        ref = self.parent:var(ref.name)   -- the sequence: batch is its dim 1
        if ref_idx == nil then ref_idx = 1 end
      end
    end
    if ref.block.idx == self.block.idx then
      raise("StaticRNN:memory: 'batch_ref' must be a step input or a variable from outside the step")
    end
    local value = a.value
    if value == nil then value = a.init_value end
    local boot = unique_var(self.parent, self.helper.name .. ".memory_boot", { dtype = ref.dtype })
    boot.stop_gradient = true
    self.parent:append_op{ type = "fill_constant_batch_size_like", inputs = { Input = { ref } },
      outputs = { Out = { boot } },
      attrs = { shape = a.shape, dtype = ref.dtype, value = check.number("StaticRNN:memory", "value", value, 0),
                input_dim_idx = check.int("StaticRNN:memory", "ref_batch_dim_idx", ref_idx, 0),
                output_dim_idx = check.int("StaticRNN:memory", "init_batch_dim_idx", a.init_batch_dim_idx, 0) } }
    init = boot
  end
  tensor_arg("StaticRNN:memory", "init", init)
  visible_arg("StaticRNN:memory", "init", init, self.parent, "the step")
  local pre = unique_var(self.block, self.helper.name .. ".mem", {
    dtype = init.dtype, shape = #init.shape > 0 and init.shape or nil })
  self.memories[#self.memories + 1] = { init = init, pre = pre }
  return pre
end

--- Inside the step: sets a memory's state for the next step. Every memory
-- must be updated.
-- @tparam Variable mem a memory (made by rnn:memory)
-- @tparam Variable value its next state
-- @raise outside the step, or when mem is not a memory of this RNN
-- @usage rnn:update_memory(h_prev, h)
function StaticRNN:update_memory(mem, value)
  self:_in_step("StaticRNN:update_memory")
  tensor_arg("StaticRNN:update_memory", "mem", mem)
  tensor_arg("StaticRNN:update_memory", "value", value)
  for _, m in ipairs(self.memories) do
    if m.pre.name == mem.name then
      m.value = value
      return
    end
  end
  raise("StaticRNN:update_memory: '" .. mem.name .. "' is not a memory of this StaticRNN (made by rnn:memory)")
end

--- Inside the step: an output; its value at every step is stacked into
-- [T, N, ...], returned by `rnn()`.
-- @tparam Variable o the step's value
-- @raise outside the step
-- @usage rnn:step_output(h)
function StaticRNN:step_output(o)
  self:_in_step("StaticRNN:step_output")
  tensor_arg("StaticRNN:step_output", "o", o)
  local tmp = unique_var(self.block, self.helper.name .. ".step_output", { dtype = o.dtype })
  self.block:append_op{ type = "rnn_memory_helper", inputs = { X = { o } }, outputs = { Out = { tmp } },
                        attrs = { dtype = o.dtype } }
  local shape = { self.seq_len or -1 }
  for _, d in ipairs(o.shape) do shape[#shape + 1] = d end
  local out = self.parent:create_var{ name = tmp.name, dtype = o.dtype, shape = #o.shape > 0 and shape or nil }
  self.outputs[#self.outputs + 1] = out
end

--- Inside the step: outputs, as step_output for each.
-- @tparam Variable ... the step's values
-- @raise outside the step
-- @usage rnn:output(h, c)
function StaticRNN:output(...)
  self:_in_step("StaticRNN:output")
  for i = 1, select("#", ...) do tensor_arg("StaticRNN:output", "output " .. i, (select(i, ...))) end
  for i = 1, select("#", ...) do self:step_output(select(i, ...)) end
end

function StaticRNN:_complete(block)
  local locals = {}
  for _, v in ipairs(self.inputs) do locals[v.name] = true end
  for _, m in ipairs(self.memories) do
    locals[m.pre.name] = true
    if not m.value then
      raise("StaticRNN: memory '" .. m.pre.name .. "' is never updated (call rnn:update_memory(mem, value) in the step)")
    end
  end
  local inits, pres, states = {}, {}, {}
  for i, m in ipairs(self.memories) do
    local new = unique_var(block, self.helper.name .. ".state", { dtype = m.value.dtype })
    block:append_op{ type = "rnn_memory_helper", inputs = { X = { m.value } }, outputs = { Out = { new } },
                     attrs = { dtype = m.value.dtype } }
    inits[i], pres[i], states[i] = m.init, m.pre.name, new.name
  end
  local params = name_set()
  for _, op in ipairs(block:ops()) do
    for _, n in ipairs(op:input_arg_names()) do
      if not locals[n] and outer_var(block, n) then params.add(n) end
    end
    for _, n in ipairs(op:output_arg_names()) do locals[n] = true end
  end
  if #self.inputs == 0 then raise("StaticRNN: the step has no step_input (the sequence length comes from them)") end
  if #self.outputs == 0 then raise("StaticRNN: the step has no output (use rnn:output(...))") end
  local outer_inputs = {}
  for i, v in ipairs(self.inputs) do outer_inputs[i] = self.parent:var(v.name) end
  local steps = unique_var(self.parent, self.helper.name .. ".step_scopes", { type = "step_scopes" })
  self.parent:append_op{ type = "recurrent",
    inputs = { inputs = outer_inputs, initial_states = inits, parameters = params.list },
    outputs = { outputs = self.outputs, step_scopes = { steps } },
    attrs = { ex_states = pres, states = states, sub_block = block, has_states = #pres > 0,
              reverse = false, is_train = true } }
end

function StaticRNN:__call()
  if getmetatable(self) ~= StaticRNN then raise("StaticRNN(): call it on a StaticRNN, got " .. var_text(self)) end
  if self.status ~= "after" then raise("StaticRNN(): build the step first (rnn:step(fn))") end
  return unpack(self.outputs)
end


-- every public method checks it was called with ':' on a StaticRNN
framework._guard_methods(StaticRNN, function(x) return getmetatable(x) == StaticRNN end, "StaticRNN", {})

return M
