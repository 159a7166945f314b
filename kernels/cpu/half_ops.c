/* half_ops.c — CPU float16 kernels of the few ops a mixed-precision MLP
 * runs in float16 (mul, elementwise_add, relu and their grads), so that a
 * program rewritten by oar.amp runs on the CPU too. They convert the
 * operands to float, compute in float (the product through oar_gemm) and
 * round the results to float16 once, as the CUDA kernels do; they are for
 * checking and small runs, not speed. Other ops have no CPU float16
 * kernel: a float16 conv2d on the CPU fails with "no CPU kernel for dtype
 * float16". */
#include <stdlib.h>
#include <string.h>
#include "op.h"
#include "bcast_run.h"
#include "gemm.h"
#include "ops/half_bits.h"
#include "ops/activation.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"

static const char *nm(const char *s) { return s ? s : "?"; }

/* the values of a float16 tensor as a new float array (NULL when empty: *out
 * stays NULL and OAR_OK) */
static int to_float(oar_kernel_ctx_t *k, const oar_tensor_t *t, const char *what, float **out)
{
    *out = NULL;
    if (!t) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s has no value", what);
    if (t->dtype != OAR_FP16)
        return oar_k_error(k, OAR_ERR_DTYPE, "input %s has dtype %s, expected float16", what,
                           nm(oar_dtype_name(t->dtype)));
    const int64_t n = oar_tensor_numel_of(t);
    if (n == 0) return OAR_OK;
    const uint16_t *h = oar_tensor_data((oar_tensor_t *)t);
    if (!h) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s has no data", what);
    float *f = malloc(sizeof *f * (size_t)n);
    if (!f) return OAR_ERR_NOMEM;
    for (int64_t i = 0; i < n; i++) f[i] = (float)oar_half_to_double(h[i]);
    *out = f;
    return OAR_OK;
}

/* rounds n floats into output `slot` (sized by inference) */
static int store(oar_kernel_ctx_t *k, int slot, const float *f, int64_t n)
{
    uint16_t *h = oar_k_output_data(k, slot, 0, OAR_FP16);
    if (!h) return n == 0 ? OAR_OK : OAR_ERR_NOMEM;
    for (int64_t i = 0; i < n; i++) h[i] = oar_half_from_double(f[i]);
    return OAR_OK;
}

/* ---- mul ------------------------------------------------------------------ */
typedef struct { int64_t M, K, N; float *x, *y; } mul_in_t;

/* m->x and m->y are NULL or arrays to free, whatever it returns */
static int mul_setup(oar_kernel_ctx_t *k, mul_in_t *m)
{
    m->x = m->y = NULL;
    const oar_tensor_t *xt = oar_k_input(k, OAR_MM_X, 0), *yt = oar_k_input(k, OAR_MM_Y, 0);
    if (!xt || !yt) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s is missing", xt ? "Y" : "X");
    const oar_mul_attrs_t *a = oar_k_attrs(k);
    if (a->xnf < 1 || a->xnf >= xt->ndim || a->ynf < 1 || a->ynf >= yt->ndim)
        return oar_k_error(k, OAR_ERR_SHAPE, "x_num_col_dims %d / y_num_col_dims %d out of range for ranks %d and %d",
                           a->xnf, a->ynf, xt->ndim, yt->ndim);
    int64_t ky = 1;
    m->M = m->K = m->N = 1;
    for (int i = 0; i < xt->ndim; i++) *(i < a->xnf ? &m->M : &m->K) *= xt->dims[i];
    for (int i = 0; i < yt->ndim; i++) *(i < a->ynf ? &ky : &m->N) *= yt->dims[i];
    if (ky != m->K)
        return oar_k_error(k, OAR_ERR_SHAPE, "X flattened to [%lld, %lld] does not multiply Y flattened to "
                           "[%lld, %lld]", (long long)m->M, (long long)m->K, (long long)ky, (long long)m->N);
    int rc = to_float(k, xt, "X", &m->x);
    if (rc == OAR_OK) rc = to_float(k, yt, "Y", &m->y);
    return rc;
}

