/*
 * lstm.c — inference and grad makers of lstm (Fluid's dynamic LSTM over LoD
 * sequences), lstm_unit (one step) and their grads; the ops (slots,
 * attributes, docs) are declared in lstm.ops. Kernels in kernels/cpu/lstm.c.
 *
 * lstm: Input [T, 4D] (x already projected, LoD level >= 1), H0/C0 [N, D]
 * optional (one row per sequence, zeros when absent), Weight [D, 4D], Bias
 * [1, 4D] or, with use_peepholes, [1, 7D] (gate biases then the peephole
 * weights W_ic, W_fc, W_oc). Gate blocks in Input/Weight/Bias are ordered
 * {candidate, input, forget, output}, as Fluid's:
 *
 *     g = Input_t + h_{t-1} Weight + b
 *     a = act_cand(g_c)
 *     i = act_gate(g_i + W_ic . c_{t-1}),  f = act_gate(g_f + W_fc . c_{t-1})
 *     c_t = a . i + c_{t-1} . f
 *     o = act_gate(g_o + W_oc . c_t)
 *     h_t = o . act_cell(c_t)
 *
 * Outputs: Hidden and Cell [T, D] with Input's LoD; BatchGate [T, 4D] (the
 * activated gates a, i, f, o) and BatchCellPreAct [T, D] (c_t before the cell
 * activation), both in the kernel's time-major batch order, for lstm_grad.
 * is_reverse runs every sequence from its end.
 *
 * lstm_unit: X [N, 4D], C_prev [N, D] -> C, H [N, D]; gate blocks {i, f, o, g}:
 * c = sigmoid(x_f + forget_bias) c_prev + sigmoid(x_i) tanh(x_g),
 * h = sigmoid(x_o) tanh(c).
 */
#include <stdio.h>
#include "op.h"
#include "ops/lstm.h"   /* generated from lstm.ops */

static const char *nm(const char *s) { return s ? s : "?"; }

/* ---- lstm ---------------------------------------------------------------------- */
/* checks every input; *t rows of Input (-1 unknown), *d the hidden size */
static int lstm_check(oar_infer_ctx_t *c, int64_t *t, int64_t *d)
{
    /* the activations' choices are checked wherever a program comes from (lstm.ops) */
    const oar_lstm_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const int64_t *w = NULL, *in = NULL;
    OAR_TRY(oar_ic_check_2d(c, "Weight", -1, -1, "[D, 4D]", &w));
    char b[160];
    if (w[0] >= 0 && w[1] >= 0 && w[1] != 4 * w[0]) {
        return oar_ic_error(c, OAR_ERR_SHAPE, "input Weight '%s' has shape %s; expected [D, 4D]",
                            nm(oar_ic_in_name(c, "Weight", 0)), oar_shape_str(w, 2, b, sizeof b));
    }
    int64_t hd = w[0] >= 0 ? w[0] : (w[1] >= 0 ? w[1] / 4 : -1);
    snprintf(b, sizeof b, "[T, 4D] = [T, %lld] (D = %lld from Weight)", (long long)(hd >= 0 ? 4 * hd : -1), (long long)hd);
    OAR_TRY(oar_ic_check_2d(c, "Input", -1, hd >= 0 ? 4 * hd : -1, b, &in));
    if (hd < 0 && in[1] >= 0) hd = in[1] / 4;
    int dt = oar_ic_in_dtype(c, "Input", 0);
    OAR_TRY(oar_ic_check_float(c, "Input", -1));
    OAR_TRY(oar_ic_check_float(c, "Weight", dt));
    bool peep = a->peepholes;
    if (oar_ic_in_count(c, "Bias") > 0) {
        int64_t bw = hd >= 0 ? (peep ? 7 : 4) * hd : -1;
        snprintf(b, sizeof b, "[1, %s] = [1, %lld]%s", peep ? "7D" : "4D", (long long)bw,
                 peep ? " (use_peepholes: 4D gate biases and 3D peephole weights)" : "");
        OAR_TRY(oar_ic_check_2d(c, "Bias", 1, bw, b, NULL));
        OAR_TRY(oar_ic_check_float(c, "Bias", dt));
    }
    int64_t nseq = -1;
    if (oar_ic_runtime(c)) OAR_TRY(oar_ic_seq_count(c, "Input", &nseq));
    for (int k = 0; k < 2; k++) {
        const char *slot = k == 0 ? "H0" : "C0";
        if (oar_ic_in_count(c, slot) == 0) continue;
        snprintf(b, sizeof b, "[N, D] = [%lld, %lld] (N = the number of sequences)", (long long)nseq, (long long)hd);
        OAR_TRY(oar_ic_check_2d(c, slot, nseq, hd, b, NULL));
        OAR_TRY(oar_ic_check_float(c, slot, dt));
    }
    *t = in[0];
    *d = hd;
    return OAR_OK;
}

static int lstm_infer(oar_infer_ctx_t *c)
{
    int64_t t, d;
    OAR_TRY(lstm_check(c, &t, &d));
    int dt = oar_ic_in_dtype(c, "Input", 0);
    int64_t hd[2] = {t, d}, gd[2] = {t, d >= 0 ? 4 * d : -1};
    OAR_TRY(oar_ic_set_out(c, "Hidden", 0, hd, 2, dt));
    OAR_TRY(oar_ic_set_out(c, "Cell", 0, hd, 2, dt));
    if (oar_ic_out_present(c, "BatchGate")) OAR_TRY(oar_ic_set_out(c, "BatchGate", 0, gd, 2, dt));
    if (oar_ic_out_present(c, "BatchCellPreAct")) OAR_TRY(oar_ic_set_out(c, "BatchCellPreAct", 0, hd, 2, dt));
    OAR_TRY(oar_ic_share_lod(c, "Input", 0, "Hidden", 0));
    return oar_ic_share_lod(c, "Input", 0, "Cell", 0);
}

