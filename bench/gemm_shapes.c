/* gemm_shapes.c — GFLOP/s of each float32 GEMM backend on the product
 * shapes oar runs (issue 27): the MLP 784-512-256-10 (fc/mul forward, dX,
 * dW) at batch 128 and 1, the LSTM T=32 B=32 H=128 (per-step forward,
 * backward through a transposed W copy, weight grad over all steps) and
 * LeNet's im2col GEMMs.
 *
 * Backends, each one single-threaded call per product (oar cuts products
 * into fixed blocks and runs each block as one single-threaded call, gemm.h):
 *   dnnl    oneDNN's dnnl_sgemm (what oar_gemm uses for float32)
 *   matmul  oneDNN's matmul primitive, B (the weights) reordered once into
 *           the layout the primitive picks (what fc.c does for inference);
 *           the reorder is not timed, so for products whose B changes every
 *           step (weight grads) it is an upper bound
 *   blas    OpenBLAS cblas_sgemm (cblas_sgemv for one-row products, as oar)
 *   xsmm    libxsmm's JIT kernel (libxsmm_smmdispatch), when built with
 *           -DHAVE_LIBXSMM (Debian's libxsmm-dev); "-" where it has none
 *
 * Build and run (make bench-gemm does both):
 *   cc -O2 -fopenmp bench/gemm_shapes.c -o build/gemm_shapes -ldnnl -lopenblas
 *   OMP_NUM_THREADS=1 build/gemm_shapes [trials]
 * and with the AVX2 paths forced:
 *   ONEDNN_MAX_CPU_ISA=AVX2 OPENBLAS_CORETYPE=Haswell LIBXSMM_TARGET=hsw ...
 * Each figure is the best of `trials` (default 25) timings of a loop of
 * calls lasting ~2 ms, the backends interleaved in each trial. */
#define _POSIX_C_SOURCE 200809L
#include <cblas.h>
#include <omp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <oneapi/dnnl/dnnl.h>
#ifdef HAVE_LIBXSMM
#include <libxsmm.h>
#endif

char *openblas_get_corename(void);

typedef struct shape { const char *name; bool ta, tb; int M, N, K; bool weight_b; } shape_t;

/* row-major C[M,N] = op(A) op(B); weight_b: B is a weight (packable once) */
static const shape_t shapes[] = {
    {"mlp128 fc1 fwd", false, false, 128, 512, 784, true},
    {"mlp128 fc2 fwd", false, false, 128, 256, 512, true},
    {"mlp128 fc3 fwd", false, false, 128, 10, 256, true},
    {"mlp128 fc1 dX", false, true, 128, 784, 512, true},
    {"mlp128 fc2 dX", false, true, 128, 512, 256, true},
    {"mlp128 fc3 dX", false, true, 128, 256, 10, true},
    {"mlp128 fc1 dW", true, false, 784, 512, 128, false},
    {"mlp128 fc2 dW", true, false, 512, 256, 128, false},
    {"mlp128 fc3 dW", true, false, 256, 10, 128, false},
    {"mlp1 fc1 fwd", false, false, 1, 512, 784, true},
    {"mlp1 fc2 fwd", false, false, 1, 256, 512, true},
    {"mlp1 fc3 fwd", false, false, 1, 10, 256, true},
    {"mlp1 fc1 fwd blk", false, false, 1, 128, 784, true},
    {"mlp128 fc1 fwd blk", false, false, 128, 128, 784, true},
    {"lstm step fwd", false, false, 32, 512, 128, true},
    {"lstm step fwd col block (old split)", false, false, 32, 128, 128, true},
    {"gru step fwd u,r [32,128]x[128,256]", false, false, 32, 256, 128, true},
    {"lstm step bwd (W^T copy)", false, false, 32, 128, 512, true},
    {"lstm step bwd (trans B)", false, true, 32, 128, 512, true},
    {"lstm dW (T*B=1024)", true, false, 128, 512, 1024, false},
    {"lstm x-proj [1024,128]x[128,512]", false, false, 1024, 512, 128, true},
    {"x-proj col block (oar splits)", false, false, 1024, 128, 128, true},
    {"x-proj row block of 256", false, false, 256, 512, 128, true},
    {"lstm dW col block (oar splits)", true, false, 128, 128, 1024, false},
    {"lstm dW row block of 64", true, false, 64, 512, 1024, false},
    {"lenet conv1 fwd", false, false, 20, 576, 25, true},
    {"lenet conv2 fwd (4 img)", false, false, 50, 256, 500, true},
    {"lenet conv1 dFilter", false, true, 20, 25, 576, false},
    {"lenet conv2 dFilter", false, true, 50, 500, 256, false},
    {"lenet conv2 dCols", true, false, 500, 256, 50, true},
};
#define NS ((int)(sizeof shapes / sizeof shapes[0]))
enum { B_DNNL, B_MATMUL, B_BLAS, B_XSMM, NB };
static const char *bname[NB] = {"dnnl_sgemm", "matmul+packed", "openblas", "libxsmm"};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct ctx {
    const shape_t *s;
    float *A, *B, *C;
    int lda, ldb;
    dnnl_engine_t eng;
    dnnl_stream_t strm;
    dnnl_primitive_t mm;
    dnnl_memory_t ma, mb, mc;
#ifdef HAVE_LIBXSMM
    libxsmm_smmfunction xk;
#endif
} ctx_t;

