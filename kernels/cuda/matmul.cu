/*
 * matmul.cu — CUDA kernels of mul, matmul and their grads on cuBLAS
 * (float16, float32, float64), with the CPU kernels' shapes and formulas
 * (kernels/cpu/matmul.c). float16 goes through cublasGemmEx with half
 * inputs and output and float accumulation (CUBLAS_COMPUTE_32F, the tensor
 * cores' path).
 *
 * cuBLAS is column-major; a row-major matrix read column-major is its
 * transpose, so row-major C = op(A) op(B) is computed as the column-major
 * C^T = op(B)^T op(A)^T: the operands swap and M/N swap, the transpose
 * flags and leading dimensions stay. Batches whose operands either follow
 * Out's batches or are shared by all of them run as one strided-batched
 * GEMM; other broadcast patterns, and grads summed over broadcast batches,
 * run one GEMM per batch (accumulating with beta = 1).
 *
 * bmm, dot and addmm (linalg.ops; float32, float64) go through the same
 * gemm(): bmm as one strided-batched GEMM per product, dot as a batch of
 * 1 x 1 x n GEMMs (one per row), addmm as Out = beta * Input (broadcast by
 * a kernel) + alpha X Y with beta = 1 in the GEMM. addmm's Input@GRAD sums
 * beta * Out@GRAD over the broadcast axes, one thread per Input element in
 * a fixed order (no atomics), as the CPU kernel does.
 */
#include <limits.h>
#include "cuda_common.h"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunknown-pragmas"
#include "ops/broadcast.h"
#include "ops/matmul.h"
#include "ops/linalg.h"
#pragma GCC diagnostic pop
#include "half.h"

using namespace oarcu;

