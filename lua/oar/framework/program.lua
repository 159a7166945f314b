--- oar.framework.program: Program (blocks, clone, prune, serialize) and the
-- default programs with their guards.
-- @module oar.framework.program
local I = require("oar.framework.core")
local argcheck = require("oar.argcheck")
local Block = I.Block
local C = I.C
local M = I.M
local ParameterMT = I.ParameterMT
local Program = I.Program
local describe = I.describe
local ffi = I.ffi
local is_parameter = I.is_parameter
local is_program = I.is_program
local is_variable = I.is_variable
local lib = I.lib
local protected = I.protected
local raise = I.raise

-- ==== Program =====================================================================
Program.__index = Program

local function wrap_program(ptr)
  return setmetatable({
    handle = ffi.gc(ptr, C.oar_program_free),
    _blocks = {},          -- idx -> Block (Lua views, created lazily)
    _current = 0,          -- current block idx
    _role = M.OpRole.Forward,
    _role_vars = nil,
    random_seed = 0,
  }, Program)
end

function Program.new()
  local out = ffi.new("oar_program_t *[1]")
  if C.oar_program_new(out) ~= 0 then raise("Program: " .. lib.last_error()) end
  return wrap_program(out[0])
end
setmetatable(Program, { __call = function(_, ...) return Program.new(...) end })

