/* conv.c — CPU kernels of conv2d / depthwise_conv2d and their grads:
 * im2col + OpenBLAS GEMM.
 *
 * Layout of the work: images are processed in chunks whose columns are laid
 * side by side in one [C*kh*kw, b*oh*ow] matrix, so one wide GEMM per group
 * does a whole chunk. Small images (LeNet-sized) thus become a few big GEMMs
 * that OpenBLAS threads well, instead of many tiny ones; large images get
 * chunks of one image, where the GEMM is big already. The price is a
 * transpose between [M, b, P] and [b, M, P] around the GEMM, which is cheap
 * next to it. 1x1 stride-1 unpadded convolutions skip im2col: the image
 * itself is the column matrix. */
#include <cblas.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "im2col.h"
#include "desc.h"

/* Column buffer budget per chunk, in elements (32 MiB of float). */
#define CONV_COL_BUDGET ((int64_t)8 << 20)

typedef struct conv_geom {
    int64_t n, c, h, w;       /* input */
    int64_t m, kh, kw;        /* filter */
    int64_t oh, ow, p;        /* output, p = oh*ow */
    int64_t groups, cg, mg;   /* channels per group in and out */
    int64_t kg;               /* GEMM depth per group: cg*kh*kw */
    int64_t nb;               /* images per chunk */
    bool direct;              /* 1x1, stride 1, no padding: no im2col */
    oar_win2d_t win;
} conv_geom_t;

