/*
 * cuda_common.h — what every CUDA kernel file shares: the C runtime headers
 * (wrapped for C++), status checks that turn CUDA/cuBLAS/cuDNN failures
 * into oar errors naming the call (oar_k_error adds the op, the executor its
 * context), launch geometry, typed access to device tensors, scratch device
 * memory, block reductions, the counter-based random generator and a
 * row-major GEMM.
 *
 * Kernels run on the device's default stream, in the order they are
 * launched; scratch blocks freed right after a launch may be handed out
 * again because everything that uses them is queued on that same stream.
 */
#ifndef OAR_CUDA_COMMON_H
#define OAR_CUDA_COMMON_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <cudnn.h>
extern "C" {
#include "op.h"
#include "device.h"
}

namespace oarcu {

/* ---- status ------------------------------------------------------------ */
/* An oar error for a failed CUDA runtime call; `call` names it. */
int cuda_fail(oar_kernel_ctx_t *k, cudaError_t e, const char *call);
int cublas_fail(oar_kernel_ctx_t *k, cublasStatus_t s, const char *call);
int cudnn_fail(oar_kernel_ctx_t *k, cudnnStatus_t s, const char *call);

#define OAR_CU(k, call, name) do { cudaError_t e_ = (call); \
    if (e_ != cudaSuccess) return oarcu::cuda_fail((k), e_, (name)); } while (0)
/* after a <<<...>>> launch: launch errors (bad geometry, no device) */
#define OAR_CU_LAUNCH(k, name) do { cudaError_t e_ = cudaGetLastError(); \
    if (e_ != cudaSuccess) return oarcu::cuda_fail((k), e_, "launch of kernel " name); } while (0)
/* A library call that could not allocate is retried once after the device's
 * cached free blocks went back to the driver (cuBLAS and cuDNN allocate
 * behind oar's caching allocator, so they run out first). */
#define OAR_CUBLAS(k, call, name) do { cublasStatus_t s_ = (call); \
    if (s_ == CUBLAS_STATUS_ALLOC_FAILED) { oarcu::release_cache(oar_k_device(k)); s_ = (call); } \
    if (s_ != CUBLAS_STATUS_SUCCESS) return oarcu::cublas_fail((k), s_, (name)); } while (0)
#define OAR_CUDNN(k, call, name) do { cudnnStatus_t s_ = (call); \
    if (s_ == CUDNN_STATUS_ALLOC_FAILED) { oarcu::release_cache(oar_k_device(k)); s_ = (call); } \
    if (s_ != CUDNN_STATUS_SUCCESS) return oarcu::cudnn_fail((k), s_, (name)); } while (0)
/* gives the device's cached free blocks back to the driver */
void release_cache(int device);

/* one cuBLAS / cuDNN handle per device, made on first use, on the default
 * stream; cuBLAS gets its workspace from oar's allocator (kBlasWorkspace) */
constexpr size_t kBlasWorkspace = (size_t)32 << 20;
int blas_handle(oar_kernel_ctx_t *k, cublasHandle_t *h);
int dnn_handle(oar_kernel_ctx_t *k, cudnnHandle_t *h);

/* ---- launch geometry ----------------------------------------------------- */
constexpr int kThreads = 256;
/* blocks for n elements handled by grid-stride loops (capped: each thread loops) */
static inline unsigned grid_for(int64_t n, int threads = kThreads)
{
    int64_t b = (n + threads - 1) / threads;
    if (b < 1) b = 1;
    if (b > 65536) b = 65536;
    return (unsigned)b;
}
#define OAR_CU_LOOP(i, n) \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

/* ---- tensors ----------------------------------------------------------- */
static inline const char *nm(const char *s) { return s ? s : "?"; }

/* Input `slot`[i] (the definition's slot enums, src/ops/<family>.h) with
 * dtype `dtype` (-1: any) and `numel` elements (-1: any), on the kernel's
 * device, *p its data (NULL when empty); outputs sized by inference, numel
 * >= 0 checks the size; the _opt form gives NULL and OAR_OK for an absent
 * output. Messages name the slot as the definition does. (args.cu) */
