/*
 * lstmp.c — CPU kernels of lstmp and lstmp_grad (src/ops/lstmp.ops), float32
 * and float64.
 *
 * Like lstm (kernels/cpu/lstm.c) the op runs on the sequence-to-batch
 * layout (ops/seq_layout.h): step t is one GEMM [n_t, P] x [P, 4D] from the
 * previous step's projections, the rows of step t + 1 a prefix of those of
 * step t. BatchGate holds the activated gates, BatchCellPreAct the (clipped)
 * cells and BatchHidden the hiddens in that order; the grad walks the steps
 * backwards from them and the forward's Projection. The gradient through a
 * clip is zero where the value sits at the clip bound.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "op.h"
#include "sequence_batch.h"
#include "scratch.h"
#include "ops/seq_lod.h"
#include "ops/lstmp.h"

typedef struct lstmp_args {
    int dt;
    size_t es;
    int64_t T, D, P;
    const oar_tensor_t *in, *h0t, *c0t, *bt;
    const void *x, *h0, *c0, *w, *pw, *b;
    bool peep;
    oar_seqb_t sb;
} lstmp_args_t;

static int lstmp_setup(oar_kernel_ctx_t *k, lstmp_args_t *a)
{
    memset(a, 0, sizeof *a);
    a->dt = oar_k_dtype(k);
    a->es = oar_dtype_size(a->dt);
    const oar_tensor_t *wt, *pwt;
    OAR_TRY(oar_sk_input(k, OAR_LSTMP_INPUT, "Input", a->dt, &a->in, &a->x));
    OAR_TRY(oar_sk_input(k, OAR_LSTMP_WEIGHT, "Weight", a->dt, &wt, &a->w));
    OAR_TRY(oar_sk_input(k, OAR_LSTMP_PROJWEIGHT, "ProjWeight", a->dt, &pwt, &a->pw));
    OAR_TRY(oar_sk_opt_input(k, OAR_LSTMP_H0, "H0", a->dt, &a->h0t, &a->h0));
    OAR_TRY(oar_sk_opt_input(k, OAR_LSTMP_C0, "C0", a->dt, &a->c0t, &a->c0));
    OAR_TRY(oar_sk_opt_input(k, OAR_LSTMP_BIAS, "Bias", a->dt, &a->bt, &a->b));
    const oar_lstmp_attrs_t *at = oar_k_attrs(k);
    if (a->in->ndim != 2 || wt->ndim != 2 || pwt->ndim != 2 || wt->dims[1] != a->in->dims[1] ||
        a->in->dims[1] % 4 != 0 || pwt->dims[0] * 4 != wt->dims[1] || pwt->dims[1] != wt->dims[0])
        return oar_k_error(k, OAR_ERR_SHAPE, "Input [T, 4D], Weight [P, 4D] and ProjWeight [D, P] do not agree");
    a->T = a->in->dims[0];
    a->D = a->in->dims[1] / 4;
    a->P = wt->dims[0];
    a->peep = at->peepholes && a->b;
    if (a->b && oar_tensor_numel_of(a->bt) != (a->peep ? 7 : 4) * a->D)
        return oar_k_error(k, OAR_ERR_SHAPE, "Bias has %lld values; expected %lld",
                           (long long)oar_tensor_numel_of(a->bt), (long long)((a->peep ? 7 : 4) * a->D));
    const int64_t *offs;
    int64_t no;
    OAR_TRY(oar_seq_lod_last(k, OAR_LSTMP_INPUT, "Input", a->in, &offs, &no));
    OAR_TRY(oar_sk_check_state(k, "H0", a->h0t, no - 1, a->P));
    OAR_TRY(oar_sk_check_state(k, "C0", a->c0t, no - 1, a->D));
    int64_t dims[4] = {a->T, 4 * a->D, a->P, no};
    OAR_TRY(oar_sk_blas_dims(k, 4, dims));
    return oar_sk_seqb_make(k, &a->sb, offs, no, at->reverse);
}

#define LSTMP_STEPS(SFX, T)                                                                                     \
    /* one step of n rows: g [n, 4D] pre-activations in, activated gates out; cp [n, D] or NULL */              \
    static void cell_fwd_##SFX(int64_t n, int64_t D, T *g, const T *cp, T *c, T *h, const T *pe,                \
                               const oar_lstmp_attrs_t *at)                                                     \
    {                                                                                                           \
        const T *ci = pe, *cf = pe ? pe + D : NULL, *co = pe ? pe + 2 * D : NULL;                               \
        const T clip = (T)at->cell_clip;                                                                        \
        for (int64_t r = 0; r < n; r++) {                                                                       \
            T *a = g + r * 4 * D, *i = a + D, *f = a + 2 * D, *o = a + 3 * D, *cr = c + r * D, *hr = h + r * D; \
            const T *cpr = cp ? cp + r * D : NULL;                                                              \
            oar_act_fwd_##SFX(at->cand, a, D);                                                                  \
            if (cpr && ci)                                                                                      \
                for (int64_t j = 0; j < D; j++) { i[j] += cpr[j] * ci[j]; f[j] += cpr[j] * cf[j]; }             \
            oar_act_fwd_##SFX(at->gate, i, 2 * D);                                                              \
            for (int64_t j = 0; j < D; j++) {                                                                   \
                T v = a[j] * i[j] + (cpr ? cpr[j] * f[j] : 0);                                                  \
                if (clip > 0) v = v > clip ? clip : v < -clip ? -clip : v;                                      \
                cr[j] = v;                                                                                      \
            }                                                                                                   \
            if (co) for (int64_t j = 0; j < D; j++) o[j] += cr[j] * co[j];                                      \
            oar_act_fwd_##SFX(at->gate, o, D);                                                                  \
            memcpy(hr, cr, sizeof(T) * (size_t)D);                                                              \
            oar_act_fwd_##SFX(at->cell, hr, D);                                                                 \
            for (int64_t j = 0; j < D; j++) hr[j] *= o[j];                                                      \
        }                                                                                                       \
    }                                                                                                           \
    /* r [n, P]: h ProjWeight in, act_proj and the clip applied */                                              \
    static void proj_fwd_##SFX(int64_t n, int64_t P, T *r, const oar_lstmp_attrs_t *at)                         \
    {                                                                                                           \
        oar_act_fwd_##SFX(at->proj, r, n * P);                                                                  \
        const T clip = (T)at->proj_clip;                                                                        \
        if (clip > 0)                                                                                           \
            for (int64_t j = 0; j < n * P; j++) r[j] = r[j] > clip ? clip : r[j] < -clip ? -clip : r[j];        \
    }                                                                                                           \
    /* dr [n, P] becomes the grad before act_proj, from the outputs r */                                        \
    static void proj_bwd_##SFX(int64_t n, int64_t P, const T *r, T *dr, const oar_lstmp_attrs_t *at)            \
    {                                                                                                           \
        const T clip = (T)at->proj_clip;                                                                        \
        if (clip > 0)                                                                                           \
            for (int64_t j = 0; j < n * P; j++) if (r[j] >= clip || r[j] <= -clip) dr[j] = 0;                   \
        oar_act_bwd_##SFX(at->proj, r, dr, n * P);                                                              \
    }                                                                                                           \
    /* From the gates g, cells c, previous cells cp (or NULL), hidden grads dh and the cells' grads dc          \
     * (from the next step, or NULL): dg [n, 4D] the pre-activation grads, dcp += , dpe += (peepholes);         \
     * tmp holds 2D values */                                                                                   \
    static void cell_bwd_##SFX(int64_t n, int64_t D, const T *g, const T *c, const T *cp, const T *dh,          \
                               const T *dc, T *dg, T *dcp, const T *pe, T *dpe, const oar_lstmp_attrs_t *at,    \
                               T *tmp)                                                                          \
    {                                                                                                           \
        const T *ci = pe, *cf = pe ? pe + D : NULL, *co = pe ? pe + 2 * D : NULL;                               \
        T *dci = dpe, *dcf = dpe ? dpe + D : NULL, *dco = dpe ? dpe + 2 * D : NULL;                             \
        const T clip = (T)at->cell_clip;                                                                        \
        T *tc = tmp, *s = tmp + D;                                                                              \
        for (int64_t r = 0; r < n; r++) {                                                                       \
            const T *a = g + r * 4 * D, *i = a + D, *f = a + 2 * D, *o = a + 3 * D;                             \
            const T *cr = c + r * D, *cpr = cp ? cp + r * D : NULL, *dhr = dh + r * D;                          \
            const T *dcr = dc ? dc + r * D : NULL;                                                              \
            T *da = dg + r * 4 * D, *di = da + D, *df = da + 2 * D, *dout = da + 3 * D;                         \
            memcpy(tc, cr, sizeof(T) * (size_t)D);                                                              \
            oar_act_fwd_##SFX(at->cell, tc, D);                                                                 \
            for (int64_t j = 0; j < D; j++) { dout[j] = dhr[j] * tc[j]; s[j] = dhr[j] * o[j]; }                 \
            oar_act_bwd_##SFX(at->gate, o, dout, D);                                                            \
            oar_act_bwd_##SFX(at->cell, tc, s, D);                                                              \
            for (int64_t j = 0; j < D; j++) {                                                                   \
                T v = s[j] + (dcr ? dcr[j] : 0) + (co ? dout[j] * co[j] : 0);                                   \
                if (clip > 0 && (cr[j] >= clip || cr[j] <= -clip)) v = 0;                                       \
                s[j] = v;                                                                                       \
                da[j] = v * i[j];                                                                               \
                di[j] = v * a[j];                                                                               \
                df[j] = cpr ? v * cpr[j] : 0;                                                                   \
            }                                                                                                   \
            oar_act_bwd_##SFX(at->cand, a, da, D);                                                              \
            oar_act_bwd_##SFX(at->gate, i, di, 2 * D);                                                          \
            if (dcp)                                                                                            \
                for (int64_t j = 0; j < D; j++)                                                                 \
                    dcp[r * D + j] += s[j] * f[j] + (ci ? di[j] * ci[j] + df[j] * cf[j] : 0);                   \
            if (dco) for (int64_t j = 0; j < D; j++) dco[j] += dout[j] * cr[j];                                 \
            if (dci && cpr)                                                                                     \
                for (int64_t j = 0; j < D; j++) { dci[j] += di[j] * cpr[j]; dcf[j] += df[j] * cpr[j]; }         \
        }                                                                                                       \
    }

