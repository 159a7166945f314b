/*
 * sampling.c — inference of the sampled and tree-structured losses
 * (Fluid 1.8): nce, hierarchical_sigmoid, sample_logits and their grads.
 * The ops (slots, docs, attributes) are declared in sampling.ops; the
 * kernels are in kernels/cpu/nce.c, hsigmoid.c and sample_logits.c.
 *
 * Inference checks every shape and dtype it can see and sizes every output;
 * class ids inside the inputs are checked by the kernels.
 */
#include <limits.h>
#include "op.h"
#include "ops/infer_util.h"
#include "ops/sampling.h"   /* generated from sampling.ops */

static int want_dtype(oar_infer_ctx_t *c, const char *slot, int dt1, int dt2, const char *what)
{
    int dt = oar_ic_in_dtype(c, slot, 0);
    if (dt >= 0 && dt != dt1 && dt != dt2)
        return oar_ic_error(c, OAR_ERR_DTYPE, "input %s '%s' has dtype %s, expected %s", slot,
                            nm(oar_ic_in_name(c, slot, 0)), nm(oar_dtype_name(dt)), what);
    return OAR_OK;
}

/* input `slot` is [n] or [n, 1] (n -1: any); *rows gets its first dim */
static int want_column(oar_infer_ctx_t *c, const char *slot, int64_t n, const char *what)
{
    int nd;
    char b[160];
    const int64_t *d = oar_ic_in_dims(c, slot, 0, &nd);
    if (!d) return OAR_ERR_SHAPE;
    if (!((nd == 1 || (nd == 2 && oar_dim_eq(d[1], 1))) && oar_dim_eq(d[0], n)))
        return oar_ic_error(c, OAR_ERR_SHAPE, "input %s '%s' has shape %s; expected [%lld, 1] or [%lld] (%s)", slot,
                            nm(oar_ic_in_name(c, slot, 0)), oar_shape_str(d, nd, b, sizeof b), (long long)n,
                            (long long)n, what);
    return OAR_OK;
}

/* X-like [N, D] float input and W-like [rows, D] of its dtype */
static int check_x_w(oar_infer_ctx_t *c, const char *x, const char *w, const int64_t **xd, const int64_t **wd)
{
    OAR_TRY(oar_ic_check_2d(c, x, -1, -1, "[N, D]", xd));
    OAR_TRY(oar_ic_check_float(c, x, -1));
    OAR_TRY(oar_ic_check_2d(c, w, -1, -1, "[rows, D]", wd));
    OAR_TRY(oar_ic_check_float(c, w, oar_ic_in_dtype(c, x, 0)));
    if (!oar_dim_eq((*xd)[1], (*wd)[1])) return shape_mismatch(c, x, w, "their second dims (D) must agree");
    return OAR_OK;
}

/* ---- nce --------------------------------------------------------------- */

