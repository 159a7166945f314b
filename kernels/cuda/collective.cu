/*
 * collective.cu — CUDA kernels of the collective ops (src/ops/collective.c)
 * over NCCL: c_allreduce_sum/_max/_min/_prod, c_broadcast, c_allgather
 * (dense) and the gradient buffer pair c_coalesce / c_split_coalesced.
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
#include <nccl.h>
#include <stdio.h>
#include <sched.h>
#include <time.h>
#include "cuda_common.h"
#include "ops/collective.h"
extern "C" {
#include "comm.h"
}

using namespace oarcu;

namespace {

constexpr int kMaxDevices = 64;
ncclComm_t comms[kMaxDevices];
bool comm_dead[kMaxDevices];

double now_s()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int nccl_fail(oar_kernel_ctx_t *k, ncclResult_t r, const char *call)
{
    return oar_k_error(k, OAR_ERR_COMM, "%s failed on worker %d of %d: %s (%s)", call, oar_comm_rank(),
                       oar_comm_size(), ncclGetErrorString(r), ncclGetLastError(nullptr));
}

/* Waits until comm has no operation in progress (init) or, with stream
 * work, until the default stream drained; bounded by the job's timeout. */
int wait_comm(oar_kernel_ctx_t *k, ncclComm_t comm, bool stream, const char *call)
{
    const double t0 = now_s(), limit = oar_comm_timeout();
    for (long i = 0;; i++) {
        ncclResult_t async = ncclSuccess;
        ncclResult_t r = ncclCommGetAsyncError(comm, &async);
        if (r != ncclSuccess) async = r;
        if (async != ncclSuccess && async != ncclInProgress) {
            ncclCommAbort(comm);
            comm_dead[k->device] = true;
            return nccl_fail(k, async, call);
        }
        bool done = async == ncclSuccess;
        if (done && stream) {
            cudaError_t e = cudaStreamQuery(0);
            if (e != cudaSuccess && e != cudaErrorNotReady) return cuda_fail(k, e, call);
            done = e == cudaSuccess;
        }
        if (done) return OAR_OK;
        double waited = now_s() - t0;
        if (waited > limit) {
            ncclCommAbort(comm);
            comm_dead[k->device] = true;
            return oar_k_error(k, OAR_ERR_COMM,
                               "worker %d of %d waited %.1f s in %s and the other workers did not answer: a "
                               "worker died, hangs, never joined, or runs a different program",
                               oar_comm_rank(), oar_comm_size(), waited, call);
        }
        if ((i & 63) == 63) sched_yield();
    }
}

/* The device's communicator, made on first use. */
int get_comm(oar_kernel_ctx_t *k, ncclComm_t *out)
{
    int dev = k->device;
    if (dev < 0 || dev >= kMaxDevices) return oar_k_error(k, OAR_ERR_RANGE, "CUDA device %d: too many devices", dev);
    if (comm_dead[dev])
        return oar_k_error(k, OAR_ERR_COMM, "the NCCL communicator of CUDA device %d failed earlier", dev);
    if (comms[dev]) { *out = comms[dev]; return OAR_OK; }
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    if (oar_comm_rank() == 0) {
        ncclResult_t r = ncclGetUniqueId(&id);
        if (r != ncclSuccess) return nccl_fail(k, r, "ncclGetUniqueId");
    }
    int rc = oar_comm_broadcast(&id, sizeof id, 0);
    if (rc != OAR_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", oar_last_error());
        return oar_k_error(k, rc, "sending NCCL's unique id: %s", msg);
    }
    OAR_CU(k, cudaSetDevice(dev), "cudaSetDevice");
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    ncclComm_t c = nullptr;
    ncclResult_t r = ncclCommInitRankConfig(&c, oar_comm_size(), id, oar_comm_rank(), &cfg);
    if (r != ncclSuccess && r != ncclInProgress) return nccl_fail(k, r, "ncclCommInitRankConfig");
    OAR_TRY(wait_comm(k, c, false, "ncclCommInitRankConfig"));
    comms[dev] = c;
    *out = c;
    return OAR_OK;
}

