/* loss_ext_tpl.h — the bodies of kernels/cpu/loss_ext.c for one element
 * type: included once per dtype with T (the C type), DT (its OAR_ dtype)
 * and SFX (a name suffix) defined. */
#define F_(a, b) a##_##b
#define F(a, b) F_(a, b)
#define FN(name) F(name, SFX)

/* ---- smooth_l1_loss */
static int FN(sl1_fwd)(oar_kernel_ctx_t *k)
{
    const oar_sl1_attrs_t *a = oar_k_attrs(k);
    const oar_tensor_t *xt = oar_k_input(k, OAR_SL1_X, 0);
    const void *xv, *yv, *iv = NULL, *ov = NULL;
    OAR_TRY(oar_k_input_sized(k, OAR_SL1_X, "X", DT, -1, &xv));
    const int64_t n = oar_tensor_numel_of(xt), rows = xt->ndim > 0 ? xt->dims[0] : 1;
    OAR_TRY(oar_k_input_sized(k, OAR_SL1_Y, "Y", DT, n, &yv));
    /* the weights count only when both are given (Fluid's has_weight) */
    if (oar_k_input(k, OAR_SL1_INSIDEWEIGHT, 0) && oar_k_input(k, OAR_SL1_OUTSIDEWEIGHT, 0)) {
        OAR_TRY(oar_k_input_sized(k, OAR_SL1_INSIDEWEIGHT, "InsideWeight", DT, n, &iv));
        OAR_TRY(oar_k_input_sized(k, OAR_SL1_OUTSIDEWEIGHT, "OutsideWeight", DT, n, &ov));
    }
    void *dv, *outv;
    OAR_TRY(oar_k_output_sized(k, OAR_SL1_DIFF, "Diff", DT, n, false, &dv));
    OAR_TRY(oar_k_output_sized(k, OAR_SL1_OUT, "Out", DT, rows, false, &outv));
    const T *x = xv, *y = yv, *iw = iv, *ow = ov;
    T *diff = dv, *out = outv;
    const T s2 = (T)a->sigma * (T)a->sigma;
    const int64_t cols = rows > 0 ? n / rows : 0;
    for (int64_t r = 0; r < rows; r++) {
        T sum = 0;
        for (int64_t j = r * cols; j < (r + 1) * cols; j++) {
            T d = x[j] - y[j];
            if (iw) d *= iw[j];
            diff[j] = d;
            T ad = d < 0 ? -d : d;
            T e = ad < 1 / s2 ? (T)0.5 * d * d * s2 : ad - (T)0.5 / s2;
            sum += ow ? e * ow[j] : e;
        }
        out[r] = sum;
    }
    return OAR_OK;
}

static int FN(sl1_bwd)(oar_kernel_ctx_t *k)
{
    const oar_sl1_attrs_t *a = oar_k_attrs(k);
    const oar_tensor_t *dt = oar_k_input(k, OAR_SL1G_DIFF, 0);
    const void *dv, *gv, *iv = NULL, *ov = NULL;
    OAR_TRY(oar_k_input_sized(k, OAR_SL1G_DIFF, "Diff", DT, -1, &dv));
    const int64_t n = oar_tensor_numel_of(dt), rows = dt->ndim > 0 ? dt->dims[0] : 1;
    OAR_TRY(oar_k_input_sized(k, OAR_SL1G_DOUT, "Out@GRAD", DT, rows, &gv));
    if (oar_k_input(k, OAR_SL1G_INSIDEWEIGHT, 0) && oar_k_input(k, OAR_SL1G_OUTSIDEWEIGHT, 0)) {
        OAR_TRY(oar_k_input_sized(k, OAR_SL1G_INSIDEWEIGHT, "InsideWeight", DT, n, &iv));
        OAR_TRY(oar_k_input_sized(k, OAR_SL1G_OUTSIDEWEIGHT, "OutsideWeight", DT, n, &ov));
    }
    void *dxv, *dyv;
    OAR_TRY(oar_k_output_sized(k, OAR_SL1G_DX, "X@GRAD", DT, n, true, &dxv));
    OAR_TRY(oar_k_output_sized(k, OAR_SL1G_DY, "Y@GRAD", DT, n, true, &dyv));
    const T *diff = dv, *g = gv, *iw = iv, *ow = ov;
    T *dx = dxv, *dy = dyv;
    const T s2 = (T)a->sigma * (T)a->sigma;
    const int64_t cols = rows > 0 ? n / rows : 0;
    for (int64_t j = 0; j < n; j++) {
        T d = diff[j], ad = d < 0 ? -d : d;
        T v = ad < 1 / s2 ? s2 * d : (T)((d > 0) - (d < 0));
        if (iw) v *= iw[j] * ow[j];
        v *= g[j / cols];
        if (dx) dx[j] = v;
        if (dy) dy[j] = -v;
    }
    return OAR_OK;
}

