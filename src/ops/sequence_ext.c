/*
 * sequence_ext.c — inference and grad makers of the LoD sequence ops of
 * issue 22 (Fluid 1.8): sequence_mask, sequence_reverse, sequence_expand_as,
 * sequence_pad, sequence_unpad, sequence_concat, sequence_slice,
 * sequence_enumerate, sequence_reshape, sequence_scatter; declared in
 * sequence_ext.ops, kernels in kernels/cpu/sequence_ext.c.
 *
 * Shapes that only the LoD knows are set at run time here; shapes that
 * depend on tensor values (sequence_mask without maxlen, sequence_unpad,
 * sequence_slice) are sized by the kernel (oar_k_output_resized). Errors
 * name the slot and the variable; the executor adds the op.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include "op.h"
#include "infer_util.h"   /* nm, out_wanted, copy_dims, grad_name */
#include "ops/sequence_ext.h"

#define IN_NAME(slot) nm(oar_ic_in_name(c, slot, 0))

/* run time: the last LoD level of input `slot` (exactly one level when
 * one_level: what Fluid's kernel reads), checked against its rows */
static int lod_of(oar_infer_ctx_t *c, const char *slot, bool one_level, const int64_t **offs, int64_t *n)
{
    const oar_tensor_t *t = oar_ic_in_lod_tensor(c, slot, 0);
    if (!t) return oar_ic_error(c, OAR_ERR_NOT_FOUND, "input %s '%s' has no value", slot, IN_NAME(slot));
    if (t->lod_levels < 1)
        return oar_ic_error(c, OAR_ERR_INVALID, "input %s '%s' has no LoD; a LoD tensor is required", slot,
                            IN_NAME(slot));
    if (one_level && t->lod_levels != 1)
        return oar_ic_error(c, OAR_ERR_INVALID, "input %s '%s' has %d LoD levels; only one level is supported",
                            slot, IN_NAME(slot), t->lod_levels);
    int l = t->lod_levels - 1;
    *offs = t->lod[l];
    *n = t->lod_size[l];
    int64_t rows = t->ndim > 0 ? t->dims[0] : 1;
    if (*n < 1 || (*offs)[0] != 0 || (*offs)[*n - 1] != rows) {
        char b[160];
        return oar_ic_error(c, OAR_ERR_SHAPE, "input %s '%s': LoD level %d ends at %lld but the tensor has shape %s",
                            slot, IN_NAME(slot), l, (long long)(*n > 0 ? (*offs)[*n - 1] : 0),
                            oar_shape_str(t->dims, t->ndim, b, sizeof b));
    }
    return OAR_OK;
}

static int check_rank(oar_infer_ctx_t *c, const char *slot, int min_rank, const int64_t **d, int *nd)
{
    *d = oar_ic_in_dims(c, slot, 0, nd);
    if (!*d) return OAR_ERR_SHAPE;
    if (*nd < min_rank) {
        char b[160];
        return oar_ic_error(c, OAR_ERR_SHAPE, "input %s '%s' has shape %s; rank >= %d is required", slot,
                            IN_NAME(slot), oar_shape_str(*d, *nd, b, sizeof b), min_rank);
    }
    return OAR_OK;
}

/* input `slot`'s dtype is one of the n in `ok` (skipped while unknown) */
static int check_dtype(oar_infer_ctx_t *c, const char *slot, const int *ok, int n, const char *what)
{
    int dt = oar_ic_in_dtype(c, slot, 0);
    if (dt < 0) return OAR_OK;
    for (int i = 0; i < n; i++)
        if (dt == ok[i]) return OAR_OK;
    return oar_ic_error(c, OAR_ERR_DTYPE, "input %s '%s' has dtype %s; expected %s", slot, IN_NAME(slot),
                        nm(oar_dtype_name(dt)), what);
}
static const int INTS[] = {OAR_INT32, OAR_INT64};
static const int I64[] = {OAR_INT64};
static const int NUMS[] = {OAR_INT32, OAR_INT64, OAR_FP32, OAR_FP64};

