/*
 * gather_tree.c — inference of gather_tree (declared in gather_tree.ops):
 * Ids is rank 3, Parents has its dims and dtype, Out takes both.
 */
#include "op.h"
#include "ops/gather_tree.h"

static const char *nm(const char *s) { return s ? s : "?"; }

static int gather_tree_infer(oar_infer_ctx_t *c)
{
    int n;
    const int64_t *d = oar_ic_in_dims(c, "Ids", 0, &n);
    if (!d) return OAR_ERR_SHAPE;
    if (n != 3)
        return oar_ic_error(c, OAR_ERR_SHAPE, "input Ids '%s' must be [max_time, batch, beam], got rank %d",
                            nm(oar_ic_in_name(c, "Ids", 0)), n);
    int dt = oar_ic_in_dtype(c, "Ids", 0), pdt = oar_ic_in_dtype(c, "Parents", 0);
    if (dt >= 0 && dt != OAR_INT32 && dt != OAR_INT64)
        return oar_ic_error(c, OAR_ERR_DTYPE, "input Ids '%s' must be int32 or int64", nm(oar_ic_in_name(c, "Ids", 0)));
    if (dt >= 0 && pdt >= 0 && dt != pdt)
        return oar_ic_error(c, OAR_ERR_DTYPE, "input Parents '%s' must have the dtype of Ids '%s'",
                            nm(oar_ic_in_name(c, "Parents", 0)), nm(oar_ic_in_name(c, "Ids", 0)));
    OAR_TRY(oar_ic_check_same_dims(c, "Parents", "Ids"));
    return oar_ic_set_out(c, "Out", 0, d, n, dt);
}

#define OAR_OPS_DEFINE
#include "ops/gather_tree.h"
