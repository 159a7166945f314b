/*
 * softmax.c — CPU kernels of softmax, log_softmax and their grads.
 *
 * The tensor is viewed as [pre, n, post] around `axis`. With post == 1 (the
 * last axis, the usual case) each row is contiguous and rows run in
 * parallel; otherwise each [n, post] block is swept row by row with per-column
 * running values so the inner loops stay contiguous. The maximum is
 * subtracted before exponentiating, so no input overflows.
 */
#include <stdlib.h>
#include <tgmath.h>
#include <string.h>
#include "op.h"
#include "bcast_run.h"
#include "ops/softmax.h"

typedef struct sm_view { int64_t pre, n, post; } sm_view_t;

static int sm_view(oar_kernel_ctx_t *k, const oar_tensor_t *t, sm_view_t *v)
{
    const int axis0 = ((const oar_softmax_attrs_t *)oar_k_attrs(k))->axis;
    int axis = axis0, r = t->ndim;
    if (axis < 0) axis += r;
    if (r == 0 || axis < 0 || axis >= r) {
        char b[128];
        return oar_k_error(k, OAR_ERR_INVALID, "axis %d out of range for shape %s",
                           axis0, oar_shape_str(t->dims, t->ndim, b, sizeof b));
    }
    v->pre = 1; v->post = 1; v->n = t->dims[axis];
    for (int i = 0; i < axis; i++) v->pre *= t->dims[i];
    for (int i = axis + 1; i < r; i++) v->post *= t->dims[i];
    return OAR_OK;
}

