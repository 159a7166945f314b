/*
 * index_ops.cu — CUDA kernels of one_hot, arg_max and arg_min with the CPU
 * kernels' semantics (kernels/cpu/index_ops.c): one_hot writes a zero row
 * for an out-of-range value when allow_out_of_range is set and otherwise
 * flags it (a run-wide range check, read at the run's end); arg_max/arg_min
 * pick the first NaN, else the first extreme, along the axis (or over the
 * flattened tensor), one thread per output.
 */
#include "cuda_common.h"
#include "ops/index_ops.h"

using namespace oarcu;

namespace {

/* ---- one_hot ---------------------------------------------------------------- */
template <class I, class O>
__global__ void one_hot_k(const I *x, O *o, int64_t n, int64_t depth, bool allow, unsigned long long *bad)
{
    OAR_CU_LOOP(q, n * depth) {
        const int64_t i = q / depth, j = q % depth, v = (int64_t)x[i];
        if ((v < 0 || v >= depth) && !allow && j == 0) flag_bad(bad, i);
        o[q] = v == j ? O(1) : O(0);
    }
}

template <class I>
int one_hot_launch(oar_kernel_ctx_t *k, const I *x, void *o, int dt, int64_t n, int64_t depth, bool allow,
                   unsigned long long *bad)
{
    const unsigned g = grid_for(n * depth);
    switch (dt) {
    case OAR_FP32: one_hot_k<I, float><<<g, kThreads>>>(x, (float *)o, n, depth, allow, bad); break;
    case OAR_FP64: one_hot_k<I, double><<<g, kThreads>>>(x, (double *)o, n, depth, allow, bad); break;
    case OAR_INT32: one_hot_k<I, int32_t><<<g, kThreads>>>(x, (int32_t *)o, n, depth, allow, bad); break;
    default: one_hot_k<I, int64_t><<<g, kThreads>>>(x, (int64_t *)o, n, depth, allow, bad); break;
    }
    OAR_CU_LAUNCH(k, "one_hot");
    return OAR_OK;
}

int one_hot_run(oar_kernel_ctx_t *k)
{
    const oar_tensor_t *x;
    const void *xd;
    OAR_TRY(in_tensor_at(k, OAR_IDX_X, 0, -1, -1, &x, &xd));
    if (x->dtype != OAR_INT32 && x->dtype != OAR_INT64)
        return oar_k_error(k, OAR_ERR_DTYPE, "input X '%s' has dtype %s, expected int32 or int64",
                           nm(oar_k_input_name(k, OAR_IDX_X, 0)), nm(oar_dtype_name(x->dtype)));
    oar_tensor_t *out = oar_k_output(k, OAR_IDX_OUT, 0);
    if (!out || out->ndim < 1) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Out has no tensor variable");
    const oar_one_hot_attrs_t *a = (const oar_one_hot_attrs_t *)oar_k_attrs(k);
    const int dt = a->dtype;
    const bool allow = a->allow_out_of_range;
    const int64_t n = oar_tensor_numel_of(x), depth = out->dims[out->ndim - 1];
    void *o = oar_k_output_data(k, OAR_IDX_OUT, 0, dt);
    if (!o) return OAR_ERR_NOMEM;
    if (n * depth == 0) return OAR_OK;
    BadFlag bad;
    OAR_TRY(bad.init(k));
    if (x->dtype == OAR_INT64) OAR_TRY(one_hot_launch<int64_t>(k, (const int64_t *)xd, o, dt, n, depth, allow, bad.ptr()));
    else OAR_TRY(one_hot_launch<int32_t>(k, (const int32_t *)xd, o, dt, n, depth, allow, bad.ptr()));
    return bad.report(k, "X '%s' holds a value outside [0, %lld) (depth); set allow_out_of_range to get a zero row "
                      "(row)", nm(oar_k_input_name(k, OAR_IDX_X, 0)), (long long)depth);
}
int one_hot_i32(oar_kernel_ctx_t *k) { return one_hot_run(k); }
int one_hot_i64(oar_kernel_ctx_t *k) { return one_hot_run(k); }
OAR_REGISTER_KERNEL("one_hot", OAR_PLACE_CUDA, OAR_INT32, one_hot_i32)
OAR_REGISTER_KERNEL("one_hot", OAR_PLACE_CUDA, OAR_INT64, one_hot_i64)

/* ---- arg_max / arg_min: X as [pre, n, post] ------------------------------------ */
template <class T, class O>
__global__ void arg_k(const T *x, O *out, int64_t pre, int64_t n, int64_t post, bool is_max)
{
    OAR_CU_LOOP(m, pre * post) {
        const int64_t p = m / post, q = m % post;
        const T *v = x + p * n * post + q;
        int64_t best = 0;
        for (int64_t j = 1; j < n && v[best * post] == v[best * post]; j++) {
            const T a = v[j * post], b = v[best * post];
            if (a != a || (is_max ? a > b : a < b)) best = j;
        }
        out[m] = (O)best;
    }
}

template <class T>
int arg_launch(oar_kernel_ctx_t *k, const void *xd, void *o, bool o64, int64_t pre, int64_t n, int64_t post,
               bool is_max)
{
    const unsigned g = grid_for(pre * post);
    if (o64) arg_k<T, int64_t><<<g, kThreads>>>((const T *)xd, (int64_t *)o, pre, n, post, is_max);
    else arg_k<T, int32_t><<<g, kThreads>>>((const T *)xd, (int32_t *)o, pre, n, post, is_max);
    OAR_CU_LAUNCH(k, "arg_max/arg_min");
    return OAR_OK;
}

int arg_run(oar_kernel_ctx_t *k, bool is_max)
{
    const oar_tensor_t *x;
    const void *xd;
    OAR_TRY(in_tensor_at(k, OAR_IDX_X, 0, -1, -1, &x, &xd));
    const oar_arg_attrs_t *a = (const oar_arg_attrs_t *)oar_k_attrs(k);
    const int nd = x->ndim;
    int64_t axis = a->axis;
    if (axis < 0) axis += nd;
    int64_t pre = 1, n = oar_tensor_numel_of(x), post = 1;
    if (!a->flatten) {
        if (axis < 0 || axis >= nd) return oar_k_error(k, OAR_ERR_RANGE, "attr axis is out of range");
        n = x->dims[axis];
        for (int i = 0; i < axis; i++) pre *= x->dims[i];
        for (int i = (int)axis + 1; i < nd; i++) post *= x->dims[i];
    }
    if (n == 0)
        return oar_k_error(k, OAR_ERR_SHAPE, "input X '%s' is empty along the reduced axis",
                           nm(oar_k_input_name(k, OAR_IDX_X, 0)));
    oar_tensor_t *out = oar_k_output(k, OAR_IDX_OUT, 0);
    if (!out) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Out has no tensor variable");
    if (out == x) return oar_k_error(k, OAR_ERR_INVALID, "Out is X itself; arg_max/arg_min cannot run in place");
    const bool o64 = a->dtype == OAR_INT64;
    void *o = oar_k_output_data(k, OAR_IDX_OUT, 0, o64 ? OAR_INT64 : OAR_INT32);
    if (!o) return OAR_ERR_NOMEM;
    if (pre * post == 0) return OAR_OK;
    switch (x->dtype) {
    case OAR_FP32: return arg_launch<float>(k, xd, o, o64, pre, n, post, is_max);
    case OAR_FP64: return arg_launch<double>(k, xd, o, o64, pre, n, post, is_max);
    case OAR_INT64: return arg_launch<int64_t>(k, xd, o, o64, pre, n, post, is_max);
    case OAR_INT32: return arg_launch<int32_t>(k, xd, o, o64, pre, n, post, is_max);
    case OAR_INT16: return arg_launch<int16_t>(k, xd, o, o64, pre, n, post, is_max);
    case OAR_INT8: return arg_launch<int8_t>(k, xd, o, o64, pre, n, post, is_max);
    case OAR_UINT8: return arg_launch<uint8_t>(k, xd, o, o64, pre, n, post, is_max);
    default:
        return oar_k_error(k, OAR_ERR_UNSUPPORTED, "no CUDA kernel for dtype %s", nm(oar_dtype_name(x->dtype)));
    }
}

#define ARG_REG(OP, IS_MAX, sfx, DT)                                          \
    int OP##_##sfx(oar_kernel_ctx_t *k) { return arg_run(k, IS_MAX); }       \
    OAR_REGISTER_KERNEL(#OP, OAR_PLACE_CUDA, DT, OP##_##sfx)
#define ARG_ALL(OP, IS_MAX)                                                   \
    ARG_REG(OP, IS_MAX, f32, OAR_FP32) ARG_REG(OP, IS_MAX, f64, OAR_FP64)     \
    ARG_REG(OP, IS_MAX, i64, OAR_INT64) ARG_REG(OP, IS_MAX, i32, OAR_INT32)   \
    ARG_REG(OP, IS_MAX, i16, OAR_INT16) ARG_REG(OP, IS_MAX, i8, OAR_INT8)     \
    ARG_REG(OP, IS_MAX, u8, OAR_UINT8)
ARG_ALL(arg_max, true)
ARG_ALL(arg_min, false)

}  // namespace
