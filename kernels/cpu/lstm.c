/*
 * lstm.c — CPU kernels of lstm, lstm_unit and their grads (definitions and
 * formulas in src/ops/lstm.c).
 *
 * lstm runs on the sequence-to-batch layout (ops/seq_layout.h): the gates of
 * every time step are computed for all sequences still running at once, so
 * the recurrence is one GEMM per step, [n_t, D] x [D, 4D], and the rows of
 * step t+1 are a prefix of those of step t. BatchGate holds the activated
 * gates and BatchCellPreAct the cell states in that order; the grad walks the
 * steps backwards from them, adds each step's dGate W^T into the previous
 * step's hidden grad, and finds Weight@GRAD with one GEMM over all steps
 * (previous hiddens^T dGate).
 */
#include <stdlib.h>
#include <string.h>
#include "op.h"
#include "sequence_batch.h"
#include "ops/seq_lod.h"
#include "act_f32.h"
#include "gemm.h"
#include "scratch.h"
#include "ops/lstm.h"

typedef struct lstm_acts { int gate, cell, cand; } lstm_acts_t;

/* peephole weights W_ic, W_fc, W_oc (NULL without peepholes) */
typedef struct peep { const void *ci, *cf, *co; } peep_t;

#define LSTM_STEPS(SFX, T)                                                            \
    /* g [n, 4D]: pre-activations in, activated gates out; cp [n, D] or NULL */      \
    static void step_fwd_##SFX(int64_t n, int64_t D, T *g, const T *cp, T *c, T *h,   \
                               const T *ci, const T *cf, const T *co, const lstm_acts_t *act) \
    {                                                                                 \
        for (int64_t r = 0; r < n; r++) {                                             \
            T *a = g + r * 4 * D, *i = a + D, *f = a + 2 * D, *o = a + 3 * D;         \
            const T *cpr = cp ? cp + r * D : NULL;                                    \
            T *cr = c + r * D, *hr = h + r * D;                                       \
            oar_act_fwd_##SFX(act->cand, a, D);                                       \
            if (cpr && ci)                                                            \
                for (int64_t j = 0; j < D; j++) { i[j] += cpr[j] * ci[j]; f[j] += cpr[j] * cf[j]; } \
            oar_act_fwd_##SFX(act->gate, i, 2 * D);                                   \
            for (int64_t j = 0; j < D; j++) cr[j] = a[j] * i[j] + (cpr ? cpr[j] * f[j] : 0); \
            if (co) for (int64_t j = 0; j < D; j++) o[j] += cr[j] * co[j];            \
            oar_act_fwd_##SFX(act->gate, o, D);                                       \
            memcpy(hr, cr, sizeof(T) * (size_t)D);                                    \
            oar_act_fwd_##SFX(act->cell, hr, D);                                      \
            for (int64_t j = 0; j < D; j++) hr[j] *= o[j];                            \
        }                                                                             \
    }                                                                                 \
    /* From the activated gates g, cells c and previous cells cp (or NULL), the      \
     * hidden grads dh and cell grads dc of n rows: dg [n, 4D] (pre-activation     \
     * grads), dcp += (when not NULL), peephole grads dci/dcf/dco +=.             \
     * tmp holds 2D values. */                                                    \
    static void step_bwd_##SFX(int64_t n, int64_t D, const T *g, const T *c, const T *cp, \
                               const T *dh, const T *dc, T *dg, T *dcp,               \
                               const T *ci, const T *cf, const T *co, T *dci, T *dcf, T *dco, \
                               const lstm_acts_t *act, T *tmp)                        \
    {                                                                                 \
        T *tc = tmp, *t2 = tmp + D;                                                   \
        for (int64_t r = 0; r < n; r++) {                                             \
            const T *a = g + r * 4 * D, *i = a + D, *f = a + 2 * D, *o = a + 3 * D;   \
            const T *cr = c + r * D, *cpr = cp ? cp + r * D : NULL;                   \
            const T *dhr = dh + r * D, *dcr_in = dc ? dc + r * D : NULL;              \
            T *da = dg + r * 4 * D, *di = da + D, *df = da + 2 * D, *dout = da + 3 * D; \
            memcpy(tc, cr, sizeof(T) * (size_t)D);                                    \
            oar_act_fwd_##SFX(act->cell, tc, D);                                      \
            for (int64_t j = 0; j < D; j++) { dout[j] = dhr[j] * tc[j]; t2[j] = dhr[j] * o[j]; } \
            oar_act_bwd_##SFX(act->gate, o, dout, D);                                 \
            oar_act_bwd_##SFX(act->cell, tc, t2, D);                                  \
            /* t2 becomes the total cell grad */                                      \
            for (int64_t j = 0; j < D; j++) {                                         \
                T s = t2[j] + (dcr_in ? dcr_in[j] : 0);                               \
                if (co) s += dout[j] * co[j];                                         \
                t2[j] = s;                                                            \
                da[j] = s * i[j];                                                     \
                di[j] = s * a[j];                                                     \
                df[j] = cpr ? s * cpr[j] : 0;                                         \
            }                                                                         \
            oar_act_bwd_##SFX(act->cand, a, da, D);                                   \
            oar_act_bwd_##SFX(act->gate, i, di, 2 * D);                               \
            if (dcp) {                                                                \
                T *d = dcp + r * D;                                                   \
                for (int64_t j = 0; j < D; j++)                                       \
                    d[j] += t2[j] * f[j] + (ci ? di[j] * ci[j] + df[j] * cf[j] : 0);  \
            }                                                                         \
            if (dco) for (int64_t j = 0; j < D; j++) dco[j] += dout[j] * cr[j];       \
            if (dci && cpr)                                                           \
                for (int64_t j = 0; j < D; j++) { dci[j] += di[j] * cpr[j]; dcf[j] += df[j] * cpr[j]; } \
        }                                                                             \
    }

