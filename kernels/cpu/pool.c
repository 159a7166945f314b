/* pool.c — CPU kernels of pool2d and pool2d_grad (NCHW, max/avg).
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
#include <stdlib.h>
#include <string.h>
#include "im2col.h"
#include "desc.h"

typedef struct pool_geom {
    int64_t planes, h, w, oh, ow;  /* planes = N*C */
    int64_t kh, kw, sh, sw, pt, pl;
    bool is_max, exclusive, adaptive;
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

static int pool_setup(oar_kernel_ctx_t *k, const oar_tensor_t *x, pool_geom_t *g) {
    const oar_op_desc_t *op = oar_k_op(k);
    const char *xn = oar_k_in_name(k, "X", 0);
    char xs[128];
    oar_shape_str(x->dims, x->ndim, xs, sizeof xs);
    if (x->ndim != 4)
        return oar_k_error(k, OAR_ERR_SHAPE, "X '%s' must be 4-D NCHW, got shape %s", xn, xs);
    const char *type = oar_attr_s(op, "pooling_type");
    if (!type || (strcmp(type, "max") != 0 && strcmp(type, "avg") != 0))
        return oar_k_error(k, OAR_ERR_INVALID, "attr pooling_type = \"%s\" must be \"max\" or \"avg\"",
                           type ? type : "");
    g->is_max = strcmp(type, "max") == 0;
    g->exclusive = oar_attr_b(op, "exclusive");
    g->adaptive = oar_attr_b(op, "adaptive");
    bool global = oar_attr_b(op, "global_pooling"), ceil_mode = oar_attr_b(op, "ceil_mode");
    int64_t ks[2], st[2], pd[4];
    OAR_TRY(oar_win_attr_pair(k, "strides", 1, st));
    OAR_TRY(oar_win_attr_pads(k, pd));
    if (global) {
        ks[0] = x->dims[2]; ks[1] = x->dims[3];
        pd[0] = pd[1] = pd[2] = pd[3] = 0;
        g->adaptive = false;
    } else {
        OAR_TRY(oar_win_attr_pair(k, "ksize", 0, ks));
    }
    for (int i = 0; i < 2; i++)
        if ((!global && ks[i] < 1) || st[i] < 1 || pd[2 * i] < 0 || pd[2 * i + 1] < 0)
            return oar_k_error(k, OAR_ERR_INVALID,
                               "ksize {%lld, %lld} and strides {%lld, %lld} must be >= 1, paddings >= 0",
                               (long long)ks[0], (long long)ks[1], (long long)st[0], (long long)st[1]);
    const char *algo = oar_attr_s(op, "padding_algorithm");
    if (!global && !oar_win_resolve_pads(algo, &x->dims[2], ks, st, pd, NULL))
        return oar_k_error(k, OAR_ERR_INVALID,
                           "attr padding_algorithm = \"%s\" must be \"EXPLICIT\", \"SAME\" or \"VALID\"", algo);
    if (x->dims[2] > INT64_MAX / 4 || x->dims[3] > INT64_MAX / 4)
        return oar_k_error(k, OAR_ERR_SHAPE, "X '%s' %s is too large", xn, xs);
    int64_t o[2];
    for (int i = 0; i < 2; i++) {
        if (global) { o[i] = 1; continue; }
        if (g->adaptive) { o[i] = ks[i]; continue; }
        int64_t room = x->dims[2 + i] + pd[2 * i] + pd[2 * i + 1] - ks[i] + (ceil_mode ? st[i] - 1 : 0);
        o[i] = room < 0 ? 0 : room / st[i] + 1;
        if (o[i] <= 0)
            return oar_k_error(k, OAR_ERR_SHAPE,
                               "output would be empty: X '%s' %s, ksize {%lld, %lld}, strides {%lld, %lld}, "
                               "paddings {%lld, %lld, %lld, %lld}", xn, xs, (long long)ks[0], (long long)ks[1],
                               (long long)st[0], (long long)st[1], (long long)pd[0], (long long)pd[1],
                               (long long)pd[2], (long long)pd[3]);
    }
    if (oar_mul_checked(x->dims[0], x->dims[1], &g->planes))
        return oar_k_error(k, OAR_ERR_SHAPE, "X '%s' %s is too large", xn, xs);
    g->h = x->dims[2]; g->w = x->dims[3]; g->oh = o[0]; g->ow = o[1];
    g->kh = ks[0]; g->kw = ks[1]; g->sh = st[0]; g->sw = st[1]; g->pt = pd[0]; g->pl = pd[2];
    return OAR_OK;
}

/* [lo, hi) window bounds of every output row and column, computed once */
static int64_t *window_bounds(oar_kernel_ctx_t *k, const pool_geom_t *g) {
    int64_t *b = oar_xmalloc(sizeof(int64_t) * 2 * (size_t)(g->oh + g->ow));
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
    const oar_tensor_t *x = oar_k_in(k, "X", 0);
    if (!oar_tensor_has_data(x)) {
        oar_k_error(k, OAR_ERR_NOT_FOUND, "X '%s' has no data", oar_k_in_name(k, "X", 0));
        return NULL;
    }
    if (x->dtype != dt) {
        oar_k_error(k, OAR_ERR_DTYPE, "X '%s' is %s, expected %s", oar_k_in_name(k, "X", 0),
                    oar_dtype_name(x->dtype), oar_dtype_name(dt));
        return NULL;
    }
    return x;
}

