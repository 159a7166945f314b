/* layer_norm.c — CPU kernels of layer_norm and layer_norm_grad.
 *
 * X is [left, right]; rows are independent, so the forward and dX run in
 * parallel over rows. Scale@GRAD and Bias@GRAD sum over rows: each thread
 * accumulates its rows into its own double buffer, summed at the end.
 * With g = dY * Scale and xhat = (x - mean) * istd per row,
 *     dX = istd * (g - mean(g) - xhat * mean(g * xhat)).
 * The typed part is written once below the #else and instantiated for float
 * and double by including this file into itself. */
#ifndef OAR_LN_T
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "op.h"
#include "norm_common.h"
#include "fixed_chunks.h"
#include "ops/layer_norm.h"

#define LN_PAR_MIN (1 << 14)

#define OAR_LN_T float
#define OAR_LN_SUF f32
#include "layer_norm.c"
#undef OAR_LN_T
#undef OAR_LN_SUF
#define OAR_LN_T double
#define OAR_LN_SUF f64
#include "layer_norm.c"
#undef OAR_LN_T
#undef OAR_LN_SUF

static int ln_split(oar_kernel_ctx_t *k, const oar_tensor_t *x, int dt, int64_t *left, int64_t *right) {
    const int axis = ((const oar_ln_attrs_t *)oar_k_attrs(k))->begin_norm_axis;
    OAR_TRY(oar_norm_check_dtype(k, x, dt));
    if (axis < 1 || axis >= x->ndim) {
        char s[128];
        return oar_k_error(k, OAR_ERR_INVALID, "attr begin_norm_axis = %d must be in [1, %d) for X '%s' of shape %s",
                           axis, x->ndim, oar_k_input_name(k, OAR_LN_X, 0),
                           oar_shape_str(x->dims, x->ndim, s, sizeof s));
    }
    int64_t l = 1, r = 1;
    for (int i = 0; i < x->ndim; i++) {
        if (i < axis) l *= x->dims[i];
        else r *= x->dims[i];
    }
    *left = l; *right = r;
    return OAR_OK;
}

/* an optional parameter input `slot` (`name` in errors) holding `n` values
 * of dtype dt; *p NULL if absent */
static int param_in(oar_kernel_ctx_t *k, int slot, const char *name, int64_t n, int dt, const void **p) {
    *p = NULL;
    const oar_tensor_t *t = oar_k_input(k, slot, 0);
    if (!t) return OAR_OK;
    if (!oar_tensor_has_data(t))
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "%s '%s' has no data", name, oar_k_input_name(k, slot, 0));
    if (oar_tensor_numel_of(t) != n || t->dtype != dt) {
        char s[128];
        return oar_k_error(k, OAR_ERR_SHAPE, "%s '%s' is %s %s, expected %lld values of %s", name,
                           oar_k_input_name(k, slot, 0), oar_dtype_name(t->dtype),
                           oar_shape_str(t->dims, t->ndim, s, sizeof s), (long long)n, oar_dtype_name(dt));
    }
    *p = t->buf->data;
    return OAR_OK;
}

static int ln_fwd(oar_kernel_ctx_t *k) {
    const int dt = oar_k_dtype(k);
    const oar_tensor_t *x;
    OAR_TRY(oar_norm_in(k, OAR_LN_X, "X", &x));
    int64_t left, right;
    OAR_TRY(ln_split(k, x, dt, &left, &right));
    const void *xd = x->buf->data, *scale, *bias;
    OAR_TRY(param_in(k, OAR_LN_SCALE, "Scale", right, dt, &scale));
    OAR_TRY(param_in(k, OAR_LN_BIAS, "Bias", right, dt, &bias));
    const double eps = ((const oar_ln_attrs_t *)oar_k_attrs(k))->epsilon;
    int rc;
    void *y = oar_norm_out(k, OAR_LN_Y, x->dims, x->ndim, dt, &rc);
    if (!y) return rc ? rc : oar_k_error(k, OAR_ERR_NOT_FOUND, "output Y is missing");
    int64_t ld[1] = {left};
    void *mean = oar_norm_out(k, OAR_LN_MEAN, ld, 1, dt, &rc);
    if (rc) return rc;
    void *var = oar_norm_out(k, OAR_LN_VARIANCE, ld, 1, dt, &rc);
    if (rc) return rc;
    if (dt == OAR_FP32) ln_fwd_f32(xd, scale, bias, y, mean, var, left, right, eps);
    else ln_fwd_f64(xd, scale, bias, y, mean, var, left, right, eps);
    return OAR_OK;
}