LSTM_STEPS(f64, double)

/* float32: the same step in one pass over each row, 8 lanes at a time (the
 * tail of D % 8 lanes through zero-padded vectors): activations, cell update
 * and hidden (or all the grads) while the row's gate values are in registers,
 * instead of a pass per activation and per product. Absent peepholes and
 * previous cells read as zeros. The lane functions take m as a constant 8 in
 * the main loop, so their loads and stores compile to vector moves. */
#define STD_ACTS ((lstm_acts_t){.gate = OAR_ACT_SIGMOID, .cell = OAR_ACT_TANH, .cand = OAR_ACT_TANH})
static inline bool std_acts(const lstm_acts_t *a)
{
    return a->gate == OAR_ACT_SIGMOID && a->cell == OAR_ACT_TANH && a->cand == OAR_ACT_TANH;
}

static inline __attribute__((always_inline)) void
fwd_lanes_f32(int m, int64_t j, int64_t D, float *a, const float *cpr, float *cr, float *hr, const float *ci,
              const float *cf, const float *co, lstm_acts_t act)
{
    float *i = a + D, *f = a + 2 * D, *o = a + 3 * D;
    v8f_t va = act8(act.cand, ld8(a + j, m));
    v8f_t vi = ld8(i + j, m), vf = ld8(f + j, m), vc;
    if (cpr) {
        v8f_t vcp = ld8(cpr + j, m);
        if (ci) { vi += vcp * ld8(ci + j, m); vf += vcp * ld8(cf + j, m); }
        vi = act8(act.gate, vi);
        vf = act8(act.gate, vf);
        vc = va * vi + vcp * vf;
    } else {
        vi = act8(act.gate, vi);
        vf = act8(act.gate, vf);
        vc = va * vi;
    }
    v8f_t vo = ld8(o + j, m);
    if (co) vo += vc * ld8(co + j, m);
    vo = act8(act.gate, vo);
    st8(a + j, va, m);
    st8(i + j, vi, m);
    st8(f + j, vf, m);
    st8(o + j, vo, m);
    st8(cr + j, vc, m);
    st8(hr + j, act8(act.cell, vc) * vo, m);
}

static void step_fwd_f32(int64_t n, int64_t D, float *g, const float *cp, float *c, float *h,
                         const float *ci, const float *cf, const float *co, const lstm_acts_t *act)
{
    for (int64_t r = 0; r < n; r++) {
        float *a = g + r * 4 * D, *cr = c + r * D, *hr = h + r * D;
        const float *cpr = cp ? cp + r * D : NULL;
        int64_t j = 0;
        if (std_acts(act))   /* constant activations: the switches fold away */
            for (; j + 8 <= D; j += 8) fwd_lanes_f32(8, j, D, a, cpr, cr, hr, ci, cf, co, STD_ACTS);
        else
            for (; j + 8 <= D; j += 8) fwd_lanes_f32(8, j, D, a, cpr, cr, hr, ci, cf, co, *act);
        if (j < D) fwd_lanes_f32((int)(D - j), j, D, a, cpr, cr, hr, ci, cf, co, *act);
    }
}

static inline __attribute__((always_inline)) void
bwd_lanes_f32(int m, int64_t j, int64_t D, const float *a, const float *cr, const float *cpr, const float *dhr,
              const float *dcr_in, float *da, float *dcpr, const float *ci, const float *cf, const float *co,
              float *dci, float *dcf, float *dco, lstm_acts_t act)
{
    const float *i = a + D, *f = a + 2 * D, *o = a + 3 * D;
    float *di = da + D, *df = da + 2 * D, *dout = da + 3 * D;
    const v8f_t zero = {0};
    v8f_t va = ld8(a + j, m), vi = ld8(i + j, m), vo = ld8(o + j, m), vc = ld8(cr + j, m);
    v8f_t vdh = ld8(dhr + j, m);
    v8f_t tc = act8(act.cell, vc);
    v8f_t vdo = act8_bwd(act.gate, vo, vdh * tc);
    v8f_t s = act8_bwd(act.cell, tc, vdh * vo);
    if (dcr_in) s += ld8(dcr_in + j, m);
    if (co) s += vdo * ld8(co + j, m);
    v8f_t vcp = cpr ? ld8(cpr + j, m) : zero;
    v8f_t vf = ld8(f + j, m);
    v8f_t vda = act8_bwd(act.cand, va, s * vi);
    v8f_t vdi = act8_bwd(act.gate, vi, s * va);
    v8f_t vdf = cpr ? act8_bwd(act.gate, vf, s * vcp) : zero;
    st8(da + j, vda, m);
    st8(di + j, vdi, m);
    st8(df + j, vdf, m);
    st8(dout + j, vdo, m);
    if (dcpr) {
        v8f_t d = s * vf;
        if (ci) d += vdi * ld8(ci + j, m) + vdf * ld8(cf + j, m);
        st8(dcpr + j, ld8(dcpr + j, m) + d, m);
    }
    if (dco) st8(dco + j, ld8(dco + j, m) + vdo * vc, m);
    if (dci && cpr) {
        st8(dci + j, ld8(dci + j, m) + vdi * vcp, m);
        st8(dcf + j, ld8(dcf + j, m) + vdf * vcp, m);
    }
}

