/* loss_aux.c — CPU kernels of center_loss, teacher_student_sigmoid_loss and
 * their grads (declared in src/ops/loss_aux.ops). */
#include <math.h>
#include <string.h>
#include "op.h"
#include "ops/loss_aux.h"
#include "scratch.h"

static const char *nm(const char *s) { return s ? s : "?"; }

static int64_t label_at(const oar_tensor_t *t, int64_t i)
{
    const void *p = oar_tensor_data((oar_tensor_t *)t);
    return t->dtype == OAR_INT64 ? ((const int64_t *)p)[i] : (int64_t)((const int32_t *)p)[i];
}

/* l(x, t) = max(x, 0) - x t + log(1 + exp(-|x|)): the logistic loss of x against t */
static double logistic(double x, double t) { return (x > 0 ? x : 0) - x * t + log1p(exp(-fabs(x))); }

#define AUX_KERNELS(SUF, T, DT)                                                                                      \
    static int center_fwd_##SUF(oar_kernel_ctx_t *k)                                                                 \
    {                                                                                                                \
        const oar_center_loss_attrs_t *at = oar_k_attrs(k);                                                          \
        const oar_tensor_t *x = oar_k_input(k, OAR_CENTER_LOSS_X, 0), *lb = oar_k_input(k, OAR_CENTER_LOSS_LABEL, 0); \
        const oar_tensor_t *ct = oar_k_input(k, OAR_CENTER_LOSS_CENTERS, 0);                                         \
        const oar_tensor_t *rt = oar_k_input(k, OAR_CENTER_LOSS_CENTERUPDATERATE, 0);                                \
        if (!x || !lb || !ct || !rt) return oar_k_error(k, OAR_ERR_NOT_FOUND, "X, Label, Centers and CenterUpdateRate are required"); \
        if (x->ndim != 2 || ct->ndim != 2 || ct->dims[1] != x->dims[1] || ct->dims[0] != at->cluster_num ||          \
            ct->dtype != DT || oar_tensor_numel_of(lb) != x->dims[0] || oar_tensor_numel_of(rt) != 1 ||              \
            (lb->dtype != OAR_INT64 && lb->dtype != OAR_INT32) || (rt->dtype != OAR_FP32 && rt->dtype != OAR_FP64))  \
            return oar_k_error(k, OAR_ERR_SHAPE, "X [N, D], Label [N] (int), Centers [%d, D] and CenterUpdateRate " \
                               "[1] do not fit", at->cluster_num);                                                   \
        const int64_t n = x->dims[0], d = x->dims[1], kc = at->cluster_num;                                          \
        for (int64_t i = 0; i < n; i++)                                                                              \
            if (label_at(lb, i) < 0 || label_at(lb, i) >= kc)                                                        \
                return oar_k_error(k, OAR_ERR_RANGE, "Label '%s' holds %lld at row %lld; classes are 0..%lld",      \
                                   nm(oar_k_input_name(k, OAR_CENTER_LOSS_LABEL, 0)), (long long)label_at(lb, i),    \
                                   (long long)i, (long long)(kc - 1));                                               \
        const double alpha = rt->dtype == OAR_FP64 ? *(const double *)oar_tensor_data((oar_tensor_t *)rt)            \
                                                   : (double)*(const float *)oar_tensor_data((oar_tensor_t *)rt);    \
        void *pco, *pdf, *plo;                                                                                       \
        OAR_TRY(oar_k_output_sized(k, OAR_CENTER_LOSS_SAMPLECENTERDIFF, "SampleCenterDiff", DT, n * d, false, &pdf)); \
        OAR_TRY(oar_k_output_sized(k, OAR_CENTER_LOSS_LOSS, "Loss", DT, n, false, &plo));                            \
        const T *xv = oar_tensor_data((oar_tensor_t *)x), *cv = oar_tensor_data((oar_tensor_t *)ct);                 \
        T *diff = pdf, *loss = plo;                                                                                  \
        for (int64_t i = 0; i < n; i++) {                                                                            \
            const T *c = cv + label_at(lb, i) * d;                                                                   \
            double s = 0;                                                                                            \
            for (int64_t e = 0; e < d; e++) {                                                                        \
                diff[i * d + e] = xv[i * d + e] - c[e];                                                              \
                s += (double)diff[i * d + e] * (double)diff[i * d + e];                                              \
            }                                                                                                        \
            loss[i] = (T)(s / 2);                                                                                    \
        }                                                                                                            \
        /* the centers move after every difference is taken (CentersOut may be Centers) */                          \
        OAR_TRY(oar_k_output_sized(k, OAR_CENTER_LOSS_CENTERSOUT, "CentersOut", DT, kc * d, false, &pco));           \
        T *co = pco;                                                                                                 \
        if (co != cv) memcpy(co, cv, sizeof(T) * (size_t)(kc * d));                                                  \
        if (!at->need_update) return OAR_OK;                                                                         \
        double *acc = oar_scratch_alloc(sizeof(double) * (size_t)(kc * (d + 1)) + 1), *cnt = acc + kc * d;           \
        if (!acc) return oar_k_error(k, OAR_ERR_NOMEM, "no memory for %lld centers", (long long)kc);                 \
        memset(acc, 0, sizeof(double) * (size_t)(kc * d));                                                           \
        for (int64_t c = 0; c < kc; c++) cnt[c] = 1;                                                                 \
        for (int64_t i = 0; i < n; i++) {                                                                            \
            const int64_t c = label_at(lb, i);                                                                       \
            cnt[c] += 1;                                                                                             \
            for (int64_t e = 0; e < d; e++) acc[c * d + e] += (double)diff[i * d + e];                               \
        }                                                                                                            \
        for (int64_t c = 0; c < kc; c++)                                                                             \
            for (int64_t e = 0; e < d; e++) co[c * d + e] = (T)((double)co[c * d + e] + alpha / cnt[c] * acc[c * d + e]); \
        oar_scratch_free(acc);                                                                                       \
        return OAR_OK;                                                                                               \
    }                                                                                                                \
    static int center_bwd_##SUF(oar_kernel_ctx_t *k)                                                                 \
    {                                                                                                                \
        const oar_tensor_t *df = oar_k_input(k, OAR_CENTER_G_SAMPLECENTERDIFF, 0);                                   \
        const oar_tensor_t *g = oar_k_input(k, OAR_CENTER_G_DLOSS, 0);                                               \
        if (!df || !g || df->ndim != 2 || df->dtype != DT || g->dtype != DT || oar_tensor_numel_of(g) != df->dims[0]) \
            return oar_k_error(k, OAR_ERR_SHAPE, "SampleCenterDiff [N, D] and Loss@GRAD [N, 1] must come from the "  \
                               "forward");                                                                           \
        const int64_t n = df->dims[0], d = df->dims[1];                                                              \
        void *pdx;                                                                                                   \
        OAR_TRY(oar_k_output_sized(k, OAR_CENTER_G_DX, "X@GRAD", DT, n * d, true, &pdx));                            \
        if (!pdx) return OAR_OK;                                                                                     \
        const T *dv = oar_tensor_data((oar_tensor_t *)df), *gv = oar_tensor_data((oar_tensor_t *)g);                 \
        T *dx = pdx;                                                                                                 \
        for (int64_t i = 0; i < n; i++)                                                                              \
            for (int64_t e = 0; e < d; e++) dx[i * d + e] = dv[i * d + e] * gv[i];                                   \
        return OAR_OK;                                                                                               \
    }                                                                                                                \
    static int tssl_fwd_##SUF(oar_kernel_ctx_t *k)                                                                   \
    {                                                                                                                \
        const oar_tensor_t *x = oar_k_input(k, OAR_TSSL_X, 0), *lb = oar_k_input(k, OAR_TSSL_LABEL, 0);              \
        if (!x || !lb || x->dtype != DT || lb->dtype != DT || oar_tensor_numel_of(lb) != oar_tensor_numel_of(x))     \
            return oar_k_error(k, OAR_ERR_SHAPE, "X and Label must be [N, 1] of one dtype");                        \
        const int64_t n = oar_tensor_numel_of(x);                                                                    \
        void *py;                                                                                                    \
        OAR_TRY(oar_k_output_sized(k, OAR_TSSL_Y, "Y", DT, n, false, &py));                                          \
        const T *xv = oar_tensor_data((oar_tensor_t *)x), *lv = oar_tensor_data((oar_tensor_t *)lb);                 \
        T *y = py;                                                                                                   \
        for (int64_t i = 0; i < n; i++) {                                                                            \
            const double xi = xv[i], l = lv[i];                                                                      \
            if (l < -1) y[i] = (T)logistic(xi, 0);                                                                   \
            else if (l < 0) y[i] = (T)logistic(xi, 1);                                                               \
            else if (l < 1) y[i] = (T)(logistic(xi, 0) + logistic(xi, l));                                          \
            else y[i] = (T)(logistic(xi, 1) + logistic(xi, l - 1));                                                  \
        }                                                                                                            \
        return OAR_OK;                                                                                               \
    }                                                                                                                \
    static int tssl_bwd_##SUF(oar_kernel_ctx_t *k)                                                                   \
    {                                                                                                                \
        const oar_tssl_attrs_t *at = oar_k_attrs(k);                                                                 \
        const oar_tensor_t *x = oar_k_input(k, OAR_TSSL_G_X, 0), *lb = oar_k_input(k, OAR_TSSL_G_LABEL, 0);          \
        const oar_tensor_t *g = oar_k_input(k, OAR_TSSL_G_DY, 0);                                                    \
        if (!x || !lb || !g || x->dtype != DT || lb->dtype != DT || g->dtype != DT ||                                \
            oar_tensor_numel_of(lb) != oar_tensor_numel_of(x) || oar_tensor_numel_of(g) != oar_tensor_numel_of(x))   \
            return oar_k_error(k, OAR_ERR_SHAPE, "X, Label and Y@GRAD must be [N, 1] of one dtype");                 \
        const int64_t n = oar_tensor_numel_of(x);                                                                    \
        void *pdx;                                                                                                   \
        OAR_TRY(oar_k_output_sized(k, OAR_TSSL_G_DX, "X@GRAD", DT, n, true, &pdx));                                  \
        if (!pdx) return OAR_OK;                                                                                     \
        const T *xv = oar_tensor_data((oar_tensor_t *)x), *lv = oar_tensor_data((oar_tensor_t *)lb);                 \
        const T *gv = oar_tensor_data((oar_tensor_t *)g);                                                            \
        T *dx = pdx;                                                                                                 \
        for (int64_t i = 0; i < n; i++) {                                                                            \
            const double xi = xv[i], l = lv[i];                                                                      \
            if (xi >= at->soft_max_up_bound || xi <= at->soft_max_lower_bound) { dx[i] = 0; continue; }             \
            const double p = 1 / (1 + exp(-xi));                                                                     \
            /* d l(x, t) / dx = sigmoid(x) - t, summed over the two terms */                                         \
            const double d = l < -1 ? p : l < 0 ? p - 1 : 2 * p - l;                                                 \
            dx[i] = (T)(d * (double)gv[i]);                                                                          \
        }                                                                                                            \
        return OAR_OK;                                                                                               \
    }                                                                                                                \
    OAR_REGISTER_KERNEL("center_loss", OAR_PLACE_CPU, DT, center_fwd_##SUF)                                          \
    OAR_REGISTER_KERNEL("center_loss_grad", OAR_PLACE_CPU, DT, center_bwd_##SUF)                                     \
    OAR_REGISTER_KERNEL("teacher_student_sigmoid_loss", OAR_PLACE_CPU, DT, tssl_fwd_##SUF)                           \
    OAR_REGISTER_KERNEL("teacher_student_sigmoid_loss_grad", OAR_PLACE_CPU, DT, tssl_bwd_##SUF)

AUX_KERNELS(f32, float, OAR_FP32)
AUX_KERNELS(f64, double, OAR_FP64)
