/*
 * norm_ext.c — instance_norm and group_norm (Fluid 1.8 / Paddle 2.x, NCHW
 * and other channel-second layouts) and p_norm, with their grads: inference
 * and grad makers; the ops themselves (slots, attributes, docs) are
 * declared in norm_ext.ops. Kernels in kernels/cpu/norm_ext.c.
 *
 * instance_norm normalizes each (sample, channel) over the spatial dims;
 * group_norm each (sample, group of C/groups channels); both then apply the
 * per-channel Scale (default 1) and Bias (default 0).
 */
#include <math.h>
#include "op.h"
#include "ops/norm_ext.h"   /* generated from norm_ext.ops: slots, oar_gn_attrs_t, oar_pnorm_attrs_t */
#include "ops/double_grad_makers.h"

/* checks X (rank >= 2, channels second) and the optional Scale/Bias [C];
 * *c gets C */
static int check_norm_inputs(oar_infer_ctx_t *c, int64_t *ch, const int64_t **xd, int *nx)
{
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    *xd = oar_ic_in_dims(c, "X", 0, nx);
    if (!*xd) return OAR_ERR_SHAPE;
    if (*nx < 2) return oar_ic_error(c, OAR_ERR_SHAPE, "X must have at least 2 dims [N, C, ...], it has %d", *nx);
    *ch = (*xd)[1];
    const char *opt[2] = {"Scale", "Bias"};
    for (int i = 0; i < 2; i++) {
        if (!oar_ic_in_present(c, opt[i])) continue;
        int n;
        const int64_t *d = oar_ic_in_dims(c, opt[i], 0, &n);
        if (!d) return OAR_ERR_SHAPE;
        int64_t cnt = 1;
        for (int j = 0; j < n; j++) cnt = d[j] < 0 || cnt < 0 ? -1 : cnt * d[j];
        if (cnt >= 0 && *ch >= 0 && cnt != *ch)
            return oar_ic_error(c, OAR_ERR_SHAPE, "%s ('%s') has %lld values, X has %lld channels", opt[i],
                                oar_ic_in_name(c, opt[i], 0), (long long)cnt, (long long)*ch);
    }
    return OAR_OK;
}

static int set_stat(oar_infer_ctx_t *c, const char *slot, const int64_t *d, int n)
{
    if (!oar_ic_out_present(c, slot)) return OAR_OK;
    return oar_ic_set_out(c, slot, 0, d, n, oar_ic_in_dtype(c, "X", 0));
}

static int inorm_infer(oar_infer_ctx_t *c)
{
    int64_t ch;
    const int64_t *xd;
    int nx;
    OAR_TRY(check_norm_inputs(c, &ch, &xd, &nx));
    int64_t nc = xd[0] < 0 || ch < 0 ? -1 : xd[0] * ch;
    OAR_TRY(set_stat(c, "SavedMean", &nc, 1));
    OAR_TRY(set_stat(c, "SavedVariance", &nc, 1));
    OAR_TRY(oar_ic_set_out(c, "Y", 0, xd, nx, oar_ic_in_dtype(c, "X", 0)));
    return oar_ic_share_lod(c, "X", 0, "Y", 0);
}

static int gnorm_infer(oar_infer_ctx_t *c)
{
    int64_t ch;
    const int64_t *xd;
    int nx;
    const oar_gn_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    if (a->layout == OAR_GN_LAYOUT_NHWC)
        return oar_ic_error(c, OAR_ERR_UNSUPPORTED, "data_layout \"NHWC\" is not supported by oar's group_norm (NCHW only)");
    OAR_TRY(check_norm_inputs(c, &ch, &xd, &nx));
    const int g = a->groups;
    if (g < 1) return oar_ic_error(c, OAR_ERR_INVALID, "attr groups = %d must be >= 1", g);
    if (ch >= 0 && ch % g != 0)
        return oar_ic_error(c, OAR_ERR_SHAPE, "X's %lld channels are not divisible by groups = %d", (long long)ch, g);
    int64_t sd[2] = {xd[0], g};
    OAR_TRY(set_stat(c, "Mean", sd, 2));
    OAR_TRY(set_stat(c, "Variance", sd, 2));
    OAR_TRY(oar_ic_set_out(c, "Y", 0, xd, nx, oar_ic_in_dtype(c, "X", 0)));
    return oar_ic_share_lod(c, "X", 0, "Y", 0);
}

static int norm_grad_infer(oar_infer_ctx_t *c) { return oar_infer_grad_like_inputs(c); }

static int norm_grad(oar_grad_ctx_t *g)
{
    const oar_op_desc_t *f = oar_gc_fwd(g);
    oar_op_desc_t *op = oar_gc_new_grad_op(g);
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "X"));
    if (oar_op_desc_input_count(f, "Scale") > 0) OAR_TRY(oar_gc_in(g, op, "Scale"));
    if (oar_op_desc_input_count(f, "Bias") > 0) OAR_TRY(oar_gc_in(g, op, "Bias"));
    OAR_TRY(oar_gc_out_grad(g, op, "Y"));
    OAR_TRY(oar_gc_in_grad(g, op, "X"));
    if (oar_op_desc_input_count(f, "Scale") > 0) OAR_TRY(oar_gc_in_grad(g, op, "Scale"));
    if (oar_op_desc_input_count(f, "Bias") > 0) OAR_TRY(oar_gc_in_grad(g, op, "Bias"));
    return OAR_OK;
}

/* ---- p_norm ---------------------------------------------------------------- */
static int pn_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    const oar_pnorm_attrs_t *pa = oar_ic_attrs(c);
    if (!pa) return OAR_ERR_INVALID;
    const oar_pnorm_attrs_t a = *pa;
    if (isnan(a.porder)) return oar_ic_error(c, OAR_ERR_INVALID, "attr porder is NaN");
    int nx;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, &nx);
    if (!xd) return OAR_ERR_SHAPE;
    int64_t od[OAR_MAX_DIMS];
    int no = 0;
    if (a.asvector) {
        for (int i = 0; i < nx && a.keepdim; i++) od[no++] = 1;
    } else {
        if (nx == 0 || a.axis < -nx || a.axis >= nx)
            return oar_ic_error(c, OAR_ERR_RANGE, "attr axis = %d is out of range for X of rank %d", a.axis, nx);
        int ax = a.axis < 0 ? a.axis + nx : a.axis;
        for (int i = 0; i < nx; i++)
            if (i != ax) od[no++] = xd[i];
            else if (a.keepdim) od[no++] = 1;
    }
    if (no == 0) od[no++] = 1;   /* Fluid 1.8's shape of a full reduction */
    return oar_ic_set_out(c, "Out", 0, od, no, oar_ic_in_dtype(c, "X", 0));
}

static int pn_grad(oar_grad_ctx_t *g)
{
    oar_op_desc_t *op = oar_gc_new_op(g, "p_norm_grad");
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "X"));
    OAR_TRY(oar_gc_out(g, op, "Out"));
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    return oar_gc_in_grad(g, op, "X");
}
static int pn_grad_infer(oar_infer_ctx_t *c) { return oar_infer_grad_like_inputs(c); }

#define OAR_OPS_DEFINE
#include "ops/norm_ext.h"   /* the tables, the decoders and the registrations */
