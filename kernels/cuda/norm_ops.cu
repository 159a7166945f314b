/*
 * norm_ops.cu — CUDA kernels of squared_l2_norm, l1_norm,
 * squared_l2_distance (linalg.ops), norm (l2_normalize) and cos_sim
 * (linalg2.ops) and their grads (float32, float64), with the CPU kernels'
 * formulas (kernels/cpu/linalg.c, linalg2.c).
 *
 * squared_l2_norm and l1_norm sum the whole tensor in two passes: a fixed
 * grid of blocks writes one double partial sum each into scratch memory,
 * one block adds the partials (a fixed order for a given size, so a run
 * repeats its bits). The row-wise sums (squared_l2_distance, cos_sim,
 * norm's groups along its axis) run one block per row, in double. Where Y
 * has one row that all of X's rows share, Y@GRAD sums over X's rows with
 * one thread per column, in row order (no atomics).
 */
#include "cuda_common.h"
extern "C" {
#include "ops/linalg.h"
#include "ops/linalg2.h"
}

using namespace oarcu;

namespace {

constexpr int kParts = 64;   /* blocks of a whole-tensor sum's first pass */

unsigned threads_for(int64_t n)
{
    int64_t t = (n + 31) / 32 * 32;
    return (unsigned)(t < 32 ? 32 : t > 256 ? 256 : t);
}

unsigned rows_grid(int64_t rows) { return (unsigned)(rows < 65535 ? rows : 65535); }

/* ---- squared_l2_norm, l1_norm -------------------------------------------------- */
template <class T, bool ABS>
__global__ void part_sum_k(const T *x, int64_t n, double *part)
{
    __shared__ double sh[32];
    double s = 0;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const double v = (double)x[i];
        s += ABS ? fabs(v) : v * v;
    }
    s = block_sum(s, sh);
    if (threadIdx.x == 0) part[blockIdx.x] = s;
}

template <class T>
__global__ void final_sum_k(const double *part, int parts, T *out)
{
    __shared__ double sh[32];
    double s = 0;
    for (int i = threadIdx.x; i < parts; i += blockDim.x) s += part[i];
    s = block_sum(s, sh);
    if (threadIdx.x == 0) out[0] = (T)s;
}

template <class T, bool ABS>
int whole_sum(oar_kernel_ctx_t *k, int dt, int xs, int os, const char *what)
{
    const oar_tensor_t *xt;
    const void *x;
    OAR_TRY(in_tensor_at(k, xs, 0, dt, -1, &xt, &x));
    const int64_t n = oar_tensor_numel_of(xt);
    void *out;
    OAR_TRY(out_data_at(k, os, 0, dt, 1, &out));
    Scratch part;
    OAR_TRY(part.alloc(k, sizeof(double) * kParts, what));
    part_sum_k<T, ABS><<<kParts, kThreads>>>((const T *)x, n, (double *)part.p);
    OAR_CU_LAUNCH(k, "of a whole-tensor sum (norm_ops.cu)");
    final_sum_k<T><<<1, kThreads>>>((const double *)part.p, kParts, (T *)out);
    OAR_CU_LAUNCH(k, "of a whole-tensor sum (norm_ops.cu)");
    return OAR_OK;
}

template <class T>
int sql2_fwd(oar_kernel_ctx_t *k, int dt)
{
    return whole_sum<T, false>(k, dt, OAR_SQL2_X, OAR_SQL2_OUT, "squared_l2_norm partial sums");
}

template <class T>
int l1_fwd(oar_kernel_ctx_t *k, int dt)
{
    return whole_sum<T, true>(k, dt, OAR_L1N_X, OAR_L1N_OUT, "l1_norm partial sums");
}

template <class T, bool ABS>
__global__ void whole_grad_k(const T *x, const T *g, T *dx, int64_t n)
{
    const T gv = g[0];
    OAR_CU_LOOP(i, n) {
        if (ABS) dx[i] = x[i] > T(0) ? gv : x[i] < T(0) ? -gv : T(0);
        else dx[i] = T(2) * gv * x[i];
    }
}

