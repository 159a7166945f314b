/*
 * misc_ops.cu — CUDA kernels of gather (+grad), increment,
 * sigmoid_cross_entropy_with_logits (+grad) and clip_by_norm, with the CPU
 * kernels' semantics (kernels/cpu/index_ops.c, tensor_ops.c, loss.c,
 * misc_ops.c). Everything stays on the device: gather's range check is a
 * run-wide flag (read at the run's end), and the values other kernels need
 * (clip_by_norm's norm, the count of labels sigmoid_cross_entropy normalizes
 * by) are reduced into device scalars read by the next kernel.
 */
#include "cuda_common.h"
#include "ops/index_ops.h"
#include "ops/loss.h"
#include "ops/misc_ops.h"
#include "ops/tensor_ops.h"

using namespace oarcu;

namespace {

/* ---- gather ---------------------------------------------------------------- */
template <class I>
__global__ void gather_k(const char *x, const I *idx, char *o, int64_t m, int64_t row_bytes, int64_t rows,
                         unsigned long long *bad)
{
    OAR_CU_LOOP(q, m * row_bytes) {
        const int64_t i = q / row_bytes, b = q % row_bytes, v = (int64_t)idx[i];
        if (v < 0 || v >= rows) {
            if (b == 0) flag_bad(bad, i);
            o[q] = 0;
            continue;
        }
        o[q] = x[v * row_bytes + b];
    }
}

template <class T, class I>
__global__ void gather_grad_k(const I *idx, const T *g, T *dx, int64_t m, int64_t row, int64_t rows,
                              unsigned long long *bad)
{
    OAR_CU_LOOP(q, m * row) {
        const int64_t i = q / row, v = (int64_t)idx[i];
        if (v < 0 || v >= rows) {
            if (q % row == 0) flag_bad(bad, i);
            continue;
        }
        atomicAdd(dx + v * row + q % row, g[q]);   /* repeated indices add up */
    }
}

int gather_index(oar_kernel_ctx_t *k, const oar_tensor_t **idx, const void **id)
{
    OAR_TRY(in_tensor_at(k, OAR_GATHER_INDEX, 0, -1, -1, idx, id));
    if ((*idx)->dtype != OAR_INT64 && (*idx)->dtype != OAR_INT32)
        return oar_k_error(k, OAR_ERR_DTYPE, "input Index '%s' has dtype %s, expected int32 or int64",
                           nm(oar_k_input_name(k, OAR_GATHER_INDEX, 0)), nm(oar_dtype_name((*idx)->dtype)));
    return OAR_OK;
}

int gather_fwd(oar_kernel_ctx_t *k)
{
    const oar_tensor_t *x, *idx;
    const void *xd, *id;
    OAR_TRY(in_tensor_at(k, OAR_IDX_X, 0, -1, -1, &x, &xd));
    OAR_TRY(gather_index(k, &idx, &id));
    if (oar_k_output(k, OAR_IDX_OUT, 0) == x)
        return oar_k_error(k, OAR_ERR_INVALID, "Out is X itself; gather cannot run in place");
    void *o = oar_k_output_data(k, OAR_IDX_OUT, 0, x->dtype);
    if (!o) return OAR_ERR_NOMEM;
    const int64_t m = oar_tensor_numel_of(idx), rows = x->ndim > 0 ? x->dims[0] : 1;
    int64_t row = (int64_t)oar_dtype_size(x->dtype);
    for (int i = 1; i < x->ndim; i++) row *= x->dims[i];
    if (row == 0 || m == 0) return OAR_OK;
    BadFlag bad;
    OAR_TRY(bad.init(k));
    if (idx->dtype == OAR_INT64)
        gather_k<int64_t><<<grid_for(m * row), kThreads>>>((const char *)xd, (const int64_t *)id, (char *)o, m, row, rows,
                                                           bad.ptr());
    else
        gather_k<int32_t><<<grid_for(m * row), kThreads>>>((const char *)xd, (const int32_t *)id, (char *)o, m, row, rows,
                                                           bad.ptr());
    OAR_CU_LAUNCH(k, "gather");
    return bad.report(k, "Index '%s' holds a row out of range [0, %lld) for X '%s'",
                      nm(oar_k_input_name(k, OAR_GATHER_INDEX, 0)),
                      (long long)rows, nm(oar_k_input_name(k, OAR_IDX_X, 0)));
}

template <class T>
int gather_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *x, *idx, *g;
    const void *xd, *id, *gd;
    OAR_TRY(in_tensor_at(k, OAR_IDX_X, 0, dt, -1, &x, &xd));
    OAR_TRY(gather_index(k, &idx, &id));
    const int64_t m = oar_tensor_numel_of(idx), rows = x->ndim > 0 ? x->dims[0] : 1;
    int64_t row = 1;
    for (int i = 1; i < x->ndim; i++) row *= x->dims[i];
    OAR_TRY(in_tensor_at(k, OAR_GATHERG_DOUT, 0, dt, m * row, &g, &gd));
    if (!oar_k_output(k, OAR_GATHERG_DX, 0)) return OAR_OK;
    void *dx;
    OAR_TRY(out_data_at(k, OAR_GATHERG_DX, 0, dt, oar_tensor_numel_of(x), &dx));
    const int64_t xn = oar_tensor_numel_of(x);
    if (xn > 0) OAR_CU(k, cudaMemsetAsync(dx, 0, sizeof(T) * (size_t)xn, 0), "cudaMemsetAsync");
    if (m * row == 0) return OAR_OK;
    BadFlag bad;
    OAR_TRY(bad.init(k));
    if (idx->dtype == OAR_INT64)
        gather_grad_k<T, int64_t><<<grid_for(m * row), kThreads>>>((const int64_t *)id, (const T *)gd, (T *)dx, m, row,
                                                                   rows, bad.ptr());
    else
        gather_grad_k<T, int32_t><<<grid_for(m * row), kThreads>>>((const int32_t *)id, (const T *)gd, (T *)dx, m, row,
                                                                   rows, bad.ptr());
    OAR_CU_LAUNCH(k, "gather_grad");
    return bad.report(k, "Index '%s' holds a row out of range [0, %lld) for X '%s'",
                      nm(oar_k_input_name(k, OAR_GATHER_INDEX, 0)),
                      (long long)rows, nm(oar_k_input_name(k, OAR_IDX_X, 0)));
}