const char *in_slot_name(const oar_kernel_ctx_t *k, int slot);
const char *out_slot_name(const oar_kernel_ctx_t *k, int slot);
int in_tensor_at(oar_kernel_ctx_t *k, int slot, int i, int dtype, int64_t numel,
                 const oar_tensor_t **t, const void **p);
/* output `slot`[i] */
int out_data_at(oar_kernel_ctx_t *k, int slot, int i, int dtype, int64_t numel, void **p);
int out_data_opt_at(oar_kernel_ctx_t *k, int slot, int i, int dtype, int64_t numel, void **p);
/* input `slot`[0] (`name` in messages) of dtype (-1: any); absent: *t NULL
 * and OAR_OK when `optional`, else an error. With `need_data` a non-empty
 * tensor must hold data on the kernel's device; *p is that data (NULL when
 * empty or not needed). */
int in_checked(oar_kernel_ctx_t *k, int slot, const char *name, int dtype, bool optional, bool need_data,
               const oar_tensor_t **t, const void **p);
/* outputs: oar_k_output_sized (op.h), which the CPU kernels call too */

/* ---- scratch device memory ---------------------------------------------- */
struct Scratch {
    int device = 0;
    void *p = nullptr;
    Scratch() = default;
    Scratch(const Scratch &) = delete;
    Scratch &operator=(const Scratch &) = delete;
    ~Scratch() { if (p) oar_device_free(device, p); }
    /* bytes (0 allowed) on the kernel's device; error names what it is for */
    int alloc(oar_kernel_ctx_t *k, size_t bytes, const char *what);
    template <class T> T *as() const { return static_cast<T *>(p); }
};

/* Host <-> device copies on the kernel's device (synchronous for the host). */
int to_host(oar_kernel_ctx_t *k, void *dst, const void *src, size_t bytes, const char *what);
int to_device(oar_kernel_ctx_t *k, void *dst, const void *src, size_t bytes, const char *what);

/* A device "first bad position" flag for range checks done inside kernels:
 * kernels call flag_bad(f, i) and skip the bad element. The flag is one slot
 * of the device's run-wide array: report() records what the check means,
 * and the executor's run_end reads every slot of the run at once (one
 * device-to-host read per run instead of one sync per check), failing the
 * run with the first flagged check's message. With the flag
 * cuda_sync_each_op, or once a run used all slots, report() reads its own
 * flag at once instead. */
