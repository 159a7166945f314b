/*
 * activation.c — inference and grad makers of the unary activations; the
 * ops themselves (slots, attributes, docs) are declared in activation.ops.
 */
#include <stdio.h>
#include <string.h>
#include "op.h"
#include "ops/activation.h"   /* generated from activation.ops */
#include "ops/double_grad_makers.h"

static int act_infer(oar_infer_ctx_t *c) { return oar_infer_same_as(c, "X", "Out"); }

/* clip: Min/Max (one value each), when given, replace attrs min/max (Fluid 1.8) */
static int clip_infer(oar_infer_ctx_t *c)
{
    if (oar_ic_in_present(c, "Min") || oar_ic_in_present(c, "Max")) return oar_infer_same_as(c, "X", "Out");
    const oar_act_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const double lo = a->p1, hi = a->p2;
    if (!(lo <= hi))
        return oar_ic_error(c, OAR_ERR_INVALID, "attr min (%g) must not exceed attr max (%g)",
                            (double)lo, (double)hi);
    return oar_infer_same_as(c, "X", "Out");
}

/* pow: FactorTensor, when given, is one float value replacing attr factor */
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

#define OAR_OPS_DEFINE
#include "ops/activation.h"   /* the tables, decoders and registrations */
