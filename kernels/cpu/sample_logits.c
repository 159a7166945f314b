/* sample_logits.c — CPU kernels of sample_logits and its grad (declared in
 * src/ops/sampling.ops).
 *
 * As Fluid 1.8's: the true labels fill each row's first T columns; the
 * num_samples drawn classes (log-uniform over [0, K - 1), one draw for the
 * whole batch) fill the rest. With uniq the draws are distinct and a class's
 * probability is the chance it turns up in the tries the draw took,
 * 1 - (1 - P)^tries (P * num_samples when no draw was rejected); without, the
 * draws repeat and the probability is P * num_samples. */
#include <math.h>
#include <string.h>
#include "op.h"
#include "ops/sampling.h"
#include "sampler.h"
#include "scratch.h"

static const char *nm(const char *s) { return s ? s : "?"; }

#define SL_INF 1e20

static double adjust_prob(double p, int num_samples, int64_t tries)
{
    if (tries == num_samples) return p * num_samples;
    return -expm1((double)tries * log1p(-p));
}

/* +-inf to +-1e20, as Fluid's TolerableValue */
static double tolerable(double v) { return isinf(v) ? (v > 0 ? SL_INF : -SL_INF) : v; }

/* the distinct draws: a hash-free check against the ones so far (num_samples
 * is small next to K) */
static bool seen(const int64_t *v, int64_t n, int64_t x)
{
    for (int64_t i = 0; i < n; i++)
        if (v[i] == x) return true;
    return false;
}