namespace {

template <class T>
__global__ void scale_mat_k(T *c, int64_t m, int64_t n, int64_t ldc, acc_t<T> beta)
{
    typedef acc_t<T> A;
    OAR_CU_LOOP(i, m * n) {
        T *p = c + (i / n) * ldc + i % n;
        *p = cvt<T>(beta == A(0) ? A(0) : beta * cvt<A>(*p));
    }
}

/* count GEMMs C_i (M x N, ld ldc) = alpha op(A_i) op(B_i) + beta C_i, row-major,
 * operand i at base + i * stride (stride 0: shared) */
int gemm(oar_kernel_ctx_t *k, int dt, bool ta, bool tb, int M, int N, int K, double alpha,
         const void *A, int lda, long long sa, const void *B, int ldb, long long sb, double beta,
         void *C, int ldc, long long sc, int count)
{
    if (M == 0 || N == 0 || count == 0) return OAR_OK;
    const size_t es = oar_dtype_size(dt);
    if (K == 0) {   /* empty sum: C = beta C */
        for (int i = 0; i < count; i++) {
            char *c = (char *)C + (size_t)(i * sc) * es;
            const unsigned grid = grid_for((int64_t)M * N);
            if (dt == OAR_FP32) scale_mat_k<float><<<grid, kThreads>>>((float *)c, M, N, ldc, (float)beta);
            else if (dt == OAR_FP16) scale_mat_k<__half><<<grid, kThreads>>>((__half *)c, M, N, ldc, (float)beta);
            else scale_mat_k<double><<<grid, kThreads>>>((double *)c, M, N, ldc, beta);
            OAR_CU_LAUNCH(k, "scale_mat");
        }
        return OAR_OK;
    }
    cublasHandle_t h;
    OAR_TRY(blas_handle(k, &h));
    const cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (dt == OAR_FP16) {
        /* half operands, float accumulation and scalars */
        const float a = (float)alpha, b = (float)beta;
        if (count == 1)
            OAR_CUBLAS(k, cublasGemmEx(h, opb, opa, N, M, K, &a, B, CUDA_R_16F, ldb, A, CUDA_R_16F, lda, &b, C,
                                       CUDA_R_16F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT), "cublasGemmEx");
        else
            OAR_CUBLAS(k, cublasGemmStridedBatchedEx(h, opb, opa, N, M, K, &a, B, CUDA_R_16F, ldb, sb, A, CUDA_R_16F,
                                                     lda, sa, &b, C, CUDA_R_16F, ldc, sc, count, CUBLAS_COMPUTE_32F,
                                                     CUBLAS_GEMM_DEFAULT),
                       "cublasGemmStridedBatchedEx");
    } else if (dt == OAR_FP32) {
        const float a = (float)alpha, b = (float)beta;
        if (count == 1)
            OAR_CUBLAS(k, cublasSgemm(h, opb, opa, N, M, K, &a, (const float *)B, ldb, (const float *)A, lda, &b,
                                      (float *)C, ldc), "cublasSgemm");
        else
            OAR_CUBLAS(k, cublasSgemmStridedBatched(h, opb, opa, N, M, K, &a, (const float *)B, ldb, sb,
                                                    (const float *)A, lda, sa, &b, (float *)C, ldc, sc, count),
                       "cublasSgemmStridedBatched");
    } else {
        const double a = alpha, b = beta;
        if (count == 1)
            OAR_CUBLAS(k, cublasDgemm(h, opb, opa, N, M, K, &a, (const double *)B, ldb, (const double *)A, lda, &b,
                                      (double *)C, ldc), "cublasDgemm");
        else
            OAR_CUBLAS(k, cublasDgemmStridedBatched(h, opb, opa, N, M, K, &a, (const double *)B, ldb, sb,
                                                    (const double *)A, lda, sa, &b, (double *)C, ldc, sc, count),
                       "cublasDgemmStridedBatched");
    }
    return OAR_OK;
}

int mm(oar_kernel_ctx_t *k, int dt, bool ta, bool tb, int M, int N, int K, double alpha, const void *A, int lda,
       const void *B, int ldb, double beta, void *C, int ldc)
{
    return gemm(k, dt, ta, tb, M, N, K, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1);
}

/* cuBLAS takes int sizes */
int check_int(oar_kernel_ctx_t *k, int64_t M, int64_t N, int64_t K)
{
    if (M > INT_MAX || N > INT_MAX || K > INT_MAX || M < 0 || N < 0 || K < 0)
        return oar_k_error(k, OAR_ERR_RANGE, "product of [%lld x %lld] and [%lld x %lld] exceeds the cuBLAS int range",
                           (long long)M, (long long)K, (long long)K, (long long)N);
    return OAR_OK;
}

/* writable grad output, or NULL with OAR_OK when not wanted */
int grad_out(oar_kernel_ctx_t *k, int slot, int dt, void **p)
{
    return out_data_opt_at(k, slot, 0, dt, -1, p);
}

/* ---- mul -------------------------------------------------------------------- */
struct MulDims { int64_t M, K, N; };

int mul_setup(oar_kernel_ctx_t *k, int dt, MulDims *m, const void **x, const void **y)
{
    const oar_tensor_t *xt, *yt;
    OAR_TRY(in_tensor_at(k, OAR_MM_X, 0, dt, -1, &xt, x));
    OAR_TRY(in_tensor_at(k, OAR_MM_Y, 0, dt, -1, &yt, y));
    const oar_mul_attrs_t *at = (const oar_mul_attrs_t *)oar_k_attrs(k);
    const int xnf = at->xnf, ynf = at->ynf;
    if (xnf < 1 || xnf >= xt->ndim || ynf < 1 || ynf >= yt->ndim)
        return oar_k_error(k, OAR_ERR_SHAPE, "x_num_col_dims %d / y_num_col_dims %d out of range for ranks %d and %d",
                           xnf, ynf, xt->ndim, yt->ndim);
    m->M = 1; m->K = 1; m->N = 1;
    int64_t ky = 1;
    for (int i = 0; i < xt->ndim; i++) *(i < xnf ? &m->M : &m->K) *= xt->dims[i];
    for (int i = 0; i < yt->ndim; i++) *(i < ynf ? &ky : &m->N) *= yt->dims[i];
    if (ky != m->K) {
        char bx[128], by[128];
        return oar_k_error(k, OAR_ERR_SHAPE, "X shape %s flattened to [%lld, %lld] does not multiply Y shape %s "
                           "flattened to [%lld, %lld]", oar_shape_str(xt->dims, xt->ndim, bx, sizeof bx),
                           (long long)m->M, (long long)m->K, oar_shape_str(yt->dims, yt->ndim, by, sizeof by),
                           (long long)ky, (long long)m->N);
    }
    return check_int(k, m->M, m->N, m->K);
}

int mul_fwd(oar_kernel_ctx_t *k)
{
    const int dt = oar_k_dtype(k);
    MulDims m;
    const void *x, *y;
    OAR_TRY(mul_setup(k, dt, &m, &x, &y));
    void *o;
    OAR_TRY(out_data_at(k, OAR_MM_OUT, 0, dt, m.M * m.N, &o));
    return mm(k, dt, false, false, (int)m.M, (int)m.N, (int)m.K, 1.0, x, (int)m.K, y, (int)m.N, 0.0, o, (int)m.N);
}

int mul_bwd(oar_kernel_ctx_t *k)
{
    const int dt = oar_k_dtype(k);
    MulDims m;
    const void *x, *y, *g;
    const oar_tensor_t *gt;
    OAR_TRY(mul_setup(k, dt, &m, &x, &y));
    OAR_TRY(in_tensor_at(k, OAR_MM_DOUT, 0, dt, m.M * m.N, &gt, &g));
    void *dx, *dy;
    OAR_TRY(grad_out(k, OAR_MM_DX, dt, &dx));
    OAR_TRY(grad_out(k, OAR_MM_DY, dt, &dy));
    const int M = (int)m.M, N = (int)m.N, K = (int)m.K;
    /* dX = G Y^T, dY = X^T G */
    if (dx) OAR_TRY(mm(k, dt, false, true, M, K, N, 1.0, g, N, y, N, 0.0, dx, K));
    if (dy) OAR_TRY(mm(k, dt, true, false, K, N, M, 1.0, x, K, g, N, 0.0, dy, N));
    return OAR_OK;
}

/* ---- matmul ----------------------------------------------------------------- */
struct MmArgs {
    oar_mm_shape_t s;
    const void *x, *y;
    int ldx, ldy;
    double alpha;
    size_t esz;
};

int matmul_setup(oar_kernel_ctx_t *k, int dt, MmArgs *a)
{
    const oar_tensor_t *xt, *yt;
    OAR_TRY(in_tensor_at(k, OAR_MM_X, 0, dt, -1, &xt, &a->x));
    OAR_TRY(in_tensor_at(k, OAR_MM_Y, 0, dt, -1, &yt, &a->y));
    /* matmul_v2: numpy's matmul (trans_x/trans_y, no alpha); matmul: Fluid's v1 */
    const oar_matmul_attrs_t *at = (const oar_matmul_attrs_t *)oar_k_attrs(k);
    const bool v2 = at->v2, tx = at->tx, ty = at->ty;
    int mrc = v2 ? oar_mm_shape(xt->dims, xt->ndim, yt->dims, yt->ndim, tx, ty, &a->s)
                 : oar_mm_shape_v1(xt->dims, xt->ndim, yt->dims, yt->ndim, tx, ty, &a->s);
    if (mrc != OAR_MM_OK) {
        char bx[128], by[128];
        return oar_k_error(k, OAR_ERR_SHAPE, "X shape %s (transpose_X %d) and Y shape %s (transpose_Y %d) do not multiply",
                           oar_shape_str(xt->dims, xt->ndim, bx, sizeof bx), tx,
                           oar_shape_str(yt->dims, yt->ndim, by, sizeof by), ty);
    }
    OAR_TRY(check_int(k, a->s.M, a->s.N, a->s.K));
    if (a->s.batch > INT_MAX) return oar_k_error(k, OAR_ERR_RANGE, "%lld batches exceed the cuBLAS int range",
                                                 (long long)a->s.batch);
    a->ldx = (int)(a->s.tx ? a->s.M : a->s.K);
    a->ldy = (int)(a->s.y_vec ? 1 : (a->s.ty ? a->s.K : a->s.N));
    a->alpha = v2 ? 1.0 : at->alpha;
    a->esz = oar_dtype_size(dt);
    return OAR_OK;
}

/* batch b of Out -> batch index of X and Y (broadcast dims repeat) */
void batch_map(const oar_mm_shape_t *s, int64_t b, int64_t *xb, int64_t *yb)
{
    int64_t xi = 0, yi = 0, xs = 1, ys = 1;
    for (int d = s->bnd - 1; d >= 0; d--) {
        int64_t i = b % s->bdims[d];
        b /= s->bdims[d];
        if (s->xb[d] != 1) xi += i * xs;
        if (s->yb[d] != 1) yi += i * ys;
        xs *= s->xb[d];
        ys *= s->yb[d];
    }
    *xb = xi;
    *yb = yi;
}

bool foldable(const oar_mm_shape_t *s) { return !s->tx && s->ybatch == 1 && s->xbatch == s->batch; }
/* each operand follows Out's batches or is shared by all: one strided-batched GEMM */
bool uniform(const oar_mm_shape_t *s)
{
    return (s->xbatch == s->batch || s->xbatch == 1) && (s->ybatch == s->batch || s->ybatch == 1);
}

int matmul_fwd(oar_kernel_ctx_t *k)
{
    const int dt = oar_k_dtype(k);
    MmArgs a;
    OAR_TRY(matmul_setup(k, dt, &a));
    const oar_mm_shape_t *s = &a.s;
    void *ov;
    OAR_TRY(out_data_at(k, OAR_MM_OUT, 0, dt, s->batch * s->M * s->N, &ov));
    char *o = (char *)ov;
    const int M = (int)s->M, N = (int)s->N, K = (int)s->K;
    if (foldable(s) && s->batch * s->M <= INT_MAX)
        return mm(k, dt, false, s->ty, (int)(s->batch * s->M), N, K, a.alpha, a.x, a.ldx, a.y, a.ldy, 0.0, o, N);
    if (uniform(s))
        return gemm(k, dt, s->tx, s->ty, M, N, K, a.alpha, a.x, a.ldx, s->xbatch == 1 ? 0 : s->M * s->K,
                    a.y, a.ldy, s->ybatch == 1 ? 0 : s->K * s->N, 0.0, o, N, s->M * s->N, (int)s->batch);
    for (int64_t b = 0; b < s->batch; b++) {
        int64_t xb, yb;
        batch_map(s, b, &xb, &yb);
        OAR_TRY(mm(k, dt, s->tx, s->ty, M, N, K, a.alpha, (const char *)a.x + xb * s->M * s->K * a.esz, a.ldx,
                   (const char *)a.y + yb * s->K * s->N * a.esz, a.ldy, 0.0, o + b * s->M * s->N * a.esz, N));
    }
    return OAR_OK;
}

/* With Out = alpha op(X) op(Y) and G = dOut:
 *   dX = alpha G op(Y)^T        (tX: alpha op(Y) G^T)
 *   dY = alpha op(X)^T G        (tY: alpha G^T op(X))
 * A grad whose operand was broadcast over batches is summed over them. */
int matmul_bwd(oar_kernel_ctx_t *k)
{
    const int dt = oar_k_dtype(k);
    MmArgs a;
    OAR_TRY(matmul_setup(k, dt, &a));
    const oar_mm_shape_t *s = &a.s;
    const oar_tensor_t *gt;
    const void *gv;
    OAR_TRY(in_tensor_at(k, OAR_MM_DOUT, 0, dt, s->batch * s->M * s->N, &gt, &gv));
    void *dxv, *dyv;
    OAR_TRY(grad_out(k, OAR_MM_DX, dt, &dxv));
    OAR_TRY(grad_out(k, OAR_MM_DY, dt, &dyv));
    char *dx = (char *)dxv, *dy = (char *)dyv;
    const char *g = (const char *)gv, *x = (const char *)a.x, *y = (const char *)a.y;
    const int M = (int)s->M, N = (int)s->N, K = (int)s->K;
    const double al = a.alpha;
    if (foldable(s) && s->batch * s->M <= INT_MAX) {
        const int BM = (int)(s->batch * s->M);
        if (dx) OAR_TRY(mm(k, dt, false, !s->ty, BM, K, N, al, g, N, y, a.ldy, 0.0, dx, K));
        if (dy) {
            if (s->ty) OAR_TRY(mm(k, dt, true, false, N, K, BM, al, g, N, x, a.ldx, 0.0, dy, K));
            else OAR_TRY(mm(k, dt, true, false, K, N, BM, al, x, a.ldx, g, N, 0.0, dy, N));
        }
        return OAR_OK;
    }
    const int64_t xsz = s->M * s->K, ysz = s->K * s->N, gsz = s->M * s->N;
    const bool x_red = s->xbatch != s->batch, y_red = s->ybatch != s->batch;
    if (uniform(s) && !x_red && !y_red) {
        const int B = (int)s->batch;
        const long long xs = xsz, ys = ysz, gs = gsz;
        if (dx) {
            if (s->tx) OAR_TRY(gemm(k, dt, s->ty, true, K, M, N, al, y, a.ldy, ys, g, N, gs, 0.0, dx, M, xs, B));
            else OAR_TRY(gemm(k, dt, false, !s->ty, M, K, N, al, g, N, gs, y, a.ldy, ys, 0.0, dx, K, xs, B));
        }
        if (dy) {
            if (s->ty) OAR_TRY(gemm(k, dt, true, s->tx, N, K, M, al, g, N, gs, x, a.ldx, xs, 0.0, dy, K, ys, B));
            else OAR_TRY(gemm(k, dt, !s->tx, false, K, N, M, al, x, a.ldx, xs, g, N, gs, 0.0, dy, N, ys, B));
        }
        return OAR_OK;
    }
    if (dx && x_red) OAR_CU(k, cudaMemsetAsync(dx, 0, (size_t)(s->xbatch * xsz) * a.esz, 0), "cudaMemsetAsync");
    if (dy && y_red) OAR_CU(k, cudaMemsetAsync(dy, 0, (size_t)(s->ybatch * ysz) * a.esz, 0), "cudaMemsetAsync");
    for (int64_t b = 0; b < s->batch; b++) {
        int64_t xb, yb;
        batch_map(s, b, &xb, &yb);
        const char *xp = x + xb * xsz * a.esz, *yp = y + yb * ysz * a.esz, *gp = g + b * gsz * a.esz;
        if (dx) {
            char *d = dx + xb * xsz * a.esz;
            double beta = x_red ? 1.0 : 0.0;
            if (s->tx) OAR_TRY(mm(k, dt, s->ty, true, K, M, N, al, yp, a.ldy, gp, N, beta, d, M));
            else OAR_TRY(mm(k, dt, false, !s->ty, M, K, N, al, gp, N, yp, a.ldy, beta, d, K));
        }
        if (dy) {
            char *d = dy + yb * ysz * a.esz;
            double beta = y_red ? 1.0 : 0.0;
            if (s->ty) OAR_TRY(mm(k, dt, true, s->tx, N, K, M, al, gp, N, xp, a.ldx, beta, d, K));
            else OAR_TRY(mm(k, dt, !s->tx, false, K, N, M, al, xp, a.ldx, gp, N, beta, d, N));
        }
    }
    return OAR_OK;
}

int mul_fwd16(oar_kernel_ctx_t *k) { return mul_fwd(k); }
int mul_bwd16(oar_kernel_ctx_t *k) { return mul_bwd(k); }
int matmul_fwd16(oar_kernel_ctx_t *k) { return matmul_fwd(k); }
int matmul_bwd16(oar_kernel_ctx_t *k) { return matmul_bwd(k); }
int mul_fwd64(oar_kernel_ctx_t *k) { return mul_fwd(k); }
int mul_bwd64(oar_kernel_ctx_t *k) { return mul_bwd(k); }
int matmul_fwd64(oar_kernel_ctx_t *k) { return matmul_fwd(k); }
int matmul_bwd64(oar_kernel_ctx_t *k) { return matmul_bwd(k); }

OAR_REGISTER_KERNEL("mul", OAR_PLACE_CUDA, OAR_FP32, mul_fwd)
OAR_REGISTER_KERNEL("mul_grad", OAR_PLACE_CUDA, OAR_FP32, mul_bwd)
OAR_REGISTER_KERNEL("mul", OAR_PLACE_CUDA, OAR_FP64, mul_fwd64)
OAR_REGISTER_KERNEL("mul_grad", OAR_PLACE_CUDA, OAR_FP64, mul_bwd64)
OAR_REGISTER_KERNEL("matmul", OAR_PLACE_CUDA, OAR_FP32, matmul_fwd)
OAR_REGISTER_KERNEL("matmul_grad", OAR_PLACE_CUDA, OAR_FP32, matmul_bwd)
OAR_REGISTER_KERNEL("matmul", OAR_PLACE_CUDA, OAR_FP64, matmul_fwd64)
OAR_REGISTER_KERNEL("matmul_grad", OAR_PLACE_CUDA, OAR_FP64, matmul_bwd64)
OAR_REGISTER_KERNEL("mul", OAR_PLACE_CUDA, OAR_FP16, mul_fwd16)
OAR_REGISTER_KERNEL("mul_grad", OAR_PLACE_CUDA, OAR_FP16, mul_bwd16)
OAR_REGISTER_KERNEL("matmul", OAR_PLACE_CUDA, OAR_FP16, matmul_fwd16)
OAR_REGISTER_KERNEL("matmul_grad", OAR_PLACE_CUDA, OAR_FP16, matmul_bwd16)
static int matmul_v2_fwd(oar_kernel_ctx_t *k) { return matmul_fwd(k); }
static int matmul_v2_bwd(oar_kernel_ctx_t *k) { return matmul_bwd(k); }
static int matmul_v2_fwd64(oar_kernel_ctx_t *k) { return matmul_fwd64(k); }
static int matmul_v2_bwd64(oar_kernel_ctx_t *k) { return matmul_bwd64(k); }
OAR_REGISTER_KERNEL("matmul_v2", OAR_PLACE_CUDA, OAR_FP32, matmul_v2_fwd)
OAR_REGISTER_KERNEL("matmul_v2_grad", OAR_PLACE_CUDA, OAR_FP32, matmul_v2_bwd)
OAR_REGISTER_KERNEL("matmul_v2", OAR_PLACE_CUDA, OAR_FP64, matmul_v2_fwd64)
OAR_REGISTER_KERNEL("matmul_v2_grad", OAR_PLACE_CUDA, OAR_FP64, matmul_v2_bwd64)
static int matmul_v2_fwd16(oar_kernel_ctx_t *k) { return matmul_fwd16(k); }
static int matmul_v2_bwd16(oar_kernel_ctx_t *k) { return matmul_bwd16(k); }
OAR_REGISTER_KERNEL("matmul_v2", OAR_PLACE_CUDA, OAR_FP16, matmul_v2_fwd16)
OAR_REGISTER_KERNEL("matmul_v2_grad", OAR_PLACE_CUDA, OAR_FP16, matmul_v2_bwd16)


/* ---- bmm, dot, addmm (linalg.ops) -------------------------------------------- */
int bmm_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt, *yt;
    const void *x, *y;
    OAR_TRY(in_tensor_at(k, OAR_BMM_X, 0, dt, -1, &xt, &x));
    OAR_TRY(in_tensor_at(k, OAR_BMM_Y, 0, dt, -1, &yt, &y));
    const int64_t B = xt->dims[0], M = xt->dims[1], K = xt->dims[2], N = yt->dims[2];
    OAR_TRY(check_int(k, M, N, K));
    void *out;
    OAR_TRY(out_data_at(k, OAR_BMM_OUT, 0, dt, B * M * N, &out));
    return gemm(k, dt, false, false, (int)M, (int)N, (int)K, 1.0, x, (int)K, M * K, y, (int)N, K * N, 0.0, out,
                (int)N, M * N, (int)B);
}

