/* conv.c — CPU kernels of conv2d / depthwise_conv2d and their grads:
 * im2col + OpenBLAS GEMM.
 *
 * Threading: all parallelism is OpenMP, and OpenBLAS is held to one thread
 * while these kernels run, so that two thread pools never compete for the
 * cores (OpenBLAS's workers and libgomp's both spin while idle).
 *  - batch mode (at least as many images as threads): threads take whole
 *    images as they come (dynamic scheduling keeps both cores busy when one
 *    is shared with another process); each unfolds its image into its own
 *    column buffer, small enough to stay in cache, and runs single-threaded
 *    GEMMs straight into the output. Filter@GRAD is summed per fixed chunk of
 *    images and the chunks are added in order, so the result does not depend
 *    on the thread count or on which thread took which chunk.
 *  - image mode (fewer images than threads, e.g. inference on one large
 *    image): images go one by one; im2col splits over channels and every
 *    GEMM splits its output columns across threads.
 * Measured on LeNet shapes, per-image column buffers beat unfolding a whole
 * batch into one wide matrix for one big GEMM: the wide matrix does not fit
 * in cache and writing it costs as much as the GEMM.
 * 1x1 stride-1 unpadded convolutions skip im2col: the image itself is the
 * column matrix. Depthwise convolutions (one input channel per group) use
 * direct loops instead: their GEMMs would be a row each, and their column
 * matrices kh*kw times the image.
 *
 * The typed depthwise loops are written once below the #else and
 * instantiated for float and double by including this file into itself. */
#ifndef OAR_CONV_T
#include <cblas.h>
#include <limits.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "im2col.h"
#include "desc.h"

/* below this many multiply-adds a call runs on one thread */
#define CONV_PAR_MIN_MACS ((int64_t)1 << 18)
/* Filter@GRAD partial sums in batch mode: a fixed count, not one per thread */
#define CONV_DW_CHUNKS 16

