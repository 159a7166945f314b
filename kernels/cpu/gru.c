/*
 * gru.c — CPU kernels of gru, gru_unit and their grads (definitions and
 * formulas in src/ops/gru.c).
 *
 * One GRU step over n rows is two GEMMs with elementwise work around them:
 * gates += h_p W_ur, activate u and r, r . h_p, candidate += (r . h_p) W_c,
 * activate c, mix. gru runs the steps on the sequence-to-batch layout
 * (ops/seq_layout.h), so a step's rows are those of all sequences still
 * running; gru_unit is one step over all its rows. The grads run the steps
 * backwards and find Weight@GRAD with one GEMM per weight block over all
 * steps (previous hiddens^T dGate_ur and (r . h_p)^T dGate_c).
 */
#include <stdlib.h>
#include <string.h>
#include "op.h"
#include "sequence_batch.h"
#include "ops/seq_lod.h"
#include "gemm.h"
#include "scratch.h"
#include "ops/gru.h"

typedef struct gru_cfg { int act, gate; bool origin; } gru_cfg_t;

#define GRU_STEPS(SFX, T)                                                             \
    /* activates u and r of g [n, 3D]; rhp = r . hp (zeros without hp) */             \
    static void fwd_gates_##SFX(int64_t n, int64_t D, T *g, const T *hp, T *rhp, const gru_cfg_t *cf) \
    {                                                                                 \
        for (int64_t r = 0; r < n; r++) {                                             \
            T *gr = g + r * 3 * D;                                                    \
            oar_act_fwd_##SFX(cf->gate, gr, 2 * D);                                   \
            for (int64_t j = 0; j < D; j++) rhp[r * D + j] = hp ? gr[D + j] * hp[r * D + j] : 0; \
        }                                                                             \
    }                                                                                 \
    /* activates c and mixes the new hidden h */                                      \
    static void fwd_out_##SFX(int64_t n, int64_t D, T *g, const T *hp, T *h, const gru_cfg_t *cf) \
    {                                                                                 \
        for (int64_t r = 0; r < n; r++) {                                             \
            T *u = g + r * 3 * D, *c = u + 2 * D;                                     \
            oar_act_fwd_##SFX(cf->act, c, D);                                         \
            for (int64_t j = 0; j < D; j++) {                                         \
                T p = hp ? hp[r * D + j] : 0;                                         \
                h[r * D + j] = cf->origin ? u[j] * p + ((T)1 - u[j]) * c[j]           \
                                          : u[j] * c[j] + ((T)1 - u[j]) * p;          \
            }                                                                         \
        }                                                                             \
    }                                                                                 \
    /* dG of u and c from dh; dhp += the direct part of dh (when dhp) */               \
    static void bwd_uc_##SFX(int64_t n, int64_t D, const T *g, const T *hp, const T *dh, T *dg, \
                             T *dhp, const gru_cfg_t *cf)                              \
    {                                                                                 \
        for (int64_t r = 0; r < n; r++) {                                             \
            const T *u = g + r * 3 * D, *c = u + 2 * D;                               \
            T *du = dg + r * 3 * D, *dc = du + 2 * D;                                 \
            for (int64_t j = 0; j < D; j++) {                                         \
                T p = hp ? hp[r * D + j] : 0, d = dh[r * D + j];                      \
                du[j] = cf->origin ? d * (p - c[j]) : d * (c[j] - p);                 \
                dc[j] = cf->origin ? d * ((T)1 - u[j]) : d * u[j];                    \
                if (dhp) dhp[r * D + j] += cf->origin ? d * u[j] : d * ((T)1 - u[j]); \
            }                                                                         \
            oar_act_bwd_##SFX(cf->gate, u, du, D);                                    \
            oar_act_bwd_##SFX(cf->act, c, dc, D);                                     \
        }                                                                             \
    }                                                                                 \
    /* dG of r from drhp = dG_c W_c^T; dhp += drhp . r (when dhp) */                   \
    static void bwd_r_##SFX(int64_t n, int64_t D, const T *g, const T *hp, const T *drhp, T *dg, \
                            T *dhp, const gru_cfg_t *cf)                               \
    {                                                                                 \
        for (int64_t r = 0; r < n; r++) {                                             \
            const T *rg = g + r * 3 * D + D;                                          \
            T *dr = dg + r * 3 * D + D;                                               \
            for (int64_t j = 0; j < D; j++) {                                         \
                dr[j] = hp ? drhp[r * D + j] * hp[r * D + j] : 0;                     \
                if (dhp && hp) dhp[r * D + j] += drhp[r * D + j] * rg[j];             \
            }                                                                         \
            oar_act_bwd_##SFX(cf->gate, rg, dr, D);                                   \
        }                                                                             \
    }

