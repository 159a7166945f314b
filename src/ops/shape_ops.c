/*
 * shape_ops.c — ops that only move or relabel data: reshape(2), squeeze(2),
 * unsqueeze(2), flatten(2) (views), transpose(2), concat, split, stack, with
 * their grads. Kernels in kernels/cpu/shape_ops.c.
 *
 * Fluid 1.x semantics. The "2" variants also write XShape = [0, X dims...],
 * a data-less record of X's shape (and LoD) from which their grads recover
 * X@GRAD's dims without keeping X alive. LoD passes from X to Out when the
 * first dimension is unchanged (reshape, squeeze, unsqueeze, flatten), as in
 * Fluid; transpose and stack drop it.
 *
 * The ops themselves (slots, attributes, docs) are declared in
 * shape_ops.ops; this file holds their inference and grad makers.
 */
#include "op.h"
#include "infer_util.h"   /* nm, out_wanted, copy_dims, grad_name */
#include "attr_tensor.h"
#include "ops/shape_ops.h"   /* generated from shape_ops.ops */
#include "ops/double_grad_makers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a grad output the pass left out (@EMPTY@) or the op lacks */
/* copy of an input's dims (the pointer may be invalidated by an in-place output) */
static int in_dims(oar_infer_ctx_t *c, const char *slot, int i, int64_t *dims, int *nd)
{
    const int64_t *d = oar_ic_in_dims(c, slot, i, nd);
    if (!d) return OAR_ERR_SHAPE;
    memcpy(dims, d, sizeof(int64_t) * (size_t)*nd);
    return OAR_OK;
}

/* LoD passes only when rows are kept: the first dimension is unchanged */
static int lod_if_rows_kept(oar_infer_ctx_t *c, const char *in_slot, const int64_t *in, int nin,
                            const char *out_slot, const int64_t *out, int nout)
{
    if (nin > 0 && nout > 0 && in[0] == out[0]) return oar_ic_share_lod(c, in_slot, 0, out_slot, 0);
    return OAR_OK;
}

/* XShape = [0, X dims...] with X's dtype and LoD */
static int set_xshape(oar_infer_ctx_t *c, const int64_t *x, int nx)
{
    if (!out_wanted(c, "XShape", 0)) return OAR_OK;
    if (nx + 1 > OAR_MAX_DIMS)
        return oar_ic_error(c, OAR_ERR_SHAPE, "input X '%s' has rank %d; XShape needs rank + 1 <= %d",
                            nm(oar_ic_in_name(c, "X", 0)), nx, OAR_MAX_DIMS);
    int64_t xs[OAR_MAX_DIMS];
    xs[0] = 0;
    memcpy(xs + 1, x, sizeof(int64_t) * (size_t)nx);
    OAR_TRY(oar_ic_set_out(c, "XShape", 0, xs, nx + 1, oar_ic_in_dtype(c, "X", 0)));
    return oar_ic_share_lod(c, "X", 0, "XShape", 0);
}

/* X's dims recovered from XShape (drop the leading 0) */
static int xshape_dims(oar_infer_ctx_t *c, int64_t *x, int *nx)
{
    int n;
    const int64_t *d = oar_ic_in_dims(c, "XShape", 0, &n);
    if (!d) return OAR_ERR_SHAPE;
    if (n < 1)
        return oar_ic_error(c, OAR_ERR_SHAPE, "input XShape '%s' has rank 0; expected [0, X dims...]",
                            nm(oar_ic_in_name(c, "XShape", 0)));
    memcpy(x, d + 1, sizeof(int64_t) * (size_t)(n - 1));
    *nx = n - 1;
    return OAR_OK;
}

/* oar_ic_int_list over a decoded INTS attr: the tensors (tslot, then lslot)
 * when given, else `attr` (named aname in messages) */
static int int_list(oar_infer_ctx_t *c, const char *tslot, const char *lslot, const oar_ints_t *attr,
                    const char *aname, int64_t *v, int max, int *n, bool *known)
{
    if ((tslot && oar_ic_in_present(c, tslot)) || (lslot && oar_ic_in_count(c, lslot) > 0))
        return oar_ic_int_list(c, tslot, lslot, NULL, v, max, n, known);
    *known = true;
    if (attr->n > max)
        return oar_ic_error(c, OAR_ERR_INVALID, "attr %s must be INTS or LONGS with at most %d values", aname, max);
    for (int i = 0; i < attr->n; i++) v[i] = attr->v[i];
    *n = attr->n;
    return OAR_OK;
}

/* checks that Out@GRAD holds as many elements as X@GRAD will (run time) */
static int check_grad_numel(oar_infer_ctx_t *c, const int64_t *x, int nx)
{
    int ng;
    const int64_t *g = oar_ic_in_dims(c, "Out@GRAD", 0, &ng);
    if (!g) return OAR_ERR_SHAPE;
    if (!oar_ic_runtime(c)) return OAR_OK;
    int64_t a, b;
    OAR_TRY(oar_shape_numel(x, nx, &a));
    OAR_TRY(oar_shape_numel(g, ng, &b));
    if (a != b) {
        char bx[160], bg[160];
        return oar_ic_error(c, OAR_ERR_SHAPE, "Out@GRAD '%s' has shape %s (%lld elements) but X has shape %s "
                            "(%lld elements)", nm(oar_ic_in_name(c, "Out@GRAD", 0)),
                            oar_shape_str(g, ng, bg, sizeof bg), (long long)b,
                            oar_shape_str(x, nx, bx, sizeof bx), (long long)a);
    }
    return OAR_OK;
}