static int check_same_dtype(oar_infer_ctx_t *c, const char *slot, const char *like)
{
    int a = oar_ic_in_dtype(c, slot, 0), b = oar_ic_in_dtype(c, like, 0);
    if (a >= 0 && b >= 0 && a != b)
        return oar_ic_error(c, OAR_ERR_DTYPE, "input %s '%s' has dtype %s but %s '%s' has %s", slot, IN_NAME(slot),
                            nm(oar_dtype_name(a)), like, IN_NAME(like), nm(oar_dtype_name(b)));
    return OAR_OK;
}

/* ---- sequence_mask ---------------------------------------------------------- */
static int mask_infer(oar_infer_ctx_t *c)
{
    const oar_seqmask_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int nd;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, &nd);
    if (!xd) return OAR_ERR_SHAPE;
    OAR_TRY(check_dtype(c, "X", NUMS, 4, "int32, int64, float32 or float64"));
    int od = a->out_dtype;
    if (od != OAR_BOOL && od != OAR_INT32 && od != OAR_INT64 && od != OAR_FP32 && od != OAR_FP64)
        return oar_ic_error(c, OAR_ERR_INVALID, "attr out_dtype %d is not bool (0), int32 (2), int64 (3), "
                            "float32 (5) or float64 (6)", od);
    bool tensor_len = oar_ic_in_present(c, "MaxLenTensor");
    if (tensor_len) OAR_TRY(check_dtype(c, "MaxLenTensor", INTS, 2, "int32 or int64"));
    if (nd + 1 > OAR_MAX_DIMS) return oar_ic_error(c, OAR_ERR_SHAPE, "X '%s' has rank %d; Y would exceed %d dims",
                                                   IN_NAME("X"), nd, OAR_MAX_DIMS);
    if (oar_ic_runtime(c)) return OAR_OK;   /* maxlen may come from the data: the kernel sizes Y */
    int64_t d[OAR_MAX_DIMS];
    memcpy(d, xd, sizeof(int64_t) * (size_t)nd);
    d[nd] = !tensor_len && a->maxlen >= 0 ? a->maxlen : -1;
    return oar_ic_set_out(c, "Y", 0, d, nd + 1, od);
}

/* ---- sequence_reverse ------------------------------------------------------- */
static int reverse_infer(oar_infer_ctx_t *c)
{
    const int64_t *xd;
    int nd;
    OAR_TRY(check_rank(c, "X", 2, &xd, &nd));
    if (oar_ic_runtime(c)) {
        const int64_t *offs = NULL;
        int64_t n = 0;
        OAR_TRY(lod_of(c, "X", true, &offs, &n));
    }
    return oar_infer_same_as(c, "X", "Y");
}

/* Fluid's sequence_reverse grad is a sequence_reverse: X <- Y@GRAD (which
 * carries Y's LoD), Y -> X@GRAD */
static int reverse_grad_maker(oar_grad_ctx_t *g)
{
    char gin[512], gout[512];
    OAR_TRY(grad_name(g, "X", false, gout, sizeof gout));
    if (strcmp(gout, OAR_EMPTY_VAR) == 0) return OAR_OK;
    OAR_TRY(grad_name(g, "Y", true, gin, sizeof gin));
    oar_op_desc_t *op = oar_gc_new_op(g, "sequence_reverse");
    if (!op) return OAR_ERR_NOMEM;
    const char *i1[1] = {gin}, *o1[1] = {gout};
    OAR_TRY(oar_op_desc_set_input(op, "X", i1, 1));
    return oar_op_desc_set_output(op, "Y", o1, 1);
}

/* ---- sequence_expand_as ----------------------------------------------------- */
/* run time: Out's rows (Y's LoD, one level, one sequence per row of X) */
static int expand_as_rows(oar_infer_ctx_t *c, int64_t xrows, int64_t *rows)
{
    const int64_t *offs = NULL;
    int64_t n = 0;
    OAR_TRY(lod_of(c, "Y", true, &offs, &n));
    if (n <= 1) { *rows = xrows; return OAR_OK; }
    if (xrows != n - 1)
        return oar_ic_error(c, OAR_ERR_SHAPE, "X '%s' has %lld rows but Y '%s' has %lld sequences; they must match",
                            IN_NAME("X"), (long long)xrows, IN_NAME("Y"), (long long)(n - 1));
    *rows = offs[n - 1];
    return OAR_OK;
}

