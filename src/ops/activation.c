/*
 * activation.c — definitions of the unary activations (X -> Out) and their
 * grad ops "<type>_grad".
 *
 * As in Fluid, a grad op reads Out when the derivative is a function of the
 * output (relu, sigmoid, tanh, exp, sqrt, reciprocal) and X otherwise; it
 * never reads both, so the other one can be freed after the forward pass.
 */
#include <stdio.h>
#include <string.h>
#include "op.h"
#include "activation.h"
#include "paddle_attrs.h"

static const oar_slot_def_t act_in[] = {{"X", 0}, {NULL, 0}};
static const oar_slot_def_t act_out[] = {{"Out", 0}, {NULL, 0}};
/* grad inputs in activation.h's order: the value the formula reads, Out@GRAD */
static const oar_slot_def_t act_grad_in_out[] = {{"Out", 0}, {"Out@GRAD", 0}, {NULL, 0}};
static const oar_slot_def_t act_grad_in_x[] = {{"X", 0}, {"Out@GRAD", 0}, {NULL, 0}};
static const oar_slot_def_t act_grad_out[] = {{"X@GRAD", OAR_SLOT_DISPENSABLE}, {NULL, 0}};

#define ATTR_END {NULL, 0, 0, NULL, false, 0, 0}
#define ACT_COMMON_ATTRS \
    {"use_mkldnn", OAR_ATTR_BOOLEAN, 0, NULL, false, 0, 0}, \
    {"use_cudnn", OAR_ATTR_BOOLEAN, 0, NULL, false, 0, 0}, \
    {"is_test", OAR_ATTR_BOOLEAN, 0, NULL, false, 0, 0}, OAR_PA_ONEDNN, OAR_PA_MKLDNN_DT

static const oar_attr_def_t attrs_none[] = {ACT_COMMON_ATTRS, ATTR_END};
/* Paddle 3: round to `decimals` places; only 0 is honoured (src/attr_check.c) */
static const oar_attr_def_t attrs_round[] = {OAR_PA_I("decimals", 0), ACT_COMMON_ATTRS, ATTR_END};
static const oar_attr_def_t attrs_leaky_relu[] = {
    {"alpha", OAR_ATTR_FLOAT, 0.02, NULL, false, 0, 0}, ACT_COMMON_ATTRS, ATTR_END};
static const oar_attr_def_t attrs_elu[] = {
    {"alpha", OAR_ATTR_FLOAT, 1.0, NULL, false, 0, 0}, ACT_COMMON_ATTRS, ATTR_END};
static const oar_attr_def_t attrs_gelu[] = {
    {"approximate", OAR_ATTR_BOOLEAN, 0, NULL, false, 0, 0}, ACT_COMMON_ATTRS, ATTR_END};
static const oar_attr_def_t attrs_pow[] = {
    {"factor", OAR_ATTR_FLOAT, 1.0, NULL, false, 0, 0}, ACT_COMMON_ATTRS, ATTR_END};
static const oar_attr_def_t attrs_clip[] = {
    {"min", OAR_ATTR_FLOAT, 0, NULL, true, 0, 0},
    {"max", OAR_ATTR_FLOAT, 0, NULL, true, 0, 0}, ACT_COMMON_ATTRS, ATTR_END};

/* decode steps: the op's parameters into oar_act_attrs_t (activation.h) */
static int dec_none(oar_decode_ctx_t *d, void *out) { (void)out; return oar_dec_status(d); }
static int dec_alpha(oar_decode_ctx_t *d, void *out)
{
    ((oar_act_attrs_t *)out)->p1 = oar_dec_f(d, "alpha");
    return oar_dec_status(d);
}
static int dec_clip(oar_decode_ctx_t *d, void *out)
{
    oar_act_attrs_t *a = out;
    a->p1 = oar_dec_f(d, "min");
    a->p2 = oar_dec_f(d, "max");
    a->tensor_bounds = true;
    return oar_dec_status(d);
}
static int dec_pow(oar_decode_ctx_t *d, void *out)
{
    ((oar_act_attrs_t *)out)->p1 = oar_dec_f(d, "factor");
    return oar_dec_status(d);
}
static int dec_gelu(oar_decode_ctx_t *d, void *out)
{
    ((oar_act_attrs_t *)out)->p1 = oar_dec_b(d, "approximate") ? 1 : 0;
    return oar_dec_status(d);
}

static int act_infer(oar_infer_ctx_t *c) { return oar_infer_same_as(c, "X", "Out"); }

/* clip: Min/Max (one value each), when given, replace attrs min/max (Fluid 1.8) */
static const oar_slot_def_t clip_in[] = {
    {"X", 0}, {"Min", OAR_SLOT_DISPENSABLE}, {"Max", OAR_SLOT_DISPENSABLE}, {NULL, 0}};
/* X and Out@GRAD first: the unary grad kernels read them at indices 0 and 1 */
static const oar_slot_def_t clip_grad_in[] = {
    {"X", 0}, {"Out@GRAD", 0}, {"Min", OAR_SLOT_DISPENSABLE}, {"Max", OAR_SLOT_DISPENSABLE}, {NULL, 0}};

static int clip_infer(oar_infer_ctx_t *c)
{
    if (oar_ic_in_present(c, "Min") || oar_ic_in_present(c, "Max")) return oar_infer_same_as(c, "X", "Out");
    float lo = oar_attr_f(oar_ic_op(c), "min"), hi = oar_attr_f(oar_ic_op(c), "max");
    if (!(lo <= hi))
        return oar_ic_error(c, OAR_ERR_INVALID, "attr min (%g) must not exceed attr max (%g)",
                            (double)lo, (double)hi);
    return oar_infer_same_as(c, "X", "Out");
}

