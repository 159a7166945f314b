/* vision_seq.c — CPU kernels of im2sequence, conv_shift and their grads
 * (float32, float64). One thread; every gradient cell sums in one fixed
 * order. */
#include <stdlib.h>
#include <string.h>
#include "op.h"
#include "ops/vision_seq.h"
#include "ops/tensor_value.h"

typedef struct {
    int64_t n, c, h, w;
    int64_t *oh, *ow, *row0;   /* per image: its grid and its first row; row0[n] is the row count */
} i2s_geom_t;

static void i2s_free(i2s_geom_t *g) {
    free(g->oh); free(g->ow); free(g->row0);
}

/* y: the real sizes (NULL, or ignored with one image: Fluid's rule) */
static int i2s_setup(oar_kernel_ctx_t *k, const oar_tensor_t *x, oar_tensor_t *y, i2s_geom_t *g) {
    const oar_i2s_attrs_t *a = oar_k_attrs(k);
    memset(g, 0, sizeof *g);
    if (x->ndim != 4) return oar_k_error(k, OAR_ERR_SHAPE, "X ('%s') must be 4-D", oar_k_input_name(k, 0, 0));
    g->n = x->dims[0]; g->c = x->dims[1]; g->h = x->dims[2]; g->w = x->dims[3];
    g->oh = malloc(sizeof(int64_t) * (size_t)(g->n + 1));
    g->ow = malloc(sizeof(int64_t) * (size_t)(g->n + 1));
    g->row0 = malloc(sizeof(int64_t) * (size_t)(g->n + 1));
    if (!g->oh || !g->ow || !g->row0) {
        i2s_free(g);
        return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate im2sequence's geometry");
    }
    const bool real = y && g->n > 1;
    g->row0[0] = 0;
    for (int64_t b = 0; b < g->n; b++) {
        int64_t sz[2] = {g->h, g->w};
        if (real) {
            double hv, wv;
            if (!oar_tensor_value_f64(y, 2 * b, &hv) || !oar_tensor_value_f64(y, 2 * b + 1, &wv) || !(hv >= 1 && wv >= 1 && hv < 1e9 && wv < 1e9)) {
                i2s_free(g);
                return oar_k_error(k, OAR_ERR_INVALID, "Y ('%s') row %lld must hold two sizes >= 1",
                                   oar_k_input_name(k, 1, 0), (long long)b);
            }
            sz[0] = ((int64_t)hv + a->os[0] - 1) / a->os[0];
            sz[1] = ((int64_t)wv + a->os[1] - 1) / a->os[1];
        }
        const int64_t rh = sz[0] + a->pd[0] + a->pd[2] - a->ks[0], rw = sz[1] + a->pd[1] + a->pd[3] - a->ks[1];
        if (rh < 0 || rw < 0) {
            i2s_free(g);
            return oar_k_error(k, OAR_ERR_SHAPE, "X ('%s') image %lld: the window is larger than the padded input",
                               oar_k_input_name(k, 0, 0), (long long)b);
        }
        g->oh[b] = rh / a->st[0] + 1;
        g->ow[b] = rw / a->st[1] + 1;
        g->row0[b + 1] = g->row0[b] + g->oh[b] * g->ow[b];
    }
    return OAR_OK;
}

/* calls BODY for every (out row r, out column q, image offset xi or -1) */
#define I2S_EACH(g, a, BODY)                                                                            \
    for (int64_t b = 0; b < (g).n; b++)                                                                 \
        for (int64_t y = 0; y < (g).oh[b]; y++)                                                         \
            for (int64_t x0 = 0; x0 < (g).ow[b]; x0++) {                                                \
                const int64_t r = (g).row0[b] + y * (g).ow[b] + x0;                                     \
                for (int64_t ch = 0; ch < (g).c; ch++)                                                  \
                    for (int64_t i = 0; i < (a)->ks[0]; i++)                                            \
                        for (int64_t j = 0; j < (a)->ks[1]; j++) {                                      \
                            const int64_t q = (ch * (a)->ks[0] + i) * (a)->ks[1] + j;                   \
                            const int64_t yy = y * (a)->st[0] - (a)->pd[0] + i;                         \
                            const int64_t xx = x0 * (a)->st[1] - (a)->pd[1] + j;                        \
                            const int64_t xi = (yy < 0 || yy >= (g).h || xx < 0 || xx >= (g).w)         \
                                                   ? -1 : ((b * (g).c + ch) * (g).h + yy) * (g).w + xx;  \
                            BODY                                                                        \
                        }                                                                               \
            }