static int nce_infer(oar_infer_ctx_t *c)
{
    const oar_nce_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const int64_t *xd, *wd;
    OAR_TRY(check_x_w(c, "Input", "Weight", &xd, &wd));
    const int64_t n = xd[0], k = a->num_total_classes;
    if (!oar_dim_eq(wd[0], k))
        return oar_ic_error(c, OAR_ERR_SHAPE, "Weight '%s' has %lld rows; num_total_classes is %lld",
                            nm(oar_ic_in_name(c, "Weight", 0)), (long long)wd[0], (long long)k);
    int ln;
    char b[160];
    const int64_t *ld = oar_ic_in_dims(c, "Label", 0, &ln);
    if (!ld) return OAR_ERR_SHAPE;
    OAR_TRY(want_dtype(c, "Label", OAR_INT64, OAR_INT64, "int64"));
    if ((ln != 1 && ln != 2) || !oar_dim_eq(ld[0], n) || (ln == 2 && ld[1] == 0))
        return oar_ic_error(c, OAR_ERR_SHAPE, "Label '%s' has shape %s; expected [%lld, T] (Input's rows, T >= 1)",
                            nm(oar_ic_in_name(c, "Label", 0)), oar_shape_str(ld, ln, b, sizeof b), (long long)n);
    const int64_t t = ln == 2 ? ld[1] : 1;
    if (oar_ic_in_present(c, "Bias")) {
        OAR_TRY(want_column(c, "Bias", k, "one bias per class"));
        OAR_TRY(oar_ic_check_float(c, "Bias", oar_ic_in_dtype(c, "Input", 0)));
    }
    if (oar_ic_in_present(c, "SampleWeight")) {
        OAR_TRY(want_column(c, "SampleWeight", n, "one weight per row of Input"));
        OAR_TRY(oar_ic_check_float(c, "SampleWeight", oar_ic_in_dtype(c, "Input", 0)));
    }
    if (a->custom_neg_classes.n > 0) {
        if (a->custom_neg_classes.n != a->num_neg_samples)
            return oar_ic_error(c, OAR_ERR_INVALID, "custom_neg_classes has %d classes but num_neg_samples is %d",
                                a->custom_neg_classes.n, a->num_neg_samples);
        for (int i = 0; i < a->custom_neg_classes.n; i++)
            if (a->custom_neg_classes.v[i] < 0 || a->custom_neg_classes.v[i] >= k)
                return oar_ic_error(c, OAR_ERR_RANGE, "custom_neg_classes[%d] is %d; classes are 0..%lld", i,
                                    (int)a->custom_neg_classes.v[i], (long long)(k - 1));
    }
    if (a->sampler == 2) {
        static const char *const dist[] = {"CustomDistProbs", "CustomDistAlias", "CustomDistAliasProbs"};
        for (int i = 0; i < 3; i++) {
            if (!oar_ic_in_present(c, dist[i]))
                return oar_ic_error(c, OAR_ERR_NOT_FOUND, "sampler 2 (custom_dist) needs input %s", dist[i]);
            int dn;
            const int64_t *dd = oar_ic_in_dims(c, dist[i], 0, &dn);
            if (!dd) return OAR_ERR_SHAPE;
            int64_t numel = 1;
            for (int j = 0; j < dn; j++) numel = dd[j] < 0 || numel < 0 ? -1 : numel * dd[j];
            if (!oar_dim_eq(numel, k))
                return oar_ic_error(c, OAR_ERR_SHAPE, "input %s '%s' has shape %s; expected %lld values "
                                    "(num_total_classes)", dist[i], nm(oar_ic_in_name(c, dist[i], 0)),
                                    oar_shape_str(dd, dn, b, sizeof b), (long long)k);
            if (i == 1) OAR_TRY(want_dtype(c, dist[i], OAR_INT32, OAR_INT64, "int32 or int64"));
            else OAR_TRY(want_dtype(c, dist[i], OAR_FP32, OAR_FP64, "float32 or float64"));
        }
    }
    const int dt = oar_ic_in_dtype(c, "Input", 0);
    int64_t cd[2] = {n, 1}, sd[2] = {n, t + a->num_neg_samples};
    OAR_TRY(oar_ic_set_out(c, "Cost", 0, cd, 2, dt));
    if (!a->is_test && !(out_wanted(c, "SampleLogits", 0) && out_wanted(c, "SampleLabels", 0)))
        return oar_ic_error(c, OAR_ERR_NOT_FOUND, "outputs SampleLogits and SampleLabels are needed unless is_test");
    if (out_wanted(c, "SampleLogits", 0)) OAR_TRY(oar_ic_set_out(c, "SampleLogits", 0, sd, 2, dt));
    if (out_wanted(c, "SampleLabels", 0)) OAR_TRY(oar_ic_set_out(c, "SampleLabels", 0, sd, 2, OAR_INT64));
    return OAR_OK;
}

/* a wanted grad output gets the dims and dtype of input `like` */
static int grad_like(oar_infer_ctx_t *c, const char *gslot, const char *like)
{
    if (!oar_ic_out_present(c, gslot)) return OAR_OK;
    int nd;
    const int64_t *d = oar_ic_in_dims(c, like, 0, &nd);
    if (!d) return OAR_ERR_SHAPE;
    return oar_ic_set_out(c, gslot, 0, d, nd, oar_ic_in_dtype(c, like, 0));
}

/* W@GRAD with is_sparse: a SELECTED_ROWS whose rows the kernel fills */
static int sparse_grad_like(oar_infer_ctx_t *c, const char *gslot, const char *like, bool is_sparse)
{
    if (!oar_ic_out_present(c, gslot)) return OAR_OK;
    if (is_sparse) {
        if (oar_ic_runtime(c)) return OAR_OK;
        OAR_TRY(oar_ic_set_out_var_type(c, gslot, 0, OAR_VAR_SELECTED_ROWS));
    }
    return grad_like(c, gslot, like);
}

