/* emu_nccl.cpp — the emulated NCCL over oar's communication interface:
 * NCCL's functions under their own names (extern "C") with the types of
 * kernels/cuda/nccl_api.h, built into a library of its own that
 * collective.cu opens as it would open NCCL (tools/cuda_emu/run). Not
 * NCCL: no streams (every call completes before it returns), no GPUs; a
 * non-blocking init returns in progress, and so does the first
 * ncclCommGetAsyncError, as a real one may. An all-reduce gathers every
 * worker's buffer and reduces them in worker order, so every dtype NCCL carries works (float16 through
 * src/ops/half_bits.h) and every worker gets the same bits. The unique id
 * each worker passes to init is compared across the workers: a worker
 * that did not receive worker 0's id (the broadcast collective.cu makes)
 * fails init, as NCCL would hang or fail. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <vector>
extern "C" {
#include "oar.h"
}
#include "cpu_half.h"
#include "nccl_api.h"

using namespace oarnccl;
#define EMU_API extern "C" __attribute__((visibility("default")))

enum { kErrorLen = 512 };
struct oarnccl::opaque_comm {
    int rank, size;
    bool init_pending, aborted;
    char last_error[kErrorLen];
};

static char no_comm_error[kErrorLen];   /* failures before a communicator exists */

static Result fail(Comm c, Result r, const char *what)
{
    snprintf(c ? c->last_error : no_comm_error, kErrorLen, "%s: %s", what, oar_last_error());
    return r;
}

EMU_API Result ncclGetVersion(int *version)
{
    *version = 22800;   /* 2.28.0: what the emulation stands for */
    return Success;
}

EMU_API Result ncclGetUniqueId(UniqueId *id)
{
    memset(id, 0, sizeof *id);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(id->internal, sizeof id->internal, "emu-nccl %d %ld.%09ld", (int)getpid(), (long)ts.tv_sec, ts.tv_nsec);
    return Success;
}

EMU_API Result ncclCommInitRankConfig(Comm *out, int nranks, UniqueId id, int rank, Config *cfg)
{
    *out = nullptr;
    /* the config as NCCL reads it: its magic, and `size` bytes of it */
    if (cfg && (cfg->magic != kConfigMagic || cfg->size < offsetof(Config, blocking) + sizeof(int))) {
        snprintf(no_comm_error, sizeof no_comm_error, "the config is not an initialized ncclConfig_t");
        return InvalidArgument;
    }
    if (nranks != oar_comm_size() || rank != oar_comm_rank() || rank < 0 || rank >= nranks) {
        snprintf(no_comm_error, sizeof no_comm_error, "rank %d of %d, but the job's worker is %d of %d", rank, nranks,
                 oar_comm_rank(), oar_comm_size());
        return InvalidArgument;
    }
    std::vector<char> ids((size_t)nranks * sizeof id.internal);
    if (oar_comm_allgather(id.internal, ids.data(), sizeof id.internal) != OAR_OK)
        return fail(nullptr, SystemError, "gathering the unique ids");
    for (int r = 0; r < nranks; r++)
        if (memcmp(ids.data() + (size_t)r * sizeof id.internal, id.internal, sizeof id.internal) != 0) {
            snprintf(no_comm_error, sizeof no_comm_error, "worker %d holds another unique id than worker %d", r, rank);
            return InvalidUsage;
        }
    opaque_comm *c = (opaque_comm *)calloc(1, sizeof *c);
    if (!c) return SystemError;
    c->rank = rank;
    c->size = nranks;
    c->init_pending = cfg && !cfg->blocking;
    *out = c;
    return c->init_pending ? InProgress : Success;
}

EMU_API Result ncclCommGetAsyncError(Comm c, Result *async)
{
    if (!c) return InvalidArgument;
    if (c->aborted) { *async = InvalidUsage; return Success; }
    *async = c->init_pending ? InProgress : Success;
    c->init_pending = false;
    return Success;
}

EMU_API Result ncclCommAbort(Comm c)
{
    if (c) c->aborted = true;
    return Success;
}

