/*
 * loss_ext.cu — CUDA kernels of the elementwise losses of loss_ext.ops and
 * their grads (float32, float64), with the CPU kernels' formulas in the
 * element type (kernels/cpu/loss_ext_tpl.h): smooth_l1_loss, huber_loss,
 * log_loss, hinge_loss, kldiv_loss, bce_loss, margin_rank_loss and
 * modified_huber_loss.
 *
 * One thread per element, but smooth_l1_loss's forward (one thread per row,
 * summing the row in order, as the CPU does) and kldiv_loss's reduced
 * forms (one block, a tree sum: the order differs from the CPU's loop, the
 * specs compare with a tolerance). bce_loss's X outside [0, 1] and
 * modified_huber_loss's labels other than 0 and 1 are flagged inside the
 * kernel (BadFlag) and fail the op with the first bad element's position.
 */
#include "cuda_common.h"
extern "C" {
#include "ops/loss_ext.h"
}

using namespace oarcu;

namespace {

/* ---- smooth_l1_loss ------------------------------------------------------------ */
template <class T>
__global__ void sl1_k(const T *x, const T *y, const T *iw, const T *ow, T *diff, T *out, int64_t rows, int64_t cols,
                      T s2)
{
    OAR_CU_LOOP(r, rows) {
        T sum = T(0);
        for (int64_t j = r * cols; j < (r + 1) * cols; j++) {
            T d = x[j] - y[j];
            if (iw) d *= iw[j];
            diff[j] = d;
            T ad = d < T(0) ? -d : d;
            T e = ad < T(1) / s2 ? T(0.5) * d * d * s2 : ad - T(0.5) / s2;
            sum += ow ? e * ow[j] : e;
        }
        out[r] = sum;
    }
}

template <class T>
__global__ void sl1_grad_k(const T *diff, const T *g, const T *iw, const T *ow, T *dx, T *dy, int64_t n, int64_t cols,
                           T s2)
{
    OAR_CU_LOOP(j, n) {
        T d = diff[j], ad = d < T(0) ? -d : d;
        T v = ad < T(1) / s2 ? s2 * d : T((d > T(0)) - (d < T(0)));
        if (iw) v *= iw[j] * ow[j];
        v *= g[j / cols];
        if (dx) dx[j] = v;
        if (dy) dy[j] = -v;
    }
}

/* both weights or none (Fluid's has_weight) */
int sl1_weights(oar_kernel_ctx_t *k, int iws, int ows, int dt, int64_t n, const void **iw, const void **ow)
{
    *iw = *ow = nullptr;
    if (!oar_k_input(k, iws, 0) || !oar_k_input(k, ows, 0)) return OAR_OK;
    const oar_tensor_t *t;
    OAR_TRY(in_tensor_at(k, iws, 0, dt, n, &t, iw));
    return in_tensor_at(k, ows, 0, dt, n, &t, ow);
}

template <class T>
int sl1_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_sl1_attrs_t *a = (const oar_sl1_attrs_t *)oar_k_attrs(k);
    const oar_tensor_t *xt, *yt;
    const void *x, *y, *iw, *ow;
    OAR_TRY(in_tensor_at(k, OAR_SL1_X, 0, dt, -1, &xt, &x));
    const int64_t n = oar_tensor_numel_of(xt), rows = xt->ndim > 0 ? xt->dims[0] : 1;
    OAR_TRY(in_tensor_at(k, OAR_SL1_Y, 0, dt, n, &yt, &y));
    OAR_TRY(sl1_weights(k, OAR_SL1_INSIDEWEIGHT, OAR_SL1_OUTSIDEWEIGHT, dt, n, &iw, &ow));
    void *diff, *out;
    OAR_TRY(out_data_at(k, OAR_SL1_DIFF, 0, dt, n, &diff));
    OAR_TRY(out_data_at(k, OAR_SL1_OUT, 0, dt, rows, &out));
    if (rows == 0) return OAR_OK;
    const T s2 = (T)a->sigma * (T)a->sigma;
    sl1_k<T><<<grid_for(rows), kThreads>>>((const T *)x, (const T *)y, (const T *)iw, (const T *)ow, (T *)diff,
                                            (T *)out, rows, n / rows, s2);
    OAR_CU_LAUNCH(k, "smooth_l1_loss");
    return OAR_OK;
}