template <class T, bool ABS>
int whole_grad(oar_kernel_ctx_t *k, int dt, int xs, int gs, int ds)
{
    const oar_tensor_t *xt, *gt;
    const void *x, *g;
    OAR_TRY(in_tensor_at(k, xs, 0, dt, -1, &xt, &x));
    const int64_t n = oar_tensor_numel_of(xt);
    OAR_TRY(in_tensor_at(k, gs, 0, dt, 1, &gt, &g));
    void *dx;
    OAR_TRY(out_data_opt_at(k, ds, 0, dt, n, &dx));
    if (!dx || n == 0) return OAR_OK;
    whole_grad_k<T, ABS><<<grid_for(n), kThreads>>>((const T *)x, (const T *)g, (T *)dx, n);
    OAR_CU_LAUNCH(k, "of a whole-tensor sum's grad (norm_ops.cu)");
    return OAR_OK;
}

template <class T>
int sql2_bwd(oar_kernel_ctx_t *k, int dt)
{
    return whole_grad<T, false>(k, dt, OAR_SQL2_G_X, OAR_SQL2_G_DOUT, OAR_SQL2_G_DX);
}

template <class T>
int l1_bwd(oar_kernel_ctx_t *k, int dt)
{
    return whole_grad<T, true>(k, dt, OAR_L1N_G_X, OAR_L1N_G_DOUT, OAR_L1N_G_DX);
}

/* ---- squared_l2_distance -------------------------------------------------------- */
template <class T>
__global__ void sql2d_k(const T *x, const T *y, T *sub, T *out, int64_t N, int64_t D, bool yone)
{
    __shared__ double sh[32];
    for (int64_t i = blockIdx.x; i < N; i += gridDim.x) {
        const T *yr = y + (yone ? 0 : i * D);
        double s = 0;
        for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
            const T d = x[i * D + j] - yr[j];
            sub[i * D + j] = d;
            s += (double)d * (double)d;
        }
        s = block_sum(s, sh);
        if (threadIdx.x == 0) out[i] = (T)s;
    }
}

template <class T>
__global__ void sql2d_grad_k(const T *sub, const T *g, T *dx, T *dy, int64_t N, int64_t D, bool yone)
{
    OAR_CU_LOOP(q, N * D) {
        const T d = T(2) * g[q / D] * sub[q];
        if (dx) dx[q] = d;
        if (dy && !yone) dy[q] = -d;
    }
}

/* Y's one row: column j sums -2 g[i] sub[i, j] over X's rows, in order */
template <class T>
__global__ void sql2d_dy_one_k(const T *sub, const T *g, T *dy, int64_t N, int64_t D)
{
    OAR_CU_LOOP(j, D) {
        T s = T(0);
        for (int64_t i = 0; i < N; i++) s -= T(2) * g[i] * sub[i * D + j];
        dy[j] = s;
    }
}

template <class T>
int sql2d_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt, *yt;
    const void *x, *y;
    OAR_TRY(in_tensor_at(k, OAR_SQL2D_X, 0, dt, -1, &xt, &x));
    const int64_t N = xt->dims[0], D = N ? oar_tensor_numel_of(xt) / N : 0;
    OAR_TRY(in_tensor_at(k, OAR_SQL2D_Y, 0, dt, -1, &yt, &y));
    const bool yone = yt->dims[0] == 1;
    void *sub, *out;
    OAR_TRY(out_data_at(k, OAR_SQL2D_SUB, 0, dt, N * D, &sub));
    OAR_TRY(out_data_at(k, OAR_SQL2D_OUT, 0, dt, N, &out));
    if (N == 0) return OAR_OK;
    sql2d_k<T><<<rows_grid(N), threads_for(D)>>>((const T *)x, (const T *)y, (T *)sub, (T *)out, N, D, yone);
    OAR_CU_LAUNCH(k, "squared_l2_distance");
    return OAR_OK;
}

