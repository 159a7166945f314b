/*
 * loss_ext.c — inference and grad makers of Fluid 1.8's smaller loss ops
 * (smooth_l1_loss, huber_loss, log_loss, hinge_loss, kldiv_loss, bce_loss,
 * margin_rank_loss, rank_loss, modified_huber_loss, nll_loss, label_smooth,
 * bpr_loss, cross_entropy2) and their grads; declared in loss_ext.ops,
 * kernels in kernels/cpu/loss_ext.c. Shapes follow Fluid's InferShape.
 */
#include "op.h"
#include "ops/loss_ext.h"   /* generated from loss_ext.ops */

#include <string.h>

static const char *nm(const char *s) { return s ? s : "?"; }

static int float_in(oar_infer_ctx_t *c, const char *slot)
{
    int dt = oar_ic_in_dtype(c, slot, 0);
    if (dt >= 0 && dt != OAR_FP32 && dt != OAR_FP64)
        return oar_ic_error(c, OAR_ERR_DTYPE, "input %s '%s' has dtype %s, expected float32 or float64", slot,
                            nm(oar_ic_in_name(c, slot, 0)), nm(oar_dtype_name(dt)));
    return OAR_OK;
}

static bool dims_eq(const int64_t *a, int na, const int64_t *b, int nb)
{
    if (na != nb) return false;
    for (int i = 0; i < na; i++)
        if (!oar_dim_eq(a[i], b[i])) return false;
    return true;
}

/* input `slot` has `ref`'s shape and dtype */
static int same_as(oar_infer_ctx_t *c, const char *slot, const char *ref)
{
    int na, nb;
    const int64_t *a = oar_ic_in_dims(c, slot, 0, &na);
    const int64_t *b = oar_ic_in_dims(c, ref, 0, &nb);
    if (!a || !b) return OAR_ERR_SHAPE;
    if (!dims_eq(a, na, b, nb)) {
        char ba[160], bb[160];
        return oar_ic_error(c, OAR_ERR_SHAPE, "input %s '%s' has shape %s but %s '%s' has shape %s; they must be equal",
                            slot, nm(oar_ic_in_name(c, slot, 0)), oar_shape_str(a, na, ba, sizeof ba), ref,
                            nm(oar_ic_in_name(c, ref, 0)), oar_shape_str(b, nb, bb, sizeof bb));
    }
    int ta = oar_ic_in_dtype(c, slot, 0), tb = oar_ic_in_dtype(c, ref, 0);
    if (ta >= 0 && tb >= 0 && ta != tb)
        return oar_ic_error(c, OAR_ERR_DTYPE, "input %s '%s' has dtype %s but %s has %s; they must be equal", slot,
                            nm(oar_ic_in_name(c, slot, 0)), nm(oar_dtype_name(ta)), ref, nm(oar_dtype_name(tb)));
    return OAR_OK;
}

/* input `slot` is a column [N, 1], as Fluid's per-sample losses require */
static int column(oar_infer_ctx_t *c, const char *slot)
{
    int n;
    const int64_t *d = oar_ic_in_dims(c, slot, 0, &n);
    if (!d) return OAR_ERR_SHAPE;
    if (n != 2 || !oar_dim_eq(d[1], 1)) {
        char b[160];
        return oar_ic_error(c, OAR_ERR_SHAPE, "input %s '%s' has shape %s, expected [N, 1]", slot,
                            nm(oar_ic_in_name(c, slot, 0)), oar_shape_str(d, n, b, sizeof b));
    }
    return OAR_OK;
}

/* output `out` (when wanted) takes input `src`'s shape, dtype and LoD */
static int set_like(oar_infer_ctx_t *c, const char *out, const char *src)
{
    if (!oar_ic_out_present(c, out)) return OAR_OK;
    int n;
    const int64_t *d = oar_ic_in_dims(c, src, 0, &n);
    if (!d) return OAR_ERR_SHAPE;
    int64_t dims[OAR_MAX_DIMS];
    memcpy(dims, d, sizeof(int64_t) * (size_t)n);
    OAR_TRY(oar_ic_set_out(c, out, 0, dims, n, oar_ic_in_dtype(c, src, 0)));
    return oar_ic_share_lod(c, src, 0, out, 0);
}

