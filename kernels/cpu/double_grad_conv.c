/* double_grad_conv.c — CPU kernels of conv2d_grad_grad and
 * depthwise_conv2d_grad_grad (declared in src/ops/conv.ops) by direct
 * loops over (image, output channel, output pixel, tap): the three products
 * a double grad needs are a forward convolution (DDOutput), an input
 * gradient (DInput) and a filter gradient (DFilter) of the same geometry as
 * conv2d's (window.h resolves padding_algorithm). Second-order gradients
 * are for small models (gradient penalties); the first-order kernels keep
 * the im2col + GEMM path. */
#include <string.h>
#include "op.h"
#include "double_grad_io.h"
#include "ops/conv.h"
#include "ops/window.h"

typedef struct gg_geom {
    int64_t n, c, h, w, m, kh, kw, oh, ow, groups, cg, mg;
    int64_t sh, sw, dh, dw, pt, pl;
    bool nhwc;
} gg_geom_t;

static int gg_setup(oar_kernel_ctx_t *k, const oar_tensor_t *x, const oar_tensor_t *f, const oar_tensor_t *dy,
                    gg_geom_t *g)
{
    const oar_conv_attrs_t *a = oar_k_attrs(k);
    if (x->ndim != 4 || f->ndim != 4 || dy->ndim != 4)
        return oar_k_error(k, OAR_ERR_SHAPE, "Input, Filter and DOutput must be 4-D");
    g->nhwc = a->nhwc;
    g->n = x->dims[0];
    g->c = a->nhwc ? x->dims[3] : x->dims[1];
    g->h = a->nhwc ? x->dims[1] : x->dims[2];
    g->w = a->nhwc ? x->dims[2] : x->dims[3];
    g->m = f->dims[0]; g->kh = f->dims[2]; g->kw = f->dims[3];
    g->groups = a->groups;
    if (g->groups < 1 || g->c != f->dims[1] * g->groups || g->m % g->groups != 0)
        return oar_k_error(k, OAR_ERR_SHAPE, "Input's channels %lld, Filter's %lld x groups %lld do not agree",
                           (long long)g->c, (long long)f->dims[1], (long long)g->groups);
    const int64_t in_hw[2] = { g->h, g->w }, st[2] = { a->st[0], a->st[1] }, dl[2] = { a->dl[0], a->dl[1] };
    const int64_t pd[4] = { a->pd[0], a->pd[1], a->pd[2], a->pd[3] };
    oar_conv_win_t cw;
    if (oar_win_conv_plan(a->algo, in_hw, &f->dims[2], st, dl, pd, &cw) != OAR_WIN_OK)
        return oar_k_error(k, OAR_ERR_SHAPE, "the convolution's output would be empty or overflow");
    g->oh = cw.out[0]; g->ow = cw.out[1];
    const int64_t doh = a->nhwc ? dy->dims[1] : dy->dims[2], dow = a->nhwc ? dy->dims[2] : dy->dims[3];
    const int64_t dm = a->nhwc ? dy->dims[3] : dy->dims[1];
    if (dy->dims[0] != g->n || dm != g->m || doh != g->oh || dow != g->ow)
        return oar_k_error(k, OAR_ERR_SHAPE, "DOutput's shape does not match the convolution's output");
    g->cg = g->c / g->groups; g->mg = g->m / g->groups;
    g->sh = cw.st[0]; g->sw = cw.st[1]; g->dh = cw.dl[0]; g->dw = cw.dl[1];
    g->pt = cw.pd[0]; g->pl = cw.pd[2];
    return OAR_OK;
}

/* BODY for every (input offset xi, filter offset wi, output offset yi) that
 * meet in the convolution */
