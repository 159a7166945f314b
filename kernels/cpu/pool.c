/* pool.c — CPU kernels of pool2d and pool2d_grad (max/avg; NCHW, and NHWC
 * through NCHW copies transposed in and out).
 *
 * Window rows of output i: [i*s - p, i*s - p + k) clipped to the input
 * (adaptive: [floor(i*H/OH), ceil((i+1)*H/OH))). An average divides by the
 * clipped window size when `exclusive` (or adaptive), else by kh*kw, as Fluid.
 * A window that lies wholly in the padding yields 0 and passes no gradient.
 * Max pooling routes the gradient to the first maximum in row-major window
 * order; a NaN in a window makes its maximum NaN, so NaNs propagate.
 *
 * The typed part is written once below the #else and instantiated for float
 * and double by including this file into itself. */
#ifndef OAR_POOL_T
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "im2col.h"
#include "scratch.h"
#include "desc.h"
#include "ops/pool.h"

typedef struct pool_geom {
    int64_t planes, h, w, oh, ow;  /* planes = N*C */
    int64_t n, c;
    int64_t kh, kw, sh, sw, pt, pl;
    bool is_max, exclusive, adaptive, nhwc;
    bool disjoint, covers;         /* windows never overlap; and tile the input exactly */
    bool max2;                     /* 2x2/2 max windows that tile the input (pool_max2_*_f32) */
} pool_geom_t;

static inline void window(int64_t i, int64_t in, int64_t out, int64_t k, int64_t s, int64_t p,
                          bool adaptive, int64_t *lo, int64_t *hi) {
    if (adaptive) {
        *lo = i * in / out;
        *hi = ((i + 1) * in + out - 1) / out;
        return;
    }
    int64_t a = i * s - p, b = a + k;
    *lo = a < 0 ? 0 : a;
    *hi = b > in ? in : b;
}

#define POOL_PAR_MIN (1 << 15)

#define OAR_POOL_T float
#define OAR_POOL_SUF f32
#include "pool.c"
#undef OAR_POOL_T
#undef OAR_POOL_SUF
#define OAR_POOL_T double
#define OAR_POOL_SUF f64
#include "pool.c"
#undef OAR_POOL_T
#undef OAR_POOL_SUF

/* 2x2/2 max pooling that tiles the input, float32: each window's gradient
 * goes to its first element equal to Out (the first NaN when Out is NaN).
 * Selections are bit masks, not branches: which element holds the maximum
 * is unpredictable, and mispredicted branches made this pass slower than
 * clearing dx and adding into it. */
static void pool_max2_bwd_f32(const float *x, const float *y, const float *dy, float *dx, const pool_geom_t *g) {
    const int64_t H = g->h, W = g->w, OH = g->oh, OW = g->ow;
    #pragma omp parallel for schedule(static) if (g->planes * H * W >= POOL_PAR_MIN)
    for (int64_t pl = 0; pl < g->planes; pl++) {
        for (int64_t i = 0; i < OH; i++) {
            const float *r0 = x + (pl * H + 2 * i) * W, *r1 = r0 + W;
            const float *m = y + (pl * OH + i) * OW, *d = dy + (pl * OH + i) * OW;
            float *q0 = dx + (pl * H + 2 * i) * W, *q1 = q0 + W;
            for (int64_t j = 0; j < OW; j++) {
                const float mv = m[j], a0 = r0[2 * j], a1 = r0[2 * j + 1], a2 = r1[2 * j];
                uint32_t dv, e0, e1, e2;
                memcpy(&dv, &d[j], sizeof dv);
                if (__builtin_expect(mv != mv, 0)) {
                    e0 = a0 != a0; e1 = a1 != a1; e2 = a2 != a2;
                } else {
                    e0 = a0 == mv; e1 = a1 == mv; e2 = a2 == mv;
                }
                const uint32_t t1 = e1 & ~e0, t2 = e2 & ~(e0 | e1), t3 = ~(e0 | e1 | e2) & 1u;
                const uint32_t v0 = dv & -e0, v1 = dv & -t1, v2 = dv & -t2, v3 = dv & -t3;
                memcpy(&q0[2 * j], &v0, sizeof v0);
                memcpy(&q0[2 * j + 1], &v1, sizeof v1);
                memcpy(&q1[2 * j], &v2, sizeof v2);
                memcpy(&q1[2 * j + 1], &v3, sizeof v3);
            }
        }
    }
}

