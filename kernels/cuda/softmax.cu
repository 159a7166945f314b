/*
 * softmax.cu — CUDA kernels of softmax, log_softmax and their grads
 * (float16, float32, float64; float16 computes in float), as kernels/cpu/softmax.c: the tensor seen as
 * [pre, n, post] around `axis`, one block per vector of n values (stride
 * post); the maximum is subtracted before exponentiating. Grads, with S the
 * sum of G*Out (softmax) or of G (log_softmax) along the axis:
 *   softmax:      dX = Out * (G - S)
 *   log_softmax:  dX = G - exp(Out) * S
 */
#include "cuda_common.h"
#include "half.h"
#include "ops/softmax.h"

using namespace oarcu;

namespace {

struct View { int64_t pre, n, post; };

int view_of(oar_kernel_ctx_t *k, const oar_tensor_t *t, View *v)
{
    const int axis0 = ((const oar_softmax_attrs_t *)oar_k_attrs(k))->axis;
    int axis = axis0;
    const int r = t->ndim;
    if (axis < 0) axis += r;
    if (r == 0 || axis < 0 || axis >= r) {
        char b[128];
        return oar_k_error(k, OAR_ERR_INVALID, "axis %d out of range for shape %s", axis0,
                           oar_shape_str(t->dims, t->ndim, b, sizeof b));
    }
    v->pre = v->post = 1;
    v->n = t->dims[axis];
    for (int i = 0; i < axis; i++) v->pre *= t->dims[i];
    for (int i = axis + 1; i < r; i++) v->post *= t->dims[i];
    return OAR_OK;
}

/* threads per vector of n values */
unsigned threads_for(int64_t n)
{
    int64_t t = (n + 31) / 32 * 32;
    return (unsigned)(t < 32 ? 32 : t > 256 ? 256 : t);
}

unsigned rows_grid(int64_t rows) { return (unsigned)(rows < 2147483647 ? rows : 2147483647); }

/* T: the storage type; max, sum and exponentials in A = acc_t<T> (float16's
 * softmax recomputes exp instead of rounding it to half between passes) */
template <class T, bool LOG>
__global__ void softmax_k(const T *x, T *o, View v)
{
    typedef acc_t<T> A;
    __shared__ A sh[32];
    const int64_t rows = v.pre * v.post;
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const int64_t base = (r / v.post) * v.n * v.post + r % v.post;
        A m = -INFINITY;
        for (int64_t j = threadIdx.x; j < v.n; j += blockDim.x) {
            A a = cvt<A>(x[base + j * v.post]);
            if (a > m || a != a) m = a;
        }
        m = block_max(m, sh);
        A s = 0;
        for (int64_t j = threadIdx.x; j < v.n; j += blockDim.x) s += exp(cvt<A>(x[base + j * v.post]) - m);
        s = block_sum(s, sh);
        if (LOG) {
            const A ls = m + log(s);
            for (int64_t j = threadIdx.x; j < v.n; j += blockDim.x)
                o[base + j * v.post] = cvt<T>(cvt<A>(x[base + j * v.post]) - ls);
        } else {
            const A inv = A(1) / s;
            for (int64_t j = threadIdx.x; j < v.n; j += blockDim.x)
                o[base + j * v.post] = cvt<T>(exp(cvt<A>(x[base + j * v.post]) - m) * inv);
        }
    }
}

template <class T, bool LOG>
__global__ void softmax_grad_k(const T *o, const T *g, T *d, View v)
{
    typedef acc_t<T> A;
    __shared__ A sh[32];
    const int64_t rows = v.pre * v.post;
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const int64_t base = (r / v.post) * v.n * v.post + r % v.post;
        A s = 0;
        for (int64_t j = threadIdx.x; j < v.n; j += blockDim.x) {
            const int64_t q = base + j * v.post;
            s += LOG ? cvt<A>(g[q]) : cvt<A>(g[q]) * cvt<A>(o[q]);
        }
        s = block_sum(s, sh);
        for (int64_t j = threadIdx.x; j < v.n; j += blockDim.x) {
            const int64_t q = base + j * v.post;
            const A gq = cvt<A>(g[q]), oq = cvt<A>(o[q]);
            d[q] = cvt<T>(LOG ? gq - exp(oq) * s : oq * (gq - s));
        }
    }
}

template <class T, bool LOG>
int sm_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt;
    const void *x;
    OAR_TRY(in_tensor_at(k, OAR_SM_X, 0, dt, -1, &xt, &x));
    View v;
    OAR_TRY(view_of(k, xt, &v));
    const int64_t total = v.pre * v.n * v.post;
    void *o;
    OAR_TRY(out_data_at(k, OAR_SM_OUT, 0, dt, total, &o));
    if (total == 0) return OAR_OK;
    softmax_k<T, LOG><<<rows_grid(v.pre * v.post), threads_for(v.n)>>>((const T *)x, (T *)o, v);
    OAR_CU_LAUNCH(k, "softmax");
    return OAR_OK;
}

template <class T, bool LOG>
int sm_bwd(oar_kernel_ctx_t *k, int dt)
{
    if (!oar_k_output(k, OAR_SMG_DX, 0)) return OAR_OK;
    const oar_tensor_t *ot, *gt;
    const void *o, *g;
    OAR_TRY(in_tensor_at(k, OAR_SMG_OUT, 0, dt, -1, &ot, &o));
    OAR_TRY(in_tensor_at(k, OAR_SMG_DOUT, 0, dt, oar_tensor_numel_of(ot), &gt, &g));
    View v;
    OAR_TRY(view_of(k, ot, &v));
    const int64_t total = v.pre * v.n * v.post;
    void *d;
    OAR_TRY(out_data_at(k, OAR_SMG_DX, 0, dt, total, &d));
    if (total == 0) return OAR_OK;
    softmax_grad_k<T, LOG><<<rows_grid(v.pre * v.post), threads_for(v.n)>>>((const T *)o, (const T *)g, (T *)d, v);
    OAR_CU_LAUNCH(k, "softmax grad");
    return OAR_OK;
}

#define SM_REG(SFX, T, DT)                                                                   \
    int softmax_##SFX(oar_kernel_ctx_t *k) { return sm_fwd<T, false>(k, DT); }               \
    int softmax_grad_##SFX(oar_kernel_ctx_t *k) { return sm_bwd<T, false>(k, DT); }          \
    int log_softmax_##SFX(oar_kernel_ctx_t *k) { return sm_fwd<T, true>(k, DT); }            \
    int log_softmax_grad_##SFX(oar_kernel_ctx_t *k) { return sm_bwd<T, true>(k, DT); }       \
    OAR_REGISTER_KERNEL("softmax", OAR_PLACE_CUDA, DT, softmax_##SFX)                          \
    OAR_REGISTER_KERNEL("softmax_grad", OAR_PLACE_CUDA, DT, softmax_grad_##SFX)                \
    OAR_REGISTER_KERNEL("log_softmax", OAR_PLACE_CUDA, DT, log_softmax_##SFX)                  \
    OAR_REGISTER_KERNEL("log_softmax_grad", OAR_PLACE_CUDA, DT, log_softmax_grad_##SFX)
SM_REG(f16, __half, OAR_FP16)
SM_REG(f32, float, OAR_FP32)
SM_REG(f64, double, OAR_FP64)

}  // namespace
