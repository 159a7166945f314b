/*
 * collective.cu — CUDA kernels of the collective ops (src/ops/collective.c)
 * over NCCL: c_allreduce_sum/_max/_min/_prod, c_broadcast, c_allgather
 * (dense) and the gradient buffer pair c_coalesce / c_split_coalesced.
 *
 * NCCL is not linked: the first collective opens it (dlopen) and resolves
 * the few functions used here into a table (nccl_api.h), so the rest of the
 * backend runs on a machine without NCCL. The libraries tried, in order:
 * the one named by $OAR_NCCL_LIBRARY alone, when set; else the one the
 * build found (OAR_NCCL_LIB, from tools/find_cuda_libs), then NCCL's soname
 * libnccl.so.2 and libnccl.so on the loader's path (which includes the
 * backend's RUNPATH). None loading is an op error naming what was tried.
 *
 * One NCCL communicator per device, made on the first collective: worker 0
 * draws NCCL's unique id and the communication interface (src/comm.h, MPI
 * between the processes) broadcasts it; each process drives one GPU, its
 * device. Collectives are queued on the device's default stream, where
 * every oar kernel runs, so use_calc_stream changes nothing. Bounded like
 * the MPI engine: the communicator is created non-blocking and every
 * collective is waited for with a deadline (the job's timeout), polling
 * the stream and NCCL's asynchronous error; at the deadline or on an error
 * the communicator is aborted (ncclCommAbort) and the op fails, naming the
 * cause. Selected rows are gathered by the CPU kernel (the executor moves
 * them to the host).
 */
#include <dlfcn.h>
#include <mutex>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <time.h>
#include "cuda_common.h"
#include "nccl_api.h"
#include "ops/collective.h"
extern "C" {
#include "comm.h"
}

#ifdef OAR_NCCL_ABI_CHECK
/* nccl.h was found at build time: oar's declarations must agree with it (an
 * nccl.h older than 2.14 checks nothing: such an NCCL is refused at run time) */
#include <nccl.h>
#if NCCL_VERSION_CODE >= 21400
static_assert(sizeof(oarnccl::UniqueId) == sizeof(ncclUniqueId), "ncclUniqueId's size");
static_assert(sizeof(oarnccl::Result) == sizeof(ncclResult_t) && sizeof(oarnccl::DataType) == sizeof(ncclDataType_t) &&
              sizeof(oarnccl::RedOp) == sizeof(ncclRedOp_t), "NCCL's enum sizes");
static_assert(oarnccl::Success == (int)ncclSuccess && oarnccl::InProgress == (int)ncclInProgress &&
              oarnccl::SystemError == (int)ncclSystemError && oarnccl::InvalidUsage == (int)ncclInvalidUsage &&
              oarnccl::RemoteError == (int)ncclRemoteError, "ncclResult_t's values");
static_assert(oarnccl::Int8 == (int)ncclInt8 && oarnccl::Uint8 == (int)ncclUint8 && oarnccl::Int32 == (int)ncclInt32 &&
              oarnccl::Uint32 == (int)ncclUint32 && oarnccl::Int64 == (int)ncclInt64 &&
              oarnccl::Uint64 == (int)ncclUint64 && oarnccl::Float16 == (int)ncclFloat16 &&
              oarnccl::Float32 == (int)ncclFloat32 && oarnccl::Float64 == (int)ncclFloat64, "ncclDataType_t's values");
static_assert(oarnccl::Sum == (int)ncclSum && oarnccl::Prod == (int)ncclProd && oarnccl::Max == (int)ncclMax &&
              oarnccl::Min == (int)ncclMin, "ncclRedOp_t's values");
static_assert(offsetof(oarnccl::Config, size) == offsetof(ncclConfig_t, size) &&
              offsetof(oarnccl::Config, magic) == offsetof(ncclConfig_t, magic) &&
              offsetof(oarnccl::Config, version) == offsetof(ncclConfig_t, version) &&
              offsetof(oarnccl::Config, blocking) == offsetof(ncclConfig_t, blocking), "ncclConfig_t's first fields");
static_assert(NCCL_VERSION(2, 14, 0) == oarnccl::kMinVersion, "NCCL's version code of 2.14.0");
#endif
#endif

using namespace oarcu;

