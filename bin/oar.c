/* oar: the command. A small C program that embeds LuaJIT so that it can
 *  - find oar's Lua modules and liboar next to itself (a luarocks tree
 *    <tree>/bin/oar, or a checkout's build/oar), with no LUA_PATH set;
 *  - turn Ctrl-C into a Lua error inside a running command (a SIGINT handler
 *    that arms a Lua hook, as lua.c does) instead of killing the session.
 * Everything else (arguments, the REPL, running scripts) is Lua:
 * require("oar.repl").main(version, launcher), or for `oar launch`
 * require("oar.launch").main(launcher).
 *
 * The SIGINT handler never touches Lua beyond lua_sethook (safe in a signal
 * handler in LuaJIT as in PUC Lua). At the prompt it only records the
 * interrupt and writes a byte to a pipe that the line reader polls, so the
 * prompt sees Ctrl-C whichever thread the signal lands on (OpenMP and
 * OpenBLAS start threads that do not block SIGINT). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#ifndef OAR_VERSION
#define OAR_VERSION "unknown"
#endif

enum { MODE_PROMPT = 0, MODE_RUNNING = 1 };

static lua_State *g_L;
static volatile sig_atomic_t g_mode = MODE_PROMPT;
static volatile sig_atomic_t g_pending;  /* Ctrl-C not yet acted upon */
/* the Ctrl-C that ends the process when the earlier ones were not acted
 * upon: the 3rd at the prompt's commands (the 2nd warns), the 2nd in a script */
static volatile sig_atomic_t g_kill_at = 3;
static int g_pipe[2] = { -1, -1 };        /* handler -> prompt reader */
/* set from Lua once liboar is loaded and has oar_executor_cancel (issue 13) */
static void (*volatile g_cancel)(void);

static void stop_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_sethook(L, NULL, 0, 0);
  g_pending = 0;
  luaL_error(L, "interrupted");
}

