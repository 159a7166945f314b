/* metric_ext.c — CPU kernels of auc, precision_recall,
 * positive_negative_pair and mean_iou (Fluid 1.8's arithmetic; shapes are
 * checked by the inference in src/ops/metric_ext.c, values here). */
#include <stdlib.h>
#include <string.h>

#include "op.h"
#include "ops/metric_ext.h"

/* a value of an int32/int64 tensor (inference allows both) */
static inline int64_t int_at(const oar_tensor_t *t, const void *d, int64_t i)
{
    return t->dtype == OAR_INT32 ? ((const int32_t *)d)[i] : ((const int64_t *)d)[i];
}

/* ---- auc ------------------------------------------------------------------ */

/* trapezoids from the top bucket down: x the negatives, y the positives so far */
static double auc_area(const int64_t *pos, const int64_t *neg, int64_t buckets)
{
    double tp = 0, tn = 0, area = 0;
    for (int64_t i = buckets - 1; i >= 0; i--) {
        double pp = tp, pn = tn;
        tp += (double)pos[i];
        tn += (double)neg[i];
        area += (tn > pn ? tn - pn : pn - tn) * (tp + pp) / 2.0;
    }
    return tp > 0 && tn > 0 ? area / tp / tn : area;
}

#define AUC_KERNEL(NAME, T)                                                                                     \
    static int NAME(oar_kernel_ctx_t *k)                                                                        \
    {                                                                                                           \
        const oar_auc_attrs_t *a = oar_k_attrs(k);                                                              \
        oar_tensor_t *pr = oar_k_input(k, OAR_AUC_PREDICT, 0), *lb = oar_k_input(k, OAR_AUC_LABEL, 0);          \
        oar_tensor_t *sp = oar_k_input(k, OAR_AUC_STATPOS, 0), *sn = oar_k_input(k, OAR_AUC_STATNEG, 0);        \
        if (!pr || !lb || !sp || !sn) return oar_k_error(k, OAR_ERR_NOT_FOUND, "an input of auc has no value"); \
        const int64_t n = pr->dims[0], w = pr->dims[1], buckets = (int64_t)a->num_thresholds + 1;              \
        const int64_t s = a->slide_steps, total = s > 0 ? (1 + s) * buckets + 1 : buckets;                      \
        /* copy the stats first: StatPosOut is normally StatPos's own variable */                               \
        int64_t *pos = calloc((size_t)total * 2, sizeof *pos);                                                  \
        if (!pos) return oar_k_error(k, OAR_ERR_NOMEM, "no memory for %lld buckets", (long long)total);        \
        int64_t *neg = pos + total;                                                                             \
        memcpy(pos, oar_tensor_data(sp), (size_t)total * sizeof *pos);                                          \
        memcpy(neg, oar_tensor_data(sn), (size_t)total * sizeof *neg);                                          \
        const T *pv = n > 0 ? oar_tensor_data(pr) : NULL;                                                       \
        const int64_t *lv = n > 0 ? oar_tensor_data(lb) : NULL;                                                 \
        /* slide: the counter (last) picks the ring row this batch replaces */                                  \
        int64_t cur = 0, sum = 0;                                                                               \
        if (s > 0) {                                                                                            \
            int64_t c = pos[total - 1] % s;                                                                     \
            cur = (c < 0 ? c + s : c) * buckets;                                                                \
            sum = s * buckets;                                                                                  \
            for (int64_t i = 0; i < buckets; i++) {                                                             \
                pos[sum + i] -= pos[cur + i];                                                                   \
                neg[sum + i] -= neg[cur + i];                                                                   \
                pos[cur + i] = neg[cur + i] = 0;                                                                \
            }                                                                                                   \
        }                                                                                                       \
        for (int64_t r = 0; r < n; r++) {                                                                       \
            double p = (double)pv[r * w + w - 1];                                                               \
            if (!(p >= 0 && p <= 1)) {                                                                          \
                free(pos);                                                                                      \
                return oar_k_error(k, OAR_ERR_RANGE, "Predict '%s' row %lld holds %g; probabilities must be "   \
                                   "in [0, 1]", oar_k_input_name(k, OAR_AUC_PREDICT, 0), (long long)r, p);      \
            }                                                                                                   \
            /* T's product truncated, as Fluid's (uint32_t)(p * num_thresholds) */                              \
            int64_t b = (int64_t)(pv[r * w + w - 1] * (T)a->num_thresholds);                                   \
            if (b > a->num_thresholds) b = a->num_thresholds;                                                   \
            (lv[r] ? pos : neg)[cur + b] += 1;                                                                  \
        }                                                                                                       \
        if (s > 0)                                                                                              \
            for (int64_t i = 0; i < buckets; i++) {                                                             \
                pos[sum + i] += pos[cur + i];                                                                   \
                neg[sum + i] += neg[cur + i];                                                                   \
            }                                                                                                   \
        const double auc = auc_area(pos + sum, neg + sum, buckets);                                             \
        if (s > 0) { pos[total - 1] += 1; neg[total - 1] += 1; }                                                \
        void *ao, *po, *no;                                                                                     \
        int rc = oar_k_output_sized(k, OAR_AUC_AUC, "AUC", OAR_FP64, 1, false, &ao);                            \
        if (!rc) rc = oar_k_output_sized(k, OAR_AUC_STATPOSOUT, "StatPosOut", OAR_INT64, total, false, &po);    \
        if (!rc) rc = oar_k_output_sized(k, OAR_AUC_STATNEGOUT, "StatNegOut", OAR_INT64, total, false, &no);    \
        if (!rc) {                                                                                              \
            *(double *)ao = auc;                                                                                \
            memcpy(po, pos, (size_t)total * sizeof *pos);                                                       \
            memcpy(no, neg, (size_t)total * sizeof *neg);                                                       \
        }                                                                                                       \
        free(pos);                                                                                              \
        return rc;                                                                                              \
    }
