/*
 * sequence_ext.c — CPU kernels of the sequence ops of issue 22
 * (src/ops/sequence_ext.ops). Ops that only move rows work on bytes, one
 * body for every dtype; the ones that add (expand_as grad, scatter) or
 * compare (mask) have a body per dtype. Inference has checked shapes,
 * dtypes and LoD levels; the kernels check what depends on values.
 */
#include <stdlib.h>
#include <string.h>
#include "op.h"
#include "sequence_batch.h"
#include "ops/sequence_ext.h"
#include "ops/seq_lod.h"

static const char *nm(const char *s) { return s ? s : "?"; }

/* the rows of an output sized by inference: dims[0] of its tensor */
static int64_t out_dim(oar_kernel_ctx_t *k, int slot, int i)
{
    oar_tensor_t *o = oar_k_output(k, slot, 0);
    return o && o->ndim > i ? o->dims[i] : 0;
}

#define ROW(p, r, rb) ((char *)(p) + (size_t)(r) * (rb))
#define CROW(p, r, rb) ((const char *)(p) + (size_t)(r) * (rb))

/* ---- sequence_mask ---------------------------------------------------------- */
static int64_t as_i64(int dt, const void *p, int64_t i)
{
    switch (dt) {
    case OAR_INT32: return ((const int32_t *)p)[i];
    case OAR_INT64: return ((const int64_t *)p)[i];
    case OAR_FP32: return (int64_t)((const float *)p)[i];
    default: return (int64_t)((const double *)p)[i];
    }
}
static double as_f64(int dt, const void *p, int64_t i)
{
    switch (dt) {
    case OAR_INT32: return ((const int32_t *)p)[i];
    case OAR_INT64: return (double)((const int64_t *)p)[i];
    case OAR_FP32: return ((const float *)p)[i];
    default: return ((const double *)p)[i];
    }
}

static int mask_fwd(oar_kernel_ctx_t *k)
{
    const oar_seqmask_attrs_t *a = oar_k_attrs(k);
    int dt = oar_k_dtype(k);
    const oar_tensor_t *x, *ml = NULL;
    const void *xp, *mp = NULL;
    OAR_TRY(oar_sk_input(k, OAR_SEQMASK_X, "X", dt, &x, &xp));
    OAR_TRY(oar_sk_opt_input(k, OAR_SEQMASK_MAXLEN, "MaxLenTensor", -1, &ml, &mp));
    int64_t n = oar_tensor_numel_of(x), maxlen = a->maxlen;
    if (ml) {
        if (oar_tensor_numel_of(ml) != 1 || (ml->dtype != OAR_INT32 && ml->dtype != OAR_INT64))
            return oar_k_error(k, OAR_ERR_SHAPE, "MaxLenTensor '%s' must be one int32 or int64 value",
                               nm(oar_k_input_name(k, OAR_SEQMASK_MAXLEN, 0)));
        maxlen = as_i64(ml->dtype, mp, 0);
    }
    if (maxlen < 0) {   /* Fluid: the largest length in X */
        maxlen = 0;
        for (int64_t i = 0; i < n; i++) {
            int64_t v = as_i64(dt, xp, i);
            if (v > maxlen) maxlen = v;
        }
    }
    int64_t d[OAR_MAX_DIMS];
    memcpy(d, x->dims, sizeof(int64_t) * (size_t)x->ndim);
    d[x->ndim] = maxlen;
    int od = a->out_dtype;
    void *y = oar_k_output_resized(k, OAR_SEQMASK_Y, d, x->ndim + 1, od);
    if (!y) return n * maxlen > 0 ? OAR_ERR_NOMEM : OAR_OK;
    for (int64_t i = 0; i < n; i++) {
        double len = as_f64(dt, xp, i);
        for (int64_t j = 0; j < maxlen; j++) {
            int64_t q = i * maxlen + j;
            bool on = (double)j < len;
            switch (od) {
            case OAR_BOOL: ((uint8_t *)y)[q] = on; break;
            case OAR_INT32: ((int32_t *)y)[q] = on; break;
            case OAR_INT64: ((int64_t *)y)[q] = on; break;
            case OAR_FP32: ((float *)y)[q] = on; break;
            default: ((double *)y)[q] = on; break;
            }
        }
    }
    return OAR_OK;
}

