/*
 * gru.c — definitions of gru (Fluid's dynamic GRU over LoD sequences),
 * gru_unit (one step) and their grads. Kernels in kernels/cpu/gru.c.
 *
 * Gate blocks of Input/Bias are {update u, reset r, candidate c}. Weight
 * [D, 3D] is stored as Fluid stores it: a [D, 2D] matrix W_ur for the two
 * gates, then a [D, D] matrix W_c for the candidate (D * 3D values). With
 * x the input row (+ bias) and h_p the previous hidden:
 *
 *     u = act_gate(x_u + h_p W_u),  r = act_gate(x_r + h_p W_r)
 *     c = act(x_c + (r . h_p) W_c)
 *     h = u . c + (1 - u) . h_p       (origin_mode false, Fluid's default)
 *     h = u . h_p + (1 - u) . c       (origin_mode true, the GRU paper's)
 *
 * gru: Input [T, 3D] (LoD level >= 1), H0 [N, D] optional (zeros), Weight,
 * Bias [1, 3D] optional -> Hidden [T, D] with Input's LoD, and in the
 * kernel's time-major batch order BatchGate [T, 3D] (activated u, r, c),
 * BatchResetHiddenPrev [T, D] (r . h_p) and BatchHidden [T, D], which
 * gru_grad reads. Attrs activation / gate_activation are names.
 *
 * gru_unit: Input [N, 3D], HiddenPrev [N, D], Weight, Bias -> Gate [N, 3D],
 * ResetHiddenPrev [N, D], Hidden [N, D]; its activation / gate_activation are
 * Fluid's INT codes 0 identity, 1 sigmoid, 2 tanh, 3 relu.
 */
#include <stdio.h>
#include "op.h"
#include "paddle_attrs.h"
#include "gru.h"

#define ATTR_END {NULL, 0, 0, NULL, false, 0, 0}

static const char *nm(const char *s) { return s ? s : "?"; }

static int check_act_code(oar_infer_ctx_t *c, const char *attr)
{
    int v = oar_attr_i(oar_ic_op(c), attr);
    if (v < 0 || v > 3)
        return oar_ic_error(c, OAR_ERR_INVALID, "attr %s is %d; expected 0 (identity), 1 (sigmoid), 2 (tanh) or 3 (relu)",
                            attr, v);
    return OAR_OK;
}

/* Weight [D, 3D], Input [rows, 3D], Bias [1, 3D]; *d the hidden size */
static int check_weights(oar_infer_ctx_t *c, const char *in_slot, int64_t *rows, int64_t *d)
{
    const int64_t *w = NULL, *in = NULL;
    char b[160];
    OAR_TRY(oar_ic_check_2d(c, "Weight", -1, -1, "[D, 3D]", &w));
    if (w[0] >= 0 && w[1] >= 0 && w[1] != 3 * w[0])
        return oar_ic_error(c, OAR_ERR_SHAPE, "input Weight '%s' has shape %s; expected [D, 3D]",
                            nm(oar_ic_in_name(c, "Weight", 0)), oar_shape_str(w, 2, b, sizeof b));
    int64_t hd = w[0] >= 0 ? w[0] : (w[1] >= 0 ? w[1] / 3 : -1);
    snprintf(b, sizeof b, "[N, 3D] = [N, %lld] (D = %lld from Weight)", (long long)(hd >= 0 ? 3 * hd : -1), (long long)hd);
    OAR_TRY(oar_ic_check_2d(c, in_slot, -1, hd >= 0 ? 3 * hd : -1, b, &in));
    if (hd < 0 && in[1] >= 0) hd = in[1] / 3;
    OAR_TRY(oar_ic_check_float(c, in_slot, -1));
    int dt = oar_ic_in_dtype(c, in_slot, 0);
    OAR_TRY(oar_ic_check_float(c, "Weight", dt));
    if (oar_ic_in_count(c, "Bias") > 0) {
        snprintf(b, sizeof b, "[1, 3D] = [1, %lld]", (long long)(hd >= 0 ? 3 * hd : -1));
        OAR_TRY(oar_ic_check_2d(c, "Bias", 1, hd >= 0 ? 3 * hd : -1, b, NULL));
        OAR_TRY(oar_ic_check_float(c, "Bias", dt));
    }
    *rows = in[0];
    *d = hd;
    return OAR_OK;
}