/* 2x2/2 max pooling that tiles the input, float32: the generic loop's
 * arithmetic for its full 2x2 windows, without the per-window bounds test
 * that kept the compiler from vectorizing it (4 % of a LeNet step before) */
static void pool_max2_fwd_f32(const float *x, float *y, const pool_geom_t *g) {
    const int64_t H = g->h, W = g->w, OH = g->oh, OW = g->ow;
    #pragma omp parallel for schedule(static) if (g->planes * H * W >= POOL_PAR_MIN)
    for (int64_t pl = 0; pl < g->planes; pl++) {
        for (int64_t i = 0; i < OH; i++) {
            const float *r0 = x + (pl * H + 2 * i) * W, *r1 = r0 + W;
            float *o = y + (pl * OH + i) * OW;
            for (int64_t j = 0; j < OW; j++) {
                const float a0 = r0[2 * j], a1 = r0[2 * j + 1], a2 = r1[2 * j], a3 = r1[2 * j + 1];
                const float m01 = a1 > a0 ? a1 : a0, m23 = a3 > a2 ? a3 : a2, m = m23 > m01 ? m23 : m01;
                const bool nan = (a0 != a0) | (a1 != a1) | (a2 != a2) | (a3 != a3);
                o[j] = nan ? (float)NAN : m;
            }
        }
    }
}


static int pool_err(oar_kernel_ctx_t *k, int status, const oar_tensor_t *x, const char *why) {
    char xs[128];
    oar_shape_str(x->dims, x->ndim, xs, sizeof xs);
    return oar_k_error(k, status, "X '%s' %s: %s", oar_k_input_name(k, OAR_POOL_X, 0), xs, why);
}

static int pool_setup(oar_kernel_ctx_t *k, const oar_tensor_t *x, pool_geom_t *g) {
    const oar_pool_attrs_t *a = oar_k_attrs(k);
    if (x->ndim != 4) return pool_err(k, OAR_ERR_SHAPE, x, a->nhwc ? "must be 4-D NHWC" : "must be 4-D NCHW");
    g->nhwc = a->nhwc;
    g->n = x->dims[0];
    g->c = a->nhwc ? x->dims[3] : x->dims[1];
    const int64_t in[2] = {a->nhwc ? x->dims[1] : x->dims[2], a->nhwc ? x->dims[2] : x->dims[3]};
    g->is_max = a->type == OAR_POOL_MAX;
    g->exclusive = a->exclusive;
    g->adaptive = a->adaptive;
    int64_t ks[2] = {a->ks[0], a->ks[1]}, st[2] = {a->st[0], a->st[1]};
    int64_t pd[4] = {a->pd[0], a->pd[1], a->pd[2], a->pd[3]};
    if (!a->global && (ks[0] < 1 || ks[1] < 1))
        return pool_err(k, OAR_ERR_INVALID, x, "attr ksize must hold 2 values >= 1");
    /* the geometry pool_infer sized Out with (window.h) */
    oar_pool_win_t pw;
    const int r = oar_win_pool_plan(a->algo, a->global, a->adaptive, a->ceil_mode, in, ks, st, pd, &pw);
    if (r == OAR_WIN_OVERFLOW) return pool_err(k, OAR_ERR_SHAPE, x, "too large");
    if (r == OAR_WIN_EMPTY) {
        char why[256];
        snprintf(why, sizeof why, "output would be empty with ksize {%lld, %lld}, strides {%lld, %lld}, "
                 "paddings {%lld, %lld, %lld, %lld}", (long long)pw.ks[0], (long long)pw.ks[1], (long long)pw.st[0],
                 (long long)pw.st[1], (long long)pw.pd[0], (long long)pw.pd[1], (long long)pw.pd[2],
                 (long long)pw.pd[3]);
        return pool_err(k, OAR_ERR_SHAPE, x, why);
    }
    g->adaptive = pw.adaptive;
    memcpy(ks, pw.ks, sizeof ks);
    memcpy(pd, pw.pd, sizeof pd);
    const int64_t o[2] = {pw.out[0], pw.out[1]};
    if (oar_mul_checked(g->n, g->c, &g->planes)) return pool_err(k, OAR_ERR_SHAPE, x, "too large");
    g->h = in[0]; g->w = in[1]; g->oh = o[0]; g->ow = o[1];
    g->kh = ks[0]; g->kw = ks[1]; g->sh = st[0]; g->sw = st[1]; g->pt = pd[0]; g->pl = pd[2];
    /* windows that never overlap: the backward pass assigns instead of adding */
    g->disjoint = !g->adaptive && g->sh >= g->kh && g->sw >= g->kw;
    /* ... and cover the whole input: nothing is left to clear first */
    g->covers = g->disjoint && g->sh == g->kh && g->sw == g->kw && g->pt == 0 && g->pl == 0 &&
                g->oh * g->kh == g->h && g->ow * g->kw == g->w;
    g->max2 = g->is_max && g->covers && g->kh == 2 && g->kw == 2;
    return OAR_OK;
}

