/*
 * norm_ext.c — instance_norm and group_norm (Fluid 1.8 / Paddle 2.x, NCHW
 * and other channel-second layouts) and p_norm, with their grads. Kernels
 * in kernels/cpu/norm_ext.c.
 *
 * instance_norm normalizes each (sample, channel) over the spatial dims;
 * group_norm each (sample, group of C/groups channels); both then apply the
 * per-channel Scale (default 1) and Bias (default 0).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "op.h"
#include "paddle_attrs.h"
#include "norm_ext.h"

#define END {NULL, 0, 0, NULL, false, 0, 0, NULL}

static const oar_slot_def_t in_slots[] = {
    {"X", 0}, {"Scale", OAR_SLOT_DISPENSABLE}, {"Bias", OAR_SLOT_DISPENSABLE}, {NULL, 0}};
static const oar_slot_def_t in_grad_slots[] = {
    {"X", 0}, {"Scale", OAR_SLOT_DISPENSABLE}, {"Bias", OAR_SLOT_DISPENSABLE}, {"Y@GRAD", 0}, {NULL, 0}};
static const oar_slot_def_t in_grad_out[] = {
    {"X@GRAD", OAR_SLOT_DISPENSABLE}, {"Scale@GRAD", OAR_SLOT_DISPENSABLE},
    {"Bias@GRAD", OAR_SLOT_DISPENSABLE}, {NULL, 0}};
static const oar_slot_def_t inorm_out[] = {
    {"Y", 0}, {"SavedMean", OAR_SLOT_DISPENSABLE}, {"SavedVariance", OAR_SLOT_DISPENSABLE}, {NULL, 0}};
static const oar_slot_def_t gnorm_out[] = {
    {"Y", 0}, {"Mean", OAR_SLOT_DISPENSABLE}, {"Variance", OAR_SLOT_DISPENSABLE}, {NULL, 0}};

/* Fluid bounds epsilon by 0.001f */
#define EPS_ATTR {"epsilon", OAR_ATTR_FLOAT, 1e-5, NULL, false, 0.0, 0.0010000000474974513, NULL}
static const oar_attr_def_t inorm_attrs[] = {EPS_ATTR, OAR_PA_B("is_test", 0), OAR_PA_USE_MKLDNN, END};
static const oar_attr_def_t gnorm_attrs[] = {
    EPS_ATTR, {"groups", OAR_ATTR_INT, -1, NULL, false, 0, 0, NULL},
    {"data_layout", OAR_ATTR_STRING, 0, "NCHW", false, 0, 0, "NCHW|NHWC"}, OAR_PA_USE_MKLDNN, END};

static int inorm_decode(oar_decode_ctx_t *d, void *out)
{
    oar_gn_attrs_t *a = out;
    a->epsilon = oar_dec_f(d, "epsilon");
    a->instance = true;
    return oar_dec_status(d);
}
static int gnorm_decode(oar_decode_ctx_t *d, void *out)
{
    oar_gn_attrs_t *a = out;
    a->epsilon = oar_dec_f(d, "epsilon");
    a->groups = oar_dec_i(d, "groups");
    return oar_dec_status(d);
}

/* checks X (rank >= 2, channels second) and the optional Scale/Bias [C];
 * *c gets C */
static int check_norm_inputs(oar_infer_ctx_t *c, int64_t *ch, const int64_t **xd, int *nx)
{
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    *xd = oar_ic_in_dims(c, "X", 0, nx);
    if (!*xd) return OAR_ERR_SHAPE;
    if (*nx < 2) return oar_ic_error(c, OAR_ERR_SHAPE, "X must have at least 2 dims [N, C, ...], it has %d", *nx);
    *ch = (*xd)[1];
    const char *opt[2] = {"Scale", "Bias"};
    for (int i = 0; i < 2; i++) {
        if (!oar_ic_in_present(c, opt[i])) continue;
        int n;
        const int64_t *d = oar_ic_in_dims(c, opt[i], 0, &n);
        if (!d) return OAR_ERR_SHAPE;
        int64_t cnt = 1;
        for (int j = 0; j < n; j++) cnt = d[j] < 0 || cnt < 0 ? -1 : cnt * d[j];
        if (cnt >= 0 && *ch >= 0 && cnt != *ch)
            return oar_ic_error(c, OAR_ERR_SHAPE, "%s ('%s') has %lld values, X has %lld channels", opt[i],
                                oar_ic_in_name(c, opt[i], 0), (long long)cnt, (long long)*ch);
    }
    return OAR_OK;
}

