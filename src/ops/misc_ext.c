/*
 * misc_ext.c — fill_any_like, argsort (with grad), reduce_all/reduce_any
 * (Fluid 1.8 / Paddle 2.x) and elementwise_floordiv / elementwise_mod
 * (broadcasting like elementwise_*, no gradient as in Fluid). Kernels in
 * kernels/cpu/misc_ext.c.
 */
#include <stdio.h>
#include <string.h>
#include "op.h"
#include "paddle_attrs.h"
#include "attr_tensor.h"
#include "broadcast.h"
#include "misc_ext.h"

#define END {NULL, 0, 0, NULL, false, 0, 0, NULL}
static const oar_slot_def_t x_in[] = {{"X", 0}, {NULL, 0}};
static const oar_slot_def_t out_slot[] = {{"Out", 0}, {NULL, 0}};

/* ---- fill_any_like: Out like X, every element `value` ------------------- */
static const oar_attr_def_t fal_attrs[] = {
    OAR_PA_F("value", 0.0), {"dtype", OAR_ATTR_INT, -1, NULL, false, 0, 0, NULL}, END};
static int fal_decode(oar_decode_ctx_t *d, void *out)
{
    oar_fal_attrs_t *a = out;
    a->value = oar_dec_f(d, "value");
    a->dtype = oar_dec_i(d, "dtype");
    return oar_dec_status(d);
}
static int fal_infer(oar_infer_ctx_t *c)
{
    int dt = oar_attr_i(oar_ic_op(c), "dtype");
    if (dt != -1 && dt != OAR_FP32 && dt != OAR_FP64 && dt != OAR_INT32 && dt != OAR_INT64 && dt != OAR_BOOL)
        return oar_ic_error(c, OAR_ERR_DTYPE, "attr dtype = %d: oar fills bool, int32, int64, float32 or float64", dt);
    int nx;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, &nx);
    if (!xd) return OAR_ERR_SHAPE;
    OAR_TRY(oar_ic_set_out(c, "Out", 0, xd, nx, dt == -1 ? oar_ic_in_dtype(c, "X", 0) : dt));
    return oar_ic_share_lod(c, "X", 0, "Out", 0);
}
static const oar_op_def_t fal_def = {
    .type = "fill_any_like", .inputs = x_in, .outputs = out_slot, .attrs = fal_attrs, .infer = fal_infer,
    .dtype_slot = "X", .attrs_size = sizeof(oar_fal_attrs_t), .decode = fal_decode};
OAR_REGISTER_OP(fal_def)

/* ---- argsort ----------------------------------------------------------- */
static const oar_slot_def_t as_out[] = {{"Out", 0}, {"Indices", 0}, {NULL, 0}};
static const oar_slot_def_t as_grad_in[] = {{"X", 0}, {"Indices", 0}, {"Out@GRAD", 0}, {NULL, 0}};
static const oar_slot_def_t x_grad_out[] = {{"X@GRAD", OAR_SLOT_DISPENSABLE}, {NULL, 0}};
static const oar_attr_def_t as_attrs[] = {
    {"axis", OAR_ATTR_INT, -1, NULL, false, 0, 0, NULL}, OAR_PA_B("descending", 0),
    OAR_PA_B("stable", 0),   /* Paddle 3; oar's sort is always stable */
    END};
static int as_decode(oar_decode_ctx_t *d, void *out)
{
    oar_argsort_attrs_t *a = out;
    a->axis = oar_dec_i(d, "axis");
    a->descending = oar_dec_b(d, "descending");
    return oar_dec_status(d);
}
static int as_infer(oar_infer_ctx_t *c)
{
    int nx;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, &nx);
    if (!xd) return OAR_ERR_SHAPE;
    int axis = oar_attr_i(oar_ic_op(c), "axis");
    if (nx == 0 || axis < -nx || axis >= nx)
        return oar_ic_error(c, OAR_ERR_RANGE, "attr axis = %d is out of range for X of rank %d", axis, nx);
    OAR_TRY(oar_ic_set_out(c, "Out", 0, xd, nx, oar_ic_in_dtype(c, "X", 0)));
    return oar_ic_set_out(c, "Indices", 0, xd, nx, OAR_INT64);
}
static int as_grad(oar_grad_ctx_t *g)
{
    oar_op_desc_t *op = oar_gc_new_op(g, "argsort_grad");
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "X"));
    OAR_TRY(oar_gc_out(g, op, "Indices"));
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    return oar_gc_in_grad(g, op, "X");
}
static int as_grad_infer(oar_infer_ctx_t *c) { return oar_infer_grad_like_inputs(c); }
static const oar_op_def_t as_def = {
    .type = "argsort", .inputs = x_in, .outputs = as_out, .attrs = as_attrs, .infer = as_infer,
    .grad = as_grad, .dtype_slot = "X", .attrs_size = sizeof(oar_argsort_attrs_t), .decode = as_decode};
OAR_REGISTER_OP(as_def)
static const oar_op_def_t as_grad_def = {
    .type = "argsort_grad", .inputs = as_grad_in, .outputs = x_grad_out, .attrs = as_attrs,
    .infer = as_grad_infer, .dtype_slot = "Out@GRAD", .attrs_size = sizeof(oar_argsort_attrs_t),
    .decode = as_decode};
OAR_REGISTER_OP(as_grad_def)

