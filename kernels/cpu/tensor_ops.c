/* tensor_ops.c — CPU kernels of scale, cast, sum, fill_zeros_like, increment.
 * Every kernel reads its input pointers before asking for output data, so an
 * in-place output (Out named like an input) sees the input's values. */
#include "op.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* input tensor of `dtype` with data (a zero-size tensor may have none) */
static int in_ptr(oar_kernel_ctx_t *k, const char *slot, int i, int dtype,
                  const oar_tensor_t **t, const void **p)
{
    *t = NULL;
    *p = NULL;
    const oar_tensor_t *x = oar_k_in(k, slot, i);
    const char *name = oar_k_in_name(k, slot, i);
    if (!x) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s[%d] '%s' has no value",
                               slot, i, name ? name : "?");
    if (x->dtype != dtype)
        return oar_k_error(k, OAR_ERR_DTYPE, "input %s[%d] '%s' has dtype %s, expected %s", slot, i,
                           name ? name : "?", oar_dtype_name(x->dtype) ? oar_dtype_name(x->dtype) : "unset",
                           oar_dtype_name(dtype));
    *p = oar_tensor_data((oar_tensor_t *)x);
    if (!*p && oar_tensor_numel_of(x) > 0)
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s[%d] '%s' has no data", slot, i,
                           name ? name : "?");
    *t = x;
    return OAR_OK;
}

static int out_ptr(oar_kernel_ctx_t *k, const char *slot, int dtype, void **p)
{
    *p = NULL;
    if (!oar_k_out(k, slot, 0))
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "output %s has no tensor variable", slot);
    *p = oar_k_out_data(k, slot, 0, dtype);
    return *p ? OAR_OK : OAR_ERR_NOMEM;
}

#define PAR_FOR _Pragma("omp parallel for if(n > 65536)")

/* ---- scale ------------------------------------------------------------- */
/* Integers compute in double and truncate toward zero, so a fractional scale
 * (0.5) is not first truncated to 0 as a cast of the attr would. */
