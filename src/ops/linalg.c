/*
 * linalg.c — inference and grad makers of the linear algebra and norm ops
 * declared in linalg.ops; kernels in kernels/cpu/linalg.c.
 */
#include "op.h"
#include "ops/linalg.h"   /* generated from linalg.ops */
#include "ops/infer_util.h"

#include <string.h>


/* dims of input `slot`, which must have rank lo..hi */
static const int64_t *ranked(oar_infer_ctx_t *c, const char *slot, int lo, int hi, int *n)
{
    const int64_t *d = oar_ic_in_dims(c, slot, 0, n);
    if (!d) return NULL;
    if (*n < lo || *n > hi) {
        char b[160];
        if (lo == hi)
            oar_ic_error(c, OAR_ERR_SHAPE, "input %s '%s' has shape %s; it must be %d-D", slot,
                         nm(oar_ic_in_name(c, slot, 0)), oar_shape_str(d, *n, b, sizeof b), lo);
        else
            oar_ic_error(c, OAR_ERR_SHAPE, "input %s '%s' has shape %s; it must be %d-D to %d-D", slot,
                         nm(oar_ic_in_name(c, slot, 0)), oar_shape_str(d, *n, b, sizeof b), lo, hi);
        return NULL;
    }
    return d;
}


/* ---- bmm ------------------------------------------------------------------ */
static int bmm_infer(oar_infer_ctx_t *c)
{
    int nx, ny;
    const int64_t *x = ranked(c, "X", 3, 3, &nx), *y = x ? ranked(c, "Y", 3, 3, &ny) : NULL;
    if (!x || !y) return OAR_ERR_SHAPE;
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    OAR_TRY(oar_ic_check_float(c, "Y", oar_ic_in_dtype(c, "X", 0)));
    if (!oar_dim_eq(x[0], y[0]) || !oar_dim_eq(x[2], y[1]))
        return shape_mismatch(c, "X", "Y", "bmm needs X [B, M, K] and Y [B, K, N]");
    int64_t o[3] = { x[0] >= 0 ? x[0] : y[0], x[1], y[2] };
    return oar_ic_set_out(c, "Out", 0, o, 3, oar_ic_in_dtype(c, "X", 0));
}

/* X, Y and Out@GRAD: the grads need neither Out nor anything else */
static int xy_grad(oar_grad_ctx_t *g)
{
    oar_op_desc_t *op = oar_gc_new_grad_op(g);
    if (!op) return OAR_ERR_INVALID;
    OAR_TRY(oar_gc_in(g, op, "X"));
    OAR_TRY(oar_gc_in(g, op, "Y"));
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    OAR_TRY(oar_gc_in_grad(g, op, "X"));
    return oar_gc_in_grad(g, op, "Y");
}
static int bmm_grad(oar_grad_ctx_t *g) { return xy_grad(g); }

/* ---- dot ------------------------------------------------------------------ */
static int dot_infer(oar_infer_ctx_t *c)
{
    int nx, ny;
    const int64_t *x = ranked(c, "X", 1, 2, &nx), *y = x ? ranked(c, "Y", 1, 2, &ny) : NULL;
    if (!x || !y) return OAR_ERR_SHAPE;
    int dt = oar_ic_in_dtype(c, "X", 0);
    if (dt >= 0 && dt != OAR_FP32 && dt != OAR_FP64 && dt != OAR_INT32 && dt != OAR_INT64)
        return oar_ic_error(c, OAR_ERR_DTYPE, "input X '%s' has dtype %s; expected float32, float64, int32 or int64",
                            nm(oar_ic_in_name(c, "X", 0)), nm(oar_dtype_name(dt)));
    OAR_TRY(oar_ic_check_float(c, "Y", dt));
    OAR_TRY(oar_ic_check_same_dims(c, "Y", "X"));
    int64_t o[2];
    memcpy(o, x, sizeof(int64_t) * (size_t)nx);
    o[nx - 1] = 1;
    OAR_TRY(oar_ic_set_out(c, "Out", 0, o, nx, dt));
    return oar_ic_share_lod(c, "X", 0, "Out", 0);
}
static int dot_grad(oar_grad_ctx_t *g) { return xy_grad(g); }

/* ---- addmm ---------------------------------------------------------------- */
static int addmm_infer(oar_infer_ctx_t *c)
{
    int ni, nx, ny;
    const int64_t *in = ranked(c, "Input", 2, 2, &ni), *x = in ? ranked(c, "X", 2, 2, &nx) : NULL,
                  *y = x ? ranked(c, "Y", 2, 2, &ny) : NULL;
    if (!in || !x || !y) return OAR_ERR_SHAPE;
    int dt = oar_ic_in_dtype(c, "X", 0);
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    OAR_TRY(oar_ic_check_float(c, "Y", dt));
    OAR_TRY(oar_ic_check_float(c, "Input", dt));
    if (!oar_dim_eq(x[1], y[0])) return shape_mismatch(c, "X", "Y", "addmm needs X [M, K] and Y [K, N]");
    int64_t o[2] = { x[0], y[1] };
    for (int i = 0; i < 2; i++)
        if (!(in[i] == 1 || oar_dim_eq(in[i], o[i])))
            return shape_mismatch(c, "Input", i == 0 ? "X" : "Y",
                                  "Input must be [M, N] with X [M, K], Y [K, N], or 1 on an axis");
    return oar_ic_set_out(c, "Out", 0, o, 2, dt);
}
static int addmm_grad(oar_grad_ctx_t *g)
{
    oar_op_desc_t *op = oar_gc_new_grad_op(g);
    if (!op) return OAR_ERR_INVALID;
    OAR_TRY(oar_gc_in(g, op, "Input"));
    OAR_TRY(oar_gc_in(g, op, "X"));
    OAR_TRY(oar_gc_in(g, op, "Y"));
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    OAR_TRY(oar_gc_in_grad(g, op, "Input"));
    OAR_TRY(oar_gc_in_grad(g, op, "X"));
    return oar_gc_in_grad(g, op, "Y");
}

