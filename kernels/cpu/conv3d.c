/* conv3d.c — CPU kernels of conv3d, conv3d_transpose and their grads
 * (float32, float64; NCDHW, or NDHWC through a channels-first copy).
 *
 * Three steps on the geometry of src/ops/conv3d_util.h (a convolution from
 * a volume side X [n, c, vin] to a result side Y [n, m, vout], filters
 * W [m, c / groups, k]), per image and group:
 *   forward:      col = vol2col(X_g);  Y_g = W_g col
 *   data grad:    col = W_g^T dY_g;    dX_g = col2vol(col)
 *   filter grad:  col = vol2col(X_g);  dW_g += dY_g col^T
 * conv3d is forward + (data grad, filter grad); conv3d_transpose's forward
 * is the data grad (its Input is Y, its Output X) and its grads are the
 * forward (for Input@GRAD) and the filter grad with X = Output@GRAD.
 * The products go through oar_gemm (gemm.h), whose blocks depend on the
 * shape only; the images run in a fixed order, so Filter@GRAD's sums do not
 * depend on the thread count. */
#include <string.h>
#include "op.h"
#include "ops/conv3d_util.h"
#include "gemm.h"
#include "scratch.h"

static int64_t vol(const int64_t s[3]) { return s[0] * s[1] * s[2]; }

#define C3_TYPED(T, SUF, DT)                                                                            \
    /* col [cg kd kh kw, od oh ow] <- x [cg, vin] (0 outside); add: the adjoint into x */              \
    static void vol2col_##SUF(const oar_c3_geom_t *g, int64_t cg, T *x, T *col, bool add)             \
    {                                                                                                   \
        const int64_t P = vol(g->vout), IS = vol(g->vin);                                               \
        for (int64_t ch = 0; ch < cg; ch++)                                                             \
            for (int64_t a = 0; a < g->k[0]; a++)                                                       \
                for (int64_t b = 0; b < g->k[1]; b++)                                                   \
                    for (int64_t e = 0; e < g->k[2]; e++) {                                             \
                        T *row = col + (((ch * g->k[0] + a) * g->k[1] + b) * g->k[2] + e) * P;          \
                        T *xc = x + ch * IS;                                                            \
                        for (int64_t od = 0; od < g->vout[0]; od++) {                                   \
                            const int64_t z = od * g->st[0] - g->pd[0] + a * g->dl[0];                  \
                            const bool zin = z >= 0 && z < g->vin[0];                                   \
                            for (int64_t oh = 0; oh < g->vout[1]; oh++) {                               \
                                const int64_t y = oh * g->st[1] - g->pd[2] + b * g->dl[1];              \
                                const bool yin = zin && y >= 0 && y < g->vin[1];                        \
                                T *r = row + (od * g->vout[1] + oh) * g->vout[2];                       \
                                const int64_t base = (z * g->vin[1] + y) * g->vin[2];                   \
                                for (int64_t ow = 0; ow < g->vout[2]; ow++) {                           \
                                    const int64_t xx = ow * g->st[2] - g->pd[4] + e * g->dl[2];         \
                                    const bool in = yin && xx >= 0 && xx < g->vin[2];                   \
                                    if (add) { if (in) xc[base + xx] += r[ow]; }                        \
                                    else r[ow] = in ? xc[base + xx] : (T)0;                             \
                                }                                                                       \
                            }                                                                           \
                        }                                                                               \
                    }                                                                                   \
    }                                                                                                   \
    /* the three steps over all images and groups; col holds kg * P values */                           \
    static void step_fwd_##SUF(const oar_c3_geom_t *g, const T *x, const T *w, T *y, T *col)          \
    {                                                                                                   \
        const int64_t cg = g->c / g->groups, mg = g->m / g->groups;                                     \
        const int64_t kg = cg * vol(g->k), P = vol(g->vout), IS = vol(g->vin);                         \
        for (int64_t n = 0; n < g->n; n++)                                                              \
            for (int64_t gr = 0; gr < g->groups; gr++) {                                                \
                vol2col_##SUF(g, cg, (T *)(x + (n * g->c + gr * cg) * IS), col, false);                 \
                oar_gemm(DT, oar_gemm_threads(mg * P * kg), false, false, mg, P, kg, 1.0, w + gr * mg * kg, \
                         kg, col, P, 0.0, y + (n * g->m + gr * mg) * P, P);                             \
            }                                                                                           \
    }                                                                                                   \
    static void step_data_##SUF(const oar_c3_geom_t *g, const T *w, const T *dy, T *dx, T *col)       \
    {                                                                                                   \
        const int64_t cg = g->c / g->groups, mg = g->m / g->groups;                                     \
        const int64_t kg = cg * vol(g->k), P = vol(g->vout), IS = vol(g->vin);                         \
        memset(dx, 0, sizeof(T) * (size_t)(g->n * g->c * IS));                                          \
        for (int64_t n = 0; n < g->n; n++)                                                              \
            for (int64_t gr = 0; gr < g->groups; gr++) {                                                \
                oar_gemm(DT, oar_gemm_threads(mg * P * kg), true, false, kg, P, mg, 1.0, w + gr * mg * kg, \
                         kg, dy + (n * g->m + gr * mg) * P, P, 0.0, col, P);                            \
                vol2col_##SUF(g, cg, dx + (n * g->c + gr * cg) * IS, col, true);                        \
            }                                                                                           \
    }                                                                                                   \
    static void step_filter_##SUF(const oar_c3_geom_t *g, const T *x, const T *dy, T *dw, T *col)     \
    {                                                                                                   \
        const int64_t cg = g->c / g->groups, mg = g->m / g->groups;                                     \
        const int64_t kg = cg * vol(g->k), P = vol(g->vout), IS = vol(g->vin);                         \
        memset(dw, 0, sizeof(T) * (size_t)(g->m * kg));                                                 \
        for (int64_t n = 0; n < g->n; n++)                                                              \
            for (int64_t gr = 0; gr < g->groups; gr++) {                                                \
                vol2col_##SUF(g, cg, (T *)(x + (n * g->c + gr * cg) * IS), col, false);                 \
                oar_gemm(DT, oar_gemm_threads(mg * P * kg), false, true, mg, kg, P, 1.0,                \
                         dy + (n * g->m + gr * mg) * P, P, col, P, 1.0, dw + gr * mg * kg, kg);         \
            }                                                                                           \
    }                                                                                                   \
    /* [n, s, ch] <-> [n, ch, s] */                                                                     \
    static void to_cf_##SUF(const T *src, T *dst, int64_t n, int64_t ch, int64_t s)                     \
    {                                                                                                   \
        for (int64_t b = 0; b < n; b++)                                                                 \
            for (int64_t p = 0; p < s; p++)                                                             \
                for (int64_t c = 0; c < ch; c++) dst[(b * ch + c) * s + p] = src[(b * s + p) * ch + c]; \
    }                                                                                                   \
    static void to_cl_##SUF(const T *src, T *dst, int64_t n, int64_t ch, int64_t s)                     \
    {                                                                                                   \
        for (int64_t b = 0; b < n; b++)                                                                 \
            for (int64_t p = 0; p < s; p++)                                                             \
                for (int64_t c = 0; c < ch; c++) dst[(b * s + p) * ch + c] = src[(b * ch + c) * s + p]; \
    }

