/*
 * metric.cu — CUDA kernels of top_k (+grad) and accuracy, with the CPU
 * kernels' semantics (kernels/cpu/index_ops.c, metric.c).
 *
 * top_k orders larger values first, NaN above every number, ties to the
 * lower index. k comes from Out's last dim (run-time inference read it from
 * the attr or the K input). Small k: one thread per row keeps a sorted list
 * of k entries; larger k: one thread per element computes its rank in its
 * row (the number of elements ordered before it) and writes itself there
 * when the rank is below k. accuracy: a row is correct when its label is
 * among its k indices; one block counts and writes Accuracy, Correct, Total.
 */
#include "cuda_common.h"
#include "ops/index_ops.h"
#include "ops/metric.h"

using namespace oarcu;

namespace {

constexpr int kSmallK = 16;

/* a ranks before b (ia, ib their positions) */
template <class T> __device__ inline bool better(T a, int64_t ia, T b, int64_t ib)
{
    return (a != a && b == b) || a > b || ((a == b || (a != a && b != b)) && ia < ib);
}

template <class T>
__global__ void topk_small_k(const T *x, T *ov, int64_t *oi, int64_t rows, int64_t d, int64_t kk)
{
    OAR_CU_LOOP(r, rows) {
        T v[kSmallK];
        int64_t ix[kSmallK];
        int64_t filled = 0;
        const T *xr = x + r * d;
        for (int64_t j = 0; j < d; j++) {
            T a = xr[j];
            if (filled == kk && !better(a, j, v[kk - 1], ix[kk - 1])) continue;
            int64_t p = filled < kk ? filled : kk - 1;
            while (p > 0 && better(a, j, v[p - 1], ix[p - 1])) {
                v[p] = v[p - 1];
                ix[p] = ix[p - 1];
                p--;
            }
            v[p] = a;
            ix[p] = j;
            if (filled < kk) filled++;
        }
        for (int64_t j = 0; j < kk; j++) {
            ov[r * kk + j] = v[j];
            oi[r * kk + j] = ix[j];
        }
    }
}

template <class T>
__global__ void topk_rank_k(const T *x, T *ov, int64_t *oi, int64_t rows, int64_t d, int64_t kk)
{
    OAR_CU_LOOP(q, rows * d) {
        const int64_t r = q / d, j = q % d;
        const T *xr = x + r * d;
        const T a = xr[j];
        int64_t rank = 0;
        for (int64_t i = 0; i < d && rank < kk; i++) rank += better(xr[i], i, a, j);
        if (rank < kk) {
            ov[r * kk + rank] = a;
            oi[r * kk + rank] = j;
        }
    }
}

template <class T>
int top_k_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *x;
    const void *xd;
    OAR_TRY(in_tensor_at(k, OAR_IDX_X, 0, dt, -1, &x, &xd));
    if (x->ndim < 1) return oar_k_error(k, OAR_ERR_SHAPE, "input X has rank 0");
    oar_tensor_t *out = oar_k_output(k, OAR_IDX_OUT, 0);
    if (!out || !oar_k_output(k, OAR_TOPK_INDICES, 0))
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "outputs Out and Indices need tensors");
    if (out == x) return oar_k_error(k, OAR_ERR_INVALID, "Out is X itself; top_k cannot run in place");
    const int64_t d = x->dims[x->ndim - 1], kk = out->ndim > 0 ? out->dims[out->ndim - 1] : 0;
    const int64_t rows = d > 0 ? oar_tensor_numel_of(x) / d : 0;
    void *ov, *oi;
    OAR_TRY(out_data_at(k, OAR_IDX_OUT, 0, dt, rows * kk, &ov));
    OAR_TRY(out_data_at(k, OAR_TOPK_INDICES, 0, OAR_INT64, rows * kk, &oi));
    if (rows == 0 || kk == 0) return OAR_OK;
    if (kk > d) return oar_k_error(k, OAR_ERR_RANGE, "k = %lld exceeds the last dimension %lld", (long long)kk,
                                   (long long)d);
    if (kk <= kSmallK)
        topk_small_k<T><<<grid_for(rows, 128), 128>>>((const T *)xd, (T *)ov, (int64_t *)oi, rows, d, kk);
    else
        topk_rank_k<T><<<grid_for(rows * d), kThreads>>>((const T *)xd, (T *)ov, (int64_t *)oi, rows, d, kk);
    OAR_CU_LAUNCH(k, "top_k");
    return OAR_OK;
}

/* dX = 0, then Out@GRAD scattered to the Indices (range-checked in the kernel) */
template <class T>
__global__ void topk_grad_k(const int64_t *ind, const T *g, T *dx, int64_t rows, int64_t d, int64_t kk,
                            unsigned long long *bad)
{
    OAR_CU_LOOP(q, rows * kk) {
        const int64_t r = q / kk, i = ind[q];
        if (i < 0 || i >= d) { flag_bad(bad, q); continue; }
        atomicAdd(dx + r * d + i, g[q]);
    }
}

