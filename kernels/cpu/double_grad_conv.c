/* double_grad_conv.c — CPU kernels of conv2d_grad_grad,
 * depthwise_conv2d_grad_grad (declared in src/ops/conv.ops) and
 * conv3d_grad_grad (src/ops/conv3d.ops) by direct loops over (image,
 * output channel, output voxel, tap): the three products a double grad
 * needs are a forward convolution (DDOutput), an input gradient (DInput)
 * and a filter gradient (DFilter) of the same geometry as the forward's
 * (window.h resolves conv2d's padding_algorithm, conv3d_util.h conv3d's).
 * One kernel serves both ranks: a 2-D convolution is a 3-D one of depth 1
 * (kernel depth 1, stride 1, no depth padding). Second-order gradients are
 * for small models (gradient penalties); the first-order kernels keep the
 * im2col / vol2col + GEMM path. */
#include <string.h>
#include "op.h"
#include "double_grad_io.h"
#include "ops/conv.h"
#include "ops/conv3d_util.h"
#include "ops/window.h"

/* conv3d_grad_grad's slots are conv2d_grad_grad's, in the same order */
_Static_assert((int)OAR_CONV3DGG_INPUT == OAR_CONVGG_INPUT && (int)OAR_CONV3DGG_FILTER == OAR_CONVGG_FILTER &&
               (int)OAR_CONV3DGG_DOUTPUT == OAR_CONVGG_DOUTPUT && (int)OAR_CONV3DGG_DDINPUT == OAR_CONVGG_DDINPUT &&
               (int)OAR_CONV3DGG_DDFILTER == OAR_CONVGG_DDFILTER && (int)OAR_CONV3DGG_DDOUTPUT == OAR_CONVGG_DDOUTPUT &&
               (int)OAR_CONV3DGG_DFILTER == OAR_CONVGG_DFILTER && (int)OAR_CONV3DGG_DINPUT == OAR_CONVGG_DINPUT,
               "conv3d_grad_grad's slots must be conv2d_grad_grad's");

/* sizes as [depth, height, width]; pf/pt/pl: front, top, left padding */
typedef struct gg_geom {
    int64_t n, c, d, h, w, m, kd, kh, kw, od, oh, ow, groups, cg, mg;
    int64_t sd, sh, sw, dd, dh, dw, pf, pt, pl;
    bool cl;   /* channels last (NHWC, NDHWC) */
} gg_geom_t;

/* groups, per-group channels, and DOutput's dims against the output's */
static int gg_finish(oar_kernel_ctx_t *k, const oar_tensor_t *dy, gg_geom_t *g)
{
    if (g->groups < 1 || g->c % g->groups != 0 || g->m % g->groups != 0)
        return oar_k_error(k, OAR_ERR_SHAPE, "Input's channels %lld and Filter's %lld do not split into %lld groups",
                           (long long)g->c, (long long)g->m, (long long)g->groups);
    g->cg = g->c / g->groups; g->mg = g->m / g->groups;
    const int r = dy->ndim;
    const int64_t want_sp[3] = { g->od, g->oh, g->ow };
    bool ok = dy->dims[0] == g->n && dy->dims[g->cl ? r - 1 : 1] == g->m;
    for (int i = 0; ok && i < r - 2; i++) ok = dy->dims[(g->cl ? 1 : 2) + i] == want_sp[3 - (r - 2) + i];
    if (!ok) return oar_k_error(k, OAR_ERR_SHAPE, "DOutput's shape does not match the convolution's output");
    return OAR_OK;
}

