/* layer_norm.c — layer_norm and layer_norm_grad (Fluid 1.x semantics).
 *
 * X is flattened to [left, right] at begin_norm_axis; each row is normalized
 * by its own mean and (biased) variance, then scaled and shifted by the
 * optional Scale and Bias of shape [right]. Mean and Variance ([left]) keep
 * the statistics for the grad op. Kernels in kernels/cpu/layer_norm.c. */
#include "op.h"
#include "layer_norm.h"
#include "paddle_attrs.h"

#include <string.h>

static const oar_slot_def_t ln_in[] = {
    {"X", 0}, {"Scale", OAR_SLOT_DISPENSABLE}, {"Bias", OAR_SLOT_DISPENSABLE}, {NULL, 0}};
static const oar_slot_def_t ln_out[] = {
    {"Y", 0}, {"Mean", 0}, {"Variance", 0}, {NULL, 0}};
static const oar_slot_def_t ln_grad_in[] = {
    {"X", 0}, {"Mean", 0}, {"Variance", 0}, {"Scale", OAR_SLOT_DISPENSABLE},
    {"Bias", OAR_SLOT_DISPENSABLE}, {"Y@GRAD", 0}, {NULL, 0}};
static const oar_slot_def_t ln_grad_out[] = {
    {"X@GRAD", OAR_SLOT_DISPENSABLE}, {"Scale@GRAD", OAR_SLOT_DISPENSABLE},
    {"Bias@GRAD", OAR_SLOT_DISPENSABLE}, {NULL, 0}};

static const oar_attr_def_t ln_attrs[] = {
    /* Fluid bounds epsilon by 0.001f, which is a bit above 1e-3 as a double */
    {.name = "epsilon", .type = OAR_ATTR_FLOAT, .def = 1e-5, .min = 0.0, .max = 0.0010000000474974513},
    {.name = "begin_norm_axis", .type = OAR_ATTR_INT, .def = 1, .min = 1, .max = OAR_MAX_DIMS},
    {.name = "use_mkldnn", .type = OAR_ATTR_BOOLEAN, .def = 0},
    {.name = "is_test", .type = OAR_ATTR_BOOLEAN, .def = 0},
    OAR_PA_MKLDNN_DT, OAR_PA_ONEDNN,
    {.name = NULL}};

static int ln_decode(oar_decode_ctx_t *d, void *out) {
    oar_ln_attrs_t *a = out;
    a->epsilon = oar_dec_f(d, "epsilon");
    a->begin_norm_axis = oar_dec_i(d, "begin_norm_axis");
    return oar_dec_status(d);
}

/* left/right sizes of X split at begin_norm_axis; -1 where unknown */
static int split(oar_infer_ctx_t *c, const int64_t *x, int xn, int64_t *left, int64_t *right) {
    int axis = oar_attr_i(oar_ic_op(c), "begin_norm_axis");
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

static const oar_op_def_t layer_norm_def = {
    .type = "layer_norm", .inputs = ln_in, .outputs = ln_out, .attrs = ln_attrs,
    .infer = ln_infer, .grad = ln_grad_maker, .dtype_slot = "X",
    .attrs_size = sizeof(oar_ln_attrs_t), .decode = ln_decode};
OAR_REGISTER_OP(layer_norm_def)

static const oar_op_def_t layer_norm_grad_def = {
    .type = "layer_norm_grad", .inputs = ln_grad_in, .outputs = ln_grad_out, .attrs = ln_attrs,
    .infer = ln_grad_infer, .grad = NULL, .dtype_slot = "X",
    .attrs_size = sizeof(oar_ln_attrs_t), .decode = ln_decode};
OAR_REGISTER_OP(layer_norm_grad_def)