/* ---- huber_loss */
static int FN(huber_fwd)(oar_kernel_ctx_t *k)
{
    const oar_huber_attrs_t *a = oar_k_attrs(k);
    const void *xv, *yv;
    OAR_TRY(oar_k_input_sized(k, OAR_HUBER_X, "X", DT, -1, &xv));
    const int64_t n = oar_tensor_numel_of(oar_k_input(k, OAR_HUBER_X, 0));
    OAR_TRY(oar_k_input_sized(k, OAR_HUBER_Y, "Y", DT, n, &yv));
    void *rv, *ov;
    OAR_TRY(oar_k_output_sized(k, OAR_HUBER_RESIDUAL, "Residual", DT, n, false, &rv));
    OAR_TRY(oar_k_output_sized(k, OAR_HUBER_OUT, "Out", DT, n, false, &ov));
    const T *x = xv, *y = yv, delta = (T)a->delta;
    T *res = rv, *out = ov;
    for (int64_t i = 0; i < n; i++) {
        T r = y[i] - x[i], ar = r < 0 ? -r : r;
        res[i] = r;
        out[i] = ar <= delta ? (T)0.5 * r * r : delta * (ar - (T)0.5 * delta);
    }
    return OAR_OK;
}

static int FN(huber_bwd)(oar_kernel_ctx_t *k)
{
    const oar_huber_attrs_t *a = oar_k_attrs(k);
    const void *rv, *gv;
    OAR_TRY(oar_k_input_sized(k, OAR_HUBERG_RESIDUAL, "Residual", DT, -1, &rv));
    const int64_t n = oar_tensor_numel_of(oar_k_input(k, OAR_HUBERG_RESIDUAL, 0));
    OAR_TRY(oar_k_input_sized(k, OAR_HUBERG_DOUT, "Out@GRAD", DT, n, &gv));
    void *dxv, *dyv;
    OAR_TRY(oar_k_output_sized(k, OAR_HUBERG_DX, "X@GRAD", DT, n, true, &dxv));
    OAR_TRY(oar_k_output_sized(k, OAR_HUBERG_DY, "Y@GRAD", DT, n, true, &dyv));
    const T *r = rv, *g = gv, delta = (T)a->delta;
    T *dx = dxv, *dy = dyv;
    for (int64_t i = 0; i < n; i++) {
        T c = r[i] > delta ? delta : r[i] < -delta ? -delta : r[i];   /* d loss / d Residual */
        if (dx) dx[i] = -c * g[i];
        if (dy) dy[i] = c * g[i];
    }
    return OAR_OK;
}

/* ---- log_loss */
static int FN(logl_fwd)(oar_kernel_ctx_t *k)
{
    const oar_logl_attrs_t *a = oar_k_attrs(k);
    const void *pv, *lv;
    OAR_TRY(oar_k_input_sized(k, OAR_LOGL_PREDICTED, "Predicted", DT, -1, &pv));
    const int64_t n = oar_tensor_numel_of(oar_k_input(k, OAR_LOGL_PREDICTED, 0));
    OAR_TRY(oar_k_input_sized(k, OAR_LOGL_LABELS, "Labels", DT, n, &lv));
    void *ov;
    OAR_TRY(oar_k_output_sized(k, OAR_LOGL_LOSS, "Loss", DT, n, false, &ov));
    const T *p = pv, *l = lv, eps = (T)a->epsilon;
    T *out = ov;
    for (int64_t i = 0; i < n; i++) out[i] = -l[i] * log(p[i] + eps) - (1 - l[i]) * log(1 - p[i] + eps);
    return OAR_OK;
}

static int FN(logl_bwd)(oar_kernel_ctx_t *k)
{
    const oar_logl_attrs_t *a = oar_k_attrs(k);
    const void *pv, *lv, *gv;
    OAR_TRY(oar_k_input_sized(k, OAR_LOGLG_PREDICTED, "Predicted", DT, -1, &pv));
    const int64_t n = oar_tensor_numel_of(oar_k_input(k, OAR_LOGLG_PREDICTED, 0));
    OAR_TRY(oar_k_input_sized(k, OAR_LOGLG_LABELS, "Labels", DT, n, &lv));
    OAR_TRY(oar_k_input_sized(k, OAR_LOGLG_DLOSS, "Loss@GRAD", DT, n, &gv));
    void *dv;
    OAR_TRY(oar_k_output_sized(k, OAR_LOGLG_DPRED, "Predicted@GRAD", DT, n, true, &dv));
    if (!dv) return OAR_OK;
    const T *p = pv, *l = lv, *g = gv, eps = (T)a->epsilon;
    T *d = dv;
    for (int64_t i = 0; i < n; i++) d[i] = g[i] * (-l[i] / (p[i] + eps) + (1 - l[i]) / (1 - p[i] + eps));
    return OAR_OK;
}

/* ---- hinge_loss */
static int FN(hinge_fwd)(oar_kernel_ctx_t *k)
{
    const void *xv, *lv;
    OAR_TRY(oar_k_input_sized(k, OAR_HINGE_LOGITS, "Logits", DT, -1, &xv));
    const int64_t n = oar_tensor_numel_of(oar_k_input(k, OAR_HINGE_LOGITS, 0));
    OAR_TRY(oar_k_input_sized(k, OAR_HINGE_LABELS, "Labels", DT, n, &lv));
    void *ov;
    OAR_TRY(oar_k_output_sized(k, OAR_HINGE_LOSS, "Loss", DT, n, false, &ov));
    const T *x = xv, *l = lv;
    T *out = ov;
    for (int64_t i = 0; i < n; i++) {
        T v = 1 - x[i] * (2 * l[i] - 1);
        out[i] = v > 0 ? v : 0;
    }
    return OAR_OK;
}

