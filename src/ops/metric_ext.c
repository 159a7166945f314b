/*
 * metric_ext.c — inference of Fluid 1.8's metric ops auc, precision_recall,
 * positive_negative_pair and mean_iou (declared in metric_ext.ops; kernels
 * in kernels/cpu/metric_ext.c). No gradients. Every shape a kernel indexes
 * by is checked here, so a kernel only checks values.
 */
#include <stdio.h>

#include "op.h"
#include "ops/metric_ext.h"   /* generated from metric_ext.ops */

static const char *nm(const char *s) { return s ? s : "?"; }

/* the element count of dims, -1 while a dim is unknown */
static int64_t known_numel(const int64_t *d, int n)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++) {
        if (d[i] < 0) return -1;
        p *= d[i];
    }
    return p;
}

/* input slot is [rows, 1] (or [rows] when allow_1d); rows -1: any */
static int check_column(oar_infer_ctx_t *c, const char *slot, int64_t rows, bool allow_1d)
{
    int n;
    const int64_t *d = oar_ic_in_dims(c, slot, 0, &n);
    if (!d) return OAR_ERR_SHAPE;
    bool ok = (n == 2 && oar_dim_eq(d[1], 1)) || (allow_1d && n == 1);
    if (!ok || !oar_dim_eq(d[0], rows)) {
        char b[160];
        return oar_ic_error(c, OAR_ERR_SHAPE, "input %s '%s' has shape %s; expected [N, 1] with N = %lld rows", slot,
                            nm(oar_ic_in_name(c, slot, 0)), oar_shape_str(d, n, b, sizeof b), (long long)rows);
    }
    return OAR_OK;
}

/* input slot's dtype is one of a, b (-1: no second); unknown passes */
static int check_dtype(oar_infer_ctx_t *c, const char *slot, int i, int a, int b)
{
    int dt = oar_ic_in_dtype(c, slot, i);
    if (dt < 0 || dt == a || dt == b) return OAR_OK;
    return oar_ic_error(c, OAR_ERR_DTYPE, "input %s '%s' has dtype %s, expected %s%s%s", slot,
                        nm(oar_ic_in_name(c, slot, i)), nm(oar_dtype_name(dt)), nm(oar_dtype_name(a)),
                        b >= 0 ? " or " : "", b >= 0 ? nm(oar_dtype_name(b)) : "");
}

/* input slot i holds exactly want elements (checked once its dims are known) */
static int check_numel(oar_infer_ctx_t *c, const char *slot, int i, int64_t want, const char *shape)
{
    int n;
    const int64_t *d = oar_ic_in_dims(c, slot, i, &n);
    if (!d) return OAR_ERR_SHAPE;
    int64_t got = known_numel(d, n);
    if (got >= 0 && got != want) {
        char b[160];
        return oar_ic_error(c, OAR_ERR_SHAPE, "input %s '%s' has shape %s (%lld values); expected %s (%lld values)",
                            slot, nm(oar_ic_in_name(c, slot, i)), oar_shape_str(d, n, b, sizeof b), (long long)got,
                            shape, (long long)want);
    }
    return OAR_OK;
}

static int auc_infer(oar_infer_ctx_t *c)
{
    const oar_auc_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const int64_t *p;
    OAR_TRY(oar_ic_check_2d(c, "Predict", -1, -1, "[N, 2] or [N, 1]", &p));
    if (p[1] == 0 || p[1] > 2) {
        char b[160];
        return oar_ic_error(c, OAR_ERR_SHAPE, "input Predict '%s' has shape %s; auc is binary: expected [N, 2] or [N, 1]",
                            nm(oar_ic_in_name(c, "Predict", 0)), oar_shape_str(p, 2, b, sizeof b));
    }
    OAR_TRY(oar_ic_check_float(c, "Predict", -1));
    OAR_TRY(check_column(c, "Label", p[0], true));
    OAR_TRY(check_dtype(c, "Label", 0, OAR_INT64, -1));
    const int64_t buckets = (int64_t)a->num_thresholds + 1;
    int64_t dims[2] = {1, buckets}, nd = 2, total = buckets;
    char want[96];
    if (a->slide_steps > 0) {
        /* the steps' rows, their sum, then the batch counter */
        total = (1 + (int64_t)a->slide_steps) * buckets + 1;
        dims[0] = total;
        nd = 1;
        snprintf(want, sizeof want, "[%lld] ((1 + slide_steps) (num_thresholds + 1) + 1)", (long long)total);
    } else {
        snprintf(want, sizeof want, "[1, %lld] (num_thresholds + 1)", (long long)buckets);
    }
    const char *stats[2] = {"StatPos", "StatNeg"};
    for (int s = 0; s < 2; s++) {
        OAR_TRY(check_numel(c, stats[s], 0, total, want));
        OAR_TRY(check_dtype(c, stats[s], 0, OAR_INT64, -1));
    }
    int64_t one = 1;
    OAR_TRY(oar_ic_set_out(c, "AUC", 0, &one, 1, OAR_FP64));
    OAR_TRY(oar_ic_set_out(c, "StatPosOut", 0, dims, (int)nd, OAR_INT64));
    return oar_ic_set_out(c, "StatNegOut", 0, dims, (int)nd, OAR_INT64);
}

