/*
 * index_ops.c — ops driven by integer positions (Fluid 1.x): gather (+grad,
 * a scatter-add), one_hot, top_k (+grad: Out@GRAD routed back to the
 * chosen positions; Fluid 1.8 has none, it is cheap), arg_max, arg_min.
 * Kernels in kernels/cpu/index_ops.c. The ops are declared in
 * index_ops.ops; this file holds their inference and grad makers.
 */
#include "op.h"
#include "ops/index_ops.h"   /* generated from index_ops.ops: slots, attribute structs */

#include <string.h>

static const char *nm(const char *s) { return s ? s : "?"; }

static int int_input(oar_infer_ctx_t *c, const char *slot, bool allow_int32)
{
    int dt = oar_ic_in_dtype(c, slot, 0);
    if (dt >= 0 && dt != OAR_INT64 && !(allow_int32 && dt == OAR_INT32))
        return oar_ic_error(c, OAR_ERR_DTYPE, "input %s '%s' has dtype %s, expected %s", slot,
                            nm(oar_ic_in_name(c, slot, 0)), nm(oar_dtype_name(dt)),
                            allow_int32 ? "int32 or int64" : "int64");
    return OAR_OK;
}

/* ---- gather --------------------------------------------------------------- */
/* Out = [M, X dims[1:]...] for Index [M] or [M, 1] */
static int gather_dims(oar_infer_ctx_t *c, int64_t *out, int *nout, int64_t *x, int *nx)
{
    int ni;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, nx);
    if (!xd) return OAR_ERR_SHAPE;
    memcpy(x, xd, sizeof(int64_t) * (size_t)*nx);
    const int64_t *id = oar_ic_in_dims(c, "Index", 0, &ni);
    if (!id) return OAR_ERR_SHAPE;
    OAR_TRY(int_input(c, "Index", true));
    char b[160];
    if (*nx == 0)
        return oar_ic_error(c, OAR_ERR_SHAPE, "input X '%s' has rank 0", nm(oar_ic_in_name(c, "X", 0)));
    if (ni < 1 || ni > 2 || (ni == 2 && !oar_dim_eq(id[1], 1)))
        return oar_ic_error(c, OAR_ERR_SHAPE, "input Index '%s' has shape %s; expected [M] or [M, 1]",
                            nm(oar_ic_in_name(c, "Index", 0)), oar_shape_str(id, ni, b, sizeof b));
    memcpy(out, x, sizeof(int64_t) * (size_t)*nx);
    out[0] = id[0];
    *nout = *nx;
    return OAR_OK;
}

static int gather_infer(oar_infer_ctx_t *c)
{
    int64_t out[OAR_MAX_DIMS], x[OAR_MAX_DIMS];
    int no = 0, nx = 0;
    OAR_TRY(gather_dims(c, out, &no, x, &nx));
    return oar_ic_set_out(c, "Out", 0, out, no, oar_ic_in_dtype(c, "X", 0));
}

static int gather_grad_maker(oar_grad_ctx_t *g)
{
    oar_op_desc_t *op = oar_gc_new_op(g, "gather_grad");
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "X"));
    OAR_TRY(oar_gc_in(g, op, "Index"));
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    return oar_gc_in_grad(g, op, "X");
}

/* checks `slot` has `want` dims */
static int check_dims(oar_infer_ctx_t *c, const char *slot, const int64_t *want, int nw)
{
    int ng;
    const int64_t *g = oar_ic_in_dims(c, slot, 0, &ng);
    if (!g) return OAR_ERR_SHAPE;
    bool ok = ng == nw;
    for (int i = 0; ok && i < nw; i++) ok = oar_dim_eq(g[i], want[i]);
    if (!ok) {
        char bg[160], bw[160];
        return oar_ic_error(c, OAR_ERR_SHAPE, "%s '%s' has shape %s, expected %s", slot, nm(oar_ic_in_name(c, slot, 0)),
                            oar_shape_str(g, ng, bg, sizeof bg), oar_shape_str(want, nw, bw, sizeof bw));
    }
    return OAR_OK;
}

static int gather_grad_infer(oar_infer_ctx_t *c)
{
    if (!oar_ic_out_present(c, "X@GRAD")) return OAR_OK;
    int64_t out[OAR_MAX_DIMS], x[OAR_MAX_DIMS];
    int no = 0, nx = 0;
    OAR_TRY(gather_dims(c, out, &no, x, &nx));
    OAR_TRY(check_dims(c, "Out@GRAD", out, no));
    return oar_ic_set_out(c, "X@GRAD", 0, x, nx, oar_ic_in_dtype(c, "Out@GRAD", 0));
}

