/*
 * lookup_table.c — embedding lookup (Fluid 1.x lookup_table) and its grad.
 * Kernels in kernels/cpu/lookup_table.c.
 *
 * W [V, D], Ids int64 [..., 1] (or [N]) -> Out [..., D] (or [N, D]) with
 * Ids' LoD. Rows whose id is padding_idx (-1: none) are zeros and get no
 * gradient. The grad W@GRAD is dense [V, D] (duplicate ids accumulate), or
 * with is_sparse a SELECTED_ROWS of height V whose rows are the ids
 * (duplicates kept, as Fluid) and whose value is Out@GRAD as [N, D].
 * The ops are declared in lookup_table.ops; this file holds their inference
 * and the grad maker.
 */
#include "op.h"
#include "ops/lookup_table.h"   /* generated from lookup_table.ops: slots, oar_lt_attrs_t */

#include <string.h>

static const char *nm(const char *s) { return s ? s : "?"; }

static bool is_v2(oar_infer_ctx_t *c) { return strcmp(oar_op_desc_type(oar_ic_op(c)), "lookup_table_v2") == 0 ||
                                               strcmp(oar_op_desc_type(oar_ic_op(c)), "lookup_table_v2_grad") == 0; }

/* W must be [V, D]; padding_idx -1 or a row of W. Fills V and D. */
static int check_w(oar_infer_ctx_t *c, int64_t *v, int64_t *d)
{
    int nw;
    const int64_t *w = oar_ic_in_dims(c, "W", 0, &nw);
    if (!w) return OAR_ERR_SHAPE;
    if (nw != 2) {
        char b[160];
        return oar_ic_error(c, OAR_ERR_SHAPE, "input W '%s' has shape %s; expected [V, D]",
                            nm(oar_ic_in_name(c, "W", 0)), oar_shape_str(w, nw, b, sizeof b));
    }
    *v = w[0];
    *d = w[1];
    const oar_lt_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const int64_t pad = a->padding_idx;
    if (pad < -1 || (w[0] >= 0 && pad >= w[0]))
        return oar_ic_error(c, OAR_ERR_RANGE, "attr padding_idx = %lld is not -1 (none) or a row of W '%s' "
                            "(V = %lld)", (long long)pad, nm(oar_ic_in_name(c, "W", 0)), (long long)w[0]);
    return OAR_OK;
}

/* Ids must be int64 [N] or [..., 1]; out gets its dims with D appended */
static int ids_out_dims(oar_infer_ctx_t *c, int64_t d, int64_t *out, int *nout)
{
    int ni;
    const int64_t *ids = oar_ic_in_dims(c, "Ids", 0, &ni);
    if (!ids) return OAR_ERR_SHAPE;
    int dt = oar_ic_in_dtype(c, "Ids", 0);
    if (dt >= 0 && dt != OAR_INT64)
        return oar_ic_error(c, OAR_ERR_DTYPE, "input Ids '%s' has dtype %s, expected int64",
                            nm(oar_ic_in_name(c, "Ids", 0)), nm(oar_dtype_name(dt)));
    char b[160];
    if (is_v2(c)) {
        if (ni + 1 > OAR_MAX_DIMS)
            return oar_ic_error(c, OAR_ERR_SHAPE, "input Ids '%s' has %d dims; Out would exceed %d",
                                nm(oar_ic_in_name(c, "Ids", 0)), ni, OAR_MAX_DIMS);
        memcpy(out, ids, sizeof(int64_t) * (size_t)ni);
        out[ni] = d;
        *nout = ni + 1;
        return OAR_OK;
    }
    if (ni == 0 || (ni > 1 && !oar_dim_eq(ids[ni - 1], 1)))
        return oar_ic_error(c, OAR_ERR_SHAPE, "input Ids '%s' has shape %s; expected [N] or [..., 1]",
                            nm(oar_ic_in_name(c, "Ids", 0)), oar_shape_str(ids, ni, b, sizeof b));
    int keep = ni == 1 ? 1 : ni - 1;
    memcpy(out, ids, sizeof(int64_t) * (size_t)keep);
    out[keep] = d;
    *nout = keep + 1;
    return OAR_OK;
}

static int lt_infer(oar_infer_ctx_t *c)
{
    int64_t v = 0, d = 0, out[OAR_MAX_DIMS];
    int no = 0;
    OAR_TRY(check_w(c, &v, &d));
    OAR_TRY(ids_out_dims(c, d, out, &no));
    OAR_TRY(oar_ic_set_out(c, "Out", 0, out, no, oar_ic_in_dtype(c, "W", 0)));
    return oar_ic_share_lod(c, "Ids", 0, "Out", 0);
}

/* W is read for its shape only; Out is not needed */
static int lt_grad_maker(oar_grad_ctx_t *g)
{
    bool v2 = strcmp(oar_op_desc_type(oar_gc_fwd(g)), "lookup_table_v2") == 0;
    oar_op_desc_t *op = oar_gc_new_op(g, v2 ? "lookup_table_v2_grad" : "lookup_table_grad");
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "W"));
    OAR_TRY(oar_gc_in(g, op, "Ids"));
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    return oar_gc_in_grad(g, op, "W");
}

/* ---- lookup_table_grad --------------------------------------------------- */
static int ltg_infer(oar_infer_ctx_t *c)
{
    const char *gname = oar_ic_out_name(c, "W@GRAD", 0);
    if (!gname || strcmp(gname, OAR_EMPTY_VAR) == 0) return OAR_OK;
    int64_t v = 0, d = 0, out[OAR_MAX_DIMS];
    int no = 0, ng = 0;
    OAR_TRY(check_w(c, &v, &d));
    OAR_TRY(ids_out_dims(c, d, out, &no));
    const int64_t *g = oar_ic_in_dims(c, "Out@GRAD", 0, &ng);
    if (!g) return OAR_ERR_SHAPE;
    bool ok = ng == no;
    for (int i = 0; ok && i < ng; i++) ok = oar_dim_eq(g[i], out[i]);
    if (!ok) {
        char bg[160], bo[160];
        return oar_ic_error(c, OAR_ERR_SHAPE, "Out@GRAD '%s' has shape %s, expected %s (Ids rows x D)",
                            nm(oar_ic_in_name(c, "Out@GRAD", 0)), oar_shape_str(g, ng, bg, sizeof bg),
                            oar_shape_str(out, no, bo, sizeof bo));
    }
    int64_t wd[2] = {v, d};
    const oar_lt_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    if (a->is_sparse) {
        /* the kernel fills the rows payload; a LoD tensor must not be made here */
        if (oar_ic_runtime(c)) return OAR_OK;
        OAR_TRY(oar_ic_set_out_var_type(c, "W@GRAD", 0, OAR_VAR_SELECTED_ROWS));
    }
    return oar_ic_set_out(c, "W@GRAD", 0, wd, 2, oar_ic_in_dtype(c, "W", 0));
}

#define OAR_OPS_DEFINE
#include "ops/lookup_table.h"   /* the tables, the decoder and the registrations */