bool nccl_dtype(int dt, ncclDataType_t *out)
{
    switch (dt) {
    case OAR_FP32: *out = ncclFloat32; return true;
    case OAR_FP64: *out = ncclFloat64; return true;
    case OAR_FP16: *out = ncclFloat16; return true;
    case OAR_INT32: *out = ncclInt32; return true;
    case OAR_INT64: *out = ncclInt64; return true;
    case OAR_UINT8: *out = ncclUint8; return true;
    default: return false;
    }
}

/* ring check, program check, communicator, NCCL dtype */
int prologue(oar_kernel_ctx_t *k, ncclComm_t *comm, ncclDataType_t *dt)
{
    const oar_op_desc_t *op = oar_k_op(k);
    int ring = ((const oar_collective_attrs_t *)oar_k_attrs(k))->ring_id;
    if (ring != 0)
        return oar_k_error(k, OAR_ERR_UNSUPPORTED, "ring_id %d: oar has one communicator (ring 0)", ring);
    if (!nccl_dtype(oar_k_dtype(k), dt))
        return oar_k_error(k, OAR_ERR_UNSUPPORTED, "NCCL cannot carry %s data", nm(oar_dtype_name(oar_k_dtype(k))));
    int rc = oar_comm_check_once(oar_k_program(k), oar_op_desc_type(op));
    if (rc != OAR_OK) {
        char msg[1536];
        snprintf(msg, sizeof msg, "%s", oar_last_error());
        return oar_k_error(k, rc, "%s", msg);
    }
    return get_comm(k, comm);
}

int allreduce(oar_kernel_ctx_t *k, ncclRedOp_t red)
{
    ncclComm_t comm;
    ncclDataType_t ndt;
    OAR_TRY(prologue(k, &comm, &ndt));
    const oar_tensor_t *x;
    const void *xp;
    OAR_TRY(in_tensor_at(k, OAR_COLL_X, 0, oar_k_dtype(k), -1, &x, &xp));
    int64_t n = oar_tensor_numel_of(x);
    if (n == 0) return OAR_OK;
    void *yp;
    OAR_TRY(out_data_at(k, OAR_COLL_OUT, 0, oar_k_dtype(k), n, &yp));
    ncclResult_t r = ncclAllReduce(xp, yp, (size_t)n, ndt, red, comm, 0);
    if (r != ncclSuccess && r != ncclInProgress) return nccl_fail(k, r, "ncclAllReduce");
    return wait_comm(k, comm, true, "ncclAllReduce");
}

int allreduce_sum(oar_kernel_ctx_t *k) { return allreduce(k, ncclSum); }
int allreduce_max(oar_kernel_ctx_t *k) { return allreduce(k, ncclMax); }
int allreduce_min(oar_kernel_ctx_t *k) { return allreduce(k, ncclMin); }
int allreduce_prod(oar_kernel_ctx_t *k) { return allreduce(k, ncclProd); }

int broadcast(oar_kernel_ctx_t *k)
{
    ncclComm_t comm;
    ncclDataType_t ndt;
    OAR_TRY(prologue(k, &comm, &ndt));
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
    ncclResult_t r = ncclBroadcast(xp, yp, (size_t)n, ndt, root, comm, 0);
    if (r != ncclSuccess && r != ncclInProgress) return nccl_fail(k, r, "ncclBroadcast");
    return wait_comm(k, comm, true, "ncclBroadcast");
}

int allgather(oar_kernel_ctx_t *k)
{
    ncclComm_t comm;
    ncclDataType_t ndt;
    OAR_TRY(prologue(k, &comm, &ndt));
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
    ncclResult_t r = ncclAllGather(mine.p, yp, (size_t)n, ndt, comm, 0);
    if (r != ncclSuccess && r != ncclInProgress) return nccl_fail(k, r, "ncclAllGather");
    return wait_comm(k, comm, true, "ncclAllGather");
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
            void *y = oar_tensor_mutable_on(o, dt, OAR_PLACE_CUDA, k->device);
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
