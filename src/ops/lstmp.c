/*
 * lstmp.c — inference and grad maker of lstmp (Fluid's LSTM with a
 * recurrent projection, declared in lstmp.ops; kernels in
 * kernels/cpu/lstmp.c). Shapes: Input [T, 4D], Weight [P, 4D], ProjWeight
 * [D, P], Bias [1, 4D] or [1, 7D], H0 [N, P], C0 [N, D]; Projection [T, P],
 * Cell [T, D] with Input's LoD.
 */
#include <stdio.h>
#include "op.h"
#include "ops/lstmp.h"   /* generated from lstmp.ops */

static const char *nm(const char *s) { return s ? s : "?"; }

/* checks every input; *t the rows of Input, *d the hidden size, *p the
 * projection size (-1 unknown) */
static int lstmp_check(oar_infer_ctx_t *c, int64_t *t, int64_t *d, int64_t *p)
{
    const oar_lstmp_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const int64_t *w = NULL, *in = NULL, *pw = NULL;
    char b[160];
    OAR_TRY(oar_ic_check_2d(c, "Input", -1, -1, "[T, 4D]", &in));
    if (in[1] >= 0 && in[1] % 4 != 0)
        return oar_ic_error(c, OAR_ERR_SHAPE, "input Input '%s' has shape %s; expected [T, 4D]",
                            nm(oar_ic_in_name(c, "Input", 0)), oar_shape_str(in, 2, b, sizeof b));
    int64_t hd = in[1] >= 0 ? in[1] / 4 : -1;
    snprintf(b, sizeof b, "[P, 4D] = [P, %lld] (D = %lld from Input)", (long long)(hd >= 0 ? 4 * hd : -1),
             (long long)hd);
    OAR_TRY(oar_ic_check_2d(c, "Weight", -1, hd >= 0 ? 4 * hd : -1, b, &w));
    int64_t pd = w[0];
    snprintf(b, sizeof b, "[D, P] = [%lld, %lld] (D from Input, P from Weight)", (long long)hd, (long long)pd);
    OAR_TRY(oar_ic_check_2d(c, "ProjWeight", hd, pd, b, &pw));
    if (pd < 0) pd = pw[1];
    int dt = oar_ic_in_dtype(c, "Input", 0);
    OAR_TRY(oar_ic_check_float(c, "Input", -1));
    OAR_TRY(oar_ic_check_float(c, "Weight", dt));
    OAR_TRY(oar_ic_check_float(c, "ProjWeight", dt));
    if (oar_ic_in_count(c, "Bias") > 0) {
        int64_t bw = hd >= 0 ? (a->peepholes ? 7 : 4) * hd : -1;
        snprintf(b, sizeof b, "[1, %s] = [1, %lld]%s", a->peepholes ? "7D" : "4D", (long long)bw,
                 a->peepholes ? " (use_peepholes: 4D gate biases and 3D peephole weights)" : "");
        OAR_TRY(oar_ic_check_2d(c, "Bias", 1, bw, b, NULL));
        OAR_TRY(oar_ic_check_float(c, "Bias", dt));
    }
    int64_t nseq = -1;
    if (oar_ic_runtime(c)) OAR_TRY(oar_ic_seq_count(c, "Input", &nseq));
    for (int k = 0; k < 2; k++) {
        const char *slot = k == 0 ? "H0" : "C0";
        if (oar_ic_in_count(c, slot) == 0) continue;
        int64_t width = k == 0 ? pd : hd;
        snprintf(b, sizeof b, "[N, %s] = [%lld, %lld] (N = the number of sequences)", k == 0 ? "P" : "D",
                 (long long)nseq, (long long)width);
        OAR_TRY(oar_ic_check_2d(c, slot, nseq, width, b, NULL));
        OAR_TRY(oar_ic_check_float(c, slot, dt));
    }
    *t = in[0];
    *d = hd;
    *p = pd;
    return OAR_OK;
}

static int lstmp_infer(oar_infer_ctx_t *c)
{
    int64_t t, d, p;
    OAR_TRY(lstmp_check(c, &t, &d, &p));
    int dt = oar_ic_in_dtype(c, "Input", 0);
    int64_t hd[2] = {t, d}, pd[2] = {t, p}, gd[2] = {t, d >= 0 ? 4 * d : -1};
    OAR_TRY(oar_ic_set_out(c, "Projection", 0, pd, 2, dt));
    OAR_TRY(oar_ic_set_out(c, "Cell", 0, hd, 2, dt));
    if (oar_ic_out_present(c, "BatchGate")) OAR_TRY(oar_ic_set_out(c, "BatchGate", 0, gd, 2, dt));
    if (oar_ic_out_present(c, "BatchCellPreAct")) OAR_TRY(oar_ic_set_out(c, "BatchCellPreAct", 0, hd, 2, dt));
    if (oar_ic_out_present(c, "BatchHidden")) OAR_TRY(oar_ic_set_out(c, "BatchHidden", 0, hd, 2, dt));
    OAR_TRY(oar_ic_share_lod(c, "Input", 0, "Projection", 0));
    return oar_ic_share_lod(c, "Input", 0, "Cell", 0);
}

static int lstmp_grad_maker(oar_grad_ctx_t *g)
{
    oar_op_desc_t *op = oar_gc_new_op(g, "lstmp_grad");
    if (!op) return OAR_ERR_NOMEM;
    static const char *const ins[] = {"Input", "H0", "C0", "Weight", "ProjWeight", "Bias"};
    static const char *const outs[] = {"Projection", "Cell", "BatchGate", "BatchCellPreAct", "BatchHidden"};
    for (int i = 0; i < 6; i++) OAR_TRY(oar_gc_in(g, op, ins[i]));
    for (int i = 0; i < 5; i++) OAR_TRY(oar_gc_out(g, op, outs[i]));
    OAR_TRY(oar_gc_out_grad(g, op, "Projection"));
    OAR_TRY(oar_gc_out_grad(g, op, "Cell"));
    for (int i = 0; i < 6; i++) OAR_TRY(oar_gc_in_grad(g, op, ins[i]));
    return OAR_OK;
}

static int lstmp_grad_infer(oar_infer_ctx_t *c)
{
    int64_t t, d, p;
    OAR_TRY(lstmp_check(c, &t, &d, &p));
    static const char *const same[] = {"Projection", "Projection@GRAD", "Cell", "Cell@GRAD", "BatchCellPreAct",
                                       "BatchHidden", "BatchGate"};
    for (int i = 0; i < 7; i++) {
        if (oar_ic_in_count(c, same[i]) == 0) continue;
        int64_t w = i < 2 ? p : i == 6 ? (d >= 0 ? 4 * d : -1) : d;
        char b[96];
        snprintf(b, sizeof b, "[T, %s] = [%lld, %lld]", i < 2 ? "P" : i == 6 ? "4D" : "D", (long long)t, (long long)w);
        OAR_TRY(oar_ic_check_2d(c, same[i], t, w, b, NULL));
    }
    return oar_infer_grad_like_inputs(c);
}

#define OAR_OPS_DEFINE
#include "ops/lstmp.h"