static int set_stat(oar_infer_ctx_t *c, const char *slot, const int64_t *d, int n)
{
    if (!oar_ic_out_present(c, slot)) return OAR_OK;
    return oar_ic_set_out(c, slot, 0, d, n, oar_ic_in_dtype(c, "X", 0));
}

static int inorm_infer(oar_infer_ctx_t *c)
{
    int64_t ch;
    const int64_t *xd;
    int nx;
    OAR_TRY(check_norm_inputs(c, &ch, &xd, &nx));
    int64_t nc = xd[0] < 0 || ch < 0 ? -1 : xd[0] * ch;
    OAR_TRY(set_stat(c, "SavedMean", &nc, 1));
    OAR_TRY(set_stat(c, "SavedVariance", &nc, 1));
    OAR_TRY(oar_ic_set_out(c, "Y", 0, xd, nx, oar_ic_in_dtype(c, "X", 0)));
    return oar_ic_share_lod(c, "X", 0, "Y", 0);
}

static int gnorm_infer(oar_infer_ctx_t *c)
{
    int64_t ch;
    const int64_t *xd;
    int nx;
    if (strcmp(oar_attr_s(oar_ic_op(c), "data_layout"), "NHWC") == 0)
        return oar_ic_error(c, OAR_ERR_UNSUPPORTED, "data_layout \"NHWC\" is not supported by oar's group_norm (NCHW only)");
    OAR_TRY(check_norm_inputs(c, &ch, &xd, &nx));
    int g = oar_attr_i(oar_ic_op(c), "groups");
    if (g < 1) return oar_ic_error(c, OAR_ERR_INVALID, "attr groups = %d must be >= 1", g);
    if (ch >= 0 && ch % g != 0)
        return oar_ic_error(c, OAR_ERR_SHAPE, "X's %lld channels are not divisible by groups = %d", (long long)ch, g);
    int64_t sd[2] = {xd[0], g};
    OAR_TRY(set_stat(c, "Mean", sd, 2));
    OAR_TRY(set_stat(c, "Variance", sd, 2));
    OAR_TRY(oar_ic_set_out(c, "Y", 0, xd, nx, oar_ic_in_dtype(c, "X", 0)));
    return oar_ic_share_lod(c, "X", 0, "Y", 0);
}

static int norm_grad_infer(oar_infer_ctx_t *c) { return oar_infer_grad_like_inputs(c); }

static int norm_grad(oar_grad_ctx_t *g)
{
    const oar_op_desc_t *f = oar_gc_fwd(g);
    oar_op_desc_t *op = oar_gc_new_grad_op(g);
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "X"));
    if (oar_op_desc_input_count(f, "Scale") > 0) OAR_TRY(oar_gc_in(g, op, "Scale"));
    if (oar_op_desc_input_count(f, "Bias") > 0) OAR_TRY(oar_gc_in(g, op, "Bias"));
    OAR_TRY(oar_gc_out_grad(g, op, "Y"));
    OAR_TRY(oar_gc_in_grad(g, op, "X"));
    if (oar_op_desc_input_count(f, "Scale") > 0) OAR_TRY(oar_gc_in_grad(g, op, "Scale"));
    if (oar_op_desc_input_count(f, "Bias") > 0) OAR_TRY(oar_gc_in_grad(g, op, "Bias"));
    return OAR_OK;
}