static int pr_infer(oar_infer_ctx_t *c)
{
    const oar_pr_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const int64_t *p;
    OAR_TRY(oar_ic_check_2d(c, "MaxProbs", -1, 1, "[N, 1]", &p));
    OAR_TRY(oar_ic_check_float(c, "MaxProbs", -1));
    const int dt = oar_ic_in_dtype(c, "MaxProbs", 0);
    const char *ints[2] = {"Indices", "Labels"};
    for (int s = 0; s < 2; s++) {
        OAR_TRY(check_column(c, ints[s], p[0], false));
        OAR_TRY(check_dtype(c, ints[s], 0, OAR_INT32, OAR_INT64));
    }
    if (oar_ic_in_present(c, "Weights")) {
        OAR_TRY(check_column(c, "Weights", p[0], false));
        OAR_TRY(oar_ic_check_float(c, "Weights", dt));
    }
    const int64_t cls = a->class_number;
    if (oar_ic_in_present(c, "StatesInfo")) {
        char what[64];
        snprintf(what, sizeof what, "[class_number = %lld, 4]", (long long)cls);
        OAR_TRY(oar_ic_check_2d(c, "StatesInfo", cls, 4, what, NULL));
        OAR_TRY(oar_ic_check_float(c, "StatesInfo", dt));
    }
    int64_t six = 6, st[2] = {cls, 4};
    OAR_TRY(oar_ic_set_out(c, "BatchMetrics", 0, &six, 1, OAR_FP64));
    OAR_TRY(oar_ic_set_out(c, "AccumMetrics", 0, &six, 1, OAR_FP64));
    return oar_ic_set_out(c, "AccumStatesInfo", 0, st, 2, dt);
}

static int pnp_infer(oar_infer_ctx_t *c)
{
    const oar_pnp_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const int64_t *s;
    OAR_TRY(oar_ic_check_2d(c, "Score", -1, -1, "[N, D]", &s));
    OAR_TRY(oar_ic_check_float(c, "Score", -1));
    const int dt = oar_ic_in_dtype(c, "Score", 0);
    if (s[1] >= 0 && (a->column >= s[1] || a->column < -s[1]))
        return oar_ic_error(c, OAR_ERR_RANGE, "attribute column = %d is outside [-%lld, %lld) for Score '%s' of %lld "
                            "columns", (int)a->column, (long long)s[1], (long long)s[1],
                            nm(oar_ic_in_name(c, "Score", 0)), (long long)s[1]);
    OAR_TRY(check_column(c, "Label", s[0], false));
    OAR_TRY(oar_ic_check_float(c, "Label", dt));
    OAR_TRY(check_column(c, "QueryID", s[0], false));
    OAR_TRY(check_dtype(c, "QueryID", 0, OAR_INT64, -1));
    if (oar_ic_in_present(c, "Weight")) {
        OAR_TRY(check_column(c, "Weight", s[0], false));
        OAR_TRY(oar_ic_check_float(c, "Weight", dt));
    }
    const char *acc[3] = {"AccumulatePositivePair", "AccumulateNegativePair", "AccumulateNeutralPair"};
    int given = 0;
    for (int i = 0; i < 3; i++) given += oar_ic_in_present(c, acc[i]);
    if (given != 0 && given != 3)
        return oar_ic_error(c, OAR_ERR_INVALID, "give all three of AccumulatePositivePair, AccumulateNegativePair and "
                            "AccumulateNeutralPair, or none (%d given)", given);
    for (int i = 0; i < given; i++) {
        OAR_TRY(check_numel(c, acc[i], 0, 1, "[1]"));
        OAR_TRY(oar_ic_check_float(c, acc[i], dt));
    }
    int64_t one = 1;
    OAR_TRY(oar_ic_set_out(c, "PositivePair", 0, &one, 1, dt));
    OAR_TRY(oar_ic_set_out(c, "NegativePair", 0, &one, 1, dt));
    return oar_ic_set_out(c, "NeutralPair", 0, &one, 1, dt);
}

static int miou_infer(oar_infer_ctx_t *c)
{
    const oar_miou_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    OAR_TRY(check_dtype(c, "Predictions", 0, OAR_INT32, OAR_INT64));
    OAR_TRY(oar_ic_check_same_dims(c, "Labels", "Predictions"));
    int dp = oar_ic_in_dtype(c, "Predictions", 0);
    OAR_TRY(check_dtype(c, "Labels", 0, dp < 0 ? OAR_INT32 : dp, dp < 0 ? OAR_INT64 : -1));
    const int64_t k = a->num_classes;
    char want[64];
    snprintf(want, sizeof want, "[num_classes = %lld]", (long long)k);
    const char *counts[2] = {"InWrongs", "InCorrects"};
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < oar_ic_in_count(c, counts[s]); i++) {
            OAR_TRY(check_numel(c, counts[s], i, k, want));
            OAR_TRY(check_dtype(c, counts[s], i, OAR_INT32, -1));
        }
    for (int i = 0; i < oar_ic_in_count(c, "InMeanIou"); i++) {
        OAR_TRY(check_numel(c, "InMeanIou", i, 1, "[1]"));
        OAR_TRY(check_dtype(c, "InMeanIou", i, OAR_FP32, -1));
    }
    int64_t one = 1;
    OAR_TRY(oar_ic_set_out(c, "OutMeanIou", 0, &one, 1, OAR_FP32));
    OAR_TRY(oar_ic_set_out(c, "OutWrong", 0, &k, 1, OAR_INT32));
    return oar_ic_set_out(c, "OutCorrect", 0, &k, 1, OAR_INT32);
}

#define OAR_OPS_DEFINE
#include "ops/metric_ext.h"   /* the tables and the registration */