template <class T>
int sl1_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_sl1_attrs_t *a = (const oar_sl1_attrs_t *)oar_k_attrs(k);
    const oar_tensor_t *dtt, *gt;
    const void *diff, *g, *iw, *ow;
    OAR_TRY(in_tensor_at(k, OAR_SL1G_DIFF, 0, dt, -1, &dtt, &diff));
    const int64_t n = oar_tensor_numel_of(dtt), rows = dtt->ndim > 0 ? dtt->dims[0] : 1;
    OAR_TRY(in_tensor_at(k, OAR_SL1G_DOUT, 0, dt, rows, &gt, &g));
    OAR_TRY(sl1_weights(k, OAR_SL1G_INSIDEWEIGHT, OAR_SL1G_OUTSIDEWEIGHT, dt, n, &iw, &ow));
    void *dx, *dy;
    OAR_TRY(out_data_opt_at(k, OAR_SL1G_DX, 0, dt, n, &dx));
    OAR_TRY(out_data_opt_at(k, OAR_SL1G_DY, 0, dt, n, &dy));
    if (n == 0 || (!dx && !dy)) return OAR_OK;
    const T s2 = (T)a->sigma * (T)a->sigma;
    sl1_grad_k<T><<<grid_for(n), kThreads>>>((const T *)diff, (const T *)g, (const T *)iw, (const T *)ow, (T *)dx,
                                              (T *)dy, n, n / rows, s2);
    OAR_CU_LAUNCH(k, "smooth_l1_loss_grad");
    return OAR_OK;
}

/* ---- huber_loss ------------------------------------------------------------------ */
template <class T>
__global__ void huber_k(const T *x, const T *y, T *res, T *out, int64_t n, T delta)
{
    OAR_CU_LOOP(i, n) {
        T r = y[i] - x[i], ar = r < T(0) ? -r : r;
        res[i] = r;
        out[i] = ar <= delta ? T(0.5) * r * r : delta * (ar - T(0.5) * delta);
    }
}

template <class T>
__global__ void huber_grad_k(const T *r, const T *g, T *dx, T *dy, int64_t n, T delta)
{
    OAR_CU_LOOP(i, n) {
        T c = r[i] > delta ? delta : r[i] < -delta ? -delta : r[i];
        if (dx) dx[i] = -c * g[i];
        if (dy) dy[i] = c * g[i];
    }
}

template <class T>
int huber_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_huber_attrs_t *a = (const oar_huber_attrs_t *)oar_k_attrs(k);
    const oar_tensor_t *xt, *yt;
    const void *x, *y;
    OAR_TRY(in_tensor_at(k, OAR_HUBER_X, 0, dt, -1, &xt, &x));
    const int64_t n = oar_tensor_numel_of(xt);
    OAR_TRY(in_tensor_at(k, OAR_HUBER_Y, 0, dt, n, &yt, &y));
    void *res, *out;
    OAR_TRY(out_data_at(k, OAR_HUBER_RESIDUAL, 0, dt, n, &res));
    OAR_TRY(out_data_at(k, OAR_HUBER_OUT, 0, dt, n, &out));
    if (n == 0) return OAR_OK;
    huber_k<T><<<grid_for(n), kThreads>>>((const T *)x, (const T *)y, (T *)res, (T *)out, n, (T)a->delta);
    OAR_CU_LAUNCH(k, "huber_loss");
    return OAR_OK;
}