/* [lo, hi) window bounds of every output row and column, computed once */
static int64_t *window_bounds(oar_kernel_ctx_t *k, const pool_geom_t *g) {
    int64_t *b = oar_scratch_alloc(sizeof(int64_t) * 2 * (size_t)(g->oh + g->ow));
    if (!b) {
        oar_k_error(k, OAR_ERR_NOMEM, "no memory for %lld window bounds", (long long)(g->oh + g->ow));
        return NULL;
    }
    for (int64_t i = 0; i < g->oh; i++) window(i, g->h, g->oh, g->kh, g->sh, g->pt, g->adaptive, &b[2 * i], &b[2 * i + 1]);
    int64_t *wb = b + 2 * g->oh;
    for (int64_t j = 0; j < g->ow; j++) window(j, g->w, g->ow, g->kw, g->sw, g->pl, g->adaptive, &wb[2 * j], &wb[2 * j + 1]);
    return b;
}

static const oar_tensor_t *input_x(oar_kernel_ctx_t *k, int dt) {
    const oar_tensor_t *x = oar_k_input(k, OAR_POOL_X, 0);
    if (!oar_tensor_has_data(x)) {
        oar_k_error(k, OAR_ERR_NOT_FOUND, "X '%s' has no data", oar_k_input_name(k, OAR_POOL_X, 0));
        return NULL;
    }
    if (x->dtype != dt) {
        oar_k_error(k, OAR_ERR_DTYPE, "X '%s' is %s, expected %s", oar_k_input_name(k, OAR_POOL_X, 0),
                    oar_dtype_name(x->dtype), oar_dtype_name(dt));
        return NULL;
    }
    return x;
}

