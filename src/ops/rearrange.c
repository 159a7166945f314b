/*
 * rearrange.c — inference and grad makers of unstack, expand_as, flip,
 * roll, tril_triu, trace, kron, diag and eye (declared in rearrange.ops; CPU kernels in
 * kernels/cpu/rearrange.c).
 */
#include <stdio.h>
#include <string.h>
#include "op.h"
#include "infer_util.h"   /* nm, out_wanted, copy_dims, grad_name */
#include "ops/rearrange.h"   /* generated from rearrange.ops */

/* ---- unstack ------------------------------------------------------------ */
static int unstack_infer(oar_infer_ctx_t *c)
{
    const oar_unstack_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int64_t x[OAR_MAX_DIMS], y[OAR_MAX_DIMS];
    int nx;
    OAR_TRY(copy_dims(c, "X", x, &nx));
    const char *xn = nm(oar_ic_in_name(c, "X", 0));
    int ax = a->axis < 0 ? a->axis + nx : a->axis;
    if (nx < 1 || ax < 0 || ax >= nx)
        return oar_ic_error(c, OAR_ERR_RANGE, "axis %d is out of range for X '%s' of rank %d", a->axis, xn, nx);
    if (x[ax] >= 0 && x[ax] != a->num)
        return oar_ic_error(c, OAR_ERR_SHAPE, "num %d differs from dim %d (%lld) of X '%s'", a->num, ax,
                            (long long)x[ax], xn);
    if (oar_ic_out_count(c, "Y") != a->num)
        return oar_ic_error(c, OAR_ERR_SHAPE, "Y has %d outputs, num is %d", oar_ic_out_count(c, "Y"), a->num);
    int n = 0;
    for (int i = 0; i < nx; i++)
        if (i != ax) y[n++] = x[i];
    for (int i = 0; i < a->num; i++)
        if (out_wanted(c, "Y", i)) OAR_TRY(oar_ic_set_out(c, "Y", i, y, n, oar_ic_in_dtype(c, "X", 0)));
    return OAR_OK;
}

static int unstack_grad_infer(oar_infer_ctx_t *c)
{
    const oar_unstack_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    if (!out_wanted(c, "X@GRAD", 0)) return OAR_OK;
    int ny = oar_ic_in_count(c, "Y@GRAD"), nd;
    const int64_t *d0 = oar_ic_in_dims(c, "Y@GRAD", 0, &nd);
    if (!d0) return OAR_ERR_SHAPE;
    if (nd + 1 > OAR_MAX_DIMS) return oar_ic_error(c, OAR_ERR_SHAPE, "X@GRAD would exceed %d dims", OAR_MAX_DIMS);
    int ax = a->axis < 0 ? a->axis + nd + 1 : a->axis;
    if (ax < 0 || ax > nd) return oar_ic_error(c, OAR_ERR_RANGE, "axis %d is out of range", a->axis);
    int64_t x[OAR_MAX_DIMS];
    int n = 0;
    for (int i = 0; i <= nd; i++) x[n++] = i == ax ? ny : d0[i - (i > ax)];
    return oar_ic_set_out(c, "X@GRAD", 0, x, n, oar_ic_in_dtype(c, "Y@GRAD", 0));
}

/* unstack_grad reads only the Y gradients (Fluid's UnStackGradOpMaker) */
static int unstack_grad_maker(oar_grad_ctx_t *g)
{
    oar_op_desc_t *op = oar_gc_new_grad_op(g);
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_out_grad(g, op, "Y"));
    return oar_gc_in_grad(g, op, "X");
}

/* ---- expand_as ---------------------------------------------------------- */
static int expand_as_infer(oar_infer_ctx_t *c)
{
    int64_t x[OAR_MAX_DIMS], t[OAR_MAX_DIMS];
    int nx, nt;
    OAR_TRY(copy_dims(c, "X", x, &nx));
    OAR_TRY(copy_dims(c, "target_tensor", t, &nt));
    char bx[128], bt[128];
    oar_shape_str(x, nx, bx, sizeof bx);
    oar_shape_str(t, nt, bt, sizeof bt);
    if (nx != nt)
        return oar_ic_error(c, OAR_ERR_SHAPE, "X '%s' %s and target_tensor '%s' %s must have one rank",
                            nm(oar_ic_in_name(c, "X", 0)), bx, nm(oar_ic_in_name(c, "target_tensor", 0)), bt);
    for (int i = 0; i < nx; i++)
        if (x[i] > 0 && t[i] >= 0 && t[i] % x[i] != 0)
            return oar_ic_error(c, OAR_ERR_SHAPE, "target_tensor '%s' %s: dim %d is not a multiple of X '%s' %s's",
                                nm(oar_ic_in_name(c, "target_tensor", 0)), bt, i, nm(oar_ic_in_name(c, "X", 0)), bx);
    return oar_ic_set_out(c, "Out", 0, t, nt, oar_ic_in_dtype(c, "X", 0));
}

/* ---- flip --------------------------------------------------------------- */
/* Fluid 1.8 names the dimensions dims, Paddle 2.x axis: axis is read when
 * dims is unset or empty; both non-empty must agree */
