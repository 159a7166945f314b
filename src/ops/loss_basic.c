/* loss_basic.c — inference of square_error_cost: Out = (X - Y)^2
 * elementwise, fused (Fluid builds it in Python from elementwise_sub and
 * square). X is the prediction, Y the label, both of one shape. The ops
 * (slots, docs) are declared in loss_basic.ops; kernels in
 * kernels/cpu/loss_basic.c. */
#include "op.h"
#include "ops/loss_basic.h"   /* generated from loss_basic.ops */

#include <string.h>

static int sec_infer(oar_infer_ctx_t *c)
{
    int nx, ny;
    const int64_t *dx = oar_ic_in_dims(c, "X", 0, &nx);
    if (!dx) return OAR_ERR_SHAPE;
    const int64_t *dy = oar_ic_in_dims(c, "Y", 0, &ny);
    if (!dy) return OAR_ERR_SHAPE;
    bool same = nx == ny;
    for (int i = 0; same && i < nx; i++) same = oar_dim_eq(dx[i], dy[i]);
    char bx[128], by[128];
    if (!same)
        return oar_ic_error(c, OAR_ERR_SHAPE, "input X '%s' has shape %s but label Y '%s' has shape "
                            "%s; they must be equal", oar_ic_in_name(c, "X", 0),
                            oar_shape_str(dx, nx, bx, sizeof bx), oar_ic_in_name(c, "Y", 0),
                            oar_shape_str(dy, ny, by, sizeof by));
    int tx = oar_ic_in_dtype(c, "X", 0), ty = oar_ic_in_dtype(c, "Y", 0);
    if (tx >= 0 && ty >= 0 && tx != ty)
        return oar_ic_error(c, OAR_ERR_DTYPE, "input X '%s' has dtype %s but label Y '%s' has %s",
                            oar_ic_in_name(c, "X", 0), oar_dtype_name(tx) ? oar_dtype_name(tx) : "?",
                            oar_ic_in_name(c, "Y", 0), oar_dtype_name(ty) ? oar_dtype_name(ty) : "?");
    int64_t dims[OAR_MAX_DIMS];
    for (int i = 0; i < nx; i++) dims[i] = dx[i] >= 0 ? dx[i] : dy[i];
    OAR_TRY(oar_ic_set_out(c, "Out", 0, dims, nx, tx >= 0 ? tx : ty));
    return oar_ic_share_lod(c, "X", 0, "Out", 0);
}

#define OAR_OPS_DEFINE
#include "ops/loss_basic.h"   /* the tables and registrations */