int bmm_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt, *yt, *gt;
    const void *x, *y, *g;
    OAR_TRY(in_tensor_at(k, OAR_BMM_G_X, 0, dt, -1, &xt, &x));
    OAR_TRY(in_tensor_at(k, OAR_BMM_G_Y, 0, dt, -1, &yt, &y));
    const int64_t B = xt->dims[0], M = xt->dims[1], K = xt->dims[2], N = yt->dims[2];
    OAR_TRY(check_int(k, M, N, K));
    OAR_TRY(in_tensor_at(k, OAR_BMM_G_DOUT, 0, dt, B * M * N, &gt, &g));
    void *dx, *dy;
    OAR_TRY(out_data_opt_at(k, OAR_BMM_G_DX, 0, dt, B * M * K, &dx));
    OAR_TRY(out_data_opt_at(k, OAR_BMM_G_DY, 0, dt, B * K * N, &dy));
    /* dX = dOut Y^T, dY = X^T dOut, per batch entry */
    if (dx) OAR_TRY(gemm(k, dt, false, true, (int)M, (int)K, (int)N, 1.0, g, (int)N, M * N, y, (int)N, K * N, 0.0, dx,
                         (int)K, M * K, (int)B));
    if (dy) OAR_TRY(gemm(k, dt, true, false, (int)K, (int)N, (int)M, 1.0, x, (int)K, M * K, g, (int)N, M * N, 0.0, dy,
                         (int)N, K * N, (int)B));
    return OAR_OK;
}

