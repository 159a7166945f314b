/*
 * seq_more.c — CPU kernels of add_position_encoding, row_conv,
 * sequence_topk_avg_pooling, match_matrix_tensor and their grads
 * (src/ops/seq_more.ops), float32 and float64, one body per dtype from a
 * macro. Inference has checked shapes, dtypes and LoDs; the kernels read
 * the sequences from the LoD (or from the dims where a 3-D input has none).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "op.h"
#include "sequence_batch.h"
#include "ops/seq_more.h"

static const char *nm(const char *s) { return s ? s : "?"; }

/* the sequences of input x: its LoD's offsets, or (3-D input without LoD)
 * dims[0] sequences of dims[1] rows each, built into *own (free it) */
static int seqs_of(oar_kernel_ctx_t *k, int slot, const oar_tensor_t *x, const int64_t **offs, int64_t *n,
                   int64_t **own)
{
    *own = NULL;
    if (x->lod_levels >= 1) {
        *offs = x->lod[0];
        *n = x->lod_size[0];
        return OAR_OK;
    }
    if (x->ndim != 3)
        return oar_k_error(k, OAR_ERR_SHAPE, "input '%s' has no LoD and is not 3-D", nm(oar_k_input_name(k, slot, 0)));
    *own = oar_xmalloc(sizeof(int64_t) * (size_t)(x->dims[0] + 1));
    if (!*own) return oar_k_error(k, OAR_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i <= x->dims[0]; i++) (*own)[i] = i * x->dims[1];
    *offs = *own;
    *n = x->dims[0] + 1;
    return OAR_OK;
}

/* the positions of the k largest of row[0..len) (first index on ties),
 * -1 past len: Fluid's topk order */
static void topk_pos(int dt, const void *row, int64_t len, int k, int32_t *pos, unsigned char *taken)
{
    memset(taken, 0, (size_t)len);
    int real = k < len ? k : (int)len;
    for (int m = 0; m < real; m++) {
        int64_t best = -1;
        double bv = 0;
        for (int64_t i = 0; i < len; i++) {
            if (taken[i]) continue;
            double v = dt == OAR_FP32 ? ((const float *)row)[i] : ((const double *)row)[i];
            if (best < 0 || v > bv) { best = i; bv = v; }
        }
        taken[best] = 1;
        pos[m] = (int32_t)best;
    }
    for (int m = real; m < k; m++) pos[m] = -1;
}

/* the per-pair output offsets of match_matrix_tensor: n of them (X's
 * sequence count + 1), into *top (free it) */
static int mmt_offsets(oar_kernel_ctx_t *k, const oar_tensor_t *x, const oar_tensor_t *y, int dim_t, int64_t **top)
{
    int64_t n = x->lod_size[0];
    if (y->lod_levels < 1 || y->lod_size[0] != n)
        return oar_k_error(k, OAR_ERR_SHAPE, "X and Y must have the same number of sequences");
    *top = oar_xmalloc(sizeof(int64_t) * (size_t)n);
    if (!*top) return oar_k_error(k, OAR_ERR_NOMEM, "out of memory");
    (*top)[0] = 0;
    for (int64_t b = 0; b + 1 < n; b++)
        (*top)[b + 1] = (*top)[b] +
                        (int64_t)dim_t * (x->lod[0][b + 1] - x->lod[0][b]) * (y->lod[0][b + 1] - y->lod[0][b]);
    return OAR_OK;
}

