/*
 * loss.c — CPU kernels of cross_entropy, softmax_with_cross_entropy and
 * sigmoid_cross_entropy_with_logits with their grads.
 *
 * Hard labels are checked in one serial pass before any arithmetic, so a bad
 * label fails the op cleanly and the row loops can run in parallel.
 *
 * cross_entropy: Y = -log(X[label]) (hard) or -sum(label * log X) (soft);
 *   log(0) is taken as -1e20 as in Fluid, so a zero probability gives a
 *   huge loss rather than inf or 0 * inf = NaN.
 * softmax_with_cross_entropy: along `axis` (the tensor seen as [pre, C,
 *   post]); the loss is log-sum-exp minus the label's shifted logit, exact
 *   in both numeric_stable_mode settings. Its grad is softmax * sum(label)
 *   - label, times Loss@GRAD: for a hard label or a soft label summing to 1
 *   that is Fluid's softmax - label, and it stays the true gradient for
 *   soft labels that do not sum to 1.
 * sigmoid_cross_entropy_with_logits: max(x, 0) - x z + log(1 + exp(-|x|));
 *   normalize divides by the number of labels that are not ignore_index.
 */
#include "op.h"
#include "ops/loss.h"

#include <math.h>
#include <string.h>

static const char *nm(const char *s) { return s ? s : "?"; }

/* parallel when the loop touches enough values: `work` counts them */
#define PAR_FOR _Pragma("omp parallel for if(work > 4096)")

/* input `slot` (`name` in messages) of dtype `dtype` (-1: any) and, when
 * numel >= 0, numel elements */
static int tensor_in(oar_kernel_ctx_t *k, int slot, const char *name, int dtype, int64_t numel,
                     const oar_tensor_t **t)
{
    *t = oar_k_input(k, slot, 0);
    if (!*t || ((*t)->dtype < 0))
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s '%s' has no value", name,
                           nm(oar_k_input_name(k, slot, 0)));
    if (dtype >= 0 && (*t)->dtype != dtype)
        return oar_k_error(k, OAR_ERR_DTYPE, "input %s '%s' has dtype %s, expected %s", name,
                           nm(oar_k_input_name(k, slot, 0)), nm(oar_dtype_name((*t)->dtype)), oar_dtype_name(dtype));
    if (numel >= 0 && oar_tensor_numel_of(*t) != numel)
        return oar_k_error(k, OAR_ERR_SHAPE, "input %s '%s' has %lld elements, expected %lld", name,
                           nm(oar_k_input_name(k, slot, 0)), (long long)oar_tensor_numel_of(*t), (long long)numel);
    if (oar_tensor_numel_of(*t) > 0 && !oar_tensor_has_data(*t))
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s '%s' has no data", name,
                           nm(oar_k_input_name(k, slot, 0)));
    return OAR_OK;
}

static const void *data_of(const oar_tensor_t *t) { return oar_tensor_has_data(t) ? t->buf->data : NULL; }

/* every hard label (input slot `slot`) in [0, C) or ignore_index */
static int check_labels(oar_kernel_ctx_t *k, int slot, const int64_t *lbl, int64_t n, int64_t classes, int ignore)
{
    for (int64_t i = 0; i < n; i++) {
        int64_t l = lbl[i];
        if (l == ignore) continue;
        if (l < 0 || l >= classes)
            return oar_k_error(k, OAR_ERR_RANGE, "Label '%s' holds %lld at row %lld, outside [0, %lld) "
                               "(ignore_index is %d)", nm(oar_k_input_name(k, slot, 0)), (long long)l,
                               (long long)i, (long long)classes, ignore);
    }
    return OAR_OK;
}

static inline double tol_log(double p)
{
    double l = log(p);
    return isinf(l) ? (l < 0 ? -1e20 : 1e20) : l;
}

/* ---- cross_entropy -------------------------------------------------------- */
typedef struct {
    const oar_tensor_t *x, *label;
    int64_t n, classes;
    bool soft;
    int ignore;
} ce_t;