GRU_STEPS(f32, float)
GRU_STEPS(f64, double)

/* threads 0: one call on this thread, never cut into blocks (gru's step
 * loop, whose per-part products run on one thread on any thread count:
 * oar_gemm_whole); else oar_gemm over that many threads (gru_unit) */
static void step_gemm(int dt, int threads, int64_t M, int64_t N, int64_t K, const void *A, int64_t lda,
                      const void *B, int64_t ldb, double beta, void *C, int64_t ldc)
{
    if (threads == 0) oar_gemm_whole(dt, false, false, M, N, K, 1.0, A, lda, B, ldb, beta, C, ldc);
    else oar_gemm(dt, threads, false, false, M, N, K, 1.0, A, lda, B, ldb, beta, C, ldc);
}

/* one forward step: g [n, 3D] holds x (+ bias) and gets the activated gates;
 * hp [n, D] or NULL; writes rhp and h */
static void step_fwd(int dt, int threads, int64_t n, int64_t D, void *g, const void *hp, const void *w, void *rhp,
                     void *h, const gru_cfg_t *cf)
{
    size_t es = oar_dtype_size(dt);
    const char *wc = (const char *)w + es * (size_t)(2 * D * D);
    char *gc = (char *)g + es * (size_t)(2 * D);
    if (hp) step_gemm(dt, threads, n, 2 * D, D, hp, D, w, 2 * D, 1.0, g, 3 * D);
    if (dt == OAR_FP32) fwd_gates_f32(n, D, g, hp, rhp, cf);
    else fwd_gates_f64(n, D, g, hp, rhp, cf);
    if (hp) step_gemm(dt, threads, n, D, D, rhp, D, wc, D, 1.0, gc, 3 * D);
    if (dt == OAR_FP32) fwd_out_f32(n, D, g, hp, h, cf);
    else fwd_out_f64(n, D, g, hp, h, cf);
}

/* one backward step: dg [n, 3D] gets the pre-activation grads; dhp += the
 * previous hidden's grad (when not NULL); drhp scratch [n, D]; wt: the
 * weights transposed (transposed_weights) */
static void step_bwd(int dt, int threads, int64_t n, int64_t D, const void *g, const void *hp, const void *wt,
                     const void *dh, void *dg, void *dhp, void *drhp, const gru_cfg_t *cf)
{
    size_t es = oar_dtype_size(dt);
    const char *wct = (const char *)wt + es * (size_t)(2 * D * D);
    if (dt == OAR_FP32) bwd_uc_f32(n, D, g, hp, dh, dg, dhp, cf);
    else bwd_uc_f64(n, D, g, hp, dh, dg, dhp, cf);
    if (hp)
        step_gemm(dt, threads, n, D, D, (const char *)dg + es * (size_t)(2 * D), 3 * D, wct, D, 0.0, drhp, D);
    if (dt == OAR_FP32) bwd_r_f32(n, D, g, hp, drhp, dg, dhp, cf);
    else bwd_r_f64(n, D, g, hp, drhp, dg, dhp, cf);
    if (hp && dhp) step_gemm(dt, threads, n, D, 2 * D, dg, 3 * D, wt, D, 1.0, dhp, D);
}

/* Weight [D, 3D] is a [D, 2D] block (update, reset) then a [D, D] block
 * (candidate); wt gets both transposed, [2D, D] then [D, D], so the
 * backward steps run plain products (see oar_sk_transpose); NULL with *rc
 * set on failure */
