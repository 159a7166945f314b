/*
 * sequence.c — CPU kernels of sequence_pool, sequence_softmax,
 * sequence_expand and their grads (definitions in src/ops/sequence.c).
 *
 * Every kernel walks the last LoD level of its input; rows are flattened to
 * [rows, width]. Grad outputs are written whole (zeros where nothing flows),
 * since a reused buffer is not zeroed.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "op.h"
#include "sequence_batch.h"
#include "ops/sequence_util.h"
#include "ops/seq_lod.h"

static const char *nm(const char *s) { return s ? s : "?"; }

enum {
    P_AVERAGE = OAR_SEQPOOL_AVERAGE, P_SUM = OAR_SEQPOOL_SUM, P_SQRT = OAR_SEQPOOL_SQRT,
    P_MAX = OAR_SEQPOOL_MAX, P_LAST = OAR_SEQPOOL_LAST, P_FIRST = OAR_SEQPOOL_FIRST
};

/* ---- sequence_pool ---------------------------------------------------------------- */

#define POOL_FWD(SFX, T)                                                              \
    static void pool_fwd_##SFX(int type, const T *x, T *o, int32_t *mi, const int64_t *offs, \
                               int64_t nseq, int64_t w, T pad)                        \
    {                                                                                 \
        for (int64_t s = 0; s < nseq; s++) {                                          \
            int64_t b = offs[s], e = offs[s + 1], len = e - b;                        \
            T *os = o + s * w;                                                        \
            int32_t *ms = mi ? mi + s * w : NULL;                                     \
            if (len == 0) {                                                           \
                for (int64_t j = 0; j < w; j++) os[j] = pad;                          \
                if (ms) for (int64_t j = 0; j < w; j++) ms[j] = -1;                   \
                continue;                                                             \
            }                                                                         \
            switch (type) {                                                           \
            case P_LAST: memcpy(os, x + (e - 1) * w, sizeof(T) * (size_t)w); break;   \
            case P_FIRST: memcpy(os, x + b * w, sizeof(T) * (size_t)w); break;        \
            case P_MAX:                                                               \
                memcpy(os, x + b * w, sizeof(T) * (size_t)w);                         \
                if (ms) for (int64_t j = 0; j < w; j++) ms[j] = (int32_t)b;           \
                for (int64_t r = b + 1; r < e; r++) {                                 \
                    const T *xr = x + r * w;                                          \
                    for (int64_t j = 0; j < w; j++)                                   \
                        if (xr[j] > os[j]) {                                          \
                            os[j] = xr[j];                                            \
                            if (ms) ms[j] = (int32_t)r;                               \
                        }                                                             \
                }                                                                     \
                break;                                                                \
            default: {                                                                \
                memset(os, 0, sizeof(T) * (size_t)w);                                 \
                for (int64_t r = b; r < e; r++) {                                     \
                    const T *xr = x + r * w;                                          \
                    for (int64_t j = 0; j < w; j++) os[j] += xr[j];                   \
                }                                                                     \
                T scale = type == P_AVERAGE ? (T)1 / (T)len                          \
                        : type == P_SQRT ? (T)1 / (T)sqrt((double)len) : (T)1;       \
                if (type != P_SUM) for (int64_t j = 0; j < w; j++) os[j] *= scale;    \
            }                                                                         \
            }                                                                         \
        }                                                                             \
    }                                                                                 \
    /* mi: the forward's MaxIndex, or NULL to find the maxima again in x */           \
    static void pool_bwd_##SFX(int type, const T *x, const int32_t *mi, const T *g, T *dx,    \
                               const int64_t *offs, int64_t nseq, int64_t w)          \
    {                                                                                 \
        memset(dx, 0, sizeof(T) * (size_t)(offs[nseq] * w));                          \
        for (int64_t s = 0; s < nseq; s++) {                                          \
            int64_t b = offs[s], e = offs[s + 1], len = e - b;                        \
            const T *gs = g + s * w;                                                  \
            if (len == 0) continue;                                                   \
            switch (type) {                                                           \
            case P_LAST: memcpy(dx + (e - 1) * w, gs, sizeof(T) * (size_t)w); break;  \
            case P_FIRST: memcpy(dx + b * w, gs, sizeof(T) * (size_t)w); break;       \
            case P_MAX:                                                               \
                for (int64_t j = 0; j < w; j++) {                                     \
                    int64_t r;                                                        \
                    if (mi) r = mi[s * w + j];                                        \
                    else {                                                            \
                        r = b;                                                        \
                        for (int64_t q = b + 1; q < e; q++)                           \
                            if (x[q * w + j] > x[r * w + j]) r = q;                   \
                    }                                                                 \
                    if (r >= b && r < e) dx[r * w + j] = gs[j];                       \
                }                                                                     \
                break;                                                                \
            default: {                                                                \
                T scale = type == P_AVERAGE ? (T)1 / (T)len                          \
                        : type == P_SQRT ? (T)1 / (T)sqrt((double)len) : (T)1;       \
                for (int64_t r = b; r < e; r++)                                       \
                    for (int64_t j = 0; j < w; j++) dx[r * w + j] = gs[j] * scale;    \
            }                                                                         \
            }                                                                         \
        }                                                                             \
    }