static int conv_setup(oar_kernel_ctx_t *k, const oar_tensor_t *x, const oar_tensor_t *w, conv_geom_t *g) {
    char xs[128], ws[128];
    const char *xn = oar_k_in_name(k, "Input", 0), *wn = oar_k_in_name(k, "Filter", 0);
    oar_shape_str(x->dims, x->ndim, xs, sizeof xs);
    oar_shape_str(w->dims, w->ndim, ws, sizeof ws);
    if (x->ndim != 4)
        return oar_k_error(k, OAR_ERR_SHAPE, "Input '%s' must be 4-D NCHW, got shape %s", xn, xs);
    if (w->ndim != 4)
        return oar_k_error(k, OAR_ERR_SHAPE, "Filter '%s' must be 4-D, got shape %s", wn, ws);
    if (x->dtype != w->dtype)
        return oar_k_error(k, OAR_ERR_DTYPE, "Input '%s' is %s but Filter '%s' is %s",
                           xn, oar_dtype_name(x->dtype), wn, oar_dtype_name(w->dtype));
    int64_t st[2], dl[2], pd[4];
    OAR_TRY(oar_win_attr_pair(k, "strides", 1, st));
    OAR_TRY(oar_win_attr_pair(k, "dilations", 1, dl));
    OAR_TRY(oar_win_attr_pads(k, pd));
    const oar_op_desc_t *op = oar_k_op(k);
    g->groups = oar_attr_i(op, "groups");
    if (g->groups < 1)
        return oar_k_error(k, OAR_ERR_INVALID, "attr groups = %lld must be >= 1", (long long)g->groups);
    for (int i = 0; i < 2; i++)
        if (st[i] < 1 || dl[i] < 1 || pd[2 * i] < 0 || pd[2 * i + 1] < 0)
            return oar_k_error(k, OAR_ERR_INVALID,
                               "strides {%lld, %lld} and dilations {%lld, %lld} must be >= 1 and paddings >= 0",
                               (long long)st[0], (long long)st[1], (long long)dl[0], (long long)dl[1]);
    g->n = x->dims[0]; g->c = x->dims[1]; g->h = x->dims[2]; g->w = x->dims[3];
    g->m = w->dims[0]; g->kh = w->dims[2]; g->kw = w->dims[3];
    if (g->m < 1 || w->dims[1] < 1 || g->kh < 1 || g->kw < 1)
        return oar_k_error(k, OAR_ERR_SHAPE, "Filter '%s' has an empty dimension: shape %s", wn, ws);
    if (g->c != w->dims[1] * g->groups || g->m % g->groups != 0)
        return oar_k_error(k, OAR_ERR_SHAPE,
                           "Input '%s' %s and Filter '%s' %s do not agree with groups = %lld "
                           "(need C == Filter[1] * groups and Filter[0] divisible by groups)",
                           xn, xs, wn, ws, (long long)g->groups);
    if (g->h < 1 || g->w < 1)
        return oar_k_error(k, OAR_ERR_SHAPE, "Input '%s' %s has an empty spatial dimension", xn, xs);
    int64_t o[2];
    for (int i = 0; i < 2; i++) {
        int64_t in = x->dims[2 + i], kk = w->dims[2 + i];
        int64_t room = in + pd[2 * i] + pd[2 * i + 1] - (dl[i] * (kk - 1) + 1);
        if (room < 0)
            return oar_k_error(k, OAR_ERR_SHAPE,
                               "output %s would be empty: Input '%s' %s, Filter '%s' %s, strides {%lld, %lld}, "
                               "paddings {%lld, %lld, %lld, %lld}, dilations {%lld, %lld}",
                               i == 0 ? "height" : "width", xn, xs, wn, ws, (long long)st[0], (long long)st[1],
                               (long long)pd[0], (long long)pd[1], (long long)pd[2], (long long)pd[3],
                               (long long)dl[0], (long long)dl[1]);
        o[i] = room / st[i] + 1;
    }
    g->oh = o[0]; g->ow = o[1];
    g->cg = g->c / g->groups; g->mg = g->m / g->groups;
    int64_t p, kg, ktot, xnum;
    if (oar_mul_checked(g->oh, g->ow, &p) || oar_mul_checked(g->cg, g->kh * g->kw, &kg) ||
        oar_mul_checked(g->c, g->kh * g->kw, &ktot) || oar_mul_checked(g->c, g->h * g->w, &xnum))
        return oar_k_error(k, OAR_ERR_SHAPE, "sizes overflow: Input %s, Filter %s", xs, ws);
    g->p = p; g->kg = kg;
    /* BLAS takes int dimensions */
    if (p > INT_MAX || kg > INT_MAX || g->m > INT_MAX)
        return oar_k_error(k, OAR_ERR_SHAPE,
                           "Input %s with Filter %s exceeds the GEMM size limit (%d per dimension)",
                           xs, ws, INT_MAX);
    g->direct = g->kh == 1 && g->kw == 1 && st[0] == 1 && st[1] == 1 &&
                pd[0] == 0 && pd[1] == 0 && pd[2] == 0 && pd[3] == 0;
    int64_t nb = CONV_COL_BUDGET / (ktot * p > 0 ? ktot * p : 1);
    if (nb < 1) nb = 1;
    if (nb > g->n) nb = g->n;
    if (nb * p > INT_MAX) nb = INT_MAX / p;
    g->nb = nb < 1 ? 1 : nb;
    g->win = (oar_win2d_t){.c = g->c, .h = g->h, .w = g->w, .kh = g->kh, .kw = g->kw,
                           .oh = g->oh, .ow = g->ow, .sh = st[0], .sw = st[1],
                           .pt = pd[0], .pl = pd[2], .dh = dl[0], .dw = dl[1]};
    return OAR_OK;
}

/* ---- dtype-generic helpers ---------------------------------------------- */
static void gemm(int dt, bool ta, bool tb, int64_t m, int64_t n, int64_t kk,
                 const void *a, int64_t lda, const void *b, int64_t ldb,
                 double beta, void *c, int64_t ldc) {
    if (m == 0 || n == 0) return;
    enum CBLAS_TRANSPOSE A = ta ? CblasTrans : CblasNoTrans, B = tb ? CblasTrans : CblasNoTrans;
    if (dt == OAR_FP32)
        cblas_sgemm(CblasRowMajor, A, B, (int)m, (int)n, (int)kk, 1.0f, a, (int)lda, b, (int)ldb,
                    (float)beta, c, (int)ldc);
    else
        cblas_dgemm(CblasRowMajor, A, B, (int)m, (int)n, (int)kk, 1.0, a, (int)lda, b, (int)ldb,
                    beta, c, (int)ldc);
}

static void im2col(int dt, const void *x, const oar_win2d_t *g, void *col, int64_t ld) {
    if (dt == OAR_FP32) oar_im2col_f32(x, g, col, ld);
    else oar_im2col_f64(x, g, col, ld);
}

static void col2im(int dt, const void *col, const oar_win2d_t *g, int64_t ld, void *dx) {
    if (dt == OAR_FP32) oar_col2im_f32(col, g, ld, dx);
    else oar_col2im_f64(col, g, ld, dx);
}

