/*
 * sequence.c — definitions of the LoD sequence ops (Fluid 1.x):
 * sequence_pool, sequence_softmax, sequence_expand, sequence_conv and their
 * grads: their inference and grad makers; the ops (slots, attributes, docs)
 * are declared in sequence.ops. Kernels in kernels/cpu/sequence.c and
 * kernels/cpu/sequence_conv.c.
 *
 * The ops work on the last LoD level of their input (the innermost
 * sequences), as Fluid's do. A LoD is required at run time; its absence, or a
 * last offset that is not the tensor's row count, is an error naming the op
 * and the variable. Compile-time shapes keep -1 for the rows, which only the
 * LoD knows.
 *
 *   sequence_pool     X [N, ...] -> Out [num_seq, ...] (+ MaxIndex int32 for
 *                     MAX); pooltype AVERAGE|SUM|SQRT|MAX|LAST|FIRST; empty
 *                     sequences give pad_value; Out keeps the levels above.
 *   sequence_softmax  X [N] or [N, 1]: softmax within each sequence.
 *   sequence_expand   X, Y -> Out: X's i-th sequence (or row, without a LoD)
 *                     repeated by the length of Y's i-th sequence at ref_level.
 *   sequence_conv     X [N, D], Filter [contextLength * D, M] -> Out [N, M]:
 *                     each row sees rows contextStart .. contextStart +
 *                     contextLength - 1 around it within its sequence; rows
 *                     outside are zero or, with paddingTrainable, rows of
 *                     PaddingData [up_pad + down_pad, D] (up_pad =
 *                     max(0, -contextStart), down_pad = max(0, contextStart +
 *                     contextLength - 1)).
 */
#include <limits.h>
#include <string.h>
#include "op.h"
#include "ops/sequence_util.h"   /* generated from sequence.ops; OAR_SEQ_X, OAR_SEQG_DX */

/* the kernels' shared code addresses X and X@GRAD of every op here by
 * OAR_SEQ_X/OAR_SEQG_DX (sequence_util.h): 0 */
_Static_assert(OAR_SEQ_X == 0 && OAR_SEQG_DX == 0, "sequence_util.h");
#define SEQ_SLOT0(p) ((int)OAR_##p##_X == 0 && (int)OAR_##p##G_X == 0 && (int)OAR_##p##G_DX == 0)
_Static_assert(SEQ_SLOT0(SEQPOOL) && SEQ_SLOT0(SEQSM) && SEQ_SLOT0(SEQEXP) && SEQ_SLOT0(SEQCONV),
               "X is every sequence op's input 0 and X@GRAD every grad's output 0");

static const char *nm(const char *s) { return s ? s : "?"; }

/* run time: the last LoD level of input `slot`, checked against its rows */
static int seq_lod(oar_infer_ctx_t *c, const char *slot, const int64_t **offs, int64_t *n)
{
    const oar_tensor_t *t = oar_ic_in_lod_tensor(c, slot, 0);
    if (!t) return oar_ic_error(c, OAR_ERR_NOT_FOUND, "input %s '%s' has no value", slot, nm(oar_ic_in_name(c, slot, 0)));
    if (t->lod_levels < 1)
        return oar_ic_error(c, OAR_ERR_INVALID, "input %s '%s' has no LoD; a LoD tensor (level >= 1) is required",
                            slot, nm(oar_ic_in_name(c, slot, 0)));
    int l = t->lod_levels - 1;
    *offs = t->lod[l];
    *n = t->lod_size[l];
    int64_t rows = t->ndim > 0 ? t->dims[0] : 1;
    if (*n < 1 || (*offs)[*n - 1] != rows) {
        char b[160];
        return oar_ic_error(c, OAR_ERR_SHAPE, "input %s '%s': LoD level %d ends at %lld but the tensor has shape %s",
                            slot, nm(oar_ic_in_name(c, slot, 0)), l, (long long)(*n > 0 ? (*offs)[*n - 1] : 0),
                            oar_shape_str(t->dims, t->ndim, b, sizeof b));
    }
    return OAR_OK;
}


