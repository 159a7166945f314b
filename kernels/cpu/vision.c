/* vision.c — CPU kernels of lrn, maxout and affine_channel and their grads
 * (float32, float64). Every op sees X as [N, C, S] (channels at dim 1) or
 * [N, S, C] (channels last), S the product of the spatial dims. */
#include <math.h>
#include <string.h>
#include "op.h"
#include "ops/vision.h"

/* X's dims as n, c, s; the stride between channels (cs) and between
 * spatial cells (ss) in the flat data. */
typedef struct { int64_t n, c, s, cs, ss; } vis_geom_t;

static vis_geom_t vis_geom(const oar_tensor_t *x, bool last, int cdim)
{
    vis_geom_t g = {x->dims[0], x->dims[cdim], 1, 1, 1};
    for (int i = 1; i < x->ndim; i++)
        if (i != cdim) g.s *= x->dims[i];
    if (last) { g.cs = 1; g.ss = g.c; } else { g.cs = g.s; g.ss = 1; }
    return g;
}
/* the flat index of (sample b, channel ch, cell p) */
#define VIS_AT(g, b, ch, p) ((b) * (g).c * (g).s + (ch) * (g).cs + (p) * (g).ss)

#define VISION_KERNELS(T, SUF, DT)                                                                    \
    static int lrn_fwd_##SUF(oar_kernel_ctx_t *k)                                                     \
    {                                                                                                 \
        const oar_lrn_attrs_t *a = oar_k_attrs(k);                                                    \
        oar_tensor_t *xt = oar_k_input(k, OAR_LRN_X, 0);                                              \
        const vis_geom_t g = vis_geom(xt, a->layout == OAR_LRN_LAYOUT_NHWC, a->layout == OAR_LRN_LAYOUT_NHWC ? 3 : 1); \
        const int64_t total = oar_tensor_numel_of(xt);                                                \
        void *op, *mp;                                                                                \
        OAR_TRY(oar_k_output_sized(k, OAR_LRN_OUT, "Out", DT, total, false, &op));                   \
        OAR_TRY(oar_k_output_sized(k, OAR_LRN_MID, "MidOut", DT, total, false, &mp));                \
        const T *x = oar_tensor_data(xt);                                                             \
        T *o = op, *mid = mp;                                                                         \
        const int64_t pre = (a->n - 1) / 2;                                                           \
        for (int64_t b = 0; b < g.n; b++)                                                             \
            for (int64_t p = 0; p < g.s; p++)                                                         \
                for (int64_t ch = 0; ch < g.c; ch++) {                                                \
                    T sum = 0;                                                                        \
                    for (int64_t m = ch - pre; m < ch - pre + a->n; m++) {                            \
                        if (m < 0 || m >= g.c) continue;                                              \
                        T v = x[VIS_AT(g, b, m, p)];                                                  \
                        sum += v * v;                                                                 \
                    }                                                                                 \
                    const int64_t at = VIS_AT(g, b, ch, p);                                           \
                    mid[at] = (T)a->k + (T)a->alpha * sum;                                            \
                    o[at] = x[at] * (T)pow((double)mid[at], -(double)a->beta);                        \
                }                                                                                     \
        return OAR_OK;                                                                                \
    }                                                                                                 \
    /* dX[c] = dOut[c] Mid[c]^-beta                                                                   \
     *         - 2 alpha beta X[c] * sum over the windows m holding c of dOut[m] Out[m] / Mid[m] */   \
    static int lrn_bwd_##SUF(oar_kernel_ctx_t *k)                                                     \
    {                                                                                                 \
        const oar_lrn_attrs_t *a = oar_k_attrs(k);                                                    \
        oar_tensor_t *xt = oar_k_input(k, OAR_LRNG_X, 0);                                             \
        const vis_geom_t g = vis_geom(xt, a->layout == OAR_LRN_LAYOUT_NHWC, a->layout == OAR_LRN_LAYOUT_NHWC ? 3 : 1); \
        const int64_t total = oar_tensor_numel_of(xt);                                                \
        static const char *const names[] = {"Out", "MidOut", "Out@GRAD"};                             \
        const int slots[] = {OAR_LRNG_OUT_IN, OAR_LRNG_MID, OAR_LRNG_DOUT};                           \
        const T *in[3];                                                                               \
        for (int i = 0; i < 3; i++) {                                                                 \
            oar_tensor_t *t = oar_k_input(k, slots[i], 0);                                            \
            if (oar_tensor_numel_of(t) != total)                                                      \
                return oar_k_error(k, OAR_ERR_SHAPE, "%s has %lld values, X %lld", names[i],          \
                                   (long long)oar_tensor_numel_of(t), (long long)total);              \
            in[i] = oar_tensor_data(t);                                                               \
        }                                                                                             \
        void *dp;                                                                                     \
        OAR_TRY(oar_k_output_sized(k, OAR_LRNG_DX, "X@GRAD", DT, total, true, &dp));                  \
        if (!dp) return OAR_OK;                                                                       \
        const T *x = oar_tensor_data(xt), *o = in[0], *mid = in[1], *dy = in[2];                     \
        T *dx = dp;                                                                                   \
        const int64_t post = a->n - 1 - (a->n - 1) / 2, pre = (a->n - 1) / 2;                         \
        const T ratio = (T)(-2.0 * a->alpha * a->beta);                                               \
        for (int64_t b = 0; b < g.n; b++)                                                             \
            for (int64_t p = 0; p < g.s; p++)                                                         \
                for (int64_t ch = 0; ch < g.c; ch++) {                                                \
                    T sum = 0;                                                                        \
                    for (int64_t m = ch - post; m <= ch + pre; m++) {                                 \
                        if (m < 0 || m >= g.c) continue;                                              \
                        const int64_t at = VIS_AT(g, b, m, p);                                        \
                        sum += dy[at] * o[at] / mid[at];                                              \
                    }                                                                                 \
                    const int64_t at = VIS_AT(g, b, ch, p);                                           \
                    dx[at] = dy[at] * (T)pow((double)mid[at], -(double)a->beta) + ratio * x[at] * sum; \
                }                                                                                     \
        return OAR_OK;                                                                                \
    }                                                                                                 \
    /* X viewed as [N, Co, G, S] (NCHW) or [N, S, Co, G] (channels last) */                           \
    static int maxout_fwd_##SUF(oar_kernel_ctx_t *k)                                                  \
    {                                                                                                 \
        const oar_maxout_attrs_t *a = oar_k_attrs(k);                                                 \
        oar_tensor_t *xt = oar_k_input(k, OAR_MAXOUT_X, 0);                                           \
        const bool last = a->axis != 1;                                                               \
        const vis_geom_t g = vis_geom(xt, last, last ? 3 : 1);                                        \
        const int64_t grp = a->groups, co = g.c / grp;                                                \
        const vis_geom_t og = {g.n, co, g.s, last ? 1 : g.s, last ? co : 1};                          \
        void *op;                                                                                     \
        OAR_TRY(oar_k_output_sized(k, OAR_MAXOUT_OUT, "Out", DT, g.n * co * g.s, false, &op));       \
        const T *x = oar_tensor_data(xt);                                                             \
        T *o = op;                                                                                    \
        for (int64_t b = 0; b < g.n; b++)                                                             \
            for (int64_t c = 0; c < co; c++)                                                          \
                for (int64_t p = 0; p < g.s; p++) {                                                   \
                    T best = x[VIS_AT(g, b, c * grp, p)];                                             \
                    for (int64_t j = 1; j < grp; j++) {                                               \
                        T v = x[VIS_AT(g, b, c * grp + j, p)];                                        \
                        if (v > best) best = v;                                                       \
                    }                                                                                 \
                    o[VIS_AT(og, b, c, p)] = best;                                                    \
                }                                                                                     \
        return OAR_OK;                                                                                \
    }                                                                                                 \
    static int maxout_bwd_##SUF(oar_kernel_ctx_t *k)                                                  \
    {                                                                                                 \
        const oar_maxout_attrs_t *a = oar_k_attrs(k);                                                 \
        oar_tensor_t *xt = oar_k_input(k, OAR_MAXOUTG_X, 0);                                          \
        oar_tensor_t *ot = oar_k_input(k, OAR_MAXOUTG_OUT_IN, 0), *gt = oar_k_input(k, OAR_MAXOUTG_DOUT, 0); \
        const bool last = a->axis != 1;                                                               \
        const vis_geom_t g = vis_geom(xt, last, last ? 3 : 1);                                        \
        const int64_t grp = a->groups, co = g.c / grp;                                                \
        const vis_geom_t og = {g.n, co, g.s, last ? 1 : g.s, last ? co : 1};                          \
        if (oar_tensor_numel_of(ot) != g.n * co * g.s || oar_tensor_numel_of(gt) != g.n * co * g.s)  \
            return oar_k_error(k, OAR_ERR_SHAPE, "Out and Out@GRAD must hold %lld values, X's shape / groups", \
                               (long long)(g.n * co * g.s));                                          \
        void *dp;                                                                                     \
        OAR_TRY(oar_k_output_sized(k, OAR_MAXOUTG_DX, "X@GRAD", DT, g.n * g.c * g.s, true, &dp));     \
        if (!dp) return OAR_OK;                                                                       \
        const T *x = oar_tensor_data(xt), *o = oar_tensor_data(ot), *dy = oar_tensor_data(gt);       \
        T *dx = dp;                                                                                   \
        memset(dx, 0, sizeof(T) * (size_t)(g.n * g.c * g.s));                                         \
        for (int64_t b = 0; b < g.n; b++)                                                             \
            for (int64_t c = 0; c < co; c++)                                                          \
                for (int64_t p = 0; p < g.s; p++) {                                                   \
                    const int64_t at = VIS_AT(og, b, c, p);                                           \
                    for (int64_t j = 0; j < grp; j++) {                                               \
                        const int64_t xi = VIS_AT(g, b, c * grp + j, p);                              \
                        if (x[xi] == o[at]) { dx[xi] = dy[at]; break; }   /* the first maximum only */ \
                    }                                                                                 \
                }                                                                                     \
        return OAR_OK;                                                                                \
    }                                                                                                 \
    static int ac_fwd_##SUF(oar_kernel_ctx_t *k)                                                      \
    {                                                                                                 \
        const oar_ac_attrs_t *a = oar_k_attrs(k);                                                     \
        oar_tensor_t *xt = oar_k_input(k, OAR_AC_X, 0);                                               \
        const bool last = a->layout == OAR_AC_LAYOUT_NHWC;                                            \
        const vis_geom_t g = vis_geom(xt, last, last ? xt->ndim - 1 : 1);                             \
        const T *x = oar_tensor_data(xt), *sc = oar_tensor_data(oar_k_input(k, OAR_AC_SCALE, 0));    \
        const T *bi = oar_tensor_data(oar_k_input(k, OAR_AC_BIAS, 0));                               \
        void *op;                                                                                     \
        OAR_TRY(oar_k_output_sized(k, OAR_AC_OUT, "Out", DT, g.n * g.c * g.s, false, &op));           \
        T *o = op;                                                                                    \
        for (int64_t b = 0; b < g.n; b++)                                                             \
            for (int64_t c = 0; c < g.c; c++)                                                         \
                for (int64_t p = 0; p < g.s; p++) {                                                   \
                    const int64_t at = VIS_AT(g, b, c, p);                                            \
                    o[at] = x[at] * sc[c] + bi[c];                                                    \
                }                                                                                     \
        return OAR_OK;                                                                                \
    }                                                                                                 \
    static int ac_bwd_##SUF(oar_kernel_ctx_t *k)                                                      \
    {                                                                                                 \
        const oar_ac_attrs_t *a = oar_k_attrs(k);                                                     \
        oar_tensor_t *xt = oar_k_input(k, OAR_ACG_X, 0), *gt = oar_k_input(k, OAR_ACG_DOUT, 0);      \
        const bool last = a->layout == OAR_AC_LAYOUT_NHWC;                                            \
        const vis_geom_t g = vis_geom(xt, last, last ? xt->ndim - 1 : 1);                             \
        const int64_t total = g.n * g.c * g.s;                                                        \
        if (oar_tensor_numel_of(gt) != total)                                                         \
            return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD has %lld values, X %lld",                  \
                               (long long)oar_tensor_numel_of(gt), (long long)total);                 \
        void *dxp, *dsp, *dbp;                                                                        \
        OAR_TRY(oar_k_output_sized(k, OAR_ACG_DX, "X@GRAD", DT, total, true, &dxp));                  \
        OAR_TRY(oar_k_output_sized(k, OAR_ACG_DSCALE, "Scale@GRAD", DT, g.c, true, &dsp));            \
        OAR_TRY(oar_k_output_sized(k, OAR_ACG_DBIAS, "Bias@GRAD", DT, g.c, true, &dbp));              \
        const T *x = oar_tensor_data(xt), *dy = oar_tensor_data(gt);                                  \
        const T *sc = oar_tensor_data(oar_k_input(k, OAR_ACG_SCALE, 0));                              \
        T *dx = dxp, *ds = dsp, *db = dbp;                                                            \
        /* channel-outer loops: each channel's sums in one fixed order */                             \
        for (int64_t c = 0; c < g.c; c++) {                                                           \
            T s1 = 0, s2 = 0;                                                                         \
            for (int64_t b = 0; b < g.n; b++)                                                         \
                for (int64_t p = 0; p < g.s; p++) {                                                   \
                    const int64_t at = VIS_AT(g, b, c, p);                                            \
                    if (dx) dx[at] = dy[at] * sc[c];                                                  \
                    s1 += dy[at] * x[at];                                                             \
                    s2 += dy[at];                                                                     \
                }                                                                                     \
            if (ds) ds[c] = s1;                                                                       \
            if (db) db[c] = s2;                                                                       \
        }                                                                                             \
        return OAR_OK;                                                                                \
    }                                                                                                 \
    OAR_REGISTER_KERNEL("lrn", OAR_PLACE_CPU, DT, lrn_fwd_##SUF)                                      \
    OAR_REGISTER_KERNEL("lrn_grad", OAR_PLACE_CPU, DT, lrn_bwd_##SUF)                                 \
    OAR_REGISTER_KERNEL("maxout", OAR_PLACE_CPU, DT, maxout_fwd_##SUF)                                \
    OAR_REGISTER_KERNEL("maxout_grad", OAR_PLACE_CPU, DT, maxout_bwd_##SUF)                           \
    OAR_REGISTER_KERNEL("affine_channel", OAR_PLACE_CPU, DT, ac_fwd_##SUF)                            \
    OAR_REGISTER_KERNEL("affine_channel_grad", OAR_PLACE_CPU, DT, ac_bwd_##SUF)

VISION_KERNELS(float, f32, OAR_FP32)
VISION_KERNELS(double, f64, OAR_FP64)