/* X (and Y) of dot: rows and row length (1-D: one row) */
void dot_rows(const oar_tensor_t *x, int64_t *rows, int64_t *n)
{
    *n = x->ndim > 0 ? x->dims[x->ndim - 1] : 1;
    *rows = x->ndim == 2 ? x->dims[0] : 1;
}

int dot_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt, *yt;
    const void *x, *y;
    OAR_TRY(in_tensor_at(k, OAR_DOT_X, 0, dt, -1, &xt, &x));
    int64_t R, n;
    dot_rows(xt, &R, &n);
    OAR_TRY(in_tensor_at(k, OAR_DOT_Y, 0, dt, R * n, &yt, &y));
    OAR_TRY(check_int(k, R, 1, n));
    void *out;
    OAR_TRY(out_data_at(k, OAR_DOT_OUT, 0, dt, R, &out));
    /* R products of a 1 x n row by an n x 1 column: one strided-batched GEMM */
    return gemm(k, dt, false, true, 1, 1, (int)n, 1.0, x, (int)n, n, y, (int)n, n, 0.0, out, 1, 1, (int)R);
}

template <class T>
__global__ void dot_grad_k(const T *x, const T *y, const T *g, T *dx, T *dy, int64_t total, int64_t n)
{
    OAR_CU_LOOP(i, total) {
        const T gr = g[i / n];
        if (dx) dx[i] = gr * y[i];
        if (dy) dy[i] = gr * x[i];
    }
}