/* [n, a, b] -> [n, b, a] per image (NHWC <-> NCHW) */
static void transpose_images(int dt, const void *src, void *dst, int64_t n, int64_t a, int64_t b) {
    #pragma omp parallel for schedule(static) if (n * a * b >= POOL_PAR_MIN)
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

static void *scratch(oar_kernel_ctx_t *k, int64_t numel, size_t esz) {
    void *p = oar_scratch_alloc(numel > 0 ? (size_t)numel * esz : 1);
    if (!p) oar_k_error(k, OAR_ERR_NOMEM, "no memory for an NCHW copy of %lld values", (long long)numel);
    return p;
}

static int pool_fwd(oar_kernel_ctx_t *k) {
    const int dt = oar_k_dtype(k);
    const oar_tensor_t *x = input_x(k, dt);
    if (!x) return OAR_ERR_NOT_FOUND;
    pool_geom_t g;
    OAR_TRY(pool_setup(k, x, &g));
    oar_tensor_t *yt = oar_k_output(k, OAR_POOL_OUT, 0);
    if (!yt) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Out is missing");
    const int64_t want[4] = {g.n, g.nhwc ? g.oh : g.c, g.nhwc ? g.ow : g.oh, g.nhwc ? g.c : g.ow};
    const void *xd = x->buf->data;
    void *yout;   /* pool_infer sized it from the same geometry */
    OAR_TRY(oar_k_output_sized(k, OAR_POOL_OUT, "Out", dt, want[0] * want[1] * want[2] * want[3], false, &yout));
    if (g.planes == 0) return OAR_OK;
    int64_t *b = window_bounds(k, &g);
    if (!b) return OAR_ERR_NOMEM;
    const size_t esz = oar_dtype_size(dt);
    void *xn = NULL, *y = yout;
    if (g.nhwc) {
        xn = scratch(k, g.planes * g.h * g.w, esz);
        y = xn ? scratch(k, g.planes * g.oh * g.ow, esz) : NULL;
        if (!xn || !y) { oar_scratch_free(xn); oar_scratch_free(b); return OAR_ERR_NOMEM; }
        transpose_images(dt, xd, xn, g.n, g.h * g.w, g.c);
        xd = xn;
    }
    if (dt == OAR_FP32 && g.max2) pool_max2_fwd_f32(xd, y, &g);
    else if (dt == OAR_FP32) pool_fwd_f32(xd, y, &g, b, b + 2 * g.oh);
    else pool_fwd_f64(xd, y, &g, b, b + 2 * g.oh);
    if (g.nhwc) {
        transpose_images(dt, y, yout, g.n, g.c, g.oh * g.ow);
        oar_scratch_free(y);
        oar_scratch_free(xn);
    }
    oar_scratch_free(b);
    return OAR_OK;
}

static int pool_bwd(oar_kernel_ctx_t *k) {
    const int dt = oar_k_dtype(k);
    const oar_tensor_t *x = input_x(k, dt);
    if (!x) return OAR_ERR_NOT_FOUND;
    pool_geom_t g;
    OAR_TRY(pool_setup(k, x, &g));
    const oar_tensor_t *dy = oar_k_input(k, OAR_POOL_DOUT, 0);
    const int64_t want[4] = {g.n, g.nhwc ? g.oh : g.c, g.nhwc ? g.ow : g.oh, g.nhwc ? g.c : g.ow};
    if (!oar_tensor_has_data(dy))
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "Out@GRAD '%s' has no data", oar_k_input_name(k, OAR_POOL_DOUT, 0));
    if (dy->ndim != 4 || memcmp(dy->dims, want, sizeof want) != 0 || dy->dtype != dt) {
        char a[128], b[128];
        return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD '%s' is %s %s, expected %s %s",
                           oar_k_input_name(k, OAR_POOL_DOUT, 0), oar_dtype_name(dy->dtype),
                           oar_shape_str(dy->dims, dy->ndim, a, sizeof a), oar_dtype_name(dt),
                           oar_shape_str(want, 4, b, sizeof b));
    }
    oar_tensor_t *dxt = oar_k_output(k, OAR_POOL_DX, 0);
    if (!dxt) return OAR_OK;
    const void *xd = x->buf->data, *dyd = dy->buf->data;
    void *dxout;   /* sized like X by pool_grad_infer */
    OAR_TRY(oar_k_output_sized(k, OAR_POOL_DX, "X@GRAD", dt, oar_tensor_numel_of(x), false, &dxout));
    if (g.planes == 0) return OAR_OK;
    int64_t *b = window_bounds(k, &g);
    if (!b) return OAR_ERR_NOMEM;
    const size_t esz = oar_dtype_size(dt);
    void *xn = NULL, *dyn = NULL, *dx = dxout;
    if (g.nhwc) {
        xn = scratch(k, g.planes * g.h * g.w, esz);
        dyn = xn ? scratch(k, g.planes * g.oh * g.ow, esz) : NULL;
        dx = dyn ? scratch(k, g.planes * g.h * g.w, esz) : NULL;
        if (!dx) { oar_scratch_free(xn); oar_scratch_free(dyn); oar_scratch_free(b); return OAR_ERR_NOMEM; }
        transpose_images(dt, xd, xn, g.n, g.h * g.w, g.c);
        transpose_images(dt, dyd, dyn, g.n, g.oh * g.ow, g.c);
        xd = xn;
        dyd = dyn;
    }
    /* 2x2/2 max pooling that tiles the input (LeNet's): the gradient goes to
     * the first element equal to Out (the first NaN when Out is NaN), found
     * in one branch-free pass per row */
    const oar_tensor_t *yt = g.nhwc ? NULL : oar_k_input(k, OAR_POOL_OUT_IN, 0);
    const bool max2 = dt == OAR_FP32 && g.max2 && oar_tensor_has_data(yt) && yt->dtype == dt && yt->ndim == 4 &&
                      memcmp(yt->dims, want, sizeof want) == 0;
    if (max2) pool_max2_bwd_f32(xd, yt->buf->data, dyd, dx, &g);
    else if (dt == OAR_FP32) pool_bwd_f32(xd, dyd, dx, &g, b, b + 2 * g.oh);
    else pool_bwd_f64(xd, dyd, dx, &g, b, b + 2 * g.oh);
    if (g.nhwc) {
        transpose_images(dt, dx, dxout, g.n, g.c, g.h * g.w);
        oar_scratch_free(dx); oar_scratch_free(dyn); oar_scratch_free(xn);
    }
    oar_scratch_free(b);
    return OAR_OK;
}