/* ---- sequence_pool ------------------------------------------------------------ */
static int pool_infer(oar_infer_ctx_t *c)
{
    int nd;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, &nd);
    if (!xd) return OAR_ERR_SHAPE;
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    if (nd < 1) return oar_ic_error(c, OAR_ERR_SHAPE, "input X '%s' is a scalar; expected [N, ...]", nm(oar_ic_in_name(c, "X", 0)));
    int64_t od[OAR_MAX_DIMS];
    memcpy(od, xd, sizeof(int64_t) * (size_t)nd);
    od[0] = -1;
    if (oar_ic_runtime(c)) {
        const int64_t *offs;
        int64_t n;
        OAR_TRY(seq_lod(c, "X", &offs, &n));
        od[0] = n - 1;
    } else {
        int xl = oar_ic_in_lod_level(c, "X", 0);
        OAR_TRY(oar_ic_set_out_lod_level(c, "Out", 0, xl > 0 ? xl - 1 : 0));
    }
    OAR_TRY(oar_ic_set_out(c, "Out", 0, od, nd, oar_ic_in_dtype(c, "X", 0)));
    if (oar_ic_out_present(c, "MaxIndex")) OAR_TRY(oar_ic_set_out(c, "MaxIndex", 0, od, nd, OAR_INT32));
    return OAR_OK;
}

/* X is read for its LoD and shape; MaxIndex when the forward op kept it */
static int pool_grad_maker(oar_grad_ctx_t *g)
{
    oar_op_desc_t *op = oar_gc_new_op(g, "sequence_pool_grad");
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "X"));
    const char *mi = oar_op_desc_output_count(oar_gc_fwd(g), "MaxIndex") > 0
                         ? oar_op_desc_output_arg(oar_gc_fwd(g), "MaxIndex", 0) : NULL;
    if (mi && strcmp(mi, OAR_EMPTY_VAR) != 0) OAR_TRY(oar_gc_out(g, op, "MaxIndex"));
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    return oar_gc_in_grad(g, op, "X");
}

static int pool_grad_infer(oar_infer_ctx_t *c)
{
    if (oar_ic_runtime(c)) {
        int nd, gn;
        const int64_t *xd = oar_ic_in_dims(c, "X", 0, &nd);
        if (!xd) return OAR_ERR_SHAPE;
        const int64_t *gd = oar_ic_in_dims(c, "Out@GRAD", 0, &gn);
        if (!gd) return OAR_ERR_SHAPE;
        const int64_t *offs;
        int64_t n;
        OAR_TRY(seq_lod(c, "X", &offs, &n));
        bool ok = gn == nd && nd > 0 && gd[0] == n - 1;
        for (int i = 1; ok && i < nd; i++) ok = gd[i] == xd[i];
        if (!ok) {
            char bg[160], bx[160];
            return oar_ic_error(c, OAR_ERR_SHAPE, "Out@GRAD '%s' has shape %s; expected [%lld (sequences), ...] "
                                "matching X shape %s", nm(oar_ic_in_name(c, "Out@GRAD", 0)),
                                oar_shape_str(gd, gn, bg, sizeof bg), (long long)(n - 1),
                                oar_shape_str(xd, nd, bx, sizeof bx));
        }
    }
    return oar_infer_grad_like_inputs(c);
}

/* ---- sequence_softmax ------------------------------------------------------------ */
/* one value per row: [N] or [N, 1, ...] */
static int check_width1(oar_infer_ctx_t *c, const char *slot, const int64_t *d, int nd)
{
    bool ok = nd >= 1;
    for (int i = 1; ok && i < nd; i++) ok = oar_dim_eq(d[i], 1);
    if (!ok) {
        char b[160];
        return oar_ic_error(c, OAR_ERR_SHAPE, "input %s '%s' has shape %s; expected [N] or [N, 1]", slot,
                            nm(oar_ic_in_name(c, slot, 0)), oar_shape_str(d, nd, b, sizeof b));
    }
    return OAR_OK;
}

