-- The hostile-input review's findings (issue 13), one case each. A case
-- that crashed or hung before its fix runs in a child process (luajit
-- under `timeout -s KILL`): the child must end normally with the clean
-- error, where a crash would end it with a signal and a hang with the kill.
local ffi = require("ffi")
local bit = require("bit")
local oar = require("oar")
local layers = oar.layers
local lib = require("oar.lib")
local C = lib.C

local function sh_quote(s)
  assert(not s:find("'", 1, true))
  return "'" .. s .. "'"
end

local ROOT = io.popen("pwd"):read("*l")
local TMP = os.tmpname()
os.remove(TMP)
os.execute("mkdir -p " .. sh_quote(TMP))

local PRELUDE = string.format([[
package.path = %q .. "/lua/?.lua;" .. %q .. "/lua/?/init.lua;" .. package.path
package.cpath = %q .. "/build/?.so;" .. package.cpath
local ffi = require("ffi")
local oar = require("oar")
local layers = oar.layers
local C = require("oar.lib").C
local TMP = %q
]], ROOT, ROOT, ROOT, TMP)

local nchild = 0
-- Runs code in a child luajit; returns its exit status and output.
local function child(code, limit)
  nchild = nchild + 1
  local path = string.format("%s/child%d.lua", TMP, nchild)
  local f = assert(io.open(path, "w"))
  f:write(PRELUDE, code)
  f:close()
  local p = io.popen(string.format("timeout -s KILL %d luajit %s 2>&1; echo \"exit=$?\"", limit or 30, sh_quote(path)))
  local out = p:read("*a")
  p:close()
  local rc = tonumber(out:match("exit=(%d+)%s*$"))
  return rc, out
end

-- code must raise an error matching every pattern (plain text), in a child
local function refused_in_child(code, ...)
  local rc, out = child("local ok, err = pcall(function()\n" .. code .. "\nend)\n" ..
    "if ok then print('NO ERROR') os.exit(3) end\nio.write('ERROR: ', tostring(err), '\\n')\nos.exit(0)\n")
  assert.are.equal(0, rc, "the child did not end with a clean error:\n" .. out)
  for _, pat in ipairs({ ... }) do
    assert(out:find(pat, 1, true), string.format("expected %q in:\n%s", pat, out))
  end
  return out
end