static int ln_bwd(oar_kernel_ctx_t *k) {
    const int dt = oar_k_dtype(k);
    const oar_tensor_t *x, *dy;
    OAR_TRY(oar_norm_in(k, OAR_LNG_X, "X", &x));
    OAR_TRY(oar_norm_in(k, OAR_LNG_DY, "Y@GRAD", &dy));
    int64_t left, right;
    OAR_TRY(ln_split(k, x, dt, &left, &right));
    OAR_TRY(oar_norm_check_dy(k, OAR_LNG_DY, dy, x));
    const void *mean, *var, *scale;
    OAR_TRY(param_in(k, OAR_LNG_MEAN, "Mean", left, dt, &mean));
    OAR_TRY(param_in(k, OAR_LNG_VARIANCE, "Variance", left, dt, &var));
    if (!mean || !var) return oar_k_error(k, OAR_ERR_NOT_FOUND, "inputs Mean and Variance are required");
    OAR_TRY(param_in(k, OAR_LNG_SCALE, "Scale", right, dt, &scale));
    const void *xd = x->buf->data, *dyd = dy->buf->data;
    const double eps = ((const oar_ln_attrs_t *)oar_k_attrs(k))->epsilon;
    int rc;
    void *dx = oar_norm_out(k, OAR_LNG_DX, x->dims, x->ndim, dt, &rc);
    if (rc) return rc;
    const oar_tensor_t *st = oar_k_input(k, OAR_LNG_SCALE, 0), *bt = oar_k_input(k, OAR_LNG_BIAS, 0);
    oar_tensor_t *dst = oar_k_output(k, OAR_LNG_DSCALE, 0), *dbt = oar_k_output(k, OAR_LNG_DBIAS, 0);
    if ((dst && !st) || (dbt && !bt))
        return oar_k_error(k, OAR_ERR_INVALID, "%s@GRAD is requested but %s is not an input",
                           dst && !st ? "Scale" : "Bias", dst && !st ? "Scale" : "Bias");
    void *dscale = dst ? oar_norm_out(k, OAR_LNG_DSCALE, st->dims, st->ndim, dt, &rc) : NULL;
    if (rc) return rc;
    void *dbias = dbt ? oar_norm_out(k, OAR_LNG_DBIAS, bt->dims, bt->ndim, dt, &rc) : NULL;
    if (rc) return rc;
    double *acc = NULL;
    /* Scale@GRAD and Bias@GRAD sum over rows in fixed chunks (fixed_chunks.h) */
    const int nth = oar_chunk_count(left, left * right >= LN_PAR_MIN);
    if (dscale || dbias) {
        acc = oar_xcalloc((size_t)nth * 2 * (size_t)right, sizeof(double));
        if (!acc) return oar_k_error(k, OAR_ERR_NOMEM, "no memory for %lld-wide grad sums", (long long)right);
    }
    if (dt == OAR_FP32) ln_bwd_f32(xd, dyd, mean, var, scale, dx, acc, nth, left, right, eps);
    else ln_bwd_f64(xd, dyd, mean, var, scale, dx, acc, nth, left, right, eps);
    if (acc) {
        for (int t = 1; t < nth; t++)
            for (int64_t j = 0; j < 2 * right; j++) acc[j] += acc[(size_t)t * 2 * (size_t)right + (size_t)j];
        for (int64_t j = 0; j < right; j++) {
            if (dt == OAR_FP32) {
                if (dscale) ((float *)dscale)[j] = (float)acc[j];
                if (dbias) ((float *)dbias)[j] = (float)acc[right + j];
            } else {
                if (dscale) ((double *)dscale)[j] = acc[j];
                if (dbias) ((double *)dbias)[j] = acc[right + j];
            }
        }
        free(acc);
    }
    return OAR_OK;
}

