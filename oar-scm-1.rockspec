rockspec_format = "3.0"
package = "oar"
version = "scm-1"
source = { url = "git+file:///oar" }
description = {
   summary = "A deep learning environment: Fluid's program/block/scope design in C, driven from LuaJIT",
   license = "Apache-2.0",
}
dependencies = { "lua >= 5.1" }
external_dependencies = {
   OPENBLAS = { library = "openblas" },
   PROTOBUF_C = { header = "protobuf-c/protobuf-c.h" },
}
build = {
   type = "make",
   build_variables = {
      CFLAGS = "$(CFLAGS)",
      LIBFLAG = "$(LIBFLAG)",
      LUA_INCDIR = "$(LUA_INCDIR)",
   },
   install_variables = {
      INST_LIBDIR = "$(LIBDIR)",
      INST_LUADIR = "$(LUADIR)",
      INST_BINDIR = "$(BINDIR)",
   },
}
test = { type = "busted" }