template <class T>
int huber_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_huber_attrs_t *a = (const oar_huber_attrs_t *)oar_k_attrs(k);
    const oar_tensor_t *rt, *gt;
    const void *r, *g;
    OAR_TRY(in_tensor_at(k, OAR_HUBERG_RESIDUAL, 0, dt, -1, &rt, &r));
    const int64_t n = oar_tensor_numel_of(rt);
    OAR_TRY(in_tensor_at(k, OAR_HUBERG_DOUT, 0, dt, n, &gt, &g));
    void *dx, *dy;
    OAR_TRY(out_data_opt_at(k, OAR_HUBERG_DX, 0, dt, n, &dx));
    OAR_TRY(out_data_opt_at(k, OAR_HUBERG_DY, 0, dt, n, &dy));
    if (n == 0 || (!dx && !dy)) return OAR_OK;
    huber_grad_k<T><<<grid_for(n), kThreads>>>((const T *)r, (const T *)g, (T *)dx, (T *)dy, n, (T)a->delta);
    OAR_CU_LAUNCH(k, "huber_loss_grad");
    return OAR_OK;
}

/* ---- log_loss, hinge_loss: one input, one label, one output ------------------------- */
template <class T>
__global__ void logl_k(const T *p, const T *l, T *out, int64_t n, T eps)
{
    OAR_CU_LOOP(i, n) out[i] = -l[i] * log(p[i] + eps) - (T(1) - l[i]) * log(T(1) - p[i] + eps);
}

template <class T>
__global__ void logl_grad_k(const T *p, const T *l, const T *g, T *d, int64_t n, T eps)
{
    OAR_CU_LOOP(i, n) d[i] = g[i] * (-l[i] / (p[i] + eps) + (T(1) - l[i]) / (T(1) - p[i] + eps));
}

template <class T>
__global__ void hinge_k(const T *x, const T *l, T *out, int64_t n, T)
{
    OAR_CU_LOOP(i, n) {
        T v = T(1) - x[i] * (T(2) * l[i] - T(1));
        out[i] = v > T(0) ? v : T(0);
    }
}

template <class T>
__global__ void hinge_grad_k(const T *x, const T *l, const T *g, T *d, int64_t n, T)
{
    OAR_CU_LOOP(i, n) {
        T s = T(2) * l[i] - T(1);
        d[i] = x[i] * s < T(1) ? -g[i] * s : T(0);
    }
}

/* a loss of two same-shaped inputs (slots a, b) into one output; its grad
 * from (a, b, Loss@GRAD) into a's gradient */
template <class T>
using PairFwd = void (*)(const T *, const T *, T *, int64_t, T);
template <class T>
using PairBwd = void (*)(const T *, const T *, const T *, T *, int64_t, T);

template <class T>
int pair_fwd(oar_kernel_ctx_t *k, int dt, int sa, int sb, int so, PairFwd<T> kern, T attr)
{
    const oar_tensor_t *at, *bt;
    const void *a, *b;
    OAR_TRY(in_tensor_at(k, sa, 0, dt, -1, &at, &a));
    const int64_t n = oar_tensor_numel_of(at);
    OAR_TRY(in_tensor_at(k, sb, 0, dt, n, &bt, &b));
    void *o;
    OAR_TRY(out_data_at(k, so, 0, dt, n, &o));
    if (n == 0) return OAR_OK;
    kern<<<grid_for(n), kThreads>>>((const T *)a, (const T *)b, (T *)o, n, attr);
    OAR_CU_LAUNCH(k, "of an elementwise loss (loss_ext.cu)");
    return OAR_OK;
}

template <class T>
int pair_bwd(oar_kernel_ctx_t *k, int dt, int sa, int sb, int sg, int sd, PairBwd<T> kern, T attr)
{
    const oar_tensor_t *at, *bt, *gt;
    const void *a, *b, *g;
    OAR_TRY(in_tensor_at(k, sa, 0, dt, -1, &at, &a));
    const int64_t n = oar_tensor_numel_of(at);
    OAR_TRY(in_tensor_at(k, sb, 0, dt, n, &bt, &b));
    OAR_TRY(in_tensor_at(k, sg, 0, dt, n, &gt, &g));
    void *d;
    OAR_TRY(out_data_opt_at(k, sd, 0, dt, n, &d));
    if (n == 0 || !d) return OAR_OK;
    kern<<<grid_for(n), kThreads>>>((const T *)a, (const T *)b, (const T *)g, (T *)d, n, attr);
    OAR_CU_LAUNCH(k, "of an elementwise loss (loss_ext.cu)");
    return OAR_OK;
}

