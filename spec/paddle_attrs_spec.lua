-- Every attribute Paddle's op makers declare for an op oar has is declared
-- by oar with the same type, and Paddle's default value is accepted by the
-- check that insertion and loading run (src/attr_check.c).
--
-- The table spec/fixtures/paddle_attrs/attrs.tsv comes from Paddle itself:
-- Fluid 1.8's sources (tools/paddle_attrs/scan_fluid18.py over the
-- operators' AddAttr lines) and installed PaddlePaddle 2.6.2 and 3.3
-- (tools/paddle_attrs/dump_paddle.py: OpProto + checker defaults + extra
-- attrs), merged by tools/paddle_attrs/merge.py.
local ffi = require("ffi")
local lib = require("oar.lib")
-- oar_op_check_attrs, oar_attr_kind_accepted: the op-authoring API (src/oar_op.h)
local C = lib.load_op_api()
local P = require("spec.helpers.program")

local TYPES = { INT = 0, FLOAT = 1, STRING = 2, INTS = 3, FLOATS = 4, STRINGS = 5, BOOLEAN = 6,
                BOOLEANS = 7, BLOCK = 8, LONG = 9, BLOCKS = 10, LONGS = 11 }

-- Paddle 3 attr types oar's ProgramDesc has no counterpart for; the rows of
-- these attrs are listed so a new one cannot slip in unnoticed
local UNREPRESENTABLE = {
  ["assign_value.fp64_values"] = "FLOAT64S",
  ["assign_value.values"] = "SCALARS",
}

-- Paddle 2.6 / 3.3 rows of ops oar declares as Fluid 1.8 does, where Paddle
-- 2.x changed the op (not ops an inference model holds); their rows are
-- skipped by the two checks below, and each must still be in the table
local PADDLE26_CHANGES = {
  ["allclose.rtol"] = "Paddle 2.x made rtol a STRING (\"1e-05\"); Fluid 1.8's is a FLOAT, as oar's",
  ["allclose.atol"] = "Paddle 2.x made atol a STRING (\"1e-08\"); Fluid 1.8's is a FLOAT, as oar's",
  ["lamb.always_adapt"] = "Paddle 2.x's lamb option (trust ratio for params without weight decay); an optimizer op",
  ["lamb.multi_precision"] = "Paddle 2.x's master-weight (fp16 training) option of lamb; an optimizer op",
  ["lars_momentum.lars_weight_decay"] = "Paddle 2.x made it FLOATS (one per parameter of a fused op); Fluid 1.8's "
    .. "is a FLOAT, as oar's",
  ["lars_momentum.epsilon"] = "Paddle 2.x's addition to the LARS local rate; an optimizer op",
  ["lars_momentum.multi_precision"] = "Paddle 2.x's master-weight option; an optimizer op",
  ["lars_momentum.rescale_grad"] = "Paddle 2.x's gradient scale; an optimizer op",
}
local function paddle26_change(r)
  return r.src ~= "fluid1.8" and PADDLE26_CHANGES[r.op .. "." .. r.attr] ~= nil
end