#define GATHER_FWD(sfx, DT)                                             \
    int gather_##sfx(oar_kernel_ctx_t *k) { return gather_fwd(k); }     \
    OAR_REGISTER_KERNEL("gather", OAR_PLACE_CUDA, DT, gather_##sfx)
GATHER_FWD(f32, OAR_FP32)
GATHER_FWD(f64, OAR_FP64)
GATHER_FWD(i32, OAR_INT32)
GATHER_FWD(i64, OAR_INT64)
GATHER_FWD(f16, OAR_FP16)
GATHER_FWD(i16, OAR_INT16)
GATHER_FWD(i8, OAR_INT8)
GATHER_FWD(u8, OAR_UINT8)
GATHER_FWD(b, OAR_BOOL)
int gather_grad_f32(oar_kernel_ctx_t *k) { return gather_bwd<float>(k, OAR_FP32); }
int gather_grad_f64(oar_kernel_ctx_t *k) { return gather_bwd<double>(k, OAR_FP64); }
OAR_REGISTER_KERNEL("gather_grad", OAR_PLACE_CUDA, OAR_FP32, gather_grad_f32)
OAR_REGISTER_KERNEL("gather_grad", OAR_PLACE_CUDA, OAR_FP64, gather_grad_f64)

/* ---- increment: Out = X + step, one element ------------------------------------ */
template <class T>
__global__ void increment_k(const T *x, T *y, double step)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) *y = (T)(*x + step);
}

template <class T>
int increment_run(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *x;
    const void *xd;
    OAR_TRY(in_tensor_at(k, OAR_TENSOR_X, 0, dt, -1, &x, &xd));
    if (oar_tensor_numel_of(x) != 1)
        return oar_k_error(k, OAR_ERR_SHAPE, "input X '%s' has %lld elements, expected 1",
                           nm(oar_k_input_name(k, OAR_TENSOR_X, 0)), (long long)oar_tensor_numel_of(x));
    void *y;
    OAR_TRY(out_data_at(k, OAR_TENSOR_OUT, 0, dt, 1, &y));
    const double step = ((const oar_increment_attrs_t *)oar_k_attrs(k))->step;
    increment_k<T><<<1, 32>>>((const T *)xd, (T *)y, step);
    OAR_CU_LAUNCH(k, "increment");
    return OAR_OK;
}
int increment_f32(oar_kernel_ctx_t *k) { return increment_run<float>(k, OAR_FP32); }
int increment_f64(oar_kernel_ctx_t *k) { return increment_run<double>(k, OAR_FP64); }
int increment_i32(oar_kernel_ctx_t *k) { return increment_run<int32_t>(k, OAR_INT32); }
int increment_i64(oar_kernel_ctx_t *k) { return increment_run<int64_t>(k, OAR_INT64); }
OAR_REGISTER_KERNEL("increment", OAR_PLACE_CUDA, OAR_FP32, increment_f32)
OAR_REGISTER_KERNEL("increment", OAR_PLACE_CUDA, OAR_FP64, increment_f64)
OAR_REGISTER_KERNEL("increment", OAR_PLACE_CUDA, OAR_INT32, increment_i32)
OAR_REGISTER_KERNEL("increment", OAR_PLACE_CUDA, OAR_INT64, increment_i64)

