--- oar.layers.sequence_ext: Fluid 1.8's remaining sequence_lod.py layers
-- (sequence_mask, sequence_reverse, sequence_expand_as, sequence_pad,
-- sequence_unpad, sequence_concat, sequence_slice, sequence_enumerate,
-- sequence_reshape, sequence_scatter). Merged into oar.layers.
--
--   local padded, len = layers.sequence_pad{x = emb, pad_value = zero}
--   local back = layers.sequence_unpad{x = padded, length = len}
--
-- @module oar.layers.sequence_ext
local LayerHelper = require("oar.layer_helper")
local framework = require("oar.framework")
local dtypes = require("oar.dtypes")

local check, args = LayerHelper.check, LayerHelper.args
local is_variable = framework.is_variable

local M = {}

-- a layer with one op X -> Out of the input's dtype
local function simple(layer, op, inputs, attrs, a, out_slot)
  local helper = LayerHelper(layer, a)
  local first = inputs.X and inputs.X[1] or inputs.Ids[1]
  local out = helper:create_variable_for_type_inference(first.dtype)
  helper:append_op{ type = op, inputs = inputs, outputs = { [out_slot or "Out"] = { out } }, attrs = attrs }
  return out
end

--- A mask of lengths: `y[i..., j] = j < x[i...]` for j < maxlen.
-- Also positional: `sequence_mask(x, maxlen, dtype)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x the lengths (int32, int64, float32 or float64), any shape
-- @tparam[opt] int|Variable a.maxlen the mask's last dim (a Variable: an int
-- tensor [1] read at run time); default: the largest value of x
-- @tparam[opt="int64"] string a.dtype the mask's dtype: bool, int32, int64, float32, float64
-- @tparam[opt] string a.name
-- @tparam[opt] int|Variable maxlen with a positional x
-- @tparam[opt] string dtype with a positional x
-- @treturn Variable x's shape + [maxlen]
-- @usage local mask = layers.sequence_mask{x = lengths, maxlen = 10, dtype = "float32"}
function M.sequence_mask(a, maxlen, dtype)
  if is_variable(a) then a = { x = a, maxlen = maxlen, dtype = dtype } end
  a = args("sequence_mask", a, nil, nil, "dtype maxlen name x")
  local x = check.variable("sequence_mask", "x", a.x)
  local dt = check.dtype("sequence_mask", "dtype", a.dtype, "int64")
  local inputs, attrs = { X = { x } }, { out_dtype = dtypes.enum(dt), maxlen = -1 }
  if is_variable(a.maxlen) then inputs.MaxLenTensor = { a.maxlen }
  elseif a.maxlen ~= nil then attrs.maxlen = check.int("sequence_mask", "maxlen", a.maxlen) end
  local helper = LayerHelper("sequence_mask", a)
  local y = helper:create_variable_for_type_inference(dt)
  helper:append_op{ type = "sequence_mask", inputs = inputs, outputs = { Y = { y } }, attrs = attrs }
  y.stop_gradient = true
  return y
end

--- Reverses the rows of each sequence (one LoD level).
-- @tparam Variable|table a the LoD input, or `{x=, name=}`
-- @treturn Variable x's shape and LoD
-- @usage local rev = layers.sequence_reverse(emb)
function M.sequence_reverse(a)
  a = args("sequence_reverse", a, "x", nil, "name x")
  local x = check.variable("sequence_reverse", "x", a.x)
  return simple("sequence_reverse", "sequence_reverse", { X = { x } }, {}, a, "Y")
end

--- Repeats row i of x as many times as y's sequence i is long; the result
-- takes y's LoD. Also positional: `sequence_expand_as(x, y)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x [number of y's sequences, ...]
-- @tparam Variable a.y a LoD tensor (one level) giving the repeats
-- @tparam[opt] string a.name
-- @tparam[opt] Variable y with a positional x
-- @treturn Variable [y's rows, ...] with y's LoD
-- @usage local ctx = layers.sequence_expand_as{x = sentence_vec, y = words}
function M.sequence_expand_as(a, y)
  if is_variable(a) then a = { x = a, y = y } end
  a = args("sequence_expand_as", a, nil, nil, "name x y")
  local x = check.variable("sequence_expand_as", "x", a.x)
  local yv = check.variable("sequence_expand_as", "y", a.y)
  return simple("sequence_expand_as", "sequence_expand_as", { X = { x }, Y = { yv } }, {}, a)
end

--- Pads each sequence to one length. Returns the padded tensor and the
-- lengths. Also positional: `sequence_pad(x, pad_value, maxlen)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x a LoD tensor [N, ...]
-- @tparam Variable a.pad_value x's dtype, [1] or x's row shape
-- @tparam[opt] int a.maxlen the padded length; default: the longest sequence
-- @tparam[opt] string a.name
-- @tparam[opt] Variable pad_value with a positional x
-- @tparam[opt] int maxlen with a positional x
-- @treturn Variable Out, [number of sequences, maxlen, ...]
-- @treturn Variable Length, int64 [number of sequences]
-- @usage local padded, len = layers.sequence_pad{x = emb, pad_value = zero, maxlen = 32}
function M.sequence_pad(a, pad_value, maxlen)
  if is_variable(a) then a = { x = a, pad_value = pad_value, maxlen = maxlen } end
  a = args("sequence_pad", a, nil, nil, "maxlen name pad_value x")
  local x = check.variable("sequence_pad", "x", a.x)
  local pv = check.variable("sequence_pad", "pad_value", a.pad_value)
  local helper = LayerHelper("sequence_pad", a)
  local out = helper:create_variable_for_type_inference(x.dtype)
  local len = helper:create_variable_for_type_inference("int64")
  helper:append_op{ type = "sequence_pad", inputs = { X = { x }, PadValue = { pv } },
                    outputs = { Out = { out }, Length = { len } },
                    attrs = { padded_length = a.maxlen == nil and -1
                                              or check.positive_int("sequence_pad", "maxlen", a.maxlen) } }
  len.stop_gradient = true
  return out, len
end

--- The inverse of sequence_pad: the first length[i] rows of each x[i], as a
-- LoD tensor. Also positional: `sequence_unpad(x, length)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.x [number of sequences, padded length, ...]
-- @tparam Variable a.length int64 [number of sequences]
-- @tparam[opt] string a.name
-- @tparam[opt] Variable length with a positional x
-- @treturn Variable [sum of length, ...] with one LoD level
-- @usage local seq = layers.sequence_unpad{x = padded, length = len}
function M.sequence_unpad(a, length)
  if is_variable(a) then a = { x = a, length = length } end
  a = args("sequence_unpad", a, nil, nil, "length name x")
  local x = check.variable("sequence_unpad", "x", a.x)
  local len = check.variable("sequence_unpad", "length", a.length)
  return simple("sequence_unpad", "sequence_unpad", { X = { x }, Length = { len } }, {}, a)
end

--- Concatenates the i-th sequences of the inputs into the i-th output sequence.
-- @tparam table|Variable a the list of LoD inputs, or `{input=, name=}`
-- @tparam table a.input the LoD tensors (same number of sequences and row shape)
-- @tparam[opt] string a.name
-- @treturn Variable the concatenation, one LoD level
-- @usage local both = layers.sequence_concat{input = {question, answer}}
function M.sequence_concat(a)
  if is_variable(a) or (type(a) == "table" and is_variable(a[1])) then a = { input = a } end
  a = args("sequence_concat", a, nil, nil, "input name")
  local xs = check.variables("sequence_concat", "input", a.input)
  return simple("sequence_concat", "sequence_concat", { X = xs }, {}, a)
end

--- Takes rows offset[i] .. offset[i] + length[i] - 1 of each sequence i.
-- Also positional: `sequence_slice(input, offset, length)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input a LoD tensor (one level)
-- @tparam Variable a.offset int64 [number of sequences, 1]
-- @tparam Variable a.length int64 [number of sequences, 1]
-- @tparam[opt] string a.name
-- @tparam[opt] Variable offset with a positional input
-- @tparam[opt] Variable length with a positional input
-- @treturn Variable the slices, one LoD level
-- @usage local sub = layers.sequence_slice{input = seqs, offset = off, length = len}
function M.sequence_slice(a, offset, length)
  if is_variable(a) then a = { input = a, offset = offset, length = length } end
  a = args("sequence_slice", a, nil, nil, "input length name offset")
  local x = check.variable("sequence_slice", "input", a.input)
  local off = check.variable("sequence_slice", "offset", a.offset)
  local len = check.variable("sequence_slice", "length", a.length)
  off.stop_gradient, len.stop_gradient = true, true
  return simple("sequence_slice", "sequence_slice", { X = { x }, Offset = { off }, Length = { len } }, {}, a)
end

--- Every window of win_size ids in each sequence (padded past its end).
-- Also positional: `sequence_enumerate(input, win_size, pad_value)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input int32 or int64 [N, 1] with one LoD level
-- @tparam int a.win_size the window's length (>= 2)
-- @tparam[opt=0] int a.pad_value the id past a sequence's end
-- @tparam[opt] string a.name
-- @tparam[opt] int win_size with a positional input
-- @tparam[opt] int pad_value with a positional input
-- @treturn Variable [N, win_size], the input's LoD
-- @usage local ngrams = layers.sequence_enumerate{input = ids, win_size = 3}
function M.sequence_enumerate(a, win_size, pad_value)
  if is_variable(a) then a = { input = a, win_size = win_size, pad_value = pad_value } end
  a = args("sequence_enumerate", a, nil, nil, "input name pad_value win_size")
  local x = check.variable("sequence_enumerate", "input", a.input)
  local out = simple("sequence_enumerate", "sequence_enumerate", { X = { x } },
    { win_size = check.positive_int("sequence_enumerate", "win_size", a.win_size),
      pad_value = check.int("sequence_enumerate", "pad_value", a.pad_value, 0) }, a)
  out.stop_gradient = true
  return out
end

--- Re-cuts each sequence's values into rows of new_dim.
-- Also positional: `sequence_reshape(input, new_dim)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input [N, D] with one LoD level
-- @tparam int a.new_dim the new row width
-- @tparam[opt] int new_dim with a positional input
-- @treturn Variable [N * D / new_dim, new_dim], one LoD level
-- @usage local r = layers.sequence_reshape{input = x, new_dim = 12}
function M.sequence_reshape(a, new_dim)
  if is_variable(a) then a = { input = a, new_dim = new_dim } end
  a = args("sequence_reshape", a, nil, nil, "input new_dim")
  local x = check.variable("sequence_reshape", "input", a.input)
  return simple("sequence_reshape", "sequence_reshape", { X = { x } },
    { new_dim = check.positive_int("sequence_reshape", "new_dim", a.new_dim) }, a)
end

--- Adds updates[j] at column index[j] of input's row i, for each j in
-- index's sequence i. Also positional: `sequence_scatter(input, index, updates)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input [number of sequences, D]
-- @tparam Variable a.index int32 or int64 [M, 1] with one LoD level
-- @tparam Variable a.updates input's dtype, [M, 1] with index's LoD
-- @tparam[opt] string a.name
-- @tparam[opt] Variable index with a positional input
-- @tparam[opt] Variable updates with a positional input
-- @treturn Variable input's shape
-- @usage local y = layers.sequence_scatter{input = x, index = ids, updates = upd}
function M.sequence_scatter(a, index, updates)
  if is_variable(a) then a = { input = a, index = index, updates = updates } end
  a = args("sequence_scatter", a, nil, nil, "index input name updates")
  local x = check.variable("sequence_scatter", "input", a.input)
  local ids = check.variable("sequence_scatter", "index", a.index)
  local upd = check.variable("sequence_scatter", "updates", a.updates)
  return simple("sequence_scatter", "sequence_scatter", { X = { x }, Ids = { ids }, Updates = { upd } }, {}, a)
end

return M
