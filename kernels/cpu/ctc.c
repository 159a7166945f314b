/* ctc.c — CPU kernels of warpctc (+ grad), ctc_align, edit_distance and
 * sequence_erase (declared in src/ops/ctc.ops).
 *
 * warpctc works in log space in double whatever the dtype: log-softmax of
 * each step, then the forward (alpha, including the step's probability)
 * and backward (beta, the steps after t only) recursions over the label
 * with blanks between (S = 2L + 1 states), log-sum-exp at every sum. The
 * gradient w.r.t. a logit is softmax - (1/p) sum over the states of that
 * class of alpha * beta, which is what the softmax inside makes of the
 * occupancy. */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "op.h"
#include "ops/ctc.h"

static const char *nm(const char *s) { return s ? s : "?"; }

static inline double lse2(double a, double b)
{
    if (a == -INFINITY) return b;
    if (b == -INFINITY) return a;
    return a > b ? a + log1p(exp(b - a)) : b + log1p(exp(a - b));
}

/* an int32/int64 tensor's i-th value */
static inline int64_t ival(const oar_tensor_t *t, int64_t i)
{
    const void *p = oar_tensor_data((oar_tensor_t *)t);
    return t->dtype == OAR_INT64 ? ((const int64_t *)p)[i] : ((const int32_t *)p)[i];
}

/* the sequences of a lengths tensor ([B] or [B, 1]) checked against 0..cap */
static int read_lengths(oar_kernel_ctx_t *k, int slot, const char *what, int64_t batch, int64_t cap, int64_t *len)
{
    const oar_tensor_t *t = oar_k_input(k, slot, 0);
    if (!t || oar_tensor_numel_of(t) != batch || (batch > 0 && !oar_tensor_data((oar_tensor_t *)t)))
        return oar_k_error(k, OAR_ERR_SHAPE, "input %s '%s' must hold %lld lengths", what,
                           nm(oar_k_input_name(k, slot, 0)), (long long)batch);
    for (int64_t b = 0; b < batch; b++) {
        len[b] = ival(t, b);
        if (len[b] < 0 || len[b] > cap)
            return oar_k_error(k, OAR_ERR_RANGE, "input %s '%s': length %lld of sequence %lld is outside [0, %lld]",
                               what, nm(oar_k_input_name(k, slot, 0)), (long long)len[b], (long long)b, (long long)cap);
    }
    return OAR_OK;
}

/* the last LoD level of a tensor: offsets (n + 1 of them) checked against its rows */
static int lod_last(oar_kernel_ctx_t *k, int slot, const char *what, const oar_tensor_t *t, const int64_t **o,
                    int64_t *nseq)
{
    if (t->lod_levels < 1)
        return oar_k_error(k, OAR_ERR_INVALID, "input %s '%s' has no LoD; a LoD tensor (or the padded form) is required",
                           what, nm(oar_k_input_name(k, slot, 0)));
    int l = t->lod_levels - 1;
    int64_t rows = t->ndim > 0 ? t->dims[0] : 1;
    if (t->lod_size[l] < 1 || t->lod[l][t->lod_size[l] - 1] != rows)
        return oar_k_error(k, OAR_ERR_SHAPE, "input %s '%s': its LoD does not end at its %lld rows", what,
                           nm(oar_k_input_name(k, slot, 0)), (long long)rows);
    *o = t->lod[l];
    *nseq = t->lod_size[l] - 1;
    return OAR_OK;
}

/* ---- warpctc ------------------------------------------------------------------ */

/* ctc_seq in probability space: each step's alphas (and betas) are rescaled
 * to sum to 1 and the logs of the scales add up to the log-likelihood, so the
 * recursions are multiply-adds instead of log-sum-exps (about 3x faster).
 * Returns false, having computed nothing usable, when a step's probabilities
 * underflow (logits some 700 apart); the caller then runs ctc_seq. The
 * occupancies need no scales: at each step alpha * beta summed over the
 * states is the likelihood, so normalizing by that sum divides by it. */