POOL_FWD(f32, float)
POOL_FWD(f64, double)

static int pool_fwd(oar_kernel_ctx_t *k)
{
    const oar_seqpool_attrs_t *a = oar_k_attrs(k);
    int dt = oar_k_dtype(k), type = a->pooltype;
    const oar_tensor_t *x;
    const void *xp;
    OAR_TRY(oar_sk_input(k, OAR_SEQ_X, "X", dt, &x, &xp));
    const int64_t *offs;
    int64_t no;
    OAR_TRY(oar_seq_lod_last(k, OAR_SEQ_X, "X", x, &offs, &no));
    if (offs[no - 1] > INT32_MAX && type == P_MAX)
        return oar_k_error(k, OAR_ERR_RANGE, "X has %lld rows; MaxIndex (int32) cannot index them",
                           (long long)offs[no - 1]);
    int64_t nseq = no - 1, w = oar_sk_row_width(x);
    void *op, *mp = NULL;
    OAR_TRY(oar_k_output_sized(k, OAR_SEQPOOL_OUT, "Out", dt, nseq * w, false, &op));
    if (type == P_MAX) {
        OAR_TRY(oar_k_output_sized(k, OAR_SEQPOOL_MAX_INDEX, "MaxIndex", OAR_INT32, nseq * w, true, &mp));
    } else if (oar_k_output(k, OAR_SEQPOOL_MAX_INDEX, 0)) {
        /* only MAX pooling has indices: -1 everywhere for the others */
        void *m;
        OAR_TRY(oar_k_output_sized(k, OAR_SEQPOOL_MAX_INDEX, "MaxIndex", OAR_INT32, nseq * w, true, &m));
        for (int64_t i = 0; i < nseq * w; i++) ((int32_t *)m)[i] = -1;
    }
    double pad = a->pad_value;
    if (dt == OAR_FP32) pool_fwd_f32(type, xp, op, mp, offs, nseq, w, (float)pad);
    else pool_fwd_f64(type, xp, op, mp, offs, nseq, w, pad);
    OAR_TRY(oar_seq_set_upper_lod(k, OAR_SEQPOOL_OUT, x));
    return oar_seq_set_upper_lod(k, OAR_SEQPOOL_MAX_INDEX, x);
}