static void *transposed_weights(oar_kernel_ctx_t *k, int dt, const void *w, int64_t D, int *rc)
{
    size_t es = oar_dtype_size(dt);
    void *wt = oar_sk_scratch(k, 3 * D * D, es, false, rc);
    if (!wt) return NULL;
    oar_sk_transpose(dt, w, D, 2 * D, 2 * D, wt, D);
    oar_sk_transpose(dt, (const char *)w + es * (size_t)(2 * D * D), D, D, D, (char *)wt + es * (size_t)(2 * D * D), D);
    return wt;
}

/* Weight@GRAD of rows: [D, 2D] block = hp^T dG_ur, [D, D] block = rhp^T dG_c */
static void weight_grad(int dt, int64_t rows, int64_t D, const void *hp, const void *rhp, const void *dg, void *dw)
{
    size_t es = oar_dtype_size(dt);
    /* products over every row: threads split them */
    oar_gemm(dt, oar_gemm_threads(2 * D * D * rows), true, false, D, 2 * D, rows, 1.0, hp, D, dg, 3 * D, 0.0, dw,
             2 * D);
    oar_gemm(dt, oar_gemm_threads(D * D * rows), true, false, D, D, rows, 1.0, rhp, D,
             (const char *)dg + es * (size_t)(2 * D), 3 * D, 0.0, (char *)dw + es * (size_t)(2 * D * D), D);
}

/* Input-like [rows, 3D] and Weight [D, 3D] agree; Bias (optional) holds 3D */
static int check_shapes(oar_kernel_ctx_t *k, const char *in_slot, const oar_tensor_t *in, const oar_tensor_t *wt,
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
    int64_t dims[2] = {in->dims[0], 3 * *D};
    return oar_sk_blas_dims(k, 2, dims);
}

/* ---- gru ------------------------------------------------------------------------------- */
typedef struct gru_args {
    int dt;
    size_t es;
    int64_t T, D;
    const oar_tensor_t *in, *h0t, *bt;
    const void *x, *h0, *w, *b;
    gru_cfg_t cf;
    oar_seqb_t sb;
} gru_args_t;

static int gru_setup(oar_kernel_ctx_t *k, gru_args_t *a)
{
    memset(a, 0, sizeof *a);
    a->dt = oar_k_dtype(k);
    a->es = oar_dtype_size(a->dt);
    const oar_tensor_t *wt;
    OAR_TRY(oar_sk_input(k, OAR_GRU_INPUT, "Input", a->dt, &a->in, &a->x));
    OAR_TRY(oar_sk_input(k, OAR_GRU_WEIGHT, "Weight", a->dt, &wt, &a->w));
    OAR_TRY(oar_sk_opt_input(k, OAR_GRU_H0, "H0", a->dt, &a->h0t, &a->h0));
    OAR_TRY(oar_sk_opt_input(k, OAR_GRU_BIAS, "Bias", a->dt, &a->bt, &a->b));
    OAR_TRY(check_shapes(k, "Input", a->in, wt, a->bt, &a->D));
    a->T = a->in->dims[0];
    const oar_gru_attrs_t *at = oar_k_attrs(k);
    a->cf.act = at->act;
    a->cf.gate = at->gate;
    a->cf.origin = at->origin;
    const int64_t *offs;
    int64_t no;
    OAR_TRY(oar_seq_lod_last(k, OAR_GRU_INPUT, "Input", a->in, &offs, &no));
    OAR_TRY(oar_sk_check_state(k, "H0", a->h0t, no - 1, a->D));
    return oar_sk_seqb_make(k, &a->sb, offs, no, at->reverse);
}

/* rows of the previous step's hidden for step t (t > 0), else the sorted H0 */
static const void *prev_rows(const gru_args_t *a, const void *batch_hidden, const void *h0s, int64_t t)
{
    if (t == 0) return h0s;
    return (const char *)batch_hidden + a->es * (size_t)(a->sb.step_start[t - 1] * a->D);
}


