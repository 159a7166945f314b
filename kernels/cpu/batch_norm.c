/* batch_norm.c — CPU kernels of batch_norm and batch_norm_grad.
 *
 * X is viewed as [N, C, S] (NCHW: S = product of the trailing dims) or
 * [N*S, C] (NHWC). Per-channel statistics accumulate in double for both
 * dtypes; the elementwise passes are y = a_c * (x - mean_c) + b_c and
 * dx = A_c * dy + B_c * (x - mean_c) + D_c with per-channel coefficients.
 * The typed part is written once below the #else and instantiated for float
 * and double by including this file into itself. */
#ifndef OAR_BN_T
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "op.h"
#include "norm_common.h"
#include "ops/batch_norm.h"
#include "ops/window.h"

typedef struct bn_view { int64_t n, c, s; bool nhwc; } bn_view_t;

#define BN_PAR_MIN (1 << 15)

#define OAR_BN_T float
#define OAR_BN_SUF f32
#include "batch_norm.c"
#undef OAR_BN_T
#undef OAR_BN_SUF
#define OAR_BN_T double
#define OAR_BN_SUF f64
#include "batch_norm.c"
#undef OAR_BN_T
#undef OAR_BN_SUF

static void load_vec(int dt, const void *p, int64_t n, double *out) {
    if (dt == OAR_FP32) for (int64_t i = 0; i < n; i++) out[i] = ((const float *)p)[i];
    else memcpy(out, p, (size_t)n * sizeof(double));
}

static void store_vec(int dt, const double *in, int64_t n, void *p) {
    if (dt == OAR_FP32) for (int64_t i = 0; i < n; i++) ((float *)p)[i] = (float)in[i];
    else memcpy(p, in, (size_t)n * sizeof(double));
}

static int bn_view(oar_kernel_ctx_t *k, const oar_tensor_t *x, int dt, bn_view_t *v) {
    OAR_TRY(oar_norm_check_dtype(k, x, dt));
    v->nhwc = ((const oar_bn_attrs_t *)oar_k_attrs(k))->layout == OAR_BN_NHWC;
    oar_bn_geom_t g;   /* the view bn_infer checks the [C] vectors with (window.h) */
    if (!oar_win_bn_geom(x->dims, x->ndim, v->nhwc, &g)) {
        char xs[128];
        return oar_k_error(k, OAR_ERR_SHAPE, "X '%s' must have 2 to 5 dims, got %s", oar_k_input_name(k, OAR_BN_X, 0),
                           oar_shape_str(x->dims, x->ndim, xs, sizeof xs));
    }
    v->n = g.n; v->c = g.c; v->s = g.s;
    return OAR_OK;
}

/* input `slot` (`name` in errors) as a [C] vector of dtype dt, or NULL with an error */
static const void *vec_in(oar_kernel_ctx_t *k, int slot, const char *name, int64_t c, int dt) {
    const oar_tensor_t *t = oar_k_input(k, slot, 0);
    if (!oar_tensor_has_data(t)) {
        oar_k_error(k, OAR_ERR_NOT_FOUND, "%s '%s' has no data", name, oar_k_input_name(k, slot, 0));
        return NULL;
    }
    if (t->ndim != 1 || t->dims[0] != c || t->dtype != dt) {
        char s[128];
        oar_k_error(k, OAR_ERR_SHAPE, "%s '%s' is %s %s, expected %s [%lld]", name, oar_k_input_name(k, slot, 0),
                    oar_dtype_name(t->dtype), oar_shape_str(t->dims, t->ndim, s, sizeof s),
                    oar_dtype_name(dt), (long long)c);
        return NULL;
    }
    return t->buf->data;
}

/* writes a [C] output if the slot is present */
static int vec_out(oar_kernel_ctx_t *k, int slot, int dt, const double *v, int64_t c) {
    int64_t d[1] = {c};
    int rc;
    void *p = oar_norm_out(k, slot, d, 1, dt, &rc);
    if (p) store_vec(dt, v, c, p);
    return rc;
}