static int pool_bwd(oar_kernel_ctx_t *k)
{
    int dt = oar_k_dtype(k), type = ((const oar_seqpool_attrs_t *)oar_k_attrs(k))->pooltype;
    const oar_tensor_t *x, *g, *mi = NULL;
    const void *xp, *gp, *mp = NULL;
    OAR_TRY(oar_sk_input(k, OAR_SEQ_X, "X", -1, &x, &xp));
    OAR_TRY(oar_sk_input(k, OAR_SEQPOOLG_DOUT, "Out@GRAD", dt, &g, &gp));
    const int64_t *offs;
    int64_t no;
    OAR_TRY(oar_seq_lod_last(k, OAR_SEQ_X, "X", x, &offs, &no));
    int64_t nseq = no - 1, w = oar_sk_row_width(x);
    if (oar_tensor_numel_of(g) != nseq * w)
        return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD has %lld elements, expected %lld (%lld sequences x %lld)",
                           (long long)oar_tensor_numel_of(g), (long long)(nseq * w), (long long)nseq, (long long)w);
    if (type == P_MAX) {
        OAR_TRY(oar_sk_opt_input(k, OAR_SEQPOOLG_MAX_INDEX, "MaxIndex", OAR_INT32, &mi, &mp));
        if (mi && oar_tensor_numel_of(mi) != nseq * w)
            return oar_k_error(k, OAR_ERR_SHAPE, "MaxIndex has %lld elements, expected %lld",
                               (long long)oar_tensor_numel_of(mi), (long long)(nseq * w));
        if (!mi && x->dtype != dt)
            return oar_k_error(k, OAR_ERR_DTYPE, "X has dtype %s, Out@GRAD %s", nm(oar_dtype_name(x->dtype)),
                               nm(oar_dtype_name(dt)));
        if (!mi && !xp && offs[no - 1] * w > 0)
            return oar_k_error(k, OAR_ERR_NOT_FOUND, "X holds no data to find the maxima in (and MaxIndex is absent)");
    }
    void *dx;
    OAR_TRY(oar_k_output_sized(k, OAR_SEQG_DX, "X@GRAD", dt, offs[no - 1] * w, true, &dx));
    if (!dx) return OAR_OK;
    if (dt == OAR_FP32) pool_bwd_f32(type, xp, mp, gp, dx, offs, nseq, w);
    else pool_bwd_f64(type, xp, mp, gp, dx, offs, nseq, w);
    return OAR_OK;
}

OAR_REGISTER_KERNEL("sequence_pool", OAR_PLACE_CPU, OAR_FP32, pool_fwd)
OAR_REGISTER_KERNEL("sequence_pool_grad", OAR_PLACE_CPU, OAR_FP32, pool_bwd)
static int pool_fwd64(oar_kernel_ctx_t *k) { return pool_fwd(k); }
static int pool_bwd64(oar_kernel_ctx_t *k) { return pool_bwd(k); }
OAR_REGISTER_KERNEL("sequence_pool", OAR_PLACE_CPU, OAR_FP64, pool_fwd64)
OAR_REGISTER_KERNEL("sequence_pool_grad", OAR_PLACE_CPU, OAR_FP64, pool_bwd64)

/* ---- sequence_softmax -------------------------------------------------------------- */

#define SOFTMAX(SFX, T)                                                               \
    static void seq_softmax_##SFX(const T *x, T *o, const int64_t *offs, int64_t nseq) \
    {                                                                                 \
        for (int64_t s = 0; s < nseq; s++) {                                          \
            int64_t b = offs[s], e = offs[s + 1];                                     \
            if (e == b) continue;                                                     \
            T m = x[b], sum = 0;                                                      \
            for (int64_t r = b + 1; r < e; r++) m = x[r] > m ? x[r] : m;              \
            for (int64_t r = b; r < e; r++) { o[r] = (T)exp((double)(x[r] - m)); sum += o[r]; } \
            for (int64_t r = b; r < e; r++) o[r] /= sum;                              \
        }                                                                             \
    }                                                                                 \
    /* dX = Out * (G - sum(G * Out)) within each sequence */                          \
    static void seq_softmax_bwd_##SFX(const T *o, const T *g, T *dx, const int64_t *offs, \
                                      int64_t nseq)                                   \
    {                                                                                 \
        for (int64_t s = 0; s < nseq; s++) {                                          \
            int64_t b = offs[s], e = offs[s + 1];                                     \
            T dot = 0;                                                                \
            for (int64_t r = b; r < e; r++) dot += g[r] * o[r];                       \
            for (int64_t r = b; r < e; r++) dx[r] = o[r] * (g[r] - dot);              \
        }                                                                             \
    }

SOFTMAX(f32, float)
SOFTMAX(f64, double)

