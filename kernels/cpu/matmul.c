/*
 * matmul.c — CPU kernels of mul, matmul and their grads.
 *
 * Every product goes through oar_gemm (gemm.h: oneDNN's sgemm for float32,
 * GEMVs for one-row or one-column products, empty inner dims handled),
 * split across threads when large.
 */
#include <limits.h>
#include <string.h>
#include "op.h"
#include "bcast_run.h"
#include "gemm.h"
#include "ops/matmul.h"

/* C (M x N, ld ldc) = alpha op(A) op(B) + beta C, op(A) M x K, op(B) K x N,
 * row-major; A is stored M x K (K x M when ta), B K x N (N x K when tb).
 * Large products split across OpenMP threads (gemm.h). */
static void mm(int dtype, bool ta, bool tb, int M, int N, int K, double alpha,
               const void *A, int lda, const void *B, int ldb, double beta, void *C, int ldc)
{
    oar_gemm(dtype, oar_gemm_threads((int64_t)M * N * K), ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* BLAS takes int sizes */
static int check_int(oar_kernel_ctx_t *k, int64_t M, int64_t N, int64_t K)
{
    if (M > INT_MAX || N > INT_MAX || K > INT_MAX || M < 0 || N < 0 || K < 0)
        return oar_k_error(k, OAR_ERR_RANGE, "product of [%lld x %lld] and [%lld x %lld] exceeds the BLAS int range",
                           (long long)M, (long long)K, (long long)K, (long long)N);
    return OAR_OK;
}

static const char *const in_slot_names[] = {"X", "Y", "Out@GRAD"};

static const void *in_data(oar_kernel_ctx_t *k, int si, int64_t want, oar_tensor_t **t, int *rc)
{
    const char *slot = in_slot_names[si];
    *t = oar_k_input(k, si, 0);
    if (!*t) { *rc = oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s is missing", slot); return NULL; }
    if (want >= 0 && oar_tensor_numel_of(*t) != want) {
        char b[128];
        *rc = oar_k_error(k, OAR_ERR_SHAPE, "input %s has shape %s, expected %lld elements", slot,
                          oar_shape_str((*t)->dims, (*t)->ndim, b, sizeof b), (long long)want);
        return NULL;
    }
    if (oar_tensor_numel_of(*t) > 0 && !oar_tensor_has_data(*t)) {
        *rc = oar_k_error(k, OAR_ERR_INVALID, "input %s ('%s') holds no data", slot, oar_k_input_name(k, si, 0));
        return NULL;
    }
    *rc = OAR_OK;
    return oar_tensor_data(*t);
}

/* writable grad output, or NULL with *rc OK when the grad is not wanted */
static void *grad_out(oar_kernel_ctx_t *k, int slot, int dtype, int *rc)
{
    *rc = OAR_OK;
    if (!oar_k_output(k, slot, 0)) return NULL;
    void *d = oar_k_output_data(k, slot, 0, dtype);
    if (!d) *rc = oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate %s", slot == OAR_MM_DX ? "X@GRAD" : "Y@GRAD");
    return d;
}

/* ---- mul ------------------------------------------------------------------ */
typedef struct mul_dims { int64_t M, K, N; } mul_dims_t;

static int mul_setup(oar_kernel_ctx_t *k, mul_dims_t *m, const void **x, const void **y)
{
    oar_tensor_t *xt, *yt;
    int rc;
    *x = in_data(k, OAR_MM_X, -1, &xt, &rc);
    if (rc) return rc;
    *y = in_data(k, OAR_MM_Y, -1, &yt, &rc);
    if (rc) return rc;
    const oar_mul_attrs_t *at = oar_k_attrs(k);
    const int xnf = at->xnf, ynf = at->ynf;
    if (xnf < 1 || xnf >= xt->ndim || ynf < 1 || ynf >= yt->ndim)
        return oar_k_error(k, OAR_ERR_SHAPE, "x_num_col_dims %d / y_num_col_dims %d out of range for ranks %d and %d",
                           xnf, ynf, xt->ndim, yt->ndim);
    m->M = 1; m->K = 1;
    for (int i = 0; i < xt->ndim; i++) *(i < xnf ? &m->M : &m->K) *= xt->dims[i];
    int64_t ky = 1;
    m->N = 1;
    for (int i = 0; i < yt->ndim; i++) *(i < ynf ? &ky : &m->N) *= yt->dims[i];
    if (ky != m->K) {
        char bx[128], by[128];
        return oar_k_error(k, OAR_ERR_SHAPE, "X shape %s flattened to [%lld, %lld] does not multiply Y shape %s flattened to [%lld, %lld]",
                           oar_shape_str(xt->dims, xt->ndim, bx, sizeof bx), (long long)m->M, (long long)m->K,
                           oar_shape_str(yt->dims, yt->ndim, by, sizeof by), (long long)ky, (long long)m->N);
    }
    return check_int(k, m->M, m->N, m->K);
}

static int mul_fwd(oar_kernel_ctx_t *k)
{
    int dt = oar_k_dtype(k);
    mul_dims_t m;
    const void *x, *y;
    OAR_TRY(mul_setup(k, &m, &x, &y));
    void *o = oar_k_output_data(k, OAR_MM_OUT, 0, dt);
    if (!o) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate Out");
    mm(dt, false, false, (int)m.M, (int)m.N, (int)m.K, 1.0, x, (int)m.K, y, (int)m.N, 0.0, o, (int)m.N);
    return OAR_OK;
}

static int mul_bwd(oar_kernel_ctx_t *k)
{
    int dt = oar_k_dtype(k), rc;
    mul_dims_t m;
    const void *x, *y;
    oar_tensor_t *gt;
    OAR_TRY(mul_setup(k, &m, &x, &y));
    const void *g = in_data(k, OAR_MM_DOUT, m.M * m.N, &gt, &rc);
    if (rc) return rc;
    void *dx = grad_out(k, OAR_MM_DX, dt, &rc);
    if (rc) return rc;
    /* dX = G Y^T, dY = X^T G */
    if (dx) mm(dt, false, true, (int)m.M, (int)m.K, (int)m.N, 1.0, g, (int)m.N, y, (int)m.N, 0.0, dx, (int)m.K);
    void *dy = grad_out(k, OAR_MM_DY, dt, &rc);
    if (rc) return rc;
    if (dy) mm(dt, true, false, (int)m.K, (int)m.N, (int)m.M, 1.0, x, (int)m.K, g, (int)m.N, 0.0, dy, (int)m.N);
    return OAR_OK;
}

OAR_REGISTER_KERNEL("mul", OAR_PLACE_CPU, OAR_FP32, mul_fwd)
OAR_REGISTER_KERNEL("mul_grad", OAR_PLACE_CPU, OAR_FP32, mul_bwd)
/* the same functions serve float64: mm() dispatches on the dtype */
static int mul_fwd64(oar_kernel_ctx_t *k) { return mul_fwd(k); }
static int mul_bwd64(oar_kernel_ctx_t *k) { return mul_bwd(k); }
OAR_REGISTER_KERNEL("mul", OAR_PLACE_CPU, OAR_FP64, mul_fwd64)
OAR_REGISTER_KERNEL("mul_grad", OAR_PLACE_CPU, OAR_FP64, mul_bwd64)

/* ---- matmul --------------------------------------------------------------- */
typedef struct mm_args {
    oar_mm_shape_t s;
    const void *x, *y;
    int ldx, ldy;          /* stored row lengths of X's and Y's matrices */
    double alpha;
    size_t esz;
} mm_args_t;

static int matmul_setup(oar_kernel_ctx_t *k, mm_args_t *a)
{
    oar_tensor_t *xt, *yt;
    int rc;
    a->x = in_data(k, OAR_MM_X, -1, &xt, &rc);
    if (rc) return rc;
    a->y = in_data(k, OAR_MM_Y, -1, &yt, &rc);
    if (rc) return rc;
    /* matmul_v2: numpy's matmul (trans_x/trans_y, no alpha); matmul: Fluid's v1 */
    const oar_matmul_attrs_t *at = oar_k_attrs(k);
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
    a->ldx = (int)(a->s.tx ? a->s.M : a->s.K);
    a->ldy = (int)(a->s.y_vec ? 1 : (a->s.ty ? a->s.K : a->s.N));
    a->alpha = at->alpha;
    a->esz = oar_dtype_size(oar_k_dtype(k));
    return OAR_OK;
}

/* batch b of Out -> batch index of X and Y (broadcast dims repeat) */
static void batch_map(const oar_mm_shape_t *s, int64_t b, int64_t *xb, int64_t *yb)
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
    *xb = xi; *yb = yi;
}

/* X's batches are Out's and Y has none: X's rows stack into one tall product */
static bool foldable(const oar_mm_shape_t *s) { return !s->tx && s->ybatch == 1 && s->xbatch == s->batch; }

static int matmul_fwd(oar_kernel_ctx_t *k)
{
    int dt = oar_k_dtype(k);
    mm_args_t a;
    OAR_TRY(matmul_setup(k, &a));
    char *o = oar_k_output_data(k, OAR_MM_OUT, 0, dt);
    if (!o) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate Out");
    const oar_mm_shape_t *s = &a.s;
    int M = (int)s->M, N = (int)s->N, K = (int)s->K;
    if (foldable(s) && s->batch * s->M <= INT_MAX) {
        mm(dt, false, s->ty, (int)(s->batch * s->M), N, K, a.alpha, a.x, a.ldx, a.y, a.ldy, 0.0, o, N);
        return OAR_OK;
    }
    for (int64_t b = 0; b < s->batch; b++) {
        int64_t xb, yb;
        batch_map(s, b, &xb, &yb);
        mm(dt, s->tx, s->ty, M, N, K, a.alpha, (const char *)a.x + xb * s->M * s->K * a.esz, a.ldx,
           (const char *)a.y + yb * s->K * s->N * a.esz, a.ldy, 0.0, o + b * s->M * s->N * a.esz, N);
    }
    return OAR_OK;
}

/* With Out = alpha op(X) op(Y) and G = dOut:
 *   dX = alpha G op(Y)^T        (tX: alpha op(Y) G^T)
 *   dY = alpha op(X)^T G        (tY: alpha G^T op(X))
 * A grad whose operand was broadcast over batches is summed over them. */
static int matmul_bwd(oar_kernel_ctx_t *k)
{
    int dt = oar_k_dtype(k), rc;
    mm_args_t a;
    OAR_TRY(matmul_setup(k, &a));
    const oar_mm_shape_t *s = &a.s;
    oar_tensor_t *gt;
    const char *g = in_data(k, OAR_MM_DOUT, s->batch * s->M * s->N, &gt, &rc);
    if (rc) return rc;
    char *dx = grad_out(k, OAR_MM_DX, dt, &rc);
    if (rc) return rc;
    char *dy = grad_out(k, OAR_MM_DY, dt, &rc);
    if (rc) return rc;
    int M = (int)s->M, N = (int)s->N, K = (int)s->K;
    const char *x = a.x, *y = a.y;
    double al = a.alpha;
    if (foldable(s) && s->batch * s->M <= INT_MAX) {
        int BM = (int)(s->batch * s->M);
        if (dx) mm(dt, false, !s->ty, BM, K, N, al, g, N, y, a.ldy, 0.0, dx, K);
        if (dy) {
            if (s->ty) mm(dt, true, false, N, K, BM, al, g, N, x, a.ldx, 0.0, dy, K);
            else mm(dt, true, false, K, N, BM, al, x, a.ldx, g, N, 0.0, dy, N);
        }
        return OAR_OK;
    }
    int64_t xsz = s->M * s->K, ysz = s->K * s->N, gsz = s->M * s->N;
    bool x_red = s->xbatch != s->batch, y_red = s->ybatch != s->batch;
    if (dx && x_red) memset(dx, 0, (size_t)(s->xbatch * xsz) * a.esz);
    if (dy && y_red) memset(dy, 0, (size_t)(s->ybatch * ysz) * a.esz);
    for (int64_t b = 0; b < s->batch; b++) {
        int64_t xb, yb;
        batch_map(s, b, &xb, &yb);
        const char *xp = x + xb * xsz * a.esz, *yp = y + yb * ysz * a.esz, *gp = g + b * gsz * a.esz;
        if (dx) {
            char *d = dx + xb * xsz * a.esz;
            double beta = x_red ? 1.0 : 0.0;
            if (s->tx) mm(dt, s->ty, true, K, M, N, al, yp, a.ldy, gp, N, beta, d, M);
            else mm(dt, false, !s->ty, M, K, N, al, gp, N, yp, a.ldy, beta, d, K);
        }
        if (dy) {
            char *d = dy + yb * ysz * a.esz;
            double beta = y_red ? 1.0 : 0.0;
            if (s->ty) mm(dt, true, s->tx, N, K, M, al, gp, N, xp, a.ldx, beta, d, K);
            else mm(dt, !s->tx, false, K, N, M, al, xp, a.ldx, gp, N, beta, d, N);
        }
    }
    return OAR_OK;
}

OAR_REGISTER_KERNEL("matmul", OAR_PLACE_CPU, OAR_FP32, matmul_fwd)
OAR_REGISTER_KERNEL("matmul_grad", OAR_PLACE_CPU, OAR_FP32, matmul_bwd)
static int matmul_fwd64(oar_kernel_ctx_t *k) { return matmul_fwd(k); }
static int matmul_bwd64(oar_kernel_ctx_t *k) { return matmul_bwd(k); }
OAR_REGISTER_KERNEL("matmul", OAR_PLACE_CPU, OAR_FP64, matmul_fwd64)
OAR_REGISTER_KERNEL("matmul_grad", OAR_PLACE_CPU, OAR_FP64, matmul_bwd64)
static int matmul_v2_fwd(oar_kernel_ctx_t *k) { return matmul_fwd(k); }
static int matmul_v2_bwd(oar_kernel_ctx_t *k) { return matmul_bwd(k); }
OAR_REGISTER_KERNEL("matmul_v2", OAR_PLACE_CPU, OAR_FP32, matmul_v2_fwd)
OAR_REGISTER_KERNEL("matmul_v2_grad", OAR_PLACE_CPU, OAR_FP32, matmul_v2_bwd)
static int matmul_v2_fwd64(oar_kernel_ctx_t *k) { return matmul_fwd(k); }
static int matmul_v2_bwd64(oar_kernel_ctx_t *k) { return matmul_bwd(k); }
OAR_REGISTER_KERNEL("matmul_v2", OAR_PLACE_CPU, OAR_FP64, matmul_v2_fwd64)
OAR_REGISTER_KERNEL("matmul_v2_grad", OAR_PLACE_CPU, OAR_FP64, matmul_v2_bwd64)
