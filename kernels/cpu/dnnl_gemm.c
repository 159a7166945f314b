/* dnnl_gemm.c — oar_gemm (gemm.h): float32 through oneDNN's sgemm when built
 * with OAR_WITH_DNNL, OpenBLAS otherwise and for float64.
 *
 * Measured on the 2-core AVX-512 machine (docs/DECISIONS.md, "GEMM path"):
 * oneDNN's sgemm runs the MLP/LSTM/LeNet shapes 5-40 % faster than OpenBLAS
 * on one thread, and split in two column blocks on libgomp it reaches
 * ~200 GFLOP/s where OpenBLAS's own two threads gave ~90. */
#include <cblas.h>
#include <omp.h>
#include "gemm.h"
#include "oar.h"
#ifdef OAR_WITH_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

void openblas_set_num_threads(int num_threads);

/* OpenBLAS (float64 products, float32 without oneDNN) stays on one thread:
 * every parallel split is oar's, on libgomp */
__attribute__((constructor)) static void blas_one_thread(void) { openblas_set_num_threads(1); }

const char *oar_gemm_backend(void) {
#ifdef OAR_WITH_DNNL
    return "onednn";
#else
    return "openblas";
#endif
}

int oar_gemm_threads(int64_t macs) {
    if (macs < OAR_GEMM_PAR_MIN || omp_in_parallel()) return 1;
    int n = omp_get_max_threads();
    return n < 1 ? 1 : n;
}

void oar_gemm_one_thread(void (*fn)(void *), void *arg) {
    if (omp_in_parallel() || omp_get_max_threads() == 1) { fn(arg); return; }
    #pragma omp parallel num_threads(1)
    {
        omp_set_num_threads(1);
        fn(arg);
    }
}

#ifdef OAR_WITH_DNNL
typedef struct {
    bool ta, tb;
    int64_t M, N, K;
    float alpha;
    const void *A; int64_t lda;
    const void *B; int64_t ldb;
    float beta;
    void *C; int64_t ldc;
    dnnl_status_t st;
} sgemm_job_t;
static void sgemm_run(void *v) {
    sgemm_job_t *j = v;
    j->st = dnnl_sgemm(j->ta ? 'T' : 'N', j->tb ? 'T' : 'N', j->M, j->N, j->K, j->alpha, j->A, j->lda, j->B, j->ldb,
                       j->beta, j->C, j->ldc);
}
#endif

/* Which library runs float32 GEMVs, decided once per process from the
 * kernels OpenBLAS runs (so never by timing, and the same for every thread
 * count: the GEMV blocks are fixed either way). OpenBLAS's GEMV is the
 * faster where it runs AVX2 or AVX-512 kernels; where its DYNAMIC_ARCH
 * build does not know the CPU it falls back to SSE3 ("Prescott": 0.3.21 on
 * a virtualized Sapphire Rapids reporting a generic model) and runs 4-7x
 * slower than oneDNN's sgemm, which picks its kernels from CPUID itself
 * (bench/gemm_shapes.c; docs/DECISIONS.md "Per-CPU backend table"). The
 * user's OPENBLAS_CORETYPE is read by OpenBLAS, never set here. */
char *openblas_get_corename(void);
static bool gemv_dnnl;
#ifdef OAR_WITH_DNNL
static bool openblas_core_wide(const char *core)
{
    static const char *const wide[] = {"haswell", "zen", "skylakex", "cooperlake", "sapphirerapids"};
    if (!core) return false;
    for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++) {
        const char *a = core, *b = wide[i];
        while (*a && *b && (*a | 0x20) == *b) { a++; b++; }
        if (!*a && !*b) return true;
    }
    return false;
}
__attribute__((constructor)) static void gemv_pick(void) { gemv_dnnl = !openblas_core_wide(openblas_get_corename()); }
#endif

const char *oar_gemv_backend(void) { return gemv_dnnl ? "onednn" : "openblas"; }