namespace {

using oarnccl::Api;
using oarnccl::Comm;
using oarnccl::Result;

/* ---- loading NCCL ---------------------------------------------------------- */
const char *const kLibraryEnv = "OAR_NCCL_LIBRARY";

struct Loaded {
    Api api;
    bool ok = false;
    char why[2048] = "";   /* why no library could be used */
};
Loaded g_nccl;
std::once_flag g_nccl_once;

/* appends "; " and a formatted reason to why */
void add_why(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void add_why(char *why, size_t n, const char *fmt, ...)
{
    size_t at = strlen(why);
    if (at && at + 2 < n) { memcpy(why + at, "; ", 3); at += 2; }
    if (at >= n) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why + at, n - at, fmt, ap);
    va_end(ap);
}

/* the table from an opened library; false (why extended) when it lacks a
 * function or is older than NCCL 2.14 */
bool resolve(void *h, const char *path, Api *api, char *why, size_t n)
{
    struct { void **slot; const char *name; } fns[] = {
        {(void **)&api->GetVersion, "ncclGetVersion"},
        {(void **)&api->GetUniqueId, "ncclGetUniqueId"},
        {(void **)&api->CommInitRankConfig, "ncclCommInitRankConfig"},
        {(void **)&api->CommGetAsyncError, "ncclCommGetAsyncError"},
        {(void **)&api->CommAbort, "ncclCommAbort"},
        {(void **)&api->GetErrorString, "ncclGetErrorString"},
        {(void **)&api->GetLastError, "ncclGetLastError"},
        {(void **)&api->AllReduce, "ncclAllReduce"},
        {(void **)&api->Broadcast, "ncclBroadcast"},
        {(void **)&api->AllGather, "ncclAllGather"},
    };
    for (auto &f : fns) {
        *f.slot = dlsym(h, f.name);
        if (!*f.slot) {
            add_why(why, n, "%s has no %s (NCCL older than 2.14?)", path, f.name);
            return false;
        }
    }
    int v = 0;
    if (api->GetVersion(&v) != oarnccl::Success || v < oarnccl::kMinVersion) {
        add_why(why, n, "%s is NCCL version code %d, older than 2.14 (%d)", path, v, oarnccl::kMinVersion);
        return false;
    }
    return true;
}

void load_nccl()
{
    const char *env = getenv(kLibraryEnv);
    const char *tries[4];
    int nt = 0;
    if (env && *env) {
        tries[nt++] = env;   /* the user's choice alone */
    } else {
#ifdef OAR_NCCL_LIB
        tries[nt++] = OAR_NCCL_LIB;
#endif
#ifndef OAR_NCCL_LIB_ONLY
        tries[nt++] = "libnccl.so.2";
        tries[nt++] = "libnccl.so";
#endif
    }
    for (int i = 0; i < nt; i++) {
        /* never closed once in use: communicators outlive any one op */
        void *h = dlopen(tries[i], RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            const char *e = dlerror();
            add_why(g_nccl.why, sizeof g_nccl.why, "%s", e ? e : tries[i]);
            continue;
        }
        if (resolve(h, tries[i], &g_nccl.api, g_nccl.why, sizeof g_nccl.why)) {
            g_nccl.ok = true;
            return;
        }
        dlclose(h);
    }
}

/* NCCL's functions, or an op error naming the libraries tried */
int nccl_api(oar_kernel_ctx_t *k, const Api **out)
{
    std::call_once(g_nccl_once, load_nccl);
    if (!g_nccl.ok) {
        const char *env = getenv(kLibraryEnv);
        return oar_k_error(k, OAR_ERR_UNSUPPORTED,
                           "the collective ops on CUDA places need NCCL 2.14 or newer, which could not be loaded%s%s: "
                           "%s. Install NCCL (pip's nvidia-nccl-cu13 or -cu12, or the system's libnccl2) where the "
                           "loader finds libnccl.so.2, or name its file in $%s",
                           env && *env ? " from $" : "", env && *env ? kLibraryEnv : "", g_nccl.why, kLibraryEnv);
    }
    *out = &g_nccl.api;
    return OAR_OK;
}

/* ---- communicators --------------------------------------------------------- */
constexpr int kMaxDevices = 64;
Comm comms[kMaxDevices];
bool comm_dead[kMaxDevices];

double now_s()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int nccl_fail(oar_kernel_ctx_t *k, const Api *nc, Result r, const char *call)
{
    return oar_k_error(k, OAR_ERR_COMM, "%s failed on worker %d of %d: %s (%s)", call, oar_comm_rank(),
                       oar_comm_size(), nc->GetErrorString(r), nc->GetLastError(nullptr));
}

/* Waits until comm has no operation in progress (init) or, with stream
 * work, until the default stream drained; bounded by the job's timeout. */
int wait_comm(oar_kernel_ctx_t *k, const Api *nc, Comm comm, bool stream, const char *call)
{
    const double t0 = now_s(), limit = oar_comm_timeout();
    for (long i = 0;; i++) {
        Result async = oarnccl::Success;
        Result r = nc->CommGetAsyncError(comm, &async);
        if (r != oarnccl::Success) async = r;
        if (async != oarnccl::Success && async != oarnccl::InProgress) {
            nc->CommAbort(comm);
            comm_dead[oar_k_device(k)] = true;
            return nccl_fail(k, nc, async, call);
        }
        bool done = async == oarnccl::Success;
        if (done && stream) {
            cudaError_t e = cudaStreamQuery(0);
            if (e != cudaSuccess && e != cudaErrorNotReady) return cuda_fail(k, e, call);
            done = e == cudaSuccess;
        }
        if (done) return OAR_OK;
        double waited = now_s() - t0;
        if (waited > limit) {
            nc->CommAbort(comm);
            comm_dead[oar_k_device(k)] = true;
            return oar_k_error(k, OAR_ERR_COMM,
                               "worker %d of %d waited %.1f s in %s and the other workers did not answer: a "
                               "worker died, hangs, never joined, or runs a different program",
                               oar_comm_rank(), oar_comm_size(), waited, call);
        }
        if ((i & 63) == 63) sched_yield();
    }
}

/* The device's communicator, made on first use. */
int get_comm(oar_kernel_ctx_t *k, const Api *nc, Comm *out)
{
    int dev = oar_k_device(k);
    if (dev < 0 || dev >= kMaxDevices) return oar_k_error(k, OAR_ERR_RANGE, "CUDA device %d: too many devices", dev);
    if (comm_dead[dev])
        return oar_k_error(k, OAR_ERR_COMM, "the NCCL communicator of CUDA device %d failed earlier", dev);
    if (comms[dev]) { *out = comms[dev]; return OAR_OK; }
    oarnccl::UniqueId id;
    memset(&id, 0, sizeof id);
    if (oar_comm_rank() == 0) {
        Result r = nc->GetUniqueId(&id);
        if (r != oarnccl::Success) return nccl_fail(k, nc, r, "ncclGetUniqueId");
    }
    int rc = oar_comm_broadcast(&id, sizeof id, 0);
    if (rc != OAR_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", oar_last_error());
        return oar_k_error(k, rc, "sending NCCL's unique id: %s", msg);
    }
    OAR_CU(k, cudaSetDevice(dev), "cudaSetDevice");
    oarnccl::Config cfg = oarnccl::nonblocking_config();
    Comm c = nullptr;
    Result r = nc->CommInitRankConfig(&c, oar_comm_size(), id, oar_comm_rank(), &cfg);
    if (r != oarnccl::Success && r != oarnccl::InProgress) return nccl_fail(k, nc, r, "ncclCommInitRankConfig");
    OAR_TRY(wait_comm(k, nc, c, false, "ncclCommInitRankConfig"));
    comms[dev] = c;
    *out = c;
    return OAR_OK;
}

bool nccl_dtype(int dt, oarnccl::DataType *out)
{
    switch (dt) {
    case OAR_FP32: *out = oarnccl::Float32; return true;
    case OAR_FP64: *out = oarnccl::Float64; return true;
    case OAR_FP16: *out = oarnccl::Float16; return true;
    case OAR_INT32: *out = oarnccl::Int32; return true;
    case OAR_INT64: *out = oarnccl::Int64; return true;
    case OAR_UINT8: *out = oarnccl::Uint8; return true;
    default: return false;
    }
}

/* what every collective starts with: ring and dtype checks, the program
 * check, NCCL's functions, the communicator */
struct Coll {
    const Api *nc;
    Comm comm;
    oarnccl::DataType dt;
};
int prologue(oar_kernel_ctx_t *k, Coll *c)
{
    const oar_op_desc_t *op = oar_k_op(k);
    int ring = ((const oar_collective_attrs_t *)oar_k_attrs(k))->ring_id;
    if (ring != 0)
        return oar_k_error(k, OAR_ERR_UNSUPPORTED, "ring_id %d: oar has one communicator (ring 0)", ring);
    if (!nccl_dtype(oar_k_dtype(k), &c->dt))
        return oar_k_error(k, OAR_ERR_UNSUPPORTED, "NCCL cannot carry %s data", nm(oar_dtype_name(oar_k_dtype(k))));
    int rc = oar_comm_check_once(oar_k_program(k), oar_op_desc_type(op));
    if (rc != OAR_OK) {
        char msg[1536];
        snprintf(msg, sizeof msg, "%s", oar_last_error());
        return oar_k_error(k, rc, "%s", msg);
    }
    OAR_TRY(nccl_api(k, &c->nc));
    return get_comm(k, c->nc, &c->comm);
}

int allreduce(oar_kernel_ctx_t *k, oarnccl::RedOp red)
{
    Coll c;
    OAR_TRY(prologue(k, &c));
    const oar_tensor_t *x;
    const void *xp;
    OAR_TRY(in_tensor_at(k, OAR_COLL_X, 0, oar_k_dtype(k), -1, &x, &xp));
    int64_t n = oar_tensor_numel_of(x);
    if (n == 0) return OAR_OK;
    void *yp;
    OAR_TRY(out_data_at(k, OAR_COLL_OUT, 0, oar_k_dtype(k), n, &yp));
    Result r = c.nc->AllReduce(xp, yp, (size_t)n, c.dt, red, c.comm, nullptr);
    if (r != oarnccl::Success && r != oarnccl::InProgress) return nccl_fail(k, c.nc, r, "ncclAllReduce");
    return wait_comm(k, c.nc, c.comm, true, "ncclAllReduce");
}

int allreduce_sum(oar_kernel_ctx_t *k) { return allreduce(k, oarnccl::Sum); }
int allreduce_max(oar_kernel_ctx_t *k) { return allreduce(k, oarnccl::Max); }
int allreduce_min(oar_kernel_ctx_t *k) { return allreduce(k, oarnccl::Min); }
int allreduce_prod(oar_kernel_ctx_t *k) { return allreduce(k, oarnccl::Prod); }

int broadcast(oar_kernel_ctx_t *k)
{
    Coll c;
    OAR_TRY(prologue(k, &c));
    int root = ((const oar_collective_attrs_t *)oar_k_attrs(k))->root;
    if (root >= oar_comm_size())
        return oar_k_error(k, OAR_ERR_RANGE, "root %d is not a worker: the job has %d", root, oar_comm_size());
    const oar_tensor_t *x;
    const void *xp;
    OAR_TRY(in_tensor_at(k, OAR_COLL_X, 0, oar_k_dtype(k), -1, &x, &xp));
    int64_t n = oar_tensor_numel_of(x);
    if (n == 0) return OAR_OK;
    void *yp;
    OAR_TRY(out_data_at(k, OAR_COLL_OUT, 0, oar_k_dtype(k), n, &yp));
    Result r = c.nc->Broadcast(xp, yp, (size_t)n, c.dt, root, c.comm, nullptr);
    if (r != oarnccl::Success && r != oarnccl::InProgress) return nccl_fail(k, c.nc, r, "ncclBroadcast");
    return wait_comm(k, c.nc, c.comm, true, "ncclBroadcast");
}

int allgather(oar_kernel_ctx_t *k)
{
    Coll c;
    OAR_TRY(prologue(k, &c));
    int nranks = ((const oar_collective_attrs_t *)oar_k_attrs(k))->nranks;
    if (nranks != oar_comm_size())
        return oar_k_error(k, OAR_ERR_INVALID, "attr nranks is %d but the job has %d workers", nranks, oar_comm_size());
    oar_variable_t *xv = oar_k_input_var(k, OAR_COLL_X, 0);
    if (xv && oar_variable_type(xv) == OAR_VAR_SELECTED_ROWS)
        return oar_k_error(k, OAR_ERR_UNSUPPORTED, "input X '%s' holds selected rows: on CUDA, gather sparse "
                           "gradients densified (fleet strategy sparse_grad = \"dense\")",
                           nm(oar_k_input_name(k, OAR_COLL_X, 0)));
    const oar_tensor_t *x;
    const void *xp;
    OAR_TRY(in_tensor_at(k, OAR_COLL_X, 0, oar_k_dtype(k), -1, &x, &xp));
    int64_t n = oar_tensor_numel_of(x);
    if (n == 0) return OAR_OK;
    /* Out may be X: gather from a copy */
    Scratch mine;
    size_t bytes = (size_t)n * oar_dtype_size(oar_k_dtype(k));
    OAR_TRY(mine.alloc(k, bytes, "the gathered input"));
    OAR_CU(k, cudaMemcpyAsync(mine.p, xp, bytes, cudaMemcpyDeviceToDevice, 0), "cudaMemcpyAsync");
    void *yp;
    OAR_TRY(out_data_at(k, OAR_COLL_OUT, 0, oar_k_dtype(k), n * nranks, &yp));
    Result r = c.nc->AllGather(mine.p, yp, (size_t)n, c.dt, c.comm, nullptr);
    if (r != oarnccl::Success && r != oarnccl::InProgress) return nccl_fail(k, c.nc, r, "ncclAllGather");
    return wait_comm(k, c.nc, c.comm, true, "ncclAllGather");
}

/* ---- the gradient buffer: device-to-device copies on the default stream ---- */
int coalesce(oar_kernel_ctx_t *k)
{
    int n = oar_k_nin(k, OAR_COLL_X), dt = oar_k_dtype(k);
    size_t es = oar_dtype_size(dt), total = 0;
    for (int i = 0; i < n; i++) {
        const oar_tensor_t *x;
        const void *xp;
        OAR_TRY(in_tensor_at(k, OAR_COLL_X, i, dt, -1, &x, &xp));
        total += (size_t)oar_tensor_numel_of(x) * es;
    }
    if (total == 0) return OAR_OK;
    void *yp;
    OAR_TRY(out_data_at(k, OAR_COLL_OUT, 0, dt, (int64_t)(total / es), &yp));
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        const oar_tensor_t *x;
        const void *xp;
        OAR_TRY(in_tensor_at(k, OAR_COLL_X, i, dt, -1, &x, &xp));
        size_t b = (size_t)oar_tensor_numel_of(x) * es;
        if (b) OAR_CU(k, cudaMemcpyAsync((char *)yp + at, xp, b, cudaMemcpyDeviceToDevice, 0), "cudaMemcpyAsync");
        at += b;
    }
    return OAR_OK;
}

