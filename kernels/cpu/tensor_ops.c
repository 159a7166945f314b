/* tensor_ops.c — CPU kernels of scale, cast, sum, fill_zeros_like, increment.
 * Every kernel reads its input pointers before asking for output data, so an
 * in-place output (Out named like an input) sees the input's values. */
#include "op.h"
#include "ops/attr_tensor.h"
#include "ops/tensor_ops.h"
#include "ops/half_bits.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *nm(const char *s) { return s ? s : "?"; }

/* input X[i] as a tensor of `dtype` with data (a zero-size tensor may have none) */
static int in_ptr(oar_kernel_ctx_t *k, int i, int dtype, const oar_tensor_t **t, const void **p)
{
    *t = NULL;
    *p = NULL;
    const oar_tensor_t *x = oar_k_input(k, OAR_TENSOR_X, i);
    if (!x) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input X[%d] '%s' has no value", i,
                               nm(oar_k_input_name(k, OAR_TENSOR_X, i)));
    if (x->dtype != dtype)
        return oar_k_error(k, OAR_ERR_DTYPE, "input X[%d] '%s' has dtype %s, expected %s", i,
                           nm(oar_k_input_name(k, OAR_TENSOR_X, i)),
                           oar_dtype_name(x->dtype) ? oar_dtype_name(x->dtype) : "unset", oar_dtype_name(dtype));
    *p = oar_tensor_data((oar_tensor_t *)x);
    if (!*p && oar_tensor_numel_of(x) > 0)
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input X[%d] '%s' has no data", i,
                           nm(oar_k_input_name(k, OAR_TENSOR_X, i)));
    *t = x;
    return OAR_OK;
}

/* output Out's data in `dtype` */
static int out_ptr(oar_kernel_ctx_t *k, int dtype, void **p)
{
    *p = NULL;
    if (!oar_k_output(k, OAR_TENSOR_OUT, 0))
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Out has no tensor variable");
    *p = oar_k_output_data(k, OAR_TENSOR_OUT, 0, dtype);
    return *p ? OAR_OK : OAR_ERR_NOMEM;
}

#define PAR_FOR _Pragma("omp parallel for if(n > 65536)")

/* ---- scale ------------------------------------------------------------- */
/* A SELECTED_ROWS X gives a SELECTED_ROWS Out with X's rows; xt, xv are
 * X's value, yt the value tensor to write (sized like X's). */
static int rows_in_out(oar_kernel_ctx_t *k, oar_variable_t *var, int dtype,
                       const oar_tensor_t **xt, const void **xv, oar_tensor_t **yt)
{
    const oar_selected_rows_t *src = var->u.rows;
    const oar_tensor_t *v = src->value;
    if (!v || !oar_tensor_has_data(v) || v->dtype != dtype)
        return oar_k_error(k, OAR_ERR_DTYPE, "input X '%s': its selected rows hold no %s value",
                           nm(oar_k_input_name(k, OAR_TENSOR_X, 0)), oar_dtype_name(dtype));
    oar_variable_t *ov = oar_k_output_var(k, OAR_TENSOR_OUT, 0);
    oar_selected_rows_t *dst = ov ? oar_var_selected_rows(ov) : NULL;
    if (!dst) return oar_k_error(k, OAR_ERR_INVALID, "output Out: %s",
                                 ov ? oar_last_error() : "missing");
    if (dst != src) {
        if (src->nrows > dst->cap) {
            int64_t *r = oar_xrealloc(dst->rows, sizeof *r * (size_t)src->nrows);
            if (!r) return OAR_ERR_NOMEM;
            dst->rows = r;
            dst->cap = src->nrows;
        }
        if (src->nrows > 0) memcpy(dst->rows, src->rows, sizeof *dst->rows * (size_t)src->nrows);
        dst->nrows = src->nrows;
        dst->height = src->height;
        /* a SELECTED_ROWS value: inference cannot see its row count */
        if (!oar_k_output_resized(k, OAR_TENSOR_OUT, v->dims, v->ndim, v->dtype) && oar_tensor_numel_of(v) > 0)
            return OAR_ERR_NOMEM;
    }
    *xt = v;
    *xv = v->buf->data;
    *yt = dst->value;
    return OAR_OK;
}