static int softmax_infer(oar_infer_ctx_t *c)
{
    int nd;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, &nd);
    if (!xd) return OAR_ERR_SHAPE;
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    OAR_TRY(check_width1(c, "X", xd, nd));
    if (oar_ic_runtime(c)) {
        const int64_t *offs;
        int64_t n;
        OAR_TRY(seq_lod(c, "X", &offs, &n));
    }
    return oar_infer_same_as(c, "X", "Out");
}

static int softmax_grad_infer(oar_infer_ctx_t *c)
{
    int on, gn;
    const int64_t *od = oar_ic_in_dims(c, "Out", 0, &on);
    if (!od) return OAR_ERR_SHAPE;
    const int64_t *gd = oar_ic_in_dims(c, "Out@GRAD", 0, &gn);
    if (!gd) return OAR_ERR_SHAPE;
    bool ok = on == gn;
    for (int i = 0; ok && i < on; i++) ok = oar_dim_eq(od[i], gd[i]);
    if (!ok) {
        char bo[160], bg[160];
        return oar_ic_error(c, OAR_ERR_SHAPE, "Out@GRAD '%s' has shape %s, Out '%s' has shape %s",
                            nm(oar_ic_in_name(c, "Out@GRAD", 0)), oar_shape_str(gd, gn, bg, sizeof bg),
                            nm(oar_ic_in_name(c, "Out", 0)), oar_shape_str(od, on, bo, sizeof bo));
    }
    if (oar_ic_runtime(c)) {
        const int64_t *offs;
        int64_t n;
        OAR_TRY(seq_lod(c, "Out", &offs, &n));
    }
    return oar_infer_grad_like_inputs(c);
}

/* ---- sequence_expand --------------------------------------------------------------- */
/* run time: Out's row count from X's LoD (at most one level) and Y's ref level */
static int expand_rows(oar_infer_ctx_t *c, const oar_tensor_t *x, int64_t *rows)
{
    const oar_tensor_t *y = oar_ic_in_lod_tensor(c, "Y", 0);
    if (!y) return OAR_ERR_NOT_FOUND;
    const oar_seqexpand_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int ref = a->ref_level;
    if (x->lod_levels > 1)
        return oar_ic_error(c, OAR_ERR_INVALID, "input X '%s' has %d LoD levels; at most 1 is supported",
                            nm(oar_ic_in_name(c, "X", 0)), x->lod_levels);
    if (y->lod_levels < 1)
        return oar_ic_error(c, OAR_ERR_INVALID, "input Y '%s' has no LoD; its LoD at ref_level gives the repeats",
                            nm(oar_ic_in_name(c, "Y", 0)));
    if (ref < -1 || ref >= y->lod_levels)
        return oar_ic_error(c, OAR_ERR_RANGE, "attr ref_level %d is out of range: Y '%s' has %d LoD levels "
                            "(use -1 or 0..%d)", ref, nm(oar_ic_in_name(c, "Y", 0)), y->lod_levels,
                            y->lod_levels - 1);
    if (ref == -1) ref = y->lod_levels - 1;
    const int64_t *r = y->lod[ref];
    int64_t nr = y->lod_size[ref];
    int64_t xrows = x->ndim > 0 ? x->dims[0] : 1;
    if (nr <= 1) { *rows = xrows; return OAR_OK; }
    if (x->lod_levels == 1) {
        if (x->lod_size[0] != nr)
            return oar_ic_error(c, OAR_ERR_SHAPE, "X '%s' has %lld sequences but Y '%s' has %lld at ref_level %d",
                                nm(oar_ic_in_name(c, "X", 0)), (long long)(x->lod_size[0] - 1),
                                nm(oar_ic_in_name(c, "Y", 0)), (long long)(nr - 1), ref);
        if (x->lod[0][x->lod_size[0] - 1] != xrows)
            return oar_ic_error(c, OAR_ERR_SHAPE, "X '%s': LoD ends at %lld but the tensor has %lld rows",
                                nm(oar_ic_in_name(c, "X", 0)), (long long)x->lod[0][x->lod_size[0] - 1],
                                (long long)xrows);
    } else if (xrows != nr - 1) {
        return oar_ic_error(c, OAR_ERR_SHAPE, "X '%s' has no LoD and %lld rows but Y '%s' has %lld sequences "
                            "at ref_level %d; they must match", nm(oar_ic_in_name(c, "X", 0)), (long long)xrows,
                            nm(oar_ic_in_name(c, "Y", 0)), (long long)(nr - 1), ref);
    }
    int64_t total = 0;
    for (int64_t i = 1; i < nr; i++) {
        int64_t len = x->lod_levels == 1 ? x->lod[0][i] - x->lod[0][i - 1] : 1, p;
        if (oar_mul_checked(r[i] - r[i - 1], len, &p) != OAR_OK)
            return oar_ic_error(c, OAR_ERR_NOMEM, "Out's row count overflows");
        total += p;
    }
    *rows = total;
    return OAR_OK;
}