static int FN(hinge_bwd)(oar_kernel_ctx_t *k)
{
    const void *xv, *lv, *gv;
    OAR_TRY(oar_k_input_sized(k, OAR_HINGEG_LOGITS, "Logits", DT, -1, &xv));
    const int64_t n = oar_tensor_numel_of(oar_k_input(k, OAR_HINGEG_LOGITS, 0));
    OAR_TRY(oar_k_input_sized(k, OAR_HINGEG_LABELS, "Labels", DT, n, &lv));
    OAR_TRY(oar_k_input_sized(k, OAR_HINGEG_DLOSS, "Loss@GRAD", DT, n, &gv));
    void *dv;
    OAR_TRY(oar_k_output_sized(k, OAR_HINGEG_DLOGITS, "Logits@GRAD", DT, n, true, &dv));
    if (!dv) return OAR_OK;
    const T *x = xv, *l = lv, *g = gv;
    T *d = dv;
    for (int64_t i = 0; i < n; i++) {
        T s = 2 * l[i] - 1;
        d[i] = x[i] * s < 1 ? -g[i] * s : 0;
    }
    return OAR_OK;
}

/* ---- kldiv_loss */
static int FN(kldiv_fwd)(oar_kernel_ctx_t *k)
{
    const oar_kldiv_attrs_t *a = oar_k_attrs(k);
    const oar_tensor_t *xt = oar_k_input(k, OAR_KLDIV_X, 0);
    const void *xv, *tv;
    OAR_TRY(oar_k_input_sized(k, OAR_KLDIV_X, "X", DT, -1, &xv));
    const int64_t n = oar_tensor_numel_of(xt), rows = xt->ndim > 0 ? xt->dims[0] : 1;
    OAR_TRY(oar_k_input_sized(k, OAR_KLDIV_TARGET, "Target", DT, n, &tv));
    const bool none = a->reduction == OAR_KLDIV_REDUCTION_NONE;
    void *ov;
    OAR_TRY(oar_k_output_sized(k, OAR_KLDIV_LOSS, "Loss", DT, none ? n : 1, false, &ov));
    const T *x = xv, *t = tv;
    T *out = ov, sum = 0;
    for (int64_t i = 0; i < n; i++) {
        T v = t[i] > 0 ? t[i] * (log(t[i]) - x[i]) : 0;
        if (none) out[i] = v;
        else sum += v;
    }
    if (none) return OAR_OK;
    if (a->reduction == OAR_KLDIV_REDUCTION_MEAN) sum /= (T)n;
    else if (a->reduction == OAR_KLDIV_REDUCTION_BATCHMEAN) sum /= (T)rows;
    out[0] = sum;
    return OAR_OK;
}

static int FN(kldiv_bwd)(oar_kernel_ctx_t *k)
{
    const oar_kldiv_attrs_t *a = oar_k_attrs(k);
    const oar_tensor_t *xt = oar_k_input(k, OAR_KLDIVG_X, 0), *gt = oar_k_input(k, OAR_KLDIVG_DLOSS, 0);
    const void *xv, *tv, *gv;
    OAR_TRY(oar_k_input_sized(k, OAR_KLDIVG_X, "X", DT, -1, &xv));
    const int64_t n = oar_tensor_numel_of(xt), rows = xt->ndim > 0 ? xt->dims[0] : 1;
    OAR_TRY(oar_k_input_sized(k, OAR_KLDIVG_TARGET, "Target", DT, n, &tv));
    const bool none = a->reduction == OAR_KLDIV_REDUCTION_NONE;
    OAR_TRY(oar_k_input_sized(k, OAR_KLDIVG_DLOSS, "Loss@GRAD", DT, none ? n : 1, &gv));
    (void)gt;
    void *dv;
    OAR_TRY(oar_k_output_sized(k, OAR_KLDIVG_DX, "X@GRAD", DT, n, true, &dv));
    if (!dv) return OAR_OK;
    const T *t = tv, *g = gv;
    T *d = dv, scale = 1;
    if (a->reduction == OAR_KLDIV_REDUCTION_MEAN) scale = (T)1 / (T)n;
    else if (a->reduction == OAR_KLDIV_REDUCTION_BATCHMEAN) scale = (T)1 / (T)rows;
    for (int64_t i = 0; i < n; i++) d[i] = t[i] > 0 ? -t[i] * g[none ? i : 0] * scale : 0;
    return OAR_OK;
}

/* ---- bce_loss */
static int FN(bce_fwd)(oar_kernel_ctx_t *k)
{
    const void *xv, *lv;
    OAR_TRY(oar_k_input_sized(k, OAR_BCE_X, "X", DT, -1, &xv));
    const int64_t n = oar_tensor_numel_of(oar_k_input(k, OAR_BCE_X, 0));
    OAR_TRY(oar_k_input_sized(k, OAR_BCE_LABEL, "Label", DT, n, &lv));
    void *ov;
    OAR_TRY(oar_k_output_sized(k, OAR_BCE_OUT, "Out", DT, n, false, &ov));
    const T *x = xv, *l = lv;
    T *out = ov;
    for (int64_t i = 0; i < n; i++) {
        if (!(x[i] >= 0 && x[i] <= 1))
            return oar_k_error(k, OAR_ERR_RANGE, "input X '%s' holds %g at element %lld; it must lie in [0, 1]",
                               nm(oar_k_input_name(k, OAR_BCE_X, 0)), (double)x[i], (long long)i);
        T l1 = log(1 - x[i]), l0 = log(x[i]);   /* clamped at -100, as Fluid (and PyTorch) */
        out[i] = (l[i] - 1) * (l1 > -100 ? l1 : -100) - l[i] * (l0 > -100 ? l0 : -100);
    }
    return OAR_OK;
}

