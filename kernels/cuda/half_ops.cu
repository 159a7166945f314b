/*
 * half_ops.cu — the float16 kernels of ops whose other kernels live in
 * tensor_ops.cu: cast from float16 (to every dtype cast knows), the cast
 * into float16 that tensor_ops.cu's cast calls for out_dtype float16, and
 * sum of dense float16 tensors (gradient accumulation in mixed-precision
 * programs). Values convert through float: float16 to an integer saturates
 * (NaN -> 0) as the other casts do; float32/float64 to float16 round to
 * nearest even, overflowing to infinity.
 */
#include "cuda_common.h"
#include "half.h"
#include "ops/tensor_ops.h"

namespace oarcu {

namespace {

template <class TO>
__global__ void from_half_k(const __half *s, TO *d, int64_t n, float lo, float hi, bool saturate)
{
    OAR_CU_LOOP(i, n) {
        const float v = __half2float(s[i]);
        d[i] = saturate ? (TO)(v != v ? 0.0f : v < lo ? lo : v > hi ? hi : v) : (TO)v;
    }
}

__global__ void half_to_bool_k(const __half *s, bool *d, int64_t n)
{
    OAR_CU_LOOP(i, n) d[i] = __half2float(s[i]) != 0.0f;
}

__global__ void half_copy_k(const __half *s, __half *d, int64_t n)
{
    OAR_CU_LOOP(i, n) d[i] = s[i];
}

template <class TI>
__global__ void to_half_k(const TI *s, __half *d, int64_t n)
{
    OAR_CU_LOOP(i, n) d[i] = cvt<__half>((double)s[i]);
}
template <>
__global__ void to_half_k<float>(const float *s, __half *d, int64_t n)
{
    OAR_CU_LOOP(i, n) d[i] = __float2half_rn(s[i]);
}

template <class TO>
int from_half(oar_kernel_ctx_t *k, const void *s, void *d, int64_t n, float lo, float hi, bool saturate)
{
    from_half_k<TO><<<grid_for(n), kThreads>>>((const __half *)s, (TO *)d, n, lo, hi, saturate);
    OAR_CU_LAUNCH(k, "cast from float16");
    return OAR_OK;
}

/* cast with a float16 X */
int cast_f16(oar_kernel_ctx_t *k)
{
    const void *xv;
    void *dst;
    int64_t n;
    int out_dt;
    OAR_TRY(cast_begin(k, OAR_FP16, &xv, &dst, &n, &out_dt));
    if (n == 0) return OAR_OK;
    switch (out_dt) {
    case OAR_BOOL:
        half_to_bool_k<<<grid_for(n), kThreads>>>((const __half *)xv, (bool *)dst, n);
        OAR_CU_LAUNCH(k, "cast from float16");
        return OAR_OK;
    case OAR_INT8: return from_half<int8_t>(k, xv, dst, n, -128.0f, 127.0f, true);
    case OAR_UINT8: return from_half<uint8_t>(k, xv, dst, n, 0.0f, 255.0f, true);
    case OAR_INT16: return from_half<int16_t>(k, xv, dst, n, -32768.0f, 32767.0f, true);
    /* every finite half fits int32 and int64; only infinities saturate */
    case OAR_INT32: return from_half<int32_t>(k, xv, dst, n, -2147483648.0f, 2147483520.0f, true);
    case OAR_INT64: return from_half<int64_t>(k, xv, dst, n, -9.2233720368547758e18f, 9.2233714e18f, true);
    case OAR_FP16:
        if (dst != xv) {
            half_copy_k<<<grid_for(n), kThreads>>>((const __half *)xv, (__half *)dst, n);
            OAR_CU_LAUNCH(k, "cast from float16");
        }
        return OAR_OK;
    case OAR_FP32: return from_half<float>(k, xv, dst, n, 0, 0, false);
    default: return from_half<double>(k, xv, dst, n, 0, 0, false);
    }
}
OAR_REGISTER_KERNEL("cast", OAR_PLACE_CUDA, OAR_FP16, cast_f16)

/* x += s over n elements (float accumulator) */
__global__ void acc_half_k(const __half *s, float *acc, int64_t n, bool first)
{
    OAR_CU_LOOP(i, n) acc[i] = (first ? 0.0f : acc[i]) + __half2float(s[i]);
}
__global__ void store_half_k(const float *acc, __half *d, int64_t n)
{
    OAR_CU_LOOP(i, n) d[i] = __float2half_rn(acc[i]);
}

/* sum of dense float16 tensors of one shape, added in float and rounded
 * once; the inputs are all read before Out is written, so Out may be one of
 * them */
int sum_f16(oar_kernel_ctx_t *k)
{
    const int m = oar_k_nin(k, OAR_TENSOR_X);
    if (m < 1) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input X is empty");
    int64_t n = -1;
    const oar_tensor_t *first = nullptr;
    Scratch acc;
    for (int j = 0; j < m; j++) {
        if (!oar_k_input(k, OAR_TENSOR_X, j))
            return oar_k_error(k, OAR_ERR_UNSUPPORTED, "input X[%d] '%s' is not a dense tensor; the float16 sum "
                               "adds dense tensors only", j, nm(oar_k_input_name(k, OAR_TENSOR_X, j)));
        const oar_tensor_t *t;
        const void *p;
        OAR_TRY(in_tensor_at(k, OAR_TENSOR_X, j, OAR_FP16, n, &t, &p));
        if (j == 0) {
            first = t;
            n = oar_tensor_numel_of(t);
            OAR_TRY(acc.alloc(k, sizeof(float) * (size_t)(n > 0 ? n : 1), "float16 sum accumulator"));
        }
        if (n == 0) continue;
        acc_half_k<<<grid_for(n), kThreads>>>((const __half *)p, acc.as<float>(), n, j == 0);
        OAR_CU_LAUNCH(k, "sum (float16)");
    }
    oar_tensor_t *out = oar_k_output(k, OAR_TENSOR_OUT, 0);
    if (out && out != first && first->lod_levels > 0) OAR_TRY(oar_tensor_copy_lod(out, first));
    void *d;
    OAR_TRY(out_data_at(k, OAR_TENSOR_OUT, 0, OAR_FP16, n, &d));
    if (n == 0) return OAR_OK;
    store_half_k<<<grid_for(n), kThreads>>>(acc.as<float>(), (__half *)d, n);
    OAR_CU_LAUNCH(k, "sum (float16)");
    return OAR_OK;
}
OAR_REGISTER_KERNEL("sum", OAR_PLACE_CUDA, OAR_FP16, sum_f16)

}  // namespace

int cast_to_half(oar_kernel_ctx_t *k, int src_dt, const void *src, void *dst, int64_t n)
{
    if (n == 0) return OAR_OK;
    switch (src_dt) {
    case OAR_FP32: to_half_k<float><<<grid_for(n), kThreads>>>((const float *)src, (__half *)dst, n); break;
    case OAR_FP64: to_half_k<double><<<grid_for(n), kThreads>>>((const double *)src, (__half *)dst, n); break;
    case OAR_BOOL: to_half_k<bool><<<grid_for(n), kThreads>>>((const bool *)src, (__half *)dst, n); break;
    case OAR_INT8: to_half_k<int8_t><<<grid_for(n), kThreads>>>((const int8_t *)src, (__half *)dst, n); break;
    case OAR_UINT8: to_half_k<uint8_t><<<grid_for(n), kThreads>>>((const uint8_t *)src, (__half *)dst, n); break;
    case OAR_INT16: to_half_k<int16_t><<<grid_for(n), kThreads>>>((const int16_t *)src, (__half *)dst, n); break;
    case OAR_INT32: to_half_k<int32_t><<<grid_for(n), kThreads>>>((const int32_t *)src, (__half *)dst, n); break;
    case OAR_INT64: to_half_k<int64_t><<<grid_for(n), kThreads>>>((const int64_t *)src, (__half *)dst, n); break;
    default:
        return oar_k_error(k, OAR_ERR_UNSUPPORTED, "no CUDA cast from %s to float16", nm(oar_dtype_name(src_dt)));
    }
    OAR_CU_LAUNCH(k, "cast to float16");
    return OAR_OK;
}

}  // namespace oarcu
