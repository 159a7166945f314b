/* conv.c — conv2d and depthwise_conv2d (NCHW or NHWC) with their grad ops.
 * Kernels in kernels/cpu/conv.c (im2col + GEMM); slots and the decoded
 * attributes in conv.h. */
#include "op.h"
#include "paddle_attrs.h"
#include "conv.h"
#include "window.h"

#include <stdio.h>
#include <string.h>

static const oar_slot_def_t conv_in[] = {{"Input", 0}, {"Filter", 0}, {NULL, 0}};
static const oar_slot_def_t conv_out[] = {{"Output", 0}, {NULL, 0}};
static const oar_slot_def_t conv_grad_in[] = {
    {"Input", 0}, {"Filter", 0}, {"Output@GRAD", 0}, {NULL, 0}};
static const oar_slot_def_t conv_grad_out[] = {
    {"Input@GRAD", OAR_SLOT_DISPENSABLE}, {"Filter@GRAD", OAR_SLOT_DISPENSABLE}, {NULL, 0}};

/* Fluid 1.x attrs; the list attrs default to {1,1}/{0,0}/{1,1} when empty. */
static const oar_attr_def_t conv_attrs[] = {
    {.name = "strides", .type = OAR_ATTR_INTS},
    {.name = "paddings", .type = OAR_ATTR_INTS},
    {.name = "dilations", .type = OAR_ATTR_INTS},
    {.name = "groups", .type = OAR_ATTR_INT, .def = 1, .min = 1, .max = 2147483647.0},
    {.name = "data_format", .type = OAR_ATTR_STRING, .def_str = "NCHW", .choices = OAR_FMT_CHOICES},
    {.name = "padding_algorithm", .type = OAR_ATTR_STRING, .def_str = "EXPLICIT", .choices = OAR_PAD_CHOICES},
    {.name = "use_cudnn", .type = OAR_ATTR_BOOLEAN, .def = 1},
    {.name = "use_mkldnn", .type = OAR_ATTR_BOOLEAN, .def = 0},
    {.name = "workspace_size_MB", .type = OAR_ATTR_INT, .def = 512},
    {.name = "exhaustive_search", .type = OAR_ATTR_BOOLEAN, .def = 0},
    OAR_PA_B("is_test", 0), OAR_PA_QUANTIZER, OAR_PA_MKLDNN_DT, OAR_PA_ONEDNN, OAR_PA_CONV_FUSION,
    {.name = NULL}};

/* attr list of 2 values (empty -> def) */
static int pair_attr(oar_infer_ctx_t *c, const char *name, int32_t def, int32_t lo, int64_t out[2]) {
    int n = 0;
    const int32_t *v = oar_attr_ints(oar_ic_op(c), name, &n);
    if (n == 0) { out[0] = out[1] = def; return OAR_OK; }
    if (n != 2)
        return oar_ic_error(c, OAR_ERR_INVALID, "attr %s must hold 2 values (height, width), got %d", name, n);
    for (int i = 0; i < 2; i++) {
        if (v[i] < lo)
            return oar_ic_error(c, OAR_ERR_INVALID, "attr %s = {%d, %d}: each value must be >= %d",
                                name, (int)v[0], (int)v[1], (int)lo);
        out[i] = v[i];
    }
    return OAR_OK;
}

/* paddings: {h, w} or {top, bottom, left, right} -> out[4] in the latter order */
static int pads_attr(oar_infer_ctx_t *c, int64_t out[4]) {
    int n = 0;
    const int32_t *v = oar_attr_ints(oar_ic_op(c), "paddings", &n);
    if (n == 0) { out[0] = out[1] = out[2] = out[3] = 0; return OAR_OK; }
    if (n == 2) { out[0] = out[1] = v[0]; out[2] = out[3] = v[1]; }
    else if (n == 4) { for (int i = 0; i < 4; i++) out[i] = v[i]; }
    else return oar_ic_error(c, OAR_ERR_INVALID,
                             "attr paddings must hold 2 values {h, w} or 4 {top, bottom, left, right}, got %d", n);
    for (int i = 0; i < 4; i++)
        if (out[i] < 0)
            return oar_ic_error(c, OAR_ERR_INVALID, "attr paddings must be >= 0, got %lld at %d",
                                (long long)out[i], i);
    return OAR_OK;
}