static int FN(bce_bwd)(oar_kernel_ctx_t *k)
{
    const void *xv, *lv, *gv;
    OAR_TRY(oar_k_input_sized(k, OAR_BCEG_X, "X", DT, -1, &xv));
    const int64_t n = oar_tensor_numel_of(oar_k_input(k, OAR_BCEG_X, 0));
    OAR_TRY(oar_k_input_sized(k, OAR_BCEG_LABEL, "Label", DT, n, &lv));
    OAR_TRY(oar_k_input_sized(k, OAR_BCEG_DOUT, "Out@GRAD", DT, n, &gv));
    void *dv;
    OAR_TRY(oar_k_output_sized(k, OAR_BCEG_DX, "X@GRAD", DT, n, true, &dv));
    if (!dv) return OAR_OK;
    const T *x = xv, *l = lv, *g = gv;
    T *d = dv;
    for (int64_t i = 0; i < n; i++) {
        T den = (1 - x[i]) * x[i];
        d[i] = g[i] * (x[i] - l[i]) / (den > (T)1e-12 ? den : (T)1e-12);
    }
    return OAR_OK;
}

/* ---- margin_rank_loss */
static int FN(mrl_fwd)(oar_kernel_ctx_t *k)
{
    const oar_mrl_attrs_t *a = oar_k_attrs(k);
    const void *av, *bv, *lv;
    OAR_TRY(oar_k_input_sized(k, OAR_MRL_X1, "X1", DT, -1, &av));
    const int64_t n = oar_tensor_numel_of(oar_k_input(k, OAR_MRL_X1, 0));
    OAR_TRY(oar_k_input_sized(k, OAR_MRL_X2, "X2", DT, n, &bv));
    OAR_TRY(oar_k_input_sized(k, OAR_MRL_LABEL, "Label", DT, n, &lv));
    void *actv, *ov;
    OAR_TRY(oar_k_output_sized(k, OAR_MRL_ACTIVATED, "Activated", DT, n, false, &actv));
    OAR_TRY(oar_k_output_sized(k, OAR_MRL_OUT, "Out", DT, n, false, &ov));
    const T *x1 = av, *x2 = bv, *l = lv, m = (T)a->margin;
    T *act = actv, *out = ov;
    for (int64_t i = 0; i < n; i++) {
        T v = -l[i] * (x1[i] - x2[i]) + m;
        out[i] = v > 0 ? v : 0;
        act[i] = v > 0 ? 1 : 0;
    }
    return OAR_OK;
}

static int FN(mrl_bwd)(oar_kernel_ctx_t *k)
{
    const void *av, *gv, *lv;
    OAR_TRY(oar_k_input_sized(k, OAR_MRLG_ACTIVATED, "Activated", DT, -1, &av));
    const int64_t n = oar_tensor_numel_of(oar_k_input(k, OAR_MRLG_ACTIVATED, 0));
    OAR_TRY(oar_k_input_sized(k, OAR_MRLG_DOUT, "Out@GRAD", DT, n, &gv));
    OAR_TRY(oar_k_input_sized(k, OAR_MRLG_LABEL, "Label", DT, n, &lv));
    void *d1v, *d2v;
    OAR_TRY(oar_k_output_sized(k, OAR_MRLG_DX1, "X1@GRAD", DT, n, true, &d1v));
    OAR_TRY(oar_k_output_sized(k, OAR_MRLG_DX2, "X2@GRAD", DT, n, true, &d2v));
    const T *act = av, *g = gv, *l = lv;
    T *d1 = d1v, *d2 = d2v;
    for (int64_t i = 0; i < n; i++) {
        T v = g[i] * act[i] * l[i];
        if (d1) d1[i] = -v;
        if (d2) d2[i] = v;
    }
    return OAR_OK;
}

/* ---- rank_loss */
static int FN(rankl_fwd)(oar_kernel_ctx_t *k)
{
    const void *lv, *av, *bv;
    OAR_TRY(oar_k_input_sized(k, OAR_RANKL_LABEL, "Label", DT, -1, &lv));
    const int64_t n = oar_tensor_numel_of(oar_k_input(k, OAR_RANKL_LABEL, 0));
    OAR_TRY(oar_k_input_sized(k, OAR_RANKL_LEFT, "Left", DT, n, &av));
    OAR_TRY(oar_k_input_sized(k, OAR_RANKL_RIGHT, "Right", DT, n, &bv));
    void *ov;
    OAR_TRY(oar_k_output_sized(k, OAR_RANKL_OUT, "Out", DT, n, false, &ov));
    const T *l = lv, *left = av, *right = bv;
    T *out = ov;
    for (int64_t i = 0; i < n; i++) {
        T z = left[i] - right[i];
        /* log(1 + e^z) without overflow */
        out[i] = (z > 0 ? z : 0) + log1p(exp(-(z < 0 ? -z : z))) - l[i] * z;
    }
    return OAR_OK;
}