/* ---- sequence_reverse ------------------------------------------------------- */
static int reverse_fwd(oar_kernel_ctx_t *k)
{
    int dt = oar_k_dtype(k);
    const oar_tensor_t *x;
    const void *xp;
    OAR_TRY(oar_sk_input(k, OAR_SEQREV_X, "X", dt, &x, &xp));
    const int64_t *offs;
    int64_t no;
    OAR_TRY(oar_seq_lod_last(k, OAR_SEQREV_X, "X", x, &offs, &no));
    size_t rb = oar_dtype_size(dt) * (size_t)oar_sk_row_width(x);
    void *y;
    OAR_TRY(oar_k_output_sized(k, OAR_SEQREV_Y, "Y", dt, oar_tensor_numel_of(x), false, &y));
    if (y == xp) return oar_k_error(k, OAR_ERR_INVALID, "Y must not share X's buffer");
    for (int64_t s = 0; s + 1 < no; s++)
        for (int64_t r = offs[s]; r < offs[s + 1]; r++)
            memcpy(ROW(y, offs[s] + offs[s + 1] - 1 - r, rb), CROW(xp, r, rb), rb);
    return OAR_OK;
}

/* ---- sequence_expand_as ----------------------------------------------------- */
static int ea_lod(oar_kernel_ctx_t *k, int slot, const oar_tensor_t *x, const int64_t **offs, int64_t *no)
{
    const oar_tensor_t *y = oar_k_input(k, slot, 0);
    if (!y) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input Y has no value");
    OAR_TRY(oar_seq_lod_last(k, slot, "Y", y, offs, no));
    if (*no > 1 && x->dims[0] != *no - 1)
        return oar_k_error(k, OAR_ERR_SHAPE, "X has %lld rows but Y has %lld sequences", (long long)x->dims[0],
                           (long long)(*no - 1));
    return OAR_OK;
}

static int expand_as_fwd(oar_kernel_ctx_t *k)
{
    int dt = oar_k_dtype(k);
    const oar_tensor_t *x;
    const void *xp;
    OAR_TRY(oar_sk_input(k, OAR_SEQEA_X, "X", dt, &x, &xp));
    const int64_t *offs;
    int64_t no;
    OAR_TRY(ea_lod(k, OAR_SEQEA_Y, x, &offs, &no));
    int64_t w = oar_sk_row_width(x);
    size_t rb = oar_dtype_size(dt) * (size_t)w;
    int64_t rows = no > 1 ? offs[no - 1] : x->dims[0];
    void *o;
    OAR_TRY(oar_k_output_sized(k, OAR_SEQEA_OUT, "Out", dt, rows * w, false, &o));
    if (no <= 1) { memcpy(o, xp, rb * (size_t)rows); return OAR_OK; }
    for (int64_t s = 0; s + 1 < no; s++)
        for (int64_t r = offs[s]; r < offs[s + 1]; r++) memcpy(ROW(o, r, rb), CROW(xp, s, rb), rb);
    return OAR_OK;
}

#define EA_BWD(SFX, T)                                                                      \
    static void ea_bwd_##SFX(const T *g, T *dx, const int64_t *offs, int64_t no, int64_t w) \
    {                                                                                       \
        for (int64_t s = 0; s + 1 < no; s++) {                                              \
            T *d = dx + s * w;                                                              \
            for (int64_t j = 0; j < w; j++) d[j] = 0;                                       \
            for (int64_t r = offs[s]; r < offs[s + 1]; r++)                                 \
                for (int64_t j = 0; j < w; j++) d[j] += g[r * w + j];                       \
        }                                                                                   \
    }
EA_BWD(f32, float)
EA_BWD(f64, double)

static int expand_as_bwd(oar_kernel_ctx_t *k)
{
    int dt = oar_k_dtype(k);
    const oar_tensor_t *x, *g;
    const void *xp, *gp;
    OAR_TRY(oar_sk_input(k, OAR_SEQEAG_X, "X", -1, &x, &xp));
    OAR_TRY(oar_sk_input(k, OAR_SEQEAG_DOUT, "Out@GRAD", dt, &g, &gp));
    const int64_t *offs;
    int64_t no;
    OAR_TRY(ea_lod(k, OAR_SEQEAG_Y, x, &offs, &no));
    int64_t w = oar_sk_row_width(x);
    void *dx;
    OAR_TRY(oar_k_output_sized(k, OAR_SEQEAG_DX, "X@GRAD", dt, x->dims[0] * w, true, &dx));
    if (!dx) return OAR_OK;
    if (no <= 1) { memcpy(dx, gp, oar_dtype_size(dt) * (size_t)(x->dims[0] * w)); return OAR_OK; }
    if (dt == OAR_FP32) ea_bwd_f32(gp, dx, offs, no, w);
    else ea_bwd_f64(gp, dx, offs, no, w);
    return OAR_OK;
}