static int bn_fwd(oar_kernel_ctx_t *k) {
    const int dt = oar_k_dtype(k);
    const oar_bn_attrs_t *at = oar_k_attrs(k);
    const oar_tensor_t *x;
    OAR_TRY(oar_norm_in(k, OAR_BN_X, "X", &x));
    bn_view_t v;
    OAR_TRY(bn_view(k, x, dt, &v));
    /* held before the outputs are requested: an in-place Y may get a new buffer
     * while the old one lives on with its other owner */
    const void *xd = x->buf->data;
    const int64_t C = v.c, cnt = v.n * v.s;
    const void *scale = vec_in(k, OAR_BN_SCALE, "Scale", C, dt);
    const void *bias = scale ? vec_in(k, OAR_BN_BIAS, "Bias", C, dt) : NULL;
    const void *rmean = bias ? vec_in(k, OAR_BN_MEAN, "Mean", C, dt) : NULL;
    const void *rvar = rmean ? vec_in(k, OAR_BN_VARIANCE, "Variance", C, dt) : NULL;
    if (!rvar) return OAR_ERR_SHAPE;
    const bool global = at->global_stats;
    double momentum = at->momentum, eps = at->epsilon;
    const oar_tensor_t *mt = global ? NULL : oar_k_input(k, OAR_BN_MOMENTUM, 0);
    if (mt) {
        if (!oar_tensor_has_data(mt) || oar_tensor_numel_of(mt) != 1 ||
            (mt->dtype != OAR_FP32 && mt->dtype != OAR_FP64))
            return oar_k_error(k, OAR_ERR_SHAPE, "MomentumTensor must hold one float value");
        momentum = mt->dtype == OAR_FP32 ? *(const float *)mt->buf->data : *(const double *)mt->buf->data;
    }
    if (!global && cnt == 0) {
        char s[128];
        return oar_k_error(k, OAR_ERR_SHAPE, "X '%s' %s has no values per channel to take batch statistics of",
                           oar_k_input_name(k, OAR_BN_X, 0), oar_shape_str(x->dims, x->ndim, s, sizeof s));
    }
    /* per-channel: scale, bias, running mean/var, mean, inv std, a, b */
    double *w = oar_xmalloc((size_t)C * 8 * sizeof(double));
    if (!w) return oar_k_error(k, OAR_ERR_NOMEM, "no memory for %lld channels", (long long)C);
    double *sc = w, *bi = w + C, *rm = w + 2 * C, *rv = w + 3 * C, *mean = w + 4 * C, *istd = w + 5 * C;
    double *a = w + 6 * C, *b = w + 7 * C;
    /* read everything before asking for outputs: MeanOut/VarianceOut share
     * the Mean/Variance variables */
    load_vec(dt, scale, C, sc);
    load_vec(dt, bias, C, bi);
    load_vec(dt, rmean, C, rm);
    load_vec(dt, rvar, C, rv);
    int rc = OAR_OK;
    if (global) {
        for (int64_t c = 0; c < C; c++) { mean[c] = rm[c]; istd[c] = 1.0 / sqrt(rv[c] + eps); }
    } else {
        double *var = istd;
        if (dt == OAR_FP32) bn_stats_f32(xd, &v, mean, var);
        else bn_stats_f64(xd, &v, mean, var);
        for (int64_t c = 0; c < C; c++) {
            rm[c] = momentum * rm[c] + (1.0 - momentum) * mean[c];
            rv[c] = momentum * rv[c] + (1.0 - momentum) * var[c];
            istd[c] = 1.0 / sqrt(var[c] + eps);
        }
    }
    for (int64_t c = 0; c < C; c++) { a[c] = sc[c] * istd[c]; b[c] = bi[c]; }
    void *y = oar_norm_out(k, OAR_BN_Y, x->dims, x->ndim, dt, &rc);
    if (!y) {
        if (!rc) rc = oar_k_error(k, OAR_ERR_NOT_FOUND, "output Y is missing");
        goto out;
    }
    if (dt == OAR_FP32) bn_apply_f32(xd, y, &v, mean, a, b);
    else bn_apply_f64(xd, y, &v, mean, a, b);
    if ((rc = vec_out(k, OAR_BN_MEAN_OUT, dt, rm, C))) goto out;
    if ((rc = vec_out(k, OAR_BN_VARIANCE_OUT, dt, rv, C))) goto out;
    if ((rc = vec_out(k, OAR_BN_SAVED_MEAN, dt, mean, C))) goto out;
    rc = vec_out(k, OAR_BN_SAVED_VARIANCE, dt, istd, C);
out:
    free(w);
    return rc;
}