static int FN(rankl_bwd)(oar_kernel_ctx_t *k)
{
    const void *lv, *av, *bv, *gv;
    OAR_TRY(oar_k_input_sized(k, OAR_RANKLG_LABEL, "Label", DT, -1, &lv));
    const int64_t n = oar_tensor_numel_of(oar_k_input(k, OAR_RANKLG_LABEL, 0));
    OAR_TRY(oar_k_input_sized(k, OAR_RANKLG_LEFT, "Left", DT, n, &av));
    OAR_TRY(oar_k_input_sized(k, OAR_RANKLG_RIGHT, "Right", DT, n, &bv));
    OAR_TRY(oar_k_input_sized(k, OAR_RANKLG_DOUT, "Out@GRAD", DT, n, &gv));
    void *dlv, *drv;
    OAR_TRY(oar_k_output_sized(k, OAR_RANKLG_DLEFT, "Left@GRAD", DT, n, true, &dlv));
    OAR_TRY(oar_k_output_sized(k, OAR_RANKLG_DRIGHT, "Right@GRAD", DT, n, true, &drv));
    const T *l = lv, *left = av, *right = bv, *g = gv;
    T *dl = dlv, *dr = drv;
    for (int64_t i = 0; i < n; i++) {
        T v = g[i] * (1 / (1 + exp(right[i] - left[i])) - l[i]);
        if (dl) dl[i] = v;
        if (dr) dr[i] = -v;
    }
    return OAR_OK;
}

/* ---- modified_huber_loss */
static int FN(mhl_fwd)(oar_kernel_ctx_t *k)
{
    const void *xv, *yv;
    OAR_TRY(oar_k_input_sized(k, OAR_MHL_X, "X", DT, -1, &xv));
    const int64_t n = oar_tensor_numel_of(oar_k_input(k, OAR_MHL_X, 0));
    OAR_TRY(oar_k_input_sized(k, OAR_MHL_Y, "Y", DT, n, &yv));
    void *iv, *ov;
    OAR_TRY(oar_k_output_sized(k, OAR_MHL_INTERMEDIATEVAL, "IntermediateVal", DT, n, false, &iv));
    OAR_TRY(oar_k_output_sized(k, OAR_MHL_OUT, "Out", DT, n, false, &ov));
    const T *x = xv, *y = yv;
    T *inter = iv, *out = ov;
    for (int64_t i = 0; i < n; i++) {
        if (y[i] != 0 && y[i] != 1)
            return oar_k_error(k, OAR_ERR_RANGE, "input Y '%s' holds %g at element %lld; labels must be 0 or 1",
                               nm(oar_k_input_name(k, OAR_MHL_Y, 0)), (double)y[i], (long long)i);
        T v = x[i] * (2 * y[i] - 1);
        inter[i] = v;
        out[i] = v < -1 ? -4 * v : v < 1 ? (1 - v) * (1 - v) : 0;
    }
    return OAR_OK;
}

static int FN(mhl_bwd)(oar_kernel_ctx_t *k)
{
    const void *yv, *iv, *gv;
    OAR_TRY(oar_k_input_sized(k, OAR_MHLG_INTERMEDIATEVAL, "IntermediateVal", DT, -1, &iv));
    const int64_t n = oar_tensor_numel_of(oar_k_input(k, OAR_MHLG_INTERMEDIATEVAL, 0));
    OAR_TRY(oar_k_input_sized(k, OAR_MHLG_Y, "Y", DT, n, &yv));
    OAR_TRY(oar_k_input_sized(k, OAR_MHLG_DOUT, "Out@GRAD", DT, n, &gv));
    void *dv;
    OAR_TRY(oar_k_output_sized(k, OAR_MHLG_DX, "X@GRAD", DT, n, true, &dv));
    if (!dv) return OAR_OK;
    const T *y = yv, *v = iv, *g = gv;
    T *d = dv;
    for (int64_t i = 0; i < n; i++) {
        T s = 2 * y[i] - 1;
        d[i] = v[i] < -1 ? -4 * s * g[i] : v[i] < 1 ? -2 * (1 - v[i]) * s * g[i] : 0;
    }
    return OAR_OK;
}

/* ---- label_smooth */
static int FN(lsm_fwd)(oar_kernel_ctx_t *k)
{
    const oar_lsm_attrs_t *a = oar_k_attrs(k);
    const oar_tensor_t *xt = oar_k_input(k, OAR_LSM_X, 0);
    const void *xv, *pv = NULL;
    OAR_TRY(oar_k_input_sized(k, OAR_LSM_X, "X", DT, -1, &xv));
    const int64_t n = oar_tensor_numel_of(xt), C = xt->ndim > 0 ? xt->dims[xt->ndim - 1] : 1;
    if (oar_k_input(k, OAR_LSM_PRIORDIST, 0)) OAR_TRY(oar_k_input_sized(k, OAR_LSM_PRIORDIST, "PriorDist", DT, C, &pv));
    void *ov;
    OAR_TRY(oar_k_output_sized(k, OAR_LSM_OUT, "Out", DT, n, false, &ov));
    const T *x = xv, *p = pv, eps = (T)a->epsilon;
    T *out = ov;
    for (int64_t i = 0; i < n; i++) out[i] = (1 - eps) * x[i] + (p ? eps * p[i % C] : eps / (T)C);
    return OAR_OK;
}

