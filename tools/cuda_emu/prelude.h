/* tools/cuda_emu/prelude.h — a CPU emulation of the CUDA subset the kernels
 * use, in place of kernels/cuda/cuda_common.h (see tools/cuda_emu/run):
 * every block runs its threads as fibers with real barriers
 * (emu_runtime.cpp), so __syncthreads and warp shuffles behave; device
 * memory is host memory. */
#ifndef EMU_PRELUDE_H
#define EMU_PRELUDE_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <vector>
#include <memory>
#include <functional>
#include <mutex>
extern "C" {
#include "op.h"
#include "device.h"
}
#define __global__
#define __device__
#define __host__
#define __shared__ static
struct dim3 { unsigned x, y, z; dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {} };
extern thread_local dim3 threadIdx, blockIdx, blockDim, gridDim;
static inline int emu_tid() { return (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)); }
/* barriers of the block and of the calling thread's warp (emu_runtime.cpp) */
void __syncthreads();
void emu_warp_sync();
unsigned char *emu_xbuf(int tid);   /* thread tid's 8-byte exchange slot */
template <class T> T emu_shfl(T v, int src_lane_fn_kind, int o)
{
    static_assert(sizeof(T) <= 8, "shuffles move at most 8 bytes");
    const int tid = emu_tid(), lane = tid & 31, w = tid >> 5;
    memcpy(emu_xbuf(tid), &v, sizeof v);
    emu_warp_sync();
    int src = src_lane_fn_kind == 0 ? (lane ^ o) : lane + o;
    T u = v;
    if (src < 32) memcpy(&u, emu_xbuf((w << 5) | src), sizeof u);
    emu_warp_sync();
    return u;
}
template <class T> T __shfl_xor_sync(unsigned, T v, int o) { return emu_shfl(v, 0, o); }
template <class T> T __shfl_down_sync(unsigned, T v, int o) { return emu_shfl(v, 1, o); }
void emu_launch(dim3 g, dim3 b, const std::function<void()> &f);

/* atomics: one lock (threads of a block run concurrently); __half's is in
 * prelude_fp16.h */
inline std::mutex &emu_atomic_lock() { static std::mutex m; return m; }
/* CUDA's overloads (no templates: arguments convert as they do there) */
#define EMU_ATOMIC(T)                                                                                         \
    static inline T atomicAdd(T *p, T v) { std::lock_guard<std::mutex> g(emu_atomic_lock()); T o = *p; *p = o + v; return o; } \
    static inline T atomicMin(T *p, T v) { std::lock_guard<std::mutex> g(emu_atomic_lock()); T o = *p; if (v < o) *p = v; return o; }
EMU_ATOMIC(int)
EMU_ATOMIC(unsigned)
EMU_ATOMIC(unsigned long long)
#undef EMU_ATOMIC
static inline float atomicAdd(float *p, float v) { std::lock_guard<std::mutex> g(emu_atomic_lock()); float o = *p; *p = o + v; return o; }
static inline double atomicAdd(double *p, double v) { std::lock_guard<std::mutex> g(emu_atomic_lock()); double o = *p; *p = o + v; return o; }
/* cos(pi x) (CUDA's is more exact near the zeros; the kernels use it for
 * Box-Muller, where that does not show) */
static inline double cospi(double x) { return cos(M_PI * x); }
static inline float cospif(float x) { return (float)cos(M_PI * (double)x); }

typedef int cudaError_t;
enum { cudaSuccess = 0, cudaErrorInvalidConfiguration = 9 };
/* a launch's configuration error, as CUDA keeps it for cudaGetLastError */
extern thread_local cudaError_t emu_launch_error;
enum cudaMemcpyKind { cudaMemcpyHostToHost = 0, cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2,
                      cudaMemcpyDeviceToDevice = 3 };
