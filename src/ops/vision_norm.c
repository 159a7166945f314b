/* vision_norm.c — spectral_norm and data_norm (Fluid 1.8): the inference;
 * the ops are declared in vision_norm.ops, the grads are oar_grad_default.
 * Kernels in kernels/cpu/vision_norm.c. */
#include "op.h"
#include "ops/vision_norm.h"   /* generated from vision_norm.ops */

/* a 1-D input of n values (-1: any) */
static int vec_of(oar_infer_ctx_t *c, const char *slot, int64_t n, const char *what) {
    int d;
    const int64_t *v = oar_ic_in_dims(c, slot, 0, &d);
    if (!v) return OAR_ERR_SHAPE;
    if (d != 1 || !oar_dim_eq(v[0], n)) {
        char b[96];
        return oar_ic_error(c, OAR_ERR_SHAPE, "%s ('%s') must be [%lld] (%s), got shape %s", slot,
                            oar_ic_in_name(c, slot, 0), (long long)n, what, oar_shape_str(v, d, b, sizeof b));
    }
    return OAR_OK;
}

static int sn_infer(oar_infer_ctx_t *c) {
    const oar_sn_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    OAR_TRY(oar_ic_check_float(c, "Weight", -1));
    const int dt = oar_ic_in_dtype(c, "Weight", 0);
    OAR_TRY(oar_ic_check_float(c, "U", dt));
    OAR_TRY(oar_ic_check_float(c, "V", dt));
    int wn;
    const int64_t *w = oar_ic_in_dims(c, "Weight", 0, &wn);
    if (!w) return OAR_ERR_SHAPE;
    if (wn < 2 || wn > 5)
        return oar_ic_error(c, OAR_ERR_SHAPE, "Weight ('%s') must have rank 2 to 5, it has %d",
                            oar_ic_in_name(c, "Weight", 0), wn);
    if (a->dim >= wn)
        return oar_ic_error(c, OAR_ERR_INVALID, "attr dim = %d must be less than Weight's rank %d", (int)a->dim, wn);
    int64_t h = w[a->dim], rest = 1;
    for (int i = 0; i < wn; i++)
        if (i != a->dim) rest = (rest < 0 || w[i] < 0) ? -1 : rest * w[i];
    OAR_TRY(vec_of(c, "U", h, "Weight's dim `dim`"));
    OAR_TRY(vec_of(c, "V", rest, "the product of Weight's other dims"));
    return oar_infer_same_as(c, "Weight", "Out");
}

static int dn_infer(oar_infer_ctx_t *c) {
    const oar_dn_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    const int dt = oar_ic_in_dtype(c, "X", 0);
    int xn;
    const int64_t *x = oar_ic_in_dims(c, "X", 0, &xn);
    if (!x) return OAR_ERR_SHAPE;
    if (xn != 2)
        return oar_ic_error(c, OAR_ERR_SHAPE, "X ('%s') must be 2-D [N, C], it has rank %d", oar_ic_in_name(c, "X", 0),
                            xn);
    if (a->slot_dim > 0 && x[1] >= 0 && x[1] % a->slot_dim != 0)
        return oar_ic_error(c, OAR_ERR_SHAPE, "X ('%s') has %lld columns, not a whole number of slots of slot_dim = %d",
                            oar_ic_in_name(c, "X", 0), (long long)x[1], (int)a->slot_dim);
    static const char *const stats[] = {"BatchSize", "BatchSum", "BatchSquareSum"};
    for (int i = 0; i < 3; i++) {
        OAR_TRY(oar_ic_check_float(c, stats[i], dt));
        OAR_TRY(vec_of(c, stats[i], x[1], "X's columns"));
    }
    OAR_TRY(oar_infer_same_as(c, "X", "Y"));
    const int64_t cd[1] = {x[1]};
    OAR_TRY(oar_ic_set_out(c, "Means", 0, cd, 1, dt));
    return oar_ic_set_out(c, "Scales", 0, cd, 1, dt);
}

#define OAR_OPS_DEFINE
#include "ops/vision_norm.h"   /* the tables, decoders and registrations */