#define CK(x) do { if ((x) != dnnl_success) { fprintf(stderr, "%s failed\n", #x); return -1; } } while (0)

static int matmul_make(ctx_t *c)
{
    const shape_t *s = c->s;
    dnnl_memory_desc_t amd, bplain, bany, cmd;
    dnnl_dims_t ad = {s->M, s->K}, bd = {s->K, s->N}, cd = {s->M, s->N};
    dnnl_dims_t as = {s->ta ? 1 : c->lda, s->ta ? c->lda : 1}, bs = {s->tb ? 1 : c->ldb, s->tb ? c->ldb : 1};
    CK(dnnl_memory_desc_init_by_strides(&amd, 2, ad, dnnl_f32, as));
    CK(dnnl_memory_desc_init_by_strides(&bplain, 2, bd, dnnl_f32, bs));
    CK(dnnl_memory_desc_init_by_tag(&bany, 2, bd, dnnl_f32, dnnl_format_tag_any));
    CK(dnnl_memory_desc_init_by_tag(&cmd, 2, cd, dnnl_f32, dnnl_ab));
    dnnl_matmul_desc_t md;
    CK(dnnl_matmul_desc_init(&md, &amd, &bany, NULL, &cmd));
    dnnl_primitive_desc_t pd;
    CK(dnnl_primitive_desc_create(&pd, &md, NULL, c->eng, NULL));
    const dnnl_memory_desc_t *wmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    CK(dnnl_primitive_create(&c->mm, pd));
    CK(dnnl_memory_create(&c->ma, &amd, c->eng, c->A));
    CK(dnnl_memory_create(&c->mc, &cmd, c->eng, c->C));
    CK(dnnl_memory_create(&c->mb, wmd, c->eng, DNNL_MEMORY_ALLOCATE));
    dnnl_memory_t ub;
    CK(dnnl_memory_create(&ub, &bplain, c->eng, c->B));
    dnnl_primitive_desc_t rpd;
    dnnl_primitive_t r;
    CK(dnnl_reorder_primitive_desc_create(&rpd, &bplain, c->eng, wmd, c->eng, NULL));
    CK(dnnl_primitive_create(&r, rpd));
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, ub}, {DNNL_ARG_TO, c->mb}};
    CK(dnnl_primitive_execute(r, c->strm, 2, args));
    CK(dnnl_stream_wait(c->strm));
    dnnl_primitive_destroy(r);
    dnnl_primitive_desc_destroy(rpd);
    dnnl_memory_destroy(ub);
    dnnl_primitive_desc_destroy(pd);
    return 0;
}

/* one product on backend b; false when the backend has no kernel for it */
static bool run1(ctx_t *c, int b)
{
    const shape_t *s = c->s;
    switch (b) {
    case B_DNNL:
        return dnnl_sgemm(s->ta ? 'T' : 'N', s->tb ? 'T' : 'N', s->M, s->N, s->K, 1.0f, c->A, c->lda, c->B, c->ldb,
                          0.0f, c->C, s->N) == dnnl_success;
    case B_MATMUL: {
        if (!c->mm) return false;
        dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, c->ma}, {DNNL_ARG_WEIGHTS, c->mb}, {DNNL_ARG_DST, c->mc}};
        return dnnl_primitive_execute(c->mm, c->strm, 3, args) == dnnl_success;
    }
    case B_BLAS:
        if (s->M == 1)
            cblas_sgemv(CblasRowMajor, s->tb ? CblasNoTrans : CblasTrans, s->tb ? s->N : s->K, s->tb ? s->K : s->N,
                        1.0f, c->B, c->ldb, c->A, 1, 0.0f, c->C, 1);
        else
            cblas_sgemm(CblasRowMajor, s->ta ? CblasTrans : CblasNoTrans, s->tb ? CblasTrans : CblasNoTrans, s->M,
                        s->N, s->K, 1.0f, c->A, c->lda, c->B, c->ldb, 0.0f, c->C, s->N);
        return true;
    case B_XSMM:
#ifdef HAVE_LIBXSMM
        /* column-major C^T = op(B)^T op(A)^T */
        if (!c->xk) return false;
        c->xk(c->B, c->A, c->C);
        return true;
#else
        return false;
#endif
    }
    return false;
}

int main(int argc, char **argv)
{
    const int trials = argc > 1 ? atoi(argv[1]) : 25;
    omp_set_num_threads(1);
#ifdef HAVE_LIBXSMM
    libxsmm_init();
#endif
    dnnl_engine_t eng;
    dnnl_stream_t strm;
    if (dnnl_engine_create(&eng, dnnl_cpu, 0) != dnnl_success ||
        dnnl_stream_create(&strm, eng, dnnl_stream_default_flags) != dnnl_success)
        return 1;
    printf("oneDNN isa %d (dnnl_cpu_isa_t), OpenBLAS core %s, 1 thread, best of %d trials\n\n",
           (int)dnnl_get_effective_cpu_isa(), openblas_get_corename(), trials);
    printf("| shape (row-major C[M,N] = op(A) op(B)) | op | M | N | K |");
    for (int b = 0; b < NB; b++) printf(" %s |", bname[b]);
    printf("\n|---|---|---|---|---|");
    for (int b = 0; b < NB; b++) printf("---|");
    printf("\n");
    for (int i = 0; i < NS; i++) {
        ctx_t c;
        memset(&c, 0, sizeof c);
        const shape_t *s = &shapes[i];
        c.s = s; c.eng = eng; c.strm = strm;
        c.lda = s->ta ? s->M : s->K;
        c.ldb = s->tb ? s->K : s->N;
        c.A = aligned_alloc(64, ((size_t)s->M * s->K * 4 + 63) / 64 * 64);
        c.B = aligned_alloc(64, ((size_t)s->K * s->N * 4 + 63) / 64 * 64);
        c.C = aligned_alloc(64, ((size_t)s->M * s->N * 4 + 63) / 64 * 64);
        for (int64_t j = 0; j < (int64_t)s->M * s->K; j++) c.A[j] = (float)((j * 7 % 13) - 6) * 0.01f;
        for (int64_t j = 0; j < (int64_t)s->K * s->N; j++) c.B[j] = (float)((j * 5 % 11) - 5) * 0.01f;
        memset(c.C, 0, (size_t)s->M * s->N * 4);
        if (matmul_make(&c) != 0) c.mm = NULL;
#ifdef HAVE_LIBXSMM
        {
            const int flags = (s->tb ? LIBXSMM_GEMM_FLAG_TRANS_A : 0) | (s->ta ? LIBXSMM_GEMM_FLAG_TRANS_B : 0);
            const float alpha = 1.0f, beta = 0.0f;
            const libxsmm_blasint ldb = c.ldb, lda = c.lda, ldc = s->N;
            c.xk = libxsmm_smmdispatch(s->N, s->M, s->K, &ldb, &lda, &ldc, &alpha, &beta, &flags, NULL);
        }
#endif
        double best[NB];
        int reps[NB];
        bool ok[NB];
        for (int b = 0; b < NB; b++) {
            best[b] = 1e30;
            ok[b] = run1(&c, b);   /* warm-up, and the rep count for ~2 ms */
            if (!ok[b]) continue;
            double t0 = now();
            int n = 0;
            do { run1(&c, b); n++; } while (now() - t0 < 2e-3);
            reps[b] = n;
        }
        for (int t = 0; t < trials; t++)
            for (int b = 0; b < NB; b++) {
                if (!ok[b]) continue;
                double t0 = now();
                for (int r = 0; r < reps[b]; r++) run1(&c, b);
                double dt = (now() - t0) / reps[b];
                if (dt < best[b]) best[b] = dt;
            }
        const double flop = 2.0 * s->M * s->N * s->K;
        printf("| %s%s | %c%c | %d | %d | %d |", s->name, s->weight_b ? "" : " *", s->ta ? 'T' : 'N',
               s->tb ? 'T' : 'N', s->M, s->N, s->K);
        for (int b = 0; b < NB; b++) {
            if (ok[b]) printf(" %.0f |", flop / best[b] * 1e-9);
            else printf(" - |");
        }
        printf("\n");
        fflush(stdout);
        if (c.mm) {
            dnnl_primitive_destroy(c.mm);
            dnnl_memory_destroy(c.ma); dnnl_memory_destroy(c.mb); dnnl_memory_destroy(c.mc);
        }
        free(c.A); free(c.B); free(c.C);
    }
    return 0;
}