#define NORM_DEF(NAME, OUTS, ATTRS, INFER, DECODE)                                              \
    static const oar_op_def_t NAME##_def = {                                                    \
        .type = #NAME, .inputs = in_slots, .outputs = OUTS, .attrs = ATTRS, .infer = INFER,     \
        .grad = norm_grad, .dtype_slot = "X", .attrs_size = sizeof(oar_gn_attrs_t), .decode = DECODE}; \
    OAR_REGISTER_OP(NAME##_def)                                                                 \
    static const oar_op_def_t NAME##_grad_def = {                                               \
        .type = #NAME "_grad", .inputs = in_grad_slots, .outputs = in_grad_out, .attrs = ATTRS, \
        .infer = norm_grad_infer, .dtype_slot = "Y@GRAD", .attrs_size = sizeof(oar_gn_attrs_t), \
        .decode = DECODE};                                                                      \
    OAR_REGISTER_OP(NAME##_grad_def)

NORM_DEF(instance_norm, inorm_out, inorm_attrs, inorm_infer, inorm_decode)
NORM_DEF(group_norm, gnorm_out, gnorm_attrs, gnorm_infer, gnorm_decode)

/* ---- p_norm ---------------------------------------------------------------- */
static const oar_slot_def_t pn_in[] = {{"X", 0}, {NULL, 0}};
static const oar_slot_def_t pn_out[] = {{"Out", 0}, {NULL, 0}};
static const oar_slot_def_t pn_grad_in[] = {{"X", 0}, {"Out", 0}, {"Out@GRAD", 0}, {NULL, 0}};
static const oar_slot_def_t pn_grad_out[] = {{"X@GRAD", OAR_SLOT_DISPENSABLE}, {NULL, 0}};
static const oar_attr_def_t pn_attrs[] = {
    OAR_PA_F("porder", 2.0), {"axis", OAR_ATTR_INT, -1, NULL, false, 0, 0, NULL},
    OAR_PA_F("epsilon", 1.0e-12), OAR_PA_B("keepdim", 0),
    OAR_PA_B("asvector", 0),   /* Paddle 2.x: the norm of all of X */
    END};

static int pn_decode(oar_decode_ctx_t *d, void *out)
{
    oar_pnorm_attrs_t *a = out;
    a->porder = oar_dec_f(d, "porder");
    a->axis = oar_dec_i(d, "axis");
    a->epsilon = oar_dec_f(d, "epsilon");
    a->keepdim = oar_dec_b(d, "keepdim");
    a->asvector = oar_dec_b(d, "asvector");
    return oar_dec_status(d);
}

static int pn_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    oar_pnorm_attrs_t a;
    memset(&a, 0, sizeof a);
    OAR_TRY(oar_op_decode(oar_registry_op("p_norm"), oar_ic_op(c), &a));
    if (isnan(a.porder)) return oar_ic_error(c, OAR_ERR_INVALID, "attr porder is NaN");
    int nx;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, &nx);
    if (!xd) return OAR_ERR_SHAPE;
    int64_t od[OAR_MAX_DIMS];
    int no = 0;
    if (a.asvector) {
        for (int i = 0; i < nx && a.keepdim; i++) od[no++] = 1;
    } else {
        if (nx == 0 || a.axis < -nx || a.axis >= nx)
            return oar_ic_error(c, OAR_ERR_RANGE, "attr axis = %d is out of range for X of rank %d", a.axis, nx);
        int ax = a.axis < 0 ? a.axis + nx : a.axis;
        for (int i = 0; i < nx; i++)
            if (i != ax) od[no++] = xd[i];
            else if (a.keepdim) od[no++] = 1;
    }
    if (no == 0) od[no++] = 1;   /* Fluid 1.8's shape of a full reduction */
    return oar_ic_set_out(c, "Out", 0, od, no, oar_ic_in_dtype(c, "X", 0));
}

static int pn_grad(oar_grad_ctx_t *g)
{
    oar_op_desc_t *op = oar_gc_new_op(g, "p_norm_grad");
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "X"));
    OAR_TRY(oar_gc_out(g, op, "Out"));
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    return oar_gc_in_grad(g, op, "X");
}
static int pn_grad_infer(oar_infer_ctx_t *c) { return oar_infer_grad_like_inputs(c); }

static const oar_op_def_t pn_def = {
    .type = "p_norm", .inputs = pn_in, .outputs = pn_out, .attrs = pn_attrs, .infer = pn_infer,
    .grad = pn_grad, .dtype_slot = "X", .attrs_size = sizeof(oar_pnorm_attrs_t), .decode = pn_decode};
OAR_REGISTER_OP(pn_def)
static const oar_op_def_t pn_grad_def = {
    .type = "p_norm_grad", .inputs = pn_grad_in, .outputs = pn_grad_out, .attrs = pn_attrs,
    .infer = pn_grad_infer, .dtype_slot = "Out@GRAD", .attrs_size = sizeof(oar_pnorm_attrs_t),
    .decode = pn_decode};
OAR_REGISTER_OP(pn_grad_def)