static int gg_setup2(oar_kernel_ctx_t *k, const oar_tensor_t *x, const oar_tensor_t *f, const oar_tensor_t *dy,
                     gg_geom_t *g)
{
    const oar_conv_attrs_t *a = oar_k_attrs(k);
    if (x->ndim != 4 || f->ndim != 4 || dy->ndim != 4)
        return oar_k_error(k, OAR_ERR_SHAPE, "Input, Filter and DOutput must be 4-D");
    g->cl = a->nhwc;
    g->n = x->dims[0];
    g->c = a->nhwc ? x->dims[3] : x->dims[1];
    g->d = 1;
    g->h = a->nhwc ? x->dims[1] : x->dims[2];
    g->w = a->nhwc ? x->dims[2] : x->dims[3];
    g->m = f->dims[0]; g->kd = 1; g->kh = f->dims[2]; g->kw = f->dims[3];
    g->groups = a->groups;
    if (g->groups < 1 || g->c != f->dims[1] * g->groups)
        return oar_k_error(k, OAR_ERR_SHAPE, "Input's channels %lld, Filter's %lld x groups %lld do not agree",
                           (long long)g->c, (long long)f->dims[1], (long long)g->groups);
    const int64_t in_hw[2] = { g->h, g->w }, st[2] = { a->st[0], a->st[1] }, dl[2] = { a->dl[0], a->dl[1] };
    const int64_t pd[4] = { a->pd[0], a->pd[1], a->pd[2], a->pd[3] };
    oar_conv_win_t cw;
    if (oar_win_conv_plan(a->algo, in_hw, &f->dims[2], st, dl, pd, &cw) != OAR_WIN_OK)
        return oar_k_error(k, OAR_ERR_SHAPE, "the convolution's output would be empty or overflow");
    g->od = 1; g->oh = cw.out[0]; g->ow = cw.out[1];
    g->sd = 1; g->sh = cw.st[0]; g->sw = cw.st[1];
    g->dd = 1; g->dh = cw.dl[0]; g->dw = cw.dl[1];
    g->pf = 0; g->pt = cw.pd[0]; g->pl = cw.pd[2];
    return gg_finish(k, dy, g);
}

static int gg_setup3(oar_kernel_ctx_t *k, const oar_tensor_t *x, const oar_tensor_t *f, const oar_tensor_t *dy,
                     gg_geom_t *g)
{
    const oar_conv3d_attrs_t *a = oar_k_attrs(k);
    if (x->ndim != 5 || f->ndim != 5 || dy->ndim != 5)
        return oar_k_error(k, OAR_ERR_SHAPE, "Input, Filter and DOutput must be 5-D");
    oar_c3_geom_t c3;
    char why[320];
    int rc = oar_c3_conv_geometry(a, x->dims, 5, f->dims, 5, "Input", "Filter", &c3, why, sizeof why);
    if (rc != OAR_OK) return oar_k_error(k, rc, "%s", why);
    g->cl = c3.cl;
    g->n = c3.n; g->c = c3.c; g->m = c3.m; g->groups = c3.groups;
    g->d = c3.vin[0]; g->h = c3.vin[1]; g->w = c3.vin[2];
    g->kd = c3.k[0]; g->kh = c3.k[1]; g->kw = c3.k[2];
    g->od = c3.vout[0]; g->oh = c3.vout[1]; g->ow = c3.vout[2];
    g->sd = c3.st[0]; g->sh = c3.st[1]; g->sw = c3.st[2];
    g->dd = c3.dl[0]; g->dh = c3.dl[1]; g->dw = c3.dl[2];
    g->pf = c3.pd[0]; g->pt = c3.pd[2]; g->pl = c3.pd[4];
    return gg_finish(k, dy, g);
}

/* BODY for every (input offset xi, filter offset wi, output offset yi) that
 * meet in the convolution */
