/*
 * conv_transpose.c — conv2d_transpose and depthwise_conv2d_transpose
 * (Fluid 1.8 / Paddle 2.x, NCHW) and their grad ops. Kernels in
 * kernels/cpu/conv_transpose.c; geometry in conv_transpose.h.
 *
 * Output [N, C_out, OH, OW] with OH = (H - 1) stride - pad_top - pad_bottom
 * + dilation (kh - 1) + 1 (+ output_padding, or output_size when given).
 */
#include <string.h>
#include "op.h"
#include "paddle_attrs.h"
#include "conv_transpose.h"

static const oar_slot_def_t ct_in[] = {
    /* Bias: only Paddle's oneDNN kernel reads it; refused when given */
    {"Input", 0}, {"Filter", 0}, {"Bias", OAR_SLOT_DISPENSABLE}, {NULL, 0}};
static const oar_slot_def_t ct_out[] = {{"Output", 0}, {NULL, 0}};
static const oar_slot_def_t ct_grad_in[] = {{"Input", 0}, {"Filter", 0}, {"Output@GRAD", 0}, {NULL, 0}};
static const oar_slot_def_t ct_grad_out[] = {
    {"Input@GRAD", OAR_SLOT_DISPENSABLE}, {"Filter@GRAD", OAR_SLOT_DISPENSABLE}, {NULL, 0}};

static const oar_attr_def_t ct_attrs[] = {
    OAR_PA_L("strides", OAR_ATTR_INTS), OAR_PA_L("paddings", OAR_ATTR_INTS),
    OAR_PA_L("dilations", OAR_ATTR_INTS), OAR_PA_L("output_padding", OAR_ATTR_INTS),
    OAR_PA_L("output_size", OAR_ATTR_INTS),
    {"groups", OAR_ATTR_INT, 1, NULL, false, 1, 2147483647.0, NULL},
    {"padding_algorithm", OAR_ATTR_STRING, 0, "EXPLICIT", false, 0, 0, "EXPLICIT|SAME|VALID"},
    {"data_format", OAR_ATTR_STRING, 0, "NCHW", false, 0, 0, "NCHW|NHWC|AnyLayout"},
    OAR_PA_B("use_cudnn", 1), OAR_PA_USE_MKLDNN, OAR_PA_MKLDNN_DT, OAR_PA_ONEDNN,
    OAR_PA_I("workspace_size_MB", 512), OAR_PA_B("is_test", 0),
    /* oneDNN fusions: refused unless default (src/attr_check.c) */
    OAR_PA_B("fuse_relu", 0), OAR_PA_S("fuse_activation", ""), OAR_PA_F("fuse_alpha", 0.0),
    OAR_PA_F("fuse_beta", 0.0), OAR_PA_B("force_fp32_output", 0),
    {NULL, 0, 0, NULL, false, 0, 0, NULL}};

static int ct_decode(oar_decode_ctx_t *d, void *out)
{
    oar_convt_attrs_t *a = out;
    a->strides = oar_dec_ints(d, "strides");
    a->paddings = oar_dec_ints(d, "paddings");
    a->dilations = oar_dec_ints(d, "dilations");
    a->output_padding = oar_dec_ints(d, "output_padding");
    a->output_size = oar_dec_ints(d, "output_size");
    a->groups = oar_dec_i(d, "groups");
    a->pad_algo = oar_dec_choice(d, "padding_algorithm");
    a->layout = oar_dec_choice(d, "data_format");
    return oar_dec_status(d);
}

/* the geometry of the op in c (compile or run time) */
static int ct_geom(oar_infer_ctx_t *c, oar_convt_geom_t *g)
{
    const oar_op_def_t *def = oar_registry_op(oar_op_desc_type(oar_ic_op(c)));
    oar_convt_attrs_t a;
    memset(&a, 0, sizeof a);
    OAR_TRY(oar_op_decode(def, oar_ic_op(c), &a));
    int ni, nf;
    const int64_t *in = oar_ic_in_dims(c, "Input", 0, &ni);
    if (!in) return OAR_ERR_SHAPE;
    const int64_t *f = oar_ic_in_dims(c, "Filter", 0, &nf);
    if (!f) return OAR_ERR_SHAPE;
    char why[256];
    int rc = oar_convt_geometry(&a, in, ni, f, nf, g, why, sizeof why);
    if (rc != OAR_OK) return oar_ic_error(c, rc, "%s", why);
    return OAR_OK;
}

static int ct_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(oar_ic_check_float(c, "Input", -1));
    OAR_TRY(oar_ic_check_float(c, "Filter", oar_ic_in_dtype(c, "Input", 0)));
    if (oar_ic_in_present(c, "Bias"))
        return oar_ic_error(c, OAR_ERR_UNSUPPORTED, "input Bias ('%s') is read only by Paddle's oneDNN kernel; "
                            "oar does not add it (add it with elementwise_add)", oar_ic_in_name(c, "Bias", 0));
    oar_convt_geom_t g;
    OAR_TRY(ct_geom(c, &g));
    int64_t od[4] = {g.n, g.cout, g.oh, g.ow};
    return oar_ic_set_out(c, "Output", 0, od, 4, oar_ic_in_dtype(c, "Input", 0));
}

static int ct_grad_infer(oar_infer_ctx_t *c)
{
    oar_convt_geom_t g;
    OAR_TRY(ct_geom(c, &g));
    int nd;
    const int64_t *dd = oar_ic_in_dims(c, "Output@GRAD", 0, &nd);
    if (!dd) return OAR_ERR_SHAPE;
    int64_t want[4] = {g.n, g.cout, g.oh, g.ow};
    bool ok = nd == 4;
    for (int i = 0; ok && i < 4; i++) ok = oar_dim_eq(dd[i], want[i]);
    if (!ok) {
        char b1[96], b2[96];
        return oar_ic_error(c, OAR_ERR_SHAPE, "Output@GRAD shape %s, expected the output's %s",
                            oar_shape_str(dd, nd, b1, sizeof b1), oar_shape_str(want, 4, b2, sizeof b2));
    }
    return oar_infer_grad_like_inputs(c);
}

static int ct_grad(oar_grad_ctx_t *g)
{
    oar_op_desc_t *op = oar_gc_new_grad_op(g);
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "Input"));
    OAR_TRY(oar_gc_in(g, op, "Filter"));
    OAR_TRY(oar_gc_out_grad(g, op, "Output"));
    OAR_TRY(oar_gc_in_grad(g, op, "Input"));
    return oar_gc_in_grad(g, op, "Filter");
}

#define CT_DEF(NAME)                                                                          \
    static const oar_op_def_t NAME##_def = {                                                  \
        .type = #NAME, .inputs = ct_in, .outputs = ct_out, .attrs = ct_attrs,                 \
        .infer = ct_infer, .grad = ct_grad, .dtype_slot = "Input",                            \
        .attrs_size = sizeof(oar_convt_attrs_t), .decode = ct_decode};                        \
    OAR_REGISTER_OP(NAME##_def)                                                               \
    static const oar_op_def_t NAME##_grad_def = {                                             \
        .type = #NAME "_grad", .inputs = ct_grad_in, .outputs = ct_grad_out, .attrs = ct_attrs, \
        .infer = ct_grad_infer, .dtype_slot = "Output@GRAD",                                  \
        .attrs_size = sizeof(oar_convt_attrs_t), .decode = ct_decode};                        \
    OAR_REGISTER_OP(NAME##_grad_def)

CT_DEF(conv2d_transpose)
CT_DEF(depthwise_conv2d_transpose)