/* X@GRAD of a view op: X's dims (from XShape when with_xshape, else from X),
 * Out@GRAD's dtype, and the LoD of where the dims came from */
static int view_grad_infer(oar_infer_ctx_t *c, bool with_xshape)
{
    if (!out_wanted(c, "X@GRAD", 0)) return OAR_OK;
    int64_t x[OAR_MAX_DIMS];
    int nx = 0;
    if (with_xshape) OAR_TRY(xshape_dims(c, x, &nx));
    else OAR_TRY(in_dims(c, "X", 0, x, &nx));
    OAR_TRY(check_grad_numel(c, x, nx));
    OAR_TRY(oar_ic_set_out(c, "X@GRAD", 0, x, nx, oar_ic_in_dtype(c, "Out@GRAD", 0)));
    return oar_ic_share_lod(c, with_xshape ? "XShape" : "X", 0, "X@GRAD", 0);
}
static int view_grad_infer_x(oar_infer_ctx_t *c) { return view_grad_infer(c, false); }
static int view_grad_infer_xshape(oar_infer_ctx_t *c) { return view_grad_infer(c, true); }

/* grad makers: v1 ops read X (for its shape), v2 ops read XShape */
static int make_grad(oar_grad_ctx_t *g, bool with_xshape)
{
    oar_op_desc_t *op = oar_gc_new_grad_op(g);
    if (!op) return OAR_ERR_NOMEM;
    if (with_xshape) OAR_TRY(oar_gc_out(g, op, "XShape"));
    else OAR_TRY(oar_gc_in(g, op, "X"));
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    return oar_gc_in_grad(g, op, "X");
}
static int grad_maker_x(oar_grad_ctx_t *g) { return make_grad(g, false); }
static int grad_maker_xshape(oar_grad_ctx_t *g) { return make_grad(g, true); }

/* the v1 and v2 inference of a view op (v2 also writes XShape) */
#define VIEW_INFERS(NAME)                                                       \
    static int NAME##_infer2(oar_infer_ctx_t *c) { return NAME##_infer(c, true); } \
    static int NAME##_infer1(oar_infer_ctx_t *c) { return NAME##_infer(c, false); }

/* ---- reshape / reshape2 ------------------------------------------------- */
/* Reads an integer (int32 or int64) tensor into vals (run time). */
static int read_int_tensor(oar_infer_ctx_t *c, const char *slot, int i, int64_t *vals, int max, int *n)
{
    const oar_tensor_t *t = oar_ic_in_tensor(c, slot, i);
    const char *name = nm(oar_ic_in_name(c, slot, i));
    if (!t || !oar_tensor_has_data(t))
        return oar_ic_error(c, OAR_ERR_NOT_FOUND, "input %s '%s' has no value", slot, name);
    if (t->dtype != OAR_INT32 && t->dtype != OAR_INT64)
        return oar_ic_error(c, OAR_ERR_DTYPE, "input %s '%s' has dtype %s, expected int32 or int64",
                            slot, name, nm(oar_dtype_name(t->dtype)));
    int64_t cnt = oar_tensor_numel_of(t);
    if (cnt > max)
        return oar_ic_error(c, OAR_ERR_SHAPE, "input %s '%s' has %lld values; at most %d dims are supported",
                            slot, name, (long long)cnt, max);
    for (int64_t j = 0; j < cnt; j++)
        vals[j] = t->dtype == OAR_INT32 ? ((const int32_t *)t->buf->data)[j]
                                        : ((const int64_t *)t->buf->data)[j];
    *n = (int)cnt;
    return OAR_OK;
}

/* The requested shape before the 0/-1 rules: ShapeTensor (one value per
 * tensor) over Shape over the attr at run time. At compile time a tensor-given
 * shape is unknown: its rank comes from the tensors, values from the attr
 * when it has that rank (a hint, as Fluid reads it), else -1. */
