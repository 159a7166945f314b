-- spec/helpers/sgd_step.lua — one dense or sparse sgd step on a parameter
-- "w" through the C program API: the op, mean, the backward pass, the
-- gradient's variable type checked (SELECTED_ROWS when sparse, else
-- LOD_TENSOR), sgd with learning rate "lr" (spec/ops_lookup_spec.lua,
-- ops_hsigmoid_spec.lua, ops_nce_spec.lua).
--
--   local w, ngrads = require("spec.helpers.sgd_step")(vars, add, is_sparse, feeds)
local ffi = require("ffi")
local lib = require("oar.lib")
local C = lib.load_op_api()
local T = require("spec.helpers.op_test")
local assert = require("luassert")   -- busted's global is not visible in modules

-- vars: { name, shape, dtype enum, persistable } to declare (with "w" and
-- "lr" among them); add(block) appends the op and returns the name of the
-- output whose mean is the loss; feeds the values by name. Returns w after
-- the step and the number of gradients the backward pass made.
return function(vars, add, is_sparse, feeds)
  local pp = ffi.new("oar_program_t*[1]")
  lib.check(C.oar_program_new(pp))
  local prog = ffi.gc(pp[0], C.oar_program_free)
  local block = C.oar_program_block(prog, 0)
  for _, v in ipairs(vars) do
    local vp = ffi.new("oar_var_desc_t*[1]")
    lib.check(C.oar_block_var_new(block, v[1], vp))
    lib.check(C.oar_var_desc_set_shape(vp[0], ffi.new("int64_t[?]", #v[2], v[2]), #v[2]))
    lib.check(C.oar_var_desc_set_dtype(vp[0], v[3]))
    if v[4] then lib.check(C.oar_var_desc_set_persistable(vp[0], true)) end
  end
  T.append_op(block, "mean", { X = { add(block) } }, { Out = { "loss" } }, {})
  local pairs_ = ffi.new("char**[1]")
  local np = ffi.new("int[1]")
  lib.check(C.oar_backward_append(prog, "loss", lib.cstrings({ "w" }), 1, nil, 0, pairs_, np))
  local ngrads = np[0]
  local gname = ffi.string(pairs_[0][1])
  C.oar_strings_free(pairs_[0], 2 * np[0])
  assert.are.equal(is_sparse and 8 or 7, C.oar_var_desc_type(C.oar_block_find_var(block, gname)))
  T.append_op(block, "sgd", { Param = { "w" }, Grad = { gname }, LearningRate = { "lr" } }, { ParamOut = { "w" } }, {})
  return T.run_program(prog, feeds, { "w" })[1], ngrads
end