static int conv_infer(oar_infer_ctx_t *c) {
    const oar_op_desc_t *op = oar_ic_op(c);
    const char *fmt = oar_attr_s(op, "data_format");
    /* Fluid 1.x programs write "AnyLayout" for the default NCHW */
    if (fmt && fmt[0] && oar_attr_choice_index(OAR_FMT_CHOICES, fmt) < 0)
        return oar_ic_error(c, OAR_ERR_UNSUPPORTED,
                            "attr data_format = \"%s\" is not supported; \"NCHW\" or \"NHWC\" is", fmt);
    const bool nhwc = fmt && strcmp(fmt, "NHWC") == 0;
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
    int64_t st[2], dl[2], pd[4];
    OAR_TRY(pair_attr(c, "strides", 1, 1, st));
    OAR_TRY(pair_attr(c, "dilations", 1, 1, dl));
    OAR_TRY(pads_attr(c, pd));
    int64_t groups = oar_attr_i(op, "groups");
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
    /* SAME/VALID pads depend on both spatial sizes; unknown ones leave the output unknown */
    const char *algo = oar_attr_s(op, "padding_algorithm");
    const int64_t probe[2] = {x[2] < 0 ? 1 : x[2], x[3] < 0 ? 1 : x[3]};
    if (!oar_win_resolve_pads(algo, probe, &w[2], st, pd, dl))
        return oar_ic_error(c, OAR_ERR_INVALID,
                            "attr padding_algorithm = \"%s\" must be \"EXPLICIT\", \"SAME\" or \"VALID\"", algo);
    const bool explicit_pads = !algo || !algo[0] || strcmp(algo, "EXPLICIT") == 0;
    int64_t out[4] = {x[0], w[0], -1, -1};
    for (int i = 0; i < 2; i++) {
        int64_t in = x[2 + i], k = w[2 + i];
        if (in < 0 || k < 0 || (!explicit_pads && (x[2] < 0 || x[3] < 0))) continue;
        if (in == 0)
            return oar_ic_error(c, OAR_ERR_SHAPE, "Input '%s' %s has an empty spatial dimension",
                                oar_ic_in_name(c, "Input", 0), xs);
        int64_t span;
        if (oar_mul_checked(dl[i], k - 1, &span) || span >= INT64_MAX / 2 || in > INT64_MAX / 4)
            return oar_ic_error(c, OAR_ERR_SHAPE, "sizes overflow: Input '%s' %s, Filter '%s' %s, dilations {%lld, %lld}",
                                oar_ic_in_name(c, "Input", 0), xs, oar_ic_in_name(c, "Filter", 0), ws,
                                (long long)dl[0], (long long)dl[1]);
        span += 1;
        int64_t room = in + pd[2 * i] + pd[2 * i + 1] - span;
        if (room < 0)
            return oar_ic_error(c, OAR_ERR_SHAPE,
                                "output %s would be empty: Input '%s' %s, Filter '%s' %s, strides {%lld, %lld}, "
                                "paddings {%lld, %lld, %lld, %lld}, dilations {%lld, %lld}: the dilated filter "
                                "(%lld) is larger than the padded input (%lld)",
                                i == 0 ? "height" : "width", oar_ic_in_name(c, "Input", 0), xs,
                                oar_ic_in_name(c, "Filter", 0), ws, (long long)st[0], (long long)st[1],
                                (long long)pd[0], (long long)pd[1], (long long)pd[2], (long long)pd[3],
                                (long long)dl[0], (long long)dl[1], (long long)span,
                                (long long)(in + pd[2 * i] + pd[2 * i + 1]));
        out[2 + i] = room / st[i] + 1;
    }
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

static int conv_decode(oar_decode_ctx_t *d, void *out) {
    oar_conv_attrs_t *a = out;
    oar_conv_dec_pair(d, "strides", 1, 1, a->st);
    oar_conv_dec_pair(d, "dilations", 1, 1, a->dl);
    oar_conv_dec_pads(d, a->pd);
    a->groups = oar_dec_i(d, "groups");
    a->algo = oar_dec_choice(d, "padding_algorithm");
    a->nhwc = oar_dec_choice(d, "data_format") == OAR_FMT_NHWC;
    a->workspace_mb = oar_dec_i(d, "workspace_size_MB");
    return oar_dec_status(d);
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

static int conv_grad_maker(oar_grad_ctx_t *g) {
    oar_op_desc_t *op = oar_gc_new_grad_op(g);
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "Input"));
    OAR_TRY(oar_gc_in(g, op, "Filter"));
    OAR_TRY(oar_gc_out_grad(g, op, "Output"));
    OAR_TRY(oar_gc_in_grad(g, op, "Input"));
    OAR_TRY(oar_gc_in_grad(g, op, "Filter"));
    return OAR_OK;
}

static const oar_op_def_t conv2d_def = {
    .type = "conv2d", .inputs = conv_in, .outputs = conv_out, .attrs = conv_attrs,
    .infer = conv_infer, .grad = conv_grad_maker, .dtype_slot = "Input",
    .attrs_size = sizeof(oar_conv_attrs_t), .decode = conv_decode,
    .flags = OAR_OP_WRITES_OUTPUTS};
OAR_REGISTER_OP(conv2d_def)

static const oar_op_def_t conv2d_grad_def = {
    .type = "conv2d_grad", .inputs = conv_grad_in, .outputs = conv_grad_out, .attrs = conv_attrs,
    .infer = conv_grad_infer, .grad = NULL, .dtype_slot = "Input",
    .attrs_size = sizeof(oar_conv_attrs_t), .decode = conv_decode};
OAR_REGISTER_OP(conv2d_grad_def)

/* Fluid's layer picks depthwise_conv2d when groups == channels; the CPU
 * kernels are the grouped conv2d kernels. The forward kernels write every
 * output element (GEMMs with beta 0; the depthwise path clears each map
 * before its taps accumulate): OAR_OP_WRITES_OUTPUTS. */
static const oar_op_def_t depthwise_conv2d_def = {
    .type = "depthwise_conv2d", .inputs = conv_in, .outputs = conv_out, .attrs = conv_attrs,
    .infer = conv_infer, .grad = conv_grad_maker, .dtype_slot = "Input",
    .attrs_size = sizeof(oar_conv_attrs_t), .decode = conv_decode,
    .flags = OAR_OP_WRITES_OUTPUTS};
OAR_REGISTER_OP(depthwise_conv2d_def)

static const oar_op_def_t depthwise_conv2d_grad_def = {
    .type = "depthwise_conv2d_grad", .inputs = conv_grad_in, .outputs = conv_grad_out,
    .attrs = conv_attrs, .infer = conv_grad_infer, .grad = NULL, .dtype_slot = "Input",
    .attrs_size = sizeof(oar_conv_attrs_t), .decode = conv_decode};
OAR_REGISTER_OP(depthwise_conv2d_grad_def)