static int gru_fwd(oar_kernel_ctx_t *k)
{
    gru_args_t a;
    int rc = gru_setup(k, &a);
    if (rc != OAR_OK) { oar_seqb_free(&a.sb); return rc; }
    int64_t T = a.T, D = a.D;
    size_t es = a.es;
    void *bg, *brhp, *bh, *hid, *h0s = NULL, *own[3] = {NULL, NULL, NULL};
    if ((rc = oar_sk_output_or_scratch(k, OAR_GRU_BATCHGATE, "BatchGate", a.dt, T * 3 * D, es,
                                       &bg, &own[0])) != OAR_OK ||
        (rc = oar_sk_output_or_scratch(k, OAR_GRU_BATCHRHP, "BatchResetHiddenPrev", a.dt, T * D, es,
                                       &brhp, &own[1])) != OAR_OK ||
        (rc = oar_sk_output_or_scratch(k, OAR_GRU_BATCHHIDDEN, "BatchHidden", a.dt, T * D, es,
                                       &bh, &own[2])) != OAR_OK ||
        (rc = oar_k_output_sized(k, OAR_GRU_HIDDEN, "Hidden", a.dt, T * D, false, &hid)) != OAR_OK)
        goto done;
    if (a.h0 && !(h0s = oar_sk_sorted_state(k, &a.sb, a.h0, D, es, &rc))) goto done;
    oar_seqb_gather(&a.sb, a.x, bg, 3 * D, es);
    if (a.b) oar_sk_add_row(a.dt, bg, a.b, T, 3 * D);
    /* split by sequence across threads (oar_seqb_parts) */
    int64_t q[OAR_SEQB_MAX_PARTS + 1];
    int parts = oar_seqb_parts(&a.sb, a.sb.nseq * 3 * D * D, q);
    const int nthr = oar_seqb_threads(parts);
    #pragma omp parallel for num_threads(nthr) schedule(static, 1) if (nthr > 1)
    for (int part = 0; part < parts; part++) {
        int64_t q0 = q[part], q1 = q[part + 1];
        for (int64_t t = 0; t < a.sb.nsteps; t++) {
            int64_t n = oar_seqb_count(&a.sb, t);
            if (n <= q0) break;   /* counts only shrink */
            int64_t m = (n < q1 ? n : q1) - q0, s0 = a.sb.step_start[t] + q0;
            const void *hp = prev_rows(&a, bh, h0s, t);
            step_fwd(a.dt, 0, m, D, (char *)bg + es * (size_t)(s0 * 3 * D),
                     hp ? (const char *)hp + es * (size_t)(q0 * D) : NULL, a.w,
                     (char *)brhp + es * (size_t)(s0 * D), (char *)bh + es * (size_t)(s0 * D), &a.cf);
        }
    }
    oar_seqb_scatter(&a.sb, bh, hid, D, es);
done:
    oar_scratch_free(h0s);
    for (int i = 0; i < 3; i++) oar_scratch_free(own[i]);
    oar_seqb_free(&a.sb);
    return rc;
}

