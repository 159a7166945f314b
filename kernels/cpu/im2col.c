/* im2col.c — patch unfolding for im2col convolution, and the attr readers
 * the conv and pool kernels share.
 *
 * The typed routines are written once below the #else and instantiated for
 * float and double by including this file into itself with T and SUF set. */
#ifndef OAR_IM2COL_T
#include <string.h>
#include "im2col.h"
#include "desc.h"

/* Parallelize over channels only when one image carries enough work; callers
 * that split a batch across threads already run this inside a parallel region,
 * where the nested region stays serial. */
#define OAR_IM2COL_PAR_MIN (1 << 16)

#define OAR_IM2COL_T float
#define OAR_IM2COL_SUF f32
#include "im2col.c"
#undef OAR_IM2COL_T
#undef OAR_IM2COL_SUF
#define OAR_IM2COL_T double
#define OAR_IM2COL_SUF f64
#include "im2col.c"
#undef OAR_IM2COL_T
#undef OAR_IM2COL_SUF

#else /* typed part: T and SUF are set */
#define T OAR_IM2COL_T
#define FN_(name, suf) name##_##suf
#define FN(name, suf) FN_(name, suf)

/* The valid output columns [lo, hi) and input offset of each kernel column
 * j depend on j only: computed once per call (up to IM2COL_KW_MAX columns
 * on the stack; wider kernels compute them per channel). */
#ifndef IM2COL_KW_MAX
#define IM2COL_KW_MAX 32
#endif

/* Rows (horizontal stride 1) copied or added in fixed 16- and 8-value
 * pieces the compiler turns into single vector moves: per-element loops'
 * index arithmetic cost more than the copies for LeNet's 8- and 24-wide
 * rows. Plain windows (stride 1, no padding or dilation) also skip the
 * bounds of the general loops. */
static inline void FN(row_copy, OAR_IM2COL_SUF)(T *restrict d, const T *restrict s, int64_t n) {
    int64_t k = 0;
    for (; k + 16 <= n; k += 16) memcpy(d + k, s + k, 16 * sizeof(T));
    for (; k + 8 <= n; k += 8) memcpy(d + k, s + k, 8 * sizeof(T));
    for (; k < n; k++) d[k] = s[k];
}

static inline void FN(row_add, OAR_IM2COL_SUF)(T *restrict d, const T *restrict s, int64_t n) {
    int64_t k = 0;
    for (; k + 8 <= n; k += 8)
        for (int l = 0; l < 8; l++) d[k + l] += s[k + l];
    for (; k < n; k++) d[k] += s[k];
}

static bool FN(plain, OAR_IM2COL_SUF)(const oar_win2d_t *g) {
    return g->sh == 1 && g->sw == 1 && g->dh == 1 && g->dw == 1 && g->pt == 0 && g->pl == 0 &&
           g->oh == g->h - g->kh + 1 && g->ow == g->w - g->kw + 1;
}