#define SEQ_MORE_KERNELS(SUF, T, DT)                                                                                  \
    static int ape_fwd_##SUF(oar_kernel_ctx_t *k)                                                                     \
    {                                                                                                                 \
        const oar_ape_attrs_t *a = oar_k_attrs(k);                                                                    \
        const oar_tensor_t *x;                                                                                        \
        const void *xp;                                                                                               \
        OAR_TRY(oar_sk_input(k, OAR_APE_X, "X", DT, &x, &xp));                                                        \
        const int64_t *offs;                                                                                          \
        int64_t n, *own;                                                                                              \
        OAR_TRY(seqs_of(k, OAR_APE_X, x, &offs, &n, &own));                                                           \
        const int64_t D = x->dims[x->ndim - 1], half = D / 2;                                                         \
        void *op;                                                                                                     \
        int rc = oar_k_output_sized(k, OAR_APE_OUT, "Out", DT, oar_tensor_numel_of(x), false, &op);                   \
        if (rc != OAR_OK) { free(own); return rc; }                                                                   \
        const T *xv = xp;                                                                                             \
        T *y = op;                                                                                                    \
        for (int64_t s = 0; s + 1 < n; s++)                                                                           \
            for (int64_t r = offs[s]; r < offs[s + 1]; r++) {                                                         \
                const double j = (double)(r - offs[s]);                                                               \
                const T *xr = xv + r * D;                                                                             \
                T *yr = y + r * D;                                                                                    \
                for (int64_t q = 0; q < half; q++) {                                                                  \
                    double v = half > 1 ? j / pow(10000.0, (double)q / (double)(half - 1)) : j / 10000.0;             \
                    yr[q] = (T)(xr[q] * a->alpha + sin(v) * a->beta);                                                 \
                    yr[half + q] = (T)(xr[half + q] * a->alpha + cos(v) * a->beta);                                   \
                }                                                                                                     \
            }                                                                                                         \
        free(own);                                                                                                    \
        return OAR_OK;                                                                                                \
    }                                                                                                                 \
    static int ape_bwd_##SUF(oar_kernel_ctx_t *k)                                                                     \
    {                                                                                                                 \
        const oar_ape_attrs_t *a = oar_k_attrs(k);                                                                    \
        const oar_tensor_t *g;                                                                                        \
        const void *gp;                                                                                               \
        OAR_TRY(oar_sk_input(k, OAR_APEG_DOUT, "Out@GRAD", DT, &g, &gp));                                             \
        const int64_t n = oar_tensor_numel_of(g);                                                                     \
        void *dx;                                                                                                     \
        OAR_TRY(oar_k_output_sized(k, OAR_APEG_DX, "X@GRAD", DT, n, true, &dx));                                      \
        for (int64_t i = 0; dx && i < n; i++) ((T *)dx)[i] = (T)(((const T *)gp)[i] * a->alpha);                      \
        return OAR_OK;                                                                                                \
    }                                                                                                                 \
    static int row_conv_fwd_##SUF(oar_kernel_ctx_t *k)                                                                \
    {                                                                                                                 \
        const oar_tensor_t *x, *f;                                                                                    \
        const void *xp, *fp;                                                                                          \
        OAR_TRY(oar_sk_input(k, OAR_ROWCONV_X, "X", DT, &x, &xp));                                                    \
        OAR_TRY(oar_sk_input(k, OAR_ROWCONV_FILTER, "Filter", DT, &f, &fp));                                          \
        const int64_t *offs;                                                                                          \
        int64_t n, *own;                                                                                              \
        OAR_TRY(seqs_of(k, OAR_ROWCONV_X, x, &offs, &n, &own));                                                       \
        const int64_t D = x->dims[x->ndim - 1], ctx = f->dims[0];                                                     \
        void *op;                                                                                                     \
        int rc = oar_k_output_sized(k, OAR_ROWCONV_OUT, "Out", DT, oar_tensor_numel_of(x), false, &op);               \
        if (rc != OAR_OK) { free(own); return rc; }                                                                   \
        const T *xv = xp, *w = fp;                                                                                    \
        T *y = op;                                                                                                    \
        for (int64_t s = 0; s + 1 < n; s++)                                                                           \
            for (int64_t r = offs[s]; r < offs[s + 1]; r++)                                                           \
                for (int64_t d = 0; d < D; d++) {                                                                     \
                    T acc = 0;                                                                                        \
                    for (int64_t q = 0; q < ctx && r + q < offs[s + 1]; q++)                    \
                        acc += w[q * D + d] * xv[(r + q) * D + d]; \
                    y[r * D + d] = acc;                                                                               \
                }                                                                                                     \
        free(own);                                                                                                    \
        return OAR_OK;                                                                                                \
    }                                                                                                                 \
    static int row_conv_bwd_##SUF(oar_kernel_ctx_t *k)                                                                \
    {                                                                                                                 \
        const oar_tensor_t *x, *f, *g;                                                                                \
        const void *xp, *fp, *gp;                                                                                     \
        OAR_TRY(oar_sk_input(k, OAR_ROWCONVG_X, "X", DT, &x, &xp));                                                   \
        OAR_TRY(oar_sk_input(k, OAR_ROWCONVG_FILTER, "Filter", DT, &f, &fp));                                         \
        OAR_TRY(oar_sk_input(k, OAR_ROWCONVG_DOUT, "Out@GRAD", DT, &g, &gp));                                         \
        if (oar_tensor_numel_of(g) != oar_tensor_numel_of(x))                                                         \
            return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD '%s' does not have X's size",                              \
                               nm(oar_k_input_name(k, OAR_ROWCONVG_DOUT, 0)));                                        \
        void *dxp, *dfp;                                                                                              \
        OAR_TRY(oar_k_output_sized(k, OAR_ROWCONVG_DX, "X@GRAD", DT, oar_tensor_numel_of(x), true, &dxp));            \
        OAR_TRY(oar_k_output_sized(k, OAR_ROWCONVG_DFILTER, "Filter@GRAD", DT, oar_tensor_numel_of(f), true, &dfp));  \
        const int64_t *offs;                                                                                          \
        int64_t n, *own;                                                                                              \
        OAR_TRY(seqs_of(k, OAR_ROWCONVG_X, x, &offs, &n, &own));                                                      \
        const int64_t D = x->dims[x->ndim - 1], ctx = f->dims[0];                                                     \
        const T *xv = xp, *w = fp, *dy = gp;                                                                          \
        T *dx = dxp, *df = dfp;                                                                                       \
        if (dx) memset(dx, 0, sizeof(T) * (size_t)oar_tensor_numel_of(x));                                            \
        if (df) memset(df, 0, sizeof(T) * (size_t)oar_tensor_numel_of(f));                                            \
        for (int64_t s = 0; s + 1 < n; s++)                                                                           \
            for (int64_t r = offs[s]; r < offs[s + 1]; r++)                                                           \
                for (int64_t q = 0; q < ctx && r + q < offs[s + 1]; q++)                                              \
                    for (int64_t d = 0; d < D; d++) {                                                                 \
                        if (dx) dx[(r + q) * D + d] += w[q * D + d] * dy[r * D + d];                                  \
                        if (df) df[q * D + d] += xv[(r + q) * D + d] * dy[r * D + d];                                 \
                    }                                                                                                 \
        free(own);                                                                                                    \
        return OAR_OK;                                                                                                \
    }                                                                                                                 \
    static int topk_fwd_##SUF(oar_kernel_ctx_t *k)                                                                    \
    {                                                                                                                 \
        const oar_topkavg_attrs_t *a = oar_k_attrs(k);                                                                \
        const oar_tensor_t *x, *row = oar_k_input(k, OAR_TOPKAVG_ROW, 0);                               \
        const oar_tensor_t *col = oar_k_input(k, OAR_TOPKAVG_COLUMN, 0); \
        const void *xp;                                                                                               \
        OAR_TRY(oar_sk_input(k, OAR_TOPKAVG_X, "X", DT, &x, &xp));                                                    \
        if (!row || !col || row->lod_levels < 1 || col->lod_levels < 1 || x->lod_levels < 1)                          \
            return oar_k_error(k, OAR_ERR_INVALID, "X, ROW and COLUMN must be LoD tensors");                          \
        const int64_t *xo = x->lod[0], *ro = row->lod[0], *co = col->lod[0], nb = row->lod_size[0] - 1;               \
        const int C = a->channel_num, nk = a->topks.n, maxk = a->topks.v[nk - 1];                                     \
        const int64_t rows = ro[nb];                                                                                  \
        void *op, *pp;                                                                                                \
        OAR_TRY(oar_k_output_sized(k, OAR_TOPKAVG_OUT, "Out", DT, rows * C * nk, false, &op));                        \
        OAR_TRY(oar_k_output_sized(k, OAR_TOPKAVG_POS, "pos", OAR_INT32, rows * C * maxk, false, &pp));               \
        int64_t maxcol = 1;                                                                                           \
        for (int64_t b = 0; b < nb; b++) maxcol = co[b + 1] - co[b] > maxcol ? co[b + 1] - co[b] : maxcol;            \
        unsigned char *taken = oar_xmalloc((size_t)maxcol);                                                           \
        T *sum = oar_xmalloc(sizeof(T) * (size_t)maxk);                                                               \
        if (!taken || !sum) { free(taken); free(sum); return oar_k_error(k, OAR_ERR_NOMEM, "out of memory"); }        \
        const T *xv = xp;                                                                                             \
        T *out = op;                                                                                                  \
        int32_t *pos = pp;                                                                                            \
        for (int64_t b = 0; b < nb; b++) {                                                                            \
            const int64_t nr = ro[b + 1] - ro[b], nc = co[b + 1] - co[b];                                             \
            for (int ch = 0; ch < C; ch++)                                                                            \
                for (int64_t r = 0; r < nr; r++) {                                                                    \
                    const T *rd = xv + xo[b] + (ch * nr + r) * nc;                                                    \
                    int32_t *ps = pos + ((ro[b] + r) * C + ch) * maxk;                                                \
                    T *os = out + ((ro[b] + r) * C + ch) * nk;                                                        \
                    topk_pos(DT, rd, nc, maxk, ps, taken);                                                            \
                    T acc = 0;                                                                                        \
                    for (int q = 0; q < maxk; q++) {                                                                  \
                        if (ps[q] >= 0) acc += rd[ps[q]];                                                             \
                        sum[q] = acc;                                                                                 \
                    }                                                                                                 \
                    for (int m = 0; m < nk; m++) os[m] = sum[a->topks.v[m] - 1] / (T)a->topks.v[m];                   \
                }                                                                                                     \
        }                                                                                                             \
        free(taken);                                                                                                  \
        free(sum);                                                                                                    \
        return OAR_OK;                                                                                                \
    }                                                                                                                 \
    static int topk_bwd_##SUF(oar_kernel_ctx_t *k)                                                                    \
    {                                                                                                                 \
        const oar_topkavg_attrs_t *a = oar_k_attrs(k);                                                                \
        const oar_tensor_t *x, *row = oar_k_input(k, OAR_TOPKAVGG_ROW, 0);                              \
        const oar_tensor_t *col = oar_k_input(k, OAR_TOPKAVGG_COLUMN, 0); \
        const oar_tensor_t *pt, *gt;                                                                                  \
        const void *xp, *pp, *gp;                                                                                     \
        OAR_TRY(oar_sk_input(k, OAR_TOPKAVGG_X, "X", DT, &x, &xp));                                                   \
        if (!row || !col || row->lod_levels < 1 || col->lod_levels < 1 || x->lod_levels < 1)                          \
            return oar_k_error(k, OAR_ERR_INVALID, "X, ROW and COLUMN must be LoD tensors");                          \
        const int64_t *xo = x->lod[0], *ro = row->lod[0], *co = col->lod[0], nb = row->lod_size[0] - 1;               \
        const int C = a->channel_num, nk = a->topks.n, maxk = a->topks.v[nk - 1];                                     \
        OAR_TRY(oar_sk_input(k, OAR_TOPKAVGG_POS, "pos", OAR_INT32, &pt, &pp));                                       \
        OAR_TRY(oar_sk_input(k, OAR_TOPKAVGG_DOUT, "Out@GRAD", DT, &gt, &gp));                                        \
        if (oar_tensor_numel_of(pt) != ro[nb] * C * maxk || oar_tensor_numel_of(gt) != ro[nb] * C * nk)               \
            return oar_k_error(k, OAR_ERR_SHAPE, "pos or Out@GRAD does not fit ROW's rows x channel_num");            \
        void *dxp;                                                                                                    \
        OAR_TRY(oar_k_output_sized(k, OAR_TOPKAVGG_DX, "X@GRAD", DT, oar_tensor_numel_of(x), true, &dxp));            \
        if (!dxp) return OAR_OK;                                                                                      \
        T *dx = dxp;                                                                                                  \
        const T *g = gp;                                                                                              \
        const int32_t *pos = pp;                                                                                      \
        memset(dx, 0, sizeof(T) * (size_t)oar_tensor_numel_of(x));                                                    \
        for (int64_t b = 0; b < nb; b++) {                                                                            \
            const int64_t nr = ro[b + 1] - ro[b], nc = co[b + 1] - co[b];                                             \
            for (int ch = 0; ch < C; ch++)                                                                            \
                for (int64_t r = 0; r < nr; r++) {                                                                    \
                    T *dr = dx + xo[b] + (ch * nr + r) * nc;                                                          \
                    const int32_t *ps = pos + ((ro[b] + r) * C + ch) * maxk;                                          \
                    const T *gs = g + ((ro[b] + r) * C + ch) * nk;                                                    \
                    for (int m = 0; m < nk; m++)                                                                      \
                        for (int q = 0; q < a->topks.v[m] && ps[q] >= 0; q++) {                                       \
                            if (ps[q] >= nc) return oar_k_error(k, OAR_ERR_RANGE, "pos holds %d; the row has %lld",   \
                                                                (int)ps[q], (long long)nc);                           \
                            dr[ps[q]] += gs[m] / (T)a->topks.v[m];                                                    \
                        }                                                                                             \
                }                                                                                                     \
        }                                                                                                             \
        return OAR_OK;                                                                                                \
    }                                                                                                                 \
    static int mmt_fwd_##SUF(oar_kernel_ctx_t *k)                                                                     \
    {                                                                                                                 \
        const oar_mmt_attrs_t *a = oar_k_attrs(k);                                                                    \
        const oar_tensor_t *x, *y, *w;                                                                                \
        const void *xp, *yp, *wp;                                                                                     \
        OAR_TRY(oar_sk_input(k, OAR_MMT_X, "X", DT, &x, &xp));                                                        \
        OAR_TRY(oar_sk_input(k, OAR_MMT_Y, "Y", DT, &y, &yp));                                                        \
        OAR_TRY(oar_sk_input(k, OAR_MMT_W, "W", DT, &w, &wp));                                                        \
        const int64_t dx = x->dims[1], dy = y->dims[1], nt = a->dim_t, nx = x->dims[0];                               \
        int64_t *top;                                                                                                 \
        OAR_TRY(mmt_offsets(k, x, y, a->dim_t, &top));                                                                \
        const int64_t nb = x->lod_size[0] - 1;                                                                        \
        void *op, *tp;                                                                                                \
        int rc = oar_k_output_sized(k, OAR_MMT_OUT, "Out", DT, top[nb], false, &op);                                  \
        if (rc == OAR_OK) rc = oar_k_output_sized(k, OAR_MMT_TMP, "Tmp", DT, nx * nt * dy, false, &tp);               \
        if (rc == OAR_OK) rc = oar_sk_set_lod1(k, OAR_MMT_OUT, top, nb + 1);                                                 \
        if (rc != OAR_OK) { free(top); return rc; }                                                                   \
        const T *xv = xp, *yv = yp, *wv = wp;                                                                         \
        T *out = op, *tmp = tp;                                                                                       \
        for (int64_t r = 0; r < nx; r++)                                                                              \
            for (int64_t c = 0; c < nt * dy; c++) {                                                                   \
                T acc = 0;                                                                                            \
                for (int64_t i = 0; i < dx; i++) acc += xv[r * dx + i] * wv[i * nt * dy + c];                         \
                tmp[r * nt * dy + c] = acc;                                                                           \
            }                                                                                                         \
        for (int64_t b = 0; b < nb; b++) {                                                                            \
            const int64_t x0 = x->lod[0][b], lx = x->lod[0][b + 1] - x0;                                \
            const int64_t y0 = y->lod[0][b], ly = y->lod[0][b + 1] - y0; \
            for (int64_t t = 0; t < nt; t++)                                                                          \
                for (int64_t i = 0; i < lx; i++)                                                                      \
                    for (int64_t j = 0; j < ly; j++) {                                                                \
                        const T *tr = tmp + ((x0 + i) * nt + t) * dy, *yr = yv + (y0 + j) * dy;                       \
                        T acc = 0;                                                                                    \
                        for (int64_t q = 0; q < dy; q++) acc += tr[q] * yr[q];                                        \
                        out[top[b] + (t * lx + i) * ly + j] = acc;                                                    \
                    }                                                                                                 \
        }                                                                                                             \
        free(top);                                                                                                    \
        return OAR_OK;                                                                                                \
    }                                                                                                                 \
    static int mmt_bwd_##SUF(oar_kernel_ctx_t *k)                                                                     \
    {                                                                                                                 \
        const oar_mmt_attrs_t *a = oar_k_attrs(k);                                                                    \
        const oar_tensor_t *x, *y, *w, *tt, *gt;                                                                      \
        const void *xp, *yp, *wp, *tpp, *gp;                                                                          \
        OAR_TRY(oar_sk_input(k, OAR_MMTG_X, "X", DT, &x, &xp));                                                       \
        OAR_TRY(oar_sk_input(k, OAR_MMTG_Y, "Y", DT, &y, &yp));                                                       \
        OAR_TRY(oar_sk_input(k, OAR_MMTG_W, "W", DT, &w, &wp));                                                       \
        OAR_TRY(oar_sk_input(k, OAR_MMTG_TMP, "Tmp", DT, &tt, &tpp));                                                 \
        OAR_TRY(oar_sk_input(k, OAR_MMTG_DOUT, "Out@GRAD", DT, &gt, &gp));                                            \
        const int64_t dx = x->dims[1], dy = y->dims[1], nt = a->dim_t, nx = x->dims[0];                               \
        if (oar_tensor_numel_of(tt) != nx * nt * dy)                                                                  \
            return oar_k_error(k, OAR_ERR_SHAPE, "Tmp '%s' does not hold X's rows x dim_t x dy values",               \
                               nm(oar_k_input_name(k, OAR_MMTG_TMP, 0)));                                             \
        int64_t *top;                                                                                                 \
        OAR_TRY(mmt_offsets(k, x, y, a->dim_t, &top));                                                                \
        const int64_t nb = x->lod_size[0] - 1;                                                                        \
        void *dxp = NULL, *dyp = NULL, *dwp = NULL;                                                                   \
        int rc = oar_tensor_numel_of(gt) == top[nb] ? OAR_OK                                                          \
                 : oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD has %lld values; %lld expected",                           \
                               (long long)oar_tensor_numel_of(gt), (long long)top[nb]);                               \
        if (rc == OAR_OK) rc = oar_k_output_sized(k, OAR_MMTG_DX, "X@GRAD", DT, nx * dx, true, &dxp);                 \
        if (rc == OAR_OK) rc = oar_k_output_sized(k, OAR_MMTG_DY, "Y@GRAD", DT, oar_tensor_numel_of(y), true, &dyp);  \
        if (rc == OAR_OK) rc = oar_k_output_sized(k, OAR_MMTG_DW, "W@GRAD", DT, oar_tensor_numel_of(w), true, &dwp);  \
        T *dtmp = rc == OAR_OK ? oar_xcalloc((size_t)(nx * nt * dy > 0 ? nx * nt * dy : 1), sizeof(T)) : NULL;        \
        if (rc == OAR_OK && !dtmp) rc = oar_k_error(k, OAR_ERR_NOMEM, "out of memory");                               \
        if (rc != OAR_OK) { free(top); return rc; }                                                                   \
        const T *xv = xp, *yv = yp, *wv = wp, *tmp = tpp, *g = gp;                                                    \
        T *dyv = dyp;                                                                                                 \
        if (dyv) memset(dyv, 0, sizeof(T) * (size_t)oar_tensor_numel_of(y));                                          \
        for (int64_t b = 0; b < nb; b++) {                                                                            \
            const int64_t x0 = x->lod[0][b], lx = x->lod[0][b + 1] - x0;                                \
            const int64_t y0 = y->lod[0][b], ly = y->lod[0][b + 1] - y0; \
            for (int64_t t = 0; t < nt; t++)                                                                          \
                for (int64_t i = 0; i < lx; i++)                                                                      \
                    for (int64_t j = 0; j < ly; j++) {                                                                \
                        const T d = g[top[b] + (t * lx + i) * ly + j];                                                \
                        const int64_t tr = ((x0 + i) * nt + t) * dy, yr = (y0 + j) * dy;                              \
                        for (int64_t q = 0; q < dy; q++) {                                                            \
                            dtmp[tr + q] += d * yv[yr + q];                                                           \
                            if (dyv) dyv[yr + q] += d * tmp[tr + q];                                                  \
                        }                                                                                             \
                    }                                                                                                 \
        }                                                                                                             \
        if (dxp)                                                                                                      \
            for (int64_t r = 0; r < nx; r++)                                                                          \
                for (int64_t i = 0; i < dx; i++) {                                                                    \
                    T acc = 0;                                                                                        \
                    for (int64_t c = 0; c < nt * dy; c++) acc += dtmp[r * nt * dy + c] * wv[i * nt * dy + c];         \
                    ((T *)dxp)[r * dx + i] = acc;                                                                     \
                }                                                                                                     \
        if (dwp)                                                                                                      \
            for (int64_t i = 0; i < dx; i++)                                                                          \
                for (int64_t c = 0; c < nt * dy; c++) {                                                               \
                    T acc = 0;                                                                                        \
                    for (int64_t r = 0; r < nx; r++) acc += xv[r * dx + i] * dtmp[r * nt * dy + c];                   \
                    ((T *)dwp)[i * nt * dy + c] = acc;                                                                \
                }                                                                                                     \
        free(dtmp);                                                                                                   \
        free(top);                                                                                                    \
        return OAR_OK;                                                                                                \
    }                                                                                                                 \
    OAR_REGISTER_KERNEL("add_position_encoding", OAR_PLACE_CPU, DT, ape_fwd_##SUF)                                    \
    OAR_REGISTER_KERNEL("add_position_encoding_grad", OAR_PLACE_CPU, DT, ape_bwd_##SUF)                               \
    OAR_REGISTER_KERNEL("row_conv", OAR_PLACE_CPU, DT, row_conv_fwd_##SUF)                                            \
    OAR_REGISTER_KERNEL("row_conv_grad", OAR_PLACE_CPU, DT, row_conv_bwd_##SUF)                                       \
    OAR_REGISTER_KERNEL("sequence_topk_avg_pooling", OAR_PLACE_CPU, DT, topk_fwd_##SUF)                               \
    OAR_REGISTER_KERNEL("sequence_topk_avg_pooling_grad", OAR_PLACE_CPU, DT, topk_bwd_##SUF)                          \
    OAR_REGISTER_KERNEL("match_matrix_tensor", OAR_PLACE_CPU, DT, mmt_fwd_##SUF)                                      \
    OAR_REGISTER_KERNEL("match_matrix_tensor_grad", OAR_PLACE_CPU, DT, mmt_bwd_##SUF)

SEQ_MORE_KERNELS(f32, float, OAR_FP32)
SEQ_MORE_KERNELS(f64, double, OAR_FP64)