-- ---- protobuf bytes by hand (framework.proto field numbers) --------------------
local function varint(n)
  n = ffi.new("uint64_t", n)
  local out = {}
  repeat
    local b = tonumber(bit.band(n, 0x7f))
    n = bit.rshift(n, 7)
    if n ~= 0 then b = b + 0x80 end
    out[#out + 1] = string.char(b)
  until n == 0
  return table.concat(out)
end
local function key(field, wt) return varint(field * 8 + wt) end
local function vint(field, n) return key(field, 0) .. varint(n) end
local function bytes(field, s) return key(field, 2) .. varint(#s) .. s end
local function f32(field, x) return key(field, 5) .. ffi.string(ffi.new("float[1]", x), 4) end

local function var(name, dims, dtype)
  local td = vint(1, dtype or 5)
  for _, d in ipairs(dims or { 1 }) do td = td .. vint(2, d) end
  local vt = vint(1, 7) .. bytes(3, bytes(1, td))
  return bytes(1, name) .. bytes(2, vt) .. vint(3, 0)
end
local function slots(field, t)
  local out = {}
  for slot, args in pairs(t or {}) do
    local s = bytes(1, slot)
    for _, a in ipairs(args) do s = s .. bytes(2, a) end
    out[#out + 1] = bytes(field, s)
  end
  return table.concat(out)
end
-- attrs: {name, type, encoded value}
local function attr_int(name, v) return bytes(1, name) .. vint(2, 0) .. vint(3, v) end
local function attr_float(name, v) return bytes(1, name) .. vint(2, 1) .. f32(4, v) end
local function attr_ints(name, list)
  local s = bytes(1, name) .. vint(2, 3)
  for _, v in ipairs(list) do s = s .. vint(6, v) end
  return s
end
local function attr_block(name, b) return bytes(1, name) .. vint(2, 8) .. vint(12, b) end
local function op(t, ins, outs, attrs)
  local s = bytes(3, t) .. slots(1, ins) .. slots(2, outs)
  for _, a in ipairs(attrs or {}) do s = s .. bytes(4, a) end
  return s
end
local function block(idx, parent, vars, ops)
  local s = vint(1, idx) .. vint(2, parent)
  for _, v in ipairs(vars or {}) do s = s .. bytes(3, v) end
  for _, o in ipairs(ops or {}) do s = s .. bytes(4, o) end
  return s
end
local NEG1 = 0xFFFFFFFFFFFFFFFFULL
local function program(...)
  local s = ""
  for _, b in ipairs({ ... }) do s = s .. bytes(1, b) end
  return s
end

-- feeds name -> Tensor, fetches names; runs prog
local function run(prog, feed, fetch)
  return oar.Executor():run(prog, { feed = feed, fetch_list = fetch, scope = oar.Scope() })
end

-- ---- 1. one validation of a program -------------------------------------------------
describe("hostile programs", function()
  it("refuse an sgd or adam without its outputs, parsed or built raw, never writing through NULL", function()
    local sgd = program(block(0, NEG1, { var("p", { 2 }), var("g", { 2 }), var("lr", { 1 }) }, {
      op("sgd", { Param = { "p" }, Grad = { "g" }, LearningRate = { "lr" } }, {}) }))
    local ok, err = pcall(oar.Program.parse, sgd)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("missing output slot 'ParamOut'", 1, true), err)
    local adam = program(block(0, NEG1, { var("p", { 2 }), var("g", { 2 }), var("lr", { 1 }), var("m", { 2 }) }, {
      op("adam", { Param = { "p" }, Grad = { "g" }, LearningRate = { "lr" }, Moment1 = { "m" }, Moment2 = { "m" },
                   Beta1Pow = { "lr" }, Beta2Pow = { "lr" } }, {}) }))
    ok, err = pcall(oar.Program.parse, adam)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("missing output slot", 1, true), err)
    -- built behind insertion's back (the raw C insert), then run: the executor checks it
    refused_in_child([[
      -- insertion without any check (the op-authoring API, for passes)
      require("oar.lib").load_op_api()
      local prog = oar.Program()
      local b = prog:global_block()
      for _, n in ipairs({ "p", "g", "lr" }) do b:create_var{ name = n, shape = { 2 }, persistable = true } end
      local out = ffi.new("oar_op_desc_t *[1]")
      assert(C.oar_op_desc_new("sgd", out) == 0)
      for slot, n in pairs({ Param = "p", Grad = "g", LearningRate = "lr" }) do
        C.oar_op_desc_set_input(out[0], slot, ffi.new("const char *[1]", { n }), 1)
      end
      assert(C.oar_block_insert_op_raw(b:_ptr(), -1, out[0]) == 0)
      local s = oar.Scope()
      for _, n in ipairs({ "p", "g", "lr" }) do s:var(n):set_tensor(oar.Tensor({ 1, 2 })) end
      oar.Executor():run(prog, { scope = s })
    ]], "missing output slot 'ParamOut'", "sgd")
    -- and an attached op's required output cannot be emptied afterwards
    local prog = oar.Program()
    local b = prog:global_block()
    for _, n in ipairs({ "p", "g" }) do b:create_var{ name = n, shape = { 2 }, persistable = true } end
    b:create_var{ name = "lr", shape = { 1 }, persistable = true }
    local o = b:append_op{ type = "sgd", inputs = { Param = { "p" }, Grad = { "g" }, LearningRate = { "lr" } },
                           outputs = { ParamOut = { "p" } } }
    assert.are_not.equal(0, C.oar_op_desc_set_output(o.handle, "ParamOut", nil, 0))
    assert.truthy(lib.last_error():find("'ParamOut' is required", 1, true))
    assert.are_not.equal(0, C.oar_op_desc_set_output(o.handle, "ParamOut", ffi.new("const char *[1]", { "@EMPTY@" }), 1))
  end)

  it("check declared attr ranges when parsed and when set (a negative lod_rank_table level)", function()
    local bad = program(block(0, NEG1, { var("x", { 4, 1 }), var("t") }, {
      op("lod_rank_table", { X = { "x" } }, { Out = { "t" } }, { attr_int("level", 0xFFFFFFFFFFFFFFFFULL) }) }))
    local ok, err = pcall(oar.Program.parse, bad)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("attr 'level' = -1 is outside [0, 7]", 1, true), err)
    for _, t in ipairs({ "lod_rank_table", "split_lod_tensor" }) do
      refused_in_child(string.format([[
        local prog = oar.Program()
        local op
        oar.program_guard(prog, oar.Program(), function()
          local x = layers.data{ name = "x", shape = { 1 }, lod_level = 1 }
          if %q == "lod_rank_table" then
            layers.lod_rank_table(x)
          else
            local m = layers.data{ name = "m", shape = { 1 }, dtype = "bool" }
            prog:global_block():append_op{ type = "split_lod_tensor", inputs = { X = { x }, Mask = { m } },
                                           outputs = { OutTrue = { "t" }, OutFalse = { "f" } } }
          end
          local ops = prog:global_block():ops()
          op = ops[#ops]
        end)
        op:set_attr("level", -1)
      ]], t), "attr 'level' = -1 is outside [0, 7]")
    end
  end)

  it("give a parsed program's ops their declared defaults", function()
    -- scale without bias_after_scale: 2 * 1 + 1 = 3 (reading it as false gave 2 * (1 + 1) = 4)
    local p = oar.Program.parse(program(block(0, NEG1, { var("x", { 1 }), var("y", { 1 }) }, {
      op("scale", { X = { "x" } }, { Out = { "y" } }, { attr_float("scale", 2), attr_float("bias", 1) }) })))
    assert.are.same({ 3 }, run(p, { x = oar.Tensor({ 1 }) }, { "y" })[1]:totable())
    assert.is_true(p:global_block():ops()[1]:attr("bias_after_scale"))
    -- fill_constant without dtype fills float32 (reading it as 0 gave bool)
    local q = oar.Program.parse(program(block(0, NEG1, { var("o", { 2 }) }, {
      op("fill_constant", {}, { Out = { "o" } }, { attr_ints("shape", { 2 }), attr_float("value", 2.5) }) })))
    local r = run(q, {}, { "o" })[1]
    assert.are.equal("float32", r:dtype())
    assert.are.same({ 2.5, 2.5 }, r:totable())
  end)

  it("refuse a conditional_block or while that runs its own block or a cycle, however it is made", function()
    -- its own block, through append_op
    refused_in_child([[
      local prog = oar.Program()
      local b = prog:global_block()
      b:create_var{ name = "c", shape = { 1 }, dtype = "bool" }
      local sub = prog:create_block()
      sub:append_op{ type = "conditional_block", inputs = { Cond = { "c" } }, outputs = { Out = {}, Scope = {} },
                     attrs = { sub_block = sub } }
    ]], "conditional_block", "names block 1", "the op's own")
    -- a cycle closed through Operator:set_attr, then run
    refused_in_child([[
      local prog = oar.Program()
      local b = prog:global_block()
      b:create_var{ name = "c", shape = { 1 }, dtype = "bool" }
      local b1 = prog:create_block()
      local b2 = prog:create_block()
      prog:rollback() prog:rollback()
      b1:append_op{ type = "conditional_block", inputs = { Cond = { "c" } }, outputs = { Out = {}, Scope = {} },
                    attrs = { sub_block = b2 } }
      local op = b2:append_op{ type = "conditional_block", inputs = { Cond = { "c" } },
                               outputs = { Out = {}, Scope = {} }, attrs = { sub_block = prog:block(1) } }
    ]], "names block 1, which runs block 2 again", "cycle")
    -- parsed: a while whose sub_block is its own block
    local ok, err = pcall(oar.Program.parse, program(
      block(0, NEG1, { var("c", { 1 }, 0) }, {}),
      block(1, 0, {}, { op("while", { X = {}, Condition = { "c" } }, { Out = {}, StepScopes = {} },
                           { attr_block("sub_block", 1) }) })))
    assert.is_false(ok)
    assert.truthy(tostring(err):find("the op's own", 1, true), err)
  end)
end)

-- ---- 2. in-place outputs -----------------------------------------------------------
describe("in-place ops", function()
  it("refuse to grow an input they write in place (elementwise_add with broadcasting)", function()
    refused_in_child([[
      local prog = oar.Program()
      local b = prog:global_block()
      b:create_var{ name = "x", shape = { -1, 3 } }
      b:create_var{ name = "y", shape = { -1, 3 } }
      b:append_op{ type = "elementwise_add", inputs = { X = { "x" }, Y = { "y" } }, outputs = { Out = { "x" } } }
      local y = oar.Tensor{ shape = { 4096, 3 }, dtype = "float32" }
      oar.Executor():run(prog, { feed = { x = oar.Tensor({ { 1, 2, 3 } }), y = y }, fetch_list = { "x" },
                                 scope = oar.Scope() })
    ]], "elementwise_add", "written in place", "[1, 3]", "[4096, 3]")
  end)

  it("refuse to retype an input they write in place (cast)", function()
    refused_in_child([[
      local prog = oar.Program()
      local b = prog:global_block()
      b:create_var{ name = "x", shape = { 3 }, dtype = "float32", persistable = true }
      b:append_op{ type = "cast", inputs = { X = { "x" } }, outputs = { Out = { "x" } },
                   attrs = { in_dtype = "float32", out_dtype = "float64" } }
      -- a float32 value in the scope (the desc now says float64: no feed check stands in the way)
      local s = oar.Scope()
      s:var("x"):set_tensor(oar.Tensor({ 1, 2, 3 }))
      oar.Executor():run(prog, { fetch_list = { "x" }, scope = s })
    ]], "cast", "written in place")
  end)

  it("still run in place when nothing grows (x = x + y)", function()
    local prog = oar.Program()
    local b = prog:global_block()
    b:create_var{ name = "x", shape = { 2 } }
    b:create_var{ name = "y", shape = { 2 } }
    b:append_op{ type = "elementwise_add", inputs = { X = { "x" }, Y = { "y" } }, outputs = { Out = { "x" } } }
    local r = run(prog, { x = oar.Tensor({ 1, 2 }), y = oar.Tensor({ 10, 20 }) }, { "x" })
    assert.are.same({ 11, 22 }, r[1]:totable())
  end)
end)

-- ---- 3. handles that outlive what they point to ---------------------------------------
describe("stale handles", function()
  it("a scope variable after Scope:erase is refused", function()
    refused_in_child([[
      local s = oar.Scope()
      local v = s:var("a")
      v:set_tensor(oar.Tensor({ 1, 2 }))
      s:erase("a")
      for i = 1, 100 do s:var("filler" .. i) end
      v:set_tensor(oar.Tensor({ 3 }))
    ]], "set_tensor: scope variable 'a' was erased")
  end)

  it("an Operator after Block:_remove_op is refused", function()
    refused_in_child([[
      local prog = oar.Program()
      local op
      oar.program_guard(prog, oar.Program(), function()
        local x = layers.data{ name = "x", shape = { 3 } }
        layers.relu(x)
        op = prog:global_block():ops()[1]
      end)
      prog:global_block():_remove_op(0)
      op:set_attr("use_cudnn", true)
    ]], "Operator:set_attr: the op was removed from its block")
  end)
end)

-- ---- 4. bounded work ---------------------------------------------------------------------
-- while (i < n) i++, with n 2^53 (or the fed x): as good as forever
local function forever_program(fed)
  local prog = oar.Program()
  local i
  oar.program_guard(prog, oar.Program(), function()
    i = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 0 }
    local n = fed and layers.cast{ x = layers.data{ name = "x", shape = { 1 }, append_batch_size = false },
                                   dtype = "int64" }
      or layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 2 ^ 53 }
    local cond = layers.less_than{ x = i, y = n }
    local loop = layers.While(cond)
    loop:block(function()
      layers.increment{ x = i, value = 1, in_place = true }
      layers.less_than{ x = i, y = n, cond = cond }
    end)
  end)
  return prog, i