C3_TYPED(float, f32, OAR_FP32)
C3_TYPED(double, f64, OAR_FP64)

/* one run's buffers: the column matrix and, for channels-last tensors,
 * channels-first copies of the volume (vx) and result (vy) sides */
typedef struct {
    void *col, *vx, *vy;
} c3_bufs_t;

static void c3_free(c3_bufs_t *b) {
    oar_scratch_free(b->col);
    oar_scratch_free(b->vx);
    oar_scratch_free(b->vy);
}

static int c3_alloc(oar_kernel_ctx_t *k, const oar_c3_geom_t *g, size_t esz, c3_bufs_t *b) {
    memset(b, 0, sizeof *b);
    const int64_t kg = g->c / g->groups * vol(g->k), P = vol(g->vout);
    b->col = oar_scratch_alloc(esz * (size_t)(kg * P > 0 ? kg * P : 1));
    if (g->cl) {
        b->vx = oar_scratch_alloc(esz * (size_t)(g->n * g->c * vol(g->vin) + 1));
        b->vy = oar_scratch_alloc(esz * (size_t)(g->n * g->m * P + 1));
    }
    if (!b->col || (g->cl && (!b->vx || !b->vy))) {
        c3_free(b);
        return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate the column buffers");
    }
    return OAR_OK;
}

static bool c3_empty(const oar_c3_geom_t *g) {
    return g->n == 0 || g->c == 0 || g->m == 0 || vol(g->vin) == 0 || vol(g->vout) == 0;
}