static int bn_bwd(oar_kernel_ctx_t *k) {
    const int dt = oar_k_dtype(k);
    const oar_bn_attrs_t *at = oar_k_attrs(k);
    const oar_tensor_t *x, *dy;
    OAR_TRY(oar_norm_in(k, OAR_BNG_X, "X", &x));
    OAR_TRY(oar_norm_in(k, OAR_BNG_DY, "Y@GRAD", &dy));
    bn_view_t v;
    OAR_TRY(bn_view(k, x, dt, &v));
    OAR_TRY(oar_norm_check_dy(k, OAR_BNG_DY, dy, x));
    const void *xd = x->buf->data, *dyd = dy->buf->data;
    const int64_t C = v.c, cnt = v.n * v.s;
    const bool global = at->global_stats;
    const double eps = at->epsilon;
    const void *scale = vec_in(k, OAR_BNG_SCALE, "Scale", C, dt);
    if (!scale) return OAR_ERR_SHAPE;
    /* Fluid's grad reads the running statistics under global stats when given */
    const bool use_running = global && oar_k_input(k, OAR_BNG_MEAN, 0) && oar_k_input(k, OAR_BNG_VARIANCE, 0);
    const void *m = use_running ? vec_in(k, OAR_BNG_MEAN, "Mean", C, dt)
                                : vec_in(k, OAR_BNG_SAVED_MEAN, "SavedMean", C, dt);
    const void *s = !m ? NULL : use_running ? vec_in(k, OAR_BNG_VARIANCE, "Variance", C, dt)
                                            : vec_in(k, OAR_BNG_SAVED_VARIANCE, "SavedVariance", C, dt);
    if (!s) return OAR_ERR_SHAPE;
    double *w = oar_xmalloc((size_t)C * 8 * sizeof(double));
    if (!w) return oar_k_error(k, OAR_ERR_NOMEM, "no memory for %lld channels", (long long)C);
    double *sc = w, *mean = w + C, *istd = w + 2 * C, *sdy = w + 3 * C, *sdyx = w + 4 * C;
    double *A = w + 5 * C, *B = w + 6 * C, *D = w + 7 * C;
    load_vec(dt, scale, C, sc);
    load_vec(dt, m, C, mean);
    load_vec(dt, s, C, istd);
    if (use_running)
        for (int64_t c = 0; c < C; c++) istd[c] = 1.0 / sqrt(istd[c] + eps);
    /* sdy = sum(dy), sdyx = sum(dy * xhat) */
    if (dt == OAR_FP32) bn_grad_sums_f32(xd, dyd, &v, mean, istd, sdy, sdyx);
    else bn_grad_sums_f64(xd, dyd, &v, mean, istd, sdy, sdyx);
    int rc = OAR_OK;
    if ((rc = vec_out(k, OAR_BNG_DSCALE, dt, sdyx, C))) goto out;
    if ((rc = vec_out(k, OAR_BNG_DBIAS, dt, sdy, C))) goto out;
    if (!oar_k_output(k, OAR_BNG_DX, 0)) goto out;
    for (int64_t c = 0; c < C; c++) {
        A[c] = sc[c] * istd[c];
        if (global || cnt == 0) { B[c] = 0; D[c] = 0; continue; }
        /* dx = A * (dy - sdy/cnt - xhat * sdyx/cnt), xhat = (x - mean) * istd */
        B[c] = -A[c] * istd[c] * sdyx[c] / (double)cnt;
        D[c] = -A[c] * sdy[c] / (double)cnt;
    }
    void *dx = oar_norm_out(k, OAR_BNG_DX, x->dims, x->ndim, dt, &rc);
    if (!dx) goto out;
    if (dt == OAR_FP32) bn_grad_apply_f32(xd, dyd, dx, &v, mean, A, B, D);
    else bn_grad_apply_f64(xd, dyd, dx, &v, mean, A, B, D);
out:
    free(w);
    return rc;
}

static int batch_norm_f32(oar_kernel_ctx_t *k) { return bn_fwd(k); }
static int batch_norm_f64(oar_kernel_ctx_t *k) { return bn_fwd(k); }
static int batch_norm_grad_f32(oar_kernel_ctx_t *k) { return bn_bwd(k); }
static int batch_norm_grad_f64(oar_kernel_ctx_t *k) { return bn_bwd(k); }
OAR_REGISTER_KERNEL("batch_norm", OAR_PLACE_CPU, OAR_FP32, batch_norm_f32)
OAR_REGISTER_KERNEL("batch_norm", OAR_PLACE_CPU, OAR_FP64, batch_norm_f64)
OAR_REGISTER_KERNEL("batch_norm_grad", OAR_PLACE_CPU, OAR_FP32, batch_norm_grad_f32)
OAR_REGISTER_KERNEL("batch_norm_grad", OAR_PLACE_CPU, OAR_FP64, batch_norm_grad_f64)

#else /* typed part */
#define T OAR_BN_T
#define FN_(name, suf) name##_##suf
#define FN(name, suf) FN_(name, suf)