#define VSEQ_KERNELS(T, SUF, DT)                                                                        \
    static int i2s_fwd_##SUF(oar_kernel_ctx_t *k)                                                       \
    {                                                                                                   \
        const oar_i2s_attrs_t *a = oar_k_attrs(k);                                                      \
        oar_tensor_t *xt = oar_k_input(k, OAR_I2S_X, 0);                                                \
        i2s_geom_t g;                                                                                   \
        OAR_TRY(i2s_setup(k, xt, oar_k_input(k, OAR_I2S_Y, 0), &g));                                    \
        const int64_t cols = g.c * a->ks[0] * a->ks[1];                                                 \
        void *ov;                                                                                       \
        int rc = oar_k_output_sized(k, OAR_I2S_OUT, "Out", DT, g.row0[g.n] * cols, false, &ov);         \
        if (rc == OAR_OK) {                                                                             \
            const T *xv = oar_tensor_data(xt);                                                          \
            T *o = ov;                                                                                  \
            I2S_EACH(g, a, { o[r * cols + q] = xi < 0 ? (T)0 : xv[xi]; })                               \
            /* one sequence per image */                                                                \
            const int64_t *lv[1] = {g.row0};                                                            \
            const int64_t sz[1] = {g.n + 1};                                                            \
            rc = oar_tensor_set_lod(oar_k_output(k, OAR_I2S_OUT, 0), 1, lv, sz);                        \
            if (rc != OAR_OK) rc = oar_k_error(k, rc, "cannot set Out's LoD: %s", oar_last_error());    \
        }                                                                                               \
        i2s_free(&g);                                                                                   \
        return rc;                                                                                      \
    }                                                                                                   \
    static int i2s_bwd_##SUF(oar_kernel_ctx_t *k)                                                       \
    {                                                                                                   \
        const oar_i2s_attrs_t *a = oar_k_attrs(k);                                                      \
        oar_tensor_t *xt = oar_k_input(k, OAR_I2SG_X, 0);                                               \
        i2s_geom_t g;                                                                                   \
        OAR_TRY(i2s_setup(k, xt, NULL, &g));                                                            \
        const int64_t cols = g.c * a->ks[0] * a->ks[1];                                                 \
        const void *dv;                                                                                 \
        void *dxv = NULL;                                                                               \
        int rc = oar_k_input_sized(k, OAR_I2SG_DOUT, "Out@GRAD", DT, g.row0[g.n] * cols, &dv);          \
        if (rc == OAR_OK) rc = oar_k_output_sized(k, OAR_I2SG_DX, "X@GRAD", DT, oar_tensor_numel(xt), true, &dxv); \
        if (rc == OAR_OK && dxv) {                                                                      \
            const T *d = dv;                                                                            \
            T *dx = dxv;                                                                                \
            memset(dx, 0, sizeof(T) * (size_t)oar_tensor_numel(xt));                                    \
            I2S_EACH(g, a, { if (xi >= 0) dx[xi] += d[r * cols + q]; })                                 \
        }                                                                                               \
        i2s_free(&g);                                                                                   \
        return rc;                                                                                      \
    }                                                                                                   \
    OAR_REGISTER_KERNEL("im2sequence", OAR_PLACE_CPU, DT, i2s_fwd_##SUF)                                \
    OAR_REGISTER_KERNEL("im2sequence_grad", OAR_PLACE_CPU, DT, i2s_bwd_##SUF)                           \
                                                                                                        \
    static int cs_fwd_##SUF(oar_kernel_ctx_t *k)                                                        \
    {                                                                                                   \
        oar_tensor_t *xt = oar_k_input(k, OAR_CSHIFT_X, 0), *yt = oar_k_input(k, OAR_CSHIFT_Y, 0);      \
        if (xt->ndim != 2 || yt->ndim != 2 || yt->dims[0] != xt->dims[0] || yt->dims[1] > xt->dims[1])  \
            return oar_k_error(k, OAR_ERR_SHAPE, "X [B, M] and Y [B, N] (N <= M) are required");        \
        const int64_t B = xt->dims[0], M = xt->dims[1], N = yt->dims[1], h = (N - 1) / 2;               \
        void *ov;                                                                                       \
        OAR_TRY(oar_k_output_sized(k, OAR_CSHIFT_OUT, "Out", DT, B * M, false, &ov));                   \
        const T *x = oar_tensor_data(xt), *y = oar_tensor_data(yt);                                     \
        T *o = ov;                                                                                      \
        for (int64_t b = 0; b < B; b++)                                                                 \
            for (int64_t i = 0; i < M; i++) {                                                           \
                T s = 0;                                                                                \
                for (int64_t j = 0; j < N; j++) s += x[b * M + ((i + j - h) % M + M) % M] * y[b * N + j]; \
                o[b * M + i] = s;                                                                       \
            }                                                                                           \
        return OAR_OK;                                                                                  \
    }                                                                                                   \
    static int cs_bwd_##SUF(oar_kernel_ctx_t *k)                                                        \
    {                                                                                                   \
        oar_tensor_t *xt = oar_k_input(k, OAR_CSHIFTG_X, 0), *yt = oar_k_input(k, OAR_CSHIFTG_Y, 0);    \
        if (xt->ndim != 2 || yt->ndim != 2 || yt->dims[0] != xt->dims[0] || yt->dims[1] > xt->dims[1])  \
            return oar_k_error(k, OAR_ERR_SHAPE, "X [B, M] and Y [B, N] (N <= M) are required");        \
        const int64_t B = xt->dims[0], M = xt->dims[1], N = yt->dims[1], h = (N - 1) / 2;               \
        const void *dv;                                                                                 \
        OAR_TRY(oar_k_input_sized(k, OAR_CSHIFTG_DOUT, "Out@GRAD", DT, B * M, &dv));                    \
        void *dxv, *dyv;                                                                                \
        OAR_TRY(oar_k_output_sized(k, OAR_CSHIFTG_DX, "X@GRAD", DT, B * M, true, &dxv));                \
        OAR_TRY(oar_k_output_sized(k, OAR_CSHIFTG_DY, "Y@GRAD", DT, B * N, true, &dyv));                \
        const T *x = oar_tensor_data(xt), *y = oar_tensor_data(yt), *d = dv;                            \
        T *dx = dxv, *dy = dyv;                                                                         \
        if (dx) memset(dx, 0, sizeof(T) * (size_t)(B * M));                                             \
        if (dy) memset(dy, 0, sizeof(T) * (size_t)(B * N));                                             \
        for (int64_t b = 0; b < B; b++)                                                                 \
            for (int64_t i = 0; i < M; i++)                                                             \
                for (int64_t j = 0; j < N; j++) {                                                       \
                    const int64_t xi = b * M + ((i + j - h) % M + M) % M;                               \
                    if (dx) dx[xi] += d[b * M + i] * y[b * N + j];                                      \
                    if (dy) dy[b * N + j] += d[b * M + i] * x[xi];                                      \
                }                                                                                       \
        return OAR_OK;                                                                                  \
    }                                                                                                   \
    OAR_REGISTER_KERNEL("conv_shift", OAR_PLACE_CPU, DT, cs_fwd_##SUF)                                  \
    OAR_REGISTER_KERNEL("conv_shift_grad", OAR_PLACE_CPU, DT, cs_bwd_##SUF)

VSEQ_KERNELS(float, f32, OAR_FP32)
VSEQ_KERNELS(double, f64, OAR_FP64)
