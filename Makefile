# oar — one build for everything: the CPU runtime always, CUDA kernels when nvcc is found.
# luarocks (build.type "make") passes CFLAGS/LIBFLAG/LUA_INCDIR for the build and
# INST_LIBDIR/INST_LUADIR for install; both work by hand too:  make && make test

CC       ?= gcc
CFLAGS   ?= -O2 -fPIC
OPT      ?= -O3 -march=native
OAR_CFLAGS = -std=c11 -Wall -Wextra -Wno-missing-field-initializers -Werror -D_GNU_SOURCE -fPIC $(OPT) -fopenmp \
             -fno-math-errno -Isrc -Ibuild $(OPENBLAS_INC) $(EXTRA_CFLAGS)
OPENBLAS_INC ?= -I/usr/include/x86_64-linux-gnu/openblas-pthread -I/usr/include/openblas
LIBS     = -lprotobuf-c -lopenblas -lm -lpthread -fopenmp
# never unmapped by dlclose: LuaJIT closes its ffi.load'ed libraries at lua_close
# (busted exits with os.exit(code, true)), and unmapping libgomp under its idle
# OpenMP worker threads crashes the process on exit
LIBS     += -Wl,-z,nodelete

# CUDA: built when nvcc exists (PATH or /usr/local/cuda), unless NO_CUDA=1
NVCC ?= $(shell command -v nvcc 2>/dev/null || ( [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc ))
ifeq ($(NO_CUDA),1)
NVCC :=
endif
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))

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
CU_SRC   = $(wildcard kernels/cuda/*.cu)
# CUDA support is compiled in only when there are CUDA kernels to build
ifeq ($(CU_SRC),)
NVCC :=
endif
ifneq ($(NVCC),)
CU_OBJ   = $(patsubst %.cu,$(BUILD)/%.o,$(CU_SRC))
OAR_CFLAGS += -DOAR_WITH_CUDA -I$(CUDA_HOME)/include
LIBS     += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart -lcublas -lcudnn
# NCCL (collective ops on CUDA, kernels/cuda/collective.cu): its one link line
CUDA_COLLECTIVE_LIBS = -lnccl
LIBS     += $(CUDA_COLLECTIVE_LIBS)
endif
NVCCFLAGS ?= -O3 -Xcompiler -fPIC -std=c++17 -Isrc -Ibuild -arch=sm_80

LIB      = $(BUILD)/liboar.so
CDEF     = lua/oar/cdef.lua

.PHONY: all lib test install clean fuzz bench doc
all: $(LIB) $(CDEF)
lib: $(LIB)

$(BUILD)/framework.pb-c.c $(BUILD)/framework.pb-c.h: proto/framework.proto
	@mkdir -p $(BUILD)
	protoc-c --c_out=$(BUILD) -Iproto proto/framework.proto

$(BUILD)/framework.pb-c.o: $(BUILD)/framework.pb-c.c
	$(CC) -std=c11 -O2 -fPIC -Ibuild -c $< -o $@

$(BUILD)/%.o: %.c $(BUILD)/framework.pb-c.h $(wildcard src/*.h src/ops/*.h kernels/cpu/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(OAR_CFLAGS) -c $< -o $@

$(BUILD)/%.o: %.cu $(wildcard src/*.h src/ops/*.h kernels/cuda/*.h)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@

# linked to a temp name and renamed: a process loading the library never
# sees a half-written file
$(LIB): $(C_OBJ) $(CU_OBJ)
	$(CC) -shared -o $@.tmp.$$$$ $^ $(LIBS) && mv -f $@.tmp.$$$$ $@

# The FFI declarations are the preprocessor-free section of oar.h.
$(CDEF): src/oar.h tools/gen_cdef.sh
	sh tools/gen_cdef.sh src/oar.h > $@

test: all
	./tools/run_specs

install: all
	mkdir -p $(INST_LIBDIR) $(INST_LUADIR)/oar
	cp $(LIB) $(INST_LIBDIR)/liboar.so
	cp -r lua/oar/. $(INST_LUADIR)/oar/
	if [ -n "$(INST_BINDIR)" ]; then mkdir -p $(INST_BINDIR) && cp bin/oar $(INST_BINDIR)/oar; fi

# API reference from the doc comments in lua/ (config.ld), into build/doc.
# LDoc is Debian's lua-ldoc; only this target needs it.
# LDoc renders the comments' Markdown with lua-markdown; without it, it
# silently falls back to plain text, so that is an error here.
doc:
	@command -v ldoc >/dev/null 2>&1 || { echo "make doc: ldoc is missing; install it with: sudo apt-get install lua-ldoc lua-markdown" >&2; exit 1; }
	@mkdir -p $(BUILD)
	@ldoc --fatalwarnings . > $(BUILD)/ldoc.log 2>&1; rc=$$?; grep -v '^reading configuration\|^output written' $(BUILD)/ldoc.log; \
	  if grep -q 'falling back to text' $(BUILD)/ldoc.log; then echo "make doc: lua-markdown is missing; install it with: sudo apt-get install lua-markdown" >&2; exit 1; fi; \
	  [ $$rc -eq 0 ] || { echo "make doc: ldoc reported the warnings above" >&2; exit 1; }
	@echo "API reference written to $(BUILD)/doc/index.html"

clean:
	rm -rf $(BUILD) $(CDEF)

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
FUZZ_CFLAGS  = -std=c11 -g -O1 -march=native -D_GNU_SOURCE -fopenmp -Wall -Wextra -Wno-unknown-pragmas $(FUZZ_SAN) \
               -fsanitize=fuzzer-no-link -Isrc -I$(FUZZ_DIR) $(OPENBLAS_INC)
FUZZ_SRC     = $(wildcard src/*.c src/ops/*.c kernels/cpu/*.c)
FUZZ_OBJ     = $(patsubst %.c,$(FUZZ_DIR)/%.o,$(FUZZ_SRC)) $(FUZZ_DIR)/framework.pb-c.o
FUZZ_TARGETS = $(FUZZ_DIR)/fuzz_program $(FUZZ_DIR)/fuzz_tensor
FUZZ_LIBS    = -lprotobuf-c -lopenblas -lm -lpthread
.SECONDARY: $(FUZZ_OBJ)

$(FUZZ_DIR)/framework.pb-c.c: proto/framework.proto
	@mkdir -p $(FUZZ_DIR)
	protoc-c --c_out=$(FUZZ_DIR) -Iproto proto/framework.proto
$(FUZZ_DIR)/framework.pb-c.h: $(FUZZ_DIR)/framework.pb-c.c

$(FUZZ_DIR)/framework.pb-c.o: $(FUZZ_DIR)/framework.pb-c.c
	$(FUZZ_CC) -std=c11 -g -O1 $(FUZZ_SAN) -fsanitize=fuzzer-no-link -I$(FUZZ_DIR) -c $< -o $@

$(FUZZ_DIR)/%.o: %.c $(FUZZ_DIR)/framework.pb-c.h $(wildcard src/*.h kernels/cpu/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -c $< -o $@

$(FUZZ_DIR)/fuzz_%: fuzz/fuzz_%.c $(FUZZ_OBJ)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_OBJ) $(FUZZ_LIBS)

fuzz: $(FUZZ_TARGETS)
	@for t in program tensor; do \
	  mkdir -p $(FUZZ_DIR)/work/$$t; \
	  echo "== fuzz_$$t for $(FUZZ_SECONDS)s"; \
	  $(FUZZ_DIR)/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    -artifact_prefix=$(FUZZ_DIR)/fuzz_$$t- $(FUZZ_DIR)/work/$$t fuzz/corpus/$$t || exit 1; \
	done
