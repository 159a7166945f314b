/* roi_pooling.c — roi_pool, roi_align and psroi_pool (Fluid 1.8): the
 * inference; the ops are declared in roi_pooling.ops, the kernels are in
 * kernels/cpu/roi_pooling.c. */
#include "op.h"
#include "ops/roi_pooling.h"   /* generated from roi_pooling.ops */

/* X 4-D float, ROIs [R, 4] of X's dtype, RoisLod (if any) 1-D int64; *x and
 * *r get the dims */
static int roi_inputs(oar_infer_ctx_t *c, const int64_t **x, const int64_t **r) {
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    OAR_TRY(oar_ic_check_float(c, "ROIs", oar_ic_in_dtype(c, "X", 0)));
    int xn, rn;
    *x = oar_ic_in_dims(c, "X", 0, &xn);
    *r = oar_ic_in_dims(c, "ROIs", 0, &rn);
    if (!*x || !*r) return OAR_ERR_SHAPE;
    char b[128];
    if (xn != 4)
        return oar_ic_error(c, OAR_ERR_SHAPE, "X ('%s') must be 4-D [N, C, H, W], got shape %s",
                            oar_ic_in_name(c, "X", 0), oar_shape_str(*x, xn, b, sizeof b));
    if (rn != 2 || !oar_dim_eq((*r)[1], 4))
        return oar_ic_error(c, OAR_ERR_SHAPE, "ROIs ('%s') must be 2-D [R, 4] (x1, y1, x2, y2), got shape %s",
                            oar_ic_in_name(c, "ROIs", 0), oar_shape_str(*r, rn, b, sizeof b));
    if (oar_ic_in_present(c, "RoisLod")) {
        int ln;
        const int64_t *l = oar_ic_in_dims(c, "RoisLod", 0, &ln);
        const int dt = oar_ic_in_dtype(c, "RoisLod", 0);
        if (!l) return OAR_ERR_SHAPE;
        if (ln != 1 || (dt >= 0 && dt != OAR_INT64))
            return oar_ic_error(c, OAR_ERR_SHAPE, "RoisLod ('%s') must be 1-D int64 offsets, got shape %s",
                                oar_ic_in_name(c, "RoisLod", 0), oar_shape_str(l, ln, b, sizeof b));
    }
    return OAR_OK;
}

static int roi_out(oar_infer_ctx_t *c, const char *slot, int64_t r, int64_t ch, int ph, int pw, int dtype) {
    const int64_t od[4] = {r, ch, ph, pw};
    return oar_ic_set_out(c, slot, 0, od, 4, dtype);
}

static int roip_infer(oar_infer_ctx_t *c) {
    const oar_roip_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const int64_t *x, *r;
    OAR_TRY(roi_inputs(c, &x, &r));
    if (!(a->spatial_scale > 0))
        return oar_ic_error(c, OAR_ERR_INVALID, "spatial_scale must be positive, got %g", (double)a->spatial_scale);
    OAR_TRY(roi_out(c, "Out", r[0], x[1], a->pooled_height, a->pooled_width, oar_ic_in_dtype(c, "X", 0)));
    return roi_out(c, "Argmax", r[0], x[1], a->pooled_height, a->pooled_width, OAR_INT64);
}

static int roia_infer(oar_infer_ctx_t *c) {
    const oar_roia_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const int64_t *x, *r;
    OAR_TRY(roi_inputs(c, &x, &r));
    if (!(a->spatial_scale > 0))
        return oar_ic_error(c, OAR_ERR_INVALID, "spatial_scale must be positive, got %g", (double)a->spatial_scale);
    return roi_out(c, "Out", r[0], x[1], a->pooled_height, a->pooled_width, oar_ic_in_dtype(c, "X", 0));
}

static int psroi_infer(oar_infer_ctx_t *c) {
    const oar_psroi_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const int64_t *x, *r;
    OAR_TRY(roi_inputs(c, &x, &r));
    const int64_t want = (int64_t)a->output_channels * a->pooled_height * a->pooled_width;
    if (x[1] >= 0 && x[1] != want)
        return oar_ic_error(c, OAR_ERR_SHAPE,
                            "X ('%s') has %lld channels, expected output_channels * pooled_height * pooled_width = "
                            "%d * %d * %d = %lld", oar_ic_in_name(c, "X", 0), (long long)x[1], a->output_channels,
                            a->pooled_height, a->pooled_width, (long long)want);
    if (!(a->spatial_scale > 0))
        return oar_ic_error(c, OAR_ERR_INVALID, "spatial_scale must be positive, got %g", (double)a->spatial_scale);
    return roi_out(c, "Out", r[0], a->output_channels, a->pooled_height, a->pooled_width,
                   oar_ic_in_dtype(c, "X", 0));
}

static int prroi_infer(oar_infer_ctx_t *c) {
    const oar_prroi_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const int64_t *x, *r;
    OAR_TRY(roi_inputs(c, &x, &r));
    if (oar_ic_in_present(c, "BatchRoINums")) {
        int ln;
        const int64_t *l = oar_ic_in_dims(c, "BatchRoINums", 0, &ln);
        const int dt = oar_ic_in_dtype(c, "BatchRoINums", 0);
        char b[128];
        if (!l) return OAR_ERR_SHAPE;
        if (ln != 1 || (dt >= 0 && dt != OAR_INT64))
            return oar_ic_error(c, OAR_ERR_SHAPE, "BatchRoINums ('%s') must be 1-D int64 counts, got shape %s",
                                oar_ic_in_name(c, "BatchRoINums", 0), oar_shape_str(l, ln, b, sizeof b));
    }
    if (!(a->spatial_scale > 0))
        return oar_ic_error(c, OAR_ERR_INVALID, "spatial_scale must be positive, got %g", (double)a->spatial_scale);
    return roi_out(c, "Out", r[0], x[1], a->pooled_height, a->pooled_width, oar_ic_in_dtype(c, "X", 0));
}

#define OAR_OPS_DEFINE
#include "ops/roi_pooling.h"   /* the tables, decoders and registrations */