template <class T>
int sql2d_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt, *yt, *st, *gt;
    const void *x, *y, *sub, *g;
    OAR_TRY(in_tensor_at(k, OAR_SQL2D_G_X, 0, dt, -1, &xt, &x));
    const int64_t N = xt->dims[0], D = N ? oar_tensor_numel_of(xt) / N : 0;
    OAR_TRY(in_tensor_at(k, OAR_SQL2D_G_Y, 0, dt, -1, &yt, &y));
    const int64_t yrows = yt->dims[0];
    const bool yone = yrows == 1;
    OAR_TRY(in_tensor_at(k, OAR_SQL2D_G_SUB, 0, dt, N * D, &st, &sub));
    OAR_TRY(in_tensor_at(k, OAR_SQL2D_G_DOUT, 0, dt, N, &gt, &g));
    void *dx, *dy;
    OAR_TRY(out_data_opt_at(k, OAR_SQL2D_G_DX, 0, dt, N * D, &dx));
    OAR_TRY(out_data_opt_at(k, OAR_SQL2D_G_DY, 0, dt, yrows * D, &dy));
    if (D == 0) return OAR_OK;
    if (N > 0 && (dx || (dy && !yone))) {
        sql2d_grad_k<T><<<grid_for(N * D), kThreads>>>((const T *)sub, (const T *)g, (T *)dx, (T *)dy, N, D, yone);
        OAR_CU_LAUNCH(k, "squared_l2_distance_grad");
    }
    if (dy && yone) {
        sql2d_dy_one_k<T><<<grid_for(D), kThreads>>>((const T *)sub, (const T *)g, (T *)dy, N, D);
        OAR_CU_LAUNCH(k, "squared_l2_distance_grad");
    }
    return OAR_OK;
}

/* ---- norm: Out = X / sqrt(sum over axis X^2 + epsilon) ------------------------------ */
/* X as [pre, n, post] around the axis */
void around_axis(const oar_tensor_t *x, int axis, int64_t *pre, int64_t *n, int64_t *post)
{
    const int ax = axis < 0 ? axis + x->ndim : axis;
    *pre = *post = 1;
    for (int i = 0; i < ax; i++) *pre *= x->dims[i];
    for (int i = ax + 1; i < x->ndim; i++) *post *= x->dims[i];
    *n = x->dims[ax];
}

template <class T>
__global__ void norm_k(const T *x, T *out, T *nv, int64_t rows, int64_t n, int64_t post, float eps)
{
    __shared__ double sh[32];
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const int64_t o = (r / post) * n * post + r % post;
        double s = 0;
        for (int64_t t = threadIdx.x; t < n; t += blockDim.x) s += (double)x[o + t * post] * (double)x[o + t * post];
        s = block_sum(s, sh);
        const T nr = (T)sqrt(s + (double)eps);
        if (nv && threadIdx.x == 0) nv[r] = nr;
        for (int64_t t = threadIdx.x; t < n; t += blockDim.x) out[o + t * post] = x[o + t * post] / nr;
    }
}

template <class T>
__global__ void norm_grad_k(const T *x, const T *nv, const T *g, T *dx, int64_t rows, int64_t n, int64_t post)
{
    __shared__ double sh[32];
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const int64_t o = (r / post) * n * post + r % post;
        const double nr = (double)nv[r];
        double s = 0;
        for (int64_t t = threadIdx.x; t < n; t += blockDim.x) s += (double)x[o + t * post] * (double)g[o + t * post];
        s = block_sum(s, sh);
        for (int64_t t = threadIdx.x; t < n; t += blockDim.x)
            dx[o + t * post] = (T)((double)g[o + t * post] / nr - (double)x[o + t * post] * s / (nr * nr * nr));
    }
}

template <class T>
int norm_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_norm_attrs_t *a = (const oar_norm_attrs_t *)oar_k_attrs(k);
    const oar_tensor_t *xt;
    const void *x;
    OAR_TRY(in_tensor_at(k, OAR_NORM_X, 0, dt, -1, &xt, &x));
    int64_t pre, n, post;
    around_axis(xt, a->axis, &pre, &n, &post);
    void *out, *nv;
    OAR_TRY(out_data_at(k, OAR_NORM_OUT, 0, dt, pre * n * post, &out));
    OAR_TRY(out_data_opt_at(k, OAR_NORM_NORM, 0, dt, pre * post, &nv));
    if (pre * post == 0) return OAR_OK;
    norm_k<T><<<rows_grid(pre * post), threads_for(n)>>>((const T *)x, (T *)out, (T *)nv, pre * post, n, post,
                                                          a->epsilon);
    OAR_CU_LAUNCH(k, "norm");
    return OAR_OK;
}