static int pool2d_f32(oar_kernel_ctx_t *k) { return pool_fwd(k); }
static int pool2d_f64(oar_kernel_ctx_t *k) { return pool_fwd(k); }
static int pool2d_grad_f32(oar_kernel_ctx_t *k) { return pool_bwd(k); }
static int pool2d_grad_f64(oar_kernel_ctx_t *k) { return pool_bwd(k); }
OAR_REGISTER_KERNEL("pool2d", OAR_PLACE_CPU, OAR_FP32, pool2d_f32)
OAR_REGISTER_KERNEL("pool2d", OAR_PLACE_CPU, OAR_FP64, pool2d_f64)
OAR_REGISTER_KERNEL("pool2d_grad", OAR_PLACE_CPU, OAR_FP32, pool2d_grad_f32)
OAR_REGISTER_KERNEL("pool2d_grad", OAR_PLACE_CPU, OAR_FP64, pool2d_grad_f64)

#else /* typed part */
#define T OAR_POOL_T
#define FN_(name, suf) name##_##suf
#define FN(name, suf) FN_(name, suf)

/* hb/wb: window bounds per output row/column, as [lo, hi) pairs */
static void FN(pool_fwd, OAR_POOL_SUF)(const T *x, T *y, const pool_geom_t *g, const int64_t *hb,
                                       const int64_t *wb) {
    const int64_t H = g->h, W = g->w, OH = g->oh, OW = g->ow;
    const bool is_max = g->is_max, by_window = g->exclusive || g->adaptive;
    const T full = (T)(g->kh * g->kw);
    #pragma omp parallel for schedule(static) if (g->planes * OH * OW * g->kh * g->kw >= POOL_PAR_MIN)
    for (int64_t pl = 0; pl < g->planes; pl++) {
        const T *xp = x + pl * H * W;
        T *yp = y + pl * OH * OW;
        for (int64_t i = 0; i < OH; i++) {
            const int64_t h0 = hb[2 * i], h1 = hb[2 * i + 1];
            for (int64_t j = 0; j < OW; j++) {
                const int64_t w0 = wb[2 * j], w1 = wb[2 * j + 1];
                T r = 0;
                if (h1 - h0 == 2 && w1 - w0 == 2) {
                    /* the common full 2x2 window, unrolled */
                    const T *p = xp + h0 * W + w0;
                    const T a0 = p[0], a1 = p[1], a2 = p[W], a3 = p[W + 1];
                    if (is_max) {
                        const T m01 = a1 > a0 ? a1 : a0, m23 = a3 > a2 ? a3 : a2;
                        r = m23 > m01 ? m23 : m01;
                        if ((a0 != a0) | (a1 != a1) | (a2 != a2) | (a3 != a3)) r = (T)NAN;
                    } else {
                        r = (a0 + a1 + a2 + a3) / (by_window ? (T)4 : full);
                    }
                } else if (h0 < h1 && w0 < w1) {
                    if (is_max) {
                        /* branch-free: the max as vmaxss, NaNs tracked on the side */
                        int nan = 0;
                        r = xp[h0 * W + w0];
                        for (int64_t a = h0; a < h1; a++)
                            for (int64_t b = w0; b < w1; b++) {
                                const T v = xp[a * W + b];
                                r = v > r ? v : r;
                                nan |= v != v;
                            }
                        if (nan) r = (T)NAN;
                    } else {
                        T sum = 0;
                        for (int64_t a = h0; a < h1; a++)
                            for (int64_t b = w0; b < w1; b++) sum += xp[a * W + b];
                        r = sum / (by_window ? (T)((h1 - h0) * (w1 - w0)) : full);
                    }
                }
                yp[i * OW + j] = r;
            }
        }
    }
}

/* dx of each plane is cleared here (in cache) unless the windows tile it;
 * disjoint windows assign their share instead of adding it */