static void on_sigint(int sig) {
  int saved = errno;
  (void)sig;
  g_pending = g_pending + 1;
  if (g_pipe[1] >= 0) {
    char c = 'i';
    ssize_t n = write(g_pipe[1], &c, 1);
    (void)n;
  }
  if (g_mode == MODE_RUNNING) {
    if (g_pending >= g_kill_at) {
      /* the command ignored the interrupts: end the process as SIGINT would */
      signal(SIGINT, SIG_DFL);
      raise(SIGINT);
    } else if (g_pending == 2) {
      static const char msg[] =
          "\noar: still running (a JIT-compiled loop or a C call does not see "
          "the interrupt); press Ctrl-C once more to quit oar\n";
      ssize_t n = write(2, msg, sizeof msg - 1);
      (void)n;
    }
    /* the hook fires at the next Lua instruction the interpreter runs */
    lua_sethook(g_L, stop_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
    /* HOOK (issue 13): stop a running oar executor too; the executor's run
     * returns an error that reaches the REPL like any other */
    void (*cancel)(void) = g_cancel;
    if (cancel) cancel();
  }
  errno = saved;
}

static void drain_pipe(void) {
  char buf[64];
  if (g_pipe[0] < 0) return;
  while (read(g_pipe[0], buf, sizeof buf) > 0) {
  }
}

/* launcher.set_running(bool[, script]): while running, Ctrl-C interrupts the
 * command; at the prompt it is only recorded. A script ends at the second
 * unanswered Ctrl-C, a command at the prompt at the third. Returns whether an
 * interrupt was pending. */
static int l_set_running(lua_State *L) {
  int running = lua_toboolean(L, 1);
  int was = g_pending > 0;
  if (running) {
    g_kill_at = lua_toboolean(L, 2) ? 2 : 3;
    drain_pipe();
    g_pending = 0;
    g_mode = MODE_RUNNING;
  } else {
    g_mode = MODE_PROMPT; /* first: a signal from now on only records */
    lua_sethook(L, NULL, 0, 0);
    g_pending = 0;
    drain_pipe();
  }
  lua_pushboolean(L, was);
  return 1;
}

/* launcher.take_interrupt(): true once per Ctrl-C seen at the prompt */
static int l_take_interrupt(lua_State *L) {
  int was = g_pending > 0;
  g_pending = 0;
  drain_pipe();
  lua_pushboolean(L, was);
  return 1;
}

/* launcher.interrupt_fd(): the descriptor that becomes readable on Ctrl-C */
static int l_interrupt_fd(lua_State *L) {
  lua_pushinteger(L, g_pipe[0]);
  return 1;
}

/* launcher.set_cancel(address): a `void f(void)` called on Ctrl-C while a
 * command runs (the address as a number, from ffi.cast("intptr_t", fn)) */
static int l_set_cancel(lua_State *L) {
  lua_Number a = luaL_optnumber(L, 1, 0);
  g_cancel = (void (*)(void))(uintptr_t)a;
  return 0;
}

static const luaL_Reg launcher_fns[] = {
  { "set_running", l_set_running },
  { "take_interrupt", l_take_interrupt },
  { "interrupt_fd", l_interrupt_fd },
  { "set_cancel", l_set_cancel },
  { NULL, NULL },
};

static int is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Prepends `dir/pattern;...` entries to package[field]. */
static void prepend_path(lua_State *L, const char *field, const char *entries) {
  lua_getglobal(L, "package");
  lua_getfield(L, -1, field);
  const char *old = lua_tostring(L, -1);
  lua_pushfstring(L, "%s;%s", entries, old ? old : "");
  lua_setfield(L, -3, field);
  lua_pop(L, 2);
}

/* Finds the Lua modules and liboar from the executable's own place:
 *   <tree>/bin/oar      -> <tree>/share/lua/5.1, <tree>/lib/lua/5.1
 *   <checkout>/build/oar -> <checkout>/lua, <checkout>/build
 * Returns the directory it used (for messages), or "" when neither. */
static const char *find_tree(lua_State *L, char *root, size_t cap) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return "";
  exe[n] = '\0';
  char *slash = strrchr(exe, '/');
  if (!slash) return "";
  *slash = '\0'; /* exe is now the directory holding oar */
  slash = strrchr(exe, '/');
  if (!slash) return "";
  *slash = '\0'; /* exe is now the parent: a tree or a checkout */
  char probe[PATH_MAX + 64];
  char buf[4 * PATH_MAX + 256];
  snprintf(probe, sizeof probe, "%s/share/lua/5.1/oar/init.lua", exe);
  if (is_file(probe)) {
    snprintf(buf, sizeof buf, "%s/share/lua/5.1/?.lua;%s/share/lua/5.1/?/init.lua", exe, exe);
    prepend_path(L, "path", buf);
    snprintf(buf, sizeof buf, "%s/lib/lua/5.1/?.so", exe);
    prepend_path(L, "cpath", buf);
    snprintf(root, cap, "%s", exe);
    return root;
  }
  snprintf(probe, sizeof probe, "%s/lua/oar/init.lua", exe);
  if (is_file(probe)) {
    snprintf(buf, sizeof buf, "%s/lua/?.lua;%s/lua/?/init.lua", exe, exe);
    prepend_path(L, "path", buf);
    snprintf(buf, sizeof buf, "%s/build/?.so", exe);
    prepend_path(L, "cpath", buf);
    snprintf(root, cap, "%s", exe);
    return root;
  }
  return "";
}

static int traceback(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  lua_getglobal(L, "debug");
  lua_getfield(L, -1, "traceback");
  lua_pushstring(L, msg ? msg : "(error object is not a string)");
  lua_pushinteger(L, 2);
  lua_call(L, 2, 1);
  return 1;
}