typedef struct conv_geom {
    int64_t n, c, h, w;       /* input */
    int64_t m, kh, kw;        /* filter */
    int64_t oh, ow, p;        /* output, p = oh*ow */
    int64_t groups, cg, mg;   /* channels per group in and out */
    int64_t kg;               /* GEMM depth per group: cg*kh*kw */
    int64_t img, ktot;        /* input values per image; column rows (kg*groups) */
    int threads;              /* OpenMP threads for this call */
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
    if (x->dtype != oar_k_dtype(k))
        return oar_k_error(k, OAR_ERR_DTYPE, "Input '%s' is %s, the kernel is %s", xn,
                           oar_dtype_name(x->dtype), oar_dtype_name(oar_k_dtype(k)));
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
    const char *algo = oar_attr_s(op, "padding_algorithm");
    if (!oar_win_resolve_pads(algo, &x->dims[2], &w->dims[2], st, pd, dl))
        return oar_k_error(k, OAR_ERR_INVALID, "attr padding_algorithm = \"%s\" must be \"EXPLICIT\", \"SAME\" or \"VALID\"",
                           algo);
    int64_t need_c;
    if (oar_mul_checked(w->dims[1], g->groups, &need_c) || g->c != need_c || g->m % g->groups != 0)
        return oar_k_error(k, OAR_ERR_SHAPE,
                           "Input '%s' %s and Filter '%s' %s do not agree with groups = %lld "
                           "(need C == Filter[1] * groups and Filter[0] divisible by groups)",
                           xn, xs, wn, ws, (long long)g->groups);
    if (g->h < 1 || g->w < 1)
        return oar_k_error(k, OAR_ERR_SHAPE, "Input '%s' %s has an empty spatial dimension", xn, xs);
    int64_t o[2];
    for (int i = 0; i < 2; i++) {
        int64_t in = x->dims[2 + i], kk = w->dims[2 + i], span;
        if (oar_mul_checked(dl[i], kk - 1, &span) || span > INT64_MAX / 2 || in > INT64_MAX / 4)
            return oar_k_error(k, OAR_ERR_SHAPE, "sizes overflow: Input %s, Filter %s, dilations {%lld, %lld}",
                               xs, ws, (long long)dl[0], (long long)dl[1]);
        int64_t room = in + pd[2 * i] + pd[2 * i + 1] - (span + 1);
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
    int64_t p, kk, hw, kg, ktot, img, macs;
    if (oar_mul_checked(g->oh, g->ow, &p) || oar_mul_checked(g->kh, g->kw, &kk) ||
        oar_mul_checked(g->h, g->w, &hw) || oar_mul_checked(g->cg, kk, &kg) ||
        oar_mul_checked(g->c, kk, &ktot) || oar_mul_checked(g->c, hw, &img) ||
        oar_mul_checked(ktot, p, &macs) || oar_mul_checked(macs, g->mg, &macs))
        return oar_k_error(k, OAR_ERR_SHAPE, "sizes overflow: Input %s, Filter %s", xs, ws);
    /* BLAS takes int dimensions */
    if (p > INT_MAX || kg > INT_MAX || g->m > INT_MAX)
        return oar_k_error(k, OAR_ERR_SHAPE,
                           "Input %s with Filter %s exceeds the GEMM size limit (%d per dimension)",
                           xs, ws, INT_MAX);
    g->p = p; g->kg = kg; g->ktot = ktot; g->img = img;
    g->direct = g->kh == 1 && g->kw == 1 && st[0] == 1 && st[1] == 1 &&
                pd[0] == 0 && pd[1] == 0 && pd[2] == 0 && pd[3] == 0;
    int64_t total;
    if (oar_mul_checked(macs, g->n, &total)) total = INT64_MAX;
    g->threads = 1;
    if (g->n > 0 && total >= CONV_PAR_MIN_MACS) {
        g->threads = omp_get_max_threads();
        if (g->threads < 1) g->threads = 1;
    }
    g->win = (oar_win2d_t){.c = g->c, .h = g->h, .w = g->w, .kh = g->kh, .kw = g->kw,
                           .oh = g->oh, .ow = g->ow, .sh = st[0], .sw = st[1],
                           .pt = pd[0], .pl = pd[2], .dh = dl[0], .dw = dl[1]};
    return OAR_OK;
}

/* OpenBLAS runs single-threaded inside these kernels (see the top comment);
 * the previous count is restored on the way out. */
static int blas_single_begin(void) {
    int n = openblas_get_num_threads();
    if (n > 1) openblas_set_num_threads(1);
    return n;
}

static void blas_single_end(int n) {
    if (n > 1) openblas_set_num_threads(n);
}

#define OAR_CONV_T float
#define OAR_CONV_SUF f32
#include "conv.c"
#undef OAR_CONV_T
#undef OAR_CONV_SUF
#define OAR_CONV_T double
#define OAR_CONV_SUF f64
#include "conv.c"
#undef OAR_CONV_T
#undef OAR_CONV_SUF

/* depthwise: one input channel per group, several groups */
static bool depthwise(const conv_geom_t *g) { return g->cg == 1 && g->groups > 1; }

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

/* C[m, n] (+)= op(A) op(B), with the n columns of C split across `threads`
 * (each block a single-threaded BLAS call). With tb, B is stored [n, kk]. */
static void pgemm(int dt, int threads, bool ta, bool tb, int64_t m, int64_t n, int64_t kk,
                  const void *a, int64_t lda, const void *b, int64_t ldb,
                  double beta, void *c, int64_t ldc) {
    if (threads <= 1 || n < 32) {
        gemm(dt, ta, tb, m, n, kk, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    const size_t esz = oar_dtype_size(dt);
    const int64_t block = (((n + threads - 1) / threads) + 15) / 16 * 16;
    #pragma omp parallel for num_threads(threads) schedule(static)
    for (int t = 0; t < threads; t++) {
        int64_t n0 = t * block;
        if (n0 >= n) continue;
        int64_t nn = n - n0 < block ? n - n0 : block;
        gemm(dt, ta, tb, m, nn, kk, a, lda, CAT_(b, tb ? n0 * ldb : n0, esz), ldb, beta,
             AT(c, n0, esz), ldc);
    }
}

/* one image: y[M, P] = W_g * col_g per group; col: this caller's buffer */
static void fwd_image(int dt, const conv_geom_t *g, const void *x, const void *w, void *y, void *col,
                      int threads) {
    const size_t esz = oar_dtype_size(dt);
    const int64_t P = g->p, KG = g->kg, MG = g->mg;
    const void *b = x;
    if (!g->direct) {
        im2col(dt, x, &g->win, col, P);
        b = col;
    }
    for (int64_t gr = 0; gr < g->groups; gr++)
        pgemm(dt, threads, false, false, MG, P, KG, CAT_(w, gr * MG * KG, esz), KG,
              CAT_(b, gr * KG * P, esz), P, 0.0, AT(y, gr * MG * P, esz), P);
}

/* one image's grads: dw += dY_g col_g^T (when dw), dx = col2im(W_g^T dY_g) (when dx;
 * dx must be zero on entry unless direct) */
static void bwd_image(int dt, const conv_geom_t *g, const void *x, const void *w, const void *dy,
                      void *dx, void *dw, void *col, int threads) {
    const size_t esz = oar_dtype_size(dt);
    const int64_t P = g->p, KG = g->kg, MG = g->mg;
    if (dw) {
        const void *b = x;
        if (!g->direct) {
            im2col(dt, x, &g->win, col, P);
            b = col;
        }
        for (int64_t gr = 0; gr < g->groups; gr++)
            pgemm(dt, threads, false, true, MG, KG, P, CAT_(dy, gr * MG * P, esz), P,
                  CAT_(b, gr * KG * P, esz), P, 1.0, AT(dw, gr * MG * KG, esz), KG);
    }
    if (dx) {
        void *dcol = g->direct ? dx : col;
        for (int64_t gr = 0; gr < g->groups; gr++)
            pgemm(dt, threads, true, false, KG, P, MG, CAT_(w, gr * MG * KG, esz), KG,
                  CAT_(dy, gr * MG * P, esz), P, 0.0, AT(dcol, gr * KG * P, esz), P);
        if (!g->direct) col2im(dt, col, &g->win, P, dx);
    }
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

/* batch mode when every thread gets at least one image */
static bool batch_mode(const conv_geom_t *g) { return g->threads == 1 || g->n >= g->threads; }

/* column buffers, one per thread in batch mode; NULL for direct convs */
static int alloc_cols(oar_kernel_ctx_t *k, const conv_geom_t *g, size_t esz, void **col) {
    *col = NULL;
    if (g->direct) return OAR_OK;
    int64_t n = 0;
    if (oar_mul_checked(g->ktot, g->p, &n) || oar_mul_checked(n, batch_mode(g) ? g->threads : 1, &n) ||
        oar_mul_checked(n, (int64_t)esz, &n) || !(*col = oar_xmalloc((size_t)n)))
        return oar_k_error(k, OAR_ERR_NOMEM, "no memory for the im2col buffer (%lld x %lld values)",
                           (long long)g->ktot, (long long)g->p);
    return OAR_OK;
}

/* ---- forward -------------------------------------------------------------- */
static int conv_fwd(oar_kernel_ctx_t *k) {
    const int dt = oar_k_dtype(k);
    const oar_tensor_t *xt, *wt;
    OAR_TRY(get_inputs(k, &xt, &wt));
    conv_geom_t g;
    OAR_TRY(conv_setup(k, xt, wt, &g));
    const void *x = xt->buf->data, *w = wt->buf->data;
    oar_tensor_t *yt = oar_k_out(k, "Output", 0);
    if (!yt) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Output is missing");
    const int64_t want[4] = {g.n, g.m, g.oh, g.ow};
    if (yt->ndim != 4 || memcmp(yt->dims, want, sizeof want) != 0) OAR_TRY(oar_tensor_resize(yt, want, 4));
    void *y = oar_k_out_data(k, "Output", 0, dt);
    if (!y) return OAR_ERR_NOMEM;
    if (g.n == 0) return OAR_OK;
    if (depthwise(&g)) {
        if (dt == OAR_FP32) dw_fwd_f32(x, w, y, &g);
        else dw_fwd_f64(x, w, y, &g);
        return OAR_OK;
    }
    const size_t esz = oar_dtype_size(dt);
    const int64_t ysz = g.m * g.p, csz = g.ktot * g.p;
    void *col;
    OAR_TRY(alloc_cols(k, &g, esz, &col));
    const int T = g.threads;
    const int saved = T > 1 ? blas_single_begin() : 0;
    if (batch_mode(&g)) {
        #pragma omp parallel num_threads(T) if (T > 1)
        {
            void *mine = col ? AT(col, (int64_t)omp_get_thread_num() * csz, esz) : NULL;
            #pragma omp for schedule(dynamic, 1)
            for (int64_t i = 0; i < g.n; i++)
                fwd_image(dt, &g, CAT_(x, i * g.img, esz), w, AT(y, i * ysz, esz), mine, 1);
        }
    } else {
        for (int64_t i = 0; i < g.n; i++)
            fwd_image(dt, &g, CAT_(x, i * g.img, esz), w, AT(y, i * ysz, esz), col, T);
    }
    if (T > 1) blas_single_end(saved);
    free(col);
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
    const void *x = xt->buf->data, *w = wt->buf->data, *dy = dyt->buf->data;
    int rc;
    void *dx = grad_out(k, "Input@GRAD", xt, dt, &rc);
    if (rc) return rc;
    void *dw = grad_out(k, "Filter@GRAD", wt, dt, &rc);
    if (rc) return rc;
    if ((!dx && !dw) || g.n == 0) return OAR_OK;
    if (depthwise(&g)) {
        if (dt == OAR_FP32) {
            if (dx) dw_bwd_data_f32(w, dy, dx, &g);
            if (dw) dw_bwd_filter_f32(x, dy, dw, &g);
        } else {
            if (dx) dw_bwd_data_f64(w, dy, dx, &g);
            if (dw) dw_bwd_filter_f64(x, dy, dw, &g);
        }
        return OAR_OK;
    }
    const size_t esz = oar_dtype_size(dt);
    const int64_t ysz = g.m * g.p, csz = g.ktot * g.p, wsz = g.m * g.kg;
    const int T = g.threads;
    const bool batch = batch_mode(&g);
    void *col, *dwx = NULL;
    OAR_TRY(alloc_cols(k, &g, esz, &col));
    /* chunk c of the batch sums its images' Filter@GRAD into dw (c = 0) or its
     * own buffer, added in chunk order at the end */
    const int64_t nch = batch ? (g.n < CONV_DW_CHUNKS ? g.n : CONV_DW_CHUNKS) : 1;
    if (dw && nch > 1) {
        dwx = oar_xcalloc((size_t)(nch - 1) * (size_t)wsz, esz);
        if (!dwx) {
            free(col);
            return oar_k_error(k, OAR_ERR_NOMEM, "no memory for %lld Filter@GRAD partial sums", (long long)nch);
        }
    }
    const int saved = T > 1 ? blas_single_begin() : 0;
    if (batch) {
        #pragma omp parallel num_threads(T) if (T > 1)
        {
            void *mine = col ? AT(col, (int64_t)omp_get_thread_num() * csz, esz) : NULL;
            #pragma omp for schedule(dynamic, 1)
            for (int64_t c = 0; c < nch; c++) {
                void *dwc = !dw ? NULL : c == 0 ? dw : AT(dwx, (c - 1) * wsz, esz);
                for (int64_t i = c * g.n / nch; i < (c + 1) * g.n / nch; i++)
                    bwd_image(dt, &g, CAT_(x, i * g.img, esz), w, CAT_(dy, i * ysz, esz),
                              dx ? AT(dx, i * g.img, esz) : NULL, dwc, mine, 1);
            }
        }
    } else {
        for (int64_t i = 0; i < g.n; i++)
            bwd_image(dt, &g, CAT_(x, i * g.img, esz), w, CAT_(dy, i * ysz, esz),
                      dx ? AT(dx, i * g.img, esz) : NULL, dw, col, T);
    }
    if (T > 1) blas_single_end(saved);
    if (dwx) {
        for (int64_t c = 1; c < nch; c++) {
            if (dt == OAR_FP32) {
                const float *s = (const float *)dwx + (size_t)(c - 1) * (size_t)wsz;
                for (int64_t j = 0; j < wsz; j++) ((float *)dw)[j] += s[j];
            } else {
                const double *s = (const double *)dwx + (size_t)(c - 1) * (size_t)wsz;
                for (int64_t j = 0; j < wsz; j++) ((double *)dw)[j] += s[j];
            }
        }
        free(dwx);
    }
    free(col);
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

#else /* typed part: direct depthwise loops */
#define T OAR_CONV_T
#define FN_(name, suf) name##_##suf
#define FN(name, suf) FN_(name, suf)

/* y[n, m] = sum over taps of w[m, tap] * shifted x[n, m / mult]; one pass
 * over the output plane per tap keeps the plane in L1 */
static void FN(dw_fwd, OAR_CONV_SUF)(const T *x, const T *w, T *y, const conv_geom_t *g) {
    const int64_t C = g->c, H = g->h, W = g->w, M = g->m, OH = g->oh, OW = g->ow;
    const int64_t KH = g->kh, KW = g->kw, mult = g->mg;
    const oar_win2d_t *v = &g->win;
    #pragma omp parallel for collapse(2) schedule(static) num_threads(g->threads) if (g->threads > 1)
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t m = 0; m < M; m++) {
            const T *xc = x + (n * C + m / mult) * H * W;
            const T *wm = w + m * KH * KW;
            T *ym = y + (n * M + m) * OH * OW;
            memset(ym, 0, sizeof(T) * (size_t)(OH * OW));
            for (int64_t i = 0; i < KH; i++)
                for (int64_t j = 0; j < KW; j++) {
                    const T wv = wm[i * KW + j];
                    const int64_t woff = j * v->dw - v->pl;
                    int64_t lo, hi;
                    oar_win_valid_cols(woff, v->sw, W, OW, &lo, &hi);
                    for (int64_t oh = 0; oh < OH; oh++) {
                        const int64_t ih = oh * v->sh - v->pt + i * v->dh;
                        if (ih < 0 || ih >= H) continue;
                        const T *xr = xc + ih * W;
                        T *yr = ym + oh * OW;
                        if (v->sw == 1)
                            for (int64_t ow = lo; ow < hi; ow++) yr[ow] += wv * xr[ow + woff];
                        else
                            for (int64_t ow = lo; ow < hi; ow++) yr[ow] += wv * xr[ow * v->sw + woff];
                    }
                }
        }
}

/* dx[n, c] = sum over the c-th group's outputs and taps; dx zeroed on entry */
static void FN(dw_bwd_data, OAR_CONV_SUF)(const T *w, const T *dy, T *dx, const conv_geom_t *g) {
    const int64_t C = g->c, H = g->h, W = g->w, M = g->m, OH = g->oh, OW = g->ow;
    const int64_t KH = g->kh, KW = g->kw, mult = g->mg;
    const oar_win2d_t *v = &g->win;
    #pragma omp parallel for collapse(2) schedule(static) num_threads(g->threads) if (g->threads > 1)
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t c = 0; c < C; c++) {
            T *xc = dx + (n * C + c) * H * W;
            for (int64_t m = c * mult; m < (c + 1) * mult; m++) {
                const T *wm = w + m * KH * KW;
                const T *gm = dy + (n * M + m) * OH * OW;
                for (int64_t i = 0; i < KH; i++)
                    for (int64_t j = 0; j < KW; j++) {
                        const T wv = wm[i * KW + j];
                        const int64_t woff = j * v->dw - v->pl;
                        int64_t lo, hi;
                        oar_win_valid_cols(woff, v->sw, W, OW, &lo, &hi);
                        for (int64_t oh = 0; oh < OH; oh++) {
                            const int64_t ih = oh * v->sh - v->pt + i * v->dh;
                            if (ih < 0 || ih >= H) continue;
                            T *xr = xc + ih * W;
                            const T *gr = gm + oh * OW;
                            if (v->sw == 1)
                                for (int64_t ow = lo; ow < hi; ow++) xr[ow + woff] += wv * gr[ow];
                            else
                                for (int64_t ow = lo; ow < hi; ow++) xr[ow * v->sw + woff] += wv * gr[ow];
                        }
                    }
            }
        }
}

/* dw[m, tap] = sum over images and positions of dy * shifted x; each thread
 * owns whole output channels, so the sums need no reduction */
static void FN(dw_bwd_filter, OAR_CONV_SUF)(const T *x, const T *dy, T *dw, const conv_geom_t *g) {
    const int64_t C = g->c, H = g->h, W = g->w, M = g->m, OH = g->oh, OW = g->ow;
    const int64_t KH = g->kh, KW = g->kw, mult = g->mg;
    const oar_win2d_t *v = &g->win;
    #pragma omp parallel for schedule(static) num_threads(g->threads) if (g->threads > 1)
    for (int64_t m = 0; m < M; m++)
        for (int64_t i = 0; i < KH; i++)
            for (int64_t j = 0; j < KW; j++) {
                const int64_t woff = j * v->dw - v->pl;
                int64_t lo, hi;
                oar_win_valid_cols(woff, v->sw, W, OW, &lo, &hi);
                T s = 0;
                for (int64_t n = 0; n < g->n; n++) {
                    const T *xc = x + (n * C + m / mult) * H * W;
                    const T *gm = dy + (n * M + m) * OH * OW;
                    for (int64_t oh = 0; oh < OH; oh++) {
                        const int64_t ih = oh * v->sh - v->pt + i * v->dh;
                        if (ih < 0 || ih >= H) continue;
                        const T *xr = xc + ih * W;
                        const T *gr = gm + oh * OW;
                        if (v->sw == 1)
                            for (int64_t ow = lo; ow < hi; ow++) s += gr[ow] * xr[ow + woff];
                        else
                            for (int64_t ow = lo; ow < hi; ow++) s += gr[ow] * xr[ow * v->sw + woff];
                    }
                }
                dw[(m * KH + i) * KW + j] = s;
            }
}

#undef T
#undef FN
#undef FN_
#endif
