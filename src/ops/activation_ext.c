/*
 * activation_ext.c — the rest of Fluid 1.8's / Paddle 2.x's unary
 * activation family (X -> Out) and their grad ops "<type>_grad".
 *
 * As in Fluid, the grad op reads Out when Fluid's grad functor depends on
 * the output (relu6, hard_sigmoid, rsqrt, soft_relu, selu) and X otherwise.
 * Defaults are Fluid's (operators/activation_op.cc).
 */
#include <stdio.h>
#include <string.h>
#include "op.h"
#include "activation_ext.h"
#include "paddle_attrs.h"

static const oar_slot_def_t act_in[] = {{"X", 0}, {NULL, 0}};
static const oar_slot_def_t act_out[] = {{"Out", 0}, {NULL, 0}};
static const oar_slot_def_t act_grad_in_out[] = {{"Out", 0}, {"Out@GRAD", 0}, {NULL, 0}};
static const oar_slot_def_t act_grad_in_x[] = {{"X", 0}, {"Out@GRAD", 0}, {NULL, 0}};
static const oar_slot_def_t act_grad_out[] = {{"X@GRAD", OAR_SLOT_DISPENSABLE}, {NULL, 0}};

#define F(name, def) {name, OAR_ATTR_FLOAT, def, NULL, false, 0, 0}
#define END {NULL, 0, 0, NULL, false, 0, 0}
#define COMMON \
    {"use_mkldnn", OAR_ATTR_BOOLEAN, 0, NULL, false, 0, 0}, \
    {"use_cudnn", OAR_ATTR_BOOLEAN, 0, NULL, false, 0, 0}, \
    {"is_test", OAR_ATTR_BOOLEAN, 0, NULL, false, 0, 0}, OAR_PA_ONEDNN, OAR_PA_MKLDNN_DT

static const oar_attr_def_t a_none[] = {COMMON, END};
static const oar_attr_def_t a_relu6[] = {F("threshold", 6.0), COMMON, END};
static const oar_attr_def_t a_hard_sigmoid[] = {F("slope", 0.2), F("offset", 0.5), COMMON, END};
static const oar_attr_def_t a_swish[] = {F("beta", 1.0), COMMON, END};
static const oar_attr_def_t a_shrink[] = {F("threshold", 0.5), COMMON, END};
static const oar_attr_def_t a_softshrink[] = {F("lambda", 0.5), COMMON, END};
static const oar_attr_def_t a_brelu[] = {F("t_min", 0.0), F("t_max", 24.0), COMMON, END};
static const oar_attr_def_t a_hard_swish[] = {
    F("threshold", 6.0), F("scale", 6.0), F("offset", 3.0), COMMON, END};
static const oar_attr_def_t a_soft_relu[] = {F("threshold", 40.0), COMMON, END};
static const oar_attr_def_t a_stanh[] = {F("scale_a", 0.67), F("scale_b", 1.7159), COMMON, END};
/* value: Paddle 3's output below the threshold (0 before) */
static const oar_attr_def_t a_thresholded_relu[] = {F("threshold", 1.0), F("value", 0.0), COMMON, END};
/* Paddle 2.x: log(1 + e^(beta x)) / beta, x itself where beta x > threshold;
 * Fluid 1.8's softplus is beta 1 without the cut-off (equal to 1e-9 there) */
static const oar_attr_def_t a_softplus[] = {F("beta", 1.0), F("threshold", 20.0), COMMON, END};
static const oar_attr_def_t a_mish[] = {F("threshold", 20.0), COMMON, END};
static const oar_attr_def_t a_selu[] = {
    F("scale", 1.0507009873554804934193349852946), F("alpha", 1.6732632423543772848170429916717), COMMON, END};
static const oar_attr_def_t a_celu[] = {F("alpha", 1.0), COMMON, END};
static const oar_attr_def_t a_logit[] = {F("eps", 1e-6), COMMON, END};

static int act_infer(oar_infer_ctx_t *c) { return oar_infer_same_as(c, "X", "Out"); }
static int grad_infer_x(oar_infer_ctx_t *c) { return oar_infer_grad_like_inputs(c); }

static int positive_attr(oar_infer_ctx_t *c, const char *name)
{
    float v = oar_attr_f(oar_ic_op(c), name);
    if (!(v > 0))
        return oar_ic_error(c, OAR_ERR_RANGE, "attr %s = %g must be positive", name, (double)v);
    return OAR_OK;
}

static int brelu_infer(oar_infer_ctx_t *c)
{
    float lo = oar_attr_f(oar_ic_op(c), "t_min"), hi = oar_attr_f(oar_ic_op(c), "t_max");
    if (!(lo < hi))
        return oar_ic_error(c, OAR_ERR_RANGE, "attr t_min (%g) must be less than t_max (%g)",
                            (double)lo, (double)hi);
    return act_infer(c);
}
static int soft_relu_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(positive_attr(c, "threshold"));
    return act_infer(c);
}
static int shrink_infer(oar_infer_ctx_t *c)
{
    const char *name = oar_op_desc_attr_type(oar_ic_op(c), "lambda") >= 0 ? "lambda" : "threshold";
    float v = oar_attr_f(oar_ic_op(c), name);
    if (!(v >= 0))
        return oar_ic_error(c, OAR_ERR_RANGE, "attr %s = %g must not be negative", name, (double)v);
    return act_infer(c);
}
static int softplus_infer(oar_infer_ctx_t *c)
{
    if (oar_attr_f(oar_ic_op(c), "beta") == 0)
        return oar_ic_error(c, OAR_ERR_RANGE, "attr beta must not be 0");
    return act_infer(c);
}
static int hard_swish_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(positive_attr(c, "scale"));
    return act_infer(c);
}

