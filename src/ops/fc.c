/*
 * fc.c — definition of fc, Paddle's fused fully connected op for
 * inference: Out = act(flatten(Input, in_num_col_dims) W + Bias) with
 * act "" or "relu" (what Paddle's CPU fc kernel computes). Paddle's
 * fc_fuse_pass writes it into optimized inference models; oar's predictor
 * does the same (src/fuse_fc.c). It has no gradient: training programs use
 * mul + elementwise_add, as Fluid's layers.fc does.
 */
#include "op.h"
#include "ops/fc.h"   /* generated from fc.ops: slots, oar_fc_attrs_t */

static int fc_infer(oar_infer_ctx_t *c)
{
    int xn, wn;
    const int64_t *xd = oar_ic_in_dims(c, "Input", 0, &xn);
    if (!xd) return OAR_ERR_SHAPE;
    const int64_t *wd = oar_ic_in_dims(c, "W", 0, &wn);
    if (!wd) return OAR_ERR_SHAPE;
    const oar_fc_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const int ncd = a->in_ncd;
    const int pad = a->padding_weights ? 4 : 0;
    int xt = oar_ic_in_dtype(c, "Input", 0), wt = oar_ic_in_dtype(c, "W", 0);
    if (xt >= 0 && wt >= 0 && xt != wt)
        return oar_ic_error(c, OAR_ERR_DTYPE, "Input dtype %s and W dtype %s differ", oar_dtype_name(xt),
                            oar_dtype_name(wt));
    char bx[160], bw[160];
    oar_shape_str(xd, xn, bx, sizeof bx);
    oar_shape_str(wd, wn, bw, sizeof bw);
    if (ncd < 1 || ncd >= xn)
        return oar_ic_error(c, OAR_ERR_SHAPE, "in_num_col_dims %d must be in [1, %d) for Input shape %s", ncd, xn, bx);
    if (wn != 2) return oar_ic_error(c, OAR_ERR_SHAPE, "W must be 2-D, got shape %s", bw);
    int64_t k = 1;
    for (int i = ncd; i < xn && k >= 0; i++) {
        if (xd[i] < 0) k = -1;
        else if (oar_mul_checked(k, xd[i], &k) != OAR_OK)
            return oar_ic_error(c, OAR_ERR_NOMEM, "element count of Input shape %s overflows", bx);
    }
    const int64_t wk = wd[0] < 0 ? -1 : wd[0] - pad, n = wd[1] < 0 ? -1 : wd[1] - pad;
    if ((wd[0] >= 0 && wk < 1) || (wd[1] >= 0 && n < 1))
        return oar_ic_error(c, OAR_ERR_SHAPE, "W shape %s is too small for padding_weights", bw);
    if (!oar_dim_eq(k, wk))
        return oar_ic_error(c, OAR_ERR_SHAPE, "Input '%s' shape %s flattened at %d has %lld columns but W '%s' shape %s has %lld rows%s",
                            oar_ic_in_name(c, "Input", 0), bx, ncd, (long long)k, oar_ic_in_name(c, "W", 0), bw,
                            (long long)wk, pad ? " (padding_weights: 4 fewer)" : "");
    if (oar_ic_in_present(c, "Bias")) {
        int bn;
        const int64_t *bd = oar_ic_in_dims(c, "Bias", 0, &bn);
        if (!bd) return OAR_ERR_SHAPE;
        int64_t bnum = 1;
        for (int i = 0; i < bn && bnum >= 0; i++) bnum = bd[i] < 0 ? -1 : bnum * bd[i];
        char bb[160];
        if (!oar_dim_eq(bnum, n) || (bn == 2 && bd[0] != 1) || bn < 1 || bn > 2)
            return oar_ic_error(c, OAR_ERR_SHAPE, "Bias shape %s must be [%lld] or [1, %lld]",
                                oar_shape_str(bd, bn, bb, sizeof bb), (long long)n, (long long)n);
    }
    int64_t od[OAR_MAX_DIMS];
    for (int i = 0; i < ncd; i++) od[i] = xd[i];
    od[ncd] = n;
    OAR_TRY(oar_ic_set_out(c, "Out", 0, od, ncd + 1, xt));
    return oar_ic_share_lod(c, "Input", 0, "Out", 0);
}

#define OAR_OPS_DEFINE
#include "ops/fc.h"   /* the tables, the decoder and the registration */
