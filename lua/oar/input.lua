--- oar.input: Fluid 1.8's fluid/input.py layers that live outside
-- fluid.layers: `embedding` (fluid.embedding, the lookup_table_v2 op, ids
-- of any shape without Fluid 1.x's trailing 1). Also `oar.embedding`.
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
  local ids = check.variable("embedding", "input", a.input)
  if ids.dtype ~= "int64" then check.fail("embedding", "input", "int64 ids", ids.dtype) end
  local size = a.size
  if type(size) ~= "table" or #size ~= 2 then check.fail("embedding", "size", "{vocab_size, dim}", size) end
  check.positive_int("embedding", "size[1]", size[1])
  check.positive_int("embedding", "size[2]", size[2])
  local dtype = check.dtype("embedding", "dtype", a.dtype, "float32")
  local helper = LayerHelper("embedding", a)
  local w = helper:create_parameter(helper:param_attr(), { size[1], size[2] }, dtype, false)
  local padding_idx = -1
  if a.padding_idx ~= nil then
    padding_idx = check.int("embedding", "padding_idx", a.padding_idx)
    if padding_idx < -size[1] or padding_idx >= size[1] then
      check.fail("embedding", "padding_idx", string.format("an id in [%d, %d)", -size[1], size[1]), padding_idx)
    end
    if padding_idx < 0 then padding_idx = size[1] + padding_idx end
  end
  local out = helper:create_variable_for_type_inference(dtype)
  helper:append_op{ type = "lookup_table_v2", inputs = { Ids = { ids }, W = { w } }, outputs = { Out = { out } },
    attrs = { is_sparse = check.boolean("embedding", "is_sparse", a.is_sparse, false),
              is_distributed = check.boolean("embedding", "is_distributed", a.is_distributed, false),
              remote_prefetch = false, padding_idx = padding_idx } }
  return out
end

return M