/* ---- reduce_all / reduce_any (bool) --------------------------------------- */
static const oar_attr_def_t rb_attrs[] = {
    OAR_PA_L("dim", OAR_ATTR_INTS),   /* Paddle 2.x writes LONGS (src/attr_check.c) */
    OAR_PA_B("keep_dim", 0), OAR_PA_B("reduce_all", 0),
    OAR_PA_I("in_dtype", -1), OAR_PA_I("out_dtype", -1), OAR_PA_USE_MKLDNN, OAR_PA_ONEDNN, END};

/* the reduced dims of an X of rank nx as a bit mask; empty dim means {0} */
static int rb_mask(const oar_op_desc_t *op, int nx, uint32_t *mask, char *why, size_t wn)
{
    int64_t d[OAR_MAX_DIMS];
    int n = 0;
    if (!oar_attr_int_list(op, "dim", d, OAR_MAX_DIMS, &n)) {
        snprintf(why, wn, "attr dim must be INTS or LONGS of at most %d values", OAR_MAX_DIMS);
        return OAR_ERR_INVALID;
    }
    *mask = 0;
    if (oar_attr_b(op, "reduce_all") || nx == 0) { *mask = nx ? (1u << nx) - 1 : 0; return OAR_OK; }
    if (n == 0) { d[0] = 0; n = 1; }
    for (int i = 0; i < n; i++) {
        int64_t a = d[i] < 0 ? d[i] + nx : d[i];
        if (a < 0 || a >= nx) {
            snprintf(why, wn, "attr dim[%d] = %lld is out of range for X of rank %d", i, (long long)d[i], nx);
            return OAR_ERR_RANGE;
        }
        *mask |= 1u << a;
    }
    return OAR_OK;
}
static int rb_decode(oar_decode_ctx_t *d, void *out)
{
    oar_rbool_attrs_t *a = out;
    a->all = strcmp(oar_op_desc_type(oar_dec_op(d)), "reduce_all") == 0;
    (void)oar_dec_b(d, "keep_dim");
    a->reduce_all = oar_dec_b(d, "reduce_all");
    /* dim is INTS or LONGS (Paddle 2.x), which the typed readers keep apart */
    if (!oar_attr_int_list(oar_dec_op(d), "dim", a->dim, OAR_MAX_DIMS, &a->ndim))
        return oar_dec_error(d, OAR_ERR_INVALID, "attr dim must be INTS or LONGS of at most %d values",
                             OAR_MAX_DIMS);
    if (a->ndim == 0) { a->dim[0] = 0; a->ndim = 1; }
    return oar_dec_status(d);
}
static int rb_infer(oar_infer_ctx_t *c)
{
    int dt = oar_ic_in_dtype(c, "X", 0);
    if (dt >= 0 && dt != OAR_BOOL)
        return oar_ic_error(c, OAR_ERR_DTYPE, "X must be bool, it is %s", oar_dtype_name(dt) ? oar_dtype_name(dt) : "?");
    int nx;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, &nx);
    if (!xd) return OAR_ERR_SHAPE;
    uint32_t mask;
    char why[160];
    int rc = rb_mask(oar_ic_op(c), nx, &mask, why, sizeof why);
    if (rc != OAR_OK) return oar_ic_error(c, rc, "%s", why);
    bool keep = oar_attr_b(oar_ic_op(c), "keep_dim");
    int64_t od[OAR_MAX_DIMS];
    int no = 0;
    for (int i = 0; i < nx; i++)
        if (!(mask & (1u << i))) od[no++] = xd[i];
        else if (keep) od[no++] = 1;
    if (no == 0) od[no++] = 1;   /* a full reduction is [1], as Fluid 1.8 */
    return oar_ic_set_out(c, "Out", 0, od, no, OAR_BOOL);
}
static const oar_op_def_t reduce_all_def = {
    .type = "reduce_all", .inputs = x_in, .outputs = out_slot, .attrs = rb_attrs, .infer = rb_infer,
    .dtype_slot = "X", .attrs_size = sizeof(oar_rbool_attrs_t), .decode = rb_decode};
OAR_REGISTER_OP(reduce_all_def)
static const oar_op_def_t reduce_any_def = {
    .type = "reduce_any", .inputs = x_in, .outputs = out_slot, .attrs = rb_attrs, .infer = rb_infer,
    .dtype_slot = "X", .attrs_size = sizeof(oar_rbool_attrs_t), .decode = rb_decode};
OAR_REGISTER_OP(reduce_any_def)

/* ---- elementwise_floordiv / elementwise_mod ----------------------------- */
static const oar_slot_def_t ew_in[] = {{"X", 0}, {"Y", 0}, {NULL, 0}};
static const oar_attr_def_t ew_attrs[] = {
    {"axis", OAR_ATTR_INT, -1, NULL, false, 0, 0, NULL}, OAR_PA_USE_MKLDNN,
    OAR_PA_S("x_data_format", ""), OAR_PA_S("y_data_format", ""),
    OAR_PA_SCALES_XY, OAR_PA_QUANTIZER, OAR_PA_MKLDNN_DT, OAR_PA_ONEDNN, END};
static int ew_infer(oar_infer_ctx_t *c) { return oar_bcast_infer(c, -1); }
#define EW_DEF(NAME)                                                                            \
    static const oar_op_def_t NAME##_def = {                                                    \
        .type = "elementwise_" #NAME, .inputs = ew_in, .outputs = out_slot, .attrs = ew_attrs,  \
        .infer = ew_infer, .attrs_size = sizeof(oar_bcast_attrs_t), .decode = oar_bcast_decode_axis}; \
    OAR_REGISTER_OP(NAME##_def)
EW_DEF(floordiv)
EW_DEF(mod)
