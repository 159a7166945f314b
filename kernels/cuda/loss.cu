/*
 * loss.cu — CUDA kernels of cross_entropy, softmax_with_cross_entropy,
 * square_error_cost and their grads (float32, float64), with the CPU
 * kernels' formulas (kernels/cpu/loss.c, loss_basic.c):
 *
 * cross_entropy: Y = -log(X[label]) (hard) or -sum(label * log X) (soft),
 *   log(0) taken as -1e20 as in Fluid; one thread per row.
 * softmax_with_cross_entropy: along `axis` ([pre, C, post]), one block per
 *   row; the loss is log-sum-exp minus the label's shifted logit, computed
 *   in double; the grad is (softmax * sum(label) - label) * Loss@GRAD.
 *
 * Hard labels are range-checked inside the kernels (a flag keeps the first
 * bad row) and read back once per call, so a bad label fails the op with
 * the row and value, as on the CPU; rows with a bad label are left 0.
 */
#include "cuda_common.h"
extern "C" {
#include "ops/loss.h"
#include "ops/loss_basic.h"
}

using namespace oarcu;

namespace {

__device__ inline double tol_log(double p)
{
    double l = log(p);
    return isinf(l) ? (l < 0 ? -1e20 : 1e20) : l;
}

/* the error for the first bad label row a kernel flags (read at the run's
 * end); `slot` is the Label input's */
int label_check(oar_kernel_ctx_t *k, BadFlag &flag, int slot, int64_t classes, int ignore)
{
    return flag.report(k, "Label '%s' holds a value outside [0, %lld) that is not ignore_index %d (row)",
                       nm(oar_k_input_name(k, slot, 0)), (long long)classes, ignore);
}

/* ---- cross_entropy -------------------------------------------------------- */
template <class T>
__global__ void ce_hard_k(const T *x, const int64_t *l, T *y, int64_t n, int64_t C, int ignore,
                          unsigned long long *bad)
{
    OAR_CU_LOOP(i, n) {
        const int64_t c = l[i];
        if (c == ignore) { y[i] = T(0); continue; }
        if (c < 0 || c >= C) { flag_bad(bad, i); y[i] = T(0); continue; }
        y[i] = (T)-tol_log((double)x[i * C + c]);
    }
}

template <class T>
__global__ void ce_soft_k(const T *x, const T *z, T *y, int64_t n, int64_t C)
{
    OAR_CU_LOOP(i, n) {
        double s = 0;
        for (int64_t j = 0; j < C; j++)
            if (z[i * C + j] != T(0)) s -= (double)z[i * C + j] * tol_log((double)x[i * C + j]);
        y[i] = (T)s;
    }
}

template <class T>
__global__ void ce_grad_hard_k(const T *x, const int64_t *l, const T *g, T *dx, int64_t n, int64_t C, int ignore,
                               unsigned long long *bad)
{
    OAR_CU_LOOP(q, n * C) {
        const int64_t i = q / C, j = q % C, c = l[i];
        T v = T(0);
        /* an ignored row has no gradient, also when ignore_index is a class */
        if (c == ignore) v = T(0);
        else if (c < 0 || c >= C) { if (j == 0) flag_bad(bad, i); }
        else if (c == j) v = -g[i] / x[q];
        dx[q] = v;
    }
}

template <class T>
__global__ void ce_grad_soft_k(const T *x, const T *z, const T *g, T *dx, int64_t n, int64_t C)
{
    OAR_CU_LOOP(q, n * C) dx[q] = z[q] == T(0) ? T(0) : -g[q / C] * z[q] / x[q];
}

struct Ce {
    const oar_tensor_t *x, *label;
    const void *xd, *ld;
    int64_t n, classes;
    bool soft;
    int ignore;
};

int ce_prepare(oar_kernel_ctx_t *k, int dt, Ce *c)
{
    OAR_TRY(in_tensor_at(k, OAR_CE_X, 0, dt, -1, &c->x, &c->xd));
    const oar_ce_attrs_t *a = (const oar_ce_attrs_t *)oar_k_attrs(k);
    c->soft = a->soft_label;
    c->ignore = a->ignore_index;
    c->classes = c->x->ndim > 0 ? c->x->dims[c->x->ndim - 1] : 1;
    c->n = c->classes > 0 ? oar_tensor_numel_of(c->x) / c->classes : 0;
    return in_tensor_at(k, OAR_CE_LABEL, 0, c->soft ? dt : OAR_INT64, c->soft ? c->n * c->classes : c->n, &c->label,
                        &c->ld);
}

template <class T>
int ce_fwd(oar_kernel_ctx_t *k, int dt)
{
    Ce c;
    OAR_TRY(ce_prepare(k, dt, &c));
    void *y;
    OAR_TRY(out_data_at(k, OAR_CE_Y, 0, dt, -1, &y));
    if (c.n == 0) return OAR_OK;
    if (c.soft) {
        ce_soft_k<T><<<grid_for(c.n), kThreads>>>((const T *)c.xd, (const T *)c.ld, (T *)y, c.n, c.classes);
        OAR_CU_LAUNCH(k, "cross_entropy");
        return OAR_OK;
    }
    BadFlag bad;
    OAR_TRY(bad.init(k));
    ce_hard_k<T><<<grid_for(c.n), kThreads>>>((const T *)c.xd, (const int64_t *)c.ld, (T *)y, c.n, c.classes,
                                               c.ignore, bad.ptr());
    OAR_CU_LAUNCH(k, "cross_entropy");
    return label_check(k, bad, OAR_CE_LABEL, c.classes, c.ignore);
}

template <class T>
int ce_bwd(oar_kernel_ctx_t *k, int dt)
{
    Ce c;
    OAR_TRY(ce_prepare(k, dt, &c));
    const oar_tensor_t *gt;
    const void *g;
    OAR_TRY(in_tensor_at(k, OAR_CEG_DY, 0, dt, c.n, &gt, &g));
    if (!oar_k_output(k, OAR_CEG_DX, 0)) return OAR_OK;
    void *dx;
    OAR_TRY(out_data_at(k, OAR_CEG_DX, 0, dt, c.n * c.classes, &dx));
    if (c.n * c.classes == 0) return OAR_OK;
    if (c.soft) {
        ce_grad_soft_k<T><<<grid_for(c.n * c.classes), kThreads>>>((const T *)c.xd, (const T *)c.ld, (const T *)g,
                                                                    (T *)dx, c.n, c.classes);
        OAR_CU_LAUNCH(k, "cross_entropy_grad");
        return OAR_OK;
    }
    BadFlag bad;
    OAR_TRY(bad.init(k));
    ce_grad_hard_k<T><<<grid_for(c.n * c.classes), kThreads>>>((const T *)c.xd, (const int64_t *)c.ld, (const T *)g,
                                                                (T *)dx, c.n, c.classes, c.ignore, bad.ptr());
    OAR_CU_LAUNCH(k, "cross_entropy_grad");
    return label_check(k, bad, OAR_CE_LABEL, c.classes, c.ignore);
}

/* ---- softmax_with_cross_entropy -------------------------------------------- */
struct Sw {
    const oar_tensor_t *label;
    const void *ld;
    int64_t pre, classes, post;
    bool soft;
    int ignore;
};

/* input `slot` seen as [pre, C, post] along attr axis, and Label (input `lslot`) */
int sw_prepare(oar_kernel_ctx_t *k, int slot, int lslot, int dt, Sw *s, const oar_tensor_t **x, const void **xd)
{
    OAR_TRY(in_tensor_at(k, slot, 0, dt, -1, x, xd));
    const oar_swce_attrs_t *at = (const oar_swce_attrs_t *)oar_k_attrs(k);
    int nd = (*x)->ndim, a = at->axis;
    if (a < 0) a += nd;
    if (a < 0 || a >= nd) return oar_k_error(k, OAR_ERR_RANGE, "attr axis is out of range for rank %d", nd);
    s->pre = s->post = 1;
    for (int i = 0; i < a; i++) s->pre *= (*x)->dims[i];
    for (int i = a + 1; i < nd; i++) s->post *= (*x)->dims[i];
    s->classes = (*x)->dims[a];
    s->soft = at->soft_label;
    s->ignore = at->ignore_index;
    const int64_t rows = s->pre * s->post;
    return in_tensor_at(k, lslot, 0, s->soft ? dt : OAR_INT64, s->soft ? rows * s->classes : rows, &s->label,
                        &s->ld);
}

unsigned threads_for(int64_t n)
{
    int64_t t = (n + 31) / 32 * 32;
    return (unsigned)(t < 32 ? 32 : t > 256 ? 256 : t);
}

template <class T>
__global__ void sw_fwd_k(const T *x, const void *label, T *sm, T *loss, int64_t rows, int64_t C, int64_t P,
                         bool soft, int ignore, unsigned long long *bad)
{
    __shared__ double sh[32];
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const int64_t base = (r / P) * C * P + r % P;
        double m = -INFINITY;
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) m = fmax(m, (double)x[base + c * P]);
        m = block_max(m, sh);
        double s = 0;
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) s += exp((double)x[base + c * P] - m);
        s = block_sum(s, sh);
        const double lse = log(s);
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
            sm[base + c * P] = (T)(exp((double)x[base + c * P] - m) / s);
        if (soft) {
            const T *z = (const T *)label;
            double l = 0;
            for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
                l -= (double)z[base + c * P] * ((double)x[base + c * P] - m - lse);
            l = block_sum(l, sh);
            if (threadIdx.x == 0) loss[r] = (T)l;
        } else if (threadIdx.x == 0) {
            const int64_t lb = ((const int64_t *)label)[r];
            if (lb == ignore) loss[r] = T(0);
            else if (lb < 0 || lb >= C) { flag_bad(bad, r); loss[r] = T(0); }
            else loss[r] = (T)(lse - ((double)x[base + lb * P] - m));
        }
    }
}

