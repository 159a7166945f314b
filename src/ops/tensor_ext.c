/*
 * tensor_ext.c — inference and grad makers of Paddle 2.x's where,
 * index_select, gather_nd and cumsum (also in Fluid 1.8 but where), with
 * their grads; the ops themselves (slots, attributes, docs) are declared in
 * tensor_ext.ops. Kernels in kernels/cpu/tensor_ext.c.
 */
#include <stdio.h>
#include <string.h>
#include "op.h"
#include "ops/tensor_ext.h"   /* generated from tensor_ext.ops */

static const char *nm(const char *s) { return s ? s : "?"; }

/* "<fwd>_grad" reading `ins` (forward inputs), Out@GRAD; writing the grads of `grads` */
static int make_grad(oar_grad_ctx_t *g, const char *const *ins, const char *const *grads)
{
    oar_op_desc_t *op = oar_gc_new_grad_op(g);
    if (!op) return OAR_ERR_NOMEM;
    for (int i = 0; ins[i]; i++) OAR_TRY(oar_gc_in(g, op, ins[i]));
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    for (int i = 0; grads[i]; i++) OAR_TRY(oar_gc_in_grad(g, op, grads[i]));
    return OAR_OK;
}

static int check_index_dtype(oar_infer_ctx_t *c, const char *slot)
{
    int dt = oar_ic_in_dtype(c, slot, 0);
    if (dt >= 0 && dt != OAR_INT32 && dt != OAR_INT64)
        return oar_ic_error(c, OAR_ERR_DTYPE, "%s ('%s') must be int32 or int64, it is %s", slot,
                            nm(oar_ic_in_name(c, slot, 0)), nm(oar_dtype_name(dt)));
    return OAR_OK;
}

/* ---- where: Out = Condition ? X : Y (same shapes, as Paddle's op) -------- */
static int where_infer(oar_infer_ctx_t *c)
{
    int dt = oar_ic_in_dtype(c, "Condition", 0);
    if (dt >= 0 && dt != OAR_BOOL)
        return oar_ic_error(c, OAR_ERR_DTYPE, "Condition ('%s') must be bool, it is %s",
                            nm(oar_ic_in_name(c, "Condition", 0)), nm(oar_dtype_name(dt)));
    int xt = oar_ic_in_dtype(c, "X", 0), yt = oar_ic_in_dtype(c, "Y", 0);
    if (xt >= 0 && yt >= 0 && xt != yt)
        return oar_ic_error(c, OAR_ERR_DTYPE, "X is %s but Y is %s", nm(oar_dtype_name(xt)), nm(oar_dtype_name(yt)));
    OAR_TRY(oar_ic_check_same_dims(c, "Y", "X"));
    OAR_TRY(oar_ic_check_same_dims(c, "Condition", "X"));
    return oar_infer_same_as(c, "X", "Out");
}
static int where_grad(oar_grad_ctx_t *g)
{
    static const char *const ins[] = {"Condition", "X", "Y", NULL}, *const grads[] = {"X", "Y", NULL};
    return make_grad(g, ins, grads);
}
/* ---- index_select: X's slices Index[i] along dim ------------------------ */
static int isel_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(check_index_dtype(c, "Index"));
    int nx, ni;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, &nx);
    if (!xd) return OAR_ERR_SHAPE;
    const int64_t *id = oar_ic_in_dims(c, "Index", 0, &ni);
    if (!id) return OAR_ERR_SHAPE;
    const oar_isel_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int dim = a->dim;
    if (dim < -nx || dim >= nx || nx == 0)
        return oar_ic_error(c, OAR_ERR_RANGE, "attr dim = %d is out of range for X of rank %d", dim, nx);
    if (dim < 0) dim += nx;
    if (ni != 1 && !(ni == 2 && id[1] == 1))
        return oar_ic_error(c, OAR_ERR_SHAPE, "Index must be 1-D (or [N, 1]), it has %d dims", ni);
    int64_t od[OAR_MAX_DIMS];
    memcpy(od, xd, sizeof(int64_t) * (size_t)nx);
    od[dim] = id[0];
    return oar_ic_set_out(c, "Out", 0, od, nx, oar_ic_in_dtype(c, "X", 0));
}
static int isel_grad(oar_grad_ctx_t *g)
{
    static const char *const ins[] = {"X", "Index", NULL}, *const grads[] = {"X", NULL};
    return make_grad(g, ins, grads);
}
/* ---- gather_nd: Out[i...] = X[Index[i..., :]] ---------------------------- */
static int gnd_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(check_index_dtype(c, "Index"));
    int nx, ni;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, &nx);
    if (!xd) return OAR_ERR_SHAPE;
    const int64_t *id = oar_ic_in_dims(c, "Index", 0, &ni);
    if (!id) return OAR_ERR_SHAPE;
    if (ni < 1) return oar_ic_error(c, OAR_ERR_SHAPE, "Index must have at least 1 dim");
    int64_t k = id[ni - 1];
    if (k > nx)
        return oar_ic_error(c, OAR_ERR_SHAPE, "Index's last dim (%lld) exceeds X's rank (%d)", (long long)k, nx);
    int64_t od[OAR_MAX_DIMS];
    int no = 0;
    for (int i = 0; i < ni - 1; i++) od[no++] = id[i];
    if (k < 0) return oar_ic_error(c, OAR_ERR_SHAPE, "Index's last dim must be known");
    if (ni - 1 + nx - k > OAR_MAX_DIMS) return oar_ic_error(c, OAR_ERR_SHAPE, "Out would have too many dims");
    for (int i = (int)k; i < nx; i++) od[no++] = xd[i];
    return oar_ic_set_out(c, "Out", 0, od, no, oar_ic_in_dtype(c, "X", 0));
}
static int gnd_grad(oar_grad_ctx_t *g)
{
    static const char *const ins[] = {"X", "Index", NULL}, *const grads[] = {"X", NULL};
    return make_grad(g, ins, grads);
}
/* ---- cumsum -------------------------------------------------------------- */
static int cs_infer(oar_infer_ctx_t *c)
{
    int nx;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, &nx);
    if (!xd) return OAR_ERR_SHAPE;
    const oar_cumsum_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    if (a->flatten) {
        int64_t n = 1;
        for (int i = 0; i < nx; i++) n = xd[i] < 0 || n < 0 ? -1 : n * xd[i];
        return oar_ic_set_out(c, "Out", 0, &n, 1, oar_ic_in_dtype(c, "X", 0));
    }
    const int axis = a->axis;
    if (nx > 0 && (axis < -nx || axis >= nx))
        return oar_ic_error(c, OAR_ERR_RANGE, "attr axis = %d is out of range for X of rank %d", axis, nx);
    return oar_infer_same_as(c, "X", "Out");
}
static int cs_grad(oar_grad_ctx_t *g)
{
    static const char *const ins[] = {"X", NULL}, *const grads[] = {"X", NULL};
    return make_grad(g, ins, grads);
}
#define OAR_OPS_DEFINE
#include "ops/tensor_ext.h"   /* the tables, decoders and registrations */
