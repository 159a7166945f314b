/* conv.c — CPU kernels of conv2d / depthwise_conv2d and their grads:
 * im2col + GEMM (gemm.h: oneDNN's sgemm for float32, OpenBLAS for float64).
 *
 * Threading: all parallelism is OpenMP; every GEMM inside the parallel
 * regions below runs on its calling thread.
 *  - batch mode (at least as many images as threads): threads take blocks
 *    of images as they come (dynamic scheduling keeps both cores busy when
 *    one is shared with another process); each unfolds its block into its
 *    own column buffer, small enough to stay in cache, and runs
 *    single-threaded GEMMs. A block is one image, or a few side by side
 *    when the output is narrow (bimg: LeNet's 8x8 second conv makes 64-column
 *    GEMMs alone, 256-column ones four at a time). Filter@GRAD is summed per
 *    fixed chunk of images and the chunks are added in order, so the result
 *    does not depend on the thread count or on which thread took which chunk.
 *  - image mode (fewer images than threads, e.g. inference on one large
 *    image): images go one by one; im2col splits over channels and every
 *    GEMM splits its output columns across threads (gemm.h).
 * Measured on LeNet shapes, cache-sized column buffers beat unfolding a
 * whole batch into one wide matrix for one big GEMM: the wide matrix does
 * not fit in cache and writing it costs as much as the GEMM.
 * The backward pass needs each image's columns once, for Filter@GRAD: in
 * training the forward of a padded or strided conv with few columns keeps
 * the ones it unfolded ("kept columns" below), else the backward unfolds
 * them. Input@GRAD is W^T dY folded back (col2im) into the image, zeroed
 * just before, while in cache. No buffer a GEMM overwrites is cleared first.
 * 1x1 stride-1 unpadded convolutions skip im2col: the image itself is the
 * column matrix. Depthwise convolutions (one input channel per group) use
 * direct loops instead: their GEMMs would be a row each, and their column
 * matrices kh*kw times the image.
 * NHWC (data_format) runs the same code on NCHW copies: the input (and the
 * output gradient) are transposed in, the result transposed out.
 *
 * The depthwise loops are in conv_depthwise.c. */
#include <limits.h>
#include <stdio.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "im2col.h"
#include "scratch.h"
#include "gemm.h"
#include "desc.h"
#include "ops/conv.h"
#include "conv_geom.h"

/* below this many multiply-adds a call runs on one thread */
#define CONV_PAR_MIN_MACS ((int64_t)1 << 18)
/* Filter@GRAD partial sums in batch mode: a fixed count, not one per thread */
#define CONV_DW_CHUNKS 16
/* batched GEMMs: at least this many columns, columns of at most this size */
#define CONV_GEMM_COLS 256
#define CONV_COL_BYTES ((int64_t)1 << 20)
/* kept columns: at most this per matrix (a larger one goes out to memory
 * and back, which cost more than unfolding again), and alive at once */
#define CONV_KEEP_MAX_COL ((int64_t)4 << 20)
#define CONV_KEEP_MAX_BYTES ((int64_t)64 << 20)


/* error with both operands' names and shapes (built only here) */
static int conv_err(oar_kernel_ctx_t *k, int status, const oar_tensor_t *x, const oar_tensor_t *w, const char *why) {
    char xs[128], ws[128];
    oar_shape_str(x->dims, x->ndim, xs, sizeof xs);
    oar_shape_str(w->dims, w->ndim, ws, sizeof ws);
    return oar_k_error(k, status, "Input '%s' %s, Filter '%s' %s: %s", oar_k_input_name(k, OAR_CONV_INPUT, 0), xs,
                       oar_k_input_name(k, OAR_CONV_FILTER, 0), ws, why);
}