int dot_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *xt, *yt, *gt;
    const void *x, *y, *g;
    OAR_TRY(in_tensor_at(k, OAR_DOT_G_X, 0, dt, -1, &xt, &x));
    int64_t R, n;
    dot_rows(xt, &R, &n);
    OAR_TRY(in_tensor_at(k, OAR_DOT_G_Y, 0, dt, R * n, &yt, &y));
    OAR_TRY(in_tensor_at(k, OAR_DOT_G_DOUT, 0, dt, R, &gt, &g));
    void *dx, *dy;
    OAR_TRY(out_data_opt_at(k, OAR_DOT_G_DX, 0, dt, R * n, &dx));
    OAR_TRY(out_data_opt_at(k, OAR_DOT_G_DY, 0, dt, R * n, &dy));
    if (R * n == 0 || (!dx && !dy)) return OAR_OK;
    if (dt == OAR_FP32)
        dot_grad_k<float><<<grid_for(R * n), kThreads>>>((const float *)x, (const float *)y, (const float *)g,
                                                         (float *)dx, (float *)dy, R * n, n);
    else
        dot_grad_k<double><<<grid_for(R * n), kThreads>>>((const double *)x, (const double *)y, (const double *)g,
                                                          (double *)dx, (double *)dy, R * n, n);
    OAR_CU_LAUNCH(k, "dot_grad");
    return OAR_OK;
}

