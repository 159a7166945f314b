/*
 * reduce.cu — CUDA kernels of mean, reduce_{sum,mean,max,min} and their
 * grads (float32, float64), as kernels/cpu/reduce.c.
 *
 * The reduction is planned as on the CPU: size-1 axes dropped, neighbouring
 * axes that are both reduced or both kept merged. An output element is the
 * sum (max, min) over the reduced axes at its kept coordinates; blocks of
 * threads share the reduced elements of one output, and when there are few
 * outputs each one is split over several blocks whose partial results are
 * combined by a second kernel. Sums accumulate in double, max/min let a NaN
 * win, as on the CPU. Grads give each X element the Out@GRAD of its output
 * (scaled for mean; only where X equals Out for max/min).
 */
#include "cuda_common.h"
#include "ops/reduce.h"

using namespace oarcu;

namespace {

enum { R_SUM, R_MEAN, R_MAX, R_MIN };

struct Plan {
    int n;                              /* merged rank, >= 1 */
    int64_t dims[OAR_MAX_DIMS];
    int64_t ost[OAR_MAX_DIMS];          /* Out stride per merged axis; 0 if reduced */
    int nk, nr;                         /* kept / reduced axes, outermost first */
    int64_t kdim[OAR_MAX_DIMS], kxs[OAR_MAX_DIMS];
    int64_t rdim[OAR_MAX_DIMS], rxs[OAR_MAX_DIMS];
    int64_t xnumel, onumel, rcount;
};

int make_plan(oar_kernel_ctx_t *k, const oar_tensor_t *x, Plan *p)
{
    const oar_reduce_attrs_t *a = (const oar_reduce_attrs_t *)oar_k_attrs(k);
    const int nd = x->ndim, n = a->dim.n;   /* decode made an empty `dim` Fluid's default {0} */
    const int32_t *dim = a->dim.v;
    bool all = a->reduce_all, mask[OAR_MAX_DIMS], red[OAR_MAX_DIMS];
    for (int i = 0; i < nd; i++) mask[i] = all;
    for (int i = 0; i < n && !all; i++) {
        int d = dim[i] < 0 ? dim[i] + nd : dim[i];
        if (d < 0 || d >= (nd > 0 ? nd : 1))
            return oar_k_error(k, OAR_ERR_RANGE, "attr dim[%d] = %d is out of range for input X '%s' of rank %d", i,
                               (int)dim[i], nm(oar_k_input_name(k, OAR_RED_X, 0)), nd);
        if (nd > 0) mask[d] = true;
    }
    p->n = 0;
    p->xnumel = p->onumel = p->rcount = 1;
    for (int i = 0; i < nd; i++) {
        int64_t d = x->dims[i];
        p->xnumel *= d;
        if (mask[i]) p->rcount *= d; else p->onumel *= d;
        if (d == 1) continue;
        if (p->n > 0 && red[p->n - 1] == mask[i]) {
            p->dims[p->n - 1] *= d;
        } else {
            p->dims[p->n] = d;
            red[p->n++] = mask[i];
        }
    }
    if (p->n == 0) { p->n = 1; p->dims[0] = 1; red[0] = true; }
    int64_t s = 1, xs = 1, xstride[OAR_MAX_DIMS];
    for (int i = p->n - 1; i >= 0; i--) {
        p->ost[i] = red[i] ? 0 : s;
        if (!red[i]) s *= p->dims[i];
        xstride[i] = xs;
        xs *= p->dims[i];
    }
    p->nk = p->nr = 0;
    for (int i = 0; i < p->n; i++) {
        if (red[i]) { p->rdim[p->nr] = p->dims[i]; p->rxs[p->nr++] = xstride[i]; }
        else { p->kdim[p->nk] = p->dims[i]; p->kxs[p->nk++] = xstride[i]; }
    }
    return OAR_OK;
}

template <int KIND> __device__ inline double r_init() { return KIND == R_MAX ? -INFINITY : KIND == R_MIN ? INFINITY : 0.0; }
template <int KIND> __device__ inline double r_join(double a, double v)
{
    if (KIND == R_MAX) return (v > a || v != v || a != a) ? (a != a ? a : v) : a;
    if (KIND == R_MIN) return (v < a || v != v || a != a) ? (a != a ? a : v) : a;
    return a + v;
}
template <int KIND> __device__ inline double block_join(double v, double *sh)
{
    if (KIND == R_MAX) return block_max(v, sh);
    if (KIND == R_MIN) return -block_max(-v, sh);
    return block_sum(v, sh);
}

/* block b: output o = b / splits, its part b % splits of the reduced elements */
template <class T, int KIND>
__global__ void reduce_k(const T *x, T *y, double *part, Plan p, int64_t splits, double scale)
{
    __shared__ double sh[32];
    const int64_t nblk = p.onumel * splits;
    for (int64_t b = blockIdx.x; b < nblk; b += gridDim.x) {
        const int64_t o = b / splits, s = b % splits;
        int64_t base = 0, oo = o;
        for (int d = p.nk - 1; d >= 0; d--) { base += (oo % p.kdim[d]) * p.kxs[d]; oo /= p.kdim[d]; }
        double acc = r_init<KIND>();
        for (int64_t q = s * blockDim.x + threadIdx.x; q < p.rcount; q += splits * blockDim.x) {
            int64_t off = base, qq = q;
            for (int d = p.nr - 1; d >= 0; d--) { off += (qq % p.rdim[d]) * p.rxs[d]; qq /= p.rdim[d]; }
            acc = r_join<KIND>(acc, (double)x[off]);
        }
        acc = block_join<KIND>(acc, sh);
        if (threadIdx.x == 0) {
            if (splits == 1) y[o] = (T)(KIND == R_MEAN ? acc * scale : acc);
            else part[b] = acc;
        }
    }
}

template <class T, int KIND>
__global__ void reduce_finish_k(const double *part, T *y, int64_t onumel, int64_t splits, double scale)
{
    OAR_CU_LOOP(o, onumel) {
        double acc = r_init<KIND>();
        for (int64_t s = 0; s < splits; s++) acc = r_join<KIND>(acc, part[o * splits + s]);
        y[o] = (T)(KIND == R_MEAN ? acc * scale : acc);
    }
}

/* Out over X's plan; `scale` applies to R_MEAN */
template <class T, int KIND>
int run_reduce(oar_kernel_ctx_t *k, const Plan &p, const T *x, T *y, double scale)
{
    if (p.onumel == 0) return OAR_OK;
    const unsigned threads = p.rcount >= 256 ? 256 : 32;
    int64_t splits = 1;
    if (p.onumel < 128 && p.rcount >= 65536) {
        splits = p.rcount / 32768;
        if (splits > 256) splits = 256;
    }
    Scratch part;
    if (splits > 1) OAR_TRY(part.alloc(k, sizeof(double) * (size_t)(p.onumel * splits), "partial sums"));
    const int64_t nblk = p.onumel * splits;
    reduce_k<T, KIND><<<(unsigned)(nblk < 65536 * 4 ? nblk : 65536 * 4), threads>>>(x, y, part.as<double>(), p,
                                                                                     splits, scale);
    OAR_CU_LAUNCH(k, "reduce");
    if (splits > 1) {
        reduce_finish_k<T, KIND><<<grid_for(p.onumel), kThreads>>>(part.as<double>(), y, p.onumel, splits, scale);
        OAR_CU_LAUNCH(k, "reduce (combine)");
    }
    return OAR_OK;
}

template <class T, int KIND>
int reduce_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt;
    const void *xv;
    OAR_TRY(in_tensor_at(k, OAR_RED_X, 0, dt, -1, &xt, &xv));
    Plan pl;
    OAR_TRY(make_plan(k, xt, &pl));
    if ((KIND == R_MAX || KIND == R_MIN) && pl.rcount == 0)
        return oar_k_error(k, OAR_ERR_SHAPE, "input X '%s' is empty along the reduced axes; its %s is undefined",
                           nm(oar_k_input_name(k, OAR_RED_X, 0)), KIND == R_MAX ? "max" : "min");
    void *yv;
    OAR_TRY(out_data_at(k, OAR_RED_OUT, 0, dt, pl.onumel, &yv));
    if (pl.rcount == 0) {   /* empty sums are 0; an empty mean is 0/0 */
        if (pl.onumel == 0) return OAR_OK;
        if (KIND == R_SUM)
            OAR_CU(k, cudaMemsetAsync(yv, 0, sizeof(T) * (size_t)pl.onumel, 0), "cudaMemsetAsync");
        else
            return run_reduce<T, KIND>(k, pl, (const T *)xv, (T *)yv, NAN);
        return OAR_OK;
    }
    return run_reduce<T, KIND>(k, pl, (const T *)xv, (T *)yv, 1.0 / (double)pl.rcount);
}

