/* vision_sample.c — CPU kernels of affine_grid, grid_sampler and their
 * grads (float32, float64). One thread; the gradients sum in one fixed
 * order. */
#include <math.h>
#include <string.h>
#include "op.h"
#include "ops/vision_sample.h"

/* the i-th of n points from -1 to 1: align_corners, the corners; else the
 * pixel centres. One point is 0 (the centre). */
static double ag_lin(int64_t i, int64_t n, bool align) {
    if (n == 1) return 0.0;
    const double v = -1.0 + 2.0 * (double)i / (double)(n - 1);
    return align ? v : v * (double)(n - 1) / (double)n;
}

/* grid coordinate -> pixel coordinate along a dim of size n, and its slope */
static double gs_unnorm(double g, int64_t n, bool align, double *slope) {
    if (align) { *slope = (double)(n - 1) / 2; return (g + 1) * (double)(n - 1) / 2; }
    *slope = (double)n / 2;
    return ((g + 1) * (double)n - 1) / 2;
}

/* Paddle's reflection of a pixel coordinate into [lo2 / 2, hi2 / 2] (the
 * bounds given doubled); *d gets the derivative, 1 or -1 */
static double gs_reflect(double v, double lo2, double hi2, double *d) {
    *d = 1;
    if (lo2 == hi2) { *d = 0; return 0; }
    const double mn = lo2 / 2, span = (hi2 - lo2) / 2;
    double sgn = 1;
    v -= mn;
    if (v < 0) { v = -v; sgn = -1; }
    const double extra = fmod(v, span);
    const double flips = floor(v / span);
    if (fmod(flips, 2) == 0) { *d = sgn; return extra + mn; }
    *d = -sgn;
    return span - extra + mn;
}

/* border / reflection: the point moved inside [0, n - 1]; *slope scaled by
 * the move's derivative (0 where clamped) */
static double gs_fold(double p, int64_t n, int pad, bool align, double *slope) {
    if (pad == OAR_GS_PAD_REFLECTION) {
        double d;
        p = align ? gs_reflect(p, 0, 2.0 * (double)(n - 1), &d) : gs_reflect(p, -1, 2.0 * (double)n - 1, &d);
        *slope *= d;
    }
    if (p <= 0) { *slope = 0; return 0; }
    if (p >= (double)(n - 1)) { *slope = 0; return (double)(n - 1); }
    return p;
}

