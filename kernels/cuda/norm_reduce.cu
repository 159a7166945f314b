/*
 * norm_reduce.cu — CUDA kernels of p_norm (norm_ext.ops) and
 * frobenius_norm (linalg2.ops) and their grads (float32, float64), with
 * the CPU kernels' formulas (kernels/cpu/norm_ext.c, linalg2.c).
 *
 * Both reduce groups of X: one block per output element, sums in double
 * (a tree order: the specs compare with a tolerance), max and min for
 * p_norm's infinite orders. The grads give each X element its group's
 * Out and Out@GRAD, one thread per element.
 */
#include "cuda_common.h"
extern "C" {
#include "ops/linalg2.h"
#include "ops/norm_ext.h"
}

using namespace oarcu;

namespace {

unsigned threads_for(int64_t n)
{
    int64_t t = (n + 31) / 32 * 32;
    return (unsigned)(t < 32 ? 32 : t > 256 ? 256 : t);
}

unsigned rows_grid(int64_t rows) { return (unsigned)(rows < 65535 ? rows : 65535); }

/* ---- p_norm: X as [outer, mid, inner], the norm over mid --------------------------- */
void pn_split(const oar_pnorm_attrs_t *a, const oar_tensor_t *x, int64_t *outer, int64_t *mid, int64_t *inner)
{
    *outer = *inner = 1;
    *mid = oar_tensor_numel_of(x);
    if (a->asvector || x->ndim == 0) return;
    const int ax = a->axis < 0 ? a->axis + x->ndim : a->axis;
    *mid = x->dims[ax];
    for (int i = 0; i < ax; i++) *outer *= x->dims[i];
    for (int i = ax + 1; i < x->ndim; i++) *inner *= x->dims[i];
}

template <class T>
__global__ void pn_k(const T *x, T *o, int64_t rows, int64_t mid, int64_t inner, double p)
{
    __shared__ double sh[32];
    const bool inf = isinf(p);
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const int64_t base = (r / inner) * mid * inner + r % inner;
        /* +inf: max |x|; -inf: min |x| (as -max(-|x|)); else the sum of |x|^p or the nonzero count */
        double acc = inf ? -INFINITY : 0;
        for (int64_t i = threadIdx.x; i < mid; i += blockDim.x) {
            const double e = fabs((double)x[base + i * inner]);
            if (inf) acc = fmax(acc, p > 0 ? e : -e);
            else if (p == 0) acc += e != 0;
            else acc += pow(e, p);
        }
        double res;
        if (inf) {
            res = block_max(acc, sh);
            if (p < 0) res = -res;
        } else {
            res = block_sum(acc, sh);
            if (p != 0) res = pow(res, 1.0 / p);
        }
        if (threadIdx.x == 0) o[r] = (T)res;
    }
}

template <class T>
__global__ void pn_grad_k(const T *x, const T *nv, const T *g, T *dx, int64_t n, int64_t mid, int64_t inner, double p,
                          double eps)
{
    OAR_CU_LOOP(at, n) {
        const int64_t r = (at / (mid * inner)) * inner + at % inner;
        const double nrm = nv[r], dy = g[r], xv = x[at], e = fabs(xv), s = (xv > 0) - (xv < 0);
        double d;
        if (p == 0) d = 0;
        else if (isinf(p)) d = e == nrm ? s * dy : 0;
        /* Paddle: |x|^(p-1) sign(x) dy (norm + eps)^(1-p) */
        else d = pow(e, p - 1) * s * dy * pow(nrm + eps, 1 - p);
        dx[at] = (T)d;
    }
}

