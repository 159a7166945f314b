/* dropout.c — CPU kernels of dropout and dropout_grad.
 *
 * Each 64-bit draw decides two elements: an element is kept when its 32-bit
 * half is >= dropout_prob * 2^32, i.e. with probability 1 - dropout_prob to
 * within 2^-32. The draws are serial (the global generator is not shared
 * across threads); the arithmetic passes run in parallel when large.
 * The typed part is written once below the #else and instantiated for float
 * and double by including this file into itself. */
#ifndef OAR_DO_T
#include <stdlib.h>
#include <string.h>
#include "op.h"
#include "ops/dropout.h"

#define DO_PAR_MIN (1 << 16)

#define OAR_DO_T float
#define OAR_DO_SUF f32
#include "dropout.c"
#undef OAR_DO_T
#undef OAR_DO_SUF
#define OAR_DO_T double
#define OAR_DO_SUF f64
#include "dropout.c"
#undef OAR_DO_T
#undef OAR_DO_SUF

static void fill_mask(uint8_t *m, int64_t n, double p, oar_rng_t *r) {
    if (p <= 0) { memset(m, 1, (size_t)n); return; }
    if (p >= 1) { memset(m, 0, (size_t)n); return; }
    const uint64_t t = (uint64_t)(p * 4294967296.0);
    int64_t i = 0;
    for (; i + 1 < n; i += 2) {
        uint64_t b = r ? oar_rng_next_r(r) : oar_rng_next();
        m[i] = (b & 0xffffffffu) >= t;
        m[i + 1] = (b >> 32) >= t;
    }
    if (i < n) {
        uint64_t b = r ? oar_rng_next_r(r) : oar_rng_next();
        m[i] = (b & 0xffffffffu) >= t;
    }
}

static int do_fwd(oar_kernel_ctx_t *k) {
    const int dt = oar_k_dtype(k);
    const oar_dropout_attrs_t *a = oar_k_attrs(k);
    const oar_tensor_t *x = oar_k_input(k, OAR_DO_X, 0);
    if (!oar_tensor_has_data(x))
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "X '%s' has no data", oar_k_input_name(k, OAR_DO_X, 0));
    if (x->dtype != dt)
        return oar_k_error(k, OAR_ERR_DTYPE, "X '%s' is %s, expected %s", oar_k_input_name(k, OAR_DO_X, 0),
                           oar_dtype_name(x->dtype), oar_dtype_name(dt));
    const double p = a->prob;
    if (!(p >= 0 && p <= 1))
        return oar_k_error(k, OAR_ERR_INVALID, "attr dropout_prob = %g must be in [0, 1]", p);
    const bool test = a->is_test, up = a->impl == OAR_DO_IMPL_UPSCALE_IN_TRAIN;
    const int64_t n = oar_tensor_numel_of(x);
    const void *xd = x->buf->data;   /* held before an in-place Out may get a new buffer */
    void *y;   /* sized like X by do_infer */
    OAR_TRY(oar_k_output_sized(k, OAR_DO_OUT, "Out", dt, n, false, &y));
    if (test) {
        const double f = up ? 1.0 : 1.0 - p;
        if (dt == OAR_FP32) do_scale_f32(xd, y, n, f);
        else do_scale_f64(xd, y, n, f);
        return OAR_OK;
    }
    const oar_tensor_t *mt = oar_k_output(k, OAR_DO_MASK, 0);
    uint8_t *mask;
    if (mt) {   /* sized like X by do_infer (training) */
        void *mp;
        OAR_TRY(oar_k_output_sized(k, OAR_DO_MASK, "Mask", OAR_UINT8, n, false, &mp));
        mask = mp;
    } else {
        mask = oar_xmalloc((size_t)n);
    }
    if (!mask) return OAR_ERR_NOMEM;
    oar_rng_t local, *r = NULL;
    const oar_tensor_t *st = oar_k_input(k, OAR_DO_SEED, 0);
    if (st) {
        if (!oar_tensor_has_data(st) || oar_tensor_numel_of(st) < 1 ||
            (st->dtype != OAR_INT32 && st->dtype != OAR_INT64)) {
            if (!mt) free(mask);
            return oar_k_error(k, OAR_ERR_INVALID, "Seed '%s' must hold one int32 or int64 value",
                               oar_k_input_name(k, OAR_DO_SEED, 0));
        }
        int64_t s = st->dtype == OAR_INT32 ? *(const int32_t *)st->buf->data : *(const int64_t *)st->buf->data;
        oar_rng_seed(&local, (uint64_t)s);
        r = &local;
    } else if (a->fix_seed) {
        oar_rng_seed(&local, (uint64_t)(int64_t)a->seed);
        r = &local;
    }
    fill_mask(mask, n, p, r);
    /* upscale with p == 1 keeps nothing: the factor is irrelevant */
    const double f = up ? (p < 1 ? 1.0 / (1.0 - p) : 0.0) : 1.0;
    if (dt == OAR_FP32) do_mask_f32(xd, mask, y, n, f);
    else do_mask_f64(xd, mask, y, n, f);
    if (!mt) free(mask);
    return OAR_OK;
}

