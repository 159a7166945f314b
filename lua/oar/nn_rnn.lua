--- oar.nn's recurrent modules: `nn.LSTM` and `nn.GRU` over padded batches
-- (Paddle 2's dygraph `paddle.nn.LSTM` / `GRU`: `output, (h, c) = lstm(x)`,
-- `output, h = gru(x)`), installed into oar.nn by nn.lua.
--
-- Every step is eager calls of the registered ops the static layers append,
-- so autograd runs their grad ops: the input projection of all steps at once
-- (`mul`, `elementwise_add`), split into steps by `unstack`; per step the
-- recurrent product (`mul`) and the cell op, `lstm_unit` (layers.lstm_unit's
-- op: gate blocks [i, f, o, g], c = f c_prev + i g, h = o tanh(c)) or
-- `gru_unit` (layers.gru_unit's op, gate blocks [u, r, c]); the steps'
-- outputs are joined by `stack` and, for two directions, `concat`.
-- Parameters are drawn as the static layers draw theirs: LSTM's gates are
-- layers.lstm_unit's fc of [x, h] (one Xavier-uniform weight
-- [in + hidden, 4 hidden], zero bias); GRU's are layers.fc's projection of x
-- (Xavier [in, 3 hidden], zero bias) and layers.gru_unit's own weight
-- (Xavier [hidden, 3 hidden]) and bias (zeros [1, 3 hidden]).
-- @module oar.nn_rnn
local eager = require("oar.eager")
local tensor = require("oar.tensor")
local dtypes = require("oar.dtypes")

local is_tensor = tensor.is_tensor
local run = eager._run
local fail = eager._fail
eager._internal_source(debug.getinfo(1, "S").source)   -- errors point at the user's line

local M = {}

local function shape_text(s) return "[" .. table.concat(s, ", ") .. "]" end

local function positive_int(who, what, v)
  if type(v) ~= "number" or v < 1 or v % 1 ~= 0 then
    fail(string.format("%s: %s must be a positive integer, got %s", who, what, tostring(v)))
  end
  return v
end

