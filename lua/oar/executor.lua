--- oar.executor: runs block 0 of a program against a scope (Fluid's
-- Executor). Feeds are checked against the program's data variables here,
-- before C sees them, so errors name the variable and both shapes.
-- @module oar.executor
local ffi = require("ffi")
local lib = require("oar.lib")
local framework = require("oar.framework")
local tensor = require("oar.tensor")
local scope_mod = require("oar.scope")
local place_mod = require("oar.place")
local argcheck = require("oar.argcheck")
local C = lib.C

local raise, describe = framework.raise, framework.describe

local M = {}

local Executor = {}
Executor.__index = Executor
M.ExecutorClass = Executor

--- An executor on a place (also `oar.Executor`). It caches the prepared
-- form of each program it runs.
-- @tparam[opt=oar.CPUPlace()] Place place oar.CPUPlace() or oar.CUDAPlace(n)
-- @treturn Executor
-- @raise when place is not a Place, or the place cannot be used (no CUDA, no GPU)
-- @usage
-- local exe = oar.Executor(oar.CPUPlace())
-- exe:run(oar.default_startup_program())
function M.Executor(place)
  place = place or place_mod.CPUPlace()
  if not place_mod.is_place(place) then
    raise("Executor: 'place' must be oar.CPUPlace() or oar.CUDAPlace(n), got " .. describe(place))
  end
  local out = ffi.new("oar_executor_t *[1]")
  if C.oar_executor_new(place.kind, place.device, out) ~= 0 then
    -- without CUDA, a driver or a GPU, C says why (naming the place once)
    local msg, prefix = lib.last_error(), tostring(place) .. ": "
    if msg:sub(1, #prefix) == prefix then msg = msg:sub(#prefix + 1) end
    raise("Executor(" .. tostring(place) .. "): " .. msg)
  end
  return setmetatable({ place = place, handle = ffi.gc(out[0], C.oar_executor_free) }, Executor)
end

--- Frees the C executor now (and its cached prepared programs); otherwise
-- the garbage collector does. Closing twice is fine.
-- @usage exe:close()
function Executor:close()
  if self.handle ~= nil then
    local h = self.handle
    self.handle = nil
    ffi.gc(h, nil)
    C.oar_executor_free(h)
  end
end

local function shape_matches(want, have)
  if #want ~= #have then return false end
  for i = 1, #want do
    if want[i] >= 0 and want[i] ~= have[i] then return false end
  end
  return true
end

local function strip_location(msg)
  return (tostring(msg):gsub("^[^:\n]+:%d+: ", ""))
end

-- The Tensor to feed as `name`, converted and checked against its var.
local function feed_tensor(block, name, value)
  if type(name) ~= "string" then raise("Executor:run: feed keys must be variable names, got " .. describe(name)) end
  local var = block:find_var_recursive(name)
  if not var then raise(string.format("Executor:run: feed '%s' is not a variable of the program", name)) end
  local want_dtype = var.dtype
  local t = value
  if not tensor.is_tensor(t) then
    if type(t) ~= "table" and type(t) ~= "number" and type(t) ~= "boolean" then
      raise(string.format("Executor:run: feed '%s' must be an oar Tensor or a nested table of numbers, got %s",
        name, describe(value)))
    end
    local ok, res = pcall(tensor, t, want_dtype or "float32")
    if not ok then raise(string.format("Executor:run: feed '%s': %s", name, strip_location(res))) end
    t = res
  end
  if want_dtype and t:dtype() ~= want_dtype then
    raise(string.format("Executor:run: feed '%s' expects dtype %s, got %s", name, want_dtype, t:dtype()))
  end
  local lod_level = var.lod_level or 0
  if lod_level >= 1 then
    local levels = #t:lod()
    if levels < lod_level then
      local rows = t:shape()[1] or 0
      raise(string.format("Executor:run: feed '%s' is a sequence variable (lod_level=%d) but its Tensor has %s; "
        .. "give it one with t:set_lod{{0, 2, 5}} (%s; here the offsets run from 0 to %d rows)",
        name, lod_level, levels == 0 and "no LoD" or (levels .. " LoD level" .. (levels == 1 and "" or "s")),
        lod_level == 1 and "one list of offsets: sequence i is rows [lod[i], lod[i+1])"
          or lod_level .. " lists of offsets, the outer levels indexing the inner ones",
        rows))
    end
  end
  if var.need_check_feed then
    local want, have = var.shape, t:shape()
    if not shape_matches(want, have) then
      raise(string.format("Executor:run: feed '%s' expects shape %s, got %s", name,
        framework.shape_text(want), framework.shape_text(have)))
    end
  end
  return t
end

local RUN_KEYS = "feed fetch_list scope program return_numpy use_program_cache"

--- Runs block 0 of a program.
-- Feeds are checked against the program's data variables first: dtype,
-- shape, and a LoD for sequence (lod_level >= 1) variables.
-- @tparam[opt] Program program default: the default main program (run{...} also works)
-- @tparam[opt] table opts keyword arguments:
-- @tparam[opt] table opts.feed `{name = Tensor or nested table}`
-- @tparam[opt] {Variable|string,...} opts.fetch_list what to return
-- @tparam[opt] Scope opts.scope default: the global scope
-- @param[opt] opts.return_numpy accepted for Fluid's code; results are always Tensors
-- @param[opt] opts.use_program_cache accepted for Fluid's code; prepared programs are always cached
-- @treturn {Tensor,...} the fetched values, in fetch_list order
-- @usage local out = exe:run(main, {feed = {x = xs}, fetch_list = {loss}})
-- print(out[1]:item())
function Executor:run(program, opts)
  if getmetatable(self) ~= Executor then raise("Executor:run: call it with ':' on an Executor") end
  if self.handle == nil then raise("Executor:run: the executor is closed") end
  if opts == nil and type(program) == "table" and not framework.is_program(program) then
    program, opts = nil, program
  end
  opts = opts or {}
  if type(opts) ~= "table" then raise("Executor:run: options must be a table, got " .. describe(opts)) end
  -- return_numpy and use_program_cache are Fluid's: accepted, and without
  -- effect (results are always Tensors; prepared programs are always cached)
  argcheck.keys("Executor:run", opts, RUN_KEYS)
  program = program or opts.program or framework.default_main_program()
  if not framework.is_program(program) then
    raise("Executor:run: 'program' must be a Program, got " .. describe(program))
  end
  local scope = opts.scope or scope_mod.global_scope()
  if not scope_mod.is_scope(scope) then raise("Executor:run: 'scope' must be an oar Scope, got " .. describe(scope)) end
  local block = program:global_block()

  local feed = opts.feed or {}
  if type(feed) ~= "table" then raise("Executor:run: 'feed' must be a table {name = value}, got " .. describe(feed)) end
  local names = {}
  for name in pairs(feed) do names[#names + 1] = name end
  table.sort(names, function(a, b) return tostring(a) < tostring(b) end)
  local tensors = {}
  for i, name in ipairs(names) do tensors[i] = feed_tensor(block, name, feed[name]) end
  local nfeed = #names
  local feed_names = lib.cstrings(names)
  local feed_ptrs = ffi.new("oar_tensor_t *[?]", nfeed > 0 and nfeed or 1)
  for i, t in ipairs(tensors) do feed_ptrs[i - 1] = t.handle end

  local fetch_list = opts.fetch_list or {}
  local fetch_names = framework.names_of(fetch_list, "Executor:run", "fetch_list")
  for _, name in ipairs(fetch_names) do
    if not block:find_var_recursive(name) then
      raise(string.format("Executor:run: fetch '%s' is not a variable of the program's global block", name))
    end
  end
  local nfetch = #fetch_names
  local fetch_arr = lib.cstrings(fetch_names)
  local fetched = ffi.new("oar_tensor_t *[?]", nfetch > 0 and nfetch or 1)

  local rc = C.oar_executor_run(self.handle, program.handle, 0, scope.handle, nfeed, feed_names, feed_ptrs,
    nfetch, fetch_arr, fetched)
  -- keep the feeds alive until C is done with them
  local _ = tensors
  if rc ~= 0 then raise(lib.last_error()) end
  local results = {}
  for i = 0, nfetch - 1 do
    if fetched[i] ~= nil then results[i + 1] = tensor.wrap(fetched[i]) end
  end
  return results
end

--- Asks the run in progress (from another coroutine or a signal handler)
-- to stop: it fails with "the run was cancelled". For Ctrl-C,
-- `oar.executor.sigint_cancels_runs(true)` makes SIGINT do this.
-- @usage exe:cancel()
function Executor:cancel()
  if self.handle ~= nil then C.oar_executor_cancel(self.handle) end
end

--- Makes SIGINT (Ctrl-C) cancel the runs in progress instead of ending the
-- process (the `oar` REPL turns it on).
-- @tparam bool on
-- @raise when the signal handler cannot be set
-- @usage oar.executor.sigint_cancels_runs(true)
function M.sigint_cancels_runs(on)
  if C.oar_sigint_cancels_runs(on and 1 or 0) ~= 0 then raise("sigint_cancels_runs: " .. lib.last_error()) end
end

function Executor:__tostring() return "Executor(" .. tostring(self.place) .. ")" end

require("oar.framework")._guard_methods(Executor, function(x) return getmetatable(x) == Executor end, "Executor", {})

return M
