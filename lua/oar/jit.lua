--- From eager to static (docs/eager.md, "From eager to static"): `trace`
-- runs a module or a function once on example inputs, records every eager
-- op call into an `oar.Program`, and returns a callable that runs that
-- program on the prepared executor.
--
-- What is recorded is what ran: a Lua `if` on a tensor's value or shape is
-- frozen at the branch the example took (as torch.jit.trace), numbers read
-- out of tensors (`:item()`, a reduction to a number, gather's indices) are
-- frozen as they were, and the program takes inputs of the example shapes
-- only (a call with others is refused).
-- @module oar.jit
local ffi = require("ffi")
local eager = require("oar.eager")
local tensor = require("oar.tensor")
local framework = require("oar.framework")
local scope_mod = require("oar.scope")
local executor = require("oar.executor")

local M = {}
local is_tensor = tensor.is_tensor
local unpack = table.unpack or unpack
local function pack(...) return { n = select("#", ...), ... } end

local function fail(msg) error(msg, 3) end

local function shape_text(s) return "[" .. table.concat(s, ", ") .. "]" end

-- a tensor's identity: its C handle (detach and state_dict share it)
local function key(t) return tostring(ffi.cast("uintptr_t", t.handle)) end

local Traced = {}
Traced.__index = Traced
M.Traced = Traced

-- ---- the recorder ------------------------------------------------------------------------

-- inputs: the example tensors; names: key -> {name, kind} for module
-- parameters and buffers
local function new_recorder(inputs, named)
  local r = {
    names = {},      -- key -> variable name
    vars = {},       -- in creation order: {name, shape, dtype, kind, value}
    ops = {},        -- {type, inputs, outputs, attrs}
    keep = {},       -- every tensor seen, so no handle address is reused during the trace
    inputs = {},     -- key -> input position
    count = { t = 0, param = 0, const = 0 },
  }
  local function add_var(t, name, kind, value)
    r.names[key(t)] = name
    r.keep[#r.keep + 1] = t
    r.vars[#r.vars + 1] = { name = name, shape = t:shape(), dtype = t:dtype(), kind = kind, value = value }
  end
  for i, t in ipairs(inputs) do
    add_var(t, "x" .. i, "feed")
    r.inputs[key(t)] = i
  end

  -- a tensor no recorded op made: a parameter, a buffer or a constant, its
  -- value as it is now
  local function leaf(t)
    local k = key(t)
    local m = named[k]
    local kind, name
    if m then
      kind, name = m.kind, m.name
    elseif rawget(t, "_rg") then
      r.count.param = r.count.param + 1
      kind, name = "param", "param_" .. r.count.param
    else
      r.count.const = r.count.const + 1
      kind, name = "const", "const_" .. r.count.const
    end
    add_var(t, name, kind, eager._plain_clone(t))
    return name
  end
  r.leaf = leaf

  local function name_of(t)
    return r.names[key(t)] or leaf(t)
  end

  function r.op(h, ins, outs)
    local inputs, pos = {}, 0
    for _, s in ipairs(h.in_spec) do
      local list = {}
      for j = 1, s[2] do list[j] = name_of(ins[pos + j]) end
      pos = pos + s[2]
      inputs[s[1]] = list
    end
    local attrs = h.attrs or {}
    -- inference batch_norm updates its statistics in place, as the static
    -- layer writes it (Fluid and Paddle expect MeanOut to be Mean)
    local alias = {}
    if h.type == "batch_norm" and attrs.is_test then
      alias.MeanOut, alias.VarianceOut = inputs.Mean[1], inputs.Variance[1]
    end
    local outputs
    outputs, pos = {}, 0
    for _, s in ipairs(h.out_spec) do
      local list = {}
      for j = 1, s[2] do
        local t = outs[pos + j]
        if alias[s[1]] then
          list[j] = alias[s[1]]
        else
          r.count.t = r.count.t + 1
          local name = "t_" .. r.count.t
          if t then
            add_var(t, name, "tmp")
          else
            r.vars[#r.vars + 1] = { name = name, kind = "tmp" }
          end
          list[j] = name
        end
      end
      pos = pos + s[2]
      outputs[s[1]] = list
    end
    r.ops[#r.ops + 1] = { type = h.type, inputs = inputs, outputs = outputs, attrs = attrs }
  end

  function r.write(t, who)
    local k = key(t)
    if r.inputs[k] or (r.names[k] and not named[k]) then
      error(who .. ": jit.trace: an in-place write into a traced tensor cannot be recorded; " ..
        "compute a new tensor instead", 0)
    end
  end
  return r
end

-- ---- building the program ----------------------------------------------------------------

local function build(r)
  local prog = framework.Program()
  local gb = prog:global_block()
  local scope = scope_mod.new()
  for _, v in ipairs(r.vars) do
    if v.kind == "param" then
      if #v.shape > 0 then
        gb:create_parameter{ name = v.name, shape = v.shape, dtype = v.dtype }
      else
        gb:create_var{ name = v.name, shape = v.shape, dtype = v.dtype, persistable = true }
      end
    else
      gb:create_var{ name = v.name, shape = v.shape, dtype = v.dtype,
        persistable = v.kind == "const" or v.kind == "buffer" }
    end
    if v.value then scope:var(v.name):set_tensor(v.value) end
  end
  for _, op in ipairs(r.ops) do
    gb:append_op{ type = op.type, inputs = op.inputs, outputs = op.outputs, attrs = op.attrs }
  end
  return prog, scope
end

--- Records a module or a function as an `oar.Program` by running it once:
-- each example input becomes a `data` variable (feed names `x1`, `x2`, ...),
-- module parameters and buffers become persistable variables named by
-- their `state_dict` paths (`"0.weight"`), holding their values as they are
-- now, other tensors the function reads become persistable variables too
-- (`param_N` when they require grad, `const_N` otherwise), and what it
-- returns become the fetch targets. Modules are traced in their current
-- mode: call `model:eval()` first for inference. Lua control flow is frozen
-- at the branch the example took.
-- @tparam Module|function fn what to trace; it returns one or more tensors
-- @tparam {Tensor,...} inputs example inputs (one tensor alone also works)
-- @treturn Traced callable: `traced(x1, ...)` returns what fn returned
-- @usage
-- local model = oar.nn.Sequential(oar.nn.Linear(4, 3), oar.nn.ReLU())
-- local traced = oar.jit.trace(model, {oar.randn(2, 4)})
-- local y = traced(oar.randn(2, 4))
function M.trace(fn, inputs)
  local nn = require("oar.nn")
  local is_module = nn.is_module(fn)
  if not is_module and type(fn) ~= "function" then
    fail("jit.trace: expected a module or a function, got " .. type(fn))
  end
  if is_tensor(inputs) then inputs = { inputs } end
  if type(inputs) ~= "table" or #inputs == 0 then
    fail("jit.trace: expected a list of example input tensors, got " .. type(inputs))
  end
  local seen = {}
  for i, t in ipairs(inputs) do
    if not is_tensor(t) then fail(string.format("jit.trace: input %d must be a Tensor, got %s", i, type(t))) end
    if seen[key(t)] then fail(string.format("jit.trace: input %d is input %d again", i, seen[key(t)])) end
    seen[key(t)] = i
  end
  local named = {}
  if is_module then
    for name, t in pairs(fn:state_dict()) do named[key(t)] = { name = name, kind = "buffer" } end
    for _, p in ipairs(fn:named_parameters()) do named[key(p[2])] = { name = p[1], kind = "param" } end
  end

  local r = new_recorder(inputs, named)
  local was = eager._set_tracer(r)
  local res = pack(pcall(fn, unpack(inputs)))
  eager._set_tracer(was)
  if not res[1] then error(res[2], 0) end
  if res.n < 2 then fail("jit.trace: the traced " .. (is_module and "module" or "function") .. " returned nothing") end

  local out_names = {}
  for i = 2, res.n do
    local t = res[i]
    if not is_tensor(t) then
      fail(string.format("jit.trace: result %d is a %s; a traced function returns tensors", i - 1, type(t)))
    end
    local name = r.names[key(t)] or r.leaf(t)
    out_names[#out_names + 1] = name
  end

  local prog, scope = build(r)
  local feeds, specs = {}, {}
  for i, t in ipairs(inputs) do
    feeds[i] = "x" .. i
    specs[i] = { shape = t:shape(), dtype = t:dtype() }
  end
  return setmetatable({ _program = prog, _scope = scope, _exe = executor.Executor(), _feeds = feeds,
    _specs = specs, _outs = out_names }, Traced)
end

--- Runs the recorded program on inputs of the example shapes and dtypes;
-- returns its outputs, as the traced function returned them.
-- @param ... input tensors
-- @treturn Tensor the outputs
-- @usage local y = traced(oar.randn(2, 4))
function Traced:__call(...)
  local n = select("#", ...)
  if n ~= #self._feeds then
    fail(string.format("jit: the traced program takes %d inputs, got %d", #self._feeds, n))
  end
  local feed = {}
  for i = 1, n do
    local t = select(i, ...)
    if not is_tensor(t) then fail(string.format("jit: input %d must be a Tensor, got %s", i, type(t))) end
    local want, have = self._specs[i], t:shape()
    local same = #want.shape == #have
    for d = 1, #have do if want.shape[d] ~= have[d] then same = false end end
    if not same then
      fail(string.format("jit: input %d has shape %s, the traced program takes %s (it is specialized to the " ..
        "example's shapes: trace again with inputs of this shape)", i, shape_text(have), shape_text(want.shape)))
    end
    if t:dtype() ~= want.dtype then
      fail(string.format("jit: input %d is %s, the traced program takes %s", i, t:dtype(), want.dtype))
    end
    feed[self._feeds[i]] = t
  end
  local out = self._exe:run(self._program, { feed = feed, fetch_list = self._outs, scope = self._scope })
  return unpack(out, 1, #self._outs)
end

--- The recorded program (feeds `x1`, ...; see `feed_names`, `fetch_names`).
-- @treturn Program
-- @usage print(traced:program())
function Traced:program() return self._program end

--- The scope holding the parameters and constants the program reads.
-- @treturn Scope
-- @usage local w = traced:scope():var("0.weight"):get_tensor()
function Traced:scope() return self._scope end

--- The feed variables' names, in input order.
-- @treturn {string,...}
-- @usage local names = traced:feed_names()   -- {"x1"}
function Traced:feed_names() return { unpack(self._feeds) } end

--- The fetch targets' names, in output order.
-- @treturn {string,...}
-- @usage local names = traced:fetch_names()
function Traced:fetch_names() return { unpack(self._outs) } end

--- Writes an inference model (`oar.io.save_inference_model`: Fluid's
-- layout) that `oar.io.load_inference_model`, the C predictor and
-- PaddlePaddle load.
-- @tparam string dirname the directory
-- @tparam[opt] table opts `{model_filename=, params_filename=}`
-- @treturn {string,...} the targets' names
-- @usage traced:save_inference_model("model_dir")
function Traced:save_inference_model(dirname, opts)
  local o = { scope = self._scope }
  for k, v in pairs(opts or {}) do o[k] = v end
  return require("oar.io").save_inference_model(dirname, self._feeds, self._outs, self._exe, self._program, o)
end

function Traced:__tostring()
  return string.format("Traced(%d inputs, %d ops, %d outputs)", #self._feeds,
    self._program:global_block():num_ops(), #self._outs)
end

return M