AUC_KERNEL(auc_f32, float)
AUC_KERNEL(auc_f64, double)
OAR_REGISTER_KERNEL("auc", OAR_PLACE_CPU, OAR_FP32, auc_f32)
OAR_REGISTER_KERNEL("auc", OAR_PLACE_CPU, OAR_FP64, auc_f64)

/* ---- precision_recall ----------------------------------------------------- */

enum { TP = 0, FP, TN, FN };   /* the columns of a states row */

/* an empty denominator gives 1, as Fluid's CalcPrecision/CalcRecall */
static double ratio1(double a, double b) { return a > 0 || b > 0 ? a / (a + b) : 1.0; }
static double f1(double p, double r) { return p > 0 || r > 0 ? 2 * p * r / (p + r) : 0.0; }

static void pr_metrics(const double *st, int64_t cls, double *m)
{
    double tp = 0, fp = 0, fn = 0, mp = 0, mr = 0;
    for (int64_t c = 0; c < cls; c++) {
        const double *r = st + c * 4;
        tp += r[TP]; fp += r[FP]; fn += r[FN];
        mp += ratio1(r[TP], r[FP]);
        mr += ratio1(r[TP], r[FN]);
    }
    mp /= (double)cls;
    mr /= (double)cls;
    m[0] = mp; m[1] = mr; m[2] = f1(mp, mr);
    m[3] = ratio1(tp, fp); m[4] = ratio1(tp, fn); m[5] = f1(m[3], m[4]);
}

