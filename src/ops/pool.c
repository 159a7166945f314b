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
    if (global) { ks[0] = x[2]; ks[1] = x[3]; }
    else if (ks[0] == 0)
        return oar_ic_error(c, OAR_ERR_INVALID, "attr ksize must be set (2 values: height, width)");
    /* SAME/VALID pads depend on both spatial sizes; unknown ones leave the output unknown */
    static const char *const algo_names[] = {"EXPLICIT", "SAME", "VALID"};
    const int64_t probe[2] = {x[2] < 0 ? 1 : x[2], x[3] < 0 ? 1 : x[3]};
    if (!global) oar_win_resolve_pads(algo_names[a->algo], probe, ks, st, pd, NULL);
    const bool explicit_pads = a->algo == OAR_POOL_ALGO_EXPLICIT;
    if (global) pd[0] = pd[1] = pd[2] = pd[3] = 0;
    int64_t out[4] = {x[0], x[1], -1, -1};
    for (int i = 0; i < 2; i++) {
        if (global) { out[2 + i] = 1; continue; }
        if (adaptive) { out[2 + i] = ks[i]; continue; }
        int64_t in = x[2 + i];
        if (in < 0 || (!explicit_pads && (x[2] < 0 || x[3] < 0))) continue;
        if (in > INT64_MAX / 4)
            return oar_ic_error(c, OAR_ERR_SHAPE, "X '%s' %s is too large", oar_ic_in_name(c, "X", 0), xs);
        int64_t room = in + pd[2 * i] + pd[2 * i + 1] - ks[i];
        if (ceil_mode) room += st[i] - 1;
        int64_t o = room < 0 ? 0 : room / st[i] + 1;
        if (o <= 0)
            return oar_ic_error(c, OAR_ERR_SHAPE,
                                "output %s would be empty: X '%s' %s, ksize {%lld, %lld}, strides {%lld, %lld}, "
                                "paddings {%lld, %lld, %lld, %lld}, ceil_mode %s",
                                i == 0 ? "height" : "width", oar_ic_in_name(c, "X", 0), xs,
                                (long long)ks[0], (long long)ks[1], (long long)st[0], (long long)st[1],
                                (long long)pd[0], (long long)pd[1], (long long)pd[2], (long long)pd[3],
                                ceil_mode ? "true" : "false");
        out[2 + i] = o;
    }
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
