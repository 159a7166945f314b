/*
 * interp.c — bilinear_interp / nearest_interp (Fluid 1.8) and their _v2
 * forms (Paddle 2.x, what paddle.nn.functional.interpolate saves), NCHW,
 * with their grads. Kernels in kernels/cpu/interp.c.
 *
 * Output size, as Paddle: SizeTensor (one-value tensors) when given; else
 * in * scale (Scale tensor, else attr scale) when the scale is positive,
 * else attrs out_h/out_w; OutSize, when given, overrides the scale.
 */
#include <stdio.h>
#include <string.h>
#include "op.h"
#include "paddle_attrs.h"
#include "interp.h"

static const oar_slot_def_t ip_in[] = {
    {"X", 0}, {"OutSize", OAR_SLOT_DISPENSABLE},
    {"SizeTensor", OAR_SLOT_DUPLICABLE | OAR_SLOT_DISPENSABLE}, {"Scale", OAR_SLOT_DISPENSABLE}, {NULL, 0}};
static const oar_slot_def_t ip_out[] = {{"Out", 0}, {NULL, 0}};
static const oar_slot_def_t ip_grad_in[] = {
    {"X", 0}, {"OutSize", OAR_SLOT_DISPENSABLE},
    {"SizeTensor", OAR_SLOT_DUPLICABLE | OAR_SLOT_DISPENSABLE}, {"Scale", OAR_SLOT_DISPENSABLE},
    {"Out@GRAD", 0}, {NULL, 0}};
static const oar_slot_def_t ip_grad_out[] = {{"X@GRAD", OAR_SLOT_DISPENSABLE}, {NULL, 0}};

#define IP_COMMON                                                                             \
    OAR_PA_I("out_d", 0), OAR_PA_I("out_h", 0), OAR_PA_I("out_w", 0),                         \
    {"data_layout", OAR_ATTR_STRING, 0, "NCHW", false, 0, 0, "NCHW|NHWC"},                    \
    /* Paddle's kernel dispatches on this string, whatever the op type says */                \
    {"interp_method", OAR_ATTR_STRING, 0, "bilinear", false, 0, 0, "bilinear|nearest"},       \
    OAR_PA_B("align_corners", 1), {"align_mode", OAR_ATTR_INT, 1, NULL, false, 0, 1, NULL},   \
    OAR_PA_USE_MKLDNN, OAR_PA_MKLDNN_DT, OAR_PA_ONEDNN
static const oar_attr_def_t ip_attrs[] = {
    IP_COMMON, OAR_PA_F("scale", 0.0), {NULL, 0, 0, NULL, false, 0, 0, NULL}};
static const oar_attr_def_t ip_v2_attrs[] = {
    IP_COMMON, OAR_PA_L("scale", OAR_ATTR_FLOATS), {NULL, 0, 0, NULL, false, 0, 0, NULL}};

static int ip_decode_common(oar_decode_ctx_t *d, oar_interp_attrs_t *a)
{
    a->method = oar_dec_choice(d, "interp_method");
    a->out_h = oar_dec_i(d, "out_h");
    a->out_w = oar_dec_i(d, "out_w");
    a->align_corners = oar_dec_b(d, "align_corners");
    a->align_mode = oar_dec_i(d, "align_mode");
    a->layout = oar_dec_choice(d, "data_layout");
    return oar_dec_status(d);
}
static int ip_decode(oar_decode_ctx_t *d, void *out)
{
    oar_interp_attrs_t *a = out;
    a->scale1 = oar_dec_f(d, "scale");
    return ip_decode_common(d, a);
}
static int ip_v2_decode(oar_decode_ctx_t *d, void *out)
{
    oar_interp_attrs_t *a = out;
    a->v2 = true;
    a->scale = oar_dec_floats(d, "scale");
    return ip_decode_common(d, a);
}

/* one value of a one- or two-value tensor as a double; false if not numeric */
static bool tensor_value(const oar_tensor_t *t, int64_t i, double *v)
{
    if (!t || i >= oar_tensor_numel_of(t) || !oar_tensor_has_data(t)) return false;
    const void *p = oar_tensor_data((oar_tensor_t *)t);
    switch (t->dtype) {
    case OAR_INT32: *v = ((const int32_t *)p)[i]; return true;
    case OAR_INT64: *v = (double)((const int64_t *)p)[i]; return true;
    case OAR_FP32: *v = ((const float *)p)[i]; return true;
    case OAR_FP64: *v = ((const double *)p)[i]; return true;
    default: return false;
    }
}

/* Paddle's scale_h/scale_w at run time (-1: none) */
static int ip_scales(oar_infer_ctx_t *c, const oar_interp_attrs_t *a, double *sh, double *sw)
{
    *sh = *sw = -1;
    if (oar_ic_in_present(c, "SizeTensor")) return OAR_OK;
    if (oar_ic_in_present(c, "Scale")) {
        const oar_tensor_t *t = oar_ic_in_tensor(c, "Scale", 0);
        if (!t) return OAR_OK;   /* compile time */
        if (!tensor_value(t, 0, sh))
            return oar_ic_error(c, OAR_ERR_INVALID, "input Scale ('%s') must hold a number",
                                oar_ic_in_name(c, "Scale", 0));
        if (!tensor_value(t, 1, sw)) *sw = *sh;
    } else if (a->v2 && a->scale.n > 0) {
        *sh = a->scale.v[0];
        *sw = a->scale.n > 1 ? a->scale.v[1] : a->scale.v[0];
    } else if (!a->v2) {
        *sh = *sw = a->scale1;
    }
    return OAR_OK;
}