template <class T>
__global__ void sw_grad_k(const T *sm, const void *label, const T *g, T *dx, int64_t rows, int64_t C, int64_t P,
                          bool soft, int ignore, unsigned long long *bad)
{
    __shared__ double sh[32];
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const int64_t base = (r / P) * C * P + r % P;
        if (soft) {
            const T *z = (const T *)label;
            double zs = 0;
            for (int64_t c = threadIdx.x; c < C; c += blockDim.x) zs += (double)z[base + c * P];
            zs = block_sum(zs, sh);
            for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
                dx[base + c * P] = (T)(((double)sm[base + c * P] * zs - (double)z[base + c * P]) * (double)g[r]);
        } else {
            const int64_t lb = ((const int64_t *)label)[r];
            const bool bad_row = lb != ignore && (lb < 0 || lb >= C);
            if (bad_row && threadIdx.x == 0) flag_bad(bad, r);
            for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
                dx[base + c * P] = lb == ignore || bad_row ? T(0)
                                 : (T)(((double)sm[base + c * P] - (c == lb ? 1.0 : 0.0)) * (double)g[r]);
        }
    }
}

unsigned rows_grid(int64_t rows) { return (unsigned)(rows < 2147483647 ? rows : 2147483647); }

template <class T>
int sw_fwd(oar_kernel_ctx_t *k, int dt)
{
    Sw s;
    const oar_tensor_t *xt;
    const void *x;
    OAR_TRY(sw_prepare(k, OAR_SWCE_LOGITS, OAR_SWCE_LABEL, dt, &s, &xt, &x));
    const int64_t rows = s.pre * s.post;
    void *sm, *loss;
    OAR_TRY(out_data_at(k, OAR_SWCE_SOFTMAX, 0, dt, rows * s.classes, &sm));
    OAR_TRY(out_data_at(k, OAR_SWCE_LOSS, 0, dt, -1, &loss));
    if (rows == 0 || s.classes == 0) return OAR_OK;
    BadFlag bad;
    OAR_TRY(bad.init(k));
    sw_fwd_k<T><<<rows_grid(rows), threads_for(s.classes)>>>((const T *)x, s.ld, (T *)sm, (T *)loss, rows,
                                                              s.classes, s.post, s.soft, s.ignore, bad.ptr());
    OAR_CU_LAUNCH(k, "softmax_with_cross_entropy");
    if (s.soft) return OAR_OK;
    return label_check(k, bad, OAR_SWCE_LABEL, s.classes, s.ignore);
}