/* ---- sigmoid_cross_entropy_with_logits ------------------------------------------
 * Fluid compares the label cast to int with ignore_index; with normalize the
 * loss is divided by the number of labels not ignored (1 when all are). */
__device__ inline bool ignored(double z, int ignore) { return trunc(z) == (double)ignore; }

template <class T>
__global__ void count_k(const T *z, int64_t n, int ignore, unsigned long long *cnt)
{
    __shared__ unsigned long long sh[32];
    unsigned long long c = 0;
    OAR_CU_LOOP(i, n) c += !ignored((double)z[i], ignore);
    c = block_sum(c, sh);
    if (threadIdx.x == 0 && c) atomicAdd(cnt, c);
}

__device__ inline double sce_scale(const unsigned long long *cnt) { return cnt && *cnt ? 1.0 / (double)*cnt : 1.0; }

template <class T>
__global__ void sce_k(const T *x, const T *z, T *out, int64_t n, int ignore, const unsigned long long *cnt)
{
    const double scale = sce_scale(cnt);
    OAR_CU_LOOP(i, n) {
        const double xv = x[i], zv = z[i];
        out[i] = ignored(zv, ignore) ? T(0) : (T)((fmax(xv, 0.0) - xv * zv + log1p(exp(-fabs(xv)))) * scale);
    }
}

template <class T>
__global__ void sce_grad_k(const T *x, const T *z, const T *g, T *dx, int64_t n, int ignore,
                           const unsigned long long *cnt)
{
    const double scale = sce_scale(cnt);
    OAR_CU_LOOP(i, n) {
        const double xv = x[i], zv = z[i];
        dx[i] = ignored(zv, ignore) ? T(0) : (T)((1.0 / (1.0 + exp(-xv)) - zv) * (double)g[i] * scale);
    }
}

/* the device count of labels not ignored, or NULL without normalize */
template <class T>
int sce_count(oar_kernel_ctx_t *k, const T *z, int64_t n, int ignore, Scratch &s, const unsigned long long **cnt)
{
    *cnt = nullptr;
    if (!((const oar_sce_attrs_t *)oar_k_attrs(k))->normalize) return OAR_OK;
    OAR_TRY(s.alloc(k, sizeof(unsigned long long), "label count"));
    OAR_CU(k, cudaMemsetAsync(s.p, 0, sizeof(unsigned long long), 0), "cudaMemsetAsync");
    if (n > 0) {
        count_k<T><<<grid_for(n), kThreads>>>(z, n, ignore, s.as<unsigned long long>());
        OAR_CU_LAUNCH(k, "sigmoid_cross_entropy label count");
    }
    *cnt = s.as<unsigned long long>();
    return OAR_OK;
}

template <class T>
int sce_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt, *zt;
    const void *x, *z;
    OAR_TRY(in_tensor_at(k, OAR_SCE_X, 0, dt, -1, &xt, &x));
    const int64_t n = oar_tensor_numel_of(xt);
    OAR_TRY(in_tensor_at(k, OAR_SCE_LABEL, 0, dt, n, &zt, &z));
    void *out;
    OAR_TRY(out_data_at(k, OAR_SCE_OUT, 0, dt, n, &out));
    const int ignore = ((const oar_sce_attrs_t *)oar_k_attrs(k))->ignore_index;
    Scratch s;
    const unsigned long long *cnt;
    OAR_TRY(sce_count<T>(k, (const T *)z, n, ignore, s, &cnt));
    if (n == 0) return OAR_OK;
    sce_k<T><<<grid_for(n), kThreads>>>((const T *)x, (const T *)z, (T *)out, n, ignore, cnt);
    OAR_CU_LAUNCH(k, "sigmoid_cross_entropy_with_logits");
    return OAR_OK;
}