end

describe("bounded work", function()
  it("a while loop stops at the max_while_iterations flag with an error naming the op", function()
    local prog, i = forever_program()
    oar.set_flags{ max_while_iterations = 1000 }
    local ok, err = pcall(run, prog, {}, { i })
    oar.set_flags{ max_while_iterations = 0 }
    assert.is_false(ok)
    err = tostring(err)
    assert.truthy(err:find("op 'while'", 1, true), err)
    assert.truthy(err:find("after 1000 iterations", 1, true), err)
  end)

  it("a loaded inference model is bounded by default (inference_max_while_iterations)", function()
    local prog, i = forever_program(true)
    local dir = TMP .. "/forever"
    oar.io.save_inference_model(dir, { "x" }, { i }, oar.Executor(), prog)
    oar.set_flags{ inference_max_while_iterations = 500 }
    local exe = oar.Executor()
    local p, feeds, fetches = oar.io.load_inference_model(dir, exe)
    oar.set_flags{ inference_max_while_iterations = 1000000 }
    local ok, err = pcall(exe.run, exe, p, { feed = { x = oar.Tensor({ 1e9 }) }, fetch_list = fetches,
                                            scope = oar.Scope() })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("after 500 iterations", 1, true), err)
    -- the C predictor too
    local pp = ffi.new("oar_predictor_t *[1]")
    oar.set_flags{ inference_max_while_iterations = 300 }
    assert.are.equal(0, C.oar_predictor_load(dir, pp), lib.last_error())
    oar.set_flags{ inference_max_while_iterations = 1000000 }
    local pred = ffi.gc(pp[0], C.oar_predictor_free)
    assert.are.equal(0, C.oar_predictor_set_input(pred, "x", ffi.new("float[1]", 1e9), ffi.new("int64_t[1]", 1), 1))
    assert.are_not.equal(0, C.oar_predictor_run(pred))
    assert.truthy(lib.last_error():find("after 300 iterations", 1, true), lib.last_error())
  end)

  it("Ctrl-C (SIGINT) cancels a run in progress with a clean error, and the next run works", function()
    local rc, out = child([[
      oar.executor.sigint_cancels_runs(true)
      local prog = oar.Program()
      local i
      oar.program_guard(prog, oar.Program(), function()
        i = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 0 }
        local n = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 2 ^ 53 }
        local cond = layers.less_than{ x = i, y = n }
        local loop = layers.While(cond)
        loop:block(function()
          layers.increment{ x = i, value = 1, in_place = true }
          layers.less_than{ x = i, y = n, cond = cond }
        end)
      end)
      local exe = oar.Executor()
      io.write("RUNNING\n") io.flush()
      os.execute("(sleep 0.5; kill -INT " .. (io.open("/proc/self/stat"):read("*l"):match("^(%d+)")) .. ") &")
      local ok, err = pcall(exe.run, exe, prog, { fetch_list = { i }, scope = oar.Scope() })
      io.write("FIRST: ", tostring(ok), " ", tostring(err), "\n")
      exe:cancel()   -- a request between runs does not stop the next one
      local p2 = oar.Program()
      local y
      oar.program_guard(p2, oar.Program(), function()
        y = layers.fill_constant{ shape = { 1 }, dtype = "float32", value = 7 }
      end)
      io.write("SECOND: ", tostring(exe:run(p2, { fetch_list = { y }, scope = oar.Scope() })[1]:totable()[1]), "\n")
    ]], 20)
    assert.are.equal(0, rc, out)
    assert.truthy(out:find("FIRST: false", 1, true), out)
    assert.truthy(out:find("interrupted (SIGINT)", 1, true), out)
    assert.truthy(out:find("SECOND: 7", 1, true), out)
  end)

  it("a FIFO named __model__ or a parameter file is refused at once, never read", function()
    local dir = TMP .. "/fifo_model"
    os.execute("mkdir -p " .. sh_quote(dir) .. " && mkfifo " .. sh_quote(dir .. "/__model__"))
    refused_in_child(string.format([[oar.io.load_inference_model(%q, oar.Executor())]], dir),
      "__model__' is not a regular file")
    refused_in_child(string.format([[
      local pp = ffi.new("oar_predictor_t *[1]")
      assert(C.oar_predictor_load(%q, pp) ~= 0)
      error(require("oar.lib").last_error())
    ]], dir), "__model__' is not a regular file")
    -- a parameter file, and a combined one
    local pdir = TMP .. "/fifo_param"
    refused_in_child(string.format([[
      local prog = oar.Program()
      prog:global_block():create_parameter{ name = "w", shape = { 4 } }
      os.execute("mkdir -p %s && mkfifo %s/w %s/all")
      local ok, err = pcall(oar.io.load_params, oar.Executor(), %q, prog)
      assert(not ok and tostring(err):find("/w' is not a regular file", 1, true), err)
      oar.io.load_params(oar.Executor(), %q, prog, "all")
    ]], pdir, pdir, pdir, pdir, pdir), "all' is not a regular file")
  end)

  it("a parameter file is bounded by its declared shape, not by its size", function()
    local dir = TMP .. "/sparse"
    os.execute("mkdir -p " .. sh_quote(dir) .. " && truncate -s 3G " .. sh_quote(dir .. "/w"))
    local prog = oar.Program()
    prog:global_block():create_parameter{ name = "w", shape = { 4 } }
    local t0 = os.clock()
    local ok, err = pcall(oar.io.load_params, oar.Executor(), dir, prog)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("w' is 3221225472 bytes, more than the", 1, true), err)
    assert.is_true(os.clock() - t0 < 2)
    -- a huge __model__ gets an error naming the file (not "string length overflow")
    os.execute("truncate -s 3G " .. sh_quote(dir .. "/__model__"))
    ok, err = pcall(oar.io.load_inference_model, dir, oar.Executor())
    assert.is_false(ok)
    assert.truthy(tostring(err):find("sparse/__model__' is 3221225472 bytes", 1, true), err)
    os.execute("rm -rf " .. sh_quote(dir))
  end)