static int conv_setup(oar_kernel_ctx_t *k, const oar_tensor_t *x, const oar_tensor_t *w, conv_geom_t *g) {
    const oar_conv_attrs_t *a = oar_k_attrs(k);
    if (x->ndim != 4) return conv_err(k, OAR_ERR_SHAPE, x, w, a->nhwc ? "Input must be 4-D NHWC" : "Input must be 4-D NCHW");
    if (w->ndim != 4) return conv_err(k, OAR_ERR_SHAPE, x, w, "Filter must be 4-D [M, C/groups, kh, kw]");
    if (x->dtype != w->dtype || x->dtype != oar_k_dtype(k))
        return oar_k_error(k, OAR_ERR_DTYPE, "Input '%s' is %s and Filter '%s' is %s; the kernel is %s",
                           oar_k_input_name(k, OAR_CONV_INPUT, 0), oar_dtype_name(x->dtype),
                           oar_k_input_name(k, OAR_CONV_FILTER, 0), oar_dtype_name(w->dtype),
                           oar_dtype_name(oar_k_dtype(k)));
    int64_t st[2] = {a->st[0], a->st[1]}, dl[2] = {a->dl[0], a->dl[1]};
    int64_t pd[4] = {a->pd[0], a->pd[1], a->pd[2], a->pd[3]};
    g->groups = a->groups;
    if (g->groups < 1) return conv_err(k, OAR_ERR_INVALID, x, w, "attr groups must be >= 1");
    g->nhwc = a->nhwc;
    g->n = x->dims[0];
    g->c = a->nhwc ? x->dims[3] : x->dims[1];
    g->h = a->nhwc ? x->dims[1] : x->dims[2];
    g->w = a->nhwc ? x->dims[2] : x->dims[3];
    g->m = w->dims[0]; g->kh = w->dims[2]; g->kw = w->dims[3];
    if (g->m < 1 || w->dims[1] < 1 || g->kh < 1 || g->kw < 1)
        return conv_err(k, OAR_ERR_SHAPE, x, w, "the Filter has an empty dimension");
    int64_t need_c;
    if (oar_mul_checked(w->dims[1], g->groups, &need_c) || g->c != need_c || g->m % g->groups != 0)
        return conv_err(k, OAR_ERR_SHAPE, x, w, "they do not agree with attr groups "
                        "(need C == Filter[1] * groups and Filter[0] divisible by groups)");
    if (g->h < 1 || g->w < 1) return conv_err(k, OAR_ERR_SHAPE, x, w, "the Input has an empty spatial dimension");
    /* the geometry conv_infer sized Output with (window.h) */
    const int64_t in_hw[2] = {g->h, g->w};
    oar_conv_win_t cw;
    const int r = oar_win_conv_plan(a->algo, in_hw, &w->dims[2], st, dl, pd, &cw);
    if (r == OAR_WIN_OVERFLOW) return conv_err(k, OAR_ERR_SHAPE, x, w, "sizes overflow");
    if (r == OAR_WIN_EMPTY) {
        char why[256];
        snprintf(why, sizeof why, "output %s would be empty (strides {%lld, %lld}, paddings {%lld, %lld, %lld, "
                 "%lld}, dilations {%lld, %lld})", cw.bad == 0 ? "height" : "width", (long long)cw.st[0],
                 (long long)cw.st[1], (long long)cw.pd[0], (long long)cw.pd[1], (long long)cw.pd[2],
                 (long long)cw.pd[3], (long long)cw.dl[0], (long long)cw.dl[1]);
        return conv_err(k, OAR_ERR_SHAPE, x, w, why);
    }
    memcpy(pd, cw.pd, sizeof pd);
    memcpy(dl, cw.dl, sizeof dl);
    const int64_t o[2] = {cw.out[0], cw.out[1]};
    g->oh = o[0]; g->ow = o[1];
    g->cg = g->c / g->groups; g->mg = g->m / g->groups;
    int64_t p, kk, hw, kg, ktot, img, macs;
    if (oar_mul_checked(g->oh, g->ow, &p) || oar_mul_checked(g->kh, g->kw, &kk) ||
        oar_mul_checked(g->h, g->w, &hw) || oar_mul_checked(g->cg, kk, &kg) ||
        oar_mul_checked(g->c, kk, &ktot) || oar_mul_checked(g->c, hw, &img) ||
        oar_mul_checked(ktot, p, &macs) || oar_mul_checked(macs, g->mg, &macs))
        return conv_err(k, OAR_ERR_SHAPE, x, w, "sizes overflow");
    /* BLAS takes int dimensions */
    if (p > INT_MAX || kg > INT_MAX || g->m > INT_MAX)
        return conv_err(k, OAR_ERR_SHAPE, x, w, "the GEMMs would exceed the int size limit per dimension");
    g->p = p; g->kg = kg; g->ktot = ktot; g->img = img;
    g->plain = st[1] == 1 && pd[0] == 0 && pd[1] == 0 && pd[2] == 0 && pd[3] == 0;
    g->direct = g->plain && g->kh == 1 && g->kw == 1 && st[0] == 1;
    int64_t total;
    if (oar_mul_checked(macs, g->n, &total)) total = INT64_MAX;
    g->threads = 1;
    if (g->n > 0 && total >= CONV_PAR_MIN_MACS && !omp_in_parallel()) {
        g->threads = omp_get_max_threads();
        if (g->threads < 1) g->threads = 1;
    }
    /* Narrow outputs (LeNet's second conv: 8x8) make thin GEMMs; unfolding
     * a few images side by side gives them >= CONV_GEMM_COLS columns while
     * the columns stay in cache (<= CONV_COL_BYTES). Depends on the shape
     * only, so results do not depend on the thread count. */
    g->bimg = 1;
    if (!g->direct && p < CONV_GEMM_COLS) {
        int64_t b = (CONV_GEMM_COLS + p - 1) / p;
        while (b > 1 && (g->ktot + g->m) * p * b * 8 > CONV_COL_BYTES) b--;
        g->bimg = b;
    }
    g->win = (oar_win2d_t){.c = g->c, .h = g->h, .w = g->w, .kh = g->kh, .kw = g->kw,
                           .oh = g->oh, .ow = g->ow, .sh = st[0], .sw = st[1],
                           .pt = pd[0], .pl = pd[2], .dh = dl[0], .dw = dl[1]};
    return OAR_OK;
}

