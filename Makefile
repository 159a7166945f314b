# oar — one build for everything: the CPU runtime always, the CUDA backend
# (build/liboar_cuda.so, loaded at run time) when nvcc is found.
# luarocks (build.type "make") passes LUAROCKS_CFLAGS/LUAJIT_*/OAR_VERSION for the build and
# INST_LIBDIR/INST_LUADIR/INST_BINDIR for install; both work by hand too:  make && make test
#
# Output: one short line per step ("  CC  src/scope.c"); `make V=1` shows the commands.
# Warnings are errors only in CI (CI=true or WERROR=1; .ci/run sets it): a user's
# build never fails on a warning from a newer compiler.
# CPPFLAGS, CFLAGS and LDFLAGS from the command line or the environment are honoured
# (they come after oar's own flags, so `make CFLAGS="-O0 -g"` wins).
# Header dependencies come from the compiler (-MMD -MP, the .d files included below).

CC       ?= gcc
CFLAGS   ?=
OPT      ?= -O3 -march=native
ifneq ($(filter 1,$(WERROR))$(filter true,$(CI)),)
WARN_ERR = -Werror
endif
# luarocks' own CFLAGS (its config; "-O2 -fPIC" by default) come first, so that
# oar's optimisation flags win over its generic default
# -fvisibility=hidden: liboar.so exports only what src/oar.h and src/oar_op.h
# mark OAR_API (spec/exports_spec.lua; docs/DECISIONS.md, "What liboar exports")
VISIBILITY = -fvisibility=hidden
OAR_CFLAGS = $(LUAROCKS_CFLAGS) -std=c11 -Wall -Wextra -Wno-missing-field-initializers $(WARN_ERR) -D_GNU_SOURCE -fPIC $(OPT) -fopenmp \
             -fno-math-errno $(VISIBILITY) -Isrc -Ibuild $(OPENBLAS_INC) $(EXTRA_CFLAGS)
DEPFLAGS = -MMD -MP
OPENBLAS_INC ?= -I/usr/include/x86_64-linux-gnu/openblas-pthread -I/usr/include/openblas
LIBS     = -lprotobuf-c -lopenblas -lm -lpthread -fopenmp
# never unmapped by dlclose: LuaJIT closes its ffi.load'ed libraries at lua_close
# (busted exits with os.exit(code, true)), and unmapping libgomp under its idle
# OpenMP worker threads crashes the process on exit
LIBS     += -Wl,-z,nodelete
# json-c reads Paddle 3's PIR JSON models (src/pir_json*.c)
JSONC_CFLAGS := $(shell pkg-config --cflags json-c 2>/dev/null || echo -I/usr/include/json-c)
JSONC_LIBS   := $(shell pkg-config --libs json-c 2>/dev/null || echo -ljson-c)
OAR_CFLAGS += $(JSONC_CFLAGS)
LIBS     += $(JSONC_LIBS)

# quiet by default: `$(Q)` hides a command, `$(call say,CC,file)` prints its short form
V ?= 0
ifeq ($(V),0)
Q   = @
say = @printf '  %-5s %s\n' '$(1)' '$(2)';
endif