template <class T>
int pn_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_pnorm_attrs_t *a = (const oar_pnorm_attrs_t *)oar_k_attrs(k);
    const oar_tensor_t *xt;
    const void *x;
    OAR_TRY(in_tensor_at(k, OAR_PN_X, 0, dt, -1, &xt, &x));
    int64_t outer, mid, inner;
    pn_split(a, xt, &outer, &mid, &inner);
    void *o;
    OAR_TRY(out_data_at(k, OAR_PN_OUT, 0, dt, outer * inner, &o));
    if (outer * inner == 0) return OAR_OK;
    pn_k<T><<<rows_grid(outer * inner), threads_for(mid)>>>((const T *)x, (T *)o, outer * inner, mid, inner,
                                                             (double)a->porder);
    OAR_CU_LAUNCH(k, "p_norm");
    return OAR_OK;
}

template <class T>
int pn_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_pnorm_attrs_t *a = (const oar_pnorm_attrs_t *)oar_k_attrs(k);
    const oar_tensor_t *xt, *nt, *gt;
    const void *x, *nv, *g;
    OAR_TRY(in_tensor_at(k, OAR_PNG_X, 0, dt, -1, &xt, &x));
    int64_t outer, mid, inner;
    pn_split(a, xt, &outer, &mid, &inner);
    OAR_TRY(in_tensor_at(k, OAR_PNG_OUT, 0, dt, outer * inner, &nt, &nv));
    OAR_TRY(in_tensor_at(k, OAR_PNG_DOUT, 0, dt, outer * inner, &gt, &g));
    const int64_t n = oar_tensor_numel_of(xt);
    void *dx;
    OAR_TRY(out_data_opt_at(k, OAR_PNG_DX, 0, dt, n, &dx));
    if (!dx || n == 0) return OAR_OK;
    pn_grad_k<T><<<grid_for(n), kThreads>>>((const T *)x, (const T *)nv, (const T *)g, (T *)dx, n, mid, inner,
                                             (double)a->porder, (double)a->epsilon);
    OAR_CU_LAUNCH(k, "p_norm_grad");
    return OAR_OK;
}

/* ---- frobenius_norm: sqrt of the sum of squares over the reduced dims ---------------- */
struct FnPlan {
    int nd, nk, nr;
    int64_t dims[OAR_MAX_DIMS], ost[OAR_MAX_DIMS];   /* Out's stride per X dim, 0 if reduced */
    int64_t kdim[OAR_MAX_DIMS], kxs[OAR_MAX_DIMS];   /* kept dims and their X strides */
    int64_t rdim[OAR_MAX_DIMS], rxs[OAR_MAX_DIMS];   /* reduced dims and their X strides */
    int64_t on, rn;                                  /* Out's elements, elements per group */
};

void fn_plan(const oar_fnorm_attrs_t *a, const oar_tensor_t *x, FnPlan *p)
{
    bool mask[OAR_MAX_DIMS];
    const int nd = x->ndim;
    p->nd = nd;
    for (int i = 0; i < nd; i++) mask[i] = a->reduce_all;
    for (int i = 0; i < a->dim.n && !a->reduce_all; i++) {
        const int d = a->dim.v[i] < 0 ? a->dim.v[i] + nd : a->dim.v[i];
        if (d >= 0 && d < nd) mask[d] = true;   /* inference checked the axes */
    }
    int64_t os = 1, xs = 1;
    p->nk = p->nr = 0;
    p->on = p->rn = 1;
    for (int i = nd - 1; i >= 0; i--) {
        p->dims[i] = x->dims[i];
        p->ost[i] = mask[i] ? 0 : os;
        if (!mask[i]) os *= x->dims[i];
        xs *= x->dims[i];
    }
    int64_t st = 1;
    int64_t xst[OAR_MAX_DIMS];
    for (int i = nd - 1; i >= 0; i--) { xst[i] = st; st *= x->dims[i]; }
    for (int i = 0; i < nd; i++) {
        if (mask[i]) { p->rdim[p->nr] = x->dims[i]; p->rxs[p->nr++] = xst[i]; p->rn *= x->dims[i]; }
        else { p->kdim[p->nk] = x->dims[i]; p->kxs[p->nk++] = xst[i]; p->on *= x->dims[i]; }
    }
    (void)xs;
}

