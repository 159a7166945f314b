--- oar.layers.rnn_lstm: Fluid 1.8's `layers.lstm`, the cuDNN-style
-- multi-layer (optionally bidirectional) LSTM over time-major padded input,
-- built on `layers.rnn` (a StaticRNN per layer and direction) so it runs
-- and trains on the CPU. Merged into `oar.layers` through
-- oar.layers.rnn_api.
--
-- Its weights are one flat parameter, as cuDNN's: for each layer, for each
-- direction, W_ih [4H, D_l] then W_hh [4H, H] (rows by gate: input,
-- forget, cell, output), then for each layer and direction b_ih [4H] and
-- b_hh [4H]; D_0 is the input size, deeper layers take H * directions.
-- @module oar.layers.rnn_lstm
local framework = require("oar.framework")
local LayerHelper = require("oar.layer_helper")
local initializer = require("oar.initializer")
local layers = require("oar.layers")

local check, args = LayerHelper.check, LayerHelper.args
local raise = framework.raise

local M = {}

-- a [rows, cols] view of the flat weight at offset
local function piece(w, offset, rows, cols)
  local s = layers.slice{ input = w, axes = { 0 }, starts = { offset }, ends = { offset + rows * (cols or 1) } }
  if cols then return layers.reshape(s, { rows, cols }) end
  return s
end

-- the cuDNN LSTM step: gates = x W_ih^T + b_ih + h W_hh^T + b_hh
local function cudnn_cell(W_ih, W_hh, b_ih, b_hh, H)
  return layers.RNNCell{
    state_shape = { { H }, { H } },
    call = function(_, x, states)
      local h, c = states[1], states[2]
      local g = layers.elementwise_add{
        x = layers.elementwise_add{ x = layers.matmul{ x = x, y = W_ih, transpose_y = true }, y = b_ih },
        y = layers.elementwise_add{ x = layers.matmul{ x = h, y = W_hh, transpose_y = true }, y = b_hh } }
      local p = layers.split{ input = g, num_or_sections = 4, dim = 1 }
      local nc = layers.elementwise_add{ x = layers.elementwise_mul{ x = layers.sigmoid(p[2]), y = c },
                                         y = layers.elementwise_mul{ x = layers.sigmoid(p[1]), y = layers.tanh(p[3]) } }
      local nh = layers.elementwise_mul{ x = layers.sigmoid(p[4]), y = layers.tanh(nc) }
      return nh, { nh, nc }
    end,
  }
end

local function state_at(s, i)
  return layers.squeeze{ input = layers.slice{ input = s, axes = { 0 }, starts = { i }, ends = { i + 1 } }, axes = { 0 } }
end