void FN(oar_im2col, OAR_IM2COL_SUF)(const T *x, const oar_win2d_t *g, T *col, int64_t ld) {
    const int64_t C = g->c, H = g->h, W = g->w, OH = g->oh, OW = g->ow;
    const int64_t KH = g->kh, KW = g->kw, sw = g->sw;
    if (FN(plain, OAR_IM2COL_SUF)(g)) {
        #pragma omp parallel for schedule(static) if (C > 1 && C * KH * KW * OH * OW >= OAR_IM2COL_PAR_MIN)
        for (int64_t c = 0; c < C; c++)
            for (int64_t i = 0; i < KH; i++)
                for (int64_t j = 0; j < KW; j++) {
                    T *d = col + ((c * KH + i) * KW + j) * ld;
                    const T *xs = x + (c * H + i) * W + j;
                    for (int64_t oh = 0; oh < OH; oh++) FN(row_copy, OAR_IM2COL_SUF)(d + oh * OW, xs + oh * W, OW);
                }
        return;
    }
    int64_t jlo[IM2COL_KW_MAX], jhi[IM2COL_KW_MAX];
    const bool pre = KW <= IM2COL_KW_MAX;
    for (int64_t j = 0; pre && j < KW; j++) oar_win_valid_cols(j * g->dw - g->pl, sw, W, OW, &jlo[j], &jhi[j]);
    #pragma omp parallel for schedule(static) if (C > 1 && C * KH * KW * OH * OW >= OAR_IM2COL_PAR_MIN)
    for (int64_t c = 0; c < C; c++) {
        const T *xc = x + c * H * W;
        for (int64_t i = 0; i < KH; i++) {
            for (int64_t j = 0; j < KW; j++) {
                T *dst = col + ((c * KH + i) * KW + j) * ld;
                const int64_t woff = j * g->dw - g->pl;
                int64_t lo, hi;
                if (pre) { lo = jlo[j]; hi = jhi[j]; }
                else oar_win_valid_cols(woff, sw, W, OW, &lo, &hi);
                const bool full = lo == 0 && hi == OW;
                for (int64_t oh = 0; oh < OH; oh++) {
                    T *d = dst + oh * OW;
                    const int64_t ih = oh * g->sh - g->pt + i * g->dh;
                    if (ih < 0 || ih >= H) {
                        memset(d, 0, (size_t)OW * sizeof(T));
                        continue;
                    }
                    const T *xr = xc + ih * W + woff;
                    /* rows are short (often < 32): an inline loop beats memcpy calls */
                    if (full && sw == 1) {
                        FN(row_copy, OAR_IM2COL_SUF)(d, xr, OW);
                        continue;
                    }
                    for (int64_t ow = 0; ow < lo; ow++) d[ow] = 0;
                    if (sw == 1)
                        FN(row_copy, OAR_IM2COL_SUF)(d + lo, xr + lo, hi - lo);
                    else
                        for (int64_t ow = lo; ow < hi; ow++) d[ow] = xr[ow * sw];
                    for (int64_t ow = hi; ow < OW; ow++) d[ow] = 0;
                }
            }
        }
    }
}

void FN(oar_col2im, OAR_IM2COL_SUF)(const T *col, const oar_win2d_t *g, int64_t ld, T *dx) {
    const int64_t C = g->c, H = g->h, W = g->w, OH = g->oh, OW = g->ow;
    const int64_t KH = g->kh, KW = g->kw, sw = g->sw;
    if (FN(plain, OAR_IM2COL_SUF)(g)) {
        /* the same sums in the same order as the loops below */
        #pragma omp parallel for schedule(static) if (C > 1 && C * KH * KW * OH * OW >= OAR_IM2COL_PAR_MIN)
        for (int64_t c = 0; c < C; c++)
            for (int64_t i = 0; i < KH; i++)
                for (int64_t j = 0; j < KW; j++) {
                    const T *s = col + ((c * KH + i) * KW + j) * ld;
                    T *xd = dx + (c * H + i) * W + j;
                    for (int64_t oh = 0; oh < OH; oh++) FN(row_add, OAR_IM2COL_SUF)(xd + oh * W, s + oh * OW, OW);
                }
        return;
    }
    int64_t jlo[IM2COL_KW_MAX], jhi[IM2COL_KW_MAX];
    const bool pre = KW <= IM2COL_KW_MAX;
    for (int64_t j = 0; pre && j < KW; j++) oar_win_valid_cols(j * g->dw - g->pl, sw, W, OW, &jlo[j], &jhi[j]);
    /* channels write disjoint planes of dx, so they may run in parallel */
    #pragma omp parallel for schedule(static) if (C > 1 && C * KH * KW * OH * OW >= OAR_IM2COL_PAR_MIN)
    for (int64_t c = 0; c < C; c++) {
        T *xc = dx + c * H * W;
        for (int64_t i = 0; i < KH; i++) {
            for (int64_t j = 0; j < KW; j++) {
                const T *src = col + ((c * KH + i) * KW + j) * ld;
                const int64_t woff = j * g->dw - g->pl;
                int64_t lo, hi;
                if (pre) { lo = jlo[j]; hi = jhi[j]; }
                else oar_win_valid_cols(woff, sw, W, OW, &lo, &hi);
                for (int64_t oh = 0; oh < OH; oh++) {
                    const int64_t ih = oh * g->sh - g->pt + i * g->dh;
                    if (ih < 0 || ih >= H) continue;
                    const T *s = src + oh * OW;
                    T *xr = xc + ih * W + woff;
                    if (sw == 1)
                        FN(row_add, OAR_IM2COL_SUF)(xr + lo, s + lo, hi - lo);
                    else
                        for (int64_t ow = lo; ow < hi; ow++) xr[ow * sw] += s[ow];
                }
            }
        }
    }
}

#undef T
#undef FN
#undef FN_
#endif