#define PR_KERNEL(NAME, T)                                                                                      \
    static int NAME(oar_kernel_ctx_t *k)                                                                        \
    {                                                                                                           \
        const oar_pr_attrs_t *a = oar_k_attrs(k);                                                               \
        oar_tensor_t *ids = oar_k_input(k, OAR_PR_INDICES, 0), *lbl = oar_k_input(k, OAR_PR_LABELS, 0);         \
        oar_tensor_t *wt = oar_k_input(k, OAR_PR_WEIGHTS, 0), *si = oar_k_input(k, OAR_PR_STATESINFO, 0);       \
        if (!ids || !lbl) return oar_k_error(k, OAR_ERR_NOT_FOUND, "Indices or Labels has no value");           \
        const int64_t n = ids->dims[0], cls = a->class_number;                                                  \
        const void *iv = n > 0 ? oar_tensor_data(ids) : NULL, *lv = n > 0 ? oar_tensor_data(lbl) : NULL;        \
        const T *wv = wt && n > 0 ? oar_tensor_data(wt) : NULL;                                                 \
        double *st = calloc((size_t)cls * 4, sizeof *st);                                                       \
        if (!st) return oar_k_error(k, OAR_ERR_NOMEM, "no memory for %lld classes", (long long)cls);           \
        double tn_all = 0; /* every row adds w to every class's TN; taken back below */                         \
        for (int64_t r = 0; r < n; r++) {                                                                       \
            int64_t i = int_at(ids, iv, r), l = int_at(lbl, lv, r);                                             \
            if (i < 0 || i >= cls || l < 0 || l >= cls) {                                                       \
                free(st);                                                                                       \
                return oar_k_error(k, OAR_ERR_RANGE, "row %lld: %s %lld is outside [0, class_number = %lld)",   \
                                   (long long)r, i < 0 || i >= cls ? "Indices" : "Labels",                      \
                                   (long long)(i < 0 || i >= cls ? i : l), (long long)cls);                     \
            }                                                                                                   \
            double w = wv ? (double)wv[r] : 1.0;                                                                \
            tn_all += w;                                                                                        \
            st[i * 4 + TN] -= w;                                                                                \
            if (i == l) st[i * 4 + TP] += w;                                                                    \
            else { st[l * 4 + FN] += w; st[i * 4 + FP] += w; st[l * 4 + TN] -= w; }                            \
        }                                                                                                       \
        for (int64_t c = 0; c < cls; c++) st[c * 4 + TN] += tn_all;                                             \
        double bm[6], am[6];                                                                                    \
        pr_metrics(st, cls, bm);                                                                                \
        if (si) {                                                                                               \
            const T *sv = oar_tensor_data(si);                                                                  \
            for (int64_t j = 0; j < cls * 4; j++) st[j] += (double)sv[j];                                       \
        }                                                                                                       \
        pr_metrics(st, cls, am);                                                                                \
        void *bo, *ao, *so;                                                                                     \
        int rc = oar_k_output_sized(k, OAR_PR_BATCHMETRICS, "BatchMetrics", OAR_FP64, 6, false, &bo);           \
        if (!rc) rc = oar_k_output_sized(k, OAR_PR_ACCUMMETRICS, "AccumMetrics", OAR_FP64, 6, false, &ao);      \
        if (!rc) rc = oar_k_output_sized(k, OAR_PR_ACCUMSTATESINFO, "AccumStatesInfo", oar_k_dtype(k),          \
                                         cls * 4, false, &so);                                                  \
        if (!rc) {                                                                                              \
            memcpy(bo, bm, sizeof bm);                                                                          \
            memcpy(ao, am, sizeof am);                                                                          \
            for (int64_t j = 0; j < cls * 4; j++) ((T *)so)[j] = (T)st[j];                                      \
        }                                                                                                       \
        free(st);                                                                                               \
        return rc;                                                                                              \
    }
PR_KERNEL(pr_f32, float)
PR_KERNEL(pr_f64, double)
OAR_REGISTER_KERNEL("precision_recall", OAR_PLACE_CPU, OAR_FP32, pr_f32)
OAR_REGISTER_KERNEL("precision_recall", OAR_PLACE_CPU, OAR_FP64, pr_f64)

/* ---- positive_negative_pair ----------------------------------------------- */

/* row order by query, then by row: each query's rows together, in order */
static const int64_t *pnp_query;
static int pnp_cmp(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    if (pnp_query[a] != pnp_query[b]) return pnp_query[a] < pnp_query[b] ? -1 : 1;
    return a < b ? -1 : a > b;
}