static int nce_grad_infer(oar_infer_ctx_t *c)
{
    const oar_nce_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int sn, gn;
    char b1[160], b2[160];
    const int64_t *sd = oar_ic_in_dims(c, "SampleLogits", 0, &sn), *xd;
    const int64_t *gd = sd ? oar_ic_in_dims(c, "Cost@GRAD", 0, &gn) : NULL;
    if (!gd) return OAR_ERR_SHAPE;
    OAR_TRY(oar_ic_check_2d(c, "Input", -1, -1, "[N, D]", &xd));
    if (sn != 2 || !oar_dim_eq(sd[0], xd[0]) || gn != 2 || !oar_dim_eq(gd[0], xd[0]) || !oar_dim_eq(gd[1], 1))
        return oar_ic_error(c, OAR_ERR_SHAPE, "SampleLogits (%s) and Cost@GRAD (%s) must be [N, T + S] and [N, 1] "
                            "with N = %lld (Input's rows)", oar_shape_str(sd, sn, b1, sizeof b1),
                            oar_shape_str(gd, gn, b2, sizeof b2), (long long)xd[0]);
    OAR_TRY(grad_like(c, "Input@GRAD", "Input"));
    OAR_TRY(sparse_grad_like(c, "Weight@GRAD", "Weight", a->is_sparse));
    return grad_like(c, "Bias@GRAD", "Bias");
}

/* ---- hierarchical_sigmoid ------------------------------------------------ */

/* the bits of v: Fluid's FindLastSet, 0 for 0 */
static int bit_length(uint64_t v)
{
    int n = 0;
    while (v) { n++; v >>= 1; }
    return n;
}

static int hsig_infer(oar_infer_ctx_t *c)
{
    const oar_hsig_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const int64_t *xd, *wd;
    char b[160];
    OAR_TRY(check_x_w(c, "X", "W", &xd, &wd));
    const int64_t n = xd[0];
    OAR_TRY(want_column(c, "Label", n, "one class per row of X"));
    OAR_TRY(want_dtype(c, "Label", OAR_INT64, OAR_INT64, "int64"));
    const bool custom = oar_ic_in_present(c, "PathTable");
    int64_t len;
    if (custom) {
        if (!oar_ic_in_present(c, "PathCode"))
            return oar_ic_error(c, OAR_ERR_NOT_FOUND, "a custom tree (PathTable '%s') needs PathCode too",
                                nm(oar_ic_in_name(c, "PathTable", 0)));
        const int64_t *pt, *pc;
        OAR_TRY(oar_ic_check_2d(c, "PathTable", n, -1, "[N, L] (N: X's rows)", &pt));
        OAR_TRY(oar_ic_check_2d(c, "PathCode", n, pt[1], "[N, L], PathTable's shape", &pc));
        OAR_TRY(want_dtype(c, "PathTable", OAR_INT64, OAR_INT64, "int64"));
        OAR_TRY(want_dtype(c, "PathCode", OAR_INT64, OAR_INT64, "int64"));
        len = pt[1];
    } else {
        if (oar_ic_in_present(c, "PathCode"))
            return oar_ic_error(c, OAR_ERR_INVALID, "PathCode '%s' is given without PathTable",
                                nm(oar_ic_in_name(c, "PathCode", 0)));
        if (a->num_classes < 2)
            return oar_ic_error(c, OAR_ERR_INVALID, "num_classes is %d; the default tree needs at least 2",
                                a->num_classes);
        if (wd[0] >= 0 && wd[0] < a->num_classes - 1)
            return oar_ic_error(c, OAR_ERR_SHAPE, "W '%s' has shape %s; the default tree over %d classes needs %d "
                                "rows (one per inner node)", nm(oar_ic_in_name(c, "W", 0)),
                                oar_shape_str(wd, 2, b, sizeof b), a->num_classes, a->num_classes - 1);
        len = bit_length((uint64_t)(a->num_classes - 1));
    }
    if (oar_ic_in_present(c, "Bias")) {
        OAR_TRY(want_column(c, "Bias", wd[0], "one bias per row of W"));
        OAR_TRY(oar_ic_check_float(c, "Bias", oar_ic_in_dtype(c, "X", 0)));
    }
    const int dt = oar_ic_in_dtype(c, "X", 0);
    int64_t od[2] = {n, 1}, pd[2] = {n, len};
    OAR_TRY(oar_ic_set_out(c, "Out", 0, od, 2, dt));
    OAR_TRY(oar_ic_set_out(c, "PreOut", 0, pd, 2, dt));
    if (out_wanted(c, "W_Out", 0)) OAR_TRY(oar_ic_set_out(c, "W_Out", 0, wd, 2, dt));
    return OAR_OK;
}

