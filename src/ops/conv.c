/* conv.c — inference and grad maker of conv2d and depthwise_conv2d (NCHW or
 * NHWC) and their grad ops; the ops themselves (slots, attributes, docs)
 * are declared in conv.ops. Kernels in kernels/cpu/conv.c (im2col + GEMM)
 * and kernels/cuda/conv.cu. Also the decoders' helpers for 2-value and
 * padding lists that pool2d shares (window.h). */
#include "op.h"
#include "ops/conv.h"   /* generated from conv.ops: slots, oar_conv_attrs_t */
#include "ops/conv_grad.h"
#include "window.h"
#include "ops/double_grad_makers.h"

#include <stdio.h>
#include <string.h>

static int conv_infer(oar_infer_ctx_t *c) {
    const oar_conv_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const bool nhwc = a->nhwc;
    int xn, wn;
    const int64_t *xr = oar_ic_in_dims(c, "Input", 0, &xn);
    if (!xr) return OAR_ERR_SHAPE;
    /* the checks below read x in NCHW order */
    int64_t xv[4] = {0, 0, 0, 0};
    if (xn == 4) {
        if (nhwc) { xv[0] = xr[0]; xv[1] = xr[3]; xv[2] = xr[1]; xv[3] = xr[2]; }
        else for (int i = 0; i < 4; i++) xv[i] = xr[i];
    }
    const int64_t *x = xn == 4 ? xv : xr;
    const int64_t *w = oar_ic_in_dims(c, "Filter", 0, &wn);
    if (!w) return OAR_ERR_SHAPE;
    char xs[128], ws[128];
    oar_shape_str(xr, xn, xs, sizeof xs);
    oar_shape_str(w, wn, ws, sizeof ws);
    if (xn != 4)
        return oar_ic_error(c, OAR_ERR_SHAPE, "Input '%s' must be 4-D %s, got shape %s",
                            oar_ic_in_name(c, "Input", 0), nhwc ? "NHWC" : "NCHW", xs);
    if (wn != 4)
        return oar_ic_error(c, OAR_ERR_SHAPE, "Filter '%s' must be 4-D [M, C/groups, kh, kw], got shape %s",
                            oar_ic_in_name(c, "Filter", 0), ws);
    int xdt = oar_ic_in_dtype(c, "Input", 0), wdt = oar_ic_in_dtype(c, "Filter", 0);
    if (xdt >= 0 && wdt >= 0 && xdt != wdt)
        return oar_ic_error(c, OAR_ERR_DTYPE, "Input '%s' is %s but Filter '%s' is %s; they must match",
                            oar_ic_in_name(c, "Input", 0), oar_dtype_name(xdt),
                            oar_ic_in_name(c, "Filter", 0), oar_dtype_name(wdt));
    /* the decoder checked strides, dilations (2 values, each >= 1) and
     * paddings (2 or 4 values, each >= 0); the declaration bounds groups */
    int64_t st[2] = {a->st[0], a->st[1]}, dl[2] = {a->dl[0], a->dl[1]};
    int64_t pd[4] = {a->pd[0], a->pd[1], a->pd[2], a->pd[3]};
    const int64_t groups = a->groups;
    if (groups < 1) return oar_ic_error(c, OAR_ERR_INVALID, "attr groups = %lld must be >= 1", (long long)groups);
    for (int i = 0; i < 4; i++)
        if (w[i] == 0)
            return oar_ic_error(c, OAR_ERR_SHAPE, "Filter '%s' has an empty dimension: shape %s",
                                oar_ic_in_name(c, "Filter", 0), ws);
    int64_t need_c = -1;
    if (w[1] >= 0 && oar_mul_checked(w[1], groups, &need_c))
        return oar_ic_error(c, OAR_ERR_SHAPE, "Filter '%s' %s with groups = %lld overflows the channel count",
                            oar_ic_in_name(c, "Filter", 0), ws, (long long)groups);
    if (x[1] >= 0 && w[1] >= 0 && x[1] != need_c)
        return oar_ic_error(c, OAR_ERR_SHAPE,
                            "Input '%s' %s has %lld channels but Filter '%s' %s with groups = %lld expects "
                            "Filter[1] * groups = %lld",
                            oar_ic_in_name(c, "Input", 0), xs, (long long)x[1],
                            oar_ic_in_name(c, "Filter", 0), ws, (long long)groups, (long long)need_c);
    if (w[0] >= 0 && w[0] % groups != 0)
        return oar_ic_error(c, OAR_ERR_SHAPE, "Filter '%s' %s: %lld output channels are not divisible by groups = %lld",
                            oar_ic_in_name(c, "Filter", 0), ws, (long long)w[0], (long long)groups);
    /* the geometry every place's kernels use (window.h); unknown sizes leave the output unknown */
    oar_conv_win_t g;
    const int64_t in_hw[2] = {x[2], x[3]};
    const int r = oar_win_conv_plan(a->algo, in_hw, &w[2], st, dl, pd, &g);
    const int i = g.bad;
    if (r == OAR_WIN_NO_INPUT)
        return oar_ic_error(c, OAR_ERR_SHAPE, "Input '%s' %s has an empty spatial dimension",
                            oar_ic_in_name(c, "Input", 0), xs);
    if (r == OAR_WIN_OVERFLOW)
        return oar_ic_error(c, OAR_ERR_SHAPE, "sizes overflow: Input '%s' %s, Filter '%s' %s, dilations {%lld, %lld}",
                            oar_ic_in_name(c, "Input", 0), xs, oar_ic_in_name(c, "Filter", 0), ws,
                            (long long)g.dl[0], (long long)g.dl[1]);
    if (r == OAR_WIN_EMPTY)
        return oar_ic_error(c, OAR_ERR_SHAPE,
                            "output %s would be empty: Input '%s' %s, Filter '%s' %s, strides {%lld, %lld}, "
                            "paddings {%lld, %lld, %lld, %lld}, dilations {%lld, %lld}: the dilated filter "
                            "(%lld) is larger than the padded input (%lld)",
                            i == 0 ? "height" : "width", oar_ic_in_name(c, "Input", 0), xs,
                            oar_ic_in_name(c, "Filter", 0), ws, (long long)g.st[0], (long long)g.st[1],
                            (long long)g.pd[0], (long long)g.pd[1], (long long)g.pd[2], (long long)g.pd[3],
                            (long long)g.dl[0], (long long)g.dl[1], (long long)g.span,
                            (long long)(x[2 + i] + g.pd[2 * i] + g.pd[2 * i + 1]));
    const int64_t out[4] = {x[0], w[0], g.out[0], g.out[1]};
    if (nhwc) {
        const int64_t o[4] = {out[0], out[2], out[3], out[1]};
        return oar_ic_set_out(c, "Output", 0, o, 4, xdt);
    }
    return oar_ic_set_out(c, "Output", 0, out, 4, xdt);
}