template <class T>
int sw_bwd(oar_kernel_ctx_t *k, int dt)
{
    Sw s;
    const oar_tensor_t *smt, *gt;
    const void *sm, *g;
    OAR_TRY(sw_prepare(k, OAR_SWCEG_SOFTMAX, OAR_SWCEG_LABEL, dt, &s, &smt, &sm));
    const int64_t rows = s.pre * s.post;
    OAR_TRY(in_tensor_at(k, OAR_SWCEG_DLOSS, 0, dt, rows, &gt, &g));
    if (!oar_k_output(k, OAR_SWCEG_DLOGITS, 0)) return OAR_OK;
    void *dx;
    OAR_TRY(out_data_at(k, OAR_SWCEG_DLOGITS, 0, dt, rows * s.classes, &dx));
    if (rows == 0 || s.classes == 0) return OAR_OK;
    BadFlag bad;
    OAR_TRY(bad.init(k));
    sw_grad_k<T><<<rows_grid(rows), threads_for(s.classes)>>>((const T *)sm, s.ld, (const T *)g, (T *)dx, rows,
                                                               s.classes, s.post, s.soft, s.ignore, bad.ptr());
    OAR_CU_LAUNCH(k, "softmax_with_cross_entropy_grad");
    if (s.soft) return OAR_OK;
    return label_check(k, bad, OAR_SWCEG_LABEL, s.classes, s.ignore);
}