static bool ctc_seq_linear(const double *lx, int64_t T, int64_t W, const int64_t *lab, int64_t L, int blank,
                           double *ws, double *loss, double *occ_out)
{
    const int64_t S = 2 * L + 1;
    double *alpha = ws, *beta = ws + T * S, *p = occ_out;   /* p = exp(lx), the softmax */
#define LAB(s) ((s) & 1 ? lab[(s) / 2] : (int64_t)blank)
#define SKIP(s) ((s) >= 2 && LAB(s) != blank && LAB(s) != LAB((s) - 2))
    for (int64_t i = 0; i < T * W; i++) p[i] = exp(lx[i]);
    double logp = 0, c = 0;
    for (int64_t s = 0; s < S; s++) alpha[s] = 0;
    alpha[0] = p[blank];
    if (S > 1) alpha[1] = p[LAB(1)];
    for (int64_t t = 0; t < T; t++) {
        double *a1 = alpha + t * S;
        if (t > 0) {
            const double *a0 = alpha + (t - 1) * S, *pt = p + t * W;
            for (int64_t s = 0; s < S; s++) {
                double v = a0[s];
                if (s >= 1) v += a0[s - 1];
                if (SKIP(s)) v += a0[s - 2];
                a1[s] = v * pt[LAB(s)];
            }
        }
        c = 0;
        for (int64_t s = 0; s < S; s++) c += a1[s];
        if (!(c >= DBL_MIN) || !isfinite(c)) return false;
        const double inv = 1.0 / c;
        for (int64_t s = 0; s < S; s++) a1[s] *= inv;
        logp += log(c);
    }
    const double *al = alpha + (T - 1) * S;
    const double fin = S > 1 ? al[S - 1] + al[S - 2] : al[0];
    if (!(fin >= DBL_MIN)) return false;
    logp += log(fin);
    double *bl = beta + (T - 1) * S;
    for (int64_t s = 0; s < S; s++) bl[s] = s >= S - 2 ? 1.0 : 0.0;
    for (int64_t t = T - 2; t >= 0; t--) {
        const double *b1 = beta + (t + 1) * S, *py = p + (t + 1) * W;
        double *b0 = beta + t * S;
        c = 0;
        for (int64_t s = 0; s < S; s++) {
            double v = b1[s] * py[LAB(s)];
            if (s + 1 < S) v += b1[s + 1] * py[LAB(s + 1)];
            if (s + 2 < S && SKIP(s + 2)) v += b1[s + 2] * py[LAB(s + 2)];
            b0[s] = v;
            c += v;
        }
        if (!(c >= DBL_MIN) || !isfinite(c)) return false;
        const double inv = 1.0 / c;
        for (int64_t s = 0; s < S; s++) b0[s] *= inv;
    }
    for (int64_t t = 0; t < T; t++) {
        const double *at = alpha + t * S, *bt = beta + t * S;
        double z = 0;
        for (int64_t s = 0; s < S; s++) z += at[s] * bt[s];
        if (!(z >= DBL_MIN) || !isfinite(z)) return false;
    }
    /* every check passed: only now is occ_out (which holds p) turned into the gradient */
    for (int64_t t = 0; t < T; t++) {
        const double *at = alpha + t * S, *bt = beta + t * S;
        double z = 0;
        for (int64_t s = 0; s < S; s++) z += at[s] * bt[s];
        const double inv = 1.0 / z;
        double *occ = occ_out + t * W;
        for (int64_t s = 0; s < S; s++) occ[LAB(s)] -= at[s] * bt[s] * inv;
    }
    *loss = -logp;
#undef LAB
#undef SKIP
    return true;
}

/* One sequence: T steps of W logits (row t at x + t * xs), L labels.
 * Writes grad rows (t at g + t * gs) and returns the loss in *loss; ws
 * holds T * W + 2 * T * (2L + 1) + W doubles. */
static void ctc_seq(const double *lx, int64_t T, int64_t W, const int64_t *lab, int64_t L, int blank, double *ws,
                    double *loss, double *occ_out)
{
    const int64_t S = 2 * L + 1;
    double *alpha = ws, *beta = ws + T * S;
#define LAB(s) ((s) & 1 ? lab[(s) / 2] : (int64_t)blank)
#define SKIP(s) ((s) >= 2 && LAB(s) != blank && LAB(s) != LAB((s) - 2))   /* s - 2 -> s allowed */
    for (int64_t s = 0; s < S; s++) alpha[s] = -INFINITY;
    alpha[0] = lx[blank];
    if (S > 1) alpha[1] = lx[LAB(1)];
    for (int64_t t = 1; t < T; t++) {
        const double *a0 = alpha + (t - 1) * S;
        double *a1 = alpha + t * S;
        for (int64_t s = 0; s < S; s++) {
            double v = a0[s];
            if (s >= 1) v = lse2(v, a0[s - 1]);
            if (SKIP(s)) v = lse2(v, a0[s - 2]);
            a1[s] = v == -INFINITY ? v : v + lx[t * W + LAB(s)];
        }
    }
    const double *al = alpha + (T - 1) * S;
    double logp = S > 1 ? lse2(al[S - 1], al[S - 2]) : al[0];
    double *bl = beta + (T - 1) * S;
    for (int64_t s = 0; s < S; s++) bl[s] = s >= S - 2 ? 0.0 : -INFINITY;
    for (int64_t t = T - 2; t >= 0; t--) {
        const double *b1 = beta + (t + 1) * S, *ly = lx + (t + 1) * W;
        double *b0 = beta + t * S;
        for (int64_t s = 0; s < S; s++) {
            double v = b1[s] + ly[LAB(s)];
            if (s + 1 < S) v = lse2(v, b1[s + 1] + ly[LAB(s + 1)]);
            if (s + 2 < S && SKIP(s + 2)) v = lse2(v, b1[s + 2] + ly[LAB(s + 2)]);
            b0[s] = v;
        }
    }
    *loss = -logp;
    for (int64_t t = 0; t < T; t++) {
        double *occ = occ_out + t * W;
        for (int64_t c = 0; c < W; c++) occ[c] = exp(lx[t * W + c]);
        for (int64_t s = 0; s < S; s++) {
            double e = alpha[t * S + s] + beta[t * S + s] - logp;
            if (e > -INFINITY) occ[LAB(s)] -= exp(e);
        }
    }
#undef LAB
#undef SKIP
}