static void step_bwd_f32(int64_t n, int64_t D, const float *g, const float *c, const float *cp,
                         const float *dh, const float *dc, float *dg, float *dcp,
                         const float *ci, const float *cf, const float *co, float *dci, float *dcf, float *dco,
                         const lstm_acts_t *act, float *tmp)
{
    (void)tmp;
    for (int64_t r = 0; r < n; r++) {
        const float *a = g + r * 4 * D, *cr = c + r * D, *cpr = cp ? cp + r * D : NULL;
        const float *dhr = dh + r * D, *dcr_in = dc ? dc + r * D : NULL;
        float *da = dg + r * 4 * D, *dcpr = dcp ? dcp + r * D : NULL;
        int64_t j = 0;
        if (std_acts(act))
            for (; j + 8 <= D; j += 8)
                bwd_lanes_f32(8, j, D, a, cr, cpr, dhr, dcr_in, da, dcpr, ci, cf, co, dci, dcf, dco, STD_ACTS);
        else
            for (; j + 8 <= D; j += 8)
                bwd_lanes_f32(8, j, D, a, cr, cpr, dhr, dcr_in, da, dcpr, ci, cf, co, dci, dcf, dco, *act);
        if (j < D)
            bwd_lanes_f32((int)(D - j), j, D, a, cr, cpr, dhr, dcr_in, da, dcpr, ci, cf, co, dci, dcf, dco, *act);
    }
}

static void step_fwd(int dt, int64_t n, int64_t D, void *g, const void *cp, void *c, void *h, const peep_t *p,
                     const lstm_acts_t *act)
{
    if (dt == OAR_FP32) step_fwd_f32(n, D, g, cp, c, h, p->ci, p->cf, p->co, act);
    else step_fwd_f64(n, D, g, cp, c, h, p->ci, p->cf, p->co, act);
}

static void step_bwd(int dt, int64_t n, int64_t D, const void *g, const void *c, const void *cp, const void *dh,
                     const void *dc, void *dg, void *dcp, const peep_t *p, void *dpeep, const lstm_acts_t *act,
                     void *tmp)
{
    size_t es = oar_dtype_size(dt);
    void *dci = dpeep, *dcf = dpeep ? (char *)dpeep + es * (size_t)D : NULL,
         *dco = dpeep ? (char *)dpeep + 2 * es * (size_t)D : NULL;
    if (dt == OAR_FP32)
        step_bwd_f32(n, D, g, c, cp, dh, dc, dg, dcp, p->ci, p->cf, p->co, dci, dcf, dco, act, tmp);
    else
        step_bwd_f64(n, D, g, c, cp, dh, dc, dg, dcp, p->ci, p->cf, p->co, dci, dcf, dco, act, tmp);
}


/* everything both kernels read */
typedef struct lstm_args {
    int dt;
    size_t es;
    int64_t T, D;
    const oar_tensor_t *in, *h0t, *c0t, *bt;
    const void *x, *h0, *c0, *w, *b;
    peep_t peep;
    lstm_acts_t act;
    oar_seqb_t sb;
} lstm_args_t;