static int expand_as_infer(oar_infer_ctx_t *c)
{
    const int64_t *xd;
    int nd;
    OAR_TRY(check_rank(c, "X", 2, &xd, &nd));
    int64_t od[OAR_MAX_DIMS];
    memcpy(od, xd, sizeof(int64_t) * (size_t)nd);
    od[0] = -1;
    if (oar_ic_runtime(c)) OAR_TRY(expand_as_rows(c, xd[0], &od[0]));
    OAR_TRY(oar_ic_set_out(c, "Out", 0, od, nd, oar_ic_in_dtype(c, "X", 0)));
    return oar_ic_share_lod(c, "Y", 0, "Out", 0);
}

static int expand_as_grad_infer(oar_infer_ctx_t *c)
{
    if (oar_ic_runtime(c)) {
        const int64_t *xd, *gd;
        int nd, gn;
        OAR_TRY(check_rank(c, "X", 2, &xd, &nd));
        if (!(gd = oar_ic_in_dims(c, "Out@GRAD", 0, &gn))) return OAR_ERR_SHAPE;
        int64_t rows;
        OAR_TRY(expand_as_rows(c, xd[0], &rows));
        bool ok = gn == nd && gd[0] == rows;
        for (int i = 1; ok && i < nd; i++) ok = gd[i] == xd[i];
        if (!ok) {
            char b[160];
            return oar_ic_error(c, OAR_ERR_SHAPE, "Out@GRAD '%s' has shape %s; expected %lld rows of X's row shape",
                                IN_NAME("Out@GRAD"), oar_shape_str(gd, gn, b, sizeof b), (long long)rows);
        }
    }
    return oar_infer_grad_like_inputs(c);
}

/* ---- sequence_pad ----------------------------------------------------------- */
static int64_t max_len(const int64_t *offs, int64_t n)
{
    int64_t m = 0;
    for (int64_t i = 0; i + 1 < n; i++) m = offs[i + 1] - offs[i] > m ? offs[i + 1] - offs[i] : m;
    return m;
}

/* Out's dims [nseq, padded, X.dims[1:]] (nseq, padded -1 at compile time) */
static int pad_dims(oar_infer_ctx_t *c, int padded_length, int64_t *od, int *ond, int64_t *nseq)
{
    const int64_t *xd;
    int nd;
    OAR_TRY(check_rank(c, "X", 2, &xd, &nd));
    if (nd + 1 > OAR_MAX_DIMS) return oar_ic_error(c, OAR_ERR_SHAPE, "X '%s' has too many dims", IN_NAME("X"));
    if (padded_length < -1 || padded_length == 0)
        return oar_ic_error(c, OAR_ERR_RANGE, "attr padded_length is %d; expected -1 or > 0", padded_length);
    od[0] = -1;
    od[1] = padded_length;
    for (int i = 1; i < nd; i++) od[i + 1] = xd[i];
    *ond = nd + 1;
    *nseq = -1;
    if (oar_ic_runtime(c)) {
        const int64_t *offs = NULL;
        int64_t n = 0;
        OAR_TRY(lod_of(c, "X", false, &offs, &n));
        int64_t m = max_len(offs, n);
        if (padded_length == -1) od[1] = m;
        else if (padded_length < m)
            return oar_ic_error(c, OAR_ERR_RANGE, "attr padded_length %d is less than the longest sequence of X '%s' "
                                "(%lld rows)", padded_length, IN_NAME("X"), (long long)m);
        od[0] = *nseq = n - 1;
    }
    return OAR_OK;
}