static int FN(lsm_bwd)(oar_kernel_ctx_t *k)
{
    const oar_lsm_attrs_t *a = oar_k_attrs(k);
    const void *gv;
    OAR_TRY(oar_k_input_sized(k, OAR_LSMG_DOUT, "Out@GRAD", DT, -1, &gv));
    const int64_t n = oar_tensor_numel_of(oar_k_input(k, OAR_LSMG_DOUT, 0));
    void *dv;
    OAR_TRY(oar_k_output_sized(k, OAR_LSMG_DX, "X@GRAD", DT, n, true, &dv));
    if (!dv) return OAR_OK;
    const T *g = gv, s = 1 - (T)a->epsilon;
    T *d = dv;
    for (int64_t i = 0; i < n; i++) d[i] = s * g[i];
    return OAR_OK;
}

/* ---- nll_loss: X [N, C, (H, W)], sample s of row i at X[(i C + c) map + s] */
static int FN(nll_fwd)(oar_kernel_ctx_t *k)
{
    const oar_nll_attrs_t *a = oar_k_attrs(k);
    const oar_tensor_t *xt = oar_k_input(k, OAR_NLL_X, 0);
    const void *xv, *lv, *wv = NULL;
    OAR_TRY(oar_k_input_sized(k, OAR_NLL_X, "X", DT, -1, &xv));
    int64_t N = 0, C = 0, map = 0;
    OAR_TRY(nll_geom(k, xt, &N, &C, &map));
    OAR_TRY(oar_k_input_sized(k, OAR_NLL_LABEL, "Label", OAR_INT64, N * map, &lv));
    if (oar_k_input(k, OAR_NLL_WEIGHT, 0)) OAR_TRY(oar_k_input_sized(k, OAR_NLL_WEIGHT, "Weight", DT, C, &wv));
    const bool none = a->reduction == OAR_NLL_REDUCTION_NONE;
    void *ov, *twv;
    OAR_TRY(oar_k_output_sized(k, OAR_NLL_OUT, "Out", DT, none ? N * map : 1, false, &ov));
    OAR_TRY(oar_k_output_sized(k, OAR_NLL_TOTAL_WEIGHT, "Total_weight", DT, 1, false, &twv));
    const T *x = xv, *w = wv;
    const int64_t *l = lv;
    T *out = ov, sum = 0, tw = 0;
    for (int64_t i = 0; i < N; i++)
        for (int64_t s = 0; s < map; s++) {
            const int64_t idx = i * map + s, c = l[idx];
            if (c == a->ignore_index) {
                if (none) out[idx] = 0;
                continue;
            }
            OAR_TRY(label_ok(k, OAR_NLL_LABEL, c, C, idx));
            const T wc = w ? w[c] : 1, v = -x[(i * C + c) * map + s] * wc;
            if (none) out[idx] = v;
            sum += v;
            tw += wc;
        }
    if (!none) out[0] = a->reduction == OAR_NLL_REDUCTION_MEAN && tw != 0 ? sum / tw : sum;
    *(T *)twv = tw;
    return OAR_OK;
}

static int FN(nll_bwd)(oar_kernel_ctx_t *k)
{
    const oar_nll_attrs_t *a = oar_k_attrs(k);
    const oar_tensor_t *xt = oar_k_input(k, OAR_NLLG_X, 0);
    const void *xv, *lv, *wv = NULL, *twv, *gv;
    OAR_TRY(oar_k_input_sized(k, OAR_NLLG_X, "X", DT, -1, &xv));
    int64_t N = 0, C = 0, map = 0;
    OAR_TRY(nll_geom(k, xt, &N, &C, &map));
    const bool none = a->reduction == OAR_NLL_REDUCTION_NONE;
    OAR_TRY(oar_k_input_sized(k, OAR_NLLG_LABEL, "Label", OAR_INT64, N * map, &lv));
    if (oar_k_input(k, OAR_NLLG_WEIGHT, 0)) OAR_TRY(oar_k_input_sized(k, OAR_NLLG_WEIGHT, "Weight", DT, C, &wv));
    OAR_TRY(oar_k_input_sized(k, OAR_NLLG_TOTAL_WEIGHT, "Total_weight", DT, 1, &twv));
    OAR_TRY(oar_k_input_sized(k, OAR_NLLG_DOUT, "Out@GRAD", DT, none ? N * map : 1, &gv));
    void *dv;
    const int64_t n = oar_tensor_numel_of(xt);
    OAR_TRY(oar_k_output_sized(k, OAR_NLLG_DX, "X@GRAD", DT, n, true, &dv));
    if (!dv) return OAR_OK;
    const T *w = wv, *g = gv, tw = *(const T *)twv;
    const int64_t *l = lv;
    T *d = dv;
    memset(d, 0, sizeof(T) * (size_t)n);
    for (int64_t i = 0; i < N; i++)
        for (int64_t s = 0; s < map; s++) {
            const int64_t idx = i * map + s, c = l[idx];
            if (c == a->ignore_index) continue;
            OAR_TRY(label_ok(k, OAR_NLLG_LABEL, c, C, idx));
            T v = -(w ? w[c] : 1) * g[none ? idx : 0];
            if (a->reduction == OAR_NLL_REDUCTION_MEAN) v /= tw;
            d[(i * C + c) * map + s] = v;
        }
    return OAR_OK;
}