static int expand_infer(oar_infer_ctx_t *c)
{
    int nd, yn;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, &nd);
    if (!xd) return OAR_ERR_SHAPE;
    if (!oar_ic_in_dims(c, "Y", 0, &yn)) return OAR_ERR_SHAPE;
    if (nd < 1) return oar_ic_error(c, OAR_ERR_SHAPE, "input X '%s' is a scalar; expected [N, ...]", nm(oar_ic_in_name(c, "X", 0)));
    int64_t od[OAR_MAX_DIMS];
    memcpy(od, xd, sizeof(int64_t) * (size_t)nd);
    od[0] = -1;
    if (oar_ic_runtime(c)) {
        const oar_tensor_t *x = oar_ic_in_lod_tensor(c, "X", 0);
        if (!x) return OAR_ERR_NOT_FOUND;
        OAR_TRY(expand_rows(c, x, &od[0]));
        OAR_TRY(oar_ic_set_out(c, "Out", 0, od, nd, oar_ic_in_dtype(c, "X", 0)));
        return OAR_OK;   /* the kernel writes Out's LoD */
    }
    OAR_TRY(oar_ic_set_out(c, "Out", 0, od, nd, oar_ic_in_dtype(c, "X", 0)));
    return oar_ic_share_lod(c, "X", 0, "Out", 0);
}

static int expand_grad_infer(oar_infer_ctx_t *c)
{
    if (oar_ic_runtime(c)) {
        const oar_tensor_t *x = oar_ic_in_lod_tensor(c, "X", 0);
        if (!x) return OAR_ERR_NOT_FOUND;
        int64_t rows;
        OAR_TRY(expand_rows(c, x, &rows));
        int gn;
        const int64_t *gd = oar_ic_in_dims(c, "Out@GRAD", 0, &gn);
        if (!gd) return OAR_ERR_SHAPE;
        int64_t gw = 1, xw = 1;
        for (int i = 1; i < gn; i++) gw *= gd[i];
        for (int i = 1; i < x->ndim; i++) xw *= x->dims[i];
        if (gn < 1 || gd[0] != rows || gw != xw) {
            char b[160];
            return oar_ic_error(c, OAR_ERR_SHAPE, "Out@GRAD '%s' has shape %s; expected %lld rows of %lld values",
                                nm(oar_ic_in_name(c, "Out@GRAD", 0)), oar_shape_str(gd, gn, b, sizeof b),
                                (long long)rows, (long long)xw);
        }
    }
    return oar_infer_grad_like_inputs(c);
}

