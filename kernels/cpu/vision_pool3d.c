/* vision_pool3d.c — CPU kernels of pool3d and pool3d_grad (float32,
 * float64; NCDHW and NDHWC read in place through strides). The rules are
 * pool2d's (kernels/cpu/pool.c): windows clipped to the input, an average
 * divides by the clipped size when exclusive or adaptive, else by
 * kd*kh*kw; a window wholly in the padding gives 0 and passes no gradient;
 * max sends the gradient to the first maximum in window order, and a NaN
 * makes the maximum NaN. One thread: each X@GRAD cell sums its windows in
 * one fixed order. */
#include <string.h>
#include "op.h"
#include "ops/vision.h"
#include "ops/window.h"

typedef struct {
    int64_t n, c, in[3], out[3], ks[3], st[3], pd[6];
    int64_t xcs, xss, ocs, oss;   /* channel and spatial-cell strides of X and Out */
    bool adaptive, is_max, exclusive;
} p3_geom_t;

static int p3_setup(oar_kernel_ctx_t *k, const oar_tensor_t *x, p3_geom_t *g)
{
    const oar_pool3d_attrs_t *a = oar_k_attrs(k);
    if (x->ndim != 5)
        return oar_k_error(k, OAR_ERR_SHAPE, "X ('%s') must be 5-D, it has rank %d",
                           oar_k_input_name(k, OAR_POOL3D_X, 0), x->ndim);
    const int sp = a->ndhwc ? 1 : 2;
    g->n = x->dims[0];
    g->c = x->dims[a->ndhwc ? 4 : 1];
    for (int i = 0; i < 3; i++) g->in[i] = x->dims[sp + i];
    oar_pool3d_win_t w;
    if (oar_win_pool3d_plan(a->algo, a->global, a->adaptive, a->ceil_mode, g->in, a->ks, a->st, a->pd, &w) !=
        OAR_WIN_OK)
        return oar_k_error(k, OAR_ERR_SHAPE, "X ('%s'): no output fits its window geometry",
                           oar_k_input_name(k, OAR_POOL3D_X, 0));
    memcpy(g->out, w.out, sizeof g->out);
    memcpy(g->ks, w.ks, sizeof g->ks);
    memcpy(g->st, w.st, sizeof g->st);
    memcpy(g->pd, w.pd, sizeof g->pd);
    g->adaptive = w.adaptive;
    g->is_max = a->type == OAR_POOL3D_MAX;
    g->exclusive = a->exclusive;
    const int64_t is = g->in[0] * g->in[1] * g->in[2], os = g->out[0] * g->out[1] * g->out[2];
    g->xcs = a->ndhwc ? 1 : is; g->xss = a->ndhwc ? g->c : 1;
    g->ocs = a->ndhwc ? 1 : os; g->oss = a->ndhwc ? g->c : 1;
    return OAR_OK;
}

/* calls BODY once per (sample b, channel ch, output cell oi) with the
 * window [lo[i], hi[i]) per dim and its divisor */
#define P3_EACH_WINDOW(g, BODY)                                                                       \
    for (int64_t b = 0; b < (g).n; b++)                                                               \
        for (int64_t ch = 0; ch < (g).c; ch++)                                                        \
            for (int64_t od = 0; od < (g).out[0]; od++)                                               \
                for (int64_t oh = 0; oh < (g).out[1]; oh++)                                           \
                    for (int64_t ow = 0; ow < (g).out[2]; ow++) {                                     \
                        const int64_t o3[3] = {od, oh, ow};                                           \
                        int64_t lo[3], hi[3];                                                         \
                        for (int i = 0; i < 3; i++)                                                   \
                            oar_win_pool_range(o3[i], (g).in[i], (g).out[i], (g).ks[i], (g).st[i],    \
                                               (g).pd[2 * i], (g).adaptive, &lo[i], &hi[i]);          \
                        const int64_t cells = (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]);    \
                        const int64_t xbase = b * (g).c * (g).in[0] * (g).in[1] * (g).in[2] + ch * (g).xcs; \
                        const int64_t oat = b * (g).c * (g).out[0] * (g).out[1] * (g).out[2] + ch * (g).ocs + \
                                            ((od * (g).out[1] + oh) * (g).out[2] + ow) * (g).oss;     \
                        const double div = ((g).exclusive || (g).adaptive)                            \
                                               ? (double)cells : (double)((g).ks[0] * (g).ks[1] * (g).ks[2]); \
                        BODY                                                                          \
                    }
