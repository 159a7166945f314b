/* reduce.c — CPU kernels of mean, reduce_{sum,mean,max,min,prod} and grads.
 *
 * A reduction is planned once per call: size-1 axes are dropped and adjacent
 * axes that are both reduced or both kept are merged, so the common cases
 * (rows, columns, everything) become one or two loops. X is then walked in
 * memory order with an odometer over the merged axes that tracks the offset
 * of the matching Out element (stride 0 along reduced axes). Sums and
 * products accumulate in double (int64 for integers). */
#include "op.h"
#include "fixed_chunks.h"
#include "ops/reduce.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD };

typedef struct {
    int n;                         /* merged rank, >= 1 */
    int64_t dims[OAR_MAX_DIMS];
    int64_t ost[OAR_MAX_DIMS];     /* Out stride per merged axis; 0 if reduced */
    int64_t xnumel, onumel, rcount;
} plan_t;

static const char *nm(const char *s) { return s ? s : "?"; }

/* input slot `slot`, named `name` in messages */
static int in_tensor(oar_kernel_ctx_t *k, int slot, const char *name, int dtype, const oar_tensor_t **t,
                     const void **p)
{
    *t = oar_k_input(k, slot, 0);
    *p = NULL;
    if (!*t) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s '%s' has no value", name,
                                nm(oar_k_input_name(k, slot, 0)));
    if ((*t)->dtype != dtype)
        return oar_k_error(k, OAR_ERR_DTYPE, "input %s '%s' has dtype %s, expected %s", name,
                           nm(oar_k_input_name(k, slot, 0)), nm(oar_dtype_name((*t)->dtype)),
                           oar_dtype_name(dtype));
    *p = oar_tensor_data((oar_tensor_t *)*t);
    if (!*p && oar_tensor_numel_of(*t) > 0)
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s '%s' has no data", name,
                           nm(oar_k_input_name(k, slot, 0)));
    return OAR_OK;
}

/* Output data sized by run-time inference; checks it holds `numel` elements.
 * Every op here has one output, slot 0 (Out or X@GRAD, `name` in messages). */
static int out_data(oar_kernel_ctx_t *k, const char *name, int dtype, int64_t numel, void **p)
{
    *p = NULL;
    oar_tensor_t *t = oar_k_output(k, 0, 0);
    if (!t) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output %s has no tensor variable", name);
    if (oar_tensor_numel_of(t) != numel)
        return oar_k_error(k, OAR_ERR_SHAPE, "output %s '%s' has %lld elements, expected %lld",
                           name, nm(oar_k_output_name(k, 0, 0)),
                           (long long)oar_tensor_numel_of(t), (long long)numel);
    *p = oar_k_output_data(k, 0, 0, dtype);
    return *p ? OAR_OK : OAR_ERR_NOMEM;
}

static int make_plan(oar_kernel_ctx_t *k, const oar_tensor_t *x, plan_t *p)
{
    const oar_reduce_attrs_t *a = oar_k_attrs(k);
    int nd = x->ndim, n = a->dim.n;
    const int32_t *dim = a->dim.v;
    bool all = a->reduce_all, mask[OAR_MAX_DIMS];
    for (int i = 0; i < nd; i++) mask[i] = all;
    for (int i = 0; i < n && !all; i++) {
        int d = dim[i] < 0 ? dim[i] + nd : dim[i];
        if (d < 0 || d >= (nd > 0 ? nd : 1))
            return oar_k_error(k, OAR_ERR_RANGE, "attr dim[%d] = %d is out of range for input X "
                               "'%s' of rank %d", i, (int)dim[i], nm(oar_k_input_name(k, OAR_RED_X, 0)), nd);
        if (nd > 0) mask[d] = true;
    }
    bool red[OAR_MAX_DIMS];
    p->n = 0;
    p->xnumel = p->onumel = p->rcount = 1;
    for (int i = 0; i < nd; i++) {
        int64_t d = x->dims[i];
        p->xnumel *= d;
        if (mask[i]) p->rcount *= d; else p->onumel *= d;
        if (d == 1) continue;
        if (p->n > 0 && red[p->n - 1] == mask[i]) {
            p->dims[p->n - 1] *= d;
        } else {
            p->dims[p->n] = d;
            red[p->n++] = mask[i];
        }
    }
    if (p->n == 0) { p->n = 1; p->dims[0] = 1; red[0] = true; }
    int64_t s = 1;
    for (int i = p->n - 1; i >= 0; i--) {
        p->ost[i] = red[i] ? 0 : s;
        if (!red[i]) s *= p->dims[i];
    }
    return OAR_OK;
}

