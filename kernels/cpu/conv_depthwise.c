/* conv_depthwise.c — depthwise convolution (one input channel per group)
 * by direct loops, for conv.c: GEMMs would be a row each, and column
 * matrices kh*kw times the image. The typed loops are written once below
 * the #else and instantiated for float and double by including this file
 * into itself. */
#ifndef OAR_CONV_T
#include <stdint.h>
#include <string.h>
#include "conv_geom.h"

#define OAR_CONV_T float
#define OAR_CONV_SUF f32
#include "conv_depthwise.c"
#undef OAR_CONV_T
#undef OAR_CONV_SUF
#define OAR_CONV_T double
#define OAR_CONV_SUF f64
#include "conv_depthwise.c"
#undef OAR_CONV_T
#undef OAR_CONV_SUF

#else /* typed part */
#define T OAR_CONV_T
#define FN_(name, suf) name##_##suf
#define FN(name, suf) FN_(name, suf)

/* y[n, m] = sum over taps of w[m, tap] * shifted x[n, m / mult]; one pass
 * over the output plane per tap keeps the plane in L1 */
void FN(oar_dw_fwd, OAR_CONV_SUF)(const T *x, const T *w, T *y, const conv_geom_t *g) {
    const int64_t C = g->c, H = g->h, W = g->w, M = g->m, OH = g->oh, OW = g->ow;
    const int64_t KH = g->kh, KW = g->kw, mult = g->mg;
    const oar_win2d_t *v = &g->win;
    #pragma omp parallel for collapse(2) schedule(static) num_threads(g->threads) if (g->threads > 1)
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t m = 0; m < M; m++) {
            const T *xc = x + (n * C + m / mult) * H * W;
            const T *wm = w + m * KH * KW;
            T *ym = y + (n * M + m) * OH * OW;
            memset(ym, 0, sizeof(T) * (size_t)(OH * OW));   /* taps accumulate; padded rows skip some */
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

/* dx[n, c] = sum over the c-th group's outputs and taps (each plane zeroed here, while it is in cache) */
void FN(oar_dw_bwd_data, OAR_CONV_SUF)(const T *w, const T *dy, T *dx, const conv_geom_t *g) {
    const int64_t C = g->c, H = g->h, W = g->w, M = g->m, OH = g->oh, OW = g->ow;
    const int64_t KH = g->kh, KW = g->kw, mult = g->mg;
    const oar_win2d_t *v = &g->win;
    #pragma omp parallel for collapse(2) schedule(static) num_threads(g->threads) if (g->threads > 1)
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t c = 0; c < C; c++) {
            T *xc = dx + (n * C + c) * H * W;
            memset(xc, 0, sizeof(T) * (size_t)(H * W));
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
void FN(oar_dw_bwd_filter, OAR_CONV_SUF)(const T *x, const T *dy, T *dw, const conv_geom_t *g) {
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
