/* broadcast.c — the shape inference every broadcasting op shares (geometry in broadcast.h). */
#include "broadcast.h"

int oar_bcast_infer(oar_infer_ctx_t *c, int out_dtype)
{
    int xn, yn, nd;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, &xn);
    if (!xd) return OAR_ERR_SHAPE;
    const int64_t *yd = oar_ic_in_dims(c, "Y", 0, &yn);
    if (!yd) return OAR_ERR_SHAPE;
    int xt = oar_ic_in_dtype(c, "X", 0), yt = oar_ic_in_dtype(c, "Y", 0);
    if (xt >= 0 && yt >= 0 && xt != yt)
        return oar_ic_error(c, OAR_ERR_DTYPE, "X ('%s') dtype %s and Y ('%s') dtype %s differ",
                            oar_ic_in_name(c, "X", 0), oar_dtype_name(xt), oar_ic_in_name(c, "Y", 0),
                            oar_dtype_name(yt));
    /* every broadcasting op's decoded struct begins with axis (broadcast.h) */
    const oar_bcast_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const int axis = a->axis;
    int64_t od[OAR_MAX_DIMS];
    int rc = oar_bcast_shape(xd, xn, yd, yn, axis, od, NULL, NULL, &nd);
    if (rc != OAR_BCAST_OK) {
        char bx[160], by[160];
        return oar_ic_error(c, OAR_ERR_SHAPE, "Y ('%s') shape %s does not broadcast to X ('%s') shape %s at axis %d%s",
                            oar_ic_in_name(c, "Y", 0), oar_shape_str(yd, yn, by, sizeof by),
                            oar_ic_in_name(c, "X", 0), oar_shape_str(xd, xn, bx, sizeof bx),
                            axis, rc == OAR_BCAST_AXIS ? " (axis out of range)" : "");
    }
    OAR_TRY(oar_ic_set_out(c, "Out", 0, od, nd, out_dtype >= 0 ? out_dtype : xt));
    if (xn == nd && (nd == 0 || xd[0] == od[0])) return oar_ic_share_lod(c, "X", 0, "Out", 0);
    if (yn == nd && (nd == 0 || yd[0] == od[0])) return oar_ic_share_lod(c, "Y", 0, "Out", 0);
    return OAR_OK;
}
