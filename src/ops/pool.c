/* pool.c — inference of pool2d (max/avg over NCHW or NHWC windows) and
 * pool2d_grad; the ops themselves (slots, attributes, docs) are declared in
 * pool.ops. Kernels in kernels/cpu/pool.c and kernels/cuda/pool.cu. */
#include "op.h"
#include "ops/pool.h"   /* generated from pool.ops: slots, oar_pool_attrs_t */
#include "window.h"

#include <string.h>

/* the decoder's last step: ksize, strides and paddings into fixed arrays
 * (each checked; the first failure is the decode's) */
static void pool_finish(oar_decode_ctx_t *d, oar_pool_attrs_t *a) {
    if (!a->global) oar_conv_dec_pair(d, "ksize", 0, 1, a->ks);
    oar_conv_dec_pair(d, "strides", 1, 1, a->st);
    oar_conv_dec_pads(d, a->pd);
}

static int pool_infer(oar_infer_ctx_t *c) {
    const oar_pool_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const bool nhwc = a->nhwc;
    int xn;
    const int64_t *xr = oar_ic_in_dims(c, "X", 0, &xn);
    if (!xr) return OAR_ERR_SHAPE;
    char xs[128];
    oar_shape_str(xr, xn, xs, sizeof xs);
    if (xn != 4)
        return oar_ic_error(c, OAR_ERR_SHAPE, "X '%s' must be 4-D %s, got shape %s", oar_ic_in_name(c, "X", 0),
                            nhwc ? "NHWC" : "NCHW", xs);
    /* the checks below read x in NCHW order */
    const int64_t xv[4] = {xr[0], nhwc ? xr[3] : xr[1], nhwc ? xr[1] : xr[2], nhwc ? xr[2] : xr[3]};
    const int64_t *x = xv;
    const bool global = a->global, adaptive = a->adaptive, ceil_mode = a->ceil_mode;
    /* the decoder checked ksize (2 values, each >= 1), strides and paddings;
     * it leaves ksize {0, 0} when unset, which only global pooling allows */
    int64_t ks[2] = {a->ks[0], a->ks[1]}, st[2] = {a->st[0], a->st[1]};
    int64_t pd[4] = {a->pd[0], a->pd[1], a->pd[2], a->pd[3]};
    if (!global && ks[0] == 0)
        return oar_ic_error(c, OAR_ERR_INVALID, "attr ksize must be set (2 values: height, width)");
    /* the geometry every place's kernels use (window.h); unknown sizes leave the output unknown */
    oar_pool_win_t g;
    const int64_t in_hw[2] = {x[2], x[3]};
    const int r = oar_win_pool_plan(a->algo, global, adaptive, ceil_mode, in_hw, ks, st, pd, &g);
    if (r == OAR_WIN_OVERFLOW)
        return oar_ic_error(c, OAR_ERR_SHAPE, "X '%s' %s is too large", oar_ic_in_name(c, "X", 0), xs);
    if (r == OAR_WIN_EMPTY)
        return oar_ic_error(c, OAR_ERR_SHAPE,
                            "output %s would be empty: X '%s' %s, ksize {%lld, %lld}, strides {%lld, %lld}, "
                            "paddings {%lld, %lld, %lld, %lld}, ceil_mode %s",
                            g.bad == 0 ? "height" : "width", oar_ic_in_name(c, "X", 0), xs,
                            (long long)g.ks[0], (long long)g.ks[1], (long long)g.st[0], (long long)g.st[1],
                            (long long)g.pd[0], (long long)g.pd[1], (long long)g.pd[2], (long long)g.pd[3],
                            ceil_mode ? "true" : "false");
    const int64_t out[4] = {x[0], x[1], g.out[0], g.out[1]};
    if (nhwc) {
        const int64_t o[4] = {out[0], out[2], out[3], out[1]};
        OAR_TRY(oar_ic_set_out(c, "Out", 0, o, 4, oar_ic_in_dtype(c, "X", 0)));
    } else {
        OAR_TRY(oar_ic_set_out(c, "Out", 0, out, 4, oar_ic_in_dtype(c, "X", 0)));
    }
    return oar_ic_share_lod(c, "X", 0, "Out", 0);
}

static int pool_grad_infer(oar_infer_ctx_t *c) {
    if (oar_ic_out_count(c, "X@GRAD") < 1) return OAR_OK;
    const char *n = oar_ic_out_name(c, "X@GRAD", 0);
    if (!n || strcmp(n, OAR_EMPTY_VAR) == 0) return OAR_OK;
    return oar_infer_grad_like_inputs(c);
}

#define OAR_OPS_DEFINE
#include "ops/pool.h"   /* the tables, the decoders and the registrations */