static int lstm_setup(oar_kernel_ctx_t *k, lstm_args_t *a)
{
    memset(a, 0, sizeof *a);
    a->dt = oar_k_dtype(k);
    a->es = oar_dtype_size(a->dt);
    const oar_tensor_t *wt;
    OAR_TRY(oar_sk_input(k, OAR_LSTM_INPUT, "Input", a->dt, &a->in, &a->x));
    OAR_TRY(oar_sk_input(k, OAR_LSTM_WEIGHT, "Weight", a->dt, &wt, &a->w));
    OAR_TRY(oar_sk_opt_input(k, OAR_LSTM_H0, "H0", a->dt, &a->h0t, &a->h0));
    OAR_TRY(oar_sk_opt_input(k, OAR_LSTM_C0, "C0", a->dt, &a->c0t, &a->c0));
    OAR_TRY(oar_sk_opt_input(k, OAR_LSTM_BIAS, "Bias", a->dt, &a->bt, &a->b));
    const oar_lstm_attrs_t *at = oar_k_attrs(k);
    a->act = (lstm_acts_t){.gate = at->gate, .cell = at->cell, .cand = at->cand};
    if (wt->ndim != 2 || wt->dims[1] != 4 * wt->dims[0] || a->in->ndim != 2 || a->in->dims[1] != wt->dims[1])
        return oar_k_error(k, OAR_ERR_SHAPE, "Input [T, 4D] and Weight [D, 4D] do not agree");
    a->T = a->in->dims[0];
    a->D = wt->dims[0];
    bool peep = at->peepholes && a->b;
    if (a->b && oar_tensor_numel_of(a->bt) != (peep ? 7 : 4) * a->D)
        return oar_k_error(k, OAR_ERR_SHAPE, "Bias has %lld values; expected %lld",
                           (long long)oar_tensor_numel_of(a->bt), (long long)((peep ? 7 : 4) * a->D));
    if (peep) {
        a->peep.ci = (const char *)a->b + a->es * (size_t)(4 * a->D);
        a->peep.cf = (const char *)a->b + a->es * (size_t)(5 * a->D);
        a->peep.co = (const char *)a->b + a->es * (size_t)(6 * a->D);
    }
    const int64_t *offs;
    int64_t no;
    OAR_TRY(oar_seq_lod_last(k, OAR_LSTM_INPUT, "Input", a->in, &offs, &no));
    OAR_TRY(oar_sk_check_state(k, "H0", a->h0t, no - 1, a->D));
    OAR_TRY(oar_sk_check_state(k, "C0", a->c0t, no - 1, a->D));
    int64_t dims[3] = {a->T, 4 * a->D, no};
    OAR_TRY(oar_sk_blas_dims(k, 3, dims));
    return oar_sk_seqb_make(k, &a->sb, offs, no, at->reverse);
}


static int lstm_fwd(oar_kernel_ctx_t *k)
{
    lstm_args_t a;
    int rc = lstm_setup(k, &a);
    if (rc != OAR_OK) { oar_seqb_free(&a.sb); return rc; }
    int64_t T = a.T, D = a.D;
    size_t es = a.es;
    void *hid, *cell, *bg, *bc, *h0s = NULL, *c0s = NULL, *hb = NULL, *own_bg = NULL, *own_bc = NULL;
    if ((rc = oar_k_output_sized(k, OAR_LSTM_HIDDEN, "Hidden", a.dt, T * D, false, &hid)) != OAR_OK ||
        (rc = oar_k_output_sized(k, OAR_LSTM_CELL, "Cell", a.dt, T * D, false, &cell)) != OAR_OK ||
        (rc = oar_sk_output_or_scratch(k, OAR_LSTM_BATCHGATE, "BatchGate", a.dt, T * 4 * D, es,
                                       &bg, &own_bg)) != OAR_OK ||
        (rc = oar_sk_output_or_scratch(k, OAR_LSTM_BATCHCELL, "BatchCellPreAct", a.dt, T * D, es,
                                       &bc, &own_bc)) != OAR_OK)
        goto done;
    hb = oar_sk_scratch(k, T * D, es, false, &rc);
    if (!hb) goto done;
    if (a.h0 && !(h0s = oar_sk_sorted_state(k, &a.sb, a.h0, D, es, &rc))) goto done;
    if (a.c0 && !(c0s = oar_sk_sorted_state(k, &a.sb, a.c0, D, es, &rc))) goto done;
    oar_seqb_gather(&a.sb, a.x, bg, 4 * D, es);
    if (a.b) oar_sk_add_row(a.dt, bg, a.b, T, 4 * D);
    int64_t q[OAR_SEQB_MAX_PARTS + 1];
    int parts = oar_seqb_parts(&a.sb, a.sb.nseq * 4 * D * D, q);
    const int nthr = oar_seqb_threads(parts);
    #pragma omp parallel for num_threads(nthr) schedule(static, 1) if (nthr > 1)
    for (int part = 0; part < parts; part++) {
        int64_t q0 = q[part], q1 = q[part + 1];
        for (int64_t t = 0; t < a.sb.nsteps; t++) {
            int64_t n = oar_seqb_count(&a.sb, t);
            if (n <= q0) break;   /* counts only shrink */
            int64_t m = (n < q1 ? n : q1) - q0, s0 = a.sb.step_start[t] + q0;
            char *g = (char *)bg + es * (size_t)(s0 * 4 * D);
            const void *hp = t > 0 ? (char *)hb + es * (size_t)((a.sb.step_start[t - 1] + q0) * D)
                             : h0s ? (char *)h0s + es * (size_t)(q0 * D) : NULL;
            const void *cp = t > 0 ? (char *)bc + es * (size_t)((a.sb.step_start[t - 1] + q0) * D)
                             : c0s ? (char *)c0s + es * (size_t)(q0 * D) : NULL;
            if (hp) oar_gemm_whole(a.dt, false, false, m, 4 * D, D, 1.0, hp, D, a.w, 4 * D, 1.0, g, 4 * D);
            step_fwd(a.dt, m, D, g, cp, (char *)bc + es * (size_t)(s0 * D), (char *)hb + es * (size_t)(s0 * D),
                     &a.peep, &a.act);
        }
    }
    oar_seqb_scatter(&a.sb, hb, hid, D, es);
    oar_seqb_scatter(&a.sb, bc, cell, D, es);
done:
    oar_scratch_free(hb);
    oar_scratch_free(h0s);
    oar_scratch_free(c0s);
    oar_scratch_free(own_bg);
    oar_scratch_free(own_bc);
    oar_seqb_free(&a.sb);
    return rc;
}