/* The protected part of main: paths, `arg`, then oar.repl.main. */
static int pmain(lua_State *L) {
  int argc = (int)lua_tointeger(L, 1);
  char **argv = (char **)lua_touserdata(L, 2);
  luaL_openlibs(L);

  char root[PATH_MAX];
  root[0] = '\0';
  const char *tree = find_tree(L, root, sizeof root);

  /* arg[0] is the program, arg[1..] its arguments (oar.repl shifts them
   * when it runs a script, as luajit does) */
  lua_createtable(L, argc, 1);
  for (int i = 0; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i);
  }
  lua_setglobal(L, "arg");

  luaL_register(L, "oar_launcher", launcher_fns);
  lua_pushstring(L, OAR_VERSION);
  lua_setfield(L, -2, "version");
  lua_pushstring(L, tree);
  lua_setfield(L, -2, "root");
  lua_pop(L, 1);

  /* `oar launch ...` is oar.launch's (a Lua launcher over mpirun that
   * restarts a failed job); everything else is oar.repl's */
  const char *module = (argc >= 2 && strcmp(argv[1], "launch") == 0) ? "oar.launch" : "oar.repl";
  lua_getglobal(L, "require");
  lua_pushstring(L, module);
  if (lua_pcall(L, 1, 1, 0) != 0) {
    fprintf(stderr,
            "oar: cannot load the oar Lua modules (%s)\n"
            "oar: looked next to this program (%s) and on LUA_PATH; install oar with "
            "luarocks, or run `make` in a checkout and use build/oar\n",
            lua_tostring(L, -1), *tree ? tree : "no tree found");
    lua_pushinteger(L, 1);
    return 1;
  }
  lua_getfield(L, -1, "main");
  lua_getglobal(L, "oar_launcher");
  lua_call(L, 1, 1); /* main(launcher) -> exit status */
  return 1;
}

/* `oar serve ...` is its own program, oar-serve beside this one (C over
 * liboar and libmicrohttpd, no Lua: docs/DECISIONS.md, "oar serve"); it
 * replaces this process so that signals reach the server itself. */
static int exec_serve(char **argv) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash && (size_t)(slash - exe) + sizeof "/oar-serve" <= sizeof exe) {
      strcpy(slash, "/oar-serve");
      execv(exe, argv);
      fprintf(stderr, "oar: cannot run %s (%s); it is built when libmicrohttpd-dev is installed "
              "(tools/bootstrap installs it)\n", exe, strerror(errno));
      return 1;
    }
  }
  fprintf(stderr, "oar: cannot find oar-serve: /proc/self/exe is unreadable\n");
  return 1;
}

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "serve") == 0) return exec_serve(argv + 1);
  if (pipe(g_pipe) == 0) {
    for (int i = 0; i < 2; i++) {
      fcntl(g_pipe[i], F_SETFL, fcntl(g_pipe[i], F_GETFL) | O_NONBLOCK);
      fcntl(g_pipe[i], F_SETFD, FD_CLOEXEC);
    }
  }
  lua_State *L = luaL_newstate();
  if (!L) {
    fprintf(stderr, "oar: cannot create a Lua state (out of memory)\n");
    return 1;
  }
  g_L = L;

  /* no SA_RESTART: a read blocked at the prompt returns EINTR */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);

  lua_pushcfunction(L, traceback);
  lua_pushcfunction(L, pmain);
  lua_pushinteger(L, argc);
  lua_pushlightuserdata(L, argv);
  int status = 1;
  if (lua_pcall(L, 2, 1, 1) != 0) {
    const char *msg = lua_tostring(L, -1);
    fprintf(stderr, "oar: %s\n", msg ? msg : "(error object is not a string)");
  } else if (lua_isnumber(L, -1)) {
    status = (int)lua_tointeger(L, -1);
  } else {
    status = 0;
  }
  fflush(stdout);
  /* a plain exit (no lua_close): liboar's OpenMP threads and the FFI's
   * unloading of libraries at close do not mix (see the Makefile) */
  exit(status);
}
