/* vision_interp.c — CPU kernels of trilinear_interp, bicubic_interp and
 * their grads (float32, float64; channels first or last). Each output cell is a
 * weighted sum of input taps (8 for trilinear, 16 for bicubic) computed as
 * Paddle 1.8 does: a float sampling ratio, (in - 1) / (out - 1) with
 * align_corners, else in / out. The grads add each cell's Out@GRAD back
 * to its taps with the same weights, in one fixed order (one thread). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "op.h"
#include "ops/vision_interp.h"

static float ratio_of(bool align, int64_t in, int64_t out) {
    if (out <= 1) return 0.f;
    return align ? (float)(in - 1) / (float)(out - 1) : (float)in / (float)out;
}

/* trilinear: the two sources of output k along a dim and their weights */
static void lin_src(const oar_vip_attrs_t *a, float r, int64_t in, int64_t k, int64_t src[2], double w[2]) {
    const bool half = a->align_mode == 0 && !a->align_corners;
    int64_t n = half ? (int64_t)(r * (k + 0.5) - 0.5) : (int64_t)(r * k);
    if (n < 0) n = 0;
    src[0] = n;
    src[1] = n + 1 < in - 1 ? n + 1 : in - 1;
    double s = r * (k + 0.5) - 0.5;
    if (s < 0) s = 0;
    const double d = half ? s - (double)n : (double)(r * k) - (double)n;
    w[0] = 1. - d;
    w[1] = d;
}

/* bicubic: Keys' cubic convolution weights (a = -0.75) at fraction t */
static void cubic_w(double t, double w[4]) {
    const double A = -0.75;
    const double x0 = t + 1, x1 = t, x2 = 1 - t, x3 = 2 - t;
    w[0] = ((A * x0 - 5 * A) * x0 + 8 * A) * x0 - 4 * A;
    w[1] = ((A + 2) * x1 - (A + 3)) * x1 * x1 + 1;
    w[2] = ((A + 2) * x2 - (A + 3)) * x2 * x2 + 1;
    w[3] = ((A * x3 - 5 * A) * x3 + 8 * A) * x3 - 4 * A;
}

/* bicubic: the four sources (clamped to the input) of output k and their weights */
static void cubic_src(const oar_vip_attrs_t *a, float r, int64_t in, int64_t k, int64_t src[4], double w[4]) {
    const double p = a->align_corners ? (double)(r * (float)k) : (double)(r * (k + 0.5) - 0.5);
    const double f = floor(p);
    cubic_w(p - f, w);
    for (int i = 0; i < 4; i++) {
        int64_t s = (int64_t)f - 1 + i;
        src[i] = s < 0 ? 0 : (s > in - 1 ? in - 1 : s);
    }
}

/* the taps of every output cell of one map: tap t of cell o is input cell
 * idx[o * nt + t] with weight wt[o * nt + t] */
typedef struct {
    int64_t n, c, in_sz, out_sz, nt;
    bool cl;   /* channels last: cell i of channel ch of image b at (b * sz + i) * c + ch */
} vip_geom_t;

