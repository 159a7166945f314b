/* nce.c — CPU kernels of nce and nce_grad (declared in src/ops/sampling.ops).
 *
 * As Fluid 1.8's: SampleLabels holds each row's true classes then its
 * num_neg_samples negatives (drawn per row, or custom_neg_classes);
 * SampleLogits is the sigmoid o of each sampled class's logit; with
 * b = num_neg_samples * P(class), a true class costs -log(o / (o + b)) and a
 * negative one -log(b / (o + b)). The grad reads the forward's samples and
 * asks the sampler only for probabilities. Sums run in double. */
#include <math.h>
#include <limits.h>
#include <string.h>
#include "op.h"
#include "ops/sampling.h"
#include "sampler.h"
#include "scratch.h"

static const char *nm(const char *s) { return s ? s : "?"; }

typedef struct {
    const oar_tensor_t *x, *label, *w, *bias, *sw;
    int64_t n, d, k, t, m; /* rows, width, classes, true classes, columns (t + negatives) */
    smp_t smp;
} nce_args_t;

/* the inputs both kernels read (slot indices are shared: the grad op
 * declares the forward's inputs first, in the same order) */
static int nce_args(oar_kernel_ctx_t *k, nce_args_t *a, int dt)
{
    const oar_nce_attrs_t *at = oar_k_attrs(k);
    memset(a, 0, sizeof *a);
    a->x = oar_k_input(k, OAR_NCE_INPUT, 0);
    a->label = oar_k_input(k, OAR_NCE_LABEL, 0);
    a->w = oar_k_input(k, OAR_NCE_WEIGHT, 0);
    a->bias = oar_k_input(k, OAR_NCE_BIAS, 0);
    a->sw = oar_k_input(k, OAR_NCE_SAMPLEWEIGHT, 0);
    if (!a->x || !a->label || !a->w) return oar_k_error(k, OAR_ERR_NOT_FOUND, "Input, Label and Weight are required");
    if (a->x->ndim != 2 || a->w->ndim != 2 || a->x->dims[1] != a->w->dims[1] || a->x->dtype != dt ||
        a->w->dtype != dt)
        return oar_k_error(k, OAR_ERR_SHAPE, "Input [N, D] and Weight [K, D] must agree in D and dtype");
    a->n = a->x->dims[0];
    a->d = a->x->dims[1];
    a->k = a->w->dims[0];
    if (a->k != at->num_total_classes)
        return oar_k_error(k, OAR_ERR_SHAPE, "Weight '%s' has %lld rows; num_total_classes is %d",
                           nm(oar_k_input_name(k, OAR_NCE_WEIGHT, 0)), (long long)a->k, at->num_total_classes);
    if (a->label->dtype != OAR_INT64 || a->label->ndim < 1 || a->label->dims[0] != a->n)
        return oar_k_error(k, OAR_ERR_SHAPE, "Label '%s' must be int64 [N, T] with N = %lld",
                           nm(oar_k_input_name(k, OAR_NCE_LABEL, 0)), (long long)a->n);
    a->t = a->n > 0 ? oar_tensor_numel_of(a->label) / a->n : (a->label->ndim == 2 ? a->label->dims[1] : 1);
    a->m = a->t + at->num_neg_samples;
    if (a->bias && (oar_tensor_numel_of(a->bias) != a->k || a->bias->dtype != dt))
        return oar_k_error(k, OAR_ERR_SHAPE, "Bias '%s' must hold %lld values of Input's dtype",
                           nm(oar_k_input_name(k, OAR_NCE_BIAS, 0)), (long long)a->k);
    if (a->sw && (oar_tensor_numel_of(a->sw) != a->n || a->sw->dtype != dt))
        return oar_k_error(k, OAR_ERR_SHAPE, "SampleWeight '%s' must hold %lld values of Input's dtype",
                           nm(oar_k_input_name(k, OAR_NCE_SAMPLEWEIGHT, 0)), (long long)a->n);
    smp_init(&a->smp, at->sampler, a->k, at->seed);
    if (at->sampler == SMP_CUSTOM)
        OAR_TRY(smp_set_custom(k, &a->smp, oar_k_input(k, OAR_NCE_CUSTOMDISTPROBS, 0),
                               oar_k_input(k, OAR_NCE_CUSTOMDISTALIAS, 0),
                               oar_k_input(k, OAR_NCE_CUSTOMDISTALIASPROBS, 0)));
    return OAR_OK;
}

/* every sampled class is in [0, K) */
static int check_classes(oar_kernel_ctx_t *k, const nce_args_t *a, const int64_t *cls, const char *what)
{
    for (int64_t i = 0; i < a->n * a->m; i++)
        if (cls[i] < 0 || cls[i] >= a->k)
            return oar_k_error(k, OAR_ERR_RANGE, "%s holds class %lld at row %lld; classes are 0..%lld", what,
                               (long long)cls[i], (long long)(i / a->m), (long long)(a->k - 1));
    return OAR_OK;
}