/* output `out` gets shape [rows, 1] with input `src`'s dtype */
static int set_rows(oar_infer_ctx_t *c, const char *out, const char *src)
{
    int n;
    const int64_t *d = oar_ic_in_dims(c, src, 0, &n);
    if (!d) return OAR_ERR_SHAPE;
    int64_t dims[2] = { n > 0 ? d[0] : 1, 1 };
    OAR_TRY(oar_ic_set_out(c, out, 0, dims, 2, oar_ic_in_dtype(c, src, 0)));
    return oar_ic_share_lod(c, src, 0, out, 0);
}

/* two float inputs of one shape */
static int pair(oar_infer_ctx_t *c, const char *a, const char *b)
{
    OAR_TRY(float_in(c, a));
    return same_as(c, b, a);
}

/* ---- smooth_l1_loss ------------------------------------------------------ */
static int sl1_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(pair(c, "X", "Y"));
    int n;
    const int64_t *d = oar_ic_in_dims(c, "X", 0, &n);
    if (!d) return OAR_ERR_SHAPE;
    if (n < 2) {
        char b[160];
        return oar_ic_error(c, OAR_ERR_SHAPE, "input X '%s' has shape %s; smooth_l1_loss needs rank >= 2",
                            nm(oar_ic_in_name(c, "X", 0)), oar_shape_str(d, n, b, sizeof b));
    }
    bool in = oar_ic_in_present(c, "InsideWeight"), out = oar_ic_in_present(c, "OutsideWeight");
    if (in != out)
        return oar_ic_error(c, OAR_ERR_INVALID, "InsideWeight and OutsideWeight must be given together");
    if (in) {
        OAR_TRY(same_as(c, "InsideWeight", "X"));
        OAR_TRY(same_as(c, "OutsideWeight", "X"));
    }
    OAR_TRY(set_like(c, "Diff", "X"));
    return set_rows(c, "Out", "X");
}

static int sl1g_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(set_like(c, "X@GRAD", "Diff"));
    return set_like(c, "Y@GRAD", "Diff");
}

/* ---- huber_loss ---------------------------------------------------------- */
static int huber_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(pair(c, "X", "Y"));
    OAR_TRY(set_like(c, "Residual", "X"));
    return set_like(c, "Out", "X");
}

static int huberg_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(set_like(c, "X@GRAD", "Residual"));
    return set_like(c, "Y@GRAD", "Residual");
}

/* ---- log_loss, hinge_loss, modified_huber_loss: [N, 1] pairs ------------- */
static int logl_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(pair(c, "Predicted", "Labels"));
    OAR_TRY(column(c, "Predicted"));
    return set_like(c, "Loss", "Predicted");
}

static int hinge_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(pair(c, "Logits", "Labels"));
    OAR_TRY(column(c, "Logits"));
    return set_like(c, "Loss", "Logits");
}

static int mhl_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(pair(c, "X", "Y"));
    OAR_TRY(column(c, "X"));
    OAR_TRY(set_like(c, "IntermediateVal", "X"));
    return set_like(c, "Out", "X");
}

static int mhlg_infer(oar_infer_ctx_t *c) { return set_like(c, "X@GRAD", "IntermediateVal"); }

/* ---- kldiv_loss ---------------------------------------------------------- */
static int kldiv_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(pair(c, "X", "Target"));
    const oar_kldiv_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    if (a->reduction == OAR_KLDIV_REDUCTION_NONE) return set_like(c, "Loss", "X");
    int64_t one = 1;
    return oar_ic_set_out(c, "Loss", 0, &one, 1, oar_ic_in_dtype(c, "X", 0));
}

