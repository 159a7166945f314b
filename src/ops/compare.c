/*
 * compare.c — definitions of the comparisons less_than, less_equal,
 * greater_than, greater_equal, equal, not_equal (X, Y -> bool Out,
 * broadcasting like elementwise ops at `axis`) and of logical_and/or/xor/not
 * on bool tensors. None has a gradient.
 */
#include <string.h>
#include "op.h"
#include "broadcast.h"

#define ATTR_END {NULL, 0, 0, NULL, false, 0, 0}

static const oar_slot_def_t xy_in[] = {{"X", 0}, {"Y", 0}, {NULL, 0}};
static const oar_slot_def_t x_in[] = {{"X", 0}, {NULL, 0}};
static const oar_slot_def_t out_slot[] = {{"Out", 0}, {NULL, 0}};

static const oar_attr_def_t cmp_attrs[] = {
    {"axis", OAR_ATTR_INT, -1, NULL, false, 0, 0},
    {"force_cpu", OAR_ATTR_BOOLEAN, 0, NULL, false, 0, 0},
    ATTR_END};

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

#define CMP_DEF(NAME)                                                                 \
    static const oar_op_def_t NAME##_def = {                                          \
        .type = #NAME, .inputs = xy_in, .outputs = out_slot, .attrs = cmp_attrs,      \
        .infer = cmp_infer, .dtype_slot = "X",                                        \
        .attrs_size = sizeof(oar_bcast_attrs_t), .decode = oar_bcast_decode_axis};    \
    OAR_REGISTER_OP(NAME##_def)

CMP_DEF(less_than)
CMP_DEF(less_equal)
CMP_DEF(greater_than)
CMP_DEF(greater_equal)
CMP_DEF(equal)
CMP_DEF(not_equal)

#define LOGICAL_DEF(NAME)                                                             \
    static const oar_op_def_t NAME##_def = {                                          \
        .type = #NAME, .inputs = xy_in, .outputs = out_slot,                         \
        .infer = logical_infer, .dtype_slot = "X",                                    \
        .attrs_size = sizeof(oar_bcast_attrs_t), .decode = oar_bcast_decode_no_axis}; \
    OAR_REGISTER_OP(NAME##_def)

LOGICAL_DEF(logical_and)
LOGICAL_DEF(logical_or)
LOGICAL_DEF(logical_xor)

static const oar_op_def_t logical_not_def = {
    .type = "logical_not", .inputs = x_in, .outputs = out_slot,
    .infer = logical_not_infer, .dtype_slot = "X",
    .attrs_size = sizeof(oar_bcast_attrs_t), .decode = oar_bcast_decode_no_axis};
OAR_REGISTER_OP(logical_not_def)