#define PNP_KERNEL(NAME, T)                                                                                     \
    static int NAME(oar_kernel_ctx_t *k)                                                                        \
    {                                                                                                           \
        const oar_pnp_attrs_t *a = oar_k_attrs(k);                                                              \
        oar_tensor_t *sc = oar_k_input(k, OAR_PNP_SCORE, 0), *lb = oar_k_input(k, OAR_PNP_LABEL, 0);            \
        oar_tensor_t *q = oar_k_input(k, OAR_PNP_QUERYID, 0), *wt = oar_k_input(k, OAR_PNP_WEIGHT, 0);          \
        if (!sc || !lb || !q) return oar_k_error(k, OAR_ERR_NOT_FOUND, "Score, Label or QueryID has no value"); \
        const int64_t n = sc->dims[0], d = sc->dims[1];                                                         \
        const int64_t col = a->column < 0 ? a->column + d : a->column;                                          \
        double acc[3] = {0, 0, 0}; /* positive, negative, neutral */                                            \
        for (int i = 0; i < 3; i++) {                                                                           \
            oar_tensor_t *t = oar_k_input(k, OAR_PNP_ACCUMULATEPOSITIVEPAIR + i, 0);                            \
            if (t) acc[i] = (double)*(const T *)oar_tensor_data(t);                                             \
        }                                                                                                       \
        int64_t *ord = n > 0 ? malloc((size_t)n * sizeof *ord) : NULL;                                         \
        if (n > 0 && !ord) return oar_k_error(k, OAR_ERR_NOMEM, "no memory for %lld rows", (long long)n);      \
        if (n > 0) {                                                                                            \
            const T *sv = oar_tensor_data(sc), *lv = oar_tensor_data(lb);                                       \
            const T *wv = wt ? oar_tensor_data(wt) : NULL;                                                      \
            const int64_t *qv = oar_tensor_data(q);                                                             \
            for (int64_t i = 0; i < n; i++) ord[i] = i;                                                         \
            pnp_query = qv;                                                                                     \
            qsort(ord, (size_t)n, sizeof *ord, pnp_cmp);                                                        \
            for (int64_t g = 0, e; g < n; g = e) {                                                              \
                for (e = g + 1; e < n && qv[ord[e]] == qv[ord[g]]; e++) {}                                      \
                for (int64_t x = g; x < e; x++)                                                                 \
                    for (int64_t y = x + 1; y < e; y++) {                                                       \
                        int64_t i = ord[x], j = ord[y];                                                         \
                        if (lv[i] == lv[j]) continue;                                                           \
                        double w = wv ? ((double)wv[i] + (double)wv[j]) * 0.5 : 1.0;                            \
                        T si = sv[i * d + col], sj = sv[j * d + col];                                           \
                        if (si == sj) acc[2] += w;                                                              \
                        /* a tie is also negative: Fluid's kernel lacks the else */                             \
                        acc[(si - sj) * (lv[i] - lv[j]) > 0 ? 0 : 1] += w;                                      \
                    }                                                                                           \
            }                                                                                                   \
        }                                                                                                       \
        free(ord);                                                                                              \
        for (int i = 0; i < 3; i++) {                                                                           \
            void *o;                                                                                            \
            static const char *names[3] = {"PositivePair", "NegativePair", "NeutralPair"};                      \
            OAR_TRY(oar_k_output_sized(k, OAR_PNP_POSITIVEPAIR + i, names[i], oar_k_dtype(k), 1, false, &o));   \
            *(T *)o = (T)acc[i];                                                                                \
        }                                                                                                       \
        return OAR_OK;                                                                                          \
    }
PNP_KERNEL(pnp_f32, float)
PNP_KERNEL(pnp_f64, double)
OAR_REGISTER_KERNEL("positive_negative_pair", OAR_PLACE_CPU, OAR_FP32, pnp_f32)
OAR_REGISTER_KERNEL("positive_negative_pair", OAR_PLACE_CPU, OAR_FP64, pnp_f64)

/* ---- mean_iou ------------------------------------------------------------- */