static int do_bwd(oar_kernel_ctx_t *k) {
    const int dt = oar_k_dtype(k);
    const oar_dropout_attrs_t *a = oar_k_attrs(k);
    if (a->is_test)
        return oar_k_error(k, OAR_ERR_INVALID, "the grad op needs is_test = false (no Mask is kept in test mode)");
    const oar_tensor_t *m = oar_k_input(k, OAR_DOG_MASK, 0), *dy = oar_k_input(k, OAR_DOG_DOUT, 0);
    if (!oar_tensor_has_data(m))
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "Mask '%s' has no data", oar_k_input_name(k, OAR_DOG_MASK, 0));
    if (!oar_tensor_has_data(dy))
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "Out@GRAD '%s' has no data", oar_k_input_name(k, OAR_DOG_DOUT, 0));
    if (m->dtype != OAR_UINT8)
        return oar_k_error(k, OAR_ERR_DTYPE, "Mask '%s' is %s, expected uint8", oar_k_input_name(k, OAR_DOG_MASK, 0),
                           oar_dtype_name(m->dtype));
    if (dy->dtype != dt || m->ndim != dy->ndim ||
        memcmp(m->dims, dy->dims, sizeof(int64_t) * (size_t)dy->ndim) != 0) {
        char a[128], b[128];
        return oar_k_error(k, OAR_ERR_SHAPE, "Mask '%s' %s and Out@GRAD '%s' %s %s must have the same shape",
                           oar_k_input_name(k, OAR_DOG_MASK, 0), oar_shape_str(m->dims, m->ndim, a, sizeof a),
                           oar_k_input_name(k, OAR_DOG_DOUT, 0), oar_dtype_name(dy->dtype),
                           oar_shape_str(dy->dims, dy->ndim, b, sizeof b));
    }
    oar_tensor_t *dxt = oar_k_output(k, OAR_DOG_DX, 0);
    if (!dxt) return OAR_OK;
    const void *dyd = dy->buf->data;
    const uint8_t *md = m->buf->data;
    void *dx;   /* sized like Out@GRAD by do_grad_infer */
    OAR_TRY(oar_k_output_sized(k, OAR_DOG_DX, "X@GRAD", dt, oar_tensor_numel_of(dy), false, &dx));
    const double p = a->prob;
    const double f = a->impl == OAR_DO_IMPL_UPSCALE_IN_TRAIN ? (p < 1 ? 1.0 / (1.0 - p) : 0.0) : 1.0;
    const int64_t n = oar_tensor_numel_of(dy);
    if (dt == OAR_FP32) do_mask_f32(dyd, md, dx, n, f);
    else do_mask_f64(dyd, md, dx, n, f);
    return OAR_OK;
}

static int dropout_f32(oar_kernel_ctx_t *k) { return do_fwd(k); }
static int dropout_f64(oar_kernel_ctx_t *k) { return do_fwd(k); }
static int dropout_grad_f32(oar_kernel_ctx_t *k) { return do_bwd(k); }
static int dropout_grad_f64(oar_kernel_ctx_t *k) { return do_bwd(k); }
OAR_REGISTER_KERNEL("dropout", OAR_PLACE_CPU, OAR_FP32, dropout_f32)
OAR_REGISTER_KERNEL("dropout", OAR_PLACE_CPU, OAR_FP64, dropout_f64)
OAR_REGISTER_KERNEL("dropout_grad", OAR_PLACE_CPU, OAR_FP32, dropout_grad_f32)
OAR_REGISTER_KERNEL("dropout_grad", OAR_PLACE_CPU, OAR_FP64, dropout_grad_f64)

#else /* typed part */
#define T OAR_DO_T
#define FN_(name, suf) name##_##suf
#define FN(name, suf) FN_(name, suf)

static void FN(do_scale, OAR_DO_SUF)(const T *x, T *y, int64_t n, double f) {
    const T s = (T)f;
    if (f == 1.0) { if (x != y) memcpy(y, x, (size_t)n * sizeof(T)); return; }
    #pragma omp parallel for schedule(static) if (n >= DO_PAR_MIN)
    for (int64_t i = 0; i < n; i++) y[i] = x[i] * s;
}

/* y = x * mask * f */
static void FN(do_mask, OAR_DO_SUF)(const T *x, const uint8_t *m, T *y, int64_t n, double f) {
    const T s = (T)f;
    #pragma omp parallel for schedule(static) if (n >= DO_PAR_MIN)
    for (int64_t i = 0; i < n; i++) y[i] = m[i] ? x[i] * s : (T)0;
}

#undef T
#undef FN
#undef FN_
#endif