static int pad_infer(oar_infer_ctx_t *c)
{
    const oar_seqpad_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int64_t od[OAR_MAX_DIMS], nseq;
    int ond;
    OAR_TRY(pad_dims(c, a->padded_length, od, &ond, &nseq));
    OAR_TRY(check_same_dtype(c, "PadValue", "X"));
    int pn;
    const int64_t *pd = oar_ic_in_dims(c, "PadValue", 0, &pn);
    if (!pd) return OAR_ERR_SHAPE;
    /* [1] (any rank of one element) or the row shape X.dims[1:] */
    int64_t pnum = 1, row = 1;
    bool known = true, same = pn == ond - 2;
    for (int i = 0; i < pn; i++) { if (pd[i] < 0) known = false; pnum *= pd[i]; }
    for (int i = 2; i < ond; i++) { if (od[i] < 0) known = false; row *= od[i]; }
    for (int i = 0; same && i < pn; i++) same = oar_dim_eq(pd[i], od[i + 2]);
    if (known && pnum != 1 && !same) {
        char b[160];
        return oar_ic_error(c, OAR_ERR_SHAPE, "PadValue '%s' has shape %s; expected [1] or X's row shape (%lld values)",
                            IN_NAME("PadValue"), oar_shape_str(pd, pn, b, sizeof b), (long long)row);
    }
    OAR_TRY(oar_ic_set_out(c, "Out", 0, od, ond, oar_ic_in_dtype(c, "X", 0)));
    int64_t ld[1] = {nseq};
    return oar_ic_set_out(c, "Length", 0, ld, 1, OAR_INT64);
}

static int pad_grad_infer(oar_infer_ctx_t *c)
{
    const oar_seqpad_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    if (oar_ic_runtime(c)) {
        int64_t od[OAR_MAX_DIMS], nseq;
        int ond, gn;
        OAR_TRY(pad_dims(c, a->padded_length, od, &ond, &nseq));
        const int64_t *gd = oar_ic_in_dims(c, "Out@GRAD", 0, &gn);
        if (!gd) return OAR_ERR_SHAPE;
        /* the forward's padded length is Out@GRAD's dim 1 (padded_length -1: the longest) */
        bool ok = gn == ond && gd[0] == od[0] && gd[1] >= od[1];
        for (int i = 2; ok && i < gn; i++) ok = gd[i] == od[i];
        if (!ok) {
            char b[160], e[160];
            return oar_ic_error(c, OAR_ERR_SHAPE, "Out@GRAD '%s' has shape %s; expected %s", IN_NAME("Out@GRAD"),
                                oar_shape_str(gd, gn, b, sizeof b), oar_shape_str(od, ond, e, sizeof e));
        }
    }
    return oar_infer_grad_like_inputs(c);
}

/* ---- sequence_unpad --------------------------------------------------------- */
static int unpad_infer(oar_infer_ctx_t *c)
{
    const int64_t *xd, *ld;
    int nd, ln;
    OAR_TRY(check_rank(c, "X", 2, &xd, &nd));
    OAR_TRY(check_rank(c, "Length", 1, &ld, &ln));
    OAR_TRY(check_dtype(c, "Length", I64, 1, "int64"));
    if (ln != 1 || !oar_dim_eq(ld[0], xd[0])) {
        char b[160], e[160];
        return oar_ic_error(c, OAR_ERR_SHAPE, "Length '%s' has shape %s; expected [%lld] for X '%s' of shape %s",
                            IN_NAME("Length"), oar_shape_str(ld, ln, b, sizeof b), (long long)xd[0], IN_NAME("X"),
                            oar_shape_str(xd, nd, e, sizeof e));
    }
    if (oar_ic_runtime(c)) return OAR_OK;   /* the lengths' values give Out's rows: the kernel sizes it */
    int64_t od[OAR_MAX_DIMS];
    od[0] = -1;
    for (int i = 2; i < nd; i++) od[i - 1] = xd[i];
    OAR_TRY(oar_ic_set_out(c, "Out", 0, od, nd - 1, oar_ic_in_dtype(c, "X", 0)));
    return oar_ic_set_out_lod_level(c, "Out", 0, 1);
}

static int unpad_grad_infer(oar_infer_ctx_t *c)
{
    if (oar_ic_runtime(c)) {
        const int64_t *offs = NULL;
        int64_t n = 0;
        OAR_TRY(lod_of(c, "Out@GRAD", false, &offs, &n));
    }
    return oar_infer_grad_like_inputs(c);
}