/* ---- bpr_loss: Fluid clamps the infinities of exp and log to +-1e20 */
static T FN(tolerable)(T v) { return v == (T)INFINITY ? (T)1e20 : v == -(T)INFINITY ? (T)-1e20 : v; }

static int FN(bpr_fwd)(oar_kernel_ctx_t *k)
{
    const oar_tensor_t *xt = oar_k_input(k, OAR_BPR_X, 0);
    const void *xv, *lv;
    OAR_TRY(oar_k_input_sized(k, OAR_BPR_X, "X", DT, -1, &xv));
    int64_t rows = 0, C = 0;
    OAR_TRY(bpr_geom(k, xt, &rows, &C));
    OAR_TRY(oar_k_input_sized(k, OAR_BPR_LABEL, "Label", OAR_INT64, rows, &lv));
    void *yv;
    OAR_TRY(oar_k_output_sized(k, OAR_BPR_Y, "Y", DT, rows, false, &yv));
    const T *x = xv;
    const int64_t *l = lv;
    T *y = yv;
    for (int64_t i = 0; i < rows; i++) {
        OAR_TRY(label_ok(k, OAR_BPR_LABEL, l[i], C, i));
        const T *r = x + i * C, pos = r[l[i]];
        T sum = 0;
        for (int64_t j = 0; j < C; j++)
            if (j != l[i]) sum += FN(tolerable)(-log(1 + FN(tolerable)(exp(r[j] - pos))));
        y[i] = -sum / (T)(C - 1);
    }
    return OAR_OK;
}

static int FN(bpr_bwd)(oar_kernel_ctx_t *k)
{
    const oar_tensor_t *xt = oar_k_input(k, OAR_BPRG_X, 0);
    const void *xv, *lv, *gv;
    OAR_TRY(oar_k_input_sized(k, OAR_BPRG_X, "X", DT, -1, &xv));
    int64_t rows = 0, C = 0;
    OAR_TRY(bpr_geom(k, xt, &rows, &C));
    OAR_TRY(oar_k_input_sized(k, OAR_BPRG_LABEL, "Label", OAR_INT64, rows, &lv));
    OAR_TRY(oar_k_input_sized(k, OAR_BPRG_DY, "Y@GRAD", DT, rows, &gv));
    void *dv;
    OAR_TRY(oar_k_output_sized(k, OAR_BPRG_DX, "X@GRAD", DT, rows * C, true, &dv));
    if (!dv) return OAR_OK;
    const T *x = xv, *g = gv;
    const int64_t *l = lv;
    T *d = dv;
    for (int64_t i = 0; i < rows; i++) {
        OAR_TRY(label_ok(k, OAR_BPRG_LABEL, l[i], C, i));
        const T *r = x + i * C;
        T *dr = d + i * C;
        for (int64_t j = 0; j < C; j++) dr[j] = 0;
        for (int64_t j = 0; j < C; j++) {
            if (j == l[i]) continue;
            T v = -g[i] / ((T)(C - 1) * (1 + FN(tolerable)(exp(r[l[i]] - r[j]))));
            dr[l[i]] += v;
            dr[j] -= v;
        }
    }
    return OAR_OK;
}

/* ---- cross_entropy2 */
static int FN(ce2_fwd)(oar_kernel_ctx_t *k)
{
    const oar_ce2_attrs_t *a = oar_k_attrs(k);
    const oar_tensor_t *xt = oar_k_input(k, OAR_CE2_X, 0);
    const void *xv, *lv;
    OAR_TRY(oar_k_input_sized(k, OAR_CE2_X, "X", DT, -1, &xv));
    const int64_t n = oar_tensor_numel_of(xt), C = xt->ndim > 0 ? xt->dims[xt->ndim - 1] : 1;
    const int64_t rows = C > 0 ? n / C : 0;
    OAR_TRY(oar_k_input_sized(k, OAR_CE2_LABEL, "Label", OAR_INT64, rows, &lv));
    void *yv, *mv;
    OAR_TRY(oar_k_output_sized(k, OAR_CE2_Y, "Y", DT, rows, false, &yv));
    OAR_TRY(oar_k_output_sized(k, OAR_CE2_MATCHX, "MatchX", DT, rows, true, &mv));
    const T *x = xv;
    const int64_t *l = lv;
    T *y = yv, *m = mv;
    for (int64_t i = 0; i < rows; i++) {
        if (l[i] == a->ignore_index) {
            y[i] = 0;
            if (m) m[i] = 0;
            continue;
        }
        OAR_TRY(label_ok(k, OAR_CE2_LABEL, l[i], C, i));
        const T p = x[i * C + l[i]];
        y[i] = -FN(tolerable)(log(p));
        if (m) m[i] = p;
    }
    /* XShape holds no values: an empty buffer marks it written */
    oar_tensor_t *xs = oar_k_output(k, OAR_CE2_XSHAPE, 0);
    if (xs && !oar_tensor_mutable(xs, DT)) return OAR_ERR_NOMEM;
    return OAR_OK;
}

