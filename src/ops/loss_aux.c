/*
 * loss_aux.c — inference of center_loss and teacher_student_sigmoid_loss
 * and their grads (Fluid 1.8); the ops are declared in loss_aux.ops, the
 * kernels are in kernels/cpu/loss_aux.c.
 */
#include <limits.h>
#include "op.h"
#include "ops/infer_util.h"
#include "ops/loss_aux.h"   /* generated from loss_aux.ops */

/* input `slot` is [n] or [n, 1] */
static int want_column(oar_infer_ctx_t *c, const char *slot, int64_t n)
{
    int nd;
    char b[160];
    const int64_t *d = oar_ic_in_dims(c, slot, 0, &nd);
    if (!d) return OAR_ERR_SHAPE;
    if (!((nd == 1 || (nd == 2 && oar_dim_eq(d[1], 1))) && oar_dim_eq(d[0], n)))
        return oar_ic_error(c, OAR_ERR_SHAPE, "input %s '%s' has shape %s; expected [%lld, 1] (one per row of X)",
                            slot, nm(oar_ic_in_name(c, slot, 0)), oar_shape_str(d, nd, b, sizeof b), (long long)n);
    return OAR_OK;
}

static int center_infer(oar_infer_ctx_t *c)
{
    const oar_center_loss_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const int64_t *xd, *cd;
    OAR_TRY(oar_ic_check_2d(c, "X", -1, -1, "[N, D]", &xd));
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    OAR_TRY(oar_ic_check_2d(c, "Centers", a->cluster_num, xd[1], "[cluster_num, D] (D: X's width)", &cd));
    OAR_TRY(oar_ic_check_float(c, "Centers", oar_ic_in_dtype(c, "X", 0)));
    OAR_TRY(want_column(c, "Label", xd[0]));
    int dt = oar_ic_in_dtype(c, "Label", 0);
    if (dt >= 0 && dt != OAR_INT64 && dt != OAR_INT32)
        return oar_ic_error(c, OAR_ERR_DTYPE, "input Label '%s' has dtype %s, expected int64 or int32",
                            nm(oar_ic_in_name(c, "Label", 0)), nm(oar_dtype_name(dt)));
    int rn;
    const int64_t *rd = oar_ic_in_dims(c, "CenterUpdateRate", 0, &rn);
    if (!rd) return OAR_ERR_SHAPE;
    int64_t numel = 1;
    for (int i = 0; i < rn; i++) numel *= rd[i];
    if (numel != 1 && numel >= 0)
        return oar_ic_error(c, OAR_ERR_SHAPE, "CenterUpdateRate '%s' must hold one value",
                            nm(oar_ic_in_name(c, "CenterUpdateRate", 0)));
    OAR_TRY(oar_ic_check_float(c, "CenterUpdateRate", -1));
    const int xdt = oar_ic_in_dtype(c, "X", 0);
    int64_t ld[2] = {xd[0], 1};
    OAR_TRY(oar_ic_set_out(c, "CentersOut", 0, cd, 2, xdt));
    OAR_TRY(oar_ic_set_out(c, "SampleCenterDiff", 0, xd, 2, xdt));
    return oar_ic_set_out(c, "Loss", 0, ld, 2, xdt);
}

static int center_grad_infer(oar_infer_ctx_t *c)
{
    const int64_t *xd;
    OAR_TRY(oar_ic_check_2d(c, "SampleCenterDiff", -1, -1, "[N, D]", &xd));
    OAR_TRY(want_column(c, "Loss@GRAD", xd[0]));
    if (!oar_ic_out_present(c, "X@GRAD")) return OAR_OK;
    return oar_ic_set_out(c, "X@GRAD", 0, xd, 2, oar_ic_in_dtype(c, "SampleCenterDiff", 0));
}

static int tssl_infer(oar_infer_ctx_t *c)
{
    const int64_t *xd;
    OAR_TRY(oar_ic_check_2d(c, "X", -1, 1, "[N, 1]", &xd));
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    OAR_TRY(want_column(c, "Label", xd[0]));
    OAR_TRY(oar_ic_check_float(c, "Label", oar_ic_in_dtype(c, "X", 0)));
    return oar_ic_set_out(c, "Y", 0, xd, 2, oar_ic_in_dtype(c, "X", 0));
}

static int tssl_grad_infer(oar_infer_ctx_t *c)
{
    const int64_t *xd;
    OAR_TRY(oar_ic_check_2d(c, "X", -1, 1, "[N, 1]", &xd));
    OAR_TRY(want_column(c, "Y@GRAD", xd[0]));
    if (!oar_ic_out_present(c, "X@GRAD")) return OAR_OK;
    return oar_ic_set_out(c, "X@GRAD", 0, xd, 2, oar_ic_in_dtype(c, "X", 0));
}

#define OAR_OPS_DEFINE
#include "ops/loss_aux.h"   /* the tables, the decoders and the registration */
