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

--- A program: blocks of variables and operators (Fluid's `Program`), a view
-- on a C ProgramDesc. Layers append to the default main program (the model)
-- and the default startup program (parameter initialization); build others
-- with `oar.Program()` and `oar.program_guard`.
-- @type Program
-- @tfield cdata handle the C program (owned; freed with the Lua object)
-- @tfield int random_seed the seed of random ops without their own (0: from `oar.seed`)
-- @usage
-- local main, startup = oar.Program(), oar.Program()
-- oar.program_guard(main, startup, function()
--   local x = layers.data{name = "x", shape = {13}}
--   layers.fc{input = x, size = 1}
-- end)
-- print(main)
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

--- A new, empty program with one (global) block; `oar.Program()` calls it.
-- @treturn Program
-- @usage local prog = oar.Program.new()   -- or oar.Program()
function Program.new()
  local out = ffi.new("oar_program_t *[1]")
  if C.oar_program_new(out) ~= 0 then raise("Program: " .. lib.last_error()) end
  return wrap_program(out[0])
end
setmetatable(Program, { __call = function(_, ...) return Program.new(...) end })

--- A program from ProgramDesc protobuf bytes, as written by `Program:serialize`
-- (also `Program.parse_from_string`). Parameter facts that live only in Lua
-- (trainable, regularizer) are not in the bytes.
-- @tparam string bytes ProgramDesc protobuf bytes
-- @treturn Program
-- @raise when the bytes are not a valid ProgramDesc
-- @usage local copy = oar.Program.parse(main:serialize())
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

--- The number of blocks (the global block and every sub-block).
-- @treturn int
-- @usage print(main:num_blocks())   -- 1 until control flow adds sub-blocks
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

--- The block at index `i` (0 is the global block).
-- @tparam int i a block index in 0..num_blocks()-1
-- @treturn Block
-- @raise when `i` is out of range
-- @usage local b = main:block(0)
function Program:block(i)
  check_program(self, "Program:block")
  local n = self:num_blocks()
  if type(i) ~= "number" or i % 1 ~= 0 or i < 0 or i >= n then
    raise(string.format("Program:block: index %s outside 0..%d", tostring(i), n - 1))
  end
  return self._blocks[i] or wrap_block(self, i)
end

--- The global block (block 0), where layers declare data and parameters.
-- @treturn Block
-- @usage local w = main:global_block():var("fc_0.w_0")
function Program:global_block() return self:block(0) end
--- The block that layers append to now: the global block, or the sub-block
-- of a control-flow body being built.
-- @treturn Block
-- @usage print(main:current_block().idx)   -- 0 outside control flow
function Program:current_block() return self:block(self._current) end

--- Appends a child block and makes it current (control-flow layers call it;
-- pair it with `Program:rollback`).
-- @tparam[opt] int parent_idx the parent's index (default: the current block)
-- @treturn Block the new block
-- @usage
-- local sub = main:create_block()
-- -- ... append ops to sub ...
-- main:rollback()
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

--- Makes the parent of the current block current again.
-- @raise when the current block is the global block
-- @usage main:create_block(); main:rollback()
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
-- With `for_test`, backward, optimize and lr-schedule ops are dropped and
-- is_test attributes set (dropout off, batch_norm on its running statistics):
-- clone before `minimize` or after, the result evaluates.
-- @tparam[opt] table|bool opts `{for_test = false}`, or for_test itself
-- @treturn Program the copy
-- @raise on an unknown key in `opts` (with a suggestion)
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
--- The names of a Variable, a name, or a list of them (checked), as a list.
-- @function names_of
-- @param list Variable, string or a list of them
-- @tparam string who the caller, for errors
-- @tparam string what the argument's name, for errors
-- @treturn {string,...}
-- @usage local names = oar.framework.names_of({x, "y"}, "mylayer", "input")   -- {"x", "y"}
M.names_of = names_of

--- A new program holding only the ops that `targets` need.
-- @tparam Variable|string|{Variable|string,...} targets the variables to keep computing
-- @treturn Program
-- @usage local just_pred = main:prune({pred})
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

--- The program as ProgramDesc protobuf bytes (also `serialize_to_string`);
-- `Program.parse` reads them back, Paddle reads them too.
-- @treturn string
-- @usage io.open("model.pb", "wb"):write(main:serialize())
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

--- Checks the program's structure in C (every op's inputs declared, block
-- indices in range, ...).
-- @treturn bool true
-- @raise with the first problem found
-- @usage assert(main:validate())
function Program:validate()
  if C.oar_program_validate(self.handle) ~= 0 then raise("Program:validate: " .. lib.last_error()) end
  return true
end

--- Every Variable of every block, block by block.
-- @treturn {Variable,...}
-- @usage for _, v in ipairs(main:list_vars()) do print(v.name) end
function Program:list_vars()
  local out = {}
  for i = 0, self:num_blocks() - 1 do
    for _, v in ipairs(self:block(i):vars()) do out[#out + 1] = v end
  end
  return out
end

--- The parameters of the global block, in creation order.
-- @treturn {Parameter,...}
-- @usage for _, p in ipairs(main:all_parameters()) do print(p.name, p.trainable) end
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

--- Defaults and guards.
-- @section defaults

--- The default main program, where layers append their ops (created on first use).
-- @treturn Program
-- @usage local main = oar.default_main_program()
function M.default_main_program()
  if not main_program then main_program = Program.new() end
  return main_program
end

--- The default startup program, where layers append their parameters'
-- initializers; run it once before training.
-- @treturn Program
-- @usage exe:run(oar.default_startup_program())
function M.default_startup_program()
  if not startup_program then startup_program = Program.new() end
  return startup_program
end

--- Makes `p` the default main program.
-- @tparam Program p
-- @treturn Program the previous default
-- @usage local old = oar.switch_main_program(oar.Program())
function M.switch_main_program(p)
  if not is_program(p) then raise("switch_main_program: 'program' must be a Program, got " .. describe(p)) end
  local old = M.default_main_program()
  main_program = p
  return old
end

--- Makes `p` the default startup program.
-- @tparam Program p
-- @treturn Program the previous default
-- @usage local old = oar.switch_startup_program(oar.Program())
function M.switch_startup_program(p)
  if not is_program(p) then raise("switch_startup_program: 'program' must be a Program, got " .. describe(p)) end
  local old = M.default_startup_program()
  startup_program = p
  return old
end

--- Runs `fn()` with `main` (and `startup`) as the default programs; the old
-- defaults come back also when `fn` errors. Also `program_guard(main, fn)`.
-- @tparam Program main
-- @tparam[opt] Program startup
-- @tparam function fn
-- @return what `fn` returns
-- @usage
-- oar.program_guard(main, startup, function()
--   local x = layers.data{name = "x", shape = {4}}
--   local y = layers.fc{input = x, size = 2}
-- end)
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

--- Runs `fn()` with ops carrying `op_namescope` "/prefix/" (nested scopes
-- join: "/outer/inner/"), for the program's text and graph forms.
-- @tparam string prefix
-- @tparam function fn
-- @return what `fn` returns
-- @usage oar.name_scope("encoder", function() h = layers.fc{input = x, size = 8} end)
function M.name_scope(prefix, fn)
  if type(prefix) ~= "string" then raise("name_scope: 'prefix' must be a string") end
  if type(fn) ~= "function" then raise("name_scope: 'fn' must be a function") end
  local old = M._namescope
  M._namescope = (old or "/") .. prefix .. "/"
  return protected(function() M._namescope = old end, fn)
end


-- shared with the later parts
I.check_program = check_program