static int reshape_request(oar_infer_ctx_t *c, int64_t *s, int *n, bool *hint_only)
{
    const oar_reshape_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const int na = a->shape.n;
    const int32_t *attr = a->shape.v;
    int nst = oar_ic_in_count(c, "ShapeTensor"), nsh = oar_ic_in_count(c, "Shape");
    *hint_only = false;
    if (nst > 0 || nsh > 0) {
        if (oar_ic_runtime(c)) {
            if (nst > 0) {
                if (nst > OAR_MAX_DIMS)
                    return oar_ic_error(c, OAR_ERR_SHAPE, "ShapeTensor has %d tensors; at most %d dims",
                                        nst, OAR_MAX_DIMS);
                for (int i = 0; i < nst; i++) {
                    int k;
                    OAR_TRY(read_int_tensor(c, "ShapeTensor", i, &s[i], 1, &k));
                    if (k != 1)
                        return oar_ic_error(c, OAR_ERR_SHAPE, "ShapeTensor[%d] '%s' must hold one value, has %d",
                                            i, nm(oar_ic_in_name(c, "ShapeTensor", i)), k);
                }
                *n = nst;
                return OAR_OK;
            }
            return read_int_tensor(c, "Shape", 0, s, OAR_MAX_DIMS, n);
        }
        int rank = nst;
        if (nst == 0) {
            int sd;
            const int64_t *d = oar_ic_in_dims(c, "Shape", 0, &sd);
            if (!d) return OAR_ERR_SHAPE;
            if (sd != 1 || d[0] < 0) {
                char b[64];
                return oar_ic_error(c, OAR_ERR_SHAPE, "input Shape '%s' has shape %s; it must be 1-D with "
                                    "a known length", nm(oar_ic_in_name(c, "Shape", 0)),
                                    oar_shape_str(d, sd, b, sizeof b));
            }
            if (d[0] > OAR_MAX_DIMS)
                return oar_ic_error(c, OAR_ERR_SHAPE, "input Shape has %lld values; at most %d dims",
                                    (long long)d[0], OAR_MAX_DIMS);
            rank = (int)d[0];
        }
        for (int i = 0; i < rank; i++) s[i] = (na == rank && attr[i] >= 0) ? attr[i] : -1;
        *n = rank;
        *hint_only = true;
        return OAR_OK;
    }
    if (na == 0)
        return oar_ic_error(c, OAR_ERR_INVALID, "attr shape is empty and no Shape/ShapeTensor input is given");
    if (na > OAR_MAX_DIMS)
        return oar_ic_error(c, OAR_ERR_SHAPE, "attr shape has %d dims, at most %d supported", na, OAR_MAX_DIMS);
    for (int i = 0; i < na; i++) s[i] = attr[i];
    *n = na;
    return OAR_OK;
}

/* Fluid's rules: 0 copies X's dim at that index, one -1 is inferred from
 * the element count, everything else is taken as is and must match X's
 * element count. At compile time an unknown (-1) X dim copied by a 0 cancels
 * out (reshape [-1, 2, 3] to [0, -1] gives [-1, 6]); any other unknown
 * leaves the -1 dimension unknown. */
static int reshape_apply(oar_infer_ctx_t *c, const int64_t *x, int nx, const int64_t *s, int n,
                         bool hint_only, int64_t *out)
{
    char bx[160], bo[160];
    int unk = -1, copied_unknown = 0;
    int64_t known = 1;
    bool known_ok = true;
    for (int i = 0; i < n; i++) {
        int64_t v = s[i];
        if (v == -1 && hint_only) { out[i] = -1; known_ok = false; continue; }
        if (v == -1) {
            if (unk >= 0)
                return oar_ic_error(c, OAR_ERR_SHAPE, "shape[%d] and shape[%d] are both -1; only one "
                                    "dimension can be inferred", unk, i);
            unk = i;
            out[i] = -1;
            continue;
        }
        if (v == 0) {
            if (i >= nx)
                return oar_ic_error(c, OAR_ERR_SHAPE, "shape[%d] = 0 copies dimension %d of X '%s', but X has "
                                    "shape %s", i, i, nm(oar_ic_in_name(c, "X", 0)),
                                    oar_shape_str(x, nx, bx, sizeof bx));
            v = x[i];
            if (v < 0) { out[i] = -1; copied_unknown++; continue; }
        } else if (v < 0) {
            return oar_ic_error(c, OAR_ERR_SHAPE, "shape[%d] = %lld is invalid: a dimension is positive, "
                                "0 (copy X's) or -1 (inferred)", i, (long long)v);
        }
        out[i] = v;
        if (oar_mul_checked(known, v, &known) != OAR_OK)
            return oar_ic_error(c, OAR_ERR_SHAPE, "requested shape overflows int64");
    }
    int x_unknown = 0;
    int64_t xn = 1;
    for (int i = 0; i < nx; i++) {
        if (x[i] < 0) { x_unknown++; continue; }
        if (oar_mul_checked(xn, x[i], &xn) != OAR_OK) return OAR_ERR_SHAPE;
    }
    /* compare what is known on both sides once the copied unknowns cancel */
    if (!known_ok || x_unknown != copied_unknown) return OAR_OK;
    const char *what = x_unknown ? " (known part)" : "";
    if (unk >= 0) {
        if (known == 0 || xn % known != 0)
            return oar_ic_error(c, OAR_ERR_SHAPE, "cannot reshape X '%s' of shape %s (%lld elements%s) to %s: "
                                "the -1 dimension cannot be inferred", nm(oar_ic_in_name(c, "X", 0)),
                                oar_shape_str(x, nx, bx, sizeof bx), (long long)xn, what,
                                oar_shape_str(s, n, bo, sizeof bo));
        out[unk] = xn / known;
    } else if (known != xn) {
        return oar_ic_error(c, OAR_ERR_SHAPE, "cannot reshape X '%s' of shape %s (%lld elements%s) to %s "
                            "(%lld elements)", nm(oar_ic_in_name(c, "X", 0)), oar_shape_str(x, nx, bx, sizeof bx),
                            (long long)xn, what, oar_shape_str(out, n, bo, sizeof bo), (long long)known);
    }
    return OAR_OK;
}

