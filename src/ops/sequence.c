/*
 * sequence.c — definitions of the LoD sequence ops (Fluid 1.x):
 * sequence_pool, sequence_softmax, sequence_expand, sequence_conv and their
 * grads. Kernels in kernels/cpu/sequence.c and kernels/cpu/sequence_conv.c.
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
#include "sequence.h"
#include "seq_lod.h"

#define ATTR_END {NULL, 0, 0, NULL, false, 0, 0}

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
static const oar_slot_def_t pool_in[] = {{"X", 0}, {NULL, 0}};
static const oar_slot_def_t pool_out[] = {{"Out", 0}, {"MaxIndex", OAR_SLOT_DISPENSABLE}, {NULL, 0}};
static const oar_attr_def_t pool_attrs[] = {
    {"pooltype", OAR_ATTR_STRING, 0, "AVERAGE", false, 0, 0, OAR_SEQPOOL_TYPES},
    {"is_test", OAR_ATTR_BOOLEAN, 0, NULL, false, 0, 0},
    {"pad_value", OAR_ATTR_FLOAT, 0, NULL, false, 0, 0},
    ATTR_END};

static int pool_decode(oar_decode_ctx_t *d, void *out)
{
    oar_seqpool_attrs_t *a = out;
    a->pooltype = oar_dec_choice(d, "pooltype");
    a->pad_value = oar_dec_f(d, "pad_value");
    return oar_dec_status(d);
}

static int check_pooltype(oar_infer_ctx_t *c)
{
    const char *p = oar_attr_s(oar_ic_op(c), "pooltype");
    if (oar_attr_choice_index(OAR_SEQPOOL_TYPES, p) >= 0) return OAR_OK;
    return oar_ic_error(c, OAR_ERR_INVALID, "attr pooltype is '%s'; expected AVERAGE, SUM, SQRT, MAX, LAST or FIRST",
                        nm(p));
}

static int pool_infer(oar_infer_ctx_t *c)
{
    int nd;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, &nd);
    if (!xd) return OAR_ERR_SHAPE;
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    OAR_TRY(check_pooltype(c));
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

static const oar_op_def_t sequence_pool_def = {
    .type = "sequence_pool", .inputs = pool_in, .outputs = pool_out, .attrs = pool_attrs,
    .infer = pool_infer, .grad = pool_grad_maker, .dtype_slot = "X",
    .attrs_size = sizeof(oar_seqpool_attrs_t), .decode = pool_decode};
OAR_REGISTER_OP(sequence_pool_def)

static const oar_slot_def_t pool_grad_in[] = {
    {"X", 0}, {"MaxIndex", OAR_SLOT_DISPENSABLE}, {"Out@GRAD", 0}, {NULL, 0}};
static const oar_slot_def_t x_grad_out[] = {{"X@GRAD", OAR_SLOT_DISPENSABLE}, {NULL, 0}};

static int pool_grad_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(check_pooltype(c));
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

static const oar_op_def_t sequence_pool_grad_def = {
    .type = "sequence_pool_grad", .inputs = pool_grad_in, .outputs = x_grad_out, .attrs = pool_attrs,
    .infer = pool_grad_infer, .dtype_slot = "Out@GRAD",
    .attrs_size = sizeof(oar_seqpool_attrs_t), .decode = pool_decode};
OAR_REGISTER_OP(sequence_pool_grad_def)

/* ---- sequence_softmax ------------------------------------------------------------ */
static const oar_slot_def_t x_in[] = {{"X", 0}, {NULL, 0}};
static const oar_slot_def_t out_only[] = {{"Out", 0}, {NULL, 0}};
static const oar_attr_def_t softmax_attrs[] = {
    {"use_cudnn", OAR_ATTR_BOOLEAN, 0, NULL, false, 0, 0},
    {"data_format", OAR_ATTR_STRING, 0, "AnyLayout", false, 0, 0},
    ATTR_END};

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

static const oar_op_def_t sequence_softmax_def = {
    .type = "sequence_softmax", .inputs = x_in, .outputs = out_only, .attrs = softmax_attrs,
    .infer = softmax_infer, .grad = oar_grad_default, .dtype_slot = "X",
    .flags = OAR_OP_INPLACE /* a sequence's values are all read before its outputs are written */};
OAR_REGISTER_OP(sequence_softmax_def)

static const oar_slot_def_t softmax_grad_in[] = {{"X", 0}, {"Out", 0}, {"Out@GRAD", 0}, {NULL, 0}};

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

static const oar_op_def_t sequence_softmax_grad_def = {
    .type = "sequence_softmax_grad", .inputs = softmax_grad_in, .outputs = x_grad_out, .attrs = softmax_attrs,
    .infer = softmax_grad_infer, .dtype_slot = "Out"};
OAR_REGISTER_OP(sequence_softmax_grad_def)