/* depthwise: one input channel per group, several groups */
static bool depthwise(const conv_geom_t *g) { return g->cg == 1 && g->groups > 1; }

/* images unfolded so far, and kept column matrices alive (oar_debug_conv_cols)
 * with their bytes (held under CONV_KEEP_MAX_BYTES) */
static int64_t g_unfolded, g_kept_live, g_kept_bytes;

int64_t oar_debug_conv_cols(int what) {
    if (what == 0) return __atomic_load_n(&g_unfolded, __ATOMIC_RELAXED);
    if (what == 1) return __atomic_load_n(&g_kept_live, __ATOMIC_RELAXED);
    return -1;
}

/* ---- dtype-generic helpers ---------------------------------------------- */
static void im2col(int dt, const void *x, const oar_win2d_t *g, void *col, int64_t ld) {
    __atomic_add_fetch(&g_unfolded, 1, __ATOMIC_RELAXED);
    if (dt == OAR_FP32) oar_im2col_f32(x, g, col, ld);
    else oar_im2col_f64(x, g, col, ld);
}

static void col2im(int dt, const void *col, const oar_win2d_t *g, int64_t ld, void *dx) {
    if (dt == OAR_FP32) oar_col2im_f32(col, g, ld, dx);
    else oar_col2im_f64(col, g, ld, dx);
}

/* [n, a, b] -> [n, b, a] per image (NHWC <-> NCHW with a, b = HW, C or C, HW) */
static void transpose_images(int dt, const void *src, void *dst, int64_t n, int64_t a, int64_t b, int threads) {
    #pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
    for (int64_t i = 0; i < n; i++) {
        if (dt == OAR_FP32) {
            const float *s = (const float *)src + i * a * b;
            float *d = (float *)dst + i * a * b;
            for (int64_t r = 0; r < a; r++)
                for (int64_t c = 0; c < b; c++) d[c * a + r] = s[r * b + c];
        } else {
            const double *s = (const double *)src + i * a * b;
            double *d = (double *)dst + i * a * b;
            for (int64_t r = 0; r < a; r++)
                for (int64_t c = 0; c < b; c++) d[c * a + r] = s[r * b + c];
        }
    }
}

#define AT(ptr, off, esz) ((void *)((char *)(ptr) + (size_t)(off) * (esz)))
#define CAT_(ptr, off, esz) ((const void *)((const char *)(ptr) + (size_t)(off) * (esz)))

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
        oar_gemm(dt, threads, false, false, MG, P, KG, 1.0, CAT_(w, gr * MG * KG, esz), KG,
                 CAT_(b, gr * KG * P, esz), P, 0.0, AT(y, gr * MG * P, esz), P);
}

/* one image's grads: dw = (first ? 0 : dw) + dY_g col_g^T (when dw);
 * dx = col2im(W_g^T dY_g) (when dx). kcol: the image's columns the forward
 * kept (row stride P), NULL to unfold them into col. */
static void bwd_image(int dt, const conv_geom_t *g, const void *x, const void *w, const void *dy,
                      void *dx, void *dw, bool first, void *col, int threads, const void *kcol) {
    const size_t esz = oar_dtype_size(dt);
    const int64_t P = g->p, KG = g->kg, MG = g->mg;
    if (dw) {
        const void *b = x;
        if (kcol) {
            b = kcol;
        } else if (!g->direct) {
            im2col(dt, x, &g->win, col, P);
            b = col;
        }
        for (int64_t gr = 0; gr < g->groups; gr++)
            oar_gemm(dt, threads, false, true, MG, KG, P, 1.0, CAT_(dy, gr * MG * P, esz), P,
                     CAT_(b, gr * KG * P, esz), P, first ? 0.0 : 1.0, AT(dw, gr * MG * KG, esz), KG);
    }
    if (dx) {
        void *dcol = g->direct ? dx : col;
        for (int64_t gr = 0; gr < g->groups; gr++)
            oar_gemm(dt, threads, true, false, KG, P, MG, 1.0, CAT_(w, gr * MG * KG, esz), KG,
                     CAT_(dy, gr * MG * P, esz), P, 0.0, AT(dcol, gr * KG * P, esz), P);
        if (!g->direct) {
            memset(dx, 0, (size_t)g->img * esz);
            col2im(dt, col, &g->win, P, dx);
        }
    }
}

static int get_inputs(oar_kernel_ctx_t *k, const oar_tensor_t **x, const oar_tensor_t **w) {
    *x = oar_k_input(k, OAR_CONV_INPUT, 0);
    *w = oar_k_input(k, OAR_CONV_FILTER, 0);
    if (!oar_tensor_has_data(*x))
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "Input '%s' has no data", oar_k_input_name(k, OAR_CONV_INPUT, 0));
    if (!oar_tensor_has_data(*w))
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "Filter '%s' has no data", oar_k_input_name(k, OAR_CONV_FILTER, 0));
    return OAR_OK;
}

