/*
 * metric.c — inference of accuracy (Fluid 1.x): the share of rows whose
 * label is among their top-k predictions; the op (slots, docs) is declared
 * in metric.ops. Kernel in kernels/cpu/metric.c. No gradient.
 *
 * Out [N, k] (top-k values; only its dtype picks the kernel), Indices int64
 * [N, k], Label int64 [N, 1] -> Accuracy float32 [1], Correct int32 [1],
 * Total int32 [1].
 */
#include "op.h"
#include "ops/metric.h"   /* generated from metric.ops */

static const char *nm(const char *s) { return s ? s : "?"; }

static int acc_infer(oar_infer_ctx_t *c)
{
    int no, ni, nl;
    const int64_t *o = oar_ic_in_dims(c, "Out", 0, &no);
    const int64_t *i = o ? oar_ic_in_dims(c, "Indices", 0, &ni) : NULL;
    const int64_t *l = i ? oar_ic_in_dims(c, "Label", 0, &nl) : NULL;
    if (!l) return OAR_ERR_SHAPE;
    char bo[160], bi[160], bl[160];
    bool ok = ni == 2 && no == 2 && oar_dim_eq(o[0], i[0]) && oar_dim_eq(o[1], i[1]);
    if (!ok)
        return oar_ic_error(c, OAR_ERR_SHAPE, "Indices '%s' has shape %s and Out '%s' has shape %s; both must be the "
                            "same [N, k]", nm(oar_ic_in_name(c, "Indices", 0)), oar_shape_str(i, ni, bi, sizeof bi),
                            nm(oar_ic_in_name(c, "Out", 0)), oar_shape_str(o, no, bo, sizeof bo));
    if (nl != 2 || !oar_dim_eq(l[0], i[0]) || !oar_dim_eq(l[1], 1))
        return oar_ic_error(c, OAR_ERR_SHAPE, "Label '%s' has shape %s; expected [N, 1] with N = %lld rows of Indices",
                            nm(oar_ic_in_name(c, "Label", 0)), oar_shape_str(l, nl, bl, sizeof bl), (long long)i[0]);
    const char *ints[2] = {"Indices", "Label"};
    for (int s = 0; s < 2; s++) {
        int dt = oar_ic_in_dtype(c, ints[s], 0);
        if (dt >= 0 && dt != OAR_INT64)
            return oar_ic_error(c, OAR_ERR_DTYPE, "input %s '%s' has dtype %s, expected int64", ints[s],
                                nm(oar_ic_in_name(c, ints[s], 0)), nm(oar_dtype_name(dt)));
    }
    int64_t one = 1;
    OAR_TRY(oar_ic_set_out(c, "Accuracy", 0, &one, 1, OAR_FP32));
    OAR_TRY(oar_ic_set_out(c, "Correct", 0, &one, 1, OAR_INT32));
    return oar_ic_set_out(c, "Total", 0, &one, 1, OAR_INT32);
}

#define OAR_OPS_DEFINE
#include "ops/metric.h"   /* the tables and the registration */
