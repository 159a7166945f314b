/* reduce.c — mean and reduce_{sum,mean,max,min,prod} with their grads.
 * Kernels in kernels/cpu/reduce.c.
 *
 * Fluid 1.x semantics: `dim` lists axes (negative counts from the end;
 * empty means the default {0}), `reduce_all` reduces every axis, `keep_dim` keeps
 * reduced axes as 1; reducing every axis without keep_dim gives shape [1].
 * Grads of max/min route the output gradient to every position equal to the
 * extreme (ties all receive it), as Fluid's do. */
#include "op.h"
#include "reduce.h"
#include "paddle_attrs.h"

#include <stdio.h>
#include <string.h>

static const oar_slot_def_t x_in[] = {{"X", 0}, {NULL, 0}};
static const oar_slot_def_t out_out[] = {{"Out", 0}, {NULL, 0}};
static const oar_slot_def_t xgrad_out[] = {{"X@GRAD", 0}, {NULL, 0}};

static int grad_like_x(oar_infer_ctx_t *c) { return oar_infer_grad_like_inputs(c); }

/* ---- mean -------------------------------------------------------------- */
static int mean_infer(oar_infer_ctx_t *c)
{
    int nd;
    if (!oar_ic_in_dims(c, "X", 0, &nd)) return OAR_ERR_SHAPE;
    int64_t one = 1;
    return oar_ic_set_out(c, "Out", 0, &one, 1, oar_ic_in_dtype(c, "X", 0));
}

/* X's values are not needed, only its shape; Out is not needed at all */
static int mean_grad_maker(oar_grad_ctx_t *g)
{
    oar_op_desc_t *op = oar_gc_new_op(g, "mean_grad");
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "X"));
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    return oar_gc_in_grad(g, op, "X");
}

static const oar_op_def_t mean_def = {
    .type = "mean", .inputs = x_in, .outputs = out_out, .attrs = NULL,
    .infer = mean_infer, .grad = mean_grad_maker};
OAR_REGISTER_OP(mean_def)

static const oar_slot_def_t mean_grad_in[] = {{"X", 0}, {"Out@GRAD", 0}, {NULL, 0}};
static const oar_op_def_t mean_grad_def = {
    .type = "mean_grad", .inputs = mean_grad_in, .outputs = xgrad_out, .attrs = NULL,
    .infer = grad_like_x, .grad = NULL, .dtype_slot = "Out@GRAD"};
OAR_REGISTER_OP(mean_grad_def)

/* ---- reduce_* ---------------------------------------------------------- */
static const oar_attr_def_t reduce_attrs[] = {
    {.name = "dim", .type = OAR_ATTR_INTS},   /* empty = {0}, see reduce_mask */
    {.name = "keep_dim", .type = OAR_ATTR_BOOLEAN, .def = 0},
    {.name = "reduce_all", .type = OAR_ATTR_BOOLEAN, .def = 0},
    /* a cast of the input/result; refused unless -1 (src/attr_check.c) */
    OAR_PA_I("in_dtype", -1), OAR_PA_I("out_dtype", -1),
    OAR_PA_USE_MKLDNN, OAR_PA_MKLDNN_DT, OAR_PA_ONEDNN,
    {.name = NULL}};

static int reduce_decode(oar_decode_ctx_t *d, void *out)
{
    static const int32_t def0 = 0;
    oar_reduce_attrs_t *a = out;
    a->dim = oar_dec_ints(d, "dim");
    if (a->dim.n == 0) a->dim = (oar_ints_t){&def0, 1};   /* list attrs default to empty */
    a->keep_dim = oar_dec_b(d, "keep_dim");
    a->reduce_all = oar_dec_b(d, "reduce_all");
    return oar_dec_status(d);
}

/* Which axes of a rank-nd X are reduced; an error status on a bad axis. */
static int reduce_mask(oar_infer_ctx_t *c, int nd, bool *mask)
{
    const oar_op_desc_t *op = oar_ic_op(c);
    int n = 0;
    const int32_t *dim = oar_attr_ints(op, "dim", &n);
    bool ra = oar_attr_b(op, "reduce_all");
    /* list attrs default to empty: an empty `dim` is Fluid's default {0} */
    static const int32_t def0 = 0;
    if (n == 0) { dim = &def0; n = 1; }
    for (int i = 0; i < nd; i++) mask[i] = ra;
    for (int i = 0; i < n && !ra; i++) {
        int d = dim[i] < 0 ? dim[i] + nd : dim[i];
        if (d < 0 || d >= (nd > 0 ? nd : 1))
            return oar_ic_error(c, OAR_ERR_RANGE, "attr dim[%d] = %d is out of range for input X "
                                "'%s' of rank %d (valid: %d..%d)", i, (int)dim[i],
                                oar_ic_in_name(c, "X", 0), nd, -nd, nd - 1);
        if (nd > 0) mask[d] = true;
    }
    return OAR_OK;
}

static int reduce_infer(oar_infer_ctx_t *c)
{
    int nd;
    const int64_t *d = oar_ic_in_dims(c, "X", 0, &nd);
    if (!d) return OAR_ERR_SHAPE;
    bool mask[OAR_MAX_DIMS];
    OAR_TRY(reduce_mask(c, nd, mask));
    bool keep = oar_attr_b(oar_ic_op(c), "keep_dim");
    int64_t out[OAR_MAX_DIMS];
    int on = 0;
    for (int i = 0; i < nd; i++) {
        if (!mask[i]) out[on++] = d[i];
        else if (keep) out[on++] = 1;
    }
    if (on == 0) out[on++] = 1;
    OAR_TRY(oar_ic_set_out(c, "Out", 0, out, on, oar_ic_in_dtype(c, "X", 0)));
    /* rows survive (and so does their LoD) only when axis 0 is kept */
    if (nd > 0 && !mask[0]) return oar_ic_share_lod(c, "X", 0, "Out", 0);
    return OAR_OK;
}

/* sum and mean need only X's shape and the output gradient */
static int reduce_linear_grad_maker(oar_grad_ctx_t *g)
{
    oar_op_desc_t *op = oar_gc_new_grad_op(g);
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "X"));
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    return oar_gc_in_grad(g, op, "X");
}

static const oar_slot_def_t reduce_grad_in[] = {
    {"X", 0}, {"Out", OAR_SLOT_DISPENSABLE}, {"Out@GRAD", 0}, {NULL, 0}};

#define REDUCE_OP(name, maker)                                                          \
    static const oar_op_def_t name##_def = {                                            \
        .type = #name, .inputs = x_in, .outputs = out_out, .attrs = reduce_attrs,       \
        .infer = reduce_infer, .grad = maker,                                           \
        .attrs_size = sizeof(oar_reduce_attrs_t), .decode = reduce_decode};             \
    OAR_REGISTER_OP(name##_def)                                                         \
    static const oar_op_def_t name##_grad_def = {                                       \
        .type = #name "_grad", .inputs = reduce_grad_in, .outputs = xgrad_out,          \
        .attrs = reduce_attrs, .infer = grad_like_x, .grad = NULL,                      \
        .dtype_slot = "Out@GRAD",                                                       \
        .attrs_size = sizeof(oar_reduce_attrs_t), .decode = reduce_decode};             \
    OAR_REGISTER_OP(name##_grad_def)

REDUCE_OP(reduce_sum, reduce_linear_grad_maker)
REDUCE_OP(reduce_mean, reduce_linear_grad_maker)
REDUCE_OP(reduce_max, oar_grad_default)
REDUCE_OP(reduce_min, oar_grad_default)
REDUCE_OP(reduce_prod, oar_grad_default)