template <class T>
int logl_fwd(oar_kernel_ctx_t *k, int dt)
{
    const T eps = (T)((const oar_logl_attrs_t *)oar_k_attrs(k))->epsilon;
    return pair_fwd<T>(k, dt, OAR_LOGL_PREDICTED, OAR_LOGL_LABELS, OAR_LOGL_LOSS, logl_k<T>, eps);
}

template <class T>
int logl_bwd(oar_kernel_ctx_t *k, int dt)
{
    const T eps = (T)((const oar_logl_attrs_t *)oar_k_attrs(k))->epsilon;
    return pair_bwd<T>(k, dt, OAR_LOGLG_PREDICTED, OAR_LOGLG_LABELS, OAR_LOGLG_DLOSS, OAR_LOGLG_DPRED,
                       logl_grad_k<T>, eps);
}

template <class T>
int hinge_fwd(oar_kernel_ctx_t *k, int dt)
{
    return pair_fwd<T>(k, dt, OAR_HINGE_LOGITS, OAR_HINGE_LABELS, OAR_HINGE_LOSS, hinge_k<T>, T(0));
}

template <class T>
int hinge_bwd(oar_kernel_ctx_t *k, int dt)
{
    return pair_bwd<T>(k, dt, OAR_HINGEG_LOGITS, OAR_HINGEG_LABELS, OAR_HINGEG_DLOSS, OAR_HINGEG_DLOGITS,
                       hinge_grad_k<T>, T(0));
}

/* ---- kldiv_loss ------------------------------------------------------------------- */
template <class T>
__device__ inline T kl_term(T x, T t)
{
    return t > T(0) ? t * (log(t) - x) : T(0);
}

template <class T>
__global__ void kldiv_none_k(const T *x, const T *t, T *out, int64_t n)
{
    OAR_CU_LOOP(i, n) out[i] = kl_term(x[i], t[i]);
}

/* one block: the sum of every term, times `scale` */
template <class T>
__global__ void kldiv_sum_k(const T *x, const T *t, T *out, int64_t n, T scale)
{
    __shared__ T sh[32];
    T s = T(0);
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += kl_term(x[i], t[i]);
    s = block_sum(s, sh);
    if (threadIdx.x == 0) out[0] = s * scale;
}

template <class T>
__global__ void kldiv_grad_k(const T *t, const T *g, T *d, int64_t n, bool none, T scale)
{
    OAR_CU_LOOP(i, n) d[i] = t[i] > T(0) ? -t[i] * g[none ? i : 0] * scale : T(0);
}

/* Loss's scale for the reduction over n elements in `rows` rows */
template <class T>
T kldiv_scale(int reduction, int64_t n, int64_t rows)
{
    if (reduction == OAR_KLDIV_REDUCTION_MEAN) return T(1) / (T)n;
    if (reduction == OAR_KLDIV_REDUCTION_BATCHMEAN) return T(1) / (T)rows;
    return T(1);
}

