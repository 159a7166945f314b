/* emu_nccl.cpp — the emulated NCCL (nccl.h here) over oar's communication
 * interface. An all-reduce gathers every worker's buffer and reduces them
 * in worker order, so every dtype NCCL carries works (float16 through
 * src/ops/half_bits.h) and every worker gets the same bits. The unique id
 * each worker passes to init is compared across the workers: a worker
 * that did not receive worker 0's id (the broadcast collective.cu makes)
 * fails init, as NCCL would hang or fail. */
#include <nccl.h>
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

enum { kErrorLen = 512 };
struct emu_nccl_comm {
    int rank, size;
    bool init_pending, aborted;
    char last_error[kErrorLen];
};

static char no_comm_error[kErrorLen];   /* failures before a communicator exists */

static ncclResult_t fail(ncclComm_t c, ncclResult_t r, const char *what)
{
    snprintf(c ? c->last_error : no_comm_error, kErrorLen, "%s: %s", what, oar_last_error());
    return r;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    memset(id, 0, sizeof *id);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(id->internal, sizeof id->internal, "emu-nccl %d %ld.%09ld", (int)getpid(), (long)ts.tv_sec, ts.tv_nsec);
    return ncclSuccess;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *out, int nranks, ncclUniqueId id, int rank, ncclConfig_t *cfg)
{
    *out = nullptr;
    if (nranks != oar_comm_size() || rank != oar_comm_rank() || rank < 0 || rank >= nranks) {
        snprintf(no_comm_error, sizeof no_comm_error, "rank %d of %d, but the job's worker is %d of %d", rank, nranks,
                 oar_comm_rank(), oar_comm_size());
        return ncclInvalidArgument;
    }
    std::vector<char> ids((size_t)nranks * sizeof id.internal);
    if (oar_comm_allgather(id.internal, ids.data(), sizeof id.internal) != OAR_OK)
        return fail(nullptr, ncclSystemError, "gathering the unique ids");
    for (int r = 0; r < nranks; r++)
        if (memcmp(ids.data() + (size_t)r * sizeof id.internal, id.internal, sizeof id.internal) != 0) {
            snprintf(no_comm_error, sizeof no_comm_error, "worker %d holds another unique id than worker %d", r, rank);
            return ncclInvalidUsage;
        }
    emu_nccl_comm *c = (emu_nccl_comm *)calloc(1, sizeof *c);
    if (!c) return ncclSystemError;
    c->rank = rank;
    c->size = nranks;
    c->init_pending = cfg && !cfg->blocking;
    *out = c;
    return c->init_pending ? ncclInProgress : ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t *async)
{
    if (!c) return ncclInvalidArgument;
    if (c->aborted) { *async = ncclInvalidUsage; return ncclSuccess; }
    *async = c->init_pending ? ncclInProgress : ncclSuccess;
    c->init_pending = false;
    return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t c)
{
    if (c) c->aborted = true;
    return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t r)
{
    switch (r) {
    case ncclSuccess: return "no error";
    case ncclInProgress: return "operation in progress";
    case ncclInvalidArgument: return "invalid argument";
    case ncclInvalidUsage: return "invalid usage";
    case ncclSystemError: return "unhandled system error";
    default: return "emulated NCCL error";
    }
}

const char *ncclGetLastError(ncclComm_t c) { return c ? c->last_error : no_comm_error; }

static size_t dtype_size(ncclDataType_t dt)
{
    switch (dt) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclFloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    default: return 8;
    }
}

template <class T> static T reduce_one(T a, T b, ncclRedOp_t op)
{
    switch (op) {
    case ncclSum: return a + b;
    case ncclProd: return a * b;
    case ncclMax: return a > b ? a : b;
    default: return a < b ? a : b;
    }
}

/* recv[i] = parts[0][i] op parts[1][i] op ... (worker order) */
template <class T> static void reduce_parts(const char *parts, size_t count, int n, ncclRedOp_t op, void *recv)
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
static void reduce_half(const char *parts, size_t count, int n, ncclRedOp_t op, void *recv)
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

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t dt, ncclRedOp_t op,
                           ncclComm_t c, void *)
{
    if (!c || c->aborted) return ncclInvalidUsage;
    size_t bytes = count * dtype_size(dt);
    std::vector<char> parts((size_t)c->size * bytes);
    if (oar_comm_allgather(send, parts.data(), bytes) != OAR_OK) return fail(c, ncclSystemError, "ncclAllReduce");
    switch (dt) {
    case ncclInt8: reduce_parts<int8_t>(parts.data(), count, c->size, op, recv); break;
    case ncclUint8: reduce_parts<uint8_t>(parts.data(), count, c->size, op, recv); break;
    case ncclInt32: reduce_parts<int32_t>(parts.data(), count, c->size, op, recv); break;
    case ncclUint32: reduce_parts<uint32_t>(parts.data(), count, c->size, op, recv); break;
    case ncclInt64: reduce_parts<int64_t>(parts.data(), count, c->size, op, recv); break;
    case ncclUint64: reduce_parts<uint64_t>(parts.data(), count, c->size, op, recv); break;
    case ncclFloat16: reduce_half(parts.data(), count, c->size, op, recv); break;
    case ncclFloat32: reduce_parts<float>(parts.data(), count, c->size, op, recv); break;
    case ncclFloat64: reduce_parts<double>(parts.data(), count, c->size, op, recv); break;
    default: return ncclInvalidArgument;
    }
    return ncclSuccess;
}

ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t dt, int root, ncclComm_t c, void *)
{
    if (!c || c->aborted) return ncclInvalidUsage;
    if (root < 0 || root >= c->size) return ncclInvalidArgument;
    size_t bytes = count * dtype_size(dt);
    if (c->rank == root && send != recv) memmove(recv, send, bytes);
    if (oar_comm_broadcast(recv, bytes, root) != OAR_OK) return fail(c, ncclSystemError, "ncclBroadcast");
    return ncclSuccess;
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t count, ncclDataType_t dt, ncclComm_t c, void *)
{
    if (!c || c->aborted) return ncclInvalidUsage;
    if (oar_comm_allgather(send, recv, count * dtype_size(dt)) != OAR_OK)
        return fail(c, ncclSystemError, "ncclAllGather");
    return ncclSuccess;
}
