/*
 * vision.c — lrn, maxout, affine_channel and pool3d (Fluid 1.8): the inference; the
 * ops (slots, attributes, docs) are declared in vision.ops, the grads are
 * oar_grad_default (each grad op declares the slots it reads). Kernels in
 * kernels/cpu/vision.c.
 */
#include "op.h"
#include "ops/vision.h"   /* generated from vision.ops */
#include "ops/infer_util.h"
#include "window.h"

static int lrn_infer(oar_infer_ctx_t *c)
{
    const oar_lrn_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const int64_t *xd;
    OAR_TRY(float_x_nchw(c, &xd));
    if (a->n % 2 != 1) return oar_ic_error(c, OAR_ERR_INVALID, "n must be a positive odd number, it is %d", (int)a->n);
    OAR_TRY(oar_infer_same_as(c, "X", "Out"));
    return oar_infer_same_as(c, "X", "MidOut");
}

static int maxout_infer(oar_infer_ctx_t *c)
{
    const oar_maxout_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    int nd;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, &nd);
    if (!xd) return OAR_ERR_SHAPE;
    if (nd != 4)
        return oar_ic_error(c, OAR_ERR_SHAPE, "X ('%s') must be 4-D, it has rank %d", oar_ic_in_name(c, "X", 0), nd);
    if (a->axis != 1 && a->axis != -1 && a->axis != 3)
        return oar_ic_error(c, OAR_ERR_INVALID, "axis must be 1, -1 or 3, it is %d", (int)a->axis);
    const int ax = a->axis == 1 ? 1 : 3;
    int64_t od[4] = {xd[0], xd[1], xd[2], xd[3]};
    if (xd[ax] >= 0) {
        if (xd[ax] % a->groups != 0)
            return oar_ic_error(c, OAR_ERR_SHAPE, "X ('%s') has %lld channels, not divisible by groups = %d",
                                oar_ic_in_name(c, "X", 0), (long long)xd[ax], (int)a->groups);
        od[ax] = xd[ax] / a->groups;
    }
    int dt = oar_ic_in_dtype(c, "X", 0);
    OAR_TRY(oar_ic_set_out(c, "Out", 0, od, 4, dt));
    return oar_ic_share_lod(c, "X", 0, "Out", 0);
}

static int ac_infer(oar_infer_ctx_t *c)
{
    const oar_ac_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    const int dt = oar_ic_in_dtype(c, "X", 0);
    OAR_TRY(oar_ic_check_float(c, "Scale", dt));
    OAR_TRY(oar_ic_check_float(c, "Bias", dt));
    int nd;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, &nd);
    if (!xd) return OAR_ERR_SHAPE;
    if (nd < 2)
        return oar_ic_error(c, OAR_ERR_SHAPE, "X ('%s') must have rank >= 2, it has %d", oar_ic_in_name(c, "X", 0), nd);
    const int64_t ch = xd[a->layout == OAR_AC_LAYOUT_NHWC ? nd - 1 : 1];
    static const char *const slots[] = {"Scale", "Bias"};
    for (int s = 0; s < 2; s++) {
        int sn;
        const int64_t *sd = oar_ic_in_dims(c, slots[s], 0, &sn);
        if (!sd) return OAR_ERR_SHAPE;
        if (sn != 1 || !oar_dim_eq(sd[0], ch))
            return oar_ic_error(c, OAR_ERR_SHAPE, "%s ('%s') must be [C] = [%lld], X's channel count",
                                slots[s], oar_ic_in_name(c, slots[s], 0), (long long)ch);
    }
    return oar_infer_same_as(c, "X", "Out");
}

/* the decoder's last step: ksize, strides and paddings into fixed arrays */
static void pool3d_finish(oar_decode_ctx_t *d, oar_pool3d_attrs_t *a)
{
    if (!a->global) oar_win_dec_triple(d, "ksize", 0, 1, a->ks);
    oar_win_dec_triple(d, "strides", 1, 1, a->st);
    oar_win_dec_pads3(d, a->pd);
}

static int pool3d_infer(oar_infer_ctx_t *c)
{
    const oar_pool3d_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    int xn;
    const int64_t *x = oar_ic_in_dims(c, "X", 0, &xn);
    if (!x) return OAR_ERR_SHAPE;
    char xs[160];
    oar_shape_str(x, xn, xs, sizeof xs);
    if (xn != 5)
        return oar_ic_error(c, OAR_ERR_SHAPE, "X ('%s') must be 5-D %s, got shape %s", oar_ic_in_name(c, "X", 0),
                            a->ndhwc ? "NDHWC" : "NCDHW", xs);
    if (!a->global && a->ks[0] == 0)
        return oar_ic_error(c, OAR_ERR_INVALID, "attr ksize must be set (3 values: depth, height, width)");
    const int sp = a->ndhwc ? 1 : 2;   /* the first spatial dim */
    const int64_t in[3] = {x[sp], x[sp + 1], x[sp + 2]};
    oar_pool3d_win_t g;
    const int r = oar_win_pool3d_plan(a->algo, a->global, a->adaptive, a->ceil_mode, in, a->ks, a->st, a->pd, &g);
    static const char *const dims[] = {"depth", "height", "width"};
    if (r == OAR_WIN_OVERFLOW)
        return oar_ic_error(c, OAR_ERR_SHAPE, "X ('%s') %s is too large", oar_ic_in_name(c, "X", 0), xs);
    if (r == OAR_WIN_EMPTY)
        return oar_ic_error(c, OAR_ERR_SHAPE, "output %s would be empty: X ('%s') %s, ksize %lld, stride %lld, "
                            "paddings %lld + %lld", dims[g.bad], oar_ic_in_name(c, "X", 0), xs,
                            (long long)g.ks[g.bad], (long long)g.st[g.bad], (long long)g.pd[2 * g.bad],
                            (long long)g.pd[2 * g.bad + 1]);
    int64_t out[5] = {x[0], x[1], x[2], x[3], x[4]};
    for (int i = 0; i < 3; i++) out[sp + i] = g.out[i];
    OAR_TRY(oar_ic_set_out(c, "Out", 0, out, 5, oar_ic_in_dtype(c, "X", 0)));
    return oar_ic_share_lod(c, "X", 0, "Out", 0);
}

#define OAR_OPS_DEFINE
#include "ops/vision.h"   /* the tables, decoders and registrations */
