-- The ops of issue 22's creation, random, shape and indexing families
-- (tensor_create, tensor_shape, tensor_select, tensor_window ops and their
-- grads) given
-- inputs of the wrong rank, dtype or size, zero-size inputs and missing
-- attributes: each either runs or fails with an error naming the op; none
-- crashes the process.
local T = require("spec.helpers.op_test")

local function tensors()
  return {
    T.tensor({}, { shape = { 0 } }),
    T.tensor({}, { shape = { 0, 3 } }),
    T.tensor({ 1 }, { shape = { 1 } }),
    T.tensor({ 1, 2, 3, 4, 5, 6 }, { shape = { 2, 3 } }),
    T.tensor({ 1, 0, 2, 1 }, { shape = { 4, 1 }, dtype = "int64" }),
    T.tensor({ 7, -1 }, { shape = { 2, 1 }, dtype = "int32" }),
    T.tensor({ 1, 2, 3, 4, 5, 6, 7, 8 }, { shape = { 2, 1, 2, 2 } }),
    T.tensor({ true, false }, { shape = { 2 }, dtype = "bool" }),
  }
end

-- op type -> input slots, attribute sets tried
local OPS = {
  fill = { {}, { {}, { value = { 1, 2 }, shape = { 3 } }, { value = { 1 }, shape = { -1 } } } },
  fill_zeros_like2 = { { "X" }, { {}, { dtype = 4 } } },
  one_hot_v2 = { { "X" }, { {}, { depth = 0 }, { depth = 3 } } },
  randint = { {}, { {}, { shape = { 2 }, low = 1, high = 0 }, { shape = { -2 }, high = 2 } } },
  randperm = { {}, { {}, { n = -1 }, { n = 3, dtype = 0 } } },
  seed = { {}, { {} } },
  sampling_id = { { "X" }, { {}, { min = 2, max = 1 } } },
  gaussian_random_batch_size_like = { { "Input" }, { {}, { shape = { -1, 2 }, input_dim_idx = 5 }, { shape = { -1 }, std = -1 } } },
  uniform_random_batch_size_like = { { "Input" }, { {}, { shape = { -1, 2 }, diag_num = 100 } } },
  shard_index = { { "X" }, { {}, { index_num = 10, nshards = 0 }, { index_num = 3, nshards = 2, shard_id = 1 } } },
  hash = { { "X" }, { {}, { num_hash = 0 }, { mod_by = 0 } } },
  random_crop = { { "X" }, { {}, { shape = { 5, 5 } }, { shape = { 1 } } } },
  unbind = { { "X" }, { {}, { axis = 7 } } },
  crop = { { "X" }, { {}, { shape = { 1, 1 }, offsets = { 9, 9 } }, { shape = { 1 } } } },
  reverse = { { "X" }, { {}, { axis = { 9 } }, { axis = { 0 } } } },
  pad2d = { { "X" }, { {}, { paddings = { 1, 1 } }, { paddings = { 5, 5, 5, 5 }, mode = "reflect" } } },
  pad_constant_like = { { "X", "Y" }, { {} } },
  multiplex = { { "Ids", "X" }, { {} } },
  where_index = { { "Condition" }, { {} } },
  unique = { { "X" }, { {}, { dtype = 5 }, { is_sorted = true } } },
  unique_with_counts = { { "X" }, { {} } },
  is_empty = { { "X" }, { {} } },
  equal_reduce = { { "X", "Y" }, { {} } },
  temporal_shift = { { "X" }, { {}, { seg_num = 3 }, { seg_num = 1, shift_ratio = 0.9 } } },
  unfold = { { "X" }, { {}, { kernel_sizes = { 5, 5 }, strides = { 1, 1 }, paddings = { 0, 0, 0, 0 }, dilations = { 1, 1 } },
                        { kernel_sizes = { 1, 1 }, strides = { 0, 1 }, paddings = { 0, 0, 0, 0 }, dilations = { 1, 1 } } } },
  partial_concat = { { "X" }, { {}, { start_index = 9 }, { length = 9 } } },
  partial_sum = { { "X" }, { {}, { start_index = -9 } } },
  -- grad ops, given Out@GRAD that may not fit the forward
  unbind_grad = { { "X", "Out@GRAD" }, { {}, { axis = 1 } }, { ["X@GRAD"] = 1 } },
  crop_grad = { { "X", "Out@GRAD" }, { {}, { offsets = { 1, 1 } } }, { ["X@GRAD"] = 1 } },
  pad2d_grad = { { "X", "Out@GRAD" }, { {}, { paddings = { 1, 0, 0, 1 } } }, { ["X@GRAD"] = 1 } },
  pad_constant_like_grad = { { "Y", "Out@GRAD" }, { {} }, { ["Y@GRAD"] = 1 } },
  multiplex_grad = { { "Ids", "X", "Out@GRAD" }, { {} }, { ["X@GRAD"] = 1 } },
  temporal_shift_grad = { { "Out@GRAD" }, { {}, { seg_num = 1 }, { seg_num = 2 }, { seg_num = 0 } }, { ["X@GRAD"] = 1 } },
  unfold_grad = { { "X", "Y@GRAD" }, { { kernel_sizes = { 1, 1 }, strides = { 1, 1 }, paddings = { 0, 0, 0, 0 },
                                         dilations = { 1, 1 } }, { kernel_sizes = { 1 }, strides = { 0 } } },
                  { ["X@GRAD"] = 1 } },
  partial_concat_grad = { { "X", "Out@GRAD" }, { {}, { start_index = 1, length = 1 } }, { ["X@GRAD"] = 1 } },
  partial_sum_grad = { { "X", "Out@GRAD" }, { {}, { start_index = 2, length = 5 } }, { ["X@GRAD"] = 1 } },
}

describe("issue 22's tensor ops under hostile inputs", function()
  for op, spec in pairs(OPS) do
    it(op .. " runs or fails cleanly", function()
      local slots, attr_sets, outputs = spec[1], spec[2], spec[3]
      local pool = tensors()
      local combos = {}
      if #slots == 0 then combos = { {} }
      elseif #slots == 1 then for _, t in ipairs(pool) do combos[#combos + 1] = { t } end
      elseif #slots == 2 then
        for _, a in ipairs(pool) do for _, b in ipairs(pool) do combos[#combos + 1] = { a, b } end end
      else
        for _, a in ipairs(pool) do for _, b in ipairs(pool) do for _, c in ipairs(pool) do
          combos[#combos + 1] = { a, b, c }
        end end end
      end
      for _, attrs in ipairs(attr_sets) do
        for _, combo in ipairs(combos) do
          local inputs = {}
          for i, s in ipairs(slots) do inputs[s] = combo[i] end
          local ok, err = pcall(T.run, { type = op, inputs = inputs, attrs = attrs, outputs = outputs })
          if not ok then assert.matches(op, tostring(err), 1, true) end
        end
      end
    end)
  end
end)
