/*
 * sequence_conv.c — CPU kernels of sequence_conv and its grad (definition
 * in src/ops/sequence.c).
 *
 * The context projection puts, for every row, the contextLength rows around
 * it (from contextStart on, within its sequence) side by side in a column
 * matrix col [N, contextLength * D]; Out = col Filter is then one GEMM.
 * Positions before a sequence's start or after its end read zeros, or with
 * paddingTrainable the rows of PaddingData: position q < 0 reads row
 * up_pad + q, position q >= L reads row up_pad + (q - L). The grad runs the
 * same map backwards: dcol = dOut Filter^T is scattered (added) into dX and
 * dPaddingData, and dFilter = col^T dOut.
 */
#include <stdlib.h>
#include <string.h>
#include "op.h"
#include "sequence_batch.h"
#include "ops/sequence_util.h"
#include "ops/seq_lod.h"

typedef struct conv_geom {
    int64_t n, d, m, cl, cs, up, down;
    const int64_t *offs; int64_t nseq;
    bool trainable;
} conv_geom_t;

/* Where position j of the context of row p in a sequence of length len comes
 * from: 0 <= return < len is a row of the sequence; otherwise *pad is the
 * PaddingData row (or -1 for zeros). */
static inline int64_t ctx_src(const conv_geom_t *g, int64_t p, int64_t j, int64_t len, int64_t *pad)
{
    int64_t q = p + g->cs + j;
    *pad = -1;
    if (q >= 0 && q < len) return q;
    if (g->trainable) *pad = q < 0 ? g->up + q : g->up + (q - len);
    return -1;
}

static void fill_col(const conv_geom_t *g, const void *x, const void *pad, void *col, size_t es)
{
    size_t rb = (size_t)g->d * es;
    for (int64_t s = 0; s < g->nseq; s++) {
        int64_t b = g->offs[s], len = g->offs[s + 1] - b;
        for (int64_t p = 0; p < len; p++)
            for (int64_t j = 0; j < g->cl; j++) {
                char *dst = (char *)col + ((size_t)(b + p) * (size_t)g->cl + (size_t)j) * rb;
                int64_t pr, q = ctx_src(g, p, j, len, &pr);
                if (q >= 0) memcpy(dst, (const char *)x + (size_t)(b + q) * rb, rb);
                else if (pr >= 0 && pad) memcpy(dst, (const char *)pad + (size_t)pr * rb, rb);
                else memset(dst, 0, rb);
            }
    }
}

#define SCATTER_COL(SFX, T)                                                           \
    static void scatter_col_##SFX(const conv_geom_t *g, const T *dcol, T *dx, T *dpad) \
    {                                                                                 \
        if (dx) memset(dx, 0, sizeof(T) * (size_t)(g->n * g->d));                     \
        if (dpad) memset(dpad, 0, sizeof(T) * (size_t)((g->up + g->down) * g->d));    \
        for (int64_t s = 0; s < g->nseq; s++) {                                       \
            int64_t b = g->offs[s], len = g->offs[s + 1] - b;                         \
            for (int64_t p = 0; p < len; p++)                                         \
                for (int64_t j = 0; j < g->cl; j++) {                                 \
                    const T *src = dcol + ((b + p) * g->cl + j) * g->d;               \
                    int64_t pr, q = ctx_src(g, p, j, len, &pr);                       \
                    T *dst = q >= 0 ? (dx ? dx + (b + q) * g->d : NULL)               \
                                    : (pr >= 0 && dpad ? dpad + pr * g->d : NULL);    \
                    if (dst) for (int64_t c = 0; c < g->d; c++) dst[c] += src[c];     \
                }                                                                     \
        }                                                                             \
    }

SCATTER_COL(f32, float)
SCATTER_COL(f64, double)

static int conv_setup(oar_kernel_ctx_t *k, conv_geom_t *g, const void **x, const void **f, const void **pad)
{
    int dt = oar_k_dtype(k);
    const oar_tensor_t *xt, *ft, *pt;
    OAR_TRY(oar_sk_input(k, OAR_SEQ_X, "X", dt, &xt, x));
    OAR_TRY(oar_sk_input(k, OAR_SEQCONV_FILTER, "Filter", dt, &ft, f));
    OAR_TRY(oar_sk_opt_input(k, OAR_SEQCONV_PADDING, "PaddingData", dt, &pt, pad));
    const oar_seqconv_attrs_t *a = oar_k_attrs(k);
    g->cl = a->context_length;
    g->cs = a->context_start;
    g->up = g->cs < 0 ? -g->cs : 0;
    g->down = g->cs + g->cl - 1 > 0 ? g->cs + g->cl - 1 : 0;
    g->trainable = a->padding_trainable;
    if (xt->ndim != 2 || ft->ndim != 2 || ft->dims[0] != g->cl * xt->dims[1]) {
        char bx[160], bf[160];
        return oar_k_error(k, OAR_ERR_SHAPE, "X shape %s and Filter shape %s do not fit contextLength %lld",
                           oar_shape_str(xt->dims, xt->ndim, bx, sizeof bx),
                           oar_shape_str(ft->dims, ft->ndim, bf, sizeof bf), (long long)g->cl);
    }
    g->n = xt->dims[0];
    g->d = xt->dims[1];
    g->m = ft->dims[1];
    if (g->trainable && g->up + g->down > 0) {
        if (!pt) return oar_k_error(k, OAR_ERR_NOT_FOUND, "paddingTrainable is true but PaddingData is missing");
        if (oar_tensor_numel_of(pt) != (g->up + g->down) * g->d)
            return oar_k_error(k, OAR_ERR_SHAPE, "PaddingData has %lld values; expected [%lld, %lld]",
                               (long long)oar_tensor_numel_of(pt), (long long)(g->up + g->down), (long long)g->d);
    }
    if (!g->trainable) *pad = NULL;
    int64_t no;
    OAR_TRY(oar_seq_lod_last(k, OAR_SEQ_X, "X", xt, &g->offs, &no));
    g->nseq = no - 1;
    int64_t dims[4] = {g->n, g->cl * g->d, g->m, g->d};
    return oar_sk_blas_dims(k, 4, dims);
}