/* ---- sequence_pad / sequence_unpad ------------------------------------------ */
static int pad_fwd(oar_kernel_ctx_t *k)
{
    int dt = oar_k_dtype(k);
    const oar_tensor_t *x, *pv;
    const void *xp, *pp;
    OAR_TRY(oar_sk_input(k, OAR_SEQPAD_X, "X", dt, &x, &xp));
    OAR_TRY(oar_sk_input(k, OAR_SEQPAD_PAD_VALUE, "PadValue", dt, &pv, &pp));
    const int64_t *offs;
    int64_t no;
    OAR_TRY(oar_seq_lod_last(k, OAR_SEQPAD_X, "X", x, &offs, &no));
    int64_t w = oar_sk_row_width(x), nseq = no - 1, L = out_dim(k, OAR_SEQPAD_OUT, 1);
    int64_t pn = oar_tensor_numel_of(pv);
    if (pn != 1 && pn != w)
        return oar_k_error(k, OAR_ERR_SHAPE, "PadValue '%s' has %lld values; expected 1 or %lld (one row)",
                           nm(oar_k_input_name(k, OAR_SEQPAD_PAD_VALUE, 0)), (long long)pn, (long long)w);
    size_t es = oar_dtype_size(dt), rb = es * (size_t)w;
    void *o, *len;
    OAR_TRY(oar_k_output_sized(k, OAR_SEQPAD_OUT, "Out", dt, nseq * L * w, false, &o));
    OAR_TRY(oar_k_output_sized(k, OAR_SEQPAD_LENGTH, "Length", OAR_INT64, nseq, true, &len));
    for (int64_t s = 0; s < nseq; s++) {
        int64_t n = offs[s + 1] - offs[s];
        if (n > L) return oar_k_error(k, OAR_ERR_RANGE, "sequence %lld has %lld rows, more than %lld", (long long)s,
                                      (long long)n, (long long)L);
        memcpy(ROW(o, s * L, rb), CROW(xp, offs[s], rb), rb * (size_t)n);
        for (int64_t r = n; r < L; r++) {
            char *dst = ROW(o, s * L + r, rb);
            if (pn == w) memcpy(dst, pp, rb);
            else for (int64_t j = 0; j < w; j++) memcpy(dst + es * (size_t)j, pp, es);
        }
        if (len) ((int64_t *)len)[s] = n;
    }
    return OAR_OK;
}

static int pad_bwd(oar_kernel_ctx_t *k)
{
    int dt = oar_k_dtype(k);
    const oar_tensor_t *x, *g;
    const void *xp, *gp;
    OAR_TRY(oar_sk_input(k, OAR_SEQPADG_X, "X", -1, &x, &xp));
    OAR_TRY(oar_sk_input(k, OAR_SEQPADG_DOUT, "Out@GRAD", dt, &g, &gp));
    const int64_t *offs;
    int64_t no;
    OAR_TRY(oar_seq_lod_last(k, OAR_SEQPADG_X, "X", x, &offs, &no));
    int64_t w = oar_sk_row_width(x), L = g->ndim > 1 ? g->dims[1] : 0;
    size_t rb = oar_dtype_size(dt) * (size_t)w;
    void *dx;
    OAR_TRY(oar_k_output_sized(k, OAR_SEQPADG_DX, "X@GRAD", dt, x->dims[0] * w, true, &dx));
    if (!dx) return OAR_OK;
    for (int64_t s = 0; s + 1 < no; s++)
        memcpy(ROW(dx, offs[s], rb), CROW(gp, s * L, rb), rb * (size_t)(offs[s + 1] - offs[s]));
    return OAR_OK;
}

