--- Saving and loading variables, checkpoints and inference models
-- (Fluid's `fluid.io`).
--
-- Like Fluid, every save or load builds a small program of `save`/`load`
-- ops (`save_combine`/`load_combine` for one combined file) and runs it with
-- the executor. By default each variable goes to its own file, named after
-- the variable, in `dirname`; `filename=` puts them all in one file. Two
-- guarantees go beyond Fluid:
--
-- * every file is replaced atomically (temp file, fsync, rename), so a
--   crash leaves either the old or the new file;
-- * a load that fails leaves the scope exactly as it was: the load program
--   runs in a fresh scope, and only when every variable loaded and checked
--   do the tensors move into the target scope.
--
-- `save_persistables` also saves the global random generator's state
-- (variable `@RNG_STATE@`, int64 [4]) and `load_persistables` restores it,
-- so training resumed from a checkpoint continues bit for bit.
--
-- Every function takes its arguments positionally, as Fluid's do, or as one
-- keyword table (`oar.io.save_params{executor=exe, dirname="ckpt"}`); an
-- unknown keyword is an error with the closest valid name.
-- @module oar.io
-- @usage
-- oar.io.save_persistables(exe, "ckpt", main)     -- after some training
-- oar.io.load_persistables(exe, "ckpt", main)     -- later, to resume
local ffi = require("ffi")
local lib = require("oar.lib")
local framework = require("oar.framework")
local tensor = require("oar.tensor")
local scope_mod = require("oar.scope")
local executor_mod = require("oar.executor")
local argcheck = require("oar.argcheck")
local io_paddle = require("oar.io_paddle")
local C = lib.C

-- mkdir(2); declared here only when no other module has declared it already
pcall(ffi.cdef, [[
int mkdir(const char *pathname, unsigned int mode);
char *strerror(int errnum);
]])

local raise, describe = framework.raise, framework.describe
local Program = framework.Program

local ckpt = require("oar.checkpoint_dir")
local M = {}

--- The name under which checkpoints keep the random generator's state.
M.RNG_STATE_NAME = "@RNG_STATE@"
--- The default file name of an inference model's program.
M.MODEL_FILENAME = "__model__"
local RNG = M.RNG_STATE_NAME
local EEXIST = 17
local INT64 = 3

-- ---- argument checks ---------------------------------------------------------
-- The keywords each function accepts: in its keyword-table form (`*_KW`),
-- and in the options table that may follow the positional arguments.
local VARS_KW = { "executor", "dirname", "main_program", "vars", "predicate", "filename", "scope" }
local VARS_OPTS = { "vars", "predicate", "filename", "scope" }
local SIMPLE_KW = { "executor", "dirname", "main_program", "filename", "scope" }
local SIMPLE_OPTS = { "filename", "scope" }
local SAVE_MODEL_KW = { "dirname", "feeded_var_names", "feed_names", "target_vars", "executor",
  "main_program", "model_filename", "params_filename", "scope" }
local SAVE_MODEL_OPTS = { "model_filename", "params_filename", "scope" }
local LOAD_MODEL_KW = { "dirname", "executor", "model_filename", "params_filename", "scope" }
local LOAD_MODEL_OPTS = { "model_filename", "params_filename", "scope" }

local function check_keys(who, t, allowed)
  argcheck.keys("oar.io." .. who, t, allowed)
end

local function is_executor(x) return getmetatable(x) == executor_mod.ExecutorClass end

local function check_executor(exe, who)
  if not is_executor(exe) then
    raise(string.format("%s: 'executor' must be an oar Executor, got %s", who, describe(exe)))
  end
  if exe.handle == nil then raise(who .. ": the executor is closed") end
end

local function check_dirname(d, who)
  if type(d) ~= "string" or d == "" then
    raise(string.format("%s: 'dirname' must be a non-empty directory path, got %s", who, describe(d)))
  end
  if d:find("\0", 1, true) then raise(who .. ": 'dirname' contains a NUL byte") end
end

-- a file name inside dirname: one path component
local function check_filename(f, who, what)
  if type(f) ~= "string" or f == "" then
    raise(string.format("%s: '%s' must be a non-empty file name, got %s", who, what, describe(f)))
  end
  if f:find("\0", 1, true) then raise(string.format("%s: '%s' contains a NUL byte", who, what)) end
  if f:find("/", 1, true) or f == "." or f == ".." then
    raise(string.format("%s: '%s' must name a file inside dirname, not a path ('%s')", who, what, f))
  end
  if f:sub(1, 5) == ".oar-" then   -- the lock, commit record and staging dirs of oar.checkpoint_dir
    raise(string.format("%s: '%s' ('%s') starts with '.oar-', which oar reserves for its own files", who, what, f))
  end
end

local function check_program(p, who)
  if p == nil then return framework.default_main_program() end
  if not framework.is_program(p) then
    raise(string.format("%s: 'main_program' must be a Program, got %s", who, describe(p)))
  end
  return p
end

local function check_scope(s, who)
  if s == nil then return scope_mod.global_scope() end
  if not scope_mod.is_scope(s) then
    raise(string.format("%s: 'scope' must be an oar Scope, got %s", who, describe(s)))
  end
  return s
end

local function join(dir, name)
  dir = dir:gsub("/+$", "")
  if dir == "" then dir = "/" end
  if dir:sub(-1) == "/" then return dir .. name end
  return dir .. "/" .. name
end

-- mkdir -p, without a shell
local function mkdir_p(dir, who)
  local path = dir:sub(1, 1) == "/" and "/" or ""
  for part in dir:gmatch("[^/]+") do
    path = path .. part
    if part ~= "." and part ~= ".." then
      if ffi.C.mkdir(path, tonumber("755", 8)) ~= 0 then
        local err = ffi.errno()
        if err ~= EEXIST then
          raise(string.format("%s: cannot create directory '%s': %s", who, path, ffi.string(ffi.C.strerror(err))))
        end
      end
    end
    path = path .. "/"
  end
end

-- (a FIFO or a device is an error, never a hang: checked without opening it for reading)
local function file_exists(path, who)
  return ckpt.regular_file(path, who or "io")
end

-- An error from a nested call, re-raised at the user's line with `who` in front.
local function strip_location(msg)
  return (tostring(msg):gsub("^[^:\n]+:%d+: ", ""))
end

local function rethrow(who, msg)
  raise(who .. ": " .. strip_location(msg))
end

-- ---- which variables ---------------------------------------------------------
local function var_type(v) return v.type end

--- Which variables.
-- @section which

--- Whether a variable is saved by `save_persistables` (Fluid's
-- `is_persistable`): persistable, and not the feed or fetch list or a raw variable.
-- @param v a Variable
-- @treturn boolean
-- @usage local n = #oar.io.get_program_persistable_vars(main)
function M.is_persistable(v)
  if not framework.is_variable(v) then return false end
  local t = var_type(v)
  if t == "feed_minibatch" or t == "fetch_list" or t == "raw" then return false end
  return v.persistable
end

--- Whether a variable is a Parameter (what `save_params` saves).
-- @param v a Variable
-- @treturn boolean
-- @usage print(oar.io.is_parameter(main:global_block():var("fc_0.w_0")))
function M.is_parameter(v) return framework.is_parameter(v) end

-- Variables of `program` (all blocks, first declaration of each name) that
-- satisfy predicate.
local function filter_vars(program, predicate)
  local out, seen = {}, {}
  for _, v in ipairs(program:list_vars()) do
    local name = rawget(v, "name")
    if not seen[name] and predicate(v) then
      seen[name] = true
      out[#out + 1] = v
    end
  end
  return out
end

--- The parameters of a program (all blocks, each name once, in creation order).
-- @tparam[opt] Program program default: the default main program
-- @treturn {Variable,...}
-- @usage for _, p in ipairs(oar.io.get_program_parameter(main)) do print(p.name) end
function M.get_program_parameter(program)
  return filter_vars(check_program(program, "get_program_parameter"), M.is_parameter)
end

--- The persistable variables of a program (parameters, optimizer state,
-- counters), each name once, in creation order.
-- @tparam[opt] Program program default: the default main program
-- @treturn {Variable,...}
-- @usage local vars = oar.io.get_program_persistable_vars(main)
function M.get_program_persistable_vars(program)
  return filter_vars(check_program(program, "get_program_persistable_vars"), M.is_persistable)
end

-- The variables to save or load: an explicit list (Variables or names of the
-- program's global block), or those the predicate selects.
local function select_vars(program, vars, predicate, who)
  if vars ~= nil then
    if framework.is_variable(vars) or type(vars) == "string" then vars = { vars } end
    if type(vars) ~= "table" then
      raise(string.format("%s: 'vars' must be a list of Variables, got %s", who, describe(vars)))
    end
    local out, seen = {}, {}
    for i, v in ipairs(vars) do
      if type(v) == "string" then
        local found = program:global_block():find_var_recursive(v)
        if not found then
          raise(string.format("%s: vars[%d]: no variable '%s' in the program", who, i, v))
        end
        v = found
      elseif not framework.is_variable(v) then
        raise(string.format("%s: vars[%d] must be a Variable or a name, got %s", who, i, describe(v)))
      end
      local t = var_type(v)
      if t ~= "lod_tensor" then
        raise(string.format("%s: variable '%s' is a %s; only LoD tensors can be saved and loaded",
          who, rawget(v, "name"), tostring(t)))
      end
      local name = rawget(v, "name")
      if not seen[name] then
        seen[name] = true
        out[#out + 1] = v
      end
    end
    return out
  end
  if predicate == nil then
    raise(who .. ": give either 'vars' (a list of Variables) or 'predicate' (a function)")
  end
  if type(predicate) ~= "function" then
    raise(string.format("%s: 'predicate' must be a function, got %s", who, describe(predicate)))
  end
  return filter_vars(program, function(v) return var_type(v) == "lod_tensor" and predicate(v) end)
end

-- ---- the save/load programs --------------------------------------------------
-- spec of a variable to clone into a save/load program
local function var_spec(v)
  local spec = {
    name = rawget(v, "name"), dtype = v.dtype, type = "lod_tensor",
    lod_level = v.lod_level, persistable = true,
  }
  -- a shape never set (rank -1) stays unknown, so the load op checks no rank
  if C.oar_var_desc_ndim(v:_desc()) >= 0 then spec.shape = v.shape end
  return spec
end

local function names_sorted(specs)
  table.sort(specs, function(a, b) return a.name < b.name end)
  return specs
end

-- Builds the program: one `op_one` per file, or one `op_combined` over all.
local function build_program(specs, dirname, filename, op_one, op_combined, slot)
  local prog = Program()
  local block = prog:global_block()
  local vars = {}
  for i, s in ipairs(specs) do vars[i] = block:create_var(s) end
  if filename then
    block:append_op{ type = op_combined, inputs = slot == "X" and { X = vars } or nil,
      outputs = slot == "Out" and { Out = vars } or nil,
      attrs = { file_path = join(dirname, filename) } }
  else
    for _, v in ipairs(vars) do
      block:append_op{ type = op_one, inputs = slot == "X" and { X = { v } } or nil,
        outputs = slot == "Out" and { Out = { v } } or nil,
        attrs = { file_path = join(dirname, rawget(v, "name")) } }
    end
  end
  return prog
end

local function run(exe, prog, scope, who)
  local ok, err = pcall(exe.run, exe, prog, { scope = scope })
  if not ok then rethrow(who, err) end
end

-- the global random generator's state as an int64 [4] tensor
local function rng_state_tensor(who)
  local st = ffi.new("uint64_t[4]")
  if C.oar_rng_get_state(st) ~= 0 then raise(who .. ": " .. lib.last_error()) end
  local dims = ffi.new("int64_t[1]", 4)
  local out = ffi.new("oar_tensor_t *[1]")
  if C.oar_tensor_from_data(INT64, dims, 1, st, out) ~= 0 then raise(who .. ": " .. lib.last_error()) end
  return tensor.wrap(out[0])
end

-- The four state words held by a loaded "@RNG_STATE@" tensor, checked.
local function rng_words(t, where, who)
  local shape = t:shape()
  if t:dtype() ~= "int64" or #shape ~= 1 or shape[1] ~= 4 then
    raise(string.format("%s: '%s' in '%s' is %s %s; a random generator state is int64 [4]", who, RNG, where,
      t:dtype(), framework.shape_text(shape)))
  end
  local words = ffi.new("uint64_t[4]")
  ffi.copy(words, t:data(), 32)
  if words[0] == 0 and words[1] == 0 and words[2] == 0 and words[3] == 0 then
    raise(string.format("%s: '%s' in '%s' is all zeros, not a random generator state", who, RNG, where))
  end
  return words
end

-- Saves the tensors of `vars` (in `scope`) plus `extra` ({name, tensor}).
-- The save program runs against a fresh scope that shares the tensors, so
-- nothing is created in the user's scope and a missing value is an error
-- here rather than an empty variable there.
local function save_core(who, exe, dirname, vars, filename, scope, extra, stage)
  local specs, snapshot = {}, scope_mod.new()
  for _, v in ipairs(vars) do
    local name = rawget(v, "name")
    if not filename then check_filename(name, who, "variable name") end
    local sv = scope:find_var(name)
    if not sv or not sv:is_initialized() then
      raise(string.format("%s: variable '%s' has no value in the scope (did you run the startup program?)",
        who, name))
    end
    if sv:type() ~= "lod_tensor" then
      raise(string.format("%s: variable '%s' holds a %s; only LoD tensors can be saved", who, name, sv:type()))
    end
    local t = sv:get_tensor()
    -- a tensor a CUDA executor left on the device is saved from a host copy
    if C.oar_tensor_place(t.handle) ~= C.OAR_PLACE_CPU then t = t:to_host() end
    if C.oar_tensor_data(t.handle) == nil and t:numel() > 0 then
      raise(string.format("%s: variable '%s' has no data (did you run the startup program?)", who, name))
    end
    snapshot:var(name):set_tensor(t)
    specs[#specs + 1] = var_spec(v)
  end
  for _, e in ipairs(extra or {}) do
    snapshot:var(e.name):set_tensor(e.tensor)
    specs[#specs + 1] = { name = e.name, dtype = e.tensor:dtype(), shape = e.tensor:shape(), persistable = true }
  end
  if #specs == 0 then return 0 end
  if filename then names_sorted(specs) end
  -- every file of the save goes into a staging dir and is committed as one
  -- (stage given: the caller's save, which commits more files with these)
  local function write(dir)
    run(exe, build_program(specs, dir, filename, "save", "save_combine", "X"), snapshot, who)
  end
  if stage then write(stage)
  else
    mkdir_p(dirname, who)
    ckpt.saving(dirname, who, write)
  end
  return #specs
end

-- One load attempt: runs the load program in a fresh scope and returns the
-- name -> Tensor map, or nil and the error message.
local function try_load(exe, dirname, specs, filename)
  local ok, prog = pcall(build_program, specs, dirname, filename, "load", "load_combine", "Out")
  if not ok then return nil, prog end
  local fresh = scope_mod.new()
  local ran, err = pcall(exe.run, exe, prog, { scope = fresh })
  if not ran then return nil, err end
  local loaded = {}
  for _, s in ipairs(specs) do
    local v = fresh:find_local_var(s.name)
    if not v or v:type() ~= "lod_tensor" then
      return nil, string.format("variable '%s' was not loaded", s.name)
    end
    loaded[s.name] = v:get_tensor()
  end
  return loaded
end

-- Loads `vars` into `scope`; with_rng: nil (no generator state), "optional"
-- (restore it when the checkpoint holds one).
local function load_core(who, exe, dirname, vars, filename, scope, with_rng, locked)
  if not locked then   -- under the directory's lock: never half of one save and half of another
    return ckpt.loading(dirname, who, function()
      return load_core(who, exe, dirname, vars, filename, scope, with_rng, true)
    end)
  end
  local specs = {}
  for _, v in ipairs(vars) do
    if not filename then check_filename(rawget(v, "name"), who, "variable name") end
    specs[#specs + 1] = var_spec(v)
  end
  if filename then
    local path = join(dirname, filename)
    if not file_exists(path, who) then
      raise(string.format("%s: cannot open '%s': no such file", who, path))
    end
  end
  -- the state record rides along when the checkpoint has one
  local rng_spec = { name = RNG, dtype = "int64", shape = { 4 }, persistable = true }
  local loaded, err
  if with_rng and not filename then
    if file_exists(join(dirname, RNG), who) then specs[#specs + 1] = rng_spec end
    if #specs == 0 then return 0 end
    loaded, err = try_load(exe, dirname, specs, nil)
  elseif with_rng then
    local with = { unpack(specs) }
    with[#with + 1] = rng_spec
    loaded, err = try_load(exe, dirname, names_sorted(with), filename)
    if not loaded and #specs > 0 then
      local plain, perr = try_load(exe, dirname, names_sorted(specs), filename)
      if plain then loaded, err = plain, nil
      -- both failed: the file's real problem is what the plain read met, unless
      -- that read stopped short of a trailing state record
      elseif not tostring(perr):find("bytes after the", 1, true) then err = perr end
    end
  else
    if #specs == 0 then return 0 end
    loaded, err = try_load(exe, dirname, names_sorted(specs), filename)
  end
  if not loaded then rethrow(who, err) end

  -- every check before anything changes
  local words = loaded[RNG] and rng_words(loaded[RNG], filename and join(dirname, filename) or join(dirname, RNG), who)
  local targets = {}
  for _, s in ipairs(specs) do
    if s.name ~= RNG then
      local existing = scope:find_var(s.name)
      if existing and existing:is_initialized() and existing:type() ~= "lod_tensor" then
        raise(string.format("%s: variable '%s' in the scope holds a %s, not a tensor; nothing was loaded",
          who, s.name, existing:type()))
      end
      targets[#targets + 1] = { existing, s.name }
    end
  end
  -- the move: shares the loaded buffers into the scope's variables
  for _, tv in ipairs(targets) do
    local var = tv[1] or scope:var(tv[2])
    var:set_tensor(loaded[tv[2]])
  end
  if words and C.oar_rng_set_state(words) ~= 0 then raise(who .. ": " .. lib.last_error()) end
  return #targets
end

-- ---- argument shapes -------------------------------------------------------------
local function is_plain_table(x) return type(x) == "table" and getmetatable(x) == nil end

-- save_vars(exe, dirname, main_program, vars|predicate, [predicate], [filename], [{scope=, ...}])
-- or save_vars{executor=, dirname=, main_program=, vars=, predicate=, filename=, scope=}
local function vars_args(who, executor, dirname, main_program, vars, a5, a6, a7)
  local o
  if is_plain_table(executor) and dirname == nil then
    o = executor
    check_keys(who, o, VARS_KW)
  else
    o = { executor = executor, dirname = dirname, main_program = main_program }
    if type(vars) == "function" then o.predicate = vars else o.vars = vars end
    local rest = { a5, a6, a7 }
    for i = 1, 3 do
      local a = rest[i]
      if type(a) == "function" then o.predicate = a
      elseif type(a) == "string" then o.filename = a
      elseif is_plain_table(a) then
        check_keys(who, a, VARS_OPTS)
        for k, v in pairs(a) do o[k] = v end
      elseif a ~= nil then raise(string.format("%s: unexpected argument %s", who, describe(a))) end
    end
  end
  check_executor(o.executor, who)
  check_dirname(o.dirname, who)
  if o.filename ~= nil then check_filename(o.filename, who, "filename") end
  o.main_program = check_program(o.main_program, who)
  o.scope = check_scope(o.scope, who)
  return o
end

-- save_params(exe, dirname, main_program, filename, {filename=, scope=}) (either
-- or both of the last two) or a keyword table
local function simple_args(who, executor, dirname, main_program, a4, a5)
  local o
  if is_plain_table(executor) and dirname == nil then
    o = executor
    check_keys(who, o, SIMPLE_KW)
  else
    o = { executor = executor, dirname = dirname, main_program = main_program }
    local rest = { a4, a5 }
    for i = 1, 2 do
      local a = rest[i]
      if type(a) == "string" then o.filename = a
      elseif is_plain_table(a) then
        check_keys(who, a, SIMPLE_OPTS)
        for k, v in pairs(a) do o[k] = v end
      elseif a ~= nil then raise(string.format("%s: 'filename' must be a string, got %s", who, describe(a))) end
    end
  end
  check_executor(o.executor, who)
  check_dirname(o.dirname, who)
  if o.filename ~= nil then check_filename(o.filename, who, "filename") end
  o.main_program = check_program(o.main_program, who)
  o.scope = check_scope(o.scope, who)
  return o
end

-- ---- the public functions -----------------------------------------------------------

--- Variables, parameters and checkpoints.
-- @section save

--- Saves chosen variables of a program from a scope.
-- Also `save_vars{executor=, dirname=, main_program=, vars=, predicate=, filename=, scope=}`.
-- @tparam Executor executor
-- @tparam string dirname the directory (created when missing)
-- @tparam[opt] Program main_program default: the default main program
-- @tparam {Variable,...}|function vars the variables (or their names), or a
-- predicate `function(var) -> boolean` choosing among the program's variables
-- @param[opt] ... a predicate, a file name (one combined file) and/or an
-- options table `{vars=, predicate=, filename=, scope=}`; `scope` defaults to the global scope
-- @usage
-- oar.io.save_vars(exe, "out", main, function(v) return v.name:match("^fc") ~= nil end)
function M.save_vars(executor, dirname, main_program, vars, ...)
  local who = "save_vars"
  local o = vars_args(who, executor, dirname, main_program, vars, ...)
  local chosen = select_vars(o.main_program, o.vars, o.predicate, who)
  save_core(who, o.executor, o.dirname, chosen, o.filename, o.scope)
end

--- Loads chosen variables of a program into a scope; the counterpart of
-- `save_vars`, with the same arguments. On any error nothing in the scope changes.
-- @tparam Executor executor
-- @tparam string dirname
-- @tparam[opt] Program main_program
-- @tparam {Variable,...}|function vars the variables or a predicate
-- @param[opt] ... as for `save_vars`
-- @usage oar.io.load_vars(exe, "out", main, {main:global_block():var("fc_0.w_0")})
function M.load_vars(executor, dirname, main_program, vars, ...)
  local who = "load_vars"
  local o = vars_args(who, executor, dirname, main_program, vars, ...)
  local chosen = select_vars(o.main_program, o.vars, o.predicate, who)
  load_core(who, o.executor, o.dirname, chosen, o.filename, o.scope)
end

--- Saves every parameter of a program (not the optimizer's state).
-- Also `save_params{executor=, dirname=, main_program=, filename=, scope=}`.
-- @tparam Executor executor
-- @tparam string dirname the directory (created when missing)
-- @tparam[opt] Program main_program default: the default main program
-- @tparam[opt] string|table filename one combined file in `dirname`
-- (default: one file per parameter), or the options `{filename=, scope=}`
-- @tparam[opt] table options `{filename=, scope=}` after a file name
-- @usage oar.io.save_params(exe, "params", main, {filename = "all.bin"})
function M.save_params(executor, dirname, main_program, filename, options)
  local who = "save_params"
  local o = simple_args(who, executor, dirname, main_program, filename, options)
  save_core(who, o.executor, o.dirname, select_vars(o.main_program, nil, M.is_parameter, who), o.filename, o.scope)
end

--- Loads every parameter of a program; the counterpart of `save_params`.
-- On any error (a missing file, a shape that differs) nothing in the scope changes.
-- @tparam Executor executor
-- @tparam string dirname
-- @tparam[opt] Program main_program
-- @tparam[opt] string|table filename as for `save_params`
-- @tparam[opt] table options `{filename=, scope=}`
-- @usage oar.io.load_params(exe, "params", main, {filename = "all.bin"})
function M.load_params(executor, dirname, main_program, filename, options)
  local who = "load_params"
  local o = simple_args(who, executor, dirname, main_program, filename, options)
  load_core(who, o.executor, o.dirname, select_vars(o.main_program, nil, M.is_parameter, who), o.filename, o.scope)
end

-- In a data-parallel job (oar.fleet) only worker 0 writes checkpoints and
-- models; the others return without writing (their parameters are equal).
local function fleet_skips_write()
  local fleet = package.loaded["oar.fleet"]
  return fleet ~= nil and fleet.is_initialized() and not fleet.is_first_worker()
end

--- Saves a checkpoint: every persistable variable (parameters, optimizer
-- state, learning-rate counters) and the random generator's state,
-- everything training needs to resume.
-- Also `save_persistables{executor=, dirname=, main_program=, filename=, scope=}`.
-- @tparam Executor executor
-- @tparam string dirname the directory (created when missing)
-- @tparam[opt] Program main_program default: the default main program
-- @tparam[opt] string|table filename one combined file, or the options `{filename=, scope=}`
-- @tparam[opt] table options `{filename=, scope=}`
-- @usage oar.io.save_persistables(exe, "ckpt/epoch_3", main)
function M.save_persistables(executor, dirname, main_program, filename, options)
  local who = "save_persistables"
  local o = simple_args(who, executor, dirname, main_program, filename, options)
  if fleet_skips_write() then return end
  local vars = select_vars(o.main_program, nil, M.is_persistable, who)
  for _, v in ipairs(vars) do
    if rawget(v, "name") == RNG then raise(who .. ": the program declares a variable named " .. RNG .. ", a reserved name") end
  end
  save_core(who, o.executor, o.dirname, vars, o.filename, o.scope, { { name = RNG, tensor = rng_state_tensor(who) } })
end

--- Loads a checkpoint written by `save_persistables`, restoring the random
-- generator's state when the checkpoint holds one. On any error nothing in
-- the scope changes.
-- @tparam Executor executor
-- @tparam string dirname
-- @tparam[opt] Program main_program
-- @tparam[opt] string|table filename as for `save_persistables`
-- @tparam[opt] table options `{filename=, scope=}`
-- @usage
-- exe:run(startup)                                  -- creates the variables
-- oar.io.load_persistables(exe, "ckpt/epoch_3", main) -- then overwrites them
function M.load_persistables(executor, dirname, main_program, filename, options)
  local who = "load_persistables"
  local o = simple_args(who, executor, dirname, main_program, filename, options)
  local vars = select_vars(o.main_program, nil, M.is_persistable, who)
  load_core(who, o.executor, o.dirname, vars, o.filename, o.scope, "optional")
end

-- ---- inference models --------------------------------------------------------------
local function name_list(x, who, what)
  if type(x) == "string" or framework.is_variable(x) then x = { x } end
  if type(x) ~= "table" or #x == 0 then
    raise(string.format("%s: '%s' must be a non-empty list, got %s", who, what, describe(x)))
  end
  local out, seen = {}, {}
  for i, v in ipairs(x) do
    local name
    if type(v) == "string" and v ~= "" then name = v
    elseif framework.is_variable(v) then name = rawget(v, "name")
    else raise(string.format("%s: %s[%d] must be a %s, got %s", who, what, i,
      what == "feeded_var_names" and "variable name" or "Variable", describe(v))) end
    if seen[name] then raise(string.format("%s: '%s' appears twice in %s", who, name, what)) end
    seen[name] = true
    out[i] = name
  end
  return out
end

local function remove_feed_fetch(prog)
  local block = prog:global_block()
  for i = block:num_ops() - 1, 0, -1 do
    local t = block:op(i).type
    if t == "feed" or t == "fetch" then block:_remove_op(i) end
  end
  for _, v in ipairs(block:vars()) do
    local t = v.type
    if t == "feed_minibatch" or t == "fetch_list" then block:_remove_var(rawget(v, "name")) end
  end
end

-- Ops of block 0 that compute a fed variable go: feeding it replaces them
-- (Fluid's _prune_with_input).
local function drop_feed_producers(prog, feeds)
  local block, fed, removed = prog:global_block(), {}, false
  for _, n in ipairs(feeds) do fed[n] = true end
  for i = block:num_ops() - 1, 0, -1 do
    local op = block:op(i)
    for _, n in ipairs(op:output_arg_names()) do
      if fed[n] then block:_remove_op(i) removed = true break end
    end
  end
  return removed
end

--- Inference models.
-- @section inference

--- Saves what inference needs: the program pruned to the targets (backward
-- and optimizer ops dropped, `is_test` set, feed and fetch ops added) as
-- `__model__`, and the persistable variables it reads. The C predictor
-- (`oar_predictor_load`) and `load_inference_model` read the directory.
-- Also `save_inference_model{dirname=, feeded_var_names= (or feed_names=),
-- target_vars=, executor=, main_program=, model_filename=, params_filename=, scope=}`.
-- @tparam string dirname the directory (created when missing)
-- @tparam {string,...} feeded_var_names the names of the inputs to feed
-- @tparam {Variable,...} target_vars the outputs (Variables or names)
-- @tparam Executor executor
-- @tparam[opt] Program main_program default: the default main program
-- @tparam[opt] string|table model_filename the program's file name (default
-- `__model__`), or the options `{model_filename=, params_filename=, scope=}`
-- @tparam[opt] string params_filename one combined parameter file (default: one file per variable)
-- @treturn {string,...} the names of the targets
-- @usage oar.io.save_inference_model("model", {"img"}, {prediction}, exe, main)
function M.save_inference_model(dirname, feeded_var_names, target_vars, executor, main_program,
                                model_filename, params_filename)
  local who = "save_inference_model"
  local o = {}
  local a6, a7 = model_filename, params_filename
  if is_plain_table(dirname) and feeded_var_names == nil then
    o = dirname
    check_keys(who, o, SAVE_MODEL_KW)
    o.feeded_var_names = o.feeded_var_names or o.feed_names
  else
    o = { dirname = dirname, feeded_var_names = feeded_var_names, target_vars = target_vars,
          executor = executor, main_program = main_program }
    if is_plain_table(a6) then
      check_keys(who, a6, SAVE_MODEL_OPTS)
      for k, v in pairs(a6) do o[k] = v end
    elseif type(a6) == "string" then o.model_filename = a6
    elseif a6 ~= nil then raise(string.format("%s: 'model_filename' must be a string, got %s", who, describe(a6))) end
    if type(a7) == "string" then o.params_filename = a7
    elseif a7 ~= nil then raise(string.format("%s: 'params_filename' must be a string, got %s", who, describe(a7))) end
  end
  check_dirname(o.dirname, who)
  local feeds = name_list(o.feeded_var_names, who, "feeded_var_names")
  local targets = name_list(o.target_vars, who, "target_vars")
  check_executor(o.executor, who)
  local program = check_program(o.main_program, who)
  local scope = check_scope(o.scope, who)
  local model_filename = o.model_filename or M.MODEL_FILENAME
  check_filename(model_filename, who, "model_filename")
  if o.params_filename ~= nil then check_filename(o.params_filename, who, "params_filename") end
  if o.params_filename == model_filename then
    raise(string.format("%s: model_filename and params_filename are both '%s'", who, model_filename))
  end

  if fleet_skips_write() then return targets end
  local copy = program:clone()
  remove_feed_fetch(copy)
  local gb = copy:global_block()
  for _, n in ipairs(feeds) do
    if not gb:has_var(n) then
      raise(string.format("%s: feed '%s' is not a variable of the program's global block", who, n))
    end
  end
  for _, n in ipairs(targets) do
    if not gb:has_var(n) then
      raise(string.format("%s: target '%s' is not a variable of the program's global block", who, n))
    end
  end
  local ok, pruned = pcall(copy.prune, copy, targets)
  if not ok then rethrow(who, pruned) end
  if drop_feed_producers(pruned, feeds) then
    ok, pruned = pcall(pruned.prune, pruned, targets)
    if not ok then rethrow(who, pruned) end
  end
  pruned:_inference_optimize()
  local block = pruned:global_block()
  for _, n in ipairs(feeds) do
    if not block:has_var(n) then
      raise(string.format("%s: feed '%s' is not needed to compute the targets (%s); leave it out of " ..
        "feeded_var_names", who, n, table.concat(targets, ", ")))
    end
  end
  for _, n in ipairs({ "feed", "fetch" }) do
    if block:has_var(n) then
      raise(string.format("%s: the program has its own variable '%s', the name inference models reserve " ..
        "for the %s list", who, n, n))
    end
  end
  local feed_var = block:create_var{ name = "feed", type = "feed_minibatch", persistable = true }
  local fetch_var = block:create_var{ name = "fetch", type = "fetch_list", persistable = true }
  for i, n in ipairs(feeds) do
    block:prepend_op{ type = "feed", inputs = { X = { feed_var } }, outputs = { Out = { n } },
      attrs = { col = i - 1 } }
  end
  for i, n in ipairs(targets) do
    block:append_op{ type = "fetch", inputs = { X = { n } }, outputs = { Out = { fetch_var } },
      attrs = { col = i - 1 } }
  end

  -- parameters first, then __model__: a directory with a model has its parameters
  local params = filter_vars(pruned, M.is_persistable)
  mkdir_p(o.dirname, who)
  local bytes = pruned:serialize()
  -- the parameters and __model__ are committed as one (oar.checkpoint_dir)
  ckpt.saving(o.dirname, who, function(stage)
    save_core(who, o.executor, o.dirname, params, o.params_filename, scope, nil, stage)
    local path = join(stage, model_filename)
    if C.oar_file_write(path, bytes, #bytes) ~= 0 then raise(who .. ": " .. lib.last_error()) end
  end)
  return targets
end

local function read_file(path, who)
  local data, n = ffi.new("void *[1]"), ffi.new("size_t[1]")
  if C.oar_file_read(path, data, n) ~= 0 then raise(who .. ": " .. lib.last_error()) end
  local s = ffi.string(data[0], n[0])
  C.oar_free(data[0])
  return s
end

local load_model
--- Loads an inference model written by `save_inference_model`: its
-- program, and its parameters into the scope.
-- Also `load_inference_model{dirname=, executor=, model_filename=, params_filename=, scope=}`.
-- @tparam string dirname the directory
-- @tparam Executor executor
-- @tparam[opt] string|table model_filename the program's file name (default
-- `__model__`), or the options `{model_filename=, params_filename=, scope=}`
-- @tparam[opt] string params_filename the combined parameter file, when the model has one
-- @treturn Program the program, feed and fetch ops stripped
-- @treturn {string,...} the feed names, in column order
-- @treturn {Variable,...} the fetch targets, in column order
-- @usage
-- local prog, feeds, fetches = oar.io.load_inference_model("model", exe)
-- local out = exe:run(prog, {feed = {[feeds[1]] = images}, fetch_list = fetches})
function M.load_inference_model(dirname, executor, model_filename, params_filename)
  local who = "load_inference_model"
  local o
  local a3, a4 = model_filename, params_filename
  if is_plain_table(dirname) and executor == nil then
    o = dirname
    check_keys(who, o, LOAD_MODEL_KW)
  else
    o = { dirname = dirname, executor = executor }
    if is_plain_table(a3) then
      check_keys(who, a3, LOAD_MODEL_OPTS)
      for k, v in pairs(a3) do o[k] = v end
    elseif type(a3) == "string" then o.model_filename = a3
    elseif a3 ~= nil then raise(string.format("%s: 'model_filename' must be a string, got %s", who, describe(a3))) end
    if type(a4) == "string" then o.params_filename = a4
    elseif a4 ~= nil then raise(string.format("%s: 'params_filename' must be a string, got %s", who, describe(a4))) end
  end
  check_dirname(o.dirname, who)
  check_executor(o.executor, who)
  local scope = check_scope(o.scope, who)
  local model_filename = o.model_filename or M.MODEL_FILENAME
  check_filename(model_filename, who, "model_filename")
  if o.params_filename ~= nil then check_filename(o.params_filename, who, "params_filename") end

  return ckpt.loading(o.dirname, who, function() return load_model(who, o, scope, model_filename) end)
end

-- load_inference_model's work, under the directory's lock
function load_model(who, o, scope, model_filename)
  -- Fluid directories, Paddle 2.x/3.x prefixes and model files (oar.io_paddle)
  local path, params_dir, params_filename = io_paddle.resolve(o.dirname, o.model_filename, o.params_filename, who)
  local prog = io_paddle.parse_model(read_file(path, who), path, who)
  -- a loaded model may not loop forever (flag inference_max_while_iterations)
  C.oar_program_set_max_while_iterations(prog.handle, C.oar_get_flag("inference_max_while_iterations"))

  local block = prog:global_block()
  local feeds, fetches = {}, {}
  local nfeed, nfetch = 0, 0
  for _, op in ipairs(block:ops()) do
    local t = op.type
    if t == "feed" or t == "fetch" then
      local col = op:attr("col")
      local args = t == "feed" and op:output("Out") or op:input("X")
      local list = t == "feed" and feeds or fetches
      if type(col) ~= "number" or col < 0 or #args ~= 1 or list[col + 1] then
        raise(string.format("%s: %s: a %s op has a bad column (%s) or slot", who, path, t, tostring(col)))
      end
      list[col + 1] = args[1]
      if t == "feed" then nfeed = nfeed + 1 else nfetch = nfetch + 1 end
    end
  end
  for _, l in ipairs({ { feeds, nfeed, "feed" }, { fetches, nfetch, "fetch" } }) do
    for i = 1, l[2] do
      if not l[1][i] then
        raise(string.format("%s: %s: %s columns are not 0..%d", who, path, l[3], l[2] - 1))
      end
    end
  end
  if nfeed == 0 or nfetch == 0 then
    raise(string.format("%s: %s has %d feed and %d fetch ops; an inference model needs both " ..
      "(was it written by save_inference_model?)", who, path, nfeed, nfetch))
  end
  -- an inference model computes; it has no business reading or writing files
  for bi = 0, prog:num_blocks() - 1 do
    for i, op in ipairs(prog:block(bi):ops()) do
      local t = op.type
      if t == "save" or t == "save_combine" or t == "load" or t == "load_combine" then
        raise(string.format("%s: %s: block %d, op #%d is a '%s' op; an inference model may not read or write files",
          who, path, bi, i - 1, t))
      end
    end
  end
  remove_feed_fetch(prog)

  local params = filter_vars(prog, M.is_persistable)
  load_core(who, o.executor, params_dir, params, params_filename, scope, nil, true)
  local fetch_targets = {}
  for i, n in ipairs(fetches) do fetch_targets[i] = block:var(n) end
  return prog, feeds, fetch_targets
end

return M