static int make_grad(oar_grad_ctx_t *g, bool dep_out)
{
    oar_op_desc_t *op = oar_gc_new_grad_op(g);
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(dep_out ? oar_gc_out(g, op, "Out") : oar_gc_in(g, op, "X"));
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    return oar_gc_in_grad(g, op, "X");
}
static int grad_dep_out(oar_grad_ctx_t *g) { return make_grad(g, true); }
static int grad_dep_x(oar_grad_ctx_t *g) { return make_grad(g, false); }

/* the parameters p[0..2] of the kernels' formulas, by attr name (NULL:
 * unused, left 0); an op without any has no decode step */
#define PARAMS(SET, A1, A2, A3)                                                       \
    static int SET##_decode(oar_decode_ctx_t *d, void *out)                           \
    {                                                                                 \
        oar_act_ext_attrs_t *a = out;                                                 \
        const char *names[3] = {A1, A2, A3};                                          \
        for (int i = 0; i < 3; i++)                                                   \
            if (names[i]) a->p[i] = oar_dec_f(d, names[i]);                           \
        return oar_dec_status(d);                                                     \
    }
#define none_decode NULL
PARAMS(relu6, "threshold", NULL, NULL)
PARAMS(hard_sigmoid, "slope", "offset", NULL)
PARAMS(soft_relu, "threshold", NULL, NULL)
PARAMS(selu, "scale", "alpha", NULL)
PARAMS(swish, "beta", NULL, NULL)
PARAMS(shrink, "threshold", NULL, NULL)
PARAMS(softshrink, "lambda", NULL, NULL)
PARAMS(brelu, "t_min", "t_max", NULL)
PARAMS(hard_swish, "threshold", "scale", "offset")
PARAMS(stanh, "scale_a", "scale_b", NULL)
PARAMS(thresholded_relu, "threshold", "value", NULL)
PARAMS(softplus, "beta", "threshold", NULL)
PARAMS(mish, "threshold", NULL, NULL)
PARAMS(celu, "alpha", NULL, NULL)
PARAMS(logit, "eps", NULL, NULL)

/* forward and grad compute element i from element i alone: in place */
#define ACT_DEF(NAME, INFER, ATTRS, SET, GRAD_IN, GRAD_INFER, GRAD_MAKER)             \
    static const oar_op_def_t NAME##_def = {                                          \
        .type = #NAME, .inputs = act_in, .outputs = act_out, .attrs = ATTRS,          \
        .infer = INFER, .grad = GRAD_MAKER, .dtype_slot = "X", .flags = OAR_OP_INPLACE | OAR_OP_WRITES_OUTPUTS, \
        .attrs_size = sizeof(oar_act_ext_attrs_t), .decode = SET##_decode};           \
    OAR_REGISTER_OP(NAME##_def)                                                       \
    static const oar_op_def_t NAME##_grad_def = {                                     \
        .type = #NAME "_grad", .inputs = GRAD_IN, .outputs = act_grad_out,           \
        .attrs = ATTRS, .infer = GRAD_INFER, .dtype_slot = "Out@GRAD",                \
        .flags = OAR_OP_INPLACE | OAR_OP_WRITES_OUTPUTS, .attrs_size = sizeof(oar_act_ext_attrs_t),           \
        .decode = SET##_decode};                                                      \
    OAR_REGISTER_OP(NAME##_grad_def)

#define ACT_OUT(NAME, ATTRS, SET, INFER) \
    ACT_DEF(NAME, INFER, ATTRS, SET, act_grad_in_out, oar_infer_grad_like_out, grad_dep_out)
#define ACT_X(NAME, ATTRS, SET, INFER) \
    ACT_DEF(NAME, INFER, ATTRS, SET, act_grad_in_x, grad_infer_x, grad_dep_x)

ACT_OUT(relu6, a_relu6, relu6, act_infer)
ACT_OUT(hard_sigmoid, a_hard_sigmoid, hard_sigmoid, act_infer)
ACT_OUT(rsqrt, a_none, none, act_infer)
ACT_OUT(soft_relu, a_soft_relu, soft_relu, soft_relu_infer)
ACT_OUT(selu, a_selu, selu, act_infer)
ACT_X(swish, a_swish, swish, act_infer)
ACT_X(silu, a_none, none, act_infer)
ACT_X(logsigmoid, a_none, none, act_infer)
ACT_X(atan, a_none, none, act_infer)
ACT_X(acos, a_none, none, act_infer)
ACT_X(asin, a_none, none, act_infer)
ACT_X(tan, a_none, none, act_infer)
ACT_X(sinh, a_none, none, act_infer)
ACT_X(cosh, a_none, none, act_infer)
ACT_X(tanh_shrink, a_none, none, act_infer)
ACT_X(hard_shrink, a_shrink, shrink, shrink_infer)
ACT_X(softshrink, a_softshrink, softshrink, shrink_infer)
ACT_X(brelu, a_brelu, brelu, brelu_infer)
ACT_X(hard_swish, a_hard_swish, hard_swish, hard_swish_infer)
ACT_X(log1p, a_none, none, act_infer)
ACT_X(expm1, a_none, none, act_infer)
ACT_X(log2, a_none, none, act_infer)
ACT_X(log10, a_none, none, act_infer)
ACT_X(stanh, a_stanh, stanh, act_infer)
ACT_X(softsign, a_none, none, act_infer)
ACT_X(thresholded_relu, a_thresholded_relu, thresholded_relu, act_infer)
ACT_X(softplus, a_softplus, softplus, softplus_infer)
ACT_X(mish, a_mish, mish, act_infer)
ACT_X(celu, a_celu, celu, act_infer)
ACT_X(erf, a_none, none, act_infer)
ACT_X(logit, a_logit, logit, act_infer)
