--- oar.nn: eager modules (Torch7's nn, PyTorch's torch.nn, Fluid's dygraph
-- layers) over eager tensors (docs/eager.md, "Training a model eagerly").
--
-- A module holds parameters (tensors that require grad), buffers (tensors
-- saved in its state but not trained, like BatchNorm's running statistics)
-- and child modules, each in the order it was registered; calling it
-- (`m(x)`) runs its `forward`. Every forward is eager calls of the same
-- registered ops the static layers append (Linear: mul and
-- elementwise_add as layers.fc; Conv2D: conv2d; BatchNorm: batch_norm...),
-- so autograd runs their grad ops. Parameters are initialized as the
-- static layers initialize them (Linear: Xavier uniform weight, zero bias;
-- Conv2D: Normal(0, sqrt(2 / fan_in)); Embedding: Xavier), drawn by the
-- same random ops from the generator `oar.seed` sets.
-- @module oar.nn
local eager = require("oar.eager")
local tensor = require("oar.tensor")
local dtypes = require("oar.dtypes")

local is_tensor = tensor.is_tensor
local run = eager._run
local fail = eager._fail
eager._internal_source(debug.getinfo(1, "S").source)   -- errors point at the user's line

local M = {}

local function shape_text(s) return "[" .. table.concat(s, ", ") .. "]" end

-- ---- classes -------------------------------------------------------------------------

--- The base class of modules. `nn.Module:extend("Name")` makes a class;
-- calling the class makes an instance and runs its `init(...)`; calling an
-- instance runs its `forward(...)`. Assigning a module or a tensor that
-- requires grad to a field registers it as a child or a parameter.
-- @type Module
local Module = {}
M.Module = Module

local function class_of(obj) return getmetatable(obj) end

--- Whether x is a module (an instance of Module or of a class extending it).
-- @usage assert(oar.nn.is_module(oar.nn.ReLU()))
function M.is_module(x)
  local mt = type(x) == "table" and getmetatable(x)
  return mt and rawget(mt, "_is_class") == true or false
end
local is_module = M.is_module

-- instances: fields of the instance, then its parameters, buffers and
-- children, then the class's methods (the class chain)
local function instance_index(t, k)
  local p = rawget(t, "_params")
  local v = p[k]
  if v ~= nil then return v end
  v = rawget(t, "_buffers")[k]
  if v ~= nil then return v end
  v = rawget(t, "_modules")[k]
  if v ~= nil then return v end
  return getmetatable(t)[k]
end

local function register(t, kind, order, k, v)
  local store = rawget(t, kind)
  if store[k] == nil then
    local list = rawget(t, order)
    list[#list + 1] = k
  end
  store[k] = v
end

local function instance_newindex(t, k, v)
  if is_module(v) then
    rawset(v, "_name", tostring(k))
    register(t, "_modules", "_morder", k, v)
  elseif is_tensor(v) and rawget(v, "_rg") then
    register(t, "_params", "_porder", k, v)
  elseif rawget(t, "_params")[k] ~= nil and is_tensor(v) then
    register(t, "_params", "_porder", k, v)
  elseif rawget(t, "_buffers")[k] ~= nil and is_tensor(v) then
    register(t, "_buffers", "_border", k, v)
  else
    rawset(t, k, v)
  end
end

local function new_instance(cls, ...)
  local obj = setmetatable({ _params = {}, _porder = {}, _buffers = {}, _border = {}, _modules = {}, _morder = {},
                             training = true }, cls)
  obj:init(...)
  return obj
end

local function setup_class(cls, parent, name)
  rawset(cls, "_is_class", true)
  rawset(cls, "_class_name", name)
  -- metamethods are looked up raw: each class carries its own
  rawset(cls, "__index", instance_index)
  rawset(cls, "__newindex", instance_newindex)
  rawset(cls, "__call", function(self, ...) return self:forward(...) end)
  rawset(cls, "__tostring", function(self) return self:__repr() end)
  return setmetatable(cls, { __index = parent, __call = new_instance,
                             __tostring = function() return "nn." .. name .. " (class)" end })
end
setup_class(Module, nil, "Module")

--- A new class extending this one; define its `init` and `forward`.
-- @tparam string name the class's name (in messages and printing)
-- @treturn table the class: call it to make instances
-- @usage local Net = oar.nn.Module:extend("Net")
-- function Net:init() self.fc = oar.nn.Linear(4, 2) end
-- function Net:forward(x) return self.fc(x):relu() end
-- local y = Net()(oar.randn(3, 4))
function Module:extend(name)
  if type(name) ~= "string" then fail("Module:extend: expected a class name string, got " .. type(name)) end
  return setup_class({}, self, name)
end

--- Sets up a new instance (the class's constructor arguments); the base does nothing.
-- @usage local m = oar.nn.Module()
function Module:init() end

--- Computes the output; classes define it.
-- @usage local Id = oar.nn.Module:extend("Id"); function Id:forward(x) return x end
function Module:forward()
  fail(string.format("nn.%s: forward is not defined (define %s:forward(...))", self._class_name, self._class_name))
end

--- The name the module has in its parent (nil for a root), or its class name.
-- @usage local name = oar.nn.Linear(2, 2):name()   -- "Linear"
function Module:name()
  local n = rawget(self, "_name")
  if n then return self._class_name .. " '" .. n .. "'" end
  return self._class_name
end

--- Registers a child module under `name` (as `self[name] = m` does); returns self.
-- @usage local m = oar.nn.Module():add_module("act", oar.nn.ReLU())
function Module:add_module(name, m)
  if not is_module(m) then fail("add_module: expected a module, got " .. type(m)) end
  rawset(m, "_name", tostring(name))
  register(self, "_modules", "_morder", tostring(name), m)
  return self
end

--- Registers a tensor as a parameter under `name` (marking it to require grad); returns the tensor.
-- @usage local m = oar.nn.Module(); m:register_parameter("w", oar.zeros(3))
function Module:register_parameter(name, t)
  if not is_tensor(t) then fail("register_parameter: expected a tensor, got " .. type(t)) end
  t:requires_grad()
  register(self, "_params", "_porder", name, t)
  return t
end

--- Registers a tensor as a buffer: in the state, not trained; returns the tensor.
-- @usage local m = oar.nn.Module(); m:register_buffer("count", oar.zeros(1))
function Module:register_buffer(name, t)
  if not is_tensor(t) then fail("register_buffer: expected a tensor, got " .. type(t)) end
  register(self, "_buffers", "_border", name, t)
  return t
end

--- The child modules, in registration order.
-- @treturn {Module,...}
-- @usage local kids = oar.nn.Sequential(oar.nn.ReLU(), oar.nn.Tanh()):children()
function Module:children()
  local out = {}
  for _, k in ipairs(self._morder) do out[#out + 1] = self._modules[k] end
  return out
end

-- visits (path prefix, module) depth first, the module before its children
local function walk(m, prefix, f)
  f(prefix, m)
  for _, k in ipairs(m._morder) do walk(m._modules[k], prefix .. k .. ".", f) end
end

--- The parameters as `{name, tensor}` pairs with dotted paths ("fc.weight"), the module's own first, then its children's, in registration order.
-- @treturn {{string,Tensor},...}
-- @usage for _, p in ipairs(model:named_parameters()) do print(p[1]) end
function Module:named_parameters()
  local out, seen = {}, {}
  walk(self, "", function(prefix, m)
    for _, k in ipairs(m._porder) do
      local t = m._params[k]
      if not seen[t] then seen[t] = true; out[#out + 1] = { prefix .. k, t } end
    end
  end)
  return out
end

--- The parameters (each once), in the order of `named_parameters`: what an optimizer's `parameters=` takes.
-- @treturn {Tensor,...}
-- @usage local opt = oar.optimizer.SGD{learning_rate = 0.1, parameters = model:parameters()}
function Module:parameters()
  local out = {}
  for i, p in ipairs(self:named_parameters()) do out[i] = p[2] end
  return out
end

--- The parameters and buffers by dotted path ("0.weight", "bn.running_mean"); the tensors are detached and share the module's memory.
-- @treturn table name -> Tensor
-- @usage oar.save(model:state_dict(), path)
function Module:state_dict()
  local out = {}
  walk(self, "", function(prefix, m)
    for _, k in ipairs(m._porder) do out[prefix .. k] = m._params[k]:detach() end
    for _, k in ipairs(m._border) do out[prefix .. k] = m._buffers[k]:detach() end
  end)
  return out
end

--- Copies the values of a state (what `state_dict` returned, or `oar.load` read) into the parameters and buffers; every key must match, with its shape, unless strict is false (then missing and unexpected keys are skipped). Returns self.
-- @tparam table sd name -> Tensor
-- @tparam[opt=true] bool strict
-- @usage model:load_state_dict(oar.load(path))
function Module:load_state_dict(sd, strict)
  if type(sd) ~= "table" then fail("load_state_dict: expected a table name -> tensor, got " .. type(sd)) end
  strict = strict ~= false
  local targets = {}
  walk(self, "", function(prefix, m)
    for _, k in ipairs(m._porder) do targets[prefix .. k] = m._params[k] end
    for _, k in ipairs(m._border) do targets[prefix .. k] = m._buffers[k] end
  end)
  if strict then
    local missing, unexpected = {}, {}
    for k in pairs(targets) do if sd[k] == nil then missing[#missing + 1] = k end end
    for k in pairs(sd) do if targets[k] == nil then unexpected[#unexpected + 1] = tostring(k) end end
    table.sort(missing); table.sort(unexpected)
    if #missing > 0 or #unexpected > 0 then
      fail(string.format("load_state_dict (%s): missing keys {%s}, unexpected keys {%s}", self:name(),
        table.concat(missing, ", "), table.concat(unexpected, ", ")))
    end
  end
  for k, t in pairs(targets) do
    local v = sd[k]
    if v ~= nil then
      if not is_tensor(v) then fail(string.format("load_state_dict: '%s' is a %s, expected a tensor", k, type(v))) end
      local a, b = t:shape(), v:shape()
      if shape_text(a) ~= shape_text(b) then
        fail(string.format("load_state_dict (%s): '%s' has shape %s here, %s in the state", self:name(), k,
          shape_text(a), shape_text(b)))
      end
    end
  end
  eager.no_grad(function()
    for k, t in pairs(targets) do
      local v = sd[k]
      if v ~= nil and v ~= t then t:copy(v) end
    end
  end)
  return self
end

--- Sets training mode (on by default; false: evaluation) here and in every child; Dropout and BatchNorm behave by it. Returns self.
-- @tparam[opt=true] bool on
-- @usage model:train()
function Module:train(on)
  on = on ~= false
  walk(self, "", function(_, m) rawset(m, "training", on) end)
  return self
end

--- Evaluation mode: `train(false)`. Returns self.
-- @usage model:eval()
function Module:eval() return self:train(false) end

--- Forgets every parameter's gradient (`p.grad = nil`).
-- @usage model:zero_grad()
function Module:zero_grad()
  for _, p in ipairs(self:parameters()) do rawset(p, "grad", nil) end
end

--- A one-line description of the module and its children, nested.
-- @usage print(oar.nn.Sequential(oar.nn.Linear(2, 3), oar.nn.ReLU()))
function Module:__repr()
  local head = "nn." .. self._class_name .. (self.extra_repr and "(" .. self:extra_repr() .. ")" or "")
  if #self._morder == 0 then return head end
  local parts = {}
  for _, k in ipairs(self._morder) do
    parts[#parts + 1] = "  (" .. k .. "): " .. tostring(self._modules[k]):gsub("\n", "\n  ")
  end
  return head .. " {\n" .. table.concat(parts, "\n") .. "\n}"
end

-- ---- parameter initialization (as the static layers' initializers) ------------------

local F32 = dtypes.enum("float32")

local function uniform(shape, lo, hi)
  return run("uniform_random", {}, { { "Out", 1 } }, { shape = shape, min = lo, max = hi, seed = 0, dtype = F32 })[1]
end
local function normal(shape, std)
  return run("gaussian_random", {}, { { "Out", 1 } }, { shape = shape, mean = 0, std = std, seed = 0, dtype = F32 })[1]
end
-- Xavier uniform with initializer.compute_fans' fans (initializer.Xavier())
local function xavier(shape)
  local fan_in, fan_out = require("oar.initializer").compute_fans(shape)
  local limit = math.sqrt(6.0 / (fan_in + fan_out))
  return uniform(shape, -limit, limit)
end

local function positive_int(who, what, v)
  if type(v) ~= "number" or v < 1 or v % 1 ~= 0 then
    fail(string.format("%s: %s must be a positive integer, got %s", who, what, tostring(v)))
  end
  return v
end

local function opts_table(who, opts, known)
  if opts == nil then return {} end
  if type(opts) ~= "table" then fail(who .. ": options must be a table, got " .. type(opts)) end
  require("oar.argcheck").keys(who, opts, known)
  return opts
end

local function pair(who, what, v, default)
  if v == nil then v = default end
  if type(v) == "number" then v = { v, v } end
  if type(v) ~= "table" or #v ~= 2 or type(v[1]) ~= "number" or type(v[2]) ~= "number" then
    fail(string.format("%s: %s must be a number or a list of 2, got %s", who, what, tostring(v)))
  end
  return { v[1], v[2] }
end

local function check_input(m, x)
  if not is_tensor(x) then fail(string.format("%s: the input must be a Tensor, got %s", m:name(), type(x))) end
  return x
end

-- ---- layers ------------------------------------------------------------------------------

--- y = x W + b over the last dim of x: `nn.Linear(in, out, {bias = true})`. W is [in, out] (fc's layout), Xavier uniform; b zeros.
-- @type Linear
local Linear = Module:extend("Linear")
M.Linear = Linear

--- Sets it up (the class's constructor arguments: `nn.Linear(...)`).
-- @usage local fc = oar.nn.Linear(784, 256)
function Linear:init(nin, nout, opts)
  positive_int("nn.Linear", "in_features", nin)
  positive_int("nn.Linear", "out_features", nout)
  opts = opts_table("nn.Linear", opts, "bias")
  self.in_features, self.out_features = nin, nout
  self.weight = xavier({ nin, nout }):requires_grad()
  if opts.bias ~= false then
    self.bias = eager.zeros(nout):requires_grad()
  end
end

function Linear:extra_repr() return self.in_features .. " -> " .. self.out_features end

-- per input rank, Linear's two ops, prepared once
local LINEAR_OPS = {}
local function linear_ops(r)
  local ops = LINEAR_OPS[r]
  if not ops then
    ops = { mul = eager._prepared("mul", 2, { x_num_col_dims = r - 1, y_num_col_dims = 1 }),
            add = eager._prepared("elementwise_add", 2, { axis = r - 1 }) }
    LINEAR_OPS[r] = ops
  end
  return ops
end

--- x [..., in] -> [..., out]: the mul op (x_num_col_dims = rank - 1) and elementwise_add, as layers.fc.
-- @usage local y = oar.nn.Linear(3, 2)(oar.randn(4, 3))
function Linear:forward(x)
  check_input(self, x)
  local s = x:shape()
  if #s < 1 or s[#s] ~= self.in_features then
    fail(string.format("%s (%d -> %d): the input has shape %s, its last dim must be %d (weight shape %s)",
      self:name(), self.in_features, self.out_features, shape_text(s), self.in_features,
      shape_text(self.weight:shape())))
  end
  local r = math.max(#s, 2)
  if #s == 1 then x = x:reshape({ 1, s[1] }) end
  local y = linear_ops(r).mul(x, self.weight)
  if self.bias then y = linear_ops(r).add(y, self.bias) end
  if #s == 1 then y = y:reshape({ self.out_features }) end
  return y
end

--- 2-D convolution over NCHW: `nn.Conv2D(in_ch, out_ch, k, {stride =, padding =, dilation =, groups =, bias =})`. The filter [out_ch, in_ch / groups, kh, kw] is drawn from Normal(0, sqrt(2 / (kh kw in_ch))) as layers.conv2d's; the bias is zeros.
-- @type Conv2D
local Conv2D = Module:extend("Conv2D")
M.Conv2D = Conv2D

--- Sets it up (the class's constructor arguments: `nn.Conv2D(...)`).
-- @usage local conv = oar.nn.Conv2D(1, 8, 3, {padding = 1})
function Conv2D:init(cin, cout, k, opts)
  local who = "nn.Conv2D"
  positive_int(who, "in_channels", cin)
  positive_int(who, "out_channels", cout)
  opts = opts_table(who, opts, "bias dilation groups padding stride")
  local ks = pair(who, "the kernel size", k)
  local groups = opts.groups == nil and 1 or positive_int(who, "groups", opts.groups)
  if cin % groups ~= 0 or cout % groups ~= 0 then
    fail(string.format("%s: in_channels %d and out_channels %d must be divisible by groups %d", who, cin, cout, groups))
  end
  self.in_channels, self.out_channels, self.kernel_size, self.groups = cin, cout, ks, groups
  self.stride = pair(who, "stride", opts.stride, 1)
  self.padding = pair(who, "padding", opts.padding, 0)
  self.dilation = pair(who, "dilation", opts.dilation, 1)
  self.weight = normal({ cout, cin / groups, ks[1], ks[2] }, math.sqrt(2.0 / (ks[1] * ks[2] * cin))):requires_grad()
  if opts.bias ~= false then self.bias = eager.zeros(cout):requires_grad() end
end

function Conv2D:extra_repr()
  return string.format("%d -> %d, %dx%d", self.in_channels, self.out_channels, self.kernel_size[1], self.kernel_size[2])
end

--- x [N, in_ch, H, W] -> [N, out_ch, H', W'] (the conv2d op, then the bias along dim 2).
-- @usage local y = oar.nn.Conv2D(1, 2, 3)(oar.randn(1, 1, 5, 5))
function Conv2D:forward(x)
  check_input(self, x)
  local s = x:shape()
  if #s ~= 4 or s[2] ~= self.in_channels then
    fail(string.format("%s (%s): the input has shape %s, expected [N, %d, H, W]", self:name(), self:extra_repr(),
      shape_text(s), self.in_channels))
  end
  local y = run("conv2d", { { "Input", x }, { "Filter", self.weight } }, { { "Output", 1 } },
    { strides = self.stride, paddings = self.padding, dilations = self.dilation, groups = self.groups,
      data_format = "NCHW" })[1]
  if self.bias then
    y = run("elementwise_add", { { "X", y }, { "Y", self.bias } }, { { "Out", 1 } }, { axis = 1 })[1]
  end
  return y
end

--- 2-D max or average pooling over NCHW: `nn.Pool2D{pool_size =, pool_type = "max"|"avg", pool_stride = 1, pool_padding = 0, global_pooling = false, ceil_mode = false, exclusive = true}` (layers.pool2d's keys and defaults).
-- @type Pool2D
local Pool2D = Module:extend("Pool2D")
M.Pool2D = Pool2D

--- Sets it up (the class's constructor arguments: `nn.Pool2D(...)`).
-- @usage local pool = oar.nn.Pool2D{pool_size = 2, pool_stride = 2}
function Pool2D:init(opts)
  local who = "nn.Pool2D"
  opts = opts_table(who, opts, "ceil_mode exclusive global_pooling pool_padding pool_size pool_stride pool_type")
  local pool_type = opts.pool_type or "max"
  if pool_type ~= "max" and pool_type ~= "avg" then
    fail(who .. ": pool_type must be \"max\" or \"avg\", got " .. tostring(pool_type))
  end
  local global = opts.global_pooling == true
  if opts.pool_size == nil and not global then fail(who .. ": pool_size is required (or global_pooling = true)") end
  self.attrs = { pooling_type = pool_type, ksize = pair(who, "pool_size", opts.pool_size, 1),
                 global_pooling = global, strides = pair(who, "pool_stride", opts.pool_stride, 1),
                 paddings = pair(who, "pool_padding", opts.pool_padding, 0), ceil_mode = opts.ceil_mode == true,
                 exclusive = opts.exclusive ~= false, data_format = "NCHW" }
end

function Pool2D:extra_repr()
  return string.format("%s %dx%d", self.attrs.pooling_type, self.attrs.ksize[1], self.attrs.ksize[2])
end

--- x [N, C, H, W] -> pooled (the pool2d op).
-- @usage local y = oar.nn.Pool2D{pool_size = 2, pool_stride = 2}(oar.randn(1, 1, 4, 4))
function Pool2D:forward(x)
  check_input(self, x)
  if #x:shape() ~= 4 then
    fail(string.format("%s: the input has shape %s, expected [N, C, H, W]", self:name(), shape_text(x:shape())))
  end
  return run("pool2d", { { "X", x } }, { { "Out", 1 } }, self.attrs)[1]
end

--- Batch normalization over dim 2 (channels) of [N, C] or [N, C, H, W]: `nn.BatchNorm(ch, {momentum = 0.9, epsilon = 1e-5})`. weight (scale) ones, bias zeros; buffers running_mean (zeros) and running_var (ones), updated in training (running = momentum * running + (1 - momentum) * batch, as the batch_norm op) and used in evaluation.
-- @type BatchNorm
local BatchNorm = Module:extend("BatchNorm")
M.BatchNorm = BatchNorm

--- Sets it up (the class's constructor arguments: `nn.BatchNorm(...)`).
-- @usage local bn = oar.nn.BatchNorm(16)
function BatchNorm:init(ch, opts)
  positive_int("nn.BatchNorm", "num_channels", ch)
  opts = opts_table("nn.BatchNorm", opts, "epsilon momentum")
  self.num_channels = ch
  self.momentum, self.epsilon = opts.momentum or 0.9, opts.epsilon or 1e-5
  self.weight = eager.ones(ch):requires_grad()
  self.bias = eager.zeros(ch):requires_grad()
  self:register_buffer("running_mean", eager.zeros(ch))
  self:register_buffer("running_var", eager.ones(ch))
end

function BatchNorm:extra_repr() return tostring(self.num_channels) end

--- Normalized x (the batch_norm op; is_test in evaluation).
-- @usage local y = oar.nn.BatchNorm(3)(oar.randn(4, 3))
function BatchNorm:forward(x)
  check_input(self, x)
  local s = x:shape()
  if #s < 2 or s[2] ~= self.num_channels then
    fail(string.format("%s (%d channels): the input has shape %s, expected %d along dim 2", self:name(),
      self.num_channels, shape_text(s), self.num_channels))
  end
  local r = run("batch_norm",
    { { "X", x }, { "Scale", self.weight }, { "Bias", self.bias }, { "Mean", self.running_mean },
      { "Variance", self.running_var } },
    { { "Y", 1 }, { "MeanOut", 1 }, { "VarianceOut", 1 }, { "SavedMean", 1 }, { "SavedVariance", 1 } },
    { momentum = self.momentum, epsilon = self.epsilon, is_test = not self.training, data_layout = "NCHW",
      use_global_stats = false })
  if self.training then
    -- new buffers rather than writes: the recorded op keeps the inputs it saw
    self._buffers.running_mean = r[2]:detach()
    self._buffers.running_var = r[3]:detach()
  end
  return r[1]
end

--- Layer normalization over the last dim (or the last dims a shape table names): `nn.LayerNorm(n, {epsilon = 1e-5})`; weight ones, bias zeros.
-- @type LayerNorm
local LayerNorm = Module:extend("LayerNorm")
M.LayerNorm = LayerNorm

--- Sets it up (the class's constructor arguments: `nn.LayerNorm(...)`).
-- @usage local ln = oar.nn.LayerNorm(8)
function LayerNorm:init(n, opts)
  opts = opts_table("nn.LayerNorm", opts, "epsilon")
  local dims = type(n) == "table" and n or { n }
  local count = 1
  for i = 1, #dims do count = count * positive_int("nn.LayerNorm", "the normalized shape", dims[i]) end
  self.normalized_shape, self.epsilon = dims, opts.epsilon or 1e-5
  self.weight = eager.ones(count):requires_grad()
  self.bias = eager.zeros(count):requires_grad()
end

function LayerNorm:extra_repr() return shape_text(self.normalized_shape) end

--- Normalized x (the layer_norm op, begin_norm_axis = rank - #normalized_shape).
-- @usage local y = oar.nn.LayerNorm(3)(oar.randn(2, 3))
function LayerNorm:forward(x)
  check_input(self, x)
  local s, ns = x:shape(), self.normalized_shape
  local ok = #s > #ns
  for i = 1, #ns do if s[#s - #ns + i] ~= ns[i] then ok = false end end
  if not ok then
    fail(string.format("%s: the input has shape %s, its last dims must be %s", self:name(), shape_text(s), shape_text(ns)))
  end
  return run("layer_norm", { { "X", x }, { "Scale", self.weight }, { "Bias", self.bias } },
    { { "Y", 1 }, { "Mean", 1 }, { "Variance", 1 } }, { epsilon = self.epsilon, begin_norm_axis = #s - #ns })[1]
end

--- Rows of a table: `nn.Embedding(vocab, dim, {padding_idx =})`; int64 ids of any shape -> ids' shape then dim (the lookup_table_v2 op). ids are 0-based, as the op's; the table is Xavier uniform as layers.embedding's.
-- @type Embedding
local Embedding = Module:extend("Embedding")
M.Embedding = Embedding

--- Sets it up (the class's constructor arguments: `nn.Embedding(...)`).
-- @usage local emb = oar.nn.Embedding(1000, 32)
function Embedding:init(vocab, dim, opts)
  positive_int("nn.Embedding", "num_embeddings", vocab)
  positive_int("nn.Embedding", "embedding_dim", dim)
  opts = opts_table("nn.Embedding", opts, "padding_idx")
  self.num_embeddings, self.embedding_dim = vocab, dim
  local pad = opts.padding_idx or -1
  if opts.padding_idx and pad < 0 then pad = vocab + pad end
  self.padding_idx = pad
  self.weight = xavier({ vocab, dim }):requires_grad()
end

function Embedding:extra_repr() return self.num_embeddings .. ", " .. self.embedding_dim end

--- The rows for int64 ids (0-based).
-- @usage local e = oar.nn.Embedding(10, 4)(oar.Tensor({1, 2}, "int64"))
function Embedding:forward(ids)
  check_input(self, ids)
  if ids:dtype() ~= "int64" then ids = ids:long() end
  return run("lookup_table_v2", { { "W", self.weight }, { "Ids", ids } }, { { "Out", 1 } },
    { is_sparse = false, is_distributed = false, padding_idx = self.padding_idx })[1]
end

--- Dropout: in training zeroes each element with probability p and scales the kept ones by 1 / (1 - p) ("upscale_in_train", PyTorch's and Paddle 2.x's); the identity in evaluation. `nn.Dropout(p)` (default 0.5); the masks come from the generator `oar.seed` sets.
-- @type Dropout
local Dropout = Module:extend("Dropout")
M.Dropout = Dropout

--- Sets it up (the class's constructor arguments: `nn.Dropout(...)`).
-- @usage local drop = oar.nn.Dropout(0.1)
function Dropout:init(p)
  if p == nil then p = 0.5 end
  if type(p) ~= "number" or p < 0 or p > 1 then fail("nn.Dropout: p must be a number in [0, 1], got " .. tostring(p)) end
  self.p = p
end

function Dropout:extra_repr() return tostring(self.p) end

--- x with elements dropped (training) or x (evaluation).
-- @usage local y = oar.nn.Dropout(0.5)(oar.ones(4))
function Dropout:forward(x)
  check_input(self, x)
  if not self.training or self.p == 0 then return x end
  return run("dropout", { { "X", x } }, { { "Out", 1 }, { "Mask", 1 } },
    { dropout_prob = self.p, is_test = false, fix_seed = false, seed = 0,
      dropout_implementation = "upscale_in_train" })[1]
end

-- ---- activations as modules ------------------------------------------------------------

local function activation(name, f, doc_arg)
  local cls = Module:extend(name)
  cls.forward = function(self, x) return f(check_input(self, x), self.arg) end
  cls.init = function(self, arg) self.arg = arg end
  if doc_arg then cls.extra_repr = function(self) return tostring(self.arg or "") end end
  return cls
end

--- Activation modules: `nn.ReLU()`, `nn.Tanh()`, `nn.Sigmoid()`, `nn.Softmax(d)` (along 1-based dim d, default the last).
-- @type ReLU
M.ReLU = activation("ReLU", function(x) return x:relu() end)
M.Tanh = activation("Tanh", function(x) return x:tanh() end)
M.Sigmoid = activation("Sigmoid", function(x) return x:sigmoid() end)
M.Softmax = activation("Softmax", function(x, d) return x:softmax(d) end, true)

-- ---- containers ----------------------------------------------------------------------------

--- Modules applied in order: `nn.Sequential(m1, m2, ...)`, `:add(m)`; children are named "0", "1", ... (state_dict keys "0.weight").
-- @type Sequential
local Sequential = Module:extend("Sequential")
M.Sequential = Sequential

--- Sets it up (the class's constructor arguments: `nn.Sequential(...)`).
-- @usage local s = oar.nn.Sequential(oar.nn.Linear(2, 3), oar.nn.ReLU())
function Sequential:init(...)
  for i = 1, select("#", ...) do self:add((select(i, ...))) end
end

--- Appends a module (named by its 0-based position); returns self, so adds chain.
-- @usage local s = oar.nn.Sequential():add(oar.nn.Linear(2, 3)):add(oar.nn.ReLU())
function Sequential:add(m)
  if not is_module(m) then
    fail(string.format("nn.Sequential:add: expected a module, got %s", type(m)))
  end
  return self:add_module(tostring(#self._morder), m)
end

--- The i-th module (1-based).
-- @usage local first = oar.nn.Sequential(oar.nn.ReLU()):get(1)
function Sequential:get(i) return self._modules[self._morder[i]] end

--- The number of modules.
-- @usage assert(oar.nn.Sequential(oar.nn.ReLU()):size() == 1)
function Sequential:size() return #self._morder end

--- Each module's output feeds the next.
-- @usage local y = oar.nn.Sequential(oar.nn.ReLU(), oar.nn.Tanh())(oar.randn(2))
function Sequential:forward(x, ...)
  for i, k in ipairs(self._morder) do
    if i == 1 then x = self._modules[k](x, ...) else x = self._modules[k](x) end
  end
  return x
end

-- ---- functional ------------------------------------------------------------------------------

--- Functions of tensors (no parameters): losses and activations, each eager calls of registered ops.
-- @type functional
local functional = {}
M.functional = functional

--- Activations: `relu`, `tanh`, `sigmoid`, `softmax(x, d)`, `log_softmax(x, d)`.
-- @usage local y = oar.nn.functional.relu(oar.randn(3))
function functional.relu(x) return eager.relu(x) end
--- tanh (see relu).
-- @usage local y = oar.nn.functional.tanh(oar.randn(3))
function functional.tanh(x) return eager.tanh(x) end
--- sigmoid (see relu).
-- @usage local y = oar.nn.functional.sigmoid(oar.randn(3))
function functional.sigmoid(x) return eager.sigmoid(x) end
--- softmax along 1-based dim d (default the last).
-- @usage local y = oar.nn.functional.softmax(oar.randn(2, 3), 2)
function functional.softmax(x, d) return eager.softmax(x, d) end
--- log(softmax(x)) along dim d (default the last).
-- @usage local y = oar.nn.functional.log_softmax(oar.randn(2, 3))
function functional.log_softmax(x, d) return eager.log(eager.softmax(x, d)) end

-- int64 class ids [N] or [N, 1] -> [N, 1]
local function labels(who, logits, label)
  if not is_tensor(logits) then fail(who .. ": the input must be a Tensor, got " .. type(logits)) end
  if not is_tensor(label) then fail(who .. ": the label must be an int64 Tensor, got " .. type(label)) end
  local s, ls = logits:shape(), label:shape()
  if #s ~= 2 then fail(string.format("%s: the input must be [N, C], got %s", who, shape_text(s))) end
  if label:dtype() ~= "int64" then label = label:long() end
  if #ls == 1 then label = label:reshape({ ls[1], 1 }); ls = label:shape() end
  if #ls ~= 2 or ls[1] ~= s[1] or ls[2] ~= 1 then
    fail(string.format("%s: the label must be [N] or [N, 1] with N = %d, got %s", who, s[1], shape_text(label:shape())))
  end
  return label
end

-- the mean op (layers.mean's), so eager and static losses share their bits
local function mean_op(x) return run("mean", { { "X", x } }, { { "Out", 1 } })[1] end

--- The mean over the batch of -log softmax(logits)[label]: logits [N, C], label int64 class ids (0-based) [N] or [N, 1]. The softmax_with_cross_entropy op, then the mean op (what layers.softmax_with_cross_entropy and layers.mean append).
-- @treturn Tensor one element
-- @usage local loss = oar.nn.functional.cross_entropy(oar.randn(4, 3), oar.Tensor({0, 2, 1, 1}, "int64"))
function functional.cross_entropy(logits, label)
  label = labels("cross_entropy", logits, label)
  local r = run("softmax_with_cross_entropy", { { "Logits", logits }, { "Label", label } },
    { { "Softmax", 1 }, { "Loss", 1 } }, { soft_label = false, ignore_index = -100, numeric_stable_mode = true, axis = -1 })
  return mean_op(r[2])
end

--- The mean over the batch of -logp[label]: logp [N, C] log-probabilities, label int64 0-based class ids [N] or [N, 1].
-- @treturn Tensor one element
-- @usage local loss = oar.nn.functional.nll_loss(oar.randn(4, 3):softmax():log(), oar.Tensor({0, 2, 1, 1}, "int64"))
function functional.nll_loss(logp, label)
  label = labels("nll_loss", logp, label)
  local picked = eager.gather(logp, 2, label + 1)   -- gather's indices are 1-based
  return -mean_op(picked)
end

--- The mean of (input - target)^2 over all elements (shapes broadcast).
-- @treturn Tensor one element
-- @usage local loss = oar.nn.functional.mse_loss(oar.randn(4, 1), oar.zeros(4, 1))
function functional.mse_loss(input, target)
  if not is_tensor(input) or not is_tensor(target) then
    fail("mse_loss: expected tensors, got " .. type(input) .. " and " .. type(target))
  end
  return mean_op(eager.square(input - target))
end

--- Dropout as a function: training (default true) drops with probability p (upscale_in_train).
-- @usage local y = oar.nn.functional.dropout(oar.ones(4), 0.5)
function functional.dropout(x, p, training)
  local d = Dropout(p)
  if training == false then d:eval() end
  return d(x)
end

--- y = x W + b with W [in, out] (b optional), as nn.Linear computes it.
-- @usage local y = oar.nn.functional.linear(oar.ones(2, 3), oar.ones(3, 4))
function functional.linear(x, w, b)
  if not is_tensor(w) or #w:shape() ~= 2 then fail("linear: the weight must be a 2-D Tensor [in, out]") end
  local s = w:shape()
  -- a Linear over the given tensors (fields set raw: nothing registered)
  local m = setmetatable({ _params = {}, _porder = {}, _buffers = {}, _border = {}, _modules = {}, _morder = {},
                           training = true, in_features = s[1], out_features = s[2], weight = w, bias = b }, Linear)
  return Linear.forward(m, x)
end

-- nn.LSTM and nn.GRU (lua/oar/nn_rnn.lua)
require("oar.nn_rnn").install(M)

return M