/* ---- sequence_expand --------------------------------------------------------------- */
static const oar_slot_def_t expand_in[] = {{"X", 0}, {"Y", 0}, {NULL, 0}};
static const oar_attr_def_t expand_attrs[] = {
    {"ref_level", OAR_ATTR_INT, -1, NULL, false, 0, 0},
    ATTR_END};

static int expand_decode(oar_decode_ctx_t *d, void *out)
{
    ((oar_seqexpand_attrs_t *)out)->ref_level = oar_dec_i(d, "ref_level");
    return oar_dec_status(d);
}

/* run time: Out's row count from X's LoD (at most one level) and Y's ref level */
static int expand_rows(oar_infer_ctx_t *c, const oar_tensor_t *x, int64_t *rows)
{
    const oar_tensor_t *y = oar_ic_in_lod_tensor(c, "Y", 0);
    if (!y) return OAR_ERR_NOT_FOUND;
    int ref = oar_attr_i(oar_ic_op(c), "ref_level");
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

static const oar_op_def_t sequence_expand_def = {
    .type = "sequence_expand", .inputs = expand_in, .outputs = out_only, .attrs = expand_attrs,
    .infer = expand_infer, .grad = oar_grad_default, .dtype_slot = "X",
    .attrs_size = sizeof(oar_seqexpand_attrs_t), .decode = expand_decode};
OAR_REGISTER_OP(sequence_expand_def)

static const oar_slot_def_t expand_grad_in[] = {{"X", 0}, {"Y", 0}, {"Out@GRAD", 0}, {NULL, 0}};

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

static const oar_op_def_t sequence_expand_grad_def = {
    .type = "sequence_expand_grad", .inputs = expand_grad_in, .outputs = x_grad_out, .attrs = expand_attrs,
    .infer = expand_grad_infer, .dtype_slot = "Out@GRAD",
    .attrs_size = sizeof(oar_seqexpand_attrs_t), .decode = expand_decode};
OAR_REGISTER_OP(sequence_expand_grad_def)

/* ---- sequence_conv ------------------------------------------------------------------ */
static const oar_slot_def_t conv_in[] = {
    {"X", 0}, {"Filter", 0}, {"PaddingData", OAR_SLOT_DISPENSABLE}, {NULL, 0}};
static const oar_attr_def_t conv_attrs[] = {
    {"paddingTrainable", OAR_ATTR_BOOLEAN, 0, NULL, false, 0, 0},
    {"contextLength", OAR_ATTR_INT, 0, NULL, true, 1, INT_MAX},
    {"contextStart", OAR_ATTR_INT, 0, NULL, false, 0, 0},
    {"contextStride", OAR_ATTR_INT, 1, NULL, false, 0, 0},
    ATTR_END};

static int conv_decode(oar_decode_ctx_t *d, void *out)
{
    oar_seqconv_attrs_t *a = out;
    a->context_length = oar_dec_i(d, "contextLength");
    a->context_start = oar_dec_i(d, "contextStart");
    a->padding_trainable = oar_dec_b(d, "paddingTrainable");
    return oar_dec_status(d);
}

static int conv_check(oar_infer_ctx_t *c, int64_t *n, int64_t *m)
{
    const oar_op_desc_t *op = oar_ic_op(c);
    int cl = oar_attr_i(op, "contextLength"), cs = oar_attr_i(op, "contextStart");
    if (oar_attr_i(op, "contextStride") != 1)
        return oar_ic_error(c, OAR_ERR_INVALID, "attr contextStride is %d; only 1 is supported",
                            oar_attr_i(op, "contextStride"));
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
    bool trainable = oar_attr_b(op, "paddingTrainable");
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

static const oar_op_def_t sequence_conv_def = {
    .type = "sequence_conv", .inputs = conv_in, .outputs = out_only, .attrs = conv_attrs,
    .infer = conv_infer, .grad = oar_grad_default, .dtype_slot = "X",
    .attrs_size = sizeof(oar_seqconv_attrs_t), .decode = conv_decode};
OAR_REGISTER_OP(sequence_conv_def)

static const oar_slot_def_t conv_grad_in[] = {
    {"X", 0}, {"Filter", 0}, {"PaddingData", OAR_SLOT_DISPENSABLE}, {"Out@GRAD", 0}, {NULL, 0}};
static const oar_slot_def_t conv_grad_out[] = {
    {"X@GRAD", OAR_SLOT_DISPENSABLE}, {"Filter@GRAD", OAR_SLOT_DISPENSABLE},
    {"PaddingData@GRAD", OAR_SLOT_DISPENSABLE}, {NULL, 0}};

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

static const oar_op_def_t sequence_conv_grad_def = {
    .type = "sequence_conv_grad", .inputs = conv_grad_in, .outputs = conv_grad_out, .attrs = conv_attrs,
    .infer = conv_grad_infer, .dtype_slot = "X",
    .attrs_size = sizeof(oar_seqconv_attrs_t), .decode = conv_decode};
OAR_REGISTER_OP(sequence_conv_grad_def)
