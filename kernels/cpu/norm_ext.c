/*
 * norm_ext.c — CPU kernels of instance_norm / group_norm (one code path: a
 * group is C / groups consecutive channels, instance_norm has C groups) and
 * p_norm, float32/float64, with their grads. Statistics accumulate in
 * double; the grads recompute them from X.
 */
#include <math.h>
#include <string.h>
#include "op.h"
#include "ops/norm_ext.h"

typedef struct { int64_t n, c, s, g, cpg; } gshape_t;

static int gshape(oar_kernel_ctx_t *k, const oar_tensor_t *x, gshape_t *q)
{
    const oar_gn_attrs_t *a = oar_k_attrs(k);
    if (x->ndim < 2) return oar_k_error(k, OAR_ERR_SHAPE, "X must have at least 2 dims");
    q->n = x->dims[0];
    q->c = x->dims[1];
    q->s = 1;
    for (int i = 2; i < x->ndim; i++) q->s *= x->dims[i];
    q->g = a->instance ? q->c : a->groups;
    if (q->g < 1 || q->c % q->g != 0)
        return oar_k_error(k, OAR_ERR_SHAPE, "%lld channels do not split into %lld groups", (long long)q->c,
                           (long long)q->g);
    q->cpg = q->c / q->g;
    return OAR_OK;
}

