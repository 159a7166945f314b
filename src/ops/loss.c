/*
 * loss.c — inference and grad makers of the classification losses (Fluid
 * 1.x): cross_entropy, softmax_with_cross_entropy (fused, with the fused
 * grad) and sigmoid_cross_entropy_with_logits, with grads; the ops
 * themselves (slots, attributes, docs) are declared in loss.ops. Kernels in
 * kernels/cpu/loss.c.
 *
 * Hard labels are int64 class ids, one per row (the label has the shape of
 * the input with the class axis of size 1); soft labels are distributions
 * with the input's shape and dtype. Rows whose label is ignore_index get
 * loss 0 and no gradient; other labels outside [0, C) are range errors.
 */
#include "op.h"
#include "ops/loss.h"   /* generated from loss.ops */

#include <string.h>

static const char *nm(const char *s) { return s ? s : "?"; }

/* Label against input `in` (dims x, rank nx) along class axis `axis`: same
 * rank, equal dims off the axis, 1 (hard, int64) or C (soft, in's dtype) on
 * it; `soft` is the op's decoded soft_label. */
static int check_label(oar_infer_ctx_t *c, const char *in, const int64_t *x, int nx, int axis, bool soft)
{
    int nl;
    const int64_t *l = oar_ic_in_dims(c, "Label", 0, &nl);
    if (!l) return OAR_ERR_SHAPE;
    bool ok = nl == nx;
    for (int i = 0; ok && i < nx; i++)
        ok = i == axis ? oar_dim_eq(l[i], soft ? x[i] : 1) : oar_dim_eq(l[i], x[i]);
    /* cross_entropy (Fluid 1.8): a hard Label may drop the last axis (X [N, C], Label [N]) */
    if (!ok && !soft && nl == nx - 1 && axis == nx - 1 &&
        strncmp(oar_op_desc_type(oar_ic_op(c)), "cross_entropy", 13) == 0) {
        ok = true;
        for (int i = 0; ok && i < nl; i++) ok = oar_dim_eq(l[i], x[i]);
    }
    if (!ok) {
        char bl[160], bx[160];
        return oar_ic_error(c, OAR_ERR_SHAPE, "Label '%s' has shape %s but %s '%s' has shape %s; a %s label "
                            "must have that shape with %s on axis %d", nm(oar_ic_in_name(c, "Label", 0)),
                            oar_shape_str(l, nl, bl, sizeof bl), in, nm(oar_ic_in_name(c, in, 0)),
                            oar_shape_str(x, nx, bx, sizeof bx), soft ? "soft" : "hard",
                            soft ? "the class count" : "size 1", axis);
    }
    int lt = oar_ic_in_dtype(c, "Label", 0), xt = oar_ic_in_dtype(c, in, 0);
    int want = soft ? xt : OAR_INT64;
    if (lt >= 0 && want >= 0 && lt != want)
        return oar_ic_error(c, OAR_ERR_DTYPE, "Label '%s' has dtype %s; a %s label must be %s",
                            nm(oar_ic_in_name(c, "Label", 0)), nm(oar_dtype_name(lt)),
                            soft ? "soft" : "hard", nm(oar_dtype_name(want)));
    return OAR_OK;
}

static int float_input(oar_infer_ctx_t *c, const char *slot)
{
    int dt = oar_ic_in_dtype(c, slot, 0);
    if (dt >= 0 && dt != OAR_FP32 && dt != OAR_FP64)
        return oar_ic_error(c, OAR_ERR_DTYPE, "input %s '%s' has dtype %s, expected float32 or float64", slot,
                            nm(oar_ic_in_name(c, slot, 0)), nm(oar_dtype_name(dt)));
    return OAR_OK;
}

/* ---- cross_entropy -------------------------------------------------------- */
/* X [..., C] probabilities -> Y [..., 1] */
static int ce_infer(oar_infer_ctx_t *c)
{
    int nx;
    const int64_t *d = oar_ic_in_dims(c, "X", 0, &nx);
    if (!d) return OAR_ERR_SHAPE;
    const oar_ce_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int64_t x[OAR_MAX_DIMS];
    memcpy(x, d, sizeof(int64_t) * (size_t)nx);
    if (nx == 0) return oar_ic_error(c, OAR_ERR_SHAPE, "input X '%s' has rank 0", nm(oar_ic_in_name(c, "X", 0)));
    OAR_TRY(float_input(c, "X"));
    OAR_TRY(check_label(c, "X", x, nx, nx - 1, a->soft_label));
    x[nx - 1] = 1;
    /* Y has Label's shape when Label dropped the class axis (Fluid 1.8) */
    int nl;
    oar_ic_in_dims(c, "Label", 0, &nl);
    OAR_TRY(oar_ic_set_out(c, "Y", 0, x, nl == nx - 1 ? nx - 1 : nx, oar_ic_in_dtype(c, "X", 0)));
    return oar_ic_share_lod(c, "X", 0, "Y", 0);
}

