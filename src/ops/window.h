/* window.h — NCHW sliding-window geometry shared by the conv and pool
 * definitions (shape inference) and every place's kernels: the window of one
 * image, the valid output columns of a padded row, and Fluid's
 * padding_algorithm. */
#ifndef OAR_OPS_WINDOW_H
#define OAR_OPS_WINDOW_H
#include <stdbool.h>
#include <stdint.h>
#include "op.h"
#include "error.h"

/* One image's convolution window geometry (channels per call, not per op). */
typedef struct oar_win2d {
    int64_t c, h, w;        /* input channels, height, width */
    int64_t kh, kw;         /* window */
    int64_t oh, ow;         /* output height, width */
    int64_t sh, sw;         /* strides */
    int64_t pt, pl;         /* top and left padding (bottom/right follow from oh/ow) */
    int64_t dh, dw;         /* dilations */
} oar_win2d_t;

/* The range [lo, hi) of output columns ow whose input column ow*sw + off
 * falls inside [0, w), clamped to [0, ow_n]. */
static inline void oar_win_valid_cols(int64_t off, int64_t sw, int64_t w, int64_t ow_n,
                                      int64_t *lo, int64_t *hi) {
    int64_t a = off >= 0 ? 0 : (-off + sw - 1) / sw;
    int64_t b = (w - 1 - off) >= 0 ? (w - 1 - off) / sw + 1 : 0;
    if (a > ow_n) a = ow_n;
    if (b > ow_n) b = ow_n;
    if (b < a) b = a;
    *lo = a; *hi = b;
}

/* Fluid's padding_algorithm: "SAME" pads (extra on the bottom/right) so that
 * out = ceil(in / stride) and, for convolutions, sets dilations to 1
 * (dil may be NULL for pooling); "VALID" drops the padding; "EXPLICIT" or
 * empty keeps pads. Returns false for any other name. */
static inline bool oar_win_resolve_pads(const char *algo, const int64_t in[2], const int64_t k[2],
                                        const int64_t st[2], int64_t pads[4], int64_t *dil) {
    if (!algo || !algo[0] || __builtin_strcmp(algo, "EXPLICIT") == 0) return true;
    bool same = __builtin_strcmp(algo, "SAME") == 0;
    if (!same && __builtin_strcmp(algo, "VALID") != 0) return false;
    for (int i = 0; i < 2; i++) {
        int64_t sum = 0;
        if (same) {
            int64_t out = (in[i] + st[i] - 1) / st[i];
            sum = (out - 1) * st[i] + k[i] - in[i];
            if (sum < 0) sum = 0;
            if (dil) dil[i] = 1;
        }
        pads[2 * i] = sum / 2;
        pads[2 * i + 1] = sum - sum / 2;
    }
    return true;
}

/* ---- output geometry: the one copy inference and every kernel use --------
 * The size computations report an outcome; each caller words the error. */
enum { OAR_WIN_OK = 0, OAR_WIN_OVERFLOW, OAR_WIN_EMPTY, OAR_WIN_NO_INPUT };

/* padding_algorithm by its index in the conv/pool declarations' choices */
static inline bool oar_win_resolve_pads_id(int algo, const int64_t in[2], const int64_t k[2],
                                           const int64_t st[2], int64_t pads[4], int64_t *dil) {
    static const char *const names[] = {"EXPLICIT", "SAME", "VALID"};
    return algo >= 0 && algo <= 2 && oar_win_resolve_pads(names[algo], in, k, st, pads, dil);
}

/* A convolution's resolved window (pads, dilations) and output size. */
typedef struct oar_conv_win {
    int64_t st[2], dl[2], pd[4];   /* pd: {top, bottom, left, right} after padding_algorithm */
    int64_t out[2];                /* output height, width; -1 while unknown */
    int64_t span;                  /* the failing dim's dilated filter extent (OAR_WIN_EMPTY) */
    int bad;                       /* the dim (0 height, 1 width) an outcome other than OK names */
} oar_conv_win_t;

/* in[2], k[2] may be < 0 (unknown at compile time: that output stays -1;
 * with SAME/VALID both are needed). OAR_WIN_NO_INPUT: an input dim is 0;
 * OAR_WIN_OVERFLOW; OAR_WIN_EMPTY: the dilated filter exceeds the padded input. */