static int unpad_fwd(oar_kernel_ctx_t *k)
{
    int dt = oar_k_dtype(k);
    const oar_tensor_t *x, *lt;
    const void *xp, *lp;
    OAR_TRY(oar_sk_input(k, OAR_SEQUNPAD_X, "X", dt, &x, &xp));
    OAR_TRY(oar_sk_input(k, OAR_SEQUNPAD_LENGTH, "Length", OAR_INT64, &lt, &lp));
    int64_t nseq = x->dims[0], L = x->dims[1], w = 1;
    for (int i = 2; i < x->ndim; i++) w *= x->dims[i];
    const int64_t *len = lp;
    int64_t *offs = malloc(sizeof(int64_t) * (size_t)(nseq + 1));
    if (!offs) return OAR_ERR_NOMEM;
    offs[0] = 0;
    for (int64_t s = 0; s < nseq; s++) {
        if (len[s] < 0 || len[s] > L) {
            free(offs);
            return oar_k_error(k, OAR_ERR_RANGE, "Length[%lld] = %lld is outside [0, %lld] (X's padded length)",
                               (long long)s, (long long)len[s], (long long)L);
        }
        offs[s + 1] = offs[s] + len[s];
    }
    int64_t d[OAR_MAX_DIMS];
    d[0] = offs[nseq];
    for (int i = 2; i < x->ndim; i++) d[i - 1] = x->dims[i];
    size_t rb = oar_dtype_size(dt) * (size_t)w;
    void *o = oar_k_output_resized(k, OAR_SEQUNPAD_OUT, d, x->ndim - 1, dt);
    int rc = !o && d[0] * w > 0 ? OAR_ERR_NOMEM : OAR_OK;
    for (int64_t s = 0; rc == OAR_OK && o && s < nseq; s++)
        memcpy(ROW(o, offs[s], rb), CROW(xp, s * L, rb), rb * (size_t)len[s]);
    if (rc == OAR_OK) rc = oar_sk_set_lod1(k, OAR_SEQUNPAD_OUT, offs, nseq + 1);
    free(offs);
    return rc;
}

static int unpad_bwd(oar_kernel_ctx_t *k)
{
    int dt = oar_k_dtype(k);
    const oar_tensor_t *x, *g;
    const void *xp, *gp;
    OAR_TRY(oar_sk_input(k, OAR_SEQUNPADG_X, "X", -1, &x, &xp));
    OAR_TRY(oar_sk_input(k, OAR_SEQUNPADG_DOUT, "Out@GRAD", dt, &g, &gp));
    const int64_t *offs;
    int64_t no;
    OAR_TRY(oar_seq_lod_last(k, OAR_SEQUNPADG_DOUT, "Out@GRAD", g, &offs, &no));
    int64_t nseq = x->dims[0], L = x->dims[1], w = 1;
    for (int i = 2; i < x->ndim; i++) w *= x->dims[i];
    if (no - 1 != nseq)
        return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD has %lld sequences, X %lld rows", (long long)(no - 1),
                           (long long)nseq);
    size_t rb = oar_dtype_size(dt) * (size_t)w;
    void *dx;
    OAR_TRY(oar_k_output_sized(k, OAR_SEQUNPADG_DX, "X@GRAD", dt, oar_tensor_numel_of(x), true, &dx));
    if (!dx) return OAR_OK;
    memset(dx, 0, rb * (size_t)(nseq * L));
    for (int64_t s = 0; s < nseq; s++) {
        int64_t n = offs[s + 1] - offs[s];
        if (n > L) return oar_k_error(k, OAR_ERR_RANGE, "Out@GRAD's sequence %lld is longer than X's %lld rows",
                                      (long long)s, (long long)L);
        memcpy(ROW(dx, s * L, rb), CROW(gp, offs[s], rb), rb * (size_t)n);
    }
    return OAR_OK;
}

/* ---- sequence_concat -------------------------------------------------------- */
static int concat_fwd(oar_kernel_ctx_t *k)
{
    int dt = oar_k_dtype(k), n = oar_k_nin(k, OAR_SEQCAT_X);
    const oar_tensor_t *x0 = oar_k_input(k, OAR_SEQCAT_X, 0);
    if (!x0) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input X has no value");
    const int64_t *o0;
    int64_t no;
    OAR_TRY(oar_seq_lod_last(k, OAR_SEQCAT_X, "X", x0, &o0, &no));
    int64_t w = oar_sk_row_width(x0);
    size_t rb = oar_dtype_size(dt) * (size_t)w;
    int64_t *offs = calloc((size_t)no, sizeof(int64_t));
    if (!offs) return OAR_ERR_NOMEM;
    void *o = NULL;
    int rc = oar_k_output_sized(k, OAR_SEQCAT_OUT, "Out", dt, out_dim(k, OAR_SEQCAT_OUT, 0) * w, false, &o);
    for (int s = 0; rc == OAR_OK && s + 1 < no; s++) {
        int64_t r = offs[s];
        for (int i = 0; rc == OAR_OK && i < n; i++) {
            oar_tensor_t *x = oar_k_input(k, OAR_SEQCAT_X, i);
            const int64_t *xo = x->lod[x->lod_levels - 1];
            int64_t len = xo[s + 1] - xo[s];
            if (x->dtype != dt) {
                rc = oar_k_error(k, OAR_ERR_DTYPE, "X[%d] has dtype %s, X[0] %s", i, nm(oar_dtype_name(x->dtype)),
                                 nm(oar_dtype_name(dt)));
                break;
            }
            memcpy(ROW(o, r, rb), CROW(oar_tensor_data(x), xo[s], rb), rb * (size_t)len);
            r += len;
        }
        offs[s + 1] = r;
    }
    if (rc == OAR_OK) rc = oar_sk_set_lod1(k, OAR_SEQCAT_OUT, offs, no);
    free(offs);
    return rc;
}