/* ---- one_hot -------------------------------------------------------------- */
/* X int [..., 1] -> Out [..., depth] of attr dtype; depth from depth_tensor
 * (run time) over the attr */
static int one_hot_infer(oar_infer_ctx_t *c)
{
    int nx;
    const int64_t *d = oar_ic_in_dims(c, "X", 0, &nx);
    if (!d) return OAR_ERR_SHAPE;
    int64_t x[OAR_MAX_DIMS];
    memcpy(x, d, sizeof(int64_t) * (size_t)nx);
    OAR_TRY(int_input(c, "X", true));
    char b[160];
    if (nx < 1 || !oar_dim_eq(x[nx - 1], 1))
        return oar_ic_error(c, OAR_ERR_SHAPE, "input X '%s' has shape %s; expected [..., 1]",
                            nm(oar_ic_in_name(c, "X", 0)), oar_shape_str(x, nx, b, sizeof b));
    const oar_one_hot_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int dt = a->dtype;
    if (dt != OAR_FP32 && dt != OAR_FP64 && dt != OAR_INT32 && dt != OAR_INT64)
        return oar_ic_error(c, OAR_ERR_DTYPE, "attr dtype = %d is not float32 (5), float64 (6), int32 (2) or int64 (3)",
                            dt);
    int64_t depth = a->depth;
    if (oar_ic_in_count(c, "depth_tensor") > 0) {
        depth = -1;
        if (oar_ic_runtime(c)) {
            const oar_tensor_t *t = oar_ic_in_tensor(c, "depth_tensor", 0);
            if (!t || !oar_tensor_has_data(t) || oar_tensor_numel_of(t) != 1 ||
                (t->dtype != OAR_INT32 && t->dtype != OAR_INT64))
                return oar_ic_error(c, OAR_ERR_INVALID, "input depth_tensor '%s' must hold one int32/int64 value",
                                    nm(oar_ic_in_name(c, "depth_tensor", 0)));
            depth = t->dtype == OAR_INT32 ? ((const int32_t *)t->buf->data)[0] : ((const int64_t *)t->buf->data)[0];
            if (depth < 1)
                return oar_ic_error(c, OAR_ERR_INVALID, "depth_tensor '%s' holds %lld; depth must be >= 1",
                                    nm(oar_ic_in_name(c, "depth_tensor", 0)), (long long)depth);
        }
    } else if (depth < 1) {
        return oar_ic_error(c, OAR_ERR_INVALID, "attr depth = %lld must be >= 1 (or give depth_tensor)",
                            (long long)depth);
    }
    x[nx - 1] = depth;
    OAR_TRY(oar_ic_set_out(c, "Out", 0, x, nx, dt));
    return oar_ic_share_lod(c, "X", 0, "Out", 0);
}

/* ---- top_k ---------------------------------------------------------------- */
/* k from K (run time; unknown at compile time) over the attr */
static int top_k_k(oar_infer_ctx_t *c, int64_t last, int64_t *k)
{
    const oar_top_k_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    *k = a->k;
    if (oar_ic_in_count(c, "K") > 0) {
        if (!oar_ic_runtime(c)) { *k = -1; return OAR_OK; }
        const oar_tensor_t *t = oar_ic_in_tensor(c, "K", 0);
        if (!t || !oar_tensor_has_data(t) || oar_tensor_numel_of(t) != 1 ||
            (t->dtype != OAR_INT32 && t->dtype != OAR_INT64))
            return oar_ic_error(c, OAR_ERR_INVALID, "input K '%s' must hold one int32/int64 value",
                                nm(oar_ic_in_name(c, "K", 0)));
        *k = t->dtype == OAR_INT32 ? ((const int32_t *)t->buf->data)[0] : ((const int64_t *)t->buf->data)[0];
    }
    if (*k < 1 || (last >= 0 && *k > last))
        return oar_ic_error(c, OAR_ERR_RANGE, "k = %lld is out of range for input X '%s' whose last dimension is %lld",
                            (long long)*k, nm(oar_ic_in_name(c, "X", 0)), (long long)last);
    return OAR_OK;
}