static int ip_infer(oar_infer_ctx_t *c)
{
    const oar_op_def_t *def = oar_registry_op(oar_op_desc_type(oar_ic_op(c)));
    oar_interp_attrs_t a;
    memset(&a, 0, sizeof a);
    OAR_TRY(oar_op_decode(def, oar_ic_op(c), &a));
    if (a.layout != 0)
        return oar_ic_error(c, OAR_ERR_UNSUPPORTED, "data_layout \"NHWC\" is not supported by oar (NCHW only)");
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    int nd;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, &nd);
    if (!xd) return OAR_ERR_SHAPE;
    if (nd != 4) return oar_ic_error(c, OAR_ERR_SHAPE, "X must be 4-D [N, C, H, W], it has %d dims", nd);
    int64_t od[4] = {xd[0], xd[1], a.out_h, a.out_w};
    bool rt = oar_ic_runtime(c);
    if (oar_ic_in_present(c, "SizeTensor")) {
        int n = oar_ic_in_count(c, "SizeTensor");
        if (n != 2) return oar_ic_error(c, OAR_ERR_INVALID, "SizeTensor has %d tensors, expected 2 (out_h, out_w)", n);
        for (int i = 0; i < 2; i++) {
            double v;
            if (!rt) { od[2 + i] = -1; continue; }
            if (!tensor_value(oar_ic_in_tensor(c, "SizeTensor", i), 0, &v))
                return oar_ic_error(c, OAR_ERR_INVALID, "SizeTensor %d ('%s') must hold one integer", i,
                                    oar_ic_in_name(c, "SizeTensor", i));
            od[2 + i] = (int64_t)v;
        }
    } else {
        double sh, sw;
        OAR_TRY(ip_scales(c, &a, &sh, &sw));
        if (oar_ic_in_present(c, "Scale") && !rt) {
            od[2] = od[3] = -1;
        } else if (sh > 0 && sw > 0) {
            /* Paddle: int(in * scale) in float arithmetic */
            od[2] = xd[2] < 0 ? -1 : (int64_t)((float)xd[2] * (float)sh);
            od[3] = xd[3] < 0 ? -1 : (int64_t)((float)xd[3] * (float)sw);
        }
        if (oar_ic_in_present(c, "OutSize")) {
            for (int i = 0; i < 2; i++) {
                double v;
                if (!rt) { od[2 + i] = -1; continue; }
                if (!tensor_value(oar_ic_in_tensor(c, "OutSize", 0), i, &v))
                    return oar_ic_error(c, OAR_ERR_INVALID, "OutSize ('%s') must hold 2 integers (out_h, out_w)",
                                        oar_ic_in_name(c, "OutSize", 0));
                od[2 + i] = (int64_t)v;
            }
        }
    }
    for (int i = 2; i < 4; i++)
        if (od[i] == 0 || od[i] < -1 || (rt && od[i] <= 0))
            return oar_ic_error(c, OAR_ERR_SHAPE, "the output size (%lld, %lld) must be positive: set out_h/out_w, "
                                "scale, OutSize or SizeTensor", (long long)od[2], (long long)od[3]);
    return oar_ic_set_out(c, "Out", 0, od, 4, oar_ic_in_dtype(c, "X", 0));
}

static int ip_grad_infer(oar_infer_ctx_t *c) { return oar_infer_grad_like_inputs(c); }

static int ip_grad(oar_grad_ctx_t *g)
{
    oar_op_desc_t *op = oar_gc_new_grad_op(g);
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "X"));
    const oar_op_desc_t *f = oar_gc_fwd(g);
    const char *opt[3] = {"OutSize", "SizeTensor", "Scale"};
    for (int i = 0; i < 3; i++)
        if (oar_op_desc_input_count(f, opt[i]) > 0) OAR_TRY(oar_gc_in(g, op, opt[i]));
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    return oar_gc_in_grad(g, op, "X");
}

#define IP_DEF(NAME, ATTRS, DECODE)                                                             \
    static const oar_op_def_t NAME##_def = {                                                    \
        .type = #NAME, .inputs = ip_in, .outputs = ip_out, .attrs = ATTRS, .infer = ip_infer,   \
        .grad = ip_grad, .dtype_slot = "X", .attrs_size = sizeof(oar_interp_attrs_t),           \
        .decode = DECODE};                                                                      \
    OAR_REGISTER_OP(NAME##_def)                                                                 \
    static const oar_op_def_t NAME##_grad_def = {                                               \
        .type = #NAME "_grad", .inputs = ip_grad_in, .outputs = ip_grad_out, .attrs = ATTRS,    \
        .infer = ip_grad_infer, .dtype_slot = "Out@GRAD",                                       \
        .attrs_size = sizeof(oar_interp_attrs_t), .decode = DECODE};                            \
    OAR_REGISTER_OP(NAME##_grad_def)

IP_DEF(bilinear_interp, ip_attrs, ip_decode)
IP_DEF(nearest_interp, ip_attrs, ip_decode)
IP_DEF(bilinear_interp_v2, ip_v2_attrs, ip_v2_decode)
IP_DEF(nearest_interp_v2, ip_v2_attrs, ip_v2_decode)