static int reshape_infer(oar_infer_ctx_t *c, bool v2)
{
    int64_t x[OAR_MAX_DIMS], s[OAR_MAX_DIMS], out[OAR_MAX_DIMS];
    int nx, n;
    bool hint;
    OAR_TRY(in_dims(c, "X", 0, x, &nx));
    OAR_TRY(reshape_request(c, s, &n, &hint));
    OAR_TRY(reshape_apply(c, x, nx, s, n, hint, out));
    OAR_TRY(oar_ic_set_out(c, "Out", 0, out, n, oar_ic_in_dtype(c, "X", 0)));
    OAR_TRY(lod_if_rows_kept(c, "X", x, nx, "Out", out, n));
    return v2 ? set_xshape(c, x, nx) : OAR_OK;
}

VIEW_INFERS(reshape)

/* ---- squeeze / squeeze2 ------------------------------------------------- */
/* Fluid 1.8: no axes squeezes every size-1 dim; listed axes are squeezed
 * when their size is 1 (or unknown at compile time) and kept otherwise. A
 * result of rank 0 is [1], as reductions give. */
static int squeeze_infer(oar_infer_ctx_t *c, bool v2)
{
    int64_t x[OAR_MAX_DIMS], out[OAR_MAX_DIMS];
    int nx, no = 0;
    OAR_TRY(in_dims(c, "X", 0, x, &nx));
    const oar_squeeze_attrs_t *at = oar_ic_attrs(c);
    if (!at) return OAR_ERR_INVALID;
    const int na = at->axes.n;
    const int32_t *axes = at->axes.v;
    bool drop[OAR_MAX_DIMS] = {false};
    bool rt = oar_ic_runtime(c);
    if (na == 0)
        for (int i = 0; i < nx; i++) drop[i] = x[i] == 1;
    for (int j = 0; j < na; j++) {
        int a = axes[j] < 0 ? axes[j] + nx : axes[j];
        if (a < 0 || a >= nx)
            return oar_ic_error(c, OAR_ERR_RANGE, "attr axes[%d] = %d is out of range for X '%s' of rank %d "
                                "(valid: %d..%d)", j, (int)axes[j], nm(oar_ic_in_name(c, "X", 0)), nx,
                                -nx, nx - 1);
        if (x[a] == 1 || (!rt && x[a] < 0)) drop[a] = true;
    }
    for (int i = 0; i < nx; i++)
        if (!drop[i]) out[no++] = x[i];
    if (no == 0) out[no++] = 1;
    OAR_TRY(oar_ic_set_out(c, "Out", 0, out, no, oar_ic_in_dtype(c, "X", 0)));
    OAR_TRY(lod_if_rows_kept(c, "X", x, nx, "Out", out, no));
    return v2 ? set_xshape(c, x, nx) : OAR_OK;
}

VIEW_INFERS(squeeze)

/* ---- unsqueeze / unsqueeze2 --------------------------------------------- */
/* Each axis, in order, inserts a 1 into the shape built so far; negative
 * axes count from the end of that shape (-1 appends). */
static int unsqueeze_infer(oar_infer_ctx_t *c, bool v2)
{
    int64_t x[OAR_MAX_DIMS], out[OAR_MAX_DIMS];
    int nx, na = 0;
    OAR_TRY(in_dims(c, "X", 0, x, &nx));
    int64_t axes[OAR_MAX_DIMS];
    bool known;
    /* unsqueeze2: AxesTensor / AxesTensorList override attr axes */
    const oar_squeeze_attrs_t *at = oar_ic_attrs(c);
    if (!at) return OAR_ERR_INVALID;
    OAR_TRY(int_list(c, "AxesTensor", "AxesTensorList", &at->axes, "axes", axes, OAR_MAX_DIMS, &na, &known));
    if (!known) {
        if (na < 0 || nx + na > OAR_MAX_DIMS)
            return oar_ic_error(c, OAR_ERR_SHAPE, "the number of axes in AxesTensor must be known");
        for (int i = 0; i < nx + na; i++) out[i] = -1;
        OAR_TRY(oar_ic_set_out(c, "Out", 0, out, nx + na, oar_ic_in_dtype(c, "X", 0)));
        return v2 ? set_xshape(c, x, nx) : OAR_OK;
    }
    if (nx + na > OAR_MAX_DIMS)
        return oar_ic_error(c, OAR_ERR_SHAPE, "X '%s' of rank %d with %d axes gives rank %d > %d",
                            nm(oar_ic_in_name(c, "X", 0)), nx, na, nx + na, OAR_MAX_DIMS);
    int cur = nx;
    memcpy(out, x, sizeof(int64_t) * (size_t)nx);
    for (int j = 0; j < na; j++) {
        int a = (int)(axes[j] < 0 ? axes[j] + cur + 1 : axes[j]);
        if (a < 0 || a > cur)
            return oar_ic_error(c, OAR_ERR_RANGE, "attr axes[%d] = %d is out of range for a shape of rank %d "
                                "(valid: %d..%d)", j, (int)axes[j], cur, -cur - 1, cur);
        memmove(out + a + 1, out + a, sizeof(int64_t) * (size_t)(cur - a));
        out[a] = 1;
        cur++;
    }
    OAR_TRY(oar_ic_set_out(c, "Out", 0, out, cur, oar_ic_in_dtype(c, "X", 0)));
    OAR_TRY(lod_if_rows_kept(c, "X", x, nx, "Out", out, cur));
    return v2 ? set_xshape(c, x, nx) : OAR_OK;
}