/* ---- sequence_conv ------------------------------------------------------------------ */
static int conv_check(oar_infer_ctx_t *c, int64_t *n, int64_t *m)
{
    const oar_seqconv_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int cl = a->context_length, cs = a->context_start;
    if (a->context_stride != 1)
        return oar_ic_error(c, OAR_ERR_INVALID, "attr contextStride is %d; only 1 is supported", a->context_stride);
    if (cl < 1) return oar_ic_error(c, OAR_ERR_INVALID, "attr contextLength is %d; expected >= 1", cl);
    int xn, fn;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, &xn);
    if (!xd) return OAR_ERR_SHAPE;
    const int64_t *fd = oar_ic_in_dims(c, "Filter", 0, &fn);
    if (!fd) return OAR_ERR_SHAPE;
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    char bx[160], bf[160];
    if (xn != 2)
        return oar_ic_error(c, OAR_ERR_SHAPE, "input X '%s' has shape %s; expected [N, D]",
                            nm(oar_ic_in_name(c, "X", 0)), oar_shape_str(xd, xn, bx, sizeof bx));
    int64_t want = xd[1] < 0 ? -1 : (int64_t)cl * xd[1];
    if (fn != 2 || !oar_dim_eq(fd[0], want))
        return oar_ic_error(c, OAR_ERR_SHAPE, "Filter '%s' has shape %s; expected [contextLength * D, M] = [%lld, M] "
                            "for X shape %s", nm(oar_ic_in_name(c, "Filter", 0)), oar_shape_str(fd, fn, bf, sizeof bf),
                            (long long)want, oar_shape_str(xd, xn, bx, sizeof bx));
    int xt = oar_ic_in_dtype(c, "X", 0), ft = oar_ic_in_dtype(c, "Filter", 0);
    if (xt >= 0 && ft >= 0 && xt != ft)
        return oar_ic_error(c, OAR_ERR_DTYPE, "X dtype %s and Filter dtype %s differ", nm(oar_dtype_name(xt)),
                            nm(oar_dtype_name(ft)));
    int64_t up = cs < 0 ? -(int64_t)cs : 0, down = (int64_t)cs + cl - 1 > 0 ? (int64_t)cs + cl - 1 : 0;
    bool trainable = a->padding_trainable;
    if (oar_ic_in_count(c, "PaddingData") > 0) {
        int pn;
        const int64_t *pd = oar_ic_in_dims(c, "PaddingData", 0, &pn);
        if (!pd) return OAR_ERR_SHAPE;
        if (pn != 2 || !oar_dim_eq(pd[0], up + down) || !oar_dim_eq(pd[1], xd[1]))
            return oar_ic_error(c, OAR_ERR_SHAPE, "PaddingData '%s' has shape %s; expected [up_pad + down_pad, D] = "
                                "[%lld, %lld]", nm(oar_ic_in_name(c, "PaddingData", 0)),
                                oar_shape_str(pd, pn, bf, sizeof bf), (long long)(up + down), (long long)xd[1]);
    } else if (trainable && up + down > 0) {
        return oar_ic_error(c, OAR_ERR_INVALID, "paddingTrainable is true but input PaddingData is missing");
    }
    *n = xd[0];
    *m = fd[1];
    return OAR_OK;
}

static int conv_infer(oar_infer_ctx_t *c)
{
    int64_t n, m;
    OAR_TRY(conv_check(c, &n, &m));
    if (oar_ic_runtime(c)) {
        const int64_t *offs;
        int64_t no;
        OAR_TRY(seq_lod(c, "X", &offs, &no));
    }
    int64_t od[2] = {n, m};
    OAR_TRY(oar_ic_set_out(c, "Out", 0, od, 2, oar_ic_in_dtype(c, "X", 0)));
    return oar_ic_share_lod(c, "X", 0, "Out", 0);
}

static int conv_grad_infer(oar_infer_ctx_t *c)
{
    int64_t n, m;
    OAR_TRY(conv_check(c, &n, &m));
    int gn;
    const int64_t *gd = oar_ic_in_dims(c, "Out@GRAD", 0, &gn);
    if (!gd) return OAR_ERR_SHAPE;
    if (gn != 2 || !oar_dim_eq(gd[0], n) || !oar_dim_eq(gd[1], m)) {
        char b[160];
        return oar_ic_error(c, OAR_ERR_SHAPE, "Out@GRAD '%s' has shape %s; expected [%lld, %lld]",
                            nm(oar_ic_in_name(c, "Out@GRAD", 0)), oar_shape_str(gd, gn, b, sizeof b),
                            (long long)n, (long long)m);
    }
    return oar_infer_grad_like_inputs(c);
}

#define OAR_OPS_DEFINE
#include "ops/sequence.h"   /* the tables, decoders and registrations */
