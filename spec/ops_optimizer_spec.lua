-- sgd, momentum, adam, adagrad, rmsprop, adamax, adadelta, decayed_adagrad:
-- two steps against the formulas written out in plain Lua, the in-place form
-- (ParamOut named like Param), sparse (SELECTED_ROWS) gradients, errors.
local ffi = require("ffi")
local T = require("spec.helpers.op_test")
local lib = require("oar.lib")
local C = lib.C

local expect_error = require("spec.helpers.expect_error")

-- float attrs are float32 in the op desc: the kernels see these values
local function f32(x) return tonumber(ffi.new("float", x)) end

local SHAPE = { 2, 3 }
local P0 = { 0.5, -1.25, 2, 0.75, -0.3, 1.1 }
local G1 = { 0.2, -0.4, 1.5, -0.05, 0.9, -1.2 }
local G2 = { -0.6, 0.3, 0.25, 0.8, -0.1, 0.45 }
local POS = { 0.1, 0.5, 0.02, 1.2, 0.3, 0.8 }   -- initial second moments etc.
local SMALL = { 0.05, -0.1, 0.2, 0, -0.3, 0.15 } -- initial first moments etc.

local unpack_ = table.unpack or unpack
local function zip(f, ...)
  local lists, r = { ... }, {}
  for i = 1, #lists[1] do
    local args = {}
    for j, l in ipairs(lists) do args[j] = l[i] end
    r[i] = f(unpack_(args))
  end
  return r
end

-- one op run: ins maps slot -> flat data (scalars as numbers); returns slot -> data
local function step(optype, ins, attrs, outs, dt)
  local inputs = {}
  for slot, v in pairs(ins) do
    if type(v) == "number" then inputs[slot] = T.tensor({ v }, { shape = { 1 }, dtype = dt })
    else inputs[slot] = T.tensor(v, { shape = SHAPE, dtype = dt }) end
  end
  local o = {}
  for _, s in ipairs(outs) do o[s] = 1 end
  local res = T.run{ type = optype, inputs = inputs, attrs = attrs, outputs = o }
  local r = {}
  for _, s in ipairs(outs) do
    assert.are.equal(dt, res[s][1].dtype)
    r[s] = #res[s][1].data == 1 and #res[s][1].shape == 1 and res[s][1].shape[1] == 1
      and res[s][1].data[1] or res[s][1].data
    if type(r[s]) == "table" then assert.are.same(SHAPE, res[s][1].shape) end
  end
  return r
end