#define P3_CELLS(g, XI, BODY)                                                                         \
    for (int64_t d = lo[0]; d < hi[0]; d++)                                                           \
        for (int64_t h = lo[1]; h < hi[1]; h++)                                                       \
            for (int64_t w = lo[2]; w < hi[2]; w++) {                                                 \
                const int64_t XI = xbase + ((d * (g).in[1] + h) * (g).in[2] + w) * (g).xss;           \
                BODY                                                                                  \
            }

#define P3_KERNELS(T, SUF, DT)                                                                        \
    static int p3_fwd_##SUF(oar_kernel_ctx_t *k)                                                      \
    {                                                                                                 \
        oar_tensor_t *xt = oar_k_input(k, OAR_POOL3D_X, 0);                                           \
        p3_geom_t g;                                                                                  \
        OAR_TRY(p3_setup(k, xt, &g));                                                                 \
        void *op;                                                                                     \
        OAR_TRY(oar_k_output_sized(k, OAR_POOL3D_OUT, "Out", DT,                                      \
                                   g.n * g.c * g.out[0] * g.out[1] * g.out[2], false, &op));          \
        const T *x = oar_tensor_data(xt);                                                             \
        T *o = op;                                                                                    \
        P3_EACH_WINDOW(g, {                                                                           \
            if (cells <= 0) { o[oat] = 0; continue; }                                                 \
            T acc = 0;                                                                                \
            bool first = true;                                                                        \
            P3_CELLS(g, xi, {                                                                         \
                const T v = x[xi];                                                                    \
                if (!g.is_max) acc += v;                                                              \
                else if (first || v > acc || (v != v && acc == acc)) acc = v;                         \
                first = false;                                                                        \
            })                                                                                        \
            o[oat] = g.is_max ? acc : (T)(acc / div);                                                 \
        })                                                                                            \
        return OAR_OK;                                                                                \
    }                                                                                                 \
    static int p3_bwd_##SUF(oar_kernel_ctx_t *k)                                                      \
    {                                                                                                 \
        oar_tensor_t *xt = oar_k_input(k, OAR_POOL3DG_X, 0);                                          \
        oar_tensor_t *ot = oar_k_input(k, OAR_POOL3DG_OUT_IN, 0), *gt = oar_k_input(k, OAR_POOL3DG_DOUT, 0); \
        p3_geom_t g;                                                                                  \
        OAR_TRY(p3_setup(k, xt, &g));                                                                 \
        const int64_t on = g.n * g.c * g.out[0] * g.out[1] * g.out[2];                                \
        if (oar_tensor_numel_of(ot) != on || oar_tensor_numel_of(gt) != on)                           \
            return oar_k_error(k, OAR_ERR_SHAPE, "Out and Out@GRAD must hold %lld values", (long long)on); \
        void *dp;                                                                                     \
        OAR_TRY(oar_k_output_sized(k, OAR_POOL3DG_DX, "X@GRAD", DT, oar_tensor_numel_of(xt), true, &dp)); \
        if (!dp) return OAR_OK;                                                                       \
        const T *x = oar_tensor_data(xt), *o = oar_tensor_data(ot), *dy = oar_tensor_data(gt);       \
        T *dx = dp;                                                                                   \
        memset(dx, 0, sizeof(T) * (size_t)oar_tensor_numel_of(xt));                                   \
        P3_EACH_WINDOW(g, {                                                                           \
            if (cells <= 0) continue;                                                                 \
            const T m = o[oat];                                                                       \
            bool done = false;                                                                        \
            P3_CELLS(g, xi, {                                                                         \
                if (!g.is_max) dx[xi] += (T)(dy[oat] / div);                                          \
                else if (!done && (x[xi] == m || (m != m && x[xi] != x[xi]))) {                       \
                    dx[xi] += dy[oat];                                                                \
                    done = true;                                                                      \
                }                                                                                     \
            })                                                                                        \
        })                                                                                            \
        return OAR_OK;                                                                                \
    }                                                                                                 \
    OAR_REGISTER_KERNEL("pool3d", OAR_PLACE_CPU, DT, p3_fwd_##SUF)                                    \
    OAR_REGISTER_KERNEL("pool3d_grad", OAR_PLACE_CPU, DT, p3_bwd_##SUF)

P3_KERNELS(float, f32, OAR_FP32)
P3_KERNELS(double, f64, OAR_FP64)