/* ---- gru ---------------------------------------------------------------------------- */
static const oar_slot_def_t gru_in[] = {
    {"Input", 0}, {"H0", OAR_SLOT_DISPENSABLE}, {"Weight", 0}, {"Bias", OAR_SLOT_DISPENSABLE}, {NULL, 0}};
static const oar_slot_def_t gru_out[] = {
    /* Paddle's save_inference_model drops the Batch* outputs: the kernel then uses scratch */
    {"BatchGate", OAR_SLOT_DISPENSABLE}, {"BatchResetHiddenPrev", OAR_SLOT_DISPENSABLE},
    {"BatchHidden", OAR_SLOT_DISPENSABLE}, {"Hidden", 0}, {NULL, 0}};
static const oar_attr_def_t gru_attrs[] = {
    {"activation", OAR_ATTR_STRING, 0, "tanh", false, 0, 0, OAR_GRU_ACT_CHOICES},
    {"gate_activation", OAR_ATTR_STRING, 0, "sigmoid", false, 0, 0, OAR_GRU_ACT_CHOICES},
    {"is_reverse", OAR_ATTR_BOOLEAN, 0, NULL, false, 0, 0},
    {"origin_mode", OAR_ATTR_BOOLEAN, 0, NULL, false, 0, 0},
    OAR_PA_B("is_test", 0),
    ATTR_END};

static int gru_check(oar_infer_ctx_t *c, int64_t *t, int64_t *d)
{
    OAR_TRY(oar_ic_check_act_attr(c, "activation"));
    OAR_TRY(oar_ic_check_act_attr(c, "gate_activation"));
    OAR_TRY(check_weights(c, "Input", t, d));
    int64_t nseq = -1;
    if (oar_ic_runtime(c)) OAR_TRY(oar_ic_seq_count(c, "Input", &nseq));
    if (oar_ic_in_count(c, "H0") > 0) {
        char b[128];
        snprintf(b, sizeof b, "[N, D] = [%lld, %lld] (N = the number of sequences)", (long long)nseq, (long long)*d);
        OAR_TRY(oar_ic_check_2d(c, "H0", nseq, *d, b, NULL));
        OAR_TRY(oar_ic_check_float(c, "H0", oar_ic_in_dtype(c, "Input", 0)));
    }
    return OAR_OK;
}

static int gru_infer(oar_infer_ctx_t *c)
{
    int64_t t, d;
    OAR_TRY(gru_check(c, &t, &d));
    int dt = oar_ic_in_dtype(c, "Input", 0);
    int64_t hd[2] = {t, d}, gd[2] = {t, d >= 0 ? 3 * d : -1};
    if (oar_ic_out_present(c, "BatchGate")) OAR_TRY(oar_ic_set_out(c, "BatchGate", 0, gd, 2, dt));
    if (oar_ic_out_present(c, "BatchResetHiddenPrev")) OAR_TRY(oar_ic_set_out(c, "BatchResetHiddenPrev", 0, hd, 2, dt));
    if (oar_ic_out_present(c, "BatchHidden")) OAR_TRY(oar_ic_set_out(c, "BatchHidden", 0, hd, 2, dt));
    OAR_TRY(oar_ic_set_out(c, "Hidden", 0, hd, 2, dt));
    return oar_ic_share_lod(c, "Input", 0, "Hidden", 0);
}

static int gru_grad_maker(oar_grad_ctx_t *g)
{
    oar_op_desc_t *op = oar_gc_new_op(g, "gru_grad");
    if (!op) return OAR_ERR_NOMEM;
    static const char *const ins[] = {"Input", "H0", "Weight", "Bias"};
    static const char *const outs[] = {"BatchGate", "BatchResetHiddenPrev", "BatchHidden", "Hidden"};
    for (int i = 0; i < 4; i++) OAR_TRY(oar_gc_in(g, op, ins[i]));
    for (int i = 0; i < 4; i++) OAR_TRY(oar_gc_out(g, op, outs[i]));
    OAR_TRY(oar_gc_out_grad(g, op, "Hidden"));
    for (int i = 0; i < 4; i++) OAR_TRY(oar_gc_in_grad(g, op, ins[i]));
    return OAR_OK;
}

