--- oar.launch_proc: a child process whose output the launcher reads with
-- a deadline. `oar launch` cannot simply read mpirun's output to its end:
-- when a host's link goes down, every worker ends itself at the fleet's
-- deadline but mpirun may never hear from that host's daemon again and does
-- not exit (OpenMPI 4.1), and a stale daemon can keep the output pipe open
-- after mpirun is gone. So the job runs in a process group of its own, its
-- output comes through a pipe read with poll(), the launcher notices the
-- child's exit with waitpid(WNOHANG), and it can end the whole group.
-- @module oar.launch_proc
local ffi = require("ffi")
local bit = require("bit")
local C = ffi.C

local M = {}

pcall(ffi.cdef, [[
typedef int oar_lp_pid_t;
typedef struct { int64_t opaque[64]; } oar_lp_file_actions_t;   /* glibc: 80 bytes */
typedef struct { int64_t opaque[64]; } oar_lp_spawnattr_t;      /* glibc: 336 bytes */
struct oar_lp_pollfd { int fd; short events; short revents; };
extern char **environ;
int oar_lp_pipe2(int fds[2], int flags) __asm__("pipe2");
int oar_lp_fa_init(oar_lp_file_actions_t *fa) __asm__("posix_spawn_file_actions_init");
int oar_lp_fa_destroy(oar_lp_file_actions_t *fa) __asm__("posix_spawn_file_actions_destroy");
int oar_lp_fa_dup2(oar_lp_file_actions_t *fa, int fd, int newfd) __asm__("posix_spawn_file_actions_adddup2");
int oar_lp_attr_init(oar_lp_spawnattr_t *a) __asm__("posix_spawnattr_init");
int oar_lp_attr_destroy(oar_lp_spawnattr_t *a) __asm__("posix_spawnattr_destroy");
int oar_lp_attr_setflags(oar_lp_spawnattr_t *a, short flags) __asm__("posix_spawnattr_setflags");
int oar_lp_attr_setpgroup(oar_lp_spawnattr_t *a, oar_lp_pid_t pgroup) __asm__("posix_spawnattr_setpgroup");
int oar_lp_spawn(oar_lp_pid_t *pid, const char *path, const oar_lp_file_actions_t *fa,
                 const oar_lp_spawnattr_t *attr, char *const argv[], char *const envp[]) __asm__("posix_spawn");
int oar_lp_poll(struct oar_lp_pollfd *fds, unsigned long n, int timeout_ms) __asm__("poll");
long oar_lp_read(int fd, void *buf, size_t n) __asm__("read");
int oar_lp_close(int fd) __asm__("close");
oar_lp_pid_t oar_lp_waitpid(oar_lp_pid_t pid, int *status, int options) __asm__("waitpid");
int oar_lp_kill(oar_lp_pid_t pid, int sig) __asm__("kill");
]])

local O_CLOEXEC, POSIX_SPAWN_SETPGROUP, POLLIN, WNOHANG = 0x80000, 2, 1, 1
M.SIGINT, M.SIGKILL, M.SIGTERM = 2, 9, 15

local Proc = {}
Proc.__index = Proc

--- Starts `/bin/sh -c cmd` in a process group of its own, its stdout and
-- stderr into one pipe.
-- @tparam string cmd a shell command line
-- @treturn ?table the process (`read`, `poll_exit`, `signal`), or nil
-- @treturn ?string why not
-- @usage local p = require("oar.launch_proc").spawn("mpirun -np 2 ...")
function M.spawn(cmd)
  local fds = ffi.new("int[2]")
  if C.oar_lp_pipe2(fds, O_CLOEXEC) ~= 0 then return nil, "pipe2 failed" end
  local fa, attr = ffi.new("oar_lp_file_actions_t"), ffi.new("oar_lp_spawnattr_t")
  C.oar_lp_fa_init(fa)
  C.oar_lp_fa_dup2(fa, fds[1], 1)
  C.oar_lp_fa_dup2(fa, fds[1], 2)
  C.oar_lp_attr_init(attr)
  C.oar_lp_attr_setflags(attr, POSIX_SPAWN_SETPGROUP)
  C.oar_lp_attr_setpgroup(attr, 0)   -- a group of its own, led by the child
  local args = { "/bin/sh", "-c", cmd }
  local argv = ffi.new("char *[4]")
  local keep = {}
  for i, a in ipairs(args) do
    keep[i] = ffi.new("char[?]", #a + 1, a)
    argv[i - 1] = keep[i]
  end
  argv[3] = nil
  local pid = ffi.new("oar_lp_pid_t[1]")
  local rc = C.oar_lp_spawn(pid, "/bin/sh", fa, attr, argv, C.environ)
  C.oar_lp_fa_destroy(fa)
  C.oar_lp_attr_destroy(attr)
  C.oar_lp_close(fds[1])
  if rc ~= 0 then
    C.oar_lp_close(fds[0])
    return nil, "posix_spawn failed (error " .. rc .. ")"
  end
  return setmetatable({ pid = pid[0], fd = fds[0], buf = ffi.new("char[65536]"), status = nil, eof = false }, Proc)
end

--- Waits up to `ms` milliseconds for output.
-- @tparam number ms the longest wait
-- @treturn ?string what was read ("" when nothing came), nil at the end of the output
-- @treturn boolean whether a signal interrupted the wait
function Proc:read(ms)
  if self.eof then return nil, false end
  local pfd = ffi.new("struct oar_lp_pollfd[1]")
  pfd[0].fd, pfd[0].events = self.fd, POLLIN
  local n = C.oar_lp_poll(pfd, 1, ms)
  if n < 0 then return "", true end          -- EINTR: a signal (Ctrl-C)
  if n == 0 then return "", false end
  local got = C.oar_lp_read(self.fd, self.buf, 65536)
  if got < 0 then return "", true end
  if got == 0 then
    self.eof = true
    return nil, false
  end
  return ffi.string(self.buf, got), false
end

--- The child's exit status once it has ended (as a shell gives it: 128 +
-- the signal for a killed one), nil while it runs.
-- @treturn ?int
function Proc:poll_exit()
  if self.status then return self.status end
  local st = ffi.new("int[1]")
  local r = C.oar_lp_waitpid(self.pid, st, WNOHANG)
  if r == self.pid then
    local s = st[0]
    local sig = bit.band(s, 0x7f)
    self.status = sig == 0 and bit.band(bit.rshift(s, 8), 0xff) or 128 + sig
  end
  return self.status
end

--- Sends a signal to the child's whole process group.
-- @tparam int sig
function Proc:signal(sig) C.oar_lp_kill(-self.pid, sig) end

--- Closes the pipe (after the child ended).
function Proc:close()
  if self.fd then C.oar_lp_close(self.fd) self.fd = nil end
end

return M