#define VS_KERNELS(T, SUF, DT)                                                                          \
    static int ag_fwd_##SUF(oar_kernel_ctx_t *k)                                                        \
    {                                                                                                   \
        const oar_ag_attrs_t *a = oar_k_attrs(k);                                                       \
        oar_tensor_t *ot = oar_k_output(k, OAR_AG_OUTPUT, 0);                                           \
        oar_tensor_t *tt = oar_k_input(k, OAR_AG_THETA, 0);                                             \
        if (!ot || ot->ndim != 4 || tt->ndim != 3)                                                      \
            return oar_k_error(k, OAR_ERR_SHAPE, "Theta must be [N, 2, 3] and Output [N, H, W, 2]");    \
        const int64_t N = ot->dims[0], H = ot->dims[1], W = ot->dims[2];                                \
        const void *tv;                                                                                 \
        OAR_TRY(oar_k_input_sized(k, OAR_AG_THETA, "Theta", DT, N * 6, &tv));                           \
        void *ov;                                                                                       \
        OAR_TRY(oar_k_output_sized(k, OAR_AG_OUTPUT, "Output", DT, N * H * W * 2, false, &ov));         \
        const T *th = tv;                                                                               \
        T *o = ov;                                                                                      \
        for (int64_t n = 0; n < N; n++)                                                                 \
            for (int64_t h = 0; h < H; h++)                                                             \
                for (int64_t w = 0; w < W; w++) {                                                       \
                    const T x = (T)ag_lin(w, W, a->align_corners), y = (T)ag_lin(h, H, a->align_corners); \
                    const T *t = th + n * 6;                                                            \
                    T *p = o + ((n * H + h) * W + w) * 2;                                               \
                    p[0] = t[0] * x + t[1] * y + t[2];                                                  \
                    p[1] = t[3] * x + t[4] * y + t[5];                                                  \
                }                                                                                       \
        return OAR_OK;                                                                                  \
    }                                                                                                   \
    static int ag_bwd_##SUF(oar_kernel_ctx_t *k)                                                        \
    {                                                                                                   \
        const oar_ag_attrs_t *a = oar_k_attrs(k);                                                       \
        oar_tensor_t *dt = oar_k_input(k, OAR_AGG_DOUT, 0);                                             \
        if (dt->ndim != 4) return oar_k_error(k, OAR_ERR_SHAPE, "Output@GRAD must be [N, H, W, 2]");    \
        const int64_t N = dt->dims[0], H = dt->dims[1], W = dt->dims[2];                                \
        const void *dv;                                                                                 \
        OAR_TRY(oar_k_input_sized(k, OAR_AGG_DOUT, "Output@GRAD", DT, N * H * W * 2, &dv));             \
        void *gv;                                                                                       \
        OAR_TRY(oar_k_output_sized(k, OAR_AGG_DTHETA, "Theta@GRAD", DT, N * 6, true, &gv));             \
        if (!gv) return OAR_OK;                                                                         \
        const T *d = dv;                                                                                \
        T *g = gv;                                                                                      \
        memset(g, 0, sizeof(T) * (size_t)(N * 6));                                                      \
        for (int64_t n = 0; n < N; n++)                                                                 \
            for (int64_t h = 0; h < H; h++)                                                             \
                for (int64_t w = 0; w < W; w++) {                                                       \
                    const T x = (T)ag_lin(w, W, a->align_corners), y = (T)ag_lin(h, H, a->align_corners); \
                    const T *p = d + ((n * H + h) * W + w) * 2;                                         \
                    T *t = g + n * 6;                                                                   \
                    t[0] += p[0] * x; t[1] += p[0] * y; t[2] += p[0];                                   \
                    t[3] += p[1] * x; t[4] += p[1] * y; t[5] += p[1];                                   \
                }                                                                                       \
        return OAR_OK;                                                                                  \
    }                                                                                                   \
    OAR_REGISTER_KERNEL("affine_grid", OAR_PLACE_CPU, DT, ag_fwd_##SUF)                                 \
    OAR_REGISTER_KERNEL("affine_grid_grad", OAR_PLACE_CPU, DT, ag_bwd_##SUF)                            \
                                                                                                        \
    /* grid_sampler: forward (dx == NULL && dg == NULL) writes out; the grad adds into dx and dg */     \
    static int gs_run_##SUF(oar_kernel_ctx_t *k, bool grad)                                             \
    {                                                                                                   \
        const oar_gs_attrs_t *a = oar_k_attrs(k);                                                       \
        oar_tensor_t *xt = oar_k_input(k, 0, 0), *gt = oar_k_input(k, 1, 0);                            \
        if (xt->ndim != 4 || gt->ndim != 4 || gt->dims[0] != xt->dims[0] || gt->dims[3] != 2)           \
            return oar_k_error(k, OAR_ERR_SHAPE, "X ('%s') must be [N, C, H, W] and Grid ('%s') [N, OH, OW, 2]", \
                               oar_k_input_name(k, 0, 0), oar_k_input_name(k, 1, 0));                   \
        const int64_t N = xt->dims[0], C = xt->dims[1], H = xt->dims[2], W = xt->dims[3];               \
        const int64_t OH = gt->dims[1], OW = gt->dims[2];                                               \
        const void *gv;                                                                                 \
        OAR_TRY(oar_k_input_sized(k, 1, "Grid", DT, N * OH * OW * 2, &gv));                             \
        const T *x = oar_tensor_data(xt), *grid = gv;                                                   \
        void *ov = NULL, *dxv = NULL, *dgv = NULL;                                                      \
        const void *dyv = NULL;                                                                         \
        if (grad) {                                                                                     \
            OAR_TRY(oar_k_input_sized(k, OAR_GSG_DOUT, "Output@GRAD", DT, N * C * OH * OW, &dyv));      \
            OAR_TRY(oar_k_output_sized(k, OAR_GSG_DX, "X@GRAD", DT, N * C * H * W, true, &dxv));        \
            OAR_TRY(oar_k_output_sized(k, OAR_GSG_DGRID, "Grid@GRAD", DT, N * OH * OW * 2, true, &dgv)); \
            if (dxv) memset(dxv, 0, sizeof(T) * (size_t)(N * C * H * W));                              \
            if (dgv) memset(dgv, 0, sizeof(T) * (size_t)(N * OH * OW * 2));                             \
        } else {                                                                                        \
            OAR_TRY(oar_k_output_sized(k, OAR_GS_OUTPUT, "Output", DT, N * C * OH * OW, false, &ov));   \
        }                                                                                               \
        T *out = ov, *dx = dxv, *dg = dgv;                                                              \
        const T *dy = dyv;                                                                              \
        const bool border = a->pad != OAR_GS_PAD_ZEROS, nearest = a->mode == OAR_GS_MODE_NEAREST;      \
        for (int64_t n = 0; n < N; n++)                                                                 \
            for (int64_t i = 0; i < OH * OW; i++) {                                                     \
                const T *gp = grid + (n * OH * OW + i) * 2;                                             \
                double sx, sy;                                                                          \
                double px = gs_unnorm((double)gp[0], W, a->align_corners, &sx);                         \
                double py = gs_unnorm((double)gp[1], H, a->align_corners, &sy);                         \
                /* a NaN or far-away point samples nothing (no cast of it to an integer) */              \
                const bool far = !(fabs(px) < 1e15 && fabs(py) < 1e15);                                 \
                if (border && !far) {                                                                   \
                    px = gs_fold(px, W, a->pad, a->align_corners, &sx);                                 \
                    py = gs_fold(py, H, a->pad, a->align_corners, &sy);                                 \
                }                                                                                       \
                /* the corners (nearest: one) with their weights and the weights' x and y slopes */     \
                int64_t cx[4], cy[4];                                                                   \
                double cw[4], cdx[4], cdy[4];                                                           \
                int nc;                                                                                 \
                if (far) {                                                                              \
                    nc = 0;                                                                             \
                } else if (nearest) {                                                                          \
                    cx[0] = (int64_t)nearbyint(px); cy[0] = (int64_t)nearbyint(py);                     \
                    cw[0] = 1; cdx[0] = cdy[0] = 0; nc = 1;                                             \
                } else {                                                                                \
                    const double fx = floor(px), fy = floor(py), ex = px - fx, ey = py - fy;            \
                    for (int c2 = 0; c2 < 4; c2++) {                                                    \
                        const int ox = c2 & 1, oy = c2 >> 1;                                            \
                        cx[c2] = (int64_t)fx + ox; cy[c2] = (int64_t)fy + oy;                           \
                        const double wx = ox ? ex : 1 - ex, wy = oy ? ey : 1 - ey;                      \
                        cw[c2] = wx * wy;                                                               \
                        cdx[c2] = (ox ? 1 : -1) * wy;                                                   \
                        cdy[c2] = (oy ? 1 : -1) * wx;                                                   \
                    }                                                                                   \
                    nc = 4;                                                                             \
                }                                                                                       \
                double gx = 0, gy = 0;                                                                  \
                for (int64_t c = 0; c < C; c++) {                                                       \
                    const T *xm = x + (n * C + c) * H * W;                                              \
                    const int64_t oi = (n * C + c) * OH * OW + i;                                       \
                    double s = 0;                                                                       \
                    for (int q = 0; q < nc; q++) {                                                      \
                        if (cx[q] < 0 || cx[q] >= W || cy[q] < 0 || cy[q] >= H) continue;               \
                        const int64_t at = cy[q] * W + cx[q];                                           \
                        if (!grad) { s += cw[q] * (double)xm[at]; continue; }                           \
                        if (dx) dx[(n * C + c) * H * W + at] += (T)(cw[q] * (double)dy[oi]);            \
                        gx += cdx[q] * (double)xm[at] * (double)dy[oi];                                 \
                        gy += cdy[q] * (double)xm[at] * (double)dy[oi];                                 \
                    }                                                                                   \
                    if (!grad) out[oi] = (T)s;                                                          \
                }                                                                                       \
                if (dg) {                                                                               \
                    dg[(n * OH * OW + i) * 2] = (T)(gx * sx);                                           \
                    dg[(n * OH * OW + i) * 2 + 1] = (T)(gy * sy);                                       \
                }                                                                                       \
            }                                                                                           \
        return OAR_OK;                                                                                  \
    }                                                                                                   \
    static int gs_fwd_##SUF(oar_kernel_ctx_t *k) { return gs_run_##SUF(k, false); }                     \
    static int gs_bwd_##SUF(oar_kernel_ctx_t *k) { return gs_run_##SUF(k, true); }                      \
    OAR_REGISTER_KERNEL("grid_sampler", OAR_PLACE_CPU, DT, gs_fwd_##SUF)                                \
    OAR_REGISTER_KERNEL("grid_sampler_grad", OAR_PLACE_CPU, DT, gs_bwd_##SUF)

VS_KERNELS(float, f32, OAR_FP32)
VS_KERNELS(double, f64, OAR_FP64)