#define TAPS(G, ...)                                                                                 \
    for (int64_t n_ = 0; n_ < (G)->n; n_++)                                                         \
        for (int64_t m_ = 0; m_ < (G)->m; m_++) {                                                   \
            const int64_t c0_ = (m_ / (G)->mg) * (G)->cg;                                           \
            for (int64_t oy_ = 0; oy_ < (G)->oh; oy_++)                                             \
                for (int64_t ox_ = 0; ox_ < (G)->ow; ox_++) {                                       \
                    const int64_t yi = (G)->nhwc ? ((n_ * (G)->oh + oy_) * (G)->ow + ox_) * (G)->m + m_ \
                                                 : ((n_ * (G)->m + m_) * (G)->oh + oy_) * (G)->ow + ox_; \
                    for (int64_t cc_ = 0; cc_ < (G)->cg; cc_++)                                     \
                        for (int64_t ky_ = 0; ky_ < (G)->kh; ky_++) {                               \
                            const int64_t iy_ = oy_ * (G)->sh - (G)->pt + ky_ * (G)->dh;            \
                            if (iy_ < 0 || iy_ >= (G)->h) continue;                                 \
                            for (int64_t kx_ = 0; kx_ < (G)->kw; kx_++) {                           \
                                const int64_t ix_ = ox_ * (G)->sw - (G)->pl + kx_ * (G)->dw;        \
                                if (ix_ < 0 || ix_ >= (G)->w) continue;                             \
                                const int64_t c_ = c0_ + cc_;                                       \
                                const int64_t xi = (G)->nhwc                                        \
                                    ? ((n_ * (G)->h + iy_) * (G)->w + ix_) * (G)->c + c_            \
                                    : ((n_ * (G)->c + c_) * (G)->h + iy_) * (G)->w + ix_;           \
                                const int64_t wi = ((m_ * (G)->cg + cc_) * (G)->kh + ky_) * (G)->kw + kx_; \
                                __VA_ARGS__                                                         \
                            }                                                                       \
                        }                                                                           \
                }                                                                                   \
        }

#define CONV_GG(NAME, T, DT)                                                                          \
    static int NAME(oar_kernel_ctx_t *k)                                                             \
    {                                                                                                \
        oar_tensor_t *xt = oar_k_input(k, OAR_CONVGG_INPUT, 0), *ft = oar_k_input(k, OAR_CONVGG_FILTER, 0); \
        oar_tensor_t *gt = oar_k_input(k, OAR_CONVGG_DOUTPUT, 0);                                    \
        gg_geom_t g;                                                                                 \
        OAR_TRY(gg_setup(k, xt, ft, gt, &g));                                                        \
        const int64_t xn = oar_tensor_numel(xt), fn = oar_tensor_numel(ft), yn = oar_tensor_numel(gt); \
        const T *x = oar_tensor_data(xt), *f = oar_tensor_data(ft), *dy = oar_tensor_data(gt), *ddx, *ddf; \
        OAR_TRY(opt_in(k, OAR_CONVGG_DDINPUT, "DDInput", DT, xn, (const void **)&ddx));              \
        OAR_TRY(opt_in(k, OAR_CONVGG_DDFILTER, "DDFilter", DT, fn, (const void **)&ddf));            \
        void *a = NULL, *b = NULL, *c = NULL;                                                        \
        OAR_TRY(zeroed(k, OAR_CONVGG_DDOUTPUT, "DDOutput", DT, sizeof(T), yn, &a));                  \
        OAR_TRY(zeroed(k, OAR_CONVGG_DFILTER, "DFilter", DT, sizeof(T), fn, &b));                    \
        OAR_TRY(zeroed(k, OAR_CONVGG_DINPUT, "DInput", DT, sizeof(T), xn, &c));                      \
        T *ddy = a, *df = b, *dx = c;                                                                \
        TAPS(&g, {                                                                                   \
            if (ddy) ddy[yi] += (ddx ? ddx[xi] * f[wi] : (T)0) + (ddf ? x[xi] * ddf[wi] : (T)0);     \
            if (df && ddx) df[wi] += ddx[xi] * dy[yi];                                               \
            if (dx && ddf) dx[xi] += ddf[wi] * dy[yi];                                               \
        })                                                                                           \
        return OAR_OK;                                                                               \
    }

CONV_GG(conv_gg_f32, float, OAR_FP32)
CONV_GG(conv_gg_f64, double, OAR_FP64)
OAR_REGISTER_KERNEL("conv2d_grad_grad", OAR_PLACE_CPU, OAR_FP32, conv_gg_f32)
OAR_REGISTER_KERNEL("conv2d_grad_grad", OAR_PLACE_CPU, OAR_FP64, conv_gg_f64)
static int dw_gg_f32(oar_kernel_ctx_t *k) { return conv_gg_f32(k); }
static int dw_gg_f64(oar_kernel_ctx_t *k) { return conv_gg_f64(k); }
OAR_REGISTER_KERNEL("depthwise_conv2d_grad_grad", OAR_PLACE_CPU, OAR_FP32, dw_gg_f32)
OAR_REGISTER_KERNEL("depthwise_conv2d_grad_grad", OAR_PLACE_CPU, OAR_FP64, dw_gg_f64)
