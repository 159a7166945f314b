/*
 * elementwise.c — definitions of elementwise_{add,sub,mul,div,max,min,pow}
 * and their grad ops (Fluid 1.x slots X, Y -> Out, attr axis).
 *
 * Broadcasting rules live in broadcast.h, shared with every place's kernels. Grad ops take only what their formulas read: X and Y (for the
 * shapes of X@GRAD/Y@GRAD and the products), Out@GRAD, and Out for div.
 */
#include <stdio.h>
#include "op.h"
#include "paddle_attrs.h"
#include "elementwise.h"

static const oar_slot_def_t ew_in[] = {{"X", 0}, {"Y", 0}, {NULL, 0}};
static const oar_slot_def_t ew_out[] = {{"Out", 0}, {NULL, 0}};
static const oar_attr_def_t ew_attrs[] = {
    {"axis", OAR_ATTR_INT, -1, NULL, false, 0, 0},
    {"use_mkldnn", OAR_ATTR_BOOLEAN, 0, NULL, false, 0, 0},
    {"x_data_format", OAR_ATTR_STRING, 0, "", false, 0, 0},
    {"y_data_format", OAR_ATTR_STRING, 0, "", false, 0, 0},
    OAR_PA_SCALES_XY, OAR_PA_QUANTIZER, OAR_PA_MKLDNN_DT, OAR_PA_ONEDNN,
    {NULL, 0, 0, NULL, false, 0, 0},
};

static const oar_slot_def_t ew_grad_in[] = {
    {"X", 0}, {"Y", 0}, {"Out", OAR_SLOT_DISPENSABLE}, {"Out@GRAD", 0}, {NULL, 0}};
static const oar_slot_def_t ew_grad_out[] = {
    {"X@GRAD", OAR_SLOT_DISPENSABLE}, {"Y@GRAD", OAR_SLOT_DISPENSABLE}, {NULL, 0}};

static int ew_infer(oar_infer_ctx_t *c) { return oar_bcast_infer(c, -1); }

/* grad op "<type>_grad" reading X, Y, Out@GRAD and, when with_out, Out */
static int ew_make_grad(oar_grad_ctx_t *g, bool with_out)
{
    oar_op_desc_t *op = oar_gc_new_grad_op(g);
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "X"));
    OAR_TRY(oar_gc_in(g, op, "Y"));
    if (with_out) OAR_TRY(oar_gc_out(g, op, "Out"));
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    OAR_TRY(oar_gc_in_grad(g, op, "X"));
    OAR_TRY(oar_gc_in_grad(g, op, "Y"));
    return OAR_OK;
}
static int ew_grad(oar_grad_ctx_t *g) { return ew_make_grad(g, false); }
static int ew_grad_with_out(oar_grad_ctx_t *g) { return ew_make_grad(g, true); }

static int ew_grad_infer(oar_infer_ctx_t *c)
{
    int xn, yn, gn, nd;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, &xn);
    if (!xd) return OAR_ERR_SHAPE;
    const int64_t *yd = oar_ic_in_dims(c, "Y", 0, &yn);
    if (!yd) return OAR_ERR_SHAPE;
    const int64_t *gd = oar_ic_in_dims(c, "Out@GRAD", 0, &gn);
    if (!gd) return OAR_ERR_SHAPE;
    int64_t od[OAR_MAX_DIMS];
    int axis = oar_bcast_axis(oar_ic_op(c));
    bool ok = oar_bcast_shape(xd, xn, yd, yn, axis, od, NULL, NULL, &nd) == OAR_BCAST_OK && nd == gn;
    for (int i = 0; ok && i < nd; i++) ok = oar_dim_eq(od[i], gd[i]);
    if (!ok) {
        char bx[160], by[160], bg[160];
        return oar_ic_error(c, OAR_ERR_SHAPE, "Out@GRAD shape %s is not the broadcast of X shape %s and Y shape %s at axis %d",
                            oar_shape_str(gd, gn, bg, sizeof bg), oar_shape_str(xd, xn, bx, sizeof bx),
                            oar_shape_str(yd, yn, by, sizeof by), axis);
    }
    return oar_infer_grad_like_inputs(c);
}

#define EW_DEF(NAME, GRAD_MAKER)                                                      \
    static const oar_op_def_t NAME##_def = {                                          \
        .type = "elementwise_" #NAME, .inputs = ew_in, .outputs = ew_out,            \
        .attrs = ew_attrs, .infer = ew_infer, .grad = GRAD_MAKER,                     \
        .attrs_size = sizeof(oar_bcast_attrs_t), .decode = oar_bcast_decode_axis,     \
        .flags = OAR_OP_INPLACE | OAR_OP_WRITES_OUTPUTS};                             \
    OAR_REGISTER_OP(NAME##_def)                                                       \
    static const oar_op_def_t NAME##_grad_def = {                                     \
        .type = "elementwise_" #NAME "_grad", .inputs = ew_grad_in,                  \
        .outputs = ew_grad_out, .attrs = ew_attrs, .infer = ew_grad_infer,            \
        .dtype_slot = "Out@GRAD",                                                     \
        .attrs_size = sizeof(oar_bcast_attrs_t), .decode = oar_bcast_decode_axis,     \
        .flags = OAR_OP_WRITES_OUTPUTS};                                              \
    OAR_REGISTER_OP(NAME##_grad_def)

EW_DEF(add, ew_grad)
EW_DEF(sub, ew_grad)
EW_DEF(mul, ew_grad)
EW_DEF(div, ew_grad_with_out)
EW_DEF(max, ew_grad)
EW_DEF(min, ew_grad)
EW_DEF(pow, ew_grad)