static inline int oar_win_conv_plan(int algo, const int64_t in[2], const int64_t k[2], const int64_t st[2],
                                    const int64_t dl[2], const int64_t pd[4], oar_conv_win_t *w) {
    for (int i = 0; i < 2; i++) { w->st[i] = st[i]; w->dl[i] = dl[i]; w->out[i] = -1; }
    for (int i = 0; i < 4; i++) w->pd[i] = pd[i];
    w->span = 0; w->bad = 0;
    const bool known = in[0] >= 0 && in[1] >= 0;
    const int64_t probe[2] = {in[0] < 0 ? 1 : in[0], in[1] < 0 ? 1 : in[1]};
    oar_win_resolve_pads_id(algo, probe, k, w->st, w->pd, w->dl);
    for (int i = 0; i < 2; i++) {
        w->bad = i;
        if (in[i] < 0 || k[i] < 0 || (algo != 0 && !known)) continue;
        if (in[i] == 0) return OAR_WIN_NO_INPUT;
        int64_t span;
        if (oar_mul_checked(w->dl[i], k[i] - 1, &span) || span >= INT64_MAX / 2 || in[i] > INT64_MAX / 4)
            return OAR_WIN_OVERFLOW;
        w->span = span + 1;
        int64_t room = in[i] + w->pd[2 * i] + w->pd[2 * i + 1] - w->span;
        if (room < 0) return OAR_WIN_EMPTY;
        w->out[i] = room / w->st[i] + 1;
    }
    return OAR_WIN_OK;
}

/* A pool's resolved window and output size. */
typedef struct oar_pool_win {
    int64_t ks[2], st[2], pd[4];   /* global: the whole input, unpadded */
    int64_t out[2];                /* -1 while unknown */
    bool adaptive;                 /* false under global */
    int bad;
} oar_pool_win_t;

/* in[2] may be < 0 at compile time. ks is {0, 0} when unset (only global
 * allows that; the caller checks). Adaptive pooling's output is ksize.
 * OAR_WIN_OVERFLOW; OAR_WIN_EMPTY: no window fits. */
static inline int oar_win_pool_plan(int algo, bool global, bool adaptive, bool ceil_mode, const int64_t in[2],
                                    const int64_t ks[2], const int64_t st[2], const int64_t pd[4],
                                    oar_pool_win_t *w) {
    for (int i = 0; i < 2; i++) { w->ks[i] = global ? in[i] : ks[i]; w->st[i] = st[i]; w->out[i] = -1; }
    for (int i = 0; i < 4; i++) w->pd[i] = global ? 0 : pd[i];
    w->adaptive = adaptive && !global;
    w->bad = 0;
    const bool known = in[0] >= 0 && in[1] >= 0;
    const int64_t probe[2] = {in[0] < 0 ? 1 : in[0], in[1] < 0 ? 1 : in[1]};
    if (!global) oar_win_resolve_pads_id(algo, probe, w->ks, w->st, w->pd, NULL);
    for (int i = 0; i < 2; i++) {
        w->bad = i;
        if (global) { w->out[i] = 1; continue; }
        if (w->adaptive) { w->out[i] = w->ks[i]; continue; }
        if (in[i] < 0 || (algo != 0 && !known)) continue;
        if (in[i] > INT64_MAX / 4) return OAR_WIN_OVERFLOW;
        int64_t room = in[i] + w->pd[2 * i] + w->pd[2 * i + 1] - w->ks[i] + (ceil_mode ? w->st[i] - 1 : 0);
        w->out[i] = room < 0 ? 0 : room / w->st[i] + 1;
        if (w->out[i] <= 0) return OAR_WIN_EMPTY;
    }
    return OAR_WIN_OK;
}

/* batch_norm's view of X (2 to 5 dims) as [N, C, S]: channels at dim 1, or
 * last with NHWC; S the product of the other dims. False for another rank. */
typedef struct oar_bn_geom { int64_t n, c, s; } oar_bn_geom_t;
static inline bool oar_win_bn_geom(const int64_t *x, int nd, bool nhwc, oar_bn_geom_t *g) {
    if (nd < 2 || nd > 5) return false;
    g->n = x[0];
    g->c = nhwc ? x[nd - 1] : x[1];
    g->s = 1;
    for (int i = nhwc ? 1 : 2; i < (nhwc ? nd - 1 : nd); i++) g->s *= x[i];
    return true;
}

/* Reads an INTS attr of exactly 2 values (or `def` when the attr is empty)
 * into out[2]. Returns OAR_OK or an error naming the op and the attr. */
OAR_API int oar_win_attr_pair(oar_kernel_ctx_t *k, const char *name, int64_t def, int64_t out[2]);
/* Reads `paddings` as 2 values {h, w} or 4 values {top, bottom, left, right}
 * into out[4] = {top, bottom, left, right}. */
