--- oar.layers.embedding_op: the body that layers.embedding (Fluid 1.x's
-- lookup_table) and oar.embedding (fluid.embedding, lookup_table_v2) share;
-- not merged into oar.layers.
-- @module oar.layers.embedding_op
local LayerHelper = require("oar.layer_helper")

local check = LayerHelper.check

--- Checks the keyword arguments a (already through LayerHelper.args) and
-- appends the lookup over a new `{vocab, dim}` table.
-- @tparam table a input, size, is_sparse, is_distributed, padding_idx, param_attr, dtype, name
-- @tparam bool v2 lookup_table_v2 (int64 ids only, padding_idx within [-vocab, vocab),
-- remote_prefetch false) rather than lookup_table
-- @treturn Variable the looked-up rows
return function(a, v2)
  local ids = check.variable("embedding", "input", a.input)
  if v2 and ids.dtype ~= "int64" then check.fail("embedding", "input", "int64 ids", ids.dtype) end
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
    if v2 and (padding_idx < -size[1] or padding_idx >= size[1]) then
      check.fail("embedding", "padding_idx", string.format("an id in [%d, %d)", -size[1], size[1]), padding_idx)
    end
    if padding_idx < 0 then padding_idx = size[1] + padding_idx end
  end
  local out = helper:create_variable_for_type_inference(dtype)
  local attrs = { is_sparse = check.boolean("embedding", "is_sparse", a.is_sparse, false),
                  is_distributed = check.boolean("embedding", "is_distributed", a.is_distributed, false),
                  padding_idx = padding_idx }
  if v2 then attrs.remote_prefetch = false end
  helper:append_op{ type = v2 and "lookup_table_v2" or "lookup_table", inputs = { Ids = { ids }, W = { w } },
                    outputs = { Out = { out } }, attrs = attrs }
  return out
end