static int concat_bwd(oar_kernel_ctx_t *k)
{
    int dt = oar_k_dtype(k), n = oar_k_nin(k, OAR_SEQCATG_X);
    const oar_tensor_t *g;
    const void *gp;
    OAR_TRY(oar_sk_input(k, OAR_SEQCATG_DOUT, "Out@GRAD", dt, &g, &gp));
    const oar_tensor_t *x0 = oar_k_input(k, OAR_SEQCATG_X, 0);
    if (!x0) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input X has no value");
    const int64_t *o0;
    int64_t no;
    OAR_TRY(oar_seq_lod_last(k, OAR_SEQCATG_X, "X", x0, &o0, &no));
    size_t rb = oar_dtype_size(dt) * (size_t)oar_sk_row_width(x0);
    int64_t r = 0;
    for (int64_t s = 0; s + 1 < no; s++)
        for (int i = 0; i < n; i++) {
            const oar_tensor_t *x = oar_k_input(k, OAR_SEQCATG_X, i);
            const int64_t *xo = x->lod[x->lod_levels - 1];
            int64_t len = xo[s + 1] - xo[s];
            void *dx = i < oar_k_nout(k, OAR_SEQCATG_DX) && oar_k_output(k, OAR_SEQCATG_DX, i)
                           ? oar_k_output_data(k, OAR_SEQCATG_DX, i, dt) : NULL;
            if (dx) memcpy(ROW(dx, xo[s], rb), CROW(gp, r, rb), rb * (size_t)len);
            r += len;
        }
    return OAR_OK;
}

/* ---- sequence_slice --------------------------------------------------------- */
/* checks Offset/Length against X's sequences; offs_out (nseq + 1) gets Out's LoD */
static int slice_plan(oar_kernel_ctx_t *k, const oar_tensor_t *x, const int64_t **xo, const int64_t **off,
                      const int64_t **len, int64_t **oo, int64_t *no)
{
    OAR_TRY(oar_seq_lod_last(k, OAR_SEQSLICE_X, "X", x, xo, no));
    const oar_tensor_t *t;
    const void *p;
    OAR_TRY(oar_sk_input(k, OAR_SEQSLICE_OFFSET, "Offset", OAR_INT64, &t, &p));
    *off = p;
    OAR_TRY(oar_sk_input(k, OAR_SEQSLICE_LENGTH, "Length", OAR_INT64, &t, &p));
    *len = p;
    if (!(*oo = malloc(sizeof(int64_t) * (size_t)*no))) return OAR_ERR_NOMEM;
    (*oo)[0] = 0;
    for (int64_t s = 0; s + 1 < *no; s++) {
        int64_t b = (*off)[s], n = (*len)[s], sl = (*xo)[s + 1] - (*xo)[s];
        if (b < 0 || n < 0 || b + n > sl) {
            free(*oo);
            return oar_k_error(k, OAR_ERR_RANGE, "sequence %lld: Offset %lld and Length %lld do not fit its %lld rows "
                               "(need 0 <= Offset, 0 <= Length, Offset + Length <= rows)", (long long)s, (long long)b,
                               (long long)n, (long long)sl);
        }
        (*oo)[s + 1] = (*oo)[s] + n;
    }
    return OAR_OK;
}