static int lstm_bwd(oar_kernel_ctx_t *k)
{
    lstm_args_t a;
    int rc = lstm_setup(k, &a);
    if (rc != OAR_OK) { oar_seqb_free(&a.sb); return rc; }
    int64_t T = a.T, D = a.D;
    size_t es = a.es;
    const oar_tensor_t *ht, *ct, *bgt, *bct, *dht, *dct = NULL;
    const void *hid, *cell, *bg, *bc, *dhid, *dcell = NULL;
    void *dx = NULL, *dh0 = NULL, *dc0 = NULL, *dw = NULL, *dbias = NULL;
    void *dhb = NULL, *dcb = NULL, *dgb = NULL, *hprev = NULL, *h0s = NULL, *c0s = NULL, *dh0s = NULL, *dc0s = NULL,
         *tmp = NULL, *ppeep = NULL, *ptmp = NULL, *wt = NULL;
    if ((rc = oar_sk_input(k, OAR_LSTM_HIDDEN_IN, "Hidden", a.dt, &ht, &hid)) != OAR_OK ||
        (rc = oar_sk_input(k, OAR_LSTM_CELL_IN, "Cell", a.dt, &ct, &cell)) != OAR_OK ||
        (rc = oar_sk_input(k, OAR_LSTM_BATCHGATE_IN, "BatchGate", a.dt, &bgt, &bg)) != OAR_OK ||
        (rc = oar_sk_input(k, OAR_LSTM_BATCHCELL_IN, "BatchCellPreAct", a.dt, &bct, &bc)) != OAR_OK ||
        (rc = oar_sk_input(k, OAR_LSTM_DHIDDEN, "Hidden@GRAD", a.dt, &dht, &dhid)) != OAR_OK ||
        (rc = oar_sk_opt_input(k, OAR_LSTM_DCELL, "Cell@GRAD", a.dt, &dct, &dcell)) != OAR_OK)
        goto done;
    if (oar_tensor_numel_of(bgt) != T * 4 * D || oar_tensor_numel_of(bct) != T * D ||
        oar_tensor_numel_of(dht) != T * D || (dct && oar_tensor_numel_of(dct) != T * D)) {
        rc = oar_k_error(k, OAR_ERR_SHAPE, "BatchGate, BatchCellPreAct, Hidden@GRAD or Cell@GRAD does not match "
                         "Input [%lld, %lld]", (long long)T, (long long)(4 * D));
        goto done;
    }
    if ((rc = oar_k_output_sized(k, OAR_LSTM_DINPUT, "Input@GRAD", a.dt, T * 4 * D, true, &dx)) != OAR_OK ||
        (rc = oar_k_output_sized(k, OAR_LSTM_DWEIGHT, "Weight@GRAD", a.dt, 4 * D * D, true, &dw)) != OAR_OK)
        goto done;
    if (a.h0 && (rc = oar_k_output_sized(k, OAR_LSTM_DH0, "H0@GRAD", a.dt, a.sb.nseq * D, true, &dh0)) != OAR_OK) goto done;
    if (a.c0 && (rc = oar_k_output_sized(k, OAR_LSTM_DC0, "C0@GRAD", a.dt, a.sb.nseq * D, true, &dc0)) != OAR_OK) goto done;
    if (a.b && (rc = oar_k_output_sized(k, OAR_LSTM_DBIAS, "Bias@GRAD", a.dt, oar_tensor_numel_of(a.bt), true, &dbias)) != OAR_OK) goto done;
    if (!(dhb = oar_sk_scratch(k, T * D, es, false, &rc)) || !(dcb = oar_sk_scratch(k, T * D, es, !dcell, &rc))
        || !(dgb = oar_sk_scratch(k, T * 4 * D, es, false, &rc)) || !(tmp = oar_sk_scratch(k, 2 * D, es, false, &rc))
        || !(wt = oar_sk_scratch(k, 4 * D * D, es, false, &rc)))
        goto done;
    oar_sk_transpose(a.dt, a.w, D, 4 * D, 4 * D, wt, D);   /* W^T [4D, D] for the per-step products */
    if (a.h0 && !(h0s = oar_sk_sorted_state(k, &a.sb, a.h0, D, es, &rc))) goto done;
    if (a.c0 && !(c0s = oar_sk_sorted_state(k, &a.sb, a.c0, D, es, &rc))) goto done;
    if (dh0 && !(dh0s = oar_sk_scratch(k, a.sb.nseq * D, es, true, &rc))) goto done;
    if (dc0 && !(dc0s = oar_sk_scratch(k, a.sb.nseq * D, es, true, &rc))) goto done;
    oar_seqb_gather(&a.sb, dhid, dhb, D, es);
    if (dcell) oar_seqb_gather(&a.sb, dcell, dcb, D, es);
    void *dpeep = dbias && a.peep.ci ? (char *)dbias + es * (size_t)(4 * D) : NULL;
    if (dpeep) memset(dpeep, 0, es * (size_t)(3 * D));
    /* the previous hiddens in batch order, for the weight grad */
    if (dw) {
        if (!(hprev = oar_sk_scratch(k, T * D, es, false, &rc))) goto done;
        for (int64_t t = 0; t < a.sb.nsteps; t++) {
            int64_t s0 = a.sb.step_start[t], n = oar_seqb_count(&a.sb, t);
            char *dst = (char *)hprev + es * (size_t)(s0 * D);
            if (t == 0) {   /* zeros without H0 */
                if (h0s) memcpy(dst, h0s, es * (size_t)(n * D));
                else memset(dst, 0, es * (size_t)(n * D));
                continue;
            }
            int64_t p0 = a.sb.step_start[t - 1];
            for (int64_t s = 0; s < n; s++)
                memcpy(dst + es * (size_t)(s * D), (const char *)hid + es * (size_t)(a.sb.row_of[p0 + s] * D),
                       es * (size_t)D);
        }
    }
    /* the parts after the first sum their peephole grads apart (ppeep) */
    int64_t q[OAR_SEQB_MAX_PARTS + 1];
    int parts = oar_seqb_parts(&a.sb, a.sb.nseq * 4 * D * D, q);
    if (parts > 1 && dpeep && !(ppeep = oar_sk_scratch(k, (parts - 1) * 3 * D, es, true, &rc))) goto done;
    if (parts > 1 && !(ptmp = oar_sk_scratch(k, (parts - 1) * 2 * D, es, false, &rc))) goto done;
    const int nthr = oar_seqb_threads(parts);
    #pragma omp parallel for num_threads(nthr) schedule(static, 1) if (nthr > 1)
    for (int part = 0; part < parts; part++) {
        int64_t q0 = q[part], q1 = q[part + 1];
        void *mypeep = part == 0 || !dpeep ? dpeep : (char *)ppeep + es * (size_t)((part - 1) * 3 * D);
        void *mytmp = part == 0 ? tmp : (char *)ptmp + es * (size_t)((part - 1) * 2 * D);
        for (int64_t t = a.sb.nsteps - 1; t >= 0; t--) {
            int64_t n = oar_seqb_count(&a.sb, t);
            if (n <= q0) continue;
            int64_t m = (n < q1 ? n : q1) - q0, s0 = a.sb.step_start[t] + q0;
            int64_t p0 = (t > 0 ? a.sb.step_start[t - 1] : 0) + q0;
            const void *cp = t > 0 ? (const char *)bc + es * (size_t)(p0 * D)
                             : c0s ? (const char *)c0s + es * (size_t)(q0 * D) : NULL;
            void *dcp = t > 0 ? (char *)dcb + es * (size_t)(p0 * D)
                        : dc0s ? (char *)dc0s + es * (size_t)(q0 * D) : NULL;
            char *dg = (char *)dgb + es * (size_t)(s0 * 4 * D);
            step_bwd(a.dt, m, D, (const char *)bg + es * (size_t)(s0 * 4 * D),
                     (const char *)bc + es * (size_t)(s0 * D), cp, (char *)dhb + es * (size_t)(s0 * D),
                     (char *)dcb + es * (size_t)(s0 * D), dg, dcp, &a.peep, mypeep, &a.act, mytmp);
            /* the previous hidden's grad: dG W^T */
            if (t > 0)
                oar_gemm_whole(a.dt, false, false, m, D, 4 * D, 1.0, dg, 4 * D, wt, D, 1.0,
                            (char *)dhb + es * (size_t)(p0 * D), D);
            else if (dh0s)
                oar_gemm_whole(a.dt, false, false, m, D, 4 * D, 1.0, dg, 4 * D, wt, D, 0.0,
                            (char *)dh0s + es * (size_t)(q0 * D), D);
        }
    }
    for (int part = 1; ppeep && part < parts; part++) {
        const char *src = (const char *)ppeep + es * (size_t)((part - 1) * 3 * D);
        if (a.dt == OAR_FP32)
            for (int64_t j = 0; j < 3 * D; j++) ((float *)dpeep)[j] += ((const float *)src)[j];
        else
            for (int64_t j = 0; j < 3 * D; j++) ((double *)dpeep)[j] += ((const double *)src)[j];
    }
    /* one product over every step: threads split it */
    if (dw) oar_gemm(a.dt, oar_gemm_threads(4 * D * D * T), true, false, D, 4 * D, T, 1.0, hprev, D, dgb, 4 * D, 0.0,
                     dw, 4 * D);
    if (dx) oar_seqb_scatter(&a.sb, dgb, dx, 4 * D, es);
    if (dbias) oar_sk_col_sum(a.dt, dgb, T, 4 * D, dbias);
    if (dh0) oar_seqb_unsort_rows(&a.sb, dh0s, dh0, D, es);
    if (dc0) oar_seqb_unsort_rows(&a.sb, dc0s, dc0, D, es);
done:;
    void *scratch[] = {dhb, dcb, dgb, hprev, h0s, c0s, dh0s, dc0s, tmp, ppeep, ptmp, wt};
    for (size_t i = 0; i < sizeof scratch / sizeof scratch[0]; i++) oar_scratch_free(scratch[i]);
    oar_seqb_free(&a.sb);
    return rc;
}