#define SCALE_KERNEL(sfx, T, DT, CT)                                                     \
    static int scale_##sfx(oar_kernel_ctx_t *k)                                          \
    {                                                                                    \
        const oar_op_desc_t *op = oar_k_op(k);                                           \
        CT s = (CT)oar_attr_f(op, "scale"), b = (CT)oar_attr_f(op, "bias");              \
        if (!oar_attr_b(op, "bias_after_scale")) b *= s;                                 \
        const oar_tensor_t *xt;                                                          \
        const void *xv;                                                                  \
        void *yv;                                                                        \
        OAR_TRY(in_ptr(k, "X", 0, DT, &xt, &xv));                                        \
        OAR_TRY(out_ptr(k, "Out", DT, &yv));                                             \
        const T *x = xv;                                                                 \
        T *y = yv;                                                                       \
        int64_t n = oar_tensor_numel_of(xt);                                             \
        PAR_FOR for (int64_t i = 0; i < n; i++) y[i] = (T)(s * (CT)x[i] + b);            \
        return OAR_OK;                                                                   \
    }                                                                                    \
    OAR_REGISTER_KERNEL("scale", OAR_PLACE_CPU, DT, scale_##sfx)

SCALE_KERNEL(f32, float, OAR_FP32, float)
SCALE_KERNEL(f64, double, OAR_FP64, double)
SCALE_KERNEL(i32, int32_t, OAR_INT32, double)
SCALE_KERNEL(i64, int64_t, OAR_INT64, double)

/* ---- cast -------------------------------------------------------------- */
/* Float to integer saturates (NaN -> 0): C leaves out-of-range conversions
 * undefined. */
static inline double sat(double v, double lo, double hi)
{
    return v != v ? 0.0 : v < lo ? lo : v > hi ? hi : v;
}

#define CAST_TO(TO, EXPR) do { TO *d_ = dst; PAR_FOR for (int64_t i = 0; i < n; i++) d_[i] = (TO)(EXPR); } while (0)

/* CV: how a source value becomes an integer: as is for integer sources
 * (a conditional with a double branch would round int64 through double),
 * saturated for floating sources */
#define CV_INT(x, lo, hi) (x)
#define CV_FLT(x, lo, hi) sat((double)(x), lo, hi)
#define CAST_FROM(sfx, TI, DT, CV)                                                                \
    static int cast_##sfx(oar_kernel_ctx_t *k)                                                     \
    {                                                                                              \
        int out_dt = oar_attr_i(oar_k_op(k), "out_dtype");                                         \
        const oar_tensor_t *xt;                                                                    \
        const void *xv;                                                                            \
        void *dst;                                                                                 \
        OAR_TRY(in_ptr(k, "X", 0, DT, &xt, &xv));                                                  \
        int64_t n = oar_tensor_numel_of(xt);                                                       \
        const TI *s = xv;                                                                          \
        switch (out_dt) {                                                                          \
        case OAR_BOOL: case OAR_INT8: case OAR_UINT8: case OAR_INT16: case OAR_INT32:              \
        case OAR_INT64: case OAR_FP32: case OAR_FP64: break;                                       \
        default:                                                                                   \
            return oar_k_error(k, OAR_ERR_UNSUPPORTED, "attr out_dtype = %d has no CPU cast", out_dt); \
        }                                                                                          \
        /* casting in place to a wider dtype would overwrite unread input */                       \
        if (oar_k_out(k, "Out", 0) == xt && oar_dtype_size(out_dt) != sizeof(TI))                  \
            return oar_k_error(k, OAR_ERR_INVALID, "Out '%s' is X itself; an in-place cast must "  \
                               "keep the element size", oar_k_out_name(k, "Out", 0));              \
        OAR_TRY(out_ptr(k, "Out", out_dt, &dst));                                                  \
        switch (out_dt) {                                                                          \
        case OAR_BOOL: CAST_TO(bool, s[i] != 0); break;                                            \
        case OAR_INT8: CAST_TO(int8_t, CV(s[i], -128.0, 127.0)); break;      \
        case OAR_UINT8: CAST_TO(uint8_t, CV(s[i], 0.0, 255.0)); break;       \
        case OAR_INT16: CAST_TO(int16_t, CV(s[i], -32768.0, 32767.0)); break; \
        case OAR_INT32:                                                                            \
            CAST_TO(int32_t, CV(s[i], -2147483648.0, 2147483647.0)); break;  \
        case OAR_INT64:                                                                            \
            /* 2^63 is not representable: clamp below it */                                        \
            CAST_TO(int64_t, CV(s[i], -9223372036854775808.0, 9223372036854774784.0)); break;                      \
        case OAR_FP32: CAST_TO(float, s[i]); break;                                                \
        default: CAST_TO(double, s[i]); break;                                                     \
        }                                                                                          \
        return OAR_OK;                                                                             \
    }                                                                                              \
    OAR_REGISTER_KERNEL("cast", OAR_PLACE_CPU, DT, cast_##sfx)

CAST_FROM(b, bool, OAR_BOOL, CV_INT)
CAST_FROM(i8, int8_t, OAR_INT8, CV_INT)
CAST_FROM(u8, uint8_t, OAR_UINT8, CV_INT)
CAST_FROM(i16, int16_t, OAR_INT16, CV_INT)
CAST_FROM(i32, int32_t, OAR_INT32, CV_INT)
CAST_FROM(i64, int64_t, OAR_INT64, CV_INT)
CAST_FROM(f32, float, OAR_FP32, CV_FLT)
CAST_FROM(f64, double, OAR_FP64, CV_FLT)

/* ---- sum --------------------------------------------------------------- */
#define SUM_MAX_STACK 16
#define SUM_KERNEL(sfx, T, DT)                                                              \
    static int sum_##sfx(oar_kernel_ctx_t *k)                                               \
    {                                                                                       \
        int m = oar_k_in_count(k, "X"), used = 0;                                           \
        const T *stack[SUM_MAX_STACK];                                                      \
        const T **src = stack;                                                              \
        if (m > SUM_MAX_STACK && !(src = oar_xmalloc(sizeof(T *) * (size_t)m)))            \
            return OAR_ERR_NOMEM;                                                           \
        int64_t n = -1;                                                                     \
        int rc = OAR_OK, first = -1;                                                        \
        for (int j = 0; j < m && rc == OAR_OK; j++) {                                       \
            const char *name = oar_k_in_name(k, "X", j);                                    \
            if (!name || strcmp(name, OAR_EMPTY_VAR) == 0) continue;                        \
            const oar_tensor_t *t;                                                          \
            const void *p;                                                                  \
            rc = in_ptr(k, "X", j, DT, &t, &p);                                             \
            if (rc != OAR_OK) break;                                                        \
            int64_t nj = oar_tensor_numel_of(t);                                            \
            if (n < 0) { n = nj; first = j; }                                               \
            else if (nj != n)                                                               \
                rc = oar_k_error(k, OAR_ERR_SHAPE, "input X[%d] '%s' has %lld elements, "  \
                                 "X[%d] '%s' has %lld", j, name, (long long)nj, first,      \
                                 oar_k_in_name(k, "X", first), (long long)n);               \
            src[used++] = p;                                                                \
        }                                                                                   \
        void *yv = NULL;                                                                    \
        if (rc == OAR_OK && used == 0)                                                      \
            rc = oar_k_error(k, OAR_ERR_INVALID, "input X has no variables");               \
        if (rc == OAR_OK) rc = out_ptr(k, "Out", DT, &yv);                                  \
        if (rc == OAR_OK) {                                                                 \
            T *y = yv;                                                                      \
            /* per element over all inputs: Out may alias any of them */                    \
            PAR_FOR for (int64_t i = 0; i < n; i++) {                                       \
                T acc = src[0][i];                                                          \
                for (int j = 1; j < used; j++) acc += src[j][i];                            \
                y[i] = acc;                                                                 \
            }                                                                               \
        }                                                                                   \
        if (src != stack) free(src);                                                        \
        return rc;                                                                          \
    }                                                                                       \
    OAR_REGISTER_KERNEL("sum", OAR_PLACE_CPU, DT, sum_##sfx)

SUM_KERNEL(f32, float, OAR_FP32)
SUM_KERNEL(f64, double, OAR_FP64)
SUM_KERNEL(i32, int32_t, OAR_INT32)
SUM_KERNEL(i64, int64_t, OAR_INT64)

/* ---- fill_zeros_like --------------------------------------------------- */
static int fill_zeros_like_k(oar_kernel_ctx_t *k)
{
    int dt = oar_k_dtype(k);
    const oar_tensor_t *x = oar_k_in(k, "X", 0);
    if (!x) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input X '%s' has no value",
                               oar_k_in_name(k, "X", 0) ? oar_k_in_name(k, "X", 0) : "?");
    int64_t n = oar_tensor_numel_of(x);
    void *y;
    OAR_TRY(out_ptr(k, "Out", dt, &y));
    if (n > 0) memset(y, 0, (size_t)n * oar_dtype_size(dt));
    return OAR_OK;
}

#define FZL_REG(sfx, DT) \
    static int fill_zeros_like_##sfx(oar_kernel_ctx_t *k) { return fill_zeros_like_k(k); } \
    OAR_REGISTER_KERNEL("fill_zeros_like", OAR_PLACE_CPU, DT, fill_zeros_like_##sfx)
FZL_REG(b, OAR_BOOL)
FZL_REG(i8, OAR_INT8)
FZL_REG(u8, OAR_UINT8)
FZL_REG(i16, OAR_INT16)
FZL_REG(i32, OAR_INT32)
FZL_REG(i64, OAR_INT64)
FZL_REG(f16, OAR_FP16)
FZL_REG(f32, OAR_FP32)
FZL_REG(f64, OAR_FP64)

/* ---- increment --------------------------------------------------------- */
#define INCREMENT_KERNEL(sfx, T, DT)                                                        \
    static int increment_##sfx(oar_kernel_ctx_t *k)                                         \
    {                                                                                       \
        double step = oar_attr_f(oar_k_op(k), "step");                                      \
        const oar_tensor_t *xt;                                                             \
        const void *xv;                                                                     \
        void *yv;                                                                           \
        OAR_TRY(in_ptr(k, "X", 0, DT, &xt, &xv));                                           \
        if (oar_tensor_numel_of(xt) != 1)                                                   \
            return oar_k_error(k, OAR_ERR_SHAPE, "input X '%s' has %lld elements, expected 1", \
                               oar_k_in_name(k, "X", 0), (long long)oar_tensor_numel_of(xt)); \
        T v = *(const T *)xv;                                                               \
        OAR_TRY(out_ptr(k, "Out", DT, &yv));                                                \
        *(T *)yv = (T)(v + step);                                                           \
        return OAR_OK;                                                                      \
    }                                                                                       \
    OAR_REGISTER_KERNEL("increment", OAR_PLACE_CPU, DT, increment_##sfx)

INCREMENT_KERNEL(f32, float, OAR_FP32)
INCREMENT_KERNEL(f64, double, OAR_FP64)
INCREMENT_KERNEL(i32, int32_t, OAR_INT32)
INCREMENT_KERNEL(i64, int64_t, OAR_INT64)
