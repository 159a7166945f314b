/* deform_conv.c — CPU kernels of deformable_conv (v2), deformable_conv_v1
 * and their grads (float32, float64).
 *
 * Per image: col [C kh kw, OH OW] holds each tap's bilinear sample of Input
 * at its regular place plus Offset (0 outside: a point at or beyond -1 or
 * the size reads nothing; corners outside read 0), times Mask (v2); then
 * Output_g = Filter_g col_g per group through oar_gemm. The grads: dcol_g =
 * Filter_g^T dOutput_g; Input@GRAD takes dcol mask times the bilinear
 * weights at the in-bounds corners; Offset@GRAD and Mask@GRAD sum, over the
 * deformable group's channels, dcol times the sample's slopes (times mask)
 * and the sample; Filter@GRAD += dOutput_g col_g^T. Images, groups and
 * channels run in a fixed order (one thread besides oar_gemm's shape-fixed
 * blocks), so every sum is deterministic. */
#include <math.h>
#include <string.h>
#include "op.h"
#include "ops/deform_conv.h"
#include "gemm.h"
#include "scratch.h"

typedef struct {
    int64_t n, c, h, w, m, kh, kw, oh, ow, groups, dg;
    int64_t st[2], pd[2], dl[2];
    bool v2;
    int s_filter, s_dout;   /* input slots of Filter and (grad) Output@GRAD */
} dc_geom_t;

static int dc_setup(oar_kernel_ctx_t *k, dc_geom_t *g, oar_tensor_t **x, oar_tensor_t **off, oar_tensor_t **mask,
                    oar_tensor_t **f) {
    const oar_dc_attrs_t *a = oar_k_attrs(k);
    g->v2 = a->v2;
    g->s_filter = a->v2 ? 3 : 2;
    g->s_dout = a->v2 ? 4 : 3;
    *x = oar_k_input(k, 0, 0);
    *off = oar_k_input(k, 1, 0);
    *mask = a->v2 ? oar_k_input(k, 2, 0) : NULL;
    *f = oar_k_input(k, g->s_filter, 0);
    if (!*x || !*off || !*f || (a->v2 && !*mask))
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "Input, Offset, Filter (and Mask for v2) are required");
    if ((*x)->ndim != 4 || (*f)->ndim != 4)
        return oar_k_error(k, OAR_ERR_SHAPE, "Input and Filter must be 4-D");
    g->n = (*x)->dims[0]; g->c = (*x)->dims[1]; g->h = (*x)->dims[2]; g->w = (*x)->dims[3];
    g->m = (*f)->dims[0]; g->kh = (*f)->dims[2]; g->kw = (*f)->dims[3];
    g->groups = a->groups; g->dg = a->deformable_groups;
    for (int i = 0; i < 2; i++) { g->st[i] = a->st[i]; g->pd[i] = a->pd[i]; g->dl[i] = a->dl[i]; }
    g->oh = (g->h + 2 * g->pd[0] - (g->dl[0] * (g->kh - 1) + 1)) / g->st[0] + 1;
    g->ow = (g->w + 2 * g->pd[1] - (g->dl[1] * (g->kw - 1) + 1)) / g->st[1] + 1;
    const int64_t kk = g->kh * g->kw, P = g->oh * g->ow;
    if (g->c != (*f)->dims[1] * g->groups || g->c % g->dg != 0 || g->m % g->groups != 0 ||
        oar_tensor_numel(*off) != g->n * 2 * g->dg * kk * P || (*mask && oar_tensor_numel(*mask) != g->n * g->dg * kk * P))
        return oar_k_error(k, OAR_ERR_SHAPE, "Input, Offset, Mask and Filter do not fit one another");
    return OAR_OK;
}

/* the value of image plane im [h, w] at (y, x), bilinear, with its slopes
 * d/dy and d/dx; 0 (and no slope) at or beyond -1 and the size */
