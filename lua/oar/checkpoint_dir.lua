-- oar.checkpoint_dir: saves of several files that commit all or nothing and
-- loads that never mix two saves (src/checkpoint.c does the work: a staging
-- directory, a commit record, renames; an flock on the directory).
local ffi = require("ffi")
local lib = require("oar.lib")
local C = lib.C

local M = {}

local function fail(who, msg) require("oar.framework").raise(who .. ": " .. msg) end

-- Runs fn(stage_dir), which writes every file of the save into stage_dir;
-- then commits them into dirname as one. An error in fn commits nothing.
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

-- Runs fn() holding dirname's lock, after completing or removing an
-- interrupted save.
function M.loading(dirname, who, fn)
  local out = ffi.new("oar_ckpt_t *[1]")
  if C.oar_ckpt_begin_load(dirname, out) ~= 0 then fail(who, lib.last_error()) end
  local c = out[0]
  local res = { pcall(fn) }
  C.oar_ckpt_end(c)
  if not res[1] then error(res[2], 0) end
  return unpack(res, 2, table.maxn(res))
end

-- true for a regular file, false when nothing is there; an error (never a
-- hang) for a FIFO, a device or a directory
function M.regular_file(path, who)
  local rc = C.oar_file_check_regular(path)
  if rc == 0 then return true end
  if rc == -2 then return false end   -- OAR_ERR_NOT_FOUND
  fail(who, lib.last_error())
end

return M