static int ce_prepare(oar_kernel_ctx_t *k, int dt, ce_t *c)
{
    OAR_TRY(tensor_in(k, OAR_CE_X, "X", dt, -1, &c->x));
    const oar_ce_attrs_t *a = oar_k_attrs(k);
    c->soft = a->soft_label;
    c->ignore = a->ignore_index;
    c->classes = c->x->ndim > 0 ? c->x->dims[c->x->ndim - 1] : 1;
    c->n = c->classes > 0 ? oar_tensor_numel_of(c->x) / c->classes : 0;
    OAR_TRY(tensor_in(k, OAR_CE_LABEL, "Label", c->soft ? dt : OAR_INT64, c->soft ? c->n * c->classes : c->n,
                      &c->label));
    return c->soft ? OAR_OK : check_labels(k, OAR_CE_LABEL, data_of(c->label), c->n, c->classes, c->ignore);
}

#define CE_KERNELS(sfx, T, DT)                                                                     \
    static int ce_##sfx(oar_kernel_ctx_t *k)                                                       \
    {                                                                                              \
        ce_t c;                                                                                    \
        OAR_TRY(ce_prepare(k, DT, &c));                                                            \
        const T *x = data_of(c.x);                                                                 \
        if (!oar_k_output(k, OAR_CE_Y, 0))                                                         \
            return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Y has no tensor");                    \
        T *y = oar_k_output_data(k, OAR_CE_Y, 0, DT);                                              \
        if (!y) return OAR_ERR_NOMEM;                                                              \
        int64_t C_ = c.classes;                                                                    \
        if (c.soft) {                                                                              \
            const T *z = data_of(c.label);                                                         \
            const int64_t work = c.n * C_;                                                         \
            PAR_FOR for (int64_t i = 0; i < c.n; i++) {                                            \
                double s = 0;                                                                      \
                for (int64_t j = 0; j < C_; j++)                                                   \
                    if (z[i * C_ + j] != 0) s -= (double)z[i * C_ + j] * tol_log(x[i * C_ + j]);   \
                y[i] = (T)s;                                                                       \
            }                                                                                      \
        } else {                                                                                   \
            const int64_t *l = data_of(c.label);                                                   \
            const int64_t work = c.n;                                                              \
            PAR_FOR for (int64_t i = 0; i < c.n; i++)                                              \
                y[i] = l[i] == c.ignore ? (T)0 : (T)-tol_log(x[i * C_ + l[i]]);                    \
        }                                                                                          \
        return OAR_OK;                                                                             \
    }                                                                                              \
    OAR_REGISTER_KERNEL("cross_entropy", OAR_PLACE_CPU, DT, ce_##sfx)                              \
    static int ce_grad_##sfx(oar_kernel_ctx_t *k)                                                  \
    {                                                                                              \
        ce_t c;                                                                                    \
        OAR_TRY(ce_prepare(k, DT, &c));                                                            \
        const oar_tensor_t *gt;                                                                    \
        OAR_TRY(tensor_in(k, OAR_CEG_DY, "Y@GRAD", DT, c.n, &gt));                                 \
        if (!oar_k_output(k, OAR_CEG_DX, 0)) return OAR_OK;                                        \
        const T *x = data_of(c.x), *g = data_of(gt);                                               \
        T *dx = oar_k_output_data(k, OAR_CEG_DX, 0, DT);                                           \
        if (!dx) return OAR_ERR_NOMEM;                                                             \
        int64_t C_ = c.classes;                                                                    \
        if (c.soft) {                                                                              \
            const T *z = data_of(c.label);                                                         \
            const int64_t work = c.n * C_;                                                         \
            PAR_FOR for (int64_t i = 0; i < c.n * C_; i++)                                         \
                dx[i] = z[i] == 0 ? (T)0 : -g[i / C_] * z[i] / x[i];                               \
        } else {                                                                                   \
            const int64_t *l = data_of(c.label);                                                   \
            memset(dx, 0, sizeof(T) * (size_t)(c.n * C_));                                         \
            for (int64_t i = 0; i < c.n; i++)                                                      \
                if (l[i] != c.ignore) dx[i * C_ + l[i]] = -g[i] / x[i * C_ + l[i]];                \
        }                                                                                          \
        return OAR_OK;                                                                             \
    }                                                                                              \
    OAR_REGISTER_KERNEL("cross_entropy_grad", OAR_PLACE_CPU, DT, ce_grad_##sfx)

CE_KERNELS(f32, float, OAR_FP32)
CE_KERNELS(f64, double, OAR_FP64)

/* ---- softmax_with_cross_entropy ------------------------------------------- */
typedef struct {
    const oar_tensor_t *label;
    int64_t pre, classes, post;
    bool soft;
    int ignore;
} swce_t;

/* the tensor in input `slot` (`name`) seen as [pre, C, post] along attr
 * axis, and Label (input `lslot`) */
static int swce_prepare(oar_kernel_ctx_t *k, int slot, const char *name, int lslot, int dt, swce_t *s,
                        const oar_tensor_t **x)
{
    OAR_TRY(tensor_in(k, slot, name, dt, -1, x));
    const oar_swce_attrs_t *at = oar_k_attrs(k);
    int nd = (*x)->ndim, a = at->axis;
    if (a < 0) a += nd;
    if (a < 0 || a >= nd) return oar_k_error(k, OAR_ERR_RANGE, "attr axis is out of range for rank %d", nd);
    s->pre = s->post = 1;
    for (int i = 0; i < a; i++) s->pre *= (*x)->dims[i];
    for (int i = a + 1; i < nd; i++) s->post *= (*x)->dims[i];
    s->classes = (*x)->dims[a];
    s->soft = at->soft_label;
    s->ignore = at->ignore_index;
    int64_t rows = s->pre * s->post;
    OAR_TRY(tensor_in(k, lslot, "Label", s->soft ? dt : OAR_INT64, s->soft ? rows * s->classes : rows, &s->label));
    return s->soft ? OAR_OK : check_labels(k, lslot, data_of(s->label), rows, s->classes, s->ignore);
}

#define SWCE_KERNELS(sfx, T, DT)                                                                   \
    static int swce_##sfx(oar_kernel_ctx_t *k)                                                     \
    {                                                                                              \
        swce_t s;                                                                                  \
        const oar_tensor_t *xt;                                                                    \
        OAR_TRY(swce_prepare(k, OAR_SWCE_LOGITS, "Logits", OAR_SWCE_LABEL, DT, &s, &xt));          \
        if (!oar_k_output(k, OAR_SWCE_SOFTMAX, 0) || !oar_k_output(k, OAR_SWCE_LOSS, 0))           \
            return oar_k_error(k, OAR_ERR_NOT_FOUND, "outputs Softmax and Loss need tensors");     \
        const T *x = data_of(xt);                                                                  \
        T *sm = oar_k_output_data(k, OAR_SWCE_SOFTMAX, 0, DT);                                     \
        T *loss = sm ? oar_k_output_data(k, OAR_SWCE_LOSS, 0, DT) : NULL;                          \
        if (!loss) return OAR_ERR_NOMEM;                                                           \
        const int64_t C_ = s.classes, P = s.post, rows = s.pre * s.post;                           \
        const int64_t work = rows * C_;                                                            \
        PAR_FOR for (int64_t r = 0; r < rows; r++) {                                               \
            int64_t base = (r / P) * C_ * P + r % P;                                               \
            double mx = -INFINITY, sum = 0;                                                        \
            for (int64_t c = 0; c < C_; c++) mx = fmax(mx, (double)x[base + c * P]);               \
            for (int64_t c = 0; c < C_; c++) {                                                     \
                double e = exp((double)x[base + c * P] - mx);                                      \
                sm[base + c * P] = (T)e;                                                           \
                sum += e;                                                                          \
            }                                                                                      \
            double lse = log(sum);                                                                 \
            for (int64_t c = 0; c < C_; c++) sm[base + c * P] = (T)(sm[base + c * P] / sum);       \
            if (s.soft) {                                                                          \
                const T *z = data_of(s.label);                                                     \
                double l = 0;                                                                      \
                for (int64_t c = 0; c < C_; c++)                                                   \
                    l -= (double)z[base + c * P] * ((double)x[base + c * P] - mx - lse);           \
                loss[r] = (T)l;                                                                    \
            } else {                                                                               \
                int64_t lb = ((const int64_t *)data_of(s.label))[r];                               \
                loss[r] = lb == s.ignore ? (T)0 : (T)(lse - ((double)x[base + lb * P] - mx));      \
            }                                                                                      \
        }                                                                                          \
        return OAR_OK;                                                                             \
    }                                                                                              \
    OAR_REGISTER_KERNEL("softmax_with_cross_entropy", OAR_PLACE_CPU, DT, swce_##sfx)               \
    static int swce_grad_##sfx(oar_kernel_ctx_t *k)                                                \
    {                                                                                              \
        swce_t s;                                                                                  \
        const oar_tensor_t *smt, *gt;                                                              \
        OAR_TRY(swce_prepare(k, OAR_SWCEG_SOFTMAX, "Softmax", OAR_SWCEG_LABEL, DT, &s, &smt));     \
        const int64_t C_ = s.classes, P = s.post, rows = s.pre * s.post;                           \
        OAR_TRY(tensor_in(k, OAR_SWCEG_DLOSS, "Loss@GRAD", DT, rows, &gt));                        \
        if (!oar_k_output(k, OAR_SWCEG_DLOGITS, 0)) return OAR_OK;                                 \
        const T *sm = data_of(smt), *g = data_of(gt);                                              \
        T *dx = oar_k_output_data(k, OAR_SWCEG_DLOGITS, 0, DT);                                    \
        if (!dx) return OAR_ERR_NOMEM;                                                             \
        const int64_t work = rows * C_;                                                            \
        PAR_FOR for (int64_t r = 0; r < rows; r++) {                                               \
            int64_t base = (r / P) * C_ * P + r % P;                                               \
            if (s.soft) {                                                                          \
                const T *z = data_of(s.label);                                                     \
                double zs = 0;                                                                     \
                for (int64_t c = 0; c < C_; c++) zs += (double)z[base + c * P];                    \
                for (int64_t c = 0; c < C_; c++)                                                   \
                    dx[base + c * P] = (T)(((double)sm[base + c * P] * zs - z[base + c * P]) * g[r]); \
            } else {                                                                               \
                int64_t lb = ((const int64_t *)data_of(s.label))[r];                               \
                for (int64_t c = 0; c < C_; c++)                                                   \
                    dx[base + c * P] = lb == s.ignore ? (T)0                                       \
                                     : (T)(((double)sm[base + c * P] - (c == lb)) * g[r]);         \
            }                                                                                      \
        }                                                                                          \
        return OAR_OK;                                                                             \
    }                                                                                              \
    OAR_REGISTER_KERNEL("softmax_with_cross_entropy_grad", OAR_PLACE_CPU, DT, swce_grad_##sfx)

SWCE_KERNELS(f32, float, OAR_FP32)
SWCE_KERNELS(f64, double, OAR_FP64)

/* ---- sigmoid_cross_entropy_with_logits ----------------------------------- */
/* Fluid compares the label cast to int with ignore_index */
static inline bool ignored(double z, int ignore) { return trunc(z) == (double)ignore; }

/* 1 / (labels not ignored), or 1 without normalize (or when all are ignored:
 * then every term is 0 anyway) */
static double sce_scale(bool normalize, const double *zd, const float *zf, int64_t n, int ignore)
{
    if (!normalize) return 1.0;
    int64_t cnt = 0;
    for (int64_t i = 0; i < n; i++) cnt += !ignored(zd ? zd[i] : (double)zf[i], ignore);
    return cnt > 0 ? 1.0 / (double)cnt : 1.0;
}

#define SCE_KERNELS(sfx, T, DT, ZD, ZF)                                                            \
    static int sce_##sfx(oar_kernel_ctx_t *k)                                                      \
    {                                                                                              \
        const oar_tensor_t *xt, *zt;                                                               \
        OAR_TRY(tensor_in(k, OAR_SCE_X, "X", DT, -1, &xt));                                        \
        int64_t n = oar_tensor_numel_of(xt);                                                       \
        OAR_TRY(tensor_in(k, OAR_SCE_LABEL, "Label", DT, n, &zt));                                 \
        if (!oar_k_output(k, OAR_SCE_OUT, 0))                                                      \
            return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Out has no tensor");                  \
        const T *x = data_of(xt), *z = data_of(zt);                                                \
        const oar_sce_attrs_t *a = oar_k_attrs(k);                                                 \
        int ignore = a->ignore_index;                                                              \
        double scale = sce_scale(a->normalize, ZD, ZF, n, ignore);                                 \
        T *out = oar_k_output_data(k, OAR_SCE_OUT, 0, DT);                                         \
        if (!out) return OAR_ERR_NOMEM;                                                            \
        const int64_t work = n;                                                                    \
        PAR_FOR for (int64_t i = 0; i < n; i++) {                                                  \
            double xv = x[i], zv = z[i];                                                           \
            out[i] = ignored(zv, ignore) ? (T)0                                                    \
                   : (T)((fmax(xv, 0) - xv * zv + log1p(exp(-fabs(xv)))) * scale);                 \
        }                                                                                          \
        return OAR_OK;                                                                             \
    }                                                                                              \
    OAR_REGISTER_KERNEL("sigmoid_cross_entropy_with_logits", OAR_PLACE_CPU, DT, sce_##sfx)         \
    static int sce_grad_##sfx(oar_kernel_ctx_t *k)                                                 \
    {                                                                                              \
        const oar_tensor_t *xt, *zt, *gt;                                                          \
        OAR_TRY(tensor_in(k, OAR_SCE_X, "X", DT, -1, &xt));                                        \
        int64_t n = oar_tensor_numel_of(xt);                                                       \
        OAR_TRY(tensor_in(k, OAR_SCE_LABEL, "Label", DT, n, &zt));                                 \
        OAR_TRY(tensor_in(k, OAR_SCEG_DOUT, "Out@GRAD", DT, n, &gt));                              \
        if (!oar_k_output(k, OAR_SCEG_DX, 0)) return OAR_OK;                                       \
        const T *x = data_of(xt), *z = data_of(zt), *g = data_of(gt);                              \
        const oar_sce_attrs_t *a = oar_k_attrs(k);                                                 \
        int ignore = a->ignore_index;                                                              \
        double scale = sce_scale(a->normalize, ZD, ZF, n, ignore);                                 \
        T *dx = oar_k_output_data(k, OAR_SCEG_DX, 0, DT);                                          \
        if (!dx) return OAR_ERR_NOMEM;                                                             \
        const int64_t work = n;                                                                    \
        PAR_FOR for (int64_t i = 0; i < n; i++) {                                                  \
            double xv = x[i], zv = z[i];                                                           \
            dx[i] = ignored(zv, ignore) ? (T)0 : (T)((1.0 / (1.0 + exp(-xv)) - zv) * g[i] * scale); \
        }                                                                                          \
        return OAR_OK;                                                                             \
    }                                                                                              \
    OAR_REGISTER_KERNEL("sigmoid_cross_entropy_with_logits_grad", OAR_PLACE_CPU, DT, sce_grad_##sfx)

SCE_KERNELS(f32, float, OAR_FP32, NULL, (const float *)z)
SCE_KERNELS(f64, double, OAR_FP64, (const double *)z, NULL)