static double dc_sample(int64_t h, int64_t w, double y, double x, double *dy, double *dx,
                        double (*at)(const void *, int64_t), const void *im) {
    *dy = *dx = 0;
    /* written positively so that a NaN point reads nothing too */
    if (!(y > -1 && x > -1 && y < (double)h && x < (double)w)) return 0;
    const int64_t y0 = (int64_t)floor(y), x0 = (int64_t)floor(x), y1 = y0 + 1, x1 = x0 + 1;
    const double ly = y - (double)y0, lx = x - (double)x0, hy = 1 - ly, hx = 1 - lx;
    const double v1 = (y0 >= 0 && x0 >= 0) ? at(im, y0 * w + x0) : 0;
    const double v2 = (y0 >= 0 && x1 <= w - 1) ? at(im, y0 * w + x1) : 0;
    const double v3 = (y1 <= h - 1 && x0 >= 0) ? at(im, y1 * w + x0) : 0;
    const double v4 = (y1 <= h - 1 && x1 <= w - 1) ? at(im, y1 * w + x1) : 0;
    *dy = -hx * v1 - lx * v2 + hx * v3 + lx * v4;
    *dx = -hy * v1 + hy * v2 - ly * v3 + ly * v4;
    return hy * hx * v1 + hy * lx * v2 + ly * hx * v3 + ly * lx * v4;
}

static double at_f32(const void *p, int64_t i) { return ((const float *)p)[i]; }
static double at_f64(const void *p, int64_t i) { return ((const double *)p)[i]; }

/* the sampling point of tap (i, j) at output (y, x) for deformable group d of image n */
#define DC_POINT(g, off, n, d, i, j, y, x, PY, PX)                                                      \
    const int64_t tap_ = (i) * (g).kw + (j);                                                            \
    const int64_t obase_ = (((n) * (g).dg + (d)) * 2 * (g).kh * (g).kw + 2 * tap_) * (g).oh * (g).ow;   \
    const double PY = (double)((y) * (g).st[0] - (g).pd[0] + (i) * (g).dl[0]) +                         \
                      (double)(off)[obase_ + (y) * (g).ow + (x)];                                       \
    const double PX = (double)((x) * (g).st[1] - (g).pd[1] + (j) * (g).dl[1]) +                         \
                      (double)(off)[obase_ + (g).oh * (g).ow + (y) * (g).ow + (x)];