EMU_API const char *ncclGetErrorString(Result r)
{
    switch (r) {
    case Success: return "no error";
    case InProgress: return "operation in progress";
    case InvalidArgument: return "invalid argument";
    case InvalidUsage: return "invalid usage";
    case SystemError: return "unhandled system error";
    default: return "emulated NCCL error";
    }
}

EMU_API const char *ncclGetLastError(Comm c) { return c ? c->last_error : no_comm_error; }

static size_t dtype_size(DataType dt)
{
    switch (dt) {
    case Int8: case Uint8: return 1;
    case Float16: return 2;
    case Int32: case Uint32: case Float32: return 4;
    default: return 8;
    }
}

template <class T> static T reduce_one(T a, T b, RedOp op)
{
    switch (op) {
    case Sum: return a + b;
    case Prod: return a * b;
    case Max: return a > b ? a : b;
    default: return a < b ? a : b;
    }
}

/* recv[i] = parts[0][i] op parts[1][i] op ... (worker order) */
template <class T> static void reduce_parts(const char *parts, size_t count, int n, RedOp op, void *recv)
{
    T *out = (T *)recv;
    const T *p0 = (const T *)parts;
    for (size_t i = 0; i < count; i++) {
        T acc = p0[i];
        for (int r = 1; r < n; r++) acc = reduce_one(acc, ((const T *)parts)[(size_t)r * count + i], op);
        out[i] = acc;
    }
}

/* float16: each partial result rounded to float16, as a float16 reduction does */
static void reduce_half(const char *parts, size_t count, int n, RedOp op, void *recv)
{
    const uint16_t *p = (const uint16_t *)parts;
    uint16_t *out = (uint16_t *)recv;
    for (size_t i = 0; i < count; i++) {
        uint16_t acc = p[i];
        for (int r = 1; r < n; r++)
            acc = oar_half_from_double(reduce_one(oar_half_to_double(acc), oar_half_to_double(p[(size_t)r * count + i]), op));
        out[i] = acc;
    }
}

EMU_API Result ncclAllReduce(const void *send, void *recv, size_t count, DataType dt, RedOp op,
                           Comm c, void *)
{
    if (!c || c->aborted) return InvalidUsage;
    size_t bytes = count * dtype_size(dt);
    std::vector<char> parts((size_t)c->size * bytes);
    if (oar_comm_allgather(send, parts.data(), bytes) != OAR_OK) return fail(c, SystemError, "ncclAllReduce");
    switch (dt) {
    case Int8: reduce_parts<int8_t>(parts.data(), count, c->size, op, recv); break;
    case Uint8: reduce_parts<uint8_t>(parts.data(), count, c->size, op, recv); break;
    case Int32: reduce_parts<int32_t>(parts.data(), count, c->size, op, recv); break;
    case Uint32: reduce_parts<uint32_t>(parts.data(), count, c->size, op, recv); break;
    case Int64: reduce_parts<int64_t>(parts.data(), count, c->size, op, recv); break;
    case Uint64: reduce_parts<uint64_t>(parts.data(), count, c->size, op, recv); break;
    case Float16: reduce_half(parts.data(), count, c->size, op, recv); break;
    case Float32: reduce_parts<float>(parts.data(), count, c->size, op, recv); break;
    case Float64: reduce_parts<double>(parts.data(), count, c->size, op, recv); break;
    default: return InvalidArgument;
    }
    return Success;
}

EMU_API Result ncclBroadcast(const void *send, void *recv, size_t count, DataType dt, int root, Comm c, void *)
{
    if (!c || c->aborted) return InvalidUsage;
    if (root < 0 || root >= c->size) return InvalidArgument;
    size_t bytes = count * dtype_size(dt);
    if (c->rank == root && send != recv) memmove(recv, send, bytes);
    if (oar_comm_broadcast(recv, bytes, root) != OAR_OK) return fail(c, SystemError, "ncclBroadcast");
    return Success;
}

EMU_API Result ncclAllGather(const void *send, void *recv, size_t count, DataType dt, Comm c, void *)
{
    if (!c || c->aborted) return InvalidUsage;
    if (oar_comm_allgather(send, recv, count * dtype_size(dt)) != OAR_OK)
        return fail(c, SystemError, "ncclAllGather");
    return Success;
}