template <class T>
int kldiv_fwd(oar_kernel_ctx_t *k, int dt)
{
    const int red = ((const oar_kldiv_attrs_t *)oar_k_attrs(k))->reduction;
    const oar_tensor_t *xt, *tt;
    const void *x, *t;
    OAR_TRY(in_tensor_at(k, OAR_KLDIV_X, 0, dt, -1, &xt, &x));
    const int64_t n = oar_tensor_numel_of(xt), rows = xt->ndim > 0 ? xt->dims[0] : 1;
    OAR_TRY(in_tensor_at(k, OAR_KLDIV_TARGET, 0, dt, n, &tt, &t));
    const bool none = red == OAR_KLDIV_REDUCTION_NONE;
    void *o;
    OAR_TRY(out_data_at(k, OAR_KLDIV_LOSS, 0, dt, none ? n : 1, &o));
    if (none) {
        if (n == 0) return OAR_OK;
        kldiv_none_k<T><<<grid_for(n), kThreads>>>((const T *)x, (const T *)t, (T *)o, n);
    } else {
        kldiv_sum_k<T><<<1, kThreads>>>((const T *)x, (const T *)t, (T *)o, n, kldiv_scale<T>(red, n, rows));
    }
    OAR_CU_LAUNCH(k, "kldiv_loss");
    return OAR_OK;
}

template <class T>
int kldiv_bwd(oar_kernel_ctx_t *k, int dt)
{
    const int red = ((const oar_kldiv_attrs_t *)oar_k_attrs(k))->reduction;
    const oar_tensor_t *xt, *tt, *gt;
    const void *x, *t, *g;
    OAR_TRY(in_tensor_at(k, OAR_KLDIVG_X, 0, dt, -1, &xt, &x));
    const int64_t n = oar_tensor_numel_of(xt), rows = xt->ndim > 0 ? xt->dims[0] : 1;
    OAR_TRY(in_tensor_at(k, OAR_KLDIVG_TARGET, 0, dt, n, &tt, &t));
    const bool none = red == OAR_KLDIV_REDUCTION_NONE;
    OAR_TRY(in_tensor_at(k, OAR_KLDIVG_DLOSS, 0, dt, none ? n : 1, &gt, &g));
    void *d;
    OAR_TRY(out_data_opt_at(k, OAR_KLDIVG_DX, 0, dt, n, &d));
    if (n == 0 || !d) return OAR_OK;
    kldiv_grad_k<T><<<grid_for(n), kThreads>>>((const T *)t, (const T *)g, (T *)d, n, none,
                                                kldiv_scale<T>(red, n, rows));
    OAR_CU_LAUNCH(k, "kldiv_loss_grad");
    return OAR_OK;
}

/* ---- bce_loss ----------------------------------------------------------------------- */
template <class T>
__global__ void bce_k(const T *x, const T *l, T *out, int64_t n, unsigned long long *bad)
{
    OAR_CU_LOOP(i, n) {
        if (!(x[i] >= T(0) && x[i] <= T(1))) { flag_bad(bad, i); out[i] = T(0); continue; }
        T l1 = log(T(1) - x[i]), l0 = log(x[i]);   /* clamped at -100, as Fluid */
        out[i] = (l[i] - T(1)) * (l1 > T(-100) ? l1 : T(-100)) - l[i] * (l0 > T(-100) ? l0 : T(-100));
    }
}

template <class T>
__global__ void bce_grad_k(const T *x, const T *l, const T *g, T *d, int64_t n, T)
{
    OAR_CU_LOOP(i, n) {
        T den = (T(1) - x[i]) * x[i];
        d[i] = g[i] * (x[i] - l[i]) / (den > T(1e-12) ? den : T(1e-12));
    }
}

template <class T>
int bce_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt, *lt;
    const void *x, *l;
    OAR_TRY(in_tensor_at(k, OAR_BCE_X, 0, dt, -1, &xt, &x));
    const int64_t n = oar_tensor_numel_of(xt);
    OAR_TRY(in_tensor_at(k, OAR_BCE_LABEL, 0, dt, n, &lt, &l));
    void *o;
    OAR_TRY(out_data_at(k, OAR_BCE_OUT, 0, dt, n, &o));
    if (n == 0) return OAR_OK;
    BadFlag bad;
    OAR_TRY(bad.init(k));
    bce_k<T><<<grid_for(n), kThreads>>>((const T *)x, (const T *)l, (T *)o, n, bad.ptr());
    OAR_CU_LAUNCH(k, "bce_loss");
    return bad.report(k, "input X '%s' holds a value outside [0, 1] (element)", nm(oar_k_input_name(k, OAR_BCE_X, 0)));
}

