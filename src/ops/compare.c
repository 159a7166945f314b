/*
 * compare.c — inference of the comparisons less_than, less_equal,
 * greater_than, greater_equal, equal, not_equal (X, Y -> bool Out,
 * broadcasting like elementwise ops at `axis`) and of logical_and/or/xor/not
 * on bool tensors; the ops themselves (slots, attributes, docs) are declared
 * in compare.ops. None has a gradient.
 */
#include <stddef.h>
#include <string.h>
#include "op.h"
#include "broadcast.h"
#include "ops/compare.h"   /* generated from compare.ops */

/* the kernels (bcast_run.h, compare.cu) and oar_bcast_infer read the decoded
 * attributes as broadcast.h's oar_bcast_attrs_t */
_Static_assert(sizeof(oar_cmp_attrs_t) == sizeof(oar_bcast_attrs_t) &&
                   offsetof(oar_cmp_attrs_t, axis) == offsetof(oar_bcast_attrs_t, axis),
               "oar_cmp_attrs_t must have oar_bcast_attrs_t's layout");

static int cmp_infer(oar_infer_ctx_t *c) { return oar_bcast_infer(c, OAR_BOOL); }

static int need_bool(oar_infer_ctx_t *c, const char *slot)
{
    int t = oar_ic_in_dtype(c, slot, 0);
    if (t >= 0 && t != OAR_BOOL)
        return oar_ic_error(c, OAR_ERR_DTYPE, "input %s ('%s') has dtype %s, expected bool", slot,
                            oar_ic_in_name(c, slot, 0), oar_dtype_name(t));
    return OAR_OK;
}

static int logical_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(need_bool(c, "X"));
    OAR_TRY(need_bool(c, "Y"));
    return oar_bcast_infer(c, OAR_BOOL);
}

static int logical_not_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(need_bool(c, "X"));
    int nd;
    const int64_t *d = oar_ic_in_dims(c, "X", 0, &nd);
    if (!d) return OAR_ERR_SHAPE;
    int64_t dims[OAR_MAX_DIMS];
    memcpy(dims, d, sizeof(int64_t) * (size_t)nd);
    OAR_TRY(oar_ic_set_out(c, "Out", 0, dims, nd, OAR_BOOL));
    return oar_ic_share_lod(c, "X", 0, "Out", 0);
}

#define OAR_OPS_DEFINE
#include "ops/compare.h"   /* the tables, decoders and registrations */
