/*
 * lstm.cu — CUDA kernels of lstm, lstm_unit and their grads (float32,
 * float64), with the CPU kernels' semantics (kernels/cpu/lstm.c; formulas
 * in src/ops/lstm.c).
 *
 * lstm runs on the sequence-to-batch layout (ops/seq_layout.h, built on the
 * host, its index arrays copied to the device once per call): Input's rows
 * are gathered in batch order with the bias added, then every step is one
 * cuBLAS GEMM, h_{t-1} [n_t, D] x Weight [D, 4D] added into the step's
 * gates, and one fused kernel (one thread per (row, unit)) for activations,
 * peepholes, cell and hidden. BatchGate keeps the activated gates and
 * BatchCellPreAct the cells in that order. The grad walks the steps
 * backwards: a fused kernel for the step's gate grads (adding into the
 * previous step's cell grads), one GEMM dGate W^T into the previous step's
 * hidden grads; Weight@GRAD is one GEMM over all steps (previous hiddens^T
 * dGate), Bias@GRAD and the peephole grads column sums (products with a row
 * of ones, so no atomics and the same result on every run).
 */
#include "rnn_common.h"
#include "ops/lstm.h"

using namespace oarcu;
using namespace oarcu::rnn;

namespace {

struct Acts { int gate, cell, cand; };

/* g [n, 4D] pre-activations in, activated gates {a, i, f, o} out; cp [n, D]
 * the previous cells or NULL (zeros); peep {W_ic, W_fc, W_oc} [3D] or NULL */
template <class T>
__global__ void step_fwd_k(int64_t n, int64_t D, T *g, const T *cp, T *c, T *h, const T *peep, Acts act)
{
    OAR_CU_LOOP(q, n * D) {
        const int64_t r = q / D, j = q - r * D;
        T *gr = g + r * 4 * D;
        const T a = act_fwd(act.cand, gr[j]);
        T iv = gr[D + j], fv = gr[2 * D + j];
        const T cpv = cp ? cp[q] : T(0);
        if (cp && peep) {
            iv += cpv * peep[j];
            fv += cpv * peep[D + j];
        }
        iv = act_fwd(act.gate, iv);
        fv = act_fwd(act.gate, fv);
        const T cv = cp ? a * iv + cpv * fv : a * iv;
        T ov = gr[3 * D + j];
        if (peep) ov += cv * peep[2 * D + j];
        ov = act_fwd(act.gate, ov);
        gr[j] = a;
        gr[D + j] = iv;
        gr[2 * D + j] = fv;
        gr[3 * D + j] = ov;
        c[q] = cv;
        h[q] = act_fwd(act.cell, cv) * ov;
    }
}

/* From the activated gates g, cells c, previous cells cp (or NULL), hidden
 * grads dh and cell grads dc of n rows: dg [n, 4D] the pre-activation grads,
 * dcp += the previous cells' grads (when not NULL), pg [n, 3D] the rows'
 * peephole grad terms (when not NULL; summed over all rows afterwards) */
template <class T>
__global__ void step_bwd_k(int64_t n, int64_t D, const T *g, const T *c, const T *cp, const T *dh, const T *dc, T *dg,
                           T *dcp, const T *peep, T *pg, Acts act)
{
    OAR_CU_LOOP(q, n * D) {
        const int64_t r = q / D, j = q - r * D;
        const T *gr = g + r * 4 * D;
        const T a = gr[j], iv = gr[D + j], fv = gr[2 * D + j], ov = gr[3 * D + j];
        const T cv = c[q], dhv = dh[q];
        const T tc = act_fwd(act.cell, cv);
        const T dout = act_bwd(act.gate, ov, dhv * tc);
        T s = act_bwd(act.cell, tc, dhv * ov) + dc[q];   /* the cell's total grad */
        if (peep) s += dout * peep[2 * D + j];
        const T cpv = cp ? cp[q] : T(0);
        const T da = act_bwd(act.cand, a, s * iv);
        const T di = act_bwd(act.gate, iv, s * a);
        const T df = cp ? act_bwd(act.gate, fv, s * cpv) : T(0);
        T *dgr = dg + r * 4 * D;
        dgr[j] = da;
        dgr[D + j] = di;
        dgr[2 * D + j] = df;
        dgr[3 * D + j] = dout;
        if (dcp) dcp[q] += s * fv + (peep ? di * peep[j] + df * peep[D + j] : T(0));
        if (pg) {
            T *p = pg + r * 3 * D;
            p[j] = cp ? di * cpv : T(0);
            p[D + j] = cp ? df * cpv : T(0);
            p[2 * D + j] = dout * cv;
        }
    }
}

/* everything both kernels read */
struct Args {
    int dt = 0;
    int64_t T = 0, D = 0;
    const oar_tensor_t *in = nullptr, *h0t = nullptr, *c0t = nullptr, *bt = nullptr;
    const void *x = nullptr, *h0 = nullptr, *c0 = nullptr, *w = nullptr, *b = nullptr, *peep = nullptr;
    Acts act{};
    Layout lay;
};

int setup(oar_kernel_ctx_t *k, Args *a, Layout::Prev prev)
{
    a->dt = oar_k_dtype(k);
    const oar_tensor_t *wt;
    OAR_TRY(input(k, OAR_LSTM_INPUT, "Input", a->dt, false, &a->in, &a->x));
    OAR_TRY(input(k, OAR_LSTM_WEIGHT, "Weight", a->dt, false, &wt, &a->w));
    OAR_TRY(input(k, OAR_LSTM_H0, "H0", a->dt, true, &a->h0t, &a->h0));
    OAR_TRY(input(k, OAR_LSTM_C0, "C0", a->dt, true, &a->c0t, &a->c0));
    OAR_TRY(input(k, OAR_LSTM_BIAS, "Bias", a->dt, true, &a->bt, &a->b));
    const oar_lstm_attrs_t *atr = (const oar_lstm_attrs_t *)oar_k_attrs(k);
    a->act = Acts{atr->gate, atr->cell, atr->cand};
    if (wt->ndim != 2 || wt->dims[1] != 4 * wt->dims[0] || a->in->ndim != 2 || a->in->dims[1] != wt->dims[1])
        return oar_k_error(k, OAR_ERR_SHAPE, "Input [T, 4D] and Weight [D, 4D] do not agree");
    a->T = a->in->dims[0];
    a->D = wt->dims[0];
    const bool peep = atr->peepholes && a->bt;
    if (a->bt && oar_tensor_numel_of(a->bt) != (peep ? 7 : 4) * a->D)
        return oar_k_error(k, OAR_ERR_SHAPE, "Bias has %lld values; expected %lld",
                           (long long)oar_tensor_numel_of(a->bt), (long long)((peep ? 7 : 4) * a->D));
    if (peep) a->peep = at(a->b, a->dt, 4 * a->D);
    OAR_TRY(a->lay.make(k, OAR_LSTM_INPUT, a->in, atr->reverse, prev));
    OAR_TRY(check_state(k, "H0", a->h0t, a->lay.sb.nseq, a->D));
    OAR_TRY(check_state(k, "C0", a->c0t, a->lay.sb.nseq, a->D));
    const int64_t dims[3] = {a->T, 4 * a->D, a->lay.sb.nseq};
    return check_int_dims(k, 3, dims);
}

int lstm_fwd(oar_kernel_ctx_t *k)
{
    Args a;
    OAR_TRY(setup(k, &a, Layout::kNoPrev));
    const int dt = a.dt;
    const int64_t T = a.T, D = a.D;
    const oar_seqb_t &sb = a.lay.sb;
    void *hid, *cell, *bg, *bc;
    Scratch own_bg, own_bc, hb, h0s, c0s;
    OAR_TRY(output(k, OAR_LSTM_HIDDEN, "Hidden", dt, T * D, false, &hid));
    OAR_TRY(output(k, OAR_LSTM_CELL, "Cell", dt, T * D, false, &cell));
    OAR_TRY(out_or_scratch(k, OAR_LSTM_BATCHGATE, "BatchGate", dt, T * 4 * D, own_bg, &bg));
    OAR_TRY(out_or_scratch(k, OAR_LSTM_BATCHCELL, "BatchCellPreAct", dt, T * D, own_bc, &bc));
    if (T == 0 || D == 0) return OAR_OK;
    OAR_TRY(scratch(k, hb, dt, T * D, false, "the hidden states in batch order"));
    OAR_TRY(a.lay.sorted_state(k, dt, a.h0, D, h0s, "H0 in sorted order"));
    OAR_TRY(a.lay.sorted_state(k, dt, a.c0, D, c0s, "C0 in sorted order"));
    OAR_TRY(gather(k, dt, a.x, a.lay.row_of, bg, T, 4 * D, a.b));
    for (int64_t t = 0; t < sb.nsteps; t++) {
        const int64_t n = oar_seqb_count(&sb, t), s0 = sb.step_start[t];
        const int64_t p0 = t > 0 ? sb.step_start[t - 1] : 0;
        void *g = at(bg, dt, s0 * 4 * D);
        const void *hp = t > 0 ? at(hb.p, dt, p0 * D) : h0s.p;
        const void *cp = t > 0 ? at(bc, dt, p0 * D) : c0s.p;
        if (hp) OAR_TRY(rm_gemm(k, dt, false, false, n, 4 * D, D, 1.0, hp, D, a.w, 4 * D, 1.0, g, 4 * D));
        OAR_CU_FLOAT_SWITCH(dt, R,
            step_fwd_k<R><<<grid_for(n * D), kThreads>>>(n, D, (R *)g, (const R *)cp, (R *)at(bc, dt, s0 * D),
                                                         (R *)at(hb.p, dt, s0 * D), (const R *)a.peep, a.act));
        OAR_CU_LAUNCH(k, "lstm step");
    }
    OAR_TRY(scatter(k, dt, hb.p, a.lay.row_of, hid, T, D));
    return scatter(k, dt, bc, a.lay.row_of, cell, T, D);
}

int lstm_bwd(oar_kernel_ctx_t *k)
{
    Args a;
    OAR_TRY(setup(k, &a, Layout::kPrevLodRows));
    const int dt = a.dt;
    const int64_t T = a.T, D = a.D, N = a.lay.sb.nseq;
    const oar_seqb_t &sb = a.lay.sb;
    const oar_tensor_t *ht, *ct, *bgt, *bct, *dht, *dct;
    const void *hid, *cell, *bg, *bc, *dhid, *dcell;
    OAR_TRY(input(k, OAR_LSTM_HIDDEN_IN, "Hidden", dt, false, &ht, &hid));
    OAR_TRY(input(k, OAR_LSTM_CELL_IN, "Cell", dt, false, &ct, &cell));
    OAR_TRY(input(k, OAR_LSTM_BATCHGATE_IN, "BatchGate", dt, false, &bgt, &bg));
    OAR_TRY(input(k, OAR_LSTM_BATCHCELL_IN, "BatchCellPreAct", dt, false, &bct, &bc));
    OAR_TRY(input(k, OAR_LSTM_DHIDDEN, "Hidden@GRAD", dt, false, &dht, &dhid));
    OAR_TRY(input(k, OAR_LSTM_DCELL, "Cell@GRAD", dt, true, &dct, &dcell));
    if (oar_tensor_numel_of(bgt) != T * 4 * D || oar_tensor_numel_of(bct) != T * D ||
        oar_tensor_numel_of(dht) != T * D || oar_tensor_numel_of(ht) != T * D || (dct && oar_tensor_numel_of(dct) != T * D))
        return oar_k_error(k, OAR_ERR_SHAPE, "Hidden, BatchGate, BatchCellPreAct, Hidden@GRAD or Cell@GRAD does not "
                           "match Input [%lld, %lld]", (long long)T, (long long)(4 * D));
    void *dx, *dh0 = nullptr, *dc0 = nullptr, *dw, *dbias = nullptr;
    OAR_TRY(output(k, OAR_LSTM_DINPUT, "Input@GRAD", dt, T * 4 * D, true, &dx));
    OAR_TRY(output(k, OAR_LSTM_DWEIGHT, "Weight@GRAD", dt, 4 * D * D, true, &dw));
    if (a.h0t) OAR_TRY(output(k, OAR_LSTM_DH0, "H0@GRAD", dt, N * D, true, &dh0));
    if (a.c0t) OAR_TRY(output(k, OAR_LSTM_DC0, "C0@GRAD", dt, N * D, true, &dc0));
    if (a.bt) OAR_TRY(output(k, OAR_LSTM_DBIAS, "Bias@GRAD", dt, oar_tensor_numel_of(a.bt), true, &dbias));
    if (T == 0 || D == 0) {   /* no step: every grad is zero */
        OAR_TRY(zero(k, dw, dt, 4 * D * D));
        OAR_TRY(zero(k, dh0, dt, N * D));
        OAR_TRY(zero(k, dc0, dt, N * D));
        return zero(k, dbias, dt, a.bt ? oar_tensor_numel_of(a.bt) : 0);
    }
    Scratch dhb, dcb, dgb, c0s, dh0s, dc0s, pg, hprev;
    OAR_TRY(scratch(k, dhb, dt, T * D, false, "the hidden grads in batch order"));
    OAR_TRY(scratch(k, dcb, dt, T * D, !dcell, "the cell grads in batch order"));
    OAR_TRY(scratch(k, dgb, dt, T * 4 * D, false, "the gate grads in batch order"));
    OAR_TRY(a.lay.sorted_state(k, dt, a.c0, D, c0s, "C0 in sorted order"));
    if (dh0) OAR_TRY(scratch(k, dh0s, dt, N * D, true, "H0@GRAD in sorted order"));
    if (dc0) OAR_TRY(scratch(k, dc0s, dt, N * D, true, "C0@GRAD in sorted order"));
    void *dpeep = dbias && a.peep ? at(dbias, dt, 4 * D) : nullptr;
    if (dpeep) OAR_TRY(scratch(k, pg, dt, T * 3 * D, false, "the peephole grad terms"));
    OAR_TRY(gather(k, dt, dhid, a.lay.row_of, dhb.p, T, D));
    if (dcell) OAR_TRY(gather(k, dt, dcell, a.lay.row_of, dcb.p, T, D));
    for (int64_t t = sb.nsteps - 1; t >= 0; t--) {
        const int64_t n = oar_seqb_count(&sb, t), s0 = sb.step_start[t];
        const int64_t p0 = t > 0 ? sb.step_start[t - 1] : 0;
        const void *cp = t > 0 ? at(bc, dt, p0 * D) : c0s.p;
        void *dcp = t > 0 ? at(dcb.p, dt, p0 * D) : dc0s.p;
        void *dg = at(dgb.p, dt, s0 * 4 * D);
        OAR_CU_FLOAT_SWITCH(dt, R,
            step_bwd_k<R><<<grid_for(n * D), kThreads>>>(n, D, (const R *)at(bg, dt, s0 * 4 * D),
                                                         (const R *)at(bc, dt, s0 * D), (const R *)cp,
                                                         (const R *)at(dhb.p, dt, s0 * D),
                                                         (const R *)at(dcb.p, dt, s0 * D), (R *)dg, (R *)dcp,
                                                         (const R *)a.peep, (R *)at(pg.p, dt, s0 * 3 * D), a.act));
        OAR_CU_LAUNCH(k, "lstm grad step");
        /* the previous hidden's grad: dG W^T */
        if (t > 0) OAR_TRY(rm_gemm(k, dt, false, true, n, D, 4 * D, 1.0, dg, 4 * D, a.w, 4 * D, 1.0, at(dhb.p, dt, p0 * D), D));
        else if (dh0s.p) OAR_TRY(rm_gemm(k, dt, false, true, n, D, 4 * D, 1.0, dg, 4 * D, a.w, 4 * D, 0.0, dh0s.p, D));
    }
    if (dw) {   /* the previous hiddens in batch order (zeros at step 0 without H0), one GEMM over all steps */
        OAR_TRY(scratch(k, hprev, dt, T * D, false, "the previous hiddens"));
        OAR_TRY(gather_prev(k, dt, hid, a.h0, a.lay.prev, hprev.p, T, D));
        OAR_TRY(rm_gemm(k, dt, true, false, D, 4 * D, T, 1.0, hprev.p, D, dgb.p, 4 * D, 0.0, dw, 4 * D));
    }
    if (dx) OAR_TRY(scatter(k, dt, dgb.p, a.lay.row_of, dx, T, 4 * D));
    if (dbias) OAR_TRY(col_sum(k, dt, dgb.p, T, 4 * D, 4 * D, dbias));
    if (dpeep) OAR_TRY(col_sum(k, dt, pg.p, T, 3 * D, 3 * D, dpeep));
    if (dh0) OAR_TRY(scatter(k, dt, dh0s.p, a.lay.order, dh0, N, D));
    if (dc0) OAR_TRY(scatter(k, dt, dc0s.p, a.lay.order, dc0, N, D));
    return OAR_OK;
}

OAR_RNN_REGISTER("lstm", lstm_fwd, lstm_bwd)

/* ---- lstm_unit ------------------------------------------------------------------------
 * X [N, 4D] with gate blocks {i, f, o, g}, C_prev [N, D]:
 * c = sigmoid(x_f + forget_bias) c_prev + sigmoid(x_i) tanh(x_g), h = sigmoid(x_o) tanh(c) */
template <class T>
__global__ void unit_fwd_k(int64_t n, int64_t D, const T *x, const T *cp, T *c, T *h, T fb)
{
    OAR_CU_LOOP(q, n * D) {
        const int64_t r = q / D, j = q - r * D;
        const T *xr = x + r * 4 * D;
        const T i = sigmoid(xr[j]), f = sigmoid(xr[D + j] + fb), o = sigmoid(xr[2 * D + j]), g = tanh(xr[3 * D + j]);
        const T cv = f * cp[q] + i * g;
        c[q] = cv;
        h[q] = o * tanh(cv);
    }
}

template <class T>
__global__ void unit_bwd_k(int64_t n, int64_t D, const T *x, const T *cp, const T *c, const T *dc, const T *dh, T *dx,
                           T *dcp, T fb)
{
    OAR_CU_LOOP(q, n * D) {
        const int64_t r = q / D, j = q - r * D;
        const T *xr = x + r * 4 * D;
        const T i = sigmoid(xr[j]), f = sigmoid(xr[D + j] + fb), o = sigmoid(xr[2 * D + j]), g = tanh(xr[3 * D + j]);
        const T tc = tanh(c[q]);
        const T dct = dc[q] + dh[q] * o * (T(1) - tc * tc);
        if (dcp) dcp[q] = dct * f;
        if (dx) {
            T *d = dx + r * 4 * D;
            d[j] = dct * g * i * (T(1) - i);
            d[D + j] = dct * cp[q] * f * (T(1) - f);
            d[2 * D + j] = dh[q] * tc * o * (T(1) - o);
            d[3 * D + j] = dct * i * (T(1) - g * g);
        }
    }
}

int unit_dims(oar_kernel_ctx_t *k, const oar_tensor_t *x, const oar_tensor_t *cp, int64_t *N, int64_t *D)
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

int unit_fwd(oar_kernel_ctx_t *k)
{
    const int dt = oar_k_dtype(k);
    const oar_tensor_t *x, *cp;
    const void *xp, *cpp;
    OAR_TRY(input(k, OAR_LSTMU_X, "X", dt, false, &x, &xp));
    OAR_TRY(input(k, OAR_LSTMU_CPREV, "C_prev", dt, false, &cp, &cpp));
    int64_t N = 0, D = 0;
    OAR_TRY(unit_dims(k, x, cp, &N, &D));
    void *c, *h;
    OAR_TRY(output(k, OAR_LSTMU_C, "C", dt, N * D, false, &c));
    OAR_TRY(output(k, OAR_LSTMU_H, "H", dt, N * D, false, &h));
    if (N * D == 0) return OAR_OK;
    const double fb = ((const oar_lstm_unit_attrs_t *)oar_k_attrs(k))->forget_bias;
    OAR_CU_FLOAT_SWITCH(dt, R,
        unit_fwd_k<R><<<grid_for(N * D), kThreads>>>(N, D, (const R *)xp, (const R *)cpp, (R *)c, (R *)h, (R)fb));
    OAR_CU_LAUNCH(k, "lstm_unit");
    return OAR_OK;
}

int unit_bwd(oar_kernel_ctx_t *k)
{
    const int dt = oar_k_dtype(k);
    const oar_tensor_t *x, *cp, *c, *dc, *dh;
    const void *xp, *cpp, *cv, *dcv, *dhv;
    OAR_TRY(input(k, OAR_LSTMU_X, "X", dt, false, &x, &xp));
    OAR_TRY(input(k, OAR_LSTMU_CPREV, "C_prev", dt, false, &cp, &cpp));
    OAR_TRY(input(k, OAR_LSTMU_C_IN, "C", dt, false, &c, &cv));
    OAR_TRY(input(k, OAR_LSTMU_DC, "C@GRAD", dt, false, &dc, &dcv));
    OAR_TRY(input(k, OAR_LSTMU_DH, "H@GRAD", dt, false, &dh, &dhv));
    int64_t N = 0, D = 0;
    OAR_TRY(unit_dims(k, x, cp, &N, &D));
    if (oar_tensor_numel_of(c) != N * D || oar_tensor_numel_of(dc) != N * D || oar_tensor_numel_of(dh) != N * D)
        return oar_k_error(k, OAR_ERR_SHAPE, "C, C@GRAD and H@GRAD must be [%lld, %lld]", (long long)N, (long long)D);
    void *dx, *dcp;
    OAR_TRY(output(k, OAR_LSTMU_DX, "X@GRAD", dt, N * 4 * D, true, &dx));
    OAR_TRY(output(k, OAR_LSTMU_DCPREV, "C_prev@GRAD", dt, N * D, true, &dcp));
    if (N * D == 0 || (!dx && !dcp)) return OAR_OK;
    const double fb = ((const oar_lstm_unit_attrs_t *)oar_k_attrs(k))->forget_bias;
    OAR_CU_FLOAT_SWITCH(dt, R,
        unit_bwd_k<R><<<grid_for(N * D), kThreads>>>(N, D, (const R *)xp, (const R *)cpp, (const R *)cv,
                                                     (const R *)dcv, (const R *)dhv, (R *)dx, (R *)dcp, (R)fb));
    OAR_CU_LAUNCH(k, "lstm_unit grad");
    return OAR_OK;
}

OAR_RNN_REGISTER("lstm_unit", unit_fwd, unit_bwd)

}  // namespace