static int gru_bwd(oar_kernel_ctx_t *k)
{
    gru_args_t a;
    int rc = gru_setup(k, &a);
    if (rc != OAR_OK) { oar_seqb_free(&a.sb); return rc; }
    int64_t T = a.T, D = a.D;
    size_t es = a.es;
    const oar_tensor_t *bgt, *brt, *bht, *dht;
    const void *bg, *brhp, *bh, *dhid;
    void *dx = NULL, *dh0 = NULL, *dw = NULL, *dbias = NULL;
    void *dhb = NULL, *dgb = NULL, *hprev = NULL, *h0s = NULL, *dh0s = NULL, *drhp = NULL, *wt = NULL;
    if ((rc = oar_sk_input(k, OAR_GRU_BATCHGATE_IN, "BatchGate", a.dt, &bgt, &bg)) != OAR_OK ||
        (rc = oar_sk_input(k, OAR_GRU_BATCHRHP_IN, "BatchResetHiddenPrev", a.dt, &brt, &brhp)) != OAR_OK ||
        (rc = oar_sk_input(k, OAR_GRU_BATCHHIDDEN_IN, "BatchHidden", a.dt, &bht, &bh)) != OAR_OK ||
        (rc = oar_sk_input(k, OAR_GRU_DHIDDEN, "Hidden@GRAD", a.dt, &dht, &dhid)) != OAR_OK)
        goto done;
    if (oar_tensor_numel_of(bgt) != T * 3 * D || oar_tensor_numel_of(brt) != T * D ||
        oar_tensor_numel_of(bht) != T * D || oar_tensor_numel_of(dht) != T * D) {
        rc = oar_k_error(k, OAR_ERR_SHAPE, "BatchGate, BatchResetHiddenPrev, BatchHidden or Hidden@GRAD does not "
                         "match Input [%lld, %lld]", (long long)T, (long long)(3 * D));
        goto done;
    }
    if ((rc = oar_k_output_sized(k, OAR_GRU_DINPUT, "Input@GRAD", a.dt, T * 3 * D, true, &dx)) != OAR_OK ||
        (rc = oar_k_output_sized(k, OAR_GRU_DWEIGHT, "Weight@GRAD", a.dt, 3 * D * D, true, &dw)) != OAR_OK)
        goto done;
    if (a.h0 && (rc = oar_k_output_sized(k, OAR_GRU_DH0, "H0@GRAD", a.dt, a.sb.nseq * D, true, &dh0)) != OAR_OK) goto done;
    if (a.b && (rc = oar_k_output_sized(k, OAR_GRU_DBIAS, "Bias@GRAD", a.dt, 3 * D, true, &dbias)) != OAR_OK) goto done;
    /* dhb is gathered, dgb written by every step, drhp by its GEMM: none is cleared */
    if (!(dhb = oar_sk_scratch(k, T * D, es, false, &rc)) || !(dgb = oar_sk_scratch(k, T * 3 * D, es, false, &rc))
        || !(drhp = oar_sk_scratch(k, T * D, es, false, &rc)) || !(wt = transposed_weights(k, a.dt, a.w, D, &rc)))
        goto done;
    if (a.h0 && !(h0s = oar_sk_sorted_state(k, &a.sb, a.h0, D, es, &rc))) goto done;
    if (dh0 && !(dh0s = oar_sk_scratch(k, a.sb.nseq * D, es, true, &rc))) goto done;
    oar_seqb_gather(&a.sb, dhid, dhb, D, es);
    /* split by sequence across threads (oar_seqb_parts); part rows q0.. of
     * drhp are its scratch */
    int64_t q[OAR_SEQB_MAX_PARTS + 1];
    int parts = oar_seqb_parts(&a.sb, a.sb.nseq * 3 * D * D, q);
    const int nthr = oar_seqb_threads(parts);
    #pragma omp parallel for num_threads(nthr) schedule(static, 1) if (nthr > 1)
    for (int part = 0; part < parts; part++) {
        int64_t q0 = q[part], q1 = q[part + 1];
        for (int64_t t = a.sb.nsteps - 1; t >= 0; t--) {
            int64_t n = oar_seqb_count(&a.sb, t);
            if (n <= q0) continue;
            int64_t m = (n < q1 ? n : q1) - q0, s0 = a.sb.step_start[t] + q0;
            void *dhp = t > 0 ? (char *)dhb + es * (size_t)((a.sb.step_start[t - 1] + q0) * D)
                        : dh0s ? (char *)dh0s + es * (size_t)(q0 * D) : NULL;
            const void *hp = prev_rows(&a, bh, h0s, t);
            step_bwd(a.dt, 0, m, D, (const char *)bg + es * (size_t)(s0 * 3 * D),
                     hp ? (const char *)hp + es * (size_t)(q0 * D) : NULL, wt,
                     (char *)dhb + es * (size_t)(s0 * D), (char *)dgb + es * (size_t)(s0 * 3 * D), dhp,
                     (char *)drhp + es * (size_t)(q0 * D), &a.cf);
        }
    }
    if (dw) {
        /* the previous hiddens in batch order (zeros at step 0 without H0) */
        if (!(hprev = oar_sk_scratch(k, T * D, es, true, &rc))) goto done;
        for (int64_t t = 0; t < a.sb.nsteps; t++) {
            const void *src = prev_rows(&a, bh, h0s, t);
            if (src)
                memcpy((char *)hprev + es * (size_t)(a.sb.step_start[t] * D), src,
                       es * (size_t)(oar_seqb_count(&a.sb, t) * D));
        }
        weight_grad(a.dt, T, D, hprev, brhp, dgb, dw);
    }
    if (dx) oar_seqb_scatter(&a.sb, dgb, dx, 3 * D, es);
    if (dbias) oar_sk_col_sum(a.dt, dgb, T, 3 * D, dbias);
    if (dh0) oar_seqb_unsort_rows(&a.sb, dh0s, dh0, D, es);
done:;
    void *scratch[] = {dhb, dgb, hprev, h0s, dh0s, drhp, wt};
    for (size_t i = 0; i < sizeof scratch / sizeof scratch[0]; i++) oar_scratch_free(scratch[i]);
    oar_seqb_free(&a.sb);
    return rc;
}