static int ce_grad_maker(oar_grad_ctx_t *g)
{
    oar_op_desc_t *op = oar_gc_new_op(g, "cross_entropy_grad");
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "X"));
    OAR_TRY(oar_gc_in(g, op, "Label"));
    OAR_TRY(oar_gc_out_grad(g, op, "Y"));
    return oar_gc_in_grad(g, op, "X");
}

/* checks that `grad` (a loss gradient) has `want`'s shape */
static int check_loss_grad(oar_infer_ctx_t *c, const char *grad, const int64_t *want, int nw)
{
    int ng;
    const int64_t *g = oar_ic_in_dims(c, grad, 0, &ng);
    if (!g) return OAR_ERR_SHAPE;
    bool ok = ng == nw;
    for (int i = 0; ok && i < nw; i++) ok = oar_dim_eq(g[i], want[i]);
    if (!ok) {
        char bg[160], bw[160];
        return oar_ic_error(c, OAR_ERR_SHAPE, "%s '%s' has shape %s, expected %s", grad,
                            nm(oar_ic_in_name(c, grad, 0)), oar_shape_str(g, ng, bg, sizeof bg),
                            oar_shape_str(want, nw, bw, sizeof bw));
    }
    return OAR_OK;
}

static int ceg_infer(oar_infer_ctx_t *c)
{
    if (!oar_ic_out_present(c, "X@GRAD")) return OAR_OK;
    int nx;
    const int64_t *d = oar_ic_in_dims(c, "X", 0, &nx);
    if (!d) return OAR_ERR_SHAPE;
    const oar_ce_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int64_t x[OAR_MAX_DIMS];
    memcpy(x, d, sizeof(int64_t) * (size_t)nx);
    if (nx == 0) return oar_ic_error(c, OAR_ERR_SHAPE, "input X has rank 0");
    OAR_TRY(check_label(c, "X", x, nx, nx - 1, a->soft_label));
    int64_t y[OAR_MAX_DIMS];
    memcpy(y, x, sizeof y);
    y[nx - 1] = 1;
    int nl;
    oar_ic_in_dims(c, "Label", 0, &nl);
    OAR_TRY(check_loss_grad(c, "Y@GRAD", y, nl == nx - 1 ? nx - 1 : nx));
    OAR_TRY(oar_ic_set_out(c, "X@GRAD", 0, x, nx, oar_ic_in_dtype(c, "X", 0)));
    return oar_ic_share_lod(c, "X", 0, "X@GRAD", 0);
}

/* ---- softmax_with_cross_entropy ------------------------------------------ */
static int swce_axis(oar_infer_ctx_t *c, const oar_swce_attrs_t *attrs, const char *slot, const int64_t *d,
                     int nd, int *axis)
{
    const int a = attrs->axis;
    int r = a < 0 ? a + nd : a;
    if (nd == 0 || r < 0 || r >= nd) {
        char b[160];
        return oar_ic_error(c, OAR_ERR_RANGE, "attr axis = %d is out of range for %s '%s' of shape %s "
                            "(valid: %d..%d)", a, slot, nm(oar_ic_in_name(c, slot, 0)),
                            oar_shape_str(d, nd, b, sizeof b), -nd, nd - 1);
    }
    *axis = r;
    return OAR_OK;
}

static int swce_infer(oar_infer_ctx_t *c)
{
    int nx, axis = 0;
    const int64_t *d = oar_ic_in_dims(c, "Logits", 0, &nx);
    if (!d) return OAR_ERR_SHAPE;
    const oar_swce_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int64_t x[OAR_MAX_DIMS];
    memcpy(x, d, sizeof(int64_t) * (size_t)nx);
    OAR_TRY(swce_axis(c, a, "Logits", x, nx, &axis));
    OAR_TRY(float_input(c, "Logits"));
    OAR_TRY(check_label(c, "Logits", x, nx, axis, a->soft_label));
    int dt = oar_ic_in_dtype(c, "Logits", 0);
    OAR_TRY(oar_ic_set_out(c, "Softmax", 0, x, nx, dt));
    OAR_TRY(oar_ic_share_lod(c, "Logits", 0, "Softmax", 0));
    x[axis] = 1;
    OAR_TRY(oar_ic_set_out(c, "Loss", 0, x, nx, dt));
    return oar_ic_share_lod(c, "Logits", 0, "Loss", 0);
}

/* The fused grad needs only Softmax, Label and Loss@GRAD. As in Fluid, a
 * gradient flowing into the Softmax output is not propagated to Logits:
 * Softmax is for inspection (accuracy), the loss is what is trained. */