VIEW_INFERS(unsqueeze)

/* ---- flatten / flatten2 ------------------------------------------------- */
/* [prod(dims[:axis]), prod(dims[axis:])]; an unknown dim makes its side -1 */
static int flatten_infer(oar_infer_ctx_t *c, bool v2)
{
    int64_t x[OAR_MAX_DIMS], out[2] = {1, 1};
    int nx;
    OAR_TRY(in_dims(c, "X", 0, x, &nx));
    const oar_flatten_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const int axis = a->axis;
    if (axis < 0 || axis > nx)
        return oar_ic_error(c, OAR_ERR_RANGE, "attr axis = %d is out of range for X '%s' of rank %d (valid: 0..%d)",
                            axis, nm(oar_ic_in_name(c, "X", 0)), nx, nx);
    for (int i = 0; i < nx; i++) {
        int64_t *o = &out[i < axis ? 0 : 1];
        if (*o < 0) continue;
        if (x[i] < 0) *o = -1;
        else if (oar_mul_checked(*o, x[i], o) != OAR_OK) return OAR_ERR_SHAPE;
    }
    OAR_TRY(oar_ic_set_out(c, "Out", 0, out, 2, oar_ic_in_dtype(c, "X", 0)));
    OAR_TRY(lod_if_rows_kept(c, "X", x, nx, "Out", out, 2));
    return v2 ? set_xshape(c, x, nx) : OAR_OK;
}

VIEW_INFERS(flatten)

/* ---- transpose / transpose2 --------------------------------------------- */
/* attr axis as a validated permutation of rank nx (negative entries count
 * from the end) */
static int transpose_perm(oar_infer_ctx_t *c, int nx, int *perm, const char *what)
{
    const oar_transpose_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const int n = a->axis.n;
    const int32_t *axis = a->axis.v;
    if (n != nx)
        return oar_ic_error(c, OAR_ERR_SHAPE, "attr axis has %d entries but %s has rank %d", n, what, nx);
    bool seen[OAR_MAX_DIMS] = {false};
    for (int i = 0; i < n; i++) {
        int a = axis[i] < 0 ? axis[i] + n : axis[i];
        if (a < 0 || a >= n)
            return oar_ic_error(c, OAR_ERR_RANGE, "attr axis[%d] = %d is out of range for rank %d", i,
                                (int)axis[i], n);
        if (seen[a])
            return oar_ic_error(c, OAR_ERR_INVALID, "attr axis is not a permutation: axis %d appears twice", a);
        seen[a] = true;
        perm[i] = a;
    }
    return OAR_OK;
}

static int transpose_infer(oar_infer_ctx_t *c, bool v2)
{
    int64_t x[OAR_MAX_DIMS], out[OAR_MAX_DIMS];
    int nx, perm[OAR_MAX_DIMS];
    OAR_TRY(in_dims(c, "X", 0, x, &nx));
    OAR_TRY(transpose_perm(c, nx, perm, "input X"));
    for (int i = 0; i < nx; i++) out[i] = x[perm[i]];
    OAR_TRY(oar_ic_set_out(c, "Out", 0, out, nx, oar_ic_in_dtype(c, "X", 0)));
    return v2 ? set_xshape(c, x, nx) : OAR_OK;
}

/* X@GRAD is Out@GRAD permuted back; its dims must be X's */
static int transpose_grad_infer(oar_infer_ctx_t *c, bool v2)
{
    if (!out_wanted(c, "X@GRAD", 0)) return OAR_OK;
    int64_t x[OAR_MAX_DIMS], g[OAR_MAX_DIMS];
    int nx, ng, perm[OAR_MAX_DIMS];
    if (v2) OAR_TRY(xshape_dims(c, x, &nx));
    else OAR_TRY(in_dims(c, "X", 0, x, &nx));
    OAR_TRY(in_dims(c, "Out@GRAD", 0, g, &ng));
    OAR_TRY(transpose_perm(c, ng, perm, "Out@GRAD"));
    bool ok = ng == nx;
    for (int i = 0; ok && i < nx; i++) ok = oar_dim_eq(g[i], x[perm[i]]);
    if (!ok) {
        char bx[160], bg[160];
        return oar_ic_error(c, OAR_ERR_SHAPE, "Out@GRAD '%s' has shape %s, which is not X's shape %s transposed",
                            nm(oar_ic_in_name(c, "Out@GRAD", 0)), oar_shape_str(g, ng, bg, sizeof bg),
                            oar_shape_str(x, nx, bx, sizeof bx));
    }
    return oar_ic_set_out(c, "X@GRAD", 0, x, nx, oar_ic_in_dtype(c, "Out@GRAD", 0));
}
static int transpose_grad_infer1(oar_infer_ctx_t *c) { return transpose_grad_infer(c, false); }
static int transpose_grad_infer2(oar_infer_ctx_t *c) { return transpose_grad_infer(c, true); }
static int transpose_infer1(oar_infer_ctx_t *c) { return transpose_infer(c, false); }
static int transpose_infer2(oar_infer_ctx_t *c) { return transpose_infer(c, true); }

