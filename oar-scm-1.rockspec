-- oar's rockspec. From a checkout:
--   luarocks --lua-version=5.1 --tree=./tree make --deps-mode=none oar-scm-1.rockspec
-- (what tools/bootstrap does). A source rock: `make rock` writes
-- build/oar-scm-1.src.rock (the tracked files as oar-scm-1.tar.gz, which
-- source.url names relative to the rock, then `luarocks pack`); install it
-- anywhere with  luarocks --lua-version=5.1 install oar-scm-1.src.rock
-- `luarocks test` runs the specs with the system's busted (tools/run_specs).
rockspec_format = "3.0"
package = "oar"
version = "scm-1"
source = {
   url = "file://oar-scm-1.tar.gz",
   dir = "oar",
}
description = {
   summary = "A deep learning environment: Fluid's program/block/scope design in C, driven from LuaJIT",
   detailed = [[
oar runs PaddlePaddle Fluid 1.x style programs (Program, Block, LayerHelper,
Executor) on a C runtime through LuaJIT's FFI. It needs LuaJIT (not plain
Lua 5.1): the `oar` command embeds it; scripts run with `oar script.lua` or
`luajit script.lua`.]],
   license = "Apache-2.0",
}
-- LuaJIT implements Lua 5.1; it is checked below as an external dependency
-- (its header and library), since Debian's LuaJIT is not a rock
dependencies = { "lua == 5.1" }
external_dependencies = {
   LUAJIT = { header = "luajit-2.1/luajit.h", library = "luajit-5.1" },
   OPENBLAS = { library = "openblas" },
   PROTOBUF_C = { header = "protobuf-c/protobuf-c.h" },
}
build = {
   type = "make",
   build_variables = {
      -- luarocks' CFLAGS go before oar's own (-O3 and the rest), a user's
      -- CFLAGS from the environment after them (see the Makefile)
      LUAROCKS_CFLAGS = "$(CFLAGS)",
      LUAJIT_CFLAGS = "-I$(LUAJIT_INCDIR)/luajit-2.1",
      LUAJIT_LIBS = "-L$(LUAJIT_LIBDIR) -lluajit-5.1",
      OAR_VERSION = version,
   },
   install_variables = {
      INST_LIBDIR = "$(LIBDIR)",
      INST_LUADIR = "$(LUADIR)",
      INST_BINDIR = "$(BINDIR)",
      -- src/oar.h and src/oar_op.h (with the headers it includes), for C
      -- programs and device backends built against liboar
      INST_INCDIR = "$(PREFIX)/include",
      OAR_VERSION = version,
   },
}
test = { type = "command", command = "tools/run_specs" }