/* a one-row or one-column product as a GEMV (OpenBLAS) */
static void gemv1(int dt, bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha,
                  const void *A, int64_t lda, const void *B, int64_t ldb, double beta, void *C, int64_t ldc) {
    const bool f32 = dt == OAR_FP32;
    if (M == 1) {   /* C row = op(B)^T x, x = the row of op(A) */
        const int incx = ta ? (int)lda : 1;
        if (f32) cblas_sgemv(CblasRowMajor, tb ? CblasNoTrans : CblasTrans, (int)(tb ? N : K), (int)(tb ? K : N),
                             (float)alpha, B, (int)ldb, A, incx, (float)beta, C, 1);
        else cblas_dgemv(CblasRowMajor, tb ? CblasNoTrans : CblasTrans, (int)(tb ? N : K), (int)(tb ? K : N),
                         alpha, B, (int)ldb, A, incx, beta, C, 1);
        return;
    }
    /* N == 1: C column = op(A) b, b = the column of op(B) */
    const int incb = tb ? 1 : (int)ldb;
    if (f32) cblas_sgemv(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, (int)(ta ? K : M), (int)(ta ? M : K),
                         (float)alpha, A, (int)lda, B, incb, (float)beta, C, (int)ldc);
    else cblas_dgemv(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, (int)(ta ? K : M), (int)(ta ? M : K),
                     alpha, A, (int)lda, B, incb, beta, C, (int)ldc);
}

/* one single-threaded product */
static void gemm1(int dt, bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha,
                  const void *A, int64_t lda, const void *B, int64_t ldb, double beta, void *C, int64_t ldc) {
    const bool f32 = dt == OAR_FP32;
    /* a one-row or one-column product is a GEMV: OpenBLAS's beats a degenerate
     * GEMM for a batch of one, where it runs AVX2/AVX-512 kernels (gemv_dnnl) */
    if ((M == 1 || N == 1) && !(f32 && gemv_dnnl)) {
        gemv1(dt, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    if (f32) {
#ifdef OAR_WITH_DNNL
        /* oneDNN threads a call made outside a parallel region over all of
         * OpenMP's threads: this one stays on this thread */
        sgemm_job_t j = {ta, tb, M, N, K, (float)alpha, A, lda, B, ldb, (float)beta, C, ldc, dnnl_success};
        oar_gemm_one_thread(sgemm_run, &j);
        if (j.st == dnnl_success) return;
        /* oneDNN refuses only arguments OpenBLAS accepts too (none here); fall through */
        if (M == 1 || N == 1) {
            gemv1(dt, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
            return;
        }
#endif
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)M, (int)N,
                    (int)K, (float)alpha, A, (int)lda, B, (int)ldb, (float)beta, C, (int)ldc);
        return;
    }
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)M, (int)N,
                (int)K, alpha, A, (int)lda, B, (int)ldb, beta, C, (int)ldc);
}

#define GEMV_BLOCK OAR_GEMM_BLOCK_N
#define FIX_N OAR_GEMM_BLOCK_N   /* fixed column blocks, */
#define FIX_M OAR_GEMM_BLOCK_M   /* or row blocks when there are few columns */
#define GEMV_PAR_MIN ((int64_t)1 << 17)
#define AT(p, off, es) ((void *)((char *)(p) + (size_t)(off) * (es)))
#define CAT(p, off, es) ((const void *)((const char *)(p) + (size_t)(off) * (es)))