#define WARPCTC_KERNELS(NAME, T_, DT)                                                                       \
    static int NAME##_fwd(oar_kernel_ctx_t *k)                                                          \
    {                                                                                                   \
        const oar_warpctc_attrs_t *a = oar_k_attrs(k);                                                  \
        const oar_tensor_t *x = oar_k_input(k, OAR_WARPCTC_LOGITS, 0), *y = oar_k_input(k, OAR_WARPCTC_LABEL, 0); \
        if (!x || !y) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s has no value", !x ? "Logits" : "Label"); \
        if (y->dtype != OAR_INT32 && y->dtype != OAR_INT64)                                            \
            return oar_k_error(k, OAR_ERR_DTYPE, "input Label '%s' must be int32 or int64",            \
                               nm(oar_k_input_name(k, OAR_WARPCTC_LABEL, 0)));                          \
        const bool padded = oar_k_input(k, OAR_WARPCTC_LOGITSLENGTH, 0) != NULL;                        \
        int64_t B, W, Tmax, Lmax = 0;                                                                   \
        const int64_t *xo = NULL, *yo = NULL;                                                           \
        if (padded) {                                                                                   \
            if (x->ndim != 3 || y->ndim != 2 || y->dims[0] != x->dims[1])                               \
                return oar_k_error(k, OAR_ERR_SHAPE, "padded form: Logits must be [Tmax, B, C+1], Label [B, Lmax]"); \
            Tmax = x->dims[0], B = x->dims[1], W = x->dims[2], Lmax = y->dims[1];                       \
        } else {                                                                                        \
            int64_t ny;                                                                                 \
            OAR_TRY(lod_last(k, OAR_WARPCTC_LOGITS, "Logits", x, &xo, &B));                             \
            OAR_TRY(lod_last(k, OAR_WARPCTC_LABEL, "Label", y, &yo, &ny));                              \
            if (ny != B)                                                                                \
                return oar_k_error(k, OAR_ERR_SHAPE, "input Label '%s' has %lld sequences, Logits %lld", \
                                   nm(oar_k_input_name(k, OAR_WARPCTC_LABEL, 0)), (long long)ny, (long long)B); \
            W = x->dims[0] > 0 ? oar_tensor_numel_of(x) / x->dims[0] : 0;                               \
            Tmax = 0;                                                                                   \
            for (int64_t b = 0; b < B; b++) if (xo[b + 1] - xo[b] > Tmax) Tmax = xo[b + 1] - xo[b];     \
        }                                                                                               \
        if (a->blank >= W)                                                                              \
            return oar_k_error(k, OAR_ERR_RANGE, "attr blank %d is not a class of Logits (%lld)", a->blank, (long long)W); \
        int64_t *tl = malloc(sizeof(int64_t) * (size_t)(2 * B + 1)), *ll = tl + B;                      \
        if (!tl) return oar_k_error(k, OAR_ERR_NOMEM, "warpctc: out of memory");                        \
        int rc = OAR_OK;                                                                                \
        if (padded) {                                                                                   \
            rc = read_lengths(k, OAR_WARPCTC_LOGITSLENGTH, "LogitsLength", B, Tmax, tl);                \
            if (rc == OAR_OK) rc = read_lengths(k, OAR_WARPCTC_LABELLENGTH, "LabelLength", B, Lmax, ll); \
        } else {                                                                                        \
            for (int64_t b = 0; b < B; b++) tl[b] = xo[b + 1] - xo[b], ll[b] = yo[b + 1] - yo[b];       \
        }                                                                                               \
        /* the labels: in range, not blank, alignable in the steps there are */                       \
        int64_t maxws = 0;                                                                              \
        for (int64_t b = 0; rc == OAR_OK && b < B; b++) {                                               \
            int64_t need = ll[b], prev = -1;                                                            \
            for (int64_t i = 0; i < ll[b]; i++) {                                                       \
                int64_t l = ival(y, padded ? b * Lmax + i : yo[b] + i);                                 \
                if (l < 0 || l >= W || l == a->blank) {                                                 \
                    rc = oar_k_error(k, OAR_ERR_RANGE, "input Label '%s': label %lld of sequence %lld is %lld; " \
                                     "labels are in [0, %lld) and not blank (%d)",                     \
                                     nm(oar_k_input_name(k, OAR_WARPCTC_LABEL, 0)), (long long)i, (long long)b, \
                                     (long long)l, (long long)W, a->blank);                            \
                    break;                                                                              \
                }                                                                                       \
                if (l == prev) need++;   /* a blank must separate equal neighbours */                   \
                prev = l;                                                                               \
            }                                                                                           \
            if (rc == OAR_OK && need > tl[b])                                                           \
                rc = oar_k_error(k, OAR_ERR_RANGE, "input Label '%s': sequence %lld has %lld labels needing %lld " \
                                 "steps but Logits '%s' gives it %lld; no alignment exists",           \
                                 nm(oar_k_input_name(k, OAR_WARPCTC_LABEL, 0)), (long long)b, (long long)ll[b], \
                                 (long long)need, nm(oar_k_input_name(k, OAR_WARPCTC_LOGITS, 0)), (long long)tl[b]); \
            int64_t w = tl[b] * W * 2 + 2 * tl[b] * (2 * ll[b] + 1) + ll[b];                              \
            if (w > maxws) maxws = w;                                                                   \
        }                                                                                               \
        void *gp = NULL, *lp = NULL;                                                                    \
        if (rc == OAR_OK) rc = oar_k_output_sized(k, OAR_WARPCTC_WARPCTCGRAD, "WarpCTCGrad", DT, Tmax * B * W, false, &gp); \
        if (rc == OAR_OK) rc = oar_k_output_sized(k, OAR_WARPCTC_LOSS, "Loss", DT, B, false, &lp);    \
        /* sequences are independent: one per thread, each with a workspace of its \
         * own; a sequence's values never depend on the thread that runs it */  \
        const int nthr = B > 1 ? (int)(omp_get_max_threads() < B ? omp_get_max_threads() : B) : 1;   \
        double *ws = rc == OAR_OK ? malloc(sizeof(double) * (size_t)(maxws + 1) * (size_t)nthr) : NULL; \
        if (rc == OAR_OK && !ws) rc = oar_k_error(k, OAR_ERR_NOMEM, "warpctc: out of memory");          \
        if (rc != OAR_OK) { free(tl); free(ws); return rc; }                                            \
        T_ *g = gp, *loss = lp;                                                                         \
        const T_ *xv = oar_tensor_data((oar_tensor_t *)x);                                              \
        memset(g, 0, sizeof(T_) * (size_t)(Tmax * B * W));                                              \
        _Pragma("omp parallel for num_threads(nthr) schedule(dynamic, 1) if (nthr > 1)")             \
        for (int64_t b = 0; b < B; b++) {                                                               \
            const int64_t T = tl[b], L = ll[b];                                                         \
            if (T == 0) { loss[b] = 0; continue; }   /* L == 0 here: the empty path, p = 1 */          \
            double *wt = ws + (size_t)(maxws + 1) * (size_t)omp_get_thread_num();                      \
            double *lx = wt, *occ = wt + T * W, *rec = occ + T * W;                                     \
            int64_t *lab = (int64_t *)(rec + 2 * T * (2 * L + 1));                                      \
            for (int64_t i = 0; i < L; i++) lab[i] = ival(y, padded ? b * Lmax + i : yo[b] + i);       \
            for (int64_t t = 0; t < T; t++) {   /* log-softmax of the step, max subtracted */          \
                const T_ *r = xv + (padded ? (t * B + b) * W : (xo[b] + t) * W);                        \
                double m = r[0], s = 0;                                                                 \
                for (int64_t c = 1; c < W; c++) if (r[c] > m) m = r[c];                                 \
                for (int64_t c = 0; c < W; c++) s += exp((double)r[c] - m);                             \
                double lz = m + log(s);                                                                 \
                for (int64_t c = 0; c < W; c++) lx[t * W + c] = (double)r[c] - lz;                      \
            }                                                                                           \
            double l;                                                                                   \
            if (!ctc_seq_linear(lx, T, W, lab, L, a->blank, rec, &l, occ))                              \
                ctc_seq(lx, T, W, lab, L, a->blank, rec, &l, occ);                                      \
            loss[b] = (T_)l;                                                                            \
            for (int64_t t = 0; t < T; t++)                                                             \
                for (int64_t c = 0; c < W; c++) g[(t * B + b) * W + c] = (T_)occ[t * W + c];            \
        }                                                                                               \
        free(ws);                                                                                       \
        free(tl);                                                                                       \
        return OAR_OK;                                                                                  \
    }                                                                                                   \
    static int NAME##_bwd(oar_kernel_ctx_t *k)                                                          \
    {                                                                                                   \
        const oar_warpctc_attrs_t *a = oar_k_attrs(k);                                                  \
        const oar_tensor_t *wg = oar_k_input(k, OAR_WARPCTC_G_WARPCTCGRAD, 0);                          \
        const oar_tensor_t *x = oar_k_input(k, OAR_WARPCTC_G_LOGITS, 0), *dl = oar_k_input(k, OAR_WARPCTC_G_DLOSS, 0); \
        if (!wg || !x || !dl) return oar_k_error(k, OAR_ERR_NOT_FOUND, "WarpCTCGrad, Logits and Loss@GRAD are required"); \
        if (wg->ndim != 3) return oar_k_error(k, OAR_ERR_SHAPE, "WarpCTCGrad must be [Tmax, B, C+1]"); \
        const int64_t Tmax = wg->dims[0], B = wg->dims[1], W = wg->dims[2];                             \
        if (oar_tensor_numel_of(dl) != B)                                                               \
            return oar_k_error(k, OAR_ERR_SHAPE, "Loss@GRAD holds %lld values; expected %lld (one per sequence)", \
                               (long long)oar_tensor_numel_of(dl), (long long)B);                      \
        const bool padded = oar_k_input(k, OAR_WARPCTC_G_LOGITSLENGTH, 0) != NULL;                      \
        int64_t *tl = malloc(sizeof(int64_t) * (size_t)(B + 1));                                        \
        if (!tl) return oar_k_error(k, OAR_ERR_NOMEM, "warpctc_grad: out of memory");                   \
        const int64_t *xo = NULL;                                                                       \
        int rc = OAR_OK;                                                                                \
        if (padded) {                                                                                   \
            rc = read_lengths(k, OAR_WARPCTC_G_LOGITSLENGTH, "LogitsLength", B, Tmax, tl);              \
        } else {                                                                                        \
            int64_t n;                                                                                  \
            rc = lod_last(k, OAR_WARPCTC_G_LOGITS, "Logits", x, &xo, &n);                               \
            if (rc == OAR_OK && n != B)                                                                 \
                rc = oar_k_error(k, OAR_ERR_SHAPE, "Logits has %lld sequences, WarpCTCGrad %lld", (long long)n, (long long)B); \
            for (int64_t b = 0; rc == OAR_OK && b < B; b++) tl[b] = xo[b + 1] - xo[b];                  \
        }                                                                                               \
        void *dxp = NULL;                                                                               \
        if (rc == OAR_OK)                                                                               \
            rc = oar_k_output_sized(k, OAR_WARPCTC_G_DLOGITS, "Logits@GRAD", DT, oar_tensor_numel_of(x), true, &dxp); \
        if (rc != OAR_OK || !dxp) { free(tl); return rc; }                                              \
        T_ *dx = dxp;                                                                                   \
        const T_ *gv = oar_tensor_data((oar_tensor_t *)wg), *dv = oar_tensor_data((oar_tensor_t *)dl);  \
        if (padded) memset(dx, 0, sizeof(T_) * (size_t)oar_tensor_numel_of(x));                         \
        for (int64_t b = 0; b < B; b++) {                                                               \
            T_ scale = dv[b];                                                                           \
            if (a->norm_by_times && tl[b] > 0) scale /= (T_)tl[b];                                      \
            for (int64_t t = 0; t < tl[b]; t++) {                                                       \
                T_ *o = dx + (padded ? (t * B + b) * W : (xo[b] + t) * W);                              \
                const T_ *gr = gv + (t * B + b) * W;                                                    \
                for (int64_t c = 0; c < W; c++) o[c] = gr[c] * scale;                                   \
            }                                                                                           \
        }                                                                                               \
        free(tl);                                                                                       \
        return OAR_OK;                                                                                  \
    }                                                                                                   \
    OAR_REGISTER_KERNEL("warpctc", OAR_PLACE_CPU, DT, NAME##_fwd)                                       \
    OAR_REGISTER_KERNEL("warpctc_grad", OAR_PLACE_CPU, DT, NAME##_bwd)

WARPCTC_KERNELS(warpctc_f32, float, OAR_FP32)
WARPCTC_KERNELS(warpctc_f64, double, OAR_FP64)

/* ---- ctc_align ---------------------------------------------------------------- */

/* level 0 of t's LoD as row offsets (Fluid reads ToAbsOffset(lod)[0]):
 * each offset carried down through the levels below; malloc'd */
static int64_t *abs_level0(const oar_tensor_t *t)
{
    int64_t n = t->lod_size[0];
    int64_t *o = malloc(sizeof(int64_t) * (size_t)n);
    if (!o) return NULL;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = t->lod[0][i];
        for (int l = 1; l < t->lod_levels; l++) v = v < t->lod_size[l] ? t->lod[l][v] : t->lod[l][t->lod_size[l] - 1];
        o[i] = v;
    }
    return o;
}