/* batch mode when every thread gets at least one image */
static bool batch_mode(const conv_geom_t *g) { return g->threads == 1 || g->n >= g->threads; }

/* per-thread work areas in batch mode (one in image mode): columns of bimg
 * images [ktot, bimg*P], then an [M, bimg*P] block for the outputs (or
 * output grads) of those images side by side; NULL for direct convs */
static int64_t work_size(const conv_geom_t *g) { return (g->ktot + g->m) * g->p * g->bimg; }

static int alloc_cols(oar_kernel_ctx_t *k, const conv_geom_t *g, size_t esz, void **col) {
    *col = NULL;
    if (g->direct) return OAR_OK;
    int64_t n = 0;
    if (oar_mul_checked(g->ktot + g->m, g->p, &n) || oar_mul_checked(n, g->bimg, &n) ||
        oar_mul_checked(n, batch_mode(g) ? g->threads : 1, &n) ||
        oar_mul_checked(n, (int64_t)esz, &n) || !(*col = oar_scratch_alloc((size_t)n)))
        return oar_k_error(k, OAR_ERR_NOMEM, "no memory for the im2col buffer (%lld x %lld values)",
                           (long long)g->ktot, (long long)g->p);
    return OAR_OK;
}

/* Filter@GRAD partial sums: chunks of the batch in batch mode, else one */
static int64_t dw_chunks(const conv_geom_t *g) {
    return batch_mode(g) ? (g->n < CONV_DW_CHUNKS ? g->n : CONV_DW_CHUNKS) : 1;
}

/* ---- kept columns ---------------------------------------------------------
 * When conv2d_grad follows on the same Input (oar_k_grad_follows), the
 * forward unfolds the whole batch into one matrix attached to Input
 * (oar_tensor_attach) and the backward takes Filter@GRAD's columns from
 * there instead of unfolding again; it then drops the matrix (it is the
 * only reader), so it never outlives the step, even on a fed tensor the
 * caller keeps. Only where it does not cost more than it saves: the
 * matrix is kh*kw times the images, and writing it out and reading it back
 * is memory traffic an unfold from an image in cache does not make.
 * Measured (docs/DECISIONS.md, "Convolution"): kept everywhere, LeNet
 * trained 8 % slower; a plain unfold (no padding, horizontal stride 1:
 * whole rows copied) never paid; padded or strided ones (element by
 * element) gained 2-15 % alone, nothing in whole networks once matrices
 * passed a few MiB. So: not plain, at most CONV_KEEP_MAX_COL a matrix.
 * The layout is the backward's blocks (the Filter@GRAD chunks split in
 * blocks of bimg images; one image a block in image mode): its GEMMs get
 * the same operands with the same strides as when it unfolds, so the bits
 * are the same. Images [j, j + nb) are a [ktot, nb*P] matrix of row stride
 * nb*P at j * slot values (slot: one image's columns rounded up to 64
 * bytes, so blocks are aligned like the scratch they replace). A forward
 * block that is also a backward block is unfolded there directly; others
 * into scratch as usual, their columns then copied over (from cache). */
typedef struct col_keep {
    void *base;          /* the matrix's data */
    int64_t slot, nch;   /* values per image; Filter@GRAD chunks */
    bool batch;          /* batch mode (else image mode) */
} col_keep_t;

/* what the matrix is derived from and how it is laid out, all of it: a kept
 * matrix is used only for an equal key */
typedef struct col_key {
    char what[8];
    int64_t dtype, nhwc, batch, nch, bimg, slot, n, m, groups;
    oar_win2d_t win;
} col_key_t;

static int64_t col_slot(const conv_geom_t *g, size_t esz) {
    const int64_t line = 64 / (int64_t)esz;
    return (g->ktot * g->p + line - 1) / line * line;
}

static void col_key(const conv_geom_t *g, int dt, col_key_t *key) {
    memset(key, 0, sizeof *key);   /* padding bytes compare too */
    memcpy(key->what, "conv2d", 6);
    key->dtype = dt;
    key->nhwc = g->nhwc;
    key->batch = batch_mode(g);
    key->nch = dw_chunks(g);
    key->bimg = g->bimg;
    key->slot = col_slot(g, oar_dtype_size(dt));
    key->n = g->n;
    key->m = g->m;
    key->groups = g->groups;
    key->win = g->win;
}

/* the backward's block holding image i: images [*j0, *j0 + *nb) */
static void bwd_block_of(const conv_geom_t *g, const col_keep_t *kp, int64_t i, int64_t *j0, int64_t *nb) {
    if (!kp->batch) {
        *j0 = i;
        *nb = 1;
        return;
    }
    const int64_t c = ((i + 1) * kp->nch - 1) / g->n;   /* c*n/nch <= i < (c+1)*n/nch */
    const int64_t c0 = c * g->n / kp->nch, c1 = (c + 1) * g->n / kp->nch;
    *j0 = c0 + (i - c0) / g->bimg * g->bimg;
    *nb = c1 - *j0 < g->bimg ? c1 - *j0 : g->bimg;
}

