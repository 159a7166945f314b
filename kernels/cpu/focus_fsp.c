/* focus_fsp.c — CPU kernels of similarity_focus (float32, float64; no
 * gradient) and fsp with its grad. similarity_focus sorts each slice by
 * value, largest first, ties by the lower flat index (a stable order where
 * Paddle's std::sort leaves ties unspecified). fsp sums in double. */
#include <stdlib.h>
#include <string.h>
#include "op.h"
#include "ops/focus_fsp.h"

typedef struct { double v; int64_t i; } sfoc_cell_t;

static int sfoc_cmp(const void *pa, const void *pb) {
    const sfoc_cell_t *a = pa, *b = pb;
    if (a->v > b->v) return -1;
    if (a->v < b->v) return 1;
    return a->i < b->i ? -1 : (a->i > b->i);
}

#define SFOC_KERNEL(T, SUF, DT)                                                                        \
    static int sfoc_fwd_##SUF(oar_kernel_ctx_t *k) {                                                   \
        const oar_sfoc_attrs_t *a = oar_k_attrs(k);                                                    \
        oar_tensor_t *xt = oar_k_input(k, OAR_SFOC_X, 0);                                              \
        if (xt->ndim != 4) return oar_k_error(k, OAR_ERR_SHAPE, "X must be 4-D");                      \
        const int64_t *d = xt->dims, n = oar_tensor_numel(xt);                                         \
        void *ov;                                                                                      \
        OAR_TRY(oar_k_output_sized(k, OAR_SFOC_OUT, "Out", DT, n, false, &ov));                        \
        T *o = ov;                                                                                     \
        const T *x = oar_tensor_data(xt);                                                              \
        memset(o, 0, sizeof(T) * (size_t)n);                                                           \
        const int ax = a->axis;                                                                        \
        /* the slice's two dims p, q (the dims other than ax, in order) */                             \
        const int p = ax == 1 ? 2 : 1, q = ax == 3 ? 2 : 3;                                            \
        const int64_t st[4] = {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1};                              \
        const int64_t np = d[p], nq = d[q];                                                            \
        sfoc_cell_t *cells = malloc(sizeof *cells * (size_t)(np * nq + 1));                            \
        bool *tp = calloc((size_t)(np + nq + 1), 1);                                                   \
        if (!cells || !tp) {                                                                           \
            free(cells); free(tp);                                                                     \
            return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate the slices");                        \
        }                                                                                              \
        bool *tq = tp + np;                                                                            \
        const int64_t want = np < nq ? np : nq;                                                        \
        for (int64_t b = 0; b < d[0]; b++)                                                             \
            for (int ii = 0; ii < a->indexes.n; ii++) {                                                \
                const int64_t base = b * st[0] + (int64_t)a->indexes.v[ii] * st[ax];                   \
                for (int64_t u = 0; u < np; u++)                                                       \
                    for (int64_t v = 0; v < nq; v++) {                                                 \
                        cells[u * nq + v].v = (double)x[base + u * st[p] + v * st[q]];                 \
                        cells[u * nq + v].i = u * nq + v;                                              \
                    }                                                                                  \
                qsort(cells, (size_t)(np * nq), sizeof *cells, sfoc_cmp);                              \
                memset(tp, 0, (size_t)(np + nq));                                                      \
                int64_t taken = 0;                                                                     \
                for (int64_t c = 0; c < np * nq && taken < want; c++) {                                \
                    const int64_t u = cells[c].i / nq, v = cells[c].i % nq;                            \
                    if (tp[u] || tq[v]) continue;                                                      \
                    tp[u] = tq[v] = true;                                                              \
                    taken++;                                                                           \
                    for (int64_t j = 0; j < d[ax]; j++)                                                \
                        o[b * st[0] + j * st[ax] + u * st[p] + v * st[q]] = 1;                         \
                }                                                                                      \
            }                                                                                          \
        free(cells); free(tp);                                                                         \
        return OAR_OK;                                                                                 \
    }                                                                                                  \
    OAR_REGISTER_KERNEL("similarity_focus", OAR_PLACE_CPU, DT, sfoc_fwd_##SUF)

SFOC_KERNEL(float, f32, OAR_FP32)
SFOC_KERNEL(double, f64, OAR_FP64)

/* fsp geometry: N, C1, C2, H W from X and Y, which must agree */
static int fsp_geom(oar_kernel_ctx_t *k, const oar_tensor_t *x, const oar_tensor_t *y, int64_t g[4]) {
    if (x->ndim != 4 || y->ndim != 4 || x->dims[0] != y->dims[0] || x->dims[2] != y->dims[2] ||
        x->dims[3] != y->dims[3])
        return oar_k_error(k, OAR_ERR_SHAPE, "X and Y must be 4-D with the same N, H and W");
    g[0] = x->dims[0];
    g[1] = x->dims[1];
    g[2] = y->dims[1];
    g[3] = x->dims[2] * x->dims[3];
    return OAR_OK;
}

#define FSP_KERNELS(T, SUF, DT)                                                                        \
    static int fsp_fwd_##SUF(oar_kernel_ctx_t *k) {                                                    \
        oar_tensor_t *xt = oar_k_input(k, OAR_FSP_X, 0), *yt = oar_k_input(k, OAR_FSP_Y, 0);           \
        int64_t g[4] = {0, 0, 0, 0};                                                                   \
        OAR_TRY(fsp_geom(k, xt, yt, g));                                                               \
        const int64_t N = g[0], C1 = g[1], C2 = g[2], S = g[3];                                        \
        void *ov;                                                                                      \
        OAR_TRY(oar_k_output_sized(k, OAR_FSP_OUT, "Out", DT, N * C1 * C2, false, &ov));               \
        const T *x = oar_tensor_data(xt), *y = oar_tensor_data(yt);                                    \
        T *o = ov;                                                                                     \
        for (int64_t b = 0; b < N; b++)                                                                \
            for (int64_t i = 0; i < C1; i++)                                                           \
                for (int64_t j = 0; j < C2; j++) {                                                     \
                    const T *xr = x + (b * C1 + i) * S, *yr = y + (b * C2 + j) * S;                    \
                    double s = 0;                                                                      \
                    for (int64_t t = 0; t < S; t++) s += (double)xr[t] * (double)yr[t];                \
                    o[(b * C1 + i) * C2 + j] = (T)(s / (double)S);                                     \
                }                                                                                      \
        return OAR_OK;                                                                                 \
    }                                                                                                  \
    static int fsp_bwd_##SUF(oar_kernel_ctx_t *k) {                                                    \
        oar_tensor_t *xt = oar_k_input(k, OAR_FSPG_X, 0), *yt = oar_k_input(k, OAR_FSPG_Y, 0);         \
        int64_t g[4] = {0, 0, 0, 0};                                                                   \
        OAR_TRY(fsp_geom(k, xt, yt, g));                                                               \
        const int64_t N = g[0], C1 = g[1], C2 = g[2], S = g[3];                                        \
        const void *dv;                                                                                \
        OAR_TRY(oar_k_input_sized(k, OAR_FSPG_DOUT, "Out@GRAD", DT, N * C1 * C2, &dv));                \
        void *dxv, *dyv;                                                                               \
        OAR_TRY(oar_k_output_sized(k, OAR_FSPG_DX, "X@GRAD", DT, N * C1 * S, true, &dxv));             \
        OAR_TRY(oar_k_output_sized(k, OAR_FSPG_DY, "Y@GRAD", DT, N * C2 * S, true, &dyv));             \
        const T *x = oar_tensor_data(xt), *y = oar_tensor_data(yt), *dy = dv;                          \
        for (int64_t b = 0; b < N; b++) {                                                              \
            if (dxv)                                                                                   \
                for (int64_t i = 0; i < C1; i++)                                                       \
                    for (int64_t t = 0; t < S; t++) {                                                  \
                        double s = 0;                                                                  \
                        for (int64_t j = 0; j < C2; j++)                                               \
                            s += (double)dy[(b * C1 + i) * C2 + j] * (double)y[(b * C2 + j) * S + t];  \
                        ((T *)dxv)[(b * C1 + i) * S + t] = (T)(s / (double)S);                         \
                    }                                                                                  \
            if (dyv)                                                                                   \
                for (int64_t j = 0; j < C2; j++)                                                       \
                    for (int64_t t = 0; t < S; t++) {                                                  \
                        double s = 0;                                                                  \
                        for (int64_t i = 0; i < C1; i++)                                               \
                            s += (double)dy[(b * C1 + i) * C2 + j] * (double)x[(b * C1 + i) * S + t];  \
                        ((T *)dyv)[(b * C2 + j) * S + t] = (T)(s / (double)S);                         \
                    }                                                                                  \
        }                                                                                              \
        return OAR_OK;                                                                                 \
    }                                                                                                  \
    OAR_REGISTER_KERNEL("fsp", OAR_PLACE_CPU, DT, fsp_fwd_##SUF)                                       \
    OAR_REGISTER_KERNEL("fsp_grad", OAR_PLACE_CPU, DT, fsp_bwd_##SUF)

FSP_KERNELS(float, f32, OAR_FP32)
FSP_KERNELS(double, f64, OAR_FP64)