static int vip_plan(oar_kernel_ctx_t *k, const oar_tensor_t *x, const int64_t *od, int ond, vip_geom_t *g,
                    int64_t **idx, double **wt) {
    const oar_vip_attrs_t *a = oar_k_attrs(k);
    const int nd = a->nd;
    g->cl = a->layout == OAR_TRI_LAYOUT_NHWC || a->layout == OAR_TRI_LAYOUT_NDHWC;
    const int cax = g->cl ? nd + 1 : 1, sp0 = g->cl ? 1 : 2;   /* the channel dim, the first spatial dim */
    if (x->ndim != nd + 2 || ond != nd + 2 || od[0] != x->dims[0] || od[cax] != x->dims[cax])
        return oar_k_error(k, OAR_ERR_SHAPE, "X ('%s') and the output must be %d-D with the same N and C",
                           oar_k_input_name(k, 0, 0), nd + 2);
    g->n = x->dims[0];
    g->c = x->dims[cax];
    g->in_sz = g->out_sz = 1;
    int64_t insp[3], outsp[3];
    for (int i = 0; i < nd; i++) {
        insp[i] = x->dims[sp0 + i];
        outsp[i] = od[sp0 + i];
        g->in_sz *= insp[i];
        g->out_sz *= outsp[i];
    }
    g->nt = nd == 3 ? 8 : 16;
    if (g->out_sz > ((int64_t)1 << 40) / g->nt)
        return oar_k_error(k, OAR_ERR_NOMEM, "the output of %lld cells per map is too large", (long long)g->out_sz);
    *idx = malloc(sizeof(int64_t) * (size_t)(g->out_sz * g->nt + 1));
    *wt = malloc(sizeof(double) * (size_t)(g->out_sz * g->nt + 1));
    if (!*idx || !*wt) {
        free(*idx); free(*wt);
        return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate the interpolation taps");
    }
    if (nd == 3) {
        const int64_t *in = insp, *out = outsp;
        float r[3];
        for (int i = 0; i < 3; i++) r[i] = ratio_of(a->align_corners, in[i], out[i]);
        for (int64_t o = 0; o < g->out_sz; o++) {
            const int64_t c[3] = {o / (out[1] * out[2]), o / out[2] % out[1], o % out[2]};
            int64_t s[3][2];
            double w[3][2];
            for (int i = 0; i < 3; i++) lin_src(a, r[i], in[i], c[i], s[i], w[i]);
            for (int t = 0; t < 8; t++) {
                const int i0 = t >> 2, i1 = (t >> 1) & 1, i2 = t & 1;
                (*idx)[o * 8 + t] = (s[0][i0] * in[1] + s[1][i1]) * in[2] + s[2][i2];
                (*wt)[o * 8 + t] = w[0][i0] * w[1][i1] * w[2][i2];
            }
        }
    } else {
        const int64_t *in = insp, *out = outsp;
        const float rh = ratio_of(a->align_corners, in[0], out[0]), rw = ratio_of(a->align_corners, in[1], out[1]);
        for (int64_t o = 0; o < g->out_sz; o++) {
            int64_t sy[4], sx[4];
            double wy[4], wx[4];
            cubic_src(a, rh, in[0], o / out[1], sy, wy);
            cubic_src(a, rw, in[1], o % out[1], sx, wx);
            for (int t = 0; t < 16; t++) {
                (*idx)[o * 16 + t] = sy[t >> 2] * in[1] + sx[t & 3];
                (*wt)[o * 16 + t] = wy[t >> 2] * wx[t & 3];
            }
        }
    }
    return OAR_OK;
}

/* the flat index of cell i (of sz per map) of channel ch of image b */
static inline int64_t vip_at(const vip_geom_t *g, int64_t b, int64_t ch, int64_t i, int64_t sz) {
    return g->cl ? (b * sz + i) * g->c + ch : (b * g->c + ch) * sz + i;
}