/* ---- bce_loss ------------------------------------------------------------ */
static int bce_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(pair(c, "X", "Label"));
    return set_like(c, "Out", "X");
}

/* ---- margin_rank_loss ---------------------------------------------------- */
static int mrl_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(pair(c, "X1", "X2"));
    OAR_TRY(same_as(c, "Label", "X1"));
    OAR_TRY(column(c, "Label"));
    OAR_TRY(set_like(c, "Activated", "Label"));
    return set_like(c, "Out", "Label");
}

static int mrlg_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(set_like(c, "X1@GRAD", "Activated"));
    return set_like(c, "X2@GRAD", "Activated");
}

/* ---- rank_loss: [N] or [N, 1] ------------------------------------------- */
static int rank_vec(oar_infer_ctx_t *c, const char *slot)
{
    int n;
    const int64_t *d = oar_ic_in_dims(c, slot, 0, &n);
    if (!d) return OAR_ERR_SHAPE;
    if (n < 1 || n > 2 || (n == 2 && !oar_dim_eq(d[1], 1))) {
        char b[160];
        return oar_ic_error(c, OAR_ERR_SHAPE, "input %s '%s' has shape %s, expected [N] or [N, 1]", slot,
                            nm(oar_ic_in_name(c, slot, 0)), oar_shape_str(d, n, b, sizeof b));
    }
    return OAR_OK;
}

static int rankl_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(rank_vec(c, "Label"));
    OAR_TRY(float_in(c, "Label"));
    OAR_TRY(same_as(c, "Left", "Label"));
    OAR_TRY(same_as(c, "Right", "Label"));
    return set_like(c, "Out", "Label");
}

/* ---- label_smooth -------------------------------------------------------- */
static int lsm_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(float_in(c, "X"));
    int n;
    const int64_t *d = oar_ic_in_dims(c, "X", 0, &n);
    if (!d) return OAR_ERR_SHAPE;
    if (n < 1) return oar_ic_error(c, OAR_ERR_SHAPE, "input X '%s' has rank 0", nm(oar_ic_in_name(c, "X", 0)));
    if (oar_ic_in_present(c, "PriorDist")) {
        int np;
        const int64_t *p = oar_ic_in_dims(c, "PriorDist", 0, &np);
        if (!p) return OAR_ERR_SHAPE;
        int64_t numel = 1;
        for (int i = 0; i < np; i++) numel = p[i] < 0 || numel < 0 ? -1 : numel * p[i];
        if (!oar_dim_eq(numel, d[n - 1])) {
            char b[160], bx[160];
            return oar_ic_error(c, OAR_ERR_SHAPE, "input PriorDist '%s' has shape %s but X '%s' has shape %s; "
                                "PriorDist must hold one value per class (X's last dimension)",
                                nm(oar_ic_in_name(c, "PriorDist", 0)), oar_shape_str(p, np, b, sizeof b),
                                nm(oar_ic_in_name(c, "X", 0)), oar_shape_str(d, n, bx, sizeof bx));
        }
        int tp = oar_ic_in_dtype(c, "PriorDist", 0), tx = oar_ic_in_dtype(c, "X", 0);
        if (tp >= 0 && tx >= 0 && tp != tx)
            return oar_ic_error(c, OAR_ERR_DTYPE, "input PriorDist '%s' has dtype %s but X has %s",
                                nm(oar_ic_in_name(c, "PriorDist", 0)), nm(oar_dtype_name(tp)), nm(oar_dtype_name(tx)));
    }
    return set_like(c, "Out", "X");
}

static int lsmg_infer(oar_infer_ctx_t *c) { return set_like(c, "X@GRAD", "Out@GRAD"); }