/* Out (M x N) = beta * Input, Input [M or 1, N or 1] broadcast (strides si, sj) */
template <class T>
__global__ void addmm_init_k(const T *in, T *o, int64_t M, int64_t N, int64_t si, int64_t sj, T beta)
{
    OAR_CU_LOOP(q, M * N) o[q] = beta * in[(q / N) * si + (q % N) * sj];
}

/* Input@GRAD: each element sums beta * dOut over the rows/columns it was broadcast to */
template <class T>
__global__ void addmm_dinput_k(const T *g, T *d, int64_t M, int64_t N, int64_t im, int64_t in_, T beta)
{
    OAR_CU_LOOP(q, im * in_) {
        const int64_t i0 = q / in_, j0 = q % in_;
        const int64_t i1 = im == 1 ? M : i0 + 1, j1 = in_ == 1 ? N : j0 + 1;
        T s = T(0);
        for (int64_t i = im == 1 ? 0 : i0; i < i1; i++)
            for (int64_t j = in_ == 1 ? 0 : j0; j < j1; j++) s += beta * g[i * N + j];
        d[q] = s;
    }
}

int addmm_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_addmm_attrs_t *a = (const oar_addmm_attrs_t *)oar_k_attrs(k);
    const oar_tensor_t *it, *xt, *yt;
    const void *in, *x, *y;
    OAR_TRY(in_tensor_at(k, OAR_ADDMM_INPUT, 0, dt, -1, &it, &in));
    OAR_TRY(in_tensor_at(k, OAR_ADDMM_X, 0, dt, -1, &xt, &x));
    OAR_TRY(in_tensor_at(k, OAR_ADDMM_Y, 0, dt, -1, &yt, &y));
    const int64_t M = xt->dims[0], K = xt->dims[1], N = yt->dims[1];
    const int64_t si = it->dims[0] == 1 ? 0 : it->dims[1], sj = it->dims[1] == 1 ? 0 : 1;
    OAR_TRY(check_int(k, M, N, K));
    void *out;
    OAR_TRY(out_data_at(k, OAR_ADDMM_OUT, 0, dt, M * N, &out));
    if (M * N == 0) return OAR_OK;
    if (dt == OAR_FP32)
        addmm_init_k<float><<<grid_for(M * N), kThreads>>>((const float *)in, (float *)out, M, N, si, sj,
                                                           (float)a->beta);
    else
        addmm_init_k<double><<<grid_for(M * N), kThreads>>>((const double *)in, (double *)out, M, N, si, sj,
                                                            (double)a->beta);
    OAR_CU_LAUNCH(k, "addmm");
    return mm(k, dt, false, false, (int)M, (int)N, (int)K, a->alpha, x, (int)K, y, (int)N, 1.0, out, (int)N);
}

