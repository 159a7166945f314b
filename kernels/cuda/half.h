/*
 * half.h — float16 on CUDA: tensors of dtype float16 hold IEEE binary16
 * values (cuda_fp16.h's __half), and every kernel computes in float.
 * Kernels are written once over the storage type T with acc_t<T> as the
 * compute type (float for __half, T itself otherwise); cvt<To>(v) converts
 * between them (round to nearest even into __half).
 */
#ifndef OAR_CUDA_HALF_H
#define OAR_CUDA_HALF_H
#include <cuda_fp16.h>
#include "cuda_common.h"

namespace oarcu {

template <class T> struct Acc { typedef T type; };
template <> struct Acc<__half> { typedef float type; };
template <class T> using acc_t = typename Acc<T>::type;

template <class To, class From> __host__ __device__ inline To cvt(From v) { return (To)v; }
template <> __host__ __device__ inline float cvt<float, __half>(__half v) { return __half2float(v); }
template <> __host__ __device__ inline double cvt<double, __half>(__half v) { return (double)__half2float(v); }
template <> __host__ __device__ inline __half cvt<__half, float>(float v) { return __float2half_rn(v); }
template <> __host__ __device__ inline __half cvt<__half, double>(double v) { return __double2half(v); }
template <> __host__ __device__ inline __half cvt<__half, __half>(__half v) { return v; }

/* the cuBLAS / cuDNN data type of a storage type */
template <class T> struct CuType;
template <> struct CuType<float> { static constexpr cudaDataType_t blas = CUDA_R_32F; };
template <> struct CuType<double> { static constexpr cudaDataType_t blas = CUDA_R_64F; };
template <> struct CuType<__half> { static constexpr cudaDataType_t blas = CUDA_R_16F; };

/* casts n elements of dtype src_dt (float, integer or bool) to float16 on
 * the kernel's device (half_ops.cu; tensor_ops.cu's cast calls it) */
int cast_to_half(oar_kernel_ctx_t *k, int src_dt, const void *src, void *dst, int64_t n);
/* cast's argument checks (out_dtype, in place only at equal element size)
 * and its output, for an X of dtype dt (tensor_ops.cu; half_ops.cu's
 * float16 cast uses it too) */
int cast_begin(oar_kernel_ctx_t *k, int dt, const void **xv, void **dst, int64_t *n, int *out_dt);

}  // namespace oarcu
#endif