template <class T>
__global__ void fn_k(const T *x, T *o, FnPlan p)
{
    __shared__ double sh[32];
    for (int64_t q = blockIdx.x; q < p.on; q += gridDim.x) {
        int64_t base = 0, r = q;
        for (int i = p.nk - 1; i >= 0; i--) { base += (r % p.kdim[i]) * p.kxs[i]; r /= p.kdim[i]; }
        double s = 0;
        for (int64_t e = threadIdx.x; e < p.rn; e += blockDim.x) {
            int64_t off = base, rr = e;
            for (int i = p.nr - 1; i >= 0; i--) { off += (rr % p.rdim[i]) * p.rxs[i]; rr /= p.rdim[i]; }
            s += (double)x[off] * (double)x[off];
        }
        s = block_sum(s, sh);
        if (threadIdx.x == 0) o[q] = (T)sqrt(s);
    }
}

template <class T>
__global__ void fn_grad_k(const T *x, const T *ov, const T *g, T *dx, int64_t n, FnPlan p)
{
    OAR_CU_LOOP(i, n) {
        int64_t r = i, o = 0;
        for (int d = p.nd - 1; d >= 0; d--) { o += (r % p.dims[d]) * p.ost[d]; r /= p.dims[d]; }
        /* Out = 0: every X in its group is 0; take 0 rather than 0/0 */
        dx[i] = ov[o] == T(0) ? T(0) : (T)((double)g[o] * (double)x[i] / (double)ov[o]);
    }
}

template <class T>
int fn_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt;
    const void *x;
    OAR_TRY(in_tensor_at(k, OAR_FN_X, 0, dt, -1, &xt, &x));
    FnPlan p;
    fn_plan((const oar_fnorm_attrs_t *)oar_k_attrs(k), xt, &p);
    void *o;
    OAR_TRY(out_data_at(k, OAR_FN_OUT, 0, dt, p.on, &o));
    if (p.on == 0) return OAR_OK;
    fn_k<T><<<rows_grid(p.on), threads_for(p.rn)>>>((const T *)x, (T *)o, p);
    OAR_CU_LAUNCH(k, "frobenius_norm");
    return OAR_OK;
}

template <class T>
int fn_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt, *ot, *gt;
    const void *x, *ov, *g;
    OAR_TRY(in_tensor_at(k, OAR_FN_G_X, 0, dt, -1, &xt, &x));
    FnPlan p;
    fn_plan((const oar_fnorm_attrs_t *)oar_k_attrs(k), xt, &p);
    OAR_TRY(in_tensor_at(k, OAR_FN_G_OUT, 0, dt, p.on, &ot, &ov));
    OAR_TRY(in_tensor_at(k, OAR_FN_G_DOUT, 0, dt, p.on, &gt, &g));
    const int64_t n = oar_tensor_numel_of(xt);
    void *dx;
    OAR_TRY(out_data_opt_at(k, OAR_FN_G_DX, 0, dt, n, &dx));
    if (!dx || n == 0) return OAR_OK;
    fn_grad_k<T><<<grid_for(n), kThreads>>>((const T *)x, (const T *)ov, (const T *)g, (T *)dx, n, p);
    OAR_CU_LAUNCH(k, "frobenius_norm_grad");
    return OAR_OK;
}

#define NORM_REG(OPNAME, FN)                                                              \
    int FN##_f32(oar_kernel_ctx_t *k) { return FN<float>(k, OAR_FP32); }                  \
    int FN##_f64(oar_kernel_ctx_t *k) { return FN<double>(k, OAR_FP64); }                 \
    OAR_REGISTER_KERNEL(OPNAME, OAR_PLACE_CUDA, OAR_FP32, FN##_f32)                       \
    OAR_REGISTER_KERNEL(OPNAME, OAR_PLACE_CUDA, OAR_FP64, FN##_f64)

NORM_REG("p_norm", pn_fwd)
NORM_REG("p_norm_grad", pn_bwd)
NORM_REG("frobenius_norm", fn_fwd)
NORM_REG("frobenius_norm_grad", fn_bwd)

}  // namespace
