/*
 * gru.c — inference and grad makers of gru (Fluid's dynamic GRU over LoD
 * sequences), gru_unit (one step) and their grads; the ops (slots,
 * attributes, docs) are declared in gru.ops. Kernels in kernels/cpu/gru.c.
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
#include "ops/gru.h"   /* generated from gru.ops */

static const char *nm(const char *s) { return s ? s : "?"; }

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
static int gru_check(oar_infer_ctx_t *c, int64_t *t, int64_t *d)
{
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

/* ---- gru_unit ---------------------------------------------------------------------------- */
static int unit_check(oar_infer_ctx_t *c, int64_t *n, int64_t *d)
{
    /* the activation codes were checked by gru_unit_finish */
    if (!oar_ic_attrs(c)) return OAR_ERR_INVALID;
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

/* gru_unit's INT activation codes are the kernels' numbering (identity,
 * sigmoid, tanh, relu); Fluid declares no range, so the decoder checks them
 * (with the message inference gave before, naming the attr). gru_unit runs
 * one step: no reverse. */
static void gru_unit_finish(oar_decode_ctx_t *d, oar_gru_attrs_t *a)
{
    a->reverse = false;
    static const char *const names[] = {"activation", "gate_activation"};
    int v[2] = {a->act, a->gate};
    for (int i = 0; i < 2; i++)
        if (v[i] < 0 || v[i] > 3) {
            oar_dec_error(d, OAR_ERR_INVALID, "gru_unit: attr %s is %d; expected 0 (identity), 1 (sigmoid), 2 (tanh) "
                          "or 3 (relu)", names[i], v[i]);
            return;
        }
}

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

#define OAR_OPS_DEFINE
#include "ops/gru.h"   /* the tables, decoders and registrations */