template <class T>
int sce_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt, *zt, *gt;
    const void *x, *z, *g;
    OAR_TRY(in_tensor_at(k, OAR_SCE_X, 0, dt, -1, &xt, &x));
    const int64_t n = oar_tensor_numel_of(xt);
    OAR_TRY(in_tensor_at(k, OAR_SCE_LABEL, 0, dt, n, &zt, &z));
    OAR_TRY(in_tensor_at(k, OAR_SCEG_DOUT, 0, dt, n, &gt, &g));
    if (!oar_k_output(k, OAR_SCEG_DX, 0)) return OAR_OK;
    void *dx;
    OAR_TRY(out_data_at(k, OAR_SCEG_DX, 0, dt, n, &dx));
    const int ignore = ((const oar_sce_attrs_t *)oar_k_attrs(k))->ignore_index;
    Scratch s;
    const unsigned long long *cnt;
    OAR_TRY(sce_count<T>(k, (const T *)z, n, ignore, s, &cnt));
    if (n == 0) return OAR_OK;
    sce_grad_k<T><<<grid_for(n), kThreads>>>((const T *)x, (const T *)z, (const T *)g, (T *)dx, n, ignore, cnt);
    OAR_CU_LAUNCH(k, "sigmoid_cross_entropy_with_logits_grad");
    return OAR_OK;
}
int sce_f32(oar_kernel_ctx_t *k) { return sce_fwd<float>(k, OAR_FP32); }
int sce_f64(oar_kernel_ctx_t *k) { return sce_fwd<double>(k, OAR_FP64); }
int sce_grad_f32(oar_kernel_ctx_t *k) { return sce_bwd<float>(k, OAR_FP32); }
int sce_grad_f64(oar_kernel_ctx_t *k) { return sce_bwd<double>(k, OAR_FP64); }
OAR_REGISTER_KERNEL("sigmoid_cross_entropy_with_logits", OAR_PLACE_CUDA, OAR_FP32, sce_f32)
OAR_REGISTER_KERNEL("sigmoid_cross_entropy_with_logits", OAR_PLACE_CUDA, OAR_FP64, sce_f64)
OAR_REGISTER_KERNEL("sigmoid_cross_entropy_with_logits_grad", OAR_PLACE_CUDA, OAR_FP32, sce_grad_f32)
OAR_REGISTER_KERNEL("sigmoid_cross_entropy_with_logits_grad", OAR_PLACE_CUDA, OAR_FP64, sce_grad_f64)

/* ---- clip_by_norm: Out = X * min(1, max_norm / ||X||) ------------------------------- */
template <class T>
__global__ void sumsq_k(const T *x, int64_t n, double *acc)
{
    __shared__ double sh[32];
    double s = 0;
    OAR_CU_LOOP(i, n) s += (double)x[i] * (double)x[i];
    s = block_sum(s, sh);
    if (threadIdx.x == 0) atomicAdd(acc, s);
}

template <class T>
__global__ void clip_k(const T *x, T *y, int64_t n, const double *acc, double max_norm)
{
    const double norm = sqrt(*acc);
    const T scale = (T)(norm > max_norm ? max_norm / norm : 1.0);
    OAR_CU_LOOP(i, n) y[i] = x[i] * scale;
}

template <class T>
int clip_run(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt;
    const void *x;
    OAR_TRY(in_tensor_at(k, OAR_CBN_X, 0, dt, -1, &xt, &x));
    const int64_t n = oar_tensor_numel_of(xt);
    void *y;
    OAR_TRY(out_data_at(k, OAR_CBN_OUT, 0, dt, n, &y));
    if (n == 0) return OAR_OK;
    Scratch acc;
    OAR_TRY(acc.alloc(k, sizeof(double), "norm"));
    OAR_CU(k, cudaMemsetAsync(acc.p, 0, sizeof(double), 0), "cudaMemsetAsync");
    sumsq_k<T><<<grid_for(n), kThreads>>>((const T *)x, n, acc.as<double>());
    OAR_CU_LAUNCH(k, "clip_by_norm norm");
    clip_k<T><<<grid_for(n), kThreads>>>((const T *)x, (T *)y, n, acc.as<double>(),
                                         (double)((const oar_clip_by_norm_attrs_t *)oar_k_attrs(k))->max_norm);
    OAR_CU_LAUNCH(k, "clip_by_norm");
    return OAR_OK;
}
int clip_by_norm_f32(oar_kernel_ctx_t *k) { return clip_run<float>(k, OAR_FP32); }
int clip_by_norm_f64(oar_kernel_ctx_t *k) { return clip_run<double>(k, OAR_FP64); }
OAR_REGISTER_KERNEL("clip_by_norm", OAR_PLACE_CUDA, OAR_FP32, clip_by_norm_f32)
OAR_REGISTER_KERNEL("clip_by_norm", OAR_PLACE_CUDA, OAR_FP64, clip_by_norm_f64)

}  // namespace