static int swce_grad_maker(oar_grad_ctx_t *g)
{
    oar_op_desc_t *op = oar_gc_new_op(g, "softmax_with_cross_entropy_grad");
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "Label"));
    OAR_TRY(oar_gc_out(g, op, "Softmax"));
    OAR_TRY(oar_gc_out_grad(g, op, "Loss"));
    return oar_gc_in_grad(g, op, "Logits");
}

static int swceg_infer(oar_infer_ctx_t *c)
{
    if (!oar_ic_out_present(c, "Logits@GRAD")) return OAR_OK;
    int nx, axis = 0;
    const int64_t *d = oar_ic_in_dims(c, "Softmax", 0, &nx);
    if (!d) return OAR_ERR_SHAPE;
    const oar_swce_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int64_t x[OAR_MAX_DIMS], loss[OAR_MAX_DIMS];
    memcpy(x, d, sizeof(int64_t) * (size_t)nx);
    OAR_TRY(swce_axis(c, a, "Softmax", x, nx, &axis));
    OAR_TRY(check_label(c, "Softmax", x, nx, axis, a->soft_label));
    memcpy(loss, x, sizeof loss);
    loss[axis] = 1;
    OAR_TRY(check_loss_grad(c, "Loss@GRAD", loss, nx));
    OAR_TRY(oar_ic_set_out(c, "Logits@GRAD", 0, x, nx, oar_ic_in_dtype(c, "Softmax", 0)));
    return oar_ic_share_lod(c, "Softmax", 0, "Logits@GRAD", 0);
}

/* ---- sigmoid_cross_entropy_with_logits ----------------------------------- */
/* X and Label: same shape, same float dtype */
static int sce_check(oar_infer_ctx_t *c, int64_t *x, int *nx)
{
    int nl;
    const int64_t *d = oar_ic_in_dims(c, "X", 0, nx);
    if (!d) return OAR_ERR_SHAPE;
    memcpy(x, d, sizeof(int64_t) * (size_t)*nx);
    const int64_t *l = oar_ic_in_dims(c, "Label", 0, &nl);
    if (!l) return OAR_ERR_SHAPE;
    bool ok = nl == *nx;
    for (int i = 0; ok && i < nl; i++) ok = oar_dim_eq(l[i], x[i]);
    if (!ok) {
        char bx[160], bl[160];
        return oar_ic_error(c, OAR_ERR_SHAPE, "Label '%s' has shape %s but X '%s' has shape %s; they must be equal",
                            nm(oar_ic_in_name(c, "Label", 0)), oar_shape_str(l, nl, bl, sizeof bl),
                            nm(oar_ic_in_name(c, "X", 0)), oar_shape_str(x, *nx, bx, sizeof bx));
    }
    OAR_TRY(float_input(c, "X"));
    int xt = oar_ic_in_dtype(c, "X", 0), lt = oar_ic_in_dtype(c, "Label", 0);
    if (xt >= 0 && lt >= 0 && xt != lt)
        return oar_ic_error(c, OAR_ERR_DTYPE, "Label '%s' has dtype %s but X has %s; they must be equal",
                            nm(oar_ic_in_name(c, "Label", 0)), nm(oar_dtype_name(lt)), nm(oar_dtype_name(xt)));
    return OAR_OK;
}

static int sce_infer(oar_infer_ctx_t *c)
{
    int64_t x[OAR_MAX_DIMS];
    int nx = 0;
    OAR_TRY(sce_check(c, x, &nx));
    OAR_TRY(oar_ic_set_out(c, "Out", 0, x, nx, oar_ic_in_dtype(c, "X", 0)));
    return oar_ic_share_lod(c, "X", 0, "Out", 0);
}

static int sce_grad_maker(oar_grad_ctx_t *g)
{
    oar_op_desc_t *op = oar_gc_new_op(g, "sigmoid_cross_entropy_with_logits_grad");
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "X"));
    OAR_TRY(oar_gc_in(g, op, "Label"));
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    return oar_gc_in_grad(g, op, "X");
}

static int sceg_infer(oar_infer_ctx_t *c)
{
    if (!oar_ic_out_present(c, "X@GRAD")) return OAR_OK;
    int64_t x[OAR_MAX_DIMS];
    int nx = 0;
    OAR_TRY(sce_check(c, x, &nx));
    OAR_TRY(check_loss_grad(c, "Out@GRAD", x, nx));
    OAR_TRY(oar_ic_set_out(c, "X@GRAD", 0, x, nx, oar_ic_in_dtype(c, "X", 0)));
    return oar_ic_share_lod(c, "X", 0, "X@GRAD", 0);
}

#define OAR_OPS_DEFINE
#include "ops/loss.h"   /* the tables, decoders and registrations */
