--- oar.io_paddle: where a model's files are and what they hold, for
-- load_inference_model. One path names any of PaddlePaddle's layouts:
--   * a Fluid 1.x directory: `__model__`, with `__params__` or one file per
--     parameter;
--   * a Paddle 2.x prefix: `path.pdmodel` + `path.pdiparams`;
--   * Paddle 3's default export: `path.json` (PIR) + `path.pdiparams`;
--   * a model file itself (`dir/model.pdmodel`, `dir/model.json`).
-- The model file is read by content (a ProgramDesc protobuf or PIR JSON,
-- src/pir_json.c), never by its extension alone.
-- @module oar.io_paddle
local ffi = require("ffi")
local lib = require("oar.lib")
local framework = require("oar.framework")
local C = lib.C

local raise = framework.raise

local M = {}

local function join(dir, name)
  dir = dir:gsub("/+$", "")
  if dir == "" then return "/" .. name end
  return dir .. "/" .. name
end

pcall(ffi.cdef, [[
void *oar_io_paddle_opendir(const char *name) __asm__("opendir");
int oar_io_paddle_closedir(void *dir) __asm__("closedir");
int oar_io_paddle_access(const char *name, int mode) __asm__("access");
]])

local function is_dir(path)
  local d = ffi.C.oar_io_paddle_opendir(path)
  if d == nil then return false end
  ffi.C.oar_io_paddle_closedir(d)
  return true
end

-- true when path is something to load: a regular file (never opened here,
-- so a FIFO cannot block); anything else that is there (a FIFO, a device)
-- counts as present, and the read that follows refuses it by name
local function exists(path)
  if lib.C.oar_file_check_regular(path) == 0 then return true end
  -- something else that is there (access(2) never blocks on a FIFO)
  return ffi.C.oar_io_paddle_access(path, 0) == 0 and not is_dir(path)
end

local function split(path)
  local dir, base = path:match("^(.*)/([^/]+)$")
  if not dir then return ".", path end
  if dir == "" then dir = "/" end
  return dir, base
end

--- Finds a model's files from one path in any of the layouts above.
-- @tparam string path a directory, a prefix or a model file
-- @tparam[opt] string model_filename the model file's name in directory `path` (Fluid's argument)
-- @tparam[opt] string params_filename the combined parameters file's name (with model_filename)
-- @tparam string who the function to name in errors
-- @treturn string the model file's path
-- @treturn string the directory of the parameters
-- @treturn ?string the combined parameters file's name in it; nil: one file per parameter
-- @raise when no model is found at path
-- @usage local model, dir, params = oar.io_paddle.resolve("inference/mnist", nil, nil, "load")
function M.resolve(path, model_filename, params_filename, who)
  if model_filename then
    return join(path, model_filename), path, params_filename
  end
  local fluid = join(path, "__model__")
  if exists(fluid) then
    if params_filename == nil and exists(join(path, "__params__")) then params_filename = "__params__" end
    return fluid, path, params_filename
  end
  local stem
  for _, ext in ipairs({ ".pdmodel", ".json" }) do
    if exists(path .. ext) then
      stem = path
      local dir, base = split(path .. ext)
      local pdir, pbase = split(path .. ".pdiparams")
      if params_filename then return join(dir, base), dir, params_filename end
      if exists(path .. ".pdiparams") then return join(dir, base), pdir, pbase end
      return join(dir, base), dir, nil
    end
  end
  -- the model file named directly
  if not stem and exists(path) then
    local dir, base = split(path)
    if params_filename then return path, dir, params_filename end
    local prefix = path:match("^(.*)%.[^./]+$")
    if prefix and exists(prefix .. ".pdiparams") then
      local pdir, pbase = split(prefix .. ".pdiparams")
      return path, pdir, pbase
    end
    return join(dir, base), dir, nil
  end
  raise(string.format("%s: cannot open '%s': no such file (no model at '%s': also looked for %s.pdmodel, " ..
    "%s.json and the file itself)", who, fluid, path, path, path))
end

--- The Program in `bytes`: a ProgramDesc protobuf, or PIR JSON translated
-- to one (told apart by content).
-- @tparam string bytes the model file's contents
-- @tparam string where the file, for errors
-- @tparam string who the function to name in errors
-- @treturn Program
-- @raise when the bytes cannot be parsed as either
-- @usage
-- local f = assert(io.open("model.pdmodel", "rb"))
-- local prog = oar.io_paddle.parse_model(f:read("*a"), "model.pdmodel", "load")
function M.parse_model(bytes, where, who)
  if not bytes:match("^%s*{") then
    local ok, prog = pcall(framework.Program.parse, bytes)
    if not ok then raise(string.format("%s: %s: %s", who, where, tostring(prog):gsub("^[^:\n]+:%d+: ", ""))) end
    return prog
  end
  local out = ffi.new("oar_program_t *[1]")
  if C.oar_program_parse_model(bytes, #bytes, out) ~= 0 then
    raise(string.format("%s: %s: %s", who, where, lib.last_error()))
  end
  -- hand it to the Lua wrapper as ProgramDesc bytes
  local buf, n = ffi.new("void *[1]"), ffi.new("size_t[1]")
  local rc = C.oar_program_serialize(out[0], buf, n)
  C.oar_program_free(out[0])
  if rc ~= 0 then raise(string.format("%s: %s: %s", who, where, lib.last_error())) end
  local s = ffi.string(buf[0], n[0])
  C.oar_free(buf[0])
  return framework.Program.parse(s)
end

return M