BUILD    = build
C_SRC    = $(wildcard src/*.c src/ops/*.c kernels/cpu/*.c)
C_OBJ    = $(patsubst %.c,$(BUILD)/%.o,$(C_SRC)) $(BUILD)/framework.pb-c.o
# MPI (OpenMPI): the communication engine of data-parallel training when
# pkg-config finds it (libopenmpi-dev), unless NO_MPI=1; without it the
# collective ops run as one worker (src/comm.c)
MPI_PC ?= $(shell pkg-config --exists ompi 2>/dev/null && echo ompi || { pkg-config --exists mpi 2>/dev/null && echo mpi; })
ifeq ($(NO_MPI),1)
MPI_PC :=
endif
ifneq ($(MPI_PC),)
OAR_CFLAGS += -DOAR_WITH_MPI $(shell pkg-config --cflags $(MPI_PC))
LIBS     += $(shell pkg-config --libs $(MPI_PC))
endif
# ---- oneDNN (libdnnl-dev): float32 GEMMs at the CPU's full vector width ------
# (kernels/cpu/dnnl_gemm.c). oneDNN picks AVX-512/AVX2/SSE4.1 kernels at run
# time from the CPU itself, whatever OPENBLAS_CORETYPE says, and threads on
# libgomp like oar. Used when its header is found, unless NO_DNNL=1; without
# it OpenBLAS does every GEMM. docs/DECISIONS.md, "GEMM path".
DNNL_INC ?= /usr/include/oneapi/dnnl/dnnl.h
ifneq ($(NO_DNNL),1)
ifneq ($(wildcard $(DNNL_INC)),)
OAR_CFLAGS += -DOAR_WITH_DNNL
LIBS     += -ldnnl
endif
endif
# ---- end oneDNN

LIB      = $(BUILD)/liboar.so
CDEF     = lua/oar/cdef.lua
CDEF_OP  = lua/oar/cdef_op.lua
# the headers `make install` puts in INST_INCDIR/oar: the two APIs and what
# oar_op.h includes
API_HEADERS = oar.h oar_op.h op.h desc.h strmap.h tensor.h variable.h error.h scope.h device.h \
              comm.h attr_check.h desc_check.h
LAUNCHER = $(BUILD)/oar

.PHONY: all lib test install clean fuzz fuzz-smoke asan bench bench-gemm doc
all: $(LIB) $(CDEF) $(CDEF_OP) $(LAUNCHER)
lib: $(LIB)

$(BUILD)/framework.pb-c.c $(BUILD)/framework.pb-c.h: proto/framework.proto
	@mkdir -p $(BUILD)
	$(call say,PROTO,$<)protoc-c --c_out=$(BUILD) -Iproto proto/framework.proto

$(BUILD)/framework.pb-c.o: $(BUILD)/framework.pb-c.c
	$(call say,CC,$<)$(CC) -std=c11 -O2 -fPIC $(VISIBILITY) -Ibuild $(CPPFLAGS) $(CFLAGS) -c $< -o $@

# Op declarations (src/ops/<family>.ops) become build/ops/<family>.h: the
# slot indices, attribute struct, decoder and registration of each op
# (tools/gen_ops.lua; docs/CONTRIBUTING.md). `#include "ops/<family>.h"` finds
# them through -Ibuild.
LUAJIT_BIN ?= luajit
OPS_DECL = $(wildcard src/ops/*.ops)
OPS_GEN  = $(patsubst src/ops/%.ops,$(BUILD)/ops/%.h,$(OPS_DECL))
$(BUILD)/ops/%.h: src/ops/%.ops tools/gen_ops.lua
	@mkdir -p $(dir $@)
	$(call say,GEN,$@)$(LUAJIT_BIN) tools/gen_ops.lua $< $@

# the generated headers must exist before the first compile (order-only);
# after that the .d files name every header each object really includes
$(BUILD)/%.o: %.c | $(BUILD)/framework.pb-c.h $(OPS_GEN)
	@mkdir -p $(dir $@)
	$(call say,CC,$<)$(CC) $(OAR_CFLAGS) $(DEPFLAGS) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

-include $(C_OBJ:.o=.d) $(LAUNCHER).d $(BUILD)/cdef_op.d

# linked to a temp name and renamed: a process loading the library never
# sees a half-written file
$(LIB): $(C_OBJ)
	$(call say,LD,$@)$(CC) -shared $(LDFLAGS) -o $@.tmp.$$$$ $^ $(LIBS) && mv -f $@.tmp.$$$$ $@

# The FFI declarations are the preprocessor-free section of oar.h, and the
# op-authoring header's types and OAR_API functions (through the preprocessor,
# which also lists the headers they came from in build/cdef_op.d)
$(CDEF): src/oar.h tools/gen_cdef.sh
	$(call say,GEN,$@)sh tools/gen_cdef.sh src/oar.h > $@.tmp && mv -f $@.tmp $@
$(CDEF_OP): src/oar_op.h $(wildcard src/ops/*.h) tools/gen_cdef.sh | $(OPS_GEN)
	@mkdir -p $(BUILD)
	$(call say,GEN,$@)CC="$(CC)" sh tools/gen_cdef.sh --op src/oar_op.h $(BUILD)/cdef_op.d $@ > $@.tmp && mv -f $@.tmp $@

# The `oar` command (bin/oar.c): embeds LuaJIT (Debian libluajit-5.1-dev), finds
# its Lua modules from its own place, turns Ctrl-C into a Lua error. The version
# is the rockspec's.
LUAJIT_CFLAGS ?= $(shell pkg-config --cflags luajit 2>/dev/null || echo -I/usr/include/luajit-2.1)
LUAJIT_LIBS   ?= $(shell pkg-config --libs luajit 2>/dev/null || echo -lluajit-5.1)
OAR_VERSION   ?= $(shell sed -n 's/^version *= *"\(.*\)"/\1/p' oar-*.rockspec 2>/dev/null | head -1)
$(LAUNCHER): bin/oar.c
	@mkdir -p $(BUILD)
	$(call say,CC,$<)$(CC) -std=c11 -O2 -Wall -Wextra $(WARN_ERR) $(DEPFLAGS) $(LUAJIT_CFLAGS) \
	  -DOAR_VERSION='"$(OAR_VERSION)"' $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LUAJIT_LIBS)

# `oar serve` (src/serve/*.c): an HTTP server of the Open Inference Protocol
# over the C inference API, its own program build/oar-serve that the launcher
# execs (docs/DECISIONS.md, "oar serve"). It needs libmicrohttpd (Debian
# libmicrohttpd-dev) and json-c; built when microhttpd.h is found, unless
# NO_SERVE=1. RUNPATH: liboar.so beside it (a checkout's build/) or in a
# luarocks tree's lib/lua/5.1.
MHD_INC ?= /usr/include/microhttpd.h
SERVE    = $(BUILD)/oar-serve
SERVE_SRC = $(wildcard src/serve/*.c)
SERVE_OBJ = $(patsubst %.c,$(BUILD)/%.o,$(SERVE_SRC))
MHD_LIBS := $(shell pkg-config --libs libmicrohttpd 2>/dev/null || echo -lmicrohttpd)
ifneq ($(NO_SERVE),1)
ifneq ($(wildcard $(MHD_INC)),)
all: $(SERVE)
endif
endif
$(BUILD)/src/serve/%.o: src/serve/%.c
	@mkdir -p $(dir $@)
	$(call say,CC,$<)$(CC) -std=c11 -O2 -Wall -Wextra $(WARN_ERR) -D_GNU_SOURCE $(DEPFLAGS) -Isrc $(JSONC_CFLAGS) \
	  $(CPPFLAGS) $(CFLAGS) -c -o $@ $<
$(SERVE): $(SERVE_OBJ) $(LIB)
	$(call say,LD,$@)$(CC) $(LDFLAGS) -o $@ $(SERVE_OBJ) -L$(BUILD) -loar $(MHD_LIBS) $(JSONC_LIBS) -lpthread -lm \
	  -Wl,-rpath,'$$ORIGIN' -Wl,-rpath,'$$ORIGIN/../lib/lua/5.1'
-include $(SERVE_OBJ:.o=.d)

test: all
	$(Q)OAR_NO_BUILD=1 ./tools/run_specs

install: all
	$(call say,INST,liboar.so lua/oar oar)mkdir -p $(INST_LIBDIR) $(INST_LUADIR)/oar
	$(Q)cp $(LIB) $(INST_LIBDIR)/liboar.so
	$(Q)cp -r lua/oar/. $(INST_LUADIR)/oar/
	$(Q)if [ -n "$(INST_BINDIR)" ]; then mkdir -p $(INST_BINDIR) && cp $(LAUNCHER) $(INST_BINDIR)/oar; fi
	$(Q)if [ -n "$(INST_BINDIR)" ] && [ -f $(SERVE) ]; then cp $(SERVE) $(INST_BINDIR)/oar-serve; fi
	$(Q)if [ -n "$(INST_INCDIR)" ]; then mkdir -p $(INST_INCDIR)/oar && cp $(addprefix src/,$(API_HEADERS)) $(INST_INCDIR)/oar/; fi

# API reference from the doc comments in lua/ (config.ld), into build/doc.
# LDoc is Debian's lua-ldoc; only this target needs it. tools/ldoc runs it
# under a Lua that loads lua-markdown (Debian's ldoc may start under lua5.2,
# which has none): without it LDoc silently falls back to plain text, so that
# is an error here. config.ld excludes the generated cdef files, and LDoc
# refuses to exclude a file that does not exist: they are made first.
doc: $(CDEF) $(CDEF_OP)
	@tools/ldoc --which > /dev/null
	@mkdir -p $(BUILD)
	@tools/ldoc --fatalwarnings . > $(BUILD)/ldoc.log 2>&1; rc=$$?; grep -v '^reading configuration\|^output written' $(BUILD)/ldoc.log; \
	  if grep -q 'falling back to text' $(BUILD)/ldoc.log; then echo "make doc: LDoc found no lua-markdown; install it with: sudo apt-get install lua-markdown" >&2; exit 1; fi; \
	  [ $$rc -eq 0 ] || { echo "make doc: ldoc reported the warnings above" >&2; exit 1; }
	$(Q)$(LUAJIT_BIN) tools/op_reference.lua $(BUILD)/doc/ops.md
	@echo "API reference written to $(BUILD)/doc/index.html, the operator reference to $(BUILD)/doc/ops.md"

clean:
	rm -rf $(BUILD) $(CDEF) $(CDEF_OP)

# A source rock of this checkout: its tracked files (as they are in the work
# tree) in build/oar-$(OAR_VERSION).tar.gz under oar/, packed by `luarocks pack`
# with the rockspec (whose source.url names the archive; `luarocks pack`
# fetches from a temporary directory, so the copy it reads names it by its
# absolute path; installing the rock needs only the archive's name).
ROCK_TAR = oar-$(OAR_VERSION).tar.gz
ROCK_DIR = $(BUILD)/rock
.PHONY: rock
rock:
	@rm -rf $(ROCK_DIR) && mkdir -p $(ROCK_DIR)
	$(call say,TAR,$(ROCK_DIR)/$(ROCK_TAR))git ls-files -z | tar --null -T - --transform 's,^,oar/,' -czf $(ROCK_DIR)/$(ROCK_TAR)
	$(Q)sed 's|"file://$(ROCK_TAR)"|"file://$(abspath $(ROCK_DIR))/$(ROCK_TAR)"|' oar-$(OAR_VERSION).rockspec > $(ROCK_DIR)/oar-$(OAR_VERSION).rockspec
	$(call say,PACK,$(BUILD)/oar-$(OAR_VERSION).src.rock)cd $(ROCK_DIR) && luarocks --lua-version=5.1 pack oar-$(OAR_VERSION).rockspec >/dev/null
	$(Q)mv $(ROCK_DIR)/oar-$(OAR_VERSION).src.rock $(BUILD)/

# ---- CUDA backend (issue 12) -------------------------------------------------
# liboar.so never links CUDA. The CUDA kernels and the device layer build into
# their own shared object, build/liboar_cuda.so, which src/device.c dlopens the
# first time a CUDA place is asked for (src/backend.h). Built when nvcc exists
# (PATH or /usr/local/cuda) unless NO_CUDA=1; installed next to liboar.so.
#   CUDA_ARCH   real architectures compiled to SASS (default: 75 80 90:
#               Turing (T4), Ampere (A100), Hopper (H100/H200))
#   CUDA_PTX    the architecture also embedded as PTX, JIT-compiled by newer GPUs
#   CUDA_HOME   the toolkit (default: nvcc's parent directory)
#   CUBLAS_HOME, CUDNN_HOME, NCCL_HOME   where cuBLAS, cuDNN and NCCL are
#               installed, when they are not where tools/find_cuda_libs looks
#               (docs/install.md, "The CUDA backend")
# The backend links cudart statically (needs only the driver, libcuda.so.1, at
# run time) and cuBLAS/cuDNN dynamically; NCCL is never linked: the collective
# ops open it when they first run (kernels/cuda/collective.cu). The backend's
# RUNPATH holds $ORIGIN (liboar.so) and the directories cuBLAS, cuDNN and NCCL
# were found in, so it loads where it was built without LD_LIBRARY_PATH.
NVCC ?= $(shell command -v nvcc 2>/dev/null || ( [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc ))
ifeq ($(NO_CUDA),1)
NVCC :=
endif
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CU_SRC    = $(wildcard kernels/cuda/*.cu)
CUDA_LIB  = $(BUILD)/liboar_cuda.so
CUDA_ARCH ?= 75 80 90
CUDA_PTX  ?= 90
comma := ,
CUDA_GENCODE = $(foreach a,$(CUDA_ARCH),-gencode arch=compute_$(a)$(comma)code=sm_$(a)) \
               $(if $(CUDA_PTX),-gencode arch=compute_$(CUDA_PTX)$(comma)code=compute_$(CUDA_PTX))
NVCCFLAGS ?= -O3 -std=c++17 -lineinfo $(CUDA_GENCODE) -Xcompiler -fPIC,-Wall -Isrc -Ibuild
# in CI (WERROR=1), nvcc's own warnings and the host compiler's are errors too
NVCC_WERROR = $(if $(WARN_ERR),-Werror all-warnings -Xcompiler -Werror)
# the backend names liboar.so in DT_NEEDED: the soname lets the loader match
# the copy LuaJIT already loaded (whatever its path) instead of loading another
LIBS += -Wl,-soname,liboar.so
.PHONY: cuda install-cuda cuda-sanitize cuda-info
ifneq ($(and $(NVCC),$(CU_SRC)),)
# Where cuBLAS, cuDNN and NCCL are: tools/find_cuda_libs, run once per make
# (not for `make clean`), writes them as make variables into
# build/cuda_libs.mk (CUBLAS_*, CUDNN_*, NCCL_*, CUDA_LIBS_MISSING), replaced
# only when they changed: the backend is relinked when a library moved
CUDA_LIBS_MK = $(BUILD)/cuda_libs.mk
ifeq ($(filter clean,$(MAKECMDGOALS)),)
CUDA_LIBS_RUN := $(shell mkdir -p $(BUILD) && CUDA_HOME='$(CUDA_HOME)' CUBLAS_HOME='$(CUBLAS_HOME)' \
  CUDNN_HOME='$(CUDNN_HOME)' NCCL_HOME='$(NCCL_HOME)' sh tools/find_cuda_libs > $(CUDA_LIBS_MK).tmp \
  && { cmp -s $(CUDA_LIBS_MK).tmp $(CUDA_LIBS_MK) || mv -f $(CUDA_LIBS_MK).tmp $(CUDA_LIBS_MK); } \
  && rm -f $(CUDA_LIBS_MK).tmp || echo failed)
ifneq ($(CUDA_LIBS_RUN),)
$(error tools/find_cuda_libs failed: run `CUDA_HOME=$(CUDA_HOME) sh tools/find_cuda_libs` to see why, or NO_CUDA=1)
endif
include $(CUDA_LIBS_MK)
endif
# -I only for headers outside the compilers' own include paths
CUDA_SYS_INC = $(CUDA_HOME)/include /usr/include /usr/local/include
CUDA_INC     = $(addprefix -I,$(filter-out $(CUDA_SYS_INC),$(sort $(CUBLAS_INCDIR) $(CUDNN_INCDIR))))
# RUNPATH: $ORIGIN, then each library directory once, in the order found
# (the system's own directories are the loader's default anyway)
uniq = $(if $1,$(firstword $1) $(call uniq,$(filter-out $(firstword $1),$1)))
CUDA_RPATH = $(call uniq,$(filter-out /lib /lib64 /usr/lib /usr/lib64 /usr/lib/x86_64-linux-gnu,\
               $(CUBLAS_LIBDIR) $(CUDNN_LIBDIR) $(NCCL_LIBDIR)))
CUDA_LIBS  = -L$(BUILD) -loar $(addprefix -L,$(call uniq,$(CUBLAS_LIBDIR) $(CUDNN_LIBDIR))) \
             $(CUBLAS_LINK) $(CUDNN_LINK) -cudart static -Xlinker --no-undefined \
             -Xlinker -rpath -Xlinker '$$ORIGIN' $(foreach d,$(CUDA_RPATH),-Xlinker -rpath -Xlinker $(d))
# collective.cu: the NCCL library found here is the first the collective ops
# try to open; with nccl.h at hand, oar's own NCCL declarations are checked
# against it (kernels/cuda/nccl_api.h)
$(BUILD)/kernels/cuda/collective.o: NVCC_EXTRA = $(if $(NCCL_FILE),-DOAR_NCCL_LIB='"$(NCCL_FILE)"') \
  $(if $(NCCL_INCDIR),-DOAR_NCCL_ABI_CHECK $(addprefix -I,$(filter-out $(CUDA_SYS_INC),$(NCCL_INCDIR))))
$(BUILD)/kernels/cuda/collective.o: $(CUDA_LIBS_MK)
CU_OBJ = $(patsubst %.cu,$(BUILD)/%.o,$(CU_SRC))
all: $(CUDA_LIB)
cuda: $(CUDA_LIB)
-include $(CU_OBJ:.o=.d)
# what a CUDA build uses (.ci/run prints it)
cuda-info:
	@echo "nvcc $(NVCC);"
	@echo "architectures $(addprefix sm_,$(CUDA_ARCH))$(if $(CUDA_PTX), + PTX compute_$(CUDA_PTX));"
	@echo "cuBLAS $(or $(CUBLAS_FILE),not found);"
	@echo "cuDNN $(or $(CUDNN_FILE),not found);"
	@echo "NCCL $(or $(NCCL_FILE),not found (the collective ops look for libnccl.so.2 when they first run));"
# stops the backend's build, saying what is missing, until it is found
$(BUILD)/cuda_libs.ok: $(CUDA_LIBS_MK)
	@if [ -n "$(CUDA_LIBS_MISSING)" ]; then echo "the CUDA backend cannot be built: $(CUDA_LIBS_MISSING) (or NO_CUDA=1 to build without it)" >&2; exit 1; fi
	@touch $@
$(BUILD)/%.o: %.cu $(BUILD)/framework.pb-c.h | $(BUILD)/cuda_libs.ok $(OPS_GEN)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$<)$(NVCC) $(NVCCFLAGS) $(NVCC_WERROR) $(CUDA_INC) $(NVCC_EXTRA) -MMD -MP -MF $(@:.o=.d) -c $< -o $@
$(CUDA_LIB): $(CU_OBJ) $(LIB) $(CUDA_LIBS_MK) | $(BUILD)/cuda_libs.ok
	$(call say,LD,$@)$(NVCC) -shared -o $@.tmp.$$$$ $(CU_OBJ) $(CUDA_LIBS) && mv -f $@.tmp.$$$$ $@
else
cuda cuda-info:
	@echo "make $@: nvcc was not found (set NVCC=/path/to/nvcc or install the CUDA toolkit)" >&2; exit 1
endif
install: install-cuda
install-cuda:
	@if [ -f $(CUDA_LIB) ] && [ -n "$(INST_LIBDIR)" ]; then mkdir -p $(INST_LIBDIR) && cp $(CUDA_LIB) $(INST_LIBDIR)/liboar_cuda.so; fi
# compute-sanitizer over the GPU specs (needs a GPU): memcheck then racecheck
SANITIZER ?= $(or $(shell command -v compute-sanitizer 2>/dev/null),$(CUDA_HOME)/bin/compute-sanitizer)
# every GPU spec (the ones tagged #gpu)
GPU_SPECS = spec/cuda_spec.lua spec/cuda_seq_spec.lua spec/cuda_rnn_spec.lua spec/cuda_fp16_spec.lua
cuda-sanitize: all
	@[ -x "$(SANITIZER)" ] || { echo "make cuda-sanitize: $(SANITIZER) not found (install the CUDA toolkit's compute-sanitizer or set SANITIZER=)" >&2; exit 1; }
	@for tool in memcheck racecheck; do echo "== compute-sanitizer --tool $$tool"; \
	  $(SANITIZER) --tool $$tool --target-processes all --error-exitcode 1 \
	    busted --run default $(GPU_SPECS) || exit 1; done

# ---- fuzzing (clang + libFuzzer): `make fuzz` builds fuzz/fuzz_program.c and
# fuzz/fuzz_tensor.c against the library sources compiled with the sanitizers
# (in build/fuzz, apart from the main build) and runs each for FUZZ_SECONDS,
# starting from the committed seeds in fuzz/corpus/ (never written to: new
# inputs go to build/fuzz/work/). See fuzz/README.md. No -Werror here: clang warns
# about things gcc (the main build, -Werror) does not, and that must not stop fuzzing.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_DIR     = $(BUILD)/fuzz
FUZZ_SAN     = -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS  = -std=c11 -g -O1 -march=native -D_GNU_SOURCE -fopenmp -Wall -Wextra -Wno-unknown-pragmas $(FUZZ_SAN) $(VISIBILITY) \
               -fsanitize=fuzzer-no-link -Isrc -I$(FUZZ_DIR) -I$(BUILD) $(OPENBLAS_INC)
FUZZ_SRC     = $(wildcard src/*.c src/ops/*.c kernels/cpu/*.c)
FUZZ_OBJ     = $(patsubst %.c,$(FUZZ_DIR)/%.o,$(FUZZ_SRC)) $(FUZZ_DIR)/framework.pb-c.o
FUZZ_TARGETS = $(FUZZ_DIR)/fuzz_program $(FUZZ_DIR)/fuzz_tensor $(FUZZ_DIR)/fuzz_run $(FUZZ_DIR)/fuzz_serve
FUZZ_LIBS    = -lprotobuf-c -lopenblas -lm -lpthread $(JSONC_LIBS)
.SECONDARY: $(FUZZ_OBJ)

$(FUZZ_DIR)/framework.pb-c.c: proto/framework.proto
	@mkdir -p $(FUZZ_DIR)
	protoc-c --c_out=$(FUZZ_DIR) -Iproto proto/framework.proto
$(FUZZ_DIR)/framework.pb-c.h: $(FUZZ_DIR)/framework.pb-c.c

$(FUZZ_DIR)/framework.pb-c.o: $(FUZZ_DIR)/framework.pb-c.c
	$(FUZZ_CC) -std=c11 -g -O1 $(FUZZ_SAN) -fsanitize=fuzzer-no-link -I$(FUZZ_DIR) -c $< -o $@

# the op declarations' headers come from the main build's rule (build/ops)
$(FUZZ_DIR)/%.o: %.c $(FUZZ_DIR)/framework.pb-c.h $(wildcard src/*.h kernels/cpu/*.h) $(OPS_GEN)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -c $< -o $@

$(FUZZ_DIR)/fuzz_%: fuzz/fuzz_%.c $(FUZZ_OBJ)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_OBJ) $(FUZZ_LIBS)

# fuzz_serve: `oar serve`'s request parser (src/serve/codec.c, json-c)
$(FUZZ_DIR)/src/serve/codec.o: src/serve/codec.c src/serve/serve.h src/oar.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(JSONC_CFLAGS) -c $< -o $@
$(FUZZ_DIR)/fuzz_serve: fuzz/fuzz_serve.c $(FUZZ_DIR)/src/serve/codec.o $(FUZZ_OBJ)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(JSONC_CFLAGS) -Isrc/serve -fsanitize=fuzzer -o $@ $< $(FUZZ_DIR)/src/serve/codec.o \
	  $(FUZZ_OBJ) $(FUZZ_LIBS)

fuzz: $(FUZZ_TARGETS)
	@for t in program tensor run serve; do \
	  c=$$t; [ $$t = run ] && c=program; \
	  mkdir -p $(FUZZ_DIR)/work/$$t; \
	  echo "== fuzz_$$t for $(FUZZ_SECONDS)s"; \
	  $(FUZZ_DIR)/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    -timeout=30 -artifact_prefix=$(FUZZ_DIR)/fuzz_$$t- $(FUZZ_DIR)/work/$$t fuzz/corpus/$$c || exit 1; \
	done

# CI: each target for a fixed number of executions from the committed seeds
# (fuzz_run runs programs, seeded from the program corpus); any finding fails.
FUZZ_RUNS ?= 3000
fuzz-smoke: $(FUZZ_TARGETS)
	@for t in program tensor run serve; do \
	  c=$$t; [ $$t = run ] && c=program; \
	  mkdir -p $(FUZZ_DIR)/smoke/$$t; \
	  echo "== fuzz_$$t: $(FUZZ_RUNS) runs"; \
	  $(FUZZ_DIR)/fuzz_$$t -runs=$(FUZZ_RUNS) -seed=1 -timeout=30 -rss_limit_mb=4096 -print_final_stats=1 \
	    -artifact_prefix=$(FUZZ_DIR)/fuzz_$$t- $(FUZZ_DIR)/smoke/$$t fuzz/corpus/$$c > $(FUZZ_DIR)/smoke/$$t.log 2>&1 \
	    || { tail -60 $(FUZZ_DIR)/smoke/$$t.log; exit 1; }; \
	  grep -E "^stat::number_of_executed_units|Done" $(FUZZ_DIR)/smoke/$$t.log; \
	done

# ---- the spec suite under AddressSanitizer + UndefinedBehaviorSanitizer: the
# CPU library built with gcc's sanitizers into build/asan/liboar.so, and busted
# run with the ASan runtime preloaded into luajit (which is not instrumented;
# leak checking is off because LuaJIT's GC frees at exit in its own way).
# ASAN_SPECS picks spec files (default: all). UB aborts the process.
ASAN_DIR   = $(BUILD)/asan
ASAN_FLAGS = -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
ASAN_OBJ   = $(patsubst %.c,$(ASAN_DIR)/%.o,$(C_SRC)) $(ASAN_DIR)/framework.pb-c.o
ASAN_SPECS ?= spec
.SECONDARY: $(ASAN_OBJ)

$(ASAN_DIR)/framework.pb-c.o: $(BUILD)/framework.pb-c.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O1 -g -fPIC $(VISIBILITY) $(ASAN_FLAGS) -Ibuild -c $< -o $@

$(ASAN_DIR)/%.o: %.c $(BUILD)/framework.pb-c.h $(wildcard src/*.h kernels/cpu/*.h) $(OPS_GEN)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -Wall -Wextra -D_GNU_SOURCE -fPIC -O1 -g -fopenmp $(VISIBILITY) -Isrc -Ibuild $(OPENBLAS_INC) $(ASAN_FLAGS) -c $< -o $@

$(ASAN_DIR)/liboar.so: $(ASAN_OBJ)
	$(CC) -shared $(ASAN_FLAGS) -o $@.tmp.$$$$ $^ -lprotobuf-c -lopenblas -lm -lpthread -fopenmp -Wl,-z,nodelete && mv -f $@.tmp.$$$$ $@

asan: $(ASAN_DIR)/liboar.so $(CDEF) $(CDEF_OP)
	LD_PRELOAD="$$($(CC) -print-file-name=libasan.so) $$($(CC) -print-file-name=libubsan.so)" \
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:allocator_may_return_null=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	busted --cpath="$(ASAN_DIR)/?.so" $(ASAN_SPECS)

# ---- bench-gemm: GFLOP/s of each float32 GEMM backend (oneDNN sgemm, oneDNN
# matmul with packed weights, OpenBLAS, libxsmm when Debian's libxsmm-dev is
# installed) on the product shapes oar runs, one thread (bench/gemm_shapes.c;
# docs/performance.md "GEMM backends per shape"). Run it again under
# ONEDNN_MAX_CPU_ISA=AVX2 OPENBLAS_CORETYPE=Haswell LIBXSMM_TARGET=hsw for the
# AVX2 paths.
XSMM_LIB = $(wildcard /usr/lib/libxsmm.a)
$(BUILD)/gemm_shapes: bench/gemm_shapes.c
	@mkdir -p $(BUILD)
	$(CC) -std=c11 -O2 -Wall -Wextra -fopenmp $(if $(XSMM_LIB),-DHAVE_LIBXSMM) $(OPENBLAS_INC) $< -o $@ \
	  -ldnnl $(XSMM_LIB) -lopenblas -lm -ldl -lpthread

bench-gemm: $(BUILD)/gemm_shapes
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 $(BUILD)/gemm_shapes
