/* tools/cuda_emu/prelude.h — a CPU emulation of the CUDA subset the kernels
 * use, in place of kernels/cuda/cuda_common.h (see tools/cuda_emu/run):
 * every block runs its threads as std::threads with real barriers, so
 * __syncthreads and warp shuffles behave; device memory is host memory. */
#ifndef EMU_PRELUDE_H
#define EMU_PRELUDE_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <barrier>
#include <thread>
#include <vector>
#include <memory>
#include <functional>
extern "C" {
#include "op.h"
#include "exec.h"
#include "device.h"
}
#define __global__
#define __device__
#define __host__
#define __shared__ static
struct dim3 { unsigned x, y, z; dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {} };
extern thread_local dim3 threadIdx, blockIdx;
extern dim3 blockDim, gridDim;
struct EmuBlock {
    std::barrier<> *block_bar;
    std::vector<std::unique_ptr<std::barrier<>>> warp_bar;
    unsigned char xbuf[1024][8];
};
extern thread_local EmuBlock *emu_blk;
static inline int emu_tid() { return (int)(threadIdx.x + threadIdx.y * blockDim.x); }
static inline void __syncthreads() { emu_blk->block_bar->arrive_and_wait(); }
template <class T> T emu_shfl(T v, int src_lane_fn_kind, int o)
{
    const int tid = emu_tid(), lane = tid & 31, w = tid >> 5;
    memcpy(emu_blk->xbuf[tid], &v, sizeof v);
    emu_blk->warp_bar[w]->arrive_and_wait();
    int src = src_lane_fn_kind == 0 ? (lane ^ o) : lane + o;
    T u = v;
    if (src < 32) memcpy(&u, emu_blk->xbuf[(w << 5) | src], sizeof u);
    emu_blk->warp_bar[w]->arrive_and_wait();
    return u;
}
template <class T> T __shfl_xor_sync(unsigned, T v, int o) { return emu_shfl(v, 0, o); }
template <class T> T __shfl_down_sync(unsigned, T v, int o) { return emu_shfl(v, 1, o); }
void emu_launch(dim3 g, dim3 b, const std::function<void()> &f);

typedef int cudaError_t;
enum { cudaSuccess = 0 };
enum cudaMemcpyKind { cudaMemcpyDeviceToDevice = 3 };
static inline cudaError_t cudaMemsetAsync(void *p, int v, size_t n, int) { memset(p, v, n); return cudaSuccess; }
static inline cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, cudaMemcpyKind, int) { memmove(d, s, n); return cudaSuccess; }
static inline cudaError_t cudaMemset2DAsync(void *p, size_t pitch, int v, size_t w, size_t h, int)
{
    for (size_t r = 0; r < h; r++) memset((char *)p + r * pitch, v, w);
    return cudaSuccess;
}
static inline cudaError_t cudaGetLastError() { return cudaSuccess; }
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
#define OAR_CU(k, call, name) do { if ((call) != cudaSuccess) return oarcu::emu_fail((k), (name)); } while (0)
#define OAR_CU_LAUNCH(k, name) do { } while (0)
#define OAR_CUBLAS(k, call, name) do { if ((call) != CUBLAS_STATUS_SUCCESS) return oarcu::emu_fail((k), (name)); } while (0)
static inline int blas_handle(oar_kernel_ctx_t *, cublasHandle_t *h) { *h = nullptr; return OAR_OK; }
/* launch geometry, nm, reductions, the row-major GEMM and the dtype
 * dispatch come from cuda_common.h itself (run copies those sections in) */
struct Scratch {
    int device = 0;
    void *p = nullptr;
    Scratch() = default;
    Scratch(const Scratch &) = delete;
    Scratch &operator=(const Scratch &) = delete;
    ~Scratch() { if (p) oar_device_free(device, p); }
    int alloc(oar_kernel_ctx_t *k, size_t bytes, const char *what)
    {
        if (p) oar_device_free(device, p);
        p = nullptr;
        device = k->device;
        if (oar_device_alloc(device, bytes, &p) != OAR_OK) return oar_k_error(k, OAR_ERR_NOMEM, "%s", what);
        memset(p, 0xA5, bytes);   /* garbage, as fresh device memory */
        return OAR_OK;
    }
    template <class T> T *as() const { return static_cast<T *>(p); }
};
static inline int to_device(oar_kernel_ctx_t *k, void *dst, const void *src, size_t bytes, const char *)
{
    return oar_device_copy(dst, OAR_PLACE_CUDA, src, OAR_PLACE_CPU, bytes, k->device);
}