template <class T>
int top_k_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *x, *ind, *g;
    const void *xd, *id, *gd;
    OAR_TRY(in_tensor_at(k, OAR_IDX_X, 0, -1, -1, &x, &xd));
    OAR_TRY(in_tensor_at(k, OAR_TOPKG_INDICES, 0, OAR_INT64, -1, &ind, &id));
    OAR_TRY(in_tensor_at(k, OAR_TOPKG_DOUT, 0, dt, oar_tensor_numel_of(ind), &g, &gd));
    const int64_t d = x->ndim > 0 ? x->dims[x->ndim - 1] : 1;
    const int64_t rows = d > 0 ? oar_tensor_numel_of(x) / d : 0;
    const int64_t kk = ind->ndim > 0 ? ind->dims[ind->ndim - 1] : 0;
    if (oar_tensor_numel_of(ind) != rows * kk)
        return oar_k_error(k, OAR_ERR_SHAPE, "Indices and Out@GRAD must hold %lld rows of k values", (long long)rows);
    if (!oar_k_output(k, OAR_TOPKG_DX, 0)) return OAR_OK;
    void *dx;
    OAR_TRY(out_data_at(k, OAR_TOPKG_DX, 0, dt, rows * d, &dx));
    if (rows * d > 0) OAR_CU(k, cudaMemsetAsync(dx, 0, sizeof(T) * (size_t)(rows * d), 0), "cudaMemsetAsync");
    if (rows * kk == 0) return OAR_OK;
    BadFlag bad;
    OAR_TRY(bad.init(k));
    topk_grad_k<T><<<grid_for(rows * kk), kThreads>>>((const int64_t *)id, (const T *)gd, (T *)dx, rows, d, kk,
                                                      bad.ptr());
    OAR_CU_LAUNCH(k, "top_k_grad");
    OAR_TRY(bad.report(k, "Indices '%s' holds an index outside [0, %lld)",
                       nm(oar_k_input_name(k, OAR_TOPKG_INDICES, 0)),
                       (long long)d));
    return OAR_OK;
}

/* ---- accuracy ------------------------------------------------------------------ */
__global__ void accuracy_k(const int64_t *ind, const int64_t *lbl, int64_t n, int64_t kk, float *acc,
                           int32_t *cor, int32_t *tot)
{
    __shared__ long long sh[32];
    long long c = 0;
    for (int64_t r = threadIdx.x; r < n; r += blockDim.x)
        for (int64_t j = 0; j < kk; j++)
            if (ind[r * kk + j] == lbl[r]) { c++; break; }
    c = block_sum(c, sh);
    if (threadIdx.x == 0) {
        acc[0] = n > 0 ? (float)((double)c / (double)n) : 0.0f;
        cor[0] = (int32_t)c;
        tot[0] = (int32_t)n;
    }
}

int accuracy_run(oar_kernel_ctx_t *k)
{
    const oar_tensor_t *ind, *lbl;
    const void *id, *ld;
    OAR_TRY(in_tensor_at(k, OAR_ACC_INDICES, 0, OAR_INT64, -1, &ind, &id));
    const int64_t n = ind->ndim == 2 ? ind->dims[0] : 0, kk = ind->ndim == 2 ? ind->dims[1] : 0;
    if (ind->ndim != 2)
        return oar_k_error(k, OAR_ERR_SHAPE, "Indices must be [N, k] and Label hold N values");
    OAR_TRY(in_tensor_at(k, OAR_ACC_LABEL, 0, OAR_INT64, n, &lbl, &ld));
    if (n > INT32_MAX) return oar_k_error(k, OAR_ERR_RANGE, "%lld rows do not fit Total (int32)", (long long)n);
    void *acc, *cor, *tot;
    OAR_TRY(out_data_at(k, OAR_ACC_ACCURACY, 0, OAR_FP32, -1, &acc));
    OAR_TRY(out_data_at(k, OAR_ACC_CORRECT, 0, OAR_INT32, -1, &cor));
    OAR_TRY(out_data_at(k, OAR_ACC_TOTAL, 0, OAR_INT32, -1, &tot));
    accuracy_k<<<1, kThreads>>>((const int64_t *)id, (const int64_t *)ld, n, kk, (float *)acc, (int32_t *)cor,
                                (int32_t *)tot);
    OAR_CU_LAUNCH(k, "accuracy");
    return OAR_OK;
}

int top_k_f32(oar_kernel_ctx_t *k) { return top_k_fwd<float>(k, OAR_FP32); }
int top_k_f64(oar_kernel_ctx_t *k) { return top_k_fwd<double>(k, OAR_FP64); }
int top_k_grad_f32(oar_kernel_ctx_t *k) { return top_k_bwd<float>(k, OAR_FP32); }
int top_k_grad_f64(oar_kernel_ctx_t *k) { return top_k_bwd<double>(k, OAR_FP64); }
int accuracy_f32(oar_kernel_ctx_t *k) { return accuracy_run(k); }
int accuracy_f64(oar_kernel_ctx_t *k) { return accuracy_run(k); }

OAR_REGISTER_KERNEL("top_k", OAR_PLACE_CUDA, OAR_FP32, top_k_f32)
OAR_REGISTER_KERNEL("top_k", OAR_PLACE_CUDA, OAR_FP64, top_k_f64)
OAR_REGISTER_KERNEL("top_k_grad", OAR_PLACE_CUDA, OAR_FP32, top_k_grad_f32)
OAR_REGISTER_KERNEL("top_k_grad", OAR_PLACE_CUDA, OAR_FP64, top_k_grad_f64)
OAR_REGISTER_KERNEL("accuracy", OAR_PLACE_CUDA, OAR_FP32, accuracy_f32)
OAR_REGISTER_KERNEL("accuracy", OAR_PLACE_CUDA, OAR_FP64, accuracy_f64)

}  // namespace