#define NCE_KERNELS(SUF, T, DT)                                                                                      \
    static int nce_fwd_##SUF(oar_kernel_ctx_t *k)                                                                    \
    {                                                                                                                \
        const oar_nce_attrs_t *at = oar_k_attrs(k);                                                                  \
        nce_args_t a;                                                                                                \
        OAR_TRY(nce_args(k, &a, DT));                                                                                \
        void *pc, *pl = NULL, *ps = NULL;                                                                            \
        OAR_TRY(oar_k_output_sized(k, OAR_NCE_COST, "Cost", DT, a.n, false, &pc));                                   \
        OAR_TRY(oar_k_output_sized(k, OAR_NCE_SAMPLELOGITS, "SampleLogits", DT, a.n * a.m, true, &pl));             \
        OAR_TRY(oar_k_output_sized(k, OAR_NCE_SAMPLELABELS, "SampleLabels", OAR_INT64, a.n * a.m, true, &ps));      \
        /* is_test may leave the samples out: they live in scratch then */                                         \
        void *scratch = NULL;                                                                                        \
        if (!pl || !ps) {                                                                                            \
            scratch = oar_scratch_alloc((sizeof(T) + sizeof(int64_t)) * (size_t)(a.n * a.m) + 1);                  \
            if (!scratch) return oar_k_error(k, OAR_ERR_NOMEM, "no memory for %lld samples", (long long)(a.n * a.m)); \
            if (!ps) ps = scratch;                                                                                   \
            if (!pl) pl = (char *)scratch + sizeof(int64_t) * (size_t)(a.n * a.m);                                   \
        }                                                                                                            \
        int64_t *cls = ps;                                                                                           \
        T *o = pl, *cost = pc;                                                                                       \
        const int64_t *lv = oar_tensor_data((oar_tensor_t *)a.label);                                                \
        for (int64_t i = 0; i < a.n; i++) {                                                                          \
            for (int64_t j = 0; j < a.t; j++) cls[i * a.m + j] = lv[i * a.t + j];                                    \
            for (int64_t j = a.t; j < a.m; j++)                                                                      \
                cls[i * a.m + j] = at->custom_neg_classes.n > 0 ? at->custom_neg_classes.v[j - a.t]                  \
                                                                : smp_draw(&a.smp);                                 \
        }                                                                                                            \
        int rc = check_classes(k, &a, cls, "Label");                                                                 \
        if (rc != OAR_OK) { oar_scratch_free(scratch); return rc; }                                                  \
        const T *x = oar_tensor_data((oar_tensor_t *)a.x), *w = oar_tensor_data((oar_tensor_t *)a.w);                \
        const T *b = a.bias ? oar_tensor_data((oar_tensor_t *)a.bias) : NULL;                                        \
        const T *sw = a.sw ? oar_tensor_data((oar_tensor_t *)a.sw) : NULL;                                           \
        for (int64_t i = 0; i < a.n; i++) {                                                                          \
            double c = 0;                                                                                            \
            for (int64_t j = 0; j < a.m; j++) {                                                                      \
                const int64_t id = cls[i * a.m + j];                                                                 \
                double z = b ? (double)b[id] : 0;                                                                    \
                for (int64_t e = 0; e < a.d; e++) z += (double)x[i * a.d + e] * (double)w[id * a.d + e];             \
                const double s = 1.0 / (1.0 + exp(-z)), q = smp_prob(&a.smp, id) * at->num_neg_samples;            \
                o[i * a.m + j] = (T)s;                                                                               \
                c += j < a.t ? -log(s / (s + q)) : -log(q / (s + q));                                                \
            }                                                                                                        \
            cost[i] = (T)((sw ? (double)sw[i] : 1.0) * c);                                                           \
        }                                                                                                            \
        oar_scratch_free(scratch);                                                                                   \
        return OAR_OK;                                                                                               \
    }                                                                                                                \
    static int nce_bwd_##SUF(oar_kernel_ctx_t *k)                                                                    \
    {                                                                                                                \
        const oar_nce_attrs_t *at = oar_k_attrs(k);                                                                  \
        nce_args_t a;                                                                                                \
        OAR_TRY(nce_args(k, &a, DT));                                                                                \
        const oar_tensor_t *tl = oar_k_input(k, OAR_NCE_G_SAMPLELOGITS, 0);                                         \
        const oar_tensor_t *ts = oar_k_input(k, OAR_NCE_G_SAMPLELABELS, 0), *tg = oar_k_input(k, OAR_NCE_G_DCOST, 0); \
        if (!tl || !ts || !tg || tl->dtype != DT || ts->dtype != OAR_INT64 || tg->dtype != DT ||                     \
            oar_tensor_numel_of(tl) != a.n * a.m || oar_tensor_numel_of(ts) != a.n * a.m ||                          \
            oar_tensor_numel_of(tg) != a.n)                                                                          \
            return oar_k_error(k, OAR_ERR_SHAPE, "SampleLogits, SampleLabels [%lld, %lld] and Cost@GRAD [%lld, 1] "  \
                               "must come from the forward", (long long)a.n, (long long)a.m, (long long)a.n);        \
        const int64_t *cls = oar_tensor_data((oar_tensor_t *)ts);                                                    \
        OAR_TRY(check_classes(k, &a, cls, "SampleLabels"));                                                          \
        const T *o = oar_tensor_data((oar_tensor_t *)tl), *g = oar_tensor_data((oar_tensor_t *)tg);                  \
        const T *x = oar_tensor_data((oar_tensor_t *)a.x), *w = oar_tensor_data((oar_tensor_t *)a.w);                \
        const T *sw = a.sw ? oar_tensor_data((oar_tensor_t *)a.sw) : NULL;                                           \
        /* d cost / d logit of each sample, then the rows it came from */                                           \
        const int64_t nm_ = a.n * a.m;                                                                               \
        double *dz = oar_scratch_alloc(sizeof(double) * (size_t)nm_ + sizeof(int64_t) * (size_t)nm_ + 1);            \
        if (!dz) return oar_k_error(k, OAR_ERR_NOMEM, "no memory for %lld samples", (long long)nm_);                 \
        int64_t *rows = (int64_t *)(dz + nm_);                                                                       \
        for (int64_t i = 0; i < nm_; i++) {                                                                          \
            const int64_t r = i / a.m;                                                                               \
            const double s = (double)o[i], q = smp_prob(&a.smp, cls[i]) * at->num_neg_samples;                      \
            const double wt = sw ? (double)sw[r] : 1.0;                                                              \
            dz[i] = (i % a.m < a.t ? wt * (q / (s + q)) * (s - 1) : wt * s * (1 - s) / (s + q)) * (double)g[r];     \
        }                                                                                                            \
        void *pdx, *pdb;                                                                                             \
        int rc = oar_k_output_sized(k, OAR_NCE_G_DINPUT, "Input@GRAD", DT, a.n * a.d, true, &pdx);                   \
        if (rc == OAR_OK)                                                                                            \
            rc = oar_k_output_sized(k, OAR_NCE_G_DBIAS, "Bias@GRAD", DT, a.k, true, &pdb);                           \
        if (rc != OAR_OK) { oar_scratch_free(dz); return rc; }                                                       \
        if (pdx) {                                                                                                   \
            T *dx = pdx;                                                                                             \
            memset(dx, 0, sizeof(T) * (size_t)(a.n * a.d));                                                          \
            for (int64_t i = 0; i < nm_; i++)                                                                        \
                for (int64_t e = 0; e < a.d; e++) dx[(i / a.m) * a.d + e] += (T)(dz[i] * (double)w[cls[i] * a.d + e]); \
        }                                                                                                            \
        if (pdb) {                                                                                                   \
            T *db = pdb;                                                                                             \
            memset(db, 0, sizeof(T) * (size_t)a.k);                                                                  \
            for (int64_t i = 0; i < nm_; i++) db[cls[i]] += (T)dz[i];                                                \
        }                                                                                                            \
        if (oar_k_output_var(k, OAR_NCE_G_DWEIGHT, 0)) {                                                             \
            T *dw;                                                                                                   \
            int64_t nrows = a.k;                                                                                     \
            if (at->is_sparse) {                                                                                     \
                memcpy(rows, cls, sizeof(int64_t) * (size_t)nm_);                                                    \
                nrows = smp_unique(rows, nm_);                                                                       \
                void *pv;                                                                                            \
                rc = smp_sparse_out(k, OAR_NCE_G_DWEIGHT, "Weight@GRAD", rows, nrows, a.k, a.d, DT, &pv);           \
                dw = pv;                                                                                             \
            } else {                                                                                                 \
                void *pv;                                                                                            \
                rc = oar_k_output_sized(k, OAR_NCE_G_DWEIGHT, "Weight@GRAD", DT, a.k * a.d, true, &pv);              \
                dw = pv;                                                                                             \
                if (dw) memset(dw, 0, sizeof(T) * (size_t)(a.k * a.d));                                              \
            }                                                                                                        \
            if (rc != OAR_OK) { oar_scratch_free(dz); return rc; }                                                   \
            for (int64_t i = 0; dw && i < nm_; i++) {                                                                \
                const int64_t r = at->is_sparse ? smp_row_index(rows, nrows, cls[i]) : cls[i];                       \
                for (int64_t e = 0; e < a.d; e++) dw[r * a.d + e] += (T)(dz[i] * (double)x[(i / a.m) * a.d + e]);    \
            }                                                                                                        \
        }                                                                                                            \
        oar_scratch_free(dz);                                                                                        \
        return OAR_OK;                                                                                               \
    }                                                                                                                \
    OAR_REGISTER_KERNEL("nce", OAR_PLACE_CPU, DT, nce_fwd_##SUF)                                                     \
    OAR_REGISTER_KERNEL("nce_grad", OAR_PLACE_CPU, DT, nce_bwd_##SUF)

NCE_KERNELS(f32, float, OAR_FP32)
NCE_KERNELS(f64, double, OAR_FP64)