#define AT(ptr, off, esz) ((void *)((char *)(ptr) + (size_t)(off) * (esz)))
#define CAT_(ptr, off, esz) ((const void *)((const char *)(ptr) + (size_t)(off) * (esz)))

/* im2col of images [n0, n0+b) side by side, threads over images */
static void chunk_im2col(int dt, const void *x, const conv_geom_t *g, int64_t n0, int64_t b, void *col) {
    size_t esz = oar_dtype_size(dt);
    int64_t img = g->c * g->h * g->w, ld = b * g->p;
    #pragma omp parallel for schedule(static) if (b > 1 && b * g->kg * g->groups * g->p >= (1 << 15))
    for (int64_t i = 0; i < b; i++)
        im2col(dt, CAT_(x, (n0 + i) * img, esz), &g->win, AT(col, i * g->p, esz), ld);
}

/* [M, b*P] (image i at column i*P) <-> [b, M, P] */
static void unchunk(size_t esz, const void *tmp, const conv_geom_t *g, int64_t b, void *y) {
    int64_t ld = b * g->p;
    #pragma omp parallel for collapse(2) schedule(static) if (b * g->m * g->p >= (1 << 16))
    for (int64_t i = 0; i < b; i++)
        for (int64_t m = 0; m < g->m; m++)
            memcpy(AT(y, (i * g->m + m) * g->p, esz), CAT_(tmp, m * ld + i * g->p, esz), (size_t)g->p * esz);
}

static void rechunk(size_t esz, const void *y, const conv_geom_t *g, int64_t b, void *tmp) {
    int64_t ld = b * g->p;
    #pragma omp parallel for collapse(2) schedule(static) if (b * g->m * g->p >= (1 << 16))
    for (int64_t i = 0; i < b; i++)
        for (int64_t m = 0; m < g->m; m++)
            memcpy(AT(tmp, m * ld + i * g->p, esz), CAT_(y, (i * g->m + m) * g->p, esz), (size_t)g->p * esz);
}

static int alloc_work(oar_kernel_ctx_t *k, const conv_geom_t *g, size_t esz, bool need_col,
                      void **col, void **tmp) {
    *col = *tmp = NULL;
    if (need_col && !g->direct) {
        *col = oar_xmalloc((size_t)(g->kg * g->groups) * (size_t)(g->nb * g->p) * esz);
        if (!*col) return oar_k_error(k, OAR_ERR_NOMEM, "no memory for the im2col buffer");
    }
    if (g->nb > 1 && !g->direct) {
        *tmp = oar_xmalloc((size_t)g->m * (size_t)(g->nb * g->p) * esz);
        if (!*tmp) {
            free(*col); *col = NULL;
            return oar_k_error(k, OAR_ERR_NOMEM, "no memory for the GEMM output buffer");
        }
    }
    return OAR_OK;
}

static int get_inputs(oar_kernel_ctx_t *k, const oar_tensor_t **x, const oar_tensor_t **w) {
    *x = oar_k_in(k, "Input", 0);
    *w = oar_k_in(k, "Filter", 0);
    if (!oar_tensor_has_data(*x))
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "Input '%s' has no data", oar_k_in_name(k, "Input", 0));
    if (!oar_tensor_has_data(*w))
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "Filter '%s' has no data", oar_k_in_name(k, "Filter", 0));
    return OAR_OK;
}

