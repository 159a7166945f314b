-- oar.framework: Program, Block, Variable, Parameter and Operator over C's
-- ProgramDesc (seeds/python_api.txt). The desc in C is the single source of
-- truth; Lua objects are views on it plus the construction-time facts that
-- the desc does not hold (a Parameter's trainable, regularizer, ...).
local ffi = require("ffi")
local lib = require("oar.lib")
local dtypes = require("oar.dtypes")
local unique_name = require("oar.unique_name")
local C = lib.C

local M = {}

-- ---- where the user is -----------------------------------------------------
-- Sources under this directory are oar's own; the first frame outside them is
-- the user's line that an error or an op_callstack should point at.
local own_prefix = debug.getinfo(1, "S").source:match("^(@.*oar/)framework%.lua$") or "@oar/"

local function is_own(source)
  return source:sub(1, #own_prefix) == own_prefix
end

local function frame_text(info)
  local src = info.source:sub(1, 1) == "@" and info.source:sub(2) or info.short_src
  return (src:gsub("^%./", "")) .. ":" .. info.currentline
end

-- Up to `max` "file:line" strings of the user's frames, innermost first.
function M.callstack(max)
  max = max or 4
  local frames = {}
  local level = 2
  while #frames < max do
    local info = debug.getinfo(level, "Sl")
    if not info then break end
    if info.what ~= "C" and info.currentline and info.currentline > 0 and not is_own(info.source) then
      frames[#frames + 1] = frame_text(info)
    end
    level = level + 1
  end
  return frames
end

-- "file:line" of the user's innermost frame, or nil.
function M.user_location()
  return M.callstack(1)[1]
end

-- Raises `msg` located at the user's line (not at oar's internals).
function M.raise(msg)
  local loc = M.user_location()
  if loc then error(loc .. ": " .. msg, 0) end
  error(msg, 0)
end
local raise = M.raise

-- Runs fn(...) and re-raises its error unchanged after `restore()`.
local function protected(restore, fn, ...)
  local res = { pcall(fn, ...) }
  restore()
  if not res[1] then error(res[2], 0) end
  return unpack(res, 2, table.maxn(res))
end
M.protected = protected

-- ---- constants ---------------------------------------------------------------
M.OpRole = { Forward = 0, Backward = 1, Optimize = 2, RPC = 4, Dist = 8, LRSched = 16, Loss = 256 }

local var_types = {
  lod_tensor = 7, selected_rows = 8, feed_minibatch = 9, fetch_list = 10, step_scopes = 11,
  lod_rank_table = 12, lod_tensor_array = 13, raw = 17,
}
local var_type_names = {}
for k, v in pairs(var_types) do var_type_names[v] = k end
M.VarType = var_types

local function var_type_enum(t, who)
  if t == nil then return var_types.lod_tensor end
  if type(t) == "number" and var_type_names[t] then return t end
  if type(t) == "string" and var_types[t:lower()] then return var_types[t:lower()] end
  raise(string.format("%s: unknown variable type %s (expected one of lod_tensor, " ..
    "lod_tensor_array, step_scopes, lod_rank_table, selected_rows, raw)", who, tostring(t)))
end

-- ---- classes -----------------------------------------------------------------
local Program = {}
local Block = {}
local Operator = {}
local Variable = {}      -- methods shared by Variable and Parameter
local VariableMT = {}    -- metatable of plain Variables
local ParameterMT = {}   -- metatable of Parameters
M.Program, M.Block, M.Operator, M.Variable = Program, Block, Operator, Variable
M.VariableMT, M.ParameterMT = VariableMT, ParameterMT

local function is_program(x) return getmetatable(x) == Program end
local function is_block(x) return getmetatable(x) == Block end
local function is_variable(x)
  local mt = getmetatable(x)
  return mt == VariableMT or mt == ParameterMT
end
local function is_parameter(x) return getmetatable(x) == ParameterMT end
local function is_operator(x) return getmetatable(x) == Operator end
M.is_program, M.is_block, M.is_variable = is_program, is_block, is_variable
M.is_parameter, M.is_operator = is_parameter, is_operator

-- a short list of plain values as "{1, 2, 3}", else nil
local function list_text(t)
  if getmetatable(t) ~= nil then return nil end
  local n = #t
  if n > 8 then return nil end
  local count = 0
  for _ in pairs(t) do count = count + 1 end
  if count ~= n then return nil end
  local parts = {}
  for i = 1, n do
    local v = t[i]
    if type(v) == "number" or type(v) == "boolean" then parts[i] = tostring(v)
    elseif type(v) == "string" and #v <= 40 then parts[i] = string.format("%q", v)
    else return nil end
  end
  return "{" .. table.concat(parts, ", ") .. "}"
end

local function describe(x)
  if is_variable(x) then return "Variable '" .. rawget(x, "name") .. "'" end
  if is_program(x) then return "Program" end
  if is_block(x) then return "Block" end
  if type(x) == "string" then return "string '" .. x .. "'" end
  if type(x) == "table" then return list_text(x) or "table" end
  return type(x) .. " " .. tostring(x)
end
M.describe = describe

local function shape_text(shape)
  if shape == nil then return "?" end
  return "[" .. table.concat(shape, ", ") .. "]"
end
M.shape_text = shape_text

-- dims from a Lua list, validated; `min` is the smallest dim allowed
local function dims_array(shape, who, min)
  if type(shape) ~= "table" then
    raise(string.format("%s: 'shape' must be a list of integers, got %s", who, describe(shape)))
  end
  local n = #shape
  local dims = ffi.new("int64_t[?]", n > 0 and n or 1)
  for i = 1, n do
    local d = shape[i]
    if type(d) ~= "number" or d % 1 ~= 0 or d < min or d >= 2 ^ 53 then
      raise(string.format("%s: 'shape' must hold integers >= %d, got %s at position %d",
        who, min, tostring(d), i))
    end
    dims[i - 1] = d
  end
  return dims, n
end

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

-- A program from ProgramDesc protobuf bytes (as written by serialize()).
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

-- Pushes a child of the current block and makes it current.
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

-- Returns to the parent of the current block.
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

-- A copy; with for_test (clone(true) or clone{for_test=true}) backward,
-- optimize and lr-schedule ops are dropped and is_test attrs set.
function Program:clone(opts)
  check_program(self, "Program:clone")
  local for_test = opts
  if type(opts) == "table" then for_test = opts.for_test end
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

-- A new program holding only what `targets` need.
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

-- ProgramDesc protobuf bytes.
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

-- every Variable of every block
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

-- switch_main_program(p) / switch_startup_program(p): p becomes the default;
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

-- program_guard(main, startup, fn) or program_guard(main, fn): fn() runs
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

-- name_scope(prefix, fn): ops created in fn carry op_namescope "/prefix/".
function M.name_scope(prefix, fn)
  if type(prefix) ~= "string" then raise("name_scope: 'prefix' must be a string") end
  if type(fn) ~= "function" then raise("name_scope: 'fn' must be a function") end
  local old = M._namescope
  M._namescope = (old or "/") .. prefix .. "/"
  return protected(function() M._namescope = old end, fn)
end

-- ==== Block ===================================================================
Block.__index = function(b, k)
  if k == "forward_block_idx" then return C.oar_block_forward_block_idx(b:_ptr()) end
  return Block[k]
end

function Block:_ptr()
  local p = C.oar_program_block(self.program.handle, self.idx)
  if p == nil then raise("block " .. self.idx .. " no longer exists") end
  return p
end

function Block:_set_forward_block_idx(idx)
  if C.oar_block_set_forward_block_idx(self:_ptr(), idx) ~= 0 then
    raise("Block:_set_forward_block_idx: " .. lib.last_error())
  end
end

function Block:parent()
  if self.parent_idx < 0 then return nil end
  return self.program:block(self.parent_idx)
end

function Block:__tostring()
  return string.format("Block(idx=%d, parent_idx=%d, %d vars, %d ops)", self.idx, self.parent_idx,
    C.oar_block_num_vars(self:_ptr()), C.oar_block_num_ops(self:_ptr()))
end

local function check_block(b, who)
  if not is_block(b) then raise(who .. ": call it with ':' on a Block") end
end

local function check_name(name, who)
  if type(name) ~= "string" or name == "" then
    raise(string.format("%s: 'name' must be a non-empty string, got %s", who, describe(name)))
  end
end

local function wrap_var(block, name)
  local v = setmetatable({ block = block, name = name }, VariableMT)
  block._vars[name] = v
  return v
end

-- the Variable named `name` of this block only, or nil
function Block:_find_var_local(name)
  local v = self._vars[name]
  if v then
    if C.oar_block_find_var(self:_ptr(), name) ~= nil then return v end
    self._vars[name] = nil   -- removed in C meanwhile
    return nil
  end
  if C.oar_block_find_var(self:_ptr(), name) == nil then return nil end
  return wrap_var(self, name)
end

-- The Variable `name` of this block or its ancestors; raises when absent.
function Block:var(name)
  check_block(self, "Block:var")
  check_name(name, "Block:var")
  local b = self
  while b do
    local v = b:_find_var_local(name)
    if v then return v end
    b = b:parent()
  end
  raise(string.format("Block:var: no variable '%s' in block %d%s", name, self.idx,
    self.parent_idx >= 0 and " or its ancestors" or ""))
end
Block._var_recursive = Block.var

-- this block or its ancestors, nil when absent
function Block:find_var_recursive(name)
  check_name(name, "Block:find_var_recursive")
  local b = self
  while b do
    local v = b:_find_var_local(name)
    if v then return v end
    b = b:parent()
  end
  return nil
end

-- whether this block itself declares `name` (Fluid's has_var: no ancestors)
function Block:has_var(name)
  check_block(self, "Block:has_var")
  check_name(name, "Block:has_var")
  return C.oar_block_find_var(self:_ptr(), name) ~= nil
end

function Block:has_var_recursive(name)
  return self:find_var_recursive(name) ~= nil
end

function Block:vars()
  check_block(self, "Block:vars")
  local ptr = self:_ptr()
  local out = {}
  for i = 0, C.oar_block_num_vars(ptr) - 1 do
    local name = ffi.string(C.oar_var_desc_name(C.oar_block_var_at(ptr, i)))
    out[#out + 1] = self._vars[name] or wrap_var(self, name)
  end
  return out
end

function Block:all_parameters()
  local out = {}
  for _, v in ipairs(self:vars()) do
    if is_parameter(v) then out[#out + 1] = v end
  end
  return out
end

local function wrap_op(block, ptr)
  local key = tostring(tonumber(ffi.cast("uintptr_t", ptr)))
  local op = block._ops[key]
  if op and op.handle == ptr then return op end
  op = setmetatable({ block = block, handle = ptr }, Operator)
  block._ops[key] = op
  return op
end

function Block:ops()
  check_block(self, "Block:ops")
  local ptr = self:_ptr()
  local out = {}
  for i = 0, C.oar_block_num_ops(ptr) - 1 do out[#out + 1] = wrap_op(self, C.oar_block_op_at(ptr, i)) end
  return out
end

function Block:num_ops() return C.oar_block_num_ops(self:_ptr()) end
function Block:op(i) -- 0-based like the desc
  local n = self:num_ops()
  if type(i) ~= "number" or i < 0 or i >= n then
    raise(string.format("Block:op: index %s outside 0..%d", tostring(i), n - 1))
  end
  return wrap_op(self, C.oar_block_op_at(self:_ptr(), i))
end

local function same_shape(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do
    if a[i] ~= b[i] and a[i] ~= -1 and b[i] ~= -1 then return false end
  end
  return true
end

-- create_var{name=, shape=, dtype="float32", lod_level=0, persistable=false,
-- stop_gradient=false, type="lod_tensor", need_check_feed=false}. An existing
-- var of this block with the same name is returned (after a consistency check).
function Block:create_var(spec)
  check_block(self, "Block:create_var")
  spec = spec or {}
  if type(spec) ~= "table" then raise("Block:create_var: expected a table of fields, got " .. describe(spec)) end
  local who = "Block:create_var"
  local name = spec.name
  if name == nil then name = unique_name.generate("_generated_var") end
  check_name(name, who)
  local dtype = spec.dtype ~= nil and dtypes.name(spec.dtype)
  if spec.dtype ~= nil and not dtype then
    raise(string.format("%s: unknown dtype %s for '%s'", who, tostring(spec.dtype), name))
  end
  local existing = self:_find_var_local(name)
  if existing then
    if spec.shape ~= nil then
      dims_array(spec.shape, who, -1)
      local have = existing.shape
      if #have > 0 and not same_shape(have, spec.shape) then
        raise(string.format("%s: variable '%s' exists with shape %s, asked for %s", who, name,
          shape_text(have), shape_text(spec.shape)))
      end
    end
    if dtype and existing.dtype and existing.dtype ~= dtype then
      raise(string.format("%s: variable '%s' exists with dtype %s, asked for %s", who, name,
        existing.dtype, dtype))
    end
    if spec.persistable then existing.persistable = true end
    if spec.stop_gradient ~= nil then existing.stop_gradient = spec.stop_gradient end
    return existing
  end
  local vtype = var_type_enum(spec.type, who)
  local dims, ndim
  if spec.shape ~= nil then dims, ndim = dims_array(spec.shape, who, -1) end
  if spec.lod_level ~= nil and (type(spec.lod_level) ~= "number" or spec.lod_level < 0 or spec.lod_level % 1 ~= 0) then
    raise(string.format("%s: 'lod_level' must be a non-negative integer, got %s", who, tostring(spec.lod_level)))
  end
  local out = ffi.new("oar_var_desc_t *[1]")
  local ptr = self:_ptr()
  if C.oar_block_var_new(ptr, name, out) ~= 0 then raise(who .. ": " .. lib.last_error()) end
  local d = out[0]
  local function ok(rc) if rc ~= 0 then C.oar_block_remove_var(ptr, name); raise(who .. ": " .. lib.last_error()) end end
  ok(C.oar_var_desc_set_type(d, vtype))
  if vtype == var_types.lod_tensor or vtype == var_types.lod_tensor_array or vtype == var_types.selected_rows then
    ok(C.oar_var_desc_set_dtype(d, dtypes.enum(dtype or "float32")))
  elseif dtype then
    ok(C.oar_var_desc_set_dtype(d, dtypes.enum(dtype)))
  end
  if dims then ok(C.oar_var_desc_set_shape(d, dims, ndim)) end
  if spec.lod_level then ok(C.oar_var_desc_set_lod_level(d, spec.lod_level)) end
  if spec.persistable then ok(C.oar_var_desc_set_persistable(d, true)) end
  if spec.stop_gradient then ok(C.oar_var_desc_set_stop_gradient(d, true)) end
  if spec.need_check_feed then ok(C.oar_var_desc_set_need_check_feed(d, true)) end
  return wrap_var(self, name)
end

local param_fields = { "trainable", "regularizer", "optimize_attr", "initializer", "gradient_clip",
                       "do_model_average" }

-- create_parameter{name=, shape=, dtype="float32", initializer=, trainable=true,
-- regularizer=, learning_rate=1, gradient_clip=}: a persistable Parameter in
-- the program's global block. The initializer appends its op to the global
-- block of *this* block's program (the startup program, for layers).
function Block:create_parameter(spec)
  check_block(self, "Block:create_parameter")
  local who = "Block:create_parameter"
  if type(spec) ~= "table" then raise(who .. ": expected a table of fields, got " .. describe(spec)) end
  local name = spec.name
  if name == nil then name = unique_name.generate("parameter") end
  check_name(name, who)
  dims_array(spec.shape, who, 1)
  if #spec.shape == 0 then raise(who .. ": parameter '" .. name .. "' needs a non-empty 'shape'") end
  local gb = self.program:global_block()
  local trainable = spec.trainable
  if trainable == nil then trainable = true end
  local v = gb:create_var{
    name = name, shape = spec.shape, dtype = spec.dtype or "float32", persistable = true,
    stop_gradient = not trainable, lod_level = spec.lod_level,
  }
  setmetatable(v, ParameterMT)
  rawset(v, "trainable", trainable)
  rawset(v, "regularizer", spec.regularizer)
  rawset(v, "optimize_attr", spec.optimize_attr or { learning_rate = spec.learning_rate or 1.0 })
  rawset(v, "gradient_clip", spec.gradient_clip)
  rawset(v, "do_model_average", spec.do_model_average)
  if spec.initializer ~= nil then
    local init = spec.initializer
    if type(init) ~= "table" and type(init) ~= "function" then
      raise(who .. ": 'initializer' must be an initializer, got " .. describe(init))
    end
    rawset(v, "initializer", init)
    init(v, gb)
  end
  return v
end

-- ---- building ops --------------------------------------------------------------
local A = {
  INT = 0, FLOAT = 1, STRING = 2, INTS = 3, FLOATS = 4, STRINGS = 5, BOOLEAN = 6,
  BOOLEANS = 7, BLOCK = 8, LONG = 9, BLOCKS = 10, LONGS = 11,
}
M.AttrType = A
local attr_type_names = {}
for k, v in pairs(A) do attr_type_names[v] = k end

local INT32_MAX = 2147483647

local function is_int(x) return type(x) == "number" and x % 1 == 0 end

-- attr type for a value when the op does not declare the attr
local function infer_attr_type(v)
  local t = type(v)
  if t == "boolean" then return A.BOOLEAN end
  if t == "number" then
    if is_int(v) then return (math.abs(v) <= INT32_MAX) and A.INT or A.LONG end
    return A.FLOAT
  end
  if t == "string" then return A.STRING end
  if is_block(v) then return A.BLOCK end
  if is_variable(v) or is_program(v) or is_operator(v) then return nil end
  if t == "table" then
    local first = v[1]
    if first == nil then return A.INTS end
    if type(first) == "boolean" then return A.BOOLEANS end
    if type(first) == "string" then return A.STRINGS end
    if is_block(first) then return A.BLOCKS end
    local all_int, big = true, false
    for _, x in ipairs(v) do
      if not is_int(x) then all_int = false end
      if is_int(x) and math.abs(x) > INT32_MAX then big = true end
    end
    if all_int then return big and A.LONGS or A.INTS end
    return A.FLOATS
  end
  return nil
end

local function block_idx_of(v, op_type, name, prog)
  if is_block(v) then
    if v.program ~= prog then
      raise(string.format("op '%s': attr '%s' is a block of another program", op_type, name))
    end
    return v.idx
  end
  if is_int(v) then return v end
  raise(string.format("op '%s': attr '%s' expects a Block, got %s", op_type, name, describe(v)))
end

-- Writes attr `name` = `value` onto a detached or attached op desc.
local function set_attr(op, op_type, name, value, prog)
  local t = C.oar_op_attr_type(op_type, name)
  if t < 0 then
    t = infer_attr_type(value)
    if t == nil then
      raise(string.format("op '%s': attr '%s' has an unsupported value %s", op_type, name, describe(value)))
    end
  end
  local function bad(expect)
    raise(string.format("op '%s': attr '%s' expects %s, got %s", op_type, name, expect, describe(value)))
  end
  local rc
  if t == A.INT or t == A.LONG then
    local v = value
    if type(v) == "boolean" then v = v and 1 or 0 end
    if type(v) == "string" and dtypes.name(v) then v = dtypes.enum(v) end  -- dtype attrs
    if not is_int(v) then bad("an integer") end
    if t == A.INT then
      if math.abs(v) > INT32_MAX then bad("a 32-bit integer") end
      rc = C.oar_op_desc_set_attr_int(op, name, v)
    else
      rc = C.oar_op_desc_set_attr_long(op, name, ffi.new("int64_t", v))
    end
  elseif t == A.FLOAT then
    if type(value) ~= "number" then bad("a number") end
    rc = C.oar_op_desc_set_attr_float(op, name, value)
  elseif t == A.BOOLEAN then
    local v = value
    if type(v) == "number" and (v == 0 or v == 1) then v = v == 1 end
    if type(v) ~= "boolean" then bad("a boolean") end
    rc = C.oar_op_desc_set_attr_bool(op, name, v)
  elseif t == A.STRING then
    if type(value) ~= "string" then bad("a string") end
    rc = C.oar_op_desc_set_attr_string(op, name, value)
  elseif t == A.BLOCK then
    rc = C.oar_op_desc_set_attr_block(op, name, block_idx_of(value, op_type, name, prog))
  else
    local list = value
    if type(list) ~= "table" or is_block(list) or is_variable(list) then list = { list } end
    local n = #list
    if t == A.INTS or t == A.LONGS or t == A.BLOCKS then
      local arr = ffi.new((t == A.LONGS and "int64_t" or "int32_t") .. "[?]", n > 0 and n or 1)
      for i = 1, n do
        local x = list[i]
        if t == A.BLOCKS then x = block_idx_of(x, op_type, name, prog) end
        if type(x) == "boolean" then x = x and 1 or 0 end
        if type(x) == "string" and dtypes.name(x) then x = dtypes.enum(x) end
        if not is_int(x) or (t ~= A.LONGS and math.abs(x) > INT32_MAX) then
          bad(string.format("a list of %sintegers (item %d is %s)", t == A.LONGS and "" or "32-bit ", i, describe(x)))
        end
        arr[i - 1] = x
      end
      if t == A.INTS then rc = C.oar_op_desc_set_attr_ints(op, name, arr, n)
      elseif t == A.LONGS then rc = C.oar_op_desc_set_attr_longs(op, name, arr, n)
      else rc = C.oar_op_desc_set_attr_blocks(op, name, arr, n) end
    elseif t == A.FLOATS then
      local arr = ffi.new("float[?]", n > 0 and n or 1)
      for i = 1, n do
        if type(list[i]) ~= "number" then bad("a list of numbers") end
        arr[i - 1] = list[i]
      end
      rc = C.oar_op_desc_set_attr_floats(op, name, arr, n)
    elseif t == A.BOOLEANS then
      local arr = ffi.new("bool[?]", n > 0 and n or 1)
      for i = 1, n do
        if type(list[i]) ~= "boolean" then bad("a list of booleans") end
        arr[i - 1] = list[i]
      end
      rc = C.oar_op_desc_set_attr_bools(op, name, arr, n)
    elseif t == A.STRINGS then
      for i = 1, n do
        if type(list[i]) ~= "string" then bad("a list of strings") end
      end
      local arr = lib.cstrings(list)
      rc = C.oar_op_desc_set_attr_strings(op, name, arr, n)
    else
      raise(string.format("op '%s': attr '%s' has unsupported type %s", op_type, name, tostring(t)))
    end
  end
  if rc ~= 0 then raise(string.format("op '%s': attr '%s': %s", op_type, name, lib.last_error())) end
end
M._set_attr = set_attr

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  return keys
end

-- names of a slot's arguments: a Variable, a name, or a list of them
local function slot_names(args, op_type, slot, kind, prog)
  if is_variable(args) or type(args) == "string" then args = { args } end
  if type(args) ~= "table" then
    raise(string.format("op '%s': %s '%s' must be a Variable, a name or a list of them, got %s",
      op_type, kind, slot, describe(args)))
  end
  local names = {}
  for i = 1, table.maxn(args) do
    local a = args[i]
    if is_variable(a) then
      if a.block.program ~= prog then
        raise(string.format("op '%s': %s '%s' variable '%s' belongs to another program",
          op_type, kind, slot, rawget(a, "name")))
      end
      names[#names + 1] = rawget(a, "name")
    elseif type(a) == "string" then
      names[#names + 1] = a
    else
      raise(string.format("op '%s': %s '%s' item %d must be a Variable or a name, got %s",
        op_type, kind, slot, i, describe(a)))
    end
  end
  return names
end

local function fill_op(op, spec, prog)
  local op_type = spec.type
  for _, kind in ipairs({ "inputs", "outputs" }) do
    local slots = spec[kind]
    if slots ~= nil then
      if type(slots) ~= "table" or is_variable(slots) then
        raise(string.format("op '%s': '%s' must be a table {Slot = vars}, got %s", op_type, kind, describe(slots)))
      end
      for _, slot in ipairs(sorted_keys(slots)) do
        if type(slot) ~= "string" then
          raise(string.format("op '%s': %s slot names must be strings, got %s", op_type, kind, describe(slot)))
        end
        local names = slot_names(slots[slot], op_type, slot, kind == "inputs" and "input" or "output", prog)
        local arr, n = lib.cstrings(names)
        local setter = kind == "inputs" and C.oar_op_desc_set_input or C.oar_op_desc_set_output
        if setter(op, slot, arr, n) ~= 0 then raise(string.format("op '%s': %s", op_type, lib.last_error())) end
      end
    end
  end
  local attrs = spec.attrs or {}
  if type(attrs) ~= "table" then
    raise(string.format("op '%s': 'attrs' must be a table, got %s", op_type, describe(attrs)))
  end
  for _, name in ipairs(sorted_keys(attrs)) do
    if type(name) ~= "string" then raise(string.format("op '%s': attr names must be strings", op_type)) end
    set_attr(op, op_type, name, attrs[name], prog)
  end
  if attrs.op_role == nil then set_attr(op, op_type, "op_role", prog._role, prog) end
  if attrs.op_role_var == nil and prog._role_vars then
    set_attr(op, op_type, "op_role_var", prog._role_vars, prog)
  end
  if attrs.op_namescope == nil and M._namescope then
    set_attr(op, op_type, "op_namescope", M._namescope, prog)
  end
  if attrs.op_callstack == nil then
    local cs = M.callstack(4)
    if #cs > 0 then set_attr(op, op_type, "op_callstack", cs, prog) end
  end
end

-- Builds, validates and inserts an op at `pos` (-1 appends); the op's desc is
-- freed on any failure so nothing leaks and the block stays unchanged.
function Block:_insert_op(pos, spec, who)
  check_block(self, who)
  if type(spec) ~= "table" then raise(who .. ": expected {type=, inputs=, outputs=, attrs=}, got " .. describe(spec)) end
  local op_type = spec.type
  if type(op_type) ~= "string" or op_type == "" then
    raise(who .. ": 'type' must be an op type name, got " .. describe(op_type))
  end
  if not C.oar_op_is_registered(op_type) then
    raise(string.format("%s: unknown op type '%s'", who, op_type))
  end
  local out = ffi.new("oar_op_desc_t *[1]")
  if C.oar_op_desc_new(op_type, out) ~= 0 then raise(who .. ": " .. lib.last_error()) end
  local op = out[0]
  local ok, err = pcall(fill_op, op, spec, self.program)
  if not ok then
    C.oar_op_desc_free(op)
    error(err, 0)
  end
  if C.oar_block_insert_op(self:_ptr(), pos, op) ~= 0 then
    local msg = lib.last_error()
    C.oar_op_desc_free(op)
    raise(msg)
  end
  return wrap_op(self, op)
end

-- append_op{type=, inputs={Slot={var,...}}, outputs={...}, attrs={...}}
function Block:append_op(spec) return self:_insert_op(-1, spec, "Block:append_op") end
function Block:prepend_op(spec) return self:_insert_op(0, spec, "Block:prepend_op") end
Block._prepend_op = Block.prepend_op

function Block:_remove_op(i)
  local ptr = type(i) == "number" and i >= 0 and i < self:num_ops() and C.oar_block_op_at(self:_ptr(), i) or nil
  if C.oar_block_remove_op(self:_ptr(), i) ~= 0 then raise("Block:_remove_op: " .. lib.last_error()) end
  for k, op in pairs(self._ops) do
    if rawget(op, "handle") == ptr then   -- freed: every later use of the Operator is refused
      op._removed = true
      op.handle = nil
    end
    self._ops[k] = nil
  end
end

function Block:_remove_var(name)
  check_name(name, "Block:_remove_var")
  if C.oar_block_remove_var(self:_ptr(), name) ~= 0 then raise("Block:_remove_var: " .. lib.last_error()) end
  self._vars[name] = nil
end

-- ==== Variable =================================================================
function Variable:_desc()
  local d = C.oar_block_find_var(self.block:_ptr(), rawget(self, "name"))
  if d == nil then
    raise(string.format("variable '%s' no longer exists in block %d", rawget(self, "name"), self.block.idx))
  end
  return d
end

local getters = {
  shape = function(v)
    local d = v:_desc()
    local n = C.oar_var_desc_ndim(d)
    local s = {}
    if n <= 0 then return s end
    local dims = C.oar_var_desc_dims(d)
    for i = 0, n - 1 do s[i + 1] = tonumber(dims[i]) end
    return s
  end,
  dtype = function(v) return dtypes.name(C.oar_var_desc_dtype(v:_desc())) end,
  lod_level = function(v) return C.oar_var_desc_lod_level(v:_desc()) end,
  persistable = function(v) return C.oar_var_desc_persistable(v:_desc()) == true end,
  stop_gradient = function(v) return C.oar_var_desc_stop_gradient(v:_desc()) == true end,
  need_check_feed = function(v) return C.oar_var_desc_need_check_feed(v:_desc()) == true end,
  type = function(v)
    local t = C.oar_var_desc_type(v:_desc())
    return var_type_names[t] or t
  end,
  desc = function(v) return v:_desc() end,
}

local function setter_rc(v, rc, field)
  if rc ~= 0 then raise(string.format("setting %s of '%s': %s", field, rawget(v, "name"), lib.last_error())) end
end

local setters = {
  stop_gradient = function(v, x)
    if type(x) ~= "boolean" then raise("Variable.stop_gradient must be a boolean, got " .. describe(x)) end
    setter_rc(v, C.oar_var_desc_set_stop_gradient(v:_desc(), x), "stop_gradient")
  end,
  persistable = function(v, x)
    if type(x) ~= "boolean" then raise("Variable.persistable must be a boolean, got " .. describe(x)) end
    setter_rc(v, C.oar_var_desc_set_persistable(v:_desc(), x), "persistable")
  end,
  need_check_feed = function(v, x)
    if type(x) ~= "boolean" then raise("Variable.need_check_feed must be a boolean, got " .. describe(x)) end
    setter_rc(v, C.oar_var_desc_set_need_check_feed(v:_desc(), x), "need_check_feed")
  end,
  lod_level = function(v, x)
    if not is_int(x) or x < 0 then raise("Variable.lod_level must be a non-negative integer, got " .. describe(x)) end
    setter_rc(v, C.oar_var_desc_set_lod_level(v:_desc(), x), "lod_level")
  end,
  shape = function(v, x)
    local dims, n = dims_array(x, "Variable.shape", -1)
    setter_rc(v, C.oar_var_desc_set_shape(v:_desc(), dims, n), "shape")
  end,
  dtype = function(v, x)
    setter_rc(v, C.oar_var_desc_set_dtype(v:_desc(), dtypes.enum(x, "Variable.dtype")), "dtype")
  end,
  type = function(v, x)
    setter_rc(v, C.oar_var_desc_set_type(v:_desc(), var_type_enum(x, "Variable.type")), "type")
  end,
  name = function() raise("Variable.name cannot be changed") end,
  block = function() raise("Variable.block cannot be changed") end,
}

local function var_index(v, k)
  local g = getters[k]
  if g then return g(v) end
  return Variable[k]
end

local function var_newindex(v, k, x)
  local s = setters[k]
  if s then return s(v, x) end
  rawset(v, k, x)
end

for _, mt in ipairs({ VariableMT, ParameterMT }) do
  mt.__index = var_index
  mt.__newindex = var_newindex
end

function Variable:grad_name() return rawget(self, "name") .. "@GRAD" end

function Variable:to_string()
  local kind = is_parameter(self) and "Parameter" or "Variable"
  local s = string.format("%s(name=%s, shape=%s, dtype=%s", kind, rawget(self, "name"),
    shape_text(self.shape), tostring(self.dtype))
  if self.lod_level > 0 then s = s .. ", lod_level=" .. self.lod_level end
  if self.persistable then s = s .. ", persistable" end
  if self.stop_gradient then s = s .. ", stop_gradient" end
  if is_parameter(self) and not rawget(self, "trainable") then s = s .. ", not trainable" end
  return s .. ")"
end
VariableMT.__tostring = Variable.to_string
ParameterMT.__tostring = Variable.to_string

-- The same variable declared in `block` (another program's global block, say).
function Variable:_clone_into(block)
  return block:create_var{
    name = rawget(self, "name"), shape = self.shape, dtype = self.dtype, type = self.type,
    lod_level = self.lod_level, persistable = self.persistable,
  }
end

-- ==== Operator ================================================================
local op_getters = {
  type = function(op) return ffi.string(C.oar_op_desc_type(op.handle)) end,
  idx = function(op)
    local ptr = op.block:_ptr()
    for i = 0, C.oar_block_num_ops(ptr) - 1 do
      if C.oar_block_op_at(ptr, i) == op.handle then return i end
    end
    return nil
  end,
}

op_getters.handle = function(op)   -- only reached once Block:_remove_op dropped the handle
  if rawget(op, "_removed") then raise("Operator: the op was removed from its block (Block:_remove_op)") end
end

Operator.__index = function(op, k)
  local g = op_getters[k]
  if g then return g(op) end
  return Operator[k]
end

local function check_op(op, who)
  if not is_operator(op) then raise("Operator:" .. who .. ": call it with ':' on an Operator") end
  if rawget(op, "_removed") then raise("Operator:" .. who .. ": the op was removed from its block (Block:_remove_op)") end
end

local function slot_args(op, slot, count_fn, arg_fn)
  local n = count_fn(op.handle, slot)
  local out = {}
  for i = 0, n - 1 do out[#out + 1] = ffi.string(arg_fn(op.handle, slot, i)) end
  return out
end

-- names in input slot `slot` ({} when the slot is absent)
function Operator:input(slot)
  check_op(self, "input")
  check_name(slot, "Operator:input")
  return slot_args(self, slot, C.oar_op_desc_input_count, C.oar_op_desc_input_arg)
end

function Operator:output(slot)
  check_op(self, "output")
  check_name(slot, "Operator:output")
  return slot_args(self, slot, C.oar_op_desc_output_count, C.oar_op_desc_output_arg)
end

-- the strings at_fn(handle, i) for i below count_fn(handle)
local function indexed_strings(handle, count_fn, at_fn)
  local out = {}
  for i = 0, count_fn(handle) - 1 do out[#out + 1] = ffi.string(at_fn(handle, i)) end
  return out
end

-- slot names
function Operator:input_names()
  check_op(self, "input_names")
  return indexed_strings(self.handle, C.oar_op_desc_num_inputs, C.oar_op_desc_input_slot)
end

function Operator:output_names()
  check_op(self, "output_names")
  return indexed_strings(self.handle, C.oar_op_desc_num_outputs, C.oar_op_desc_output_slot)
end

-- the names of every slot op:<slots_method>() lists, through op:<args_method>(slot)
local function args_of_slots(op, slots_method, args_method)
  local out = {}
  for _, slot in ipairs(op[slots_method](op)) do
    for _, n in ipairs(op[args_method](op, slot)) do out[#out + 1] = n end
  end
  return out
end

-- every variable name read / written, slot by slot
function Operator:input_arg_names()
  return args_of_slots(self, "input_names", "input")
end

function Operator:output_arg_names()
  return args_of_slots(self, "output_names", "output")
end

function Operator:attr_names()
  check_op(self, "attr_names")
  return indexed_strings(self.handle, C.oar_op_desc_num_attrs, C.oar_op_desc_attr_name)
end

function Operator:has_attr(name)
  check_name(name, "Operator:has_attr")
  return C.oar_op_desc_attr_type(self.handle, name) >= 0
end

function Operator:attr_type(name)
  check_name(name, "Operator:attr_type")
  local t = C.oar_op_desc_attr_type(self.handle, name)
  return attr_type_names[t]
end

-- Raw attr reads; BLOCK attrs come back as the block index.
local function read_attr(h, name, t)
  if t == A.INT then
    local v = ffi.new("int32_t[1]"); C.oar_op_desc_get_attr_int(h, name, v); return v[0]
  elseif t == A.LONG then
    local v = ffi.new("int64_t[1]"); C.oar_op_desc_get_attr_long(h, name, v); return tonumber(v[0])
  elseif t == A.FLOAT then
    local v = ffi.new("float[1]"); C.oar_op_desc_get_attr_float(h, name, v); return v[0]
  elseif t == A.BOOLEAN then
    local v = ffi.new("bool[1]"); C.oar_op_desc_get_attr_bool(h, name, v); return v[0] == true
  elseif t == A.STRING then
    local s = C.oar_op_desc_get_attr_string(h, name)
    return s ~= nil and ffi.string(s) or ""
  elseif t == A.BLOCK then
    local v = ffi.new("int32_t[1]"); C.oar_op_desc_get_attr_int(h, name, v); return v[0]
  end
  local data = ffi.new("const void *[1]")
  local n = ffi.new("int[1]")
  if C.oar_op_desc_get_attr_list(h, name, data, n) ~= 0 then return nil end
  local out = {}
  if t == A.STRINGS then
    for i = 0, n[0] - 1 do
      local s = C.oar_op_desc_get_attr_strings_at(h, name, i)
      out[i + 1] = s ~= nil and ffi.string(s) or ""
    end
    return out
  end
  local ctype = (t == A.INTS or t == A.BLOCKS) and "const int32_t *" or t == A.LONGS and "const int64_t *"
    or t == A.FLOATS and "const float *" or t == A.BOOLEANS and "const bool *"
  if not ctype then return nil end
  local p = ffi.cast(ctype, data[0])
  for i = 0, n[0] - 1 do
    local x = p[i]
    if t == A.BOOLEANS then out[i + 1] = x == true else out[i + 1] = tonumber(x) end
  end
  return out
end

local function block_attr_value(h, name)
  local data = ffi.new("const void *[1]")
  local n = ffi.new("int[1]")
  -- the desc stores BLOCK attrs like an INT; try the int getter first
  local v = ffi.new("int32_t[1]")
  if C.oar_op_desc_get_attr_int(h, name, v) == 0 then return v[0] end
  if C.oar_op_desc_get_attr_list(h, name, data, n) == 0 and n[0] > 0 then
    return ffi.cast("const int32_t *", data[0])[0]
  end
  return -1
end

-- The value of attr `name` (nil when absent). BLOCK attrs give the Block,
-- BLOCKS a list of Blocks.
function Operator:attr(name)
  check_op(self, "attr")
  check_name(name, "Operator:attr")
  local t = C.oar_op_desc_attr_type(self.handle, name)
  if t < 0 then return nil end
  if t == A.BLOCK then
    local idx = block_attr_value(self.handle, name)
    if idx < 0 then return nil end
    return self.block.program:block(idx)
  end
  local v = read_attr(self.handle, name, t)
  if t == A.BLOCKS and v then
    for i, idx in ipairs(v) do v[i] = self.block.program:block(idx) end
  end
  return v
end

function Operator:block_attr_id(name)
  check_name(name, "Operator:block_attr_id")
  return block_attr_value(self.handle, name)
end

function Operator:set_attr(name, value)
  check_op(self, "set_attr")
  check_name(name, "Operator:set_attr")
  set_attr(self.handle, self.type, name, value, self.block.program)
end
Operator._set_attr = Operator.set_attr

function Operator:_rename_input(from, to)
  if C.oar_op_desc_rename_input(self.handle, from, to) ~= 0 then raise("Operator:_rename_input: " .. lib.last_error()) end
end

function Operator:_rename_output(from, to)
  if C.oar_op_desc_rename_output(self.handle, from, to) ~= 0 then raise("Operator:_rename_output: " .. lib.last_error()) end
end

-- ==== text forms ===================================================================
local function attr_text(op, name)
  local t = C.oar_op_desc_attr_type(op.handle, name)
  local v
  if t == A.BLOCK then return "block[" .. block_attr_value(op.handle, name) .. "]" end
  v = read_attr(op.handle, name, t)
  local function one(x)
    if type(x) == "string" then return string.format("%q", x) end
    if type(x) == "number" then
      if x == math.floor(x) and math.abs(x) < 1e15 then return string.format("%d", x) end
      return string.format("%.6g", x)
    end
    return tostring(x)
  end
  if type(v) == "table" then
    local parts = {}
    for i, x in ipairs(v) do parts[i] = one(x) end
    return "[" .. table.concat(parts, ", ") .. "]"
  end
  return one(v)
end

local function slots_text(op, names_fn, args_fn)
  local parts = {}
  for _, slot in ipairs(names_fn(op)) do
    parts[#parts + 1] = slot .. "=[" .. table.concat(args_fn(op, slot), ", ") .. "]"
  end
  return table.concat(parts, ", ")
end

function Operator:to_string()
  local attrs = {}
  local names = self:attr_names()
  table.sort(names)
  local where
  for _, name in ipairs(names) do
    if name == "op_callstack" then
      local cs = self:attr(name)
      where = cs and cs[1]
    else
      attrs[#attrs + 1] = name .. "=" .. attr_text(self, name)
    end
  end
  local s = string.format("%s(%s) -> (%s)", self.type, slots_text(self, self.input_names, self.input),
    slots_text(self, self.output_names, self.output))
  if #attrs > 0 then s = s .. " {" .. table.concat(attrs, ", ") .. "}" end
  if where then s = s .. "  # " .. where end
  return s
end
Operator.__tostring = Operator.to_string

local function var_line(v)
  local parts = { string.format("%s : %s %s", rawget(v, "name"), tostring(v.dtype), shape_text(v.shape)) }
  if v.type ~= "lod_tensor" then parts[#parts + 1] = tostring(v.type) end
  if v.lod_level > 0 then parts[#parts + 1] = "lod_level=" .. v.lod_level end
  if v.persistable then parts[#parts + 1] = "persistable" end
  if v.stop_gradient then parts[#parts + 1] = "stop_gradient" end
  return table.concat(parts, " ")
end

-- The listing depends on the desc only, so a parsed copy lists the same.
function Block:to_string()
  local lines = { string.format("block %d (parent %d):", self.idx, self.parent_idx) }
  local fwd = self.forward_block_idx
  if fwd and fwd >= 0 then lines[1] = lines[1]:sub(1, -2) .. ", forward block " .. fwd .. ":" end
  for _, v in ipairs(self:vars()) do lines[#lines + 1] = "  var " .. var_line(v) end
  for i, op in ipairs(self:ops()) do lines[#lines + 1] = string.format("  op #%d %s", i - 1, op:to_string()) end
  return table.concat(lines, "\n")
end

function Program:to_string()
  local parts = { string.format("Program (%d blocks)", self:num_blocks()) }
  for i = 0, self:num_blocks() - 1 do parts[#parts + 1] = self:block(i):to_string() end
  return table.concat(parts, "\n")
end
Program.__tostring = Program.to_string

local function dot_quote(s)
  return '"' .. s:gsub("\\", "\\\\"):gsub('"', '\\"') .. '"'
end

-- Graphviz text: one cluster per block, ops as boxes, vars as ellipses,
-- edges var -> op for inputs and op -> var for outputs.
function Program:to_dot()
  check_program(self, "Program:to_dot")
  local lines = { "digraph program {", "  rankdir=TB;", "  node [fontsize=10];" }
  local edges = {}
  local declared = {}   -- "b<idx>/<name>" -> node id
  local function var_node(block, name)
    local b = block
    while b do
      if b:has_var(name) then return "b" .. b.idx .. "_var_" .. name end
      b = b:parent()
    end
    return "b" .. block.idx .. "_var_" .. name
  end
  for i = 0, self:num_blocks() - 1 do
    local b = self:block(i)
    lines[#lines + 1] = string.format("  subgraph cluster_block_%d {", i)
    lines[#lines + 1] = string.format("    label=%s;", dot_quote(string.format("block %d (parent %d)", i, b.parent_idx)))
    for _, v in ipairs(b:vars()) do
      local id = "b" .. i .. "_var_" .. rawget(v, "name")
      declared[id] = true
      local label = string.format("%s\n%s %s", rawget(v, "name"), shape_text(v.shape), tostring(v.dtype))
      lines[#lines + 1] = string.format("    %s [shape=ellipse, label=%s%s];", dot_quote(id), dot_quote(label),
        v.persistable and ", style=filled, fillcolor=lightgrey" or "")
    end
    for j, op in ipairs(b:ops()) do
      local id = string.format("b%d_op_%d", i, j - 1)
      lines[#lines + 1] = string.format("    %s [shape=box, label=%s];", dot_quote(id), dot_quote(op.type))
      for _, name in ipairs(op:input_arg_names()) do
        local vid = var_node(b, name)
        edges[#edges + 1] = { vid, id, vid, b }
      end
      for _, name in ipairs(op:output_arg_names()) do
        local vid = var_node(b, name)
        edges[#edges + 1] = { id, vid, vid, b }
      end
    end
    lines[#lines + 1] = "  }"
  end
  for _, e in ipairs(edges) do
    if not declared[e[3]] then   -- an undeclared name (e.g. @EMPTY@): a plain node
      declared[e[3]] = true
      lines[#lines + 1] = string.format("  %s [shape=plaintext];", dot_quote(e[3]))
    end
    lines[#lines + 1] = string.format("  %s -> %s;", dot_quote(e[1]), dot_quote(e[2]))
  end
  lines[#lines + 1] = "}"
  return table.concat(lines, "\n") .. "\n"
end

-- ==== methods called on the wrong thing ==============================================
-- prog.block(3) or Block.var("x") (a '.' for a ':') would fail somewhere
-- inside with a message about oar's internals, or hand C a bad handle; every
-- public method checks its receiver first.
local function guard_methods(class, test, what, static)
  for name, f in pairs(class) do
    if type(f) == "function" and not name:match("^_") and not static[name] then
      class[name] = function(self, ...)
        if not test(self) then
          raise(string.format("%s:%s: call it with ':' on %s %s, got %s", what, name,
            what:match("^[AEIOU]") and "an" or "a", what, self == nil and "nil" or describe(self)))
        end
        return f(self, ...)
      end
    end
  end
end
guard_methods(Program, is_program, "Program", { new = true, parse = true, parse_from_string = true })
guard_methods(Block, is_block, "Block", {})
guard_methods(Operator, is_operator, "Operator", {})
guard_methods(Variable, is_variable, "Variable", {})
M._guard_methods = guard_methods

return M