static void kept_free(void *p) {
    oar_tensor_t *t = p;
    __atomic_sub_fetch(&g_kept_bytes, oar_tensor_numel(t) * (int64_t)oar_dtype_size(oar_tensor_dtype(t)),
                       __ATOMIC_RELAXED);
    __atomic_sub_fetch(&g_kept_live, 1, __ATOMIC_RELAXED);
    oar_tensor_free(t);
}

/* a tensor for the whole batch's columns (counted in the memory stats and
 * the profiler's peak like any tensor); NULL when it would pass the budget
 * or there is no memory for it: then nothing is kept and the backward
 * unfolds */
static oar_tensor_t *keep_new(const conv_geom_t *g, int dt, col_keep_t *kp) {
    int64_t total, bytes;
    kp->slot = col_slot(g, oar_dtype_size(dt));
    kp->nch = dw_chunks(g);
    kp->batch = batch_mode(g);
    if (oar_mul_checked(kp->slot, g->n, &total) || oar_mul_checked(total, (int64_t)oar_dtype_size(dt), &bytes) ||
        bytes > CONV_KEEP_MAX_COL)
        return NULL;
    if (__atomic_add_fetch(&g_kept_bytes, bytes, __ATOMIC_RELAXED) > CONV_KEEP_MAX_BYTES) {
        __atomic_sub_fetch(&g_kept_bytes, bytes, __ATOMIC_RELAXED);
        return NULL;
    }
    oar_tensor_t *t = NULL;
    const int64_t dims[1] = {total};
    if (oar_tensor_new_sized(&t, dims, 1) != OAR_OK ||
        !(kp->base = oar_tensor_mutable_raw_on(t, dt, OAR_PLACE_CPU, 0))) {
        oar_tensor_free(t);
        __atomic_sub_fetch(&g_kept_bytes, bytes, __ATOMIC_RELAXED);
        return NULL;
    }
    __atomic_add_fetch(&g_kept_live, 1, __ATOMIC_RELAXED);
    return t;
}

/* copies the columns of images [i0, i0 + nb), side by side in col (row
 * stride nb*P), to their backward blocks in the kept matrix */
static void keep_copy(int dt, const conv_geom_t *g, const col_keep_t *kp, const void *col, int64_t i0, int64_t nb) {
    const size_t esz = oar_dtype_size(dt);
    const int64_t P = g->p;
    for (int64_t i = i0; i < i0 + nb; i++) {
        int64_t j0, bn;
        bwd_block_of(g, kp, i, &j0, &bn);
        char *dst = AT(kp->base, j0 * kp->slot + (i - j0) * P, esz);
        const char *src = CAT_(col, (i - i0) * P, esz);
        for (int64_t r = 0; r < g->ktot; r++)
            memcpy(dst + (size_t)(r * bn * P) * esz, src + (size_t)(r * nb * P) * esz, (size_t)P * esz);
    }
}

/* images [i0, i0 + nb) of the batch, nb <= bimg: y = W col with the images'
 * columns side by side (one GEMM per group), then the [M, nb*P] block is
 * spread to the images' outputs. work: work_size values. */
static void fwd_block(int dt, const conv_geom_t *g, const void *x, const void *w, void *y, int64_t i0, int64_t nb,
                      void *work, const col_keep_t *kp) {
    const size_t esz = oar_dtype_size(dt);
    const int64_t P = g->p, KG = g->kg, MG = g->mg, L = nb * P;
    /* kept: unfold straight into the kept matrix when this block is a backward block */
    void *col = work;
    bool in_kept = false;
    if (kp) {
        int64_t j0, bn;
        bwd_block_of(g, kp, i0, &j0, &bn);
        if (j0 == i0 && bn == nb) {
            col = AT(kp->base, i0 * kp->slot, esz);
            in_kept = true;
        }
    }
    if (nb == 1) {
        fwd_image(dt, g, CAT_(x, i0 * g->img, esz), w, AT(y, i0 * g->m * P, esz), col, 1);
    } else {
        void *blk = AT(work, g->ktot * P * g->bimg, esz);
        for (int64_t i = 0; i < nb; i++) im2col(dt, CAT_(x, (i0 + i) * g->img, esz), &g->win, AT(col, i * P, esz), L);
        for (int64_t gr = 0; gr < g->groups; gr++)
            oar_gemm(dt, 1, false, false, MG, L, KG, 1.0, CAT_(w, gr * MG * KG, esz), KG, CAT_(col, gr * KG * L, esz), L,
                     0.0, AT(blk, gr * MG * L, esz), L);
        for (int64_t i = 0; i < nb; i++)
            for (int64_t r = 0; r < g->m; r++)
                memcpy(AT(y, ((i0 + i) * g->m + r) * P, esz), CAT_(blk, r * L + i * P, esz), (size_t)P * esz);
    }
    if (kp && !in_kept) keep_copy(dt, g, kp, col, i0, nb);
}

/* the grads of images [i0, i0 + nb), nb <= bimg, their columns side by side:
 * dw = (first ? 0 : dw) + dY dcol^T and dx = col2im(W^T dY), one GEMM each
 * per group; kcol: the block's kept columns, NULL to unfold them */
