/*
 * pad_ext.c — pad (Fluid 1.8: constant padding of every dim, paddings =
 * [before_0, after_0, before_1, ...]) and pad3d (Paddle 2.x: the last three
 * dims of NCDHW X, paddings = [left, right, top, bottom, front, back], mode
 * constant/reflect/replicate/circular, or a Paddings tensor), with grads.
 * Declared in pad_ext.ops (slots, attributes, docs); kernels in
 * kernels/cpu/pad_ext.c.
 */
#include "op.h"
#include "ops/pad_ext.h"   /* generated from pad_ext.ops */

/* pad3d's mode names, by OAR_PAD_* (for messages) */
static const char *const mode_name[] = {"constant", "reflect", "replicate", "circular"};

static int pad_infer(oar_infer_ctx_t *c)
{
    const oar_pad_attrs_t *a = oar_ic_attrs(c);
    int nx;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, &nx);
    if (!xd) return OAR_ERR_SHAPE;
    const int32_t *p = a->paddings.v;
    int np = a->paddings.n;
    if (np != 2 * nx)
        return oar_ic_error(c, OAR_ERR_INVALID, "attr paddings has %d values, X of rank %d needs %d", np, nx, 2 * nx);
    int64_t od[OAR_MAX_DIMS];
    for (int i = 0; i < nx; i++) {
        if (p[2 * i] < 0 || p[2 * i + 1] < 0)
            return oar_ic_error(c, OAR_ERR_INVALID, "attr paddings[%d..%d] must not be negative", 2 * i, 2 * i + 1);
        od[i] = xd[i] < 0 ? -1 : xd[i] + p[2 * i] + p[2 * i + 1];
    }
    return oar_ic_set_out(c, "Out", 0, od, nx, oar_ic_in_dtype(c, "X", 0));
}

/* pad3d's six pads: the Paddings tensor (run time) or the attr */
static int pad3d_pads(oar_infer_ctx_t *c, int64_t pads[6], bool *known)
{
    *known = true;
    if (oar_ic_in_present(c, "Paddings")) {
        const oar_tensor_t *t = oar_ic_in_tensor(c, "Paddings", 0);
        if (!t) { *known = false; return OAR_OK; }
        if (oar_tensor_numel_of(t) != 6 || t->dtype != OAR_INT32 || !oar_tensor_has_data(t))
            return oar_ic_error(c, OAR_ERR_INVALID, "Paddings ('%s') must be 6 int32 values",
                                oar_ic_in_name(c, "Paddings", 0));
        const int32_t *v = oar_tensor_data((oar_tensor_t *)t);
        for (int i = 0; i < 6; i++) pads[i] = v[i];
        return OAR_OK;
    }
    const oar_pad_attrs_t *a = oar_ic_attrs(c);
    if (a->paddings.n != 6)
        return oar_ic_error(c, OAR_ERR_INVALID, "attr paddings has %d values, expected 6", a->paddings.n);
    for (int i = 0; i < 6; i++) pads[i] = a->paddings.v[i];
    return OAR_OK;
}

static int pad3d_infer(oar_infer_ctx_t *c)
{
    const oar_pad_attrs_t *a = oar_ic_attrs(c);
    if (a->layout == OAR_PAD_LAYOUT_NDHWC)
        return oar_ic_error(c, OAR_ERR_UNSUPPORTED, "data_format \"NDHWC\" is not supported by oar's pad3d (NCDHW only)");
    int nx;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, &nx);
    if (!xd) return OAR_ERR_SHAPE;
    if (nx != 5) return oar_ic_error(c, OAR_ERR_SHAPE, "X must be 5-D [N, C, D, H, W], it has %d dims", nx);
    int64_t pads[6];
    bool known;
    OAR_TRY(pad3d_pads(c, pads, &known));
    int64_t od[5] = {xd[0], xd[1], -1, -1, -1};
    for (int i = 0; i < 3 && known; i++) {
        /* dim 4 - i (W, H, D) gets pads[2i], pads[2i + 1] */
        int64_t b = pads[2 * i], e = pads[2 * i + 1], n = xd[4 - i];
        if (b < 0 || e < 0) return oar_ic_error(c, OAR_ERR_INVALID, "paddings must not be negative");
        if (n >= 0 && a->mode == OAR_PAD_REFLECT && (b >= n || e >= n))
            return oar_ic_error(c, OAR_ERR_INVALID, "reflect padding (%lld, %lld) must be less than the dim (%lld)",
                                (long long)b, (long long)e, (long long)n);
        if (n == 0 && a->mode != OAR_PAD_CONSTANT)
            return oar_ic_error(c, OAR_ERR_INVALID, "mode \"%s\" cannot pad an empty dim", mode_name[a->mode]);
        od[4 - i] = n < 0 ? -1 : n + b + e;
    }
    return oar_ic_set_out(c, "Out", 0, od, 5, oar_ic_in_dtype(c, "X", 0));
}

static int pad_grad_infer(oar_infer_ctx_t *c) { return oar_infer_grad_like_inputs(c); }
static int pad_grad(oar_grad_ctx_t *g)
{
    const oar_op_desc_t *f = oar_gc_fwd(g);
    oar_op_desc_t *op = oar_gc_new_grad_op(g);
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "X"));
    if (oar_op_desc_input_count(f, "Paddings") > 0) OAR_TRY(oar_gc_in(g, op, "Paddings"));
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    return oar_gc_in_grad(g, op, "X");
}

#define OAR_OPS_DEFINE
#include "ops/pad_ext.h"   /* the tables, decoders and registrations */
