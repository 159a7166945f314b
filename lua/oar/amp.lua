--- Mixed-precision training helpers: loss scaling (Fluid's
-- `fluid.contrib.mixed_precision.decorate`).
--
-- `oar.amp.decorate(optimizer, opts)` wraps an optimizer so that its
-- `minimize(loss)` builds, all inside the program:
--
-- * the scaled loss `loss * loss_scaling` (a persistable float32 [1]
--   variable, `init_loss_scaling` at start-up), and its backward pass;
-- * the gradients divided by `loss_scaling` again;
-- * a check that every gradient is finite: a step whose gradients hold an
--   Inf or a NaN applies zero gradients instead (SGD then leaves the
--   parameters as they are; methods with state, such as momentum or Adam,
--   still decay it);
-- * with `use_dynamic_loss_scaling`, the scaling's update: times
--   `incr_ratio` after `incr_every_n_steps` finite steps in a row, times
--   `decr_ratio` (never below 1) after `decr_every_n_nan_or_inf`
--   non-finite ones.
--
-- The scaling keeps small float16 gradients from flushing to zero; in
-- float32 it changes nothing but rounding.
--
-- With `use_fp16_compute = true` the forward program is first rewritten for
-- mixed precision (Fluid's `rewrite_program`, see `rewrite_program`): ops on
-- the white list (`mul`, `matmul`, `conv2d`) run in float16, their float32
-- inputs cast once each (parameters stay float32 master weights, so the
-- optimizer updates float32 values and needs no float16 kernel); ops on the
-- black list (losses, `mean`, `softmax`, reductions) run in float32, their
-- float16 inputs cast back; gray ops (elementwise, activations, `pool2d`,
-- `batch_norm`) run in float16 when one of their inputs is float16; any
-- other op runs in float32. The backward pass then produces float32
-- parameter gradients through `cast`'s gradient. Float16 compute kernels
-- are CUDA's; the CPU has float16 `mul`, `elementwise_add` and `relu` only
-- (enough for an MLP): any other float16 op on the CPU fails naming the op
-- ("no CPU kernel for dtype float16").
-- @module oar.amp
-- @usage
-- local opt = oar.amp.decorate(oar.optimizer.SGD{learning_rate = 0.1},
--   {init_loss_scaling = 1024, use_dynamic_loss_scaling = true})
-- opt:minimize(loss)
-- -- opt.loss_scaling is the scaling variable, opt.scaled_loss the scaled loss
-- @usage
-- -- mixed precision (float16 compute on CUDA):
-- local opt = oar.amp.decorate(oar.optimizer.Momentum{learning_rate = 0.01, momentum = 0.9},
--   {use_fp16_compute = true, init_loss_scaling = 2^15, use_dynamic_loss_scaling = true,
--    amp_lists = oar.amp.AutoMixedPrecisionLists{custom_black_list = {"pool2d"}}})
local framework = require("oar.framework")
local argcheck = require("oar.argcheck")
local unique_name = require("oar.unique_name")
local layers = require("oar.layers")
local dtypes = require("oar.dtypes")

local raise = framework.raise
local M = {}

-- ==== mixed-precision op lists and the program rewrite ======================

-- Fluid's defaults (fp16_lists.py), the gray list cut to the ops that have
-- float16 kernels (on CUDA): a gray op without one would fail at run time.
local DEFAULT_WHITE = { "conv2d", "matmul", "matmul_v2", "mul" }
local DEFAULT_BLACK = { "exp", "square", "log", "mean", "sum", "cos_sim", "softmax", "softmax_with_cross_entropy",
  "sigmoid_cross_entropy_with_logits", "cross_entropy", "cross_entropy2", "reduce_sum", "reduce_mean" }
local DEFAULT_GRAY = { "elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div", "batch_norm",
  "tanh", "sigmoid", "relu", "leaky_relu", "gelu", "pool2d" }

-- slots that stay float32 in a float16 op (cuDNN's batch norm takes float32
-- scale, bias and statistics with half data)
local FP32_SLOTS = {
  batch_norm = { Scale = true, Bias = true, Mean = true, Variance = true, MeanOut = true, VarianceOut = true,
    SavedMean = true, SavedVariance = true, ReserveSpace = true },
}

local Lists = {}
Lists.__index = Lists

local function set_of(list) local s = {} for _, v in ipairs(list) do s[v] = true end return s end

local function names(who, key, v)
  if v == nil then return {} end
  if type(v) ~= "table" then raise(who .. ": '" .. key .. "' must be a list of strings, got " .. type(v)) end
  for i, x in ipairs(v) do
    if type(x) ~= "string" then
      raise(string.format("%s: '%s'[%d] must be a string, got %s", who, key, i, type(x)))
    end
  end
  return v
end

--- The op lists of mixed precision (Fluid's `AutoMixedPrecisionLists`).
-- White ops run in float16; black ops in float32; gray ops follow their
-- inputs (float16 when one is float16); any other op runs in float32.
-- Defaults: white `mul`, `matmul`, `matmul_v2`, `conv2d`; black `softmax`,
-- `softmax_with_cross_entropy`, `cross_entropy`, `mean`, `sum`, `reduce_sum`,
-- `reduce_mean`, `exp`, `log`, `square`, ...; gray the elementwise ops,
-- `relu`, `sigmoid`, `tanh`, `leaky_relu`, `gelu`, `pool2d`, `batch_norm`.
-- @tparam[opt] table opts `custom_white_list` (op types moved to white),
--   `custom_black_list` (moved to black), `custom_black_varnames` (ops that
--   read or write these variables run in float32)
-- @treturn table the lists: `white_list`, `black_list`, `gray_list`, `black_varnames` (sets)
-- @raise when an op type is in both custom lists
-- @usage local lists = oar.amp.AutoMixedPrecisionLists{custom_black_list = {"pool2d"}}
function M.AutoMixedPrecisionLists(opts)
  local who = "oar.amp.AutoMixedPrecisionLists"
  opts = opts or {}
  if type(opts) ~= "table" then raise(who .. ": expected a table of options, got " .. type(opts)) end
  argcheck.keys(who, opts, "custom_white_list custom_black_list custom_black_varnames")
  local white, black = names(who, "custom_white_list", opts.custom_white_list),
    names(who, "custom_black_list", opts.custom_black_list)
  local l = { white_list = set_of(DEFAULT_WHITE), black_list = set_of(DEFAULT_BLACK), gray_list = set_of(DEFAULT_GRAY),
    black_varnames = set_of(names(who, "custom_black_varnames", opts.custom_black_varnames)) }
  local bset = set_of(black)
  for _, t in ipairs(white) do
    if bset[t] then raise(who .. ": op type '" .. t .. "' is in both custom_white_list and custom_black_list") end
    l.white_list[t], l.black_list[t], l.gray_list[t] = true, nil, nil
  end
  for _, t in ipairs(black) do l.black_list[t], l.white_list[t], l.gray_list[t] = true, nil, nil end
  return setmetatable(l, Lists)
end

-- raises unless v is nil or made by AutoMixedPrecisionLists
local function check_lists(who, v)
  if v ~= nil and getmetatable(v) ~= Lists then
    raise(who .. ": 'amp_lists' must be an oar.amp.AutoMixedPrecisionLists{...}, got " .. type(v))
  end
end

-- the float32/float16 dense tensor `name` refers to, or nil
local function float_var(block, name)
  if name == "@EMPTY@" or not block:has_var_recursive(name) then return nil end
  local v = block:find_var_recursive(name)
  local dt = v.dtype
  if v.type ~= "lod_tensor" or (dt ~= "float32" and dt ~= "float16") then return nil end
  return v
end

-- The rewrite's state: the block, the cast variables made so far
-- (`casts[name][dtype]`, dropped when `name` is written again) and the
-- number of ops inserted.
local Rewriter = {}
Rewriter.__index = Rewriter

-- `v` in dtype `to`, cast before op position `pos` unless already cast since
-- its last write; returns the cast var's name and whether an op was inserted
function Rewriter:cast(v, to, pos)
  local name = rawget(v, "name")
  local byname = self.casts[name] or {}
  self.casts[name] = byname
  if byname[to] then return byname[to], false end
  local block = self.block
  local cname = name .. ".cast_" .. (to == "float16" and "fp16" or "fp32")
  if block:has_var_recursive(cname) then cname = unique_name.generate(cname) end
  local c = block:create_var{ name = cname, shape = v.shape, dtype = to, lod_level = v.lod_level,
    stop_gradient = v.stop_gradient }
  block:_insert_op(pos, { type = "cast", inputs = { X = { v } }, outputs = { Out = { c } },
    attrs = { in_dtype = dtypes.enum(v.dtype), out_dtype = dtypes.enum(to) } }, "oar.amp.rewrite_program")
  byname[to] = cname
  self.inserted[#self.inserted + 1] = { from = name, to = cname, dtype = to }
  return cname, true
end

-- the mode op runs in: "float16" or "float32"
function Rewriter:mode(op)
  local lists, t = self.lists, op.type
  for _, n in ipairs(op:input_arg_names()) do if lists.black_varnames[n] then return "float32" end end
  for _, n in ipairs(op:output_arg_names()) do if lists.black_varnames[n] then return "float32" end end
  if lists.white_list[t] then return "float16" end
  if not lists.gray_list[t] then return "float32" end
  local keep = FP32_SLOTS[t] or {}
  for _, slot in ipairs(op:input_names()) do
    if not keep[slot] then
      for _, n in ipairs(op:input(slot)) do
        local v = float_var(self.block, n)
        if v and v.dtype == "float16" then return "float16" end
      end
    end
  end
  return "float32"
end

-- rewrites the op at position pos; returns the position after it
function Rewriter:op(pos)
  local block = self.block
  local op = block:op(pos)
  local mode = self:mode(op)
  local keep = mode == "float16" and FP32_SLOTS[op.type] or {}
  local from = mode == "float16" and "float32" or "float16"
  local renames = {}
  for _, slot in ipairs(op:input_names()) do
    if not keep[slot] then
      for _, n in ipairs(op:input(slot)) do
        local v = float_var(block, n)
        if v and v.dtype == from and not renames[n] then
          local cname, inserted = self:cast(v, mode, pos)
          if inserted then pos = pos + 1 end
          renames[n] = cname
        end
      end
    end
  end
  op = block:op(pos)
  for n, cname in pairs(renames) do op:_rename_input(n, cname) end
  for _, slot in ipairs(op:output_names()) do
    for _, n in ipairs(op:output(slot)) do
      self.casts[n] = nil   -- written here: earlier casts are stale
      local v = float_var(block, n)
      if v and mode == "float16" and not keep[slot] and v.dtype == "float32" and not v.persistable then
        v.dtype = "float16"
      end
    end
  end
  return pos + 1
end

--- Rewrites a program's global block for mixed precision (Fluid's
-- `fp16_utils.rewrite_program`): each op runs in float16 or float32 by the
-- lists (see `AutoMixedPrecisionLists`), with `cast` ops inserted in front
-- of it for the inputs in the other dtype. A variable is cast at most once
-- between two writes (a parameter once per step); the float32 outputs of a
-- float16 op become float16, except persistable ones and batch_norm's
-- statistics; parameters stay float32. Call it on the forward program,
-- before the backward pass (`decorate` with `use_fp16_compute` does).
-- Sub-blocks are left as they are: control-flow ops run in float32.
-- @tparam Program program
-- @tparam[opt] table amp_lists an `AutoMixedPrecisionLists` (default lists when nil)
-- @treturn table the casts inserted, in order: `{from = name, to = name, dtype = "float16"|"float32"}`
-- @usage local casts = oar.amp.rewrite_program(main, oar.amp.AutoMixedPrecisionLists())
function M.rewrite_program(program, amp_lists)
  local who = "oar.amp.rewrite_program"
  if not framework.is_program(program) then raise(who .. ": 'program' must be a Program, got " .. type(program)) end
  check_lists(who, amp_lists)
  local rw = setmetatable({ block = program:global_block(), lists = amp_lists or M.AutoMixedPrecisionLists(),
    casts = {}, inserted = {} }, Rewriter)
  local pos = 0
  while pos < rw.block:num_ops() do pos = rw:op(pos) end
  return rw.inserted
end

local Decorated = {}
Decorated.__index = Decorated

local OPTS = "init_loss_scaling use_dynamic_loss_scaling incr_every_n_steps decr_every_n_nan_or_inf " ..
  "incr_ratio decr_ratio use_fp16_compute amp_lists"

local function number(who, name, v, lo, integer)
  if type(v) ~= "number" or v ~= v or v < lo or (integer and v % 1 ~= 0) then
    raise(string.format("%s: '%s' must be %s >= %s, got %s", who, name, integer and "an integer" or "a number",
      tostring(lo), tostring(v)))
  end
  return v
end

--- Wraps an optimizer with loss scaling.
-- @tparam Optimizer optimizer e.g. `oar.optimizer.SGD{...}`
-- @tparam[opt] table opts `init_loss_scaling` (1.0), `use_dynamic_loss_scaling`
--   (false), `incr_every_n_steps` (1000), `decr_every_n_nan_or_inf` (2),
--   `incr_ratio` (2.0), `decr_ratio` (0.8); `use_fp16_compute` (false: loss
--   scaling only; true: `minimize` first rewrites the forward program for
--   mixed precision, see `rewrite_program`), `amp_lists` (an
--   `AutoMixedPrecisionLists`, default lists when nil; needs
--   `use_fp16_compute`). Parameters always stay float32 (master weights).
-- @treturn table the decorated optimizer (its `minimize(loss, opts)` takes the optimizer's options)
-- @usage local opt = oar.amp.decorate(oar.optimizer.Adam{learning_rate = 1e-3}, {init_loss_scaling = 128})
function M.decorate(optimizer, opts)
  local who = "oar.amp.decorate"
  if type(optimizer) ~= "table" or type(optimizer.minimize) ~= "function" or type(optimizer.backward) ~= "function" then
    raise(who .. ": 'optimizer' must be an optimizer (oar.optimizer.SGD{...}, ...), got " .. type(optimizer))
  end
  opts = opts or {}
  argcheck.keys(who, opts, OPTS)
  local d = {
    optimizer = optimizer,
    init_loss_scaling = number(who, "init_loss_scaling", opts.init_loss_scaling or 1.0, 0),
    dynamic = opts.use_dynamic_loss_scaling == true,
    incr_every_n_steps = number(who, "incr_every_n_steps", opts.incr_every_n_steps or 1000, 1, true),
    decr_every_n_nan_or_inf = number(who, "decr_every_n_nan_or_inf", opts.decr_every_n_nan_or_inf or 2, 1, true),
    incr_ratio = number(who, "incr_ratio", opts.incr_ratio or 2.0, 1),
    decr_ratio = number(who, "decr_ratio", opts.decr_ratio or 0.8, 0),
  }
  if opts.use_dynamic_loss_scaling ~= nil and type(opts.use_dynamic_loss_scaling) ~= "boolean" then
    raise(who .. ": 'use_dynamic_loss_scaling' must be a boolean, got " .. type(opts.use_dynamic_loss_scaling))
  end
  if d.decr_ratio >= 1 then raise(who .. ": 'decr_ratio' must be below 1, got " .. d.decr_ratio) end
  if opts.use_fp16_compute ~= nil and type(opts.use_fp16_compute) ~= "boolean" then
    raise(who .. ": 'use_fp16_compute' must be a boolean, got " .. type(opts.use_fp16_compute))
  end
  d.use_fp16_compute = opts.use_fp16_compute == true
  check_lists(who, opts.amp_lists)
  if opts.amp_lists ~= nil and not d.use_fp16_compute then
    raise(who .. ": 'amp_lists' needs 'use_fp16_compute = true'")
  end
  d.amp_lists = opts.amp_lists or (d.use_fp16_compute and M.AutoMixedPrecisionLists() or nil)
  return setmetatable(d, Decorated)
end

-- ops on [1]-shaped float32 temporaries of the current block
local Builder = {}
Builder.__index = Builder

local function builder(program)
  return setmetatable({ program = program }, Builder)
end

function Builder:var(prefix, dtype, shape)
  return self.program:current_block():create_var{ name = unique_name.generate("amp_" .. prefix),
    dtype = dtype or "float32", shape = shape or { 1 }, stop_gradient = true }
end

function Builder:op(type, inputs, attrs, out, prefix, dtype, shape)
  out = out or self:var(prefix or type, dtype, shape)
  self.program:current_block():append_op{ type = type, inputs = inputs, outputs = { Out = { out } }, attrs = attrs or {} }
  return out
end

function Builder:ew(type, x, y, prefix)
  return self:op(type, { X = { x }, Y = { y } }, { axis = -1 }, nil, prefix, x.dtype, x.shape)
end

function Builder:const(value, prefix)
  return self:op("fill_constant", {}, { shape = { 1 }, dtype = 5, value = value }, nil, prefix or "const")
end

function Builder:scale(x, s, b)
  return self:op("scale", { X = { x } }, { scale = s, bias = b or 0 }, nil, "scale", x.dtype, x.shape)
end

-- 1.0 where cond (bool [1]) holds, else 0.0
function Builder:as_float(cond)
  return self:op("cast", { X = { cond } }, { in_dtype = 0, out_dtype = 5 }, nil, "cast")
end

--- Builds the scaled loss, its backward pass, the unscaling and finiteness
-- check, the scaling's update (dynamic) and the optimizer's update ops.
-- @tparam Variable loss a scalar loss
-- @tparam[opt] table opts the optimizer's minimize options (startup_program, parameter_list, no_grad_set)
-- @treturn table the update ops
-- @treturn table the `{param, grad}` pairs with the unscaled gradients
-- @usage opt:minimize(avg_loss)
function Decorated:minimize(loss, opts)
  local who = "oar.amp decorated minimize"
  if not framework.is_variable(loss) then raise(who .. ": 'loss' must be a Variable, got " .. type(loss)) end
  opts = opts or {}
  local program = loss.block.program
  local startup = opts.startup_program or framework.default_startup_program()
  local result_ops, result_pg
  -- the casts of a mixed-precision rewrite (before the backward pass, which
  -- then differentiates through them)
  if self.use_fp16_compute then self.casts = M.rewrite_program(program, self.amp_lists) end
  framework.program_guard(program, startup, function()
    local b = builder(program)
    local ls = layers.create_global_var{ name = unique_name.generate("loss_scaling"), shape = { 1 }, dtype = "float32",
      value = self.init_loss_scaling, persistable = true }
    self.loss_scaling = ls
    self.scaled_loss = b:ew("elementwise_mul", loss, ls, "scaled_loss")
    local pg = self.optimizer:backward(self.scaled_loss, opts)
    -- unscale; sum(0 * g) over every gradient is 0 exactly when all are finite
    local zero_sums, kept = {}, {}
    for _, p in ipairs(pg) do
      if p[2] ~= nil then
        local g = b:ew("elementwise_div", p[2], ls, "unscaled_grad")
        kept[#kept + 1] = { p[1], g }
        zero_sums[#zero_sums + 1] = b:op("reduce_sum", { X = { b:scale(g, 0) } }, { reduce_all = true }, nil, "zsum")
      end
    end
    if #kept == 0 then raise(who .. ": the loss has no gradient with respect to any parameter") end
    local total = b:op("sum", { X = zero_sums }, {}, nil, "zsum_total")
    local finite = b:op("equal", { X = { total }, Y = { b:const(0) } }, { axis = -1 }, nil, "finite", "bool")
    local f = b:as_float(finite)
    self.finite = finite
    -- a non-finite step applies zero gradients: min/max map NaN and Inf to
    -- finite bounds first (0 * NaN would stay NaN), then the 0/1 factor
    local big, nbig = b:const(3e38, "big"), b:const(-3e38, "nbig")
    for i, p in ipairs(kept) do
      local g = b:ew("elementwise_max", b:ew("elementwise_min", p[2], big), nbig)
      kept[i] = { p[1], b:ew("elementwise_mul", g, f, "amp_grad") }
    end
    if self.dynamic then self:_update_scaling(b, ls, f) end
    result_ops = self.optimizer:apply_gradients(kept, program, startup)
    result_pg = kept
  end)
  return result_ops, result_pg
end

-- good/bad step counters and the scaling's update, as arithmetic on [1]
-- tensors: f is 1.0 for a finite step, else 0.0
function Decorated:_update_scaling(b, ls, f)
  local function counter(name)
    return layers.create_global_var{ name = unique_name.generate(name), shape = { 1 }, dtype = "float32", value = 0,
      persistable = true }
  end
  local good, bad = counter("amp_good_steps"), counter("amp_bad_steps")
  self.good_steps, self.bad_steps = good, bad
  local not_f = b:scale(f, -1, 1)
  local good_n = b:ew("elementwise_mul", b:scale(good, 1, 1), f)
  local bad_n = b:ew("elementwise_mul", b:scale(bad, 1, 1), not_f)
  local inc = b:as_float(b:op("greater_equal", { X = { good_n }, Y = { b:const(self.incr_every_n_steps) } },
    { axis = -1 }, nil, "inc", "bool"))
  local dec = b:as_float(b:op("greater_equal", { X = { bad_n }, Y = { b:const(self.decr_every_n_nan_or_inf) } },
    { axis = -1 }, nil, "dec", "bool"))
  local up = b:scale(inc, self.incr_ratio - 1, 1)     -- incr_ratio after a run of finite steps, else 1
  local down = b:scale(dec, self.decr_ratio - 1, 1)   -- decr_ratio after a run of bad ones, else 1
  local new_ls = b:ew("elementwise_max", b:ew("elementwise_mul", b:ew("elementwise_mul", ls, up), down), b:const(1))
  b:op("assign", { X = { new_ls } }, {}, ls)
  b:op("assign", { X = { b:ew("elementwise_mul", good_n, b:scale(inc, -1, 1)) } }, {}, good)
  b:op("assign", { X = { b:ew("elementwise_mul", bad_n, b:scale(dec, -1, 1)) } }, {}, bad)
end

require("oar.framework")._guard_methods(Decorated, function(x) return getmetatable(x) == Decorated end,
  "amp decorated optimizer", {})

return M