/* ---- sequence_concat -------------------------------------------------------- */
static int concat_infer(oar_infer_ctx_t *c)
{
    int n = oar_ic_in_count(c, "X"), nd0 = 0;
    if (n < 1) return oar_ic_error(c, OAR_ERR_INVALID, "input X is empty; at least one tensor is required");
    const int64_t *d0 = NULL;
    int64_t od[OAR_MAX_DIMS], rows = 0, nseq = -1;
    for (int k = 0; k < n; k++) {
        int nd;
        const int64_t *d = oar_ic_in_dims(c, "X", k, &nd);
        if (!d) return OAR_ERR_SHAPE;
        const char *name = nm(oar_ic_in_name(c, "X", k));
        char b[160], e[160];
        if (nd < 2)
            return oar_ic_error(c, OAR_ERR_SHAPE, "X[%d] '%s' has shape %s; rank >= 2 is required", k, name,
                                oar_shape_str(d, nd, b, sizeof b));
        if (!d0) { d0 = d; nd0 = nd; }
        bool ok = nd == nd0;
        for (int i = 1; ok && i < nd; i++) ok = oar_dim_eq(d[i], d0[i]);
        if (!ok)
            return oar_ic_error(c, OAR_ERR_SHAPE, "X[%d] '%s' has shape %s but X[0] '%s' has %s; the row shapes "
                                "must match", k, name, oar_shape_str(d, nd, b, sizeof b), nm(oar_ic_in_name(c, "X", 0)),
                                oar_shape_str(d0, nd0, e, sizeof e));
        int dt = oar_ic_in_dtype(c, "X", k), dt0 = oar_ic_in_dtype(c, "X", 0);
        if (dt >= 0 && dt0 >= 0 && dt != dt0)
            return oar_ic_error(c, OAR_ERR_DTYPE, "X[%d] '%s' has dtype %s, X[0] %s", k, name,
                                nm(oar_dtype_name(dt)), nm(oar_dtype_name(dt0)));
        rows = rows < 0 || d[0] < 0 ? -1 : rows + d[0];
        if (oar_ic_runtime(c)) {
            const oar_tensor_t *t = oar_ic_in_lod_tensor(c, "X", k);
            if (!t || t->lod_levels < 1)
                return oar_ic_error(c, OAR_ERR_INVALID, "X[%d] '%s' has no LoD; LoD tensors are required", k, name);
            int l = t->lod_levels - 1;
            const int64_t *o = t->lod[l];
            int64_t no = t->lod_size[l];
            if (no < 1 || o[no - 1] != d[0])
                return oar_ic_error(c, OAR_ERR_SHAPE, "X[%d] '%s': LoD ends at %lld but it has %lld rows", k, name,
                                    (long long)(no > 0 ? o[no - 1] : 0), (long long)d[0]);
            if (nseq >= 0 && no - 1 != nseq)
                return oar_ic_error(c, OAR_ERR_SHAPE, "X[%d] '%s' has %lld sequences but X[0] '%s' has %lld; every "
                                    "input must have as many", k, name, (long long)(no - 1),
                                    nm(oar_ic_in_name(c, "X", 0)), (long long)nseq);
            nseq = no - 1;
        }
    }
    memcpy(od, d0, sizeof(int64_t) * (size_t)nd0);
    od[0] = rows;
    OAR_TRY(oar_ic_set_out(c, "Out", 0, od, nd0, oar_ic_in_dtype(c, "X", 0)));
    return oar_ic_set_out_lod_level(c, "Out", 0, 1);   /* run time: the kernel sets the LoD */
}