/* Visits X row by row along the last merged axis: e = X offset of the row,
 * off = Out offset of its first element, len/st = row length and Out stride.
 * The body is variadic so that commas inside it need no parentheses. */
#define FOR_ROWS(p, e, off, len, st, ...)                                             \
    do {                                                                               \
        int64_t idx_[OAR_MAX_DIMS] = {0}, off = 0;                                     \
        int last_ = (p)->n - 1;                                                        \
        const int64_t len = (p)->dims[last_], st = (p)->ost[last_];                    \
        for (int64_t e = 0; len > 0 && e < (p)->xnumel; e += len) {                    \
            __VA_ARGS__;                                                               \
            for (int d_ = last_ - 1; d_ >= 0; d_--) {                                  \
                off += (p)->ost[d_];                                                   \
                if (++idx_[d_] < (p)->dims[d_]) break;                                 \
                off -= (p)->ost[d_] * (p)->dims[d_];                                   \
                idx_[d_] = 0;                                                          \
            }                                                                          \
        }                                                                              \
    } while (0)

/* ---- forward ----------------------------------------------------------- */
/* T element type, A accumulator, LO/HI the identities of max/min */
#define REDUCE_FWD(sfx, T, A, DT, LO, HI)                                                   \
    static int reduce_fwd_##sfx(oar_kernel_ctx_t *k, int kind)                              \
    {                                                                                       \
        const oar_tensor_t *xt;                                                             \
        const void *xv;                                                                     \
        OAR_TRY(in_tensor(k, OAR_RED_X, "X", DT, &xt, &xv));                                \
        plan_t pl;                                                                          \
        OAR_TRY(make_plan(k, xt, &pl));                                                     \
        if ((kind == R_MAX || kind == R_MIN) && pl.rcount == 0)                             \
            return oar_k_error(k, OAR_ERR_SHAPE, "input X '%s' is empty along the reduced " \
                               "axes; its %s is undefined", nm(oar_k_input_name(k, OAR_RED_X, 0)),\
                               kind == R_MAX ? "max" : "min");                              \
        A *acc = oar_xmalloc(sizeof(A) * (size_t)(pl.onumel ? pl.onumel : 1));              \
        if (!acc) return OAR_ERR_NOMEM;                                                     \
        A init = kind == R_PROD ? (A)1 : kind == R_MAX ? (A)(LO) : kind == R_MIN ? (A)(HI) : (A)0; \
        for (int64_t o = 0; o < pl.onumel; o++) acc[o] = init;                              \
        const T *x = xv;                                                                    \
        switch (kind) {                                                                     \
        case R_SUM: case R_MEAN:                                                            \
            FOR_ROWS(&pl, e, off, len, st, {                                                \
                if (st == 0) {                                                              \
                    A s_ = 0;                                                               \
                    for (int64_t j = 0; j < len; j++) s_ += (A)x[e + j];                    \
                    acc[off] += s_;                                                         \
                } else {                                                                    \
                    for (int64_t j = 0; j < len; j++) acc[off + j * st] += (A)x[e + j];     \
                }                                                                           \
            });                                                                             \
            break;                                                                          \
        case R_PROD:                                                                        \
            FOR_ROWS(&pl, e, off, len, st,                                                  \
                     for (int64_t j = 0; j < len; j++) acc[off + j * st] *= (A)x[e + j]);   \
            break;                                                                          \
        case R_MAX: /* v != v: a NaN wins and stays */                                      \
            FOR_ROWS(&pl, e, off, len, st, for (int64_t j = 0; j < len; j++) {              \
                A v_ = (A)x[e + j];                                                         \
                if (v_ > acc[off + j * st] || v_ != v_) acc[off + j * st] = v_;             \
            });                                                                             \
            break;                                                                          \
        default:                                                                            \
            FOR_ROWS(&pl, e, off, len, st, for (int64_t j = 0; j < len; j++) {              \
                A v_ = (A)x[e + j];                                                         \
                if (v_ < acc[off + j * st] || v_ != v_) acc[off + j * st] = v_;             \
            });                                                                             \
            break;                                                                          \
        }                                                                                   \
        void *yv;                                                                           \
        int rc = out_data(k, "Out", DT, pl.onumel, &yv);                                    \
        if (rc == OAR_OK) {                                                                 \
            T *y = yv;                                                                      \
            if (kind == R_MEAN) {                                                           \
                double inv = 1.0 / (double)pl.rcount;                                       \
                for (int64_t o = 0; o < pl.onumel; o++) y[o] = (T)((double)acc[o] * inv);   \
            } else {                                                                        \
                for (int64_t o = 0; o < pl.onumel; o++) y[o] = (T)acc[o];                   \
            }                                                                               \
        }                                                                                   \
        free(acc);                                                                          \
        return rc;                                                                          \
    }