struct BadFlag {
    Scratch s;                        /* own flag when the run's slots are used up */
    unsigned long long *p = nullptr;
    int slot = -1;
    int init(oar_kernel_ctx_t *k);
    unsigned long long *ptr() const { return p; }
    /* the check's meaning, e.g. "Ids 'x' holds an id outside [0, 10)"; the
     * error adds "(first at position N)" */
    int report(oar_kernel_ctx_t *k, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
};
/* the end of a run on `device`: the first flagged check's error, and every
 * slot reset (the caller synchronized the device) */
int run_checks_end(int device);
__device__ inline void flag_bad(unsigned long long *f, int64_t i) { atomicMin(f, (unsigned long long)i); }

/* ---- reductions ------------------------------------------------------------ */
template <class T> __device__ inline T warp_sum(T v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}
template <class T> __device__ inline T warp_max(T v)
{
    for (int o = 16; o > 0; o >>= 1) { T w = __shfl_down_sync(0xffffffffu, v, o); v = w > v ? w : v; }
    return v;
}
/* Sum over the block (blockDim.x a multiple of 32, at most 1024); every
 * thread gets the result. `sh` holds 32 values. */
template <class T> __device__ inline T block_sum(T v, T *sh)
{
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    v = warp_sum(v);
    __syncthreads();   /* sh may still be read by an earlier call */
    if (lane == 0) sh[w] = v;
    __syncthreads();
    const int nw = (blockDim.x + 31) >> 5;
    T r = lane < nw ? sh[lane] : T(0);
    if (w == 0) r = warp_sum(r);
    if (threadIdx.x == 0) sh[0] = r;
    __syncthreads();
    return sh[0];
}
/* Max over the block; NaN wins (a NaN in the data makes the result NaN). */
template <class T> __device__ inline T block_max(T v, T *sh)
{
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    for (int o = 16; o > 0; o >>= 1) {
        T u = __shfl_down_sync(0xffffffffu, v, o);
        if (u > v || u != u) v = u;
    }
    __syncthreads();
    if (lane == 0) sh[w] = v;
    __syncthreads();
    const int nw = (blockDim.x + 31) >> 5;
    if (w == 0) {
        T r = lane < nw ? sh[lane] : sh[0];
        for (int o = 16; o > 0; o >>= 1) {
            T u = __shfl_down_sync(0xffffffffu, r, o);
            if (u > r || u != u) r = u;
        }
        if (lane == 0) sh[0] = r;
    }
    __syncthreads();
    return sh[0];
}

/* ---- random numbers ---------------------------------------------------------
 * Counter-based: element i of a draw with key `key` is a hash of (key, i),
 * so every thread draws independently and a seed fixes the values. The key
 * comes from oar's generator (oar_rng_next, or an op-local one for a seed
 * attr), one 64-bit draw per op call. */
__host__ __device__ inline uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
__device__ inline uint64_t ctr_bits(uint64_t key, uint64_t ctr) { return mix64(key ^ mix64(ctr)); }
/* uniform in [0, 1) with 53 random bits */
__device__ inline double ctr_uniform(uint64_t key, uint64_t ctr)
{
    return (double)(ctr_bits(key, ctr) >> 11) * (1.0 / 9007199254740992.0);
}

/* ---- row-major GEMM ------------------------------------------------------------
 * For kernels that multiply float32/float64 matrices without matmul.cu's
 * batching and float16 (the recurrent and sequence kernels). */
/* every value fits cuBLAS's int */
static inline int check_int_dims(oar_kernel_ctx_t *k, int n, const int64_t *dims)
{
    for (int i = 0; i < n; i++)
        if (dims[i] < 0 || dims[i] > 2147483647)
            return oar_k_error(k, OAR_ERR_RANGE, "size %lld exceeds the cuBLAS int range", (long long)dims[i]);
    return OAR_OK;
}
/* row-major C (M x N, ld ldc) = alpha op(A) op(B) + beta C, dt float32 or
 * float64. cuBLAS is column-major: it computes C^T = op(B)^T op(A)^T
 * (operands and M/N swap; transpose flags and leading dimensions stay).
 * K == 0 is an empty sum: C = beta C, for beta 0 or 1 (what callers use). */
static inline int rm_gemm(oar_kernel_ctx_t *k, int dt, bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha,
                          const void *A, int64_t lda, const void *B, int64_t ldb, double beta, void *C, int64_t ldc)
{
    if (M == 0 || N == 0) return OAR_OK;
    const size_t es = oar_dtype_size(dt);
    if (K == 0) {
        if (beta != 0.0) return OAR_OK;
        OAR_CU(k, cudaMemset2DAsync(C, (size_t)ldc * es, 0, (size_t)N * es, (size_t)M, 0), "cudaMemset2DAsync");
        return OAR_OK;
    }
    const int64_t dims[6] = {M, N, K, lda, ldb, ldc};
    OAR_TRY(check_int_dims(k, 6, dims));
    cublasHandle_t h;
    OAR_TRY(blas_handle(k, &h));
    const cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (dt == OAR_FP32) {
        const float a = (float)alpha, b = (float)beta;
        OAR_CUBLAS(k, cublasSgemm(h, opb, opa, (int)N, (int)M, (int)K, &a, (const float *)B, (int)ldb, (const float *)A,
                                  (int)lda, &b, (float *)C, (int)ldc), "cublasSgemm");
    } else {
        const double a = alpha, b = beta;
        OAR_CUBLAS(k, cublasDgemm(h, opb, opa, (int)N, (int)M, (int)K, &a, (const double *)B, (int)ldb,
                                  (const double *)A, (int)lda, &b, (double *)C, (int)ldc), "cublasDgemm");
    }
    return OAR_OK;
}

/* ---- dtype dispatch ---------------------------------------------------------- */
#define OAR_CU_FLOAT_SWITCH(dt, T, ...)                 \
    switch (dt) {                                        \
    case OAR_FP32: { typedef float T; __VA_ARGS__; break; }  \
    case OAR_FP64: { typedef double T; __VA_ARGS__; break; } \
    default: break;                                      \
    }

}  // namespace oarcu
#endif