--- A program from ProgramDesc protobuf bytes (as written by serialize()).
function Program.parse(bytes)
  if type(bytes) ~= "string" then
    raise("Program.parse: 'bytes' must be a string of ProgramDesc bytes, got " .. describe(bytes))
  end
  local out = ffi.new("oar_program_t *[1]")
  if C.oar_program_parse(bytes, #bytes, out) ~= 0 then
    raise("Program.parse: " .. lib.last_error())
  end
  return wrap_program(out[0])
end
Program.parse_from_string = Program.parse

local function check_program(p, who)
  if not is_program(p) then raise(who .. ": call it with ':' on a Program") end
end

function Program:num_blocks()
  check_program(self, "Program:num_blocks")
  return C.oar_program_num_blocks(self.handle)
end

local function wrap_block(prog, idx)
  local ptr = C.oar_program_block(prog.handle, idx)
  local b = setmetatable({
    program = prog,
    idx = idx,
    parent_idx = C.oar_block_parent_idx(ptr),
    _vars = {},                           -- name -> Variable
    _ops = setmetatable({}, { __mode = "v" }), -- op desc address -> Operator
  }, Block)
  prog._blocks[idx] = b
  return b
end

function Program:block(i)
  check_program(self, "Program:block")
  local n = self:num_blocks()
  if type(i) ~= "number" or i % 1 ~= 0 or i < 0 or i >= n then
    raise(string.format("Program:block: index %s outside 0..%d", tostring(i), n - 1))
  end
  return self._blocks[i] or wrap_block(self, i)
end

function Program:global_block() return self:block(0) end
function Program:current_block() return self:block(self._current) end

--- Pushes a child of the current block and makes it current.
function Program:create_block(parent_idx)
  check_program(self, "Program:create_block")
  parent_idx = parent_idx or self._current
  if type(parent_idx) ~= "number" or parent_idx % 1 ~= 0 or parent_idx < 0 or parent_idx >= self:num_blocks() then
    raise(string.format("Program:create_block: 'parent_idx' must be a block index in 0..%d, got %s",
      self:num_blocks() - 1, describe(parent_idx)))
  end
  local out = ffi.new("oar_block_t *[1]")
  if C.oar_program_append_block(self.handle, parent_idx, out) ~= 0 then
    raise("Program:create_block: " .. lib.last_error())
  end
  local idx = C.oar_block_idx(out[0])
  self._current = idx
  return self:block(idx)
end

--- Returns to the parent of the current block.
function Program:rollback()
  check_program(self, "Program:rollback")
  local parent = self:current_block().parent_idx
  if parent < 0 then raise("Program:rollback: the current block is the global block") end
  self._current = parent
end

function Program:_version()
  return tonumber(C.oar_program_version(self.handle))
end

-- Lua-side facts of `src`'s parameters, copied onto same-named vars of self.
function Program:_copy_param_info_from(src)
  local dst_block = self:global_block()
  for name, v in pairs(src:global_block()._vars) do
    if is_parameter(v) and C.oar_block_find_var(dst_block:_ptr(), name) ~= nil then
      local p = dst_block:var(name)
      setmetatable(p, ParameterMT)
      for _, k in ipairs({ "trainable", "regularizer", "optimize_attr", "initializer",
                            "gradient_clip", "do_model_average" }) do
        rawset(p, k, rawget(v, k))
      end
    end
  end
  self.random_seed = src.random_seed
end

--- A copy of the program.
-- With for_test, backward, optimize and lr-schedule ops are dropped and
-- is_test attrs set (dropout off, batch_norm on its running statistics).
-- @tparam[opt] table|bool opts `{for_test=false}`, or for_test itself
-- @treturn Program the copy
-- @usage local test_prog = main:clone{for_test = true}
function Program:clone(opts)
  check_program(self, "Program:clone")
  local for_test = opts
  if type(opts) == "table" then
    argcheck.keys("Program:clone", opts, "for_test")
    for_test = opts.for_test
  end
  local out = ffi.new("oar_program_t *[1]")
  if C.oar_program_clone(self.handle, out) ~= 0 then raise("Program:clone: " .. lib.last_error()) end
  local p = wrap_program(out[0])
  if for_test then
    if C.oar_program_inference_optimize(p.handle) ~= 0 then
      raise("Program:clone: " .. lib.last_error())
    end
  end
  p:_copy_param_info_from(self)
  return p
end

local function names_of(list, who, what)
  if is_variable(list) or type(list) == "string" then list = { list } end
  if type(list) ~= "table" then
    raise(string.format("%s: '%s' must be a Variable, a name or a list of them, got %s",
      who, what, describe(list)))
  end
  local names = {}
  for i, v in ipairs(list) do
    if is_variable(v) then names[i] = rawget(v, "name")
    elseif type(v) == "string" then names[i] = v
    else
      raise(string.format("%s: '%s' item %d must be a Variable or a name, got %s", who, what, i, describe(v)))
    end
  end
  return names
end
M.names_of = names_of

--- A new program holding only what `targets` need.
function Program:prune(targets)
  check_program(self, "Program:prune")
  local names = names_of(targets, "Program:prune", "targets")
  local arr, n = lib.cstrings(names)
  local out = ffi.new("oar_program_t *[1]")
  if C.oar_program_prune(self.handle, arr, n, out) ~= 0 then raise("Program:prune: " .. lib.last_error()) end
  local p = wrap_program(out[0])
  p:_copy_param_info_from(self)
  return p
end

-- Drops backward/optimize/lr ops in place and sets is_test (Fluid's
-- _inference_optimize).
function Program:_inference_optimize()
  if C.oar_program_inference_optimize(self.handle) ~= 0 then
    raise("Program:_inference_optimize: " .. lib.last_error())
  end
  return self
end

--- ProgramDesc protobuf bytes.
function Program:serialize()
  check_program(self, "Program:serialize")
  local bytes = ffi.new("void *[1]")
  local n = ffi.new("size_t[1]")
  if C.oar_program_serialize(self.handle, bytes, n) ~= 0 then
    raise("Program:serialize: " .. lib.last_error())
  end
  local s = ffi.string(bytes[0], n[0])
  C.oar_free(bytes[0])
  return s
end
Program.serialize_to_string = Program.serialize

function Program:validate()
  if C.oar_program_validate(self.handle) ~= 0 then raise("Program:validate: " .. lib.last_error()) end
  return true
end

--- every Variable of every block
function Program:list_vars()
  local out = {}
  for i = 0, self:num_blocks() - 1 do
    for _, v in ipairs(self:block(i):vars()) do out[#out + 1] = v end
  end
  return out
end

function Program:all_parameters() return self:global_block():all_parameters() end

-- Runs fn() with ops tagged `role` (and op_role_var `vars`); restores after.
function Program:_role_guard(role, vars, fn)
  local old_role, old_vars = self._role, self._role_vars
  self._role, self._role_vars = role, vars
  return protected(function() self._role, self._role_vars = old_role, old_vars end, fn)
end

-- ops appended in fn are optimize ops for `param_and_grad` ({param, grad})
function Program:_optimized_guard(param_and_grad, fn)
  local vars = param_and_grad and names_of(param_and_grad, "_optimized_guard", "vars") or nil
  return self:_role_guard(M.OpRole.Optimize, vars, fn)
end

function Program:_lr_schedule_guard(fn, is_with_opt)
  local role = M.OpRole.LRSched
  if is_with_opt then role = role + M.OpRole.Optimize end
  return self:_role_guard(role, nil, fn)
end

function Program:_backward_role_guard(fn)
  return self:_role_guard(M.OpRole.Backward, nil, fn)
end

-- ==== defaults and guards ========================================================
local main_program, startup_program

function M.default_main_program()
  if not main_program then main_program = Program.new() end
  return main_program
end

function M.default_startup_program()
  if not startup_program then startup_program = Program.new() end
  return startup_program
end

--- switch_main_program(p) / switch_startup_program(p): p becomes the default;
-- returns the previous one.
function M.switch_main_program(p)
  if not is_program(p) then raise("switch_main_program: 'program' must be a Program, got " .. describe(p)) end
  local old = M.default_main_program()
  main_program = p
  return old
end

function M.switch_startup_program(p)
  if not is_program(p) then raise("switch_startup_program: 'program' must be a Program, got " .. describe(p)) end
  local old = M.default_startup_program()
  startup_program = p
  return old
end

--- program_guard(main, startup, fn) or program_guard(main, fn): fn() runs
-- with these as defaults; the old ones come back also when fn errors.
function M.program_guard(main, startup, fn)
  if type(startup) == "function" and fn == nil then startup, fn = nil, startup end
  if not is_program(main) then
    raise("program_guard: 'main' must be a Program, got " .. describe(main))
  end
  if startup ~= nil and not is_program(startup) then
    raise("program_guard: 'startup' must be a Program or nil, got " .. describe(startup))
  end
  if type(fn) ~= "function" then
    raise("program_guard: 'fn' must be a function, got " .. describe(fn))
  end
  local old_main = M.switch_main_program(main)
  local old_startup = startup and M.switch_startup_program(startup)
  return protected(function()
    main_program = old_main
    if old_startup then startup_program = old_startup end
  end, fn)
end

--- name_scope(prefix, fn): ops created in fn carry op_namescope "/prefix/".
function M.name_scope(prefix, fn)
  if type(prefix) ~= "string" then raise("name_scope: 'prefix' must be a string") end
  if type(fn) ~= "function" then raise("name_scope: 'fn' must be a function") end
  local old = M._namescope
  M._namescope = (old or "/") .. prefix .. "/"
  return protected(function() M._namescope = old end, fn)
end


-- shared with the later parts
I.check_program = check_program