local function read_table()
  local rows = {}
  for line in io.lines("spec/fixtures/paddle_attrs/attrs.tsv") do
    local src, op, attr, typ, def = line:match("^([^\t]+)\t([^\t]+)\t([^\t]+)\t([^\t]+)\t(.*)$")
    assert(src, "bad row: " .. line)
    rows[#rows + 1] = { src = src, op = op, attr = attr, type = typ, def = def }
  end
  return rows
end

-- the Lua value of a row's default; nil for "required" / "?"
local function default_of(row)
  if row.def == "required" or row.def == "?" then return nil end
  return assert(loadstring("return " .. row.def))()
end

local function set_attr(op, name, t, v)
  if t == TYPES.INT then return C.oar_op_desc_set_attr_int(op, name, v) end
  if t == TYPES.LONG then return C.oar_op_desc_set_attr_long(op, name, v) end
  if t == TYPES.FLOAT then return C.oar_op_desc_set_attr_float(op, name, v) end
  if t == TYPES.BOOLEAN then return C.oar_op_desc_set_attr_bool(op, name, v) end
  if t == TYPES.STRING then return C.oar_op_desc_set_attr_string(op, name, v) end
  if t == TYPES.BLOCK then return C.oar_op_desc_set_attr_block(op, name, v) end
  if t == TYPES.INTS then return C.oar_op_desc_set_attr_ints(op, name, P.carray("int32_t", v), #v) end
  if t == TYPES.LONGS then return C.oar_op_desc_set_attr_longs(op, name, P.carray("int64_t", v), #v) end
  if t == TYPES.FLOATS then return C.oar_op_desc_set_attr_floats(op, name, P.carray("float", v), #v) end
  if t == TYPES.BOOLEANS then return C.oar_op_desc_set_attr_bools(op, name, P.carray("bool", v), #v) end
  if t == TYPES.STRINGS then return C.oar_op_desc_set_attr_strings(op, name, lib.cstrings(v), #v) end
  if t == TYPES.BLOCKS then return C.oar_op_desc_set_attr_blocks(op, name, P.carray("int32_t", v), #v) end
  error("no setter for attr type " .. tostring(t))
end

-- nil when `op` accepts attr `name` of type t set to v, else the refusal
local function refusal(optype, name, t, v)
  local out = ffi.new("oar_op_desc_t *[1]")
  lib.check(C.oar_op_desc_new(optype, out))
  local op = out[0]
  local msg
  if set_attr(op, name, t, v) ~= 0 then
    msg = "cannot set: " .. lib.last_error()
  elseif C.oar_op_check_attrs(op) ~= 0 then
    msg = lib.last_error()
  end
  C.oar_op_desc_free(op)
  return msg
end

describe("attributes of Paddle's op makers", function()
  local rows = read_table()

  it("the table covers Fluid 1.8, Paddle 2.6 and 3.3 and every op in it is registered", function()
    local srcs, ops = {}, {}
    for _, r in ipairs(rows) do
      srcs[r.src] = (srcs[r.src] or 0) + 1
      ops[r.op] = true
    end
    assert.is_true((srcs["fluid1.8"] or 0) > 300)
    assert.is_true((srcs["paddle2.6"] or 0) > 300)
    assert.is_true((srcs["paddle3.3"] or 0) > 300)
    local missing = {}
    for op in pairs(ops) do
      if not C.oar_op_is_registered(op) then missing[#missing + 1] = op end
    end
    table.sort(missing)
    assert.are.same({}, missing)
  end)

  it("are declared by oar with Paddle's type", function()
    local bad, seen_changes = {}, {}
    for _, r in ipairs(rows) do
      local key = r.op .. "." .. r.attr
      local have = C.oar_op_attr_type(r.op, r.attr)
      if paddle26_change(r) then
        seen_changes[key] = true
      elseif UNREPRESENTABLE[key] then
        assert.are.equal(UNREPRESENTABLE[key], r.type)
        assert.are.equal(-1, have)
      elseif have < 0 then
        bad[#bad + 1] = ("%s: %s not declared (%s %s)"):format(r.src, key, r.type, r.def)
      elseif r.type ~= "ANY" and have ~= TYPES[r.type] and
             not C.oar_attr_kind_accepted(r.op, r.attr, TYPES[r.type]) then
        bad[#bad + 1] = ("%s: %s is %s in Paddle, oar declares type %d"):format(r.src, key, r.type, have)
      end
    end
    assert.are.same({}, bad)
    for key in pairs(PADDLE26_CHANGES) do assert(seen_changes[key], key .. ": no Paddle 2.6 row any more") end
  end)

  it("accept Paddle's default values", function()
    local bad, checked = {}, 0
    for _, r in ipairs(rows) do
      local v = default_of(r)
      local key = r.op .. "." .. r.attr
      if v ~= nil and not UNREPRESENTABLE[key] and not paddle26_change(r) then
        local t = TYPES[r.type] or C.oar_op_attr_type(r.op, r.attr)
        local msg = refusal(r.op, r.attr, t, v)
        checked = checked + 1
        if msg then bad[#bad + 1] = ("%s: %s = %s refused: %s"):format(r.src, key, r.def, msg) end
      end
    end
    assert.is_true(checked > 1500)
    assert.are.same({}, bad)
  end)

  it("refuse values of the result-changing ones oar does not implement", function()
    local cases = {
      { "conv2d", "fuse_relu", TYPES.BOOLEAN, true },
      { "conv2d", "use_addto", TYPES.BOOLEAN, true },
      { "depthwise_conv2d", "fuse_residual_connection", TYPES.BOOLEAN, true },
      { "adam", "amsgrad", TYPES.BOOLEAN, true },
      { "adam", "use_global_beta_pow", TYPES.BOOLEAN, true },
      { "momentum", "regularization_method", TYPES.STRING, "l2_decay" },
      { "momentum", "rescale_grad", TYPES.FLOAT, 0.5 },
      { "gather", "axis", TYPES.INT, 1 },
      { "reduce_sum", "out_dtype", TYPES.INT, 6 },
      { "reduce_mean", "in_dtype", TYPES.INT, 5 },
      { "softmax_with_cross_entropy", "use_softmax", TYPES.BOOLEAN, false },
      { "load", "seek", TYPES.LONG, 8 },
      { "load_combine", "model_from_memory", TYPES.BOOLEAN, true },
      { "save_combine", "save_to_memory", TYPES.BOOLEAN, true },
      { "uniform_random", "diag_num", TYPES.INT, 2 },
      { "truncated_gaussian_random", "a", TYPES.FLOAT, -3.0 },
      { "round", "decimals", TYPES.INT, 2 },
      { "batch_norm", "fuse_with_relu", TYPES.BOOLEAN, true },
      { "c_allreduce_sum", "use_model_parallel", TYPES.BOOLEAN, true },
      -- Paddle 2.6 / 3.3 additions to ops oar has
      { "conv3d", "fuse_activation", TYPES.STRING, "relu" },
      { "conv3d", "use_addto", TYPES.BOOLEAN, true },
      { "pixel_shuffle", "data_format", TYPES.STRING, "NHWC" },
      { "data_norm", "enable_scale_and_shift", TYPES.BOOLEAN, true },
      { "fc", "fuse_activation", TYPES.STRING, "relu" },
      { "fc", "fused_output_scale", TYPES.FLOAT, 0.5 },
      { "fc", "fused_reshape2_shape", TYPES.INTS, { 2, 3 } },
      { "kldiv_loss", "log_target", TYPES.BOOLEAN, true },
      { "max_pool2d_with_index", "ceil_mode", TYPES.BOOLEAN, true },
    }
    for _, c in ipairs(cases) do
      local msg = refusal(c[1], c[2], c[3], c[4])
      assert.is_string(msg, c[1] .. "." .. c[2])
      assert.matches("op '" .. c[1] .. "': attr '" .. c[2] .. "'", msg, 1, true)
      assert.matches("only its default is honoured", msg, 1, true)
    end
    -- the oneDNN/int8 switches take any value: oar's float kernels are what they mean
    assert.is_nil(refusal("conv2d", "use_mkldnn", TYPES.BOOLEAN, true))
    assert.is_nil(refusal("elementwise_add", "mkldnn_data_type", TYPES.STRING, "int8"))
    assert.is_nil(refusal("relu", "use_onednn", TYPES.BOOLEAN, true))
    assert.is_nil(refusal("matmul_v2", "onednn_data_type", TYPES.STRING, "bfloat16"))
    assert.is_nil(refusal("conv2d", "Scale_weights", TYPES.FLOATS, { 0.5, 2 }))
  end)

  -- ProgramDescs that Paddle itself serialized (tools/paddle_attrs/
  -- program_with_all_attrs.py): one op of every type oar has that Paddle
  -- knows, every attribute at its default, the extra attrs included
  for _, f in ipairs({ { "paddle2.6", 323 }, { "paddle3.3", 278 } }) do
    it("load from a program " .. f[1] .. " wrote with every attribute of every op", function()
      local fh = assert(io.open("spec/fixtures/paddle_attrs/all_attrs_" .. f[1] .. ".pb", "rb"))
      local bytes = fh:read("*a")
      fh:close()
      local out = ffi.new("oar_program_t *[1]")
      if C.oar_program_parse(bytes, #bytes, out) ~= 0 then error(lib.last_error()) end
      local p = ffi.gc(out[0], C.oar_program_free)
      local b = C.oar_program_block(p, 0)
      assert.are.equal(f[2], C.oar_block_num_ops(b))
      local attrs = 0
      for i = 0, f[2] - 1 do attrs = attrs + C.oar_op_desc_num_attrs(C.oar_block_op_at(b, i)) end
      assert.is_true(attrs > 1500)
    end)
  end

  it("of Paddle 3's types load when empty, and are refused by name when they hold values", function()
    -- paddle.assign(float64 array): 2.6 writes an empty fp64_values (FLOAT64S)
    -- beside fp32_values; 3.3 writes the values as SCALARS
    local function parse(name)
      local fh = assert(io.open("spec/fixtures/paddle_attrs/" .. name, "rb"))
      local bytes = fh:read("*a")
      fh:close()
      local out = ffi.new("oar_program_t *[1]")
      local rc = C.oar_program_parse(bytes, #bytes, out)
      if rc == 0 then C.oar_program_free(out[0]) return nil end
      return lib.last_error()
    end
    assert.is_nil(parse("assign_value_paddle2.6.pb"))
    assert.matches("op 'assign_value': attr 'values' is a Paddle SCALARS attribute with a value; oar does not "
                   .. "support that attribute type", parse("assign_value_paddle3.3.pb"), 1, true)
  end)

  it("are accepted on a real insertion: a conv2d with every attr Paddle 2.6 saves", function()
    local p = P.new_program()
    local b = C.oar_program_block(p, 0)
    P.new_var(b, "x", { dims = { 1, 2, 5, 5 }, dtype = 5 })
    P.new_var(b, "w", { dims = { 3, 2, 3, 3 }, dtype = 5, persistable = true })
    P.new_var(b, "y", { dtype = 5 })
    local out = ffi.new("oar_op_desc_t *[1]")
    lib.check(C.oar_op_desc_new("conv2d", out))
    local op = out[0]
    lib.check(C.oar_op_desc_set_input(op, "Input", lib.cstrings({ "x" }), 1))
    lib.check(C.oar_op_desc_set_input(op, "Filter", lib.cstrings({ "w" }), 1))
    lib.check(C.oar_op_desc_set_output(op, "Output", lib.cstrings({ "y" }), 1))
    local n = 0
    for _, r in ipairs(rows) do
      if r.op == "conv2d" and (r.src == "paddle2.6" or r.src == "fluid1.8") and default_of(r) ~= nil then
        lib.check(set_attr(op, r.attr, TYPES[r.type], default_of(r)))
        n = n + 1
      end
    end
    assert.is_true(n >= 25)
    if C.oar_block_insert_op(b, -1, op) ~= 0 then
      local msg = lib.last_error()
      C.oar_op_desc_free(op)
      error(msg)
    end
    local y = C.oar_block_find_var(b, "y")
    local dims = C.oar_var_desc_dims(y)
    assert.are.equal(4, C.oar_var_desc_ndim(y))
    assert.are.same({ 1, 3, 3, 3 }, { tonumber(dims[0]), tonumber(dims[1]), tonumber(dims[2]), tonumber(dims[3]) })
  end)
end)
