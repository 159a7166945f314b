/*
 * attention_lstm.c — inference of attention_lstm (declared in
 * attention_lstm.ops, the CPU kernel in kernels/cpu/attention_lstm.c).
 */
#include <stdio.h>
#include "op.h"
#include "infer_util.h"   /* nm */
#include "ops/attention_lstm.h"

static int attlstm_infer(oar_infer_ctx_t *c)
{
    const int64_t *x, *w;
    OAR_TRY(oar_ic_check_2d(c, "X", -1, -1, "[T, M]", &x));
    OAR_TRY(oar_ic_check_2d(c, "LSTMWeight", -1, -1, "[D + M, 4D]", &w));
    const int dt = oar_ic_in_dtype(c, "X", 0);
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    int64_t M = x[1], D = w[1] >= 0 ? w[1] / 4 : -1;
    char b[160];
    if (w[1] >= 0 && w[1] % 4 != 0)
        return oar_ic_error(c, OAR_ERR_SHAPE, "input LSTMWeight '%s' has %lld columns; 4D expected",
                            nm(oar_ic_in_name(c, "LSTMWeight", 0)), (long long)w[1]);
    if (M >= 0 && D >= 0 && w[0] >= 0 && w[0] != D + M)
        return oar_ic_error(c, OAR_ERR_SHAPE, "input LSTMWeight '%s' has %lld rows; D + M = %lld expected",
                            nm(oar_ic_in_name(c, "LSTMWeight", 0)), (long long)w[0], (long long)(D + M));
    snprintf(b, sizeof b, "[1, 4D] = [1, %lld]", (long long)(D >= 0 ? 4 * D : -1));
    OAR_TRY(oar_ic_check_2d(c, "LSTMBias", 1, D >= 0 ? 4 * D : -1, b, NULL));
    snprintf(b, sizeof b, "[M + D, 1] = [%lld, 1]", (long long)(M >= 0 && D >= 0 ? M + D : -1));
    OAR_TRY(oar_ic_check_2d(c, "AttentionWeight", M >= 0 && D >= 0 ? M + D : -1, 1, b, NULL));
    static const char *const scalars[] = {"AttentionBias", "AttentionScalar", "AttentionScalarBias"};
    for (int i = 0; i < 3; i++)
        if (oar_ic_in_present(c, scalars[i])) OAR_TRY(oar_ic_check_2d(c, scalars[i], 1, 1, "[1, 1]", NULL));
    int64_t nseq = -1;
    if (oar_ic_runtime(c)) OAR_TRY(oar_ic_seq_count(c, "X", &nseq));
    snprintf(b, sizeof b, "[N, D] = [%lld, %lld] (N = the number of sequences)", (long long)nseq, (long long)D);
    OAR_TRY(oar_ic_check_2d(c, "C0", nseq, D, b, NULL));
    if (oar_ic_in_present(c, "H0")) OAR_TRY(oar_ic_check_2d(c, "H0", nseq, D, b, NULL));
    static const char *const floats[] = {"C0", "H0", "AttentionWeight", "LSTMWeight", "LSTMBias"};
    for (int i = 0; i < 5; i++)
        if (oar_ic_in_present(c, floats[i])) OAR_TRY(oar_ic_check_float(c, floats[i], dt));
    int64_t hd[2] = {x[0], D}, t1[2] = {x[0], 1}, lx[2] = {1, M}, lo[2] = {1, D >= 0 ? 4 * D : -1};
    OAR_TRY(oar_ic_set_out(c, "Hidden", 0, hd, 2, dt));
    OAR_TRY(oar_ic_set_out(c, "Cell", 0, hd, 2, dt));
    if (oar_ic_out_present(c, "AttentionedX")) OAR_TRY(oar_ic_set_out(c, "AttentionedX", 0, t1, 2, dt));
    if (oar_ic_out_present(c, "AttentionFCOut")) OAR_TRY(oar_ic_set_out(c, "AttentionFCOut", 0, t1, 2, dt));
    if (oar_ic_out_present(c, "LSTMX")) OAR_TRY(oar_ic_set_out(c, "LSTMX", 0, lx, 2, dt));
    if (oar_ic_out_present(c, "LSTMOUT")) OAR_TRY(oar_ic_set_out(c, "LSTMOUT", 0, lo, 2, dt));
    OAR_TRY(oar_ic_share_lod(c, "X", 0, "Hidden", 0));
    return oar_ic_share_lod(c, "X", 0, "Cell", 0);
}

#define OAR_OPS_DEFINE
#include "ops/attention_lstm.h"
