/* vision_seq.c — CPU kernels of im2sequence, conv_shift and their grads
 * (float32, float64). One thread; every gradient cell sums in one fixed
 * order. */
#include <stdlib.h>
#include <string.h>
#include "op.h"
#include "ops/vision_seq.h"

typedef struct {
    int64_t n, c, h, w, oh, ow;
} i2s_geom_t;

static int i2s_setup(oar_kernel_ctx_t *k, const oar_tensor_t *x, i2s_geom_t *g) {
    const oar_i2s_attrs_t *a = oar_k_attrs(k);
    if (x->ndim != 4) return oar_k_error(k, OAR_ERR_SHAPE, "X ('%s') must be 4-D", oar_k_input_name(k, 0, 0));
    g->n = x->dims[0]; g->c = x->dims[1]; g->h = x->dims[2]; g->w = x->dims[3];
    const int64_t rh = g->h + a->pd[0] + a->pd[2] - a->ks[0], rw = g->w + a->pd[1] + a->pd[3] - a->ks[1];
    if (rh < 0 || rw < 0) return oar_k_error(k, OAR_ERR_SHAPE, "X ('%s'): the window is larger than the padded input",
                                             oar_k_input_name(k, 0, 0));
    g->oh = rh / a->st[0] + 1;
    g->ow = rw / a->st[1] + 1;
    return OAR_OK;
}

/* calls BODY for every (out row r, out column q, image offset xi or -1) */
#define I2S_EACH(g, a, BODY)                                                                            \
    for (int64_t b = 0; b < (g).n; b++)                                                                 \
        for (int64_t y = 0; y < (g).oh; y++)                                                            \
            for (int64_t x0 = 0; x0 < (g).ow; x0++) {                                                   \
                const int64_t r = (b * (g).oh + y) * (g).ow + x0;                                       \
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
        OAR_TRY(i2s_setup(k, xt, &g));                                                                  \
        const int64_t cols = g.c * a->ks[0] * a->ks[1];                                                 \
        void *ov;                                                                                       \
        OAR_TRY(oar_k_output_sized(k, OAR_I2S_OUT, "Out", DT, g.n * g.oh * g.ow * cols, false, &ov));   \
        const T *xv = oar_tensor_data(xt);                                                              \
        T *o = ov;                                                                                      \
        I2S_EACH(g, a, { o[r * cols + q] = xi < 0 ? (T)0 : xv[xi]; })                                   \
        /* one sequence of oh ow rows per image */                                                      \
        int64_t *offs = malloc(sizeof(int64_t) * (size_t)(g.n + 1));                                    \
        if (!offs) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate Out's LoD");                   \
        for (int64_t b = 0; b <= g.n; b++) offs[b] = b * g.oh * g.ow;                                   \
        const int64_t *lv[1] = {offs};                                                                  \
        const int64_t sz[1] = {g.n + 1};                                                                \
        int rc = oar_tensor_set_lod(oar_k_output(k, OAR_I2S_OUT, 0), 1, lv, sz);                        \
        free(offs);                                                                                     \
        if (rc != OAR_OK) return oar_k_error(k, rc, "cannot set Out's LoD: %s", oar_last_error());      \
        return OAR_OK;                                                                                  \
    }                                                                                                   \
    static int i2s_bwd_##SUF(oar_kernel_ctx_t *k)                                                       \
    {                                                                                                   \
        const oar_i2s_attrs_t *a = oar_k_attrs(k);                                                      \
        oar_tensor_t *xt = oar_k_input(k, OAR_I2SG_X, 0);                                               \
        i2s_geom_t g;                                                                                   \
        OAR_TRY(i2s_setup(k, xt, &g));                                                                  \
        const int64_t cols = g.c * a->ks[0] * a->ks[1];                                                 \
        const void *dv;                                                                                 \
        OAR_TRY(oar_k_input_sized(k, OAR_I2SG_DOUT, "Out@GRAD", DT, g.n * g.oh * g.ow * cols, &dv));    \
        void *dxv;                                                                                      \
        OAR_TRY(oar_k_output_sized(k, OAR_I2SG_DX, "X@GRAD", DT, oar_tensor_numel(xt), true, &dxv));    \
        if (!dxv) return OAR_OK;                                                                        \
        const T *d = dv;                                                                                \
        T *dx = dxv;                                                                                    \
        memset(dx, 0, sizeof(T) * (size_t)oar_tensor_numel(xt));                                        \
        I2S_EACH(g, a, { if (xi >= 0) dx[xi] += d[r * cols + q]; })                                     \
        return OAR_OK;                                                                                  \
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
