/* interp_linear.c — CPU kernels of linear_interp and its grad (float32,
 * float64; NCW or NWC). Output k of a row reads two input taps with weights
 * computed as Paddle 1.8 does: a float ratio, (in - 1) / (out - 1) with
 * align_corners, else in / out, and float weights. The grad adds each
 * output's Out@GRAD back to its two taps, in one fixed order. */
#include <stdlib.h>
#include <string.h>
#include "op.h"
#include "ops/interp_linear.h"

typedef struct {
    int64_t n, c, in_w, out_w;
    bool cl;   /* NWC: element w of channel ch of row b at (b * w_size + w) * c + ch */
} lin_geom_t;

/* the two taps and weights of output k */
static void lin_tap(const oar_lin_attrs_t *a, float r, int64_t in_w, int64_t k, int64_t s[2], float w[2]) {
    const bool half = a->align_mode == 0 && !a->align_corners;
    int64_t n = half ? (int64_t)(r * (k + 0.5) - 0.5) : (int64_t)(r * (float)k);
    if (n < 0) n = 0;
    s[0] = n;
    s[1] = n < in_w - 1 ? n + 1 : n;
    float src = (float)(r * (k + 0.5) - 0.5);
    if (src < 0) src = 0;
    const float d = half ? src - (float)n : r * (float)k - (float)n;
    w[0] = 1.f - d;
    w[1] = d;
}

static int lin_geom(oar_kernel_ctx_t *k, const oar_tensor_t *x, const oar_tensor_t *o, lin_geom_t *g, float *r) {
    const oar_lin_attrs_t *a = oar_k_attrs(k);
    g->cl = a->layout == OAR_LIN_LAYOUT_NHWC;
    const int wax = g->cl ? 1 : 2, cax = g->cl ? 2 : 1;
    if (x->ndim != 3 || o->ndim != 3 || o->dims[0] != x->dims[0] || o->dims[cax] != x->dims[cax])
        return oar_k_error(k, OAR_ERR_SHAPE, "X ('%s') and the output must be 3-D with the same N and C",
                           oar_k_input_name(k, 0, 0));
    g->n = x->dims[0];
    g->c = x->dims[cax];
    g->in_w = x->dims[wax];
    g->out_w = o->dims[wax];
    *r = 0.f;
    if (g->out_w > 1)
        *r = a->align_corners ? (float)(g->in_w - 1) / (float)(g->out_w - 1) : (float)g->in_w / (float)g->out_w;
    return OAR_OK;
}

static inline int64_t lin_at(const lin_geom_t *g, int64_t b, int64_t ch, int64_t i, int64_t w) {
    return g->cl ? (b * w + i) * g->c + ch : (b * g->c + ch) * w + i;
}

#define LIN_KERNELS(T, SUF, DT)                                                                        \
    static int lin_fwd_##SUF(oar_kernel_ctx_t *k) {                                                    \
        const oar_lin_attrs_t *a = oar_k_attrs(k);                                                     \
        oar_tensor_t *xt = oar_k_input(k, OAR_LIN_X, 0), *ot = oar_k_output(k, OAR_LIN_OUT, 0);        \
        if (!ot) return oar_k_error(k, OAR_ERR_NOT_FOUND, "Out is missing");            \
        lin_geom_t g;                                                                                  \
        float r;                                                                                       \
        OAR_TRY(lin_geom(k, xt, ot, &g, &r));                                                          \
        void *ov;                                                                                      \
        OAR_TRY(oar_k_output_sized(k, OAR_LIN_OUT, "Out", DT, g.n * g.c * g.out_w, false, &ov));       \
        const T *x = oar_tensor_data(xt);                                                              \
        T *o = ov;                                                                                     \
        for (int64_t l = 0; l < g.out_w; l++) {                                                        \
            int64_t s[2];                                                                              \
            float w[2];                                                                                \
            lin_tap(a, r, g.in_w, l, s, w);                                                            \
            for (int64_t b = 0; b < g.n; b++)                                                          \
                for (int64_t ch = 0; ch < g.c; ch++)                                                   \
                    o[lin_at(&g, b, ch, l, g.out_w)] = x[lin_at(&g, b, ch, s[0], g.in_w)] * (T)w[0] +  \
                                                       x[lin_at(&g, b, ch, s[1], g.in_w)] * (T)w[1];   \
        }                                                                                              \
        return OAR_OK;                                                                                 \
    }                                                                                                  \
    static int lin_bwd_##SUF(oar_kernel_ctx_t *k) {                                                    \
        const oar_lin_attrs_t *a = oar_k_attrs(k);                                                     \
        oar_tensor_t *xt = oar_k_input(k, OAR_LING_X, 0), *dt = oar_k_input(k, OAR_LING_DOUT, 0);      \
        if (!dt) return oar_k_error(k, OAR_ERR_NOT_FOUND, "Out@GRAD is missing");  \
        void *dxv;                                                                                     \
        OAR_TRY(oar_k_output_sized(k, OAR_LING_DX, "X@GRAD", DT, oar_tensor_numel(xt), true, &dxv));   \
        if (!dxv) return OAR_OK;                                                                       \
        lin_geom_t g;                                                                                  \
        float r;                                                                                       \
        OAR_TRY(lin_geom(k, xt, dt, &g, &r));                                                          \
        const void *dv;                                                                                \
        OAR_TRY(oar_k_input_sized(k, OAR_LING_DOUT, "Out@GRAD", DT, g.n * g.c * g.out_w, &dv));        \
        const T *dy = dv;                                                                              \
        T *dx = dxv;                                                                                   \
        memset(dx, 0, sizeof(T) * (size_t)(g.n * g.c * g.in_w));                                       \
        for (int64_t l = 0; l < g.out_w; l++) {                                                        \
            int64_t s[2];                                                                              \
            float w[2];                                                                                \
            lin_tap(a, r, g.in_w, l, s, w);                                                            \
            for (int64_t b = 0; b < g.n; b++)                                                          \
                for (int64_t ch = 0; ch < g.c; ch++) {                                                 \
                    const T d = dy[lin_at(&g, b, ch, l, g.out_w)];                                     \
                    dx[lin_at(&g, b, ch, s[0], g.in_w)] += d * (T)w[0];                                \
                    dx[lin_at(&g, b, ch, s[1], g.in_w)] += d * (T)w[1];                                \
                }                                                                                      \
        }                                                                                              \
        return OAR_OK;                                                                                 \
    }                                                                                                  \
    OAR_REGISTER_KERNEL("linear_interp", OAR_PLACE_CPU, DT, lin_fwd_##SUF)                             \
    OAR_REGISTER_KERNEL("linear_interp_grad", OAR_PLACE_CPU, DT, lin_bwd_##SUF)

LIN_KERNELS(float, f32, OAR_FP32)
LIN_KERNELS(double, f64, OAR_FP64)
