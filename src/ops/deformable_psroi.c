/* deformable_psroi.c — deformable_psroi_pooling (Fluid 1.8): the
 * inference; declared in deformable_psroi.ops, kernels in
 * kernels/cpu/deformable_psroi.c. */
#include "op.h"
#include "ops/deformable_psroi.h"   /* generated from deformable_psroi.ops */

static int dpsroi_infer(oar_infer_ctx_t *c) {
    const oar_dpsroi_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    OAR_TRY(oar_ic_check_float(c, "Input", -1));
    const int dt = oar_ic_in_dtype(c, "Input", 0);
    OAR_TRY(oar_ic_check_float(c, "ROIs", dt));
    OAR_TRY(oar_ic_check_float(c, "Trans", dt));
    int xn, rn, tn;
    const int64_t *x = oar_ic_in_dims(c, "Input", 0, &xn), *r = oar_ic_in_dims(c, "ROIs", 0, &rn);
    const int64_t *t = oar_ic_in_dims(c, "Trans", 0, &tn);
    if (!x || !r || !t) return OAR_ERR_SHAPE;
    char b[128];
    if (xn != 4)
        return oar_ic_error(c, OAR_ERR_SHAPE, "Input ('%s') must be 4-D [N, C, H, W], got shape %s",
                            oar_ic_in_name(c, "Input", 0), oar_shape_str(x, xn, b, sizeof b));
    if (rn != 2 || !oar_dim_eq(r[1], 4))
        return oar_ic_error(c, OAR_ERR_SHAPE, "ROIs ('%s') must be 2-D [R, 4] (x1, y1, x2, y2), got shape %s",
                            oar_ic_in_name(c, "ROIs", 0), oar_shape_str(r, rn, b, sizeof b));
    if (a->group_size.n != 2 || a->group_size.v[0] < 1 || a->group_size.v[1] < 1)
        return oar_ic_error(c, OAR_ERR_INVALID, "group_size must be 2 positive integers {height, width}");
    if (a->part_size.n != 2 || a->part_size.v[0] < 1 || a->part_size.v[1] < 1)
        return oar_ic_error(c, OAR_ERR_INVALID, "part_size must be 2 positive integers {height, width}");
    const int64_t need = (int64_t)a->output_dim * a->group_size.v[0] * a->group_size.v[1];
    if (x[1] >= 0 && x[1] < need)
        return oar_ic_error(c, OAR_ERR_SHAPE, "Input ('%s') has %lld channels, expected at least output_dim * "
                            "group_size[0] * group_size[1] = %lld", oar_ic_in_name(c, "Input", 0),
                            (long long)x[1], (long long)need);
    if (!a->no_trans) {
        if (tn != 4 || (t[1] >= 0 && (t[1] < 2 || t[1] % 2)) || !oar_dim_eq(t[2], a->part_size.v[0]) ||
            !oar_dim_eq(t[3], a->part_size.v[1]) || !oar_dim_eq(t[0], r[0]))
            return oar_ic_error(c, OAR_ERR_SHAPE, "Trans ('%s') must be [R, 2 * num_classes, %d, %d] (R the ROI "
                                "count, part_size the last two), got shape %s", oar_ic_in_name(c, "Trans", 0),
                                a->part_size.v[0], a->part_size.v[1], oar_shape_str(t, tn, b, sizeof b));
        if (t[1] > 0 && a->output_dim % (t[1] / 2))
            return oar_ic_error(c, OAR_ERR_SHAPE, "output_dim %d must be a multiple of Trans's class count %lld",
                                a->output_dim, (long long)(t[1] / 2));
    }
    const int64_t od[4] = {r[0], a->output_dim, a->pooled_height, a->pooled_width};
    OAR_TRY(oar_ic_set_out(c, "Output", 0, od, 4, dt));
    return oar_ic_set_out(c, "TopCount", 0, od, 4, dt);
}

#define OAR_OPS_DEFINE
#include "ops/deformable_psroi.h"   /* the tables, decoders and registrations */
