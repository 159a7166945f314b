--- oar.layers.control_flow.dynamic_rnn: DynamicRNN over LoD sequences.
-- @module oar.layers.control_flow.dynamic_rnn
local framework = require("oar.framework")
local LayerHelper = require("oar.layer_helper")
local argcheck = require("oar.argcheck")
local tensor_layers = require("oar.layers.tensor")
local arrays = require("oar.layers.control_flow.arrays")
local While = require("oar.layers.control_flow.while").While
local common = require("oar.layers.control_flow.common")

local check = LayerHelper.check
local raise, is_variable = framework.raise, framework.is_variable
local check_fn = common.check_fn
local from_array_in = common.from_array_in
local level_arg = common.level_arg
local max_len_in = common.max_len_in
local name_arg = common.name_arg
local rank_table_in = common.rank_table_in
local reorder_in = common.reorder_in
local shape_arg = common.shape_arg
local shrink_in = common.shrink_in
local tensor_arg = common.tensor_arg
local to_array_in = common.to_array_in
local unique_var = common.unique_var
local var_text = common.var_text
local visible_arg = common.visible_arg

local M = {}

-- ---- DynamicRNN ------------------------------------------------------------------------------

local DynamicRNN = {}
DynamicRNN.__index = DynamicRNN

--- An RNN over the sequences of a LoD input, each of its own length
-- (Fluid's DynamicRNN). `drnn:block(fn)` builds the step; `drnn()` returns
-- the outputs as LoD tensors with the input's LoD. Built like Fluid's: a
-- rank table sorts the sequences by length, inputs become tensor arrays
-- (one item per step, shrinking as sequences end), and a While loop runs
-- the step over the items. Feed the input with a LoD (see oar.tensor).
-- @tparam[opt] string|table name a name, or `{name=}`
-- @treturn DynamicRNN the builder: drnn:block(fn), step_input, static_input, memory, update_memory, output, drnn()
-- @usage
-- local drnn = layers.DynamicRNN()
-- drnn:block(function()
--   local w = drnn:step_input(seq)
--   local m = drnn:memory{shape = {H}, value = 0}
--   local h = layers.fc{input = {w, m}, size = H, act = "tanh"}
--   drnn:update_memory(m, h)
--   drnn:output(h)
-- end)
-- local out = drnn()
function M.DynamicRNN(name)
  if type(name) == "table" then
    argcheck.keys("layers.DynamicRNN", name, "name")
    name = name.name
  end
  name_arg("DynamicRNN", name)
  return setmetatable({ helper = LayerHelper("dynamic_rnn", { name = name }), status = "before",
                        input_arrays = {}, mem_dict = {}, mem_links = {}, output_arrays = {}, outputs = {} },
    DynamicRNN)
end

function DynamicRNN:_in_block(who)
  if self.status ~= "in" then raise(who .. ": call it inside drnn:block(function() ... end)") end
end

--- Builds the step: `fn()` declares step inputs, memories and outputs and
-- appends the step's ops, which a While loop runs once per time step over
-- the sequences still running. Call once.
-- @tparam function fn builds one step; it must call step_input
-- @raise when the step is already built or has no step_input
-- @usage drnn:block(function() drnn:output(layers.fc{input = drnn:step_input(seq), size = 8}) end)
function DynamicRNN:block(fn)
  check_fn("DynamicRNN:block", fn)
  if self.status ~= "before" then raise("DynamicRNN:block: the step is already built") end
  local prog = self.helper.main_program
  local parent = prog:current_block()
  self.parent = parent
  self.step_idx = tensor_layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 0 }
  self.zero_idx = tensor_layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 0 }
  self.cond = unique_var(parent, self.helper.name .. ".cond", { dtype = "bool", shape = { 1 } })
  self.cond.stop_gradient = true
  self.status = "in"
  local loop = While(self.cond)
  framework.protected(function() self.status = "after" end, loop.block, loop, function()
    fn()
    if not self.rank_table then raise("DynamicRNN:block: the step has no step_input") end
    tensor_layers.increment{ x = self.step_idx, value = 1 }
    for _, link in ipairs(self.mem_links) do arrays.array_write{ x = link[1], i = self.step_idx, array = link[2] } end
    tensor_layers.less_than{ x = self.step_idx, y = self.max_seq_len, cond = self.cond }
  end)
  for _, arr in ipairs(self.output_arrays) do
    self.outputs[#self.outputs + 1] = from_array_in(parent, arr, self.rank_table)
  end
end

--- Inside the step: a sequence input. The first call's LoD sets the
-- sequences and their order.
-- @tparam Variable x a LoD tensor (lod_level >= 1), made outside the step
-- @tparam[opt=0] int level the LoD level that gives the sequences
-- @treturn Variable x's current step: one row per live sequence, longest sequences first
-- @raise outside the step, or when x has no LoD level
-- @usage local w = drnn:step_input(seq)
function DynamicRNN:step_input(x, level)
  self:_in_block("DynamicRNN:step_input")
  tensor_arg("DynamicRNN:step_input", "x", x)
  level = level_arg("DynamicRNN:step_input", level)
  visible_arg("DynamicRNN:step_input", "x", x, self.parent, "the step")
  if x.lod_level < 1 then
    raise(string.format("DynamicRNN:step_input: '%s' has lod_level %d; step inputs are LoD sequences", x.name,
      x.lod_level))
  end
  local parent = self.parent
  if not self.rank_table then
    self.rank_table = rank_table_in(parent, x, level)
    self.max_seq_len = max_len_in(parent, self.rank_table)
    parent:append_op{ type = "less_than", inputs = { X = { self.step_idx }, Y = { self.max_seq_len } },
                      outputs = { Out = { self.cond } }, attrs = { force_cpu = true } }
  end
  local arr = to_array_in(parent, x, self.rank_table)
  self.input_arrays[#self.input_arrays + 1] = arr
  return arrays.array_read{ array = arr, i = self.step_idx }
end

--- Inside the step: an input that does not change with the step (an
-- encoder's state, say), with one row (or sequence) per input sequence;
-- at each step, the rows of the sequences still running, in their order.
-- @tparam Variable x made outside the step
-- @treturn Variable x's rows for the live sequences
-- @raise outside the step, or before step_input
-- @usage local ctx = drnn:static_input(encoder_last)
function DynamicRNN:static_input(x)
  self:_in_block("DynamicRNN:static_input")
  tensor_arg("DynamicRNN:static_input", "x", x)
  visible_arg("DynamicRNN:static_input", "x", x, self.parent, "the step")
  if not self.rank_table then raise("DynamicRNN:static_input: call step_input first") end
  local reordered = reorder_in(self.parent, x, self.rank_table)
  return shrink_in(self.helper.main_program:current_block(), reordered, self.step_idx, self.rank_table)
end

--- Inside the step: a state carried from step to step. Either `init` (one
-- row per sequence), or a `shape` (without the batch dim) filled with
-- `value`. Also `memory(init)`. Call after step_input.
-- @tparam table a keyword arguments:
-- @tparam[opt] Variable a.init the initial state, made outside the step
-- @tparam[opt=false] bool a.need_reorder reorder init's rows into the rank table's order (when they follow the input's order)
-- @tparam[opt] {int,...} a.shape the state's shape without the batch dim (without init)
-- @tparam[opt=0] number a.value the initial value (with shape)
-- @tparam[opt] string a.dtype the state's dtype (with shape; default the first step input's)
-- @treturn Variable the state at the current step, one row per live sequence
-- @raise outside the step, before step_input, or without init nor shape
-- @usage local m = drnn:memory{shape = {32}, value = 0}
function DynamicRNN:memory(a)
  self:_in_block("DynamicRNN:memory")
  if is_variable(a) then a = { init = a } end
  if type(a) ~= "table" then check.fail("DynamicRNN:memory", "argument", "a table {init=} or {shape=}", a) end
  argcheck.keys("DynamicRNN:memory", a, "init shape value dtype need_reorder")
  local parent = self.parent
  local body = self.helper.main_program:current_block()
  local init = a.init
  if init == nil then
    if a.shape == nil then raise("DynamicRNN:memory: give 'init' or 'shape'") end
    shape_arg("DynamicRNN:memory", "shape", a.shape)
    if #self.input_arrays == 0 then raise("DynamicRNN:memory: call step_input before memory{shape=...}") end
    local first = self.input_arrays[1]
    local dtype = check.dtype("DynamicRNN:memory", "dtype", a.dtype, first.dtype)
    local in0 = unique_var(parent, self.helper.name .. ".in0", { dtype = first.dtype })
    parent:append_op{ type = "read_from_array", inputs = { X = { first }, I = { self.zero_idx } },
                      outputs = { Out = { in0 } } }
    init = unique_var(parent, self.helper.name .. ".memory_init", { dtype = dtype })
    local shape = { -1 }
    for _, d in ipairs(a.shape) do shape[#shape + 1] = d end
    parent:append_op{ type = "fill_constant_batch_size_like", inputs = { Input = { in0 } },
      outputs = { Out = { init } },
      attrs = { shape = shape, dtype = dtype, value = check.number("DynamicRNN:memory", "value", a.value, 0) } }
    init.stop_gradient = true
  else
    tensor_arg("DynamicRNN:memory", "init", init)
    visible_arg("DynamicRNN:memory", "init", init, parent, "the step")
    if check.boolean("DynamicRNN:memory", "need_reorder", a.need_reorder, false) then
      if not self.rank_table then raise("DynamicRNN:memory: call step_input first") end
      init = reorder_in(parent, init, self.rank_table)
    end
  end
  if not self.rank_table then raise("DynamicRNN:memory: call step_input first") end
  local arr = unique_var(parent, self.helper.name .. ".memory_array", { type = "lod_tensor_array", dtype = init.dtype })
  parent:append_op{ type = "write_to_array", inputs = { X = { init }, I = { self.zero_idx } }, outputs = { Out = { arr } } }
  local prev = arrays.array_read{ array = arr, i = self.step_idx }
  local mem = shrink_in(body, prev, self.step_idx, self.rank_table)
  self.mem_dict[mem.name] = arr
  return mem
end

--- Inside the step: sets a memory's state for the next step.
-- @tparam Variable ex_mem a memory (made by drnn:memory)
-- @tparam Variable new_mem its next state
-- @raise outside the step, or when ex_mem is not a memory of this RNN
-- @usage drnn:update_memory(m, h)
function DynamicRNN:update_memory(ex_mem, new_mem)
  self:_in_block("DynamicRNN:update_memory")
  tensor_arg("DynamicRNN:update_memory", "ex_mem", ex_mem)
  tensor_arg("DynamicRNN:update_memory", "new_mem", new_mem)
  local arr = self.mem_dict[ex_mem.name]
  if not arr then
    raise("DynamicRNN:update_memory: '" .. ex_mem.name .. "' is not a memory of this DynamicRNN (made by drnn:memory)")
  end
  self.mem_links[#self.mem_links + 1] = { new_mem, arr }
end

--- Inside the step: outputs; each step's values are joined into a LoD
-- tensor with the input's LoD, returned by `drnn()`.
-- @tparam Variable ... the step's values
-- @raise outside the step
-- @usage drnn:output(h)
function DynamicRNN:output(...)
  self:_in_block("DynamicRNN:output")
  for i = 1, select("#", ...) do
    local v = tensor_arg("DynamicRNN:output", "output " .. i, (select(i, ...)))
    local arr = unique_var(self.parent, self.helper.name .. ".output_array", { type = "lod_tensor_array", dtype = v.dtype })
    arrays.array_write{ x = v, i = self.step_idx, array = arr }
    self.output_arrays[#self.output_arrays + 1] = arr
  end
end

function DynamicRNN:__call()
  if getmetatable(self) ~= DynamicRNN then raise("DynamicRNN(): call it on a DynamicRNN, got " .. var_text(self)) end
  if self.status ~= "after" then raise("DynamicRNN(): build the step first (drnn:block(fn))") end
  return unpack(self.outputs)
end


-- every public method checks it was called with ':' on a DynamicRNN
framework._guard_methods(DynamicRNN, function(x) return getmetatable(x) == DynamicRNN end, "DynamicRNN", {})

return M
