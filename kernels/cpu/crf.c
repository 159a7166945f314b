/* crf.c — CPU kernels of linear_chain_crf (+ grad), crf_decoding and
 * chunk_eval (declared in src/ops/crf.ops).
 *
 * The CRF works as Fluid's does, so that Alpha, EmissionExps and
 * TransitionExps match it: EmissionExps = exp(x - row max), each forward
 * vector scaled to sum 1 (the scale goes into log Z), and the gradient built
 * from node and edge marginals of the scaled forward and backward vectors.
 * Sums run in double for both dtypes. */
#include <math.h>
#include <string.h>
#include "op.h"
#include "ops/crf.h"
#include "ops/seq_lod.h"
#include "scratch.h"

static const char *nm(const char *s) { return s ? s : "?"; }

/* where each sequence's rows are: a LoD's offsets, or padded rows of T with
 * Length */
typedef struct {
    int64_t nseq, tmax, rows;
    const int64_t *offs, *len;
} layout_t;

static inline int64_t seq_start(const layout_t *l, int64_t s) { return l->len ? s * l->tmax : l->offs[s]; }
static inline int64_t seq_len(const layout_t *l, int64_t s) { return l->len ? l->len[s] : l->offs[s + 1] - l->offs[s]; }

/* e: the emission-shaped input of slot se ([N, D] with a LoD, or [B, T, D]
 * with the Length input of slot sl) */
static int get_layout(oar_kernel_ctx_t *k, int se, int sl, const char *ename, const char *lname, const oar_tensor_t *e,
                      layout_t *l)
{
    memset(l, 0, sizeof *l);
    const oar_tensor_t *len = oar_k_input(k, sl, 0);
    if (len) {
        if (e->ndim != 3) return oar_k_error(k, OAR_ERR_SHAPE, "%s must be [B, T, D] with %s", ename, lname);
        if (len->dtype != OAR_INT64 || oar_tensor_numel_of(len) != e->dims[0])
            return oar_k_error(k, OAR_ERR_SHAPE, "%s '%s' must be int64 with %lld values (Emission's batch)", lname,
                               nm(oar_k_input_name(k, sl, 0)), (long long)e->dims[0]);
        l->nseq = e->dims[0];
        l->tmax = e->dims[1];
        l->rows = l->nseq * l->tmax;
        l->len = oar_tensor_data((oar_tensor_t *)len);
        for (int64_t s = 0; s < l->nseq; s++)
            if (l->len[s] < 0 || l->len[s] > l->tmax)
                return oar_k_error(k, OAR_ERR_RANGE, "%s '%s'[%lld] is %lld; lengths must be in 0..%lld (T)", lname,
                                   nm(oar_k_input_name(k, sl, 0)), (long long)s, (long long)l->len[s],
                                   (long long)l->tmax);
        return OAR_OK;
    }
    int64_t n;
    OAR_TRY(oar_seq_lod_last(k, se, ename, e, &l->offs, &n));
    l->nseq = n - 1;
    l->rows = e->ndim > 0 ? e->dims[0] : 0;
    for (int64_t s = 0; s < l->nseq; s++) {
        int64_t ls = seq_len(l, s);
        if (ls > l->tmax) l->tmax = ls;
    }
    return OAR_OK;
}

/* every label of every sequence must be a tag 0..D-1 */
static int check_labels(oar_kernel_ctx_t *k, int slot, const oar_tensor_t *lbl, const layout_t *l, int64_t d)
{
    if (lbl->dtype != OAR_INT64 || oar_tensor_numel_of(lbl) != l->rows)
        return oar_k_error(k, OAR_ERR_SHAPE, "Label '%s' must be int64 with %lld values (one per row of Emission)",
                           nm(oar_k_input_name(k, slot, 0)), (long long)l->rows);
    const int64_t *lv = oar_tensor_data((oar_tensor_t *)lbl);
    for (int64_t s = 0; s < l->nseq; s++)
        for (int64_t r = seq_start(l, s), e = r + seq_len(l, s); r < e; r++)
            if (lv[r] < 0 || lv[r] >= d)
                return oar_k_error(k, OAR_ERR_RANGE, "Label '%s' holds %lld at row %lld; tags are 0..%lld (D = %lld)",
                                   nm(oar_k_input_name(k, slot, 0)), (long long)lv[r], (long long)r,
                                   (long long)(d - 1), (long long)d);
    return OAR_OK;
}