/* output `slot` = op(A) op(B), [M, N] with depth K, computed in float and rounded once */
static int product_to(oar_kernel_ctx_t *k, int slot, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float *A,
                      int64_t lda, const float *B, int64_t ldb)
{
    float *o = calloc((size_t)(M * N > 0 ? M * N : 1), sizeof *o);
    if (!o) return OAR_ERR_NOMEM;
    if (M * N * K > 0) oar_gemm(OAR_FP32, oar_gemm_threads(M * N * K), ta, tb, M, N, K, 1.0, A, lda, B, ldb, 0.0, o, N);
    const int rc = store(k, slot, o, M * N);
    free(o);
    return rc;
}

static int mul_f16(oar_kernel_ctx_t *k)
{
    mul_in_t m;
    int rc = mul_setup(k, &m);
    if (rc == OAR_OK) rc = product_to(k, OAR_MM_OUT, false, false, m.M, m.N, m.K, m.x, m.K, m.y, m.N);
    free(m.x);
    free(m.y);
    return rc;
}

/* dX = G Y^T, dY = X^T G */
static int mul_grad_f16(oar_kernel_ctx_t *k)
{
    mul_in_t m;
    float *g = NULL;
    int rc = mul_setup(k, &m);
    if (rc == OAR_OK) rc = to_float(k, oar_k_input(k, OAR_MM_DOUT, 0), "Out@GRAD", &g);
    if (rc == OAR_OK && oar_k_output(k, OAR_MM_DX, 0))
        rc = product_to(k, OAR_MM_DX, false, true, m.M, m.K, m.N, g, m.N, m.y, m.N);
    if (rc == OAR_OK && oar_k_output(k, OAR_MM_DY, 0))
        rc = product_to(k, OAR_MM_DY, true, false, m.K, m.N, m.M, m.x, m.K, g, m.N);
    free(m.x);
    free(m.y);
    free(g);
    return rc;
}
OAR_REGISTER_KERNEL("mul", OAR_PLACE_CPU, OAR_FP16, mul_f16)
OAR_REGISTER_KERNEL("mul_grad", OAR_PLACE_CPU, OAR_FP16, mul_grad_f16)

/* ---- elementwise_add ----------------------------------------------------------- */
OAR_BROWS(add_rows, float, float, a + b)

static int add_f16(oar_kernel_ctx_t *k)
{
    oar_bargs_t a;
    OAR_TRY(oar_bcast_setup(k, &a));
    float *x = NULL, *y = NULL, *o = NULL;
    int rc = to_float(k, a.x, "X", &x);
    if (rc == OAR_OK) rc = to_float(k, a.y, "Y", &y);
    const int64_t n = a.plan.total;
    if (rc == OAR_OK && !(o = malloc(sizeof *o * (size_t)(n > 0 ? n : 1)))) rc = OAR_ERR_NOMEM;
    if (rc == OAR_OK && n > 0) oar_brun_rows(&a.plan, add_rows, x, y, o);
    if (rc == OAR_OK) rc = store(k, OAR_BCAST_OUT, o, n);
    free(x);
    free(y);
    free(o);
    return rc;
}