/* ---- forward -------------------------------------------------------------- */
static int conv_fwd(oar_kernel_ctx_t *k) {
    const int dt = oar_k_dtype(k);
    const oar_tensor_t *xt, *wt;
    OAR_TRY(get_inputs(k, &xt, &wt));
    conv_geom_t g;
    OAR_TRY(conv_setup(k, xt, wt, &g));
    if (xt->dtype != dt)
        return oar_k_error(k, OAR_ERR_DTYPE, "Input is %s, kernel is %s", oar_dtype_name(xt->dtype), oar_dtype_name(dt));
    oar_tensor_t *yt = oar_k_out(k, "Output", 0);
    if (!yt) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Output is missing");
    const int64_t want[4] = {g.n, g.m, g.oh, g.ow};
    if (yt->ndim != 4 || memcmp(yt->dims, want, sizeof want) != 0) OAR_TRY(oar_tensor_resize(yt, want, 4));
    void *y = oar_k_out_data(k, "Output", 0, dt);
    if (!y) return OAR_ERR_NOMEM;
    const void *x = xt->buf->data, *w = wt->buf->data;
    const size_t esz = oar_dtype_size(dt);
    const int64_t img = g.c * g.h * g.w, P = g.p, KG = g.kg, MG = g.mg;
    if (g.n == 0) return OAR_OK;
    if (g.direct) {
        for (int64_t i = 0; i < g.n; i++)
            for (int64_t gr = 0; gr < g.groups; gr++)
                gemm(dt, false, false, MG, P, KG, CAT_(w, gr * MG * KG, esz), KG,
                     CAT_(x, i * img + gr * KG * P, esz), P, 0.0,
                     AT(y, (i * g.m + gr * MG) * P, esz), P);
        return OAR_OK;
    }
    void *col, *tmp;
    OAR_TRY(alloc_work(k, &g, esz, true, &col, &tmp));
    for (int64_t n0 = 0; n0 < g.n; n0 += g.nb) {
        int64_t b = g.n - n0 < g.nb ? g.n - n0 : g.nb, ld = b * P;
        chunk_im2col(dt, x, &g, n0, b, col);
        void *dst = b == 1 ? AT(y, n0 * g.m * P, esz) : tmp;
        for (int64_t gr = 0; gr < g.groups; gr++)
            gemm(dt, false, false, MG, ld, KG, CAT_(w, gr * MG * KG, esz), KG,
                 CAT_(col, gr * KG * ld, esz), ld, 0.0, AT(dst, gr * MG * ld, esz), ld);
        if (b > 1) unchunk(esz, tmp, &g, b, AT(y, n0 * g.m * P, esz));
    }
    free(col);
    free(tmp);
    return OAR_OK;
}

/* ---- backward ------------------------------------------------------------- */
static void *grad_out(oar_kernel_ctx_t *k, const char *slot, const oar_tensor_t *like, int dt, int *rc) {
    *rc = OAR_OK;
    oar_tensor_t *t = oar_k_out(k, slot, 0);
    if (!t) return NULL;
    if (t->ndim != like->ndim || memcmp(t->dims, like->dims, sizeof(int64_t) * (size_t)like->ndim) != 0) {
        *rc = oar_tensor_resize(t, like->dims, like->ndim);
        if (*rc) return NULL;
    }
    void *p = oar_k_out_data(k, slot, 0, dt);
    if (!p) { *rc = OAR_ERR_NOMEM; return NULL; }
    memset(p, 0, (size_t)oar_tensor_numel_of(like) * oar_dtype_size(dt));
    return p;
}