#define NORM_KERNELS(T, SUF, DT)                                                                \
    static void stats_##SUF(const T *x, int64_t m, double eps, double *mean, double *var, double *inv) \
    {                                                                                           \
        double s = 0, s2 = 0;                                                                   \
        for (int64_t i = 0; i < m; i++) s += x[i];                                              \
        *mean = m > 0 ? s / (double)m : 0;                                                      \
        for (int64_t i = 0; i < m; i++) { double d = x[i] - *mean; s2 += d * d; }               \
        *var = m > 0 ? s2 / (double)m : 0;                                                      \
        *inv = 1.0 / sqrt(*var + eps);                                                          \
    }                                                                                           \
    static int gn_fwd_##SUF(oar_kernel_ctx_t *k)                                                \
    {                                                                                           \
        const oar_gn_attrs_t *a = oar_k_attrs(k);                                               \
        oar_tensor_t *xt = oar_k_input(k, OAR_GN_X, 0);                                         \
        oar_tensor_t *st = oar_k_input(k, OAR_GN_SCALE, 0), *bt = oar_k_input(k, OAR_GN_BIAS, 0); \
        gshape_t q;                                                                             \
        OAR_TRY(gshape(k, xt, &q));                                                             \
        T *y = oar_k_output_data(k, OAR_GN_Y, 0, DT);                                           \
        T *mo = oar_k_output(k, OAR_GN_MEAN, 0) ? oar_k_output_data(k, OAR_GN_MEAN, 0, DT) : NULL; \
        T *vo = oar_k_output(k, OAR_GN_VAR, 0) ? oar_k_output_data(k, OAR_GN_VAR, 0, DT) : NULL;  \
        if (!y) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate Y");                      \
        const T *x = oar_tensor_data(xt);                                                       \
        const T *sc = st ? oar_tensor_data(st) : NULL, *bi = bt ? oar_tensor_data(bt) : NULL;   \
        const int64_t m = q.cpg * q.s;                                                          \
        for (int64_t n = 0; n < q.n; n++)                                                       \
            for (int64_t g = 0; g < q.g; g++) {                                                 \
                const int64_t base = (n * q.c + g * q.cpg) * q.s;                               \
                double mean, var, inv;                                                          \
                stats_##SUF(x + base, m, a->epsilon, &mean, &var, &inv);                        \
                if (mo) mo[n * q.g + g] = (T)mean;                                              \
                if (vo) vo[n * q.g + g] = (T)(a->instance ? inv : var);                         \
                for (int64_t cc = 0; cc < q.cpg; cc++) {                                        \
                    const int64_t ch = g * q.cpg + cc;                                          \
                    const double s = sc ? sc[ch] : 1.0, b = bi ? bi[ch] : 0.0;                  \
                    for (int64_t i = 0; i < q.s; i++) {                                         \
                        const int64_t at = base + cc * q.s + i;                                 \
                        y[at] = (T)((x[at] - mean) * inv * s + b);                              \
                    }                                                                           \
                }                                                                               \
            }                                                                                   \
        return OAR_OK;                                                                          \
    }                                                                                           \
    static int gn_bwd_##SUF(oar_kernel_ctx_t *k)                                                \
    {                                                                                           \
        const oar_gn_attrs_t *a = oar_k_attrs(k);                                               \
        oar_tensor_t *xt = oar_k_input(k, OAR_GN_X, 0), *st = oar_k_input(k, OAR_GN_SCALE, 0);  \
        oar_tensor_t *gt = oar_k_input(k, OAR_GNG_DY, 0);                                       \
        gshape_t q;                                                                             \
        OAR_TRY(gshape(k, xt, &q));                                                             \
        if (oar_tensor_numel_of(gt) != oar_tensor_numel_of(xt))                                 \
            return oar_k_error(k, OAR_ERR_SHAPE, "Y@GRAD does not have X's size");              \
        T *dx = oar_k_output(k, OAR_GNG_DX, 0) ? oar_k_output_data(k, OAR_GNG_DX, 0, DT) : NULL;  \
        T *ds = oar_k_output(k, OAR_GNG_DSCALE, 0) ? oar_k_output_data(k, OAR_GNG_DSCALE, 0, DT) : NULL; \
        T *db = oar_k_output(k, OAR_GNG_DBIAS, 0) ? oar_k_output_data(k, OAR_GNG_DBIAS, 0, DT) : NULL; \
        const T *x = oar_tensor_data(xt), *dy = oar_tensor_data(gt);                            \
        const T *sc = st ? oar_tensor_data(st) : NULL;                                          \
        if (ds) memset(ds, 0, sizeof(T) * (size_t)q.c);                                         \
        if (db) memset(db, 0, sizeof(T) * (size_t)q.c);                                         \
        const int64_t m = q.cpg * q.s;                                                          \
        for (int64_t n = 0; n < q.n; n++)                                                       \
            for (int64_t g = 0; g < q.g; g++) {                                                 \
                const int64_t base = (n * q.c + g * q.cpg) * q.s;                               \
                double mean, var, inv, s1 = 0, s2 = 0;                                          \
                stats_##SUF(x + base, m, a->epsilon, &mean, &var, &inv);                        \
                for (int64_t cc = 0; cc < q.cpg; cc++) {                                        \
                    const int64_t ch = g * q.cpg + cc;                                          \
                    const double s = sc ? sc[ch] : 1.0;                                         \
                    double dsum = 0, bsum = 0;                                                  \
                    for (int64_t i = 0; i < q.s; i++) {                                         \
                        const int64_t at = base + cc * q.s + i;                                 \
                        const double xh = (x[at] - mean) * inv;                                 \
                        s1 += dy[at] * s;                                                       \
                        s2 += dy[at] * s * xh;                                                  \
                        dsum += dy[at] * xh;                                                    \
                        bsum += dy[at];                                                         \
                    }                                                                           \
                    if (ds) ds[ch] += (T)dsum;                                                  \
                    if (db) db[ch] += (T)bsum;                                                  \
                }                                                                               \
                if (!dx) continue;                                                              \
                for (int64_t cc = 0; cc < q.cpg; cc++) {                                        \
                    const double s = sc ? sc[g * q.cpg + cc] : 1.0;                             \
                    for (int64_t i = 0; i < q.s; i++) {                                         \
                        const int64_t at = base + cc * q.s + i;                                 \
                        const double xh = (x[at] - mean) * inv;                                 \
                        dx[at] = (T)(inv / (double)m * ((double)m * dy[at] * s - s1 - xh * s2)); \
                    }                                                                           \
                }                                                                               \
            }                                                                                   \
        return OAR_OK;                                                                          \
    }                                                                                           \
    static int in_fwd_##SUF(oar_kernel_ctx_t *k) { return gn_fwd_##SUF(k); }                    \
    static int in_bwd_##SUF(oar_kernel_ctx_t *k) { return gn_bwd_##SUF(k); }                    \
    OAR_REGISTER_KERNEL("group_norm", OAR_PLACE_CPU, DT, gn_fwd_##SUF)                          \
    OAR_REGISTER_KERNEL("group_norm_grad", OAR_PLACE_CPU, DT, gn_bwd_##SUF)                     \
    OAR_REGISTER_KERNEL("instance_norm", OAR_PLACE_CPU, DT, in_fwd_##SUF)                       \
    OAR_REGISTER_KERNEL("instance_norm_grad", OAR_PLACE_CPU, DT, in_bwd_##SUF)

NORM_KERNELS(float, f32, OAR_FP32)
NORM_KERNELS(double, f64, OAR_FP64)

/* ---- p_norm ---------------------------------------------------------------- */
static void pn_split(const oar_pnorm_attrs_t *a, const oar_tensor_t *x, int64_t *outer, int64_t *mid, int64_t *inner)
{
    *outer = *inner = 1;
    *mid = oar_tensor_numel_of(x);
    if (a->asvector || x->ndim == 0) return;
    int ax = a->axis < 0 ? a->axis + x->ndim : a->axis;
    *mid = x->dims[ax];
    for (int i = 0; i < ax; i++) *outer *= x->dims[i];
    for (int i = ax + 1; i < x->ndim; i++) *inner *= x->dims[i];
}

static double sgn(double v) { return (v > 0) - (v < 0); }

#define PNORM_KERNELS(T, SUF, DT)                                                               \
    static int pn_fwd_##SUF(oar_kernel_ctx_t *k)                                                \
    {                                                                                           \
        const oar_pnorm_attrs_t *a = oar_k_attrs(k);                                            \
        oar_tensor_t *xt = oar_k_input(k, OAR_PN_X, 0);                                         \
        T *o = oar_k_output_data(k, OAR_PN_OUT, 0, DT);                                         \
        if (!o) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate Out");                    \
        int64_t outer, mid, inner;                                                              \
        pn_split(a, xt, &outer, &mid, &inner);                                                  \
        const T *x = oar_tensor_data(xt);                                                       \
        const double p = a->porder;                                                             \
        for (int64_t u = 0; u < outer; u++)                                                     \
            for (int64_t v = 0; v < inner; v++) {                                               \
                double r = isinf(p) && p < 0 ? INFINITY : 0;                                    \
                for (int64_t i = 0; i < mid; i++) {                                             \
                    double e = fabs((double)x[(u * mid + i) * inner + v]);                      \
                    if (p == 0) r += e != 0;                                                    \
                    else if (isinf(p)) r = p > 0 ? (e > r ? e : r) : (e < r ? e : r);           \
                    else r += pow(e, p);                                                        \
                }                                                                               \
                if (p != 0 && !isinf(p)) r = pow(r, 1.0 / p);                                   \
                o[u * inner + v] = (T)r;                                                        \
            }                                                                                   \
        return OAR_OK;                                                                          \
    }                                                                                           \
    static int pn_bwd_##SUF(oar_kernel_ctx_t *k)                                                \
    {                                                                                           \
        if (!oar_k_output(k, 0, 0)) return OAR_OK;                                              \
        const oar_pnorm_attrs_t *a = oar_k_attrs(k);                                            \
        oar_tensor_t *xt = oar_k_input(k, OAR_PN_X, 0), *nt = oar_k_input(k, OAR_PNG_OUT, 0);   \
        oar_tensor_t *gt = oar_k_input(k, OAR_PNG_DOUT, 0);                                     \
        int64_t outer, mid, inner;                                                              \
        pn_split(a, xt, &outer, &mid, &inner);                                                  \
        if (oar_tensor_numel_of(nt) != outer * inner || oar_tensor_numel_of(gt) != outer * inner) \
            return oar_k_error(k, OAR_ERR_SHAPE, "Out / Out@GRAD do not have the norm's size"); \
        T *dx = oar_k_output_data(k, 0, 0, DT);                                                 \
        if (!dx) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate X@GRAD");                \
        const T *x = oar_tensor_data(xt), *nv = oar_tensor_data(nt), *g = oar_tensor_data(gt);  \
        const double p = a->porder, eps = a->epsilon;                                           \
        for (int64_t u = 0; u < outer; u++)                                                     \
            for (int64_t v = 0; v < inner; v++) {                                               \
                const double nrm = nv[u * inner + v], dy = g[u * inner + v];                    \
                for (int64_t i = 0; i < mid; i++) {                                             \
                    const int64_t at = (u * mid + i) * inner + v;                               \
                    const double xv = x[at], e = fabs(xv);                                      \
                    double d;                                                                   \
                    if (p == 0) d = 0;                                                          \
                    else if (isinf(p)) d = e == nrm ? sgn(xv) * dy : 0;                         \
                    /* Paddle: |x|^(p-1) sign(x) dy (norm + eps)^(1-p) */                       \
                    else d = pow(e, p - 1) * sgn(xv) * dy * pow(nrm + eps, 1 - p);              \
                    dx[at] = (T)d;                                                              \
                }                                                                               \
            }                                                                                   \
        return OAR_OK;                                                                          \
    }                                                                                           \
    OAR_REGISTER_KERNEL("p_norm", OAR_PLACE_CPU, DT, pn_fwd_##SUF)                              \
    OAR_REGISTER_KERNEL("p_norm_grad", OAR_PLACE_CPU, DT, pn_bwd_##SUF)

PNORM_KERNELS(float, f32, OAR_FP32)
PNORM_KERNELS(double, f64, OAR_FP64)