#define SL_KERNELS(SUF, T, DT)                                                                                       \
    static int sl_fwd_##SUF(oar_kernel_ctx_t *k)                                                                     \
    {                                                                                                                \
        const oar_sl_attrs_t *at = oar_k_attrs(k);                                                                   \
        const oar_tensor_t *tl = oar_k_input(k, OAR_SL_LOGITS, 0), *ty = oar_k_input(k, OAR_SL_LABELS, 0);           \
        if (!tl || !ty) return oar_k_error(k, OAR_ERR_NOT_FOUND, "Logits and Labels are required");                 \
        if (tl->ndim != 2 || ty->ndim != 2 || ty->dims[0] != tl->dims[0] || ty->dtype != OAR_INT64)                 \
            return oar_k_error(k, OAR_ERR_SHAPE, "Logits must be [N, K] and Labels int64 [N, T]");                  \
        const int64_t n = tl->dims[0], kc = tl->dims[1], t = ty->dims[1], m = t + at->num_samples;                   \
        const int64_t *lab = oar_tensor_data((oar_tensor_t *)ty);                                                    \
        for (int64_t i = 0; i < n * t; i++)                                                                          \
            if (lab[i] < 0 || lab[i] >= kc)                                                                          \
                return oar_k_error(k, OAR_ERR_RANGE, "Labels '%s' holds %lld at row %lld; classes are 0..%lld",     \
                                   nm(oar_k_input_name(k, OAR_SL_LABELS, 0)), (long long)lab[i], (long long)(i / t), \
                                   (long long)(kc - 1));                                                             \
        void *psm, *ppr, *plo, *pla, *pld, *pyd;                                                                     \
        OAR_TRY(oar_k_output_sized(k, OAR_SL_SAMPLES, "Samples", OAR_INT64, n * m, false, &psm));                    \
        OAR_TRY(oar_k_output_sized(k, OAR_SL_PROBABILITIES, "Probabilities", DT, n * m, false, &ppr));               \
        OAR_TRY(oar_k_output_sized(k, OAR_SL_SAMPLEDLOGITS, "SampledLogits", DT, n * m, false, &plo));               \
        OAR_TRY(oar_k_output_sized(k, OAR_SL_SAMPLEDLABELS, "SampledLabels", OAR_INT64, n * t, false, &pla));        \
        OAR_TRY(oar_k_output_sized(k, OAR_SL_LOGITSDIM, "LogitsDim", DT, n * kc, false, &pld));                      \
        OAR_TRY(oar_k_output_sized(k, OAR_SL_LABELSDIM, "LabelsDim", OAR_INT64, n * t, false, &pyd));                \
        int64_t *smp = psm;                                                                                          \
        T *prob = ppr, *lo = plo;                                                                                    \
        if (n * kc > 0) memset(pld, 0, sizeof(T) * (size_t)(n * kc)); /* a shape carrier: zeros */                  \
        if (n * t > 0) memset(pyd, 0, sizeof(int64_t) * (size_t)(n * t));                                            \
        if (at->use_customized_samples) {                                                                            \
            const oar_tensor_t *cs = oar_k_input(k, OAR_SL_CUSTOMIZEDSAMPLES, 0);                                    \
            const oar_tensor_t *cp = oar_k_input(k, OAR_SL_CUSTOMIZEDPROBABILITIES, 0);                              \
            if (!cs || !cp || cs->dtype != OAR_INT64 || cp->dtype != DT || oar_tensor_numel_of(cs) != n * m ||       \
                oar_tensor_numel_of(cp) != n * m)                                                                    \
                return oar_k_error(k, OAR_ERR_SHAPE, "CustomizedSamples (int64) and CustomizedProbabilities must be " \
                                   "[%lld, %lld]", (long long)n, (long long)m);                                      \
            memcpy(smp, oar_tensor_data((oar_tensor_t *)cs), sizeof(int64_t) * (size_t)(n * m));                     \
            memcpy(prob, oar_tensor_data((oar_tensor_t *)cp), sizeof(T) * (size_t)(n * m));                          \
            for (int64_t i = 0; i < n * m; i++)                                                                      \
                if (smp[i] < 0 || smp[i] >= kc)                                                                      \
                    return oar_k_error(k, OAR_ERR_RANGE, "CustomizedSamples holds %lld at row %lld; classes are "    \
                                       "0..%lld", (long long)smp[i], (long long)(i / m), (long long)(kc - 1));       \
        } else {                                                                                                     \
            if (at->uniq && at->num_samples > kc - 1)                                                                \
                return oar_k_error(k, OAR_ERR_INVALID, "num_samples %d: only %lld distinct classes can be drawn",   \
                                   at->num_samples, (long long)(kc - 1));                                            \
            smp_t s;                                                                                                 \
            smp_init(&s, SMP_LOG_UNIFORM, kc, at->seed);                                                             \
            int64_t *draws = oar_scratch_alloc(sizeof(int64_t) * (size_t)at->num_samples);                           \
            if (!draws) return oar_k_error(k, OAR_ERR_NOMEM, "no memory for %d samples", at->num_samples);           \
            int64_t got = 0, tries = 0;                                                                              \
            while (got < at->num_samples) {                                                                          \
                tries++;                                                                                             \
                int64_t v = smp_draw(&s);                                                                            \
                if (at->uniq && seen(draws, got, v)) continue;                                                       \
                draws[got++] = v;                                                                                    \
            }                                                                                                        \
            for (int64_t i = 0; i < n; i++)                                                                          \
                for (int64_t j = 0; j < m; j++) {                                                                    \
                    const int64_t c = j < t ? lab[i * t + j] : draws[j - t];                                         \
                    smp[i * m + j] = c;                                                                              \
                    prob[i * m + j] = (T)adjust_prob(smp_prob(&s, c), at->num_samples, tries);                       \
                }                                                                                                    \
            oar_scratch_free(draws);                                                                                 \
        }                                                                                                            \
        const T *x = oar_tensor_data((oar_tensor_t *)tl);                                                            \
        for (int64_t i = 0; i < n; i++)                                                                              \
            for (int64_t j = 0; j < m; j++) {                                                                        \
                double v = (double)x[i * kc + smp[i * m + j]];                                                       \
                if (at->remove_accidental_hits && j >= t)                                                            \
                    for (int64_t q = 0; q < t; q++)                                                                  \
                        if (smp[i * m + j] == smp[i * m + q]) { v -= SL_INF; break; }                                \
                lo[i * m + j] = (T)tolerable(v - tolerable(log((double)prob[i * m + j])));                           \
            }                                                                                                        \
        int64_t *sl = pla;                                                                                           \
        for (int64_t i = 0; i < n; i++)                                                                              \
            for (int64_t j = 0; j < t; j++) sl[i * t + j] = j;                                                       \
        return OAR_OK;                                                                                               \
    }                                                                                                                \
    static int sl_bwd_##SUF(oar_kernel_ctx_t *k)                                                                     \
    {                                                                                                                \
        const oar_tensor_t *ld = oar_k_input(k, OAR_SL_G_LOGITSDIM, 0), *ts = oar_k_input(k, OAR_SL_G_SAMPLES, 0);   \
        const oar_tensor_t *tg = oar_k_input(k, OAR_SL_G_DSAMPLED, 0);                                               \
        if (!ld || !ts || !tg || ld->ndim != 2 || ts->ndim != 2 || ts->dtype != OAR_INT64 || tg->dtype != DT ||      \
            ts->dims[0] != ld->dims[0] || oar_tensor_numel_of(tg) != oar_tensor_numel_of(ts))                        \
            return oar_k_error(k, OAR_ERR_SHAPE, "LogitsDim [N, K], Samples [N, M] (int64) and SampledLogits@GRAD "  \
                               "[N, M] must come from the forward");                                                 \
        const int64_t n = ld->dims[0], kc = ld->dims[1], m = ts->dims[1];                                            \
        void *pdl;                                                                                                   \
        OAR_TRY(oar_k_output_sized(k, OAR_SL_G_DLOGITS, "Logits@GRAD", DT, n * kc, true, &pdl));                     \
        if (!pdl) return OAR_OK;                                                                                     \
        T *dl = pdl;                                                                                                 \
        const int64_t *smp = oar_tensor_data((oar_tensor_t *)ts);                                                    \
        const T *g = oar_tensor_data((oar_tensor_t *)tg);                                                            \
        memset(dl, 0, sizeof(T) * (size_t)(n * kc));                                                                 \
        for (int64_t i = 0; i < n * m; i++) {                                                                        \
            if (smp[i] < 0 || smp[i] >= kc)                                                                          \
                return oar_k_error(k, OAR_ERR_RANGE, "Samples holds %lld; classes are 0..%lld", (long long)smp[i],   \
                                   (long long)(kc - 1));                                                             \
            dl[(i / m) * kc + smp[i]] += g[i];                                                                       \
        }                                                                                                            \
        return OAR_OK;                                                                                               \
    }                                                                                                                \
    OAR_REGISTER_KERNEL("sample_logits", OAR_PLACE_CPU, DT, sl_fwd_##SUF)                                            \
    OAR_REGISTER_KERNEL("sample_logits_grad", OAR_PLACE_CPU, DT, sl_bwd_##SUF)

SL_KERNELS(f32, float, OAR_FP32)
SL_KERNELS(f64, double, OAR_FP64)