template <class T>
int bce_bwd(oar_kernel_ctx_t *k, int dt)
{
    return pair_bwd<T>(k, dt, OAR_BCEG_X, OAR_BCEG_LABEL, OAR_BCEG_DOUT, OAR_BCEG_DX, bce_grad_k<T>, T(0));
}

/* ---- margin_rank_loss ------------------------------------------------------------------ */
template <class T>
__global__ void mrl_k(const T *x1, const T *x2, const T *l, T *act, T *out, int64_t n, T m)
{
    OAR_CU_LOOP(i, n) {
        T v = -l[i] * (x1[i] - x2[i]) + m;
        out[i] = v > T(0) ? v : T(0);
        act[i] = v > T(0) ? T(1) : T(0);
    }
}

template <class T>
__global__ void mrl_grad_k(const T *act, const T *g, const T *l, T *d1, T *d2, int64_t n)
{
    OAR_CU_LOOP(i, n) {
        T v = g[i] * act[i] * l[i];
        if (d1) d1[i] = -v;
        if (d2) d2[i] = v;
    }
}

template <class T>
int mrl_fwd(oar_kernel_ctx_t *k, int dt)
{
    const T m = (T)((const oar_mrl_attrs_t *)oar_k_attrs(k))->margin;
    const oar_tensor_t *at, *bt, *lt;
    const void *x1, *x2, *l;
    OAR_TRY(in_tensor_at(k, OAR_MRL_X1, 0, dt, -1, &at, &x1));
    const int64_t n = oar_tensor_numel_of(at);
    OAR_TRY(in_tensor_at(k, OAR_MRL_X2, 0, dt, n, &bt, &x2));
    OAR_TRY(in_tensor_at(k, OAR_MRL_LABEL, 0, dt, n, &lt, &l));
    void *act, *o;
    OAR_TRY(out_data_at(k, OAR_MRL_ACTIVATED, 0, dt, n, &act));
    OAR_TRY(out_data_at(k, OAR_MRL_OUT, 0, dt, n, &o));
    if (n == 0) return OAR_OK;
    mrl_k<T><<<grid_for(n), kThreads>>>((const T *)x1, (const T *)x2, (const T *)l, (T *)act, (T *)o, n, m);
    OAR_CU_LAUNCH(k, "margin_rank_loss");
    return OAR_OK;
}

template <class T>
int mrl_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *at, *gt, *lt;
    const void *act, *g, *l;
    OAR_TRY(in_tensor_at(k, OAR_MRLG_ACTIVATED, 0, dt, -1, &at, &act));
    const int64_t n = oar_tensor_numel_of(at);
    OAR_TRY(in_tensor_at(k, OAR_MRLG_DOUT, 0, dt, n, &gt, &g));
    OAR_TRY(in_tensor_at(k, OAR_MRLG_LABEL, 0, dt, n, &lt, &l));
    void *d1, *d2;
    OAR_TRY(out_data_opt_at(k, OAR_MRLG_DX1, 0, dt, n, &d1));
    OAR_TRY(out_data_opt_at(k, OAR_MRLG_DX2, 0, dt, n, &d2));
    if (n == 0 || (!d1 && !d2)) return OAR_OK;
    mrl_grad_k<T><<<grid_for(n), kThreads>>>((const T *)act, (const T *)g, (const T *)l, (T *)d1, (T *)d2, n);
    OAR_CU_LAUNCH(k, "margin_rank_loss_grad");
    return OAR_OK;
}