/* Emission [rows, D] and Transition [(D + 2), D] agree (inference checked
 * the declared shapes; fed tensors are checked here again) */
static int check_et(oar_kernel_ctx_t *k, const oar_tensor_t *e, const oar_tensor_t *t, int64_t *d)
{
    if (t->ndim != 2 || t->dims[0] != t->dims[1] + 2 || e->ndim < 2 || e->dims[e->ndim - 1] != t->dims[1])
        return oar_k_error(k, OAR_ERR_SHAPE, "Transition must be [(D + 2), D] and Emission's last dim D");
    if (e->dtype != t->dtype)
        return oar_k_error(k, OAR_ERR_DTYPE, "Emission is %s but Transition is %s", nm(oar_dtype_name(e->dtype)),
                           nm(oar_dtype_name(t->dtype)));
    *d = t->dims[1];
    return OAR_OK;
}

static double norm1(double *v, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += v[i];
    for (int64_t i = 0; i < n; i++) v[i] /= s;
    return s;
}

#define CRF_KERNELS(SUF, T, DT)                                                                                       \
    static int crf_fwd_##SUF(oar_kernel_ctx_t *k)                                                                     \
    {                                                                                                                 \
        oar_tensor_t *e = oar_k_input(k, OAR_CRF_EMISSION, 0), *t = oar_k_input(k, OAR_CRF_TRANSITION, 0);            \
        oar_tensor_t *lbl = oar_k_input(k, OAR_CRF_LABEL, 0);                                                         \
        if (!e || !t || !lbl) return oar_k_error(k, OAR_ERR_NOT_FOUND, "Emission, Transition and Label are required"); \
        int64_t d;                                                                                                    \
        layout_t l;                                                                                                   \
        OAR_TRY(check_et(k, e, t, &d));                                                                               \
        OAR_TRY(get_layout(k, OAR_CRF_EMISSION, OAR_CRF_LENGTH, "Emission", "Length", e, &l));                        \
        OAR_TRY(check_labels(k, OAR_CRF_LABEL, lbl, &l, d));                                                          \
        void *pa, *pe, *pt, *pl;                                                                                      \
        OAR_TRY(oar_k_output_sized(k, OAR_CRF_ALPHA, "Alpha", DT, l.rows * d, false, &pa));                           \
        OAR_TRY(oar_k_output_sized(k, OAR_CRF_EMISSIONEXPS, "EmissionExps", DT, l.rows * d, false, &pe));             \
        OAR_TRY(oar_k_output_sized(k, OAR_CRF_TRANSITIONEXPS, "TransitionExps", DT, (d + 2) * d, false, &pt));        \
        OAR_TRY(oar_k_output_sized(k, OAR_CRF_LOGLIKELIHOOD, "LogLikelihood", DT, l.nseq, false, &pl));               \
        const T *x = oar_tensor_data(e), *w = oar_tensor_data(t);                                                     \
        const int64_t *lv = oar_tensor_data(lbl);                                                                     \
        T *alpha = pa, *xe = pe, *we = pt, *ll = pl;                                                                  \
        for (int64_t i = 0; i < (d + 2) * d; i++) we[i] = (T)exp((double)w[i]);                                      \
        for (int64_t r = 0; r < l.rows; r++) { /* padding rows too, as Fluid's */                                    \
            T mx = x[r * d];                                                                                          \
            for (int64_t i = 1; i < d; i++) mx = x[r * d + i] > mx ? x[r * d + i] : mx;                               \
            for (int64_t i = 0; i < d; i++) xe[r * d + i] = (T)exp((double)(x[r * d + i] - mx));                      \
        }                                                                                                             \
        if (l.rows * d > 0) memset(alpha, 0, sizeof(T) * (size_t)(l.rows * d));                                       \
        double *cur = oar_scratch_alloc(sizeof(double) * (size_t)(2 * d + 1)), *prev = cur + d;                       \
        if (!cur) return oar_k_error(k, OAR_ERR_NOMEM, "no memory for %lld tags", (long long)d);                     \
        for (int64_t s = 0; s < l.nseq; s++) {                                                                        \
            const int64_t st = seq_start(&l, s), n = seq_len(&l, s);                                                  \
            if (n == 0) { ll[s] = 0; continue; } /* an empty sequence costs 0, as Fluid's */                         \
            double logz = 0;                                                                                          \
            for (int64_t kk = 0; kk < n; kk++) {                                                                      \
                const int64_t r = st + kk;                                                                            \
                T mx = x[r * d];                                                                                      \
                for (int64_t i = 1; i < d; i++) mx = x[r * d + i] > mx ? x[r * d + i] : mx;                           \
                for (int64_t i = 0; i < d; i++) {                                                                     \
                    double acc = 0;                                                                                   \
                    if (kk == 0) acc = we[i];                                                                         \
                    else                                                                                              \
                        for (int64_t j = 0; j < d; j++) acc += prev[j] * we[(j + 2) * d + i];                         \
                    cur[i] = acc * xe[r * d + i];                                                                     \
                }                                                                                                     \
                logz += (double)mx + log(norm1(cur, d));                                                              \
                for (int64_t i = 0; i < d; i++) { alpha[r * d + i] = (T)cur[i]; prev[i] = cur[i]; }                   \
            }                                                                                                         \
            double endsum = 0;                                                                                        \
            for (int64_t i = 0; i < d; i++) endsum += prev[i] * we[d + i];                                            \
            logz += log(endsum);                                                                                      \
            const int64_t *y = lv + st;                                                                               \
            double score = (double)w[y[0]] + (double)w[d + y[n - 1]];                                                 \
            for (int64_t kk = 0; kk < n; kk++) {                                                                      \
                score += x[(st + kk) * d + y[kk]];                                                                    \
                if (kk > 0) score += w[(y[kk - 1] + 2) * d + y[kk]];                                                  \
            }                                                                                                         \
            ll[s] = (T)(logz - score);                                                                                \
        }                                                                                                             \
        oar_scratch_free(cur);                                                                                        \
        return OAR_OK;                                                                                                \
    }                                                                                                                 \
    static int crf_bwd_##SUF(oar_kernel_ctx_t *k)                                                                     \
    {                                                                                                                 \
        oar_tensor_t *e = oar_k_input(k, OAR_CRF_G_EMISSION, 0), *t = oar_k_input(k, OAR_CRF_G_TRANSITION, 0);        \
        oar_tensor_t *lbl = oar_k_input(k, OAR_CRF_G_LABEL, 0), *ta = oar_k_input(k, OAR_CRF_G_ALPHA, 0);             \
        oar_tensor_t *txe = oar_k_input(k, OAR_CRF_G_EMISSIONEXPS, 0), *twe = oar_k_input(k, OAR_CRF_G_TRANSITIONEXPS, 0); \
        oar_tensor_t *tg = oar_k_input(k, OAR_CRF_G_DLL, 0);                                                          \
        if (!e || !t || !lbl || !ta || !txe || !twe || !tg)                                                           \
            return oar_k_error(k, OAR_ERR_NOT_FOUND, "an input of the forward is missing");                           \
        int64_t d;                                                                                                    \
        layout_t l;                                                                                                   \
        OAR_TRY(check_et(k, e, t, &d));                                                                               \
        OAR_TRY(get_layout(k, OAR_CRF_G_EMISSION, OAR_CRF_G_LENGTH, "Emission", "Length", e, &l));                    \
        OAR_TRY(check_labels(k, OAR_CRF_G_LABEL, lbl, &l, d));                                                        \
        if (oar_tensor_numel_of(ta) != l.rows * d || oar_tensor_numel_of(txe) != l.rows * d ||                        \
            oar_tensor_numel_of(twe) != (d + 2) * d || oar_tensor_numel_of(tg) != l.nseq)                             \
            return oar_k_error(k, OAR_ERR_SHAPE, "Alpha, EmissionExps, TransitionExps or LogLikelihood@GRAD does "    \
                               "not match Emission (%lld sequences)", (long long)l.nseq);                             \
        void *pde, *pdt;                                                                                              \
        OAR_TRY(oar_k_output_sized(k, OAR_CRF_G_DEMISSION, "Emission@GRAD", DT, l.rows * d, true, &pde));            \
        OAR_TRY(oar_k_output_sized(k, OAR_CRF_G_DTRANSITION, "Transition@GRAD", DT, (d + 2) * d, true, &pdt));        \
        T *de = pde, *dw = pdt;                                                                                       \
        if (de && l.rows * d > 0) memset(de, 0, sizeof(T) * (size_t)(l.rows * d));                                    \
        if (dw) memset(dw, 0, sizeof(T) * (size_t)((d + 2) * d));                                                     \
        if (!de && !dw) return OAR_OK;                                                                                \
        const T *alpha = oar_tensor_data(ta), *xe = oar_tensor_data(txe), *we = oar_tensor_data(twe);                 \
        const T *g = oar_tensor_data(tg);                                                                             \
        const int64_t *lv = oar_tensor_data(lbl);                                                                     \
        double *beta = oar_scratch_alloc(sizeof(double) * (size_t)((l.tmax + 2) * d + 1)), *m = beta + l.tmax * d;    \
        double *tmp = m + d;                                                                                          \
        if (!beta) return oar_k_error(k, OAR_ERR_NOMEM, "no memory for %lld x %lld", (long long)l.tmax, (long long)d); \
        for (int64_t s = 0; s < l.nseq; s++) {                                                                        \
            const int64_t st = seq_start(&l, s), n = seq_len(&l, s);                                                  \
            if (n == 0) continue;                                                                                     \
            const double gs = (double)g[s];                                                                           \
            const int64_t *y = lv + st;                                                                               \
            const T *a = alpha + st * d, *xs = xe + st * d;                                                           \
            /* the backward vectors, scaled like the forward ones */                                                 \
            for (int64_t i = 0; i < d; i++) beta[(n - 1) * d + i] = we[d + i];                                       \
            norm1(beta + (n - 1) * d, d);                                                                             \
            for (int64_t kk = n - 2; kk >= 0; kk--) {                                                                 \
                for (int64_t i = 0; i < d; i++) {                                                                     \
                    double acc = 0;                                                                                   \
                    for (int64_t j = 0; j < d; j++)                                                                   \
                        acc += we[(i + 2) * d + j] * xs[(kk + 1) * d + j] * beta[(kk + 1) * d + j];                   \
                    beta[kk * d + i] = acc;                                                                           \
                }                                                                                                     \
                norm1(beta + kk * d, d);                                                                              \
            }                                                                                                         \
            /* node marginals: d(-log P)/dx = P(y_k = i) - [label_k = i] */                                          \
            for (int64_t kk = 0; kk < n; kk++) {                                                                      \
                for (int64_t i = 0; i < d; i++) m[i] = (double)a[kk * d + i] * beta[kk * d + i];                      \
                norm1(m, d);                                                                                          \
                for (int64_t i = 0; i < d; i++) {                                                                     \
                    const double gi = gs * (m[i] - (y[kk] == i ? 1.0 : 0.0));                                         \
                    if (de) de[(st + kk) * d + i] = (T)gi;                                                            \
                    if (dw && kk == 0) dw[i] += (T)gi;                                                                \
                    if (dw && kk == n - 1) dw[d + i] += (T)gi;                                                        \
                }                                                                                                     \
            }                                                                                                         \
            if (!dw) continue;                                                                                        \
            /* edge marginals P(y_{k-1} = i, y_k = j) */                                                             \
            for (int64_t kk = 1; kk < n; kk++) {                                                                      \
                for (int64_t j = 0; j < d; j++) tmp[j] = (double)xs[kk * d + j] * beta[kk * d + j];                   \
                double z = 0;                                                                                         \
                for (int64_t i = 0; i < d; i++)                                                                       \
                    for (int64_t j = 0; j < d; j++) z += (double)a[(kk - 1) * d + i] * we[(i + 2) * d + j] * tmp[j];  \
                for (int64_t i = 0; i < d; i++)                                                                       \
                    for (int64_t j = 0; j < d; j++)                                                                   \
                        dw[(i + 2) * d + j] +=                                                                        \
                            (T)(gs * (double)a[(kk - 1) * d + i] * we[(i + 2) * d + j] * tmp[j] / z);                 \
                dw[(y[kk - 1] + 2) * d + y[kk]] -= (T)gs;                                                             \
            }                                                                                                         \
        }                                                                                                             \
        oar_scratch_free(beta);                                                                                       \
        return OAR_OK;                                                                                                \
    }                                                                                                                 \
    static int crfdec_##SUF(oar_kernel_ctx_t *k)                                                                      \
    {                                                                                                                 \
        oar_tensor_t *e = oar_k_input(k, OAR_CRFDEC_EMISSION, 0), *t = oar_k_input(k, OAR_CRFDEC_TRANSITION, 0);      \
        oar_tensor_t *lbl = oar_k_input(k, OAR_CRFDEC_LABEL, 0);                                                      \
        if (!e || !t) return oar_k_error(k, OAR_ERR_NOT_FOUND, "Emission and Transition are required");              \
        int64_t d;                                                                                                    \
        layout_t l;                                                                                                   \
        OAR_TRY(check_et(k, e, t, &d));                                                                               \
        OAR_TRY(get_layout(k, OAR_CRFDEC_EMISSION, OAR_CRFDEC_LENGTH, "Emission", "Length", e, &l));                  \
        if (lbl && (lbl->dtype != OAR_INT64 || oar_tensor_numel_of(lbl) != l.rows))                                   \
            return oar_k_error(k, OAR_ERR_SHAPE, "Label '%s' must be int64 with %lld values (one per row of "         \
                               "Emission)", nm(oar_k_input_name(k, OAR_CRFDEC_LABEL, 0)), (long long)l.rows);         \
        void *pp;                                                                                                     \
        OAR_TRY(oar_k_output_sized(k, OAR_CRFDEC_VITERBIPATH, "ViterbiPath", OAR_INT64, l.rows, false, &pp));         \
        int64_t *path = pp;                                                                                           \
        if (l.rows > 0) memset(path, 0, sizeof(int64_t) * (size_t)l.rows);                                            \
        const T *x = oar_tensor_data(e), *w = oar_tensor_data(t);                                                     \
        T *score = oar_scratch_alloc(sizeof(T) * (size_t)(l.tmax * d + 1));                                           \
        int64_t *track = oar_scratch_alloc(sizeof(int64_t) * (size_t)(l.tmax * d + 1));                               \
        if (!score || !track) {                                                                                       \
            oar_scratch_free(score);                                                                                  \
            oar_scratch_free(track);                                                                                  \
            return oar_k_error(k, OAR_ERR_NOMEM, "no memory for %lld x %lld", (long long)l.tmax, (long long)d);       \
        }                                                                                                             \
        for (int64_t s = 0; s < l.nseq; s++) {                                                                        \
            const int64_t st = seq_start(&l, s), n = seq_len(&l, s);                                                  \
            if (n == 0) continue;                                                                                     \
            const T *xs = x + st * d;                                                                                 \
            for (int64_t i = 0; i < d; i++) score[i] = w[i] + xs[i];                                                  \
            for (int64_t kk = 1; kk < n; kk++)                                                                        \
                for (int64_t i = 0; i < d; i++) {                                                                     \
                    T best = 0;                                                                                       \
                    int64_t arg = 0;                                                                                  \
                    for (int64_t j = 0; j < d; j++) { /* strict >: ties keep the lowest tag */                       \
                        T v = score[(kk - 1) * d + j] + w[(j + 2) * d + i];                                           \
                        if (j == 0 || v > best) { best = v; arg = j; }                                                \
                    }                                                                                                 \
                    score[kk * d + i] = best + xs[kk * d + i];                                                        \
                    track[kk * d + i] = arg;                                                                          \
                }                                                                                                     \
            T best = 0;                                                                                               \
            int64_t arg = 0;                                                                                          \
            for (int64_t i = 0; i < d; i++) {                                                                         \
                T v = score[(n - 1) * d + i] + w[d + i];                                                              \
                if (i == 0 || v > best) { best = v; arg = i; }                                                        \
            }                                                                                                         \
            path[st + n - 1] = arg;                                                                                   \
            for (int64_t kk = n - 1; kk > 0; kk--) path[st + kk - 1] = arg = track[kk * d + arg];                     \
            if (lbl) {                                                                                                \
                const int64_t *lv = oar_tensor_data(lbl);                                                             \
                for (int64_t r = st; r < st + n; r++) path[r] = lv[r] == path[r] ? 1 : 0;                             \
            }                                                                                                         \
        }                                                                                                             \
        oar_scratch_free(score);                                                                                      \
        oar_scratch_free(track);                                                                                      \
        return OAR_OK;                                                                                                \
    }                                                                                                                 \
    OAR_REGISTER_KERNEL("linear_chain_crf", OAR_PLACE_CPU, DT, crf_fwd_##SUF)                                         \
    OAR_REGISTER_KERNEL("linear_chain_crf_grad", OAR_PLACE_CPU, DT, crf_bwd_##SUF)                                    \
    OAR_REGISTER_KERNEL("crf_decoding", OAR_PLACE_CPU, DT, crfdec_##SUF)

CRF_KERNELS(f32, float, OAR_FP32)
CRF_KERNELS(f64, double, OAR_FP64)

/* ---- chunk_eval ------------------------------------------------------------ */

typedef struct { int64_t begin, end, type; } segment_t;

typedef struct {
    int64_t ntag, other;                     /* position tags per type; the outside type */
    int begin, inside, end, single;          /* position tag ids, -1 when the scheme has none */
} scheme_t;

static bool chunk_end(const scheme_t *c, int64_t ptag, int64_t ptype, int64_t tag, int64_t type)
{
    if (ptype == c->other) return false;
    if (type == c->other || type != ptype) return true;
    if (ptag == c->begin || ptag == c->inside) return tag == c->begin || tag == c->single;
    return ptag == c->end || ptag == c->single;
}

static bool chunk_begin(const scheme_t *c, int64_t ptag, int64_t ptype, int64_t tag, int64_t type)
{
    if (ptype == c->other) return type != c->other;
    if (type == c->other) return false;
    if (type != ptype || tag == c->begin || tag == c->single) return true;
    if (tag == c->inside || tag == c->end) return ptag == c->end || ptag == c->single;
    return false;
}

/* the chunks of one sequence; tags are checked to be in 0..ntag*other */
static int segments(oar_kernel_ctx_t *k, int slot, const scheme_t *c, const int64_t *v, int64_t n, int64_t row0,
                    segment_t *out, int64_t *nout)
{
    int64_t cnt = 0, start = 0, tag = -1, type = c->other;
    bool in = false;
    for (int64_t i = 0; i < n; i++) {
        if (v[i] < 0 || v[i] > c->ntag * c->other)
            return oar_k_error(k, OAR_ERR_RANGE, "%s '%s' holds %lld at row %lld; tags are 0..%lld "
                               "(num_chunk_types x position tags, then the outside tag)",
                               nm(oar_k_input_slot_name(k, slot)), nm(oar_k_input_name(k, slot, 0)),
                               (long long)v[i], (long long)(row0 + i), (long long)(c->ntag * c->other));
        int64_t ptag = tag, ptype = type;
        tag = v[i] % c->ntag;
        type = v[i] / c->ntag;
        if (in && chunk_end(c, ptag, ptype, tag, type)) {
            out[cnt++] = (segment_t){start, i - 1, ptype};
            in = false;
        }
        if (chunk_begin(c, ptag, ptype, tag, type)) {
            start = i;
            in = true;
        }
    }
    if (in) out[cnt++] = (segment_t){start, n - 1, type};
    *nout = cnt;
    return OAR_OK;
}

static bool excluded(const oar_chunk_attrs_t *a, int64_t type)
{
    for (int i = 0; i < a->excluded_chunk_types.n; i++)
        if (a->excluded_chunk_types.v[i] == type) return true;
    return false;
}

static int chunk_eval_i64(oar_kernel_ctx_t *k)
{
    const oar_chunk_attrs_t *a = oar_k_attrs(k);
    oar_tensor_t *inf = oar_k_input(k, OAR_CHUNK_INFERENCE, 0), *lbl = oar_k_input(k, OAR_CHUNK_LABEL, 0);
    oar_tensor_t *sl = oar_k_input(k, OAR_CHUNK_SEQLENGTH, 0);
    if (!a || !inf || !lbl) return oar_k_error(k, OAR_ERR_NOT_FOUND, "Inference and Label are required");
    if (inf->dtype != OAR_INT64 || lbl->dtype != OAR_INT64 || oar_tensor_numel_of(inf) != oar_tensor_numel_of(lbl))
        return oar_k_error(k, OAR_ERR_SHAPE, "Inference and Label must be int64 of the same shape");
    static const scheme_t schemes[] = {
        [OAR_CHUNK_CHUNK_SCHEME_IOB] = {2, 0, 0, 1, -1, -1},
        [OAR_CHUNK_CHUNK_SCHEME_IOE] = {2, 0, -1, 0, 1, -1},
        [OAR_CHUNK_CHUNK_SCHEME_IOBES] = {4, 0, 0, 1, 2, 3},
        [OAR_CHUNK_CHUNK_SCHEME_PLAIN] = {1, 0, -1, -1, -1, -1},
    };
    scheme_t c = schemes[a->chunk_scheme];
    c.other = a->num_chunk_types;
    layout_t l;
    memset(&l, 0, sizeof l);
    if (sl) {
        l.nseq = inf->ndim > 0 ? inf->dims[0] : 0;
        l.tmax = inf->ndim > 1 ? inf->dims[1] : 0;
        l.rows = l.nseq * l.tmax;
        if (sl->dtype != OAR_INT64 || oar_tensor_numel_of(sl) != l.nseq)
            return oar_k_error(k, OAR_ERR_SHAPE, "SeqLength '%s' must be int64 with %lld values",
                               nm(oar_k_input_name(k, OAR_CHUNK_SEQLENGTH, 0)), (long long)l.nseq);
        l.len = oar_tensor_data(sl);
        for (int64_t s = 0; s < l.nseq; s++)
            if (l.len[s] < 0 || l.len[s] > l.tmax)
                return oar_k_error(k, OAR_ERR_RANGE, "SeqLength '%s'[%lld] is %lld; lengths must be in 0..%lld",
                                   nm(oar_k_input_name(k, OAR_CHUNK_SEQLENGTH, 0)), (long long)s,
                                   (long long)l.len[s], (long long)l.tmax);
    } else {
        const int64_t *lo;
        int64_t n, ln;
        OAR_TRY(oar_seq_lod_last(k, OAR_CHUNK_INFERENCE, "Inference", inf, &l.offs, &n));
        OAR_TRY(oar_seq_lod_last(k, OAR_CHUNK_LABEL, "Label", lbl, &lo, &ln));
        if (ln != n || memcmp(lo, l.offs, sizeof(int64_t) * (size_t)n) != 0)
            return oar_k_error(k, OAR_ERR_SHAPE, "Label '%s' and Inference '%s' must have the same LoD",
                               nm(oar_k_input_name(k, OAR_CHUNK_LABEL, 0)),
                               nm(oar_k_input_name(k, OAR_CHUNK_INFERENCE, 0)));
        l.nseq = n - 1;
        l.rows = inf->ndim > 0 ? inf->dims[0] : 0;
        for (int64_t s = 0; s < l.nseq; s++)
            if (seq_len(&l, s) > l.tmax) l.tmax = seq_len(&l, s);
    }
    segment_t *si = oar_scratch_alloc(sizeof(segment_t) * (size_t)(2 * l.tmax + 1)), *sg = si + l.tmax;
    if (!si) return oar_k_error(k, OAR_ERR_NOMEM, "no memory for sequences of %lld", (long long)l.tmax);
    const int64_t *iv = oar_tensor_data(inf), *lv = oar_tensor_data(lbl);
    int64_t ninf = 0, nlab = 0, ncor = 0;
    int rc = OAR_OK;
    for (int64_t s = 0; s < l.nseq && rc == OAR_OK; s++) {
        const int64_t st = seq_start(&l, s), n = seq_len(&l, s);
        int64_t ni, nl;
        rc = segments(k, OAR_CHUNK_INFERENCE, &c, iv + st, n, st, si, &ni);
        if (rc == OAR_OK) rc = segments(k, OAR_CHUNK_LABEL, &c, lv + st, n, st, sg, &nl);
        if (rc != OAR_OK) break;
        /* both lists are ordered by end: walk them together */
        for (int64_t i = 0, j = 0; i < ni && j < nl;) {
            if (si[i].begin == sg[j].begin && si[i].end == sg[j].end && si[i].type == sg[j].type &&
                !excluded(a, si[i].type))
                ncor++;
            if (si[i].end < sg[j].end) i++;
            else if (si[i].end > sg[j].end) j++;
            else { i++; j++; }
        }
        for (int64_t i = 0; i < ni; i++) ninf += !excluded(a, si[i].type);
        for (int64_t j = 0; j < nl; j++) nlab += !excluded(a, sg[j].type);
    }
    oar_scratch_free(si);
    OAR_TRY(rc);
    void *pp, *pr, *pf, *pi, *pl, *pc;
    OAR_TRY(oar_k_output_sized(k, OAR_CHUNK_PRECISION, "Precision", OAR_FP32, 1, false, &pp));
    OAR_TRY(oar_k_output_sized(k, OAR_CHUNK_RECALL, "Recall", OAR_FP32, 1, false, &pr));
    OAR_TRY(oar_k_output_sized(k, OAR_CHUNK_F1, "F1-Score", OAR_FP32, 1, false, &pf));
    OAR_TRY(oar_k_output_sized(k, OAR_CHUNK_NUMINFERCHUNKS, "NumInferChunks", OAR_INT64, 1, false, &pi));
    OAR_TRY(oar_k_output_sized(k, OAR_CHUNK_NUMLABELCHUNKS, "NumLabelChunks", OAR_INT64, 1, false, &pl));
    OAR_TRY(oar_k_output_sized(k, OAR_CHUNK_NUMCORRECTCHUNKS, "NumCorrectChunks", OAR_INT64, 1, false, &pc));
    /* in float, as Fluid's kernel computes them */
    float p = ninf ? (float)ncor / (float)ninf : 0.0f, r = nlab ? (float)ncor / (float)nlab : 0.0f;
    *(float *)pp = p;
    *(float *)pr = r;
    *(float *)pf = ncor ? 2 * p * r / (p + r) : 0.0f;
    *(int64_t *)pi = ninf;
    *(int64_t *)pl = nlab;
    *(int64_t *)pc = ncor;
    return OAR_OK;
}

OAR_REGISTER_KERNEL("chunk_eval", OAR_PLACE_CPU, OAR_INT64, chunk_eval_i64)