template <class T>
int norm_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_norm_attrs_t *a = (const oar_norm_attrs_t *)oar_k_attrs(k);
    const oar_tensor_t *xt, *nt, *gt;
    const void *x, *nv, *g;
    OAR_TRY(in_tensor_at(k, OAR_NORM_G_X, 0, dt, -1, &xt, &x));
    int64_t pre, n, post;
    around_axis(xt, a->axis, &pre, &n, &post);
    OAR_TRY(in_tensor_at(k, OAR_NORM_G_NORM, 0, dt, pre * post, &nt, &nv));
    OAR_TRY(in_tensor_at(k, OAR_NORM_G_DOUT, 0, dt, pre * n * post, &gt, &g));
    void *dx;
    OAR_TRY(out_data_opt_at(k, OAR_NORM_G_DX, 0, dt, pre * n * post, &dx));
    if (!dx || pre * post == 0) return OAR_OK;
    norm_grad_k<T><<<rows_grid(pre * post), threads_for(n)>>>((const T *)x, (const T *)nv, (const T *)g, (T *)dx,
                                                               pre * post, n, post);
    OAR_CU_LAUNCH(k, "norm_grad");
    return OAR_OK;
}

/* ---- cos_sim ------------------------------------------------------------------------- */
/* rows of Y: YNorm */
template <class T>
__global__ void row_norm_k(const T *y, T *yn, int64_t R, int64_t D)
{
    __shared__ double sh[32];
    for (int64_t r = blockIdx.x; r < R; r += gridDim.x) {
        double s = 0;
        for (int64_t j = threadIdx.x; j < D; j += blockDim.x) s += (double)y[r * D + j] * (double)y[r * D + j];
        s = block_sum(s, sh);
        if (threadIdx.x == 0) yn[r] = (T)sqrt(s);
    }
}

template <class T>
__global__ void cos_sim_k(const T *x, const T *y, const T *yn, T *out, T *xn, int64_t N, int64_t D, bool yone)
{
    __shared__ double sh[32];
    for (int64_t i = blockIdx.x; i < N; i += gridDim.x) {
        const T *xr = x + i * D, *yr = y + (yone ? 0 : i * D);
        double s = 0, p = 0;
        for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
            s += (double)xr[j] * (double)xr[j];
            p += (double)xr[j] * (double)yr[j];
        }
        s = block_sum(s, sh);
        p = block_sum(p, sh);
        if (threadIdx.x == 0) {
            xn[i] = (T)sqrt(s);
            out[i] = (T)(p / (sqrt(s) * (double)yn[yone ? 0 : i]));
        }
    }
}

template <class T>
__global__ void cos_sim_grad_k(const T *x, const T *y, const T *z, const T *xn, const T *yn, const T *g, T *dx, T *dy,
                               int64_t N, int64_t D, bool yone)
{
    OAR_CU_LOOP(q, N * D) {
        const int64_t i = q / D, j = q % D, yi = yone ? 0 : i;
        const double a = xn[i], b = yn[yi], zz = z[i], gg = g[i], xv = x[q], yv = y[yi * D + j];
        if (dx) dx[q] = (T)(gg * (yv / (a * b) - zz * xv / (a * a)));
        if (dy && !yone) dy[q] = (T)(gg * (xv / (a * b) - zz * yv / (b * b)));
    }
}

/* Y's one row: column j of Y@GRAD sums over X's rows, in order */
template <class T>
__global__ void cos_sim_dy_one_k(const T *x, const T *y, const T *z, const T *xn, const T *yn, const T *g, T *dy,
                                 int64_t N, int64_t D)
{
    OAR_CU_LOOP(j, D) {
        const double b = yn[0], yv = y[j];
        T s = T(0);
        for (int64_t i = 0; i < N; i++) {
            const double a = xn[i];
            s += (T)((double)g[i] * ((double)x[i * D + j] / (a * b) - (double)z[i] * yv / (b * b)));
        }
        dy[j] = s;
    }
}

