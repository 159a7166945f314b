--- oar.checkpoint_dir: saves of several files that commit all or nothing and
-- loads that never mix two saves (src/checkpoint.c does the work: a staging
-- directory, a commit record, renames; an flock on the directory). Used by
-- oar.io's save and load functions.
-- @module oar.checkpoint_dir
local ffi = require("ffi")
local lib = require("oar.lib")
local C = lib.C

local M = {}

local function fail(who, msg) require("oar.framework").raise(who .. ": " .. msg) end

--- Runs `fn(stage_dir)`, which writes every file of the save into
-- stage_dir; then commits them into dirname as one. An error in fn commits
-- nothing.
-- @tparam string dirname the checkpoint directory (created if needed)
-- @tparam string who the function to name in errors
-- @tparam function fn writes the files into the staging directory it is given
-- @return fn's results
-- @raise fn's error, or when the directory cannot be locked or the commit fails
-- @usage
-- oar.checkpoint_dir.saving("ckpt", "mysave", function(stage)
--   local f = assert(io.open(stage .. "/notes.txt", "w")); f:write("epoch 3\n"); f:close()
-- end)
function M.saving(dirname, who, fn)
  local out = ffi.new("oar_ckpt_t *[1]")
  if C.oar_ckpt_begin_save(dirname, out) ~= 0 then fail(who, lib.last_error()) end
  local c = out[0]
  local res = { pcall(fn, ffi.string(C.oar_ckpt_stage_dir(c))) }
  if not res[1] then
    C.oar_ckpt_end(c)
    error(res[2], 0)
  end
  if C.oar_ckpt_commit(c) ~= 0 then fail(who, lib.last_error()) end
  return unpack(res, 2, table.maxn(res))
end

--- Runs `fn()` holding dirname's lock, after completing or removing an
-- interrupted save, so that what fn reads comes from one save.
-- @tparam string dirname the checkpoint directory
-- @tparam string who the function to name in errors
-- @tparam function fn reads the files
-- @return fn's results
-- @raise fn's error, or when the directory cannot be locked
-- @usage
-- local text = oar.checkpoint_dir.loading("ckpt", "myload", function()
--   local f = assert(io.open("ckpt/notes.txt")); local s = f:read("*a"); f:close(); return s
-- end)
function M.loading(dirname, who, fn)
  local out = ffi.new("oar_ckpt_t *[1]")
  if C.oar_ckpt_begin_load(dirname, out) ~= 0 then fail(who, lib.last_error()) end
  local c = out[0]
  local res = { pcall(fn) }
  C.oar_ckpt_end(c)
  if not res[1] then error(res[2], 0) end
  return unpack(res, 2, table.maxn(res))
end

--- Whether `path` is a regular file: true, false when nothing is there; an
-- error (never a hang) for a FIFO, a device or a directory.
-- @tparam string path
-- @tparam string who the function to name in errors
-- @treturn bool
-- @raise when path is something other than a regular file
-- @usage if oar.checkpoint_dir.regular_file("ckpt/__model__", "mine") then print("found") end
function M.regular_file(path, who)
  local rc = C.oar_file_check_regular(path)
  if rc == 0 then return true end
  if rc == -2 then return false end   -- OAR_ERR_NOT_FOUND
  fail(who, lib.last_error())
end

return M
