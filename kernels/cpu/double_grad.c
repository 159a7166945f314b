/* double_grad.c — CPU kernels of the unary, mul and reshape2 double-grad
 * ops (src/ops/double_grad.ops; Fluid's formulas, see the op docs). An
 * absent direction DDX/DDY reads as zeros; an output the pass does not want
 * is skipped. The elementwise ones are in double_grad_ew.c. */
#include <math.h>
#include <string.h>
#include "op.h"
#include "double_grad_io.h"
#include "ops/double_grad.h"

/* Unary double grads: f(x-ish value v, ddx, dout) -> ddout and dx. dep is
 * the forward value the op reads, dout/dx slots -1 when the op has none. */
#define UNARY_DG(NAME, TYPE, T, DT, S_DEP, S_DOUT, S_DDX, S_DX, S_DDOUT, SETUP, DDOUT_EXPR, DX_EXPR) \
    static int NAME(oar_kernel_ctx_t *k)                                                             \
    {                                                                                                \
        oar_tensor_t *vt = oar_k_input(k, S_DEP, 0);                                           \
        const int64_t n = oar_tensor_numel(vt);                                                      \
        const T *v = oar_tensor_data(vt), *ddx, *dout = NULL;                                        \
        OAR_TRY(opt_in(k, S_DDX, "DDX", DT, n, (const void **)&ddx));                                \
        if ((S_DOUT) >= 0) OAR_TRY(oar_k_input_sized(k, S_DOUT, "DOut", DT, n, (const void **)&dout)); \
        void *ddo = NULL, *dxo = NULL;                                                               \
        OAR_TRY(oar_k_output_sized(k, S_DDOUT, "DDOut", DT, n, true, &ddo));                         \
        if ((S_DX) >= 0) OAR_TRY(oar_k_output_sized(k, S_DX, "DX", DT, n, true, &dxo));             \
        T *ddout = ddo, *dx = dxo;                                                                   \
        SETUP                                                                                        \
        for (int64_t i = 0; i < n; i++) {                                                            \
            const T x = v[i], dd = ddx ? ddx[i] : (T)0, dy = dout ? dout[i] : (T)0;                  \
            (void)dy;                                                                                \
            if (ddout) ddout[i] = (DDOUT_EXPR);                                                      \
            if (dx) dx[i] = (DX_EXPR);                                                               \
        }                                                                                            \
        return OAR_OK;                                                                               \
    }                                                                                                \
    OAR_REGISTER_KERNEL(TYPE, OAR_PLACE_CPU, DT, NAME)

#define NO_SETUP
#define ALPHA_SETUP(T, S) const T al = (T)((const S *)oar_k_attrs(k))->alpha; (void)al;

#define UNARY_ALL(T, DT, SUF)                                                                         \
    UNARY_DG(relu_gg_##SUF, "relu_grad_grad", T, DT, OAR_RELU_GRAD_GRAD_OUT, -1, OAR_RELU_GRAD_GRAD_DDX, \
             -1, OAR_RELU_GRAD_GRAD_DDOUT, NO_SETUP, x > 0 ? dd : (T)0, 0)                           \
    UNARY_DG(leaky_gg_##SUF, "leaky_relu_grad_grad", T, DT, OAR_LEAKY_RELU_GRAD_GRAD_X, -1,           \
             OAR_LEAKY_RELU_GRAD_GRAD_DDX, -1, OAR_LEAKY_RELU_GRAD_GRAD_DDOUT,                        \
             ALPHA_SETUP(T, oar_leaky_relu_grad_grad_attrs_t), x > 0 ? dd : al * dd, 0)                 \
    UNARY_DG(elu_gg_##SUF, "elu_grad_grad", T, DT, OAR_ELU_GRAD_GRAD_X, OAR_ELU_GRAD_GRAD_DOUT,       \
             OAR_ELU_GRAD_GRAD_DDX, OAR_ELU_GRAD_GRAD_DX, OAR_ELU_GRAD_GRAD_DDOUT,                    \
             ALPHA_SETUP(T, oar_elu_grad_grad_attrs_t), x > 0 ? dd : dd * al * (T)exp((double)x),        \
             x > 0 ? (T)0 : dd * dy * al * (T)exp((double)x))                                         \
    UNARY_DG(square_gg_##SUF, "square_grad_grad", T, DT, OAR_SQUARE_GRAD_GRAD_X, OAR_SQUARE_GRAD_GRAD_DOUT, \
             OAR_SQUARE_GRAD_GRAD_DDX, OAR_SQUARE_GRAD_GRAD_DX, OAR_SQUARE_GRAD_GRAD_DDOUT, NO_SETUP, \
             2 * x * dd, 2 * dy * dd)