/* ---- squared_l2_norm, l1_norm ---------------------------------------------- */
static int whole_norm_infer(oar_infer_ctx_t *c)
{
    int n;
    if (!oar_ic_in_dims(c, "X", 0, &n)) return OAR_ERR_SHAPE;
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    const int64_t one = 1;
    return oar_ic_set_out(c, "Out", 0, &one, 1, oar_ic_in_dtype(c, "X", 0));
}
static int whole_norm_grad(oar_grad_ctx_t *g)
{
    oar_op_desc_t *op = oar_gc_new_grad_op(g);
    if (!op) return OAR_ERR_INVALID;
    OAR_TRY(oar_gc_in(g, op, "X"));
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    return oar_gc_in_grad(g, op, "X");
}

/* ---- squared_l2_distance ----------------------------------------------------- */
static int sql2d_infer(oar_infer_ctx_t *c)
{
    int nx, ny;
    const int64_t *x = oar_ic_in_dims(c, "X", 0, &nx), *y = x ? oar_ic_in_dims(c, "Y", 0, &ny) : NULL;
    if (!x || !y) return OAR_ERR_SHAPE;
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    OAR_TRY(oar_ic_check_float(c, "Y", oar_ic_in_dtype(c, "X", 0)));
    if (nx < 1 || nx != ny) return shape_mismatch(c, "X", "Y", "squared_l2_distance needs X and Y of one rank");
    int64_t dx = 1, dy = 1;   /* trailing sizes; -1 while unknown */
    for (int i = 1; i < nx; i++) {
        dx = (dx < 0 || x[i] < 0) ? -1 : dx * x[i];
        dy = (dy < 0 || y[i] < 0) ? -1 : dy * y[i];
    }
    if (!oar_dim_eq(dx, dy) || !(y[0] == 1 || oar_dim_eq(y[0], x[0])))
        return shape_mismatch(c, "Y", "X", "Y must have X's row count or one row, and X's trailing size");
    int64_t sub[2] = { x[0], dx }, out[2] = { x[0], 1 };
    int dt = oar_ic_in_dtype(c, "X", 0);
    OAR_TRY(oar_ic_set_out(c, "sub_result", 0, sub, 2, dt));
    OAR_TRY(oar_ic_set_out(c, "Out", 0, out, 2, dt));
    return oar_ic_share_lod(c, "X", 0, "Out", 0);
}
static int sql2d_grad(oar_grad_ctx_t *g)
{
    oar_op_desc_t *op = oar_gc_new_grad_op(g);
    if (!op) return OAR_ERR_INVALID;
    OAR_TRY(oar_gc_out(g, op, "sub_result"));
    OAR_TRY(oar_gc_in(g, op, "X"));
    OAR_TRY(oar_gc_in(g, op, "Y"));
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    OAR_TRY(oar_gc_in_grad(g, op, "X"));
    return oar_gc_in_grad(g, op, "Y");
}

/* ---- minus ------------------------------------------------------------------ */
static int minus_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    OAR_TRY(oar_ic_check_float(c, "Y", oar_ic_in_dtype(c, "X", 0)));
    OAR_TRY(oar_ic_check_same_dims(c, "Y", "X"));
    return oar_infer_same_as(c, "X", "Out");
}
/* Fluid's MinusGradDescMaker: X@GRAD = scale(Out@GRAD, 1), Y@GRAD =
 * scale(Out@GRAD, -1), each only when wanted. The grad names come from the
 * context's slot helpers on a scratch op. */
static int minus_grad(oar_grad_ctx_t *g)
{
    oar_op_desc_t *scratch;
    OAR_TRY(oar_op_desc_new("minus_grad", &scratch));
    int rc = oar_gc_out_grad(g, scratch, "Out");
    if (rc == OAR_OK) rc = oar_gc_in_grad(g, scratch, "X");
    if (rc == OAR_OK) rc = oar_gc_in_grad(g, scratch, "Y");
    static const char *const slots[2] = { "X@GRAD", "Y@GRAD" };
    for (int i = 0; rc == OAR_OK && i < 2; i++) {
        if (oar_op_desc_output_count(scratch, slots[i]) < 1) continue;
        const char *dst = oar_op_desc_output_arg(scratch, slots[i], 0);
        if (!dst || strcmp(dst, OAR_EMPTY_VAR) == 0) continue;
        const char *src = oar_op_desc_input_arg(scratch, "Out@GRAD", 0);
        oar_op_desc_t *op = oar_gc_new_op(g, "scale");
        if (!op) { rc = OAR_ERR_NOMEM; break; }
        rc = oar_op_desc_set_input(op, "X", &src, 1);
        if (rc == OAR_OK) rc = oar_op_desc_set_output(op, "Out", &dst, 1);
        if (rc == OAR_OK) rc = oar_op_desc_set_attr_float(op, "scale", i == 0 ? 1.0f : -1.0f);
    }
    oar_op_desc_free(scratch);
    return rc;
}

/* ---- isfinite, isinf, isnan ------------------------------------------------- */
static int isf_infer(oar_infer_ctx_t *c)
{
    int n;
    if (!oar_ic_in_dims(c, "X", 0, &n)) return OAR_ERR_SHAPE;
    const int64_t one = 1;
    return oar_ic_set_out(c, "Out", 0, &one, 1, OAR_BOOL);
}

#define OAR_OPS_DEFINE
#include "ops/linalg.h"