/* ---- square_error_cost: Out = (X - Y)^2 ------------------------------------- */
template <class T>
__global__ void sec_k(const T *x, const T *y, T *o, int64_t n)
{
    OAR_CU_LOOP(i, n) { T d = x[i] - y[i]; o[i] = d * d; }
}

template <class T>
__global__ void sec_grad_k(const T *x, const T *y, const T *g, T *dx, T *dy, int64_t n)
{
    OAR_CU_LOOP(i, n) {
        T d = T(2) * (x[i] - y[i]) * g[i];
        if (dx) dx[i] = d;
        if (dy) dy[i] = -d;
    }
}

template <class T>
int sec_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt, *yt;
    const void *x, *y;
    OAR_TRY(in_tensor_at(k, OAR_SEC_X, 0, dt, -1, &xt, &x));
    const int64_t n = oar_tensor_numel_of(xt);
    OAR_TRY(in_tensor_at(k, OAR_SEC_Y, 0, dt, n, &yt, &y));
    void *o;
    OAR_TRY(out_data_at(k, OAR_SEC_OUT, 0, dt, n, &o));
    if (n == 0) return OAR_OK;
    sec_k<T><<<grid_for(n), kThreads>>>((const T *)x, (const T *)y, (T *)o, n);
    OAR_CU_LAUNCH(k, "square_error_cost");
    return OAR_OK;
}

template <class T>
int sec_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt, *yt, *gt;
    const void *x, *y, *g;
    OAR_TRY(in_tensor_at(k, OAR_SEC_X, 0, dt, -1, &xt, &x));
    const int64_t n = oar_tensor_numel_of(xt);
    OAR_TRY(in_tensor_at(k, OAR_SEC_Y, 0, dt, n, &yt, &y));
    OAR_TRY(in_tensor_at(k, OAR_SECG_DOUT, 0, dt, n, &gt, &g));
    void *dx, *dy;
    OAR_TRY(out_data_opt_at(k, OAR_SECG_DX, 0, dt, n, &dx));
    OAR_TRY(out_data_opt_at(k, OAR_SECG_DY, 0, dt, n, &dy));
    if (n == 0 || (!dx && !dy)) return OAR_OK;
    sec_grad_k<T><<<grid_for(n), kThreads>>>((const T *)x, (const T *)y, (const T *)g, (T *)dx, (T *)dy, n);
    OAR_CU_LAUNCH(k, "square_error_cost_grad");
    return OAR_OK;
}

#define LOSS_REG(OPNAME, FN)                                                              \
    int FN##_f32(oar_kernel_ctx_t *k) { return FN<float>(k, OAR_FP32); }                  \
    int FN##_f64(oar_kernel_ctx_t *k) { return FN<double>(k, OAR_FP64); }                 \
    OAR_REGISTER_KERNEL(OPNAME, OAR_PLACE_CUDA, OAR_FP32, FN##_f32)                       \
    OAR_REGISTER_KERNEL(OPNAME, OAR_PLACE_CUDA, OAR_FP64, FN##_f64)

LOSS_REG("cross_entropy", ce_fwd)
LOSS_REG("cross_entropy_grad", ce_bwd)
LOSS_REG("softmax_with_cross_entropy", sw_fwd)
LOSS_REG("softmax_with_cross_entropy_grad", sw_bwd)
LOSS_REG("square_error_cost", sec_fwd)
LOSS_REG("square_error_cost_grad", sec_bwd)

}  // namespace
