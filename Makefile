# oar — one build for everything: the CPU runtime always, CUDA kernels when nvcc is found.
# luarocks (build.type "make") passes CFLAGS/LIBFLAG/LUA_INCDIR for the build and
# INST_LIBDIR/INST_LUADIR for install; both work by hand too:  make && make test

CC       ?= gcc
CFLAGS   ?= -O2 -fPIC
OPT      ?= -O3 -march=native
OAR_CFLAGS = -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -fPIC $(OPT) -fopenmp \
             -Isrc -Ibuild $(OPENBLAS_INC) $(EXTRA_CFLAGS)
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
CU_SRC   = $(wildcard kernels/cuda/*.cu)
ifneq ($(NVCC),)
CU_OBJ   = $(patsubst %.cu,$(BUILD)/%.o,$(CU_SRC))
OAR_CFLAGS += -DOAR_WITH_CUDA -I$(CUDA_HOME)/include
LIBS     += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart -lcublas -lcudnn
endif
NVCCFLAGS ?= -O3 -Xcompiler -fPIC -std=c++17 -Isrc -Ibuild -arch=sm_80

LIB      = $(BUILD)/liboar.so
CDEF     = lua/oar/cdef.lua

.PHONY: all lib test install clean fuzz bench
all: $(LIB) $(CDEF)
lib: $(LIB)

$(BUILD)/framework.pb-c.c $(BUILD)/framework.pb-c.h: proto/framework.proto
	@mkdir -p $(BUILD)
	protoc-c --c_out=$(BUILD) -Iproto proto/framework.proto

$(BUILD)/framework.pb-c.o: $(BUILD)/framework.pb-c.c
	$(CC) -std=c11 -O2 -fPIC -Ibuild -c $< -o $@

$(BUILD)/%.o: %.c $(BUILD)/framework.pb-c.h $(wildcard src/*.h kernels/cpu/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(OAR_CFLAGS) -c $< -o $@

$(BUILD)/%.o: %.cu $(wildcard src/*.h kernels/cuda/*.h)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@

$(LIB): $(C_OBJ) $(CU_OBJ)
	$(CC) -shared -o $@ $^ $(LIBS)

# The FFI declarations are the preprocessor-free section of oar.h.
$(CDEF): src/oar.h tools/gen_cdef.sh
	sh tools/gen_cdef.sh src/oar.h > $@

test: all
	./tools/run_specs

install: all
	mkdir -p $(INST_LIBDIR) $(INST_LUADIR)/oar
	cp $(LIB) $(INST_LIBDIR)/liboar.so
	cp -r lua/oar/. $(INST_LUADIR)/oar/

clean:
	rm -rf $(BUILD) $(CDEF)