/* ---- modified_huber_loss ----------------------------------------------------------------- */
template <class T>
__global__ void mhl_k(const T *x, const T *y, T *inter, T *out, int64_t n, unsigned long long *bad)
{
    OAR_CU_LOOP(i, n) {
        if (y[i] != T(0) && y[i] != T(1)) { flag_bad(bad, i); inter[i] = out[i] = T(0); continue; }
        T v = x[i] * (T(2) * y[i] - T(1));
        inter[i] = v;
        out[i] = v < T(-1) ? T(-4) * v : v < T(1) ? (T(1) - v) * (T(1) - v) : T(0);
    }
}

/* a = IntermediateVal, b = Y */
template <class T>
__global__ void mhl_grad_k(const T *v, const T *y, const T *g, T *d, int64_t n, T)
{
    OAR_CU_LOOP(i, n) {
        T s = T(2) * y[i] - T(1);
        d[i] = v[i] < T(-1) ? T(-4) * s * g[i] : v[i] < T(1) ? T(-2) * (T(1) - v[i]) * s * g[i] : T(0);
    }
}

template <class T>
int mhl_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt, *yt;
    const void *x, *y;
    OAR_TRY(in_tensor_at(k, OAR_MHL_X, 0, dt, -1, &xt, &x));
    const int64_t n = oar_tensor_numel_of(xt);
    OAR_TRY(in_tensor_at(k, OAR_MHL_Y, 0, dt, n, &yt, &y));
    void *inter, *o;
    OAR_TRY(out_data_at(k, OAR_MHL_INTERMEDIATEVAL, 0, dt, n, &inter));
    OAR_TRY(out_data_at(k, OAR_MHL_OUT, 0, dt, n, &o));
    if (n == 0) return OAR_OK;
    BadFlag bad;
    OAR_TRY(bad.init(k));
    mhl_k<T><<<grid_for(n), kThreads>>>((const T *)x, (const T *)y, (T *)inter, (T *)o, n, bad.ptr());
    OAR_CU_LAUNCH(k, "modified_huber_loss");
    return bad.report(k, "input Y '%s' holds a label other than 0 and 1 (element)",
                      nm(oar_k_input_name(k, OAR_MHL_Y, 0)));
}

template <class T>
int mhl_bwd(oar_kernel_ctx_t *k, int dt)
{
    return pair_bwd<T>(k, dt, OAR_MHLG_INTERMEDIATEVAL, OAR_MHLG_Y, OAR_MHLG_DOUT, OAR_MHLG_DX, mhl_grad_k<T>, T(0));
}

#define LOSS_REG(OPNAME, FN)                                                              \
    int FN##_f32(oar_kernel_ctx_t *k) { return FN<float>(k, OAR_FP32); }                  \
    int FN##_f64(oar_kernel_ctx_t *k) { return FN<double>(k, OAR_FP64); }                 \
    OAR_REGISTER_KERNEL(OPNAME, OAR_PLACE_CUDA, OAR_FP32, FN##_f32)                       \
    OAR_REGISTER_KERNEL(OPNAME, OAR_PLACE_CUDA, OAR_FP64, FN##_f64)

LOSS_REG("smooth_l1_loss", sl1_fwd)
LOSS_REG("smooth_l1_loss_grad", sl1_bwd)
LOSS_REG("huber_loss", huber_fwd)
LOSS_REG("huber_loss_grad", huber_bwd)
LOSS_REG("log_loss", logl_fwd)
LOSS_REG("log_loss_grad", logl_bwd)
LOSS_REG("hinge_loss", hinge_fwd)
LOSS_REG("hinge_loss_grad", hinge_bwd)
LOSS_REG("kldiv_loss", kldiv_fwd)
LOSS_REG("kldiv_loss_grad", kldiv_bwd)
LOSS_REG("bce_loss", bce_fwd)
LOSS_REG("bce_loss_grad", bce_bwd)
LOSS_REG("margin_rank_loss", mrl_fwd)
LOSS_REG("margin_rank_loss_grad", mrl_bwd)
LOSS_REG("modified_huber_loss", mhl_fwd)
LOSS_REG("modified_huber_loss_grad", mhl_bwd)

}  // namespace
