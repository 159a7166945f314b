/* tools/cuda_emu/prelude_fp16.h — appended by run after prelude.h and
 * cuda_common.h's shared sections: float16 (__half from cuda_fp16.h here,
 * as its bits, converted by src/ops/half_bits.h), atomicAdd on
 * __half (prelude.h's lock),
 * cuBLAS's GemmEx and strided-batched GEMMs (reference loops; half operands
 * with float accumulation) and cuda_fail. It closes
 * prelude.h's namespace oarcu for the global CUDA names and reopens it. */
}  // namespace oarcu (reopened below)
#include <cuda_fp16.h>
/* atomicAdd on __half (prelude.h's lock) */
static inline __half atomicAdd(__half *p, __half v)
{
    std::lock_guard<std::mutex> g(emu_atomic_lock());
    __half o = *p;
    *p = __float2half_rn(__half2float(o) + __half2float(v));
    return o;
}
typedef enum { CUDA_R_16F = 2, CUDA_R_32F = 0, CUDA_R_64F = 1 } cudaDataType_t;
typedef enum { CUBLAS_COMPUTE_32F = 68 } cublasComputeType_t;
typedef enum { CUBLAS_GEMM_DEFAULT = -1 } cublasGemmAlgo_t;
/* half GEMM: half operands, float accumulation (as CUBLAS_COMPUTE_32F) */
static inline cublasStatus_t cublasGemmEx(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
    const void *alpha, const void *A, cudaDataType_t at, int lda, const void *B, cudaDataType_t bt, int ldb,
    const void *beta, void *C, cudaDataType_t ct, int ldc, cublasComputeType_t, cublasGemmAlgo_t)
{
    if (at != CUDA_R_16F || bt != CUDA_R_16F || ct != CUDA_R_16F) return (cublasStatus_t)7;
    if (lda < 1 || ldb < 1 || ldc < 1 || m < 0 || n < 0 || k < 0) return (cublasStatus_t)7;
    if (lda < (ta == CUBLAS_OP_N ? m : k) || ldb < (tb == CUBLAS_OP_N ? k : n) || ldc < m) return (cublasStatus_t)7;
    const __half *a = (const __half *)A, *b = (const __half *)B;
    __half *c = (__half *)C;
    const float al = *(const float *)alpha, be = *(const float *)beta;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float s = 0;
            for (int l = 0; l < k; l++) {
                float x = __half2float(ta == CUBLAS_OP_N ? a[i + (size_t)l * lda] : a[l + (size_t)i * lda]);
                float y = __half2float(tb == CUBLAS_OP_N ? b[l + (size_t)j * ldb] : b[j + (size_t)l * ldb]);
                s += x * y;
            }
            __half &cc = c[i + (size_t)j * ldc];
            cc = __float2half_rn(al * s + (be == 0 ? 0.0f : be * __half2float(cc)));
        }
    return CUBLAS_STATUS_SUCCESS;
}
static inline cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
    int m, int n, int k, const void *alpha, const void *A, cudaDataType_t at, int lda, long long sa, const void *B,
    cudaDataType_t bt, int ldb, long long sb, const void *beta, void *C, cudaDataType_t ct, int ldc, long long sc,
    int count, cublasComputeType_t cmp, cublasGemmAlgo_t al)
{
    for (int i = 0; i < count; i++) {
        cublasStatus_t s = cublasGemmEx(h, ta, tb, m, n, k, alpha, (const __half *)A + i * sa, at, lda,
                                        (const __half *)B + i * sb, bt, ldb, beta, (__half *)C + i * sc, ct, ldc, cmp, al);
        if (s != CUBLAS_STATUS_SUCCESS) return s;
    }
    return CUBLAS_STATUS_SUCCESS;
}
template <class T>
static inline cublasStatus_t emu_batched(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const T *al,
    const T *A, int lda, long long sa, const T *B, int ldb, long long sb, const T *be, T *C, int ldc, long long sc, int count)
{
    for (int i = 0; i < count; i++) {
        cublasStatus_t s = emu_gemm(ta, tb, m, n, k, al, A + i * sa, lda, B + i * sb, ldb, be, C + i * sc, ldc);
        if (s != CUBLAS_STATUS_SUCCESS) return s;
    }
    return CUBLAS_STATUS_SUCCESS;
}
static inline cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m,
    int n, int k, const float *al, const float *A, int lda, long long sa, const float *B, int ldb, long long sb,
    const float *be, float *C, int ldc, long long sc, int count)
{ return emu_batched(ta, tb, m, n, k, al, A, lda, sa, B, ldb, sb, be, C, ldc, sc, count); }
static inline cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m,
    int n, int k, const double *al, const double *A, int lda, long long sa, const double *B, int ldb, long long sb,
    const double *be, double *C, int ldc, long long sc, int count)
{ return emu_batched(ta, tb, m, n, k, al, A, lda, sa, B, ldb, sb, be, C, ldc, sc, count); }
namespace oarcu {
inline int cuda_fail(oar_kernel_ctx_t *k, cudaError_t e, const char *call)
{
    return oar_k_error(k, OAR_ERR_DEVICE, "%s failed on emulated CUDA device %d: %s", call, oar_k_device(k), cudaGetErrorString(e));
}
