/*
 * matmul.c — definitions of mul (Fluid's fc product: both operands
 * flattened to matrices) and matmul (batched, numpy-like), with grads.
 * The ops are declared in matmul.ops; this file holds their inference.
 */
#include "op.h"
#include "broadcast.h"
#include "ops/matmul.h"   /* generated from matmul.ops: slots, oar_mul/matmul_attrs_t */
#include "ops/double_grad_makers.h"

static int check_dtypes(oar_infer_ctx_t *c)
{
    int xt = oar_ic_in_dtype(c, "X", 0), yt = oar_ic_in_dtype(c, "Y", 0);
    if (xt >= 0 && yt >= 0 && xt != yt)
        return oar_ic_error(c, OAR_ERR_DTYPE, "X dtype %s and Y dtype %s differ",
                            oar_dtype_name(xt), oar_dtype_name(yt));
    return OAR_OK;
}

/* product of d[lo..hi), -1 when any is unknown */
static int64_t prod(const int64_t *d, int lo, int hi)
{
    int64_t p = 1;
    for (int i = lo; i < hi; i++) {
        if (d[i] < 0) return -1;
        if (oar_mul_checked(p, d[i], &p) != OAR_OK) return -2;
    }
    return p;
}

/* ---- mul ------------------------------------------------------------------ */
static int mul_infer(oar_infer_ctx_t *c)
{
    int xn, yn;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, &xn);
    if (!xd) return OAR_ERR_SHAPE;
    const int64_t *yd = oar_ic_in_dims(c, "Y", 0, &yn);
    if (!yd) return OAR_ERR_SHAPE;
    OAR_TRY(check_dtypes(c));
    const oar_mul_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const int xnf = a->xnf, ynf = a->ynf;
    char bx[160], by[160];
    oar_shape_str(xd, xn, bx, sizeof bx);
    oar_shape_str(yd, yn, by, sizeof by);
    if (xnf < 1 || xnf >= xn)
        return oar_ic_error(c, OAR_ERR_SHAPE, "x_num_col_dims %d must be in [1, %d) for X shape %s", xnf, xn, bx);
    if (ynf < 1 || ynf >= yn)
        return oar_ic_error(c, OAR_ERR_SHAPE, "y_num_col_dims %d must be in [1, %d) for Y shape %s", ynf, yn, by);
    int64_t kx = prod(xd, xnf, xn), ky = prod(yd, 0, ynf);
    if (kx == -2 || ky == -2 || prod(xd, 0, xnf) == -2 || prod(yd, ynf, yn) == -2)
        return oar_ic_error(c, OAR_ERR_NOMEM, "element count of X shape %s or Y shape %s overflows", bx, by);
    if (!oar_dim_eq(kx, ky))
        return oar_ic_error(c, OAR_ERR_SHAPE,
                            "X '%s' shape %s flattened at %d has %lld columns but Y '%s' shape %s flattened at %d has %lld rows",
                            oar_ic_in_name(c, "X", 0), bx, xnf, (long long)kx, oar_ic_in_name(c, "Y", 0), by, ynf,
                            (long long)ky);
    if (xnf + (yn - ynf) > OAR_MAX_DIMS)
        return oar_ic_error(c, OAR_ERR_SHAPE, "Out would have more than %d dims", OAR_MAX_DIMS);
    int64_t od[OAR_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < xnf; i++) od[n++] = xd[i];
    for (int i = ynf; i < yn; i++) od[n++] = yd[i];
    OAR_TRY(oar_ic_set_out(c, "Out", 0, od, n, oar_ic_in_dtype(c, "X", 0)));
    return oar_ic_share_lod(c, "X", 0, "Out", 0);
}

static int grad_infer(oar_infer_ctx_t *c) { return oar_infer_grad_like_inputs(c); }

/* ---- matmul --------------------------------------------------------------- */
static int matmul_infer(oar_infer_ctx_t *c)
{
    int xn, yn;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, &xn);
    if (!xd) return OAR_ERR_SHAPE;
    const int64_t *yd = oar_ic_in_dims(c, "Y", 0, &yn);
    if (!yd) return OAR_ERR_SHAPE;
    OAR_TRY(check_dtypes(c));
    /* matmul_v2 (trans_x/trans_y) is numpy's matmul; matmul (v1) transposes vectors */
    const oar_matmul_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const bool v2 = a->v2, tx = a->tx, ty = a->ty;
    oar_mm_shape_t s;
    int rc = v2 ? oar_mm_shape(xd, xn, yd, yn, tx, ty, &s) : oar_mm_shape_v1(xd, xn, yd, yn, tx, ty, &s);
    if (rc != OAR_MM_OK) {
        char bx[160], by[160];
        oar_shape_str(xd, xn, bx, sizeof bx);
        oar_shape_str(yd, yn, by, sizeof by);
        if (rc == OAR_MM_RANK)
            return oar_ic_error(c, OAR_ERR_SHAPE, "X shape %s and Y shape %s: both need rank >= 1", bx, by);
        if (rc == OAR_MM_K)
            return oar_ic_error(c, OAR_ERR_SHAPE,
                                "X '%s' shape %s (transpose_X %s) and Y '%s' shape %s (transpose_Y %s) do not multiply: "
                                "inner dims differ",
                                oar_ic_in_name(c, "X", 0), bx, tx ? "true" : "false", oar_ic_in_name(c, "Y", 0), by,
                                ty ? "true" : "false");
        return oar_ic_error(c, OAR_ERR_SHAPE, "batch dims of X '%s' shape %s and Y '%s' shape %s do not broadcast",
                            oar_ic_in_name(c, "X", 0), bx, oar_ic_in_name(c, "Y", 0), by);
    }
    OAR_TRY(oar_ic_set_out(c, "Out", 0, s.out, s.ond, oar_ic_in_dtype(c, "X", 0)));
    return oar_ic_share_lod(c, "X", 0, "Out", 0);
}

#define OAR_OPS_DEFINE
#include "ops/matmul.h"   /* the tables, the decoders and the registrations */