OAR_REGISTER_KERNEL("lstm", OAR_PLACE_CPU, OAR_FP32, lstm_fwd)
OAR_REGISTER_KERNEL("lstm_grad", OAR_PLACE_CPU, OAR_FP32, lstm_bwd)
static int lstm_fwd64(oar_kernel_ctx_t *k) { return lstm_fwd(k); }
static int lstm_bwd64(oar_kernel_ctx_t *k) { return lstm_bwd(k); }
OAR_REGISTER_KERNEL("lstm", OAR_PLACE_CPU, OAR_FP64, lstm_fwd64)
OAR_REGISTER_KERNEL("lstm_grad", OAR_PLACE_CPU, OAR_FP64, lstm_bwd64)

/* ---- lstm_unit ---------------------------------------------------------------------- */

/* Row by row: the row's four gate blocks [i, f, o, g] are copied to
 * scratch and activated as runs (sigmoid over i, f, o; tanh over g), so the
 * activations run vectorized over D values instead of a call per value;
 * tmp holds 5D values. */
#define UNIT(SFX, T)                                                                  \
    static void unit_gates_##SFX(int64_t D, const T *xr, T fb, T *a)                  \
    {                                                                                 \
        memcpy(a, xr, sizeof(T) * (size_t)(4 * D));                                   \
        for (int64_t j = 0; j < D; j++) a[D + j] += fb;                               \
        oar_act_fwd_##SFX(OAR_ACT_SIGMOID, a, 3 * D);                                 \
        oar_act_fwd_##SFX(OAR_ACT_TANH, a + 3 * D, D);                                \
    }                                                                                 \
    static void unit_fwd_##SFX(int64_t N, int64_t D, const T *x, const T *cp, T *c, T *h, T fb, T *tmp) \
    {                                                                                 \
        T *a = tmp, *tc = tmp + 4 * D;                                                \
        for (int64_t r = 0; r < N; r++) {                                             \
            unit_gates_##SFX(D, x + r * 4 * D, fb, a);                                \
            const T *i = a, *f = a + D, *g = a + 3 * D;                               \
            T *cr = c + r * D;                                                        \
            for (int64_t j = 0; j < D; j++) tc[j] = cr[j] = f[j] * cp[r * D + j] + i[j] * g[j]; \
            oar_act_fwd_##SFX(OAR_ACT_TANH, tc, D);                                   \
            for (int64_t j = 0; j < D; j++) h[r * D + j] = a[2 * D + j] * tc[j];      \
        }                                                                             \
    }                                                                                 \
    static void unit_bwd_##SFX(int64_t N, int64_t D, const T *x, const T *cp, const T *c, \
                               const T *dc, const T *dh, T *dx, T *dcp, T fb, T *tmp) \
    {                                                                                 \
        T *a = tmp, *tc = tmp + 4 * D;                                                \
        for (int64_t r = 0; r < N; r++) {                                             \
            unit_gates_##SFX(D, x + r * 4 * D, fb, a);                                \
            const T *i = a, *f = a + D, *o = a + 2 * D, *g = a + 3 * D;               \
            memcpy(tc, c + r * D, sizeof(T) * (size_t)D);                             \
            oar_act_fwd_##SFX(OAR_ACT_TANH, tc, D);                                   \
            T *d = dx ? dx + r * 4 * D : NULL;                                        \
            for (int64_t j = 0; j < D; j++) {                                         \
                const int64_t q = r * D + j;                                          \
                const T dct = dc[q] + dh[q] * o[j] * ((T)1 - tc[j] * tc[j]);           \
                if (dcp) dcp[q] = dct * f[j];                                         \
                if (d) {                                                              \
                    d[j] = dct * g[j] * i[j] * ((T)1 - i[j]);                         \
                    d[D + j] = dct * cp[q] * f[j] * ((T)1 - f[j]);                    \
                    d[2 * D + j] = dh[q] * tc[j] * o[j] * ((T)1 - o[j]);              \
                    d[3 * D + j] = dct * i[j] * ((T)1 - g[j] * g[j]);                 \
                }                                                                     \
            }                                                                         \
        }                                                                             \
    }