static int mean_iou_k(oar_kernel_ctx_t *k)
{
    const oar_miou_attrs_t *a = oar_k_attrs(k);
    oar_tensor_t *pr = oar_k_input(k, OAR_MIOU_PREDICTIONS, 0), *lb = oar_k_input(k, OAR_MIOU_LABELS, 0);
    if (!pr || !lb) return oar_k_error(k, OAR_ERR_NOT_FOUND, "Predictions or Labels has no value");
    const int64_t n = oar_tensor_numel_of(pr), cls = a->num_classes;
    float *miou;
    int32_t *wrong, *correct;
    OAR_TRY(oar_k_output_sized(k, OAR_MIOU_OUTMEANIOU, "OutMeanIou", OAR_FP32, 1, false, (void **)&miou));
    OAR_TRY(oar_k_output_sized(k, OAR_MIOU_OUTWRONG, "OutWrong", OAR_INT32, cls, false, (void **)&wrong));
    OAR_TRY(oar_k_output_sized(k, OAR_MIOU_OUTCORRECT, "OutCorrect", OAR_INT32, cls, false, (void **)&correct));
    int64_t *cw = calloc((size_t)cls * 2, sizeof *cw);   /* 64-bit while counting */
    if (!cw) return oar_k_error(k, OAR_ERR_NOMEM, "no memory for %lld classes", (long long)cls);
    int64_t *cc = cw + cls;
    float base = 0;
    for (int i = 0; i < oar_k_nin(k, OAR_MIOU_INMEANIOU); i++) {
        oar_tensor_t *t = oar_k_input(k, OAR_MIOU_INMEANIOU, i);
        if (t) base += *(const float *)oar_tensor_data(t);
    }
    for (int s = 0; s < 2; s++) {
        const int slot = s ? OAR_MIOU_INCORRECTS : OAR_MIOU_INWRONGS;
        for (int i = 0; i < oar_k_nin(k, slot); i++) {
            oar_tensor_t *t = oar_k_input(k, slot, i);
            if (!t) continue;
            const int32_t *v = oar_tensor_data(t);
            for (int64_t c = 0; c < cls; c++) (s ? cc : cw)[c] += v[c];
        }
    }
    const void *pv = n > 0 ? oar_tensor_data(pr) : NULL, *lv = n > 0 ? oar_tensor_data(lb) : NULL;
    for (int64_t i = 0; i < n; i++) {
        int64_t p = int_at(pr, pv, i), l = int_at(lb, lv, i);
        if (p < 0 || p >= cls || l < 0 || l >= cls) {
            free(cw);
            return oar_k_error(k, OAR_ERR_RANGE, "element %lld: %s '%s' holds %lld, outside [0, num_classes = %lld)",
                               (long long)i, p < 0 || p >= cls ? "Predictions" : "Labels",
                               oar_k_input_name(k, p < 0 || p >= cls ? OAR_MIOU_PREDICTIONS : OAR_MIOU_LABELS, 0),
                               (long long)(p < 0 || p >= cls ? p : l), (long long)cls);
        }
        if (p == l) cc[p]++;
        else { cw[p]++; cw[l]++; }
    }
    /* float sums as Fluid's; classes never seen are left out of the mean */
    float sum = 0;
    int64_t valid = 0;
    for (int64_t c = 0; c < cls; c++) {
        int64_t den = cw[c] + cc[c];
        if (den > 0) { valid++; sum += (float)cc[c] / (float)den; }
        wrong[c] = (int32_t)cw[c];
        correct[c] = (int32_t)cc[c];
    }
    miou[0] = base + (valid > 0 ? sum / (float)valid : 0.0f);
    free(cw);
    return OAR_OK;
}

static int mean_iou_i32(oar_kernel_ctx_t *k) { return mean_iou_k(k); }
static int mean_iou_i64(oar_kernel_ctx_t *k) { return mean_iou_k(k); }
OAR_REGISTER_KERNEL("mean_iou", OAR_PLACE_CPU, OAR_INT32, mean_iou_i32)
OAR_REGISTER_KERNEL("mean_iou", OAR_PLACE_CPU, OAR_INT64, mean_iou_i64)