static void *alloc_col(oar_kernel_ctx_t *k, const conv_geom_t *g, size_t es, int *rc)
{
    int64_t n;
    *rc = OAR_OK;
    if (oar_mul_checked(g->n, g->cl * g->d, &n) != OAR_OK || oar_mul_checked(n, (int64_t)es, &n) != OAR_OK) {
        *rc = oar_k_error(k, OAR_ERR_NOMEM, "the context matrix [%lld, %lld] is too large", (long long)g->n,
                          (long long)(g->cl * g->d));
        return NULL;
    }
    void *p = oar_xmalloc((size_t)(n > 0 ? n : 1));
    if (!p) *rc = oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate the context matrix [%lld, %lld]",
                              (long long)g->n, (long long)(g->cl * g->d));
    return p;
}

static int conv_fwd(oar_kernel_ctx_t *k)
{
    int dt = oar_k_dtype(k), rc;
    conv_geom_t g;
    const void *x, *f, *pad;
    OAR_TRY(conv_setup(k, &g, &x, &f, &pad));
    void *o;
    OAR_TRY(oar_k_output_sized(k, OAR_SEQCONV_OUT, "Out", dt, g.n * g.m, false, &o));
    size_t es = oar_dtype_size(dt);
    void *col = alloc_col(k, &g, es, &rc);
    if (!col) return rc;
    fill_col(&g, x, pad, col, es);
    oar_sk_gemm(dt, false, false, g.n, g.m, g.cl * g.d, 1.0, col, g.cl * g.d, f, g.m, 0.0, o, g.m);
    free(col);
    return OAR_OK;
}

static int conv_bwd(oar_kernel_ctx_t *k)
{
    int dt = oar_k_dtype(k), rc;
    conv_geom_t g;
    const void *x, *f, *pad, *gp;
    const oar_tensor_t *gt;
    OAR_TRY(conv_setup(k, &g, &x, &f, &pad));
    OAR_TRY(oar_sk_input(k, OAR_SEQCONVG_DOUT, "Out@GRAD", dt, &gt, &gp));
    if (oar_tensor_numel_of(gt) != g.n * g.m)
        return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD has %lld values; expected [%lld, %lld]",
                           (long long)oar_tensor_numel_of(gt), (long long)g.n, (long long)g.m);
    void *dx, *df, *dpad;
    OAR_TRY(oar_k_output_sized(k, OAR_SEQCONVG_DX, "X@GRAD", dt, g.n * g.d, true, &dx));
    OAR_TRY(oar_k_output_sized(k, OAR_SEQCONVG_DFILTER, "Filter@GRAD", dt, g.cl * g.d * g.m, true, &df));
    OAR_TRY(oar_k_output_sized(k, OAR_SEQCONVG_DPADDING, "PaddingData@GRAD", dt, (g.up + g.down) * g.d, true, &dpad));
    size_t es = oar_dtype_size(dt);
    void *col = alloc_col(k, &g, es, &rc);
    if (!col) return rc;
    if (df) {
        fill_col(&g, x, pad, col, es);
        oar_sk_gemm(dt, true, false, g.cl * g.d, g.m, g.n, 1.0, col, g.cl * g.d, gp, g.m, 0.0, df, g.m);
    }
    if (dx || dpad) {
        /* without trainable padding the padding's grad is zero */
        void *dp = g.trainable ? dpad : NULL;
        if (dpad && !g.trainable) memset(dpad, 0, es * (size_t)((g.up + g.down) * g.d));
        oar_sk_gemm(dt, false, true, g.n, g.cl * g.d, g.m, 1.0, gp, g.m, f, g.m, 0.0, col, g.cl * g.d);
        if (dt == OAR_FP32) scatter_col_f32(&g, col, dx, dp);
        else scatter_col_f64(&g, col, dx, dp);
    }
    free(col);
    return OAR_OK;
}

OAR_REGISTER_KERNEL("sequence_conv", OAR_PLACE_CPU, OAR_FP32, conv_fwd)
OAR_REGISTER_KERNEL("sequence_conv_grad", OAR_PLACE_CPU, OAR_FP32, conv_bwd)
static int conv_fwd64(oar_kernel_ctx_t *k) { return conv_fwd(k); }
static int conv_bwd64(oar_kernel_ctx_t *k) { return conv_bwd(k); }
OAR_REGISTER_KERNEL("sequence_conv", OAR_PLACE_CPU, OAR_FP64, conv_fwd64)
OAR_REGISTER_KERNEL("sequence_conv_grad", OAR_PLACE_CPU, OAR_FP64, conv_bwd64)