int addmm_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_addmm_attrs_t *a = (const oar_addmm_attrs_t *)oar_k_attrs(k);
    const oar_tensor_t *it, *xt, *yt, *gt;
    const void *in, *x, *y, *g;
    OAR_TRY(in_tensor_at(k, OAR_ADDMM_G_INPUT, 0, dt, -1, &it, &in));
    OAR_TRY(in_tensor_at(k, OAR_ADDMM_G_X, 0, dt, -1, &xt, &x));
    OAR_TRY(in_tensor_at(k, OAR_ADDMM_G_Y, 0, dt, -1, &yt, &y));
    const int64_t M = xt->dims[0], K = xt->dims[1], N = yt->dims[1], im = it->dims[0], in_ = it->dims[1];
    OAR_TRY(check_int(k, M, N, K));
    OAR_TRY(in_tensor_at(k, OAR_ADDMM_G_DOUT, 0, dt, M * N, &gt, &g));
    void *di, *dx, *dy;
    OAR_TRY(out_data_opt_at(k, OAR_ADDMM_G_DINPUT, 0, dt, im * in_, &di));
    OAR_TRY(out_data_opt_at(k, OAR_ADDMM_G_DX, 0, dt, M * K, &dx));
    OAR_TRY(out_data_opt_at(k, OAR_ADDMM_G_DY, 0, dt, K * N, &dy));
    if (di && im * in_ > 0) {
        if (dt == OAR_FP32)
            addmm_dinput_k<float><<<grid_for(im * in_), kThreads>>>((const float *)g, (float *)di, M, N, im, in_,
                                                                    (float)a->beta);
        else
            addmm_dinput_k<double><<<grid_for(im * in_), kThreads>>>((const double *)g, (double *)di, M, N, im, in_,
                                                                     (double)a->beta);
        OAR_CU_LAUNCH(k, "addmm_grad");
    }
    if (dx) OAR_TRY(mm(k, dt, false, true, (int)M, (int)K, (int)N, a->alpha, g, (int)N, y, (int)N, 0.0, dx, (int)K));
    if (dy) OAR_TRY(mm(k, dt, true, false, (int)K, (int)N, (int)M, a->alpha, x, (int)K, g, (int)N, 0.0, dy, (int)N));
    return OAR_OK;
}

#define LINALG_REG(OPNAME, FN)                                                            \
    int FN##_f32(oar_kernel_ctx_t *k) { return FN(k, OAR_FP32); }                         \
    int FN##_f64(oar_kernel_ctx_t *k) { return FN(k, OAR_FP64); }                         \
    OAR_REGISTER_KERNEL(OPNAME, OAR_PLACE_CUDA, OAR_FP32, FN##_f32)                       \
    OAR_REGISTER_KERNEL(OPNAME, OAR_PLACE_CUDA, OAR_FP64, FN##_f64)

LINALG_REG("bmm", bmm_fwd)
LINALG_REG("bmm_grad", bmm_bwd)
LINALG_REG("dot", dot_fwd)
LINALG_REG("dot_grad", dot_bwd)
LINALG_REG("addmm", addmm_fwd)
LINALG_REG("addmm_grad", addmm_bwd)

}  // namespace