OAR_API int oar_win_attr_pads(oar_kernel_ctx_t *k, int64_t out[4]);

/* The conv and pool decoders' steps (src/ops/conv.c): an INTS attr of 2
 * values (`def` twice when empty), each >= lo; paddings of 2 {h, w} or 4
 * values, each >= 0. Failures go through oar_dec_error. */
int oar_conv_dec_pair(oar_decode_ctx_t *d, const char *name, int64_t def, int64_t lo, int64_t out[2]);
int oar_conv_dec_pads(oar_decode_ctx_t *d, int64_t out[4]);
/* ---- 3-D (NCDHW) windows: pool3d and conv3d, the 2-D rules per dim --------
 * pd holds {front, back, top, bottom, left, right}. */

/* One dim of Fluid's padding_algorithm (index in the declarations' choices:
 * EXPLICIT, SAME, VALID): SAME pads (the extra at the end) so that
 * out = ceil(in / stride) and sets the dilation to 1 (dil may be NULL). */
static inline void oar_win_resolve_pad_dim(int algo, int64_t in, int64_t k, int64_t st, int64_t *lo, int64_t *hi,
                                           int64_t *dil) {
    if (algo != 1 && algo != 2) return;
    int64_t sum = 0;
    if (algo == 1) {
        int64_t out = (in + st - 1) / st;
        sum = (out - 1) * st + k - in;
        if (sum < 0) sum = 0;
        if (dil) *dil = 1;
    }
    *lo = sum / 2;
    *hi = sum - sum / 2;
}

/* A 3-D pool's resolved window and output size (as oar_pool_win_t). */
typedef struct oar_pool3d_win {
    int64_t ks[3], st[3], pd[6];   /* global: the whole input, unpadded */
    int64_t out[3];                /* -1 while unknown */
    bool adaptive;                 /* false under global */
    int bad;                       /* the failing dim: 0 depth, 1 height, 2 width */
} oar_pool3d_win_t;

/* in[3] may be < 0 at compile time; ks {0, 0, 0} when unset (global only). */
static inline int oar_win_pool3d_plan(int algo, bool global, bool adaptive, bool ceil_mode, const int64_t in[3],
                                      const int64_t ks[3], const int64_t st[3], const int64_t pd[6],
                                      oar_pool3d_win_t *w) {
    const bool known = in[0] >= 0 && in[1] >= 0 && in[2] >= 0;
    w->adaptive = adaptive && !global;
    w->bad = 0;
    for (int i = 0; i < 3; i++) {
        w->ks[i] = global ? in[i] : ks[i]; w->st[i] = st[i]; w->out[i] = -1;
        w->pd[2 * i] = global ? 0 : pd[2 * i]; w->pd[2 * i + 1] = global ? 0 : pd[2 * i + 1];
        if (!global) oar_win_resolve_pad_dim(algo, in[i] < 0 ? 1 : in[i], w->ks[i], w->st[i], &w->pd[2 * i],
                                             &w->pd[2 * i + 1], NULL);
    }
    for (int i = 0; i < 3; i++) {
        w->bad = i;
        if (global) { w->out[i] = 1; continue; }
        if (w->adaptive) { w->out[i] = w->ks[i]; continue; }
        if (in[i] < 0 || (algo != 0 && !known)) continue;
        if (in[i] > INT64_MAX / 4) return OAR_WIN_OVERFLOW;
        int64_t room = in[i] + w->pd[2 * i] + w->pd[2 * i + 1] - w->ks[i] + (ceil_mode ? w->st[i] - 1 : 0);
        w->out[i] = room < 0 ? 0 : room / w->st[i] + 1;
        if (w->out[i] <= 0) return OAR_WIN_EMPTY;
    }
    return OAR_WIN_OK;
}

/* The [lo, hi) input cells of output cell i along one dim, clipped to
 * [0, in) (adaptive: [floor(i in / out), ceil((i + 1) in / out))). */
static inline void oar_win_pool_range(int64_t i, int64_t in, int64_t out, int64_t k, int64_t s, int64_t p,
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

/* The 3-D decoders' steps (src/ops/window.c): an INTS attr of 3 values
 * (`def` thrice when empty), each >= lo; paddings of 3 {d, h, w} or 6
 * values, each >= 0, into {front, back, top, bottom, left, right}. */
int oar_win_dec_triple(oar_decode_ctx_t *d, const char *name, int64_t def, int64_t lo, int64_t out[3]);
int oar_win_dec_pads3(oar_decode_ctx_t *d, int64_t out[6]);
#endif