/* the geometry of the running op and its Input and Filter */
static int c3_setup(oar_kernel_ctx_t *k, bool transpose, oar_c3_geom_t *g, const void **x, const void **w, int dt) {
    oar_tensor_t *xt = oar_k_input(k, 0, 0), *wt = oar_k_input(k, 1, 0);
    if (!xt || !wt) return oar_k_error(k, OAR_ERR_NOT_FOUND, "Input or Filter is missing");
    if (xt->dtype != dt || wt->dtype != dt)
        return oar_k_error(k, OAR_ERR_DTYPE, "Input '%s' is %s and Filter '%s' %s; both must be %s",
                           oar_k_input_name(k, 0, 0), oar_dtype_name(xt->dtype), oar_k_input_name(k, 1, 0),
                           oar_dtype_name(wt->dtype), oar_dtype_name(dt));
    char why[320];
    int rc = transpose ? oar_c3_convt_geometry(oar_k_attrs(k), xt->dims, xt->ndim, wt->dims, wt->ndim,
                                               oar_k_input_name(k, 0, 0), oar_k_input_name(k, 1, 0), g, why, sizeof why)
                       : oar_c3_conv_geometry(oar_k_attrs(k), xt->dims, xt->ndim, wt->dims, wt->ndim,
                                              oar_k_input_name(k, 0, 0), oar_k_input_name(k, 1, 0), g, why, sizeof why);
    if (rc != OAR_OK) return oar_k_error(k, rc, "%s", why);
    *x = oar_tensor_data(xt);
    *w = oar_tensor_data(wt);
    return OAR_OK;
}

