/*
 * prelu.c — prelu (Fluid 1.8 / Paddle 2.x): Out = X where X > 0, else
 * Alpha * X, with one alpha (mode "all"), one per channel ("channel") or
 * one per element of a sample ("element"); and its grad. Kernels in
 * kernels/cpu/prelu.c.
 */
#include <stdio.h>
#include "op.h"
#include "paddle_attrs.h"
#include "prelu.h"

static const oar_slot_def_t prelu_in[] = {{"X", 0}, {"Alpha", 0}, {NULL, 0}};
static const oar_slot_def_t prelu_out[] = {{"Out", 0}, {NULL, 0}};
static const oar_slot_def_t prelu_grad_in[] = {{"X", 0}, {"Alpha", 0}, {"Out@GRAD", 0}, {NULL, 0}};
static const oar_slot_def_t prelu_grad_out[] = {
    {"X@GRAD", OAR_SLOT_DISPENSABLE}, {"Alpha@GRAD", OAR_SLOT_DISPENSABLE}, {NULL, 0}};
static const oar_attr_def_t prelu_attrs[] = {
    {"mode", OAR_ATTR_STRING, 0, "all", false, 0, 0, "all|channel|element"},
    {"data_format", OAR_ATTR_STRING, 0, "NCHW", false, 0, 0, "NCHW|NHWC"},
    OAR_PA_B("is_test", 0), OAR_PA_USE_MKLDNN, OAR_PA_MKLDNN_DT, OAR_PA_ONEDNN,
    {NULL, 0, 0, NULL, false, 0, 0, NULL}};

static int prelu_decode(oar_decode_ctx_t *d, void *out)
{
    oar_prelu_attrs_t *a = out;
    a->mode = oar_dec_choice(d, "mode");
    a->layout = oar_dec_choice(d, "data_format");
    return oar_dec_status(d);
}

static int prelu_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    OAR_TRY(oar_ic_check_float(c, "Alpha", oar_ic_in_dtype(c, "X", 0)));
    const oar_op_def_t *def = oar_registry_op("prelu");
    oar_prelu_attrs_t a = {0, 0};
    OAR_TRY(oar_op_decode(def, oar_ic_op(c), &a));
    int nx, na;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, &nx);
    if (!xd) return OAR_ERR_SHAPE;
    const int64_t *ad = oar_ic_in_dims(c, "Alpha", 0, &na);
    if (!ad) return OAR_ERR_SHAPE;
    int64_t an = 1, want = 1;
    for (int i = 0; i < na; i++) an = ad[i] < 0 || an < 0 ? -1 : an * ad[i];
    const char *what = "1";
    if (a.mode == OAR_PRELU_CHANNEL) {
        if (nx < 2) return oar_ic_error(c, OAR_ERR_SHAPE, "mode \"channel\" needs X of rank >= 2, it has %d", nx);
        want = xd[a.layout == 1 ? nx - 1 : 1];
        what = "X's channel count";
    } else if (a.mode == OAR_PRELU_ELEMENT) {
        if (nx < 1) return oar_ic_error(c, OAR_ERR_SHAPE, "mode \"element\" needs X of rank >= 1");
        for (int i = 1; i < nx; i++) want = xd[i] < 0 || want < 0 ? -1 : want * xd[i];
        what = "the size of one sample of X";
    }
    if (an >= 0 && want >= 0 && an != want)
        return oar_ic_error(c, OAR_ERR_SHAPE, "Alpha ('%s') has %lld values, mode \"%s\" needs %s = %lld",
                            oar_ic_in_name(c, "Alpha", 0), (long long)an, oar_attr_s(oar_ic_op(c), "mode"), what,
                            (long long)want);
    return oar_infer_same_as(c, "X", "Out");
}

static int prelu_grad_infer(oar_infer_ctx_t *c) { return oar_infer_grad_like_inputs(c); }

static int prelu_grad(oar_grad_ctx_t *g)
{
    oar_op_desc_t *op = oar_gc_new_op(g, "prelu_grad");
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "X"));
    OAR_TRY(oar_gc_in(g, op, "Alpha"));
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    OAR_TRY(oar_gc_in_grad(g, op, "X"));
    return oar_gc_in_grad(g, op, "Alpha");
}

static const oar_op_def_t prelu_def = {
    .type = "prelu", .inputs = prelu_in, .outputs = prelu_out, .attrs = prelu_attrs,
    .infer = prelu_infer, .grad = prelu_grad, .dtype_slot = "X",
    .attrs_size = sizeof(oar_prelu_attrs_t), .decode = prelu_decode};
OAR_REGISTER_OP(prelu_def)
static const oar_op_def_t prelu_grad_def = {
    .type = "prelu_grad", .inputs = prelu_grad_in, .outputs = prelu_grad_out, .attrs = prelu_attrs,
    .infer = prelu_grad_infer, .dtype_slot = "Out@GRAD",
    .attrs_size = sizeof(oar_prelu_attrs_t), .decode = prelu_decode};
OAR_REGISTER_OP(prelu_grad_def)