static int softmax_fwd(oar_kernel_ctx_t *k)
{
    int dt = oar_k_dtype(k);
    const oar_tensor_t *x;
    const void *xp;
    OAR_TRY(oar_sk_input(k, OAR_SEQ_X, "X", dt, &x, &xp));
    const int64_t *offs;
    int64_t no;
    OAR_TRY(oar_seq_lod_last(k, OAR_SEQ_X, "X", x, &offs, &no));
    if (oar_tensor_numel_of(x) != offs[no - 1])
        return oar_k_error(k, OAR_ERR_SHAPE, "X has %lld values in %lld rows; expected one value per row",
                           (long long)oar_tensor_numel_of(x), (long long)offs[no - 1]);
    void *op;
    OAR_TRY(oar_k_output_sized(k, OAR_SEQSM_OUT, "Out", dt, offs[no - 1], false, &op));
    if (dt == OAR_FP32) seq_softmax_f32(xp, op, offs, no - 1);
    else seq_softmax_f64(xp, op, offs, no - 1);
    return OAR_OK;
}

static int softmax_bwd(oar_kernel_ctx_t *k)
{
    int dt = oar_k_dtype(k);
    const oar_tensor_t *o, *g;
    const void *op, *gp;
    OAR_TRY(oar_sk_input(k, OAR_SEQSMG_OUT, "Out", dt, &o, &op));
    OAR_TRY(oar_sk_input(k, OAR_SEQSMG_DOUT, "Out@GRAD", dt, &g, &gp));
    const int64_t *offs;
    int64_t no;
    OAR_TRY(oar_seq_lod_last(k, OAR_SEQSMG_OUT, "Out", o, &offs, &no));
    if (oar_tensor_numel_of(o) != offs[no - 1] || oar_tensor_numel_of(g) != offs[no - 1])
        return oar_k_error(k, OAR_ERR_SHAPE, "Out has %lld and Out@GRAD %lld values; expected %lld (one per row)",
                           (long long)oar_tensor_numel_of(o), (long long)oar_tensor_numel_of(g),
                           (long long)offs[no - 1]);
    void *dx;
    OAR_TRY(oar_k_output_sized(k, OAR_SEQG_DX, "X@GRAD", dt, offs[no - 1], true, &dx));
    if (!dx) return OAR_OK;
    if (dt == OAR_FP32) seq_softmax_bwd_f32(op, gp, dx, offs, no - 1);
    else seq_softmax_bwd_f64(op, gp, dx, offs, no - 1);
    return OAR_OK;
}

OAR_REGISTER_KERNEL("sequence_softmax", OAR_PLACE_CPU, OAR_FP32, softmax_fwd)
OAR_REGISTER_KERNEL("sequence_softmax_grad", OAR_PLACE_CPU, OAR_FP32, softmax_bwd)
static int softmax_fwd64(oar_kernel_ctx_t *k) { return softmax_fwd(k); }
static int softmax_bwd64(oar_kernel_ctx_t *k) { return softmax_bwd(k); }
OAR_REGISTER_KERNEL("sequence_softmax", OAR_PLACE_CPU, OAR_FP64, softmax_fwd64)
OAR_REGISTER_KERNEL("sequence_softmax_grad", OAR_PLACE_CPU, OAR_FP64, softmax_bwd64)

/* ---- sequence_expand ----------------------------------------------------------------- */

static int expand_fwd(oar_kernel_ctx_t *k)
{
    int dt = oar_k_dtype(k);
    const oar_tensor_t *x;
    const void *xp;
    OAR_TRY(oar_sk_input(k, OAR_SEQ_X, "X", dt, &x, &xp));
    oar_seq_expand_t p;
    OAR_TRY(oar_seq_expand_plan(k, x, &p));
    size_t es = oar_dtype_size(dt);
    int64_t w = oar_sk_row_width(x);
    oar_tensor_t *ot = oar_k_output(k, OAR_SEQEXP_OUT, 0);
    if (!ot) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Out has no tensor variable");
    int64_t orows = ot->ndim > 0 ? ot->dims[0] : 1;
    void *op;
    OAR_TRY(oar_k_output_sized(k, OAR_SEQEXP_OUT, "Out", dt, orows * w, false, &op));
    OAR_TRY(oar_seq_expand_set_lod(k, x, &p, orows));
    if (p.nref <= 1) {   /* nothing to repeat by: Out is X */
        memcpy(op, xp, es * (size_t)(p.xrows * w));
        return OAR_OK;
    }
    int64_t r = 0;
    for (int64_t i = 0; i + 1 < p.nref; i++) {
        int64_t xb = oar_seq_expand_start(&p, i), len = oar_seq_expand_len(&p, i);
        for (int64_t j = 0; j < oar_seq_expand_reps(&p, i); j++, r += len)
            memcpy((char *)op + es * (size_t)(r * w), (const char *)xp + es * (size_t)(xb * w), es * (size_t)(len * w));
    }
    return OAR_OK;
}

