/* focus_fsp.c — similarity_focus and fsp (Fluid 1.8): inference; the ops
 * are declared in focus_fsp.ops, the kernels are in kernels/cpu/focus_fsp.c. */
#include "op.h"
#include "ops/focus_fsp.h"   /* generated from focus_fsp.ops */

/* input slot is 4-D; *d gets its dims */
static int four_d(oar_infer_ctx_t *c, const char *slot, const char *what, const int64_t **d) {
    int n;
    *d = oar_ic_in_dims(c, slot, 0, &n);
    if (!*d) return OAR_ERR_SHAPE;
    if (n != 4) {
        char b[128];
        return oar_ic_error(c, OAR_ERR_SHAPE, "%s ('%s') must be 4-D %s, got shape %s", slot,
                            oar_ic_in_name(c, slot, 0), what, oar_shape_str(*d, n, b, sizeof b));
    }
    return OAR_OK;
}

static int sfoc_infer(oar_infer_ctx_t *c) {
    const oar_sfoc_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    const int64_t *x;
    OAR_TRY(four_d(c, "X", "[N, A, B, C]", &x));
    if (a->indexes.n == 0) return oar_ic_error(c, OAR_ERR_INVALID, "attr indexes must not be empty");
    for (int i = 0; i < a->indexes.n; i++) {
        const int32_t v = a->indexes.v[i];
        if (v < 0 || (x[a->axis] >= 0 && v >= x[a->axis]))
            return oar_ic_error(c, OAR_ERR_INVALID,
                                "indexes[%d] = %d must be in [0, %lld) (X ('%s') dim %d)", i, (int)v,
                                (long long)x[a->axis], oar_ic_in_name(c, "X", 0), a->axis);
    }
    return oar_ic_set_out(c, "Out", 0, x, 4, oar_ic_in_dtype(c, "X", 0));
}

static int fsp_infer(oar_infer_ctx_t *c) {
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    OAR_TRY(oar_ic_check_float(c, "Y", oar_ic_in_dtype(c, "X", 0)));
    const int64_t *x, *y;
    OAR_TRY(four_d(c, "X", "[N, C1, H, W]", &x));
    OAR_TRY(four_d(c, "Y", "[N, C2, H, W]", &y));
    static const int dims[3] = {0, 2, 3};
    for (int i = 0; i < 3; i++) {
        const int d = dims[i];
        if (!oar_dim_eq(x[d], y[d])) {
            char bx[128], by[128];
            return oar_ic_error(c, OAR_ERR_SHAPE, "X ('%s') %s and Y ('%s') %s must agree in N, H and W",
                                oar_ic_in_name(c, "X", 0), oar_shape_str(x, 4, bx, sizeof bx),
                                oar_ic_in_name(c, "Y", 0), oar_shape_str(y, 4, by, sizeof by));
        }
    }
    const int64_t od[3] = {x[0] >= 0 ? x[0] : y[0], x[1], y[1]};
    return oar_ic_set_out(c, "Out", 0, od, 3, oar_ic_in_dtype(c, "X", 0));
}

#define OAR_OPS_DEFINE
#include "ops/focus_fsp.h"   /* the tables, decoders and registrations */
