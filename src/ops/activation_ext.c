/*
 * activation_ext.c — inference and grad makers of the rest of Fluid 1.8's /
 * Paddle 2.x's unary activations (X -> Out) and their grad ops, declared
 * in activation_ext.ops (slots, attributes, docs). Inference reads the
 * decoded parameters p[0..2] in the order the declaration lists them.
 */
#include "op.h"
#include "ops/activation_ext.h"   /* generated from activation_ext.ops */

static int act_infer(oar_infer_ctx_t *c) { return oar_infer_same_as(c, "X", "Out"); }

/* parameter i, attr `name`, must be positive */
static int positive_param(oar_infer_ctx_t *c, int i, const char *name)
{
    const oar_act_ext_attrs_t *a = oar_ic_attrs(c);
    if (!(a->p[i] > 0)) return oar_ic_error(c, OAR_ERR_RANGE, "attr %s = %g must be positive", name, a->p[i]);
    return OAR_OK;
}
static int not_negative_param(oar_infer_ctx_t *c, int i, const char *name)
{
    const oar_act_ext_attrs_t *a = oar_ic_attrs(c);
    if (!(a->p[i] >= 0))
        return oar_ic_error(c, OAR_ERR_RANGE, "attr %s = %g must not be negative", name, a->p[i]);
    return OAR_OK;
}

static int brelu_infer(oar_infer_ctx_t *c)
{
    const oar_act_ext_attrs_t *a = oar_ic_attrs(c);
    if (!(a->p[0] < a->p[1]))
        return oar_ic_error(c, OAR_ERR_RANGE, "attr t_min (%g) must be less than t_max (%g)", a->p[0], a->p[1]);
    return act_infer(c);
}
static int soft_relu_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(positive_param(c, 0, "threshold"));
    return act_infer(c);
}
static int hard_shrink_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(not_negative_param(c, 0, "threshold"));
    return act_infer(c);
}
static int softshrink_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(not_negative_param(c, 0, "lambda"));
    return act_infer(c);
}
static int softplus_infer(oar_infer_ctx_t *c)
{
    const oar_act_ext_attrs_t *a = oar_ic_attrs(c);
    if (a->p[0] == 0) return oar_ic_error(c, OAR_ERR_RANGE, "attr beta must not be 0");
    return act_infer(c);
}
static int hard_swish_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(positive_param(c, 1, "scale"));
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

#define OAR_OPS_DEFINE
#include "ops/activation_ext.h"   /* the tables, decoders and registrations */