static int conv_bwd(oar_kernel_ctx_t *k) {
    const int dt = oar_k_dtype(k);
    const oar_tensor_t *xt, *wt;
    OAR_TRY(get_inputs(k, &xt, &wt));
    conv_geom_t g;
    OAR_TRY(conv_setup(k, xt, wt, &g));
    const oar_tensor_t *dyt = oar_k_in(k, "Output@GRAD", 0);
    if (!oar_tensor_has_data(dyt))
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "Output@GRAD '%s' has no data", oar_k_in_name(k, "Output@GRAD", 0));
    const int64_t want[4] = {g.n, g.m, g.oh, g.ow};
    if (dyt->ndim != 4 || memcmp(dyt->dims, want, sizeof want) != 0 || dyt->dtype != dt) {
        char a[128], b[128];
        return oar_k_error(k, OAR_ERR_SHAPE, "Output@GRAD '%s' is %s %s, expected %s %s",
                           oar_k_in_name(k, "Output@GRAD", 0), oar_dtype_name(dyt->dtype),
                           oar_shape_str(dyt->dims, dyt->ndim, a, sizeof a), oar_dtype_name(dt),
                           oar_shape_str(want, 4, b, sizeof b));
    }
    int rc;
    void *dx = grad_out(k, "Input@GRAD", xt, dt, &rc);
    if (rc) return rc;
    void *dw = grad_out(k, "Filter@GRAD", wt, dt, &rc);
    if (rc) return rc;
    if ((!dx && !dw) || g.n == 0) return OAR_OK;
    const void *x = xt->buf->data, *w = wt->buf->data, *dy = dyt->buf->data;
    const size_t esz = oar_dtype_size(dt);
    const int64_t img = g.c * g.h * g.w, P = g.p, KG = g.kg, MG = g.mg;
    if (g.direct) {
        for (int64_t i = 0; i < g.n; i++)
            for (int64_t gr = 0; gr < g.groups; gr++) {
                const void *dyg = CAT_(dy, (i * g.m + gr * MG) * P, esz);
                if (dw)
                    gemm(dt, false, true, MG, KG, P, dyg, P, CAT_(x, i * img + gr * KG * P, esz), P, 1.0,
                         AT(dw, gr * MG * KG, esz), KG);
                if (dx)
                    gemm(dt, true, false, KG, P, MG, CAT_(w, gr * MG * KG, esz), KG, dyg, P, 0.0,
                         AT(dx, i * img + gr * KG * P, esz), P);
            }
        return OAR_OK;
    }
    void *col, *tmp;
    OAR_TRY(alloc_work(k, &g, esz, true, &col, &tmp));
    for (int64_t n0 = 0; n0 < g.n; n0 += g.nb) {
        int64_t b = g.n - n0 < g.nb ? g.n - n0 : g.nb, ld = b * P;
        const void *dyc = CAT_(dy, n0 * g.m * P, esz);
        if (b > 1) { rechunk(esz, dyc, &g, b, tmp); dyc = tmp; }
        if (dw) {
            chunk_im2col(dt, x, &g, n0, b, col);
            for (int64_t gr = 0; gr < g.groups; gr++)
                gemm(dt, false, true, MG, KG, ld, CAT_(dyc, gr * MG * ld, esz), ld,
                     CAT_(col, gr * KG * ld, esz), ld, 1.0, AT(dw, gr * MG * KG, esz), KG);
        }
        if (dx) {
            for (int64_t gr = 0; gr < g.groups; gr++)
                gemm(dt, true, false, KG, ld, MG, CAT_(w, gr * MG * KG, esz), KG,
                     CAT_(dyc, gr * MG * ld, esz), ld, 0.0, AT(col, gr * KG * ld, esz), ld);
            #pragma omp parallel for schedule(static) if (b > 1 && b * g.kg * g.groups * P >= (1 << 15))
            for (int64_t i = 0; i < b; i++)
                col2im(dt, CAT_(col, i * P, esz), &g.win, ld, AT(dx, (n0 + i) * img, esz));
        }
    }
    free(col);
    free(tmp);
    return OAR_OK;
}

static int conv2d_f32(oar_kernel_ctx_t *k) { return conv_fwd(k); }
static int conv2d_f64(oar_kernel_ctx_t *k) { return conv_fwd(k); }
static int conv2d_grad_f32(oar_kernel_ctx_t *k) { return conv_bwd(k); }
static int conv2d_grad_f64(oar_kernel_ctx_t *k) { return conv_bwd(k); }
static int dwconv2d_f32(oar_kernel_ctx_t *k) { return conv_fwd(k); }
static int dwconv2d_f64(oar_kernel_ctx_t *k) { return conv_fwd(k); }
static int dwconv2d_grad_f32(oar_kernel_ctx_t *k) { return conv_bwd(k); }
static int dwconv2d_grad_f64(oar_kernel_ctx_t *k) { return conv_bwd(k); }
OAR_REGISTER_KERNEL("conv2d", OAR_PLACE_CPU, OAR_FP32, conv2d_f32)
OAR_REGISTER_KERNEL("conv2d", OAR_PLACE_CPU, OAR_FP64, conv2d_f64)
OAR_REGISTER_KERNEL("conv2d_grad", OAR_PLACE_CPU, OAR_FP32, conv2d_grad_f32)
OAR_REGISTER_KERNEL("conv2d_grad", OAR_PLACE_CPU, OAR_FP64, conv2d_grad_f64)
OAR_REGISTER_KERNEL("depthwise_conv2d", OAR_PLACE_CPU, OAR_FP32, dwconv2d_f32)
OAR_REGISTER_KERNEL("depthwise_conv2d", OAR_PLACE_CPU, OAR_FP64, dwconv2d_f64)
OAR_REGISTER_KERNEL("depthwise_conv2d_grad", OAR_PLACE_CPU, OAR_FP32, dwconv2d_grad_f32)
OAR_REGISTER_KERNEL("depthwise_conv2d_grad", OAR_PLACE_CPU, OAR_FP64, dwconv2d_grad_f64)