REDUCE_FWD(f32, float, double, OAR_FP32, -INFINITY, INFINITY)
REDUCE_FWD(f64, double, double, OAR_FP64, -INFINITY, INFINITY)
REDUCE_FWD(i32, int32_t, int64_t, OAR_INT32, INT32_MIN, INT32_MAX)
REDUCE_FWD(i64, int64_t, int64_t, OAR_INT64, INT64_MIN, INT64_MAX)

#define FWD_REG(op, kind, sfx, DT) \
    static int op##_##sfx(oar_kernel_ctx_t *k) { return reduce_fwd_##sfx(k, kind); } \
    OAR_REGISTER_KERNEL(#op, OAR_PLACE_CPU, DT, op##_##sfx)
#define FWD_REG_ALL(op, kind) \
    FWD_REG(op, kind, f32, OAR_FP32) FWD_REG(op, kind, f64, OAR_FP64) \
    FWD_REG(op, kind, i32, OAR_INT32) FWD_REG(op, kind, i64, OAR_INT64)

FWD_REG_ALL(reduce_sum, R_SUM)
FWD_REG_ALL(reduce_max, R_MAX)
FWD_REG_ALL(reduce_min, R_MIN)
FWD_REG_ALL(reduce_prod, R_PROD)
FWD_REG(reduce_mean, R_MEAN, f32, OAR_FP32)
FWD_REG(reduce_mean, R_MEAN, f64, OAR_FP64)

/* ---- backward ---------------------------------------------------------- */
#define REDUCE_BWD(sfx, T, DT)                                                              \
    static int reduce_bwd_##sfx(oar_kernel_ctx_t *k, int kind)                              \
    {                                                                                       \
        const oar_tensor_t *xt, *gt, *ot = NULL;                                            \
        const void *xv, *gv, *ov = NULL;                                                    \
        OAR_TRY(in_tensor(k, OAR_REDG_X, "X", DT, &xt, &xv));                               \
        OAR_TRY(in_tensor(k, OAR_REDG_DOUT, "Out@GRAD", DT, &gt, &gv));                     \
        plan_t pl;                                                                          \
        OAR_TRY(make_plan(k, xt, &pl));                                                     \
        if (oar_tensor_numel_of(gt) != pl.onumel)                                           \
            return oar_k_error(k, OAR_ERR_SHAPE, "input Out@GRAD '%s' has %lld elements, "  \
                               "expected %lld (the reduced shape of X '%s')",               \
                               nm(oar_k_input_name(k, OAR_REDG_DOUT, 0)),                   \
                               (long long)oar_tensor_numel_of(gt), (long long)pl.onumel,    \
                               nm(oar_k_input_name(k, OAR_REDG_X, 0)));                     \
        if (kind == R_MAX || kind == R_MIN) {                                               \
            OAR_TRY(in_tensor(k, OAR_REDG_OUT, "Out", DT, &ot, &ov));                       \
            if (oar_tensor_numel_of(ot) != pl.onumel)                                       \
                return oar_k_error(k, OAR_ERR_SHAPE, "input Out '%s' has %lld elements, "   \
                                   "expected %lld", nm(oar_k_input_name(k, OAR_REDG_OUT, 0)), \
                                   (long long)oar_tensor_numel_of(ot), (long long)pl.onumel); \
        }                                                                                   \
        const T *x = xv, *g = gv, *out = ov;                                                \
        void *dv;                                                                           \
        int64_t *zc = NULL;                                                                 \
        double *nz = NULL;                                                                  \
        if (kind == R_PROD) {                                                               \
            /* product of the others: exact with zeros, no division by them */             \
            zc = oar_xcalloc((size_t)(pl.onumel ? pl.onumel : 1), sizeof *zc);              \
            nz = zc ? oar_xmalloc(sizeof *nz * (size_t)(pl.onumel ? pl.onumel : 1)) : NULL; \
            if (!nz) { free(zc); return OAR_ERR_NOMEM; }                                    \
            for (int64_t o = 0; o < pl.onumel; o++) nz[o] = 1.0;                            \
            FOR_ROWS(&pl, e, off, len, st, for (int64_t j = 0; j < len; j++) {              \
                double v_ = (double)x[e + j];                                               \
                if (v_ == 0.0) zc[off + j * st]++; else nz[off + j * st] *= v_;             \
            });                                                                             \
        }                                                                                   \
        int rc = out_data(k, "X@GRAD", DT, pl.xnumel, &dv);                                 \
        if (rc == OAR_OK) {                                                                 \
            T *dx = dv;                                                                     \
            switch (kind) {                                                                 \
            case R_SUM: case R_MEAN: {                                                      \
                double sc = kind == R_MEAN ? 1.0 / (double)pl.rcount : 1.0;                 \
                FOR_ROWS(&pl, e, off, len, st, for (int64_t j = 0; j < len; j++)            \
                         dx[e + j] = (T)((double)g[off + j * st] * sc));                    \
                break;                                                                      \
            }                                                                               \
            case R_MAX: case R_MIN:                                                         \
                FOR_ROWS(&pl, e, off, len, st, for (int64_t j = 0; j < len; j++)            \
                         dx[e + j] = x[e + j] == out[off + j * st] ? g[off + j * st] : (T)0); \
                break;                                                                      \
            default:                                                                        \
                FOR_ROWS(&pl, e, off, len, st, for (int64_t j = 0; j < len; j++) {          \
                    int64_t o_ = off + j * st;                                              \
                    double v_ = (double)x[e + j], d_;                                       \
                    if (zc[o_] == 0) d_ = nz[o_] / v_;                                      \
                    else d_ = zc[o_] == 1 && v_ == 0.0 ? nz[o_] : 0.0;                      \
                    dx[e + j] = (T)((double)g[o_] * d_);                                    \
                });                                                                         \
                break;                                                                      \
            }                                                                               \
        }                                                                                   \
        free(zc);                                                                           \
        free(nz);                                                                           \
        return rc;                                                                          \
    }

REDUCE_BWD(f32, float, OAR_FP32)
REDUCE_BWD(f64, double, OAR_FP64)

#define BWD_REG(op, kind) \
    static int op##_grad_f32(oar_kernel_ctx_t *k) { return reduce_bwd_f32(k, kind); } \
    static int op##_grad_f64(oar_kernel_ctx_t *k) { return reduce_bwd_f64(k, kind); } \
    OAR_REGISTER_KERNEL(#op "_grad", OAR_PLACE_CPU, OAR_FP32, op##_grad_f32) \
    OAR_REGISTER_KERNEL(#op "_grad", OAR_PLACE_CPU, OAR_FP64, op##_grad_f64)

BWD_REG(reduce_sum, R_SUM)
BWD_REG(reduce_mean, R_MEAN)
BWD_REG(reduce_max, R_MAX)
BWD_REG(reduce_min, R_MIN)
BWD_REG(reduce_prod, R_PROD)

/* ---- mean (of every element, Out [1]) ------------------------------------ */
#define MEAN_KERNELS(sfx, T, DT)                                                            \
    static int mean_##sfx(oar_kernel_ctx_t *k)                                              \
    {                                                                                       \
        const oar_tensor_t *xt;                                                             \
        const void *xv;                                                                     \
        OAR_TRY(in_tensor(k, OAR_RED_X, "X", DT, &xt, &xv));                                \
        int64_t n = oar_tensor_numel_of(xt);                                                \
        if (n == 0)                                                                         \
            return oar_k_error(k, OAR_ERR_SHAPE, "input X '%s' is empty; its mean is "      \
                               "undefined", nm(oar_k_input_name(k, OAR_RED_X, 0)));         \
        const T *x = xv;                                                                    \
        /* fixed chunks (fixed_chunks.h): the same sum on any thread count */             \
        const int nch = oar_chunk_count(n, n > 65536);                                      \
        double part[OAR_CHUNKS], s = 0;                                                     \
        _Pragma("omp parallel for schedule(static) if(nch > 1)")                            \
        for (int c = 0; c < nch; c++) {                                                     \
            int64_t lo, hi;                                                                 \
            oar_chunk_range(n, nch, c, &lo, &hi);                                           \
            double t = 0;                                                                   \
            for (int64_t i = lo; i < hi; i++) t += (double)x[i];                            \
            part[c] = t;                                                                    \
        }                                                                                   \
        for (int c = 0; c < nch; c++) s += part[c];                                         \
        void *yv;                                                                           \
        OAR_TRY(out_data(k, "Out", DT, 1, &yv));                                            \
        *(T *)yv = (T)(s / (double)n);                                                      \
        return OAR_OK;                                                                      \
    }                                                                                       \
    OAR_REGISTER_KERNEL("mean", OAR_PLACE_CPU, DT, mean_##sfx)                              \
    static int mean_grad_##sfx(oar_kernel_ctx_t *k)                                         \
    {                                                                                       \
        const oar_tensor_t *xt, *gt;                                                        \
        const void *xv, *gv;                                                                \
        OAR_TRY(in_tensor(k, OAR_MEANG_X, "X", DT, &xt, &xv));                              \
        OAR_TRY(in_tensor(k, OAR_MEANG_DOUT, "Out@GRAD", DT, &gt, &gv));                    \
        if (oar_tensor_numel_of(gt) != 1)                                                   \
            return oar_k_error(k, OAR_ERR_SHAPE, "input Out@GRAD '%s' has %lld elements, "  \
                               "expected 1", nm(oar_k_input_name(k, OAR_MEANG_DOUT, 0)),    \
                               (long long)oar_tensor_numel_of(gt));                         \
        int64_t n = oar_tensor_numel_of(xt);                                                \
        T v = (T)((double)*(const T *)gv / (double)(n ? n : 1));                            \
        void *dv;                                                                           \
        OAR_TRY(out_data(k, "X@GRAD", DT, n, &dv));                                         \
        T *dx = dv;                                                                         \
        _Pragma("omp parallel for if(n > 65536)")                                           \
        for (int64_t i = 0; i < n; i++) dx[i] = v;                                          \
        return OAR_OK;                                                                      \
    }                                                                                       \
    OAR_REGISTER_KERNEL("mean_grad", OAR_PLACE_CPU, DT, mean_grad_##sfx)

MEAN_KERNELS(f32, float, OAR_FP32)
MEAN_KERNELS(f64, double, OAR_FP64)