--- A multi-layer LSTM over time-major input (Fluid 1.8's layers.lstm, the
-- cuDNN LSTM): each layer runs forward (and, with is_bidirec, backward) over
-- the previous layer's outputs, dropout between layers. Also positional:
-- `lstm(input, init_h, init_c, max_len, hidden_size, num_layers,
-- dropout_prob, is_bidirec, is_test, name, default_initializer, seed)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input [T, N, D], float32/float64, D known
-- @tparam Variable a.init_h [num_layers * directions, N, H]
-- @tparam Variable a.init_c [num_layers * directions, N, H]
-- @tparam int a.max_len the longest sequence (Fluid's argument; T of input is used)
-- @tparam int a.hidden_size H
-- @tparam int a.num_layers
-- @tparam[opt=0] number a.dropout_prob dropout between layers (upscale_in_train)
-- @tparam[opt=false] bool a.is_bidirec
-- @tparam[opt=false] bool a.is_test no dropout
-- @tparam[opt] string a.name the weight's name prefix
-- @tparam[opt] Initializer a.default_initializer default: Uniform(-1/sqrt(H), 1/sqrt(H))
-- @tparam[opt=-1] int a.seed the dropout's seed (-1: none fixed)
-- @tparam[opt] Variable a.sequence_length int32/int64 [N] (Paddle 2.x's addition): states stop
-- and outputs are zeros past each sequence's length
-- @tparam[opt] ParamAttr a.param_attr the flat weight's attributes
-- @param[opt] ... with a positional input: Fluid's order
-- @treturn Variable rnn_out [T, N, H * directions]
-- @treturn Variable last_h [num_layers * directions, N, H]
-- @treturn Variable last_c [num_layers * directions, N, H]
-- @usage local out, h, c = layers.lstm{input = x, init_h = h0, init_c = c0, max_len = 20,
--   hidden_size = 64, num_layers = 2}
function M.lstm(a, ...)
  if framework.is_variable(a) then
    local init_h, init_c, max_len, hidden_size, num_layers, dropout_prob, is_bidirec, is_test, name,
      default_initializer, seed = ...
    a = { input = a, init_h = init_h, init_c = init_c, max_len = max_len, hidden_size = hidden_size,
          num_layers = num_layers, dropout_prob = dropout_prob, is_bidirec = is_bidirec, is_test = is_test,
          name = name, default_initializer = default_initializer, seed = seed }
  end
  a = args("lstm", a, nil, nil, "default_initializer dropout_prob hidden_size init_c init_h input is_bidirec "
    .. "is_test max_len name num_layers param_attr seed sequence_length")
  local x = check.variable("lstm", "input", a.input)
  if x.dtype ~= "float32" and x.dtype ~= "float64" then check.fail("lstm", "input", "float32 or float64", x.dtype) end
  if #x.shape ~= 3 or x.shape[3] <= 0 then
    raise(string.format("layers.lstm: 'input' ('%s') must be [T, N, D] with D known, got %s", x.name,
      framework.shape_text(x.shape)))
  end
  local h0 = check.variable("lstm", "init_h", a.init_h)
  local c0 = check.variable("lstm", "init_c", a.init_c)
  check.positive_int("lstm", "max_len", a.max_len)
  local H = check.positive_int("lstm", "hidden_size", a.hidden_size)
  local L = check.positive_int("lstm", "num_layers", a.num_layers)
  local p = check.number("lstm", "dropout_prob", a.dropout_prob, 0)
  if p < 0 or p >= 1 then check.fail("lstm", "dropout_prob", "in [0, 1)", p) end
  local bidi = check.boolean("lstm", "is_bidirec", a.is_bidirec, false)
  local is_test = check.boolean("lstm", "is_test", a.is_test, false)
  local seed = check.int("lstm", "seed", a.seed, -1)
  local dirs = bidi and 2 or 1
  for _, s in ipairs({ { "init_h", h0 }, { "init_c", c0 } }) do
    local sh = s[2].shape
    if #sh ~= 3 or (sh[1] >= 0 and sh[1] ~= L * dirs) or (sh[3] >= 0 and sh[3] ~= H) then
      raise(string.format("layers.lstm: '%s' ('%s') must be [%d, N, %d] (num_layers * directions, batch, hidden), got %s",
        s[1], s[2].name, L * dirs, H, framework.shape_text(sh)))
    end
  end
  local D = x.shape[3]
  local size = 0
  for l = 1, L do
    local Dl = l == 1 and D or H * dirs
    size = size + dirs * (4 * H * Dl + 4 * H * H + 8 * H)
  end
  local helper = LayerHelper("lstm", { name = a.name, param_attr = a.param_attr })
  local k = 1 / math.sqrt(H)
  local w = helper:create_parameter(helper:param_attr(), { size }, x.dtype, false,
    a.default_initializer or initializer.Uniform{ low = -k, high = k })
  local off, boff = 0, 0
  for l = 1, L do boff = boff + dirs * (4 * H * (l == 1 and D or H * dirs) + 4 * H * H) end
  local input, hs, cs = x, {}, {}
  for l = 1, L do
    local Dl = l == 1 and D or H * dirs
    local outs = {}
    for d = 1, dirs do
      local W_ih = piece(w, off, 4 * H, Dl)
      off = off + 4 * H * Dl
      local W_hh = piece(w, off, 4 * H, H)
      off = off + 4 * H * H
      local b_ih = piece(w, boff, 4 * H)
      local b_hh = piece(w, boff + 4 * H, 4 * H)
      boff = boff + 8 * H
      local idx = (l - 1) * dirs + (d - 1)
      local o, st = layers.rnn{ cell = cudnn_cell(W_ih, W_hh, b_ih, b_hh, H), inputs = input,
                                initial_states = { state_at(h0, idx), state_at(c0, idx) },
                                sequence_length = a.sequence_length, time_major = true, is_reverse = d == 2 }
      outs[d], hs[#hs + 1], cs[#cs + 1] = o, st[1], st[2]
    end
    input = dirs == 2 and layers.concat(outs, 2) or outs[1]
    if p > 0 and l < L then
      input = layers.dropout{ x = input, dropout_prob = p, is_test = is_test, seed = seed >= 0 and seed or nil,
                              dropout_implementation = "upscale_in_train" }
    end
  end
  return input, layers.stack(hs, 0), layers.stack(cs, 0)
end

return M