-- Xavier uniform (initializer.Xavier's fans) in the module's dtype
local function xavier(shape, dtype)
  local fan_in, fan_out = require("oar.initializer").compute_fans(shape)
  local limit = math.sqrt(6.0 / (fan_in + fan_out))
  return run("uniform_random", {}, { { "Out", 1 } },
    { shape = shape, min = -limit, max = limit, seed = 0, dtype = dtypes.enum(dtype) })[1]:requires_grad()
end
local function zeros(shape, dtype) return eager.zeros(shape, dtype):requires_grad() end

-- x [.., in] (rank r) times w [in, out] over the last dim: the mul op as layers.fc
local function mul(x, w, r)
  return run("mul", { { "X", x }, { "Y", w } }, { { "Out", 1 } }, { x_num_col_dims = r - 1, y_num_col_dims = 1 })[1]
end
local function add(x, y, axis)
  return run("elementwise_add", { { "X", x }, { "Y", y } }, { { "Out", 1 } }, { axis = axis })[1]
end

-- the options both modules take
local function setup(self, who, nin, hidden, opts, gates)
  positive_int(who, "input_size", nin)
  positive_int(who, "hidden_size", hidden)
  if opts ~= nil and type(opts) ~= "table" then fail(who .. ": options must be a table, got " .. type(opts)) end
  opts = opts or {}
  require("oar.argcheck").keys(who, opts,
    "batch_first direction dropout dtype forget_bias num_layers origin_mode time_major")
  local layers = opts.num_layers == nil and 1 or positive_int(who, "num_layers", opts.num_layers)
  local dir = opts.direction or "forward"
  if dir == "bidirectional" then dir = "bidirect" end
  if dir ~= "forward" and dir ~= "bidirect" then
    fail(who .. ": direction must be \"forward\" or \"bidirect\", got " .. tostring(dir))
  end
  local dtype = opts.dtype or "float32"
  if dtype ~= "float32" and dtype ~= "float64" then fail(who .. ": dtype must be float32 or float64, got " .. tostring(dtype)) end
  local p = opts.dropout or 0
  if type(p) ~= "number" or p < 0 or p >= 1 then fail(who .. ": dropout must be a number in [0, 1), got " .. tostring(p)) end
  local batch_first = opts.batch_first
  if batch_first == nil then batch_first = opts.time_major ~= true end   -- Paddle 2's default: [N, T, C]
  self.input_size, self.hidden_size, self.num_layers = nin, hidden, layers
  self.direction, self.num_directions = dir, dir == "bidirect" and 2 or 1
  self.batch_first, self.dropout, self.dtype = batch_first and true or false, p, dtype
  self.forget_bias = opts.forget_bias or 0
  self.origin_mode = opts.origin_mode ~= false
  -- parameters: layer by layer, the forward direction then "_reverse"
  for l = 0, layers - 1 do
    local lin = l == 0 and nin or hidden * self.num_directions
    for d = 1, self.num_directions do
      local sfx = "_l" .. l .. (d == 2 and "_reverse" or "")
      if gates == 4 then
        self:register_parameter("weight" .. sfx, xavier({ lin + hidden, 4 * hidden }, dtype))
        self:register_parameter("bias" .. sfx, zeros({ 4 * hidden }, dtype))
      else
        self:register_parameter("weight_ih" .. sfx, xavier({ lin, 3 * hidden }, dtype))
        self:register_parameter("bias_ih" .. sfx, zeros({ 3 * hidden }, dtype))
        self:register_parameter("weight_hh" .. sfx, xavier({ hidden, 3 * hidden }, dtype))
        self:register_parameter("bias_hh" .. sfx, zeros({ 1, 3 * hidden }, dtype))
      end
    end
  end
end

-- int64 lengths (a tensor or a Lua list) -> per step t (1-based) a [N, 1]
-- mask of the module's dtype: 1 where t <= length
local function step_masks(self, who, lengths, n, T)
  if lengths == nil then return nil end
  local list
  if is_tensor(lengths) then list = lengths:reshape({ -1 }):totable()
  elseif type(lengths) == "table" then list = lengths
  else fail(who .. ": sequence_length must be an int64 tensor or a list of lengths, got " .. type(lengths)) end
  if #list ~= n then fail(string.format("%s: sequence_length has %d lengths for a batch of %d", who, #list, n)) end
  for i, len in ipairs(list) do
    if type(len) ~= "number" or len < 0 or len > T or len % 1 ~= 0 then
      fail(string.format("%s: sequence_length[%d] is %s, expected an integer in 0..%d", who, i, tostring(len), T))
    end
  end
  -- tensors from Lua values (no op, no write: a trace keeps them as constants)
  local masks = {}
  for t = 1, T do
    local rows = {}
    for i = 1, n do rows[i] = { t <= list[i] and 1 or 0 } end
    masks[t] = tensor(rows, self.dtype)
  end
  return masks
end

-- the state's [L * D, N, H] initial value: the given tensor or zeros
local function initial(self, who, what, s, n)
  local want = { self.num_layers * self.num_directions, n, self.hidden_size }
  if s == nil then return eager.zeros(want, self.dtype) end
  if not is_tensor(s) or shape_text(s:shape()) ~= shape_text(want) then
    fail(string.format("%s: the initial %s must be a tensor of shape %s, got %s", who, what, shape_text(want),
      is_tensor(s) and shape_text(s:shape()) or type(s)))
  end
  return s
end

-- keeps the old state where the step is padding: m new + (1 - m) old
local function masked(new, old, m)
  if not m then return new end
  return new * m + old * (1 - m)
end

-- one direction of one layer over the time-major input [T, N, in]; returns
-- the steps' outputs [T, N, H] and the final states
local function direction(self, who, l, d, x, h, c, masks)
  local T = x:shape()[1]
  local H = self.hidden_size
  local sfx = "_l" .. l .. (d == 2 and "_reverse" or "")
  local lin = x:shape()[3]
  local wx, wh, bx, bh
  if c then
    local w = self._params["weight" .. sfx]
    wx, wh, bx = w:narrow(1, 1, lin), w:narrow(1, lin + 1, H), self._params["bias" .. sfx]
  else
    wx, bx = self._params["weight_ih" .. sfx], self._params["bias_ih" .. sfx]
    wh, bh = self._params["weight_hh" .. sfx], self._params["bias_hh" .. sfx]
  end
  -- every step's projection at once, then one tensor per step
  local proj = add(mul(x, wx, 3), bx, 2)
  local steps = run("unstack", { { "X", proj } }, { { "Y", T } }, { axis = 0, num = T })
  local outs = {}
  local first, last, inc = 1, T, 1
  if d == 2 then first, last, inc = T, 1, -1 end
  for t = first, last, inc do
    local m = masks and masks[t]
    local nh
    if c then
      local r = run("lstm_unit", { { "X", add(steps[t], mul(h, wh, 2), -1) }, { "C_prev", c } },
        { { "C", 1 }, { "H", 1 } }, { forget_bias = self.forget_bias })
      c = masked(r[1], c, m)
      nh = r[2]
    else
      nh = run("gru_unit", { { "Input", steps[t] }, { "HiddenPrev", h }, { "Weight", wh }, { "Bias", bh } },
        { { "Gate", 1 }, { "ResetHiddenPrev", 1 }, { "Hidden", 1 } },
        { activation = 2, gate_activation = 1, origin_mode = self.origin_mode })[3]
    end
    h = masked(nh, h, m)
    outs[t] = m and nh * m or h   -- padding steps output zeros
  end
  local out = run("stack", { { "X", outs } }, { { "Y", 1 } }, { axis = 0 })[1]
  return out, h, c
end

-- the shared forward: x [N, T, in] (or [T, N, in]); states {h0, c0} or h0
local function forward(self, who, x, states, lengths, lstm)
  if not is_tensor(x) then fail(string.format("%s: the input must be a Tensor, got %s", who, type(x))) end
  local s = x:shape()
  if #s ~= 3 or s[3] ~= self.input_size then
    fail(string.format("%s: the input has shape %s, expected %s with %d features", who, shape_text(s),
      self.batch_first and "[N, T, C]" or "[T, N, C]", self.input_size))
  end
  if x:dtype() ~= self.dtype then
    fail(string.format("%s: the input is %s, the module's parameters %s", who, x:dtype(), self.dtype))
  end
  local n, T = s[1], s[2]
  if not self.batch_first then n, T = s[2], s[1] end
  local h0, c0
  if lstm then
    if states ~= nil and type(states) ~= "table" then fail(who .. ": the initial states must be {h0, c0}") end
    states = states or {}
    h0, c0 = initial(self, who, "h", states[1], n), initial(self, who, "c", states[2], n)
  else
    h0 = initial(self, who, "h", states, n)
  end
  local masks = step_masks(self, who, lengths, n, T)
  local seq = self.batch_first and x:transpose(1, 2) or x   -- [T, N, C]
  local hs, cs = {}, {}
  for l = 0, self.num_layers - 1 do
    local outs = {}
    for d = 1, self.num_directions do
      local k = l * self.num_directions + d
      local o, h, c = direction(self, who, l, d, seq, h0[k], lstm and c0[k] or nil, masks)
      outs[d], hs[k], cs[k] = o, h, c
    end
    seq = #outs == 1 and outs[1] or eager.cat(outs, 3)
    if self.dropout > 0 and self.training and l < self.num_layers - 1 then
      seq = run("dropout", { { "X", seq } }, { { "Out", 1 }, { "Mask", 1 } },
        { dropout_prob = self.dropout, is_test = false, fix_seed = false, seed = 0,
          dropout_implementation = "upscale_in_train" })[1]
    end
  end
  local out = self.batch_first and seq:transpose(1, 2) or seq
  local h = eager.stack(hs, 1)
  if lstm then return out, { h, eager.stack(cs, 1) } end
  return out, h
end

local function extra_repr(self)
  return string.format("%d -> %d, num_layers=%d, %s", self.input_size, self.hidden_size, self.num_layers, self.direction)
end

--- A multi-layer LSTM: `nn.LSTM(input_size, hidden_size, {num_layers = 1, direction = "forward"|"bidirect", batch_first = true, dropout = 0, forget_bias = 0, dtype = "float32"})`. Per layer and direction one weight [in + hidden, 4 hidden] (Xavier uniform, as layers.lstm_unit's fc) and a bias [4 hidden] (zeros), named `weight_l0`, `bias_l0`, `weight_l0_reverse`...; gates [i, f, o, g] (the lstm_unit op). dropout applies between layers in training.
-- @type LSTM
local LSTM = {}

--- Sets it up (the class's constructor arguments: `nn.LSTM(...)`).
-- @usage local lstm = oar.nn.LSTM(16, 32, {num_layers = 2, direction = "bidirect"})
function LSTM:init(nin, hidden, opts) setup(self, "nn.LSTM", nin, hidden, opts, 4) end
--- Sizes, layers and direction, for printing.
-- @usage print(oar.nn.LSTM(3, 4))
function LSTM:extra_repr() return extra_repr(self) end

--- x [N, T, in] ([T, N, in] with batch_first = false), optional states {h0, c0} (each [layers * directions, N, hidden]; zeros when nil) and sequence lengths (a list or an int64 tensor of N; steps past a length output zeros and keep the state) -> output [N, T, directions * hidden], {h, c} the last states.
-- @usage local out, hc = oar.nn.LSTM(3, 4)(oar.randn(2, 5, 3))
function LSTM:forward(x, states, sequence_length)
  return forward(self, self:name(), x, states, sequence_length, true)
end

--- A multi-layer GRU: `nn.GRU(input_size, hidden_size, {num_layers, direction, batch_first, dropout, dtype, origin_mode = true})`. Per layer and direction the input projection `weight_ih_l0` [in, 3 hidden] (Xavier, as layers.fc's) with `bias_ih_l0` [3 hidden] (zeros), and the gru_unit op's `weight_hh_l0` [hidden, 3 hidden] (Xavier) and `bias_hh_l0` [1, 3 hidden] (zeros); gates [u, r, c]: u, r = sigmoid(x_{u,r} + h W_{u,r}), c = tanh(x_c + (r h) W_c), h' = u h + (1 - u) c (origin_mode, Paddle 2's update; false: u c + (1 - u) h).
-- @type GRU
local GRU = {}

--- Sets it up (the class's constructor arguments: `nn.GRU(...)`).
-- @usage local gru = oar.nn.GRU(16, 32)
function GRU:init(nin, hidden, opts) setup(self, "nn.GRU", nin, hidden, opts, 3) end
--- Sizes, layers and direction, for printing.
-- @usage print(oar.nn.GRU(3, 4))
function GRU:extra_repr() return extra_repr(self) end

--- x [N, T, in], optional h0 [layers * directions, N, hidden] and sequence lengths -> output [N, T, directions * hidden], h the last states.
-- @usage local out, h = oar.nn.GRU(3, 4)(oar.randn(2, 5, 3))
function GRU:forward(x, h0, sequence_length)
  return forward(self, self:name(), x, h0, sequence_length, false)
end

--- Installs LSTM and GRU into oar.nn (nn.lua calls it): classes extending nn.Module with the methods above.
-- @tparam table nn the oar.nn module table
-- @local
function M.install(nn)
  for name, methods in pairs({ LSTM = LSTM, GRU = GRU }) do
    local cls = nn.Module:extend(name)
    for k, v in pairs(methods) do rawset(cls, k, v) end
    nn[name] = cls
  end
end

return M
