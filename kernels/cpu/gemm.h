/* gemm.h — the one GEMM entry of the CPU kernels (conv, matmul/mul, the
 * recurrent cells, sequence_conv).
 *
 * float32 goes to oneDNN's sgemm when oar is built with it (OAR_WITH_DNNL):
 * oneDNN picks its kernels from the CPU it runs on (AVX-512 where present,
 * AVX2 or SSE4.1 otherwise), whatever OPENBLAS_CORETYPE says, and it threads
 * on libgomp, the pool oar's own loops use. float64, and float32 without
 * oneDNN, go to OpenBLAS, which oar holds to one thread (its pthread pool
 * would spin against libgomp's; docs/DECISIONS.md "threads").
 *
 * A one-row (M == 1) or one-column (N == 1) product is an OpenBLAS GEMV,
 * faster than a degenerate GEMM for a batch of one, unless OpenBLAS does not
 * know the CPU and runs its SSE3 kernels: then oneDNN (oar_gemv_backend).
 *
 * Threads: `threads` OpenMP threads may share one product. A product's
 * result never depends on the thread count, by construction: a product large
 * enough to be split is always cut into the same blocks, decided by its
 * shape alone (a power of two of them, at least OAR_GEMM_BLOCK_N columns
 * or OAR_GEMM_BLOCK_M rows and OAR_GEMM_BLOCK_MACS multiply-adds each;
 * GEMVs OAR_GEMM_BLOCK_N wide), on one thread too, and each block
 * is one single-threaded library call: the libraries see the same problems
 * whatever the count, so no kernel choice of theirs can tell the counts
 * apart (spec/thread_determinism_spec.lua runs it under several forced
 * instruction sets).
 * threads = 1 runs on the calling thread; inside a parallel region every
 * call runs on the calling thread whatever `threads` says. */
#ifndef OAR_KERNELS_CPU_GEMM_H
#define OAR_KERNELS_CPU_GEMM_H
#include <stdbool.h>
#include <stdint.h>

/* row-major C[M, N] = alpha op(A) op(B) + beta C (float32 or float64, all
 * sizes within int range: callers check) */
void oar_gemm(int dtype, int threads, bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha,
              const void *A, int64_t lda, const void *B, int64_t ldb, double beta, void *C, int64_t ldc);
/* the same product as one single-threaded library call on the calling
 * thread, never cut into blocks: for products that run on one thread
 * whatever the thread count (a recurrent step's product over one part of
 * the batch, whose rows the shape alone decides), so the call, and the bits,
 * are the same on any count. Saves the per-block library calls (each in a
 * one-thread OpenMP region) and the repacking of the other operand: the
 * LSTM step [32,128]x[128,512] was 4 calls of 128 columns, 64 a sequence of
 * 32 steps forward and back (docs/DECISIONS.md, "Per-CPU backend table") */
void oar_gemm_whole(int dtype, bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha,
                    const void *A, int64_t lda, const void *B, int64_t ldb, double beta, void *C, int64_t ldc);
/* the fixed blocks products are cut at (fc's oneDNN path uses the same) */
#define OAR_GEMM_BLOCK_N 128
#define OAR_GEMM_BLOCK_M 64
/* the least work (multiply-adds) a block of a split product gets */
#define OAR_GEMM_BLOCK_MACS ((int64_t)1 << 17)
/* how many threads a product of `macs` multiply-adds should use: 1 below
 * OAR_GEMM_PAR_MIN or inside a parallel region, else OpenMP's thread count */
#define OAR_GEMM_PAR_MIN ((int64_t)1 << 16)
int oar_gemm_threads(int64_t macs);
/* runs fn(arg) as if OpenMP had one thread (inside a parallel region it
 * already does): oneDNN then plans and runs on this thread alone */
void oar_gemm_one_thread(void (*fn)(void *), void *arg);
/* "onednn" or "openblas": the library float32 products use */
const char *oar_gemm_backend(void);
/* "onednn" or "openblas": the library float32 one-row/one-column products
 * (GEMVs) use, fixed for the process from the kernels OpenBLAS runs on this
 * CPU (OpenBLAS where they are AVX2 or AVX-512, dnnl_gemm.c) */
const char *oar_gemv_backend(void);
#endif
