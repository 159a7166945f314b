/* layer_norm.c — layer_norm and layer_norm_grad (Fluid 1.x semantics).
 *
 * X is flattened to [left, right] at begin_norm_axis; each row is normalized
 * by its own mean and (biased) variance, then scaled and shifted by the
 * optional Scale and Bias of shape [right]. Mean and Variance ([left]) keep
 * the statistics for the grad op. This file holds the inference and the
 * grad maker; the ops themselves (slots, attributes, docs) are declared in
 * layer_norm.ops. Kernels in kernels/cpu/layer_norm.c and
 * kernels/cuda/layer_norm.cu. */
#include "op.h"
#include "ops/layer_norm.h"   /* generated from layer_norm.ops: slots, oar_ln_attrs_t */

#include <string.h>

/* left/right sizes of X split at begin_norm_axis; -1 where unknown */
static int split(oar_infer_ctx_t *c, const int64_t *x, int xn, int64_t *left, int64_t *right) {
    const oar_ln_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const int axis = a->begin_norm_axis;
    if (axis < 1 || axis >= xn) {
        char s[128];
        return oar_ic_error(c, OAR_ERR_INVALID, "attr begin_norm_axis = %d must be in [1, %d) for X '%s' of shape %s",
                            axis, xn, oar_ic_in_name(c, "X", 0), oar_shape_str(x, xn, s, sizeof s));
    }
    int64_t l = 1, r = 1;
    for (int i = 0; i < xn; i++) {
        int64_t *p = i < axis ? &l : &r;
        if (*p < 0) continue;
        if (x[i] < 0) *p = -1;
        else if (oar_mul_checked(*p, x[i], p))
            return oar_ic_error(c, OAR_ERR_SHAPE, "X '%s' is too large", oar_ic_in_name(c, "X", 0));
    }
    *left = l; *right = r;
    return OAR_OK;
}

static int check_param(oar_infer_ctx_t *c, const char *slot, int64_t right, int xdt) {
    int n;
    const int64_t *d = oar_ic_in_dims(c, slot, 0, &n);
    if (!d) return OAR_ERR_SHAPE;
    int64_t numel = 1;
    bool known = true;
    for (int i = 0; i < n; i++) { if (d[i] < 0) known = false; else numel *= d[i]; }
    if (n < 1 || (known && right >= 0 && numel != right)) {
        char s[128];
        return oar_ic_error(c, OAR_ERR_SHAPE, "%s '%s' must hold %lld values (the normalized size), got shape %s",
                            slot, oar_ic_in_name(c, slot, 0), (long long)right, oar_shape_str(d, n, s, sizeof s));
    }
    int dt = oar_ic_in_dtype(c, slot, 0);
    if (dt >= 0 && xdt >= 0 && dt != xdt)
        return oar_ic_error(c, OAR_ERR_DTYPE, "%s '%s' is %s but X is %s", slot, oar_ic_in_name(c, slot, 0),
                            oar_dtype_name(dt), oar_dtype_name(xdt));
    return OAR_OK;
}

static int ln_infer(oar_infer_ctx_t *c) {
    int xn;
    const int64_t *x = oar_ic_in_dims(c, "X", 0, &xn);
    if (!x) return OAR_ERR_SHAPE;
    int64_t left, right;
    OAR_TRY(split(c, x, xn, &left, &right));
    int xdt = oar_ic_in_dtype(c, "X", 0);
    if (oar_ic_in_present(c, "Scale")) OAR_TRY(check_param(c, "Scale", right, xdt));
    if (oar_ic_in_present(c, "Bias")) OAR_TRY(check_param(c, "Bias", right, xdt));
    OAR_TRY(oar_infer_same_as(c, "X", "Y"));
    int64_t ld[1] = {left};
    OAR_TRY(oar_ic_set_out(c, "Mean", 0, ld, 1, xdt));
    OAR_TRY(oar_ic_set_out(c, "Variance", 0, ld, 1, xdt));
    return OAR_OK;
}

static int ln_grad_infer(oar_infer_ctx_t *c) {
    int xn;
    const int64_t *x = oar_ic_in_dims(c, "X", 0, &xn);
    if (!x) return OAR_ERR_SHAPE;
    int64_t left, right;
    OAR_TRY(split(c, x, xn, &left, &right));
    OAR_TRY(oar_ic_check_same_dims(c, "Y@GRAD", "X"));
    if (oar_ic_out_present(c, "Scale@GRAD") && !oar_ic_in_present(c, "Scale"))
        return oar_ic_error(c, OAR_ERR_INVALID, "Scale@GRAD is requested but Scale is not an input");
    if (oar_ic_out_present(c, "Bias@GRAD") && !oar_ic_in_present(c, "Bias"))
        return oar_ic_error(c, OAR_ERR_INVALID, "Bias@GRAD is requested but Bias is not an input");
    int xdt = oar_ic_in_dtype(c, "X", 0);
    if (oar_ic_in_present(c, "Scale")) OAR_TRY(check_param(c, "Scale", right, xdt));
    return oar_infer_grad_like_inputs(c);
}

static int ln_grad_maker(oar_grad_ctx_t *g) {
    const oar_op_desc_t *fwd = oar_gc_fwd(g);
    oar_op_desc_t *op = oar_gc_new_op(g, "layer_norm_grad");
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "X"));
    OAR_TRY(oar_gc_out(g, op, "Mean"));
    OAR_TRY(oar_gc_out(g, op, "Variance"));
    if (oar_op_desc_input_count(fwd, "Scale") > 0) {
        OAR_TRY(oar_gc_in(g, op, "Scale"));
        OAR_TRY(oar_gc_in_grad(g, op, "Scale"));
    }
    if (oar_op_desc_input_count(fwd, "Bias") > 0) {
        OAR_TRY(oar_gc_in(g, op, "Bias"));
        OAR_TRY(oar_gc_in_grad(g, op, "Bias"));
    }
    OAR_TRY(oar_gc_out_grad(g, op, "Y"));
    OAR_TRY(oar_gc_in_grad(g, op, "X"));
    return OAR_OK;
}

#define OAR_OPS_DEFINE
#include "ops/layer_norm.h"   /* the tables, the decoders and the registrations */
