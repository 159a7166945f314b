/*
 * linalg2.c — CPU kernels of cos_sim, dist, norm, frobenius_norm, allclose
 * and bilinear_tensor_product (linalg2.ops), float32 and float64. Sums
 * accumulate in double. bilinear_tensor_product's products go through
 * oar_gemm, whose own fixed split keeps results independent of the thread
 * count.
 */
#include <limits.h>
#include <math.h>
#include <string.h>
#include "op.h"
#include "gemm.h"
#include "scratch.h"
#include "ops/broadcast.h"
#include "ops/linalg2.h"

/* ---- cos_sim ------------------------------------------------------------------- */
#define COS_SIM_KERNELS(NAME, T, DT)                                                                      \
    static int NAME##_fwd(oar_kernel_ctx_t *k)                                                            \
    {                                                                                                     \
        oar_tensor_t *x = oar_k_input(k, OAR_COS_SIM_X, 0), *y = oar_k_input(k, OAR_COS_SIM_Y, 0);        \
        const int64_t N = x->dims[0], D = N ? oar_tensor_numel(x) / N : 0, YR = y->dims[0];               \
        void *out, *xn, *yn;                                                                              \
        OAR_TRY(oar_k_output_sized(k, OAR_COS_SIM_OUT, "Out", DT, N, false, &out));                       \
        OAR_TRY(oar_k_output_sized(k, OAR_COS_SIM_XNORM, "XNorm", DT, N, false, &xn));                    \
        OAR_TRY(oar_k_output_sized(k, OAR_COS_SIM_YNORM, "YNorm", DT, YR, false, &yn));                   \
        const T *xv = oar_tensor_data(x), *yv = oar_tensor_data(y);                                       \
        for (int64_t r = 0; r < YR; r++) {                                                                \
            double s = 0;                                                                                 \
            for (int64_t j = 0; j < D; j++) s += (double)yv[r * D + j] * yv[r * D + j];                   \
            ((T *)yn)[r] = (T)sqrt(s);                                                                    \
        }                                                                                                 \
        for (int64_t i = 0; i < N; i++) {                                                                 \
            const T *xr = xv + i * D, *yr = yv + (YR == 1 ? 0 : i * D);                                   \
            double s = 0, p = 0;                                                                          \
            for (int64_t j = 0; j < D; j++) {                                                             \
                s += (double)xr[j] * xr[j];                                                               \
                p += (double)xr[j] * yr[j];                                                               \
            }                                                                                             \
            ((T *)xn)[i] = (T)sqrt(s);                                                                    \
            ((T *)out)[i] = (T)(p / (sqrt(s) * (double)((T *)yn)[YR == 1 ? 0 : i]));                     \
        }                                                                                                 \
        return OAR_OK;                                                                                    \
    }                                                                                                     \
    static int NAME##_bwd(oar_kernel_ctx_t *k)                                                            \
    {                                                                                                     \
        oar_tensor_t *x = oar_k_input(k, OAR_COS_SIM_G_X, 0), *y = oar_k_input(k, OAR_COS_SIM_G_Y, 0);    \
        const int64_t N = x->dims[0], D = N ? oar_tensor_numel(x) / N : 0, YR = y->dims[0];               \
        void *dx, *dy;                                                                                    \
        OAR_TRY(oar_k_output_sized(k, OAR_COS_SIM_G_DX, "X@GRAD", DT, N * D, true, &dx));                 \
        OAR_TRY(oar_k_output_sized(k, OAR_COS_SIM_G_DY, "Y@GRAD", DT, YR * D, true, &dy));                \
        const T *xv = oar_tensor_data(x), *yv = oar_tensor_data(y),                                       \
                *z = oar_tensor_data(oar_k_input(k, OAR_COS_SIM_G_OUT, 0)),                               \
                *xn = oar_tensor_data(oar_k_input(k, OAR_COS_SIM_G_XNORM, 0)),                            \
                *yn = oar_tensor_data(oar_k_input(k, OAR_COS_SIM_G_YNORM, 0)),                            \
                *g = oar_tensor_data(oar_k_input(k, OAR_COS_SIM_G_DOUT, 0));                              \
        if (dy && YR == 1) memset(dy, 0, sizeof(T) * (size_t)D);                                          \
        for (int64_t i = 0; i < N; i++) {                                                                 \
            const int64_t yi = YR == 1 ? 0 : i;                                                           \
            const T *xr = xv + i * D, *yr = yv + yi * D;                                                  \
            const double a = xn[i], b = yn[yi], zz = z[i], gg = g[i];                                     \
            for (int64_t j = 0; j < D; j++) {                                                             \
                if (dx) ((T *)dx)[i * D + j] = (T)(gg * (yr[j] / (a * b) - zz * xr[j] / (a * a)));        \
                if (dy) {                                                                                 \
                    double v = gg * (xr[j] / (a * b) - zz * yr[j] / (b * b));                             \
                    if (YR == 1) ((T *)dy)[j] += (T)v; /* Y's one row: summed over X's rows */            \
                    else ((T *)dy)[i * D + j] = (T)v;                                                     \
                }                                                                                         \
            }                                                                                             \
        }                                                                                                 \
        return OAR_OK;                                                                                    \
    }                                                                                                     \
    OAR_REGISTER_KERNEL("cos_sim", OAR_PLACE_CPU, DT, NAME##_fwd)                                         \
    OAR_REGISTER_KERNEL("cos_sim_grad", OAR_PLACE_CPU, DT, NAME##_bwd)
COS_SIM_KERNELS(cos_sim_f32, float, OAR_FP32)
COS_SIM_KERNELS(cos_sim_f64, double, OAR_FP64)

/* ---- dist ------------------------------------------------------------------------ */
/* X and Y broadcast against each other: the loop plan over their common shape */
static void dist_plan(const oar_tensor_t *x, const oar_tensor_t *y, oar_bplan_t *p)
{
    int64_t o[OAR_MAX_DIMS], xp[OAR_MAX_DIMS], yp[OAR_MAX_DIMS];
    int nd = 0;
    /* inference checked the shapes */
    (void)oar_bcast_shape(x->dims, x->ndim, y->dims, y->ndim, -1, o, xp, yp, &nd);
    if (nd == 0) { o[0] = xp[0] = yp[0] = 1; nd = 1; }
    oar_bplan_make(p, o, xp, yp, nd);
}

/* the next position of an odometer over p's loops, updating both offsets */
static void plan_step(const oar_bplan_t *p, int64_t *idx, int64_t *xo, int64_t *yo)
{
    for (int d = p->nd - 1; d >= 0; d--) {
        *xo += p->xs[d];
        *yo += p->ys[d];
        if (++idx[d] < p->n[d]) return;
        *xo -= p->xs[d] * p->n[d];
        *yo -= p->ys[d] * p->n[d];
        idx[d] = 0;
    }
}

#define DIST_KERNELS(NAME, T, DT)                                                                         \
    static int NAME##_fwd(oar_kernel_ctx_t *k)                                                            \
    {                                                                                                     \
        const oar_dist_attrs_t *a = oar_k_attrs(k);                                                       \
        oar_tensor_t *x = oar_k_input(k, OAR_DIST_X, 0), *y = oar_k_input(k, OAR_DIST_Y, 0);              \
        void *out;                                                                                        \
        OAR_TRY(oar_k_output_sized(k, OAR_DIST_OUT, "Out", DT, 1, false, &out));                          \
        oar_bplan_t pl;                                                                                   \
        dist_plan(x, y, &pl);                                                                             \
        const T *xv = oar_tensor_data(x), *yv = oar_tensor_data(y);                                       \
        const double p = a->p;                                                                            \
        double r = p == -INFINITY ? INFINITY : 0;                                                         \
        int64_t idx[OAR_MAX_DIMS] = { 0 }, xo = 0, yo = 0;                                                \
        for (int64_t i = 0; i < pl.total; i++, plan_step(&pl, idx, &xo, &yo)) {                          \
            const double z = fabs((double)xv[xo] - (double)yv[yo]);                                       \
            if (p == 0) r += z != 0;                                                                      \
            else if (p == INFINITY) r = z > r ? z : r;                                                    \
            else if (p == -INFINITY) r = z < r ? z : r;                                                   \
            else if (p == 2) r += z * z;   /* the common cases without pow(): 10x faster */               \
            else if (p == 1) r += z;                                                                      \
            else r += pow(z, p);                                                                          \
        }                                                                                                 \
        if (p != 0 && !isinf(p)) r = pow(r, 1.0 / p);                                                     \
        *(T *)out = (T)r;                                                                                 \
        return OAR_OK;                                                                                    \
    }                                                                                                     \
    static int NAME##_bwd(oar_kernel_ctx_t *k)                                                            \
    {                                                                                                     \
        const oar_dist_attrs_t *a = oar_k_attrs(k);                                                       \
        oar_tensor_t *x = oar_k_input(k, OAR_DIST_G_X, 0), *y = oar_k_input(k, OAR_DIST_G_Y, 0);          \
        void *dx, *dy;                                                                                    \
        OAR_TRY(oar_k_output_sized(k, OAR_DIST_G_DX, "X@GRAD", DT, oar_tensor_numel(x), true, &dx));     \
        OAR_TRY(oar_k_output_sized(k, OAR_DIST_G_DY, "Y@GRAD", DT, oar_tensor_numel(y), true, &dy));     \
        if (dx) memset(dx, 0, sizeof(T) * (size_t)oar_tensor_numel(x));                                   \
        if (dy) memset(dy, 0, sizeof(T) * (size_t)oar_tensor_numel(y));                                   \
        const double p = a->p, out = *(const T *)oar_tensor_data(oar_k_input(k, OAR_DIST_G_OUT, 0)),      \
                     g = *(const T *)oar_tensor_data(oar_k_input(k, OAR_DIST_G_DOUT, 0));                 \
        /* p = 0 counts: no gradient; Out = 0: every Z is 0, take 0 rather than 0/0 */                    \
        if (p == 0 || out == 0 || (!dx && !dy)) return OAR_OK;                                            \
        oar_bplan_t pl;                                                                                   \
        dist_plan(x, y, &pl);                                                                             \
        const T *xv = oar_tensor_data(x), *yv = oar_tensor_data(y);                                       \
        int64_t idx[OAR_MAX_DIMS] = { 0 }, xo = 0, yo = 0;                                                \
        for (int64_t i = 0; i < pl.total; i++, plan_step(&pl, idx, &xo, &yo)) {                          \
            const double z = (double)xv[xo] - (double)yv[yo], az = fabs(z);                               \
            const double s = z > 0 ? 1 : z < 0 ? -1 : 0;                                                  \
            double d;                                                                                     \
            if (isinf(p)) d = az == out ? s * g : 0;                                                      \
            else if (p == 2) d = z / out * g;                                                             \
            else if (p == 1) d = s * g;                                                                   \
            else d = pow(az / out, p - 1) * s * g;                                                        \
            /* broadcast operands: their positions repeat, so the grads add up */                         \
            if (dx) ((T *)dx)[xo] += (T)d;                                                                \
            if (dy) ((T *)dy)[yo] -= (T)d;                                                                \
        }                                                                                                 \
        return OAR_OK;                                                                                    \
    }                                                                                                     \
    OAR_REGISTER_KERNEL("dist", OAR_PLACE_CPU, DT, NAME##_fwd)                                            \
    OAR_REGISTER_KERNEL("dist_grad", OAR_PLACE_CPU, DT, NAME##_bwd)
DIST_KERNELS(dist_f32, float, OAR_FP32)
DIST_KERNELS(dist_f64, double, OAR_FP64)

/* ---- norm (l2_normalize) ------------------------------------------------------------ */
/* X as [pre, n, post] around the normalized axis */
static void around_axis(const oar_tensor_t *x, int axis, int64_t *pre, int64_t *n, int64_t *post)
{
    const int ax = axis < 0 ? axis + x->ndim : axis;
    *pre = *post = 1;
    for (int i = 0; i < ax; i++) *pre *= x->dims[i];
    for (int i = ax + 1; i < x->ndim; i++) *post *= x->dims[i];
    *n = x->dims[ax];
}

#define NORM_KERNELS(NAME, T, DT)                                                                         \
    static int NAME##_fwd(oar_kernel_ctx_t *k)                                                            \
    {                                                                                                     \
        const oar_norm_attrs_t *a = oar_k_attrs(k);                                                       \
        oar_tensor_t *x = oar_k_input(k, OAR_NORM_X, 0);                                                  \
        int64_t pre, n, post;                                                                             \
        around_axis(x, a->axis, &pre, &n, &post);                                                         \
        void *out, *nv;                                                                                   \
        OAR_TRY(oar_k_output_sized(k, OAR_NORM_OUT, "Out", DT, pre * n * post, false, &out));             \
        OAR_TRY(oar_k_output_sized(k, OAR_NORM_NORM, "Norm", DT, pre * post, true, &nv));                 \
        const T *xv = oar_tensor_data(x);                                                                 \
        for (int64_t i = 0; i < pre; i++)                                                                 \
            for (int64_t j = 0; j < post; j++) {                                                          \
                const T *xr = xv + i * n * post + j;                                                      \
                double s = 0;                                                                             \
                for (int64_t t = 0; t < n; t++) s += (double)xr[t * post] * xr[t * post];                 \
                const T nr = (T)sqrt(s + a->epsilon);                                                     \
                if (nv) ((T *)nv)[i * post + j] = nr;                                                     \
                for (int64_t t = 0; t < n; t++) ((T *)out)[i * n * post + j + t * post] = xr[t * post] / nr; \
            }                                                                                             \
        return OAR_OK;                                                                                    \
    }                                                                                                     \
    static int NAME##_bwd(oar_kernel_ctx_t *k)                                                            \
    {                                                                                                     \
        const oar_norm_attrs_t *a = oar_k_attrs(k);                                                       \
        oar_tensor_t *x = oar_k_input(k, OAR_NORM_G_X, 0);                                                \
        int64_t pre, n, post;                                                                             \
        around_axis(x, a->axis, &pre, &n, &post);                                                         \
        void *dx;                                                                                         \
        OAR_TRY(oar_k_output_sized(k, OAR_NORM_G_DX, "X@GRAD", DT, pre * n * post, true, &dx));           \
        if (!dx) return OAR_OK;                                                                           \
        const T *xv = oar_tensor_data(x), *nv = oar_tensor_data(oar_k_input(k, OAR_NORM_G_NORM, 0)),      \
                *g = oar_tensor_data(oar_k_input(k, OAR_NORM_G_DOUT, 0));                                 \
        for (int64_t i = 0; i < pre; i++)                                                                 \
            for (int64_t j = 0; j < post; j++) {                                                          \
                const int64_t o = i * n * post + j;                                                       \
                const double nr = nv[i * post + j];                                                       \
                double s = 0;                                                                             \
                for (int64_t t = 0; t < n; t++) s += (double)xv[o + t * post] * g[o + t * post];          \
                for (int64_t t = 0; t < n; t++)                                                           \
                    ((T *)dx)[o + t * post] = (T)(g[o + t * post] / nr - xv[o + t * post] * s / (nr * nr * nr)); \
            }                                                                                             \
        return OAR_OK;                                                                                    \
    }                                                                                                     \
    OAR_REGISTER_KERNEL("norm", OAR_PLACE_CPU, DT, NAME##_fwd)                                            \
    OAR_REGISTER_KERNEL("norm_grad", OAR_PLACE_CPU, DT, NAME##_bwd)
NORM_KERNELS(norm_f32, float, OAR_FP32)
NORM_KERNELS(norm_f64, double, OAR_FP64)

/* ---- frobenius_norm --------------------------------------------------------------------- */
/* Out's element stride along each axis of X: 0 on reduced axes (inference
 * checked the axes); the kept axes keep their order, so keep_dim's 1s do
 * not move anything. Returns Out's element count. */
static int64_t fn_strides(const oar_fnorm_attrs_t *a, const oar_tensor_t *x, int64_t *ost)
{
    bool mask[OAR_MAX_DIMS];
    const int nd = x->ndim;
    for (int i = 0; i < nd; i++) mask[i] = a->reduce_all;
    for (int i = 0; i < a->dim.n && !a->reduce_all; i++) mask[a->dim.v[i] < 0 ? a->dim.v[i] + nd : a->dim.v[i]] = true;
    int64_t s = 1;
    for (int i = nd - 1; i >= 0; i--) {
        ost[i] = mask[i] ? 0 : s;
        if (!mask[i]) s *= x->dims[i];
    }
    return s;
}

/* the Out offset of X's next element (odometer over X's dims) */
static void fn_step(const oar_tensor_t *x, const int64_t *ost, int64_t *idx, int64_t *o)
{
    for (int d = x->ndim - 1; d >= 0; d--) {
        *o += ost[d];
        if (++idx[d] < x->dims[d]) return;
        *o -= ost[d] * x->dims[d];
        idx[d] = 0;
    }
}

#define FN_KERNELS(NAME, T, DT)                                                                           \
    static int NAME##_fwd(oar_kernel_ctx_t *k)                                                            \
    {                                                                                                     \
        oar_tensor_t *x = oar_k_input(k, OAR_FN_X, 0);                                                    \
        int64_t ost[OAR_MAX_DIMS], idx[OAR_MAX_DIMS] = { 0 }, o = 0;                                      \
        const int64_t on = fn_strides(oar_k_attrs(k), x, ost), n = oar_tensor_numel(x);                   \
        void *out;                                                                                        \
        OAR_TRY(oar_k_output_sized(k, OAR_FN_OUT, "Out", DT, on, false, &out));                           \
        double *acc = oar_scratch_alloc(sizeof(double) * (size_t)(on ? on : 1));                          \
        if (!acc) return oar_k_error(k, OAR_ERR_NOMEM, "no memory for %lld sums", (long long)on);         \
        memset(acc, 0, sizeof(double) * (size_t)on);                                                      \
        const T *xv = oar_tensor_data(x);                                                                 \
        for (int64_t i = 0; i < n; i++, fn_step(x, ost, idx, &o)) acc[o] += (double)xv[i] * xv[i];        \
        for (int64_t i = 0; i < on; i++) ((T *)out)[i] = (T)sqrt(acc[i]);                                 \
        oar_scratch_free(acc);                                                                            \
        return OAR_OK;                                                                                    \
    }                                                                                                     \
    static int NAME##_bwd(oar_kernel_ctx_t *k)                                                            \
    {                                                                                                     \
        oar_tensor_t *x = oar_k_input(k, OAR_FN_G_X, 0);                                                  \
        int64_t ost[OAR_MAX_DIMS], idx[OAR_MAX_DIMS] = { 0 }, o = 0;                                      \
        fn_strides(oar_k_attrs(k), x, ost);                                                               \
        const int64_t n = oar_tensor_numel(x);                                                            \
        void *dx;                                                                                         \
        OAR_TRY(oar_k_output_sized(k, OAR_FN_G_DX, "X@GRAD", DT, n, true, &dx));                          \
        if (!dx) return OAR_OK;                                                                           \
        const T *xv = oar_tensor_data(x), *ov = oar_tensor_data(oar_k_input(k, OAR_FN_G_OUT, 0)),         \
                *g = oar_tensor_data(oar_k_input(k, OAR_FN_G_DOUT, 0));                                   \
        /* Out = 0: every X in its group is 0; take 0 rather than 0/0 */                                  \
        for (int64_t i = 0; i < n; i++, fn_step(x, ost, idx, &o))                                         \
            ((T *)dx)[i] = ov[o] == 0 ? (T)0 : (T)((double)g[o] * xv[i] / ov[o]);                         \
        return OAR_OK;                                                                                    \
    }                                                                                                     \
    OAR_REGISTER_KERNEL("frobenius_norm", OAR_PLACE_CPU, DT, NAME##_fwd)                                  \
    OAR_REGISTER_KERNEL("frobenius_norm_grad", OAR_PLACE_CPU, DT, NAME##_bwd)
FN_KERNELS(fn_f32, float, OAR_FP32)
FN_KERNELS(fn_f64, double, OAR_FP64)

/* ---- allclose --------------------------------------------------------------------------- */
#define ALLCLOSE_KERNEL(NAME, T, DT)                                                                      \
    static int NAME(oar_kernel_ctx_t *k)                                                                  \
    {                                                                                                     \
        const oar_allclose_attrs_t *a = oar_k_attrs(k);                                                   \
        oar_tensor_t *x = oar_k_input(k, OAR_ALLCLOSE_INPUT, 0), *y = oar_k_input(k, OAR_ALLCLOSE_OTHER, 0); \
        const int64_t n = oar_tensor_numel(x);                                                            \
        void *out;                                                                                        \
        OAR_TRY(oar_k_output_sized(k, OAR_ALLCLOSE_OUT, "Out", OAR_BOOL, 1, false, &out));                \
        const T *xv = oar_tensor_data(x), *yv = oar_tensor_data(y);                                       \
        bool r = true;                                                                                    \
        for (int64_t i = 0; i < n && r; i++) {                                                            \
            const double p = xv[i], q = yv[i];                                                            \
            if (isnan(p) || isnan(q)) r = a->equal_nan && isnan(p) && isnan(q);                           \
            else r = p == q || fabs(p - q) <= (double)a->atol + (double)a->rtol * fabs(q);                \
        }                                                                                                 \
        *(bool *)out = r;                                                                                 \
        return OAR_OK;                                                                                    \
    }                                                                                                     \
    OAR_REGISTER_KERNEL("allclose", OAR_PLACE_CPU, DT, NAME)
ALLCLOSE_KERNEL(allclose_f32, float, OAR_FP32)
ALLCLOSE_KERNEL(allclose_f64, double, OAR_FP64)

/* ---- bilinear_tensor_product ------------------------------------------------------------- */
static void gemm(int dt, bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const void *A,
                 int64_t lda, const void *B, int64_t ldb, double beta, void *C, int64_t ldc)
{
    oar_gemm(dt, oar_gemm_threads(M * N * K), ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

static int check_int(oar_kernel_ctx_t *k, int64_t a, int64_t b, int64_t c)
{
    if (a > INT_MAX || b > INT_MAX || c > INT_MAX)
        return oar_k_error(k, OAR_ERR_SHAPE, "a product of %lld x %lld x %lld exceeds the BLAS int range",
                           (long long)a, (long long)b, (long long)c);
    return OAR_OK;
}

#define BTP_KERNELS(NAME, T, DT)                                                                          \
    static int NAME##_fwd(oar_kernel_ctx_t *k)                                                            \
    {                                                                                                     \
        oar_tensor_t *x = oar_k_input(k, OAR_BTP_X, 0), *y = oar_k_input(k, OAR_BTP_Y, 0),                \
                     *w = oar_k_input(k, OAR_BTP_WEIGHT, 0), *b = oar_k_input(k, OAR_BTP_BIAS, 0);        \
        const int64_t B = x->dims[0], M = x->dims[1], N = y->dims[1], K = w->dims[0];                     \
        OAR_TRY(check_int(k, B, M, N));                                                                   \
        void *out;                                                                                        \
        OAR_TRY(oar_k_output_sized(k, OAR_BTP_OUT, "Out", DT, B * K, false, &out));                       \
        T *tmp = oar_scratch_alloc(sizeof(T) * (size_t)(B * N > 0 ? B * N : 1));                              \
        if (!tmp) return oar_k_error(k, OAR_ERR_NOMEM, "no memory for a [%lld, %lld] product",            \
                                     (long long)B, (long long)N);                                         \
        const T *xv = oar_tensor_data(x), *yv = oar_tensor_data(y), *wv = oar_tensor_data(w),             \
                *bv = b ? oar_tensor_data(b) : NULL;                                                      \
        for (int64_t kk = 0; kk < K; kk++) {                                                              \
            /* tmp = X Weight[k]: [B, N]; Out[b, k] = tmp[b] . Y[b] */                                    \
            gemm(DT, false, false, B, N, M, 1.0, xv, M, wv + kk * M * N, N, 0.0, tmp, N);                 \
            for (int64_t i = 0; i < B; i++) {                                                             \
                double s = bv ? bv[kk] : 0;                                                               \
                for (int64_t j = 0; j < N; j++) s += (double)tmp[i * N + j] * yv[i * N + j];              \
                ((T *)out)[i * K + kk] = (T)s;                                                            \
            }                                                                                             \
        }                                                                                                 \
        oar_scratch_free(tmp);                                                                            \
        return OAR_OK;                                                                                    \
    }                                                                                                     \
    static int NAME##_bwd(oar_kernel_ctx_t *k)                                                            \
    {                                                                                                     \
        oar_tensor_t *x = oar_k_input(k, OAR_BTP_G_X, 0), *y = oar_k_input(k, OAR_BTP_G_Y, 0),            \
                     *w = oar_k_input(k, OAR_BTP_G_WEIGHT, 0);                                            \
        const int64_t B = x->dims[0], M = x->dims[1], N = y->dims[1], K = w->dims[0];                     \
        OAR_TRY(check_int(k, B, M, N));                                                                   \
        void *dx, *dy, *dw, *db;                                                                          \
        OAR_TRY(oar_k_output_sized(k, OAR_BTP_G_DX, "X@GRAD", DT, B * M, true, &dx));                     \
        OAR_TRY(oar_k_output_sized(k, OAR_BTP_G_DY, "Y@GRAD", DT, B * N, true, &dy));                     \
        OAR_TRY(oar_k_output_sized(k, OAR_BTP_G_DW, "Weight@GRAD", DT, K * M * N, true, &dw));            \
        OAR_TRY(oar_k_output_sized(k, OAR_BTP_G_DBIAS, "Bias@GRAD", DT, K, true, &db));                   \
        const T *xv = oar_tensor_data(x), *yv = oar_tensor_data(y), *wv = oar_tensor_data(w),             \
                *g = oar_tensor_data(oar_k_input(k, OAR_BTP_G_DOUT, 0));                                  \
        if (dx) memset(dx, 0, sizeof(T) * (size_t)(B * M));                                               \
        if (dy) memset(dy, 0, sizeof(T) * (size_t)(B * N));                                               \
        /* X and Y with each row scaled by Out@GRAD[b, k] */                                              \
        T *xs = oar_scratch_alloc(sizeof(T) * (size_t)(B * (M + N) + 1));                                 \
        if (!xs) return oar_k_error(k, OAR_ERR_NOMEM, "no memory for [%lld, %lld] scratch",               \
                                    (long long)B, (long long)(M + N));                                    \
        T *ys = xs + B * M;                                                                               \
        for (int64_t kk = 0; kk < K; kk++) {                                                              \
            const T *wk = wv + kk * M * N;                                                                \
            double bs = 0;                                                                                \
            for (int64_t i = 0; i < B; i++) {                                                             \
                const T gi = g[i * K + kk];                                                               \
                bs += gi;                                                                                 \
                for (int64_t j = 0; j < M; j++) xs[i * M + j] = gi * xv[i * M + j];                       \
                for (int64_t j = 0; j < N; j++) ys[i * N + j] = gi * yv[i * N + j];                       \
            }                                                                                             \
            if (db) ((T *)db)[kk] = (T)bs;                                                                \
            if (dw) gemm(DT, true, false, M, N, B, 1.0, xs, M, yv, N, 0.0, (T *)dw + kk * M * N, N);      \
            if (dx) gemm(DT, false, true, B, M, N, 1.0, ys, N, wk, N, 1.0, dx, M);                        \
            if (dy) gemm(DT, false, false, B, N, M, 1.0, xs, M, wk, N, 1.0, dy, N);                       \
        }                                                                                                 \
        oar_scratch_free(xs);                                                                             \
        return OAR_OK;                                                                                    \
    }                                                                                                     \
    OAR_REGISTER_KERNEL("bilinear_tensor_product", OAR_PLACE_CPU, DT, NAME##_fwd)                         \
    OAR_REGISTER_KERNEL("bilinear_tensor_product_grad", OAR_PLACE_CPU, DT, NAME##_bwd)
BTP_KERNELS(btp_f32, float, OAR_FP32)
BTP_KERNELS(btp_f64, double, OAR_FP64)
