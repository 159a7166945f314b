/*
 * attention_lstm.c — the CPU kernel of attention_lstm
 * (src/ops/attention_lstm.ops), float32 and float64: each sequence runs
 * step by step (the attention at a step reads all of its sequence's rows).
 * X W_x + b is computed once for every row; each step adds the previous
 * cell's c W_c, applies relu (and the scalar layer), a softmax over the
 * sequence, sums the rows and runs one LSTM cell.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "op.h"
#include "sequence_batch.h"
#include "ops/seq_lod.h"
#include "ops/attention_lstm.h"

/* the first tensor of an optional output (scratch Fluid exposes), or NULL */
static void *opt_out(oar_kernel_ctx_t *k, int slot, const char *name, int dt, int64_t n, int *rc)
{
    void *p = NULL;
    if (*rc == OAR_OK) *rc = oar_k_output_sized(k, slot, name, dt, n, true, &p);
    return p;
}

#define ATTLSTM_KERNEL(SFX, T, DT)                                                                                    \
    static int attlstm_##SFX(oar_kernel_ctx_t *k)                                                                     \
    {                                                                                                                 \
        const oar_attlstm_attrs_t *at = oar_k_attrs(k);                                                               \
        const oar_tensor_t *xt, *c0t, *h0t, *awt, *abt, *ast, *asbt, *lwt, *lbt;                                      \
        const void *xp, *c0p, *h0p, *awp, *abp, *asp, *asbp, *lwp, *lbp;                                              \
        OAR_TRY(oar_sk_input(k, OAR_ATTLSTM_X, "X", DT, &xt, &xp));                                                   \
        OAR_TRY(oar_sk_input(k, OAR_ATTLSTM_C0, "C0", DT, &c0t, &c0p));                                               \
        OAR_TRY(oar_sk_opt_input(k, OAR_ATTLSTM_H0, "H0", DT, &h0t, &h0p));                                           \
        OAR_TRY(oar_sk_input(k, OAR_ATTLSTM_ATT_W, "AttentionWeight", DT, &awt, &awp));                               \
        OAR_TRY(oar_sk_opt_input(k, OAR_ATTLSTM_ATT_B, "AttentionBias", DT, &abt, &abp));                             \
        OAR_TRY(oar_sk_opt_input(k, OAR_ATTLSTM_ATT_S, "AttentionScalar", DT, &ast, &asp));                           \
        OAR_TRY(oar_sk_opt_input(k, OAR_ATTLSTM_ATT_SB, "AttentionScalarBias", DT, &asbt, &asbp));                    \
        OAR_TRY(oar_sk_input(k, OAR_ATTLSTM_LSTM_W, "LSTMWeight", DT, &lwt, &lwp));                                   \
        OAR_TRY(oar_sk_input(k, OAR_ATTLSTM_LSTM_B, "LSTMBias", DT, &lbt, &lbp));                                     \
        const int64_t *offs;                                                                                          \
        int64_t no;                                                                                                   \
        OAR_TRY(oar_seq_lod_last(k, OAR_ATTLSTM_X, "X", xt, &offs, &no));                                             \
        const int64_t Tn = xt->dims[0], M = xt->dims[1], D = lwt->dims[1] / 4;                                        \
        int rc = OAR_OK;                                                                                              \
        T *hid = opt_out(k, OAR_ATTLSTM_HIDDEN, "Hidden", DT, Tn * D, &rc);                                           \
        T *cell = opt_out(k, OAR_ATTLSTM_CELL, "Cell", DT, Tn * D, &rc);                                              \
        T *attx_o = opt_out(k, OAR_ATTLSTM_ATTED_X, "AttentionedX", DT, Tn, &rc);                                     \
        T *fc_o = opt_out(k, OAR_ATTLSTM_ATT_FC_OUT, "AttentionFCOut", DT, Tn, &rc);                                  \
        T *lx_o = opt_out(k, OAR_ATTLSTM_LSTMX, "LSTMX", DT, M, &rc);                                                 \
        T *lo_o = opt_out(k, OAR_ATTLSTM_LSTMOUT, "LSTMOUT", DT, 4 * D, &rc);                                         \
        if (rc != OAR_OK) return rc;                                                                                  \
        if (!hid || !cell) return oar_k_error(k, OAR_ERR_NOT_FOUND, "Hidden and Cell are required outputs");          \
        T *attx = oar_xmalloc(sizeof(T) * (size_t)(Tn > 0 ? Tn : 1));                                     \
        T *fc = oar_xmalloc(sizeof(T) * (size_t)(Tn > 0 ? Tn : 1));                                       \
        T *lx = oar_xmalloc(sizeof(T) * (size_t)(M + D)), *g = oar_xmalloc(sizeof(T) * (size_t)(4 * D));              \
        if (!attx || !fc || !lx || !g) { free(attx); free(fc); free(lx); free(g); return OAR_ERR_NOMEM; }             \
        const T *x = xp, *c0 = c0p, *h0 = h0p, *aw = awp, *lw = lwp, *lb = lbp;                                       \
        const T ab = abp ? *(const T *)abp : 0;                                                                       \
        for (int64_t r = 0; r < Tn; r++) {                                                                            \
            T acc = ab;                                                                                               \
            for (int64_t j = 0; j < M; j++) acc += x[r * M + j] * aw[j];                                              \
            attx[r] = acc;                                                                                            \
        }                                                                                                             \
        for (int64_t s = 0; s + 1 < no; s++) {                                                                        \
            const int64_t b0 = offs[s], len = offs[s + 1] - offs[s];                                                  \
            const T *cp = c0 + s * D, *hp = h0 ? h0 + s * D : NULL;                                                   \
            for (int64_t step = 0; step < len; step++) {                                                              \
                const int64_t row = b0 + step;                                                                        \
                T cw = 0;                                                                                             \
                for (int64_t j = 0; j < D; j++) cw += cp[j] * aw[M + j];                                              \
                T mx = 0;                                                                                             \
                for (int64_t q = 0; q < len; q++) {                                                                   \
                    T v = attx[b0 + q] + cw;                                                                          \
                    v = v > 0 ? v : 0;                                                                                \
                    if (asp) {                                                                                        \
                        v = v * *(const T *)asp + (asbp ? *(const T *)asbp : 0);                                      \
                        v = v > 0 ? v : 0;                                                                            \
                    }                                                                                                 \
                    fc[b0 + q] = v;                                                                                   \
                    if (q == 0 || v > mx) mx = v;                                                                     \
                }                                                                                                     \
                T z = 0;                                                                                              \
                for (int64_t q = 0; q < len; q++) z += (fc[b0 + q] = (T)exp(fc[b0 + q] - mx));                        \
                for (int64_t q = 0; q < len; q++) fc[b0 + q] /= z;                                                    \
                /* lx = [h_prev, sum_q p_q X_q] */                                                                    \
                for (int64_t j = 0; j < D; j++) lx[j] = hp ? hp[j] : 0;                                               \
                for (int64_t j = 0; j < M; j++) {                                                                     \
                    T acc = 0;                                                                                        \
                    for (int64_t q = 0; q < len; q++) acc += fc[b0 + q] * x[(b0 + q) * M + j];                        \
                    lx[D + j] = acc;                                                                                  \
                }                                                                                                     \
                for (int64_t c = 0; c < 4 * D; c++) {                                                                 \
                    T acc = lb[c];                                                                                    \
                    for (int64_t j = 0; j < D + M; j++) acc += lx[j] * lw[j * 4 * D + c];                             \
                    g[c] = acc;                                                                                       \
                }                                                                                                     \
                if (lo_o) memcpy(lo_o, g, sizeof(T) * (size_t)(4 * D));                                               \
                if (lx_o) memcpy(lx_o, lx + D, sizeof(T) * (size_t)M);                                                \
                oar_act_fwd_##SFX(at->gate, g, 3 * D);                                                                \
                oar_act_fwd_##SFX(at->cand, g + 3 * D, D);                                                            \
                T *cr = cell + row * D, *hr = hid + row * D;                                                          \
                for (int64_t j = 0; j < D; j++) cr[j] = cp[j] * g[j] + g[D + j] * g[3 * D + j];                       \
                memcpy(hr, cr, sizeof(T) * (size_t)D);                                                                \
                oar_act_fwd_##SFX(at->cell, hr, D);                                                                   \
                for (int64_t j = 0; j < D; j++) hr[j] *= g[2 * D + j];                                                \
                cp = cr;                                                                                              \
                hp = hr;                                                                                              \
            }                                                                                                         \
        }                                                                                                             \
        if (attx_o) memcpy(attx_o, attx, sizeof(T) * (size_t)Tn);                                                     \
        if (fc_o) memcpy(fc_o, fc, sizeof(T) * (size_t)Tn);                                                           \
        free(attx);                                                                                                   \
        free(fc);                                                                                                     \
        free(lx);                                                                                                     \
        free(g);                                                                                                      \
        return OAR_OK;                                                                                                \
    }                                                                                                                 \
    OAR_REGISTER_KERNEL("attention_lstm", OAR_PLACE_CPU, DT, attlstm_##SFX)

ATTLSTM_KERNEL(f32, float, OAR_FP32)
ATTLSTM_KERNEL(f64, double, OAR_FP64)