UNIT(f32, float)
UNIT(f64, double)

static int unit_dims(oar_kernel_ctx_t *k, const oar_tensor_t *x, const oar_tensor_t *cp, int64_t *N, int64_t *D)
{
    if (x->ndim != 2 || cp->ndim != 2 || x->dims[0] != cp->dims[0] || x->dims[1] != 4 * cp->dims[1]) {
        char bx[128], bc[128];
        return oar_k_error(k, OAR_ERR_SHAPE, "X shape %s and C_prev shape %s: expected [N, 4D] and [N, D]",
                           oar_shape_str(x->dims, x->ndim, bx, sizeof bx), oar_shape_str(cp->dims, cp->ndim, bc, sizeof bc));
    }
    *N = cp->dims[0];
    *D = cp->dims[1];
    return OAR_OK;
}

static int unit_fwd(oar_kernel_ctx_t *k)
{
    int dt = oar_k_dtype(k);
    const oar_tensor_t *x, *cp;
    const void *xp, *cpp;
    OAR_TRY(oar_sk_input(k, OAR_LSTMU_X, "X", dt, &x, &xp));
    OAR_TRY(oar_sk_input(k, OAR_LSTMU_CPREV, "C_prev", dt, &cp, &cpp));
    int64_t N = 0, D = 0;
    OAR_TRY(unit_dims(k, x, cp, &N, &D));
    void *c, *h;
    OAR_TRY(oar_k_output_sized(k, OAR_LSTMU_C, "C", dt, N * D, false, &c));
    OAR_TRY(oar_k_output_sized(k, OAR_LSTMU_H, "H", dt, N * D, false, &h));
    const double fb = ((const oar_lstm_unit_attrs_t *)oar_k_attrs(k))->forget_bias;
    int rc = OAR_OK;
    void *tmp = oar_sk_scratch(k, 5 * D, oar_dtype_size(dt), false, &rc);
    if (!tmp) return rc;
    if (dt == OAR_FP32) unit_fwd_f32(N, D, xp, cpp, c, h, (float)fb, tmp);
    else unit_fwd_f64(N, D, xp, cpp, c, h, fb, tmp);
    oar_scratch_free(tmp);
    return OAR_OK;
}

