/*
 * pad_ext.c — CPU kernels of pad and pad3d (float32/float64, forward also
 * int32/int64) and their grads. Both walk the output and map each index to
 * its source per dim (pad_ext_util.h's oar_pad_src); the grads add Out@GRAD
 * into the source (several outputs share one source in reflect, replicate
 * and circular modes).
 */
#include <string.h>
#include "op.h"
#include "ops/pad_ext_util.h"

typedef struct { int nd; int64_t in[OAR_MAX_DIMS], out[OAR_MAX_DIMS], before[OAR_MAX_DIMS]; int mode; } pplan_t;

/* the pad plan of X (dims) for this op; the pad3d Paddings tensor when given */
static int plan_of(oar_kernel_ctx_t *k, const oar_tensor_t *x, pplan_t *p)
{
    const oar_pad_attrs_t *a = oar_k_attrs(k);
    p->nd = x->ndim;
    p->mode = a->is3d ? a->mode : OAR_PAD_CONSTANT;
    int64_t pads[2 * OAR_MAX_DIMS] = {0};
    if (a->is3d) {
        oar_tensor_t *t = oar_k_input(k, OAR_PAD_PADDINGS, 0);
        int64_t six[6];
        if (t) {
            if (oar_tensor_numel_of(t) != 6 || t->dtype != OAR_INT32)
                return oar_k_error(k, OAR_ERR_INVALID, "Paddings must be 6 int32 values");
            const int32_t *v = oar_tensor_data(t);
            for (int i = 0; i < 6; i++) six[i] = v[i];
        } else {
            if (a->paddings.n != 6) return oar_k_error(k, OAR_ERR_INVALID, "attr paddings must have 6 values");
            for (int i = 0; i < 6; i++) six[i] = a->paddings.v[i];
        }
        if (x->ndim != 5) return oar_k_error(k, OAR_ERR_SHAPE, "X must be 5-D");
        for (int i = 0; i < 3; i++) { pads[2 * (4 - i)] = six[2 * i]; pads[2 * (4 - i) + 1] = six[2 * i + 1]; }
    } else {
        if (a->paddings.n != 2 * x->ndim) return oar_k_error(k, OAR_ERR_INVALID, "attr paddings must have 2 per dim");
        for (int i = 0; i < 2 * x->ndim; i++) pads[i] = a->paddings.v[i];
    }
    for (int i = 0; i < x->ndim; i++) {
        p->in[i] = x->dims[i];
        p->before[i] = pads[2 * i];
        p->out[i] = x->dims[i] + pads[2 * i] + pads[2 * i + 1];
    }
    return OAR_OK;
}

/* flat source index of flat output index o, -1 in a constant pad */
static int64_t src_of(const pplan_t *p, int64_t o)
{
    int64_t src = 0, mul = 1;
    for (int d = p->nd - 1; d >= 0; d--) {
        int64_t i = o % p->out[d];
        o /= p->out[d];
        int64_t s = oar_pad_src(p->mode, i, p->before[d], p->in[d]);
        if (s < 0) return -1;
        src += s * mul;
        mul *= p->in[d];
    }
    return src;
}

static int64_t total(const int64_t *d, int n)
{
    int64_t t = 1;
    for (int i = 0; i < n; i++) t *= d[i];
    return t;
}

#define PAD_FWD(T, SUF, DT)                                                                     \
    static int fwd_##SUF(oar_kernel_ctx_t *k)                                                   \
    {                                                                                           \
        const oar_pad_attrs_t *a = oar_k_attrs(k);                                              \
        oar_tensor_t *xt = oar_k_input(k, OAR_PAD_X, 0);                                        \
        pplan_t p;                                                                              \
        OAR_TRY(plan_of(k, xt, &p));                                                            \
        T *o = oar_k_output_data(k, OAR_PAD_OUT, 0, DT);                                        \
        if (!o) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate Out");                    \
        const T *x = oar_tensor_data(xt);                                                       \
        const int64_t n = total(p.out, p.nd);                                                   \
        for (int64_t i = 0; i < n; i++) {                                                       \
            int64_t s = src_of(&p, i);                                                          \
            o[i] = s < 0 ? (T)a->value : x[s];                                                  \
        }                                                                                       \
        return OAR_OK;                                                                          \
    }
PAD_FWD(float, f32, OAR_FP32)
PAD_FWD(double, f64, OAR_FP64)
PAD_FWD(int32_t, i32, OAR_INT32)
PAD_FWD(int64_t, i64, OAR_INT64)

#define PAD_BWD(T, SUF, DT)                                                                     \
    static int bwd_##SUF(oar_kernel_ctx_t *k)                                                   \
    {                                                                                           \
        if (!oar_k_output(k, OAR_PADG_DX, 0)) return OAR_OK;                                    \
        const oar_pad_attrs_t *a = oar_k_attrs(k);                                              \
        oar_tensor_t *xt = oar_k_input(k, OAR_PAD_X, 0);                                        \
        /* Out@GRAD is the last input: 1 for pad, 2 for pad3d */                                \
        oar_tensor_t *gt = oar_k_input(k, a->is3d ? 2 : 1, 0);                                  \
        pplan_t p;                                                                              \
        OAR_TRY(plan_of(k, xt, &p));                                                            \
        const int64_t n = total(p.out, p.nd);                                                   \
        if (!gt || oar_tensor_numel_of(gt) != n)                                                \
            return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD does not have Out's size");          \
        T *dx = oar_k_output_data(k, OAR_PADG_DX, 0, DT);                                       \
        if (!dx) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate X@GRAD");                \
        const T *g = oar_tensor_data(gt);                                                       \
        memset(dx, 0, sizeof(T) * (size_t)oar_tensor_numel_of(xt));                             \
        for (int64_t i = 0; i < n; i++) {                                                       \
            int64_t s = src_of(&p, i);                                                          \
            if (s >= 0) dx[s] += g[i];                                                          \
        }                                                                                       \
        return OAR_OK;                                                                          \
    }
PAD_BWD(float, f32, OAR_FP32)
PAD_BWD(double, f64, OAR_FP64)

#define PAD_REG(NAME)                                                                           \
    static int NAME##_f32(oar_kernel_ctx_t *k) { return fwd_f32(k); }                           \
    static int NAME##_f64(oar_kernel_ctx_t *k) { return fwd_f64(k); }                           \
    static int NAME##_i32(oar_kernel_ctx_t *k) { return fwd_i32(k); }                           \
    static int NAME##_i64(oar_kernel_ctx_t *k) { return fwd_i64(k); }                           \
    static int NAME##_g32(oar_kernel_ctx_t *k) { return bwd_f32(k); }                           \
    static int NAME##_g64(oar_kernel_ctx_t *k) { return bwd_f64(k); }                           \
    OAR_REGISTER_KERNEL(#NAME, OAR_PLACE_CPU, OAR_FP32, NAME##_f32)                             \
    OAR_REGISTER_KERNEL(#NAME, OAR_PLACE_CPU, OAR_FP64, NAME##_f64)                             \
    OAR_REGISTER_KERNEL(#NAME, OAR_PLACE_CPU, OAR_INT32, NAME##_i32)                            \
    OAR_REGISTER_KERNEL(#NAME, OAR_PLACE_CPU, OAR_INT64, NAME##_i64)                            \
    OAR_REGISTER_KERNEL(#NAME "_grad", OAR_PLACE_CPU, OAR_FP32, NAME##_g32)                     \
    OAR_REGISTER_KERNEL(#NAME "_grad", OAR_PLACE_CPU, OAR_FP64, NAME##_g64)
PAD_REG(pad)
PAD_REG(pad3d)
