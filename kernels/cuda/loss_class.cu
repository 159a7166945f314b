/*
 * loss_class.cu — CUDA kernels of the class-label losses of loss_ext.ops
 * and their grads (float32, float64): label_smooth, nll_loss and
 * cross_entropy2, with the CPU kernels' formulas (kernels/cpu/
 * loss_ext_tpl.h).
 *
 * Class ids outside [0, C) that are not ignore_index are flagged inside
 * the kernels (BadFlag) and fail the op with the first bad position, as
 * the CPU fails with the value. nll_loss's reduced forms (and
 * Total_weight) are one block's tree sum in double, an order that differs
 * from the CPU's loop: the specs compare with a tolerance. Grads write
 * zeros, then each labelled element's value (one thread per sample).
 */
#include "cuda_common.h"
extern "C" {
#include "ops/loss_ext.h"
}

using namespace oarcu;

namespace {

int label_report(oar_kernel_ctx_t *k, BadFlag &bad, int slot, int64_t C)
{
    return bad.report(k, "input Label '%s' holds a class id outside [0, %lld) that is not ignore_index (sample)",
                      nm(oar_k_input_name(k, slot, 0)), (long long)C);
}

template <class T>
__global__ void zero_k(T *d, int64_t n)
{
    OAR_CU_LOOP(i, n) d[i] = T(0);
}

/* ---- label_smooth ------------------------------------------------------------------ */
template <class T>
__global__ void lsm_k(const T *x, const T *p, T *out, int64_t n, int64_t C, T eps)
{
    OAR_CU_LOOP(i, n) out[i] = (T(1) - eps) * x[i] + (p ? eps * p[i % C] : eps / (T)C);
}

template <class T>
__global__ void lsm_grad_k(const T *g, T *d, int64_t n, T s)
{
    OAR_CU_LOOP(i, n) d[i] = s * g[i];
}

template <class T>
int lsm_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_lsm_attrs_t *a = (const oar_lsm_attrs_t *)oar_k_attrs(k);
    const oar_tensor_t *xt, *pt;
    const void *x, *p = nullptr;
    OAR_TRY(in_tensor_at(k, OAR_LSM_X, 0, dt, -1, &xt, &x));
    const int64_t n = oar_tensor_numel_of(xt), C = xt->ndim > 0 ? xt->dims[xt->ndim - 1] : 1;
    if (oar_k_input(k, OAR_LSM_PRIORDIST, 0)) OAR_TRY(in_tensor_at(k, OAR_LSM_PRIORDIST, 0, dt, C, &pt, &p));
    void *o;
    OAR_TRY(out_data_at(k, OAR_LSM_OUT, 0, dt, n, &o));
    if (n == 0) return OAR_OK;
    lsm_k<T><<<grid_for(n), kThreads>>>((const T *)x, (const T *)p, (T *)o, n, C, (T)a->epsilon);
    OAR_CU_LAUNCH(k, "label_smooth");
    return OAR_OK;
}

template <class T>
int lsm_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_lsm_attrs_t *a = (const oar_lsm_attrs_t *)oar_k_attrs(k);
    const oar_tensor_t *gt;
    const void *g;
    OAR_TRY(in_tensor_at(k, OAR_LSMG_DOUT, 0, dt, -1, &gt, &g));
    const int64_t n = oar_tensor_numel_of(gt);
    void *d;
    OAR_TRY(out_data_opt_at(k, OAR_LSMG_DX, 0, dt, n, &d));
    if (!d || n == 0) return OAR_OK;
    lsm_grad_k<T><<<grid_for(n), kThreads>>>((const T *)g, (T *)d, n, T(1) - (T)a->epsilon);
    OAR_CU_LAUNCH(k, "label_smooth_grad");
    return OAR_OK;
}

/* ---- nll_loss: X [N, C, (H, W)], sample s of row i at X[(i C + c) map + s] ------------- */
struct Nll {
    int64_t N, C, map;
    const void *x, *l, *w;
};