UNARY_ALL(float, OAR_FP32, f32)
UNARY_ALL(double, OAR_FP64, f64)

/* sqrt: reads Out and the first-order DX (= DOut / (2 Out)) */
#define SQRT_GG(NAME, T, DT)                                                                          \
    static int NAME(oar_kernel_ctx_t *k)                                                             \
    {                                                                                                \
        oar_tensor_t *ot = oar_k_input(k, OAR_SQRT_GRAD_GRAD_OUT, 0);                          \
        const int64_t n = oar_tensor_numel(ot);                                                      \
        const T *out = oar_tensor_data(ot), *dx, *ddx;                                               \
        OAR_TRY(oar_k_input_sized(k, OAR_SQRT_GRAD_GRAD_DX, "DX", DT, n, (const void **)&dx));        \
        OAR_TRY(opt_in(k, OAR_SQRT_GRAD_GRAD_DDX, "DDX", DT, n, (const void **)&ddx));               \
        void *a = NULL, *b = NULL;                                                                   \
        OAR_TRY(oar_k_output_sized(k, OAR_SQRT_GRAD_GRAD_DOUT, "DOut", DT, n, true, &a));            \
        OAR_TRY(oar_k_output_sized(k, OAR_SQRT_GRAD_GRAD_DDOUT, "DDOut", DT, n, true, &b));          \
        T *dout = a, *ddout = b;                                                                     \
        for (int64_t i = 0; i < n; i++) {                                                            \
            const T dd = ddx ? ddx[i] : (T)0;                                                        \
            if (dout) dout[i] = -dd * dx[i] / out[i];                                                \
            if (ddout) ddout[i] = dd * (T)0.5 / out[i];                                              \
        }                                                                                            \
        return OAR_OK;                                                                               \
    }                                                                                                \
    OAR_REGISTER_KERNEL("sqrt_grad_grad", OAR_PLACE_CPU, DT, NAME)

SQRT_GG(sqrt_gg_f32, float, OAR_FP32)
SQRT_GG(sqrt_gg_f64, double, OAR_FP64)

/* rows and columns of a tensor flattened at `ncol` (Fluid's num_col_dims) */
static int flat2(oar_kernel_ctx_t *k, const oar_tensor_t *t, int ncol, const char *what, int64_t *r, int64_t *c)
{
    if (ncol < 1 || ncol > t->ndim)
        return oar_k_error(k, OAR_ERR_SHAPE, "%s has rank %d, num_col_dims %d", what, t->ndim, ncol);
    *r = 1;
    *c = 1;
    for (int i = 0; i < ncol; i++) *r *= t->dims[i];
    for (int i = ncol; i < t->ndim; i++) *c *= t->dims[i];
    return OAR_OK;
}