static void bwd_block(int dt, const conv_geom_t *g, const void *x, const void *w, const void *dy, void *dx, void *dw,
                      bool first, int64_t i0, int64_t nb, void *work, const void *kcol) {
    const size_t esz = oar_dtype_size(dt);
    const int64_t P = g->p, KG = g->kg, MG = g->mg, L = nb * P;
    if (nb == 1) {
        bwd_image(dt, g, CAT_(x, i0 * g->img, esz), w, CAT_(dy, i0 * g->m * P, esz),
                  dx ? AT(dx, i0 * g->img, esz) : NULL, dw, first, work, 1, kcol);
        return;
    }
    void *col = work, *dyb = AT(work, g->ktot * P * g->bimg, esz);
    for (int64_t i = 0; i < nb; i++)
        for (int64_t r = 0; r < g->m; r++)
            memcpy(AT(dyb, r * L + i * P, esz), CAT_(dy, ((i0 + i) * g->m + r) * P, esz), (size_t)P * esz);
    if (dw) {
        const void *b = kcol;
        if (!b) {
            for (int64_t i = 0; i < nb; i++) im2col(dt, CAT_(x, (i0 + i) * g->img, esz), &g->win, AT(col, i * P, esz), L);
            b = col;
        }
        for (int64_t gr = 0; gr < g->groups; gr++)
            oar_gemm(dt, 1, false, true, MG, KG, L, 1.0, CAT_(dyb, gr * MG * L, esz), L, CAT_(b, gr * KG * L, esz), L,
                     first ? 0.0 : 1.0, AT(dw, gr * MG * KG, esz), KG);
    }
    if (dx) {
        for (int64_t gr = 0; gr < g->groups; gr++)
            oar_gemm(dt, 1, true, false, KG, L, MG, 1.0, CAT_(w, gr * MG * KG, esz), KG, CAT_(dyb, gr * MG * L, esz), L,
                     0.0, AT(col, gr * KG * L, esz), L);
        for (int64_t i = 0; i < nb; i++) {
            void *d = AT(dx, (i0 + i) * g->img, esz);
            memset(d, 0, (size_t)g->img * esz);
            col2im(dt, CAT_(col, i * P, esz), &g->win, L, d);
        }
    }
}

/* NCHW scratch of `numel` values for the NHWC path */
static void *scratch(oar_kernel_ctx_t *k, int64_t numel, size_t esz, const char *what) {
    void *p = numel > 0 ? oar_scratch_alloc((size_t)numel * esz) : oar_scratch_alloc(1);
    if (!p) oar_k_error(k, OAR_ERR_NOMEM, "no memory for the NCHW copy of %s (%lld values)", what, (long long)numel);
    return p;
}

/* ---- forward -------------------------------------------------------------- */
static int conv_fwd(oar_kernel_ctx_t *k) {
    const int dt = oar_k_dtype(k);
    const oar_tensor_t *xt, *wt;
    OAR_TRY(get_inputs(k, &xt, &wt));
    conv_geom_t g;
    OAR_TRY(conv_setup(k, xt, wt, &g));
    const void *x = xt->buf->data, *w = wt->buf->data;
    oar_tensor_t *yt = oar_k_output(k, OAR_CONV_OUTPUT, 0);
    if (!yt) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Output is missing");
    const int64_t want[4] = {g.n, g.nhwc ? g.oh : g.m, g.nhwc ? g.ow : g.oh, g.nhwc ? g.m : g.ow};
    void *yout;   /* conv_infer sized it from the same geometry */
    OAR_TRY(oar_k_output_sized(k, OAR_CONV_OUTPUT, "Output", dt, want[0] * want[1] * want[2] * want[3], false, &yout));
    if (g.n == 0) return OAR_OK;
    const size_t esz = oar_dtype_size(dt);
    const int64_t ysz = g.m * g.p, csz = work_size(&g);
    void *xn = NULL, *y = yout;
    if (g.nhwc) {
        if (!(xn = scratch(k, g.n * g.img, esz, "Input"))) return OAR_ERR_NOMEM;
        if (!(y = scratch(k, g.n * ysz, esz, "Output"))) { oar_scratch_free(xn); return OAR_ERR_NOMEM; }
        transpose_images(dt, x, xn, g.n, g.h * g.w, g.c, g.threads);
        x = xn;
    }
    if (depthwise(&g)) {
        if (dt == OAR_FP32) oar_dw_fwd_f32(x, w, y, &g);
        else oar_dw_fwd_f64(x, w, y, &g);
    } else {
        void *col;
        int rc = alloc_cols(k, &g, esz, &col);
        if (rc) { oar_scratch_free(xn); if (y != yout) oar_scratch_free(y); return rc; }
        /* training: keep the columns for conv2d_grad where unfolding costs
         * more than keeping (above); direct convs have none */
        col_keep_t keep;
        oar_tensor_t *kt = !g.plain && oar_k_grad_follows(k) ? keep_new(&g, dt, &keep) : NULL;
        const col_keep_t *kp = kt ? &keep : NULL;
        const int T = g.threads;
        if (batch_mode(&g)) {
            const int64_t nblk = (g.n + g.bimg - 1) / g.bimg;
            #pragma omp parallel num_threads(T) if (T > 1)
            {
                void *mine = col ? AT(col, (int64_t)omp_get_thread_num() * csz, esz) : NULL;
                #pragma omp for schedule(dynamic, 1)
                for (int64_t b = 0; b < nblk; b++) {
                    const int64_t i0 = b * g.bimg;
                    fwd_block(dt, &g, x, w, y, i0, g.n - i0 < g.bimg ? g.n - i0 : g.bimg, mine, kp);
                }
            }
        } else {
            for (int64_t i = 0; i < g.n; i++)
                fwd_image(dt, &g, CAT_(x, i * g.img, esz), w, AT(y, i * ysz, esz),
                          kp ? AT(kp->base, i * kp->slot, esz) : col, T);
        }
        oar_scratch_free(col);
        if (kt) {
            col_key_t key;
            col_key(&g, dt, &key);
            /* on failure (no memory for the key) the backward unfolds */
            if (oar_tensor_attach(oar_k_input(k, OAR_CONV_INPUT, 0), &key, sizeof key, kt, kept_free) != OAR_OK)
                kept_free(kt);
        }
    }
    if (g.nhwc) {
        transpose_images(dt, y, yout, g.n, g.m, g.p, g.threads);
        oar_scratch_free(y);
        oar_scratch_free(xn);
    }
    return OAR_OK;
}

