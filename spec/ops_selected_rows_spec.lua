-- merge_selected_rows, get_tensor_from_selected_rows, split_selected_rows,
-- lookup_table_dequant (issue 22): ports of Fluid 1.8's
-- test_merge_selectedrows_op.py, test_get_tensor_from_selected_rows_op.py,
-- test_split_selected_rows_op.py and test_lookup_table_dequant_op.py. A
-- SelectedRows input is made the way a program makes one: the sparse
-- gradient of lookup_table (is_sparse), whose rows are the ids and whose
-- value is Out@GRAD; outputs are read back from the scope (rows, height,
-- value).
local ffi = require("ffi")
local lib = require("oar.lib")
local T = require("spec.helpers.op_test")
local expect_error = require("spec.helpers.expect_error")
local C = lib.load_op_api()   -- oar_var_selected_rows: the rows of a SelectedRows

local function check(rc, what)
  if rc ~= 0 then error((what and (what .. ": ") or "") .. lib.last_error(), 3) end
end

local declare = T.declare

-- runs `ops` ({type, inputs, outputs, attrs}) after a lookup_table_grad that
-- makes the SelectedRows "x" (height, rows, value [#rows, w]); returns, for
-- each name of `read`, {rows =, height =, value = {shape =, data =}} (rows
-- and height nil for a LoD tensor)
local function run(x, ops, read, dtype)
  dtype = dtype or "float64"
  local p = ffi.new("oar_program_t*[1]")
  check(C.oar_program_new(p))
  local prog = ffi.gc(p[0], C.oar_program_free)
  local block = C.oar_program_block(prog, 0)
  local w = #x.value / math.max(#x.rows, 1)
  local zeros = {}
  for i = 1, x.height * w do zeros[i] = 0 end
  local feeds = {
    table = T.tensor(zeros, { shape = { x.height, w }, dtype = dtype }),
    ids = T.tensor(x.rows, { shape = { #x.rows, 1 }, dtype = "int64" }),
    dout = T.tensor(x.value, { shape = { #x.rows, w }, dtype = dtype }),
  }
  for name, v in pairs(feeds) do declare(block, name, v) end
  T.append_op(block, "lookup_table_grad", { W = { "table" }, Ids = { "ids" }, ["Out@GRAD"] = { "dout" } },
              { ["W@GRAD"] = { "x" } }, { is_sparse = true })
  for _, o in ipairs(ops) do T.append_op(block, o[1], o[2], o[3], o[4] or {}) end
  local eout = ffi.new("oar_executor_t*[1]")
  check(C.oar_executor_new(0, 0, eout))
  local exe = ffi.gc(eout[0], C.oar_executor_free)
  local sout = ffi.new("oar_scope_t*[1]")
  check(C.oar_scope_new(sout))
  local scope = ffi.gc(sout[0], C.oar_scope_free)
  local names, tensors = {}, {}
  for name, v in pairs(feeds) do
    names[#names + 1] = name
    tensors[#names] = T.to_c(v, dtype)
  end
  local ft = ffi.new("oar_tensor_t*[?]", #names)
  for i, t in ipairs(tensors) do ft[i - 1] = t end
  -- SelectedRows cannot be fetched: read what the scope holds after the run
  local fetch = {}
  for _, name in ipairs(read) do
    local vd = C.oar_block_find_var(block, name)
    if vd == nil or C.oar_var_desc_type(vd) ~= C.OAR_VAR_SELECTED_ROWS then fetch[#fetch + 1] = name
    else check(C.oar_var_desc_set_persistable(vd, true)) end   -- kept in the scope after the run
  end
  local out = ffi.new("oar_tensor_t*[?]", math.max(#fetch, 1))
  local rc = C.oar_executor_run(exe, prog, 0, scope, #names, ffi.new("const char*[?]", #names, names), ft,
                                #fetch, lib.cstrings(fetch), out)
  if rc ~= 0 then error(lib.last_error(), 2) end
  local res = {}
  for i, name in ipairs(fetch) do res[name] = { value = T.from_c(ffi.gc(out[i - 1], C.oar_tensor_free)) } end
  for _, name in ipairs(read) do
    local v = C.oar_scope_find_var(scope, name)
    if not res[name] then
      assert(v ~= nil and C.oar_variable_type(v) == C.OAR_VAR_SELECTED_ROWS, name .. " is not a SelectedRows")
      local sr = C.oar_var_selected_rows(v)
      local r = { height = tonumber(sr.height), rows = {} }
      for j = 0, tonumber(sr.nrows) - 1 do r.rows[#r.rows + 1] = tonumber(sr.rows[j]) end
      r.value = T.from_c(sr.value)
      res[name] = r
    end
  end
  return res
end

-- the test's X: rows [0, 5, 5, 4, 19], height 20, values 1 except rows 1..3 = 2, 3, 4 (row_numel 2)
local X = { height = 20, rows = { 0, 5, 5, 4, 19 }, value = { 1, 1, 2, 2, 3, 3, 4, 4, 1, 1 } }

describe("merge_selected_rows", function()
  for _, dt in ipairs({ "float32", "float64" }) do
    it("merges duplicate rows, ascending (" .. dt .. ")", function()
      local r = run(X, { { "merge_selected_rows", { X = { "x" } }, { Out = { "out" } } } }, { "out" }, dt).out
      -- by hand: the distinct rows sorted, each the sum of its values
      local want_rows, want = {}, {}
      local sums = {}
      for i, row in ipairs(X.rows) do
        sums[row] = sums[row] or { 0, 0 }
        for j = 1, 2 do sums[row][j] = sums[row][j] + X.value[(i - 1) * 2 + j] end
      end
      for row in pairs(sums) do want_rows[#want_rows + 1] = row end
      table.sort(want_rows)
      for _, row in ipairs(want_rows) do want[#want + 1] = sums[row][1]; want[#want + 1] = sums[row][2] end
      assert.are.same({ 0, 4, 5, 19 }, want_rows)   -- the test's out_rows
      assert.are.same(want_rows, r.rows)
      assert.are.equal(20, r.height)
      T.assert_close(r.value, { shape = { 4, 2 }, data = want })
      assert.are.same({ 1, 1, 4, 4, 5, 5, 1, 1 }, want)   -- the test's values
    end)
  end

  it("refuses a LoD tensor", function()
    expect_error(function()
      T.run{ type = "merge_selected_rows", inputs = { X = T.tensor({ 1, 2 }, { shape = { 1, 2 } }) } }
    end, "merge_selected_rows", "in_X", "not a SelectedRows")
  end)
end)

describe("get_tensor_from_selected_rows", function()
  for _, dt in ipairs({ "float32", "float64" }) do
    it("copies the value (" .. dt .. ")", function()
      local r = run(X, { { "get_tensor_from_selected_rows", { X = { "x" } }, { Out = { "out" } } } }, { "out" }, dt).out
      assert.is_nil(r.rows)
      T.assert_close(r.value, { shape = { 5, 2 }, data = X.value })
    end)
  end

  it("after merge_selected_rows, the merged value", function()
    local r = run(X, { { "merge_selected_rows", { X = { "x" } }, { Out = { "m" } } },
                       { "get_tensor_from_selected_rows", { X = { "m" } }, { Out = { "out" } } } }, { "out" }).out
    T.assert_close(r.value, { shape = { 4, 2 }, data = { 1, 1, 4, 4, 5, 5, 1, 1 } })
  end)

  it("refuses a LoD tensor at insertion", function()
    expect_error(function()
      T.run{ type = "get_tensor_from_selected_rows", inputs = { X = T.tensor({ 1, 2 }, { shape = { 1, 2 } }) } }
    end, "get_tensor_from_selected_rows", "in_X", "not a SelectedRows")
  end)
end)

describe("split_selected_rows", function()
  -- the test: rows [0, 5, 7, 4, 20], height 21, sections [5, 5, 5, 5, 3]
  local SX = { height = 21, rows = { 0, 5, 7, 4, 20 }, value = { 2, 1, 1, 1, 1, 4, 1, 1, 1, 8 } }
  local function ref(x, sections)
    local parts, lo = {}, 0
    for k, h in ipairs(sections) do
      local p = { rows = {}, value = {}, height = h }
      for i, row in ipairs(x.rows) do
        if row >= lo and row < lo + h then
          p.rows[#p.rows + 1] = row - lo
          p.value[#p.value + 1] = x.value[(i - 1) * 2 + 1]
          p.value[#p.value + 1] = x.value[(i - 1) * 2 + 2]
        end
      end
      parts[k] = p
      lo = lo + h
    end
    return parts
  end

  for _, dt in ipairs({ "float64", "float32" }) do
    it("sections 5, 5, 5, 5, 3 (" .. dt .. ")", function()
      local sections = { 5, 5, 5, 5, 3 }
      local outs = { "o1", "o2", "o3", "o4", "o5" }
      local r = run(SX, { { "split_selected_rows", { X = { "x" } }, { Out = outs }, { height_sections = sections } } },
                    outs, dt)
      local want = ref(SX, sections)
      assert.are.same({ 0, 4 }, want[1].rows)   -- the test's expected rows
      assert.are.same({ 0, 2 }, want[2].rows)
      assert.are.same({}, want[3].rows)
      assert.are.same({ 0 }, want[5].rows)
      for k, name in ipairs(outs) do
        assert.are.same(want[k].rows, r[name].rows, name)
        assert.are.equal(want[k].height, r[name].height)
        T.assert_close(r[name].value, { shape = { #want[k].rows, 2 }, data = want[k].value })
      end
    end)
  end

  it("refuses sections that do not sum to the height, or one per output", function()
    expect_error(function()
      run(SX, { { "split_selected_rows", { X = { "x" } }, { Out = { "a", "b" } }, { height_sections = { 5, 5 } } } },
          { "a" })
    end, "split_selected_rows", "row 20", "sections' total 10")
    expect_error(function()
      run(SX, { { "split_selected_rows", { X = { "x" } }, { Out = { "a", "b" } }, { height_sections = { 21 } } } },
          { "a" })
    end, "split_selected_rows", "height_sections has 1 values", "2 variables")
  end)
end)

describe("lookup_table_dequant", function()
  -- test_lookup_table_dequant_op.py: table rows [min, max, packed bytes]; here 4 rows of
  -- 2 packed floats (8 bytes), ids [[0], [3], [1], [3]]
  local function pack(bytes)
    local f = ffi.new("float[1]")
    local b = ffi.cast("uint8_t*", f)
    for i = 0, 3 do b[i] = bytes[i + 1] end
    return f[0]
  end
  local bytes, table_ = {}, {}
  local V, Q = 4, 4
  for r = 0, V - 1 do
    local lo, hi = -1 - r * 0.5, 1 + r * 0.25
    table_[#table_ + 1] = lo
    table_[#table_ + 1] = hi
    bytes[r] = {}
    for q = 1, 8 do bytes[r][q] = (r * 37 + q * 29) % 256 end
    table_[#table_ + 1] = pack({ bytes[r][1], bytes[r][2], bytes[r][3], bytes[r][4] })
    table_[#table_ + 1] = pack({ bytes[r][5], bytes[r][6], bytes[r][7], bytes[r][8] })
  end
  local function f32(v) return tonumber(ffi.new("float", v)) end
  local function ref(ids, pad)
    local out = {}
    for _, id in ipairs(ids) do
      for q = 1, 8 do
        if id == pad then out[#out + 1] = 0
        else
          local lo, hi = f32(table_[id * Q + 1]), f32(table_[id * Q + 2])
          out[#out + 1] = f32(f32((hi - lo) / 256) * bytes[id][q]) + lo
        end
      end
    end
    return out
  end

  it("dequantizes the rows of the ids", function()
    local ids = { 0, 3, 1, 3 }
    T.check_output{ type = "lookup_table_dequant", dtype = "float32",
                    inputs = { W = T.tensor(table_, { shape = { V, Q }, dtype = "float32" }),
                               Ids = T.tensor(ids, { shape = { 4, 1 }, dtype = "int64" }) },
                    expect = { Out = { shape = { 4, 8 }, data = ref(ids, -1) } }, atol = 1e-5 }
  end)

  it("padding_idx gives zeros", function()
    local ids = { 2, 1, 2 }
    T.check_output{ type = "lookup_table_dequant", dtype = "float32", attrs = { padding_idx = 2 },
                    inputs = { W = T.tensor(table_, { shape = { V, Q }, dtype = "float32" }),
                               Ids = T.tensor(ids, { shape = { 3, 1 }, dtype = "int64" }) },
                    expect = { Out = { shape = { 3, 8 }, data = ref(ids, 2) } }, atol = 1e-5 }
  end)

  it("refuses an id past W's rows", function()
    expect_error(function()
      T.run{ type = "lookup_table_dequant", dtype = "float32",
             inputs = { W = T.tensor(table_, { shape = { V, Q }, dtype = "float32" }),
                        Ids = T.tensor({ 4 }, { shape = { 1, 1 }, dtype = "int64" }) } }
    end, "lookup_table_dequant", "in_Ids", "holds 4", "< 4")
  end)
end)

describe("oar.layers merge_selected_rows, get_tensor_from_selected_rows", function()
  local oar = require("oar")
  local A = require("spec.helpers.api")
  local layers = oar.layers

  local flatten = require("spec.helpers.index").flatten
  local function flat(t) return flatten(t:totable()) end

  it("merge the sparse gradient of an embedding and read its value", function()
    local main, startup, merged, raw, dense = A.build(function()
      local ids = layers.data{ name = "ids", shape = { 1 }, dtype = "int64" }
      local emb = layers.embedding{ input = ids, size = { 20, 2 }, is_sparse = true }
      local loss = layers.reduce_sum{ input = emb }
      local pg = oar.append_backward(loss)
      local g = pg[1][2]
      assert.are.equal("selected_rows", g.type)
      local m = layers.merge_selected_rows(g)
      return m, layers.get_tensor_from_selected_rows(g), layers.get_tensor_from_selected_rows{ x = m }
    end)
    assert.are.equal("selected_rows", merged.type)
    assert.are.equal("lod_tensor", dense.type)
    local got = A.run(main, startup, { ids = oar.Tensor({ { 0 }, { 5 }, { 5 }, { 4 }, { 19 } }, "int64") },
                      { raw, dense })
    -- d sum / d row = 1 per occurrence: 5 unmerged rows of ones, 4 merged rows (row 5 twice)
    assert.are.same({ 5, 2 }, got[1]:shape())
    assert.are.same({ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 }, flat(got[1]))
    assert.are.same({ 4, 2 }, got[2]:shape())
    assert.are.same({ 1, 1, 1, 1, 2, 2, 1, 1 }, flat(got[2]))
  end)

  it("refuse a LoD tensor, naming the layer", function()
    A.build(function()
      local x = layers.data{ name = "x", shape = { 2 } }
      local e = A.errmsg(layers.merge_selected_rows, x)
      assert.is_truthy(e:find("merge_selected_rows", 1, true) and e:find("SelectedRows", 1, true), e)
      e = A.errmsg(layers.get_tensor_from_selected_rows, { x = x })
      assert.is_truthy(e:find("get_tensor_from_selected_rows", 1, true) and e:find("SelectedRows", 1, true), e)
    end)
  end)
end)