/* mul on X [M, K], Y [K, N]: DDOut = DDX Y + X DDY, DX = DOut DDY^T, DY = DDX^T DOut */
#define MUL_GG(NAME, T, DT)                                                                           \
    static int NAME(oar_kernel_ctx_t *k)                                                             \
    {                                                                                                \
        const oar_mul_grad_grad_attrs_t *at = oar_k_attrs(k);                                        \
        oar_tensor_t *xt = oar_k_input(k, OAR_MUL_GRAD_GRAD_X, 0), *yt = oar_k_input(k, OAR_MUL_GRAD_GRAD_Y, 0); \
        int64_t M = 0, K = 0, K2 = 0, N = 0;                                                                       \
        OAR_TRY(flat2(k, xt, at->xnf, "X", &M, &K));                                                 \
        OAR_TRY(flat2(k, yt, at->ynf, "Y", &K2, &N));                                                \
        if (K != K2) return oar_k_error(k, OAR_ERR_SHAPE, "X's columns %lld differ from Y's rows %lld", \
                                        (long long)K, (long long)K2);                                \
        const T *x = oar_tensor_data(xt), *y = oar_tensor_data(yt), *dout, *ddx, *ddy;               \
        OAR_TRY(oar_k_input_sized(k, OAR_MUL_GRAD_GRAD_DOUT, "DOut", DT, M * N, (const void **)&dout)); \
        OAR_TRY(opt_in(k, OAR_MUL_GRAD_GRAD_DDX, "DDX", DT, M * K, (const void **)&ddx));            \
        OAR_TRY(opt_in(k, OAR_MUL_GRAD_GRAD_DDY, "DDY", DT, K * N, (const void **)&ddy));            \
        void *a = NULL, *b = NULL, *c = NULL;                                                        \
        OAR_TRY(oar_k_output_sized(k, OAR_MUL_GRAD_GRAD_DX, "DX", DT, M * K, true, &a));             \
        OAR_TRY(oar_k_output_sized(k, OAR_MUL_GRAD_GRAD_DY, "DY", DT, K * N, true, &b));             \
        OAR_TRY(oar_k_output_sized(k, OAR_MUL_GRAD_GRAD_DDOUT, "DDOut", DT, M * N, true, &c));       \
        T *dx = a, *dy = b, *ddout = c;                                                              \
        if (ddout)                                                                                   \
            for (int64_t i = 0; i < M; i++)                                                          \
                for (int64_t j = 0; j < N; j++) {                                                    \
                    T s = 0;                                                                         \
                    for (int64_t l = 0; l < K; l++)                                                  \
                        s += (ddx ? ddx[i * K + l] * y[l * N + j] : 0) + (ddy ? x[i * K + l] * ddy[l * N + j] : 0); \
                    ddout[i * N + j] = s;                                                            \
                }                                                                                    \
        if (dx)                                                                                      \
            for (int64_t i = 0; i < M; i++)                                                          \
                for (int64_t l = 0; l < K; l++) {                                                    \
                    T s = 0;                                                                         \
                    for (int64_t j = 0; j < N && ddy; j++) s += dout[i * N + j] * ddy[l * N + j];    \
                    dx[i * K + l] = s;                                                               \
                }                                                                                    \
        if (dy)                                                                                      \
            for (int64_t l = 0; l < K; l++)                                                          \
                for (int64_t j = 0; j < N; j++) {                                                    \
                    T s = 0;                                                                         \
                    for (int64_t i = 0; i < M && ddx; i++) s += ddx[i * K + l] * dout[i * N + j];    \
                    dy[l * N + j] = s;                                                               \
                }                                                                                    \
        return OAR_OK;                                                                               \
    }                                                                                                \
    OAR_REGISTER_KERNEL("mul_grad_grad", OAR_PLACE_CPU, DT, NAME)

MUL_GG(mul_gg_f32, float, OAR_FP32)
MUL_GG(mul_gg_f64, double, OAR_FP64)

/* reshape2: DDOut is DDX (X's shape) with DOut's shape; zeros without DDX */
#define RESHAPE_GG(NAME, T, DT)                                                                       \
    static int NAME(oar_kernel_ctx_t *k)                                                             \
    {                                                                                                \
        const int64_t n = oar_tensor_numel(oar_k_input(k, OAR_RESHAPE2_GRAD_GRAD_DOUT, 0));         \
        const T *ddx;                                                                                \
        OAR_TRY(opt_in(k, OAR_RESHAPE2_GRAD_GRAD_DDX, "DDX", DT, n, (const void **)&ddx));          \
        void *o = NULL;                                                                              \
        OAR_TRY(oar_k_output_sized(k, OAR_RESHAPE2_GRAD_GRAD_DDOUT, "DDOut", DT, n, true, &o));      \
        if (!o || n == 0) return OAR_OK;                                                             \
        if (ddx) memmove(o, ddx, (size_t)n * sizeof(T));                                             \
        else memset(o, 0, (size_t)n * sizeof(T));                                                    \
        return OAR_OK;                                                                               \
    }                                                                                                \
    OAR_REGISTER_KERNEL("reshape2_grad_grad", OAR_PLACE_CPU, DT, NAME)

RESHAPE_GG(reshape_gg_f32, float, OAR_FP32)
RESHAPE_GG(reshape_gg_f64, double, OAR_FP64)