static int gru_decode(oar_decode_ctx_t *d, void *out)
{
    oar_gru_attrs_t *a = out;
    a->act = oar_dec_choice(d, "activation");
    a->gate = oar_dec_choice(d, "gate_activation");
    a->origin = oar_dec_b(d, "origin_mode");
    a->reverse = oar_dec_b(d, "is_reverse");
    return oar_dec_status(d);
}

static const oar_op_def_t gru_def = {
    .type = "gru", .inputs = gru_in, .outputs = gru_out, .attrs = gru_attrs,
    .infer = gru_infer, .grad = gru_grad_maker, .dtype_slot = "Input",
    .attrs_size = sizeof(oar_gru_attrs_t), .decode = gru_decode};
OAR_REGISTER_OP(gru_def)

static const oar_slot_def_t gru_grad_in[] = {
    {"Input", 0}, {"H0", OAR_SLOT_DISPENSABLE}, {"Weight", 0}, {"Bias", OAR_SLOT_DISPENSABLE},
    {"BatchGate", 0}, {"BatchResetHiddenPrev", 0}, {"BatchHidden", 0}, {"Hidden", 0}, {"Hidden@GRAD", 0},
    {NULL, 0}};
static const oar_slot_def_t gru_grad_out[] = {
    {"Input@GRAD", OAR_SLOT_DISPENSABLE}, {"H0@GRAD", OAR_SLOT_DISPENSABLE},
    {"Weight@GRAD", OAR_SLOT_DISPENSABLE}, {"Bias@GRAD", OAR_SLOT_DISPENSABLE}, {NULL, 0}};

static int gru_grad_infer(oar_infer_ctx_t *c)
{
    int64_t t, d;
    OAR_TRY(gru_check(c, &t, &d));
    static const char *const same[] = {"BatchResetHiddenPrev", "BatchHidden", "Hidden", "Hidden@GRAD", "BatchGate"};
    for (int i = 0; i < 5; i++) {
        char b[96];
        int64_t w = i == 4 ? (d >= 0 ? 3 * d : -1) : d;
        snprintf(b, sizeof b, "[T, %s] = [%lld, %lld]", i == 4 ? "3D" : "D", (long long)t, (long long)w);
        OAR_TRY(oar_ic_check_2d(c, same[i], t, w, b, NULL));
    }
    return oar_infer_grad_like_inputs(c);
}

static const oar_op_def_t gru_grad_def = {
    .type = "gru_grad", .inputs = gru_grad_in, .outputs = gru_grad_out, .attrs = gru_attrs,
    .infer = gru_grad_infer, .dtype_slot = "Input",
    .attrs_size = sizeof(oar_gru_attrs_t), .decode = gru_decode};
OAR_REGISTER_OP(gru_grad_def)

/* ---- gru_unit ---------------------------------------------------------------------------- */
static const oar_slot_def_t unit_in[] = {
    {"Input", 0}, {"HiddenPrev", 0}, {"Weight", 0}, {"Bias", OAR_SLOT_DISPENSABLE}, {NULL, 0}};
static const oar_slot_def_t unit_out[] = {{"Gate", 0}, {"ResetHiddenPrev", 0}, {"Hidden", 0}, {NULL, 0}};
static const oar_attr_def_t unit_attrs[] = {
    {"activation", OAR_ATTR_INT, 2, NULL, false, 0, 0},
    {"gate_activation", OAR_ATTR_INT, 1, NULL, false, 0, 0},
    {"origin_mode", OAR_ATTR_BOOLEAN, 0, NULL, false, 0, 0},
    ATTR_END};

static int unit_check(oar_infer_ctx_t *c, int64_t *n, int64_t *d)
{
    OAR_TRY(check_act_code(c, "activation"));
    OAR_TRY(check_act_code(c, "gate_activation"));
    OAR_TRY(check_weights(c, "Input", n, d));
    char b[128];
    snprintf(b, sizeof b, "[N, D] = [%lld, %lld] (N from Input, D from Weight)", (long long)*n, (long long)*d);
    OAR_TRY(oar_ic_check_2d(c, "HiddenPrev", *n, *d, b, NULL));
    return oar_ic_check_float(c, "HiddenPrev", oar_ic_in_dtype(c, "Input", 0));
}