/* two-pass mean and biased variance per channel */
static void FN(bn_stats, OAR_BN_SUF)(const T *x, const bn_view_t *v, double *mean, double *var) {
    const int64_t N = v->n, C = v->c, S = v->s;
    const double inv = 1.0 / (double)(N * S);
    if (!v->nhwc) {
        #pragma omp parallel for schedule(static) if (C > 1 && N * C * S >= BN_PAR_MIN)
        for (int64_t c = 0; c < C; c++) {
            double s1 = 0, s2 = 0;
            for (int64_t n = 0; n < N; n++) {
                const T *p = x + (n * C + c) * S;
                for (int64_t i = 0; i < S; i++) s1 += p[i];
            }
            const double mu = s1 * inv;
            for (int64_t n = 0; n < N; n++) {
                const T *p = x + (n * C + c) * S;
                for (int64_t i = 0; i < S; i++) { double d = p[i] - mu; s2 += d * d; }
            }
            mean[c] = mu;
            var[c] = s2 * inv;
        }
        return;
    }
    const int64_t R = N * S;
    for (int64_t c = 0; c < C; c++) mean[c] = var[c] = 0;
    for (int64_t r = 0; r < R; r++)
        for (int64_t c = 0; c < C; c++) mean[c] += x[r * C + c];
    for (int64_t c = 0; c < C; c++) mean[c] *= inv;
    for (int64_t r = 0; r < R; r++)
        for (int64_t c = 0; c < C; c++) { double d = x[r * C + c] - mean[c]; var[c] += d * d; }
    for (int64_t c = 0; c < C; c++) var[c] *= inv;
}

/* y = a_c * (x - mean_c) + b_c */
static void FN(bn_apply, OAR_BN_SUF)(const T *x, T *y, const bn_view_t *v, const double *mean,
                                     const double *a, const double *b) {
    const int64_t N = v->n, C = v->c, S = v->s;
    if (!v->nhwc) {
        #pragma omp parallel for collapse(2) schedule(static) if (N * C * S >= BN_PAR_MIN)
        for (int64_t n = 0; n < N; n++)
            for (int64_t c = 0; c < C; c++) {
                const T *p = x + (n * C + c) * S;
                T *q = y + (n * C + c) * S;
                const T ac = (T)a[c], bc = (T)b[c], mc = (T)mean[c];
                for (int64_t i = 0; i < S; i++) q[i] = ac * (p[i] - mc) + bc;
            }
        return;
    }
    const int64_t R = N * S;
    #pragma omp parallel for schedule(static) if (R * C >= BN_PAR_MIN)
    for (int64_t r = 0; r < R; r++)
        for (int64_t c = 0; c < C; c++) y[r * C + c] = (T)a[c] * (x[r * C + c] - (T)mean[c]) + (T)b[c];
}

static void FN(bn_grad_sums, OAR_BN_SUF)(const T *x, const T *dy, const bn_view_t *v, const double *mean,
                                         const double *istd, double *sdy, double *sdyx) {
    const int64_t N = v->n, C = v->c, S = v->s;
    if (!v->nhwc) {
        #pragma omp parallel for schedule(static) if (C > 1 && N * C * S >= BN_PAR_MIN)
        for (int64_t c = 0; c < C; c++) {
            double s1 = 0, s2 = 0;
            const double mu = mean[c];
            for (int64_t n = 0; n < N; n++) {
                const T *p = x + (n * C + c) * S, *g = dy + (n * C + c) * S;
                for (int64_t i = 0; i < S; i++) { s1 += g[i]; s2 += g[i] * (p[i] - mu); }
            }
            sdy[c] = s1;
            sdyx[c] = s2 * istd[c];
        }
        return;
    }
    const int64_t R = N * S;
    for (int64_t c = 0; c < C; c++) sdy[c] = sdyx[c] = 0;
    for (int64_t r = 0; r < R; r++)
        for (int64_t c = 0; c < C; c++) {
            double g = dy[r * C + c];
            sdy[c] += g;
            sdyx[c] += g * (x[r * C + c] - mean[c]);
        }
    for (int64_t c = 0; c < C; c++) sdyx[c] *= istd[c];
}

/* dx = A_c * dy + B_c * (x - mean_c) + D_c */
static void FN(bn_grad_apply, OAR_BN_SUF)(const T *x, const T *dy, T *dx, const bn_view_t *v, const double *mean,
                                          const double *A, const double *B, const double *D) {
    const int64_t N = v->n, C = v->c, S = v->s;
    if (!v->nhwc) {
        #pragma omp parallel for collapse(2) schedule(static) if (N * C * S >= BN_PAR_MIN)
        for (int64_t n = 0; n < N; n++)
            for (int64_t c = 0; c < C; c++) {
                const int64_t o = (n * C + c) * S;
                const T a = (T)A[c], b = (T)B[c], d = (T)D[c], mc = (T)mean[c];
                for (int64_t i = 0; i < S; i++) dx[o + i] = a * dy[o + i] + b * (x[o + i] - mc) + d;
            }
        return;
    }
    const int64_t R = N * S;
    #pragma omp parallel for schedule(static) if (R * C >= BN_PAR_MIN)
    for (int64_t r = 0; r < R; r++)
        for (int64_t c = 0; c < C; c++)
            dx[r * C + c] = (T)A[c] * dy[r * C + c] + (T)B[c] * (x[r * C + c] - (T)mean[c]) + (T)D[c];
}

#undef T
#undef FN
#undef FN_
#endif
