/*
 * elementwise.c — inference and grad makers of
 * elementwise_{add,sub,mul,div,max,min,pow} and their grad ops; the ops
 * themselves (slots, attributes, docs) are declared in elementwise.ops.
 *
 * Broadcasting rules live in broadcast.h, shared with every place's kernels.
 * Grad ops take only what their formulas read: X and Y (for the shapes of
 * X@GRAD/Y@GRAD and the products), Out@GRAD, and Out for div.
 */
#include <stddef.h>
#include <stdio.h>
#include "op.h"
#include "broadcast.h"
#include "ops/elementwise.h"   /* generated from elementwise.ops */
#include "ops/double_grad_makers.h"

/* the kernels (bcast_run.h, elementwise.cu) read the decoded attributes as
 * broadcast.h's oar_bcast_attrs_t */
_Static_assert(sizeof(oar_ew_attrs_t) == sizeof(oar_bcast_attrs_t) &&
                   offsetof(oar_ew_attrs_t, axis) == offsetof(oar_bcast_attrs_t, axis),
               "oar_ew_attrs_t must have oar_bcast_attrs_t's layout");

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
    const oar_ew_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int64_t od[OAR_MAX_DIMS];
    const int axis = a->axis;
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

#define OAR_OPS_DEFINE
#include "ops/elementwise.h"   /* the tables, decoders and registrations */