static int unit_infer(oar_infer_ctx_t *c)
{
    int64_t n, d;
    OAR_TRY(unit_check(c, &n, &d));
    int dt = oar_ic_in_dtype(c, "Input", 0);
    int64_t hd[2] = {n, d}, gd[2] = {n, d >= 0 ? 3 * d : -1};
    OAR_TRY(oar_ic_set_out(c, "Gate", 0, gd, 2, dt));
    OAR_TRY(oar_ic_set_out(c, "ResetHiddenPrev", 0, hd, 2, dt));
    OAR_TRY(oar_ic_set_out(c, "Hidden", 0, hd, 2, dt));
    return oar_ic_share_lod(c, "Input", 0, "Hidden", 0);
}

static int unit_grad_maker(oar_grad_ctx_t *g)
{
    oar_op_desc_t *op = oar_gc_new_op(g, "gru_unit_grad");
    if (!op) return OAR_ERR_NOMEM;
    static const char *const ins[] = {"Input", "HiddenPrev", "Weight", "Bias"};
    for (int i = 0; i < 4; i++) OAR_TRY(oar_gc_in(g, op, ins[i]));
    OAR_TRY(oar_gc_out(g, op, "Gate"));
    OAR_TRY(oar_gc_out(g, op, "ResetHiddenPrev"));
    OAR_TRY(oar_gc_out_grad(g, op, "Hidden"));
    for (int i = 0; i < 4; i++) OAR_TRY(oar_gc_in_grad(g, op, ins[i]));
    return OAR_OK;
}

/* Fluid's INT activation codes, the kernels' numbering (identity, sigmoid, tanh, relu) */
static int unit_decode(oar_decode_ctx_t *d, void *out)
{
    oar_gru_attrs_t *a = out;
    a->act = oar_dec_i(d, "activation");
    a->gate = oar_dec_i(d, "gate_activation");
    a->origin = oar_dec_b(d, "origin_mode");
    a->reverse = false;
    if (a->act < 0 || a->act > 3 || a->gate < 0 || a->gate > 3)
        return oar_dec_error(d, OAR_ERR_INVALID, "gru_unit activation codes %d / %d: expected 0..3", a->act, a->gate);
    return oar_dec_status(d);
}

static const oar_op_def_t gru_unit_def = {
    .type = "gru_unit", .inputs = unit_in, .outputs = unit_out, .attrs = unit_attrs,
    .infer = unit_infer, .grad = unit_grad_maker, .dtype_slot = "Input",
    .attrs_size = sizeof(oar_gru_attrs_t), .decode = unit_decode};
OAR_REGISTER_OP(gru_unit_def)

static const oar_slot_def_t unit_grad_in[] = {
    {"Input", 0}, {"HiddenPrev", 0}, {"Weight", 0}, {"Bias", OAR_SLOT_DISPENSABLE}, {"Gate", 0},
    {"ResetHiddenPrev", 0}, {"Hidden@GRAD", 0}, {NULL, 0}};
static const oar_slot_def_t unit_grad_out[] = {
    {"Input@GRAD", OAR_SLOT_DISPENSABLE}, {"HiddenPrev@GRAD", OAR_SLOT_DISPENSABLE},
    {"Weight@GRAD", OAR_SLOT_DISPENSABLE}, {"Bias@GRAD", OAR_SLOT_DISPENSABLE}, {NULL, 0}};

static int unit_grad_infer(oar_infer_ctx_t *c)
{
    int64_t n, d;
    OAR_TRY(unit_check(c, &n, &d));
    char b[96];
    snprintf(b, sizeof b, "[N, 3D] = [%lld, %lld]", (long long)n, (long long)(d >= 0 ? 3 * d : -1));
    OAR_TRY(oar_ic_check_2d(c, "Gate", n, d >= 0 ? 3 * d : -1, b, NULL));
    snprintf(b, sizeof b, "[N, D] = [%lld, %lld]", (long long)n, (long long)d);
    OAR_TRY(oar_ic_check_2d(c, "ResetHiddenPrev", n, d, b, NULL));
    OAR_TRY(oar_ic_check_2d(c, "Hidden@GRAD", n, d, b, NULL));
    return oar_infer_grad_like_inputs(c);
}

static const oar_op_def_t gru_unit_grad_def = {
    .type = "gru_unit_grad", .inputs = unit_grad_in, .outputs = unit_grad_out, .attrs = unit_attrs,
    .infer = unit_grad_infer, .dtype_slot = "Input",
    .attrs_size = sizeof(oar_gru_attrs_t), .decode = unit_decode};
OAR_REGISTER_OP(gru_unit_grad_def)