static void flip_finish(oar_decode_ctx_t *d, oar_flip_attrs_t *a)
{
    if (!oar_dec_has(d, "axis")) return;
    oar_ints_t ax = oar_dec_ints(d, "axis");
    if (a->dims.n == 0) {
        a->dims = ax;
        return;
    }
    if (ax.n > 0 && (ax.n != a->dims.n || memcmp(ax.v, a->dims.v, (size_t)ax.n * sizeof *ax.v) != 0))
        oar_dec_error(d, OAR_ERR_INVALID, "flip's attrs dims and axis (the same attr under Fluid 1.8's and Paddle "
                      "2.x's names) differ");
}

static int flip_infer(oar_infer_ctx_t *c)
{
    const oar_flip_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int nd;
    if (!oar_ic_in_dims(c, "X", 0, &nd)) return OAR_ERR_SHAPE;
    bool seen[OAR_MAX_DIMS] = {false};
    for (int i = 0; i < a->dims.n; i++) {
        int d = a->dims.v[i] < 0 ? a->dims.v[i] + nd : a->dims.v[i];
        if (d < 0 || d >= nd)
            return oar_ic_error(c, OAR_ERR_RANGE, "dims[%d] = %d is out of range for X '%s' of rank %d", i,
                                a->dims.v[i], nm(oar_ic_in_name(c, "X", 0)), nd);
        if (seen[d]) return oar_ic_error(c, OAR_ERR_INVALID, "dims names dimension %d twice", d);
        seen[d] = true;
    }
    return oar_infer_same_as(c, "X", "Out");
}

/* Fluid's flip grad is a flip: X <- Out@GRAD, Out -> X@GRAD */
static int flip_grad_maker(oar_grad_ctx_t *g)
{
    char gin[512], gout[512];
    OAR_TRY(grad_name(g, "X", false, gout, sizeof gout));
    if (strcmp(gout, OAR_EMPTY_VAR) == 0) return OAR_OK;
    OAR_TRY(grad_name(g, "Out", true, gin, sizeof gin));
    oar_op_desc_t *op = oar_gc_new_op(g, "flip");
    if (!op) return OAR_ERR_NOMEM;
    const char *i1[1] = {gin}, *o1[1] = {gout};
    OAR_TRY(oar_op_desc_set_input(op, "X", i1, 1));
    return oar_op_desc_set_output(op, "Out", o1, 1);
}

/* ---- roll --------------------------------------------------------------- */
/* dims (Fluid 1.8), or axis (Paddle 2.x) when dims is unset or empty; both
 * non-empty must agree */
static void roll_finish(oar_decode_ctx_t *d, oar_roll_attrs_t *a)
{
    if (!oar_dec_has(d, "axis")) return;
    oar_longs_t ax = oar_dec_longs(d, "axis");
    if (a->dims.n == 0) {
        a->dims = ax;
        return;
    }
    if (ax.n > 0 && (ax.n != a->dims.n || memcmp(ax.v, a->dims.v, (size_t)ax.n * sizeof *ax.v) != 0))
        oar_dec_error(d, OAR_ERR_INVALID, "roll's attrs dims and axis (the same attr under Fluid 1.8's and Paddle "
                      "2.x's names) differ");
}

static int roll_infer(oar_infer_ctx_t *c)
{
    const oar_roll_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int nd;
    if (!oar_ic_in_dims(c, "X", 0, &nd)) return OAR_ERR_SHAPE;
    if (a->dims.n == 0 ? a->shifts.n != 1 : a->shifts.n != a->dims.n)
        return oar_ic_error(c, OAR_ERR_INVALID, "shifts has %d values, dims %d: they must match (one shift "
                            "when dims is empty)", a->shifts.n, a->dims.n);
    for (int i = 0; i < a->dims.n; i++)
        if (a->dims.v[i] < -nd || a->dims.v[i] >= nd)
            return oar_ic_error(c, OAR_ERR_RANGE, "dims[%d] = %lld is out of range for X '%s' of rank %d", i,
                                (long long)a->dims.v[i], nm(oar_ic_in_name(c, "X", 0)), nd);
    return oar_infer_same_as(c, "X", "Out");
}

static int roll_grad_maker(oar_grad_ctx_t *g)
{
    oar_op_desc_t *op = oar_gc_new_grad_op(g);
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "X"));
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    return oar_gc_in_grad(g, op, "X");
}

/* ---- tril_triu ---------------------------------------------------------- */
static int tril_triu_infer(oar_infer_ctx_t *c)
{
    int nd;
    if (!oar_ic_in_dims(c, "X", 0, &nd)) return OAR_ERR_SHAPE;
    if (nd < 2)
        return oar_ic_error(c, OAR_ERR_SHAPE, "X '%s' has rank %d; it must be at least 2-D",
                            nm(oar_ic_in_name(c, "X", 0)), nd);
    return oar_infer_same_as(c, "X", "Out");
}