OAR_REGISTER_KERNEL("gru", OAR_PLACE_CPU, OAR_FP32, gru_fwd)
OAR_REGISTER_KERNEL("gru_grad", OAR_PLACE_CPU, OAR_FP32, gru_bwd)
static int gru_fwd64(oar_kernel_ctx_t *k) { return gru_fwd(k); }
static int gru_bwd64(oar_kernel_ctx_t *k) { return gru_bwd(k); }
OAR_REGISTER_KERNEL("gru", OAR_PLACE_CPU, OAR_FP64, gru_fwd64)
OAR_REGISTER_KERNEL("gru_grad", OAR_PLACE_CPU, OAR_FP64, gru_bwd64)

/* ---- gru_unit ------------------------------------------------------------------------------ */
typedef struct unit_args {
    int dt;
    int64_t N, D;
    const oar_tensor_t *bt;
    const void *x, *hp, *w, *b;
    gru_cfg_t cf;
} unit_args_t;

static int unit_setup(oar_kernel_ctx_t *k, unit_args_t *a)
{
    memset(a, 0, sizeof *a);
    a->dt = oar_k_dtype(k);
    const oar_tensor_t *in, *hpt, *wt;
    OAR_TRY(oar_sk_input(k, OAR_GRUU_INPUT, "Input", a->dt, &in, &a->x));
    OAR_TRY(oar_sk_input(k, OAR_GRUU_HPREV, "HiddenPrev", a->dt, &hpt, &a->hp));
    OAR_TRY(oar_sk_input(k, OAR_GRUU_WEIGHT, "Weight", a->dt, &wt, &a->w));
    OAR_TRY(oar_sk_opt_input(k, OAR_GRUU_BIAS, "Bias", a->dt, &a->bt, &a->b));
    OAR_TRY(check_shapes(k, "Input", in, wt, a->bt, &a->D));
    a->N = in->dims[0];
    if (oar_tensor_numel_of(hpt) != a->N * a->D)
        return oar_k_error(k, OAR_ERR_SHAPE, "HiddenPrev has %lld values; expected [%lld, %lld]",
                           (long long)oar_tensor_numel_of(hpt), (long long)a->N, (long long)a->D);
    const oar_gru_attrs_t *at = oar_k_attrs(k);
    a->cf.act = at->act;
    a->cf.gate = at->gate;
    a->cf.origin = at->origin;
    if (a->cf.act < 0 || a->cf.act > 3 || a->cf.gate < 0 || a->cf.gate > 3)
        return oar_k_error(k, OAR_ERR_INVALID, "activation codes %d / %d: expected 0..3", a->cf.act, a->cf.gate);
    return OAR_OK;
}

static int unit_fwd(oar_kernel_ctx_t *k)
{
    unit_args_t a;
    OAR_TRY(unit_setup(k, &a));
    void *g, *rhp, *h;
    OAR_TRY(oar_k_output_sized(k, OAR_GRUU_GATE, "Gate", a.dt, a.N * 3 * a.D, false, &g));
    OAR_TRY(oar_k_output_sized(k, OAR_GRUU_RHP, "ResetHiddenPrev", a.dt, a.N * a.D, false, &rhp));
    OAR_TRY(oar_k_output_sized(k, OAR_GRUU_HIDDEN, "Hidden", a.dt, a.N * a.D, false, &h));
    memcpy(g, a.x, oar_dtype_size(a.dt) * (size_t)(a.N * 3 * a.D));
    if (a.b) oar_sk_add_row(a.dt, g, a.b, a.N, 3 * a.D);
    /* one step over every row: threads split its products */
    step_fwd(a.dt, oar_gemm_threads(2 * a.N * a.D * a.D), a.N, a.D, g, a.hp, a.w, rhp, h, &a.cf);
    return OAR_OK;
}