/* dX and dY sum Out@GRAD over the elements each operand element reached */
static int add_grad_f16(oar_kernel_ctx_t *k)
{
    oar_bargs_t a;
    OAR_TRY(oar_bcast_setup(k, &a));
    float *g = NULL, *dx = NULL, *dy = NULL;
    int rc = to_float(k, oar_k_input(k, OAR_EWG_DOUT, 0), "Out@GRAD", &g);
    const int64_t n = a.plan.total;
    if (rc == OAR_OK && g == NULL && n > 0) rc = oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD is empty");
    if (rc == OAR_OK) {
        dx = calloc((size_t)(a.xn > 0 ? a.xn : 1), sizeof *dx);
        dy = calloc((size_t)(a.yn > 0 ? a.yn : 1), sizeof *dy);
        if (!dx || !dy) rc = OAR_ERR_NOMEM;
    }
    if (rc == OAR_OK && n > 0) {   /* element by element in order, as one thread */
        const int d = a.plan.nd - 1;
        const int64_t w = a.plan.n[d], sx = a.plan.xs[d], sy = a.plan.ys[d];
        int64_t xo, yo, idx[OAR_MAX_DIMS];
        oar_bplan_row(&a.plan, 0, &xo, &yo, idx);
        for (const float *gr = g; gr < g + n; gr += w) {
            for (int64_t j = 0; j < w; j++) {
                dx[xo + j * sx] += gr[j];
                dy[yo + j * sy] += gr[j];
            }
            oar_bplan_next(&a.plan, &xo, &yo, idx);
        }
    }
    if (rc == OAR_OK && oar_k_output(k, OAR_EWG_DX, 0)) rc = store(k, OAR_EWG_DX, dx, a.xn);
    if (rc == OAR_OK && oar_k_output(k, OAR_EWG_DY, 0)) rc = store(k, OAR_EWG_DY, dy, a.yn);
    free(g);
    free(dx);
    free(dy);
    return rc;
}
OAR_REGISTER_KERNEL("elementwise_add", OAR_PLACE_CPU, OAR_FP16, add_f16)
OAR_REGISTER_KERNEL("elementwise_add_grad", OAR_PLACE_CPU, OAR_FP16, add_grad_f16)

/* ---- relu: max(x, 0) is exact in float16; the grad passes g where Out > 0 ---------- */
static int relu_f16(oar_kernel_ctx_t *k)
{
    const oar_tensor_t *x = oar_k_input(k, OAR_UNARY_X, 0);
    if (!x || x->dtype != OAR_FP16) return oar_k_error(k, OAR_ERR_DTYPE, "input X must be a float16 tensor");
    const int64_t n = oar_tensor_numel_of(x);
    const uint16_t *xv = oar_tensor_data((oar_tensor_t *)x);
    if (n > 0 && !xv) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input X has no data");
    uint16_t *o = oar_k_output_data(k, OAR_UNARY_OUT, 0, OAR_FP16);
    if (!o) return n == 0 ? OAR_OK : OAR_ERR_NOMEM;
    for (int64_t i = 0; i < n; i++) o[i] = oar_half_to_double(xv[i]) > 0 ? xv[i] : 0;   /* NaN -> 0, as relu_f32 */
    return OAR_OK;
}

static int relu_grad_f16(oar_kernel_ctx_t *k)
{
    if (!oar_k_output(k, OAR_UNARY_G_DX, 0)) return OAR_OK;
    const oar_tensor_t *out = oar_k_input(k, OAR_UNARY_G_DEP, 0), *g = oar_k_input(k, OAR_UNARY_G_DOUT, 0);
    if (!out || !g || out->dtype != OAR_FP16 || g->dtype != OAR_FP16)
        return oar_k_error(k, OAR_ERR_DTYPE, "inputs Out and Out@GRAD must be float16 tensors");
    const int64_t n = oar_tensor_numel_of(out);
    if (oar_tensor_numel_of(g) != n)
        return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD has %lld elements, Out %lld", (long long)oar_tensor_numel_of(g),
                           (long long)n);
    const uint16_t *ov = oar_tensor_data((oar_tensor_t *)out), *gv = oar_tensor_data((oar_tensor_t *)g);
    if (n > 0 && (!ov || !gv))
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s has no data", ov ? "Out@GRAD" : "Out");
    uint16_t *d = oar_k_output_data(k, OAR_UNARY_G_DX, 0, OAR_FP16);
    if (!d) return n == 0 ? OAR_OK : OAR_ERR_NOMEM;
    for (int64_t i = 0; i < n; i++) d[i] = oar_half_to_double(ov[i]) > 0 ? gv[i] : 0;
    return OAR_OK;
}
OAR_REGISTER_KERNEL("relu", OAR_PLACE_CPU, OAR_FP16, relu_f16)
OAR_REGISTER_KERNEL("relu_grad", OAR_PLACE_CPU, OAR_FP16, relu_grad_f16)