static void FN(pool_bwd, OAR_POOL_SUF)(const T *x, const T *dy, T *dx, const pool_geom_t *g, const int64_t *hb,
                                       const int64_t *wb) {
    const int64_t H = g->h, W = g->w, OH = g->oh, OW = g->ow;
    const bool is_max = g->is_max, by_window = g->exclusive || g->adaptive;
    const bool assign = g->disjoint, covers = g->covers;
    const T full = (T)(g->kh * g->kw);
    /* planes write disjoint parts of dx */
    #pragma omp parallel for schedule(static) if (g->planes * OH * OW * g->kh * g->kw >= POOL_PAR_MIN)
    for (int64_t pl = 0; pl < g->planes; pl++) {
        const T *xp = x + pl * H * W;
        const T *dyp = dy + pl * OH * OW;
        T *dxp = dx + pl * H * W;
        if (!covers) memset(dxp, 0, sizeof(T) * (size_t)(H * W));
        for (int64_t i = 0; i < OH; i++) {
            const int64_t h0 = hb[2 * i], h1 = hb[2 * i + 1];
            for (int64_t j = 0; j < OW; j++) {
                const int64_t w0 = wb[2 * j], w1 = wb[2 * j + 1];
                if (h0 >= h1 || w0 >= w1) continue;
                const T d = dyp[i * OW + j];
                if (h1 - h0 == 2 && w1 - w0 == 2) {
                    /* the common full 2x2 window, unrolled and branch-free: the
                     * first NaN, else the first element equal to the maximum */
                    T *q = dxp + h0 * W + w0;
                    if (is_max) {
                        const T *p = xp + h0 * W + w0;
                        const T a0 = p[0], a1 = p[1], a2 = p[W], a3 = p[W + 1];
                        const T m01 = a1 > a0 ? a1 : a0, m23 = a3 > a2 ? a3 : a2;
                        const T m = m23 > m01 ? m23 : m01;
                        const unsigned nan = (unsigned)(a0 != a0) | (unsigned)(a1 != a1) << 1 |
                                             (unsigned)(a2 != a2) << 2 | (unsigned)(a3 != a3) << 3;
                        const unsigned eq = (unsigned)(a0 == m) | (unsigned)(a1 == m) << 1 |
                                            (unsigned)(a2 == m) << 2 | (unsigned)(a3 == m) << 3;
                        const unsigned first = (unsigned)__builtin_ctz(nan ? nan : eq);
                        if (assign) {
                            q[0] = first == 0 ? d : 0;
                            q[1] = first == 1 ? d : 0;
                            q[W] = first == 2 ? d : 0;
                            q[W + 1] = first == 3 ? d : 0;
                        } else {
                            q[(first >> 1) * W + (first & 1)] += d;
                        }
                    } else {
                        const T sh = d / (by_window ? (T)4 : full);
                        if (assign) { q[0] = sh; q[1] = sh; q[W] = sh; q[W + 1] = sh; }
                        else { q[0] += sh; q[1] += sh; q[W] += sh; q[W + 1] += sh; }
                    }
                    continue;
                }
                if (is_max) {
                    int64_t at = h0 * W + w0;
                    T r = xp[at];
                    for (int64_t a = h0; a < h1; a++)
                        for (int64_t b = w0; b < w1; b++) {
                            const T v = xp[a * W + b];
                            /* the first maximum wins ties; the first NaN wins outright.
                             * Selects rather than branches: the argmax of real data is
                             * unpredictable */
                            const int64_t take = (v > r) | ((v != v) & (r == r));
                            r = take ? v : r;
                            at ^= (at ^ (a * W + b)) & -take;
                        }
                    if (assign)
                        for (int64_t a = h0; a < h1; a++)
                            for (int64_t b = w0; b < w1; b++) dxp[a * W + b] = 0;
                    dxp[at] += d;
                } else {
                    const T s = d / (by_window ? (T)((h1 - h0) * (w1 - w0)) : full);
                    if (assign)
                        for (int64_t a = h0; a < h1; a++)
                            for (int64_t b = w0; b < w1; b++) dxp[a * W + b] = s;
                    else
                        for (int64_t a = h0; a < h1; a++)
                            for (int64_t b = w0; b < w1; b++) dxp[a * W + b] += s;
                }
            }
        }
    }
}

#undef T
#undef FN
#undef FN_
#endif