#define EXPAND_BWD(SFX, T)                                                            \
    static void expand_bwd_##SFX(const oar_seq_expand_t *p, const T *g, T *dx, int64_t w) \
    {                                                                                 \
        memset(dx, 0, sizeof(T) * (size_t)(p->xrows * w));                            \
        int64_t r = 0;                                                                \
        for (int64_t i = 0; i + 1 < p->nref; i++) {                                   \
            int64_t rep = oar_seq_expand_reps(p, i), len = oar_seq_expand_len(p, i);  \
            T *d = dx + oar_seq_expand_start(p, i) * w;                               \
            for (int64_t j = 0; j < rep; j++, r += len) {                             \
                const T *gs = g + r * w;                                              \
                for (int64_t q = 0; q < len * w; q++) d[q] += gs[q];                  \
            }                                                                         \
        }                                                                             \
    }

EXPAND_BWD(f32, float)
EXPAND_BWD(f64, double)

static int expand_bwd(oar_kernel_ctx_t *k)
{
    int dt = oar_k_dtype(k);
    const oar_tensor_t *x, *g;
    const void *xp, *gp;
    OAR_TRY(oar_sk_input(k, OAR_SEQ_X, "X", -1, &x, &xp));
    OAR_TRY(oar_sk_input(k, OAR_SEQEXPG_DOUT, "Out@GRAD", dt, &g, &gp));
    oar_seq_expand_t p;
    OAR_TRY(oar_seq_expand_plan(k, x, &p));
    int64_t w = oar_sk_row_width(x);
    void *dx;
    OAR_TRY(oar_k_output_sized(k, OAR_SEQG_DX, "X@GRAD", dt, p.xrows * w, true, &dx));
    if (!dx) return OAR_OK;
    int64_t want = oar_seq_expand_rows(&p);
    if (oar_tensor_numel_of(g) != want * w)
        return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD has %lld values; expected %lld rows of %lld",
                           (long long)oar_tensor_numel_of(g), (long long)want, (long long)w);
    if (p.nref <= 1) {
        memcpy(dx, gp, oar_dtype_size(dt) * (size_t)(p.xrows * w));
        return OAR_OK;
    }
    if (dt == OAR_FP32) expand_bwd_f32(&p, gp, dx, w);
    else expand_bwd_f64(&p, gp, dx, w);
    return OAR_OK;
}

OAR_REGISTER_KERNEL("sequence_expand", OAR_PLACE_CPU, OAR_FP32, expand_fwd)
static int expand_fwd64(oar_kernel_ctx_t *k) { return expand_fwd(k); }
static int expand_fwd_i32(oar_kernel_ctx_t *k) { return expand_fwd(k); }
static int expand_fwd_i64(oar_kernel_ctx_t *k) { return expand_fwd(k); }
OAR_REGISTER_KERNEL("sequence_expand", OAR_PLACE_CPU, OAR_FP64, expand_fwd64)
OAR_REGISTER_KERNEL("sequence_expand", OAR_PLACE_CPU, OAR_INT32, expand_fwd_i32)
OAR_REGISTER_KERNEL("sequence_expand", OAR_PLACE_CPU, OAR_INT64, expand_fwd_i64)
OAR_REGISTER_KERNEL("sequence_expand_grad", OAR_PLACE_CPU, OAR_FP32, expand_bwd)
static int expand_bwd64(oar_kernel_ctx_t *k) { return expand_bwd(k); }
OAR_REGISTER_KERNEL("sequence_expand_grad", OAR_PLACE_CPU, OAR_FP64, expand_bwd64)