static int pool_fwd(oar_kernel_ctx_t *k) {
    const int dt = oar_k_dtype(k);
    const oar_tensor_t *x = input_x(k, dt);
    if (!x) return OAR_ERR_NOT_FOUND;
    pool_geom_t g;
    OAR_TRY(pool_setup(k, x, &g));
    oar_tensor_t *yt = oar_k_out(k, "Out", 0);
    if (!yt) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Out is missing");
    const int64_t want[4] = {x->dims[0], x->dims[1], g.oh, g.ow};
    if (yt->ndim != 4 || memcmp(yt->dims, want, sizeof want) != 0) OAR_TRY(oar_tensor_resize(yt, want, 4));
    const void *xd = x->buf->data;
    void *y = oar_k_out_data(k, "Out", 0, dt);
    if (!y) return OAR_ERR_NOMEM;
    if (g.planes == 0) return OAR_OK;
    int64_t *b = window_bounds(k, &g);
    if (!b) return OAR_ERR_NOMEM;
    if (dt == OAR_FP32) pool_fwd_f32(xd, y, &g, b, b + 2 * g.oh);
    else pool_fwd_f64(xd, y, &g, b, b + 2 * g.oh);
    free(b);
    return OAR_OK;
}

static int pool_bwd(oar_kernel_ctx_t *k) {
    const int dt = oar_k_dtype(k);
    const oar_tensor_t *x = input_x(k, dt);
    if (!x) return OAR_ERR_NOT_FOUND;
    pool_geom_t g;
    OAR_TRY(pool_setup(k, x, &g));
    const oar_tensor_t *dy = oar_k_in(k, "Out@GRAD", 0);
    const int64_t want[4] = {x->dims[0], x->dims[1], g.oh, g.ow};
    if (!oar_tensor_has_data(dy))
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "Out@GRAD '%s' has no data", oar_k_in_name(k, "Out@GRAD", 0));
    if (dy->ndim != 4 || memcmp(dy->dims, want, sizeof want) != 0 || dy->dtype != dt) {
        char a[128], b[128];
        return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD '%s' is %s %s, expected %s %s",
                           oar_k_in_name(k, "Out@GRAD", 0), oar_dtype_name(dy->dtype),
                           oar_shape_str(dy->dims, dy->ndim, a, sizeof a), oar_dtype_name(dt),
                           oar_shape_str(want, 4, b, sizeof b));
    }
    oar_tensor_t *dxt = oar_k_out(k, "X@GRAD", 0);
    if (!dxt) return OAR_OK;
    if (dxt->ndim != 4 || memcmp(dxt->dims, x->dims, sizeof want) != 0)
        OAR_TRY(oar_tensor_resize(dxt, x->dims, 4));
    const void *xd = x->buf->data, *dyd = dy->buf->data;
    void *dx = oar_k_out_data(k, "X@GRAD", 0, dt);
    if (!dx) return OAR_ERR_NOMEM;
    if (g.planes == 0) return OAR_OK;
    int64_t *b = window_bounds(k, &g);
    if (!b) return OAR_ERR_NOMEM;
    memset(dx, 0, (size_t)oar_tensor_numel_of(x) * oar_dtype_size(dt));
    if (dt == OAR_FP32) pool_bwd_f32(xd, dyd, dx, &g, b, b + 2 * g.oh);
    else pool_bwd_f64(xd, dyd, dx, &g, b, b + 2 * g.oh);
    free(b);
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

static void FN(pool_bwd, OAR_POOL_SUF)(const T *x, const T *dy, T *dx, const pool_geom_t *g, const int64_t *hb,
                                       const int64_t *wb) {
    const int64_t H = g->h, W = g->w, OH = g->oh, OW = g->ow;
    const bool is_max = g->is_max, by_window = g->exclusive || g->adaptive;
    const T full = (T)(g->kh * g->kw);
    /* planes write disjoint parts of dx */
    #pragma omp parallel for schedule(static) if (g->planes * OH * OW * g->kh * g->kw >= POOL_PAR_MIN)
    for (int64_t pl = 0; pl < g->planes; pl++) {
        const T *xp = x + pl * H * W;
        const T *dyp = dy + pl * OH * OW;
        T *dxp = dx + pl * H * W;
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
                        q[(first >> 1) * W + (first & 1)] += d;
                    } else {
                        const T sh = d / (by_window ? (T)4 : full);
                        q[0] += sh; q[1] += sh; q[W] += sh; q[W + 1] += sh;
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
                    dxp[at] += d;
                } else {
                    const T s = d / (by_window ? (T)((h1 - h0) * (w1 - w0)) : full);
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