#define DC_KERNELS(T, SUF, DT)                                                                          \
    /* col [C kh kw, OH OW] of image n */                                                               \
    static void dc_col_##SUF(const dc_geom_t *g, int64_t n, const T *x, const T *off, const T *mask, T *col) \
    {                                                                                                   \
        const int64_t P = g->oh * g->ow, cpg = g->c / g->dg;                                            \
        for (int64_t c = 0; c < g->c; c++) {                                                            \
            const int64_t d = c / cpg;                                                                  \
            const T *im = x + (n * g->c + c) * g->h * g->w;                                             \
            for (int64_t i = 0; i < g->kh; i++)                                                         \
                for (int64_t j = 0; j < g->kw; j++)                                                     \
                    for (int64_t y = 0; y < g->oh; y++)                                                 \
                        for (int64_t xo = 0; xo < g->ow; xo++) {                                       \
                            DC_POINT(*g, off, n, d, i, j, y, xo, py, px)                                \
                            double sy, sx;                                                              \
                            double v = dc_sample(g->h, g->w, py, px, &sy, &sx, at_##SUF, im);     \
                            if (mask) v *= (double)mask[((n * g->dg + d) * g->kh * g->kw + tap_) * P + y * g->ow + xo]; \
                            col[((c * g->kh + i) * g->kw + j) * P + y * g->ow + xo] = (T)v;             \
                        }                                                                               \
        }                                                                                               \
    }                                                                                                   \
    static int dc_fwd_##SUF(oar_kernel_ctx_t *k)                                                        \
    {                                                                                                   \
        dc_geom_t g;                                                                                    \
        oar_tensor_t *xt, *ot, *mt, *ft;                                                                \
        OAR_TRY(dc_setup(k, &g, &xt, &ot, &mt, &ft));                                                   \
        const int64_t P = g.oh * g.ow, kg = g.c / g.groups * g.kh * g.kw, mg = g.m / g.groups;          \
        void *yv;                                                                                       \
        OAR_TRY(oar_k_output_sized(k, OAR_DC_OUTPUT, "Output", DT, g.n * g.m * P, false, &yv));         \
        T *col = oar_scratch_alloc(sizeof(T) * (size_t)(g.c * g.kh * g.kw * P + 1));                    \
        if (!col) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate the column buffer");            \
        const T *x = oar_tensor_data(xt), *off = oar_tensor_data(ot), *mask = mt ? oar_tensor_data(mt) : NULL; \
        const T *w = oar_tensor_data(ft);                                                               \
        T *y = yv;                                                                                      \
        for (int64_t n = 0; n < g.n; n++) {                                                             \
            dc_col_##SUF(&g, n, x, off, mask, col);                                                     \
            for (int64_t gr = 0; gr < g.groups; gr++)                                                   \
                oar_gemm(DT, oar_gemm_threads(mg * P * kg), false, false, mg, P, kg, 1.0, w + gr * mg * kg, kg, \
                         col + gr * kg * P, P, 0.0, y + (n * g.m + gr * mg) * P, P);                    \
        }                                                                                               \
        oar_scratch_free(col);                                                                          \
        return OAR_OK;                                                                                  \
    }                                                                                                   \
    static int dc_bwd_##SUF(oar_kernel_ctx_t *k)                                                        \
    {                                                                                                   \
        dc_geom_t g;                                                                                    \
        oar_tensor_t *xt, *ot, *mt, *ft;                                                                \
        OAR_TRY(dc_setup(k, &g, &xt, &ot, &mt, &ft));                                                   \
        const int64_t P = g.oh * g.ow, kk = g.kh * g.kw, kg = g.c / g.groups * kk, mg = g.m / g.groups;  \
        const int64_t cpg = g.c / g.dg;                                                                 \
        const void *dyv;                                                                                \
        OAR_TRY(oar_k_input_sized(k, g.s_dout, "Output@GRAD", DT, g.n * g.m * P, &dyv));                \
        void *dxv, *doffv, *dmv = NULL, *dwv;                                                           \
        OAR_TRY(oar_k_output_sized(k, 0, "Input@GRAD", DT, oar_tensor_numel(xt), true, &dxv));          \
        OAR_TRY(oar_k_output_sized(k, 1, "Offset@GRAD", DT, oar_tensor_numel(ot), true, &doffv));       \
        if (g.v2) OAR_TRY(oar_k_output_sized(k, 2, "Mask@GRAD", DT, oar_tensor_numel(mt), true, &dmv));  \
        OAR_TRY(oar_k_output_sized(k, g.v2 ? 3 : 2, "Filter@GRAD", DT, oar_tensor_numel(ft), true, &dwv)); \
        T *dx = dxv, *doff = doffv, *dm = dmv, *dw = dwv;                                               \
        if (dx) memset(dx, 0, sizeof(T) * (size_t)oar_tensor_numel(xt));                                \
        if (doff) memset(doff, 0, sizeof(T) * (size_t)oar_tensor_numel(ot));                            \
        if (dm) memset(dm, 0, sizeof(T) * (size_t)oar_tensor_numel(mt));                                \
        if (dw) memset(dw, 0, sizeof(T) * (size_t)oar_tensor_numel(ft));                                \
        T *col = oar_scratch_alloc(sizeof(T) * (size_t)(2 * g.c * kk * P + 1));                         \
        if (!col) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate the column buffers");           \
        T *dcol = col + g.c * kk * P;                                                                   \
        const T *x = oar_tensor_data(xt), *off = oar_tensor_data(ot), *mask = mt ? oar_tensor_data(mt) : NULL; \
        const T *w = oar_tensor_data(ft), *dy = dyv;                                                    \
        for (int64_t n = 0; n < g.n; n++) {                                                             \
            if (dw) {                                                                                   \
                dc_col_##SUF(&g, n, x, off, mask, col);                                                 \
                for (int64_t gr = 0; gr < g.groups; gr++)                                               \
                    oar_gemm(DT, oar_gemm_threads(mg * P * kg), false, true, mg, kg, P, 1.0,            \
                             dy + (n * g.m + gr * mg) * P, P, col + gr * kg * P, P, 1.0, dw + gr * mg * kg, kg); \
            }                                                                                           \
            if (!dx && !doff && !dm) continue;                                                          \
            for (int64_t gr = 0; gr < g.groups; gr++)                                                   \
                oar_gemm(DT, oar_gemm_threads(mg * P * kg), true, false, kg, P, mg, 1.0, w + gr * mg * kg, kg, \
                         dy + (n * g.m + gr * mg) * P, P, 0.0, dcol + gr * kg * P, P);                  \
            for (int64_t c = 0; c < g.c; c++) {                                                         \
                const int64_t d = c / cpg;                                                              \
                const T *im = x + (n * g.c + c) * g.h * g.w;                                            \
                for (int64_t i = 0; i < g.kh; i++)                                                      \
                    for (int64_t j = 0; j < g.kw; j++)                                                  \
                        for (int64_t y = 0; y < g.oh; y++)                                              \
                            for (int64_t xo = 0; xo < g.ow; xo++) {                                     \
                                DC_POINT(g, off, n, d, i, j, y, xo, py, px)                             \
                                const int64_t mi = ((n * g.dg + d) * kk + tap_) * P + y * g.ow + xo;    \
                                const double mv = mask ? (double)mask[mi] : 1.0;                        \
                                const double gcol = (double)dcol[((c * g.kh + i) * g.kw + j) * P + y * g.ow + xo]; \
                                double sy, sx;                                                          \
                                const double v = dc_sample(g.h, g.w, py, px, &sy, &sx, at_##SUF, im); \
                                if (dm) dm[mi] += (T)(gcol * v);                                        \
                                if (doff) {                                                             \
                                    doff[obase_ + y * g.ow + xo] += (T)(gcol * mv * sy);                \
                                    doff[obase_ + P + y * g.ow + xo] += (T)(gcol * mv * sx);            \
                                }                                                                       \
                                if (dx && py > -1 && px > -1 && py < (double)g.h && px < (double)g.w) { \
                                    const int64_t y0 = (int64_t)floor(py), x0 = (int64_t)floor(px);     \
                                    const double ly = py - (double)y0, lx = px - (double)x0;            \
                                    T *dxi = dx + (n * g.c + c) * g.h * g.w;                            \
                                    for (int q = 0; q < 4; q++) {                                       \
                                        const int64_t yy = y0 + (q >> 1), xx = x0 + (q & 1);            \
                                        if (yy < 0 || yy >= g.h || xx < 0 || xx >= g.w) continue;       \
                                        const double wq = ((q >> 1) ? ly : 1 - ly) * ((q & 1) ? lx : 1 - lx); \
                                        dxi[yy * g.w + xx] += (T)(gcol * mv * wq);                      \
                                    }                                                                   \
                                }                                                                       \
                            }                                                                           \
            }                                                                                           \
        }                                                                                               \
        oar_scratch_free(col);                                                                          \
        return OAR_OK;                                                                                  \
    }                                                                                                   \
    OAR_REGISTER_KERNEL("deformable_conv", OAR_PLACE_CPU, DT, dc_fwd_##SUF)                             \
    OAR_REGISTER_KERNEL("deformable_conv_grad", OAR_PLACE_CPU, DT, dc_bwd_##SUF)                        \
    static int dc1_fwd_##SUF(oar_kernel_ctx_t *k) { return dc_fwd_##SUF(k); }                           \
    static int dc1_bwd_##SUF(oar_kernel_ctx_t *k) { return dc_bwd_##SUF(k); }                           \
    OAR_REGISTER_KERNEL("deformable_conv_v1", OAR_PLACE_CPU, DT, dc1_fwd_##SUF)                         \
    OAR_REGISTER_KERNEL("deformable_conv_v1_grad", OAR_PLACE_CPU, DT, dc1_bwd_##SUF)

DC_KERNELS(float, f32, OAR_FP32)
DC_KERNELS(double, f64, OAR_FP64)
