/*
 * misc_ext.c — inference, grad maker and rb_finish of fill_any_like,
 * argsort (with grad), reduce_all/reduce_any and elementwise_floordiv /
 * elementwise_mod; the ops themselves (slots, attributes, docs) are declared
 * in misc_ext.ops. Kernels in kernels/cpu/misc_ext.c.
 */
#include <stddef.h>
#include <stdio.h>
#include "op.h"
#include "attr_tensor.h"   /* oar_attr_int_list */
#include "broadcast.h"
#include "ops/misc_ext.h"   /* generated from misc_ext.ops */

/* the kernels (bcast_run.h) read the decoded attributes as broadcast.h's
 * oar_bcast_attrs_t */
_Static_assert(sizeof(oar_ewm_attrs_t) == sizeof(oar_bcast_attrs_t) &&
                   offsetof(oar_ewm_attrs_t, axis) == offsetof(oar_bcast_attrs_t, axis),
               "oar_ewm_attrs_t must have oar_bcast_attrs_t's layout");

/* ---- fill_any_like: Out like X, every element `value` ------------------- */
static int fal_infer(oar_infer_ctx_t *c)
{
    const oar_fal_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;   /* the decoder's error is set */
    int dt = a->dtype;
    if (dt != -1 && dt != OAR_FP32 && dt != OAR_FP64 && dt != OAR_INT32 && dt != OAR_INT64 && dt != OAR_BOOL)
        return oar_ic_error(c, OAR_ERR_DTYPE, "attr dtype = %d: oar fills bool, int32, int64, float32 or float64", dt);
    int nx;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, &nx);
    if (!xd) return OAR_ERR_SHAPE;
    OAR_TRY(oar_ic_set_out(c, "Out", 0, xd, nx, dt == -1 ? oar_ic_in_dtype(c, "X", 0) : dt));
    return oar_ic_share_lod(c, "X", 0, "Out", 0);
}

/* ---- argsort ----------------------------------------------------------- */
static int as_infer(oar_infer_ctx_t *c)
{
    int nx;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, &nx);
    if (!xd) return OAR_ERR_SHAPE;
    const oar_argsort_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int axis = a->axis;
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

/* ---- reduce_all / reduce_any (bool) --------------------------------------- */
/* the decoder's last step: dim is INTS or LONGS (Paddle 2.x), which the
 * typed readers keep apart; empty means {0} */
static void rb_finish(oar_decode_ctx_t *d, oar_rbool_attrs_t *a)
{
    if (!oar_attr_int_list(oar_dec_op(d), "dim", a->dim, OAR_MAX_DIMS, &a->ndim)) {
        oar_dec_error(d, OAR_ERR_INVALID, "attr dim must be INTS or LONGS of at most %d values", OAR_MAX_DIMS);
        return;
    }
    if (a->ndim == 0) { a->dim[0] = 0; a->ndim = 1; }
}

/* the reduced dims of an X of rank nx as a bit mask */
static int rb_mask(const oar_rbool_attrs_t *a, int nx, uint32_t *mask, char *why, size_t wn)
{
    *mask = 0;
    if (a->reduce_all || nx == 0) { *mask = nx ? (1u << nx) - 1 : 0; return OAR_OK; }
    for (int i = 0; i < a->ndim; i++) {
        int64_t ax = a->dim[i] < 0 ? a->dim[i] + nx : a->dim[i];
        if (ax < 0 || ax >= nx) {
            snprintf(why, wn, "attr dim[%d] = %lld is out of range for X of rank %d", i, (long long)a->dim[i], nx);
            return OAR_ERR_RANGE;
        }
        *mask |= 1u << ax;
    }
    return OAR_OK;
}
static int rb_infer(oar_infer_ctx_t *c)
{
    const oar_rbool_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;   /* rb_finish's error is set */
    int dt = oar_ic_in_dtype(c, "X", 0);
    if (dt >= 0 && dt != OAR_BOOL)
        return oar_ic_error(c, OAR_ERR_DTYPE, "X must be bool, it is %s", oar_dtype_name(dt) ? oar_dtype_name(dt) : "?");
    int nx;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, &nx);
    if (!xd) return OAR_ERR_SHAPE;
    uint32_t mask;
    char why[160];
    int rc = rb_mask(a, nx, &mask, why, sizeof why);
    if (rc != OAR_OK) return oar_ic_error(c, rc, "%s", why);
    int64_t od[OAR_MAX_DIMS];
    int no = 0;
    for (int i = 0; i < nx; i++)
        if (!(mask & (1u << i))) od[no++] = xd[i];
        else if (a->keep_dim) od[no++] = 1;
    if (no == 0) od[no++] = 1;   /* a full reduction is [1], as Fluid 1.8 */
    return oar_ic_set_out(c, "Out", 0, od, no, OAR_BOOL);
}

/* ---- elementwise_floordiv / elementwise_mod ----------------------------- */
static int ew_infer(oar_infer_ctx_t *c) { return oar_bcast_infer(c, -1); }

#define OAR_OPS_DEFINE
#include "ops/misc_ext.h"