static inline const char *cudaGetErrorString(cudaError_t e)
{ return e == cudaSuccess ? "no error" : e == cudaErrorInvalidConfiguration ? "invalid configuration argument" : "emulated error"; }
static inline cudaError_t cudaMemcpy(void *d, const void *s, size_t n, cudaMemcpyKind) { memmove(d, s, n); return cudaSuccess; }
static inline cudaError_t cudaMemcpy2DAsync(void *d, size_t dpitch, const void *s, size_t spitch, size_t w, size_t h,
                                            cudaMemcpyKind, int)
{
    if (w > dpitch || w > spitch) return 1;   /* cudaErrorInvalidValue */
    for (size_t r = 0; r < h; r++) memmove((char *)d + r * dpitch, (const char *)s + r * spitch, w);
    return cudaSuccess;
}
static inline cudaError_t cudaMemsetAsync(void *p, int v, size_t n, int) { memset(p, v, n); return cudaSuccess; }
static inline cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, cudaMemcpyKind, int) { memmove(d, s, n); return cudaSuccess; }
static inline cudaError_t cudaMemset2DAsync(void *p, size_t pitch, int v, size_t w, size_t h, int)
{
    for (size_t r = 0; r < h; r++) memset((char *)p + r * pitch, v, w);
    return cudaSuccess;
}
static inline cudaError_t cudaGetLastError() { cudaError_t e = emu_launch_error; emu_launch_error = cudaSuccess; return e; }
/* one device, no streams: the stream is always drained */
enum { cudaErrorNotReady = 600 };
static inline cudaError_t cudaStreamQuery(int) { return cudaSuccess; }
static inline cudaError_t cudaSetDevice(int) { return cudaSuccess; }
typedef void *cublasHandle_t;
typedef enum { CUBLAS_OP_N, CUBLAS_OP_T } cublasOperation_t;
typedef enum { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_ALLOC_FAILED = 3 } cublasStatus_t;
/* column-major reference GEMM: C = alpha op(A) op(B) + beta C */
template <class T>
cublasStatus_t emu_gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const T *alpha, const T *A,
                        int lda, const T *B, int ldb, const T *beta, T *C, int ldc)
{
    if (lda < 1 || ldb < 1 || ldc < 1 || m < 0 || n < 0 || k < 0) return (cublasStatus_t)7;
    if (lda < (ta == CUBLAS_OP_N ? m : k) || ldb < (tb == CUBLAS_OP_N ? k : n) || ldc < m) return (cublasStatus_t)7;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int l = 0; l < k; l++) {
                T a = ta == CUBLAS_OP_N ? A[i + (size_t)l * lda] : A[l + (size_t)i * lda];
                T bb = tb == CUBLAS_OP_N ? B[l + (size_t)j * ldb] : B[j + (size_t)l * ldb];
                s += (double)a * (double)bb;
            }
            T &c = C[i + (size_t)j * ldc];
            c = (T)(*alpha * (T)s + (*beta == 0 ? (T)0 : *beta * c));
        }
    return CUBLAS_STATUS_SUCCESS;
}
static inline cublasStatus_t cublasSgemm(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
    const float *al, const float *A, int lda, const float *B, int ldb, const float *be, float *C, int ldc)
{ return emu_gemm(ta, tb, m, n, k, al, A, lda, B, ldb, be, C, ldc); }
static inline cublasStatus_t cublasDgemm(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
    const double *al, const double *A, int lda, const double *B, int ldb, const double *be, double *C, int ldc)
{ return emu_gemm(ta, tb, m, n, k, al, A, lda, B, ldb, be, C, ldc); }

namespace oarcu {
static inline int emu_fail(oar_kernel_ctx_t *k, const char *what) { return oar_k_error(k, OAR_ERR_DEVICE, "emulated %s failed", what); }
#define OAR_CU(k, call, name) do { cudaError_t e_ = (call); \
    if (e_ != cudaSuccess) return oarcu::cuda_fail((k), e_, (name)); } while (0)
#define OAR_CU_LAUNCH(k, name) do { cudaError_t e_ = cudaGetLastError(); \
    if (e_ != cudaSuccess) return oarcu::cuda_fail((k), e_, "launch of kernel " name); } while (0)
int cuda_fail(oar_kernel_ctx_t *k, cudaError_t e, const char *call);
#define OAR_CUBLAS(k, call, name) do { if ((call) != CUBLAS_STATUS_SUCCESS) return oarcu::emu_fail((k), (name)); } while (0)
static inline int blas_handle(oar_kernel_ctx_t *, cublasHandle_t *h) { *h = nullptr; return OAR_OK; }
/* launch geometry, nm, the scratch memory and range-check flag
 * declarations, reductions, the random generator, the row-major GEMM and
 * the dtype dispatch come from cuda_common.h itself (run copies those
 * sections in); Scratch::alloc, to_host, to_device and the range checks'
 * BadFlag and run_checks_end are kernels/cuda/device.cu's own (run copies
 * them into emu_device.cpp) */