static int unit_bwd(oar_kernel_ctx_t *k)
{
    int dt = oar_k_dtype(k);
    const oar_tensor_t *x, *cp, *c, *dc, *dh;
    const void *xp, *cpp, *cv, *dcv, *dhv;
    OAR_TRY(oar_sk_input(k, OAR_LSTMU_X, "X", dt, &x, &xp));
    OAR_TRY(oar_sk_input(k, OAR_LSTMU_CPREV, "C_prev", dt, &cp, &cpp));
    OAR_TRY(oar_sk_input(k, OAR_LSTMU_C_IN, "C", dt, &c, &cv));
    OAR_TRY(oar_sk_input(k, OAR_LSTMU_DC, "C@GRAD", dt, &dc, &dcv));
    OAR_TRY(oar_sk_input(k, OAR_LSTMU_DH, "H@GRAD", dt, &dh, &dhv));
    int64_t N = 0, D = 0;
    OAR_TRY(unit_dims(k, x, cp, &N, &D));
    if (oar_tensor_numel_of(c) != N * D || oar_tensor_numel_of(dc) != N * D || oar_tensor_numel_of(dh) != N * D)
        return oar_k_error(k, OAR_ERR_SHAPE, "C, C@GRAD and H@GRAD must be [%lld, %lld]", (long long)N, (long long)D);
    void *dx, *dcp;
    OAR_TRY(oar_k_output_sized(k, OAR_LSTMU_DX, "X@GRAD", dt, N * 4 * D, true, &dx));
    OAR_TRY(oar_k_output_sized(k, OAR_LSTMU_DCPREV, "C_prev@GRAD", dt, N * D, true, &dcp));
    const double fb = ((const oar_lstm_unit_attrs_t *)oar_k_attrs(k))->forget_bias;
    int rc = OAR_OK;
    void *tmp = oar_sk_scratch(k, 5 * D, oar_dtype_size(dt), false, &rc);
    if (!tmp) return rc;
    if (dt == OAR_FP32) unit_bwd_f32(N, D, xp, cpp, cv, dcv, dhv, dx, dcp, (float)fb, tmp);
    else unit_bwd_f64(N, D, xp, cpp, cv, dcv, dhv, dx, dcp, fb, tmp);
    oar_scratch_free(tmp);
    return OAR_OK;
}

OAR_REGISTER_KERNEL("lstm_unit", OAR_PLACE_CPU, OAR_FP32, unit_fwd)
OAR_REGISTER_KERNEL("lstm_unit_grad", OAR_PLACE_CPU, OAR_FP32, unit_bwd)
static int unit_fwd64(oar_kernel_ctx_t *k) { return unit_fwd(k); }
static int unit_bwd64(oar_kernel_ctx_t *k) { return unit_bwd(k); }
OAR_REGISTER_KERNEL("lstm_unit", OAR_PLACE_CPU, OAR_FP64, unit_fwd64)
OAR_REGISTER_KERNEL("lstm_unit_grad", OAR_PLACE_CPU, OAR_FP64, unit_bwd64)