#define TAPS(G, ...)                                                                                  \
    for (int64_t n_ = 0; n_ < (G)->n; n_++)                                                          \
        for (int64_t m_ = 0; m_ < (G)->m; m_++) {                                                    \
            const int64_t c0_ = (m_ / (G)->mg) * (G)->cg;                                            \
            for (int64_t oz_ = 0; oz_ < (G)->od; oz_++)                                              \
                for (int64_t oy_ = 0; oy_ < (G)->oh; oy_++)                                          \
                    for (int64_t ox_ = 0; ox_ < (G)->ow; ox_++) {                                    \
                        const int64_t sp_ = (oz_ * (G)->oh + oy_) * (G)->ow + ox_;                   \
                        const int64_t osz_ = (G)->od * (G)->oh * (G)->ow;                            \
                        const int64_t yi = (G)->cl ? (n_ * osz_ + sp_) * (G)->m + m_                 \
                                                   : (n_ * (G)->m + m_) * osz_ + sp_;                \
                        for (int64_t cc_ = 0; cc_ < (G)->cg; cc_++)                                  \
                            for (int64_t kz_ = 0; kz_ < (G)->kd; kz_++) {                            \
                                const int64_t iz_ = oz_ * (G)->sd - (G)->pf + kz_ * (G)->dd;         \
                                if (iz_ < 0 || iz_ >= (G)->d) continue;                              \
                                for (int64_t ky_ = 0; ky_ < (G)->kh; ky_++) {                        \
                                    const int64_t iy_ = oy_ * (G)->sh - (G)->pt + ky_ * (G)->dh;     \
                                    if (iy_ < 0 || iy_ >= (G)->h) continue;                          \
                                    for (int64_t kx_ = 0; kx_ < (G)->kw; kx_++) {                    \
                                        const int64_t ix_ = ox_ * (G)->sw - (G)->pl + kx_ * (G)->dw; \
                                        if (ix_ < 0 || ix_ >= (G)->w) continue;                      \
                                        const int64_t c_ = c0_ + cc_;                                \
                                        const int64_t isp_ = (iz_ * (G)->h + iy_) * (G)->w + ix_;    \
                                        const int64_t isz_ = (G)->d * (G)->h * (G)->w;               \
                                        const int64_t xi = (G)->cl ? (n_ * isz_ + isp_) * (G)->c + c_ \
                                                                   : (n_ * (G)->c + c_) * isz_ + isp_; \
                                        const int64_t wi =                                           \
                                            (((m_ * (G)->cg + cc_) * (G)->kd + kz_) * (G)->kh + ky_) * (G)->kw + kx_; \
                                        __VA_ARGS__                                                  \
                                    }                                                                \
                                }                                                                    \
                            }                                                                        \
                    }                                                                                \
        }

#define CONV_GG(NAME, T, DT, SETUP)                                                                          \
    static int NAME(oar_kernel_ctx_t *k)                                                             \
    {                                                                                                \
        oar_tensor_t *xt = oar_k_input(k, OAR_CONVGG_INPUT, 0), *ft = oar_k_input(k, OAR_CONVGG_FILTER, 0); \
        oar_tensor_t *gt = oar_k_input(k, OAR_CONVGG_DOUTPUT, 0);                                    \
        gg_geom_t g;                                                                                 \
        OAR_TRY(SETUP(k, xt, ft, gt, &g));                                                        \
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

CONV_GG(conv_gg_f32, float, OAR_FP32, gg_setup2)
CONV_GG(conv_gg_f64, double, OAR_FP64, gg_setup2)
CONV_GG(conv3d_gg_f32, float, OAR_FP32, gg_setup3)
CONV_GG(conv3d_gg_f64, double, OAR_FP64, gg_setup3)
OAR_REGISTER_KERNEL("conv2d_grad_grad", OAR_PLACE_CPU, OAR_FP32, conv_gg_f32)
OAR_REGISTER_KERNEL("conv2d_grad_grad", OAR_PLACE_CPU, OAR_FP64, conv_gg_f64)
static int dw_gg_f32(oar_kernel_ctx_t *k) { return conv_gg_f32(k); }
static int dw_gg_f64(oar_kernel_ctx_t *k) { return conv_gg_f64(k); }
OAR_REGISTER_KERNEL("depthwise_conv2d_grad_grad", OAR_PLACE_CPU, OAR_FP32, dw_gg_f32)
OAR_REGISTER_KERNEL("depthwise_conv2d_grad_grad", OAR_PLACE_CPU, OAR_FP64, dw_gg_f64)
OAR_REGISTER_KERNEL("conv3d_grad_grad", OAR_PLACE_CPU, OAR_FP32, conv3d_gg_f32)
OAR_REGISTER_KERNEL("conv3d_grad_grad", OAR_PLACE_CPU, OAR_FP64, conv3d_gg_f64)
