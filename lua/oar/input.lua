--- oar.input: Fluid 1.8's fluid/input.py layers that live outside
-- fluid.layers: `embedding` (fluid.embedding, the lookup_table_v2 op, ids
-- of any shape without Fluid 1.x's trailing 1) and `one_hot` (fluid.one_hot,
-- the one_hot_v2 op, likewise). Also `oar.embedding`, `oar.one_hot`.
-- @module oar.input
local LayerHelper = require("oar.layer_helper")

local check, args = LayerHelper.check, LayerHelper.args

local M = {}

--- Rows of a [vocab, dim] table for int64 ids of any shape (Fluid's
-- fluid.embedding): the result is ids' shape then dim, so [N, T] ids give
-- [N, T, dim]. Rows whose id is padding_idx are zeros and get no gradient.
-- Also positional: `embedding(input, size, is_sparse, is_distributed,
-- padding_idx, param_attr, dtype)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input int64 ids, any shape
-- @tparam {int,int} a.size {vocab_size, dim}
-- @tparam[opt=false] bool a.is_sparse sparse gradient (SelectedRows)
-- @tparam[opt=false] bool a.is_distributed
-- @tparam[opt] int a.padding_idx (negative: from the end)
-- @tparam[opt] ParamAttr|string a.param_attr the table's attributes
-- @tparam[opt="float32"] string a.dtype
-- @tparam[opt] string a.name
-- @param[opt] ... with a positional input: size, is_sparse, is_distributed, padding_idx,
-- param_attr, dtype (Fluid's order)
-- @treturn Variable ids' shape then dim
-- @raise when input is not int64 or size not {vocab, dim}
-- @usage local emb = oar.embedding{input = src_ids, size = {10000, 64}}   -- [N, T] -> [N, T, 64]
function M.embedding(a, ...)
  if not (type(a) == "table" and a.input ~= nil) and select("#", ...) > 0 then
    local size, is_sparse, is_distributed, padding_idx, param_attr, dtype = ...
    a = { input = a, size = size, is_sparse = is_sparse, is_distributed = is_distributed, padding_idx = padding_idx,
          param_attr = param_attr, dtype = dtype }
  end
  a = args("embedding", a, "input", nil, "dtype input is_distributed is_sparse name padding_idx param_attr size")
  return require("oar.layers.embedding_op")(a, true)
end

--- One-hot rows for int ids of any shape (Fluid's fluid.one_hot, op
-- one_hot_v2): [N, T] ids give float32 [N, T, depth] (layers.one_hot is
-- fluid.layers.one_hot, op one_hot, which wants ids [..., 1]). Also
-- positional: `one_hot(input, depth, allow_out_of_range)`.
-- @tparam table a keyword arguments:
-- @tparam Variable a.input int32/int64 ids, any shape
-- @tparam int|Variable a.depth the number of classes; a Variable is read at run time
-- @tparam[opt=false] bool a.allow_out_of_range an id outside [0, depth) gives a zero row instead of an error
-- @tparam[opt] string a.name
-- @param[opt] ... with a positional input: depth, allow_out_of_range
-- @treturn Variable float32 [input dims..., depth]
-- @usage local oh = oar.one_hot(label, 10)   -- [N] -> [N, 10]
function M.one_hot(a, ...)
  if not (type(a) == "table" and a.input ~= nil) and select("#", ...) > 0 then
    local depth, allow = ...
    a = { input = a, depth = depth, allow_out_of_range = allow }
  end
  a = args("one_hot", a, "input", nil, "allow_out_of_range depth input name")
  local x = check.variable("one_hot", "input", a.input)
  local inputs, attrs = { X = { x } }, {
    allow_out_of_range = check.boolean("one_hot", "allow_out_of_range", a.allow_out_of_range, false),
    dtype = "float32" }
  if require("oar.framework").is_variable(a.depth) then inputs.depth_tensor = { a.depth }
  else attrs.depth = check.positive_int("one_hot", "depth", a.depth) end
  local helper = LayerHelper("one_hot_v2", a)
  local out = helper:create_variable_for_type_inference("float32")
  helper:append_op{ type = "one_hot_v2", inputs = inputs, outputs = { Out = { out } }, attrs = attrs }
  return out
end

return M
