/* pool.c — pool2d (max/avg over NCHW or NHWC windows) and pool2d_grad.
 * Kernels in kernels/cpu/pool.c; slots and decoded attributes in pool.h. */
#include "op.h"
#include "paddle_attrs.h"
#include "pool.h"
#include "window.h"

#include <string.h>

static const oar_slot_def_t pool_in[] = {{"X", 0}, {NULL, 0}};
static const oar_slot_def_t pool_out[] = {{"Out", 0}, {NULL, 0}};
static const oar_slot_def_t pool_grad_in[] = {{"X", 0}, {"Out", 0}, {"Out@GRAD", 0}, {NULL, 0}};
static const oar_slot_def_t pool_grad_out[] = {{"X@GRAD", OAR_SLOT_DISPENSABLE}, {NULL, 0}};

/* Fluid 1.x attrs; strides and paddings default to {1,1} / {0,0} when empty. */
static const oar_attr_def_t pool_attrs[] = {
    {.name = "pooling_type", .type = OAR_ATTR_STRING, .required = true, .choices = OAR_POOL_CHOICES},
    {.name = "ksize", .type = OAR_ATTR_INTS},
    {.name = "global_pooling", .type = OAR_ATTR_BOOLEAN, .def = 0},
    {.name = "strides", .type = OAR_ATTR_INTS},
    {.name = "paddings", .type = OAR_ATTR_INTS},
    {.name = "exclusive", .type = OAR_ATTR_BOOLEAN, .def = 1},
    {.name = "adaptive", .type = OAR_ATTR_BOOLEAN, .def = 0},
    {.name = "use_cudnn", .type = OAR_ATTR_BOOLEAN, .def = 0},
    {.name = "ceil_mode", .type = OAR_ATTR_BOOLEAN, .def = 0},
    {.name = "use_mkldnn", .type = OAR_ATTR_BOOLEAN, .def = 0},
    {.name = "use_quantizer", .type = OAR_ATTR_BOOLEAN, .def = 0},
    {.name = "data_format", .type = OAR_ATTR_STRING, .def_str = "NCHW", .choices = OAR_FMT_CHOICES},
    {.name = "padding_algorithm", .type = OAR_ATTR_STRING, .def_str = "EXPLICIT", .choices = OAR_PAD_CHOICES},
    {.name = "is_test", .type = OAR_ATTR_BOOLEAN, .def = 0},
    OAR_PA_MKLDNN_DT, OAR_PA_ONEDNN,
    {.name = NULL}};

static int ints2(oar_infer_ctx_t *c, const char *name, int32_t def, int32_t lo, int64_t out[2]) {
    int n = 0;
    const int32_t *v = oar_attr_ints(oar_ic_op(c), name, &n);
    if (n == 0) {
        if (def < 0) return oar_ic_error(c, OAR_ERR_INVALID, "attr %s must be set (2 values: height, width)", name);
        out[0] = out[1] = def;
        return OAR_OK;
    }
    if (n != 2)
        return oar_ic_error(c, OAR_ERR_INVALID, "attr %s must hold 2 values (height, width), got %d", name, n);
    if (v[0] < lo || v[1] < lo)
        return oar_ic_error(c, OAR_ERR_INVALID, "attr %s = {%d, %d}: each value must be >= %d",
                            name, (int)v[0], (int)v[1], (int)lo);
    out[0] = v[0]; out[1] = v[1];
    return OAR_OK;
}

