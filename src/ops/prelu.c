/*
 * prelu.c — prelu (Fluid 1.8 / Paddle 2.x): Out = X where X > 0, else
 * Alpha * X, with one alpha (mode "all"), one per channel ("channel") or
 * one per element of a sample ("element"); and its grad. This file holds
 * the inference and grad maker; the ops (slots, attributes, docs) are
 * declared in prelu.ops. Kernels in kernels/cpu/prelu.c.
 */
#include <stdio.h>
#include "op.h"
#include "ops/prelu.h"   /* generated from prelu.ops */

static int prelu_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    OAR_TRY(oar_ic_check_float(c, "Alpha", oar_ic_in_dtype(c, "X", 0)));
    const oar_prelu_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    static const char *const modes[] = {"all", "channel", "element"};   /* prelu.ops' choices */
    int nx, na;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, &nx);
    if (!xd) return OAR_ERR_SHAPE;
    const int64_t *ad = oar_ic_in_dims(c, "Alpha", 0, &na);
    if (!ad) return OAR_ERR_SHAPE;
    int64_t an = 1, want = 1;
    for (int i = 0; i < na; i++) an = ad[i] < 0 || an < 0 ? -1 : an * ad[i];
    const char *what = "1";
    if (a->mode == OAR_PRELU_MODE_CHANNEL) {
        if (nx < 2) return oar_ic_error(c, OAR_ERR_SHAPE, "mode \"channel\" needs X of rank >= 2, it has %d", nx);
        want = xd[a->layout == OAR_PRELU_LAYOUT_NHWC ? nx - 1 : 1];
        what = "X's channel count";
    } else if (a->mode == OAR_PRELU_MODE_ELEMENT) {
        if (nx < 1) return oar_ic_error(c, OAR_ERR_SHAPE, "mode \"element\" needs X of rank >= 1");
        for (int i = 1; i < nx; i++) want = xd[i] < 0 || want < 0 ? -1 : want * xd[i];
        what = "the size of one sample of X";
    }
    if (an >= 0 && want >= 0 && an != want)
        return oar_ic_error(c, OAR_ERR_SHAPE, "Alpha ('%s') has %lld values, mode \"%s\" needs %s = %lld",
                            oar_ic_in_name(c, "Alpha", 0), (long long)an, modes[a->mode], what,
                            (long long)want);
    return oar_infer_same_as(c, "X", "Out");
}

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

#define OAR_OPS_DEFINE
#include "ops/prelu.h"   /* the tables, decoders and registrations */