LSTMP_STEPS(f32, float)
LSTMP_STEPS(f64, double)

#define AT(p, row, w) ((char *)(p) + es * (size_t)((row) * (w)))
#define CAT(p, row, w) ((const char *)(p) + es * (size_t)((row) * (w)))

static int lstmp_fwd(oar_kernel_ctx_t *k)
{
    const oar_lstmp_attrs_t *at = oar_k_attrs(k);
    lstmp_args_t a;
    int rc = lstmp_setup(k, &a);
    if (rc != OAR_OK) { oar_seqb_free(&a.sb); return rc; }
    const int64_t T = a.T, D = a.D, P = a.P;
    const size_t es = a.es;
    const bool f32 = a.dt == OAR_FP32;
    void *proj, *cell, *bg, *bc, *bh, *rb = NULL, *h0s = NULL, *c0s = NULL, *own_bg = NULL, *own_bc = NULL,
         *own_bh = NULL;
    const void *pe = a.peep ? CAT(a.b, 4, D) : NULL;
    if ((rc = oar_k_output_sized(k, OAR_LSTMP_PROJECTION, "Projection", a.dt, T * P, false, &proj)) != OAR_OK ||
        (rc = oar_k_output_sized(k, OAR_LSTMP_CELL, "Cell", a.dt, T * D, false, &cell)) != OAR_OK ||
        (rc = oar_sk_output_or_scratch(k, OAR_LSTMP_BATCHGATE, "BatchGate", a.dt, T * 4 * D, es,
                                       &bg, &own_bg)) != OAR_OK ||
        (rc = oar_sk_output_or_scratch(k, OAR_LSTMP_BATCHCELL, "BatchCellPreAct", a.dt, T * D, es,
                                       &bc, &own_bc)) != OAR_OK ||
        (rc = oar_sk_output_or_scratch(k, OAR_LSTMP_BATCHHIDDEN, "BatchHidden", a.dt, T * D, es,
                                       &bh, &own_bh)) != OAR_OK)
        goto done;
    if (!(rb = oar_sk_scratch(k, T * P, es, false, &rc))) goto done;
    if (a.h0 && !(h0s = oar_sk_sorted_state(k, &a.sb, a.h0, P, es, &rc))) goto done;
    if (a.c0 && !(c0s = oar_sk_sorted_state(k, &a.sb, a.c0, D, es, &rc))) goto done;
    oar_seqb_gather(&a.sb, a.x, bg, 4 * D, es);
    if (a.b) oar_sk_add_row(a.dt, bg, a.b, T, 4 * D);
    for (int64_t t = 0; t < a.sb.nsteps; t++) {
        const int64_t n = oar_seqb_count(&a.sb, t), s0 = a.sb.step_start[t];
        const void *rp = t > 0 ? CAT(rb, a.sb.step_start[t - 1], P) : h0s;
        const void *cp = t > 0 ? CAT(bc, a.sb.step_start[t - 1], D) : c0s;
        if (rp) oar_sk_gemm(a.dt, false, false, n, 4 * D, P, 1.0, rp, P, a.w, 4 * D, 1.0, AT(bg, s0, 4 * D), 4 * D);
        if (f32)
            cell_fwd_f32(n, D, (float *)AT(bg, s0, 4 * D), cp, (float *)AT(bc, s0, D), (float *)AT(bh, s0, D), pe, at);
        else
            cell_fwd_f64(n, D, (double *)AT(bg, s0, 4 * D), cp, (double *)AT(bc, s0, D), (double *)AT(bh, s0, D), pe,
                         at);
        oar_sk_gemm(a.dt, false, false, n, P, D, 1.0, CAT(bh, s0, D), D, a.pw, P, 0.0, AT(rb, s0, P), P);
        if (f32) proj_fwd_f32(n, P, (float *)AT(rb, s0, P), at);
        else proj_fwd_f64(n, P, (double *)AT(rb, s0, P), at);
    }
    oar_seqb_scatter(&a.sb, rb, proj, P, es);
    oar_seqb_scatter(&a.sb, bc, cell, D, es);
done:
    oar_scratch_free(rb);
    oar_scratch_free(h0s);
    oar_scratch_free(c0s);
    oar_scratch_free(own_bg);
    oar_scratch_free(own_bc);
    oar_scratch_free(own_bh);
    oar_seqb_free(&a.sb);
    return rc;
}