/* X element e -> its Out element */
__device__ inline int64_t out_of(const Plan &p, int64_t e)
{
    int64_t o = 0;
    for (int d = p.n - 1; d >= 0; d--) { o += (e % p.dims[d]) * p.ost[d]; e /= p.dims[d]; }
    return o;
}

template <class T, int KIND>
__global__ void reduce_grad_k(const T *x, const T *g, const T *out, T *dx, Plan p, double scale)
{
    OAR_CU_LOOP(e, p.xnumel) {
        const int64_t o = out_of(p, e);
        if (KIND == R_MAX || KIND == R_MIN) dx[e] = x[e] == out[o] ? g[o] : T(0);
        else dx[e] = (T)((double)g[o] * scale);
    }
}

template <class T, int KIND>
int reduce_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt, *gt, *ot = nullptr;
    const void *xv, *gv, *ov = nullptr;
    OAR_TRY(in_tensor_at(k, OAR_REDG_X, 0, dt, -1, &xt, &xv));
    Plan pl;
    OAR_TRY(make_plan(k, xt, &pl));
    OAR_TRY(in_tensor_at(k, OAR_REDG_DOUT, 0, dt, pl.onumel, &gt, &gv));
    if (KIND == R_MAX || KIND == R_MIN) OAR_TRY(in_tensor_at(k, OAR_REDG_OUT, 0, dt, pl.onumel, &ot, &ov));
    void *dv;
    OAR_TRY(out_data_at(k, OAR_REDG_DX, 0, dt, pl.xnumel, &dv));
    if (pl.xnumel == 0) return OAR_OK;
    const double scale = KIND == R_MEAN ? 1.0 / (double)pl.rcount : 1.0;
    reduce_grad_k<T, KIND><<<grid_for(pl.xnumel), kThreads>>>((const T *)xv, (const T *)gv, (const T *)ov, (T *)dv,
                                                              pl, scale);
    OAR_CU_LAUNCH(k, "reduce grad");
    return OAR_OK;
}