int nll_prepare(oar_kernel_ctx_t *k, int dt, int xs, int ls, int ws, Nll *g)
{
    const oar_tensor_t *xt, *lt, *wt;
    OAR_TRY(in_tensor_at(k, xs, 0, dt, -1, &xt, &g->x));
    if (xt->ndim != 2 && xt->ndim != 4) return oar_k_error(k, OAR_ERR_SHAPE, "input X must be [N, C] or [N, C, H, W]");
    g->N = xt->dims[0];
    g->C = xt->dims[1];
    g->map = xt->ndim == 4 ? xt->dims[2] * xt->dims[3] : 1;
    OAR_TRY(in_tensor_at(k, ls, 0, OAR_INT64, g->N * g->map, &lt, &g->l));
    g->w = nullptr;
    if (oar_k_input(k, ws, 0)) OAR_TRY(in_tensor_at(k, ws, 0, dt, g->C, &wt, &g->w));
    return OAR_OK;
}

/* one block: Out per sample (none) or the (weighted mean) sum, and Total_weight */
template <class T>
__global__ void nll_k(const T *x, const int64_t *l, const T *w, T *out, T *tw, int64_t N, int64_t C, int64_t map,
                      int64_t ignore, int reduction, unsigned long long *bad)
{
    __shared__ double sh[32];
    const bool none = reduction == OAR_NLL_REDUCTION_NONE;
    double sum = 0, tws = 0;
    for (int64_t idx = threadIdx.x; idx < N * map; idx += blockDim.x) {
        const int64_t i = idx / map, s = idx % map, c = l[idx];
        if (c == ignore) {
            if (none) out[idx] = T(0);
            continue;
        }
        if (c < 0 || c >= C) {
            flag_bad(bad, idx);
            if (none) out[idx] = T(0);
            continue;
        }
        const T wc = w ? w[c] : T(1), v = -x[(i * C + c) * map + s] * wc;
        if (none) out[idx] = v;
        sum += (double)v;
        tws += (double)wc;
    }
    sum = block_sum(sum, sh);
    tws = block_sum(tws, sh);
    if (threadIdx.x == 0) {
        if (!none) out[0] = (T)(reduction == OAR_NLL_REDUCTION_MEAN && tws != 0 ? sum / tws : sum);
        tw[0] = (T)tws;
    }
}

template <class T>
__global__ void nll_grad_k(const int64_t *l, const T *w, const T *tw, const T *g, T *d, int64_t N, int64_t C,
                           int64_t map, int64_t ignore, int reduction, unsigned long long *bad)
{
    OAR_CU_LOOP(idx, N * map) {
        const int64_t i = idx / map, s = idx % map, c = l[idx];
        if (c == ignore) continue;
        if (c < 0 || c >= C) { flag_bad(bad, idx); continue; }
        T v = -(w ? w[c] : T(1)) * g[reduction == OAR_NLL_REDUCTION_NONE ? idx : 0];
        if (reduction == OAR_NLL_REDUCTION_MEAN) v /= tw[0];
        d[(i * C + c) * map + s] = v;
    }
}

template <class T>
int nll_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_nll_attrs_t *a = (const oar_nll_attrs_t *)oar_k_attrs(k);
    Nll g;
    OAR_TRY(nll_prepare(k, dt, OAR_NLL_X, OAR_NLL_LABEL, OAR_NLL_WEIGHT, &g));
    const bool none = a->reduction == OAR_NLL_REDUCTION_NONE;
    void *o, *tw;
    OAR_TRY(out_data_at(k, OAR_NLL_OUT, 0, dt, none ? g.N * g.map : 1, &o));
    OAR_TRY(out_data_at(k, OAR_NLL_TOTAL_WEIGHT, 0, dt, 1, &tw));
    BadFlag bad;
    OAR_TRY(bad.init(k));
    nll_k<T><<<1, kThreads>>>((const T *)g.x, (const int64_t *)g.l, (const T *)g.w, (T *)o, (T *)tw, g.N, g.C, g.map,
                              a->ignore_index, a->reduction, bad.ptr());
    OAR_CU_LAUNCH(k, "nll_loss");
    return label_report(k, bad, OAR_NLL_LABEL, g.C);
}

