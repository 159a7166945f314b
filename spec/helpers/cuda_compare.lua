-- Helpers of the CUDA specs (spec/cuda*_spec.lua): random inputs, one-op
-- programs built from a table, and runs compared between the CPU and the
-- CUDA place (see spec/cuda_spec.lua's header for what `same` checks).
local ffi = require("ffi")
-- busted puts luassert in the spec files' environment, not in a module's
local assert = require("luassert")
local oar = require("oar")
local lib = require("oar.lib")
local T = require("spec.helpers.op_test")
local numel = require("spec.helpers.index").numel
local tensor = require("oar.tensor")
local C = lib.C

local CPU, GPU = C.OAR_PLACE_CPU, C.OAR_PLACE_CUDA

local function check(rc, what)
  if rc ~= 0 then error((what and (what .. ": ") or "") .. lib.last_error(), 2) end
end

-- ---- inputs ------------------------------------------------------------------
local state = 20240229
local function rnd()   -- [0, 1), deterministic
  state = (state * 1103515245 + 12345) % 2147483648
  return state / 2147483648
end

-- uniform values in [lo, hi) (an optional `away` keeps |x| >= away, for kinks)
local function rand(shape, lo, hi, dtype, away)
  local d = {}
  for i = 1, numel(shape) do
    local x
    repeat x = lo + (hi - lo) * rnd() until not away or math.abs(x) >= away
    d[i] = x
  end
  return T.tensor(d, { shape = shape, dtype = dtype or "float32" })
end

local function randint(shape, n)
  local d = {}
  for i = 1, numel(shape) do d[i] = math.floor(rnd() * n) end
  return T.tensor(d, { shape = shape, dtype = "int64" })
end

-- each row a distribution over the last dim
local function probs(rows, cols, dtype)
  local d = {}
  for r = 0, rows - 1 do
    local s = 0
    for c = 1, cols do d[r * cols + c] = 0.05 + rnd(); s = s + d[r * cols + c] end
    for c = 1, cols do d[r * cols + c] = d[r * cols + c] / s end
  end
  return T.tensor(d, { shape = { rows, cols }, dtype = dtype or "float32" })
end

-- ---- one-op programs ------------------------------------------------------------
-- the keys of t (a case's slots), sorted: a fixed order for names and feeds
local function sorted_keys(t)
  local keys = {}
  for key in pairs(t) do keys[#keys + 1] = key end
  table.sort(keys)
  return keys
end

local function new_program()
  local out = ffi.new("oar_program_t*[1]")
  check(C.oar_program_new(out))
  return ffi.gc(out[0], C.oar_program_free)
end

local function declare(block, name, v)
  local out = ffi.new("oar_var_desc_t*[1]")
  check(C.oar_block_var_new(block, name, out), "var " .. name)
  local dims = ffi.new("int64_t[?]", math.max(#v.shape, 1))
  for i, d in ipairs(v.shape) do dims[i - 1] = d end
  check(C.oar_var_desc_set_shape(out[0], dims, #v.shape))
  check(C.oar_var_desc_set_dtype(out[0], T.DTYPES[v.dtype or "float32"]))
  return out[0]
end

-- spec: type, inputs {Slot = value | {values}}, attrs, outputs {Slot = count | {names}},
-- persist {input slots declared persistable}, grad {wrt = {slots}, of = {slots}}.
-- Returns the program, the feeds and the names to fetch with labels.
local function build(spec)
  local prog = new_program()
  local block = C.oar_program_block(prog, 0)
  local feeds, in_names = {}, {}
  for _, slot in ipairs(sorted_keys(spec.inputs)) do
    local val = spec.inputs[slot]
    local list = val.is_test_tensor and { val } or val
    in_names[slot] = {}
    for i, v in ipairs(list) do
      local name = "in_" .. slot .. "_" .. i
      local d = declare(block, name, v)
      if spec.persist and spec.persist[slot] then check(C.oar_var_desc_set_persistable(d, true)) end
      feeds[name] = v
      in_names[slot][i] = name
    end
  end
  local outs = {}
  local wanted = spec.outputs
  if not wanted then
    wanted = {}
    for i = 0, C.oar_op_num_output_slots(spec.type) - 1 do
      local s = ffi.string(C.oar_op_output_slot_at(spec.type, i))
      if bit.band(C.oar_op_output_flags(spec.type, s), 2) == 0 then wanted[s] = 1 end
    end
  end
  local fetch, labels = {}, {}
  for slot, w in pairs(wanted) do
    outs[slot] = {}
    if type(w) == "table" then
      for i, n in ipairs(w) do outs[slot][i] = n end
    else
      for i = 1, w do outs[slot][i] = "out_" .. slot .. "_" .. i end
    end
    if not (spec.skip and spec.skip[slot]) then
      for i, n in ipairs(outs[slot]) do
        fetch[#fetch + 1] = n
        labels[#fetch] = spec.type .. " " .. slot .. "[" .. i .. "]"
      end
    end
  end
  T.append_op(block, spec.type, in_names, outs, spec.attrs)
  if spec.grad then
    local means = {}
    for _, slot in ipairs(spec.grad.of or { "Out" }) do
      for i, name in ipairs(outs[slot]) do
        local m = "wsum_" .. slot .. "_" .. i
        if spec.grad.mean then   -- a case that checks against the mean's constant upstream gradient
          T.append_op(block, "mean", { X = { name } }, { Out = { m } }, {})
          means[#means + 1] = m
          goto continue
        end
        -- sum(out * w) with random w of out's shape (spec.shapes, from a forward run)
        local fwd = assert(spec.shapes and spec.shapes[name], "no forward shape of " .. name)
        local w = rand(fwd.shape, -1, 1, fwd.dtype)
        local wname = "weight_" .. slot .. "_" .. i
        declare(block, wname, w)
        feeds[wname] = w
        T.append_op(block, "elementwise_mul", { X = { name }, Y = { wname } }, { Out = { "w" .. m } }, {})
        T.append_op(block, "reduce_sum", { X = { "w" .. m } }, { Out = { m } }, { reduce_all = true })
        means[#means + 1] = m
        ::continue::
      end
    end
    local loss = means[1]
    if #means > 1 then
      loss = "loss"
      T.append_op(block, "sum", { X = means }, { Out = { loss } }, {})
    end
    local wrt = {}
    for _, slot in ipairs(spec.grad.wrt) do
      for _, n in ipairs(in_names[slot]) do wrt[#wrt + 1] = n end
    end
    local grads = ffi.new("char**[1]")
    check(C.oar_backward_gradients(prog, lib.cstrings({ loss }), 1, nil, lib.cstrings(wrt), #wrt, nil, 0, grads),
      "backward")
    for i = 1, #wrt do
      local p = grads[0][i - 1]
      assert(p ~= nil, "no gradient path to " .. wrt[i])
      fetch[#fetch + 1] = ffi.string(p)
      labels[#fetch] = spec.type .. " d" .. wrt[i]
    end
    C.oar_strings_free(grads[0], #wrt)
  end
  return prog, feeds, fetch, labels
end

local function executor(kind)
  local out = ffi.new("oar_executor_t*[1]")
  check(C.oar_executor_new(kind, 0, out), "executor")
  return ffi.gc(out[0], C.oar_executor_free)
end

-- runs prog on `kind`; {Lua view of each fetched tensor}, or nil and the error
local function run_on(kind, prog, feeds, fetch)
  local exe = executor(kind)
  local sout = ffi.new("oar_scope_t*[1]")
  check(C.oar_scope_new(sout))
  local scope = ffi.gc(sout[0], C.oar_scope_free)
  local names, keep = {}, {}
  for name in pairs(feeds) do names[#names + 1] = name end
  table.sort(names)
  local ftensors = ffi.new("oar_tensor_t*[?]", math.max(#names, 1))
  for i, name in ipairs(names) do
    keep[i] = T.to_c(feeds[name])
    ftensors[i - 1] = keep[i]
  end
  local out = ffi.new("oar_tensor_t*[?]", math.max(#fetch, 1))
  local rc = C.oar_executor_run(exe, prog, 0, scope, #names, lib.cstrings(names), ftensors, #fetch,
                                lib.cstrings(fetch), out)
  if rc ~= 0 then return nil, lib.last_error() end
  local res = {}
  for i = 1, #fetch do
    local t = ffi.gc(out[i - 1], C.oar_tensor_free)
    assert.are.equal(CPU, C.oar_tensor_place(t))   -- fetches come back to the host
    res[i] = T.from_c(t)
  end
  return res
end

-- the forward outputs' shapes of a case (for the random loss weights)
local function forward_shapes(spec)
  local fwd = {}
  for k, v in pairs(spec) do fwd[k] = v end
  fwd.grad, fwd.skip = nil, nil
  local prog, feeds, fetch = build(fwd)
  local res = assert(run_on(CPU, prog, feeds, fetch))
  local shapes = {}
  for i, name in ipairs(fetch) do shapes[name] = { shape = res[i].shape, dtype = res[i].dtype } end
  return shapes
end

-- the dtype that picks the op's kernel: its first floating-point input's
-- (ids, labels and indices never do when there is one), else its first input's
local FLOATS = { float16 = true, float32 = true, float64 = true }
local function first_dtype(spec)
  local first
  for _, slot in ipairs(sorted_keys(spec.inputs)) do
    local v = spec.inputs[slot]
    v = v.is_test_tensor and v or v[1]
    if v then
      local dt = v.dtype or "float32"
      if FLOATS[dt] then return T.DTYPES[dt] end
      first = first or dt
    end
  end
  return T.DTYPES[first or "float32"]
end

-- Runs the case on both places and compares everything fetched; an op (and
-- its grad op) that has a CUDA kernel must have run it on the CUDA executor.
local function same(spec)
  if spec.grad and not spec.shapes then spec.shapes = forward_shapes(spec) end
  local prog, feeds, fetch, labels = build(spec)
  local want = assert(run_on(CPU, prog, feeds, fetch))
  oar.set_flags{ count_kernels = true }
  C.oar_kernel_calls_reset()
  local got, err = run_on(GPU, prog, feeds, fetch)
  oar.set_flags{ count_kernels = false }
  assert(got, err)
  local dt = first_dtype(spec)
  for _, op in ipairs({ spec.type, spec.grad and (spec.type .. "_grad") or nil }) do
    if C.oar_kernel_registered(op, GPU, dt) then
      assert.is_true(C.oar_kernel_calls(op, GPU) >= 1, op .. " has a CUDA kernel but did not run it")
      assert.are.equal(0, tonumber(C.oar_kernel_calls(op, CPU)), op .. " ran its CPU kernel on the CUDA executor")
    end
  end
  local atol, rtol = spec.atol or 1e-5, spec.rtol or 1e-4
  for i = 1, #fetch do T.assert_close(got[i], want[i], atol, rtol, labels[i] .. " (CUDA vs CPU)") end
  return got, want
end

-- The same error on both places: a message matching `pattern` on the CPU and
-- `device_pattern` (default: `pattern`) on the device, whose range checks
-- inside kernels know the first bad position but not the value there (an op
-- without a CUDA kernel falls back to the CPU's kernel and message).
local function same_error(spec, pattern, device_pattern)
  local prog, feeds, fetch = build(spec)
  local ok, err = run_on(CPU, prog, feeds, fetch)
  assert.is_nil(ok)
  assert.matches(pattern, err)
  ok, err = run_on(GPU, prog, feeds, fetch)
  assert.is_nil(ok)
  local on_device = device_pattern and C.oar_kernel_registered(spec.type, GPU, first_dtype(spec))
  assert.matches(on_device and device_pattern or pattern, err)
end

-- an oar Tensor holding a test value (its own reference to the C tensor)
local function to_tensor(v)
  return tensor.wrap(C.oar_tensor_retain(T.to_c(v)))
end

local function mean_of(v)
  local s = 0
  for _, x in ipairs(v.data) do s = s + x end
  return s / #v.data
end

-- Why the CUDA cases of the spec file `name` cannot run here, printed, for
-- the spec to pass to pending(); nil when a device can be used. The reason
-- is the executor's (backend, library, driver or GPU missing).
local function no_gpu(name)
  if require("oar.place").cuda_device_count() > 0 then return nil end
  local _, why = pcall(oar.Executor, oar.CUDAPlace(0))
  why = "no GPU: " .. tostring(why)
  print(name .. ": skipping the CUDA cases: " .. why)
  return why
end

-- ---- whole training steps ---------------------------------------------------------
-- Builds the net, initializes on the CPU, copies the parameters to a second
-- scope, takes `steps` optimizer steps on each place with the same feeds and
-- compares the losses and the final parameters.
local function same_training(net, make_feed, steps, make_opt, tol)
  local main, startup = oar.Program(), oar.Program()
  main.random_seed, startup.random_seed = 5, 5
  local loss, test
  oar.program_guard(main, startup, function()
    loss = net()
    test = main:clone{ for_test = true }
    make_opt():minimize(loss)
  end)
  local cpu, gpu = oar.Executor(oar.CPUPlace()), oar.Executor(oar.CUDAPlace(0))
  local sc, sg = oar.Scope(), oar.Scope()
  cpu:run(startup, { scope = sc })
  for _, name in ipairs(sc:local_var_names()) do
    local v = sc:find_var(name)
    if v:type() == "lod_tensor" then sg:var(name):set_tensor(v:get_tensor():clone()) end
  end
  for step = 1, steps do
    local feed = make_feed()
    local lc = cpu:run(main, { feed = feed, fetch_list = { loss }, scope = sc })[1]:totable()
    local lg = gpu:run(main, { feed = feed, fetch_list = { loss }, scope = sg })[1]:totable()
    assert.is_true(math.abs(lc[1] - lg[1]) <= tol * (1 + math.abs(lc[1])),
      ("step %d: loss %.8g on the CPU, %.8g on CUDA"):format(step, lc[1], lg[1]))
  end
  local params = {}
  for _, p in ipairs(main:all_parameters()) do params[#params + 1] = p.name end
  assert.is_true(#params > 0)
  local feed = make_feed()
  local pc = cpu:run(test, { feed = feed, fetch_list = params, scope = sc })
  local pg = gpu:run(test, { feed = feed, fetch_list = params, scope = sg })
  for i, name in ipairs(params) do
    local a, b = T.from_c(pc[i].handle), T.from_c(pg[i].handle)
    T.assert_close(b, a, tol, tol, "parameter " .. name .. " after " .. steps .. " steps (CUDA vs CPU)")
  end
end

local function mnist_feed(image_shape, batch)
  return function()
    local shape = { batch }
    for _, d in ipairs(image_shape) do shape[#shape + 1] = d end
    return { img = to_tensor(rand(shape, -1, 1)), label = to_tensor(randint({ batch, 1 }, 10)) }
  end
end


return {
  no_gpu = no_gpu,
  check = check,
  rnd = rnd,
  numel = numel,
  rand = rand,
  randint = randint,
  probs = probs,
  sorted_keys = sorted_keys,
  new_program = new_program,
  declare = declare,
  build = build,
  executor = executor,
  run_on = run_on,
  forward_shapes = forward_shapes,
  first_dtype = first_dtype,
  same = same,
  same_error = same_error,
  to_tensor = to_tensor,
  mean_of = mean_of,
  same_training = same_training,
  mnist_feed = mnist_feed,
  CPU = CPU, GPU = GPU,
}