local function close(got, want, tol, label)
  if type(want) == "number" then got, want = { got }, { want } end
  assert.are.equal(#want, #got, label)
  for i = 1, #want do
    assert.is_true(math.abs(got[i] - want[i]) <= tol * (1 + math.abs(want[i])),
      ("%s[%d]: got %.10g, expected %.10g"):format(label, i, got[i], want[i]))
  end
end

-- Each optimizer: its state slots (in -> out), scalar inputs, attrs, and the
-- reference update ref(state, g, scalars) -> new state (same keys).
local OPTS = {
  sgd = {
    states = { Param = "ParamOut" },
    init = function() return { Param = P0 } end,
    scalars = { LearningRate = 0.1 },
    attrs = {},
    ref = function(s, g, sc)
      return { Param = zip(function(p, gi) return p - sc.LearningRate * gi end, s.Param, g) }
    end,
  },
  momentum = {
    states = { Param = "ParamOut", Velocity = "VelocityOut" },
    init = function() return { Param = P0, Velocity = SMALL } end,
    scalars = { LearningRate = 0.1 },
    attrs = { mu = 0.9 },
    ref = function(s, g, sc)
      local mu = f32(0.9)
      local v = zip(function(vi, gi) return mu * vi + gi end, s.Velocity, g)
      return { Velocity = v, Param = zip(function(p, vi) return p - sc.LearningRate * vi end, s.Param, v) }
    end,
  },
  momentum_nesterov = {
    op = "momentum",
    states = { Param = "ParamOut", Velocity = "VelocityOut" },
    init = function() return { Param = P0, Velocity = SMALL } end,
    scalars = { LearningRate = 0.1 },
    attrs = { mu = 0.8, use_nesterov = true },
    ref = function(s, g, sc)
      local mu = f32(0.8)
      local v = zip(function(vi, gi) return mu * vi + gi end, s.Velocity, g)
      return { Velocity = v,
        Param = zip(function(p, gi, vi) return p - (gi + mu * vi) * sc.LearningRate end, s.Param, g, v) }
    end,
  },
  adam = {
    states = { Param = "ParamOut", Moment1 = "Moment1Out", Moment2 = "Moment2Out",
               Beta1Pow = "Beta1PowOut", Beta2Pow = "Beta2PowOut" },
    init = function() return { Param = P0, Moment1 = SMALL, Moment2 = POS, Beta1Pow = f32(0.9), Beta2Pow = f32(0.999) } end,
    scalars = { LearningRate = 0.01 },
    attrs = { beta1 = 0.9, beta2 = 0.999, epsilon = 1e-4 },
    ref = function(s, g, sc)
      local b1, b2, eps = f32(0.9), f32(0.999), f32(1e-4)
      local lr_t = sc.LearningRate * math.sqrt(1 - s.Beta2Pow) / (1 - s.Beta1Pow)
      local m1 = zip(function(m, gi) return b1 * m + (1 - b1) * gi end, s.Moment1, g)
      local m2 = zip(function(m, gi) return b2 * m + (1 - b2) * gi * gi end, s.Moment2, g)
      local p = zip(function(pi, a, b) return pi - lr_t * a / (math.sqrt(b) + eps * math.sqrt(1 - s.Beta2Pow)) end,
        s.Param, m1, m2)
      return { Param = p, Moment1 = m1, Moment2 = m2, Beta1Pow = s.Beta1Pow * b1, Beta2Pow = s.Beta2Pow * b2 }
    end,
  },
  adagrad = {
    states = { Param = "ParamOut", Moment = "MomentOut" },
    init = function() return { Param = P0, Moment = POS } end,
    scalars = { LearningRate = 0.1 },
    attrs = { epsilon = 1e-6 },
    ref = function(s, g, sc)
      local eps = f32(1e-6)
      local m = zip(function(mi, gi) return mi + gi * gi end, s.Moment, g)
      return { Moment = m,
        Param = zip(function(p, gi, mi) return p - sc.LearningRate * gi / (math.sqrt(mi) + eps) end, s.Param, g, m) }
    end,
  },
  decayed_adagrad = {
    states = { Param = "ParamOut", Moment = "MomentOut" },
    init = function() return { Param = P0, Moment = POS } end,
    scalars = { LearningRate = 0.1 },
    attrs = { decay = 0.95, epsilon = 1e-6 },
    ref = function(s, g, sc)
      local d, eps = f32(0.95), f32(1e-6)
      local m = zip(function(mi, gi) return d * mi + (1 - d) * gi * gi end, s.Moment, g)
      return { Moment = m,
        Param = zip(function(p, gi, mi) return p - sc.LearningRate * gi / (math.sqrt(mi) + eps) end, s.Param, g, m) }
    end,
  },
  rmsprop = {
    states = { Param = "ParamOut", MeanSquare = "MeanSquareOut", Moment = "MomentOut" },
    init = function() return { Param = P0, MeanSquare = POS, Moment = SMALL } end,
    scalars = { LearningRate = 0.01 },
    attrs = { decay = 0.9, momentum = 0.5, epsilon = 1e-6 },
    ref = function(s, g, sc)
      local rho, mom, eps = f32(0.9), f32(0.5), f32(1e-6)
      local ms = zip(function(m, gi) return rho * m + (1 - rho) * gi * gi end, s.MeanSquare, g)
      local mo = zip(function(m, gi, msi) return mom * m + sc.LearningRate * gi / math.sqrt(msi + eps) end,
        s.Moment, g, ms)
      return { MeanSquare = ms, Moment = mo, Param = zip(function(p, m) return p - m end, s.Param, mo) }
    end,
  },
  rmsprop_centered = {
    op = "rmsprop",
    states = { Param = "ParamOut", MeanSquare = "MeanSquareOut", Moment = "MomentOut", MeanGrad = "MeanGradOut" },
    init = function() return { Param = P0, MeanSquare = POS, Moment = SMALL, MeanGrad = SMALL } end,
    scalars = { LearningRate = 0.01 },
    attrs = { decay = 0.9, momentum = 0.5, epsilon = 1e-6, centered = true },
    ref = function(s, g, sc)
      local rho, mom, eps = f32(0.9), f32(0.5), f32(1e-6)
      local ms = zip(function(m, gi) return rho * m + (1 - rho) * gi * gi end, s.MeanSquare, g)
      local mg = zip(function(m, gi) return rho * m + (1 - rho) * gi end, s.MeanGrad, g)
      local mo = zip(function(m, gi, msi, mgi) return mom * m + sc.LearningRate * gi / math.sqrt(msi - mgi * mgi + eps) end,
        s.Moment, g, ms, mg)
      return { MeanSquare = ms, MeanGrad = mg, Moment = mo, Param = zip(function(p, m) return p - m end, s.Param, mo) }
    end,
  },
  adamax = {
    states = { Param = "ParamOut", Moment = "MomentOut", InfNorm = "InfNormOut" },
    init = function() return { Param = P0, Moment = SMALL, InfNorm = POS } end,
    scalars = { LearningRate = 0.02, Beta1Pow = 0.81 },
    attrs = { beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8 },
    ref = function(s, g, sc)
      local b1, b2, eps = f32(0.9), f32(0.999), f32(1e-8)
      local m = zip(function(mi, gi) return b1 * mi + (1 - b1) * gi end, s.Moment, g)
      local u = zip(function(ui, gi) return math.max(b2 * ui + eps, math.abs(gi)) end, s.InfNorm, g)
      local lr_t = sc.LearningRate / (1 - sc.Beta1Pow)
      return { Moment = m, InfNorm = u, Param = zip(function(p, mi, ui) return p - lr_t * mi / ui end, s.Param, m, u) }
    end,
  },
  adadelta = {
    states = { Param = "ParamOut", AvgSquaredGrad = "AvgSquaredGradOut", AvgSquaredUpdate = "AvgSquaredUpdateOut" },
    init = function() return { Param = P0, AvgSquaredGrad = POS, AvgSquaredUpdate = POS } end,
    scalars = {},
    attrs = { rho = 0.95, epsilon = 1e-6 },
    ref = function(s, g, sc)
      local rho, eps = f32(0.95), f32(1e-6)
      local eg = zip(function(a, gi) return rho * a + (1 - rho) * gi * gi end, s.AvgSquaredGrad, g)
      local dx = zip(function(u, e, gi) return -math.sqrt((u + eps) / (e + eps)) * gi end, s.AvgSquaredUpdate, eg, g)
      local eu = zip(function(u, d) return rho * u + (1 - rho) * d * d end, s.AvgSquaredUpdate, dx)
      return { AvgSquaredGrad = eg, AvgSquaredUpdate = eu, Param = zip(function(p, d) return p + d end, s.Param, dx) }
    end,
  },
}
local ORDER = { "sgd", "momentum", "momentum_nesterov", "adam", "adagrad", "decayed_adagrad", "rmsprop",
                "rmsprop_centered", "adamax", "adadelta" }

local function op_of(name) return OPTS[name].op or name end

local function run_dense(name, state, g, dt)
  local o = OPTS[name]
  local ins, outs = { Grad = g }, {}
  for slot, v in pairs(state) do ins[slot] = v end
  for slot, v in pairs(o.scalars) do ins[slot] = v end
  for _, out in pairs(o.states) do outs[#outs + 1] = out end
  local r = step(op_of(name), ins, o.attrs, outs, dt)
  local new = {}
  for slot, out in pairs(o.states) do new[slot] = r[out] end
  return new
end

for _, name in ipairs(ORDER) do
  local o = OPTS[name]
  describe(name, function()
    for _, dt in ipairs({ "float64", "float32" }) do
      it("matches the formulas over two steps (" .. dt .. ")", function()
        local tol = dt == "float64" and 1e-12 or 2e-6
        local s = o.init()
        local want1 = o.ref(s, G1, o.scalars)
        local got1 = run_dense(name, s, G1, dt)
        for slot in pairs(o.states) do close(got1[slot], want1[slot], tol, name .. " step 1 " .. slot) end
        -- the second step starts from the kernel's own first-step results
        local want2 = o.ref(got1, G2, o.scalars)
        local got2 = run_dense(name, got1, G2, dt)
        for slot in pairs(o.states) do close(got2[slot], want2[slot], tol, name .. " step 2 " .. slot) end
        -- and it really moved
        assert.are_not.same(s.Param, got2.Param)
      end)
    end

    it("updates in place when the outputs are the inputs", function()
      local pp = ffi.new("oar_program_t*[1]")
      lib.check(C.oar_program_new(pp))
      local prog = ffi.gc(pp[0], C.oar_program_free)
      local block = C.oar_program_block(prog, 0)
      local s = o.init()
      local feeds, ins, outs = {}, { Grad = { "g" } }, {}
      local function declare(name_, v)
        local vp = ffi.new("oar_var_desc_t*[1]")
        lib.check(C.oar_block_var_new(block, name_, vp))
        local shape = type(v) == "number" and { 1 } or SHAPE
        lib.check(C.oar_var_desc_set_shape(vp[0], ffi.new("int64_t[?]", #shape, shape), #shape))
        lib.check(C.oar_var_desc_set_dtype(vp[0], 6))
        feeds[name_] = T.tensor(type(v) == "number" and { v } or v, { shape = shape })
      end
      declare("g", G1)
      for slot, out in pairs(o.states) do
        declare(slot, s[slot])
        ins[slot] = { slot }
        outs[out] = { slot }
      end
      for slot, v in pairs(o.scalars) do
        declare(slot, v)
        ins[slot] = { slot }
      end
      T.append_op(block, op_of(name), ins, outs, o.attrs)
      local fetch = {}
      for slot in pairs(o.states) do fetch[#fetch + 1] = slot end
      -- keep the fed C tensors: the kernel must not write through their shared buffers
      local names, ct = {}, {}
      for n, v in pairs(feeds) do names[#names + 1] = n; ct[#names] = T.to_c(v) end
      local ft = ffi.new("oar_tensor_t*[?]", #names)
      for i, t in ipairs(ct) do ft[i - 1] = t end
      local sp = ffi.new("oar_scope_t*[1]")
      lib.check(C.oar_scope_new(sp))
      local scope = ffi.gc(sp[0], C.oar_scope_free)
      local ep = ffi.new("oar_executor_t*[1]")
      lib.check(C.oar_executor_new(0, 0, ep))
      local exe = ffi.gc(ep[0], C.oar_executor_free)
      local out = ffi.new("oar_tensor_t*[?]", #fetch)
      lib.check(C.oar_executor_run(exe, prog, 0, scope, #names, lib.cstrings(names), ft, #fetch,
        lib.cstrings(fetch), out))
      local want = o.ref(s, G1, o.scalars)
      for i, slot in ipairs(fetch) do
        local d = T.from_c(ffi.gc(out[i - 1], C.oar_tensor_free)).data
        close(#d == 1 and type(want[slot]) == "number" and d[1] or d, want[slot], 1e-12, name .. " in place " .. slot)
      end
      for i, n in ipairs(names) do
        assert.are.same(feeds[n].data, T.from_c(ct[i]).data, "fed tensor " .. n .. " was written")
      end
    end)
  end)
end

describe("adam beta powers", function()
  it("are left alone without Beta1PowOut/Beta2PowOut", function()
    local o = OPTS.adam
    local ins = { Grad = G1, LearningRate = 0.01 }
    for slot, v in pairs(o.init()) do ins[slot] = v end
    local r = step("adam", ins, o.attrs, { "ParamOut", "Moment1Out", "Moment2Out" }, "float64")
    close(r.ParamOut, o.ref(o.init(), G1, o.scalars).Param, 1e-12, "adam ParamOut")
  end)

  it("take beta1/beta2 from Beta1Tensor/Beta2Tensor when given", function()
    local s = { Param = P0, Moment1 = SMALL, Moment2 = POS, Beta1Pow = 0.5, Beta2Pow = 0.25 }
    local ins = { Grad = G1, LearningRate = 0.01, Beta1Tensor = 0.5, Beta2Tensor = 0.75 }
    for k, v in pairs(s) do ins[k] = v end
    local r = step("adam", ins, { epsilon = 1e-4 },
      { "ParamOut", "Moment1Out", "Moment2Out", "Beta1PowOut", "Beta2PowOut" }, "float64")
    local b1, b2, eps = 0.5, 0.75, f32(1e-4)
    local lr_t = 0.01 * math.sqrt(1 - 0.25) / (1 - 0.5)
    local m1 = zip(function(m, g) return b1 * m + (1 - b1) * g end, SMALL, G1)
    local m2 = zip(function(m, g) return b2 * m + (1 - b2) * g * g end, POS, G1)
    close(r.Moment1Out, m1, 1e-12, "Moment1Out")
    close(r.Moment2Out, m2, 1e-12, "Moment2Out")
    close(r.ParamOut, zip(function(p, a, b) return p - lr_t * a / (math.sqrt(b) + eps * math.sqrt(0.75)) end, P0, m1, m2),
      1e-12, "ParamOut")
    close(r.Beta1PowOut, 0.25, 1e-15, "Beta1PowOut")
    close(r.Beta2PowOut, 0.1875, 1e-15, "Beta2PowOut")
  end)
end)

-- ---- sparse gradients --------------------------------------------------------
-- SELECTED_ROWS cannot be fed; the grad variable is built in a scope through
-- the op-authoring API's accessor (src/oar_op.h), declared persistable so the
-- executor takes it from that scope.
require("oar.lib").load_op_api()
pcall(ffi.cdef, "void *malloc(size_t n);")

local HEIGHT, WIDTH = 4, 3
local SP0 = { 0.5, -1, 2, 0.25, 1.5, -0.5, 3, 0.1, -2, 1, 1, -0.75 }
local SPOS = { 0.2, 0.4, 0.6, 0.8, 1, 1.2, 0.3, 0.5, 0.7, 0.9, 1.1, 1.3 }

-- rows {3, 0, 3} (unsorted, row 3 twice), values 3x3
local SROWS = { 3, 0, 3 }
local SVALS = { 0.1, 0.2, 0.3, -0.5, 0.4, 1.0, 0.6, -0.2, 0.05 }

local function densify(rows, vals)
  local d = {}
  for i = 1, HEIGHT * WIDTH do d[i] = 0 end
  for j, r in ipairs(rows) do
    for k = 1, WIDTH do d[r * WIDTH + k] = d[r * WIDTH + k] + vals[(j - 1) * WIDTH + k] end
  end
  return d
end

-- runs optype with the sparse grad; states: slot -> data, scalars: slot -> number
local function run_sparse(optype, states, outs_of, scalars, attrs, rows, vals, vshape)
  local pp = ffi.new("oar_program_t*[1]")
  lib.check(C.oar_program_new(pp))
  local prog = ffi.gc(pp[0], C.oar_program_free)
  local block = C.oar_program_block(prog, 0)
  local feeds, ins, outs = {}, { Grad = { "g" } }, {}
  local function declare(name, shape, persistable)
    local vp = ffi.new("oar_var_desc_t*[1]")
    lib.check(C.oar_block_var_new(block, name, vp))
    lib.check(C.oar_var_desc_set_shape(vp[0], ffi.new("int64_t[?]", #shape, shape), #shape))
    lib.check(C.oar_var_desc_set_dtype(vp[0], 6))
    if persistable then
      lib.check(C.oar_var_desc_set_type(vp[0], 8))   -- SELECTED_ROWS
      lib.check(C.oar_var_desc_set_persistable(vp[0], true))
    end
  end
  declare("g", { HEIGHT, WIDTH }, true)
  for slot, v in pairs(states) do
    declare(slot, { HEIGHT, WIDTH })
    feeds[slot] = T.tensor(v, { shape = { HEIGHT, WIDTH } })
    ins[slot] = { slot }
    outs[outs_of[slot]] = { outs_of[slot] }
  end
  for slot, v in pairs(scalars) do
    declare(slot, { 1 })
    feeds[slot] = T.tensor({ v }, { shape = { 1 } })
    ins[slot] = { slot }
  end
  T.append_op(block, optype, ins, outs, attrs)

  local sp = ffi.new("oar_scope_t*[1]")
  lib.check(C.oar_scope_new(sp))
  local scope = ffi.gc(sp[0], C.oar_scope_free)
  local vp = ffi.new("oar_variable_t*[1]")
  lib.check(C.oar_scope_var(scope, "g", vp))
  local sr = ffi.cast("oar_selected_rows_t *", C.oar_var_selected_rows(vp[0]))
  assert.is_true(sr ~= nil, lib.last_error())
  sr.height = HEIGHT
  sr.rows = ffi.cast("int64_t*", ffi.C.malloc(8 * #rows))
  for i, r in ipairs(rows) do sr.rows[i - 1] = r end
  sr.nrows, sr.cap = #rows, #rows
  local val = T.to_c(T.tensor(vals, { shape = vshape or { #rows, WIDTH } }))
  C.oar_tensor_free(sr.value)
  sr.value = C.oar_tensor_retain(val)

  local names, tensors = {}, {}
  for name, v in pairs(feeds) do
    names[#names + 1] = name
    tensors[#names] = T.to_c(v)
  end
  local ft = ffi.new("oar_tensor_t*[?]", #names)
  for i, t in ipairs(tensors) do ft[i - 1] = t end
  local fetch = {}
  for slot in pairs(states) do fetch[#fetch + 1] = outs_of[slot] end
  local out = ffi.new("oar_tensor_t*[?]", #fetch)
  local ep = ffi.new("oar_executor_t*[1]")
  lib.check(C.oar_executor_new(0, 0, ep))
  local exe = ffi.gc(ep[0], C.oar_executor_free)
  local rc = C.oar_executor_run(exe, prog, 0, scope, #names, lib.cstrings(names), ft, #fetch,
    lib.cstrings(fetch), out)
  if rc ~= 0 then error(lib.last_error(), 2) end
  local res = {}
  for i, name in ipairs(fetch) do res[name] = T.from_c(ffi.gc(out[i - 1], C.oar_tensor_free)).data end
  return res
end

-- the same op with the densified gradient through the dense path
local function run_dense_full(optype, states, outs_of, scalars, attrs, g)
  local inputs = { Grad = T.tensor(g, { shape = { HEIGHT, WIDTH } }) }
  for slot, v in pairs(states) do inputs[slot] = T.tensor(v, { shape = { HEIGHT, WIDTH } }) end
  for slot, v in pairs(scalars) do inputs[slot] = T.tensor({ v }, { shape = { 1 } }) end
  local o = {}
  for _, out in pairs(outs_of) do o[out] = 1 end
  local r = T.run{ type = optype, inputs = inputs, attrs = attrs, outputs = o }
  local res = {}
  for _, out in pairs(outs_of) do res[out] = r[out][1].data end
  return res
end

describe("sparse gradients", function()
  local dense_g = densify(SROWS, SVALS)

  it("sgd updates the named rows, summing duplicates", function()
    local r = run_sparse("sgd", { Param = SP0 }, { Param = "ParamOut" }, { LearningRate = 0.5 }, {}, SROWS, SVALS)
    local want = zip(function(p, g) return p - 0.5 * g end, SP0, dense_g)
    close(r.ParamOut, want, 1e-12, "sgd sparse")
    -- rows 1 and 2 were not named: untouched
    for i = 4, 9 do assert.are.equal(SP0[i], r.ParamOut[i]) end
  end)

  local cases = {
    { "momentum", { Param = SP0, Velocity = SPOS }, { Param = "ParamOut", Velocity = "VelocityOut" },
      { LearningRate = 0.1 }, { mu = 0.9 } },
    { "adagrad", { Param = SP0, Moment = SPOS }, { Param = "ParamOut", Moment = "MomentOut" },
      { LearningRate = 0.1 }, {} },
    { "adam", { Param = SP0, Moment1 = SPOS, Moment2 = SPOS }, { Param = "ParamOut", Moment1 = "Moment1Out", Moment2 = "Moment2Out" },
      { LearningRate = 0.1, Beta1Pow = 0.9, Beta2Pow = 0.999 }, {} },
    { "rmsprop", { Param = SP0, MeanSquare = SPOS, Moment = SPOS }, { Param = "ParamOut", MeanSquare = "MeanSquareOut", Moment = "MomentOut" },
      { LearningRate = 0.1 }, { momentum = 0.3 } },
    { "adamax", { Param = SP0, Moment = SPOS, InfNorm = SPOS }, { Param = "ParamOut", Moment = "MomentOut", InfNorm = "InfNormOut" },
      { LearningRate = 0.1, Beta1Pow = 0.9 }, {} },
    { "adadelta", { Param = SP0, AvgSquaredGrad = SPOS, AvgSquaredUpdate = SPOS },
      { Param = "ParamOut", AvgSquaredGrad = "AvgSquaredGradOut", AvgSquaredUpdate = "AvgSquaredUpdateOut" }, {}, {} },
    { "decayed_adagrad", { Param = SP0, Moment = SPOS }, { Param = "ParamOut", Moment = "MomentOut" },
      { LearningRate = 0.1 }, {} },
  }
  for _, c in ipairs(cases) do
    it(c[1] .. " equals the update with the densified gradient", function()
      local got = run_sparse(c[1], c[2], c[3], c[4], c[5], SROWS, SVALS)
      local want = run_dense_full(c[1], c[2], c[3], c[4], c[5], dense_g)
      for _, out in pairs(c[3]) do close(got[out], want[out], 1e-12, c[1] .. " sparse " .. out) end
    end)
  end

  it("adam in lazy_mode leaves rows the gradient does not name", function()
    local st = { Param = SP0, Moment1 = SPOS, Moment2 = SPOS }
    local outs_of = { Param = "ParamOut", Moment1 = "Moment1Out", Moment2 = "Moment2Out" }
    local sc = { LearningRate = 0.1, Beta1Pow = 0.9, Beta2Pow = 0.999 }
    local got = run_sparse("adam", st, outs_of, sc, { lazy_mode = true }, SROWS, SVALS)
    local full = run_dense_full("adam", st, outs_of, sc, {}, dense_g)
    for _, out in pairs(outs_of) do
      local src = st[({ ParamOut = "Param", Moment1Out = "Moment1", Moment2Out = "Moment2" })[out]]
      for i = 1, HEIGHT * WIDTH do
        local row = math.floor((i - 1) / WIDTH)
        if row == 0 or row == 3 then
          close(got[out][i], full[out][i], 1e-12, "lazy adam " .. out)
        else
          assert.are.equal(src[i], got[out][i])
        end
      end
    end
  end)

  it("rejects a row beyond the parameter's height", function()
    expect_error(function()
      run_sparse("sgd", { Param = SP0 }, { Param = "ParamOut" }, { LearningRate = 0.5 }, {}, { 1, 4 },
        { 1, 1, 1, 1, 1, 1 })
    end, "sgd", "row 4", "4 rows")
  end)

  it("rejects values whose width is not the parameter's row width", function()
    expect_error(function()
      run_sparse("sgd", { Param = SP0 }, { Param = "ParamOut" }, { LearningRate = 0.5 }, {}, { 1, 2 },
        { 1, 1, 1, 1, 1, 1, 1, 1 }, { 2, 4 })
    end, "sgd", "Grad", "8 values", "6 values")
  end)
end)

describe("optimizer errors", function()
  it("name a Grad whose shape is not Param's", function()
    expect_error(function()
      T.run{ type = "sgd", inputs = { Param = T.tensor(P0, { shape = { 2, 3 } }), Grad = T.tensor(P0, { shape = { 3, 2 } }),
        LearningRate = T.tensor({ 0.1 }) } }
    end, "sgd", "Grad", "[3, 2]", "[2, 3]")
  end)

  it("require a one-element LearningRate", function()
    expect_error(function()
      T.run{ type = "adagrad", inputs = { Param = T.tensor(P0, { shape = SHAPE }), Grad = T.tensor(G1, { shape = SHAPE }),
        Moment = T.tensor(POS, { shape = SHAPE }), LearningRate = T.tensor({ 0.1, 0.2 }, { shape = { 2 } }) } }
    end, "adagrad", "LearningRate", "[2]", "one element")
  end)

  it("name a state whose dtype is not Param's", function()
    expect_error(function()
      T.run{ type = "momentum", attrs = { mu = 0.9 }, inputs = { Param = T.tensor(P0, { shape = SHAPE }),
        Grad = T.tensor(G1, { shape = SHAPE }), Velocity = T.tensor(POS, { shape = SHAPE, dtype = "float32" }),
        LearningRate = T.tensor({ 0.1 }) } }
    end, "momentum", "Velocity", "float32", "float64")
  end)

  it("require momentum's mu and centered rmsprop's MeanGrad", function()
    expect_error(function()
      T.run{ type = "momentum", inputs = { Param = T.tensor(P0, { shape = SHAPE }), Grad = T.tensor(G1, { shape = SHAPE }),
        Velocity = T.tensor(POS, { shape = SHAPE }), LearningRate = T.tensor({ 0.1 }) } }
    end, "momentum", "mu")
    expect_error(function()
      T.run{ type = "rmsprop", attrs = { centered = true }, inputs = { Param = T.tensor(P0, { shape = SHAPE }),
        Grad = T.tensor(G1, { shape = SHAPE }), MeanSquare = T.tensor(POS, { shape = SHAPE }),
        Moment = T.tensor(POS, { shape = SHAPE }), LearningRate = T.tensor({ 0.1 }) } }
    end, "rmsprop", "centered", "MeanGrad")
  end)

  it("reject out-of-range hyperparameters", function()
    expect_error(function()
      T.run{ type = "adam", attrs = { beta1 = 1.5 }, inputs = { Param = T.tensor(P0, { shape = SHAPE }),
        Grad = T.tensor(G1, { shape = SHAPE }), Moment1 = T.tensor(POS, { shape = SHAPE }),
        Moment2 = T.tensor(POS, { shape = SHAPE }), LearningRate = T.tensor({ 0.1 }),
        Beta1Pow = T.tensor({ 0.9 }), Beta2Pow = T.tensor({ 0.999 }) } }
    end, "adam", "beta1")
  end)

  it("have no gradients", function()
    for _, name in ipairs({ "sgd", "momentum", "adam", "adagrad", "rmsprop", "adamax", "adadelta", "decayed_adagrad" }) do
      assert.is_true(C.oar_op_is_registered(name), name)
      assert.is_false(C.oar_op_has_grad(name), name)
    end
  end)
end)

describe("sparse gradients from the backward pass", function()
  it("lookup_table(is_sparse) used twice: summed SELECTED_ROWS grads drive sgd", function()
    local pp = ffi.new("oar_program_t*[1]")
    lib.check(C.oar_program_new(pp))
    local prog = ffi.gc(pp[0], C.oar_program_free)
    local block = C.oar_program_block(prog, 0)
    local function declare(name, shape, dt)
      local vp = ffi.new("oar_var_desc_t*[1]")
      lib.check(C.oar_block_var_new(block, name, vp))
      lib.check(C.oar_var_desc_set_shape(vp[0], ffi.new("int64_t[?]", #shape, shape), #shape))
      lib.check(C.oar_var_desc_set_dtype(vp[0], dt))
    end
    declare("w", { 5, 2 }, 6)
    declare("ids1", { 3, 1 }, 3)
    declare("ids2", { 2, 1 }, 3)
    declare("lr", { 1 }, 6)
    T.append_op(block, "lookup_table", { W = { "w" }, Ids = { "ids1" } }, { Out = { "e1" } }, { is_sparse = true })
    T.append_op(block, "lookup_table", { W = { "w" }, Ids = { "ids2" } }, { Out = { "e2" } }, { is_sparse = true })
    T.append_op(block, "reduce_sum", { X = { "e1" } }, { Out = { "s1" } }, { reduce_all = true })
    T.append_op(block, "reduce_sum", { X = { "e2" } }, { Out = { "s2" } }, { reduce_all = true })
    T.append_op(block, "sum", { X = { "s1", "s2" } }, { Out = { "loss" } }, {})
    local grads = ffi.new("char**[1]")
    lib.check(C.oar_backward_gradients(prog, lib.cstrings({ "loss" }), 1, nil, lib.cstrings({ "w" }), 1,
      nil, 0, grads))
    local gname = ffi.string(grads[0][0])
    C.oar_strings_free(grads[0], 1)
    T.append_op(block, "sgd", { Param = { "w" }, Grad = { gname }, LearningRate = { "lr" } }, { ParamOut = { "w" } }, {})
    local w0 = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }
    local got = T.run_program(prog, {
      w = T.tensor(w0, { shape = { 5, 2 } }),
      ids1 = T.tensor({ 3, 0, 3 }, { shape = { 3, 1 }, dtype = "int64" }),
      ids2 = T.tensor({ 1, 3 }, { shape = { 2, 1 }, dtype = "int64" }),
      lr = T.tensor({ 0.5 }, { shape = { 1 } }),
    }, { "w" })[1]
    -- d loss / d w[r, :] = occurrences of r among the ids: row 0 once, 1 once, 3 three times
    local count = { [0] = 1, [1] = 1, [2] = 0, [3] = 3, [4] = 0 }
    local want = {}
    for r = 0, 4 do
      for c = 1, 2 do want[r * 2 + c] = w0[r * 2 + c] - 0.5 * count[r] end
    end
    assert.are.same(want, got.data)
  end)
end)