template <class T>
int nll_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_nll_attrs_t *a = (const oar_nll_attrs_t *)oar_k_attrs(k);
    Nll g;
    OAR_TRY(nll_prepare(k, dt, OAR_NLLG_X, OAR_NLLG_LABEL, OAR_NLLG_WEIGHT, &g));
    const bool none = a->reduction == OAR_NLL_REDUCTION_NONE;
    const oar_tensor_t *twt, *gt;
    const void *tw, *gd;
    OAR_TRY(in_tensor_at(k, OAR_NLLG_TOTAL_WEIGHT, 0, dt, 1, &twt, &tw));
    OAR_TRY(in_tensor_at(k, OAR_NLLG_DOUT, 0, dt, none ? g.N * g.map : 1, &gt, &gd));
    const int64_t n = g.N * g.C * g.map;
    void *d;
    OAR_TRY(out_data_opt_at(k, OAR_NLLG_DX, 0, dt, n, &d));
    if (!d || n == 0) return OAR_OK;
    zero_k<T><<<grid_for(n), kThreads>>>((T *)d, n);
    OAR_CU_LAUNCH(k, "nll_loss_grad");
    BadFlag bad;
    OAR_TRY(bad.init(k));
    nll_grad_k<T><<<grid_for(g.N * g.map), kThreads>>>((const int64_t *)g.l, (const T *)g.w, (const T *)tw,
                                                        (const T *)gd, (T *)d, g.N, g.C, g.map, a->ignore_index,
                                                        a->reduction, bad.ptr());
    OAR_CU_LAUNCH(k, "nll_loss_grad");
    return label_report(k, bad, OAR_NLLG_LABEL, g.C);
}

/* ---- cross_entropy2: Y = -log(X[label]) (infinities as +-1e20), MatchX = X[label] ------- */
template <class T>
__global__ void ce2_k(const T *x, const int64_t *l, T *y, T *m, int64_t rows, int64_t C, int ignore,
                      unsigned long long *bad)
{
    OAR_CU_LOOP(i, rows) {
        const int64_t c = l[i];
        if (c == ignore || c < 0 || c >= C) {
            if (c != ignore) flag_bad(bad, i);
            y[i] = T(0);
            if (m) m[i] = T(0);
            continue;
        }
        const T p = x[i * C + c];
        T lg = log(p);
        if (isinf(lg)) lg = lg < T(0) ? T(-1e20) : T(1e20);
        y[i] = -lg;
        if (m) m[i] = p;
    }
}

template <class T>
__global__ void ce2_grad_k(const int64_t *l, const T *m, const T *g, T *d, int64_t rows, int64_t C, int ignore,
                           unsigned long long *bad)
{
    OAR_CU_LOOP(i, rows) {
        const int64_t c = l[i];
        if (c == ignore) continue;
        if (c < 0 || c >= C) { flag_bad(bad, i); continue; }
        d[i * C + c] = -g[i] / m[i];
    }
}

