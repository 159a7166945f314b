/*
 * linalg2.c — inference of cos_sim, dist, norm, frobenius_norm, allclose and
 * bilinear_tensor_product (linalg2.ops); kernels in kernels/cpu/linalg2.c.
 * Every grad op declares exactly the forward slots it reads, so the grad
 * makers are oar_grad_default.
 */
#include "op.h"
#include "ops/broadcast.h"
#include "ops/linalg2.h"   /* generated from linalg2.ops */
#include "ops/infer_util.h"

#include <string.h>


static int bad_rank(oar_infer_ctx_t *c, const char *slot, const int64_t *d, int n, const char *what)
{
    char b[160];
    return oar_ic_error(c, OAR_ERR_SHAPE, "input %s '%s' has shape %s; %s", slot, nm(oar_ic_in_name(c, slot, 0)),
                        oar_shape_str(d, n, b, sizeof b), what);
}


/* ---- cos_sim ---------------------------------------------------------------- */
static int cos_sim_infer(oar_infer_ctx_t *c)
{
    int nx, ny;
    const int64_t *x = oar_ic_in_dims(c, "X", 0, &nx), *y = x ? oar_ic_in_dims(c, "Y", 0, &ny) : NULL;
    if (!x || !y) return OAR_ERR_SHAPE;
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    OAR_TRY(oar_ic_check_float(c, "Y", oar_ic_in_dtype(c, "X", 0)));
    if (nx < 2) return bad_rank(c, "X", x, nx, "cos_sim needs rank 2 or more");
    bool ok = nx == ny && (y[0] == 1 || oar_dim_eq(x[0], y[0]));
    for (int i = 1; ok && i < nx; i++) ok = oar_dim_eq(x[i], y[i]);
    if (!ok)
        return shape_mismatch(c, "X", "Y", "cos_sim needs Y of X's rank and trailing dims, with X's row count or one row");
    const int dt = oar_ic_in_dtype(c, "X", 0);
    int64_t o[2] = { x[0], 1 }, yo[2] = { y[0], 1 };
    OAR_TRY(oar_ic_set_out(c, "Out", 0, o, 2, dt));
    OAR_TRY(oar_ic_set_out(c, "XNorm", 0, o, 2, dt));
    OAR_TRY(oar_ic_set_out(c, "YNorm", 0, yo, 2, dt));
    return oar_ic_share_lod(c, "X", 0, "Out", 0);
}

/* ---- dist ------------------------------------------------------------------- */
static int dist_infer(oar_infer_ctx_t *c)
{
    int nx, ny, nd;
    const int64_t *x = oar_ic_in_dims(c, "X", 0, &nx), *y = x ? oar_ic_in_dims(c, "Y", 0, &ny) : NULL;
    if (!x || !y) return OAR_ERR_SHAPE;
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    OAR_TRY(oar_ic_check_float(c, "Y", oar_ic_in_dtype(c, "X", 0)));
    int64_t o[OAR_MAX_DIMS];
    if (oar_bcast_shape(x, nx, y, ny, -1, o, NULL, NULL, &nd) != OAR_BCAST_OK)
        return shape_mismatch(c, "X", "Y", "dist needs X and Y broadcastable against each other");
    const int64_t one = 1;
    return oar_ic_set_out(c, "Out", 0, &one, 1, oar_ic_in_dtype(c, "X", 0));
}

/* ---- norm (l2_normalize) ------------------------------------------------------ */
static int norm_infer(oar_infer_ctx_t *c)
{
    const oar_norm_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int n;
    const int64_t *x = oar_ic_in_dims(c, "X", 0, &n);
    if (!x) return OAR_ERR_SHAPE;
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    const int ax = a->axis < 0 ? a->axis + n : a->axis;
    if (n < 1 || ax < 0 || ax >= n)
        return oar_ic_error(c, OAR_ERR_RANGE, "attr axis = %d is out of range for input X '%s' of rank %d",
                            (int)a->axis, nm(oar_ic_in_name(c, "X", 0)), n);
    if (oar_ic_out_present(c, "Norm")) {
        int64_t d[OAR_MAX_DIMS];
        memcpy(d, x, sizeof(int64_t) * (size_t)n);
        d[ax] = 1;
        OAR_TRY(oar_ic_set_out(c, "Norm", 0, d, n, oar_ic_in_dtype(c, "X", 0)));
    }
    return oar_infer_same_as(c, "X", "Out");
}