static int top_k_infer(oar_infer_ctx_t *c)
{
    int nx;
    const int64_t *d = oar_ic_in_dims(c, "X", 0, &nx);
    if (!d) return OAR_ERR_SHAPE;
    int64_t x[OAR_MAX_DIMS], k;
    memcpy(x, d, sizeof(int64_t) * (size_t)nx);
    if (nx < 1) return oar_ic_error(c, OAR_ERR_SHAPE, "input X '%s' has rank 0", nm(oar_ic_in_name(c, "X", 0)));
    OAR_TRY(top_k_k(c, x[nx - 1], &k));
    x[nx - 1] = k;
    OAR_TRY(oar_ic_set_out(c, "Out", 0, x, nx, oar_ic_in_dtype(c, "X", 0)));
    OAR_TRY(oar_ic_set_out(c, "Indices", 0, x, nx, OAR_INT64));
    OAR_TRY(oar_ic_share_lod(c, "X", 0, "Out", 0));
    return oar_ic_share_lod(c, "X", 0, "Indices", 0);
}

static int top_k_grad_maker(oar_grad_ctx_t *g)
{
    oar_op_desc_t *op = oar_gc_new_op(g, "top_k_grad");
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "X"));
    OAR_TRY(oar_gc_out(g, op, "Indices"));
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    return oar_gc_in_grad(g, op, "X");
}

/* Indices and Out@GRAD: X's dims with any last dim k <= X's */
static int top_k_grad_infer(oar_infer_ctx_t *c)
{
    if (!oar_ic_out_present(c, "X@GRAD")) return OAR_OK;
    int nx, ni;
    const int64_t *d = oar_ic_in_dims(c, "X", 0, &nx);
    if (!d) return OAR_ERR_SHAPE;
    int64_t x[OAR_MAX_DIMS], want[OAR_MAX_DIMS];
    memcpy(x, d, sizeof(int64_t) * (size_t)nx);
    const int64_t *id = oar_ic_in_dims(c, "Indices", 0, &ni);
    if (!id) return OAR_ERR_SHAPE;
    OAR_TRY(int_input(c, "Indices", false));
    memcpy(want, x, sizeof want);
    if (nx > 0 && ni == nx) want[nx - 1] = id[nx - 1];
    OAR_TRY(check_dims(c, "Indices", want, nx));
    OAR_TRY(check_dims(c, "Out@GRAD", want, nx));
    return oar_ic_set_out(c, "X@GRAD", 0, x, nx, oar_ic_in_dtype(c, "Out@GRAD", 0));
}

/* ---- arg_max / arg_min ---------------------------------------------------- */
/* Out: X's dims without axis (1 with keepdims); flatten treats X as 1-D
 * ([1], or all ones with keepdims). A result of rank 0 is [1]. */
static int arg_infer(oar_infer_ctx_t *c)
{
    int nx;
    const int64_t *d = oar_ic_in_dims(c, "X", 0, &nx);
    if (!d) return OAR_ERR_SHAPE;
    const oar_arg_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int64_t axis = a->axis;
    const bool keep = a->keepdims, flat = a->flatten;
    const int dt = a->dtype;
    if (dt != OAR_INT64 && dt != OAR_INT32)
        return oar_ic_error(c, OAR_ERR_DTYPE, "attr dtype = %d must be int32 (2) or int64 (3)", dt);
    if (nx == 0) return oar_ic_error(c, OAR_ERR_SHAPE, "input X '%s' has rank 0", nm(oar_ic_in_name(c, "X", 0)));
    if (!flat && (axis < -nx || axis >= nx))
        return oar_ic_error(c, OAR_ERR_RANGE, "attr axis = %lld is out of range for X '%s' of rank %d (valid: %d..%d)",
                            (long long)axis, nm(oar_ic_in_name(c, "X", 0)), nx, -nx, nx - 1);
    if (axis < 0) axis += nx;
    int64_t out[OAR_MAX_DIMS];
    int no = 0;
    for (int i = 0; i < nx; i++) {
        if (flat || i == axis) {
            if (keep) out[no++] = 1;
        } else {
            out[no++] = d[i];
        }
    }
    if (no == 0) out[no++] = 1;
    if (!flat && d[axis] == 0)
        return oar_ic_error(c, OAR_ERR_SHAPE, "input X '%s' is empty along axis %lld", nm(oar_ic_in_name(c, "X", 0)),
                            (long long)axis);
    OAR_TRY(oar_ic_set_out(c, "Out", 0, out, no, dt));
    /* rows survive only when axis 0 is kept */
    if (!flat && axis != 0) return oar_ic_share_lod(c, "X", 0, "Out", 0);
    return OAR_OK;
}

#define OAR_OPS_DEFINE
#include "ops/index_ops.h"   /* the tables, the decoders and the registrations */