template <class T>
int ce2_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_ce2_attrs_t *a = (const oar_ce2_attrs_t *)oar_k_attrs(k);
    const oar_tensor_t *xt, *lt;
    const void *x, *l;
    OAR_TRY(in_tensor_at(k, OAR_CE2_X, 0, dt, -1, &xt, &x));
    const int64_t n = oar_tensor_numel_of(xt), C = xt->ndim > 0 ? xt->dims[xt->ndim - 1] : 1;
    const int64_t rows = C > 0 ? n / C : 0;
    OAR_TRY(in_tensor_at(k, OAR_CE2_LABEL, 0, OAR_INT64, rows, &lt, &l));
    void *y, *m;
    OAR_TRY(out_data_at(k, OAR_CE2_Y, 0, dt, rows, &y));
    OAR_TRY(out_data_opt_at(k, OAR_CE2_MATCHX, 0, dt, rows, &m));
    /* XShape holds no values: an (empty) buffer marks it written */
    if (oar_k_output(k, OAR_CE2_XSHAPE, 0) && !oar_k_output_data(k, OAR_CE2_XSHAPE, 0, dt)) return OAR_ERR_NOMEM;
    if (rows == 0) return OAR_OK;
    BadFlag bad;
    OAR_TRY(bad.init(k));
    ce2_k<T><<<grid_for(rows), kThreads>>>((const T *)x, (const int64_t *)l, (T *)y, (T *)m, rows, C, a->ignore_index,
                                            bad.ptr());
    OAR_CU_LAUNCH(k, "cross_entropy2");
    return label_report(k, bad, OAR_CE2_LABEL, C);
}

template <class T>
int ce2_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_ce2_attrs_t *a = (const oar_ce2_attrs_t *)oar_k_attrs(k);
    const oar_tensor_t *xs = oar_k_input(k, OAR_CE2G_XSHAPE, 0);
    if (!xs || xs->ndim < 2)
        return oar_k_error(k, OAR_ERR_SHAPE, "input XShape '%s' must hold X's shape and a 0",
                           nm(oar_k_input_name(k, OAR_CE2G_XSHAPE, 0)));
    int64_t n = 1;
    for (int i = 0; i < xs->ndim - 1; i++) n *= xs->dims[i];
    const int64_t C = xs->dims[xs->ndim - 2], rows = C > 0 ? n / C : 0;
    const oar_tensor_t *lt, *mt, *gt;
    const void *l, *m, *g;
    OAR_TRY(in_tensor_at(k, OAR_CE2G_LABEL, 0, OAR_INT64, rows, &lt, &l));
    OAR_TRY(in_tensor_at(k, OAR_CE2G_MATCHX, 0, dt, rows, &mt, &m));
    OAR_TRY(in_tensor_at(k, OAR_CE2G_DY, 0, dt, rows, &gt, &g));
    void *d;
    OAR_TRY(out_data_opt_at(k, OAR_CE2G_DX, 0, dt, n, &d));
    if (!d || n == 0) return OAR_OK;
    zero_k<T><<<grid_for(n), kThreads>>>((T *)d, n);
    OAR_CU_LAUNCH(k, "cross_entropy_grad2");
    if (rows == 0) return OAR_OK;
    BadFlag bad;
    OAR_TRY(bad.init(k));
    ce2_grad_k<T><<<grid_for(rows), kThreads>>>((const int64_t *)l, (const T *)m, (const T *)g, (T *)d, rows, C,
                                                 a->ignore_index, bad.ptr());
    OAR_CU_LAUNCH(k, "cross_entropy_grad2");
    return label_report(k, bad, OAR_CE2G_LABEL, C);
}

#define LOSS_REG(OPNAME, FN)                                                              \
    int FN##_f32(oar_kernel_ctx_t *k) { return FN<float>(k, OAR_FP32); }                  \
    int FN##_f64(oar_kernel_ctx_t *k) { return FN<double>(k, OAR_FP64); }                 \
    OAR_REGISTER_KERNEL(OPNAME, OAR_PLACE_CUDA, OAR_FP32, FN##_f32)                       \
    OAR_REGISTER_KERNEL(OPNAME, OAR_PLACE_CUDA, OAR_FP64, FN##_f64)

LOSS_REG("label_smooth", lsm_fwd)
LOSS_REG("label_smooth_grad", lsm_bwd)
LOSS_REG("nll_loss", nll_fwd)
LOSS_REG("nll_loss_grad", nll_bwd)
LOSS_REG("cross_entropy2", ce2_fwd)
LOSS_REG("cross_entropy_grad2", ce2_bwd)

}  // namespace