static int lstmp_bwd(oar_kernel_ctx_t *k)
{
    const oar_lstmp_attrs_t *at = oar_k_attrs(k);
    lstmp_args_t a;
    int rc = lstmp_setup(k, &a);
    if (rc != OAR_OK) { oar_seqb_free(&a.sb); return rc; }
    const int64_t T = a.T, D = a.D, P = a.P;
    const size_t es = a.es;
    const bool f32 = a.dt == OAR_FP32;
    const oar_tensor_t *pt, *bgt, *bct, *bht, *dpt, *dct = NULL;
    const void *projv, *bg, *bc, *bh, *dproj, *dcell = NULL;
    void *dx = NULL, *dh0 = NULL, *dc0 = NULL, *dw = NULL, *dpw = NULL, *dbias = NULL;
    void *rb = NULL, *drb = NULL, *dcb = NULL, *dgb = NULL, *dhb = NULL, *h0s = NULL, *c0s = NULL, *dh0s = NULL,
         *dc0s = NULL, *tmp = NULL, *dpe = NULL;
    const void *pe = a.peep ? CAT(a.b, 4, D) : NULL;
    if ((rc = oar_sk_input(k, OAR_LSTMP_PROJ_IN, "Projection", a.dt, &pt, &projv)) != OAR_OK ||
        (rc = oar_sk_input(k, OAR_LSTMP_BATCHGATE_IN, "BatchGate", a.dt, &bgt, &bg)) != OAR_OK ||
        (rc = oar_sk_input(k, OAR_LSTMP_BATCHCELL_IN, "BatchCellPreAct", a.dt, &bct, &bc)) != OAR_OK ||
        (rc = oar_sk_input(k, OAR_LSTMP_BATCHHIDDEN_IN, "BatchHidden", a.dt, &bht, &bh)) != OAR_OK ||
        (rc = oar_sk_input(k, OAR_LSTMP_DPROJ, "Projection@GRAD", a.dt, &dpt, &dproj)) != OAR_OK ||
        (rc = oar_sk_opt_input(k, OAR_LSTMP_DCELL, "Cell@GRAD", a.dt, &dct, &dcell)) != OAR_OK)
        goto done;
    if (oar_tensor_numel_of(pt) != T * P || oar_tensor_numel_of(bgt) != T * 4 * D ||
        oar_tensor_numel_of(bct) != T * D || oar_tensor_numel_of(bht) != T * D || oar_tensor_numel_of(dpt) != T * P ||
        (dct && oar_tensor_numel_of(dct) != T * D)) {
        rc = oar_k_error(k, OAR_ERR_SHAPE, "the forward's outputs or the gradients do not fit Input [%lld, %lld]",
                         (long long)T, (long long)(4 * D));
        goto done;
    }
    if ((rc = oar_k_output_sized(k, OAR_LSTMP_DINPUT, "Input@GRAD", a.dt, T * 4 * D, true, &dx)) != OAR_OK ||
        (rc = oar_k_output_sized(k, OAR_LSTMP_DH0, "H0@GRAD", a.dt, a.h0 ? oar_tensor_numel_of(a.h0t) : 0, true,
                                 &dh0)) != OAR_OK ||
        (rc = oar_k_output_sized(k, OAR_LSTMP_DC0, "C0@GRAD", a.dt, a.c0 ? oar_tensor_numel_of(a.c0t) : 0, true,
                                 &dc0)) != OAR_OK ||
        (rc = oar_k_output_sized(k, OAR_LSTMP_DWEIGHT, "Weight@GRAD", a.dt, P * 4 * D, true, &dw)) != OAR_OK ||
        (rc = oar_k_output_sized(k, OAR_LSTMP_DPROJWEIGHT, "ProjWeight@GRAD", a.dt, D * P, true, &dpw)) != OAR_OK ||
        (rc = oar_k_output_sized(k, OAR_LSTMP_DBIAS, "Bias@GRAD", a.dt, a.b ? oar_tensor_numel_of(a.bt) : 0, true,
                                 &dbias)) != OAR_OK)
        goto done;
    if (!(rb = oar_sk_scratch(k, T * P, es, false, &rc)) || !(drb = oar_sk_scratch(k, T * P, es, false, &rc)) ||
        !(dcb = oar_sk_scratch(k, T * D, es, true, &rc)) || !(dgb = oar_sk_scratch(k, T * 4 * D, es, false, &rc)) ||
        !(dhb = oar_sk_scratch(k, T * D, es, false, &rc)) || !(tmp = oar_sk_scratch(k, 2 * D, es, false, &rc)) ||
        !(dpe = oar_sk_scratch(k, 3 * D, es, true, &rc)))
        goto done;
    if (a.h0 && (!(h0s = oar_sk_sorted_state(k, &a.sb, a.h0, P, es, &rc)) ||
                 !(dh0s = oar_sk_scratch(k, a.sb.nseq * P, es, true, &rc))))
        goto done;
    if (a.c0 && (!(c0s = oar_sk_sorted_state(k, &a.sb, a.c0, D, es, &rc)) ||
                 !(dc0s = oar_sk_scratch(k, a.sb.nseq * D, es, true, &rc))))
        goto done;
    oar_seqb_gather(&a.sb, projv, rb, P, es);
    oar_seqb_gather(&a.sb, dproj, drb, P, es);
    if (dcell) oar_seqb_gather(&a.sb, dcell, dcb, D, es);
    for (int64_t t = a.sb.nsteps - 1; t >= 0; t--) {
        const int64_t n = oar_seqb_count(&a.sb, t), s0 = a.sb.step_start[t];
        const int64_t p0 = t > 0 ? a.sb.step_start[t - 1] : 0;
        const void *rp = t > 0 ? CAT(rb, p0, P) : h0s, *cp = t > 0 ? CAT(bc, p0, D) : c0s;
        void *drp = t > 0 ? AT(drb, p0, P) : dh0s, *dcp = t > 0 ? AT(dcb, p0, D) : dc0s;
        /* the projection: dr -> before act_proj -> dh and ProjWeight@GRAD */
        if (f32) proj_bwd_f32(n, P, (const float *)CAT(rb, s0, P), (float *)AT(drb, s0, P), at);
        else proj_bwd_f64(n, P, (const double *)CAT(rb, s0, P), (double *)AT(drb, s0, P), at);
        oar_sk_gemm(a.dt, false, true, n, D, P, 1.0, CAT(drb, s0, P), P, a.pw, P, 0.0, AT(dhb, s0, D), D);
        if (f32)
            cell_bwd_f32(n, D, (const float *)CAT(bg, s0, 4 * D), (const float *)CAT(bc, s0, D), cp,
                         (const float *)CAT(dhb, s0, D), (const float *)CAT(dcb, s0, D), (float *)AT(dgb, s0, 4 * D),
                         dcp, pe, pe ? dpe : NULL, at, tmp);
        else
            cell_bwd_f64(n, D, (const double *)CAT(bg, s0, 4 * D), (const double *)CAT(bc, s0, D), cp,
                         (const double *)CAT(dhb, s0, D), (const double *)CAT(dcb, s0, D),
                         (double *)AT(dgb, s0, 4 * D), dcp, pe, pe ? dpe : NULL, at, tmp);
        /* the recurrence: dr_{t-1} += dg W^T */
        if (rp) oar_sk_gemm(a.dt, false, true, n, P, 4 * D, 1.0, CAT(dgb, s0, 4 * D), 4 * D, a.w, 4 * D, 1.0, drp, P);
    }
    if (dpw) oar_sk_gemm(a.dt, true, false, D, P, T, 1.0, bh, D, drb, P, 0.0, dpw, P);
    if (dw) {
        /* sum over steps of r_{t-1}^T dg_t: step 0 reads H0 (nothing when absent) */
        memset(dw, 0, es * (size_t)(P * 4 * D));
        for (int64_t t = 0; t < a.sb.nsteps; t++) {
            const int64_t n = oar_seqb_count(&a.sb, t), s0 = a.sb.step_start[t];
            const void *rp = t > 0 ? CAT(rb, a.sb.step_start[t - 1], P) : h0s;
            if (rp) oar_sk_gemm(a.dt, true, false, P, 4 * D, n, 1.0, rp, P, CAT(dgb, s0, 4 * D), 4 * D, 1.0, dw, 4 * D);
        }
    }
    if (dx) oar_seqb_scatter(&a.sb, dgb, dx, 4 * D, es);
    if (dbias) {
        oar_sk_col_sum(a.dt, dgb, T, 4 * D, dbias);
        if (a.peep) memcpy(AT(dbias, 4, D), dpe, es * (size_t)(3 * D));
    }
    if (dh0) oar_seqb_unsort_rows(&a.sb, dh0s, dh0, P, es);
    if (dc0) oar_seqb_unsort_rows(&a.sb, dc0s, dc0, D, es);
done:
    oar_scratch_free(rb);
    oar_scratch_free(drb);
    oar_scratch_free(dcb);
    oar_scratch_free(dgb);
    oar_scratch_free(dhb);
    oar_scratch_free(tmp);
    oar_scratch_free(dpe);
    oar_scratch_free(h0s);
    oar_scratch_free(c0s);
    oar_scratch_free(dh0s);
    oar_scratch_free(dc0s);
    oar_seqb_free(&a.sb);
    return rc;
}

OAR_REGISTER_KERNEL("lstmp", OAR_PLACE_CPU, OAR_FP32, lstmp_fwd)
OAR_REGISTER_KERNEL("lstmp_grad", OAR_PLACE_CPU, OAR_FP32, lstmp_bwd)

static int lstmp_fwd_f64(oar_kernel_ctx_t *k) { return lstmp_fwd(k); }
static int lstmp_bwd_f64(oar_kernel_ctx_t *k) { return lstmp_bwd(k); }
OAR_REGISTER_KERNEL("lstmp", OAR_PLACE_CPU, OAR_FP64, lstmp_fwd_f64)
OAR_REGISTER_KERNEL("lstmp_grad", OAR_PLACE_CPU, OAR_FP64, lstmp_bwd_f64)