/* ---- decoding ------------------------------------------------------------ */
int oar_conv_dec_pair(oar_decode_ctx_t *d, const char *name, int64_t def, int64_t lo, int64_t out[2]) {
    oar_ints_t v = oar_dec_ints(d, name);
    if (v.n == 0) { out[0] = out[1] = def; return OAR_OK; }
    if (v.n != 2)
        return oar_dec_error(d, OAR_ERR_INVALID, "attr %s must hold 2 values (height, width), got %d", name, v.n);
    if (v.v[0] < lo || v.v[1] < lo)
        return oar_dec_error(d, OAR_ERR_INVALID, "attr %s = {%d, %d}: each value must be >= %lld", name,
                             (int)v.v[0], (int)v.v[1], (long long)lo);
    out[0] = v.v[0]; out[1] = v.v[1];
    return OAR_OK;
}

int oar_conv_dec_pads(oar_decode_ctx_t *d, int64_t out[4]) {
    oar_ints_t v = oar_dec_ints(d, "paddings");
    if (v.n == 0) { out[0] = out[1] = out[2] = out[3] = 0; return OAR_OK; }
    if (v.n == 2) { out[0] = out[1] = v.v[0]; out[2] = out[3] = v.v[1]; }
    else if (v.n == 4) { for (int i = 0; i < 4; i++) out[i] = v.v[i]; }
    else return oar_dec_error(d, OAR_ERR_INVALID,
                              "attr paddings must hold 2 values {h, w} or 4 {top, bottom, left, right}, got %d", v.n);
    for (int i = 0; i < 4; i++)
        if (out[i] < 0) return oar_dec_error(d, OAR_ERR_INVALID, "attr paddings must be >= 0, got %lld at %d",
                                             (long long)out[i], i);
    return OAR_OK;
}

/* the decoders' last step: strides, dilations and paddings into fixed arrays */
static void conv_finish(oar_decode_ctx_t *d, oar_conv_attrs_t *a) {
    oar_conv_dec_pair(d, "strides", 1, 1, a->st);
    oar_conv_dec_pair(d, "dilations", 1, 1, a->dl);
    oar_conv_dec_pads(d, a->pd);
}

static int conv_grad_infer(oar_infer_ctx_t *c) {
    int n;
    if (!oar_ic_in_dims(c, "Output@GRAD", 0, &n)) return OAR_ERR_SHAPE;
    if (n != 4)
        return oar_ic_error(c, OAR_ERR_SHAPE, "Output@GRAD '%s' must be 4-D, got %d dims",
                            oar_ic_in_name(c, "Output@GRAD", 0), n);
    if (!oar_ic_out_present(c, "Input@GRAD") && !oar_ic_out_present(c, "Filter@GRAD")) return OAR_OK;
    return oar_infer_grad_like_inputs(c);
}

static int conv_grad_maker(oar_grad_ctx_t *g) { return oar_conv_grad_maker(g); }

/* conv2d_grad_grad: DDOutput like DOutput, DInput like Input, DFilter like Filter */
static int conv_gg_infer(oar_infer_ctx_t *c) {
    static const char *const like[][2] = { { "DDOutput", "DOutput" }, { "DInput", "Input" }, { "DFilter", "Filter" } };
    if (oar_ic_in_present(c, "DDInput")) OAR_TRY(oar_ic_check_same_dims(c, "DDInput", "Input"));
    if (oar_ic_in_present(c, "DDFilter")) OAR_TRY(oar_ic_check_same_dims(c, "DDFilter", "Filter"));
    for (int i = 0; i < 3; i++) {
        if (!oar_ic_out_present(c, like[i][0])) continue;
        int n;
        const int64_t *d = oar_ic_in_dims(c, like[i][1], 0, &n);
        if (!d) return OAR_ERR_SHAPE;
        int64_t dims[OAR_MAX_DIMS];
        memcpy(dims, d, sizeof(int64_t) * (size_t)n);
        OAR_TRY(oar_ic_set_out(c, like[i][0], 0, dims, n, oar_ic_in_dtype(c, like[i][1], 0)));
    }
    return OAR_OK;
}

#define OAR_OPS_DEFINE
#include "ops/conv.h"   /* the tables, the decoders and the registrations */
