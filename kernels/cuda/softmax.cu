/*
 * softmax.cu — CUDA kernels of softmax, log_softmax and their grads
 * (float32, float64), as kernels/cpu/softmax.c: the tensor seen as
 * [pre, n, post] around `axis`, one block per vector of n values (stride
 * post); the maximum is subtracted before exponentiating. Grads, with S the
 * sum of G*Out (softmax) or of G (log_softmax) along the axis:
 *   softmax:      dX = Out * (G - S)
 *   log_softmax:  dX = G - exp(Out) * S
 */
#include "cuda_common.h"

using namespace oarcu;

namespace {

struct View { int64_t pre, n, post; };

int view_of(oar_kernel_ctx_t *k, const oar_tensor_t *t, View *v)
{
    int axis = oar_attr_i(oar_k_op(k), "axis");
    const int r = t->ndim;
    if (axis < 0) axis += r;
    if (r == 0 || axis < 0 || axis >= r) {
        char b[128];
        return oar_k_error(k, OAR_ERR_INVALID, "axis %d out of range for shape %s", oar_attr_i(oar_k_op(k), "axis"),
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

template <class T, bool LOG>
__global__ void softmax_k(const T *x, T *o, View v)
{
    __shared__ T sh[32];
    const int64_t rows = v.pre * v.post;
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const int64_t base = (r / v.post) * v.n * v.post + r % v.post;
        T m = -INFINITY;
        for (int64_t j = threadIdx.x; j < v.n; j += blockDim.x) {
            T a = x[base + j * v.post];
            if (a > m || a != a) m = a;
        }
        m = block_max(m, sh);
        T s = 0;
        for (int64_t j = threadIdx.x; j < v.n; j += blockDim.x) {
            T e = exp(x[base + j * v.post] - m);
            if (!LOG) o[base + j * v.post] = e;
            s += e;
        }
        s = block_sum(s, sh);
        if (LOG) {
            const T ls = m + log(s);
            for (int64_t j = threadIdx.x; j < v.n; j += blockDim.x) o[base + j * v.post] = x[base + j * v.post] - ls;
        } else {
            const T inv = T(1) / s;
            for (int64_t j = threadIdx.x; j < v.n; j += blockDim.x) o[base + j * v.post] *= inv;
        }
    }
}

template <class T, bool LOG>
__global__ void softmax_grad_k(const T *o, const T *g, T *d, View v)
{
    __shared__ T sh[32];
    const int64_t rows = v.pre * v.post;
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const int64_t base = (r / v.post) * v.n * v.post + r % v.post;
        T s = 0;
        for (int64_t j = threadIdx.x; j < v.n; j += blockDim.x) {
            const int64_t q = base + j * v.post;
            s += LOG ? g[q] : g[q] * o[q];
        }
        s = block_sum(s, sh);
        for (int64_t j = threadIdx.x; j < v.n; j += blockDim.x) {
            const int64_t q = base + j * v.post;
            d[q] = LOG ? g[q] - exp(o[q]) * s : o[q] * (g[q] - s);
        }
    }
}

template <class T, bool LOG>
int sm_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt;
    const void *x;
    OAR_TRY(in_tensor(k, "X", 0, dt, -1, &xt, &x));
    View v;
    OAR_TRY(view_of(k, xt, &v));
    const int64_t total = v.pre * v.n * v.post;
    void *o;
    OAR_TRY(out_data(k, "Out", dt, total, &o));
    if (total == 0) return OAR_OK;
    softmax_k<T, LOG><<<rows_grid(v.pre * v.post), threads_for(v.n)>>>((const T *)x, (T *)o, v);
    OAR_CU_LAUNCH(k, "softmax");
    return OAR_OK;
}

template <class T, bool LOG>
int sm_bwd(oar_kernel_ctx_t *k, int dt)
{
    if (!oar_k_out(k, "X@GRAD", 0)) return OAR_OK;
    const oar_tensor_t *ot, *gt;
    const void *o, *g;
    OAR_TRY(in_tensor(k, "Out", 0, dt, -1, &ot, &o));
    OAR_TRY(in_tensor(k, "Out@GRAD", 0, dt, oar_tensor_numel_of(ot), &gt, &g));
    View v;
    OAR_TRY(view_of(k, ot, &v));
    const int64_t total = v.pre * v.n * v.post;
    void *d;
    OAR_TRY(out_data(k, "X@GRAD", dt, total, &d));
    if (total == 0) return OAR_OK;
    softmax_grad_k<T, LOG><<<rows_grid(v.pre * v.post), threads_for(v.n)>>>((const T *)o, (const T *)g, (T *)d, v);
    OAR_CU_LAUNCH(k, "softmax grad");
    return OAR_OK;
}

int softmax_f32(oar_kernel_ctx_t *k) { return sm_fwd<float, false>(k, OAR_FP32); }
int softmax_f64(oar_kernel_ctx_t *k) { return sm_fwd<double, false>(k, OAR_FP64); }
int softmax_grad_f32(oar_kernel_ctx_t *k) { return sm_bwd<float, false>(k, OAR_FP32); }
int softmax_grad_f64(oar_kernel_ctx_t *k) { return sm_bwd<double, false>(k, OAR_FP64); }
int log_softmax_f32(oar_kernel_ctx_t *k) { return sm_fwd<float, true>(k, OAR_FP32); }
int log_softmax_f64(oar_kernel_ctx_t *k) { return sm_fwd<double, true>(k, OAR_FP64); }
int log_softmax_grad_f32(oar_kernel_ctx_t *k) { return sm_bwd<float, true>(k, OAR_FP32); }
int log_softmax_grad_f64(oar_kernel_ctx_t *k) { return sm_bwd<double, true>(k, OAR_FP64); }

OAR_REGISTER_KERNEL("softmax", OAR_PLACE_CUDA, OAR_FP32, softmax_f32)
OAR_REGISTER_KERNEL("softmax", OAR_PLACE_CUDA, OAR_FP64, softmax_f64)
OAR_REGISTER_KERNEL("softmax_grad", OAR_PLACE_CUDA, OAR_FP32, softmax_grad_f32)
OAR_REGISTER_KERNEL("softmax_grad", OAR_PLACE_CUDA, OAR_FP64, softmax_grad_f64)
OAR_REGISTER_KERNEL("log_softmax", OAR_PLACE_CUDA, OAR_FP32, log_softmax_f32)
OAR_REGISTER_KERNEL("log_softmax", OAR_PLACE_CUDA, OAR_FP64, log_softmax_f64)
OAR_REGISTER_KERNEL("log_softmax_grad", OAR_PLACE_CUDA, OAR_FP32, log_softmax_grad_f32)
OAR_REGISTER_KERNEL("log_softmax_grad", OAR_PLACE_CUDA, OAR_FP64, log_softmax_grad_f64)

}  // namespace
