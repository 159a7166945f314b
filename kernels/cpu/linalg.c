/*
 * linalg.c — CPU kernels of the linear algebra and norm ops (linalg.ops).
 *
 * bmm (one oar_gemm per batch entry), dot (one per row) and addmm go through
 * oar_gemm for float32 and float64: its own fixed splitting keeps results
 * independent of the thread count (gemm.h); nothing here splits a product.
 */
#include <limits.h>
#include <math.h>
#include <string.h>
#include "op.h"
#include "gemm.h"
#include "ops/linalg.h"

/* BLAS takes int sizes */
static int check_int(oar_kernel_ctx_t *k, int64_t a, int64_t b, int64_t c)
{
    if (a > INT_MAX || b > INT_MAX || c > INT_MAX)
        return oar_k_error(k, OAR_ERR_SHAPE, "a product of %lld x %lld x %lld exceeds the BLAS int range",
                           (long long)a, (long long)b, (long long)c);
    return OAR_OK;
}

static void gemm(int dt, bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const void *A,
                 int64_t lda, const void *B, int64_t ldb, double beta, void *C, int64_t ldc)
{
    oar_gemm(dt, oar_gemm_threads(M * N * K), ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* ---- bmm ------------------------------------------------------------------ */
static int bmm_fwd(oar_kernel_ctx_t *k)
{
    oar_tensor_t *x = oar_k_input(k, OAR_BMM_X, 0), *y = oar_k_input(k, OAR_BMM_Y, 0);
    const int64_t B = x->dims[0], M = x->dims[1], K = x->dims[2], N = y->dims[2];
    const int dt = x->dtype;
    OAR_TRY(check_int(k, M, N, K));
    void *out;
    OAR_TRY(oar_k_output_sized(k, OAR_BMM_OUT, "Out", dt, B * M * N, false, &out));
    const size_t es = oar_dtype_size(dt);
    const char *xv = oar_tensor_data(x), *yv = oar_tensor_data(y);
    for (int64_t b = 0; b < B; b++)
        gemm(dt, false, false, M, N, K, 1.0, xv + es * (size_t)(b * M * K), K, yv + es * (size_t)(b * K * N), N,
             0.0, (char *)out + es * (size_t)(b * M * N), N);
    return OAR_OK;
}

static int bmm_bwd(oar_kernel_ctx_t *k)
{
    oar_tensor_t *x = oar_k_input(k, OAR_BMM_G_X, 0), *y = oar_k_input(k, OAR_BMM_G_Y, 0);
    const int64_t B = x->dims[0], M = x->dims[1], K = x->dims[2], N = y->dims[2];
    const int dt = x->dtype;
    OAR_TRY(check_int(k, M, N, K));
    void *dx, *dy;
    OAR_TRY(oar_k_output_sized(k, OAR_BMM_G_DX, "X@GRAD", dt, B * M * K, true, &dx));
    OAR_TRY(oar_k_output_sized(k, OAR_BMM_G_DY, "Y@GRAD", dt, B * K * N, true, &dy));
    const size_t es = oar_dtype_size(dt);
    const char *xv = oar_tensor_data(x), *yv = oar_tensor_data(y),
               *g = oar_tensor_data(oar_k_input(k, OAR_BMM_G_DOUT, 0));
    for (int64_t b = 0; b < B; b++) {
        const char *xb = xv + es * (size_t)(b * M * K), *yb = yv + es * (size_t)(b * K * N),
                   *gb = g + es * (size_t)(b * M * N);
        if (dx) gemm(dt, false, true, M, K, N, 1.0, gb, N, yb, N, 0.0, (char *)dx + es * (size_t)(b * M * K), K);
        if (dy) gemm(dt, true, false, K, N, M, 1.0, xb, K, gb, N, 0.0, (char *)dy + es * (size_t)(b * K * N), N);
    }
    return OAR_OK;
}

OAR_REGISTER_KERNEL("bmm", OAR_PLACE_CPU, OAR_FP32, bmm_fwd)
OAR_REGISTER_KERNEL("bmm_grad", OAR_PLACE_CPU, OAR_FP32, bmm_bwd)
/* one body serves both dtypes: oar_gemm dispatches on the dtype */
static int bmm_fwd64(oar_kernel_ctx_t *k) { return bmm_fwd(k); }
static int bmm_bwd64(oar_kernel_ctx_t *k) { return bmm_bwd(k); }
OAR_REGISTER_KERNEL("bmm", OAR_PLACE_CPU, OAR_FP64, bmm_fwd64)
OAR_REGISTER_KERNEL("bmm_grad", OAR_PLACE_CPU, OAR_FP64, bmm_bwd64)

/* ---- dot ------------------------------------------------------------------ */
/* rows and row length of X (1-D: one row) */
static void rows_of(const oar_tensor_t *x, int64_t *rows, int64_t *n)
{
    *n = x->dims[x->ndim - 1];
    *rows = x->ndim == 2 ? x->dims[0] : 1;
}

static int dot_fwd_gemm(oar_kernel_ctx_t *k)
{
    oar_tensor_t *x = oar_k_input(k, OAR_DOT_X, 0), *y = oar_k_input(k, OAR_DOT_Y, 0);
    int64_t R, n;
    rows_of(x, &R, &n);
    const int dt = x->dtype;
    OAR_TRY(check_int(k, 1, 1, n));
    void *out;
    OAR_TRY(oar_k_output_sized(k, OAR_DOT_OUT, "Out", dt, R, false, &out));
    const size_t es = oar_dtype_size(dt);
    const char *xv = oar_tensor_data(x), *yv = oar_tensor_data(y);
    /* a 1 x 1 product over n: oar_gemm's GEMV path */
    for (int64_t r = 0; r < R; r++)
        gemm(dt, false, true, 1, 1, n, 1.0, xv + es * (size_t)(r * n), n, yv + es * (size_t)(r * n), n, 0.0,
             (char *)out + es * (size_t)r, 1);
    return OAR_OK;
}

#define DOT_KERNELS(NAME, T, DT, FWD)                                                                    \
    static int NAME##_fwd(oar_kernel_ctx_t *k)                                                            \
    {                                                                                                     \
        if (FWD) return dot_fwd_gemm(k);                                                                  \
        oar_tensor_t *x = oar_k_input(k, OAR_DOT_X, 0), *y = oar_k_input(k, OAR_DOT_Y, 0);                \
        int64_t R, n;                                                                                     \
        rows_of(x, &R, &n);                                                                               \
        void *out;                                                                                        \
        OAR_TRY(oar_k_output_sized(k, OAR_DOT_OUT, "Out", DT, R, false, &out));                           \
        const T *xv = oar_tensor_data(x), *yv = oar_tensor_data(y);                                       \
        for (int64_t r = 0; r < R; r++) {                                                                 \
            T s = 0;                                                                                      \
            for (int64_t j = 0; j < n; j++) s += xv[r * n + j] * yv[r * n + j];                           \
            ((T *)out)[r] = s;                                                                            \
        }                                                                                                 \
        return OAR_OK;                                                                                    \
    }                                                                                                     \
    static int NAME##_bwd(oar_kernel_ctx_t *k)                                                            \
    {                                                                                                     \
        oar_tensor_t *x = oar_k_input(k, OAR_DOT_G_X, 0), *y = oar_k_input(k, OAR_DOT_G_Y, 0);            \
        int64_t R, n;                                                                                     \
        rows_of(x, &R, &n);                                                                               \
        void *dx, *dy;                                                                                    \
        OAR_TRY(oar_k_output_sized(k, OAR_DOT_G_DX, "X@GRAD", DT, R * n, true, &dx));                     \
        OAR_TRY(oar_k_output_sized(k, OAR_DOT_G_DY, "Y@GRAD", DT, R * n, true, &dy));                     \
        const T *xv = oar_tensor_data(x), *yv = oar_tensor_data(y),                                       \
                *g = oar_tensor_data(oar_k_input(k, OAR_DOT_G_DOUT, 0));                                  \
        for (int64_t r = 0; r < R; r++)                                                                   \
            for (int64_t j = 0; j < n; j++) {                                                             \
                if (dx) ((T *)dx)[r * n + j] = g[r] * yv[r * n + j];                                      \
                if (dy) ((T *)dy)[r * n + j] = g[r] * xv[r * n + j];                                      \
            }                                                                                             \
        return OAR_OK;                                                                                    \
    }                                                                                                     \
    OAR_REGISTER_KERNEL("dot", OAR_PLACE_CPU, DT, NAME##_fwd)                                             \
    OAR_REGISTER_KERNEL("dot_grad", OAR_PLACE_CPU, DT, NAME##_bwd)

DOT_KERNELS(dot_f32, float, OAR_FP32, 1)
DOT_KERNELS(dot_f64, double, OAR_FP64, 1)
DOT_KERNELS(dot_i32, int32_t, OAR_INT32, 0)
DOT_KERNELS(dot_i64, int64_t, OAR_INT64, 0)

/* ---- addmm ---------------------------------------------------------------- */
#define ADDMM_KERNELS(NAME, T, DT)                                                                         \
    static int NAME##_fwd(oar_kernel_ctx_t *k)                                                            \
    {                                                                                                     \
        const oar_addmm_attrs_t *a = oar_k_attrs(k);                                                      \
        oar_tensor_t *in = oar_k_input(k, OAR_ADDMM_INPUT, 0), *x = oar_k_input(k, OAR_ADDMM_X, 0),       \
                     *y = oar_k_input(k, OAR_ADDMM_Y, 0);                                                 \
        const int64_t M = x->dims[0], K = x->dims[1], N = y->dims[1];                                     \
        const int64_t si = in->dims[0] == 1 ? 0 : in->dims[1], sj = in->dims[1] == 1 ? 0 : 1;             \
        OAR_TRY(check_int(k, M, N, K));                                                                   \
        void *out;                                                                                        \
        OAR_TRY(oar_k_output_sized(k, OAR_ADDMM_OUT, "Out", DT, M * N, false, &out));                     \
        const T *iv = oar_tensor_data(in);                                                                \
        T *o = out;                                                                                       \
        for (int64_t i = 0; i < M; i++)                                                                   \
            for (int64_t j = 0; j < N; j++) o[i * N + j] = (T)a->beta * iv[i * si + j * sj];              \
        gemm(DT, false, false, M, N, K, a->alpha, oar_tensor_data(x), K, oar_tensor_data(y), N, 1.0, o, N); \
        return OAR_OK;                                                                                    \
    }                                                                                                     \
    static int NAME##_bwd(oar_kernel_ctx_t *k)                                                            \
    {                                                                                                     \
        const oar_addmm_attrs_t *a = oar_k_attrs(k);                                                      \
        oar_tensor_t *in = oar_k_input(k, OAR_ADDMM_G_INPUT, 0), *x = oar_k_input(k, OAR_ADDMM_G_X, 0),   \
                     *y = oar_k_input(k, OAR_ADDMM_G_Y, 0);                                               \
        const int64_t M = x->dims[0], K = x->dims[1], N = y->dims[1];                                     \
        const int64_t si = in->dims[0] == 1 ? 0 : in->dims[1], sj = in->dims[1] == 1 ? 0 : 1;             \
        OAR_TRY(check_int(k, M, N, K));                                                                   \
        void *di, *dx, *dy;                                                                               \
        OAR_TRY(oar_k_output_sized(k, OAR_ADDMM_G_DINPUT, "Input@GRAD", DT, in->dims[0] * in->dims[1],   \
                                   true, &di));                                                           \
        OAR_TRY(oar_k_output_sized(k, OAR_ADDMM_G_DX, "X@GRAD", DT, M * K, true, &dx));                   \
        OAR_TRY(oar_k_output_sized(k, OAR_ADDMM_G_DY, "Y@GRAD", DT, K * N, true, &dy));                   \
        const T *g = oar_tensor_data(oar_k_input(k, OAR_ADDMM_G_DOUT, 0));                                \
        if (di) {                                                                                         \
            /* summed over the axes Input was broadcast along, in a fixed order */                        \
            T *d = di;                                                                                    \
            memset(d, 0, sizeof(T) * (size_t)(in->dims[0] * in->dims[1]));                                \
            for (int64_t i = 0; i < M; i++)                                                               \
                for (int64_t j = 0; j < N; j++) d[i * si + j * sj] += (T)a->beta * g[i * N + j];          \
        }                                                                                                 \
        if (dx) gemm(DT, false, true, M, K, N, a->alpha, g, N, oar_tensor_data(y), N, 0.0, dx, K);        \
        if (dy) gemm(DT, true, false, K, N, M, a->alpha, oar_tensor_data(x), K, g, N, 0.0, dy, N);        \
        return OAR_OK;                                                                                    \
    }                                                                                                     \
    OAR_REGISTER_KERNEL("addmm", OAR_PLACE_CPU, DT, NAME##_fwd)                                           \
    OAR_REGISTER_KERNEL("addmm_grad", OAR_PLACE_CPU, DT, NAME##_bwd)

ADDMM_KERNELS(addmm_f32, float, OAR_FP32)
ADDMM_KERNELS(addmm_f64, double, OAR_FP64)

/* ---- squared_l2_norm, l1_norm, squared_l2_distance ------------------------- */
#define NORM_KERNELS(NAME, T, DT)                                                                          \
    static int NAME##_sql2(oar_kernel_ctx_t *k)                                                           \
    {                                                                                                     \
        oar_tensor_t *x = oar_k_input(k, OAR_SQL2_X, 0);                                                  \
        const int64_t n = oar_tensor_numel(x);                                                            \
        void *out;                                                                                        \
        OAR_TRY(oar_k_output_sized(k, OAR_SQL2_OUT, "Out", DT, 1, false, &out));                          \
        const T *xv = oar_tensor_data(x);                                                                 \
        T s = 0;                                                                                          \
        for (int64_t i = 0; i < n; i++) s += xv[i] * xv[i];                                               \
        *(T *)out = s;                                                                                    \
        return OAR_OK;                                                                                    \
    }                                                                                                     \
    static int NAME##_sql2_bwd(oar_kernel_ctx_t *k)                                                       \
    {                                                                                                     \
        oar_tensor_t *x = oar_k_input(k, OAR_SQL2_G_X, 0);                                                \
        const int64_t n = oar_tensor_numel(x);                                                            \
        void *dx;                                                                                         \
        OAR_TRY(oar_k_output_sized(k, OAR_SQL2_G_DX, "X@GRAD", DT, n, true, &dx));                        \
        if (!dx) return OAR_OK;                                                                           \
        const T *xv = oar_tensor_data(x), g = *(const T *)oar_tensor_data(oar_k_input(k, OAR_SQL2_G_DOUT, 0)); \
        for (int64_t i = 0; i < n; i++) ((T *)dx)[i] = 2 * g * xv[i];                                     \
        return OAR_OK;                                                                                    \
    }                                                                                                     \
    static int NAME##_l1(oar_kernel_ctx_t *k)                                                             \
    {                                                                                                     \
        oar_tensor_t *x = oar_k_input(k, OAR_L1N_X, 0);                                                   \
        const int64_t n = oar_tensor_numel(x);                                                            \
        void *out;                                                                                        \
        OAR_TRY(oar_k_output_sized(k, OAR_L1N_OUT, "Out", DT, 1, false, &out));                           \
        const T *xv = oar_tensor_data(x);                                                                 \
        T s = 0;                                                                                          \
        for (int64_t i = 0; i < n; i++) s += xv[i] < 0 ? -xv[i] : xv[i];                                  \
        *(T *)out = s;                                                                                    \
        return OAR_OK;                                                                                    \
    }                                                                                                     \
    static int NAME##_l1_bwd(oar_kernel_ctx_t *k)                                                         \
    {                                                                                                     \
        oar_tensor_t *x = oar_k_input(k, OAR_L1N_G_X, 0);                                                 \
        const int64_t n = oar_tensor_numel(x);                                                            \
        void *dx;                                                                                         \
        OAR_TRY(oar_k_output_sized(k, OAR_L1N_G_DX, "X@GRAD", DT, n, true, &dx));                         \
        if (!dx) return OAR_OK;                                                                           \
        const T *xv = oar_tensor_data(x), g = *(const T *)oar_tensor_data(oar_k_input(k, OAR_L1N_G_DOUT, 0)); \
        for (int64_t i = 0; i < n; i++) ((T *)dx)[i] = xv[i] > 0 ? g : xv[i] < 0 ? -g : 0;                 \
        return OAR_OK;                                                                                    \
    }                                                                                                     \
    static int NAME##_sql2d(oar_kernel_ctx_t *k)                                                          \
    {                                                                                                     \
        oar_tensor_t *x = oar_k_input(k, OAR_SQL2D_X, 0), *y = oar_k_input(k, OAR_SQL2D_Y, 0);            \
        const int64_t N = x->dims[0], D = N ? oar_tensor_numel(x) / N : 0, yrows = y->dims[0];            \
        void *sub, *out;                                                                                  \
        OAR_TRY(oar_k_output_sized(k, OAR_SQL2D_SUB, "sub_result", DT, N * D, false, &sub));              \
        OAR_TRY(oar_k_output_sized(k, OAR_SQL2D_OUT, "Out", DT, N, false, &out));                         \
        const T *xv = oar_tensor_data(x), *yv = oar_tensor_data(y);                                       \
        for (int64_t i = 0; i < N; i++) {                                                                 \
            const T *yr = yv + (yrows == 1 ? 0 : i * D);                                                  \
            T s = 0;                                                                                      \
            for (int64_t j = 0; j < D; j++) {                                                             \
                T d = xv[i * D + j] - yr[j];                                                              \
                ((T *)sub)[i * D + j] = d;                                                                \
                s += d * d;                                                                               \
            }                                                                                             \
            ((T *)out)[i] = s;                                                                            \
        }                                                                                                 \
        return OAR_OK;                                                                                    \
    }                                                                                                     \
    static int NAME##_sql2d_bwd(oar_kernel_ctx_t *k)                                                      \
    {                                                                                                     \
        oar_tensor_t *x = oar_k_input(k, OAR_SQL2D_G_X, 0), *y = oar_k_input(k, OAR_SQL2D_G_Y, 0);        \
        const int64_t N = x->dims[0], D = N ? oar_tensor_numel(x) / N : 0, yrows = y->dims[0];            \
        void *dx, *dy;                                                                                    \
        OAR_TRY(oar_k_output_sized(k, OAR_SQL2D_G_DX, "X@GRAD", DT, N * D, true, &dx));                   \
        OAR_TRY(oar_k_output_sized(k, OAR_SQL2D_G_DY, "Y@GRAD", DT, yrows * D, true, &dy));               \
        const T *sub = oar_tensor_data(oar_k_input(k, OAR_SQL2D_G_SUB, 0)),                               \
                *g = oar_tensor_data(oar_k_input(k, OAR_SQL2D_G_DOUT, 0));                                \
        if (dy && yrows == 1) memset(dy, 0, sizeof(T) * (size_t)D);                                       \
        for (int64_t i = 0; i < N; i++)                                                                   \
            for (int64_t j = 0; j < D; j++) {                                                             \
                T d = 2 * g[i] * sub[i * D + j];                                                          \
                if (dx) ((T *)dx)[i * D + j] = d;                                                         \
                if (dy && yrows == 1) ((T *)dy)[j] -= d; /* Y's one row: summed over X's rows */          \
                else if (dy) ((T *)dy)[i * D + j] = -d;                                                   \
            }                                                                                             \
        return OAR_OK;                                                                                    \
    }                                                                                                     \
    OAR_REGISTER_KERNEL("squared_l2_norm", OAR_PLACE_CPU, DT, NAME##_sql2)                                \
    OAR_REGISTER_KERNEL("squared_l2_norm_grad", OAR_PLACE_CPU, DT, NAME##_sql2_bwd)                       \
    OAR_REGISTER_KERNEL("l1_norm", OAR_PLACE_CPU, DT, NAME##_l1)                                          \
    OAR_REGISTER_KERNEL("l1_norm_grad", OAR_PLACE_CPU, DT, NAME##_l1_bwd)                                 \
    OAR_REGISTER_KERNEL("squared_l2_distance", OAR_PLACE_CPU, DT, NAME##_sql2d)                           \
    OAR_REGISTER_KERNEL("squared_l2_distance_grad", OAR_PLACE_CPU, DT, NAME##_sql2d_bwd)

NORM_KERNELS(norm_f32, float, OAR_FP32)
NORM_KERNELS(norm_f64, double, OAR_FP64)

/* ---- minus, isfinite/isinf/isnan ---------------------------------------------- */
#define MINUS_KERNEL(NAME, T, DT)                                                                          \
    static int NAME(oar_kernel_ctx_t *k)                                                                  \
    {                                                                                                     \
        oar_tensor_t *x = oar_k_input(k, OAR_MINUS_X, 0), *y = oar_k_input(k, OAR_MINUS_Y, 0);            \
        const int64_t n = oar_tensor_numel(x);                                                            \
        void *out;                                                                                        \
        OAR_TRY(oar_k_output_sized(k, OAR_MINUS_OUT, "Out", DT, n, false, &out));                         \
        const T *xv = oar_tensor_data(x), *yv = oar_tensor_data(y);                                       \
        for (int64_t i = 0; i < n; i++) ((T *)out)[i] = xv[i] - yv[i];                                    \
        return OAR_OK;                                                                                    \
    }                                                                                                     \
    OAR_REGISTER_KERNEL("minus", OAR_PLACE_CPU, DT, NAME)
MINUS_KERNEL(minus_f32, float, OAR_FP32)
MINUS_KERNEL(minus_f64, double, OAR_FP64)

enum { ISF_FINITE, ISF_INF, ISF_NAN };
/* the flag of a float tensor: all finite, or any inf / any nan */
#define ISF_KERNEL(NAME, T, DT, WHAT, TYPE)                                                                \
    static int NAME(oar_kernel_ctx_t *k)                                                                  \
    {                                                                                                     \
        oar_tensor_t *x = oar_k_input(k, OAR_ISF_X, 0);                                                   \
        const int64_t n = oar_tensor_numel(x);                                                            \
        void *out;                                                                                        \
        OAR_TRY(oar_k_output_sized(k, OAR_ISF_OUT, "Out", OAR_BOOL, 1, false, &out));                     \
        const T *xv = oar_tensor_data(x);                                                                 \
        bool r = WHAT == ISF_FINITE;                                                                    \
        for (int64_t i = 0; i < n; i++) {                                                                 \
            if (WHAT == ISF_FINITE && !isfinite(xv[i])) { r = false; break; }                             \
            if (WHAT == ISF_INF && isinf(xv[i])) { r = true; break; }                                     \
            if (WHAT == ISF_NAN && isnan(xv[i])) { r = true; break; }                                     \
        }                                                                                                 \
        *(bool *)out = r;                                                                                 \
        return OAR_OK;                                                                                    \
    }                                                                                                     \
    OAR_REGISTER_KERNEL(TYPE, OAR_PLACE_CPU, DT, NAME)
ISF_KERNEL(isfinite_f32, float, OAR_FP32, ISF_FINITE, "isfinite")
ISF_KERNEL(isfinite_f64, double, OAR_FP64, ISF_FINITE, "isfinite")
ISF_KERNEL(isinf_f32, float, OAR_FP32, ISF_INF, "isinf")
ISF_KERNEL(isinf_f64, double, OAR_FP64, ISF_INF, "isinf")
ISF_KERNEL(isnan_f32, float, OAR_FP32, ISF_NAN, "isnan")
ISF_KERNEL(isnan_f64, double, OAR_FP64, ISF_NAN, "isnan")

/* integer tensors hold no inf or nan */
#define ISF_INT_KERNEL(NAME, DT, WHAT, TYPE)                                                               \
    static int NAME(oar_kernel_ctx_t *k)                                                                  \
    {                                                                                                     \
        void *out;                                                                                        \
        OAR_TRY(oar_k_output_sized(k, OAR_ISF_OUT, "Out", OAR_BOOL, 1, false, &out));                     \
        *(bool *)out = WHAT == ISF_FINITE;\
        return OAR_OK;                                                                                    \
    }                                                                                                     \
    OAR_REGISTER_KERNEL(TYPE, OAR_PLACE_CPU, DT, NAME)
ISF_INT_KERNEL(isfinite_i32, OAR_INT32, ISF_FINITE, "isfinite")
ISF_INT_KERNEL(isfinite_i64, OAR_INT64, ISF_FINITE, "isfinite")
ISF_INT_KERNEL(isinf_i32, OAR_INT32, ISF_INF, "isinf")
ISF_INT_KERNEL(isinf_i64, OAR_INT64, ISF_INF, "isinf")
ISF_INT_KERNEL(isnan_i32, OAR_INT32, ISF_NAN, "isnan")
ISF_INT_KERNEL(isnan_i64, OAR_INT64, ISF_NAN, "isnan")