/* pow: FactorTensor, when given, is one float value replacing attr factor */
static const oar_slot_def_t pow_in[] = {{"X", 0}, {"FactorTensor", OAR_SLOT_DISPENSABLE}, {NULL, 0}};
static const oar_slot_def_t pow_grad_in[] = {
    {"X", 0}, {"Out@GRAD", 0}, {"FactorTensor", OAR_SLOT_DISPENSABLE}, {NULL, 0}};

static int pow_infer(oar_infer_ctx_t *c)
{
    if (oar_ic_in_count(c, "FactorTensor") > 0) {
        int nd;
        const int64_t *d = oar_ic_in_dims(c, "FactorTensor", 0, &nd);
        if (!d) return OAR_ERR_SHAPE;
        int64_t n = 1;
        for (int i = 0; i < nd; i++) n *= d[i];
        if (n != 1 && n >= 0) {
            char b[128];
            return oar_ic_error(c, OAR_ERR_SHAPE, "FactorTensor must hold one value, its shape is %s",
                                oar_shape_str(d, nd, b, sizeof b));
        }
    }
    return oar_infer_same_as(c, "X", "Out");
}

static int act_grad_infer_x(oar_infer_ctx_t *c) { return oar_infer_grad_like_inputs(c); }

static int make_grad(oar_grad_ctx_t *g, const char *dep)
{
    const oar_op_desc_t *fwd = oar_gc_fwd(g);
    oar_op_desc_t *op = oar_gc_new_grad_op(g);
    if (!op) return OAR_ERR_NOMEM;
    if (strcmp(dep, "Out") == 0) OAR_TRY(oar_gc_out(g, op, "Out"));
    else OAR_TRY(oar_gc_in(g, op, "X"));
    static const char *const extra[] = {"FactorTensor", "Min", "Max"};
    for (int i = 0; i < 3; i++)
        if (oar_op_desc_input_count(fwd, extra[i]) > 0) OAR_TRY(oar_gc_in(g, op, extra[i]));
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    return oar_gc_in_grad(g, op, "X");
}
static int grad_dep_out(oar_grad_ctx_t *g) { return make_grad(g, "Out"); }
static int grad_dep_x(oar_grad_ctx_t *g) { return make_grad(g, "X"); }

/* Forward and grad kernels read element i before writing element i, so the
 * output may take the dying input's buffer (OAR_OP_INPLACE). */
#define ACT_DEF(NAME, IN, INFER, ATTRS, DEC, GRAD_IN, GRAD_INFER, GRAD_MAKER)         \
    static const oar_op_def_t NAME##_def = {                                          \
        .type = #NAME, .inputs = IN, .outputs = act_out, .attrs = ATTRS,              \
        .infer = INFER, .grad = GRAD_MAKER, .dtype_slot = "X", .flags = OAR_OP_INPLACE | OAR_OP_WRITES_OUTPUTS, \
        .attrs_size = sizeof(oar_act_attrs_t), .decode = DEC};                        \
    OAR_REGISTER_OP(NAME##_def)                                                       \
    static const oar_op_def_t NAME##_grad_def = {                                     \
        .type = #NAME "_grad", .inputs = GRAD_IN, .outputs = act_grad_out,           \
        .attrs = ATTRS, .infer = GRAD_INFER, .dtype_slot = "Out@GRAD",                \
        .flags = OAR_OP_INPLACE | OAR_OP_WRITES_OUTPUTS, .attrs_size = sizeof(oar_act_attrs_t), .decode = DEC}; \
    OAR_REGISTER_OP(NAME##_grad_def)

#define ACT_OUT(NAME, ATTRS, DEC) \
    ACT_DEF(NAME, act_in, act_infer, ATTRS, DEC, act_grad_in_out, oar_infer_grad_like_out, grad_dep_out)
#define ACT_X(NAME, ATTRS, DEC) \
    ACT_DEF(NAME, act_in, act_infer, ATTRS, DEC, act_grad_in_x, act_grad_infer_x, grad_dep_x)

ACT_OUT(relu, attrs_none, dec_none)
ACT_OUT(sigmoid, attrs_none, dec_none)
ACT_OUT(tanh, attrs_none, dec_none)
ACT_OUT(exp, attrs_none, dec_none)
ACT_OUT(sqrt, attrs_none, dec_none)
ACT_OUT(reciprocal, attrs_none, dec_none)
ACT_X(log, attrs_none, dec_none)
ACT_X(abs, attrs_none, dec_none)
ACT_X(square, attrs_none, dec_none)
ACT_X(leaky_relu, attrs_leaky_relu, dec_alpha)
ACT_X(elu, attrs_elu, dec_alpha)
ACT_X(gelu, attrs_gelu, dec_gelu)
ACT_X(cos, attrs_none, dec_none)
ACT_X(sin, attrs_none, dec_none)
/* piecewise-constant: their gradient is zero almost everywhere (as in Fluid) */
ACT_X(floor, attrs_none, dec_none)
ACT_X(ceil, attrs_none, dec_none)
ACT_X(round, attrs_round, dec_none)
ACT_X(sign, attrs_none, dec_none)
ACT_DEF(pow, pow_in, pow_infer, attrs_pow, dec_pow, pow_grad_in, act_grad_infer_x, grad_dep_x)
ACT_DEF(clip, clip_in, clip_infer, attrs_clip, dec_clip, clip_grad_in, act_grad_infer_x, grad_dep_x)
