/*
 * gru.cu — CUDA kernels of gru, gru_unit and their grads (float32,
 * float64), with the CPU kernels' semantics (kernels/cpu/gru.c; formulas in
 * src/ops/gru.c).
 *
 * One GRU step over n rows is two cuBLAS GEMMs with a fused kernel after
 * each: gates_ur += h_p W_ur, then (activate u and r, r . h_p), candidate +=
 * (r . h_p) W_c, then (activate c, mix the new hidden). gru runs the steps
 * on the sequence-to-batch layout (ops/seq_layout.h, built on the host, its
 * index arrays copied once per call); gru_unit is one step over all its
 * rows. The grads run the steps backwards and find Weight@GRAD with one
 * GEMM per weight block over all steps (previous hiddens^T dGate_ur and
 * (r . h_p)^T dGate_c), Bias@GRAD as a column sum.
 */
#include "rnn_common.h"
#include "ops/gru.h"

using namespace oarcu;
using namespace oarcu::rnn;

namespace {

struct Cfg { int act, gate; bool origin; };

/* activates u and r of g [n, 3D]; rhp = r . hp (zeros without hp) */
template <class T>
__global__ void fwd_gates_k(int64_t n, int64_t D, T *g, const T *hp, T *rhp, int gate)
{
    OAR_CU_LOOP(q, n * D) {
        const int64_t r = q / D, j = q - r * D;
        T *gr = g + r * 3 * D;
        const T u = act_fwd(gate, gr[j]), rr = act_fwd(gate, gr[D + j]);
        gr[j] = u;
        gr[D + j] = rr;
        rhp[q] = hp ? rr * hp[q] : T(0);
    }
}

/* activates c and mixes the new hidden h */
template <class T>
__global__ void fwd_out_k(int64_t n, int64_t D, T *g, const T *hp, T *h, Cfg cf)
{
    OAR_CU_LOOP(q, n * D) {
        const int64_t r = q / D, j = q - r * D;
        T *gr = g + r * 3 * D;
        const T u = gr[j], c = act_fwd(cf.act, gr[2 * D + j]), p = hp ? hp[q] : T(0);
        gr[2 * D + j] = c;
        h[q] = cf.origin ? u * p + (T(1) - u) * c : u * c + (T(1) - u) * p;
    }
}

/* dG of u and c from dh; dhp += the direct part of dh (when dhp) */
template <class T>
__global__ void bwd_uc_k(int64_t n, int64_t D, const T *g, const T *hp, const T *dh, T *dg, T *dhp, Cfg cf)
{
    OAR_CU_LOOP(q, n * D) {
        const int64_t r = q / D, j = q - r * D;
        const T *gr = g + r * 3 * D;
        const T u = gr[j], c = gr[2 * D + j], p = hp ? hp[q] : T(0), d = dh[q];
        const T du = cf.origin ? d * (p - c) : d * (c - p);
        const T dc = cf.origin ? d * (T(1) - u) : d * u;
        if (dhp) dhp[q] += cf.origin ? d * u : d * (T(1) - u);
        T *dgr = dg + r * 3 * D;
        dgr[j] = act_bwd(cf.gate, u, du);
        dgr[2 * D + j] = act_bwd(cf.act, c, dc);
    }
}

/* dG of r from drhp = dG_c W_c^T (unread without hp); dhp += drhp . r (when
 * dhp and hp) */
template <class T>
__global__ void bwd_r_k(int64_t n, int64_t D, const T *g, const T *hp, const T *drhp, T *dg, T *dhp, int gate)
{
    OAR_CU_LOOP(q, n * D) {
        const int64_t r = q / D, j = q - r * D;
        const T rg = g[r * 3 * D + D + j];
        const T dr = hp ? drhp[q] * hp[q] : T(0);
        if (dhp && hp) dhp[q] += drhp[q] * rg;
        dg[r * 3 * D + D + j] = act_bwd(gate, rg, dr);
    }
}

/* one forward step: g [n, 3D] holds x (+ bias) and gets the activated gates;
 * hp [n, D] or NULL; writes rhp and h */
int step_fwd(oar_kernel_ctx_t *k, int dt, int64_t n, int64_t D, void *g, const void *hp, const void *w, void *rhp,
             void *h, const Cfg &cf)
{
    if (n * D == 0) return OAR_OK;
    if (hp) OAR_TRY(rm_gemm(k, dt, false, false, n, 2 * D, D, 1.0, hp, D, w, 2 * D, 1.0, g, 3 * D));
    OAR_CU_FLOAT_SWITCH(dt, R,
        fwd_gates_k<R><<<grid_for(n * D), kThreads>>>(n, D, (R *)g, (const R *)hp, (R *)rhp, cf.gate));
    OAR_CU_LAUNCH(k, "gru gates");
    if (hp) OAR_TRY(rm_gemm(k, dt, false, false, n, D, D, 1.0, rhp, D, at(w, dt, 2 * D * D), D, 1.0, at(g, dt, 2 * D), 3 * D));
    OAR_CU_FLOAT_SWITCH(dt, R, fwd_out_k<R><<<grid_for(n * D), kThreads>>>(n, D, (R *)g, (const R *)hp, (R *)h, cf));
    OAR_CU_LAUNCH(k, "gru output");
    return OAR_OK;
}

/* one backward step: dg [n, 3D] gets the pre-activation grads; dhp += the
 * previous hidden's grad (when not NULL); drhp scratch [n, D] */
int step_bwd(oar_kernel_ctx_t *k, int dt, int64_t n, int64_t D, const void *g, const void *hp, const void *w,
             const void *dh, void *dg, void *dhp, void *drhp, const Cfg &cf)
{
    if (n * D == 0) return OAR_OK;
    OAR_CU_FLOAT_SWITCH(dt, R,
        bwd_uc_k<R><<<grid_for(n * D), kThreads>>>(n, D, (const R *)g, (const R *)hp, (const R *)dh, (R *)dg,
                                                   (R *)dhp, cf));
    OAR_CU_LAUNCH(k, "gru grad u, c");
    if (hp) OAR_TRY(rm_gemm(k, dt, false, true, n, D, D, 1.0, at(dg, dt, 2 * D), 3 * D, at(w, dt, 2 * D * D), D, 0.0, drhp, D));
    OAR_CU_FLOAT_SWITCH(dt, R,
        bwd_r_k<R><<<grid_for(n * D), kThreads>>>(n, D, (const R *)g, (const R *)hp, (const R *)drhp, (R *)dg,
                                                  (R *)dhp, cf.gate));
    OAR_CU_LAUNCH(k, "gru grad r");
    if (hp && dhp) OAR_TRY(rm_gemm(k, dt, false, true, n, D, 2 * D, 1.0, dg, 3 * D, w, 2 * D, 1.0, dhp, D));
    return OAR_OK;
}

/* Weight@GRAD of rows: [D, 2D] block = hp^T dG_ur, [D, D] block = rhp^T dG_c */
int weight_grad(oar_kernel_ctx_t *k, int dt, int64_t rows, int64_t D, const void *hp, const void *rhp, const void *dg,
                void *dw)
{
    OAR_TRY(rm_gemm(k, dt, true, false, D, 2 * D, rows, 1.0, hp, D, dg, 3 * D, 0.0, dw, 2 * D));
    return rm_gemm(k, dt, true, false, D, D, rows, 1.0, rhp, D, at(dg, dt, 2 * D), 3 * D, 0.0, at(dw, dt, 2 * D * D), D);
}

/* Input-like [rows, 3D] and Weight [D, 3D] agree; Bias (optional) holds 3D */
int check_shapes(oar_kernel_ctx_t *k, const char *in_slot, const oar_tensor_t *in, const oar_tensor_t *wt,
                 const oar_tensor_t *bt, int64_t *D)
{
    if (wt->ndim != 2 || wt->dims[1] != 3 * wt->dims[0] || in->ndim != 2 || in->dims[1] != wt->dims[1]) {
        char bi[128], bw[128];
        return oar_k_error(k, OAR_ERR_SHAPE, "%s shape %s and Weight shape %s: expected [N, 3D] and [D, 3D]", in_slot,
                           oar_shape_str(in->dims, in->ndim, bi, sizeof bi), oar_shape_str(wt->dims, wt->ndim, bw, sizeof bw));
    }
    *D = wt->dims[0];
    if (bt && oar_tensor_numel_of(bt) != 3 * *D)
        return oar_k_error(k, OAR_ERR_SHAPE, "Bias has %lld values; expected %lld", (long long)oar_tensor_numel_of(bt),
                           (long long)(3 * *D));
    const int64_t dims[2] = {in->dims[0], 3 * *D};
    return check_int_dims(k, 2, dims);
}

/* ---- gru ------------------------------------------------------------------------------- */
struct Args {
    int dt = 0;
    int64_t T = 0, D = 0;
    const oar_tensor_t *in = nullptr, *h0t = nullptr, *bt = nullptr;
    const void *x = nullptr, *h0 = nullptr, *w = nullptr, *b = nullptr;
    Cfg cf{};
    Layout lay;
};

int setup(oar_kernel_ctx_t *k, Args *a, Layout::Prev prev)
{
    a->dt = oar_k_dtype(k);
    const oar_tensor_t *wt;
    OAR_TRY(input(k, OAR_GRU_INPUT, "Input", a->dt, false, &a->in, &a->x));
    OAR_TRY(input(k, OAR_GRU_WEIGHT, "Weight", a->dt, false, &wt, &a->w));
    OAR_TRY(input(k, OAR_GRU_H0, "H0", a->dt, true, &a->h0t, &a->h0));
    OAR_TRY(input(k, OAR_GRU_BIAS, "Bias", a->dt, true, &a->bt, &a->b));
    OAR_TRY(check_shapes(k, "Input", a->in, wt, a->bt, &a->D));
    a->T = a->in->dims[0];
    const oar_gru_attrs_t *atr = (const oar_gru_attrs_t *)oar_k_attrs(k);
    a->cf = Cfg{atr->act, atr->gate, atr->origin};
    OAR_TRY(a->lay.make(k, OAR_GRU_INPUT, a->in, atr->reverse, prev));
    return check_state(k, "H0", a->h0t, a->lay.sb.nseq, a->D);
}

int gru_fwd(oar_kernel_ctx_t *k)
{
    Args a;
    OAR_TRY(setup(k, &a, Layout::kNoPrev));
    const int dt = a.dt;
    const int64_t T = a.T, D = a.D;
    const oar_seqb_t &sb = a.lay.sb;
    void *bg, *brhp, *bh, *hid;
    Scratch own_bg, own_brhp, own_bh, h0s;
    OAR_TRY(out_or_scratch(k, OAR_GRU_BATCHGATE, "BatchGate", dt, T * 3 * D, own_bg, &bg));
    OAR_TRY(out_or_scratch(k, OAR_GRU_BATCHRHP, "BatchResetHiddenPrev", dt, T * D, own_brhp, &brhp));
    OAR_TRY(out_or_scratch(k, OAR_GRU_BATCHHIDDEN, "BatchHidden", dt, T * D, own_bh, &bh));
    OAR_TRY(output(k, OAR_GRU_HIDDEN, "Hidden", dt, T * D, false, &hid));
    if (T == 0 || D == 0) return OAR_OK;
    OAR_TRY(a.lay.sorted_state(k, dt, a.h0, D, h0s, "H0 in sorted order"));
    OAR_TRY(gather(k, dt, a.x, a.lay.row_of, bg, T, 3 * D, a.b));
    for (int64_t t = 0; t < sb.nsteps; t++) {
        const int64_t n = oar_seqb_count(&sb, t), s0 = sb.step_start[t];
        const void *hp = t > 0 ? at(bh, dt, sb.step_start[t - 1] * D) : h0s.p;
        OAR_TRY(step_fwd(k, dt, n, D, at(bg, dt, s0 * 3 * D), hp, a.w, at(brhp, dt, s0 * D), at(bh, dt, s0 * D), a.cf));
    }
    return scatter(k, dt, bh, a.lay.row_of, hid, T, D);
}

int gru_bwd(oar_kernel_ctx_t *k)
{
    Args a;
    OAR_TRY(setup(k, &a, Layout::kPrevBatchRows));
    const int dt = a.dt;
    const int64_t T = a.T, D = a.D, N = a.lay.sb.nseq;
    const oar_seqb_t &sb = a.lay.sb;
    const oar_tensor_t *bgt, *brt, *bht, *dht;
    const void *bg, *brhp, *bh, *dhid;
    OAR_TRY(input(k, OAR_GRU_BATCHGATE_IN, "BatchGate", dt, false, &bgt, &bg));
    OAR_TRY(input(k, OAR_GRU_BATCHRHP_IN, "BatchResetHiddenPrev", dt, false, &brt, &brhp));
    OAR_TRY(input(k, OAR_GRU_BATCHHIDDEN_IN, "BatchHidden", dt, false, &bht, &bh));
    OAR_TRY(input(k, OAR_GRU_DHIDDEN, "Hidden@GRAD", dt, false, &dht, &dhid));
    if (oar_tensor_numel_of(bgt) != T * 3 * D || oar_tensor_numel_of(brt) != T * D ||
        oar_tensor_numel_of(bht) != T * D || oar_tensor_numel_of(dht) != T * D)
        return oar_k_error(k, OAR_ERR_SHAPE, "BatchGate, BatchResetHiddenPrev, BatchHidden or Hidden@GRAD does not "
                           "match Input [%lld, %lld]", (long long)T, (long long)(3 * D));
    void *dx, *dh0 = nullptr, *dw, *dbias = nullptr;
    OAR_TRY(output(k, OAR_GRU_DINPUT, "Input@GRAD", dt, T * 3 * D, true, &dx));
    OAR_TRY(output(k, OAR_GRU_DWEIGHT, "Weight@GRAD", dt, 3 * D * D, true, &dw));
    if (a.h0t) OAR_TRY(output(k, OAR_GRU_DH0, "H0@GRAD", dt, N * D, true, &dh0));
    if (a.bt) OAR_TRY(output(k, OAR_GRU_DBIAS, "Bias@GRAD", dt, 3 * D, true, &dbias));
    if (T == 0 || D == 0) {   /* no step: every grad is zero */
        OAR_TRY(zero(k, dw, dt, 3 * D * D));
        OAR_TRY(zero(k, dh0, dt, N * D));
        return zero(k, dbias, dt, 3 * D);
    }
    Scratch dhb, dgb, drhp, h0s, dh0s, hprev;
    OAR_TRY(scratch(k, dhb, dt, T * D, false, "the hidden grads in batch order"));
    OAR_TRY(scratch(k, dgb, dt, T * 3 * D, false, "the gate grads in batch order"));
    OAR_TRY(scratch(k, drhp, dt, sb.nsteps > 0 ? oar_seqb_count(&sb, 0) * D : 0, false, "the grads of r . h_p"));
    OAR_TRY(a.lay.sorted_state(k, dt, a.h0, D, h0s, "H0 in sorted order"));
    if (dh0) OAR_TRY(scratch(k, dh0s, dt, N * D, true, "H0@GRAD in sorted order"));
    OAR_TRY(gather(k, dt, dhid, a.lay.row_of, dhb.p, T, D));
    for (int64_t t = sb.nsteps - 1; t >= 0; t--) {
        const int64_t n = oar_seqb_count(&sb, t), s0 = sb.step_start[t];
        const int64_t p0 = t > 0 ? sb.step_start[t - 1] : 0;
        void *dhp = t > 0 ? at(dhb.p, dt, p0 * D) : dh0s.p;
        const void *hp = t > 0 ? at(bh, dt, p0 * D) : h0s.p;
        OAR_TRY(step_bwd(k, dt, n, D, at(bg, dt, s0 * 3 * D), hp, a.w, at(dhb.p, dt, s0 * D), at(dgb.p, dt, s0 * 3 * D),
                         dhp, drhp.p, a.cf));
    }
    if (dw) {   /* the previous hiddens in batch order (zeros at step 0 without H0) */
        OAR_TRY(scratch(k, hprev, dt, T * D, false, "the previous hiddens"));
        OAR_TRY(gather_prev(k, dt, bh, a.h0, a.lay.prev, hprev.p, T, D));
        OAR_TRY(weight_grad(k, dt, T, D, hprev.p, brhp, dgb.p, dw));
    }
    if (dx) OAR_TRY(scatter(k, dt, dgb.p, a.lay.row_of, dx, T, 3 * D));
    if (dbias) OAR_TRY(col_sum(k, dt, dgb.p, T, 3 * D, 3 * D, dbias));
    if (dh0) OAR_TRY(scatter(k, dt, dh0s.p, a.lay.order, dh0, N, D));
    return OAR_OK;
}

OAR_RNN_REGISTER("gru", gru_fwd, gru_bwd)

/* ---- gru_unit ------------------------------------------------------------------------------ */
struct UnitArgs {
    int dt = 0;
    int64_t N = 0, D = 0;
    const oar_tensor_t *bt = nullptr;
    const void *x = nullptr, *hp = nullptr, *w = nullptr, *b = nullptr;
    Cfg cf{};
};

int unit_setup(oar_kernel_ctx_t *k, UnitArgs *a)
{
    a->dt = oar_k_dtype(k);
    const oar_tensor_t *in, *hpt, *wt;
    OAR_TRY(input(k, OAR_GRUU_INPUT, "Input", a->dt, false, &in, &a->x));
    OAR_TRY(input(k, OAR_GRUU_HPREV, "HiddenPrev", a->dt, false, &hpt, &a->hp));
    OAR_TRY(input(k, OAR_GRUU_WEIGHT, "Weight", a->dt, false, &wt, &a->w));
    OAR_TRY(input(k, OAR_GRUU_BIAS, "Bias", a->dt, true, &a->bt, &a->b));
    OAR_TRY(check_shapes(k, "Input", in, wt, a->bt, &a->D));
    a->N = in->dims[0];
    if (oar_tensor_numel_of(hpt) != a->N * a->D)
        return oar_k_error(k, OAR_ERR_SHAPE, "HiddenPrev has %lld values; expected [%lld, %lld]",
                           (long long)oar_tensor_numel_of(hpt), (long long)a->N, (long long)a->D);
    const oar_gru_attrs_t *atr = (const oar_gru_attrs_t *)oar_k_attrs(k);
    a->cf = Cfg{atr->act, atr->gate, atr->origin};
    if (a->cf.act < 0 || a->cf.act > 3 || a->cf.gate < 0 || a->cf.gate > 3)
        return oar_k_error(k, OAR_ERR_INVALID, "activation codes %d / %d: expected 0..3", a->cf.act, a->cf.gate);
    return OAR_OK;
}

int unit_fwd(oar_kernel_ctx_t *k)
{
    UnitArgs a;
    OAR_TRY(unit_setup(k, &a));
    const int dt = a.dt;
    void *g, *rhp, *h;
    OAR_TRY(output(k, OAR_GRUU_GATE, "Gate", dt, a.N * 3 * a.D, false, &g));
    OAR_TRY(output(k, OAR_GRUU_RHP, "ResetHiddenPrev", dt, a.N * a.D, false, &rhp));
    OAR_TRY(output(k, OAR_GRUU_HIDDEN, "Hidden", dt, a.N * a.D, false, &h));
    if (a.N * a.D == 0) return OAR_OK;
    /* the gates start as Input + Bias */
    OAR_CU(k, cudaMemcpyAsync(g, a.x, oar_dtype_size(dt) * (size_t)(a.N * 3 * a.D), cudaMemcpyDeviceToDevice, 0),
           "cudaMemcpyAsync");
    if (a.b) OAR_TRY(add_row(k, dt, g, a.b, a.N, 3 * a.D));
    return step_fwd(k, dt, a.N, a.D, g, a.hp, a.w, rhp, h, a.cf);
}

int unit_bwd(oar_kernel_ctx_t *k)
{
    UnitArgs a;
    OAR_TRY(unit_setup(k, &a));
    const int dt = a.dt;
    const int64_t N = a.N, D = a.D;
    const oar_tensor_t *gt, *rt, *dht;
    const void *g, *rhp, *dh;
    OAR_TRY(input(k, OAR_GRUU_GATE_IN, "Gate", dt, false, &gt, &g));
    OAR_TRY(input(k, OAR_GRUU_RHP_IN, "ResetHiddenPrev", dt, false, &rt, &rhp));
    OAR_TRY(input(k, OAR_GRUU_DHIDDEN, "Hidden@GRAD", dt, false, &dht, &dh));
    if (oar_tensor_numel_of(gt) != N * 3 * D || oar_tensor_numel_of(rt) != N * D || oar_tensor_numel_of(dht) != N * D)
        return oar_k_error(k, OAR_ERR_SHAPE, "Gate, ResetHiddenPrev or Hidden@GRAD does not match [%lld, %lld]",
                           (long long)N, (long long)D);
    void *dx, *dhp, *dw, *db = nullptr;
    OAR_TRY(output(k, OAR_GRUU_DINPUT, "Input@GRAD", dt, N * 3 * D, true, &dx));
    OAR_TRY(output(k, OAR_GRUU_DHPREV, "HiddenPrev@GRAD", dt, N * D, true, &dhp));
    OAR_TRY(output(k, OAR_GRUU_DWEIGHT, "Weight@GRAD", dt, 3 * D * D, true, &dw));
    if (a.bt) OAR_TRY(output(k, OAR_GRUU_DBIAS, "Bias@GRAD", dt, 3 * D, true, &db));
    if (N * D == 0) {
        OAR_TRY(zero(k, dw, dt, 3 * D * D));
        return zero(k, db, dt, 3 * D);
    }
    Scratch dg, drhp;
    OAR_TRY(scratch(k, dg, dt, N * 3 * D, false, "the gate grads"));
    OAR_TRY(scratch(k, drhp, dt, N * D, false, "the grads of r . h_p"));
    OAR_TRY(zero(k, dhp, dt, N * D));
    OAR_TRY(step_bwd(k, dt, N, D, g, a.hp, a.w, dh, dg.p, dhp, drhp.p, a.cf));
    if (dw) OAR_TRY(weight_grad(k, dt, N, D, a.hp, rhp, dg.p, dw));
    if (dx) OAR_CU(k, cudaMemcpyAsync(dx, dg.p, oar_dtype_size(dt) * (size_t)(N * 3 * D), cudaMemcpyDeviceToDevice, 0),
                   "cudaMemcpyAsync");
    if (db) OAR_TRY(col_sum(k, dt, dg.p, N, 3 * D, 3 * D, db));
    return OAR_OK;
}

OAR_RNN_REGISTER("gru_unit", unit_fwd, unit_bwd)

}  // namespace