static int slice_fwd(oar_kernel_ctx_t *k)
{
    int dt = oar_k_dtype(k);
    const oar_tensor_t *x;
    const void *xp;
    OAR_TRY(oar_sk_input(k, OAR_SEQSLICE_X, "X", dt, &x, &xp));
    const int64_t *xo, *off, *len;
    int64_t *oo, no;
    OAR_TRY(slice_plan(k, x, &xo, &off, &len, &oo, &no));
    int64_t w = oar_sk_row_width(x);
    size_t rb = oar_dtype_size(dt) * (size_t)w;
    int64_t d[OAR_MAX_DIMS];
    memcpy(d, x->dims, sizeof(int64_t) * (size_t)x->ndim);
    d[0] = oo[no - 1];
    void *o = oar_k_output_resized(k, OAR_SEQSLICE_OUT, d, x->ndim, dt);
    int rc = !o && d[0] * w > 0 ? OAR_ERR_NOMEM : OAR_OK;
    for (int64_t s = 0; rc == OAR_OK && o && s + 1 < no; s++)
        memcpy(ROW(o, oo[s], rb), CROW(xp, xo[s] + off[s], rb), rb * (size_t)len[s]);
    if (rc == OAR_OK) rc = oar_sk_set_lod1(k, OAR_SEQSLICE_OUT, oo, no);
    free(oo);
    return rc;
}

static int slice_bwd(oar_kernel_ctx_t *k)
{
    int dt = oar_k_dtype(k);
    const oar_tensor_t *x, *g;
    const void *xp, *gp;
    OAR_TRY(oar_sk_input(k, OAR_SEQSLICEG_X, "X", -1, &x, &xp));
    OAR_TRY(oar_sk_input(k, OAR_SEQSLICEG_DOUT, "Out@GRAD", dt, &g, &gp));
    const int64_t *xo, *off, *len;
    int64_t *oo, no;
    OAR_TRY(slice_plan(k, x, &xo, &off, &len, &oo, &no));
    int64_t w = oar_sk_row_width(x);
    size_t rb = oar_dtype_size(dt) * (size_t)w;
    void *dx = NULL;
    int rc = oar_tensor_numel_of(g) != oo[no - 1] * w
                 ? oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD has %lld values; expected %lld rows of %lld",
                               (long long)oar_tensor_numel_of(g), (long long)oo[no - 1], (long long)w)
                 : oar_k_output_sized(k, OAR_SEQSLICEG_DX, "X@GRAD", dt, x->dims[0] * w, true, &dx);
    if (rc == OAR_OK && dx) {
        memset(dx, 0, rb * (size_t)x->dims[0]);
        for (int64_t s = 0; s + 1 < no; s++)
            memcpy(ROW(dx, xo[s] + off[s], rb), CROW(gp, oo[s], rb), rb * (size_t)len[s]);
    }
    free(oo);
    return rc;
}

/* ---- sequence_enumerate ----------------------------------------------------- */
#define ENUM_FWD(SFX, T)                                                                      \
    static void enum_##SFX(const T *x, T *o, const int64_t *offs, int64_t no, int64_t win, T pad) \
    {                                                                                         \
        for (int64_t s = 0; s + 1 < no; s++)                                                  \
            for (int64_t r = offs[s]; r < offs[s + 1]; r++)                                   \
                for (int64_t j = 0; j < win; j++)                                             \
                    o[r * win + j] = r + j < offs[s + 1] ? x[r + j] : pad;                    \
    }
ENUM_FWD(i32, int32_t)
ENUM_FWD(i64, int64_t)

static int enumerate_fwd(oar_kernel_ctx_t *k)
{
    const oar_seqenum_attrs_t *a = oar_k_attrs(k);
    int dt = oar_k_dtype(k);
    const oar_tensor_t *x;
    const void *xp;
    OAR_TRY(oar_sk_input(k, OAR_SEQENUM_X, "X", dt, &x, &xp));
    const int64_t *offs;
    int64_t no;
    OAR_TRY(oar_seq_lod_last(k, OAR_SEQENUM_X, "X", x, &offs, &no));
    void *o;
    OAR_TRY(oar_k_output_sized(k, OAR_SEQENUM_OUT, "Out", dt, x->dims[0] * a->win_size, false, &o));
    if (dt == OAR_INT32) enum_i32(xp, o, offs, no, a->win_size, (int32_t)a->pad_value);
    else enum_i64(xp, o, offs, no, a->win_size, a->pad_value);
    return OAR_OK;
}