/* ---- backward ------------------------------------------------------------- */
/* the grad output's data (sized like `like`), NULL with *rc OK when not wanted */
static void *grad_out(oar_kernel_ctx_t *k, int slot, const oar_tensor_t *like, int dt, int *rc) {
    *rc = OAR_OK;
    oar_tensor_t *t = oar_k_output(k, slot, 0);
    if (!t) return NULL;
    /* conv_grad_infer sized it like its input */
    void *p;
    *rc = oar_k_output_sized(k, slot, slot == OAR_CONV_DINPUT ? "Input@GRAD" : "Filter@GRAD", dt,
                             oar_tensor_numel_of(like), false, &p);
    return p;
}

/* kept: the columns the forward kept (NULL: unfold), x then unread */
static int conv_bwd_nchw(oar_kernel_ctx_t *k, int dt, const conv_geom_t *gp, const void *x, const void *w,
                         const void *dy, void *dx, void *dw, const void *kept) {
    const conv_geom_t g = *gp;
    if (depthwise(&g)) {
        if (dt == OAR_FP32) {
            if (dx) oar_dw_bwd_data_f32(w, dy, dx, &g);
            if (dw) oar_dw_bwd_filter_f32(x, dy, dw, &g);
        } else {
            if (dx) oar_dw_bwd_data_f64(w, dy, dx, &g);
            if (dw) oar_dw_bwd_filter_f64(x, dy, dw, &g);
        }
        return OAR_OK;
    }
    const size_t esz = oar_dtype_size(dt);
    const int64_t ysz = g.m * g.p, csz = work_size(&g), wsz = g.m * g.kg;
    const int T = g.threads;
    const bool batch = batch_mode(&g);
    void *col, *dwx = NULL;
    OAR_TRY(alloc_cols(k, &g, esz, &col));
    /* chunk c of the batch sums its images' Filter@GRAD into dw (c = 0) or its
     * own buffer (written by its first image), added in chunk order at the end */
    const int64_t nch = dw_chunks(&g), slot = col_slot(&g, esz);
    if (dw && nch > 1) {
        dwx = oar_scratch_alloc((size_t)(nch - 1) * (size_t)wsz * esz);
        if (!dwx) {
            oar_scratch_free(col);
            return oar_k_error(k, OAR_ERR_NOMEM, "no memory for %lld Filter@GRAD partial sums", (long long)nch);
        }
    }
    if (batch) {
        #pragma omp parallel num_threads(T) if (T > 1)
        {
            void *mine = col ? AT(col, (int64_t)omp_get_thread_num() * csz, esz) : NULL;
            #pragma omp for schedule(dynamic, 1)
            for (int64_t c = 0; c < nch; c++) {
                void *dwc = !dw ? NULL : c == 0 ? dw : AT(dwx, (c - 1) * wsz, esz);
                const int64_t c0 = c * g.n / nch, c1 = (c + 1) * g.n / nch;
                for (int64_t i = c0; i < c1; i += g.bimg)
                    bwd_block(dt, &g, x, w, dy, dx, dwc, i == c0, i, c1 - i < g.bimg ? c1 - i : g.bimg, mine,
                              kept ? CAT_(kept, i * slot, esz) : NULL);
            }
        }
    } else {
        for (int64_t i = 0; i < g.n; i++)
            bwd_image(dt, &g, CAT_(x, i * g.img, esz), w, CAT_(dy, i * ysz, esz),
                      dx ? AT(dx, i * g.img, esz) : NULL, dw, i == 0, col, T, kept ? CAT_(kept, i * slot, esz) : NULL);
    }
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
        oar_scratch_free(dwx);
    }
    oar_scratch_free(col);
    return OAR_OK;
}

