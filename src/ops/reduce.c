/* reduce.c — inference and grad makers of mean and
 * reduce_{sum,mean,max,min,prod} with their grads; the ops themselves
 * (slots, attributes, docs) are declared in reduce.ops. Kernels in
 * kernels/cpu/reduce.c.
 *
 * Fluid 1.x semantics: `dim` lists axes (negative counts from the end;
 * empty means the default {0}), `reduce_all` reduces every axis, `keep_dim` keeps
 * reduced axes as 1; reducing every axis without keep_dim gives shape [1].
 * Grads of max/min route the output gradient to every position equal to the
 * extreme (ties all receive it), as Fluid's do. */
#include "op.h"
#include "ops/reduce.h"   /* generated from reduce.ops */
#include "ops/double_grad_makers.h"

#include <stdio.h>
#include <string.h>

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

/* ---- reduce_* ---------------------------------------------------------- */
/* the decoded `dim` (reduce.ops' set), never empty: list attrs default to
 * empty, and an empty `dim` is Fluid's default {0} */
static oar_ints_t reduce_dim(oar_decode_ctx_t *d)
{
    static const int32_t def0 = 0;
    oar_ints_t dim = oar_dec_ints(d, "dim");
    if (dim.n == 0) dim = (oar_ints_t){&def0, 1};
    return dim;
}

/* Which axes of a rank-nd X are reduced; an error status on a bad axis. */
static int reduce_mask(oar_infer_ctx_t *c, const oar_reduce_attrs_t *a, int nd, bool *mask)
{
    const int n = a->dim.n;
    const int32_t *dim = a->dim.v;
    const bool ra = a->reduce_all;
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
    const oar_reduce_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    bool mask[OAR_MAX_DIMS];
    OAR_TRY(reduce_mask(c, a, nd, mask));
    const bool keep = a->keep_dim;
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

#define OAR_OPS_DEFINE
#include "ops/reduce.h"   /* the tables, decoders and registrations */