static int pool_infer(oar_infer_ctx_t *c) {
    const oar_op_desc_t *op = oar_ic_op(c);
    const char *type = oar_attr_s(op, "pooling_type");
    if (!type || (strcmp(type, "max") != 0 && strcmp(type, "avg") != 0))
        return oar_ic_error(c, OAR_ERR_INVALID, "attr pooling_type = \"%s\" must be \"max\" or \"avg\"",
                            type ? type : "");
    const char *fmt = oar_attr_s(op, "data_format");
    if (fmt && fmt[0] && oar_attr_choice_index(OAR_FMT_CHOICES, fmt) < 0)
        return oar_ic_error(c, OAR_ERR_UNSUPPORTED,
                            "attr data_format = \"%s\" is not supported; \"NCHW\" or \"NHWC\" is", fmt);
    const bool nhwc = fmt && strcmp(fmt, "NHWC") == 0;
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
    bool global = oar_attr_b(op, "global_pooling"), adaptive = oar_attr_b(op, "adaptive");
    bool ceil_mode = oar_attr_b(op, "ceil_mode");
    int64_t ks[2], st[2], pd[4];
    if (global) { ks[0] = x[2]; ks[1] = x[3]; }
    else OAR_TRY(ints2(c, "ksize", -1, 1, ks));
    OAR_TRY(ints2(c, "strides", 1, 1, st));
    int np = 0;
    const int32_t *p = oar_attr_ints(op, "paddings", &np);
    if (np == 0) pd[0] = pd[1] = pd[2] = pd[3] = 0;
    else if (np == 2) { pd[0] = pd[1] = p[0]; pd[2] = pd[3] = p[1]; }
    else if (np == 4) { for (int i = 0; i < 4; i++) pd[i] = p[i]; }
    else return oar_ic_error(c, OAR_ERR_INVALID,
                             "attr paddings must hold 2 values {h, w} or 4 {top, bottom, left, right}, got %d", np);
    for (int i = 0; i < 4; i++)
        if (pd[i] < 0) return oar_ic_error(c, OAR_ERR_INVALID, "attr paddings must be >= 0");
    /* SAME/VALID pads depend on both spatial sizes; unknown ones leave the output unknown */
    const char *algo = oar_attr_s(op, "padding_algorithm");
    const int64_t probe[2] = {x[2] < 0 ? 1 : x[2], x[3] < 0 ? 1 : x[3]};
    if (!global && !oar_win_resolve_pads(algo, probe, ks, st, pd, NULL))
        return oar_ic_error(c, OAR_ERR_INVALID,
                            "attr padding_algorithm = \"%s\" must be \"EXPLICIT\", \"SAME\" or \"VALID\"", algo);
    const bool explicit_pads = !algo || !algo[0] || strcmp(algo, "EXPLICIT") == 0;
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

static int pool_decode(oar_decode_ctx_t *d, void *out) {
    oar_pool_attrs_t *a = out;
    a->type = oar_dec_choice(d, "pooling_type");
    a->global = oar_dec_b(d, "global_pooling");
    a->exclusive = oar_dec_b(d, "exclusive");
    a->adaptive = oar_dec_b(d, "adaptive");
    a->ceil_mode = oar_dec_b(d, "ceil_mode");
    a->nhwc = oar_dec_choice(d, "data_format") == OAR_FMT_NHWC;
    a->algo = oar_dec_choice(d, "padding_algorithm");
    if (!a->global) oar_conv_dec_pair(d, "ksize", 0, 1, a->ks);
    oar_conv_dec_pair(d, "strides", 1, 1, a->st);
    oar_conv_dec_pads(d, a->pd);
    return oar_dec_status(d);
}

static int pool_grad_infer(oar_infer_ctx_t *c) {
    if (oar_ic_out_count(c, "X@GRAD") < 1) return OAR_OK;
    const char *n = oar_ic_out_name(c, "X@GRAD", 0);
    if (!n || strcmp(n, OAR_EMPTY_VAR) == 0) return OAR_OK;
    return oar_infer_grad_like_inputs(c);
}

static const oar_op_def_t pool2d_def = {
    .type = "pool2d", .inputs = pool_in, .outputs = pool_out, .attrs = pool_attrs,
    .infer = pool_infer, .grad = oar_grad_default,
    .attrs_size = sizeof(oar_pool_attrs_t), .decode = pool_decode,
    .flags = OAR_OP_WRITES_OUTPUTS};   /* every window writes its output, empty ones 0 */
OAR_REGISTER_OP(pool2d_def)

static const oar_op_def_t pool2d_grad_def = {
    .type = "pool2d_grad", .inputs = pool_grad_in, .outputs = pool_grad_out, .attrs = pool_attrs,
    .infer = pool_grad_infer, .grad = NULL, .dtype_slot = "X",
    .attrs_size = sizeof(oar_pool_attrs_t), .decode = pool_decode};
OAR_REGISTER_OP(pool2d_grad_def)