/* ---- sequence_reshape ------------------------------------------------------- */
static int reshape_fwd(oar_kernel_ctx_t *k)
{
    const oar_seqreshape_attrs_t *a = oar_k_attrs(k);
    int dt = oar_k_dtype(k);
    const oar_tensor_t *x;
    const void *xp;
    OAR_TRY(oar_sk_input(k, OAR_SEQRESHAPE_X, "X", dt, &x, &xp));
    const int64_t *offs;
    int64_t no;
    OAR_TRY(oar_seq_lod_last(k, OAR_SEQRESHAPE_X, "X", x, &offs, &no));
    int64_t d = x->dims[1], n = oar_tensor_numel_of(x);
    void *o;
    OAR_TRY(oar_k_output_sized(k, OAR_SEQRESHAPE_OUT, "Out", dt, n, false, &o));
    memcpy(o, xp, oar_dtype_size(dt) * (size_t)n);
    int64_t *oo = malloc(sizeof(int64_t) * (size_t)no);
    if (!oo) return OAR_ERR_NOMEM;
    for (int64_t s = 0; s < no; s++) oo[s] = offs[s] * d / a->new_dim;   /* inference checked divisibility */
    int rc = oar_sk_set_lod1(k, OAR_SEQRESHAPE_OUT, oo, no);
    free(oo);
    return rc;
}

static int reshape_bwd(oar_kernel_ctx_t *k)
{
    int dt = oar_k_dtype(k);
    const oar_tensor_t *x, *g;
    const void *xp, *gp;
    OAR_TRY(oar_sk_input(k, OAR_SEQRESHAPEG_X, "X", -1, &x, &xp));
    OAR_TRY(oar_sk_input(k, OAR_SEQRESHAPEG_DOUT, "Out@GRAD", dt, &g, &gp));
    int64_t n = oar_tensor_numel_of(x);
    if (oar_tensor_numel_of(g) != n)
        return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD has %lld values, X %lld", (long long)oar_tensor_numel_of(g),
                           (long long)n);
    void *dx;
    OAR_TRY(oar_k_output_sized(k, OAR_SEQRESHAPEG_DX, "X@GRAD", dt, n, true, &dx));
    if (dx) memcpy(dx, gp, oar_dtype_size(dt) * (size_t)n);
    return OAR_OK;
}

/* ---- sequence_scatter ------------------------------------------------------- */
/* checked ids (int32 or int64) as int64 in scratch `buf` of M */
static int scatter_ids(oar_kernel_ctx_t *k, int slot, int64_t w, int64_t **ids, const int64_t **offs, int64_t *no,
                       int64_t *m)
{
    const oar_tensor_t *t;
    const void *p;
    OAR_TRY(oar_sk_input(k, slot, "Ids", -1, &t, &p));
    OAR_TRY(oar_seq_lod_last(k, slot, "Ids", t, offs, no));
    *m = oar_tensor_numel_of(t);
    if (!(*ids = malloc(sizeof(int64_t) * (size_t)(*m > 0 ? *m : 1)))) return OAR_ERR_NOMEM;
    for (int64_t j = 0; j < *m; j++) {
        int64_t v = t->dtype == OAR_INT32 ? ((const int32_t *)p)[j] : ((const int64_t *)p)[j];
        if (v < 0 || v >= w) {
            free(*ids);
            return oar_k_error(k, OAR_ERR_RANGE, "Ids[%lld] = %lld is outside [0, %lld) (X's row width)",
                               (long long)j, (long long)v, (long long)w);
        }
        (*ids)[j] = v;
    }
    return OAR_OK;
}

#define SCATTER(SFX, T)                                                                               \
    static void scatter_##SFX(T *o, const T *u, const int64_t *ids, const int64_t *offs, int64_t no, \
                              int64_t w)                                                              \
    {                                                                                                 \
        for (int64_t s = 0; s + 1 < no; s++)                                                          \
            for (int64_t j = offs[s]; j < offs[s + 1]; j++) o[s * w + ids[j]] += u[j];                \
    }
#define GATHER(SFX, T)                                                                                \
    static void gather_##SFX(const T *g, T *du, const int64_t *ids, const int64_t *offs, int64_t no, \
                             int64_t w)                                                               \
    {                                                                                                 \
        for (int64_t s = 0; s + 1 < no; s++)                                                          \
            for (int64_t j = offs[s]; j < offs[s + 1]; j++) du[j] = g[s * w + ids[j]];                \
    }
SCATTER(f32, float)
SCATTER(f64, double)
SCATTER(i32, int32_t)
SCATTER(i64, int64_t)
GATHER(f32, float)
GATHER(f64, double)