#define VIP_KERNELS(T, SUF, DT)                                                                         \
    static int vip_fwd_##SUF(oar_kernel_ctx_t *k)                                                       \
    {                                                                                                   \
        oar_tensor_t *xt = oar_k_input(k, OAR_TRI_X, 0), *ot = oar_k_output(k, OAR_TRI_OUT, 0);         \
        if (!ot) return oar_k_error(k, OAR_ERR_NOT_FOUND, "Out is missing");                            \
        vip_geom_t g;                                                                                   \
        int64_t *idx;                                                                                   \
        double *wt;                                                                                     \
        void *ov;                                                                                       \
        /* the output first: its allocation bounds the taps' */                                         \
        OAR_TRY(oar_k_output_sized(k, OAR_TRI_OUT, "Out", DT, oar_tensor_numel(ot), false, &ov));       \
        OAR_TRY(vip_plan(k, xt, ot->dims, ot->ndim, &g, &idx, &wt));                                    \
        int rc = OAR_OK;                                                                                \
        {                                                                                               \
            const T *x = oar_tensor_data(xt);                                                           \
            T *o = ov;                                                                                  \
            for (int64_t b = 0; b < g.n; b++)                                                           \
                for (int64_t ch = 0; ch < g.c; ch++)                                                    \
                    for (int64_t c = 0; c < g.out_sz; c++) {                                            \
                        double s = 0;                                                                   \
                        for (int64_t t = 0; t < g.nt; t++)                                              \
                            s += wt[c * g.nt + t] * (double)x[vip_at(&g, b, ch, idx[c * g.nt + t], g.in_sz)]; \
                        o[vip_at(&g, b, ch, c, g.out_sz)] = (T)s;                                       \
                    }                                                                                   \
        }                                                                                               \
        free(idx); free(wt);                                                                            \
        return rc;                                                                                      \
    }                                                                                                   \
    static int vip_bwd_##SUF(oar_kernel_ctx_t *k)                                                       \
    {                                                                                                   \
        oar_tensor_t *xt = oar_k_input(k, OAR_TRIG_X, 0), *dt = oar_k_input(k, OAR_TRIG_DOUT, 0);       \
        if (!dt) return oar_k_error(k, OAR_ERR_NOT_FOUND, "Out@GRAD is missing");                       \
        void *dxv;                                                                                      \
        OAR_TRY(oar_k_output_sized(k, OAR_TRIG_DX, "X@GRAD", DT, oar_tensor_numel(xt), true, &dxv));    \
        if (!dxv) return OAR_OK;                                                                        \
        vip_geom_t g;                                                                                   \
        int64_t *idx;                                                                                   \
        double *wt;                                                                                     \
        OAR_TRY(vip_plan(k, xt, dt->dims, dt->ndim, &g, &idx, &wt));                                    \
        const void *dv;                                                                                 \
        int rc = oar_k_input_sized(k, OAR_TRIG_DOUT, "Out@GRAD", DT, g.n * g.c * g.out_sz, &dv);            \
        if (rc == OAR_OK) {                                                                             \
            const T *dy = dv;                                                                           \
            T *dx = dxv;                                                                                \
            memset(dx, 0, sizeof(T) * (size_t)(g.n * g.c * g.in_sz));                                   \
            for (int64_t b = 0; b < g.n; b++)                                                           \
                for (int64_t ch = 0; ch < g.c; ch++)                                                    \
                    for (int64_t c = 0; c < g.out_sz; c++)                                              \
                        for (int64_t t = 0; t < g.nt; t++)                                              \
                            dx[vip_at(&g, b, ch, idx[c * g.nt + t], g.in_sz)] +=                        \
                                (T)(wt[c * g.nt + t] * (double)dy[vip_at(&g, b, ch, c, g.out_sz)]);    \
        }                                                                                               \
        free(idx); free(wt);                                                                            \
        return rc;                                                                                      \
    }                                                                                                   \
    OAR_REGISTER_KERNEL("trilinear_interp", OAR_PLACE_CPU, DT, vip_fwd_##SUF)                           \
    OAR_REGISTER_KERNEL("trilinear_interp_grad", OAR_PLACE_CPU, DT, vip_bwd_##SUF)                      \
    static int bic_fwd_##SUF(oar_kernel_ctx_t *k) { return vip_fwd_##SUF(k); }                          \
    static int bic_bwd_##SUF(oar_kernel_ctx_t *k) { return vip_bwd_##SUF(k); }                          \
    OAR_REGISTER_KERNEL("bicubic_interp", OAR_PLACE_CPU, DT, bic_fwd_##SUF)                             \
    OAR_REGISTER_KERNEL("bicubic_interp_grad", OAR_PLACE_CPU, DT, bic_bwd_##SUF)

VIP_KERNELS(float, f32, OAR_FP32)
VIP_KERNELS(double, f64, OAR_FP64)