/* ---- frobenius_norm ----------------------------------------------------------- */
/* the decoded `dim`: an empty list is Fluid's reduce default {0} */
static oar_ints_t fn_dim(oar_decode_ctx_t *d)
{
    static const int32_t def0 = 0;
    oar_ints_t dim = oar_dec_ints(d, "dim");
    if (dim.n == 0) dim = (oar_ints_t){ &def0, 1 };
    return dim;
}

static int fn_infer(oar_infer_ctx_t *c)
{
    const oar_fnorm_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int nd;
    const int64_t *d = oar_ic_in_dims(c, "X", 0, &nd);
    if (!d) return OAR_ERR_SHAPE;
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    bool mask[OAR_MAX_DIMS];
    for (int i = 0; i < nd; i++) mask[i] = a->reduce_all;
    for (int i = 0; i < a->dim.n && !a->reduce_all; i++) {
        int ax = a->dim.v[i] < 0 ? a->dim.v[i] + nd : a->dim.v[i];
        if (ax < 0 || ax >= nd)
            return oar_ic_error(c, OAR_ERR_RANGE, "attr dim[%d] = %d is out of range for input X '%s' of rank %d",
                                i, (int)a->dim.v[i], nm(oar_ic_in_name(c, "X", 0)), nd);
        mask[ax] = true;
    }
    int64_t out[OAR_MAX_DIMS];
    int on = 0;
    for (int i = 0; i < nd; i++) {
        if (!mask[i]) out[on++] = d[i];
        else if (a->keep_dim) out[on++] = 1;
    }
    if (on == 0) out[on++] = 1;
    OAR_TRY(oar_ic_set_out(c, "Out", 0, out, on, oar_ic_in_dtype(c, "X", 0)));
    if (nd > 0 && !mask[0]) return oar_ic_share_lod(c, "X", 0, "Out", 0);
    return OAR_OK;
}

/* ---- allclose ------------------------------------------------------------------ */
static int allclose_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(oar_ic_check_float(c, "Input", -1));
    OAR_TRY(oar_ic_check_float(c, "Other", oar_ic_in_dtype(c, "Input", 0)));
    OAR_TRY(oar_ic_check_same_dims(c, "Other", "Input"));
    const int64_t one = 1;
    return oar_ic_set_out(c, "Out", 0, &one, 1, OAR_BOOL);
}

/* ---- bilinear_tensor_product ----------------------------------------------------- */
static int btp_infer(oar_infer_ctx_t *c)
{
    int nx, ny, nw;
    const int64_t *x = oar_ic_in_dims(c, "X", 0, &nx), *y = x ? oar_ic_in_dims(c, "Y", 0, &ny) : NULL,
                  *w = y ? oar_ic_in_dims(c, "Weight", 0, &nw) : NULL;
    if (!x || !y || !w) return OAR_ERR_SHAPE;
    const int dt = oar_ic_in_dtype(c, "X", 0);
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    OAR_TRY(oar_ic_check_float(c, "Y", dt));
    OAR_TRY(oar_ic_check_float(c, "Weight", dt));
    if (nx != 2) return bad_rank(c, "X", x, nx, "it must be 2-D [B, M]");
    if (ny != 2) return bad_rank(c, "Y", y, ny, "it must be 2-D [B, N]");
    if (nw != 3) return bad_rank(c, "Weight", w, nw, "it must be 3-D [K, M, N]");
    if (!oar_dim_eq(x[0], y[0])) return shape_mismatch(c, "X", "Y", "they need one batch size");
    if (!oar_dim_eq(w[1], x[1])) return shape_mismatch(c, "Weight", "X", "Weight [K, M, N] needs X [B, M]");
    if (!oar_dim_eq(w[2], y[1])) return shape_mismatch(c, "Weight", "Y", "Weight [K, M, N] needs Y [B, N]");
    if (oar_ic_in_present(c, "Bias")) {
        int nb;
        const int64_t *b = oar_ic_in_dims(c, "Bias", 0, &nb);
        if (!b) return OAR_ERR_SHAPE;
        OAR_TRY(oar_ic_check_float(c, "Bias", dt));
        if (nb != 2 || b[0] != 1 || !oar_dim_eq(b[1], w[0]))
            return shape_mismatch(c, "Bias", "Weight", "Bias must be [1, K] with Weight [K, M, N]");
    }
    int64_t o[2] = { x[0] >= 0 ? x[0] : y[0], w[0] };
    OAR_TRY(oar_ic_set_out(c, "Out", 0, o, 2, dt));
    return oar_ic_share_lod(c, "X", 0, "Out", 0);
}

#define OAR_OPS_DEFINE
#include "ops/linalg2.h"