/* ---- concat ------------------------------------------------------------- */
/* the axis attr against rank nd; for stack the output has rank nd + 1 */
static int norm_axis(oar_infer_ctx_t *c, int nd, int *axis, const char *what)
{
    const oar_axis_attrs_t *at = oar_ic_attrs(c);
    if (!at) return OAR_ERR_INVALID;
    double av = at->axis;
    bool known = true;
    /* concat, split: AxisTensor replaces the decoded attr */
    if (oar_ic_in_present(c, "AxisTensor")) OAR_TRY(oar_ic_scalar(c, "AxisTensor", "axis", &av, &known));
    int a = (int)av;
    int r = a < 0 ? a + nd : a;
    if (nd == 0 || r < 0 || r >= nd)
        return oar_ic_error(c, OAR_ERR_RANGE, "attr axis = %d is out of range for %s of rank %d (valid: %d..%d)",
                            a, what, nd, -nd, nd - 1);
    *axis = r;
    return OAR_OK;
}

/* same rank and dtype, equal dims off `axis` (stack: everywhere when
 * axis < 0); out gets the known dims and the summed axis */
static int check_same(oar_infer_ctx_t *c, int n, int axis, int64_t *out, int *nd, int *dtype)
{
    int64_t first[OAR_MAX_DIMS];
    int n0;
    OAR_TRY(in_dims(c, "X", 0, first, &n0));
    memcpy(out, first, sizeof first);
    *nd = n0;
    *dtype = oar_ic_in_dtype(c, "X", 0);
    for (int i = 1; i < n; i++) {
        int ni;
        const int64_t *d = oar_ic_in_dims(c, "X", i, &ni);
        if (!d) return OAR_ERR_SHAPE;
        char b0[160], bi[160];
        bool ok = ni == n0;
        for (int j = 0; ok && j < n0; j++) ok = j == axis || oar_dim_eq(d[j], first[j]);
        if (!ok)
            return oar_ic_error(c, OAR_ERR_SHAPE, "input X[%d] '%s' has shape %s but X[0] '%s' has shape %s; they "
                                "must agree %s", i, nm(oar_ic_in_name(c, "X", i)), oar_shape_str(d, ni, bi, sizeof bi),
                                nm(oar_ic_in_name(c, "X", 0)), oar_shape_str(first, n0, b0, sizeof b0),
                                axis >= 0 ? "off the concat axis" : "everywhere");
        int dt = oar_ic_in_dtype(c, "X", i);
        if (dt >= 0 && *dtype >= 0 && dt != *dtype)
            return oar_ic_error(c, OAR_ERR_DTYPE, "input X[%d] '%s' has dtype %s but X[0] has %s", i,
                                nm(oar_ic_in_name(c, "X", i)), nm(oar_dtype_name(dt)), nm(oar_dtype_name(*dtype)));
        for (int j = 0; j < n0; j++) {
            if (j == axis) {
                if (out[j] >= 0 && d[j] >= 0) {
                    if (oar_mul_checked(1, out[j] + d[j], &out[j]) != OAR_OK) return OAR_ERR_SHAPE;
                } else {
                    out[j] = -1;
                }
            } else if (out[j] < 0) {
                out[j] = d[j];
            }
        }
    }
    return OAR_OK;
}

/* compile time with AxisTensor: every output of X[0]'s rank, dims unknown */
static int unknown_axis_out(oar_infer_ctx_t *c, int nd)
{
    int64_t d[OAR_MAX_DIMS];
    for (int i = 0; i < nd; i++) d[i] = -1;
    for (int i = 0; i < oar_ic_out_count(c, "Out"); i++)
        OAR_TRY(oar_ic_set_out(c, "Out", i, d, nd, oar_ic_in_dtype(c, "X", 0)));
    return OAR_OK;
}

/* LoD: along axis 0 the kernel joins the inputs' LoDs (rows are
 * concatenated); along other axes Out keeps X[0]'s rows and LoD. */
static int concat_infer(oar_infer_ctx_t *c)
{
    int n = oar_ic_in_count(c, "X");
    if (n < 1) return oar_ic_error(c, OAR_ERR_INVALID, "input X has no variables");
    int nd0;
    if (!oar_ic_in_dims(c, "X", 0, &nd0)) return OAR_ERR_SHAPE;
    int axis = 0, nd = 0, dtype = -1;
    if (!oar_ic_runtime(c) && oar_ic_in_present(c, "AxisTensor")) return unknown_axis_out(c, nd0);
    OAR_TRY(norm_axis(c, nd0, &axis, "input X[0]"));
    int64_t out[OAR_MAX_DIMS];
    OAR_TRY(check_same(c, n, axis, out, &nd, &dtype));
    OAR_TRY(oar_ic_set_out(c, "Out", 0, out, nd, dtype));
    if (axis == 0 && oar_ic_runtime(c)) return OAR_OK;
    return oar_ic_share_lod(c, "X", 0, "Out", 0);
}