#define C3_KERNELS(T, SUF, DT)                                                                          \
    static int conv3d_fwd_##SUF(oar_kernel_ctx_t *k)                                                    \
    {                                                                                                   \
        oar_c3_geom_t g;                                                                                \
        const void *xv, *wv;                                                                            \
        OAR_TRY(c3_setup(k, false, &g, &xv, &wv, DT));                                                  \
        void *out;                                                                                      \
        OAR_TRY(oar_k_output_sized(k, OAR_CONV3D_OUTPUT, "Output", DT, g.n * g.m * vol(g.vout), false, &out)); \
        if (c3_empty(&g)) { memset(out, 0, sizeof(T) * (size_t)(g.n * g.m * vol(g.vout))); return OAR_OK; } \
        c3_bufs_t b;                                                                                    \
        OAR_TRY(c3_alloc(k, &g, sizeof(T), &b));                                                        \
        const T *x = xv;                                                                                \
        if (g.cl) { to_cf_##SUF(x, b.vx, g.n, g.c, vol(g.vin)); x = b.vx; }                             \
        step_fwd_##SUF(&g, x, wv, g.cl ? (T *)b.vy : (T *)out, b.col);                                  \
        if (g.cl) to_cl_##SUF(b.vy, out, g.n, g.m, vol(g.vout));                                        \
        c3_free(&b);                                                                                    \
        return OAR_OK;                                                                                  \
    }                                                                                                   \
    /* conv3d_grad: X = Input, dY = Output@GRAD */                                                      \
    static int conv3d_bwd_##SUF(oar_kernel_ctx_t *k)                                                    \
    {                                                                                                   \
        oar_c3_geom_t g;                                                                                \
        const void *xv, *wv, *dyv;                                                                      \
        OAR_TRY(c3_setup(k, false, &g, &xv, &wv, DT));                                                  \
        const int64_t XN = g.n * g.c * vol(g.vin), YN = g.n * g.m * vol(g.vout);                        \
        const int64_t WN = g.m * (g.c / g.groups) * vol(g.k);                                           \
        OAR_TRY(oar_k_input_sized(k, OAR_CONV3DG_DOUT, "Output@GRAD", DT, YN, &dyv));                   \
        void *dx, *dw;                                                                                  \
        OAR_TRY(oar_k_output_sized(k, OAR_CONV3DG_DINPUT, "Input@GRAD", DT, XN, true, &dx));            \
        OAR_TRY(oar_k_output_sized(k, OAR_CONV3DG_DFILTER, "Filter@GRAD", DT, WN, true, &dw));          \
        if (dw) memset(dw, 0, sizeof(T) * (size_t)WN);                                                  \
        if (dx) memset(dx, 0, sizeof(T) * (size_t)XN);                                                  \
        if ((!dx && !dw) || c3_empty(&g)) return OAR_OK;                                                \
        c3_bufs_t b;                                                                                    \
        OAR_TRY(c3_alloc(k, &g, sizeof(T), &b));                                                        \
        const T *x = xv, *dy = dyv;                                                                     \
        if (g.cl) {                                                                                     \
            to_cf_##SUF(x, b.vx, g.n, g.c, vol(g.vin)); x = b.vx;                                       \
            to_cf_##SUF(dy, b.vy, g.n, g.m, vol(g.vout)); dy = b.vy;                                    \
        }                                                                                               \
        if (dw) step_filter_##SUF(&g, x, dy, dw, b.col);                                                \
        if (dx) {                                                                                       \
            /* channels last: the channels-first X copy is read already, reuse it */                    \
            step_data_##SUF(&g, wv, dy, g.cl ? (T *)b.vx : (T *)dx, b.col);                             \
            if (g.cl) to_cl_##SUF(b.vx, dx, g.n, g.c, vol(g.vin));                                      \
        }                                                                                               \
        c3_free(&b);                                                                                    \
        return OAR_OK;                                                                                  \
    }                                                                                                   \
    /* conv3d_transpose: Input is Y, Output is X */                                                     \
    static int c3t_fwd_##SUF(oar_kernel_ctx_t *k)                                                       \
    {                                                                                                   \
        oar_c3_geom_t g;                                                                                \
        const void *yv, *wv;                                                                            \
        OAR_TRY(c3_setup(k, true, &g, &yv, &wv, DT));                                                   \
        void *out;                                                                                      \
        const int64_t XN = g.n * g.c * vol(g.vin);                                                      \
        OAR_TRY(oar_k_output_sized(k, OAR_C3T_OUTPUT, "Output", DT, XN, false, &out));                  \
        if (c3_empty(&g)) { memset(out, 0, sizeof(T) * (size_t)XN); return OAR_OK; }                   \
        c3_bufs_t b;                                                                                    \
        OAR_TRY(c3_alloc(k, &g, sizeof(T), &b));                                                        \
        const T *y = yv;                                                                                \
        if (g.cl) { to_cf_##SUF(y, b.vy, g.n, g.m, vol(g.vout)); y = b.vy; }                            \
        step_data_##SUF(&g, wv, y, g.cl ? (T *)b.vx : (T *)out, b.col);                                 \
        if (g.cl) to_cl_##SUF(b.vx, out, g.n, g.c, vol(g.vin));                                         \
        c3_free(&b);                                                                                    \
        return OAR_OK;                                                                                  \
    }                                                                                                   \
    /* conv3d_transpose_grad: Input@GRAD = conv3d(Output@GRAD), Filter@GRAD with X = Output@GRAD */     \
    static int c3t_bwd_##SUF(oar_kernel_ctx_t *k)                                                       \
    {                                                                                                   \
        oar_c3_geom_t g;                                                                                \
        const void *yv, *wv, *dov;                                                                      \
        OAR_TRY(c3_setup(k, true, &g, &yv, &wv, DT));                                                   \
        const int64_t XN = g.n * g.c * vol(g.vin), YN = g.n * g.m * vol(g.vout);                        \
        const int64_t WN = g.m * (g.c / g.groups) * vol(g.k);                                           \
        OAR_TRY(oar_k_input_sized(k, OAR_C3TG_DOUT, "Output@GRAD", DT, XN, &dov));                      \
        void *dy, *dw;                                                                                  \
        OAR_TRY(oar_k_output_sized(k, OAR_C3TG_DINPUT, "Input@GRAD", DT, YN, true, &dy));               \
        OAR_TRY(oar_k_output_sized(k, OAR_C3TG_DFILTER, "Filter@GRAD", DT, WN, true, &dw));             \
        if (dw) memset(dw, 0, sizeof(T) * (size_t)WN);                                                  \
        if (dy) memset(dy, 0, sizeof(T) * (size_t)YN);                                                  \
        if ((!dy && !dw) || c3_empty(&g)) return OAR_OK;                                                \
        c3_bufs_t b;                                                                                    \
        OAR_TRY(c3_alloc(k, &g, sizeof(T), &b));                                                        \
        const T *y = yv, *dout = dov;                                                                   \
        if (g.cl) {                                                                                     \
            to_cf_##SUF(dout, b.vx, g.n, g.c, vol(g.vin)); dout = b.vx;                                 \
            if (dw) { to_cf_##SUF(y, b.vy, g.n, g.m, vol(g.vout)); y = b.vy; }                          \
        }                                                                                               \
        if (dw) step_filter_##SUF(&g, dout, y, dw, b.col);                                              \
        if (dy) {                                                                                       \
            step_fwd_##SUF(&g, dout, wv, g.cl ? (T *)b.vy : (T *)dy, b.col);                            \
            if (g.cl) to_cl_##SUF(b.vy, dy, g.n, g.m, vol(g.vout));                                     \
        }                                                                                               \
        c3_free(&b);                                                                                    \
        return OAR_OK;                                                                                  \
    }                                                                                                   \
    OAR_REGISTER_KERNEL("conv3d", OAR_PLACE_CPU, DT, conv3d_fwd_##SUF)                                  \
    OAR_REGISTER_KERNEL("conv3d_grad", OAR_PLACE_CPU, DT, conv3d_bwd_##SUF)                             \
    OAR_REGISTER_KERNEL("conv3d_transpose", OAR_PLACE_CPU, DT, c3t_fwd_##SUF)                           \
    OAR_REGISTER_KERNEL("conv3d_transpose_grad", OAR_PLACE_CPU, DT, c3t_bwd_##SUF)

C3_KERNELS(float, f32, OAR_FP32)
C3_KERNELS(double, f64, OAR_FP64)
