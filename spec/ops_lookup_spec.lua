-- lookup_table: rows by id, padding_idx, LoD, range errors, dense and
-- sparse (SELECTED_ROWS) gradients, the sparse one trained through sgd.
local ffi = require("ffi")
local T = require("spec.helpers.op_test")
local lib = require("oar.lib")
local C = lib.C

local expect_error = require("spec.helpers.expect_error")

local V, D = 5, 3
local W = {}
for i = 1, V * D do W[i] = (i - 1) * 0.5 - 3 + ((i * 7) % 5) * 0.01 end

-- rows of W for ids (0-based), zeros for the padding id
local function gather_rows(ids, pad)
  local out = {}
  for _, id in ipairs(ids) do
    for j = 1, D do out[#out + 1] = (id == pad) and 0 or W[id * D + j] end
  end
  return out
end

local function ids_tensor(ids, shape, lod)
  return T.tensor(ids, { shape = shape or { #ids, 1 }, dtype = "int64", lod = lod })
end

describe("lookup_table", function()
  for _, dt in ipairs({ "float64", "float32" }) do
    it("gathers rows of W by id (" .. dt .. ")", function()
      local ids = { 4, 0, 4, 2 }
      T.check_output{ type = "lookup_table",
        inputs = { W = T.tensor(W, { shape = { V, D }, dtype = dt }), Ids = ids_tensor(ids) },
        expect = { Out = { shape = { 4, D }, data = gather_rows(ids) } }, atol = 1e-6 }
    end)
  end

  it("accepts Ids of shape [N] and [..., 1] and passes their LoD", function()
    local w = T.tensor(W, { shape = { V, D } })
    T.check_output{ type = "lookup_table", inputs = { W = w, Ids = ids_tensor({ 1, 3, 3 }, { 3 }) },
      expect = { Out = { shape = { 3, D }, data = gather_rows({ 1, 3, 3 }) } } }
    T.check_output{ type = "lookup_table", inputs = { W = w, Ids = ids_tensor({ 0, 1, 2, 3 }, { 2, 2, 1 }) },
      expect = { Out = { shape = { 2, 2, D }, data = gather_rows({ 0, 1, 2, 3 }) } } }
    local r = T.run{ type = "lookup_table", inputs = { W = w, Ids = ids_tensor({ 2, 1, 0 }, nil, { { 0, 1, 3 } }) } }
    assert.are.same({ { 0, 1, 3 } }, r.Out[1].lod)
  end)

  it("gives zeros for padding_idx", function()
    local ids = { 2, 1, 2, 4 }
    T.check_output{ type = "lookup_table", attrs = { padding_idx = 2 },
      inputs = { W = T.tensor(W, { shape = { V, D } }), Ids = ids_tensor(ids) },
      expect = { Out = { shape = { 4, D }, data = gather_rows(ids, 2) } } }
  end)

  it("rejects ids out of range, naming the value, its position and V", function()
    local w = T.tensor(W, { shape = { V, D } })
    expect_error(function() T.run{ type = "lookup_table", inputs = { W = w, Ids = ids_tensor({ 0, 5 }) } } end,
      "lookup_table", "holds 5 at position 1", "[0, 5)", "V = 5")
    expect_error(function() T.run{ type = "lookup_table", inputs = { W = w, Ids = ids_tensor({ -1, 0 }) } } end,
      "lookup_table", "holds -1 at position 0")
    -- padding_idx -1 means "no padding", so an id of -1 is still out of range
    expect_error(function()
      T.run{ type = "lookup_table", attrs = { padding_idx = -1 }, inputs = { W = w, Ids = ids_tensor({ -1 }) } }
    end, "holds -1")
  end)

  it("rejects bad shapes, dtypes and padding_idx", function()
    local w = T.tensor(W, { shape = { V, D } })
    expect_error(function()
      T.run{ type = "lookup_table", inputs = { W = w, Ids = T.tensor({ 1, 2 }, { shape = { 2, 1 }, dtype = "int32" }) } }
    end, "lookup_table", "Ids", "int32", "int64")
    expect_error(function() T.run{ type = "lookup_table", inputs = { W = w, Ids = ids_tensor({ 1, 2 }, { 1, 2 }) } } end,
      "lookup_table", "[1, 2]", "[..., 1]")
    expect_error(function()
      T.run{ type = "lookup_table", inputs = { W = T.tensor(W, { shape = { V, D, 1 } }), Ids = ids_tensor({ 1 }) } }
    end, "lookup_table", "[5, 3, 1]", "[V, D]")
    expect_error(function()
      T.run{ type = "lookup_table", attrs = { padding_idx = 5 }, inputs = { W = w, Ids = ids_tensor({ 1 }) } }
    end, "lookup_table", "padding_idx = 5", "V = 5")
  end)

  it("has a gradient w.r.t. W (duplicates accumulate, padding gets none)", function()
    T.check_grad{ type = "lookup_table", attrs = { padding_idx = 1 }, wrt = { "W" },
      inputs = { W = T.tensor(W, { shape = { V, D } }), Ids = ids_tensor({ 3, 1, 3, 0, 3 }) } }
  end)

  it("accumulates duplicate ids into W@GRAD", function()
    local pp = ffi.new("oar_program_t*[1]")
    lib.check(C.oar_program_new(pp))
    local prog = ffi.gc(pp[0], C.oar_program_free)
    local block = C.oar_program_block(prog, 0)
    for _, v in ipairs({ { "w", { V, D }, 6 }, { "ids", { 4, 1 }, 3 } }) do
      local vp = ffi.new("oar_var_desc_t*[1]")
      lib.check(C.oar_block_var_new(block, v[1], vp))
      lib.check(C.oar_var_desc_set_shape(vp[0], ffi.new("int64_t[2]", v[2]), 2))
      lib.check(C.oar_var_desc_set_dtype(vp[0], v[3]))
    end
    T.append_op(block, "lookup_table", { W = { "w" }, Ids = { "ids" } }, { Out = { "emb" } }, { padding_idx = 0 })
    T.append_op(block, "reduce_sum", { X = { "emb" } }, { Out = { "loss" } }, { reduce_all = true })
    local grads = ffi.new("char**[1]")
    lib.check(C.oar_backward_gradients(prog, lib.cstrings({ "loss" }), 1, nil, lib.cstrings({ "w" }), 1,
      nil, 0, grads))
    local gname = ffi.string(grads[0][0])
    C.oar_strings_free(grads[0], 1)
    local g = T.run_program(prog, { w = T.tensor(W, { shape = { V, D } }), ids = ids_tensor({ 2, 0, 2, 4 }) },
      { gname })[1]
    -- d(sum)/dW[r] = number of times r occurs (row 0 is padding)
    local count = { [0] = 0, 0, 2, 0, 1 }
    local want = {}
    for r = 0, V - 1 do for _ = 1, D do want[#want + 1] = count[r] end end
    T.assert_close(g, { shape = { V, D }, data = want }, 0, 0, "W@GRAD")
  end)
end)

-- lookup_table (+ padding) -> mean -> backward -> sgd, dense or sparse; returns W after one step
local function train_step(is_sparse, ids, lr)
  local w, ngrads = require("spec.helpers.sgd_step")(
    { { "w", { V, D }, 6, true }, { "ids", { #ids, 1 }, 3 }, { "lr", { 1 }, 6 } },
    function(block)
      T.append_op(block, "lookup_table", { W = { "w" }, Ids = { "ids" } }, { Out = { "emb" } },
        { is_sparse = is_sparse, padding_idx = 3 })
      return "emb"
    end, is_sparse, { w = T.tensor(W, { shape = { V, D } }), ids = ids_tensor(ids),
    lr = T.tensor({ lr }, { shape = { 1 } }) })
  assert.are.equal(1, ngrads)
  return w
end

describe("lookup_table sparse gradient", function()
  it("declares W@GRAD as SELECTED_ROWS and trains through sgd like the dense path", function()
    assert.is_true(C.oar_op_is_registered("sgd"))
    local ids = { 4, 0, 4, 3, 1, 4 }
    local lr = 0.5
    local dense = train_step(false, ids, lr)
    local sparse = train_step(true, ids, lr)
    -- by hand: mean over N*D outputs, so each occurrence of a row adds 1/(N*D); row 3 is padding
    local want = {}
    local n = #ids * D
    for r = 0, V - 1 do
      local cnt = 0
      for _, id in ipairs(ids) do if id == r and r ~= 3 then cnt = cnt + 1 end end
      for j = 1, D do want[#want + 1] = W[r * D + j] - lr * cnt / n end
    end
    T.assert_close(dense, { shape = { V, D }, data = want }, 1e-12, 0, "dense W")
    T.assert_close(sparse, { shape = { V, D }, data = want }, 1e-12, 0, "sparse W")
  end)
end)