void oar_gemm_whole(int dt, bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha,
                    const void *A, int64_t lda, const void *B, int64_t ldb, double beta, void *C, int64_t ldc) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {   /* an empty sum: oar_gemm's own loop */
        oar_gemm(dt, 1, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    gemm1(dt, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void oar_gemm(int dt, int threads, bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha,
              const void *A, int64_t lda, const void *B, int64_t ldb, double beta, void *C, int64_t ldc) {
    if (M <= 0 || N <= 0) return;
    const size_t es = dt == OAR_FP32 ? sizeof(float) : sizeof(double);
    if (K <= 0) {   /* an empty sum: C = beta C */
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                if (dt == OAR_FP32) { float *c = (float *)C + i * ldc + j; *c = beta == 0 ? 0.0f : (float)beta * *c; }
                else { double *c = (double *)C + i * ldc + j; *c = beta == 0 ? 0.0 : beta * *c; }
            }
        return;
    }
    if (threads > 1 && omp_in_parallel()) threads = 1;
    /* GEMVs: OpenBLAS's GEMV kernels round differently depending on where
     * a column falls in a call, so the blocks are fixed (GEMV_BLOCK wide)
     * whatever the thread count, and threads take whole blocks */
    if (M == 1 || N == 1) {
        const int64_t L = M == 1 ? N : M, nb = (L + GEMV_BLOCK - 1) / GEMV_BLOCK;
        /* below GEMV_PAR_MIN multiply-adds a split costs more than it
         * saves; above it two cores each keep their blocks of the matrix in
         * their own L2 across calls (batch-1 MLP inference, 784 x 512:
         * 21.5 us on 2 threads against 30 us in one call, docs/DECISIONS.md).
         * Whole or blocked is decided by size alone, never by the thread
         * count. */
        if (L * K < GEMV_PAR_MIN) {
            gemm1(dt, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
            return;
        }
        #pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1 && nb > 1)
        for (int64_t b = 0; b < nb; b++) {
            const int64_t o = b * GEMV_BLOCK, len = L - o < GEMV_BLOCK ? L - o : GEMV_BLOCK;
            if (M == 1)
                gemm1(dt, ta, tb, 1, len, K, alpha, A, lda, CAT(B, tb ? o * ldb : o, es), ldb, beta, AT(C, o, es), ldc);
            else
                gemm1(dt, ta, tb, len, 1, K, alpha, CAT(A, ta ? o : o * lda, es), lda, B, ldb, beta,
                      AT(C, o * ldc, es), ldc);
        }
        return;
    }
    /* GEMM kernels (OpenBLAS's and oneDNN's alike) round an element
     * differently depending on where it falls in a call, and on some
     * instruction sets oneDNN's do so even between calls of different
     * widths. So a product large enough to be split is always cut at the
     * same fixed blocks, whatever the thread count, each block one
     * single-threaded call, and threads take whole blocks: with 1 thread or
     * 2 every library sees exactly the same problems (docs/performance.md,
     * "Same bits on any thread count"). */
    if (M * N * K < OAR_GEMM_PAR_MIN || (N < 2 * FIX_N && M < 2 * FIX_M)) {
        gemm1(dt, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    const bool by_n = N >= 2 * FIX_N;
    const int64_t L = by_n ? N : M;
    /* How many blocks: a power of two (whole blocks per thread for 1, 2,
     * 4, ... threads), at most one per FIX_N columns (FIX_M rows), and no
     * block under OAR_GEMM_BLOCK_MACS multiply-adds: each block is a library
     * call that packs the other operand again, which small products (a
     * LeNet conv's per-image GEMM) feel. The shape alone decides. */
    const int64_t most = L / (by_n ? FIX_N : FIX_M), by_work = M * N * K / OAR_GEMM_BLOCK_MACS;
    int64_t nb = 1;
    while (nb * 2 <= most && nb * 2 <= by_work && nb < 64) nb *= 2;
    const int64_t align = by_n ? 16 : 8, W = ((L + nb - 1) / nb + align - 1) / align * align;
    nb = (L + W - 1) / W;
    #pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
    for (int64_t b = 0; b < nb; b++) {
        const int64_t o = b * W, len = L - o < W ? L - o : W;
        if (by_n)
            gemm1(dt, ta, tb, M, len, K, alpha, A, lda, CAT(B, tb ? o * ldb : o, es), ldb, beta, AT(C, o, es), ldc);
        else
            gemm1(dt, ta, tb, len, N, K, alpha, CAT(A, ta ? o : o * lda, es), lda, B, ldb, beta,
                  AT(C, o * ldc, es), ldc);
    }
}