static int lstm_grad_maker(oar_grad_ctx_t *g)
{
    oar_op_desc_t *op = oar_gc_new_op(g, "lstm_grad");
    if (!op) return OAR_ERR_NOMEM;
    static const char *const ins[] = {"Input", "H0", "C0", "Weight", "Bias"};
    static const char *const outs[] = {"Hidden", "Cell", "BatchGate", "BatchCellPreAct"};
    for (int i = 0; i < 5; i++) OAR_TRY(oar_gc_in(g, op, ins[i]));
    for (int i = 0; i < 4; i++) OAR_TRY(oar_gc_out(g, op, outs[i]));
    OAR_TRY(oar_gc_out_grad(g, op, "Hidden"));
    OAR_TRY(oar_gc_out_grad(g, op, "Cell"));
    for (int i = 0; i < 5; i++) OAR_TRY(oar_gc_in_grad(g, op, ins[i]));
    return OAR_OK;
}

static int lstm_grad_infer(oar_infer_ctx_t *c)
{
    int64_t t, d;
    OAR_TRY(lstm_check(c, &t, &d));
    static const char *const same[] = {"Hidden", "Cell", "BatchCellPreAct", "Hidden@GRAD", "Cell@GRAD", "BatchGate"};
    for (int i = 0; i < 6; i++) {
        if (oar_ic_in_count(c, same[i]) == 0) continue;
        char b[96];
        snprintf(b, sizeof b, "[T, %s] = [%lld, %lld]", i == 5 ? "4D" : "D", (long long)t,
                 (long long)(i == 5 ? 4 * d : d));
        OAR_TRY(oar_ic_check_2d(c, same[i], t, i == 5 ? (d >= 0 ? 4 * d : -1) : d, b, NULL));
    }
    return oar_infer_grad_like_inputs(c);
}

/* ---- lstm_unit ---------------------------------------------------------------------- */
static int unit_check(oar_infer_ctx_t *c, int64_t *n, int64_t *d)
{
    const int64_t *cp = NULL, *x = NULL;
    OAR_TRY(oar_ic_check_2d(c, "C_prev", -1, -1, "[N, D]", &cp));
    char b[96];
    snprintf(b, sizeof b, "[N, 4D] = [%lld, %lld] (from C_prev)", (long long)cp[0],
             (long long)(cp[1] >= 0 ? 4 * cp[1] : -1));
    OAR_TRY(oar_ic_check_2d(c, "X", cp[0], cp[1] >= 0 ? 4 * cp[1] : -1, b, &x));
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    OAR_TRY(oar_ic_check_float(c, "C_prev", oar_ic_in_dtype(c, "X", 0)));
    *n = x[0] >= 0 ? x[0] : cp[0];
    *d = cp[1] >= 0 ? cp[1] : (x[1] >= 0 ? x[1] / 4 : -1);
    if (x[1] >= 0 && x[1] % 4 != 0)
        return oar_ic_error(c, OAR_ERR_SHAPE, "input X '%s' has %lld columns; expected a multiple of 4",
                            nm(oar_ic_in_name(c, "X", 0)), (long long)x[1]);
    return OAR_OK;
}

static int unit_infer(oar_infer_ctx_t *c)
{
    int64_t n, d;
    OAR_TRY(unit_check(c, &n, &d));
    int64_t od[2] = {n, d};
    int dt = oar_ic_in_dtype(c, "X", 0);
    OAR_TRY(oar_ic_set_out(c, "C", 0, od, 2, dt));
    OAR_TRY(oar_ic_set_out(c, "H", 0, od, 2, dt));
    OAR_TRY(oar_ic_share_lod(c, "X", 0, "C", 0));
    return oar_ic_share_lod(c, "X", 0, "H", 0);
}

static int unit_grad_maker(oar_grad_ctx_t *g)
{
    oar_op_desc_t *op = oar_gc_new_op(g, "lstm_unit_grad");
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "X"));
    OAR_TRY(oar_gc_in(g, op, "C_prev"));
    OAR_TRY(oar_gc_out(g, op, "C"));
    OAR_TRY(oar_gc_out_grad(g, op, "C"));
    OAR_TRY(oar_gc_out_grad(g, op, "H"));
    OAR_TRY(oar_gc_in_grad(g, op, "X"));
    return oar_gc_in_grad(g, op, "C_prev");
}

static int unit_grad_infer(oar_infer_ctx_t *c)
{
    int64_t n, d;
    OAR_TRY(unit_check(c, &n, &d));
    static const char *const same[] = {"C", "C@GRAD", "H@GRAD"};
    for (int i = 0; i < 3; i++) {
        char b[64];
        snprintf(b, sizeof b, "[N, D] = [%lld, %lld]", (long long)n, (long long)d);
        OAR_TRY(oar_ic_check_2d(c, same[i], n, d, b, NULL));
    }
    return oar_infer_grad_like_inputs(c);
}

#define OAR_OPS_DEFINE
#include "ops/lstm.h"   /* the tables, decoders and registrations */