end)

-- ---- 6. other findings --------------------------------------------------------------------------
describe("other findings", function()
  it("a fetch never shares its buffer with the caller's feed", function()
    local prog = oar.Program()
    prog:global_block():create_var{ name = "x", shape = { 3 } }
    local t = oar.Tensor({ 1, 2, 3 })
    local r = run(prog, { x = t }, { "x" })[1]
    r:set(99, 1)
    assert.are.same({ 1, 2, 3 }, t:totable())
  end)

  it("int64 fill of a value at or past 2^63 saturates", function()
    local prog = oar.Program()
    local o
    oar.program_guard(prog, oar.Program(), function()
      o = layers.fill_constant{ shape = { 1 }, dtype = "int64", value = 1e19 }
    end)
    local r = run(prog, {}, { o })[1]
    assert.are.equal(9223372036854775807LL, ffi.cast("int64_t *", r:data())[0])
  end)

  it("broadcasting over zero-element tensors with huge dims computes nothing", function()
    local prog = oar.Program()
    local b = prog:global_block()
    b:create_var{ name = "x", shape = { -1, -1, -1 } }
    b:create_var{ name = "y", shape = { -1 } }
    b:append_op{ type = "elementwise_add", inputs = { X = { "x" }, Y = { "y" } }, outputs = { Out = { "o" } } }
    local huge = 2 ^ 40
    local r = run(prog, { x = oar.Tensor{ shape = { 0, huge, huge }, dtype = "float32" },
                          y = oar.Tensor{ shape = { 1 }, dtype = "float32" } }, { "o" })[1]
    assert.are.same({ 0, huge, huge }, r:shape())
  end)

  it("bool tensors hold only 0 and 1, whatever bytes came in", function()
    local raw = ffi.new("uint8_t[3]", { 0, 2, 255 })
    local t = oar.tensor.from_buffer(raw, { 3 }, "bool")
    local p = ffi.cast("uint8_t *", t:data())
    assert.are.same({ 0, 1, 1 }, { p[0], p[1], p[2] })
    -- a fed tensor whose bytes were written through data()
    local prog = oar.Program()
    local x = prog:global_block():create_var{ name = "x", shape = { 3 }, dtype = "bool" }
    prog:global_block():append_op{ type = "logical_not", inputs = { X = { "x" } }, outputs = { Out = { "o" } } }
    local f = oar.Tensor{ shape = { 3 }, dtype = "bool" }
    local fp = ffi.cast("uint8_t *", f:data())
    fp[0], fp[1], fp[2] = 0, 2, 128
    local r = run(prog, { x = f }, { "o" })[1]
    local rp = ffi.cast("uint8_t *", r:data())
    assert.are.same({ 1, 0, 0 }, { rp[0], rp[1], rp[2] })
  end)

  it("a LoD on a rank-0 tensor is refused, from Lua and from a parameter file", function()
    local t = oar.Tensor{ shape = {}, dtype = "float32" }
    local ok, err = pcall(t.set_lod, t, { { 0, 2, 5 } })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("scalar (rank 0)", 1, true), err)
    -- a record: version 0, one LoD level of 3 offsets, tensor version 0, TensorDesc{FP32, no dims}, 4 bytes
    local u32 = function(v) return ffi.string(ffi.new("uint32_t[1]", v), 4) end
    local u64 = function(v) return ffi.string(ffi.new("uint64_t[1]", v), 8) end
    local desc = vint(1, 5)
    local rec = u32(0) .. u64(1) .. u64(24) .. u64(0) .. u64(2) .. u64(5) .. u32(0) .. u32(#desc) .. desc .. u32(0)
    local out, used = ffi.new("oar_tensor_t *[1]"), ffi.new("size_t[1]")
    assert.are_not.equal(0, C.oar_tensor_deserialize(rec, #rec, used, out))
    assert.truthy(lib.last_error():find("scalar (rank 0)", 1, true), lib.last_error())
  end)

  it("names of 244 to 255 bytes save and load", function()
    for _, len in ipairs({ 244, 250, 255 }) do
      local name = string.rep("n", len)
      local prog = oar.Program()
      prog:global_block():create_parameter{ name = name, shape = { 2 } }
      local s = oar.Scope()
      s:var(name):set_tensor(oar.Tensor({ 4, 5 }))
      local dir = TMP .. "/long" .. len
      oar.io.save_params(oar.Executor(), dir, prog, { scope = s })
      local s2 = oar.Scope()
      oar.io.load_params(oar.Executor(), dir, prog, { scope = s2 })
      assert.are.same({ 4, 5 }, s2:find_var(name):get_tensor():totable())
    end
  end)

  it("load_persistables reports the real problem of a bad combined file, not @RNG_STATE@", function()
    local prog = oar.Program()
    local b = prog:global_block()
    b:create_parameter{ name = "a", shape = { 2 } }
    b:create_parameter{ name = "b", shape = { 2 } }
    local s = oar.Scope()
    s:var("a"):set_tensor(oar.Tensor({ 1, 2 }))
    s:var("b"):set_tensor(oar.Tensor({ 3, 4 }))
    local dir = TMP .. "/combined"
    oar.io.save_params(oar.Executor(), dir, prog, "all", { scope = s })
    -- corrupt one byte of b's data (the second record): its checksum no longer matches
    local f = assert(io.open(dir .. "/all", "r+b"))
    local size = f:seek("end")
    f:seek("set", size - 14)
    f:write("\255")
    f:close()
    local ok, err = pcall(oar.io.load_persistables, oar.Executor(), dir, prog, "all", { scope = oar.Scope() })
    assert.is_false(ok)
    err = tostring(err)
    assert.truthy(err:find("checksum mismatch", 1, true), err)
    assert.is_nil(err:find("@RNG_STATE@", 1, true), err)
  end)
end)

teardown = teardown or function() end
describe("cleanup", function()
  it("removes the scratch directory", function()
    os.execute("rm -rf " .. sh_quote(TMP))
  end)
end)