/* input slot `slot` (named `name` in messages) */
static const void *in_data(oar_kernel_ctx_t *k, int slot, const char *name, oar_tensor_t **t, int *rc)
{
    *rc = OAR_OK;
    *t = oar_k_input(k, slot, 0);
    if (!*t) { *rc = oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s is missing", name); return NULL; }
    if (oar_tensor_numel_of(*t) > 0 && !oar_tensor_has_data(*t))
        *rc = oar_k_error(k, OAR_ERR_INVALID, "input %s ('%s') holds no data", name, oar_k_input_name(k, slot, 0));
    return oar_tensor_data(*t);
}

/* LOG selects log_softmax. Forward rows [lo, hi) of the post == 1 case, then
 * the strided [n, post] blocks using m (max) and s (sum) of post each. */
#define SM_FWD(NAME, T, LOG)                                                          \
    static void NAME##_rows(const T *x, T *o, int64_t n, int64_t lo, int64_t hi)      \
    {                                                                                 \
        for (int64_t r = lo; r < hi; r++) {                                           \
            const T *xr = x + r * n;                                                  \
            T *orow = o + r * n;                                                      \
            T m = xr[0], s = 0;                                                       \
            for (int64_t j = 1; j < n; j++) m = xr[j] > m ? xr[j] : m;                \
            if (LOG) {                                                                \
                for (int64_t j = 0; j < n; j++) s += exp(xr[j] - m);                  \
                T ls = m + log(s);                                                    \
                for (int64_t j = 0; j < n; j++) orow[j] = xr[j] - ls;                 \
            } else {                                                                  \
                for (int64_t j = 0; j < n; j++) { T e = exp(xr[j] - m); orow[j] = e; s += e; } \
                T inv = (T)1 / s;                                                     \
                for (int64_t j = 0; j < n; j++) orow[j] *= inv;                       \
            }                                                                         \
        }                                                                             \
    }                                                                                 \
    static void NAME##_blocks(const T *x, T *o, const sm_view_t *v, T *m, T *s)       \
    {                                                                                 \
        const int64_t n = v->n, post = v->post;                                       \
        for (int64_t p = 0; p < v->pre; p++) {                                        \
            const T *xb = x + p * n * post;                                           \
            T *ob = o + p * n * post;                                                 \
            memcpy(m, xb, (size_t)post * sizeof(T));                                  \
            for (int64_t j = 1; j < n; j++)                                           \
                for (int64_t i = 0; i < post; i++) m[i] = xb[j * post + i] > m[i] ? xb[j * post + i] : m[i]; \
            memset(s, 0, (size_t)post * sizeof(T));                                   \
            for (int64_t j = 0; j < n; j++)                                           \
                for (int64_t i = 0; i < post; i++) {                                  \
                    T e = exp(xb[j * post + i] - m[i]);                               \
                    s[i] += e;                                                        \
                    if (!LOG) ob[j * post + i] = e;                                   \
                }                                                                     \
            for (int64_t i = 0; i < post; i++) s[i] = LOG ? m[i] + log(s[i]) : (T)1 / s[i]; \
            for (int64_t j = 0; j < n; j++)                                           \
                for (int64_t i = 0; i < post; i++)                                    \
                    ob[j * post + i] = LOG ? xb[j * post + i] - s[i] : ob[j * post + i] * s[i]; \
        }                                                                             \
    }

/* Grads from Out and G = dOut; with S the sum of G*Out (softmax) or of G
 * (log_softmax) along the axis:
 *   softmax:      dX = Out * (G - S)
 *   log_softmax:  dX = G - exp(Out) * S */
#define SM_BWD(NAME, T, LOG)                                                          \
    static void NAME##_grows(const T *o, const T *g, T *d, int64_t n, int64_t lo, int64_t hi) \
    {                                                                                 \
        for (int64_t r = lo; r < hi; r++) {                                           \
            const T *orow = o + r * n, *grow = g + r * n;                             \
            T *drow = d + r * n;                                                      \
            T s = 0;                                                                  \
            if (LOG) {                                                                \
                for (int64_t j = 0; j < n; j++) s += grow[j];                         \
                for (int64_t j = 0; j < n; j++) drow[j] = grow[j] - exp(orow[j]) * s; \
            } else {                                                                  \
                for (int64_t j = 0; j < n; j++) s += grow[j] * orow[j];               \
                for (int64_t j = 0; j < n; j++) drow[j] = orow[j] * (grow[j] - s);    \
            }                                                                         \
        }                                                                             \
    }                                                                                 \
    static void NAME##_gblocks(const T *o, const T *g, T *d, const sm_view_t *v, T *s) \
    {                                                                                 \
        const int64_t n = v->n, post = v->post;                                       \
        for (int64_t p = 0; p < v->pre; p++) {                                        \
            const int64_t base = p * n * post;                                        \
            memset(s, 0, (size_t)post * sizeof(T));                                   \
            for (int64_t j = 0; j < n; j++)                                           \
                for (int64_t i = 0; i < post; i++) {                                  \
                    int64_t q = base + j * post + i;                                  \
                    s[i] += LOG ? g[q] : g[q] * o[q];                                 \
                }                                                                     \
            for (int64_t j = 0; j < n; j++)                                           \
                for (int64_t i = 0; i < post; i++) {                                  \
                    int64_t q = base + j * post + i;                                  \
                    d[q] = LOG ? g[q] - exp(o[q]) * s[i] : o[q] * (g[q] - s[i]);      \
                }                                                                     \
        }                                                                             \
    }

SM_FWD(softmax_f32, float, 0)
SM_FWD(softmax_f64, double, 0)
SM_FWD(log_softmax_f32, float, 1)
SM_FWD(log_softmax_f64, double, 1)
SM_BWD(softmax_f32, float, 0)
SM_BWD(softmax_f64, double, 0)
SM_BWD(log_softmax_f32, float, 1)
SM_BWD(log_softmax_f64, double, 1)

#define SM_KERNELS(NAME, OPNAME, T, DT)                                               \
    static int NAME##_fwd(oar_kernel_ctx_t *k)                                        \
    {                                                                                 \
        oar_tensor_t *xt;                                                             \
        int rc;                                                                       \
        const T *x = in_data(k, OAR_SM_X, "X", &xt, &rc);                             \
        if (rc) return rc;                                                            \
        sm_view_t v;                                                                  \
        OAR_TRY(sm_view(k, xt, &v));                                                  \
        T *o = oar_k_output_data(k, OAR_SM_OUT, 0, DT);                               \
        if (!o) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate Out");          \
        int64_t total = v.pre * v.n * v.post;                                         \
        if (total == 0) return OAR_OK;                                                \
        if (v.post == 1) {                                                            \
            if (total > OAR_PAR_THRESHOLD && v.pre > 1) {                             \
                _Pragma("omp parallel")                                               \
                {                                                                     \
                    int64_t lo, hi;                                                   \
                    oar_omp_range(v.pre, &lo, &hi);                                   \
                    NAME##_rows(x, o, v.n, lo, hi);                                   \
                }                                                                     \
            } else {                                                                  \
                NAME##_rows(x, o, v.n, 0, v.pre);                                     \
            }                                                                         \
            return OAR_OK;                                                            \
        }                                                                             \
        T *tmp = oar_xmalloc(2 * (size_t)v.post * sizeof(T));                         \
        if (!tmp) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate %lld temporaries", (long long)v.post); \
        NAME##_blocks(x, o, &v, tmp, tmp + v.post);                                   \
        free(tmp);                                                                    \
        return OAR_OK;                                                                \
    }                                                                                 \
    static int NAME##_bwd(oar_kernel_ctx_t *k)                                        \
    {                                                                                 \
        if (!oar_k_output(k, OAR_SMG_DX, 0)) return OAR_OK;                           \
        oar_tensor_t *ot, *gt;                                                        \
        int rc;                                                                       \
        const T *o = in_data(k, OAR_SMG_OUT, "Out", &ot, &rc);                        \
        if (rc) return rc;                                                            \
        const T *g = in_data(k, OAR_SMG_DOUT, "Out@GRAD", &gt, &rc);                  \
        if (rc) return rc;                                                            \
        if (oar_tensor_numel_of(ot) != oar_tensor_numel_of(gt) || gt->dtype != ot->dtype) { \
            char b1[128], b2[128];                                                    \
            return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD shape %s (%s) differs from Out shape %s (%s)", \
                               oar_shape_str(gt->dims, gt->ndim, b1, sizeof b1), oar_dtype_name(gt->dtype), \
                               oar_shape_str(ot->dims, ot->ndim, b2, sizeof b2), oar_dtype_name(ot->dtype)); \
        }                                                                             \
        sm_view_t v;                                                                  \
        OAR_TRY(sm_view(k, ot, &v));                                                  \
        T *d = oar_k_output_data(k, OAR_SMG_DX, 0, DT);                               \
        if (!d) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate X@GRAD");       \
        int64_t total = v.pre * v.n * v.post;                                         \
        if (total == 0) return OAR_OK;                                                \
        if (v.post == 1) {                                                            \
            if (total > OAR_PAR_THRESHOLD && v.pre > 1) {                             \
                _Pragma("omp parallel")                                               \
                {                                                                     \
                    int64_t lo, hi;                                                   \
                    oar_omp_range(v.pre, &lo, &hi);                                   \
                    NAME##_grows(o, g, d, v.n, lo, hi);                               \
                }                                                                     \
            } else {                                                                  \
                NAME##_grows(o, g, d, v.n, 0, v.pre);                                 \
            }                                                                         \
            return OAR_OK;                                                            \
        }                                                                             \
        T *tmp = oar_xmalloc((size_t)v.post * sizeof(T));                             \
        if (!tmp) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate %lld temporaries", (long long)v.post); \
        NAME##_gblocks(o, g, d, &v, tmp);                                             \
        free(tmp);                                                                    \
        return OAR_OK;                                                                \
    }                                                                                 \
    OAR_REGISTER_KERNEL(OPNAME, OAR_PLACE_CPU, DT, NAME##_fwd)                        \
    OAR_REGISTER_KERNEL(OPNAME "_grad", OAR_PLACE_CPU, DT, NAME##_bwd)

SM_KERNELS(softmax_f32, "softmax", float, OAR_FP32)
SM_KERNELS(softmax_f64, "softmax", double, OAR_FP64)
SM_KERNELS(log_softmax_f32, "log_softmax", float, OAR_FP32)
SM_KERNELS(log_softmax_f64, "log_softmax", double, OAR_FP64)