static int scatter_fwd(oar_kernel_ctx_t *k)
{
    int dt = oar_k_dtype(k);
    const oar_tensor_t *x, *u;
    const void *xp, *up;
    OAR_TRY(oar_sk_input(k, OAR_SEQSCATTER_X, "X", dt, &x, &xp));
    OAR_TRY(oar_sk_input(k, OAR_SEQSCATTER_UPDATES, "Updates", dt, &u, &up));
    int64_t w = oar_sk_row_width(x), n = oar_tensor_numel_of(x), no, m, *ids;
    const int64_t *offs;
    OAR_TRY(scatter_ids(k, OAR_SEQSCATTER_IDS, w, &ids, &offs, &no, &m));
    void *o;
    int rc = oar_k_output_sized(k, OAR_SEQSCATTER_OUT, "Out", dt, n, false, &o);
    if (rc == OAR_OK) {
        memmove(o, xp, oar_dtype_size(dt) * (size_t)n);
        switch (dt) {
        case OAR_FP32: scatter_f32(o, up, ids, offs, no, w); break;
        case OAR_FP64: scatter_f64(o, up, ids, offs, no, w); break;
        case OAR_INT32: scatter_i32(o, up, ids, offs, no, w); break;
        default: scatter_i64(o, up, ids, offs, no, w); break;
        }
    }
    free(ids);
    return rc;
}

static int scatter_bwd(oar_kernel_ctx_t *k)
{
    int dt = oar_k_dtype(k);
    const oar_tensor_t *g;
    const void *gp;
    OAR_TRY(oar_sk_input(k, OAR_SEQSCATTERG_DOUT, "Out@GRAD", dt, &g, &gp));
    int64_t w = oar_sk_row_width(g), n = oar_tensor_numel_of(g), no, m, *ids;
    const int64_t *offs;
    OAR_TRY(scatter_ids(k, OAR_SEQSCATTERG_IDS, w, &ids, &offs, &no, &m));
    void *dx, *du;
    int rc = oar_k_output_sized(k, OAR_SEQSCATTERG_DX, "X@GRAD", dt, n, true, &dx);
    if (rc == OAR_OK) rc = oar_k_output_sized(k, OAR_SEQSCATTERG_DUPDATES, "Updates@GRAD", dt, m, true, &du);
    if (rc == OAR_OK) {
        if (dx) memmove(dx, gp, oar_dtype_size(dt) * (size_t)n);
        if (du && dt == OAR_FP32) gather_f32(gp, du, ids, offs, no, w);
        else if (du) gather_f64(gp, du, ids, offs, no, w);
    }
    free(ids);
    return rc;
}

/* ---- registration ----------------------------------------------------------- */
/* one wrapper per (op, dtype): registration takes distinct functions */
#define REG(OP, FN, DT, SFX)                                                \
    static int FN##_##SFX(oar_kernel_ctx_t *k) { return FN(k); }            \
    OAR_REGISTER_KERNEL(OP, OAR_PLACE_CPU, DT, FN##_##SFX)
#define REG_NUM(OP, FN) REG(OP, FN, OAR_FP32, f32) REG(OP, FN, OAR_FP64, f64) \
    REG(OP, FN, OAR_INT32, i32) REG(OP, FN, OAR_INT64, i64)
#define REG_FLOAT(OP, FN) REG(OP, FN, OAR_FP32, f32) REG(OP, FN, OAR_FP64, f64)

REG_NUM("sequence_mask", mask_fwd)
REG_NUM("sequence_reverse", reverse_fwd)
REG_NUM("sequence_expand_as", expand_as_fwd)
REG_FLOAT("sequence_expand_as_grad", expand_as_bwd)
REG_NUM("sequence_pad", pad_fwd)
REG_FLOAT("sequence_pad_grad", pad_bwd)
REG_NUM("sequence_unpad", unpad_fwd)
REG_FLOAT("sequence_unpad_grad", unpad_bwd)
REG_NUM("sequence_concat", concat_fwd)
REG_FLOAT("sequence_concat_grad", concat_bwd)
REG_NUM("sequence_slice", slice_fwd)
REG_FLOAT("sequence_slice_grad", slice_bwd)
REG("sequence_enumerate", enumerate_fwd, OAR_INT32, i32)
REG("sequence_enumerate", enumerate_fwd, OAR_INT64, i64)
REG_NUM("sequence_reshape", reshape_fwd)
REG_FLOAT("sequence_reshape_grad", reshape_bwd)
REG_NUM("sequence_scatter", scatter_fwd)
REG_FLOAT("sequence_scatter_grad", scatter_bwd)