static int tril_triu_grad_infer(oar_infer_ctx_t *c)
{
    if (!out_wanted(c, "X@GRAD", 0)) return OAR_OK;
    int64_t d[OAR_MAX_DIMS];
    int nd;
    OAR_TRY(copy_dims(c, "Out@GRAD", d, &nd));
    return oar_ic_set_out(c, "X@GRAD", 0, d, nd, oar_ic_in_dtype(c, "Out@GRAD", 0));
}

static int tril_triu_grad_maker(oar_grad_ctx_t *g)
{
    oar_op_desc_t *op = oar_gc_new_grad_op(g);
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    return oar_gc_in_grad(g, op, "X");
}

/* ---- trace -------------------------------------------------------------- */
static int trace_infer(oar_infer_ctx_t *c)
{
    const oar_trace_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int64_t x[OAR_MAX_DIMS], out[OAR_MAX_DIMS];
    int nx;
    OAR_TRY(copy_dims(c, "Input", x, &nx));
    const char *xn = nm(oar_ic_in_name(c, "Input", 0));
    if (nx < 2) return oar_ic_error(c, OAR_ERR_SHAPE, "Input '%s' has rank %d; it must be at least 2-D", xn, nx);
    int a1 = a->axis1 < 0 ? a->axis1 + nx : a->axis1, a2 = a->axis2 < 0 ? a->axis2 + nx : a->axis2;
    if (a1 < 0 || a1 >= nx || a2 < 0 || a2 >= nx)
        return oar_ic_error(c, OAR_ERR_RANGE, "axis1 %d and axis2 %d must be dims of Input '%s' of rank %d",
                            a->axis1, a->axis2, xn, nx);
    if (a1 == a2) return oar_ic_error(c, OAR_ERR_INVALID, "axis1 and axis2 both name dim %d of Input '%s'", a1, xn);
    int n = 0;
    for (int i = 0; i < nx; i++)
        if (i != a1 && i != a2) out[n++] = x[i];
    if (n == 0) out[n++] = 1;
    return oar_ic_set_out(c, "Out", 0, out, n, oar_ic_in_dtype(c, "Input", 0));
}

/* ---- kron --------------------------------------------------------------- */
static int kron_infer(oar_infer_ctx_t *c)
{
    int64_t x[OAR_MAX_DIMS], y[OAR_MAX_DIMS], out[OAR_MAX_DIMS];
    int nx, ny;
    OAR_TRY(copy_dims(c, "X", x, &nx));
    OAR_TRY(copy_dims(c, "Y", y, &ny));
    int dx = oar_ic_in_dtype(c, "X", 0), dy = oar_ic_in_dtype(c, "Y", 0);
    if (dx >= 0 && dy >= 0 && dx != dy)
        return oar_ic_error(c, OAR_ERR_INVALID, "X '%s' is %s but Y '%s' is %s; they must have one dtype",
                            nm(oar_ic_in_name(c, "X", 0)), oar_dtype_name(dx), nm(oar_ic_in_name(c, "Y", 0)),
                            oar_dtype_name(dy));
    int r = nx > ny ? nx : ny;
    for (int i = 0; i < r; i++) {
        int64_t a = i - (r - nx) >= 0 ? x[i - (r - nx)] : 1, b = i - (r - ny) >= 0 ? y[i - (r - ny)] : 1;
        out[i] = (a < 0 || b < 0) ? -1 : a * b;
    }
    return oar_ic_set_out(c, "Out", 0, out, r, dx);
}

/* ---- diag --------------------------------------------------------------- */
static int diag_infer(oar_infer_ctx_t *c)
{
    int nd;
    const int64_t *d = oar_ic_in_dims(c, "Diagonal", 0, &nd);
    if (!d) return OAR_ERR_SHAPE;
    if (nd != 1)
        return oar_ic_error(c, OAR_ERR_SHAPE, "Diagonal '%s' has rank %d; it must be 1-D",
                            nm(oar_ic_in_name(c, "Diagonal", 0)), nd);
    int64_t out[2] = {d[0], d[0]};
    return oar_ic_set_out(c, "Out", 0, out, 2, oar_ic_in_dtype(c, "Diagonal", 0));
}

/* ---- eye ---------------------------------------------------------------- */
static int eye_infer(oar_infer_ctx_t *c)
{
    const oar_eye_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    if (a->num_columns < -1)
        return oar_ic_error(c, OAR_ERR_RANGE, "num_columns %lld must be >= 0 (or -1: num_rows)",
                            (long long)a->num_columns);
    if (a->dtype != OAR_FP32 && a->dtype != OAR_FP64 && a->dtype != OAR_INT32 && a->dtype != OAR_INT64)
        return oar_ic_error(c, OAR_ERR_UNSUPPORTED, "dtype %d: eye makes float32, float64, int32 or int64", a->dtype);
    int64_t out[2] = {a->num_rows, a->num_columns < 0 ? a->num_rows : a->num_columns};
    return oar_ic_set_out(c, "Out", 0, out, 2, a->dtype);
}

#define OAR_OPS_DEFINE
#include "ops/rearrange.h"   /* the tables, decoders and registrations */
