/* batch_norm.c — batch_norm and batch_norm_grad (Fluid 1.x semantics).
 *
 * Training normalizes with the batch statistics of each channel and updates
 * the running ones in place (MeanOut is the Mean variable):
 *     running = momentum * running + (1 - momentum) * batch
 * with the biased batch variance. SavedMean holds the batch mean and
 * SavedVariance the inverse standard deviation 1/sqrt(var + epsilon), which
 * the grad op reuses. is_test (unless trainable_statistics) or
 * use_global_stats normalizes with the running statistics instead.
 * This file holds the inference and the grad maker; the ops themselves
 * (slots, attributes, docs) are declared in batch_norm.ops. Kernels in
 * kernels/cpu/batch_norm.c and kernels/cuda/batch_norm.cu. */
#include "op.h"
#include "ops/window.h"
#include "ops/batch_norm.h"   /* generated from batch_norm.ops: slots, oar_bn_attrs_t */

#include <string.h>

/* the channel count of X per data_layout; -1 if unknown at compile time */
static int channels(oar_infer_ctx_t *c, const int64_t *x, int xn, int64_t *ch) {
    const oar_bn_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    oar_bn_geom_t g;   /* the view both places' kernels take (window.h) */
    if (!oar_win_bn_geom(x, xn, a->layout == OAR_BN_NHWC, &g)) {
        char xs[128];
        return oar_ic_error(c, OAR_ERR_SHAPE, "X '%s' must have 2 to 5 dims (N, C, ...), got shape %s",
                            oar_ic_in_name(c, "X", 0), oar_shape_str(x, xn, xs, sizeof xs));
    }
    *ch = g.c;
    return OAR_OK;
}

/* the dtype of the [C] vectors for X's dtype: float32 for float16 X (as
 * cuDNN's batch norm takes them), else X's own */
static int param_dtype(int xdt) { return xdt == OAR_FP16 ? OAR_FP32 : xdt; }

/* slot must be a 1-D [C] vector of dtype xdt (param_dtype of X's) */
static int check_vec(oar_infer_ctx_t *c, const char *slot, int64_t ch, int xdt) {
    int n;
    const int64_t *d = oar_ic_in_dims(c, slot, 0, &n);
    if (!d) return OAR_ERR_SHAPE;
    if (n != 1 || !oar_dim_eq(d[0], ch)) {
        char s[128];
        return oar_ic_error(c, OAR_ERR_SHAPE, "%s '%s' must have shape [%lld] (the channels of X), got %s",
                            slot, oar_ic_in_name(c, slot, 0), (long long)ch, oar_shape_str(d, n, s, sizeof s));
    }
    int dt = oar_ic_in_dtype(c, slot, 0);
    if (xdt >= 0 && dt >= 0 && dt != xdt)
        return oar_ic_error(c, OAR_ERR_DTYPE, "%s '%s' is %s, expected %s (float32 for float16 X, else X's dtype)",
                            slot, oar_ic_in_name(c, slot, 0), oar_dtype_name(dt), oar_dtype_name(xdt));
    return OAR_OK;
}

static int bn_infer(oar_infer_ctx_t *c) {
    int xn;
    const int64_t *x = oar_ic_in_dims(c, "X", 0, &xn);
    if (!x) return OAR_ERR_SHAPE;
    int64_t ch = -1;
    OAR_TRY(channels(c, x, xn, &ch));
    int xdt = param_dtype(oar_ic_in_dtype(c, "X", 0));
    static const char *const vecs[] = {"Scale", "Bias", "Mean", "Variance"};
    for (int i = 0; i < 4; i++) OAR_TRY(check_vec(c, vecs[i], ch, xdt));
    OAR_TRY(oar_infer_same_as(c, "X", "Y"));
    int64_t cd[1] = {ch};
    static const char *const outs[] = {"MeanOut", "VarianceOut", "SavedMean", "SavedVariance"};
    for (int i = 0; i < 4; i++)
        if (oar_ic_out_present(c, outs[i])) OAR_TRY(oar_ic_set_out(c, outs[i], 0, cd, 1, xdt));
    return OAR_OK;
}

static int bn_grad_infer(oar_infer_ctx_t *c) {
    int xn;
    const int64_t *x = oar_ic_in_dims(c, "X", 0, &xn);
    if (!x) return OAR_ERR_SHAPE;
    int64_t ch = -1;
    OAR_TRY(channels(c, x, xn, &ch));
    int xdt = param_dtype(oar_ic_in_dtype(c, "X", 0));
    OAR_TRY(oar_ic_check_same_dims(c, "Y@GRAD", "X"));
    OAR_TRY(check_vec(c, "Scale", ch, xdt));
    OAR_TRY(check_vec(c, "SavedMean", ch, xdt));
    OAR_TRY(check_vec(c, "SavedVariance", ch, xdt));
    if (oar_ic_in_present(c, "Mean")) OAR_TRY(check_vec(c, "Mean", ch, xdt));
    if (oar_ic_in_present(c, "Variance")) OAR_TRY(check_vec(c, "Variance", ch, xdt));
    if (oar_ic_out_present(c, "X@GRAD")) OAR_TRY(oar_infer_same_as(c, "X", "X@GRAD"));
    int64_t cd[1] = {ch};
    if (oar_ic_out_present(c, "Scale@GRAD")) OAR_TRY(oar_ic_set_out(c, "Scale@GRAD", 0, cd, 1, xdt));
    if (oar_ic_out_present(c, "Bias@GRAD")) OAR_TRY(oar_ic_set_out(c, "Bias@GRAD", 0, cd, 1, xdt));
    return OAR_OK;
}

static int bn_grad_maker(oar_grad_ctx_t *g) {
    const oar_op_desc_t *fwd = oar_gc_fwd(g);
    oar_op_desc_t *op = oar_gc_new_op(g, "batch_norm_grad");
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "X"));
    OAR_TRY(oar_gc_in(g, op, "Scale"));
    OAR_TRY(oar_gc_in(g, op, "Bias"));
    OAR_TRY(oar_gc_out(g, op, "SavedMean"));
    OAR_TRY(oar_gc_out(g, op, "SavedVariance"));
    /* with global statistics the grad normalizes by the running ones */
    if (oar_attr_b(fwd, "use_global_stats") ||
        (oar_attr_b(fwd, "is_test") && !oar_attr_b(fwd, "trainable_statistics"))) {
        OAR_TRY(oar_gc_in(g, op, "Mean"));
        OAR_TRY(oar_gc_in(g, op, "Variance"));
    }
    OAR_TRY(oar_gc_out_grad(g, op, "Y"));
    OAR_TRY(oar_gc_in_grad(g, op, "X"));
    OAR_TRY(oar_gc_in_grad(g, op, "Scale"));
    OAR_TRY(oar_gc_in_grad(g, op, "Bias"));
    return OAR_OK;
}

#define OAR_OPS_DEFINE
#include "ops/batch_norm.h"   /* the tables, the decoders and the registrations */