/* the NCHW backward on transposed copies; kept columns replace the copy of
 * Input (x is then unread) */
static int conv_bwd_nhwc(oar_kernel_ctx_t *k, int dt, const conv_geom_t *g, const void *x, const void *w,
                         const void *dy, void *dxout, void *dw, const void *kept) {
    const size_t esz = oar_dtype_size(dt);
    void *xn = kept ? NULL : scratch(k, g->n * g->img, esz, "Input");
    void *dyn = xn || kept ? scratch(k, g->n * g->m * g->p, esz, "Output@GRAD") : NULL;
    void *dxn = dyn && dxout ? scratch(k, g->n * g->img, esz, "Input@GRAD") : NULL;
    int rc = OAR_ERR_NOMEM;
    if ((xn || kept) && dyn && (!dxout || dxn)) {
        if (xn) transpose_images(dt, x, xn, g->n, g->h * g->w, g->c, g->threads);
        transpose_images(dt, dy, dyn, g->n, g->p, g->m, g->threads);
        rc = conv_bwd_nchw(k, dt, g, xn ? xn : x, w, dyn, dxn, dw, kept);
        if (rc == OAR_OK && dxout) transpose_images(dt, dxn, dxout, g->n, g->c, g->h * g->w, g->threads);
    }
    oar_scratch_free(xn); oar_scratch_free(dyn); oar_scratch_free(dxn);
    return rc;
}

/* conv2d_grad once its geometry is known; key: that of the columns the
 * forward may have kept */
static int conv_bwd_run(oar_kernel_ctx_t *k, int dt, const conv_geom_t *gp, const oar_tensor_t *xt,
                        const oar_tensor_t *wt, const col_key_t *key) {
    const conv_geom_t g = *gp;
    const oar_tensor_t *dyt = oar_k_input(k, OAR_CONV_DOUTPUT, 0);
    if (!oar_tensor_has_data(dyt))
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "Output@GRAD '%s' has no data",
                           oar_k_input_name(k, OAR_CONV_DOUTPUT, 0));
    const int64_t want[4] = {g.n, g.nhwc ? g.oh : g.m, g.nhwc ? g.ow : g.oh, g.nhwc ? g.m : g.ow};
    if (dyt->ndim != 4 || memcmp(dyt->dims, want, sizeof want) != 0 || dyt->dtype != dt) {
        char a[128], b[128];
        return oar_k_error(k, OAR_ERR_SHAPE, "Output@GRAD '%s' is %s %s, expected %s %s",
                           oar_k_input_name(k, OAR_CONV_DOUTPUT, 0), oar_dtype_name(dyt->dtype),
                           oar_shape_str(dyt->dims, dyt->ndim, a, sizeof a), oar_dtype_name(dt),
                           oar_shape_str(want, 4, b, sizeof b));
    }
    const void *x = xt->buf->data, *w = wt->buf->data, *dy = dyt->buf->data;
    int rc;
    void *dxout = grad_out(k, OAR_CONV_DINPUT, xt, dt, &rc);
    if (rc) return rc;
    void *dw = grad_out(k, OAR_CONV_DFILTER, wt, dt, &rc);
    if (rc) return rc;
    if (!dxout && !dw) return OAR_OK;
    if (g.n == 0) {
        if (dw) memset(dw, 0, (size_t)oar_tensor_numel_of(wt) * oar_dtype_size(dt));
        return OAR_OK;
    }
    /* looked up once the outputs are allocated */
    const oar_tensor_t *kt = !dw || depthwise(&g) || g.plain ? NULL : oar_tensor_attached(xt, key, sizeof *key);
    const void *kept = kt ? kt->buf->data : NULL;
    if (!g.nhwc) return conv_bwd_nchw(k, dt, &g, x, w, dy, dxout, dw, kept);
    return conv_bwd_nhwc(k, dt, &g, x, w, dy, dxout, dw, kept);
}

static int conv_bwd(oar_kernel_ctx_t *k) {
    const int dt = oar_k_dtype(k);
    const oar_tensor_t *xt, *wt;
    OAR_TRY(get_inputs(k, &xt, &wt));
    conv_geom_t g;
    OAR_TRY(conv_setup(k, xt, wt, &g));
    col_key_t key;
    col_key(&g, dt, &key);
    const int rc = conv_bwd_run(k, dt, &g, xt, wt, &key);
    /* this op is the only reader of the columns the forward kept: they go
     * now, on every way out, rather than with Input's buffer (a fed tensor
     * the caller holds, a ring of batches, would keep them step after step) */
    oar_tensor_t *xin = oar_k_input(k, OAR_CONV_INPUT, 0);
    if (!depthwise(&g) && !g.plain && oar_tensor_attached(xin, &key, sizeof key)) oar_tensor_touch(xin);
    return rc;
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