static int layer_norm_f32(oar_kernel_ctx_t *k) { return ln_fwd(k); }
static int layer_norm_f64(oar_kernel_ctx_t *k) { return ln_fwd(k); }
static int layer_norm_grad_f32(oar_kernel_ctx_t *k) { return ln_bwd(k); }
static int layer_norm_grad_f64(oar_kernel_ctx_t *k) { return ln_bwd(k); }
OAR_REGISTER_KERNEL("layer_norm", OAR_PLACE_CPU, OAR_FP32, layer_norm_f32)
OAR_REGISTER_KERNEL("layer_norm", OAR_PLACE_CPU, OAR_FP64, layer_norm_f64)
OAR_REGISTER_KERNEL("layer_norm_grad", OAR_PLACE_CPU, OAR_FP32, layer_norm_grad_f32)
OAR_REGISTER_KERNEL("layer_norm_grad", OAR_PLACE_CPU, OAR_FP64, layer_norm_grad_f64)

#else /* typed part */
#define T OAR_LN_T
#define FN_(name, suf) name##_##suf
#define FN(name, suf) FN_(name, suf)

static void FN(ln_fwd, OAR_LN_SUF)(const T *x, const T *scale, const T *bias, T *y, T *mean, T *var,
                                   int64_t left, int64_t right, double eps) {
    #pragma omp parallel for schedule(static) if (left > 1 && left * right >= LN_PAR_MIN)
    for (int64_t i = 0; i < left; i++) {
        const T *p = x + i * right;
        T *q = y + i * right;
        double s1 = 0, s2 = 0;
        for (int64_t j = 0; j < right; j++) s1 += p[j];
        const double mu = s1 / (double)right;
        for (int64_t j = 0; j < right; j++) { double d = p[j] - mu; s2 += d * d; }
        const double v = s2 / (double)right;
        const T is = (T)(1.0 / sqrt(v + eps)), m = (T)mu;
        for (int64_t j = 0; j < right; j++) {
            T h = (p[j] - m) * is;
            if (scale) h *= scale[j];
            if (bias) h += bias[j];
            q[j] = h;
        }
        if (mean) mean[i] = (T)mu;
        if (var) var[i] = (T)v;
    }
}

/* acc: nch blocks of [dscale sums | dbias sums], each 2*right doubles, one
 * per fixed chunk of rows */
static void FN(ln_bwd, OAR_LN_SUF)(const T *x, const T *dy, const T *mean, const T *var, const T *scale,
                                   T *dx, double *acc, int nch, int64_t left, int64_t right, double eps) {
    #pragma omp parallel for schedule(static) if (nch > 1)
    for (int c = 0; c < nch; c++) {
        double *a = acc ? acc + (size_t)c * 2 * (size_t)right : NULL;
        int64_t lo, hi;
        oar_chunk_range(left, nch, c, &lo, &hi);
        for (int64_t i = lo; i < hi; i++) {
            const T *p = x + i * right, *g = dy + i * right;
            const double mu = mean[i], is = 1.0 / sqrt((double)var[i] + eps);
            if (a)
                for (int64_t j = 0; j < right; j++) {
                    a[j] += (double)g[j] * ((double)p[j] - mu) * is;
                    a[right + j] += g[j];
                }
            if (!dx) continue;
            double sg = 0, sgx = 0;
            for (int64_t j = 0; j < right; j++) {
                double gj = scale ? (double)g[j] * scale[j] : (double)g[j];
                sg += gj;
                sgx += gj * ((double)p[j] - mu) * is;
            }
            const double mg = sg / (double)right, mgx = sgx / (double)right;
            T *d = dx + i * right;
            for (int64_t j = 0; j < right; j++) {
                double gj = scale ? (double)g[j] * scale[j] : (double)g[j];
                double xh = ((double)p[j] - mu) * is;
                d[j] = (T)(is * (gj - mg - xh * mgx));
            }
        }
    }
}

#undef T
#undef FN
#undef FN_
#endif