static int FN(ce2_bwd)(oar_kernel_ctx_t *k)
{
    const oar_ce2_attrs_t *a = oar_k_attrs(k);
    const oar_tensor_t *xs = oar_k_input(k, OAR_CE2G_XSHAPE, 0);
    if (!xs || xs->ndim < 2)
        return oar_k_error(k, OAR_ERR_SHAPE, "input XShape '%s' must hold X's shape and a 0",
                           nm(oar_k_input_name(k, OAR_CE2G_XSHAPE, 0)));
    int64_t n = 1;
    for (int i = 0; i < xs->ndim - 1; i++) n *= xs->dims[i];
    const int64_t C = xs->dims[xs->ndim - 2], rows = C > 0 ? n / C : 0;
    const void *lv, *mv, *gv;
    OAR_TRY(oar_k_input_sized(k, OAR_CE2G_LABEL, "Label", OAR_INT64, rows, &lv));
    OAR_TRY(oar_k_input_sized(k, OAR_CE2G_MATCHX, "MatchX", DT, rows, &mv));
    OAR_TRY(oar_k_input_sized(k, OAR_CE2G_DY, "Y@GRAD", DT, rows, &gv));
    void *dv;
    OAR_TRY(oar_k_output_sized(k, OAR_CE2G_DX, "X@GRAD", DT, n, true, &dv));
    if (!dv) return OAR_OK;
    const T *m = mv, *g = gv;
    const int64_t *l = lv;
    T *d = dv;
    memset(d, 0, sizeof(T) * (size_t)n);
    for (int64_t i = 0; i < rows; i++) {
        if (l[i] == a->ignore_index) continue;
        OAR_TRY(label_ok(k, OAR_CE2G_LABEL, l[i], C, i));
        d[i * C + l[i]] = -g[i] / m[i];
    }
    return OAR_OK;
}

OAR_REGISTER_KERNEL("smooth_l1_loss", OAR_PLACE_CPU, DT, FN(sl1_fwd))
OAR_REGISTER_KERNEL("smooth_l1_loss_grad", OAR_PLACE_CPU, DT, FN(sl1_bwd))
OAR_REGISTER_KERNEL("huber_loss", OAR_PLACE_CPU, DT, FN(huber_fwd))
OAR_REGISTER_KERNEL("huber_loss_grad", OAR_PLACE_CPU, DT, FN(huber_bwd))
OAR_REGISTER_KERNEL("log_loss", OAR_PLACE_CPU, DT, FN(logl_fwd))
OAR_REGISTER_KERNEL("log_loss_grad", OAR_PLACE_CPU, DT, FN(logl_bwd))
OAR_REGISTER_KERNEL("hinge_loss", OAR_PLACE_CPU, DT, FN(hinge_fwd))
OAR_REGISTER_KERNEL("hinge_loss_grad", OAR_PLACE_CPU, DT, FN(hinge_bwd))
OAR_REGISTER_KERNEL("kldiv_loss", OAR_PLACE_CPU, DT, FN(kldiv_fwd))
OAR_REGISTER_KERNEL("kldiv_loss_grad", OAR_PLACE_CPU, DT, FN(kldiv_bwd))
OAR_REGISTER_KERNEL("bce_loss", OAR_PLACE_CPU, DT, FN(bce_fwd))
OAR_REGISTER_KERNEL("bce_loss_grad", OAR_PLACE_CPU, DT, FN(bce_bwd))
OAR_REGISTER_KERNEL("margin_rank_loss", OAR_PLACE_CPU, DT, FN(mrl_fwd))
OAR_REGISTER_KERNEL("margin_rank_loss_grad", OAR_PLACE_CPU, DT, FN(mrl_bwd))
OAR_REGISTER_KERNEL("rank_loss", OAR_PLACE_CPU, DT, FN(rankl_fwd))
OAR_REGISTER_KERNEL("rank_loss_grad", OAR_PLACE_CPU, DT, FN(rankl_bwd))
OAR_REGISTER_KERNEL("modified_huber_loss", OAR_PLACE_CPU, DT, FN(mhl_fwd))
OAR_REGISTER_KERNEL("modified_huber_loss_grad", OAR_PLACE_CPU, DT, FN(mhl_bwd))
OAR_REGISTER_KERNEL("label_smooth", OAR_PLACE_CPU, DT, FN(lsm_fwd))
OAR_REGISTER_KERNEL("label_smooth_grad", OAR_PLACE_CPU, DT, FN(lsm_bwd))
OAR_REGISTER_KERNEL("nll_loss", OAR_PLACE_CPU, DT, FN(nll_fwd))
OAR_REGISTER_KERNEL("nll_loss_grad", OAR_PLACE_CPU, DT, FN(nll_bwd))
OAR_REGISTER_KERNEL("bpr_loss", OAR_PLACE_CPU, DT, FN(bpr_fwd))
OAR_REGISTER_KERNEL("bpr_loss_grad", OAR_PLACE_CPU, DT, FN(bpr_bwd))
OAR_REGISTER_KERNEL("cross_entropy2", OAR_PLACE_CPU, DT, FN(ce2_fwd))
OAR_REGISTER_KERNEL("cross_entropy_grad2", OAR_PLACE_CPU, DT, FN(ce2_bwd))

#undef FN
#undef F
#undef F_