/* each X@GRAD[i] is X[i]'s slice of Out@GRAD */
static int concat_grad_infer(oar_infer_ctx_t *c)
{
    int ng;
    if (!oar_ic_in_dims(c, "Out@GRAD", 0, &ng)) return OAR_ERR_SHAPE;
    int n = oar_ic_in_count(c, "X");
    if (oar_ic_out_count(c, "X@GRAD") != n)
        return oar_ic_error(c, OAR_ERR_INVALID, "X@GRAD has %d variables but X has %d",
                            oar_ic_out_count(c, "X@GRAD"), n);
    return oar_infer_grad_like_inputs(c);
}

/* X is read for its shapes only; Out is not needed */
static int concat_grad_maker(oar_grad_ctx_t *g)
{
    oar_op_desc_t *op = oar_gc_new_op(g, "concat_grad");
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "X"));
    if (oar_op_desc_input_count(oar_gc_fwd(g), "AxisTensor") > 0) OAR_TRY(oar_gc_in(g, op, "AxisTensor"));
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    return oar_gc_in_grad(g, op, "X");
}

/* ---- split -------------------------------------------------------------- */
/* sizes along the axis: `num` equal parts, or `sections` with at most one
 * -1 taking the rest. An unknown axis dim leaves what depends on it -1. */
static int split_sizes(oar_infer_ctx_t *c, int64_t dim, int nout, int64_t *sz)
{
    const oar_axis_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int num = a->num, ns = 0;
    int64_t sec[256];
    bool known;
    OAR_TRY(int_list(c, NULL, "SectionsTensorList", &a->sections, "sections", sec, 256, &ns, &known));
    if (!known) {
        if (nout != ns)
            return oar_ic_error(c, OAR_ERR_INVALID, "output Out has %d variables but SectionsTensorList %d", nout, ns);
        for (int i = 0; i < ns; i++) sz[i] = -1;
        return OAR_OK;
    }
    if (num < 0) return oar_ic_error(c, OAR_ERR_INVALID, "attr num = %d must be >= 0", num);
    if (num > 0 && ns > 0)
        return oar_ic_error(c, OAR_ERR_INVALID, "attrs num (%d) and sections (%d entries) are both set; set one",
                            num, ns);
    if (num == 0 && ns == 0)
        return oar_ic_error(c, OAR_ERR_INVALID, "neither attr num nor attr sections is set");
    int parts = num > 0 ? num : ns;
    if (nout != parts)
        return oar_ic_error(c, OAR_ERR_INVALID, "output Out has %d variables but the split makes %d parts",
                            nout, parts);
    if (num > 0) {
        if (dim >= 0 && dim % num != 0)
            return oar_ic_error(c, OAR_ERR_SHAPE, "input X '%s' has size %lld along the split axis, not "
                                "divisible by num = %d", nm(oar_ic_in_name(c, "X", 0)), (long long)dim, num);
        for (int i = 0; i < num; i++) sz[i] = dim >= 0 ? dim / num : -1;
        return OAR_OK;
    }
    int unk = -1;
    int64_t sum = 0;
    for (int i = 0; i < ns; i++) {
        if (sec[i] == -1) {
            if (unk >= 0)
                return oar_ic_error(c, OAR_ERR_INVALID, "attr sections[%d] and sections[%d] are both -1; at "
                                    "most one size can be inferred", unk, i);
            unk = i;
        } else if (sec[i] < 0) {
            return oar_ic_error(c, OAR_ERR_INVALID, "attr sections[%d] = %lld must be >= 0 or -1", i, (long long)sec[i]);
        } else {
            sum += sec[i];
        }
        sz[i] = sec[i];
    }
    if (dim < 0) return OAR_OK;
    if ((unk >= 0 && sum > dim) || (unk < 0 && sum != dim))
        return oar_ic_error(c, OAR_ERR_SHAPE, "attr sections sum to %lld but input X '%s' has size %lld along "
                            "the split axis", (long long)sum, nm(oar_ic_in_name(c, "X", 0)), (long long)dim);
    if (unk >= 0) sz[unk] = dim - sum;
    return OAR_OK;
}

static int split_infer(oar_infer_ctx_t *c)
{
    int64_t x[OAR_MAX_DIMS];
    int nx = 0, axis = 0;
    OAR_TRY(in_dims(c, "X", 0, x, &nx));
    if (!oar_ic_runtime(c) && oar_ic_in_present(c, "AxisTensor")) return unknown_axis_out(c, nx);
    OAR_TRY(norm_axis(c, nx, &axis, "input X"));
    int nout = oar_ic_out_count(c, "Out");
    if (nout < 1) return oar_ic_error(c, OAR_ERR_INVALID, "output Out has no variables");
    int64_t stack_sz[16];
    int64_t *sz = nout <= 16 ? stack_sz : oar_xmalloc(sizeof(int64_t) * (size_t)nout);
    if (!sz) return OAR_ERR_NOMEM;
    int rc = split_sizes(c, x[axis], nout, sz);
    int dt = oar_ic_in_dtype(c, "X", 0);
    for (int i = 0; i < nout && rc == OAR_OK; i++) {
        int64_t d[OAR_MAX_DIMS];
        memcpy(d, x, sizeof d);
        d[axis] = sz[i];
        rc = oar_ic_set_out(c, "Out", i, d, nx, dt);
        /* rows are split along axis 0, so the LoD only survives other axes */
        if (rc == OAR_OK && axis != 0) rc = oar_ic_share_lod(c, "X", 0, "Out", i);
    }
    if (sz != stack_sz) free(sz);
    return rc;
}