static int hsig_grad_infer(oar_infer_ctx_t *c)
{
    const oar_hsig_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const int64_t *xd, *pd;
    OAR_TRY(oar_ic_check_2d(c, "X", -1, -1, "[N, D]", &xd));
    OAR_TRY(oar_ic_check_2d(c, "PreOut", xd[0], -1, "[N, L] (N: X's rows)", &pd));
    OAR_TRY(want_column(c, "Out@GRAD", xd[0], "one per row of X"));
    OAR_TRY(grad_like(c, "X@GRAD", "X"));
    OAR_TRY(sparse_grad_like(c, "W@GRAD", "W", a->is_sparse));
    return grad_like(c, "Bias@GRAD", "Bias");
}

/* ---- sample_logits --------------------------------------------------------- */

static int sl_infer(oar_infer_ctx_t *c)
{
    const oar_sl_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const int64_t *ld, *yd;
    OAR_TRY(oar_ic_check_2d(c, "Logits", -1, -1, "[N, K]", &ld));
    OAR_TRY(oar_ic_check_float(c, "Logits", -1));
    OAR_TRY(oar_ic_check_2d(c, "Labels", ld[0], -1, "[N, T] (N: Logits' rows)", &yd));
    OAR_TRY(want_dtype(c, "Labels", OAR_INT64, OAR_INT64, "int64"));
    const int64_t n = ld[0], t = yd[1], m = t < 0 ? -1 : t + a->num_samples;
    const int dt = oar_ic_in_dtype(c, "Logits", 0);
    if (a->use_customized_samples) {
        for (int i = 0; i < 2; i++) {
            const char *s = i ? "CustomizedProbabilities" : "CustomizedSamples";
            if (!oar_ic_in_present(c, s))
                return oar_ic_error(c, OAR_ERR_NOT_FOUND, "use_customized_samples needs input %s", s);
            OAR_TRY(oar_ic_check_2d(c, s, n, m, "[N, T + num_samples]", NULL));
        }
        OAR_TRY(want_dtype(c, "CustomizedSamples", OAR_INT64, OAR_INT64, "int64"));
        OAR_TRY(oar_ic_check_float(c, "CustomizedProbabilities", dt));
    } else if (a->uniq && ld[1] >= 0 && a->num_samples > ld[1] - 1) {
        return oar_ic_error(c, OAR_ERR_INVALID, "num_samples is %d but the log-uniform sampler over %lld classes "
                            "draws at most %lld distinct ones (uniq)", a->num_samples, (long long)ld[1],
                            (long long)(ld[1] - 1));
    }
    int64_t sd[2] = {n, m};
    OAR_TRY(oar_ic_set_out(c, "Samples", 0, sd, 2, OAR_INT64));
    OAR_TRY(oar_ic_set_out(c, "Probabilities", 0, sd, 2, dt));
    OAR_TRY(oar_ic_set_out(c, "SampledLogits", 0, sd, 2, dt));
    OAR_TRY(oar_ic_set_out(c, "SampledLabels", 0, yd, 2, OAR_INT64));
    OAR_TRY(oar_ic_set_out(c, "LogitsDim", 0, ld, 2, dt));
    return oar_ic_set_out(c, "LabelsDim", 0, yd, 2, OAR_INT64);
}

static int sl_grad_infer(oar_infer_ctx_t *c)
{
    const int64_t *ld, *sd;
    OAR_TRY(oar_ic_check_2d(c, "LogitsDim", -1, -1, "[N, K]", &ld));
    OAR_TRY(oar_ic_check_2d(c, "Samples", ld[0], -1, "[N, T + S]", &sd));
    OAR_TRY(oar_ic_check_2d(c, "SampledLogits@GRAD", ld[0], sd[1], "[N, T + S], Samples' shape", NULL));
    if (!oar_ic_out_present(c, "Logits@GRAD")) return OAR_OK;
    return oar_ic_set_out(c, "Logits@GRAD", 0, ld, 2, oar_ic_in_dtype(c, "SampledLogits@GRAD", 0));
}

#define OAR_OPS_DEFINE
#include "ops/sampling.h"   /* the tables, the decoders and the registration */