/* ---- nll_loss ------------------------------------------------------------ */
static int int64_label(oar_infer_ctx_t *c)
{
    int lt = oar_ic_in_dtype(c, "Label", 0);
    if (lt >= 0 && lt != OAR_INT64)
        return oar_ic_error(c, OAR_ERR_DTYPE, "input Label '%s' has dtype %s, expected int64 class ids",
                            nm(oar_ic_in_name(c, "Label", 0)), nm(oar_dtype_name(lt)));
    return OAR_OK;
}

static int nll_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(float_in(c, "X"));
    OAR_TRY(int64_label(c));
    const oar_nll_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int nx, nl;
    const int64_t *x = oar_ic_in_dims(c, "X", 0, &nx);
    const int64_t *l = oar_ic_in_dims(c, "Label", 0, &nl);
    if (!x || !l) return OAR_ERR_SHAPE;
    char bx[160], bl[160];
    if (nx != 2 && nx != 4)
        return oar_ic_error(c, OAR_ERR_SHAPE, "input X '%s' has shape %s, expected [N, C] or [N, C, H, W]",
                            nm(oar_ic_in_name(c, "X", 0)), oar_shape_str(x, nx, bx, sizeof bx));
    /* Label is X without the class axis */
    int64_t want[3] = { x[0], nx == 4 ? x[2] : 0, nx == 4 ? x[3] : 0 };
    if (!dims_eq(l, nl, want, nx - 1))
        return oar_ic_error(c, OAR_ERR_SHAPE, "input Label '%s' has shape %s but X '%s' has shape %s; Label "
                            "must be X's shape without the class axis", nm(oar_ic_in_name(c, "Label", 0)),
                            oar_shape_str(l, nl, bl, sizeof bl), nm(oar_ic_in_name(c, "X", 0)),
                            oar_shape_str(x, nx, bx, sizeof bx));
    if (oar_ic_in_present(c, "Weight")) {
        int nw;
        const int64_t *w = oar_ic_in_dims(c, "Weight", 0, &nw);
        if (!w) return OAR_ERR_SHAPE;
        if (nw != 1 || !oar_dim_eq(w[0], x[1]))
            return oar_ic_error(c, OAR_ERR_SHAPE, "input Weight '%s' has shape %s, expected [C] with C = %lld "
                                "(X's dimension 1)", nm(oar_ic_in_name(c, "Weight", 0)),
                                oar_shape_str(w, nw, bl, sizeof bl), (long long)x[1]);
    }
    int dt = oar_ic_in_dtype(c, "X", 0);
    int64_t one = 1;
    if (a->reduction == OAR_NLL_REDUCTION_NONE) {
        int64_t o[3];
        memcpy(o, l, sizeof(int64_t) * (size_t)nl);
        OAR_TRY(oar_ic_set_out(c, "Out", 0, o, nl, dt));
    } else {
        OAR_TRY(oar_ic_set_out(c, "Out", 0, &one, 1, dt));
    }
    return oar_ic_set_out(c, "Total_weight", 0, &one, 1, dt);
}

/* ---- bpr_loss ------------------------------------------------------------ */
static int bpr_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(float_in(c, "X"));
    OAR_TRY(int64_label(c));
    int nx, nl;
    const int64_t *x = oar_ic_in_dims(c, "X", 0, &nx);
    const int64_t *l = oar_ic_in_dims(c, "Label", 0, &nl);
    if (!x || !l) return OAR_ERR_SHAPE;
    int64_t y[OAR_MAX_DIMS];
    memcpy(y, x, sizeof(int64_t) * (size_t)nx);
    if (nx >= 1) y[nx - 1] = 1;
    if (nx < 2 || !dims_eq(l, nl, y, nx)) {
        char bx[160], bl[160];
        return oar_ic_error(c, OAR_ERR_SHAPE, "input Label '%s' has shape %s but X '%s' has shape %s; Label must "
                            "be X's shape with 1 on the last axis (X of rank >= 2)",
                            nm(oar_ic_in_name(c, "Label", 0)), oar_shape_str(l, nl, bl, sizeof bl),
                            nm(oar_ic_in_name(c, "X", 0)), oar_shape_str(x, nx, bx, sizeof bx));
    }
    OAR_TRY(oar_ic_set_out(c, "Y", 0, y, nx, oar_ic_in_dtype(c, "X", 0)));
    return oar_ic_share_lod(c, "X", 0, "Y", 0);
}