template <class T>
int cos_sim_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt, *yt;
    const void *x, *y;
    OAR_TRY(in_tensor_at(k, OAR_COS_SIM_X, 0, dt, -1, &xt, &x));
    const int64_t N = xt->dims[0], D = N ? oar_tensor_numel_of(xt) / N : 0;
    OAR_TRY(in_tensor_at(k, OAR_COS_SIM_Y, 0, dt, -1, &yt, &y));
    const int64_t YR = yt->dims[0];
    void *out, *xn, *yn;
    OAR_TRY(out_data_at(k, OAR_COS_SIM_OUT, 0, dt, N, &out));
    OAR_TRY(out_data_at(k, OAR_COS_SIM_XNORM, 0, dt, N, &xn));
    OAR_TRY(out_data_at(k, OAR_COS_SIM_YNORM, 0, dt, YR, &yn));
    if (YR > 0) {
        row_norm_k<T><<<rows_grid(YR), threads_for(D)>>>((const T *)y, (T *)yn, YR, D);
        OAR_CU_LAUNCH(k, "cos_sim");
    }
    if (N > 0) {
        cos_sim_k<T><<<rows_grid(N), threads_for(D)>>>((const T *)x, (const T *)y, (const T *)yn, (T *)out, (T *)xn,
                                                        N, D, YR == 1);
        OAR_CU_LAUNCH(k, "cos_sim");
    }
    return OAR_OK;
}

template <class T>
int cos_sim_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt, *yt, *zt, *xnt, *ynt, *gt;
    const void *x, *y, *z, *xn, *yn, *g;
    OAR_TRY(in_tensor_at(k, OAR_COS_SIM_G_X, 0, dt, -1, &xt, &x));
    const int64_t N = xt->dims[0], D = N ? oar_tensor_numel_of(xt) / N : 0;
    OAR_TRY(in_tensor_at(k, OAR_COS_SIM_G_Y, 0, dt, -1, &yt, &y));
    const int64_t YR = yt->dims[0];
    OAR_TRY(in_tensor_at(k, OAR_COS_SIM_G_OUT, 0, dt, N, &zt, &z));
    OAR_TRY(in_tensor_at(k, OAR_COS_SIM_G_XNORM, 0, dt, N, &xnt, &xn));
    OAR_TRY(in_tensor_at(k, OAR_COS_SIM_G_YNORM, 0, dt, YR, &ynt, &yn));
    OAR_TRY(in_tensor_at(k, OAR_COS_SIM_G_DOUT, 0, dt, N, &gt, &g));
    void *dx, *dy;
    OAR_TRY(out_data_opt_at(k, OAR_COS_SIM_G_DX, 0, dt, N * D, &dx));
    OAR_TRY(out_data_opt_at(k, OAR_COS_SIM_G_DY, 0, dt, YR * D, &dy));
    const bool yone = YR == 1;
    if (D == 0) return OAR_OK;
    if (N > 0 && (dx || (dy && !yone))) {
        cos_sim_grad_k<T><<<grid_for(N * D), kThreads>>>((const T *)x, (const T *)y, (const T *)z, (const T *)xn,
                                                          (const T *)yn, (const T *)g, (T *)dx, (T *)dy, N, D, yone);
        OAR_CU_LAUNCH(k, "cos_sim_grad");
    }
    if (dy && yone) {
        cos_sim_dy_one_k<T><<<grid_for(D), kThreads>>>((const T *)x, (const T *)y, (const T *)z, (const T *)xn,
                                                        (const T *)yn, (const T *)g, (T *)dy, N, D);
        OAR_CU_LAUNCH(k, "cos_sim_grad");
    }
    return OAR_OK;
}

#define NORM_REG(OPNAME, FN)                                                              \
    int FN##_f32(oar_kernel_ctx_t *k) { return FN<float>(k, OAR_FP32); }                  \
    int FN##_f64(oar_kernel_ctx_t *k) { return FN<double>(k, OAR_FP64); }                 \
    OAR_REGISTER_KERNEL(OPNAME, OAR_PLACE_CUDA, OAR_FP32, FN##_f32)                       \
    OAR_REGISTER_KERNEL(OPNAME, OAR_PLACE_CUDA, OAR_FP64, FN##_f64)

NORM_REG("squared_l2_norm", sql2_fwd)
NORM_REG("squared_l2_norm_grad", sql2_bwd)
NORM_REG("l1_norm", l1_fwd)
NORM_REG("l1_norm_grad", l1_bwd)
NORM_REG("squared_l2_distance", sql2d_fwd)
NORM_REG("squared_l2_distance_grad", sql2d_bwd)
NORM_REG("norm", norm_fwd)
NORM_REG("norm_grad", norm_bwd)
NORM_REG("cos_sim", cos_sim_fwd)
NORM_REG("cos_sim_grad", cos_sim_bwd)

}  // namespace