/* ---- mean (of every element, Out [1]) ----------------------------------------- */
template <class T>
int mean_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt;
    const void *xv;
    OAR_TRY(in_tensor_at(k, OAR_RED_X, 0, dt, -1, &xt, &xv));
    const int64_t n = oar_tensor_numel_of(xt);
    if (n == 0)
        return oar_k_error(k, OAR_ERR_SHAPE, "input X '%s' is empty; its mean is undefined",
                           nm(oar_k_input_name(k, OAR_RED_X, 0)));
    void *yv;
    OAR_TRY(out_data_at(k, OAR_RED_OUT, 0, dt, 1, &yv));
    Plan pl;
    pl.n = 1; pl.dims[0] = n; pl.ost[0] = 0;
    pl.nk = 0; pl.nr = 1; pl.rdim[0] = n; pl.rxs[0] = 1;
    pl.xnumel = n; pl.onumel = 1; pl.rcount = n;
    return run_reduce<T, R_MEAN>(k, pl, (const T *)xv, (T *)yv, 1.0 / (double)n);
}

template <class T>
__global__ void mean_grad_k(const T *g, T *dx, int64_t n)
{
    const T v = (T)((double)g[0] / (double)n);
    OAR_CU_LOOP(i, n) dx[i] = v;
}

template <class T>
int mean_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt, *gt;
    const void *xv, *gv;
    OAR_TRY(in_tensor_at(k, OAR_MEANG_X, 0, dt, -1, &xt, &xv));
    OAR_TRY(in_tensor_at(k, OAR_MEANG_DOUT, 0, dt, 1, &gt, &gv));
    const int64_t n = oar_tensor_numel_of(xt);
    void *dv;
    OAR_TRY(out_data_at(k, OAR_REDG_DX, 0, dt, n, &dv));
    if (n == 0) return OAR_OK;
    mean_grad_k<T><<<grid_for(n), kThreads>>>((const T *)gv, (T *)dv, n);
    OAR_CU_LAUNCH(k, "mean grad");
    return OAR_OK;
}

#define RED_REG(OP, KIND)                                                                          \
    int OP##_f32(oar_kernel_ctx_t *k) { return reduce_fwd<float, KIND>(k, OAR_FP32); }            \
    int OP##_f64(oar_kernel_ctx_t *k) { return reduce_fwd<double, KIND>(k, OAR_FP64); }           \
    int OP##_grad_f32(oar_kernel_ctx_t *k) { return reduce_bwd<float, KIND>(k, OAR_FP32); }       \
    int OP##_grad_f64(oar_kernel_ctx_t *k) { return reduce_bwd<double, KIND>(k, OAR_FP64); }      \
    OAR_REGISTER_KERNEL(#OP, OAR_PLACE_CUDA, OAR_FP32, OP##_f32)                                   \
    OAR_REGISTER_KERNEL(#OP, OAR_PLACE_CUDA, OAR_FP64, OP##_f64)                                   \
    OAR_REGISTER_KERNEL(#OP "_grad", OAR_PLACE_CUDA, OAR_FP32, OP##_grad_f32)                      \
    OAR_REGISTER_KERNEL(#OP "_grad", OAR_PLACE_CUDA, OAR_FP64, OP##_grad_f64)

RED_REG(reduce_sum, R_SUM)
RED_REG(reduce_mean, R_MEAN)
RED_REG(reduce_max, R_MAX)
RED_REG(reduce_min, R_MIN)

int mean_f32(oar_kernel_ctx_t *k) { return mean_fwd<float>(k, OAR_FP32); }
int mean_f64(oar_kernel_ctx_t *k) { return mean_fwd<double>(k, OAR_FP64); }
int mean_grad_f32(oar_kernel_ctx_t *k) { return mean_bwd<float>(k, OAR_FP32); }
int mean_grad_f64(oar_kernel_ctx_t *k) { return mean_bwd<double>(k, OAR_FP64); }
OAR_REGISTER_KERNEL("mean", OAR_PLACE_CUDA, OAR_FP32, mean_f32)
OAR_REGISTER_KERNEL("mean", OAR_PLACE_CUDA, OAR_FP64, mean_f64)
OAR_REGISTER_KERNEL("mean_grad", OAR_PLACE_CUDA, OAR_FP32, mean_grad_f32)
OAR_REGISTER_KERNEL("mean_grad", OAR_PLACE_CUDA, OAR_FP64, mean_grad_f64)

}  // namespace