/* Fluid's split grad is a concat of the Out grads into X@GRAD (the pass
 * fills absent ones with zeros). The grad names come from the context's
 * slot helpers on a scratch op, then move to concat's X/Out slots. */
static int move_slot(oar_op_desc_t *from, const char *fslot, bool fin, oar_op_desc_t *to, const char *tslot,
                     bool tin)
{
    int n = fin ? oar_op_desc_input_count(from, fslot) : oar_op_desc_output_count(from, fslot);
    if (n < 0) return OAR_OK;
    const char *stack_names[16];
    const char **names = n <= 16 ? stack_names : oar_xmalloc(sizeof(char *) * (size_t)n);
    if (!names) return OAR_ERR_NOMEM;
    for (int i = 0; i < n; i++)
        names[i] = fin ? oar_op_desc_input_arg(from, fslot, i) : oar_op_desc_output_arg(from, fslot, i);
    int rc = tin ? oar_op_desc_set_input(to, tslot, names, n) : oar_op_desc_set_output(to, tslot, names, n);
    if (names != stack_names) free(names);
    return rc;
}

static int split_grad_maker(oar_grad_ctx_t *g)
{
    oar_op_desc_t *scratch;
    OAR_TRY(oar_op_desc_new("split_grad", &scratch));
    int rc = oar_gc_out_grad(g, scratch, "Out");
    if (rc == OAR_OK) rc = oar_gc_in_grad(g, scratch, "X");
    oar_op_desc_t *op = rc == OAR_OK ? oar_gc_new_op(g, "concat") : NULL;
    if (rc == OAR_OK && !op) rc = OAR_ERR_NOMEM;
    if (rc == OAR_OK) rc = move_slot(scratch, "Out@GRAD", true, op, "X", true);
    if (rc == OAR_OK) rc = move_slot(scratch, "X@GRAD", false, op, "Out", false);
    if (rc == OAR_OK && oar_op_desc_input_count(oar_gc_fwd(g), "AxisTensor") > 0) rc = oar_gc_in(g, op, "AxisTensor");
    /* the concat got split's attrs: num/sections are not concat's */
    if (rc == OAR_OK && oar_op_desc_attr_type(op, "num") >= 0) rc = oar_op_desc_remove_attr(op, "num");
    if (rc == OAR_OK && oar_op_desc_attr_type(op, "sections") >= 0) rc = oar_op_desc_remove_attr(op, "sections");
    oar_op_desc_free(scratch);
    return rc;
}

/* ---- stack -------------------------------------------------------------- */
/* Y inserts a dim of size len(X) at axis (-(rank+1)..rank) */
static int stack_infer(oar_infer_ctx_t *c)
{
    int n = oar_ic_in_count(c, "X");
    if (n < 1) return oar_ic_error(c, OAR_ERR_INVALID, "input X has no variables");
    int64_t x[OAR_MAX_DIMS], y[OAR_MAX_DIMS];
    int nx = 0, dtype = -1, axis = 0;
    OAR_TRY(check_same(c, n, -1, x, &nx, &dtype));
    if (nx + 1 > OAR_MAX_DIMS)
        return oar_ic_error(c, OAR_ERR_SHAPE, "inputs of rank %d stack to rank %d > %d", nx, nx + 1, OAR_MAX_DIMS);
    OAR_TRY(norm_axis(c, nx + 1, &axis, "output Y"));
    for (int i = 0, j = 0; i <= nx; i++) y[i] = i == axis ? n : x[j++];
    return oar_ic_set_out(c, "Y", 0, y, nx + 1, dtype);
}

/* X@GRAD[i] is slice i of Y@GRAD along axis */
static int stack_grad_infer(oar_infer_ctx_t *c)
{
    int ng = 0, axis = 0;
    const int64_t *g = oar_ic_in_dims(c, "Y@GRAD", 0, &ng);
    if (!g) return OAR_ERR_SHAPE;
    OAR_TRY(norm_axis(c, ng, &axis, "Y@GRAD"));
    int n = oar_ic_in_count(c, "X");
    if (oar_ic_out_count(c, "X@GRAD") != n || (g[axis] >= 0 && g[axis] != n))
        return oar_ic_error(c, OAR_ERR_SHAPE, "Y@GRAD has %lld entries along axis %d, X has %d variables and "
                            "X@GRAD %d", (long long)g[axis], axis, n, oar_ic_out_count(c, "X@GRAD"));
    return oar_infer_grad_like_inputs(c);
}

static int stack_grad_maker(oar_grad_ctx_t *g)
{
    oar_op_desc_t *op = oar_gc_new_op(g, "stack_grad");
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "X"));
    OAR_TRY(oar_gc_out_grad(g, op, "Y"));
    return oar_gc_in_grad(g, op, "X");
}

#define OAR_OPS_DEFINE
#include "ops/shape_ops.h"   /* the tables, decoders and registrations */