static int unit_bwd(oar_kernel_ctx_t *k)
{
    unit_args_t a;
    OAR_TRY(unit_setup(k, &a));
    int64_t N = a.N, D = a.D;
    size_t es = oar_dtype_size(a.dt);
    const oar_tensor_t *gt, *rt, *dht;
    const void *g, *rhp, *dh;
    OAR_TRY(oar_sk_input(k, OAR_GRUU_GATE_IN, "Gate", a.dt, &gt, &g));
    OAR_TRY(oar_sk_input(k, OAR_GRUU_RHP_IN, "ResetHiddenPrev", a.dt, &rt, &rhp));
    OAR_TRY(oar_sk_input(k, OAR_GRUU_DHIDDEN, "Hidden@GRAD", a.dt, &dht, &dh));
    if (oar_tensor_numel_of(gt) != N * 3 * D || oar_tensor_numel_of(rt) != N * D || oar_tensor_numel_of(dht) != N * D)
        return oar_k_error(k, OAR_ERR_SHAPE, "Gate, ResetHiddenPrev or Hidden@GRAD does not match [%lld, %lld]",
                           (long long)N, (long long)D);
    void *dx, *dhp, *dw, *db = NULL;
    OAR_TRY(oar_k_output_sized(k, OAR_GRUU_DINPUT, "Input@GRAD", a.dt, N * 3 * D, true, &dx));
    OAR_TRY(oar_k_output_sized(k, OAR_GRUU_DHPREV, "HiddenPrev@GRAD", a.dt, N * D, true, &dhp));
    OAR_TRY(oar_k_output_sized(k, OAR_GRUU_DWEIGHT, "Weight@GRAD", a.dt, 3 * D * D, true, &dw));
    if (a.b) OAR_TRY(oar_k_output_sized(k, OAR_GRUU_DBIAS, "Bias@GRAD", a.dt, 3 * D, true, &db));
    int rc = OAR_OK;
    void *dg = oar_sk_scratch(k, N * 3 * D, es, true, &rc);
    void *drhp = dg ? oar_sk_scratch(k, N * D, es, true, &rc) : NULL;
    void *wt = drhp ? transposed_weights(k, a.dt, a.w, D, &rc) : NULL;
    if (!dg || !drhp || !wt) { oar_scratch_free(dg); oar_scratch_free(drhp); return rc; }
    if (dhp) memset(dhp, 0, es * (size_t)(N * D));
    step_bwd(a.dt, oar_gemm_threads(2 * N * D * D), N, D, g, a.hp, wt, dh, dg, dhp, drhp, &a.cf);
    oar_scratch_free(wt);
    if (dw) weight_grad(a.dt, N, D, a.hp, rhp, dg, dw);
    if (dx) memcpy(dx, dg, es * (size_t)(N * 3 * D));
    if (db) oar_sk_col_sum(a.dt, dg, N, 3 * D, db);
    oar_scratch_free(dg);
    oar_scratch_free(drhp);
    return OAR_OK;
}

OAR_REGISTER_KERNEL("gru_unit", OAR_PLACE_CPU, OAR_FP32, unit_fwd)
OAR_REGISTER_KERNEL("gru_unit_grad", OAR_PLACE_CPU, OAR_FP32, unit_bwd)
static int unit_fwd64(oar_kernel_ctx_t *k) { return unit_fwd(k); }
static int unit_bwd64(oar_kernel_ctx_t *k) { return unit_bwd(k); }
OAR_REGISTER_KERNEL("gru_unit", OAR_PLACE_CPU, OAR_FP64, unit_fwd64)
OAR_REGISTER_KERNEL("gru_unit_grad", OAR_PLACE_CPU, OAR_FP64, unit_bwd64)