int split_coalesced(oar_kernel_ctx_t *k)
{
    int n = oar_k_nout(k, OAR_COLL_OUT), dt = oar_k_dtype(k);
    size_t es = oar_dtype_size(dt);
    const oar_tensor_t *x;
    const void *xp;
    OAR_TRY(in_tensor_at(k, OAR_COLL_X, 0, dt, -1, &x, &xp));
    size_t total = (size_t)oar_tensor_numel_of(x) * es, at = 0;
    for (int i = 0; i < n; i++) {
        oar_tensor_t *o = oar_k_output(k, OAR_COLL_OUT, i);
        if (!o) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Out[%d] is missing", i);
        size_t b = (size_t)oar_tensor_numel_of(o) * es;
        if (at + b > total)
            return oar_k_error(k, OAR_ERR_SHAPE, "input X holds %zu elements, fewer than the outputs need", total / es);
        if (b) {
            void *y = oar_tensor_mutable_on(o, dt, OAR_PLACE_CUDA, oar_k_device(k));
            if (!y) return OAR_ERR_NOMEM;
            OAR_CU(k, cudaMemcpyAsync(y, (const char *)xp + at, b, cudaMemcpyDeviceToDevice, 0), "cudaMemcpyAsync");
        }
        at += b;
    }
    if (at != total)
        return oar_k_error(k, OAR_ERR_SHAPE, "input X holds %zu elements, the outputs %zu", total / es, at / es);
    return OAR_OK;
}

}  // namespace

#define REG(TYPE, FN, DT, TAG) \
    static int FN##_##TAG(oar_kernel_ctx_t *k) { return FN(k); } \
    OAR_REGISTER_KERNEL(TYPE, OAR_PLACE_CUDA, DT, FN##_##TAG)
#define REG_ALL(TYPE, FN)        \
    REG(TYPE, FN, OAR_FP32, f32) \
    REG(TYPE, FN, OAR_FP64, f64) \
    REG(TYPE, FN, OAR_FP16, f16) \
    REG(TYPE, FN, OAR_INT32, i32) \
    REG(TYPE, FN, OAR_INT64, i64)

REG_ALL("c_allreduce_sum", allreduce_sum)
REG_ALL("c_allreduce_max", allreduce_max)
REG_ALL("c_allreduce_min", allreduce_min)
REG_ALL("c_allreduce_prod", allreduce_prod)
REG_ALL("c_broadcast", broadcast)
REG_ALL("c_allgather", allgather)
REG_ALL("c_coalesce", coalesce)
REG_ALL("c_split_coalesced", split_coalesced)