/* ---- sequence_slice --------------------------------------------------------- */
static int slice_check(oar_infer_ctx_t *c)
{
    const int64_t *xd;
    int nd;
    OAR_TRY(check_rank(c, "X", 1, &xd, &nd));
    static const char *const S[2] = {"Offset", "Length"};
    for (int s = 0; s < 2; s++) {
        int n;
        const int64_t *d = oar_ic_in_dims(c, S[s], 0, &n);
        if (!d) return OAR_ERR_SHAPE;
        OAR_TRY(check_dtype(c, S[s], I64, 1, "int64"));
        if (n != 2 || !oar_dim_eq(d[1], 1)) {
            char b[160];
            return oar_ic_error(c, OAR_ERR_SHAPE, "input %s '%s' has shape %s; expected [num_seq, 1]", S[s],
                                IN_NAME(S[s]), oar_shape_str(d, n, b, sizeof b));
        }
    }
    if (oar_ic_runtime(c)) {
        const int64_t *offs = NULL;
        int64_t n = 0;
        OAR_TRY(lod_of(c, "X", true, &offs, &n));
        for (int s = 0; s < 2; s++) {
            int dn;
            const int64_t *d = oar_ic_in_dims(c, S[s], 0, &dn);
            if (d[0] != n - 1)
                return oar_ic_error(c, OAR_ERR_SHAPE, "input %s '%s' has %lld rows but X '%s' has %lld sequences",
                                    S[s], IN_NAME(S[s]), (long long)d[0], IN_NAME("X"), (long long)(n - 1));
        }
    }
    return OAR_OK;
}

static int slice_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(slice_check(c));
    if (oar_ic_runtime(c)) return OAR_OK;   /* the lengths' values give Out's rows: the kernel sizes it */
    int nd;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, &nd);
    int64_t od[OAR_MAX_DIMS];
    memcpy(od, xd, sizeof(int64_t) * (size_t)nd);
    od[0] = -1;
    OAR_TRY(oar_ic_set_out(c, "Out", 0, od, nd, oar_ic_in_dtype(c, "X", 0)));
    return oar_ic_set_out_lod_level(c, "Out", 0, 1);
}

static int slice_grad_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(slice_check(c));
    return oar_infer_grad_like_inputs(c);
}

/* ---- sequence_enumerate ----------------------------------------------------- */
static int enumerate_infer(oar_infer_ctx_t *c)
{
    const oar_seqenum_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int nd;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, &nd);
    if (!xd) return OAR_ERR_SHAPE;
    OAR_TRY(check_dtype(c, "X", INTS, 2, "int32 or int64"));
    if (nd != 2 || !oar_dim_eq(xd[1], 1)) {
        char b[160];
        return oar_ic_error(c, OAR_ERR_SHAPE, "input X '%s' has shape %s; expected [N, 1]", IN_NAME("X"),
                            oar_shape_str(xd, nd, b, sizeof b));
    }
    if (oar_ic_runtime(c)) {
        const int64_t *offs = NULL;
        int64_t n = 0;
        OAR_TRY(lod_of(c, "X", true, &offs, &n));
    }
    int64_t od[2] = {xd[0], a->win_size};
    OAR_TRY(oar_ic_set_out(c, "Out", 0, od, 2, oar_ic_in_dtype(c, "X", 0)));
    return oar_ic_share_lod(c, "X", 0, "Out", 0);
}

/* ---- sequence_reshape ------------------------------------------------------- */
static int reshape_infer(oar_infer_ctx_t *c)
{
    const oar_seqreshape_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int nd;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, &nd);
    if (!xd) return OAR_ERR_SHAPE;
    char b[160];
    if (nd != 2)
        return oar_ic_error(c, OAR_ERR_SHAPE, "input X '%s' has shape %s; expected [N, D]", IN_NAME("X"),
                            oar_shape_str(xd, nd, b, sizeof b));
    int64_t od[2] = {-1, a->new_dim};
    if (oar_ic_runtime(c)) {
        const int64_t *offs = NULL;
        int64_t n = 0;
        OAR_TRY(lod_of(c, "X", true, &offs, &n));
        /* each sequence must re-cut evenly; the kernel sets the scaled LoD */
        for (int64_t i = 0; i + 1 < n; i++)
            if (((offs[i + 1] - offs[i]) * xd[1]) % a->new_dim != 0)
                return oar_ic_error(c, OAR_ERR_SHAPE, "sequence %lld of X '%s' holds %lld values (%lld rows of %lld), "
                                    "not a multiple of new_dim %d", (long long)i, IN_NAME("X"),
                                    (long long)((offs[i + 1] - offs[i]) * xd[1]), (long long)(offs[i + 1] - offs[i]),
                                    (long long)xd[1], a->new_dim);
        od[0] = xd[0] * xd[1] / a->new_dim;
    }
    OAR_TRY(oar_ic_set_out(c, "Out", 0, od, 2, oar_ic_in_dtype(c, "X", 0)));
    return oar_ic_set_out_lod_level(c, "Out", 0, 1);
}