/* Integers compute in double and truncate toward zero, so a fractional scale
 * (0.5) is not first truncated to 0 as a cast of the attr would. */
#define SCALE_KERNEL(sfx, T, DT, CT)                                                     \
    static int scale_##sfx(oar_kernel_ctx_t *k)                                          \
    {                                                                                    \
        const oar_scale_attrs_t *a = oar_k_attrs(k);                                     \
        double sv = a->scale;                                                            \
        OAR_TRY(oar_k_scalar_at(k, OAR_TENSOR_SCALE_TENSOR, "ScaleTensor", &sv));               \
        CT s = (CT)sv, b = (CT)a->bias;                                                  \
        if (!a->bias_after_scale) b *= s;                                                \
        const oar_tensor_t *xt;                                                          \
        const void *xv;                                                                  \
        void *yv;                                                                        \
        oar_variable_t *var = oar_k_input_var(k, OAR_TENSOR_X, 0);                       \
        if (var && oar_variable_type(var) == OAR_VAR_SELECTED_ROWS) {                    \
            oar_tensor_t *yt;                                                            \
            OAR_TRY(rows_in_out(k, var, DT, &xt, &xv, &yt));                             \
            if (!(yv = oar_tensor_mutable(yt, DT))) return OAR_ERR_NOMEM;                \
        } else {                                                                         \
            OAR_TRY(in_ptr(k, 0, DT, &xt, &xv));                                         \
            OAR_TRY(out_ptr(k, DT, &yv));                                                \
        }                                                                                \
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
/* VAL: a source element as a number (float16 is stored as its bits) */
#define VAL_ID(x) (x)
#define VAL_HALF(x) oar_half_to_double(x)
#define CAST_FROM(sfx, TI, DT, CV, VAL)                                                           \
    static int cast_##sfx(oar_kernel_ctx_t *k)                                                     \
    {                                                                                              \
        int out_dt = ((const oar_cast_attrs_t *)oar_k_attrs(k))->out_dtype;                        \
        const oar_tensor_t *xt;                                                                    \
        const void *xv;                                                                            \
        void *dst;                                                                                 \
        OAR_TRY(in_ptr(k, 0, DT, &xt, &xv));                                                       \
        int64_t n = oar_tensor_numel_of(xt);                                                       \
        const TI *s = xv;                                                                          \
        switch (out_dt) {                                                                          \
        case OAR_BOOL: case OAR_INT8: case OAR_UINT8: case OAR_INT16: case OAR_INT32:              \
        case OAR_INT64: case OAR_FP16: case OAR_FP32: case OAR_FP64: break;                        \
        default:                                                                                   \
            return oar_k_error(k, OAR_ERR_UNSUPPORTED, "attr out_dtype = %d has no CPU cast", out_dt); \
        }                                                                                          \
        /* casting in place to a wider dtype would overwrite unread input */                       \
        if (oar_k_output(k, OAR_TENSOR_OUT, 0) == xt && oar_dtype_size(out_dt) != sizeof(TI))      \
            return oar_k_error(k, OAR_ERR_INVALID, "Out '%s' is X itself; an in-place cast must "  \
                               "keep the element size", nm(oar_k_output_name(k, OAR_TENSOR_OUT, 0))); \
        OAR_TRY(out_ptr(k, out_dt, &dst));                                                         \
        switch (out_dt) {                                                                          \
        case OAR_BOOL: CAST_TO(bool, VAL(s[i]) != 0); break;                                            \
        case OAR_INT8: CAST_TO(int8_t, CV(VAL(s[i]), -128.0, 127.0)); break;      \
        case OAR_UINT8: CAST_TO(uint8_t, CV(VAL(s[i]), 0.0, 255.0)); break;       \
        case OAR_INT16: CAST_TO(int16_t, CV(VAL(s[i]), -32768.0, 32767.0)); break; \
        case OAR_INT32:                                                                            \
            CAST_TO(int32_t, CV(VAL(s[i]), -2147483648.0, 2147483647.0)); break;  \
        case OAR_INT64:                                                                            \
            /* 2^63 is not representable: clamp below it */                                        \
            CAST_TO(int64_t, CV(VAL(s[i]), -9223372036854775808.0, 9223372036854774784.0)); break;                      \
        case OAR_FP16: CAST_TO(uint16_t, oar_half_from_double((double)VAL(s[i]))); break;        \
        case OAR_FP32: CAST_TO(float, VAL(s[i])); break;                                                \
        default: CAST_TO(double, VAL(s[i])); break;                                                     \
        }                                                                                          \
        return OAR_OK;                                                                             \
    }                                                                                              \
    OAR_REGISTER_KERNEL("cast", OAR_PLACE_CPU, DT, cast_##sfx)

CAST_FROM(b, bool, OAR_BOOL, CV_INT, VAL_ID)
CAST_FROM(i8, int8_t, OAR_INT8, CV_INT, VAL_ID)
CAST_FROM(u8, uint8_t, OAR_UINT8, CV_INT, VAL_ID)
CAST_FROM(i16, int16_t, OAR_INT16, CV_INT, VAL_ID)
CAST_FROM(i32, int32_t, OAR_INT32, CV_INT, VAL_ID)
CAST_FROM(i64, int64_t, OAR_INT64, CV_INT, VAL_ID)
CAST_FROM(f16, uint16_t, OAR_FP16, CV_FLT, VAL_HALF)
CAST_FROM(f32, float, OAR_FP32, CV_FLT, VAL_ID)
CAST_FROM(f64, double, OAR_FP64, CV_FLT, VAL_ID)

/* ---- sum --------------------------------------------------------------- */
/* the elements per row of a selected-rows value (its dims after the first) */
static int64_t sr_width(const oar_selected_rows_t *sr)
{
    const oar_tensor_t *v = sr->value;
    if (!v || v->ndim < 1) return -1;
    int64_t w = 1;
    for (int i = 1; i < v->ndim; i++) w *= v->dims[i];
    return w;
}

static int sr_check(oar_kernel_ctx_t *k, int j, const oar_selected_rows_t *sr, int dtype,
                    int64_t *width)
{
    const char *name = oar_k_input_name(k, OAR_TENSOR_X, j);
    const oar_tensor_t *v = sr->value;
    if (sr->nrows == 0) return OAR_OK;   /* no rows: no value to agree with */
    int64_t w = sr_width(sr);
    if (w < 0 || !oar_tensor_has_data(v) || v->dims[0] != sr->nrows)
        return oar_k_error(k, OAR_ERR_SHAPE, "input X[%d] '%s': selected rows has %lld rows but its "
                           "value does not", j, name ? name : "?", (long long)sr->nrows);
    if (v->dtype != dtype)
        return oar_k_error(k, OAR_ERR_DTYPE, "input X[%d] '%s' has dtype %s, expected %s", j,
                           name ? name : "?", oar_dtype_name(v->dtype) ? oar_dtype_name(v->dtype) : "?",
                           oar_dtype_name(dtype));
    if (*width >= 0 && w != *width)
        return oar_k_error(k, OAR_ERR_SHAPE, "input X[%d] '%s' has rows of %lld elements, the "
                           "other inputs %lld", j, name ? name : "?", (long long)w, (long long)*width);
    *width = w;
    return OAR_OK;
}

/* Every input is SELECTED_ROWS: the sum is their rows and values
 * concatenated (duplicate rows stay; consumers add them up). */
static int sum_all_rows(oar_kernel_ctx_t *k, int dtype)
{
    int m = oar_k_nin(k, OAR_TENSOR_X);
    int64_t total = 0, width = -1, height = -1;
    const oar_selected_rows_t *lead = NULL;
    for (int j = 0; j < m; j++) {
        oar_variable_t *v = oar_k_input_var(k, OAR_TENSOR_X, j);
        if (!v) continue;
        const oar_selected_rows_t *sr = v->u.rows;
        OAR_TRY(sr_check(k, j, sr, dtype, &width));
        if (height >= 0 && sr->height != height)
            return oar_k_error(k, OAR_ERR_SHAPE, "input X[%d] '%s' has height %lld, X[0] %lld", j,
                               nm(oar_k_input_name(k, OAR_TENSOR_X, j)), (long long)sr->height, (long long)height);
        height = sr->height;
        if (!lead && sr->nrows > 0) lead = sr;   /* its value gives the row shape */
        total += sr->nrows;
    }
    if (height < 0) return oar_k_error(k, OAR_ERR_INVALID, "input X has no variables");
    int64_t dims[OAR_MAX_DIMS] = {0};
    int nd = 1;
    if (lead) {
        nd = lead->value->ndim;
        memcpy(dims, lead->value->dims, sizeof dims);
    }
    dims[0] = total;
    oar_tensor_t *val;
    OAR_TRY(oar_tensor_new(dtype, dims, nd, &val));
    int64_t *rows = oar_xmalloc(sizeof *rows * (size_t)(total ? total : 1));
    if (!rows) { oar_tensor_free(val); return OAR_ERR_NOMEM; }
    size_t es = oar_dtype_size(dtype);
    char *dst = oar_tensor_data(val);
    int64_t at = 0;
    for (int j = 0; j < m; j++) {
        oar_variable_t *v = oar_k_input_var(k, OAR_TENSOR_X, j);
        if (!v || v->u.rows->nrows == 0) continue;
        const oar_selected_rows_t *sr = v->u.rows;
        memcpy(rows + at, sr->rows, sizeof *rows * (size_t)sr->nrows);
        memcpy(dst + (size_t)(at * width) * es, sr->value->buf->data, (size_t)(sr->nrows * width) * es);
        at += sr->nrows;
    }
    /* every input is read: now the output (possibly X[0] itself) may change */
    oar_selected_rows_t *out = oar_var_selected_rows(oar_k_output_var(k, OAR_TENSOR_OUT, 0));
    if (!out) {
        free(rows);
        oar_tensor_free(val);
        return oar_k_error(k, OAR_ERR_INVALID, "output Out: %s", oar_last_error());
    }
    free(out->rows);
    oar_tensor_free(out->value);
    out->rows = rows;
    out->nrows = out->cap = total;
    out->height = height;
    out->value = val;
    return OAR_OK;
}

#define SUM_MAX_STACK 16
#define SUM_KERNEL(sfx, T, DT)                                                              \
    static int sum_##sfx(oar_kernel_ctx_t *k)                                               \
    {                                                                                       \
        int m = oar_k_nin(k, OAR_TENSOR_X), used = 0, nsr = 0;                              \
        for (int j = 0; j < m; j++) {                                                       \
            oar_variable_t *v = oar_k_input_var(k, OAR_TENSOR_X, j);                        \
            if (v && oar_variable_type(v) == OAR_VAR_SELECTED_ROWS) nsr++;                  \
            else if (v) used++;                                                             \
        }                                                                                   \
        if (nsr > 0 && used == 0) return sum_all_rows(k, DT);                               \
        used = 0;                                                                           \
        const T *stack[SUM_MAX_STACK];                                                      \
        const T **src = stack;                                                              \
        if (m > SUM_MAX_STACK && !(src = oar_xmalloc(sizeof(T *) * (size_t)m)))            \
            return OAR_ERR_NOMEM;                                                           \
        int64_t n = -1, width = -1;                                                         \
        int rc = OAR_OK, first = -1;                                                        \
        for (int j = 0; j < m && rc == OAR_OK; j++) {                                       \
            oar_variable_t *v = oar_k_input_var(k, OAR_TENSOR_X, j);                        \
            if (!v) continue;                                                               \
            if (oar_variable_type(v) == OAR_VAR_SELECTED_ROWS) {                            \
                rc = sr_check(k, j, v->u.rows, DT, &width);                                 \
                continue;                                                                   \
            }                                                                               \
            const oar_tensor_t *t;                                                          \
            const void *p;                                                                  \
            rc = in_ptr(k, j, DT, &t, &p);                                                  \
            if (rc != OAR_OK) break;                                                        \
            int64_t nj = oar_tensor_numel_of(t);                                            \
            if (n < 0) { n = nj; first = j; }                                               \
            else if (nj != n)                                                               \
                rc = oar_k_error(k, OAR_ERR_SHAPE, "input X[%d] '%s' has %lld elements, "  \
                                 "X[%d] '%s' has %lld", j,                                  \
                                 nm(oar_k_input_name(k, OAR_TENSOR_X, j)), (long long)nj,   \
                                 first, nm(oar_k_input_name(k, OAR_TENSOR_X, first)),       \
                                 (long long)n);                                             \
            src[used++] = p;                                                                \
        }                                                                                   \
        void *yv = NULL;                                                                    \
        if (rc == OAR_OK && used == 0)                                                      \
            rc = oar_k_error(k, OAR_ERR_INVALID, "input X has no variables");               \
        const oar_tensor_t *ot = oar_k_output(k, OAR_TENSOR_OUT, 0);                        \
        int64_t height = ot && ot->ndim > 0 ? ot->dims[0] : 1;                              \
        if (rc == OAR_OK && nsr > 0 && width * height != n)                                 \
            rc = oar_k_error(k, OAR_ERR_SHAPE, "sparse inputs have rows of %lld elements; " \
                             "the dense inputs' rows have %lld", (long long)width,          \
                             (long long)(height ? n / height : 0));                         \
        if (rc == OAR_OK) rc = out_ptr(k, DT, &yv);                                         \
        if (rc == OAR_OK) {                                                                 \
            T *y = yv;                                                                      \
            /* per element over all inputs: Out may alias any of them */                    \
            PAR_FOR for (int64_t i = 0; i < n; i++) {                                       \
                T acc = src[0][i];                                                          \
                for (int j = 1; j < used; j++) acc += src[j][i];                            \
                y[i] = acc;                                                                 \
            }                                                                               \
            for (int j = 0; j < m && rc == OAR_OK; j++) {                                   \
                oar_variable_t *v = oar_k_input_var(k, OAR_TENSOR_X, j);                    \
                if (!v || oar_variable_type(v) != OAR_VAR_SELECTED_ROWS) continue;          \
                const oar_selected_rows_t *sr = v->u.rows;                                  \
                const T *val = sr->nrows ? sr->value->buf->data : NULL;                     \
                for (int64_t r = 0; r < sr->nrows && rc == OAR_OK; r++) {                   \
                    if (sr->rows[r] < 0 || sr->rows[r] >= height) {                         \
                        rc = oar_k_error(k, OAR_ERR_RANGE, "input X[%d] '%s' names row "    \
                                         "%lld of a sum with %lld rows", j,                 \
                                         nm(oar_k_input_name(k, OAR_TENSOR_X, j)),          \
                                         (long long)sr->rows[r], (long long)height);        \
                        break;                                                              \
                    }                                                                       \
                    T *yr = y + sr->rows[r] * width;                                        \
                    for (int64_t c = 0; c < width; c++) yr[c] += val[r * width + c];        \
                }                                                                           \
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
    const oar_tensor_t *x = oar_k_input(k, OAR_TENSOR_X, 0);
    if (!x) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input X '%s' has no value",
                               nm(oar_k_input_name(k, OAR_TENSOR_X, 0)));
    int64_t n = oar_tensor_numel_of(x);
    void *y;
    OAR_TRY(out_ptr(k, dt, &y));
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
        double step = ((const oar_increment_attrs_t *)oar_k_attrs(k))->step;                \
        const oar_tensor_t *xt;                                                             \
        const void *xv;                                                                     \
        void *yv;                                                                           \
        OAR_TRY(in_ptr(k, 0, DT, &xt, &xv));                                                \
        if (oar_tensor_numel_of(xt) != 1)                                                   \
            return oar_k_error(k, OAR_ERR_SHAPE, "input X '%s' has %lld elements, expected 1", \
                               nm(oar_k_input_name(k, OAR_TENSOR_X, 0)),                    \
                               (long long)oar_tensor_numel_of(xt));                         \
        T v = *(const T *)xv;                                                               \
        OAR_TRY(out_ptr(k, DT, &yv));                                                       \
        *(T *)yv = (T)(v + step);                                                           \
        return OAR_OK;                                                                      \
    }                                                                                       \
    OAR_REGISTER_KERNEL("increment", OAR_PLACE_CPU, DT, increment_##sfx)

INCREMENT_KERNEL(f32, float, OAR_FP32)
INCREMENT_KERNEL(f64, double, OAR_FP64)
INCREMENT_KERNEL(i32, int32_t, OAR_INT32)
INCREMENT_KERNEL(i64, int64_t, OAR_INT64)
