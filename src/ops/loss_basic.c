/* loss_basic.c — square_error_cost: Out = (X - Y)^2 elementwise, fused (Fluid
 * builds it in Python from elementwise_sub and square). X is the prediction,
 * Y the label, both of one shape. Kernels in kernels/cpu/loss_basic.c. */
#include "op.h"
#include "loss_basic.h"

#include <string.h>

static const oar_slot_def_t sec_in[] = {{"X", 0}, {"Y", 0}, {NULL, 0}};
static const oar_slot_def_t sec_out[] = {{"Out", 0}, {NULL, 0}};

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

static const oar_op_def_t square_error_cost_def = {
    .type = "square_error_cost", .inputs = sec_in, .outputs = sec_out, .attrs = NULL,
    .infer = sec_infer, .grad = oar_grad_default,
    .flags = OAR_OP_INPLACE /* Out[i] from X[i] and Y[i] */};
OAR_REGISTER_OP(square_error_cost_def)

/* the grad reads X, Y and Out@GRAD, not Out */
static const oar_slot_def_t secg_in[] = {{"X", 0}, {"Y", 0}, {"Out@GRAD", 0}, {NULL, 0}};
static const oar_slot_def_t secg_out[] = {
    {"X@GRAD", OAR_SLOT_DISPENSABLE}, {"Y@GRAD", OAR_SLOT_DISPENSABLE}, {NULL, 0}};

static int secg_infer(oar_infer_ctx_t *c) { return oar_infer_grad_like_inputs(c); }

static const oar_op_def_t square_error_cost_grad_def = {
    .type = "square_error_cost_grad", .inputs = secg_in, .outputs = secg_out, .attrs = NULL,
    .infer = secg_infer, .grad = NULL,
    .flags = OAR_OP_INPLACE /* X@GRAD[i] from X[i], Y[i] and Out@GRAD[i] */};
OAR_REGISTER_OP(square_error_cost_grad_def)