/* ---- sequence_scatter ------------------------------------------------------- */
static int scatter_check(oar_infer_ctx_t *c, const char *xslot)
{
    int in, un;
    const int64_t *id = oar_ic_in_dims(c, "Ids", 0, &in), *ud = oar_ic_in_dims(c, "Updates", 0, &un);
    if (!id || !ud) return OAR_ERR_SHAPE;
    OAR_TRY(check_dtype(c, "Ids", INTS, 2, "int32 or int64"));
    OAR_TRY(check_same_dtype(c, "Updates", xslot));
    char b[160], e[160];
    if (in != 2 || !oar_dim_eq(id[1], 1))
        return oar_ic_error(c, OAR_ERR_SHAPE, "input Ids '%s' has shape %s; expected [M, 1]", IN_NAME("Ids"),
                            oar_shape_str(id, in, b, sizeof b));
    bool same = un == in;
    for (int i = 0; same && i < in; i++) same = oar_dim_eq(ud[i], id[i]);
    if (!same)
        return oar_ic_error(c, OAR_ERR_SHAPE, "Updates '%s' has shape %s but Ids '%s' has %s; they must match",
                            IN_NAME("Updates"), oar_shape_str(ud, un, b, sizeof b), IN_NAME("Ids"),
                            oar_shape_str(id, in, e, sizeof e));
    if (oar_ic_runtime(c)) {
        const int64_t *offs = NULL;
        int64_t n = 0;
        OAR_TRY(lod_of(c, "Ids", false, &offs, &n));
        int xn;
        const int64_t *xd = oar_ic_in_dims(c, xslot, 0, &xn);
        if (!xd) return OAR_ERR_SHAPE;
        if (xn < 1 || xd[0] != n - 1)
            return oar_ic_error(c, OAR_ERR_SHAPE, "%s '%s' has shape %s but Ids '%s' has %lld sequences; one row per "
                                "sequence is required", xslot, IN_NAME(xslot), oar_shape_str(xd, xn, b, sizeof b),
                                IN_NAME("Ids"), (long long)(n - 1));
    }
    return OAR_OK;
}

static int scatter_infer(oar_infer_ctx_t *c)
{
    const int64_t *xd;
    int nd;
    OAR_TRY(check_rank(c, "X", 1, &xd, &nd));
    OAR_TRY(scatter_check(c, "X"));
    return oar_infer_same_as(c, "X", "Out");
}

static int scatter_grad_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(scatter_check(c, "Out@GRAD"));
    if (oar_ic_out_present(c, "X@GRAD")) {
        int gn;
        const int64_t *gd = oar_ic_in_dims(c, "Out@GRAD", 0, &gn);
        if (!gd) return OAR_ERR_SHAPE;
        OAR_TRY(oar_ic_set_out(c, "X@GRAD", 0, gd, gn, oar_ic_in_dtype(c, "Out@GRAD", 0)));
    }
    if (oar_ic_out_present(c, "Updates@GRAD")) {
        int un;
        const int64_t *ud = oar_ic_in_dims(c, "Updates", 0, &un);
        if (!ud) return OAR_ERR_SHAPE;
        OAR_TRY(oar_ic_set_out(c, "Updates@GRAD", 0, ud, un, oar_ic_in_dtype(c, "Out@GRAD", 0)));
        OAR_TRY(oar_ic_share_lod(c, "Updates", 0, "Updates@GRAD", 0));
    }
    return OAR_OK;
}

#define OAR_OPS_DEFINE
#include "ops/sequence_ext.h"   /* the tables, decoders and registrations */