/* ---- cross_entropy2 ------------------------------------------------------ */
static int ce2_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(float_in(c, "X"));
    OAR_TRY(int64_label(c));
    int nx, nl;
    const int64_t *x = oar_ic_in_dims(c, "X", 0, &nx);
    const int64_t *l = oar_ic_in_dims(c, "Label", 0, &nl);
    if (!x || !l) return OAR_ERR_SHAPE;
    int64_t y[OAR_MAX_DIMS];
    memcpy(y, x, sizeof(int64_t) * (size_t)nx);
    if (nx >= 1) y[nx - 1] = 1;
    if (nx < 1 || nx + 1 > OAR_MAX_DIMS || !dims_eq(l, nl, y, nx)) {
        char bx[160], bl[160];
        return oar_ic_error(c, OAR_ERR_SHAPE, "input Label '%s' has shape %s but X '%s' has shape %s; Label must "
                            "be X's shape with 1 on the last axis", nm(oar_ic_in_name(c, "Label", 0)),
                            oar_shape_str(l, nl, bl, sizeof bl), nm(oar_ic_in_name(c, "X", 0)),
                            oar_shape_str(x, nx, bx, sizeof bx));
    }
    int dt = oar_ic_in_dtype(c, "X", 0);
    OAR_TRY(oar_ic_set_out(c, "Y", 0, y, nx, dt));
    OAR_TRY(oar_ic_share_lod(c, "X", 0, "Y", 0));
    OAR_TRY(oar_ic_set_out(c, "MatchX", 0, y, nx, dt));
    /* XShape = X's dims and a 0: no values, only the shape for the grad */
    int64_t xs[OAR_MAX_DIMS];
    memcpy(xs, x, sizeof(int64_t) * (size_t)nx);
    xs[nx] = 0;
    OAR_TRY(oar_ic_set_out(c, "XShape", 0, xs, nx + 1, dt));
    return oar_ic_share_lod(c, "X", 0, "XShape", 0);
}

static int ce2_grad_maker(oar_grad_ctx_t *g)
{
    oar_op_desc_t *op = oar_gc_new_op(g, "cross_entropy_grad2");
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "Label"));
    OAR_TRY(oar_gc_out(g, op, "MatchX"));
    OAR_TRY(oar_gc_out(g, op, "XShape"));
    OAR_TRY(oar_gc_out_grad(g, op, "Y"));
    return oar_gc_in_grad(g, op, "X");
}

static int ce2g_infer(oar_infer_ctx_t *c)
{
    if (!oar_ic_out_present(c, "X@GRAD")) return OAR_OK;
    int n;
    const int64_t *d = oar_ic_in_dims(c, "XShape", 0, &n);
    if (!d) return OAR_ERR_SHAPE;
    if (n < 2)
        return oar_ic_error(c, OAR_ERR_SHAPE, "input XShape '%s' has rank %d; it must be X's shape and a 0",
                            nm(oar_ic_in_name(c, "XShape", 0)), n);
    int64_t x[OAR_MAX_DIMS];
    memcpy(x, d, sizeof(int64_t) * (size_t)(n - 1));
    OAR_TRY(oar_ic_set_out(c, "X@GRAD", 0, x, n - 1, oar_ic_in_dtype(c, "MatchX", 0)));
    return oar_ic_share_lod(c, "XShape", 0, "X@GRAD", 0);
}

#define OAR_OPS_DEFINE
#include "ops/loss_ext.h"   /* the tables, decoders and registrations */
