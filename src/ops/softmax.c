/*
 * softmax.c — inference of softmax and log_softmax (X -> Out along `axis`)
 * and their grads, which read only Out and Out@GRAD; the ops themselves
 * (slots, attributes, docs) are declared in softmax.ops.
 */
#include "op.h"
#include "ops/softmax.h"   /* generated from softmax.ops */

static int check_axis(oar_infer_ctx_t *c, const char *slot)
{
    int nd;
    const int64_t *d = oar_ic_in_dims(c, slot, 0, &nd);
    if (!d) return OAR_ERR_SHAPE;
    const oar_softmax_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const int axis = a->axis;
    if (nd == 0 || axis < -nd || axis >= nd) {
        char b[128];
        return oar_ic_error(c, OAR_ERR_INVALID, "axis %d out of range [%d, %d) for %s shape %s", axis, -nd, nd,
                            slot, oar_shape_str(d, nd, b, sizeof b));
    }
    return OAR_OK;
}

static int sm_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(check_axis(c, "X"));
    return oar_infer_same_as(c, "X", "Out");
}

/* X@GRAD takes Out's dims, dtype and LoD */
static int sm_grad_infer(oar_infer_ctx_t *c)
{
    if (!oar_ic_out_present(c, "X@GRAD")) return OAR_OK;
    OAR_TRY(check_axis(c, "Out"));
    return oar_infer_grad_like_out(c);
}

#define OAR_OPS_DEFINE
#include "ops/softmax.h"   /* the tables, decoders and registrations */