#define CTC_ALIGN_KERNEL(NAME, T_, DT)                                                                  \
    static int NAME(oar_kernel_ctx_t *k)                                                                \
    {                                                                                                   \
        const oar_ctc_align_attrs_t *a = oar_k_attrs(k);                                                \
        const oar_tensor_t *x = oar_k_input(k, OAR_CTC_ALIGN_INPUT, 0);                                 \
        const char *xn = nm(oar_k_input_name(k, OAR_CTC_ALIGN_INPUT, 0));                               \
        if (!x) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input Input has no value");                   \
        const T_ *xv = oar_tensor_data((oar_tensor_t *)x);                                              \
        const T_ blank = (T_)a->blank;                                                                  \
        if (oar_k_input(k, OAR_CTC_ALIGN_INPUTLENGTH, 0)) {                                             \
            const int64_t B = x->dims[0], Tp = x->dims[1];                                              \
            int64_t *len = malloc(sizeof(int64_t) * (size_t)(B + 1));                                   \
            if (!len) return oar_k_error(k, OAR_ERR_NOMEM, "ctc_align: out of memory");                 \
            int rc = read_lengths(k, OAR_CTC_ALIGN_INPUTLENGTH, "InputLength", B, Tp, len);             \
            void *op = NULL, *olp = NULL;                                                               \
            if (rc == OAR_OK) rc = oar_k_output_sized(k, OAR_CTC_ALIGN_OUTPUT, "Output", DT, B * Tp, false, &op); \
            if (rc == OAR_OK) rc = oar_k_output_sized(k, OAR_CTC_ALIGN_OUTPUTLENGTH, "OutputLength", DT, B, true, &olp); \
            if (rc != OAR_OK) { free(len); return rc; }                                                 \
            T_ *o = op, *ol = olp;                                                                      \
            for (int64_t b = 0; b < B; b++) {                                                           \
                int64_t n = 0;                                                                          \
                T_ prev = (T_)-1;                                                                       \
                for (int64_t t = 0; t < len[b]; t++) {                                                  \
                    T_ v = xv[b * Tp + t];                                                              \
                    if (v != blank && !(a->merge_repeated && v == prev)) o[b * Tp + n++] = v;           \
                    prev = v;                                                                           \
                }                                                                                       \
                if (ol) ol[b] = (T_)n;                                                                  \
                for (int64_t t = n; t < Tp; t++) o[b * Tp + t] = (T_)a->padding_value;                  \
            }                                                                                           \
            free(len);                                                                                  \
            return OAR_OK;                                                                              \
        }                                                                                               \
        if (x->lod_levels < 1)                                                                          \
            return oar_k_error(k, OAR_ERR_INVALID, "input Input '%s' has no LoD; give a LoD or InputLength", xn); \
        int64_t *lo = abs_level0(x);                                                                    \
        if (!lo) return oar_k_error(k, OAR_ERR_NOMEM, "ctc_align: out of memory");                      \
        const int64_t ns = x->lod_size[0] - 1, N = x->dims[0];                                          \
        if (lo[ns] != N) {                                                                              \
            free(lo);                                                                                   \
            return oar_k_error(k, OAR_ERR_SHAPE, "input Input '%s': its LoD does not end at its %lld rows", xn, (long long)N); \
        }                                                                                               \
        /* the collapsed rows first, then the output of that size */                                   \
        T_ *tmp = malloc(sizeof(T_) * (size_t)(N + 1));                                                 \
        int64_t *olod = malloc(sizeof(int64_t) * (size_t)(ns + 1));                                     \
        if (!tmp || !olod) { free(lo); free(tmp); free(olod); return oar_k_error(k, OAR_ERR_NOMEM, "ctc_align: out of memory"); } \
        int64_t m = 0;                                                                                  \
        olod[0] = 0;                                                                                    \
        for (int64_t s = 0; s < ns; s++) {                                                              \
            T_ prev = (T_)-1;                                                                           \
            for (int64_t i = lo[s]; i < lo[s + 1]; i++) {                                               \
                if (xv[i] != blank && !(a->merge_repeated && xv[i] == prev)) tmp[m++] = xv[i];          \
                prev = xv[i];                                                                           \
            }                                                                                           \
            olod[s + 1] = m;                                                                            \
        }                                                                                               \
        /* nothing left: [0, 1] (Fluid writes one row of -1 under an all-zero      \
         * LoD, which oar's LoD check refuses) */                                   \
        int64_t od[2] = { m, 1 };                                                                       \
        T_ *o = oar_k_output_resized(k, OAR_CTC_ALIGN_OUTPUT, od, 2, DT);                               \
        int rc = OAR_OK;                                                                                \
        if (!o && m > 0) rc = OAR_ERR_NOMEM;                                                            \
        else {                                                                                          \
            if (m > 0) memcpy(o, tmp, sizeof(T_) * (size_t)m);                                                   \
            const int64_t *lv[1] = { olod };                                                            \
            int64_t sz[1] = { ns + 1 };                                                                 \
            rc = oar_tensor_set_lod(oar_k_output(k, OAR_CTC_ALIGN_OUTPUT, 0), 1, lv, sz);               \
            if (rc != OAR_OK) rc = oar_k_error(k, rc, "cannot set Output's LoD: %s", oar_last_error()); \
        }                                                                                               \
        free(lo); free(tmp); free(olod);                                                                \
        return rc;                                                                                      \
    }                                                                                                   \
    OAR_REGISTER_KERNEL("ctc_align", OAR_PLACE_CPU, DT, NAME)

CTC_ALIGN_KERNEL(ctc_align_i32, int32_t, OAR_INT32)
CTC_ALIGN_KERNEL(ctc_align_i64, int64_t, OAR_INT64)

/* ---- edit_distance ------------------------------------------------------------ */
static int edit_distance_k(oar_kernel_ctx_t *k)
{
    const oar_edit_distance_attrs_t *a = oar_k_attrs(k);
    const oar_tensor_t *h = oar_k_input(k, OAR_EDIT_DISTANCE_HYPS, 0), *r = oar_k_input(k, OAR_EDIT_DISTANCE_REFS, 0);
    if (!h || !r) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s has no value", !h ? "Hyps" : "Refs");
    const bool padded = oar_k_input(k, OAR_EDIT_DISTANCE_HYPSLENGTH, 0) != NULL;
    int64_t B, nr;
    const int64_t *ho = NULL, *ro = NULL;
    int64_t *hl = NULL, *rl = NULL;
    if (padded) {
        B = h->dims[0];
        hl = malloc(sizeof(int64_t) * (size_t)(2 * B + 1));
        if (!hl) return oar_k_error(k, OAR_ERR_NOMEM, "edit_distance: out of memory");
        rl = hl + B;
        int rc = read_lengths(k, OAR_EDIT_DISTANCE_HYPSLENGTH, "HypsLength", B, h->dims[1], hl);
        if (rc == OAR_OK) rc = read_lengths(k, OAR_EDIT_DISTANCE_REFSLENGTH, "RefsLength", B, r->dims[1], rl);
        if (rc != OAR_OK) { free(hl); return rc; }
    } else {
        OAR_TRY(lod_last(k, OAR_EDIT_DISTANCE_HYPS, "Hyps", h, &ho, &B));
        OAR_TRY(lod_last(k, OAR_EDIT_DISTANCE_REFS, "Refs", r, &ro, &nr));
        if (nr != B)
            return oar_k_error(k, OAR_ERR_SHAPE, "Hyps has %lld sequences, Refs %lld", (long long)B, (long long)nr);
    }
    void *op = NULL, *np = NULL;
    int rc = oar_k_output_sized(k, OAR_EDIT_DISTANCE_OUT, "Out", OAR_FP32, B, false, &op);
    if (rc == OAR_OK) rc = oar_k_output_sized(k, OAR_EDIT_DISTANCE_SEQUENCENUM, "SequenceNum", OAR_INT64, 1, false, &np);
    int64_t maxr = 0;
    for (int64_t b = 0; b < B; b++) {
        int64_t n = padded ? rl[b] : ro[b + 1] - ro[b];
        if (n > maxr) maxr = n;
    }
    int64_t *row = rc == OAR_OK ? malloc(sizeof(int64_t) * (size_t)(2 * maxr + 2)) : NULL;
    if (rc == OAR_OK && !row) rc = oar_k_error(k, OAR_ERR_NOMEM, "edit_distance: out of memory");
    if (rc != OAR_OK) { free(hl); return rc; }
    float *out = op;
    ((int64_t *)np)[0] = B;
    const int64_t *hv = oar_tensor_data((oar_tensor_t *)h), *rv = oar_tensor_data((oar_tensor_t *)r);
    for (int64_t b = 0; b < B && rc == OAR_OK; b++) {
        const int64_t m = padded ? hl[b] : ho[b + 1] - ho[b], n = padded ? rl[b] : ro[b + 1] - ro[b];
        const int64_t *hs = padded ? hv + b * h->dims[1] : hv + ho[b], *rs = padded ? rv + b * r->dims[1] : rv + ro[b];
        /* two rows of the DP over the reference: prev[j] = d(hyp[:i-1], ref[:j]) */
        int64_t *prev = row, *cur = row + maxr + 1;
        for (int64_t j = 0; j <= n; j++) prev[j] = j;
        for (int64_t i = 1; i <= m; i++) {
            cur[0] = i;
            for (int64_t j = 1; j <= n; j++) {
                int64_t d = prev[j - 1] + (hs[i - 1] != rs[j - 1]);
                if (prev[j] + 1 < d) d = prev[j] + 1;
                if (cur[j - 1] + 1 < d) d = cur[j - 1] + 1;
                cur[j] = d;
            }
            int64_t *t = prev; prev = cur; cur = t;
        }
        double dist = (double)prev[n];
        if (a->normalized) {
            if (n == 0)
                rc = oar_k_error(k, OAR_ERR_INVALID, "input Refs '%s': reference %lld is empty; normalized divides by "
                                 "its length", nm(oar_k_input_name(k, OAR_EDIT_DISTANCE_REFS, 0)), (long long)b);
            else dist /= (double)n;
        }
        out[b] = (float)dist;
    }
    free(row);
    free(hl);
    return rc;
}
OAR_REGISTER_KERNEL("edit_distance", OAR_PLACE_CPU, OAR_INT64, edit_distance_k)

/* ---- sequence_erase ----------------------------------------------------------- */
#define SEQ_ERASE_KERNEL(NAME, T_, DT)                                                                  \
    static int NAME(oar_kernel_ctx_t *k)                                                                \
    {                                                                                                   \
        const oar_sequence_erase_attrs_t *a = oar_k_attrs(k);                                           \
        const oar_tensor_t *x = oar_k_input(k, OAR_SEQUENCE_ERASE_X, 0);                                \
        if (!x) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input X has no value");                       \
        const int64_t *xo;                                                                              \
        int64_t ns;                                                                                     \
        OAR_TRY(lod_last(k, OAR_SEQUENCE_ERASE_X, "X", x, &xo, &ns));                                   \
        const int64_t N = x->dims[0];                                                                   \
        const T_ *xv = oar_tensor_data((oar_tensor_t *)x);                                              \
        T_ *tmp = malloc(sizeof(T_) * (size_t)(N + 1));                                                 \
        int64_t *olod = malloc(sizeof(int64_t) * (size_t)(ns + 1));                                     \
        if (!tmp || !olod) { free(tmp); free(olod); return oar_k_error(k, OAR_ERR_NOMEM, "sequence_erase: out of memory"); } \
        int64_t m = 0;                                                                                  \
        olod[0] = 0;                                                                                    \
        for (int64_t s = 0; s < ns; s++) {                                                              \
            for (int64_t i = xo[s]; i < xo[s + 1]; i++) {                                               \
                bool drop = false;                                                                      \
                for (int j = 0; j < a->tokens.n && !drop; j++) drop = xv[i] == (T_)a->tokens.v[j];     \
                if (!drop) tmp[m++] = xv[i];                                                            \
            }                                                                                           \
            olod[s + 1] = m;                                                                            \
        }                                                                                               \
        int64_t od[2] = { m, 1 };                                                                       \
        T_ *o = oar_k_output_resized(k, OAR_SEQUENCE_ERASE_OUT, od, 2, DT);                             \
        int rc = OAR_OK;                                                                                \
        if (!o && m > 0) rc = OAR_ERR_NOMEM;                                                            \
        else {                                                                                          \
            if (m > 0) memcpy(o, tmp, sizeof(T_) * (size_t)m);                                          \
            const int64_t *lv[OAR_MAX_LOD];                                                             \
            int64_t sz[OAR_MAX_LOD];                                                                    \
            int L = x->lod_levels;                                                                      \
            for (int l = 0; l + 1 < L; l++) lv[l] = x->lod[l], sz[l] = x->lod_size[l];                  \
            lv[L - 1] = olod, sz[L - 1] = ns + 1;                                                       \
            rc = oar_tensor_set_lod(oar_k_output(k, OAR_SEQUENCE_ERASE_OUT, 0), L, lv, sz);             \
            if (rc != OAR_OK) rc = oar_k_error(k, rc, "cannot set Out's LoD: %s", oar_last_error());    \
        }                                                                                               \
        free(tmp); free(olod);                                                                          \
        return rc;                                                                                      \
    }                                                                                                   \
    OAR_REGISTER_KERNEL("sequence_erase", OAR_PLACE_CPU, DT, NAME)

SEQ_ERASE_KERNEL(sequence_erase_i32, int32_t, OAR_INT32)
SEQ_ERASE_KERNEL(sequence_erase_i64, int64_t, OAR_INT64)
